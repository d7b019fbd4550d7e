/* ftl.c - the registry of FTLs: adding one is a line in each list below. */
#include "ftl.h"

#include <string.h>

static const NhFtlOps *const registry[] = {
    &nh_ftl_page_ops,
    &nh_ftl_dftl_ops,
    &nh_ftl_bast_ops, &nh_ftl_fast_ops, &nh_ftl_sast_ops,
};

const char *const nh_ftl_names[] = {
    "page",
    "dftl",
    "bast", "fast", "sast",
    NULL,
};

G_STATIC_ASSERT(G_N_ELEMENTS(nh_ftl_names) == G_N_ELEMENTS(registry) + 1);

const NhFtlOps *nh_ftl_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(registry); i++) {
        if (strcmp(registry[i]->name, name) == 0) {
            return registry[i];
        }
    }
    return NULL;
}
