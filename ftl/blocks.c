/*
 * blocks.c - flash blocks for the page-mapped FTLs (contract in blocks.h).
 *
 * Layout, chosen for a 1 TiB space in a few GiB that starts instantly: p2l and the block table
 * come from anonymous mmap (zero pages until written); a physical page is valid exactly when
 * its p2l entry is nonzero, so no separate bitmap exists.  Each plane keeps a min-heap of free
 * blocks keyed by erase count (dynamic wear levelling: the least-worn free block is opened
 * next) and its closed blocks in buckets by valid-page count, so greedy finds a victim in
 * O(pages).  Host-side writes go to the planes round-robin in an order that changes channel
 * fastest, then way, die and plane, so consecutive pages land on different buses; with
 * alloc=dynamic to the plane whose die is free earliest, ties in that order (alloc.h).
 */
#include "blocks.h"
#include "zones.h"
#include "alloc.h"
#include "nh-heap.h"
#include "mem.h"

#include <string.h>

/* ------------------------------------------------------------------ free-block heap */


static uint64_t wear_key(const void *ctx, uint32_t blk)
{
    return nh_blocks_wear(ctx, blk);
}

static void heap_push(NhBlocks *b, NhPlane *p, uint32_t blk)
{
    nh_heap_push(p->heap, p->nfree++, blk, wear_key, b);
}

static uint32_t heap_pop(NhBlocks *b, NhPlane *p)
{
    return nh_heap_pop(p->heap, p->nfree--, wear_key, b);
}

/* ------------------------------------------------------------------ valid-count buckets */

static void bucket_insert(NhBlocks *b, uint32_t blk)
{
    uint32_t *h = nh_blocks_bucket(b, blk / b->blocks, b->blk[blk].valid);
    b->blk[blk].prev = NH_NONE;
    b->blk[blk].next = *h;
    if (*h != NH_NONE) {
        b->blk[*h].prev = blk;
    }
    *h = blk;
}

static void bucket_remove(NhBlocks *b, uint32_t blk)
{
    NhBlock *k = &b->blk[blk];
    if (k->prev != NH_NONE) {
        b->blk[k->prev].next = k->next;
    } else {
        *nh_blocks_bucket(b, blk / b->blocks, k->valid) = k->next;
    }
    if (k->next != NH_NONE) {
        b->blk[k->next].prev = k->prev;
    }
}

/* ------------------------------------------------------------------ pages */

void nh_blocks_invalidate(NhBlocks *b, uint32_t ppn)
{
    uint32_t blk = ppn / b->pages;
    NhBlock *k = &b->blk[blk];

    b->p2l[ppn] = 0;
    if (k->state == NH_BLK_CLOSED) {
        bucket_remove(b, blk);
        k->valid--;
        bucket_insert(b, blk);
    } else {
        k->valid--;
    }
    k->mtime = b->now;
}

static void close_block(NhBlocks *b, uint32_t blk)
{
    b->blk[blk].state = NH_BLK_CLOSED;
    bucket_insert(b, blk);
}

static void note_free_space(NhBlocks *b, NhPlane *p)
{
    if (!p->bg && p->nfree < b->low) {
        p->bg = true;
        b->bg_active++;
    }
}

static inline bool reserved_front(const NhBlocks *b, uint32_t front)
{
    return front >= b->s.nfront - b->s.reserved;
}

/* A reserved frontier's first block is the one kept for it (NhBlocksSpec.reserved). */
static inline bool opens_kept(const NhBlocks *b, const NhPlane *p, uint32_t front)
{
    return p->open[front] == NH_NONE && p->nkept && reserved_front(b, front);
}

static uint32_t open_block(NhBlocks *b, NhPlane *p, uint8_t kind, uint32_t front)
{
    uint32_t blk = opens_kept(b, p, front) ? p->kept[--p->nkept] : heap_pop(b, p);
    b->blk[blk].state = NH_BLK_OPEN;
    b->blk[blk].kind = kind;
    b->blk[blk].front = (uint8_t)front;
    b->blk[blk].wp = 0;
    b->blk[blk].valid = 0;
    note_free_space(b, p);
    return blk;
}

static inline bool front_full(const NhBlocks *b, const NhPlane *p, uint32_t front)
{
    return p->open[front] == NH_NONE || b->blk[p->open[front]].wp == b->pages;
}

static uint32_t take_page(NhBlocks *b, NhPlane *p, uint32_t front)
{
    if (front_full(b, p, front)) {
        if (p->open[front] != NH_NONE) {
            close_block(b, p->open[front]);
        }
        p->open[front] = open_block(b, p, b->s.front_kind[front], front);
    }
    return p->open[front] * b->pages + b->blk[p->open[front]].wp++;
}

/* Pages still free in frontier @front's reclaim unit (placement.h), its open block on every
 * plane: a plane whose block is not open yet counts a whole block (the stripe opens it when it
 * gets there), one whose block is full counts 0 (its next page starts the next unit); all of
 * them full means the next write opens a new unit, so the whole unit is free then. */
uint64_t nh_blocks_front_left(const NhBlocks *b, uint32_t front)
{
    uint64_t left = 0;

    for (uint32_t i = 0; i < b->npu; i++) {
        const NhPlane *p = &b->pu[i];
        left += p->open[front] == NH_NONE ? b->pages : b->pages - b->blk[p->open[front]].wp;
    }
    return left ? left : (uint64_t)b->pages * b->npu;
}

/* Close frontier @front's open blocks as they are (no padding): its next page opens new ones.
 * Returns the pages they left unwritten. */
uint64_t nh_blocks_front_close(NhBlocks *b, uint32_t front)
{
    uint64_t left = 0;

    for (uint32_t i = 0; i < b->npu; i++) {
        NhPlane *p = &b->pu[i];
        if (p->open[front] != NH_NONE) {
            left += b->pages - b->blk[p->open[front]].wp;
            close_block(b, p->open[front]);
            p->open[front] = NH_NONE;
            if (reserved_front(b, front) && p->nfree > b->s.reserve) {
                p->kept[p->nkept++] = heap_pop(b, p);   /* its next first block */
                note_free_space(b, p);
            }
        }
    }
    return left;
}

uint32_t nh_blocks_gc_page(NhBlocks *b, uint32_t pu, uint32_t front)
{
    /* striped like host writes, but only onto planes with room that need no GC for it (GC is
     * running already); plane @pu's own reserve when no plane has */
    for (uint32_t tries = 0; tries < b->npu; tries++) {
        NhPlane *p = &b->pu[b->order[b->rr[front]]];
        b->rr[front] = b->rr[front] + 1 == b->npu ? 0 : b->rr[front] + 1;
        if (!front_full(b, p, front) || p->nfree > b->s.reserve) {
            return take_page(b, p, front);
        }
    }
    return take_page(b, &b->pu[pu], front);
}

uint32_t nh_blocks_home(const NhBlocks *b, uint64_t lpn)
{
    /* a plane takes a word line (wl pages) before the next plane's turn, as host_page hands
     * them out; the plane's first block stands for the block the page would be in */
    uint32_t wl = b->nand->wl;
    uint64_t unit = lpn / wl;
    uint32_t page = (uint32_t)((unit / b->npu * wl + lpn % wl) % b->pages);

    return b->order[unit % b->npu] * b->blocks * b->pages + page;
}

/* ------------------------------------------------------------------ cleaning */

static uint32_t pick_greedy(NhBlocks *b, uint32_t pu)
{
    for (uint32_t v = 0; v < b->pages; v++) {
        uint32_t blk = *nh_blocks_bucket(b, pu, v);
        if (blk != NH_NONE) {
            return blk;
        }
    }
    return NH_NONE;
}

/* Kawaguchi / Rosenblum: maximise age * (1 - u) / (2u), u the valid fraction. */
static uint32_t pick_cost_benefit(NhBlocks *b, uint32_t pu)
{
    uint32_t best = NH_NONE;
    double best_score = -1.0;

    for (uint32_t v = 0; v < b->pages; v++) {
        for (uint32_t blk = *nh_blocks_bucket(b, pu, v); blk != NH_NONE; blk = b->blk[blk].next) {
            double u = (double)v / b->pages;
            double age = (double)(b->now - b->blk[blk].mtime) + 1.0;
            double score;
            if (v == 0) {
                return blk;
            }
            score = age * (1.0 - u) / (2.0 * u);
            if (score > best_score) {
                best_score = score;
                best = blk;
            }
        }
    }
    return best;
}

/* Program the pages read into moves[from, to) (their owner and old page) on frontier @front
 * of plane @p from @ready: each gets its new page and becomes its owner's mapping. */
static uint64_t program_moves(NhBlocks *b, NhPlane *p, uint32_t front, uint32_t from,
                              uint32_t to, uint64_t ready)
{
    uint64_t done = ready;

    for (uint32_t k = from; k < to; k++) {
        uint32_t dst = take_page(b, p, front);
        uint64_t t = nh_nand_program(b->nand, dst, ready);
        done = MAX(done, t);
        nh_blocks_map(b, b->moves[k].owner, dst);
        b->moves[k].ppn = dst;
    }
    return done;
}

/* With map-unit, NAND programs whole flash pages: the rest of the one frontier @front of plane
 * @p has begun is programmed with units that hold nothing, in the caller's batch. */
static uint64_t pad_flash_page(NhBlocks *b, NhPlane *p, uint32_t front, uint64_t t)
{
    uint64_t done = t;

    while (p->open[front] != NH_NONE && b->blk[p->open[front]].wp % b->nand->sub) {
        uint64_t end = nh_nand_program(b->nand, take_page(b, p, front), t);
        done = MAX(done, end);
        if (b->unit_left[front] && b->unit_pu[front] == (uint32_t)(p - b->pu)) {
            b->unit_left[front]--;  /* a word line host_page hands out, used up here */
        }
    }
    return done;
}

uint64_t nh_blocks_pad_page(NhBlocks *b, uint32_t ppn, uint64_t t)
{
    uint32_t blk = ppn / b->pages;

    return pad_flash_page(b, &b->pu[blk / b->blocks], b->blk[blk].front, t);
}

/* Move the valid pages of closed block @blk to its kind's GC frontier, let the FTL update its
 * map, and erase the block once both are done (the old copies are the only ones until then).
 * A flash page's worth of units (map-unit; one page without it) is read, then programmed as
 * one operation, in one batch; the last page is padded (docs/engine.md, "Mapping units"). */
static uint64_t relocate(NhBlocks *b, uint32_t blk, uint64_t *copies)
{
    uint32_t pu = blk / b->blocks;
    uint32_t base = blk * b->pages;
    uint8_t kind = b->blk[blk].kind;
    uint32_t front = b->s.gc_front[kind], n = 0, first = 0;
    uint64_t done = b->now, ready = b->now, t;

    nh_nand_gc_begin(b->nand);
    nh_nand_batch_begin(b->nand);
    bucket_remove(b, blk);
    b->blk[blk].state = NH_BLK_OPEN;    /* out of the buckets while it is emptied */
    for (uint32_t i = 0; i < b->blk[blk].wp && b->blk[blk].valid; i++) {
        uint32_t owner1 = b->p2l[base + i];
        if (owner1) {
            t = nh_nand_read(b->nand, base + i, b->now);
            ready = MAX(ready, t);
            nh_blocks_invalidate(b, base + i);
            b->moves[n++] = (NhMove){ owner1 - 1, base + i };
            (*copies)++;
        }
        if (n - first == b->nand->sub || (n > first && !b->blk[blk].valid)) {
            t = program_moves(b, &b->pu[pu], front, first, n, ready);
            done = MAX(done, t);
            first = n;
            ready = b->now;
        }
    }
    t = pad_flash_page(b, &b->pu[pu], front, b->now);
    done = MAX(done, t);
    nh_nand_batch_end(b->nand);
    if (n && b->s.stream_copies && copies == &b->st->ftl_gc_page_copies) {
        b->s.stream_copies[b->s.front_stream[b->blk[blk].front]] += n;
    }
    if (n) {
        t = b->s.moved(b->s.ctx, kind, pu, b->moves, n, done);
        done = t > done ? t : done;
    }
    done = nh_nand_erase(b->nand, blk, done);
    nh_nand_gc_end(b->nand);
    b->blk[blk] = (NhBlock){ .state = NH_BLK_FREE, .prev = NH_NONE, .next = NH_NONE };
    heap_push(b, &b->pu[pu], blk);
    b->pu[pu].erases++;
    return done;
}

/* Static wear levelling: when a plane's erase-count spread passes the threshold, move the data
 * of its least-worn closed block (cold data) so that block rejoins the free pool. */
static void static_wl(NhBlocks *b, uint32_t pu)
{
    uint32_t thr = b->env.cfg->wl_threshold;
    uint32_t lo = UINT32_MAX, hi = 0, cold = NH_NONE;
    NhPlane *p = &b->pu[pu];

    if (!thr || p->erases < thr) {
        return;
    }
    p->erases = 0;
    for (uint32_t blk = pu * b->blocks; blk < pu * b->blocks + b->usable; blk++) {
        uint32_t w = nh_blocks_wear(b, blk);
        hi = w > hi ? w : hi;
        if (b->blk[blk].state == NH_BLK_CLOSED && w < lo) {
            lo = w;
            cold = blk;
        }
    }
    if (cold != NH_NONE && hi - lo > thr && p->nfree >= b->s.reserve) {
        relocate(b, cold, &b->st->ftl_wl_page_copies);
        b->st->ftl_wl_blocks++;
    }
}

/* Reclaim one victim in @pu; false when no closed block has an invalid page, or when fewer
 * free blocks are left than a step may need (an FTL whose @moved writes can use up more than a
 * step frees waits for cheaper victims, e.g. mostly invalid translation blocks, elsewhere). */
static bool gc_step(NhBlocks *b, uint32_t pu, bool foreground)
{
    uint32_t blk;

    if (b->pu[pu].nfree < b->s.reserve) {
        return false;
    }
    blk = b->env.cfg->gc == NH_GC_COST_BENEFIT ? pick_cost_benefit(b, pu) : pick_greedy(b, pu);
    if (blk == NH_NONE) {
        return false;
    }
    relocate(b, blk, &b->st->ftl_gc_page_copies);
    b->st->ftl_gc_blocks++;
    if (nh_sched_defers(b->nand->sched)) {
        /* queued: foreground only if a host program comes to wait for its erase (counted
         * then, scheduler.h), wherever it was issued from */
        nh_sched_mark_victim(b->nand->sched, nh_die_of_block(b->nand, blk), blk);
    } else if (foreground) {
        /* booked at once, ahead of the host write that needs the free block it makes */
        b->st->ftl_gc_foreground_blocks++;
    }
    static_wl(b, pu);
    return true;
}

/* A page of frontier @front in plane @pu for host-side data, or NH_NONE when the plane cannot
 * take one now. */
static uint32_t host_page_in(NhBlocks *b, uint32_t pu, uint32_t front)
{
    NhPlane *p = &b->pu[pu];

    if (front_full(b, p, front)) {
        while (p->nfree <= b->crit && gc_step(b, pu, true)) {
        }
        if (p->nfree <= b->s.reserve && !opens_kept(b, p, front)) {
            return NH_NONE;
        }
    }
    return take_page(b, p, front);
}

/* alloc=dynamic: the index into the striping order of the plane ranked first for a host page
 * of frontier @front (alloc.h), from the round-robin cursor on so that ties keep its order. */
static uint32_t dynamic_pick(NhBlocks *b, uint32_t front)
{
    uint32_t best = b->rr[front];
    uint64_t best_rank = UINT64_MAX;

    for (uint32_t i = 0, k = b->rr[front]; i < b->npu; i++, k = k + 1 == b->npu ? 0 : k + 1) {
        NhPlane *p = &b->pu[b->order[k]];
        uint32_t next = !front_full(b, p, front) ? NH_NONE
                        : opens_kept(b, p, front) ? p->kept[p->nkept - 1]
                        : p->nfree ? p->heap[0] : NH_NONE;
        uint64_t rank = nh_alloc_rank(b->nand, b->order[k] / b->nand->g.planes, next, b->now);
        if (rank < best_rank) {
            best_rank = rank;
            best = k;
        }
    }
    return best;
}

uint32_t nh_blocks_host_page(NhBlocks *b, uint32_t front)
{
    uint32_t ppn = NH_NONE;

    if (b->unit_left[front]) {
        /* the rest of a word line: blocks hold whole word lines, so no new block and no GC */
        b->unit_left[front]--;
        return take_page(b, &b->pu[b->unit_pu[front]], front);
    }
    /*
     * Some plane accepts the page.  Page FTL (reserve 1, two frontiers): a GC step copies fewer
     * than a block's pages (greedy takes a block with an invalid page), a wear-levelling move
     * at most a block's, so either opens at most one block, and it frees its victim: a plane never falls below one free block.  A plane refuses
     * only with one free block and no closed block holding an invalid page, so it holds at
     * least (blocks - 3) blocks of valid data (all but the free block and the two frontiers).
     * If every plane refused, the device would hold npu * (blocks - 3) blocks of valid data,
     * more than the logical space, since nh_blocks_min_spare gives every plane at least
     * 2 + 3 + 1 spare blocks.  DFTL's steps may also open a translation block (its reserve is
     * two); that the spare makes every plane refusing at once impossible there is argued from
     * the same count but not proven, so the assertion stays as the check of it.
     */
    if (b->dynamic) {
        b->rr[front] = dynamic_pick(b, front);
    }
    for (uint32_t tries = 0; tries < b->npu && ppn == NH_NONE; tries++) {
        b->unit_pu[front] = b->order[b->rr[front]];
        ppn = host_page_in(b, b->unit_pu[front], front);
        b->rr[front] = b->rr[front] + 1 == b->npu ? 0 : b->rr[front] + 1;
    }
    g_assert(ppn != NH_NONE);
    b->unit_left[front] = b->nand->wl - 1;
    return ppn;
}

uint64_t nh_blocks_host_write(NhBlocks *b, const uint32_t *fwd, const NhFtlWrite *w, uint64_t i,
                              uint32_t front, uint64_t start, uint32_t *ppn)
{
    uint64_t lpn = w->lpn + i, t;
    uint32_t old1 = fwd[lpn];
    bool partial = (i == 0 && w->head_partial) || (i == w->npages - 1 && w->tail_partial);

    if (partial && old1) {
        /* the rest of the page must be carried over */
        start = nh_nand_read(b->nand, old1 - 1, start);
        b->st->ftl_rmw_reads++;
    }
    *ppn = nh_blocks_host_page(b, front);
    if (b->dynamic && start > b->now) {
        /* its die waits for the data carried over (or DFTL's mapping): it runs its GC meanwhile
         * (alloc.h) */
        nh_sched_fill(b->nand->sched, b->nand, nh_die_of_block(b->nand, *ppn / b->pages), start);
    }
    t = nh_nand_program(b->nand, *ppn, start);
    old1 = fwd[lpn];     /* GC above may have moved the old copy */
    if (old1) {
        nh_blocks_invalidate(b, old1 - 1);
    }
    return t;
}

void nh_blocks_background(NhBlocks *b, uint64_t now, bool defer)
{
    if (!b->bg_active || defer) {
        return;
    }
    b->now = now;
    for (uint32_t i = 0; i < b->npu; i++) {
        uint32_t pu = (b->bg_cursor + i) % b->npu;
        NhPlane *p = &b->pu[pu];
        if (!p->bg) {
            continue;
        }
        if (!gc_step(b, pu, false) || p->nfree >= b->high) {
            p->bg = false;
            b->bg_active--;
        }
        b->bg_cursor = (pu + 1) % b->npu;
        return;
    }
}

void nh_blocks_idle(NhBlocks *b)
{
    for (uint32_t i = 0; i < b->npu; i++) {
        NhPlane *p = &b->pu[i];
        if (!p->bg && p->nfree < b->high) {
            p->bg = true;
            b->bg_active++;
        }
    }
}

/* ------------------------------------------------------------------ life cycle */

static uint32_t pct_blocks(uint64_t spare, uint32_t pct)
{
    return (uint32_t)((spare * pct + 99) / 100);
}

/* Free-block watermarks of a plane with @spare blocks beyond its share of the live data.
 * gc-high may equal gc-low in blocks (no hysteresis): on a small plane every block kept free
 * is one that holds no invalid pages, so the band is not widened beyond what was asked. */
static void watermarks(const NhConfig *cfg, uint64_t spare, uint32_t reserve, uint32_t *crit,
                       uint32_t *low, uint32_t *high)
{
    *crit = MAX(reserve + 1, pct_blocks(spare, cfg->gc_critical));
    *low = MAX(*crit + 1, pct_blocks(spare, cfg->gc_low));
    *high = MAX(*low, pct_blocks(spare, cfg->gc_high));
}

uint32_t nh_blocks_min_spare(const NhConfig *cfg, uint64_t live_pages, uint32_t npu,
                             uint32_t held, uint32_t reserve, uint32_t reserved)
{
    uint64_t per_plane = (uint64_t)nh_config_unit_pages(cfg) * npu;
    uint64_t data = (live_pages + per_plane - 1) / per_plane;
    /* blocks=auto (cfg->blocks 0) is sized so that GC has op percent of the data besides the
     * open and free blocks: op is then what GC really has (docs/engine.md, Geometry).  An
     * explicit blocks is a given device, whose op counts every block beyond the logical space
     * as spare, the open and free blocks too, as MQSim and drive makers count it: it needs
     * one block of room, the least GC reclaims with.  Asking op of the data besides refused
     * MQSim's own geometry at its op of 7% (2,048 blocks, 1,880 of data, 180 needed). */
    uint64_t room = cfg->blocks ? 1 : MAX(1, (data * cfg->op + 99 - cfg->op) / (100 - cfg->op));
    uint32_t crit, low, high;

    if (cfg->gc_high >= 100) {
        return 0;   /* every spare block kept free: no block could ever hold invalid pages */
    }
    /* spare - high grows by at least one block per 100 / (100 - gc-high) blocks: this ends.
     * No s below held + room can do (high >= 0): start there, not counting up from a few
     * blocks (a plane of many millions of blocks took seconds). */
    for (uint64_t s = MAX(held + reserve + 2, held + room);; s++) {
        watermarks(cfg, s, reserve, &crit, &low, &high);
        if (s >= held + high + room) {
            return s + reserved > UINT32_MAX ? 0 : (uint32_t)(s + reserved);
        }
    }
}

uint64_t *nh_touched_new(uint64_t n)
{
    return g_try_malloc0_n((n >> (NH_CHUNK_SHIFT + 6)) + 1, sizeof(uint64_t));
}

bool nh_blocks_init(NhBlocks *b, const NhFtlEnv *env, const NhBlocksSpec *spec, GError **errp)
{
    const NhGeometry *g = &env->nand->g;
    uint64_t spare;

    memset(b, 0, sizeof(*b));
    b->s = *spec;
    b->env = *env;
    b->nand = env->nand;
    b->st = env->stats;
    b->pages = g->pages;
    b->blocks = g->blocks;
    b->usable = nh_zones_ftl_blocks(env->parts, g->blocks);
    b->npu = g->npu;
    b->dynamic = ((const NhAllocSettings *)env->parts->settings[NH_PART_alloc])->alloc ==
                 NH_ALLOC_DYNAMIC;
    /* the engine sized the geometry with the FTL's spare_blocks (nh_blocks_min_spare), so the
     * frontiers, the gc-high free blocks and room for invalid pages fit in every plane */
    spare = ((uint64_t)b->usable * g->npu - (spec->live_pages + g->pages - 1) / g->pages) / g->npu;
    watermarks(env->cfg, spare - MIN(spare, spec->reserved), spec->reserve, &b->crit, &b->low,
               &b->high);
    b->p2l = nh_lazy_alloc(g->npages, sizeof(uint32_t));
    b->blk = nh_lazy_alloc(g->nblocks, sizeof(NhBlock));
    if (!b->p2l || !b->blk) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "not enough host memory for the tables of %" G_GUINT64_FORMAT
                    " physical pages", g->npages);
        return false;
    }
    b->bucket = g_new(uint32_t, (size_t)b->npu * (b->pages + 1));
    memset(b->bucket, 0xff, sizeof(uint32_t) * (size_t)b->npu * (b->pages + 1));
    b->pu = g_new0(NhPlane, b->npu);
    b->order = g_new(uint32_t, b->npu);
    b->moves = g_new(NhMove, b->pages);
    for (uint32_t i = 0; i < b->npu; i++) {
        NhPlane *p = &b->pu[i];

        b->order[i] = nh_stripe_pu(g, i);
        p->heap = g_new(uint32_t, b->usable);
        for (uint32_t f = 0; f < NH_MAX_FRONT; f++) {
            p->open[f] = NH_NONE;
        }
        /* the plane's last blocks are the reserved frontiers' (the geometry added them, so
         * the others are those of a device without them); equal erase counts: any order is a
         * heap; a restored wear table is re-heaped by load */
        p->kept = g_new(uint32_t, MAX(spec->reserved, 1));
        for (uint32_t k = 0; k < b->usable; k++) {
            if (k < b->usable - MIN(spec->reserved, b->usable)) {
                heap_push(b, p, i * b->blocks + k);
            } else {
                p->kept[p->nkept++] = i * b->blocks + k;
            }
        }
    }
    return true;
}

void nh_blocks_destroy(NhBlocks *b)
{
    for (uint32_t i = 0; b->pu && i < b->npu; i++) {
        g_free(b->pu[i].heap);
        g_free(b->pu[i].kept);
    }
    g_free(b->pu);
    nh_lazy_free(b->p2l, b->nand->g.npages, sizeof(uint32_t));
    nh_lazy_free(b->blk, b->nand->g.nblocks, sizeof(NhBlock));
    g_free(b->bucket);
    g_free(b->order);
    g_free(b->moves);
}

/* ------------------------------------------------------------------ persistence */

bool nh_blocks_corrupt(const NhBlocks *b, GError **errp, const char *what)
{
    g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "state file: %s FTL section is damaged (%s)",
                b->env.cfg->ftl, what);
    return false;
}

/*
 * Serialised form (little-endian u32 words): per plane its frontier blocks; then the count and
 * list of (block, state | kind << 8, wp) for every block that is not free.
 */
void nh_blocks_save(const NhBlocks *b, GByteArray *o)
{
    uint64_t nblocks = (uint64_t)b->npu * b->blocks, count = 0;
    guint pos;

    for (uint32_t i = 0; i < b->npu; i++) {
        for (uint32_t f = 0; f < b->s.nfront; f++) {
            nh_put32(o, b->pu[i].open[f]);
        }
    }
    pos = nh_reserve64(o);
    for (uint64_t k = 0; k < nblocks; k++) {
        if (b->blk[k].state != NH_BLK_FREE) {
            nh_put32(o, (uint32_t)k);
            nh_put32(o, b->blk[k].state | (uint32_t)b->blk[k].kind << 8 |
                        (uint32_t)b->blk[k].front << 16);
            nh_put32(o, b->blk[k].wp);
            count++;
        }
    }
    nh_patch64(o, pos, count);
}

bool nh_blocks_load(NhBlocks *b, NhReader *r, GError **errp)
{
    uint64_t nblocks = (uint64_t)b->npu * b->blocks, n;

    for (uint32_t i = 0; i < b->npu; i++) {
        for (uint32_t f = 0; f < b->s.nfront; f++) {
            uint32_t *o = &b->pu[i].open[f];
            if (!nh_get32(r, o)) {
                return nh_blocks_corrupt(b, errp, "truncated frontier list");
            }
            if (*o != NH_NONE && (*o / b->blocks != i || !nh_blocks_ftls(b, *o))) {
                return nh_blocks_corrupt(b, errp, "open block outside its plane");
            }
        }
    }
    if (!nh_get64(r, &n) || n > nblocks) {
        return nh_blocks_corrupt(b, errp, "block count");
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k, state, wp, kind, front;
        if (!nh_get32(r, &k) || !nh_get32(r, &state) || !nh_get32(r, &wp)) {
            return nh_blocks_corrupt(b, errp, "truncated block list");
        }
        front = state >> 16;
        kind = (state >> 8) & 0xff;
        state &= 0xff;
        if (k >= nblocks || !nh_blocks_ftls(b, k) || (state != NH_BLK_OPEN && state != NH_BLK_CLOSED) || wp > b->pages ||
            kind >= NH_MAX_KIND || front >= b->s.nfront) {
            return nh_blocks_corrupt(b, errp, "block entry out of range");
        }
        b->blk[k].state = (uint8_t)state;
        b->blk[k].kind = (uint8_t)kind;
        b->blk[k].front = (uint8_t)front;
        b->blk[k].wp = wp;
        b->nand->next_page[k] = wp;
    }
    for (uint32_t i = 0; i < b->npu; i++) {
        for (uint32_t f = 0; f < b->s.nfront; f++) {
            uint32_t o = b->pu[i].open[f];
            if (o != NH_NONE && (b->blk[o].state != NH_BLK_OPEN ||
                                 b->blk[o].kind != b->s.front_kind[f])) {
                return nh_blocks_corrupt(b, errp, "open block not marked open");
            }
            if (o != NH_NONE) {
                b->blk[o].front = (uint8_t)f;   /* images before placement did not say */
            }
        }
    }
    return true;
}

void nh_map_save(GByteArray *o, const uint32_t *fwd, const uint64_t *touched, uint64_t n)
{
    guint pos = nh_reserve64(o);
    uint64_t count = 0;

    for (uint64_t c = 0; c <= (n >> NH_CHUNK_SHIFT); c++) {
        uint64_t i, end;
        if (touched && !(touched[c >> 6] & (1ull << (c & 63)))) {
            continue;
        }
        i = c << NH_CHUNK_SHIFT;
        end = MIN(n, (c + 1) << NH_CHUNK_SHIFT);
        while (i < end) {
            uint32_t ppn1 = fwd[i];
            uint32_t len = 1;
            if (!ppn1) {
                i++;
                continue;
            }
            while (i + len < end && fwd[i + len] == ppn1 + len) {
                len++;
            }
            nh_put32(o, (uint32_t)i);
            nh_put32(o, ppn1 - 1);
            nh_put32(o, len);
            count++;
            i += len;
        }
    }
    nh_patch64(o, pos, count);
}

bool nh_map_load(NhBlocks *b, NhReader *r, uint32_t *fwd, uint64_t *touched, uint64_t n,
                 uint8_t kind, GError **errp)
{
    uint64_t runs;

    if (!nh_get64(r, &runs)) {
        return nh_blocks_corrupt(b, errp, "run count");
    }
    for (uint64_t i = 0; i < runs; i++) {
        uint32_t first, ppn, cnt;
        if (!nh_get32(r, &first) || !nh_get32(r, &ppn) || !nh_get32(r, &cnt)) {
            return nh_blocks_corrupt(b, errp, "truncated mapping");
        }
        if (!cnt || (uint64_t)first + cnt > n || (uint64_t)ppn + cnt > b->nand->g.npages) {
            return nh_blocks_corrupt(b, errp, "mapping run out of range");
        }
        for (uint32_t k = 0; k < cnt; k++) {
            uint32_t q = ppn + k;
            const NhBlock *blk = &b->blk[q / b->pages];
            if (fwd[first + k] || b->p2l[q] || q % b->pages >= blk->wp || blk->kind != kind) {
                return nh_blocks_corrupt(b, errp, "mapping to an unwritten or shared page");
            }
            fwd[first + k] = q + 1;
            if (touched) {
                nh_touch(touched, first + k);
            }
            nh_blocks_map(b, first + k, q);
        }
    }
    return true;
}

uint32_t nh_blocks_unopened(const NhBlocks *b, const NhPlane *p)
{
    uint32_t n = 0;

    for (uint32_t f = b->s.nfront - b->s.reserved; f < b->s.nfront; f++) {
        n += p->open[f] == NH_NONE;
    }
    return n;
}

void nh_blocks_load_done(NhBlocks *b)
{
    uint64_t nblocks = (uint64_t)b->npu * b->blocks;

    for (uint32_t i = 0; i < b->npu; i++) {
        NhPlane *p = &b->pu[i];
        uint32_t unopened = nh_blocks_unopened(b, p);

        p->nfree = 0;
        p->nkept = 0;
        /* kept for the reserved frontiers without an open block: the plane's last free
         * blocks, as a new device keeps its last blocks */
        for (uint32_t k = b->usable; k-- > 0 && p->nkept < unopened;) {
            uint32_t blk = i * b->blocks + k;
            if (b->blk[blk].state == NH_BLK_FREE) {
                p->kept[p->nkept++] = blk;
                b->blk[blk].state = NH_BLK_KEPT;
            }
        }
    }
    for (uint64_t k = 0; k < nblocks; k++) {
        if (b->blk[k].state == NH_BLK_KEPT) {
            b->blk[k].state = NH_BLK_FREE;
        } else if (b->blk[k].state == NH_BLK_FREE && nh_blocks_ftls(b, k)) {
            heap_push(b, &b->pu[k / b->blocks], (uint32_t)k);
        } else if (b->blk[k].state == NH_BLK_CLOSED) {
            bucket_insert(b, (uint32_t)k);
        }
    }
    for (uint32_t i = 0; i < b->npu; i++) {
        note_free_space(b, &b->pu[i]);
    }
}
