/*
 * bplru.c - block-padding LRU (Kim and Ahn, FAST'08): blocks in LRU order of their last write;
 * the least recently written block is the victim and all its dirty pages go together.
 *  - Page padding: a victim with more than half of its pages dirty is completed with its
 *    missing pages read from flash and written whole, so a hybrid FTL can switch-merge it.  The
 *    threshold of one half is seed 002's BPLRU setting (Table 0.5, "plugging > 0.5").
 *  - LRU compensation: a block written fully in order (offsets 0 .. pages-1, in sequence) is
 *    moved to the LRU end at once: sequential data is unlikely to be written again soon.
 */
#include "buffer.h"

typedef struct Bplru {
    NhBuf  *b;
    GQueue  q;              /* blocks with dirty pages, most recently written at the tail */
} Bplru;

static void *bplru_create(NhBuf *b)
{
    Bplru *s = g_new0(Bplru, 1);
    s->b = b;
    return s;
}

static void bplru_written(void *p, const NhBufWrite *w)
{
    Bplru *s = p;
    NhBufBlock *k = w->blk;

    if (k->region) {
        g_queue_unlink(&s->q, &k->link);
    }
    k->region = 1;
    if (k->seq_next == s->b->pages) {
        g_queue_push_head_link(&s->q, &k->link);
    } else {
        g_queue_push_tail_link(&s->q, &k->link);
    }
}

static void bplru_removed(void *p, NhBufPage *pg)
{
    Bplru *s = p;
    NhBufBlock *k = pg->blk;

    if (!nh_buf_ndirty(k)) {
        g_queue_unlink(&s->q, &k->link);
        k->region = 0;
    }
}

static void bplru_victim(void *p, NhBufVictim *v)
{
    Bplru *s = p;
    v->blk = s->q.head->data;
    v->pad = 2 * nh_buf_ndirty(v->blk) > s->b->pages;
}

const NhBufPolicy nh_buf_bplru = {
    .name = "bplru",
    .create = bplru_create,
    .destroy = g_free,
    .written = bplru_written,
    .removed = bplru_removed,
    .victim = bplru_victim,
};
