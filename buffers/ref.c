/*
 * ref.c - recently-evicted-first (Seo and Shin, IEEE TCE 2008): blocks in LRU order, and a short
 * list of the blocks evicted most recently (ref-victims, 3 in seed 002).  A block of that list
 * that is buffered again, lies in the victim window (the ref-window percent of buffered blocks
 * at the LRU end, 75% in seed 002) and still has pages in the FTL's log blocks (the FTL's in_log
 * hook) is the victim: its pages join log blocks its logical block already occupies, so the
 * merge that follows costs no more associativity.  Otherwise the LRU block is the victim and
 * becomes the most recent entry of the list.  FTLs without log blocks answer no, so there ref
 * is block LRU.  Padding as BPLRU, above half the block (seed 002, Table 0.5).
 */
#include "buffer.h"

typedef struct Ref {
    NhBuf     *b;
    GSequence *lru;         /* NhBufBlock, least recently written first; positions in O(log n) */
    uint64_t  *recent;      /* lbns of the latest victims, most recent first */
    uint32_t   nrecent, max_recent;
    uint32_t   window;      /* ref-window */
} Ref;

enum { REF_WINDOW, REF_VICTIMS };   /* ref_keys, in order */
static const NhConfigKey ref_keys[] = {
    { "ref-window", NH_KEY_UINT, 0, 0, "75", 1, 100, NULL, false,
      "ref: percent of the buffered blocks, from the LRU end, a victim may come from" },
    { "ref-victims", NH_KEY_UINT, 0, 0, "3", 1, 64, NULL, false,
      "ref: recently evicted blocks remembered as preferred victims" },
    { NULL },
};

static void *ref_create(NhBuf *b)
{
    Ref *s = g_new0(Ref, 1);
    s->b = b;
    s->lru = g_sequence_new(NULL);
    s->max_recent = (uint32_t)b->env.keys[REF_VICTIMS];
    s->window = (uint32_t)b->env.keys[REF_WINDOW];
    s->recent = g_new0(uint64_t, s->max_recent);
    return s;
}

static void ref_destroy(void *p)
{
    Ref *s = p;
    g_sequence_free(s->lru);
    g_free(s->recent);
    g_free(s);
}

static void ref_written(void *p, const NhBufWrite *w)
{
    Ref *s = p;
    NhBufBlock *k = w->blk;

    if (k->region) {
        g_sequence_move(k->iter, g_sequence_get_end_iter(s->lru));
    } else {
        k->iter = g_sequence_append(s->lru, k);
        k->region = 1;
    }
}

static void ref_removed(void *p, NhBufPage *pg)
{
    NhBufBlock *k = pg->blk;
    (void)p;
    if (!nh_buf_ndirty(k)) {
        g_sequence_remove(k->iter);
        k->iter = NULL;
        k->region = 0;
    }
}

/* Make @lbn the most recent victim. */
static void remember(Ref *s, uint64_t lbn)
{
    uint32_t i = 0;
    while (i < s->nrecent && s->recent[i] != lbn) {
        i++;
    }
    if (i == s->nrecent && s->nrecent < s->max_recent) {
        s->nrecent++;
    }
    for (i = MIN(i, s->nrecent - 1); i > 0; i--) {
        s->recent[i] = s->recent[i - 1];
    }
    s->recent[0] = lbn;
}

static void ref_victim(void *p, NhBufVictim *v)
{
    Ref *s = p;
    NhBuf *b = s->b;
    int n = g_sequence_get_length(s->lru);
    int window = (int)(((uint64_t)n * s->window + 99) / 100);

    v->blk = NULL;
    for (uint32_t i = 0; i < s->nrecent && !v->blk; i++) {
        NhBufBlock *k = g_hash_table_lookup(b->blocks_idx, &s->recent[i]);
        if (k && k->region && g_sequence_iter_get_position(k->iter) < window &&
            b->env.sink.in_log(b->env.sink.ctx, k->lbn)) {
            v->blk = k;
        }
    }
    if (!v->blk) {
        v->blk = g_sequence_get(g_sequence_get_begin_iter(s->lru));
    }
    remember(s, v->blk->lbn);
    v->pad = 2 * nh_buf_ndirty(v->blk) > b->pages;
}

static size_t ref_metadata(void *p)
{
    Ref *s = p;
    /* a balanced-tree node per block and the list of recent victims */
    return (size_t)g_sequence_get_length(s->lru) * 40 + s->max_recent * sizeof(uint64_t);
}

const NhBufPolicy nh_buf_ref = {
    .name = "ref",
    .keys = ref_keys,
    .create = ref_create,
    .destroy = ref_destroy,
    .written = ref_written,
    .removed = ref_removed,
    .victim = ref_victim,
    .metadata = ref_metadata,
};
