/*
 * stats.c - the statistics table and the document built from it (contract in engine-priv.h).
 *
 * Every key of the document is one entry of the table: a counter of NhStats, a policy's or a
 * part's counter (its own table, composed in here), or a value derived when the document is
 * built.  The JSON
 * writer, the state file's counter section and the check of docs/statistics.md all walk it.
 */
#include "engine-priv.h"
#include "zones.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

uint64_t nh_hist_quantile(const NhHist *h, double q)
{
    uint64_t want, seen = 0;

    if (!h->count) {
        return 0;
    }
    /* nearest rank: the ceil(q n)-th smallest sample (the epsilon keeps 0.5 * 2 at 1) */
    want = (uint64_t)ceil(q * (double)h->count - 1e-9);
    if (want < 1) {
        want = 1;
    }
    for (unsigned i = 0; i < NH_HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= want) {
            uint64_t hi;
            if (i < 64) {
                hi = i;
            } else {
                unsigned e = (i - 64) / 32 + 6, m = (i - 64) % 32 + 32;
                unsigned shift = e - NH_HIST_SUB_BITS;
                hi = ((uint64_t)m << shift) + ((1ull << shift) - 1);
            }
            return hi < h->max ? hi : h->max;
        }
    }
    return h->max;
}

/* What derived values are computed from. */
typedef struct NhStatsCtx {
    const NhStats *s;
    const NhConfig *cfg;
    const NhParts *parts;
    const NhNand *nand;
    uint64_t capacity, logical_bytes;
    uint32_t wmin, wmax;
    double wmean;
} Ctx;

#define C(field) .how = NH_ENTRY_COUNTER, .offset = offsetof(NhStats, field)
#define H(field) .how = NH_ENTRY_HIST, .offset = offsetof(NhStats, field)
#define D(fn) .how = NH_ENTRY_DERIVED, .derive = (fn)
#define DF(fn) .how = NH_ENTRY_DERIVED_DOUBLE, .derive_double = (fn)

static uint64_t wear_min(const Ctx *c) { return c->wmin; }
static uint64_t wear_max(const Ctx *c) { return c->wmax; }
static double wear_mean(const Ctx *c) { return c->wmean; }
static uint64_t pe_cycles(const Ctx *c) { return c->nand->t.pe_cycles; }
static uint64_t capacity(const Ctx *c) { return c->capacity; }
static uint64_t logical(const Ctx *c) { return c->logical_bytes; }
static uint64_t physical(const Ctx *c) { return c->nand->g.npages * c->nand->g.page_size; }
static uint64_t pus(const Ctx *c) { return c->nand->g.npu; }
static uint64_t blocks_total(const Ctx *c) { return c->nand->g.nblocks; }
static uint64_t blocks_per_plane(const Ctx *c) { return c->nand->g.blocks; }
static uint64_t pages_total(const Ctx *c) { return c->nand->g.npages; }
static uint64_t t_read(const Ctx *c) { return c->nand->t.t_read; }
static uint64_t t_prog(const Ctx *c) { return c->nand->t.t_prog; }
static uint64_t t_erase(const Ctx *c) { return c->nand->t.t_erase; }
static uint64_t t_xfer(const Ctx *c) { return c->nand->t.t_xfer; }

static double waf(const Ctx *c)
{
    return c->s->host_write_pages
           ? (double)c->s->nand_page_programs / (double)c->s->host_write_pages : 0.0;
}

/* Bytes programmed per byte the host wrote: waf counts a page written whole or in part as one,
 * so a 4 KiB write on 16 KiB pages programs four times its bytes and counts 1 in both terms. */
static double waf_bytes(const Ctx *c)
{
    return c->s->host_write_bytes
           ? (double)c->s->nand_page_programs * c->nand->g.page_size /
             (double)c->s->host_write_bytes : 0.0;
}

static uint64_t run_cmds(const Ctx *c)
{
    return c->s->host_read_cmds + c->s->host_write_cmds + c->s->host_trim_cmds +
           c->s->host_flush_cmds;
}

static uint64_t run_duration(const Ctx *c)
{
    return run_cmds(c) ? c->s->run_last_ns - c->s->run_first_ns : 0;
}

static double run_iops(const Ctx *c)
{
    uint64_t ns = run_duration(c);
    return ns ? (double)run_cmds(c) * 1e9 / (double)ns : 0.0;
}

/* Busy time over the span the host saw, per die or channel, what the end-of-run drain booked
 * (the buffer's last contents, the GC still queued) left out: at saturation near 1 with and
 * without GC when scheduling is work-conserving, however much GC a short run leaves behind. */
static double utilisation(const Ctx *c, uint64_t busy, uint64_t units)
{
    uint64_t span = run_duration(c);
    return span ? (double)busy / ((double)span * (double)units) : 0.0;
}

static double die_utilisation(const Ctx *c)
{
    return utilisation(c, c->s->nand_die_busy_ns - c->s->drain_die_busy_ns, c->nand->g.ndies);
}

static double channel_utilisation(const Ctx *c)
{
    return utilisation(c, c->s->nand_channel_busy_ns - c->s->drain_channel_busy_ns,
                       c->nand->g.channels);
}

/* beyond the plane's share of the logical space, as blocks=auto counts them (the zones'
 * blocks are not the FTL's) */
static uint64_t spare_per_plane(const Ctx *c)
{
    const NhGeometry *g = &c->nand->g;
    uint64_t unit = (uint64_t)g->pages * g->npu;
    return nh_zones_ftl_blocks(c->parts, g->blocks) - ((c->capacity + g->page_size - 1) / g->page_size + unit - 1) / unit;
}

/* Host, NAND and the FTL counters every device has; the FTLs' own follow. */
static const NhStatsEntry device_stats[] = {
    { "host.read_cmds", C(host_read_cmds) },
    { "host.write_cmds", C(host_write_cmds) },
    { "host.trim_cmds", C(host_trim_cmds) },
    { "host.flush_cmds", C(host_flush_cmds) },
    { "host.read_bytes", C(host_read_bytes) },
    { "host.write_bytes", C(host_write_bytes) },
    { "host.trim_bytes", C(host_trim_bytes) },
    { "host.write_pages", C(host_write_pages) },
    { "host.unwritten_read_pages", C(host_unwritten_read_pages) },
    { "nand.page_reads", C(nand_page_reads) },
    { "nand.page_programs", C(nand_page_programs) },
    { "nand.block_erases", C(nand_block_erases) },
    { "nand.program_ops", C(nand_program_ops) },
    { "nand.read_ops", C(nand_read_ops) },
    { "nand.die_busy_ns", C(nand_die_busy_ns) },
    { "nand.channel_busy_ns", C(nand_channel_busy_ns) },
    { "ftl.gc_page_copies", C(ftl_gc_page_copies) },
    { "ftl.gc_blocks", C(ftl_gc_blocks) },
    { "ftl.gc_foreground_blocks", C(ftl_gc_foreground_blocks) },
    { "ftl.wl_page_copies", C(ftl_wl_page_copies) },
    { "ftl.wl_blocks", C(ftl_wl_blocks) },
    { "ftl.rmw_reads", C(ftl_rmw_reads) },
    { "ftl.merges.switch", C(ftl_merges_switch) },
    { "ftl.merges.partial", C(ftl_merges_partial) },
    { "ftl.merges.full", C(ftl_merges_full) },
};

/* Derived values, latency and the write buffer; the buffer policies' own counters follow. */
static const NhStatsEntry memory_stats[] = {
    { "waf", DF(waf) },
    { "waf_bytes", DF(waf_bytes) },
    { "conditioning.fill_bytes", C(cond_fill_bytes) },
    { "conditioning.seq_writes", C(cond_seq_writes) },
    { "conditioning.rand_writes", C(cond_rand_writes) },
    { "conditioning.rand_erases", C(cond_rand_erases) },
    { "conditioning.idle_gc_blocks", C(cond_idle_gc_blocks) },
    { "conditioning.steady", C(cond_steady) },
    { "run.first_ns", C(run_first_ns) },
    { "run.last_ns", C(run_last_ns) },
    { "run.duration_ns", D(run_duration) },
    { "run.iops", DF(run_iops) },
    { "run.die_utilisation", DF(die_utilisation) },
    { "run.channel_utilisation", DF(channel_utilisation) },
    { "drain.destage_pages", C(drain_destage_pages) },
    { "drain.page_programs", C(drain_page_programs) },
    { "drain.block_erases", C(drain_block_erases) },
    { "drain.gc_page_copies", C(drain_gc_page_copies) },
    { "drain.time_ns", C(drain_time_ns) },
    { "drain.die_busy_ns", C(drain_die_busy_ns) },
    { "drain.channel_busy_ns", C(drain_channel_busy_ns) },
    { "wear.erase_min", D(wear_min) },
    { "wear.erase_max", D(wear_max) },
    { "wear.erase_mean", DF(wear_mean) },
    { "wear.pe_cycles", D(pe_cycles) },
    { "latency_ns.read", H(lat_read) },
    { "latency_ns.write", H(lat_write) },
    { "buffer.write_hits", C(buf_write_hits) },
    { "buffer.read_hits", C(buf_read_hits) },
    { "buffer.evictions", C(buf_evictions) },
    { "buffer.destage_pages", C(buf_destage_pages) },
    { "buffer.destage_length", H(buf_destage_len) },
    { "buffer.padding_reads", C(buf_padding_reads) },
    { "buffer.merge_on_flush_pages", C(buf_merge_on_flush_pages) },
    { "buffer.metadata_bytes", C(buf_metadata_bytes) },
};

/* The read cache, the configuration and the geometry. */
static const NhStatsEntry closing_stats[] = {
    { "cache.read_hits", C(cache_read_hits) },
    { "cache.read_misses", C(cache_read_misses) },
    { "config", .how = NH_ENTRY_CONFIG },
    { "geometry.capacity_bytes", D(capacity) },
    { "geometry.logical_bytes", D(logical) },
    { "geometry.physical_bytes", D(physical) },
    { "geometry.parallel_units", D(pus) },
    { "geometry.blocks_total", D(blocks_total) },
    { "geometry.blocks_per_plane", D(blocks_per_plane) },
    { "geometry.spare_blocks_per_plane", D(spare_per_plane) },
    { "geometry.pages_total", D(pages_total) },
    { "geometry.t_read_ns", D(t_read) },
    { "geometry.t_prog_ns", D(t_prog) },
    { "geometry.t_erase_ns", D(t_erase) },
    { "geometry.t_xfer_ns", D(t_xfer) },
};

static void append_entries(GArray *a, const NhStatsEntry *e, size_t n)
{
    g_array_append_vals(a, e, (guint)n);
}

/* A policy's counters (@keys its key table) or part @part's (NH_PART_* + 1), given their
 * slots from *slot on. */
static void append_policy(GArray *a, const NhStat *t, const NhConfigKey *keys, size_t part,
                          const char *buffer, size_t *slot)
{
    for (size_t i = 0; t && t[i].path; i++) {
        NhStatsEntry e = { t[i].path, .how = t[i].kind == NH_STAT_NOW ? NH_ENTRY_NOW :
                                                                        NH_ENTRY_POLICY,
                           .offset = *slot, .stat = &t[i], .buffer = buffer, .keys = keys,
                           .part = part };
        g_assert(*slot + nh_stat_slots(&t[i]) <= NH_STATS_POLICY_SLOTS);
        *slot += nh_stat_slots(&t[i]);
        g_array_append_val(a, e);
    }
}

/* The parts' counters listed before the FTLs' or (@after) after them. */
static void append_parts(GArray *a, bool after, size_t *slot)
{
    for (size_t i = 0; i < NH_PARTS; i++) {
        if (nh_parts[i]->counters_after_ftls == after) {
            append_policy(a, nh_parts[i]->counters, NULL, i + 1, NULL, slot);
        }
    }
}

/* Composed once: the tables are constant, only the policies' and parts' slots are assigned. */
const NhStatsEntry *nh_stats_table(size_t *n)
{
    static NhStatsEntry *table;
    static size_t len;
    static gsize done;

    if (g_once_init_enter(&done)) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(NhStatsEntry));
        size_t slot = 0;

        append_entries(a, device_stats, G_N_ELEMENTS(device_stats));
        append_parts(a, false, &slot);
        for (size_t i = 0; nh_ftl_names[i]; i++) {
            const NhFtlOps *ftl = nh_ftl_find(nh_ftl_names[i]);
            append_policy(a, ftl->counters, ftl->keys, 0, NULL, &slot);
        }
        append_parts(a, true, &slot);
        append_entries(a, memory_stats, G_N_ELEMENTS(memory_stats));
        for (size_t i = 0; nh_buf_names[i]; i++) {
            const NhBufPolicy *pol = nh_buf_find(nh_buf_names[i]);
            if (pol) {
                append_policy(a, pol->counters, pol->keys, 0,
                              pol->counters_when_chosen ? pol->name : NULL, &slot);
            }
        }
        append_entries(a, closing_stats, G_N_ELEMENTS(closing_stats));
        len = a->len;
        table = (NhStatsEntry *)(void *)g_array_free(a, FALSE);
        g_once_init_leave(&done, 1);
    }
    *n = len;
    return table;
}

uint64_t *nh_stats_policy_counters(NhStats *s, const NhStat *counters)
{
    size_t n;
    const NhStatsEntry *t = nh_stats_table(&n);

    for (size_t i = 0; counters && i < n; i++) {
        if (t[i].stat == counters) {
            return &s->policy[t[i].offset];
        }
    }
    return NULL;
}

bool nh_stats_entry_shown(const NhStatsEntry *e, const NhConfig *cfg)
{
    return !e->buffer || !strcmp(e->buffer, cfg->buffer);
}

static void add_uint(JsonBuilder *b, const char *key, uint64_t v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, (gint64)v);
}

static void add_double(JsonBuilder *b, const char *key, double v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_double_value(b, v);
}

static void add_hist(JsonBuilder *b, const char *key, const NhHist *h)
{
    json_builder_set_member_name(b, key);
    json_builder_begin_object(b);
    add_uint(b, "count", h->count);
    add_double(b, "mean", h->count ? (double)h->sum / (double)h->count : 0.0);
    add_uint(b, "p50", nh_hist_quantile(h, 0.50));
    add_uint(b, "p99", nh_hist_quantile(h, 0.99));
    add_uint(b, "max", h->max);
    json_builder_end_object(b);
}

static void add_dropped(const char *key, const char *why, void *opaque)
{
    json_builder_set_member_name(opaque, key);
    json_builder_add_string_value(opaque, why);
}

static void add_config(JsonBuilder *b, const NhConfig *cfg)
{
    json_builder_set_member_name(b, "config");
    json_builder_begin_object(b);
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        char *v = nh_key_get(cfg, nh_config_key(i));
        json_builder_set_member_name(b, nh_config_key(i)->name);
        json_builder_add_string_value(b, v);
        g_free(v);
    }
    /* the preset's values the rest of the configuration refused (nh_config_settle) */
    json_builder_set_member_name(b, "preset-dropped");
    json_builder_begin_object(b);
    nh_config_foreach_dropped(cfg, add_dropped, b);
    json_builder_end_object(b);
    json_builder_end_object(b);
}

static void add_policy(JsonBuilder *b, const char *key, const NhStatsEntry *e, const Ctx *c)
{
    const NhStat *st = e->stat;
    const uint64_t *v = &c->s->policy[e->offset];
    const void *own;

    switch (st->kind) {
    case NH_STAT_COUNT:
        add_uint(b, key, *v);
        break;
    case NH_STAT_MILLI:
        add_double(b, key, ((double)*v + st->bias) / 1000.0);
        break;
    case NH_STAT_NOW:
        add_uint(b, key, st->now(c->nand, e->part ? c->parts->model[e->part - 1] : NULL));
        break;
    case NH_STAT_ARRAY:
        own = e->part ? c->parts->settings[e->part - 1] : nh_config_slots(c->cfg, e->keys);
        json_builder_set_member_name(b, key);
        json_builder_begin_object(b);
        for (uint32_t i = 0; i < st->n; i++) {
            char name[32];
            if (st->element(own, i, name, sizeof(name))) {
                add_uint(b, name, v[i]);
            }
        }
        json_builder_end_object(b);
        break;
    }
}

static void add_entry(JsonBuilder *b, const NhStatsEntry *e, const char *key, const Ctx *c)
{
    const char *field = (const char *)c->s + e->offset;

    switch (e->how) {
    case NH_ENTRY_COUNTER:
        add_uint(b, key, *(const uint64_t *)(const void *)field);
        break;
    case NH_ENTRY_HIST:
        add_hist(b, key, (const NhHist *)(const void *)field);
        break;
    case NH_ENTRY_POLICY:
    case NH_ENTRY_NOW:
        add_policy(b, key, e, c);
        break;
    case NH_ENTRY_DERIVED:
        add_uint(b, key, e->derive(c));
        break;

    case NH_ENTRY_DERIVED_DOUBLE:
        add_double(b, key, e->derive_double(c));
        break;
    case NH_ENTRY_CONFIG:
        add_config(b, c->cfg);
        break;
    }
}

/* Keep open exactly the objects of @path's parents: close what differs, open what is new.
 * "" closes them all. */
static const char *nest(JsonBuilder *b, GPtrArray *open, const char *path)
{
    char **parts = g_strsplit(path, ".", -1);
    guint depth = *path ? g_strv_length(parts) - 1 : 0, same = 0;
    const char *leaf = strrchr(path, '.') ? strrchr(path, '.') + 1 : path;

    while (same < open->len && same < depth && !strcmp(open->pdata[same], parts[same])) {
        same++;
    }
    while (open->len > same) {
        json_builder_end_object(b);
        g_ptr_array_remove_index(open, open->len - 1);
    }
    for (guint i = same; i < depth; i++) {
        json_builder_set_member_name(b, parts[i]);
        json_builder_begin_object(b);
        g_ptr_array_add(open, g_strdup(parts[i]));
    }
    g_strfreev(parts);
    return leaf;
}

char *nh_stats_json(const NhStats *s, const NhConfig *cfg, const NhParts *parts,
                    const NhNand *nand, uint64_t capacity, uint64_t logical_bytes, bool pretty)
{
    Ctx c = { s, cfg, parts, nand, capacity, logical_bytes, 0, 0, 0.0 };
    JsonBuilder *b = json_builder_new();
    GPtrArray *open = g_ptr_array_new_with_free_func(g_free);
    JsonGenerator *gen;
    JsonNode *root;
    size_t n;
    const NhStatsEntry *t = nh_stats_table(&n);
    char *out;

    nh_nand_wear(nand, &c.wmin, &c.wmax, &c.wmean);
    json_builder_begin_object(b);
    for (size_t i = 0; i < n; i++) {
        if (nh_stats_entry_shown(&t[i], cfg)) {
            add_entry(b, &t[i], nest(b, open, t[i].path), &c);
        }
    }
    nest(b, open, "");
    json_builder_end_object(b);
    g_ptr_array_unref(open);

    root = json_builder_get_root(b);
    gen = json_generator_new();
    json_generator_set_pretty(gen, pretty);
    json_generator_set_root(gen, root);
    out = json_generator_to_data(gen, NULL);
    json_node_unref(root);
    g_object_unref(gen);
    g_object_unref(b);
    return out;
}
