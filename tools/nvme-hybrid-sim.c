/*
 * nvme-hybrid-sim - replay a block trace through the engine the QEMU device uses.
 *
 *   nvme-hybrid-sim --device 'k=v,...' --trace FILE --format FMT [--json] [--qd N] [--limit N]
 *                   [--capacity SIZE] [--fill FRACTION] [--skip-bad] [--no-drain]
 *
 * Open loop (each request arrives at its trace time, relative to the first) by default; with
 * --qd N, closed loop: N requests in flight, the next one issued when the earliest completes.
 * The trace is read twice: once to check every line and find the highest byte it touches (the
 * default capacity, rounded up to a GiB), once to replay.  --fill preconditions the device
 * first (precondition.c) and the statistics then count the trace only.  At the end the write
 * buffer is drained (nh_engine_finish, drain.* in the statistics) unless --no-drain.  Usage and formats:
 * docs/simulator.md.
 */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <glib.h>
#include <json-glib/json-glib.h>

#include "engine.h"
#include "fit.h"
#include "nh-heap.h"
#include "precondition.h"
#include "priority.h"
#include "trace.h"

static char *opt_device = NULL;
static char *opt_trace = NULL;
static char *opt_format = NULL;
static char *opt_capacity = NULL;
static char *opt_fit = NULL;
static gboolean opt_json = FALSE;
static gboolean opt_skip_bad = FALSE;
static gboolean opt_no_drain = FALSE;
static gboolean opt_sort = FALSE;
static gboolean opt_no_priority = FALSE;
static gboolean opt_list_keys = FALSE;
static gboolean opt_list_presets = FALSE;
static gboolean opt_version = FALSE;
static gdouble opt_fill = 0;
static gint opt_qd = 0;
static gint64 opt_limit = 0;
/* --fit: where each request of the trace lands in the capacity (NULL: where the trace says) */
static NhFit *fit = NULL;
/* response times of the requests the trace marks as priority and of the others */
static NhPrioLat *prio = NULL;

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
    { "no-drain", 0, 0, G_OPTION_ARG_NONE, &opt_no_drain,
      "leave what the write buffer holds at the end of the trace unwritten (default: drain it "
      "and count what that cost under drain.*)", NULL },
    { "sort", 0, 0, G_OPTION_ARG_NONE, &opt_sort,
      "replay the requests in time order (stable) instead of clamping a time that goes back to "
      "the one before it; holds the trace in memory", NULL },
    { "no-priority", 0, 0, G_OPTION_ARG_NONE, &opt_no_priority,
      "replay requests the trace marks as priority as ordinary ones (the engine is not told; "
      "the document still reports them apart): priority-unaware cleaning", NULL },
    { "list-keys", 0, 0, G_OPTION_ARG_NONE, &opt_list_keys,
      "print every device property (key, values, default, meaning) and exit", NULL },
    { "list-presets", 0, 0, G_OPTION_ARG_NONE, &opt_list_presets,
      "print the presets of real drives (preset=NAME), each value with its source, and exit",
      NULL },
    { "skip-bad", 0, 0, G_OPTION_ARG_NONE, &opt_skip_bad,
      "count and report malformed trace lines instead of failing on the first", NULL },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version,
      "print the simulator's version (the project's, VERSION) and exit", NULL },
    { NULL }
};

/* The requests in flight (closed loop): each holds one of --qd slots, and the heap orders the
 * slots by the completion time of their request. */
typedef struct Inflight {
    uint64_t *done;     /* [qd] */
    uint32_t *heap;     /* [qd] */
    uint32_t  n;
} Inflight;

static uint64_t slot_done(const void *done, uint32_t slot)
{
    return ((const uint64_t *)done)[slot];
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

/* A size in the largest binary unit it reaches, KiB at least: "256 MiB", "1.5 GiB"
 * (scripts/nh/table.py's size_text prints the same). */
static char *size_text(uint64_t bytes)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = bytes / 1024.0;
    unsigned u = 0;

    while (v >= 1024 && u + 1 < G_N_ELEMENTS(units)) {
        v /= 1024;
        u++;
    }
    return g_strdup_printf(v == floor(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
}

/* @part of @whole in percent, or what stands for it when @whole is 0 */
static char *share(uint64_t part, uint64_t whole, const char *what)
{
    return whole ? g_strdup_printf("%.1f%% of %s", 100.0 * part / whole, what)
                 : g_strdup_printf("no %s", what);
}

/* The placement line (placement on: the FTL has per-stream frontiers): the host's streams (auto
 * resolved), how they map, whether some share a physical stream, and the host pages of the
 * physical streams that wrote any. */
static void print_placement(JsonObject *cfg, JsonObject *pl)
{
    JsonObject *pages = pl && json_object_has_member(pl, "host_pages")
                        ? json_object_get_object_member(pl, "host_pages") : NULL;
    const char *asked = json_object_get_string_member(cfg, "streams");
    uint64_t shared = (uint64_t)json_object_get_int_member(pl, "shared_streams");
    guint zeros = 0, written = 0;
    GString *line;
    GList *members;

    if (!pages || !json_object_get_size(pages)) {
        return;
    }
    line = g_string_new(NULL);
    g_string_printf(line, "placement   streams %llu%s map=%s physical streams %u",
                    (unsigned long long)json_object_get_int_member(pl, "host_streams"),
                    strcmp(asked, "auto") ? "" : " (auto)",
                    json_object_get_string_member(cfg, "stream-map"),
                    json_object_get_size(pages));
    if (!strcmp(json_object_get_string_member(cfg, "stream-map"), "dstream")) {
        g_string_append_printf(line, " (k %llu now)",
                               (unsigned long long)json_object_get_int_member(pl, "k"));
    }
    if (shared) {
        g_string_append_printf(line, ", %llu host streams share one",
                               (unsigned long long)shared);
    }
    g_string_append(line, "  host pages per stream");
    /* members "0".."n-1" in order: json-glib keeps the order they were added in */
    members = json_object_get_members(pages);
    for (GList *m = members; m; m = m->next) {
        uint64_t n = (uint64_t)json_object_get_int_member(pages, m->data);
        if (n) {
            g_string_append_printf(line, " %s:%llu", (const char *)m->data,
                                   (unsigned long long)n);
            written++;
        } else {
            zeros++;
        }
    }
    g_list_free(members);
    g_string_append(line, !written ? " none" : zeros ? " (others 0)" : "");
    printf("%s\n", line->str);
    g_string_free(line, TRUE);
}

/* The buffer line, and the read cache's when there is one: "none" rather than a hit ratio of 0
 * when there is no buffer. */
static void print_buffer(JsonObject *cfg, JsonObject *host, JsonObject *buf, JsonObject *cache)
{
    const char *policy = json_object_get_string_member(cfg, "buffer");
    const char *cache_size = json_object_get_string_member(cfg, "cache-size");

#define I(o, k) ((unsigned long long)json_object_get_int_member(o, k))
    if (!strcmp(policy, "none")) {
        printf("buffer      none\n");
    } else {
        char *hits = share(I(buf, "write_hits"), I(host, "write_pages"), "host pages written");

        printf("buffer      %s %s  write hits %llu (%s)  read hits %llu  evictions %llu  "
               "destaged pages %llu\n", policy, json_object_get_string_member(cfg, "buffer-size"),
               I(buf, "write_hits"), hits, I(buf, "read_hits"), I(buf, "evictions"),
               I(buf, "destage_pages"));
        g_free(hits);
    }
    if (strcmp(cache_size, "0")) {
        unsigned long long looked = I(cache, "read_hits") + I(cache, "read_misses");
        char *ratio = looked ? g_strdup_printf("hit ratio %.1f%%", 100.0 * I(cache, "read_hits")
                                                                   / looked)
                             : g_strdup("nothing read");

        printf("read cache  %s  hits %llu  misses %llu (%s)\n", cache_size, I(cache, "read_hits"),
               I(cache, "read_misses"), ratio);
        g_free(ratio);
    }
#undef I
}

/* The table: every line but the replay's wall time comes from the document, and
 * scripts/nh/table.py prints the same lines from it (tests/scripts/test_table.py holds them
 * equal). */
/* The zoned region's line, with zones only. */
static void print_zones(JsonObject *cfg, JsonObject *z)
{
    JsonObject *st = json_object_get_object_member(z, "state");

    if (!strcmp(json_object_get_string_member(cfg, "zones"), "0")) {
        return;
    }
#define I(o, k) ((unsigned long long)json_object_get_int_member(o, k))
    printf("zones       %s: resets %llu (%llu erases)  finishes %llu (%llu pages padded)  "
           "appends %llu  refused %llu; now %llu empty, %llu open, %llu closed, %llu full\n",
           json_object_get_string_member(cfg, "zones"), I(z, "resets"), I(z, "reset_erases"),
           I(z, "finishes"), I(z, "finish_pad_pages"), I(z, "appends"), I(z, "refused"),
           I(st, "empty"), I(st, "implicitly_opened") + I(st, "explicitly_opened"),
           I(st, "closed"), I(st, "full"));
#undef I
}

static void print_table(const char *stats, double wall_s)
{
    JsonParser *p = json_parser_new();
    JsonObject *root, *host, *nand, *ftl, *cmt, *wear, *lr, *lw, *cfg, *drain, *geo;
    uint64_t nreq;
    double secs;
    char *cap;

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
    drain = obj(root, "drain");
    geo = obj(root, "geometry");
    nreq = json_object_get_int_member(obj(root, "trace"), "requests");
    secs = json_object_get_int_member(obj(root, "run"), "duration_ns") / 1e9;
    cap = size_text(json_object_get_int_member(geo, "capacity_bytes"));

#define I(o, k) ((unsigned long long)json_object_get_int_member(o, k))
    printf("device      ftl=%s cell=%s channels=%s ways=%s blocks=%s op=%s%% capacity=%s\n",
           json_object_get_string_member(cfg, "ftl"), json_object_get_string_member(cfg, "cell"),
           json_object_get_string_member(cfg, "channels"),
           json_object_get_string_member(cfg, "ways"),
           json_object_get_string_member(cfg, "blocks"), json_object_get_string_member(cfg, "op"),
           cap);
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
    print_placement(cfg, obj(root, "ftl.placement"));
    print_zones(cfg, obj(root, "zones"));
    print_buffer(cfg, host, obj(root, "buffer"), obj(root, "cache"));
    if (I(drain, "page_programs") || I(drain, "time_ns")) {
        printf("drain       page programs %llu  erases %llu  gc copies %llu  in %.3f ms (counted "
               "above)\n", I(drain, "page_programs"), I(drain, "block_erases"),
               I(drain, "gc_page_copies"), I(drain, "time_ns") / 1e6);
    }
    printf("waf         %.3f pages programmed per page written, %.3f bytes per byte\n",
           json_object_get_double_member(root, "waf"),
           json_object_get_double_member(root, "waf_bytes"));
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
    g_free(cap);
    g_object_unref(p);
    if (fit) {
        char *line = nh_fit_summary(fit);

        printf("fit         %s\n", line);
        g_free(line);
    }
}

/* A request and its place in the trace: --sort orders by time, then place (a stable sort). */
typedef struct Ordered {
    NhTraceRec rec;
    uint64_t   seq;
} Ordered;

static gint by_time(gconstpointer a, gconstpointer b)
{
    const Ordered *x = a, *y = b;

    if (x->rec.time_ns != y->rec.time_ns) {
        return x->rec.time_ns < y->rec.time_ns ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* What the first pass over the trace found. */
typedef struct Scan {
    uint64_t nreq, max_end;
    uint64_t backwards;     /* requests whose time is below the latest time before them */
    uint64_t lo, hi;        /* the earliest and the latest time */
    uint64_t lo_line, hi_line;
    GArray  *sorted;        /* --sort: the requests in time order */
    NhTraceRec *kept;       /* otherwise the requests, up to KEEP_MAX of them (else NULL) */
} Scan;

/* The first pass keeps up to this many requests (32 bytes each: 64 MiB) for the replay, so that
 * the trace is parsed once (parsing was 44% of a replay of 500,000 random requests); a longer
 * trace is read again. */
#define KEEP_MAX ((uint64_t)2 << 20)

/* Open loop: the replay's clock runs over the trace's times (from the first, or with --sort the
 * earliest), and the engine takes arrivals up to NH_TIME_MAX only, so a trace whose times span
 * more is refused at the line that widens the span, naming the other end. */
static bool span_ok(NhTrace *tr, Scan *sc, uint64_t t, GError **errp)
{
    uint64_t line = nh_trace_line(tr);
    uint64_t other, other_line;

    if (!sc->nreq || t < sc->lo) {
        sc->lo = t;
        sc->lo_line = line;
    }
    if (!sc->nreq || t > sc->hi) {
        sc->hi = t;
        sc->hi_line = line;
    }
    if (opt_qd || sc->hi - sc->lo <= NH_TIME_MAX) {
        return true;
    }
    other = t == sc->hi ? sc->lo : sc->hi;
    other_line = t == sc->hi ? sc->lo_line : sc->hi_line;
    g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s:%" G_GUINT64_FORMAT ": time %"
                G_GUINT64_FORMAT " ns is %.1f years from the time %" G_GUINT64_FORMAT " ns on "
                "line %" G_GUINT64_FORMAT ": the replay models at most 2^62 ns (146 years), "
                "after which completion times could overflow (--qd ignores the times)",
                opt_trace, line, t, (double)(sc->hi - sc->lo) / (365.25 * 86400 * 1e9), other,
                other_line);
    return false;
}

/* Room for KEEP_MAX requests, of which only those written take memory, in huge pages where the
 * kernel gives them on request: the page faults of filling it 4 KiB at a time were a tenth of
 * a replay of 500,000 random requests (perf); NULL if the space is not there (the trace is then
 * read again). */
static NhTraceRec *kept_alloc(void)
{
    size_t len = KEEP_MAX * sizeof(NhTraceRec);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
    madvise(p, len, MADV_HUGEPAGE);
    return p;
}

static void kept_free(Scan *sc)
{
    if (sc->kept) {
        munmap(sc->kept, KEEP_MAX * sizeof(NhTraceRec));
        sc->kept = NULL;
    }
}

/* Check every line (up to --limit), find the highest byte touched, count the times that go
 * back and keep the requests: to sort them with --sort, else for the replay. */
static bool first_pass(NhTrace *tr, Scan *sc, GError **errp)
{
    NhTraceRec rec;

    *sc = (Scan){ 0 };
    if (opt_sort) {
        sc->sorted = g_array_new(FALSE, FALSE, sizeof(Ordered));
    } else {
        sc->kept = kept_alloc();
    }
    while ((!opt_limit || sc->nreq < (uint64_t)opt_limit) && nh_trace_next(tr, &rec, errp) > 0) {
        /* below the latest time, not just the previous line's: the replay clamps each such
         * request to the latest (a run of them after one late time is clamped whole) */
        sc->backwards += sc->nreq && rec.time_ns < sc->hi;
        if (!span_ok(tr, sc, rec.time_ns, errp)) {
            return false;
        }
        sc->max_end = MAX(sc->max_end, rec.offset + rec.length);
        if (fit) {
            nh_fit_add(fit, rec.offset, rec.length);
        }
        if (sc->sorted) {
            Ordered o = { rec, sc->nreq };
            g_array_append_val(sc->sorted, o);
        } else if (sc->kept && sc->nreq == KEEP_MAX) {
            kept_free(sc);
        } else if (sc->kept) {
            sc->kept[sc->nreq] = rec;
        }
        sc->nreq++;
    }
    if (*errp) {
        return false;
    }
    if (!sc->nreq) {
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: no request to replay (the file is "
                    "empty, or holds only comments, blank lines%s and events that are not "
                    "replayed)", opt_trace, opt_skip_bad ? ", malformed lines" : "");
        return false;
    }
    if (sc->sorted) {
        g_array_sort(sc->sorted, by_time);
    }
    return true;
}

/* --list-keys: the keys of -device nvme-hybrid (its help lists the same, with the same text).
 * The default is what a device without keys has: the default preset's value, where it sets
 * the key, and then the key's own default is said too. */
static void list_keys(void)
{
    NhConfig cfg, own;

    nh_config_defaults(&cfg);
    nh_config_defaults(&own);
    nh_config_set(&own, "preset", "none", NULL);
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        const NhConfigKey *k = nh_config_key(i);
        char *values = nh_config_key_values(k);
        char *def = nh_key_get(&cfg, k), *own_def = nh_key_get(&own, k);

        printf("%s\n    %s; default %s\n    %s", k->name, values, def, k->help);
        if (strcmp(k->name, "preset") && strcmp(def, own_def)) {
            printf(" (the default is preset %s's; preset=none: %s)", cfg.preset, own_def);
        }
        printf("\n");
        g_free(def);
        g_free(own_def);
        g_free(values);
    }
}

/* --list-presets: each drive, then each of its values with where it comes from. */
static void list_presets(void)
{
    for (size_t i = 0; nh_presets[i]; i++) {
        const NhPreset *p = nh_presets[i];

        printf("%s%s\n    %s\n", p->name,
               strcmp(p->name, NH_PRESET_DEFAULT) ? "" : " (default)", p->drive);
        for (const NhPresetValue *v = p->values; v->key; v++) {
            printf("    %s=%s\n        %s\n", v->key, v->value, v->source);
        }
        if (p->note) {
            printf("    not in the preset: %s\n", p->note);
        }
    }
    printf("none\n    no drive: every key its own default (--list-keys with preset=none)\n");
}

/* The options' own checks, and --capacity parsed: 0 to go on, else the exit status. */
static int check_options(uint64_t *capacity)
{
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
    if (opt_capacity && (!nh_config_parse_size(opt_capacity, capacity) || !*capacity)) {
        fprintf(stderr, "nvme-hybrid-sim: --capacity: '%s' is not a size\n", opt_capacity);
        return 2;
    }
    return 0;
}

/* A zoned device's trace addresses the zones after the conventional space, so that space's
 * size must be given and the addresses kept as they are. */
static int check_zoned(const NhConfig *cfg)
{
    char *zones = nh_config_get(cfg, "zones");
    bool zoned = strcmp(zones, "0") != 0;

    g_free(zones);
    if (zoned && !opt_capacity) {
        fprintf(stderr, "nvme-hybrid-sim: zones: give the conventional space's size with "
                "--capacity; the zones follow it (docs/simulator.md, Zoned traces)\n");
        return 2;
    }
    if (zoned && opt_fit) {
        fprintf(stderr, "nvme-hybrid-sim: --fit moves addresses, which a zoned trace must "
                "keep (a zone is written at its write pointer)\n");
        return 2;
    }
    return 0;
}

/* The trace read pages it never wrote (nor --fill did): say how many and what they cost. */
static void warn_unwritten(const char *stats)
{
    JsonParser *p = json_parser_new();
    JsonObject *root;
    uint64_t n;

    if (!json_parser_load_from_data(p, stats, -1, NULL)) {
        g_object_unref(p);
        return;
    }
    root = json_node_get_object(json_parser_get_root(p));
    n = json_object_get_int_member(obj(root, "host"), "unwritten_read_pages");
    if (n) {
        bool flash = !strcmp(json_object_get_string_member(obj(root, "config"),
                                                           "unwritten-reads"), "flash");
        fprintf(stderr, "nvme-hybrid-sim: the trace read %" G_GUINT64_FORMAT " pages it never "
                "wrote: %s\n", n, flash ? "each charged as a flash read (unwritten-reads=flash)"
                : "free (unwritten-reads=free)");
    }
    g_object_unref(p);
}

/* --fill: precondition, report on stderr; *base: when the trace may start. */
static bool fill(NhEngine *eng, uint64_t capacity, uint64_t *base, GError **errp)
{
    NhFillReport fr;

    if (!nh_precondition(eng, capacity, opt_fill, &fr, errp)) {
        return false;
    }
    fprintf(stderr, "nvme-hybrid-sim: --fill %g: %" G_GUINT64_FORMAT " sequential and %"
            G_GUINT64_FORMAT " random writes, %.2f erases per block, %s; idle GC reclaimed %"
            G_GUINT64_FORMAT " blocks\n", opt_fill, fr.seq_writes, fr.rand_writes,
            fr.erases_per_block, fr.steady ? "steady state" : "stopped at the cap before "
            "steady state", fr.idle_gc_blocks);
    *base = fr.end_ns;
    return true;
}

static int fail(GError *err)
{
    fprintf(stderr, "nvme-hybrid-sim: %s\n", err->message);
    g_error_free(err);
    return 1;
}

/* A progress line on standard error when it is a terminal, at most once a second; (0, 0)
 * clears it. */
static void progress(uint64_t done, uint64_t total)
{
    static gint64 last;
    static bool shown;
    gint64 now = g_get_monotonic_time();

    if (!isatty(STDERR_FILENO)) {
        return;
    }
    if (!total) {
        if (shown) {
            fprintf(stderr, "\r\033[K");
        }
        return;
    }
    if (!last) {
        last = now;     /* the first line after a second: short replays print none */
    } else if (now - last >= G_USEC_PER_SEC) {
        fprintf(stderr, "\rnvme-hybrid-sim: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                " requests (%.0f%%)", done, total, 100.0 * done / total);
        last = now;
        shown = true;
    }
}

/* Request @i of those the first pass kept; NULL when it kept none (the trace is read again). */
static inline NhTraceRec *kept_rec(const Scan *sc, uint64_t i)
{
    if (sc->sorted) {
        return &g_array_index(sc->sorted, Ordered, i).rec;
    }
    return sc->kept ? &sc->kept[i] : NULL;
}

/* The replay's request @i, with --fit at its place in the device (the kept ones were moved
 * there before: fit_kept): where the first pass kept it, else read again into @buf; NULL at the
 * end of the trace or at an error. */
static const NhTraceRec *replay_rec(NhTrace *tr, const Scan *sc, uint64_t i, NhTraceRec *buf,
                                    GError **errp)
{
    const NhTraceRec *k = kept_rec(sc, i);

    if (k) {
        return k;
    }
    if (nh_trace_next(tr, buf, errp) <= 0) {
        return NULL;
    }
    if (fit) {
        buf->offset = nh_fit_map(fit, buf->offset, buf->length);
    }
    return buf;
}

/* --fit: the kept requests moved to their places in the device, in the replay's order, before
 * it starts, so that it can look ahead (replay). */
static void fit_kept(const Scan *sc, uint64_t nreq)
{
    NhTraceRec *k;

    for (uint64_t i = 0; fit && i < nreq && (k = kept_rec(sc, i)); i++) {
        k->offset = nh_fit_map(fit, k->offset, k->length);
    }
}

/* How many requests ahead the replay asks the engine to prefetch a request's mapping entry,
 * then what the entry points at (nh_engine_prefetch): far enough for a cache miss to resolve
 * while those before it are modelled. */
#define PREFETCH_AHEAD 16
#define PREFETCH_DEEP 8

/*
 * Replay the first @nreq requests of @tr from time @base: at the trace's times (open loop) or,
 * with --qd, each as soon as one of the queue's slots is free.  *end_time: the last completion.
 */
/* A zone operation of a zoned trace: an append or an action, on the zone holding its offset
 * or with Select All. */
static bool zone_op(NhEngine *eng, const NhTraceRec *rec, uint64_t now, uint64_t *done,
                    GError **errp)
{
    uint64_t base = nh_engine_zone_base(eng), cap = nh_engine_zone_capacity(eng), off;
    uint32_t zone = NH_ZONE_ALL;

    if (!(rec->zone & NH_TRACE_ZONE_ALL)) {
        if (!cap || rec->offset < base || (rec->offset - base) / cap >= nh_engine_zones(eng)) {
            g_set_error(errp, NH_ZONE_ERROR, NH_ZONE_ERR_INVALID, "byte %" G_GUINT64_FORMAT
                        " is in no zone (zones=%u after the conventional space's %"
                        G_GUINT64_FORMAT " bytes)", rec->offset, nh_engine_zones(eng), base);
            return false;
        }
        zone = (uint32_t)((rec->offset - base) / cap);
    }
    if (rec->zone == NH_TRACE_ZONE_APPEND) {
        return nh_engine_zone_append(eng, zone, rec->length, 0, now, &off, done, errp);
    }
    return nh_engine_zone_action(eng, rec->zone & ~NH_TRACE_ZONE_ALL, zone, now, done, errp);
}

/* Refusals shown on standard error before the rest are only counted (zones.refused). */
#define REFUSALS_SHOWN 20

/* Serve one request of the trace.  A zone status (a write off the write pointer, a full zone,
 * ...) is the device's answer, not the end of the run: it is shown with the line and the
 * request completes at once. */
static bool serve(NhEngine *eng, const NhTraceRec *rec, const NhRequest *req, uint64_t now,
                  uint64_t *done, uint64_t *refusals, GError **errp)
{
    bool ok = rec->zone ? zone_op(eng, rec, now, done, errp)
                        : nh_engine_submit(eng, req, now, done, errp);

    if (ok || (*errp)->domain != NH_ZONE_ERROR) {
        return ok;
    }
    if ((*refusals)++ < REFUSALS_SHOWN) {
        fprintf(stderr, "nvme-hybrid-sim: %s:%u: refused: %s\n", opt_trace, rec->line,
                (*errp)->message);
    }
    g_clear_error(errp);
    *done = now;
    return true;
}

static bool replay(NhEngine *eng, NhTrace *tr, const Scan *sc, uint64_t nreq,
                   uint64_t base, uint64_t *end_time, GError **errp)
{
    Inflight inflight = { NULL, NULL, 0 };
    NhTraceRec buf;
    const NhTraceRec *rec;
    uint64_t first = 0, now = base, refusals = 0;
    uint32_t slot = 0;
    bool ok = true;

    if (opt_qd) {
        inflight.done = g_new(uint64_t, opt_qd);
        inflight.heap = g_new(uint32_t, opt_qd);
    }
    for (uint64_t i = 0; i < nreq && (rec = replay_rec(tr, sc, i, &buf, errp)); i++) {
        NhRequest req = { .op = rec->op, .offset = rec->offset, .length = rec->length,
                          .stream = rec->op == NH_OP_WRITE ? rec->stream : 0,
                          .flags = rec->priority && !opt_no_priority ? NH_REQ_PRIORITY : 0 };
        const NhTraceRec *ahead = i + PREFETCH_AHEAD < nreq ? kept_rec(sc, i + PREFETCH_AHEAD)
                                                            : NULL;
        const NhTraceRec *deep = i + PREFETCH_DEEP < nreq ? kept_rec(sc, i + PREFETCH_DEEP)
                                                          : NULL;
        uint64_t done;

        if (ahead) {
            nh_engine_prefetch(eng, ahead->offset, false);
        }
        if (deep) {
            nh_engine_prefetch(eng, deep->offset, true);
        }

        if (opt_qd) {
            slot = inflight.n;
            if (inflight.n == (uint32_t)opt_qd) {
                slot = nh_heap_pop(inflight.heap, inflight.n--, slot_done, inflight.done);
                now = MAX(now, inflight.done[slot]);
            }
        } else {
            if (i == 0) {
                first = rec->time_ns;
            }
            /* traces are not always sorted (counted by first_pass); the engine needs time that
             * never goes back, so a request is issued no earlier than the latest before it */
            now = MAX(now, base + (rec->time_ns > first ? rec->time_ns - first : 0));
        }
        if ((i & 0xffff) == 0xffff) {
            progress(i + 1, nreq);
        }
        ok = serve(eng, rec, &req, now, &done, &refusals, errp);
        if (!ok) {
            g_prefix_error(errp, "%s: request %" G_GUINT64_FORMAT ": ", opt_trace, i + 1);
            break;
        }
        nh_prio_lat_add(prio, rec->op, rec->priority, done - now);
        if (opt_qd) {
            inflight.done[slot] = done;
            nh_heap_push(inflight.heap, inflight.n++, slot, slot_done, inflight.done);
        }
        *end_time = MAX(*end_time, done);
    }
    progress(0, 0);
    if (refusals > REFUSALS_SHOWN) {
        fprintf(stderr, "nvme-hybrid-sim: %" G_GUINT64_FORMAT " requests refused in all (the "
                "first %d shown)\n", refusals, REFUSALS_SHOWN);
    }
    g_free(inflight.done);
    g_free(inflight.heap);
    return ok && !*errp;     /* a read error of the trace ends the loop with *errp set */
}

static NhFit *fit_new(uint32_t page_size, GError **errp)
{
    NhFitMode mode;

    return nh_fit_parse_mode(opt_fit, &mode, errp) ? nh_fit_new(mode, page_size) : NULL;
}

/* The requests the replay issued at a later time than the trace's: only the open loop in
 * trace order clamps (--qd ignores the times, --sort puts them in order). */
static uint64_t clamped(const Scan *scan)
{
    return opt_qd || opt_sort ? 0 : scan->backwards;
}

/* The statistics document with the simulator's own members (docs/simulator.md): trace, always,
 * fit with --fit, whose summary also goes to stderr (and, in the table, a line of its own), and
 * priority when the trace marks any request so. */
static char *add_members(char *stats, const Scan *scan, uint64_t nbad)
{
    JsonParser *p = json_parser_new();
    bool parsed = json_parser_load_from_data(p, stats, -1, NULL);
    JsonGenerator *g;
    JsonObject *root, *trace;
    char *out;

    g_assert(parsed);   /* the engine's own document */
    root = json_node_get_object(json_parser_get_root(p));
    trace = json_object_new();
    /* what was replayed and how, so that a document alone says how to replay it again */
    json_object_set_string_member(trace, "file", opt_trace);
    json_object_set_string_member(trace, "format", opt_format);
    json_object_set_int_member(trace, "qd", opt_qd);
    json_object_set_int_member(trace, "limit", opt_limit);
    json_object_set_boolean_member(trace, "sort", opt_sort);
    json_object_set_double_member(trace, "fill", opt_fill);
    json_object_set_boolean_member(trace, "drain", !opt_no_drain);
    json_object_set_string_member(trace, "simulator", "nvme-hybrid-sim " NH_VERSION);
    json_object_set_int_member(trace, "requests", (gint64)scan->nreq);
    json_object_set_int_member(trace, "malformed_lines", (gint64)nbad);
    json_object_set_int_member(trace, "backward_requests", (gint64)scan->backwards);
    json_object_set_int_member(trace, "clamped_requests", (gint64)clamped(scan));
    json_object_set_object_member(root, "trace", trace);
    if (fit) {
        char *line = nh_fit_summary(fit);

        json_object_set_object_member(root, "fit", nh_fit_json(fit));
        fprintf(stderr, "nvme-hybrid-sim: --fit %s\n", line);
        g_free(line);
    }
    if (nh_prio_lat_marked(prio)) {
        json_object_set_object_member(root, "priority", nh_prio_lat_json(prio, !opt_no_priority));
    }
    g = json_generator_new();
    json_generator_set_pretty(g, opt_json);
    json_generator_set_root(g, json_parser_get_root(p));
    out = json_generator_to_data(g, NULL);
    g_object_unref(g);
    g_object_unref(p);
    g_free(stats);
    return out;
}

/* Timestamps that go backwards: say how many, and what the replay does with them. */
static void warn_backwards(const Scan *scan)
{
    if (scan->backwards && !opt_qd) {
        fprintf(stderr, "nvme-hybrid-sim: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                " requests (%.1f%%) have a time below the latest one before them: %s\n",
                scan->backwards, scan->nreq, 100.0 * scan->backwards / scan->nreq,
                opt_sort ? "replayed in time order (--sort)"
                : "each was issued at that latest time (--sort replays in time order)");
    }
}

/*
 * The engine of the replay.  With no --capacity (nor one --fit found) the highest byte the trace
 * touches sets the capacity, rounded up to a GiB unless that passes 2^64 (the engine refuses
 * such a size).
 */
static void warn_dropped(const char *key, const char *why, void *preset)
{
    fprintf(stderr, "nvme-hybrid-sim: preset %s's %s dropped (was %s)\n", (const char *)preset,
            key, why);
}

static NhEngine *engine_for(const NhConfig *cfg, uint64_t *capacity, uint64_t max_end, GError **err)
{
    NhEngine *eng;
    bool given = *capacity;

    if (!given) {
        *capacity = max_end > UINT64_MAX - ((1ull << 30) - 1) ? max_end
                    : MAX(1ull << 30, (max_end + (1ull << 30) - 1) & ~((1ull << 30) - 1));
    }
    eng = nh_engine_new(cfg, *capacity, err);
    if (!eng && !given) {
        g_prefix_error(err, "the highest byte the trace touches sets the capacity "
                       "(--capacity or --fit set another): ");
    }
    if (eng) {
        /* a preset's value the other keys refused is gone: say so where the run is read too */
        nh_config_foreach_dropped(nh_engine_config(eng), warn_dropped, (void *)cfg->preset);
    }
    return eng;
}

/* The device's keys from --device, checked for a zoned trace's needs. */
static int device_config(NhConfig *cfg)
{
    GError *err = NULL;

    nh_config_defaults(cfg);
    if (!nh_config_parse(cfg, opt_device, &err)) {
        return fail(err);
    }
    return check_zoned(cfg);
}

int main(int argc, char **argv)
{
    GOptionContext *ctx = g_option_context_new("- replay a block trace through the SSD engine");
    GError *err = NULL;
    NhConfig cfg;
    NhTrace *tr;
    Scan scan;
    NhEngine *eng;
    uint64_t capacity = 0, nreq = 0, base = 0, end_time = 0;
    uint64_t nbad;
    const char *bad_line;
    char *first_bad;
    gint64 t0;
    char *stats;
    int r;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        return fail(err);
    }
    g_option_context_free(ctx);
    if (opt_version) {
        printf("nvme-hybrid-sim %s\n", NH_VERSION);
        return 0;
    }
    if (opt_list_keys || opt_list_presets) {
        opt_list_keys ? list_keys() : list_presets();
        return 0;
    }
    r = check_options(&capacity);
    if (r) {
        return r;
    }
    r = device_config(&cfg);
    if (r) {
        return r;
    }
    if (opt_fit && !(fit = fit_new(nh_config_unit(&cfg), &err))) {
        return fail(err);
    }
    tr = nh_trace_open(opt_trace, opt_format, &err);
    if (!tr) {
        return fail(err);
    }
    nh_trace_skip_bad(tr, opt_skip_bad);
    if (!first_pass(tr, &scan, &err)) {
        return fail(err);
    }
    nreq = scan.nreq;
    warn_backwards(&scan);
    nbad = nh_trace_bad_lines(tr, &bad_line);
    first_bad = g_strdup(bad_line);
    if (nbad) {
        fprintf(stderr, "nvme-hybrid-sim: skipped %" G_GUINT64_FORMAT " malformed lines "
                "(first: %s)\n", nbad, first_bad);
    }
    if (fit && !nh_fit_finish(fit, &capacity, &err)) {
        return fail(err);
    }
    eng = engine_for(&cfg, &capacity, scan.max_end, &err);
    if (!eng || !nh_trace_rewind(tr, &err)) {
        return fail(err);
    }
    if (opt_fill > 0 && !fill(eng, capacity, &base, &err)) {
        return fail(err);
    }
    end_time = base;
    prio = nh_prio_lat_new();
    t0 = g_get_monotonic_time();
    fit_kept(&scan, nreq);
    if (!replay(eng, tr, &scan, nreq, base, &end_time, &err)) {
        return fail(err);
    }
    if (!opt_no_drain) {
        nh_engine_finish(eng, end_time);
    }
    stats = nh_engine_stats_json(eng, opt_json);
    warn_unwritten(stats);
    stats = add_members(stats, &scan, nbad);
    if (opt_json) {
        printf("%s\n", stats);
    } else {
        print_table(stats, (g_get_monotonic_time() - t0) / 1e6);
        if (nbad) {
            printf("trace       %" G_GUINT64_FORMAT " malformed lines skipped (first: %s)\n",
                   nbad, first_bad);
        }
    }
    g_free(stats);
    g_free(first_bad);
    nh_trace_close(tr);
    nh_fit_free(fit);
    nh_prio_lat_free(prio);
    nh_engine_free(eng);
    if (scan.sorted) {
        g_array_free(scan.sorted, TRUE);
    }
    kept_free(&scan);
    return 0;
}
