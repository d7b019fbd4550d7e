/*
 * ftl-fast.c - fully-associative sector translation (FAST, Lee et al. 2007): one sequential log
 * block (SW) and log-blocks - 1 random log blocks (RW) shared by every logical block.
 *  - A write of offset 0 that cannot go in place starts a new SW; the old SW is merged first
 *    (switch when full, partial when in order but short, full otherwise).
 *  - A write of the next offset of the SW's logical block appends to the SW.
 *  - Any other write appends to the newest RW; when every RW is full the oldest is the victim
 *    (round robin): each logical block with a valid page in it is fully merged, then it is erased.
 * The machinery is hybrid.c; the SW and the RWs are its sets 0 and 1.
 */
#include "hybrid.h"

enum { SW, RW };

static uint32_t fast_place(HyFtl *h, uint64_t lpn)
{
    uint32_t sw = h->sets[SW].tail, off = (uint32_t)(lpn % h->pages);

    if (off == 0) {
        if (sw != HY_NONE) {
            hy_merge(h, sw);
        }
        return hy_log_page(h, SW, lpn);
    }
    if (sw != HY_NONE && h->blk[sw].lbn == hy_lbn(h, lpn) && h->blk[sw].wp == off) {
        return hy_log_page(h, SW, lpn);
    }
    return hy_log_page(h, RW, lpn);
}

static void *fast_create(const NhFtlEnv *env, GError **errp)
{
    HyFtl *h = hy_new(env, fast_place, 2, 1, errp);

    if (h && h->max_log < 2) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "log-blocks: fast needs at least 2 (one sequential, one random), got %u",
                    h->max_log);
        hy_destroy(h);
        return NULL;
    }
    if (h) {
        h->sets[RW].cap = h->max_log - 1;
    }
    return h;
}

const NhFtlOps nh_ftl_fast_ops = NH_HYBRID_OPS("fast", fast_create, NULL);
