/* unit.h - helpers every engine unit test uses: an engine from a property string, the full
 * consistency check, values of the statistics document (read with json-glib), and the
 * placement settings in force. */
#ifndef NH_TEST_UNIT_H
#define NH_TEST_UNIT_H

#include <string.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "engine-priv.h"
#include "placement.h"

/* The keys the tests start from: no preset, every key its own default (8 channels x 4 SLC
 * chips, 4 KiB pages), the device the tests' numbers were worked out on; the default preset's
 * TLC drive would make them slower and its blocks larger than their small drives. */
#define UNIT_KEYS "preset=none"

/* @c with every key at the tests' defaults (UNIT_KEYS). */
static inline void unit_defaults(NhConfig *c)
{
    nh_config_defaults(c);
    g_assert_true(nh_config_parse(c, UNIT_KEYS, NULL));
}

/* An engine for @props over @capacity bytes; the test fails on any error. */
static inline NhEngine *unit_engine(const char *props, uint64_t capacity)
{
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;

    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, props, &err));
    e = nh_engine_new(&c, capacity, &err);
    g_assert_no_error(err);
    return e;
}

/* The placement settings @e decoded from its keys (placement.h). */
static inline const NhPlacementSettings *unit_placement(const NhEngine *e)
{
    return nh_engine_part(e, NH_PART_placement);
}

/* Key @key of a policy or part added by its file alone: its default prints as @def, and @bad
 * is refused with @why. */
static inline void unit_key(const char *key, const char *def, const char *bad, const char *why)
{
    NhConfig c;
    GError *err = NULL;
    char *v;

    unit_defaults(&c);
    v = nh_config_get(&c, key);
    g_assert_cmpstr(v, ==, def);
    g_free(v);
    g_assert_false(nh_config_set(&c, key, bad, &err));
    g_assert_cmpstr(err->message, ==, why);
    g_clear_error(&err);
}

/* Save @e to a state file and load it into @b (same configuration), failing the test on any
 * error. */
static inline void unit_reload(NhEngine *e, NhEngine *b)
{
    char *dir = g_dir_make_tmp("nh-unit-XXXXXX", NULL);
    char *path = g_build_filename(dir, "state", NULL);
    GError *err = NULL;

    g_assert_true(nh_engine_save(e, path, NULL, 0, &err));
    g_assert_true(nh_engine_load(b, path, NULL, NULL, &err));
    g_assert_no_error(err);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
}

/* nh_engine_check(), failing the test with what is inconsistent. */
static inline void unit_check(NhEngine *e)
{
    GError *err = NULL;
    if (!nh_engine_check(e, &err)) {
        g_error("%s", err->message);
    }
}

/* The member at the dotted @path ("ftl.cmt.hits") of the JSON document @js; the test fails
 * when there is none.  Caller frees with json_node_unref(). */
static inline JsonNode *unit_json(const char *js, const char *path)
{
    JsonParser *p = json_parser_new();
    char **parts = g_strsplit(path, ".", -1);
    JsonNode *n;

    g_assert_true(json_parser_load_from_data(p, js, -1, NULL));
    n = json_parser_get_root(p);
    for (char **k = parts; *k; k++) {
        g_assert_true(JSON_NODE_HOLDS_OBJECT(n));
        n = json_object_get_member(json_node_get_object(n), *k);
        if (!n) {
            g_error("no %s in the statistics document", path);
        }
    }
    n = json_node_copy(n);
    g_strfreev(parts);
    g_object_unref(p);
    return n;
}

/* The number at @path of @js (an integer or a double). */
static inline double unit_json_number(const char *js, const char *path)
{
    JsonNode *n = unit_json(js, path);
    double v = json_node_get_value_type(n) == G_TYPE_INT64 ? (double)json_node_get_int(n)
                                                           : json_node_get_double(n);
    json_node_unref(n);
    return v;
}

/* The integer at @path of @js. */
static inline uint64_t unit_json_uint(const char *js, const char *path)
{
    JsonNode *n = unit_json(js, path);
    uint64_t v;

    g_assert_true(json_node_get_value_type(n) == G_TYPE_INT64);
    v = (uint64_t)json_node_get_int(n);
    json_node_unref(n);
    return v;
}

/* Are the members at @path of documents @a and @b equal? */
static inline bool unit_json_same(const char *a, const char *b, const char *path)
{
    JsonNode *x = unit_json(a, path), *y = unit_json(b, path);
    bool same = json_node_equal(x, y);
    json_node_unref(x);
    json_node_unref(y);
    return same;
}

/* Counter @key of section @section (dotted: "ftl.cmt") of @e's statistics document. */
static inline uint64_t unit_stat(NhEngine *e, const char *section, const char *key)
{
    char *js = nh_engine_stats_json(e, false);
    char *path = g_strconcat(section, ".", key, NULL);
    uint64_t v = unit_json_uint(js, path);

    g_free(path);
    g_free(js);
    return v;
}

/* Request @op of [@off, +@len) at @now on @e, which must accept it; when it completes. */
static inline uint64_t unit_submit(NhEngine *e, NhOp op, uint64_t off, uint64_t len,
                                   uint64_t now)
{
    NhRequest q = { .op = op, .offset = off, .length = len };
    uint64_t done;
    GError *err = NULL;

    g_assert_true(nh_engine_submit(e, &q, now, &done, &err));
    g_assert_no_error(err);
    return done;
}

#endif
