/*
 * ftl-page.c - page-level mapping with garbage collection and wear levelling.
 *
 * The map is the page-mapped core's l2p (pagemap.h) and nothing else: flat, wholly in memory,
 * in an anonymous mapping, so the kernel supplies zero pages only where something was written.
 * Blocks, free pools, GC and wear levelling are the shared block layer's (blocks.h); each plane
 * has two frontiers, one for host writes and one for GC and wear-levelling copies, so relocated
 * (colder) data does not mix with new writes.  A host write never takes a plane's last free
 * block: it is the GC reserve.
 *
 * With placement (placement.h) each physical stream beyond the first has a host frontier of its
 * own after these two; GC copies of every stream share the GC frontier.  Staging (stage.h) then
 * keeps one buffer per physical stream.
 */
#include "pagemap.h"

enum { NFRONT = FRONT_GC + 1 };

/* l2p is the whole map: the core needs no hook */
static const PmapMap flat_map = { NULL };

/* GC moved pages: only the forward map changes, no flash operation of our own. */
static uint64_t page_moved(void *opaque, uint8_t kind, uint32_t pu, const NhMove *m, uint32_t n,
                           uint64_t now)
{
    PmapFtl *f = opaque;
    (void)kind;
    (void)pu;
    for (uint32_t i = 0; i < n; i++) {
        f->l2p[m[i].owner] = m[i].ppn + 1;
    }
    return now;
}

static uint32_t page_where(void *opaque, uint8_t kind, uint32_t owner)
{
    PmapFtl *f = opaque;
    (void)kind;
    return f->l2p[owner];
}

static uint64_t page_trim(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PmapFtl *f = opaque;

    f->b.now = now;
    for (uint64_t i = 0; i < npages; i++) {
        pmap_unmap(f, lpn + i);
    }
    return now;
}

/* Two frontiers per plane and a reserve of one (see page_create). */
static uint32_t page_spare_blocks(const NhFtlEnv *env, uint32_t npu)
{
    return pmap_min_spare(env, npu, NFRONT, 1);
}

static void *page_create(const NhFtlEnv *env, GError **errp)
{
    PmapFtl *f = g_new0(PmapFtl, 1);
    NhBlocksSpec spec = {
        .gc_front = { FRONT_GC },
        .reserve = 1,
        .live_pages = env->lpages,
        .moved = page_moved,
        .where = page_where,
        .ctx = f,
    };

    pmap_place(f, env, &flat_map, &spec, NFRONT);
    if (!pmap_init(f, &spec, errp)) {
        pmap_destroy(f);
        return NULL;
    }
    return f;
}

static void page_prefetch(const void *opaque, uint64_t lpn, bool deep)
{
    const PmapFtl *f = opaque;
    uint32_t old1;

    if (!deep) {
        __builtin_prefetch(&f->l2p[lpn]);
    } else if ((old1 = f->l2p[lpn])) {
        nh_blocks_prefetch(&f->b, old1 - 1);
    }
}

const NhFtlOps nh_ftl_page_ops = NH_PAGEMAP_OPS("page", page_create, page_trim,
                                                page_spare_blocks, 0,
                                                .prefetch = page_prefetch);
