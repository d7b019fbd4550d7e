/*
 * io-cmd.c - NVM I/O commands (Read, Write, Flush, Write Zeroes, Dataset Management, Compare),
 * PRP data transfer, and the hand-off to the engine and the block backend.
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


/* ------------------------------------------------------------------------------ PRPs */

/*
 * Does [addr, addr + len) resolve to guest RAM the device may read (or, @to_host, write)?  Only
 * such memory is handed to DMA: a pointer into MMIO, above all the device's own registers,
 * would have a block-layer completion write registers outside any reentrancy guard, and one
 * into unassigned space takes QEMU's bounce buffer, which a misaligned transfer never returns.
 */
bool nhc_dma_is_ram(NhcCtrl *n, uint64_t addr, uint64_t len, bool to_host)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(n));

    if (addr + len < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &plen, to_host,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!plen || !memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (to_host && memory_region_is_rom(mr))) {
            return false;
        }
        plen = MIN(plen, len);
        addr += plen;
        len -= plen;
    }
    return true;
}

static uint16_t nhc_prp_add(NhcCtrl *n, QEMUSGList *qsg, uint64_t addr, uint32_t len,
                            bool to_host)
{
    if (!nhc_dma_is_ram(n, addr, len, to_host)) {
        NHC_GUEST_ERR(trace_nhc_err_prp_not_ram(addr, len),
                      "PRP 0x%" PRIx64 " (+%u) is not guest RAM", addr, len);
        return NHC_ERR(NVME_DATA_TRAS_ERROR);
    }
    qemu_sglist_add(qsg, addr, len);
    return NVME_SUCCESS;
}

/*
 * Build @qsg from a PRP pair for @len bytes moving to the host (@to_host) or from it.  PRP1 may
 * start anywhere dword aligned; every later entry must be page aligned (PRP Offset Invalid
 * otherwise); PRP2 is a list pointer when more than two pages are needed, and the last entry of
 * a full list page chains to the next one.  Every page and list page must be guest RAM (Data
 * Transfer Error otherwise).
 */
uint16_t nhc_map_prp(NhcCtrl *n, QEMUSGList *qsg, uint64_t prp1, uint64_t prp2, uint32_t len,
                     bool to_host)
{
    PCIDevice *pci = PCI_DEVICE(n);
    uint64_t psz = n->page_size;
    uint32_t trans = MIN(len, psz - (prp1 & (psz - 1)));
    uint16_t status;

    pci_dma_sglist_init(qsg, pci, 1 + DIV_ROUND_UP(len, psz));
    if (prp1 & 3) {
        return NHC_ERR(NVME_INVALID_PRP_OFFSET);
    }
    status = nhc_prp_add(n, qsg, prp1, trans, to_host);
    len -= trans;
    if (status || !len) {
        return status;
    }
    if (len <= psz) {
        if (prp2 & (psz - 1)) {
            return NHC_ERR(NVME_INVALID_PRP_OFFSET);
        }
        return nhc_prp_add(n, qsg, prp2, len, to_host);
    }

    /* PRP list */
    if (prp2 & 7) {
        return NHC_ERR(NVME_INVALID_PRP_OFFSET);
    }
    while (len) {
        /* entries left in this list page, and no more than the transfer still needs */
        uint32_t nents = MIN((psz - (prp2 & (psz - 1))) / 8, DIV_ROUND_UP(len, psz) + 1);
        g_autofree uint64_t *list = g_new(uint64_t, nents);
        uint32_t i;

        if (!nhc_dma_is_ram(n, prp2, nents * 8, false) ||
            pci_dma_read(pci, prp2, list, nents * 8) != MEMTX_OK) {
            return NHC_ERR(NVME_DATA_TRAS_ERROR);
        }
        for (i = 0; i < nents && len; i++) {
            uint64_t ent = le64_to_cpu(list[i]);

            if (i == nents - 1 && len > psz) {
                if (ent & (psz - 1)) {
                    return NHC_ERR(NVME_INVALID_PRP_OFFSET);
                }
                prp2 = ent;         /* chain to the next list page */
                break;
            }
            if (ent & (psz - 1)) {
                return NHC_ERR(NVME_INVALID_PRP_OFFSET);
            }
            trans = MIN(len, psz);
            status = nhc_prp_add(n, qsg, ent, trans, to_host);
            if (status) {
                return status;
            }
            len -= trans;
        }
    }
    return NVME_SUCCESS;
}

static uint16_t nhc_dma_buf(NhcCtrl *n, void *buf, uint32_t len, NvmeCmd *cmd,
                            DMADirection dir)
{
    QEMUSGList qsg;
    uint16_t status;
    uint8_t *p = buf;

    status = nhc_map_prp(n, &qsg, le64_to_cpu(cmd->dptr.prp1), le64_to_cpu(cmd->dptr.prp2),
                         len, dir == DMA_DIRECTION_FROM_DEVICE);
    for (int i = 0; !status && i < qsg.nsg; i++) {
        MemTxResult r = dir == DMA_DIRECTION_FROM_DEVICE ?
            pci_dma_write(PCI_DEVICE(n), qsg.sg[i].base, p, qsg.sg[i].len) :
            pci_dma_read(PCI_DEVICE(n), qsg.sg[i].base, p, qsg.sg[i].len);
        if (r != MEMTX_OK) {
            status = NHC_ERR(NVME_DATA_TRAS_ERROR);
        }
        p += qsg.sg[i].len;
    }
    qemu_sglist_destroy(&qsg);
    return status;
}

uint16_t nhc_dma_to_host(NhcCtrl *n, const void *buf, uint32_t len, NvmeCmd *cmd)
{
    return nhc_dma_buf(n, (void *)buf, len, cmd, DMA_DIRECTION_FROM_DEVICE);
}

uint16_t nhc_dma_from_host(NhcCtrl *n, void *buf, uint32_t len, NvmeCmd *cmd)
{
    return nhc_dma_buf(n, buf, len, cmd, DMA_DIRECTION_TO_DEVICE);
}

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
static void nhc_io_arm(NhcCtrl *n, NhcReq *req, int64_t now, uint64_t done, int parts)
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

/* The old bytes of a write's LBAs are in req->bounce (state.c, nhc_undo_*): keep them, then
 * write the new ones. */
static void nhc_io_write_kept_cb(void *opaque, int ret)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
    uint64_t off = req->lba_lo << n->lba_shift, len = req->bounce_len;
    bool was;

    if (n->power_cut) {
        return;     /* the new bytes must not follow the restore of the old ones */
    }
    was = nhc_guard_enter(n);
    nhc_event(n, NHC_EV_BACKEND_DONE);
    req->aiocb = NULL;
    if (ret < 0 || req->aborted) {
        nhc_req_backend_done(req, ret);
    } else {
        nhc_undo_keep(n, req->undo_epoch, req->lba_lo, req->lba_hi - req->lba_lo,
                      req->bounce);
        if (nhc_exact_time(n)) {
            nhc_io_rw_sync(n, req, off, len, true, false);
        } else {
            nhc_event(n, NHC_EV_BACKEND_ISSUE);
            req->aiocb = dma_blk_write(n->blkconf.blk, &req->qsg, off, BDRV_SECTOR_SIZE,
                                       nhc_req_backend_cb, req);
        }
    }
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
 * What Read, Write and Compare check before anything happens: the LBA range (and, for a write,
 * that no BAR1 entry pins it), the transfer size against MDTS, and the PRPs, mapped into
 * req->qsg.  On success *off and *len give the byte range.
 */
static uint16_t nhc_rw_check_and_map(NhcCtrl *n, NhcReq *req, bool write, uint64_t *off,
                                     uint64_t *len)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    uint64_t slba = le64_to_cpu(rw->slba);
    uint32_t nlb = le16_to_cpu(rw->nlb) + 1;
    uint16_t status = nhc_check_range(n, slba, nlb);

    if (!status && write) {
        status = nhc_ba_check_write(n, slba, nlb);
    }
    if (status) {
        return status;
    }
    *off = slba << n->lba_shift;
    *len = (uint64_t)nlb << n->lba_shift;
    if (*len > (4096u << NHC_MDTS)) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    return nhc_map_prp(n, &req->qsg, le64_to_cpu(rw->dptr.prp1), le64_to_cpu(rw->dptr.prp2),
                       *len, !write && req->cmd.opcode == NVME_CMD_READ);
}

static uint16_t nhc_io_rw(NhcCtrl *n, NhcReq *req)
{
    NvmeRwCmd *rw = (NvmeRwCmd *)&req->cmd;
    bool write = rw->opcode == NVME_CMD_WRITE;
    bool fua = le16_to_cpu(rw->control) & NVME_RW_FUA;
    /* Dataset Management field, Access Latency = Low (11b): a priority request, during which
     * the engine defers background cleaning (seed 001's priority-aware cleaning). */
    uint32_t prio = (rw->dsmgmt & 0x30) == NVME_RW_DSM_LATENCY_LOW ? NH_REQ_PRIORITY : 0;
    uint64_t off, len;
    uint16_t stream = 0;
    uint16_t status = nhc_rw_check_and_map(n, req, write, &off, &len);
    bool keep = false, old_data = false;

    trace_nhc_io_rw(le16_to_cpu(rw->cid), write, le64_to_cpu(rw->slba),
                    le16_to_cpu(rw->nlb) + 1, fua);
    if (!status && write) {
        status = n->fdp ? nhc_io_write_placement(n, req, &stream) :  /* fdp.c */
                 nhc_io_write_stream(n, req, &stream);      /* directives.c */
    }
    if (status) {
        return status;
    }
    fua = fua || !n->wce;
    if (write) {
        req->lba_lo = off >> n->lba_shift;
        req->lba_hi = (off + len) >> n->lba_shift;
        /* before the engine models it: whether the LBAs hold data is the old mapping's say */
        keep = !fua && nhc_undo_wanted(n, off, len, &old_data);
        req->undo_epoch = n->undo_epoch;
        if (keep && old_data) {
            /* from the moment the buffer holds the write, a power cut must find the old
             * bytes: they stay in the backend until nhc_io_write_kept_cb has them */
            nhc_undo_pending(n, req->lba_lo, req->lba_hi - req->lba_lo);
        }
    }
    status = nhc_io_model(n, req, write ? NH_OP_WRITE : NH_OP_READ, off, len,
                          (fua ? NH_REQ_FUA : 0) | prio, stream);
    if (status != NHC_ASYNC) {
        return status;
    }
    if (write) {
        n->smart.host_write_cmds++;
        n->smart.data_units_written += len >> 9;
        if (fua) {
            nhc_undo_drop(n, req->lba_lo, req->lba_hi - req->lba_lo);
        } else if (keep && !old_data) {
            nhc_undo_keep(n, req->undo_epoch, req->lba_lo, req->lba_hi - req->lba_lo, NULL);
        } else if (keep) {
            /* read what the LBAs hold first (nhc_io_write_kept_cb writes the new bytes) */
            req->bounce_len = len;
            req->bounce = g_malloc(len);
            qemu_iovec_init_buf(&req->iov, req->bounce, len);
            nhc_backend_rw(n, req, off, &req->iov, false, 0, nhc_io_write_kept_cb);
            return NHC_ASYNC;
        }
    } else {
        n->smart.host_read_cmds++;
        n->smart.data_units_read += len >> 9;
    }
    if (nhc_exact_time(n)) {
        nhc_io_rw_sync(n, req, off, len, write, fua);
        return NHC_ASYNC;
    }
    if (!write && nhc_ba_dma_hits_window(n, &req->qsg)) {
        req->bounce_len = len;
        req->bounce = g_malloc(len);
        qemu_iovec_init_buf(&req->iov, req->bounce, len);
        nhc_backend_rw(n, req, off, &req->iov, false, 0, nhc_io_read_bounced_cb);
        return NHC_ASYNC;
    }
    nhc_event(n, NHC_EV_BACKEND_ISSUE);
    /* FUA reaches the backend too, so the data is on stable storage when the write completes
     * even though the backend caches writes (the block layer flushes where it must). */
    req->aiocb = !write ? dma_blk_read(n->blkconf.blk, &req->qsg, off, BDRV_SECTOR_SIZE,
                                       nhc_req_backend_cb, req) :
        fua ? dma_blk_io(&req->qsg, off, BDRV_SECTOR_SIZE, nhc_blk_fua_write, n,
                         nhc_req_backend_cb, req, DMA_DIRECTION_TO_DEVICE) :
        dma_blk_write(n->blkconf.blk, &req->qsg, off, BDRV_SECTOR_SIZE, nhc_req_backend_cb, req);
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
    uint64_t off, len;
    uint16_t status = nhc_rw_check_and_map(n, req, false, &off, &len);

    trace_nhc_io_compare(le16_to_cpu(rw->cid), le64_to_cpu(rw->slba), le16_to_cpu(rw->nlb) + 1);
    if (status) {
        return status;
    }
    status = nhc_io_model(n, req, NH_OP_READ, off, len, 0, 0);
    if (status != NHC_ASYNC) {
        return status;
    }
    req->bounce_len = len;
    req->bounce = g_malloc(2 * len);
    qemu_iovec_init_buf(&req->iov, req->bounce, len);
    nhc_backend_rw(n, req, off, &req->iov, false, 0, nhc_compare_cb);
    return NHC_ASYNC;
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

    trace_nhc_io_write_zeroes(le16_to_cpu(rw->cid), slba, nlb, deac);
    status = nhc_check_range(n, slba, nlb);
    if (!status) {
        status = nhc_ba_check_write(n, slba, nlb);
    }
    if (status) {
        return status;
    }
    req->lba_lo = slba;
    req->lba_hi = slba + nlb;
    status = nhc_io_model(n, req, deac ? NH_OP_TRIM : NH_OP_WRITE, off, len, 0, 0);
    if (status != NHC_ASYNC) {
        return status;
    }
    nhc_undo_drop(n, slba, nlb);     /* zeroes either way: nothing older to fall back to */
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
            status = nhc_ba_check_write(n, le64_to_cpu(ranges[i].slba),
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
        nhc_undo_drop(n, le64_to_cpu(ranges[i].slba), nlb);
        done = MAX(done, t);
    }
    nhc_io_arm(n, req, now, done, 1);
    req->bounce_len = nr;
    nhc_dsm_next(req, 0);
    return NHC_ASYNC;
}

static uint16_t nhc_io_flush(NhcCtrl *n, NhcReq *req)
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
    nhc_undo_clear(n);               /* the buffer holds nothing dirty now */
    nhc_backend_flush(n, req);
    return NHC_ASYNC;
}

uint16_t nhc_io_dispatch(NhcCtrl *n, NhcReq *req)
{
    uint32_t nsid = le32_to_cpu(req->cmd.nsid);

    if (NVME_CMD_FLAGS_FUSE(req->cmd.flags) || NVME_CMD_FLAGS_PSDT(req->cmd.flags)) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    if (req->cmd.opcode == NVME_CMD_FLUSH && nsid == NVME_NSID_BROADCAST) {
        return nhc_io_flush(n, req);
    }
    switch (req->cmd.opcode) {
    case NVME_CMD_FLUSH:
    case NVME_CMD_WRITE:
    case NVME_CMD_READ:
    case NVME_CMD_COMPARE:
    case NVME_CMD_WRITE_ZEROES:
    case NVME_CMD_DSM:
    case NVME_CMD_IO_MGMT_RECV:
    case NVME_CMD_IO_MGMT_SEND:
        if (nsid != NHC_NSID) {
            return NHC_ERR(NVME_INVALID_NSID);
        }
        break;
    default:
        return NHC_ERR(NVME_INVALID_OPCODE);
    }
    switch (req->cmd.opcode) {
    case NVME_CMD_FLUSH:        return nhc_io_flush(n, req);
    case NVME_CMD_WRITE:
    case NVME_CMD_READ:         return nhc_io_rw(n, req);
    case NVME_CMD_COMPARE:      return nhc_io_compare(n, req);
    case NVME_CMD_WRITE_ZEROES: return nhc_io_write_zeroes(n, req);
    case NVME_CMD_IO_MGMT_RECV: return nhc_io_mgmt_recv(n, req);     /* fdp.c */
    case NVME_CMD_IO_MGMT_SEND: return nhc_io_mgmt_send(n, req);
    default:                    return nhc_io_dsm(n, req);
    }
}
