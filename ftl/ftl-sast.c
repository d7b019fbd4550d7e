/*
 * ftl-sast.c - set-associative sector translation (SAST; with K-associative sets, KAST):
 * logical blocks in sets of sast-n share up to sast-k log blocks, drawn from the pool of
 * log-blocks.  A write that cannot go in place goes to its set's newest log block; when that is
 * full the set's oldest log block is merged if the set holds sast-k already, else the oldest log
 * block of the whole pool if the pool is exhausted.  The machinery is hybrid.c.
 */
#include "hybrid.h"

enum { SAST_N, SAST_K };    /* sast_keys, in order */
static const NhConfigKey sast_keys[] = {
    { "sast-n", NH_KEY_UINT, 0, 0, "4", 1, 4096, NULL, false,
      "sast: logical blocks per set (sharing the set's log blocks)" },
    { "sast-k", NH_KEY_UINT, 0, 0, "2", 1, 4096, NULL, false,
      "sast: log blocks a set may hold at most (at most log-blocks)" },
    { NULL },
};

static uint32_t sast_place(HyFtl *h, uint64_t lpn)
{
    return hy_log_page(h, hy_lbn(h, lpn) / h->set_lbns, lpn);
}

static void *sast_create(const NhFtlEnv *env, GError **errp)
{
    uint32_t n = (uint32_t)env->keys[SAST_N];
    uint32_t k = (uint32_t)env->keys[SAST_K];
    uint64_t nlb = (env->lpages + env->nand->g.pages - 1) / env->nand->g.pages;
    HyFtl *h = hy_new(env, sast_place, (uint32_t)((nlb + n - 1) / n), k, errp);

    if (h && k > h->max_log) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "sast-k: a set may hold %u log blocks but the pool has only %u (log-blocks)",
                    k, h->max_log);
        hy_destroy(h);
        return NULL;
    }
    if (h) {
        h->set_lbns = n;
    }
    return h;
}

const NhFtlOps nh_ftl_sast_ops = NH_HYBRID_OPS("sast", sast_create, sast_keys);
