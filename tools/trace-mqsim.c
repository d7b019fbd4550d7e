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


/* Our operations beyond DiskSim's, named in the type column: trim (MQSim has none; a workload
 * deletes with it on a conventional device), and a zoned trace's append and Zone Management
 * Send's actions.  Words, not more numbers: the numbers are DiskSim's flags. */
static const struct {
    const char *word;
    uint8_t zone;       /* NhTraceRec.zone; 0 for trim */
} named_types[] = {
    { "trim", 0 }, { "append", NH_TRACE_ZONE_APPEND }, { "reset", NH_ZONE_RESET },
    { "finish", NH_ZONE_FINISH }, { "open", NH_ZONE_OPEN }, { "close", NH_ZONE_CLOSE },
    { "offline", NH_ZONE_OFFLINE_ACT },
};

#define TYPE_WHY "type must be 0 (write), 1 (read), 2 (priority write), 3 (priority read), " \
                 "trim, or a zone operation: append, reset, finish, open, close, offline"

/* A zone operation: an append of @n sectors to the zone holding sector @f_lba, or an action on
 * it (sectors 0), on every zone the action selects with lba `all`. */
static int parse_zone(NhTraceParse *tr, char **f, uint8_t zone, NhTraceRec *rec,
                      const char **why)
{
    uint64_t lba = 0, n;
    bool all = !strcmp(f[2], "all");

    if ((!all && !to_u64(f[2], 10, &lba)) || !to_u64(f[3], 10, &n)) {
        *why = "a field is not a non-negative integer";
        return -1;
    }
    rec->zone = zone;
    rec->op = NH_OP_WRITE;
    if (zone == NH_TRACE_ZONE_APPEND) {
        if (all) {
            *why = "an append names its zone by an lba in it, not all";
            return -1;
        }
        return trace_lba_range(tr, lba, n, rec, why);
    }
    if (n) {
        *why = "a zone action (reset, finish, open, close, offline) has 0 sectors";
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

/* The type column as a word (named_types); -1 if it is none of them. */
static int named_type(const char *word)
{
    for (size_t i = 0; i < G_N_ELEMENTS(named_types); i++) {
        if (!strcmp(word, named_types[i].word)) {
            return (int)i;
        }
    }
    return -1;
}

/*
 * MQSim / DiskSim ASCII: time_ns device lba(512 B) sectors type, and optionally a sixth field,
 * the write's placement tag (stream identifier, 0 untagged).  A numeric type is DiskSim's flags
 * as far as they concern a request: bit 0 read (MQSim's 0 write, 1 read), bit 1 TIME_CRITICAL,
 * which marks a priority request (2 a priority write, 3 a priority read), the class DiskSim's
 * priority queueing and seed 001's priority-aware cleaning serve first.  Our own operations
 * are words (named_types; docs/simulator.md): trim, and a zoned trace's append, reset, finish,
 * open, close and offline, whose lba may be `all` (Select All).  The device number is ignored:
 * all devices are folded into one address space (their LBAs overlap).
 */
int trace_parse_mqsim(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[7];
    const char *p = line;
    uint64_t t, dev, lba, n, type = 0, stream = 0;
    int nf, named;

    /* a well-formed line in one pass; anything else below, which says what is wrong */
    if (scan_u64(&p, &t) && scan_u64(&p, &dev) && scan_u64(&p, &lba) && scan_u64(&p, &n) &&
        scan_u64(&p, &type) && (!*skip_blanks(p) || scan_u64(&p, &stream)) &&
        !*skip_blanks(p) && type <= 3 && n && n <= MAX_SECTORS && lba <= MAX_SECTORS &&
        stream <= UINT16_MAX) {
        rec->time_ns = t;
        rec->op = type & 1 ? NH_OP_READ : NH_OP_WRITE;
        rec->priority = (type & 2) != 0;
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
    if (!to_u64(f[0], 10, &t) || !to_u64(f[1], 10, &dev)) {
        *why = "a field is not a non-negative integer";
        return -1;
    }
    named = named_type(f[4]);
    if (named < 0 && (!to_u64(f[4], 10, &type) || type > 3)) {
        *why = TYPE_WHY;
        return -1;
    }
    rec->time_ns = t;
    rec->stream = (uint16_t)stream;
    if (named > 0) {
        return parse_zone(tr, f, named_types[named].zone, rec, why);
    }
    if (!to_u64(f[2], 10, &lba) || !to_u64(f[3], 10, &n)) {
        *why = "a field is not a non-negative integer";
        return -1;
    }
    if (trace_lba_range(tr, lba, n, rec, why) < 0) {
        return -1;
    }
    rec->op = named == 0 ? NH_OP_TRIM : type & 1 ? NH_OP_READ : NH_OP_WRITE;
    rec->priority = (type & 2) != 0;
    return 1;
}
