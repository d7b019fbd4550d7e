/* trace-fields.c - the field readers the trace formats share (trace-format.h). */
#include "trace-format.h"

#include <stdarg.h>

/* A parser's reason that names the value at fault; valid until the next one. */
const char *trace_whyf(NhTraceParse *t, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_free(t->why);
    t->why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return t->why;
}

/* Why a sector address or count @v, the format's field @name, is refused; NULL if it is not. */
const char *trace_sectors_why(NhTraceParse *t, const char *name, uint64_t v)
{
    return v <= MAX_SECTORS ? NULL
           : trace_whyf(t, "%s %" G_GUINT64_FORMAT " is out of range: at most 2^54 - 1 sectors "
                        "(its bytes must fit in 64 bits)", name, v);
}

/* Why the byte range [@offset, +@length) is refused, an empty one or one that ends beyond 2^64
 * bytes, with the format's names @off and @len for the fields; NULL if it is not. */
const char *trace_range_why(NhTraceParse *t, uint64_t offset, uint64_t length, const char *off,
                            const char *len)
{
    if (!length) {
        return trace_whyf(t, "%s must be nonzero", len);
    }
    return offset <= UINT64_MAX - length ? NULL
           : trace_whyf(t, "%s + %s ends beyond 2^64 bytes", off, len);
}

int trace_lba_range(NhTraceParse *t, uint64_t lba, uint64_t n, NhTraceRec *rec, const char **why)
{
    if (n == 0) {
        *why = "sectors must be at least 1";
        return -1;
    }
    if ((*why = trace_sectors_why(t, "lba", lba)) || (*why = trace_sectors_why(t, "sectors", n))) {
        return -1;
    }
    rec->offset = lba * 512;
    rec->length = n * 512;
    return 1;
}

/* Split at blanks (@csv false) or commas; returns the field count, max + 1 if there are more. */
int trace_split(char *p, bool csv, char **fields, int max)
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


/* Seconds with an optional fraction of up to 9 digits ("12", "0.551706"), exactly, in ns. */
bool trace_seconds_to_ns(const char *s, uint64_t *ns)
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
