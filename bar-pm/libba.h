/*
 * libba.h - guest library for the BAR1 persistent-memory window of nvme-hybrid (2B-SSD, seed
 * 004).  Byte-addressable persistent memory on the SSD: map the window write-combining, pin a
 * window range to an LBA range, store bytes, persist them, move them to and from NAND.
 *
 * The device is found through /sys/class/nvme (the first controller whose model is
 * "nvme-hybrid", or the one named); the window is mapped from the PCI function's
 * resource1_wc, the NVMe registers from resource0 (PMRCTL to enable the window, PMRSTS as the
 * persist barrier), and the BA_* vendor admin commands go through the controller's admin
 * passthrough ioctl.  A kernel with CONFIG_IO_STRICT_DEVMEM (Debian's) refuses to map BARs a
 * driver holds unless booted with iomem=relaxed.
 *
 * Every function returning int returns 0 or a negative errno value; ba_error() then says what
 * went wrong in words (including the device's status).  Offsets given with an entry id are
 * relative to that entry's window range and checked against its length.
 */
#ifndef LIBBA_H
#define LIBBA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ba_dev ba_dev;

enum { BA_FREE = 0, BA_PINNED = 1 };

/* What the device found about the saved window when it started (see docs/bar-pm.md). */
enum {
    BA_RESTORE_NEW = 0,         /* nothing saved: the window started zeroed */
    BA_RESTORE_RESTORED = 1,    /* the capacitor dump was restored */
    BA_RESTORE_RECOVERED = 2,   /* QEMU was killed; the DRAM image was saved and restored */
    BA_RESTORE_CORRUPT = 3,     /* the save failed its integrity check and was discarded */
    BA_RESTORE_TORN = 4,        /* the save was interrupted and was discarded */
};

typedef struct ba_info {
    uint32_t eid;
    uint32_t state;             /* BA_FREE or BA_PINNED */
    uint64_t offset;            /* window offset of the entry, bytes */
    uint64_t slba;
    uint64_t nlb;
    uint64_t length;            /* nlb * lba_size */
    /* device-wide */
    uint32_t entries;
    uint32_t restore;           /* BA_RESTORE_* */
    uint64_t window_size;
    uint32_t lba_size;
    uint32_t dumps;             /* completed saves over the window file's life */
    uint64_t dump_ns;           /* modeled time the capacitors need to save the window */
} ba_info;

/* Open the controller @ctrl ("nvme0"; NULL: the first nvme-hybrid), map and enable its window.
 * On failure there is no ba_dev to ask: the reason goes to stderr. */
int ba_open(const char *ctrl, ba_dev **dev);
/* Only map the window and the registers (ba_window, ba_persist, ba_pmrsts): no admin command,
 * so no CAP_SYS_ADMIN and no /dev/nvmeX; the entry calls then fail with EINVAL.  For processes
 * that use a window range set up by someone else (the log library, bar-pm/nhwal.c). */
int ba_open_window(const char *ctrl, ba_dev **dev);
void ba_close(ba_dev *dev);
const char *ba_error(const ba_dev *dev);
const char *ba_restore_name(uint32_t restore);

void *ba_window(const ba_dev *dev);
size_t ba_window_size(const ba_dev *dev);
const char *ba_ctrl_name(const ba_dev *dev);    /* "nvme0" */

int ba_pin(ba_dev *dev, uint32_t eid, uint64_t offset, uint64_t slba, uint32_t nlb);
int ba_sync(ba_dev *dev, uint32_t eid);         /* window -> LBAs, stays pinned */
int ba_flush(ba_dev *dev, uint32_t eid);        /* window -> LBAs, entry released */
int ba_entry_info(ba_dev *dev, uint32_t eid, ba_info *info);

/* Write-combining stores into the entry's range; not yet durable. */
int ba_write(ba_dev *dev, uint32_t eid, uint64_t offset, const void *buf, size_t len);
/* Store fence, then reads of PMRSTS until PMRSTS.PPND is 0: every earlier store has reached
 * the window, which the device's capacitors protect, and the PCIe cost the device models (the
 * posted writes at the link's bandwidth, then the read's round trip) has been paid. */
void ba_persist(ba_dev *dev);
/* Reads through the mapping (uncached, slow on real hardware) or by the device's DMA. */
int ba_read(ba_dev *dev, uint32_t eid, uint64_t offset, void *buf, size_t len);
int ba_read_dma(ba_dev *dev, uint32_t eid, uint64_t offset, void *buf, size_t len);

uint32_t ba_pmrsts(const ba_dev *dev);

#ifdef __cplusplus
}
#endif
#endif
