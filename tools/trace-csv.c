/* trace-csv.c - the comma-separated formats: CloudPhysics, MSR Cambridge, UMass / SPC
 * (trace-format.h). */
#include "trace-format.h"

/*
 * CloudPhysics CSV (libCacheSim): version,time,op,size,lbn with a header line; time in seconds,
 * op the SCSI opcode in hex (28 READ(10), 2a WRITE(10), also 08/0a/88/8a), size in bytes, lbn in
 * 512 B sectors.
 */
int trace_parse_cpcsv(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[6];
    uint64_t ver, t, op, size, lbn;

    if (tr->lineno == 1 && g_str_has_prefix(line, "version")) {
        return 0;
    }
    if (trace_split(line, true, f, 5) != 5) {
        *why = "expected 5 comma-separated fields: version,time,op,size,lbn";
        return -1;
    }
    if (!to_u64(f[0], 10, &ver) || !to_u64(f[1], 10, &t) || !to_u64(f[2], 16, &op) ||
        !to_u64(f[3], 10, &size) || !to_u64(f[4], 10, &lbn)) {
        *why = "a field is not a non-negative integer (op in hex)";
        return -1;
    }
    switch (op) {
    case 0x08: case 0x28: case 0x88:
        rec->op = NH_OP_READ;
        break;
    case 0x0a: case 0x2a: case 0x8a:
        rec->op = NH_OP_WRITE;
        break;
    default:
        *why = "op is not a SCSI READ or WRITE opcode";
        return -1;
    }
    if (t > UINT64_MAX / 1000000000ull) {
        *why = trace_whyf(tr, "time %" G_GUINT64_FORMAT " s is out of range: at most %"
                          G_GUINT64_FORMAT " (in ns it must fit in 64 bits)", t,
                          (uint64_t)(UINT64_MAX / 1000000000u));
        return -1;
    }
    if ((*why = trace_sectors_why(tr, "lbn", lbn)) ||
        (*why = trace_range_why(tr, lbn * 512, size, "lbn x 512", "size"))) {
        return -1;
    }
    rec->time_ns = t * 1000000000ull;
    rec->offset = lbn * 512;
    rec->length = size;
    return 1;
}


/*
 * MSR Cambridge (SNIA IOTTA): Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime;
 * Timestamp in Windows FILETIME (100 ns ticks), Type Read or Write, Offset and Size in bytes.
 * Each file is one volume; hostname and disk number are not used.  A header line is allowed.
 */
int trace_parse_msr(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[8];
    uint64_t ts, disk, off, size, resp;

    if (tr->lineno == 1 && g_str_has_prefix(line, "Timestamp")) {
        return 0;
    }
    if (trace_split(line, true, f, 7) != 7) {
        *why = "expected 7 comma-separated fields: Timestamp,Hostname,DiskNumber,Type,Offset,"
               "Size,ResponseTime";
        return -1;
    }
    if (!to_u64(f[0], 10, &ts) || !to_u64(f[2], 10, &disk) || !to_u64(f[4], 10, &off) ||
        !to_u64(f[5], 10, &size) || !to_u64(f[6], 10, &resp)) {
        *why = "Timestamp, DiskNumber, Offset, Size and ResponseTime must be non-negative integers";
        return -1;
    }
    if (!g_ascii_strcasecmp(f[3], "Read")) {
        rec->op = NH_OP_READ;
    } else if (!g_ascii_strcasecmp(f[3], "Write")) {
        rec->op = NH_OP_WRITE;
    } else {
        *why = "Type must be Read or Write";
        return -1;
    }
    if (ts > UINT64_MAX / 100) {
        *why = trace_whyf(tr, "Timestamp %" G_GUINT64_FORMAT " is out of range: at most %"
                          G_GUINT64_FORMAT " (100 ns ticks; in ns it must fit in 64 bits)", ts,
                          (uint64_t)(UINT64_MAX / 100));
        return -1;
    }
    if ((*why = trace_range_why(tr, off, size, "Offset", "Size"))) {
        return -1;
    }
    rec->time_ns = ts * 100;
    rec->offset = off;
    rec->length = size;
    return 1;
}


/*
 * UMass / SPC (Financial1/2, WebSearch1-3): ASU,LBA,Size,Opcode,Timestamp[,...]; LBA in 512 B
 * blocks, Size in bytes, Opcode r or w (any case), Timestamp in seconds with a fraction.  The
 * application storage units are folded into one address space (their LBAs overlap).
 */
int trace_parse_spc(NhTraceParse *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[9];
    uint64_t asu, lba, size, ts;
    int n = trace_split(line, true, f, 8);

    if (n < 5 || n > 8) {
        *why = "expected 5 or more comma-separated fields: ASU,LBA,Size,Opcode,Timestamp";
        return -1;
    }
    if (!to_u64(f[0], 10, &asu) || !to_u64(f[1], 10, &lba) || !to_u64(f[2], 10, &size)) {
        *why = "ASU, LBA and Size must be non-negative integers";
        return -1;
    }
    if (!trace_seconds_to_ns(f[4], &ts)) {
        *why = "Timestamp must be seconds, with at most 9 decimals";
        return -1;
    }
    if (!g_ascii_strcasecmp(f[3], "r")) {
        rec->op = NH_OP_READ;
    } else if (!g_ascii_strcasecmp(f[3], "w")) {
        rec->op = NH_OP_WRITE;
    } else {
        *why = "Opcode must be r or w";
        return -1;
    }
    if ((*why = trace_sectors_why(tr, "LBA", lba)) ||
        (*why = trace_range_why(tr, lba * 512, size, "LBA x 512", "Size"))) {
        return -1;
    }
    rec->time_ns = ts;
    rec->offset = lba * 512;
    rec->length = size;
    return 1;
}
