/* A part added as one file and one registry entry (tally.c, meson.build here) works end to end:
 * its key is a key like any other, its check and the FTL feature it needs refuse what they
 * should, the engine decodes its settings, and its counter is in the statistics document and
 * survives the state file. */
#include "unit.h"

#define PROPS "channels=2,ways=1,pages=16,tally-pages=8"

static void refused(const char *props, const char *why)
{
    NhConfig c;
    GError *err = NULL;

    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, props, &err));
    g_assert_null(nh_engine_new(&c, 4 << 20, &err));
    g_assert_cmpstr(err->message, ==, why);
    g_clear_error(&err);
}

static void test_key(void)
{
    unit_key("tally-pages", "0", "5000", "tally-pages: must be between 0 and 4096, got 5000");
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
    char *js;
    JsonNode *key;

    /* what the part would count: its slot, where the engine keeps its counters */
    e->parts.counters[NH_PART_tally][0] = 5;
    g_assert_cmpuint(unit_stat(e, "tally", "pages"), ==, 5);
    js = nh_engine_stats_json(e, false);
    key = unit_json(js, "config.tally-pages");
    g_assert_cmpstr(json_node_get_string(key), ==, "8");
    json_node_unref(key);
    g_free(js);

    unit_reload(e, b);
    g_assert_cmpuint(unit_stat(b, "tally", "pages"), ==, 5);
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
