/* record.c - binary records of the state file (contract in record.h). */
#include "record.h"

#include <string.h>

void nh_put32(GByteArray *o, uint32_t v)
{
    uint32_t le = GUINT32_TO_LE(v);
    g_byte_array_append(o, (const guint8 *)&le, 4);
}

void nh_put64(GByteArray *o, uint64_t v)
{
    uint64_t le = GUINT64_TO_LE(v);
    g_byte_array_append(o, (const guint8 *)&le, 8);
}

guint nh_reserve64(GByteArray *o)
{
    guint pos = o->len;
    nh_put64(o, 0);
    return pos;
}

void nh_patch64(GByteArray *o, guint pos, uint64_t v)
{
    uint64_t le = GUINT64_TO_LE(v);
    memcpy(o->data + pos, &le, 8);
}

void nh_patch32(GByteArray *o, guint pos, uint32_t v)
{
    uint32_t le = GUINT32_TO_LE(v);
    memcpy(o->data + pos, &le, 4);
}

void nh_put_str(GByteArray *o, const char *s)
{
    size_t n = strlen(s);
    nh_put32(o, (uint32_t)n);
    g_byte_array_append(o, (const guint8 *)s, (guint)n);
}

bool nh_get_bytes(NhReader *r, uint64_t n, const guint8 **p)
{
    if ((uint64_t)(r->end - r->p) < n) {
        return false;
    }
    *p = r->p;
    r->p += n;
    return true;
}

bool nh_get32(NhReader *r, uint32_t *v)
{
    const guint8 *p;
    uint32_t le;

    if (!nh_get_bytes(r, 4, &p)) {
        return false;
    }
    memcpy(&le, p, 4);
    *v = GUINT32_FROM_LE(le);
    return true;
}

bool nh_get64(NhReader *r, uint64_t *v)
{
    const guint8 *p;
    uint64_t le;

    if (!nh_get_bytes(r, 8, &p)) {
        return false;
    }
    memcpy(&le, p, 8);
    *v = GUINT64_FROM_LE(le);
    return true;
}

bool nh_get_str(NhReader *r, char **s)
{
    uint32_t n;
    const guint8 *p;

    if (!nh_get32(r, &n) || !nh_get_bytes(r, n, &p)) {
        return false;
    }
    *s = g_strndup((const char *)p, n);
    return true;
}
