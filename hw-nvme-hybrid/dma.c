/*
 * dma.c - data transfer between the device and guest memory: PRP lists (NVMe Base 1.4 4.3)
 * mapped into scatter-gather lists, and the copies of a buffer the device builds or reads.
 * Only guest RAM is ever handed to DMA (nhc_dma_is_ram says why).
 */
#include "qemu/osdep.h"
#include "qemu/log.h"

#include "nvme-hybrid.h"
#include "trace.h"

/*
 * Does [addr, addr + len) resolve to guest RAM the device may read (or, @to_host, write)?  Only
 * such memory is handed to DMA: a pointer into MMIO, above all the device's own registers,
 * would have a block-layer completion write registers outside any reentrancy guard, and one
 * into unassigned space takes QEMU's bounce buffer, which a misaligned transfer never returns.
 */
bool nhc_dma_is_ram(NhcCtrl *n, uint64_t addr, uint64_t len, bool to_host)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(n));

    if (addr + len < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &plen, to_host,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!plen || !memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (to_host && memory_region_is_rom(mr))) {
            return false;
        }
        plen = MIN(plen, len);
        addr += plen;
        len -= plen;
    }
    return true;
}

static uint16_t nhc_prp_add(NhcCtrl *n, QEMUSGList *qsg, uint64_t addr, uint32_t len,
                            bool to_host)
{
    if (!nhc_dma_is_ram(n, addr, len, to_host)) {
        NHC_GUEST_ERR(trace_nhc_err_prp_not_ram(addr, len),
                      "PRP 0x%" PRIx64 " (+%u) is not guest RAM", addr, len);
        return NHC_ERR(NVME_DATA_TRAS_ERROR);
    }
    qemu_sglist_add(qsg, addr, len);
    return NVME_SUCCESS;
}

/*
 * Build @qsg from a PRP pair for @len bytes moving to the host (@to_host) or from it.  PRP1 may
 * start anywhere dword aligned; every later entry must be page aligned (PRP Offset Invalid
 * otherwise); PRP2 is a list pointer when more than two pages are needed, and the last entry of
 * a full list page chains to the next one.  Every page and list page must be guest RAM (Data
 * Transfer Error otherwise).
 */
uint16_t nhc_map_prp(NhcCtrl *n, QEMUSGList *qsg, uint64_t prp1, uint64_t prp2, uint32_t len,
                     bool to_host)
{
    PCIDevice *pci = PCI_DEVICE(n);
    uint64_t psz = n->page_size;
    uint32_t trans = MIN(len, psz - (prp1 & (psz - 1)));
    uint16_t status;

    pci_dma_sglist_init(qsg, pci, 1 + DIV_ROUND_UP(len, psz));
    if (prp1 & 3) {
        return NHC_ERR(NVME_INVALID_PRP_OFFSET);
    }
    status = nhc_prp_add(n, qsg, prp1, trans, to_host);
    len -= trans;
    if (status || !len) {
        return status;
    }
    if (len <= psz) {
        if (prp2 & (psz - 1)) {
            return NHC_ERR(NVME_INVALID_PRP_OFFSET);
        }
        return nhc_prp_add(n, qsg, prp2, len, to_host);
    }

    /* PRP list */
    if (prp2 & 7) {
        return NHC_ERR(NVME_INVALID_PRP_OFFSET);
    }
    while (len) {
        /* entries left in this list page, and no more than the transfer still needs */
        uint32_t nents = MIN((psz - (prp2 & (psz - 1))) / 8, DIV_ROUND_UP(len, psz) + 1);
        g_autofree uint64_t *list = g_new(uint64_t, nents);
        uint32_t i;

        if (!nhc_dma_is_ram(n, prp2, nents * 8, false) ||
            pci_dma_read(pci, prp2, list, nents * 8) != MEMTX_OK) {
            return NHC_ERR(NVME_DATA_TRAS_ERROR);
        }
        for (i = 0; i < nents && len; i++) {
            uint64_t ent = le64_to_cpu(list[i]);

            if (i == nents - 1 && len > psz) {
                if (ent & (psz - 1)) {
                    return NHC_ERR(NVME_INVALID_PRP_OFFSET);
                }
                prp2 = ent;         /* chain to the next list page */
                break;
            }
            if (ent & (psz - 1)) {
                return NHC_ERR(NVME_INVALID_PRP_OFFSET);
            }
            trans = MIN(len, psz);
            status = nhc_prp_add(n, qsg, ent, trans, to_host);
            if (status) {
                return status;
            }
            len -= trans;
        }
    }
    return NVME_SUCCESS;
}

static uint16_t nhc_dma_buf(NhcCtrl *n, void *buf, uint32_t len, NvmeCmd *cmd,
                            DMADirection dir)
{
    QEMUSGList qsg;
    uint16_t status;
    uint8_t *p = buf;

    status = nhc_map_prp(n, &qsg, le64_to_cpu(cmd->dptr.prp1), le64_to_cpu(cmd->dptr.prp2),
                         len, dir == DMA_DIRECTION_FROM_DEVICE);
    for (int i = 0; !status && i < qsg.nsg; i++) {
        MemTxResult r = dir == DMA_DIRECTION_FROM_DEVICE ?
            pci_dma_write(PCI_DEVICE(n), qsg.sg[i].base, p, qsg.sg[i].len) :
            pci_dma_read(PCI_DEVICE(n), qsg.sg[i].base, p, qsg.sg[i].len);
        if (r != MEMTX_OK) {
            status = NHC_ERR(NVME_DATA_TRAS_ERROR);
        }
        p += qsg.sg[i].len;
    }
    qemu_sglist_destroy(&qsg);
    return status;
}

uint16_t nhc_dma_to_host(NhcCtrl *n, const void *buf, uint32_t len, NvmeCmd *cmd)
{
    return nhc_dma_buf(n, (void *)buf, len, cmd, DMA_DIRECTION_FROM_DEVICE);
}

uint16_t nhc_dma_from_host(NhcCtrl *n, void *buf, uint32_t len, NvmeCmd *cmd)
{
    return nhc_dma_buf(n, buf, len, cmd, DMA_DIRECTION_TO_DEVICE);
}
