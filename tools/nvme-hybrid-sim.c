/*
 * nvme-hybrid-sim - replay a block trace through the engine the QEMU device uses.
 *
 *   nvme-hybrid-sim --device 'k=v,...' --trace FILE --format FMT [--json] [--qd N] [--limit N]
 *                   [--capacity SIZE] [--fill FRACTION] [--skip-bad]
 *
 * Open loop (each request arrives at its trace time, relative to the first) by default; with
 * --qd N, closed loop: N requests in flight, the next one issued when the earliest completes.
 * The trace is read twice: once to check every line and find the highest byte it touches (the
 * default capacity, rounded up to a GiB), once to replay.  --fill preconditions the device
 * first (precondition.c) and the statistics then count the trace only.  Usage and formats:
 * docs/simulator.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include <json-glib/json-glib.h>

#include "engine.h"
#include "fit.h"
#include "precondition.h"
#include "trace.h"

static char *opt_device = NULL;
static char *opt_trace = NULL;
static char *opt_format = NULL;
static char *opt_capacity = NULL;
static char *opt_fit = NULL;
static gboolean opt_json = FALSE;
static gboolean opt_skip_bad = FALSE;
static gdouble opt_fill = 0;
static gint opt_qd = 0;
static gint64 opt_limit = 0;

static GOptionEntry entries[] = {
    { "device", 'd', 0, G_OPTION_ARG_STRING, &opt_device,
      "device properties, key=value,... (the same keys as -device nvme-hybrid)", "PROPS" },
    { "trace", 't', 0, G_OPTION_ARG_FILENAME, &opt_trace, "trace file to replay", "FILE" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &opt_format,
      "trace format: mqsim, cpcsv, msr, spc, fiu, blkparse, fio", "FMT" },
    { "json", 'j', 0, G_OPTION_ARG_NONE, &opt_json,
      "print the engine's statistics document (JSON) instead of the table", NULL },
    { "qd", 'q', 0, G_OPTION_ARG_INT, &opt_qd,
      "closed loop with N requests in flight (default: open loop, trace timestamps)", "N" },
    { "limit", 'n', 0, G_OPTION_ARG_INT64, &opt_limit, "replay at most N requests", "N" },
    { "capacity", 'c', 0, G_OPTION_ARG_STRING, &opt_capacity,
      "logical space in bytes, K/M/G/T suffixes (default: what the trace touches, rounded up "
      "to a GiB)", "SIZE" },
    { "fit", 0, 0, G_OPTION_ARG_STRING, &opt_fit,
      "fit the trace into the capacity: compact (touched extents laid out densely, in order) "
      "or modulo (addresses folded into --capacity); see docs/simulator.md", "MODE" },
    { "fill", 0, 0, G_OPTION_ARG_DOUBLE, &opt_fill,
      "precondition: write this fraction (0..1) of the space sequentially, then overwrite it "
      "randomly until GC is in steady state; statistics count the trace only", "FRACTION" },
    { "skip-bad", 0, 0, G_OPTION_ARG_NONE, &opt_skip_bad,
      "count and report malformed trace lines instead of failing on the first", NULL },
    { NULL }
};

static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    uint64_t v = g_ascii_strtoull(s, &end, 10), mult = 1;

    if (end == s) {
        return false;
    }
    switch (g_ascii_toupper(*end)) {
    case '\0': break;
    case 'K': mult = 1ull << 10; end++; break;
    case 'M': mult = 1ull << 20; end++; break;
    case 'G': mult = 1ull << 30; end++; break;
    case 'T': mult = 1ull << 40; end++; break;
    default: return false;
    }
    if (*end || (v && mult > UINT64_MAX / v)) {
        return false;
    }
    *out = v * mult;
    return true;
}

/* Completion times of the requests in flight, a min-heap (closed loop). */
typedef struct Inflight {
    uint64_t *t;
    int n;
} Inflight;

static void inflight_push(Inflight *h, uint64_t v)
{
    int i = h->n++;
    while (i && h->t[(i - 1) / 2] > v) {
        h->t[i] = h->t[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->t[i] = v;
}

static uint64_t inflight_pop(Inflight *h)
{
    uint64_t top = h->t[0], last = h->t[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) {
            break;
        }
        if (c + 1 < h->n && h->t[c + 1] < h->t[c]) {
            c++;
        }
        if (last <= h->t[c]) {
            break;
        }
        h->t[i] = h->t[c];
        i = c;
    }
    if (h->n) {
        h->t[i] = last;
    }
    return top;
}

static JsonObject *obj(JsonObject *o, const char *path)
{
    char **parts = g_strsplit(path, ".", -1);
    for (char **p = parts; *p && o; p++) {
        o = json_object_has_member(o, *p) ? json_object_get_object_member(o, *p) : NULL;
    }
    g_strfreev(parts);
    return o;
}

static void print_table(const char *stats, uint64_t nreq, uint64_t sim_ns, double wall_s,
                        uint64_t capacity)
{
    JsonParser *p = json_parser_new();
    JsonObject *root, *host, *nand, *ftl, *cmt, *wear, *lr, *lw, *cfg;
    double secs = sim_ns / 1e9;

    if (!json_parser_load_from_data(p, stats, -1, NULL)) {
        g_object_unref(p);
        return;
    }
    root = json_node_get_object(json_parser_get_root(p));
    host = obj(root, "host");
    nand = obj(root, "nand");
    ftl = obj(root, "ftl");
    cmt = obj(root, "ftl.cmt");
    wear = obj(root, "wear");
    lr = obj(root, "latency_ns.read");
    lw = obj(root, "latency_ns.write");
    cfg = obj(root, "config");

#define I(o, k) ((unsigned long long)json_object_get_int_member(o, k))
    printf("device      ftl=%s cell=%s channels=%s ways=%s blocks=%s op=%s%% capacity=%.1f GiB\n",
           json_object_get_string_member(cfg, "ftl"), json_object_get_string_member(cfg, "cell"),
           json_object_get_string_member(cfg, "channels"),
           json_object_get_string_member(cfg, "ways"),
           json_object_get_string_member(cfg, "blocks"), json_object_get_string_member(cfg, "op"),
           capacity / 1073741824.0);
    printf("requests    %llu in %.3f s simulated (%.0f IOPS), replayed in %.2f s (%.0f req/s)\n",
           (unsigned long long)nreq, secs, secs > 0 ? nreq / secs : 0.0, wall_s,
           wall_s > 0 ? nreq / wall_s : 0.0);
    printf("host        reads %llu (%.1f MiB)  writes %llu (%.1f MiB)  trims %llu  flushes %llu\n",
           I(host, "read_cmds"), I(host, "read_bytes") / 1048576.0, I(host, "write_cmds"),
           I(host, "write_bytes") / 1048576.0, I(host, "trim_cmds"), I(host, "flush_cmds"));
    printf("nand        page reads %llu  page programs %llu  block erases %llu\n",
           I(nand, "page_reads"), I(nand, "page_programs"), I(nand, "block_erases"));
    printf("ftl         gc copies %llu  gc blocks %llu (foreground %llu)  rmw reads %llu\n",
           I(ftl, "gc_page_copies"), I(ftl, "gc_blocks"), I(ftl, "gc_foreground_blocks"),
           I(ftl, "rmw_reads"));
    if (I(cmt, "hits") + I(cmt, "misses")) {
        printf("mapping     cmt hits %llu  misses %llu (hit ratio %.1f%%)  translation page "
               "reads %llu  writes %llu\n", I(cmt, "hits"), I(cmt, "misses"),
               100.0 * I(cmt, "hits") / (I(cmt, "hits") + I(cmt, "misses")),
               I(ftl, "translation_page_reads"), I(ftl, "translation_page_writes"));
    }
    printf("waf         %.3f\n", json_object_get_double_member(root, "waf"));
    printf("wear        erases min %llu max %llu mean %.2f\n", I(wear, "erase_min"),
           I(wear, "erase_max"), json_object_get_double_member(wear, "erase_mean"));
    printf("latency us  %-6s %10s %10s %10s %10s\n", "", "mean", "p50", "p99", "max");
    printf("            %-6s %10.1f %10.1f %10.1f %10.1f\n", "read",
           json_object_get_double_member(lr, "mean") / 1e3, I(lr, "p50") / 1e3,
           I(lr, "p99") / 1e3, I(lr, "max") / 1e3);
    printf("            %-6s %10.1f %10.1f %10.1f %10.1f\n", "write",
           json_object_get_double_member(lw, "mean") / 1e3, I(lw, "p50") / 1e3,
           I(lw, "p99") / 1e3, I(lw, "max") / 1e3);
#undef I
    g_object_unref(p);
}

static int fail(GError *err)
{
    fprintf(stderr, "nvme-hybrid-sim: %s\n", err->message);
    g_error_free(err);
    return 1;
}

int main(int argc, char **argv)
{
    GOptionContext *ctx = g_option_context_new("- replay a block trace through the SSD engine");
    GError *err = NULL;
    NhConfig cfg;
    NhTrace *tr;
    NhTraceRec rec;
    NhEngine *eng;
    uint64_t capacity = 0, max_end = 0, nreq = 0, first = 0, now = 0, base = 0, end_time = 0;
    uint64_t nbad;
    const char *bad_line;
    char *first_bad;
    Inflight inflight = { NULL, 0 };
    NhFit *fit = NULL;
    NhFitMode fit_mode;
    gint64 t0;
    char *stats;
    int r;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        return fail(err);
    }
    g_option_context_free(ctx);
    if (!opt_trace || !opt_format) {
        fprintf(stderr, "nvme-hybrid-sim: --trace and --format are required (see --help)\n");
        return 2;
    }
    if (opt_qd < 0 || opt_limit < 0) {
        fprintf(stderr, "nvme-hybrid-sim: --qd and --limit must not be negative\n");
        return 2;
    }
    if (!(opt_fill >= 0 && opt_fill <= 1)) {
        fprintf(stderr, "nvme-hybrid-sim: --fill must be a fraction between 0 and 1\n");
        return 2;
    }
    if (opt_capacity && (!parse_size(opt_capacity, &capacity) || !capacity)) {
        fprintf(stderr, "nvme-hybrid-sim: --capacity: '%s' is not a size\n", opt_capacity);
        return 2;
    }
    nh_config_defaults(&cfg);
    if (!nh_config_parse(&cfg, opt_device, &err)) {
        return fail(err);
    }
    if (opt_fit) {
        if (!nh_fit_parse_mode(opt_fit, &fit_mode, &err)) {
            return fail(err);
        }
        fit = nh_fit_new(fit_mode, cfg.page_size);
    }
    tr = nh_trace_open(opt_trace, opt_format, &err);
    if (!tr) {
        return fail(err);
    }
    nh_trace_skip_bad(tr, opt_skip_bad);
    while ((!opt_limit || nreq < (uint64_t)opt_limit) && (r = nh_trace_next(tr, &rec, &err)) > 0) {
        max_end = MAX(max_end, rec.offset + rec.length);
        if (fit) {
            nh_fit_add(fit, rec.offset, rec.length);
        }
        nreq++;
    }
    if (err) {
        return fail(err);
    }
    nbad = nh_trace_bad_lines(tr, &bad_line);
    first_bad = g_strdup(bad_line);
    if (nbad) {
        fprintf(stderr, "nvme-hybrid-sim: skipped %" G_GUINT64_FORMAT " malformed lines "
                "(first: %s)\n", nbad, first_bad);
    }
    if (fit && !nh_fit_finish(fit, &capacity, &err)) {
        return fail(err);
    }
    if (!capacity) {
        capacity = MAX(1ull << 30, (max_end + (1ull << 30) - 1) & ~((1ull << 30) - 1));
    }
    eng = nh_engine_new(&cfg, capacity, &err);
    if (!eng || !nh_trace_rewind(tr, &err)) {
        return fail(err);
    }
    if (opt_fill > 0) {
        NhFillReport fr;
        if (!nh_precondition(eng, capacity, opt_fill, &fr, &err)) {
            return fail(err);
        }
        fprintf(stderr, "nvme-hybrid-sim: --fill %g: %" G_GUINT64_FORMAT " sequential and %"
                G_GUINT64_FORMAT " random writes, %.2f erases per block, %s\n", opt_fill,
                fr.seq_writes, fr.rand_writes, fr.erases_per_block,
                fr.steady ? "steady state" : "stopped at the cap before steady state");
        now = base = end_time = fr.end_ns;
    }

    if (opt_qd) {
        inflight.t = g_new(uint64_t, opt_qd);
    }
    t0 = g_get_monotonic_time();
    for (uint64_t i = 0; i < nreq && nh_trace_next(tr, &rec, &err) > 0; i++) {
        NhRequest req = { .op = rec.op, .offset = rec.offset, .length = rec.length };
        if (fit) {
            req.offset = nh_fit_map(fit, rec.offset, rec.length);
        }
        uint64_t done;

        if (opt_qd) {
            if (inflight.n == opt_qd) {
                uint64_t freed = inflight_pop(&inflight);   /* not inside MAX(): evaluated twice */
                now = MAX(now, freed);
            }
        } else {
            if (i == 0) {
                first = rec.time_ns;
            }
            /* traces are not always sorted; the engine needs time that never goes back */
            now = MAX(now, base + (rec.time_ns > first ? rec.time_ns - first : 0));
        }
        if (!nh_engine_submit(eng, &req, now, &done, &err)) {
            g_prefix_error(&err, "%s: request %" G_GUINT64_FORMAT ": ", opt_trace, i + 1);
            return fail(err);
        }
        if (opt_qd) {
            inflight_push(&inflight, done);
        }
        end_time = MAX(end_time, done);
    }
    if (err) {
        return fail(err);
    }
    stats = nh_engine_stats_json(eng, opt_json);
    if (fit) {
        char *with_fit = nh_fit_add_to_json(fit, stats, opt_json), *line = nh_fit_summary(fit);
        fprintf(stderr, "nvme-hybrid-sim: --fit %s\n", line);
        g_free(line);
        g_free(stats);
        stats = with_fit;
    }
    if (opt_json) {
        printf("%s\n", stats);
    } else {
        print_table(stats, nreq, end_time - base, (g_get_monotonic_time() - t0) / 1e6, capacity);
        if (fit) {
            char *line = nh_fit_summary(fit);
            printf("fit         %s\n", line);
            g_free(line);
        }
        if (nbad) {
            printf("trace       %" G_GUINT64_FORMAT " malformed lines skipped (first: %s)\n",
                   nbad, first_bad);
        }
    }
    g_free(stats);
    g_free(inflight.t);
    g_free(first_bad);
    nh_trace_close(tr);
    nh_fit_free(fit);
    nh_engine_free(eng);
    return 0;
}
