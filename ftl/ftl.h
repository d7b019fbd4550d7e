/*
 * ftl.h - the interface every flash translation layer implements, and the registry of FTLs.
 *
 * Contract:
 *  - An FTL is one file defining one NhFtlOps and one line in the registry (ftl.c).  The engine
 *    owns the NAND model and the counters and hands them to the FTL in NhFtlEnv; the FTL books
 *    every flash operation through nh_nand_read/program/erase, so timing and NAND counters are
 *    the same for every FTL.  Host counters are the engine's; FTL counters are the FTL's.
 *  - Requests arrive in logical pages: the engine has already checked the range and rounded
 *    bytes to pages.  Every hook returns the time its last flash operation finishes (>= now).
 *  - Hooks never fail on a checked request; the geometry was validated at creation so that the
 *    FTL can always make room.
 */
#ifndef NH_FTL_H
#define NH_FTL_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "config.h"
#include "nand.h"
#include "part.h"
#include "stats.h"

typedef struct NhFtlEnv {
    const NhConfig *cfg;
    NhNand   *nand;
    NhStats  *stats;
    uint64_t  lpages;       /* logical pages in the space */
    uint64_t *counters;     /* the FTL's own counters, in the order of NhFtlOps.counters */
    /* the values of the FTL's own keys and of its family's shared keys, in their tables'
     * order (config.h), which the FTL decodes when created */
    const uint64_t *keys, *shared_keys;
    const NhParts *parts;   /* the parts' settings and counters (part.h) */
} NhFtlEnv;

typedef struct NhFtlWrite {
    uint64_t lpn, npages;
    bool     head_partial;  /* the first page is only partly written: read-modify-write if mapped */
    bool     tail_partial;  /* likewise for the last page */
    bool     fua;           /* durable on NAND when it completes (the host's FUA) */
    uint16_t stream;
} NhFtlWrite;

/* What an FTL supports beyond reading and writing pages; the engine refuses a key that needs a
 * feature the chosen FTL lacks. */
typedef enum NhFtlFeature {
    NH_FTL_ONE_SHOT     = 1u << 0,  /* stages a TLC word line's pages for one-shot programs */
    NH_FTL_STRIPE_MERGE = 1u << 1,  /* stages writes into full stripes (stripe-merge) */
    NH_FTL_PLACEMENT    = 1u << 2,  /* places tagged writes on their own frontiers (streams) */
    NH_FTL_CMT_RESIZE   = 1u << 3,  /* a mapping cache DStream resizes (dstream-memory) */
    NH_FTL_DYNAMIC_ALLOC = 1u << 4, /* allocates host pages plane by plane (alloc=dynamic) */
    NH_FTL_ZONES        = 1u << 5,  /* leaves every plane's last blocks to the zones (zones.h) */
    NH_FTL_MAP_UNIT     = 1u << 6,  /* maps units smaller than a flash page (map-unit) */
} NhFtlFeature;

typedef struct NhFtlOps {
    const char *name;
    uint32_t features;          /* NhFtlFeature */
    /* the FTL's own keys, ended by an entry without a name; NULL = none (config.h) */
    const NhConfigKey *keys;
    /* keys it shares with the other FTLs of its family (the hybrids' log-blocks): one table
     * that each of them names, listed once however many do; NULL = none */
    const NhConfigKey *shared_keys;
    /* cross-key checks of its own keys (@keys, their values) against the device's, when the
     * configuration is checked (before any engine exists); NULL = none */
    bool (*check_config)(const NhConfig *cfg, const uint64_t *keys, GError **errp);
    /* the FTL's own counters, ended by an entry without a path; NULL = none (stats.h) */
    const NhStat *counters;
    void *(*create)(const NhFtlEnv *env, GError **errp);
    void (*destroy)(void *ftl);
    uint64_t (*read)(void *ftl, uint64_t lpn, uint64_t npages, uint64_t now);
    uint64_t (*write)(void *ftl, const NhFtlWrite *w, uint64_t now);
    /* deallocate whole pages: they become invalid and are never copied again */
    uint64_t (*trim)(void *ftl, uint64_t lpn, uint64_t npages, uint64_t now);
    uint64_t (*flush)(void *ftl, uint64_t now);
    /* power fails: what the FTL held in volatile memory and had not programmed is gone, @lost
     * told each lost page's lpn once the FTL is consistent again (its mapping then what was
     * programmed); NULL = nothing volatile */
    void (*power_loss)(void *ftl, void (*lost)(void *, uint64_t), void *opaque);
    /* called before each request: a chance to clean in the background; @defer is true while
     * priority requests are outstanding (seed 001's priority-aware cleaning) */
    void (*background)(void *ftl, uint64_t now, bool defer);
    /* the device idles (nh_engine_idle): background cleaning then goes on until every plane
     * is back at its high watermark, not only those that fell below the low one; NULL for an
     * FTL that cleans only when a write needs room */
    void (*idle)(void *ftl);
    bool (*is_mapped)(void *ftl, uint64_t lpn);
    /* where writing the logical space in order from its start on a new device would have put
     * page @lpn: a ppn on its plane at its page offset (any block of the plane: the timing
     * depends only on die, channel, plane and page).  An unwritten-reads=flash read of a page
     * never written reads there, so it costs what reading the data once written would. */
    uint32_t (*home)(void *ftl, uint64_t lpn);
    /* mapping and block state, appended to @out; load applies it to a freshly created FTL on
     * the same geometry (the NAND's erase counts are restored by the engine) */
    void (*save)(void *ftl, GByteArray *out);
    bool (*load)(void *ftl, const guint8 *data, size_t len, GError **errp);
    /* full consistency check for tests: NULL when consistent, else what is wrong (g_free) */
    char *(*check)(void *ftl);
    /* blocks per plane the FTL needs beyond those holding the logical space (its frontiers,
     * GC reserve and watermarks, own metadata, room to clean); 0 when no size suffices.  The
     * engine sizes blocks=auto (cfg->blocks 0) with it and refuses an explicit blocks below
     * it; the room to clean may differ between the two (nh_blocks_min_spare).  Only @env's
     * cfg, lpages, keys, shared_keys and parts are set. */
    uint32_t (*spare_blocks)(const NhFtlEnv *env, uint32_t npu);
    /* does logical block @lbn (lpn / pages) have valid pages in log blocks, i.e. a merge
     * pending?  A fact of the FTL any layer above may ask; NULL = the FTL has no log blocks
     * (answer: no) */
    bool (*in_log)(void *ftl, uint64_t lbn);
    /* NH_FTL_PLACEMENT: the host released stream @id (nh_engine_stream_release) */
    void (*stream_release)(void *ftl, uint16_t id);
    /* NH_FTL_PLACEMENT: the physical stream whose frontier wrote the block holding @lpn's
     * page (NH_STREAM_GC for the GC frontier's), -1 when unmapped or not on flash yet; for
     * the tests' frontier invariants; -1 also when placement is off */
    int (*stream_of)(void *ftl, uint64_t lpn);
    /* NH_FTL_PLACEMENT: the reclaim unit tag @tag writes into (nh_placement_unit): pages still
     * free in it, or with @close, close it and return the pages it left unwritten */
    uint64_t (*stream_unit)(void *ftl, uint16_t tag, bool close);
    /* start loading what looking page @lpn up will read into the CPU's cache, with @deep also
     * what its entry points at (nh_engine_prefetch); NULL = none */
    void (*prefetch)(const void *ftl, uint64_t lpn, bool deep);
} NhFtlOps;

/* NH_FTL_REGISTRY: X(name) for every FTL (nh-registry.h, generated from meson.build's list). */
#include "nh-registry.h"

#define NH_FTL_DECLARE(name) extern const NhFtlOps nh_ftl_##name##_ops;
NH_FTL_REGISTRY(NH_FTL_DECLARE)
#undef NH_FTL_DECLARE

/* NULL-terminated names of the registered FTLs (the choices of the `ftl` key). */
extern const char *const nh_ftl_names[];

const NhFtlOps *nh_ftl_find(const char *name);

/*
 * The log-block pool in force: @log_blocks (the key's value), or for auto every block beyond
 * those holding the logical space but the one a merge needs (docs/ftl-hybrid.md).  The hybrid
 * FTLs run a pool of this size; lbuf's meta-simulation models it, whatever the FTL.
 */
uint32_t nh_ftl_log_blocks(uint64_t log_blocks, const NhGeometry *g, uint64_t lpages);

#endif
