/*
 * regs.c - BAR0: the controller registers, the doorbells and the MSI-X table, and what a write
 * to CC starts (enable, reset, shutdown; their work is in ctrl.c).
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/log.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"

#include "nvme-hybrid.h"
#include "trace.h"

#define NHC_DB_BASE     0x1000

void nhc_init_regs(NhcCtrl *n)
{
    n->cap = 0;
    NVME_CAP_SET_MQES(n->cap, NHC_MAX_QENTRIES - 1);
    NVME_CAP_SET_CQR(n->cap, 1);
    NVME_CAP_SET_TO(n->cap, 30);            /* 15 s, in 500 ms units */
    NVME_CAP_SET_DSTRD(n->cap, 0);
    /* a zoned namespace needs a second I/O command set, selected with CC.CSS = 110b */
    NVME_CAP_SET_CSS(n->cap, NVME_CAP_CSS_NCSS | (n->zns ? NVME_CAP_CSS_IOCSS : 0));
    NVME_CAP_SET_MPSMIN(n->cap, 0);         /* 4 KiB */
    NVME_CAP_SET_MPSMAX(n->cap, 4);         /* 64 KiB */
    n->vs = 0x00010400;                     /* NVMe 1.4 */
    n->cc = n->csts = n->aqa = n->intms = 0;
    n->asq = n->acq = 0;
    nhc_ba_init_regs(n);
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
            NHC_GUEST_ERR(trace_nhc_err_cc_enabled(n->cc, val), "CC fields other than "
                          "SHN/IOSQES/IOCQES changed while enabled; ignored");
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
    NHC_GUEST_ERR(trace_nhc_err_doorbell(qid, what), "%s (queue %u)", what, qid);
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
        trace_nhc_doorbell_cq(qid, val);
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
        trace_nhc_doorbell_sq(qid, val);
        sq->tail = val;
        nhc_fetch_kick(n);
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
        NHC_GUEST_ERR(trace_nhc_err_mmio_readonly(off), "write to read-only or reserved "
                      "register 0x%" HWADDR_PRIx " ignored", off);
        break;
    }
}

static uint64_t nhc_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    NhcCtrl *n = opaque;
    uint64_t val;

    if (addr & (size - 1)) {
        NHC_GUEST_ERR(trace_nhc_err_mmio_misaligned(addr, size), "misaligned register read");
        return 0;
    }
    val = nhc_read_reg32(n, addr);
    if (size == 8) {
        val |= (uint64_t)nhc_read_reg32(n, addr + 4) << 32;
    }
    trace_nhc_mmio_read(addr, size, val);
    return val;
}

static void nhc_mmio_write(void *opaque, hwaddr addr, uint64_t data, unsigned size)
{
    NhcCtrl *n = opaque;

    if (addr & (size - 1)) {
        NHC_GUEST_ERR(trace_nhc_err_mmio_misaligned(addr, size),
                      "misaligned register write ignored");
        return;
    }
    trace_nhc_mmio_write(addr, size, data);
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

bool nhc_init_bar0(NhcCtrl *n, Error **errp)
{
    PCIDevice *pci = PCI_DEVICE(n);
    uint32_t table_off, pba_off, bar_size;

    pci->config[PCI_INTERRUPT_PIN] = 1;
    pci_config_set_prog_interface(pci->config, 0x2);
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
