/*
 * buffer.h - the device's write buffer and read cache: what they promise the engine, the one ops
 * table every write-buffer policy implements, and the shared machinery the policies build on.
 *
 * Contract (docs/buffers.md has the policies and the rules chosen where papers are silent):
 *  - Metadata only.  The buffer knows which logical pages it holds dirty (and which sectors of
 *    each), which clean pages the read cache holds, and in what order to give them up; the data
 *    itself is the front end's.  One page index (lpn) and one block index (lbn = lpn / pages)
 *    cover the write buffer and the read cache together, so a policy that cooperates with the
 *    cache (cbm's merge-on-flush) finds a block's clean pages without a second structure.
 *  - The engine creates an NhBuf when buffer != none or cache-size > 0 and sends host reads,
 *    writes, trims and flushes through it; everything below goes through the NhBufSink (the FTL,
 *    or a test's recorder).  A write completes after the buffer's media time, or later if it had
 *    to wait for victims to be programmed; a read hit completes at buffer or cache latency.
 *  - A write never exceeds the capacity: before a block's pages are inserted, victims chosen by
 *    the policy are destaged (written to the sink in ascending page order, as runs) until they
 *    fit.  A destaged dirty version leaves the buffer at once, so it is written at most once;
 *    Flush on a volatile buffer destages every dirty page, so the last version is written.
 *  - A policy is one file defining one NhBufPolicy and one line in the registry (buffer.c).
 *    The core owns pages and blocks and calls the policy when they are written or leave; the
 *    policy only keeps its own order over them and names victims.
 */
#ifndef NH_BUFFER_H
#define NH_BUFFER_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "config.h"
#include "ftl.h"
#include "stats.h"

/* NULL-terminated names of the policies (the choices of the `buffer` key). */
extern const char *const nh_buf_names[];

/* Checks of the buffer keys against each other and the geometry (called by nh_config_check). */
bool nh_buf_config_check(const NhConfig *cfg, GError **errp);

/* What the buffer needs from below.  Times are absolute ns, as everywhere in the engine. */
typedef struct NhBufSink {
    void *ctx;
    uint64_t (*write)(void *ctx, const NhFtlWrite *w, uint64_t now);
    uint64_t (*read)(void *ctx, uint64_t lpn, uint64_t npages, uint64_t now);
    bool (*is_mapped)(void *ctx, uint64_t lpn);
    /* does logical block @lbn have pages in the FTL's log blocks (ref)? */
    bool (*in_log)(void *ctx, uint64_t lbn);
    /* optional observer: page @lpn was written to the sink, @dirty = a host version (else a
     * padding or merge-on-flush page).  Tests check the destage invariants with it. */
    void (*destaged)(void *ctx, uint64_t lpn, bool dirty);
} NhBufSink;

typedef struct NhBufEnv {
    const NhConfig *cfg;
    NhStats  *stats;
    NhBufSink sink;
    uint64_t  lpages;       /* logical pages in the space */
    uint32_t  log_blocks;   /* the FTL's log-block pool (lbuf's log-buffer simulation) */
    uint64_t  t_read, t_prog, t_erase;  /* flash costs in force (lbuf: lambda, meta-simulation) */
    uint64_t *counters;     /* the policy's own counters, in the order of NhBufPolicy.counters */
    const uint64_t *keys;   /* the values of its own keys, in NhBufPolicy.keys' order, which it
                             * decodes when created (config.h) */
} NhBufEnv;

typedef struct NhBuf NhBuf;
typedef struct NhBufBlock NhBufBlock;

typedef struct NhBufPage {
    GList       lru;        /* dirty: the policy's page list, if any; clean: the cache's LRU */
    GList       link;       /* in its block's dirty or clean queue */
    uint64_t    lpn;
    NhBufBlock *blk;
    uint32_t    mask;       /* sectors held: dirty ones, or every sector for a clean page */
    bool        dirty;
    uint8_t     region;     /* the policy's: 0 = on no list of its own yet */
} NhBufPage;

#define NH_BUF_NOSEQ UINT32_MAX

struct NhBufBlock {
    GList     link;         /* the policy's block list */
    uint64_t  lbn;
    GQueue    dirty;        /* NhBufPage by ->link */
    GQueue    clean;        /* read-cache pages of this block */
    uint32_t  sectors;      /* dirty sectors */
    uint32_t  seq_next;     /* next offset if written in order from offset 0 so far, else NOSEQ */
    uint64_t  stamp;        /* the write request that last touched it */
    uint64_t  weight;       /* the policy's ordering weight (cbm: popularity) */
    uint32_t  aux;          /* the policy's: fab, clc, lbuf: the size bucket it is in;
                             * bpac, cbm: its pages on the page list */
    uint8_t   region;       /* the policy's: 0 = on no list of its own yet */
    GSequenceIter *iter;    /* ref, cbm: its place in an ordered sequence */
};

/* One write request's pages in one block. */
typedef struct NhBufWrite {
    NhBufBlock        *blk;
    NhBufPage *const  *pg;      /* ascending offsets; new pages have region 0 */
    uint32_t           n;
    uint32_t           hits;    /* pages that were already dirty */
    uint32_t           sec0, sec1;  /* the request's sectors within the block, [sec0, sec1) */
} NhBufWrite;

/* What to destage to make room. */
typedef struct NhBufVictim {
    NhBufBlock *blk;
    NhBufPage  *page;       /* only this dirty page; NULL = every dirty page of blk */
    bool        pad;        /* plugging: read the block's missing mapped pages, write it whole */
    bool        merge;      /* merge-on-flush: add the block's clean pages from the read cache */
} NhBufVictim;

typedef struct NhBufPolicy {
    const char *name;
    /* the policy's own keys, ended by an entry without a name; NULL = none (config.h) */
    const NhConfigKey *keys;
    /* the policy's own counters, ended by an entry without a path; NULL = none (stats.h) */
    const NhStat *counters;
    /* shown only while the policy is in force (its gauges would mislead for another) */
    bool counters_when_chosen;
    void *(*create)(NhBuf *b);
    void (*destroy)(void *p);
    /* a write request wrote pages of one block; called after the core inserted them */
    void (*written)(void *p, const NhBufWrite *w);
    /* dirty page @pg leaves (destaged or trimmed); the block's counts are already updated and
     * the page is off its block's queue */
    void (*removed)(void *p, NhBufPage *pg);
    /* name the next victim; there is at least one dirty page */
    void (*victim)(void *p, NhBufVictim *v);
    /* bytes of the policy's own metadata beyond pages and blocks; called after every request
     * and after a statistics reset, so a policy may refresh its own gauges here (lbuf) */
    size_t (*metadata)(void *p);
} NhBufPolicy;

/* The policy called @name; NULL for "none" and for an unknown name. */
const NhBufPolicy *nh_buf_find(const char *name);

struct NhBuf {
    const NhBufPolicy *pol;     /* NULL: no write buffer (buffer=none with a read cache) */
    void      *p;
    NhBufEnv   env;
    NhStats   *st;
    uint32_t   pages;           /* pages per block */
    uint32_t   page_size, spp;  /* sectors (512 B) per page */
    uint64_t   cap, used;       /* dirty pages: at most, now */
    uint64_t   cache_cap, cached;
    GQueue     cache_lru;       /* clean pages, most recent at the tail */
    GHashTable *pages_idx;      /* lpn -> NhBufPage, dirty and clean */
    GHashTable *blocks_idx;     /* lbn -> NhBufBlock */
    uint64_t   t_buf_read, t_buf_write;
    bool       is_volatile;
    uint64_t   wseq;            /* write requests seen */
    uint8_t   *kind;            /* scratch [pages] for destage */
    NhBufPage **scratch;        /* scratch [pages] */
};

/* DRAM read-cache latency per page (seed 000's SSD configuration: 15 ns). */
#define NH_CACHE_T_READ 15

/* ---- engine side */
NhBuf *nh_buf_new(const NhBufEnv *env);
void nh_buf_free(NhBuf *b);
/* @w as the FTL would get it; @offset and @length in bytes give the sectors of partial pages */
uint64_t nh_buf_write(NhBuf *b, const NhFtlWrite *w, uint64_t offset, uint64_t length,
                      uint64_t now);
uint64_t nh_buf_read(NhBuf *b, uint64_t lpn, uint64_t npages, uint64_t offset, uint64_t length,
                     uint64_t now);
void nh_buf_trim(NhBuf *b, uint64_t lpn, uint64_t npages);
/* Power fails: a volatile buffer's dirty pages are gone, never destaged; @lost hears of each
 * (its sectors in @mask) after all of them have left the buffer, so requests served meanwhile
 * find it consistent.  A capacitor-backed buffer loses nothing. */
typedef void (*NhBufLostFn)(void *opaque, uint64_t lpn, uint32_t mask);
void nh_buf_power_loss(NhBuf *b, NhBufLostFn lost, void *opaque);
/* volatile: destage every dirty page; durable: nothing to do */
uint64_t nh_buf_flush(NhBuf *b, uint64_t now);
/* destage every dirty page, volatile or not (the end of a run, preconditioning) */
uint64_t nh_buf_destage_all(NhBuf *b, uint64_t now);
bool nh_buf_holds_dirty(const NhBuf *b, uint64_t lpn);
bool nh_buf_is_volatile(const NhBuf *b);
/* after nh_engine_stats_reset: put back the gauges (alpha, lambda, memory in use) */
void nh_buf_stats_restore(NhBuf *b);
/* consistency check for tests: NULL when consistent, else what is wrong (g_free) */
char *nh_buf_check(const NhBuf *b);

/* ---- for policies */
static inline uint32_t nh_buf_off(const NhBuf *b, uint64_t lpn) { return (uint32_t)(lpn % b->pages); }
static inline uint32_t nh_buf_ndirty(const NhBufBlock *k) { return k->dirty.length; }

/* Size buckets: entries (by an embedded GList) kept per size, each bucket oldest first, with a
 * list of the non-empty ones.  fab and clc order blocks by dirty pages with it, lbuf by dirty
 * sectors (real buffer and meta-simulation alike). */
typedef struct NhBufBucket {
    GQueue q;
    GList  ne;              /* in the non-empty list */
} NhBufBucket;

typedef struct NhBufBuckets {
    NhBufBucket *b;
    uint32_t     n;         /* sizes 0 .. n-1 */
    GQueue       nonempty;  /* NhBufBucket by ->ne */
    uint32_t     top;       /* no non-empty bucket above this */
} NhBufBuckets;

void nh_bk_init(NhBufBuckets *bk, uint32_t n);
void nh_bk_clear(NhBufBuckets *bk);
void nh_bk_put(NhBufBuckets *bk, GList *link, uint32_t size);   /* at the newest end */
void nh_bk_del(NhBufBuckets *bk, GList *link, uint32_t size);
/* the oldest entry of the largest non-empty bucket, NULL if none */
GList *nh_bk_largest(NhBufBuckets *bk);

/* ---- read cache (cache.c) */
void nh_cache_insert(NhBuf *b, uint64_t lpn);
void nh_cache_touch(NhBuf *b, NhBufPage *pg);
void nh_cache_drop(NhBuf *b, NhBufPage *pg);

/* ---- core helpers shared with cache.c */
NhBufBlock *nh_buf_block_get(NhBuf *b, uint64_t lbn);
void nh_buf_block_put(NhBuf *b, NhBufBlock *k);     /* frees it if it holds nothing */
/* a page entry on @k's dirty or clean queue and in the page index (clean: every sector) */
NhBufPage *nh_buf_page_new(NhBuf *b, NhBufBlock *k, uint64_t lpn, bool dirty);

/* NH_BUF_REGISTRY: X(name) for every policy, listed by the `buffer` key after "none" (no write
 * buffer) (nh-registry.h, generated from meson.build's list). */

#define NH_BUF_DECLARE(name) extern const NhBufPolicy nh_buf_##name;
NH_BUF_REGISTRY(NH_BUF_DECLARE)
#undef NH_BUF_DECLARE

#endif
