/*
 * priority.h - the response times of the requests a trace marks as priority and of the others,
 * kept apart (nvme-hybrid-sim's `priority` member, docs/simulator.md).  Seed 001's priority-aware
 * cleaning trades one class's response time for the other's; the engine's latency histograms
 * hold both classes together.
 */
#ifndef NH_PRIORITY_H
#define NH_PRIORITY_H

#include <stdbool.h>
#include <stdint.h>
#include <json-glib/json-glib.h>

#include "engine.h"

typedef struct NhPrioLat NhPrioLat;

NhPrioLat *nh_prio_lat_new(void);
/* One read's or write's response time (other operations are not sampled, as in the engine). */
void nh_prio_lat_add(NhPrioLat *p, NhOp op, bool priority, uint64_t latency_ns);
/* Reads and writes sampled as priority so far. */
uint64_t nh_prio_lat_marked(const NhPrioLat *p);
/* { requests, told, latency_ns: { priority: { read, write }, other: { read, write } } }, each
 * histogram { count, mean, p50, p99, max } with exact nearest-rank quantiles.  @told: whether
 * the engine was given the marks (false with --no-priority). */
JsonObject *nh_prio_lat_json(NhPrioLat *p, bool told);
void nh_prio_lat_free(NhPrioLat *p);

#endif
