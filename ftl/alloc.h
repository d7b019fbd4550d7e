/*
 * alloc.h - write allocation for the page-mapped FTLs (page, dftl): which plane a host page is
 * programmed on.
 *
 * Contract:
 *  - alloc=static (default): host pages go to the planes round robin in a fixed order (channel
 *    fastest, then way, die, plane; blocks.c), whatever the dies are doing.  Where a page lands
 *    depends only on the request sequence, so every counter (host, nand, ftl, wear, waf) is
 *    independent of time: the device, whose requests arrive on QEMU's clock, and the simulator
 *    agree on them (tests/guest/test_agreement.py).
 *  - alloc=dynamic: a host page goes to the plane whose die would be free earliest if it first
 *    ran the garbage collection it owes: max(now, the die's next-free time) plus the die time
 *    of the GC operations queued on it (nh_sched_owed).  Ties (an idle device) are broken in the static order from where it stands, so a
 *    request on an idle device is striped as under static.  A die with GC to do thus gets fewer
 *    host pages and does its GC in the time that leaves it, and the closed loop no longer
 *    waits on the die with the most GC (docs/engine.md, Timing).  Placement, and with it WAF,
 *    GC and wear, then depends on time: it is not the default.
 *    A plane whose next block still waits for its queued erase is taken last, so that host
 *    pages go where they need not wait for foreground GC while any plane can take them.
 *  - alloc=dynamic, a host page that cannot start when its request arrives (a partial page
 *    first reads the rest of its old copy, on the die that holds it; DFTL may first read a
 *    translation page): its die would idle until then, a gap nothing else could use (GC runs
 *    from a die's next-free time on, and the page is booked after the gap), so the die first
 *    runs the queued GC operations that end by then (nh_sched_fill).  Measured on
 *    cloudPhysicsIO (tests/unit/test-sim.c, /trace/sim/rmw-bursts): without it the largest
 *    burst left 60 die-seconds idle in such gaps while its dies were busy 31, and dynamic was
 *    3.8x static's read mean.  alloc=static does not (its timings are kept as recorded).
 *  - A plane that cannot take the page (blocks.c's free-space rules) is passed over as under
 *    static.  Multi-plane programs still form for the pages of one request: once every die
 *    has a page of it, the dies tie again and the static order hands the next page to another
 *    plane of a die (measured: 512 pages in 256 program operations with planes=2, as static).
 *  - Only FTLs with NH_FTL_DYNAMIC_ALLOC allocate host pages plane by plane; stripe-merge
 *    places a stripe on every plane itself; sched=fcfs books GC at once and is kept only to
 *    reproduce earlier results.  The part's check refuses the rest, naming the key.
 */
#ifndef NH_ALLOC_H
#define NH_ALLOC_H

#include "ftl.h"

typedef enum NhAlloc { NH_ALLOC_STATIC, NH_ALLOC_DYNAMIC } NhAlloc;

/* added to the rank of a plane that would wait for GC: above any time of a run (146 years) */
#define NH_ALLOC_LAST (1ull << 62)

/* The part's settings (part.h: nh_part_alloc, key alloc). */
typedef struct NhAllocSettings {
    NhAlloc alloc;
} NhAllocSettings;

/* alloc=dynamic: the rank of a plane on die @die for a host page at @now, lowest first: when
 * the die would be free after the GC it owes (see above); @next_blk is the free block the
 * plane would open for the page (UINT32_MAX: its frontier has room), and a plane whose next
 * block still waits for its queued erase comes after every plane that does not (its host page
 * would wait for the die's queue up to that erase: foreground GC). */
static inline uint64_t nh_alloc_rank(const NhNand *n, uint32_t die, uint32_t next_blk,
                                     uint64_t now)
{
    uint64_t t = MAX(now, n->die_free[die]) + nh_sched_owed(n->sched, die);

    if (next_blk != UINT32_MAX && nh_sched_erase_pending(n->sched, next_blk)) {
        t += NH_ALLOC_LAST;
    }
    return t;
}

#endif
