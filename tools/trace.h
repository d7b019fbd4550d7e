/*
 * trace.h - block-trace readers for the simulator.
 *
 * Contract: a reader yields one request per call with an absolute time in ns (as in the trace,
 * not yet made relative), an operation, and a byte range (empty for a flush).  A malformed line
 * is an error naming the file and line, or with nh_trace_skip_bad() is counted and passed over;
 * comment and blank lines are skipped.  Formats are listed in nh_trace_formats; each is one
 * parse function in the file of its family, tools/trace-*.c, behind trace-format.h (field
 * mappings: docs/simulator.md).
 */
#ifndef NH_TRACE_H
#define NH_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <glib.h>

#include "engine.h"

/* A zone operation of a zoned trace (NhTraceRec.zone): 0 for none, else one of these or an
 * NhZoneAction, with NH_TRACE_ZONE_ALL for the action's Select All. */
enum { NH_TRACE_ZONE_APPEND = 0x10, NH_TRACE_ZONE_ALL = 0x80 };

/* 32 bytes: the simulator keeps a trace's requests in memory (nvme-hybrid-sim.c). */
typedef struct NhTraceRec {
    uint64_t time_ns;
    uint64_t offset, length;    /* a zone action: offset names the zone, length 0 */
    uint8_t  op;        /* NhOp */
    uint8_t  zone;      /* a zone operation (above); op is then NH_OP_WRITE for an append */
    uint16_t stream;    /* placement tag (mqsim's optional sixth column), 0 = untagged */
    uint32_t line;      /* the trace line, for messages (UINT32_MAX beyond) */
} NhTraceRec;

typedef struct NhTrace NhTrace;

extern const char *const nh_trace_formats[];

NhTrace *nh_trace_open(const char *path, const char *format, GError **errp);
/* 1: *rec filled; 0: end of trace; -1: error in *errp */
int nh_trace_next(NhTrace *t, NhTraceRec *rec, GError **errp);
/* The line of the request nh_trace_next() returned last (1 for the first line). */
uint64_t nh_trace_line(const NhTrace *t);
/* Back to the first line; also forgets the malformed lines counted so far. */
bool nh_trace_rewind(NhTrace *t, GError **errp);
void nh_trace_skip_bad(NhTrace *t, bool skip);
/* Malformed lines passed over so far, and "file:line: why" of the first (NULL if none). */
uint64_t nh_trace_bad_lines(const NhTrace *t, const char **first);
void nh_trace_close(NhTrace *t);

#endif
