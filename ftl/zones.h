/*
 * zones.h - the zoned region (NVMe Zoned Namespaces, docs/zoned.md): the zones part's settings
 * (ftl/zones.c) and the region's model (ftl/zoned.c), the engine's one zone state machine.
 *
 * Contract:
 *  - Flash: every plane's last plane_blocks blocks belong to the zones; the FTL never sees them
 *    (blocks.c uses each plane's first blocks - plane_blocks).  Zone z lies on the width planes
 *    of plane group z % groups, blocks_per_zone blocks on each, in slot z / groups of those
 *    planes' zone blocks.  Its pages are striped over its planes a program unit (one page, a
 *    word line of 3 with one-shot) at a time, so a wide zone programs on all its planes at
 *    once and offset -> ppn is arithmetic: no per-page map.
 *  - A zone's data is [0, wp); the pages of whole program units below wp are programmed, the
 *    rest of wp's unit waits in the controller's staging (capacitor-protected, like
 *    stripe-merge's) until the unit is complete or the zone is finished.
 *  - Every request and action is checked first and refused whole (an NhZoneError in
 *    NH_ZONE_ERROR) with the model unchanged.
 */
#ifndef NH_ZONES_H
#define NH_ZONES_H

#include "engine.h"
#include "nand.h"
#include "record.h"

typedef enum NhZoneLayout { NH_ZONE_SPREAD, NH_ZONE_PACKED } NhZoneLayout;
typedef enum NhZoneFinish { NH_ZONE_FINISH_PAD, NH_ZONE_FINISH_MARK } NhZoneFinish;

typedef struct NhZonesSettings {
    uint32_t zones;             /* 0: no zoned region */
    uint32_t width;             /* planes a zone lies on */
    uint32_t blocks_per_zone;   /* blocks on each of them */
    uint32_t groups;            /* planes / width: zones side by side */
    uint32_t plane_blocks;      /* blocks every plane gives to the zones */
    uint32_t max_open, max_active;  /* 0 = no limit */
    NhZoneLayout layout;
    NhZoneFinish finish;
} NhZonesSettings;

/* Blocks per plane the FTL may use of @g_blocks, the rest being the zones' (settings of @parts). */
uint32_t nh_zones_ftl_blocks(const NhParts *parts, uint32_t g_blocks);

/* The counters of the zones part, in its table's order (zones.c). */
enum {
    NH_ZC_OPENS, NH_ZC_IMPLICIT_OPENS, NH_ZC_CLOSES, NH_ZC_IMPLICIT_CLOSES, NH_ZC_FINISHES,
    NH_ZC_RESETS, NH_ZC_OFFLINES, NH_ZC_APPENDS, NH_ZC_FINISH_PAD_PAGES, NH_ZC_RESET_ERASES,
    NH_ZC_RESET_NS, NH_ZC_FINISH_NS, NH_ZC_WORN_READ_ONLY, NH_ZC_LOST_BYTES, NH_ZC_REFUSED,
};

typedef struct NhZone {
    uint8_t  state;         /* NhZoneState */
    uint64_t wp;            /* bytes of data from the zone's start */
    uint32_t programmed;    /* pages programmed from the zone's start, whole program units */
    bool     padded;        /* finish padded the blocks it had started to their ends */
    uint64_t touched;       /* when it was last written, in writes: the implicit-close order */
} NhZone;

/* A write not yet complete at the latest arrival, for a power cut before it completes. */
typedef struct NhZoneWrite {
    uint32_t zone;
    uint64_t start, end;    /* bytes in the zone */
    uint64_t done;
} NhZoneWrite;

typedef struct NhZoned {
    NhZonesSettings s;
    NhNand   *nand;
    NhStats  *st;
    uint64_t *c;            /* the part's counters */
    bool      flash_unwritten;  /* unwritten-reads=flash */
    uint32_t  page_size, wl, zone_pages;
    uint64_t  cap;          /* bytes a zone holds */
    uint32_t  nopen, nactive;
    uint64_t  writes;
    NhZone   *z;
    GArray   *inflight;     /* NhZoneWrite */
} NhZoned;

NhZoned *nh_zoned_new(const NhZonesSettings *s, NhNand *nand, NhStats *st, uint64_t *counters,
                      uint32_t page_size, bool flash_unwritten);
void nh_zoned_free(NhZoned *zd);

/* Refuse with @code and the message (counted in zones.refused); returns false. */
G_GNUC_PRINTF(4, 5) bool nh_zoned_refuse(NhZoned *zd, GError **errp, NhZoneError code,
                                         const char *fmt, ...);
/* The open limit in force (0 = none): an open zone is active, so max-active bounds it too. */
uint32_t nh_zoned_open_limit(const NhZoned *zd);

/* Write [off, off + len) of zone @zone (@append: at its write pointer, *off receiving it). */
bool nh_zoned_write(NhZoned *zd, uint32_t zone, uint64_t *off, uint64_t len, bool append,
                    uint64_t now, uint64_t *done, GError **errp);
/* Read [off, off + len) of the zoned space (bytes from its start, any zones). */
bool nh_zoned_read(NhZoned *zd, uint64_t off, uint64_t len, uint64_t now, uint64_t *done,
                   GError **errp);
bool nh_zoned_action(NhZoned *zd, NhZoneAction a, uint32_t zone, uint64_t now, uint64_t *done,
                     GError **errp);
/* The host's data in zone @zone reaches @end (a rebuild after a crash): untimed writes. */
void nh_zoned_mark_written(NhZoned *zd, uint32_t zone, uint64_t end);
/* Power fails at @now: writes not complete by then are lost (@lost told their bytes, from the
 * zoned space's start); open zones close, as at a controller reset. */
void nh_zoned_power_loss(NhZoned *zd, uint64_t now, void (*lost)(void *, uint64_t, uint64_t),
                         void *opaque);
/* The zone table in the state file; parsed and checked back (NULL and *errp when damaged);
 * installed in place of the table in force, the NAND's programmed pages of the zone blocks
 * set from it and open zones closed (a restart is a controller reset). */
void nh_zoned_save(const NhZoned *zd, GByteArray *o);
NhZone *nh_zoned_parse(const NhZoned *zd, NhReader r, GError **errp);
void nh_zoned_install(NhZoned *zd, NhZone *table);
/* NULL when the zone table, the counts and the NAND agree, else what is wrong (g_free). */
char *nh_zoned_check(const NhZoned *zd);
/* Zones in state @state now. */
uint64_t nh_zoned_count(const NhZoned *zd, NhZoneState state);

#endif
