/* blocks-check.c - the block layer's consistency check (contract in blocks.h): the mapping
 * both ways, valid counts, buckets, free heaps and frontiers. */
#include "blocks.h"

char *nh_map_check(NhBlocks *b, const uint32_t *fwd, uint64_t n, uint8_t kind, const char *what)
{
    for (uint64_t i = 0; i < n; i++) {
        uint32_t ppn1 = fwd[i];
        const NhBlock *k;
        if (!ppn1) {
            continue;
        }
        k = &b->blk[(ppn1 - 1) / b->pages];
        if (b->p2l[ppn1 - 1] != i + 1) {
            return g_strdup_printf("%s %" G_GUINT64_FORMAT " maps to ppn %u, which belongs to %d",
                                   what, i, ppn1 - 1, (int)b->p2l[ppn1 - 1] - 1);
        }
        if ((ppn1 - 1) % b->pages >= k->wp) {
            return g_strdup_printf("%s %" G_GUINT64_FORMAT " maps to unprogrammed ppn %u",
                                   what, i, ppn1 - 1);
        }
        if (k->kind != kind) {
            return g_strdup_printf("%s %" G_GUINT64_FORMAT " maps to ppn %u in a block of "
                                   "kind %u", what, i, ppn1 - 1, k->kind);
        }
    }
    return NULL;
}

/* A block of the zones (zones.h) is never in the FTL's pools nor its map. */
static char *zone_block_wrong(const NhBlock *blk, uint64_t k, uint32_t mapped)
{
    if (blk->state != NH_BLK_FREE || blk->valid || blk->wp || mapped) {
        return g_strdup_printf("block %" G_GUINT64_FORMAT " is the zones' but in the FTL's "
                               "pools or map", k);
    }
    return NULL;
}

char *nh_blocks_check(NhBlocks *b)
{
    uint64_t nblocks = (uint64_t)b->npu * b->blocks;
    uint64_t nfree = 0, nopen = 0, nclosed = 0, heaped = 0, in_buckets = 0;
    uint32_t *count = g_new0(uint32_t, nblocks);
    char *err = NULL;

    for (uint64_t ppn = 0; ppn < b->nand->g.npages && !err; ppn++) {
        uint32_t owner1 = b->p2l[ppn];
        if (owner1) {
            uint8_t kind = b->blk[ppn / b->pages].kind;
            if (b->s.where(b->s.ctx, kind, owner1 - 1) != ppn + 1) {
                err = g_strdup_printf("ppn %" G_GUINT64_FORMAT " valid for owner %u (kind %u), "
                                      "which maps elsewhere", ppn, owner1 - 1, kind);
            }
            count[ppn / b->pages]++;
        }
    }
    for (uint64_t k = 0; k < nblocks && !err; k++) {
        const NhBlock *blk = &b->blk[k];
        if (!nh_blocks_ftls(b, k)) {
            err = zone_block_wrong(blk, k, count[k]);
            continue;
        }
        if (count[k] != blk->valid) {
            err = g_strdup_printf("block %" G_GUINT64_FORMAT ": valid count %u, recount %u",
                                  k, blk->valid, count[k]);
        } else if (blk->wp != b->nand->next_page[k]) {
            err = g_strdup_printf("block %" G_GUINT64_FORMAT ": write pointer %u, NAND at %u",
                                  k, blk->wp, b->nand->next_page[k]);
        } else if (blk->state == NH_BLK_FREE) {
            nfree++;
            if (blk->wp || blk->valid) {
                err = g_strdup_printf("free block %" G_GUINT64_FORMAT " is not empty", k);
            }
        } else if (blk->state == NH_BLK_OPEN) {
            const NhPlane *p = &b->pu[k / b->blocks];
            bool frontier = false;
            nopen++;
            for (uint32_t f = 0; f < b->s.nfront; f++) {
                frontier |= p->open[f] == k && blk->kind == b->s.front_kind[f];
            }
            if (!frontier) {
                err = g_strdup_printf("open block %" G_GUINT64_FORMAT " is no frontier", k);
            }
        } else {
            nclosed++;
        }
    }
    for (uint32_t pu = 0; pu < b->npu && !err; pu++) {
        NhPlane *p = &b->pu[pu];
        uint32_t unopened = nh_blocks_unopened(b, p);
        if (p->nkept > unopened) {
            err = g_strdup_printf("plane %u keeps %u blocks for %u reserved frontiers not open",
                                  pu, p->nkept, unopened);
        }
        for (uint32_t i = 0; i < p->nkept && !err; i++) {
            if (b->blk[p->kept[i]].state != NH_BLK_FREE || p->kept[i] / b->blocks != pu) {
                err = g_strdup_printf("plane %u keeps block %u, which is not free here", pu,
                                      p->kept[i]);
            }
        }
        heaped += p->nfree + p->nkept;
        for (uint32_t i = 0; i < p->nfree && !err; i++) {
            if (b->blk[p->heap[i]].state != NH_BLK_FREE || p->heap[i] / b->blocks != pu ||
                !nh_blocks_ftls(b, p->heap[i])) {
                err = g_strdup_printf("plane %u: heap holds block %u, which is not free here",
                                      pu, p->heap[i]);
            } else if (i && nh_blocks_wear(b, p->heap[(i - 1) / 2]) >
                                nh_blocks_wear(b, p->heap[i])) {
                err = g_strdup_printf("plane %u: free heap out of order", pu);
            }
        }
        for (uint32_t v = 0; v <= b->pages && !err; v++) {
            for (uint32_t k = *nh_blocks_bucket(b, pu, v); k != NH_NONE && !err; k = b->blk[k].next) {
                in_buckets++;
                if (b->blk[k].state != NH_BLK_CLOSED || b->blk[k].valid != v) {
                    err = g_strdup_printf("block %u in bucket %u has valid %u", k, v,
                                          b->blk[k].valid);
                }
            }
        }
    }
    if (!err && in_buckets != nclosed) {
        err = g_strdup_printf("%" G_GUINT64_FORMAT " closed blocks but %" G_GUINT64_FORMAT
                              " in the victim buckets", nclosed, in_buckets);
    }
    if (!err && heaped != nfree) {
        err = g_strdup_printf("%" G_GUINT64_FORMAT " free blocks but %" G_GUINT64_FORMAT
                              " in the free heaps and kept", nfree, heaped);
    }
    if (!err && nfree + nopen + nclosed != (uint64_t)b->npu * b->usable) {
        err = g_strdup_printf("free %" G_GUINT64_FORMAT " + open %" G_GUINT64_FORMAT
                              " + closed %" G_GUINT64_FORMAT " != %" G_GUINT64_FORMAT " blocks",
                              nfree, nopen, nclosed, (uint64_t)b->npu * b->usable);
    }
    g_free(count);
    return err;
}
