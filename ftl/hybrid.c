/*
 * hybrid.c - block-mapped data blocks, the log-block pool and the merges, shared by the hybrid
 * FTLs (the model and its rules are in hybrid.h; the policies are ftl-bast.c, ftl-fast.c and
 * ftl-sast.c).
 */
#include "hybrid.h"
#include "record.h"
#include "nh-heap.h"
#include "mem.h"

#include <string.h>

/* ------------------------------------------------------------------ free-block heap */

static uint64_t heap_key(const void *ctx, uint32_t b)
{
    return hy_free_key(ctx, b);
}

static void heap_push(HyFtl *h, uint32_t b)
{
    nh_heap_push(h->heap, h->nfree++, b, heap_key, h);
}

static uint32_t heap_pop(HyFtl *h)
{
    return nh_heap_pop(h->heap, h->nfree--, heap_key, h);
}

/* ------------------------------------------------------------------ blocks and pages */

static uint32_t alloc_block(HyFtl *h, uint8_t state, uint32_t lbn)
{
    uint32_t b;
    /* blocks > logical blocks + log-blocks (checked at creation) keeps one free for merges */
    g_assert(h->nfree > 0);
    b = heap_pop(h);
    h->blk[b] = (HyBlock){ .state = state, .lbn = lbn, .set = HY_NONE, .prev = HY_NONE,
                           .next = HY_NONE, .sprev = HY_NONE, .snext = HY_NONE };
    return b;
}

/* Erase @b (empty by now) no earlier than @t and return it to the pool. */
static uint64_t erase_block(HyFtl *h, uint32_t b, uint64_t t)
{
    g_assert(h->blk[b].valid == 0);
    t = nh_nand_erase(h->nand, b, t);
    h->blk[b] = (HyBlock){ .state = HY_FREE };
    heap_push(h, b);
    /* merges are the hybrid FTLs' garbage collection, and a host write always waits for them */
    h->st->ftl_gc_blocks++;
    h->st->ftl_gc_foreground_blocks++;
    return t;
}

static uint64_t program(HyFtl *h, uint32_t ppn, uint64_t start)
{
    HyBlock *k = &h->blk[ppn / h->pages];
    uint32_t page = ppn % h->pages;
    g_assert(page >= k->wp);
    k->wp = page + 1;
    return nh_nand_program(h->nand, ppn, start);
}

static void invalidate(HyFtl *h, uint32_t ppn)
{
    h->p2l[ppn] = 0;
    h->blk[ppn / h->pages].valid--;
}

static void map(HyFtl *h, uint64_t lpn, uint32_t ppn)
{
    h->l2p[lpn] = ppn + 1;
    h->p2l[ppn] = (uint32_t)lpn + 1;
    h->blk[ppn / h->pages].valid++;
}

/* Move the latest copy of @lpn (if any) to @dst; returns when the copy ends. */
static uint64_t copy_page(HyFtl *h, uint64_t lpn, uint32_t dst)
{
    uint32_t src1 = h->l2p[lpn];
    uint64_t t;

    if (!src1) {
        return h->now;
    }
    t = nh_nand_read(h->nand, src1 - 1, h->now);
    t = program(h, dst, t);
    invalidate(h, src1 - 1);
    map(h, lpn, dst);
    h->st->ftl_gc_page_copies++;
    return t;
}

/* MAX() evaluates its arguments twice: never give it a flash operation */
static inline uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ------------------------------------------------------------------ log lists */

static void log_link(HyFtl *h, uint32_t b, uint32_t set)
{
    HyBlock *k = &h->blk[b];
    HySet *s = &h->sets[set];

    k->state = HY_LOG;
    k->set = set;
    k->prev = h->log_tail;
    k->next = HY_NONE;
    if (h->log_tail != HY_NONE) {
        h->blk[h->log_tail].next = b;
    } else {
        h->log_head = b;
    }
    h->log_tail = b;
    k->sprev = s->tail;
    k->snext = HY_NONE;
    if (s->tail != HY_NONE) {
        h->blk[s->tail].snext = b;
    } else {
        s->head = b;
    }
    s->tail = b;
    s->count++;
    h->nlog++;
}

static void log_unlink(HyFtl *h, uint32_t b)
{
    HyBlock *k = &h->blk[b];
    HySet *s = &h->sets[k->set];

    if (k->prev != HY_NONE) {
        h->blk[k->prev].next = k->next;
    } else {
        h->log_head = k->next;
    }
    if (k->next != HY_NONE) {
        h->blk[k->next].prev = k->prev;
    } else {
        h->log_tail = k->prev;
    }
    if (k->sprev != HY_NONE) {
        h->blk[k->sprev].snext = k->snext;
    } else {
        s->head = k->snext;
    }
    if (k->snext != HY_NONE) {
        h->blk[k->snext].sprev = k->sprev;
    } else {
        s->tail = k->sprev;
    }
    s->count--;
    h->nlog--;
    k->prev = k->next = k->sprev = k->snext = k->set = HY_NONE;
}

/* ------------------------------------------------------------------ merges */

/* Can in-order log block @b become its logical block's data block?  Not if the old data block
 * holds a valid page at an offset @b has already programmed: that page could not follow. */
static bool switchable(const HyFtl *h, uint32_t b)
{
    const HyBlock *k = &h->blk[b];
    uint32_t d;

    if (k->lbn == HY_NONE) {
        return false;
    }
    d = hy_data_block(h, k->lbn);
    for (uint32_t o = 0; d != HY_NONE && o < MIN(k->wp, h->blk[d].wp); o++) {
        if (h->p2l[d * h->pages + o]) {
            return false;
        }
    }
    return true;
}

/* Switch (full victim) or partial merge of in-order log block @b; returns when it ends. */
static uint64_t switch_merge(HyFtl *h, uint32_t b)
{
    HyBlock *k = &h->blk[b];
    uint32_t lbn = k->lbn, d = hy_data_block(h, lbn);
    uint64_t base = (uint64_t)lbn * h->pages, done = h->now;
    bool partial = k->wp < h->pages;

    for (uint32_t o = k->wp; o < h->pages && base + o < h->env.lpages; o++) {
        done = later(done, copy_page(h, base + o, b * h->pages + o));
    }
    log_unlink(h, b);
    k->state = HY_DATA;
    k->lbn = lbn;
    h->dmap[lbn] = b + 1;
    if (d != HY_NONE) {
        done = erase_block(h, d, done);
    }
    if (partial) {
        h->st->ftl_merges_partial++;
    } else {
        h->st->ftl_merges_switch++;
    }
    return done;
}

/* Full merge of logical block @lbn: its latest pages into a new data block, the old one erased. */
static uint64_t full_merge(HyFtl *h, uint32_t lbn)
{
    uint32_t d = hy_data_block(h, lbn), n = alloc_block(h, HY_DATA, lbn);
    uint64_t base = (uint64_t)lbn * h->pages, done = h->now;

    for (uint32_t o = 0; o < h->pages && base + o < h->env.lpages; o++) {
        done = later(done, copy_page(h, base + o, n * h->pages + o));
    }
    h->dmap[lbn] = n + 1;
    if (d != HY_NONE) {
        done = erase_block(h, d, done);
    }
    h->st->ftl_merges_full++;
    return done;
}

void hy_merge(HyFtl *h, uint32_t b)
{
    uint64_t done;

    g_assert(h->blk[b].state == HY_LOG);
    if (switchable(h, b)) {
        done = switch_merge(h, b);
    } else {
        done = h->now;
        /* a full merge of a logical block invalidates all its pages here, so each is met once */
        for (uint32_t i = 0; i < h->blk[b].wp; i++) {
            uint32_t lpn1 = h->p2l[b * h->pages + i];
            if (lpn1) {
                done = later(done, full_merge(h, hy_lbn(h, lpn1 - 1)));
            }
        }
        log_unlink(h, b);
        done = erase_block(h, b, done);
    }
    h->merge_done = later(h->merge_done, done);
}

uint32_t hy_log_page(HyFtl *h, uint32_t set, uint64_t lpn)
{
    HySet *s = &h->sets[set];
    uint32_t b = s->tail, page, lbn = hy_lbn(h, lpn), off = (uint32_t)(lpn % h->pages);
    HyBlock *k;

    if (b == HY_NONE || h->blk[b].wp == h->pages) {
        if (s->count >= s->cap) {
            hy_merge(h, s->head);
        } else if (h->nlog >= h->max_log) {
            hy_merge(h, h->log_head);
        }
        b = alloc_block(h, HY_LOG, lbn);
        log_link(h, b, set);
    }
    k = &h->blk[b];
    page = k->wp;
    /* still in order only if this page is offset @page of the same logical block */
    if (off != page || (page && k->lbn != lbn)) {
        k->lbn = HY_NONE;
    }
    return b * h->pages + page;
}

/* ------------------------------------------------------------------ host requests */

/* The page of @lpn's data block if it can be written in place, else HY_NONE.  A logical block
 * written for the first time gets its data block here. */
static uint32_t in_place(HyFtl *h, uint64_t lpn)
{
    uint32_t lbn = hy_lbn(h, lpn), d = hy_data_block(h, lbn), off = (uint32_t)(lpn % h->pages);

    if (d == HY_NONE) {
        d = alloc_block(h, HY_DATA, lbn);
        h->dmap[lbn] = d + 1;
    }
    return off >= h->blk[d].wp ? d * h->pages + off : HY_NONE;
}

uint64_t hy_write(void *opaque, const NhFtlWrite *w, uint64_t now)
{
    HyFtl *h = opaque;
    uint64_t done = now;

    h->now = now;
    for (uint64_t i = 0; i < w->npages; i++) {
        uint64_t lpn = w->lpn + i, start = now, t;
        uint32_t old1 = h->l2p[lpn], ppn, b;
        bool partial = (i == 0 && w->head_partial) || (i == w->npages - 1 && w->tail_partial);

        if (partial && old1) {
            /* the rest of the page must be carried over */
            start = nh_nand_read(h->nand, old1 - 1, now);
            h->st->ftl_rmw_reads++;
        }
        h->merge_done = now;
        ppn = in_place(h, lpn);
        if (ppn == HY_NONE) {
            ppn = h->place(h, lpn);
        }
        /* the page goes where the merges made room, so it waits for them */
        t = program(h, ppn, later(start, h->merge_done));
        done = later(done, t);
        old1 = h->l2p[lpn];     /* a merge above may have moved the old copy */
        if (old1) {
            invalidate(h, old1 - 1);
        }
        map(h, lpn, ppn);
        b = ppn / h->pages;
        /* a full in-order log block costs only an erase to switch: do it now */
        if (h->blk[b].state == HY_LOG && h->blk[b].wp == h->pages && switchable(h, b)) {
            hy_merge(h, b);
        }
    }
    return done;
}

uint64_t hy_read(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    HyFtl *h = opaque;
    uint64_t done = now;

    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = h->l2p[lpn + i];
        if (ppn1) {
            done = later(done, nh_nand_read(h->nand, ppn1 - 1, now));
        }
    }
    return done;
}

uint64_t hy_trim(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    HyFtl *h = opaque;

    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = h->l2p[lpn + i];
        if (ppn1) {
            invalidate(h, ppn1 - 1);
            h->l2p[lpn + i] = 0;
        }
    }
    return now;
}

uint64_t hy_flush(void *opaque, uint64_t now)
{
    (void)opaque;
    return now;     /* no volatile state: every write is on NAND when it completes */
}

void hy_background(void *opaque, uint64_t now, bool defer)
{
    /* merges happen when a write needs room, never in the background */
    (void)opaque;
    (void)now;
    (void)defer;
}

bool hy_is_mapped(void *opaque, uint64_t lpn)
{
    HyFtl *h = opaque;
    return h->l2p[lpn] != 0;
}

uint32_t hy_home(void *opaque, uint64_t lpn)
{
    HyFtl *h = opaque;
    const NhGeometry *g = &h->nand->g;

    /* written in logical order on a new device, logical block n gets the n-th block the free
     * heap hands out (its spread key stripes them), its page i at page i */
    return nh_stripe_pu(g, (uint32_t)(hy_lbn(h, lpn) % g->npu)) * g->blocks * g->pages +
           (uint32_t)(lpn % g->pages);
}

/* A walk over the block's pages: the ref buffer asks about a few blocks per eviction. */
bool hy_in_log(void *opaque, uint64_t lbn)
{
    HyFtl *h = opaque;
    uint64_t base = lbn * h->pages;

    for (uint32_t o = 0; o < h->pages && base + o < h->env.lpages; o++) {
        uint32_t ppn1 = h->l2p[base + o];
        if (ppn1 && h->blk[(ppn1 - 1) / h->pages].state == HY_LOG) {
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ creation */

const NhConfigKey hy_keys[] = {
    { "log-blocks", NH_KEY_UINT, 0, 0, "auto", 1, 1u << 24, NULL, true,
      "bast, fast, sast: log blocks in the pool (fast: 1 sequential + the rest random); "
      "auto = every spare block but the one merges need" },
    { NULL },
};

/* The log-block pool and the free block a merge needs, spread over the planes; at least the
 * minimum of 4 per plane, which with log-blocks=auto all become log blocks but one. */
uint32_t hy_spare_blocks(const NhFtlEnv *env, uint32_t npu)
{
    return (uint32_t)MAX(4u, (env->shared_keys[HY_KEY_LOG_BLOCKS] + 1 + npu - 1) / npu);
}

void hy_destroy(void *opaque)
{
    HyFtl *h = opaque;
    if (!h) {
        return;
    }
    nh_lazy_free(h->l2p, h->env.lpages, sizeof(uint32_t));
    nh_lazy_free(h->p2l, h->nand->g.npages, sizeof(uint32_t));
    nh_lazy_free(h->dmap, h->nlb, sizeof(uint32_t));
    nh_lazy_free(h->blk, h->nblocks, sizeof(HyBlock));
    g_free(h->heap);
    g_free(h->rank);
    g_free(h->sets);
    g_free(h);
}

HyFtl *hy_new(const NhFtlEnv *env, HyPlaceFn place, uint32_t nsets, uint32_t cap,
              GError **errp)
{
    HyFtl *h = g_new0(HyFtl, 1);
    const NhGeometry *g = &env->nand->g;
    uint64_t spare;

    h->env = *env;
    h->nand = env->nand;
    h->st = env->stats;
    h->place = place;
    h->pages = g->pages;
    h->nblocks = g->nblocks;
    h->nlb = (uint32_t)((env->lpages + g->pages - 1) / g->pages);
    /* the engine sized the geometry with hy_spare_blocks, so the pool and one more fit */
    spare = h->nblocks - h->nlb;
    h->max_log = nh_ftl_log_blocks(env->shared_keys[HY_KEY_LOG_BLOCKS], g, env->lpages);
    g_assert(h->max_log < spare);
    h->l2p = nh_lazy_alloc(env->lpages, sizeof(uint32_t));
    h->p2l = nh_lazy_alloc(g->npages, sizeof(uint32_t));
    h->dmap = nh_lazy_alloc(h->nlb, sizeof(uint32_t));
    h->blk = nh_lazy_alloc(h->nblocks, sizeof(HyBlock));
    h->heap = g_try_new(uint32_t, h->nblocks);
    h->sets = g_try_new(HySet, nsets);
    if (!h->l2p || !h->p2l || !h->dmap || !h->blk || !h->heap || !h->sets) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "not enough host memory for the mapping tables of %" G_GUINT64_FORMAT
                    " logical and %" G_GUINT64_FORMAT " physical pages",
                    env->lpages, g->npages);
        hy_destroy(h);
        return NULL;
    }
    h->nsets = nsets;
    for (uint32_t i = 0; i < nsets; i++) {
        h->sets[i] = (HySet){ .head = HY_NONE, .tail = HY_NONE, .cap = cap };
    }
    h->log_head = h->log_tail = HY_NONE;
    h->rank = g_new(uint32_t, g->npu);
    for (uint32_t i = 0; i < g->npu; i++) {
        h->rank[nh_stripe_pu(g, i)] = i;
    }
    /* Pushed, not laid out in key order: after an unclean restart the FTL is created on the
     * restored erase counts and no load re-heaps them. */
    for (uint64_t i = 0; i < h->nblocks; i++) {
        heap_push(h, nh_stripe_pu(g, (uint32_t)(i % g->npu)) * g->blocks +
                     (uint32_t)(i / g->npu));
    }
    return h;
}

/* ------------------------------------------------------------------ persistence */

/*
 * Serialised form (little-endian): u32 log-blocks, sets, cap of the first and of the last set
 * (so a file from another log-blocks / sast-n / sast-k is refused); u64 count, then per log block
 * in allocation order (block, set, wp, lbn); u64 count, then per data block (block, wp, lbn);
 * u64 count, then mapping runs (lpn, ppn, len) of consecutive logical pages in consecutive
 * physical pages.
 */
void hy_save(void *opaque, GByteArray *o)
{
    HyFtl *h = opaque;
    uint64_t n = 0;
    guint pos;

    nh_put32(o, h->max_log);
    nh_put32(o, h->nsets);
    nh_put32(o, h->sets[0].cap);
    nh_put32(o, h->sets[h->nsets - 1].cap);
    nh_put64(o, h->nlog);
    for (uint32_t b = h->log_head; b != HY_NONE; b = h->blk[b].next) {
        nh_put32(o, b);
        nh_put32(o, h->blk[b].set);
        nh_put32(o, h->blk[b].wp);
        nh_put32(o, h->blk[b].lbn);
    }
    pos = nh_reserve64(o);
    for (uint64_t b = 0; b < h->nblocks; b++) {
        if (h->blk[b].state == HY_DATA) {
            nh_put32(o, (uint32_t)b);
            nh_put32(o, h->blk[b].wp);
            nh_put32(o, h->blk[b].lbn);
            n++;
        }
    }
    nh_patch64(o, pos, n);
    pos = nh_reserve64(o);
    n = 0;
    for (uint64_t b = 0; b < h->nblocks; b++) {
        uint32_t base = (uint32_t)b * h->pages;
        for (uint32_t i = 0; h->blk[b].state != HY_FREE && i < h->blk[b].wp;) {
            uint32_t lpn1 = h->p2l[base + i], len = 1;
            if (!lpn1) {
                i++;
                continue;
            }
            while (i + len < h->blk[b].wp && h->p2l[base + i + len] == lpn1 + len) {
                len++;
            }
            nh_put32(o, lpn1 - 1);
            nh_put32(o, base + i);
            nh_put32(o, len);
            n++;
            i += len;
        }
    }
    nh_patch64(o, pos, n);
}

static bool corrupt(GError **errp, const char *what)
{
    g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "state file: hybrid FTL section is damaged (%s)",
                what);
    return false;
}

bool hy_load(void *opaque, const guint8 *data, size_t len, GError **errp)
{
    HyFtl *h = opaque;
    NhReader r = { data, data + len };
    uint32_t max_log, nsets, cap0, cap1;
    uint64_t n;

    if (!nh_get32(&r, &max_log) || !nh_get32(&r, &nsets) || !nh_get32(&r, &cap0) || !nh_get32(&r, &cap1)) {
        return corrupt(errp, "truncated header");
    }
    if (max_log != h->max_log || nsets != h->nsets || cap0 != h->sets[0].cap ||
        cap1 != h->sets[h->nsets - 1].cap) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE,
                    "state file: saved with another log-block layout (log-blocks %u, %u sets "
                    "of %u..%u log blocks; now %u, %u sets of %u..%u): use the same log-blocks, "
                    "sast-n and sast-k", max_log, nsets, cap0, cap1, h->max_log, h->nsets,
                    h->sets[0].cap, h->sets[h->nsets - 1].cap);
        return false;
    }
    if (!nh_get64(&r, &n) || n > h->max_log) {
        return corrupt(errp, "log block count");
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b, set, wp, lbn;
        if (!nh_get32(&r, &b) || !nh_get32(&r, &set) || !nh_get32(&r, &wp) || !nh_get32(&r, &lbn)) {
            return corrupt(errp, "truncated log block list");
        }
        if (b >= h->nblocks || h->blk[b].state != HY_FREE || set >= h->nsets || wp > h->pages ||
            (lbn != HY_NONE && lbn >= h->nlb) || h->sets[set].count >= h->sets[set].cap) {
            return corrupt(errp, "log block entry out of range");
        }
        h->blk[b] = (HyBlock){ .wp = wp, .lbn = lbn };
        log_link(h, b, set);
    }
    if (!nh_get64(&r, &n) || n > h->nlb) {
        return corrupt(errp, "data block count");
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b, wp, lbn;
        if (!nh_get32(&r, &b) || !nh_get32(&r, &wp) || !nh_get32(&r, &lbn)) {
            return corrupt(errp, "truncated data block list");
        }
        if (b >= h->nblocks || h->blk[b].state != HY_FREE || wp > h->pages || lbn >= h->nlb ||
            h->dmap[lbn]) {
            return corrupt(errp, "data block entry out of range");
        }
        h->blk[b] = (HyBlock){ .state = HY_DATA, .wp = wp, .lbn = lbn, .set = HY_NONE,
                               .prev = HY_NONE, .next = HY_NONE, .sprev = HY_NONE,
                               .snext = HY_NONE };
        h->dmap[lbn] = b + 1;
    }
    if (!nh_get64(&r, &n)) {
        return corrupt(errp, "run count");
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t lpn, ppn, cnt;
        if (!nh_get32(&r, &lpn) || !nh_get32(&r, &ppn) || !nh_get32(&r, &cnt)) {
            return corrupt(errp, "truncated mapping");
        }
        if (!cnt || (uint64_t)lpn + cnt > h->env.lpages ||
            (uint64_t)ppn + cnt > h->nand->g.npages) {
            return corrupt(errp, "mapping run out of range");
        }
        for (uint32_t k = 0; k < cnt; k++) {
            if (h->l2p[lpn + k] || h->p2l[ppn + k] || hy_misplaced(h, lpn + k, ppn + k)) {
                return corrupt(errp, "mapping to an unwritten, shared or misplaced page");
            }
            map(h, lpn + k, ppn + k);
        }
    }
    if (r.p != r.end) {
        return corrupt(errp, "trailing bytes");
    }
    h->nfree = 0;
    for (uint64_t b = 0; b < h->nblocks; b++) {
        h->nand->next_page[b] = h->blk[b].wp;
        if (h->blk[b].state == HY_FREE) {
            heap_push(h, (uint32_t)b);
        }
    }
    if (h->nfree == 0) {
        return corrupt(errp, "no free block left for merges");
    }
    return true;
}
