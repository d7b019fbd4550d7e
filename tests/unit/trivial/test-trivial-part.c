/* A part added as one file and one registry entry (tally.c, meson.build here) works end to end:
 * its key is a key like any other, its check and the FTL feature it needs refuse what they
 * should, the engine decodes its settings, and its counter is in the statistics document and
 * survives the state file. */
#include "unit.h"

#include <glib/gstdio.h>

#define PROPS "channels=2,ways=1,pages=16,tally-pages=8"

static void refused(const char *props, const char *why)
{
    NhConfig c;
    GError *err = NULL;

    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, props, &err));
    g_assert_null(nh_engine_new(&c, 4 << 20, &err));
    g_assert_cmpstr(err->message, ==, why);
    g_clear_error(&err);
}

static void test_key(void)
{
    NhConfig c;
    GError *err = NULL;
    char *v;

    nh_config_defaults(&c);
    v = nh_config_get(&c, "tally-pages");
    g_assert_cmpstr(v, ==, "0");
    g_free(v);
    g_assert_false(nh_config_set(&c, "tally-pages", "5000", &err));
    g_assert_cmpstr(err->message, ==, "tally-pages: must be between 0 and 4096, got 5000");
    g_clear_error(&err);
    refused(PROPS ",ftl=bast", "tally-pages: needs an FTL that places, got ftl=bast");
    refused("channels=2,ways=1,pages=16,tally-pages=32", "tally-pages: at most pages (16), got 32");
}

static void test_settings(void)
{
    NhEngine *e = unit_engine(PROPS ",page-size=8K", 4 << 20);
    const uint64_t *bytes = nh_engine_part(e, NH_PART_tally);  /* TallySettings.bytes */

    g_assert_cmpuint(*bytes, ==, 8 * 8192);
    nh_engine_free(e);
}

static void test_counter(void)
{
    NhEngine *e = unit_engine(PROPS, 4 << 20), *b = unit_engine(PROPS, 4 << 20);
    char *dir = g_dir_make_tmp("nh-trivial-XXXXXX", NULL);
    char *path = g_build_filename(dir, "state", NULL), *js;
    JsonNode *key;

    /* what the part would count: its slot, where the engine keeps its counters */
    e->parts.counters[NH_PART_tally][0] = 5;
    g_assert_cmpuint(unit_stat(e, "tally", "pages"), ==, 5);
    js = nh_engine_stats_json(e, false);
    key = unit_json(js, "config.tally-pages");
    g_assert_cmpstr(json_node_get_string(key), ==, "8");
    json_node_unref(key);
    g_free(js);

    g_assert_true(nh_engine_save(e, path, NULL, 0, NULL));
    g_assert_true(nh_engine_load(b, path, NULL, NULL, NULL));
    g_assert_cmpuint(unit_stat(b, "tally", "pages"), ==, 5);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    nh_engine_free(e);
    nh_engine_free(b);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trivial/part/key", test_key);
    g_test_add_func("/trivial/part/settings", test_settings);
    g_test_add_func("/trivial/part/counter", test_counter);
    return g_test_run();
}
