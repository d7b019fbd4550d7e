/*
 * pagemap.h - the core shared by the page-mapped FTLs (page, dftl), which differ only in their
 * map.  The core owns the forward map l2p[lpn] (ppn + 1, 0: unmapped), the block layer
 * (blocks.h), staging (stage.h), placement (placement.h) and with them the read and write
 * paths, the stream hooks, the consistency check and the state file; an FTL adds what its map
 * keeps beyond l2p through a PmapMap (DFTL: the CMT, the GTD and translation pages).
 *
 * Contract:
 *  - An FTL's state embeds PmapFtl as its first member, so the core's hooks take the FTL.
 *  - The FTL's own frontiers come first, FRONT_HOST and FRONT_GC among them; placement adds a
 *    frontier per physical stream beyond the first after them (pmap_place).
 *  - Every host write and staged program changes l2p through the core, which then tells the
 *    map (PmapMap.changed); GC moves and trims are the FTL's (NhBlocksSpec.moved, its trim).
 *  - State: the block layer's section, the mapping as runs (blocks.c), the map's sections
 *    (save_maps), with placement its section, then the map's cache (save_cache).  The byte
 *    layout is the FTLs' since state files v1.
 */
#ifndef NH_PAGEMAP_H
#define NH_PAGEMAP_H

#include "stage.h"

enum { FRONT_HOST, FRONT_GC };
enum { KIND_DATA };

typedef struct PmapFtl PmapFtl;

/* What a map keeps beyond l2p; every hook may be NULL (page's flat map has none). */
typedef struct PmapMap {
    /* @lpn is about to be read or written at @now: when its mapping is known (a cache miss
     * first reads it from flash), *idx naming what holds it for changed.  NULL: at once, and
     * a request's pages go to the NAND as one batch (multi-plane operations). */
    uint64_t (*lookup)(PmapFtl *f, uint64_t lpn, uint64_t now, uint32_t *idx);
    /* a host write or staged program changed the mapping @idx holds */
    void (*changed)(PmapFtl *f, uint32_t idx);
    void (*destroy)(PmapFtl *f);
    /* state sections after the mapping's, and after placement's (see above) */
    void (*save_maps)(PmapFtl *f, GByteArray *o);
    bool (*load_maps)(PmapFtl *f, NhReader *r, GError **errp);
    void (*save_cache)(PmapFtl *f, GByteArray *o);
    bool (*load_cache)(PmapFtl *f, NhReader *r, GError **errp);
    /* after l2p's check, before staging's and the block layer's */
    char *(*check)(PmapFtl *f);
} PmapMap;

struct PmapFtl {
    NhBlocks      b;
    NhFtlEnv      env;
    const PmapMap *map;
    uint32_t     *l2p;
    uint64_t     *touched;      /* chunks of l2p ever mapped, for save */
    NhStage       stage;
    NhPlacement  *pl;           /* NULL: placement off */
};

/*
 * Creation, in two steps around what the map sizes from placement: pmap_place starts placement
 * with the map's @nfront frontiers and adds the streams' frontiers to @spec; pmap_init then sets
 * up the block layer with @spec, l2p and staging.  False with @errp set: the caller destroys @f.
 */
void pmap_place(PmapFtl *f, const NhFtlEnv *env, const PmapMap *map, NhBlocksSpec *spec,
                uint32_t nfront);
bool pmap_init(PmapFtl *f, const NhBlocksSpec *spec, GError **errp);

/* The block layer's spare blocks with @nfront frontiers of the FTL's own and a GC reserve of
 * @reserve, plus a reserved block per physical stream beyond the first. */
uint32_t pmap_min_spare(const NhFtlEnv *env, uint32_t npu, uint32_t nfront, uint32_t reserve);

/* Trim @lpn: drop it from staging and invalidate its page on flash; false when it had none. */
bool pmap_unmap(PmapFtl *f, uint64_t lpn);

void pmap_destroy(void *ftl);
uint64_t pmap_read(void *ftl, uint64_t lpn, uint64_t npages, uint64_t now);
uint64_t pmap_write(void *ftl, const NhFtlWrite *w, uint64_t now);
uint64_t pmap_flush(void *ftl, uint64_t now);
void pmap_power_loss(void *ftl, void (*lost)(void *, uint64_t), void *opaque);
void pmap_background(void *ftl, uint64_t now, bool defer);
void pmap_idle(void *ftl);
bool pmap_is_mapped(void *ftl, uint64_t lpn);
uint32_t pmap_home(void *ftl, uint64_t lpn);
void pmap_save(void *ftl, GByteArray *out);
bool pmap_load(void *ftl, const guint8 *data, size_t len, GError **errp);
char *pmap_check(void *ftl);
void pmap_stream_release(void *ftl, uint16_t id);
int pmap_stream_of(void *ftl, uint64_t lpn);
uint64_t pmap_stream_unit(void *ftl, uint16_t tag, bool close);

/* The ops table of a page-mapped FTL: what it has of its own, every other hook the core's;
 * the rest (keys, counters, ...) as designated initializers. */
#define NH_PAGEMAP_OPS(ftl_name, create_fn, trim_fn, spare_fn, own_features, ...) { \
    .name = (ftl_name),                                                             \
    .features = NH_FTL_ONE_SHOT | NH_FTL_STRIPE_MERGE | NH_FTL_PLACEMENT |          \
                NH_FTL_DYNAMIC_ALLOC | NH_FTL_ZONES | NH_FTL_MAP_UNIT | (own_features), \
    .create = (create_fn),                                                          \
    .destroy = pmap_destroy,                                                        \
    .read = pmap_read,                                                              \
    .power_loss = pmap_power_loss,                                                  \
    .write = pmap_write,                                                            \
    .trim = (trim_fn),                                                              \
    .flush = pmap_flush,                                                            \
    .background = pmap_background,                                                  \
    .idle = pmap_idle,                                                              \
    .is_mapped = pmap_is_mapped,                                                    \
    .home = pmap_home,                                                              \
    .save = pmap_save,                                                              \
    .load = pmap_load,                                                              \
    .check = pmap_check,                                                            \
    .spare_blocks = (spare_fn),                                                     \
    .stream_release = pmap_stream_release,                                          \
    .stream_of = pmap_stream_of,                                                    \
    .stream_unit = pmap_stream_unit,                                                \
    __VA_ARGS__                                                                     \
}

#endif
