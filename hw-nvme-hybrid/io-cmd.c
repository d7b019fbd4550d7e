/*
 * io-cmd.c - NVM I/O commands (Read, Write, Flush, Write Zeroes, Dataset Management, Compare)
 * and their table, and the hand-off to the engine and the block backend.
 *
 * Each command is first validated (nothing is touched on error), then modeled by the engine,
 * which returns its completion time, then carried out on the block backend.  It completes when
 * both the backend and a virtual-clock timer at the modeled time have finished.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "system/block-backend.h"

#include "nvme-hybrid.h"
#include "trace.h"


/* ------------------------------------------------------------------------------ model */

/* Model one request (on engine stream @stream, 0: none) in the engine; *done receives its
 * completion time. */
static uint16_t nhc_io_engine(NhcCtrl *n, NhOp op, uint64_t off, uint64_t len, uint32_t flags,
                              uint16_t stream, int64_t now, uint64_t *done)
{
    NhRequest r = { .op = op, .flags = flags, .offset = off, .length = len, .stream = stream };
    g_autoptr(GError) err = NULL;

    nhc_event(n, NHC_EV_MODEL);
    if (!nh_engine_submit(n->engine, &r, now, done, &err)) {
        NHC_GUEST_ERR(trace_nhc_err_engine(err->message), "engine refused a request: %s",
                      err->message);
        return NVME_INTERNAL_DEV_ERROR;
    }
    if (op == NH_OP_WRITE || op == NH_OP_TRIM) {
        nhc_state_touch(n);
    }
    n->state_changed = true;
    return NVME_SUCCESS;
}

/*
 * The request is in flight: it completes at the modeled time @done and after @parts block-layer
 * operations have reported in through nhc_req_io_done().
 */
void nhc_io_arm(NhcCtrl *n, NhcReq *req, int64_t now, uint64_t done, int parts)
{
    req->is_io = true;
    if (n->io_outstanding++ == 0) {
        n->busy_since_ns = now;
    }
    /* Already due (latency=zero, or a model faster than the clock's step): no timer, the
     * block layer's completion completes the command. */
    if (done <= (uint64_t)now) {
        req->pending = parts;
        return;
    }
    req->pending = parts + 1;
    timer_mod(req->timer, done);
}

/* The common case: one engine request, one block-layer operation. */
static uint16_t nhc_io_model(NhcCtrl *n, NhcReq *req, NhOp op, uint64_t off, uint64_t len,
                             uint32_t flags, uint16_t stream)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t done;
    uint16_t status = nhc_io_engine(n, op, off, len, flags, stream, now, &done);

    if (status) {
        return status;
    }
    nhc_io_arm(n, req, now, done, 1);
    return NHC_ASYNC;
}

/* Does @req move data from the backend (a failure is then a read error, not a write fault)? */
static bool nhc_req_reads_backend(NhcReq *req)
{
    uint8_t op = req->cmd.opcode;

    if (!req->sq->sqid) {
        return op == NHC_ADM_BA_PIN;
    }
    return op == NVME_CMD_READ || op == NVME_CMD_COMPARE;
}

/* Where a request's block I/O ends; @ret < 0 names the failure. */
void nhc_req_backend_done(NhcReq *req, int ret)
{
    req->aiocb = NULL;
    if (ret == -ECANCELED) {
        req->status = NVME_CMD_ABORT_SQ_DEL;
    } else if (ret < 0) {
        trace_nhc_err_backend(req->sq->sqid, le16_to_cpu(req->cmd.cid), ret);
        error_report_once("nvme-hybrid: block backend I/O failed: %s", strerror(-ret));
        req->status = nhc_req_reads_backend(req) ? NVME_UNRECOVERED_READ : NVME_WRITE_FAULT;
    }
    nhc_req_io_done(req);
}

void nhc_req_backend_cb(void *opaque, int ret)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
    bool was = nhc_guard_enter(n);

    nhc_event(n, NHC_EV_BACKEND_DONE);
    nhc_req_backend_done(req, ret);
    nhc_guard_exit(n, was);
}

/*
 * Under -icount the virtual clock runs with guest instructions and jumps to the next timer
 * when the vCPUs idle, so an asynchronous backend completion could land arbitrarily late in
 * guest time.  There, every command (this one, and Compare, Write Zeroes, Dataset Management
 * and Flush below) does its backend I/O synchronously while the doorbell write is handled, and
 * the guest sees exactly the modeled completion time.
 */
static BlockAIOCB *nhc_blk_fua_write(int64_t offset, QEMUIOVector *iov,
                                     BlockCompletionFunc *cb, void *cb_opaque, void *opaque)
{
    NhcCtrl *n = opaque;

    return blk_aio_pwritev(n->blkconf.blk, offset, iov, BDRV_REQ_FUA, cb, cb_opaque);
}

/* Move @buf to (@to_host) or from the guest memory of @req's data pointer; Data Transfer Error
 * where the memory does not take it. */
static uint16_t nhc_qsg_copy(NhcCtrl *n, NhcReq *req, uint8_t *buf, bool to_host)
{
    for (int i = 0; i < req->qsg.nsg; i++) {
        MemTxResult r = to_host ?
            pci_dma_write(PCI_DEVICE(n), req->qsg.sg[i].base, buf, req->qsg.sg[i].len) :
            pci_dma_read(PCI_DEVICE(n), req->qsg.sg[i].base, buf, req->qsg.sg[i].len);
        if (r != MEMTX_OK) {
            return NHC_ERR(NVME_DATA_TRAS_ERROR);
        }
        buf += req->qsg.sg[i].len;
    }
    return NVME_SUCCESS;
}

static void nhc_io_rw_sync(NhcCtrl *n, NhcReq *req, uint64_t off, uint64_t len, bool write,
                           bool fua)
{
    g_autofree uint8_t *buf = g_malloc(len);
    int ret = 0;

    nhc_event(n, NHC_EV_BACKEND_ISSUE);
    if (!write) {
        ret = blk_pread(n->blkconf.blk, off, len, buf, 0);
    } else {
        req->status = nhc_qsg_copy(n, req, buf, false);
    }
    if (write && ret == 0 && !req->status) {
        ret = blk_pwrite(n->blkconf.blk, off, len, buf, fua ? BDRV_REQ_FUA : 0);
    }
    if (!write && ret == 0) {
        if (nhc_ba_dma_hits_window(n, &req->qsg)) {
            nhc_event(n, NHC_EV_WINDOW_DMA);
        }
        req->status = nhc_qsg_copy(n, req, buf, true);
    }
    nhc_req_backend_cb(req, ret);
}

/*
 * A Read whose data pointer reaches into the BAR1 window is read into a buffer and copied into
 * guest memory here, under the BQL.  A power cut (which holds the BQL) then finds the window
 * before the read or after it, never with the block layer's worker halfway through it, and the
 * window's saved checksum matches what is saved.
 */
static void nhc_io_read_bounced_cb(void *opaque, int ret)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
    bool was;

    if (n->power_cut) {
        return;     /* the power failed (the cut's restore polls the block layer): it is over */
    }
    was = nhc_guard_enter(n);
    nhc_event(n, NHC_EV_BACKEND_DONE);
    req->aiocb = NULL;
    if (ret == 0 && !req->aborted) {
        nhc_event(n, NHC_EV_WINDOW_DMA);
        req->status = nhc_qsg_copy(n, req, req->bounce, true);
    }
    nhc_req_backend_done(req, ret);
    nhc_guard_exit(n, was);
}

/*
 * Move @iov to (@write) or from the backend at @off for @req; @cb runs when it is done, at once
 * under -icount (see above).  Commands that are not NVM I/O (the BAR1 window's) use this, so no
 * command ever waits for the backend inside the fetch loop.
 */
void nhc_backend_rw(NhcCtrl *n, NhcReq *req, int64_t off, QEMUIOVector *iov, bool write,
                    BdrvRequestFlags flags, BlockCompletionFunc *cb)
{
    BlockBackend *blk = n->blkconf.blk;

    nhc_event(n, NHC_EV_BACKEND_ISSUE);
    if (nhc_exact_time(n)) {
        int ret = write ? blk_pwritev(blk, off, iov->size, iov, flags)
                        : blk_preadv(blk, off, iov->size, iov, flags);
        cb(req, MIN(ret, 0));
        return;
    }
    req->aiocb = write ? blk_aio_pwritev(blk, off, iov, flags, cb, req)
                       : blk_aio_preadv(blk, off, iov, flags, cb, req);
}

static void nhc_flush_done_cb(void *opaque, int ret)
{
    NhcReq *req = opaque;

    nhc_event(req->sq->n, NHC_EV_FLUSH_END);
    nhc_req_backend_cb(req, ret);
}

/* Flush the backend for @req (Flush, Volatile Write Cache disabled), which then completes. */
void nhc_backend_flush(NhcCtrl *n, NhcReq *req)
{
    nhc_event(n, NHC_EV_FLUSH_BEGIN);
    if (nhc_exact_time(n)) {
        nhc_flush_done_cb(req, blk_flush(n->blkconf.blk));
        return;
    }
    req->aiocb = blk_aio_flush(n->blkconf.blk, nhc_flush_done_cb, req);
}

/* ------------------------------------------------------------------------------ commands */

static uint16_t nhc_check_range(NhcCtrl *n, uint64_t slba, uint64_t nlb)
{
    if (slba >= n->nsze || nlb > n->nsze - slba) {
        return NHC_ERR(NVME_LBA_RANGE);
    }
    return NVME_SUCCESS;
}

/*
 * What Read, Write and Compare check before anything happens: the LBA range and, for a write,
 * that no BAR1 entry pins it.  The dispatch then holds their length to MDTS and maps the PRPs
 * into req->qsg.
 */
static uint16_t nhc_rw_check(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    uint64_t slba = le64_to_cpu(rw->slba);
    uint32_t nlb = le16_to_cpu(rw->nlb) + 1;
    uint16_t status;

    if (rw->opcode == NVME_CMD_COMPARE) {
        trace_nhc_io_compare(le16_to_cpu(rw->cid), slba, nlb);
    } else {
        trace_nhc_io_rw(le16_to_cpu(rw->cid), rw->opcode == NVME_CMD_WRITE, slba, nlb,
                        le16_to_cpu(rw->control) & NVME_RW_FUA);
    }
    status = nhc_check_range(n, slba, nlb);
    if (!status && rw->opcode == NVME_CMD_WRITE) {
        status = nhc_write_admit(n, slba, nlb);
    }
    return status;
}

static uint64_t nhc_rw_len(NhcCtrl *n, NhcReq *req)
{
    return (uint64_t)(le16_to_cpu(((NvmeRwCmd *)&req->cmd)->nlb) + 1) << n->lba_shift;
}

/*
 * A Write's bytes to the backend at @off (the write path's issue hook may have read the old
 * ones first).  FUA reaches the backend too, so the data is on stable storage when the write
 * completes even though the backend caches writes (the block layer flushes where it must).
 */
void nhc_io_write_backend(NhcCtrl *n, NhcReq *req, uint64_t off, uint64_t len, bool fua)
{
    if (nhc_exact_time(n)) {
        nhc_io_rw_sync(n, req, off, len, true, fua);
        return;
    }
    nhc_event(n, NHC_EV_BACKEND_ISSUE);
    req->aiocb = fua ? dma_blk_io(&req->qsg, off, BDRV_SECTOR_SIZE, nhc_blk_fua_write, n,
                                  nhc_req_backend_cb, req, DMA_DIRECTION_TO_DEVICE) :
        dma_blk_write(n->blkconf.blk, &req->qsg, off, BDRV_SECTOR_SIZE, nhc_req_backend_cb, req);
}

void nhc_io_read_backend(NhcCtrl *n, NhcReq *req, uint64_t off, uint64_t len)
{
    if (nhc_exact_time(n)) {
        nhc_io_rw_sync(n, req, off, len, false, false);
        return;
    }
    if (nhc_ba_dma_hits_window(n, &req->qsg)) {
        req->bounce_len = len;
        req->bounce = g_malloc(len);
        qemu_iovec_init_buf(&req->iov, req->bounce, len);
        nhc_backend_rw(n, req, off, &req->iov, false, 0, nhc_io_read_bounced_cb);
        return;
    }
    nhc_event(n, NHC_EV_BACKEND_ISSUE);
    req->aiocb = dma_blk_read(n->blkconf.blk, &req->qsg, off, BDRV_SECTOR_SIZE,
                              nhc_req_backend_cb, req);
}

static uint16_t nhc_io_rw(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    bool write = rw->opcode == NVME_CMD_WRITE;
    bool fua = le16_to_cpu(rw->control) & NVME_RW_FUA;
    /* Dataset Management field, Access Latency = Low (11b): a priority request, during which
     * the engine defers background cleaning (seed 001's priority-aware cleaning). */
    uint32_t prio = (rw->dsmgmt & 0x30) == NVME_RW_DSM_LATENCY_LOW ? NH_REQ_PRIORITY : 0;
    uint64_t off = le64_to_cpu(rw->slba) << n->lba_shift, len = nhc_rw_len(n, req);
    uint16_t stream = 0;
    uint16_t status = NVME_SUCCESS;

    if (write && n->write_hooks.place) {
        status = n->write_hooks.place(n, req, &stream);
    }
    if (status) {
        return status;
    }
    fua = fua || !n->wce;
    if (write) {
        req->lba_lo = off >> n->lba_shift;
        req->lba_hi = (off + len) >> n->lba_shift;
        /* before the engine models it: whether the LBAs hold data is the old mapping's say */
        if (!fua && n->write_hooks.buffered) {
            n->write_hooks.buffered(n, req);
        }
    }
    status = nhc_io_model(n, req, write ? NH_OP_WRITE : NH_OP_READ, off, len,
                          (fua ? NH_REQ_FUA : 0) | prio, stream);
    if (status != NHC_ASYNC) {
        return status;
    }
    if (!write) {
        n->smart.host_read_cmds++;
        n->smart.data_units_read += len >> 9;
        nhc_io_read_backend(n, req, off, len);
        return NHC_ASYNC;
    }
    n->smart.host_write_cmds++;
    n->smart.data_units_written += len >> 9;
    if (fua) {
        nhc_write_durable(n, req->lba_lo, req->lba_hi - req->lba_lo);
    } else if (n->write_hooks.issue && n->write_hooks.issue(n, req)) {
        return NHC_ASYNC;
    }
    nhc_io_write_backend(n, req, off, len, fua);
    return NHC_ASYNC;
}

static void nhc_compare_cb(void *opaque, int ret)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
    size_t half = req->bounce_len;
    bool was = nhc_guard_enter(n);

    if (ret == 0) {
        uint8_t *host = req->bounce + half;
        uint8_t *p = host;
        for (int i = 0; i < req->qsg.nsg; i++) {
            if (pci_dma_read(PCI_DEVICE(req->sq->n), req->qsg.sg[i].base, p,
                             req->qsg.sg[i].len) != MEMTX_OK) {
                req->status = NHC_ERR(NVME_DATA_TRAS_ERROR);
                break;
            }
            p += req->qsg.sg[i].len;
        }
        if (!req->status && memcmp(req->bounce, host, half)) {
            req->status = NHC_ERR(NVME_CMP_FAILURE);
        }
    }
    nhc_req_backend_done(req, ret);
    nhc_guard_exit(n, was);
}

static uint16_t nhc_io_compare(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    uint64_t off = le64_to_cpu(rw->slba) << n->lba_shift, len = nhc_rw_len(n, req);
    uint16_t status = nhc_io_model(n, req, NH_OP_READ, off, len, 0, 0);
    if (status != NHC_ASYNC) {
        return status;
    }
    req->bounce_len = len;
    req->bounce = g_malloc(2 * len);
    qemu_iovec_init_buf(&req->iov, req->bounce, len);
    nhc_backend_rw(n, req, off, &req->iov, false, 0, nhc_compare_cb);
    return NHC_ASYNC;
}

static uint16_t nhc_write_zeroes_check(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    uint64_t slba = le64_to_cpu(rw->slba);
    uint32_t nlb = le16_to_cpu(rw->nlb) + 1;
    uint16_t status;

    trace_nhc_io_write_zeroes(le16_to_cpu(rw->cid), slba, nlb,
                              le32_to_cpu(req->cmd.cdw12) & (1 << 25));
    status = nhc_check_range(n, slba, nlb);
    return status ? status : nhc_write_admit(n, slba, nlb);
}

static uint16_t nhc_io_write_zeroes(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    uint64_t slba = le64_to_cpu(rw->slba);
    uint32_t nlb = le16_to_cpu(rw->nlb) + 1;
    uint64_t len = (uint64_t)nlb << n->lba_shift;
    uint64_t off = slba << n->lba_shift;
    bool deac = le32_to_cpu(req->cmd.cdw12) & (1 << 25);
    uint16_t status;

    req->lba_lo = slba;
    req->lba_hi = slba + nlb;
    status = nhc_io_model(n, req, deac ? NH_OP_TRIM : NH_OP_WRITE, off, len, 0, 0);
    if (status != NHC_ASYNC) {
        return status;
    }
    nhc_write_durable(n, slba, nlb);     /* zeroes either way: nothing older to fall back to */
    n->smart.host_write_cmds++;
    nhc_event(n, NHC_EV_BACKEND_ISSUE);
    if (nhc_exact_time(n)) {
        nhc_req_backend_cb(req, blk_pwrite_zeroes(n->blkconf.blk, off, len,
                                         deac ? BDRV_REQ_MAY_UNMAP : 0));
        return NHC_ASYNC;
    }
    req->aiocb = blk_aio_pwrite_zeroes(n->blkconf.blk, off, len,
                                       deac ? BDRV_REQ_MAY_UNMAP : 0, nhc_req_backend_cb, req);
    return NHC_ASYNC;
}

/*
 * Dataset Management: only Attribute Deallocate has an effect.  Ranges are unmapped one after
 * another (reads of them return zeroes afterwards, as DLFEAT promises); the range list lives in
 * req->bounce and req->bounce_len counts the ranges still to do.
 */
static void nhc_dsm_next(void *opaque, int ret)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
    NvmeDsmRange *r;
    bool was = nhc_guard_enter(n);

    req->aiocb = NULL;
    /* An aborted request (its SQ is being deleted) goes no further. */
    while (ret == 0 && req->bounce_len && !req->aborted) {
        r = &((NvmeDsmRange *)req->bounce)[--req->bounce_len];
        if (!le32_to_cpu(r->nlb)) {
            continue;
        }
        uint64_t off = le64_to_cpu(r->slba) << n->lba_shift;
        uint64_t len = (uint64_t)le32_to_cpu(r->nlb) << n->lba_shift;
        nhc_event(n, NHC_EV_BACKEND_ISSUE);
        if (nhc_exact_time(n)) {
            ret = blk_pwrite_zeroes(n->blkconf.blk, off, len, BDRV_REQ_MAY_UNMAP);
            continue;
        }
        req->aiocb = blk_aio_pwrite_zeroes(n->blkconf.blk, off, len, BDRV_REQ_MAY_UNMAP,
                                           nhc_dsm_next, req);
        nhc_guard_exit(n, was);
        return;
    }
    nhc_req_backend_done(req, ret);
    nhc_guard_exit(n, was);
}

static uint16_t nhc_io_dsm(NhcCtrl *n, NhcReq *req)
{
    NvmeDsmCmd *dsm = (NvmeDsmCmd *)&req->cmd;
    uint32_t nr = (le32_to_cpu(dsm->nr) & 0xff) + 1;
    uint32_t attr = le32_to_cpu(dsm->attributes);
    NvmeDsmRange *ranges;
    uint16_t status;
    int64_t now;
    uint64_t done = 0;

    trace_nhc_io_dsm(le16_to_cpu(req->cmd.cid), nr, attr);
    if (!(attr & NVME_DSMGMT_AD)) {
        return NVME_SUCCESS;        /* integral read/write hints only: nothing to do */
    }
    ranges = g_new(NvmeDsmRange, nr);
    req->bounce = (uint8_t *)ranges;
    status = nhc_dma_from_host(n, ranges, nr * sizeof(*ranges), &req->cmd);
    if (status) {
        return status;
    }
    for (uint32_t i = 0; i < nr; i++) {
        status = nhc_check_range(n, le64_to_cpu(ranges[i].slba), le32_to_cpu(ranges[i].nlb));
        if (!status) {
            status = nhc_write_admit(n, le64_to_cpu(ranges[i].slba),
                                     le32_to_cpu(ranges[i].nlb));
        }
        if (status) {
            return status;
        }
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    req->lba_lo = UINT64_MAX;
    for (uint32_t i = 0; i < nr; i++) {
        uint64_t nlb = le32_to_cpu(ranges[i].nlb), t;

        if (!nlb) {
            continue;
        }
        req->lba_lo = MIN(req->lba_lo, le64_to_cpu(ranges[i].slba));
        req->lba_hi = MAX(req->lba_hi, le64_to_cpu(ranges[i].slba) + nlb);
        status = nhc_io_engine(n, NH_OP_TRIM, le64_to_cpu(ranges[i].slba) << n->lba_shift,
                               nlb << n->lba_shift, 0, 0, now, &t);
        if (status) {
            return status;
        }
        nhc_write_durable(n, le64_to_cpu(ranges[i].slba), nlb);
        done = MAX(done, t);
    }
    nhc_io_arm(n, req, now, done, 1);
    req->bounce_len = nr;
    nhc_dsm_next(req, 0);
    return NHC_ASYNC;
}

uint16_t nhc_io_flush(NhcCtrl *n, NhcReq *req)
{
    uint16_t status;

    trace_nhc_io_flush(le16_to_cpu(req->cmd.cid));
    if (n->x_flush_no_drain) {
        /* test only (x-flush-no-drain): the buffer keeps its dirty pages */
        int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
        nhc_io_arm(n, req, now, now, 1);
        nhc_backend_flush(n, req);
        return NHC_ASYNC;
    }
    status = nhc_io_model(n, req, NH_OP_FLUSH, 0, 0, 0, 0);
    if (status != NHC_ASYNC) {
        return status;
    }
    nhc_write_flushed(n);            /* the buffer holds nothing dirty now */
    nhc_backend_flush(n, req);
    return NHC_ASYNC;
}

/* The DSM range list: Number of Ranges + 1 entries of 16 bytes, at most 4 KiB. */
static uint64_t nhc_dsm_len(NhcCtrl *n, NhcReq *req)
{
    return ((le32_to_cpu(req->cmd.cdw10) & 0xff) + 1) * sizeof(NvmeDsmRange);
}

/*
 * The NVM command set (dispatch in cmds.c).  Effects: Write, Write Zeroes and Dataset
 * Management change what the LBAs read back (LBCC); a Flush makes writes durable but changes
 * no content, and the I/O Management commands move no data.
 */
const NhcCmd nhc_io_cmds[256] = {
    [NVME_CMD_FLUSH] = {
        .execute = nhc_io_flush, .flags = NHC_CMD_NSID | NHC_CMD_NSID_ALL,
    },
    [NVME_CMD_WRITE] = {
        .execute = nhc_io_rw, .check = nhc_rw_check, .data_len = nhc_rw_len,
        .effects = NVME_CMD_EFF_LBCC, .flags = NHC_CMD_NSID | NHC_CMD_DATA_IN,
    },
    [NVME_CMD_READ] = {
        .execute = nhc_io_rw, .check = nhc_rw_check, .data_len = nhc_rw_len,
        .flags = NHC_CMD_NSID | NHC_CMD_DATA_OUT,
    },
    [NVME_CMD_COMPARE] = {
        .execute = nhc_io_compare, .check = nhc_rw_check, .data_len = nhc_rw_len,
        .flags = NHC_CMD_NSID | NHC_CMD_DATA_IN,
    },
    [NVME_CMD_WRITE_ZEROES] = {
        .execute = nhc_io_write_zeroes, .check = nhc_write_zeroes_check,
        .effects = NVME_CMD_EFF_LBCC, .flags = NHC_CMD_NSID,
    },
    [NVME_CMD_DSM] = {
        .execute = nhc_io_dsm, .data_len = nhc_dsm_len,
        .effects = NVME_CMD_EFF_LBCC, .flags = NHC_CMD_NSID,
    },
    [NVME_CMD_IO_MGMT_RECV] = { .execute = nhc_io_mgmt_recv, .flags = NHC_CMD_NSID },  /* fdp.c */
    [NVME_CMD_IO_MGMT_SEND] = { .execute = nhc_io_mgmt_send, .flags = NHC_CMD_NSID },
};
