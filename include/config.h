/*
 * config.h - the one configuration parser, shared by the QEMU device and the simulator.
 *
 * A configuration is a set of named keys (lower case, dash separated, QEMU style).  The table
 * nh_config_keys[] lists every key with its type, default, limits and a help line; the device
 * turns each entry into a QOM property and the simulator parses "key=value,..." strings, both
 * through nh_config_set(), so a key behaves identically in both front ends.
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
#include <glib.h>

typedef enum NhCell { NH_CELL_SLC, NH_CELL_MLC, NH_CELL_TLC, NH_CELL_QLC, NH_CELL_ZNAND } NhCell;
typedef enum NhGcPolicy { NH_GC_GREEDY, NH_GC_COST_BENEFIT } NhGcPolicy;
typedef enum NhLatencyMode { NH_LATENCY_MODEL, NH_LATENCY_ZERO } NhLatencyMode;
typedef enum NhBufMedia { NH_BUF_DRAM, NH_BUF_STTMRAM, NH_BUF_CUSTOM } NhBufMedia;
typedef enum NhBufVolatile { NH_BUF_VOLATILE_AUTO, NH_BUF_VOLATILE_ON, NH_BUF_VOLATILE_OFF } NhBufVolatile;
typedef enum NhLbufMode { NH_LBUF_HOST, NH_LBUF_DEVICE } NhLbufMode;
typedef enum NhSwitch { NH_OFF, NH_ON } NhSwitch;

typedef struct NhConfig {
    /* NAND geometry */
    uint32_t channels;
    uint32_t ways;          /* chips per channel */
    uint32_t dies;          /* per chip */
    uint32_t planes;        /* per die */
    uint32_t blocks;        /* per plane; 0 = auto (smallest that holds the capacity) */
    uint32_t pages;         /* per block */
    uint32_t page_size;     /* bytes */
    uint32_t op;            /* over-provisioning, percent of physical capacity */
    /* NAND timing (ns); 0 = the cell preset's value */
    NhCell   cell;
    uint64_t t_read;
    uint64_t t_prog;
    uint64_t t_erase;
    uint32_t channel_mbps;  /* channel bus bandwidth, MB/s (10^6 bytes) */
    uint32_t pe_cycles;     /* rated program/erase cycles; 0 = the cell preset's value */
    NhSwitch one_shot;      /* tlc: the 3 pages of a word line in one program operation */
    /* FTL */
    char     ftl[16];
    NhGcPolicy gc;
    uint32_t gc_low;        /* background GC starts below this % of free blocks */
    uint32_t gc_high;       /* ... and stops above this % */
    uint32_t gc_critical;   /* foreground GC below this % */
    uint32_t wl_threshold;  /* static wear levelling when erase spread exceeds this; 0 = off */
    NhSwitch stripe_merge;  /* page: stage small writes until a full stripe (seed 001) */
    /* hybrid FTLs (bast, fast, sast) */
    uint32_t log_blocks;    /* log-block pool; 0 = auto (every spare block but one) */
    uint32_t sast_n;        /* sast: logical blocks per set */
    uint32_t sast_k;        /* sast: log blocks per set at most */
    uint64_t cmt_size;      /* dftl: cached mapping table, bytes (8 per entry) */
    /* write buffer and read cache (buffers/, docs/buffers.md) */
    char     buffer[16];    /* write-buffer policy; "none" = writes go straight to the FTL */
    uint64_t buffer_size;   /* bytes */
    NhBufMedia buffer_media;
    uint64_t t_buf_read;    /* ns per page; 0 = the media preset (custom needs both set) */
    uint64_t t_buf_write;
    NhBufVolatile buffer_volatile;  /* auto: volatile for dram and custom, durable for sttmram */
    uint64_t cache_size;    /* read cache (DRAM LRU), bytes; 0 = none */
    uint32_t clc_upper;     /* clc: percent of the buffer for the upper (LRU) list */
    uint32_t ref_window;    /* ref: percent of the buffered blocks, from the LRU end, eligible */
    uint32_t ref_victims;   /* ref: recently evicted blocks remembered */
    uint32_t lbuf_instances;    /* lbuf: meta-simulation instances (alphas over [-1, 1]) */
    uint32_t lbuf_session;  /* lbuf: write requests per tuning session */
    NhLbufMode lbuf_mode;   /* lbuf: host (full) or device (memory-reduced) meta-simulation */
    double   lbuf_alpha;    /* lbuf: victim-order alpha in [-1, 1]; NAN = auto (tuned) */
    /* front-end behaviour */
    NhLatencyMode latency;
} NhConfig;

/* NH_KEY_FRACTION: a double in [-1, 1] (min and max unused); auto is NAN */
typedef enum NhKeyType {
    NH_KEY_UINT, NH_KEY_SIZE, NH_KEY_TIME, NH_KEY_ENUM, NH_KEY_STRING, NH_KEY_FRACTION
} NhKeyType;

typedef struct NhConfigKey {
    const char *name;
    NhKeyType   type;
    size_t      offset;     /* into NhConfig */
    size_t      width;      /* of the field, bytes */
    const char *defval;     /* default as text, parsed like user input */
    uint64_t    min, max;   /* for numbers (after unit conversion) */
    const char *const *choices; /* NULL-terminated, for enums and strings */
    bool        allow_auto; /* "auto" accepted, stored as 0 (fractions: NAN) */
    const char *help;
} NhConfigKey;

extern const NhConfigKey nh_config_keys[];
extern const size_t nh_config_nkeys;

/* Fill @cfg with every key's default. */
void nh_config_defaults(NhConfig *cfg);

/* Set one key from text.  Errors name the key and say why. */
bool nh_config_set(NhConfig *cfg, const char *key, const char *value, GError **errp);

/* Parse "key=value,key=value" (an empty string is fine) over what @cfg already holds. */
bool nh_config_parse(NhConfig *cfg, const char *text, GError **errp);

/* The value of @key as text (canonical form); caller frees. NULL for an unknown key. */
char *nh_config_get(const NhConfig *cfg, const char *key);

/* Checks across keys (gc-low < gc-high, ...), independent of capacity. */
bool nh_config_check(const NhConfig *cfg, GError **errp);

const NhConfigKey *nh_config_find(const char *key);

/* The page program time of @cell's preset in ns (what t-prog=auto means for it). */
uint64_t nh_config_cell_t_prog(NhCell cell);

#define NH_ERROR nh_error_quark()
GQuark nh_error_quark(void);
enum { NH_ERROR_CONFIG, NH_ERROR_RANGE, NH_ERROR_IO, NH_ERROR_STATE, NH_ERROR_TRACE };

#endif
