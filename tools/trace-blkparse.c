/* trace-blkparse.c - blkparse's text output of a blktrace capture (trace-format.h). */
#include "trace-format.h"

/*
 * blkparse's default text output: "maj,min cpu seq secs.nsecs pid action rwbs [sector + n]
 * [process]".  Only D events (issued to the device) are replayed, one request each: RWBS with
 * D is a discard, with W a write, with R a read, otherwise F alone a flush; other events and
 * the summary blkparse prints at the end are skipped.
 */
int trace_parse_blkparse(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[11];
    uint64_t maj, min, cpu, seq, ts, pid, sector, n = 0;
    char *comma;
    int nf;

    if (tr->in_summary || (g_str_has_prefix(line, "CPU") && g_ascii_isdigit(line[3])) ||
        g_str_has_prefix(line, "Total (")) {
        tr->in_summary = true;
        return 0;
    }
    nf = trace_split(line, false, f, 10);
    comma = strchr(f[0], ',');
    if (nf < 6 || !comma) {
        *why = "expected 'maj,min cpu seq time pid action ...'";
        return -1;
    }
    *comma = '\0';
    if (!to_u64(f[0], 10, &maj) || !to_u64(comma + 1, 10, &min) || !to_u64(f[1], 10, &cpu) ||
        !to_u64(f[2], 10, &seq) || !to_u64(f[4], 10, &pid)) {
        *why = "device, cpu, sequence and pid must be non-negative integers";
        return -1;
    }
    if (!trace_seconds_to_ns(f[3], &ts)) {
        *why = "time must be seconds.nanoseconds";
        return -1;
    }
    if (strcmp(f[5], "D") != 0) {
        return 0;
    }
    if (nf < 7) {
        *why = "a D event needs its RWBS field";
        return -1;
    }
    if (nf >= 10 && !strcmp(f[8], "+")) {
        if (!to_u64(f[7], 10, &sector) || !to_u64(f[9], 10, &n)) {
            *why = "sector and size must be non-negative integers";
            return -1;
        }
        if ((*why = trace_sectors_why(tr, "sector", sector)) ||
            (*why = trace_sectors_why(tr, "size", n))) {
            return -1;
        }
    }
    rec->time_ns = ts;
    rec->offset = n ? sector * 512 : 0;
    rec->length = n * 512;
    if (n && strchr(f[6], 'D')) {
        rec->op = NH_OP_TRIM;
    } else if (n && strchr(f[6], 'W')) {
        rec->op = NH_OP_WRITE;
    } else if (n && strchr(f[6], 'R')) {
        rec->op = NH_OP_READ;
    } else if (strchr(f[6], 'F')) {
        rec->op = NH_OP_FLUSH;
        rec->length = 0;
    } else {
        return 0;   /* no data and no flush: nothing reaches the flash */
    }
    return 1;
}
