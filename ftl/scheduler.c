/*
 * scheduler.c - the flash scheduler (contract in scheduler.h).
 *
 * Each die has a FIFO of queued GC operations.  Keeping them in issue order on their die is
 * what keeps a victim's copies ahead of its erase, and a block's erase ahead of the GC programs
 * into it when it is reopened.  A die remembers the GC operation it ran last, so that a host
 * read arriving while it runs can suspend it.
 */
#include "scheduler.h"
#include "nand.h"

#include <string.h>

static const char *const sched_names[] = { "fcfs", "prio", NULL };

const NhConfigKey nh_sched_keys[] = {
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

const NhStat nh_sched_counters[] = {
    [NH_SC_SUSPENDS] = { "sched.suspends", NH_STAT_COUNT },
    [NH_SC_IDLE_OPS] = { "sched.idle_ops", NH_STAT_COUNT },
    [NH_SC_FORCED_OPS] = { "sched.forced_ops", NH_STAT_COUNT },
    { NULL },
};

typedef struct Queued {
    NhFlashOp op;
    uint64_t  issued;       /* it cannot start before the request that issued it arrived */
    bool      victim;       /* an erase reclaiming a GC victim (nh_sched_mark_victim) */
} Queued;

typedef struct DieQueue {
    GArray    *ops;             /* Queued; [head, len) are still queued */
    guint      head;
} DieQueue;

/* The GC operation a die ran last, while nothing else is booked after it. */
typedef struct Running {
    uint64_t start, end;
    uint64_t reads_until;   /* the die is free of the reads suspending it from here */
    bool     suspendable;   /* a program or an erase */
} Running;

struct NhSched {
    NhSchedPolicy policy;
    uint64_t  t_suspend, t_resume;
    uint64_t *ctr;
    uint32_t  ndies;
    DieQueue *q;
    Running  *run;
    uint16_t *erases;       /* [nblocks] erases queued per block */
    uint64_t  queued;       /* operations queued on all dies */
    uint64_t  op_ns[3];     /* die time of a read, a program, an erase (NhFlashOpKind) */
    uint64_t *owed;         /* [ndies] die time of the operations queued on each die */
};

NhSched *nh_sched_new(const NhConfig *cfg, uint32_t ndies, uint64_t nblocks, uint64_t *counters,
                      const uint64_t op_ns[3])
{
    NhSched *s = g_new0(NhSched, 1);

    s->policy = (NhSchedPolicy)nh_config_uint(cfg, "sched");
    s->t_suspend = nh_config_uint(cfg, "t-suspend");
    s->t_resume = nh_config_uint(cfg, "t-resume");
    s->ctr = counters;
    s->ndies = ndies;
    s->q = g_new0(DieQueue, ndies);
    for (uint32_t d = 0; d < ndies; d++) {
        s->q[d].ops = g_array_new(FALSE, FALSE, sizeof(Queued));
    }
    s->run = g_new0(Running, ndies);
    s->erases = g_new0(uint16_t, nblocks);
    memcpy(s->op_ns, op_ns, sizeof(s->op_ns));
    s->owed = g_new0(uint64_t, ndies);
    return s;
}

void nh_sched_free(NhSched *s)
{
    if (s) {
        for (uint32_t d = 0; d < s->ndies; d++) {
            g_array_free(s->q[d].ops, TRUE);
        }
        g_free(s->q);
        g_free(s->run);
        g_free(s->erases);
        g_free(s->owed);
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
    return s->q[die].head < s->q[die].ops->len;
}

static Queued *oldest(const NhSched *s, uint32_t die)
{
    return &g_array_index(s->q[die].ops, Queued, s->q[die].head);
}

void nh_sched_queue(NhSched *s, uint32_t die, NhFlashOp op, uint64_t now)
{
    DieQueue *q = &s->q[die];
    Queued e = { op, now, false };

    /* what has run is dropped once it is half of the array, so appending stays amortised O(1) */
    if (q->head && q->head * 2 >= q->ops->len) {
        g_array_remove_range(q->ops, 0, q->head);
        q->head = 0;
    }
    g_array_append_val(q->ops, e);
    if (op.kind == NH_FOP_ERASE) {
        g_assert(s->erases[op.addr] < UINT16_MAX);
        s->erases[op.addr]++;
    }
    s->queued++;
    s->owed[die] += s->op_ns[op.kind];
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
    NhFlashOp op;
    bool victim = oldest(s, die)->victim;

    r->start = next_start(s, n, die);
    op = oldest(s, die)->op;
    s->q[die].head++;
    r->end = nh_nand_run(n, op, r->start);
    r->reads_until = 0;
    r->suspendable = op.kind != NH_FOP_READ;
    if (op.kind == NH_FOP_ERASE) {
        s->erases[op.addr]--;
    }
    s->queued--;
    s->owed[die] -= s->op_ns[op.kind];
    return victim;
}

void nh_sched_advance(NhSched *s, NhNand *n, uint64_t t)
{
    if (!s->queued) {
        return;
    }
    /* earliest free die first, so that the channels are booked in time order */
    for (;;) {
        uint32_t best = UINT32_MAX;
        uint64_t at = t;

        for (uint32_t d = 0; d < s->ndies; d++) {
            if (has_queued(s, d) && next_start(s, n, d) < at) {
                best = d;
                at = next_start(s, n, d);
            }
        }
        if (best == UINT32_MAX) {
            return;
        }
        run_next(s, n, best);
        s->ctr[NH_SC_IDLE_OPS]++;
    }
}

void nh_sched_wait_erase(NhSched *s, NhNand *n, uint32_t die, uint32_t blk)
{
    while (s->erases[blk]) {
        g_assert(has_queued(s, die));
        n->stats->ftl_gc_foreground_blocks += run_next(s, n, die);
        s->ctr[NH_SC_FORCED_OPS]++;
    }
}

void nh_sched_mark_victim(NhSched *s, uint32_t die, uint32_t blk)
{
    DieQueue *q = &s->q[die];
    Queued *last = q->ops->len > q->head ? &g_array_index(q->ops, Queued, q->ops->len - 1) : NULL;

    if (last && last->op.kind == NH_FOP_ERASE && last->op.addr == blk) {
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

uint64_t nh_sched_owed(const NhSched *s, uint32_t die)
{
    return s->owed[die];
}

bool nh_sched_erase_pending(const NhSched *s, uint32_t blk)
{
    return s->erases[blk] != 0;
}

void nh_sched_reset(NhSched *s)
{
    for (uint32_t d = 0; d < s->ndies; d++) {
        for (; has_queued(s, d); s->q[d].head++) {
            if (oldest(s, d)->op.kind == NH_FOP_ERASE) {
                s->erases[oldest(s, d)->op.addr]--;
            }
        }
        g_array_set_size(s->q[d].ops, 0);
        s->q[d].head = 0;
    }
    memset(s->run, 0, sizeof(Running) * s->ndies);
    memset(s->owed, 0, sizeof(uint64_t) * s->ndies);
    s->queued = 0;
}
