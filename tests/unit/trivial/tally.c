/*
 * tally.c - a trivial part, added the way ftl/part.h says (this file and its name in a registry
 * list) to show that nothing else has to change: one key (tally-pages), its check across keys,
 * the FTL feature it needs and one counter (tally.pages).  The configuration, the statistics
 * document, the state file and the engine's decoded settings find them from here.
 */
#include "ftl.h"

typedef struct TallySettings {
    uint64_t bytes;         /* tally-pages in bytes: decoded once, with a device key */
} TallySettings;

static const NhConfigKey tally_keys[] = {
    { "tally-pages", NH_KEY_UINT, 0, 0, "0", 0, 4096, NULL, false,
      "tally: pages of a block to tally (a trivial part for the registry's test); 0 = off" },
    { NULL },
};

static const NhStat tally_counters[] = {
    { .path = "tally.pages" },
    { .path = NULL },
};

static void tally_decode(const NhPartIn *in, void *settings)
{
    TallySettings *s = settings;
    s->bytes = in->keys[0] * in->cfg->page_size;
}

/* only an FTL that places may tally (any feature would do: one is needed for the test) */
static uint32_t tally_needs(const void *settings)
{
    const TallySettings *s = settings;
    return s->bytes ? NH_FTL_PLACEMENT : 0;
}

static bool tally_check(const NhPartIn *in, const void *settings, const void *const *all,
                        GError **errp)
{
    (void)settings;
    (void)all;
    if (in->missing) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "tally-pages: needs an FTL that places, "
                    "got ftl=%s", in->cfg->ftl);
        return false;
    }
    if (in->keys[0] > in->cfg->pages) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "tally-pages: at most pages (%u), got %"
                    G_GUINT64_FORMAT, in->cfg->pages, in->keys[0]);
        return false;
    }
    return true;
}

const NhPart nh_part_tally = {
    .name = "tally",
    .keys = tally_keys,
    .counters = tally_counters,
    .size = sizeof(TallySettings),
    .decode = tally_decode,
    .needs = tally_needs,
    .check = tally_check,
};
