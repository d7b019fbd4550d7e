/*
 * dstream.c - DStream's adaptive k-means and its logical streams (contract in dstream.h).
 */
#include "dstream.h"

#include <math.h>
#include <string.h>

struct NhDstream {
    uint32_t  nparts, nhost, nlog;  /* LBA partitions, host identifiers, logical streams */
    uint64_t  lpages;
    uint64_t  interval, written;    /* host pages per timestamp, in this one so far */
    uint32_t *count;                /* [nlog] updates in this timestamp */
    double   *x;                    /* [nlog] scratch */
    uint8_t  *assign;               /* [nlog] physical stream */
    NhKmeans  km;
};

/* ------------------------------------------------------------------ k-means */

static uint32_t nearest(const NhKmeans *km, double v)
{
    uint32_t best = 0;

    for (uint32_t j = 1; j < km->k; j++) {
        if (fabs(v - km->cent[j]) < fabs(v - km->cent[best])) {
            best = j;
        }
    }
    return best;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Assign every element; returns whether an assignment changed. */
static bool assign_all(const NhKmeans *km, const double *x, uint32_t n, uint8_t *assign)
{
    bool changed = false;

    for (uint32_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)nearest(km, x[i]);
        changed |= c != assign[i];
        assign[i] = c;
    }
    return changed;
}

/* Lloyd's iterations until no element changes cluster (bounded); empty clusters keep their
 * centroid.  Centroids end sorted and elements assigned to them. */
static void lloyd(NhKmeans *km, const double *x, uint32_t n, uint8_t *assign)
{
    memset(assign, 0xff, n);
    for (int it = 0; it < 32 && assign_all(km, x, n, assign); it++) {
        double sum[NH_MAX_STREAMS] = { 0 };
        uint32_t cnt[NH_MAX_STREAMS] = { 0 };
        for (uint32_t i = 0; i < n; i++) {
            sum[assign[i]] += x[i];
            cnt[assign[i]]++;
        }
        for (uint32_t j = 0; j < km->k; j++) {
            if (cnt[j]) {
                km->cent[j] = sum[j] / cnt[j];
            }
        }
    }
    qsort(km->cent, km->k, sizeof(double), cmp_double);
    assign_all(km, x, n, assign);
}

static void first_centroids(NhKmeans *km, const double *x, uint32_t n)
{
    double *s = g_memdup2(x, sizeof(double) * n);

    qsort(s, n, sizeof(double), cmp_double);
    km->k = km->kmax;
    for (uint32_t j = 0; j < km->k; j++) {
        km->cent[j] = s[(uint64_t)(2 * j + 1) * n / (2 * km->k)];
    }
    g_free(s);
}

/* The members of each cluster, as sums and counts: a merge takes its members' mean from them,
 * and they follow the clusters through every merge and add of a step. */
typedef struct Members {
    double   sum[NH_MAX_STREAMS];
    uint32_t cnt[NH_MAX_STREAMS];
} Members;

static void members(Members *m, const double *x, uint32_t n, const uint8_t *assign)
{
    memset(m, 0, sizeof(*m));
    for (uint32_t i = 0; i < n; i++) {
        m->sum[assign[i]] += x[i];
        m->cnt[assign[i]]++;
    }
}

/* Dmin, the smallest distance between two centroids (adjacent, as they are sorted); infinite
 * for k = 1.  *m1 is the colder of the pair. */
static double closest_pair(const NhKmeans *km, uint32_t *m1)
{
    double dmin = INFINITY;

    *m1 = 0;
    for (uint32_t j = 0; j + 1 < km->k; j++) {
        if (km->cent[j + 1] - km->cent[j] < dmin) {
            dmin = km->cent[j + 1] - km->cent[j];
            *m1 = j;
        }
    }
    return dmin;
}

/* Merge clusters @a and @a + 1 into their members' mean (the midpoint when both are empty). */
static void merge(NhKmeans *km, uint32_t a, Members *m)
{
    size_t tail = km->k - a - 2;

    m->sum[a] += m->sum[a + 1];
    m->cnt[a] += m->cnt[a + 1];
    km->cent[a] = m->cnt[a] ? m->sum[a] / m->cnt[a] : (km->cent[a] + km->cent[a + 1]) / 2;
    memmove(&km->cent[a + 1], &km->cent[a + 2], sizeof(double) * tail);
    memmove(&m->sum[a + 1], &m->sum[a + 2], sizeof(double) * tail);
    memmove(&m->cnt[a + 1], &m->cnt[a + 2], sizeof(uint32_t) * tail);
    km->k--;
}

/* Add an empty cluster at the mean of the two hottest centroids, in its sorted place. */
static bool add(NhKmeans *km, const double *x, uint32_t n, Members *m)
{
    double hottest = x[0], c;
    uint32_t at = 0;

    for (uint32_t i = 1; i < n; i++) {
        hottest = MAX(hottest, x[i]);
    }
    c = km->k == 1 ? (km->cent[0] + hottest) / 2
                   : (km->cent[km->k - 1] + km->cent[km->k - 2]) / 2;
    for (uint32_t j = 0; j < km->k; j++) {
        if (km->cent[j] == c) {
            return false;
        }
        at += km->cent[j] < c;
    }
    memmove(&km->cent[at + 1], &km->cent[at], sizeof(double) * (km->k - at));
    memmove(&m->sum[at + 1], &m->sum[at], sizeof(double) * (km->k - at));
    memmove(&m->cnt[at + 1], &m->cnt[at], sizeof(uint32_t) * (km->k - at));
    km->cent[at] = c;
    m->sum[at] = 0;
    m->cnt[at] = 0;
    km->k++;
    return true;
}

/* The rule for one element at distance @d from its nearest centroid: the change of k. */
static int rule(NhKmeans *km, double d, const double *x, uint32_t n, Members *m)
{
    uint32_t m1;
    double dmin = closest_pair(km, &m1);

    if (km->k > 1 && d >= dmin) {
        merge(km, m1, m);
        return -1;
    }
    return km->k < km->kmax && add(km, x, n, m) ? 1 : 0;
}

int nh_kmeans_step(NhKmeans *km, const double *x, uint32_t n, uint8_t *assign)
{
    Members m;
    double far = 0;
    int change = 0;

    if (!km->k) {
        first_centroids(km, x, n);
    }
    lloyd(km, x, n, assign);
    if (km->rule == NH_KMEANS_FIXED) {
        return 0;
    }
    members(&m, x, n, assign);
    for (uint32_t i = 0; i < n; i++) {
        double d = fabs(x[i] - km->cent[nearest(km, x[i])]);
        if (km->rule == NH_KMEANS_PER_ELEMENT) {
            change += rule(km, d, x, n, &m);
        }
        far = MAX(far, d);
    }
    if (km->rule == NH_KMEANS_ADAPTIVE) {
        change = rule(km, far, x, n, &m);
    }
    assign_all(km, x, n, assign);
    return change;
}

/* ------------------------------------------------------------------ logical streams */

bool nh_dstream_check(const NhConfig *cfg, const NhPlacementSettings *set, uint32_t missing,
                      GError **errp)
{
    uint64_t mem = set->dstream_memory, buf = set->stream_buffer;

    if (missing & NH_FTL_CMT_RESIZE) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "dstream-memory: only ftl=dftl has a mapping cache to give memory to, got "
                    "ftl=%s", cfg->ftl);
        return false;
    }
    if (mem && mem < set->max_streams * buf + 8) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "dstream-memory: %" G_GUINT64_FORMAT " bytes cannot hold the write buffers "
                    "of physical-streams=%u at stream-buffer=%" G_GUINT64_FORMAT " and one "
                    "mapping cache entry (8 bytes)", mem, set->max_streams, buf);
        return false;
    }
    return true;
}

NhDstream *nh_dstream_new(const NhPlacementSettings *set, uint64_t lpages, uint32_t kmax)
{
    NhDstream *ds = g_new0(NhDstream, 1);

    ds->nparts = set->partitions;
    ds->nhost = set->host_streams;
    ds->nlog = ds->nparts + ds->nhost;
    ds->lpages = lpages;
    ds->interval = set->timestamp;
    ds->count = g_new0(uint32_t, ds->nlog);
    ds->x = g_new0(double, ds->nlog);
    ds->assign = g_new0(uint8_t, ds->nlog);
    /* seed 003 starts at the maximum: k streams' buffers until the first timestamp */
    ds->km.kmax = kmax;
    ds->km.k = 0;
    ds->km.rule = set->k_rule;
    return ds;
}

void nh_dstream_free(NhDstream *ds)
{
    if (ds) {
        g_free(ds->count);
        g_free(ds->x);
        g_free(ds->assign);
        g_free(ds);
    }
}

uint32_t nh_dstream_k(const NhDstream *ds)
{
    return ds->km.k ? ds->km.k : ds->km.kmax;
}

static uint32_t logical(const NhDstream *ds, uint64_t lpn, uint16_t tag)
{
    return tag ? ds->nparts + tag - 1 : (uint32_t)(lpn * ds->nparts / ds->lpages);
}

uint32_t nh_dstream_page(NhDstream *ds, uint64_t lpn, uint16_t tag, bool overwrite,
                         bool *timestamp)
{
    uint32_t l = logical(ds, lpn, tag), s = ds->assign[l];

    ds->count[l] += overwrite;
    *timestamp = ++ds->written == ds->interval;
    if (*timestamp) {
        for (uint32_t i = 0; i < ds->nlog; i++) {
            ds->x[i] = ds->count[i];
        }
        nh_kmeans_step(&ds->km, ds->x, ds->nlog, ds->assign);
        memset(ds->count, 0, sizeof(uint32_t) * ds->nlog);
        ds->written = 0;
    }
    return s;
}

uint32_t nh_dstream_stream_of_tag(const NhDstream *ds, uint16_t tag)
{
    return tag ? ds->assign[ds->nparts + tag - 1] : 0;
}

void nh_dstream_release(NhDstream *ds, uint16_t id)
{
    /* its history ends: counted from zero, on the coldest stream until the next timestamp */
    ds->count[ds->nparts + id - 1] = 0;
    ds->assign[ds->nparts + id - 1] = 0;
}

/* Serialised form: written, k, centroids (as IEEE bits), then per logical stream its count and
 * physical stream. */
void nh_dstream_save(const NhDstream *ds, GByteArray *o)
{
    nh_put64(o, ds->written);
    nh_put32(o, ds->km.k);
    for (uint32_t j = 0; j < ds->km.k; j++) {
        uint64_t bits;
        memcpy(&bits, &ds->km.cent[j], sizeof(bits));
        nh_put64(o, bits);
    }
    for (uint32_t i = 0; i < ds->nlog; i++) {
        nh_put32(o, ds->count[i]);
        nh_put32(o, ds->assign[i]);
    }
}

bool nh_dstream_load(NhDstream *ds, NhReader *r)
{
    uint32_t k;

    if (!nh_get64(r, &ds->written) || ds->written >= ds->interval || !nh_get32(r, &k) ||
        k > ds->km.kmax) {
        return false;
    }
    ds->km.k = k;
    for (uint32_t j = 0; j < k; j++) {
        uint64_t bits;
        if (!nh_get64(r, &bits)) {
            return false;
        }
        memcpy(&ds->km.cent[j], &bits, sizeof(bits));
    }
    for (uint32_t i = 0; i < ds->nlog; i++) {
        uint32_t a;
        if (!nh_get32(r, &ds->count[i]) || !nh_get32(r, &a) || a >= nh_dstream_k(ds)) {
            return false;
        }
        ds->assign[i] = (uint8_t)a;
    }
    return true;
}
