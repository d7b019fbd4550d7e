/* ftl.c - the registries of FTLs and parts (NH_FTL_REGISTRY in ftl.h, NH_PART_REGISTRY in
 * part.h) and what the FTLs share. */
#include "ftl.h"

#include <string.h>

#define NH_FTL_OPS(name) &nh_ftl_##name##_ops,
#define NH_FTL_NAME(name) #name,

static const NhFtlOps *const registry[] = { NH_FTL_REGISTRY(NH_FTL_OPS) };
const char *const nh_ftl_names[] = { NH_FTL_REGISTRY(NH_FTL_NAME) NULL };

#define NH_PART_ENTRY(file) &nh_part_##file,
const NhPart *const nh_parts[NH_PARTS] = { NH_PART_REGISTRY(NH_PART_ENTRY) };

const NhFtlOps *nh_ftl_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(registry); i++) {
        if (strcmp(registry[i]->name, name) == 0) {
            return registry[i];
        }
    }
    return NULL;
}

uint32_t nh_ftl_log_blocks(uint64_t log_blocks, const NhGeometry *g, uint64_t lpages)
{
    uint64_t data_blocks = (lpages + g->pages - 1) / g->pages;

    if (log_blocks) {
        return (uint32_t)log_blocks;
    }
    return (uint32_t)MAX(g->nblocks - data_blocks, 2) - 1;
}
