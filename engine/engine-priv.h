/*
 * engine-priv.h - the engine's insides, shared by engine.c, state.c and the unit tests.
 * Front ends use engine.h only.
 */
#ifndef NH_ENGINE_PRIV_H
#define NH_ENGINE_PRIV_H

#include "engine.h"
#include "ftl.h"
#include "part.h"
#include "nand.h"
#include "stats.h"
#include "buffer.h"
#include "zones.h"

struct NhEngine {
    NhConfig        cfg;            /* blocks resolved */
    uint64_t        capacity;       /* bytes of the logical space the front end uses */
    uint64_t        lpages;         /* pages covering capacity */
    uint64_t        logical_bytes;  /* what the geometry offers after op */
    NhStats         stats;
    NhNand         *nand;
    const NhFtlOps *ops;
    void           *ftl;
    NhBuf          *buf;            /* write buffer and read cache; NULL = neither */
    void           *settings[NH_PARTS];     /* the parts' decoded settings (part.h) */
    NhParts         parts;          /* those settings and the parts' counters */
    NhZoned        *zoned;          /* the zoned region (zones.h); NULL = none */
    uint64_t        zone_base;      /* its first byte: the capacity, rounded up to a page */
    uint64_t        last_now;
    uint64_t        priority_until; /* completion of the latest priority request */
    /* host-mbps: the transfers booked on the link that have not ended by the latest arrival,
     * [start, end) pairs in time order, device to host (reads) and host to device (writes) */
    GArray         *link_out, *link_in;
};

/*
 * The statistics table (engine/stats.c): every key of the statistics document, in its order.
 * Counters every device has are fields of NhStats; a policy's own counters come from its
 * table (NhStat) with slots in NhStats.policy; derived values are computed when the document
 * is built.  docs/statistics.md documents each path (tests/unit/test-stats.c checks it).
 */
typedef enum NhStatsHow {
    NH_ENTRY_COUNTER,           /* a uint64_t of NhStats at offset */
    NH_ENTRY_HIST,              /* an NhHist of NhStats at offset */
    NH_ENTRY_POLICY,            /* a policy's counter: stat, from slot offset of NhStats.policy */
    NH_ENTRY_NOW,               /* a policy's or part's fact of the moment (NH_STAT_NOW) */
    NH_ENTRY_DERIVED,           /* derive() */
    NH_ENTRY_DERIVED_DOUBLE,    /* derive_double() */
    NH_ENTRY_CONFIG,            /* every configuration key with its canonical text */
} NhStatsHow;

struct NhStatsCtx;

typedef struct NhStatsEntry {
    const char *path;
    NhStatsHow  how;
    size_t      offset;
    const NhStat *stat;
    const char *buffer;         /* shown only with this buffer policy in force; NULL = always */
    const NhConfigKey *keys;    /* a policy's counter: its keys (their values, element's own) */
    size_t      part;           /* a part's counter: its NH_PART_* + 1 (its settings, own) */
    uint64_t (*derive)(const struct NhStatsCtx *c);
    double (*derive_double)(const struct NhStatsCtx *c);
} NhStatsEntry;

const NhStatsEntry *nh_stats_table(size_t *n);
bool nh_stats_entry_shown(const NhStatsEntry *e, const NhConfig *cfg);
/* Where the policy with counter table @counters keeps them in @s; NULL for a NULL table. */
uint64_t *nh_stats_policy_counters(NhStats *s, const NhStat *counters);

/*
 * The statistics document: the table's entries, wear from @nand's erase counts, the
 * configuration in force (every key, canonical text) and geometry facts.  Caller frees.
 */
char *nh_stats_json(const NhStats *s, const NhConfig *cfg, const NhParts *parts,
                    const NhNand *nand, uint64_t capacity, uint64_t logical_bytes, bool pretty);

/* The value at quantile @q (0..1): the upper edge of its bucket, capped at the maximum seen. */
uint64_t nh_hist_quantile(const NhHist *h, double q);

/* The values of the keys of @table (a policy's or part's, by its address) in @cfg, in the
 * table's order; NULL for a NULL table (engine/config.c composes where they are). */
const uint64_t *nh_config_slots(const NhConfig *cfg, const NhConfigKey *table);

/* Every part's settings for @cfg, decoded (part.h); nh_parts_free frees them. */
void nh_parts_decode(const NhConfig *cfg, void *settings[NH_PARTS]);
void nh_parts_free(void *settings[NH_PARTS]);

/* The decoded settings of part @index (NH_PART_*) in force in @eng. */
static inline const void *nh_engine_part(const NhEngine *eng, size_t index)
{
    return eng->settings[index];
}

/* The environment an FTL of @eng is created in. */
NhFtlEnv nh_engine_ftl_env(NhEngine *eng);

/* The zoned region of a new engine, when its configuration has zones (engine/zones.c). */
void nh_engine_zoned_create(NhEngine *eng);
/* Is request @req (offset >= zone_base) within the zoned region? */
bool nh_engine_zoned_range(const NhEngine *eng, const NhRequest *req, GError **errp);
/* A request on the zoned region, its range checked, modelled; the host counters
 * and latencies are the caller's. */
bool nh_engine_zoned_submit(NhEngine *eng, const NhRequest *req, uint64_t now, uint64_t *done,
                            GError **errp);

/* Every request and zone operation goes through the same steps: its arrival time checked
 * (nh_engine_check_now, before anything changes), time brought to it for the rest of the
 * device (nh_engine_arrive: the scheduler, background cleaning, deferred while a priority
 * request is outstanding; it returns when the request, @req or NULL for a zone action, is
 * past the controller's firmware, fw-*), then its completion reported (nh_engine_complete:
 * latency=zero, the run's end). */
bool nh_engine_check_now(uint64_t now, GError **errp);
uint64_t nh_engine_arrive(NhEngine *eng, uint64_t now, const NhRequest *req);
void nh_engine_complete(NhEngine *eng, uint64_t now, uint64_t t, uint64_t *done);
/* The host counters of a request that arrived at @now and completes at @t. */
void nh_engine_count_host(NhEngine *eng, const NhRequest *req, uint64_t now, uint64_t t);
/* @bytes over one direction of the host link (host-mbps), ready at @ready: when they have
 * crossed; *slot says where the booking went, for nh_engine_host_unbook() when the request
 * is refused after all (the model is unchanged by a refused request). */
uint64_t nh_engine_host_link(NhEngine *eng, GArray *link, uint64_t ready, uint64_t bytes,
                             guint *slot);
void nh_engine_host_unbook(GArray *link, guint slot);
/* How long @bytes take over one direction of @cfg's host link (host-mbps > 0), packet
 * overhead (host-mps) included. */
uint64_t nh_engine_link_time(const NhConfig *cfg, uint64_t bytes);

/* Hash of everything that shapes the saved state: geometry, FTL, cell, capacity. */
uint64_t nh_engine_state_hash(const NhEngine *eng);

#endif
