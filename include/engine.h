/*
 * engine.h - the narrow API between a front end (the QEMU device, the trace simulator) and the
 * SSD model: NAND timing, FTL, buffers.  No QEMU type appears here or below.
 *
 * Contract:
 *  - Time is a 64-bit count of nanoseconds chosen by the caller; it only has to be monotonic
 *    across calls.  The engine never reads a clock.
 *  - The engine models state (mapping, validity, wear, buffer metadata) and time; it never sees
 *    user data.  Front ends move the bytes themselves.
 *  - nh_engine_submit() is synchronous: it updates the model and returns the absolute time at
 *    which the request completes.  Requests are in bytes; the engine rounds them to its pages.
 *  - Every failure is reported through a GError with a message a user can act on; nothing aborts
 *    on bad input.
 */
#ifndef NH_ENGINE_H
#define NH_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "config.h"

typedef struct NhEngine NhEngine;

typedef enum NhOp {
    NH_OP_READ,
    NH_OP_WRITE,
    NH_OP_TRIM,     /* deallocate: the pages become invalid, GC never copies them */
    NH_OP_FLUSH,    /* drain volatile state; offset, length and stream are ignored */
} NhOp;

enum {
    NH_REQ_FUA      = 1u << 0,  /* write must be durable (on NAND) when it completes */
    NH_REQ_PRIORITY = 1u << 1,  /* priority request: defers background cleaning (seed 001) */
};

typedef struct NhRequest {
    NhOp     op;
    uint32_t flags;     /* NH_REQ_* */
    uint64_t offset;    /* bytes from the start of the logical space */
    uint64_t length;    /* bytes; 0 only for NH_OP_FLUSH */
    uint16_t stream;    /* placement tag: 0 = untagged, 1..nh_engine_stream_limit() = the host's
                         * stream identifier (FDP placement handles map onto the same tag) */
} NhRequest;

/*
 * Create an engine for a logical space of @capacity bytes with the configuration @cfg (which is
 * validated against @capacity: a geometry too small for it is refused).  The engine keeps its own
 * copy of @cfg.
 */
NhEngine *nh_engine_new(const NhConfig *cfg, uint64_t capacity, GError **errp);
void nh_engine_free(NhEngine *eng);

/* The configuration in force, with derived values (e.g. blocks=auto) filled in. */
const NhConfig *nh_engine_config(const NhEngine *eng);

/* Logical capacity the geometry offers after over-provisioning, in bytes. */
uint64_t nh_engine_logical_capacity(const NhEngine *eng);

/*
 * What the flash writes at once, in bytes, for a front end to advertise (Identify Namespace's
 * NPWG and NOWS): one program operation (a page, or a TLC word line of 3 with one-shot), and a
 * stripe of that on every die and plane.  Facts of the NAND model, so that no front end
 * re-derives them from the configuration.
 */
uint64_t nh_engine_program_bytes(const NhEngine *eng);
uint64_t nh_engine_stripe_bytes(const NhEngine *eng);

/* The latest arrival time nh_engine_submit() accepts, in ns (2^62 ns, 146 years): a completion
 * time, the arrival plus the modelled work, then stays far below 2^64 and never wraps. */
#define NH_TIME_MAX (UINT64_C(1) << 62)

/*
 * Model @req arriving at @now; returns its completion time (>= now).  Fails only for a request
 * outside the logical space, malformed (zero length), with a stream above
 * nh_engine_stream_limit() or arriving after NH_TIME_MAX, leaving the model unchanged.
 */
bool nh_engine_submit(NhEngine *eng, const NhRequest *req, uint64_t now, uint64_t *done,
                      GError **errp);

/* A hint that a request at byte @offset will be submitted soon (a trace replay knows its next
 * requests): the FTL starts loading the mapping entry of its first page into the CPU's cache,
 * whose miss was most of a random replay's time; with @deep, called later when the entry is
 * there, also what the entry points at (the old copy's block, which a write invalidates).
 * Changes nothing the model reports; ignored by an FTL without the hook. */
void nh_engine_prefetch(const NhEngine *eng, uint64_t offset, bool deep);

/* How many host stream identifiers (1..n) NhRequest.stream may carry; 0 when placement is off or
 * the FTL cannot place (a request with stream > limit is refused by nh_engine_submit with a
 * GError). */
uint32_t nh_engine_stream_limit(const NhEngine *eng);
/* The physical streams (write frontiers) those tags map onto, untagged writes' included: with
 * fewer than limit + 1, host streams share one (ftl.placement.shared_streams); 0 as above. */
uint32_t nh_engine_stream_fronts(const NhEngine *eng);
/* What the placement keys asked for, typed, for a front end that names them (fdp.c): streams
 * as given (NH_CONFIG_AUTO for auto), and whether stream-map is dstream. */
typedef struct NhPlacementAsked {
    uint64_t streams;
    bool     dstream;
} NhPlacementAsked;
NhPlacementAsked nh_engine_placement_asked(const NhEngine *eng);
/* The host released stream @id (NVMe Streams Release Identifier / Release Resources): its
 * logical stream ends; what the engine does with its frontier is documented in
 * docs/placement.md.  An @id that is 0, above the limit or not open is ignored. */
void nh_engine_stream_release(NhEngine *eng, uint16_t id);

/*
 * Reclaim units (NVMe Flexible Data Placement, docs/placement.md): a placement tag's frontier
 * fills one open block on every plane at a time, so its reclaim unit is a superblock of
 * nh_engine_unit_bytes() (0 when the FTL cannot place).  nh_engine_stream_unit_left() gives
 * the bytes still free in the unit tag @tag writes into now (the whole unit when its next write
 * opens a new one); nh_engine_stream_unit_close() closes that unit as it is, unpadded, so the
 * tag's next write starts a new one, and returns the bytes it left unwritten.  Both are 0 for a
 * tag above nh_engine_stream_limit() or when the FTL cannot place.
 */
uint64_t nh_engine_unit_bytes(const NhEngine *eng);
uint64_t nh_engine_stream_unit_left(NhEngine *eng, uint16_t tag);
uint64_t nh_engine_stream_unit_close(NhEngine *eng, uint16_t tag);

/*
 * What the host and the flash wrote, for NVMe's FDP statistics log: the bytes of every write
 * request (host.write_bytes), the pages programmed (nand.page_programs: GC copies, translation
 * pages and wear levelling included) and the blocks erased (nand.block_erases), in bytes.
 * media_written / host_written is `waf` when every write covers whole pages.
 */
typedef struct NhMediaBytes {
    uint64_t host_written, media_written, media_erased;
} NhMediaBytes;
void nh_engine_media_bytes(const NhEngine *eng, NhMediaBytes *m);

/*
 * Does the device have a volatile write cache (a write buffer with buffer-volatile in force, or
 * staging with stage-volatile=on)?
 * Then Flush and FUA writes drain it, and Identify should report VWC.  Fixed at creation.
 */
bool nh_engine_volatile_write_cache(const NhEngine *eng);

/*
 * Write back everything volatile (a volatile write buffer's dirty pages, the FTL's cached
 * state) as a Flush would, but as the device's own doing: no host command is counted.  A
 * durable (capacitor-backed, STT-MRAM) write buffer keeps its pages, as it does on a Flush.
 * Returns when the flash work completes.
 */
uint64_t nh_engine_drain(NhEngine *eng, uint64_t now);

/*
 * The end of a run (the simulator's end of trace, preconditioning, the device's clean
 * shutdown): nh_engine_drain(), but a durable write buffer is destaged too, as a real one is
 * written to flash when power goes off cleanly; what it cost is counted both in the ordinary
 * counters (so waf covers every page the host wrote) and on its own under drain.* in the
 * statistics.  The GC operations the scheduler still holds (sched.queued_ops, counted when
 * issued) run too, so that their die time is in nand.die_busy_ns: none is left queued.  Front
 * ends call it before a clean nh_engine_save(), which refuses to save while the write buffer
 * holds dirty pages (the image's mapping would not have them).  Returns when the drain and
 * that GC complete (every die and channel done).
 */
uint64_t nh_engine_finish(NhEngine *eng, uint64_t now);

/*
 * The device idles from @now: background GC runs as on an idle device, victim after victim,
 * until no plane needs one: every plane is back at gc-high, also one that had not fallen
 * below gc-low (NhFtlOps.idle).  Returns when that work
 * completes (every die and channel done); the number of victims in *victims.
 */
uint64_t nh_engine_idle(NhEngine *eng, uint64_t now, uint64_t *victims);

/*
 * How the device was conditioned before the run (the simulator's --fill), reported under
 * conditioning.* in the statistics until they are reset: call it after nh_engine_stats_reset().
 */
typedef struct NhConditioning {
    uint64_t fill_bytes;        /* the region written sequentially, then overwritten at random */
    uint64_t seq_writes, rand_writes;
    uint64_t rand_erases;       /* blocks erased during the random phase */
    uint64_t idle_gc_blocks;    /* victims the idle GC at its end reclaimed */
    bool     steady;            /* the erase rule, not the cap on writes, ended it */
} NhConditioning;
void nh_engine_set_conditioning(NhEngine *eng, const NhConditioning *c);

/*
 * Power fails.  What a volatile write buffer held dirty is lost: @lost is told each lost byte
 * range (sector granular) so the front end can make the data match (the device puts back what
 * the sectors held before, or zeroes), and the model forgets it.  Every lost page has left the
 * buffer before the first call, so requests served meanwhile (a front end's event loop) find
 * it consistent.  A capacitor-backed buffer loses nothing, nor does the staging area
 * (stripe-merge, one-shot) unless stage-volatile=on: then every page staged and not yet being
 * programmed is lost, @lost told its bytes (whole pages), and the FTL maps what was programmed:
 * the page's earlier version, or nothing.  A unit whose program has started survives.  The
 * engine stays usable.
 * Power fails at @now (the front end's clock, >= every arrival so far): zoned writes and
 * appends not complete by then are lost too, a zone's write pointer going back to where its
 * data completed by @now ends (@lost told the bytes after it), and open zones close as at a
 * controller reset (docs/zoned.md).
 */
typedef void (*NhEngineLostFn)(void *opaque, uint64_t offset, uint64_t length);
void nh_engine_power_loss(NhEngine *eng, uint64_t now, NhEngineLostFn lost, void *opaque);

/*
 * Zoned region (NVMe Zoned Namespace Command Set; docs/zoned.md).  With zones=N (the zones
 * part's keys) the logical space has a second region after the conventional one: N zones, each
 * a fixed set of erase blocks laid over zone-width planes by the zone mapping, written only in
 * order at the zone's write pointer, never garbage collected.  Conventional bytes are
 * [0, nh_engine_zone_base()); zone z is [base + z * cap, base + (z + 1) * cap), cap =
 * nh_engine_zone_capacity().  The zone size the host sees (a power of two, with the LBA gap
 * after cap) is the front end's business; the engine's zoned space is dense.
 *
 * The engine keeps every zone's state and write pointer, so the device and the simulator share
 * one state machine.  nh_engine_submit() on the zoned region: a write must start at its zone's
 * write pointer and stay in the zone; it opens the zone implicitly within the open and active
 * limits, and a zone written to its capacity is full.  Reads below the write pointer read the
 * zone's pages; reads above it are unwritten reads.  Trim is refused there (a zone is reset,
 * not deallocated).  Zoned writes bypass the write buffer: durable when they complete.
 * Failures carry NH_ZONE_ERROR and an NhZoneError, which a front end maps to the status the
 * specification names; the model is unchanged by a refused request or action.
 */
typedef enum NhZoneState {      /* the specification's zone state values */
    NH_ZONE_EMPTY = 0x1,
    NH_ZONE_IMP_OPEN = 0x2,
    NH_ZONE_EXP_OPEN = 0x3,
    NH_ZONE_CLOSED = 0x4,
    NH_ZONE_READ_ONLY = 0xd,
    NH_ZONE_FULL = 0xe,
    NH_ZONE_OFFLINE = 0xf,
} NhZoneState;

typedef enum NhZoneAction {     /* Zone Management Send's actions */
    NH_ZONE_CLOSE = 0x1,
    NH_ZONE_FINISH = 0x2,
    NH_ZONE_OPEN = 0x3,
    NH_ZONE_RESET = 0x4,
    NH_ZONE_OFFLINE_ACT = 0x5,
} NhZoneAction;

typedef enum NhZoneError {
    NH_ZONE_ERR_BOUNDARY,           /* the request crosses its zone's end */
    NH_ZONE_ERR_FULL,
    NH_ZONE_ERR_READ_ONLY,
    NH_ZONE_ERR_OFFLINE,
    NH_ZONE_ERR_INVALID_WRITE,      /* not at the write pointer */
    NH_ZONE_ERR_TOO_MANY_ACTIVE,
    NH_ZONE_ERR_TOO_MANY_OPEN,
    NH_ZONE_ERR_INVALID_TRANSITION,
    NH_ZONE_ERR_INVALID,            /* no such zone, or trim on the zoned region */
} NhZoneError;

#define NH_ZONE_ERROR nh_zone_error_quark()
GQuark nh_zone_error_quark(void);

#define NH_ZONE_ALL UINT32_MAX      /* nh_engine_zone_action's Select All */

typedef struct NhZoneInfo {
    NhZoneState state;
    uint64_t    start;      /* engine offset of the zone's first byte */
    uint64_t    wp;         /* bytes written from start (the write pointer, relative) */
} NhZoneInfo;

/* 0 when the configuration has no zoned region. */
uint32_t nh_engine_zones(const NhEngine *eng);
uint64_t nh_engine_zone_base(const NhEngine *eng);
uint64_t nh_engine_zone_capacity(const NhEngine *eng);
/* The open and active limits in force (0 = no limit). */
uint32_t nh_engine_zone_max_open(const NhEngine *eng);
uint32_t nh_engine_zone_max_active(const NhEngine *eng);
bool nh_engine_zone_info(const NhEngine *eng, uint32_t zone, NhZoneInfo *info);
/* Zone Append: @length bytes at zone @zone's write pointer; *offset receives where they went. */
bool nh_engine_zone_append(NhEngine *eng, uint32_t zone, uint64_t length, uint32_t flags,
                           uint64_t now, uint64_t *offset, uint64_t *done, GError **errp);
/* Zone Management Send on @zone, or with NH_ZONE_ALL on every zone in a state the action
 * selects (the specification's Select All).  Reset erases the zone's written blocks and finish
 * completes the zone with its timing; both occupy the dies they touch. */
bool nh_engine_zone_action(NhEngine *eng, NhZoneAction action, uint32_t zone, uint64_t now,
                           uint64_t *done, GError **errp);

/* Is the logical page holding byte @offset mapped (written and not trimmed)? */
bool nh_engine_is_mapped(const NhEngine *eng, uint64_t offset);

/*
 * Statistics as one JSON document (see docs/statistics.md for every key).  The caller frees the
 * string with g_free().
 */
char *nh_engine_stats_json(const NhEngine *eng, bool pretty);

/* Zero every counter and latency histogram; model state (mapping, wear) is kept. */
void nh_engine_stats_reset(NhEngine *eng);

/*
 * Persistence of the model state (mapping, validity, wear, counters) across runs with the same
 * backing store, in one self-checking file:
 *  - nh_engine_save() writes the image to @path atomically (temp file + rename), marked clean,
 *    together with an opaque blob @fe of the front end's own (e.g. SMART counters).
 *  - nh_engine_load() restores an image written by an engine with the same configuration and
 *    capacity; on a mismatch or a damaged file it fails and leaves the engine as it was.  *fe
 *    receives the front end's blob.  If the image is not marked clean (the front end died after
 *    loading it), only wear and counters are restored; the mapping starts empty and *was_clean is
 *    false, so the front end can rebuild it with nh_engine_mark_written().
 *  - nh_engine_state_mark_dirty() flips the image at @path to "not clean" in place, cheaply; a
 *    front end calls it right after loading so that a crash is recognised on the next start.
 */
bool nh_engine_save(const NhEngine *eng, const char *path, const void *fe, size_t fe_len,
                    GError **errp);
bool nh_engine_load(NhEngine *eng, const char *path, GBytes **fe, bool *was_clean,
                    GError **errp);
bool nh_engine_state_mark_dirty(const char *path, GError **errp);

/*
 * While a front end runs, its state file is dirty and only its wear, counters and blob would be
 * used after a crash.  nh_engine_checkpoint() rewrites it (atomically, still dirty) with the
 * current counters, wear and @fe but no mapping, so that lifetime counters survive a crash
 * instead of rolling back to the last clean save.  Cheap: a few KiB for any device size.
 */
bool nh_engine_checkpoint(const NhEngine *eng, const char *path, const void *fe, size_t fe_len,
                          GError **errp);

/* Wear summary, for SMART's Percentage Used: erase counts and the cell's P/E-cycle rating. */
typedef struct NhWear {
    uint32_t erase_min, erase_max;
    double   erase_mean;
    uint32_t pe_cycles;
} NhWear;
void nh_engine_wear(const NhEngine *eng, NhWear *wear);

/*
 * Rebuild after an unclean stop: mark the range [offset, offset+length) as written, in order,
 * as if the host had written it once.  Counters are not touched.  Used with the backend's
 * allocation map so that the model is consistent with the data after a crash.
 */
void nh_engine_mark_written(NhEngine *eng, uint64_t offset, uint64_t length);

/*
 * Full consistency check of the model (mapping both ways, valid counts, block accounting, NAND
 * programming discipline).  Slow: walks every page.  For tests and debugging.
 */
bool nh_engine_check(const NhEngine *eng, GError **errp);

#endif
