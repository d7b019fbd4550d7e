/* trace.c - the block-trace reader (contract in trace.h); the formats are trace-*.c. */
#define _GNU_SOURCE     /* fopencookie */
#include "trace-format.h"

#include <limits.h>
#include <zlib.h>

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
    FILE           *f;
    GzCookie       *gz;     /* NULL for a plain file */
    char           *path;
    NhTraceParseFn  parse;
    char           *buf;            /* [cap + 1]: data read, and a NUL after it */
    size_t          cap, len, pos;  /* the data is [0, len), the next line starts at pos */
    bool            eof;            /* the file has no more data than what is in buf */
    bool            skip_bad;
    uint64_t        bad;
    char           *first_bad;
    NhTraceParse    p;              /* the line number and the format's state */
};

const char *const nh_trace_formats[] = {
    "mqsim", "cpcsv", "msr", "spc", "fiu", "blkparse", "fio", NULL
};
static const NhTraceParseFn parsers[] = {
    trace_parse_mqsim, trace_parse_cpcsv, trace_parse_msr, trace_parse_spc, trace_parse_fiu,
    trace_parse_blkparse, trace_parse_fio
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

        t->p.lineno++;
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
            rec->zone = 0;
            rec->line = (uint32_t)MIN(t->p.lineno, UINT32_MAX);
            r = t->parse(&t->p, line, rec, &why);
        }
        if (r < 0 && t->skip_bad) {
            if (!t->bad++) {
                t->first_bad = g_strdup_printf("%s:%" G_GUINT64_FORMAT ": %s", t->path,
                                               t->p.lineno, why);
            }
            continue;
        }
        if (r < 0) {
            g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s:%" G_GUINT64_FORMAT ": %s",
                        t->path, t->p.lineno, why);
            return -1;
        }
        if (r > 0) {
            return 1;
        }
    }
    if (ferror(t->f)) {
        char *why = read_error(t);
        g_set_error(errp, NH_ERROR, NH_ERROR_TRACE, "%s: read error after line %"
                    G_GUINT64_FORMAT ": %s", t->path, t->p.lineno, why);
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
    t->p.lineno = 0;
    t->bad = 0;
    g_clear_pointer(&t->first_bad, g_free);
    t->p.fio_version = 0;
    t->p.in_summary = false;
    return true;
}

uint64_t nh_trace_line(const NhTrace *t)
{
    return t->p.lineno;
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
        g_free(t->p.why);
        g_free(t);
    }
}
