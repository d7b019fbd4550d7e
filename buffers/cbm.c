/*
 * cbm.c - cooperative buffer management (Wei, Chen and Yang, MSST 2014; seed 000).
 *  - Page Region: dirty pages of randomly written blocks, in page LRU order.
 *  - Block Region: blocks whose buffered pages reached the migration threshold, ordered as the
 *    Block Popularity List: a block's popularity rises by one per write request that touches
 *    it (a run of sequential pages in one request is one access), least popular first, ties
 *    broken by the most dirty pages (then least recently written).
 *  - Replacement: the Block Region first (its least popular block); when it is empty, the block
 *    of the Page Region's least recently written page, with all its pages.
 *  - Merge-on-flush: a victim's dirty pages are written together with the clean pages of the same
 *    block that the read cache holds, in one ascending run where they are adjacent.  The block
 *    index (buffer.h) is shared with the read cache, so they are found on the block entry.
 *  - Migration: when a block's pages in the Page Region reach the threshold T, they all move to
 *    the Block Region (and its new pages go there from then on).  T adapts (seed 000 says only
 *    "dynamically adjusted according to workloads"; our rule, docs/buffers.md): a write hit on a
 *    Block Region page means hot data was classified as sequential, so T rises by one; a Page
 *    Region victim destaged with at least T/2 pages (at least 2) means a block with spatial
 *    locality stayed too long among the random pages, so T falls by one.  T starts at pages/8
 *    and stays within [2, pages/2].
 */
#include "buffer.h"

enum { NONE, PAGE, BLOCK };

typedef struct Cbm {
    NhBuf     *b;
    GQueue     lru;         /* Page Region, most recently written at the tail */
    GSequence *bpl;         /* Block Region, the next victim first */
    uint32_t   t, tmin, tmax;
} Cbm;

static gint bpl_cmp(gconstpointer a, gconstpointer c, gpointer data)
{
    const NhBufBlock *x = a, *y = c;
    (void)data;
    if (x->weight != y->weight) {
        return x->weight < y->weight ? -1 : 1;
    }
    if (x->dirty.length != y->dirty.length) {
        return x->dirty.length > y->dirty.length ? -1 : 1;
    }
    if (x->stamp != y->stamp) {
        return x->stamp < y->stamp ? -1 : 1;
    }
    return x->lbn < y->lbn ? -1 : x->lbn > y->lbn;
}

static void *cbm_create(NhBuf *b)
{
    Cbm *s = g_new0(Cbm, 1);
    s->b = b;
    s->bpl = g_sequence_new(NULL);
    s->tmin = 2;
    s->tmax = MAX(2, b->pages / 2);
    s->t = CLAMP(b->pages / 8, s->tmin, s->tmax);
    return s;
}

static void cbm_destroy(void *p)
{
    Cbm *s = p;
    g_sequence_free(s->bpl);
    g_free(s);
}

static void cbm_written(void *p, const NhBufWrite *w)
{
    Cbm *s = p;
    NhBufBlock *k = w->blk;

    k->weight++;
    if (k->region == BLOCK) {
        for (uint32_t i = 0; i < w->n; i++) {
            w->pg[i]->region = BLOCK;
        }
        if (w->hits) {
            s->t = MIN(s->t + 1, s->tmax);
        }
        g_sequence_sort_changed(k->iter, bpl_cmp, NULL);
        return;
    }
    for (uint32_t i = 0; i < w->n; i++) {
        NhBufPage *pg = w->pg[i];
        if (pg->region == PAGE) {
            g_queue_unlink(&s->lru, &pg->lru);
        } else {
            k->aux++;
        }
        pg->region = PAGE;
        g_queue_push_tail_link(&s->lru, &pg->lru);
    }
    k->region = PAGE;
    if (k->aux >= s->t) {
        for (GList *l = k->dirty.head; l; l = l->next) {
            NhBufPage *pg = l->data;
            g_queue_unlink(&s->lru, &pg->lru);
            pg->region = BLOCK;
        }
        k->aux = 0;
        k->region = BLOCK;
        k->iter = g_sequence_insert_sorted(s->bpl, k, bpl_cmp, NULL);
    }
}

static void cbm_removed(void *p, NhBufPage *pg)
{
    Cbm *s = p;
    NhBufBlock *k = pg->blk;

    if (pg->region == PAGE) {
        g_queue_unlink(&s->lru, &pg->lru);
        k->aux--;
    } else if (nh_buf_ndirty(k)) {
        g_sequence_sort_changed(k->iter, bpl_cmp, NULL);
    } else {
        g_sequence_remove(k->iter);
        k->iter = NULL;
    }
    if (!nh_buf_ndirty(k)) {
        k->region = NONE;
        k->weight = 0;
    }
}

static void cbm_victim(void *p, NhBufVictim *v)
{
    Cbm *s = p;

    v->merge = true;
    if (g_sequence_get_length(s->bpl)) {
        v->blk = g_sequence_get(g_sequence_get_begin_iter(s->bpl));
        return;
    }
    v->blk = ((NhBufPage *)s->lru.head->data)->blk;
    if (nh_buf_ndirty(v->blk) >= MAX(2, s->t / 2)) {
        s->t = MAX(s->t - 1, s->tmin);
    }
}

static size_t cbm_metadata(void *p)
{
    Cbm *s = p;
    return (size_t)g_sequence_get_length(s->bpl) * 40;
}

const NhBufPolicy nh_buf_cbm = {
    .name = "cbm",
    .create = cbm_create,
    .destroy = cbm_destroy,
    .written = cbm_written,
    .removed = cbm_removed,
    .victim = cbm_victim,
    .metadata = cbm_metadata,
};
