/* ba-manager.c - BA-buffer manager and recovery manager (contract and file layout in
 * ba-manager.h, user-facing description in docs/bar-pm.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ba-manager.h"

/* The file (nh-vendor.h) is little endian, and its header and table are used in place in the
 * shared mapping: every field is converted where it is read or written (LE32 and LE64 go
 * either way: a swap on a big-endian host, nothing on a little-endian one), so the file's
 * bytes are the same whatever the host. */
#define LE32(x) GUINT32_TO_LE(x)
#define LE64(x) GUINT64_TO_LE(x)

double nh_ba_dump_rate(const NhConfig *cfg)
{
    double planes = (double)cfg->channels * cfg->ways * cfg->dies * cfg->planes;
    double nand, bus;

    nand = planes * cfg->page_size / (nh_config_cell_t_prog(NH_CELL_SLC) / 1e9);
    bus = (double)cfg->channels * cfg->channel_mbps * 1e6;
    return MIN(nand, bus);
}

bool nh_ba_check_energy(uint64_t size, const NhConfig *cfg, uint32_t cap_uf, uint32_t volts,
                        uint64_t *dump_ns, GError **errp)
{
    double rate = nh_ba_dump_rate(cfg);
    double t = (double)(size + NH_BA_META_SIZE) / rate;
    double need = NH_BA_DUMP_WATTS * t;
    double have;

    if (volts <= NH_BA_MIN_VOLTS) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "ba-cap-volt: the capacitors must be charged above the regulators' "
                    "%.0f V dropout, got %u V", NH_BA_MIN_VOLTS, volts);
        return false;
    }
    have = 0.5 * cap_uf * 1e-6 * ((double)volts * volts - NH_BA_MIN_VOLTS * NH_BA_MIN_VOLTS);
    *dump_ns = (uint64_t)(t * 1e9);
    if (need > have) {
        g_set_error(errp, NH_ERROR, NH_ERROR_CONFIG,
                    "ba-size: a %" PRIu64 " KiB window cannot be saved on power loss: the dump "
                    "takes %.1f ms at %.0f MB/s (SLC-mode programs on every plane) and needs "
                    "%.3f J at %.0f W, but ba-cap-uf=%u at ba-cap-volt=%u holds %.3f J "
                    "(%.1f ms); lower ba-size or raise ba-cap-uf",
                    size >> 10, t * 1e3, rate / 1e6, need, NH_BA_DUMP_WATTS, cap_uf, volts,
                    have, have / NH_BA_DUMP_WATTS * 1e3);
        return false;
    }
    return true;
}

const char *nh_ba_restore_name(NhBaRestore r)
{
    static const char *const names[] = { "new", "restored", "recovered", "corrupt", "torn" };

    return r < G_N_ELEMENTS(names) ? names[r] : "?";
}

/* ------------------------------------------------------------------------------ metadata */

static uint32_t nh_ba_meta_crc(const NhBa *ba)
{
    NhBaHeader h = *ba->hdr;
    uLong crc;

    h.meta_crc = 0;         /* the checksum is of the file's bytes, in their byte order */
    crc = crc32(0, (const Bytef *)&h, sizeof(h));
    return crc32(crc, (const Bytef *)ba->table, ba->entries * sizeof(NhBaEntry));
}

static void nh_ba_seal(NhBa *ba)
{
    ba->hdr->meta_crc = LE32(nh_ba_meta_crc(ba));
}

static uint32_t nh_ba_window_crc(const NhBa *ba)
{
    uLong crc = crc32(0, NULL, 0);

    /* zlib takes uInt lengths */
    for (uint64_t off = 0; off < ba->size; off += 1u << 30) {
        crc = crc32(crc, ba->window + off, MIN(ba->size - off, 1u << 30));
    }
    return crc;
}

static void nh_ba_format(NhBa *ba)
{
    memset(ba->map, 0, NH_BA_META_SIZE);
    memset(ba->window, 0, ba->size);
    memcpy(ba->hdr->magic, NH_BA_MAGIC, 8);
    ba->hdr->version = LE32(NH_BA_VERSION);
    ba->hdr->entries = LE32(ba->entries);
    ba->hdr->window_offset = LE64(NH_BA_META_SIZE);
    ba->hdr->window_size = LE64(ba->size);
    ba->hdr->lba_size = LE32(ba->lba_size);
    ba->hdr->state = LE32(NH_BA_STATE_RUNNING);
    nh_ba_seal(ba);
}

/* ------------------------------------------------------------------------------ entries */

NhBaEntry nh_ba_entry(const NhBa *ba, uint32_t eid)
{
    const NhBaEntry *e = &ba->table[eid];

    return (NhBaEntry) {
        .state = LE32(e->state), .offset = LE64(e->offset), .slba = LE64(e->slba),
        .nlb = LE64(e->nlb),
    };
}

uint64_t nh_ba_dumps(const NhBa *ba)
{
    return LE64(ba->hdr->dumps);
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

static NhBaErr nh_ba_check_ranges(const NhBa *ba, uint32_t eid, uint64_t offset, uint64_t slba,
                                  uint64_t nlb)
{
    uint64_t len;

    if (nlb == 0 || nlb > ba->size / ba->lba_size) {
        return NH_BA_EWINDOW;
    }
    len = nlb * ba->lba_size;
    if (offset >= ba->size || len > ba->size - offset) {
        return NH_BA_EWINDOW;
    }
    if (slba >= ba->nsze || nlb > ba->nsze - slba) {
        return NH_BA_ELBA;
    }
    for (uint32_t i = 0; i < ba->entries; i++) {
        NhBaEntry e = nh_ba_entry(ba, i);

        if (i == eid || e.state != NH_BA_PINNED) {
            continue;
        }
        if (ranges_overlap(offset, len, e.offset, e.nlb * ba->lba_size) ||
            ranges_overlap(slba, nlb, e.slba, e.nlb)) {
            return NH_BA_EOVERLAP;
        }
    }
    return NH_BA_OK;
}

NhBaErr nh_ba_check_pin(const NhBa *ba, uint32_t eid, uint64_t offset, uint64_t slba,
                        uint64_t nlb)
{
    if (eid >= ba->entries) {
        return NH_BA_EBADEID;
    }
    if (nh_ba_entry(ba, eid).state == NH_BA_PINNED) {
        return NH_BA_EBUSY;
    }
    return nh_ba_check_ranges(ba, eid, offset, slba, nlb);
}

void nh_ba_pin(NhBa *ba, uint32_t eid, uint64_t offset, uint64_t slba, uint64_t nlb)
{
    NhBaEntry *e = &ba->table[eid];

    e->offset = LE64(offset);
    e->slba = LE64(slba);
    e->nlb = LE64(nlb);
    e->state = LE32(NH_BA_PINNED);
    nh_ba_seal(ba);
}

void nh_ba_release(NhBa *ba, uint32_t eid)
{
    memset(&ba->table[eid], 0, sizeof(NhBaEntry));
    nh_ba_seal(ba);
}

NhBaErr nh_ba_check_entry(const NhBa *ba, uint32_t eid)
{
    if (eid >= ba->entries) {
        return NH_BA_EBADEID;
    }
    return nh_ba_entry(ba, eid).state == NH_BA_PINNED ? NH_BA_OK : NH_BA_ENOTPINNED;
}

bool nh_ba_lbas_pinned(const NhBa *ba, uint64_t slba, uint64_t nlb)
{
    for (uint32_t i = 0; i < ba->entries; i++) {
        NhBaEntry e = nh_ba_entry(ba, i);

        if (e.state == NH_BA_PINNED && ranges_overlap(slba, nlb, e.slba, e.nlb)) {
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------------------ power loss */

void nh_ba_dump(NhBa *ba, uint64_t dump_ns)
{
    if (ba->fd < 0 || ba->dumped) {
        return;
    }
    /* DUMPING first: a dump cut short leaves that state behind and is recognised as torn. */
    ba->hdr->state = LE32(NH_BA_STATE_DUMPING);
    nh_ba_seal(ba);
    msync(ba->map, NH_BA_TABLE_OFFSET, MS_SYNC);
    ba->hdr->window_crc = LE32(nh_ba_window_crc(ba));
    ba->hdr->dumps = LE64(nh_ba_dumps(ba) + 1);
    ba->hdr->dump_ns = LE64(dump_ns);
    msync(ba->map, ba->map_len, MS_SYNC);
    ba->hdr->state = LE32(NH_BA_STATE_DUMPED);
    nh_ba_seal(ba);
    msync(ba->map, NH_BA_TABLE_OFFSET, MS_SYNC);
    ba->dumped = true;
}

/* ------------------------------------------------------------------------------ recovery */

/* A restored table must describe pins this device could have made. */
static bool nh_ba_table_sane(const NhBa *ba)
{
    for (uint32_t i = 0; i < ba->entries; i++) {
        NhBaEntry e = nh_ba_entry(ba, i);

        if (e.state == NH_BA_FREE) {
            continue;
        }
        if (e.state != NH_BA_PINNED ||
            nh_ba_check_ranges(ba, i, e.offset, e.slba, e.nlb) != NH_BA_OK) {
            return false;
        }
    }
    return true;
}

/* Copy the file as it is now to <path>.bad, for inspection; returns that path, or NULL. */
static char *nh_ba_keep_bad(NhBa *ba, const char *path)
{
    g_autofree char *bad = g_strdup_printf("%s.bad", path);
    int out = open(bad, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char buf[64 * 1024];
    off_t off = 0;
    ssize_t got;

    if (out < 0) {
        return NULL;
    }
    while ((got = pread(ba->fd, buf, sizeof(buf), off)) > 0) {
        for (ssize_t done = 0, w; done < got; done += w) {
            w = write(out, buf + done, got - done);
            if (w <= 0) {
                close(out);
                return NULL;
            }
        }
        off += got;
    }
    close(out);
    return got < 0 ? NULL : g_steal_pointer(&bad);
}

/* The image will not be used (a copy is in @bad): start from a zeroed window. */
static void nh_ba_discarded(NhBa *ba, char *bad, NhBaRestore why, const char *what)
{
    ba->restore = why;
    ba->restore_why = g_strdup_printf("%s (a copy of the file is in %s)", what,
                                      bad ? bad : "nowhere: cannot write");
    g_free(bad);
    nh_ba_format(ba);
}

/* What makes a saved image of the right size unusable, or NULL; *why: corrupt or torn. */
static const char *nh_ba_damage(NhBa *ba, NhBaRestore *why)
{
    NhBaHeader *h = ba->hdr;

    *why = NH_BA_CORRUPT;
    if (LE32(h->meta_crc) != nh_ba_meta_crc(ba)) {
        return "header or entry table checksum mismatch";
    }
    if (LE64(h->window_offset) != NH_BA_META_SIZE) {
        return "the header places the window elsewhere than this version does";
    }
    if (!nh_ba_table_sane(ba)) {
        return "entry table describes impossible pins";
    }
    switch (LE32(h->state)) {
    case NH_BA_STATE_DUMPED:
        return LE32(h->window_crc) != nh_ba_window_crc(ba) ? "window checksum mismatch" : NULL;
    case NH_BA_STATE_RUNNING:
        return NULL;
    case NH_BA_STATE_DUMPING:
        *why = NH_BA_TORN;
        return "the last dump did not finish";
    default:
        return "unknown state in the header";
    }
}

static void nh_ba_recover(NhBa *ba, const char *path)
{
    NhBaHeader *h = ba->hdr;
    NhBaRestore why;
    const char *damage = nh_ba_damage(ba, &why);

    if (damage) {
        nh_ba_discarded(ba, nh_ba_keep_bad(ba, path), why, damage);
        return;
    }
    if (LE32(h->state) == NH_BA_STATE_RUNNING) {
        /* Killed while running: the file holds exactly what the DRAM held at that instant,
         * which is what the capacitors would have dumped; the dump is done now. */
        h->window_crc = LE32(nh_ba_window_crc(ba));
        h->dumps = LE64(nh_ba_dumps(ba) + 1);
        ba->restore = NH_BA_RECOVERED;
    } else {
        ba->restore = NH_BA_RESTORED;
    }
    h->state = LE32(NH_BA_STATE_RUNNING);
    nh_ba_seal(ba);
}

/* Open @path, created when missing (*created), and lock it for this device alone. */
static bool nh_ba_open_file(NhBa *ba, const char *path, bool *created, off_t *size,
                            GError **errp)
{
    struct stat st;

    /* O_NONBLOCK: a FIFO or a device would block the open; it is refused below. */
    ba->fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    *created = ba->fd < 0 && errno == ENOENT;
    if (*created) {
        ba->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (ba->fd < 0 || fstat(ba->fd, &st) < 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "ba-file: cannot open %s: %s", path,
                    g_strerror(errno));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "ba-file: %s is not a regular file", path);
        return false;
    }
    /* Two devices on one window would each take the other's stores for their own. */
    if (flock(ba->fd, LOCK_EX | LOCK_NB) < 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "ba-file: %s is in use by another device "
                    "or QEMU (%s)", path, g_strerror(errno));
        return false;
    }
    *size = st.st_size;
    return true;
}

/* The file must be ours (magic and version) and made for this geometry: otherwise it is
 * refused untouched.  A file shorter than the header whose bytes begin the magic (or an empty
 * one) is a torn save of ours, which the caller discards. */
static bool nh_ba_check_header(NhBa *ba, const char *path, GError **errp)
{
    NhBaHeader h;
    ssize_t got = pread(ba->fd, &h, sizeof(h), 0);

    if (got >= 0 && got < (ssize_t)sizeof(h) && !memcmp(&h, NH_BA_MAGIC, MIN(got, 8))) {
        return true;
    }
    if (got != sizeof(h) || memcmp(h.magic, NH_BA_MAGIC, 8) ||
        LE32(h.version) != NH_BA_VERSION) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "ba-file: %s is not an nvme-hybrid BA "
                    "window file (version %u); refusing to overwrite it", path, NH_BA_VERSION);
        return false;
    }
    if (LE64(h.window_size) != ba->size || LE32(h.entries) != ba->entries ||
        LE32(h.lba_size) != ba->lba_size) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "ba-file: %s was made with ba-size=%" PRIu64
                    ", ba-entries=%u, lba-size=%u; this device has %" PRIu64 ", %u, %u",
                    path, (uint64_t)LE64(h.window_size), LE32(h.entries), LE32(h.lba_size),
                    ba->size, ba->entries, ba->lba_size);
        return false;
    }
    return true;
}

static void nh_ba_layout(NhBa *ba)
{
    ba->hdr = (NhBaHeader *)ba->map;
    ba->table = (NhBaEntry *)(ba->map + NH_BA_TABLE_OFFSET);
    ba->window = ba->map + NH_BA_META_SIZE;
}

NhBa *nh_ba_open(const char *path, uint64_t size, uint32_t entries, uint32_t lba_size,
                 uint64_t nsze, GError **errp)
{
    g_autofree NhBa *ba = g_new0(NhBa, 1);
    size_t len = NH_BA_META_SIZE + size;
    const char *wrong_size = NULL;
    char *bad = NULL;
    bool created;
    off_t was;

    ba->size = size;
    ba->entries = entries;
    ba->lba_size = lba_size;
    ba->nsze = nsze;
    ba->map_len = len;
    ba->fd = -1;
    if (!path) {
        ba->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (ba->map == MAP_FAILED) {
            g_set_error(errp, NH_ERROR, NH_ERROR_IO, "ba-size: cannot allocate %zu bytes: %s",
                        len, g_strerror(errno));
            return NULL;
        }
        nh_ba_layout(ba);
        nh_ba_format(ba);
        return g_steal_pointer(&ba);
    }

    if (!nh_ba_open_file(ba, path, &created, &was, errp) ||
        (!created && !nh_ba_check_header(ba, path, errp))) {
        goto fail;
    }
    /* Only a file made now is new.  One of another length (even empty) is a save the device
     * did not write that way: kept as it is, then resized and discarded. */
    if (!created && (uint64_t)was != len) {
        wrong_size = (uint64_t)was < len ? "the file is shorter than the window"
                                         : "the file is longer than the window";
        bad = nh_ba_keep_bad(ba, path);
    }
    if ((uint64_t)was != len && ftruncate(ba->fd, len) < 0) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "ba-file: cannot size %s to %zu bytes: %s",
                    path, len, g_strerror(errno));
        g_free(bad);
        goto fail;
    }
    ba->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ba->fd, 0);
    if (ba->map == MAP_FAILED) {
        g_set_error(errp, NH_ERROR, NH_ERROR_IO, "ba-file: cannot map %s: %s", path,
                    g_strerror(errno));
        g_free(bad);
        goto fail;
    }
    nh_ba_layout(ba);
    if (created) {
        nh_ba_format(ba);
        ba->restore = NH_BA_NEW;
    } else if (wrong_size) {
        nh_ba_discarded(ba, bad, (uint64_t)was < len ? NH_BA_TORN : NH_BA_CORRUPT, wrong_size);
    } else {
        nh_ba_recover(ba, path);
    }
    msync(ba->map, NH_BA_TABLE_OFFSET, MS_SYNC);
    return g_steal_pointer(&ba);

fail:
    if (ba->fd >= 0) {
        close(ba->fd);
    }
    return NULL;
}

void nh_ba_close(NhBa *ba)
{
    if (!ba) {
        return;
    }
    munmap(ba->map, ba->map_len);
    if (ba->fd >= 0) {
        close(ba->fd);
    }
    g_free(ba->restore_why);
    g_free(ba);
}
