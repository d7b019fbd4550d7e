/*
 * fit.c - compact and modulo fitting of a trace's address space (fit.h).
 */
#include "fit.h"

#include <string.h>

typedef struct Extent {
    uint64_t start, end;    /* [start, end), unit aligned */
    uint64_t dense;         /* compact: where start lands */
} Extent;

struct NhFit {
    NhFitMode mode;
    uint32_t unit;
    GArray *ext;            /* pass 1: ranges, merged now and then; then sorted and disjoint */
    guint merged_len;       /* length of ext after the last merge */
    uint64_t capacity;
    NhFitReport rep;
};

bool nh_fit_parse_mode(const char *text, NhFitMode *mode, GError **errp)
{
    if (!g_strcmp0(text, "compact")) {
        *mode = NH_FIT_COMPACT;
    } else if (!g_strcmp0(text, "modulo")) {
        *mode = NH_FIT_MODULO;
    } else {
        g_set_error(errp, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--fit: '%s' is neither compact nor modulo", text);
        return false;
    }
    return true;
}

NhFit *nh_fit_new(NhFitMode mode, uint32_t unit)
{
    NhFit *f = g_new0(NhFit, 1);

    f->mode = mode;
    f->unit = unit ? unit : 4096;
    f->ext = g_array_new(FALSE, FALSE, sizeof(Extent));
    f->rep.mode = mode == NH_FIT_COMPACT ? "compact" : "modulo";
    return f;
}

static int cmp_start(const void *a, const void *b)
{
    const Extent *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Sort and merge overlapping or adjacent ranges in place. */
static void merge(NhFit *f)
{
    Extent *e = (Extent *)f->ext->data;
    guint n = 0;

    g_array_sort(f->ext, cmp_start);
    for (guint i = 0; i < f->ext->len; i++) {
        if (n && e[i].start <= e[n - 1].end) {
            e[n - 1].end = MAX(e[n - 1].end, e[i].end);
        } else {
            e[n++] = e[i];
        }
    }
    g_array_set_size(f->ext, n);
    f->merged_len = n;
}

void nh_fit_add(NhFit *f, uint64_t offset, uint64_t length)
{
    Extent x;
    guint n = f->ext->len;

    f->rep.span_bytes = MAX(f->rep.span_bytes, offset + length);
    if (f->mode != NH_FIT_COMPACT || !length) {
        return;
    }
    x.start = offset & ~(uint64_t)(f->unit - 1);
    x.end = (offset + length + f->unit - 1) & ~(uint64_t)(f->unit - 1);
    x.dense = 0;
    /* a run of sequential requests extends the last range without growing the array */
    if (n && x.start <= g_array_index(f->ext, Extent, n - 1).end &&
        x.end >= g_array_index(f->ext, Extent, n - 1).start) {
        Extent *l = &g_array_index(f->ext, Extent, n - 1);
        l->start = MIN(l->start, x.start);
        l->end = MAX(l->end, x.end);
        return;
    }
    g_array_append_val(f->ext, x);
    /* bound memory on long traces: merge once the array doubled since the last merge */
    if (f->ext->len > 2 * f->merged_len + (1u << 20)) {
        merge(f);
    }
}

bool nh_fit_finish(NhFit *f, uint64_t *capacity, GError **errp)
{
    const uint64_t gib = 1ull << 30;

    if (f->mode == NH_FIT_MODULO) {
        if (!*capacity) {
            g_set_error(errp, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "--fit modulo needs --capacity (the space to fold the trace into)");
            return false;
        }
        f->capacity = f->rep.fitted_bytes = *capacity;
        f->rep.touched_bytes = 0;
        return true;
    }
    merge(f);
    uint64_t dense = 0;
    for (guint i = 0; i < f->ext->len; i++) {
        Extent *e = &g_array_index(f->ext, Extent, i);
        e->dense = dense;
        dense += e->end - e->start;
    }
    f->rep.extents = f->ext->len;
    f->rep.touched_bytes = f->rep.fitted_bytes = dense;
    if (!*capacity) {
        *capacity = MAX(gib, (dense + gib - 1) / gib * gib);
    } else if (dense > *capacity) {
        g_set_error(errp, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--fit compact: the trace touches %" G_GUINT64_FORMAT " bytes (%.2f GiB in %"
                    G_GUINT64_FORMAT " extents), more than --capacity %" G_GUINT64_FORMAT
                    " bytes; give a larger capacity or use --fit modulo", dense,
                    dense / (double)gib, f->rep.extents, *capacity);
        return false;
    }
    f->capacity = *capacity;
    return true;
}

uint64_t nh_fit_map(NhFit *f, uint64_t offset, uint64_t length)
{
    if (f->mode == NH_FIT_MODULO) {
        uint64_t o = offset % f->capacity;
        if (length > f->capacity) {
            return 0;       /* longer than the device: the engine refuses it with a message */
        }
        if (o + length > f->capacity) {
            f->rep.moved_back++;
            o = (f->capacity - length) & ~(uint64_t)(f->unit - 1);
        }
        return o;
    }
    /* the extent holding offset: the last one starting at or before it */
    guint lo = 0, hi = f->ext->len;
    while (hi - lo > 1) {
        guint mid = (lo + hi) / 2;
        if (g_array_index(f->ext, Extent, mid).start <= offset) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if (!f->ext->len) {
        return offset;
    }
    const Extent *e = &g_array_index(f->ext, Extent, lo);
    if (offset < e->start || offset >= e->end) {
        return offset;      /* an empty request (flush) outside every extent: keep it */
    }
    return e->dense + (offset - e->start);
}

const NhFitReport *nh_fit_report(const NhFit *f)
{
    return &f->rep;
}

char *nh_fit_summary(const NhFit *f)
{
    const NhFitReport *r = &f->rep;
    const double gib = 1 << 30;

    if (f->mode == NH_FIT_MODULO) {
        return g_strdup_printf("modulo: a span of %.2f GiB folded into %.2f GiB, %"
                               G_GUINT64_FORMAT " requests moved back from the end",
                               r->span_bytes / gib, r->fitted_bytes / gib, r->moved_back);
    }
    return g_strdup_printf("compact: a span of %.2f GiB touches %.3f GiB in %" G_GUINT64_FORMAT
                           " extents of %u-byte units, laid out densely",
                           r->span_bytes / gib, r->touched_bytes / gib, r->extents, f->unit);
}

JsonObject *nh_fit_json(const NhFit *f)
{
    JsonObject *fit = json_object_new();

    json_object_set_string_member(fit, "mode", f->rep.mode);
    json_object_set_int_member(fit, "span_bytes", f->rep.span_bytes);
    json_object_set_int_member(fit, "touched_bytes", f->rep.touched_bytes);
    json_object_set_int_member(fit, "extents", f->rep.extents);
    json_object_set_int_member(fit, "fitted_bytes", f->rep.fitted_bytes);
    json_object_set_int_member(fit, "moved_back", f->rep.moved_back);
    json_object_set_int_member(fit, "unit_bytes", f->unit);
    return fit;
}

void nh_fit_free(NhFit *f)
{
    if (f) {
        g_array_free(f->ext, TRUE);
        g_free(f);
    }
}
