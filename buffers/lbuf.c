/*
 * lbuf.c - l-buffer (seed 002): groups are blocks; the victim is the group of smallest density
 * theta(g) = 1 / (a(g)^(1-alpha) * s(g)^(1+alpha)), a = requests since its last write, s = its
 * dirty sectors.  alpha = -1 is pure recency (BPLRU-like), +1 pure size (FAB-like).
 *  - Plugging or logging: a victim is padded to a whole block (plugging) when more than lambda of
 *    its sectors are dirty.  lambda comes from what the FTL measurably charged in the last
 *    session: with c_log = t_prog + (merge copies * (t_read + t_prog) + merge erases beyond one
 *    per plug * t_erase) / pages logged, plugging d of P pages costs P*(t_read + t_prog) +
 *    t_erase - d*t_read and logging them d*c_log, so plugging wins above
 *    lambda = (P*(t_read + t_prog) + t_erase) / ((c_log + t_read) * P)  (capped at 1).
 *    The first session uses 1/2 (seed 002's BPLRU and REF setting).  Plugging pays only where
 *    it turns a merge into a switch: a session in which the FTL reclaimed blocks (copies or
 *    erases) without a single merge has no log blocks to spare (page, dftl), its copies are
 *    garbage collection that padding pages would only add to, so lambda becomes 1 (never pad).
 *  - alpha is tuned per session of lbuf-session write requests: lbuf-instances meta-simulation
 *    instances (lbuf-sim.c) with alphas spread evenly over [-1, 1] run on the same writes all
 *    along; the one that charged the least flash time in the session gives the next session's
 *    alpha.  The first session uses the middle instance's.  A fixed lbuf-alpha replaces the
 *    tuning alone: no instance runs (their only output is alpha), sessions still end and
 *    lambda is tuned as above, so fixed and tuned alphas compare with the same plugging rule.
 */
#include "lbuf.h"

#include <math.h>

typedef struct Lbuf {
    NhBuf       *b;
    NhBufBuckets bk;        /* blocks by dirty sectors */
    uint32_t     spb;
    double       alpha, lambda;
    uint32_t     ninst, cur;    /* 0 instances: alpha fixed by lbuf-alpha */
    LbSim      **inst;
    uint64_t     last_seq, session;
    uint64_t     session_len;   /* lbuf-session */
    uint64_t    *ctr;           /* lbuf's counters (LB_*) */
    uint64_t     copies0, erases0, merges0, logged, plugs;  /* this session's FTL costs */
} Lbuf;

GList *lb_pick(NhBufBuckets *bk, LbGetFn get, double alpha, uint64_t now)
{
    GList *best = NULL;
    double bs = 0;
    uint64_t ba = 0, blbn = 0;
    uint32_t bsz = 0;

    for (GList *ne = bk->nonempty.head; ne; ne = ne->next) {
        GList *l = ((NhBufBucket *)ne->data)->q.head;
        uint64_t stamp, lbn, a;
        uint32_t size;
        double sc;

        get(l, &stamp, &size, &lbn);
        a = now >= stamp ? now - stamp + 1 : 1;
        sc = (1 - alpha) * log((double)a) + (1 + alpha) * log((double)MAX(size, 1));
        if (!best || sc > bs + 1e-12 ||
            (sc >= bs - 1e-12 &&
             (a > ba || (a == ba && (size > bsz || (size == bsz && lbn < blbn)))))) {
            best = l;
            bs = sc;
            ba = a;
            bsz = size;
            blbn = lbn;
        }
    }
    return best;
}

static double alpha_of(const Lbuf *s, uint32_t i)
{
    return -1.0 + 2.0 * i / (s->ninst - 1);
}

static uint64_t merges(const NhStats *st)
{
    return st->ftl_merges_switch + st->ftl_merges_partial + st->ftl_merges_full;
}

enum { LB_MODE_HOST, LB_MODE_DEVICE };     /* lbuf-mode: full or memory-reduced */
static const char *const lbuf_mode_names[] = {
    [LB_MODE_HOST] = "host", [LB_MODE_DEVICE] = "device", NULL,
};

enum { KEY_INSTANCES, KEY_SESSION, KEY_MODE, KEY_ALPHA };   /* lbuf_keys, in order */
static const NhConfigKey lbuf_keys[] = {
    { "lbuf-instances", NH_KEY_UINT, 0, 0, "3", 2, 9, NULL, false,
      "lbuf: meta-simulation instances, alphas spread evenly over [-1, 1]" },
    { "lbuf-session", NH_KEY_UINT, 0, 0, "4096", 16, 1u << 30, NULL, false,
      "lbuf: write requests per tuning session" },
    { "lbuf-mode", NH_KEY_ENUM, 0, 0, "device", 0, 0, lbuf_mode_names, false,
      "lbuf: meta-simulation form, host (full) or device (memory-reduced)" },
    { "lbuf-alpha", NH_KEY_FRACTION, 0, 0, "auto", 0, 0, NULL, true,
      "lbuf: victim-order alpha in [-1, 1] (-1 recency, +1 size); auto = tuned each session by "
      "the meta-simulation. lambda is tuned either way" },
    { NULL },
};

/* alpha_sessions: per instance, keyed by its alpha; none run with a fixed lbuf-alpha */
static bool alpha_session_key(const void *own, uint32_t i, char *key, size_t len)
{
    const uint64_t *keys = own;
    uint32_t n = (uint32_t)keys[KEY_INSTANCES];

    if (!isnan(nh_key_fraction(keys[KEY_ALPHA])) || i >= n) {
        return false;
    }
    g_snprintf(key, len, "%.2f", -1.0 + 2.0 * i / (n - 1));
    return true;
}

/* in slot order (LB_*) */
static const NhStat lbuf_counters[] = {
    { .path = "buffer.lbuf.sessions" },
    { .path = "buffer.lbuf.alpha", .kind = NH_STAT_MILLI, .bias = -1000 },
    { .path = "buffer.lbuf.lambda", .kind = NH_STAT_MILLI },
    { .path = "buffer.lbuf.alpha_sessions", .kind = NH_STAT_ARRAY,
      .n = LB_SIM_BYTES - LB_ALPHA_SESSIONS, .element = alpha_session_key },
    { .path = "buffer.lbuf.sim_bytes" },
    { .path = NULL },
};

static void *lbuf_create(NhBuf *b)
{
    Lbuf *s = g_new0(Lbuf, 1);
    const NhConfig *cfg = b->env.cfg;
    const uint64_t *keys = b->env.keys;
    double alpha = nh_key_fraction(keys[KEY_ALPHA]);
    LbSimParams p = {
        .pages = b->pages,
        .spp = b->spp,
        .cap_sectors = cfg->buffer_size / 512,
        .log_blocks = b->env.log_blocks,
        .device = keys[KEY_MODE] == LB_MODE_DEVICE,
        .t_read = b->env.t_read,
        .t_prog = b->env.t_prog,
        .t_erase = b->env.t_erase,
        .sink = &b->env.sink,
    };

    s->b = b;
    s->spb = b->pages * b->spp;
    nh_bk_init(&s->bk, s->spb + 1);
    s->ctr = b->env.counters;
    s->session_len = keys[KEY_SESSION];
    s->ninst = isnan(alpha) ? (uint32_t)keys[KEY_INSTANCES] : 0;
    s->cur = s->ninst / 2;
    s->alpha = s->ninst ? alpha_of(s, s->cur) : alpha;
    s->lambda = 0.5;
    s->inst = g_new0(LbSim *, s->ninst);
    for (uint32_t i = 0; i < s->ninst; i++) {
        s->inst[i] = lb_sim_new(&p, alpha_of(s, i));
    }
    s->copies0 = b->st->ftl_gc_page_copies;
    s->erases0 = b->st->ftl_gc_blocks;
    s->merges0 = merges(b->st);
    return s;
}

static void lbuf_destroy(void *p)
{
    Lbuf *s = p;
    for (uint32_t i = 0; i < s->ninst; i++) {
        lb_sim_free(s->inst[i]);
    }
    g_free(s->inst);
    nh_bk_clear(&s->bk);
    g_free(s);
}

/* lambda from the FTL's merge work this session, per page the buffer logged */
static void tune_lambda(Lbuf *s)
{
    const NhBuf *b = s->b;
    uint64_t copies = b->st->ftl_gc_page_copies, erases = b->st->ftl_gc_blocks;
    uint64_t m = merges(b->st);
    double tr = (double)b->env.t_read, tp = (double)b->env.t_prog, te = (double)b->env.t_erase;
    double P = b->pages;

    /* a statistics reset in the session leaves nothing to measure */
    if (copies >= s->copies0 && erases >= s->erases0 && m == s->merges0 &&
        (copies > s->copies0 || erases > s->erases0)) {
        s->lambda = 1.0;    /* reclaimed without merging: no log blocks, padding only adds */
    } else if (s->logged && copies >= s->copies0 && erases >= s->erases0) {
        uint64_t de = erases - s->erases0;
        double over = ((double)(copies - s->copies0) * (tr + tp) +
                       (double)(de > s->plugs ? de - s->plugs : 0) * te) / (double)s->logged;
        s->lambda = MIN(1.0, (P * (tr + tp) + te) / ((tp + over + tr) * P));
    }
    s->copies0 = copies;
    s->erases0 = erases;
    s->merges0 = m;
    s->logged = s->plugs = 0;
}

static void end_session(Lbuf *s)
{
    double best = 0;
    uint32_t win = s->cur;

    for (uint32_t i = 0; i < s->ninst; i++) {
        double c = lb_sim_take_cost(s->inst[i]);
        /* the instance in force keeps its place unless another is strictly cheaper */
        if (i == 0 || c < best || (c == best && i == s->cur)) {
            best = c;
            win = i;
        }
    }
    if (s->ninst) {
        s->cur = win;
        s->alpha = alpha_of(s, win);
        s->ctr[LB_ALPHA_SESSIONS + win]++;
    }
    s->ctr[LB_SESSIONS]++;
    tune_lambda(s);
    s->session = 0;
}

static void blk_get(GList *link, uint64_t *stamp, uint32_t *size, uint64_t *lbn)
{
    NhBufBlock *k = link->data;
    *stamp = k->stamp;
    *size = k->sectors;
    *lbn = k->lbn;
}

static void lbuf_written(void *p, const NhBufWrite *w)
{
    Lbuf *s = p;
    NhBufBlock *k = w->blk;

    if (s->b->wseq != s->last_seq) {
        s->last_seq = s->b->wseq;
        if (++s->session > s->session_len) {
            end_session(s);
            s->session = 1;
        }
    }
    for (uint32_t i = 0; i < s->ninst; i++) {
        lb_sim_write(s->inst[i], k->lbn, w->sec0, w->sec1, s->b->wseq, s->lambda);
    }
    if (k->region) {
        nh_bk_del(&s->bk, &k->link, k->aux);
    }
    k->region = 1;
    k->aux = k->sectors;
    nh_bk_put(&s->bk, &k->link, k->aux);
}

static void lbuf_removed(void *p, NhBufPage *pg)
{
    Lbuf *s = p;
    NhBufBlock *k = pg->blk;

    nh_bk_del(&s->bk, &k->link, k->aux);
    if (nh_buf_ndirty(k)) {
        k->aux = k->sectors;
        nh_bk_put(&s->bk, &k->link, k->aux);
    } else {
        k->region = 0;
    }
}

static void lbuf_victim(void *p, NhBufVictim *v)
{
    Lbuf *s = p;

    v->blk = lb_pick(&s->bk, blk_get, s->alpha, s->b->wseq)->data;
    v->pad = (double)v->blk->sectors / s->spb > s->lambda;
    if (v->pad) {
        s->plugs++;
    } else {
        s->logged += nh_buf_ndirty(v->blk);
    }
}

/* Also refreshes lbuf's gauges in the statistics (alpha, lambda, meta-simulation memory). */
static size_t lbuf_metadata(void *p)
{
    Lbuf *s = p;
    uint64_t sim = 0;

    for (uint32_t i = 0; i < s->ninst; i++) {
        sim += lb_sim_bytes(s->inst[i]);
    }
    s->ctr[LB_ALPHA] = (uint64_t)llround((s->alpha + 1.0) * 1000.0);
    s->ctr[LB_LAMBDA] = (uint64_t)llround(s->lambda * 1000.0);
    s->ctr[LB_SIM_BYTES] = MAX(s->ctr[LB_SIM_BYTES], sim);
    return (size_t)s->bk.n * sizeof(NhBufBucket);
}

const NhBufPolicy nh_buf_lbuf = {
    .name = "lbuf",
    .keys = lbuf_keys,
    .counters = lbuf_counters,
    .counters_when_chosen = true,
    .create = lbuf_create,
    .destroy = lbuf_destroy,
    .written = lbuf_written,
    .removed = lbuf_removed,
    .victim = lbuf_victim,
    .metadata = lbuf_metadata,
};
