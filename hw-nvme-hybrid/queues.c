/*
 * queues.c - submission and completion queues: command fetch and round-robin arbitration,
 * completion posting, interrupts (MSI-X, INTx, coalescing), shadow doorbells, and the life of a
 * request from fetch to completion or abort, including queue deletion.
 *
 * Commands are fetched by a bottom half on the main loop after the host writes an SQ tail
 * doorbell, so the vCPU goes on while the device works, as with a real controller.  Under -icount
 * they are fetched in the doorbell write itself instead, so that the submission time handed to
 * the engine is exactly the guest's.  Completions are posted when both the block I/O and the
 * engine's modeled completion time (a virtual-clock timer) are done.
 *
 * Nothing is fetched from inside a fetch, a completion or a reset, in any timing mode.  A
 * completion can free an SQ slot, or end a write that a BA_PIN waited for, whose own completion
 * frees an admin slot; fetching right there would run a Delete I/O SQ under the completion of a
 * request of that SQ, or a Create I/O SQ in the middle of a reset.  Those places hold the fetch
 * (nhc_fetch_hold); what they make fetchable is fetched when the outermost of them lets go, at
 * the same virtual time, so -icount stays exact and deterministic.
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "hw/pci/msix.h"
#include "system/block-backend.h"

#include "nvme-hybrid.h"
#include "trace.h"

static void nhc_cq_refresh_head(NhcCQ *cq);

/* ------------------------------------------------------------------------------ interrupts */

static bool nhc_cq_has_entries(NhcCQ *cq)
{
    return cq->head != cq->tail;
}

/* INTx is level-triggered: asserted while any interrupt-enabled CQ holds unconsumed entries. */
void nhc_intx_update(NhcCtrl *n)
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
    trace_nhc_irq_intx(level);
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
        trace_nhc_irq_msix(cq->cqid, cq->vector);
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

void nhc_post_cqes(NhcCQ *cq)
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
        nhc_event(n, NHC_EV_CQE_POSTED);
        QTAILQ_REMOVE(&cq->done_list, req, entry);
        req->cqe.sq_id = cpu_to_le16(sq->sqid);
        req->cqe.sq_head = cpu_to_le16(sq->head);
        req->cqe.cid = req->cmd.cid;
        req->cqe.status = cpu_to_le16((req->status << 1) | cq->phase);
        addr = cq->dma_addr + (uint64_t)cq->tail * sizeof(NvmeCqe);
        if (pci_dma_write(PCI_DEVICE(n), addr, &req->cqe, sizeof(req->cqe)) != MEMTX_OK) {
            NHC_GUEST_ERR(trace_nhc_err_cq_write(cq->cqid, addr),
                          "CQ %u entry at 0x%" PRIx64 " not writable; controller fatal",
                          cq->cqid, addr);
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
        nhc_fetch_kick(n);      /* SQs that had no free slot can go on */
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
    if (n->write_hooks.ended) {
        n->write_hooks.ended(n, req);
    }
}

static void nhc_sq_free_if_done(NhcSQ *sq);

void nhc_req_complete(NhcReq *req)
{
    NhcSQ *sq = req->sq;
    NhcCtrl *n = sq->n;
    NhcCQ *cq;

    nhc_fetch_hold(n);
    if (req->aborted) {
        nhc_req_release(req);
        QTAILQ_INSERT_TAIL(&sq->free_list, req, entry);
        nhc_sq_free_if_done(sq);
        nhc_fetch_release(n);
        return;
    }
    cq = n->cq[sq->cqid];
    nhc_req_release(req);
    trace_nhc_cmd_complete(sq->sqid, le16_to_cpu(req->cmd.cid), req->status);
    if (req->status != NVME_SUCCESS) {
        trace_nhc_err_cmd(sq->sqid, le16_to_cpu(req->cmd.cid), req->cmd.opcode, req->status);
        nhc_record_error(n, req);
    }
    QTAILQ_INSERT_TAIL(&cq->done_list, req, entry);
    /* Completions that arrive together are posted together, with one interrupt, from a bottom
     * half; under -icount at once, so the guest sees the modeled time exactly. */
    if (nhc_exact_time(n)) {
        nhc_post_cqes(cq);
    } else {
        qemu_bh_schedule(cq->bh);
    }
    nhc_fetch_release(n);
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

/* ------------------------------------------------------------------------------ queues */

uint16_t nhc_create_cq(NhcCtrl *n, uint16_t cqid, uint64_t dma_addr, uint32_t size,
                       uint16_t vector, bool irq_enabled)
{
    NhcCQ *cq = g_new0(NhcCQ, 1);

    trace_nhc_cq_create(cqid, dma_addr, size, vector, irq_enabled);
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

    trace_nhc_sq_create(sqid, cqid, dma_addr, size);
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
    trace_nhc_sq_freed(sq->sqid);
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

    trace_nhc_cmd_abort(req->sq->sqid, le16_to_cpu(req->cmd.cid));
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

    trace_nhc_sq_delete(sqid);
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

    trace_nhc_cq_delete(cqid);
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

/* Fetch and start up to @burst commands; returns how many were fetched.  Only from
 * nhc_fetch_bh, which holds the fetch: a command that completes at once posts its completion
 * here but fetches nothing. */
static uint32_t nhc_process_sq(NhcSQ *sq, uint32_t burst)
{
    NhcCtrl *n = sq->n;
    uint32_t fetched = 0;

    nhc_shadow_read(n, sq->db_addr, sq->size, &sq->tail);
    while (burst-- && nhc_sq_can_fetch(sq)) {
        uint64_t addr = sq->dma_addr + (uint64_t)sq->head * sizeof(NvmeCmd);
        NhcReq *req = QTAILQ_FIRST(&sq->free_list);
        uint16_t status;

        nhc_event(n, NHC_EV_FETCH);
        if (pci_dma_read(PCI_DEVICE(n), addr, &req->cmd, sizeof(req->cmd)) != MEMTX_OK) {
            NHC_GUEST_ERR(trace_nhc_err_sq_read(sq->sqid, addr),
                          "SQ %u entry at 0x%" PRIx64 " not readable; controller fatal",
                          sq->sqid, addr);
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
        req->ba_blockers = 0;
        req->seq = n->fetch_seq++;
        trace_nhc_cmd_fetch(sq->sqid, le16_to_cpu(req->cmd.cid), req->cmd.opcode,
                            le32_to_cpu(req->cmd.nsid));

        status = nhc_dispatch(n, req);
        if (status != NHC_ASYNC) {
            req->status = status;
            nhc_req_complete(req);
        }
        if (sq->head == sq->tail) {
            nhc_shadow_read(n, sq->db_addr, sq->size, &sq->tail);
        }
    }
    nhc_shadow_publish(n, sq->ei_addr, sq->tail);
    return fetched;
}

void nhc_fetch_hold(NhcCtrl *n)
{
    n->fetch_hold++;
}

/* The outermost holder lets go: fetch what was asked for meanwhile. */
void nhc_fetch_release(NhcCtrl *n)
{
    assert(n->fetch_hold > 0);
    if (--n->fetch_hold == 0 && n->fetch_wanted) {
        n->fetch_wanted = false;
        nhc_fetch_kick(n);
    }
}

/*
 * Arbitration, round robin: visit the SQs in queue-id order, fetching at most Arbitration Burst
 * (2^AB; AB=7: no limit) commands from each, and go round again until no SQ has anything it can
 * fetch.  A bottom half, or called directly under -icount (nhc_fetch_kick).
 */
void nhc_fetch_bh(void *opaque)
{
    NhcCtrl *n = opaque;
    uint32_t ab = n->features.arbitration & 7;
    uint32_t burst = ab == 7 ? UINT32_MAX : 1u << ab;
    bool progress;

    /* Held (a command that waits for the block layer runs a nested event loop, which may run
     * this bottom half): the holder fetches when it lets go. */
    if (n->fetch_hold) {
        n->fetch_wanted = true;
        return;
    }
    if (n->power_cut) {
        return;     /* the power is going (nhc_set_power_cut) */
    }
    nhc_fetch_hold(n);
    do {
        progress = false;
        for (uint32_t qid = 0; qid < n->num_queues && !n->power_cut; qid++) {
            NhcSQ *sq = n->sq[qid];
            if (sq && nhc_sq_can_fetch(sq) && nhc_process_sq(sq, burst)) {
                progress = true;
            }
        }
    } while (progress);
    /* every SQ has been visited since the last request: nothing left to fetch */
    n->fetch_wanted = false;
    nhc_fetch_release(n);
}

/* Something may have become fetchable (a doorbell, a freed slot): under -icount fetch at once
 * (exact submission times), unless held; otherwise on the main loop. */
void nhc_fetch_kick(NhcCtrl *n)
{
    if (n->fetch_hold) {
        n->fetch_wanted = true;
    } else if (nhc_exact_time(n)) {
        nhc_fetch_bh(n);
    } else {
        qemu_bh_schedule(n->fetch_bh);
    }
}
