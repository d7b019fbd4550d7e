/*
 * Timing: channel parallelism, serialisation on one die, host reads waiting behind GC, and where
 * the write allocation puts a page.
 * The expected values follow from the model in nand.h: read = tR then a page over the bus;
 * program = a page over the bus then tPROG; erase = tBERS; one timeline per die and per bus.
 */
#include "unit.h"

#include <string.h>

#define IDLE 1000000000000ull   /* far after anything booked so far */

/* Sequential read of 1024 pages written sequentially (so striped over every channel). */
static uint64_t seq_read_time(unsigned channels)
{
    char *props = g_strdup_printf("channels=%u,ways=1,pages=64,op=10", channels);
    NhEngine *e = unit_engine(props, 64 << 20);
    uint64_t t;

    unit_submit(e, NH_OP_WRITE, 0, 4 << 20, 0);
    t = unit_submit(e, NH_OP_READ, 0, 4 << 20, IDLE) - IDLE;
    g_free(props);
    nh_engine_free(e);
    return t;
}

static void test_channel_scaling(void)
{
    uint64_t one = seq_read_time(1);

    /* one channel, one die: each page costs tR (25 us) + 4 KiB at 800 MB/s (5.12 us) */
    g_assert_cmpuint(one, ==, 1024 * (25000 + 5120));
    for (unsigned n = 2; n <= 8; n *= 2) {
        uint64_t t = seq_read_time(n);
        double ratio = (double)one / (double)t;
        g_test_message("%u channels: %.3f x the throughput of one", n, ratio);
        g_assert_cmpfloat(ratio, >, 0.95 * n);
        g_assert_cmpfloat(ratio, <, 1.05 * n);
    }
}

static void test_die_serialises(void)
{
    /* two dies on one channel: reads overlap on the dies but share the bus */
    NhEngine *e = unit_engine("channels=1,ways=2,pages=16,op=10", 1 << 20);
    uint64_t a, b, c;

    unit_submit(e, NH_OP_WRITE, 0, 3 * 4096, 0);     /* pages 0, 2 on way 0; page 1 on way 1 */
    a = unit_submit(e, NH_OP_READ, 0, 4096, IDLE);
    c = unit_submit(e, NH_OP_READ, 4096, 4096, IDLE);
    b = unit_submit(e, NH_OP_READ, 2 * 4096, 4096, IDLE);
    g_assert_cmpuint(a - IDLE, ==, 25000 + 5120);
    g_assert_cmpuint(c - IDLE, ==, 25000 + 2 * 5120);      /* other die: senses in parallel */
    g_assert_cmpuint(b - IDLE, ==, 2 * (25000 + 5120));    /* same die: waits a whole read */

    /* programs on one die: the second waits for the first tPROG */
    a = unit_submit(e, NH_OP_WRITE, 5 * 4096, 4096, 2 * IDLE);   /* way 1 (after 3 pages) */
    b = unit_submit(e, NH_OP_WRITE, 6 * 4096, 4096, 2 * IDLE);   /* way 0 */
    c = unit_submit(e, NH_OP_WRITE, 7 * 4096, 4096, 2 * IDLE);   /* way 1 again */
    g_assert_cmpuint(a - 2 * IDLE, ==, 5120 + 200000);
    g_assert_cmpuint(b - 2 * IDLE, ==, 2 * 5120 + 200000);  /* bus busy with the first one */
    g_assert_cmpuint(c - 2 * IDLE, ==, 2 * (5120 + 200000));
    nh_engine_free(e);
}

static uint64_t counter(NhEngine *e, const char *path)
{
    char *js = nh_engine_stats_json(e, false);
    uint64_t v = unit_json_uint(js, path);
    g_free(js);
    return v;
}

#define ONE_DIE "channels=1,ways=1,pages=16,op=10,t-erase=10ms,wl-threshold=0"

/* Everything on one die, until a read arrives when background GC is due; *now is its arrival,
 * *copies the pages the victim holds, the read's latency is returned. */
static uint64_t read_when_gc_starts(NhEngine *e, uint64_t *now, uint64_t *copies,
                                    uint64_t *plain)
{
    uint64_t blocks_before, copies_before;
    GRand *r = g_rand_new_with_seed(7);

    unit_submit(e, NH_OP_WRITE, 0, 1 << 20, 0);
    *now = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t t;
        *now += IDLE;   /* every request finds the die idle, except for GC issued at it */
        blocks_before = counter(e, "ftl.gc_blocks");
        copies_before = counter(e, "ftl.gc_page_copies");
        t = unit_submit(e, NH_OP_READ, 0, 4096, *now) - *now;
        if (counter(e, "ftl.gc_blocks") > blocks_before) {
            *copies = counter(e, "ftl.gc_page_copies") - copies_before;
            g_rand_free(r);
            return t;
        }
        *plain = t;
        unit_submit(e, NH_OP_WRITE, g_rand_int_range(r, 0, 256) * 4096, 4096, *now + IDLE / 2);
    }
    g_assert_not_reached();
}

/* sched=fcfs: a read that arrives when background GC starts waits for the victim's erase. */
static void test_read_behind_gc(void)
{
    NhEngine *e = unit_engine(ONE_DIE ",sched=fcfs", 1 << 20);
    uint64_t now, copies, plain = 0, gc_wait = read_when_gc_starts(e, &now, &copies, &plain);

    g_test_message("read alone %" G_GUINT64_FORMAT " ns, behind a GC %" G_GUINT64_FORMAT " ns",
                   plain, gc_wait);
    g_assert_cmpuint(plain, ==, 25000 + 5120);
    g_assert_cmpuint(gc_wait, >=, 10000000 + 25000 + 5120);
    nh_engine_free(e);
}

/*
 * sched=prio: the same read goes first (GC waits for the die's idle time); a read that arrives
 * while the victim's erase runs suspends it (t-suspend, then tR and the transfer), and the
 * erase resumes t-resume after the read, so a program arriving next waits for the erase's
 * remaining time plus the suspension.  All of it on one die and one bus, to the nanosecond.
 */
static void test_suspend(void)
{
    NhEngine *e = unit_engine(ONE_DIE ",t-suspend=20us,t-resume=30us", 1 << 20);
    uint64_t now, copies, plain = 0, t = read_when_gc_starts(e, &now, &copies, &plain);
    const uint64_t read = 25000 + 5120, prog = 5120 + 200000;
    /* the read left the die at now + read; the victim's copies follow, then its erase */
    uint64_t erase = now + read + copies * (read + prog), at = erase + 1000000;

    g_assert_cmpuint(t, ==, read);
    g_assert_cmpuint(copies, >, 0);
    g_assert_cmpuint(counter(e, "sched.queued_ops"), ==, 2 * copies + 1);
    g_assert_cmpuint(unit_submit(e, NH_OP_READ, 0, 4096, at) - at, ==, 20000 + read);
    g_assert_cmpuint(counter(e, "sched.suspends"), ==, 1);
    g_assert_cmpuint(counter(e, "sched.idle_ops"), ==, 2 * copies + 1);
    /* the erase ends 10 ms after it began, plus the suspension: 20 us, the read, 30 us */
    g_assert_cmpuint(unit_submit(e, NH_OP_WRITE, 200 * 4096, 4096, at + 100000), ==,
                     erase + 10000000 + 20000 + read + 30000 + prog);
    nh_engine_free(e);
}

static void test_latency_zero(void)
{
    NhEngine *e = unit_engine("channels=1,ways=1,pages=16,op=10,latency=zero", 1 << 20);
    g_assert_cmpuint(unit_submit(e, NH_OP_WRITE, 0, 8192, 100), ==, 100);
    g_assert_cmpuint(unit_submit(e, NH_OP_READ, 0, 8192, IDLE), ==, IDLE);
    /* the model still ran: the histogram holds the modeled latency */
    g_assert_cmpuint(counter(e, "nand.page_programs"), ==, 2);
    g_assert_cmpuint(counter(e, "latency_ns.read.max"), ==, 2 * (25000 + 5120));
    nh_engine_free(e);
}

static void test_presets(void)
{
    static const struct { const char *cell; uint64_t read; } presets[] = {
        { "slc", 25000 }, { "mlc", 60000 }, { "tlc", 80000 }, { "qlc", 122000 },
        { "znand", 3000 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(presets); i++) {
        char *props = g_strdup_printf("channels=1,ways=1,pages=16,op=10,cell=%s",
                                      presets[i].cell);
        NhEngine *e = unit_engine(props, 1 << 20);
        unit_submit(e, NH_OP_WRITE, 0, 4096, 0);
        g_assert_cmpuint(unit_submit(e, NH_OP_READ, 0, 4096, IDLE) - IDLE, ==, presets[i].read + 5120);
        nh_engine_free(e);
        g_free(props);
    }
    NhEngine *e = unit_engine("channels=1,ways=1,pages=16,op=10,cell=mlc,t-read=1us,channel-mbps=400",
                       1 << 20);
    unit_submit(e, NH_OP_WRITE, 0, 4096, 0);
    g_assert_cmpuint(unit_submit(e, NH_OP_READ, 0, 4096, IDLE) - IDLE, ==, 1000 + 10240);
    nh_engine_free(e);
}

/* unwritten-reads: free costs nothing; flash costs what a written page's read costs (tR + one
 * transfer: 25 us + 5.12 us on SLC at 800 MB/s), two pages striped to the two planes of one die
 * share one tR as the written pages' read does (their transfers serial on the one channel; they
 * were two reads, 60.24 us, when each page was read on its own), and neither counts as a read
 * of an unprogrammed page (unit_check). */
static void test_unwritten_reads(void)
{
    NhEngine *free_ = unit_engine("channels=1,ways=1,planes=2,pages=64,unwritten-reads=free",
                                  64 << 20);
    NhEngine *flash = unit_engine("channels=1,ways=1,planes=2,pages=64,unwritten-reads=flash",
                                  64 << 20);

    g_assert_cmpuint(unit_submit(free_, NH_OP_READ, 0, 4096, 1000), ==, 1000);
    g_assert_cmpuint(unit_submit(flash, NH_OP_READ, 0, 4096, 1000), ==, 1000 + 25000 + 5120);
    g_assert_cmpuint(unit_submit(flash, NH_OP_READ, 0, 8192, IDLE), ==, IDLE + 25000 + 2 * 5120);
    g_assert_cmpuint(unit_stat(flash, "host", "unwritten_read_pages"), ==, 3);
    g_assert_cmpuint(unit_stat(flash, "nand", "page_reads"), ==, 3);
    g_assert_cmpuint(unit_stat(flash, "nand", "read_ops"), ==, 2);
    g_assert_cmpuint(unit_stat(free_, "nand", "page_reads"), ==, 0);
    unit_check(flash);
    unit_check(free_);
    nh_engine_free(free_);
    nh_engine_free(flash);
}

/*
 * Write allocation, to the nanosecond (two dies, one per channel; t_xfer 5,120 ns): pages A and
 * B written at 0 go to die 0 and die 1, both busy until 205,120; a read of A at 10 us keeps die 0
 * until 235,240.  A write at 20 us then goes, under alloc=static, to die 0, the next in the
 * round robin (transfer from 235,240, done 440,360); under alloc=dynamic to die 1, free earlier
 * (done 410,240).  On the idle device both stripe A and B alike.
 */
static uint64_t write_after_busy_die(const char *alloc)
{
    char *props = g_strdup_printf("channels=2,ways=1,pages=16,op=10,%s", alloc);
    NhEngine *e = unit_engine(props, 1 << 20);
    uint64_t done;

    g_assert_cmpuint(unit_submit(e, NH_OP_WRITE, 0, 2 * 4096, 0), ==, 5120 + 200000);
    g_assert_cmpuint(unit_submit(e, NH_OP_READ, 0, 4096, 10000), ==, 205120 + 25000 + 5120);
    done = unit_submit(e, NH_OP_WRITE, 8 * 4096, 4096, 20000);
    g_free(props);
    nh_engine_free(e);
    return done;
}

/* host-mbps: a read's data crosses the link after the flash read, a write's before its
 * program, one transfer at a time each way; reads and writes do not share a direction.  At
 * 100 MB/s 128 KiB take 1,310,720 ns (host-mps=0: the rate alone; its packets are
 * test-host-time's). */
static void test_host_link(void)
{
    NhEngine *free_link = unit_engine("channels=8,ways=1,pages=64,op=10,streams=0", 64 << 20);
    NhEngine *e = unit_engine("channels=8,ways=1,pages=64,op=10,streams=0,host-mbps=100,"
                              "host-mps=0", 64 << 20);
    uint64_t xfer = 1310720, w0, w1, r0, r1, flash_read;

    w0 = unit_submit(free_link, NH_OP_WRITE, 0, 128 << 10, 0);
    flash_read = unit_submit(free_link, NH_OP_READ, 0, 128 << 10, IDLE) - IDLE;
    g_assert_cmpuint(unit_submit(e, NH_OP_WRITE, 0, 128 << 10, 0), ==, w0 + xfer);
    /* a second write at once waits for the first's data, not for its program (on other
     * dies: its own takes as long) */
    w1 = unit_submit(e, NH_OP_WRITE, 128 << 10, 128 << 10, 0);
    g_assert_cmpuint(w1, ==, 2 * xfer + w0);
    r0 = unit_submit(e, NH_OP_READ, 0, 128 << 10, IDLE);
    g_assert_cmpuint(r0 - IDLE, ==, flash_read + xfer);
    r1 = unit_submit(e, NH_OP_READ, 0, 128 << 10, IDLE);
    g_assert_cmpuint(r1, ==, r0 + xfer);
    /* the link's other direction is free meanwhile */
    g_assert_cmpuint(unit_submit(e, NH_OP_WRITE, 256 << 10, 128 << 10, IDLE), <, r1);
    nh_engine_free(free_link);
    nh_engine_free(e);
}

static void test_alloc(void)
{
    g_assert_cmpuint(write_after_busy_die("alloc=static"), ==, 235240 + 5120 + 200000);
    g_assert_cmpuint(write_after_busy_die("alloc=dynamic"), ==, 205120 + 5120 + 200000);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/timing/channel-scaling", test_channel_scaling);
    g_test_add_func("/timing/die-serialises", test_die_serialises);
    g_test_add_func("/timing/read-behind-gc", test_read_behind_gc);
    g_test_add_func("/timing/suspend", test_suspend);
    g_test_add_func("/timing/latency-zero", test_latency_zero);
    g_test_add_func("/timing/presets", test_presets);
    g_test_add_func("/timing/unwritten-reads", test_unwritten_reads);
    g_test_add_func("/timing/alloc", test_alloc);
    g_test_add_func("/timing/host-link", test_host_link);
    return g_test_run();
}
