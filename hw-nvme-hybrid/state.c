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

/*
 * @fn on every extent of [off, off + len) of the drive that holds data (not a hole, not
 * reads-as-zero): what the data really is, for a start that cannot trust the state file.
 */
void nhc_drive_extents(NhcCtrl *n, uint64_t off, uint64_t len, NhcExtentFn fn, void *opaque)
{
    BlockDriverState *bs = blk_bs(n->blkconf.blk);
    uint64_t end = off + len;
    int64_t pnum;

    while (bs && off < end) {
        int ret = bdrv_block_status_above(bs, NULL, off, end - off, &pnum, NULL, NULL);

        if (ret < 0 || pnum <= 0) {
            warn_report("nvme-hybrid: cannot read the allocation map at offset %" PRIu64
                        "; the rest of the drive is taken as unwritten", off);
            return;
        }
        if ((ret & BDRV_BLOCK_DATA) && !(ret & BDRV_BLOCK_ZERO)) {
            fn(n, off, pnum, opaque);
        }
        off += pnum;
    }
}

static void nhc_state_mark(NhcCtrl *n, uint64_t off, uint64_t len, void *opaque)
{
    nh_engine_mark_written(n->engine, off, len);
}

/* Everything NSID 1's bytes hold is taken as written once; the zones' write pointers follow
 * their data (zns.c). */
static void nhc_state_rebuild(NhcCtrl *n)
{
    nhc_drive_extents(n, 0, n->ns_bytes, nhc_state_mark, NULL);
    nhc_zns_rebuild(n);
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
}

void nhc_state_save(NhcCtrl *n)
{
    g_autoptr(GError) err = NULL;

    if (!n->state_path || !n->engine) {
        return;
    }
    nhc_state_account_power_on(n);
    nh_engine_finish(n->engine, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    nhc_write_flushed(n);           /* the engine has finished: nothing is buffered */
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
