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
 *    its timeline (no multi-plane commands yet).  Booking is first come, first served: an
 *    operation booked later never overtakes one booked earlier on the same resource, which is how
 *    host I/O ends up waiting behind GC booked before it.
 *  - Each operation counts itself in the NAND counters of the NhStats it was given and in the
 *    block's erase count; it returns the time the operation finishes.
 */
#ifndef NH_NAND_H
#define NH_NAND_H

#include <stdint.h>
#include <glib.h>

#include "config.h"
#include "stats.h"

typedef struct NhGeometry {
    uint32_t channels, ways, dies, planes, blocks, pages, page_size;
    uint32_t npu;           /* planes in the device: the unit of write striping */
    uint32_t ndies;         /* dies in the device: the unit of timing */
    uint64_t nblocks;       /* all blocks */
    uint64_t npages;        /* all physical pages */
} NhGeometry;

typedef struct NhTiming {
    uint64_t t_read, t_prog, t_erase;   /* ns */
    uint64_t t_xfer;                    /* one page over the channel bus, ns */
    uint32_t pe_cycles;
} NhTiming;

typedef struct NhNand {
    NhGeometry g;
    NhTiming   t;
    NhStats   *stats;
    uint64_t  *die_free;        /* [ndies] next-free time */
    uint64_t  *bus_free;        /* [channels] next-free time */
    uint32_t  *erase_count;     /* [nblocks] */
    /* What the chips would enforce: pages of a block are programmed once each, in ascending
     * order (erased pages may be skipped and stay unusable until the erase), after an erase,
     * and only pages below the highest programmed one are read.  Violations are counted, not
     * fatal, so tests can assert that an FTL never commits one. */
    uint32_t  *next_page;       /* [nblocks] one past the highest programmed page */
    uint64_t   violations;
} NhNand;

/* Presets for cell types (see docs/engine.md for sources). */
void nh_cell_preset(NhCell cell, NhTiming *t);

/* Fill @g from @cfg, whose blocks must be resolved (nonzero). */
void nh_geometry_init(NhGeometry *g, const NhConfig *cfg);

NhNand *nh_nand_new(const NhConfig *cfg, NhStats *stats);
void nh_nand_free(NhNand *nand);

static inline uint32_t nh_block_of(const NhNand *n, uint32_t ppn) { return ppn / n->g.pages; }
static inline uint32_t nh_pu_of_block(const NhNand *n, uint32_t blk) { return blk / n->g.blocks; }
static inline uint32_t nh_die_of_block(const NhNand *n, uint32_t blk)
{
    return blk / (n->g.blocks * n->g.planes);
}
static inline uint32_t nh_channel_of_block(const NhNand *n, uint32_t blk)
{
    return blk / (n->g.blocks * n->g.planes * n->g.dies * n->g.ways);
}

uint64_t nh_nand_read(NhNand *n, uint32_t ppn, uint64_t now);
uint64_t nh_nand_program(NhNand *n, uint32_t ppn, uint64_t now);
uint64_t nh_nand_erase(NhNand *n, uint32_t blk, uint64_t now);

/* Erase-count summary over all blocks. */
void nh_nand_wear(const NhNand *n, uint32_t *min, uint32_t *max, double *mean);

#endif
