/*
 * placement.c - data placement for the page-mapped FTLs (contract in placement.h): the keys,
 * the counters, fixed mapping of host tags onto physical streams, and the glue to DStream.
 */
#include "placement.h"
#include "dstream.h"
#include "stage.h"

#include <string.h>

/* dftl's three frontiers and one per physical stream beyond the first (blocks.h) */
G_STATIC_ASSERT(NH_MAX_FRONT >= 3 + NH_MAX_STREAMS - 1);
/* front_stream[] holds a physical stream or NH_STREAM_GC */
G_STATIC_ASSERT(NH_STREAM_GC <= UINT8_MAX);

static const char *const map_names[] = { "fixed", "dstream", NULL };
static const char *const dsk_names[] = { "adaptive", "fixed", "per-element", NULL };

enum {      /* placement_keys, in order */
    KEY_STREAMS, KEY_STREAM_MAP, KEY_PHYSICAL_STREAMS, KEY_STREAM_BUFFER, KEY_DSTREAM_MEMORY,
    KEY_DSTREAM_PARTITIONS, KEY_DSTREAM_TIMESTAMP, KEY_DSTREAM_K,
};

static const NhConfigKey placement_keys[] = {
    { "streams", NH_KEY_UINT, 0, 0, "auto", 0, NH_MAX_HOST_STREAMS, NULL, true,
      "placement: host stream identifiers a write may carry (1..n); 0 = untagged writes only "
      "(placement off unless stream-map=dstream); auto = 16 where the device can place "
      "(ftl=page or dftl, stream-map=fixed, buffer=none, cache-size=0), else 0" },
    { "stream-map", NH_KEY_ENUM, 0, 0, "fixed", 0, 0, map_names, false,
      "placement: how tags map to physical streams: fixed (tag t on stream 1 + (t - 1) mod "
      "(physical-streams - 1), untagged on stream 0) or dstream (seed 003: logical streams "
      "clustered by update count, k adaptive)" },
    { "physical-streams", NH_KEY_UINT, 0, 0, "auto", 1, NH_MAX_STREAMS, NULL, true,
      "placement: physical streams (write frontiers); fixed: exactly this many (auto: streams "
      "+ 1, at most 64; host streams beyond share, ftl.placement.shared_streams); dstream: k "
      "at most (auto: 16)" },
    { "stream-buffer", NH_KEY_SIZE, 0, 0, "auto", 512, 1ull << 30, NULL, true,
      "dstream: device memory one open physical stream's write buffer takes (auto: seed 003's "
      "channels x ways x dies x planes x 2 pages x page-size x bits per cell)" },
    { "dstream-memory", NH_KEY_SIZE, 0, 0, "auto", 0, 1ull << 40, NULL, true,
      "dstream with ftl=dftl: device memory shared by the stream buffers and the mapping cache, "
      "which gets what k streams leave (auto: cmt-size + physical-streams x stream-buffer)" },
    { "dstream-partitions", NH_KEY_UINT, 0, 0, "200", 1, 4096, NULL, false,
      "dstream: logical streams of untagged writes, contiguous LBA partitions of equal size" },
    { "dstream-timestamp", NH_KEY_UINT, 0, 0, "auto", 1, 1u << 30, NULL, true,
      "dstream: host pages written between two clusterings (auto: pages, one block's worth)" },
    { "dstream-k", NH_KEY_ENUM, 0, 0, "adaptive", 0, 0, dsk_names, false,
      "dstream: how k moves at each timestamp: adaptive (seed 003's merge-or-add rule once, on "
      "the element farthest from its centroid), per-element (the rule for every logical stream "
      "in turn) or fixed (k stays physical-streams, the clustering still assigns logical streams "
      "each timestamp: the paper's N-stream baselines)" },
    { NULL },
};

static bool stream_key(const void *own, uint32_t i, char *key, size_t len)
{
    const NhPlacementSettings *set = own;

    if (i >= set->max_streams || !set->on) {
        return false;
    }
    g_snprintf(key, len, "%u", i);
    return true;
}

static bool copies_key(const void *own, uint32_t i, char *key, size_t len)
{
    const NhPlacementSettings *set = own;

    if (i == NH_STREAM_GC) {
        g_snprintf(key, len, "gc");
        return set->on;
    }
    return stream_key(own, i, key, len);
}

static bool host_stream_key(const void *own, uint32_t i, char *key, size_t len)
{
    const NhPlacementSettings *set = own;

    g_snprintf(key, len, "%u", i);
    return set->on && i <= set->host_streams;
}

static bool series_key(const void *own, uint32_t i, char *key, size_t len)
{
    const NhPlacementSettings *set = own;

    g_snprintf(key, len, "%u", i);
    return set->on && set->map == NH_MAP_DSTREAM;
}

static const NhStat placement_counters[] = {
    { .path = "ftl.placement.host_pages", .kind = NH_STAT_ARRAY, .n = NH_MAX_STREAMS,
      .element = stream_key },
    { .path = "ftl.placement.gc_copies", .kind = NH_STAT_ARRAY, .n = NH_MAX_STREAMS + 1,
      .element = copies_key },
    { .path = "ftl.placement.stream_pages", .kind = NH_STAT_ARRAY, .n = NH_MAX_HOST_STREAMS + 1,
      .element = host_stream_key },
    { .path = "ftl.placement.host_streams" },
    { .path = "ftl.placement.shared_streams" },
    { .path = "ftl.placement.open_streams" },
    { .path = "ftl.placement.releases" },
    { .path = "ftl.placement.k" },
    { .path = "ftl.placement.k_changes" },
    { .path = "ftl.placement.timestamps" },
    { .path = "ftl.placement.cmt_entries" },
    { .path = "ftl.placement.samples" },
    { .path = "ftl.placement.sample_stride" },
    { .path = "ftl.placement.k_series", .kind = NH_STAT_ARRAY, .n = NH_SERIES_MAX,
      .element = series_key },
    { .path = "ftl.placement.cmt_series", .kind = NH_STAT_ARRAY, .n = NH_SERIES_MAX,
      .element = series_key },
    { .path = NULL },
};

/* streams=auto: on wherever the check would let an explicit value through.  Not under
 * DStream, whose logical streams would grow by the host's (docs/placement.md). */
static bool can_place(const NhPartIn *in, NhStreamMap map)
{
    return (in->features & NH_FTL_PLACEMENT) && !strcmp(in->cfg->buffer, "none") &&
           !in->cfg->cache_size && map == NH_MAP_FIXED;
}

static uint32_t bits_per_cell(NhCell cell)
{
    static const uint32_t bits[] = {
        [NH_CELL_SLC] = 1, [NH_CELL_MLC] = 2, [NH_CELL_TLC] = 3, [NH_CELL_QLC] = 4,
        [NH_CELL_ZNAND] = 1,
    };
    return bits[cell];
}

/* The physical streams the FTL keeps frontiers for: 1 when placement is off. */
static uint32_t max_streams(const NhPlacementSettings *s, uint32_t asked)
{
    if (!s->on) {
        return 1;
    }
    if (asked) {
        return asked;
    }
    if (s->map == NH_MAP_DSTREAM) {
        return NH_DSTREAM_KMAX;
    }
    return MIN(s->host_streams + 1, NH_MAX_STREAMS);
}

static void placement_decode(const NhPartIn *in, void *settings)
{
    const NhConfig *cfg = in->cfg;
    NhPlacementSettings *s = settings;

    s->map = (NhStreamMap)in->keys[KEY_STREAM_MAP];
    s->streams = in->keys[KEY_STREAMS];
    if (s->streams == NH_CONFIG_AUTO) {
        s->host_streams = can_place(in, s->map) ? NH_AUTO_STREAMS : 0;
    } else {
        s->host_streams = (uint32_t)s->streams;
    }
    s->on = s->host_streams || s->map == NH_MAP_DSTREAM;
    s->max_streams = max_streams(s, (uint32_t)in->keys[KEY_PHYSICAL_STREAMS]);
    /* seed 003: channels x ways x planes x logical pages (2) x page size x bits per cell */
    s->stream_buffer = in->keys[KEY_STREAM_BUFFER] ? in->keys[KEY_STREAM_BUFFER] :
                       (uint64_t)cfg->channels * cfg->ways * cfg->dies * cfg->planes * 2 *
                       cfg->page_size * bits_per_cell(cfg->cell);
    s->dstream_memory = in->keys[KEY_DSTREAM_MEMORY];
    s->partitions = (uint32_t)in->keys[KEY_DSTREAM_PARTITIONS];
    s->timestamp = in->keys[KEY_DSTREAM_TIMESTAMP] ? in->keys[KEY_DSTREAM_TIMESTAMP] :
                   nh_config_unit_pages(cfg);
    s->k_rule = (NhKmeansRule)in->keys[KEY_DSTREAM_K];
}

static uint32_t placement_needs(const void *settings)
{
    const NhPlacementSettings *s = settings;

    return (s->on ? NH_FTL_PLACEMENT : 0) |
           (s->on && s->map == NH_MAP_DSTREAM && s->dstream_memory ? NH_FTL_CMT_RESIZE : 0);
}

static bool refuse(GError **errp, const char *key, const char *why, const NhConfig *cfg)
{
    g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: %s (ftl=%s, buffer=%s)", key, why,
                cfg->ftl, cfg->buffer);
    return false;
}

/* The first of the keys @mask names (bits by KEY_*) set to other than its default, NULL if
 * none. */
static const char *first_set(const NhPartIn *in, uint32_t mask)
{
    for (uint32_t i = 0; placement_keys[i].name; i++) {
        if ((mask & (1u << i)) && !nh_key_is_default(&placement_keys[i], in->keys[i])) {
            return placement_keys[i].name;
        }
    }
    return NULL;
}

/* With staging, a stream's buffer in the memory budget must hold what the stream stages: two
 * halves of one unit (stage.h).  auto always does (docs/placement.md, "Memory"). */
static bool stream_buffer_check(const NhConfig *cfg, const NhPlacementSettings *s,
                                const NhStageSettings *stage, GError **errp)
{
    uint64_t need = 2ull * stage->unit * nh_config_unit(cfg);

    if (s->stream_buffer < need) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "stream-buffer: %" G_GUINT64_FORMAT " bytes cannot hold one stream's "
                    "staging buffer with one-shot=%s, stripe-merge=%s (2 halves of %u pages of "
                    "%u bytes: %" G_GUINT64_FORMAT "); use stream-buffer=auto or at least that",
                    s->stream_buffer, cfg->one_shot == NH_ON ? "on" : "off",
                    stage->merge ? "on" : "off", stage->unit, nh_config_unit(cfg), need);
        return false;
    }
    return true;
}

static bool placement_check(const NhPartIn *in, const void *settings, const void *const *all,
                            GError **errp)
{
    enum {
        ONLY_ON = 1u << KEY_PHYSICAL_STREAMS | 1u << KEY_STREAM_BUFFER |
                  1u << KEY_DSTREAM_MEMORY | 1u << KEY_DSTREAM_PARTITIONS |
                  1u << KEY_DSTREAM_TIMESTAMP | 1u << KEY_DSTREAM_K,
        DS_ONLY = ONLY_ON & ~(1u << KEY_PHYSICAL_STREAMS),
    };
    const NhPlacementSettings *s = settings;
    const NhConfig *cfg = in->cfg;
    bool dstream = s->map == NH_MAP_DSTREAM;
    const char *key = dstream ? "stream-map" : "streams", *set;

    if (!s->on) {
        set = first_set(in, ONLY_ON);
        return !set || refuse(errp, set, "placement is off: set streams > 0 or "
                              "stream-map=dstream", cfg);
    }
    if (in->missing & NH_FTL_PLACEMENT) {
        return refuse(errp, key, "this FTL has no per-stream write frontiers (only ftl=page "
                      "and ftl=dftl place)", cfg);
    }
    if (strcmp(cfg->buffer, "none") || cfg->cache_size) {
        return refuse(errp, key, "placement with a write buffer or read cache is not modelled "
                      "(its destages carry no tag): use buffer=none, cache-size=0", cfg);
    }
    if (!dstream) {
        set = first_set(in, DS_ONLY);
        return !set || refuse(errp, set, "only stream-map=dstream uses it", cfg);
    }
    return stream_buffer_check(cfg, s, all[NH_PART_stage], errp) &&
           nh_dstream_check(cfg, s, in->missing, errp);
}

/* placement adds frontiers and its own section; off, the hash is what it always was */
static bool placement_shapes_state(const void *settings)
{
    const NhPlacementSettings *s = settings;
    return s->on;
}

/* Its keys and counters follow the FTLs' own, as before the registry: the order of the
 * configuration and the statistics document is the consumers' */
const NhPart nh_part_placement = {
    .name = "placement",
    .keys = placement_keys,
    .counters = placement_counters,
    .keys_after_ftls = true,
    .counters_after_ftls = true,
    .size = sizeof(NhPlacementSettings),
    .decode = placement_decode,
    .needs = placement_needs,
    .check = placement_check,
    .shapes_state = placement_shapes_state,
};

/* Fixed mapping: the physical stream of tag @tag among @k. */
static uint32_t fixed_stream(uint32_t k, uint16_t tag)
{
    return !tag || k == 1 ? 0 : 1 + (tag - 1u) % (k - 1);
}

/* Fixed mapping: the host streams 1..@n whose physical stream among @k also takes another
 * stream's writes (untagged ones included), which the host cannot tell apart (issue: streams=16
 * on 16 frontiers put streams 1 and 16 together). */
static uint64_t shared_streams(uint32_t k, uint32_t n)
{
    uint64_t shared = 0;

    for (uint32_t t = 1; t <= n; t++) {
        uint32_t s = fixed_stream(k, (uint16_t)t);
        bool alone = s != 0;
        for (uint32_t u = 1; alone && u <= n; u++) {
            alone = u == t || fixed_stream(k, (uint16_t)u) != s;
        }
        shared += !alone;
    }
    return shared;
}

NhPlacement *nh_placement_new(const NhFtlEnv *env, uint32_t host_front, uint32_t first_front)
{
    const NhPlacementSettings *set = env->parts->settings[NH_PART_placement];
    NhPlacement *p;

    if (!set->on) {
        return NULL;
    }
    p = g_new0(NhPlacement, 1);
    p->nstreams = set->max_streams;
    p->host_streams = set->host_streams;
    p->host_front = host_front;
    p->first_front = first_front;
    p->ctr = env->parts->counters[NH_PART_placement];
    p->open = g_new0(uint8_t, p->host_streams + 1);
    if (set->map == NH_MAP_DSTREAM) {
        p->ds = nh_dstream_new(set, env->lpages, p->nstreams);
    } else {
        p->shared = shared_streams(p->nstreams, p->host_streams);
    }
    p->ctr[NH_PC_HOST_STREAMS] = p->host_streams;
    p->ctr[NH_PC_SHARED] = p->shared;
    p->ctr[NH_PC_K] = nh_placement_k(p);
    return p;
}

void nh_placement_free(NhPlacement *p)
{
    if (p) {
        nh_dstream_free(p->ds);
        g_free(p->open);
        g_free(p);
    }
}

uint32_t nh_placement_k(const NhPlacement *p)
{
    return p->ds ? nh_dstream_k(p->ds) : p->nstreams;
}

uint32_t nh_placement_front_of(const NhPlacement *p, uint32_t s)
{
    return s ? p->first_front + s - 1 : p->host_front;
}

uint32_t nh_placement_stream_of(const NhPlacement *p, uint32_t front)
{
    if (front == p->host_front) {
        return 0;
    }
    if (front >= p->first_front && front < p->first_front + p->nstreams - 1) {
        return front - p->first_front + 1;
    }
    return NH_STREAM_GC;
}

/* One sample per timestamp while NH_SERIES_MAX fit; then every other one is dropped and the
 * stride doubles, so the series always spans the whole run. */
static void sample(NhPlacement *p)
{
    uint64_t *c = p->ctr, ts = ++c[NH_PC_TIMESTAMPS];

    c[NH_PC_STRIDE] = MAX(c[NH_PC_STRIDE], 1);
    if ((ts - 1) % c[NH_PC_STRIDE]) {
        return;
    }
    if (c[NH_PC_SAMPLES] == NH_SERIES_MAX) {
        for (uint32_t i = 0; i < NH_SERIES_MAX / 2; i++) {
            c[NH_PC_K_SERIES + i] = c[NH_PC_K_SERIES + 2 * i];
            c[NH_PC_CMT_SERIES + i] = c[NH_PC_CMT_SERIES + 2 * i];
        }
        memset(&c[NH_PC_K_SERIES + NH_SERIES_MAX / 2], 0, sizeof(*c) * NH_SERIES_MAX / 2);
        memset(&c[NH_PC_CMT_SERIES + NH_SERIES_MAX / 2], 0, sizeof(*c) * NH_SERIES_MAX / 2);
        c[NH_PC_SAMPLES] /= 2;
        c[NH_PC_STRIDE] *= 2;
        if ((ts - 1) % c[NH_PC_STRIDE]) {
            return;
        }
    }
    c[NH_PC_K_SERIES + c[NH_PC_SAMPLES]] = c[NH_PC_K];
    c[NH_PC_CMT_SERIES + c[NH_PC_SAMPLES]] = c[NH_PC_CMT_ENTRIES];
    c[NH_PC_SAMPLES]++;
}

static uint32_t dstream_page(NhPlacement *p, uint64_t lpn, uint16_t tag, bool overwrite)
{
    uint32_t k = nh_dstream_k(p->ds);
    bool ts;
    uint32_t s = nh_dstream_page(p->ds, lpn, tag, overwrite, &ts);

    if (!ts) {
        return s;
    }
    p->ctr[NH_PC_K] = nh_dstream_k(p->ds);
    if (p->ctr[NH_PC_K] != k) {
        p->ctr[NH_PC_K_CHANGES]++;
        if (p->k_changed) {
            p->cmt_entries = p->k_changed(p->ctx, (uint32_t)p->ctr[NH_PC_K]);
        }
    }
    p->ctr[NH_PC_CMT_ENTRIES] = p->cmt_entries;
    sample(p);
    return s;
}

uint32_t nh_placement_front(NhPlacement *p, uint64_t lpn, uint16_t tag, bool overwrite)
{
    uint32_t s;

    if (tag && !p->open[tag]) {
        p->open[tag] = 1;   /* implicitly opened by its first write */
        p->nopen++;
    }
    /* set again on every write, like the others here: a statistics reset zeroes them */
    p->ctr[NH_PC_OPEN] = p->nopen;
    p->ctr[NH_PC_K] = nh_placement_k(p);
    p->ctr[NH_PC_CMT_ENTRIES] = p->cmt_entries;
    p->ctr[NH_PC_HOST_STREAMS] = p->host_streams;
    p->ctr[NH_PC_SHARED] = p->shared;
    s = p->ds ? dstream_page(p, lpn, tag, overwrite) : fixed_stream(p->nstreams, tag);
    p->ctr[NH_PC_HOST_PAGES + s]++;
    p->ctr[NH_PC_STREAM_PAGES + tag]++;
    return nh_placement_front_of(p, s);
}

/* The physical stream tag @tag writes to now: nh_placement_front's rule without a page. */
static uint32_t stream_of_tag(const NhPlacement *p, uint16_t tag)
{
    if (p->ds) {
        return nh_dstream_stream_of_tag(p->ds, tag);
    }
    return fixed_stream(p->nstreams, tag);
}

uint64_t nh_placement_unit(const NhPlacement *p, NhBlocks *b, uint16_t tag, bool close)
{
    uint32_t front = nh_placement_front_of(p, stream_of_tag(p, tag));

    return close ? nh_blocks_front_close(b, front) : nh_blocks_front_left(b, front);
}

int nh_placement_page_stream(const NhPlacement *p, const NhBlocks *b, uint32_t ppn1)
{
    if (!ppn1 || !p) {
        return -1;
    }
    return (int)nh_placement_stream_of(p, b->blk[(ppn1 - 1) / b->pages].front);
}

void nh_placement_release(NhPlacement *p, uint16_t id)
{
    if (!id || id > p->host_streams || !p->open[id]) {
        return;
    }
    p->open[id] = 0;
    p->nopen--;
    p->ctr[NH_PC_OPEN] = p->nopen;
    p->ctr[NH_PC_RELEASES]++;
    if (p->ds) {
        nh_dstream_release(p->ds, id);
    }
}

/* Serialised form: the open flags as a bitmap of u32 words, then DStream's section. */
void nh_placement_save(const NhPlacement *p, GByteArray *o)
{
    for (uint32_t i = 0; i <= p->host_streams; i += 32) {
        uint32_t w = 0;
        for (uint32_t j = 0; j < 32 && i + j <= p->host_streams; j++) {
            w |= (uint32_t)p->open[i + j] << j;
        }
        nh_put32(o, w);
    }
    if (p->ds) {
        nh_dstream_save(p->ds, o);
    }
}

bool nh_placement_load(NhPlacement *p, NhReader *r)
{
    p->nopen = 0;
    for (uint32_t i = 0; i <= p->host_streams; i += 32) {
        uint32_t w;
        if (!nh_get32(r, &w)) {
            return false;
        }
        for (uint32_t j = 0; j < 32 && i + j <= p->host_streams; j++) {
            p->open[i + j] = (w >> j) & 1;
            p->nopen += p->open[i + j];
        }
    }
    if (p->open[0]) {
        return false;
    }
    if (p->ds && !nh_dstream_load(p->ds, r)) {
        return false;
    }
    p->ctr[NH_PC_K] = nh_placement_k(p);
    return true;
}
