/* alloc.c - write allocation for the page-mapped FTLs (contract in alloc.h). */
#include "alloc.h"

static const char *const alloc_names[] = { "static", "dynamic", NULL };

const NhConfigKey nh_alloc_keys[] = {
    { "alloc", NH_KEY_ENUM, 0, 0, "static", 0, 0, alloc_names, false,
      "ftl=page or dftl: which plane a host page goes to: static (round robin in a fixed "
      "order; counters independent of time, so device and simulator agree) or dynamic (the "
      "plane whose die is free earliest, counting the GC it owes: keeps the dies busy at "
      "saturation, but placement and WAF then depend on time)" },
    { NULL },
};

bool nh_alloc_check(const NhConfig *cfg, uint32_t features, GError **errp)
{
    if (nh_config_uint(cfg, "alloc") == NH_ALLOC_STATIC) {
        return true;
    }
    if (!(features & NH_FTL_DYNAMIC_ALLOC)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "alloc: dynamic needs an FTL that "
                    "allocates host pages plane by plane (ftl=page or dftl), got ftl=%s",
                    cfg->ftl);
        return false;
    }
    if (nh_config_uint(cfg, "sched") != NH_SCHED_PRIO) {
        /* measured: fcfs books a whole victim at once on its die and bus, and dynamic then
         * did worse than static (mixed 70% reads: 0.14 of the bound against 0.30) */
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "alloc: dynamic needs sched=prio (fcfs "
                    "is the earlier releases' model, kept to reproduce them with alloc=static)");
        return false;
    }
    if (nh_config_uint(cfg, "stripe-merge") == NH_ON) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "alloc: dynamic does not go with "
                    "stripe-merge=on, which places each stripe on every plane itself");
        return false;
    }
    return true;
}
