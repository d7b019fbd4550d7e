/*
 * precondition.h - bring a fresh engine to steady state before a trace (--fill).
 *
 * Rule (docs/simulator.md): write the first @fraction of the logical space sequentially in
 * 128 KiB requests, then overwrite single pages of that region uniformly at random (fixed seed)
 * until the device has erased, since the random phase began, as many blocks as it has (every
 * block once on average: one full drive-write of erases), or until the random phase has
 * written ten times the physical pages, whichever comes first.  Requests go one at a time, each
 * when the previous completes.  Then the write buffer is drained and the device idles until
 * background GC is done (free blocks back at gc-high, as GC keeps them in steady state).  The
 * statistics are then reset, so they count the trace only, and conditioning.* says how the
 * device was conditioned.
 */
#ifndef NH_PRECONDITION_H
#define NH_PRECONDITION_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

typedef struct NhFillReport {
    uint64_t seq_writes, rand_writes;
    double   erases_per_block;  /* during the random phase */
    bool     steady;            /* the erase rule, not the cap, ended it */
    uint64_t idle_gc_blocks;    /* victims reclaimed by the idle GC that ends it */
    uint64_t end_ns;            /* when the last write completed: the trace starts there */
} NhFillReport;

bool nh_precondition(NhEngine *eng, uint64_t capacity, double fraction, NhFillReport *rep,
                     GError **errp);

#endif
