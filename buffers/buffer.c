/*
 * buffer.c - the registry of write-buffer policies and the machinery they share: the page and
 * block indexes, insertion and hits, making room, destaging to the sink, flush, trim, the size
 * buckets, statistics and the consistency check (contract in buffer.h).
 */
#include "buffer.h"

#include <string.h>

/* ------------------------------------------------------------------ registry */

#define NH_BUF_POLICY(name) &nh_buf_##name,
#define NH_BUF_NAME(name) #name,

/* "none" has no policy: writes go straight to the FTL */
const char *const nh_buf_names[] = { "none", NH_BUF_REGISTRY(NH_BUF_NAME) NULL };
static const NhBufPolicy *const registry[] = { NULL, NH_BUF_REGISTRY(NH_BUF_POLICY) };

static const NhBufPolicy *find_policy(const char *name, bool *found)
{
    for (size_t i = 0; i < G_N_ELEMENTS(registry); i++) {
        if (strcmp(nh_buf_names[i], name) == 0) {
            *found = true;
            return registry[i];
        }
    }
    *found = false;
    return NULL;
}

const NhBufPolicy *nh_buf_find(const char *name)
{
    bool found;
    return find_policy(name, &found);
}

/* Seed 000's SSD configuration: DRAM 15 ns; STT-MRAM 32 ns read, 40 ns write. */
static void media_times(const NhConfig *cfg, uint64_t *rd, uint64_t *wr)
{
    switch (cfg->buffer_media) {
    case NH_BUF_DRAM:
        *rd = *wr = 15;
        break;
    case NH_BUF_STTMRAM:
        *rd = 32;
        *wr = 40;
        break;
    default:
        *rd = cfg->t_buf_read;
        *wr = cfg->t_buf_write;
        break;
    }
}

bool nh_buf_config_check(const NhConfig *cfg, GError **errp)
{
    bool found;
    uint64_t block = (uint64_t)cfg->pages * cfg->page_size;

    find_policy(cfg->buffer, &found);
    if (!found) {
        char *list = g_strjoinv(", ", (char **)nh_buf_names);
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "buffer: unknown policy '%s' (valid: %s)",
                    cfg->buffer, list);
        g_free(list);
        return false;
    }
    if (nh_buf_find(cfg->buffer) && cfg->buffer_size < block) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "buffer-size: must hold at least one flash block (pages * page-size = %"
                    G_GUINT64_FORMAT " bytes), got %" G_GUINT64_FORMAT, block, cfg->buffer_size);
        return false;
    }
    if (cfg->buffer_media == NH_BUF_CUSTOM && (!cfg->t_buf_read || !cfg->t_buf_write)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "buffer-media: custom needs both t-buf-read and t-buf-write");
        return false;
    }
    if (cfg->buffer_media != NH_BUF_CUSTOM && (cfg->t_buf_read || cfg->t_buf_write)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "%s: only with buffer-media=custom (dram and sttmram have fixed latencies)",
                    cfg->t_buf_read ? "t-buf-read" : "t-buf-write");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ size buckets */

void nh_bk_init(NhBufBuckets *bk, uint32_t n)
{
    bk->b = g_new0(NhBufBucket, n);
    bk->n = n;
    bk->top = 0;
    g_queue_init(&bk->nonempty);
    for (uint32_t i = 0; i < n; i++) {
        bk->b[i].ne.data = &bk->b[i];
    }
}

void nh_bk_clear(NhBufBuckets *bk)
{
    g_free(bk->b);
    bk->b = NULL;
}

void nh_bk_put(NhBufBuckets *bk, GList *link, uint32_t size)
{
    NhBufBucket *u = &bk->b[MIN(size, bk->n - 1)];
    if (!u->q.length) {
        g_queue_push_tail_link(&bk->nonempty, &u->ne);
    }
    g_queue_push_tail_link(&u->q, link);
    bk->top = MAX(bk->top, MIN(size, bk->n - 1));
}

void nh_bk_del(NhBufBuckets *bk, GList *link, uint32_t size)
{
    NhBufBucket *u = &bk->b[MIN(size, bk->n - 1)];
    g_queue_unlink(&u->q, link);
    if (!u->q.length) {
        g_queue_unlink(&bk->nonempty, &u->ne);
    }
}

GList *nh_bk_largest(NhBufBuckets *bk)
{
    if (!bk->nonempty.length) {
        return NULL;
    }
    while (!bk->b[bk->top].q.length) {
        bk->top--;      /* amortised: top only rises by insertions */
    }
    return bk->b[bk->top].q.head;
}

/* ------------------------------------------------------------------ indexes */

NhBufBlock *nh_buf_block_get(NhBuf *b, uint64_t lbn)
{
    NhBufBlock *k = g_hash_table_lookup(b->blocks_idx, &lbn);
    if (!k) {
        k = g_new0(NhBufBlock, 1);
        k->lbn = lbn;
        k->link.data = k;
        k->seq_next = 0;
        g_hash_table_insert(b->blocks_idx, &k->lbn, k);
    }
    return k;
}

void nh_buf_block_put(NhBuf *b, NhBufBlock *k)
{
    if (!k->dirty.length && !k->clean.length) {
        g_assert(!k->region);
        g_hash_table_remove(b->blocks_idx, &k->lbn);
        g_free(k);
    }
}

NhBufPage *nh_buf_page_new(NhBuf *b, NhBufBlock *k, uint64_t lpn, bool dirty)
{
    NhBufPage *pg = g_new0(NhBufPage, 1);
    pg->lpn = lpn;
    pg->blk = k;
    pg->dirty = dirty;
    pg->mask = dirty ? 0 : UINT32_MAX;
    pg->lru.data = pg->link.data = pg;
    g_queue_push_tail_link(dirty ? &k->dirty : &k->clean, &pg->link);
    g_hash_table_insert(b->pages_idx, &pg->lpn, pg);
    return pg;
}

/* A dirty page leaves the buffer (destaged or trimmed). */
static void remove_dirty(NhBuf *b, NhBufPage *pg)
{
    NhBufBlock *k = pg->blk;

    g_queue_unlink(&k->dirty, &pg->link);
    k->sectors -= (uint32_t)__builtin_popcount(pg->mask);
    b->used--;
    b->pol->removed(b->p, pg);
    g_hash_table_remove(b->pages_idx, &pg->lpn);
    g_free(pg);
    nh_buf_block_put(b, k);
}

static uint32_t full_mask(const NhBuf *b)
{
    return b->spp == 32 ? UINT32_MAX : (1u << b->spp) - 1;
}

/* The sectors of page @lpn that bytes [offset, offset+length) cover (rounded out to sectors). */
static uint32_t sector_mask(const NhBuf *b, uint64_t lpn, uint64_t offset, uint64_t length)
{
    uint64_t p0 = lpn * b->page_size, p1 = p0 + b->page_size;
    uint64_t s = MAX(offset, p0), e = MIN(offset + length, p1);
    uint32_t first = (uint32_t)((s - p0) / 512), last = (uint32_t)((e - p0 + 511) / 512);
    uint32_t m = full_mask(b);

    if (last - first < b->spp) {
        m = ((1u << (last - first)) - 1) << first;
    }
    return m;
}

static void account_memory(NhBuf *b)
{
    uint64_t bytes = (uint64_t)g_hash_table_size(b->pages_idx) * (sizeof(NhBufPage) + 16) +
                     (uint64_t)g_hash_table_size(b->blocks_idx) * (sizeof(NhBufBlock) + 16);
    if (b->pol && b->pol->metadata) {
        bytes += b->pol->metadata(b->p);
    }
    if (bytes > b->st->buf_metadata_bytes) {
        b->st->buf_metadata_bytes = bytes;
    }
}

/* ------------------------------------------------------------------ destage */

enum { K_NONE, K_DIRTY, K_PAD, K_MERGE };

static inline uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Write @v's pages to the sink in ascending order, as runs of consecutive pages; a partly dirty
 * page ends a run (the FTL reads the rest of it), padding pages are read first.  Returns when
 * the last program ends. */
static uint64_t destage(NhBuf *b, const NhBufVictim *v, uint64_t now)
{
    NhBufBlock *k = v->blk;
    uint64_t base = k->lbn * b->pages, start = now, done = now;
    uint32_t n = 0, total = 0, full = full_mask(b);
    NhBufPage **pg = b->scratch;

    memset(b->kind, K_NONE, b->pages);
    if (v->page) {
        pg[nh_buf_off(b, v->page->lpn)] = v->page;
        b->kind[nh_buf_off(b, v->page->lpn)] = K_DIRTY;
    } else {
        for (GList *l = k->dirty.head; l; l = l->next) {
            NhBufPage *p = l->data;
            pg[nh_buf_off(b, p->lpn)] = p;
            b->kind[nh_buf_off(b, p->lpn)] = K_DIRTY;
        }
    }
    if (v->merge) {
        for (GList *l = k->clean.head; l; l = l->next) {
            NhBufPage *p = l->data;
            if (b->kind[nh_buf_off(b, p->lpn)] == K_NONE) {
                b->kind[nh_buf_off(b, p->lpn)] = K_MERGE;
                b->st->buf_merge_on_flush_pages++;
            }
        }
    }
    if (v->pad) {
        for (uint32_t o = 0; o < b->pages && base + o < b->env.lpages; o++) {
            if (b->kind[o] == K_NONE && b->env.sink.is_mapped(b->env.sink.ctx, base + o)) {
                b->kind[o] = K_PAD;
                b->st->buf_padding_reads++;
                start = later(start, b->env.sink.read(b->env.sink.ctx, base + o, 1, now));
            }
        }
    }
    for (uint32_t o = 0; o <= b->pages; o++) {
        bool partial = o < b->pages && b->kind[o] == K_DIRTY && pg[o]->mask != full;
        if (o < b->pages && b->kind[o] != K_NONE) {
            n++;
            total++;
            if (b->env.sink.destaged) {
                b->env.sink.destaged(b->env.sink.ctx, base + o, b->kind[o] == K_DIRTY);
            }
        }
        /* a run ends at a gap, at the end, or at a partial page (which it includes) */
        if (n && (o == b->pages || b->kind[o] == K_NONE || partial)) {
            uint32_t last = (o < b->pages && b->kind[o] != K_NONE) ? o : o - 1;
            uint32_t first = last + 1 - n;
            NhFtlWrite w = {
                .lpn = base + first,
                .npages = n,
                .head_partial = b->kind[first] == K_DIRTY && pg[first]->mask != full,
                .tail_partial = b->kind[last] == K_DIRTY && pg[last]->mask != full,
            };
            done = later(done, b->env.sink.write(b->env.sink.ctx, &w, start));
            n = 0;
        }
    }
    b->st->buf_destage_pages += total;
    nh_hist_add(&b->st->buf_destage_len, total);
    for (uint32_t o = 0; o < b->pages; o++) {
        if (b->kind[o] == K_DIRTY) {
            remove_dirty(b, pg[o]);
        }
    }
    return done;
}

/* ------------------------------------------------------------------ engine side */

NhBuf *nh_buf_new(const NhBufEnv *env)
{
    const NhConfig *cfg = env->cfg;
    NhBuf *b = g_new0(NhBuf, 1);
    bool found;

    b->env = *env;
    b->st = env->stats;
    b->pol = find_policy(cfg->buffer, &found);
    /* a buffer page is a mapping unit */
    b->pages = nh_config_unit_pages(cfg);
    b->page_size = nh_config_unit(cfg);
    b->spp = b->page_size / 512;
    b->cap = b->pol ? cfg->buffer_size / b->page_size : 0;
    b->cache_cap = cfg->cache_size / b->page_size;
    media_times(cfg, &b->t_buf_read, &b->t_buf_write);
    b->is_volatile = b->pol && (cfg->buffer_volatile == NH_BUF_VOLATILE_ON ||
                                (cfg->buffer_volatile == NH_BUF_VOLATILE_AUTO &&
                                 cfg->buffer_media != NH_BUF_STTMRAM));
    g_queue_init(&b->cache_lru);
    b->pages_idx = g_hash_table_new(g_int64_hash, g_int64_equal);
    b->blocks_idx = g_hash_table_new(g_int64_hash, g_int64_equal);
    b->kind = g_new0(uint8_t, b->pages);
    b->scratch = g_new0(NhBufPage *, b->pages);
    if (b->pol) {
        b->p = b->pol->create(b);
    }
    nh_buf_stats_restore(b);
    return b;
}

void nh_buf_free(NhBuf *b)
{
    GHashTableIter it;
    gpointer key, val;

    if (!b) {
        return;
    }
    if (b->pol) {
        b->pol->destroy(b->p);
    }
    g_hash_table_iter_init(&it, b->pages_idx);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        g_free(val);
    }
    g_hash_table_iter_init(&it, b->blocks_idx);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        g_free(val);
    }
    g_hash_table_destroy(b->pages_idx);
    g_hash_table_destroy(b->blocks_idx);
    g_free(b->kind);
    g_free(b->scratch);
    g_free(b);
}

bool nh_buf_is_volatile(const NhBuf *b)
{
    return b->is_volatile;
}

void nh_buf_stats_restore(NhBuf *b)
{
    account_memory(b);
}

bool nh_buf_holds_dirty(const NhBuf *b, uint64_t lpn)
{
    NhBufPage *pg = g_hash_table_lookup(b->pages_idx, &lpn);
    return pg && pg->dirty;
}

static uint32_t count_new(NhBuf *b, uint64_t lpn, uint32_t n)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t l = lpn + i;
        NhBufPage *pg = g_hash_table_lookup(b->pages_idx, &l);
        c += !(pg && pg->dirty);
    }
    return c;
}

uint64_t nh_buf_write(NhBuf *b, const NhFtlWrite *w, uint64_t offset, uint64_t length,
                      uint64_t now)
{
    uint64_t done, lpn = w->lpn, end = w->lpn + w->npages;
    uint32_t full = full_mask(b);

    /* a clean copy in the read cache is stale from now on */
    for (uint64_t l = lpn; l < end && b->cached; l++) {
        NhBufPage *pg = g_hash_table_lookup(b->pages_idx, &l);
        if (pg && !pg->dirty) {
            nh_cache_drop(b, pg);
        }
    }
    if (!b->pol) {
        return b->env.sink.write(b->env.sink.ctx, w, now);
    }
    b->wseq++;
    done = now + w->npages * b->t_buf_write;
    while (lpn < end) {
        uint64_t lbn = lpn / b->pages;
        uint32_t n = (uint32_t)MIN(end - lpn, (lbn + 1) * b->pages - lpn), hits = 0;
        NhBufBlock *k;
        NhBufPage **pg = b->scratch;

        /* make room for this block's new pages (a victim may be this very block) */
        while (b->used + count_new(b, lpn, n) > b->cap) {
            NhBufVictim v = { 0 };
            b->pol->victim(b->p, &v);
            b->st->buf_evictions++;
            done = later(done, destage(b, &v, now));
        }
        k = nh_buf_block_get(b, lbn);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t l = lpn + i;
            uint32_t m = (l == w->lpn && w->head_partial) || (l == end - 1 && w->tail_partial)
                         ? sector_mask(b, l, offset, length) : full;
            NhBufPage *p = g_hash_table_lookup(b->pages_idx, &l);
            if (p) {
                hits++;
                b->st->buf_write_hits++;
                k->sectors -= (uint32_t)__builtin_popcount(p->mask);
            } else {
                p = nh_buf_page_new(b, k, l, true);
                b->used++;
            }
            p->mask |= m;
            k->sectors += (uint32_t)__builtin_popcount(p->mask);
            pg[i] = p;
        }
        /* in order from offset 0 so far (bplru's compensation, cbm's runs) */
        k->seq_next = k->seq_next == nh_buf_off(b, lpn) ? k->seq_next + n : NH_BUF_NOSEQ;
        k->stamp = b->wseq;
        {
            uint64_t bstart = lbn * b->pages * b->spp;
            uint64_t s0 = MAX(offset / 512, bstart), s1 = MIN((offset + length + 511) / 512,
                                                               bstart + b->pages * b->spp);
            NhBufWrite bw = { k, pg, n, hits, (uint32_t)(s0 - bstart), (uint32_t)(s1 - bstart) };
            b->pol->written(b->p, &bw);
        }
        if (w->fua && b->is_volatile) {
            /* FUA: this write is durable when it completes */
            NhBufVictim v = { .blk = k };
            done = later(done, destage(b, &v, now));
        }
        lpn += n;
    }
    account_memory(b);
    return done;
}

uint64_t nh_buf_read(NhBuf *b, uint64_t lpn, uint64_t npages, uint64_t offset, uint64_t length,
                     uint64_t now)
{
    uint64_t done = now, media = now, run = 0;

    for (uint64_t i = 0; i <= npages; i++) {
        uint64_t l = lpn + i;
        NhBufPage *pg = i < npages ? g_hash_table_lookup(b->pages_idx, &l) : NULL;
        bool miss = false;

        if (i < npages) {
            uint32_t m = sector_mask(b, l, offset, length);
            if (pg && pg->dirty && !(m & ~pg->mask)) {
                b->st->buf_read_hits++;
                media += b->t_buf_read;
            } else if (pg && !pg->dirty) {
                b->st->cache_read_hits++;
                media += NH_CACHE_T_READ;
                nh_cache_touch(b, pg);
            } else {
                b->st->cache_read_misses++;
                miss = true;
                run++;
            }
        }
        if (!miss && run) {
            /* a run of pages in neither: from flash, then into the read cache */
            uint64_t first = l - run;
            done = later(done, b->env.sink.read(b->env.sink.ctx, first, run, now));
            for (uint64_t j = first; j < l && b->cache_cap; j++) {
                if (!nh_buf_holds_dirty(b, j) && b->env.sink.is_mapped(b->env.sink.ctx, j)) {
                    nh_cache_insert(b, j);
                }
            }
            run = 0;
        }
    }
    account_memory(b);
    return later(done, media);
}

static void trim_one(NhBuf *b, NhBufPage *pg)
{
    if (pg->dirty) {
        remove_dirty(b, pg);
    } else {
        nh_cache_drop(b, pg);
    }
}

void nh_buf_trim(NhBuf *b, uint64_t lpn, uint64_t npages)
{
    if (npages > g_hash_table_size(b->pages_idx)) {
        /* a large deallocate: walk what is buffered instead of the range */
        GPtrArray *hit = g_ptr_array_new();
        GHashTableIter it;
        gpointer key, val;
        g_hash_table_iter_init(&it, b->pages_idx);
        while (g_hash_table_iter_next(&it, &key, &val)) {
            NhBufPage *pg = val;
            if (pg->lpn >= lpn && pg->lpn < lpn + npages) {
                g_ptr_array_add(hit, pg);
            }
        }
        for (guint i = 0; i < hit->len; i++) {
            trim_one(b, hit->pdata[i]);
        }
        g_ptr_array_free(hit, TRUE);
        return;
    }
    for (uint64_t l = lpn; l < lpn + npages; l++) {
        NhBufPage *pg = g_hash_table_lookup(b->pages_idx, &l);
        if (pg) {
            trim_one(b, pg);
        }
    }
}

typedef struct LostPage {
    uint64_t lpn;
    uint32_t mask;
} LostPage;

void nh_buf_power_loss(NhBuf *b, NhBufLostFn lost, void *opaque)
{
    g_autoptr(GArray) gone = g_array_new(FALSE, FALSE, sizeof(LostPage));
    GHashTableIter it;
    gpointer key, val;

    if (!b->is_volatile) {
        return;     /* capacitor-backed: the buffer is saved, nothing is lost */
    }
    g_hash_table_iter_init(&it, b->pages_idx);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        NhBufPage *pg = val;
        if (pg->dirty) {
            LostPage l = { pg->lpn, pg->mask };
            g_array_append_val(gone, l);
        }
    }
    /* Every lost page leaves the buffer before anyone hears of it: a front end that writes the
     * old data back from @lost may run its event loop, and requests it then serves change the
     * buffer (a page they evicted would be freed under this loop: seen as lost durable data in
     * the power-cut campaign). */
    for (guint i = 0; i < gone->len; i++) {
        trim_one(b, g_hash_table_lookup(b->pages_idx, &g_array_index(gone, LostPage, i).lpn));
    }
    for (guint i = 0; i < gone->len; i++) {
        LostPage *l = &g_array_index(gone, LostPage, i);
        lost(opaque, l->lpn, l->mask);
    }
}

uint64_t nh_buf_flush(NhBuf *b, uint64_t now)
{
    return b->is_volatile ? nh_buf_destage_all(b, now) : now;
}

uint64_t nh_buf_destage_all(NhBuf *b, uint64_t now)
{
    uint64_t done = now;

    /* whole blocks, in the policy's victim order (with its padding and merging) */
    while (b->used) {
        NhBufVictim v = { 0 };
        b->pol->victim(b->p, &v);
        v.page = NULL;
        done = later(done, destage(b, &v, now));
    }
    return done;
}

char *nh_buf_check(const NhBuf *b)
{
    GHashTableIter it;
    gpointer key, val;
    uint64_t dirty = 0, clean = 0;

    if (b->used > b->cap) {
        return g_strdup_printf("%" G_GUINT64_FORMAT " dirty pages in a buffer of %"
                               G_GUINT64_FORMAT, b->used, b->cap);
    }
    if (b->cached > b->cache_cap || b->cached != b->cache_lru.length) {
        return g_strdup_printf("read cache holds %" G_GUINT64_FORMAT " pages (list %u) of %"
                               G_GUINT64_FORMAT, b->cached, b->cache_lru.length, b->cache_cap);
    }
    g_hash_table_iter_init(&it, b->blocks_idx);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        NhBufBlock *k = val;
        uint32_t sectors = 0;
        for (GList *l = k->dirty.head; l; l = l->next) {
            NhBufPage *pg = l->data;
            if (!pg->dirty || pg->blk != k || pg->lpn / b->pages != k->lbn) {
                return g_strdup_printf("page %" G_GUINT64_FORMAT " misfiled in block %"
                                       G_GUINT64_FORMAT, pg->lpn, k->lbn);
            }
            sectors += (uint32_t)__builtin_popcount(pg->mask);
        }
        if (sectors != k->sectors) {
            return g_strdup_printf("block %" G_GUINT64_FORMAT " counts %u dirty sectors, holds %u",
                                   k->lbn, k->sectors, sectors);
        }
        if (!k->dirty.length && !k->clean.length) {
            return g_strdup_printf("empty block %" G_GUINT64_FORMAT " indexed", k->lbn);
        }
        dirty += k->dirty.length;
        clean += k->clean.length;
    }
    if (dirty != b->used || clean != b->cached ||
        dirty + clean != g_hash_table_size(b->pages_idx)) {
        return g_strdup_printf("indexes disagree: %" G_GUINT64_FORMAT " dirty, %" G_GUINT64_FORMAT
                               " clean by block, %u pages indexed", dirty, clean,
                               g_hash_table_size(b->pages_idx));
    }
    return NULL;
}
