/*
 * placement.h - data placement for the page-mapped FTLs (page, dftl): which physical stream (write
 * frontier) a host page goes to, from its placement tag (NhFtlWrite.stream: 0 untagged, 1..n the
 * host's stream identifier) and, with stream-map=dstream, from DStream's clustering of logical
 * streams by update frequency (seed 003; dstream.c).  docs/placement.md has the rules.
 *
 * Contract:
 *  - Placement is on when streams > 0 or stream-map=dstream; only FTLs with NH_FTL_PLACEMENT
 *    accept it (the part's check, nh_part_placement).  streams=auto (the default) turns it on wherever it can
 *    be: a default device is a multi-stream SSD.  Off, nothing here is consulted.
 *  - Frontiers beyond the FTL's own are reserved (NhBlocksSpec.reserved): a block per plane is
 *    kept for each one not open, so untagged writes see the device as without them and count
 *    the same with placement on or off.
 *  - Physical stream 0 is the FTL's own host frontier; physical stream s >= 1 is frontier
 *    first_front + s - 1, which the FTL adds to its NhBlocksSpec (nh_placement_fronts).  GC
 *    copies go to the FTL's one GC frontier, whatever stream the victim was written by.
 *  - The placement keys and counters are shared by every FTL that places: they are the part's
 *    (part.h), listed once after the FTLs' own.
 *  - With one-shot or stripe-merge staging (stage.h) every physical stream stages in a buffer
 *    of its own; with staging on, stream-buffer must hold one (the part's check).
 */
#ifndef NH_PLACEMENT_H
#define NH_PLACEMENT_H

#include "ftl.h"
#include "record.h"

#define NH_MAX_STREAMS 64           /* physical streams at most (write frontiers) */
#define NH_STREAM_GC NH_MAX_STREAMS /* element of gc_copies for blocks the GC frontier wrote */
#define NH_MAX_HOST_STREAMS 256     /* host stream identifiers at most (the streams key) */
#define NH_AUTO_STREAMS 16          /* streams=auto where the device can place */
#define NH_DSTREAM_KMAX 16          /* physical-streams=auto under DStream (seed 003's device) */
#define NH_SERIES_MAX 128           /* samples kept of each time series (docs/placement.md) */

typedef enum NhStreamMap { NH_MAP_FIXED, NH_MAP_DSTREAM } NhStreamMap;

/* How k moves (the key dstream-k, in its order): seed 003's rule read two ways, or not at all. */
typedef enum NhKmeansRule {
    NH_KMEANS_ADAPTIVE,     /* the rule once per timestamp, on the element farthest away */
    NH_KMEANS_FIXED,        /* Lloyd only: k stays kmax */
    NH_KMEANS_PER_ELEMENT,  /* the rule for each element in turn */
} NhKmeansRule;

/* The part's settings (part.h: nh_part_placement), decoded from its keys with auto resolved. */
typedef struct NhPlacementSettings {
    bool        on;
    NhStreamMap map;
    uint64_t    streams;        /* the streams key as given, NH_CONFIG_AUTO for auto */
    /* host stream identifiers accepted: streams, with auto resolved (NH_AUTO_STREAMS where the
     * FTL places, stream-map=fixed, buffer=none and cache-size=0; else 0).  0: none */
    uint32_t    host_streams;
    uint32_t    max_streams;    /* physical streams the FTL keeps frontiers for: 1 when off */
    uint64_t    stream_buffer;  /* bytes one open physical stream's write buffer takes */
    uint64_t    dstream_memory; /* 0: auto */
    uint32_t    partitions;     /* dstream-partitions */
    uint64_t    timestamp;      /* host pages between two clusterings */
    NhKmeansRule k_rule;        /* dstream-k */
} NhPlacementSettings;

/* The placement counters, in the order of the part's table (ftl.placement.*). */
enum {
    NH_PC_HOST_PAGES,                               /* [NH_MAX_STREAMS] */
    NH_PC_GC_COPIES = NH_PC_HOST_PAGES + NH_MAX_STREAMS,    /* [NH_MAX_STREAMS + 1] */
    NH_PC_STREAM_PAGES = NH_PC_GC_COPIES + NH_MAX_STREAMS + 1, /* [NH_MAX_HOST_STREAMS + 1] */
    NH_PC_HOST_STREAMS = NH_PC_STREAM_PAGES + NH_MAX_HOST_STREAMS + 1,
    NH_PC_SHARED,
    NH_PC_OPEN,
    NH_PC_RELEASES,
    NH_PC_K,
    NH_PC_K_CHANGES,
    NH_PC_TIMESTAMPS,
    NH_PC_CMT_ENTRIES,
    NH_PC_SAMPLES,
    NH_PC_STRIDE,
    NH_PC_K_SERIES,                                 /* [NH_SERIES_MAX] */
    NH_PC_CMT_SERIES = NH_PC_K_SERIES + NH_SERIES_MAX,  /* [NH_SERIES_MAX] */
    NH_PC_SLOTS = NH_PC_CMT_SERIES + NH_SERIES_MAX,
};


typedef struct NhDstream NhDstream;

typedef struct NhPlacement {
    uint32_t  nstreams;     /* physical streams at most (frontiers) */
    uint32_t  host_streams; /* host identifiers accepted */
    uint32_t  shared;       /* fixed: host streams sharing their physical stream */
    uint32_t  first_front;  /* frontier of physical stream 1 */
    uint32_t  host_front;   /* frontier of physical stream 0 */
    uint64_t *ctr;          /* NH_PC_* */
    uint8_t  *open;         /* [host_streams + 1] logical streams written since their release */
    uint32_t  nopen;
    NhDstream *ds;          /* stream-map=dstream; NULL for fixed */
    /* told when DStream changes k: dftl resizes its mapping cache and returns its entries;
     * NULL for an FTL without one */
    uint64_t (*k_changed)(void *ctx, uint32_t k);
    void     *ctx;
    uint64_t  cmt_entries;  /* the mapping cache's capacity now, 0 without one */
} NhPlacement;

/* NULL when placement is off (the FTL then never calls the functions below). */
NhPlacement *nh_placement_new(const NhFtlEnv *env, uint32_t host_front, uint32_t first_front);
void nh_placement_free(NhPlacement *p);

/* The frontier for page @lpn written with tag @tag; @overwrite: it held valid data (an update,
 * DStream's valid-bitmap update count).  Counts the page. */
uint32_t nh_placement_front(NhPlacement *p, uint64_t lpn, uint16_t tag, bool overwrite);
/* The frontier of physical stream @s. */
uint32_t nh_placement_front_of(const NhPlacement *p, uint32_t s);
/* The physical stream frontier @front serves, NH_STREAM_GC for any other (the GC frontier). */
uint32_t nh_placement_stream_of(const NhPlacement *p, uint32_t front);
void nh_placement_release(NhPlacement *p, uint16_t id);
struct NhBlocks;
/* Tag @tag's reclaim unit, the open blocks (one per plane) of the frontier it writes to now:
 * the pages still free in it; with @close, the unit is closed as it is instead (its next
 * write opens a new one) and the pages it left unwritten are returned (FDP's Reclaim Unit
 * Handle Update, docs/placement.md). */
uint64_t nh_placement_unit(const NhPlacement *p, struct NhBlocks *b, uint16_t tag, bool close);
/* The FTLs' stream_of hook: the stream of the block holding ppn @ppn1 - 1 of @b, -1 for
 * @ppn1 = 0 or @p = NULL (placement off). */
int nh_placement_page_stream(const NhPlacement *p, const struct NhBlocks *b, uint32_t ppn1);
/* Physical streams in use now (k). */
uint32_t nh_placement_k(const NhPlacement *p);

/* State: open logical streams and DStream's clusters. */
void nh_placement_save(const NhPlacement *p, GByteArray *o);
bool nh_placement_load(NhPlacement *p, NhReader *r);

#endif
