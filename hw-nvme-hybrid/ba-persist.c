/*
 * ba-persist.c - what a persist through the BAR1 window costs on PCIe, in virtual time.
 *
 * The window is guest RAM (bar-pm.c), so guest stores reach it at once and for free; a real
 * 2B-SSD sits behind a PCIe link.  There the window's write-combining stores travel as posted
 * writes at the link's bandwidth, and the persist barrier, a non-posted read of PMRSTS, cannot
 * pass them and completes a round trip after the last of them has arrived.  The device models
 * that on the barrier read:
 *
 *   bytes  = 64 x (window lines whose content changed since the last PMRSTS read)
 *   start  = max(now, link_free)
 *   link_free = start + bytes x 1000 / ba-write-mbps      (ns; 0 MB/s: writes cost nothing)
 *   ready  = link_free + ba-rtt-ns
 *
 * and PMRSTS.PPND (bit 31, vendor specific) reads 1 until the virtual clock reaches `ready`;
 * libba polls it after its fence.  A read that finds no new bytes starts nothing.  The device
 * never waits: each read compares the clock with `ready`.
 *
 * The changed lines are found without trapping stores: dirty logging on the window tells which
 * pages were written, and a shadow copy tells which 64-byte lines of them changed (a WC buffer
 * is one line).  Device-side writes to the window (a BA_PIN's load) update the shadow so they
 * are not counted.  docs/bar-pm.md describes the model for users.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "exec/memory.h"
#include "exec/ram_addr.h"
#include "system/tcg.h"

#include "nvme-hybrid.h"
#include "trace.h"
#include "ba-manager.h"

#define NHC_BA_LINE             64u
#define NHC_BA_CHUNK_PAGES      64u         /* dirty bits looked at in one go */
#define NHC_BA_MAX_RTT_NS       1000000u    /* 1 ms: no PCIe read takes longer */
#define NHC_BA_MAX_WRITE_MBPS   1000000u    /* 1 TB/s: beyond any PCIe link */

bool nhc_ba_persist_check(NhcCtrl *n, Error **errp)
{
    if (n->bar1.rtt_ns > NHC_BA_MAX_RTT_NS) {
        trace_nhc_err_ba_persist_prop("ba-rtt-ns", n->bar1.rtt_ns);
        error_setg(errp, "ba-rtt-ns: the persist barrier's round trip must be 0 (free) to %u "
                   "ns, got %u", NHC_BA_MAX_RTT_NS, n->bar1.rtt_ns);
        return false;
    }
    if (n->bar1.write_mbps > NHC_BA_MAX_WRITE_MBPS) {
        trace_nhc_err_ba_persist_prop("ba-write-mbps", n->bar1.write_mbps);
        error_setg(errp, "ba-write-mbps: the window's posted-write bandwidth must be 0 (free) "
                   "to %u MB/s, got %u", NHC_BA_MAX_WRITE_MBPS, n->bar1.write_mbps);
        return false;
    }
    return true;
}

static bool nhc_ba_persist_modeled(NhcCtrl *n)
{
    return n->bar1.rtt_ns || n->bar1.write_mbps;
}

/* After the window's RAM region exists: start watching it (nothing to do when persists are
 * free). */
void nhc_ba_persist_init(NhcCtrl *n)
{
    if (!nhc_ba_persist_modeled(n)) {
        return;
    }
    n->bar1.shadow = g_memdup2(n->bar1.ba->window, n->bar1.size);
    n->bar1.link_free_ns = n->bar1.ready_ns = 0;
    memory_region_set_log(&n->bar1.ram, true, DIRTY_MEMORY_VGA);
}

void nhc_ba_persist_exit(NhcCtrl *n)
{
    if (n->bar1.shadow) {
        memory_region_set_log(&n->bar1.ram, false, DIRTY_MEMORY_VGA);
        g_clear_pointer(&n->bar1.shadow, g_free);
    }
}

/* The device itself wrote window bytes [off, off + len): not the host's posted writes. */
void nhc_ba_persist_device_wrote(NhcCtrl *n, uint64_t off, uint64_t len)
{
    if (n->bar1.shadow) {
        memcpy(n->bar1.shadow + off, n->bar1.ba->window + off, len);
    }
}

/* Bytes of the 64-byte lines of page [off, off + len) that differ from the shadow, which
 * then holds them. */
static uint64_t nhc_ba_changed_bytes(NhcCtrl *n, uint64_t off, uint64_t len)
{
    uint64_t bytes = 0;

    for (uint64_t l = off; l < off + len; l += NHC_BA_LINE) {
        if (memcmp(n->bar1.ba->window + l, n->bar1.shadow + l, NHC_BA_LINE)) {
            memcpy(n->bar1.shadow + l, n->bar1.ba->window + l, NHC_BA_LINE);
            bytes += NHC_BA_LINE;
        }
    }
    return bytes;
}

/*
 * Bytes the host has written to the window since the last call.  Clearing the dirty bits
 * costs a walk of every vCPU's TLB, so it is done only when a page is dirty (not for the
 * polling reads of a pending persist); the snapshot is then read a chunk of pages at a time.
 *
 * Runs inside a vCPU's register read, so it must not let go of the BQL: the memory API's
 * memory_region_snapshot_and_clear_dirty() ends with a dirty-log "after sync" that, under
 * TCG, waits for every other vCPU to leave its translation block (run_on_cpu) with the BQL
 * released.  Meanwhile this read still holds the device's reentrancy guard, so the other
 * vCPUs' register accesses, doorbells among them, were refused and their commands lost.  The
 * physical-memory snapshot below clears the bits and the vCPUs' TLB write flags without
 * waiting.  What that wait bought is not needed here: a store racing with this read on
 * another vCPU is not ordered before the barrier anyway, and its line still differs from the
 * shadow, so it is counted when its page is next written.
 */
static uint64_t nhc_ba_new_bytes(NhcCtrl *n)
{
    uint64_t chunk = NHC_BA_CHUNK_PAGES * TARGET_PAGE_SIZE, bytes = 0;
    DirtyBitmapSnapshot *snap;

    if (!tcg_enabled()) {
        /* KVM keeps the bits in the kernel until they are synced; TCG sets them itself. */
        memory_global_dirty_log_sync(false);
    }
    if (!cpu_physical_memory_get_dirty(memory_region_get_ram_addr(&n->bar1.ram), n->bar1.size,
                                       DIRTY_MEMORY_VGA)) {
        return 0;
    }
    snap = cpu_physical_memory_snapshot_and_clear_dirty(&n->bar1.ram, 0, n->bar1.size,
                                                        DIRTY_MEMORY_VGA);
    for (uint64_t c = 0; c < n->bar1.size; c += chunk) {
        if (!memory_region_snapshot_get_dirty(&n->bar1.ram, snap, c,
                                              MIN(chunk, n->bar1.size - c))) {
            continue;
        }
        for (uint64_t off = c; off < MIN(c + chunk, n->bar1.size); off += TARGET_PAGE_SIZE) {
            if (memory_region_snapshot_get_dirty(&n->bar1.ram, snap, off, TARGET_PAGE_SIZE)) {
                bytes += nhc_ba_changed_bytes(n, off, TARGET_PAGE_SIZE);
            }
        }
    }
    g_free(snap);
    return bytes;
}

/* PMRSWTP: the modeled sustained write throughput, in KiB/s or, above 16 GiB/s, MiB/s (0: not
 * modeled). */
uint32_t nhc_ba_persist_swtp(NhcCtrl *n)
{
    uint64_t kib = (uint64_t)n->bar1.write_mbps * 1000000 / KiB;
    uint32_t v = 0;

    if (!kib) {
        return 0;
    }
    if (kib <= PMRSWTP_PMRSWTV_MASK) {
        NVME_PMRSWTP_SET_PMRSWTU(v, 1);
        NVME_PMRSWTP_SET_PMRSWTV(v, kib);
    } else {
        NVME_PMRSWTP_SET_PMRSWTU(v, 2);
        NVME_PMRSWTP_SET_PMRSWTV(v, kib / KiB);
    }
    return v;
}

/* A read of PMRSTS: the barrier.  Returns PMRSTS.PPND: 1 while the modeled persist of every
 * window write before this read has not completed. */
uint32_t nhc_ba_persist_pending(NhcCtrl *n)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t bytes;
    int64_t start;

    if (!n->bar1.shadow) {
        return 0;
    }
    bytes = nhc_ba_new_bytes(n);
    if (bytes) {
        start = MAX(now, n->bar1.link_free_ns);
        n->bar1.link_free_ns = start + (n->bar1.write_mbps ?
                                        DIV_ROUND_UP(bytes * 1000, n->bar1.write_mbps) : 0);
        n->bar1.ready_ns = n->bar1.link_free_ns + n->bar1.rtt_ns;
        trace_nhc_ba_persist(bytes, now, n->bar1.ready_ns);
    }
    return now < n->bar1.ready_ns;
}
