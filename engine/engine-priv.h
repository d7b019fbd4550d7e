/*
 * engine-priv.h - the engine's insides, shared by engine.c, state.c and the unit tests.
 * Front ends use engine.h only.
 */
#ifndef NH_ENGINE_PRIV_H
#define NH_ENGINE_PRIV_H

#include "engine.h"
#include "ftl.h"
#include "nand.h"
#include "stats.h"
#include "buffer.h"

struct NhEngine {
    NhConfig        cfg;            /* blocks resolved */
    uint64_t        capacity;       /* bytes of the logical space the front end uses */
    uint64_t        lpages;         /* pages covering capacity */
    uint64_t        logical_bytes;  /* what the geometry offers after op */
    NhStats         stats;
    NhNand         *nand;
    const NhFtlOps *ops;
    void           *ftl;
    NhBuf          *buf;            /* write buffer and read cache; NULL = neither */
    uint64_t        last_now;
    uint64_t        priority_until; /* completion of the latest priority request */
};

/*
 * The statistics document: counters, derived values, wear from @nand's erase counts, the
 * configuration in force (every key, canonical text) and geometry facts.  Caller frees.
 */
char *nh_stats_json(const NhStats *s, const NhConfig *cfg, const NhNand *nand,
                    uint64_t capacity, uint64_t logical_bytes, bool pretty);

/* The value at quantile @q (0..1): the upper edge of its bucket, capped at the maximum seen. */
uint64_t nh_hist_quantile(const NhHist *h, double q);

/* Hash of everything that shapes the saved state: geometry, FTL, cell, capacity. */
uint64_t nh_engine_state_hash(const NhEngine *eng);

#endif
