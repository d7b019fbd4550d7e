/* unit.h - helpers every engine unit test uses: an engine from a property string, the full
 * consistency check, and one counter of the statistics document. */
#ifndef NH_TEST_UNIT_H
#define NH_TEST_UNIT_H

#include <string.h>
#include <glib.h>

#include "engine.h"

/* An engine for @props over @capacity bytes; the test fails on any error. */
static inline NhEngine *unit_engine(const char *props, uint64_t capacity)
{
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;

    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, props, &err));
    e = nh_engine_new(&c, capacity, &err);
    g_assert_no_error(err);
    return e;
}

/* nh_engine_check(), failing the test with what is inconsistent. */
static inline void unit_check(NhEngine *e)
{
    GError *err = NULL;
    if (!nh_engine_check(e, &err)) {
        g_error("%s", err->message);
    }
}

/* Counter @key of section @section of the statistics document (compact JSON). */
static inline uint64_t unit_stat(NhEngine *e, const char *section, const char *key)
{
    char *js = nh_engine_stats_json(e, false);
    char *sec = g_strdup_printf("\"%s\":{", section);
    char *k = g_strdup_printf("\"%s\":", key);
    char *p = strstr(js, sec), *q;
    uint64_t v;

    g_assert_nonnull(p);
    q = strstr(p, k);
    g_assert_nonnull(q);
    v = g_ascii_strtoull(q + strlen(k), NULL, 10);
    g_free(sec);
    g_free(k);
    g_free(js);
    return v;
}

#endif
