/*
 * fifo.c - a trivial write-buffer policy, added the way docs/engine.md says (this file and its
 * name in a registry list) to show that nothing else has to change: the victim is the oldest
 * dirty page, alone or, with fifo-whole=on, with every dirty page of its block.  Its key and
 * its counter reach the configuration, the statistics document and the state file from here.
 */
#include "buffer.h"

typedef struct Fifo {
    GQueue    q;            /* dirty pages, first written at the head */
    bool      whole;
    uint64_t *ctr;          /* [0]: victims (evictions, flushes) destaged with their block */
} Fifo;

static const char *const whole_names[] = { "off", "on", NULL };

static const NhConfigKey fifo_keys[] = {
    { "fifo-whole", NH_KEY_ENUM, 0, 0, "off", 0, 0, whole_names, false,
      "fifo: destage the oldest dirty page's whole block (on) or the page alone (off)" },
    { NULL },
};

static const NhStat fifo_counters[] = {
    { .path = "buffer.fifo.whole_block_victims" },
    { .path = NULL },
};

static void *fifo_create(NhBuf *b)
{
    Fifo *s = g_new0(Fifo, 1);
    s->whole = b->env.keys[0] == 1;     /* fifo-whole=on */
    s->ctr = b->env.counters;
    return s;
}

static void fifo_written(void *p, const NhBufWrite *w)
{
    Fifo *s = p;
    for (uint32_t i = 0; i < w->n; i++) {
        if (!w->pg[i]->region) {
            w->pg[i]->region = 1;
            g_queue_push_tail_link(&s->q, &w->pg[i]->lru);
        }
    }
}

static void fifo_removed(void *p, NhBufPage *pg)
{
    Fifo *s = p;
    g_queue_unlink(&s->q, &pg->lru);
}

static void fifo_victim(void *p, NhBufVictim *v)
{
    Fifo *s = p;
    NhBufPage *oldest = s->q.head->data;

    v->blk = oldest->blk;
    v->page = s->whole ? NULL : oldest;
    s->ctr[0] += s->whole;
}

const NhBufPolicy nh_buf_fifo = {
    .name = "fifo",
    .keys = fifo_keys,
    .counters = fifo_counters,
    .counters_when_chosen = true,
    .create = fifo_create,
    .destroy = g_free,
    .written = fifo_written,
    .removed = fifo_removed,
    .victim = fifo_victim,
};
