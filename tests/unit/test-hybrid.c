/*
 * Hybrid FTLs (bast, fast, sast): merges computed by hand on tiny geometries, a read waiting
 * behind a merge, and a save/load round trip.  The rules being checked are in ftl/hybrid.h and
 * docs/ftl-hybrid.md; in short: a write goes to its data block in place when that page is
 * erased and after every programmed page, else to a log block; a full in-order log block is
 * switched at once; a victim log block is merged partially if in order, else fully per logical
 * block with a valid page in it.
 *
 * Every geometry here has one channel and one die, so the counters do not depend on placement.
 */
#include "unit.h"

#include <string.h>
#include <glib/gstdio.h>

#define PS 4096
#define IDLE 1000000000000ull   /* far after anything booked so far */

static uint64_t submit(NhEngine *e, NhOp op, uint64_t lpn, uint64_t npages, uint64_t now)
{
    NhRequest q = { .op = op, .offset = lpn * PS, .length = npages * PS };
    uint64_t done;
    GError *err = NULL;
    g_assert_true(nh_engine_submit(e, &q, now, &done, &err));
    g_assert_no_error(err);
    return done;
}

/* One page at a time, in the order given. */
static void write_each(NhEngine *e, const uint64_t *lpns, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        submit(e, NH_OP_WRITE, lpns[i], 1, 0);
    }
}

typedef struct Expect {
    uint64_t sw, partial, full, copies, erases, programs, reads;
} Expect;

static void expect(NhEngine *e, Expect x)
{
    unit_check(e);
    g_assert_cmpuint(unit_stat(e, "ftl.merges", "switch"), ==, x.sw);
    g_assert_cmpuint(unit_stat(e, "ftl.merges", "partial"), ==, x.partial);
    g_assert_cmpuint(unit_stat(e, "ftl.merges", "full"), ==, x.full);
    g_assert_cmpuint(unit_stat(e, "ftl", "gc_page_copies"), ==, x.copies);
    g_assert_cmpuint(unit_stat(e, "nand", "block_erases"), ==, x.erases);
    g_assert_cmpuint(unit_stat(e, "ftl", "gc_blocks"), ==, x.erases);   /* every erase is a merge's */
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, x.programs);
    g_assert_cmpuint(unit_stat(e, "nand", "page_reads"), ==, x.reads);
}

/* 8 pages per block, 16 logical blocks */
#define P8 "channels=1,ways=1,pages=8,op=10,log-blocks=3"
#define CAP8 (16 * 8 * PS)
/* 4 pages per block, 16 logical blocks; blocks=auto gives 20 (4 spare), so log-blocks <= 3 */
#define P4 "channels=1,ways=1,pages=4,op=10"
#define CAP4 (16 * 4 * PS)

/* FAST: block 0 written in place, rewritten in order into the SW, which fills and is switched:
 * no copy, one erase (the old data block).  8 + 8 programs. */
static void test_fast_switch(void)
{
    NhEngine *e = unit_engine("ftl=fast," P8, CAP8);

    submit(e, NH_OP_WRITE, 0, 8, 0);
    submit(e, NH_OP_WRITE, 0, 8, 0);
    expect(e, (Expect){ .sw = 1, .erases = 1, .programs = 16 });
    nh_engine_free(e);
}

/* FAST: blocks 0 and 1 written in place (16 programs); the first half of block 0 rewritten into
 * the SW (4 programs); a write of offset 0 of block 1 starts a new SW, so the old one is merged
 * partially: offsets 4..7 of block 0 are copied from its data block (pages_per_block / 2 = 4
 * reads and 4 programs) and the old data block is erased; then lpn 8 goes to the new SW (1).
 * Programs 16 + 4 + 4 + 1 = 25. */
static void test_fast_partial(void)
{
    NhEngine *e = unit_engine("ftl=fast," P8, CAP8);

    submit(e, NH_OP_WRITE, 0, 16, 0);
    submit(e, NH_OP_WRITE, 0, 4, 0);
    submit(e, NH_OP_WRITE, 8, 1, 0);
    expect(e, (Expect){ .partial = 1, .copies = 8 / 2, .erases = 1, .programs = 25,
                        .reads = 4 });
    g_assert_true(nh_engine_is_mapped(e, 7 * PS));
    nh_engine_free(e);
}

/*
 * FAST full merges, 4 pages per block, log-blocks=3 (SW + 2 RW).  Blocks 0..3 (lpn 0..15) are
 * written in place first (16 programs); then single pages, none at offset 0, so all go to RW:
 *   1 6 11 5   -> RW A = [1 6 11 5]
 *   2 13 7 9   -> RW B = [2 13 7 9]
 *   3          -> both RW full: victim A (oldest).  In A's page order:
 *                   lpn 1 -> full merge of block 0: lpn 0 (data), 1 (A), 2 (B), 3 (data): 4 copies,
 *                            erase old data block 0
 *                   lpn 6 -> block 1: 4 (data), 5 (A), 6 (A), 7 (B): 4 copies, erase
 *                   lpn 11 -> block 2: 8 (data), 9 (B), 10 (data), 11 (A): 4 copies, erase
 *                   lpn 5 -> already merged
 *                 erase A.  Then 3 -> RW C = [3]
 *   14 10 6    -> C = [3 14 10 6]
 *   15         -> victim B, whose only valid page now is 13:
 *                   full merge of block 3: 12 (data), 13 (B), 14 (C), 15 (data): 4 copies, erase
 *                 erase B.  Then 15 -> RW D.
 * Full merges 3 + 1 = 4, copies 16, erases 4 + 2 = 6, programs 16 + 13 host + 16 = 45, reads 16.
 */
static void test_fast_full(void)
{
    static const uint64_t seq[] = { 1, 6, 11, 5, 2, 13, 7, 9, 3, 14, 10, 6, 15 };
    NhEngine *e = unit_engine("ftl=fast,log-blocks=3," P4, CAP4);

    submit(e, NH_OP_WRITE, 0, 16, 0);
    write_each(e, seq, 8);
    expect(e, (Expect){ .programs = 24 });
    write_each(e, seq + 8, 1);
    expect(e, (Expect){ .full = 3, .copies = 12, .erases = 4, .programs = 24 + 12 + 1,
                        .reads = 12 });
    write_each(e, seq + 9, G_N_ELEMENTS(seq) - 9);
    expect(e, (Expect){ .full = 4, .copies = 16, .erases = 6, .programs = 45, .reads = 16 });
    nh_engine_free(e);
}

/* BAST: block 0 rewritten in order fills its log block, which is switched: no copy, 1 erase. */
static void test_bast_switch(void)
{
    NhEngine *e = unit_engine("ftl=bast,log-blocks=2," P4, CAP4);

    submit(e, NH_OP_WRITE, 0, 4, 0);
    submit(e, NH_OP_WRITE, 0, 4, 0);
    expect(e, (Expect){ .sw = 1, .erases = 1, .programs = 8 });
    nh_engine_free(e);
}

/*
 * BAST, 4 pages per block, log-blocks=2: blocks 0..3 written in place (16 programs), then
 *   1 2    -> log L0 of block 0 = [1 2] (offsets 1, 2: not in order)
 *   5      -> L1 of block 1 = [5]
 *   9      -> pool full: victim L0 (oldest): full merge of block 0: 0 (data), 1, 2 (L0),
 *             3 (data): 4 copies, erase data block and L0 (2 erases).  L2 of block 2 = [9]
 *   6      -> L1 = [5 6]
 *   12 13  -> victim L1: full merge of block 1: 4 (data), 5, 6 (L1), 7 (data): 4 copies,
 *             2 erases.  L3 of block 3 = [12 13] (offsets 0, 1: in order)
 *   1      -> victim L2: full merge of block 2: 8, 9 (L2), 10, 11: 4 copies, 2 erases.
 *             L0' = [1]
 *   10     -> victim L3, in order with 2 pages, and block 3's data block holds no valid page
 *             at offsets 0, 1: partial merge, 14 and 15 copied from the data block (2 copies),
 *             which is erased (1).  L2' = [10]
 * Full 3, partial 1, copies 14, erases 7, programs 16 + 9 + 14 = 39, reads 14.
 */
static void test_bast_full_partial(void)
{
    static const uint64_t seq[] = { 1, 2, 5, 9, 6, 12, 13, 1, 10 };
    NhEngine *e = unit_engine("ftl=bast,log-blocks=2," P4, CAP4);

    submit(e, NH_OP_WRITE, 0, 16, 0);
    write_each(e, seq, G_N_ELEMENTS(seq));
    expect(e, (Expect){ .full = 3, .partial = 1, .copies = 14, .erases = 7, .programs = 39,
                        .reads = 14 });
    nh_engine_free(e);
}

/*
 * SAST, 4 pages per block, sets of sast-n=2 logical blocks (set 0 = blocks 0, 1; set 1 = 2, 3),
 * at most sast-k=2 log blocks per set, log-blocks=3 in all.  Blocks 0..3 written in place (16):
 *   1 6 2 5      -> set 0's log A = [1 6 2 5]
 *   9            -> set 1's log B = [9]
 *   3 13 7 4 0   -> A full, set 0 holds 1 < 2: new log C = [3 7 4 0]; B = [9 13]
 *   1            -> C full and set 0 holds 2 = sast-k: victim A (the set's oldest):
 *                     lpn 1 -> full merge of block 0: 0 (C), 1 (A), 2 (A), 3 (C): 4 copies, erase
 *                     lpn 6 -> block 1: 4 (C), 5 (A), 6 (A), 7 (C): 4 copies, erase
 *                   erase A.  Set 0's new log E = [1]
 *   11 8         -> B = [9 13 11 8]
 *   14           -> B full, set 1 holds 1 < 2, but the pool holds 3 (B, C, E): victim B, the
 *                   oldest of all:
 *                     lpn 9 -> full merge of block 2: 8, 9 (B), 10 (data), 11 (B): 4 copies, erase
 *                     lpn 13 -> block 3: 12 (data), 13 (B), 14, 15 (data): 4 copies, erase
 *                   erase B.  Set 1's new log F = [14]
 * Full 4, copies 16, erases 6, programs 16 + 14 + 16 = 46, reads 16.
 */
static void test_sast_full(void)
{
    static const uint64_t seq[] = { 1, 6, 2, 5, 9, 3, 13, 7, 4, 0, 1, 11, 8, 14 };
    NhEngine *e = unit_engine("ftl=sast,sast-n=2,sast-k=2,log-blocks=3," P4, CAP4);

    submit(e, NH_OP_WRITE, 0, 16, 0);
    write_each(e, seq, 11);
    expect(e, (Expect){ .full = 2, .copies = 8, .erases = 3, .programs = 16 + 11 + 8,
                        .reads = 8 });
    write_each(e, seq + 11, G_N_ELEMENTS(seq) - 11);
    expect(e, (Expect){ .full = 4, .copies = 16, .erases = 6, .programs = 46, .reads = 16 });
    nh_engine_free(e);
}

/* Trimmed pages are never copied: the FAST full-merge pattern with block 2 trimmed first
 * copies block 2's pages only from the log blocks (9 and 11), so 2 copies fewer. */
static void test_trim_not_copied(void)
{
    static const uint64_t seq[] = { 1, 6, 11, 5, 2, 13, 7, 9, 3 };
    NhEngine *e = unit_engine("ftl=fast,log-blocks=3," P4, CAP4);

    submit(e, NH_OP_WRITE, 0, 16, 0);
    submit(e, NH_OP_TRIM, 8, 4, 0);
    write_each(e, seq, G_N_ELEMENTS(seq));
    /* as in test_fast_full up to lpn 3, less lpn 8 and 10 (trimmed, never rewritten) */
    expect(e, (Expect){ .full = 3, .copies = 10, .erases = 4, .programs = 16 + 9 + 10,
                        .reads = 10 });
    g_assert_false(nh_engine_is_mapped(e, 8 * PS));
    g_assert_true(nh_engine_is_mapped(e, 9 * PS));
    nh_engine_free(e);
}

/*
 * One die: the write of lpn 3 in the FAST full-merge pattern merges 3 logical blocks (12 copies,
 * 4 erases of t-erase=10ms) before its own program; a read arriving with it waits for all of it:
 *   copy = read (tR 25 us + 4 KiB over the bus 5.12 us) + program (5.12 us + tPROG 200 us)
 *        = 235.24 us;  read = 30.12 us
 *   12 * 235240 + 4 * 10,000,000 + 205120 (the host program) + 30120 = 43,058,120 ns.
 */
static void test_read_behind_merge(void)
{
    static const uint64_t seq[] = { 1, 6, 11, 5, 2, 13, 7, 9 };
    NhEngine *e = unit_engine("ftl=fast,log-blocks=3,t-erase=10ms," P4, CAP4);

    submit(e, NH_OP_WRITE, 0, 16, 0);
    write_each(e, seq, G_N_ELEMENTS(seq));
    g_assert_cmpuint(submit(e, NH_OP_READ, 15, 1, IDLE) - IDLE, ==, 25000 + 5120);
    submit(e, NH_OP_WRITE, 3, 1, 2 * IDLE);
    g_assert_cmpuint(unit_stat(e, "ftl.merges", "full"), ==, 3);
    g_assert_cmpuint(submit(e, NH_OP_READ, 15, 1, 2 * IDLE) - 2 * IDLE, ==,
                     12 * 235240 + 4 * 10000000ull + 205120 + 30120);
    nh_engine_free(e);
}

/* Save and load: the same mapping and block state, and the same merges afterwards. */
static void test_save_load(gconstpointer ftl)
{
    char *props = g_strdup_printf("ftl=%s,log-blocks=3,sast-n=2,sast-k=2,channels=2,ways=1,"
                                  "pages=8,op=10", (const char *)ftl);
    NhEngine *a = unit_engine(props, 2 << 20), *b = unit_engine(props, 2 << 20);
    char *dir = g_dir_make_tmp("nh-hybrid-XXXXXX", NULL);
    char *path = g_build_filename(dir, "state", NULL);
    GRand *r = g_rand_new_with_seed(11);
    GError *err = NULL;
    uint64_t pages = (2 << 20) / PS;

    for (int i = 0; i < 5000; i++) {
        uint64_t lpn = g_rand_int_range(r, 0, (gint32)pages - 4);
        submit(a, g_rand_int_range(r, 0, 10) ? NH_OP_WRITE : NH_OP_TRIM, lpn,
               g_rand_int_range(r, 1, 4), i * 1000);
    }
    g_assert_true(nh_engine_save(a, path, NULL, 0, &err));
    g_assert_no_error(err);
    g_assert_true(nh_engine_load(b, path, NULL, NULL, &err));
    g_assert_no_error(err);
    unit_check(b);
    for (int i = 0; i < 3000; i++) {
        uint64_t lpn = g_rand_int_range(r, 0, (gint32)pages - 4);
        uint64_t n = g_rand_int_range(r, 1, 4);
        submit(a, NH_OP_WRITE, lpn, n, IDLE + i * 1000);
        submit(b, NH_OP_WRITE, lpn, n, IDLE + i * 1000);
    }
    unit_check(b);
    for (uint64_t p = 0; p < pages; p++) {
        g_assert_cmpint(nh_engine_is_mapped(a, p * PS), ==, nh_engine_is_mapped(b, p * PS));
    }
    /* merge decisions depend only on saved state (free-block choice aside) */
    g_assert_cmpuint(unit_stat(a, "ftl.merges", "full"), ==, unit_stat(b, "ftl.merges", "full"));
    g_assert_cmpuint(unit_stat(a, "ftl", "gc_page_copies"), ==,
                     unit_stat(b, "ftl", "gc_page_copies"));
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    g_free(props);
    g_rand_free(r);
    nh_engine_free(a);
    nh_engine_free(b);
}

/* Another log-block layout is refused, naming the keys. */
static void test_load_other_layout(void)
{
    NhEngine *a = unit_engine("ftl=sast,sast-k=2," P4, CAP4), *b = unit_engine("ftl=sast,sast-k=3," P4, CAP4);
    char *dir = g_dir_make_tmp("nh-hybrid-XXXXXX", NULL);
    char *path = g_build_filename(dir, "state", NULL);
    GError *err = NULL;

    submit(a, NH_OP_WRITE, 0, 5, 0);
    g_assert_true(nh_engine_save(a, path, NULL, 0, &err));
    g_assert_false(nh_engine_load(b, path, NULL, NULL, &err));
    g_assert_nonnull(strstr(err->message, "sast-k"));
    g_clear_error(&err);
    g_assert_false(nh_engine_is_mapped(b, 0));
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    nh_engine_free(a);
    nh_engine_free(b);
}

static void refused(const char *props, const char *words)
{
    NhConfig c;
    GError *err = NULL;

    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, props, &err));
    g_assert_null(nh_engine_new(&c, CAP4, &err));
    g_assert_nonnull(err);
    if (!strstr(err->message, words)) {
        g_error("'%s' refused with '%s', expected '%s'", props, err->message, words);
    }
    g_error_free(err);
}

static void test_refusals(void)
{
    NhEngine *e;

    /* 4 log blocks and the merge reserve need 5 spare blocks, 20 blocks give 4 */
    refused("ftl=fast,log-blocks=4,blocks=20," P4, "blocks: 20 blocks per plane leave 4 spare "
            "beyond the 16 that hold the capacity 256.0 KiB, fewer than the 5 spare blocks per "
            "plane ftl=fast needs");
    refused("ftl=fast,log-blocks=1," P4, "fast needs at least 2");
    refused("ftl=sast,log-blocks=2,sast-k=3," P4, "sast-k");
    /* with blocks=auto the geometry grows to hold the pool */
    e = unit_engine("ftl=fast,log-blocks=9," P4, CAP4);
    g_assert_cmpuint(nh_engine_config(e)->blocks, ==, 16 + 9 + 1);
    nh_engine_free(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/hybrid/fast/switch", test_fast_switch);
    g_test_add_func("/hybrid/fast/partial", test_fast_partial);
    g_test_add_func("/hybrid/fast/full", test_fast_full);
    g_test_add_func("/hybrid/bast/switch", test_bast_switch);
    g_test_add_func("/hybrid/bast/full-partial", test_bast_full_partial);
    g_test_add_func("/hybrid/sast/full", test_sast_full);
    g_test_add_func("/hybrid/trim-not-copied", test_trim_not_copied);
    g_test_add_func("/hybrid/read-behind-merge", test_read_behind_merge);
    g_test_add_data_func("/hybrid/bast/save-load", "bast", test_save_load);
    g_test_add_data_func("/hybrid/fast/save-load", "fast", test_save_load);
    g_test_add_data_func("/hybrid/sast/save-load", "sast", test_save_load);
    g_test_add_func("/hybrid/load-other-layout", test_load_other_layout);
    g_test_add_func("/hybrid/refusals", test_refusals);
    return g_test_run();
}
