/*
 * admin-cmd.c - admin commands: queue management, Identify, Get Log Page, Get/Set Features,
 * Asynchronous Event Request, Abort, and the admin command table (dispatch in cmds.c).
 * Statuses follow NVMe Base Specification 1.4.
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/log.h"
#include "qemu/cutils.h"
#include "hw/pci/msix.h"
#include "system/block-backend.h"

#include "nvme-hybrid.h"
#include "trace.h"


/* ------------------------------------------------------------------------------ queues */

static uint16_t nhc_admin_create_cq(NhcCtrl *n, NhcReq *req)
{
    NvmeCreateCq *c = (NvmeCreateCq *)&req->cmd;
    uint16_t cqid = le16_to_cpu(c->cqid);
    uint32_t qsize = le16_to_cpu(c->qsize) + 1;
    uint16_t flags = le16_to_cpu(c->cq_flags);
    uint16_t vector = le16_to_cpu(c->irq_vector);
    uint64_t prp1 = le64_to_cpu(c->prp1);

    if (!cqid || cqid >= n->num_queues || n->cq[cqid] ||
        cqid > (n->features.num_queues >> 16) + 1) {
        return NHC_ERR(NVME_INVALID_QID);
    }
    if (qsize < 2 || qsize > NVME_CAP_MQES(n->cap) + 1) {
        return NHC_ERR(NVME_MAX_QSIZE_EXCEEDED);
    }
    if (!NVME_CQ_FLAGS_PC(flags)) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* CAP.CQR: queues must be contiguous */
    }
    if (!prp1) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    if (prp1 & (n->page_size - 1)) {
        return NHC_ERR(NVME_INVALID_PRP_OFFSET);
    }
    if (vector >= n->num_vectors || (vector && !msix_enabled(PCI_DEVICE(n)))) {
        return NHC_ERR(NVME_INVALID_IRQ_VECTOR);
    }
    if (NVME_CC_IOCQES(n->cc) != 4) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* CC.IOCQES must name 16-byte entries */
    }
    if (!nhc_dma_is_ram(n, prp1, (uint64_t)qsize * sizeof(NvmeCqe), true)) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* the device posts only to guest RAM */
    }
    nhc_create_cq(n, cqid, prp1, qsize, vector, NVME_CQ_FLAGS_IEN(flags));
    nhc_dbbuf_attach(n, cqid);
    return NVME_SUCCESS;
}

static uint16_t nhc_admin_create_sq(NhcCtrl *n, NhcReq *req)
{
    NvmeCreateSq *c = (NvmeCreateSq *)&req->cmd;
    uint16_t sqid = le16_to_cpu(c->sqid);
    uint16_t cqid = le16_to_cpu(c->cqid);
    uint32_t qsize = le16_to_cpu(c->qsize) + 1;
    uint16_t flags = le16_to_cpu(c->sq_flags);
    uint64_t prp1 = le64_to_cpu(c->prp1);

    if (!sqid || sqid >= n->num_queues || n->sq[sqid] ||
        sqid > (n->features.num_queues & 0xffff) + 1) {
        return NHC_ERR(NVME_INVALID_QID);
    }
    if (!cqid || cqid >= n->num_queues || !n->cq[cqid]) {
        return NHC_ERR(NVME_INVALID_CQID);
    }
    if (qsize < 2 || qsize > NVME_CAP_MQES(n->cap) + 1) {
        return NHC_ERR(NVME_MAX_QSIZE_EXCEEDED);
    }
    if (!NVME_SQ_FLAGS_PC(flags) || !prp1) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    if (prp1 & (n->page_size - 1)) {
        return NHC_ERR(NVME_INVALID_PRP_OFFSET);
    }
    if (NVME_CC_IOSQES(n->cc) != 6) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* CC.IOSQES must name 64-byte entries */
    }
    if (!nhc_dma_is_ram(n, prp1, (uint64_t)qsize * sizeof(NvmeCmd), false)) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* the device fetches only from guest RAM */
    }
    /* QPRIO only matters under weighted round robin, which CAP.AMS does not offer */
    nhc_create_sq(n, sqid, cqid, prp1, qsize);
    nhc_dbbuf_attach(n, sqid);
    return NVME_SUCCESS;
}

/*
 * Doorbell Buffer Config: PRP1 is the shadow doorbell buffer, PRP2 the EventIdx buffer, each one
 * memory page (room for 512 queue pairs at 4 KiB), laid out like the doorbell registers with a
 * stride of 4 bytes.  Used for the I/O queues that exist now and are created later, until reset.
 */
static uint16_t nhc_admin_doorbell_buffer_config(NhcCtrl *n, NhcReq *req)
{
    uint64_t dbs = le64_to_cpu(req->cmd.dptr.prp1), eis = le64_to_cpu(req->cmd.dptr.prp2);

    trace_nhc_admin_dbbuf(dbs, eis);
    if (!dbs || !eis || (dbs | eis) & (n->page_size - 1) ||
        !nhc_dma_is_ram(n, dbs, n->page_size, false) ||
        !nhc_dma_is_ram(n, eis, n->page_size, true)) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    n->dbbuf_dbs = dbs;
    n->dbbuf_eis = eis;
    for (uint32_t qid = 1; qid < n->num_queues; qid++) {
        nhc_dbbuf_attach(n, qid);
    }
    return NVME_SUCCESS;
}

static uint16_t nhc_admin_delete_sq(NhcCtrl *n, NhcReq *req)
{
    uint16_t qid = le16_to_cpu(((NvmeDeleteQ *)&req->cmd)->qid);

    if (!qid || qid >= n->num_queues || !n->sq[qid]) {
        return NHC_ERR(NVME_INVALID_QID);
    }
    /* completes once the SQ's last command has ended */
    req->pending = 1;
    nhc_delete_sq(n, qid, req);
    return NHC_ASYNC;
}

static uint16_t nhc_admin_delete_cq(NhcCtrl *n, NhcReq *req)
{
    uint16_t qid = le16_to_cpu(((NvmeDeleteQ *)&req->cmd)->qid);

    if (!qid || qid >= n->num_queues || !n->cq[qid]) {
        return NHC_ERR(NVME_INVALID_QID);
    }
    if (!QTAILQ_EMPTY(&n->cq[qid]->sq_list)) {
        return NHC_ERR(NVME_INVALID_QUEUE_DEL);
    }
    nhc_delete_cq(n, qid);
    return NVME_SUCCESS;
}

/* ------------------------------------------------------------------------------ identify */

static void nhc_set_id_string(uint8_t *dst, size_t len, const char *src)
{
    memset(dst, ' ', len);
    memcpy(dst, src, MIN(len, strlen(src)));
}

static void nhc_put_le128(uint8_t *dst, uint64_t val)
{
    memset(dst, 0, 16);
    stq_le_p(dst, val);
}

static uint16_t nhc_identify_ctrl(NhcCtrl *n, NhcReq *req)
{
    g_autofree NvmeIdCtrl *id = g_new0(NvmeIdCtrl, 1);
    uint64_t phys = nh_engine_logical_capacity(n->engine);

    id->vid = cpu_to_le16(PCI_DEVICE_GET_CLASS(n)->vendor_id);
    id->ssvid = id->vid;
    nhc_set_id_string(id->sn, sizeof(id->sn), n->serial);
    nhc_set_id_string(id->mn, sizeof(id->mn), NHC_MODEL);
    nhc_set_id_string(id->fr, sizeof(id->fr), NHC_FIRMWARE);
    id->rab = 6;
    id->mdts = NHC_MDTS;
    id->cntlid = cpu_to_le16(0);
    id->ver = cpu_to_le32(n->vs);
    id->oaes = cpu_to_le32(0);
    id->cntrltype = 1;                          /* I/O controller */
    if (n->fdp) {                               /* endurance group 1 with FDP (fdp.c) */
        id->ctratt = cpu_to_le32(NVME_CTRATT_ENDGRPS | NVME_CTRATT_FDPS);
        id->endgidmax = cpu_to_le16(NHC_ENDGID);
    }
    id->oacs = cpu_to_le16(NVME_OACS_DBCS |     /* Doorbell Buffer Config */
                           NVME_OACS_DIRECTIVES);
    id->acl = 3;                                /* 4 concurrent Aborts */
    id->aerl = NHC_AERL;
    id->frmw = NVME_FRMW_SLOT1_RO | (1 << 1);   /* one slot, read-only */
    id->lpa = NVME_LPA_CSE |                    /* Commands Supported and Effects */
              NVME_LPA_EXTENDED;                /* Get Log Page offsets supported */
    id->elpe = NHC_ERROR_LOG_SIZE - 1;
    id->npss = 0;
    id->wctemp = cpu_to_le16(NHC_WCTEMP_K);
    id->cctemp = cpu_to_le16(NHC_CCTEMP_K);
    nhc_put_le128(id->tnvmcap, phys);
    nhc_put_le128(id->unvmcap, 0);
    id->sqes = (6 << 4) | 6;
    id->cqes = (4 << 4) | 4;
    id->maxcmd = cpu_to_le16(NHC_MAX_QENTRIES);
    id->nn = cpu_to_le32(n->zns ? NHC_ZNS_NSID : NHC_NSID);
    id->oncs = cpu_to_le16(NVME_ONCS_COMPARE | NVME_ONCS_DSM | NVME_ONCS_WRITE_ZEROES |
                           NVME_ONCS_FEATURES | NVME_ONCS_TIMESTAMP);
    id->fuses = 0;
    id->fna = 0;
    id->vwc = (n->vwc_present ? NVME_VWC_PRESENT : 0) | NVME_VWC_NSID_BROADCAST_SUPPORT;
    id->sgls = 0;                               /* PRPs only */
    pstrcpy((char *)id->subnqn, sizeof(id->subnqn), "nqn.2026-11.org.nvme-hybrid:");
    pstrcat((char *)id->subnqn, sizeof(id->subnqn), n->serial);
    /* one power state: 25 W max, entry/exit latencies unknown */
    id->psd[0].mp = cpu_to_le16(2500);
    return nhc_dma_to_host(n, id, sizeof(*id), &req->cmd);
}

/* The size in LBAs of namespace @nsid, 0 when it is not an active namespace. */
static uint64_t nhc_ns_size(NhcCtrl *n, uint32_t nsid)
{
    if (nsid == NHC_NSID) {
        return n->nsze;
    }
    return nsid == NHC_ZNS_NSID && nhc_zns_active(n) ? nhc_zns_nsze(n) : 0;
}

/* Namespace @nsid's NGUID and EUI-64, unique per namespace (Linux ignores a namespace whose
 * identifiers another one has); NSID 1's are what they were before a second one existed. */
static void nhc_ns_ids(NhcCtrl *n, uint32_t nsid, uint8_t *nguid, uint8_t *eui64)
{
    uint64_t id = (uint64_t)(nsid - 1) << 32 | g_str_hash(n->serial);

    stq_be_p(eui64, 0x5254000000000000ull | id);
    stq_be_p(nguid, 0x6e766d652d687962ull);  /* "nvme-hyb" */
    stq_be_p(nguid + 8, id);
}

static uint16_t nhc_identify_ns(NhcCtrl *n, NhcReq *req)
{
    g_autofree NvmeIdNs *id = g_new0(NvmeIdNs, 1);
    uint32_t nsid = le32_to_cpu(req->cmd.nsid);
    uint64_t nsze = nhc_ns_size(n, nsid);
    bool zoned = nsid == NHC_ZNS_NSID;
    /* Preferred write granularity and optimal write size, in LBAs: what one program writes,
     * and a stripe of that on every die and plane (the engine knows both). */
    uint64_t npwg = nh_engine_program_bytes(n->engine) >> n->lba_shift;
    uint64_t nows = nh_engine_stripe_bytes(n->engine) >> n->lba_shift;

    if (!nsze) {
        return NHC_ERR(NVME_INVALID_NSID);
    }
    id->nsze = cpu_to_le64(nsze);
    id->ncap = cpu_to_le64(nsze);
    id->nuse = cpu_to_le64(nsze);
    id->nsfeat = 1 << 4;                        /* NPWG, NPWA, NPDG, NPDA, NOWS valid */
    id->nlbaf = 0;
    id->flbas = 0;
    /* deallocated reads as zeroes (a reset zone, a zone's unwritten LBAs); Write Zeroes with
     * DEAC deallocates (NSID 1: the zoned namespace has no Write Zeroes) */
    id->dlfeat = zoned ? 1 : 1 | (1 << 3);
    id->lbaf[0].ds = n->lba_shift;
    id->endgid = cpu_to_le16(n->fdp ? NHC_ENDGID : 0);
    nhc_put_le128(id->nvmcap, zoned ? nhc_zns_bytes(n) : n->ns_bytes);
    id->npwg = cpu_to_le16(MIN(npwg, 0x10000) - 1);
    id->npwa = id->npwg;
    id->npdg = id->npwg;
    id->npda = id->npwg;
    id->nows = cpu_to_le16(MIN(nows, 0x10000) - 1);
    nhc_ns_ids(n, nsid, id->nguid, (uint8_t *)&id->eui64);
    return nhc_dma_to_host(n, id, sizeof(*id), &req->cmd);
}

static uint16_t nhc_identify_active_ns(NhcCtrl *n, NhcReq *req)
{
    uint32_t list[1024] = { 0 };
    uint32_t nsid = le32_to_cpu(req->cmd.nsid);
    int i = 0;

    if (nsid >= 0xfffffffe) {
        return NHC_ERR(NVME_INVALID_NSID);
    }
    for (uint32_t ns = NHC_NSID; ns <= NHC_ZNS_NSID; ns++) {
        if (ns > nsid && nhc_ns_size(n, ns)) {
            list[i++] = cpu_to_le32(ns);
        }
    }
    return nhc_dma_to_host(n, list, sizeof(list), &req->cmd);
}

static uint16_t nhc_identify_ns_descriptors(NhcCtrl *n, NhcReq *req)
{
    uint8_t buf[4096] = { 0 };
    uint32_t nsid = le32_to_cpu(req->cmd.nsid);
    uint8_t eui64[8];
    NvmeIdNsDescr *d;
    uint8_t *p = buf;

    if (!nhc_ns_size(n, nsid)) {
        return NHC_ERR(NVME_INVALID_NSID);
    }
    d = (NvmeIdNsDescr *)p;
    d->nidt = NVME_NIDT_NGUID;
    d->nidl = NVME_NIDL_NGUID;
    p += sizeof(*d);
    nhc_ns_ids(n, nsid, p, eui64);
    p += NVME_NIDL_NGUID;
    d = (NvmeIdNsDescr *)p;
    d->nidt = NVME_NIDT_CSI;
    d->nidl = NVME_NIDL_CSI;
    p += sizeof(*d);
    *p = nsid == NHC_ZNS_NSID ? NVME_CSI_ZONED : NVME_CSI_NVM;
    return nhc_dma_to_host(n, buf, sizeof(buf), &req->cmd);
}

/* I/O Command Set specific Identify Controller: NVM command set, all limits 0, i.e. none beyond
 * MDTS (Write Zeroes, Verify) and the 256 ranges Dataset Management allows; or zoned (zns.c). */
static uint16_t nhc_identify_ctrl_cs(NhcCtrl *n, NhcReq *req)
{
    g_autofree NvmeIdCtrlNvm *id = g_new0(NvmeIdCtrlNvm, 1);
    uint8_t csi = ((NvmeIdentify *)&req->cmd)->csi;

    if (csi == NVME_CSI_ZONED && n->zns) {
        return nhc_zns_identify_ctrl(n, req);
    }
    if (csi != NVME_CSI_NVM) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    return nhc_dma_to_host(n, id, sizeof(*id), &req->cmd);
}

/* I/O Command Set specific Identify Namespace: the NVM command set's has nothing beyond
 * Identify Namespace here (all zero); the zoned one's is zns.c's. */
static uint16_t nhc_identify_ns_cs(NhcCtrl *n, NhcReq *req)
{
    uint8_t csi = ((NvmeIdentify *)&req->cmd)->csi;
    uint32_t nsid = le32_to_cpu(req->cmd.nsid);
    uint8_t zero[NVME_IDENTIFY_DATA_SIZE] = { 0 };

    if (!nhc_ns_size(n, nsid)) {
        return NHC_ERR(NVME_INVALID_NSID);
    }
    if (csi != (nsid == NHC_ZNS_NSID ? NVME_CSI_ZONED : NVME_CSI_NVM)) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* not the namespace's command set */
    }
    return csi == NVME_CSI_ZONED ? nhc_zns_identify_ns(n, req)
                                 : nhc_dma_to_host(n, zero, sizeof(zero), &req->cmd);
}

/*
 * Identify I/O Command Set data structure (CNS 1Ch): the combinations the controller offers
 * under CC.CSS = 110b; with a zoned namespace, one: NVM and Zoned Namespace (index 0, which
 * the I/O Command Set Profile feature leaves selected).
 */
static uint16_t nhc_identify_iocs(NhcCtrl *n, NhcReq *req)
{
    uint64_t vec[NVME_IDENTIFY_DATA_SIZE / 8] = { 0 };

    if (!n->zns) {
        return NHC_ERR(NVME_INVALID_FIELD);     /* CAP.CSS offers the NVM command set only */
    }
    vec[0] = cpu_to_le64(1u << NVME_CSI_NVM | 1u << NVME_CSI_ZONED);
    return nhc_dma_to_host(n, vec, sizeof(vec), &req->cmd);
}

static uint16_t nhc_admin_identify(NhcCtrl *n, NhcReq *req)
{
    NvmeIdentify *c = (NvmeIdentify *)&req->cmd;

    trace_nhc_admin_identify(c->cns, le32_to_cpu(c->nsid));
    switch (c->cns) {
    case NVME_ID_CNS_NS:            return nhc_identify_ns(n, req);
    case NVME_ID_CNS_CTRL:          return nhc_identify_ctrl(n, req);
    case NVME_ID_CNS_NS_ACTIVE_LIST: return nhc_identify_active_ns(n, req);
    case NVME_ID_CNS_NS_DESCR_LIST: return nhc_identify_ns_descriptors(n, req);
    case NVME_ID_CNS_CS_NS:         return nhc_identify_ns_cs(n, req);
    case NVME_ID_CNS_CS_CTRL:       return nhc_identify_ctrl_cs(n, req);
    case NVME_ID_CNS_IO_COMMAND_SET: return nhc_identify_iocs(n, req);
    default:                        return NHC_ERR(NVME_INVALID_FIELD);
    }
}

/* ------------------------------------------------------------------------------ log pages */

static void nhc_smart_log(NhcCtrl *n, NvmeSmartLog *s)
{
    NhWear wear;
    uint64_t on_ns = n->smart.power_on_ns +
                     (qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - n->powered_on_ns);
    uint64_t busy_ns = n->smart.busy_ns;

    if (n->io_outstanding) {
        busy_ns += qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - n->busy_since_ns;
    }
    nh_engine_wear(n->engine, &wear);
    memset(s, 0, sizeof(*s));
    s->critical_warning = nhc_temperature_warning(n) ? NVME_SMART_TEMPERATURE : 0;
    s->temperature = cpu_to_le16(NHC_TEMPERATURE_K);
    s->available_spare = 100;
    s->available_spare_threshold = 10;
    s->percentage_used = MIN(255, wear.pe_cycles ?
                             (uint64_t)(wear.erase_mean * 100 / wear.pe_cycles) : 0);
    /* data units are thousands of 512-byte units, rounded up */
    s->data_units_read[0] = cpu_to_le64(DIV_ROUND_UP(n->smart.data_units_read, 1000));
    s->data_units_written[0] = cpu_to_le64(DIV_ROUND_UP(n->smart.data_units_written, 1000));
    s->host_read_commands[0] = cpu_to_le64(n->smart.host_read_cmds);
    s->host_write_commands[0] = cpu_to_le64(n->smart.host_write_cmds);
    s->controller_busy_time[0] = cpu_to_le64(busy_ns / (60 * NANOSECONDS_PER_SECOND));
    s->power_cycles[0] = cpu_to_le64(n->smart.power_cycles);
    s->power_on_hours[0] = cpu_to_le64(on_ns / (3600 * NANOSECONDS_PER_SECOND));
    s->unsafe_shutdowns[0] = cpu_to_le64(n->smart.unsafe_shutdowns);
    s->number_of_error_log_entries[0] = cpu_to_le64(n->smart.error_count);
}

/* Vendor log page 0xC0: NhStatsLogHeader, then the engine's statistics document
 * (docs/vendor-log.md). */
static GByteArray *nhc_vendor_log(NhcCtrl *n)
{
    g_autofree char *json = nh_engine_stats_json(n->engine, false);
    uint32_t len = strlen(json);
    GByteArray *buf = g_byte_array_sized_new(sizeof(NhStatsLogHeader) + len);
    NhStatsLogHeader hdr = {
        .version = cpu_to_le32(NH_STATS_VERSION), .json_len = cpu_to_le32(len),
    };

    memcpy(hdr.magic, NH_STATS_MAGIC, sizeof(hdr.magic));
    g_byte_array_append(buf, (uint8_t *)&hdr, sizeof(hdr));
    g_byte_array_append(buf, (uint8_t *)json, len);
    return buf;
}

static uint64_t nhc_log_offset(NvmeCmd *c)
{
    return le32_to_cpu(c->cdw12) | ((uint64_t)le32_to_cpu(c->cdw13) << 32);
}

/* NUMDL and NUMDU: dwords to return, less one. */
static uint64_t nhc_log_len(NhcCtrl *n, NhcReq *req)
{
    uint32_t dw10 = le32_to_cpu(req->cmd.cdw10), dw11 = le32_to_cpu(req->cmd.cdw11);

    return ((uint64_t)((dw10 >> 16) | ((dw11 & 0xffff) << 16)) + 1) * 4;
}

/* The offset must be dword aligned (Invalid Field); the length is held to MDTS by the
 * dispatch. */
static uint16_t nhc_log_check(NhcCtrl *n, NhcReq *req)
{
    uint64_t off = nhc_log_offset(&req->cmd);

    trace_nhc_admin_get_log(le32_to_cpu(req->cmd.cdw10) & 0xff, off, nhc_log_len(n, req));
    return off & 3 ? NHC_ERR(NVME_INVALID_FIELD) : NVME_SUCCESS;
}

static uint16_t nhc_admin_get_log_page(NhcCtrl *n, NhcReq *req)
{
    NvmeCmd *c = &req->cmd;
    uint32_t dw10 = le32_to_cpu(c->cdw10);
    uint8_t lid = dw10 & 0xff;
    bool rae = dw10 & (1 << 15);
    uint64_t off = nhc_log_offset(c);
    uint64_t len = nhc_log_len(n, req);
    g_autoptr(GByteArray) page = g_byte_array_new();
    g_autofree uint8_t *out = NULL;
    uint8_t event_type = 0xff;

    switch (lid) {
    case NVME_LOG_ERROR_INFO:
        g_byte_array_append(page, (uint8_t *)n->error_log, sizeof(n->error_log));
        event_type = NVME_AER_TYPE_ERROR;
        break;
    case NVME_LOG_SMART_INFO: {
        NvmeSmartLog s;
        uint32_t nsid = le32_to_cpu(c->nsid);
        if (nsid != 0 && nsid != NVME_NSID_BROADCAST && nsid != NHC_NSID) {
            return NHC_ERR(NVME_INVALID_NSID);
        }
        nhc_smart_log(n, &s);
        g_byte_array_append(page, (uint8_t *)&s, sizeof(s));
        event_type = NVME_AER_TYPE_SMART;
        break;
    }
    case NVME_LOG_CMD_EFFECTS: {
        uint8_t csi = le32_to_cpu(c->cdw14) >> 24;
        if (csi != NVME_CSI_NVM && !(csi == NVME_CSI_ZONED && n->zns)) {
            return NHC_ERR(NVME_INVALID_FIELD);
        }
        nhc_effects_log(n, page, csi);  /* cmds.c, from the command tables */
        break;
    }
    case NVME_LOG_FW_SLOT_INFO: {
        NvmeFwSlotInfoLog fw = { .afi = 1 };
        nhc_set_id_string(fw.frs1, sizeof(fw.frs1), NHC_FIRMWARE);
        g_byte_array_append(page, (uint8_t *)&fw, sizeof(fw));
        break;
    }
    case NHC_VENDOR_LOG:
        /* A host reads a long page in pieces: a read from offset 0 takes a new snapshot and
         * later pieces come from it, so the pieces agree with each other. */
        if (off == 0 || !n->vendor_log) {
            g_clear_pointer(&n->vendor_log, g_byte_array_unref);
            n->vendor_log = nhc_vendor_log(n);
        }
        g_byte_array_unref(page);
        page = g_byte_array_ref(n->vendor_log);
        break;
    case NVME_LOG_ENDGRP:
    case NVME_LOG_FDP_CONFS ... NVME_LOG_FDP_EVENTS: {
        uint16_t status = nhc_fdp_log(n, req, lid, page);
        if (status) {
            return status;
        }
        break;
    }
    default:
        return NHC_ERR(NVME_INVALID_LOG_ID);
    }
    if (off > page->len) {
        return NHC_ERR(NVME_INVALID_FIELD);
    }
    out = g_malloc0(len);
    memcpy(out, page->data + off, MIN(len, page->len - off));
    if (!rae && event_type != 0xff) {
        n->aer_mask &= ~(1 << event_type);
        nhc_aer_post(n);
    }
    return nhc_dma_to_host(n, out, len, c);
}

/* ------------------------------------------------------------------------------ events */

void nhc_raise_event(NhcCtrl *n, uint8_t type, uint8_t info, uint8_t log_page)
{
    uintptr_t ev = type | info << 8 | log_page << 16;

    if (g_queue_get_length(&n->events) < 64) {
        g_queue_push_tail(&n->events, (gpointer)ev);
    }
    nhc_aer_post(n);
}

/* Pair queued events with outstanding AERs; a delivered type stays masked until its log page
 * is read (without Retain Asynchronous Event). */
void nhc_aer_post(NhcCtrl *n)
{
    GList *l = n->events.head;

    while (l && n->outstanding_aers) {
        uintptr_t ev = (uintptr_t)l->data;
        uint8_t type = ev & 0xff;
        GList *next = l->next;

        if (!(n->aer_mask & (1 << type))) {
            NhcReq *req = n->aer_reqs[--n->outstanding_aers];
            req->cqe.result = cpu_to_le32(ev);
            trace_nhc_aer_post(ev);
            req->status = NVME_SUCCESS;
            n->aer_mask |= 1 << type;
            g_queue_delete_link(&n->events, l);
            nhc_req_complete(req);
        }
        l = next;
    }
}

static uint16_t nhc_admin_async_event_request(NhcCtrl *n, NhcReq *req)
{
    if (n->outstanding_aers > NHC_AERL) {
        return NVME_AER_LIMIT_EXCEEDED;
    }
    n->aer_reqs[n->outstanding_aers++] = req;
    nhc_aer_post(n);
    return NHC_ASYNC;
}

/* Abort is best effort by specification; commands here are either done or in flight in the
 * block layer, so none is aborted (CQE dword 0 bit 0 set). */
static uint16_t nhc_admin_abort(NhcCtrl *n, NhcReq *req)
{
    req->cqe.result = cpu_to_le32(1);
    return NVME_SUCCESS;
}

static uint64_t nhc_identify_len(NhcCtrl *n, NhcReq *req)
{
    return NVME_IDENTIFY_DATA_SIZE;
}

/*
 * The admin command set and the BAR1 window's vendor commands (bar-pm.c, docs/bar-pm.md),
 * which exist only with a window.  Effects: BA_SYNC and BA_FLUSH write the window's bytes to
 * their LBAs (LBCC); no command here changes a namespace, the controller's capabilities or
 * the set of namespaces, and none needs the I/O queues idle (CSE 0: the device orders a
 * BA_PIN against the writes in flight itself).
 */
const NhcCmd nhc_admin_cmds[256] = {
    [NVME_ADM_CMD_DELETE_SQ]    = { .execute = nhc_admin_delete_sq },
    [NVME_ADM_CMD_CREATE_SQ]    = { .execute = nhc_admin_create_sq },
    [NVME_ADM_CMD_GET_LOG_PAGE] = {
        .execute = nhc_admin_get_log_page, .check = nhc_log_check, .data_len = nhc_log_len,
    },
    [NVME_ADM_CMD_DELETE_CQ]    = { .execute = nhc_admin_delete_cq },
    [NVME_ADM_CMD_CREATE_CQ]    = { .execute = nhc_admin_create_cq },
    [NVME_ADM_CMD_IDENTIFY]     = {
        .execute = nhc_admin_identify, .data_len = nhc_identify_len,
    },
    [NVME_ADM_CMD_ABORT]        = { .execute = nhc_admin_abort },
    [NVME_ADM_CMD_SET_FEATURES] = { .execute = nhc_admin_set_features },   /* features.c */
    [NVME_ADM_CMD_GET_FEATURES] = { .execute = nhc_admin_get_features },
    [NVME_ADM_CMD_ASYNC_EV_REQ] = { .execute = nhc_admin_async_event_request },
    [NVME_ADM_CMD_DIRECTIVE_SEND] = { .execute = nhc_admin_directive_send }, /* directives.c */
    [NVME_ADM_CMD_DIRECTIVE_RECV] = { .execute = nhc_admin_directive_receive },
    [NVME_ADM_CMD_DBBUF_CONFIG] = { .execute = nhc_admin_doorbell_buffer_config },
    [NHC_ADM_BA_PIN]            = { .execute = nhc_admin_ba_pin, .flags = NHC_CMD_WINDOW },
    [NHC_ADM_BA_GET_ENTRY_INFO] = {
        .execute = nhc_admin_ba_get_entry_info, .data_len = nhc_ba_entry_info_len,
        .flags = NHC_CMD_WINDOW,
    },
    [NHC_ADM_BA_SYNC]           = {
        .execute = nhc_admin_ba_sync, .effects = NVME_CMD_EFF_LBCC, .flags = NHC_CMD_WINDOW,
    },
    [NHC_ADM_BA_READ_DMA]       = {
        .execute = nhc_admin_ba_read_dma, .check = nhc_ba_read_dma_check,
        .data_len = nhc_ba_read_dma_len, .flags = NHC_CMD_WINDOW,
    },
    [NHC_ADM_BA_FLUSH]          = {
        .execute = nhc_admin_ba_sync, .effects = NVME_CMD_EFF_LBCC, .flags = NHC_CMD_WINDOW,
    },
};
