/*
 * lbuf-sim.c - one instance of l-buffer's meta-simulation (seed 002, chapter 3), in either form:
 *
 *  host (full):   the write buffer keeps an exact sector bitmap per group; the log buffer keeps
 *                 every logged page (an lpn per log-block page) and, at a log-block merge, counts
 *                 the distinct logical blocks with valid pages in it (its associativity).
 *  device:        dual resolution in the write buffer: a group records dirty sectors as records
 *                 of LB_RECORD_SECTORS up to LB_SWITCH_SECTORS, then as a bitmap of
 *                 LB_BIT_SECTORS per bit (its size is estimated from that); the log buffer keeps
 *                 only each logical block's first-committed pages, anchored to the log block
 *                 they went to (records up to LB_LOG_RECORD_PAGES pages, then a bitmap).  A later
 *                 commit that rewrites all of them shifts the group to the log block of that
 *                 commit; a merge of a log block costs one full merge per group anchored there;
 *                 beyond LB_LOG_MAX_GROUPS groups the oldest is deleted early and counted in its
 *                 log block's associativity as if it stayed.
 *
 * Both forms charge the flash time of what the write buffer's victims cause: plugging (reads of
 * the block's missing mapped pages, a whole-block program, the erase of the old data block) or
 * logging (the dirty pages' programs, plus the full merges when a log block is reclaimed: per
 * associated logical block a block copy and an erase, and the victim's own erase).  The log
 * buffer is FAST's: log blocks filled in turn, the oldest reclaimed when the pool is full.
 * Memory is counted as a firmware would lay the structures out (docs/buffers.md).
 */
#include "lbuf.h"

#include <string.h>

typedef struct Group {
    GList     link;         /* in the size buckets */
    uint64_t  lbn, stamp;
    uint32_t  size, aux;    /* dirty sectors (device: estimated); bucket */
    uint32_t  nrec;         /* device: records in use; UINT32_MAX = bitmap */
    uint32_t *rec;          /* device: record indexes (sector / LB_RECORD_SECTORS) */
    uint8_t  *bits;         /* host: a bit per sector; device after the switch: per 8 sectors */
} Group;

typedef struct LogBlk {     /* host form */
    GList     link;
    uint64_t *slot;         /* [pages] lpn + 1 of a valid page, 0 = invalid or unwritten */
    uint32_t  fill;
} LogBlk;

typedef struct DevBlk {     /* device form */
    GList     link;
    GQueue    nodes;        /* Node by ->blink */
    uint32_t  fill, deleted;
} DevBlk;

typedef struct Node {       /* device form: a logical block's first-committed pages */
    GList     blink, age;
    uint64_t  lbn;
    DevBlk   *blk;
    uint32_t  npages;       /* pages recorded */
    uint8_t  *pages;        /* [pages] flags (the firmware stores records or a bitmap) */
} Node;

struct LbSim {
    LbSimParams  p;
    double       alpha, cost;
    uint32_t     spb;       /* sectors per block */
    /* write buffer */
    GHashTable  *groups;    /* lbn -> Group */
    NhBufBuckets bk;
    uint64_t     used;      /* sectors */
    uint64_t     wb_bytes;
    /* log buffer */
    GQueue       logs;      /* LogBlk or DevBlk, oldest first */
    GHashTable  *where;     /* host: lpn -> slot; device: lbn -> Node */
    GQueue       ages;      /* device: Node by ->age, oldest first */
    uint64_t     node_bytes;    /* device: what the nodes take */
    uint8_t     *dirty;     /* scratch [pages] */
};

/* ------------------------------------------------------------------ write buffer */

static uint64_t group_bytes(const LbSim *s, const Group *g)
{
    if (!s->p.device) {
        return 8 + s->spb / 8;                  /* lbn, age, a bit per sector */
    }
    if (g->nrec == UINT32_MAX) {
        return 8 + s->spb / LB_BIT_SECTORS / 8; /* lbn, age, a bit per 8 sectors */
    }
    return 8 + 2 * g->nrec;                     /* lbn, age, 2-byte records */
}

static void bit_set(uint8_t *m, uint32_t i) { m[i / 8] |= (uint8_t)(1u << (i % 8)); }
static bool bit_get(const uint8_t *m, uint32_t i) { return m[i / 8] >> (i % 8) & 1; }

static void group_add(LbSim *s, Group *g, uint32_t sec0, uint32_t sec1)
{
    if (!s->p.device) {
        for (uint32_t i = sec0; i < sec1; i++) {
            if (!bit_get(g->bits, i)) {
                bit_set(g->bits, i);
                g->size++;
            }
        }
        return;
    }
    if (g->nrec != UINT32_MAX) {
        for (uint32_t r = sec0 / LB_RECORD_SECTORS; r <= (sec1 - 1) / LB_RECORD_SECTORS; r++) {
            uint32_t i = 0;
            while (i < g->nrec && g->rec[i] != r) {
                i++;
            }
            if (i < g->nrec) {
                continue;
            }
            if ((g->nrec + 1) * LB_RECORD_SECTORS > LB_SWITCH_SECTORS) {
                /* switch to the coarse bitmap, carrying the records over */
                g->bits = g_new0(uint8_t, s->spb / LB_BIT_SECTORS / 8 + 1);
                for (uint32_t j = 0; j < g->nrec; j++) {
                    bit_set(g->bits, g->rec[j] * LB_RECORD_SECTORS / LB_BIT_SECTORS);
                }
                g_free(g->rec);
                g->rec = NULL;
                g->nrec = UINT32_MAX;
                break;
            }
            g->rec = g_renew(uint32_t, g->rec, g->nrec + 1);
            g->rec[g->nrec++] = r;
        }
    }
    if (g->nrec == UINT32_MAX) {
        uint32_t n = 0;
        for (uint32_t i = sec0 / LB_BIT_SECTORS; i <= (sec1 - 1) / LB_BIT_SECTORS; i++) {
            bit_set(g->bits, i);
        }
        for (uint32_t i = 0; i < s->spb / LB_BIT_SECTORS; i++) {
            n += bit_get(g->bits, i);
        }
        g->size = n * LB_BIT_SECTORS;
    } else {
        g->size = g->nrec * LB_RECORD_SECTORS;
    }
}

/* The pages @g holds dirty sectors of, into s->dirty; returns how many. */
static uint32_t group_pages(LbSim *s, const Group *g)
{
    uint32_t n = 0;

    memset(s->dirty, 0, s->p.pages);
    if (!s->p.device) {
        for (uint32_t i = 0; i < s->spb; i++) {
            if (bit_get(g->bits, i)) {
                s->dirty[i / s->p.spp] = 1;
            }
        }
    } else if (g->nrec == UINT32_MAX) {
        for (uint32_t i = 0; i < s->spb / LB_BIT_SECTORS; i++) {
            if (bit_get(g->bits, i)) {
                s->dirty[i * LB_BIT_SECTORS / s->p.spp] = 1;
            }
        }
    } else {
        for (uint32_t i = 0; i < g->nrec; i++) {
            s->dirty[g->rec[i] * LB_RECORD_SECTORS / s->p.spp] = 1;
        }
    }
    for (uint32_t o = 0; o < s->p.pages; o++) {
        n += s->dirty[o];
    }
    return n;
}

static void group_get(GList *link, uint64_t *stamp, uint32_t *size, uint64_t *lbn)
{
    Group *g = link->data;
    *stamp = g->stamp;
    *size = g->size;
    *lbn = g->lbn;
}

static void group_free(gpointer p)
{
    Group *g = p;
    g_free(g->rec);
    g_free(g->bits);
    g_free(g);
}

/* ------------------------------------------------------------------ log buffer */

static double full_merge_cost(const LbSim *s)
{
    return (double)s->p.pages * (double)(s->p.t_read + s->p.t_prog) + (double)s->p.t_erase;
}

/* lbn, log block; 2-byte records up to LB_LOG_RECORD_PAGES pages, else a bitmap */
static uint64_t node_bytes(const LbSim *s, const Node *n)
{
    return 6 + (n->npages <= LB_LOG_RECORD_PAGES ? 2 * n->npages : s->p.pages / 8);
}

static void node_free(LbSim *s, Node *n)
{
    s->node_bytes -= node_bytes(s, n);
    g_queue_unlink(&n->blk->nodes, &n->blink);
    g_queue_unlink(&s->ages, &n->age);
    g_hash_table_remove(s->where, &n->lbn);
    g_free(n->pages);
    g_free(n);
}

/* A logical block's log copies stop mattering (it was merged or plugged). */
static void log_drop(LbSim *s, uint64_t lbn)
{
    if (s->p.device) {
        Node *n = g_hash_table_lookup(s->where, &lbn);
        if (n) {
            node_free(s, n);
        }
        return;
    }
    for (uint32_t o = 0; o < s->p.pages; o++) {
        uint64_t lpn = lbn * s->p.pages + o;
        uint64_t *slot = g_hash_table_lookup(s->where, &lpn);
        if (slot) {
            *slot = 0;
            g_hash_table_remove(s->where, &lpn);
        }
    }
}

/* Reclaim the oldest log block: a full merge per associated logical block, then its erase. */
static void log_reclaim(LbSim *s)
{
    GList *l = g_queue_pop_head_link(&s->logs);
    uint32_t assoc = 0;

    if (s->p.device) {
        DevBlk *d = l->data;
        assoc = d->nodes.length + d->deleted;
        while (d->nodes.head) {
            node_free(s, ((GList *)d->nodes.head)->data);
        }
        g_free(d);
    } else {
        LogBlk *k = l->data;
        GHashTable *lbns = g_hash_table_new(g_int64_hash, g_int64_equal);
        uint64_t *keys = g_new(uint64_t, s->p.pages);
        for (uint32_t i = 0; i < k->fill; i++) {
            if (k->slot[i]) {
                keys[assoc] = (k->slot[i] - 1) / s->p.pages;
                if (!g_hash_table_contains(lbns, &keys[assoc])) {
                    g_hash_table_add(lbns, &keys[assoc]);
                    assoc++;
                }
            }
        }
        for (uint32_t i = 0; i < assoc; i++) {
            log_drop(s, keys[i]);
        }
        g_hash_table_destroy(lbns);
        g_free(keys);
        g_free(k->slot);
        g_free(k);
    }
    s->cost += assoc * full_merge_cost(s) + (double)s->p.t_erase;
}

/* The log block the next logged page goes to (opening one, reclaiming if the pool is full). */
static GList *log_tail(LbSim *s)
{
    GList *t = s->logs.tail;
    uint32_t fill = !t ? s->p.pages
                       : s->p.device ? ((DevBlk *)t->data)->fill : ((LogBlk *)t->data)->fill;

    if (fill < s->p.pages) {
        return t;
    }
    if (s->logs.length >= s->p.log_blocks) {
        log_reclaim(s);
    }
    if (s->p.device) {
        DevBlk *d = g_new0(DevBlk, 1);
        d->link.data = d;
        g_queue_push_tail_link(&s->logs, &d->link);
    } else {
        LogBlk *k = g_new0(LogBlk, 1);
        k->link.data = k;
        k->slot = g_new0(uint64_t, s->p.pages);
        g_queue_push_tail_link(&s->logs, &k->link);
    }
    return s->logs.tail;
}

/* Log the pages flagged in s->dirty of block @lbn. */
static void log_commit(LbSim *s, uint64_t lbn, uint32_t npages)
{
    if (!s->p.device) {
        for (uint32_t o = 0; o < s->p.pages; o++) {
            uint64_t lpn = lbn * s->p.pages + o;
            LogBlk *k;
            uint64_t *old;
            if (!s->dirty[o]) {
                continue;
            }
            old = g_hash_table_lookup(s->where, &lpn);
            if (old) {
                *old = 0;
            }
            k = log_tail(s)->data;
            k->slot[k->fill] = lpn + 1;
            /* the map owns a copy of its key */
            g_hash_table_replace(s->where, g_memdup2(&lpn, sizeof(lpn)), &k->slot[k->fill]);
            k->fill++;
        }
        return;
    }
    {
        /* the log block first: opening it may reclaim the block this group is anchored to */
        DevBlk *d = log_tail(s)->data;
        Node *n = g_hash_table_lookup(s->where, &lbn);
        bool anchor = !n;

        if (n) {
            /* invalidation: the pages rewritten leave the first commit; all gone = shift */
            s->node_bytes -= node_bytes(s, n);
            for (uint32_t o = 0; o < s->p.pages; o++) {
                if (s->dirty[o] && n->pages[o]) {
                    n->pages[o] = 0;
                    n->npages--;
                }
            }
            s->node_bytes += node_bytes(s, n);
            if (!n->npages) {
                node_free(s, n);
                anchor = true;
            }
        }
        if (anchor) {
            n = g_new0(Node, 1);
            n->blink.data = n->age.data = n;
            n->lbn = lbn;
            n->blk = d;
            n->pages = g_memdup2(s->dirty, s->p.pages);
            n->npages = npages;
            g_queue_push_tail_link(&d->nodes, &n->blink);
            g_queue_push_tail_link(&s->ages, &n->age);
            g_hash_table_insert(s->where, &n->lbn, n);
            s->node_bytes += node_bytes(s, n);
            if (s->ages.length > LB_LOG_MAX_GROUPS) {
                /* early deletion: the oldest group will merge where it is */
                Node *old = s->ages.head->data;
                old->blk->deleted++;
                node_free(s, old);
            }
        }
        for (uint32_t left = npages; left;) {
            uint32_t take;
            d = log_tail(s)->data;
            take = MIN(left, s->p.pages - d->fill);
            d->fill += take;
            left -= take;
        }
    }
}

static uint64_t log_bytes(const LbSim *s)
{
    if (!s->p.device) {
        /* an lpn per log page, and the lpn -> log page map */
        return (uint64_t)s->logs.length * s->p.pages * 4 + g_hash_table_size(s->where) * 8;
    }
    return s->node_bytes + (uint64_t)s->logs.length * 4;   /* per log block: fill, deletions */
}

/* ------------------------------------------------------------------ the instance */

LbSim *lb_sim_new(const LbSimParams *p, double alpha)
{
    LbSim *s = g_new0(LbSim, 1);

    s->p = *p;
    s->p.log_blocks = MAX(p->log_blocks, 2);
    s->alpha = alpha;
    s->spb = p->pages * p->spp;
    s->groups = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, group_free);
    nh_bk_init(&s->bk, s->spb + 1);
    s->where = p->device ? g_hash_table_new(g_int64_hash, g_int64_equal)
                         : g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    s->dirty = g_new0(uint8_t, p->pages);
    return s;
}

void lb_sim_free(LbSim *s)
{
    if (!s) {
        return;
    }
    while (s->logs.length) {
        GList *l = g_queue_pop_head_link(&s->logs);
        if (s->p.device) {
            DevBlk *d = l->data;
            while (d->nodes.head) {
                node_free(s, ((GList *)d->nodes.head)->data);
            }
            g_free(d);
        } else {
            g_free(((LogBlk *)l->data)->slot);
            g_free(l->data);
        }
    }
    g_hash_table_destroy(s->groups);
    g_hash_table_destroy(s->where);
    nh_bk_clear(&s->bk);
    g_free(s->dirty);
    g_free(s);
}

static void flush_group(LbSim *s, Group *g, double lambda)
{
    uint32_t d = group_pages(s, g);
    bool plug = d == s->p.pages || (double)g->size / s->spb > lambda;

    if (plug) {
        uint32_t missing = 0;
        for (uint32_t o = 0; o < s->p.pages; o++) {
            missing += !s->dirty[o] &&
                       s->p.sink->is_mapped(s->p.sink->ctx, g->lbn * s->p.pages + o);
        }
        s->cost += (double)missing * s->p.t_read + (double)s->p.pages * s->p.t_prog +
                   (double)s->p.t_erase;
        log_drop(s, g->lbn);
    } else {
        s->cost += (double)d * s->p.t_prog;
        log_commit(s, g->lbn, d);
    }
    nh_bk_del(&s->bk, &g->link, g->aux);
    s->used -= g->size;
    s->wb_bytes -= group_bytes(s, g);
    g_hash_table_remove(s->groups, &g->lbn);
}

void lb_sim_write(LbSim *s, uint64_t lbn, uint32_t sec0, uint32_t sec1, uint64_t seq,
                  double lambda)
{
    Group *g = g_hash_table_lookup(s->groups, &lbn);

    if (sec1 <= sec0) {
        return;
    }
    if (g) {
        nh_bk_del(&s->bk, &g->link, g->aux);
        s->used -= g->size;
        s->wb_bytes -= group_bytes(s, g);
    } else {
        g = g_new0(Group, 1);
        g->link.data = g;
        g->lbn = lbn;
        if (!s->p.device) {
            g->bits = g_new0(uint8_t, s->spb / 8 + 1);
        }
        g_hash_table_insert(s->groups, &g->lbn, g);
    }
    group_add(s, g, sec0, sec1);
    g->stamp = seq;
    g->aux = g->size;
    nh_bk_put(&s->bk, &g->link, g->aux);
    s->used += g->size;
    s->wb_bytes += group_bytes(s, g);
    while (s->used > s->p.cap_sectors) {
        flush_group(s, lb_pick(&s->bk, group_get, s->alpha, seq)->data, lambda);
    }
}

double lb_sim_take_cost(LbSim *s)
{
    double c = s->cost;
    s->cost = 0;
    return c;
}

uint64_t lb_sim_bytes(const LbSim *s)
{
    return s->wb_bytes + log_bytes(s);
}
