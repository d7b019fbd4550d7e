/*
 * keys.c - the key parser at the bottom of the engine (contract in config.h): one key's text to
 * its stored value and back, for any table's key.  Which keys exist, and where the policies'
 * keys are stored, is composed above (engine/config.c); nothing here knows a key by name.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(nh-error-quark, nh_error)

#define MS 1000000ull
#define SEC 1000000000ull

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
    if (k->type == NH_KEY_SIZE && (k->offset == offsetof(NhConfig, page_size) ||
                                   k->offset == offsetof(NhConfig, map_unit)) && (v & (v - 1))) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "%s: must be 4K, 8K, 16K or 32K, got %s", k->name, value);
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

bool nh_key_set(NhConfig *cfg, const NhConfigKey *k, const char *value, GError **errp)
{
    uint64_t v;

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

char *nh_key_get(const NhConfig *cfg, const NhConfigKey *k)
{
    static const char *const size_units[] = { "", "K", "M", "G", "T" };
    static const uint64_t size_mults[] = { 1, 1ull << 10, 1ull << 20, 1ull << 30, 1ull << 40 };
    static const char *const time_units[] = { "ns", "us", "ms", "s" };
    static const uint64_t time_mults[] = { 1, 1000, MS, SEC };
    uint64_t v;

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

bool nh_key_is_default(const NhConfigKey *k, uint64_t value)
{
    uint64_t def = 0;
    double d = 0, v;
    bool ok;

    g_assert(k->type != NH_KEY_STRING);
    if (k->type != NH_KEY_FRACTION) {
        ok = parse_value(k, k->defval, &def, NULL);
        g_assert(ok);
        return value == def;
    }
    ok = parse_fraction(k, k->defval, &d, NULL);
    g_assert(ok);
    memcpy(&v, &value, sizeof(v));
    return isnan(d) ? isnan(v) : v == d;
}
