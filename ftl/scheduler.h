/*
 * scheduler.h - the flash scheduler: in what order a die serves the host and garbage collection.
 *
 * Contract:
 *  - sched=fcfs: every flash operation is booked on its die and channel when it is issued, first
 *    come first served, so host I/O waits behind the GC booked before it (the model of earlier
 *    releases; kept so that their results can be reproduced).
 *  - sched=prio (default): operations issued during garbage collection (between
 *    nh_nand_gc_begin and _end: a victim's copies, its erase, what the FTL writes for them)
 *    are queued on their die, one page or erase at a time, and run only in the die's idle time:
 *    nh_sched_advance(t), which the engine calls at every request's arrival, starts the queued
 *    operations of every die that is free before t, earliest die first, each when its die
 *    becomes free.  So host reads and writes go before GC, GC fills the gaps between them and
 *    the dies stay busy while GC is due (work-conserving).  A die that will idle until a host
 *    operation booked on it can start also runs its queued operations that end by then, when
 *    the write allocation asks (nh_sched_fill; alloc=dynamic, alloc.h).
 *  - Suspension: a host read that finds its die in a queued GC program or erase suspends it:
 *    the read starts t-suspend after it arrives (or after the reads already suspending it), and
 *    the GC operation resumes t-resume after the read has left the die, its remaining time
 *    unchanged.  GC reads are not suspended (they are short).
 *  - Foreground GC: a host program into a block whose erase is still queued runs that die's
 *    queue up to the erase first, so when the free blocks really run out (the FTL's critical
 *    watermark) the host waits for GC, as on a real device.  Those are the victims counted as
 *    foreground (ftl.gc_foreground_blocks): where the FTL issued them (background or at its
 *    critical watermark) does not say whether a host waited.
 *  - What is not reordered: host operations among themselves stay first come first served,
 *    because the engine reports a request's completion time when it arrives (engine.h), so a
 *    host program in progress is never suspended and a later read does not overtake an
 *    earlier write.  Counters, the maps and the chip discipline change when an operation is
 *    issued, only its time is deferred: the counters do not depend on the scheduler.  A queued
 *    operation depends only on those before it on its die: a DFTL translation page read on
 *    one die and written on another is not ordered across the two.
 *  - The scheduler's keys (sched, t-suspend, t-resume) and counters (sched.*) are its own
 *    (docs/engine.md, docs/statistics.md).
 */
#ifndef NH_SCHEDULER_H
#define NH_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "part.h"

typedef enum NhSchedPolicy { NH_SCHED_FCFS, NH_SCHED_PRIO } NhSchedPolicy;

/* The part's settings (part.h: nh_part_scheduler, keys sched, t-suspend, t-resume). */
typedef struct NhSchedSettings {
    NhSchedPolicy policy;
    uint64_t t_suspend, t_resume;
} NhSchedSettings;

/* The scheduler's counters, in the order of its table (sched.*). */
enum {
    NH_SC_SUSPENDS,     /* host reads that suspended a GC program or erase */
    NH_SC_IDLE_OPS,     /* queued GC operations run in their die's idle time */
    NH_SC_FORCED_OPS,   /* queued GC operations run because a host program waited for them */
    NH_SC_SLOTS,
};

typedef enum NhFlashOpKind { NH_FOP_READ, NH_FOP_PROGRAM, NH_FOP_ERASE } NhFlashOpKind;

/* One flash operation: a page read or program (@addr a ppn) or a block erase (@addr a block). */
typedef struct NhFlashOp {
    uint32_t addr;
    uint8_t  kind;
} NhFlashOp;

struct NhNand;
typedef struct NhSched NhSched;

/* The start of every NhSched: what alloc=dynamic asks of the scheduler for every plane of every
 * host page, public so that those questions are inlined (as calls they were a third of the
 * allocation's cost, measured). */
typedef struct NhSchedLoad {
    uint64_t *owed;         /* [ndies] die time of the operations queued on each die */
    uint16_t *erases;       /* [nblocks] erases queued per block */
} NhSchedLoad;

/* @counters: NH_SC_SLOTS of them (the engine's slots for the part's counters); @op_ns: the
 * die time of a page read, a page program and an erase, indexed by NhFlashOpKind. */
NhSched *nh_sched_new(const NhSchedSettings *set, uint32_t ndies, uint64_t nblocks,
                      uint64_t *counters, const uint64_t op_ns[3]);
void nh_sched_free(NhSched *s);

/* Does @s queue the operations of garbage collection (sched=prio)? */
bool nh_sched_defers(const NhSched *s);
/* Queue GC operation @op on die @die, issued at @now. */
void nh_sched_queue(NhSched *s, uint32_t die, NhFlashOp op, uint64_t now);
/* Start what the dies' idle time before @t allows (UINT64_MAX: everything queued). */
void nh_sched_advance(NhSched *s, struct NhNand *n, uint64_t t);
/* Die @die will idle until @until, when a host operation booked on it can start at the
 * earliest: run its queued operations that end by then (their op_ns from when each can start),
 * in its idle time (counted in sched.idle_ops). */
void nh_sched_fill(NhSched *s, struct NhNand *n, uint32_t die, uint64_t until);
/* Before a host program into block @blk on die @die: run the die's queue through its erase.
 * Each GC victim erased in that run was reclaimed while the host waited: it is counted in
 * ftl.gc_foreground_blocks. */
void nh_sched_wait_erase(NhSched *s, struct NhNand *n, uint32_t die, uint32_t blk);
/* The erase of block @blk on die @die, if it is the operation last queued there, reclaims a GC
 * victim (not a block wear levelling emptied); nothing when it was not queued. */
void nh_sched_mark_victim(NhSched *s, uint32_t die, uint32_t blk);
/* A host read of @ppn on die @die at @now, if it suspends a GC operation: true, and *done is
 * when its data is out; false when the die is not in a suspendable GC operation. */
bool nh_sched_suspend(NhSched *s, struct NhNand *n, uint32_t die, uint32_t ppn, uint64_t now,
                      uint64_t *done);
/* GC operations queued now (sched.queued_ops: a fact of the moment, not a counter; the state
 * file does not keep it, as loading one drops what was queued). */
uint64_t nh_sched_queued(const NhSched *s);
/* The die time die @die owes the GC operations queued on it (their op_ns summed). */
static inline uint64_t nh_sched_owed(const NhSched *s, uint32_t die)
{
    return ((const NhSchedLoad *)(const void *)s)->owed[die];
}

/* Is an erase of block @blk queued (a host program into it would wait: nh_sched_wait_erase)? */
static inline bool nh_sched_erase_pending(const NhSched *s, uint32_t blk)
{
    return ((const NhSchedLoad *)(const void *)s)->erases[blk] != 0;
}
/* Forget what is queued and running (the clocks restart: a state file was loaded). */
void nh_sched_reset(NhSched *s);

#endif
