/*
 * Placement (docs/placement.md): per-tag frontier invariants under random operations for page
 * and dftl, state saved and restored with streams open, a hot/cold workload whose WAF is lower
 * tagged than untagged, refusals naming their key, DStream's k-means on hand-computed inputs,
 * and DFTL's mapping cache resized at random under load without losing a mapping.
 */
#include "unit.h"
#include "engine-priv.h"
#include "dstream.h"
#include "dftl.h"

#include <unistd.h>
#include <glib/gstdio.h>

#define MIB (1024ull * 1024)
#define SMALL "channels=2,ways=2,pages=32,op=20"
/* the same device in TLC with one-shot programming (pages a multiple of 3) */
#define SMALL_TLC "channels=2,ways=2,pages=48,op=20,cell=tlc,one-shot=on"

static uint64_t now;

static void io_flags(NhEngine *e, NhOp op, uint64_t lpn, uint64_t npages, uint16_t tag,
                     uint32_t flags)
{
    NhRequest q = { .op = op, .offset = lpn * 4096, .length = npages * 4096, .stream = tag,
                    .flags = flags };
    uint64_t done;
    GError *err = NULL;

    now += 100000;
    g_assert_true(nh_engine_submit(e, &q, now, &done, &err));
    g_assert_no_error(err);
}

static void io(NhEngine *e, NhOp op, uint64_t lpn, uint64_t npages, uint16_t tag)
{
    io_flags(e, op, lpn, npages, tag, 0);
}

/* With staging every page programmed is a staged host page, padding, a GC or wear-levelling
 * copy or a translation page, and staged programs fill whole word lines. */
static void staging_accounted(NhEngine *e)
{
    uint64_t staged = unit_stat(e, "ftl", "stripe_pages") + unit_stat(e, "ftl", "stripe_padding");

    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==,
                     staged + unit_stat(e, "ftl", "gc_page_copies") +
                     unit_stat(e, "ftl", "wl_page_copies") +
                     unit_stat(e, "ftl", "translation_page_writes"));
    g_assert_cmpuint(staged % 3, ==, 0);
}

/* The physical stream fixed mapping gives tag @t with @k physical streams. */
static int fixed_stream(uint16_t t, uint32_t k)
{
    return !t || k == 1 ? 0 : 1 + (t - 1) % (int)(k - 1);
}

/* Every mapped page lies in a block its tag's frontier or the GC frontier opened. */
static void check_fronts(NhEngine *e, const uint16_t *tag, uint64_t n, uint32_t k)
{
    for (uint64_t lpn = 0; lpn < n; lpn++) {
        int s = e->ops->stream_of(e->ftl, lpn);
        if (s >= 0 && s != NH_STREAM_GC && s != fixed_stream(tag[lpn], k)) {
            g_error("lpn %" G_GUINT64_FORMAT " written with tag %u lies on stream %d, not %d",
                    lpn, tag[lpn], s, fixed_stream(tag[lpn], k));
        }
    }
}

static void frontier_invariants(const char *props)
{
    NhEngine *e = unit_engine(props, 8 * MIB);
    uint64_t n = 8 * MIB / 4096, gc = 0;
    uint16_t *tag = g_new0(uint16_t, n);
    uint32_t k = unit_placement(e)->max_streams;
    GRand *r = g_rand_new_with_seed(11);

    for (int i = 0; i < 20000; i++) {
        uint64_t lpn = g_rand_int_range(r, 0, (gint32)n - 8);
        uint64_t len = g_rand_int_range(r, 1, 8);
        uint16_t t = (uint16_t)g_rand_int_range(r, 0, 6);
        int what = g_rand_int_range(r, 0, 10);

        if (what < 7) {
            io(e, NH_OP_WRITE, lpn, len, t);
            for (uint64_t j = 0; j < len; j++) {
                tag[lpn + j] = t;
            }
        } else if (what < 9) {
            io(e, NH_OP_READ, lpn, len, 0);
        } else {
            io(e, NH_OP_TRIM, lpn, len, 0);
        }
        if (i % 97 == 96) {
            io(e, NH_OP_FLUSH, 0, 0, 0);    /* with staging, partial units padded */
        }
        if (i % 2000 == 1999) {
            check_fronts(e, tag, n, k);
            unit_check(e);
            if (strstr(props, "one-shot=on")) {
                staging_accounted(e);
                g_assert_cmpuint(unit_stat(e, "ftl", "stripe_padding"), >, 0);
            }
        }
    }
    for (uint32_t s = 0; s < k; s++) {
        char key[8];
        g_snprintf(key, sizeof(key), "%u", s);
        g_assert_cmpuint(unit_stat(e, "ftl.placement.host_pages", key), >, 0);
        gc += unit_stat(e, "ftl.placement.gc_copies", key);
    }
    gc += unit_stat(e, "ftl.placement.gc_copies", "gc");
    g_assert_cmpuint(unit_stat(e, "ftl", "gc_page_copies"), >, 0);
    if (!strstr(props, "dftl")) {   /* dftl's translation-page copies are not a stream's */
        g_assert_cmpuint(gc, ==, unit_stat(e, "ftl", "gc_page_copies"));
    }
    g_assert_cmpuint(unit_stat(e, "ftl.placement", "open_streams"), ==, 5);
    g_rand_free(r);
    g_free(tag);
    nh_engine_free(e);
}

static void test_fronts_page(void)
{
    frontier_invariants("ftl=page,streams=5,physical-streams=4," SMALL);
}

static void test_fronts_dftl(void)
{
    frontier_invariants("ftl=dftl,cmt-size=4K,streams=5,physical-streams=4," SMALL);
}

/* With one-shot (and stripe-merge) staging: one buffer per physical stream, so every page still
 * lies in its tag's stream's blocks (a block is one frontier's, so neither a word line nor a
 * stripe mixes streams), and the programs add up with the padding. */
static void test_staged_fronts(void)
{
    frontier_invariants("ftl=page,streams=5,physical-streams=4," SMALL_TLC);
    frontier_invariants("ftl=page,streams=5,physical-streams=4,stripe-merge=on," SMALL_TLC);
    frontier_invariants("ftl=dftl,cmt-size=4K,streams=5,physical-streams=4," SMALL_TLC);
    frontier_invariants("ftl=dftl,cmt-size=4K,streams=5,physical-streams=4,stripe-merge=on,"
                        SMALL_TLC);
}

/* By hand, one plane, one-shot (a unit is one word line of 3 pages), streams=2 (physical
 * streams 0, 1, 2): pages 0-4 written with tags 1, 2, 1, 0, 1 are all staged (no unit is
 * programmed until a page needs its room); rewriting page 2 with tag 2 moves it to stream 2's
 * buffer; a FUA write of page 5 with tag 2 fills stream 2's word line {1, 2, 5} and programs
 * it, and only it; a flush pads stream 0's {3} with 2 pages and stream 1's {0, 4} with 1.
 * One staging buffer for all streams would have needed 6 programs, not 9. */
static void known_staged(const char *ftl)
{
    char *props = g_strdup_printf("ftl=%s,streams=2,channels=1,ways=1,pages=48,op=20,cell=tlc,"
                                  "one-shot=on", ftl);
    NhEngine *e = unit_engine(props, 8 * MIB);
    static const uint16_t tags[] = { 1, 2, 1, 0, 1 };
    static const int stream[] = { 1, 2, 2, 0, 1, 2 };

    for (uint64_t lpn = 0; lpn < 5; lpn++) {
        io(e, NH_OP_WRITE, lpn, 1, tags[lpn]);
    }
    io(e, NH_OP_WRITE, 2, 1, 2);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 0);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_overwrites"), ==, 1);
    io_flags(e, NH_OP_WRITE, 5, 1, 2, NH_REQ_FUA);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 3);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_merges"), ==, 1);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_padding"), ==, 0);
    io(e, NH_OP_FLUSH, 0, 0, 0);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 9);
    g_assert_cmpuint(unit_stat(e, "nand", "program_ops"), ==, 3);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_pages"), ==, 6);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_padding"), ==, 3);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_merges"), ==, 1);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_partial"), ==, 2);
    g_assert_cmpuint(unit_stat(e, "ftl.placement.host_pages", "0"), ==, 1);
    g_assert_cmpuint(unit_stat(e, "ftl.placement.host_pages", "1"), ==, 3);
    g_assert_cmpuint(unit_stat(e, "ftl.placement.host_pages", "2"), ==, 3);
    for (uint64_t lpn = 0; lpn < 6; lpn++) {
        g_assert_cmpint(e->ops->stream_of(e->ftl, lpn), ==, stream[lpn]);
    }
    unit_check(e);
    g_free(props);
    nh_engine_free(e);
}

static void test_staged_known(void)
{
    known_staged("page");
    known_staged("dftl");
}

/* The members at @path of documents @a and @b are equal (as JSON text). */
static void same(const char *a, const char *b, const char *path)
{
    JsonNode *x = unit_json(a, path), *y = unit_json(b, path);
    char *sx = json_to_string(x, FALSE), *sy = json_to_string(y, FALSE);

    if (strcmp(sx, sy)) {
        g_error("%s differs: %s, %s", path, sx, sy);
    }
    g_free(sx);
    g_free(sy);
    json_node_unref(x);
    json_node_unref(y);
}

/* The statistics of @a and @b are equal at @path. */
static void same_stats(NhEngine *a, NhEngine *b, const char *path)
{
    char *want = nh_engine_stats_json(a, false), *got = nh_engine_stats_json(b, false);

    same(want, got, path);
    g_free(want);
    g_free(got);
}

/* Save @a and load the image into @b, through a temporary file. */
static void save_load(NhEngine *a, NhEngine *b)
{
    char *dir = g_dir_make_tmp("nh-placement-XXXXXX", NULL);
    char *path = g_build_filename(dir, "state", NULL);

    g_assert_true(nh_engine_save(a, path, NULL, 0, NULL));
    g_assert_true(nh_engine_load(b, path, NULL, NULL, NULL));
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
}

/* Streams open and DStream's clusters survive a save and a load. */
static void state_with(const char *props)
{
    NhEngine *a = unit_engine(props, 8 * MIB), *b = unit_engine(props, 8 * MIB);

    for (int i = 0; i < 6000; i++) {
        io(a, NH_OP_WRITE, (uint64_t)(i * 7919) % 2000, 1, (uint16_t)(1 + i % 3));
    }
    nh_engine_stream_release(a, 3);
    save_load(a, b);
    unit_check(b);
    same_stats(a, b, "ftl.placement");
    g_assert_cmpuint(unit_stat(b, "ftl.placement", "open_streams"), ==, 2);
    for (uint64_t lpn = 0; lpn < 2000; lpn++) {
        g_assert_cmpint(a->ops->stream_of(a->ftl, lpn), ==, b->ops->stream_of(b->ftl, lpn));
    }
    /* the restored open flags: releasing 3 again does nothing, releasing 1 counts */
    nh_engine_stream_release(b, 3);
    nh_engine_stream_release(b, 1);
    g_assert_cmpuint(unit_stat(b, "ftl.placement", "releases"), ==, 2);
    nh_engine_stream_release(a, 1);
    /* both continue alike */
    for (int i = 0; i < 3000; i++) {
        io(a, NH_OP_WRITE, (uint64_t)(i * 104729) % 2000, 1, (uint16_t)(1 + i % 2));
        io(b, NH_OP_WRITE, (uint64_t)(i * 104729) % 2000, 1, (uint16_t)(1 + i % 2));
    }
    unit_check(b);
    same_stats(a, b, "ftl.placement.host_pages");
    same_stats(a, b, "ftl.placement.k_series");
    nh_engine_free(a);
    nh_engine_free(b);
}

static void test_state(void)
{
    state_with("ftl=page,streams=3," SMALL);
    state_with("ftl=dftl,cmt-size=4K,streams=3," SMALL);
    state_with("ftl=dftl,streams=3,stream-map=dstream,physical-streams=4,stream-buffer=4K,"
               "dstream-memory=24K,dstream-partitions=8,dstream-timestamp=64," SMALL);
}

static void not_lost(void *opaque, uint64_t offset, uint64_t length)
{
    (void)opaque;
    g_error("power loss lost %" G_GUINT64_FORMAT "+%" G_GUINT64_FORMAT " from the capacitor-"
            "protected staging buffers", offset, length);
}

/* Streams staged at a power loss and a drained save: power loss loses nothing staged; the
 * drain programs every stream's partial word line on its own frontier (padded); the saved
 * state loads, and the two engines continue alike. */
static void staged_state(const char *props)
{
    NhEngine *a = unit_engine(props, 8 * MIB), *b = unit_engine(props, 8 * MIB);
    uint32_t k = unit_placement(a)->max_streams;
    uint64_t padding;

    for (int i = 0; i < 6000; i++) {
        io(a, NH_OP_WRITE, (uint64_t)(i * 7919) % 2000, 1, (uint16_t)(1 + i % 3));
    }
    for (uint16_t t = 0; t < 3; t++) {  /* within one tPROG: still staged at the save */
        io(a, NH_OP_WRITE, 2000 + t, 1, t);
    }
    nh_engine_power_loss(a, 2, not_lost, NULL);
    for (uint16_t t = 0; t < 3; t++) {
        g_assert_true(nh_engine_is_mapped(a, (2000 + t) * 4096));
        g_assert_cmpint(a->ops->stream_of(a->ftl, 2000 + t), ==, -1);
    }
    padding = unit_stat(a, "ftl", "stripe_padding");
    nh_engine_drain(a, now);
    g_assert_cmpuint(unit_stat(a, "ftl", "stripe_padding"), >, padding);
    for (uint16_t t = 0; t < 3; t++) {
        g_assert_cmpint(a->ops->stream_of(a->ftl, 2000 + t), ==, fixed_stream(t, k));
    }
    staging_accounted(a);
    save_load(a, b);
    unit_check(b);
    same_stats(a, b, "ftl");
    for (int i = 0; i < 3000; i++) {
        io(a, NH_OP_WRITE, (uint64_t)(i * 104729) % 2003, 1, (uint16_t)(i % 3));
        io(b, NH_OP_WRITE, (uint64_t)(i * 104729) % 2003, 1, (uint16_t)(i % 3));
    }
    nh_engine_drain(a, now);
    nh_engine_drain(b, now);
    unit_check(b);
    staging_accounted(b);
    for (uint64_t lpn = 0; lpn < 2003; lpn++) {
        g_assert_cmpint(a->ops->stream_of(a->ftl, lpn), ==, b->ops->stream_of(b->ftl, lpn));
    }
    same_stats(a, b, "ftl.placement.host_pages");
    nh_engine_free(a);
    nh_engine_free(b);
}

static void test_staged_state(void)
{
    staged_state("ftl=page,streams=3," SMALL_TLC);
    staged_state("ftl=page,streams=3,stripe-merge=on," SMALL_TLC);
    staged_state("ftl=dftl,cmt-size=4K,streams=3," SMALL_TLC);
}

/* Two streams: a hot tenth of the space rewritten nine times as often as the cold rest.
 * Tagged, hot and cold pages fill blocks of their own, and GC finds hot blocks nearly empty.
 * The same device both times (streams=2: the same frontiers and spare blocks); untagged, every
 * write carries tag 0. */
static double hot_cold_waf(const char *ftl, bool tagged)
{
    char *props = g_strdup_printf("ftl=%s,cmt-size=64K,streams=2,channels=1,ways=1,pages=64,"
                                  "op=10", ftl);
    NhEngine *e = unit_engine(props, 16 * MIB);
    uint64_t n = 16 * MIB / 4096, hot = n / 10;
    GRand *r = g_rand_new_with_seed(3);
    double waf;
    char *js;

    for (uint64_t lpn = 0; lpn < n; lpn++) {
        io(e, NH_OP_WRITE, lpn, 1, tagged ? (lpn < hot ? 1 : 2) : 0);
    }
    nh_engine_stats_reset(e);
    for (int i = 0; i < 40000; i++) {
        bool h = g_rand_int_range(r, 0, 10) < 9;
        uint64_t lpn = h ? g_rand_int_range(r, 0, (gint32)hot)
                         : g_rand_int_range(r, (gint32)hot, (gint32)n);
        io(e, NH_OP_WRITE, lpn, 1, tagged ? (h ? 1 : 2) : 0);
    }
    unit_check(e);
    js = nh_engine_stats_json(e, false);
    waf = unit_json_number(js, "waf");
    g_free(js);
    g_rand_free(r);
    g_free(props);
    nh_engine_free(e);
    return waf;
}

static void test_hot_cold(void)
{
    const char *ftls[] = { "page", "dftl" };
    for (size_t i = 0; i < G_N_ELEMENTS(ftls); i++) {
        double untagged = hot_cold_waf(ftls[i], false), tagged = hot_cold_waf(ftls[i], true);
        g_test_message("hot/cold %s: WAF untagged %.3f, tagged (2 streams) %.3f", ftls[i],
                       untagged, tagged);
        g_assert_cmpfloat(tagged, <, untagged);
    }
}

/* Reclaim units (FDP): a tag's unit is its frontier's open block on every plane; what is left
 * in it follows the tag's writes only; closing it returns what was left and the next write
 * opens a new unit; units closed half written are reclaimed by GC like any block (the full
 * check after random writes with closes). */
static void units(const char *ftl)
{
    g_autofree char *props = g_strdup_printf("ftl=%s,streams=3," SMALL, ftl);
    NhEngine *e = unit_engine(props, 8 * MIB);
    const NhGeometry *g = &e->nand->g;
    uint64_t unit = (uint64_t)g->pages * g->page_size * g->npu, n = 8 * MIB / 4096, left;
    GRand *r = g_rand_new_with_seed(5);
    GError *err = NULL;

    g_assert_cmpuint(nh_engine_unit_bytes(e), ==, unit);
    for (uint16_t t = 0; t <= 3; t++) {
        g_assert_cmpuint(nh_engine_stream_unit_left(e, t), ==, unit);
    }
    g_assert_cmpuint(nh_engine_stream_unit_left(e, 4), ==, 0);
    io(e, NH_OP_WRITE, 0, 1 + g->npu, 2);
    left = unit - (1 + g->npu) * 4096ull;
    g_assert_cmpuint(nh_engine_stream_unit_left(e, 2), ==, left);
    g_assert_cmpuint(nh_engine_stream_unit_left(e, 1), ==, unit);
    g_assert_cmpuint(nh_engine_stream_unit_left(e, 0), ==, unit);
    g_assert_cmpuint(nh_engine_stream_unit_close(e, 2), ==, left);
    g_assert_cmpuint(nh_engine_stream_unit_left(e, 2), ==, unit);
    g_assert_cmpuint(nh_engine_stream_unit_close(e, 2), ==, 0);
    io(e, NH_OP_WRITE, 100, 1, 2);
    g_assert_cmpuint(nh_engine_stream_unit_left(e, 2), ==, unit - 4096);
    for (int i = 0; i < 20000; i++) {
        uint16_t t = (uint16_t)g_rand_int_range(r, 0, 4);
        io(e, NH_OP_WRITE, g_rand_int_range(r, 0, (gint32)n - 4), g_rand_int_range(r, 1, 4), t);
        if (i % 97 == 0) {
            nh_engine_stream_unit_close(e, t);
        }
    }
    g_assert_cmpuint(e->stats.ftl_gc_blocks, >, 0);
    if (!nh_engine_check(e, &err)) {
        g_error("%s after random writes and unit closes: %s", ftl, err->message);
    }
    g_rand_free(r);
    nh_engine_free(e);
    e = unit_engine("ftl=page,streams=0," SMALL, 8 * MIB);
    g_assert_cmpuint(nh_engine_stream_unit_left(e, 0), ==, 0);     /* placement off */
    g_assert_cmpuint(nh_engine_stream_unit_close(e, 0), ==, 0);
    nh_engine_free(e);
}

static void test_units(void)
{
    units("page");
    units("dftl");
}

static void refused(const char *props, const char *key)
{
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;

    nh_config_defaults(&c);
    if (nh_config_parse(&c, props, &err)) {
        e = nh_engine_new(&c, 8 * MIB, &err);
        if (e) {
            g_error("%s was accepted", props);
        }
    }
    g_assert_nonnull(err);
    if (!g_str_has_prefix(err->message, key)) {
        g_error("%s: '%s' does not name %s", props, err->message, key);
    }
    g_error_free(err);
}

static void test_refusals(void)
{
    NhEngine *e = unit_engine("ftl=page,streams=2," SMALL, 8 * MIB);
    NhRequest q = { .op = NH_OP_WRITE, .offset = 0, .length = 4096, .stream = 3 };
    uint64_t done;
    GError *err = NULL;

    refused("ftl=bast,streams=2," SMALL, "streams:");
    refused("ftl=fast,stream-map=dstream," SMALL, "stream-map:");
    refused("ftl=sast,streams=1," SMALL, "streams:");
    refused("ftl=page,streams=0,physical-streams=4," SMALL, "physical-streams:");
    refused("ftl=page,streams=2,dstream-partitions=9," SMALL, "dstream-partitions:");
    refused("ftl=page,streams=2,dstream-k=fixed," SMALL, "dstream-k:");
    refused("ftl=page,dstream-k=fixed," SMALL, "dstream-k:");
    refused("ftl=page,stream-map=dstream,dstream-memory=1M," SMALL, "dstream-memory:");
    refused("ftl=dftl,stream-map=dstream,stream-buffer=64K,dstream-memory=1M," SMALL,
            "dstream-memory:");
    refused("ftl=page,streams=2,buffer=lru," SMALL, "streams:");
    refused("ftl=page,physical-streams=65," SMALL, "physical-streams:");
    refused("ftl=page,streams=257," SMALL, "streams:");
    refused("ftl=page,streams=2,cache-size=64K," SMALL, "streams:");
    /* a stream's buffer must hold its staging: 2 x 3 pages of 4 KiB with one-shot */
    refused("ftl=dftl,stream-map=dstream,stream-buffer=20K," SMALL_TLC, "stream-buffer:");
    g_assert_cmpuint(nh_engine_stream_limit(e), ==, 2);
    g_assert_false(nh_engine_submit(e, &q, 0, &done, &err));
    g_assert_nonnull(strstr(err->message, "stream 3"));
    g_error_free(err);
    nh_engine_free(e);
    e = unit_engine("ftl=bast," SMALL, 8 * MIB);
    g_assert_cmpuint(nh_engine_stream_limit(e), ==, 0);
    nh_engine_free(e);
}

/* streams=auto, the default: 16 host streams on 17 physical streams wherever an explicit
 * streams would be accepted, none (and no refusal) elsewhere. */
static void test_auto(void)
{
    static const struct { const char *props; uint32_t limit, fronts; } cases[] = {
        { "ftl=page", 16, 17 },
        { "ftl=dftl", 16, 17 },
        { "ftl=page,streams=auto,physical-streams=9", 16, 9 },
        { "ftl=bast", 0, 0 },
        { "ftl=fast", 0, 0 },
        { "ftl=sast", 0, 0 },
        { "ftl=page,buffer=lru", 0, 0 },
        { "ftl=page,cache-size=64K", 0, 0 },
        { "ftl=page,stream-map=dstream", 0, 16 },
        { "ftl=page,streams=0", 0, 0 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *props = g_strconcat(cases[i].props, ",", SMALL, NULL);
        NhEngine *e = unit_engine(props, 8 * MIB);
        char *v = nh_config_get(nh_engine_config(e), "streams");

        g_test_message("%s: limit %u, physical streams %u", props, nh_engine_stream_limit(e),
                       unit_placement(e)->max_streams);
        g_assert_cmpuint(nh_engine_stream_limit(e), ==, cases[i].limit);
        /* a stream=dstream device accepts no host tags, but its k goes up to 16 */
        g_assert_cmpuint(unit_placement(e)->on ?
                         unit_placement(e)->max_streams : 0, ==,
                         cases[i].fronts);
        g_assert_cmpstr(v, ==, strstr(props, "streams=0") ? "0" : "auto");
        g_free(v);
        g_free(props);
        nh_engine_free(e);
    }
}

/* Each host stream counted on its own, and streams that share a physical stream counted:
 * streams=16 on physical-streams=16 puts tags 1 and 16 together (1 + 15 mod 15 = 1). */
static void test_host_streams(void)
{
    static const struct { const char *props; uint64_t shared; } cases[] = {
        { "ftl=page", 0 },
        { "ftl=page,streams=16,physical-streams=16", 2 },
        { "ftl=page,streams=16,physical-streams=9", 16 },
        { "ftl=page,streams=4,physical-streams=1", 4 },
        { "ftl=dftl,streams=63", 0 },
        { "ftl=dftl,streams=64", 2 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *props = g_strconcat(cases[i].props, ",", SMALL, NULL);
        NhEngine *e = unit_engine(props, 8 * MIB);
        uint32_t n = nh_engine_stream_limit(e);
        uint32_t k = unit_placement(e)->max_streams;
        uint64_t per_stream[NH_MAX_STREAMS] = { 0 };

        for (uint32_t t = 0; t <= n; t++) {
            io(e, NH_OP_WRITE, 8 * t, t + 1, (uint16_t)t);
            per_stream[fixed_stream((uint16_t)t, k)] += t + 1;
        }
        g_assert_cmpuint(unit_stat(e, "ftl.placement", "host_streams"), ==, n);
        g_assert_cmpuint(unit_stat(e, "ftl.placement", "shared_streams"), ==, cases[i].shared);
        for (uint32_t t = 0; t <= n; t++) {
            char key[8];
            g_snprintf(key, sizeof(key), "%u", t);
            g_assert_cmpuint(unit_stat(e, "ftl.placement.stream_pages", key), ==, t + 1);
        }
        for (uint32_t s = 0; s < k; s++) {
            char key[8];
            g_snprintf(key, sizeof(key), "%u", s);
            g_assert_cmpuint(unit_stat(e, "ftl.placement.host_pages", key), ==, per_stream[s]);
        }
        g_free(props);
        nh_engine_free(e);
    }
}

/* The frontiers placement adds have blocks of their own: a workload that writes no stream sees
 * the device as without them, every counter equal to streams=0's (GC at the same free-block
 * counts), however full it gets. */
static void test_untagged_unchanged(void)
{
    static const char *const ftls[] = { "page", "dftl" };

    for (size_t f = 0; f < G_N_ELEMENTS(ftls); f++) {
        char *on = g_strdup_printf("ftl=%s,%s", ftls[f], SMALL);
        char *off = g_strdup_printf("ftl=%s,streams=0,%s", ftls[f], SMALL);
        NhEngine *a = unit_engine(on, 8 * MIB), *b = unit_engine(off, 8 * MIB);
        GRand *r = g_rand_new_with_seed(5);
        static const char *const keys[][2] = {
            { "ftl", "gc_page_copies" }, { "ftl", "gc_blocks" },
            { "ftl", "gc_foreground_blocks" }, { "nand", "page_programs" },
            { "nand", "block_erases" }, { "nand", "page_reads" },
        };

        g_assert_cmpuint(nh_engine_stream_limit(a), ==, 16);
        g_assert_cmpuint(nh_engine_stream_limit(b), ==, 0);
        for (int i = 0; i < 30000; i++) {
            uint64_t lpn = g_rand_int_range(r, 0, 8 * MIB / 4096 - 8);
            uint64_t len = g_rand_int_range(r, 1, 8);
            NhOp op = g_rand_int_range(r, 0, 10) < 8 ? NH_OP_WRITE : NH_OP_READ;
            io(a, op, lpn, len, 0);
            now -= 100000;
            io(b, op, lpn, len, 0);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
            g_test_message("%s %s.%s: %" G_GUINT64_FORMAT, ftls[f], keys[i][0], keys[i][1],
                           unit_stat(a, keys[i][0], keys[i][1]));
            g_assert_cmpuint(unit_stat(a, keys[i][0], keys[i][1]), ==,
                             unit_stat(b, keys[i][0], keys[i][1]));
        }
        g_assert_cmpuint(unit_stat(a, "ftl", "gc_blocks"), >, 100);
        unit_check(a);
        g_rand_free(r);
        g_free(on);
        g_free(off);
        nh_engine_free(a);
        nh_engine_free(b);
    }
}

/* ------------------------------------------------------------------ k-means known answers */

static void kmeans_expect(const NhKmeans *km, const uint8_t *assign, uint32_t n, uint32_t k,
                          const double *cent, const uint8_t *want)
{
    GString *s = g_string_new(NULL);

    for (uint32_t j = 0; j < km->k; j++) {
        g_string_append_printf(s, " %g", km->cent[j]);
    }
    g_test_message("k = %u, centroids%s", km->k, s->str);
    g_string_free(s, TRUE);
    g_assert_cmpuint(km->k, ==, k);
    for (uint32_t j = 0; j < k; j++) {
        g_assert_cmpfloat_with_epsilon(km->cent[j], cent[j], 1e-9);
    }
    for (uint32_t i = 0; i < n; i++) {
        g_assert_cmpuint(assign[i], ==, want[i]);
    }
}

static void test_kmeans(void)
{
    uint8_t a[5];

    /* first step: kmax = 4 centroids at the quantiles of {0, 0, 10, 10}: 0 0 10 10; Dmin = 0
     * (the two zeros), the farthest element is 0 away: 0 >= 0 merges them (no members in the
     * second: centroid 0) */
    {
        NhKmeans km = { .kmax = 4 };
        double x[] = { 0, 0, 10, 10 };
        g_assert_cmpint(nh_kmeans_step(&km, x, 4, a), ==, -1);
        kmeans_expect(&km, a, 4, 3, (double[]){ 0, 10, 10 }, (uint8_t[]){ 0, 0, 1, 1 });
        /* again: the two tens merge */
        g_assert_cmpint(nh_kmeans_step(&km, x, 4, a), ==, -1);
        kmeans_expect(&km, a, 4, 2, (double[]){ 0, 10 }, (uint8_t[]){ 0, 0, 1, 1 });
        /* Dmin = 10, every element on its centroid: a cluster at the mean of the two
         * hottest, (0 + 10) / 2 = 5, which no element is nearest to */
        g_assert_cmpint(nh_kmeans_step(&km, x, 4, a), ==, 1);
        kmeans_expect(&km, a, 4, 3, (double[]){ 0, 5, 10 }, (uint8_t[]){ 0, 0, 2, 2 });
    }
    /* {0, 4, 6, 10} from 2, 8: stable (means 2 and 8); Dmin = 6, farthest 2 < 6: add
     * (2 + 8) / 2 = 5; 4 and 6 now nearest to 5 */
    {
        NhKmeans km = { .kmax = 16, .k = 2, .cent = { 2, 8 } };
        double x[] = { 0, 4, 6, 10 };
        g_assert_cmpint(nh_kmeans_step(&km, x, 4, a), ==, 1);
        kmeans_expect(&km, a, 4, 3, (double[]){ 2, 5, 8 }, (uint8_t[]){ 0, 1, 1, 2 });
    }
    /* {0, 2, 12, 28} from 0, 2, 20: 12 is nearest to 20 (8 < 10), stable; Dmin = 2 (0..2),
     * 12 lies 8 from its centroid: 8 >= 2 merges 0 and 2 into their mean 1 */
    {
        NhKmeans km = { .kmax = 16, .k = 3, .cent = { 0, 2, 20 } };
        double x[] = { 0, 2, 12, 28 };
        g_assert_cmpint(nh_kmeans_step(&km, x, 4, a), ==, -1);
        kmeans_expect(&km, a, 4, 2, (double[]){ 1, 20 }, (uint8_t[]){ 0, 0, 1, 1 });
    }
    /* k = 1 with {1, 3, 5, 7, 9}: mean 5, Dmin undefined (infinite): add at the mean of the
     * centroid and the hottest element, (5 + 9) / 2 = 7; at kmax = 1 nothing changes */
    {
        NhKmeans km = { .kmax = 2, .k = 1, .cent = { 0 } };
        double x[] = { 1, 3, 5, 7, 9 };
        g_assert_cmpint(nh_kmeans_step(&km, x, 5, a), ==, 1);
        kmeans_expect(&km, a, 5, 2, (double[]){ 5, 7 }, (uint8_t[]){ 0, 0, 0, 1, 1 });
        km.kmax = 1;
        km.k = 1;
        g_assert_cmpint(nh_kmeans_step(&km, x, 5, a), ==, 0);
        kmeans_expect(&km, a, 5, 1, (double[]){ 5 }, (uint8_t[]){ 0, 0, 0, 0, 0 });
    }
}

/* dstream-k=per-element: the rule for each element in turn, Dmin taken again after each change */
static void test_kmeans_per_element(void)
{
    uint8_t a[4];

    /* {0, 4, 6, 10} from 2, 8 (stable): 0 is 2 from 2 < Dmin 6, add 5; 4 is 1 from 5 < 3, add
     * 6.5; 6 is 0.5 from 6.5 < 1.5, add 7.25; 10 is 2 from 8 >= 0.75 (6.5..7.25), merge those
     * two, both empty: their midpoint 6.875.  Net +2, where the farthest-element reading adds 1. */
    {
        NhKmeans km = { .kmax = 16, .k = 2, .cent = { 2, 8 }, .rule = NH_KMEANS_PER_ELEMENT };
        double x[] = { 0, 4, 6, 10 };
        g_assert_cmpint(nh_kmeans_step(&km, x, 4, a), ==, 2);
        kmeans_expect(&km, a, 4, 4, (double[]){ 2, 5, 6.875, 8 }, (uint8_t[]){ 0, 1, 2, 3 });
    }
    /* {0, 2, 12, 28} from 0, 2, 20 (stable): 0, 2 and 12 each sit nearer their centroid than
     * Dmin 2 and add 11, 15.5, 17.75; 28 is 8 from 20 >= Dmin 2 (0..2): 0 and 2 merge into their
     * members' mean 1.  Net +2 where the farthest-element reading merges (-1, k 2). */
    {
        NhKmeans km = { .kmax = 16, .k = 3, .cent = { 0, 2, 20 },
                        .rule = NH_KMEANS_PER_ELEMENT };
        double x[] = { 0, 2, 12, 28 };
        g_assert_cmpint(nh_kmeans_step(&km, x, 4, a), ==, 2);
        kmeans_expect(&km, a, 4, 5, (double[]){ 1, 11, 15.5, 17.75, 20 },
                      (uint8_t[]){ 0, 0, 1, 4 });
    }
}

/* ------------------------------------------------------------------ DFTL cache resize */

/* Random resizes between random I/O: the full check (every mapping not dirty in the CMT is on
 * flash, lists and hash agree) after each, and every written page still mapped. */
static void test_resize(void)
{
    NhEngine *e = unit_engine("ftl=dftl,stream-map=dstream,stream-buffer=4K,dstream-memory=72K,"
                              "dstream-partitions=16,dstream-timestamp=32," SMALL, 8 * MIB);
    Dftl *f = e->ftl;
    uint64_t n = 8 * MIB / 4096;
    bool *written = g_new0(bool, n);
    GRand *r = g_rand_new_with_seed(5);
    uint64_t changes;

    for (int round = 0; round < 300; round++) {
        for (int i = 0; i < 50; i++) {
            uint64_t lpn = g_rand_int_range(r, 0, (gint32)n);
            if (g_rand_int_range(r, 0, 3)) {
                io(e, NH_OP_WRITE, lpn, 1, 0);
                written[lpn] = true;
            } else {
                io(e, NH_OP_READ, lpn, 1, 0);
            }
        }
        dftl_cmt_resize(f, g_rand_int_range(r, 1, (gint32)f->maxcap + 1), now);
        unit_check(e);
    }
    for (uint64_t lpn = 0; lpn < n; lpn++) {
        g_assert_cmpint(nh_engine_is_mapped(e, lpn * 4096), ==, written[lpn]);
    }
    changes = unit_stat(e, "ftl.placement", "k_changes");
    g_test_message("%" G_GUINT64_FORMAT " timestamps, k changed %" G_GUINT64_FORMAT
                   " times, k now %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT " samples",
                   unit_stat(e, "ftl.placement", "timestamps"), changes,
                   unit_stat(e, "ftl.placement", "k"), unit_stat(e, "ftl.placement", "samples"));
    g_assert_cmpuint(changes, >, 0);
    g_assert_cmpuint(unit_stat(e, "ftl.placement", "sample_stride"), >, 1);
    g_rand_free(r);
    g_free(written);
    nh_engine_free(e);
}

/* 30,000 single-page writes over @n pages, 80% of them into the first eighth (seed 7). */
static void skewed_writes(NhEngine *e, uint64_t n)
{
    GRand *r = g_rand_new_with_seed(7);

    for (int i = 0; i < 30000; i++) {
        bool hot = g_rand_int_range(r, 0, 10) < 8;
        uint64_t lpn = hot ? g_rand_int_range(r, 0, (gint32)n / 8)
                           : g_rand_int_range(r, (gint32)n / 8, (gint32)n);
        io(e, NH_OP_WRITE, lpn, 1, 0);
    }
    g_rand_free(r);
}

/* The skewed workload on a 16 KiB budget of 512-byte stream buffers (16 partitions, 64-page
 * timestamps), @props added; at every sampled timestamp k lies in [@kmin, @kmax] and the cache
 * holds what k buffers leave, (16 KiB - k x 512) / 8 entries.  Returns the statistics. */
static char *budget_run(const char *props, uint64_t kmin, uint64_t kmax)
{
    char *all = g_strdup_printf("ftl=dftl,stream-map=dstream,stream-buffer=512,dstream-memory=16K,"
                                "dstream-partitions=16,dstream-timestamp=64,%s," SMALL, props);
    NhEngine *e = unit_engine(all, 8 * MIB);
    uint64_t samples;
    char *js;
    GString *ks = g_string_new(NULL);

    skewed_writes(e, 8 * MIB / 4096);
    unit_check(e);
    js = nh_engine_stats_json(e, false);
    samples = unit_json_uint(js, "ftl.placement.samples");
    g_assert_cmpuint(samples, >, 10);
    for (uint64_t i = 0; i < samples; i++) {
        char *kp = g_strdup_printf("ftl.placement.k_series.%" G_GUINT64_FORMAT, i);
        char *cp = g_strdup_printf("ftl.placement.cmt_series.%" G_GUINT64_FORMAT, i);
        uint64_t k = unit_json_uint(js, kp);
        g_assert_cmpuint(k, >=, kmin);
        g_assert_cmpuint(k, <=, kmax);
        g_assert_cmpuint(unit_json_uint(js, cp), ==, (16 * 1024 - k * 512) / 8);
        g_string_append_printf(ks, " %" G_GUINT64_FORMAT, k);
        g_free(kp);
        g_free(cp);
    }
    g_test_message("k per sample (stride %" G_GUINT64_FORMAT "):%s",
                   unit_json_uint(js, "ftl.placement.sample_stride"), ks->str);
    g_string_free(ks, TRUE);
    g_free(all);
    nh_engine_free(e);
    return js;
}

/* DStream's memory budget: 1984 entries at k = 1, fewer than the 2048 pages, so no cap
 * applies; the skewed workload (a hot eighth of the space takes 80% of the writes) moves k. */
static void test_budget(void)
{
    char *js = budget_run("dstream-k=adaptive", 1, 16);

    g_assert_cmpuint(unit_json_uint(js, "ftl.placement.k_changes"), >, 0);
    g_free(js);
}

/* dstream-k=fixed (the paper's N-stream baselines): the same workload with k fixed at 4 keeps
 * k, and so the cache, constant at every sample, while the clustering still assigns logical
 * streams to clusters: every one of the 4 physical streams writes pages. */
static void test_fixed_k(void)
{
    char *js = budget_run("dstream-k=fixed,physical-streams=4", 4, 4);

    g_assert_cmpuint(unit_json_uint(js, "ftl.placement.k_changes"), ==, 0);
    g_assert_cmpuint(unit_json_uint(js, "ftl.placement.k"), ==, 4);
    for (int s = 0; s < 4; s++) {
        char *hp = g_strdup_printf("ftl.placement.host_pages.%d", s);
        g_assert_cmpuint(unit_json_uint(js, hp), >, 0);
        g_free(hp);
    }
    g_free(js);
}

/* A DStream merge with half-filled buffers: the skewed workload, all at one instant (so the
 * bounded wait never empties a buffer), one-shot; after every write no buffer of a stream at or
 * above k holds a page (a merged stream's buffer is programmed, padded, at once), and some merge
 * found such a buffer holding pages. */
static void test_staged_merge(void)
{
    NhEngine *e = unit_engine("ftl=dftl,stream-map=dstream,dstream-partitions=16,"
                              "dstream-timestamp=64," SMALL_TLC, 8 * MIB);
    Dftl *f = e->ftl;
    uint64_t n = 8 * MIB / 4096, merges = 0, done;
    GRand *r = g_rand_new_with_seed(7);

    for (int i = 0; i < 30000; i++) {
        bool hot = g_rand_int_range(r, 0, 10) < 8;
        uint64_t lpn = hot ? g_rand_int_range(r, 0, (gint32)n / 8)
                           : g_rand_int_range(r, (gint32)n / 8, (gint32)n);
        NhRequest q = { .op = NH_OP_WRITE, .offset = lpn * 4096, .length = 4096 };
        uint32_t k0 = nh_placement_k(f->pm.pl), held = 0;

        for (uint32_t bi = 1; bi < k0; bi++) {
            held |= (f->pm.stage.buf[bi].n > 0) << bi;
        }
        g_assert_true(nh_engine_submit(e, &q, now, &done, NULL));
        for (uint32_t bi = nh_placement_k(f->pm.pl); bi < f->pm.stage.nbuf; bi++) {
            g_assert_cmpuint(f->pm.stage.buf[bi].n, ==, 0);
        }
        merges += nh_placement_k(f->pm.pl) < k0 && held >> nh_placement_k(f->pm.pl);
    }
    g_test_message("%" G_GUINT64_FORMAT " merges found a buffer holding pages, %"
                   G_GUINT64_FORMAT " pages of padding", merges,
                   unit_stat(e, "ftl", "stripe_padding"));
    g_assert_cmpuint(merges, >, 0);
    unit_check(e);
    staging_accounted(e);
    g_rand_free(r);
    nh_engine_free(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/placement/fronts/page", test_fronts_page);
    g_test_add_func("/placement/fronts/dftl", test_fronts_dftl);
    g_test_add_func("/placement/state", test_state);
    g_test_add_func("/placement/hot-cold", test_hot_cold);
    g_test_add_func("/placement/refusals", test_refusals);
    g_test_add_func("/placement/auto", test_auto);
    g_test_add_func("/placement/host-streams", test_host_streams);
    g_test_add_func("/placement/untagged-unchanged", test_untagged_unchanged);
    g_test_add_func("/placement/kmeans", test_kmeans);
    g_test_add_func("/placement/kmeans-per-element", test_kmeans_per_element);
    g_test_add_func("/placement/resize", test_resize);
    g_test_add_func("/placement/budget", test_budget);
    g_test_add_func("/placement/fixed-k", test_fixed_k);
    g_test_add_func("/placement/units", test_units);
    g_test_add_func("/placement/staged/fronts", test_staged_fronts);
    g_test_add_func("/placement/staged/known", test_staged_known);
    g_test_add_func("/placement/staged/state", test_staged_state);
    g_test_add_func("/placement/staged/merge", test_staged_merge);
    return g_test_run();
}
