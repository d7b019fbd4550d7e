/* nand.c - geometry, cell presets and the die/bus timelines (contract in nand.h). */
#include "nand.h"

#include <string.h>

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

NhNand *nh_nand_new(const NhConfig *cfg, NhStats *stats, uint64_t *sched_counters)
{
    NhNand *n = g_new0(NhNand, 1);
    uint64_t op_ns[3];

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
    /* what a queued operation will hold its die for (with its transfer, as the die is held) */
    op_ns[NH_FOP_READ] = n->t.t_read + n->t.t_xfer;
    op_ns[NH_FOP_PROGRAM] = n->t.t_xfer + n->t.t_prog;
    op_ns[NH_FOP_ERASE] = n->t.t_erase;
    n->sched = nh_sched_new(cfg, n->g.ndies, n->g.nblocks, sched_counters, op_ns);
    n->op = g_new0(NhDieOp, n->g.ndies);
    n->die_free = g_new0(uint64_t, n->g.ndies);
    n->bus = g_new0(NhBus, n->g.channels);
    n->erase_count = g_new0(uint32_t, n->g.nblocks);
    n->next_page = g_new0(uint32_t, n->g.nblocks);
    return n;
}

void nh_nand_free(NhNand *n)
{
    if (n) {
        nh_sched_free(n->sched);
        g_free(n->op);
        g_free(n->die_free);
        g_free(n->bus);
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

/* Transfers all take t_xfer, so a gap fits one when it is that long.  Those ending before the
 * horizon are dropped (nothing is booked before it any more); beyond NH_BUS_KEPT transfers the
 * oldest is dropped too and the bus counts as busy until it ended (a trace whose requests all
 * arrive at once would otherwise keep every transfer). */

/* The @i-th kept run of bus @b, oldest first. */
static inline NhBusRun *run_at(NhBus *b, uint32_t i)
{
    return &b->run[(b->head + i) & (NH_BUS_KEPT - 1)];
}

/* Forget the oldest transfers: those ending by the horizon, and beyond NH_BUS_KEPT the oldest
 * (the floor then keeps the bus busy until they ended). */
static void bus_drop(NhNand *n, NhBus *b, uint64_t x)
{
    while (b->len) {
        NhBusRun *r = run_at(b, 0);
        uint64_t in_run = (r->end - r->start) / x;
        uint64_t k = n->horizon > r->start ? MIN(in_run, (n->horizon - r->start) / x) : 0;

        if (b->transfers >= NH_BUS_KEPT) {
            k = MAX(k, MIN(in_run, b->transfers - (NH_BUS_KEPT - 1)));
        }
        if (!k) {
            return;
        }
        r->start += k * x;
        b->floor = MAX(b->floor, r->start);
        b->transfers -= k;
        if (r->start < r->end) {
            return;
        }
        b->head++;
        b->len--;
    }
}

uint64_t nh_nand_transfer(NhNand *n, uint32_t ch, uint64_t ready)
{
    NhBus *b = &n->bus[ch];
    uint64_t x = n->t.t_xfer, at;
    uint32_t lo, hi, i;
    NhBusRun *prev, *next;

    n->stats->nand_channel_busy_ns += x;
    if (!nh_sched_defers(n->sched)) {
        /* sched=fcfs: after everything booked on the bus, gaps or not (the earlier model) */
        b->last = MAX(ready, b->last) + x;
        return b->last;
    }
    bus_drop(n, b, x);
    /* the first run that ends after @ready, then the first gap from there; mostly the bus is
     * free from @ready on, after all of them */
    at = MAX(ready, b->floor);
    lo = 0;
    hi = b->len;
    if (!hi || run_at(b, hi - 1)->end <= at) {
        lo = hi;
    }
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (run_at(b, mid)->end <= at) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for (i = lo; i < b->len && run_at(b, i)->start < at + x; i++) {
        at = run_at(b, i)->end;
    }
    /* [at, at + x) lies between runs i - 1 and i: it extends them, joins them, or is a new
     * run (mostly the newest: few or none move) */
    prev = i > 0 && run_at(b, i - 1)->end == at ? run_at(b, i - 1) : NULL;
    next = i < b->len && run_at(b, i)->start == at + x ? run_at(b, i) : NULL;
    if (prev && next) {
        prev->end = next->end;
        for (uint32_t j = i; j + 1 < b->len; j++) {
            *run_at(b, j) = *run_at(b, j + 1);
        }
        b->len--;
    } else if (prev) {
        prev->end = at + x;
    } else if (next) {
        next->start = at;
    } else {
        for (uint32_t j = b->len; j > i; j--) {
            *run_at(b, j) = *run_at(b, j - 1);
        }
        *run_at(b, i) = (NhBusRun){ at, at + x };
        b->len++;
    }
    b->transfers++;
    b->last = MAX(b->last, at + x);
    return at + x;
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
    uint32_t ch;
    uint64_t *die_free;
    uint64_t slot;
    NhDieOp *op;
} Target;

static Target target(NhNand *n, uint32_t ppn, bool program)
{
    Target x = { .blk = nh_block_of(n, ppn) };

    x.die = nh_die_of_block(n, x.blk);
    x.die_free = &n->die_free[x.die];
    x.ch = nh_channel_of_block(n, x.blk);
    x.op = joinable(n, x.die, ppn, program, &x.slot);
    return x;
}

/* A die's time from @from to @to is busy (@to > @from counts; an operation joining another
 * extends it from the other's end). */
static void die_busy(NhNand *n, uint64_t from, uint64_t to)
{
    n->stats->nand_die_busy_ns += to > from ? to - from : 0;
}

/* Book read @ppn from @now; *joined: it shared the tR of the die's latest operation. */
static uint64_t book_read(NhNand *n, uint32_t ppn, uint64_t now, bool *joined)
{
    Target x = target(n, ppn, false);
    uint64_t sensed, done, start = max64(now, *x.die_free);

    *joined = x.op != NULL;
    if (x.op) {
        /* sensed with the others in one tR; its transfer follows theirs */
        sensed = x.op->sensed;
        done = nh_nand_transfer(n, x.ch, max64(sensed, now));
        x.op->slots |= x.slot;
        x.op->done = done;
        start = *x.die_free;
    } else {
        sensed = start + n->t.t_read;
        done = nh_nand_transfer(n, x.ch, sensed);
        record(n, x.die, ppn, false, x.slot, sensed, done);
    }
    /* the die's page register holds the data until the bus has moved it out */
    die_busy(n, start, done);
    *x.die_free = done;
    return done;
}

static uint64_t book_program(NhNand *n, uint32_t ppn, uint64_t now, bool *joined)
{
    Target x = target(n, ppn, true);
    uint64_t moved, done, start;

    *joined = x.op != NULL;
    if (x.op) {
        /* its data follows the others into the die's registers; the one tPROG starts after */
        moved = nh_nand_transfer(n, x.ch, max64(x.op->sensed, now));
        x.op->slots |= x.slot;
        x.op->sensed = moved;
        start = *x.die_free;
    } else {
        /* data goes into the die's page register, so the die must be free when the transfer
         * starts */
        moved = nh_nand_transfer(n, x.ch, max64(now, *x.die_free));
        start = moved - n->t.t_xfer;
        record(n, x.die, ppn, true, x.slot, moved, 0);
        x.op = &n->op[x.die];
    }
    done = moved + n->t.t_prog;
    x.op->done = done;
    die_busy(n, start, done);
    *x.die_free = done;
    return done;
}

static uint64_t book_erase(NhNand *n, uint32_t blk, uint64_t now)
{
    uint64_t *die = &n->die_free[nh_die_of_block(n, blk)];
    uint64_t start = max64(now, *die);

    *die = start + n->t.t_erase;
    die_busy(n, start, *die);
    return *die;
}

uint64_t nh_nand_run(NhNand *n, NhFlashOp op, uint64_t at)
{
    uint64_t batch = n->batch, done;
    bool joined;

    n->batch = 0;   /* a queued operation joins no host batch */
    switch (op.kind) {
    case NH_FOP_READ:
        done = book_read(n, op.addr, at, &joined);
        break;
    case NH_FOP_PROGRAM:
        done = book_program(n, op.addr, at, &joined);
        break;
    default:
        done = book_erase(n, op.addr, at);
        break;
    }
    n->batch = batch;
    return done;
}

/* Whether GC operation @op is queued instead of booked; counts its operation if so. */
static bool queued(NhNand *n, NhFlashOp op, uint32_t die, uint64_t now, uint64_t *ops)
{
    if (!n->gc_depth || !nh_sched_defers(n->sched)) {
        return false;
    }
    nh_sched_queue(n->sched, die, op, now);
    if (ops) {
        (*ops)++;
    }
    return true;
}

/* A page read; @written: the page must have been programmed (the discipline check). */
static uint64_t read_page(NhNand *n, uint32_t ppn, uint64_t now, bool written)
{
    uint32_t blk = nh_block_of(n, ppn), die = nh_die_of_block(n, blk);
    uint64_t done;
    bool joined;

    if (written && ppn % n->g.pages >= n->next_page[blk]) {
        n->violations++;
    }
    n->stats->nand_page_reads++;
    if (n->untimed || queued(n, (NhFlashOp){ ppn, NH_FOP_READ }, die, now, &n->stats->nand_read_ops)) {
        return now;
    }
    if (!n->gc_depth && nh_sched_suspend(n->sched, n, die, ppn, now, &done)) {
        n->stats->nand_read_ops++;
        return done;
    }
    done = book_read(n, ppn, now, &joined);
    n->stats->nand_read_ops += !joined;
    return done;
}

uint64_t nh_nand_read(NhNand *n, uint32_t ppn, uint64_t now)
{
    return read_page(n, ppn, now, true);
}

uint64_t nh_nand_read_unwritten(NhNand *n, uint32_t ppn, uint64_t now)
{
    return read_page(n, ppn, now, false);
}

uint64_t nh_nand_busy_until(const NhNand *n)
{
    uint64_t t = 0;

    for (uint32_t d = 0; d < n->g.ndies; d++) {
        t = max64(t, n->die_free[d]);
    }
    for (uint32_t c = 0; c < n->g.channels; c++) {
        t = max64(t, n->bus[c].last);
    }
    return t;
}

uint64_t nh_nand_program(NhNand *n, uint32_t ppn, uint64_t now)
{
    uint32_t blk = nh_block_of(n, ppn), die = nh_die_of_block(n, blk);
    uint64_t done;
    bool joined;

    /* ascending order; erased pages may be skipped (block-mapped FTLs leave holes) */
    if (ppn % n->g.pages < n->next_page[blk]) {
        n->violations++;
    }
    n->next_page[blk] = ppn % n->g.pages + 1;
    n->stats->nand_page_programs++;
    if (n->untimed ||
        queued(n, (NhFlashOp){ ppn, NH_FOP_PROGRAM }, die, now, &n->stats->nand_program_ops)) {
        return now;
    }
    if (!n->gc_depth) {
        nh_sched_wait_erase(n->sched, n, die, blk);
    }
    done = book_program(n, ppn, now, &joined);
    n->stats->nand_program_ops += !joined;
    return done;
}

uint64_t nh_nand_erase(NhNand *n, uint32_t blk, uint64_t now)
{
    n->next_page[blk] = 0;
    n->erase_count[blk]++;
    n->stats->nand_block_erases++;
    if (n->untimed || queued(n, (NhFlashOp){ blk, NH_FOP_ERASE }, nh_die_of_block(n, blk), now, NULL)) {
        return now;
    }
    return book_erase(n, blk, now);
}

void nh_nand_gc_begin(NhNand *n)
{
    n->gc_depth++;
}

void nh_nand_gc_end(NhNand *n)
{
    g_assert(n->gc_depth);
    n->gc_depth--;
}

void nh_nand_advance(NhNand *n, uint64_t t)
{
    nh_sched_advance(n->sched, n, t);
    /* requests arrive in time order and what the scheduler holds starts after its die is
     * free, which is now after t: nothing is booked before t any more */
    if (t != UINT64_MAX) {
        n->horizon = MAX(n->horizon, t);
    }
}

void nh_nand_clock_reset(NhNand *n)
{
    memset(n->die_free, 0, sizeof(uint64_t) * n->g.ndies);
    memset(n->bus, 0, sizeof(NhBus) * n->g.channels);
    n->horizon = 0;
    memset(n->op, 0, sizeof(NhDieOp) * n->g.ndies);
    nh_sched_reset(n->sched);
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
