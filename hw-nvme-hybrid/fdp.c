/*
 * fdp.c - Flexible Data Placement (TP4146, NVMe Base Specification 2.0 and later): endurance
 * group 1 and its FDP configuration, the FDP log pages (20h configurations, 21h reclaim unit
 * handle usage, 22h statistics, 23h events) and the Endurance Group Information log (09h), the
 * FDP (1Dh) and FDP Events (1Eh) features, I/O Management Receive (12h, Reclaim Unit Handle
 * Status) and Send (1Dh, Reclaim Unit Handle Update), and the placement identifier of a Write
 * (DTYPE 2).  docs/device.md states every decision.
 *
 * Placement is the engine's (docs/placement.md): placement handle h is reclaim unit handle h
 * and engine tag h, so handle 0 writes on the FTL's own host frontier (where writes without a
 * directive go too) and handle h >= 1 on the frontier of stream h.  A reclaim unit is what one
 * frontier fills at a time, a block on every plane (nh_engine_unit_bytes); one reclaim group.
 * The statistics log's byte counts are the engine's host and NAND counters, so its media /
 * host ratio is the device's real write amplification.
 *
 * FDP is enabled from power-on when the device is created with fdp=on: the specification
 * lets the FDP feature change only while the endurance group has no namespace, and this
 * device's namespace exists from the start (no Namespace Management).
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"

#include "nvme-hybrid.h"
#include "trace.h"

#define NHC_FDP_EVENTS_MAX      63      /* events kept per log (host, controller) */
#define NHC_FDP_CONF_HDR        16      /* FDP Configurations log header (Figure 281) */
#define NHC_FDP_DESCR_HDR       64      /* an FDP Configuration Descriptor, before its RUHs */
#define NHC_FDP_RUHU_HDR        8       /* Reclaim Unit Handle Usage log header */
#define NHC_FDP_RUHS_HDR        16      /* Reclaim Unit Handle Status header */
#define NHC_FDP_EVENTS_HDR      64      /* FDP Events log header */
#define NHC_IOMR_RUH_STATUS     0x01    /* I/O Management Receive operation */
#define NHC_IOMS_RUH_UPDATE     0x01    /* I/O Management Send operation */
#define NHC_FDPA_VALID          0x80    /* FDP Attributes: the configuration is valid */
#define NHC_RUHA_HOST           0x01    /* RUH Attributes: host specified */

/* The event types this device reports, and the bit of each in a handle's enable mask. */
static const uint8_t nhc_fdp_event_types[] = {
    FDP_EVT_RU_NOT_FULLY_WRITTEN, FDP_EVT_INVALID_PID,
};

typedef struct NhcFdpLog {
    NvmeFdpEvent ev[NHC_FDP_EVENTS_MAX];
    uint32_t     n;                 /* events held, the oldest first */
} NhcFdpLog;

struct NhcFdp {
    uint16_t   nruh;                /* reclaim unit handles = placement handles = engine tags */
    uint64_t   runs;                /* Reclaim Unit Nominal Size, bytes */
    uint8_t   *enabled;             /* [nruh] FDP Events feature: bit i enables type [i] */
    NhcFdpLog  host, ctrl;
};

static uint16_t nhc_fdp_error(NhcReq *req, uint16_t status, const char *why)
{
    NHC_GUEST_ERR(trace_nhc_err_fdp(req->cmd.opcode, le32_to_cpu(req->cmd.nsid), status, why),
                  "fdp (opcode 0x%x): %s", req->cmd.opcode, why);
    return status;
}
#define NHC_FDP_ERR(req, sc, why) nhc_fdp_error(req, NHC_ERR(sc), why)

/* ------------------------------------------------------------------------------ realize */

/* fdp=on needs a reclaim unit per handle: the engine must place, with one frontier per tag. */
static bool nhc_fdp_check(NhcCtrl *n, Error **errp)
{
    const NhConfig *cfg = nh_engine_config(n->engine);
    uint32_t streams = nh_engine_stream_limit(n->engine);
    uint32_t fronts = nh_engine_stream_fronts(n->engine);
    NhPlacementAsked asked = nh_engine_placement_asked(n->engine);

    if (!streams) {
        g_autofree char *given = asked.streams == NH_CONFIG_AUTO ? g_strdup("auto") :
                                 g_strdup_printf("%" PRIu64, asked.streams);
        error_setg(errp, "fdp: needs the engine's placement for its reclaim unit handles: "
                   "streams=auto or N (N + 1 handles), with ftl=page or ftl=dftl, buffer=none, "
                   "cache-size=0 (streams=%s, ftl=%s, buffer=%s)", given, cfg->ftl,
                   cfg->buffer);
        return false;
    }
    if (asked.dstream) {
        error_setg(errp, "fdp: stream-map=dstream moves a handle's writes between frontiers; "
                   "reclaim unit handles need stream-map=fixed");
        return false;
    }
    if (fronts < streams + 1) {
        error_setg(errp, "fdp: %u handles (streams=%u and the default one) on %u physical "
                   "streams would share reclaim units: leave physical-streams auto (streams + "
                   "1, at most %u handles) or use fewer streams", streams + 1, streams, fronts,
                   fronts);
        return false;
    }
    return true;
}

bool nhc_fdp_realize(NhcCtrl *n, Error **errp)
{
    NhcFdp *f;

    if (!n->fdp_on) {
        return true;
    }
    if (!nhc_fdp_check(n, errp)) {
        return false;
    }
    f = g_new0(NhcFdp, 1);
    f->nruh = nh_engine_stream_limit(n->engine) + 1;
    f->runs = nh_engine_unit_bytes(n->engine);
    f->enabled = g_new0(uint8_t, f->nruh);
    n->fdp = f;
    n->write_hooks.place = nhc_io_write_placement;
    return true;
}

void nhc_fdp_free(NhcFdp *f)
{
    g_free(f->enabled);
    g_free(f);
}

/* Controller Level Reset: the FDP Events feature goes back to its default (none enabled);
 * reclaim units and the event logs are the endurance group's and stay. */
void nhc_fdp_reset(NhcCtrl *n)
{
    if (n->fdp) {
        memset(n->fdp->enabled, 0, n->fdp->nruh);
    }
}

/* ------------------------------------------------------------------------------ events */

static int nhc_fdp_event_bit(uint8_t type)
{
    for (int i = 0; i < ARRAY_SIZE(nhc_fdp_event_types); i++) {
        if (nhc_fdp_event_types[i] == type) {
            return i;
        }
    }
    return -1;
}

/* Record event @type of placement handle @ph (placement identifier @pid) if it is enabled;
 * a full log drops its oldest event. */
static void nhc_fdp_event(NhcCtrl *n, uint8_t type, uint16_t ph, uint16_t pid)
{
    NhcFdp *f = n->fdp;
    NhcFdpLog *log = type < 0x80 ? &f->host : &f->ctrl;
    NvmeFdpEvent *e;

    if (!(f->enabled[ph] & (1 << nhc_fdp_event_bit(type)))) {
        return;
    }
    trace_nhc_fdp_event(type, ph, pid);
    if (log->n == NHC_FDP_EVENTS_MAX) {
        memmove(&log->ev[0], &log->ev[1], sizeof(log->ev[0]) * --log->n);
    }
    e = &log->ev[log->n++];
    memset(e, 0, sizeof(*e));
    e->type = type;
    e->flags = FDPEF_PIV | FDPEF_NSIDV;
    e->pid = cpu_to_le16(pid);
    e->timestamp = cpu_to_le64(qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) / SCALE_MS);
    e->nsid = cpu_to_le32(NHC_NSID);
    e->ruhid = ph < f->nruh ? ph : 0;
}

/* ------------------------------------------------------------------------------ writes */

/*
 * The engine tag of a Write while FDP is enabled: DTYPE 2 (Data Placement) with DSPEC a valid
 * placement identifier writes through that handle, DTYPE 0 through handle 0; another DTYPE
 * (Streams among them, not supported with FDP) is Invalid Field in Command, as for any
 * directive not enabled while one is.  An invalid identifier is no error: the write goes
 * through handle 0 and an Invalid Placement Identifier event is logged (when enabled on
 * handle 0).
 */
uint16_t nhc_io_write_placement(NhcCtrl *n, NhcReq *req, uint16_t *tag)
{
    uint8_t dtype = (le32_to_cpu(req->cmd.cdw12) >> 20) & 0xf;
    uint16_t pid = le32_to_cpu(req->cmd.cdw13) >> 16;

    *tag = 0;
    if (dtype == NVME_DIRECTIVE_IDENTIFY) {
        return NVME_SUCCESS;
    }
    if (dtype != NVME_DIRECTIVE_DATA_PLACEMENT) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "write: DTYPE not supported or enabled "
                           "(with FDP only Data Placement)");
    }
    if (pid >= n->fdp->nruh) {
        NHC_GUEST_ERR(trace_nhc_err_fdp(req->cmd.opcode, le32_to_cpu(req->cmd.nsid),
                                        NVME_SUCCESS, "write: invalid placement identifier"),
                      "fdp: write with placement identifier %u beyond %u handles", pid,
                      n->fdp->nruh);
        nhc_fdp_event(n, FDP_EVT_INVALID_PID, 0, pid);
        return NVME_SUCCESS;
    }
    *tag = pid;
    return NVME_SUCCESS;
}

/* ------------------------------------------------------------------------------ log pages */

static void nhc_fdp_log_configs(NhcCtrl *n, GByteArray *page)
{
    NhcFdp *f = n->fdp;
    uint32_t dsze = NHC_FDP_DESCR_HDR + 4 * f->nruh;
    g_autofree uint8_t *b = g_malloc0(NHC_FDP_CONF_HDR + dsze);
    uint8_t *d = b + NHC_FDP_CONF_HDR;

    /* NUMFDPC 0 (0's based: one configuration), version 0, size */
    stl_le_p(b + 4, NHC_FDP_CONF_HDR + dsze);
    stw_le_p(d, dsze);
    d[2] = NHC_FDPA_VALID;                      /* RGIF 0: one reclaim group; no FDP VWC */
    stl_le_p(d + 4, 1);                         /* NRG */
    stw_le_p(d + 8, f->nruh);                   /* NRUH */
    stw_le_p(d + 10, f->nruh - 1);              /* MAXPIDS, 0's based */
    stl_le_p(d + 12, 0);                        /* NNSS, 0's based: one namespace */
    stq_le_p(d + 16, f->runs);                  /* RUNS, bytes */
    stl_le_p(d + 24, 0);                        /* ERUTL: no time limit */
    for (uint16_t i = 0; i < f->nruh; i++) {
        /* GC copies of every handle share one frontier: isolated only when first written */
        d[NHC_FDP_DESCR_HDR + 4 * i] = NVME_RUHT_INITIALLY_ISOLATED;
    }
    g_byte_array_append(page, b, NHC_FDP_CONF_HDR + dsze);
}

static void nhc_fdp_log_ruh_usage(NhcCtrl *n, GByteArray *page)
{
    uint32_t len = NHC_FDP_RUHU_HDR + 8 * n->fdp->nruh;
    g_autofree uint8_t *b = g_malloc0(len);

    stw_le_p(b, n->fdp->nruh);
    for (uint16_t i = 0; i < n->fdp->nruh; i++) {
        b[NHC_FDP_RUHU_HDR + 8 * i] = NHC_RUHA_HOST;    /* namespace 1's handle i */
    }
    g_byte_array_append(page, b, len);
}

static void nhc_fdp_log_stats(NhcCtrl *n, GByteArray *page)
{
    NvmeFdpStatsLog s = { };
    NhMediaBytes m;

    nh_engine_media_bytes(n->engine, &m);
    s.hbmw[0] = cpu_to_le64(m.host_written);
    s.mbmw[0] = cpu_to_le64(m.media_written);
    s.mbe[0] = cpu_to_le64(m.media_erased);
    g_byte_array_append(page, (uint8_t *)&s, sizeof(s));
}

static void nhc_fdp_log_events(NhcCtrl *n, bool host, GByteArray *page)
{
    NhcFdpLog *log = host ? &n->fdp->host : &n->fdp->ctrl;
    uint8_t hdr[NHC_FDP_EVENTS_HDR] = { };

    stl_le_p(hdr, log->n);
    g_byte_array_append(page, hdr, sizeof(hdr));
    g_byte_array_append(page, (uint8_t *)log->ev, log->n * sizeof(log->ev[0]));
}

/* Endurance Group Information (09h) of group 1: the SMART counters of the one group. */
static void nhc_fdp_log_endgrp(NhcCtrl *n, GByteArray *page)
{
    NvmeEndGrpLog e = { };
    NhMediaBytes m;
    NhWear wear;

    nh_engine_media_bytes(n->engine, &m);
    nh_engine_wear(n->engine, &wear);
    e.avail_spare = 100;
    e.avail_spare_thres = 10;
    e.percet_used = MIN(255, wear.pe_cycles ?
                        (uint64_t)(wear.erase_mean * 100 / wear.pe_cycles) : 0);
    e.data_units_read[0] = cpu_to_le64(DIV_ROUND_UP(n->smart.data_units_read, 1000));
    e.data_units_written[0] = cpu_to_le64(DIV_ROUND_UP(n->smart.data_units_written, 1000));
    e.media_units_written[0] = cpu_to_le64(DIV_ROUND_UP(m.media_written, 512000));
    e.host_read_commands[0] = cpu_to_le64(n->smart.host_read_cmds);
    e.host_write_commands[0] = cpu_to_le64(n->smart.host_write_cmds);
    e.no_err_info_log_entries[0] = cpu_to_le64(n->smart.error_count);
    g_byte_array_append(page, (uint8_t *)&e, sizeof(e));
}

/*
 * Get Log Page 09h and 20h-23h: the log of endurance group LSI (CDW11 bits 31:16), which must
 * be 1; LSP bit 0 of the events log selects host (1) or controller (0) events.  Without FDP
 * (fdp=off) these logs do not exist: Invalid Log Page.
 */
uint16_t nhc_fdp_log(NhcCtrl *n, NhcReq *req, uint8_t lid, GByteArray *page)
{
    uint16_t lsi = le32_to_cpu(req->cmd.cdw11) >> 16;
    uint8_t lsp = (le32_to_cpu(req->cmd.cdw10) >> 8) & 0x7f;

    trace_nhc_fdp_log(lid, lsi, lsp);
    if (!n->fdp) {
        return NHC_FDP_ERR(req, NVME_INVALID_LOG_ID, "log: FDP not supported (fdp=off)");
    }
    if (lsi != NHC_ENDGID) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "log: no such endurance group");
    }
    switch (lid) {
    case NVME_LOG_ENDGRP:           nhc_fdp_log_endgrp(n, page); break;
    case NVME_LOG_FDP_CONFS:        nhc_fdp_log_configs(n, page); break;
    case NVME_LOG_FDP_RUH_USAGE:    nhc_fdp_log_ruh_usage(n, page); break;
    case NVME_LOG_FDP_STATS:        nhc_fdp_log_stats(n, page); break;
    default:                        nhc_fdp_log_events(n, lsp & 1, page); break;
    }
    return NVME_SUCCESS;
}

/* ------------------------------------------------------------------------------ features */

/* Get Features FDP Events: up to NOET descriptors (type, enabled) of handle PHNDL; how many in
 * CQE dword 0. */
static uint16_t nhc_fdp_get_events(NhcCtrl *n, NhcReq *req, bool dflt, uint32_t *result)
{
    uint32_t dw11 = le32_to_cpu(req->cmd.cdw11);
    uint16_t ph = dw11 & 0xffff;
    uint8_t noet = (dw11 >> 16) & 0xff;
    uint8_t d[2 * ARRAY_SIZE(nhc_fdp_event_types)] = { };
    uint32_t nd = MIN(noet, ARRAY_SIZE(nhc_fdp_event_types));

    if (ph >= n->fdp->nruh) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "events feature: no such placement handle");
    }
    if (!noet) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "events feature: NOET is 0");
    }
    for (uint32_t i = 0; i < nd; i++) {
        d[2 * i] = nhc_fdp_event_types[i];
        d[2 * i + 1] = !dflt && (n->fdp->enabled[ph] & (1 << i));
    }
    *result = nd;
    return nhc_dma_to_host(n, d, 2 * nd, &req->cmd);
}

uint16_t nhc_fdp_get_feature(NhcCtrl *n, NhcReq *req, uint8_t fid, bool dflt, uint32_t *result)
{
    uint32_t nsid = le32_to_cpu(req->cmd.nsid);

    if (!n->fdp) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "feature: FDP not supported (fdp=off)");
    }
    if (fid == NVME_FDP_MODE) {
        if ((le32_to_cpu(req->cmd.cdw11) & 0xffff) != NHC_ENDGID) {
            return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "FDP feature: no such endurance group");
        }
        *result = 1;        /* FDPE 1, configuration index 0: enabled from power-on */
        return NVME_SUCCESS;
    }
    if (nsid != NHC_NSID && nsid != NVME_NSID_BROADCAST) {
        return NHC_FDP_ERR(req, NVME_INVALID_NSID, "events feature: no such namespace");
    }
    return nhc_fdp_get_events(n, req, dflt, result);
}

/* Set Features FDP Events: FDPEE (CDW12 bit 0) for the NOET types listed in the data of
 * handle PHNDL.  An unknown type changes nothing and is Invalid Field in Command. */
static uint16_t nhc_fdp_set_events(NhcCtrl *n, NhcReq *req)
{
    uint32_t dw11 = le32_to_cpu(req->cmd.cdw11);
    uint16_t ph = dw11 & 0xffff;
    uint8_t noet = (dw11 >> 16) & 0xff, mask = 0, types[256];
    bool enable = le32_to_cpu(req->cmd.cdw12) & 1;
    uint16_t status;

    if (ph >= n->fdp->nruh) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "events feature: no such placement handle");
    }
    if (!noet) {
        return NVME_SUCCESS;
    }
    status = nhc_dma_from_host(n, types, noet, &req->cmd);
    if (status) {
        return status;
    }
    for (int i = 0; i < noet; i++) {
        int bit = nhc_fdp_event_bit(types[i]);
        if (bit < 0) {
            return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "events feature: event type not "
                               "supported");
        }
        mask |= 1 << bit;
    }
    trace_nhc_fdp_set_events(ph, mask, enable);
    n->fdp->enabled[ph] = enable ? n->fdp->enabled[ph] | mask : n->fdp->enabled[ph] & ~mask;
    return NVME_SUCCESS;
}

/*
 * Set Features FDP (1Dh): ENDGID in CDW11, FDPE and FDPCIDX in CDW12.  FDP is enabled with
 * configuration 0 from power-on; a Set Features that keeps that succeeds, one that would
 * change it is Command Sequence Error, as the specification requires while the endurance
 * group has a namespace (this device's exists from the start).
 */
uint16_t nhc_fdp_set_feature(NhcCtrl *n, NhcReq *req, uint8_t fid)
{
    uint32_t dw12 = le32_to_cpu(req->cmd.cdw12);
    uint32_t nsid = le32_to_cpu(req->cmd.nsid);

    if (!n->fdp) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "feature: FDP not supported (fdp=off)");
    }
    if (fid == NVME_FDP_EVENTS) {
        if (nsid != NHC_NSID && nsid != NVME_NSID_BROADCAST) {
            return NHC_FDP_ERR(req, NVME_INVALID_NSID, "events feature: no such namespace");
        }
        return nhc_fdp_set_events(n, req);
    }
    if ((le32_to_cpu(req->cmd.cdw11) & 0xffff) != NHC_ENDGID) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "FDP feature: no such endurance group");
    }
    if ((dw12 >> 8) & 0xff) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "FDP feature: no such configuration");
    }
    if (!(dw12 & 1)) {
        return NHC_FDP_ERR(req, NVME_CMD_SEQ_ERROR, "FDP feature: cannot change while the "
                           "endurance group has a namespace");
    }
    return NVME_SUCCESS;
}

/* ------------------------------------------------------------------------------ I/O management */

/* The namespace of an I/O Management command and FDP enabled on its endurance group; *mo is
 * its Management Operation (CDW10 bits 7:0). */
static uint16_t nhc_io_mgmt_check(NhcCtrl *n, NhcReq *req, uint8_t *mo)
{
    *mo = le32_to_cpu(req->cmd.cdw10) & 0xff;
    trace_nhc_io_mgmt(req->cmd.opcode, *mo, le32_to_cpu(req->cmd.nsid));
    if (le32_to_cpu(req->cmd.nsid) != NHC_NSID) {
        return NHC_FDP_ERR(req, NVME_INVALID_NSID, "I/O management: no such namespace");
    }
    if (!n->fdp) {
        return NHC_FDP_ERR(req, NVME_FDP_DISABLED, "I/O management: FDP is not enabled");
    }
    return NVME_SUCCESS;
}

/* Reclaim Unit Handle Status: a descriptor per placement identifier, with the logical blocks
 * still free in its reclaim unit (RUAMW).  NUMD (CDW11) dwords are transferred, cut short or
 * padded with zeroes. */
static uint16_t nhc_fdp_ruh_status(NhcCtrl *n, NhcReq *req)
{
    uint64_t len = ((uint64_t)le32_to_cpu(req->cmd.cdw11) + 1) * 4;
    uint32_t size = NHC_FDP_RUHS_HDR + sizeof(NvmeRuhStatusDescr) * n->fdp->nruh;
    g_autofree uint8_t *b = NULL;

    if (len > (4096u << NHC_MDTS)) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "RUH status: NUMD beyond MDTS");
    }
    b = g_malloc0(MAX(len, size));
    stw_le_p(b + 14, n->fdp->nruh);
    for (uint16_t i = 0; i < n->fdp->nruh; i++) {
        NvmeRuhStatusDescr *d = (NvmeRuhStatusDescr *)(b + NHC_FDP_RUHS_HDR) + i;
        d->pid = cpu_to_le16(i);
        d->ruhid = cpu_to_le16(i);
        d->earutr = 0;          /* no time limit */
        d->ruamw = cpu_to_le64(nh_engine_stream_unit_left(n->engine, i) >> n->lba_shift);
    }
    return nhc_dma_to_host(n, b, len, &req->cmd);
}

uint16_t nhc_io_mgmt_recv(NhcCtrl *n, NhcReq *req)
{
    uint8_t mo;
    uint16_t status = nhc_io_mgmt_check(n, req, &mo);

    if (status || mo == NVME_IOMR_MO_NOP) {
        return status;
    }
    if (mo == NHC_IOMR_RUH_STATUS) {
        return nhc_fdp_ruh_status(n, req);
    }
    return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "I/O management receive: operation not supported");
}

/* Reclaim Unit Handle Update: NPID (CDW10 bits 31:16, 0's based) placement identifiers in
 * the data; each one's reclaim unit is closed as it is and the next write starts a new one.
 * Every identifier is checked before any unit changes. */
static uint16_t nhc_fdp_ruh_update(NhcCtrl *n, NhcReq *req)
{
    uint32_t npid = (le32_to_cpu(req->cmd.cdw10) >> 16) + 1;
    g_autofree uint16_t *pids = NULL;
    uint16_t status;

    if (npid > n->fdp->nruh) {
        return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "RUH update: more identifiers than "
                           "MAXPIDS");
    }
    pids = g_new(uint16_t, npid);
    status = nhc_dma_from_host(n, pids, npid * sizeof(*pids), &req->cmd);
    if (status) {
        return status;
    }
    for (uint32_t i = 0; i < npid; i++) {
        if (le16_to_cpu(pids[i]) >= n->fdp->nruh) {
            return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "RUH update: invalid placement "
                               "identifier");
        }
    }
    for (uint32_t i = 0; i < npid; i++) {
        uint16_t pid = le16_to_cpu(pids[i]);
        uint64_t left = nh_engine_stream_unit_close(n->engine, pid);

        trace_nhc_fdp_ruh_update(pid, left);
        if (left) {
            nhc_fdp_event(n, FDP_EVT_RU_NOT_FULLY_WRITTEN, pid, pid);
        }
    }
    nhc_state_touch(n);
    return NVME_SUCCESS;
}

uint16_t nhc_io_mgmt_send(NhcCtrl *n, NhcReq *req)
{
    uint8_t mo;
    uint16_t status = nhc_io_mgmt_check(n, req, &mo);

    if (status || mo == NVME_IOMS_MO_NOP) {
        return status;
    }
    if (mo == NHC_IOMS_RUH_UPDATE) {
        return nhc_fdp_ruh_update(n, req);
    }
    return NHC_FDP_ERR(req, NVME_INVALID_FIELD, "I/O management send: operation not supported");
}
