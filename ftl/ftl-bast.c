/*
 * ftl-bast.c - block-associative sector translation (BAST, Kim et al. 2002's log block scheme):
 * each logical block has at most one log block.  A write that cannot go in place appends to its
 * logical block's log block; a full log block is merged (switch if written in order, else full)
 * before a new one is opened, and when the pool of log-blocks is exhausted the oldest log block
 * is merged.  In hybrid.c's terms: sets of one logical block capped at one log block.
 */
#include "hybrid.h"

static uint32_t bast_place(HyFtl *h, uint64_t lpn)
{
    return hy_log_page(h, hy_lbn(h, lpn), lpn);
}

static void *bast_create(const NhFtlEnv *env, GError **errp)
{
    uint64_t nlb = (env->lpages + env->nand->g.pages - 1) / env->nand->g.pages;
    HyFtl *h = hy_new(env, bast_place, (uint32_t)nlb, 1, errp);

    if (h) {
        h->set_lbns = 1;
    }
    return h;
}

const NhFtlOps nh_ftl_bast_ops = NH_HYBRID_OPS("bast", bast_create, NULL);
