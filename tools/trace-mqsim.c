/* trace-mqsim.c - MQSim / DiskSim ASCII traces, the simulator's own format (trace-format.h). */
#include "trace-format.h"

static inline const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    return p;
}

/* One blank-separated decimal field at *pp, leaving *pp after it: the replay's hot path reads
 * a field in one pass instead of splitting the line first.  False for anything else (the
 * caller then diagnoses the line the slow way).  (Eight digits at a time, SWAR, took more
 * instructions and no less time on fields of a few digits.) */
static inline bool scan_u64(const char **pp, uint64_t *v)
{
    const char *p = skip_blanks(*pp);
    uint64_t x = 0;
    unsigned d;

    if ((d = (unsigned)(*p - '0')) > 9) {
        return false;
    }
    do {
        if (x >= UINT64_MAX / 10 && (x > UINT64_MAX / 10 || d > UINT64_MAX % 10)) {
            return false;
        }
        x = x * 10 + d;
    } while ((d = (unsigned)(*++p - '0')) <= 9);
    if (*p && *p != ' ' && *p != '\t') {
        return false;
    }
    *pp = p;
    *v = x;
    return true;
}


/*
 * MQSim / DiskSim ASCII: time_ns device lba(512 B) sectors type, and optionally a sixth field,
 * the write's placement tag (stream identifier, 0 untagged).  The type is DiskSim's flags as far
 * as they concern a request: bit 0 read (MQSim's 0 write, 1 read), bit 1 TIME_CRITICAL, which
 * marks a priority request (2 a priority write, 3 a priority read), the class DiskSim's
 * priority queueing and seed 001's priority-aware cleaning serve first.  The device number is
 * ignored: all devices are folded into one address space (their LBAs overlap).
 */
int trace_parse_mqsim(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[7];
    const char *p = line;
    uint64_t t, dev, lba, n, type, stream = 0;
    int nf;

    /* a well-formed line in one pass; anything else below, which says what is wrong */
    if (scan_u64(&p, &t) && scan_u64(&p, &dev) && scan_u64(&p, &lba) && scan_u64(&p, &n) &&
        scan_u64(&p, &type) && (!*skip_blanks(p) || scan_u64(&p, &stream)) &&
        !*skip_blanks(p) && type <= 3 && n && n <= MAX_SECTORS && lba <= MAX_SECTORS &&
        stream <= UINT16_MAX) {
        rec->time_ns = t;
        rec->op = type & 1 ? NH_OP_READ : NH_OP_WRITE;
        rec->priority = type & 2;
        rec->offset = lba * 512;
        rec->length = n * 512;
        rec->stream = (uint16_t)stream;
        return 1;
    }
    nf = trace_split(line, false, f, 6);
    if (nf != 5 && nf != 6) {
        *why = "expected 5 or 6 fields: time_ns device lba sectors type [stream]";
        return -1;
    }
    if (nf == 6 && (!to_u64(f[5], 10, &stream) || stream > UINT16_MAX)) {
        *why = "stream must be an integer from 0 to 65535";
        return -1;
    }
    if (!to_u64(f[0], 10, &t) || !to_u64(f[1], 10, &dev) || !to_u64(f[2], 10, &lba) ||
        !to_u64(f[3], 10, &n) || !to_u64(f[4], 10, &type)) {
        *why = "a field is not a non-negative integer";
        return -1;
    }
    if (type > 3) {
        *why = "type must be 0 (write), 1 (read), 2 (priority write) or 3 (priority read)";
        return -1;
    }
    if (trace_lba_range(tr, lba, n, rec, why) < 0) {
        return -1;
    }
    rec->time_ns = t;
    rec->op = type & 1 ? NH_OP_READ : NH_OP_WRITE;
    rec->priority = type & 2;
    rec->stream = (uint16_t)stream;
    return 1;
}
