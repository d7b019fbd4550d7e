/* Trace readers: samples of each format, malformed lines named by file and line, the real
 * traces copied into tests/data/traces (NH_TRACES), and the simulator binary (NH_SIM) on them
 * (its other tests: test-sim.c).
 * meson test sets both; without them the tests fail rather than skip. */
#include "trace.h"
#include "trace-util.h"

#include <string.h>

static void test_mqsim(void)
{
    char *p = write_tmp("938513000 4 264719034 16 0\n# comment\n\n938828000 3 197570570 8 1\n");
    GError *err = NULL;
    NhTrace *t = nh_trace_open(p, "mqsim", &err);
    NhTraceRec r;

    g_assert_no_error(err);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 1);
    g_assert_cmpuint(r.time_ns, ==, 938513000);
    g_assert_cmpint(r.op, ==, NH_OP_WRITE);
    g_assert_cmpuint(r.offset, ==, 264719034ull * 512);
    g_assert_cmpuint(r.length, ==, 16 * 512);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 1);
    g_assert_cmpint(r.op, ==, NH_OP_READ);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 0);
    g_assert_true(nh_trace_rewind(t, NULL));
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 1);
    nh_trace_close(t);
    g_unlink(p);
    g_free(p);
}

static void test_cpcsv(void)
{
    char *p = write_tmp("version,time,op,size,lbn\n1,5633898,2a,512,42932745\n"
                        "1,5633899,28,6656,40409911\r\n");
    GError *err = NULL;
    NhTrace *t = nh_trace_open(p, "cpcsv", &err);
    NhTraceRec r;

    g_assert_no_error(err);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 1);
    g_assert_cmpuint(r.time_ns, ==, 5633898ull * 1000000000);
    g_assert_cmpint(r.op, ==, NH_OP_WRITE);
    g_assert_cmpuint(r.offset, ==, 42932745ull * 512);
    g_assert_cmpuint(r.length, ==, 512);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 1);
    g_assert_cmpint(r.op, ==, NH_OP_READ);
    g_assert_cmpuint(r.length, ==, 6656);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 0);
    nh_trace_close(t);
    g_unlink(p);
    g_free(p);
}

/* One expected record of a sample file. */
typedef struct Want {
    uint64_t time_ns;
    NhOp op;
    uint64_t offset, length;
} Want;

static void expect_sample(const char *name, const char *format, const Want *want, size_t n)
{
    char *p = sample_path(name);
    GError *err = NULL;
    NhTrace *t = nh_trace_open(p, format, &err);
    NhTraceRec r;

    g_assert_no_error(err);
    for (int pass = 0; pass < 2; pass++) {      /* and again after a rewind */
        for (size_t i = 0; i < n; i++) {
            int rc = nh_trace_next(t, &r, &err);
            g_assert_no_error(err);
            g_assert_cmpint(rc, ==, 1);
            g_assert_cmpuint(r.time_ns, ==, want[i].time_ns);
            g_assert_cmpint(r.op, ==, want[i].op);
            g_assert_cmpuint(r.offset, ==, want[i].offset);
            g_assert_cmpuint(r.length, ==, want[i].length);
        }
        g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 0);
        g_assert_true(nh_trace_rewind(t, NULL));
    }
    nh_trace_close(t);
    g_free(p);
}

static void test_msr(void)
{
    static const Want w[] = {
        { 12816637200306162900ull, NH_OP_WRITE, 3154059264ull, 4096 },
        { 12816637201638215500ull, NH_OP_READ, 1215115264ull, 16384 },
        { 12816637202638224500ull, NH_OP_WRITE, 1215119360ull, 8192 },
    };
    expect_sample("msr.csv", "msr", w, G_N_ELEMENTS(w));
}

static void test_spc(void)
{
    static const Want w[] = {
        { 0, NH_OP_WRITE, 303567ull * 512, 3584 },
        { 0, NH_OP_WRITE, 55590ull * 512, 3072 },
        { 551706000, NH_OP_READ, 1000 * 512, 4096 },
        { 1003511000, NH_OP_READ, 20941264ull * 512, 8192 },
    };
    expect_sample("spc.csv", "spc", w, G_N_ELEMENTS(w));
}

static void test_fiu(void)
{
    static const Want w[] = {
        { 89966067286638ull, NH_OP_WRITE, 904265560ull * 512, 4096 },
        { 89966067287000ull, NH_OP_READ, 904265568ull * 512, 4096 },
        { 89966067290001ull, NH_OP_WRITE, 100 * 512, 8192 },
    };
    expect_sample("fiu.txt", "fiu", w, G_N_ELEMENTS(w));
}

static void test_blkparse(void)
{
    /* D events only; the summary after "CPU1 (sda):" is not read as events */
    static const Want w[] = {
        { 4512, NH_OP_WRITE, 2048 * 512, 4096 },
        { 1000000, NH_OP_READ, 409600ull * 512, 256 * 512 },
        { 2000000, NH_OP_TRIM, 1000 * 512, 2048 * 512 },
        { 3000000, NH_OP_FLUSH, 0, 0 },
    };
    expect_sample("blkparse.txt", "blkparse", w, G_N_ELEMENTS(w));
}

static void test_fio(void)
{
    static const Want v2[] = {
        { 0, NH_OP_WRITE, 0, 4096 },
        { 250000, NH_OP_READ, 1048576, 8192 },      /* after "wait 250" (us) */
        { 250000, NH_OP_TRIM, 4096, 65536 },
        { 250000, NH_OP_FLUSH, 0, 0 },
    };
    static const Want v3[] = {
        { 120000, NH_OP_WRITE, 0, 4096 },
        { 245000, NH_OP_READ, 1048576, 8192 },
        { 400000, NH_OP_TRIM, 4096, 65536 },
        { 410000, NH_OP_FLUSH, 0, 0 },
    };
    expect_sample("fio-v2.log", "fio", v2, G_N_ELEMENTS(v2));
    expect_sample("fio-v3.log", "fio", v3, G_N_ELEMENTS(v3));
}

static void expect_bad(const char *format, const char *text, const char *where, const char *why)
{
    char *p = write_tmp(text);
    GError *err = NULL;
    NhTrace *t = nh_trace_open(p, format, &err);
    NhTraceRec r;
    char *loc = g_strdup_printf("%s:%s: ", p, where);
    int rc;

    while ((rc = nh_trace_next(t, &r, &err)) == 1) {
    }
    g_assert_cmpint(rc, ==, -1);
    if (!g_str_has_prefix(err->message, loc) || !strstr(err->message, why)) {
        g_error("got '%s', expected '%s...%s'", err->message, loc, why);
    }
    g_error_free(err);
    nh_trace_close(t);
    g_unlink(p);
    g_free(p);
    g_free(loc);
}

static void test_malformed(void)
{
    expect_bad("mqsim", "1 0 0 8 0\n2 0 0 8\n", "2", "expected 5 or 6 fields");
    expect_bad("mqsim", "1 0 0 8 0 9 1\n", "1", "expected 5 or 6 fields");
    expect_bad("mqsim", "1 0 0 8 0 65536\n", "1", "stream must be");
    expect_bad("mqsim", "1 0 0 8 0 x\n", "1", "stream must be");
    expect_bad("mqsim", "1 0 x 8 0\n", "1", "not a non-negative integer");
    expect_bad("mqsim", "1 0 -5 8 0\n", "1", "not a non-negative integer");
    expect_bad("mqsim", "1 0 0 8 9\n", "1", "type must be 0");
    expect_bad("mqsim", "1 0 0 8 3\n", "1", "a zone action (types 3-7) has 0 sectors");
    expect_bad("mqsim", "1 0 all 8 2\n", "1", "an append (type 2) names its zone");
    expect_bad("mqsim", "1 0 0 0 2\n", "1", "sectors");
    expect_bad("mqsim", "\n\n1 0 0 0 1\n", "3", "sectors must be at least 1");
    /* an address out of range is named as such (it was "size must be between 1 and 2^54
     * sectors") */
    expect_bad("mqsim", "1 0 18014398509481984 8 1\n", "1",
               "lba 18014398509481984 is out of range: at most 2^54 - 1 sectors");
    expect_bad("mqsim", "1 0 0 18014398509481984 1\n", "1",
               "sectors 18014398509481984 is out of range");
    expect_bad("cpcsv", "version,time,op,size,lbn\n1,2,2a,512\n", "2", "expected 5");
    expect_bad("cpcsv", "1,2,2a,512,7,9\n", "1", "expected 5");
    expect_bad("cpcsv", "1,2,35,512,7\n", "1", "not a SCSI READ or WRITE");
    expect_bad("cpcsv", "1,2,zz,512,7\n", "1", "not a non-negative integer");
    expect_bad("cpcsv", "1,2,2a,0,7\n", "1", "size must be nonzero");
    expect_bad("cpcsv", "1,2,2a,512,18014398509481984\n", "1",
               "lbn 18014398509481984 is out of range");
    expect_bad("cpcsv", "1,2,2a,9223372036854776320,18014398509481983\n", "1",
               "lbn x 512 + size ends beyond 2^64 bytes");
    expect_bad("cpcsv", "1,18446744074,2a,512,7\n", "1",
               "time 18446744074 s is out of range: at most 18446744073");
    expect_bad("msr", "1,h,0,Read,0,512,1\n1,h,0,Read,0,512\n", "2", "expected 7");
    expect_bad("msr", "1,h,0,Erase,0,512,1\n", "1", "Type must be Read or Write");
    expect_bad("msr", "1,h,0,Read,-4,512,1\n", "1", "must be non-negative integers");
    expect_bad("msr", "1,h,0,Read,0,0,1\n", "1", "Size must be nonzero");
    expect_bad("msr", "1,h,0,Read,18446744073709551615,512,1\n", "1",
               "Offset + Size ends beyond 2^64 bytes");
    expect_bad("msr", "184467440737095517,h,0,Read,0,512,1\n", "1",
               "Timestamp 184467440737095517 is out of range");
    expect_bad("spc", "0,1,512,r\n", "1", "expected 5 or more");
    expect_bad("spc", "0,1,512,x,0.5\n", "1", "Opcode must be r or w");
    expect_bad("spc", "0,1,512,r,0.5s\n", "1", "Timestamp must be seconds");
    expect_bad("spc", "0,1,512,r,0.1234567891\n", "1", "Timestamp must be seconds");
    expect_bad("spc", "0,1,0,r,1\n", "1", "Size must be nonzero");
    expect_bad("spc", "0,18014398509481984,512,r,1\n", "1",
               "LBA 18014398509481984 is out of range");
    expect_bad("fiu", "1 2 p 3 8 W 6\n", "1", "expected 8 or 9 fields");
    expect_bad("fiu", "1 2 p 3 8 X 6 0 m\n", "1", "must be W or R");
    expect_bad("fiu", "1 2 my proc 3 8 W 6 0\n", "1", "must be non-negative integers");
    expect_bad("fiu", "1 2 p 3 0 W 6 0\n", "1", "sectors must be at least 1");
    expect_bad("fiu", "1 2 p 18014398509481984 8 W 6 0\n", "1",
               "lba 18014398509481984 is out of range");
    expect_bad("blkparse", "8,0 1 1 0.1 5 D W 8 + 8 [p]\n8 1 2 0.2 5 D W 8 + 8 [p]\n", "2",
               "expected 'maj,min");
    expect_bad("blkparse", "8,0 1 1 0.1x 5 D W 8 + 8 [p]\n", "1", "time must be");
    expect_bad("blkparse", "8,0 1 1 0.1 5 D W x + 8 [p]\n", "1", "sector and size");
    expect_bad("blkparse", "8,0 1 1 0.1 5 D\n", "1", "needs its RWBS");
    expect_bad("blkparse", "8,0 1 1 0.1 5 D W 18014398509481984 + 8 [p]\n", "1",
               "sector 18014398509481984 is out of range");
    expect_bad("fio", "/dev/sda write 0 4096\n", "1", "first line must be");
    expect_bad("fio", "fio version 2 iolog\n/dev/sda write 0\n", "2", "expected 'file action");
    expect_bad("fio", "fio version 2 iolog\n/dev/sda erase 0 4096\n", "2", "unknown action");
    expect_bad("fio", "fio version 2 iolog\n/dev/sda write 0 0\n", "2", "length must be nonzero");
    expect_bad("fio", "fio version 2 iolog\n/dev/sda write 18446744073709551615 4096\n", "2",
               "offset + length ends beyond 2^64 bytes");
    expect_bad("fio", "fio version 3 iolog\n/dev/sda write 0 4096\n", "2", "expected 'usecs");
    expect_bad("fio", "fio version 3 iolog\nx /dev/sda add\n", "2", "timestamp must be");
    expect_bad("fio", "fio version 3 iolog\n5 /dev/sda wait 100 0\n", "2", "unknown action");

    GError *err = NULL;
    g_assert_null(nh_trace_open("/nonexistent", "mqsim", &err));
    g_assert_nonnull(strstr(err->message, "/nonexistent"));
    g_clear_error(&err);
    g_assert_null(nh_trace_open("/dev/null", "msr2", &err));
    g_assert_nonnull(strstr(err->message, "valid: mqsim, cpcsv, msr, spc, fiu, blkparse, fio"));
    g_clear_error(&err);
}

/* mqsim's optional sixth field is the placement tag; lines without it are untagged. */
static void test_mqsim_stream(void)
{
    char *p = write_tmp("1 0 0 8 0 3\n2 0 8 8 0\n3 0 8 8 1 65535\n4 0 16 8 0\t7 \n");
    NhTrace *t = nh_trace_open(p, "mqsim", NULL);
    const uint16_t want[] = { 3, 0, 65535, 7 };
    NhTraceRec r;

    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        g_assert_cmpint(nh_trace_next(t, &r, NULL), ==, 1);
        g_assert_cmpuint(r.stream, ==, want[i]);
    }
    g_assert_cmpint(nh_trace_next(t, &r, NULL), ==, 0);
    nh_trace_close(t);
    g_unlink(p);
    g_free(p);
}

/* Zoned traces: append and the actions, Select All as lba `all`, the line of each. */
static void test_mqsim_zones(void)
{
    char *p = write_tmp("1 0 8192 8 2\n# a comment\n2 0 all 0 3\n3 0 9216 0 4\n4 0 0 0 5\n"
                        "5 0 0 0 6\n6 0 all 0 7\n7 0 8 8 1\n8 0 8 8 8\n");
    NhTrace *t = nh_trace_open(p, "mqsim", NULL);
    const uint8_t want[] = { NH_TRACE_ZONE_APPEND, NH_ZONE_RESET | NH_TRACE_ZONE_ALL,
                             NH_ZONE_FINISH, NH_ZONE_OPEN, NH_ZONE_CLOSE,
                             NH_ZONE_OFFLINE_ACT | NH_TRACE_ZONE_ALL, 0, 0 };
    const uint32_t lines[] = { 1, 3, 4, 5, 6, 7, 8, 9 };
    NhTraceRec r;

    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        g_assert_cmpint(nh_trace_next(t, &r, NULL), ==, 1);
        g_assert_cmpuint(r.zone, ==, want[i]);
        g_assert_cmpuint(r.line, ==, lines[i]);
    }
    g_assert_cmpint(r.op, ==, NH_OP_TRIM);      /* type 8 */
    g_assert_cmpint(nh_trace_next(t, &r, NULL), ==, 0);
    nh_trace_close(t);
    g_unlink(p);
    g_free(p);
}

/* The simulator replays a zoned trace: zone statuses are refusals naming the line, and the run
 * goes on; a zoned device needs --capacity. */
static void test_sim_zones(void)
{
    char *p = write_tmp("0 0 8192 16 0\n1000 0 8192 8 2\n2000 0 8192 16 0\n3000 0 8192 16 1\n"
                        "4000 0 8192 0 3\n5000 0 0 8 0\n");
    char *dev = "channels=2,ways=2,dies=1,planes=2,pages=16,page-size=4K,cell=slc,ftl=page,"
                "zones=8,streams=0";
    char *argv[] = { "-d", dev, "-t", p, "-f", "mqsim", "-c", "4M", "-j", NULL };
    char *no_cap[] = { "-d", dev, "-t", p, "-f", "mqsim", NULL };
    char *out, *errs = NULL, *where = g_strdup_printf("%s:3: refused: zone 0: write at byte 0, "
                                                      "not at the write pointer 12288", p);
    int status;

    out = run_sim(argv, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(errs, where));
    g_assert_cmpuint(unit_json_uint(out, "zones.appends"), ==, 1);
    g_assert_cmpuint(unit_json_uint(out, "zones.resets"), ==, 1);
    g_assert_cmpuint(unit_json_uint(out, "zones.refused"), ==, 1);
    g_assert_cmpuint(unit_json_uint(out, "host.write_cmds"), ==, 3);
    g_free(out);
    g_free(errs);
    {   /* the table has a zones line */
        char *table[] = { "-d", dev, "-t", p, "-f", "mqsim", "-c", "4M", NULL };
        out = run_sim(table, &status, &errs);
        g_assert_nonnull(strstr(out, "zones       8: resets 1 (3 erases)"));
        g_free(out);
        g_free(errs);
    }
    out = run_sim(no_cap, &status, &errs);
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(errs, "zones: give the conventional space's size with --capacity"));
    g_free(out);
    g_free(errs);
    g_unlink(p);
    g_free(p);
    g_free(where);
}

/* --skip-bad's counting: bad lines are passed over, counted, the first one named. */
static void test_skip_bad(void)
{
    char *p = write_tmp("1 0 0 8 0\nbad\n2 0 8 8 1\n3 0 8 8 7\n");
    NhTrace *t = nh_trace_open(p, "mqsim", NULL);
    NhTraceRec r;
    GError *err = NULL;
    const char *first;
    char *where = g_strdup_printf("%s:2: expected 5 or 6 fields", p);

    nh_trace_skip_bad(t, true);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 1);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 1);
    g_assert_cmpuint(r.time_ns, ==, 2);
    g_assert_cmpint(nh_trace_next(t, &r, &err), ==, 0);
    g_assert_no_error(err);
    g_assert_cmpuint(nh_trace_bad_lines(t, &first), ==, 2);
    g_assert_true(g_str_has_prefix(first, where));
    g_assert_true(nh_trace_rewind(t, NULL));
    g_assert_cmpuint(nh_trace_bad_lines(t, NULL), ==, 0);
    nh_trace_close(t);
    g_unlink(p);
    g_free(p);
    g_free(where);
}

static void count_real(const char *name, const char *format, uint64_t expect)
{
    const char *dir = g_getenv("NH_TRACES");
    char *path = g_build_filename(dir ? dir : ".", name, NULL);
    GError *err = NULL;
    NhTrace *t;
    NhTraceRec r;
    uint64_t n = 0, writes = 0;
    int rc;

    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_error("%s not found: NH_TRACES must name tests/data/traces", path);
    }
    t = nh_trace_open(path, format, &err);
    g_assert_no_error(err);
    while ((rc = nh_trace_next(t, &r, &err)) == 1) {
        n++;
        writes += r.op == NH_OP_WRITE;
    }
    g_assert_no_error(err);
    g_assert_cmpint(rc, ==, 0);
    g_test_message("%s: %" G_GUINT64_FORMAT " requests, %.0f%% writes", name, n,
                   100.0 * writes / n);
    g_assert_cmpuint(n, ==, expect);
    nh_trace_close(t);

    /* and the simulator replays it, printing the engine's JSON document */
    {
        char *out = NULL, *errs = NULL;
        int status;
        char *argv[] = { "--trace", path, "--format", (char *)format, "--json", "--qd", "16",
                         NULL };
        out = run_sim(argv, &status, &errs);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        g_assert_cmpuint(unit_json_uint(out, "host.read_cmds"), ==, n - writes);
        g_free(out);
        g_free(errs);
    }
    g_free(path);
}

static void test_real_mqsim(void)
{
    count_real("mqsim_tpcc-small.trace", "mqsim", 6999);
}

static void test_real_cpcsv(void)
{
    count_real("libcachesim_cloudPhysicsIO.csv", "cpcsv", 113872);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trace/mqsim", test_mqsim);
    g_test_add_func("/trace/cpcsv", test_cpcsv);
    g_test_add_func("/trace/msr", test_msr);
    g_test_add_func("/trace/spc", test_spc);
    g_test_add_func("/trace/fiu", test_fiu);
    g_test_add_func("/trace/blkparse", test_blkparse);
    g_test_add_func("/trace/fio", test_fio);
    g_test_add_func("/trace/malformed", test_malformed);
    g_test_add_func("/trace/mqsim-stream", test_mqsim_stream);
    g_test_add_func("/trace/skip-bad", test_skip_bad);
    g_test_add_func("/trace/mqsim-zones", test_mqsim_zones);
    g_test_add_func("/trace/sim-zones", test_sim_zones);
    g_test_add_func("/trace/real/mqsim", test_real_mqsim);
    g_test_add_func("/trace/real/cpcsv", test_real_cpcsv);
    return g_test_run();
}
