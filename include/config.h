/*
 * config.h - the one configuration parser, shared by the QEMU device and the simulator.
 *
 * A configuration is a set of named keys (lower case, dash separated, QEMU style), each with its
 * type, default, limits and a help line.  The keys every device has are the engine's
 * (engine/config.c, fields of NhConfig); a policy's or part's own keys are in its table
 * (NhFtlOps.keys, NhBufPolicy.keys, NhPart.keys) and live in NhConfig.policy.  nh_config_key()
 * lists them all; the device turns each into a QOM property and the simulator parses
 * "key=value,..." strings, both through nh_config_set(), so a key behaves identically in both
 * front ends.
 *
 * Two levels: nh_key_*() parse, store and format one key of any table (ftl/keys.c, the bottom
 * of the engine); nh_config_*() know the keys by name, composed from every table
 * (engine/config.c).  Policies and parts never look a key up by name: they decode their own
 * values once, when created (part.h).
 *
 * Values: integers accept decimal or 0x hex; sizes accept K/M/G/T suffixes (powers of 1024);
 * times accept ns/us/ms/s suffixes (bare numbers are ns); enums accept one of their names;
 * fractions accept a decimal number in [-1, 1]; "auto" is accepted by keys whose help says so
 * (stored as 0, or as NAN for fractions, where 0 is a value).
 */
#ifndef NH_CONFIG_H
#define NH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <glib.h>

typedef enum NhCell { NH_CELL_SLC, NH_CELL_MLC, NH_CELL_TLC, NH_CELL_QLC, NH_CELL_ZNAND } NhCell;
typedef enum NhGcPolicy { NH_GC_GREEDY, NH_GC_COST_BENEFIT } NhGcPolicy;
typedef enum NhLatencyMode { NH_LATENCY_MODEL, NH_LATENCY_ZERO } NhLatencyMode;
/* a host read of a page never written (or deallocated): free, or a flash read of its die */
typedef enum NhUnwrittenReads { NH_UNWRITTEN_FREE, NH_UNWRITTEN_FLASH } NhUnwrittenReads;
typedef enum NhBufMedia { NH_BUF_DRAM, NH_BUF_STTMRAM, NH_BUF_CUSTOM } NhBufMedia;
typedef enum NhBufVolatile { NH_BUF_VOLATILE_AUTO, NH_BUF_VOLATILE_ON, NH_BUF_VOLATILE_OFF } NhBufVolatile;
typedef enum NhSwitch { NH_OFF, NH_ON } NhSwitch;

/* The ranges of the page-size and blocks keys, which the engine's sizing messages name too
 * (32K: the page NVMeVirt's Samsung 970 PRO calibration assumes, engine/presets.c). */
#define NH_PAGE_SIZE_MAX 32768
/* The range of the planes key, which the NAND model's per-die state is sized by. */
#define NH_PLANES_MAX    16
#define NH_BLOCKS_MAX    (1u << 24)

/* Room for every policy's keys together (nh_config_key() asserts that they fit). */
#define NH_CONFIG_POLICY_SLOTS 48
/* Room for a bit per key (nh_config_key() asserts that they fit). */
#define NH_CONFIG_MAX_KEYS 256

typedef struct NhConfig {
    /* the real drive whose values the keys not given take (engine/presets.c); "none": the
     * keys' own defaults */
    char     preset[16];
    /* a bit per key (nh_config_key()'s index): set by a user, so a preset leaves it alone */
    uint64_t given[NH_CONFIG_MAX_KEYS / 64];
    /* a bit per key: the preset's value was refused by the rest of the configuration and
     * the key went back to its own default (nh_config_settle) */
    uint64_t dropped[NH_CONFIG_MAX_KEYS / 64];
    /* NAND geometry */
    uint32_t channels;
    uint32_t ways;          /* chips per channel */
    uint32_t dies;          /* per chip */
    uint32_t planes;        /* per die */
    uint32_t blocks;        /* per plane; 0 = auto (smallest that holds the capacity) */
    uint32_t pages;         /* per block */
    uint32_t page_size;     /* bytes: the flash page the NAND programs and senses */
    uint32_t map_unit;      /* bytes the FTL maps (a divisor of page_size); 0 = auto: page_size */
    uint32_t op;            /* over-provisioning, percent of physical capacity */
    /* NAND timing (ns); 0 = the cell preset's value */
    NhCell   cell;
    uint64_t t_read;
    uint64_t t_prog;
    uint64_t t_erase;
    uint32_t channel_mbps;  /* channel bus bandwidth, MB/s (10^6 bytes) */
    uint32_t host_mbps;     /* host interface (PCIe link) each way, MB/s; 0 = not modelled */
    uint32_t host_mps;      /* PCIe max payload size, bytes a packet; 0 = no packet overhead */
    /* controller firmware time a request pays before the back end sees it (ns) */
    uint64_t fw_read;       /* every read */
    uint64_t fw_read_large; /* more, for a read over 4 KiB */
    uint64_t fw_write;      /* every write */
    uint64_t fw_write_4k;   /* more, for each 4 KiB of a write (rounded up) */
    uint32_t pe_cycles;     /* rated program/erase cycles; 0 = the cell preset's value */
    NhSwitch one_shot;      /* tlc: the 3 pages of a word line in one program operation */
    /* FTL */
    char     ftl[16];
    NhGcPolicy gc;
    uint32_t gc_low;        /* background GC starts below this % of free blocks */
    uint32_t gc_high;       /* ... and stops above this % */
    uint32_t gc_critical;   /* foreground GC below this % */
    uint32_t wl_threshold;  /* static wear levelling when erase spread exceeds this; 0 = off */
    /* device DRAM: write buffer and read cache (buffers/, docs/buffers.md) */
    char     buffer[16];    /* write-buffer policy; "none" = writes go straight to the FTL */
    uint64_t buffer_size;   /* bytes */
    NhBufMedia buffer_media;
    uint64_t t_buf_read;    /* ns per page; 0 = the media preset (custom needs both set) */
    uint64_t t_buf_write;
    NhBufVolatile buffer_volatile;  /* auto: volatile for dram and custom, durable for sttmram */
    uint64_t cache_size;    /* read cache (DRAM LRU), bytes; 0 = none */
    /* front-end behaviour */
    NhLatencyMode latency;
    NhUnwrittenReads unwritten_reads;
    /* the policies' and parts' own keys, one slot each, a table's keys in consecutive slots
     * in its order (fractions as the bits of a double: nh_key_fraction) */
    uint64_t policy[NH_CONFIG_POLICY_SLOTS];
} NhConfig;

/* The mapping unit and how many of them a flash page holds: inside the engine a "page" (the
 * geometry's page_size and pages, every FTL, buffer and counter) is a mapping unit, and a flash
 * page is nh_config_sub() consecutive units of one block (docs/engine.md, "Mapping units"). */
static inline uint32_t nh_config_unit(const NhConfig *cfg)
{
    return cfg->map_unit ? cfg->map_unit : cfg->page_size;
}

static inline uint32_t nh_config_sub(const NhConfig *cfg)
{
    return cfg->page_size / nh_config_unit(cfg);
}

/* Mapping units per block. */
static inline uint32_t nh_config_unit_pages(const NhConfig *cfg)
{
    return cfg->pages * nh_config_sub(cfg);
}

/* NH_KEY_FRACTION: a double in [-1, 1] (min and max unused); auto is NAN */
typedef enum NhKeyType {
    NH_KEY_UINT, NH_KEY_SIZE, NH_KEY_TIME, NH_KEY_ENUM, NH_KEY_STRING, NH_KEY_FRACTION
} NhKeyType;

#define NH_CONFIG_AUTO UINT64_MAX

typedef struct NhConfigKey {
    const char *name;
    NhKeyType   type;
    /* the field in NhConfig; a policy's table leaves both 0 and nh_config_key() gives its keys
     * their slot in NhConfig.policy */
    size_t      offset;
    size_t      width;      /* bytes */
    const char *defval;     /* default as text, parsed like user input */
    uint64_t    min, max;   /* for numbers (after unit conversion) */
    const char *const *choices; /* NULL-terminated, for enums and strings */
    /* "auto" accepted, stored as 0 (fractions: NAN); a number whose range includes 0, where 0
     * is a value, stores it as NH_CONFIG_AUTO (its field must be 8 bytes: a policy slot) */
    bool        allow_auto;
    const char *help;
} NhConfigKey;

/* Every key, in a fixed order: the device's NAND and FTL keys, the FTLs' own keys in registry
 * order, the device DRAM keys, the buffer policies' own keys, the front end's. */
size_t nh_config_nkeys(void);
const NhConfigKey *nh_config_key(size_t i);

/* Fill @cfg with every key's default: the default preset's value where it has one. */
void nh_config_defaults(NhConfig *cfg);

/* Set one key from text.  Errors name the key and say why.  A key set here is the user's: a
 * preset, set before or after it, leaves it as given.  Setting preset gives every other key
 * not given the drive's value (or its own default where the drive has none). */
bool nh_config_set(NhConfig *cfg, const char *key, const char *value, GError **errp);

/* Parse "key=value,key=value" (an empty string is fine) over what @cfg already holds. */
bool nh_config_parse(NhConfig *cfg, const char *text, GError **errp);

/* The value of @key as text (canonical form); caller frees. NULL for an unknown key. */
char *nh_config_get(const NhConfig *cfg, const char *key);
/* A key's type and the values it takes, as text ("integer 1..64 or auto", "one of: a, b"). */
char *nh_config_key_values(const NhConfigKey *k);

/* Checks across keys (gc-low < gc-high, ...), independent of capacity. */
bool nh_config_check(const NhConfig *cfg, GError **errp);
/* nh_config_check, after giving way where it is the preset's to give: while the check
 * refuses a value the preset set (the user did not give the key): the refusal starts with the
 * key's name, or names KEY=VALUE in its text, that key goes back to its own default and is
 * marked dropped.  A refusal of a value the user gave, or of a key's own default, stands. */
bool nh_config_settle(NhConfig *cfg, GError **errp);
/* For a key whose preset value was dropped: "VALUE: why" (the check's refusal of the value
 * with the rest of @cfg as it is); NULL for any other key.  Caller frees. */
char *nh_config_dropped(const NhConfig *cfg, const NhConfigKey *k);
/* @fn(key, "VALUE: why", @opaque) for every key whose preset value was dropped, in key order:
 * what the statistics' config.preset-dropped lists and the device and simulator say at start. */
typedef void (*NhDroppedFn)(const char *key, const char *why, void *opaque);
void nh_config_foreach_dropped(const NhConfig *cfg, NhDroppedFn fn, void *opaque);

const NhConfigKey *nh_config_find(const char *key);

/* One key of any table: set from text (errors name the key and say why), format in canonical
 * form (caller frees), and whether a policy slot's @value is the key's default. */
bool nh_key_set(NhConfig *cfg, const NhConfigKey *k, const char *value, GError **errp);
char *nh_key_get(const NhConfig *cfg, const NhConfigKey *k);
bool nh_key_is_default(const NhConfigKey *k, uint64_t value);

/* A policy slot's value: an integer, size, time or enum key's is the number (an enum's the
 * index of its choice; auto as stored, 0 or NH_CONFIG_AUTO); a fraction key's is this (NAN for
 * auto). */
static inline double nh_key_fraction(uint64_t value)
{
    double d;
    memcpy(&d, &value, sizeof(d));
    return d;
}

/* A size as size keys take it: a number (decimal or 0x hex) with an optional K, M, G or T suffix
 * (powers of 1024, also as KiB or KB); false for anything else or an overflow. */
bool nh_config_parse_size(const char *text, uint64_t *bytes);

/* Presets of real drives (engine/presets.c): each a set of key values, every one with where
 * it comes from (a specification sheet, a paper, an emulator's published calibration) or why
 * it is assumed. */
typedef struct NhPresetValue {
    const char *key, *value, *source;
} NhPresetValue;

typedef struct NhPreset {
    const char *name;
    const char *drive;      /* the drive it describes, in a line */
    const char *note;       /* what it leaves out, or NULL */
    const NhPresetValue *values;    /* ends with a NULL key */
} NhPreset;

/* The preset a device without preset= gets. */
#define NH_PRESET_DEFAULT "pm9a3"

/* The presets in a fixed order, NULL-terminated; their names, NULL-terminated (the preset
 * key's choices, "none" last). */
extern const NhPreset *const nh_presets[];
extern const char *const nh_preset_names[];
const NhPreset *nh_preset_find(const char *name);

/* The page program time of @cell's preset in ns (what t-prog=auto means for it). */
uint64_t nh_config_cell_t_prog(NhCell cell);

#define NH_ERROR nh_error_quark()
GQuark nh_error_quark(void);
enum { NH_ERROR_CONFIG, NH_ERROR_RANGE, NH_ERROR_IO, NH_ERROR_STATE, NH_ERROR_TRACE };

#endif
