/*
 * Page FTL invariants under long random sequences of writes, reads and trims of random sizes and
 * alignments, with GC running all the time (small spare), plus the memory test for 1 TiB.
 */
#include "unit.h"
#include "ftl.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A shadow of which pages hold data: a write maps every page it touches, a trim unmaps only the
 * pages it covers whole. */
static NhEngine *run_random(const char *props, uint64_t capacity, unsigned ops, guint32 seed)
{
    NhEngine *e = unit_engine(props, capacity);
    uint32_t ps = nh_engine_config(e)->page_size;
    uint64_t npages = capacity / ps, now = 0, last_done = 0;
    bool *shadow = g_new0(bool, npages);
    GRand *r = g_rand_new_with_seed(seed);

    for (unsigned i = 0; i < ops; i++) {
        NhRequest q = { 0 };
        uint64_t done, len;
        unsigned kind = g_rand_int_range(r, 0, 10);
        GError *err = NULL;

        /* mostly small, sometimes large, unaligned */
        len = g_rand_int_range(r, 0, 4) ? g_rand_int_range(r, 1, 3 * ps)
                                         : g_rand_int_range(r, 1, 40 * ps);
        q.offset = g_rand_int_range(r, 0, (gint32)(capacity - 1));
        if (g_rand_boolean(r)) {
            q.offset -= q.offset % ps;
            len = (len + ps - 1) / ps * ps;
        }
        q.length = MIN(len, capacity - q.offset);
        q.op = kind < 6 ? NH_OP_WRITE : kind < 8 ? NH_OP_READ : kind < 9 ? NH_OP_TRIM : NH_OP_FLUSH;
        now += g_rand_int_range(r, 0, 200000);
        g_assert_true(nh_engine_submit(e, &q, now, &done, &err));
        g_assert_no_error(err);
        g_assert_cmpuint(done, >=, now);
        last_done = MAX(last_done, done);
        if (q.op == NH_OP_WRITE) {
            for (uint64_t p = q.offset / ps; p <= (q.offset + q.length - 1) / ps; p++) {
                shadow[p] = true;
            }
        } else if (q.op == NH_OP_TRIM) {
            for (uint64_t p = (q.offset + ps - 1) / ps; p < (q.offset + q.length) / ps; p++) {
                shadow[p] = false;
            }
        }
        if (i % 2000 == 1999 || i == ops - 1) {
            unit_check(e);
            for (uint64_t p = 0; p < npages; p++) {
                if (nh_engine_is_mapped(e, p * ps) != shadow[p]) {
                    g_error("op %u: page %" G_GUINT64_FORMAT " mapped=%d, expected %d", i, p,
                            nh_engine_is_mapped(e, p * ps), shadow[p]);
                }
            }
        }
    }
    /* GC must have run, or the test proves little */
    g_assert_cmpuint(unit_stat(e, "ftl", "gc_blocks"), >, 0);
    g_assert_cmpuint(unit_stat(e, "nand", "block_erases"), >, 0);
    g_test_message("%s: %" G_GUINT64_FORMAT " GC victims, %" G_GUINT64_FORMAT " copies",
                   props, unit_stat(e, "ftl", "gc_blocks"), unit_stat(e, "ftl", "gc_page_copies"));
    g_free(shadow);
    g_rand_free(r);
    return e;
}

static void test_random_greedy(void)
{
    nh_engine_free(run_random("channels=2,ways=2,planes=2,pages=16,op=10", 4 << 20, 60000, 1));
}

static void test_random_cost_benefit(void)
{
    nh_engine_free(run_random("channels=2,ways=1,dies=2,pages=32,op=15,gc=cost-benefit",
                              4 << 20, 40000, 2));
}

static void test_random_wear_levelling(void)
{
    NhEngine *e = run_random("channels=1,ways=2,pages=16,op=12,wl-threshold=4,gc-low=30,"
                             "gc-high=60,gc-critical=5", 2 << 20, 60000, 3);
    NhWear w;
    nh_engine_wear(e, &w);
    g_test_message("static wear levelling: %" G_GUINT64_FORMAT " blocks moved, erases %u..%u",
                   unit_stat(e, "ftl", "wl_blocks"), w.erase_min, w.erase_max);
    g_assert_cmpuint(unit_stat(e, "ftl", "wl_blocks"), >, 0);
    nh_engine_free(e);
}

static void test_random_big_pages(void)
{
    nh_engine_free(run_random("channels=4,ways=1,pages=8,page-size=16K,op=20", 8 << 20, 30000, 4));
}

/* Every registered FTL under the same random mix (it must at least keep its invariants). */
static void test_random_every_ftl(gconstpointer name)
{
    char *props = g_strdup_printf("ftl=%s,channels=2,ways=2,planes=2,pages=16,op=10",
                                  (const char *)name);
    nh_engine_free(run_random(props, 4 << 20, 60000, 5));
    g_free(props);
}

/* The hybrid FTLs with a pool of 2-3 log blocks on 8-page blocks: a merge every few writes. */
static void test_random_small_pool(gconstpointer props)
{
    NhEngine *e = run_random(props, 2 << 20, 60000, 6);
    g_test_message("%s: %" G_GUINT64_FORMAT " switch, %" G_GUINT64_FORMAT " partial, %"
                   G_GUINT64_FORMAT " full merges", (const char *)props,
                   unit_stat(e, "ftl.merges", "switch"), unit_stat(e, "ftl.merges", "partial"),
                   unit_stat(e, "ftl.merges", "full"));
    g_assert_cmpuint(unit_stat(e, "ftl.merges", "full"), >, 1000);
    nh_engine_free(e);
}

/* A write over a mapped page that covers only part of it reads the old page first. */
static void test_rmw(void)
{
    NhEngine *e = unit_engine("channels=1,ways=1,pages=16,op=20", 1 << 20);
    NhRequest w = { .op = NH_OP_WRITE, .offset = 0, .length = 4096 };
    uint64_t d;

    g_assert_true(nh_engine_submit(e, &w, 0, &d, NULL));
    w.offset = 512;
    w.length = 1024;
    g_assert_true(nh_engine_submit(e, &w, d, &d, NULL));
    g_assert_cmpuint(unit_stat(e, "ftl", "rmw_reads"), ==, 1);
    g_assert_cmpuint(unit_stat(e, "nand", "page_reads"), ==, 1);
    /* a partial write of an unmapped page has nothing to merge */
    w.offset = 8192 + 100;
    g_assert_true(nh_engine_submit(e, &w, d, &d, NULL));
    g_assert_cmpuint(unit_stat(e, "ftl", "rmw_reads"), ==, 1);
    g_assert_cmpuint(unit_stat(e, "host", "write_pages"), ==, 3);
    unit_check(e);
    nh_engine_free(e);
}

/* Trimmed pages are invalid: GC never copies them.  Fill, trim everything, overwrite: no copies. */
static void test_trim_not_copied(void)
{
    NhEngine *e = unit_engine("channels=1,ways=1,pages=16,op=10", 2 << 20);
    NhRequest q = { .op = NH_OP_WRITE, .length = 4096 };
    uint64_t d = 0;

    for (int round = 0; round < 4; round++) {
        for (q.offset = 0; q.offset < (2 << 20); q.offset += 4096) {
            q.op = NH_OP_WRITE;
            g_assert_true(nh_engine_submit(e, &q, d, &d, NULL));
        }
        NhRequest t = { .op = NH_OP_TRIM, .offset = 0, .length = 2 << 20 };
        g_assert_true(nh_engine_submit(e, &t, d, &d, NULL));
        g_assert_false(nh_engine_is_mapped(e, 0));
    }
    g_assert_cmpuint(unit_stat(e, "nand", "block_erases"), >, 0);
    g_assert_cmpuint(unit_stat(e, "ftl", "gc_page_copies"), ==, 0);
    unit_check(e);
    nh_engine_free(e);
}

static void test_bad_requests(void)
{
    NhEngine *e = unit_engine("channels=1,ways=1,pages=16,op=10", 1 << 20);
    NhRequest q = { .op = NH_OP_WRITE, .offset = 0, .length = 0 };
    uint64_t d = 7;
    GError *err = NULL;
    char *before = nh_engine_stats_json(e, false), *after;

    g_assert_false(nh_engine_submit(e, &q, 0, &d, &err));
    g_assert_nonnull(strstr(err->message, "zero length"));
    g_clear_error(&err);
    q.offset = (1 << 20) - 4096;
    q.length = 8192;
    g_assert_false(nh_engine_submit(e, &q, 0, &d, &err));
    g_assert_nonnull(strstr(err->message, "outside the logical space"));
    g_clear_error(&err);
    q.offset = UINT64_MAX - 10;
    q.length = 100;
    g_assert_false(nh_engine_submit(e, &q, 0, &d, &err));
    g_clear_error(&err);
    q.op = (NhOp)42;
    q.offset = 0;
    g_assert_false(nh_engine_submit(e, &q, 0, &d, &err));
    g_clear_error(&err);
    /* an arrival near 2^64 ns wrapped: completion before arrival, latency 0 */
    q = (NhRequest){ .op = NH_OP_WRITE, .offset = 0, .length = 4096 };
    g_assert_false(nh_engine_submit(e, &q, NH_TIME_MAX + 1, &d, &err));
    g_assert_nonnull(strstr(err->message, "arrival time 4611686018427387905 ns is after the "
                                          "2^62 ns (146 years) the engine models"));
    g_clear_error(&err);
    g_assert_cmpuint(d, ==, 7);
    after = nh_engine_stats_json(e, false);
    g_assert_cmpstr(before, ==, after);
    /* flush ignores offset and length */
    q = (NhRequest){ .op = NH_OP_FLUSH, .offset = UINT64_MAX };
    g_assert_true(nh_engine_submit(e, &q, 5, &d, NULL));
    g_assert_cmpuint(d, ==, 5);
    /* the last time accepted completes after it, without wrapping */
    q = (NhRequest){ .op = NH_OP_WRITE, .offset = 0, .length = 4096 };
    g_assert_true(nh_engine_submit(e, &q, NH_TIME_MAX, &d, NULL));
    g_assert_cmpuint(d, >, NH_TIME_MAX);
    g_free(before);
    g_free(after);
    nh_engine_free(e);
}

static long rss_kib(void)
{
    char *s = NULL;
    long pages = 0, rss = 0;
    if (g_file_get_contents("/proc/self/statm", &s, NULL, NULL)) {
        sscanf(s, "%ld %ld", &pages, &rss);
    }
    g_free(s);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* 1 TiB of 4 KiB pages: creation touches no per-page memory, and is quick. */
static void test_terabyte(void)
{
    long before = rss_kib();
    gint64 t0 = g_get_monotonic_time();
    NhEngine *e = unit_engine("", 1ull << 40);
    double secs = (g_get_monotonic_time() - t0) / 1e6;
    long grown = rss_kib() - before;
    uint64_t d = 0;

    g_test_message("1 TiB: created in %.3f s, RSS grew by %ld KiB", secs, grown);
    g_assert_cmpfloat(secs, <, 1.0);
    g_assert_cmpint(grown, <, 128 * 1024);
    for (int i = 0; i < 1000; i++) {
        NhRequest q = { .op = NH_OP_WRITE, .offset = (uint64_t)i * 1000000007ull % (1ull << 40),
                        .length = 65536 };
        q.offset -= q.offset % 4096;
        g_assert_true(nh_engine_submit(e, &q, d, &d, NULL));
    }
    g_assert_true(nh_engine_is_mapped(e, 1000000007ull / 4096 * 4096));
    g_assert_cmpint(rss_kib() - before, <, 256 * 1024);
    nh_engine_free(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ftl/page/random-greedy", test_random_greedy);
    g_test_add_func("/ftl/page/random-cost-benefit", test_random_cost_benefit);
    g_test_add_func("/ftl/page/random-wear-levelling", test_random_wear_levelling);
    g_test_add_func("/ftl/page/random-16k-pages", test_random_big_pages);
    g_test_add_func("/ftl/page/read-modify-write", test_rmw);
    g_test_add_func("/ftl/page/trim-not-copied", test_trim_not_copied);
    g_test_add_func("/ftl/bad-requests", test_bad_requests);
    for (const char *const *n = nh_ftl_names; *n; n++) {
        char *path = g_strdup_printf("/ftl/%s/random-every-ftl", *n);
        g_test_add_data_func(path, *n, test_random_every_ftl);
        g_free(path);
    }
    g_test_add_data_func("/ftl/bast/random-small-pool",
                         "ftl=bast,channels=2,ways=1,pages=8,op=10,log-blocks=2",
                         test_random_small_pool);
    g_test_add_data_func("/ftl/fast/random-small-pool",
                         "ftl=fast,channels=2,ways=1,pages=8,op=10,log-blocks=3",
                         test_random_small_pool);
    g_test_add_data_func("/ftl/sast/random-small-pool",
                         "ftl=sast,channels=2,ways=1,pages=8,op=10,log-blocks=3,sast-n=2,sast-k=2",
                         test_random_small_pool);
    g_test_add_func("/ftl/terabyte", test_terabyte);
    return g_test_run();
}
