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

uint64_t nh_config_cell_t_prog(NhCell cell)
{
    NhTiming t;

    nh_cell_preset(cell, &t);
    return t.t_prog;
}

void nh_geometry_init(NhGeometry *g, const NhConfig *cfg)
{
    g->channels = cfg->channels;
    g->ways = cfg->ways;
    g->dies = cfg->dies;
    g->planes = cfg->planes;
    g->blocks = cfg->blocks;
    g->pages = nh_config_unit_pages(cfg);
    g->page_size = nh_config_unit(cfg);
    g->ndies = g->channels * g->ways * g->dies;
    g->npu = g->ndies * g->planes;
    g->nblocks = (uint64_t)g->npu * g->blocks;
    g->npages = g->nblocks * g->pages;
}

NhNand *nh_nand_new(const NhConfig *cfg, NhStats *stats, const NhParts *parts)
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
    /* MB/s is 10^6 B/s, so ns = bytes * 1000 / MBps; round up so a transfer never costs 0.  A
     * transfer moves one mapping unit: a read moves only the units asked for */
    n->t.t_xfer = ((uint64_t)n->g.page_size * 1000 + cfg->channel_mbps - 1) / cfg->channel_mbps;
    n->sub = nh_config_sub(cfg);
    n->wl = n->sub * (cfg->one_shot == NH_ON ? 3 : 1);
    n->div_pages = nh_divisor(n->g.pages);
    n->div_plane = nh_divisor(n->g.blocks);
    n->div_die = nh_divisor(n->g.blocks * n->g.planes);
    n->div_channel = nh_divisor(n->g.blocks * n->g.planes * n->g.dies * n->g.ways);
    n->div_planes = nh_divisor(n->g.planes);
    n->div_wl = nh_divisor(n->wl);
    n->div_sub = nh_divisor(n->sub);
    n->stats = stats;
    /* what a queued operation will hold its die for (with its transfer, as the die is held) */
    op_ns[NH_FOP_READ] = n->t.t_read + n->t.t_xfer;
    op_ns[NH_FOP_PROGRAM] = n->sub * n->t.t_xfer + n->t.t_prog;
    op_ns[NH_FOP_ERASE] = n->t.t_erase;
    n->sched = nh_sched_new(parts->settings[NH_PART_scheduler], n->g.ndies, n->g.nblocks,
                            parts->counters[NH_PART_scheduler], op_ns);
    n->op = g_new0(NhDieOp, n->g.ndies);
    n->die_free = g_new0(uint64_t, n->g.ndies);
    n->bus = g_new0(NhBus, n->g.channels);
    n->erase_count = g_new0(uint32_t, n->g.nblocks);
    n->next_page = g_new0(uint32_t, n->g.nblocks);
    n->page_batch = n->sub > 1 ? g_new0(uint64_t, n->g.nblocks) : NULL;
    n->queued_reads = ++n->batches;
    return n;
}

static void bus_clear(NhBus *b);

void nh_nand_free(NhNand *n)
{
    if (n) {
        nh_sched_free(n->sched);
        g_free(n->op);
        g_free(n->die_free);
        for (uint32_t c = 0; c < n->g.channels; c++) {
            bus_clear(&n->bus[c]);
        }
        g_free(n->bus);
        g_free(n->erase_count);
        g_free(n->next_page);
        g_free(n->page_batch);
        g_free(n);
    }
}

static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

void nh_nand_batch_begin(NhNand *n)
{
    if (!n->batch_depth++) {
        n->batch = ++n->batches;
    }
}

void nh_nand_batch_end(NhNand *n)
{
    g_assert(n->batch_depth);
    if (!--n->batch_depth) {
        n->batch = 0;
        /* a flash page is programmed whole: units of one left for later are a partial page */
        n->violations += n->partial;
        n->partial = 0;
    }
}

/* Transfers all take t_xfer, so a gap fits one when it is that long.  Those ending before the
 * horizon are dropped (nothing is booked before it any more); beyond NH_BUS_KEPT transfers the
 * oldest is dropped too and the bus counts as busy until it ended (a trace whose requests all
 * arrive at once would otherwise keep every transfer). */

/* A place among the runs of a bus: run @k of chunk @c, or after them all when @c is nchunks. */
typedef struct BusPos {
    uint32_t c, k;
} BusPos;

static NhBusChunk *chunk_new(NhBus *b)
{
    NhBusChunk *ch = b->spare ? b->spare : g_new(NhBusChunk, 1);

    b->spare = NULL;
    ch->lo = ch->hi = 0;
    return ch;
}

static void chunk_insert(NhBus *b, uint32_t c, NhBusChunk *ch)
{
    if (b->nchunks == b->cap) {
        b->cap = MAX(16, b->cap * 2);
        b->chunk = g_renew(NhBusChunk *, b->chunk, b->cap);
    }
    if (c < b->nchunks) {
        memmove(&b->chunk[c + 1], &b->chunk[c], (b->nchunks - c) * sizeof(*b->chunk));
    }
    b->chunk[c] = ch;
    b->nchunks++;
}

/* Chunk @c emptied.  Kept as the spare (a bus that empties and refills at every transfer, an
 * idle one, does not allocate), and no calls when it is the last. */
static void chunk_remove(NhBus *b, uint32_t c)
{
    if (b->spare) {
        g_free(b->spare);
    }
    b->spare = b->chunk[c];
    if (--b->nchunks > c) {
        memmove(&b->chunk[c], &b->chunk[c + 1], (b->nchunks - c) * sizeof(*b->chunk));
    }
}

static void bus_clear(NhBus *b)
{
    for (uint32_t c = 0; c < b->nchunks; c++) {
        g_free(b->chunk[c]);
    }
    g_free(b->chunk);
    g_free(b->spare);
    *b = (NhBus){ 0 };
}

static inline NhBusRun *run_at(const NhBus *b, BusPos p)
{
    return &b->chunk[p.c]->run[p.k];
}

static inline BusPos pos_next(const NhBus *b, BusPos p)
{
    if (++p.k == b->chunk[p.c]->hi && ++p.c < b->nchunks) {
        p.k = b->chunk[p.c]->lo;
    }
    return p;
}

/* The run before @p, NULL at the first. */
static inline NhBusRun *run_before(const NhBus *b, BusPos p)
{
    if (p.c < b->nchunks && p.k > b->chunk[p.c]->lo) {
        return &b->chunk[p.c]->run[p.k - 1];
    }
    return p.c ? &b->chunk[p.c - 1]->run[b->chunk[p.c - 1]->hi - 1] : NULL;
}

/* The first run that ends after @at.  Lower bounds without branches (a select a step: the
 * branches of a binary search were mispredicted, a tenth of the bus's time, perf). */
static BusPos bus_find(const NhBus *b, uint64_t at)
{
    NhBusChunk *const *c = b->chunk;
    const NhBusRun *r;
    uint32_t n = b->nchunks;

    if (!n || c[n - 1]->run[c[n - 1]->hi - 1].end <= at) {
        return (BusPos){ n, 0 };
    }
    /* the answer lies in c[0, n), and c[n - 1] ends after @at */
    while (n > 1) {
        uint32_t half = n / 2;
        c = c[half - 1]->run[c[half - 1]->hi - 1].end <= at ? c + half : c;
        n -= half;
    }
    r = &(*c)->run[(*c)->lo];
    n = (*c)->hi - (*c)->lo;
    while (n > 1) {
        uint32_t half = n / 2;
        r = r[half - 1].end <= at ? r + half : r;
        n -= half;
    }
    return (BusPos){ (uint32_t)(c - b->chunk), (uint32_t)(r - (*c)->run) };
}

/* Run @r after all the others. */
static inline void bus_append(NhBus *b, NhBusRun r)
{
    NhBusChunk *ch = b->nchunks ? b->chunk[b->nchunks - 1] : NULL;

    if (!ch || ch->hi == NH_BUS_CHUNK) {
        ch = chunk_new(b);
        chunk_insert(b, b->nchunks, ch);
    }
    ch->run[ch->hi++] = r;
}

static void bus_insert(NhBus *b, BusPos p, NhBusRun r)
{
    NhBusChunk *ch, *up;

    if (p.c == b->nchunks) {
        bus_append(b, r);
        return;
    }
    ch = b->chunk[p.c];
    if (p.k == ch->lo && ch->lo) {
        ch->run[--ch->lo] = r;
    } else if (ch->hi < NH_BUS_CHUNK) {
        memmove(&ch->run[p.k + 1], &ch->run[p.k], (ch->hi - p.k) * sizeof(NhBusRun));
        ch->run[p.k] = r;
        ch->hi++;
    } else if (ch->lo) {
        memmove(&ch->run[ch->lo - 1], &ch->run[ch->lo], (p.k - ch->lo) * sizeof(NhBusRun));
        ch->lo--;
        ch->run[p.k - 1] = r;
    } else {
        /* full: its upper half goes to a new chunk after it */
        up = chunk_new(b);
        memcpy(up->run, &ch->run[NH_BUS_CHUNK / 2], NH_BUS_CHUNK / 2 * sizeof(NhBusRun));
        up->hi = ch->hi = NH_BUS_CHUNK / 2;
        chunk_insert(b, p.c + 1, up);
        if (p.k >= NH_BUS_CHUNK / 2) {
            p = (BusPos){ p.c + 1, p.k - NH_BUS_CHUNK / 2 };
        }
        bus_insert(b, p, r);
    }
}

static void bus_remove(NhBus *b, BusPos p)
{
    NhBusChunk *ch = b->chunk[p.c];

    if (p.k == ch->lo) {
        ch->lo++;
    } else {
        memmove(&ch->run[p.k], &ch->run[p.k + 1], (ch->hi - p.k - 1) * sizeof(NhBusRun));
        ch->hi--;
    }
    if (ch->lo == ch->hi) {
        chunk_remove(b, p.c);
    }
}

/* Forget the oldest transfers: those ending by the horizon, and beyond NH_BUS_KEPT the oldest
 * (the floor then keeps the bus busy until they ended). */
static void bus_drop(NhNand *n, NhBus *b, uint64_t x)
{
    while (b->nchunks) {
        NhBusRun *r = run_at(b, (BusPos){ 0, b->chunk[0]->lo });
        /* no division when nothing is dropped: it was a sixth of the bus's cost (perf) */
        uint64_t k = n->horizon > r->start ? (MIN(n->horizon, r->end) - r->start) / x : 0;

        if (b->transfers >= NH_BUS_KEPT) {
            k = MAX(k, MIN((r->end - r->start) / x, b->transfers - (NH_BUS_KEPT - 1)));
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
        bus_remove(b, (BusPos){ 0, b->chunk[0]->lo });
    }
}

uint64_t nh_nand_transfer(NhNand *n, uint32_t ch, uint64_t ready)
{
    NhBus *b = &n->bus[ch];
    uint64_t x = n->t.t_xfer, at;
    NhBusRun *prev, *next, *last;
    BusPos p;

    n->stats->nand_channel_busy_ns += x;
    if (!nh_sched_defers(n->sched)) {
        /* sched=fcfs: after everything booked on the bus, gaps or not (the earlier model) */
        b->last = MAX(ready, b->last) + x;
        return b->last;
    }
    bus_drop(n, b, x);
    at = MAX(ready, b->floor);
    last = b->nchunks ? &b->chunk[b->nchunks - 1]->run[b->chunk[b->nchunks - 1]->hi - 1] : NULL;
    if (!last || last->end <= at) {
        /* mostly the bus is free from @ready on, after all of them */
        if (last && last->end == at) {
            last->end = at + x;
        } else {
            bus_append(b, (NhBusRun){ at, at + x });
        }
        b->transfers++;
        b->last = MAX(b->last, at + x);
        return at + x;
    }
    /* the first run that ends after @ready, then the first gap from there */
    for (p = bus_find(b, at); p.c < b->nchunks && run_at(b, p)->start < at + x;
         p = pos_next(b, p)) {
        at = run_at(b, p)->end;
    }
    /* [at, at + x) lies just before run p: it extends the run before, joins the two, or is a
     * new run (mostly the newest) */
    prev = run_before(b, p);
    prev = prev && prev->end == at ? prev : NULL;
    next = p.c < b->nchunks && run_at(b, p)->start == at + x ? run_at(b, p) : NULL;
    if (prev && next) {
        prev->end = next->end;
        bus_remove(b, p);
    } else if (prev) {
        prev->end = at + x;
    } else if (next) {
        next->start = at;
    } else {
        bus_insert(b, p, (NhBusRun){ at, at + x });
    }
    b->transfers++;
    b->last = MAX(b->last, at + x);
    return at + x;
}

/* The die's latest operation, if page @ppn may join it as a program (@program) or a read. */
static NhDieOp *joinable(NhNand *n, uint32_t die, uint32_t ppn, bool program, uint64_t *slot)
{
    NhDieOp *op = &n->op[die];
    uint32_t page = nh_page_in_block(n, ppn), blk = nh_block_of(n, ppn);
    uint32_t plane = nh_mod(nh_pu_of_block(n, blk), n->div_planes);
    NhDivisor wl = program ? n->div_wl : n->div_sub;
    uint64_t plane_slots = (wl.d == 64 ? UINT64_MAX : (1ull << wl.d) - 1) << (plane * wl.d);

    *slot = 1ull << (plane * wl.d + nh_mod(page, wl));
    if (!n->batch || op->batch != n->batch || op->program != program ||
        n->die_free[die] != op->done || op->wordline != nh_div(page, wl) || (op->slots & *slot) ||
        ((op->slots & plane_slots) && op->blk[plane] != blk)) {
        return NULL;
    }
    op->blk[plane] = blk;   /* the caller joins it */
    return op;
}

static void record(NhNand *n, uint32_t die, uint32_t ppn, bool program, uint64_t slot,
                   uint64_t sensed, uint64_t done)
{
    n->op[die] = (NhDieOp){
        .batch = n->batch, .sensed = sensed, .done = done, .slots = slot,
        .wordline = nh_div(nh_page_in_block(n, ppn), program ? n->div_wl : n->div_sub),
        .program = program,
    };
    n->op[die].blk[nh_mod(nh_pu_of_block(n, nh_block_of(n, ppn)), n->div_planes)] =
        nh_block_of(n, ppn);
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

/* Inlined, filling the caller's: returned by value, the struct was assembled on the stack
 * with narrow stores read back by wide loads, a stall that made this a tenth of sched=prio's
 * replay (perf). */
static inline void target(NhNand *n, uint32_t ppn, bool program, Target *x)
{
    x->blk = nh_block_of(n, ppn);
    x->die = nh_die_of_block(n, x->blk);
    x->die_free = &n->die_free[x->die];
    x->ch = nh_channel_of_block(n, x->blk);
    x->op = joinable(n, x->die, ppn, program, &x->slot);
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
    Target x;
    uint64_t sensed, done, start;

    target(n, ppn, false, &x);
    start = max64(now, *x.die_free);
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
    Target x;
    uint64_t moved, done, start;

    target(n, ppn, true, &x);
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

/* A queued program stands for its whole flash page (nh_nand_program queues its first unit
 * only): the page's units, transferred one after another, then one tPROG. */
static uint64_t run_program(NhNand *n, uint32_t ppn, uint64_t at)
{
    uint64_t done = at;
    bool joined;

    n->batch = ++n->batches;
    for (uint32_t u = 0; u < n->sub; u++) {
        done = book_program(n, ppn + u, at, &joined);
    }
    return done;
}

uint64_t nh_nand_run(NhNand *n, NhFlashOp op, uint64_t at)
{
    uint64_t batch = n->batch, done;
    bool joined;

    /* a queued operation joins no host batch; with map-unit, GC's reads of the units of one
     * flash page, run one after another on the die, share its tR */
    n->batch = op.kind == NH_FOP_READ && n->sub > 1 ? n->queued_reads : 0;
    switch (op.kind) {
    case NH_FOP_READ:
        done = book_read(n, op.addr, at, &joined);
        n->stats->nand_read_ops -= joined;  /* counted when queued */
        break;
    case NH_FOP_PROGRAM:
        done = run_program(n, op.addr, at);
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

    if (written && nh_page_in_block(n, ppn) >= n->next_page[blk]) {
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

/* Map-unit discipline: the units of a flash page are programmed in order in one batch (one
 * program operation), all of them by the batch's end; unit @u of block @blk is programmed. */
static void whole_page(NhNand *n, uint32_t blk, uint32_t u)
{
    bool first = !nh_mod(u, n->div_sub), last = !nh_mod(u + 1, n->div_sub);

    if (!n->batch) {
        n->violations++;    /* a unit alone is part of a page */
        return;
    }
    if (first) {
        n->page_batch[blk] = n->batch;
        n->partial += !last;
    } else if (u != n->next_page[blk] || n->page_batch[blk] != n->batch) {
        n->violations++;
    } else if (last) {
        n->partial--;
    }
}

uint64_t nh_nand_program(NhNand *n, uint32_t ppn, uint64_t now)
{
    uint32_t blk = nh_block_of(n, ppn), die = nh_die_of_block(n, blk);
    uint64_t done;
    bool joined;

    /* ascending order; erased pages may be skipped (block-mapped FTLs leave holes) */
    if (nh_page_in_block(n, ppn) < n->next_page[blk]) {
        n->violations++;
    }
    if (n->sub > 1) {
        whole_page(n, blk, nh_page_in_block(n, ppn));
    }
    n->next_page[blk] = nh_page_in_block(n, ppn) + 1;
    n->stats->nand_page_programs++;
    /* a deferred GC page's later units are not queued: they ride with its first (run_program) */
    if (n->untimed || (n->gc_depth && nh_sched_defers(n->sched) && nh_mod(ppn, n->div_sub)) ||
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
    for (uint32_t c = 0; c < n->g.channels; c++) {
        bus_clear(&n->bus[c]);
    }
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
