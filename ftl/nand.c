/* nand.c - geometry, cell presets and the die/bus timelines (contract in nand.h). */
#include "nand.h"

void nh_cell_preset(NhCell cell, NhTiming *t)
{
    /* tR, tPROG, tBERS in ns and the rated P/E cycles; sources in docs/engine.md */
    static const struct { uint64_t r, p, e; uint32_t pe; } presets[] = {
        [NH_CELL_SLC]   = {  25000,  200000, 1500000, 100000 },  /* seed 000 */
        [NH_CELL_MLC]   = {  60000,  800000, 1500000,  10000 },  /* seed 002; P/E seed 000 */
        [NH_CELL_TLC]   = {  80000, 2926000, 3000000,   3000 },  /* SimpleSSD, mean of L/C/U */
        [NH_CELL_QLC]   = { 122000, 1860000, 6340000,   1000 },  /* Intel 96L QLC (PACA) */
        [NH_CELL_ZNAND] = {   3000,  100000, 1500000, 100000 },  /* Samsung Z-NAND, ISSCC'18 */
    };
    t->t_read = presets[cell].r;
    t->t_prog = presets[cell].p;
    t->t_erase = presets[cell].e;
    t->pe_cycles = presets[cell].pe;
}

void nh_geometry_init(NhGeometry *g, const NhConfig *cfg)
{
    g->channels = cfg->channels;
    g->ways = cfg->ways;
    g->dies = cfg->dies;
    g->planes = cfg->planes;
    g->blocks = cfg->blocks;
    g->pages = cfg->pages;
    g->page_size = cfg->page_size;
    g->ndies = g->channels * g->ways * g->dies;
    g->npu = g->ndies * g->planes;
    g->nblocks = (uint64_t)g->npu * g->blocks;
    g->npages = g->nblocks * g->pages;
}

NhNand *nh_nand_new(const NhConfig *cfg, NhStats *stats)
{
    NhNand *n = g_new0(NhNand, 1);

    nh_geometry_init(&n->g, cfg);
    nh_cell_preset(cfg->cell, &n->t);
    if (cfg->t_read) {
        n->t.t_read = cfg->t_read;
    }
    if (cfg->t_prog) {
        n->t.t_prog = cfg->t_prog;
    }
    if (cfg->t_erase) {
        n->t.t_erase = cfg->t_erase;
    }
    if (cfg->pe_cycles) {
        n->t.pe_cycles = cfg->pe_cycles;
    }
    /* MB/s is 10^6 B/s, so ns = bytes * 1000 / MBps; round up so a transfer never costs 0 */
    n->t.t_xfer = ((uint64_t)cfg->page_size * 1000 + cfg->channel_mbps - 1) / cfg->channel_mbps;
    n->wl = cfg->one_shot == NH_ON ? 3 : 1;
    n->stats = stats;
    n->op = g_new0(NhDieOp, n->g.ndies);
    n->die_free = g_new0(uint64_t, n->g.ndies);
    n->bus_free = g_new0(uint64_t, n->g.channels);
    n->erase_count = g_new0(uint32_t, n->g.nblocks);
    n->next_page = g_new0(uint32_t, n->g.nblocks);
    return n;
}

void nh_nand_free(NhNand *n)
{
    if (n) {
        g_free(n->op);
        g_free(n->die_free);
        g_free(n->bus_free);
        g_free(n->erase_count);
        g_free(n->next_page);
        g_free(n);
    }
}

static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

void nh_nand_batch_begin(NhNand *n)
{
    n->batch = ++n->batches;
}

void nh_nand_batch_end(NhNand *n)
{
    n->batch = 0;
}

/* The die's latest operation, if page @ppn may join it as a program (@program) or a read. */
static NhDieOp *joinable(NhNand *n, uint32_t die, uint32_t ppn, bool program, uint64_t *slot)
{
    NhDieOp *op = &n->op[die];
    uint32_t page = ppn % n->g.pages;
    uint32_t plane = nh_pu_of_block(n, nh_block_of(n, ppn)) % n->g.planes;
    uint32_t wl = program ? n->wl : 1;

    *slot = 1ull << (plane * wl + page % wl);
    if (!n->batch || op->batch != n->batch || op->program != program ||
        n->die_free[die] != op->done || op->wordline != page / wl || (op->slots & *slot)) {
        return NULL;
    }
    return op;
}

static void record(NhNand *n, uint32_t die, uint32_t ppn, bool program, uint64_t slot,
                   uint64_t sensed, uint64_t done)
{
    n->op[die] = (NhDieOp){
        .batch = n->batch, .sensed = sensed, .done = done, .slots = slot,
        .wordline = ppn % n->g.pages / (program ? n->wl : 1), .program = program,
    };
}

/* What an operation on page @ppn books: its die's and its channel's timelines, and the die's
 * latest operation when the page may join it. */
typedef struct Target {
    uint32_t blk, die;
    uint64_t *die_free, *bus_free;
    uint64_t slot;
    NhDieOp *op;
} Target;

static Target target(NhNand *n, uint32_t ppn, bool program)
{
    Target x = { .blk = nh_block_of(n, ppn) };

    x.die = nh_die_of_block(n, x.blk);
    x.die_free = &n->die_free[x.die];
    x.bus_free = &n->bus_free[nh_channel_of_block(n, x.blk)];
    x.op = joinable(n, x.die, ppn, program, &x.slot);
    return x;
}

/* A page read; @written: the page must have been programmed (the discipline check). */
static uint64_t read_page(NhNand *n, uint32_t ppn, uint64_t now, bool written)
{
    Target x = target(n, ppn, false);
    uint64_t sensed, done;

    if (written && ppn % n->g.pages >= n->next_page[x.blk]) {
        n->violations++;
    }
    if (x.op) {
        /* sensed with the others in one tR; its transfer follows theirs */
        sensed = x.op->sensed;
        done = max64(max64(sensed, now), *x.bus_free) + n->t.t_xfer;
        x.op->slots |= x.slot;
        x.op->done = done;
    } else {
        sensed = max64(now, *x.die_free) + n->t.t_read;
        done = max64(sensed, *x.bus_free) + n->t.t_xfer;
        record(n, x.die, ppn, false, x.slot, sensed, done);
        n->stats->nand_read_ops++;
    }

    /* the die's page register holds the data until the bus has moved it out */
    *x.die_free = done;
    *x.bus_free = done;
    n->stats->nand_page_reads++;
    return done;
}

uint64_t nh_nand_read(NhNand *n, uint32_t ppn, uint64_t now)
{
    return read_page(n, ppn, now, true);
}

uint64_t nh_nand_read_unwritten(NhNand *n, uint32_t pu, uint64_t now)
{
    return read_page(n, pu * n->g.blocks * n->g.pages, now, false);
}

uint64_t nh_nand_busy_until(const NhNand *n)
{
    uint64_t t = 0;

    for (uint32_t d = 0; d < n->g.ndies; d++) {
        t = max64(t, n->die_free[d]);
    }
    for (uint32_t c = 0; c < n->g.channels; c++) {
        t = max64(t, n->bus_free[c]);
    }
    return t;
}

uint64_t nh_nand_program(NhNand *n, uint32_t ppn, uint64_t now)
{
    Target x = target(n, ppn, true);
    uint64_t moved, done;

    if (x.op) {
        /* its data follows the others into the die's registers; the one tPROG starts after */
        moved = max64(max64(x.op->sensed, now), *x.bus_free) + n->t.t_xfer;
        x.op->slots |= x.slot;
        x.op->sensed = moved;
    } else {
        /* data goes into the die's page register, so the die must be free when the transfer
         * starts */
        moved = max64(max64(now, *x.die_free), *x.bus_free) + n->t.t_xfer;
        record(n, x.die, ppn, true, x.slot, moved, 0);
        x.op = &n->op[x.die];
        n->stats->nand_program_ops++;
    }
    done = moved + n->t.t_prog;
    x.op->done = done;

    /* ascending order; erased pages may be skipped (block-mapped FTLs leave holes) */
    if (ppn % n->g.pages < n->next_page[x.blk]) {
        n->violations++;
    }
    n->next_page[x.blk] = ppn % n->g.pages + 1;

    *x.bus_free = moved;
    *x.die_free = done;
    n->stats->nand_page_programs++;
    return done;
}

uint64_t nh_nand_erase(NhNand *n, uint32_t blk, uint64_t now)
{
    uint64_t *die = &n->die_free[nh_die_of_block(n, blk)];
    uint64_t done = max64(now, *die) + n->t.t_erase;

    *die = done;
    n->next_page[blk] = 0;
    n->erase_count[blk]++;
    n->stats->nand_block_erases++;
    return done;
}

void nh_nand_wear(const NhNand *n, uint32_t *min, uint32_t *max, double *mean)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    uint64_t sum = 0;

    for (uint64_t b = 0; b < n->g.nblocks; b++) {
        uint32_t c = n->erase_count[b];
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        sum += c;
    }
    *min = n->g.nblocks ? lo : 0;
    *max = hi;
    *mean = n->g.nblocks ? (double)sum / (double)n->g.nblocks : 0.0;
}
