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
 * With placement (placement.h) each physical stream beyond the first has a data frontier of its
 * own after these three; GC copies of every stream share the GC data frontier.  With DStream the
 * CMT gets the device memory the k open streams' write buffers leave (dstream-memory): when k
 * changes it grows, or shrinks by evicting its least recently used entries (dirty ones written
 * back as above) at once.
 *
 * Reads, writes and staging are the page-mapped core's (pagemap.h), this file DFTL's map: the
 * CMT is the map's lookup.  With one-shot or stripe-merge, host pages are staged (stage.h), one
 * buffer per physical stream; a staged page's entry is looked up (and made dirty) when its unit
 * is programmed, since that is when its mapping changes.  A read of a staged page is served from
 * the buffer without a lookup.
 *
 * The model keeps the whole current mapping in the core's l2p because it is what flash plus
 * cache hold together: a mapping not dirty in the CMT equals its translation page on flash, so
 * the translation pages' contents need not be stored separately.
 */
#include "dftl.h"
#include "mem.h"

#include <string.h>

/* DFTL's own counters (docs/statistics.md), in env.counters */
static const NhStat dftl_counters[] = {
    [CMT_HITS] = { .path = "ftl.cmt.hits" },
    [CMT_MISSES] = { .path = "ftl.cmt.misses" },
    [TP_READS] = { .path = "ftl.translation_page_reads" },
    [TP_WRITES] = { .path = "ftl.translation_page_writes" },
    { .path = NULL },
};

/* DFTL's own keys: the mapping cache's size (under DStream, dstream-memory's share instead) */
enum { DFTL_CMT_SIZE };     /* dftl_keys, in order */
static const NhConfigKey dftl_keys[] = {
    { "cmt-size", NH_KEY_SIZE, 0, 0, "4M", 8, 1ull << 30, NULL, false,
      "dftl: cached mapping table in bytes, 8 per entry (lpn and ppn), a multiple of 8; "
      "K/M/G suffixes" },
    { NULL },
};

static bool dftl_check_config(const NhConfig *cfg, const uint64_t *keys, GError **errp)
{
    uint64_t cmt = keys[DFTL_CMT_SIZE];

    (void)cfg;
    if (cmt % 8) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "cmt-size: must be a multiple of 8 bytes (one mapping entry), got %"
                    G_GUINT64_FORMAT, cmt);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ translation pages */

/*
 * Rewrite translation page @tv with the current mapping: read the old copy (the entries not in
 * the CMT come from it), program the new one, and clean every cached entry of the page.  @pu is
 * the plane for a GC step's own writes, NH_NONE for host-side ones (striped, may run GC).
 */
uint64_t dftl_write_tpage(Dftl *f, uint32_t tv, uint32_t pu, uint64_t start)
{
    uint32_t ppn = pu == NH_NONE ? nh_blocks_host_page(&f->pm.b, FRONT_TRANS)
                                 : nh_blocks_gc_page(&f->pm.b, pu, FRONT_TRANS);
    uint32_t old1 = f->gtd[tv];     /* after the allocation: its GC may have moved the page */
    uint64_t t = start;

    if (old1) {
        t = nh_nand_read(f->pm.b.nand, old1 - 1, start);
        f->pm.env.counters[TP_READS]++;
        nh_blocks_invalidate(&f->pm.b, old1 - 1);
    }
    /* with map-unit a translation page is a unit: the rest of its flash page is padding */
    nh_nand_batch_begin(f->pm.b.nand);
    t = nh_nand_program(f->pm.b.nand, ppn, t);
    t = nh_blocks_pad_page(&f->pm.b, ppn, t);
    nh_nand_batch_end(f->pm.b.nand);
    f->pm.env.counters[TP_WRITES]++;
    f->gtd[tv] = ppn + 1;
    nh_blocks_map(&f->pm.b, tv, ppn);
    for (uint32_t i = f->dhead[tv]; i != NH_NONE; i = f->e[i].tnext) {
        f->e[i].dirty = false;
    }
    f->dhead[tv] = NH_NONE;
    return t;
}

/* The map's lookup: make @lpn's entry cached and most recent; returns when its mapping is
 * known. */
static uint64_t cmt_get(PmapFtl *pm, uint64_t lpn, uint64_t now, uint32_t *idx)
{
    Dftl *f = (Dftl *)pm;
    uint32_t i = dftl_cmt_find(f, (uint32_t)lpn), tv = (uint32_t)lpn / f->epp;
    uint64_t t = now;

    if (i != NH_NONE) {
        f->pm.env.counters[CMT_HITS]++;
        if (f->lru_head != i) {
            dftl_lru_unlink(f, i);
            dftl_lru_push_head(f, i);
        }
        *idx = i;
        return now;
    }
    f->pm.env.counters[CMT_MISSES]++;
    if (f->count == f->cap) {
        i = f->lru_tail;
        if (f->e[i].dirty) {    /* the write-back cleans it, and so unlinks it */
            t = dftl_write_tpage(f, f->e[i].lpn / f->epp, NH_NONE, t);
        }
        dftl_lru_unlink(f, i);
        dftl_hash_remove(f, f->e[i].lpn);
    } else {
        i = f->count++;
    }
    if (f->gtd[tv]) {
        t = nh_nand_read(f->pm.b.nand, f->gtd[tv] - 1, t);
        f->pm.env.counters[TP_READS]++;
    }
    f->e[i] = (Entry){ .lpn = (uint32_t)lpn };
    dftl_hash_insert(f, i);
    dftl_lru_push_head(f, i);
    *idx = i;
    return t;
}

/* GC moved @lpn: change it in the CMT if cached, else queue its translation page. */
static void update_mapping(Dftl *f, uint32_t lpn)
{
    uint32_t i = dftl_cmt_find(f, lpn), tv = lpn / f->epp;

    if (i != NH_NONE) {
        dftl_set_dirty(f, i);
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
        uint64_t t = dftl_write_tpage(f, f->batch[k], pu, start);
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
        f->pm.l2p[m[i].owner] = m[i].ppn + 1;
        update_mapping(f, m[i].owner);
    }
    return batch_write(f, pu, now);
}

static uint32_t dftl_where(void *opaque, uint8_t kind, uint32_t owner)
{
    Dftl *f = opaque;
    return kind == KIND_TRANS ? f->gtd[owner] : f->pm.l2p[owner];
}

/* ------------------------------------------------------------------ the map's hooks */

/* A host write or staged program changed @idx's mapping: GC never evicts, so @idx still names
 * the entry the lookup returned. */
static void cmt_changed(PmapFtl *pm, uint32_t idx)
{
    dftl_set_dirty((Dftl *)pm, idx);
}

static uint64_t dftl_trim(void *opaque, uint64_t lpn, uint64_t npages, uint64_t now)
{
    Dftl *f = opaque;
    uint64_t end = lpn + npages, done = now;

    f->pm.b.now = now;
    /* one translation page at a time: its uncached mappings change in one read-modify-write */
    while (lpn < end) {
        uint32_t tv = (uint32_t)(lpn / f->epp);
        uint64_t stop = MIN(end, (uint64_t)(tv + 1) * f->epp);
        bool rewrite = false;
        for (; lpn < stop; lpn++) {
            uint32_t i;
            if (!pmap_unmap(&f->pm, lpn)) {
                continue;
            }
            i = dftl_cmt_find(f, (uint32_t)lpn);
            if (i != NH_NONE) {
                dftl_set_dirty(f, i);
            } else {
                rewrite = true;
            }
        }
        if (rewrite) {
            uint64_t t = dftl_write_tpage(f, tv, NH_NONE, now);
            done = t > done ? t : done;
        }
    }
    return done;
}

static void dftl_destroy(PmapFtl *pm)
{
    Dftl *f = (Dftl *)pm;

    nh_lazy_free(f->e, f->maxcap, sizeof(Entry));
    nh_lazy_free(f->hash, (size_t)f->hmask + 1, sizeof(uint32_t));
    g_free(f->gtd);
    g_free(f->dhead);
    g_free(f->stamp);
    g_free(f->batch);
}

static char *dftl_check(PmapFtl *pm)
{
    Dftl *f = (Dftl *)pm;
    char *err = nh_map_check(&pm->b, f->gtd, f->ntp, KIND_TRANS, "translation page");

    return err ? err : dftl_check_cmt(f);
}

/* ------------------------------------------------------------------ sizing */

static uint64_t tpages_of(const NhConfig *cfg, uint64_t lpages)
{
    uint64_t epp = nh_config_unit(cfg) / 4;
    return (lpages + epp - 1) / epp;
}

/*
 * Per plane: three frontiers (host data, GC data, translation), a reserve of two (one GC step
 * may fill a data block and a translation block), and room for the translation pages, doubled
 * because they need not spread evenly over the planes; then the block layer's free blocks and
 * room for invalid pages (nh_blocks_min_spare), and a reserved block per physical stream beyond
 * the first.
 */
static uint32_t dftl_spare_blocks(const NhFtlEnv *env, uint32_t npu)
{
    const NhConfig *cfg = env->cfg;
    uint64_t per_block = (uint64_t)nh_config_unit_pages(cfg) * npu;
    uint64_t per_plane = (tpages_of(cfg, env->lpages) + per_block - 1) / per_block;
    return pmap_min_spare(env, npu, (uint32_t)(NFRONT + 2 * per_plane), 2);
}

/* CMT entries with @k physical streams open: what their buffers leave of dstream-memory, or
 * cmt-size; caching more entries than there are pages changes nothing. */
static uint32_t cap_for(const Dftl *f, uint32_t k)
{
    uint64_t bytes = f->mem ? f->mem - k * f->sbuf : f->cmt_size;
    return (uint32_t)MIN(bytes / ENTRY_BYTES, f->pm.env.lpages);
}

/* DStream changed k: the CMT takes the memory the streams' buffers leave (a merged stream's
 * buffer is programmed right after the page that ended the timestamp is staged, stage.c). */
static uint64_t dftl_k_changed(void *ctx, uint32_t k)
{
    Dftl *f = ctx;
    dftl_cmt_resize(f, cap_for(f, k), f->pm.b.now);
    return f->cap;
}

/* DStream's memory budget: the CMT and the open streams' buffers share dstream-memory. */
static void dstream_init(Dftl *f)
{
    const NhPlacementSettings *set = f->pm.env.parts->settings[NH_PART_placement];
    NhPlacement *pl = f->pm.pl;

    if (!pl || !pl->ds) {
        return;
    }
    f->sbuf = set->stream_buffer;
    f->mem = set->dstream_memory ? set->dstream_memory : f->cmt_size + pl->nstreams * f->sbuf;
    pl->k_changed = dftl_k_changed;
    pl->ctx = f;
}

/* ------------------------------------------------------------------ persistence */

/*
 * State (pagemap.h): after the mapping runs, the GTD runs; after placement (k sets the CMT's
 * capacity) the CMT: u32 count and (lpn, dirty) from the most to the least recently used.  The
 * CMT is saved rather than written back so that a restart continues with the same cache, and
 * saving changes no counter.
 */
static void gtd_save(PmapFtl *pm, GByteArray *o)
{
    Dftl *f = (Dftl *)pm;
    nh_map_save(o, f->gtd, NULL, f->ntp);
}

static bool gtd_load(PmapFtl *pm, NhReader *r, GError **errp)
{
    Dftl *f = (Dftl *)pm;
    return nh_map_load(&pm->b, r, f->gtd, NULL, f->ntp, KIND_TRANS, errp);
}

static void cmt_save(PmapFtl *pm, GByteArray *o)
{
    Dftl *f = (Dftl *)pm;

    nh_put32(o, f->count);
    for (uint32_t i = f->lru_head; i != NH_NONE; i = f->e[i].next) {
        nh_put32(o, f->e[i].lpn);
        nh_put32(o, f->e[i].dirty);
    }
}

/* Saved MRU first: appending at the tail keeps the order. */
static void cmt_append(Dftl *f, uint32_t lpn, bool dirty)
{
    uint32_t i = f->count++;

    f->e[i] = (Entry){ .lpn = lpn };
    dftl_hash_insert(f, i);
    f->e[i].prev = f->lru_tail;
    f->e[i].next = NH_NONE;
    if (f->lru_tail != NH_NONE) {
        f->e[f->lru_tail].next = i;
    } else {
        f->lru_head = i;
    }
    f->lru_tail = i;
    if (dirty) {
        dftl_set_dirty(f, i);
    }
}

static bool cmt_load(PmapFtl *pm, NhReader *r, GError **errp)
{
    Dftl *f = (Dftl *)pm;
    uint32_t n;

    if (pm->pl) {
        f->cap = cap_for(f, nh_placement_k(pm->pl));
        pm->pl->cmt_entries = f->cap;
    }
    if (!nh_get32(r, &n)) {
        return nh_blocks_corrupt(&pm->b, errp, "CMT count");
    }
    if (n > f->cap) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE,
                    "state file: the CMT held %u entries, more than cmt-size allows now (%u); "
                    "use the cmt-size it was saved with", n, f->cap);
        return false;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t lpn, dirty;
        if (!nh_get32(r, &lpn) || !nh_get32(r, &dirty)) {
            return nh_blocks_corrupt(&pm->b, errp, "truncated CMT");
        }
        if (lpn >= pm->env.lpages || dirty > 1 || dftl_cmt_find(f, lpn) != NH_NONE) {
            return nh_blocks_corrupt(&pm->b, errp, "CMT entry out of range or repeated");
        }
        cmt_append(f, lpn, dirty);
    }
    return true;
}

/* ------------------------------------------------------------------ creation */

static const PmapMap cmt_map = {
    .lookup = cmt_get,
    .changed = cmt_changed,
    .destroy = dftl_destroy,
    .save_maps = gtd_save,
    .load_maps = gtd_load,
    .save_cache = cmt_save,
    .load_cache = cmt_load,
    .check = dftl_check,
};

/* The CMT's hash and entries, and the translation pages' tables. */
static bool dftl_alloc(Dftl *f, uint64_t hsize, GError **errp)
{
    f->e = nh_lazy_alloc(f->maxcap, sizeof(Entry));
    f->hash = nh_lazy_alloc(hsize, sizeof(uint32_t));
    if (!f->e || !f->hash) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "not enough host memory for a CMT of %u entries", f->cap);
        return false;
    }
    f->gtd = g_new0(uint32_t, f->ntp);
    f->dhead = g_new(uint32_t, f->ntp);
    memset(f->dhead, 0xff, sizeof(uint32_t) * f->ntp);
    f->stamp = g_new0(uint32_t, f->ntp);
    f->batch = g_new(uint32_t, MAX(f->pm.b.pages, 1));
    f->lru_head = f->lru_tail = NH_NONE;
    return true;
}

static void *dftl_create(const NhFtlEnv *env, GError **errp)
{
    Dftl *f = g_new0(Dftl, 1);
    NhBlocksSpec spec = {
        /* the streams' frontiers placement adds after these are data frontiers (0) */
        .front_kind = { KIND_DATA, KIND_DATA, KIND_TRANS },
        .gc_front = { FRONT_GC, FRONT_TRANS },
        .reserve = 2,
        .live_pages = env->lpages + tpages_of(env->cfg, env->lpages),
        .moved = dftl_moved,
        .where = dftl_where,
        .ctx = f,
    };
    uint64_t hsize = 2;

    f->cmt_size = env->keys[DFTL_CMT_SIZE];
    f->epp = nh_config_unit(env->cfg) / 4;
    f->ntp = (uint32_t)tpages_of(env->cfg, env->lpages);
    pmap_place(&f->pm, env, &cmt_map, &spec, NFRONT);
    dstream_init(f);
    f->cap = cap_for(f, f->pm.pl ? nh_placement_k(f->pm.pl) : 1);
    f->maxcap = cap_for(f, 1);
    if (f->pm.pl) {
        f->pm.pl->cmt_entries = f->cap;
    }
    while (hsize < 2ull * f->maxcap) {
        hsize <<= 1;
    }
    f->hmask = (uint32_t)(hsize - 1);
    if (!pmap_init(&f->pm, &spec, errp) || !dftl_alloc(f, hsize, errp)) {
        pmap_destroy(f);
        return NULL;
    }
    return f;
}

const NhFtlOps nh_ftl_dftl_ops = NH_PAGEMAP_OPS("dftl", dftl_create, dftl_trim,
                                                dftl_spare_blocks, NH_FTL_CMT_RESIZE,
                                                .keys = dftl_keys,
                                                .check_config = dftl_check_config,
                                                .counters = dftl_counters);
