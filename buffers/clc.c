/*
 * clc.c - cold and largest cluster (Kang et al., IEEE TC 2009): clusters are blocks.  A written
 * block goes to the head of an upper, size-independent LRU list that holds at most clc-upper
 * percent of the buffer's pages (hot clusters); what falls off its end moves to a lower list
 * ordered by size (cold clusters).  The victim is the largest lower cluster (the least recently
 * written among equals), or the upper list's LRU cluster when the lower list is empty.  No
 * padding (seed 002, Table 0.5: upper:lower = 1:9).
 */
#include "buffer.h"

enum { NONE, UPPER, LOWER };

static const NhConfigKey clc_keys[] = {
    { "clc-upper", NH_KEY_UINT, 0, 0, "10", 1, 99, NULL, false,
      "clc: percent of the buffer for the upper (LRU) list; the rest is size ordered" },
    { NULL },
};

typedef struct Clc {
    NhBuf       *b;
    GQueue       upper;     /* most recently written at the tail */
    uint64_t     upper_pages, upper_cap;
    NhBufBuckets lower;     /* by dirty pages */
} Clc;

static void *clc_create(NhBuf *b)
{
    Clc *s = g_new0(Clc, 1);
    s->b = b;
    s->upper_cap = b->cap * b->env.keys[0] / 100;    /* clc-upper */
    nh_bk_init(&s->lower, b->pages + 1);
    return s;
}

static void clc_destroy(void *p)
{
    Clc *s = p;
    nh_bk_clear(&s->lower);
    g_free(s);
}

static void clc_written(void *p, const NhBufWrite *w)
{
    Clc *s = p;
    NhBufBlock *k = w->blk;

    if (k->region == UPPER) {
        g_queue_unlink(&s->upper, &k->link);
        s->upper_pages += w->n - w->hits;
    } else {
        if (k->region == LOWER) {
            nh_bk_del(&s->lower, &k->link, k->aux);
        }
        s->upper_pages += nh_buf_ndirty(k);
    }
    k->region = UPPER;
    g_queue_push_tail_link(&s->upper, &k->link);
    /* the hot list keeps its share; its coldest clusters go down (the newest always stays) */
    while (s->upper_pages > s->upper_cap && s->upper.length > 1) {
        NhBufBlock *c = s->upper.head->data;
        g_queue_unlink(&s->upper, &c->link);
        s->upper_pages -= nh_buf_ndirty(c);
        c->region = LOWER;
        c->aux = nh_buf_ndirty(c);
        nh_bk_put(&s->lower, &c->link, c->aux);
    }
}

static void clc_removed(void *p, NhBufPage *pg)
{
    Clc *s = p;
    NhBufBlock *k = pg->blk;

    if (k->region == UPPER) {
        s->upper_pages--;
        if (!nh_buf_ndirty(k)) {
            g_queue_unlink(&s->upper, &k->link);
            k->region = NONE;
        }
    } else {
        nh_bk_del(&s->lower, &k->link, k->aux);
        k->aux = nh_buf_ndirty(k);
        if (k->aux) {
            nh_bk_put(&s->lower, &k->link, k->aux);
        } else {
            k->region = NONE;
        }
    }
}

static void clc_victim(void *p, NhBufVictim *v)
{
    Clc *s = p;
    GList *l = nh_bk_largest(&s->lower);
    v->blk = l ? l->data : s->upper.head->data;
}

const NhBufPolicy nh_buf_clc = {
    .name = "clc",
    .keys = clc_keys,
    .create = clc_create,
    .destroy = clc_destroy,
    .written = clc_written,
    .removed = clc_removed,
    .victim = clc_victim,
};
