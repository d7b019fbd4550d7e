/*
 * stage.c - staging host pages into one-shot word lines and stripes, one buffer per physical
 * stream (contract in stage.h).
 */
#include "stage.h"

static const char *const switch_names[] = { "off", "on", NULL };

/* one-shot is the NAND's key (a word line's pages programmed at once); stripe-merge is the
 * staging policy of the FTLs that stage */
static const NhConfigKey stage_keys[] = {
    { "stripe-merge", NH_KEY_ENUM, 0, 0, "off", 0, 0, switch_names, false,
      "ftl=page or dftl: stage writes until a full stripe (a page, with one-shot a word line, "
      "on every plane) and program it at once (seed 001); flush, FUA or one t-prog of waiting "
      "forces a partial stripe out" },
    { "stage-volatile", NH_KEY_ENUM, 0, 0, "off", 0, 0, switch_names, false,
      "the staged writes are in volatile memory (a client drive without power-loss "
      "protection): the device reports a volatile write cache, and a power cut loses what is "
      "staged unless a Flush or FUA programmed it; needs staging (stripe-merge=on or one-shot)" },
    { NULL },
};

/* The staging counters (docs/statistics.md) */
enum { STRIPE_MERGES, STRIPE_PARTIAL, STRIPE_PAGES, STRIPE_OVERWRITES, STRIPE_PADDING,
       STRIPE_LOST };
static const NhStat stage_counters[] = {
    [STRIPE_MERGES] = { .path = "ftl.stripe_merges" },
    [STRIPE_PARTIAL] = { .path = "ftl.stripe_partial" },
    [STRIPE_PAGES] = { .path = "ftl.stripe_pages" },
    [STRIPE_OVERWRITES] = { .path = "ftl.stripe_overwrites" },
    [STRIPE_PADDING] = { .path = "ftl.stripe_padding" },
    [STRIPE_LOST] = { .path = "ftl.stripe_lost" },
    { .path = NULL },
};

#define LPN_KEY(lpn) GSIZE_TO_POINTER((gsize)(lpn) + 1)

static void stage_decode(const NhPartIn *in, void *settings)
{
    const NhConfig *cfg = in->cfg;
    NhStageSettings *s = settings;
    uint32_t wl = nh_config_sub(cfg) * (cfg->one_shot == NH_ON ? 3 : 1);

    s->merge = in->keys[0] == NH_ON;
    s->lossy = in->keys[1] == NH_ON;
    s->sub = nh_config_sub(cfg);
    if (s->merge || wl > 1) {
        s->unit = wl * (s->merge ? cfg->channels * cfg->ways * cfg->dies * cfg->planes : 1);
    }
}

static uint32_t stage_needs(const void *settings)
{
    const NhStageSettings *s = settings;
    return (s->merge ? NH_FTL_STRIPE_MERGE : 0) | (s->sub > 1 ? NH_FTL_MAP_UNIT : 0);
}

static bool stage_check(const NhPartIn *in, const void *settings, const void *const *all,
                        GError **errp)
{
    const NhStageSettings *s = settings;

    (void)all;
    if (in->missing & NH_FTL_MAP_UNIT) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "map-unit: only ftl=page and ftl=dftl map units smaller than a flash page "
                    "(map-unit=%u, page-size=%u), got ftl=%s", in->cfg->map_unit,
                    in->cfg->page_size, in->cfg->ftl);
        return false;
    }
    if (in->missing) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "stripe-merge: only ftl=page and ftl=dftl merge writes into stripes, got "
                    "ftl=%s", in->cfg->ftl);
        return false;
    }
    if (s->lossy && !s->unit) {
        /* without staging every write is on NAND when it completes: nothing could be lost */
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "stage-volatile: nothing is staged to lose: set stripe-merge=on (or "
                    "one-shot=on with a multi-page word line)");
        return false;
    }
    if (s->sub > 1 && !s->merge) {
        /* staging one flash page per stream would leave two pages' programs in flight (its
         * two halves): a random write load would run at 2 pages per t-prog */
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "map-unit: units smaller than a flash page (map-unit=%u, page-size=%u) are "
                    "packed into pages by stripe staging: set stripe-merge=on",
                    in->cfg->map_unit, in->cfg->page_size);
        return false;
    }
    return true;
}

/* Its key and counters come first of the FTLs' (they were ftl=page's before the registry). */
const NhPart nh_part_stage = {
    .name = "stage",
    .keys = stage_keys,
    .counters = stage_counters,
    .size = sizeof(NhStageSettings),
    .decode = stage_decode,
    .needs = stage_needs,
    .check = stage_check,
};

void nh_stage_init(NhStage *s, const NhFtlEnv *env, NhBlocks *b, const uint32_t *fwd,
                   NhPlacement *pl, uint32_t host_front, NhStagePut put, void *ctx)
{
    const NhStageSettings *set = env->parts->settings[NH_PART_stage];

    *s = (NhStage){
        .unit = set->unit, .nbuf = pl ? pl->nstreams : 1, .lossy = set->lossy,
        .wait = set->sub > 1 ? 0 : env->nand->t.t_prog, .b = b, .fwd = fwd, .pl = pl,
        .host_front = host_front,
        .ctr = env->parts->counters[NH_PART_stage], .put = put, .ctx = ctx,
    };
    if (!s->unit) {
        return;
    }
    s->buf = g_new0(NhStageBuf, s->nbuf);
    for (uint32_t i = 0; i < s->nbuf; i++) {
        s->buf[i].lpn = g_new(uint64_t, s->unit);
    }
    s->slot = g_hash_table_new(g_direct_hash, g_direct_equal);
}

void nh_stage_destroy(NhStage *s)
{
    for (uint32_t i = 0; s->buf && i < s->nbuf; i++) {
        g_free(s->buf[i].lpn);
    }
    g_free(s->buf);
    if (s->slot) {
        g_hash_table_destroy(s->slot);
    }
}

/* Buffer x unit + index + 1 of a staged @lpn, 0 if not staged. */
static uint32_t slot_of(const NhStage *s, uint64_t lpn)
{
    return GPOINTER_TO_UINT(g_hash_table_lookup(s->slot, LPN_KEY(lpn)));
}

/* Program buffer @bi's filling half at @t (its pages all staged by then): allocate each page a
 * page of the stream's frontier, one-shot word lines padded with pages that hold nothing, all
 * in one NAND batch. */
static uint64_t program(NhStage *s, uint32_t bi, uint64_t t)
{
    NhStageBuf *sb = &s->buf[bi];
    NhNand *nand = s->b->nand;
    uint32_t pad = (nand->wl - sb->n % nand->wl) % nand->wl;
    uint32_t front = s->pl ? nh_placement_front_of(s->pl, bi) : s->host_front;
    uint64_t done = t;

    t = MAX(t, sb->ready);
    s->b->now = t;
    nh_nand_batch_begin(nand);
    for (uint32_t i = 0; i < sb->n + pad; i++) {
        uint32_t ppn = nh_blocks_host_page(s->b, front);
        uint64_t end = i < sb->n ? s->put(s->ctx, sb->lpn[i], ppn, t)
                                 : nh_nand_program(nand, ppn, t);
        done = MAX(done, end);
    }
    nh_nand_batch_end(nand);
    s->ctr[sb->n == s->unit ? STRIPE_MERGES : STRIPE_PARTIAL]++;
    s->ctr[STRIPE_PAGES] += sb->n;
    s->ctr[STRIPE_PADDING] += pad;
    for (uint32_t i = 0; i < sb->n; i++) {
        g_hash_table_remove(s->slot, LPN_KEY(sb->lpn[i]));
    }
    sb->n = 0;
    sb->ready = 0;
    sb->free_at[sb->cur] = done;
    sb->cur ^= 1;
    return done;
}

/* Program buffer @bi's partial unit (flush, FUA, bounded wait, merge); @t if it is empty. */
static uint64_t force(NhStage *s, uint32_t bi, uint64_t t)
{
    return s->buf[bi].n ? program(s, bi, t) : t;
}

/* Remove staged @lpn from its buffer: the buffer's last page takes its place. */
static void unstage(NhStage *s, uint64_t lpn)
{
    uint32_t v = slot_of(s, lpn) - 1, i = v % s->unit;
    NhStageBuf *sb = &s->buf[v / s->unit];

    g_hash_table_remove(s->slot, LPN_KEY(lpn));
    if (i != --sb->n) {
        sb->lpn[i] = sb->lpn[sb->n];
        g_hash_table_insert(s->slot, LPN_KEY(sb->lpn[i]), GUINT_TO_POINTER(v + 1));
    }
}

void nh_stage_drop(NhStage *s, uint64_t lpn)
{
    if (nh_stage_holds(s, lpn)) {
        unstage(s, lpn);
    }
}

/* DStream left @k physical streams (a merge): the buffers of streams k and above are programmed
 * at @t, padded, the page that ended the timestamp included (it was placed before the merge);
 * docs/placement.md, "A merged stream's buffer". */
static void shrink(NhStage *s, uint32_t k, uint64_t t)
{
    for (uint32_t bi = k; bi < s->nbuf; bi++) {
        force(s, bi, t);
    }
}

/* The buffer (physical stream) page @lpn of @w goes to; counts it for placement. */
static uint32_t buffer_for(NhStage *s, const NhFtlWrite *w, uint64_t lpn, bool held)
{
    if (!s->pl) {
        return 0;
    }
    return nh_placement_stream_of(s->pl, nh_placement_front(s->pl, lpn, w->stream, held));
}

uint64_t nh_stage_write(NhStage *s, const NhFtlWrite *w, uint64_t now)
{
    uint64_t ack = now, programmed = now;
    uint32_t touched = 0;   /* buffers holding pages of @w: a FUA programs them */

    s->b->now = now;        /* a DStream merge may program buffers below */
    for (uint64_t i = 0; i < w->npages; i++) {
        uint64_t lpn = w->lpn + i;
        bool partial = (i == 0 && w->head_partial) || (i == w->npages - 1 && w->tail_partial);
        uint32_t was = slot_of(s, lpn);
        uint32_t bi = buffer_for(s, w, lpn, was || s->fwd[lpn]);
        NhStageBuf *sb = &s->buf[bi];

        touched |= 1u << bi;
        if (was) {
            /* the staged copy takes the new data: no read, no program of its own */
            s->ctr[STRIPE_OVERWRITES]++;
            if ((was - 1) / s->unit == bi) {
                continue;
            }
            unstage(s, lpn);    /* placed on another stream now: it moves there */
        }
        if (sb->n == s->unit) {
            /* a full unit is programmed only when a new page needs its room, so that writes
             * to its pages until then (the rest of a page written in parts) still join it */
            uint64_t t = program(s, bi, ack);
            programmed = MAX(programmed, t);
        }
        ack = MAX(ack, sb->free_at[sb->cur]);
        if (partial && !was && s->fwd[lpn]) {
            /* the rest of the page joins it in the buffer before the program */
            uint64_t t = nh_nand_read(s->b->nand, s->fwd[lpn] - 1, ack);
            sb->ready = MAX(sb->ready, t);
            s->b->st->ftl_rmw_reads++;
        }
        if (!sb->n) {
            sb->first = ack;
        }
        sb->lpn[sb->n] = lpn;
        g_hash_table_insert(s->slot, LPN_KEY(lpn), GUINT_TO_POINTER(bi * s->unit + sb->n + 1));
        sb->n++;
    }
    if (s->pl) {
        shrink(s, nh_placement_k(s->pl), ack);
    }
    if (!w->fua) {
        return ack;
    }
    for (uint32_t bi = 0; bi < s->nbuf; bi++) {
        if (touched & (1u << bi)) {
            uint64_t t = force(s, bi, ack);
            programmed = MAX(programmed, t);
        }
    }
    return MAX(programmed, ack);
}

uint64_t nh_stage_flush(NhStage *s, uint64_t t)
{
    uint64_t done = t;

    for (uint32_t bi = 0; bi < s->nbuf && s->unit; bi++) {
        uint64_t end = force(s, bi, t);
        done = MAX(done, end);
    }
    return done;
}

void nh_stage_background(NhStage *s, uint64_t now)
{
    /* a page waits at most one tPROG for its unit-mates: it then reaches NAND at most one
     * program time later than it would have unstaged.  Not with map-unit: a forced stripe pads
     * its last flash page, and a unit reached NAND one at a time before (as a whole page)
     * only because it had to; the units wait for their stripe, a flush or a FUA, in the
     * buffer (capacitor-protected, or with stage-volatile lost at a cut unless flushed) */
    for (uint32_t bi = 0; bi < s->nbuf && s->unit && s->wait; bi++) {
        NhStageBuf *sb = &s->buf[bi];
        if (sb->n && now >= sb->first + s->wait) {
            force(s, bi, sb->first + s->wait);
        }
    }
}

void nh_stage_power_loss(NhStage *s, void (*lost)(void *, uint64_t), void *opaque)
{
    g_autofree uint32_t *n = NULL;

    if (!s->unit || !s->lossy) {
        return;
    }
    /* every buffer is emptied before the first report (the engine's contract); the lpns stay
     * in the arrays to be reported */
    n = g_new(uint32_t, s->nbuf);
    g_hash_table_remove_all(s->slot);
    for (uint32_t bi = 0; bi < s->nbuf; bi++) {
        n[bi] = s->buf[bi].n;
        s->buf[bi].n = 0;
        s->buf[bi].ready = 0;
        s->ctr[STRIPE_LOST] += n[bi];
    }
    for (uint32_t bi = 0; bi < s->nbuf; bi++) {
        for (uint32_t i = 0; i < n[bi]; i++) {
            lost(opaque, s->buf[bi].lpn[i]);
        }
    }
}

char *nh_stage_check(const NhStage *s, uint64_t lpages)
{
    uint32_t total = 0;

    for (uint32_t bi = 0; bi < s->nbuf && s->unit; bi++) {
        const NhStageBuf *sb = &s->buf[bi];
        if (sb->n > s->unit) {
            return g_strdup_printf("stream %u: %u pages staged of %u", bi, sb->n, s->unit);
        }
        for (uint32_t i = 0; i < sb->n; i++) {
            if (sb->lpn[i] >= lpages || slot_of(s, sb->lpn[i]) != bi * s->unit + i + 1) {
                return g_strdup_printf("stream %u: staged page %u (lpn %" G_GUINT64_FORMAT
                                       ") not indexed", bi, i, sb->lpn[i]);
            }
        }
        total += sb->n;
    }
    if (s->unit && g_hash_table_size(s->slot) != total) {
        return g_strdup_printf("%u pages staged, %u in the index", total,
                               g_hash_table_size(s->slot));
    }
    return NULL;
}
