/*
 * lbuf.h - what the l-buffer policy (lbuf.c) and its meta-simulation (lbuf-sim.c) share
 * (seed 002: Wu, "A Simulation-Assisted Tuning Strategy for SSD Write Buffers", NCTU 2011).
 */
#ifndef NH_LBUF_H
#define NH_LBUF_H

#include "buffer.h"

/* lbuf's own counters (docs/statistics.md), in env.counters: sessions, the alpha and lambda in
 * force (thousandths; alpha + 1), sessions won per instance, peak meta-simulation memory. */
enum { LB_SESSIONS, LB_ALPHA, LB_LAMBDA, LB_ALPHA_SESSIONS, LB_SIM_BYTES = LB_ALPHA_SESSIONS + 9 };

/* How an ordering reads a group through its link: last access (write request number), dirty
 * sectors and logical block. */
typedef void (*LbGetFn)(GList *link, uint64_t *stamp, uint32_t *size, uint64_t *lbn);

/*
 * The victim group among @bk (groups in size buckets, oldest first in each): the smallest group
 * density theta(g) = 1 / (a(g)^(1-alpha) * s(g)^(1+alpha)), a = age in write requests at @now
 * (at least 1), s = dirty sectors.  Only the oldest group of each size can win, so this looks at
 * one group per distinct size.  Ties go to the older group, then the larger, then the lower lbn.
 */
GList *lb_pick(NhBufBuckets *bk, LbGetFn get, double alpha, uint64_t now);

/* One meta-simulation instance: a write buffer and a log buffer run on the same write stream
 * with its own alpha, charged the flash time its choices would cost. */
typedef struct LbSim LbSim;

typedef struct LbSimParams {
    uint32_t  pages, spp;   /* per block, sectors per page */
    uint64_t  cap_sectors;  /* write buffer */
    uint32_t  log_blocks;   /* log buffer */
    bool      device;       /* memory-reduced form */
    uint64_t  t_read, t_prog, t_erase;
    const NhBufSink *sink;  /* is_mapped: which missing pages plugging must read */
} LbSimParams;

/* seed 002, Table 0.4: the device form's settings */
#define LB_RECORD_SECTORS   2       /* a record covers this many sectors */
#define LB_BIT_SECTORS      8       /* a bitmap bit covers this many sectors */
#define LB_SWITCH_SECTORS   24      /* records beyond this many sectors become a bitmap */
#define LB_LOG_RECORD_PAGES 4       /* log-buffer node: records up to this many pages */
#define LB_LOG_MAX_GROUPS   3000    /* early deletion beyond this many log-buffer groups */

LbSim *lb_sim_new(const LbSimParams *p, double alpha);
void lb_sim_free(LbSim *s);
/* a write request's sectors [sec0, sec1) of block @lbn, request number @seq; victims plug when
 * more than @lambda of their block's sectors are dirty */
void lb_sim_write(LbSim *s, uint64_t lbn, uint32_t sec0, uint32_t sec1, uint64_t seq,
                  double lambda);
/* flash time (ns) charged since the last call */
double lb_sim_take_cost(LbSim *s);
/* the memory this instance's form needs now, in bytes (the firmware's accounting, docs) */
uint64_t lb_sim_bytes(const LbSim *s);

#endif
