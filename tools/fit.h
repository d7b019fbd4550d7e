/*
 * fit.h - make a trace fit a chosen device (nvme-hybrid-sim --fit).
 *
 * Real traces (MSR Cambridge, SPC, FIU) span hundreds of GiB of LBA space and touch a few.
 *   compact  the touched extents (the union of every request's byte range, widened to whole
 *            units, normally flash pages) are laid out densely from offset 0 in address order:
 *            their order, their gaps' absence and every offset inside an extent (so page
 *            alignment) are kept, only untouched space is dropped.
 *   modulo   every offset is folded into the capacity (offset mod capacity); a request that
 *            would then cross the end is moved back to end at the capacity.
 * Pass 1 of the simulator feeds every request to nh_fit_add(), then nh_fit_finish() builds the
 * map; pass 2 translates each request with nh_fit_map().
 */
#ifndef NH_FIT_H
#define NH_FIT_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include <json-glib/json-glib.h>

typedef enum NhFitMode { NH_FIT_COMPACT = 1, NH_FIT_MODULO } NhFitMode;

typedef struct NhFit NhFit;

typedef struct NhFitReport {
    const char *mode;       /* "compact" or "modulo" */
    uint64_t span_bytes;    /* the highest byte the trace touches, plus one */
    uint64_t touched_bytes; /* bytes of the touched extents (unit-rounded union) */
    uint64_t extents;       /* touched extents after merging neighbours */
    uint64_t fitted_bytes;  /* compact: the dense space; modulo: the capacity */
    uint64_t moved_back;    /* modulo: requests moved back not to cross the end */
} NhFitReport;

/* "compact" or "modulo"; anything else is an error naming the choices. */
bool nh_fit_parse_mode(const char *text, NhFitMode *mode, GError **errp);
/* @unit: extent granularity in bytes (the mapping unit: the flash page or map-unit), a power
 * of two. */
NhFit *nh_fit_new(NhFitMode mode, uint32_t unit);
void nh_fit_add(NhFit *f, uint64_t offset, uint64_t length);
/* Builds the map.  @capacity 0: choose one (compact: the dense space rounded up to a GiB, at
 * least 1 GiB; modulo needs one).  The capacity in force goes to *capacity; a compacted trace
 * that does not fit a given one is an error with the sizes. */
bool nh_fit_finish(NhFit *f, uint64_t *capacity, GError **errp);
/* Translates a request of pass 2 (the same sequence as pass 1). */
uint64_t nh_fit_map(NhFit *f, uint64_t offset, uint64_t length);
const NhFitReport *nh_fit_report(const NhFit *f);
/* One line for people: the mode, the span, what the trace touched and where it went. */
char *nh_fit_summary(const NhFit *f);
/* The "fit" member of the simulator's statistics document: the report's fields. */
JsonObject *nh_fit_json(const NhFit *f);
void nh_fit_free(NhFit *f);

#endif
