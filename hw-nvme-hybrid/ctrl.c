/*
 * ctrl.c - the nvme-hybrid PCI function: realize, removal and reset, the controller's enable,
 * reset (the one teardown path) and shutdown, the Error Information log, properties, the
 * `stats` and `x-check` QOM properties.  Queues are in queues.c, BAR0 in regs.c, power cuts in
 * powercut.c.
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "migration/vmstate.h"
#include "system/block-backend.h"
#include "system/cpus.h"
#include "system/runstate.h"
#include "system/system.h"

#include "nvme-hybrid.h"
#include "trace.h"

#define NHC_PCI_VENDOR  0x1b36  /* QEMU's vendor space; device id below is unofficial */
#define NHC_PCI_DEVICE  0x00e0

/* ------------------------------------------------------------------------------ errors */

uint16_t nhc_err_status(uint16_t status, const char *func, int line)
{
    trace_nhc_err_status(func, line, status);
    return status;
}

/* The newest entry of the Error Information log (SQID and CID FFFFh: no command). */
void nhc_error_log_push(NhcCtrl *n, uint16_t sqid, uint16_t cid, uint16_t status,
                        uint32_t nsid, uint64_t lba)
{
    NvmeErrorLog *e;

    n->smart.error_count++;
    memmove(&n->error_log[1], &n->error_log[0],
            sizeof(n->error_log) - sizeof(n->error_log[0]));
    e = &n->error_log[0];
    memset(e, 0, sizeof(*e));
    e->error_count = cpu_to_le64(n->smart.error_count);
    e->sqid = cpu_to_le16(sqid);
    e->cid = cpu_to_le16(cid);
    e->status_field = cpu_to_le16(status << 1);
    e->param_error_location = cpu_to_le16(0xffff);
    e->nsid = cpu_to_le32(nsid);
    e->lba = cpu_to_le64(lba);
    trace_nhc_error_log(sqid, cid, status);
}

void nhc_record_error(NhcCtrl *n, NhcReq *req)
{
    uint8_t op = req->cmd.opcode;
    uint64_t lba = 0;

    /* Aborts requested by the host are not errors of the device. */
    if ((req->status & 0x7ff) == NVME_CMD_ABORT_REQ ||
        (req->status & 0x7ff) == NVME_CMD_ABORT_SQ_DEL) {
        return;
    }
    if (req->sq->sqid && (op == NVME_CMD_READ || op == NVME_CMD_WRITE ||
                          op == NVME_CMD_COMPARE || op == NVME_CMD_WRITE_ZEROES)) {
        lba = le64_to_cpu(((NvmeRwCmd *)&req->cmd)->slba);
    }
    nhc_error_log_push(n, req->sq->sqid, le16_to_cpu(req->cmd.cid), req->status,
                       le32_to_cpu(req->cmd.nsid), lba);
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
void nhc_ctrl_reset(NhcCtrl *n)
{
    trace_nhc_ctrl_reset();
    /* An aborted command that ends may complete others (a BA_PIN that waited for it), whose
     * completions free admin slots: nothing may be fetched until every queue is gone. */
    nhc_fetch_hold(n);
    for (uint32_t i = n->num_queues; i-- > 0; ) {
        if (n->sq[i]) {
            nhc_delete_sq(n, i, NULL);
        }
    }
    /* Only now: an SQ freed during the walk above must not finish the reset early. */
    n->resetting = true;
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
    nhc_dir_reset(n);
    nhc_fdp_reset(n);
    pci_irq_deassert(PCI_DEVICE(n));
    if (QTAILQ_EMPTY(&n->dying_sqs)) {
        nhc_ctrl_reset_done(n);
    }
    nhc_fetch_release(n);
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

void nhc_ctrl_shutdown(NhcCtrl *n)
{
    trace_nhc_ctrl_shutdown();
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
               NVME_CC_CSS(n->cc) != NVME_CC_CSS_ADMIN_ONLY &&
               !(NVME_CC_CSS(n->cc) == NVME_CC_CSS_ALL && n->zns)) {
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
        NHC_GUEST_ERR(trace_nhc_err_ctrl_enable(why), "cannot enable: %s", why);
        n->csts |= NVME_CSTS_FAILED;
        return false;
    }
    trace_nhc_ctrl_enable(n->asq, n->acq, n->aqa);
    nhc_create_cq(n, 0, n->acq, acqs, 0, true);
    nhc_create_sq(n, 0, 0, n->asq, asqs);
    return true;
}

void nhc_ctrl_enable(NhcCtrl *n)
{
    n->csts &= ~(NVME_CSTS_FAILED | (CSTS_SHST_MASK << CSTS_SHST_SHIFT));
    if (nhc_ctrl_start(n)) {
        n->csts |= NVME_CSTS_READY;
    }
}

void nhc_ctrl_reset_done(NhcCtrl *n)
{
    trace_nhc_ctrl_reset_done();
    n->resetting = false;
    n->csts &= ~(NVME_CSTS_READY | NVME_CSTS_FAILED);
    /* A host that set CC.EN again without waiting for RDY = 0 gets its enable now. */
    if (NVME_CC_EN(n->cc)) {
        nhc_ctrl_enable(n);
    }
}

/* ------------------------------------------------------------------------------ realize */

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

static void nhc_exit_notify(Notifier *notifier, void *data)
{
    NhcCtrl *n = container_of(notifier, NhcCtrl, exit_notifier);

    nhc_state_save(n);
}

/* What realize set up (on a failed realize, as far as it got). */
static void nhc_free(NhcCtrl *n)
{
    nhc_ba_exit(n);
    g_clear_pointer(&n->fetch_bh, qemu_bh_delete);
    msix_uninit(PCI_DEVICE(n), &n->bar0, &n->bar0);
    g_clear_pointer(&n->sq, g_free);
    g_clear_pointer(&n->cq, g_free);
    g_clear_pointer(&n->features.vector_no_coalescing, g_free);
    g_clear_pointer(&n->vendor_log, g_byte_array_unref);
    g_clear_pointer(&n->dir, nhc_dir_free);
    g_clear_pointer(&n->fdp, nhc_fdp_free);
    nhc_zns_free(n);
    nhc_undo_free(n);
    g_clear_pointer(&n->engine, nh_engine_free);
}

/* A preset's value the other properties refused is gone (nh_config_settle): said once, at
 * start, besides the statistics' config.preset-dropped. */
static void nhc_warn_dropped(const char *key, const char *why, void *opaque)
{
    const NhcCtrl *n = opaque;

    warn_report("nvme-hybrid: preset %s's %s dropped (was %s)", n->cfg.preset, key, why);
}

static void nhc_realize(PCIDevice *pci, Error **errp)
{
    ERRP_GUARD();
    NhcCtrl *n = NVME_HYBRID(pci);
    g_autoptr(GError) gerr = NULL;

    if (!nhc_check_props(n, errp) || !nhc_powercut_realize(n, errp)) {
        return;
    }
    if (!blkconf_apply_backend_options(&n->blkconf, false, true, errp)) {
        return;
    }
    n->backend_wc = blk_enable_write_cache(n->blkconf.blk);
    if (!nh_config_settle(&n->cfg, &gerr)) {
        error_setg(errp, "%s", gerr->message);
        return;
    }
    nh_config_foreach_dropped(&n->cfg, nhc_warn_dropped, n);
    if (!nhc_zns_realize(n, errp)) {
        return;
    }
    n->engine = nh_engine_new(&n->cfg, n->ns_bytes, &gerr);
    if (!n->engine) {
        error_setg(errp, "%s", gerr->message);
        goto fail;
    }
    if (!nhc_zns_check_engine(n, errp)) {
        goto fail;
    }
    n->vwc_present = n->backend_wc || nh_engine_volatile_write_cache(n->engine);
    nhc_undo_attach(n);
    if (!nhc_fdp_realize(n, errp)) {
        goto fail;
    }
    nhc_dir_realize(n);
    n->wce = true;
    n->num_queues = n->max_ioqpairs + 1;
    n->sq = g_new0(NhcSQ *, n->num_queues);
    n->cq = g_new0(NhcCQ *, n->num_queues);
    g_queue_init(&n->events);
    QTAILQ_INIT(&n->dying_sqs);
    n->fetch_bh = qemu_bh_new_guarded(nhc_fetch_bh, n, &DEVICE(n)->mem_reentrancy_guard);
    nhc_init_regs(n);
    if (!nhc_init_bar0(n, errp)) {
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
    nhc_free(n);
}

static void nhc_exit(PCIDevice *pci)
{
    NhcCtrl *n = NVME_HYBRID(pci);

    n->cc = 0;
    nhc_ctrl_reset_now(n);
    nhc_state_close(n);
    qemu_remove_exit_notifier(&n->exit_notifier);
    nhc_free(n);
}

static void nhc_reset(DeviceState *dev)
{
    NhcCtrl *n = NVME_HYBRID(dev);

    n->cc = 0;
    nhc_ctrl_reset_now(n);
    nhc_init_regs(n);
}

/* ------------------------------------------------------------------------------ properties */

/*
 * Test only: the engine's full consistency check (nh_engine_check: mapping both ways, valid
 * counts, block accounting, NAND discipline) on the model as it is now, e.g. right after a
 * start restored or rebuilt it.  "ok", or what is inconsistent.  Walks every page: slow on a
 * large device.  scripts/powercut-campaign reads it over QMP.
 */
static void nhc_get_x_check(Object *obj, Visitor *v, const char *name, void *opaque,
                            Error **errp)
{
    NhcCtrl *n = NVME_HYBRID(obj);
    g_autoptr(GError) err = NULL;
    g_autofree char *res = NULL;

    if (!n->engine) {
        error_setg(errp, "x-check: the device is not realized");
        return;
    }
    res = nh_engine_check(n->engine, &err) ? g_strdup("ok") : g_strdup(err->message);
    visit_type_str(v, name, &res, errp);
}

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
    DEFINE_PROP_BOOL("x-flush-no-drain", NhcCtrl, x_flush_no_drain, false),
    DEFINE_PROP_BOOL("x-exact-time", NhcCtrl, x_exact_time, false),
    DEFINE_PROP_UINT64("power-cut-at", NhcCtrl, power_cut_at, 0),
    DEFINE_PROP_BOOL("fdp", NhcCtrl, fdp_on, false),
    DEFINE_PROP_UINT8("zasl", NhcCtrl, zasl, 0),
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

    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        const NhConfigKey *key = nh_config_key(i);
        object_class_property_add(oc, key->name, "str", nhc_get_engine_key,
                                  nhc_set_engine_key, NULL, (void *)key);
        object_class_property_set_description(oc, key->name, key->help);
    }
    object_class_property_add(oc, "stats", "str", nhc_get_stats, NULL, NULL, NULL);
    nhc_powercut_class_init(oc);
    object_class_property_add(oc, "x-check", "str", nhc_get_x_check, NULL, NULL, NULL);
    object_class_property_set_description(oc, "x-check",
        "test only: run the engine's consistency check now; \"ok\" or what is wrong");
    object_class_property_set_description(oc, "x-flush-no-drain",
        "test only, breaks durability: Flush does not drain the volatile write buffer "
        "(for scripts/powercut-campaign's self-test)");
    object_class_property_set_description(oc, "x-exact-time",
        "test only: the -icount path without -icount (fetch in the doorbell write, "
        "synchronous backend I/O, completions posted inline), for qtests and fuzzing");
    object_class_property_set_description(oc, "fdp",
        "Flexible Data Placement on endurance group 1, enabled from power-on: streams + 1 "
        "reclaim unit handles on the engine's placement tags (needs placement: streams=auto "
        "or N; the Streams directive is then not supported); see docs/device.md");
    object_class_property_set_description(oc, "zasl",
        "with zones > 0: the zoned namespace's Zone Append Size Limit, 2^zasl 4 KiB pages "
        "(0: the maximum transfer, MDTS); see docs/zoned.md");
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
