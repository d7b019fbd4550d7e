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
 * own after these two; GC copies of every stream share the GC frontier.  Staging (stage.h) then
 * keeps one buffer per physical stream.
 *
 * Pages a request programs are issued to the NAND model as one batch, so that pages on the
 * same die, in different planes, at the same page offset become one multi-plane program (or
 * read).  With stripe-merge or one-shot, host pages are first staged (metadata only) and
 * programmed a staging unit at a time: a full stripe (one page, with one-shot one word line,
 * on every plane), or with one-shot alone one word line.  docs/engine.md has the rules.
 */
#include "mem.h"
#include "stage.h"

enum { FRONT_HOST, FRONT_GC, NFRONT };

typedef struct PageFtl {
    NhBlocks   b;
    NhFtlEnv   env;
    uint32_t  *l2p;
    uint64_t  *touched;     /* chunks of l2p ever mapped, for save */
    NhStage    stage;
    NhPlacement *pl;        /* NULL: placement off */
} PageFtl;

static inline bool staged(const PageFtl *f, uint64_t lpn)
{
    return nh_stage_holds(&f->stage, lpn);
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

/* A staged page is programmed on @ppn at @t: it becomes the page's mapping. */
static uint64_t page_put(void *ctx, uint64_t lpn, uint32_t ppn, uint64_t t)
{
    PageFtl *f = ctx;
    uint64_t end = nh_nand_program(f->b.nand, ppn, t);
    uint32_t old1 = f->l2p[lpn];    /* after the allocation: GC may have moved it */

    if (old1) {
        nh_blocks_invalidate(&f->b, old1 - 1);
    }
    map(f, lpn, ppn);
    return end;
}

static void page_background(void *opaque, uint64_t now, bool defer)
{
    PageFtl *f = opaque;

    nh_stage_background(&f->stage, now);
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

static uint64_t page_write(void *opaque, const NhFtlWrite *w, uint64_t now)
{
    PageFtl *f = opaque;
    uint64_t done = now;

    if (f->stage.unit) {
        return nh_stage_write(&f->stage, w, now);
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

static uint64_t page_trim(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PageFtl *f = opaque;

    f->b.now = now;
    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = f->l2p[lpn + i];
        nh_stage_drop(&f->stage, lpn + i);
        if (ppn1) {
            nh_blocks_invalidate(&f->b, ppn1 - 1);
            f->l2p[lpn + i] = 0;
        }
    }
    return now;
}

static uint64_t page_flush(void *opaque, uint64_t now)
{
    PageFtl *f = opaque;
    /* only staged pages are not on NAND yet */
    return nh_stage_flush(&f->stage, now);
}

static bool page_is_mapped(void *opaque, uint64_t lpn)
{
    PageFtl *f = opaque;
    return f->l2p[lpn] != 0 || staged(f, lpn);
}

static uint32_t page_home(void *opaque, uint64_t lpn)
{
    PageFtl *f = opaque;
    return nh_blocks_home(&f->b, lpn);
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
    nh_stage_destroy(&f->stage);
    g_free(f);
}

/* Two frontiers per plane and a reserve of one (see page_create); a reserved block more per
 * physical stream beyond the first. */
static uint32_t page_spare_blocks(const NhConfig *cfg, uint64_t lpages, uint32_t npu)
{
    return nh_blocks_min_spare(cfg, lpages, npu, NFRONT, 1, nh_placement_max_streams(cfg) - 1);
}

static void *page_create(const NhFtlEnv *env, GError **errp)
{
    PageFtl *f = g_new0(PageFtl, 1);
    NhBlocksSpec spec = {
        .nfront = NFRONT + nh_placement_max_streams(env->cfg) - 1,
        .gc_front = { FRONT_GC },
        .reserve = 1,
        .reserved = nh_placement_max_streams(env->cfg) - 1,
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
    nh_stage_init(&f->stage, env, &f->b, f->l2p, f->pl, FRONT_HOST, page_put, f);
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

    if (!err) {
        err = nh_stage_check(&f->stage, f->env.lpages);
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

static void page_prefetch(const void *opaque, uint64_t lpn, bool deep)
{
    const PageFtl *f = opaque;
    uint32_t old1;

    if (!deep) {
        __builtin_prefetch(&f->l2p[lpn]);
    } else if ((old1 = f->l2p[lpn])) {
        nh_blocks_prefetch(&f->b, old1 - 1);
    }
}

const NhFtlOps nh_ftl_page_ops = {
    .features = NH_FTL_ONE_SHOT | NH_FTL_STRIPE_MERGE | NH_FTL_PLACEMENT |
                NH_FTL_DYNAMIC_ALLOC,
    .stream_release = page_stream_release,
    .stream_of = page_stream_of,
    .keys = nh_stage_keys,
    .counters = nh_stage_counters,
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
    .home = page_home,
    .save = page_save,
    .load = page_load,
    .check = page_check,
    .spare_blocks = page_spare_blocks,
    .prefetch = page_prefetch,
};
