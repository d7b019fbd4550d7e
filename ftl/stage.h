/*
 * stage.h - staging host pages for one-shot and stripe-merge programming, shared by the
 * page-mapped FTLs (page, dftl).  Host pages are collected (metadata only) in a staging buffer
 * and programmed a staging unit at a time: one TLC word line (one-shot), one page on every plane
 * (stripe-merge) or one word line on every plane (both).  docs/engine.md has the rules,
 * docs/placement.md what changes with streams.
 *
 * Contract:
 *  - One staging buffer per physical stream (placement.h), each programmed on its stream's
 *    frontier, so a word line or stripe never holds pages of two streams.  Without placement,
 *    one buffer on the FTL's host frontier.  GC copies are not staged.
 *  - With map-unit below page-size a page here is a mapping unit and a program covers a flash
 *    page of them (nand.h): stripe-merge=on is required, a forced unit is padded to the flash
 *    page, and there is no bounded wait (units stay until their stripe fills, a flush or a
 *    FUA).
 *  - A page is staged in one buffer at most.  A rewrite of a staged page takes the new data in
 *    the buffer (ftl.stripe_overwrites); if the write places it on another stream, the page
 *    moves to that stream's buffer.
 *  - The FTL's put hook makes a programmed page the mapping of its lpn: it is given the page
 *    allocated on the stream's frontier and the time the unit's program may start, and returns
 *    when the page's program ends.
 *  - When DStream merges streams away, their buffers are programmed at once (padded).
 *  - Nothing here is saved: front ends drain (nh_stage_flush through the FTL's flush) before a
 *    clean save.  The buffers are capacitor-protected, so power loss loses nothing, unless
 *    stage-volatile=on (a client drive's DRAM): then a cut loses every staged page
 *    (nh_stage_power_loss) and the FTL keeps what was programmed, the pages' earlier mappings
 *    (a page staged is mapped only when its unit's program starts, pmap_put).  A unit whose
 *    program has started counts as programmed.
 */
#ifndef NH_STAGE_H
#define NH_STAGE_H

#include "blocks.h"
#include "placement.h"

/* The part's settings (part.h: nh_part_stage, key stripe-merge, counters ftl.stripe_*). */
typedef struct NhStageSettings {
    bool     merge;         /* stripe-merge=on */
    bool     lossy;         /* stage-volatile=on: a power cut loses what is staged */
    uint32_t unit;          /* pages programmed together; 0 without one-shot or stripe-merge */
    uint32_t sub;           /* mapping units in a flash page (map-unit) */
} NhStageSettings;

typedef uint64_t (*NhStagePut)(void *ctx, uint64_t lpn, uint32_t ppn, uint64_t t);

/* One stream's buffer: two halves of one unit, one filling while the other is programmed. */
typedef struct NhStageBuf {
    uint32_t  n;            /* pages staged in the filling half */
    uint64_t *lpn;          /* [unit] in arrival order */
    uint64_t  first;        /* when the first of them was staged */
    uint64_t  ready;        /* their read-modify-write reads end */
    uint64_t  free_at[2];   /* each half is free from then on */
    uint32_t  cur;          /* the filling half */
} NhStageBuf;

typedef struct NhStage {
    uint32_t     unit;      /* pages programmed together; 0 = no staging */
    uint32_t     nbuf;      /* buffers: the physical streams */
    bool         lossy;     /* stage-volatile=on */
    NhStageBuf  *buf;
    GHashTable  *slot;      /* lpn + 1 -> buffer x unit + index + 1 */
    uint64_t     wait;      /* the longest a page stays staged: one tPROG; 0: no limit */
    NhBlocks    *b;
    const uint32_t *fwd;    /* the FTL's forward map (ppn + 1) */
    NhPlacement *pl;        /* NULL: placement off */
    uint32_t     host_front;
    uint64_t    *ctr;       /* the part's counters (ftl.stripe_*) */
    NhStagePut   put;
    void        *ctx;
} NhStage;

/* Sets @s up (s->unit 0 when @env's configuration stages nothing). */
void nh_stage_init(NhStage *s, const NhFtlEnv *env, NhBlocks *b, const uint32_t *fwd,
                   NhPlacement *pl, uint32_t host_front, NhStagePut put, void *ctx);
void nh_stage_destroy(NhStage *s);

static inline bool nh_stage_holds(const NhStage *s, uint64_t lpn)
{
    return s->unit && g_hash_table_contains(s->slot, GSIZE_TO_POINTER((gsize)lpn + 1));
}

/* Stage the pages of @w; completes when they are all in the buffers, with FUA when the units
 * holding them are programmed. */
uint64_t nh_stage_write(NhStage *s, const NhFtlWrite *w, uint64_t now);
/* Drop @lpn if staged (trim). */
void nh_stage_drop(NhStage *s, uint64_t lpn);
/* Program every partial unit (flush, drain); @t if nothing is staged. */
uint64_t nh_stage_flush(NhStage *s, uint64_t t);
/* The bounded wait: units whose first page waited one tPROG by @now are programmed. */
void nh_stage_background(NhStage *s, uint64_t now);
/* Power fails: with stage-volatile every staged page is dropped, then @lost told its lpn; the
 * buffers are empty before the first call.  Nothing with capacitor-protected buffers. */
void nh_stage_power_loss(NhStage *s, void (*lost)(void *, uint64_t), void *opaque);
char *nh_stage_check(const NhStage *s, uint64_t lpages);

#endif
