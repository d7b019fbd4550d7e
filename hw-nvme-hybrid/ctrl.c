/*
 * ctrl.c - the nvme-hybrid PCI function: BAR0 registers and doorbells, controller enable, reset
 * and shutdown, submission/completion queues, interrupts, properties, the `stats` QOM property.
 *
 * Commands are fetched by a bottom half on the main loop after the host writes an SQ tail
 * doorbell, so the vCPU goes on while the device works, as with a real controller.  Under -icount
 * they are fetched in the doorbell write itself instead, so that the submission time handed to
 * the engine is exactly the guest's.  Completions are posted when both the block I/O and the
 * engine's modeled completion time (a virtual-clock timer) are done.
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "migration/vmstate.h"
#include "system/block-backend.h"
#include "system/runstate.h"
#include "system/system.h"
#include "system/cpu-timers.h"

#include "nvme-hybrid.h"

#define NHC_PCI_VENDOR  0x1b36  /* QEMU's vendor space; device id below is unofficial */
#define NHC_PCI_DEVICE  0x00e0
#define NHC_DB_BASE     0x1000

static void nhc_resume_sqs(NhcCtrl *n);
static void nhc_cq_refresh_head(NhcCQ *cq);
static void nhc_ctrl_reset_done(NhcCtrl *n);

/* ------------------------------------------------------------------------------ interrupts */

static bool nhc_cq_has_entries(NhcCQ *cq)
{
    return cq->head != cq->tail;
}

/* INTx is level-triggered: asserted while any interrupt-enabled CQ holds unconsumed entries. */
static void nhc_intx_update(NhcCtrl *n)
{
    PCIDevice *pci = PCI_DEVICE(n);
    bool level = false;

    if (msix_enabled(pci) || (n->intms & 1)) {
        pci_irq_deassert(pci);
        return;
    }
    for (uint32_t i = 0; i < n->num_queues; i++) {
        NhcCQ *cq = n->cq[i];
        if (cq && cq->irq_enabled && nhc_cq_has_entries(cq)) {
            nhc_cq_refresh_head(cq);
        }
        if (cq && cq->irq_enabled && nhc_cq_has_entries(cq)) {
            level = true;
            break;
        }
    }
    if (level) {
        pci_irq_assert(pci);
    } else {
        pci_irq_deassert(pci);
    }
}

static void nhc_cq_notify(NhcCQ *cq)
{
    NhcCtrl *n = cq->n;
    PCIDevice *pci = PCI_DEVICE(n);

    cq->coalesced = 0;
    timer_del(cq->coalesce_timer);
    if (msix_enabled(pci)) {
        msix_notify(pci, cq->vector);
    } else {
        nhc_intx_update(n);
    }
}

static void nhc_coalesce_timeout(void *opaque)
{
    NhcCQ *cq = opaque;
    bool was = nhc_guard_enter(cq->n);

    if (cq->coalesced) {
        nhc_cq_notify(cq);
    }
    nhc_guard_exit(cq->n, was);
}

/*
 * Interrupt Coalescing (feature 08h) applies to I/O completion queues: an interrupt is sent once
 * THR+1 entries are pending or TIME*100us after the first one, whichever comes first.  TIME=0
 * means no aggregation delay, i.e. an interrupt per completion.
 */
static void nhc_cq_irq(NhcCQ *cq, uint32_t posted)
{
    uint32_t thr = (cq->n->features.int_coalescing & 0xff) + 1;
    uint32_t time_us = ((cq->n->features.int_coalescing >> 8) & 0xff) * 100;

    if (!cq->irq_enabled || !posted) {
        return;
    }
    if (cq->cqid == 0 || time_us == 0 ||
        test_bit(cq->vector, cq->n->features.vector_no_coalescing)) {
        nhc_cq_notify(cq);
        return;
    }
    cq->coalesced += posted;
    if (cq->coalesced >= thr) {
        nhc_cq_notify(cq);
    } else if (!timer_pending(cq->coalesce_timer)) {
        timer_mod(cq->coalesce_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + time_us * SCALE_US);
    }
}

/* ------------------------------------------------------------------------------ shadow doorbells */

/*
 * Doorbell Buffer Config (NVMe 1.3, 5.7): for I/O queues the host keeps each doorbell value in a
 * shadow buffer in its memory and writes the real doorbell only when the value passes the
 * EventIdx the controller published.  The controller reads the shadow value whenever it would
 * have used the register, and publishes how far it has got.
 */
void nhc_dbbuf_attach(NhcCtrl *n, uint16_t qid)
{
    if (!n->dbbuf_dbs || !qid) {
        return;     /* not configured; the admin queue never uses shadow doorbells */
    }
    if (n->sq[qid]) {
        n->sq[qid]->db_addr = n->dbbuf_dbs + 8ull * qid;
        n->sq[qid]->ei_addr = n->dbbuf_eis + 8ull * qid;
    }
    if (n->cq[qid]) {
        n->cq[qid]->db_addr = n->dbbuf_dbs + 8ull * qid + 4;
        n->cq[qid]->ei_addr = n->dbbuf_eis + 8ull * qid + 4;
    }
}

static bool nhc_shadow_read(NhcCtrl *n, uint64_t addr, uint32_t size, uint32_t *val)
{
    uint32_t v;

    if (!addr || pci_dma_read(PCI_DEVICE(n), addr, &v, sizeof(v)) != MEMTX_OK) {
        return false;
    }
    v = le32_to_cpu(v);
    if (v >= size) {
        return false;   /* a value no doorbell write could carry: keep the last good one */
    }
    *val = v;
    return true;
}

static void nhc_shadow_publish(NhcCtrl *n, uint64_t addr, uint32_t val)
{
    if (addr) {
        val = cpu_to_le32(val);
        pci_dma_write(PCI_DEVICE(n), addr, &val, sizeof(val));
    }
}

static void nhc_cq_refresh_head(NhcCQ *cq)
{
    uint32_t head, in_use = (cq->tail + cq->size - cq->head) % cq->size;

    if (nhc_shadow_read(cq->n, cq->db_addr, cq->size, &head) &&
        (head + cq->size - cq->head) % cq->size <= in_use) {
        cq->head = head;
        nhc_shadow_publish(cq->n, cq->ei_addr, head);
    }
}

/* ------------------------------------------------------------------------------ completions */

static void nhc_post_cqes(NhcCQ *cq)
{
    NhcCtrl *n = cq->n;
    uint32_t posted = 0;
    bool freed = false;
    NhcReq *req;

    if (!QTAILQ_EMPTY(&cq->done_list)) {
        nhc_cq_refresh_head(cq);
    }
    while ((req = QTAILQ_FIRST(&cq->done_list))) {
        NhcSQ *sq = req->sq;
        uint64_t addr;

        if ((cq->tail + 1) % cq->size == cq->head) {
            break;      /* full: resumes when the host moves the CQ head */
        }
        QTAILQ_REMOVE(&cq->done_list, req, entry);
        req->cqe.sq_id = cpu_to_le16(sq->sqid);
        req->cqe.sq_head = cpu_to_le16(sq->head);
        req->cqe.cid = req->cmd.cid;
        req->cqe.status = cpu_to_le16((req->status << 1) | cq->phase);
        addr = cq->dma_addr + (uint64_t)cq->tail * sizeof(NvmeCqe);
        if (pci_dma_write(PCI_DEVICE(n), addr, &req->cqe, sizeof(req->cqe)) != MEMTX_OK) {
            qemu_log_mask(LOG_GUEST_ERROR, "nvme-hybrid: CQ %u entry at 0x%" PRIx64
                          " not writable; controller fatal\n", cq->cqid, addr);
            n->csts |= NVME_CSTS_FAILED;
        }
        if (++cq->tail == cq->size) {
            cq->tail = 0;
            cq->phase = !cq->phase;
        }
        posted++;
        QTAILQ_INSERT_TAIL(&sq->free_list, req, entry);
        freed = true;
    }
    nhc_cq_irq(cq, posted);
    if (freed) {
        nhc_resume_sqs(n);
    }
}

/* Take @req off its SQ's outstanding list and free what it held for its data transfer. */
static void nhc_req_release(NhcReq *req)
{
    NhcCtrl *n = req->sq->n;

    QTAILQ_REMOVE(&req->sq->out_list, req, entry);
    req->outstanding = false;
    if (req->is_io && --n->io_outstanding == 0) {
        n->smart.busy_ns += qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - n->busy_since_ns;
    }
    g_free(req->bounce);
    req->bounce = NULL;
    if (req->qsg.sg) {
        qemu_sglist_destroy(&req->qsg);
    }
    nhc_ba_forget(n, req);
    /* A write that ended may be what a BA_PIN waits for. */
    nhc_ba_kick(n);
}

static void nhc_sq_free_if_done(NhcSQ *sq);

void nhc_req_complete(NhcReq *req)
{
    NhcSQ *sq = req->sq;
    NhcCtrl *n = sq->n;
    NhcCQ *cq;

    if (req->aborted) {
        nhc_req_release(req);
        QTAILQ_INSERT_TAIL(&sq->free_list, req, entry);
        nhc_sq_free_if_done(sq);
        return;
    }
    cq = n->cq[sq->cqid];
    nhc_req_release(req);
    if (req->status != NVME_SUCCESS) {
        nhc_record_error(n, req);
    }
    QTAILQ_INSERT_TAIL(&cq->done_list, req, entry);
    /* Completions that arrive together are posted together, with one interrupt, from a bottom
     * half; under -icount at once, so the guest sees the modeled time exactly. */
    if (icount_enabled()) {
        nhc_post_cqes(cq);
    } else {
        qemu_bh_schedule(cq->bh);
    }
}

static void nhc_cq_bh(void *opaque)
{
    nhc_post_cqes(opaque);
}

/* One part of a request (a block I/O or the modeled-completion timer) has finished. */
void nhc_req_io_done(NhcReq *req)
{
    assert(req->pending > 0);
    if (--req->pending == 0) {
        nhc_req_complete(req);
    }
}

static void nhc_req_timer(void *opaque)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
    bool was = nhc_guard_enter(n);

    nhc_req_io_done(req);
    nhc_guard_exit(n, was);
}

void nhc_record_error(NhcCtrl *n, NhcReq *req)
{
    NvmeErrorLog *e;

    /* Aborts requested by the host are not errors of the device. */
    if ((req->status & 0x7ff) == NVME_CMD_ABORT_REQ ||
        (req->status & 0x7ff) == NVME_CMD_ABORT_SQ_DEL) {
        return;
    }
    n->smart.error_count++;
    memmove(&n->error_log[1], &n->error_log[0],
            sizeof(n->error_log) - sizeof(n->error_log[0]));
    e = &n->error_log[0];
    memset(e, 0, sizeof(*e));
    e->error_count = cpu_to_le64(n->smart.error_count);
    e->sqid = cpu_to_le16(req->sq->sqid);
    e->cid = req->cmd.cid;
    e->status_field = cpu_to_le16(req->status << 1);
    e->param_error_location = cpu_to_le16(0xffff);
    e->nsid = req->cmd.nsid;
    if (req->sq->sqid && (req->cmd.opcode == NVME_CMD_READ ||
                          req->cmd.opcode == NVME_CMD_WRITE ||
                          req->cmd.opcode == NVME_CMD_COMPARE ||
                          req->cmd.opcode == NVME_CMD_WRITE_ZEROES)) {
        e->lba = ((NvmeRwCmd *)&req->cmd)->slba;
    }
}

/* ------------------------------------------------------------------------------ queues */

uint16_t nhc_create_cq(NhcCtrl *n, uint16_t cqid, uint64_t dma_addr, uint32_t size,
                       uint16_t vector, bool irq_enabled)
{
    NhcCQ *cq = g_new0(NhcCQ, 1);

    cq->n = n;
    cq->cqid = cqid;
    cq->dma_addr = dma_addr;
    cq->size = size;
    cq->vector = vector;
    cq->irq_enabled = irq_enabled;
    cq->phase = 1;
    QTAILQ_INIT(&cq->sq_list);
    QTAILQ_INIT(&cq->done_list);
    cq->coalesce_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, nhc_coalesce_timeout, cq);
    cq->bh = qemu_bh_new_guarded(nhc_cq_bh, cq, &DEVICE(n)->mem_reentrancy_guard);
    msix_vector_use(PCI_DEVICE(n), vector);
    n->cq[cqid] = cq;
    return NVME_SUCCESS;
}

uint16_t nhc_create_sq(NhcCtrl *n, uint16_t sqid, uint16_t cqid, uint64_t dma_addr,
                       uint32_t size)
{
    NhcSQ *sq = g_new0(NhcSQ, 1);

    sq->n = n;
    sq->sqid = sqid;
    sq->cqid = cqid;
    sq->dma_addr = dma_addr;
    sq->size = size;
    QTAILQ_INIT(&sq->free_list);
    QTAILQ_INIT(&sq->out_list);
    sq->reqs = g_new0(NhcReq, size);
    for (uint32_t i = 0; i < size; i++) {
        NhcReq *req = &sq->reqs[i];
        req->sq = sq;
        req->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, nhc_req_timer, req);
        QTAILQ_INSERT_TAIL(&sq->free_list, req, entry);
    }
    QTAILQ_INSERT_TAIL(&n->cq[cqid]->sq_list, sq, entry);
    n->sq[sqid] = sq;
    return NVME_SUCCESS;
}

/* The last request of a deleted SQ has ended: free it and complete the deletion. */
static void nhc_sq_free_if_done(NhcSQ *sq)
{
    NhcCtrl *n = sq->n;
    NhcReq *waiter = sq->waiter;

    if (!sq->dying || sq->hold || !QTAILQ_EMPTY(&sq->out_list)) {
        return;
    }
    QTAILQ_REMOVE(&n->dying_sqs, sq, entry);
    for (uint32_t i = 0; i < sq->size; i++) {
        timer_free(sq->reqs[i].timer);
    }
    g_free(sq->reqs);
    g_free(sq);
    if (waiter) {
        nhc_req_io_done(waiter);
    }
    if (n->resetting && QTAILQ_EMPTY(&n->dying_sqs)) {
        nhc_ctrl_reset_done(n);
    }
}

/*
 * Stop @req because its SQ goes away.  Its modeled time no longer matters; block I/O that
 * cannot be called back is cancelled, the rest is left to finish, and the request ends (with
 * no completion posted) when the last of it has reported in.
 */
static void nhc_req_abort(NhcReq *req)
{
    NhcCtrl *n = req->sq->n;

    req->aborted = true;
    if (req->ba_waiting) {
        req->ba_waiting = false;
        req->pending--;
    }
    if (timer_pending(req->timer)) {
        timer_del(req->timer);
        req->pending--;
    }
    for (uint32_t i = 0; i < n->outstanding_aers; i++) {
        if (n->aer_reqs[i] == req) {
            n->aer_reqs[i] = n->aer_reqs[--n->outstanding_aers];
            break;
        }
    }
    if (req->pending == 0) {
        nhc_req_complete(req);
    } else if (req->aiocb) {
        blk_aio_cancel_async(req->aiocb);
    }
}

/*
 * Delete an SQ: the queue disappears at once (no more fetches, its queue id is free), and it
 * is freed once every command it had started has ended, which then completes @waiter (the
 * Delete I/O SQ command; NULL for a reset).  Commands still in flight are aborted and their
 * completions are not posted, under -icount or not; entries already done but not yet posted
 * (the CQ was full) are dropped too.  Nothing here waits: a request whose block I/O cannot be
 * cancelled simply finishes first.
 */
void nhc_delete_sq(NhcCtrl *n, uint16_t sqid, NhcReq *waiter)
{
    NhcSQ *sq = n->sq[sqid];
    NhcCQ *cq = n->cq[sq->cqid];
    g_autoptr(GPtrArray) reqs = g_ptr_array_new();
    NhcReq *req, *next;

    n->sq[sqid] = NULL;
    QTAILQ_REMOVE(&cq->sq_list, sq, entry);
    QTAILQ_INSERT_TAIL(&n->dying_sqs, sq, entry);
    sq->dying = true;
    sq->waiter = waiter;
    QTAILQ_FOREACH_SAFE(req, &cq->done_list, entry, next) {
        if (req->sq == sq) {
            QTAILQ_REMOVE(&cq->done_list, req, entry);
            QTAILQ_INSERT_TAIL(&sq->free_list, req, entry);
        }
    }
    /* Aborting one request may end others (their lists change under a walk): work on a
     * snapshot and keep the SQ until the walk is over. */
    QTAILQ_FOREACH(req, &sq->out_list, entry) {
        g_ptr_array_add(reqs, req);
    }
    sq->hold++;
    for (guint i = 0; i < reqs->len; i++) {
        req = g_ptr_array_index(reqs, i);
        if (req->outstanding && !req->aborted) {
            nhc_req_abort(req);
        }
    }
    sq->hold--;
    nhc_sq_free_if_done(sq);
}

void nhc_delete_cq(NhcCtrl *n, uint16_t cqid)
{
    NhcCQ *cq = n->cq[cqid];

    timer_free(cq->coalesce_timer);
    qemu_bh_delete(cq->bh);
    msix_vector_unuse(PCI_DEVICE(n), cq->vector);
    g_free(cq);
    n->cq[cqid] = NULL;
    nhc_intx_update(n);
}

/* ------------------------------------------------------------------------------ submission */

static bool nhc_sq_can_fetch(NhcSQ *sq)
{
    if (sq->head == sq->tail) {
        nhc_shadow_read(sq->n, sq->db_addr, sq->size, &sq->tail);
    }
    return sq->head != sq->tail && !QTAILQ_EMPTY(&sq->free_list) &&
           !(sq->n->csts & NVME_CSTS_FAILED) && !sq->n->resetting;
}

/* Fetch and start up to @burst commands; returns how many were fetched. */
static uint32_t nhc_process_sq(NhcSQ *sq, uint32_t burst)
{
    NhcCtrl *n = sq->n;
    uint32_t fetched = 0;

    if (sq->fetching) {
        return 0;   /* the loop below picks up what a nested completion made possible */
    }
    nhc_shadow_read(n, sq->db_addr, sq->size, &sq->tail);
    sq->fetching = true;
    while (burst-- && nhc_sq_can_fetch(sq)) {
        uint64_t addr = sq->dma_addr + (uint64_t)sq->head * sizeof(NvmeCmd);
        NhcReq *req = QTAILQ_FIRST(&sq->free_list);
        uint16_t status;

        if (pci_dma_read(PCI_DEVICE(n), addr, &req->cmd, sizeof(req->cmd)) != MEMTX_OK) {
            qemu_log_mask(LOG_GUEST_ERROR, "nvme-hybrid: SQ %u entry at 0x%" PRIx64
                          " not readable; controller fatal\n", sq->sqid, addr);
            n->csts |= NVME_CSTS_FAILED;
            break;
        }
        sq->head = (sq->head + 1) % sq->size;
        fetched++;
        QTAILQ_REMOVE(&sq->free_list, req, entry);
        QTAILQ_INSERT_TAIL(&sq->out_list, req, entry);
        memset(&req->cqe, 0, sizeof(req->cqe));
        req->status = NVME_SUCCESS;
        req->pending = 0;
        req->aiocb = NULL;
        req->is_io = false;
        req->aborted = false;
        req->outstanding = true;
        req->lba_lo = req->lba_hi = 0;
        req->ba_waiting = false;

        status = sq->sqid ? nhc_io_dispatch(n, req) : nhc_admin_dispatch(n, req);
        if (status != NHC_ASYNC) {
            req->status = status;
            nhc_req_complete(req);
        }
        if (sq->head == sq->tail) {
            nhc_shadow_read(n, sq->db_addr, sq->size, &sq->tail);
        }
    }
    nhc_shadow_publish(n, sq->ei_addr, sq->tail);
    sq->fetching = false;
    return fetched;
}

/*
 * Arbitration, round robin: one bottom half visits the SQs in queue-id order, fetching at most
 * Arbitration Burst (2^AB; AB=7: no limit) commands from each, and goes round again until no SQ
 * has anything it can fetch.
 */
static void nhc_fetch_bh(void *opaque)
{
    NhcCtrl *n = opaque;
    uint32_t ab = n->features.arbitration & 7;
    uint32_t burst = ab == 7 ? UINT32_MAX : 1u << ab;
    bool progress;

    /* A command that waits for the block layer runs a nested event loop, which may run this
     * bottom half again: the outer pass goes on with whatever that made fetchable. */
    if (n->fetching) {
        return;
    }
    n->fetching = true;
    do {
        progress = false;
        for (uint32_t qid = 0; qid < n->num_queues; qid++) {
            NhcSQ *sq = n->sq[qid];
            if (sq && nhc_sq_can_fetch(sq) && nhc_process_sq(sq, burst)) {
                progress = true;
            }
        }
    } while (progress);
    n->fetching = false;
}

/* Under -icount fetch at once (exact submission times); otherwise on the main loop. */
static void nhc_sq_kick(NhcSQ *sq)
{
    if (icount_enabled()) {
        nhc_process_sq(sq, UINT32_MAX);
    } else {
        qemu_bh_schedule(sq->n->fetch_bh);
    }
}

/* After completions free request slots, SQs that had to stop fetching can go on. */
static void nhc_resume_sqs(NhcCtrl *n)
{
    for (uint32_t i = 0; i < n->num_queues; i++) {
        NhcSQ *sq = n->sq[i];
        if (sq && nhc_sq_can_fetch(sq)) {
            nhc_sq_kick(sq);
        }
    }
}

/* ------------------------------------------------------------------------------ controller */

static void nhc_features_default(NhcCtrl *n)
{
    NhcFeatures *f = &n->features;

    f->arbitration = NHC_ARBITRATION_DEFAULT;
    f->num_queues = (n->max_ioqpairs - 1) << 16 | (n->max_ioqpairs - 1);
    f->int_coalescing = 0;
    f->async_config = 0;
    f->power_mgmt = 0;
    f->temp_over = NHC_WCTEMP_K;
    f->temp_under = 0;
    f->error_recovery = 0;
    f->write_atomicity = 0;
    bitmap_zero(f->vector_no_coalescing, n->num_vectors);
}

/*
 * Controller Level Reset, the one teardown path (CC.EN 1 -> 0, PCI reset, device removal):
 * every SQ is deleted (their commands end without completions), then every CQ, and features go
 * back to their defaults; SMART data and the model are kept.  The SQs are freed once their
 * commands have ended; nhc_ctrl_reset_done finishes the reset then, and CSTS.RDY goes to 0.
 */
static void nhc_ctrl_reset(NhcCtrl *n)
{
    n->resetting = true;
    for (uint32_t i = n->num_queues; i-- > 0; ) {
        if (n->sq[i]) {
            nhc_delete_sq(n, i, NULL);
        }
    }
    for (uint32_t i = n->num_queues; i-- > 0; ) {
        if (n->cq[i]) {
            nhc_delete_cq(n, i);
        }
    }
    n->outstanding_aers = 0;
    g_queue_clear(&n->events);
    n->aer_mask = 0;
    n->dbbuf_dbs = n->dbbuf_eis = 0;
    nhc_features_default(n);
    pci_irq_deassert(PCI_DEVICE(n));
    if (QTAILQ_EMPTY(&n->dying_sqs)) {
        nhc_ctrl_reset_done(n);
    }
}

/* Where the reset cannot wait (PCI reset, device removal): block I/O left in flight is drained,
 * which ends the last aborted commands. */
static void nhc_ctrl_reset_now(NhcCtrl *n)
{
    nhc_ctrl_reset(n);
    while (!QTAILQ_EMPTY(&n->dying_sqs)) {
        blk_drain(n->blkconf.blk);
    }
}

static void nhc_ctrl_shutdown(NhcCtrl *n)
{
    blk_drain(n->blkconf.blk);
    blk_flush(n->blkconf.blk);
    nhc_state_save(n);
}

static bool nhc_ctrl_start(NhcCtrl *n)
{
    uint32_t mps = NVME_CC_MPS(n->cc);
    uint32_t asqs = NVME_AQA_ASQS(n->aqa) + 1;
    uint32_t acqs = NVME_AQA_ACQS(n->aqa) + 1;
    const char *why = NULL;

    n->page_size = 1u << (12 + mps);
    if (mps < NVME_CAP_MPSMIN(n->cap) || mps > NVME_CAP_MPSMAX(n->cap)) {
        why = "CC.MPS outside CAP.MPSMIN..MPSMAX";
    } else if (NVME_CC_CSS(n->cc) != NVME_CC_CSS_NVM &&
               NVME_CC_CSS(n->cc) != NVME_CC_CSS_ADMIN_ONLY) {
        why = "CC.CSS selects an unsupported command set";
    } else if (!n->asq || !n->acq) {
        why = "ASQ or ACQ is zero";
    } else if ((n->asq | n->acq) & (n->page_size - 1)) {
        why = "ASQ or ACQ not aligned to the memory page size";
    } else if (asqs < 2 || acqs < 2) {
        why = "AQA: admin queues need at least 2 entries";
    } else if (!nhc_dma_is_ram(n, n->asq, asqs * sizeof(NvmeCmd), false) ||
               !nhc_dma_is_ram(n, n->acq, acqs * sizeof(NvmeCqe), true)) {
        why = "ASQ or ACQ not in guest RAM";
    }
    if (why) {
        qemu_log_mask(LOG_GUEST_ERROR, "nvme-hybrid: cannot enable: %s\n", why);
        n->csts |= NVME_CSTS_FAILED;
        return false;
    }
    nhc_create_cq(n, 0, n->acq, acqs, 0, true);
    nhc_create_sq(n, 0, 0, n->asq, asqs);
    return true;
}

static void nhc_ctrl_enable(NhcCtrl *n)
{
    n->csts &= ~(NVME_CSTS_FAILED | (CSTS_SHST_MASK << CSTS_SHST_SHIFT));
    if (nhc_ctrl_start(n)) {
        n->csts |= NVME_CSTS_READY;
    }
}

static void nhc_ctrl_reset_done(NhcCtrl *n)
{
    n->resetting = false;
    n->csts &= ~(NVME_CSTS_READY | NVME_CSTS_FAILED);
    /* A host that set CC.EN again without waiting for RDY = 0 gets its enable now. */
    if (NVME_CC_EN(n->cc)) {
        nhc_ctrl_enable(n);
    }
}

static void nhc_write_cc(NhcCtrl *n, uint32_t val)
{
    bool was_enabled = NVME_CC_EN(n->cc);
    bool enable = NVME_CC_EN(val);

    if (was_enabled && enable) {
        /* Only SHN and the I/O queue entry sizes may change while enabled. */
        uint32_t keep = ~((CC_SHN_MASK << CC_SHN_SHIFT) | (CC_IOSQES_MASK << CC_IOSQES_SHIFT) |
                          (CC_IOCQES_MASK << CC_IOCQES_SHIFT));
        if ((val & keep) != (n->cc & keep)) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "nvme-hybrid: CC fields other than SHN/IOSQES/IOCQES changed while "
                          "enabled; ignored\n");
        }
        val = (n->cc & keep) | (val & ~keep);
    }
    n->cc = val;

    if (!was_enabled && enable && !n->resetting) {
        nhc_ctrl_enable(n);
    } else if (was_enabled && !enable) {
        nhc_ctrl_reset(n);
    }

    if (NVME_CC_SHN(val) && NVME_CSTS_SHST(n->csts) != 2) {
        nhc_ctrl_shutdown(n);
        n->csts &= ~(CSTS_SHST_MASK << CSTS_SHST_SHIFT);
        n->csts |= NVME_CSTS_SHST_COMPLETE;
    } else if (!NVME_CC_SHN(val) && NVME_CSTS_SHST(n->csts) == 2 && enable && !was_enabled) {
        n->csts &= ~(CSTS_SHST_MASK << CSTS_SHST_SHIFT);
    }
}

/* ------------------------------------------------------------------------------ doorbells */

static void nhc_invalid_doorbell(NhcCtrl *n, uint8_t info, const char *what, uint32_t qid)
{
    qemu_log_mask(LOG_GUEST_ERROR, "nvme-hybrid: %s (queue %u)\n", what, qid);
    nhc_raise_event(n, NVME_AER_TYPE_ERROR, info, NVME_LOG_ERROR_INFO);
}

static void nhc_write_doorbell(NhcCtrl *n, hwaddr offset, uint32_t val)
{
    uint32_t idx = (offset - NHC_DB_BASE) >> 2;
    uint32_t qid = idx >> 1;

    if (!NVME_CSTS_RDY(n->csts) || (n->csts & NVME_CSTS_FAILED) || n->resetting) {
        return;
    }
    if (idx & 1) {
        NhcCQ *cq = qid < n->num_queues ? n->cq[qid] : NULL;
        uint32_t in_use;

        if (!cq) {
            nhc_invalid_doorbell(n, NVME_AER_INFO_ERR_INVALID_DB_REGISTER,
                                 "CQ head doorbell for a queue that does not exist", qid);
            return;
        }
        in_use = (cq->tail + cq->size - cq->head) % cq->size;
        if (val >= cq->size || (val + cq->size - cq->head) % cq->size > in_use) {
            nhc_invalid_doorbell(n, NVME_AER_INFO_ERR_INVALID_DB_VALUE,
                                 "CQ head doorbell beyond the entries posted", qid);
            return;
        }
        cq->head = val;
        if (!QTAILQ_EMPTY(&cq->done_list)) {
            nhc_post_cqes(cq);
        }
        if (!msix_enabled(PCI_DEVICE(n))) {
            nhc_intx_update(n);
        }
    } else {
        NhcSQ *sq = qid < n->num_queues ? n->sq[qid] : NULL;

        if (!sq) {
            nhc_invalid_doorbell(n, NVME_AER_INFO_ERR_INVALID_DB_REGISTER,
                                 "SQ tail doorbell for a queue that does not exist", qid);
            return;
        }
        if (val >= sq->size) {
            nhc_invalid_doorbell(n, NVME_AER_INFO_ERR_INVALID_DB_VALUE,
                                 "SQ tail doorbell beyond the queue size", qid);
            return;
        }
        sq->tail = val;
        nhc_sq_kick(sq);
    }
}

/* ------------------------------------------------------------------------------ registers */

static uint32_t nhc_read_reg32(NhcCtrl *n, hwaddr off)
{
    switch (off) {
    case NVME_REG_CAP:      return n->cap;
    case NVME_REG_CAP + 4:  return n->cap >> 32;
    case NVME_REG_VS:       return n->vs;
    case NVME_REG_INTMS:
    case NVME_REG_INTMC:    return n->intms;
    case NVME_REG_CC:       return n->cc;
    case NVME_REG_CSTS:     return n->csts;
    case NVME_REG_AQA:      return n->aqa;
    case NVME_REG_ASQ:      return n->asq;
    case NVME_REG_ASQ + 4:  return n->asq >> 32;
    case NVME_REG_ACQ:      return n->acq;
    case NVME_REG_ACQ + 4:  return n->acq >> 32;
    case NVME_REG_PMRCAP ... NVME_REG_PMRMSCU: return nhc_ba_read_reg(n, off);
    default:                return 0;   /* reserved, optional features, doorbells */
    }
}

static void nhc_write_reg32(NhcCtrl *n, hwaddr off, uint32_t val)
{
    if (off >= NHC_DB_BASE) {
        nhc_write_doorbell(n, off, val);
        return;
    }
    switch (off) {
    case NVME_REG_INTMS:
        if (!msix_enabled(PCI_DEVICE(n))) {
            n->intms |= val;
            nhc_intx_update(n);
        }
        break;
    case NVME_REG_INTMC:
        if (!msix_enabled(PCI_DEVICE(n))) {
            n->intms &= ~val;
            nhc_intx_update(n);
        }
        break;
    case NVME_REG_CC:
        nhc_write_cc(n, val);
        break;
    case NVME_REG_AQA:
        n->aqa = val & ((AQA_ASQS_MASK << AQA_ASQS_SHIFT) | (AQA_ACQS_MASK << AQA_ACQS_SHIFT));
        break;
    case NVME_REG_ASQ:      n->asq = (n->asq & ~0xffffffffull) | (val & ~0xfffu); break;
    case NVME_REG_ASQ + 4:  n->asq = (n->asq & 0xffffffffull) | ((uint64_t)val << 32); break;
    case NVME_REG_ACQ:      n->acq = (n->acq & ~0xffffffffull) | (val & ~0xfffu); break;
    case NVME_REG_ACQ + 4:  n->acq = (n->acq & 0xffffffffull) | ((uint64_t)val << 32); break;
    case NVME_REG_PMRCTL:   nhc_ba_write_pmrctl(n, val); break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "nvme-hybrid: write to read-only or reserved register "
                      "0x%" HWADDR_PRIx " ignored\n", off);
        break;
    }
}

static uint64_t nhc_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    NhcCtrl *n = opaque;

    if (addr & (size - 1)) {
        qemu_log_mask(LOG_GUEST_ERROR, "nvme-hybrid: misaligned register read\n");
        return 0;
    }
    if (size == 8) {
        return nhc_read_reg32(n, addr) | (uint64_t)nhc_read_reg32(n, addr + 4) << 32;
    }
    return nhc_read_reg32(n, addr);
}

static void nhc_mmio_write(void *opaque, hwaddr addr, uint64_t data, unsigned size)
{
    NhcCtrl *n = opaque;

    if (addr & (size - 1)) {
        qemu_log_mask(LOG_GUEST_ERROR, "nvme-hybrid: misaligned register write ignored\n");
        return;
    }
    nhc_write_reg32(n, addr, data);
    if (size == 8) {
        nhc_write_reg32(n, addr + 4, data >> 32);
    }
}

static const MemoryRegionOps nhc_mmio_ops = {
    .read = nhc_mmio_read,
    .write = nhc_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = { .min_access_size = 4, .max_access_size = 8 },
    .valid = { .min_access_size = 4, .max_access_size = 8 },
};

/* ------------------------------------------------------------------------------ realize */

static void nhc_init_regs(NhcCtrl *n)
{
    n->cap = 0;
    NVME_CAP_SET_MQES(n->cap, NHC_MAX_QENTRIES - 1);
    NVME_CAP_SET_CQR(n->cap, 1);
    NVME_CAP_SET_TO(n->cap, 30);            /* 15 s, in 500 ms units */
    NVME_CAP_SET_DSTRD(n->cap, 0);
    NVME_CAP_SET_CSS(n->cap, NVME_CAP_CSS_NCSS);
    NVME_CAP_SET_MPSMIN(n->cap, 0);         /* 4 KiB */
    NVME_CAP_SET_MPSMAX(n->cap, 4);         /* 64 KiB */
    n->vs = 0x00010400;                     /* NVMe 1.4 */
    n->cc = n->csts = n->aqa = n->intms = 0;
    n->asq = n->acq = 0;
    nhc_ba_init_regs(n);
}

static bool nhc_check_props(NhcCtrl *n, Error **errp)
{
    int64_t len;

    if (!n->blkconf.blk) {
        error_setg(errp, "drive: property is required (the block backend holding the data)");
        return false;
    }
    if (!n->serial || !*n->serial) {
        error_setg(errp, "serial: property is required");
        return false;
    }
    if (strlen(n->serial) > 20) {
        error_setg(errp, "serial: at most 20 characters, got %zu", strlen(n->serial));
        return false;
    }
    if (n->lba_size != 512 && n->lba_size != 4096) {
        error_setg(errp, "lba-size: must be 512 or 4096, got %u", n->lba_size);
        return false;
    }
    if (n->max_ioqpairs < 1 || n->max_ioqpairs > 256) {
        error_setg(errp, "queues: must be between 1 and 256 I/O queue pairs, got %u",
                   n->max_ioqpairs);
        return false;
    }
    len = blk_getlength(n->blkconf.blk);
    if (len < 0) {
        error_setg_errno(errp, -len, "drive: cannot get the size of the backing image");
        return false;
    }
    if (len == 0 || len % n->lba_size) {
        error_setg(errp, "drive: image size %" PRId64 " is not a positive multiple of "
                   "lba-size %u", len, n->lba_size);
        return false;
    }
    n->ns_bytes = len;
    n->nsze = len / n->lba_size;
    n->lba_shift = ctz32(n->lba_size);
    return true;
}

static bool nhc_init_pci(NhcCtrl *n, Error **errp)
{
    PCIDevice *pci = PCI_DEVICE(n);
    uint32_t table_off, pba_off, bar_size;

    pci->config[PCI_INTERRUPT_PIN] = 1;
    pci_config_set_prog_interface(pci->config, 0x2);
    pci_config_set_vendor_id(pci->config, NHC_PCI_VENDOR);
    pci_config_set_device_id(pci->config, NHC_PCI_DEVICE);
    pci_config_set_class(pci->config, PCI_CLASS_STORAGE_EXPRESS);
    pcie_endpoint_cap_init(pci, 0x80);

    /* BAR0 is 32-bit so that BAR1 stays free for the persistent-memory window. */
    n->reg_size = pow2ceil(NHC_DB_BASE + 8 * n->num_queues);
    n->num_vectors = n->num_queues;
    table_off = n->reg_size;
    pba_off = QEMU_ALIGN_UP(table_off + n->num_vectors * PCI_MSIX_ENTRY_SIZE, 4 * KiB);
    bar_size = pow2ceil(pba_off + QEMU_ALIGN_UP(DIV_ROUND_UP(n->num_vectors, 64) * 8, 4 * KiB));

    memory_region_init(&n->bar0, OBJECT(n), "nvme-hybrid-bar0", bar_size);
    memory_region_init_io(&n->iomem, OBJECT(n), &nhc_mmio_ops, n, "nvme-hybrid-regs",
                          n->reg_size);
    memory_region_add_subregion(&n->bar0, 0, &n->iomem);
    pci_register_bar(pci, 0, PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_32,
                     &n->bar0);
    if (msix_init(pci, n->num_vectors, &n->bar0, 0, table_off, &n->bar0, 0, pba_off, 0,
                  errp) < 0) {
        return false;
    }
    return true;
}

static void nhc_exit_notify(Notifier *notifier, void *data)
{
    NhcCtrl *n = container_of(notifier, NhcCtrl, exit_notifier);

    nhc_state_save(n);
}

static void nhc_realize(PCIDevice *pci, Error **errp)
{
    ERRP_GUARD();
    NhcCtrl *n = NVME_HYBRID(pci);
    g_autoptr(GError) gerr = NULL;

    if (!nhc_check_props(n, errp)) {
        return;
    }
    if (!blkconf_apply_backend_options(&n->blkconf, false, true, errp)) {
        return;
    }
    n->backend_wc = blk_enable_write_cache(n->blkconf.blk);
    if (!nh_config_check(&n->cfg, &gerr)) {
        error_setg(errp, "%s", gerr->message);
        return;
    }
    n->engine = nh_engine_new(&n->cfg, n->ns_bytes, &gerr);
    if (!n->engine) {
        error_setg(errp, "%s", gerr->message);
        return;
    }
    n->vwc_present = n->backend_wc || nh_engine_volatile_write_cache(n->engine);
    n->wce = true;
    n->num_queues = n->max_ioqpairs + 1;
    n->sq = g_new0(NhcSQ *, n->num_queues);
    n->cq = g_new0(NhcCQ *, n->num_queues);
    g_queue_init(&n->events);
    QTAILQ_INIT(&n->dying_sqs);
    n->fetch_bh = qemu_bh_new_guarded(nhc_fetch_bh, n, &DEVICE(n)->mem_reentrancy_guard);
    nhc_init_regs(n);
    if (!nhc_init_pci(n, errp)) {
        goto fail;
    }
    n->features.vector_no_coalescing = bitmap_new(n->num_vectors);
    nhc_features_default(n);
    if (!nhc_ba_realize(n, errp)) {
        goto fail;
    }
    nhc_state_open(n, errp);
    if (*errp) {
        goto fail;
    }
    nhc_ba_report_restore(n);
    n->exit_notifier.notify = nhc_exit_notify;
    qemu_add_exit_notifier(&n->exit_notifier);
    return;

fail:
    nhc_ba_exit(n);
    g_clear_pointer(&n->fetch_bh, qemu_bh_delete);
    msix_uninit(pci, &n->bar0, &n->bar0);
    g_free(n->sq);
    g_free(n->cq);
    g_clear_pointer(&n->features.vector_no_coalescing, g_free);
    nh_engine_free(n->engine);
    n->engine = NULL;
}

static void nhc_exit(PCIDevice *pci)
{
    NhcCtrl *n = NVME_HYBRID(pci);

    n->cc = 0;
    nhc_ctrl_reset_now(n);
    nhc_state_close(n);
    qemu_remove_exit_notifier(&n->exit_notifier);
    nhc_ba_exit(n);
    g_clear_pointer(&n->fetch_bh, qemu_bh_delete);
    msix_uninit(pci, &n->bar0, &n->bar0);
    g_free(n->sq);
    g_free(n->cq);
    g_clear_pointer(&n->features.vector_no_coalescing, g_free);
    g_clear_pointer(&n->vendor_log, g_byte_array_unref);
    nh_engine_free(n->engine);
    n->engine = NULL;
}

static void nhc_reset(DeviceState *dev)
{
    NhcCtrl *n = NVME_HYBRID(dev);

    n->cc = 0;
    nhc_ctrl_reset_now(n);
    nhc_init_regs(n);
}

/* ------------------------------------------------------------------------------ properties */

static void nhc_get_stats(Object *obj, Visitor *v, const char *name, void *opaque,
                          Error **errp)
{
    NhcCtrl *n = NVME_HYBRID(obj);
    g_autofree char *json = NULL;

    if (!n->engine) {
        error_setg(errp, "stats: the device is not realized");
        return;
    }
    json = nh_engine_stats_json(n->engine, false);
    visit_type_str(v, name, &json, errp);
}

/* Engine keys become string properties whose setter is the engine's own parser. */
static void nhc_get_engine_key(Object *obj, Visitor *v, const char *name, void *opaque,
                               Error **errp)
{
    NhcCtrl *n = NVME_HYBRID(obj);
    const NhConfigKey *key = opaque;
    g_autofree char *val = nh_config_get(n->engine ? nh_engine_config(n->engine) : &n->cfg,
                                         key->name);

    visit_type_str(v, name, &val, errp);
}

static void nhc_set_engine_key(Object *obj, Visitor *v, const char *name, void *opaque,
                               Error **errp)
{
    NhcCtrl *n = NVME_HYBRID(obj);
    const NhConfigKey *key = opaque;
    g_autofree char *val = NULL;
    g_autoptr(GError) gerr = NULL;

    if (DEVICE(obj)->realized) {
        error_setg(errp, "%s: cannot be changed after the device is realized", key->name);
        return;
    }
    if (!visit_type_str(v, name, &val, errp)) {
        return;
    }
    if (!nh_config_set(&n->cfg, key->name, val, &gerr)) {
        error_setg(errp, "%s", gerr->message);
    }
}

static const Property nhc_props[] = {
    DEFINE_PROP_DRIVE("drive", NhcCtrl, blkconf.blk),
    DEFINE_PROP_ON_OFF_AUTO("write-cache", NhcCtrl, blkconf.wce, ON_OFF_AUTO_AUTO),
    DEFINE_PROP_STRING("serial", NhcCtrl, serial),
    DEFINE_PROP_UINT32("lba-size", NhcCtrl, lba_size, 512),
    DEFINE_PROP_UINT32("queues", NhcCtrl, max_ioqpairs, 64),
    DEFINE_PROP_STRING("state-file", NhcCtrl, state_file),
    NHC_BA_PROPERTIES,
};

static void nhc_instance_init(Object *obj)
{
    NhcCtrl *n = NVME_HYBRID(obj);

    nh_config_defaults(&n->cfg);
}

static const VMStateDescription nhc_vmstate = {
    .name = "nvme-hybrid",
    .unmigratable = 1,
};

static void nhc_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(oc);

    pc->realize = nhc_realize;
    pc->exit = nhc_exit;
    pc->class_id = PCI_CLASS_STORAGE_EXPRESS;
    pc->vendor_id = NHC_PCI_VENDOR;
    pc->device_id = NHC_PCI_DEVICE;
    pc->subsystem_vendor_id = NHC_PCI_VENDOR;
    pc->subsystem_id = NHC_PCI_DEVICE;
    set_bit(DEVICE_CATEGORY_STORAGE, dc->categories);
    dc->desc = "NVMe SSD with a NAND/FTL model (nvme-hybrid)";
    dc->vmsd = &nhc_vmstate;
    device_class_set_props(dc, nhc_props);
    device_class_set_legacy_reset(dc, nhc_reset);

    for (size_t i = 0; i < nh_config_nkeys; i++) {
        const NhConfigKey *key = &nh_config_keys[i];
        object_class_property_add(oc, key->name, "str", nhc_get_engine_key,
                                  nhc_set_engine_key, NULL, (void *)key);
        object_class_property_set_description(oc, key->name, key->help);
    }
    object_class_property_add(oc, "stats", "str", nhc_get_stats, NULL, NULL, NULL);
    nhc_ba_class_init(oc);
    object_class_property_set_description(oc, "stats",
        "engine statistics as one JSON document (see docs/statistics.md)");
}

static const TypeInfo nhc_info = {
    .name = TYPE_NVME_HYBRID,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(NhcCtrl),
    .instance_init = nhc_instance_init,
    .class_init = nhc_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void nhc_register_types(void)
{
    type_register_static(&nhc_info);
}

type_init(nhc_register_types)
