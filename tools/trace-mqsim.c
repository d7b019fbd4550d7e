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


/* Zone operations' types, after 0 (write) and 1 (read): append, then Zone Management Send's
 * actions. */
static const uint8_t zone_types[] = {
    NH_TRACE_ZONE_APPEND, NH_ZONE_RESET, NH_ZONE_FINISH, NH_ZONE_OPEN, NH_ZONE_CLOSE,
    NH_ZONE_OFFLINE_ACT,
};

/* A zone operation (type 2..7): an append of @n sectors to the zone holding sector @f_lba, or
 * an action on it (sectors 0), on every zone the action selects with lba `all`. */
static int parse_zone(NhTraceParse *tr, char **f, uint64_t type, NhTraceRec *rec,
                      const char **why)
{
    uint64_t lba = 0, n;
    bool all = !strcmp(f[2], "all");

    if ((!all && !to_u64(f[2], 10, &lba)) || !to_u64(f[3], 10, &n)) {
        *why = "a field is not a non-negative integer";
        return -1;
    }
    rec->zone = zone_types[type - 2];
    rec->op = NH_OP_WRITE;
    if (rec->zone == NH_TRACE_ZONE_APPEND) {
        if (all) {
            *why = "an append (type 2) names its zone by an lba in it, not all";
            return -1;
        }
        return trace_lba_range(tr, lba, n, rec, why);
    }
    if (n) {
        *why = "a zone action (types 3-7) has 0 sectors";
        return -1;
    }
    if ((*why = trace_sectors_why(tr, "lba", lba))) {
        return -1;
    }
    rec->zone |= all ? NH_TRACE_ZONE_ALL : 0;
    rec->offset = lba * 512;
    rec->length = 0;
    return 1;
}

/*
 * MQSim / DiskSim ASCII: time_ns device lba(512 B) sectors type(0 write, 1 read), and optionally
 * a sixth field, the write's placement tag (stream identifier, 0 untagged).  The device number
 * is ignored: all devices are folded into one address space (their LBAs overlap).  Zoned
 * traces (docs/simulator.md) add types 2 (zone append), 3 (reset), 4 (finish), 5 (open),
 * 6 (close) and 7 (offline); an action's lba may be `all` (Select All).  Type 8 deallocates
 * (trim), so that the same workload can delete data on a conventional device.
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
        !*skip_blanks(p) && type <= 1 && n && n <= MAX_SECTORS && lba <= MAX_SECTORS &&
        stream <= UINT16_MAX) {
        rec->time_ns = t;
        rec->op = type ? NH_OP_READ : NH_OP_WRITE;
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
    if (!to_u64(f[0], 10, &t) || !to_u64(f[1], 10, &dev) || !to_u64(f[4], 10, &type)) {
        *why = "a field is not a non-negative integer";
        return -1;
    }
    if (type > 8) {
        *why = "type must be 0 (write), 1 (read), 8 (trim) or a zone operation: 2 (append), "
               "3 (reset), 4 (finish), 5 (open), 6 (close), 7 (offline)";
        return -1;
    }
    rec->time_ns = t;
    rec->stream = (uint16_t)stream;
    if (type >= 2 && type <= 7) {
        return parse_zone(tr, f, type, rec, why);
    }
    if (!to_u64(f[2], 10, &lba) || !to_u64(f[3], 10, &n)) {
        *why = "a field is not a non-negative integer";
        return -1;
    }
    if (trace_lba_range(tr, lba, n, rec, why) < 0) {
        return -1;
    }
    rec->time_ns = t;
    rec->op = type == 8 ? NH_OP_TRIM : type ? NH_OP_READ : NH_OP_WRITE;
    rec->stream = (uint16_t)stream;
    return 1;
}
