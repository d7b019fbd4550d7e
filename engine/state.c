/*
 * state.c - saving and restoring the model across runs (contract in engine.h).
 *
 * File layout, little-endian:
 *    0  magic "NHSTATE\0"
 *    8  u32 format version
 *   12  u32 clean flag (1 = written by a clean save; 0 = a front end is running on it).  It sits
 *       outside the checksum so nh_engine_state_mark_dirty() can flip it with one pwrite.
 *   16  u64 hash of the configuration that shapes the state, and the capacity
 *   24  u64 capacity
 *   32  u64 length of the front end's blob
 *   40  u64 length of the body
 *   48  u32 CRC-32 of the header (clean flag and this field as 0), the blob and the body
 *   52  zero to 64
 *   64  front end's blob, then the body:
 *       counters: u64 word count, then every NhStats word;
 *       wear: u64 count, then (u32 block, u32 erase count) for blocks that were ever erased;
 *       FTL: u64 length, then the FTL's own section (empty in a checkpoint, which is never
 *       clean: the mapping of a dirty image is rebuilt by the front end anyway).
 * Sparse wear and run-length mapping keep the file small for a large, mostly empty device.
 */
#include "engine-priv.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <zlib.h>

#define MAGIC "NHSTATE"
#define VERSION 1
#define HDR 64
#define OFF_CLEAN 12
#define OFF_CRC 48

/* zlib's CRC-32 is the IEEE one (reflected 0xEDB88320, inverted in and out) that version 1
 * files were written with by a table of our own, so the format did not change with it.
 * crc32_z takes a size_t length: a large device's mapping may pass 4 GiB. */
static uint32_t image_crc(const guint8 *hdr, const guint8 *rest, size_t len)
{
    guint8 h[HDR];
    memcpy(h, hdr, HDR);
    memset(h + OFF_CLEAN, 0, 4);
    memset(h + OFF_CRC, 0, 4);
    return (uint32_t)crc32_z(crc32_z(0, h, HDR), rest, len);
}

uint64_t nh_engine_state_hash(const NhEngine *eng)
{
    static const char *const keys[] = {
        "channels", "ways", "dies", "planes", "blocks", "pages", "page-size", "op", "cell", "ftl",
    };
    uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a */
    GString *s = g_string_new(NULL);

    for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
        char *v = nh_config_get(&eng->cfg, keys[i]);
        g_string_append_printf(s, "%s=%s;", keys[i], v);
        g_free(v);
    }
    g_string_append_printf(s, "capacity=%" G_GUINT64_FORMAT, eng->capacity);
    for (gsize i = 0; i < s->len; i++) {
        h = (h ^ (guint8)s->str[i]) * 0x100000001b3ull;
    }
    g_string_free(s, TRUE);
    return h;
}

static void put32(GByteArray *o, uint32_t v)
{
    v = GUINT32_TO_LE(v);
    g_byte_array_append(o, (const guint8 *)&v, 4);
}

static void put64(GByteArray *o, uint64_t v)
{
    v = GUINT64_TO_LE(v);
    g_byte_array_append(o, (const guint8 *)&v, 8);
}

static void set32(guint8 *p, uint32_t v)
{
    v = GUINT32_TO_LE(v);
    memcpy(p, &v, 4);
}

static void set64(guint8 *p, uint64_t v)
{
    v = GUINT64_TO_LE(v);
    memcpy(p, &v, 8);
}

static uint32_t rd32(const guint8 *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return GUINT32_FROM_LE(v);
}

static uint64_t rd64(const guint8 *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return GUINT64_FROM_LE(v);
}

/* A clean image has everything; a checkpoint (not clean) has no mapping, see engine.h. */
static bool save_image(const NhEngine *eng, const char *path, const void *fe, size_t fe_len,
                       bool clean, GError **errp)
{
    GByteArray *o = g_byte_array_new();
    const uint64_t *words = (const uint64_t *)&eng->stats;
    size_t nwords = sizeof(eng->stats) / 8;
    const NhGeometry *g = &eng->nand->g;
    uint64_t nerased = 0;
    guint pos, ftl_pos;
    char *tmp;
    int fd;
    bool ok = false;

    G_STATIC_ASSERT(sizeof(NhStats) % 8 == 0);
    g_byte_array_set_size(o, HDR);
    memset(o->data, 0, HDR);
    if (fe_len) {
        g_byte_array_append(o, fe, (guint)fe_len);
    }
    put64(o, nwords);
    for (size_t i = 0; i < nwords; i++) {
        put64(o, words[i]);
    }
    pos = o->len;
    put64(o, 0);
    for (uint64_t b = 0; b < g->nblocks; b++) {
        if (eng->nand->erase_count[b]) {
            put32(o, (uint32_t)b);
            put32(o, eng->nand->erase_count[b]);
            nerased++;
        }
    }
    set64(o->data + pos, nerased);
    ftl_pos = o->len;
    put64(o, 0);
    if (clean) {
        eng->ops->save(eng->ftl, o);
    }
    set64(o->data + ftl_pos, o->len - ftl_pos - 8);

    memcpy(o->data, MAGIC, 8);
    set32(o->data + 8, VERSION);
    set32(o->data + OFF_CLEAN, clean);
    set64(o->data + 16, nh_engine_state_hash(eng));
    set64(o->data + 24, eng->capacity);
    set64(o->data + 32, fe_len);
    set64(o->data + 40, o->len - HDR - fe_len);
    set32(o->data + OFF_CRC, image_crc(o->data, o->data + HDR, o->len - HDR));

    tmp = g_strconcat(path, ".XXXXXX", NULL);
    fd = g_mkstemp(tmp);
    if (fd < 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "%s: cannot create a temporary file: %s", path,
                    g_strerror(errno));
    } else {
        size_t done = 0;
        while (done < o->len) {
            ssize_t n = write(fd, o->data + done, o->len - done);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break;
            }
            done += (size_t)n;
        }
        if (done != o->len || fsync(fd) != 0) {
            g_set_error(errp, NH_ERROR, NH_ERROR_IO, "%s: write failed: %s", tmp,
                        g_strerror(errno));
        } else if (g_rename(tmp, path) != 0) {
            g_set_error(errp, NH_ERROR, NH_ERROR_IO, "%s: rename failed: %s", path,
                        g_strerror(errno));
        } else {
            ok = true;
        }
        close(fd);
        if (!ok) {
            g_unlink(tmp);
        }
    }
    g_free(tmp);
    g_byte_array_unref(o);
    return ok;
}

bool nh_engine_save(const NhEngine *eng, const char *path, const void *fe, size_t fe_len,
                    GError **errp)
{
    return save_image(eng, path, fe, fe_len, true, errp);
}

bool nh_engine_checkpoint(const NhEngine *eng, const char *path, const void *fe, size_t fe_len,
                          GError **errp)
{
    return save_image(eng, path, fe, fe_len, false, errp);
}

static bool damaged(GError **errp, const char *path, const char *why)
{
    g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s: not a usable engine state file (%s)",
                path, why);
    return false;
}

bool nh_engine_load(NhEngine *eng, const char *path, GBytes **fe, bool *was_clean,
                    GError **errp)
{
    const NhGeometry *g = &eng->nand->g;
    size_t nwords = sizeof(eng->stats) / 8;
    gchar *data = NULL;
    gsize len;
    const guint8 *d, *p, *end;
    uint64_t fe_len, body_len, n, ftl_len;
    uint32_t *erase = NULL, *next_page = NULL, *old_erase, *old_next;
    NhStats *stats = NULL;
    void *ftl = NULL;
    bool clean, ok = false;
    NhFtlEnv env;

    if (!g_file_get_contents(path, &data, &len, errp)) {
        return false;
    }
    d = (const guint8 *)data;
    if (len < HDR || memcmp(d, MAGIC, 8) != 0) {
        ok = damaged(errp, path, "bad magic");
        goto out;
    }
    if (rd32(d + 8) != VERSION) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s: state format version %u, expected %u",
                    path, rd32(d + 8), VERSION);
        goto out;
    }
    if (rd64(d + 16) != nh_engine_state_hash(eng) || rd64(d + 24) != eng->capacity) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE,
                    "%s: saved by an engine with a different geometry, FTL or capacity",
                    path);
        goto out;
    }
    fe_len = rd64(d + 32);
    body_len = rd64(d + 40);
    if (fe_len > len - HDR || body_len != len - HDR - fe_len) {
        ok = damaged(errp, path, "lengths do not match the file size");
        goto out;
    }
    if (image_crc(d, d + HDR, len - HDR) != rd32(d + OFF_CRC)) {
        ok = damaged(errp, path, "checksum mismatch");
        goto out;
    }
    clean = rd32(d + OFF_CLEAN) == 1;
    p = d + HDR + fe_len;
    end = d + len;

    /* build everything aside; the engine changes only once all of it parsed */
    /* counters added since an image was written come after its words (stats.h): they start
     * at 0 */
    if (end - p < 8 || (n = rd64(p)) > nwords || n < NH_STATS_V1_WORDS ||
        (uint64_t)(end - p - 8) < n * 8) {
        ok = damaged(errp, path, "counter section");
        goto out;
    }
    p += 8;
    stats = g_new0(NhStats, 1);
    for (size_t i = 0; i < n; i++, p += 8) {
        ((uint64_t *)stats)[i] = rd64(p);
    }
    if (end - p < 8 || (n = rd64(p)) > g->nblocks || (uint64_t)(end - p - 8) < n * 8) {
        ok = damaged(errp, path, "wear section");
        goto out;
    }
    p += 8;
    erase = g_new0(uint32_t, g->nblocks);
    for (uint64_t i = 0; i < n; i++, p += 8) {
        uint32_t b = rd32(p);
        if (b >= g->nblocks) {
            ok = damaged(errp, path, "wear entry out of range");
            goto out;
        }
        erase[b] = rd32(p + 4);
    }
    if (end - p < 8 || (ftl_len = rd64(p)) != (uint64_t)(end - p - 8)) {
        ok = damaged(errp, path, "FTL section length");
        goto out;
    }
    p += 8;

    next_page = g_new0(uint32_t, g->nblocks);
    old_erase = eng->nand->erase_count;
    old_next = eng->nand->next_page;
    eng->nand->erase_count = erase;
    eng->nand->next_page = next_page;
    env = (NhFtlEnv){ &eng->cfg, eng->nand, &eng->stats, eng->lpages };
    ftl = eng->ops->create(&env, errp);
    /* after an unclean stop the mapping is stale; the front end rebuilds it */
    if (!ftl || (clean && !eng->ops->load(ftl, p, ftl_len, errp))) {
        if (ftl) {
            eng->ops->destroy(ftl);
        }
        eng->nand->erase_count = old_erase;
        eng->nand->next_page = old_next;
        goto out;
    }
    erase = next_page = NULL;
    g_free(old_erase);
    g_free(old_next);
    eng->ops->destroy(eng->ftl);
    eng->ftl = ftl;
    memcpy(&eng->stats, stats, sizeof(*stats));
    memset(eng->nand->die_free, 0, sizeof(uint64_t) * g->ndies);
    memset(eng->nand->bus_free, 0, sizeof(uint64_t) * g->channels);
    eng->nand->violations = 0;
    eng->priority_until = 0;
    eng->last_now = 0;
    if (fe) {
        *fe = g_bytes_new(d + HDR, fe_len);
    }
    if (was_clean) {
        *was_clean = clean;
    }
    ok = true;
out:
    g_free(erase);
    g_free(next_page);
    g_free(stats);
    g_free(data);
    return ok;
}

bool nh_engine_state_mark_dirty(const char *path, GError **errp)
{
    guint8 hdr[HDR], zero[4] = { 0 };
    int fd = g_open(path, O_RDWR, 0);
    bool ok = false;

    if (fd < 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "%s: %s", path, g_strerror(errno));
        return false;
    }
    if (pread(fd, hdr, HDR, 0) != HDR || memcmp(hdr, MAGIC, 8) != 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s: not an engine state file", path);
    } else if (pwrite(fd, zero, 4, OFF_CLEAN) != 4 || fsync(fd) != 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "%s: %s", path, g_strerror(errno));
    } else {
        ok = true;
    }
    close(fd);
    return ok;
}
