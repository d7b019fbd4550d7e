/* Trace readers: samples of each format, malformed lines named by file and line, the real
 * traces copied into tests/data/traces (NH_TRACES), and the simulator binary (NH_SIM) on them.
 * meson test sets both; without them the tests fail rather than skip. */
#include "trace.h"
#include "unit.h"

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

/* One expected record of a sample file. */
typedef struct Want {
    uint64_t time_ns;
    NhOp op;
    uint64_t offset, length;
} Want;

static char *sample_path(const char *name)
{
    return g_test_build_filename(G_TEST_DIST, "..", "data", name, NULL);
}

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
    expect_bad("mqsim", "1 0 0 8 2\n", "1", "type must be 0");
    expect_bad("mqsim", "\n\n1 0 0 0 1\n", "3", "size must be");
    expect_bad("cpcsv", "version,time,op,size,lbn\n1,2,2a,512\n", "2", "expected 5");
    expect_bad("cpcsv", "1,2,2a,512,7,9\n", "1", "expected 5");
    expect_bad("cpcsv", "1,2,35,512,7\n", "1", "not a SCSI READ or WRITE");
    expect_bad("cpcsv", "1,2,zz,512,7\n", "1", "not a non-negative integer");
    expect_bad("cpcsv", "1,2,2a,0,7\n", "1", "size must be nonzero");
    expect_bad("msr", "1,h,0,Read,0,512,1\n1,h,0,Read,0,512\n", "2", "expected 7");
    expect_bad("msr", "1,h,0,Erase,0,512,1\n", "1", "Type must be Read or Write");
    expect_bad("msr", "1,h,0,Read,-4,512,1\n", "1", "must be non-negative integers");
    expect_bad("msr", "1,h,0,Read,0,0,1\n", "1", "Size must be nonzero");
    expect_bad("spc", "0,1,512,r\n", "1", "expected 5 or more");
    expect_bad("spc", "0,1,512,x,0.5\n", "1", "Opcode must be r or w");
    expect_bad("spc", "0,1,512,r,0.5s\n", "1", "Timestamp must be seconds");
    expect_bad("spc", "0,1,512,r,0.1234567891\n", "1", "Timestamp must be seconds");
    expect_bad("spc", "0,1,0,r,1\n", "1", "Size must be nonzero");
    expect_bad("fiu", "1 2 p 3 8 W 6\n", "1", "expected 8 or 9 fields");
    expect_bad("fiu", "1 2 p 3 8 X 6 0 m\n", "1", "must be W or R");
    expect_bad("fiu", "1 2 my proc 3 8 W 6 0\n", "1", "must be non-negative integers");
    expect_bad("fiu", "1 2 p 3 0 W 6 0\n", "1", "size must be between");
    expect_bad("blkparse", "8,0 1 1 0.1 5 D W 8 + 8 [p]\n8 1 2 0.2 5 D W 8 + 8 [p]\n", "2",
               "expected 'maj,min");
    expect_bad("blkparse", "8,0 1 1 0.1x 5 D W 8 + 8 [p]\n", "1", "time must be");
    expect_bad("blkparse", "8,0 1 1 0.1 5 D W x + 8 [p]\n", "1", "sector and size");
    expect_bad("blkparse", "8,0 1 1 0.1 5 D\n", "1", "needs its RWBS");
    expect_bad("fio", "/dev/sda write 0 4096\n", "1", "first line must be");
    expect_bad("fio", "fio version 2 iolog\n/dev/sda write 0\n", "2", "expected 'file action");
    expect_bad("fio", "fio version 2 iolog\n/dev/sda erase 0 4096\n", "2", "unknown action");
    expect_bad("fio", "fio version 2 iolog\n/dev/sda write 0 0\n", "2", "length must be");
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

static char *run_sim(char **args, int *status, char **errs)
{
    GPtrArray *argv = g_ptr_array_new();
    const char *sim = g_getenv("NH_SIM");
    char *out = NULL;

    if (!sim) {
        g_error("NH_SIM must name the simulator binary (meson test sets it)");
    }
    g_ptr_array_add(argv, (char *)sim);
    for (char **a = args; *a; a++) {
        g_ptr_array_add(argv, *a);
    }
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, 0, NULL, NULL, &out, errs,
                               status, NULL));
    g_ptr_array_free(argv, TRUE);
    return out;
}

/* The simulator on each sample: a closed-loop replay with a given capacity prints the
 * statistics document with the sample's commands. */
static void test_sim_samples(void)
{
    static const struct { const char *file, *format; int n[4]; } s[] = {
        { "msr.csv", "msr", { 1, 2, 0, 0 } },
        { "spc.csv", "spc", { 2, 2, 0, 0 } },
        { "fiu.txt", "fiu", { 1, 2, 0, 0 } },
        { "blkparse.txt", "blkparse", { 1, 1, 1, 1 } },
        { "fio-v2.log", "fio", { 1, 1, 1, 1 } },
        { "fio-v3.log", "fio", { 1, 1, 1, 1 } },
    };
    static const char *const keys[] = { "read_cmds", "write_cmds", "trim_cmds", "flush_cmds" };

    /* every queue depth, 1 included: a full queue frees exactly one slot per request */
    for (size_t i = 0; i < G_N_ELEMENTS(s) * 4; i++) {
        char *path = sample_path(s[i / 4].file), *errs = NULL, *out;
        char qd[2] = { (char)('1' + i % 4), 0 };
        char *args[] = { "--trace", path, "--format", (char *)s[i / 4].format, "--json", "--qd",
                         qd, "--capacity", "2T", "--device", "ftl=dftl", NULL };
        int status;

        out = run_sim(args, &status, &errs);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        g_assert_true(g_str_has_prefix(out, "{"));     /* the document, nothing else */
        for (int k = 0; k < 4; k++) {
            char *key = g_strconcat("host.", keys[k], NULL);
            if (unit_json_uint(out, key) != (uint64_t)s[i / 4].n[k]) {
                g_error("%s qd %s: expected %s %d in\n%s\n%s", s[i / 4].file, qd, key,
                        s[i / 4].n[k], out, errs);
            }
            g_free(key);
        }
        g_free(out);
        g_free(errs);
        g_free(path);
    }
}

/* --skip-bad and --fill through the simulator: reports on stderr, counts of the trace only. */
static void test_sim_options(void)
{
    char *p = write_tmp("0 0 0 8 0\n1000 0 zz 8 0\n2000 0 64 8 1\n");
    char *errs = NULL, *out;
    int status;
    char *strict[] = { "--trace", p, "--format", "mqsim", "--json", NULL };
    char *lenient[] = { "--trace", p, "--format", "mqsim", "--json", "--skip-bad", "--fill",
                        "0.5", "--capacity", "64M", "--device", "channels=2,ways=1,pages=64",
                        NULL };
    char *table[] = { "--trace", p, "--format", "mqsim", "--skip-bad", NULL };

    out = run_sim(strict, &status, &errs);
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(errs, ":2: "));
    g_free(out);
    g_free(errs);

    out = run_sim(lenient, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(errs, "skipped 1 malformed lines"));
    g_assert_nonnull(strstr(errs, "--fill 0.5"));
    g_assert_nonnull(strstr(errs, "steady state"));
    /* the fill wrote thousands of pages; the statistics hold the trace's two requests */
    g_assert_cmpuint(unit_json_uint(out, "host.read_cmds"), ==, 1);
    g_assert_cmpuint(unit_json_uint(out, "host.write_cmds"), ==, 1);
    g_assert_cmpuint(unit_json_uint(out, "host.write_pages"), ==, 1);
    g_free(out);
    g_free(errs);

    out = run_sim(table, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(out, "1 malformed lines skipped"));
    g_free(out);
    g_free(errs);
    g_unlink(p);
    g_free(p);

    /* --fill leaves the write buffer empty: a trace of one read programs nothing */
    p = write_tmp("0 0 0 8 1\n");
    {
        char *buffered[] = { "--trace", p, "--format", "mqsim", "--json", "--fill", "1",
                             "--capacity", "64M", "--device",
                             "channels=2,ways=1,pages=64,ftl=fast,buffer=bplru,buffer-size=1M",
                             NULL };
        out = run_sim(buffered, &status, &errs);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        g_assert_cmpuint(unit_json_uint(out, "nand.page_programs"), ==, 0);
        g_assert_cmpuint(unit_json_uint(out, "buffer.destage_pages"), ==, 0);
        g_free(out);
        g_free(errs);
    }
    g_unlink(p);
    g_free(p);
}

/* The end of the trace drains the write buffer: every page it did not absorb (a write hit) is
 * programmed, and drain.* says what that took.  Before the drain, tpcc with bplru gave WAF 0.09
 * on this slice (0.000 on the whole trace). */
static void test_sim_drain(void)
{
    char *path = sample_path("tpcc-4k.trace"), *errs = NULL, *out, *kept;
    char *args[] = { "--trace", path, "--format", "mqsim", "--json", "--device",
                     "buffer=bplru,buffer-size=16M", NULL, NULL };
    GString *distinct = g_string_new(NULL);
    int status;
    char *p;

    out = run_sim(args, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_cmpuint(unit_json_uint(out, "nand.page_programs"), ==,
                     unit_json_uint(out, "host.write_pages") -
                     unit_json_uint(out, "buffer.write_hits"));
    g_assert_cmpuint(unit_json_uint(out, "drain.page_programs"), >, 0);
    g_assert_cmpuint(unit_json_uint(out, "drain.destage_pages"), ==,
                     unit_json_uint(out, "drain.page_programs"));
    g_assert_cmpuint(unit_json_uint(out, "drain.time_ns"), >, 0);
    g_free(errs);

    args[7] = "--no-drain";
    kept = run_sim(args, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_cmpuint(unit_json_uint(kept, "drain.page_programs"), ==, 0);
    g_assert_cmpuint(unit_json_uint(kept, "nand.page_programs"), ==,
                     unit_json_uint(out, "nand.page_programs") -
                     unit_json_uint(out, "drain.page_programs"));
    g_free(kept);
    g_free(out);
    g_free(errs);
    g_free(path);

    /* writes that never hit the buffer: WAF at least 1, a durable buffer drained too */
    for (int i = 0; i < 64; i++) {
        g_string_append_printf(distinct, "%d 0 %d 8 0\n", i * 1000, i * 8);
    }
    p = write_tmp(distinct->str);
    args[1] = p;
    args[6] = "buffer=lru,buffer-size=16M,buffer-media=sttmram";
    args[7] = NULL;
    out = run_sim(args, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_cmpfloat(unit_json_number(out, "waf"), >=, 1.0);
    g_assert_cmpuint(unit_json_uint(out, "drain.page_programs"), ==, 64);
    g_free(out);
    g_free(errs);
    g_unlink(p);
    g_free(p);
    g_string_free(distinct, TRUE);
}

/* Refused at once, with the reason: a size the 2^32-page rule refuses (capacity sizing counted
 * blocks up one at a time, then blamed blocks or gc-high), an empty trace, a binary file. */
static void test_sim_refusals(void)
{
    static const struct { const char *text; size_t len; const char *device, *want; } c[] = {
        { "0 0 30000000000 8 0\n", 20, "channels=1,ways=1,pages=4",
          "page-size: 14.0 TiB of capacity needs 4103076492 physical pages" },
        { "0 0 30000000000 8 0\n", 20, "channels=1,ways=1,pages=4,blocks=100",
          "more than the 2^32 the mapping tables address" },
        { "", 0, "ftl=page", "no request to replay (the file is empty" },
        { "# only a comment\n\n", 18, "ftl=page", "no request to replay" },
        { "\0\0\0\0\0\0\0\0", 8, "ftl=page", "a NUL byte at offset 0: a binary file" },
        { "0 0 0 8 0\n1 0 8 8\0 0\n", 22, "ftl=page", "a NUL byte at offset 17" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
        char *p = g_build_filename(g_get_tmp_dir(), "nh-refusal-XXXXXX", NULL);
        int fd = g_mkstemp(p), status;
        char *errs = NULL, *out;
        char *args[] = { "--trace", p, "--format", "mqsim", "--json", "--device",
                         (char *)c[i].device, NULL };

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, c[i].text, c[i].len), ==, (ssize_t)c[i].len);
        close(fd);
        out = run_sim(args, &status, &errs);
        g_assert_false(g_spawn_check_wait_status(status, NULL));
        if (!strstr(errs, c[i].want)) {
            g_error("case %zu: expected '%s' in: %s", i, c[i].want, errs);
        }
        g_free(out);
        g_free(errs);
        g_unlink(p);
        g_free(p);
    }
}

/* Times that go back are counted and reported; --sort replays in time order, which changes
 * when requests arrive (and so the latency), not what they are. */
static void test_sim_backwards(void)
{
    char *p = write_tmp("1000000 0 0 8 0\n0 0 8 8 0\n3000000 0 16 8 0\n2000000 0 24 8 0\n");
    char *args[] = { "--trace", p, "--format", "mqsim", "--json", NULL, NULL };
    char *errs = NULL, *out, *sorted;
    int status;

    out = run_sim(args, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(errs, "2 of 4 requests (50.0%) arrive before the one before them"));
    g_free(errs);
    args[5] = "--sort";
    sorted = run_sim(args, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(errs, "replayed in time order (--sort)"));
    g_assert_true(unit_json_same(out, sorted, "host"));
    /* clamped, the last write is issued 2 ms after the first line's time; sorted,
     * it starts at 0 and spans 3 ms plus that write */
    g_assert_cmpuint(unit_json_uint(sorted, "run.duration_ns"), ==,
                     unit_json_uint(out, "run.duration_ns") + 1000000);
    g_free(out);
    g_free(sorted);
    g_free(errs);
    g_unlink(p);
    g_free(p);
}

/* --list-keys names every key of the configuration (the document's config object lists them
 * all), each with its values, default and meaning. */
static void test_sim_list_keys(void)
{
    char *path = sample_path("msr.csv"), *errs = NULL, *doc, *list, *out;
    char *run[] = { "--trace", path, "--format", "msr", "--json", NULL };
    char *keys[] = { "--list-keys", NULL };
    JsonNode *cfg;
    GList *members;
    int status;

    doc = run_sim(run, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_free(errs);
    out = run_sim(keys, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    list = g_strconcat("\n", out, NULL);  /* every key's line follows a line end */
    g_free(out);
    cfg = unit_json(doc, "config");
    members = json_object_get_members(json_node_get_object(cfg));
    g_assert_cmpuint(g_list_length(members), >, 30);
    for (GList *m = members; m; m = m->next) {
        char *head = g_strdup_printf("\n%s\n    ", (char *)m->data);
        char *line = strstr(list, head);
        g_assert_nonnull(line);
        g_assert_nonnull(strstr(line, "; default "));
        g_free(head);
    }
    g_assert_nonnull(strstr(list, "t-read\n    time in ns (ns, us, ms, s suffixes) "
                                  "1..1000000000 or auto; default auto\n"));
    g_list_free(members);
    json_node_unref(cfg);
    g_free(list);
    g_free(doc);
    g_free(errs);
    g_free(path);
}

/* Reads of pages the trace never wrote: the simulator charges each as a flash read by default
 * (they were free: read latency 0), unwritten-reads=free keeps them free, and either way it
 * warns with the count.  Pages the trace wrote are not counted. */
static void test_sim_unwritten(void)
{
    char *p = write_tmp("0 0 0 64 1\n1000000 0 64 8 0\n2000000 0 64 8 1\n");
    char *args[] = { "--trace", p, "--format", "mqsim", "--json", NULL, NULL, NULL };
    char *errs = NULL, *out;
    int status;

    out = run_sim(args, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_cmpuint(unit_json_uint(out, "host.unwritten_read_pages"), ==, 8);
    g_assert_cmpuint(unit_json_uint(out, "nand.page_reads"), ==, 9);
    g_assert_cmpuint(unit_json_uint(out, "latency_ns.read.p50"), >,
                     unit_json_uint(out, "geometry.t_read_ns"));
    g_assert_nonnull(strstr(errs, "the trace read 8 pages it never wrote: each charged as a "
                                  "flash read (unwritten-reads=flash)"));
    g_free(out);
    g_free(errs);

    args[5] = "--device";
    args[6] = "unwritten-reads=free";
    out = run_sim(args, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_cmpuint(unit_json_uint(out, "host.unwritten_read_pages"), ==, 8);
    g_assert_cmpuint(unit_json_uint(out, "nand.page_reads"), ==, 1);
    g_assert_nonnull(strstr(errs, "the trace read 8 pages it never wrote: free"));
    g_free(out);
    g_free(errs);
    g_unlink(p);
    g_free(p);
}

/* --fill ends in steady state with background GC done: a short trace after it pays no GC
 * backlog.  Before, 1,000 random 4K writes after --fill 0.9 of 32 GiB on page gave WAF 54.7
 * (303 victims, 53,691 copies that the fill owed); now 1. */
static void test_sim_fill_steady(void)
{
    GString *t = g_string_new(NULL);
    GRand *r = g_rand_new_with_seed(7);
    char *p, *errs = NULL, *out;
    char *args[] = { "--trace", NULL, "--format", "mqsim", "--json", "--fill", "0.9",
                     "--capacity", "32G", NULL };
    int status;

    for (int i = 0; i < 2000; i++) {
        g_string_append_printf(t, "%d 0 %u 8 %d\n", i * 100000,
                               g_rand_int_range(r, 0, 7000000) * 8, i % 2);
    }
    p = write_tmp(t->str);
    args[1] = p;
    out = run_sim(args, &status, &errs);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_cmpuint(unit_json_uint(out, "conditioning.steady"), ==, 1);
    g_assert_cmpuint(unit_json_uint(out, "conditioning.idle_gc_blocks"), >, 0);
    g_assert_cmpuint(unit_json_uint(out, "conditioning.fill_bytes"), ==,
                     (uint64_t)(0.9 * 32 * 1073741824.0) / 4096 * 4096);
    g_assert_cmpuint(unit_json_uint(out, "ftl.gc_page_copies"), ==, 0);
    g_assert_cmpfloat(unit_json_number(out, "waf"), <, 1.01);
    g_assert_nonnull(strstr(errs, "idle GC reclaimed"));
    g_free(out);
    g_free(errs);
    g_unlink(p);
    g_free(p);
    g_rand_free(r);
    g_string_free(t, TRUE);
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
    g_test_add_func("/trace/sim/samples", test_sim_samples);
    g_test_add_func("/trace/sim/options", test_sim_options);
    g_test_add_func("/trace/sim/drain", test_sim_drain);
    g_test_add_func("/trace/sim/refusals", test_sim_refusals);
    g_test_add_func("/trace/sim/backwards", test_sim_backwards);
    g_test_add_func("/trace/sim/list-keys", test_sim_list_keys);
    g_test_add_func("/trace/sim/unwritten", test_sim_unwritten);
    g_test_add_func("/trace/sim/fill-steady", test_sim_fill_steady);
    g_test_add_func("/trace/real/mqsim", test_real_mqsim);
    g_test_add_func("/trace/real/cpcsv", test_real_cpcsv);
    return g_test_run();
}
