/*
 * ftl-page.c - page-level mapping with garbage collection and wear levelling.
 *
 * The forward map l2p[lpn] holds ppn + 1 (0: unmapped) in an anonymous mapping, so the kernel
 * supplies zero pages only where something was written.  Blocks, free pools, GC and wear
 * levelling are the shared block layer's (blocks.h); each plane has two frontiers, one for host
 * writes and one for GC and wear-levelling copies, so relocated (colder) data does not mix with
 * new writes.  A host write never takes a plane's last free block: it is the GC reserve.
 *
 * With placement (placement.h) each physical stream beyond the first has a host frontier of its
 * own after these two; GC copies of every stream share the GC frontier.
 *
 * Pages a request programs are issued to the NAND model as one batch, so that pages on the
 * same die, in different planes, at the same page offset become one multi-plane program (or
 * read).  With stripe-merge or one-shot, host pages are first staged (metadata only) and
 * programmed a staging unit at a time: a full stripe (one page, with one-shot one word line,
 * on every plane), or with one-shot alone one word line.  docs/engine.md has the rules.
 */
#include "blocks.h"
#include "mem.h"
#include "placement.h"

enum { FRONT_HOST, FRONT_GC, NFRONT };

static const char *const switch_names[] = { "off", "on", NULL };

/* The page FTL's own keys: one-shot is the NAND's (a word line's pages programmed at once),
 * stripe-merge is the staging policy of this FTL alone. */
static const NhConfigKey page_keys[] = {
    { "stripe-merge", NH_KEY_ENUM, 0, 0, "off", 0, 0, switch_names, false,
      "ftl=page: stage writes until a full stripe (a page, with one-shot a word line, on every "
      "plane) and program it at once (seed 001); flush, FUA or one t-prog of waiting forces a "
      "partial stripe out" },
    { NULL },
};

/* The staging counters (docs/statistics.md), in env.counters */
enum { STRIPE_MERGES, STRIPE_PARTIAL, STRIPE_PAGES, STRIPE_OVERWRITES, STRIPE_PADDING };
static const NhStat page_counters[] = {
    [STRIPE_MERGES] = { .path = "ftl.stripe_merges" },
    [STRIPE_PARTIAL] = { .path = "ftl.stripe_partial" },
    [STRIPE_PAGES] = { .path = "ftl.stripe_pages" },
    [STRIPE_OVERWRITES] = { .path = "ftl.stripe_overwrites" },
    [STRIPE_PADDING] = { .path = "ftl.stripe_padding" },
    { .path = NULL },
};

/*
 * The staging buffer: device DRAM the capacitors protect, so a staged write completes when its
 * pages are in it.  Two halves: one fills while the other's pages are programmed, and a half
 * is free again only when its program has ended (a controller keeps the data until the program
 * has succeeded, to rewrite it elsewhere if it fails).
 */
typedef struct Stage {
    uint32_t    unit;       /* pages programmed together; 0 = no staging */
    uint32_t    n;          /* pages staged in the filling half */
    uint64_t   *lpn;        /* [unit] in arrival order */
    GHashTable *slot;       /* lpn + 1 -> index + 1 */
    uint64_t    first;      /* when the first of them was staged */
    uint64_t    ready;      /* their read-modify-write reads end */
    uint64_t    free_at[2]; /* each half is free from then on */
    uint32_t    cur;        /* the filling half */
    uint64_t    wait;       /* the longest a page stays staged: one tPROG */
} Stage;

typedef struct PageFtl {
    NhBlocks   b;
    NhFtlEnv   env;
    uint32_t  *l2p;
    uint64_t  *touched;     /* chunks of l2p ever mapped, for save */
    Stage      stage;
    NhPlacement *pl;        /* NULL: placement off */
} PageFtl;

#define LPN_KEY(lpn) GSIZE_TO_POINTER((gsize)(lpn) + 1)

static inline bool staged(const PageFtl *f, uint64_t lpn)
{
    return f->stage.unit && g_hash_table_contains(f->stage.slot, LPN_KEY(lpn));
}

static void map(PageFtl *f, uint64_t lpn, uint32_t ppn)
{
    f->l2p[lpn] = ppn + 1;
    nh_blocks_map(&f->b, (uint32_t)lpn, ppn);
    nh_touch(f->touched, lpn);
}

/* GC moved pages: only the forward map changes, no flash operation of our own. */
static uint64_t page_moved(void *opaque, uint8_t kind, uint32_t pu, const NhMove *m, uint32_t n,
                           uint64_t now)
{
    PageFtl *f = opaque;
    (void)kind;
    (void)pu;
    for (uint32_t i = 0; i < n; i++) {
        f->l2p[m[i].owner] = m[i].ppn + 1;
    }
    return now;
}

static uint32_t page_where(void *opaque, uint8_t kind, uint32_t owner)
{
    PageFtl *f = opaque;
    (void)kind;
    return f->l2p[owner];
}

/* Program the filling half at @t (its pages all staged by then): allocate each page a frontier
 * page, one-shot word lines padded with pages that hold nothing, all in one NAND batch. */
static uint64_t program_stage(PageFtl *f, uint64_t t)
{
    Stage *s = &f->stage;
    NhNand *nand = f->b.nand;
    uint32_t pad = (nand->wl - s->n % nand->wl) % nand->wl;
    uint64_t done = t;

    t = MAX(t, s->ready);
    f->b.now = t;
    nh_nand_batch_begin(nand);
    for (uint32_t i = 0; i < s->n + pad; i++) {
        uint32_t ppn = nh_blocks_host_page(&f->b, FRONT_HOST);
        uint64_t end = nh_nand_program(nand, ppn, t);
        done = MAX(done, end);
        if (i < s->n) {
            uint32_t old1 = f->l2p[s->lpn[i]];  /* after the allocation: GC may move it */
            if (old1) {
                nh_blocks_invalidate(&f->b, old1 - 1);
            }
            map(f, s->lpn[i], ppn);
        }
    }
    nh_nand_batch_end(nand);
    f->env.counters[s->n == s->unit ? STRIPE_MERGES : STRIPE_PARTIAL]++;
    f->env.counters[STRIPE_PAGES] += s->n;
    f->env.counters[STRIPE_PADDING] += pad;
    g_hash_table_remove_all(s->slot);
    s->n = 0;
    s->ready = 0;
    s->free_at[s->cur] = done;
    s->cur ^= 1;
    return done;
}

/* Program a partial staging unit (flush, FUA, bounded wait); @t if nothing is staged. */
static uint64_t force_stage(PageFtl *f, uint64_t t)
{
    return f->stage.n ? program_stage(f, t) : t;
}

static void page_background(void *opaque, uint64_t now, bool defer)
{
    PageFtl *f = opaque;
    Stage *s = &f->stage;

    /* a page waits at most one tPROG for its stripe-mates: it then reaches NAND at most one
     * program time later than it would have unmerged */
    if (s->n && now >= s->first + s->wait) {
        force_stage(f, s->first + s->wait);
    }
    nh_blocks_background(&f->b, now, defer);
}

static uint64_t page_read(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PageFtl *f = opaque;
    uint64_t done = now;

    nh_nand_batch_begin(f->b.nand);
    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = f->l2p[lpn + i];
        /* a staged page is served from the staging buffer */
        if (ppn1 && !staged(f, lpn + i)) {
            uint64_t t = nh_nand_read(f->b.nand, ppn1 - 1, now);
            done = t > done ? t : done;
        }
    }
    nh_nand_batch_end(f->b.nand);
    return done;
}

/* Stage the pages of @w; completes when they are all in the staging buffer, or with FUA when
 * they are programmed. */
static uint64_t staged_write(PageFtl *f, const NhFtlWrite *w, uint64_t now)
{
    Stage *s = &f->stage;
    uint64_t ack = now, programmed = now;

    for (uint64_t i = 0; i < w->npages; i++) {
        uint64_t lpn = w->lpn + i;
        bool partial = (i == 0 && w->head_partial) || (i == w->npages - 1 && w->tail_partial);

        if (staged(f, lpn)) {
            /* the staged copy takes the new data: no read, no program of its own */
            f->env.counters[STRIPE_OVERWRITES]++;
            continue;
        }
        if (s->n == s->unit) {
            /* a full stripe is programmed only when a new page needs its room, so that writes
             * to its pages until then (the rest of a page written in parts) still join it */
            uint64_t t = program_stage(f, ack);
            programmed = MAX(programmed, t);
        }
        ack = MAX(ack, s->free_at[s->cur]);
        if (partial && f->l2p[lpn]) {
            /* the rest of the page joins it in the buffer before the program */
            uint64_t t = nh_nand_read(f->b.nand, f->l2p[lpn] - 1, ack);
            s->ready = MAX(s->ready, t);
            f->b.st->ftl_rmw_reads++;
        }
        if (!s->n) {
            s->first = ack;
        }
        s->lpn[s->n] = lpn;
        g_hash_table_insert(s->slot, LPN_KEY(lpn), GUINT_TO_POINTER(s->n + 1));
        s->n++;
    }
    if (w->fua) {
        uint64_t t = force_stage(f, ack);
        return MAX(programmed, t);
    }
    return ack;
}

static uint64_t page_write(void *opaque, const NhFtlWrite *w, uint64_t now)
{
    PageFtl *f = opaque;
    uint64_t done = now;

    if (f->stage.unit) {
        return staged_write(f, w, now);
    }
    f->b.now = now;
    nh_nand_batch_begin(f->b.nand);
    for (uint64_t i = 0; i < w->npages; i++) {
        uint64_t lpn = w->lpn + i;
        uint32_t ppn, front = f->pl ? nh_placement_front(f->pl, lpn, w->stream, f->l2p[lpn])
                                    : FRONT_HOST;
        uint64_t t = nh_blocks_host_write(&f->b, f->l2p, w, i, front, now, &ppn);

        done = t > done ? t : done;
        map(f, w->lpn + i, ppn);
    }
    nh_nand_batch_end(f->b.nand);
    return done;
}

/* Drop a trimmed page from the filling half: the last staged page takes its place. */
static void unstage(Stage *s, uint64_t lpn)
{
    uint32_t i = GPOINTER_TO_UINT(g_hash_table_lookup(s->slot, LPN_KEY(lpn))) - 1;

    g_hash_table_remove(s->slot, LPN_KEY(lpn));
    if (i != --s->n) {
        s->lpn[i] = s->lpn[s->n];
        g_hash_table_insert(s->slot, LPN_KEY(s->lpn[i]), GUINT_TO_POINTER(i + 1));
    }
}

static uint64_t page_trim(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PageFtl *f = opaque;

    f->b.now = now;
    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = f->l2p[lpn + i];
        if (staged(f, lpn + i)) {
            unstage(&f->stage, lpn + i);
        }
        if (ppn1) {
            nh_blocks_invalidate(&f->b, ppn1 - 1);
            f->l2p[lpn + i] = 0;
        }
    }
    return now;
}

static uint64_t page_flush(void *opaque, uint64_t now)
{
    /* only staged pages are not on NAND yet */
    return force_stage(opaque, now);
}

static bool page_is_mapped(void *opaque, uint64_t lpn)
{
    PageFtl *f = opaque;
    return f->l2p[lpn] != 0 || staged(f, lpn);
}

static void page_destroy(void *opaque)
{
    PageFtl *f = opaque;
    if (!f) {
        return;
    }
    nh_blocks_destroy(&f->b);
    nh_placement_free(f->pl);
    nh_lazy_free(f->l2p, f->env.lpages, sizeof(uint32_t));
    g_free(f->touched);
    g_free(f->stage.lpn);
    if (f->stage.slot) {
        g_hash_table_destroy(f->stage.slot);
    }
    g_free(f);
}

/* Two frontiers per plane, one more per physical stream beyond the first, and a reserve of one
 * (see page_create). */
static uint32_t page_spare_blocks(const NhConfig *cfg, uint64_t lpages, uint32_t npu)
{
    return nh_blocks_min_spare(cfg, lpages, npu, NFRONT + nh_placement_max_streams(cfg) - 1, 1);
}

static void *page_create(const NhFtlEnv *env, GError **errp)
{
    PageFtl *f = g_new0(PageFtl, 1);
    NhBlocksSpec spec = {
        .nfront = NFRONT + nh_placement_max_streams(env->cfg) - 1,
        .gc_front = { FRONT_GC },
        .reserve = 1,
        .live_pages = env->lpages,
        .moved = page_moved,
        .where = page_where,
        .ctx = f,
    };

    f->env = *env;
    f->pl = nh_placement_new(env, FRONT_HOST, NFRONT);
    if (f->pl) {
        for (uint32_t i = 0; i < spec.nfront; i++) {
            spec.front_stream[i] = (uint8_t)nh_placement_stream_of(f->pl, i);
        }
        spec.stream_copies = env->placement + NH_PC_GC_COPIES;
    }
    if (!nh_blocks_init(&f->b, env, &spec, errp)) {
        page_destroy(f);
        return NULL;
    }
    f->l2p = nh_lazy_alloc(env->lpages, sizeof(uint32_t));
    f->touched = nh_touched_new(env->lpages);
    if (!f->l2p || !f->touched) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "not enough host memory for the mapping table of %" G_GUINT64_FORMAT
                    " logical pages", env->lpages);
        page_destroy(f);
        return NULL;
    }
    bool merge = nh_config_uint(env->cfg, "stripe-merge") == NH_ON;
    if (merge || env->cfg->one_shot == NH_ON) {
        NhNand *nand = env->nand;
        f->stage.unit = nand->wl * (merge ? nand->g.npu : 1);
        f->stage.lpn = g_new(uint64_t, f->stage.unit);
        f->stage.slot = g_hash_table_new(g_direct_hash, g_direct_equal);
        f->stage.wait = nand->t.t_prog;
    }
    return f;
}

/* State: the block layer's section, then the mapping as runs (see blocks.c). */
static void page_save(void *opaque, GByteArray *o)
{
    PageFtl *f = opaque;
    nh_blocks_save(&f->b, o);
    nh_map_save(o, f->l2p, f->touched, f->env.lpages);
    if (f->pl) {
        nh_placement_save(f->pl, o);
    }
}

static bool page_load(void *opaque, const guint8 *data, size_t len, GError **errp)
{
    PageFtl *f = opaque;
    NhReader r = { data, data + len };

    if (!nh_blocks_load(&f->b, &r, errp) ||
        !nh_map_load(&f->b, &r, f->l2p, f->touched, f->env.lpages, 0, errp)) {
        return false;
    }
    if (f->pl && !nh_placement_load(f->pl, &r)) {
        return nh_blocks_corrupt(&f->b, errp, "placement");
    }
    if (r.p != r.end) {
        return nh_blocks_corrupt(&f->b, errp, "trailing bytes");
    }
    nh_blocks_load_done(&f->b);
    return true;
}

static char *page_check(void *opaque)
{
    PageFtl *f = opaque;
    char *err = nh_map_check(&f->b, f->l2p, f->env.lpages, 0, "lpn");
    const Stage *s = &f->stage;

    if (s->unit && (s->n > s->unit || g_hash_table_size(s->slot) != s->n)) {
        return g_strdup_printf("%u pages staged of %u, %u in the index", s->n, s->unit,
                               g_hash_table_size(s->slot));
    }
    for (uint32_t i = 0; i < s->n && !err; i++) {
        if (s->lpn[i] >= f->env.lpages ||
            GPOINTER_TO_UINT(g_hash_table_lookup(s->slot, LPN_KEY(s->lpn[i]))) != i + 1) {
            err = g_strdup_printf("staged page %u (lpn %" G_GUINT64_FORMAT ") not indexed",
                                  i, s->lpn[i]);
        }
    }
    return err ? err : nh_blocks_check(&f->b);
}

static void page_stream_release(void *opaque, uint16_t id)
{
    PageFtl *f = opaque;
    nh_placement_release(f->pl, id);
}

static uint64_t page_stream_unit(void *opaque, uint16_t tag, bool close)
{
    PageFtl *f = opaque;
    return nh_placement_unit(f->pl, &f->b, tag, close);
}

static int page_stream_of(void *opaque, uint64_t lpn)
{
    PageFtl *f = opaque;
    return staged(f, lpn) ? -1 : nh_placement_page_stream(f->pl, &f->b, f->l2p[lpn]);
}

const NhFtlOps nh_ftl_page_ops = {
    .features = NH_FTL_ONE_SHOT | NH_FTL_STRIPE_MERGE | NH_FTL_PLACEMENT |
                NH_FTL_DYNAMIC_ALLOC,
    .stream_release = page_stream_release,
    .stream_of = page_stream_of,
    .keys = page_keys,
    .counters = page_counters,
    .stream_unit = page_stream_unit,
    .name = "page",
    .create = page_create,
    .destroy = page_destroy,
    .read = page_read,
    .write = page_write,
    .trim = page_trim,
    .flush = page_flush,
    .background = page_background,
    .is_mapped = page_is_mapped,
    .save = page_save,
    .load = page_load,
    .check = page_check,
    .spare_blocks = page_spare_blocks,
};
