/* A policy added as one file and one registry entry (fifo.c, meson.build here) works end to end:
 * its key is a key like any other, its counter is in the statistics document and survives the
 * state file. */
#include "unit.h"

#define PROPS "channels=2,ways=1,pages=16,buffer=fifo,buffer-size=128K,fifo-whole=on"

static void fill(NhEngine *e)
{
    uint64_t now = 0, done;

    for (uint64_t i = 0; i < 400; i++) {
        NhRequest q = { .op = NH_OP_WRITE, .offset = (i * 7919 % 1000) * 4096, .length = 4096 };
        g_assert_true(nh_engine_submit(e, &q, now += 1000, &done, NULL));
    }
}

static void test_key(void)
{
    NhConfig c;
    GError *err = NULL;

    unit_key("fifo-whole", "off", "maybe", "fifo-whole: unknown value 'maybe' (valid: off, on)");
    unit_defaults(&c);
    g_assert_true(nh_config_set(&c, "buffer", "fifo", &err));
    g_assert_no_error(err);
}

static void test_counter(void)
{
    NhEngine *e = unit_engine(PROPS, 4 << 20), *b = unit_engine(PROPS, 4 << 20);
    NhEngine *page = unit_engine("channels=2,ways=1,pages=16,buffer=fifo,buffer-size=128K",
                                 4 << 20);
    char *js;
    JsonNode *whole;
    uint64_t victims;

    fill(e);
    fill(page);
    victims = unit_stat(e, "buffer.fifo", "whole_block_victims");
    g_assert_cmpuint(victims, >, 0);
    g_assert_cmpuint(victims, ==, unit_stat(e, "buffer", "evictions"));
    g_assert_cmpuint(unit_stat(page, "buffer.fifo", "whole_block_victims"), ==, 0);
    g_assert_cmpuint(unit_stat(page, "buffer", "evictions"), >, 0);
    js = nh_engine_stats_json(e, false);
    whole = unit_json(js, "config.fifo-whole");
    g_assert_cmpstr(json_node_get_string(whole), ==, "on");
    json_node_unref(whole);
    g_free(js);

    nh_engine_drain(e, 1ull << 40);
    unit_reload(e, b);
    g_assert_cmpuint(unit_stat(b, "buffer.fifo", "whole_block_victims"), ==,
                     unit_stat(e, "buffer.fifo", "whole_block_victims"));
    nh_engine_free(e);
    nh_engine_free(b);
    nh_engine_free(page);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trivial/key", test_key);
    g_test_add_func("/trivial/counter", test_counter);
    return g_test_run();
}
