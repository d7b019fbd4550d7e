/* precondition.c - --fill (rule in precondition.h). */
#include "precondition.h"

#include <math.h>

#define SEQ_CHUNK (128 * 1024)
#define CHECK_EVERY 1024        /* random writes between looks at the erase counts */
#define CAP_FACTOR 10           /* random writes at most this many times the physical pages */
#define SEED 0x5eed
/* Random writes drawn ahead of the one submitted, so that the engine can prefetch their
 * mapping entries, and at half the distance what those point at (nh_engine_prefetch): the
 * cache misses were most of the fill's time. */
#define AHEAD 16

/* A page of @pages at random: two draws, as g_rand_int_range covers only 32 bits. */
static uint64_t draw(GRand *rnd, uint64_t pages)
{
    return (((uint64_t)g_rand_int(rnd) << 32) | g_rand_int(rnd)) % pages;
}

static bool submit(NhEngine *eng, NhOp op, uint64_t off, uint64_t len, uint64_t *now,
                   GError **errp)
{
    NhRequest req = { .op = op, .offset = off, .length = len };
    uint64_t done;

    if (!nh_engine_submit(eng, &req, *now, &done, errp)) {
        return false;
    }
    *now = done;
    return true;
}

/* The blocks the fill can write: not those kept for the frontiers of physical streams 1..k-1
 * (placement.h), which untagged writes never reach. */
static double fill_blocks(const NhEngine *eng)
{
    const NhConfig *c = nh_engine_config(eng);
    uint64_t planes = (uint64_t)c->channels * c->ways * c->dies * c->planes;
    uint32_t fronts = nh_engine_stream_fronts(eng);

    return (double)planes * (c->blocks - (fronts ? fronts - 1 : 0));
}

/* Mean erases per block of those blocks (the others are never erased by the fill). */
static double erase_mean(const NhEngine *eng)
{
    const NhConfig *c = nh_engine_config(eng);
    NhWear w;

    nh_engine_wear(eng, &w);
    return w.erase_mean * (double)c->channels * c->ways * c->dies * c->planes * c->blocks /
           fill_blocks(eng);
}

bool nh_precondition(NhEngine *eng, uint64_t capacity, double fraction, NhFillReport *rep,
                     GError **errp)
{
    const NhConfig *c = nh_engine_config(eng);
    uint32_t ps = nh_config_unit(c);
    uint64_t region = (uint64_t)(capacity * fraction) / ps * ps;
    uint64_t physical = (uint64_t)c->channels * c->ways * c->dies * c->planes * c->blocks *
                        nh_config_unit_pages(c);
    uint64_t now = 0, pages = region / ps, ahead[AHEAD];
    double start;
    GRand *rnd;

    *rep = (NhFillReport){ 0 };
    if (!pages) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE,
                    "--fill: %g of the space is less than one page", fraction);
        return false;
    }
    for (uint64_t off = 0; off < region; off += SEQ_CHUNK) {
        if (!submit(eng, NH_OP_WRITE, off, MIN(SEQ_CHUNK, region - off), &now, errp)) {
            return false;
        }
        rep->seq_writes++;
    }
    rnd = g_rand_new_with_seed(SEED);
    start = erase_mean(eng);
    for (uint32_t i = 0; i < AHEAD; i++) {
        ahead[i] = draw(rnd, pages);
    }
    while (rep->rand_writes < CAP_FACTOR * physical) {
        uint64_t *slot = &ahead[rep->rand_writes % AHEAD], page = *slot;

        *slot = draw(rnd, pages);
        nh_engine_prefetch(eng, *slot * ps, false);
        nh_engine_prefetch(eng, ahead[(rep->rand_writes + AHEAD / 2) % AHEAD] * ps, true);
        if (!submit(eng, NH_OP_WRITE, page * ps, ps, &now, errp)) {
            g_rand_free(rnd);
            return false;
        }
        if (++rep->rand_writes % CHECK_EVERY == 0 && erase_mean(eng) - start >= 1.0) {
            rep->steady = true;
            break;
        }
    }
    g_rand_free(rnd);
    /* The trace must start with an empty write buffer: the fill's dirty pages written back
     * during the trace would otherwise be charged to it. */
    now = nh_engine_finish(eng, now);
    rep->erases_per_block = erase_mean(eng) - start;
    /* GC in steady state is not a backlog: the fill ends where the writes left free blocks at
     * the foreground watermark, and the trace would pay to refill them (tpcc-small after
     * --fill 0.9 on page: WAF 90).  An idle device refills them between its watermarks. */
    now = nh_engine_idle(eng, now, &rep->idle_gc_blocks);
    rep->end_ns = now;
    nh_engine_stats_reset(eng);
    nh_engine_set_conditioning(eng, &(NhConditioning){
        .fill_bytes = region, .seq_writes = rep->seq_writes, .rand_writes = rep->rand_writes,
        .rand_erases = (uint64_t)llround(rep->erases_per_block * fill_blocks(eng)),
        .idle_gc_blocks = rep->idle_gc_blocks, .steady = rep->steady });
    return true;
}
