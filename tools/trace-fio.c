/* trace-fio.c - fio's iolog, versions 2 and 3 (trace-format.h). */
#include "trace-format.h"

/*
 * fio's iolog (--write_iolog): a header "fio version 2 iolog" or "fio version 3 iolog", then
 * "[usecs] file action [offset length]" lines, usecs since the start in version 3 only.
 * read, write and trim are replayed, sync and datasync as flushes; add, open and close are
 * skipped; version 2's "wait usecs" advances the clock.  All files are folded into one space.
 */
int trace_parse_fio(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[7];
    uint64_t ts = 0, off = 0, len = 0;
    const char *act;
    int nf, base;

    if (tr->lineno == 1) {
        if (!strcmp(line, "fio version 2 iolog") || !strcmp(line, "fio version 3 iolog")) {
            tr->fio_version = line[12] - '0';
            tr->fio_clock_ns = 0;
            return 0;
        }
        *why = "the first line must be 'fio version 2 iolog' or 'fio version 3 iolog'";
        return -1;
    }
    if (!tr->fio_version) {
        *why = "no fio iolog header on line 1";
        return -1;
    }
    nf = trace_split(line, false, f, 6);
    base = tr->fio_version == 3;
    if (nf != 2 + base && nf != 4 + base) {
        *why = tr->fio_version == 3 ? "expected 'usecs file action [offset length]'"
                                    : "expected 'file action [offset length]'";
        return -1;
    }
    if (base && (!to_u64(f[0], 10, &ts) || ts > UINT64_MAX / 1000)) {
        *why = "the timestamp must be a non-negative integer (microseconds)";
        return -1;
    }
    act = f[base + 1];
    if (nf == 4 + base && (!to_u64(f[base + 2], 10, &off) || !to_u64(f[base + 3], 10, &len))) {
        *why = "offset and length must be non-negative integers";
        return -1;
    }
    if (!strcmp(act, "add") || !strcmp(act, "open") || !strcmp(act, "close")) {
        return 0;
    }
    if (tr->fio_version == 2 && !strcmp(act, "wait")) {
        if (nf != 4 || off > (UINT64_MAX - tr->fio_clock_ns) / 1000) {
            *why = "wait needs a number of microseconds";
            return -1;
        }
        tr->fio_clock_ns += off * 1000;
        return 0;
    }
    if (!strcmp(act, "sync") || !strcmp(act, "datasync")) {
        rec->op = NH_OP_FLUSH;
        off = len = 0;
    } else if (nf != 4 + base) {
        *why = "read, write and trim need an offset and a length";
        return -1;
    } else if (!strcmp(act, "read")) {
        rec->op = NH_OP_READ;
    } else if (!strcmp(act, "write")) {
        rec->op = NH_OP_WRITE;
    } else if (!strcmp(act, "trim")) {
        rec->op = NH_OP_TRIM;
    } else {
        *why = "unknown action (valid: add, open, close, read, write, trim, sync, datasync, "
               "and wait in version 2)";
        return -1;
    }
    if (rec->op != NH_OP_FLUSH && (*why = trace_range_why(tr, off, len, "offset", "length"))) {
        return -1;
    }
    rec->time_ns = base ? ts * 1000 : tr->fio_clock_ns;
    rec->offset = off;
    rec->length = len;
    return 1;
}
