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
 *   64  front end's blob, then the body: sections, each a string name (u32 length, bytes), u32
 *       flags (1: optional, a version that does not know the section skips it; a section
 *       neither known nor optional is refused), u64 payload length, the payload.  Version 2
 *       writes, all required:
 *       "counters": u64 count, then per counter its path in the statistics table (a string),
 *                   u32 words, the words (a histogram: count, sum, max, buckets).  A counter
 *                   this version has and the file lacks reads as 0; one it lacks is ignored;
 *       "wear":     u64 count, then (u32 block, u32 erase count) for blocks that were ever
 *                   erased;
 *       "ftl":      the FTL's own section (empty in a checkpoint, which is never clean: the
 *                   mapping of a dirty image is rebuilt by the front end anyway);
 *       "zones":    with zones only, in a checkpoint too: the zone table (ftl/zoned.c), so
 *                   that the zones' states and write pointers survive a crash.
 *       Version 1 (still read) had no names: u64 word count and the words of the counters in
 *       the layout v1_counters[] gives, the wear as above, u64 length and the FTL's section.
 * Sparse wear and run-length mapping keep the file small for a large, mostly empty device.
 * Every record goes through record.h; the file is replaced durably (data, then the rename).
 */
#include "engine-priv.h"
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <zlib.h>

#define MAGIC "NHSTATE"
#define VERSION 2
#define OPTIONAL 1u
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
    if (eng->cfg.map_unit) {
        /* only when given: files saved before the key existed (map-unit=auto) still load */
        g_string_append_printf(s, "map-unit=%u;", eng->cfg.map_unit);
    }
    g_string_append_printf(s, "capacity=%" G_GUINT64_FORMAT, eng->capacity);
    for (size_t p = 0; p < NH_PARTS; p++) {
        const NhPart *part = nh_parts[p];
        for (size_t i = 0; part->shapes_state && part->shapes_state(eng->settings[p]) &&
                           part->keys[i].name; i++) {
            char *v = nh_config_get(&eng->cfg, part->keys[i].name);
            g_string_append_printf(s, ";%s=%s", part->keys[i].name, v);
            g_free(v);
        }
    }
    for (gsize i = 0; i < s->len; i++) {
        h = (h ^ (guint8)s->str[i]) * 0x100000001b3ull;
    }
    g_string_free(s, TRUE);
    return h;
}

/* The words of a counter the state file holds: a counter, a histogram, a policy's counter. */
static uint64_t *counter_words(NhStats *s, const NhStatsEntry *e, uint32_t *n)
{
    switch (e->how) {
    case NH_ENTRY_COUNTER:
        *n = 1;
        return (uint64_t *)(void *)((char *)s + e->offset);
    case NH_ENTRY_HIST:
        *n = sizeof(NhHist) / sizeof(uint64_t);
        return (uint64_t *)(void *)((char *)s + e->offset);
    case NH_ENTRY_POLICY:
        *n = nh_stat_slots(e->stat);
        return &s->policy[e->offset];
    default:
        return NULL;
    }
}

static uint64_t *counter_by_path(NhStats *s, const char *path, uint32_t *n)
{
    size_t len;
    const NhStatsEntry *t = nh_stats_table(&len);

    for (size_t i = 0; i < len; i++) {
        if (!strcmp(t[i].path, path)) {
            return counter_words(s, &t[i], n);
        }
    }
    return NULL;
}

static guint begin_section(GByteArray *o, const char *name)
{
    nh_put_str(o, name);
    nh_put32(o, 0);
    return nh_reserve64(o);
}

static void end_section(GByteArray *o, guint pos)
{
    nh_patch64(o, pos, o->len - pos - 8);
}

static void save_counters(const NhEngine *eng, GByteArray *o)
{
    size_t len;
    const NhStatsEntry *t = nh_stats_table(&len);
    guint count = nh_reserve64(o);
    uint64_t n = 0;

    for (size_t i = 0; i < len; i++) {
        uint32_t words;
        const uint64_t *w = counter_words((NhStats *)&eng->stats, &t[i], &words);
        if (w) {
            nh_put_str(o, t[i].path);
            nh_put32(o, words);
            for (uint32_t k = 0; k < words; k++) {
                nh_put64(o, w[k]);
            }
            n++;
        }
    }
    nh_patch64(o, count, n);
}

static void save_wear(const NhEngine *eng, GByteArray *o)
{
    guint count = nh_reserve64(o);
    uint64_t n = 0;

    for (uint64_t b = 0; b < eng->nand->g.nblocks; b++) {
        if (eng->nand->erase_count[b]) {
            nh_put32(o, (uint32_t)b);
            nh_put32(o, eng->nand->erase_count[b]);
            n++;
        }
    }
    nh_patch64(o, count, n);
}

/* Replace @path with @o's bytes so that a crash leaves the old file or the new one, and the new
 * one survives once this returns: GLib writes a temporary file, syncs and renames it; the
 * directory is synced after it so that the rename itself is on disk. */
static bool write_durably(const char *path, GByteArray *o, GError **errp)
{
    char *dir = g_path_get_dirname(path);
    int fd;
    bool ok = g_file_set_contents_full(path, (const gchar *)o->data, o->len,
                                       G_FILE_SET_CONTENTS_CONSISTENT |
                                       G_FILE_SET_CONTENTS_DURABLE, 0600, errp);

    if (ok) {
        fd = g_open(dir, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0 || fsync(fd) != 0) {
            g_set_error(errp, NH_ERROR, NH_ERROR_IO, "%s: cannot sync the directory: %s", dir,
                        g_strerror(errno));
            ok = false;
        }
        if (fd >= 0) {
            close(fd);
        }
    }
    g_free(dir);
    return ok;
}

/* A clean image has everything; a checkpoint (not clean) has no mapping, see engine.h. */
static bool save_image(const NhEngine *eng, const char *path, const void *fe, size_t fe_len,
                       bool clean, GError **errp)
{
    GByteArray *o = g_byte_array_sized_new(HDR);
    guint sec;
    bool ok;

    g_byte_array_set_size(o, HDR);
    memset(o->data, 0, HDR);
    if (fe_len) {
        g_byte_array_append(o, fe, (guint)fe_len);
    }
    sec = begin_section(o, "counters");
    save_counters(eng, o);
    end_section(o, sec);
    sec = begin_section(o, "wear");
    save_wear(eng, o);
    end_section(o, sec);
    sec = begin_section(o, "ftl");
    if (clean) {
        eng->ops->save(eng->ftl, o);
    }
    end_section(o, sec);
    if (eng->zoned) {
        sec = begin_section(o, "zones");
        nh_zoned_save(eng->zoned, o);
        end_section(o, sec);
    }

    memcpy(o->data, MAGIC, 8);
    nh_patch32(o, 8, VERSION);
    nh_patch32(o, OFF_CLEAN, clean);
    nh_patch64(o, 16, nh_engine_state_hash(eng));
    nh_patch64(o, 24, eng->capacity);
    nh_patch64(o, 32, fe_len);
    nh_patch64(o, 40, o->len - HDR - fe_len);
    nh_patch32(o, OFF_CRC, image_crc(o->data, o->data + HDR, o->len - HDR));
    ok = write_durably(path, o, errp);
    g_byte_array_unref(o);
    return ok;
}

bool nh_engine_save(const NhEngine *eng, const char *path, const void *fe, size_t fe_len,
                    GError **errp)
{
    /* A clean image is trusted on load: its mapping must hold every page the host wrote, and a
     * page still dirty in the write buffer (a durable one keeps its pages across a Flush) is in
     * no mapping the image carries. */
    if (eng->buf && eng->buf->used) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s: not saved: the write buffer still holds "
                    "%" G_GUINT64_FORMAT " dirty pages (nh_engine_finish() writes them to flash first)",
                    path, eng->buf->used);
        return false;
    }
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

/* The sections of a body, in place. */
typedef struct Body {
    NhReader counters, wear, ftl, zones;
    bool     have_zones;
} Body;

static bool split_v2(const char *path, NhReader r, Body *b, GError **errp)
{
    bool have_counters = false, have_wear = false, have_ftl = false;

    while (r.p < r.end) {
        char *name = NULL;
        uint32_t flags;
        uint64_t len;
        const guint8 *p;
        NhReader *dst = NULL;
        bool *seen = NULL;

        if (!nh_get_str(&r, &name) || !nh_get32(&r, &flags) || !nh_get64(&r, &len) ||
            !nh_get_bytes(&r, len, &p)) {
            g_free(name);
            return damaged(errp, path, "section table");
        }
        if (!strcmp(name, "counters")) {
            dst = &b->counters, seen = &have_counters;
        } else if (!strcmp(name, "wear")) {
            dst = &b->wear, seen = &have_wear;
        } else if (!strcmp(name, "ftl")) {
            dst = &b->ftl, seen = &have_ftl;
        } else if (!strcmp(name, "zones")) {
            dst = &b->zones, seen = &b->have_zones;
        } else if (!(flags & OPTIONAL)) {
            g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s: section '%s' is unknown to this "
                        "version of the engine (written by a newer one?)", path, name);
            g_free(name);
            return false;
        }
        g_free(name);
        if (dst) {
            *dst = (NhReader){ p, p + len };
            *seen = true;
        }
    }
    if (!have_counters || !have_wear || !have_ftl) {
        return damaged(errp, path, "a section is missing");
    }
    return true;
}

static bool load_counters_v2(const char *path, NhReader r, NhStats *s, GError **errp)
{
    uint64_t n;

    if (!nh_get64(&r, &n)) {
        return damaged(errp, path, "counter section");
    }
    for (uint64_t i = 0; i < n; i++) {
        char *key = NULL;
        uint32_t words, want = 0;
        uint64_t *dst;
        bool ok = nh_get_str(&r, &key) && nh_get32(&r, &words);

        dst = ok ? counter_by_path(s, key, &want) : NULL;
        g_free(key);
        if (!ok || (dst && words != want)) {
            return damaged(errp, path, "counter section");
        }
        for (uint32_t k = 0; k < words; k++) {
            uint64_t v;
            if (!nh_get64(&r, &v)) {
                return damaged(errp, path, "counter section");
            }
            if (dst) {
                dst[k] = v;
            }
        }
    }
    return true;
}

/* Version 1's counters: NhStats words as they were then; a file written before the last seven
 * were added has fewer words. */
static const struct {
    const char *path;
    uint32_t words;
} v1_counters[] = {
    { "host.read_cmds", 1 }, { "host.write_cmds", 1 }, { "host.trim_cmds", 1 },
    { "host.flush_cmds", 1 }, { "host.read_bytes", 1 }, { "host.write_bytes", 1 },
    { "host.trim_bytes", 1 }, { "host.write_pages", 1 }, { "nand.page_reads", 1 },
    { "nand.page_programs", 1 }, { "nand.block_erases", 1 }, { "ftl.gc_page_copies", 1 },
    { "ftl.gc_blocks", 1 }, { "ftl.gc_foreground_blocks", 1 }, { "ftl.wl_page_copies", 1 },
    { "ftl.wl_blocks", 1 }, { "ftl.rmw_reads", 1 }, { "ftl.merges.switch", 1 },
    { "ftl.merges.partial", 1 }, { "ftl.merges.full", 1 }, { "ftl.cmt.hits", 1 },
    { "ftl.cmt.misses", 1 }, { "ftl.translation_page_reads", 1 },
    { "ftl.translation_page_writes", 1 }, { "buffer.write_hits", 1 },
    { "buffer.read_hits", 1 }, { "buffer.evictions", 1 }, { "buffer.destage_pages", 1 },
    { "buffer.padding_reads", 1 }, { "buffer.merge_on_flush_pages", 1 },
    { "buffer.metadata_bytes", 1 }, { "cache.read_hits", 1 }, { "cache.read_misses", 1 },
    { "buffer.lbuf.sessions", 1 }, { "buffer.lbuf.alpha_sessions", 9 },
    { "buffer.lbuf.alpha", 1 }, { "buffer.lbuf.lambda", 1 }, { "buffer.lbuf.sim_bytes", 1 },
    { "buffer.destage_length", sizeof(NhHist) / 8 }, { "latency_ns.read", sizeof(NhHist) / 8 },
    { "latency_ns.write", sizeof(NhHist) / 8 },
    /* the first v1 files end here */
    { "nand.program_ops", 1 }, { "nand.read_ops", 1 }, { "ftl.stripe_merges", 1 },
    { "ftl.stripe_partial", 1 }, { "ftl.stripe_pages", 1 }, { "ftl.stripe_overwrites", 1 },
    { "ftl.stripe_padding", 1 },
};
#define V1_SHORTEST 41

static bool load_counters_v1(const char *path, NhReader *r, NhStats *s, GError **errp)
{
    uint64_t n;
    size_t i;

    if (!nh_get64(r, &n)) {
        return damaged(errp, path, "counter section");
    }
    for (i = 0; i < G_N_ELEMENTS(v1_counters) && n >= v1_counters[i].words; i++) {
        uint32_t want = 0;
        uint64_t *dst = counter_by_path(s, v1_counters[i].path, &want);
        g_assert(dst && want == v1_counters[i].words);
        for (uint32_t k = 0; k < want; k++) {
            if (!nh_get64(r, &dst[k])) {
                return damaged(errp, path, "counter section");
            }
        }
        n -= want;
    }
    if (n || i < V1_SHORTEST) {
        return damaged(errp, path, "counter section");
    }
    return true;
}

static bool split_v1(const char *path, NhReader r, NhStats *s, Body *b, GError **errp)
{
    uint64_t n;
    const guint8 *p;

    if (!load_counters_v1(path, &r, s, errp)) {
        return false;
    }
    b->wear.p = r.p;
    if (!nh_get64(&r, &n) || n > (uint64_t)(r.end - r.p) / 8 || !nh_get_bytes(&r, n * 8, &p)) {
        return damaged(errp, path, "wear section");
    }
    b->wear.end = r.p;
    if (!nh_get64(&r, &n) || n != (uint64_t)(r.end - r.p)) {
        return damaged(errp, path, "FTL section length");
    }
    b->ftl = r;
    return true;
}

static bool load_wear(const char *path, NhReader r, uint32_t *erase, uint64_t nblocks,
                      GError **errp)
{
    uint64_t n;

    if (!nh_get64(&r, &n) || n > nblocks) {
        return damaged(errp, path, "wear section");
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b, count;
        if (!nh_get32(&r, &b) || !nh_get32(&r, &count)) {
            return damaged(errp, path, "wear section");
        }
        if (b >= nblocks) {
            return damaged(errp, path, "wear entry out of range");
        }
        erase[b] = count;
    }
    return true;
}

/* Header checks; on success the body and the front end's blob. */
static bool check_header(const NhEngine *eng, const char *path, const guint8 *d, gsize len,
                         uint32_t *version, bool *clean, NhReader *body, GBytes **fe,
                         GError **errp)
{
    NhReader h = { d, d + len };
    const guint8 *magic;
    uint32_t flag, crc;
    uint64_t hash, cap, fe_len, body_len;

    if (len < HDR || !nh_get_bytes(&h, 8, &magic) || memcmp(magic, MAGIC, 8) != 0) {
        return damaged(errp, path, "bad magic");
    }
    nh_get32(&h, version);
    nh_get32(&h, &flag);
    nh_get64(&h, &hash);
    nh_get64(&h, &cap);
    nh_get64(&h, &fe_len);
    nh_get64(&h, &body_len);
    nh_get32(&h, &crc);
    if (*version != 1 && *version != VERSION) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE,
                    "%s: state format version %u, this engine reads 1 and %u", path, *version,
                    VERSION);
        return false;
    }
    if (hash != nh_engine_state_hash(eng) || cap != eng->capacity) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE,
                    "%s: saved by an engine with a different geometry, FTL or capacity",
                    path);
        return false;
    }
    if (fe_len > len - HDR || body_len != len - HDR - fe_len) {
        return damaged(errp, path, "lengths do not match the file size");
    }
    if (image_crc(d, d + HDR, len - HDR) != crc) {
        return damaged(errp, path, "checksum mismatch");
    }
    *clean = flag == 1;
    *body = (NhReader){ d + HDR + fe_len, d + len };
    *fe = g_bytes_new(d + HDR, fe_len);
    return true;
}

/* Swap in a new FTL built on the file's wear and mapping; the engine is unchanged on failure. */
static bool install(NhEngine *eng, uint32_t *erase, NhReader ftl_sec, bool clean, GError **errp)
{
    const NhGeometry *g = &eng->nand->g;
    uint32_t *next_page = g_new0(uint32_t, g->nblocks);
    uint32_t *old_erase = eng->nand->erase_count, *old_next = eng->nand->next_page;
    NhFtlEnv env;
    void *ftl;

    eng->nand->erase_count = erase;
    eng->nand->next_page = next_page;
    env = nh_engine_ftl_env(eng);
    ftl = eng->ops->create(&env, errp);
    /* after an unclean stop the mapping is stale; the front end rebuilds it */
    if (!ftl || (clean && !eng->ops->load(ftl, ftl_sec.p, (size_t)(ftl_sec.end - ftl_sec.p),
                                          errp))) {
        if (ftl) {
            eng->ops->destroy(ftl);
        }
        eng->nand->erase_count = old_erase;
        eng->nand->next_page = old_next;
        g_free(next_page);
        return false;
    }
    g_free(old_erase);
    g_free(old_next);
    eng->ops->destroy(eng->ftl);
    eng->ftl = ftl;
    return true;
}

/*
 * Read @path whole.  Only a regular file is read: a FIFO would block the open (and QEMU's
 * start with it) until a writer came, a device could be endless.  Nothing longer than @max,
 * more than any save of this device writes, is read either.
 */
static bool read_image(const char *path, uint64_t max, gchar **data, gsize *len, GError **errp)
{
    int fd = g_open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    struct stat st;
    gsize got = 0;

    if (fd < 0 || fstat(fd, &st) < 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "%s: %s", path, g_strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s: not a regular file", path);
        close(fd);
        return false;
    }
    if ((uint64_t)st.st_size > max) {
        g_set_error(errp, NH_ERROR, NH_ERROR_STATE, "%s: %" G_GUINT64_FORMAT " bytes, more than "
                    "the state of this device can take (%" G_GUINT64_FORMAT ")", path,
                    (uint64_t)st.st_size, max);
        close(fd);
        return false;
    }
    *data = g_malloc(st.st_size + 1);
    while (got < (gsize)st.st_size) {
        ssize_t r = read(fd, *data + got, st.st_size - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            g_set_error(errp, NH_ERROR, NH_ERROR_IO, "%s: %s", path,
                        r < 0 ? g_strerror(errno) : "shorter than it was a moment ago");
            g_clear_pointer(data, g_free);
            close(fd);
            return false;
        }
        got += r;
    }
    close(fd);
    *len = got;
    return true;
}

bool nh_engine_load(NhEngine *eng, const char *path, GBytes **fe, bool *was_clean,
                    GError **errp)
{
    const NhGeometry *g = &eng->nand->g;
    gchar *data = NULL;
    gsize len;
    uint32_t version, *erase = NULL;
    NhReader body;
    Body sec = { 0 };
    GBytes *blob = NULL;
    NhZone *zones = NULL;
    NhStats *stats = g_new0(NhStats, 1);
    bool clean, ok = false;

    /* Every record of a save is a few words per page, block or counter (the mapping of a
     * full device at most a word or two per page): 32 bytes a page and a block and 16 MiB for
     * the counters and the front end's blob bound it. */
    if (!read_image(path, 32 * (g->npages + g->nblocks) + (16u << 20), &data, &len, errp)) {
        g_free(stats);
        return false;
    }
    /* build everything aside; the engine changes only once all of it parsed */
    if (!check_header(eng, path, (const guint8 *)data, len, &version, &clean, &body, &blob,
                      errp)) {
        goto out;
    }
    if (version == 1 ? !split_v1(path, body, stats, &sec, errp)
                     : !split_v2(path, body, &sec, errp) ||
                       !load_counters_v2(path, sec.counters, stats, errp)) {
        goto out;
    }
    if (eng->zoned && !sec.have_zones) {
        damaged(errp, path, "the zone table is missing");
        goto out;
    }
    if (eng->zoned && !(zones = nh_zoned_parse(eng->zoned, sec.zones, errp))) {
        goto out;
    }
    erase = g_new0(uint32_t, g->nblocks);
    if (!load_wear(path, sec.wear, erase, g->nblocks, errp) ||
        !install(eng, erase, sec.ftl, clean, errp)) {
        goto out;
    }
    erase = NULL;
    if (zones) {
        nh_zoned_install(eng->zoned, zones);
        zones = NULL;
    }
    memcpy(&eng->stats, stats, sizeof(*stats));
    nh_nand_clock_reset(eng->nand);
    eng->nand->violations = 0;
    eng->priority_until = 0;
    if (eng->link_out) {
        g_array_set_size(eng->link_out, 0);
        g_array_set_size(eng->link_in, 0);
    }
    eng->last_now = 0;
    if (fe) {
        *fe = g_bytes_ref(blob);
    }
    if (was_clean) {
        *was_clean = clean;
    }
    ok = true;
out:
    if (blob) {
        g_bytes_unref(blob);
    }
    g_free(zones);
    g_free(erase);
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
