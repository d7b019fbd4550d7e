/*
 * state.c - engine and SMART state across runs.
 *
 * The state lives next to the drive (`<image>.nh-state`, or the `state-file` property).  It is
 * written on a clean shutdown (CC.SHN, QEMU exit, device removal) marked clean, and marked dirty
 * in place as soon as the model changes after that, or right after it is loaded; while dirty it
 * is checkpointed (counters, wear, SMART; no mapping) once a second.  On start:
 *  - a clean image restores mapping, wear, counters and SMART;
 *  - a dirty image (QEMU was killed) restores wear, counters and SMART, counts an unsafe
 *    shutdown, and rebuilds the mapping from the drive's allocation map, which is what the data
 *    really is;
 *  - no image (a new or foreign drive) rebuilds the mapping from the allocation map too.
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/cutils.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "block/block.h"
#include "block/qapi.h"
#include "system/block-backend.h"

#include "nvme-hybrid.h"
#include "trace.h"

#define NHC_CHECKPOINT_MS 1000

static void nhc_state_checkpoint(void *opaque);

/* Everything the drive holds (not a hole, not reads-as-zero) is taken as written once. */
static void nhc_state_rebuild(NhcCtrl *n)
{
    BlockDriverState *bs = blk_bs(n->blkconf.blk);
    int64_t off = 0, pnum;

    while (bs && off < (int64_t)n->ns_bytes) {
        int ret = bdrv_block_status_above(bs, NULL, off, n->ns_bytes - off, &pnum, NULL, NULL);

        if (ret < 0 || pnum <= 0) {
            warn_report("nvme-hybrid: cannot read the allocation map at offset %" PRId64
                        "; the rest of the drive is taken as unwritten", off);
            return;
        }
        if ((ret & BDRV_BLOCK_DATA) && !(ret & BDRV_BLOCK_ZERO)) {
            nh_engine_mark_written(n->engine, off, pnum);
        }
        off += pnum;
    }
}

/*
 * The path a file property names: @prop itself ("none" or empty: no file), or by default the
 * drive's image file plus @suffix.  The image's name is the one query-block reports (the
 * block layer's public description of the drive), used only when it is a regular file.
 */
char *nhc_file_property(NhcCtrl *n, const char *prop, const char *suffix)
{
    BlockDriverState *bs = blk_bs(n->blkconf.blk);
    BlockDeviceInfo *info;
    char *path = NULL;

    if (prop) {
        return *prop && strcmp(prop, "none") ? g_strdup(prop) : NULL;
    }
    if (!bs) {
        return NULL;
    }
    GRAPH_RDLOCK_GUARD_MAINLOOP();
    info = bdrv_block_device_info(NULL, bs, true, NULL);
    if (info && g_file_test(info->file, G_FILE_TEST_IS_REGULAR)) {
        path = g_strdup_printf("%s%s", info->file, suffix);
    }
    qapi_free_BlockDeviceInfo(info);
    return path;
}

void nhc_state_open(NhcCtrl *n, Error **errp)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GBytes) fe = NULL;
    bool clean = false;

    n->powered_on_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    n->state_path = nhc_file_property(n, n->state_file, ".nh-state");
    if (n->state_path && g_file_test(n->state_path, G_FILE_TEST_EXISTS) &&
        !g_file_test(n->state_path, G_FILE_TEST_IS_REGULAR)) {
        /* a FIFO would block the start, and a save would replace what the user put there */
        error_setg(errp, "state-file: %s is not a regular file", n->state_path);
        return;
    }
    if (n->state_path && g_file_test(n->state_path, G_FILE_TEST_EXISTS)) {
        if (!nh_engine_load(n->engine, n->state_path, &fe, &clean, &err)) {
            warn_report("nvme-hybrid: state file %s unusable (%s); rebuilding the mapping "
                        "from the drive", n->state_path, err->message);
            clean = false;
        } else if (fe && g_bytes_get_size(fe) == sizeof(n->smart)) {
            memcpy(&n->smart, g_bytes_get_data(fe, NULL), sizeof(n->smart));
        }
        if (!clean) {
            n->smart.unsafe_shutdowns++;
            nhc_state_rebuild(n);
        }
    } else {
        nhc_state_rebuild(n);
    }
    n->smart.power_cycles++;

    if (n->state_path) {
        /* From now on the file must say "not clean" until the next clean save. */
        nhc_state_save(n);
        if (!n->state_clean) {
            if (n->state_file) {
                error_setg(errp, "state-file: cannot write %s", n->state_path);
                return;
            }
            warn_report("nvme-hybrid: state will not persist across runs");
            g_free(n->state_path);
            n->state_path = NULL;
            return;
        }
        nhc_state_touch(n);
        n->checkpoint_timer = timer_new_ms(QEMU_CLOCK_REALTIME, nhc_state_checkpoint, n);
        timer_mod(n->checkpoint_timer,
                  qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + NHC_CHECKPOINT_MS);
    }
}

/* Fold the time since the last save into the power-on counter. */
static void nhc_state_account_power_on(NhcCtrl *n)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

    n->smart.power_on_ns += now - n->powered_on_ns;
    n->powered_on_ns = now;
}

/*
 * Once a second (host time) while running dirty, checkpoint counters, wear and SMART into the
 * state file, so that after QEMU is killed the lifetime counters are at most a second old
 * instead of rolling back to the last clean save.
 */
static void nhc_state_checkpoint(void *opaque)
{
    NhcCtrl *n = opaque;
    g_autoptr(GError) err = NULL;

    if (n->state_changed && !n->state_clean) {
        trace_nhc_state_checkpoint(n->state_path);
        nhc_state_account_power_on(n);
        if (!nh_engine_checkpoint(n->engine, n->state_path, &n->smart, sizeof(n->smart),
                                  &err)) {
            warn_report_once("nvme-hybrid: cannot checkpoint %s: %s", n->state_path,
                             err->message);
        }
        n->state_changed = false;
    }
    timer_mod(n->checkpoint_timer,
              qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + NHC_CHECKPOINT_MS);
}

void nhc_state_close(NhcCtrl *n)
{
    nhc_state_save(n);
    if (n->checkpoint_timer) {
        timer_free(n->checkpoint_timer);
        n->checkpoint_timer = NULL;
    }
    g_free(n->state_path);
    n->state_path = NULL;
    g_clear_pointer(&n->undo, g_hash_table_destroy);
}

void nhc_state_save(NhcCtrl *n)
{
    g_autoptr(GError) err = NULL;

    if (!n->state_path || !n->engine) {
        return;
    }
    nhc_state_account_power_on(n);
    nh_engine_finish(n->engine, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    nhc_undo_clear(n);
    trace_nhc_state_save(n->state_path);
    if (!nh_engine_save(n->engine, n->state_path, &n->smart, sizeof(n->smart), &err)) {
        trace_nhc_err_state(n->state_path, err->message);
        warn_report("nvme-hybrid: cannot save state to %s: %s", n->state_path, err->message);
        return;
    }
    n->state_clean = true;
}

void nhc_state_touch(NhcCtrl *n)
{
    g_autoptr(GError) err = NULL;

    if (!n->state_clean) {
        return;
    }
    if (!nh_engine_state_mark_dirty(n->state_path, &err)) {
        warn_report("nvme-hybrid: cannot mark %s in use: %s", n->state_path, err->message);
        return;
    }
    n->state_clean = false;
}

/*
 * What a power cut falls back to.  A real drive whose volatile buffer loses an overwrite still
 * returns the older version of those LBAs, the one on flash; the emulator writes through, so
 * the older bytes are kept here: before a write that the volatile buffer may hold (not FUA)
 * overwrites LBAs, their current bytes are kept (io-cmd.c), once per LBA from the first such
 * write after a Flush until the next Flush, when the buffer has nothing dirty left.  A FUA
 * write, BA_SYNC/BA_FLUSH, Write Zeroes and deallocation drop the LBAs they write (what they
 * leave is durable, or zeroes).  LBAs that map to no flash page hold zeroes and cost no read.
 * Kept bytes are capped at NHC_UNDO_MAX until the next Flush; beyond it lost LBAs keep the new
 * bytes (also what the specification allows for a write not flushed), never zeroes.
 *
 * A write over mapped LBAs is modeled first (the engine's buffer holds it from then on) and
 * reads the old bytes afterwards, asynchronously.  In between, its LBAs are kept as
 * NHC_UNDO_IN_BACKEND: the backend still holds their old bytes, since the new ones are written
 * only once those are kept, so a power cut there leaves them alone (it must not zero them).
 */
#define NHC_UNDO_MAX (64 * MiB)

static uint8_t nhc_undo_in_backend_mark;
#define NHC_UNDO_IN_BACKEND ((gpointer)&nhc_undo_in_backend_mark)

static void nhc_undo_free(gpointer old)
{
    if (old != NHC_UNDO_IN_BACKEND) {
        g_free(old);
    }
}

/* Should a write of [off, off + len) that is not FUA keep the old bytes, and do they need a
 * read (*old_data: some page of the range is mapped)?  Called before the engine models it. */
bool nhc_undo_wanted(NhcCtrl *n, uint64_t off, uint64_t len, bool *old_data)
{
    uint64_t page = nh_engine_config(n->engine)->page_size;

    if (!nh_engine_volatile_write_cache(n->engine)) {
        return false;
    }
    *old_data = false;
    for (uint64_t o = off - off % page; o < off + len && !*old_data; o += page) {
        *old_data = nh_engine_is_mapped(n->engine, o);
    }
    return true;
}

/* Keep @old (the LBAs' bytes before the write; NULL: zeroes; NHC_UNDO_IN_BACKEND: still in the
 * backend, to be read) for the LBAs not kept yet, or kept as still in the backend, unless a
 * Flush came since the write was modeled (@epoch). */
void nhc_undo_keep(NhcCtrl *n, uint64_t epoch, uint64_t lba, uint64_t nlb, const uint8_t *old)
{
    if (epoch != n->undo_epoch) {
        return;
    }
    if (old != NHC_UNDO_IN_BACKEND) {
        nhc_event(n, NHC_EV_UNDO_KEPT);
    }
    if (!n->undo) {
        n->undo = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, nhc_undo_free);
    }
    for (uint64_t i = 0; i < nlb; i++) {
        uint64_t key = lba + i;
        const uint8_t *p = old == NHC_UNDO_IN_BACKEND ? old :
                           old ? old + (i << n->lba_shift) : NULL;
        gpointer had;

        if (g_hash_table_lookup_extended(n->undo, &key, NULL, &had)) {
            if (had == NHC_UNDO_IN_BACKEND && p != NHC_UNDO_IN_BACKEND) {
                g_hash_table_insert(n->undo, g_memdup2(&key, sizeof(key)),
                                    p && !buffer_is_zero(p, n->lba_size) ?
                                    g_memdup2(p, n->lba_size) : NULL);
            }
            continue;
        }
        if (n->undo_bytes >= NHC_UNDO_MAX) {
            n->undo_full = true;
            return;
        }
        if (p && p != NHC_UNDO_IN_BACKEND && buffer_is_zero(p, n->lba_size)) {
            p = NULL;
        }
        g_hash_table_insert(n->undo, g_memdup2(&key, sizeof(key)),
                            p == NHC_UNDO_IN_BACKEND ? NHC_UNDO_IN_BACKEND :
                            p ? g_memdup2(p, n->lba_size) : NULL);
        n->undo_bytes += n->lba_size;
    }
}

/* A write about to be modeled will read its LBAs' old bytes and keep them (nhc_undo_keep):
 * until then they are in the backend. */
void nhc_undo_pending(NhcCtrl *n, uint64_t lba, uint64_t nlb)
{
    nhc_undo_keep(n, n->undo_epoch, lba, nlb, NHC_UNDO_IN_BACKEND);
}

static gboolean nhc_undo_in_range(gpointer key, gpointer value, gpointer range)
{
    uint64_t l = *(uint64_t *)key, *r = range;

    return l >= r[0] && l < r[1];
}

/* [lba, lba + nlb) is now durable (FUA) or zeroes: nothing older to fall back to. */
void nhc_undo_drop(NhcCtrl *n, uint64_t lba, uint64_t nlb)
{
    uint64_t range[2] = { lba, lba + nlb };

    if (!n->undo || !g_hash_table_size(n->undo)) {
        return;
    }
    if (nlb > g_hash_table_size(n->undo)) {
        g_hash_table_foreach_remove(n->undo, nhc_undo_in_range, range);
        return;
    }
    for (uint64_t l = lba; l < lba + nlb; l++) {
        g_hash_table_remove(n->undo, &l);
    }
}

/* A Flush drained the buffer: every write so far is durable. */
void nhc_undo_clear(NhcCtrl *n)
{
    n->undo_epoch++;
    n->undo_full = false;
    n->undo_bytes = 0;
    if (n->undo) {
        g_hash_table_remove_all(n->undo);
    }
}

/* A lost buffered write: its sectors fall back to the bytes they held before it (kept above, or
 * still in the backend), zeroes when they held none (they are deallocated), or, past the cap,
 * the new bytes. */
static void nhc_state_lost(void *opaque, uint64_t offset, uint64_t length)
{
    NhcCtrl *n = opaque;
    uint64_t end = offset + length;

    while (offset < end) {
        uint64_t lba = offset >> n->lba_shift;
        uint64_t next = MIN(end, (lba + 1) << n->lba_shift);
        gpointer old = NULL;
        bool kept = n->undo && g_hash_table_lookup_extended(n->undo, &lba, NULL, &old);
        int ret = 0;

        if (old == NHC_UNDO_IN_BACKEND) {
            /* the write that lost them never reached the backend: its old bytes are there */
        } else if (old) {
            ret = blk_pwrite(n->blkconf.blk, offset, next - offset,
                             (uint8_t *)old + (offset - (lba << n->lba_shift)), 0);
        } else if (kept || !n->undo_full) {
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
void nhc_state_power_loss(NhcCtrl *n)
{
    if (n->engine) {
        nh_engine_power_loss(n->engine, nhc_state_lost, n);
        blk_flush(n->blkconf.blk);
    }
}
