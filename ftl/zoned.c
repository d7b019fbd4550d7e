/*
 * zoned.c - the zoned region's model (contract in zones.h): the NVMe ZNS zone state machine,
 * its open and active limits, and the zones' flash work through the NAND model.
 */
#include "zones.h"

#include <stdarg.h>

GQuark nh_zone_error_quark(void)
{
    return g_quark_from_static_string("nh-zone-error-quark");
}

static bool is_open(uint8_t st)
{
    return st == NH_ZONE_IMP_OPEN || st == NH_ZONE_EXP_OPEN;
}

static bool is_active(uint8_t st)
{
    return is_open(st) || st == NH_ZONE_CLOSED;
}

uint32_t nh_zoned_open_limit(const NhZoned *zd)
{
    return zd->s.max_open ? zd->s.max_open : zd->s.max_active;
}

static void set_state(NhZoned *zd, NhZone *zn, NhZoneState st)
{
    zd->nopen += is_open(st) - is_open(zn->state);
    zd->nactive += is_active(st) - is_active(zn->state);
    zn->state = st;
}

bool nh_zoned_refuse(NhZoned *zd, GError **errp, NhZoneError code, const char *fmt, ...)
{
    va_list ap;
    char *msg;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(errp, NH_ZONE_ERROR, code, msg);
    g_free(msg);
    zd->c[NH_ZC_REFUSED]++;
    return false;
}

/* Every refusal of this file: zd and errp are always the caller's. */
#define REFUSE(code, ...) nh_zoned_refuse(zd, errp, NH_ZONE_ERR_##code, __VA_ARGS__)

NhZoned *nh_zoned_new(const NhZonesSettings *s, NhNand *nand, NhStats *st, uint64_t *counters,
                      uint32_t page_size, bool flash_unwritten)
{
    NhZoned *zd = g_new0(NhZoned, 1);

    zd->s = *s;
    zd->nand = nand;
    zd->st = st;
    zd->c = counters;
    zd->flash_unwritten = flash_unwritten;
    zd->page_size = page_size;
    zd->wl = nand->wl;
    zd->zone_pages = s->width * s->blocks_per_zone * nand->g.pages;
    zd->cap = (uint64_t)zd->zone_pages * page_size;
    zd->z = g_new0(NhZone, s->zones);
    for (uint32_t i = 0; i < s->zones; i++) {
        zd->z[i].state = NH_ZONE_EMPTY;
    }
    zd->inflight = g_array_new(FALSE, FALSE, sizeof(NhZoneWrite));
    return zd;
}

void nh_zoned_free(NhZoned *zd)
{
    if (zd) {
        g_array_free(zd->inflight, TRUE);
        g_free(zd->z);
        g_free(zd);
    }
}

/* ------------------------------------------------------------------ layout */

/* Plane @i of zone @zone's planes. */
static uint32_t zone_pu(const NhZoned *zd, uint32_t zone, uint32_t i)
{
    uint32_t idx = (zone % zd->s.groups) * zd->s.width + i;
    return zd->s.layout == NH_ZONE_SPREAD ? nh_stripe_pu(&zd->nand->g, idx) : idx;
}

/* Block @j of zone @zone on its plane @i. */
static uint32_t zone_block(const NhZoned *zd, uint32_t zone, uint32_t i, uint32_t j)
{
    const NhGeometry *g = &zd->nand->g;
    return zone_pu(zd, zone, i) * g->blocks + g->blocks - zd->s.plane_blocks +
           zone / zd->s.groups * zd->s.blocks_per_zone + j;
}

/* Page @pip of zone @zone's pages on its plane @i. */
static uint32_t plane_ppn(const NhZoned *zd, uint32_t zone, uint32_t i, uint32_t pip)
{
    uint32_t pages = zd->nand->g.pages;
    return zone_block(zd, zone, i, pip / pages) * pages + pip % pages;
}

/* Page @page of zone @zone: its program unit on plane unit % width. */
static uint32_t zone_ppn(const NhZoned *zd, uint32_t zone, uint32_t page)
{
    uint32_t u = page / zd->wl;
    return plane_ppn(zd, zone, u % zd->s.width, u / zd->s.width * zd->wl + page % zd->wl);
}

/* Pages programmed on plane @i of @zn: its share of the programmed units, and with padding
 * the rest of the block it had started. */
static uint32_t plane_pages(const NhZoned *zd, const NhZone *zn, uint32_t i)
{
    uint32_t units = zn->programmed / zd->wl, w = zd->s.width, pages = zd->nand->g.pages;
    uint32_t p = (units > i ? (units - i + w - 1) / w : 0) * zd->wl;

    return zn->padded && p % pages ? (p / pages + 1) * pages : p;
}

/* What the NAND's next_page of block @j of @zn's plane @i must be. */
static uint32_t block_next(const NhZoned *zd, const NhZone *zn, uint32_t i, uint32_t j)
{
    uint32_t p = plane_pages(zd, zn, i), pages = zd->nand->g.pages;
    return p <= j * pages ? 0 : MIN(p - j * pages, pages);
}

/* Set the NAND's programmed pages of zone @zone's blocks to what its table says. */
static void sync_nand(NhZoned *zd, uint32_t zone)
{
    for (uint32_t i = 0; i < zd->s.width; i++) {
        for (uint32_t j = 0; j < zd->s.blocks_per_zone; j++) {
            zd->nand->next_page[zone_block(zd, zone, i, j)] = block_next(zd, &zd->z[zone], i, j);
        }
    }
}

/* ------------------------------------------------------------------ flash work */

static uint64_t unit_bytes(const NhZoned *zd)
{
    return (uint64_t)zd->wl * zd->page_size;
}

/* Program zone pages [programmed, @to) together (multi-plane and one-shot programs join). */
static uint64_t program_to(NhZoned *zd, uint32_t zone, uint32_t to, uint64_t now)
{
    NhZone *zn = &zd->z[zone];
    uint64_t done = now;

    nh_nand_batch_begin(zd->nand);
    for (; zn->programmed < to; zn->programmed++) {
        uint64_t t = nh_nand_program(zd->nand, zone_ppn(zd, zone, zn->programmed), now);
        done = MAX(done, t);
    }
    nh_nand_batch_end(zd->nand);
    return done;
}

/* The whole program units below byte @end of a zone, in pages. */
static uint32_t units_below(const NhZoned *zd, uint64_t end)
{
    return (uint32_t)(end / unit_bytes(zd)) * zd->wl;
}

/* Finish's flash work: the staged host data, then with pad the rest of every started block. */
static uint64_t finish_flash(NhZoned *zd, uint32_t zone, uint64_t now)
{
    NhZone *zn = &zd->z[zone];
    uint64_t ub = unit_bytes(zd);
    uint32_t data_pages = (uint32_t)((zn->wp + zd->page_size - 1) / zd->page_size);
    uint64_t done = program_to(zd, zone, (uint32_t)((zn->wp + ub - 1) / ub) * zd->wl, now);
    uint32_t padded = zn->programmed - data_pages;

    if (zd->s.finish == NH_ZONE_FINISH_PAD) {
        nh_nand_batch_begin(zd->nand);
        for (uint32_t i = 0; i < zd->s.width; i++) {
            uint32_t p = plane_pages(zd, zn, i), pages = zd->nand->g.pages;
            uint32_t end = p % pages ? (p / pages + 1) * pages : p;
            for (; p < end; p++, padded++) {
                uint64_t t = nh_nand_program(zd->nand, plane_ppn(zd, zone, i, p), now);
                done = MAX(done, t);
            }
        }
        nh_nand_batch_end(zd->nand);
        zn->padded = true;
    }
    zd->c[NH_ZC_FINISH_PAD_PAGES] += padded;
    return done;
}

/* Reset's flash work: erase every block the zone programmed. */
static uint64_t reset_flash(NhZoned *zd, uint32_t zone, uint64_t now, bool *worn)
{
    NhZone *zn = &zd->z[zone];
    uint64_t done = now;

    *worn = false;
    for (uint32_t i = 0; i < zd->s.width; i++) {
        for (uint32_t j = 0; j < zd->s.blocks_per_zone; j++) {
            uint32_t blk = zone_block(zd, zone, i, j);
            if (block_next(zd, zn, i, j)) {
                uint64_t t = nh_nand_erase(zd->nand, blk, now);
                done = MAX(done, t);
                zd->c[NH_ZC_RESET_ERASES]++;
            }
            /* a block at its rated cycles is worn out: the zone can only be read */
            *worn |= zd->nand->erase_count[blk] >= zd->nand->t.pe_cycles;
        }
    }
    zn->programmed = 0;
    zn->padded = false;
    zn->wp = 0;
    return done;
}

/* ------------------------------------------------------------------ the state machine */

/* Writes refused by the zone's state alone. */
static bool writable(NhZoned *zd, uint32_t zone, GError **errp)
{
    switch (zd->z[zone].state) {
    case NH_ZONE_FULL:
        return REFUSE(FULL, "zone %u is full", zone);
    case NH_ZONE_READ_ONLY:
        return REFUSE(READ_ONLY, "zone %u is read-only", zone);
    case NH_ZONE_OFFLINE:
        return REFUSE(OFFLINE, "zone %u is offline", zone);
    default:
        return true;
    }
}

/* The least recently written implicitly opened zone, or UINT32_MAX. */
static uint32_t implicit_victim(const NhZoned *zd)
{
    uint32_t v = UINT32_MAX;

    for (uint32_t i = 0; i < zd->s.zones; i++) {
        if (zd->z[i].state == NH_ZONE_IMP_OPEN &&
            (v == UINT32_MAX || zd->z[i].touched < zd->z[v].touched)) {
            v = i;
        }
    }
    return v;
}

/* Can zone @zone (empty or closed) be opened within the limits?  An implicit open may close
 * an implicitly opened zone to make room (*victim; UINT32_MAX when none is needed). */
static bool room_to_open(NhZoned *zd, uint32_t zone, bool implicit, uint32_t *victim,
                         GError **errp)
{
    uint32_t lim = nh_zoned_open_limit(zd);

    *victim = UINT32_MAX;
    if (zd->z[zone].state == NH_ZONE_EMPTY && zd->s.max_active &&
        zd->nactive >= zd->s.max_active) {
        return REFUSE(TOO_MANY_ACTIVE, "zone %u: %u zones are active, "
                      "the most zone-max-active allows", zone, zd->nactive);
    }
    if (lim && zd->nopen >= lim) {
        *victim = implicit ? implicit_victim(zd) : UINT32_MAX;
        if (*victim == UINT32_MAX) {
            return REFUSE(TOO_MANY_OPEN, "zone %u: %u zones are open%s, "
                          "the most zone-max-open allows", zone, zd->nopen,
                          implicit ? ", all explicitly" : "");
        }
    }
    return true;
}

static void open_zone(NhZoned *zd, uint32_t zone, uint32_t victim, NhZoneState st)
{
    if (victim != UINT32_MAX) {
        set_state(zd, &zd->z[victim], NH_ZONE_CLOSED);
        zd->c[NH_ZC_IMPLICIT_CLOSES]++;
    }
    set_state(zd, &zd->z[zone], st);
}

/* Writes of zone @zone not complete at @now can be lost in a cut; older ones no longer. */
static void track(NhZoned *zd, uint32_t zone, uint64_t start, uint64_t end, uint64_t done,
                  uint64_t now)
{
    NhZoneWrite w = { zone, start, end, done };
    guint k = 0;

    for (guint i = 0; i < zd->inflight->len; i++) {
        NhZoneWrite *e = &g_array_index(zd->inflight, NhZoneWrite, i);
        if (e->done > now) {
            g_array_index(zd->inflight, NhZoneWrite, k++) = *e;
        }
    }
    g_array_set_size(zd->inflight, k);
    if (done > now) {
        g_array_append_val(zd->inflight, w);
    }
}

/* A management action supersedes the zone's writes in flight. */
static void untrack(NhZoned *zd, uint32_t zone)
{
    for (guint i = zd->inflight->len; i-- > 0;) {
        if (g_array_index(zd->inflight, NhZoneWrite, i).zone == zone) {
            g_array_remove_index(zd->inflight, i);
        }
    }
}

bool nh_zoned_write(NhZoned *zd, uint32_t zone, uint64_t *off, uint64_t len, bool append,
                    uint64_t now, uint64_t *done, GError **errp)
{
    NhZone *zn;
    uint32_t victim = UINT32_MAX;

    if (zone >= zd->s.zones) {
        return REFUSE(INVALID, "zone %u: there are %u zones", zone,
                      zd->s.zones);
    }
    zn = &zd->z[zone];
    if (!writable(zd, zone, errp)) {
        return false;
    }
    if (append) {
        *off = zn->wp;
    } else if (*off != zn->wp) {
        return REFUSE(INVALID_WRITE, "zone %u: write at byte %"
                      G_GUINT64_FORMAT ", not at the write pointer %" G_GUINT64_FORMAT, zone,
                      *off, zn->wp);
    }
    if (len > zd->cap - zn->wp) {
        return REFUSE(BOUNDARY, "zone %u: %" G_GUINT64_FORMAT " bytes "
                      "at the write pointer %" G_GUINT64_FORMAT " pass its capacity %"
                      G_GUINT64_FORMAT, zone, len, zn->wp, zd->cap);
    }
    if (!is_open(zn->state)) {
        if (!room_to_open(zd, zone, true, &victim, errp)) {
            return false;
        }
        open_zone(zd, zone, victim, NH_ZONE_IMP_OPEN);
        zd->c[NH_ZC_IMPLICIT_OPENS]++;
    }
    *done = program_to(zd, zone, units_below(zd, zn->wp + len), now);
    track(zd, zone, zn->wp, zn->wp + len, *done, now);
    zn->wp += len;
    zn->touched = ++zd->writes;
    if (zn->wp == zd->cap) {
        set_state(zd, zn, NH_ZONE_FULL);
    }
    zd->c[NH_ZC_APPENDS] += append;
    return true;
}

bool nh_zoned_read(NhZoned *zd, uint64_t off, uint64_t len, uint64_t now, uint64_t *done,
                   GError **errp)
{
    uint64_t end = off + len, t = now;

    for (uint64_t z = off / zd->cap; z <= (end - 1) / zd->cap; z++) {
        if (zd->z[z].state == NH_ZONE_OFFLINE) {
            return REFUSE(OFFLINE, "zone %u is offline", (uint32_t)z);
        }
    }
    nh_nand_batch_begin(zd->nand);
    for (uint64_t p = off / zd->page_size; p <= (end - 1) / zd->page_size; p++) {
        uint32_t zone = (uint32_t)(p / zd->zone_pages), page = (uint32_t)(p % zd->zone_pages);
        const NhZone *zn = &zd->z[zone];
        uint32_t ppn = zone_ppn(zd, zone, page);
        uint64_t tp = now;

        if (page < zn->programmed) {
            tp = nh_nand_read(zd->nand, ppn, now);
        } else if (zn->state != NH_ZONE_FULL && (uint64_t)page * zd->page_size < zn->wp) {
            continue;   /* staged: read from the controller's memory */
        } else {
            zd->st->host_unwritten_read_pages++;
            if (zd->flash_unwritten) {
                tp = nh_nand_read_unwritten(zd->nand, ppn, now);
            }
        }
        t = MAX(t, tp);     /* not MAX(t, read()): it would read twice */
    }
    nh_nand_batch_end(zd->nand);
    *done = t;
    return true;
}

/* Open, close, finish, reset or take offline zone @zone; its flash work ends at *t. */
static bool act(NhZoned *zd, NhZoneAction a, uint32_t zone, uint64_t now, uint64_t *t,
                GError **errp)
{
    NhZone *zn = &zd->z[zone];
    uint32_t victim;
    bool worn;

    if (zn->state == NH_ZONE_OFFLINE && a != NH_ZONE_OFFLINE_ACT) {
        return REFUSE(OFFLINE, "zone %u is offline", zone);
    }
    if (zn->state == NH_ZONE_READ_ONLY && a != NH_ZONE_OFFLINE_ACT) {
        return REFUSE(READ_ONLY, "zone %u is read-only", zone);
    }
    switch (a) {
    case NH_ZONE_OPEN:
        if (zn->state == NH_ZONE_FULL) {
            break;
        }
        if (zn->state != NH_ZONE_EXP_OPEN) {
            if (zn->state != NH_ZONE_IMP_OPEN && !room_to_open(zd, zone, false, &victim, errp)) {
                return false;
            }
            set_state(zd, zn, NH_ZONE_EXP_OPEN);
            zd->c[NH_ZC_OPENS]++;
        }
        return true;
    case NH_ZONE_CLOSE:
        if (is_open(zn->state)) {
            set_state(zd, zn, NH_ZONE_CLOSED);
            zd->c[NH_ZC_CLOSES]++;
        }
        if (zn->state != NH_ZONE_CLOSED) {
            break;
        }
        return true;
    case NH_ZONE_FINISH:
        if (zn->state == NH_ZONE_EMPTY && zd->s.max_active && zd->nactive >= zd->s.max_active) {
            /* an empty zone is active while it is finished */
            return REFUSE(TOO_MANY_ACTIVE, "zone %u: %u zones are active, "
                          "the most zone-max-active allows", zone, zd->nactive);
        }
        if (zn->state != NH_ZONE_FULL) {
            *t = finish_flash(zd, zone, now);
            zn->wp = zd->cap;
            set_state(zd, zn, NH_ZONE_FULL);
            untrack(zd, zone);
            zd->c[NH_ZC_FINISHES]++;
            zd->c[NH_ZC_FINISH_NS] += *t - now;
        }
        return true;
    case NH_ZONE_RESET:
        if (zn->state != NH_ZONE_EMPTY) {
            *t = reset_flash(zd, zone, now, &worn);
            set_state(zd, zn, worn ? NH_ZONE_READ_ONLY : NH_ZONE_EMPTY);
            untrack(zd, zone);
            zd->c[NH_ZC_RESETS]++;
            zd->c[NH_ZC_RESET_NS] += *t - now;
            zd->c[NH_ZC_WORN_READ_ONLY] += worn;
        }
        return true;
    case NH_ZONE_OFFLINE_ACT:
        if (zn->state == NH_ZONE_READ_ONLY) {
            set_state(zd, zn, NH_ZONE_OFFLINE);
            zd->c[NH_ZC_OFFLINES]++;
        }
        if (zn->state != NH_ZONE_OFFLINE) {
            break;
        }
        return true;
    }
    return REFUSE(INVALID_TRANSITION, "zone %u: no transition from state "
                  "%#x by action %#x", zone, zn->state, a);
}

/* Does Select All take a zone in state @st into action @a? */
static bool selected(NhZoneAction a, uint8_t st)
{
    switch (a) {
    case NH_ZONE_CLOSE:
        return is_open(st);
    case NH_ZONE_FINISH:
        return is_active(st);
    case NH_ZONE_OPEN:
        return st == NH_ZONE_CLOSED;
    case NH_ZONE_RESET:
        return is_active(st) || st == NH_ZONE_FULL;
    case NH_ZONE_OFFLINE_ACT:
        return st == NH_ZONE_READ_ONLY;
    }
    return false;
}

bool nh_zoned_action(NhZoned *zd, NhZoneAction a, uint32_t zone, uint64_t now, uint64_t *done,
                     GError **errp)
{
    uint64_t t = now;

    if (a < NH_ZONE_CLOSE || a > NH_ZONE_OFFLINE_ACT) {
        return REFUSE(INVALID, "zone action %#x is not one of close, "
                      "finish, open, reset, offline", a);
    }
    if (zone != NH_ZONE_ALL) {
        if (zone >= zd->s.zones) {
            return REFUSE(INVALID, "zone %u: there are %u zones", zone,
                          zd->s.zones);
        }
        if (!act(zd, a, zone, now, &t, errp)) {
            return false;
        }
        *done = t;
        return true;
    }
    if (a == NH_ZONE_OPEN) {
        uint32_t closed = (uint32_t)nh_zoned_count(zd, NH_ZONE_CLOSED);
        uint32_t lim = nh_zoned_open_limit(zd);
        if (lim && zd->nopen + closed > lim) {
            return REFUSE(TOO_MANY_OPEN, "open all: %u closed zones and %u open pass "
                          "zone-max-open (%u)", closed, zd->nopen, lim);
        }
    }
    for (uint32_t i = 0; i < zd->s.zones; i++) {
        uint64_t ti = now;
        if (selected(a, zd->z[i].state)) {
            act(zd, a, i, now, &ti, NULL);
            t = MAX(t, ti);
        }
    }
    *done = t;
    return true;
}

void nh_zoned_mark_written(NhZoned *zd, uint32_t zone, uint64_t end)
{
    NhZone *zn = &zd->z[zone];

    end = MIN(end, zd->cap);
    if (end <= zn->wp || !(zn->state == NH_ZONE_EMPTY || is_active(zn->state))) {
        return;
    }
    program_to(zd, zone, units_below(zd, end), 0);
    zn->wp = end;
    set_state(zd, zn, end == zd->cap ? NH_ZONE_FULL : NH_ZONE_CLOSED);
}

/* After a cut the controller starts again: open zones are closed (the specification's
 * transition at a controller reset), an open zone without data is empty. */
static void close_all(NhZoned *zd)
{
    for (uint32_t i = 0; i < zd->s.zones; i++) {
        NhZone *zn = &zd->z[i];
        if (is_open(zn->state)) {
            set_state(zd, zn, zn->wp ? NH_ZONE_CLOSED : NH_ZONE_EMPTY);
        }
    }
}

void nh_zoned_power_loss(NhZoned *zd, uint64_t now, void (*lost)(void *, uint64_t, uint64_t),
                         void *opaque)
{
    uint64_t *keep = g_new(uint64_t, zd->s.zones);

    for (uint32_t i = 0; i < zd->s.zones; i++) {
        keep[i] = zd->z[i].wp;
    }
    /* a zone's data ends where its first write not complete by @now starts */
    for (guint k = 0; k < zd->inflight->len; k++) {
        const NhZoneWrite *w = &g_array_index(zd->inflight, NhZoneWrite, k);
        if (w->done > now) {
            keep[w->zone] = MIN(keep[w->zone], w->start);
        }
    }
    for (uint32_t i = 0; i < zd->s.zones; i++) {
        NhZone *zn = &zd->z[i];
        if (keep[i] < zn->wp) {
            lost(opaque, (uint64_t)i * zd->cap + keep[i], zn->wp - keep[i]);
            zd->c[NH_ZC_LOST_BYTES] += zn->wp - keep[i];
            zn->wp = keep[i];
            zn->programmed = MIN(zn->programmed, units_below(zd, keep[i]));
            set_state(zd, zn, zn->wp ? NH_ZONE_CLOSED : NH_ZONE_EMPTY);
            sync_nand(zd, i);
        }
    }
    g_array_set_size(zd->inflight, 0);
    close_all(zd);
    g_free(keep);
}

uint64_t nh_zoned_count(const NhZoned *zd, NhZoneState state)
{
    uint64_t n = 0;

    for (uint32_t i = 0; i < zd->s.zones; i++) {
        n += zd->z[i].state == state;
    }
    return n;
}

/* ------------------------------------------------------------------ state file and check */

/* u32 zones, then per zone u32 state | padded << 8, u64 wp, u32 programmed. */
void nh_zoned_save(const NhZoned *zd, GByteArray *o)
{
    nh_put32(o, zd->s.zones);
    for (uint32_t i = 0; i < zd->s.zones; i++) {
        nh_put32(o, zd->z[i].state | (uint32_t)zd->z[i].padded << 8);
        nh_put64(o, zd->z[i].wp);
        nh_put32(o, zd->z[i].programmed);
    }
}

static bool valid_state(uint32_t st)
{
    return (st >= NH_ZONE_EMPTY && st <= NH_ZONE_CLOSED) || st == NH_ZONE_READ_ONLY ||
           st == NH_ZONE_FULL || st == NH_ZONE_OFFLINE;
}

/* The table's rules for one zone: NULL when @zn keeps them. */
static const char *zone_wrong(const NhZoned *zd, const NhZone *zn)
{
    if (!valid_state(zn->state)) {
        return "no such state";
    }
    if (zn->wp > zd->cap || zn->programmed > zd->zone_pages) {
        return "write pointer or programmed pages past the capacity";
    }
    if (zn->state == NH_ZONE_EMPTY && (zn->wp || zn->programmed)) {
        return "empty with data";
    }
    if (zn->state == NH_ZONE_FULL && zn->wp != zd->cap) {
        return "full below its capacity";
    }
    if (zn->state != NH_ZONE_FULL && zn->programmed != units_below(zd, zn->wp)) {
        return "programmed pages are not the whole program units below the write pointer";
    }
    if (zn->padded && zn->state != NH_ZONE_FULL) {
        return "padded but not full";
    }
    return NULL;
}

NhZone *nh_zoned_parse(const NhZoned *zd, NhReader r, GError **errp)
{
    NhZone *z = g_new0(NhZone, zd->s.zones);
    uint32_t n;

    if (!nh_get32(&r, &n) || n != zd->s.zones) {
        g_free(z);
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "state file: zone table of another size");
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t st;
        const char *why;
        if (!nh_get32(&r, &st) || !nh_get64(&r, &z[i].wp) || !nh_get32(&r, &z[i].programmed)) {
            why = "truncated";
        } else {
            z[i].state = (uint8_t)st;
            z[i].padded = st >> 8 & 1;
            why = st >> 9 ? "no such state" : zone_wrong(zd, &z[i]);
        }
        if (why) {
            g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "state file: zone %u is damaged (%s)",
                        i, why);
            g_free(z);
            return NULL;
        }
    }
    return z;
}

void nh_zoned_install(NhZoned *zd, NhZone *z)
{
    uint32_t n = zd->s.zones;

    g_free(zd->z);
    zd->z = z;
    zd->nopen = zd->nactive = 0;
    g_array_set_size(zd->inflight, 0);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t st = z[i].state;
        z[i].state = NH_ZONE_EMPTY;
        set_state(zd, &z[i], st);
        sync_nand(zd, i);
    }
    close_all(zd);      /* a restart is a controller reset */
}

char *nh_zoned_check(const NhZoned *zd)
{
    uint32_t nopen = 0, nactive = 0;

    for (uint32_t i = 0; i < zd->s.zones; i++) {
        const NhZone *zn = &zd->z[i];
        const char *why = zone_wrong(zd, zn);
        if (why) {
            return g_strdup_printf("zone %u: %s", i, why);
        }
        nopen += is_open(zn->state);
        nactive += is_active(zn->state);
        for (uint32_t p = 0; p < zd->s.width; p++) {
            for (uint32_t j = 0; j < zd->s.blocks_per_zone; j++) {
                uint32_t blk = zone_block(zd, i, p, j);
                if (zd->nand->next_page[blk] != block_next(zd, zn, p, j)) {
                    return g_strdup_printf("zone %u: block %u programmed to page %u, the zone "
                                           "says %u", i, blk, zd->nand->next_page[blk],
                                           block_next(zd, zn, p, j));
                }
            }
        }
    }
    if (nopen != zd->nopen || nactive != zd->nactive) {
        return g_strdup_printf("%u open and %u active zones, counted %u and %u", nopen, nactive,
                               zd->nopen, zd->nactive);
    }
    return NULL;
}
