/*
 * NAND operations that cover several pages, and the staging that feeds them (page, dftl):
 * multi-plane programs and reads (one tPROG / tR per die, transfers serial), TLC one-shot
 * programming (a word line's 3 pages in one tPROG) and stripe-aware merging (seed 001).
 * Times follow from nand.h: SLC 25 us tR, 200 us tPROG, 4 KiB over 800 MB/s 5.12 us.
 */
#include "unit.h"

#include <string.h>

#define IDLE 1000000000000ull   /* far after anything booked so far */
#define XFER 5120ull
#define TPROG 200000ull
#define TR 25000ull
#define TLC_PROG 2926000ull

static uint64_t submit(NhEngine *e, NhOp op, uint32_t flags, uint64_t off, uint64_t len,
                       uint64_t now)
{
    NhRequest q = { .op = op, .flags = flags, .offset = off, .length = len };
    uint64_t done;
    GError *err = NULL;
    nh_engine_submit(e, &q, now, &done, &err);
    g_assert_no_error(err);
    return done;
}

/* Two planes of one die: pages 0 and 1 of a write land on plane 0 and 1 at the same offset. */
static void test_multi_plane(void)
{
    NhEngine *e = unit_engine("channels=1,ways=1,planes=2,pages=16,op=10", 1 << 20);

    /* one tPROG after both transfers, not two programs back to back (2 * 205,120 ns) */
    g_assert_cmpuint(submit(e, NH_OP_WRITE, 0, 0, 2 * 4096, 0), ==, 2 * XFER + TPROG);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 2);
    g_assert_cmpuint(unit_stat(e, "nand", "program_ops"), ==, 1);
    /* reads: one tR senses both planes, the transfers follow each other (not 2 * 30,120) */
    g_assert_cmpuint(submit(e, NH_OP_READ, 0, 0, 2 * 4096, IDLE) - IDLE, ==, TR + 2 * XFER);
    g_assert_cmpuint(unit_stat(e, "nand", "read_ops"), ==, 1);
    /* separate requests are separate operations, even at the same time */
    g_assert_cmpuint(submit(e, NH_OP_WRITE, 0, 2 * 4096, 4096, 2 * IDLE) - 2 * IDLE, ==,
                     XFER + TPROG);
    g_assert_cmpuint(submit(e, NH_OP_WRITE, 0, 3 * 4096, 4096, 2 * IDLE) - 2 * IDLE, ==,
                     2 * (XFER + TPROG));
    unit_check(e);
    nh_engine_free(e);

    /* planes=1 is unchanged: two dies would overlap, one die serialises */
    e = unit_engine("channels=1,ways=1,pages=16,op=10", 1 << 20);
    g_assert_cmpuint(submit(e, NH_OP_WRITE, 0, 0, 2 * 4096, 0), ==, 2 * (XFER + TPROG));
    g_assert_cmpuint(unit_stat(e, "nand", "program_ops"), ==, 2);
    nh_engine_free(e);
}

static void expect_refused(const char *props, const char *msg)
{
    NhConfig c;
    GError *err = NULL;

    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, props, &err));
    g_assert_null(nh_engine_new(&c, 1 << 20, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->message, msg));
    g_error_free(err);
}

static void test_one_shot(void)
{
    NhEngine *e;

    /* one-shot: three pages of one word line cost 3 transfers and one tPROG */
    e = unit_engine("channels=1,ways=1,pages=96,op=10,cell=tlc,one-shot=on", 1 << 20);
    g_assert_cmpuint(submit(e, NH_OP_WRITE, NH_REQ_FUA, 0, 3 * 4096, 0), ==,
                     3 * XFER + TLC_PROG);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 3);
    g_assert_cmpuint(unit_stat(e, "nand", "program_ops"), ==, 1);
    /* a single page is staged (complete at once) and a flush programs its word line padded */
    g_assert_cmpuint(submit(e, NH_OP_WRITE, 0, 3 * 4096, 4096, IDLE), ==, IDLE);
    g_assert_true(nh_engine_is_mapped(e, 3 * 4096));
    g_assert_cmpuint(submit(e, NH_OP_FLUSH, 0, 0, 0, IDLE) - IDLE, ==, 3 * XFER + TLC_PROG);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_padding"), ==, 2);
    unit_check(e);
    nh_engine_free(e);

    /* without it: three programs back to back */
    e = unit_engine("channels=1,ways=1,pages=96,op=10,cell=tlc", 1 << 20);
    g_assert_cmpuint(submit(e, NH_OP_WRITE, NH_REQ_FUA, 0, 3 * 4096, 0), ==,
                     3 * (XFER + TLC_PROG));
    nh_engine_free(e);

    /* dftl stages alike: a staged page is read from the buffer without a mapping lookup; its
     * entry is looked up (a miss) when its word line is programmed, padded, by the flush */
    e = unit_engine("ftl=dftl,channels=1,ways=1,pages=96,op=10,cell=tlc,one-shot=on", 1 << 20);
    submit(e, NH_OP_WRITE, 0, 0, 4096, 0);
    submit(e, NH_OP_READ, 0, 0, 4096, 1000);
    g_assert_cmpuint(unit_stat(e, "ftl.cmt", "hits") + unit_stat(e, "ftl.cmt", "misses"), ==, 0);
    g_assert_cmpuint(unit_stat(e, "nand", "page_reads"), ==, 0);
    g_assert_cmpuint(submit(e, NH_OP_FLUSH, 0, 0, 0, 2000) - 2000, ==, 3 * XFER + TLC_PROG);
    g_assert_cmpuint(unit_stat(e, "ftl.cmt", "misses"), ==, 1);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_padding"), ==, 2);
    unit_check(e);
    nh_engine_free(e);

    expect_refused("cell=slc,one-shot=on", "one-shot: one-shot programming of a word line's 3 "
                   "pages needs cell=tlc, got cell=slc");
    expect_refused("cell=tlc,one-shot=on", "one-shot: pages (256) must be a multiple of 3");
    expect_refused("cell=tlc,pages=384,one-shot=on,ftl=fast", "one-shot: only ftl=page");
    expect_refused("stripe-merge=on,ftl=bast", "stripe-merge: only ftl=page and ftl=dftl");
}

/* A partial stripe waits at most one tPROG; the next request after that finds it programmed. */
static void test_bounded_wait(void)
{
    NhEngine *e = unit_engine("channels=2,ways=1,pages=16,op=10,stripe-merge=on", 1 << 20);

    g_assert_cmpuint(submit(e, NH_OP_WRITE, 0, 0, 4096, 1000), ==, 1000);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 0);
    submit(e, NH_OP_READ, 0, 0, 4096, 1000 + TPROG - 1);      /* served from the stage */
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 0);
    g_assert_cmpuint(unit_stat(e, "nand", "page_reads"), ==, 0);
    /* forced out at 1000 + tPROG: the read waits for that program's die */
    g_assert_cmpuint(submit(e, NH_OP_READ, 0, 0, 4096, 1000 + TPROG) - (1000 + TPROG), ==,
                     XFER + TPROG + TR + XFER);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_partial"), ==, 1);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_pages"), ==, 1);
    /* a full stripe (one page per plane) goes at once: two transfers on two buses, one tPROG */
    g_assert_cmpuint(submit(e, NH_OP_WRITE, NH_REQ_FUA, 0, 2 * 4096, IDLE) - IDLE, ==,
                     XFER + TPROG);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_merges"), ==, 1);
    unit_check(e);
    nh_engine_free(e);
}

/*
 * Seed 001's write amplification: writes smaller than what the flash programs at once.  Four
 * streams write 4 KiB sequentially, interleaved, on 16 KiB pages (a stripe is 8 planes of
 * 16 KiB), each request issued when the previous one completes (QD1).  Unmerged, every 4 KiB
 * write reads the old 16 KiB page and programs a whole new one.  Staged, the four 4 KiB writes
 * of a page meet in the staging buffer and the page is programmed once, in full stripes.
 */
typedef struct Run {
    uint64_t programs, rmw, copies, stripes, partial, time;
} Run;

static Run interleaved_streams(const char *merge)
{
    char *props = g_strdup_printf("channels=4,ways=2,pages=16,page-size=16K,op=20,"
                                  "stripe-merge=%s", merge);
    NhEngine *e = unit_engine(props, 16 << 20);
    uint64_t now = 0;
    Run r;

    for (uint64_t i = 0; i < 4096; i++) {
        uint64_t stream = i % 4, off = stream * (4 << 20) + (i / 4) * 4096;
        now = submit(e, NH_OP_WRITE, 0, off, 4096, now);
    }
    now = submit(e, NH_OP_FLUSH, 0, 0, 0, now);
    unit_check(e);
    r = (Run){ unit_stat(e, "nand", "page_programs"), unit_stat(e, "ftl", "rmw_reads"),
               unit_stat(e, "ftl", "gc_page_copies"), unit_stat(e, "ftl", "stripe_merges"),
               unit_stat(e, "ftl", "stripe_partial"), now };
    g_test_message("stripe-merge=%s: %" G_GUINT64_FORMAT " programs of 16 KiB for 16 MiB "
                   "written in 4 KiB (%.2f x the bytes), %" G_GUINT64_FORMAT
                   " read-modify-write reads, %" G_GUINT64_FORMAT " GC copies, %"
                   G_GUINT64_FORMAT " full stripes, %.1f ms",
                   merge, r.programs, r.programs * 16384.0 / (4096 * 4096.0), r.rmw, r.copies,
                   r.stripes, r.time / 1e6);
    g_free(props);
    nh_engine_free(e);
    return r;
}

static void test_sub_page_streams(void)
{
    Run off = interleaved_streams("off"), on = interleaved_streams("on");

    /* off: 4096 programs, one per write, plus 800 GC copies of the pages the rewrites left
     * invalid: 4.78 x the bytes written; 1,134.8 ms */
    g_assert_cmpuint(off.programs, ==, 4896);
    g_assert_cmpuint(off.copies, ==, 800);
    g_assert_cmpuint(off.rmw, ==, 3072);        /* all but the first write of each page */
    /* on: each page programmed once, whole: 1.00 x, no reads, no GC; 28.2 ms (40 x faster,
     * since writes complete when staged and stripes program 8 dies at once) */
    g_assert_cmpuint(on.programs, ==, 1024);
    g_assert_cmpuint(on.copies, ==, 0);
    g_assert_cmpuint(on.rmw, ==, 0);
    g_assert_cmpuint(on.stripes, ==, 128);      /* 1024 pages in stripes of 8 */
    g_assert_cmpuint(on.partial, ==, 0);
    g_assert_cmpuint(on.time * 10, <, off.time);
}

/*
 * Random 4 KiB writes at QD1 on the default 32 planes (8 channels x 4 ways): unmerged, each
 * write is a one-page program (a partial stripe) the next write waits for; staged, 32 pages
 * go out as one full stripe while the next 32 fill the other half of the buffer.
 */
static Run random_qd1(const char *merge)
{
    char *props = g_strdup_printf("pages=64,stripe-merge=%s", merge);
    NhEngine *e = unit_engine(props, 64 << 20);
    GRand *rnd = g_rand_new_with_seed(11);
    uint64_t now = 0;
    Run r;

    for (int i = 0; i < 32768; i++) {
        now = submit(e, NH_OP_WRITE, 0, (uint64_t)g_rand_int_range(rnd, 0, 16384) * 4096, 4096,
                     now);
    }
    now = submit(e, NH_OP_FLUSH, 0, 0, 0, now);
    unit_check(e);
    r = (Run){ unit_stat(e, "nand", "page_programs"), 0, unit_stat(e, "ftl", "gc_page_copies"),
               unit_stat(e, "ftl", "stripe_merges"), unit_stat(e, "ftl", "stripe_partial"), now };
    g_test_message("stripe-merge=%s: %" G_GUINT64_FORMAT " programs (%" G_GUINT64_FORMAT
                   " GC copies, %" G_GUINT64_FORMAT " absorbed), %" G_GUINT64_FORMAT
                   " full stripes, %" G_GUINT64_FORMAT " partial, %.0f writes/s",
                   merge, r.programs, r.copies, unit_stat(e, "ftl", "stripe_overwrites"), r.stripes,
                   r.partial, 32768 / (r.time / 1e9));
    g_rand_free(rnd);
    g_free(props);
    nh_engine_free(e);
    return r;
}

static void test_random_qd1(void)
{
    Run off = random_qd1("off"), on = random_qd1("on");

    /* off: 38,006 programs (5,238 GC copies), 4,594 writes/s.  on: 37,998 programs (5,264
     * GC copies; 34 writes absorbed by a staged copy), 1,022 full stripes and the final partial
     * one, 84,311 writes/s: 18 x the throughput.  Page mapping already programs whole pages,
     * so the flash work hardly changes; the gain is parallelism and staging. */
    g_assert_cmpuint(off.stripes, ==, 0);
    g_assert_cmpuint(on.stripes, ==, 1022);
    g_assert_cmpuint(on.partial, ==, 1);
    g_assert_cmpuint(on.time * 10, <, off.time);
    g_assert_cmpuint(on.programs, <=, off.programs);
}

/* Invariants with staging under a random mix of writes (some FUA, some sub-page), reads, trims
 * and flushes, with one-shot and multi-plane too. */
static void test_random_mix(gconstpointer props)
{
    NhEngine *e = unit_engine(props, 4 << 20);
    GRand *rnd = g_rand_new_with_seed(3);
    uint64_t now = 0;

    for (int i = 0; i < 40000; i++) {
        uint64_t off = (uint64_t)g_rand_int_range(rnd, 0, 4096) * 1024;
        uint64_t len = (uint64_t)g_rand_int_range(rnd, 1, 40) * 1024;
        int k = g_rand_int_range(rnd, 0, 100);
        len = MIN(len, (4 << 20) - off);
        now += g_rand_int_range(rnd, 0, 400000);
        if (k < 70) {
            submit(e, NH_OP_WRITE, k < 5 ? NH_REQ_FUA : 0, off, len, now);
            g_assert_true(nh_engine_is_mapped(e, off));
        } else if (k < 90) {
            submit(e, NH_OP_READ, 0, off, len, now);
        } else if (k < 98) {
            submit(e, NH_OP_TRIM, 0, off, len, now);
        } else {
            submit(e, NH_OP_FLUSH, 0, 0, 0, now);
        }
        if (i % 5000 == 0) {
            unit_check(e);
        }
    }
    unit_check(e);
    g_assert_cmpuint(unit_stat(e, "ftl", "gc_blocks"), >, 0);
    g_rand_free(rnd);
    nh_engine_free(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/stripe/multi-plane", test_multi_plane);
    g_test_add_func("/stripe/one-shot", test_one_shot);
    g_test_add_func("/stripe/bounded-wait", test_bounded_wait);
    g_test_add_func("/stripe/sub-page-streams", test_sub_page_streams);
    g_test_add_func("/stripe/random-qd1", test_random_qd1);
    g_test_add_data_func("/stripe/mix/merge", "channels=2,ways=2,pages=16,op=10,stripe-merge=on",
                         test_random_mix);
    g_test_add_data_func("/stripe/mix/merge-planes",
                         "channels=2,ways=1,planes=2,pages=16,op=10,stripe-merge=on",
                         test_random_mix);
    g_test_add_data_func("/stripe/mix/one-shot",
                         "channels=2,ways=1,planes=2,pages=24,op=10,cell=tlc,one-shot=on",
                         test_random_mix);
    g_test_add_data_func("/stripe/mix/both",
                         "channels=2,ways=1,planes=2,pages=24,op=10,cell=tlc,one-shot=on,"
                         "stripe-merge=on", test_random_mix);
    g_test_add_data_func("/stripe/mix/dftl-both",
                         "ftl=dftl,cmt-size=4K,channels=2,ways=1,planes=2,pages=24,op=10,cell=tlc,"
                         "one-shot=on,stripe-merge=on", test_random_mix);
    return g_test_run();
}
