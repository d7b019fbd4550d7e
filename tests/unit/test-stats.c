/* The statistics table against docs/statistics.md: every key documented, every documented key
 * present. */
#include "unit.h"
#include "engine-priv.h"

#include <json-glib/json-glib.h>

/* The backquoted names in the first column of every table row of @md. */
static GHashTable *documented_keys(const char *md)
{
    GHashTable *keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    char **lines = g_strsplit(md, "\n", -1);

    for (char **l = lines; *l; l++) {
        const char *cell, *end;
        if (!g_str_has_prefix(*l, "| `")) {
            continue;
        }
        cell = *l + 1;
        end = strchr(cell, '|');
        g_assert_nonnull(end);
        for (const char *p = strchr(cell, '`'); p && p < end; p = strchr(p, '`')) {
            const char *q = strchr(p + 1, '`');
            g_assert_true(q && q < end);
            g_hash_table_add(keys, g_strndup(p + 1, (gsize)(q - p - 1)));
            p = q + 1;
        }
    }
    g_strfreev(lines);
    return keys;
}

static void test_documented(void)
{
    char *path = g_test_build_filename(G_TEST_DIST, "..", "..", "docs", "statistics.md", NULL);
    char *md;
    GHashTable *doc, *table = g_hash_table_new(g_str_hash, g_str_equal);
    GHashTableIter it;
    gpointer key;
    size_t n;
    const NhStatsEntry *t = nh_stats_table(&n);
    GString *missing = g_string_new(NULL);

    g_assert_true(g_file_get_contents(path, &md, NULL, NULL));
    doc = documented_keys(md);
    for (size_t i = 0; i < n; i++) {
        g_hash_table_add(table, (gpointer)t[i].path);
        if (!g_hash_table_contains(doc, t[i].path)) {
            g_string_append_printf(missing, " undocumented: %s;", t[i].path);
        }
    }
    g_hash_table_iter_init(&it, doc);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        if (!g_hash_table_contains(table, key)) {
            g_string_append_printf(missing, " documented but absent: %s;", (char *)key);
        }
    }
    g_assert_cmpstr(missing->str, ==, "");
    g_string_free(missing, TRUE);
    g_hash_table_unref(doc);
    g_hash_table_unref(table);
    g_free(md);
    g_free(path);
}

/* Each entry's path is in the document (a shown one) as a member at that path. */
static void test_table_is_document(void)
{
    NhEngine *e = unit_engine("buffer=lbuf,ftl=dftl", 1 << 30);
    char *js = nh_engine_stats_json(e, false);
    JsonParser *p = json_parser_new();
    size_t n;
    const NhStatsEntry *t = nh_stats_table(&n);

    g_assert_true(json_parser_load_from_data(p, js, -1, NULL));
    for (size_t i = 0; i < n; i++) {
        char *expr = g_strconcat("$.", t[i].path, NULL);
        JsonNode *hit = json_path_query(expr, json_parser_get_root(p), NULL);
        g_assert_cmpuint(json_array_get_length(json_node_get_array(hit)), ==, 1);
        json_node_unref(hit);
        g_free(expr);
    }
    g_object_unref(p);
    g_free(js);
    nh_engine_free(e);
}

/* Nearest rank (issue 10): 15, 15, 60 have p99 60 (floor rank gave 15), p50 15; one sample is
 * every quantile; 100 samples 1..100 have p99 99 and p50 50. */
static void test_nearest_rank(void)
{
    NhHist h = { 0 };

    nh_hist_add(&h, 15);
    nh_hist_add(&h, 15);
    nh_hist_add(&h, 60);
    g_assert_cmpuint(nh_hist_quantile(&h, 0.99), ==, 60);
    g_assert_cmpuint(nh_hist_quantile(&h, 0.50), ==, 15);
    memset(&h, 0, sizeof(h));
    nh_hist_add(&h, 7);
    g_assert_cmpuint(nh_hist_quantile(&h, 0.50), ==, 7);
    g_assert_cmpuint(nh_hist_quantile(&h, 0.99), ==, 7);
    memset(&h, 0, sizeof(h));
    for (uint64_t v = 1; v <= 100; v++) {
        nh_hist_add(&h, v);     /* 64 and up are bucketed: capped at the bucket's upper edge */
    }
    g_assert_cmpuint(nh_hist_quantile(&h, 0.50), ==, 50);
    g_assert_cmpuint(nh_hist_quantile(&h, 0.99), ==, 99);
}

/* 4 KiB writes on 16 KiB pages program a whole page each: waf (pages per page written) says 1,
 * waf_bytes (bytes programmed per byte written) says 4; whole-page writes agree on 1. */
static void test_waf_bytes(void)
{
    NhEngine *e = unit_engine("page-size=16K", 64 << 20);
    uint64_t now = 0, done;
    char *js;

    for (uint64_t i = 0; i < 64; i++) {
        NhRequest q = { .op = NH_OP_WRITE, .offset = i * 16384, .length = 4096 };
        g_assert_true(nh_engine_submit(e, &q, now, &done, NULL));
        now = done;
    }
    nh_engine_finish(e, now);
    js = nh_engine_stats_json(e, false);
    g_assert_cmpuint(unit_json_uint(js, "nand.page_programs"), ==, 64);
    g_assert_cmpfloat(unit_json_number(js, "waf"), ==, 1.0);
    g_assert_cmpfloat(unit_json_number(js, "waf_bytes"), ==, 4.0);
    g_free(js);
    nh_engine_stats_reset(e);
    for (uint64_t i = 0; i < 64; i++) {
        NhRequest q = { .op = NH_OP_WRITE, .offset = (64 + i) * 16384, .length = 16384 };
        g_assert_true(nh_engine_submit(e, &q, now, &done, NULL));
        now = done;
    }
    nh_engine_finish(e, now);
    js = nh_engine_stats_json(e, false);
    g_assert_cmpfloat(unit_json_number(js, "waf"), ==, 1.0);
    g_assert_cmpfloat(unit_json_number(js, "waf_bytes"), ==, 1.0);
    g_free(js);
    nh_engine_free(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/stats/documented", test_documented);
    g_test_add_func("/stats/nearest-rank", test_nearest_rank);
    g_test_add_func("/stats/table-is-document", test_table_is_document);
    g_test_add_func("/stats/waf-bytes", test_waf_bytes);
    return g_test_run();
}
