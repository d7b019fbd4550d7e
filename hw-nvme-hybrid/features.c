/*
 * features.c - Get Features and Set Features (NVMe Base 1.4, 5.15 and 5.21): every feature
 * 1.4 makes mandatory for an NVM controller, plus Volatile Write Cache and Timestamp.  None is
 * saveable; Get Features SEL selects current, default (saved = default) or capabilities.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "system/block-backend.h"

#include "nvme-hybrid.h"
#include "trace.h"

#define NHC_PM_WH_MAX       2       /* Workload Hints 0 (none), 1 and 2; the rest reserved */
#define NHC_TMPSEL_ALL      0xf     /* Set Features only: every temperature sensor */

/* The only temperature the drive reports is the composite one, a constant. */
bool nhc_temperature_warning(NhcCtrl *n)
{
    return NHC_TEMPERATURE_K >= n->features.temp_over ||
           NHC_TEMPERATURE_K <= n->features.temp_under;
}

/* Temperature Threshold: TMPSEL selects the composite temperature (or, on Set, all sensors,
 * which here is the same), THSEL the over or under threshold. */
static uint16_t nhc_temp_threshold(NhcCtrl *n, uint32_t dw11, bool set, uint16_t **th)
{
    uint32_t tmpsel = (dw11 >> 16) & 0xf, thsel = (dw11 >> 20) & 3;

    if ((tmpsel && !(set && tmpsel == NHC_TMPSEL_ALL)) || thsel > 1) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    *th = thsel ? &n->features.temp_under : &n->features.temp_over;
    return NVME_SUCCESS;
}

static uint16_t nhc_check_ns(uint32_t nsid)
{
    return nsid == NHC_NSID || nsid == NVME_NSID_BROADCAST ?
           NVME_SUCCESS : NHC_ERR(NVME_INVALID_NSID);
}

static uint16_t nhc_get_timestamp(NhcCtrl *n, NhcReq *req, bool dflt)
{
    uint8_t ts[8] = { 0 };
    uint64_t now_ms;

    if (n->features.timestamp_set && !dflt) {
        now_ms = n->features.timestamp_ms +
                 (qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - n->features.timestamp_base_ns) /
                 SCALE_MS;
        ts[6] = 1 << 1;     /* Timestamp Origin: set by a host */
    } else {
        now_ms = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) / SCALE_MS;  /* since reset */
    }
    stq_le_p(ts, now_ms & 0xffffffffffffull);
    return nhc_dma_to_host(n, ts, sizeof(ts), &req->cmd);
}

/* The current value of feature @fid (or its default, @dflt) in *result. */
static uint16_t nhc_feature_value(NhcCtrl *n, NhcReq *req, uint8_t fid, bool dflt,
                                  uint32_t *result)
{
    NhcFeatures *f = &n->features;
    uint32_t dw11 = le32_to_cpu(req->cmd.cdw11);
    uint16_t status = NVME_SUCCESS, *th;

    switch (fid) {
    case NVME_ARBITRATION:
        *result = dflt ? NHC_ARBITRATION_DEFAULT : f->arbitration;
        break;
    case NVME_POWER_MANAGEMENT:
        *result = dflt ? 0 : f->power_mgmt;
        break;
    case NVME_TEMPERATURE_THRESHOLD:
        status = nhc_temp_threshold(n, dw11, false, &th);
        if (!status) {
            *result = dflt ? (th == &f->temp_over ? NHC_WCTEMP_K : 0) : *th;
        }
        break;
    case NVME_ERROR_RECOVERY:
        status = nhc_check_ns(le32_to_cpu(req->cmd.nsid));
        *result = dflt ? 0 : f->error_recovery;
        break;
    case NVME_VOLATILE_WRITE_CACHE:
        *result = dflt ? 1 : n->wce;
        break;
    case NVME_NUMBER_OF_QUEUES:
        *result = dflt ? ((n->max_ioqpairs - 1) << 16 | (n->max_ioqpairs - 1)) : f->num_queues;
        break;
    case NVME_INTERRUPT_COALESCING:
        *result = dflt ? 0 : f->int_coalescing;
        break;
    case NVME_INTERRUPT_VECTOR_CONF: {
        uint32_t iv = dw11 & 0xffff;
        if (iv >= n->num_vectors) {
            return NHC_ERR(NVME_INVALID_FIELD);
        }
        *result = iv | (!dflt && test_bit(iv, f->vector_no_coalescing) ?
                        NVME_INTVC_NOCOALESCING : 0);
        break;
    }
    case NVME_WRITE_ATOMICITY:
        *result = dflt ? 0 : f->write_atomicity;
        break;
    case NVME_ASYNCHRONOUS_EVENT_CONF:
        *result = dflt ? 0 : f->async_config;
        break;
    case NVME_FDP_MODE:
    case NVME_FDP_EVENTS:
        return nhc_fdp_get_feature(n, req, fid, dflt, result);
    case NVME_COMMAND_SET_PROFILE:
        /* with a zoned namespace: index 0 of Identify CNS 1Ch, the only combination */
        if (!n->zns) {
            return NHC_ERR(NVME_INVALID_FIELD);
        }
        *result = 0;
        break;
    default:
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    return status;
}

uint16_t nhc_admin_get_features(NhcCtrl *n, NhcReq *req)
{
    uint32_t dw10 = le32_to_cpu(req->cmd.cdw10);
    uint8_t fid = NVME_GETSETFEAT_FID(dw10);
    uint8_t sel = NVME_GETFEAT_SELECT(dw10);
    bool dflt = sel == NVME_GETFEAT_SELECT_DEFAULT || sel == NVME_GETFEAT_SELECT_SAVED;
    uint32_t result = 0;
    uint16_t status;

    trace_nhc_admin_get_features(fid, sel, le32_to_cpu(req->cmd.cdw11));
    if (sel > NVME_GETFEAT_SELECT_CAP) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    if (fid == NVME_VOLATILE_WRITE_CACHE && !n->vwc_present) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* see nhc_set_write_cache */
    }
    if (sel == NVME_GETFEAT_SELECT_CAP && fid == NVME_FDP_EVENTS && n->fdp) {
        /* capabilities only: no placement handle, no descriptors to transfer */
    } else if (fid == NVME_TIMESTAMP) {
        if (sel != NVME_GETFEAT_SELECT_CAP) {
            return nhc_get_timestamp(n, req, dflt);
        }
    } else {
        status = nhc_feature_value(n, req, fid, dflt, &result);
        if (status) {
            return status;
        }
    }
    if (sel == NVME_GETFEAT_SELECT_CAP) {
        /* FDP (1Dh) cannot change while the namespace exists (fdp.c) */
        result = (fid == NVME_FDP_MODE ? 0 : NVME_FEAT_CAP_CHANGE) |
                 (fid == NVME_ERROR_RECOVERY || fid == NVME_FDP_EVENTS ? NVME_FEAT_CAP_NS : 0);
    }
    req->cqe.result = cpu_to_le32(result);
    return NVME_SUCCESS;
}

/*
 * Volatile Write Cache: disabling it makes every later write FUA and drains what the buffer and
 * the backend hold; the command completes when the backend's flush has.  Without a volatile
 * write cache (Identify Controller VWC bit 0 clear) the feature is not supported: Get and Set
 * Features of it, whatever they ask, abort with Invalid Field in Command, as for any feature
 * identifier the controller does not support.
 */
static uint16_t nhc_set_write_cache(NhcCtrl *n, NhcReq *req, bool enable)
{
    NhRequest flush = { .op = NH_OP_FLUSH };
    uint64_t done;

    if (!n->vwc_present) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    n->wce = enable;
    if (n->backend_wc) {
        blk_set_enable_write_cache(n->blkconf.blk, enable);
    }
    if (enable) {
        return NVME_SUCCESS;
    }
    nh_engine_submit(n->engine, &flush, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL), &done, NULL);
    nhc_write_flushed(n);
    req->pending = 1;
    nhc_backend_flush(n, req);
    return NHC_ASYNC;
}

static uint16_t nhc_set_num_queues(NhcCtrl *n, NhcReq *req, uint32_t dw11)
{
    uint32_t nsqr = dw11 & 0xffff, ncqr = dw11 >> 16;
    uint32_t max = n->max_ioqpairs - 1;

    if (nsqr == 0xffff || ncqr == 0xffff) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    for (uint32_t i = 1; i < n->num_queues; i++) {
        if (n->sq[i] || n->cq[i]) {
            return NHC_ERR(NVME_CMD_SEQ_ERROR);
        }
    }
    n->features.num_queues = MIN(ncqr, max) << 16 | MIN(nsqr, max);
    req->cqe.result = cpu_to_le32(n->features.num_queues);
    return NVME_SUCCESS;
}

static uint16_t nhc_set_temp_threshold(NhcCtrl *n, uint32_t dw11)
{
    uint16_t *th, status = nhc_temp_threshold(n, dw11, true, &th);
    bool was = nhc_temperature_warning(n);

    if (status) {
        return status;
    }
    *th = dw11 & 0xffff;
    /* Crossing a threshold is a SMART event (Critical Warning bit 1, when enabled). */
    if (!was && nhc_temperature_warning(n) &&
        (n->features.async_config & NVME_SMART_TEMPERATURE)) {
        nhc_raise_event(n, NVME_AER_TYPE_SMART, NVME_AER_INFO_SMART_TEMP_THRESH,
                        NVME_LOG_SMART_INFO);
    }
    return NVME_SUCCESS;
}

static uint16_t nhc_set_timestamp(NhcCtrl *n, NhcReq *req)
{
    uint8_t ts[8];
    uint16_t status = nhc_dma_from_host(n, ts, sizeof(ts), &req->cmd);

    if (status) {
        return status;
    }
    n->features.timestamp_ms = ldq_le_p(ts) & 0xffffffffffffull;
    n->features.timestamp_base_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    n->features.timestamp_set = true;
    return NVME_SUCCESS;
}

uint16_t nhc_admin_set_features(NhcCtrl *n, NhcReq *req)
{
    NhcFeatures *f = &n->features;
    uint32_t dw10 = le32_to_cpu(req->cmd.cdw10);
    uint32_t dw11 = le32_to_cpu(req->cmd.cdw11);

    trace_nhc_admin_set_features(NVME_GETSETFEAT_FID(dw10), dw11);
    if (NVME_SETFEAT_SAVE(dw10)) {
        return NHC_ERR(NVME_FID_NOT_SAVEABLE);
    }
    switch (NVME_GETSETFEAT_FID(dw10)) {
    case NVME_ARBITRATION:
        f->arbitration = dw11;      /* round robin with Arbitration Burst: nhc_fetch_bh() */
        break;
    case NVME_POWER_MANAGEMENT:
        /* one power state (NPSS 0) */
        if ((dw11 & 0x1f) > 0 || ((dw11 >> 5) & 7) > NHC_PM_WH_MAX) {
            return NHC_ERR(NVME_INVALID_FIELD);
        }
        f->power_mgmt = dw11 & 0xff;
        break;
    case NVME_TEMPERATURE_THRESHOLD:
        return nhc_set_temp_threshold(n, dw11);
    case NVME_ERROR_RECOVERY: {
        uint16_t status = nhc_check_ns(le32_to_cpu(req->cmd.nsid));
        if (status) {
            return status;
        }
        if (dw11 & (1 << 16)) {
            return NHC_ERR(NVME_INVALID_FIELD);      /* DULBE: NSFEAT.DAE is 0 */
        }
        f->error_recovery = dw11 & 0xffff;
        break;
    }
    case NVME_VOLATILE_WRITE_CACHE:
        return nhc_set_write_cache(n, req, dw11 & 1);
    case NVME_NUMBER_OF_QUEUES:
        return nhc_set_num_queues(n, req, dw11);
    case NVME_INTERRUPT_COALESCING:
        f->int_coalescing = dw11 & 0xffff;
        break;
    case NVME_INTERRUPT_VECTOR_CONF:
        if ((dw11 & 0xffff) >= n->num_vectors) {
            return NHC_ERR(NVME_INVALID_FIELD);
        }
        if (dw11 & NVME_INTVC_NOCOALESCING) {
            set_bit(dw11 & 0xffff, f->vector_no_coalescing);
        } else {
            clear_bit(dw11 & 0xffff, f->vector_no_coalescing);
        }
        break;
    case NVME_WRITE_ATOMICITY:
        f->write_atomicity = dw11 & 1;
        break;
    case NVME_ASYNCHRONOUS_EVENT_CONF:
        f->async_config = dw11;
        break;
    case NVME_TIMESTAMP:
        return nhc_set_timestamp(n, req);
    case NVME_FDP_MODE:
    case NVME_FDP_EVENTS:
        return nhc_fdp_set_feature(n, req, NVME_GETSETFEAT_FID(dw10));
    case NVME_COMMAND_SET_PROFILE:
        if (!n->zns) {
            return NHC_ERR(NVME_INVALID_FIELD);
        }
        return (dw11 & 0x1ff) ? NHC_ERR(NVME_IOCS_COMBINATION_REJECTED) : NVME_SUCCESS;
    default:
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    return NVME_SUCCESS;
}
