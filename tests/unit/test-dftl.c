/*
 * DFTL: CMT hits, misses and translation-page traffic computed by hand on tiny caches, batched
 * write-back, trim, invariants under random I/O with GC of both block kinds, the state file
 * (mapping, GTD and CMT), and the cmt-size key.
 */
#include "unit.h"

#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define MIB (1024ull * 1024)
/* one plane, 16 MiB: 4096 logical pages in 4 translation pages of 1024 entries */
#define ONE_PLANE "ftl=dftl,channels=1,ways=1,pages=64,op=20"

static uint64_t io(NhEngine *e, NhOp op, uint64_t lpn, uint64_t npages)
{
    static uint64_t now;
    NhRequest q = { .op = op, .offset = lpn * 4096, .length = npages * 4096 };
    uint64_t done;
    GError *err = NULL;

    now += 1000000;
    g_assert_true(nh_engine_submit(e, &q, now, &done, &err));
    g_assert_no_error(err);
    return done - now;
}

static void expect(NhEngine *e, uint64_t hits, uint64_t misses, uint64_t treads, uint64_t twrites)
{
    g_assert_cmpuint(unit_stat(e, "ftl.cmt", "hits"), ==, hits);
    g_assert_cmpuint(unit_stat(e, "ftl.cmt", "misses"), ==, misses);
    g_assert_cmpuint(unit_stat(e, "ftl", "translation_page_reads"), ==, treads);
    g_assert_cmpuint(unit_stat(e, "ftl", "translation_page_writes"), ==, twrites);
}

/* Two entries: every case of hit, clean and dirty eviction, fetch of a written and an unwritten
 * translation page.  Reads of unwritten data are free, so that the flash reads counted are the
 * translation pages' and the mapped data's. */
static void test_known_lru(void)
{
    NhEngine *e = unit_engine(ONE_PLANE ",cmt-size=16,unwritten-reads=free", 16 * MIB);
    uint64_t lat;

    io(e, NH_OP_WRITE, 0, 1);           /* miss, page 0 never written: no read */
    io(e, NH_OP_WRITE, 1024, 1);        /* miss (translation page 1) */
    io(e, NH_OP_WRITE, 0, 1);           /* hit */
    expect(e, 1, 2, 0, 0);
    io(e, NH_OP_READ, 2048, 1);         /* miss; evicts dirty 1024: writes page 1 (no old copy) */
    expect(e, 1, 3, 0, 1);
    lat = io(e, NH_OP_READ, 1024, 1);   /* miss; evicts dirty 0: writes page 0; reads page 1 */
    expect(e, 1, 4, 1, 2);
    /* write-back (program), then the fetch (read), then the data read, one after the other */
    g_assert_cmpuint(lat, >=, 200000 + 2 * 25000);
    io(e, NH_OP_READ, 0, 1);            /* miss; evicts clean 2048: no write; reads page 0 */
    expect(e, 1, 5, 2, 2);
    /* data: 2 reads of mapped pages; translation: 2 reads */
    g_assert_cmpuint(unit_stat(e, "nand", "page_reads"), ==, 4);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 5);
    unit_check(e);
    nh_engine_free(e);
}

/* Evicting one dirty entry writes its translation page once with every dirty entry of that
 * page, which are then clean; trim rewrites an uncached translation page once. */
static void test_known_batch(void)
{
    NhEngine *e = unit_engine(ONE_PLANE ",cmt-size=32", 16 * MIB);

    io(e, NH_OP_WRITE, 0, 3);           /* lpn 0, 1, 2: three misses, all dirty, page 0 */
    io(e, NH_OP_WRITE, 1024, 1);        /* page 1, cache full */
    expect(e, 0, 4, 0, 0);
    io(e, NH_OP_READ, 2048, 1);         /* evicts 0: writes page 0, which cleans 1 and 2 */
    expect(e, 0, 5, 0, 1);
    io(e, NH_OP_READ, 3000, 1);         /* evicts 1, clean */
    io(e, NH_OP_READ, 4000, 1);         /* evicts 2, clean */
    expect(e, 0, 7, 0, 1);
    io(e, NH_OP_READ, 100, 1);          /* evicts 1024 (dirty): writes page 1; fetches page 0 */
    expect(e, 0, 8, 1, 2);
    /* cached now: 100, 4000, 3000, 2048.  lpn 1 and 2 are mapped but not cached: one
     * read-modify-write of page 0; lpn 3 was never written */
    io(e, NH_OP_TRIM, 1, 3);
    expect(e, 0, 8, 2, 3);
    g_assert_false(nh_engine_is_mapped(e, 4096));
    g_assert_true(nh_engine_is_mapped(e, 0));
    /* a trimmed cached entry becomes dirty: no flash traffic now */
    io(e, NH_OP_WRITE, 4000, 1);        /* hit */
    io(e, NH_OP_TRIM, 4000, 1);
    expect(e, 1, 8, 2, 3);
    unit_check(e);
    nh_engine_free(e);
}

/* With a CMT as large as the space, only cold misses remain, and nothing is written back. */
static void test_whole_space_cached(void)
{
    NhEngine *e = unit_engine(ONE_PLANE, 16 * MIB);     /* default 4M: more entries than pages */

    for (int round = 0; round < 3; round++) {
        for (uint64_t lpn = 0; lpn < 4096; lpn += 8) {
            io(e, NH_OP_WRITE, lpn, 8);
        }
    }
    expect(e, 2 * 4096, 4096, 0, 0);
    unit_check(e);
    nh_engine_free(e);
}

/* Random writes, reads and trims of random sizes on tiny devices with tiny caches: GC runs all
 * the time on data and translation blocks; the full check holds throughout. */
static void churn(NhEngine *e, uint64_t capacity, unsigned ops, guint32 seed, bool *shadow)
{
    uint32_t ps = nh_engine_config(e)->page_size;
    uint64_t npages = capacity / ps;
    GRand *r = g_rand_new_with_seed(seed);
    static uint64_t now;

    for (unsigned i = 0; i < ops; i++) {
        NhRequest q = { 0 };
        uint64_t done, len;
        unsigned kind = g_rand_int_range(r, 0, 10);
        GError *err = NULL;

        q.offset = g_rand_int_range(r, 0, (gint32)npages) * (uint64_t)ps;
        len = (uint64_t)g_rand_int_range(r, 1, g_rand_boolean(r) ? 3 : 40) * ps;
        q.length = MIN(len, capacity - q.offset);
        q.op = kind < 6 ? NH_OP_WRITE : kind < 9 ? NH_OP_READ : NH_OP_TRIM;
        now += g_rand_int_range(r, 0, 100000);
        g_assert_true(nh_engine_submit(e, &q, now, &done, &err));
        g_assert_no_error(err);
        for (uint64_t p = q.offset / ps; shadow && q.op != NH_OP_READ &&
             p < (q.offset + q.length) / ps; p++) {
            shadow[p] = q.op == NH_OP_WRITE;
        }
        if (i % 5000 == 4999) {
            unit_check(e);
        }
    }
    g_rand_free(r);
}

static void test_random(void)
{
    static const char *const props[] = {
        "ftl=dftl,channels=2,ways=2,pages=16,op=10,cmt-size=256",
        "ftl=dftl,channels=1,ways=1,pages=32,op=8,cmt-size=64,gc=cost-benefit",
        "ftl=dftl,channels=2,ways=1,dies=2,pages=16,op=15,cmt-size=1K,wl-threshold=4",
        "ftl=dftl,channels=1,ways=2,pages=8,page-size=16K,op=20,cmt-size=128",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(props); i++) {
        uint64_t cap = 8 * MIB;
        NhEngine *e = unit_engine(props[i], cap);
        uint32_t ps = nh_engine_config(e)->page_size;
        bool *shadow = g_new0(bool, cap / ps);
        uint64_t pages_total = unit_stat(e, "geometry", "pages_total");

        churn(e, cap, 40000, (guint32)i + 1, shadow);
        unit_check(e);
        for (uint64_t p = 0; p < cap / ps; p++) {
            g_assert_cmpint(nh_engine_is_mapped(e, p * ps), ==, shadow[p]);
        }
        g_test_message("%s: hits %" G_GUINT64_FORMAT " misses %" G_GUINT64_FORMAT
                       " translation reads %" G_GUINT64_FORMAT " writes %" G_GUINT64_FORMAT
                       " gc copies %" G_GUINT64_FORMAT, props[i], unit_stat(e, "ftl.cmt", "hits"),
                       unit_stat(e, "ftl.cmt", "misses"), unit_stat(e, "ftl", "translation_page_reads"),
                       unit_stat(e, "ftl", "translation_page_writes"),
                       unit_stat(e, "ftl", "gc_page_copies"));
        /* more translation pages written than the device has pages: translation blocks were
         * cleaned and reused */
        g_assert_cmpuint(unit_stat(e, "ftl", "translation_page_writes"), >, pages_total);
        g_assert_cmpuint(unit_stat(e, "ftl", "gc_blocks"), >, 0);
        g_free(shadow);
        nh_engine_free(e);
    }
}

static void test_state(void)
{
    const char *props = "ftl=dftl,channels=2,ways=1,pages=16,op=15,cmt-size=512";
    NhEngine *a = unit_engine(props, 8 * MIB), *b = unit_engine(props, 8 * MIB);
    char *dir = g_dir_make_tmp("nh-dftl-XXXXXX", NULL);
    char *path = g_build_filename(dir, "state", NULL);
    GError *err = NULL;
    char *ja, *jb;

    churn(a, 8 * MIB, 20000, 7, NULL);
    g_assert_true(nh_engine_save(a, path, NULL, 0, &err));
    g_assert_no_error(err);
    g_assert_true(nh_engine_load(b, path, NULL, NULL, &err));
    g_assert_no_error(err);
    unit_check(b);
    for (uint64_t p = 0; p < 8 * MIB; p += 4096) {
        g_assert_cmpint(nh_engine_is_mapped(a, p), ==, nh_engine_is_mapped(b, p));
    }
    /* the same CMT, in the same LRU order: reads hit and miss alike */
    for (uint64_t lpn = 0; lpn < 2048; lpn += 3) {
        io(a, NH_OP_READ, lpn, 1);
        io(b, NH_OP_READ, lpn, 1);
    }
    ja = nh_engine_stats_json(a, false);
    jb = nh_engine_stats_json(b, false);
    g_assert_true(unit_json_same(ja, jb, "host"));
    g_assert_true(unit_json_same(ja, jb, "ftl.cmt"));
    g_free(ja);
    g_free(jb);
    nh_engine_free(b);

    /* a smaller CMT cannot take the saved one */
    b = unit_engine("ftl=dftl,channels=2,ways=1,pages=16,op=15,cmt-size=64", 8 * MIB);
    g_assert_false(nh_engine_load(b, path, NULL, NULL, &err));
    g_assert_nonnull(strstr(err->message, "cmt-size"));
    g_clear_error(&err);
    nh_engine_free(b);
    nh_engine_free(a);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
}

static void test_config(void)
{
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;
    char *v;

    unit_defaults(&c);
    v = nh_config_get(&c, "cmt-size");
    g_assert_cmpstr(v, ==, "4M");
    g_free(v);
    g_assert_true(nh_config_parse(&c, "ftl=dftl,cmt-size=12", NULL));
    g_assert_false(nh_config_check(&c, &err));
    g_assert_nonnull(strstr(err->message, "cmt-size: must be a multiple of 8"));
    g_clear_error(&err);
    g_assert_false(nh_config_parse(&c, "cmt-size=4X", &err));
    g_assert_nonnull(strstr(err->message, "cmt-size"));
    g_clear_error(&err);
    g_assert_false(nh_config_parse(&c, "cmt-size=4", &err));
    g_assert_nonnull(strstr(err->message, "cmt-size: must be between 8"));
    g_clear_error(&err);

    /* blocks=auto leaves room for the translation pages and the extra frontier */
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "ftl=dftl", NULL));
    e = nh_engine_new(&c, 1ull << 30, &err);
    g_assert_no_error(err);
    churn(e, 64 * MIB, 2000, 3, NULL);
    unit_check(e);
    nh_engine_free(e);
    /* an explicit count without that room is refused, naming the minimum */
    g_assert_true(nh_config_parse(&c, "channels=1,ways=1,pages=64,blocks=70,op=7", NULL));
    g_assert_null(nh_engine_new(&c, 16 * MIB, &err));
    g_assert_nonnull(strstr(err->message, "blocks: 70 blocks per plane"));
    g_clear_error(&err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/dftl/known/lru", test_known_lru);
    g_test_add_func("/dftl/known/batch", test_known_batch);
    g_test_add_func("/dftl/known/whole-space", test_whole_space_cached);
    g_test_add_func("/dftl/random", test_random);
    g_test_add_func("/dftl/state", test_state);
    g_test_add_func("/dftl/config", test_config);
    return g_test_run();
}
