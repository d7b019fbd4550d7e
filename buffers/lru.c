/*
 * lru.c - page LRU: the least recently written dirty page is the victim, alone.  The baseline
 * every flash-aware policy is measured against: it absorbs rewrites but destages single pages.
 */
#include "buffer.h"

typedef struct Lru {
    GQueue q;               /* dirty pages, most recently written at the tail */
} Lru;

static void *lru_create(NhBuf *b)
{
    (void)b;
    return g_new0(Lru, 1);
}

static void lru_written(void *p, const NhBufWrite *w)
{
    Lru *s = p;
    NhBufPage *const *pg = w->pg;
    for (uint32_t i = 0; i < w->n; i++) {
        if (pg[i]->region) {
            g_queue_unlink(&s->q, &pg[i]->lru);
        }
        pg[i]->region = 1;
        g_queue_push_tail_link(&s->q, &pg[i]->lru);
    }
}

static void lru_removed(void *p, NhBufPage *pg)
{
    Lru *s = p;
    g_queue_unlink(&s->q, &pg->lru);
}

static void lru_victim(void *p, NhBufVictim *v)
{
    Lru *s = p;
    v->page = s->q.head->data;
    v->blk = v->page->blk;
}

const NhBufPolicy nh_buf_lru = {
    .name = "lru",
    .create = lru_create,
    .destroy = g_free,
    .written = lru_written,
    .removed = lru_removed,
    .victim = lru_victim,
};
