/*
 * config.c - the key tables and their parser (contract in config.h).
 *
 * Every key is described once, in a table here or in its policy's ops table; parsing, range
 * checks, canonical printing and help text all come from those entries, so the device's QOM
 * properties and the simulator's option string cannot drift apart.
 */
#include "config.h"
#include "ftl.h"
#include "alloc.h"
#include "placement.h"
#include "scheduler.h"
#include "nand.h"
#include "buffer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(nh-error-quark, nh_error)

static const char *const cell_names[] = { "slc", "mlc", "tlc", "qlc", "znand", NULL };
static const char *const gc_names[] = { "greedy", "cost-benefit", NULL };
static const char *const latency_names[] = { "model", "zero", NULL };
static const char *const unwritten_names[] = { "free", "flash", NULL };
static const char *const buf_media_names[] = { "dram", "sttmram", "custom", NULL };
static const char *const buf_volatile_names[] = { "auto", "on", "off", NULL };
static const char *const switch_names[] = { "off", "on", NULL };

#define F(field) offsetof(NhConfig, field), sizeof(((NhConfig *)0)->field)
#define MS 1000000ull
#define SEC 1000000000ull

/* NAND and FTL keys of every device */
static const NhConfigKey device_keys[] = {
    { "channels", NH_KEY_UINT, F(channels), "8", 1, 64, NULL, false,
      "flash channels (independent buses)" },
    { "ways", NH_KEY_UINT, F(ways), "4", 1, 32, NULL, false,
      "chips per channel" },
    { "dies", NH_KEY_UINT, F(dies), "1", 1, 16, NULL, false,
      "dies per chip" },
    { "planes", NH_KEY_UINT, F(planes), "1", 1, 16, NULL, false,
      "planes per die" },
    { "blocks", NH_KEY_UINT, F(blocks), "auto", 1, 1u << 24, NULL, true,
      "blocks per plane; auto = the fewest that hold the capacity after op" },
    { "pages", NH_KEY_UINT, F(pages), "256", 4, 4096, NULL, false,
      "pages per block" },
    { "page-size", NH_KEY_SIZE, F(page_size), "4K", 4096, 16384, NULL, false,
      "flash page size: 4K, 8K or 16K" },
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
    { "pe-cycles", NH_KEY_UINT, F(pe_cycles), "auto", 1, 10000000, NULL, true,
      "rated program/erase cycles per block; auto = the cell preset" },
    { "one-shot", NH_KEY_ENUM, F(one_shot), "off", 0, 0, switch_names, false,
      "cell=tlc, ftl=page: program the 3 pages of a word line (LSB, CSB, MSB) in one operation "
      "of one t-prog (HSP, seed 003); pages must be a multiple of 3" },
    { "ftl", NH_KEY_STRING, F(ftl), "page", 0, 0, nh_ftl_names, false,
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
} KeyList;

static void append_keys(GArray *a, const NhConfigKey *k, size_t n, size_t *slot)
{
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

/* Composed once: the tables are constant, only the policies' slots are assigned here. */
static const KeyList *all_keys(void)
{
    static KeyList list;
    static gsize done;

    if (g_once_init_enter(&done)) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(NhConfigKey));
        size_t slot = 0;

        append_keys(a, device_keys, G_N_ELEMENTS(device_keys), NULL);
        append_keys(a, nh_sched_keys, SIZE_MAX, &slot);
        append_keys(a, nh_alloc_keys, SIZE_MAX, &slot);
        for (size_t i = 0; nh_ftl_names[i]; i++) {
            const NhFtlOps *ftl = nh_ftl_find(nh_ftl_names[i]);
            bool shared_seen = false;
            for (size_t j = 0; j < i; j++) {
                shared_seen |= nh_ftl_find(nh_ftl_names[j])->shared_keys == ftl->shared_keys;
            }
            append_keys(a, ftl->keys, SIZE_MAX, &slot);
            append_keys(a, shared_seen ? NULL : ftl->shared_keys, SIZE_MAX, &slot);
        }
        append_keys(a, nh_placement_keys, SIZE_MAX, &slot);
        append_keys(a, memory_keys, G_N_ELEMENTS(memory_keys), NULL);
        for (size_t i = 0; nh_buf_names[i]; i++) {
            const NhBufPolicy *pol = nh_buf_find(nh_buf_names[i]);
            if (pol) {
                append_keys(a, pol->keys, SIZE_MAX, &slot);
            }
        }
        append_keys(a, front_end_keys, G_N_ELEMENTS(front_end_keys), NULL);
        list.n = a->len;
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

static void store(NhConfig *cfg, const NhConfigKey *k, uint64_t v)
{
    char *p = (char *)cfg + k->offset;
    switch (k->width) {
    case 8: { uint64_t x = v; memcpy(p, &x, 8); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    default: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    }
}

static uint64_t fetch(const NhConfig *cfg, const NhConfigKey *k)
{
    const char *p = (const char *)cfg + k->offset;
    switch (k->width) {
    case 8: { uint64_t x; memcpy(&x, p, 8); return x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
    case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
    default: { uint8_t x; memcpy(&x, p, 1); return x; }
    }
}

/* A decimal number with an optional unit suffix; returns false on anything that is not exactly
 * that.  Always base 10: "08" is 8 (no octal, no hex). */
static bool parse_number(const char *s, uint64_t *num, const char **unit)
{
    char *end;
    if (!g_ascii_isdigit(*s)) {
        return false;
    }
    errno = 0;
    *num = g_ascii_strtoull(s, &end, 10);
    if (errno) {
        return false;
    }
    *unit = end;
    return true;
}

static bool scale(uint64_t v, uint64_t mult, uint64_t *out)
{
    if (mult && v > UINT64_MAX / mult) {
        return false;
    }
    *out = v * mult;
    return true;
}

bool nh_config_parse_size(const char *text, uint64_t *bytes)
{
    uint64_t v, mult;
    const char *unit;

    if (!parse_number(text, &v, &unit)) {
        return false;
    }
    switch (g_ascii_toupper(*unit)) {
    case '\0': mult = 1; break;
    case 'K': mult = 1ull << 10; break;
    case 'M': mult = 1ull << 20; break;
    case 'G': mult = 1ull << 30; break;
    case 'T': mult = 1ull << 40; break;
    default: return false;
    }
    /* accept "4K" and "4KiB"/"4KB"; nothing else after the suffix */
    if (*unit && strcmp(unit + 1, "") && g_ascii_strcasecmp(unit + 1, "iB") &&
        g_ascii_strcasecmp(unit + 1, "B")) {
        return false;
    }
    return scale(v, mult, bytes);
}

/* What "auto" is stored as: 0, unless 0 is a value of the key (config.h). */
static uint64_t auto_value(const NhConfigKey *k)
{
    return k->type == NH_KEY_UINT && k->min == 0 ? NH_CONFIG_AUTO : 0;
}

static bool parse_value(const NhConfigKey *k, const char *value, uint64_t *out, GError **errp)
{
    uint64_t v = 0, mult = 1;
    const char *unit;

    if (k->allow_auto && g_ascii_strcasecmp(value, "auto") == 0) {
        *out = auto_value(k);
        return true;
    }
    switch (k->type) {
    case NH_KEY_FRACTION:
        g_assert_not_reached();     /* nh_config_set() parses them with parse_fraction() */
    case NH_KEY_ENUM:
    case NH_KEY_STRING:
        for (size_t i = 0; k->choices[i]; i++) {
            if (g_ascii_strcasecmp(value, k->choices[i]) == 0) {
                *out = i;
                return true;
            }
        }
        {
            char *list = g_strjoinv(", ", (char **)k->choices);
            g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: unknown value '%s' (valid: %s)",
                        k->name, value, list);
            g_free(list);
        }
        return false;
    case NH_KEY_UINT:
        if (!parse_number(value, &v, &unit) || *unit) {
            g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: '%s' is not a number%s",
                        k->name, value, k->allow_auto ? " or 'auto'" : "");
            return false;
        }
        break;
    case NH_KEY_SIZE:
        if (!nh_config_parse_size(value, &v)) {
            g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                        "%s: '%s' is not a size (a number with an optional K, M, G or T suffix)",
                        k->name, value);
            return false;
        }
        break;
    case NH_KEY_TIME:
        if (parse_number(value, &v, &unit)) {
            if (!*unit || !strcmp(unit, "ns")) {
                mult = 1;
            } else if (!strcmp(unit, "us")) {
                mult = 1000;
            } else if (!strcmp(unit, "ms")) {
                mult = MS;
            } else if (!strcmp(unit, "s")) {
                mult = SEC;
            } else {
                unit = "?";
            }
        } else {
            unit = "?";
        }
        if (*unit == '?' || !scale(v, mult, &v)) {
            g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                        "%s: '%s' is not a time (a number with an optional ns, us, ms or s suffix)",
                        k->name, value);
            return false;
        }
        break;
    }
    if (v < k->min || v > k->max) {
        char *lo = NULL, *hi = NULL;
        if (k->type == NH_KEY_TIME) {
            lo = g_strdup_printf("%" G_GUINT64_FORMAT "ns", k->min);
            hi = g_strdup_printf("%" G_GUINT64_FORMAT "ns", k->max);
        } else {
            lo = g_strdup_printf("%" G_GUINT64_FORMAT, k->min);
            hi = g_strdup_printf("%" G_GUINT64_FORMAT, k->max);
        }
        /* 0 is a value, never the preset (that is 'auto', stored as auto_value()) */
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: must be between %s and %s%s, got %s",
                    k->name, lo, hi, k->allow_auto ? " or 'auto'" : "", value);
        g_free(lo);
        g_free(hi);
        return false;
    }
    if (k->type == NH_KEY_SIZE && k->offset == offsetof(NhConfig, page_size) &&
        v != 4096 && v != 8192 && v != 16384) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "page-size: must be 4K, 8K or 16K, got %s",
                    value);
        return false;
    }
    *out = v;
    return true;
}

/* A decimal in [-1, 1]; "auto" (NAN) where allowed.  Not through parse_value: 0 is a value. */
static bool parse_fraction(const NhConfigKey *k, const char *value, double *out, GError **errp)
{
    char *end;
    double v;

    if (k->allow_auto && g_ascii_strcasecmp(value, "auto") == 0) {
        *out = NAN;
        return true;
    }
    errno = 0;
    v = g_ascii_strtod(value, &end);
    /* strtod also takes "nan", "inf" and leading blanks: none is a fraction */
    if (end == value || *end || errno || !isfinite(v) || g_ascii_isspace(*value)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: '%s' is not a number%s", k->name,
                    value, k->allow_auto ? " or 'auto'" : "");
        return false;
    }
    if (v < -1.0 || v > 1.0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "%s: must be between -1 and 1, got %s",
                    k->name, value);
        return false;
    }
    *out = v + 0.0;     /* "-0" is 0 */
    return true;
}

bool nh_config_set(NhConfig *cfg, const char *key, const char *value, GError **errp)
{
    const NhConfigKey *k = nh_config_find(key);
    uint64_t v;

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
    if (k->type == NH_KEY_FRACTION) {
        double d;
        if (!parse_fraction(k, value, &d, errp)) {
            return false;
        }
        memcpy((char *)cfg + k->offset, &d, sizeof(d));
        return true;
    }
    if (!parse_value(k, value, &v, errp)) {
        return false;
    }
    if (k->type == NH_KEY_STRING) {
        char *dst = (char *)cfg + k->offset;
        g_strlcpy(dst, k->choices[v], k->width);
    } else {
        store(cfg, k, v);
    }
    return true;
}

void nh_config_defaults(NhConfig *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < nh_config_nkeys(); i++) {
        bool ok = nh_config_set(cfg, nh_config_key(i)->name, nh_config_key(i)->defval, NULL);
        g_assert(ok);   /* the table's own defaults must parse */
    }
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

/* The largest unit that represents @v exactly, so that get(set(x)) round-trips. */
static char *format_scaled(uint64_t v, const char *const *units, const uint64_t *mults, int n)
{
    for (int i = n - 1; i > 0; i--) {
        if (v && v % mults[i] == 0) {
            return g_strdup_printf("%" G_GUINT64_FORMAT "%s", v / mults[i], units[i]);
        }
    }
    return g_strdup_printf("%" G_GUINT64_FORMAT "%s", v, units[0]);
}

char *nh_config_key_values(const NhConfigKey *k)
{
    static const char *const kinds[] = {
        [NH_KEY_UINT] = "integer", [NH_KEY_SIZE] = "size in bytes (K, M, G, T suffixes)",
        [NH_KEY_TIME] = "time in ns (ns, us, ms, s suffixes)",
    };
    const char *or_auto = k->allow_auto ? " or auto" : "";

    switch (k->type) {
    case NH_KEY_ENUM:
    case NH_KEY_STRING: {
        char *list = g_strjoinv(", ", (char **)k->choices);
        char *out = g_strdup_printf("one of: %s%s", list, or_auto);
        g_free(list);
        return out;
    }
    case NH_KEY_FRACTION:
        return g_strdup_printf("decimal -1..1%s", or_auto);
    default:
        return g_strdup_printf("%s %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT "%s",
                               kinds[k->type], k->min, k->max, or_auto);
    }
}

char *nh_config_get(const NhConfig *cfg, const char *key)
{
    static const char *const size_units[] = { "", "K", "M", "G", "T" };
    static const uint64_t size_mults[] = { 1, 1ull << 10, 1ull << 20, 1ull << 30, 1ull << 40 };
    static const char *const time_units[] = { "ns", "us", "ms", "s" };
    static const uint64_t time_mults[] = { 1, 1000, MS, SEC };
    const NhConfigKey *k = nh_config_find(key);
    uint64_t v;

    if (!k) {
        return NULL;
    }
    if (k->type == NH_KEY_STRING) {
        return g_strndup((const char *)cfg + k->offset, k->width);
    }
    if (k->type == NH_KEY_FRACTION) {
        double d;
        memcpy(&d, (const char *)cfg + k->offset, sizeof(d));
        if (isnan(d)) {
            return g_strdup("auto");
        }
        /* the shortest form that parses back to the same double (0.1, not 0.10000000000000001);
         * 17 significant digits always do */
        char fmt[8], buf[G_ASCII_DTOSTR_BUF_SIZE];
        for (int prec = 1; prec <= 17; prec++) {
            g_snprintf(fmt, sizeof(fmt), "%%.%dg", prec);
            g_ascii_formatd(buf, sizeof(buf), fmt, d);
            if (g_ascii_strtod(buf, NULL) == d) {
                break;
            }
        }
        return g_strdup(buf);
    }
    v = fetch(cfg, k);
    if (k->allow_auto && v == auto_value(k)) {
        return g_strdup("auto");
    }
    switch (k->type) {
    case NH_KEY_ENUM: {
        size_t n = 0;
        while (k->choices[n]) {
            n++;
        }
        return g_strdup(v < n ? k->choices[v] : "?");
    }
    case NH_KEY_SIZE:
        return format_scaled(v, size_units, size_mults, 5);
    case NH_KEY_TIME:
        return format_scaled(v, time_units, time_mults, 4);
    default:
        return g_strdup_printf("%" G_GUINT64_FORMAT, v);
    }
}

uint64_t nh_config_uint(const NhConfig *cfg, const char *key)
{
    const NhConfigKey *k = nh_config_find(key);

    g_assert(k && k->type != NH_KEY_FRACTION && k->type != NH_KEY_STRING);
    return fetch(cfg, k);
}

double nh_config_fraction(const NhConfig *cfg, const char *key)
{
    const NhConfigKey *k = nh_config_find(key);
    double d;

    g_assert(k && k->type == NH_KEY_FRACTION);
    memcpy(&d, (const char *)cfg + k->offset, sizeof(d));
    return d;
}

uint64_t nh_config_cell_t_prog(NhCell cell)
{
    NhTiming t;

    nh_cell_preset(cell, &t);
    return t.t_prog;
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
    if (nh_config_uint(cfg, "stripe-merge") == NH_ON && !(features & NH_FTL_STRIPE_MERGE)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "stripe-merge: only ftl=page and ftl=dftl merge writes into stripes, got "
                    "ftl=%s",
                    cfg->ftl);
        return false;
    }
    if (!nh_buf_config_check(cfg, errp) || !nh_placement_check(cfg, features, errp) ||
        !nh_alloc_check(cfg, features, errp)) {
        return false;
    }
    if (!ftl) {
        char *list = g_strjoinv(", ", (char **)nh_ftl_names);
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG, "ftl: unknown FTL '%s' (valid: %s)",
                    cfg->ftl, list);
        g_free(list);
        return false;
    }
    return !ftl->check_config || ftl->check_config(cfg, errp);
}
