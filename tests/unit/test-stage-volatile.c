/*
 * A volatile staging area (stage-volatile=on, a client drive without power-loss protection):
 * the engine reports a volatile write cache; a power cut loses every staged page (reported
 * whole, the FTL keeping the earlier version or nothing) and nothing programmed; Flush and FUA
 * leave nothing to lose; the model stays consistent and survives a state round trip.
 */
#include "unit.h"

#include <string.h>

#define IDLE 1000000000000ull   /* far after anything booked so far */
/* 4 KiB pages on two planes: a stripe (staging unit) is 2 pages */
#define TWO_PLANES "channels=1,ways=1,planes=2,pages=16,op=10,stripe-merge=on"
#define VOLATILE ",stage-volatile=on"

typedef struct Lost {
    uint64_t bytes, calls, first_off;
} Lost;

static void on_lost(void *opaque, uint64_t offset, uint64_t length)
{
    Lost *l = opaque;

    if (!l->calls++) {
        l->first_off = offset;
    }
    l->bytes += length;
}

static void write_flags(NhEngine *e, uint32_t flags, uint64_t off, uint64_t len, uint64_t now)
{
    NhRequest q = { .op = NH_OP_WRITE, .flags = flags, .offset = off, .length = len };
    uint64_t done;
    GError *err = NULL;

    g_assert_true(nh_engine_submit(e, &q, now, &done, &err));
    g_assert_no_error(err);
}

static Lost cut(NhEngine *e, uint64_t now)
{
    Lost l = { 0 };

    nh_engine_power_loss(e, now, on_lost, &l);
    unit_check(e);
    return l;
}

/* Staged pages are lost whole, programmed ones are not, and an overwritten page reads its
 * earlier version from flash afterwards. */
static void test_staged_lost(gconstpointer ftl)
{
    g_autofree char *props = g_strdup_printf(TWO_PLANES VOLATILE ",ftl=%s", (const char *)ftl);
    NhEngine *e = unit_engine(props, 1 << 20);
    uint64_t programs, reads;
    Lost l;

    g_assert_true(nh_engine_volatile_write_cache(e));
    unit_submit(e, NH_OP_WRITE, 0, 8192, 0);        /* pages 0-1: a full stripe ... */
    unit_submit(e, NH_OP_FLUSH, 0, 0, 1000);        /* ... programmed */
    programs = unit_stat(e, "nand", "page_programs");
    g_assert_cmpuint(programs, ==, 2);
    unit_submit(e, NH_OP_WRITE, 0, 4096, IDLE);     /* page 0's new version, staged */
    unit_submit(e, NH_OP_WRITE, 5 * 4096, 4096, IDLE + 1);   /* page 5, never written */
    g_assert_true(nh_engine_is_mapped(e, 5 * 4096));
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, programs);

    l = cut(e, IDLE + 2);
    g_assert_cmpuint(l.calls, ==, 2);
    g_assert_cmpuint(l.bytes, ==, 2 * 4096);
    g_assert_cmpuint(unit_stat(e, "ftl", "stripe_lost"), ==, 2);
    g_assert_true(nh_engine_is_mapped(e, 0) && nh_engine_is_mapped(e, 4096));
    g_assert_false(nh_engine_is_mapped(e, 5 * 4096));
    /* page 0 is read from flash again (it was served from the stage before the cut) */
    reads = unit_stat(e, "nand", "page_reads");
    unit_submit(e, NH_OP_READ, 0, 4096, 2 * IDLE);
    g_assert_cmpuint(unit_stat(e, "nand", "page_reads"), ==, reads + 1);

    /* nothing left to lose */
    l = cut(e, 2 * IDLE);
    g_assert_cmpuint(l.calls, ==, 0);

    /* a third page makes the full stripe's program start: those two survive, it does not */
    unit_submit(e, NH_OP_WRITE, 8 * 4096, 3 * 4096, 3 * IDLE);
    l = cut(e, 3 * IDLE + 1);
    g_assert_cmpuint(l.calls, ==, 1);
    g_assert_cmpuint(l.first_off, ==, 10 * 4096);
    g_assert_true(nh_engine_is_mapped(e, 8 * 4096) && nh_engine_is_mapped(e, 9 * 4096));
    g_assert_false(nh_engine_is_mapped(e, 10 * 4096));
    nh_engine_free(e);
}

/* After a Flush, or written with FUA, nothing is lost. */
static void test_flush_fua(void)
{
    NhEngine *e = unit_engine(TWO_PLANES VOLATILE, 1 << 20);
    Lost l;

    unit_submit(e, NH_OP_WRITE, 0, 4096, 0);
    unit_submit(e, NH_OP_WRITE, 3 * 4096, 4096, 1);
    unit_submit(e, NH_OP_WRITE, 6 * 4096, 4096, 2);
    unit_submit(e, NH_OP_FLUSH, 0, 0, 3);
    write_flags(e, NH_REQ_FUA, 7 * 4096, 4096, IDLE);
    l = cut(e, 2 * IDLE);
    g_assert_cmpuint(l.calls, ==, 0);
    for (uint64_t p = 0; p < 8; p++) {
        g_assert_cmpint(nh_engine_is_mapped(e, p * 4096), ==, p == 0 || p == 3 || p >= 6);
    }
    nh_engine_free(e);
}

/* Capacitor-protected staging (the default) loses nothing and reports no volatile cache. */
static void test_protected(void)
{
    NhEngine *e = unit_engine(TWO_PLANES, 1 << 20);
    Lost l;

    g_assert_false(nh_engine_volatile_write_cache(e));
    unit_submit(e, NH_OP_WRITE, 0, 4096, 0);
    l = cut(e, 1000);
    g_assert_cmpuint(l.calls, ==, 0);
    g_assert_true(nh_engine_is_mapped(e, 0));
    nh_engine_free(e);
}

/* Mapping units packed into 16 KiB pages: the staged units are lost, each reported whole. */
static void test_map_unit(gconstpointer ftl)
{
    g_autofree char *props = g_strdup_printf("channels=1,ways=1,pages=16,op=10,page-size=16K,"
                                             "map-unit=4K,stripe-merge=on" VOLATILE ",ftl=%s",
                                             (const char *)ftl);
    NhEngine *e = unit_engine(props, 1 << 20);
    Lost l;

    unit_submit(e, NH_OP_WRITE, 0, 16384, 0);       /* a whole page of units ... */
    unit_submit(e, NH_OP_FLUSH, 0, 0, 1000);        /* ... programmed */
    unit_submit(e, NH_OP_WRITE, 4096, 8192, IDLE);  /* units 1-2 again: staged */
    unit_submit(e, NH_OP_WRITE, 65536, 4096, IDLE + 1);
    l = cut(e, IDLE + 2);
    g_assert_cmpuint(l.calls, ==, 3);
    g_assert_cmpuint(l.bytes, ==, 3 * 4096);
    for (uint64_t u = 0; u < 4; u++) {
        g_assert_true(nh_engine_is_mapped(e, u * 4096));
    }
    g_assert_false(nh_engine_is_mapped(e, 65536));
    nh_engine_free(e);
}

/* The state after a cut is what was programmed, and a reload has exactly that. */
static void test_state_round_trip(void)
{
    NhEngine *e = unit_engine(TWO_PLANES VOLATILE, 1 << 20);
    NhEngine *b = unit_engine(TWO_PLANES VOLATILE, 1 << 20);

    unit_submit(e, NH_OP_WRITE, 0, 8192, 0);
    unit_submit(e, NH_OP_FLUSH, 0, 0, 1000);
    unit_submit(e, NH_OP_WRITE, 4096, 4096, IDLE);
    unit_submit(e, NH_OP_WRITE, 4 * 4096, 4096, IDLE + 1);
    g_assert_cmpuint(cut(e, IDLE + 2).calls, ==, 2);
    unit_reload(e, b);
    unit_check(b);
    for (uint64_t p = 0; p < 8; p++) {
        g_assert_cmpint(nh_engine_is_mapped(b, p * 4096), ==, p < 2);
    }
    nh_engine_free(e);
    nh_engine_free(b);
}

static void test_refused(void)
{
    NhConfig c;
    GError *err = NULL;

    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "stage-volatile=on", &err));
    g_assert_null(nh_engine_new(&c, 1 << 20, &err));
    g_assert_cmpstr(err->message, ==, "stage-volatile: nothing is staged to lose: set "
                    "stripe-merge=on (or one-shot=on with a multi-page word line)");
    g_error_free(err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/stage-volatile/staged-lost/page", "page", test_staged_lost);
    g_test_add_data_func("/stage-volatile/staged-lost/dftl", "dftl", test_staged_lost);
    g_test_add_func("/stage-volatile/flush-fua", test_flush_fua);
    g_test_add_func("/stage-volatile/protected", test_protected);
    g_test_add_data_func("/stage-volatile/map-unit/page", "page", test_map_unit);
    g_test_add_data_func("/stage-volatile/map-unit/dftl", "dftl", test_map_unit);
    g_test_add_func("/stage-volatile/state-round-trip", test_state_round_trip);
    g_test_add_func("/stage-volatile/refused", test_refused);
    return g_test_run();
}
