/*
 * blocks.h - flash blocks for the page-mapped FTLs (page, dftl): per-plane free pools, write
 * frontiers, valid-page accounting, victim selection, garbage collection, wear levelling, and the
 * block half of the state file.
 *
 * Contract:
 *  - The FTL owns its forward maps (logical page -> ppn, and for dftl translation page -> ppn);
 *    this layer owns the reverse map p2l[ppn] = owner + 1 (0: invalid), the block states and
 *    the free pools.  An owner is whatever the forward map is indexed by (a logical page number,
 *    or a translation page number); the kind of a block says which map its owners belong to.
 *  - A plane has @nfront write frontiers (open blocks), each holding one kind.  A victim of kind
 *    k is copied to frontier gc_front[k] of its own plane, so GC never needs space elsewhere.
 *    After copying, the FTL's @moved callback updates its forward map (and may itself write
 *    pages with nh_blocks_gc_page); then the victim is erased.
 *  - Free-space rules per plane: host-side allocations (nh_blocks_host_page) never take the last
 *    @reserve free blocks, which is what one GC step can need (a victim has fewer valid pages
 *    than a block holds, plus what @moved writes); below gc-critical they wait for GC; below
 *    gc-low, background GC reclaims one victim before each request until gc-high.  Thresholds
 *    are percentages of the plane's spare blocks (beyond what @live_pages need), because at
 *    steady state only spare blocks can ever be free.
 */
#ifndef NH_BLOCKS_H
#define NH_BLOCKS_H

#include "ftl.h"
#include "record.h"

#define NH_NONE UINT32_MAX
#define NH_MAX_FRONT 66     /* dftl's three and 63 more physical streams (placement.h) */
#define NH_MAX_KIND 2
#define NH_CHUNK_SHIFT 16   /* forward-map entries per bit of a "touched" map (used by save) */

enum { NH_BLK_FREE = 0, NH_BLK_OPEN, NH_BLK_CLOSED,
       NH_BLK_KEPT /* only while nh_blocks_load_done sorts the free blocks */ };

typedef struct NhBlock {
    uint32_t valid;
    uint32_t wp;            /* next page to program */
    uint32_t prev, next;    /* bucket links while closed */
    uint64_t mtime;         /* last program or invalidation, for cost-benefit */
    uint8_t  state;
    uint8_t  kind;          /* which forward map the owners of its pages belong to */
    uint8_t  front;         /* the frontier that opened it */
} NhBlock;

typedef struct NhPlane {
    uint32_t *heap;         /* free blocks, min-heap on erase count */
    uint32_t  nfree;
    uint32_t  open[NH_MAX_FRONT];   /* frontier blocks, NH_NONE when not open */
    uint32_t *kept;         /* free blocks kept for reserved frontiers without an open block */
    uint32_t  nkept;
    uint32_t  erases;       /* since the last static wear-levelling check */
    bool      bg;           /* background GC active */
} NhPlane;

typedef struct NhMove {
    uint32_t owner, ppn;    /* @owner's page now lives at @ppn */
} NhMove;

typedef struct NhBlocksSpec {
    uint32_t nfront;
    uint8_t  front_kind[NH_MAX_FRONT];
    uint8_t  gc_front[NH_MAX_KIND];
    uint32_t reserve;
    /* the last @reserved frontiers (placement's physical streams 1..k-1) have a block per plane
     * of their own (nh_blocks_min_spare's @reserved): a plane keeps one free for each of them
     * without an open block, and its watermarks leave them out, so writes that never reach
     * those frontiers see the plane as a device without them (GC at the same counts) */
    uint32_t reserved;
    uint64_t live_pages;    /* physical pages the FTL's valid data can need */
    /* The valid pages of a victim of @kind in plane @pu were copied.  Returns when the FTL's
     * own flash operations for it end (>= now). */
    uint64_t (*moved)(void *ctx, uint8_t kind, uint32_t pu, const NhMove *m, uint32_t n,
                      uint64_t now);
    /* For the consistency check: ppn + 1 the forward map of @kind gives @owner, 0 if none. */
    uint32_t (*where)(void *ctx, uint8_t kind, uint32_t owner);
    void *ctx;
    /* placement: GC copies out of a victim opened by frontier f are counted in
     * stream_copies[front_stream[f]] (NULL: not counted) */
    uint8_t   front_stream[NH_MAX_FRONT];
    uint64_t *stream_copies;
} NhBlocksSpec;

typedef struct NhBlocks {
    NhBlocksSpec s;
    NhFtlEnv   env;
    NhNand    *nand;
    NhStats   *st;
    uint32_t   pages, blocks, npu;
    uint32_t   usable;      /* a plane's first blocks, the FTL's; the rest are the zones' */
    uint32_t  *p2l;
    NhBlock   *blk;
    NhPlane   *pu;
    uint32_t  *bucket;      /* [npu * (pages + 1)] list heads by valid count */
    uint32_t  *order;       /* [npu] striping order */
    uint32_t   rr[NH_MAX_FRONT];    /* next index into order, per frontier */
    uint32_t   unit_left[NH_MAX_FRONT]; /* pages of the word line being handed out (one-shot) */
    uint32_t   unit_pu[NH_MAX_FRONT];   /* ... and its plane */
    bool       dynamic;     /* alloc=dynamic (alloc.h) */
    uint32_t   bg_active, bg_cursor;
    uint32_t   crit, low, high;     /* free-block thresholds per plane */
    NhMove    *moves;       /* [pages] scratch for one victim */
    uint64_t   now;         /* time of the request being served; the FTL sets it */
} NhBlocks;

/*
 * The fewest spare blocks per plane (beyond its share of @live_pages) with which GC works: the
 * @held blocks the FTL keeps open or for its own use, the free blocks the gc-high watermark
 * keeps (at least @reserve + 2), and room for invalid pages, so that at the watermark a victim
 * still has invalid pages and GC reclaims instead of compacting: for blocks=auto at least op
 * percent of the data blocks (at least one block), for an explicit blocks one block.  0 when
 * gc-high leaves no room at any size.  The FTL's spare_blocks hook; blocks=auto is sized with
 * it, an explicit blocks is checked against it.  @reserved (NhBlocksSpec.reserved) blocks come
 * on top, watermarks and room unchanged by them.
 */
uint32_t nh_blocks_min_spare(const NhConfig *cfg, uint64_t live_pages, uint32_t npu,
                             uint32_t held, uint32_t reserve, uint32_t reserved);
/* How many of @b's reserved frontiers have no open block in @p: the blocks @p keeps at most. */
uint32_t nh_blocks_unopened(const NhBlocks *b, const NhPlane *p);
bool nh_blocks_init(NhBlocks *b, const NhFtlEnv *env, const NhBlocksSpec *spec, GError **errp);
void nh_blocks_destroy(NhBlocks *b);

/* A page of frontier @front for host-side data, striped over the planes (alloc=static) or on the
 * plane whose die is free earliest (alloc=dynamic, alloc.h); may run foreground GC.
 * With one-shot (the NAND's wl = 3) each plane hands out a whole word line, 3 consecutive
 * pages, before the next plane's turn; the FTL asks for them in multiples of 3. */
uint32_t nh_blocks_host_page(NhBlocks *b, uint32_t front);
/* A page of frontier @front for what a GC step of plane @pu writes besides its copies: on a
 * plane with room that needs no GC, else in plane @pu, whose reserve covers it. */
uint32_t nh_blocks_gc_page(NhBlocks *b, uint32_t pu, uint32_t front);
/* map-unit: program the rest of the flash page @ppn (just programmed, the newest page of its
 * frontier's open block) with units that hold nothing, from @t; when they end. */
uint64_t nh_blocks_pad_page(NhBlocks *b, uint32_t ppn, uint64_t t);

/* Where host pages written in logical order from lpn 0 on a new device would have put page
 * @lpn (alloc=static's striping, a word line per plane with one-shot): a page of the same
 * plane and page offset.  The page-mapped FTLs' home hook (ftl.h). */
uint32_t nh_blocks_home(const NhBlocks *b, uint64_t lpn);

/* Frontier @front's reclaim unit (its open block on every plane): the pages still free in it
 * (the whole unit when the next write opens a new one); and closing it as it is, which returns
 * the pages left unwritten (FDP's Reclaim Unit Handle Update; docs/placement.md). */
uint64_t nh_blocks_front_left(const NhBlocks *b, uint32_t front);
uint64_t nh_blocks_front_close(NhBlocks *b, uint32_t front);
void nh_blocks_invalidate(NhBlocks *b, uint32_t ppn);
/* Start loading what invalidating page @ppn will write into the CPU's cache. */
static inline void nh_blocks_prefetch(const NhBlocks *b, uint32_t ppn)
{
    __builtin_prefetch(&b->p2l[ppn], 1);
    __builtin_prefetch(&b->blk[ppn / b->pages], 1);
}

static inline void nh_blocks_map(NhBlocks *b, uint32_t owner, uint32_t ppn)
{
    NhBlock *k = &b->blk[ppn / b->pages];
    b->p2l[ppn] = owner + 1;
    k->valid++;
    k->mtime = b->now;
}

static inline void nh_touch(uint64_t *touched, uint64_t i)
{
    touched[i >> (NH_CHUNK_SHIFT + 6)] |= 1ull << ((i >> NH_CHUNK_SHIFT) & 63);
}

/* A bitmap over chunks of an @n-entry forward map, for nh_map_save; NULL if out of memory. */
uint64_t *nh_touched_new(uint64_t n);

void nh_blocks_background(NhBlocks *b, uint64_t now, bool defer);
/* Every plane below gc-high cleans in the background until it is back there (NhFtlOps.idle). */
void nh_blocks_idle(NhBlocks *b);

/* NULL when blocks, pools, counts and the reverse map agree, else what is wrong (g_free). */
char *nh_blocks_check(NhBlocks *b);

/*
 * Page @i of host write @w through the forward map @fwd (ppn + 1, 0 = unmapped), from @start:
 * a partly written page that holds data is read first (read-modify-write), the new copy is
 * programmed on a page of frontier @front (*ppn) and the old copy, wherever GC moved it
 * meanwhile, invalidated.  The caller maps the new copy.  Returns when the program ends.
 */
uint64_t nh_blocks_host_write(NhBlocks *b, const uint32_t *fwd, const NhFtlWrite *w, uint64_t i,
                              uint32_t front, uint64_t start, uint32_t *ppn);

/* for blocks.c and blocks-check.c: a block's erase count; the head of plane @pu's list of
 * closed blocks with @valid valid pages */
static inline uint32_t nh_blocks_wear(const NhBlocks *b, uint32_t blk)
{
    return b->nand->erase_count[blk];
}

static inline uint32_t *nh_blocks_bucket(NhBlocks *b, uint32_t pu, uint32_t valid)
{
    return &b->bucket[(size_t)pu * (b->pages + 1) + valid];
}
/* Is block @blk the FTL's (not the zoned region's)? */
static inline bool nh_blocks_ftls(const NhBlocks *b, uint64_t blk)
{
    return blk % b->blocks < b->usable;
}

/* Forward map @fwd (ppn + 1 per owner) against the reverse map and the blocks' kinds. */
char *nh_map_check(NhBlocks *b, const uint32_t *fwd, uint64_t n, uint8_t kind, const char *what);

/* ------------------------------------------------------------------ state file helpers */

/* Sets *errp to "state file: <ftl> FTL section is damaged (<what>)"; returns false. */
bool nh_blocks_corrupt(const NhBlocks *b, GError **errp, const char *what);

/* Frontiers and the state of every block that is not free. */
void nh_blocks_save(const NhBlocks *b, GByteArray *o);
bool nh_blocks_load(NhBlocks *b, NhReader *r, GError **errp);
/* Forward map @fwd as runs of consecutive pages, only over chunks @touched marks (NULL: all). */
void nh_map_save(GByteArray *o, const uint32_t *fwd, const uint64_t *touched, uint64_t n);
bool nh_map_load(NhBlocks *b, NhReader *r, uint32_t *fwd, uint64_t *touched, uint64_t n,
                 uint8_t kind, GError **errp);
/* After the maps are loaded: free heaps on the restored wear, victim buckets on valid counts. */
void nh_blocks_load_done(NhBlocks *b);

#endif
