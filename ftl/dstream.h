/*
 * dstream.h - DStream (seed 003): logical streams (LBA partitions of untagged writes, and the
 * host's stream identifiers) clustered once per timestamp by their valid-bitmap update counts
 * with adaptive k-means; cluster j (the j-th coldest) is physical stream j.  docs/placement.md
 * gives every choice the paper leaves open.
 */
#ifndef NH_DSTREAM_H
#define NH_DSTREAM_H

#include "placement.h"

/* Adaptive k-means over one timestamp's elements; centroids kept in ascending order. */
typedef struct NhKmeans {
    uint32_t k, kmax;               /* k = 0 before the first step */
    NhKmeansRule rule;
    double   cent[NH_MAX_STREAMS];
} NhKmeans;

/*
 * One timestamp: Lloyd iterations from the current centroids (the first step starts from kmax
 * centroids at the quantiles of @x), then seed 003's rule.  The rule, for an element: farther
 * from its nearest centroid than or as far as the smallest centroid distance Dmin, merge the two
 * closest clusters (into their members' mean); nearer, add a cluster at the mean of the two
 * hottest centroids (k = 1: of the centroid and the hottest element) unless one is there
 * already.  NH_KMEANS_ADAPTIVE applies it once, to the element farthest from its centroid;
 * NH_KMEANS_PER_ELEMENT to every element in index order, each against the clusters the ones
 * before it left (Dmin taken again after every change).  @assign[i] receives element i's
 * cluster under the centroids in force after the step.  Returns the change of k.
 */
int nh_kmeans_step(NhKmeans *km, const double *x, uint32_t n, uint8_t *assign);

NhDstream *nh_dstream_new(const NhPlacementSettings *set, uint64_t lpages, uint32_t kmax);
void nh_dstream_free(NhDstream *ds);
/* The placement part's checks of the dstream keys; @missing: the FTL features it lacks. */
bool nh_dstream_check(const NhConfig *cfg, const NhPlacementSettings *set, uint32_t missing,
                      GError **errp);
uint32_t nh_dstream_k(const NhDstream *ds);
/* The physical stream of a host page (see nh_placement_front); ends a timestamp when its
 * pages are written (*timestamp set), then k may have changed. */
uint32_t nh_dstream_page(NhDstream *ds, uint64_t lpn, uint16_t tag, bool overwrite,
                         bool *timestamp);
/* The physical stream host tag @tag's writes go to now (0 for untagged writes, whose stream
 * depends on their LBA partition). */
uint32_t nh_dstream_stream_of_tag(const NhDstream *ds, uint16_t tag);
void nh_dstream_release(NhDstream *ds, uint16_t id);
void nh_dstream_save(const NhDstream *ds, GByteArray *o);
bool nh_dstream_load(NhDstream *ds, NhReader *r);

#endif
