/* Saving and loading the model: round trip, refusals that leave the engine alone, dirty images. */
#include "unit.h"
#include "record.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <zlib.h>

#define PROPS "channels=2,ways=2,pages=16,op=10,wl-threshold=8"
#define CAP (4 << 20)

static void churn(NhEngine *e, guint32 seed, int n)
{
    GRand *r = g_rand_new_with_seed(seed);
    uint64_t now = 0, done;
    for (int i = 0; i < n; i++) {
        NhRequest q = { .op = g_rand_int_range(r, 0, 8) ? NH_OP_WRITE : NH_OP_TRIM,
                        .offset = g_rand_int_range(r, 0, CAP / 4096 - 4) * 4096ull,
                        .length = g_rand_int_range(r, 1, 4) * 4096ull };
        now += 1000;
        g_assert_true(nh_engine_submit(e, &q, now, &done, NULL));
    }
    g_rand_free(r);
}

static void assert_same_mapping(NhEngine *a, NhEngine *b)
{
    for (uint64_t off = 0; off < CAP; off += 4096) {
        g_assert_cmpint(nh_engine_is_mapped(a, off), ==, nh_engine_is_mapped(b, off));
    }
}

static char *tmp_path(const char *name)
{
    char *dir = g_dir_make_tmp("nh-state-XXXXXX", NULL);
    char *p = g_build_filename(dir, name, NULL);
    g_free(dir);
    return p;
}

static void remove_tmp(char *path)
{
    char *dir = g_path_get_dirname(path);
    g_unlink(path);
    g_rmdir(dir);
    g_free(dir);
    g_free(path);
}

static void test_round_trip(void)
{
    NhEngine *a = unit_engine(PROPS, CAP), *b = unit_engine(PROPS, CAP);
    char *path = tmp_path("state");
    GBytes *fe = NULL;
    bool clean = false;
    GError *err = NULL;
    char *ja, *jb;
    NhWear wa, wb;
    uint64_t victims;

    churn(a, 1, 20000);
    /* the GC operations the scheduler still holds are timing, which a state file does not
     * keep (sched.queued_ops): let them run so that both documents agree */
    nh_engine_idle(a, 1ull << 40, &victims);
    ja = nh_engine_stats_json(a, false);
    g_assert_cmpuint(unit_json_uint(ja, "sched.queued_ops"), ==, 0);
    g_free(ja);
    g_assert_true(nh_engine_save(a, path, "smart", 5, &err));
    g_assert_no_error(err);
    g_assert_true(nh_engine_load(b, path, &fe, &clean, &err));
    g_assert_no_error(err);
    g_assert_true(clean);
    g_assert_cmpmem(g_bytes_get_data(fe, NULL), g_bytes_get_size(fe), "smart", 5);
    g_bytes_unref(fe);
    assert_same_mapping(a, b);
    g_assert_true(nh_engine_check(b, NULL));
    ja = nh_engine_stats_json(a, false);
    jb = nh_engine_stats_json(b, false);
    g_assert_cmpstr(ja, ==, jb);
    nh_engine_wear(a, &wa);
    nh_engine_wear(b, &wb);
    g_assert_cmpuint(wa.erase_max, ==, wb.erase_max);
    g_assert_cmpuint(wa.erase_max, >, 0);
    /* both go on with the same mapping; GC tie-breaking and clocks are not part of the image,
     * so flash-side counters may differ from here on */
    churn(a, 2, 5000);
    churn(b, 2, 5000);
    assert_same_mapping(a, b);
    g_assert_true(nh_engine_check(b, NULL));
    g_free(ja);
    g_free(jb);
    ja = nh_engine_stats_json(a, false);
    jb = nh_engine_stats_json(b, false);
    g_assert_true(unit_json_same(ja, jb, "host"));
    g_free(ja);
    g_free(jb);
    remove_tmp(path);
    nh_engine_free(a);
    nh_engine_free(b);
}

/*
 * A durable write buffer keeps its pages across a Flush, so nh_engine_drain() leaves them in
 * it; a clean image saved then would lack them, and the next start (which trusts a clean
 * image) would see those pages as never written.  The save refuses, and nh_engine_finish()
 * (what the device calls at a clean shutdown) writes them out first.  Found by the engine-ops
 * fuzz target (tests/fuzz/engine-ops.c) on its first run.
 */
static void test_durable_buffer(void)
{
    const char *props = PROPS ",buffer=lru,buffer-size=64K,buffer-volatile=off";
    NhEngine *a = unit_engine(props, CAP), *b = unit_engine(props, CAP);
    char *path = tmp_path("state");
    GBytes *fe = NULL;
    bool clean = false;
    GError *err = NULL;
    uint64_t now = 1000, done;

    for (uint64_t p = 0; p < 10; p++) {
        NhRequest q = { .op = NH_OP_WRITE, .offset = p * 4096, .length = 4096 };
        g_assert_true(nh_engine_submit(a, &q, now += 1000, &done, NULL));
    }
    now = nh_engine_drain(a, now);
    g_assert_false(nh_engine_save(a, path, NULL, 0, &err));
    g_assert_nonnull(strstr(err->message, "the write buffer still holds 10 dirty pages"));
    g_clear_error(&err);
    nh_engine_finish(a, now);
    g_assert_true(nh_engine_save(a, path, NULL, 0, &err));
    g_assert_no_error(err);
    g_assert_true(nh_engine_load(b, path, &fe, &clean, &err));
    g_assert_true(clean);
    for (uint64_t p = 0; p < 10; p++) {
        g_assert_true(nh_engine_is_mapped(b, p * 4096));
    }
    assert_same_mapping(a, b);
    unit_check(b);
    g_bytes_unref(fe);
    nh_engine_free(a);
    nh_engine_free(b);
    remove_tmp(path);
}

static void test_refusals(void)
{
    NhEngine *a = unit_engine(PROPS, CAP), *b = unit_engine(PROPS, CAP);
    NhEngine *other = unit_engine("channels=1,ways=2,pages=16,op=10", CAP);
    NhEngine *smaller = unit_engine(PROPS, CAP / 2);
    char *path = tmp_path("state"), *data, *before, *after;
    gsize len;
    GError *err = NULL;

    churn(a, 3, 5000);
    churn(b, 4, 3000);
    g_assert_true(nh_engine_save(a, path, NULL, 0, NULL));
    before = nh_engine_stats_json(b, false);

    g_assert_false(nh_engine_load(other, path, NULL, NULL, &err));
    g_assert_nonnull(strstr(err->message, "different geometry"));
    g_clear_error(&err);
    g_assert_false(nh_engine_load(smaller, path, NULL, NULL, &err));
    g_clear_error(&err);

    /* one flipped bit in the body */
    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    data[len / 2] ^= 1;
    g_assert_true(g_file_set_contents(path, data, len, NULL));
    g_assert_false(nh_engine_load(b, path, NULL, NULL, &err));
    g_assert_nonnull(strstr(err->message, "checksum"));
    g_clear_error(&err);
    /* truncated */
    g_assert_true(g_file_set_contents(path, data, len / 3, NULL));
    g_assert_false(nh_engine_load(b, path, NULL, NULL, &err));
    g_clear_error(&err);
    /* not a state file at all, and a missing one */
    g_assert_true(g_file_set_contents(path, "hello", 5, NULL));
    g_assert_false(nh_engine_load(b, path, NULL, NULL, &err));
    g_clear_error(&err);
    g_assert_false(nh_engine_state_mark_dirty(path, &err));
    g_clear_error(&err);
    g_unlink(path);
    g_assert_false(nh_engine_load(b, path, NULL, NULL, &err));
    g_clear_error(&err);
    g_free(data);

    after = nh_engine_stats_json(b, false);
    g_assert_cmpstr(before, ==, after);
    g_assert_true(nh_engine_check(b, NULL));
    g_free(before);
    g_free(after);
    remove_tmp(path);
    nh_engine_free(a);
    nh_engine_free(b);
    nh_engine_free(other);
    nh_engine_free(smaller);
}

/* After a crash the image is dirty: wear and counters come back, the mapping is rebuilt by the
 * front end with mark_written, which leaves the counters alone. */
/* An unclean load keeps the wear and no mapping; each FTL must be consistent on the restored
 * wear (the hybrids once laid out their free heap as if wear were equal) and rebuild. */
static void test_dirty(gconstpointer data)
{
    g_autofree char *props = g_strdup_printf(PROPS ",ftl=%s", (const char *)data);
    NhEngine *a = unit_engine(props, CAP), *b = unit_engine(props, CAP);
    char *path = tmp_path("state"), *before, *after;
    bool clean = true;
    GError *err = NULL;
    NhWear wa, wb;

    churn(a, 5, 20000);
    g_assert_true(nh_engine_save(a, path, "x", 1, NULL));
    g_assert_true(nh_engine_state_mark_dirty(path, &err));
    g_assert_no_error(err);
    g_assert_true(nh_engine_load(b, path, NULL, &clean, &err));
    g_assert_no_error(err);
    g_assert_false(clean);
    for (uint64_t off = 0; off < CAP; off += 4096) {
        g_assert_false(nh_engine_is_mapped(b, off));
    }
    nh_engine_wear(a, &wa);
    nh_engine_wear(b, &wb);
    g_assert_cmpuint(wa.erase_max, ==, wb.erase_max);
    g_assert_cmpfloat(wa.erase_mean, ==, wb.erase_mean);
    g_assert_true(nh_engine_check(b, &err));
    g_assert_no_error(err);

    before = nh_engine_stats_json(b, false);
    for (uint64_t off = 0; off < CAP; off += 4096) {
        if (nh_engine_is_mapped(a, off)) {
            nh_engine_mark_written(b, off, 4096);
        }
    }
    nh_engine_mark_written(b, CAP - 100, 1000);    /* clipped at the end, no crash */
    after = nh_engine_stats_json(b, false);
    /* counters unchanged; only wear may move if rebuilding needed GC */
    for (const char *const *s = (const char *const[]){ "host", "nand", "ftl", "waf", NULL }; *s;
         s++) {
        g_assert_true(unit_json_same(before, after, *s));
    }
    for (uint64_t off = 0; off < CAP - 4096; off += 4096) {
        g_assert_cmpint(nh_engine_is_mapped(b, off), ==, nh_engine_is_mapped(a, off));
    }
    g_assert_true(nh_engine_is_mapped(b, CAP - 1));
    g_assert_true(nh_engine_check(b, NULL));
    g_free(before);
    g_free(after);
    remove_tmp(path);
    nh_engine_free(a);
    nh_engine_free(b);
}

/* A checkpoint carries counters, wear and the front end's blob, never a mapping, and loads as a
 * dirty image: after a crash the counters are the checkpoint's, not the last clean save's. */
static void test_checkpoint(void)
{
    NhEngine *a = unit_engine(PROPS, CAP), *b = unit_engine(PROPS, CAP);
    char *path = tmp_path("state"), *want, *got;
    GBytes *fe = NULL;
    bool clean = true;
    GError *err = NULL;
    struct stat full, cp;

    churn(a, 7, 5000);
    g_assert_true(nh_engine_save(a, path, "old", 3, NULL));
    g_assert_cmpint(g_stat(path, &full), ==, 0);
    churn(a, 8, 5000);                     /* more work after the clean save ... */
    g_assert_true(nh_engine_checkpoint(a, path, "new", 3, &err));
    g_assert_no_error(err);
    g_assert_cmpint(g_stat(path, &cp), ==, 0);
    g_assert_cmpint(cp.st_size, <, full.st_size);   /* no mapping in it */

    g_assert_true(nh_engine_load(b, path, &fe, &clean, &err));
    g_assert_no_error(err);
    g_assert_false(clean);
    g_assert_cmpmem(g_bytes_get_data(fe, NULL), g_bytes_get_size(fe), "new", 3);
    for (uint64_t off = 0; off < CAP; off += 4096) {
        g_assert_false(nh_engine_is_mapped(b, off));
    }
    /* ... is in the counters: everything up to the wear section is identical */
    want = nh_engine_stats_json(a, false);
    got = nh_engine_stats_json(b, false);
    for (const char *const *s = (const char *const[]){ "host", "nand", "ftl", "waf", NULL }; *s;
         s++) {
        g_assert_true(unit_json_same(want, got, *s));
    }
    g_free(want);
    g_free(got);
    g_bytes_unref(fe);
    remove_tmp(path);
    nh_engine_free(a);
    nh_engine_free(b);
}

/* A 1 TiB space with a little data saves to a small file, quickly. */
static void test_sparse(void)
{
    NhEngine *a = unit_engine("", 1ull << 40), *b = unit_engine("", 1ull << 40);
    char *path = tmp_path("state");
    GStatBuf st;
    uint64_t done = 0;
    gint64 t0;

    for (int i = 0; i < 100; i++) {
        NhRequest q = { .op = NH_OP_WRITE, .offset = (uint64_t)i * (10ull << 30), .length = 1 << 20 };
        g_assert_true(nh_engine_submit(a, &q, done, &done, NULL));
    }
    t0 = g_get_monotonic_time();
    g_assert_true(nh_engine_save(a, path, NULL, 0, NULL));
    g_assert_cmpint(g_stat(path, &st), ==, 0);
    g_test_message("1 TiB with 100 MiB written: state file %lld bytes, saved in %.3f s",
                   (long long)st.st_size, (g_get_monotonic_time() - t0) / 1e6);
    g_assert_cmpint(st.st_size, <, 1 << 20);
    g_assert_true(nh_engine_load(b, path, NULL, NULL, NULL));
    g_assert_true(nh_engine_is_mapped(b, 10ull << 30));
    g_assert_false(nh_engine_is_mapped(b, (10ull << 30) + (1 << 20)));
    remove_tmp(path);
    nh_engine_free(a);
    nh_engine_free(b);
}

/* Files written by version 1 of the format (tests/data/state-v1, by the engine of 1e2c72b with
 * the properties below and 6,000 requests) load with every counter, wear and the mapping: the
 * statistics document is the one that engine printed. */
static void load_v1(const char *name, const char *props)
{
    char *dir = g_test_build_filename(G_TEST_DIST, "..", "data", "state-v1", NULL);
    char *state = g_strdup_printf("%s/%s.state", dir, name);
    char *json = g_strdup_printf("%s/%s.json", dir, name), *want, *got;
    /* unwritten-reads was free and streams 0 by default then */
    g_autofree char *then = g_strconcat(props, ",unwritten-reads=free,streams=0", NULL);
    JsonNode *got_doc, *want_doc;
    NhEngine *e = unit_engine(then, CAP);
    GBytes *fe = NULL;
    bool clean = false;
    GError *err = NULL;

    g_assert_true(nh_engine_load(e, state, &fe, &clean, &err));
    g_assert_no_error(err);
    g_assert_true(clean);
    g_assert_cmpmem(g_bytes_get_data(fe, NULL), g_bytes_get_size(fe), "fe", 2);
    unit_check(e);
    g_assert_true(g_file_get_contents(json, &want, NULL, NULL));
    got = nh_engine_stats_json(e, true);
    /* equal as documents: a counter or key that moved into its policy's table moves in the
     * printed order too, and only the values matter here */
    got_doc = unit_json(got, "");
    want_doc = unit_json(want, "");
    if (!json_node_equal(got_doc, want_doc)) {
        g_assert_cmpstr(got, ==, want);     /* shows the difference */
    }
    json_node_unref(got_doc);
    json_node_unref(want_doc);
    g_bytes_unref(fe);
    g_free(got);
    g_free(want);
    g_free(json);
    g_free(state);
    g_free(dir);
    nh_engine_free(e);
}

static void test_v1(void)
{
    load_v1("page", PROPS);
    load_v1("dftl-lbuf", "channels=2,ways=2,pages=16,op=10,ftl=dftl,cmt-size=1K,buffer=lbuf,"
            "buffer-size=128K,lbuf-session=64");
    load_v1("sast", "channels=2,ways=2,pages=16,op=10,ftl=sast,log-blocks=6");
}

/*
 * Rewrite the state file at @path with its sections as they are, but without the counter
 * @drop and with a section @extra (flags @flags) added: what an older or a newer version would
 * have written.  The layout is the one state.c documents.
 */
static void rewrite(const char *path, const char *drop, const char *extra, uint32_t flags)
{
    char *data;
    gsize len;
    uint64_t fe_len, n;
    GByteArray *o = g_byte_array_new();
    NhReader r, h;

    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    h = (NhReader){ (const guint8 *)data + 32, (const guint8 *)data + 40 };
    g_assert_true(nh_get64(&h, &fe_len));
    g_byte_array_append(o, (const guint8 *)data, 64 + (guint)fe_len);
    r = (NhReader){ (const guint8 *)data + 64 + fe_len, (const guint8 *)data + len };
    while (r.p < r.end) {
        char *name;
        uint32_t f;
        const guint8 *p;
        guint pos;

        g_assert_true(nh_get_str(&r, &name) && nh_get32(&r, &f) && nh_get64(&r, &n));
        g_assert_true(nh_get_bytes(&r, n, &p));
        nh_put_str(o, name);
        nh_put32(o, f);
        pos = nh_reserve64(o);
        if (!strcmp(name, "counters")) {
            NhReader c = { p, p + n };
            uint64_t count, kept = 0;
            guint cpos = nh_reserve64(o);
            g_assert_true(nh_get64(&c, &count));
            for (uint64_t i = 0; i < count; i++) {
                char *key;
                uint32_t words;
                const guint8 *w;
                g_assert_true(nh_get_str(&c, &key) && nh_get32(&c, &words));
                g_assert_true(nh_get_bytes(&c, words * 8ull, &w));
                if (strcmp(key, drop)) {
                    nh_put_str(o, key);
                    nh_put32(o, words);
                    g_byte_array_append(o, w, words * 8);
                    kept++;
                }
                g_free(key);
            }
            nh_patch64(o, cpos, kept);
        } else {
            g_byte_array_append(o, p, (guint)n);
        }
        nh_patch64(o, pos, o->len - pos - 8);
        g_free(name);
    }
    nh_put_str(o, extra);
    nh_put32(o, flags);
    nh_put64(o, 3);
    g_byte_array_append(o, (const guint8 *)"new", 3);
    nh_patch64(o, 40, o->len - 64 - fe_len);
    {
        guint8 hdr[64];
        memcpy(hdr, o->data, 64);
        memset(hdr + 12, 0, 4);
        memset(hdr + 48, 0, 4);
        nh_patch32(o, 48, (uint32_t)crc32_z(crc32_z(0, hdr, 64), o->data + 64, o->len - 64));
    }
    g_assert_true(g_file_set_contents(path, (const gchar *)o->data, o->len, NULL));
    g_byte_array_unref(o);
    g_free(data);
}

/* A counter the file lacks reads as 0; an optional section this version does not know is
 * skipped, a required one refused with its name. */
static void test_sections(void)
{
    NhEngine *a = unit_engine(PROPS, CAP), *b = unit_engine(PROPS, CAP);
    char *path = tmp_path("state");
    GError *err = NULL;

    churn(a, 5, 3000);
    g_assert_true(nh_engine_save(a, path, NULL, 0, NULL));
    rewrite(path, "host.write_cmds", "future", 1);
    g_assert_true(nh_engine_load(b, path, NULL, NULL, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(unit_stat(b, "host", "write_cmds"), ==, 0);
    g_assert_cmpuint(unit_stat(b, "host", "trim_cmds"), ==, unit_stat(a, "host", "trim_cmds"));
    assert_same_mapping(a, b);

    g_assert_true(nh_engine_save(a, path, NULL, 0, NULL));
    rewrite(path, "", "future", 0);
    g_assert_false(nh_engine_load(b, path, NULL, NULL, &err));
    g_assert_nonnull(strstr(err->message, "section 'future' is unknown to this version"));
    g_clear_error(&err);
    remove_tmp(path);
    nh_engine_free(a);
    nh_engine_free(b);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/state/round-trip", test_round_trip);
    g_test_add_func("/state/refusals", test_refusals);
    g_test_add_func("/state/durable-buffer", test_durable_buffer);
    for (const char *const *f = (const char *const[]){ "page", "dftl", "bast", "fast", "sast",
                                                        NULL }; *f; f++) {
        g_autofree char *name = g_strdup_printf("/state/dirty/%s", *f);
        g_test_add_data_func(name, *f, test_dirty);
    }
    g_test_add_func("/state/checkpoint", test_checkpoint);
    g_test_add_func("/state/sparse", test_sparse);
    g_test_add_func("/state/v1", test_v1);
    g_test_add_func("/state/sections", test_sections);
    return g_test_run();
}
