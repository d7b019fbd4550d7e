/*
 * config.c - the device's key tables, composed with the policies' and parts' into one list of
 * keys by name, and the checks across them (contract in config.h).
 *
 * Every key is described once, in a table here or in its policy's or part's table; parsing,
 * range checks, canonical printing and help text all come from those entries (ftl/keys.c), so
 * the device's QOM properties and the simulator's option string cannot drift apart.
 */
#include "config.h"
#include "ftl.h"
#include "buffer.h"
#include "engine-priv.h"

#include <string.h>

static const char *const cell_names[] = { "slc", "mlc", "tlc", "qlc", "znand", NULL };
static const char *const gc_names[] = { "greedy", "cost-benefit", NULL };
static const char *const latency_names[] = { "model", "zero", NULL };
static const char *const unwritten_names[] = { "free", "flash", NULL };
static const char *const buf_media_names[] = { "dram", "sttmram", "custom", NULL };
static const char *const buf_volatile_names[] = { "auto", "on", "off", NULL };
static const char *const switch_names[] = { "off", "on", NULL };

#define F(field) offsetof(NhConfig, field), sizeof(((NhConfig *)0)->field)
#define MS 1000000ull     /* in ns */
#define SEC 1000000000ull

/* NAND and FTL keys of every device; preset first, as what the others start from */
static const NhConfigKey device_keys[] = {
    { "preset", NH_KEY_STRING, F(preset), NH_PRESET_DEFAULT, 0, 0, nh_preset_names, false,
      "a real drive whose values the keys not given take, whatever their order: pm9a3 "
      "(Samsung PM9A3, TLC, the default), 970pro (Samsung 970 PRO as NVMeVirt calibrated it), "
      "sz985 (Samsung SZ985, Z-NAND), pm9d3a (Samsung PM9D3a, TLC, FDP), none (every key its "
      "own default: 8 channels x 4 SLC chips, 4 KiB pages); values and sources: "
      "nvme-hybrid-sim --list-presets, docs/presets.md" },
    { "channels", NH_KEY_UINT, F(channels), "8", 1, 64, NULL, false,
      "flash channels (independent buses)" },
    { "ways", NH_KEY_UINT, F(ways), "4", 1, 32, NULL, false,
      "chips per channel" },
    { "dies", NH_KEY_UINT, F(dies), "1", 1, 16, NULL, false,
      "dies per chip" },
    { "planes", NH_KEY_UINT, F(planes), "1", 1, NH_PLANES_MAX, NULL, false,
      "planes per die" },
    { "blocks", NH_KEY_UINT, F(blocks), "auto", 1, NH_BLOCKS_MAX, NULL, true,
      "blocks per plane; auto = the fewest that hold the capacity after op" },
    { "pages", NH_KEY_UINT, F(pages), "256", 4, 4096, NULL, false,
      "pages per block" },
    { "page-size", NH_KEY_SIZE, F(page_size), "4K", 4096, NH_PAGE_SIZE_MAX, NULL, false,
      "flash page size: 4K, 8K, 16K or 32K" },
    { "map-unit", NH_KEY_SIZE, F(map_unit), "auto", 4096, NH_PAGE_SIZE_MAX, NULL, true,
      "bytes the FTL maps: 4K, 8K, 16K or 32K, at most page-size; auto = page-size.  Smaller "
      "units are packed page-size / map-unit to a flash page by stripe staging (needs "
      "stripe-merge=on and ftl=page or dftl) and a read moves only its units over the channel" },
    { "op", NH_KEY_UINT, F(op), "7", 1, 50, NULL, false,
      "over-provisioning, percent of the physical capacity kept spare" },
    { "cell", NH_KEY_ENUM, F(cell), "slc", 0, 0, cell_names, false,
      "cell type preset for timing and endurance: slc, mlc, tlc, qlc, znand" },
    { "t-read", NH_KEY_TIME, F(t_read), "auto", 1, SEC, NULL, true,
      "page read time (tR); auto = the cell preset" },
    { "t-prog", NH_KEY_TIME, F(t_prog), "auto", 1, SEC, NULL, true,
      "page program time (tPROG); auto = the cell preset" },
    { "t-erase", NH_KEY_TIME, F(t_erase), "auto", 1, SEC, NULL, true,
      "block erase time (tBERS); auto = the cell preset" },
    { "channel-mbps", NH_KEY_UINT, F(channel_mbps), "800", 1, 100000, NULL, false,
      "channel bus bandwidth in MB/s (10^6 bytes per second)" },
    { "host-mbps", NH_KEY_UINT, F(host_mbps), "0", 0, 1000000, NULL, false,
      "host interface (PCIe link) bandwidth each way in MB/s: a read's data leaves after its "
      "flash read, a write's arrives before it, one transfer at a time each way; 0 = not "
      "modelled (data moves at no cost)" },
    { "host-mps", NH_KEY_UINT, F(host_mps), "256", 0, 4096, NULL, false,
      "PCIe max payload size in bytes (128, 256, ..., 4096): with host-mbps, a transfer of N "
      "bytes crosses the link as ceil(N / host-mps) packets of 24 bytes of overhead each "
      "(framing, sequence number, 4-dword header, LCRC); 0 = host-mbps is already an "
      "effective rate" },
    { "fw-read", NH_KEY_TIME, F(fw_read), "0", 0, SEC, NULL, false,
      "controller firmware time of every read, before its flash reads; a fixed delay, not a "
      "resource: it adds latency, it does not cap IOPS" },
    { "fw-read-large", NH_KEY_TIME, F(fw_read_large), "0", 0, SEC, NULL, false,
      "firmware time a read over 4 KiB pays on top of fw-read (NVMeVirt charges such reads "
      "more)" },
    { "fw-write", NH_KEY_TIME, F(fw_write), "0", 0, SEC, NULL, false,
      "controller firmware time of every write (zone appends too), before its data crosses "
      "the host link; a fixed delay, not a resource" },
    { "fw-write-4k", NH_KEY_TIME, F(fw_write_4k), "0", 0, SEC, NULL, false,
      "firmware time a write pays on top of fw-write for each 4 KiB of its data (rounded up)" },
    { "pe-cycles", NH_KEY_UINT, F(pe_cycles), "auto", 1, 10000000, NULL, true,
      "rated program/erase cycles per block; auto = the cell preset" },
    { "one-shot", NH_KEY_ENUM, F(one_shot), "off", 0, 0, switch_names, false,
      "cell=tlc, ftl=page: program the 3 pages of a word line (LSB, CSB, MSB) in one operation "
      "of one t-prog (HSP, seed 003); pages must be a multiple of 3" },
    { "ftl", NH_KEY_STRING, F(ftl), NH_FTL_DEFAULT, 0, 0, nh_ftl_names, false,
      "flash translation layer" },
    { "gc", NH_KEY_ENUM, F(gc), "greedy", 0, 0, gc_names, false,
      "GC victim selection: greedy (fewest valid pages) or cost-benefit (age * free / cost)" },
    { "gc-low", NH_KEY_UINT, F(gc_low), "10", 1, 99, NULL, false,
      "background GC starts when free blocks fall below this percent of the spare blocks" },
    { "gc-high", NH_KEY_UINT, F(gc_high), "20", 2, 100, NULL, false,
      "background GC stops when free blocks reach this percent of the spare blocks" },
    { "gc-critical", NH_KEY_UINT, F(gc_critical), "3", 1, 98, NULL, false,
      "foreground GC (host writes wait) below this percent of the spare blocks" },
    { "wl-threshold", NH_KEY_UINT, F(wl_threshold), "0", 0, 1000000, NULL, false,
      "static wear levelling moves cold data when a plane's erase-count spread exceeds this; 0 = off" },
};

/* Device DRAM: the write buffer and the read cache (the FTLs own their mapping caches' keys) */
static const NhConfigKey memory_keys[] = {
    { "buffer", NH_KEY_STRING, F(buffer), "none", 0, 0, nh_buf_names, false,
      "write-buffer policy: none, lru, bplru, fab, clc, ref, bpac, cbm, lbuf (docs/buffers.md)" },
    { "buffer-size", NH_KEY_SIZE, F(buffer_size), "32M", 1ull << 16, 1ull << 40, NULL, false,
      "write buffer in bytes, at least one flash block; K/M/G suffixes" },
    { "buffer-media", NH_KEY_ENUM, F(buffer_media), "dram", 0, 0, buf_media_names, false,
      "write-buffer memory: dram (15 ns), sttmram (32 ns read, 40 ns write) or custom "
      "(t-buf-read and t-buf-write)" },
    { "t-buf-read", NH_KEY_TIME, F(t_buf_read), "auto", 1, MS, NULL, true,
      "write-buffer read time per page, only with buffer-media=custom" },
    { "t-buf-write", NH_KEY_TIME, F(t_buf_write), "auto", 1, MS, NULL, true,
      "write-buffer write time per page, only with buffer-media=custom" },
    { "buffer-volatile", NH_KEY_ENUM, F(buffer_volatile), "auto", 0, 0, buf_volatile_names,
      false, "on: flush and FUA drain the buffer (volatile write cache); off: it is durable "
      "(capacitor-backed); auto: on for dram and custom, off for sttmram" },
    { "cache-size", NH_KEY_SIZE, F(cache_size), "0", 0, 1ull << 40, NULL, false,
      "read cache (DRAM LRU of clean pages) in bytes; 0 = none. cbm merges its pages on flush" },
};

static const NhConfigKey front_end_keys[] = {
    { "latency", NH_KEY_ENUM, F(latency), "model", 0, 0, latency_names, false,
      "model: complete at the modeled time; zero: model and count, but complete at once" },
    { "unwritten-reads", NH_KEY_ENUM, F(unwritten_reads), "flash", 0, 0, unwritten_names, false,
      "a host read of a page never written (or deallocated): flash, one page read on the die "
      "the page would have been written to, as if the drive held data from before (a trace's "
      "reads of what was written before it began; MQSim charges them so), or free, answered "
      "from the mapping table as by a fresh drive" },
};

typedef struct KeyList {
    NhConfigKey *keys;
    size_t n;
    GHashTable *by_name;    /* name -> key: looked up per element of every statistics document */
    GHashTable *first;      /* a policy's or part's table -> its first slot + 1 */
} KeyList;

static void append_keys(GArray *a, const NhConfigKey *k, size_t n, size_t *slot,
                        GHashTable *first)
{
    if (slot && k) {
        g_hash_table_insert(first, (gpointer)k, GSIZE_TO_POINTER(*slot + 1));
    }
    for (size_t i = 0; k && i < n && k[i].name; i++) {
        NhConfigKey key = k[i];
        if (slot) {
            g_assert(*slot < NH_CONFIG_POLICY_SLOTS);
            key.offset = offsetof(NhConfig, policy) + *slot * sizeof(uint64_t);
            key.width = sizeof(uint64_t);
            ++*slot;
        }
        /* auto_value() of a key where 0 is a value needs all 64 bits */
        g_assert(!key.allow_auto || key.type != NH_KEY_UINT || key.min || key.width == 8);
        g_array_append_val(a, key);
    }
}

/* The parts listed before the FTLs' keys or (@after) after them. */
static void append_parts(GArray *a, bool after, size_t *slot, GHashTable *first)
{
    for (size_t i = 0; i < NH_PARTS; i++) {
        if (nh_parts[i]->keys_after_ftls == after) {
            append_keys(a, nh_parts[i]->keys, SIZE_MAX, slot, first);
        }
    }
}

/* The FTLs' own keys, in registry order; a family's shared keys once, after its first. */
static void append_ftls(GArray *a, size_t *slot, GHashTable *first)
{
    for (size_t i = 0; nh_ftl_names[i]; i++) {
        const NhFtlOps *ftl = nh_ftl_find(nh_ftl_names[i]);
        bool shared_seen = false;
        for (size_t j = 0; j < i; j++) {
            shared_seen |= nh_ftl_find(nh_ftl_names[j])->shared_keys == ftl->shared_keys;
        }
        append_keys(a, ftl->keys, SIZE_MAX, slot, first);
        append_keys(a, shared_seen ? NULL : ftl->shared_keys, SIZE_MAX, slot, first);
    }
}

/* Composed once: the tables are constant, only the policies' and parts' slots are assigned. */
static const KeyList *all_keys(void)
{
    static KeyList list;
    static gsize done;

    if (g_once_init_enter(&done)) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(NhConfigKey));
        size_t slot = 0;

        list.first = g_hash_table_new(NULL, NULL);
        append_keys(a, device_keys, G_N_ELEMENTS(device_keys), NULL, NULL);
        append_parts(a, false, &slot, list.first);
        append_ftls(a, &slot, list.first);
        append_parts(a, true, &slot, list.first);
        append_keys(a, memory_keys, G_N_ELEMENTS(memory_keys), NULL, NULL);
        for (size_t i = 0; nh_buf_names[i]; i++) {
            const NhBufPolicy *pol = nh_buf_find(nh_buf_names[i]);
            if (pol) {
                append_keys(a, pol->keys, SIZE_MAX, &slot, list.first);
            }
        }
        append_keys(a, front_end_keys, G_N_ELEMENTS(front_end_keys), NULL, NULL);
        list.n = a->len;
        g_assert(list.n <= NH_CONFIG_MAX_KEYS);
        list.keys = (NhConfigKey *)(void *)g_array_free(a, FALSE);
        list.by_name = g_hash_table_new(g_str_hash, g_str_equal);
        for (size_t i = 0; i < list.n; i++) {
            bool fresh = g_hash_table_insert(list.by_name, (gpointer)list.keys[i].name,
                                             &list.keys[i]);
            g_assert(fresh);    /* names are unique */
        }
        g_once_init_leave(&done, 1);
    }
    return &list;
}


size_t nh_config_nkeys(void)
{
    return all_keys()->n;
}

const NhConfigKey *nh_config_key(size_t i)
{
    g_assert(i < all_keys()->n);
    return &all_keys()->keys[i];
}

const NhConfigKey *nh_config_find(const char *key)
{
    return g_hash_table_lookup(all_keys()->by_name, key);
}

static size_t key_index(const NhConfigKey *k)
{
    return (size_t)(k - all_keys()->keys);
}

static bool bit(const uint64_t *bits, const NhConfigKey *k)
{
    size_t i = key_index(k);

    return bits[i / 64] >> (i % 64) & 1;
}

static void set_bit(uint64_t *bits, const NhConfigKey *k, bool on)
{
    size_t i = key_index(k);

    bits[i / 64] = (bits[i / 64] & ~(1ull << (i % 64))) | (uint64_t)on << (i % 64);
}

static bool given(const NhConfig *cfg, const NhConfigKey *k)
{
    return bit(cfg->given, k);
}

/* The keys whose auto is the cell type's preset (nand.c): a preset's values of them are its
 * drive's cell's, so a user who names another cell gets that cell's timing and endurance, not
 * TLC timing on an SLC device. */
static bool follows_cell(const NhConfig *cfg, const NhConfigKey *k)
{
    static const char *const timing[] = { "t-read", "t-prog", "t-erase", "pe-cycles" };

    for (size_t i = 0; i < G_N_ELEMENTS(timing); i++) {
        if (!strcmp(k->name, timing[i])) {
            return given(cfg, nh_config_find("cell"));
        }
    }
    return false;
}

/* Every key the user has not given takes the preset's value, or its own default where the
 * preset has none: so a preset set after a key keeps it, and a second preset replaces all of
 * the first.  A given cell voids the preset's timing (follows_cell). */
static void apply_preset(NhConfig *cfg)
{
    const NhPreset *p = nh_preset_find(cfg->preset);

    memset(cfg->dropped, 0, sizeof(cfg->dropped));
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        const NhConfigKey *k = nh_config_key(i);
        if (!given(cfg, k) && strcmp(k->name, "preset")) {
            bool ok = nh_key_set(cfg, k, k->defval, NULL);
            g_assert(ok);   /* the table's own defaults must parse */
        }
    }
    for (const NhPresetValue *v = p ? p->values : NULL; v && v->key; v++) {
        const NhConfigKey *k = nh_config_find(v->key);
        g_assert(k);        /* test-config checks every preset's keys and values */
        if (!given(cfg, k) && !follows_cell(cfg, k)) {
            bool ok = nh_key_set(cfg, k, v->value, NULL);
            g_assert(ok);
        }
    }
}

/* The preset's value of @k if @cfg holds it from the preset (not given, not voided by a
 * given cell), else NULL. */
static const NhPresetValue *preset_value(const NhConfig *cfg, const NhConfigKey *k)
{
    const NhPreset *p = nh_preset_find(cfg->preset);

    for (const NhPresetValue *v = p ? p->values : NULL; v && v->key; v++) {
        if (!strcmp(v->key, k->name)) {
            return given(cfg, k) || follows_cell(cfg, k) ? NULL : v;
        }
    }
    return NULL;
}

static bool key_char(char c)
{
    return g_ascii_isalnum(c) || c == '-';
}

/* Where @msg names @k's value as key=value (a word of its own), NULL if it does not. */
static const char *names_value(const char *msg, const NhConfig *cfg, const NhConfigKey *k)
{
    char *v = nh_key_get(cfg, k), *kv = g_strdup_printf("%s=%s", k->name, v);
    size_t n = strlen(kv);
    const char *p;

    for (p = strstr(msg, kv); p; p = strstr(p + 1, kv)) {
        if ((p == msg || !key_char(p[-1])) && !key_char(p[n])) {
            break;
        }
    }
    g_free(v);
    g_free(kv);
    return p;
}

/* The preset's value a refusal is of, NULL if none: the key it names first (its message
 * starts with the key's name and a colon), else the first key=value it names in its text
 * ("alloc: dynamic does not go with stripe-merge=on"; "zones: ... needs map-unit=auto (got
 * map-unit=4K with page-size=16K)" is map-unit's, named before page-size).  Only a value the
 * preset set and that is still in force. */
static const NhConfigKey *refused_preset_key(const NhConfig *cfg, const GError *err)
{
    const char *colon = strchr(err->message, ':'), *first = NULL;
    char *name = colon ? g_strndup(err->message, colon - err->message) : NULL;
    const NhConfigKey *k = name ? nh_config_find(name) : NULL, *found = NULL;

    g_free(name);
    if (k && preset_value(cfg, k) && !bit(cfg->dropped, k)) {
        return k;
    }
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        const char *at;
        k = nh_config_key(i);
        if (preset_value(cfg, k) && !bit(cfg->dropped, k) &&
            (at = names_value(err->message, cfg, k)) && (!first || at < first)) {
            first = at;
            found = k;
        }
    }
    return found;
}

bool nh_config_settle(NhConfig *cfg, GError **errp)
{
    GError *err = NULL;
    bool ok;

    while (!nh_config_check(cfg, &err)) {
        const NhConfigKey *k = refused_preset_key(cfg, err);
        if (!k) {
            g_propagate_error(errp, err);
            return false;
        }
        g_clear_error(&err);
        ok = nh_key_set(cfg, k, k->defval, NULL);
        g_assert(ok);       /* the table's own defaults must parse */
        set_bit(cfg->dropped, k, true);
    }
    return true;
}

char *nh_config_dropped(const NhConfig *cfg, const NhConfigKey *k)
{
    const NhPresetValue *v = bit(cfg->dropped, k) ? preset_value(cfg, k) : NULL;
    NhConfig c;
    GError *err = NULL;
    char *why;
    bool ok;

    if (!v) {
        return NULL;
    }
    c = *cfg;
    ok = nh_key_set(&c, k, v->value, NULL);
    g_assert(ok);       /* test-config parses every preset's values */
    why = nh_config_check(&c, &err) ? g_strdup_printf("%s: refused with the other values "
                                                      "dropped", v->value)
                                    : g_strdup_printf("%s: %s", v->value, err->message);
    g_clear_error(&err);
    return why;
}

void nh_config_foreach_dropped(const NhConfig *cfg, NhDroppedFn fn, void *opaque)
{
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        char *why = nh_config_dropped(cfg, nh_config_key(i));
        if (why) {
            fn(nh_config_key(i)->name, why, opaque);
            g_free(why);
        }
    }
}

bool nh_config_set(NhConfig *cfg, const char *key, const char *value, GError **errp)
{
    const NhConfigKey *k = nh_config_find(key);

    if (!k) {
        GString *s = g_string_new(NULL);
        for (size_t i = 0; i < nh_config_nkeys(); i++) {
            g_string_append_printf(s, "%s%s", i ? ", " : "", nh_config_key(i)->name);
        }
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: unknown key (valid keys: %s)", key,
                    s->str);
        g_string_free(s, TRUE);
        return false;
    }
    if (!value || !*value) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: empty value", key);
        return false;
    }
    if (!nh_key_set(cfg, k, value, errp)) {
        return false;
    }
    if (!strcmp(k->name, "preset")) {
        apply_preset(cfg);
    } else {
        set_bit(cfg->given, k, true);
        set_bit(cfg->dropped, k, false);
        if (!strcmp(k->name, "cell")) {
            apply_preset(cfg);      /* the preset's timing gives way (follows_cell) */
        }
    }
    return true;
}


void nh_config_defaults(NhConfig *cfg)
{
    const NhConfigKey *preset = nh_config_find("preset");
    bool ok;

    memset(cfg, 0, sizeof(*cfg));
    ok = nh_key_set(cfg, preset, preset->defval, NULL);
    g_assert(ok);
    apply_preset(cfg);
}

bool nh_config_parse(NhConfig *cfg, const char *text, GError **errp)
{
    bool ok = true;
    char **items;
    GHashTable *seen;

    if (!text) {
        return true;
    }
    seen = g_hash_table_new(g_str_hash, g_str_equal);
    items = g_strsplit(text, ",", -1);
    for (char **it = items; ok && *it; it++) {
        char *item = g_strstrip(*it);
        char *eq;
        if (!*item) {
            continue;
        }
        eq = strchr(item, '=');
        if (!eq) {
            g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: expected key=value", item);
            ok = false;
            break;
        }
        *eq = '\0';
        item = g_strstrip(item);
        ok = nh_config_set(cfg, item, g_strstrip(eq + 1), errp);
        /* keyed by the table's own string for the key */
        if (ok && !g_hash_table_add(seen, (gpointer)nh_config_find(item)->name)) {
            g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                        "%s: given twice (each key once: which should count?)", item);
            ok = false;
        }
    }
    g_hash_table_destroy(seen);
    g_strfreev(items);
    return ok;
}


char *nh_config_get(const NhConfig *cfg, const char *key)
{
    const NhConfigKey *k = nh_config_find(key);

    return k ? nh_key_get(cfg, k) : NULL;
}

const uint64_t *nh_config_slots(const NhConfig *cfg, const NhConfigKey *table)
{
    gsize first = GPOINTER_TO_SIZE(g_hash_table_lookup(all_keys()->first, table));

    return first ? &cfg->policy[first - 1] : NULL;
}

void nh_parts_decode(const NhConfig *cfg, void *settings[NH_PARTS])
{
    const NhFtlOps *ftl = nh_ftl_find(cfg->ftl);

    for (size_t i = 0; i < NH_PARTS; i++) {
        NhPartIn in = { cfg, nh_config_slots(cfg, nh_parts[i]->keys), ftl ? ftl->features : 0,
                        0 };
        settings[i] = g_malloc0(nh_parts[i]->size);
        nh_parts[i]->decode(&in, settings[i]);
    }
}

void nh_parts_free(void *settings[NH_PARTS])
{
    for (size_t i = 0; i < NH_PARTS; i++) {
        g_free(settings[i]);
    }
}

/* Every part's cross-key checks, each told which FTL features its settings need and lack. */
static bool check_parts(const NhConfig *cfg, uint32_t features, GError **errp)
{
    void *settings[NH_PARTS];
    bool ok = true;

    nh_parts_decode(cfg, settings);
    for (size_t i = 0; ok && i < NH_PARTS; i++) {
        const NhPart *part = nh_parts[i];
        NhPartIn in = { cfg, nh_config_slots(cfg, part->keys), features,
                        part->needs ? part->needs(settings[i]) & ~features : 0 };
        ok = !part->check || part->check(&in, settings[i], (const void *const *)settings, errp);
    }
    nh_parts_free(settings);
    return ok;
}

/* A flash page holds whole units; a multi-plane program's units (planes x units a program
 * covers) are bits of one 64-bit mask (ftl/nand.c, NhDieOp.slots).  What staging needs is the
 * stage part's check. */
static bool map_unit_check(const NhConfig *cfg, GError **errp)
{
    uint32_t wl = nh_config_sub(cfg) * (cfg->one_shot == NH_ON ? 3 : 1);

    if (cfg->map_unit > cfg->page_size) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "map-unit: must be at most page-size (%u), got %u", cfg->page_size,
                    cfg->map_unit);
        return false;
    }
    /* GC programs each victim's copies as whole flash pages, padding the last (up to sub - 1
     * units): a greedy victim on a block of few pages frees about pages x sub x spare units,
     * which below a page or two the padding uses up, and GC then frees nothing and erases the
     * same blocks for ever (pages=4 on pm9a3's 16 KiB pages at op=12% did).  16 pages keep two
     * pages' worth free at op=12%. */
    if (nh_config_sub(cfg) > 1 && cfg->pages < 16) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "map-unit: blocks of %u flash pages are too small for units smaller than a "
                    "page: GC pads each victim's last page and could free nothing; use pages=16 "
                    "or more, or map-unit=auto", cfg->pages);
        return false;
    }
    if ((uint64_t)cfg->planes * wl > 64) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "map-unit: %u planes x %u units a program covers (page-size %u / map-unit "
                    "%u%s) exceed the 64 a multi-plane program can track; use fewer planes or a "
                    "larger map-unit", cfg->planes, wl, cfg->page_size, nh_config_unit(cfg),
                    cfg->one_shot == NH_ON ? ", x 3 with one-shot" : "");
        return false;
    }
    return true;
}

bool nh_config_check(const NhConfig *cfg, GError **errp)
{
    const NhFtlOps *ftl = nh_ftl_find(cfg->ftl);
    uint32_t features = ftl ? ftl->features : 0;

    if (cfg->gc_critical >= cfg->gc_low) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "gc-critical: must be below gc-low (%u), got %u", cfg->gc_low,
                    cfg->gc_critical);
        return false;
    }
    if (cfg->gc_low >= cfg->gc_high) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "gc-low: must be below gc-high (%u), got %u",
                    cfg->gc_high, cfg->gc_low);
        return false;
    }
    if (cfg->one_shot == NH_ON && cfg->cell != NH_CELL_TLC) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "one-shot: one-shot programming of a word line's 3 pages needs cell=tlc, "
                    "got cell=%s", cell_names[cfg->cell]);
        return false;
    }
    if (cfg->one_shot == NH_ON && cfg->pages % 3) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "one-shot: pages (%u) must be a multiple of 3, the pages of a TLC word line "
                    "(e.g. pages=384)", cfg->pages);
        return false;
    }
    if (cfg->one_shot == NH_ON && !(features & NH_FTL_ONE_SHOT)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "one-shot: only ftl=page and ftl=dftl stage word lines, got ftl=%s",
                    cfg->ftl);
        return false;
    }
    if (cfg->host_mps && (cfg->host_mps < 128 || (cfg->host_mps & (cfg->host_mps - 1)))) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "host-mps: PCIe's payload sizes are 128, 256, 512, 1024, 2048 and 4096 "
                    "bytes (0: no packet overhead), got %u", cfg->host_mps);
        return false;
    }
    if (!map_unit_check(cfg, errp) || !nh_buf_config_check(cfg, errp) ||
        !check_parts(cfg, features, errp)) {
        return false;
    }
    if (!ftl) {
        char *list = g_strjoinv(", ", (char **)nh_ftl_names);
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "ftl: unknown FTL '%s' (valid: %s)",
                    cfg->ftl, list);
        g_free(list);
        return false;
    }
    return !ftl->check_config || ftl->check_config(cfg, nh_config_slots(cfg, ftl->keys), errp);
}
