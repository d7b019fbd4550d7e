/*
 * Greedy GC under uniform random single-page writes reaches the analytical steady-state write
 * amplification for its spare space.
 *
 * Model (Xiang & Kurkoski, "An Improved Analytic Expression for Write Amplification in NAND
 * Flash", ICNC 2012, arXiv:1110.4245; the same fixed point as Hu et al. / Desnoyers' LRU model,
 * which greedy approaches as blocks get many pages): with T physical and U logical pages and
 * a = T/U, the valid fraction x of a victim satisfies x = exp(-a (1 - x)), so
 *     WA = 1 / (1 - x) = a / (a + W0(-a e^-a)).
 * The paper reports greedy simulations within 1% of this (2.35 vs 2.36 at 30% spare).
 * The model has no open blocks and no free-block reserve; every plane of ours holds two open
 * blocks and a few free ones out of its spare, so the test uses one plane with many blocks and
 * GC thresholds at their minimum, where that overhead is a few percent of the spare.
 */
#include "unit.h"
#include "placement.h"

#include <math.h>
#include <string.h>

static double lambert_w0(double z)
{
    double w = z < -0.25 ? -0.5 : z;    /* Halley iterations; -1/e < z < 0 here */
    for (int i = 0; i < 100; i++) {
        double ew = exp(w), f = w * ew - z;
        double step = f / (ew * (w + 1) - (w + 2) * f / (2 * w + 2));
        w -= step;
        if (fabs(step) < 1e-14) {
            break;
        }
    }
    return w;
}

static double counter(NhEngine *e, const char *path)
{
    char *js = nh_engine_stats_json(e, false);
    double v = unit_json_number(js, path);
    g_free(js);
    return v;
}

static void run(const char *props, double tolerance)
{
    const uint64_t capacity = 256 << 20, U = capacity / 4096;
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;
    GRand *r = g_rand_new_with_seed(42);
    uint64_t now = 0, done;
    double a, expect, waf;

    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, props, &err));
    e = nh_engine_new(&c, capacity, &err);
    g_assert_no_error(err);
    /* the blocks kept for the stream frontiers (placement.h) take no untagged data */
    a = (double)(counter(e, "geometry.pages_total") -
                 (unit_placement(e)->max_streams - 1) * (double)(c.channels * c.ways * c.dies *
                                                               c.planes * c.pages)) /
        (double)U;
    expect = a / (a + lambert_w0(-a * exp(-a)));

    for (uint64_t p = 0; p < U; p++) {
        NhRequest q = { .op = NH_OP_WRITE, .offset = p * 4096, .length = 4096 };
        g_assert_true(nh_engine_submit(e, &q, now, &done, NULL));
    }
    for (int phase = 0; phase < 2; phase++) {
        /* first pass warms up to steady state; the second is measured */
        nh_engine_stats_reset(e);
        for (uint64_t i = 0; i < 6 * U; i++) {
            NhRequest q = { .op = NH_OP_WRITE, .length = 4096,
                            .offset = (uint64_t)g_rand_int_range(r, 0, (gint32)U) * 4096 };
            now += 1000;
            g_assert_true(nh_engine_submit(e, &q, now, &done, NULL));
        }
    }
    waf = counter(e, "waf");
    g_test_message("%s: physical/logical %.4f, WAF measured %.3f, analytical %.3f (%+.1f%%)",
                   props, a, waf, expect, 100 * (waf / expect - 1));
    g_assert_cmpfloat(fabs(waf / expect - 1), <, tolerance);
    g_assert_true(nh_engine_check(e, NULL));
    g_rand_free(r);
    nh_engine_free(e);
}

static void test_greedy_op25(void)
{
    run("channels=1,ways=1,pages=64,op=25,gc-critical=1,gc-low=2,gc-high=3", 0.10);
}

static void test_greedy_op15(void)
{
    run("channels=1,ways=1,pages=64,op=15,gc-critical=1,gc-low=2,gc-high=3", 0.10);
}

static void test_greedy_op35(void)
{
    run("channels=1,ways=1,pages=64,op=35,gc-critical=1,gc-low=2,gc-high=3", 0.10);
}

/* alloc=dynamic on four dies, requests arriving faster than the dies serve them, so where a
 * page goes depends on which die is free: greedy's WAF is still the model's, and the blocks,
 * maps and counts still agree (nh_engine_check). */
static void test_greedy_dynamic(void)
{
    run("channels=4,ways=1,pages=64,op=25,gc-critical=1,gc-low=2,gc-high=3,alloc=dynamic", 0.10);
}

/*
 * The default geometry (8 channels x 4 ways = 32 planes, 256-page blocks, op=7, gc-critical=3,
 * gc-low=10, gc-high=20) on small devices, where a plane holds only a few blocks of data and the
 * open blocks and free-block watermarks are a large part of its spare.
 */
static NhEngine *default_device(uint64_t capacity, double *blocks_per_plane)
{
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;

    unit_defaults(&c);
    e = nh_engine_new(&c, capacity, &err);
    g_assert_no_error(err);
    *blocks_per_plane = counter(e, "geometry.blocks_per_plane");
    return e;
}

static void write_seq(NhEngine *e, uint64_t capacity, uint64_t *now)
{
    uint64_t done;
    for (uint64_t off = 0; off < capacity; off += 128 << 10) {
        NhRequest q = { .op = NH_OP_WRITE, .offset = off, .length = 128 << 10 };
        *now += 1000;
        g_assert_true(nh_engine_submit(e, &q, *now, &done, NULL));
    }
}

/*
 * Sequential overwrite invalidates whole blocks in the order they were written, so GC only
 * erases: WAF 1.000 and no copies.  Before blocks=auto left room for the open blocks and the
 * gc-high free blocks (4 spare blocks per plane, gc-high at 4 free blocks), background GC
 * compacted blocks still being overwritten: 55,792 copies, WAF 1.85 on the second pass at
 * 256 MiB (1.43 over both passes) and 252,400 copies at 1 GiB.
 */
static void test_default_seq(gconstpointer data)
{
    uint64_t capacity = GPOINTER_TO_SIZE(data) << 20, now = 0;
    double bpp;
    NhEngine *e = default_device(capacity, &bpp);

    write_seq(e, capacity, &now);
    nh_engine_stats_reset(e);
    write_seq(e, capacity, &now);
    g_test_message("%" G_GUINT64_FORMAT " MiB, %.0f blocks per plane: WAF %.4f, %.0f copies",
                   capacity >> 20, bpp, counter(e, "waf"),
                   counter(e, "ftl.gc_page_copies"));
    g_assert_cmpfloat(counter(e, "ftl.gc_page_copies"), ==, 0);
    g_assert_cmpfloat(counter(e, "waf"), <, 1.001);
    g_assert_true(nh_engine_check(e, NULL));
    nh_engine_free(e);
}

/*
 * A sequential fill, then uniform random 4 KiB overwrites until steady state, against the
 * analytical WAF for the pages GC works with (docs/engine.md, Geometry): per plane, the blocks
 * less the unwritten half of the two open blocks on average and the mean free blocks, midway
 * between gc-critical (2 blocks here) and gc-high (3).
 *   256 MiB: 14 blocks per plane, 8 of data: a = (14 - 1 - 2.5) / 8 = 1.3125, analytical 2.30,
 *            measured 2.44 (+6%); before: 12 blocks per plane, WAF 17.1 (analytical for its
 *            physical 1.5x: 1.72).
 *   1 GiB:   40 blocks per plane, 32 of data: a = 1.1406, analytical 4.24, measured 4.28 (+1%);
 *            before: 36 blocks per plane, WAF 29 (the colleague's trace: 29.3).
 * Few blocks per plane make greedy a little worse than the model, hence 10%.
 */
static void test_default_random(gconstpointer data)
{
    uint64_t capacity = GPOINTER_TO_SIZE(data) << 20, U = capacity / 4096, now = 0, done;
    double bpp, data_blocks = (double)U / 32 / 256, a, expect, waf;
    NhEngine *e = default_device(capacity, &bpp);
    GRand *r = g_rand_new_with_seed(42);

    write_seq(e, capacity, &now);
    for (int phase = 0; phase < 2; phase++) {
        nh_engine_stats_reset(e);
        for (uint64_t i = 0; i < 3 * U; i++) {
            NhRequest q = { .op = NH_OP_WRITE, .length = 4096,
                            .offset = (uint64_t)g_rand_int_range(r, 0, (gint32)U) * 4096 };
            now += 1000;
            g_assert_true(nh_engine_submit(e, &q, now, &done, NULL));
        }
    }
    /* less the blocks kept for the stream frontiers, which untagged writes never reach */
    a = (bpp - (unit_placement(e)->max_streams - 1) - 1 - 2.5) / data_blocks;
    expect = a / (a + lambert_w0(-a * exp(-a)));
    waf = counter(e, "waf");
    g_test_message("%" G_GUINT64_FORMAT " MiB, %.0f blocks per plane: a %.4f, WAF measured %.3f, "
                   "analytical %.3f (%+.1f%%)", capacity >> 20, bpp, a, waf, expect,
                   100 * (waf / expect - 1));
    g_assert_cmpfloat(fabs(waf / expect - 1), <, 0.10);
    g_assert_true(nh_engine_check(e, NULL));
    g_rand_free(r);
    nh_engine_free(e);
}

/*
 * An idle device cleans every plane back to gc-high (nh_engine_idle), wherever the writes
 * before left it between gc-low and gc-high: what comes after the idle time then pays no GC
 * until it has written gc-high - gc-low blocks' worth.  One plane, streams off; gc-low 20% and
 * gc-high 60% of the spare blocks, so the band is many blocks wide; random overwrites of
 * lengths that end the steady state at many points of the band.  Seen red with only the planes
 * below gc-low cleaned at idle (the last behaviour): GC within the first blocks after the idle
 * time whenever a plane had stopped near gc-low.
 */
static void test_idle_refills(void)
{
    const uint64_t capacity = 4 << 20, U = capacity / 4096;

    for (uint32_t end = 0; end < 24; end++) {
        NhEngine *e = unit_engine("channels=1,ways=1,dies=1,planes=1,pages=32,op=30,"
                                  "gc-low=20,gc-high=60,gc-critical=5,streams=0", capacity);
        const NhConfig *c = nh_engine_config(e);
        uint64_t spare = c->blocks - U / c->pages, now = 0, done, victims, gc;
        uint64_t band = spare * 60 / 100 - (spare * 20 + 99) / 100;   /* whole blocks, at least */
        GRand *r = g_rand_new_with_seed(end);

        g_assert_cmpuint(band, >=, 3);
        for (uint64_t i = 0; i < 8 * U + end * 37; i++) {
            NhRequest q = { .op = NH_OP_WRITE, .length = 4096,
                            .offset = (uint64_t)g_rand_int_range(r, 0, (gint32)U) * 4096 };
            g_assert_true(nh_engine_submit(e, &q, now += 1000, &done, NULL));
        }
        now = nh_engine_idle(e, now, &victims);
        gc = unit_stat(e, "ftl", "gc_blocks");
        for (uint64_t i = 0; i < (band - 1) * c->pages; i++) {
            NhRequest q = { .op = NH_OP_WRITE, .length = 4096,
                            .offset = (uint64_t)g_rand_int_range(r, 0, (gint32)U) * 4096 };
            g_assert_true(nh_engine_submit(e, &q, now += 1000, &done, NULL));
        }
        g_test_message("end %u: %" G_GUINT64_FORMAT " victims before, %" G_GUINT64_FORMAT
                       " at idle, %" G_GUINT64_FORMAT " after", end, gc - victims, victims,
                       unit_stat(e, "ftl", "gc_blocks") - gc);
        g_assert_cmpuint(gc, >, victims);
        g_assert_cmpuint(unit_stat(e, "ftl", "gc_blocks"), ==, gc);
        unit_check(e);
        g_rand_free(r);
        nh_engine_free(e);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/waf/greedy/op15", test_greedy_op15);
    g_test_add_func("/waf/greedy/op25", test_greedy_op25);
    g_test_add_func("/waf/greedy/op35", test_greedy_op35);
    g_test_add_func("/waf/greedy/dynamic", test_greedy_dynamic);
    g_test_add_func("/waf/idle-refills", test_idle_refills);
    g_test_add_data_func("/waf/default/sequential/256M", GSIZE_TO_POINTER(256), test_default_seq);
    g_test_add_data_func("/waf/default/sequential/1G", GSIZE_TO_POINTER(1024), test_default_seq);
    g_test_add_data_func("/waf/default/random/256M", GSIZE_TO_POINTER(256), test_default_random);
    g_test_add_data_func("/waf/default/random/1G", GSIZE_TO_POINTER(1024), test_default_random);
    return g_test_run();
}
