/*
 * Mapping units smaller than a flash page (map-unit, docs/engine.md "Mapping units"): the
 * timing of partial page transfers and whole-page programs, the bytes programmed per byte
 * written, the FTLs' consistency under random operations, the state file, the refusals and
 * the NAND discipline check of a partial page.  Times follow from nand.h: SLC 25 us tR,
 * 200 us tPROG, 800 MB/s channels: a 4 KiB unit moves in 5.12 us, a 16 KiB page in 20.48 us.
 */
#include "unit.h"

#include <string.h>

#define IDLE 1000000000000ull   /* far after anything booked so far */
#define XFER 5120ull
#define TPROG 200000ull
#define TR 25000ull

/* One die, one plane, 16 KiB pages of four 4 KiB units. */
#define ONE_DIE "channels=1,ways=1,pages=16,op=10,page-size=16K"
#define MU "map-unit=4K,stripe-merge=on"

static uint64_t submit(NhEngine *e, NhOp op, uint32_t flags, uint64_t off, uint64_t len,
                       uint64_t now, uint16_t stream)
{
    NhRequest q = { .op = op, .flags = flags, .offset = off, .length = len, .stream = stream };
    uint64_t done;
    GError *err = NULL;
    nh_engine_submit(e, &q, now, &done, &err);
    g_assert_no_error(err);
    return done;
}

static void test_timing(void)
{
    NhEngine *e = unit_engine(ONE_DIE "," MU, 1 << 20);

    /* a page's four units staged, then programmed at the flush: four unit transfers, one tPROG */
    submit(e, NH_OP_WRITE, 0, 0, 16384, 0, 0);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 0);
    g_assert_cmpuint(submit(e, NH_OP_FLUSH, 0, 0, 0, 0, 0), ==, 4 * XFER + TPROG);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 4);
    g_assert_cmpuint(unit_stat(e, "nand", "program_ops"), ==, 1);
    /* a 4 KiB read moves its unit only: tR and one unit's transfer */
    g_assert_cmpuint(submit(e, NH_OP_READ, 0, 4096, 4096, IDLE, 0) - IDLE, ==, TR + XFER);
    g_assert_cmpuint(unit_stat(e, "nand", "read_ops"), ==, 1);
    /* two units of one page in one request share the tR, their transfers serial */
    g_assert_cmpuint(submit(e, NH_OP_READ, 0, 0, 8192, 2 * IDLE, 0) - 2 * IDLE, ==,
                     TR + 2 * XFER);
    g_assert_cmpuint(unit_stat(e, "nand", "read_ops"), ==, 2);
    g_assert_cmpuint(unit_stat(e, "nand", "page_reads"), ==, 3);
    unit_check(e);
    nh_engine_free(e);

    /* map-unit=auto: the same 4 KiB read moves the whole 16 KiB page */
    e = unit_engine(ONE_DIE, 1 << 20);
    submit(e, NH_OP_WRITE, 0, 0, 16384, 0, 0);
    g_assert_cmpuint(submit(e, NH_OP_READ, 0, 4096, 4096, IDLE, 0) - IDLE, ==, TR + 4 * XFER);
    nh_engine_free(e);
}

/* 4 KiB random writes over 4 MiB of fresh 16 KiB-page flash: bytes programmed per byte
 * written, and
 * read-modify-write reads. */
static void random_4k(const char *props, double *waf, uint64_t *rmw)
{
    NhEngine *e = unit_engine(props, 64 << 20);
    GRand *rnd = g_rand_new_with_seed(7);
    uint64_t now = 0;
    char *js;

    for (int i = 0; i < 2000; i++) {
        submit(e, NH_OP_WRITE, 0, (uint64_t)g_rand_int_range(rnd, 0, 1024) * 4096, 4096, now, 0);
        now += 100000;
    }
    submit(e, NH_OP_FLUSH, 0, 0, 0, now, 0);
    unit_check(e);
    js = nh_engine_stats_json(e, false);
    *waf = unit_json_number(js, "waf_bytes");
    *rmw = unit_json_uint(js, "ftl.rmw_reads");
    g_assert_cmpuint(unit_json_uint(js, "ftl.gc_blocks"), ==, 0);
    g_free(js);
    g_rand_free(rnd);
    nh_engine_free(e);
}

static void test_bytes_programmed(void)
{
    double waf_page, waf_unit;
    uint64_t rmw_page, rmw_unit;

    random_4k("channels=2,ways=2,pages=64,page-size=16K", &waf_page, &rmw_page);
    random_4k("channels=2,ways=2,pages=64,page-size=16K," MU, &waf_unit, &rmw_unit);
    /* auto: every 4 KiB write reads and rewrites its 16 KiB page (4 bytes per byte; the first
     * write of a page has nothing to read); 4K: units packed four to a page, the last stripe
     * padded at the flush (at most 15 units of the 2,000 written), a rewrite of a staged unit
     * absorbed (0.994 measured) */
    g_assert_cmpfloat(waf_page, ==, 4.0);
    g_assert_cmpuint(rmw_page, >, 1500);
    g_assert_cmpfloat(waf_unit, <=, 1.0 + 15.0 / 2000);
    g_assert_cmpfloat(waf_unit, >=, 0.98);
    g_assert_cmpuint(rmw_unit, ==, 0);
}

/* Invariants (the FTL's check hook and the NAND discipline, a partial flash page included)
 * under a random mix of writes (some FUA, some smaller than a unit, some tagged with a
 * stream), reads, trims and flushes, with garbage collection; then a save and load. */
static void test_random_mix(gconstpointer props)
{
    NhEngine *e = unit_engine(props, 4 << 20), *b;
    GRand *rnd = g_rand_new_with_seed(5);
    uint32_t streams = nh_engine_stream_limit(e);
    uint64_t now = 0;

    for (int i = 0; i < 30000; i++) {
        uint64_t off = (uint64_t)g_rand_int_range(rnd, 0, 4096) * 1024;
        uint64_t len = (uint64_t)g_rand_int_range(rnd, 1, 40) * 1024;
        uint16_t stream = streams ? (uint16_t)g_rand_int_range(rnd, 0, 5) : 0;
        int k = g_rand_int_range(rnd, 0, 100);
        len = MIN(len, (4 << 20) - off);
        now += g_rand_int_range(rnd, 0, 400000);
        if (k < 70) {
            submit(e, NH_OP_WRITE, k < 5 ? NH_REQ_FUA : 0, off, len, now, stream);
            g_assert_true(nh_engine_is_mapped(e, off));
        } else if (k < 90) {
            submit(e, NH_OP_READ, 0, off, len, now, 0);
        } else if (k < 98) {
            submit(e, NH_OP_TRIM, 0, off, len, now, 0);
        } else {
            submit(e, NH_OP_FLUSH, 0, 0, 0, now, 0);
        }
        if (i % 5000 == 0) {
            unit_check(e);
        }
    }
    submit(e, NH_OP_FLUSH, 0, 0, 0, now, 0);
    unit_check(e);
    g_assert_cmpuint(unit_stat(e, "ftl", "gc_blocks"), >, 0);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_merges"), >, 0);

    b = unit_engine(props, 4 << 20);
    unit_reload(e, b);
    unit_check(b);
    for (uint64_t off = 0; off < (4 << 20); off += 4096) {
        g_assert_cmpint(nh_engine_is_mapped(e, off), ==, nh_engine_is_mapped(b, off));
    }
    g_assert_cmpuint(unit_stat(b, "nand", "page_programs"), ==,
                     unit_stat(e, "nand", "page_programs"));
    nh_engine_free(b);
    g_rand_free(rnd);
    nh_engine_free(e);
}

/* Garbage collection deferred by sched=prio (the default): a victim's valid units of one flash
 * page are read with one tR, and a page of copies is programmed as one operation. */
static void test_gc_pages(void)
{
    NhEngine *e = unit_engine(ONE_DIE "," MU, 1 << 20);
    GRand *rnd = g_rand_new_with_seed(11);
    uint64_t now = 0, copies, reads, read_ops, programs, program_ops;

    for (int i = 0; i < 4000; i++) {
        submit(e, NH_OP_WRITE, 0, (uint64_t)g_rand_int_range(rnd, 0, 256) * 4096, 4096, now, 0);
        now += 300000;
    }
    submit(e, NH_OP_FLUSH, 0, 0, 0, now, 0);
    unit_check(e);
    copies = unit_stat(e, "ftl", "gc_page_copies");
    reads = unit_stat(e, "nand", "page_reads");
    read_ops = unit_stat(e, "nand", "read_ops");
    programs = unit_stat(e, "nand", "page_programs");
    program_ops = unit_stat(e, "nand", "program_ops");
    /* only GC reads: every copy read once, the valid units of a page sharing a tR (2,250
     * units in 1,502 operations; one each, 2,250, when queued reads did not join) */
    g_assert_cmpuint(copies, >, 1000);
    g_assert_cmpuint(reads, ==, copies);
    g_assert_cmpuint(read_ops * 4, <, reads * 3);
    /* every program operation a whole page of four units */
    g_assert_cmpuint(programs, ==, 4 * program_ops);
    g_rand_free(rnd);
    nh_engine_free(e);
}

/* Reads in one batch share a tR only within one flash page of a plane: units at the same page
 * offset of two blocks of a plane are two reads. */
static void test_read_join_one_page(void)
{
    NhEngine *e = unit_engine(ONE_DIE "," MU, 1 << 20);
    NhNand *n = e->nand;
    uint32_t upb = n->g.pages;
    uint64_t t;

    nh_nand_batch_begin(n);
    nh_nand_read_unwritten(n, 0, IDLE);
    t = nh_nand_read_unwritten(n, 1, IDLE);
    nh_nand_batch_end(n);
    g_assert_cmpuint(t - IDLE, ==, TR + 2 * XFER);
    nh_nand_batch_begin(n);
    nh_nand_read_unwritten(n, 0, 2 * IDLE);
    t = nh_nand_read_unwritten(n, upb + 1, 2 * IDLE);
    nh_nand_batch_end(n);
    g_assert_cmpuint(t - 2 * IDLE, ==, 2 * (TR + XFER));
    nh_engine_free(e);
}

static void add_lost(void *opaque, uint64_t offset, uint64_t length)
{
    (void)offset;
    *(uint64_t *)opaque += length;
}

/* Power loss: staged units are in capacitor-protected DRAM and survive; a volatile write
 * buffer above them loses what it held, to the sector, as without map-unit. */
static void test_power_loss(void)
{
    NhEngine *e = unit_engine(ONE_DIE "," MU, 1 << 20);
    uint64_t lost = 0;

    submit(e, NH_OP_WRITE, 0, 0, 8192, 0, 0);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 0);
    nh_engine_power_loss(e, 1000, add_lost, &lost);
    g_assert_cmpuint(lost, ==, 0);
    g_assert_true(nh_engine_is_mapped(e, 0) && nh_engine_is_mapped(e, 4096));
    unit_check(e);
    /* the engine goes on: the flush programs the two units and pads their page */
    submit(e, NH_OP_FLUSH, 0, 0, 0, 2000, 0);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 4);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_padding"), ==, 2);
    unit_check(e);
    nh_engine_free(e);

    e = unit_engine(ONE_DIE "," MU ",buffer=lru,buffer-size=1M,buffer-volatile=on", 1 << 20);
    submit(e, NH_OP_WRITE, 0, 0, 8192, 0, 0);
    submit(e, NH_OP_WRITE, 0, 16384 + 1024, 1024, 1000, 0);
    nh_engine_power_loss(e, 2000, add_lost, &lost);
    g_assert_cmpuint(lost, ==, 8192 + 1024);
    g_assert_false(nh_engine_is_mapped(e, 0) || nh_engine_is_mapped(e, 16384));
    unit_check(e);
    nh_engine_free(e);
}

static void refused(const char *props, const char *msg)
{
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;

    unit_defaults(&c);
    if (nh_config_parse(&c, props, &err)) {
        e = nh_engine_new(&c, 1 << 20, &err);
        g_assert_null(e);
    }
    g_assert_nonnull(err);
    g_assert_cmpstr(err->message, ==, msg);
    g_error_free(err);
}

static void test_refusals(void)
{
    refused("page-size=16K,map-unit=4K",
            "map-unit: units smaller than a flash page (map-unit=4096, page-size=16384) are "
            "packed into pages by stripe staging: set stripe-merge=on");
    refused("page-size=16K,map-unit=4K,stripe-merge=on,ftl=bast",
            "map-unit: only ftl=page and ftl=dftl map units smaller than a flash page "
            "(map-unit=4096, page-size=16384), got ftl=bast");
    refused("page-size=16K,map-unit=4K,ftl=sast",
            "map-unit: only ftl=page and ftl=dftl map units smaller than a flash page "
            "(map-unit=4096, page-size=16384), got ftl=sast");
    refused("page-size=8K,map-unit=16K", "map-unit: must be at most page-size (8192), got 16384");
    /* pm9a3's pages at 4 pages a block livelocked GC (bench-validate --quick) */
    refused("page-size=16K,map-unit=4K,stripe-merge=on,pages=8",
            "map-unit: blocks of 8 flash pages are too small for units smaller than a page: GC "
            "pads each victim's last page and could free nothing; use pages=16 or more, or "
            "map-unit=auto");
    refused("map-unit=12K", "map-unit: must be 4K, 8K, 16K or 32K, got 12K");
    refused("map-unit=2K", "map-unit: must be between 4096 and 32768 or 'auto', got 2K");
    refused("planes=16,page-size=32K,map-unit=4K,stripe-merge=on",
            "map-unit: 16 planes x 8 units a program covers (page-size 32768 / map-unit 4096) "
            "exceed the 64 a multi-plane program can track; use fewer planes or a larger "
            "map-unit");
    /* stripe staging places every stripe on every plane: no plane-by-plane allocation */
    refused("page-size=16K,map-unit=4K,stripe-merge=on,alloc=dynamic",
            "alloc: dynamic does not go with stripe-merge=on, which places each stripe on every "
            "plane itself");
    refused("zones=2,page-size=16K,map-unit=4K,stripe-merge=on",
            "zones: a zoned region needs map-unit=auto (got map-unit=4K, smaller than the 16K "
            "flash page)");
}

/* The discipline check: a flash page's units are programmed in one batch, all of them. */
static void test_partial_page(void)
{
    NhEngine *e = unit_engine(ONE_DIE "," MU, 1 << 20);
    NhNand *n = e->nand;
    uint32_t ppn = (uint32_t)(n->g.nblocks - 1) * n->g.pages;   /* an erased block */
    GError *err = NULL;

    nh_nand_batch_begin(n);
    for (uint32_t u = 0; u < 4; u++) {
        nh_nand_program(n, ppn + u, 0);
    }
    nh_nand_batch_end(n);
    g_assert_cmpuint(n->violations, ==, 0);
    /* half a page: caught when the batch ends */
    nh_nand_batch_begin(n);
    nh_nand_program(n, ppn + 4, 0);
    nh_nand_program(n, ppn + 5, 0);
    nh_nand_batch_end(n);
    g_assert_cmpuint(n->violations, ==, 1);
    /* a unit outside a batch, and the page's next unit in another batch */
    nh_nand_program(n, ppn + 8, 0);
    g_assert_cmpuint(n->violations, ==, 2);
    nh_nand_batch_begin(n);
    nh_nand_program(n, ppn + 9, 0);
    nh_nand_batch_end(n);
    g_assert_cmpuint(n->violations, ==, 3);
    g_assert_false(nh_engine_check(e, &err));
    g_assert_nonnull(strstr(err->message, "part of a flash page"));
    g_error_free(err);
    nh_engine_free(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mapunit/timing", test_timing);
    g_test_add_func("/mapunit/bytes-programmed", test_bytes_programmed);
    g_test_add_func("/mapunit/read-join-one-page", test_read_join_one_page);
    g_test_add_func("/mapunit/gc-pages", test_gc_pages);
    g_test_add_func("/mapunit/power-loss", test_power_loss);
    g_test_add_func("/mapunit/refusals", test_refusals);
    g_test_add_func("/mapunit/partial-page", test_partial_page);
    g_test_add_data_func("/mapunit/mix/page", "channels=2,ways=1,planes=2,pages=16,op=10,"
                         "page-size=16K,streams=0," MU, test_random_mix);
    g_test_add_data_func("/mapunit/mix/page-streams", "channels=2,ways=1,planes=2,pages=16,"
                         "op=10,page-size=16K,streams=4," MU, test_random_mix);
    g_test_add_data_func("/mapunit/mix/dftl", "ftl=dftl,cmt-size=4K,channels=2,ways=1,planes=2,"
                         "pages=16,op=10,page-size=16K,streams=0," MU, test_random_mix);
    g_test_add_data_func("/mapunit/mix/dftl-streams", "ftl=dftl,cmt-size=4K,channels=2,ways=1,"
                         "planes=2,pages=16,op=10,page-size=16K,streams=4," MU, test_random_mix);
    g_test_add_data_func("/mapunit/mix/one-shot", "channels=2,ways=1,planes=2,pages=24,op=10,"
                         "page-size=16K,cell=tlc,one-shot=on,streams=0," MU, test_random_mix);
    return g_test_run();
}
