/* trace-fiu.c - FIU's SRCMap traces (trace-format.h). */
#include "trace-format.h"

/*
 * FIU (SNIA IOTTA, Koller and Rangaswami): ts_ns pid process lba size W|R major minor [md5];
 * lba and size in 512 B sectors.  Device numbers are folded into one address space.
 */
int trace_parse_fiu(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[10];
    uint64_t ts, pid, lba, n, maj, min;
    int nf = trace_split(line, false, f, 9);

    if (nf < 8 || nf > 9) {
        *why = "expected 8 or 9 fields: ts_ns pid process lba sectors W|R major minor [md5]";
        return -1;
    }
    if (!to_u64(f[0], 10, &ts) || !to_u64(f[1], 10, &pid) || !to_u64(f[3], 10, &lba) ||
        !to_u64(f[4], 10, &n) || !to_u64(f[6], 10, &maj) || !to_u64(f[7], 10, &min)) {
        *why = "ts, pid, lba, sectors, major and minor must be non-negative integers";
        return -1;
    }
    if (!g_ascii_strcasecmp(f[5], "R")) {
        rec->op = NH_OP_READ;
    } else if (!g_ascii_strcasecmp(f[5], "W")) {
        rec->op = NH_OP_WRITE;
    } else {
        *why = "the operation must be W or R";
        return -1;
    }
    if (trace_lba_range(tr, lba, n, rec, why) < 0) {
        return -1;
    }
    rec->time_ns = ts;
    return 1;
}
