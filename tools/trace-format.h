/*
 * trace-format.h - what a trace format's parser is given and must do.  The reader (trace.c)
 * cuts the file into lines and calls the format's parser once per line; one file per format
 * family (trace-mqsim.c, trace-csv.c, trace-fiu.c, trace-blkparse.c, trace-fio.c) and the field
 * readers they share (trace-fields.c).  trace.h is the reader's own contract.
 */
#ifndef NH_TRACE_FORMAT_H
#define NH_TRACE_FORMAT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

/* What a parser sees of the reader, and keeps across lines; the reader clears the per-format
 * fields when it rewinds. */
typedef struct NhTraceParse {
    uint64_t lineno;        /* of the line being parsed, 1 for the first */
    int      fio_version;   /* fio: from the header line */
    uint64_t fio_clock_ns;  /* fio v2: the sum of the waits so far */
    bool     in_summary;    /* blkparse: past the events, in the per-CPU summary */
    char    *why;           /* a malformed line's reason that names a value (trace_whyf) */
} NhTraceParse;

/* Parse one line into @rec.  Returns 1 for a request, 0 for a line to skip, -1 with *why set
 * (a static string or one from trace_whyf). */
typedef int (*NhTraceParseFn)(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why);

int trace_parse_mqsim(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why);
int trace_parse_cpcsv(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why);
int trace_parse_msr(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why);
int trace_parse_spc(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why);
int trace_parse_fiu(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why);
int trace_parse_blkparse(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why);
int trace_parse_fio(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why);

/* 512-byte sectors: the most an address or a count may be, 2^54 - 1, so that in bytes both
 * and their sum fit in 64 bits. */
#define MAX_SECTORS (UINT64_MAX >> 10)

/* A parser's reason that names the value at fault; valid until the next one. */
const char *trace_whyf(NhTraceParse *t, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Why a sector address or count @v, the format's field @name, is refused; NULL if it is not. */
const char *trace_sectors_why(NhTraceParse *t, const char *name, uint64_t v);
/* Why the byte range [@offset, +@length) is refused, an empty one or one that ends beyond 2^64
 * bytes, with the format's names @off and @len for the fields; NULL if it is not. */
const char *trace_range_why(NhTraceParse *t, uint64_t offset, uint64_t length, const char *off,
                            const char *len);
/* @n sectors at sector @lba (fields "lba" and "sectors", as mqsim and FIU name them) into @rec's
 * offset and length: 1, or -1 with *why set when @n is 0 or either is out of range. */
int trace_lba_range(NhTraceParse *t, uint64_t lba, uint64_t n, NhTraceRec *rec, const char **why);
/* Split at blanks (@csv false) or commas; returns the field count, max + 1 if there are more. */
int trace_split(char *p, bool csv, char **fields, int max);
/* Seconds with an optional fraction of up to 9 digits ("12", "0.551706"), exactly, in ns. */
bool trace_seconds_to_ns(const char *s, uint64_t *ns);

/* A whole field as an unsigned number in @base; inline, as every format reads its numbers
 * through it. */
static inline bool to_u64(const char *s, int base, uint64_t *v)
{
    char *end;
    if (!*s || *s == '-') {
        return false;
    }
    if (base == 10) {
        /* the replay's hot path: strtoull's locale and errno handling cost a third of it */
        uint64_t x = 0;
        for (; *s; s++) {
            unsigned d = (unsigned)(*s - '0');
            if (d > 9 || x > (UINT64_MAX - d) / 10) {
                return false;
            }
            x = x * 10 + d;
        }
        *v = x;
        return true;
    }
    errno = 0;
    *v = strtoull(s, &end, base);
    return !errno && *end == '\0';
}

#endif
