/*
 * fab.c - flash-aware buffer (Jo et al., IEEE TCE 2006): the block with the most dirty pages is
 * the victim, the least recently written one among equals; all its dirty pages go together, with
 * no padding (seed 002, Table 0.5).
 */
#include "buffer.h"

typedef struct Fab {
    NhBufBuckets bk;        /* blocks by dirty pages */
} Fab;

static void *fab_create(NhBuf *b)
{
    Fab *s = g_new0(Fab, 1);
    nh_bk_init(&s->bk, b->pages + 1);
    return s;
}

static void fab_destroy(void *p)
{
    Fab *s = p;
    nh_bk_clear(&s->bk);
    g_free(s);
}

static void fab_written(void *p, const NhBufWrite *w)
{
    Fab *s = p;
    NhBufBlock *k = w->blk;

    if (k->region) {
        nh_bk_del(&s->bk, &k->link, k->aux);
    }
    k->region = 1;
    k->aux = nh_buf_ndirty(k);
    nh_bk_put(&s->bk, &k->link, k->aux);
}

static void fab_removed(void *p, NhBufPage *pg)
{
    Fab *s = p;
    NhBufBlock *k = pg->blk;

    nh_bk_del(&s->bk, &k->link, k->aux);
    k->aux = nh_buf_ndirty(k);
    if (k->aux) {
        nh_bk_put(&s->bk, &k->link, k->aux);
    } else {
        k->region = 0;
    }
}

static void fab_victim(void *p, NhBufVictim *v)
{
    Fab *s = p;
    v->blk = nh_bk_largest(&s->bk)->data;
}

const NhBufPolicy nh_buf_fab = {
    .name = "fab",
    .create = fab_create,
    .destroy = fab_destroy,
    .written = fab_written,
    .removed = fab_removed,
    .victim = fab_victim,
};
