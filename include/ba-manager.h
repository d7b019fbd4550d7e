/*
 * ba-manager.h - the device side of the BAR1 persistent-memory window (2B-SSD, seed 004):
 * the BA-buffer manager (entry table: which window range is pinned to which LBAs) and the
 * recovery manager (capacitor hold-up energy, dump time, the saved image and its integrity
 * checks).  Plain C, no QEMU types: the QEMU device (hw-nvme-hybrid/bar-pm.c) maps the window
 * into BAR1 and moves the bytes between it and the block backend.
 *
 * The window and its metadata live in one host file, mapped shared, which plays the device's
 * capacitor-backed DRAM and the reserved NAND area it is dumped to (layout in nh-vendor.h,
 * docs/bar-pm.md).
 *
 * meta_crc (CRC-32 of the header with meta_crc zeroed, plus the entry table) is kept current
 * on every table change; window_crc is computed when the window is dumped.  state says whether
 * the last power loss was saved completely (DUMPED), interrupted (DUMPING), or the device is (or
 * was, when it was killed) running (RUNNING).
 */
#ifndef NH_BA_MANAGER_H
#define NH_BA_MANAGER_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "config.h"
#include "nh-vendor.h"

#define NH_BA_MIN_SIZE      4096u
#define NH_BA_MAX_SIZE      (1ull << 30)

/* The power the controller and NAND draw while dumping, and the voltage below which the
 * regulators stop: with the capacitance and charge voltage they give the hold-up time. */
#define NH_BA_DUMP_WATTS    6.0
#define NH_BA_MIN_VOLTS     5.0

/* Validation results, mapped to NVMe statuses by the device. */
typedef enum NhBaErr {
    NH_BA_OK = 0,
    NH_BA_EBADEID,          /* entry id >= entries */
    NH_BA_EBUSY,            /* pin of an entry that is pinned */
    NH_BA_ENOTPINNED,       /* sync/flush/read of a free entry */
    NH_BA_EWINDOW,          /* window range beyond the window, or empty */
    NH_BA_ELBA,             /* LBA range beyond the namespace */
    NH_BA_EOVERLAP,         /* window or LBA range overlaps another pinned entry */
} NhBaErr;

typedef struct NhBa {
    uint8_t    *map;            /* the whole file (or anonymous memory) */
    size_t      map_len;
    int         fd;             /* -1: volatile, nothing survives */
    NhBaHeader *hdr;            /* the file's bytes, little endian: read through */
    NhBaEntry  *table;          /* nh_ba_entry and nh_ba_dumps */
    uint8_t    *window;
    uint64_t    size;
    uint32_t    entries;
    uint32_t    lba_size;
    uint64_t    nsze;           /* namespace size in LBAs */
    NhBaRestore restore;
    char       *restore_why;    /* what the integrity check found, for logs */
    bool        dumped;         /* this run's power loss has been saved */
} NhBa;

/*
 * Bytes per second the dump can be written at: SLC-mode programs (as SSDs dump to reserved
 * SLC blocks) on every plane in parallel, bounded by the channel buses.
 */
double nh_ba_dump_rate(const NhConfig *cfg);

/*
 * Can the capacitors (@cap_uf microfarads charged to @volts) save a @size-byte window and the
 * metadata before the regulators drop out?  *dump_ns receives the modeled dump time.  The
 * error names ba-size and gives the numbers.
 */
bool nh_ba_check_energy(uint64_t size, const NhConfig *cfg, uint32_t cap_uf, uint32_t volts,
                        uint64_t *dump_ns, GError **errp);

/*
 * Map @path (created when missing; NULL: volatile anonymous memory) for a window of @size
 * bytes with @entries entries over a namespace of @nsze LBAs of @lba_size bytes, and run the
 * recovery manager: restore, recover, or discard (keeping a copy at <path>.bad) what the file
 * holds.  Fails, touching nothing, for a file that is not ours or was made with another
 * ba-size, ba-entries or lba-size.
 */
NhBa *nh_ba_open(const char *path, uint64_t size, uint32_t entries, uint32_t lba_size,
                 uint64_t nsze, GError **errp);
void nh_ba_close(NhBa *ba);

NhBaErr nh_ba_check_pin(const NhBa *ba, uint32_t eid, uint64_t offset, uint64_t slba,
                        uint64_t nlb);
void nh_ba_pin(NhBa *ba, uint32_t eid, uint64_t offset, uint64_t slba, uint64_t nlb);
void nh_ba_release(NhBa *ba, uint32_t eid);
/* NH_BA_OK when @eid names a pinned entry. */
NhBaErr nh_ba_check_entry(const NhBa *ba, uint32_t eid);
/* Entry @eid (below entries) in host byte order. */
NhBaEntry nh_ba_entry(const NhBa *ba, uint32_t eid);
/* Completed dumps over the file's life. */
uint64_t nh_ba_dumps(const NhBa *ba);
/* Does [slba, slba+nlb) touch LBAs that a pinned entry holds? */
bool nh_ba_lbas_pinned(const NhBa *ba, uint64_t slba, uint64_t nlb);

/* The capacitors' save on power loss: checksum, state DUMPED, written to the file. */
void nh_ba_dump(NhBa *ba, uint64_t dump_ns);

const char *nh_ba_restore_name(NhBaRestore r);

#endif
