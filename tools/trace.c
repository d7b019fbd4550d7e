/* trace.c - block-trace readers (contract in trace.h). */
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parse one line into @rec.  Returns 1 for a request, 0 for a line to skip, -1 with *why set. */
typedef int (*ParseFn)(char *line, uint64_t lineno, NhTraceRec *rec, const char **why);

struct NhTrace {
    FILE    *f;
    char    *path;
    ParseFn  parse;
    char    *buf;
    size_t   cap;
    uint64_t lineno;
};

static bool to_u64(const char *s, int base, uint64_t *v)
{
    char *end;
    if (!*s || *s == '-') {
        return false;
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

/*
 * MQSim / DiskSim ASCII: time_ns device lba(512 B) sectors type(0 write, 1 read).  The device
 * number is ignored: all devices are folded into one address space (their LBAs overlap).
 */
static int parse_mqsim(char *line, uint64_t lineno, NhTraceRec *rec, const char **why)
{
    char *f[6];
    uint64_t t, dev, lba, n, type;
    (void)lineno;

    if (split(line, false, f, 5) != 5) {
        *why = "expected 5 fields: time_ns device lba sectors type";
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
    if (n == 0 || n > (UINT64_MAX >> 10) || lba > (UINT64_MAX >> 10)) {
        *why = "size must be between 1 and 2^54 sectors";
        return -1;
    }
    rec->time_ns = t;
    rec->op = type ? NH_OP_READ : NH_OP_WRITE;
    rec->offset = lba * 512;
    rec->length = n * 512;
    return 1;
}

/*
 * CloudPhysics CSV (libCacheSim): version,time,op,size,lbn with a header line; time in seconds,
 * op the SCSI opcode in hex (28 READ(10), 2a WRITE(10), also 08/0a/88/8a), size in bytes, lbn in
 * 512 B sectors.
 */
static int parse_cpcsv(char *line, uint64_t lineno, NhTraceRec *rec, const char **why)
{
    char *f[6];
    uint64_t ver, t, op, size, lbn;

    if (lineno == 1 && g_str_has_prefix(line, "version")) {
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
    if (size == 0 || lbn > (UINT64_MAX >> 10) || t > UINT64_MAX / 1000000000ull) {
        *why = "size must be nonzero and lbn and time in range";
        return -1;
    }
    rec->time_ns = t * 1000000000ull;
    rec->offset = lbn * 512;
    rec->length = size;
    return 1;
}

const char *const nh_trace_formats[] = { "mqsim", "cpcsv", NULL };
static const ParseFn parsers[] = { parse_mqsim, parse_cpcsv };

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
    f = fopen(path, "r");
    if (!f) {
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: %s", path, g_strerror(errno));
        return NULL;
    }
    t = g_new0(NhTrace, 1);
    t->f = f;
    t->path = g_strdup(path);
    t->parse = parsers[i];
    return t;
}

int nh_trace_next(NhTrace *t, NhTraceRec *rec, GError **errp)
{
    ssize_t n;

    while ((n = getline(&t->buf, &t->cap, t->f)) >= 0) {
        const char *why = NULL;
        char *line = t->buf;
        int r;

        t->lineno++;
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) {
            line[--n] = '\0';
        }
        line += strspn(line, " \t");
        if (!*line || *line == '#') {
            continue;
        }
        r = t->parse(line, t->lineno, rec, &why);
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
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: read error", t->path);
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
    t->lineno = 0;
    return true;
}

void nh_trace_close(NhTrace *t)
{
    if (t) {
        fclose(t->f);
        g_free(t->buf);
        g_free(t->path);
        g_free(t);
    }
}
