/*
 * zns.c - the Zoned Namespace Command Set on NSID 2 (docs/zoned.md, "The device"): the
 * namespace's layout, its Identify data, its command set (Read, Write, Flush, Zone Append,
 * Zone Management Send and Receive) and the statuses of the engine's zone errors.
 *
 * The zone state machine is the engine's (nh_engine_zone_*, include/engine.h): this file
 * translates LBAs to engine offsets and drive offsets (nhc_zns_map, the one place), and
 * NhZoneError to the specification's statuses (nhc_zone_status, the one table).  The host
 * sees zones a power of two of LBAs long, as Linux requires; the engine's zone capacity is
 * the zone capacity, and the LBAs between it and the zone size are the zone's gap (reads there
 * return zeroes, writes get Zone Boundary Error).  The drive holds NSID 1's bytes, then every
 * zone at its host-visible size, gap included, so a drive offset is linear in the LBA.
 * Zoned writes go to the drive with FUA: the namespace has no volatile write cache.
 * Zone descriptor extensions are not kept (ZDES 0): Extended Report Zones and Set Zone
 * Descriptor Extension are Invalid Field.
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/cutils.h"
#include "qapi/error.h"
#include "system/block-backend.h"

#include "nvme-hybrid.h"
#include "trace.h"

struct NhcZns {
    uint32_t zones;
    uint64_t base;          /* NSID 1's bytes: engine offset of zone 0, drive offset of LBA 0 */
    uint64_t cap;           /* bytes the engine gives a zone */
    uint64_t zcap;          /* the same in LBAs: the zone capacity */
    uint8_t  zsze_shift;    /* the zone size is 1 << zsze_shift LBAs */
    uint64_t nsze;          /* NSID 2's LBAs */
};

/* NhZoneError -> the status the Zoned Namespace Command Set specification names. */
static const uint16_t nhc_zone_status[] = {
    [NH_ZONE_ERR_BOUNDARY]          = NVME_ZONE_BOUNDARY_ERROR,
    [NH_ZONE_ERR_FULL]              = NVME_ZONE_FULL,
    [NH_ZONE_ERR_READ_ONLY]         = NVME_ZONE_READ_ONLY,
    [NH_ZONE_ERR_OFFLINE]           = NVME_ZONE_OFFLINE,
    [NH_ZONE_ERR_INVALID_WRITE]     = NVME_ZONE_INVALID_WRITE,
    [NH_ZONE_ERR_TOO_MANY_ACTIVE]   = NVME_ZONE_TOO_MANY_ACTIVE,
    [NH_ZONE_ERR_TOO_MANY_OPEN]     = NVME_ZONE_TOO_MANY_OPEN,
    [NH_ZONE_ERR_INVALID_TRANSITION] = NVME_ZONE_INVAL_TRANSITION,
    [NH_ZONE_ERR_INVALID]           = NVME_INVALID_FIELD,
};

/* Zone Receive Action Specific Field (report options) -> the state it selects; 0 = all. */
static const uint8_t nhc_report_state[] = {
    [NVME_ZONE_REPORT_EMPTY]            = NH_ZONE_EMPTY,
    [NVME_ZONE_REPORT_IMPLICITLY_OPEN]  = NH_ZONE_IMP_OPEN,
    [NVME_ZONE_REPORT_EXPLICITLY_OPEN]  = NH_ZONE_EXP_OPEN,
    [NVME_ZONE_REPORT_CLOSED]           = NH_ZONE_CLOSED,
    [NVME_ZONE_REPORT_FULL]             = NH_ZONE_FULL,
    [NVME_ZONE_REPORT_READ_ONLY]        = NH_ZONE_READ_ONLY,
    [NVME_ZONE_REPORT_OFFLINE]          = NH_ZONE_OFFLINE,
};

/* ------------------------------------------------------------------------------ layout */

/*
 * The zone capacity decides the zone size, and both decide how much of the drive NSID 1 gets,
 * which is the engine's conventional capacity: an engine with the smallest conventional space
 * says what the zones are before the real one is made.
 */
static bool nhc_zns_probe(NhcCtrl *n, uint32_t *zones, uint64_t *cap, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    g_autofree char *key = nh_config_get(&n->cfg, "zones");
    NhEngine *e;

    *zones = 0;
    if (!key || !strcmp(key, "0")) {
        return true;
    }
    e = nh_engine_new(&n->cfg, n->lba_size, &gerr);
    if (!e) {
        error_setg(errp, "%s", gerr->message);
        return false;
    }
    *zones = nh_engine_zones(e);
    *cap = nh_engine_zone_capacity(e);
    nh_engine_free(e);
    return true;
}

bool nhc_zns_realize(NhcCtrl *n, Error **errp)
{
    uint32_t zones;
    uint64_t cap, need, zsze;
    NhcZns *z;

    if (!nhc_zns_probe(n, &zones, &cap, errp)) {
        return false;
    }
    if (!zones) {
        return true;
    }
    if (n->zasl > NHC_MDTS) {
        error_setg(errp, "zasl: the zone append size limit (2^zasl 4 KiB pages) cannot exceed "
                   "the maximum transfer (MDTS %u), got %u", NHC_MDTS, n->zasl);
        return false;
    }
    if (!cap || cap % n->lba_size) {
        error_setg(errp, "zones: the zone capacity (%" PRIu64 " bytes) is not a multiple of "
                   "lba-size %u", cap, n->lba_size);
        return false;
    }
    zsze = pow2ceil(cap / n->lba_size);
    need = (uint64_t)zones * zsze * n->lba_size;
    if (n->ns_bytes <= need) {
        error_setg(errp, "drive: %" PRIu64 " bytes cannot hold %u zones of %" PRIu64 " LBAs "
                   "(a power of two >= the zone capacity, %" PRIu64 " LBAs of %u bytes) and a "
                   "conventional namespace before them: more than %" PRIu64 " bytes needed",
                   n->ns_bytes, zones, zsze, cap / n->lba_size, n->lba_size, need);
        return false;
    }
    z = g_new0(NhcZns, 1);
    z->zones = zones;
    z->cap = cap;
    z->zcap = cap / n->lba_size;
    z->zsze_shift = ctz64(zsze);
    z->nsze = (uint64_t)zones << z->zsze_shift;
    z->base = n->ns_bytes - need;
    n->zns = z;
    n->ns_bytes = z->base;
    n->nsze = z->base >> n->lba_shift;
    return true;
}

/* The engine made with NSID 1's bytes as its conventional space agrees with the layout. */
bool nhc_zns_check_engine(NhcCtrl *n, Error **errp)
{
    NhcZns *z = n->zns;

    if (z && (nh_engine_zone_base(n->engine) != z->base ||
              nh_engine_zone_capacity(n->engine) != z->cap ||
              nh_engine_zones(n->engine) != z->zones)) {
        error_setg(errp, "zones: the engine put %u zones of %" PRIu64 " bytes at %" PRIu64
                   ", not %u of %" PRIu64 " at %" PRIu64, nh_engine_zones(n->engine),
                   nh_engine_zone_capacity(n->engine), nh_engine_zone_base(n->engine),
                   z->zones, z->cap, z->base);
        return false;
    }
    return true;
}

void nhc_zns_free(NhcCtrl *n)
{
    g_clear_pointer(&n->zns, g_free);
}

/* Is NSID 2 the zoned namespace, attached (CC.CSS enables every I/O command set)? */
bool nhc_zns_active(NhcCtrl *n)
{
    return n->zns && NVME_CC_CSS(n->cc) == NVME_CC_CSS_ALL;
}

uint64_t nhc_zns_nsze(NhcCtrl *n)
{
    return n->zns->nsze;
}

uint64_t nhc_zns_bytes(NhcCtrl *n)
{
    return (uint64_t)n->zns->zones * n->zns->cap;
}

/* Where LBAs [slba, slba + nlb) of NSID 2 are, within the zone of @slba. */
typedef struct NhcZoneRange {
    uint32_t zone;
    uint64_t zslba;         /* the zone's first LBA */
    uint64_t in;            /* @slba's LBA within the zone */
    uint64_t eng_off;       /* engine offset of @slba */
    uint64_t eng_len;       /* bytes of the range below the zone capacity */
    uint64_t drive_off;     /* where @slba's bytes are in the drive */
    uint64_t len;           /* bytes in all */
} NhcZoneRange;

static void nhc_zns_map(NhcCtrl *n, uint64_t slba, uint64_t nlb, NhcZoneRange *r)
{
    NhcZns *z = n->zns;

    r->zone = slba >> z->zsze_shift;
    r->zslba = (uint64_t)r->zone << z->zsze_shift;
    r->in = slba - r->zslba;
    r->len = nlb << n->lba_shift;
    r->eng_off = z->base + r->zone * z->cap + (r->in << n->lba_shift);
    r->eng_len = r->in >= z->zcap ? 0 : (MIN(r->in + nlb, z->zcap) - r->in) << n->lba_shift;
    r->drive_off = z->base + (slba << n->lba_shift);
}

/* Engine offset @off of zone @zone -> its LBA. */
static uint64_t nhc_zns_lba(NhcCtrl *n, uint32_t zone, uint64_t off)
{
    NhcZns *z = n->zns;

    return ((uint64_t)zone << z->zsze_shift) +
           ((off - z->base - zone * z->cap) >> n->lba_shift);
}

/*
 * A power cut lost zoned writes the engine rolled back: [off, off + len) of the engine's zoned
 * space reads as zeroes again (it is above the zone's write pointer).  False when @off is
 * conventional.
 */
bool nhc_zns_lost(NhcCtrl *n, uint64_t off, uint64_t len)
{
    NhcZns *z = n->zns;

    if (!z || off < z->base) {
        return false;
    }
    while (len) {
        uint32_t zone = (off - z->base) / z->cap;
        uint64_t in = (off - z->base) % z->cap, part = MIN(len, z->cap - in);
        uint64_t drive = z->base + ((uint64_t)zone << (z->zsze_shift + n->lba_shift)) + in;
        int ret = blk_pwrite_zeroes(n->blkconf.blk, drive, part, BDRV_REQ_MAY_UNMAP);

        if (ret < 0) {
            warn_report("nvme-hybrid: power loss: cannot zero %" PRIu64 " bytes of zone %u: "
                        "%s", part, zone, strerror(-ret));
        }
        off += part;
        len -= part;
    }
    return true;
}

static void nhc_zns_data_end(NhcCtrl *n, uint64_t off, uint64_t len, void *opaque)
{
    *(uint64_t *)opaque = off + len;
}

/*
 * A start without a trustworthy state file (QEMU was killed, the power cut, a new drive): a
 * zone's write pointer goes up to where its data in the drive ends (the engine keeps the
 * larger of that and the table it loaded).  The drive allocates in blocks of several LBAs, so
 * the zeroes at the end of the last block are taken as never written: LBAs of zeroes the host
 * wrote last in a zone before a crash read the same but count as unwritten.
 */
void nhc_zns_rebuild(NhcCtrl *n)
{
    NhcZns *z = n->zns;

    for (uint32_t zone = 0; z && zone < z->zones; zone++) {
        uint64_t start = z->base + ((uint64_t)zone << (z->zsze_shift + n->lba_shift));
        uint64_t end = 0, tail;
        g_autofree uint8_t *buf = NULL;

        nhc_drive_extents(n, start, z->cap, nhc_zns_data_end, &end);
        if (!end) {
            continue;
        }
        end -= start;
        tail = MIN(end, 4096);
        buf = g_malloc(tail);
        if (blk_pread(n->blkconf.blk, start + end - tail, tail, buf, 0) == 0) {
            while (tail && buffer_is_zero(buf + tail - n->lba_size, n->lba_size)) {
                tail -= n->lba_size;
                end -= n->lba_size;
            }
        }
        if (end) {
            nh_engine_mark_written(n->engine, z->base + zone * z->cap, end);
        }
    }
}

/* ------------------------------------------------------------------------------ identify */

/* I/O Command Set specific Identify Namespace, Zoned Namespace Command Set (CNS 05h). */
uint16_t nhc_zns_identify_ns(NhcCtrl *n, NhcReq *req)
{
    g_autofree NvmeIdNsZoned *id = g_new0(NvmeIdNsZoned, 1);
    uint32_t mar = nh_engine_zone_max_active(n->engine);
    uint32_t mor = nh_engine_zone_max_open(n->engine);

    if (le32_to_cpu(req->cmd.nsid) != NHC_ZNS_NSID || !nhc_zns_active(n)) {
        return NHC_ERR(NVME_INVALID_NSID);
    }
    /* no variable zone capacity, no zone active excursions, no reads across zones */
    id->zoc = 0;
    id->ozcs = 0;
    /* 0-based; FFFFFFFFh: no limit */
    id->mar = cpu_to_le32(mar ? mar - 1 : UINT32_MAX);
    id->mor = cpu_to_le32(mor ? mor - 1 : UINT32_MAX);
    id->lbafe[0].zsze = cpu_to_le64(1ull << n->zns->zsze_shift);
    id->lbafe[0].zdes = 0;
    return nhc_dma_to_host(n, id, sizeof(*id), &req->cmd);
}

/* I/O Command Set specific Identify Controller, Zoned Namespace Command Set (CNS 06h). */
uint16_t nhc_zns_identify_ctrl(NhcCtrl *n, NhcReq *req)
{
    g_autofree NvmeIdCtrlZoned *id = g_new0(NvmeIdCtrlZoned, 1);

    id->zasl = n->zasl;
    return nhc_dma_to_host(n, id, sizeof(*id), &req->cmd);
}

/* ------------------------------------------------------------------------------ errors */

static uint16_t nhc_zns_error(NhcCtrl *n, NhcReq *req, uint32_t zone, const GError *err)
{
    uint16_t sc = NVME_INTERNAL_DEV_ERROR;

    if (err->domain == NH_ZONE_ERROR && err->code >= 0 &&
        err->code < (int)ARRAY_SIZE(nhc_zone_status)) {
        sc = NHC_STATUS(nhc_zone_status[err->code]);
    }
    NHC_GUEST_ERR(trace_nhc_err_zone(req->cmd.opcode, zone, sc, err->message),
                  "zone %u: %s", zone, err->message);
    return sc;
}

/* After the engine took (@ok) or refused a request on zone @zone. */
static uint16_t nhc_zns_modeled(NhcCtrl *n, NhcReq *req, uint32_t zone, bool ok,
                                const GError *err, bool changes)
{
    if (!ok) {
        return nhc_zns_error(n, req, zone, err);
    }
    if (changes) {
        nhc_state_touch(n);
    }
    n->state_changed = true;
    return NVME_SUCCESS;
}

/* ------------------------------------------------------------------------------ read, write */

static uint64_t nhc_zns_rw_len(NhcCtrl *n, NhcReq *req)
{
    return (uint64_t)(le16_to_cpu(((NvmeRwCmd *)&req->cmd)->nlb) + 1) << n->lba_shift;
}

/*
 * Read, Write and Zone Append: the LBAs exist and stay in one zone (no reads across zones:
 * OZCS.RAZB is 0), a write stays below the zone capacity; an append names its zone's first LBA
 * and holds to ZASL.  The write pointer and the zone's state are the engine's to check.
 */
static uint16_t nhc_zns_rw_check(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    uint64_t slba = le64_to_cpu(rw->slba);
    uint32_t nlb = le16_to_cpu(rw->nlb) + 1;
    NhcZoneRange r;

    trace_nhc_zns_rw(le16_to_cpu(rw->cid), rw->opcode, slba, nlb);
    if (slba >= n->zns->nsze || nlb > n->zns->nsze - slba) {
        return NHC_ERR(NVME_LBA_RANGE);
    }
    nhc_zns_map(n, slba, nlb, &r);
    if (rw->opcode == NVME_CMD_ZONE_APPEND && r.in) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    if (rw->opcode == NVME_CMD_ZONE_APPEND && n->zasl &&
        r.len > (uint64_t)NHC_MPSMIN_BYTES << n->zasl) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* larger than ZASL */
    }
    if (r.in + nlb > (rw->opcode == NVME_CMD_READ ? 1ull << n->zns->zsze_shift
                                                   : n->zns->zcap)) {
        return NHC_ERR(NVME_ZONE_BOUNDARY_ERROR);
    }
    return NVME_SUCCESS;
}

static void nhc_zns_count(NhcCtrl *n, bool write, uint64_t len)
{
    if (write) {
        n->smart.host_write_cmds++;
        n->smart.data_units_written += len >> 9;
    } else {
        n->smart.host_read_cmds++;
        n->smart.data_units_read += len >> 9;
    }
}

/* Read or Write: the part below the zone capacity through the engine, all of it on the
 * drive (the gap holds zeroes: nothing writes it). */
static uint16_t nhc_zns_rw(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    bool write = rw->opcode == NVME_CMD_WRITE;
    bool fua = le16_to_cpu(rw->control) & NVME_RW_FUA;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t done = now;
    g_autoptr(GError) err = NULL;
    NhZoneInfo info;
    NhcZoneRange r;
    uint16_t status;
    bool ok = true;

    nhc_zns_map(n, le64_to_cpu(rw->slba), le16_to_cpu(rw->nlb) + 1, &r);
    nhc_event(n, NHC_EV_MODEL);
    if (r.eng_len) {
        NhRequest e = {
            .op = write ? NH_OP_WRITE : NH_OP_READ, .flags = fua ? NH_REQ_FUA : 0,
            .offset = r.eng_off, .length = r.eng_len,
        };
        ok = nh_engine_submit(n->engine, &e, now, &done, &err);
    } else if (nh_engine_zone_info(n->engine, r.zone, &info) &&
               info.state == NH_ZONE_OFFLINE) {
        /* only the gap: the engine has nothing to read, but an offline zone is no zone */
        g_set_error(&err, NH_ZONE_ERROR, NH_ZONE_ERR_OFFLINE, "zone %u is offline", r.zone);
        ok = false;
    }
    status = nhc_zns_modeled(n, req, r.zone, ok, err, write);
    if (status) {
        return status;
    }
    nhc_zns_count(n, write, r.len);
    nhc_io_arm(n, req, now, done, 1);
    if (write) {
        nhc_io_write_backend(n, req, r.drive_off, r.len, true);
    } else {
        nhc_io_read_backend(n, req, r.drive_off, r.len);
    }
    return NHC_ASYNC;
}

/* Zone Append: the engine puts the data at the zone's write pointer; the completion's
 * dwords 0 and 1 say which LBA that was. */
static uint16_t nhc_zns_append(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    bool fua = le16_to_cpu(rw->control) & NVME_RW_FUA;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t done, off, lba;
    g_autoptr(GError) err = NULL;
    NhcZoneRange r;
    uint16_t status;
    bool ok;

    nhc_zns_map(n, le64_to_cpu(rw->slba), le16_to_cpu(rw->nlb) + 1, &r);
    nhc_event(n, NHC_EV_MODEL);
    ok = nh_engine_zone_append(n->engine, r.zone, r.len, fua ? NH_REQ_FUA : 0, now, &off,
                               &done, &err);
    status = nhc_zns_modeled(n, req, r.zone, ok, err, true);
    if (status) {
        return status;
    }
    lba = nhc_zns_lba(n, r.zone, off);
    trace_nhc_zns_append(le16_to_cpu(rw->cid), r.zone, lba);
    req->cqe.result = cpu_to_le32(lba);
    req->cqe.dw1 = cpu_to_le32(lba >> 32);
    nhc_zns_count(n, true, r.len);
    nhc_io_arm(n, req, now, done, 1);
    nhc_io_write_backend(n, req, n->zns->base + (lba << n->lba_shift), r.len, true);
    return NHC_ASYNC;
}

/* ------------------------------------------------------------------------------ management */

/*
 * The zones a Reset emptied get zeroes on the drive, one after another (reads of an empty
 * zone return zeroes, as DLFEAT says); req->bounce lists them and req->bounce_len counts the
 * ones still to do.
 */
static void nhc_zns_zero_next(void *opaque, int ret)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
    NhcZns *z = n->zns;
    bool was = nhc_guard_enter(n);

    req->aiocb = NULL;
    while (ret == 0 && req->bounce_len && !req->aborted) {
        uint32_t zone = ((uint32_t *)req->bounce)[--req->bounce_len];
        uint64_t off = z->base + ((uint64_t)zone << (z->zsze_shift + n->lba_shift));

        nhc_event(n, NHC_EV_BACKEND_ISSUE);
        if (nhc_exact_time(n)) {
            ret = blk_pwrite_zeroes(n->blkconf.blk, off, z->cap, BDRV_REQ_MAY_UNMAP);
            continue;
        }
        req->aiocb = blk_aio_pwrite_zeroes(n->blkconf.blk, off, z->cap, BDRV_REQ_MAY_UNMAP,
                                           nhc_zns_zero_next, req);
        nhc_guard_exit(n, was);
        return;
    }
    nhc_req_backend_done(req, ret);
    nhc_guard_exit(n, was);
}

/* The zones a Reset of @zone (or of every zone Select All picks) is about to empty. */
static uint32_t nhc_zns_reset_set(NhcCtrl *n, uint32_t zone, uint32_t *out)
{
    uint32_t cnt = 0;
    NhZoneInfo info;

    if (zone != NH_ZONE_ALL) {
        out[0] = zone;      /* a state Reset cannot leave is refused before anything is zeroed */
        return 1;
    }
    for (uint32_t i = 0; i < n->zns->zones; i++) {
        if (nh_engine_zone_info(n->engine, i, &info) &&
            (info.state == NH_ZONE_IMP_OPEN || info.state == NH_ZONE_EXP_OPEN ||
             info.state == NH_ZONE_CLOSED || info.state == NH_ZONE_FULL)) {
            out[cnt++] = i;
        }
    }
    return cnt;
}

static uint16_t nhc_zns_send_check(NhcCtrl *n, NhcReq *req)
{
    NvmeZoneSendCmd *c = (NvmeZoneSendCmd *)&req->cmd;
    uint64_t slba = le64_to_cpu(c->slba);
    bool all = c->zsflags & NVME_ZSFLAG_SELECT_ALL;

    trace_nhc_zns_mgmt_send(le16_to_cpu(c->cid), c->zsa, slba, all);
    if (c->zsa < NVME_ZONE_ACTION_CLOSE || c->zsa > NVME_ZONE_ACTION_OFFLINE ||
        (c->zsflags & NVME_ZSFLAG_ZRWA_ALLOC)) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* no descriptor extensions, no ZRWA */
    }
    if (all) {
        return NVME_SUCCESS;                    /* the SLBA is ignored */
    }
    if (slba >= n->zns->nsze) {
        return NHC_ERR(NVME_LBA_RANGE);
    }
    if (slba & ((1ull << n->zns->zsze_shift) - 1)) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* not a zone's first LBA */
    }
    return NVME_SUCCESS;
}

static uint16_t nhc_zns_mgmt_send(NhcCtrl *n, NhcReq *req)
{
    NvmeZoneSendCmd *c = (NvmeZoneSendCmd *)&req->cmd;
    uint32_t zone = c->zsflags & NVME_ZSFLAG_SELECT_ALL ? NH_ZONE_ALL :
                    le64_to_cpu(c->slba) >> n->zns->zsze_shift;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    g_autoptr(GError) err = NULL;
    uint32_t *reset = NULL, nreset = 0;
    uint64_t done = now;
    uint16_t status;
    bool ok;

    if (c->zsa == NVME_ZONE_ACTION_RESET) {
        reset = g_new(uint32_t, n->zns->zones);
        req->bounce = (uint8_t *)reset;
        nreset = nhc_zns_reset_set(n, zone, reset);
    }
    ok = nh_engine_zone_action(n->engine, (NhZoneAction)c->zsa, zone, now, &done, &err);
    status = nhc_zns_modeled(n, req, zone, ok, err, true);
    if (status) {
        return status;
    }
    if (!nreset) {
        if (done <= (uint64_t)now) {
            return NVME_SUCCESS;
        }
        nhc_io_arm(n, req, now, done, 0);
        return NHC_ASYNC;
    }
    nhc_io_arm(n, req, now, done, 1);
    req->bounce_len = nreset;
    nhc_zns_zero_next(req, 0);
    return NHC_ASYNC;
}

/* The report's buffer: Number of Dwords + 1 dwords, held to MDTS by the dispatch. */
static uint64_t nhc_zns_report_len(NhcCtrl *n, NhcReq *req)
{
    return ((uint64_t)le32_to_cpu(req->cmd.cdw12) + 1) * 4;
}

static void nhc_zns_descriptor(NhcCtrl *n, uint32_t zone, const NhZoneInfo *info,
                               NvmeZoneDescr *d)
{
    uint64_t zslba = (uint64_t)zone << n->zns->zsze_shift;
    uint64_t wp = zslba + (info->wp >> n->lba_shift);

    if (info->state == NH_ZONE_FULL) {
        wp = zslba + n->zns->zcap;
    } else if (info->state == NH_ZONE_READ_ONLY || info->state == NH_ZONE_OFFLINE) {
        wp = UINT64_MAX;                        /* no valid write pointer */
    }
    d->zt = NVME_ZONE_TYPE_SEQ_WRITE;
    d->zs = info->state << 4;
    d->zcap = cpu_to_le64(n->zns->zcap);
    d->zslba = cpu_to_le64(zslba);
    d->wp = cpu_to_le64(wp);
}

/*
 * Zone Management Receive, Report Zones: the zones from the one holding the SLBA on, those in
 * the state the options select; the header counts every such zone, or with Partial Report
 * only those the buffer holds.
 */
static uint16_t nhc_zns_mgmt_recv(NhcCtrl *n, NhcReq *req)
{
    uint64_t slba = le32_to_cpu(req->cmd.cdw10) | (uint64_t)le32_to_cpu(req->cmd.cdw11) << 32;
    uint32_t dw13 = le32_to_cpu(req->cmd.cdw13);
    uint8_t zra = dw13 & 0xff, zrasf = (dw13 >> 8) & 0xff;
    bool partial = dw13 & (1 << 16);
    uint64_t len = nhc_zns_report_len(n, req), max, count = 0;
    g_autofree uint8_t *buf = NULL;
    NhZoneInfo info;

    trace_nhc_zns_mgmt_recv(le16_to_cpu(req->cmd.cid), zra, zrasf, partial, slba, len);
    if (zra != NVME_ZONE_REPORT || zrasf >= ARRAY_SIZE(nhc_report_state) ||
        len < sizeof(NvmeZoneReportHeader)) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* Extended Report: no extensions (ZDES 0) */
    }
    if (slba >= n->zns->nsze) {
        return NHC_ERR(NVME_LBA_RANGE);
    }
    buf = g_malloc0(len);
    max = (len - sizeof(NvmeZoneReportHeader)) / sizeof(NvmeZoneDescr);
    for (uint32_t zone = slba >> n->zns->zsze_shift; zone < n->zns->zones; zone++) {
        if (!nh_engine_zone_info(n->engine, zone, &info) ||
            (zrasf && info.state != nhc_report_state[zrasf])) {
            continue;
        }
        if (count == max && partial) {
            break;
        }
        if (count < max) {
            nhc_zns_descriptor(n, zone, &info, (NvmeZoneDescr *)(buf +
                               sizeof(NvmeZoneReportHeader) + count * sizeof(NvmeZoneDescr)));
        }
        count++;
    }
    ((NvmeZoneReportHeader *)buf)->nr_zones = cpu_to_le64(count);
    return nhc_dma_to_host(n, buf, len, &req->cmd);
}

/*
 * The Zoned Namespace Command Set (dispatch in cmds.c; the Commands Supported and Effects log
 * reports it for CSI 02h).  Writes, appends and zone management change what LBAs read (LBCC).
 */
const NhcCmd nhc_zns_cmds[256] = {
    [NVME_CMD_FLUSH] = { .execute = nhc_io_flush, .flags = NHC_CMD_NSID },
    [NVME_CMD_WRITE] = {
        .execute = nhc_zns_rw, .check = nhc_zns_rw_check, .data_len = nhc_zns_rw_len,
        .effects = NVME_CMD_EFF_LBCC, .flags = NHC_CMD_NSID | NHC_CMD_DATA_IN,
    },
    [NVME_CMD_READ] = {
        .execute = nhc_zns_rw, .check = nhc_zns_rw_check, .data_len = nhc_zns_rw_len,
        .flags = NHC_CMD_NSID | NHC_CMD_DATA_OUT,
    },
    [NVME_CMD_ZONE_MGMT_SEND] = {
        .execute = nhc_zns_mgmt_send, .check = nhc_zns_send_check,
        .effects = NVME_CMD_EFF_LBCC, .flags = NHC_CMD_NSID,
    },
    [NVME_CMD_ZONE_MGMT_RECV] = {
        .execute = nhc_zns_mgmt_recv, .data_len = nhc_zns_report_len, .flags = NHC_CMD_NSID,
    },
    [NVME_CMD_ZONE_APPEND] = {
        .execute = nhc_zns_append, .check = nhc_zns_rw_check, .data_len = nhc_zns_rw_len,
        .effects = NVME_CMD_EFF_LBCC, .flags = NHC_CMD_NSID | NHC_CMD_DATA_IN,
    },
};
