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
#include "../buffers/buffer.h"

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

/* Hash of everything that shapes the saved state: geometry, FTL, cell, capacity. */
uint64_t nh_engine_state_hash(const NhEngine *eng);

#endif
