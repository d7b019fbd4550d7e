/*
 * ftl-page.c - page-level mapping with garbage collection and wear levelling.
 *
 * Layout of the state, chosen for a 1 TiB space in a few GiB that starts instantly:
 *  - l2p[lpn] and p2l[ppn] hold ppn+1 and lpn+1, so 0 means unmapped / invalid and the arrays can
 *    come from calloc untouched: the kernel supplies zero pages only when an entry is written.
 *    A physical page is valid exactly when its p2l entry is nonzero, so no separate bitmap exists.
 *  - Each plane (parallel unit, pu) has two open blocks, one for host writes and one for GC and
 *    wear-levelling copies (copies stay in the victim's plane, so a victim never needs space
 *    elsewhere), a min-heap of free blocks keyed by erase count (dynamic wear levelling: the
 *    least-worn free block is opened next), and its closed blocks in buckets by valid-page count
 *    so greedy finds a victim in O(pages).
 *  - Host writes go to the planes round-robin in an order that changes channel fastest, then
 *    way, die and plane, so consecutive pages land on different buses.
 *
 * Free-space rules (per plane; thresholds are percent of the plane's spare blocks, because at
 * steady state only spare blocks can ever be free):
 *  - a host write may open a new block only while more than one block is free: the last one is
 *    reserved for GC, which needs at most one block per victim (a victim has fewer valid pages
 *    than a block holds), so GC can always finish;
 *  - below gc-critical free blocks, host writes wait for GC (foreground);
 *  - below gc-low, background GC reclaims one victim before each request until gc-high is
 *    reached, unless priority requests are outstanding.
 */
#include "ftl.h"
#include "engine.h"
#include "mem.h"

#include <string.h>

#define NONE UINT32_MAX
#define CHUNK_SHIFT 16      /* l2p entries per bit of the "touched" map used by save */

enum { BLK_FREE = 0, BLK_OPEN, BLK_CLOSED };

typedef struct Block {
    uint32_t valid;
    uint32_t wp;            /* next page to program */
    uint32_t prev, next;    /* bucket links while closed */
    uint64_t mtime;         /* last program or invalidation, for cost-benefit */
    uint8_t  state;
} Block;

typedef struct Pu {
    uint32_t *heap;         /* free blocks, min-heap on erase count */
    uint32_t  nfree;
    uint32_t  host_blk, gc_blk;
    uint32_t  erases;       /* since the last static wear-levelling check */
    bool      bg;           /* background GC active */
} Pu;

typedef struct PageFtl {
    NhFtlEnv   env;
    NhNand    *nand;
    NhStats   *st;
    uint32_t   pages, blocks, npu;
    uint32_t  *l2p;
    uint32_t  *p2l;
    Block     *blk;
    Pu        *pu;
    uint32_t  *bucket;      /* [npu * (pages + 1)] list heads by valid count */
    uint32_t  *order;       /* [npu] striping order */
    uint32_t   rr;          /* next index into order */
    uint32_t   bg_active, bg_cursor;
    uint32_t   crit, low, high;     /* free-block thresholds per plane */
    uint64_t  *touched;     /* bitmap over l2p chunks ever mapped */
    uint64_t   now;
} PageFtl;

/* ------------------------------------------------------------------ free-block heap */

static inline uint32_t wear(const PageFtl *f, uint32_t b) { return f->nand->erase_count[b]; }

static void heap_push(PageFtl *f, Pu *p, uint32_t b)
{
    uint32_t i = p->nfree++;
    while (i) {
        uint32_t parent = (i - 1) / 2;
        if (wear(f, p->heap[parent]) <= wear(f, b)) {
            break;
        }
        p->heap[i] = p->heap[parent];
        i = parent;
    }
    p->heap[i] = b;
}

static uint32_t heap_pop(PageFtl *f, Pu *p)
{
    uint32_t top = p->heap[0], last = p->heap[--p->nfree], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= p->nfree) {
            break;
        }
        if (c + 1 < p->nfree && wear(f, p->heap[c + 1]) < wear(f, p->heap[c])) {
            c++;
        }
        if (wear(f, last) <= wear(f, p->heap[c])) {
            break;
        }
        p->heap[i] = p->heap[c];
        i = c;
    }
    if (p->nfree) {
        p->heap[i] = last;
    }
    return top;
}

/* ------------------------------------------------------------------ valid-count buckets */

static inline uint32_t *head_of(PageFtl *f, uint32_t pu, uint32_t valid)
{
    return &f->bucket[(size_t)pu * (f->pages + 1) + valid];
}

static void bucket_insert(PageFtl *f, uint32_t b)
{
    uint32_t *h = head_of(f, b / f->blocks, f->blk[b].valid);
    f->blk[b].prev = NONE;
    f->blk[b].next = *h;
    if (*h != NONE) {
        f->blk[*h].prev = b;
    }
    *h = b;
}

static void bucket_remove(PageFtl *f, uint32_t b)
{
    Block *k = &f->blk[b];
    if (k->prev != NONE) {
        f->blk[k->prev].next = k->next;
    } else {
        *head_of(f, b / f->blocks, k->valid) = k->next;
    }
    if (k->next != NONE) {
        f->blk[k->next].prev = k->prev;
    }
}

/* ------------------------------------------------------------------ mapping */

static void invalidate(PageFtl *f, uint32_t ppn)
{
    uint32_t b = ppn / f->pages;
    Block *k = &f->blk[b];

    f->p2l[ppn] = 0;
    if (k->state == BLK_CLOSED) {
        bucket_remove(f, b);
        k->valid--;
        bucket_insert(f, b);
    } else {
        k->valid--;
    }
    k->mtime = f->now;
}

static void map(PageFtl *f, uint64_t lpn, uint32_t ppn)
{
    f->l2p[lpn] = ppn + 1;
    f->p2l[ppn] = (uint32_t)lpn + 1;
    f->blk[ppn / f->pages].valid++;
    f->touched[lpn >> (CHUNK_SHIFT + 6)] |= 1ull << ((lpn >> CHUNK_SHIFT) & 63);
}

static void close_block(PageFtl *f, uint32_t b)
{
    f->blk[b].state = BLK_CLOSED;
    bucket_insert(f, b);
}

static void note_free_space(PageFtl *f, Pu *p)
{
    if (!p->bg && p->nfree < f->low) {
        p->bg = true;
        f->bg_active++;
    }
}

static uint32_t open_block(PageFtl *f, Pu *p)
{
    uint32_t b = heap_pop(f, p);
    f->blk[b].state = BLK_OPEN;
    f->blk[b].wp = 0;
    f->blk[b].valid = 0;
    note_free_space(f, p);
    return b;
}

/* A page in the plane's GC block; the caller guarantees a free block exists if it is full. */
static uint32_t gc_page(PageFtl *f, uint32_t pu)
{
    Pu *p = &f->pu[pu];
    if (p->gc_blk == NONE || f->blk[p->gc_blk].wp == f->pages) {
        if (p->gc_blk != NONE) {
            close_block(f, p->gc_blk);
        }
        p->gc_blk = open_block(f, p);
    }
    return p->gc_blk * f->pages + f->blk[p->gc_blk].wp++;
}

/* ------------------------------------------------------------------ cleaning */

static uint32_t pick_greedy(PageFtl *f, uint32_t pu)
{
    for (uint32_t v = 0; v < f->pages; v++) {
        uint32_t b = *head_of(f, pu, v);
        if (b != NONE) {
            return b;
        }
    }
    return NONE;
}

/* Kawaguchi / Rosenblum: maximise age * (1 - u) / (2u), u the valid fraction. */
static uint32_t pick_cost_benefit(PageFtl *f, uint32_t pu)
{
    uint32_t best = NONE;
    double best_score = -1.0;

    for (uint32_t v = 0; v < f->pages; v++) {
        for (uint32_t b = *head_of(f, pu, v); b != NONE; b = f->blk[b].next) {
            double u = (double)v / f->pages;
            double age = (double)(f->now - f->blk[b].mtime) + 1.0;
            double score;
            if (v == 0) {
                return b;
            }
            score = age * (1.0 - u) / (2.0 * u);
            if (score > best_score) {
                best_score = score;
                best = b;
            }
        }
    }
    return best;
}

/* Move the valid pages of closed block @b to the plane's GC block and erase it. */
static uint64_t relocate(PageFtl *f, uint32_t b, uint64_t *copies)
{
    uint32_t pu = b / f->blocks;
    uint32_t base = b * f->pages;
    uint64_t done = f->now;

    bucket_remove(f, b);
    f->blk[b].state = BLK_OPEN;     /* out of the buckets while it is emptied */
    for (uint32_t i = 0; i < f->blk[b].wp && f->blk[b].valid; i++) {
        uint32_t lpn1 = f->p2l[base + i];
        if (lpn1) {
            uint32_t dst = gc_page(f, pu);
            uint64_t t = nh_nand_read(f->nand, base + i, f->now);
            t = nh_nand_program(f->nand, dst, t);
            done = t > done ? t : done;
            invalidate(f, base + i);
            map(f, lpn1 - 1, dst);
            f->blk[dst / f->pages].mtime = f->now;
            (*copies)++;
        }
    }
    done = nh_nand_erase(f->nand, b, done);
    f->blk[b] = (Block){ .state = BLK_FREE, .prev = NONE, .next = NONE };
    heap_push(f, &f->pu[pu], b);
    f->pu[pu].erases++;
    return done;
}

/* Static wear levelling: when a plane's erase-count spread passes the threshold, move the data
 * of its least-worn closed block (cold data) so that block rejoins the free pool. */
static void static_wl(PageFtl *f, uint32_t pu)
{
    uint32_t thr = f->env.cfg->wl_threshold;
    uint32_t lo = UINT32_MAX, hi = 0, cold = NONE;
    Pu *p = &f->pu[pu];

    if (!thr || p->erases < thr) {
        return;
    }
    p->erases = 0;
    for (uint32_t b = pu * f->blocks; b < (pu + 1) * f->blocks; b++) {
        uint32_t w = wear(f, b);
        hi = w > hi ? w : hi;
        if (f->blk[b].state == BLK_CLOSED && w < lo) {
            lo = w;
            cold = b;
        }
    }
    if (cold != NONE && hi - lo > thr) {
        relocate(f, cold, &f->st->ftl_wl_page_copies);
        f->st->ftl_wl_blocks++;
    }
}

/* Reclaim one victim in @pu; false when no closed block has an invalid page. */
static bool gc_step(PageFtl *f, uint32_t pu, bool foreground)
{
    uint32_t b = f->env.cfg->gc == NH_GC_COST_BENEFIT ? pick_cost_benefit(f, pu)
                                                      : pick_greedy(f, pu);
    if (b == NONE) {
        return false;
    }
    relocate(f, b, &f->st->ftl_gc_page_copies);
    f->st->ftl_gc_blocks++;
    if (foreground) {
        f->st->ftl_gc_foreground_blocks++;
    }
    static_wl(f, pu);
    return true;
}

/* A page for a host write in plane @pu, or NONE when the plane cannot take one now. */
static uint32_t host_page(PageFtl *f, uint32_t pu)
{
    Pu *p = &f->pu[pu];

    if (p->host_blk == NONE || f->blk[p->host_blk].wp == f->pages) {
        while (p->nfree <= f->crit && gc_step(f, pu, true)) {
        }
        if (p->nfree <= 1) {
            return NONE;
        }
        if (p->host_blk != NONE) {
            close_block(f, p->host_blk);
        }
        p->host_blk = open_block(f, p);
    }
    return p->host_blk * f->pages + f->blk[p->host_blk].wp++;
}

/* ------------------------------------------------------------------ ops */

static void page_background(void *opaque, uint64_t now, bool defer)
{
    PageFtl *f = opaque;

    if (!f->bg_active || defer) {
        return;
    }
    f->now = now;
    for (uint32_t i = 0; i < f->npu; i++) {
        uint32_t pu = (f->bg_cursor + i) % f->npu;
        Pu *p = &f->pu[pu];
        if (!p->bg) {
            continue;
        }
        if (!gc_step(f, pu, false) || p->nfree >= f->high) {
            p->bg = false;
            f->bg_active--;
        }
        f->bg_cursor = (pu + 1) % f->npu;
        return;
    }
}

static uint64_t page_read(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PageFtl *f = opaque;
    uint64_t done = now;

    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = f->l2p[lpn + i];
        if (ppn1) {
            uint64_t t = nh_nand_read(f->nand, ppn1 - 1, now);
            done = t > done ? t : done;
        }
    }
    return done;
}

static uint64_t page_write(void *opaque, const NhFtlWrite *w, uint64_t now)
{
    PageFtl *f = opaque;
    uint64_t done = now;

    f->now = now;
    for (uint64_t i = 0; i < w->npages; i++) {
        uint64_t lpn = w->lpn + i;
        uint32_t old1 = f->l2p[lpn], ppn = NONE;
        uint64_t start = now, t;
        bool partial = (i == 0 && w->head_partial) || (i == w->npages - 1 && w->tail_partial);

        if (partial && old1) {
            /* the rest of the page must be carried over */
            start = nh_nand_read(f->nand, old1 - 1, now);
            f->st->ftl_rmw_reads++;
        }
        /* the capacity check at creation guarantees some plane accepts the page */
        for (uint32_t tries = 0; tries < f->npu && ppn == NONE; tries++) {
            ppn = host_page(f, f->order[f->rr]);
            f->rr = f->rr + 1 == f->npu ? 0 : f->rr + 1;
        }
        g_assert(ppn != NONE);
        t = nh_nand_program(f->nand, ppn, start);
        done = t > done ? t : done;
        old1 = f->l2p[lpn];     /* GC above may have moved the old copy */
        if (old1) {
            invalidate(f, old1 - 1);
        }
        map(f, lpn, ppn);
        f->blk[ppn / f->pages].mtime = now;
    }
    return done;
}

static uint64_t page_trim(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PageFtl *f = opaque;

    f->now = now;
    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = f->l2p[lpn + i];
        if (ppn1) {
            invalidate(f, ppn1 - 1);
            f->l2p[lpn + i] = 0;
        }
    }
    return now;
}

static uint64_t page_flush(void *opaque, uint64_t now)
{
    (void)opaque;
    return now;     /* no volatile state: every write is on NAND when it completes */
}

static bool page_is_mapped(void *opaque, uint64_t lpn)
{
    PageFtl *f = opaque;
    return f->l2p[lpn] != 0;
}

static void page_destroy(void *opaque)
{
    PageFtl *f = opaque;
    if (!f) {
        return;
    }
    for (uint32_t i = 0; f->pu && i < f->npu; i++) {
        g_free(f->pu[i].heap);
    }
    g_free(f->pu);
    nh_lazy_free(f->l2p, f->env.lpages, sizeof(uint32_t));
    nh_lazy_free(f->p2l, f->nand->g.npages, sizeof(uint32_t));
    nh_lazy_free(f->blk, f->nand->g.nblocks, sizeof(Block));
    g_free(f->bucket);
    g_free(f->order);
    g_free(f->touched);
    g_free(f);
}

static uint32_t pct_blocks(uint32_t spare, uint32_t pct)
{
    return (uint32_t)(((uint64_t)spare * pct + 99) / 100);
}

static void *page_create(const NhFtlEnv *env, GError **errp)
{
    PageFtl *f = g_new0(PageFtl, 1);
    const NhGeometry *g = &env->nand->g;
    uint32_t spare;

    f->env = *env;
    f->nand = env->nand;
    f->st = env->stats;
    f->pages = g->pages;
    f->blocks = g->blocks;
    f->npu = g->npu;
    /* the engine checked that the spare covers these (see nh_engine_new) */
    spare = (uint32_t)((g->nblocks - (env->lpages + g->pages - 1) / g->pages) / g->npu);
    f->crit = MAX(2u, pct_blocks(spare, env->cfg->gc_critical));
    f->low = MAX(f->crit + 1, pct_blocks(spare, env->cfg->gc_low));
    f->high = MAX(f->low + 1, pct_blocks(spare, env->cfg->gc_high));
    if (f->high > f->blocks - 2) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "gc-high: %u%% of the spare blocks is %u of the %u blocks per plane; too many",
                    env->cfg->gc_high, f->high, f->blocks);
        page_destroy(f);
        return NULL;
    }

    /* untouched until used: see the file comment */
    f->l2p = nh_lazy_alloc(env->lpages, sizeof(uint32_t));
    f->p2l = nh_lazy_alloc(g->npages, sizeof(uint32_t));
    f->blk = nh_lazy_alloc(g->nblocks, sizeof(Block));
    f->touched = g_try_malloc0_n((env->lpages >> (CHUNK_SHIFT + 6)) + 1, sizeof(uint64_t));
    if (!f->l2p || !f->p2l || !f->blk || !f->touched) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "not enough host memory for the mapping tables of %" G_GUINT64_FORMAT
                    " logical and %" G_GUINT64_FORMAT " physical pages",
                    env->lpages, g->npages);
        page_destroy(f);
        return NULL;
    }
    f->bucket = g_new(uint32_t, (size_t)f->npu * (f->pages + 1));
    memset(f->bucket, 0xff, sizeof(uint32_t) * (size_t)f->npu * (f->pages + 1));
    f->pu = g_new0(Pu, f->npu);
    f->order = g_new(uint32_t, f->npu);
    for (uint32_t i = 0; i < f->npu; i++) {
        /* channel changes fastest, then way, die, plane */
        uint32_t ch = i % g->channels, r = i / g->channels;
        uint32_t way = r % g->ways, die = (r / g->ways) % g->dies;
        uint32_t plane = r / g->ways / g->dies;
        Pu *p = &f->pu[i];

        f->order[i] = ((ch * g->ways + way) * g->dies + die) * g->planes + plane;
        p->heap = g_new(uint32_t, f->blocks);
        p->host_blk = p->gc_blk = NONE;
        /* equal erase counts: any order is a heap; a restored wear table is re-heaped by load */
        for (uint32_t b = 0; b < f->blocks; b++) {
            heap_push(f, p, i * f->blocks + b);
        }
    }
    return f;
}

/* ------------------------------------------------------------------ persistence */

/*
 * Serialised form (little-endian u32 words): per plane host_blk, gc_blk; then the count and list
 * of (block, state, wp) for every block that is not free; then the count and list of mapping
 * runs (lpn, ppn, len) where consecutive logical pages sit in consecutive physical pages.
 */
static void put32(GByteArray *o, uint32_t v)
{
    uint32_t le = GUINT32_TO_LE(v);
    g_byte_array_append(o, (const guint8 *)&le, 4);
}

static void put64(GByteArray *o, uint64_t v)
{
    uint64_t le = GUINT64_TO_LE(v);
    g_byte_array_append(o, (const guint8 *)&le, 8);
}

static void page_save(void *opaque, GByteArray *o)
{
    PageFtl *f = opaque;
    uint64_t nblocks = (uint64_t)f->npu * f->blocks, count = 0;
    guint pos;

    for (uint32_t i = 0; i < f->npu; i++) {
        put32(o, f->pu[i].host_blk);
        put32(o, f->pu[i].gc_blk);
    }
    pos = o->len;
    put64(o, 0);
    for (uint64_t b = 0; b < nblocks; b++) {
        if (f->blk[b].state != BLK_FREE) {
            put32(o, (uint32_t)b);
            put32(o, f->blk[b].state);
            put32(o, f->blk[b].wp);
            count++;
        }
    }
    count = GUINT64_TO_LE(count);
    memcpy(o->data + pos, &count, 8);

    pos = o->len;
    count = 0;
    put64(o, 0);
    for (uint64_t c = 0; c <= (f->env.lpages >> CHUNK_SHIFT); c++) {
        uint64_t lpn, end;
        if (!(f->touched[c >> 6] & (1ull << (c & 63)))) {
            continue;
        }
        lpn = c << CHUNK_SHIFT;
        end = MIN(f->env.lpages, (c + 1) << CHUNK_SHIFT);
        while (lpn < end) {
            uint32_t ppn1 = f->l2p[lpn];
            uint32_t len = 1;
            if (!ppn1) {
                lpn++;
                continue;
            }
            while (lpn + len < end && f->l2p[lpn + len] == ppn1 + len) {
                len++;
            }
            put32(o, (uint32_t)lpn);
            put32(o, ppn1 - 1);
            put32(o, len);
            count++;
            lpn += len;
        }
    }
    count = GUINT64_TO_LE(count);
    memcpy(o->data + pos, &count, 8);
}

typedef struct Reader {
    const guint8 *p, *end;
} Reader;

static bool get32(Reader *r, uint32_t *v)
{
    uint32_t le;
    if (r->end - r->p < 4) {
        return false;
    }
    memcpy(&le, r->p, 4);
    r->p += 4;
    *v = GUINT32_FROM_LE(le);
    return true;
}

static bool get64(Reader *r, uint64_t *v)
{
    uint64_t le;
    if (r->end - r->p < 8) {
        return false;
    }
    memcpy(&le, r->p, 8);
    r->p += 8;
    *v = GUINT64_FROM_LE(le);
    return true;
}

static bool corrupt(GError **errp, const char *what)
{
    g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "state file: page FTL section is damaged (%s)",
                what);
    return false;
}

static bool page_load(void *opaque, const guint8 *data, size_t len, GError **errp)
{
    PageFtl *f = opaque;
    Reader r = { data, data + len };
    uint64_t nblocks = (uint64_t)f->npu * f->blocks, n;

    for (uint32_t i = 0; i < f->npu; i++) {
        Pu *p = &f->pu[i];
        if (!get32(&r, &p->host_blk) || !get32(&r, &p->gc_blk)) {
            return corrupt(errp, "truncated frontier list");
        }
        if ((p->host_blk != NONE && p->host_blk / f->blocks != i) ||
            (p->gc_blk != NONE && p->gc_blk / f->blocks != i)) {
            return corrupt(errp, "open block outside its plane");
        }
    }
    if (!get64(&r, &n) || n > nblocks) {
        return corrupt(errp, "block count");
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b, state, wp;
        if (!get32(&r, &b) || !get32(&r, &state) || !get32(&r, &wp)) {
            return corrupt(errp, "truncated block list");
        }
        if (b >= nblocks || (state != BLK_OPEN && state != BLK_CLOSED) || wp > f->pages) {
            return corrupt(errp, "block entry out of range");
        }
        f->blk[b].state = (uint8_t)state;
        f->blk[b].wp = wp;
        f->nand->next_page[b] = wp;
    }
    for (uint32_t i = 0; i < f->npu; i++) {
        Pu *p = &f->pu[i];
        if ((p->host_blk != NONE && f->blk[p->host_blk].state != BLK_OPEN) ||
            (p->gc_blk != NONE && f->blk[p->gc_blk].state != BLK_OPEN)) {
            return corrupt(errp, "open block not marked open");
        }
    }
    if (!get64(&r, &n)) {
        return corrupt(errp, "run count");
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t lpn, ppn, cnt;
        if (!get32(&r, &lpn) || !get32(&r, &ppn) || !get32(&r, &cnt)) {
            return corrupt(errp, "truncated mapping");
        }
        if (!cnt || (uint64_t)lpn + cnt > f->env.lpages ||
            (uint64_t)ppn + cnt > f->nand->g.npages) {
            return corrupt(errp, "mapping run out of range");
        }
        for (uint32_t k = 0; k < cnt; k++) {
            uint32_t q = ppn + k;
            if (f->l2p[lpn + k] || f->p2l[q] || q % f->pages >= f->blk[q / f->pages].wp) {
                return corrupt(errp, "mapping to an unwritten or shared page");
            }
            map(f, lpn + k, q);
        }
    }
    if (r.p != r.end) {
        return corrupt(errp, "trailing bytes");
    }
    /* derived structures: free heaps on the restored wear, buckets on the valid counts */
    for (uint32_t i = 0; i < f->npu; i++) {
        f->pu[i].nfree = 0;
    }
    for (uint64_t b = 0; b < nblocks; b++) {
        if (f->blk[b].state == BLK_FREE) {
            heap_push(f, &f->pu[b / f->blocks], (uint32_t)b);
        } else if (f->blk[b].state == BLK_CLOSED) {
            bucket_insert(f, (uint32_t)b);
        }
    }
    for (uint32_t i = 0; i < f->npu; i++) {
        note_free_space(f, &f->pu[i]);
    }
    return true;
}

/* ------------------------------------------------------------------ consistency */

static char *page_check(void *opaque)
{
    PageFtl *f = opaque;
    uint64_t nblocks = (uint64_t)f->npu * f->blocks;
    uint64_t nfree = 0, nopen = 0, nclosed = 0, heaped = 0, in_buckets = 0;
    uint32_t *count = g_new0(uint32_t, nblocks);
    char *err = NULL;

    for (uint64_t lpn = 0; lpn < f->env.lpages && !err; lpn++) {
        uint32_t ppn1 = f->l2p[lpn];
        if (!ppn1) {
            continue;
        }
        if (f->p2l[ppn1 - 1] != lpn + 1) {
            err = g_strdup_printf("lpn %" G_GUINT64_FORMAT " maps to ppn %u, which belongs to %d",
                                  lpn, ppn1 - 1, (int)f->p2l[ppn1 - 1] - 1);
        } else if ((ppn1 - 1) % f->pages >= f->blk[(ppn1 - 1) / f->pages].wp) {
            err = g_strdup_printf("lpn %" G_GUINT64_FORMAT " maps to unprogrammed ppn %u",
                                  lpn, ppn1 - 1);
        }
    }
    for (uint64_t ppn = 0; ppn < f->nand->g.npages && !err; ppn++) {
        uint32_t lpn1 = f->p2l[ppn];
        if (lpn1) {
            if (f->l2p[lpn1 - 1] != ppn + 1) {
                err = g_strdup_printf("ppn %" G_GUINT64_FORMAT " valid for lpn %u, which maps "
                                      "elsewhere", ppn, lpn1 - 1);
            }
            count[ppn / f->pages]++;
        }
    }
    for (uint64_t b = 0; b < nblocks && !err; b++) {
        const Block *k = &f->blk[b];
        if (count[b] != k->valid) {
            err = g_strdup_printf("block %" G_GUINT64_FORMAT ": valid count %u, recount %u",
                                  b, k->valid, count[b]);
        } else if (k->wp != f->nand->next_page[b]) {
            err = g_strdup_printf("block %" G_GUINT64_FORMAT ": write pointer %u, NAND at %u",
                                  b, k->wp, f->nand->next_page[b]);
        } else if (k->state == BLK_FREE) {
            nfree++;
            if (k->wp || k->valid) {
                err = g_strdup_printf("free block %" G_GUINT64_FORMAT " is not empty", b);
            }
        } else if (k->state == BLK_OPEN) {
            uint32_t pu = (uint32_t)(b / f->blocks);
            nopen++;
            if (f->pu[pu].host_blk != b && f->pu[pu].gc_blk != b) {
                err = g_strdup_printf("open block %" G_GUINT64_FORMAT " is no frontier", b);
            }
        } else {
            nclosed++;
        }
    }
    for (uint32_t pu = 0; pu < f->npu && !err; pu++) {
        Pu *p = &f->pu[pu];
        heaped += p->nfree;
        for (uint32_t i = 0; i < p->nfree && !err; i++) {
            if (f->blk[p->heap[i]].state != BLK_FREE || p->heap[i] / f->blocks != pu) {
                err = g_strdup_printf("plane %u: heap holds block %u, which is not free here",
                                      pu, p->heap[i]);
            } else if (i && wear(f, p->heap[(i - 1) / 2]) > wear(f, p->heap[i])) {
                err = g_strdup_printf("plane %u: free heap out of order", pu);
            }
        }
        for (uint32_t v = 0; v <= f->pages && !err; v++) {
            for (uint32_t b = *head_of(f, pu, v); b != NONE && !err; b = f->blk[b].next) {
                in_buckets++;
                if (f->blk[b].state != BLK_CLOSED || f->blk[b].valid != v) {
                    err = g_strdup_printf("block %u in bucket %u has valid %u", b, v,
                                          f->blk[b].valid);
                }
            }
        }
    }
    if (!err && in_buckets != nclosed) {
        err = g_strdup_printf("%" G_GUINT64_FORMAT " closed blocks but %" G_GUINT64_FORMAT
                              " in the victim buckets", nclosed, in_buckets);
    }
    if (!err && heaped != nfree) {
        err = g_strdup_printf("%" G_GUINT64_FORMAT " free blocks but %" G_GUINT64_FORMAT
                              " in the free heaps", nfree, heaped);
    }
    if (!err && nfree + nopen + nclosed != nblocks) {
        err = g_strdup_printf("free %" G_GUINT64_FORMAT " + open %" G_GUINT64_FORMAT
                              " + closed %" G_GUINT64_FORMAT " != %" G_GUINT64_FORMAT " blocks",
                              nfree, nopen, nclosed, nblocks);
    }
    g_free(count);
    return err;
}

const NhFtlOps nh_ftl_page_ops = {
    .name = "page",
    .create = page_create,
    .destroy = page_destroy,
    .read = page_read,
    .write = page_write,
    .trim = page_trim,
    .flush = page_flush,
    .background = page_background,
    .is_mapped = page_is_mapped,
    .save = page_save,
    .load = page_load,
    .check = page_check,
};
