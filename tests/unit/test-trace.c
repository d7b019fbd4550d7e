/* Trace readers: samples of each format, malformed lines named by file and line, the real
 * traces in ../shared/traces when present, and the simulator binary on them. */
#include "trace.h"

#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

static char *write_tmp(const char *text)
{
    char *path = NULL;
    int fd = g_file_open_tmp("nh-trace-XXXXXX", &path, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

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
    expect_bad("mqsim", "1 0 0 8 0\n2 0 0 8\n", "2", "expected 5 fields");
    expect_bad("mqsim", "1 0 0 8 0 9\n", "1", "expected 5 fields");
    expect_bad("mqsim", "1 0 x 8 0\n", "1", "not a non-negative integer");
    expect_bad("mqsim", "1 0 -5 8 0\n", "1", "not a non-negative integer");
    expect_bad("mqsim", "1 0 0 8 2\n", "1", "type must be 0");
    expect_bad("mqsim", "\n\n1 0 0 0 1\n", "3", "size must be");
    expect_bad("cpcsv", "version,time,op,size,lbn\n1,2,2a,512\n", "2", "expected 5");
    expect_bad("cpcsv", "1,2,2a,512,7,9\n", "1", "expected 5");
    expect_bad("cpcsv", "1,2,35,512,7\n", "1", "not a SCSI READ or WRITE");
    expect_bad("cpcsv", "1,2,zz,512,7\n", "1", "not a non-negative integer");
    expect_bad("cpcsv", "1,2,2a,0,7\n", "1", "size must be nonzero");

    GError *err = NULL;
    g_assert_null(nh_trace_open("/nonexistent", "mqsim", &err));
    g_assert_nonnull(strstr(err->message, "/nonexistent"));
    g_clear_error(&err);
    g_assert_null(nh_trace_open("/dev/null", "msr2", &err));
    g_assert_nonnull(strstr(err->message, "valid: mqsim, cpcsv"));
    g_clear_error(&err);
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
        g_test_skip("trace not present");
        g_free(path);
        return;
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
    const char *sim = g_getenv("NH_SIM");
    if (sim) {
        char *out = NULL, *errs = NULL;
        int status;
        char *argv[] = { (char *)sim, "--trace", path, "--format", (char *)format, "--json",
                         "--qd", "16", NULL };
        g_assert_true(g_spawn_sync(NULL, argv, NULL, 0, NULL, NULL, &out, &errs, &status, NULL));
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        char *cmds = g_strdup_printf("\"read_cmds\" : %" G_GUINT64_FORMAT, n - writes);
        g_assert_nonnull(strstr(out, cmds));
        g_free(cmds);
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
    g_test_add_func("/trace/malformed", test_malformed);
    g_test_add_func("/trace/real/mqsim", test_real_mqsim);
    g_test_add_func("/trace/real/cpcsv", test_real_cpcsv);
    return g_test_run();
}
