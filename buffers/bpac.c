/*
 * bpac.c - block-page adaptive cache (Wu, Eckart and He, MSST 2010): a page list for pages with
 * temporal locality and a block list for clusters with spatial locality, with an adaptive
 * partition between them.  The paper's abstract fixes only that much; the rules here are ours
 * (docs/buffers.md says why):
 *  - A page written for the first time joins its block's cluster on the block list (LRU of
 *    blocks); a page written again while buffered has shown temporal locality and moves to the
 *    page list (LRU of pages).
 *  - The partition adapts like ARC: the page list has a target size.  Ghost lists remember the
 *    pages and blocks evicted lately (as many entries as the buffer has pages); a new write to a
 *    ghost page means the page list was too small (target + 1), to a ghost block that the block
 *    list was (target - 1).
 *  - The victim comes from the page list when it is above its target (its LRU page), else from
 *    the block list (its LRU cluster); either way the whole block's dirty pages go together, so
 *    no destage is a lone page when its neighbours are buffered.  No padding.
 */
#include "buffer.h"

enum { NONE, PAGE, BLOCK };

typedef struct Ghost {
    GHashTable *set;        /* key + 1 */
    GQueue      fifo;
    uint64_t    max;
} Ghost;

typedef struct Bpac {
    NhBuf   *b;
    GQueue   pages;         /* page list, most recent at the tail */
    GQueue   blocks;        /* block list (blocks with pages not on the page list) */
    uint64_t target;        /* page-list target, pages */
    Ghost    gpage, gblock;
} Bpac;

static void ghost_init(Ghost *g, uint64_t max)
{
    g->set = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_queue_init(&g->fifo);
    g->max = max;
}

static void ghost_add(Ghost *g, uint64_t key)
{
    gpointer k = GSIZE_TO_POINTER(key + 1);
    if (g_hash_table_contains(g->set, k)) {
        return;
    }
    if (g->fifo.length == g->max) {
        g_hash_table_remove(g->set, g_queue_pop_head(&g->fifo));
    }
    g_hash_table_add(g->set, k);
    g_queue_push_tail(&g->fifo, k);
}

static bool ghost_has(Ghost *g, uint64_t key)
{
    return g_hash_table_contains(g->set, GSIZE_TO_POINTER(key + 1));
}

static void *bpac_create(NhBuf *b)
{
    Bpac *s = g_new0(Bpac, 1);
    s->b = b;
    s->target = b->cap / 2;
    ghost_init(&s->gpage, b->cap);
    ghost_init(&s->gblock, b->cap);
    return s;
}

static void bpac_destroy(void *p)
{
    Bpac *s = p;
    g_hash_table_destroy(s->gpage.set);
    g_hash_table_destroy(s->gblock.set);
    g_queue_clear(&s->gpage.fifo);
    g_queue_clear(&s->gblock.fifo);
    g_free(s);
}

static void bpac_written(void *p, const NhBufWrite *w)
{
    Bpac *s = p;
    NhBufBlock *k = w->blk;
    uint32_t on_block = 0;

    for (uint32_t i = 0; i < w->n; i++) {
        NhBufPage *pg = w->pg[i];
        if (pg->region == NONE) {
            if (ghost_has(&s->gpage, pg->lpn)) {
                s->target = MIN(s->target + 1, s->b->cap);
            } else if (ghost_has(&s->gblock, k->lbn) && s->target) {
                s->target--;
            }
            pg->region = BLOCK;
            on_block++;
        } else {
            if (pg->region == PAGE) {
                g_queue_unlink(&s->pages, &pg->lru);
            } else {
                k->aux--;
            }
            pg->region = PAGE;
            g_queue_push_tail_link(&s->pages, &pg->lru);
        }
    }
    k->aux += on_block;
    if (k->region) {
        g_queue_unlink(&s->blocks, &k->link);
        k->region = NONE;
    }
    if (k->aux) {
        g_queue_push_tail_link(&s->blocks, &k->link);
        k->region = BLOCK;
    }
}

static void bpac_removed(void *p, NhBufPage *pg)
{
    Bpac *s = p;
    NhBufBlock *k = pg->blk;

    if (pg->region == PAGE) {
        g_queue_unlink(&s->pages, &pg->lru);
    } else if (!--k->aux) {
        g_queue_unlink(&s->blocks, &k->link);
        k->region = NONE;
    }
}

static void bpac_victim(void *p, NhBufVictim *v)
{
    Bpac *s = p;

    if (s->pages.length && (s->pages.length > s->target || !s->blocks.length)) {
        NhBufPage *pg = s->pages.head->data;
        v->blk = pg->blk;
        for (GList *l = v->blk->dirty.head; l; l = l->next) {
            NhBufPage *q = l->data;
            if (q->region == PAGE) {
                ghost_add(&s->gpage, q->lpn);
            }
        }
    } else {
        v->blk = s->blocks.head->data;
        ghost_add(&s->gblock, v->blk->lbn);
    }
}

static size_t bpac_metadata(void *p)
{
    Bpac *s = p;
    /* ghost entries: a key in the set and in the FIFO */
    return (size_t)(s->gpage.fifo.length + s->gblock.fifo.length) * 48;
}

const NhBufPolicy nh_buf_bpac = {
    .name = "bpac",
    .create = bpac_create,
    .destroy = bpac_destroy,
    .written = bpac_written,
    .removed = bpac_removed,
    .victim = bpac_victim,
    .metadata = bpac_metadata,
};
