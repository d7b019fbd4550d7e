/*
 * engine.c - composes configuration, NAND model, FTL and statistics behind engine.h.
 *
 * The engine owns the host-side view: it checks requests, turns bytes into pages, counts host
 * commands and latencies, and applies latency=zero.  Everything about flash is the FTL's and the
 * NAND model's.
 */
#include "engine-priv.h"
#include "hybrid.h"
#include "placement.h"
#include "stage.h"
#include "zones.h"

#include <string.h>

static uint64_t logical_pages_of(uint64_t npages, uint32_t op)
{
    return npages * (100 - op) / 100;
}

/* The logical pages @capacity covers, without the rounding overflowing near 2^64 bytes (a
 * capacity of 2^64 - 1024 bytes covered 0 pages, and the first write ran off the tables). */
static uint64_t pages_of(uint64_t capacity, uint32_t page_size)
{
    return capacity / page_size + (capacity % page_size != 0);
}

static bool spare_ok(uint64_t nblocks, uint64_t npu, uint32_t pages, uint64_t lpages,
                     uint32_t spare)
{
    uint64_t used = (lpages + pages - 1) / pages;
    return nblocks >= used && nblocks - used >= (uint64_t)spare * npu;
}

static char *human(uint64_t bytes)
{
    static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double v = (double)bytes;
    int u = 0;

    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    return u ? g_strdup_printf("%.1f %s", v, units[u])
             : g_strdup_printf("%" G_GUINT64_FORMAT " bytes", bytes);
}

/* The fewest blocks per plane that hold @need logical pages after op with @spare spare blocks
 * per plane: from the estimate, a few steps either way (never counted up from 1). */
static uint64_t fewest_blocks(const NhConfig *cfg, uint64_t need, uint64_t npu, uint32_t spare)
{
    uint32_t upb = nh_config_unit_pages(cfg);
    uint64_t per_block_logical = npu * upb;
    uint64_t used = ((need + upb - 1) / upb + npu - 1) / npu;
    uint64_t blocks = MAX(need * 100 / ((uint64_t)(100 - cfg->op) * per_block_logical) + 1,
                          used + spare);

    while (blocks > 1 && logical_pages_of((blocks - 1) * per_block_logical, cfg->op) >= need
           && spare_ok((blocks - 1) * npu, npu, upb, need, spare)) {
        blocks--;
    }
    while (logical_pages_of(blocks * per_block_logical, cfg->op) < need ||
           !spare_ok(blocks * npu, npu, upb, need, spare)) {
        blocks++;
    }
    return blocks;
}

/*
 * The fewest blocks per plane that hold @capacity under @cfg (*min) and the spare blocks per
 * plane the FTL needs (*spare, 0 when no size suffices: gc-high=100).  Returns the physical
 * pages of *min blocks per plane, or, with both 0, of the capacity alone before any spare when
 * that passes 2^32 already: the FTL's spare rule would overflow on such a size.
 */
static uint64_t auto_size(const NhConfig *cfg, const NhParts *parts, uint64_t capacity,
                          uint32_t *spare, uint64_t *min)
{
    uint64_t npu = (uint64_t)cfg->channels * cfg->ways * cfg->dies * cfg->planes;
    uint64_t need = pages_of(capacity, nh_config_unit(cfg));
    const NhFtlOps *ops = nh_ftl_find(cfg->ftl);
    NhFtlEnv env = { .cfg = cfg, .lpages = need, .parts = parts,
                     .keys = nh_config_slots(cfg, ops->keys),
                     .shared_keys = nh_config_slots(cfg, ops->shared_keys) };

    *spare = 0;
    *min = 0;
    if (need * 100 / (100 - cfg->op) >= UINT32_MAX) {
        return need * 100 / (100 - cfg->op);
    }
    /* every plane needs spare blocks for the FTL's open blocks, its free-block watermarks and
     * invalid pages for GC to reclaim; the FTL says how many */
    *spare = ops->spare_blocks(&env, (uint32_t)npu);
    if (!*spare) {
        return 0;
    }
    *min = fewest_blocks(cfg, need, npu, *spare);
    return *min * npu * nh_config_unit_pages(cfg);
}

/* @capacity needs @pages physical pages, more than 2^32.  A larger page-size is advised only
 * if one holds the capacity within 2^32 pages (it was advised at 16K, and for 8 EiB, where
 * none can). */
static bool too_many_pages(const NhConfig *cfg, const NhParts *parts, uint64_t capacity,
                           uint64_t pages, GError **errp)
{
    /* with map-unit given, the unit is what the tables address: a larger one, up to the page */
    const char *key = cfg->map_unit ? "map-unit" : "page-size";
    uint32_t largest = cfg->map_unit ? cfg->page_size : NH_PAGE_SIZE_MAX, ps;
    char *want = human(capacity), *flash = human((uint64_t)NH_PAGE_SIZE_MAX << 32);

    for (ps = nh_config_unit(cfg) * 2; ps <= largest; ps *= 2) {
        NhConfig c = *cfg;
        uint32_t spare;
        uint64_t min;

        *(cfg->map_unit ? &c.map_unit : &c.page_size) = ps;
        c.blocks = 0;
        if (auto_size(&c, parts, capacity, &spare, &min) < UINT32_MAX && spare) {
            break;
        }
    }
    if (ps <= largest) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "%s: %s of capacity needs %" G_GUINT64_FORMAT " physical pages of "
                    "%u bytes, more than the 2^32 the mapping tables address; use %s="
                    "%uK%s", key, want, pages, nh_config_unit(cfg), key, ps / 1024,
                    cfg->blocks ? " with blocks=auto" : "");
    } else {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "capacity: %s needs %" G_GUINT64_FORMAT " physical pages of %u bytes, more "
                    "than the 2^32 the mapping tables address, at any page-size: a device has "
                    "at most %s of flash (2^32 pages of %u KiB), op and spare blocks included; "
                    "use a smaller capacity", want, pages, nh_config_unit(cfg), flash,
                    NH_PAGE_SIZE_MAX / 1024);
    }
    g_free(want);
    g_free(flash);
    return false;
}

/*
 * An explicit blocks below @min, the fewest that hold the capacity's @need logical pages after
 * op with @spare spare blocks per plane: say which of the two rules it breaks, with the
 * numbers, and advise only what would help (a lower op cannot give spare blocks).
 */
static bool too_few_blocks(const NhConfig *cfg, const NhPlacementSettings *pl, uint64_t capacity,
                           uint64_t need, uint64_t npu, uint32_t spare, uint64_t min,
                           GError **errp)
{
    uint64_t blocks = cfg->blocks, per_block_logical = npu * nh_config_unit_pages(cfg);
    uint64_t data = (need + per_block_logical - 1) / per_block_logical;
    bool spare_fits = spare_ok(blocks * npu, npu, nh_config_unit_pages(cfg), need, spare);
    char *want = human(capacity);

    if (logical_pages_of(blocks * per_block_logical, cfg->op) < need) {
        char *have = human(logical_pages_of(blocks * per_block_logical, cfg->op) *
                           nh_config_unit(cfg));
        char *op_advice = NULL;
        uint32_t op = cfg->op;

        while (op > 1 && logical_pages_of(blocks * per_block_logical, op) < need) {
            op--;
        }
        if (spare_fits && logical_pages_of(blocks * per_block_logical, op) >= need) {
            op_advice = g_strdup_printf(", op=%u or less", op);
        }
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "blocks: %" G_GUINT64_FORMAT " blocks per plane give %s of logical space "
                    "after op=%u%%, less than the capacity %s; use blocks=%" G_GUINT64_FORMAT
                    " or more%s, or blocks=auto", blocks, have, cfg->op, want, min,
                    op_advice ? op_advice : "");
        g_free(op_advice);
        g_free(have);
    } else {
        uint32_t streams = pl->max_streams - 1;
        char *kept = streams ? g_strdup_printf(" (%u of them kept for the frontiers of "
                                               "physical streams 1..%u: fewer with a lower "
                                               "streams, none with streams=0)", streams,
                                               streams)
                             : g_strdup("");
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "blocks: %" G_GUINT64_FORMAT " blocks per plane leave %" G_GUINT64_FORMAT
                    " spare beyond the %" G_GUINT64_FORMAT " that hold the capacity %s, fewer "
                    "than the %u spare blocks per plane ftl=%s needs for its open blocks, free "
                    "blocks and room to clean%s (docs/engine.md, Geometry); use blocks=%"
                    G_GUINT64_FORMAT " or more, or blocks=auto, or a smaller capacity", blocks,
                    blocks - data, data, want, spare, cfg->ftl, kept, min);
        g_free(kept);
    }
    g_free(want);
    return false;
}

/* Fill in blocks=auto, or check an explicit value against the capacity. */
static bool resolve_geometry(NhConfig *cfg, const NhParts *parts, uint64_t capacity,
                             uint64_t *lpages, GError **errp)
{
    uint64_t npu = (uint64_t)cfg->channels * cfg->ways * cfg->dies * cfg->planes;
    uint64_t need = pages_of(capacity, nh_config_unit(cfg));
    uint64_t per_block_logical = npu * nh_config_unit_pages(cfg);
    uint64_t blocks, min, pages;
    uint32_t spare;

    if (capacity == 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "capacity: must be larger than 0");
        return false;
    }
    /* the fewest blocks that hold the capacity: refused here if even they break a rule */
    pages = auto_size(cfg, parts, capacity, &spare, &min);
    if (pages >= UINT32_MAX) {
        return too_many_pages(cfg, parts, capacity, pages, errp);
    }
    if (!spare) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "gc-high: %u%% of the spare blocks kept free leaves GC no block with invalid "
                    "pages to reclaim; use less than 100", cfg->gc_high);
        return false;
    }
    if (min > NH_BLOCKS_MAX) {
        char *want = human(capacity);
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "blocks: %s of capacity needs %" G_GUINT64_FORMAT " blocks per plane, more "
                    "than the %" G_GUINT64_FORMAT " a plane may have; use more pages per block "
                    "(pages), larger pages (page-size) or more planes (channels, ways, dies, "
                    "planes)", want, min, (uint64_t)NH_BLOCKS_MAX);
        g_free(want);
        return false;
    }
    blocks = cfg->blocks ? cfg->blocks : min;
    if (blocks < min) {
        return too_few_blocks(cfg, parts->settings[NH_PART_placement], capacity, need, npu,
                              spare, min, errp);
    }
    if (blocks * per_block_logical >= UINT32_MAX) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "blocks: %" G_GUINT64_FORMAT " blocks per plane make %" G_GUINT64_FORMAT
                    " physical pages, more than the 2^32 the mapping tables address; use "
                    "blocks=%" G_GUINT64_FORMAT " or fewer (or blocks=auto)", blocks,
                    blocks * per_block_logical, (UINT32_MAX - 1) / per_block_logical);
        return false;
    }
    cfg->blocks = (uint32_t)blocks;
    *lpages = need;
    return true;
}

/* The geometry with the zones: the FTL's blocks resolved for the capacity as without them
 * (an explicit blocks less the zones'), then the zones' blocks added to every plane. */
static bool resolve_with_zones(NhConfig *cfg, const NhParts *parts, uint64_t capacity,
                               uint64_t *lpages, GError **errp)
{
    const NhZonesSettings *zs = parts->settings[NH_PART_zones];
    uint32_t zb = zs->plane_blocks;
    uint64_t npu = (uint64_t)cfg->channels * cfg->ways * cfg->dies * cfg->planes;

    if (cfg->blocks && cfg->blocks <= zb) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "blocks: %u blocks per plane leave none to "
                    "the conventional space after the %u the zones take (zones, zone-width, "
                    "zone-blocks); use more, or blocks=auto", cfg->blocks, zb);
        return false;
    }
    cfg->blocks -= cfg->blocks ? zb : 0;
    if (!resolve_geometry(cfg, parts, capacity, lpages, errp)) {
        if (zb) {
            g_prefix_error(errp, "with the zones' %u blocks per plane set aside: ", zb);
        }
        return false;
    }
    if ((uint64_t)cfg->blocks + zb > NH_BLOCKS_MAX ||
        ((uint64_t)cfg->blocks + zb) * npu * nh_config_unit_pages(cfg) >= UINT32_MAX) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "zones: %u zones of %u blocks on each of "
                    "%u planes need %u blocks per plane besides the conventional space's %u: "
                    "more than a plane (%u) or the 2^32 pages the mapping tables address "
                    "allow; use fewer zones or smaller ones", zs->zones, zs->blocks_per_zone,
                    zs->width, zb, cfg->blocks, NH_BLOCKS_MAX);
        return false;
    }
    cfg->blocks += zb;
    return true;
}

/* What the geometry offers: the conventional blocks after op, the zones' blocks whole (a zone
 * has no over-provisioning: nothing is ever collected there). */
static uint64_t logical_bytes_of(const NhEngine *eng)
{
    const NhGeometry *g = &eng->nand->g;
    uint64_t conv = (uint64_t)nh_zones_ftl_blocks(&eng->parts, g->blocks) * g->npu * g->pages;
    uint64_t zoned = g->npages - conv;

    return (logical_pages_of(conv, eng->cfg.op) + zoned) * g->page_size;
}

/* The write buffer's view of what lies below it: the FTL, on the NAND timelines. */
static uint64_t sink_write(void *ctx, const NhFtlWrite *w, uint64_t now)
{
    NhEngine *eng = ctx;
    return eng->ops->write(eng->ftl, w, now);
}

static uint64_t sink_read(void *ctx, uint64_t lpn, uint64_t npages, uint64_t now)
{
    NhEngine *eng = ctx;
    return eng->ops->read(eng->ftl, lpn, npages, now);
}

static bool sink_is_mapped(void *ctx, uint64_t lpn)
{
    NhEngine *eng = ctx;
    return lpn < eng->lpages && eng->ops->is_mapped(eng->ftl, lpn);
}

static bool sink_in_log(void *ctx, uint64_t lbn)
{
    NhEngine *eng = ctx;
    return eng->ops->in_log && eng->ops->in_log(eng->ftl, lbn);
}

/* A write buffer (a policy; "none" has none) or a read cache, or neither. */
static void create_buffer(NhEngine *eng)
{
    const NhBufPolicy *pol = nh_buf_find(eng->cfg.buffer);
    NhBufEnv env = {
        .cfg = &eng->cfg,
        .stats = &eng->stats,
        .sink = { eng, sink_write, sink_read, sink_is_mapped, sink_in_log, NULL },
        .lpages = eng->lpages,
        .log_blocks = nh_ftl_log_blocks(nh_config_slots(&eng->cfg, hy_keys)[0], &eng->nand->g,
                                        eng->lpages),
        .t_read = eng->nand->t.t_read,
        .t_prog = eng->nand->t.t_prog,
        .t_erase = eng->nand->t.t_erase,
    };

    if (pol || eng->cfg.cache_size) {
        env.counters = nh_stats_policy_counters(&eng->stats, pol ? pol->counters : NULL);
        env.keys = pol ? nh_config_slots(&eng->cfg, pol->keys) : NULL;
        eng->buf = nh_buf_new(&env);
    }
}

NhFtlEnv nh_engine_ftl_env(NhEngine *eng)
{
    return (NhFtlEnv){
        .cfg = &eng->cfg,
        .nand = eng->nand,
        .stats = &eng->stats,
        .lpages = eng->lpages,
        .counters = nh_stats_policy_counters(&eng->stats, eng->ops->counters),
        .keys = nh_config_slots(&eng->cfg, eng->ops->keys),
        .shared_keys = nh_config_slots(&eng->cfg, eng->ops->shared_keys),
        .parts = &eng->parts,
    };
}

/* The parts' settings decoded for @c, and their counters' slots. */
static void decode_parts(NhEngine *eng, const NhConfig *c)
{
    nh_parts_decode(c, eng->settings);
    for (size_t i = 0; i < NH_PARTS; i++) {
        eng->parts.settings[i] = eng->settings[i];
        eng->parts.counters[i] = nh_stats_policy_counters(&eng->stats, nh_parts[i]->counters);
    }
}

NhEngine *nh_engine_new(const NhConfig *cfg, uint64_t capacity, GError **errp)
{
    NhEngine *eng;
    NhFtlEnv env;
    NhConfig c = *cfg;
    uint64_t lpages;

    if (!nh_config_settle(&c, errp)) {
        return NULL;
    }
    eng = g_new0(NhEngine, 1);
    eng->link_out = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    eng->link_in = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    decode_parts(eng, &c);
    if (!resolve_with_zones(&c, &eng->parts, capacity, &lpages, errp)) {
        nh_engine_free(eng);
        return NULL;
    }
    eng->cfg = c;
    eng->capacity = capacity;
    eng->lpages = lpages;
    eng->ops = nh_ftl_find(c.ftl);
    eng->nand = nh_nand_new(&eng->cfg, &eng->stats, &eng->parts);
    eng->logical_bytes = logical_bytes_of(eng);
    env = nh_engine_ftl_env(eng);
    eng->ftl = eng->ops->create(&env, errp);
    if (!eng->ftl) {
        nh_engine_free(eng);
        return NULL;
    }
    create_buffer(eng);
    nh_engine_zoned_create(eng);
    return eng;
}

void nh_engine_free(NhEngine *eng)
{
    if (eng) {
        nh_buf_free(eng->buf);
        nh_zoned_free(eng->zoned);
        if (eng->ftl) {
            eng->ops->destroy(eng->ftl);
        }
        nh_nand_free(eng->nand);
        nh_parts_free(eng->settings);
        g_array_unref(eng->link_out);
        g_array_unref(eng->link_in);
        g_free(eng);
    }
}

const NhConfig *nh_engine_config(const NhEngine *eng)
{
    return &eng->cfg;
}

uint64_t nh_engine_program_bytes(const NhEngine *eng)
{
    return (uint64_t)eng->nand->wl * eng->nand->g.page_size;
}

uint64_t nh_engine_stripe_bytes(const NhEngine *eng)
{
    return nh_engine_program_bytes(eng) * eng->nand->g.npu;
}

uint64_t nh_engine_logical_capacity(const NhEngine *eng)
{
    return eng->logical_bytes;
}

static bool check_range(const NhEngine *eng, const NhRequest *req, GError **errp)
{
    if (req->length == 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE, "request has zero length");
        return false;
    }
    if (req->offset >= eng->capacity || req->length > eng->capacity - req->offset) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE,
                    "request [%" G_GUINT64_FORMAT ", +%" G_GUINT64_FORMAT ") is outside the "
                    "logical space of %" G_GUINT64_FORMAT " bytes",
                    req->offset, req->length, eng->capacity);
        return false;
    }
    /* stream 0 is always accepted: the limit is a key looked up by name (9% of a replay) */
    if (req->stream && req->stream > nh_engine_stream_limit(eng)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE,
                    "stream %u is above the %u host streams the device accepts (streams)",
                    req->stream, nh_engine_stream_limit(eng));
        return false;
    }
    return true;
}

uint32_t nh_engine_stream_limit(const NhEngine *eng)
{
    const NhPlacementSettings *pl = eng->settings[NH_PART_placement];

    return eng->ops->features & NH_FTL_PLACEMENT ? pl->host_streams : 0;
}

uint32_t nh_engine_stream_fronts(const NhEngine *eng)
{
    const NhPlacementSettings *pl = eng->settings[NH_PART_placement];

    return nh_engine_stream_limit(eng) ? pl->max_streams : 0;
}

NhPlacementAsked nh_engine_placement_asked(const NhEngine *eng)
{
    const NhPlacementSettings *pl = eng->settings[NH_PART_placement];

    return (NhPlacementAsked){ .streams = pl->streams, .dstream = pl->map == NH_MAP_DSTREAM };
}

void nh_engine_stream_release(NhEngine *eng, uint16_t id)
{
    if (id && id <= nh_engine_stream_limit(eng)) {
        eng->ops->stream_release(eng->ftl, id);
    }
}

uint64_t nh_engine_unit_bytes(const NhEngine *eng)
{
    const NhGeometry *g = &eng->nand->g;

    return eng->ops->stream_unit ? (uint64_t)g->pages * g->page_size * g->npu : 0;
}

static uint64_t stream_unit(NhEngine *eng, uint16_t tag, bool close)
{
    if (!eng->ops->stream_unit || !nh_engine_stream_limit(eng) ||
        tag > nh_engine_stream_limit(eng)) {
        return 0;
    }
    return eng->ops->stream_unit(eng->ftl, tag, close) * eng->nand->g.page_size;
}

uint64_t nh_engine_stream_unit_left(NhEngine *eng, uint16_t tag)
{
    return stream_unit(eng, tag, false);
}

uint64_t nh_engine_stream_unit_close(NhEngine *eng, uint16_t tag)
{
    return stream_unit(eng, tag, true);
}

void nh_engine_media_bytes(const NhEngine *eng, NhMediaBytes *m)
{
    const NhGeometry *g = &eng->nand->g;

    m->host_written = eng->stats.host_write_bytes;
    m->media_written = eng->stats.nand_page_programs * g->page_size;
    m->media_erased = eng->stats.nand_block_erases * g->pages * g->page_size;
}

/* Write the pages of [offset, offset+length), which the caller has checked, through the write
 * buffer if there is one and @buffered. */
static uint64_t do_write(NhEngine *eng, const NhRequest *req, uint64_t now, bool buffered)
{
    uint32_t ps = eng->nand->g.page_size;
    uint64_t end = req->offset + req->length;
    NhFtlWrite w = {
        .lpn = req->offset / ps,
        .npages = (end - 1) / ps - req->offset / ps + 1,
        .head_partial = req->offset % ps != 0,
        /* the end of the space is the end of its last page, even if capacity is not aligned */
        .tail_partial = end % ps != 0 && end < eng->capacity,
        .fua = req->flags & NH_REQ_FUA,
        .stream = req->stream,
    };
    if (buffered && eng->buf) {
        return nh_buf_write(eng->buf, &w, req->offset, req->length, now);
    }
    return eng->ops->write(eng->ftl, &w, now);
}

typedef struct LostCtx {
    NhEngine     *eng;
    NhEngineLostFn fn;
    void         *opaque;
} LostCtx;

/* One lost buffered page: report its lost sectors as byte runs; a page lost whole was never
 * programmed in its latest version and its data is gone, so the FTL forgets it too. */
static void engine_page_lost(void *opaque, uint64_t lpn, uint32_t mask)
{
    LostCtx *c = opaque;
    uint32_t spp = c->eng->nand->g.page_size / 512;
    uint32_t full = spp == 32 ? UINT32_MAX : (1u << spp) - 1;
    uint64_t base = lpn * c->eng->nand->g.page_size;

    for (uint32_t s = 0; s < spp; ) {
        uint32_t e = s;
        if (!(mask >> s & 1)) {
            s++;
            continue;
        }
        while (e < spp && mask >> e & 1) {
            e++;
        }
        c->fn(c->opaque, base + s * 512ull, (e - s) * 512ull);
        s = e;
    }
    if ((mask & full) == full) {
        c->eng->ops->trim(c->eng->ftl, lpn, 1, c->eng->last_now);
    }
}

/* One lost staged page (stage-volatile): all its bytes; the FTL kept its earlier mapping. */
static void engine_staged_lost(void *opaque, uint64_t lpn)
{
    LostCtx *c = opaque;
    uint64_t ps = c->eng->nand->g.page_size, base = lpn * ps;

    c->fn(c->opaque, base, MIN(ps, c->eng->capacity - base));
}

/* A zone's lost bytes, from the zoned space's start: the front end's offsets. */
static void zone_bytes_lost(void *opaque, uint64_t offset, uint64_t length)
{
    LostCtx *c = opaque;
    c->fn(c->opaque, c->eng->zone_base + offset, length);
}

void nh_engine_power_loss(NhEngine *eng, uint64_t now, NhEngineLostFn lost, void *opaque)
{
    LostCtx c = { eng, lost, opaque };

    if (eng->buf) {
        nh_buf_power_loss(eng->buf, engine_page_lost, &c);
    }
    if (eng->ops->power_loss) {
        eng->ops->power_loss(eng->ftl, engine_staged_lost, &c);
    }
    if (eng->zoned) {
        nh_zoned_power_loss(eng->zoned, now, zone_bytes_lost, &c);
    }
}

uint64_t nh_engine_drain(NhEngine *eng, uint64_t now)
{
    uint64_t t = now, tf;

    /* the buffer first: what it writes back may be staged by the FTL (stripe-merge) */
    if (eng->buf) {
        t = nh_buf_flush(eng->buf, now);
    }
    tf = eng->ops->flush(eng->ftl, now);
    return MAX(t, tf);
}

/*
 * The pages of a host read that were never written (nor are in the write buffer): counted,
 * and with unwritten-reads=flash each read from the flash as if the page had been written
 * before the trace began, in logical order on a new device: at the page the FTL would have put
 * it (its home hook).  Issued together, as the FTL issues a read's pages, so that reads on
 * different planes of a die share one tR: a read costs what it would once written.
 */
static uint64_t unwritten_reads(NhEngine *eng, uint64_t lpn, uint64_t n, uint64_t now)
{
    uint64_t done = now;

    nh_nand_batch_begin(eng->nand);
    for (uint64_t l = lpn; l < lpn + n; l++) {
        if ((eng->buf && nh_buf_holds_dirty(eng->buf, l)) || eng->ops->is_mapped(eng->ftl, l)) {
            continue;
        }
        eng->stats.host_unwritten_read_pages++;
        if (eng->cfg.unwritten_reads == NH_UNWRITTEN_FLASH) {
            uint64_t t = nh_nand_read_unwritten(eng->nand, eng->ops->home(eng->ftl, l), now);
            done = MAX(done, t);
        }
    }
    nh_nand_batch_end(eng->nand);
    return done;
}

uint64_t nh_engine_idle(NhEngine *eng, uint64_t now, uint64_t *victims)
{
    const NhStats *s = &eng->stats;
    uint64_t before = s->ftl_gc_blocks, work;

    /* each call reclaims one victim of a plane that needs it: until a call changes nothing.
     * Every plane below gc-high needs it, not only those below gc-low, or a trace after --fill
     * would start wherever the fill left a plane between the two and pay for the rest (a
     * plane at gc-low refills to gc-high in its first write: tpcc-small, 5,152 pages written,
     * 424 erases on one device and none on the next) */
    if (eng->ops->idle) {
        eng->ops->idle(eng->ftl);
    }
    do {
        work = s->ftl_gc_blocks + s->ftl_gc_page_copies + s->nand_block_erases;
        eng->ops->background(eng->ftl, now, false);
    } while (work != s->ftl_gc_blocks + s->ftl_gc_page_copies + s->nand_block_erases);
    *victims = s->ftl_gc_blocks - before;
    nh_nand_advance(eng->nand, UINT64_MAX);     /* an idle device runs all of it */
    return MAX(now, nh_nand_busy_until(eng->nand));
}

void nh_engine_set_conditioning(NhEngine *eng, const NhConditioning *c)
{
    eng->stats.cond_fill_bytes = c->fill_bytes;
    eng->stats.cond_seq_writes = c->seq_writes;
    eng->stats.cond_rand_writes = c->rand_writes;
    eng->stats.cond_rand_erases = c->rand_erases;
    eng->stats.cond_idle_gc_blocks = c->idle_gc_blocks;
    eng->stats.cond_steady = c->steady;
}

uint64_t nh_engine_finish(NhEngine *eng, uint64_t now)
{
    NhStats *s = &eng->stats;
    NhStats before = *s;
    /* a durable buffer too: what it holds would otherwise never be counted */
    uint64_t t = eng->buf ? nh_buf_destage_all(eng->buf, now) : now;
    uint64_t tf = eng->ops->flush(eng->ftl, now);   /* once: MAX() evaluates twice */

    /* the GC the scheduler still holds was counted when issued (programs, erases, waf): its
     * time is the device's too, so it runs now, as on a device that idles or powers off
     * cleanly, and the drain lasts until every die and bus is done */
    nh_nand_advance(eng->nand, UINT64_MAX);
    t = MAX(MAX(t, tf), nh_nand_busy_until(eng->nand));

    s->drain_destage_pages += s->buf_destage_pages - before.buf_destage_pages;
    s->drain_page_programs += s->nand_page_programs - before.nand_page_programs;
    s->drain_block_erases += s->nand_block_erases - before.nand_block_erases;
    s->drain_gc_page_copies += s->ftl_gc_page_copies - before.ftl_gc_page_copies;
    s->drain_time_ns += t - now;
    s->drain_die_busy_ns += s->nand_die_busy_ns - before.nand_die_busy_ns;
    s->drain_channel_busy_ns += s->nand_channel_busy_ns - before.nand_channel_busy_ns;
    return t;
}

void nh_engine_prefetch(const NhEngine *eng, uint64_t offset, bool deep)
{
    uint64_t lpn = offset / eng->nand->g.page_size;

    if (eng->ops->prefetch && lpn < eng->lpages) {
        eng->ops->prefetch(eng->ftl, lpn, deep);
    }
}

/* Each packet's payload carries 24 bytes more over the link: 4 of framing (STP, or STP and
 * END before Gen3), 2 of sequence number, a 4-dword header (NVMe hosts give 64-bit addresses)
 * and 4 of LCRC; no ECRC.  The acknowledgement and flow-control DLLPs of a direction's packets
 * travel the other way and are not charged (docs/presets.md, "The host link"). */
#define TLP_OVERHEAD 24

uint64_t nh_engine_link_time(const NhConfig *cfg, uint64_t bytes)
{
    uint64_t wire = bytes;

    if (cfg->host_mps) {
        wire += (bytes + cfg->host_mps - 1) / cfg->host_mps * TLP_OVERHEAD;
    }
    return (wire * 1000 + cfg->host_mbps - 1) / cfg->host_mbps;
}

/* @bytes over one direction of the host link (host-mbps) in the first gap from @ready long
 * enough for them; when they have crossed.  A gap, not the end of what is booked: a read
 * submitted later whose flash read ends sooner crosses first (booked after the others, reads
 * of a deep queue waited for each other's later transfers, 427k -> 315k IOPS at QD 32 on
 * pm9a3).  Transfers that ended before the latest arrival are dropped: nothing is booked
 * before it any more, so the list holds about what is in flight. */
uint64_t nh_engine_host_link(NhEngine *eng, GArray *link, uint64_t ready, uint64_t bytes,
                             guint *slot)
{
    uint64_t x, start = ready;
    guint i = 0, old = 0;

    *slot = G_MAXUINT;
    if (!eng->cfg.host_mbps) {
        return ready;
    }
    x = nh_engine_link_time(&eng->cfg, bytes);
    while (old < link->len / 2 && g_array_index(link, uint64_t, 2 * old + 1) <= eng->last_now) {
        old++;
    }
    g_array_remove_range(link, 0, 2 * old);
    for (; i < link->len / 2; i++) {
        uint64_t s = g_array_index(link, uint64_t, 2 * i), e = g_array_index(link, uint64_t,
                                                                            2 * i + 1);
        if (start + x <= s) {
            break;
        }
        start = MAX(start, e);
    }
    *slot = 2 * i;
    g_array_insert_val(link, 2 * i, start);
    x += start;
    g_array_insert_val(link, 2 * i + 1, x);
    return x;
}

/* A refused request gives back the link time host_link() booked for it at @slot. */
void nh_engine_host_unbook(GArray *link, guint slot)
{
    if (slot != G_MAXUINT) {
        g_array_remove_range(link, slot, 2);
    }
}

/* The model of a checked request on the conventional space; when it completes. */
static uint64_t model_request(NhEngine *eng, const NhRequest *req, uint64_t now)
{
    uint32_t ps = eng->nand->g.page_size;
    uint64_t t = now;

    switch (req->op) {
    case NH_OP_READ: {
        uint64_t lpn = req->offset / ps, n = (req->offset + req->length - 1) / ps - lpn + 1, tu;
        t = eng->buf ? nh_buf_read(eng->buf, lpn, n, req->offset, req->length, now)
                     : eng->ops->read(eng->ftl, lpn, n, now);
        tu = unwritten_reads(eng, lpn, n, now);     /* once: MAX() evaluates twice */
        return MAX(t, tu);
    }
    case NH_OP_WRITE:
        return do_write(eng, req, now, true);
    case NH_OP_TRIM: {
        /* only whole pages are deallocated; a partly covered page still holds live data */
        uint64_t end = req->offset + req->length;
        uint64_t first = (req->offset + ps - 1) / ps;
        uint64_t last = end == eng->capacity ? eng->lpages : end / ps;
        if (last > first) {
            if (eng->buf) {
                nh_buf_trim(eng->buf, first, last - first);
            }
            t = eng->ops->trim(eng->ftl, first, last - first, now);
        }
        return t;
    }
    case NH_OP_FLUSH:
        return nh_engine_drain(eng, now);
    }
    return t;
}

void nh_engine_count_host(NhEngine *eng, const NhRequest *req, uint64_t now, uint64_t t)
{
    uint32_t ps = eng->nand->g.page_size;
    NhStats *s = &eng->stats;

    switch (req->op) {
    case NH_OP_READ:
        s->host_read_cmds++;
        s->host_read_bytes += req->length;
        nh_hist_add(&s->lat_read, t - now);
        break;
    case NH_OP_WRITE:
        s->host_write_cmds++;
        s->host_write_bytes += req->length;
        s->host_write_pages += (req->offset + req->length - 1) / ps - req->offset / ps + 1;
        nh_hist_add(&s->lat_write, t - now);
        break;
    case NH_OP_TRIM:
        s->host_trim_cmds++;
        s->host_trim_bytes += req->length;
        break;
    case NH_OP_FLUSH:
        s->host_flush_cmds++;
        break;
    }
    if (req->flags & NH_REQ_PRIORITY && t > eng->priority_until) {
        eng->priority_until = t;
    }
    /* the first request since the reset (each kind was counted above) */
    if (s->host_read_cmds + s->host_write_cmds + s->host_trim_cmds + s->host_flush_cmds == 1) {
        s->run_first_ns = now;
    }
}

bool nh_engine_submit(NhEngine *eng, const NhRequest *req, uint64_t now, uint64_t *done,
                      GError **errp)
{
    uint64_t t = now, arrive;
    guint slot = G_MAXUINT;
    bool zoned = false;

    if (!nh_engine_check_now(now, errp)) {
        return false;
    }
    switch (req->op) {
    case NH_OP_READ:
    case NH_OP_WRITE:
    case NH_OP_TRIM:
        zoned = eng->zoned && req->offset >= eng->zone_base;
        if (zoned ? !nh_engine_zoned_range(eng, req, errp) : !check_range(eng, req, errp)) {
            return false;
        }
        break;
    case NH_OP_FLUSH:
        break;
    default:
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE, "unknown request type %d", (int)req->op);
        return false;
    }

    arrive = nh_engine_arrive(eng, now, req);

    /* the host link (host-mbps): a write's data crosses it before the device can program it,
     * a read's after the flash read */
    if (req->op == NH_OP_WRITE) {
        arrive = nh_engine_host_link(eng, eng->link_in, arrive, req->length, &slot);
    }
    if (!zoned) {
        t = model_request(eng, req, arrive);
    } else if (!nh_engine_zoned_submit(eng, req, arrive, &t, errp)) {
        nh_engine_host_unbook(eng->link_in, slot);
        return false;
    }
    if (req->op == NH_OP_READ) {
        t = nh_engine_host_link(eng, eng->link_out, t, req->length, &slot);
    }
    nh_engine_count_host(eng, req, now, t);
    nh_engine_complete(eng, now, t, done);
    return true;
}

bool nh_engine_check_now(uint64_t now, GError **errp)
{
    if (now > NH_TIME_MAX) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE, "arrival time %" G_GUINT64_FORMAT " ns is "
                    "after the 2^62 ns (146 years) the engine models: its completion time "
                    "could overflow", now);
        return false;
    }
    return true;
}

/* The controller's firmware time of @req (fw-*): a fixed delay, not a resource, so that
 * requests in flight do not wait for each other's (NVMeVirt, whose values the 970pro preset
 * takes, books it so too: added to the request's start, no dispatcher timeline). */
static uint64_t firmware_time(const NhConfig *c, const NhRequest *req)
{
    switch (req ? req->op : NH_OP_FLUSH) {
    case NH_OP_READ:
        return c->fw_read + (req->length > 4096 ? c->fw_read_large : 0);
    case NH_OP_WRITE:
        return c->fw_write + (req->length + 4095) / 4096 * c->fw_write_4k;
    default:
        return 0;
    }
}

uint64_t nh_engine_arrive(NhEngine *eng, uint64_t now, const NhRequest *req)
{
    uint32_t flags = req ? req->flags : 0;

    eng->last_now = now;
    nh_nand_advance(eng->nand, now);
    eng->ops->background(eng->ftl, now, (flags & NH_REQ_PRIORITY) || now < eng->priority_until);
    return now + firmware_time(&eng->cfg, req);
}

void nh_engine_complete(NhEngine *eng, uint64_t now, uint64_t t, uint64_t *done)
{
    *done = eng->cfg.latency == NH_LATENCY_ZERO ? now : t;
    eng->stats.run_last_ns = MAX(eng->stats.run_last_ns, *done);
}

bool nh_engine_is_mapped(const NhEngine *eng, uint64_t offset)
{
    if (eng->zoned && offset >= eng->zone_base) {
        uint64_t off = offset - eng->zone_base, z = off / eng->zoned->cap;
        return z < eng->zoned->s.zones && off % eng->zoned->cap < eng->zoned->z[z].wp;
    }
    if (offset >= eng->capacity) {
        return false;
    }
    return (eng->buf && nh_buf_holds_dirty(eng->buf, offset / eng->nand->g.page_size)) ||
           eng->ops->is_mapped(eng->ftl, offset / eng->nand->g.page_size);
}

bool nh_engine_volatile_write_cache(const NhEngine *eng)
{
    const NhStageSettings *st = eng->parts.settings[NH_PART_stage];

    return (eng->buf && nh_buf_is_volatile(eng->buf)) || st->lossy;
}

char *nh_engine_stats_json(const NhEngine *eng, bool pretty)
{
    return nh_stats_json(&eng->stats, &eng->cfg, &eng->parts, eng->nand, eng->capacity,
                         eng->logical_bytes, pretty);
}

void nh_engine_stats_reset(NhEngine *eng)
{
    memset(&eng->stats, 0, sizeof(eng->stats));
    if (eng->buf) {
        nh_buf_stats_restore(eng->buf);
    }
}

void nh_engine_wear(const NhEngine *eng, NhWear *wear)
{
    nh_nand_wear(eng->nand, &wear->erase_min, &wear->erase_max, &wear->erase_mean);
    wear->pe_cycles = eng->nand->t.pe_cycles;
}

/* Zones [offset, offset + length) reaches into hold data up to its end (a rebuild). */
static void mark_zones(NhEngine *eng, uint64_t offset, uint64_t length)
{
    const NhZoned *zd = eng->zoned;
    uint64_t off = offset - eng->zone_base, end = off + length;

    for (uint64_t z = off / zd->cap; z < zd->s.zones && z * zd->cap < end; z++) {
        nh_zoned_mark_written(eng->zoned, (uint32_t)z, MIN(end - z * zd->cap, zd->cap));
    }
}

void nh_engine_mark_written(NhEngine *eng, uint64_t offset, uint64_t length)
{
    NhStats *saved;
    NhRequest req = { .op = NH_OP_WRITE, .offset = offset, .length = length };
    bool zoned = eng->zoned && offset >= eng->zone_base;

    if ((!zoned && offset >= eng->capacity) || length == 0 || length > UINT64_MAX - offset) {
        return;
    }
    /* the model changes as if the host wrote; the counters and clocks do not */
    saved = g_memdup2(&eng->stats, sizeof(eng->stats));
    eng->nand->untimed = true;
    if (zoned) {
        mark_zones(eng, offset, length);
    } else {
        req.length = MIN(length, eng->capacity - offset);
        req.offset -= req.offset % eng->nand->g.page_size;
        req.length += offset - req.offset;
        do_write(eng, &req, eng->last_now, false);
        eng->ops->flush(eng->ftl, eng->last_now);  /* nothing left staged (stripe-merge) */
    }
    eng->nand->untimed = false;
    memcpy(&eng->stats, saved, sizeof(eng->stats));
    g_free(saved);
}

bool nh_engine_check(const NhEngine *eng, GError **errp)
{
    char *err;

    if (eng->nand->violations) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE,
                    "%" G_GUINT64_FORMAT " NAND discipline violations (program out of order, "
                    "twice without erase or of part of a flash page, or read of an unprogrammed "
                    "page)",
                    eng->nand->violations);
        return false;
    }
    err = eng->ops->check(eng->ftl);
    if (err) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s FTL: %s", eng->ops->name, err);
        g_free(err);
        return false;
    }
    err = eng->zoned ? nh_zoned_check(eng->zoned) : NULL;
    if (err) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "zones: %s", err);
        g_free(err);
        return false;
    }
    err = eng->buf ? nh_buf_check(eng->buf) : NULL;
    if (err) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s buffer: %s", eng->cfg.buffer, err);
        g_free(err);
        return false;
    }
    return true;
}
