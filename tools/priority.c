/* priority.c - response times per class, priority or not (priority.h). */
#include "priority.h"

#include <stdlib.h>
#include <glib.h>

enum { CLASSES = 2, OPS = 2 };

struct NhPrioLat {
    GArray *samples[CLASSES][OPS];     /* [priority][write] of uint64_t latencies */
};

NhPrioLat *nh_prio_lat_new(void)
{
    NhPrioLat *p = g_new0(NhPrioLat, 1);

    for (int c = 0; c < CLASSES; c++) {
        for (int o = 0; o < OPS; o++) {
            p->samples[c][o] = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        }
    }
    return p;
}

void nh_prio_lat_add(NhPrioLat *p, NhOp op, bool priority, uint64_t latency_ns)
{
    if (op == NH_OP_READ || op == NH_OP_WRITE) {
        g_array_append_val(p->samples[priority][op == NH_OP_WRITE], latency_ns);
    }
}

uint64_t nh_prio_lat_marked(const NhPrioLat *p)
{
    return p->samples[1][0]->len + p->samples[1][1]->len;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The @pct % quantile of @n sorted samples, nearest rank: the ceil(pct n / 100)-th smallest, as
 * the engine's histograms define it (docs/statistics.md), but exact. */
static uint64_t nearest_rank(const uint64_t *v, guint n, uint64_t pct)
{
    uint64_t rank = (pct * n + 99) / 100;

    return n ? v[MAX(rank, 1) - 1] : 0;
}

static JsonObject *hist_json(GArray *a)
{
    JsonObject *h = json_object_new();
    uint64_t *v = (uint64_t *)(void *)a->data;
    double sum = 0;

    qsort(v, a->len, sizeof(*v), by_value);
    for (guint i = 0; i < a->len; i++) {
        sum += (double)v[i];
    }
    json_object_set_int_member(h, "count", a->len);
    json_object_set_double_member(h, "mean", a->len ? sum / a->len : 0);
    json_object_set_int_member(h, "p50", (gint64)nearest_rank(v, a->len, 50));
    json_object_set_int_member(h, "p99", (gint64)nearest_rank(v, a->len, 99));
    json_object_set_int_member(h, "max", a->len ? (gint64)v[a->len - 1] : 0);
    return h;
}

JsonObject *nh_prio_lat_json(NhPrioLat *p, bool told)
{
    static const char *const cls[CLASSES] = { "other", "priority" };
    JsonObject *root = json_object_new(), *lat = json_object_new();

    json_object_set_int_member(root, "requests", (gint64)nh_prio_lat_marked(p));
    json_object_set_boolean_member(root, "told", told);
    for (int c = CLASSES - 1; c >= 0; c--) {
        JsonObject *ops = json_object_new();

        json_object_set_object_member(ops, "read", hist_json(p->samples[c][0]));
        json_object_set_object_member(ops, "write", hist_json(p->samples[c][1]));
        json_object_set_object_member(lat, cls[c], ops);
    }
    json_object_set_object_member(root, "latency_ns", lat);
    return root;
}

void nh_prio_lat_free(NhPrioLat *p)
{
    if (!p) {
        return;
    }
    for (int c = 0; c < CLASSES; c++) {
        for (int o = 0; o < OPS; o++) {
            g_array_free(p->samples[c][o], TRUE);
        }
    }
    g_free(p);
}
