/* Power loss: a volatile write buffer's dirty pages are lost (reported sector-exactly, forgotten by
 * the model), a capacitor-backed one loses nothing, and the engine goes on working. */
#include "unit.h"

#include <string.h>

typedef struct Lost {
    uint64_t bytes, calls;
    uint64_t first_off, first_len;
} Lost;

static void on_lost(void *opaque, uint64_t offset, uint64_t length)
{
    Lost *l = opaque;
    if (!l->calls++) {
        l->first_off = offset;
        l->first_len = length;
    }
    l->bytes += length;
}

static void submit(NhEngine *e, NhOp op, uint64_t off, uint64_t len, uint64_t now)
{
    NhRequest r = { .op = op, .offset = off, .length = len };
    uint64_t done;
    g_assert_true(nh_engine_submit(e, &r, now, &done, NULL));
}

static void test_volatile(void)
{
    NhEngine *e = unit_engine("buffer=lru,buffer-size=1M,buffer-volatile=on", 64 << 20);
    Lost l = { 0 };

    submit(e, NH_OP_WRITE, 1 << 20, 8192, 1000);    /* pages 256-257 ... */
    submit(e, NH_OP_FLUSH, 0, 0, 2000);             /* ... made durable */
    submit(e, NH_OP_WRITE, 0, 16384, 3000);         /* 4 whole pages */
    submit(e, NH_OP_WRITE, 40960 + 1024, 1024, 4000);  /* sectors 2-3 of page 10 */
    submit(e, NH_OP_WRITE, 1 << 20, 4096, 5000);    /* page 256 rewritten, buffered again */
    nh_engine_power_loss(e, 5000, on_lost, &l);

    /* lost: 4 pages, 2 sectors, and page 256's new version; runs are reported per page */
    g_assert_cmpuint(l.bytes, ==, 16384 + 1024 + 4096);
    for (uint64_t off = 0; off < 16384; off += 4096) {
        g_assert_false(nh_engine_is_mapped(e, off));    /* never programmed: gone */
    }
    g_assert_false(nh_engine_is_mapped(e, 40960));
    /* page 256's whole latest version was lost, so it is forgotten; 257 was flushed and stays */
    g_assert_false(nh_engine_is_mapped(e, 1 << 20));
    g_assert_true(nh_engine_is_mapped(e, (1 << 20) + 4096));
    g_assert_true(nh_engine_check(e, NULL));

    /* nothing left to lose; the engine goes on */
    memset(&l, 0, sizeof(l));
    nh_engine_power_loss(e, 5000, on_lost, &l);
    g_assert_cmpuint(l.calls, ==, 0);
    submit(e, NH_OP_WRITE, 0, 4096, 6000);
    submit(e, NH_OP_FLUSH, 0, 0, 7000);
    g_assert_true(nh_engine_is_mapped(e, 0));
    nh_engine_free(e);
}

static void test_partial_run(void)
{
    NhEngine *e = unit_engine("buffer=lru,buffer-size=1M,buffer-volatile=on", 64 << 20);
    Lost l = { 0 };

    submit(e, NH_OP_WRITE, 8192 + 512, 1536, 1000);  /* sectors 1-3 of page 2 */
    nh_engine_power_loss(e, 5000, on_lost, &l);
    g_assert_cmpuint(l.calls, ==, 1);
    g_assert_cmpuint(l.first_off, ==, 8192 + 512);
    g_assert_cmpuint(l.first_len, ==, 1536);
    nh_engine_free(e);
}

static void test_durable(void)
{
    const char *props[] = { "buffer=lru,buffer-size=1M,buffer-volatile=off",
                            "buffer=cbm,buffer-media=sttmram", "buffer=none", NULL };
    for (const char **p = props; *p; p++) {
        NhEngine *e = unit_engine(*p, 64 << 20);
        Lost l = { 0 };
        submit(e, NH_OP_WRITE, 0, 65536, 1000);
        nh_engine_power_loss(e, 5000, on_lost, &l);
        g_assert_cmpuint(l.calls, ==, 0);
        g_assert_true(nh_engine_is_mapped(e, 0) || nh_engine_volatile_write_cache(e) == false);
        nh_engine_free(e);
    }
}

/*
 * The front end's @lost writes the old data back, and the device's block layer may run its
 * event loop while it does, serving requests that reach the engine.  Here @lost itself writes
 * elsewhere, enough to make the buffer evict: every policy's buffer must stay consistent, each
 * lost page be reported once with its own sectors, and the engine's model check pass.
 */
typedef struct Reentry {
    NhEngine *e;
    uint64_t calls, bytes, now;
} Reentry;

static void on_lost_write(void *opaque, uint64_t offset, uint64_t length)
{
    Reentry *r = opaque;

    g_assert_cmpuint(offset, <, 4 << 20);       /* only what was written before the loss */
    r->calls++;
    r->bytes += length;
    r->now += 1000;
    submit(r->e, NH_OP_WRITE, (8 << 20) + (r->calls % 512) * 16384, 16384, r->now);
}

static void test_lost_reenters(void)
{
    const char *policies[] = { "lru", "bplru", "fab", "clc", "ref", "bpac", "cbm", "lbuf", NULL };

    for (const char **pol = policies; *pol; pol++) {
        for (int fast = 0; fast < 2; fast++) {
            g_autofree char *props = g_strdup_printf("%sbuffer=%s,buffer-size=1M,"
                                                     "buffer-volatile=on",
                                                     fast ? "ftl=fast," : "", *pol);
            Reentry r = { unit_engine(props, 64 << 20), 0, 0, 10000 };

            /* 4 MiB of 3-sector writes, 4 KiB apart: 1,024 dirty pages, more than fit */
            for (uint64_t off = 0; off < 4 << 20; off += 4096) {
                submit(r.e, NH_OP_WRITE, off + 512, 1536, r.now += 100);
            }
            nh_engine_power_loss(r.e, r.now, on_lost_write, &r);
            g_assert_cmpuint(r.calls, >, 0);
            g_assert_cmpuint(r.bytes, ==, r.calls * 1536);
            unit_check(r.e);
            nh_engine_free(r.e);
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/power/volatile", test_volatile);
    g_test_add_func("/power/partial-run", test_partial_run);
    g_test_add_func("/power/durable", test_durable);
    g_test_add_func("/power/lost-reenters", test_lost_reenters);
    return g_test_run();
}
