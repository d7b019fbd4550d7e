/*
 * undo.c - what a power cut falls back to, attached to the write path's hooks (io-cmd.c).
 *
 * A real drive whose volatile buffer loses an overwrite still returns the older version of
 * those LBAs, the one on flash; the emulator writes through, so the older bytes are kept here:
 * before a write that the volatile buffer may hold (not FUA) overwrites LBAs, their current
 * bytes are kept, once per LBA from the first such write after a Flush until the next Flush,
 * when the buffer has nothing dirty left.  A FUA write, BA_SYNC/BA_FLUSH, Write Zeroes and
 * deallocation drop the LBAs they write (what they leave is durable, or zeroes).  LBAs that
 * map to no flash page hold zeroes and cost no read.  Kept bytes are capped at NHC_UNDO_MAX
 * until the next Flush; beyond it lost LBAs keep the new bytes (also what the specification
 * allows for a write not flushed), never zeroes.
 *
 * A write over mapped LBAs is modeled first (the engine's buffer holds it from then on) and
 * reads the old bytes afterwards, asynchronously.  In between, its LBAs are kept as
 * NHC_UNDO_IN_BACKEND: the backend still holds their old bytes, since the new ones are written
 * only once those are kept, so a power cut there leaves them alone (it must not zero them).
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/cutils.h"
#include "qemu/units.h"
#include "system/block-backend.h"

#include "nvme-hybrid.h"
#include "trace.h"

#define NHC_UNDO_MAX (64 * MiB)

/* What a write keeps (NhcReq.undo), decided before the engine models it. */
enum { NHC_UNDO_NOTHING, NHC_UNDO_ZEROES, NHC_UNDO_READ };

struct NhcUndo {
    GHashTable *lbas;           /* LBA -> its bytes before the first write since the Flush */
    uint64_t    epoch;          /* Flushes so far: a capture older than the last is stale */
    uint64_t    bytes;
    bool        full;           /* capped since the last Flush: LBAs not kept stay new */
};

static uint8_t nhc_undo_in_backend_mark;
#define NHC_UNDO_IN_BACKEND ((gpointer)&nhc_undo_in_backend_mark)

static void nhc_undo_free_bytes(gpointer old)
{
    if (old != NHC_UNDO_IN_BACKEND) {
        g_free(old);
    }
}

/* Should a write of [off, off + len) that is not FUA keep the old bytes, and do they need a
 * read (*old_data: some page of the range is mapped)?  Asked before the engine models it. */
static bool nhc_undo_wanted(NhcCtrl *n, uint64_t off, uint64_t len, bool *old_data)
{
    uint64_t page = nh_config_unit(nh_engine_config(n->engine));

    if (!nh_engine_volatile_write_cache(n->engine)) {
        return false;
    }
    *old_data = false;
    for (uint64_t o = off - off % page; o < off + len && !*old_data; o += page) {
        *old_data = nh_engine_is_mapped(n->engine, o);
    }
    return true;
}

/* The bytes to keep for LBA @i of a range whose old bytes are @old. */
static gpointer nhc_undo_copy(NhcCtrl *n, const uint8_t *old, uint64_t i)
{
    const uint8_t *p;

    if (old == NHC_UNDO_IN_BACKEND) {
        return NHC_UNDO_IN_BACKEND;
    }
    p = old ? old + (i << n->lba_shift) : NULL;
    return p && !buffer_is_zero(p, n->lba_size) ? g_memdup2(p, n->lba_size) : NULL;
}

/* Keep @old (the LBAs' bytes before the write; NULL: zeroes; NHC_UNDO_IN_BACKEND: still in the
 * backend, to be read) for the LBAs not kept yet, or kept as still in the backend, unless a
 * Flush came since the write was modeled (@epoch). */
static void nhc_undo_keep(NhcCtrl *n, uint64_t epoch, uint64_t lba, uint64_t nlb,
                          const uint8_t *old)
{
    NhcUndo *u = n->undo;

    if (epoch != u->epoch) {
        return;
    }
    if (old != NHC_UNDO_IN_BACKEND) {
        nhc_event(n, NHC_EV_UNDO_KEPT);
    }
    for (uint64_t i = 0; i < nlb; i++) {
        uint64_t key = lba + i;
        gpointer had;

        if (g_hash_table_lookup_extended(u->lbas, &key, NULL, &had)) {
            if (had == NHC_UNDO_IN_BACKEND && old != NHC_UNDO_IN_BACKEND) {
                g_hash_table_insert(u->lbas, g_memdup2(&key, sizeof(key)),
                                    nhc_undo_copy(n, old, i));
            }
            continue;
        }
        if (u->bytes >= NHC_UNDO_MAX) {
            u->full = true;
            return;
        }
        g_hash_table_insert(u->lbas, g_memdup2(&key, sizeof(key)), nhc_undo_copy(n, old, i));
        u->bytes += n->lba_size;
    }
}

static gboolean nhc_undo_in_range(gpointer key, gpointer value, gpointer range)
{
    uint64_t l = *(uint64_t *)key, *r = range;

    return l >= r[0] && l < r[1];
}

/* Hook durable: [lba, lba + nlb) is now durable (FUA) or zeroes, nothing older to fall back
 * to. */
static void nhc_undo_drop(NhcCtrl *n, uint64_t lba, uint64_t nlb)
{
    GHashTable *lbas = n->undo->lbas;
    uint64_t range[2] = { lba, lba + nlb };

    if (!g_hash_table_size(lbas)) {
        return;
    }
    if (nlb > g_hash_table_size(lbas)) {
        g_hash_table_foreach_remove(lbas, nhc_undo_in_range, range);
        return;
    }
    for (uint64_t l = lba; l < lba + nlb; l++) {
        g_hash_table_remove(lbas, &l);
    }
}

/* Hook flushed: the buffer was drained, every write so far is durable. */
static void nhc_undo_clear(NhcCtrl *n)
{
    NhcUndo *u = n->undo;

    u->epoch++;
    u->full = false;
    u->bytes = 0;
    g_hash_table_remove_all(u->lbas);
}

/* Hook buffered: a write the volatile buffer may hold is about to be modeled.  From the moment
 * the buffer holds it, a power cut must find the old bytes: LBAs with data stay in the backend
 * until nhc_undo_kept_cb has them. */
static void nhc_undo_buffered(NhcCtrl *n, NhcReq *req)
{
    uint64_t nlb = req->lba_hi - req->lba_lo;
    bool old_data;

    req->undo = NHC_UNDO_NOTHING;
    req->undo_epoch = n->undo->epoch;
    if (!nhc_undo_wanted(n, req->lba_lo << n->lba_shift, nlb << n->lba_shift, &old_data)) {
        return;
    }
    req->undo = old_data ? NHC_UNDO_READ : NHC_UNDO_ZEROES;
    if (old_data) {
        nhc_undo_keep(n, req->undo_epoch, req->lba_lo, nlb, NHC_UNDO_IN_BACKEND);
    }
}

/* The old bytes of a write's LBAs are in req->bounce: keep them, then write the new ones. */
static void nhc_undo_kept_cb(void *opaque, int ret)
{
    NhcReq *req = opaque;
    NhcCtrl *n = req->sq->n;
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
        nhc_io_write_backend(n, req, req->lba_lo << n->lba_shift, req->bounce_len, false);
    }
    nhc_guard_exit(n, was);
}

/* Hook issue: the write is modeled.  LBAs without data keep zeroes; LBAs with data are read
 * first, and nhc_undo_kept_cb writes the new bytes (true: the backend I/O is ours). */
static bool nhc_undo_issue(NhcCtrl *n, NhcReq *req)
{
    uint64_t off = req->lba_lo << n->lba_shift;
    uint64_t len = (req->lba_hi - req->lba_lo) << n->lba_shift;

    if (req->undo == NHC_UNDO_ZEROES) {
        nhc_undo_keep(n, req->undo_epoch, req->lba_lo, req->lba_hi - req->lba_lo, NULL);
    }
    if (req->undo != NHC_UNDO_READ) {
        return false;
    }
    req->bounce_len = len;
    req->bounce = g_malloc(len);
    qemu_iovec_init_buf(&req->iov, req->bounce, len);
    nhc_backend_rw(n, req, off, &req->iov, false, 0, nhc_undo_kept_cb);
    return true;
}

void nhc_undo_attach(NhcCtrl *n)
{
    NhcUndo *u = g_new0(NhcUndo, 1);

    u->lbas = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, nhc_undo_free_bytes);
    n->undo = u;
    n->write_hooks.buffered = nhc_undo_buffered;
    n->write_hooks.issue = nhc_undo_issue;
    n->write_hooks.durable = nhc_undo_drop;
    n->write_hooks.flushed = nhc_undo_clear;
}

void nhc_undo_free(NhcCtrl *n)
{
    if (n->undo) {
        g_hash_table_destroy(n->undo->lbas);
        g_clear_pointer(&n->undo, g_free);
    }
    n->write_hooks.buffered = NULL;
    n->write_hooks.issue = NULL;
    n->write_hooks.durable = NULL;
    n->write_hooks.flushed = NULL;
}

/* A lost buffered write: its sectors fall back to the bytes they held before it (kept above, or
 * still in the backend), zeroes when they held none (they are deallocated), or, past the cap,
 * the new bytes.  A sector reported lost that no write touched since the last Flush keeps its
 * flushed bytes: a volatile stage (stage-volatile) loses whole mapping units, a 512-byte write
 * staging all of its 4 KiB. */
static void nhc_undo_lost(void *opaque, uint64_t offset, uint64_t length)
{
    NhcCtrl *n = opaque;
    NhcUndo *u = n->undo;
    uint64_t end = offset + length;

    if (nhc_zns_lost(n, offset, length)) {
        return;     /* a zoned write: its zone's write pointer went back below it */
    }
    while (offset < end) {
        uint64_t lba = offset >> n->lba_shift;
        uint64_t next = MIN(end, (lba + 1) << n->lba_shift);
        gpointer old = NULL;
        bool kept = u && g_hash_table_lookup_extended(u->lbas, &lba, NULL, &old);
        int ret = 0;

        if (old == NHC_UNDO_IN_BACKEND) {
            /* the write that lost them never reached the backend: its old bytes are there */
        } else if (old) {
            ret = blk_pwrite(n->blkconf.blk, offset, next - offset,
                             (uint8_t *)old + (offset - (lba << n->lba_shift)), 0);
        } else if (kept || !u) {
            ret = blk_pwrite_zeroes(n->blkconf.blk, offset, next - offset, BDRV_REQ_MAY_UNMAP);
        }
        if (ret < 0) {
            warn_report("nvme-hybrid: power loss: cannot restore %" PRIu64 " bytes at %" PRIu64
                        ": %s", next - offset, offset, strerror(-ret));
        }
        offset = next;
    }
}

/* Power fails: what a volatile write buffer held dirty is gone, in the model and in the data. */
void nhc_undo_power_loss(NhcCtrl *n)
{
    if (n->engine) {
        nh_engine_power_loss(n->engine, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL), nhc_undo_lost, n);
        blk_flush(n->blkconf.blk);
    }
}
