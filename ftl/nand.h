/*
 * nand.h - NAND geometry, physical addresses and the timing model.
 *
 * Contract:
 *  - A physical page number (PPN) is block * pages + page, and a block number is
 *    pu * blocks + block-in-plane, where a parallel unit (pu) is one plane:
 *    pu = ((channel * ways + way) * dies + die) * planes + plane.  PPNs fit in 32 bits
 *    (checked at creation) so that mapping tables cost 4 bytes per page.
 *  - Timing: every die and every channel bus has a next-free time.  A read keeps the die busy
 *    for tR and then moves the page over the bus; a program moves the page over the bus and then
 *    keeps the die busy for tPROG; an erase keeps the die busy for tBERS.  Planes of one die share
 *    its timeline.  An operation is booked after what is booked on its die; with sched=prio its
 *    transfer takes the first gap of the channel bus it fits in from when it can start (a
 *    transfer booked for a busy die's later program does not hold the bus until then), with
 *    sched=fcfs it follows every transfer booked before it.  When an operation is
 *    booked is the scheduler's choice (scheduler.h): at once, or for the operations of garbage
 *    collection (between nh_nand_gc_begin and _end) in the die's idle time.  The time a die and
 *    a bus are busy is counted (nand.die_busy_ns, nand.channel_busy_ns).
 *  - Multi-plane and one-shot operations: between nh_nand_batch_begin() and _end() (an FTL
 *    issuing pages together; nested pairs are one batch, the outermost's), a page program
 *    joins the die's latest operation if nothing else was booked on the die since, it is a
 *    program of the same word line (the same page offset; with one-shot, the same group of 3
 *    pages) and its plane and page are not in it yet: its transfer follows the others on the
 *    bus and one tPROG, started after the last transfer, covers them all.  Reads likewise share
 *    one tR (the same flash page, or the same page offset of another plane), their transfers
 *    serial.  On one plane, every page of an operation is in one block.  Outside a batch every
 *    operation is a page of its own.
 *  - Mapping units (map-unit below page-size): a "page" here is a mapping unit (the geometry's
 *    page_size and pages are the unit's), a flash page is sub consecutive units of a block, a
 *    transfer moves one unit (a read moves only the units read) and a program operation covers
 *    wl = sub (x 3 with one-shot) units.  The units of a flash page must be programmed in
 *    order in one batch, all of them by its end: anything else is a discipline violation.
 *  - Each operation counts itself in the NAND counters of the NhStats it was given and in the
 *    block's erase count when it is issued; it returns the time the operation finishes (for an
 *    operation the scheduler queued, the time it was issued: nobody waits for it).
 */
#ifndef NH_NAND_H
#define NH_NAND_H

#include <stdint.h>
#include <glib.h>

#include "config.h"
#include "stats.h"
#include "scheduler.h"

typedef struct NhGeometry {
    uint32_t channels, ways, dies, planes, blocks, pages, page_size;
    uint32_t npu;           /* planes in the device: the unit of write striping */
    uint32_t ndies;         /* dies in the device: the unit of timing */
    uint64_t nblocks;       /* all blocks */
    uint64_t npages;        /* all physical pages */
} NhGeometry;

/* Division of a 32-bit value by a divisor fixed when the device is made, as one multiplication
 * by its reciprocal (exact for every 32-bit dividend: Lemire, Kaser and Kurz, "Faster Remainder
 * by Direct Computation", 2019).  Every flash operation finds its block, plane, die and channel
 * by dividing by the geometry, and those divisions were a sixth of sched=prio's replay (perf). */
typedef struct NhDivisor {
    uint64_t m;     /* 2^64 / d rounded up; 0 for d = 1, whose 2^64 does not fit */
    uint32_t d;
} NhDivisor;

static inline NhDivisor nh_divisor(uint32_t d)
{
    return (NhDivisor){ d > 1 ? UINT64_MAX / d + 1 : 0, d };
}

static inline uint32_t nh_div(uint32_t x, NhDivisor v)
{
#ifdef __SIZEOF_INT128__
    return v.m ? (uint32_t)(((unsigned __int128)v.m * x) >> 64) : x;
#else
    return x / v.d;
#endif
}

static inline uint32_t nh_mod(uint32_t x, NhDivisor v)
{
    return x - nh_div(x, v) * v.d;
}

typedef struct NhTiming {
    uint64_t t_read, t_prog, t_erase;   /* ns */
    uint64_t t_xfer;                    /* one page over the channel bus, ns */
    uint32_t pe_cycles;
} NhTiming;

/* The latest operation booked on a die, which a page of the same batch may join. */
typedef struct NhDieOp {
    uint64_t batch;         /* 0: none */
    uint64_t sensed;        /* read: tR ends; program: the last transfer ends */
    uint64_t done;
    uint64_t slots;         /* bit plane * wl + page % wl of every page in it */
    uint32_t wordline;      /* page offset / wl */
    bool     program;
    /* the block each plane with a page in it has them in: pages of one word line (with
     * map-unit, one flash page) of two blocks of a plane are two operations */
    uint32_t blk[NH_PLANES_MAX];
} NhDieOp;

/* Transfers a bus keeps (nand.c).  Beyond it the oldest is dropped and the bus counts as busy
 * until it ended, a floor that turns the bus first come first served behind everything booked
 * ahead of it, so it must hold what a burst books: at 256, cloudPhysicsIO (2 GiB, fill 1, open
 * loop, arrivals a second apart in bursts of thousands of pages) had its dies held 508 s waiting
 * for a bus that was busy 17 s in all (read mean 449 ms under alloc=dynamic, 117 ms under
 * static), and steady-state random writes kept the dies busy 57% of the run; at 16384, 0.2 s
 * (49 and 13 ms), 99.9% busy. */
#define NH_BUS_KEPT 16384

/* A run of transfers booked back to back on a bus: [start, end), a multiple of t_xfer long. */
typedef struct NhBusRun {
    uint64_t start, end;
} NhBusRun;

/* Runs a chunk of a bus holds: a booking into a gap moves at most this many. */
#define NH_BUS_CHUNK 64

typedef struct NhBusChunk {
    uint32_t lo, hi;                /* runs [lo, hi) in use, ascending */
    NhBusRun run[NH_BUS_CHUNK];
} NhBusChunk;

/* A channel bus: the transfers booked on it that have not ended by the horizon, in time order,
 * as runs of back-to-back transfers.  Runs, not single transfers: a busy bus books thousands
 * back to back.  In chunks, not one array: GC's transfers fill gaps hundreds of runs before the
 * newest, and moving every later run to insert one was half of sched=prio's replay (200k random
 * writes after --fill 1, QD 32); the oldest runs are dropped at almost every booking, so a
 * chunk's start moves rather than its runs. */
typedef struct NhBus {
    NhBusChunk **chunk;             /* [nchunks] in time order, none empty */
    uint32_t  nchunks, cap;
    NhBusChunk *spare;              /* an emptied chunk kept for the next one needed */
    uint32_t  transfers;            /* transfers in the runs, at most NH_BUS_KEPT */
    uint64_t  last;             /* when the latest transfer ends */
    uint64_t  floor;            /* busy before this: transfers no longer kept ended there */
} NhBus;

typedef struct NhNand {
    NhGeometry g;
    NhTiming   t;
    /* pages one program operation covers per plane: sub, x 3 with one-shot */
    uint32_t   wl;
    uint32_t   sub;         /* pages (mapping units) a flash page holds: page-size / map-unit */
    /* by pages a block, blocks a plane, a die and a channel, planes a die, wl and sub */
    NhDivisor  div_pages, div_plane, div_die, div_channel, div_planes, div_wl, div_sub;
    uint64_t   batch;       /* current batch id; 0 outside a batch */
    uint32_t   batch_depth; /* nested nh_nand_batch_begin calls: the outermost is the batch */
    uint64_t   queued_reads; /* the batch queued reads run in (map-unit: units of a page join) */
    uint64_t   batches;     /* ids handed out */
    NhDieOp   *op;          /* [ndies] */
    NhStats   *stats;
    NhSched   *sched;
    uint32_t   gc_depth;    /* nh_nand_gc_begin calls not yet ended */
    bool       untimed;     /* operations count and change state but book no time */
    uint64_t  *die_free;        /* [ndies] next-free time */
    NhBus     *bus;             /* [channels] */
    uint64_t   horizon;         /* no operation is booked to start before this any more */
    uint32_t  *erase_count;     /* [nblocks] */
    /* What the chips would enforce: pages of a block are programmed once each, in ascending
     * order (erased pages may be skipped and stay unusable until the erase), after an erase,
     * and only pages below the highest programmed one are read.  Violations are counted, not
     * fatal, so tests can assert that an FTL never commits one. */
    uint32_t  *next_page;       /* [nblocks] one past the highest programmed page */
    /* sub > 1: [nblocks] the batch that began the flash page being programmed, and how many
     * blocks have a flash page begun and not ended in this batch */
    uint64_t  *page_batch;
    uint32_t   partial;
    uint64_t   violations;
} NhNand;

/* Presets for cell types (see docs/engine.md for sources). */
void nh_cell_preset(NhCell cell, NhTiming *t);

/* Fill @g from @cfg, whose blocks must be resolved (nonzero). */
void nh_geometry_init(NhGeometry *g, const NhConfig *cfg);

/* @parts: its scheduler's settings and counters among them (part.h). */
NhNand *nh_nand_new(const NhConfig *cfg, NhStats *stats, const NhParts *parts);
void nh_nand_free(NhNand *nand);

static inline uint32_t nh_block_of(const NhNand *n, uint32_t ppn)
{
    return nh_div(ppn, n->div_pages);
}
/* Page @ppn's offset in its block. */
static inline uint32_t nh_page_in_block(const NhNand *n, uint32_t ppn)
{
    return nh_mod(ppn, n->div_pages);
}
static inline uint32_t nh_pu_of_block(const NhNand *n, uint32_t blk)
{
    return nh_div(blk, n->div_plane);
}
static inline uint32_t nh_die_of_block(const NhNand *n, uint32_t blk)
{
    return nh_div(blk, n->div_die);
}
static inline uint32_t nh_channel_of_block(const NhNand *n, uint32_t blk)
{
    return nh_div(blk, n->div_channel);
}

/* Plane @i of the write striping order: channel changes fastest, then way, die and plane, so
 * consecutive pages land on different buses (the page-mapped FTLs' pages, the hybrids' blocks). */
static inline uint32_t nh_stripe_pu(const NhGeometry *g, uint32_t i)
{
    uint32_t ch = i % g->channels, r = i / g->channels;
    uint32_t way = r % g->ways, die = (r / g->ways) % g->dies;
    uint32_t plane = r / g->ways / g->dies;

    return ((ch * g->ways + way) * g->dies + die) * g->planes + plane;
}

uint64_t nh_nand_read(NhNand *n, uint32_t ppn, uint64_t now);
/* The time and counts of a read of page @ppn for data the model never wrote (written before
 * the device's history began: unwritten-reads=flash, at the page the FTL's home hook names);
 * no discipline check.  In a batch it joins a multi-plane read as nh_nand_read does. */
uint64_t nh_nand_read_unwritten(NhNand *n, uint32_t ppn, uint64_t now);
/* When every die and channel is done with what is booked on it. */
uint64_t nh_nand_busy_until(const NhNand *n);
uint64_t nh_nand_program(NhNand *n, uint32_t ppn, uint64_t now);
uint64_t nh_nand_erase(NhNand *n, uint32_t blk, uint64_t now);

/* Pages read or programmed until _end() are issued together (see the contract above).  An
 * earlier page's program may end later than its call returned, when a later page joined its
 * operation: the caller takes the latest time any call of the batch returned. */
void nh_nand_batch_begin(NhNand *n);
void nh_nand_batch_end(NhNand *n);

/* Operations issued until _end() are garbage collection's (the scheduler may defer them);
 * nested calls are fine. */
void nh_nand_gc_begin(NhNand *n);
void nh_nand_gc_end(NhNand *n);
/* A request arrives at @t: the scheduler starts what idle dies may run before it. */
void nh_nand_advance(NhNand *n, uint64_t t);
/* Book a page transfer on channel @ch's bus in the first gap from @ready; when it ends. */
uint64_t nh_nand_transfer(NhNand *n, uint32_t ch, uint64_t ready);
/* For the scheduler: book operation @op, issued earlier, on its die and bus from @at. */
uint64_t nh_nand_run(NhNand *n, NhFlashOp op, uint64_t at);
/* The clocks restart at 0 (a state file was loaded): nothing booked, nothing queued. */
void nh_nand_clock_reset(NhNand *n);

/* Erase-count summary over all blocks. */
void nh_nand_wear(const NhNand *n, uint32_t *min, uint32_t *max, double *mean);

#endif
