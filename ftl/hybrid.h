/*
 * hybrid.h - the log-block machinery shared by the hybrid FTLs (bast, fast, sast).
 *
 * Model (docs/ftl-hybrid.md has the rules and the papers):
 *  - Logical block lbn = lpn / pages.  Each logical block has at most one *data block*, in which
 *    logical page lbn * pages + o can only live at page o (block mapping).  A write whose page
 *    of the data block is still erased and comes after every programmed page goes there in
 *    place; a write to a logical block without a data block first gets one.  Pages of a block
 *    are programmed in ascending order and may skip erased pages (holes), as NAND allows.
 *  - Every other write goes to a *log block*, chosen by the policy (the one thing bast, fast
 *    and sast differ in).  Log blocks belong to *sets*: a set has a cap on its log blocks and
 *    keeps them oldest first; all log blocks also form one list in allocation order.  At most
 *    log-blocks log blocks exist at a time.  A log block records whether its pages so far are
 *    exactly offsets 0, 1, 2, ... of one logical block (in order).
 *  - A merge empties one log block (the victim):
 *      switch   the victim is in order and full: it becomes the data block, the old one is erased;
 *      partial  the victim is in order but shorter: the latest copies of the remaining offsets
 *               are copied into it, then as switch;
 *      full     otherwise, per logical block with a valid page in the victim: its latest pages
 *               (data block and every log block) are copied to a new block, which becomes the
 *               data block; the old data block is erased; at the end the victim is erased.
 *    Switch and partial also require that no valid page of the old data block sits at an offset
 *    the victim has already programmed (it could not be carried over); else the merge is full.
 *    A log block that becomes full and in order is switched at once (it costs one erase).
 *  - Every copy is a real nh_nand_read + nh_nand_program, every erase a real nh_nand_erase,
 *    booked on the die and bus timelines before the host page that needed the room, which waits
 *    for the merge.  Trimmed pages are invalid and never copied.
 *  - Free blocks: one pool over the whole device, a min-heap on erase count (dynamic wear
 *    levelling), ties broken so that consecutive allocations go to different planes (channel
 *    fastest).  Blocks = data blocks + log blocks + free blocks; since there are at most as many
 *    data blocks as logical blocks and create checks blocks > logical blocks + log-blocks, a
 *    merge always finds the free block it needs.
 */
#ifndef NH_HYBRID_H
#define NH_HYBRID_H

#include "ftl.h"

#define HY_NONE UINT32_MAX

enum { HY_FREE = 0, HY_DATA, HY_LOG };

typedef struct HyBlock {
    uint32_t valid;
    uint32_t wp;            /* one past the highest programmed page */
    uint32_t lbn;           /* data: its logical block; log: the logical block it holds in
                             * order, HY_NONE when its pages are not offsets 0.. of one block */
    uint32_t set;           /* log: its set */
    uint32_t prev, next;    /* log: all log blocks, oldest first */
    uint32_t sprev, snext;  /* log: its set's log blocks, oldest first */
    uint8_t  state;
} HyBlock;

typedef struct HySet {
    uint32_t head, tail;    /* oldest and newest log block */
    uint32_t count, cap;
} HySet;

typedef struct HyFtl HyFtl;

/* The policy: a page for a write of @lpn that cannot go to its data block in place.  It may
 * merge (through hy_log_page or hy_merge) to make room. */
typedef uint32_t (*HyPlaceFn)(HyFtl *h, uint64_t lpn);

struct HyFtl {
    NhFtlEnv   env;
    NhNand    *nand;
    NhStats   *st;
    HyPlaceFn  place;
    uint32_t   pages;
    uint64_t   nblocks;
    uint32_t   nlb;         /* logical blocks */
    uint32_t   nlog, max_log;
    uint32_t   log_head, log_tail;  /* all log blocks, oldest first */
    uint32_t   nsets;
    HySet     *sets;
    uint32_t   set_lbns;    /* log blocks of set s hold only logical blocks s * set_lbns ..
                             * (s + 1) * set_lbns - 1; 0 = any (checked by hy_check) */
    uint32_t  *l2p;         /* [lpages] ppn + 1 of the latest copy, 0 = unmapped */
    uint32_t  *p2l;         /* [npages] lpn + 1 of a valid page, 0 = invalid or erased */
    uint32_t  *dmap;        /* [nlb] data block + 1, 0 = none */
    HyBlock   *blk;
    uint32_t  *heap;        /* free blocks, min-heap on (erase count, plane-spreading rank) */
    uint64_t   nfree;
    uint32_t  *rank;        /* [npu] position of a plane in channel-fastest order */
    uint64_t   now;         /* arrival of the request being served */
    uint64_t   merge_done;  /* when the merges made for the current page end */
};

/*
 * Create the shared state with @nsets sets, each capped at @cap log blocks; the policy may
 * change caps afterwards.  Resolves log-blocks (auto: every spare block but one) and checks it.
 */
HyFtl *hy_new(const NhFtlEnv *env, HyPlaceFn place, uint32_t nsets, uint32_t cap,
              GError **errp);

/* A page in the newest log block of @set; when that is full, make room (merge the set's oldest
 * log block if the set is at its cap, else the oldest log block of all if the pool is) and open
 * a new one. */
uint32_t hy_log_page(HyFtl *h, uint32_t set, uint64_t lpn);

/* Merge log block @b (switch, partial or full, see above) and take it out of the pool. */
void hy_merge(HyFtl *h, uint32_t b);

static inline uint32_t hy_lbn(const HyFtl *h, uint64_t lpn) { return (uint32_t)(lpn / h->pages); }

/* The hooks every hybrid FTL uses unchanged. */
uint32_t hy_spare_blocks(const NhFtlEnv *env, uint32_t npu);

/* The keys every hybrid FTL has (log-blocks), in each one's ops as shared_keys. */
enum { HY_KEY_LOG_BLOCKS };
extern const NhConfigKey hy_keys[];
void hy_destroy(void *ftl);
uint64_t hy_read(void *ftl, uint64_t lpn, uint64_t npages, uint64_t now);
uint64_t hy_write(void *ftl, const NhFtlWrite *w, uint64_t now);
uint64_t hy_trim(void *ftl, uint64_t lpn, uint64_t npages, uint64_t now);
uint64_t hy_flush(void *ftl, uint64_t now);
void hy_background(void *ftl, uint64_t now, bool defer);
bool hy_is_mapped(void *ftl, uint64_t lpn);
uint32_t hy_home(void *ftl, uint64_t lpn);
bool hy_in_log(void *ftl, uint64_t lbn);

void hy_save(void *ftl, GByteArray *out);
bool hy_load(void *ftl, const guint8 *data, size_t len, GError **errp);
char *hy_check(void *ftl);

/* Least-worn first; among equals, block-in-plane then plane in channel-fastest order, so that
 * consecutive allocations land on different buses and dies. */
static inline uint64_t hy_free_key(const HyFtl *h, uint32_t b)
{
    uint32_t per = h->nand->g.blocks, npu = h->nand->g.npu;
    uint64_t spread = (uint64_t)(b % per) * npu + h->rank[b / per];
    return ((uint64_t)h->nand->erase_count[b] << 32) | spread;
}

static inline uint32_t hy_data_block(const HyFtl *h, uint32_t lbn)
{
    return h->dmap[lbn] ? h->dmap[lbn] - 1 : HY_NONE;
}

/* for hybrid.c and hybrid-check.c: would a valid copy of @lpn at @ppn break the block rules? */
static inline bool hy_misplaced(const HyFtl *h, uint64_t lpn, uint32_t ppn)
{
    const HyBlock *k = &h->blk[ppn / h->pages];
    bool fixed = k->state == HY_DATA || k->lbn != HY_NONE;
    return k->state == HY_FREE || ppn % h->pages >= k->wp ||
           (fixed && (hy_lbn(h, lpn) != k->lbn || lpn % h->pages != ppn % h->pages));
}

/* The ops table of a hybrid FTL: its name and create hook, every other hook hybrid.c's. */
#define NH_HYBRID_OPS(ftl_name, create_fn, key_table) { \
    .name = (ftl_name),                             \
    .keys = (key_table),                            \
    .shared_keys = hy_keys,                         \
    .create = (create_fn),                          \
    .destroy = hy_destroy,                          \
    .read = hy_read,                                \
    .write = hy_write,                              \
    .trim = hy_trim,                                \
    .flush = hy_flush,                              \
    .background = hy_background,                    \
    .is_mapped = hy_is_mapped,                      \
    .home = hy_home,                                \
    .save = hy_save,                                \
    .load = hy_load,                                \
    .check = hy_check,                              \
    .spare_blocks = hy_spare_blocks,                \
    .in_log = hy_in_log,                            \
}

#endif
