/*
 * ftl-dftl.c - DFTL: demand-based page mapping (Gupta, Kim, Urgaonkar, ASPLOS 2009).
 *
 * The page mapping lives on flash in translation pages of page-size / 4 entries each
 * (translation page tvpn covers logical pages [tvpn * epp, (tvpn + 1) * epp)).  The device's
 * memory holds the global translation directory (GTD: where each translation page is) and the
 * cached mapping table (CMT): cmt-size / 8 entries (a 4-byte lpn and a 4-byte ppn each), LRU.
 *
 *  - A lookup that misses the CMT reads the entry's translation page (if it was ever written)
 *    before the data operation can start; the entry then enters the CMT at the MRU end.
 *  - A full CMT evicts its LRU entry.  If that entry is dirty (its mapping changed since it was
 *    cached), its translation page is rewritten first: read the old page, program the new one
 *    with every cached mapping of that page, so all dirty entries of the same translation page
 *    become clean in that one write (DFTL's batch update).  The fetch waits for the write-back.
 *  - Blocks hold either data pages or translation pages (kinds 0 and 1), each kind with its own
 *    frontiers, from one free pool per plane, so the translation area grows as it needs.  GC
 *    picks victims of either kind (greedy or cost-benefit, the shared block layer's).  Copying
 *    a data block updates the mapping: a cached entry is changed in the CMT (and becomes dirty),
 *    the others are written to flash, one read-modify-write per translation page however many
 *    of its entries moved.  Copying a translation block only updates the GTD.
 *  - Trim unmaps pages in the CMT where cached, and rewrites each translation page holding
 *    other trimmed mappings once (read-modify-write), without loading entries into the CMT.
 *
 * The model keeps the whole current mapping in l2p (as the page FTL does) because it is what
 * flash plus cache hold together: a mapping not dirty in the CMT equals its translation page on
 * flash, so the translation pages' contents need not be stored separately.
 */
#include "blocks.h"
#include "mem.h"

#include <string.h>

enum { FRONT_HOST, FRONT_GC, FRONT_TRANS, NFRONT };
enum { KIND_DATA, KIND_TRANS };

#define ENTRY_BYTES 8       /* a CMT entry: 4-byte lpn and 4-byte ppn, as DFTL counts it */

typedef struct Entry {
    uint32_t lpn;
    uint32_t prev, next;    /* LRU list, MRU at head */
    uint32_t tprev, tnext;  /* dirty entries of the same translation page, while dirty */
    bool     dirty;
} Entry;

typedef struct Dftl {
    NhBlocks   b;
    NhFtlEnv   env;
    uint32_t  *l2p;         /* the current mapping (ppn + 1), see the file comment */
    uint64_t  *touched;
    uint32_t   epp;         /* entries per translation page */
    uint32_t   ntp;         /* translation pages */
    uint32_t  *gtd;         /* [ntp] ppn + 1 of each translation page, 0 never written */
    uint32_t  *dhead;       /* [ntp] first dirty cached entry of the page: cleaning a page
                             * after its write-back touches only its dirty entries */
    uint32_t  *stamp;       /* [ntp] batch number that last queued the page for an update */
    uint32_t  *batch;       /* [pages] translation pages queued by one GC step */
    uint32_t   nbatch, batch_no;
    /* CMT: entries, an LRU list and an open-addressing hash from lpn to entry */
    Entry     *e;
    uint32_t   cap, count, lru_head, lru_tail;
    uint32_t  *hash;        /* entry + 1, 0 empty */
    uint32_t   hmask;
} Dftl;

/* DFTL's own counters (docs/statistics.md), in env.counters */
enum { CMT_HITS, CMT_MISSES, TP_READS, TP_WRITES };
static const NhStat dftl_counters[] = {
    [CMT_HITS] = { .path = "ftl.cmt.hits" },
    [CMT_MISSES] = { .path = "ftl.cmt.misses" },
    [TP_READS] = { .path = "ftl.translation_page_reads" },
    [TP_WRITES] = { .path = "ftl.translation_page_writes" },
    { .path = NULL },
};

/* ------------------------------------------------------------------ CMT */

static inline uint32_t hslot(const Dftl *f, uint32_t lpn)
{
    return (lpn * 0x9E3779B1u) & f->hmask;
}

static uint32_t cmt_find(const Dftl *f, uint32_t lpn)
{
    for (uint32_t s = hslot(f, lpn);; s = (s + 1) & f->hmask) {
        uint32_t i1 = f->hash[s];
        if (!i1) {
            return NH_NONE;
        }
        if (f->e[i1 - 1].lpn == lpn) {
            return i1 - 1;
        }
    }
}

static void hash_insert(Dftl *f, uint32_t idx)
{
    uint32_t s = hslot(f, f->e[idx].lpn);
    while (f->hash[s]) {
        s = (s + 1) & f->hmask;
    }
    f->hash[s] = idx + 1;
}

/* Linear probing deletion by backward shift, so lookups never need tombstones. */
static void hash_remove(Dftl *f, uint32_t lpn)
{
    uint32_t s = hslot(f, lpn);
    while (f->e[f->hash[s] - 1].lpn != lpn) {
        s = (s + 1) & f->hmask;
    }
    for (uint32_t j = (s + 1) & f->hmask; f->hash[j]; j = (j + 1) & f->hmask) {
        uint32_t home = hslot(f, f->e[f->hash[j] - 1].lpn);
        /* move j's entry into the hole unless its home lies cyclically in (s, j] */
        if (((j - home) & f->hmask) >= ((j - s) & f->hmask)) {
            f->hash[s] = f->hash[j];
            s = j;
        }
    }
    f->hash[s] = 0;
}

static void lru_unlink(Dftl *f, uint32_t i)
{
    Entry *x = &f->e[i];
    if (x->prev != NH_NONE) {
        f->e[x->prev].next = x->next;
    } else {
        f->lru_head = x->next;
    }
    if (x->next != NH_NONE) {
        f->e[x->next].prev = x->prev;
    } else {
        f->lru_tail = x->prev;
    }
}

static void lru_push_head(Dftl *f, uint32_t i)
{
    Entry *x = &f->e[i];
    x->prev = NH_NONE;
    x->next = f->lru_head;
    if (f->lru_head != NH_NONE) {
        f->e[f->lru_head].prev = i;
    } else {
        f->lru_tail = i;
    }
    f->lru_head = i;
}

static void set_dirty(Dftl *f, uint32_t i)
{
    uint32_t tv = f->e[i].lpn / f->epp;

    if (f->e[i].dirty) {
        return;
    }
    f->e[i].dirty = true;
    f->e[i].tprev = NH_NONE;
    f->e[i].tnext = f->dhead[tv];
    if (f->dhead[tv] != NH_NONE) {
        f->e[f->dhead[tv]].tprev = i;
    }
    f->dhead[tv] = i;
}

/* ------------------------------------------------------------------ translation pages */

/*
 * Rewrite translation page @tv with the current mapping: read the old copy (the entries not in
 * the CMT come from it), program the new one, and clean every cached entry of the page.  @pu is
 * the plane for a GC step's own writes, NH_NONE for host-side ones (striped, may run GC).
 */
static uint64_t write_tpage(Dftl *f, uint32_t tv, uint32_t pu, uint64_t start)
{
    uint32_t ppn = pu == NH_NONE ? nh_blocks_host_page(&f->b, FRONT_TRANS)
                                 : nh_blocks_gc_page(&f->b, pu, FRONT_TRANS);
    uint32_t old1 = f->gtd[tv];     /* after the allocation: its GC may have moved the page */
    uint64_t t = start;

    if (old1) {
        t = nh_nand_read(f->b.nand, old1 - 1, start);
        f->env.counters[TP_READS]++;
        nh_blocks_invalidate(&f->b, old1 - 1);
    }
    t = nh_nand_program(f->b.nand, ppn, t);
    f->env.counters[TP_WRITES]++;
    f->gtd[tv] = ppn + 1;
    nh_blocks_map(&f->b, tv, ppn);
    for (uint32_t i = f->dhead[tv]; i != NH_NONE; i = f->e[i].tnext) {
        f->e[i].dirty = false;
    }
    f->dhead[tv] = NH_NONE;
    return t;
}

/* Make @lpn's entry cached and most recent; returns when its mapping is known. */
static uint64_t cmt_get(Dftl *f, uint32_t lpn, uint64_t now, uint32_t *idx)
{
    uint32_t i = cmt_find(f, lpn), tv = lpn / f->epp;
    uint64_t t = now;

    if (i != NH_NONE) {
        f->env.counters[CMT_HITS]++;
        if (f->lru_head != i) {
            lru_unlink(f, i);
            lru_push_head(f, i);
        }
        *idx = i;
        return now;
    }
    f->env.counters[CMT_MISSES]++;
    if (f->count == f->cap) {
        i = f->lru_tail;
        if (f->e[i].dirty) {    /* the write-back cleans it, and so unlinks it */
            t = write_tpage(f, f->e[i].lpn / f->epp, NH_NONE, t);
        }
        lru_unlink(f, i);
        hash_remove(f, f->e[i].lpn);
    } else {
        i = f->count++;
    }
    if (f->gtd[tv]) {
        t = nh_nand_read(f->b.nand, f->gtd[tv] - 1, t);
        f->env.counters[TP_READS]++;
    }
    f->e[i] = (Entry){ .lpn = lpn };
    hash_insert(f, i);
    lru_push_head(f, i);
    *idx = i;
    return t;
}

/* GC moved @lpn: change it in the CMT if cached, else queue its translation page. */
static void update_mapping(Dftl *f, uint32_t lpn)
{
    uint32_t i = cmt_find(f, lpn), tv = lpn / f->epp;

    if (i != NH_NONE) {
        set_dirty(f, i);
    } else if (f->stamp[tv] != f->batch_no) {
        f->stamp[tv] = f->batch_no;
        f->batch[f->nbatch++] = tv;
    }
}

static void batch_begin(Dftl *f)
{
    f->nbatch = 0;
    if (++f->batch_no == 0) {      /* wrapped: old stamps could collide */
        memset(f->stamp, 0, sizeof(uint32_t) * f->ntp);
        f->batch_no = 1;
    }
}

/* GC's own translation writes: where there is room without more GC, else in the victim's plane
 * @pu, whose reserve covers them. */
static uint64_t batch_write(Dftl *f, uint32_t pu, uint64_t start)
{
    uint64_t done = start;
    for (uint32_t k = 0; k < f->nbatch; k++) {
        uint64_t t = write_tpage(f, f->batch[k], pu, start);
        done = t > done ? t : done;
    }
    f->nbatch = 0;
    return done;
}

/* ------------------------------------------------------------------ block layer callbacks */

static uint64_t dftl_moved(void *opaque, uint8_t kind, uint32_t pu, const NhMove *m, uint32_t n,
                           uint64_t now)
{
    Dftl *f = opaque;

    if (kind == KIND_TRANS) {
        for (uint32_t i = 0; i < n; i++) {
            f->gtd[m[i].owner] = m[i].ppn + 1;
        }
        return now;
    }
    batch_begin(f);
    for (uint32_t i = 0; i < n; i++) {
        f->l2p[m[i].owner] = m[i].ppn + 1;
        update_mapping(f, m[i].owner);
    }
    return batch_write(f, pu, now);
}

static uint32_t dftl_where(void *opaque, uint8_t kind, uint32_t owner)
{
    Dftl *f = opaque;
    return kind == KIND_TRANS ? f->gtd[owner] : f->l2p[owner];
}

/* ------------------------------------------------------------------ ops */

static void dftl_background(void *opaque, uint64_t now, bool defer)
{
    Dftl *f = opaque;
    nh_blocks_background(&f->b, now, defer);
}

static uint64_t dftl_read(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    Dftl *f = opaque;
    uint64_t done = now;

    f->b.now = now;
    for (uint64_t i = 0; i < npages; i++) {
        uint32_t idx, ppn1;
        uint64_t t = cmt_get(f, (uint32_t)(lpn + i), now, &idx);
        ppn1 = f->l2p[lpn + i];
        if (ppn1) {
            t = nh_nand_read(f->b.nand, ppn1 - 1, t);
        }
        done = t > done ? t : done;
    }
    return done;
}

static uint64_t dftl_write(void *opaque, const NhFtlWrite *w, uint64_t now)
{
    Dftl *f = opaque;
    uint64_t done = now;

    f->b.now = now;
    for (uint64_t i = 0; i < w->npages; i++) {
        uint64_t lpn = w->lpn + i;
        uint32_t idx, ppn;
        uint64_t start = cmt_get(f, (uint32_t)lpn, now, &idx), t;

        t = nh_blocks_host_write(&f->b, f->l2p, w, i, FRONT_HOST, start, &ppn);
        done = t > done ? t : done;
        f->l2p[lpn] = ppn + 1;
        nh_blocks_map(&f->b, (uint32_t)lpn, ppn);
        nh_touch(f->touched, lpn);
        set_dirty(f, idx);      /* GC never evicts, so idx still names lpn's entry */
    }
    return done;
}

static uint64_t dftl_trim(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    Dftl *f = opaque;
    uint64_t end = lpn + npages, done = now;

    f->b.now = now;
    /* one translation page at a time: its uncached mappings change in one read-modify-write */
    while (lpn < end) {
        uint32_t tv = (uint32_t)(lpn / f->epp);
        uint64_t stop = MIN(end, (uint64_t)(tv + 1) * f->epp);
        bool rewrite = false;
        for (; lpn < stop; lpn++) {
            uint32_t ppn1 = f->l2p[lpn], i;
            if (!ppn1) {
                continue;
            }
            nh_blocks_invalidate(&f->b, ppn1 - 1);
            f->l2p[lpn] = 0;
            i = cmt_find(f, (uint32_t)lpn);
            if (i != NH_NONE) {
                set_dirty(f, i);
            } else {
                rewrite = true;
            }
        }
        if (rewrite) {
            uint64_t t = write_tpage(f, tv, NH_NONE, now);
            done = t > done ? t : done;
        }
    }
    return done;
}

static uint64_t dftl_flush(void *opaque, uint64_t now)
{
    (void)opaque;
    /* data is on NAND when a write completes; the CMT is part of the device's protected
     * memory (as the mapping table of any FTL), so a flush writes nothing back */
    return now;
}

static bool dftl_is_mapped(void *opaque, uint64_t lpn)
{
    Dftl *f = opaque;
    return f->l2p[lpn] != 0;
}

static void dftl_destroy(void *opaque)
{
    Dftl *f = opaque;
    if (!f) {
        return;
    }
    nh_blocks_destroy(&f->b);
    nh_lazy_free(f->l2p, f->env.lpages, sizeof(uint32_t));
    nh_lazy_free(f->e, f->cap, sizeof(Entry));
    nh_lazy_free(f->hash, (size_t)f->hmask + 1, sizeof(uint32_t));
    g_free(f->touched);
    g_free(f->gtd);
    g_free(f->dhead);
    g_free(f->stamp);
    g_free(f->batch);
    g_free(f);
}

static uint64_t tpages_of(const NhConfig *cfg, uint64_t lpages)
{
    uint64_t epp = cfg->page_size / 4;
    return (lpages + epp - 1) / epp;
}

/*
 * Per plane: three frontiers (host data, GC data, translation), a reserve of two (one GC step
 * may fill a data block and a translation block), and room for the translation pages, doubled
 * because they need not spread evenly over the planes; then the block layer's free blocks and
 * room for invalid pages (nh_blocks_min_spare).
 */
static uint32_t dftl_spare_blocks(const NhConfig *cfg, uint64_t lpages, uint32_t npu)
{
    uint64_t per_plane = (tpages_of(cfg, lpages) + (uint64_t)cfg->pages * npu - 1) /
                         ((uint64_t)cfg->pages * npu);
    return nh_blocks_min_spare(cfg, lpages, npu, (uint32_t)(NFRONT + 2 * per_plane), 2);
}

static void *dftl_create(const NhFtlEnv *env, GError **errp)
{
    Dftl *f = g_new0(Dftl, 1);
    uint64_t want = env->cfg->cmt_size / ENTRY_BYTES;
    NhBlocksSpec spec = {
        .nfront = NFRONT,
        .front_kind = { KIND_DATA, KIND_DATA, KIND_TRANS },
        .gc_front = { FRONT_GC, FRONT_TRANS },
        .reserve = 2,
        .live_pages = env->lpages + tpages_of(env->cfg, env->lpages),
        .moved = dftl_moved,
        .where = dftl_where,
        .ctx = f,
    };
    uint64_t hsize = 2;

    f->env = *env;
    f->epp = env->cfg->page_size / 4;
    f->ntp = (uint32_t)tpages_of(env->cfg, env->lpages);
    /* caching more entries than there are pages changes nothing */
    f->cap = (uint32_t)MIN(want, env->lpages);
    while (hsize < 2ull * f->cap) {
        hsize <<= 1;
    }
    f->hmask = (uint32_t)(hsize - 1);
    if (!nh_blocks_init(&f->b, env, &spec, errp)) {
        dftl_destroy(f);
        return NULL;
    }
    f->l2p = nh_lazy_alloc(env->lpages, sizeof(uint32_t));
    f->touched = nh_touched_new(env->lpages);
    f->e = nh_lazy_alloc(f->cap, sizeof(Entry));
    f->hash = nh_lazy_alloc(hsize, sizeof(uint32_t));
    if (!f->l2p || !f->touched || !f->e || !f->hash) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "not enough host memory for the mapping of %" G_GUINT64_FORMAT
                    " logical pages and a CMT of %u entries", env->lpages, f->cap);
        dftl_destroy(f);
        return NULL;
    }
    f->gtd = g_new0(uint32_t, f->ntp);
    f->dhead = g_new(uint32_t, f->ntp);
    memset(f->dhead, 0xff, sizeof(uint32_t) * f->ntp);
    f->stamp = g_new0(uint32_t, f->ntp);
    f->batch = g_new(uint32_t, MAX(f->b.pages, 1));
    f->lru_head = f->lru_tail = NH_NONE;
    return f;
}

/* ------------------------------------------------------------------ persistence */

/*
 * State: the block layer's section, the mapping runs, the GTD runs, then the CMT: u32 count and
 * (lpn, dirty) from the most to the least recently used.  The CMT is saved rather than written
 * back so that a restart continues with the same cache, and saving changes no counter.
 */
static void dftl_save(void *opaque, GByteArray *o)
{
    Dftl *f = opaque;

    nh_blocks_save(&f->b, o);
    nh_map_save(o, f->l2p, f->touched, f->env.lpages);
    nh_map_save(o, f->gtd, NULL, f->ntp);
    nh_put32(o, f->count);
    for (uint32_t i = f->lru_head; i != NH_NONE; i = f->e[i].next) {
        nh_put32(o, f->e[i].lpn);
        nh_put32(o, f->e[i].dirty);
    }
}

static bool dftl_load(void *opaque, const guint8 *data, size_t len, GError **errp)
{
    Dftl *f = opaque;
    NhReader r = { data, data + len };
    uint32_t n;

    if (!nh_blocks_load(&f->b, &r, errp) ||
        !nh_map_load(&f->b, &r, f->l2p, f->touched, f->env.lpages, KIND_DATA, errp) ||
        !nh_map_load(&f->b, &r, f->gtd, NULL, f->ntp, KIND_TRANS, errp)) {
        return false;
    }
    if (!nh_get32(&r, &n)) {
        return nh_blocks_corrupt(&f->b, errp, "CMT count");
    }
    if (n > f->cap) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE,
                    "state file: the CMT held %u entries, more than cmt-size allows now (%u); "
                    "use the cmt-size it was saved with", n, f->cap);
        return false;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t lpn, dirty, i;
        if (!nh_get32(&r, &lpn) || !nh_get32(&r, &dirty)) {
            return nh_blocks_corrupt(&f->b, errp, "truncated CMT");
        }
        if (lpn >= f->env.lpages || dirty > 1 || cmt_find(f, lpn) != NH_NONE) {
            return nh_blocks_corrupt(&f->b, errp, "CMT entry out of range or repeated");
        }
        i = f->count++;
        f->e[i] = (Entry){ .lpn = lpn };
        hash_insert(f, i);
        /* saved MRU first: appending at the tail keeps the order */
        f->e[i].prev = f->lru_tail;
        f->e[i].next = NH_NONE;
        if (f->lru_tail != NH_NONE) {
            f->e[f->lru_tail].next = i;
        } else {
            f->lru_head = i;
        }
        f->lru_tail = i;
        if (dirty) {
            set_dirty(f, i);
        }
    }
    if (r.p != r.end) {
        return nh_blocks_corrupt(&f->b, errp, "trailing bytes");
    }
    nh_blocks_load_done(&f->b);
    return true;
}

/* ------------------------------------------------------------------ consistency */

static char *check_cmt(Dftl *f)
{
    uint32_t n = 0, ndirty = 0, listed = 0;
    char *err = NULL;

    for (uint32_t i = f->lru_head; i != NH_NONE && !err; i = f->e[i].next) {
        ndirty += f->e[i].dirty;
        if (++n > f->count) {
            err = g_strdup("CMT LRU list longer than the CMT");
        } else if (cmt_find(f, f->e[i].lpn) != i) {
            err = g_strdup_printf("CMT entry %u (lpn %u) not found by its hash", i, f->e[i].lpn);
        } else if (f->e[i].next != NH_NONE && f->e[f->e[i].next].prev != i) {
            err = g_strdup_printf("CMT LRU list broken at entry %u", i);
        }
    }
    if (!err && (n != f->count || f->count > f->cap)) {
        err = g_strdup_printf("CMT holds %u entries, LRU list %u, capacity %u", f->count, n,
                              f->cap);
    }
    for (uint32_t tv = 0; tv < f->ntp && !err; tv++) {
        for (uint32_t i = f->dhead[tv]; i != NH_NONE && !err; i = f->e[i].tnext) {
            if (++listed > ndirty || !f->e[i].dirty || f->e[i].lpn / f->epp != tv) {
                err = g_strdup_printf("CMT entry for lpn %u wrongly on the dirty list of "
                                      "translation page %u", f->e[i].lpn, tv);
            }
        }
    }
    if (!err && listed != ndirty) {
        err = g_strdup_printf("%u dirty CMT entries, %u on dirty lists", ndirty, listed);
    }
    /* a mapping that is not dirty in the CMT must be on flash */
    for (uint64_t lpn = 0; lpn < f->env.lpages && !err; lpn++) {
        uint32_t tv = (uint32_t)(lpn / f->epp), i;
        if (!f->l2p[lpn] || f->gtd[tv]) {
            continue;
        }
        i = cmt_find(f, (uint32_t)lpn);
        if (i == NH_NONE || !f->e[i].dirty) {
            err = g_strdup_printf("lpn %" G_GUINT64_FORMAT " is mapped, not dirty in the CMT, "
                                  "and its translation page %u was never written", lpn, tv);
        }
    }
    return err;
}

static char *dftl_check(void *opaque)
{
    Dftl *f = opaque;
    char *err = nh_map_check(&f->b, f->l2p, f->env.lpages, KIND_DATA, "lpn");
    if (!err) {
        err = nh_map_check(&f->b, f->gtd, f->ntp, KIND_TRANS, "translation page");
    }
    if (!err) {
        err = check_cmt(f);
    }
    return err ? err : nh_blocks_check(&f->b);
}

const NhFtlOps nh_ftl_dftl_ops = {
    .counters = dftl_counters,
    .name = "dftl",
    .create = dftl_create,
    .destroy = dftl_destroy,
    .read = dftl_read,
    .write = dftl_write,
    .trim = dftl_trim,
    .flush = dftl_flush,
    .background = dftl_background,
    .is_mapped = dftl_is_mapped,
    .save = dftl_save,
    .load = dftl_load,
    .check = dftl_check,
    .spare_blocks = dftl_spare_blocks,
};
