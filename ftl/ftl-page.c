/*
 * ftl-page.c - page-level mapping with garbage collection and wear levelling.
 *
 * The forward map l2p[lpn] holds ppn + 1 (0: unmapped) in an anonymous mapping, so the kernel
 * supplies zero pages only where something was written.  Blocks, free pools, GC and wear
 * levelling are the shared block layer's (blocks.h); each plane has two frontiers, one for host
 * writes and one for GC and wear-levelling copies, so relocated (colder) data does not mix with
 * new writes.  A host write never takes a plane's last free block: it is the GC reserve.
 */
#include "blocks.h"
#include "engine.h"
#include "mem.h"

enum { FRONT_HOST, FRONT_GC, NFRONT };

typedef struct PageFtl {
    NhBlocks   b;
    NhFtlEnv   env;
    uint32_t  *l2p;
    uint64_t  *touched;     /* chunks of l2p ever mapped, for save */
} PageFtl;

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

static void page_background(void *opaque, uint64_t now, bool defer)
{
    PageFtl *f = opaque;
    nh_blocks_background(&f->b, now, defer);
}

static uint64_t page_read(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PageFtl *f = opaque;
    uint64_t done = now;

    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = f->l2p[lpn + i];
        if (ppn1) {
            uint64_t t = nh_nand_read(f->b.nand, ppn1 - 1, now);
            done = t > done ? t : done;
        }
    }
    return done;
}

static uint64_t page_write(void *opaque, const NhFtlWrite *w, uint64_t now)
{
    PageFtl *f = opaque;
    uint64_t done = now;

    f->b.now = now;
    for (uint64_t i = 0; i < w->npages; i++) {
        uint64_t lpn = w->lpn + i;
        uint32_t old1 = f->l2p[lpn], ppn;
        uint64_t start = now, t;
        bool partial = (i == 0 && w->head_partial) || (i == w->npages - 1 && w->tail_partial);

        if (partial && old1) {
            /* the rest of the page must be carried over */
            start = nh_nand_read(f->b.nand, old1 - 1, now);
            f->b.st->ftl_rmw_reads++;
        }
        ppn = nh_blocks_host_page(&f->b, FRONT_HOST);
        t = nh_nand_program(f->b.nand, ppn, start);
        done = t > done ? t : done;
        old1 = f->l2p[lpn];     /* GC above may have moved the old copy */
        if (old1) {
            nh_blocks_invalidate(&f->b, old1 - 1);
        }
        map(f, lpn, ppn);
    }
    return done;
}

static uint64_t page_trim(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PageFtl *f = opaque;

    f->b.now = now;
    for (uint64_t i = 0; i < npages; i++) {
        uint32_t ppn1 = f->l2p[lpn + i];
        if (ppn1) {
            nh_blocks_invalidate(&f->b, ppn1 - 1);
            f->l2p[lpn + i] = 0;
        }
    }
    return now;
}

static uint64_t page_flush(void *opaque, uint64_t now)
{
    (void)opaque;
    return now;     /* no volatile state: every write is on NAND when it completes */
}

static bool page_is_mapped(void *opaque, uint64_t lpn)
{
    PageFtl *f = opaque;
    return f->l2p[lpn] != 0;
}

static void page_destroy(void *opaque)
{
    PageFtl *f = opaque;
    if (!f) {
        return;
    }
    nh_blocks_destroy(&f->b);
    nh_lazy_free(f->l2p, f->env.lpages, sizeof(uint32_t));
    g_free(f->touched);
    g_free(f);
}

/* Two frontiers per plane and a reserve of one (see page_create). */
static uint32_t page_spare_blocks(const NhConfig *cfg, uint64_t lpages, uint32_t npu)
{
    return nh_blocks_min_spare(cfg, lpages, npu, NFRONT, 1);
}

static void *page_create(const NhFtlEnv *env, GError **errp)
{
    PageFtl *f = g_new0(PageFtl, 1);
    NhBlocksSpec spec = {
        .nfront = NFRONT,
        .front_kind = { 0, 0 },
        .gc_front = { FRONT_GC },
        .reserve = 1,
        .live_pages = env->lpages,
        .moved = page_moved,
        .where = page_where,
        .ctx = f,
    };

    f->env = *env;
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
    return f;
}

/* State: the block layer's section, then the mapping as runs (see blocks.c). */
static void page_save(void *opaque, GByteArray *o)
{
    PageFtl *f = opaque;
    nh_blocks_save(&f->b, o);
    nh_map_save(o, f->l2p, f->touched, f->env.lpages);
}

static bool page_load(void *opaque, const guint8 *data, size_t len, GError **errp)
{
    PageFtl *f = opaque;
    NhReader r = { data, data + len };

    if (!nh_blocks_load(&f->b, &r, errp) ||
        !nh_map_load(&f->b, &r, f->l2p, f->touched, f->env.lpages, 0, errp)) {
        return false;
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
    return err ? err : nh_blocks_check(&f->b);
}

const NhFtlOps nh_ftl_page_ops = {
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
