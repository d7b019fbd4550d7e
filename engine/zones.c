/*
 * zones.c - the engine's zoned region (contract in engine.h, "Zoned region"): requests and
 * actions on it, checked against the space and passed to the zone model (ftl/zoned.c).
 */
#include "engine-priv.h"

void nh_engine_zoned_create(NhEngine *eng)
{
    const NhZonesSettings *s = eng->settings[NH_PART_zones];

    eng->zone_base = eng->lpages * eng->nand->g.page_size;
    if (s->zones) {
        eng->zoned = nh_zoned_new(s, eng->nand, &eng->stats, eng->parts.counters[NH_PART_zones],
                                  eng->nand->g.page_size,
                                  eng->cfg.unwritten_reads == NH_UNWRITTEN_FLASH);
        eng->parts.model[NH_PART_zones] = eng->zoned;
    }
}

static uint64_t zoned_end(const NhEngine *eng)
{
    return eng->zone_base + (uint64_t)eng->zoned->s.zones * eng->zoned->cap;
}

bool nh_engine_zoned_range(const NhEngine *eng, const NhRequest *req, GError **errp)
{
    if (req->length == 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE, "request has zero length");
        return false;
    }
    if (req->offset >= zoned_end(eng) || req->length > zoned_end(eng) - req->offset) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE, "request [%" G_GUINT64_FORMAT ", +%"
                    G_GUINT64_FORMAT ") is outside the zoned space [%" G_GUINT64_FORMAT ", %"
                    G_GUINT64_FORMAT ")", req->offset, req->length, eng->zone_base,
                    zoned_end(eng));
        return false;
    }
    /* engine.h's rule for every request; a tag within it means nothing to a zone */
    if (req->stream && req->stream > nh_engine_stream_limit(eng)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE, "stream %u is above the %u host streams the "
                    "device accepts (streams)", req->stream, nh_engine_stream_limit(eng));
        return false;
    }
    return true;
}

bool nh_engine_zoned_submit(NhEngine *eng, const NhRequest *req, uint64_t now, uint64_t *done,
                            GError **errp)
{
    NhZoned *zd = eng->zoned;
    uint64_t off = req->offset - eng->zone_base, in = off % zd->cap;

    switch (req->op) {
    case NH_OP_READ:
        return nh_zoned_read(zd, off, req->length, now, done, errp);
    case NH_OP_WRITE:
        return nh_zoned_write(zd, (uint32_t)(off / zd->cap), &in, req->length, false, now, done,
                              errp);
    default:
        return nh_zoned_refuse(zd, errp, NH_ZONE_ERR_INVALID, "zone %u: deallocation on the "
                               "zoned space (a zone is reset, not trimmed)",
                               (uint32_t)(off / zd->cap));
    }
}

uint32_t nh_engine_zones(const NhEngine *eng)
{
    return eng->zoned ? eng->zoned->s.zones : 0;
}

uint64_t nh_engine_zone_base(const NhEngine *eng)
{
    return eng->zone_base;
}

uint64_t nh_engine_zone_capacity(const NhEngine *eng)
{
    return eng->zoned ? eng->zoned->cap : 0;
}

uint32_t nh_engine_zone_max_open(const NhEngine *eng)
{
    return eng->zoned ? nh_zoned_open_limit(eng->zoned) : 0;
}

uint32_t nh_engine_zone_max_active(const NhEngine *eng)
{
    return eng->zoned ? eng->zoned->s.max_active : 0;
}

bool nh_engine_zone_info(const NhEngine *eng, uint32_t zone, NhZoneInfo *info)
{
    if (!eng->zoned || zone >= eng->zoned->s.zones) {
        return false;
    }
    info->state = (NhZoneState)eng->zoned->z[zone].state;
    info->start = eng->zone_base + (uint64_t)zone * eng->zoned->cap;
    info->wp = eng->zoned->z[zone].wp;
    return true;
}

/* No zoned region: every zone operation is refused alike. */
static bool no_zones(const NhEngine *eng, GError **errp)
{
    if (eng->zoned) {
        return false;
    }
    g_set_error(errp, NH_ZONE_ERROR, NH_ZONE_ERR_INVALID, "the device has no zones (zones=0)");
    return true;
}

bool nh_engine_zone_append(NhEngine *eng, uint32_t zone, uint64_t length, uint32_t flags,
                           uint64_t now, uint64_t *offset, uint64_t *done, GError **errp)
{
    NhRequest req = { .op = NH_OP_WRITE, .flags = flags, .length = length };
    uint64_t in = 0, t, at;
    guint slot = G_MAXUINT;

    if (no_zones(eng, errp) || !nh_engine_check_now(now, errp)) {
        return false;
    }
    if (length == 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_RANGE, "request has zero length");
        return false;
    }
    at = nh_engine_arrive(eng, now, &req);
    at = nh_engine_host_link(eng, eng->link_in, at, length, &slot);
    if (!nh_zoned_write(eng->zoned, zone, &in, length, true, at, &t, errp)) {
        nh_engine_host_unbook(eng->link_in, slot);
        return false;
    }
    req.offset = eng->zone_base + (uint64_t)zone * eng->zoned->cap + in;
    nh_engine_count_host(eng, &req, now, t);
    *offset = req.offset;
    nh_engine_complete(eng, now, t, done);
    return true;
}

bool nh_engine_zone_action(NhEngine *eng, NhZoneAction action, uint32_t zone, uint64_t now,
                           uint64_t *done, GError **errp)
{
    uint64_t t;

    if (no_zones(eng, errp) || !nh_engine_check_now(now, errp)) {
        return false;
    }
    nh_engine_arrive(eng, now, NULL);     /* no firmware time: not a read or a write */
    if (!nh_zoned_action(eng->zoned, action, zone, now, &t, errp)) {
        return false;
    }
    nh_engine_complete(eng, now, t, done);
    return true;
}
