/*
 * pagemap.c - the page-mapped FTLs' core (pagemap.h): the block layer, staging and placement
 * wiring, the read and write paths over l2p, the stream hooks, check and state.
 *
 * Pages a request programs or reads are issued to the NAND model as one batch when the map is
 * flat, so that pages on the same die, in different planes, at the same page offset become one
 * multi-plane program (or read).  With stripe-merge or one-shot, host pages are first staged
 * (metadata only) and programmed a staging unit at a time (stage.h; docs/engine.md).
 */
#include "pagemap.h"
#include "mem.h"

static inline bool flat(const PmapFtl *f)
{
    return !f->map->lookup;
}

static uint64_t lookup(PmapFtl *f, uint64_t lpn, uint64_t now, uint32_t *idx)
{
    return f->map->lookup ? f->map->lookup(f, lpn, now, idx) : now;
}

/* Page @lpn now lives on @ppn; @idx is what the map holds it in. */
static void set_mapping(PmapFtl *f, uint64_t lpn, uint32_t ppn, uint32_t idx)
{
    f->l2p[lpn] = ppn + 1;
    nh_blocks_map(&f->b, (uint32_t)lpn, ppn);
    nh_touch(f->touched, lpn);
    if (f->map->changed) {
        f->map->changed(f, idx);
    }
}

/* A staged page is programmed on @ppn at @t, once its mapping is known: it becomes the page's
 * mapping. */
static uint64_t pmap_put(void *ctx, uint64_t lpn, uint32_t ppn, uint64_t t)
{
    PmapFtl *f = ctx;
    uint32_t idx = 0;
    uint64_t end = nh_nand_program(f->b.nand, ppn, lookup(f, lpn, t, &idx));
    uint32_t old1 = f->l2p[lpn];    /* after the allocation and the lookup: GC may have moved it */

    if (old1) {
        nh_blocks_invalidate(&f->b, old1 - 1);
    }
    set_mapping(f, lpn, ppn, idx);
    return end;
}

/*
 * The stream frontiers that have a block per plane kept for them (NhBlocksSpec.reserved): the
 * host's streams, so that an untagged workload on a device that offers streams counts as on one
 * without.  DStream's physical streams are the device's own, opened and left as k moves: they
 * take their blocks from the spare like the host frontier (the kept block of a stream k never
 * reached would be flash no data uses: hot/cold at 276 blocks a plane, WAF 1.611 -> 1.680).
 */
static uint32_t kept_fronts(const NhPlacementSettings *pl)
{
    return pl->map == NH_MAP_DSTREAM ? 0 : pl->max_streams - 1;
}

void pmap_place(PmapFtl *f, const NhFtlEnv *env, const PmapMap *map, NhBlocksSpec *spec,
                uint32_t nfront)
{
    f->env = *env;
    f->map = map;
    spec->nfront = nfront;
    f->pl = nh_placement_new(env, FRONT_HOST, nfront);
    if (!f->pl) {
        return;
    }
    spec->nfront = nfront + f->pl->nstreams - 1;
    spec->reserved = kept_fronts(env->parts->settings[NH_PART_placement]);
    for (uint32_t i = 0; i < spec->nfront; i++) {
        /* a copy out of a block no stream wrote (a translation block too) counts as the GC
         * frontier's */
        spec->front_stream[i] = (uint8_t)nh_placement_stream_of(f->pl, i);
    }
    spec->stream_copies = env->parts->counters[NH_PART_placement] + NH_PC_GC_COPIES;
}

bool pmap_init(PmapFtl *f, const NhBlocksSpec *spec, GError **errp)
{
    if (!nh_blocks_init(&f->b, &f->env, spec, errp)) {
        return false;
    }
    f->l2p = nh_lazy_alloc(f->env.lpages, sizeof(uint32_t));
    f->touched = nh_touched_new(f->env.lpages);
    if (!f->l2p || !f->touched) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "not enough host memory for the mapping table of %" G_GUINT64_FORMAT
                    " logical pages", f->env.lpages);
        return false;
    }
    nh_stage_init(&f->stage, &f->env, &f->b, f->l2p, f->pl, FRONT_HOST, pmap_put, f);
    return true;
}

uint32_t pmap_min_spare(const NhFtlEnv *env, uint32_t npu, uint32_t nfront, uint32_t reserve)
{
    const NhPlacementSettings *pl = env->parts->settings[NH_PART_placement];
    uint32_t kept = kept_fronts(pl);

    return nh_blocks_min_spare(env->cfg, env->lpages, npu, nfront + pl->max_streams - 1 - kept,
                               reserve, kept);
}

bool pmap_unmap(PmapFtl *f, uint64_t lpn)
{
    uint32_t ppn1 = f->l2p[lpn];

    nh_stage_drop(&f->stage, lpn);
    if (!ppn1) {
        return false;
    }
    nh_blocks_invalidate(&f->b, ppn1 - 1);
    f->l2p[lpn] = 0;
    return true;
}

void pmap_destroy(void *ftl)
{
    PmapFtl *f = ftl;
    if (!f) {
        return;
    }
    nh_blocks_destroy(&f->b);
    nh_placement_free(f->pl);
    nh_lazy_free(f->l2p, f->env.lpages, sizeof(uint32_t));
    g_free(f->touched);
    nh_stage_destroy(&f->stage);
    if (f->map->destroy) {
        f->map->destroy(f);
    }
    g_free(f);
}

uint64_t pmap_read(void *ftl, uint64_t lpn, uint64_t npages, uint64_t now)
{
    PmapFtl *f = ftl;
    uint64_t done = now;

    if (flat(f)) {
        nh_nand_batch_begin(f->b.nand);
    } else {
        f->b.now = now;     /* a lookup's write-back allocates, which may clean */
    }
    for (uint64_t i = 0; i < npages; i++) {
        uint32_t idx, ppn1;
        uint64_t t;

        if (nh_stage_holds(&f->stage, lpn + i)) {
            continue;   /* served from the staging buffer */
        }
        t = lookup(f, lpn + i, now, &idx);
        ppn1 = f->l2p[lpn + i];
        if (ppn1) {
            t = nh_nand_read(f->b.nand, ppn1 - 1, t);
        }
        done = t > done ? t : done;
    }
    if (flat(f)) {
        nh_nand_batch_end(f->b.nand);
    }
    return done;
}

uint64_t pmap_write(void *ftl, const NhFtlWrite *w, uint64_t now)
{
    PmapFtl *f = ftl;
    uint64_t done = now;

    if (f->stage.unit) {
        return nh_stage_write(&f->stage, w, now);
    }
    f->b.now = now;
    if (flat(f)) {
        nh_nand_batch_begin(f->b.nand);
    }
    for (uint64_t i = 0; i < w->npages; i++) {
        uint64_t lpn = w->lpn + i;
        uint32_t idx = 0, ppn;
        /* first: a new k resizes DFTL's CMT, which must not evict the entry we then hold */
        uint32_t front = f->pl ? nh_placement_front(f->pl, lpn, w->stream, f->l2p[lpn])
                               : FRONT_HOST;
        uint64_t start = lookup(f, lpn, now, &idx);
        uint64_t t = nh_blocks_host_write(&f->b, f->l2p, w, i, front, start, &ppn);

        done = t > done ? t : done;
        set_mapping(f, lpn, ppn, idx);
    }
    if (flat(f)) {
        nh_nand_batch_end(f->b.nand);
    }
    return done;
}

uint64_t pmap_flush(void *ftl, uint64_t now)
{
    PmapFtl *f = ftl;
    /* only staged pages are not on NAND yet; a mapping cache is part of the device's protected
     * memory (as the mapping table of any FTL), so a flush writes nothing of it back */
    return nh_stage_flush(&f->stage, now);
}

void pmap_power_loss(void *ftl, void (*lost)(void *, uint64_t), void *opaque)
{
    PmapFtl *f = ftl;
    /* a staged page is not in l2p until its program starts: l2p is what was programmed */
    nh_stage_power_loss(&f->stage, lost, opaque);
}

void pmap_background(void *ftl, uint64_t now, bool defer)
{
    PmapFtl *f = ftl;

    nh_stage_background(&f->stage, now);
    nh_blocks_background(&f->b, now, defer);
}

void pmap_idle(void *ftl)
{
    nh_blocks_idle(&((PmapFtl *)ftl)->b);
}

bool pmap_is_mapped(void *ftl, uint64_t lpn)
{
    PmapFtl *f = ftl;
    return f->l2p[lpn] != 0 || nh_stage_holds(&f->stage, lpn);
}

uint32_t pmap_home(void *ftl, uint64_t lpn)
{
    PmapFtl *f = ftl;
    return nh_blocks_home(&f->b, lpn);
}

void pmap_save(void *ftl, GByteArray *o)
{
    PmapFtl *f = ftl;

    nh_blocks_save(&f->b, o);
    nh_map_save(o, f->l2p, f->touched, f->env.lpages);
    if (f->map->save_maps) {
        f->map->save_maps(f, o);
    }
    if (f->pl) {
        nh_placement_save(f->pl, o);
    }
    if (f->map->save_cache) {
        f->map->save_cache(f, o);
    }
}

bool pmap_load(void *ftl, const guint8 *data, size_t len, GError **errp)
{
    PmapFtl *f = ftl;
    NhReader r = { data, data + len };

    if (!nh_blocks_load(&f->b, &r, errp) ||
        !nh_map_load(&f->b, &r, f->l2p, f->touched, f->env.lpages, KIND_DATA, errp) ||
        (f->map->load_maps && !f->map->load_maps(f, &r, errp))) {
        return false;
    }
    if (f->pl && !nh_placement_load(f->pl, &r)) {
        return nh_blocks_corrupt(&f->b, errp, "placement");
    }
    if (f->map->load_cache && !f->map->load_cache(f, &r, errp)) {
        return false;
    }
    if (r.p != r.end) {
        return nh_blocks_corrupt(&f->b, errp, "trailing bytes");
    }
    nh_blocks_load_done(&f->b);
    return true;
}

char *pmap_check(void *ftl)
{
    PmapFtl *f = ftl;
    char *err = nh_map_check(&f->b, f->l2p, f->env.lpages, KIND_DATA, "lpn");

    if (!err && f->map->check) {
        err = f->map->check(f);
    }
    if (!err) {
        err = nh_stage_check(&f->stage, f->env.lpages);
    }
    return err ? err : nh_blocks_check(&f->b);
}

void pmap_stream_release(void *ftl, uint16_t id)
{
    PmapFtl *f = ftl;
    nh_placement_release(f->pl, id);
}

uint64_t pmap_stream_unit(void *ftl, uint16_t tag, bool close)
{
    PmapFtl *f = ftl;
    return nh_placement_unit(f->pl, &f->b, tag, close);
}

int pmap_stream_of(void *ftl, uint64_t lpn)
{
    PmapFtl *f = ftl;
    return nh_stage_holds(&f->stage, lpn) ? -1 : nh_placement_page_stream(f->pl, &f->b,
                                                                          f->l2p[lpn]);
}
