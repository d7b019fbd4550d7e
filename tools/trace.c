/* trace.c - block-trace readers (contract in trace.h). */
#define _GNU_SOURCE     /* fopencookie */
#include "trace.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Parse one line into @rec.  Returns 1 for a request, 0 for a line to skip, -1 with *why set.
 * @t carries what a format needs across lines (fio's version and clock, blkparse's summary). */
typedef int (*ParseFn)(NhTrace *t, char *line, NhTraceRec *rec, const char **why);

/* A gzip-compressed trace is read through zlib's gzFile behind a stdio stream (fopencookie),
 * so every format reads it line by line like a plain file.  @error: what zlib reported when the
 * data was found corrupt or cut short (the stream then reports a read error). */
typedef struct GzCookie {
    gzFile gz;
    char  *error;
} GzCookie;

/* Bytes read from the file at a time: lines are cut out of a large buffer, not read one by one
 * with getline (its locking and copying were a third of reading a trace, callgrind). */
#define READ_CHUNK ((size_t)1 << 20)

struct NhTrace {
    FILE    *f;
    GzCookie *gz;   /* NULL for a plain file */
    char    *path;
    ParseFn  parse;
    char    *buf;           /* [cap + 1]: data read, and a NUL after it */
    size_t   cap, len, pos; /* the data is [0, len), the next line starts at pos */
    bool     eof;           /* the file has no more data than what is in buf */
    uint64_t lineno;
    bool     skip_bad;
    uint64_t bad;
    char    *first_bad;
    int      fio_version;   /* from the header line */
    uint64_t fio_clock_ns;  /* v2: the sum of the waits so far */
    bool     in_summary;    /* blkparse: past the events, in the per-CPU summary */
    char    *why;           /* a malformed line's reason that names a value (whyf) */
};

/* 512-byte sectors: the most an address or a count may be, 2^54 - 1, so that in bytes both
 * and their sum fit in 64 bits. */
#define MAX_SECTORS (UINT64_MAX >> 10)

/* A parser's reason that names the value at fault; valid until the next one. */
static const char *G_GNUC_PRINTF(2, 3) whyf(NhTrace *t, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_free(t->why);
    t->why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return t->why;
}

/* Why a sector address or count @v, the format's field @name, is refused; NULL if it is not. */
static const char *sectors_why(NhTrace *t, const char *name, uint64_t v)
{
    return v <= MAX_SECTORS ? NULL
           : whyf(t, "%s %" G_GUINT64_FORMAT " is out of range: at most 2^54 - 1 sectors (its "
                  "bytes must fit in 64 bits)", name, v);
}

/* Why the byte range [@offset, +@length) is refused, an empty one or one that ends beyond 2^64
 * bytes, with the format's names @off and @len for the fields; NULL if it is not. */
static const char *range_why(NhTrace *t, uint64_t offset, uint64_t length, const char *off,
                             const char *len)
{
    if (!length) {
        return whyf(t, "%s must be nonzero", len);
    }
    return offset <= UINT64_MAX - length ? NULL
           : whyf(t, "%s + %s ends beyond 2^64 bytes", off, len);
}

static bool to_u64(const char *s, int base, uint64_t *v)
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

/* Split at blanks (@csv false) or commas; returns the field count, max + 1 if there are more. */
static int split(char *p, bool csv, char **fields, int max)
{
    int n = 0;

    if (csv) {
        for (;;) {
            char *e;
            if (n == max) {
                return max + 1;
            }
            fields[n++] = p;
            e = strchr(p, ',');
            if (!e) {
                return n;
            }
            *e = '\0';
            p = e + 1;
        }
    }
    for (;;) {
        p += strspn(p, " \t");
        if (!*p) {
            return n;
        }
        if (n == max) {
            return max + 1;
        }
        fields[n++] = p;
        p += strcspn(p, " \t");
        if (*p) {
            *p++ = '\0';
        }
    }
}

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
 * MQSim / DiskSim ASCII: time_ns device lba(512 B) sectors type(0 write, 1 read), and optionally
 * a sixth field, the write's placement tag (stream identifier, 0 untagged).  The device number
 * is ignored: all devices are folded into one address space (their LBAs overlap).
 */
static int parse_mqsim(NhTrace *tr, char *line, NhTraceRec *rec, const char **why)
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
    nf = split(line, false, f, 6);
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
    if (type > 1) {
        *why = "type must be 0 (write) or 1 (read)";
        return -1;
    }
    if (n == 0) {
        *why = "sectors must be at least 1";
        return -1;
    }
    if ((*why = sectors_why(tr, "lba", lba)) || (*why = sectors_why(tr, "sectors", n))) {
        return -1;
    }
    rec->time_ns = t;
    rec->op = type ? NH_OP_READ : NH_OP_WRITE;
    rec->offset = lba * 512;
    rec->length = n * 512;
    rec->stream = (uint16_t)stream;
    return 1;
}

/*
 * CloudPhysics CSV (libCacheSim): version,time,op,size,lbn with a header line; time in seconds,
 * op the SCSI opcode in hex (28 READ(10), 2a WRITE(10), also 08/0a/88/8a), size in bytes, lbn in
 * 512 B sectors.
 */
static int parse_cpcsv(NhTrace *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[6];
    uint64_t ver, t, op, size, lbn;

    if (tr->lineno == 1 && g_str_has_prefix(line, "version")) {
        return 0;
    }
    if (split(line, true, f, 5) != 5) {
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
        *why = whyf(tr, "time %" G_GUINT64_FORMAT " s is out of range: at most %" G_GUINT64_FORMAT
                    " (in ns it must fit in 64 bits)", t, (uint64_t)(UINT64_MAX / 1000000000u));
        return -1;
    }
    if ((*why = sectors_why(tr, "lbn", lbn)) ||
        (*why = range_why(tr, lbn * 512, size, "lbn x 512", "size"))) {
        return -1;
    }
    rec->time_ns = t * 1000000000ull;
    rec->offset = lbn * 512;
    rec->length = size;
    return 1;
}

/* Seconds with an optional fraction of up to 9 digits ("12", "0.551706"), exactly, in ns. */
static bool seconds_to_ns(const char *s, uint64_t *ns)
{
    const char *dot = strchr(s, '.');
    char *whole = g_strndup(s, dot ? (size_t)(dot - s) : strlen(s));
    uint64_t sec, frac = 0;
    bool ok = to_u64(whole, 10, &sec) && sec <= UINT64_MAX / 1000000000ull;

    g_free(whole);
    if (ok && dot) {
        size_t digits = strlen(dot + 1);
        ok = digits >= 1 && digits <= 9 && to_u64(dot + 1, 10, &frac);
        for (size_t i = digits; ok && i < 9; i++) {
            frac *= 10;
        }
    }
    if (ok) {
        *ns = sec * 1000000000ull + frac;
    }
    return ok && *ns >= sec * 1000000000ull;
}

/*
 * MSR Cambridge (SNIA IOTTA): Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime;
 * Timestamp in Windows FILETIME (100 ns ticks), Type Read or Write, Offset and Size in bytes.
 * Each file is one volume; hostname and disk number are not used.  A header line is allowed.
 */
static int parse_msr(NhTrace *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[8];
    uint64_t ts, disk, off, size, resp;

    if (tr->lineno == 1 && g_str_has_prefix(line, "Timestamp")) {
        return 0;
    }
    if (split(line, true, f, 7) != 7) {
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
        *why = whyf(tr, "Timestamp %" G_GUINT64_FORMAT " is out of range: at most %"
                    G_GUINT64_FORMAT " (100 ns ticks; in ns it must fit in 64 bits)", ts,
                    (uint64_t)(UINT64_MAX / 100));
        return -1;
    }
    if ((*why = range_why(tr, off, size, "Offset", "Size"))) {
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
static int parse_spc(NhTrace *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[9];
    uint64_t asu, lba, size, ts;
    int n = split(line, true, f, 8);

    if (n < 5 || n > 8) {
        *why = "expected 5 or more comma-separated fields: ASU,LBA,Size,Opcode,Timestamp";
        return -1;
    }
    if (!to_u64(f[0], 10, &asu) || !to_u64(f[1], 10, &lba) || !to_u64(f[2], 10, &size)) {
        *why = "ASU, LBA and Size must be non-negative integers";
        return -1;
    }
    if (!seconds_to_ns(f[4], &ts)) {
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
    if ((*why = sectors_why(tr, "LBA", lba)) ||
        (*why = range_why(tr, lba * 512, size, "LBA x 512", "Size"))) {
        return -1;
    }
    rec->time_ns = ts;
    rec->offset = lba * 512;
    rec->length = size;
    return 1;
}

/*
 * FIU (SNIA IOTTA, Koller and Rangaswami): ts_ns pid process lba size W|R major minor [md5];
 * lba and size in 512 B sectors.  Device numbers are folded into one address space.
 */
static int parse_fiu(NhTrace *tr, char *line, NhTraceRec *rec, const char **why)
{
    char *f[10];
    uint64_t ts, pid, lba, n, maj, min;
    int nf = split(line, false, f, 9);

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
    if (n == 0) {
        *why = "sectors must be at least 1";
        return -1;
    }
    if ((*why = sectors_why(tr, "lba", lba)) || (*why = sectors_why(tr, "sectors", n))) {
        return -1;
    }
    rec->time_ns = ts;
    rec->offset = lba * 512;
    rec->length = n * 512;
    return 1;
}

/*
 * blkparse's default text output: "maj,min cpu seq secs.nsecs pid action rwbs [sector + n]
 * [process]".  Only D events (issued to the device) are replayed, one request each: RWBS with
 * D is a discard, with W a write, with R a read, otherwise F alone a flush; other events and
 * the summary blkparse prints at the end are skipped.
 */
static int parse_blkparse(NhTrace *tr, char *line, NhTraceRec *rec, const char **why)
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
    nf = split(line, false, f, 10);
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
    if (!seconds_to_ns(f[3], &ts)) {
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
        if ((*why = sectors_why(tr, "sector", sector)) || (*why = sectors_why(tr, "size", n))) {
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

/*
 * fio's iolog (--write_iolog): a header "fio version 2 iolog" or "fio version 3 iolog", then
 * "[usecs] file action [offset length]" lines, usecs since the start in version 3 only.
 * read, write and trim are replayed, sync and datasync as flushes; add, open and close are
 * skipped; version 2's "wait usecs" advances the clock.  All files are folded into one space.
 */
static int parse_fio(NhTrace *tr, char *line, NhTraceRec *rec, const char **why)
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
    nf = split(line, false, f, 6);
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
    if (rec->op != NH_OP_FLUSH && (*why = range_why(tr, off, len, "offset", "length"))) {
        return -1;
    }
    rec->time_ns = base ? ts * 1000 : tr->fio_clock_ns;
    rec->offset = off;
    rec->length = len;
    return 1;
}

const char *const nh_trace_formats[] = {
    "mqsim", "cpcsv", "msr", "spc", "fiu", "blkparse", "fio", NULL
};
static const ParseFn parsers[] = {
    parse_mqsim, parse_cpcsv, parse_msr, parse_spc, parse_fiu, parse_blkparse, parse_fio
};
G_STATIC_ASSERT(G_N_ELEMENTS(nh_trace_formats) == G_N_ELEMENTS(parsers) + 1);

static ssize_t gz_cookie_read(void *c, char *buf, size_t size)
{
    GzCookie *gc = c;
    int n, code;
    const char *msg;

    if (gc->error) {
        return -1;
    }
    n = gzread(gc->gz, buf, (unsigned)MIN(size, (size_t)INT_MAX));
    msg = gzerror(gc->gz, &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
        gc->error = g_strdup(code == Z_ERRNO ? g_strerror(errno) : msg);
        return -1;
    }
    return n;
}

/* zlib seeks in the decompressed data (forward by reading, back by starting over); only a
 * rewind to the start is asked for (nh_trace_rewind, text_start).  No SEEK_END. */
static int gz_cookie_seek(void *c, off64_t *pos, int whence)
{
    GzCookie *gc = c;
    z_off_t off = whence == SEEK_END ? -1 : gzseek(gc->gz, (z_off_t)*pos, whence);

    if (off < 0) {
        errno = EINVAL;
        return -1;
    }
    *pos = off;
    return 0;
}

static int gz_cookie_close(void *c)
{
    GzCookie *gc = c;
    int r = gzclose_r(gc->gz);

    g_free(gc->error);
    g_free(gc);
    return r == Z_OK ? 0 : EOF;
}

/* The error of a stream that failed to read: zlib's word for compressed data, else errno's. */
static char *read_error(const NhTrace *t)
{
    if (t->gz && t->gz->error) {
        return g_strdup_printf("corrupt or truncated gzip data (zlib: %s)", t->gz->error);
    }
    return g_strdup(g_strerror(errno));
}

/* Open @path for reading: plain, or through zlib when it starts with gzip's magic (1f 8b).  A
 * name ending in .gz without the magic is refused rather than read as text. */
static FILE *trace_fopen(const char *path, GzCookie **gzp, GError **errp)
{
    static const cookie_io_functions_t gz_io = {
        .read = gz_cookie_read, .seek = gz_cookie_seek, .close = gz_cookie_close,
    };
    unsigned char magic[2];
    size_t n;
    FILE *f = fopen(path, "r");
    GzCookie *gc;

    *gzp = NULL;
    if (!f) {
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: %s", path, g_strerror(errno));
        return NULL;
    }
    n = fread(magic, 1, sizeof(magic), f);
    if (n < 2 || magic[0] != 0x1f || magic[1] != 0x8b) {
        if (g_str_has_suffix(path, ".gz")) {
            g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: named .gz but not gzip data "
                        "(its first bytes are not gzip's magic 1f 8b)", path);
            fclose(f);
            return NULL;
        }
        rewind(f);
        return f;
    }
    gc = g_new0(GzCookie, 1);
    fclose(f);
    gc->gz = gzopen(path, "rb");
    if (!gc->gz) {
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: cannot open for decompression",
                    path);
        g_free(gc);
        return NULL;
    }
    gzbuffer(gc->gz, 1 << 20);
    f = fopencookie(gc, "r", gz_io);
    if (!f) {
        gzclose_r(gc->gz);
        g_free(gc);
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: %s", path, g_strerror(errno));
        return NULL;
    }
    *gzp = gc;
    return f;
}

/* A binary file (a NUL byte in its first block) is refused before a line of it is read: a
 * file of NULs has no line end, and reading its one line would take it whole into memory.
 * For a gzipped trace the block is of the decompressed text, and corrupt data is refused here
 * when it lies in the first block. */
static bool text_start(NhTrace *t, GError **errp)
{
    char head[4096];
    size_t n = fread(head, 1, sizeof(head), t->f);
    const char *nul = memchr(head, '\0', n);

    if (nul) {
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: a NUL byte at offset %zu: a binary "
                    "file, not a text trace", t->path, (size_t)(nul - head));
        return false;
    }
    if (ferror(t->f) || fseek(t->f, 0, SEEK_SET) != 0) {
        char *why = read_error(t);
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: cannot read: %s", t->path, why);
        g_free(why);
        return false;
    }
    return true;
}

NhTrace *nh_trace_open(const char *path, const char *format, GError **errp)
{
    NhTrace *t;
    FILE *f;
    size_t i;

    for (i = 0; nh_trace_formats[i] && strcmp(nh_trace_formats[i], format); i++) {
    }
    if (!nh_trace_formats[i]) {
        char *list = g_strjoinv(", ", (char **)nh_trace_formats);
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "unknown trace format '%s' (valid: %s)",
                    format, list);
        g_free(list);
        return NULL;
    }
    t = g_new0(NhTrace, 1);
    f = trace_fopen(path, &t->gz, errp);
    if (!f) {
        g_free(t);
        return NULL;
    }
    t->f = f;
    t->cap = READ_CHUNK;
    t->buf = g_malloc0(t->cap + 1);
    t->path = g_strdup(path);
    t->parse = parsers[i];
    if (!text_start(t, errp)) {
        nh_trace_close(t);
        return NULL;
    }
    return t;
}

/* The next line, NUL-terminated in place of its '\n' (*n: its length without it; *nul: it holds
 * a NUL byte); NULL at the end, and at a read error: the line it cut is not returned (the error
 * is reported).  The data is followed by a NUL, so one strchrnul finds the line's end or a NUL
 * in it. */
static char *next_line(NhTrace *t, size_t *n, bool *nul)
{
    for (;;) {
        char *p = t->buf + t->pos, *end = t->buf + t->len, *nl = strchrnul(p, '\n');
        size_t avail = t->len - t->pos, got;

        *nul = nl < end && *nl == '\0';
        if (*nul) {
            nl = memchr(nl, '\n', (size_t)(end - nl));
        }
        if (nl && nl < end) {
            *nl = '\0';
            *n = (size_t)(nl - p);
            t->pos += *n + 1;
            return p;
        }
        if (t->eof && !ferror(t->f) && avail) {
            *n = avail;
            t->pos = t->len;
            return p;
        }
        if (t->eof) {
            return NULL;
        }
        /* keep the start of the line, in a larger buffer if it fills this one, and read on */
        memmove(t->buf, p, avail);
        t->len = avail;
        t->pos = 0;
        if (t->len == t->cap) {
            t->cap *= 2;
            t->buf = g_realloc(t->buf, t->cap + 1);
        }
        got = fread(t->buf + t->len, 1, t->cap - t->len, t->f);
        t->len += got;
        t->buf[t->len] = '\0';
        t->eof = got < t->cap - avail;
    }
}

int nh_trace_next(NhTrace *t, NhTraceRec *rec, GError **errp)
{
    size_t n;
    char *start;
    bool nul;

    while ((start = next_line(t, &n, &nul))) {
        const char *why = NULL;
        char *line = start;
        int r;

        t->lineno++;
        while (n && line[n - 1] == '\r') {
            line[--n] = '\0';
        }
        while (*line == ' ' || *line == '\t') {
            line++;
        }
        if (nul) {
            why = "a NUL byte in the line (binary data, not a text trace)";
            r = -1;
        } else if (!*line || *line == '#') {
            continue;
        } else {
            rec->stream = 0;
            r = t->parse(t, line, rec, &why);
        }
        if (r < 0 && t->skip_bad) {
            if (!t->bad++) {
                t->first_bad = g_strdup_printf("%s:%" G_GUINT64_FORMAT ": %s", t->path,
                                               t->lineno, why);
            }
            continue;
        }
        if (r < 0) {
            g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s:%" G_GUINT64_FORMAT ": %s",
                        t->path, t->lineno, why);
            return -1;
        }
        if (r > 0) {
            return 1;
        }
    }
    if (ferror(t->f)) {
        char *why = read_error(t);
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: read error after line %"
                    G_GUINT64_FORMAT ": %s", t->path, t->lineno, why);
        g_free(why);
        return -1;
    }
    return 0;
}

bool nh_trace_rewind(NhTrace *t, GError **errp)
{
    if (fseek(t->f, 0, SEEK_SET) != 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: cannot rewind: %s", t->path,
                    g_strerror(errno));
        return false;
    }
    t->len = t->pos = 0;
    t->buf[0] = '\0';
    t->eof = false;
    t->lineno = 0;
    t->bad = 0;
    g_clear_pointer(&t->first_bad, g_free);
    t->fio_version = 0;
    t->in_summary = false;
    return true;
}

uint64_t nh_trace_line(const NhTrace *t)
{
    return t->lineno;
}

void nh_trace_skip_bad(NhTrace *t, bool skip)
{
    t->skip_bad = skip;
}

uint64_t nh_trace_bad_lines(const NhTrace *t, const char **first)
{
    if (first) {
        *first = t->first_bad;
    }
    return t->bad;
}

void nh_trace_close(NhTrace *t)
{
    if (t) {
        fclose(t->f);       /* a gzipped trace's cookie and zlib stream go with it */
        g_free(t->buf);
        g_free(t->path);
        g_free(t->first_bad);
        g_free(t->why);
        g_free(t);
    }
}
