/*
 * bar-pm.c - the BAR1 persistent-memory window (2B-SSD, seed 004): QEMU side.
 *
 * The window is a RAM region over the shared mapping of the ba-file that bar-pm/ba-manager.c
 * manages (entry table, recovery, integrity checks), so guest stores land in the file directly
 * and survive QEMU being killed, as DRAM behind capacitors would.  Here: BAR1, the NVMe PMR
 * registers in BAR0, the vendor admin commands that move data between the window and the
 * LBAs through the engine and the block backend, the refusal of block writes to pinned LBAs,
 * and the window's save when power is lost (QEMU exits, QEMU is killed, `power-cut` over QMP,
 * which ctrl.c handles).
 * docs/bar-pm.md is the user-facing description.
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "system/block-backend.h"
#include "system/runstate.h"
#include "system/system.h"

#include "nvme-hybrid.h"
#include "trace.h"
#include "ba-manager.h"

/* Command specific status values in the vendor specific range (SCT 1h, SC C0h-FFh). */
#define NHC_BA_SC(sc)       NHC_STATUS((1 << 8) | (sc))
#define NHC_SC_BA_INVALID_ENTRY     NHC_BA_SC(NH_BA_SC_INVALID_ENTRY)
#define NHC_SC_BA_ENTRY_PINNED      NHC_BA_SC(NH_BA_SC_ENTRY_PINNED)
#define NHC_SC_BA_ENTRY_NOT_PINNED  NHC_BA_SC(NH_BA_SC_ENTRY_NOT_PINNED)
#define NHC_SC_BA_WINDOW_RANGE      NHC_BA_SC(NH_BA_SC_WINDOW_RANGE)
#define NHC_SC_BA_OVERLAP           NHC_BA_SC(NH_BA_SC_OVERLAP)

#define NHC_BA_PMRSTS_HSTS_RESTORE_ERROR  1

static uint16_t nhc_ba_status(NhBaErr err)
{
    switch (err) {
    case NH_BA_OK:          return NVME_SUCCESS;
    case NH_BA_EBADEID:     return NHC_ERR(NHC_SC_BA_INVALID_ENTRY);
    case NH_BA_EBUSY:       return NHC_ERR(NHC_SC_BA_ENTRY_PINNED);
    case NH_BA_ENOTPINNED:  return NHC_ERR(NHC_SC_BA_ENTRY_NOT_PINNED);
    case NH_BA_EWINDOW:     return NHC_ERR(NHC_SC_BA_WINDOW_RANGE);
    case NH_BA_ELBA:        return NHC_ERR(NVME_LBA_RANGE);
    case NH_BA_EOVERLAP:    return NHC_ERR(NHC_SC_BA_OVERLAP);
    }
    return NHC_ERR(NVME_INTERNAL_DEV_ERROR);
}

bool nhc_ba_present(NhcCtrl *n)
{
    return n->bar1.ba != NULL;
}

static bool nhc_ba_restore_failed(NhcCtrl *n)
{
    const NhBa *ba = n->bar1.ba;

    return ba && (ba->restore == NH_BA_CORRUPT || ba->restore == NH_BA_TORN);
}

/* ------------------------------------------------------------------------------ registers */

void nhc_ba_init_regs(NhcCtrl *n)
{
    if (!n->bar1.size) {
        return;
    }
    NVME_CAP_SET_PMRS(n->cap, 1);
    n->bar1.pmrctl = 0;
    if (n->bar1.ba) {
        memory_region_set_enabled(&n->bar1.ram, false);
    }
}

uint32_t nhc_ba_read_reg(NhcCtrl *n, hwaddr off)
{
    uint32_t v = 0;

    if (!n->bar1.ba) {
        return 0;       /* CAP.PMRS = 0: the PMR registers are reserved */
    }
    switch (off) {
    case NVME_REG_PMRCAP:
        NVME_PMRCAP_SET_RDS(v, 1);
        NVME_PMRCAP_SET_WDS(v, 1);
        NVME_PMRCAP_SET_BIR(v, 1);
        NVME_PMRCAP_SET_PMRTU(v, 0);            /* 500 ms units */
        /* A read of PMRSTS is the barrier (with PMRSTS.PPND 0 when persists are modeled,
         * ba-persist.c); when they are free, any read of the PMR is one too, as every write
         * has landed at once (the window is the mapped file). */
        NVME_PMRCAP_SET_PMRWBM(v, n->bar1.shadow ? 0x2 : 0x3);
        NVME_PMRCAP_SET_PMRTO(v, 1);            /* ready at once after PMRCTL.EN */
        return v;
    case NVME_REG_PMRCTL:
        return n->bar1.pmrctl;
    case NVME_REG_PMRSTS:
        NVME_PMRSTS_SET_NRDY(v, !(n->bar1.pmrctl & 1));
        NVME_PMRSTS_SET_HSTS(v, nhc_ba_restore_failed(n) ? NHC_BA_PMRSTS_HSTS_RESTORE_ERROR : 0);
        return v | (nhc_ba_persist_pending(n) ? NH_BA_PMRSTS_PPND : 0);
    case NVME_REG_PMRSWTP:
        return nhc_ba_persist_swtp(n);
    default:
        /* PMREBS: no elasticity buffer; PMRMSCL/U: the PMR is not in the controller memory
         * space. */
        return 0;
    }
}

void nhc_ba_write_pmrctl(NhcCtrl *n, uint32_t val)
{
    if (!n->bar1.ba) {
        return;
    }
    n->bar1.pmrctl = val & 1;
    memory_region_set_enabled(&n->bar1.ram, n->bar1.pmrctl);
}

/* ------------------------------------------------------------------------------ datapath */

/*
 * BA_PIN, BA_SYNC and BA_FLUSH move bytes between the window and the LBAs through the engine
 * (a read for a pin, a FUA write for sync and flush) and the block backend, asynchronously like
 * any other command.  They are ordered against what else is in flight:
 *  - a BA_PIN reserves its window range, LBAs and entry when it is admitted: from then on block
 *    writes to those LBAs are refused (Access Denied), and it loads the window only once every
 *    write admitted before it that touches those LBAs has completed, so the window holds their
 *    data and a later BA_FLUSH cannot overwrite it with older bytes;
 *  - the entry becomes pinned when the load has finished; BA_SYNC, BA_FLUSH and BA_READ_DMA of
 *    it are refused as Entry Not Pinned until then;
 *  - BA_SYNC and BA_FLUSH of one entry run one at a time, in the order they were fetched.
 * n->bar1.ops holds these commands from admission to completion.
 */

static uint32_t nhc_ba_eid(NhcReq *req)
{
    return le32_to_cpu(req->cmd.cdw10);
}

/* A BA_PIN's request: window offset, first LBA, LBA count. */
static void nhc_ba_pin_args(NhcReq *req, uint64_t *off, uint64_t *slba, uint64_t *nlb)
{
    *off = le32_to_cpu(req->cmd.cdw11);
    *slba = le32_to_cpu(req->cmd.cdw12) | (uint64_t)le32_to_cpu(req->cmd.cdw13) << 32;
    *nlb = le32_to_cpu(req->cmd.cdw14);
}

static bool nhc_lbas_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

static uint32_t nhc_sq_count_writes(NhcSQ *sq, uint64_t slba, uint64_t nlb)
{
    uint32_t count = 0;
    NhcReq *req;

    QTAILQ_FOREACH(req, &sq->out_list, entry) {
        count += req->lba_hi &&
                 nhc_lbas_overlap(slba, nlb, req->lba_lo, req->lba_hi - req->lba_lo);
    }
    return count;
}

/* Writes (Write, Write Zeroes, Dataset Management) to [slba, slba + nlb) in flight, aborted
 * ones of deleted queues included: a BA_PIN admitted now waits for them all. */
static uint32_t nhc_count_writes_in_flight(NhcCtrl *n, uint64_t slba, uint64_t nlb)
{
    uint32_t count = 0;
    NhcSQ *sq;

    for (uint32_t qid = 1; qid < n->num_queues; qid++) {
        if (n->sq[qid]) {
            count += nhc_sq_count_writes(n->sq[qid], slba, nlb);
        }
    }
    QTAILQ_FOREACH(sq, &n->dying_sqs, entry) {
        if (sq->sqid) {
            count += nhc_sq_count_writes(sq, slba, nlb);
        }
    }
    return count;
}

static void nhc_ba_move_cb(void *opaque, int ret)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
    bool was;
    uint64_t off, slba, nlb;

    if (n->power_cut) {
        return;     /* the power failed (the cut's restore polls the block layer): it is over */
    }
    was = nhc_guard_enter(n);
    nhc_event(n, NHC_EV_BACKEND_DONE);
    trace_nhc_ba_done(req->cmd.opcode, nhc_ba_eid(req), ret);
    /* The table changes only for a transfer that worked and a host still there to see it. */
    if (ret == 0 && !req->aborted) {
        if (req->cmd.opcode == NHC_ADM_BA_PIN) {
            nhc_ba_pin_args(req, &off, &slba, &nlb);
            /* the load lands in the window now, with its entry, both under the BQL */
            nhc_event(n, NHC_EV_WINDOW_DMA);
            memcpy(n->bar1.ba->window + off, req->bounce, nlb << n->lba_shift);
            nh_ba_pin(n->bar1.ba, nhc_ba_eid(req), off, slba, nlb);
            nhc_ba_persist_device_wrote(n, off, nlb << n->lba_shift);
        } else if (req->cmd.opcode == NHC_ADM_BA_FLUSH) {
            nh_ba_release(n->bar1.ba, nhc_ba_eid(req));
        }
    }
    nhc_req_backend_done(req, ret);
    nhc_guard_exit(n, was);
}

/*
 * Start @req's transfer of @len bytes between the window at @woff and the LBAs at @slba; it
 * completes when the backend is done and the engine's modeled time has come.  A load (BA_PIN)
 * reads into a buffer that nhc_ba_move_cb copies into the window under the BQL: the block
 * layer's worker never writes the window itself, so a power cut (which holds the BQL while the
 * capacitors save the window) finds the load either done or not begun, and the saved checksum
 * matches the saved bytes.
 */
static void nhc_ba_move(NhcCtrl *n, NhcReq *req, bool to_lbas, uint64_t woff, uint64_t slba,
                        uint64_t len)
{
    NhRequest r = {
        .op = to_lbas ? NH_OP_WRITE : NH_OP_READ,
        .flags = to_lbas ? NH_REQ_FUA : 0,
        .offset = slba << n->lba_shift,
        .length = len,
    };
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    g_autoptr(GError) err = NULL;
    uint64_t done;

    nhc_event(n, NHC_EV_MODEL);
    if (!nh_engine_submit(n->engine, &r, now, &done, &err)) {
        NHC_GUEST_ERR(trace_nhc_err_engine(err->message), "engine refused a BA transfer: %s",
                      err->message);
        req->status = NVME_INTERNAL_DEV_ERROR;
        nhc_req_io_done(req);
        return;
    }
    n->state_changed = true;            /* counters moved: the next checkpoint saves them */
    if (to_lbas) {
        nhc_state_touch(n);
        nhc_write_durable(n, slba, len >> n->lba_shift);    /* a FUA write */
    }
    if (done > (uint64_t)now) {
        req->pending++;
        timer_mod(req->timer, done);
    }
    trace_nhc_ba_start(req->cmd.opcode, nhc_ba_eid(req), woff, slba, len);
    if (!to_lbas) {
        req->bounce = g_malloc(len);
        req->bounce_len = len;
    }
    qemu_iovec_init_buf(&req->iov, to_lbas ? n->bar1.ba->window + woff : req->bounce, len);
    nhc_backend_rw(n, req, r.offset, &req->iov, to_lbas, to_lbas ? BDRV_REQ_FUA : 0,
                   nhc_ba_move_cb);
}

static void nhc_ba_start(NhcCtrl *n, NhcReq *req)
{
    uint32_t eid = nhc_ba_eid(req);
    uint64_t off, slba, nlb;
    NhBaEntry e;

    if (req->cmd.opcode == NHC_ADM_BA_PIN) {
        nhc_ba_pin_args(req, &off, &slba, &nlb);
        nhc_ba_move(n, req, false, off, slba, nlb << n->lba_shift);
        return;
    }
    /* A BA_FLUSH queued before this one may have released the entry meanwhile. */
    if (nh_ba_check_entry(n->bar1.ba, eid) != NH_BA_OK) {
        req->status = nhc_ba_status(nh_ba_check_entry(n->bar1.ba, eid));
        nhc_req_io_done(req);
        return;
    }
    e = nh_ba_entry(n->bar1.ba, eid);
    nhc_ba_move(n, req, true, e.offset, e.slba, e.nlb << n->lba_shift);
}

/*
 * Start every waiting BA command nothing holds back any more: a BA_PIN once no write to its
 * LBAs is in flight (its count of them, kept as they end, is 0), a BA_SYNC or BA_FLUSH once no
 * command of its entry was admitted before it.  One pass in admission order, marking the
 * entries held so far, so a pass is linear in the commands however many wait on one entry (a
 * guest can queue a thousand) and never looks at the I/O queues; a start may end requests and
 * change the array, so the pass begins again after each.
 */
static void nhc_ba_kick(NhcCtrl *n)
{
    DECLARE_BITMAP(held, NH_BA_MAX_ENTRIES);
    bool started;

    if (!n->bar1.ops || n->bar1.kicking) {
        return;     /* a start that ends requests at once comes back here: the loop goes on */
    }
    n->bar1.kicking = true;
    do {
        started = false;
        bitmap_zero(held, NH_BA_MAX_ENTRIES);
        for (guint i = 0; i < n->bar1.ops->len; i++) {
            NhcReq *req = g_ptr_array_index(n->bar1.ops, i);
            bool blocked;

            if (req->cmd.opcode == NHC_ADM_BA_PIN) {
                blocked = req->ba_blockers > 0;
            } else {
                /* admitted, so its entry is below n->bar1.ba->entries */
                blocked = test_and_set_bit(nhc_ba_eid(req), held);
            }
            if (req->ba_waiting && !blocked) {
                req->ba_waiting = false;
                nhc_ba_start(n, req);   /* may end requests: the array changes */
                started = true;
                break;
            }
        }
    } while (started);
    n->bar1.kicking = false;
}

/* Write @req has ended: the waiting BA_PINs admitted after it, whose LBAs it overlaps, counted
 * it (nhc_ba_admit) and wait for one write fewer.  Does one of them wait for none now? */
static bool nhc_ba_write_ended(NhcCtrl *n, NhcReq *req)
{
    bool free = false;

    for (guint i = 0; i < n->bar1.ops->len; i++) {
        NhcReq *pin = g_ptr_array_index(n->bar1.ops, i);
        uint64_t off, slba, nlb;

        if (pin->cmd.opcode != NHC_ADM_BA_PIN || !pin->ba_blockers || pin->seq < req->seq) {
            continue;
        }
        nhc_ba_pin_args(pin, &off, &slba, &nlb);
        if (nhc_lbas_overlap(slba, nlb, req->lba_lo, req->lba_hi - req->lba_lo)) {
            free |= --pin->ba_blockers == 0;
        }
    }
    return free;
}

/* @req has ended (completed or aborted): a BA command leaves the list, and what waited for it
 * (a command of its entry, a BA_PIN waiting for its writes) may start.  Other requests end
 * without a pass over the list unless they free a waiting pin. */
static void nhc_ba_req_ended(NhcCtrl *n, NhcReq *req)
{
    if (g_ptr_array_remove(n->bar1.ops, req) || (req->lba_hi && nhc_ba_write_ended(n, req))) {
        nhc_ba_kick(n);
    }
}

static uint16_t nhc_ba_admit(NhcCtrl *n, NhcReq *req)
{
    uint64_t off, slba, nlb;

    trace_nhc_ba_admit(req->cmd.opcode, nhc_ba_eid(req));
    if (req->cmd.opcode == NHC_ADM_BA_PIN) {
        /* Writes to its LBAs admitted from now on are refused; these are the ones it waits for. */
        nhc_ba_pin_args(req, &off, &slba, &nlb);
        req->ba_blockers = nhc_count_writes_in_flight(n, slba, nlb);
    }
    g_ptr_array_add(n->bar1.ops, req);
    req->ba_waiting = true;
    req->pending = 1;
    nhc_ba_kick(n);
    return NHC_ASYNC;
}

/* A BA_PIN admitted but not finished holds its entry, window range and LBAs like a pin. */
static uint16_t nhc_ba_check_pending_pins(NhcCtrl *n, uint32_t eid, uint64_t off,
                                          uint64_t slba, uint64_t nlb)
{
    for (guint i = 0; i < n->bar1.ops->len; i++) {
        NhcReq *other = g_ptr_array_index(n->bar1.ops, i);
        uint64_t ooff, oslba, onlb;

        if (other->cmd.opcode != NHC_ADM_BA_PIN) {
            continue;
        }
        if (nhc_ba_eid(other) == eid) {
            return NHC_ERR(NHC_SC_BA_ENTRY_PINNED);
        }
        nhc_ba_pin_args(other, &ooff, &oslba, &onlb);
        if (nhc_lbas_overlap(off, nlb * n->lba_size, ooff, onlb * n->lba_size) ||
            nhc_lbas_overlap(slba, nlb, oslba, onlb)) {
            return NHC_ERR(NHC_SC_BA_OVERLAP);
        }
    }
    return NVME_SUCCESS;
}

/* ------------------------------------------------------------------------------ commands */

uint16_t nhc_admin_ba_pin(NhcCtrl *n, NhcReq *req)
{
    uint32_t eid = nhc_ba_eid(req);
    uint64_t off, slba, nlb;
    uint16_t status;

    nhc_ba_pin_args(req, &off, &slba, &nlb);
    status = nhc_ba_status(nh_ba_check_pin(n->bar1.ba, eid, off, slba, nlb));
    if (!status) {
        status = nhc_ba_check_pending_pins(n, eid, off, slba, nlb);
    }
    return status ? status : nhc_ba_admit(n, req);
}

/* BA_SYNC and BA_FLUSH: the window's bytes to the LBAs (BA_FLUSH then releases the entry,
 * nhc_ba_move_cb). */
uint16_t nhc_admin_ba_sync(NhcCtrl *n, NhcReq *req)
{
    uint16_t status = nhc_ba_status(nh_ba_check_entry(n->bar1.ba, nhc_ba_eid(req)));

    return status ? status : nhc_ba_admit(n, req);
}

uint64_t nhc_ba_entry_info_len(NhcCtrl *n, NhcReq *req)
{
    return sizeof(NhBaEntryInfo);
}

uint16_t nhc_admin_ba_get_entry_info(NhcCtrl *n, NhcReq *req)
{
    uint32_t eid = nhc_ba_eid(req);
    const NhBa *ba = n->bar1.ba;
    NhBaEntryInfo info;
    NhBaEntry e;

    if (eid >= ba->entries) {
        return NHC_ERR(NHC_SC_BA_INVALID_ENTRY);
    }
    e = nh_ba_entry(ba, eid);
    info = (NhBaEntryInfo) {
        .eid = cpu_to_le16(eid), .state = e.state, .restore = ba->restore,
        .entries = cpu_to_le32(ba->entries), .offset = cpu_to_le64(e.offset),
        .slba = cpu_to_le64(e.slba), .nlb = cpu_to_le64(e.nlb),
        .length = cpu_to_le64(e.nlb << n->lba_shift), .window_size = cpu_to_le64(ba->size),
        .lba_size = cpu_to_le32(n->lba_size), .dumps = cpu_to_le32(nh_ba_dumps(ba)),
        .dump_ns = cpu_to_le64(n->bar1.dump_ns),
    };
    return nhc_dma_to_host(n, &info, sizeof(info), &req->cmd);
}

/* BA_READ_DMA: a pinned entry, and a length the dispatch then holds to MDTS. */
uint16_t nhc_ba_read_dma_check(NhcCtrl *n, NhcReq *req)
{
    uint16_t status = nhc_ba_status(nh_ba_check_entry(n->bar1.ba, nhc_ba_eid(req)));

    if (!status && !le32_to_cpu(req->cmd.cdw12)) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    return status;
}

uint64_t nhc_ba_read_dma_len(NhcCtrl *n, NhcReq *req)
{
    return le32_to_cpu(req->cmd.cdw12);
}

uint16_t nhc_admin_ba_read_dma(NhcCtrl *n, NhcReq *req)
{
    uint64_t off = le32_to_cpu(req->cmd.cdw11);
    uint64_t len = le32_to_cpu(req->cmd.cdw12);
    NhBaEntry e = nh_ba_entry(n->bar1.ba, nhc_ba_eid(req));

    if (off > e.nlb << n->lba_shift || len > (e.nlb << n->lba_shift) - off) {
        return NHC_ERR(NHC_SC_BA_WINDOW_RANGE);
    }
    return nhc_dma_to_host(n, n->bar1.ba->window + e.offset + off, len, &req->cmd);
}

/* Is a BA_PIN admitted and not finished for LBAs overlapping [slba, slba + nlb)? */
static bool nhc_ba_pin_pending(NhcCtrl *n, uint64_t slba, uint64_t nlb)
{
    for (guint i = 0; i < n->bar1.ops->len; i++) {
        NhcReq *pin = g_ptr_array_index(n->bar1.ops, i);
        uint64_t off, pslba, pnlb;

        if (pin->cmd.opcode == NHC_ADM_BA_PIN) {
            nhc_ba_pin_args(pin, &off, &pslba, &pnlb);
            if (nhc_lbas_overlap(slba, nlb, pslba, pnlb)) {
                return true;
            }
        }
    }
    return false;
}

/* Does @qsg (a Read's data pointer) reach into the window?  Then the Read goes through a
 * buffer, like a pin's load (io-cmd.c). */
bool nhc_ba_dma_hits_window(NhcCtrl *n, QEMUSGList *qsg)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(n));

    if (!n->bar1.ba) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    for (int i = 0; i < qsg->nsg; i++) {
        dma_addr_t addr = qsg->sg[i].base, len = qsg->sg[i].len;

        while (len) {
            hwaddr xlat, plen = len;
            MemoryRegion *mr = address_space_translate(as, addr, &xlat, &plen, true,
                                                       MEMTXATTRS_UNSPECIFIED);
            if (mr == &n->bar1.ram) {
                return true;
            }
            if (!plen) {
                break;
            }
            plen = MIN(plen, len);
            addr += plen;
            len -= plen;
        }
    }
    return false;
}

/* Block-path writes (Write, Write Zeroes, Deallocate) to pinned LBAs are refused: the window
 * owns those LBAs until BA_FLUSH releases them, and a silent overwrite would be lost at the
 * next BA_SYNC. */
static uint16_t nhc_ba_check_write(NhcCtrl *n, uint64_t slba, uint64_t nlb)
{
    if (nh_ba_lbas_pinned(n->bar1.ba, slba, nlb)) {
        return NHC_ERR(NVME_ACCESS_DENIED);
    }
    return nhc_ba_pin_pending(n, slba, nlb) ? NHC_ERR(NVME_ACCESS_DENIED) : NVME_SUCCESS;
}

/* ------------------------------------------------------------------------------ power loss */

/* The capacitors save the window (a power cut, or QEMU exiting). */
void nhc_ba_power_loss(NhcCtrl *n)
{
    trace_nhc_ba_power_loss(n->bar1.ba != NULL);
    if (n->bar1.ba) {
        nh_ba_dump(n->bar1.ba, n->bar1.dump_ns);
    }
}

static void nhc_ba_exit_notify(Notifier *notifier, void *data)
{
    nhc_ba_power_loss(container_of(notifier, NhcCtrl, bar1.exit_notifier));
}

/* ------------------------------------------------------------------------------ realize */

bool nhc_ba_realize(NhcCtrl *n, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    g_autofree char *path = NULL;

    if (!n->bar1.size) {
        return true;
    }
    if (!is_power_of_2(n->bar1.size) || n->bar1.size < NH_BA_MIN_SIZE ||
        n->bar1.size > NH_BA_MAX_SIZE) {
        error_setg(errp, "ba-size: must be 0 (no window) or a power of two from 4K to 1G, "
                   "got %" PRIu64, n->bar1.size);
        return false;
    }
    if (n->bar1.entries < 1 || n->bar1.entries > NH_BA_MAX_ENTRIES) {
        error_setg(errp, "ba-entries: must be between 1 and %zu, got %u",
                   (size_t)NH_BA_MAX_ENTRIES, n->bar1.entries);
        return false;
    }
    if (!nhc_ba_persist_check(n, errp)) {
        return false;
    }
    if (!nh_ba_check_energy(n->bar1.size, nh_engine_config(n->engine), n->bar1.cap_uf,
                            n->bar1.cap_volt, &n->bar1.dump_ns, &gerr)) {
        error_setg(errp, "%s", gerr->message);
        return false;
    }
    path = nhc_file_property(n, n->bar1.file, ".nh-ba");
    n->bar1.ba = nh_ba_open(path, n->bar1.size, n->bar1.entries, n->lba_size, n->nsze, &gerr);
    if (!n->bar1.ba) {
        error_setg(errp, "%s", gerr->message);
        return false;
    }
    if (n->bar1.ba->restore_why) {
        warn_report("nvme-hybrid: BA window in %s not restored: %s", path,
                    n->bar1.ba->restore_why);
    }

    memory_region_init(&n->bar1.bar, OBJECT(n), "nvme-hybrid-bar1", n->bar1.size);
    memory_region_init_ram_ptr(&n->bar1.ram, OBJECT(n), "nvme-hybrid-ba-window", n->bar1.size,
                               n->bar1.ba->window);
    memory_region_add_subregion(&n->bar1.bar, 0, &n->bar1.ram);
    memory_region_set_enabled(&n->bar1.ram, false);   /* until PMRCTL.EN */
    pci_register_bar(PCI_DEVICE(n), 1, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH, &n->bar1.bar);
    NVME_CAP_SET_PMRS(n->cap, 1);
    nhc_ba_persist_init(n);

    n->bar1.ops = g_ptr_array_new();
    n->write_hooks.admit = nhc_ba_check_write;
    n->write_hooks.ended = nhc_ba_req_ended;
    n->bar1.exit_notifier.notify = nhc_ba_exit_notify;
    qemu_add_exit_notifier(&n->bar1.exit_notifier);
    return true;
}

/* After the SMART counters are loaded: a discarded save is an error the host can read in
 * the Error Information log (and PMRSTS.HSTS says Restore Error). */
void nhc_ba_report_restore(NhcCtrl *n)
{
    /* not tied to a command: the saved window could not be read back intact */
    if (nhc_ba_restore_failed(n)) {
        nhc_error_log_push(n, 0xffff, 0xffff, NHC_STATUS(NVME_UNRECOVERED_READ), 0, 0);
    }
}

void nhc_ba_exit(NhcCtrl *n)
{
    if (!n->bar1.ba) {
        return;
    }
    nhc_ba_power_loss(n);
    qemu_remove_exit_notifier(&n->bar1.exit_notifier);
    nhc_ba_persist_exit(n);
    nh_ba_close(n->bar1.ba);
    n->bar1.ba = NULL;
    g_clear_pointer(&n->bar1.ops, g_ptr_array_unref);
    n->write_hooks.admit = NULL;
    n->write_hooks.ended = NULL;
}
