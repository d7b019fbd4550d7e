/*
 * scheduler.c - the flash scheduler (contract in scheduler.h).
 *
 * Each die has a FIFO of queued GC operations.  Keeping them in issue order on their die is
 * what keeps a victim's copies ahead of its erase, and a block's erase ahead of the GC programs
 * into it when it is reopened.  A die remembers the GC operation it ran last, so that a host
 * read arriving while it runs can suspend it.
 *
 * Which die starts next is kept in a tournament tree over the dies: each die has a key, when its
 * oldest queued operation can start at the earliest (UINT64_MAX: nothing queued), and each node
 * of the tree the die with the least key below it, the lower die on a tie, and that key.  So
 * nh_sched_advance does not scan every die for every operation and request (measured: 29% of
 * sched=prio's replay with 32 dies), and a die's new key costs one comparison per level, with
 * keys kept in the nodes (a binary heap cost three times that, measured; looking the children's
 * winners' keys up, twice this).  A key may be stale, but only low: a die's next start only moves
 * later (its next-free time only grows; its next operation starts after the one before it
 * ends), so the winner is the earliest die when its key is its true next start, and is
 * corrected and replayed when it is not.  GLib has no priority queue with a key per element,
 * and include/nh-heap.h neither changes a key in place nor breaks ties by die (the order that
 * keeps the output of the scan it replaced).
 */
#include "scheduler.h"
#include "nand.h"

#include <string.h>

static const char *const sched_names[] = { "fcfs", "prio", NULL };

enum { KEY_SCHED, KEY_T_SUSPEND, KEY_T_RESUME };   /* sched_keys, in order */
static const NhConfigKey sched_keys[] = {
    { "sched", NH_KEY_ENUM, 0, 0, "prio", 0, 0, sched_names, false,
      "flash scheduler: prio (host reads and writes before garbage collection, GC one page or "
      "erase at a time in the die's idle time, GC programs and erases suspended for host reads) "
      "or fcfs (every operation booked when issued, GC ahead of the request that caused it: "
      "earlier releases' model)" },
    { "t-suspend", NH_KEY_TIME, 0, 0, "20us", 0, 10000000, NULL, false,
      "sched=prio: time from a host read's arrival to the suspension of the GC program or "
      "erase its die runs" },
    { "t-resume", NH_KEY_TIME, 0, 0, "20us", 0, 10000000, NULL, false,
      "sched=prio: time for a suspended GC program or erase to resume after the read" },
    { NULL },
};

static uint64_t queued_now(const NhNand *n, const void *model)
{
    (void)model;
    return nh_sched_queued(n->sched);
}

static const NhStat sched_counters[] = {
    [NH_SC_SUSPENDS] = { "sched.suspends", NH_STAT_COUNT },
    [NH_SC_IDLE_OPS] = { "sched.idle_ops", NH_STAT_COUNT },
    [NH_SC_FORCED_OPS] = { "sched.forced_ops", NH_STAT_COUNT },
    { "sched.queued_ops", NH_STAT_NOW, .now = queued_now },
    { NULL },
};

/* 16 bytes, not the 24 an NhFlashOp inside would make: a die's oldest operation was queued
 * long before it runs, and reading it missed the cache (perf: half of nh_sched_advance). */
typedef struct Queued {
    uint64_t  issued;       /* it cannot start before the request that issued it arrived */
    uint32_t  addr;         /* the NhFlashOp */
    uint8_t   kind;
    bool      victim;       /* an erase reclaiming a GC victim (nh_sched_mark_victim) */
} Queued;

/* A die's queue: a ring that doubles when full.  A GArray cost a third of queueing an
 * operation (measured), in its append and in moving the run ones out of the front. */
typedef struct DieQueue {
    Queued   *ops;          /* [cap], cap a power of two or 0 */
    uint32_t  head, len, cap;
} DieQueue;

/* The GC operation a die ran last, while nothing else is booked after it. */
typedef struct Running {
    uint64_t start, end;
    uint64_t reads_until;   /* the die is free of the reads suspending it from here */
    bool     suspendable;   /* a program or an erase */
} Running;

struct NhSched {
    NhSchedLoad load;       /* first: scheduler.h reads it */
    NhSchedPolicy policy;
    uint64_t  t_suspend, t_resume;
    uint64_t *ctr;
    uint32_t  ndies;
    DieQueue *q;
    Running  *run;
    uint64_t  queued;       /* operations queued on all dies */
    uint64_t  op_ns[3];     /* die time of a read, a program, an erase (NhFlashOpKind) */
    uint32_t  leaves;       /* ndies rounded up to a power of two */
    /* [2 * leaves] node i's winner and its key; node 1 the root, die d's leaf leaves + d (the
     * dies past ndies have UINT64_MAX) */
    uint64_t *key;
    uint32_t *win;
};

static inline uint64_t die_key(const NhSched *s, uint32_t die)
{
    return s->key[s->leaves + die];
}

/* Die @die's key changed: replay its matches up to the root. */
static void tree_update(NhSched *s, uint32_t die, uint64_t key)
{
    uint32_t i = s->leaves + die, w = die;

    /* the winner so far stays in registers and meets the sibling's, whose loads do not wait
     * for this update's stores: one comparison and a select a level */
    s->key[i] = key;
    for (; i > 1; i /= 2) {
        uint64_t k2 = s->key[i ^ 1];
        uint32_t w2 = s->win[i ^ 1];
        /* a tie goes to the left, the lower dies: to the sibling when we are the right */
        bool sib = (k2 < key) | ((k2 == key) & (i & 1));

        key = sib ? k2 : key;
        w = sib ? w2 : w;
        s->key[i / 2] = key;
        s->win[i / 2] = w;
    }
}

static void tree_reset(NhSched *s)
{
    for (uint32_t i = 1; i < 2 * s->leaves; i++) {
        s->key[i] = UINT64_MAX;
    }
    for (uint32_t d = 0; d < s->leaves; d++) {
        s->win[s->leaves + d] = d;
    }
    for (uint32_t i = s->leaves - 1; i; i--) {
        s->win[i] = s->win[2 * i];
    }
}

static void sched_decode(const NhPartIn *in, void *settings)
{
    NhSchedSettings *s = settings;

    s->policy = (NhSchedPolicy)in->keys[KEY_SCHED];
    s->t_suspend = in->keys[KEY_T_SUSPEND];
    s->t_resume = in->keys[KEY_T_RESUME];
}

/* Its keys come first of the parts' and its counters last, as before the registry: the order
 * of the configuration and the statistics document is the consumers' */
const NhPart nh_part_scheduler = {
    .name = "sched",
    .keys = sched_keys,
    .counters = sched_counters,
    .counters_after_ftls = true,
    .size = sizeof(NhSchedSettings),
    .decode = sched_decode,
};

NhSched *nh_sched_new(const NhSchedSettings *set, uint32_t ndies, uint64_t nblocks,
                      uint64_t *counters, const uint64_t op_ns[3])
{
    NhSched *s = g_new0(NhSched, 1);

    s->policy = set->policy;
    s->t_suspend = set->t_suspend;
    s->t_resume = set->t_resume;
    s->ctr = counters;
    s->ndies = ndies;
    s->q = g_new0(DieQueue, ndies);
    s->run = g_new0(Running, ndies);
    s->load.erases = g_new0(uint16_t, nblocks);
    memcpy(s->op_ns, op_ns, sizeof(s->op_ns));
    s->load.owed = g_new0(uint64_t, ndies);
    s->leaves = 1;
    while (s->leaves < ndies) {
        s->leaves *= 2;
    }
    s->key = g_new(uint64_t, 2 * s->leaves);
    s->win = g_new(uint32_t, 2 * s->leaves);
    tree_reset(s);
    return s;
}

void nh_sched_free(NhSched *s)
{
    if (s) {
        for (uint32_t d = 0; d < s->ndies; d++) {
            g_free(s->q[d].ops);
        }
        g_free(s->q);
        g_free(s->run);
        g_free(s->load.erases);
        g_free(s->load.owed);
        g_free(s->key);
        g_free(s->win);
        g_free(s);
    }
}

bool nh_sched_defers(const NhSched *s)
{
    return s->policy == NH_SCHED_PRIO;
}

/* Die @die's queue, and its oldest operation. */
static bool has_queued(const NhSched *s, uint32_t die)
{
    return s->q[die].len != 0;
}

static Queued *oldest(const NhSched *s, uint32_t die)
{
    return &s->q[die].ops[s->q[die].head];
}

void nh_sched_queue(NhSched *s, uint32_t die, NhFlashOp op, uint64_t now)
{
    DieQueue *q = &s->q[die];
    Queued e = { now, op.addr, op.kind, false };

    if (q->len == q->cap) {
        uint32_t cap = q->cap ? 2 * q->cap : 64;
        Queued *ops = g_new(Queued, cap);
        for (uint32_t i = 0; i < q->len; i++) {
            ops[i] = q->ops[(q->head + i) & (q->cap - 1)];
        }
        g_free(q->ops);
        q->ops = ops;
        q->head = 0;
        q->cap = cap;
    }
    q->ops[(q->head + q->len++) & (q->cap - 1)] = e;
    /* @now bounds the die's next start from below; a die whose queue nh_sched_wait_erase ran
     * empty may have kept a later key */
    if (q->len == 1 && now < die_key(s, die)) {
        tree_update(s, die, now);
    }
    if (op.kind == NH_FOP_ERASE) {
        g_assert(s->load.erases[op.addr] < UINT16_MAX);
        s->load.erases[op.addr]++;
    }
    s->queued++;
    s->load.owed[die] += s->op_ns[op.kind];
}

/* When die @die's oldest queued operation can start. */
static uint64_t next_start(const NhSched *s, const NhNand *n, uint32_t die)
{
    return MAX(n->die_free[die], oldest(s, die)->issued);
}

/* Run die @die's oldest queued operation from when it can start; true if it was the erase of
 * a GC victim. */
static bool run_next(NhSched *s, NhNand *n, uint32_t die)
{
    Running *r = &s->run[die];
    DieQueue *q = &s->q[die];
    const Queued *e = oldest(s, die);
    NhFlashOp op = { e->addr, e->kind };
    bool victim = e->victim;

    r->start = next_start(s, n, die);
    q->head = (q->head + 1) & (q->cap - 1);
    q->len--;
    /* a queue is read in order, long after it was written: the next cache line of it (the
     * die's next operation is read at once, too late for its own prefetch) */
    __builtin_prefetch(&q->ops[(q->head + 64 / sizeof(Queued)) & (q->cap - 1)]);
    r->end = nh_nand_run(n, op, r->start);
    r->reads_until = 0;
    r->suspendable = op.kind != NH_FOP_READ;
    if (op.kind == NH_FOP_ERASE) {
        s->load.erases[op.addr]--;
    }
    s->queued--;
    s->load.owed[die] -= s->op_ns[op.kind];
    return victim;
}

void nh_sched_advance(NhSched *s, NhNand *n, uint64_t t)
{
    /* earliest free die first (the lower die on a tie), so that the channels are booked in
     * time order */
    for (;;) {
        uint32_t die = s->win[1];
        uint64_t at;

        if (s->key[1] == UINT64_MAX) {
            return;
        }
        if (!has_queued(s, die)) {
            tree_update(s, die, UINT64_MAX);
            continue;
        }
        at = next_start(s, n, die);
        if (at != s->key[1]) {
            g_assert(at > s->key[1]);
            tree_update(s, die, at);
            continue;
        }
        if (at >= t) {
            return;
        }
        run_next(s, n, die);
        s->ctr[NH_SC_IDLE_OPS]++;
        tree_update(s, die, has_queued(s, die) ? next_start(s, n, die) : UINT64_MAX);
    }
}

void nh_sched_fill(NhSched *s, NhNand *n, uint32_t die, uint64_t until)
{
    /* a die's key may stay low (tree comment): nh_sched_advance corrects it */
    while (has_queued(s, die) &&
           next_start(s, n, die) + s->op_ns[oldest(s, die)->kind] <= until) {
        run_next(s, n, die);
        s->ctr[NH_SC_IDLE_OPS]++;
    }
}

void nh_sched_wait_erase(NhSched *s, NhNand *n, uint32_t die, uint32_t blk)
{
    while (s->load.erases[blk]) {
        g_assert(has_queued(s, die));
        n->stats->ftl_gc_foreground_blocks += run_next(s, n, die);
        s->ctr[NH_SC_FORCED_OPS]++;
    }
}

void nh_sched_mark_victim(NhSched *s, uint32_t die, uint32_t blk)
{
    DieQueue *q = &s->q[die];
    Queued *last = q->len ? &q->ops[(q->head + q->len - 1) & (q->cap - 1)] : NULL;

    if (last && last->kind == NH_FOP_ERASE && last->addr == blk) {
        last->victim = true;
    }
}

bool nh_sched_suspend(NhSched *s, NhNand *n, uint32_t die, uint32_t ppn, uint64_t now,
                      uint64_t *done)
{
    Running *r = &s->run[die];
    uint64_t start, extra;

    if (s->policy != NH_SCHED_PRIO || !r->suspendable || n->die_free[die] != r->end ||
        now < r->start || now >= r->end) {
        return false;
    }
    if (now < r->reads_until) {
        /* already suspended: after the reads before it, no second suspension */
        start = r->reads_until;
        extra = 0;
    } else {
        start = now + s->t_suspend;
        extra = s->t_suspend + s->t_resume;
        s->ctr[NH_SC_SUSPENDS]++;
    }
    *done = nh_nand_transfer(n, nh_channel_of_block(n, nh_block_of(n, ppn)),
                             start + n->t.t_read);
    /* the die is busy with the read and the suspension around it; the GC operation's own
     * remaining time follows unchanged */
    n->stats->nand_die_busy_ns += *done - start + extra;
    r->end += *done - start + extra;
    r->reads_until = *done;
    n->die_free[die] = r->end;
    return true;
}

uint64_t nh_sched_queued(const NhSched *s)
{
    return s->queued;
}

void nh_sched_reset(NhSched *s)
{
    for (uint32_t d = 0; d < s->ndies; d++) {
        DieQueue *q = &s->q[d];
        for (uint32_t i = 0; i < q->len; i++) {
            const Queued *e = &q->ops[(q->head + i) & (q->cap - 1)];
            if (e->kind == NH_FOP_ERASE) {
                s->load.erases[e->addr]--;
            }
        }
        q->head = q->len = 0;
    }
    memset(s->run, 0, sizeof(Running) * s->ndies);
    memset(s->load.owed, 0, sizeof(uint64_t) * s->ndies);
    tree_reset(s);
    s->queued = 0;
}
