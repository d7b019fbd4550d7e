/*
 * zones.c - the zones part (part.h): the zoned region's keys, their checks, its counters and
 * the gauges of zones per state.  The region's model is ftl/zoned.c (contract in zones.h).
 */
#include "ftl.h"
#include "zones.h"

static const char *const layout_names[] = { "spread", "packed", NULL };
static const char *const finish_names[] = { "pad", "mark", NULL };

static const NhConfigKey zones_keys[] = {
    { "zones", NH_KEY_UINT, 0, 0, "0", 0, 1u << 20, NULL, false,
      "zoned region (NVMe ZNS, docs/zoned.md): number of zones after the conventional space, "
      "each a fixed set of erase blocks written in order, never garbage collected; 0 = none "
      "(ftl=page or dftl)" },
    { "zone-width", NH_KEY_UINT, 0, 0, "auto", 1, 1u << 16, NULL, true,
      "planes a zone's blocks lie on (its pages are striped over them, so its bandwidth and "
      "which zones share dies follow); must divide the planes of the device; auto = every "
      "plane" },
    { "zone-layout", NH_KEY_ENUM, 0, 0, "spread", 0, 0, layout_names, false,
      "which planes a zone narrower than the device takes: spread (consecutive in the write "
      "striping order: one per channel first) or packed (consecutive plane numbers: the "
      "planes of one die, then the next die of the chip)" },
    { "zone-blocks", NH_KEY_UINT, 0, 0, "1", 1, 1u << 16, NULL, false,
      "blocks per plane of a zone: its capacity is zone-width * zone-blocks * pages pages" },
    { "zone-max-open", NH_KEY_UINT, 0, 0, "0", 0, 1u << 20, NULL, false,
      "zones open at once (Max Open Resources); 0 = no limit" },
    { "zone-max-active", NH_KEY_UINT, 0, 0, "0", 0, 1u << 20, NULL, false,
      "zones open or closed at once (Max Active Resources); 0 = no limit" },
    { "zone-finish", NH_KEY_ENUM, 0, 0, "pad", 0, 0, finish_names, false,
      "what Zone Finish does to the flash: pad (programs the rest of every block the zone "
      "has started, each page a tPROG, so no block stays open) or mark (programs only the "
      "host data still staged; the zone is full, its unwritten pages stay erased)" },
    { NULL },
};

enum { K_ZONES, K_WIDTH, K_LAYOUT, K_BLOCKS, K_MAX_OPEN, K_MAX_ACTIVE, K_FINISH };

static uint64_t zoned_model_count(const void *model, NhZoneState st)
{
    return model ? nh_zoned_count(model, st) : 0;
}

#define GAUGE(fn, st) \
    static uint64_t fn(const struct NhNand *n, const void *model) \
    { \
        (void)n; \
        return zoned_model_count(model, st); \
    }
GAUGE(g_empty, NH_ZONE_EMPTY)
GAUGE(g_imp_open, NH_ZONE_IMP_OPEN)
GAUGE(g_exp_open, NH_ZONE_EXP_OPEN)
GAUGE(g_closed, NH_ZONE_CLOSED)
GAUGE(g_full, NH_ZONE_FULL)
GAUGE(g_read_only, NH_ZONE_READ_ONLY)
GAUGE(g_offline, NH_ZONE_OFFLINE)
#undef GAUGE

/* In the order of zones.h's NH_ZC_*, then the gauges. */
static const NhStat zones_counters[] = {
    { .path = "zones.opens" },
    { .path = "zones.implicit_opens" },
    { .path = "zones.closes" },
    { .path = "zones.implicit_closes" },
    { .path = "zones.finishes" },
    { .path = "zones.resets" },
    { .path = "zones.offlines" },
    { .path = "zones.appends" },
    { .path = "zones.finish_pad_pages" },
    { .path = "zones.reset_erases" },
    { .path = "zones.reset_ns" },
    { .path = "zones.finish_ns" },
    { .path = "zones.worn_read_only" },
    { .path = "zones.lost_bytes" },
    { .path = "zones.refused" },
    { "zones.state.empty", NH_STAT_NOW, .now = g_empty },
    { "zones.state.implicitly_opened", NH_STAT_NOW, .now = g_imp_open },
    { "zones.state.explicitly_opened", NH_STAT_NOW, .now = g_exp_open },
    { "zones.state.closed", NH_STAT_NOW, .now = g_closed },
    { "zones.state.full", NH_STAT_NOW, .now = g_full },
    { "zones.state.read_only", NH_STAT_NOW, .now = g_read_only },
    { "zones.state.offline", NH_STAT_NOW, .now = g_offline },
    { .path = NULL },
};

static void zones_decode(const NhPartIn *in, void *settings)
{
    NhZonesSettings *s = settings;
    const NhConfig *c = in->cfg;
    uint32_t npu = c->channels * c->ways * c->dies * c->planes;

    s->zones = (uint32_t)in->keys[K_ZONES];
    s->width = in->keys[K_WIDTH] ? (uint32_t)in->keys[K_WIDTH] : npu;
    s->layout = (NhZoneLayout)in->keys[K_LAYOUT];
    s->blocks_per_zone = (uint32_t)in->keys[K_BLOCKS];
    s->max_open = (uint32_t)in->keys[K_MAX_OPEN];
    s->max_active = (uint32_t)in->keys[K_MAX_ACTIVE];
    s->finish = (NhZoneFinish)in->keys[K_FINISH];
    s->groups = s->width && s->width <= npu ? npu / s->width : 1;
    s->plane_blocks = s->zones ? (s->zones + s->groups - 1) / s->groups * s->blocks_per_zone : 0;
}

static uint32_t zones_needs(const void *settings)
{
    const NhZonesSettings *s = settings;
    return s->zones ? NH_FTL_ZONES : 0;
}

static bool zones_check(const NhPartIn *in, const void *settings, const void *const *all,
                        GError **errp)
{
    const NhZonesSettings *s = settings;
    const NhConfig *c = in->cfg;
    uint32_t npu = c->channels * c->ways * c->dies * c->planes;

    (void)all;
    if (!s->zones) {
        return true;
    }
    if (in->missing) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "zones: needs an FTL whose blocks can "
                    "leave a range of every plane to the zones (ftl=page or dftl), got ftl=%s",
                    c->ftl);
        return false;
    }
    if (nh_config_sub(c) > 1) {
        /* a zone's pages are programmed one program unit at a time from its write pointer
         * (zoned.c), which knows no units smaller than a flash page.  map-unit's value as the
         * key spells it, and no other key=value, so that a preset's map-unit this refuses is
         * the one found and dropped (nh_config_settle) */
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "zones: a zoned region needs map-unit=auto "
                    "(got map-unit=%uK, smaller than the %uK flash page)", c->map_unit >> 10,
                    c->page_size >> 10);
        return false;
    }
    if (s->width > npu || npu % s->width) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "zone-width: %u planes do not divide the "
                    "device's %u planes (channels * ways * dies * planes)", s->width, npu);
        return false;
    }
    if (s->max_open > s->zones || s->max_active > s->zones) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "zone-max-%s: %u, more than the %u zones",
                    s->max_open > s->zones ? "open" : "active",
                    MAX(s->max_open, s->max_active), s->zones);
        return false;
    }
    if (s->max_active && s->max_open > s->max_active) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "zone-max-open: %u with zone-max-active=%u;"
                    " an open zone is active, so at most %u", s->max_open, s->max_active,
                    s->max_active);
        return false;
    }
    return true;
}

/* the zone table is in the state file's section of its own, shaped by the zone keys */
static bool zones_shapes_state(const void *settings)
{
    const NhZonesSettings *s = settings;
    return s->zones != 0;
}

uint32_t nh_zones_ftl_blocks(const NhParts *parts, uint32_t g_blocks)
{
    const NhZonesSettings *s = parts->settings[NH_PART_zones];
    return g_blocks - s->plane_blocks;
}

const NhPart nh_part_zones = {
    .name = "zones",
    .keys = zones_keys,
    .counters = zones_counters,
    .keys_after_ftls = true,
    .counters_after_ftls = true,
    .size = sizeof(NhZonesSettings),
    .decode = zones_decode,
    .needs = zones_needs,
    .check = zones_check,
    .shapes_state = zones_shapes_state,
};
