/* Configuration parser: defaults, presets, units, canonical text, and every kind of bad
 * input. */
#include "engine.h"
#include "unit.h"

#include <math.h>
#include <string.h>

/* lbuf-alpha as stored: a policy slot holding a double */
static double alpha(const NhConfig *c)
{
    uint64_t v;

    memcpy(&v, (const char *)c + nh_config_find("lbuf-alpha")->offset, sizeof(v));
    return nh_key_fraction(v);
}

static void test_defaults(void)
{
    NhConfig c;
    unit_defaults(&c);
    g_assert_cmpuint(c.channels, ==, 8);
    g_assert_cmpuint(c.ways, ==, 4);
    g_assert_cmpuint(c.dies, ==, 1);
    g_assert_cmpuint(c.planes, ==, 1);
    g_assert_cmpuint(c.blocks, ==, 0);
    g_assert_cmpuint(c.pages, ==, 256);
    g_assert_cmpuint(c.page_size, ==, 4096);
    g_assert_cmpuint(c.op, ==, 7);
    g_assert_cmpint(c.cell, ==, NH_CELL_SLC);
    g_assert_cmpuint(c.channel_mbps, ==, 800);
    g_assert_cmpstr(c.ftl, ==, "page");
    g_assert_cmpint(c.gc, ==, NH_GC_GREEDY);
    g_assert_cmpuint(c.gc_low, ==, 10);
    g_assert_cmpuint(c.gc_high, ==, 20);
    g_assert_cmpuint(c.gc_critical, ==, 3);
    g_assert_cmpuint(c.wl_threshold, ==, 0);
    g_assert_cmpint(c.latency, ==, NH_LATENCY_MODEL);
    g_assert_true(nh_config_check(&c, NULL));
}

/* Issue 10: numbers are decimal whatever their form, 0 is a value (never the preset, which is
 * auto), a key given twice is refused naming it. */
static void test_one_way(void)
{
    static const char *const zero[] = { "t-read", "t-prog", "t-erase", "pe-cycles", "blocks",
                                        "log-blocks", "t-buf-read", "t-buf-write", NULL };
    NhConfig a, b;
    GError *err = NULL;

    unit_defaults(&a);
    unit_defaults(&b);
    g_assert_true(nh_config_parse(&a, "channels=08,ways=010", NULL));
    g_assert_true(nh_config_parse(&b, "channels= 8,ways=10 ", NULL));
    g_assert_cmpuint(a.channels, ==, 8);
    g_assert_cmpuint(a.ways, ==, 10);
    g_assert_cmpmem(&a, sizeof(a), &b, sizeof(b));
    g_assert_false(nh_config_set(&a, "channels", "0x8", &err));
    g_assert_nonnull(strstr(err->message, "channels: '0x8' is not a number"));
    g_clear_error(&err);
    for (const char *const *k = zero; *k; k++) {
        g_assert_false(nh_config_set(&a, *k, "0", &err));
        g_assert_true(g_str_has_prefix(err->message, *k));
        g_assert_nonnull(strstr(err->message, "or 'auto', got 0"));
        g_clear_error(&err);
    }
    g_assert_false(nh_config_parse(&a, "ftl=page,channels=4,ways=2,channels=8", &err));
    g_assert_cmpstr(err->message, ==, "channels: given twice (each key once: which should "
                    "count?)");
    g_clear_error(&err);
}

static void test_units(void)
{
    NhConfig c;
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "page-size=16K,t-read=25us,t-prog=016,t-erase=2ms,"
                                  "cell=TLC, channels = 2 ,latency=zero,gc=cost-benefit", NULL));
    g_assert_cmpuint(c.page_size, ==, 16384);
    g_assert_cmpuint(c.t_read, ==, 25000);
    g_assert_cmpuint(c.t_prog, ==, 16);
    g_assert_cmpuint(c.t_erase, ==, 2000000);
    g_assert_cmpint(c.cell, ==, NH_CELL_TLC);
    g_assert_cmpuint(c.channels, ==, 2);
    g_assert_cmpint(c.latency, ==, NH_LATENCY_ZERO);
    g_assert_cmpint(c.gc, ==, NH_GC_COST_BENEFIT);
    g_assert_true(nh_config_set(&c, "page-size", "8192", NULL));
    g_assert_cmpuint(c.page_size, ==, 8192);
    g_assert_true(nh_config_set(&c, "t-read", "1s", NULL));
    g_assert_cmpuint(c.t_read, ==, 1000000000);
    g_assert_true(nh_config_set(&c, "t-read", "auto", NULL));
    g_assert_cmpuint(c.t_read, ==, 0);
    g_assert_true(nh_config_set(&c, "blocks", "auto", NULL));
    /* a fraction: 0 is a value, auto is NAN; printed in its shortest exact form */
    g_assert_true(isnan(alpha(&c)));
    for (const char *const *x = (const char *const[]){ "-1", "-0.5", "0", "0.1", "1", NULL }; *x;
         x++) {
        g_assert_true(nh_config_set(&c, "lbuf-alpha", *x, NULL));
        g_assert_cmpfloat(alpha(&c), ==, g_ascii_strtod(*x, NULL));
        char *v = nh_config_get(&c, "lbuf-alpha");
        g_assert_cmpstr(v, ==, *x);
        g_free(v);
    }
    g_assert_true(nh_config_set(&c, "lbuf-alpha", "-0", NULL));
    char *v = nh_config_get(&c, "lbuf-alpha");
    g_assert_cmpstr(v, ==, "0");
    g_free(v);
    g_assert_true(nh_config_set(&c, "lbuf-alpha", "AUTO", NULL));
    g_assert_true(isnan(alpha(&c)));
    g_assert_true(nh_config_parse(&c, "", NULL));
    g_assert_true(nh_config_parse(&c, NULL, NULL));
}

/* get(set(x)) is canonical and parses back to the same value, for every key. */
static void test_canonical(void)
{
    NhConfig a, b;
    unit_defaults(&a);
    g_assert_true(nh_config_parse(&a, "t-read=1500us,t-prog=1001ns,page-size=8K,blocks=77,"
                                  "pe-cycles=3000,cell=znand", NULL));
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        char *v = nh_config_get(&a, nh_config_key(i)->name);
        g_assert_nonnull(v);
        unit_defaults(&b);
        g_assert_true(nh_config_set(&b, nh_config_key(i)->name, v, NULL));
        char *w = nh_config_get(&b, nh_config_key(i)->name);
        g_assert_cmpstr(v, ==, w);
        g_free(v);
        g_free(w);
    }
    char *v = nh_config_get(&a, "t-read");
    g_assert_cmpstr(v, ==, "1500us");
    g_free(v);
    v = nh_config_get(&a, "page-size");
    g_assert_cmpstr(v, ==, "8K");
    g_free(v);
    v = nh_config_get(&a, "blocks");
    g_assert_cmpstr(v, ==, "77");
    g_free(v);
    unit_defaults(&b);
    v = nh_config_get(&b, "blocks");
    g_assert_cmpstr(v, ==, "auto");
    g_free(v);
    v = nh_config_get(&b, "ftl");
    g_assert_cmpstr(v, ==, "page");
    g_free(v);
    g_assert_null(nh_config_get(&b, "nonsense"));
}

static void expect_error(const char *text, const char *message)
{
    NhConfig c;
    GError *err = NULL;
    unit_defaults(&c);
    if (nh_config_parse(&c, text, &err)) {
        g_assert_true(!nh_config_check(&c, &err));
    }
    g_assert_nonnull(err);
    if (!strstr(err->message, message)) {
        g_error("'%s': got '%s', expected it to contain '%s'", text, err->message, message);
    }
    g_error_free(err);
}

static void test_errors(void)
{
    expect_error("channels=0", "channels: must be between 1 and 64, got 0");
    expect_error("host-mps=100", "host-mps: PCIe's payload sizes are 128, 256, 512, 1024, "
                 "2048 and 4096 bytes (0: no packet overhead), got 100");
    expect_error("host-mps=8192", "host-mps: must be between 0 and 4096, got 8192");
    expect_error("fw-read=abc", "fw-read: 'abc' is not a time");
    expect_error("fw-write=2s", "fw-write: must be between 0ns and 1000000000ns, got 2s");
    expect_error("fw-write-4k=-1us", "fw-write-4k: '-1us' is not a time");
    expect_error("channels=65", "channels: must be between 1 and 64, got 65");
    expect_error("channels=abc", "channels: 'abc' is not a number");
    expect_error("channels=-1", "channels: '-1' is not a number");
    expect_error("channels=4x", "channels: '4x' is not a number");
    expect_error("ways=0", "ways: must be between 1 and 32");
    expect_error("dies=17", "dies: must be between 1 and 16");
    expect_error("planes=0", "planes: must be between 1 and 16");
    expect_error("blocks=x", "blocks: 'x' is not a number or 'auto'");
    expect_error("pages=2", "pages: must be between 4 and 4096, got 2");
    expect_error("page-size=2K", "page-size: must be between 4096 and 32768, got 2K");
    expect_error("page-size=12K", "page-size: must be 4K, 8K, 16K or 32K, got 12K");
    expect_error("page-size=4Q", "page-size: '4Q' is not a size");
    expect_error("page-size=99999999999999999999T", "page-size: '99999999999999999999T' is not a size");
    expect_error("op=0", "op: must be between 1 and 50, got 0");
    expect_error("op=51", "op: must be between 1 and 50, got 51");
    expect_error("cell=plc", "cell: unknown value 'plc' (valid: slc, mlc, tlc, qlc, znand)");
    expect_error("t-read=5 weeks", "t-read: '5 weeks' is not a time");
    expect_error("t-read=2s", "t-read: must be between 1ns and 1000000000ns or 'auto', got 2s");
    expect_error("t-prog=1h", "t-prog: '1h' is not a time");
    expect_error("t-erase=ms", "t-erase: 'ms' is not a time");
    expect_error("channel-mbps=0", "channel-mbps: must be between 1 and 100000, got 0");
    expect_error("pe-cycles=20000000", "pe-cycles: must be between 1 and 10000000");
    expect_error("ftl=nope", "ftl: unknown value 'nope' (valid: page, dftl");
    expect_error("gc=random", "gc: unknown value 'random' (valid: greedy, cost-benefit)");
    expect_error("gc-low=0", "gc-low: must be between 1 and 99, got 0");
    expect_error("gc-high=101", "gc-high: must be between 2 and 100, got 101");
    expect_error("gc-critical=0", "gc-critical: must be between 1 and 98, got 0");
    expect_error("gc-low=30", "gc-low: must be below gc-high (20), got 30");
    expect_error("gc-critical=10", "gc-critical: must be below gc-low (10), got 10");
    expect_error("wl-threshold=-5", "wl-threshold: '-5' is not a number");
    expect_error("alloc=random", "alloc: unknown value 'random' (valid: static, dynamic)");
    expect_error("ftl=fast,alloc=dynamic", "alloc: dynamic needs an FTL that allocates host "
                 "pages plane by plane (ftl=page or dftl), got ftl=fast");
    expect_error("stripe-merge=on,alloc=dynamic", "alloc: dynamic does not go with "
                 "stripe-merge=on");
    expect_error("sched=fcfs,alloc=dynamic", "alloc: dynamic needs sched=prio");
    expect_error("latency=fast", "latency: unknown value 'fast' (valid: model, zero)");
    expect_error("lbuf-alpha=1.5", "lbuf-alpha: must be between -1 and 1, got 1.5");
    expect_error("lbuf-alpha=-2", "lbuf-alpha: must be between -1 and 1, got -2");
    expect_error("lbuf-alpha=lru", "lbuf-alpha: 'lru' is not a number or 'auto'");
    expect_error("lbuf-alpha=0.5x", "lbuf-alpha: '0.5x' is not a number or 'auto'");
    expect_error("lbuf-alpha=nan", "lbuf-alpha: 'nan' is not a number or 'auto'");
    expect_error("lbuf-alpha=inf", "lbuf-alpha: 'inf' is not a number or 'auto'");
    expect_error("colour=red", "colour: unknown key (valid keys: preset, channels, ways,");
    expect_error("channels", "channels: expected key=value");
    expect_error("channels=", "channels: empty value");
}

static void test_table(void)
{
    /* every key has help, a default that parses, and a sane type */
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        const NhConfigKey *k = nh_config_key(i);
        g_assert_nonnull(k->help);
        g_assert_true(nh_config_find(k->name) == k);
        g_assert_true(k->type == NH_KEY_ENUM || k->type == NH_KEY_STRING ? k->choices != NULL
                                                                        : k->min <= k->max);
    }
}

/* Checks that need the capacity happen at nh_engine_new. */
static void test_engine_refuses(void)
{
    NhConfig c;
    GError *err = NULL;
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "channels=2,ways=1,pages=64,blocks=16", NULL));
    g_assert_null(nh_engine_new(&c, 1ull << 30, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->message, "blocks: 16 blocks per plane give"));
    g_assert_nonnull(strstr(err->message, "less than the capacity 1.0 GiB"));
    g_clear_error(&err);
    g_assert_null(nh_engine_new(&c, 0, &err));
    g_assert_nonnull(strstr(err->message, "capacity"));
    g_clear_error(&err);
    /* 128 TiB of 4K pages do not fit 32-bit page numbers, nor at any page-size (op and spare
     * blocks come on top): no larger page-size is advised (it was, also at 32K) */
    unit_defaults(&c);
    g_assert_null(nh_engine_new(&c, 128ull << 40, &err));
    g_assert_nonnull(strstr(err->message, "capacity: 128.0 TiB needs "));
    g_assert_nonnull(strstr(err->message, " physical pages of 4096 bytes, more than the 2^32 the "
                                          "mapping tables address, at any page-size"));
    g_assert_null(strstr(err->message, "use page-size"));
    g_clear_error(&err);
    /* 20 TiB fit at 8K: that is advised, and with an explicit blocks, blocks=auto too */
    g_assert_null(nh_engine_new(&c, 20ull << 40, &err));
    g_assert_nonnull(strstr(err->message, "page-size: 20.0 TiB of capacity needs"));
    g_assert_true(g_str_has_suffix(err->message, "; use page-size=8K"));
    g_clear_error(&err);
    g_assert_true(nh_config_parse(&c, "blocks=100000", NULL));
    g_assert_null(nh_engine_new(&c, 20ull << 40, &err));
    g_assert_true(g_str_has_suffix(err->message, "; use page-size=8K with blocks=auto"));
    g_clear_error(&err);
    /* too many blocks per plane is said so (it was blamed on page-size) */
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "channels=1,ways=1,pages=4", NULL));
    g_assert_null(nh_engine_new(&c, 14ull << 40, &err));
    g_assert_nonnull(strstr(err->message, "blocks: 14.0 TiB of capacity needs 1027920200 blocks "
                                          "per plane, more than the 16777216 a plane may have"));
    g_clear_error(&err);
    /* every spare block kept free leaves none for invalid pages at any size */
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "gc-high=100", NULL));
    g_assert_null(nh_engine_new(&c, 256ull << 20, &err));
    g_assert_nonnull(strstr(err->message, "gc-high:"));
    g_clear_error(&err);
}

/* The blocks an engine is sized with, and the explicit blocks it refuses, saying which rule. */
static void test_engine_blocks(void)
{
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;

    /* auto sizing gives the fewest blocks that hold the capacity (128 blocks of data per
     * plane) with the open blocks (2), the gc-high free blocks (3) and op of the data as room
     * (10): 143.  An explicit blocks needs the capacity within op of its physical space, and
     * one block of room: 138 (138 x 128 pages x 0.93 >= 16,384), not 137. */
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "channels=2,ways=1,pages=64,streams=0", NULL));
    e = nh_engine_new(&c, 64ull << 20, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(nh_engine_config(e)->blocks, ==, 143);
    g_assert_cmpuint(nh_engine_logical_capacity(e), >=, 64ull << 20);
    nh_engine_free(e);
    g_assert_true(nh_config_set(&c, "blocks", "138", NULL));
    e = nh_engine_new(&c, 64ull << 20, &err);
    g_assert_no_error(err);
    nh_engine_free(e);
    g_assert_true(nh_config_set(&c, "blocks", "137", NULL));
    g_assert_null(nh_engine_new(&c, 64ull << 20, &err));
    g_assert_nonnull(strstr(err->message, "use blocks=138 or more, op=6 or less, or blocks=auto"));
    g_clear_error(&err);
    /* streams=auto (the default) keeps a block per plane for each of its 16 stream frontiers:
     * 143 + 16 with blocks=auto, and an explicit blocks is told why it needs them */
    g_assert_true(nh_config_set(&c, "streams", "auto", NULL));
    g_assert_true(nh_config_set(&c, "blocks", "auto", NULL));
    e = nh_engine_new(&c, 64ull << 20, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(nh_engine_config(e)->blocks, ==, 143 + 16);
    nh_engine_free(e);
    g_assert_true(nh_config_set(&c, "blocks", "140", NULL));
    g_assert_null(nh_engine_new(&c, 64ull << 20, &err));
    g_assert_nonnull(strstr(err->message, "(16 of them kept for the frontiers of physical "
                                          "streams 1..16: fewer with a lower streams, none "
                                          "with streams=0)"));
    g_clear_error(&err);
    /* 256 MiB on the default 32 planes: 12 blocks per plane hold the capacity after op, but
     * leave 4 spare, fewer than the 2 open blocks, 3 free at gc-high and 1 of room GC needs;
     * the message said "give ... logical space ... less than the capacity" of a space larger
     * than the capacity */
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "blocks=12,streams=0", NULL));
    g_assert_null(nh_engine_new(&c, 256ull << 20, &err));
    g_assert_cmpstr(err->message, ==, "blocks: 12 blocks per plane leave 4 spare beyond the 8 "
                    "that hold the capacity 256.0 MiB, fewer than the 6 spare blocks per plane "
                    "ftl=page needs for its open blocks, free blocks and room to clean "
                    "(docs/engine.md, Geometry); use blocks=14 or more, or blocks=auto, or a "
                    "smaller capacity");
    g_clear_error(&err);
    /* MQSim's own geometry (8 channels x 4 chips x 2 dies x 2 planes, 2,048 blocks of 256
     * pages of 8 KiB) at its op of 7%: 1,880 blocks per plane hold 470 GiB, 168 are spare.
     * blocks=auto would ask 180 (op of the data besides the open and free blocks); an
     * explicit geometry counts its open and free blocks in op, as MQSim does, and was refused */
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "channels=8,ways=4,dies=2,planes=2,blocks=2048,pages=256,"
                                      "page-size=8K,op=7", NULL));
    e = nh_engine_new(&c, 470ull << 30, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(nh_engine_config(e)->blocks, ==, 2048);
    nh_engine_free(e);
    /* beyond its logical space the op rule refuses it, advising the op that would do */
    g_assert_null(nh_engine_new(&c, 500ull << 30, &err));
    g_assert_cmpstr(err->message, ==, "blocks: 2048 blocks per plane give 476.2 GiB of logical "
                    "space after op=7%, less than the capacity 500.0 GiB; use blocks=2151 or "
                    "more, op=2 or less, or blocks=auto");
    g_clear_error(&err);
}

/* No preset given is the default drive's preset: its values where it has them, the keys' own
 * defaults elsewhere. */
static void test_preset_default(void)
{
    NhConfig c;
    char *v;

    nh_config_defaults(&c);
    g_assert_cmpstr(c.preset, ==, NH_PRESET_DEFAULT);
    g_assert_cmpstr(c.preset, ==, "pm9a3");
    g_assert_cmpuint(c.cell, ==, NH_CELL_TLC);
    g_assert_cmpuint(c.channels, ==, 8);
    g_assert_cmpuint(c.ways * c.dies, ==, 16);
    g_assert_cmpuint(c.page_size, ==, 16384);
    g_assert_cmpuint(c.t_read, ==, 45000);
    g_assert_cmpuint(c.t_prog, ==, 450000);
    g_assert_cmpuint(c.op, ==, 12);
    g_assert_cmpstr(c.ftl, ==, "page");
    v = nh_config_get(&c, "preset");
    g_assert_cmpstr(v, ==, "pm9a3");
    g_free(v);
}

/* A key given keeps its value whatever its place in the string, and whatever preset comes
 * after it; a second preset replaces every value of the first. */
static void test_preset_overrides(void)
{
    NhConfig a, b, c;

    nh_config_defaults(&a);
    nh_config_defaults(&b);
    g_assert_true(nh_config_parse(&a, "channels=4,preset=970pro,t-read=20us", NULL));
    g_assert_true(nh_config_parse(&b, "t-read=20us,channels=4,preset=970pro", NULL));
    g_assert_true(memcmp(&a, &b, sizeof(a)) == 0);
    g_assert_cmpuint(a.channels, ==, 4);
    g_assert_cmpuint(a.t_read, ==, 20000);
    g_assert_cmpuint(a.t_prog, ==, 185000);     /* the preset's */
    g_assert_cmpuint(a.page_size, ==, 32768);
    g_assert_cmpuint(a.ways, ==, 2);
    /* the device sets its properties one at a time: a preset after another */
    nh_config_defaults(&c);
    g_assert_true(nh_config_set(&c, "preset", "sz985", NULL));
    g_assert_true(nh_config_set(&c, "ways", "3", NULL));
    g_assert_true(nh_config_set(&c, "preset", "970pro", NULL));
    g_assert_cmpuint(c.ways, ==, 3);
    g_assert_cmpuint(c.channels, ==, 8);
    g_assert_cmpuint(c.cell, ==, NH_CELL_MLC);
    g_assert_cmpuint(c.op, ==, 7);
    /* none: the keys' own defaults, also where the previous preset had a value */
    g_assert_true(nh_config_set(&c, "preset", "none", NULL));
    g_assert_cmpuint(c.cell, ==, NH_CELL_SLC);
    g_assert_cmpuint(c.page_size, ==, 4096);
    g_assert_cmpuint(c.t_read, ==, 0);
    g_assert_cmpuint(c.ways, ==, 3);
    /* a given cell takes its own timing and endurance (auto), not the preset's drive's, in
     * either order; a given t-prog still wins over the cell */
    nh_config_defaults(&a);
    nh_config_defaults(&b);
    g_assert_true(nh_config_parse(&a, "preset=pm9a3,cell=slc,t-prog=300us", NULL));
    g_assert_true(nh_config_parse(&b, "t-prog=300us,cell=slc,preset=pm9a3", NULL));
    g_assert_true(memcmp(&a, &b, sizeof(a)) == 0);
    g_assert_cmpuint(a.cell, ==, NH_CELL_SLC);
    g_assert_cmpuint(a.t_read, ==, 0);
    g_assert_cmpuint(a.t_erase, ==, 0);
    g_assert_cmpuint(a.pe_cycles, ==, 0);
    g_assert_cmpuint(a.t_prog, ==, 300000);
    g_assert_cmpuint(a.page_size, ==, 16384);   /* the rest of the preset stays */
    /* without cell, the preset's timing */
    nh_config_defaults(&c);
    g_assert_cmpuint(c.t_read, ==, 45000);
}

/* A drive of @capacity on @preset with @ftl and @more: if the same keys make a drive on
 * preset=none, they make one on the preset too (its values give way: nh_config_settle), and
 * what the preset dropped is said with its reason. */
static void preset_builds(const char *preset, const char *ftl, const char *more,
                          uint64_t capacity)
{
    char *keys = g_strdup_printf("ftl=%s%s%s", ftl, *more ? "," : "", more);
    char *props = g_strdup_printf("preset=%s,%s", preset, keys);
    NhConfig none, c;
    GError *err = NULL;
    NhEngine *e;
    bool possible;

    unit_defaults(&none);
    g_assert_true(nh_config_parse(&none, keys, NULL));
    e = nh_engine_new(&none, capacity, NULL);
    possible = e != NULL;
    nh_engine_free(e);
    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, props, &err));
    e = nh_engine_new(&c, capacity, &err);
    if (possible && err) {
        g_error("%s builds on preset=none but not on its preset: %s", props, err->message);
    }
    g_clear_error(&err);
    g_assert_true(!possible || nh_config_settle(&c, NULL));
    for (size_t i = 0; possible && i < nh_config_nkeys(); i++) {
        char *why = nh_config_dropped(&c, nh_config_key(i));
        g_assert_true(!why || strlen(why) > 10);
        g_free(why);
    }
    g_clear_error(&err);
    nh_engine_free(e);
    g_free(props);
    g_free(keys);
}

/* Every preset's keys exist, its values parse, and with every FTL and the keys that refuse
 * some of its values (zones, a write buffer, placement, dynamic allocation, a read cache) a
 * drive of 1 GiB and one of 64 MiB (the tests' size) can be made of it wherever one can be on
 * preset=none; the preset key's help names each (the device's help shows it). */
static void test_preset_table(void)
{
    const NhConfigKey *key = nh_config_find("preset");
    size_t n = 0;

    for (size_t i = 0; nh_presets[i]; i++, n++) {
        const NhPreset *p = nh_presets[i];
        const char *ftls[] = { "page", "dftl", "bast", "fast", "sast" };
        const char *extras[] = { "", "zones=4", "buffer=lru", "streams=3", "alloc=dynamic",
                                 "cache-size=1M" };

        g_assert_nonnull(strstr(key->help, p->name));
        g_assert_cmpstr(nh_preset_names[i], ==, p->name);
        for (const NhPresetValue *v = p->values; v->key; v++) {
            NhConfig c;
            GError *err = NULL;
            nh_config_defaults(&c);
            g_assert_nonnull(nh_config_find(v->key));
            g_assert_true(nh_config_set(&c, v->key, v->value, &err));
            g_assert_no_error(err);
            g_assert_cmpuint(strlen(v->source), >, 10);
        }
        for (size_t f = 0; f < G_N_ELEMENTS(ftls); f++) {
            for (size_t x = 0; x < G_N_ELEMENTS(extras); x++) {
                preset_builds(p->name, ftls[f], extras[x], f ? 64ull << 20 : 1ull << 30);
            }
        }
    }
    g_assert_cmpuint(n, >=, 4);
    g_assert_cmpstr(nh_preset_names[n], ==, "none");
    g_assert_null(nh_preset_names[n + 1]);
}

/* The value @key has in @c, checked, freed. */
static void expect_value(const NhConfig *c, const char *key, const char *want)
{
    char *v = nh_config_get(c, key);

    g_assert_cmpstr(v, ==, want);
    g_free(v);
}

/* A preset's value the rest of the configuration refuses goes back to its key's default and
 * says why; the same value given by the user is refused as ever; a refusal that is not of a
 * preset's value stands. */
static void test_preset_soft(void)
{
    NhConfig c;
    GError *err = NULL;
    char *why;

    /* pm9a3 carries stripe-merge=on, which ftl=bast refuses: in either order, dropped */
    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, "ftl=bast,preset=pm9a3", NULL));
    expect_value(&c, "stripe-merge", "on");
    g_assert_true(nh_config_settle(&c, &err));
    g_assert_no_error(err);
    expect_value(&c, "stripe-merge", "off");
    why = nh_config_dropped(&c, nh_config_find("stripe-merge"));
    g_assert_cmpstr(why, ==, "on: stripe-merge: only ftl=page and ftl=dftl merge writes into "
                    "stripes, got ftl=bast");
    g_free(why);
    g_assert_null(nh_config_dropped(&c, nh_config_find("ftl")));
    g_assert_null(nh_config_dropped(&c, nh_config_find("page-size")));
    g_assert_true(nh_config_check(&c, NULL));
    g_assert_true(nh_config_settle(&c, NULL));      /* settled stays settled */
    /* a refusal of another key that names the preset's value (alloc: ... stripe-merge=on) */
    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, "preset=sz985,alloc=dynamic", NULL));
    g_assert_true(nh_config_settle(&c, NULL));
    expect_value(&c, "stripe-merge", "off");
    expect_value(&c, "alloc", "dynamic");
    /* a new preset, or the key given, clears the mark */
    g_assert_true(nh_config_set(&c, "preset", "pm9a3", NULL));
    g_assert_null(nh_config_dropped(&c, nh_config_find("stripe-merge")));
    /* given by the user: refused, nothing dropped */
    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, "preset=pm9a3,ftl=bast,stripe-merge=on", NULL));
    g_assert_false(nh_config_settle(&c, &err));
    g_assert_cmpstr(err->message, ==, "stripe-merge: only ftl=page and ftl=dftl merge writes "
                    "into stripes, got ftl=bast");
    g_clear_error(&err);
    expect_value(&c, "stripe-merge", "on");
    g_assert_null(nh_config_dropped(&c, nh_config_find("stripe-merge")));
    /* a refusal of the user's own keys is not the preset's to mend */
    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, "preset=pm9a3,gc-low=5,gc-critical=8", NULL));
    g_assert_false(nh_config_settle(&c, &err));
    g_assert_nonnull(strstr(err->message, "gc-critical: must be below gc-low"));
    g_clear_error(&err);
    expect_value(&c, "stripe-merge", "on");
}

/* An unknown preset is refused naming the key and the presets; a preset given twice in one
 * string is refused as every key is. */
static void test_preset_errors(void)
{
    NhConfig c;
    GError *err = NULL;

    nh_config_defaults(&c);
    g_assert_false(nh_config_parse(&c, "preset=pm1733", &err));
    g_assert_cmpstr(err->message, ==, "preset: unknown value 'pm1733' (valid: pm9a3, 970pro, "
                    "sz985, pm9d3a, none)");
    g_clear_error(&err);
    nh_config_defaults(&c);
    g_assert_false(nh_config_parse(&c, "preset=sz985,preset=none", &err));
    g_assert_nonnull(strstr(err->message, "preset: given twice"));
    g_clear_error(&err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/config/defaults", test_defaults);
    g_test_add_func("/config/preset-default", test_preset_default);
    g_test_add_func("/config/preset-overrides", test_preset_overrides);
    g_test_add_func("/config/preset-table", test_preset_table);
    g_test_add_func("/config/preset-errors", test_preset_errors);
    g_test_add_func("/config/preset-soft", test_preset_soft);
    g_test_add_func("/config/units", test_units);
    g_test_add_func("/config/one-way", test_one_way);
    g_test_add_func("/config/canonical", test_canonical);
    g_test_add_func("/config/errors", test_errors);
    g_test_add_func("/config/table", test_table);
    g_test_add_func("/config/engine-refuses", test_engine_refuses);
    g_test_add_func("/config/engine-blocks", test_engine_blocks);
    return g_test_run();
}
