/* alloc.c - write allocation for the page-mapped FTLs (contract in alloc.h). */
#include "alloc.h"
#include "stage.h"

static const char *const alloc_names[] = { "static", "dynamic", NULL };

static const NhConfigKey alloc_keys[] = {
    { "alloc", NH_KEY_ENUM, 0, 0, "static", 0, 0, alloc_names, false,
      "ftl=page or dftl: which plane a host page goes to: static (round robin in a fixed "
      "order; counters independent of time, so device and simulator agree) or dynamic (the "
      "plane whose die is free earliest, counting the GC it owes: keeps the dies busy at "
      "saturation, but placement and WAF then depend on time)" },
    { NULL },
};

static void alloc_decode(const NhPartIn *in, void *settings)
{
    NhAllocSettings *s = settings;
    s->alloc = (NhAlloc)in->keys[0];
}

static uint32_t alloc_needs(const void *settings)
{
    const NhAllocSettings *s = settings;
    return s->alloc == NH_ALLOC_DYNAMIC ? NH_FTL_DYNAMIC_ALLOC : 0;
}

static bool alloc_check(const NhPartIn *in, const void *settings, const void *const *all,
                        GError **errp)
{
    const NhAllocSettings *s = settings;
    const NhSchedSettings *sched = all[NH_PART_scheduler];
    const NhStageSettings *stage = all[NH_PART_stage];

    if (s->alloc == NH_ALLOC_STATIC) {
        return true;
    }
    if (in->missing) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "alloc: dynamic needs an FTL that "
                    "allocates host pages plane by plane (ftl=page or dftl), got ftl=%s",
                    in->cfg->ftl);
        return false;
    }
    if (sched->policy != NH_SCHED_PRIO) {
        /* measured: fcfs books a whole victim at once on its die and bus, and dynamic then
         * did worse than static (mixed 70% reads: 0.14 of the bound against 0.30) */
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "alloc: dynamic needs sched=prio (fcfs "
                    "is the earlier releases' model, kept to reproduce them with alloc=static)");
        return false;
    }
    if (stage->merge) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "alloc: dynamic does not go with "
                    "stripe-merge=on, which places each stripe on every plane itself");
        return false;
    }
    return true;
}

const NhPart nh_part_alloc = {
    .name = "alloc",
    .keys = alloc_keys,
    .size = sizeof(NhAllocSettings),
    .decode = alloc_decode,
    .needs = alloc_needs,
    .check = alloc_check,
};
