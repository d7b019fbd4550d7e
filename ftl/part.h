/*
 * part.h - the engine's parts that are not policies (the flash scheduler, write allocation,
 * staging, placement), and their registry.
 *
 * Contract:
 *  - A part is one file defining one NhPart (nh_part_<file>) and one name in meson.build's list
 *    `parts`.  It exports its keys, its counters, what FTL features its settings need and its
 *    cross-key check; the engine composes the configuration, the checks, the statistics
 *    document and the state file from the registry.  It names a part only to answer for it
 *    (placement's streams, engine.h).
 *  - Typed settings: a part decodes its keys once, into its own settings struct, when a
 *    configuration is checked and when an engine is created; what runs after that reads the
 *    struct, never a key by name.  Decoding sees the device's keys (NhConfig's fields), the
 *    part's own values and the chosen FTL's features; checking also sees every part's settings.
 *  - Order: a part's keys and counters are listed in registry order, before the FTLs' own or,
 *    with keys_after_ftls / counters_after_ftls, after them.  The order is the configuration's
 *    and the statistics document's, which consumers and the golden files read.
 */
#ifndef NH_PART_H
#define NH_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "config.h"
#include "stats.h"

/* What a part decodes and checks. */
typedef struct NhPartIn {
    const NhConfig *cfg;    /* the device's keys */
    const uint64_t *keys;   /* the part's own values, in its table's order (config.h) */
    uint32_t features;      /* the chosen FTL's NhFtlFeature; 0 for an unknown FTL */
    uint32_t missing;       /* check: the features its settings need that the FTL lacks */
} NhPartIn;

typedef struct NhPart {
    const char *name;
    /* its keys, ended by an entry without a name; NULL = none (config.h) */
    const NhConfigKey *keys;
    /* its counters, ended by an entry without a path; NULL = none (stats.h) */
    const NhStat *counters;
    bool keys_after_ftls, counters_after_ftls;
    size_t size;            /* of its settings struct */
    void (*decode)(const NhPartIn *in, void *settings);
    /* the NhFtlFeature its settings need of the FTL; NULL = none */
    uint32_t (*needs)(const void *settings);
    /* cross-key checks; @all holds every part's settings by NH_PART_* index; NULL = none */
    bool (*check)(const NhPartIn *in, const void *settings, const void *const *all,
                  GError **errp);
    /* do its keys shape what the state file holds (frontiers, a section of its own), so that a
     * file saved under other values must not load?  They are then in the configuration hash
     * the file carries (engine/state.c).  NULL = never */
    bool (*shapes_state)(const void *settings);
} NhPart;

/* NH_PART_REGISTRY: X(file) for every part (nh-registry.h, generated from meson.build's list). */
#include "nh-registry.h"

#define NH_PART_DECLARE(file) extern const NhPart nh_part_##file;
NH_PART_REGISTRY(NH_PART_DECLARE)
#undef NH_PART_DECLARE

#define NH_PART_INDEX(file) NH_PART_##file,
enum { NH_PART_REGISTRY(NH_PART_INDEX) NH_PARTS };
#undef NH_PART_INDEX

/* The parts in registry order. */
extern const NhPart *const nh_parts[NH_PARTS];

/* One configuration's parts, decoded: what the FTLs and the engine read. */
typedef struct NhParts {
    const void *settings[NH_PARTS];
    uint64_t   *counters[NH_PARTS];     /* the engine's slots for each part's counters */
    /* a part's model of the moment for its NH_STAT_NOW counters (the zones part's zone
     * table, zones.h); NULL for a part without one */
    const void *model[NH_PARTS];
} NhParts;

#endif
