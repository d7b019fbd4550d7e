/*
 * nh-vendor.h - the device's vendor formats, shared by the device (hw-nvme-hybrid/,
 * bar-pm/ba-manager.c) and the guest library (bar-pm/libba.c), so that what one encodes the
 * other decodes: the BA_* vendor admin commands of the BAR1 window (opcodes, command dwords,
 * statuses, the BA_GET_ENTRY_INFO reply), the vendor bit of PMRSTS, the window file, and the
 * header of the statistics log page.  User-facing description in docs/bar-pm.md and
 * docs/vendor-log.md.  Plain C11, no glib: libba is built for the guest.  Python mirrors
 * (guest-images/tools/nvme-hybrid-stats, the power-cut campaign's guest script) are checked
 * against this file by tests/qtest/test_vendor_layout.py.
 *
 * Byte order: every multi-byte field, on the wire and in the file, is little endian, and is
 * converted explicitly where it is written and read (cpu_to_le* in the device, le*toh in
 * libba, GUINT*_TO_LE in ba-manager.c, which uses the window file's header and table in place
 * in its shared mapping), so both sides work whatever the host's byte order.
 *
 * Every struct here has its size and field offsets asserted below: a change to one is a
 * change of format, made here, for both sides at once.
 */
#ifndef NH_VENDOR_H
#define NH_VENDOR_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------ commands */

/*
 * Vendor specific admin opcodes; the low two bits give the data direction, as for every NVMe
 * opcode: 00 none, 10 controller to host.  Command dwords (little endian, as all of them):
 *   BA_PIN             CDW10 entry id, CDW11 window offset (bytes), CDW12-13 first LBA,
 *                      CDW14 LBA count
 *   BA_GET_ENTRY_INFO  CDW10 entry id; returns NhBaEntryInfo (64 bytes)
 *   BA_SYNC, BA_FLUSH  CDW10 entry id
 *   BA_READ_DMA        CDW10 entry id, CDW11 offset in the entry, CDW12 length (bytes)
 */
#define NH_BA_OP_PIN                0xc0
#define NH_BA_OP_GET_ENTRY_INFO     0xc2
#define NH_BA_OP_SYNC               0xc4
#define NH_BA_OP_READ_DMA           0xc6
#define NH_BA_OP_FLUSH              0xc8

/* Command specific statuses (SCT 1h) in the vendor specific range (SC C0h-FFh). */
#define NH_BA_SC_INVALID_ENTRY      0xc0    /* entry id >= entries */
#define NH_BA_SC_ENTRY_PINNED       0xc1    /* pin of an entry that is pinned */
#define NH_BA_SC_ENTRY_NOT_PINNED   0xc2    /* sync, flush or read of a free entry */
#define NH_BA_SC_WINDOW_RANGE       0xc3    /* beyond the window, or the entry */
#define NH_BA_SC_OVERLAP            0xc4    /* window or LBAs of another pinned entry */

/* PMRSTS bit 31 (reserved in NVMe): a persist the device models is still pending. */
#define NH_BA_PMRSTS_PPND           (1u << 31)

enum { NH_BA_FREE = 0, NH_BA_PINNED = 1 };

/* What the last start found (BA_GET_ENTRY_INFO's restore, `ba info`). */
typedef enum NhBaRestore {
    NH_BA_NEW = 0,          /* no saved image (new file, or no file at all): window zeroed */
    NH_BA_RESTORED = 1,     /* a complete dump, integrity checked, is back */
    NH_BA_RECOVERED = 2,    /* QEMU was killed: the recovery manager dumped the DRAM image
                             * left at the kill on this start, then restored it */
    NH_BA_CORRUPT = 3,      /* the saved image failed an integrity check: discarded */
    NH_BA_TORN = 4,         /* the dump was interrupted (power ran out): discarded */
} NhBaRestore;

/* BA_GET_ENTRY_INFO's reply: one entry, then the device-wide facts. */
typedef struct NhBaEntryInfo {
    uint16_t eid;
    uint8_t  state;             /* NH_BA_FREE or NH_BA_PINNED */
    uint8_t  restore;           /* NhBaRestore */
    uint32_t entries;
    uint64_t offset;            /* the entry's window offset, bytes */
    uint64_t slba;
    uint64_t nlb;
    uint64_t length;            /* nlb * lba_size */
    uint64_t window_size;
    uint32_t lba_size;
    uint32_t dumps;             /* completed saves over the window file's life */
    uint64_t dump_ns;           /* modeled time the capacitors need to save the window */
} NhBaEntryInfo;

/* ------------------------------------------------------------------------------ window file */

/*
 * The window file: the device's capacitor-backed DRAM and the NAND area it is dumped to.
 *   [0, 4 KiB)            header (NhBaHeader)
 *   [4 KiB, 64 KiB)       entry table: NhBaEntry[entries]
 *   [64 KiB, 64 KiB+size) the window, byte for byte what the host sees in BAR1
 */
#define NH_BA_MAGIC         "NHBAPM01"
#define NH_BA_VERSION       1
#define NH_BA_TABLE_OFFSET  4096u
#define NH_BA_META_SIZE     (64u * 1024)

enum { NH_BA_STATE_RUNNING = 1, NH_BA_STATE_DUMPING = 2, NH_BA_STATE_DUMPED = 3 };

typedef struct NhBaHeader {
    char     magic[8];
    uint32_t version;
    uint32_t entries;
    uint64_t window_offset;
    uint64_t window_size;
    uint32_t lba_size;
    uint32_t state;             /* NH_BA_STATE_* */
    uint64_t dumps;             /* completed dumps over the file's life */
    uint64_t dump_ns;           /* modeled duration of the last dump */
    uint32_t window_crc;        /* of the window, valid when state == DUMPED */
    uint32_t meta_crc;          /* of the header with meta_crc 0, then the entry table */
} NhBaHeader;

typedef struct NhBaEntry {
    uint32_t state;             /* NH_BA_FREE or NH_BA_PINNED */
    uint32_t reserved;
    uint64_t offset;            /* in the window, bytes */
    uint64_t slba;
    uint64_t nlb;
} NhBaEntry;

#define NH_BA_MAX_ENTRIES   ((NH_BA_META_SIZE - NH_BA_TABLE_OFFSET) / sizeof(NhBaEntry))

/* ------------------------------------------------------------------------------ statistics */

/* Vendor log page C0h: this header, then json_len bytes of the engine's statistics (JSON). */
#define NH_STATS_LOG_ID     0xc0
#define NH_STATS_MAGIC      "NHST"
#define NH_STATS_VERSION    1

typedef struct NhStatsLogHeader {
    char     magic[4];
    uint32_t version;
    uint32_t json_len;
    uint32_t reserved;
} NhStatsLogHeader;

/* ------------------------------------------------------------------------------ the layouts */

#define NH_VENDOR_AT(type, field, off) \
    _Static_assert(offsetof(type, field) == (off), #type "." #field " at " #off)

_Static_assert(sizeof(NhBaEntryInfo) == 64, "BA_GET_ENTRY_INFO returns 64 bytes");
NH_VENDOR_AT(NhBaEntryInfo, eid, 0);
NH_VENDOR_AT(NhBaEntryInfo, state, 2);
NH_VENDOR_AT(NhBaEntryInfo, restore, 3);
NH_VENDOR_AT(NhBaEntryInfo, entries, 4);
NH_VENDOR_AT(NhBaEntryInfo, offset, 8);
NH_VENDOR_AT(NhBaEntryInfo, slba, 16);
NH_VENDOR_AT(NhBaEntryInfo, nlb, 24);
NH_VENDOR_AT(NhBaEntryInfo, length, 32);
NH_VENDOR_AT(NhBaEntryInfo, window_size, 40);
NH_VENDOR_AT(NhBaEntryInfo, lba_size, 48);
NH_VENDOR_AT(NhBaEntryInfo, dumps, 52);
NH_VENDOR_AT(NhBaEntryInfo, dump_ns, 56);

_Static_assert(sizeof(NhBaHeader) == 64, "the window file's header is 64 bytes");
NH_VENDOR_AT(NhBaHeader, magic, 0);
NH_VENDOR_AT(NhBaHeader, version, 8);
NH_VENDOR_AT(NhBaHeader, entries, 12);
NH_VENDOR_AT(NhBaHeader, window_offset, 16);
NH_VENDOR_AT(NhBaHeader, window_size, 24);
NH_VENDOR_AT(NhBaHeader, lba_size, 32);
NH_VENDOR_AT(NhBaHeader, state, 36);
NH_VENDOR_AT(NhBaHeader, dumps, 40);
NH_VENDOR_AT(NhBaHeader, dump_ns, 48);
NH_VENDOR_AT(NhBaHeader, window_crc, 56);
NH_VENDOR_AT(NhBaHeader, meta_crc, 60);

_Static_assert(sizeof(NhBaEntry) == 32, "a window file entry is 32 bytes");
NH_VENDOR_AT(NhBaEntry, state, 0);
NH_VENDOR_AT(NhBaEntry, reserved, 4);
NH_VENDOR_AT(NhBaEntry, offset, 8);
NH_VENDOR_AT(NhBaEntry, slba, 16);
NH_VENDOR_AT(NhBaEntry, nlb, 24);

_Static_assert(sizeof(NhStatsLogHeader) == 16, "the statistics page's header is 16 bytes");
NH_VENDOR_AT(NhStatsLogHeader, magic, 0);
NH_VENDOR_AT(NhStatsLogHeader, version, 4);
NH_VENDOR_AT(NhStatsLogHeader, json_len, 8);
NH_VENDOR_AT(NhStatsLogHeader, reserved, 12);

_Static_assert(sizeof(NhBaHeader) <= NH_BA_TABLE_OFFSET, "the header fits before the table");

#endif
