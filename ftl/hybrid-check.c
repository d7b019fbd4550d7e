/* hybrid-check.c - the hybrid FTLs' consistency check (contract in hybrid.h): block states,
 * valid counts, the log lists and sets, the free-block heap, the mapping both ways. */
#include "hybrid.h"

static char *check_blocks(HyFtl *h, const uint32_t *count)
{
    uint64_t nfree = 0, ndata = 0, nlog = 0;

    for (uint64_t b = 0; b < h->nblocks; b++) {
        const HyBlock *k = &h->blk[b];
        if (count[b] != k->valid) {
            return g_strdup_printf("block %" G_GUINT64_FORMAT ": valid count %u, recount %u",
                                   b, k->valid, count[b]);
        }
        if (k->wp != h->nand->next_page[b]) {
            return g_strdup_printf("block %" G_GUINT64_FORMAT ": write pointer %u, NAND at %u",
                                   b, k->wp, h->nand->next_page[b]);
        }
        switch (k->state) {
        case HY_FREE:
            nfree++;
            if (k->wp || k->valid) {
                return g_strdup_printf("free block %" G_GUINT64_FORMAT " is not empty", b);
            }
            break;
        case HY_DATA:
            ndata++;
            if (k->lbn >= h->nlb || h->dmap[k->lbn] != b + 1) {
                return g_strdup_printf("data block %" G_GUINT64_FORMAT " of logical block %u "
                                       "is not its data block", b, k->lbn);
            }
            break;
        case HY_LOG:
            nlog++;
            break;
        default:
            return g_strdup_printf("block %" G_GUINT64_FORMAT ": bad state %u", b, k->state);
        }
    }
    for (uint32_t lbn = 0; lbn < h->nlb; lbn++) {
        uint32_t d = hy_data_block(h, lbn);
        if (d != HY_NONE && (d >= h->nblocks || h->blk[d].state != HY_DATA)) {
            return g_strdup_printf("logical block %u maps to block %u, no data block", lbn, d);
        }
    }
    if (nfree != h->nfree) {
        return g_strdup_printf("%" G_GUINT64_FORMAT " free blocks but %" G_GUINT64_FORMAT
                               " in the free heap", nfree, h->nfree);
    }
    if (nlog != h->nlog || nlog > h->max_log) {
        return g_strdup_printf("%" G_GUINT64_FORMAT " log blocks, counted %u, at most %u",
                               nlog, h->nlog, h->max_log);
    }
    if (nfree + ndata + nlog != h->nblocks || nfree == 0) {
        return g_strdup_printf("free %" G_GUINT64_FORMAT " + data %" G_GUINT64_FORMAT
                               " + log %" G_GUINT64_FORMAT " != %" G_GUINT64_FORMAT
                               " blocks, or no free block left for merges",
                               nfree, ndata, nlog, h->nblocks);
    }
    for (uint64_t i = 0; i < h->nfree; i++) {
        if (h->blk[h->heap[i]].state != HY_FREE) {
            return g_strdup_printf("free heap holds block %u, which is not free", h->heap[i]);
        }
        if (i && hy_free_key(h, h->heap[(i - 1) / 2]) > hy_free_key(h, h->heap[i])) {
            return g_strdup("free heap out of order");
        }
    }
    return NULL;
}

static char *check_logs(HyFtl *h)
{
    uint32_t seen = 0, in_sets = 0;

    for (uint32_t b = h->log_head, prev = HY_NONE; b != HY_NONE; prev = b, b = h->blk[b].next) {
        if (h->blk[b].state != HY_LOG || h->blk[b].prev != prev || ++seen > h->nlog) {
            return g_strdup_printf("log list broken at block %u", b);
        }
    }
    if (seen != h->nlog) {
        return g_strdup_printf("log list holds %u blocks, %u counted", seen, h->nlog);
    }
    for (uint32_t s = 0; s < h->nsets; s++) {
        uint32_t n = 0;
        for (uint32_t b = h->sets[s].head; b != HY_NONE; b = h->blk[b].snext) {
            if (h->blk[b].state != HY_LOG || h->blk[b].set != s || ++n > h->sets[s].count) {
                return g_strdup_printf("set %u: list broken at block %u", s, b);
            }
        }
        if (n != h->sets[s].count || n > h->sets[s].cap) {
            return g_strdup_printf("set %u holds %u log blocks, counted %u, cap %u", s, n,
                                   h->sets[s].count, h->sets[s].cap);
        }
        in_sets += n;
    }
    if (in_sets != h->nlog) {
        return g_strdup_printf("sets hold %u log blocks, %u counted", in_sets, h->nlog);
    }
    return NULL;
}

char *hy_check(void *opaque)
{
    HyFtl *h = opaque;
    uint32_t *count = g_new0(uint32_t, h->nblocks);
    char *err = NULL;

    for (uint64_t lpn = 0; lpn < h->env.lpages && !err; lpn++) {
        uint32_t ppn1 = h->l2p[lpn];
        if (!ppn1) {
            continue;
        }
        if (h->p2l[ppn1 - 1] != lpn + 1) {
            err = g_strdup_printf("lpn %" G_GUINT64_FORMAT " maps to ppn %u, which belongs to %d",
                                  lpn, ppn1 - 1, (int)h->p2l[ppn1 - 1] - 1);
        } else if (hy_misplaced(h, lpn, ppn1 - 1)) {
            err = g_strdup_printf("lpn %" G_GUINT64_FORMAT " at ppn %u: unprogrammed, or not at "
                                  "its offset of its block", lpn, ppn1 - 1);
        }
    }
    for (uint64_t ppn = 0; ppn < h->nand->g.npages && !err; ppn++) {
        uint32_t lpn1 = h->p2l[ppn];
        if (lpn1) {
            if (lpn1 > h->env.lpages || h->l2p[lpn1 - 1] != ppn + 1) {
                err = g_strdup_printf("ppn %" G_GUINT64_FORMAT " valid for lpn %u, which maps "
                                      "elsewhere", ppn, lpn1 - 1);
            }
            count[ppn / h->pages]++;
            if (!err && h->set_lbns && h->blk[ppn / h->pages].state == HY_LOG &&
                hy_lbn(h, lpn1 - 1) / h->set_lbns != h->blk[ppn / h->pages].set) {
                err = g_strdup_printf("ppn %" G_GUINT64_FORMAT " holds lpn %u, outside the set "
                                      "of its log block", ppn, lpn1 - 1);
            }
        }
    }
    if (!err) {
        err = check_blocks(h, count);
    }
    if (!err) {
        err = check_logs(h);
    }
    g_free(count);
    return err;
}
