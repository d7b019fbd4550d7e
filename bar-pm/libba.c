/* libba.c - guest library for the nvme-hybrid BAR1 window (API and caveats in libba.h;
 * opcodes, statuses and layouts in nh-vendor.h, which the device shares, and docs/bar-pm.md).  The vendor admin commands and the search for the
 * controller go through libnvme, the library of nvme-cli (its passthrough, topology scan and
 * status names); only the window and the registers are mapped by hand, as sysfs offers them. */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <immintrin.h>
#include <libnvme.h>

#include "libba.h"
#include "nh-vendor.h"

#define REG_PMRCTL          0xe04
#define REG_PMRSTS          0xe08
#define REGS_MAP_SIZE       0x1000
#define DMA_CHUNK           (256u * 1024)   /* below the device's 512 KiB MDTS */
#define MAX_ENTRIES         NH_BA_MAX_ENTRIES

/* libba.h keeps its own names for the device's values (it is installed without nh-vendor.h). */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(BA_FREE, NH_BA_FREE) && SAME(BA_PINNED, NH_BA_PINNED), "entry states");
_Static_assert(SAME(BA_RESTORE_NEW, NH_BA_NEW) && SAME(BA_RESTORE_RESTORED, NH_BA_RESTORED) &&
               SAME(BA_RESTORE_RECOVERED, NH_BA_RECOVERED) &&
               SAME(BA_RESTORE_CORRUPT, NH_BA_CORRUPT) && SAME(BA_RESTORE_TORN, NH_BA_TORN),
               "restore results");

struct ba_dev {
    char        ctrl[64];
    int         fd;                 /* /dev/nvmeX */
    volatile uint8_t *win;
    size_t      win_size;
    volatile uint32_t *regs;
    uint32_t    entries;
    ba_info    *cache;              /* entry table as last seen */
    char        err[512];
};

static int fail(ba_dev *dev, int err, const char *fmt, ...)
{
    va_list ap;

    if (dev) {
        va_start(ap, fmt);
        vsnprintf(dev->err, sizeof(dev->err), fmt, ap);
        va_end(ap);
    }
    return -err;
}

const char *ba_error(const ba_dev *dev)
{
    return dev && dev->err[0] ? dev->err : "no error";
}

const char *ba_restore_name(uint32_t restore)
{
    static const char *const names[] = { "new", "restored", "recovered", "corrupt", "torn" };

    return restore < sizeof(names) / sizeof(names[0]) ? names[restore] : "unknown";
}

void *ba_window(const ba_dev *dev) { return (void *)dev->win; }
size_t ba_window_size(const ba_dev *dev) { return dev->win_size; }
const char *ba_ctrl_name(const ba_dev *dev) { return dev->ctrl; }
uint32_t ba_pmrsts(const ba_dev *dev) { return dev->regs[REG_PMRSTS / 4]; }

/* ------------------------------------------------------------------------------ commands */

/* The device's status as an errno value and words (statuses in docs/bar-pm.md). */
static int status_error(ba_dev *dev, const char *what, int status)
{
    int sct = (status >> 8) & 7, sc = status & 0xff;
    static const struct { int sct, sc, err; const char *msg; } map[] = {
        { 1, NH_BA_SC_INVALID_ENTRY, EINVAL, "entry id out of range" },
        { 1, NH_BA_SC_ENTRY_PINNED, EBUSY, "entry is already pinned" },
        { 1, NH_BA_SC_ENTRY_NOT_PINNED, ENOENT, "entry is not pinned" },
        { 1, NH_BA_SC_WINDOW_RANGE, ERANGE, "range beyond the window or the entry" },
        { 1, NH_BA_SC_OVERLAP, EEXIST, "overlaps another pinned entry (window or LBAs)" },
        { 0, 0x80, ENXIO, "LBA range beyond the namespace" },
        { 0, 0x01, EOPNOTSUPP, "the device has no BA window" },
        { 0, 0x02, EINVAL, "invalid field" },
        { 0, 0x04, EFAULT, "data transfer error (bad buffer)" },
        { 2, 0x80, EIO, "write fault" },
        { 2, 0x81, EIO, "unrecovered read error" },
    };

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (map[i].sct == sct && map[i].sc == sc) {
            return fail(dev, map[i].err, "%s: %s (NVMe status SCT %x SC %02x)", what,
                        map[i].msg, sct, sc);
        }
    }
    return fail(dev, EIO, "%s: %s (NVMe status SCT %x SC %02x)", what,
                nvme_status_to_string(status, false), sct, sc);
}

static int admin(ba_dev *dev, const char *what, uint8_t opcode, uint32_t cdw10, uint32_t cdw11,
                 uint32_t cdw12, uint32_t cdw13, uint32_t cdw14, void *buf, uint32_t len)
{
    /* no namespace (the window is the controller's), libnvme's default timeout */
    int ret = nvme_admin_passthru(dev->fd, opcode, 0, 0, 0, 0, 0, cdw10, cdw11, cdw12, cdw13,
                                  cdw14, 0, len, buf, 0, NULL, 0, NULL);

    if (ret < 0) {
        return fail(dev, errno, "%s: admin passthrough on /dev/%s: %s", what, dev->ctrl,
                    strerror(errno));
    }
    return ret ? status_error(dev, what, ret) : 0;
}

int ba_entry_info(ba_dev *dev, uint32_t eid, ba_info *info)
{
    NhBaEntryInfo r __attribute__((aligned(64)));
    int ret = admin(dev, "BA_GET_ENTRY_INFO", NH_BA_OP_GET_ENTRY_INFO, eid, 0, 0, 0, 0, &r,
                    sizeof(r));

    if (ret) {
        return ret;
    }
    *info = (ba_info){
        .eid = le16toh(r.eid), .state = r.state, .restore = r.restore,
        .entries = le32toh(r.entries), .offset = le64toh(r.offset), .slba = le64toh(r.slba),
        .nlb = le64toh(r.nlb), .length = le64toh(r.length),
        .window_size = le64toh(r.window_size), .lba_size = le32toh(r.lba_size),
        .dumps = le32toh(r.dumps), .dump_ns = le64toh(r.dump_ns),
    };
    if (dev->cache && eid < dev->entries) {
        dev->cache[eid] = *info;
    }
    return 0;
}

int ba_pin(ba_dev *dev, uint32_t eid, uint64_t offset, uint64_t slba, uint32_t nlb)
{
    ba_info info;
    int ret;

    if (offset > UINT32_MAX) {
        return fail(dev, ERANGE, "BA_PIN: offset %llu beyond any window",
                    (unsigned long long)offset);
    }
    ret = admin(dev, "BA_PIN", NH_BA_OP_PIN, eid, offset, slba, slba >> 32, nlb, NULL, 0);
    return ret ? ret : ba_entry_info(dev, eid, &info);
}

int ba_sync(ba_dev *dev, uint32_t eid)
{
    return admin(dev, "BA_SYNC", NH_BA_OP_SYNC, eid, 0, 0, 0, 0, NULL, 0);
}

int ba_flush(ba_dev *dev, uint32_t eid)
{
    ba_info info;
    int ret = admin(dev, "BA_FLUSH", NH_BA_OP_FLUSH, eid, 0, 0, 0, 0, NULL, 0);

    return ret ? ret : ba_entry_info(dev, eid, &info);
}

/* ------------------------------------------------------------------------------ window */

/* Where [offset, offset+len) of entry @eid lies in the window. */
static int entry_range(ba_dev *dev, const char *what, uint32_t eid, uint64_t offset, size_t len,
                       volatile uint8_t **p)
{
    const ba_info *e;

    if (eid >= dev->entries) {
        return fail(dev, EINVAL, "%s: entry id %u out of range (the device has %u)", what, eid,
                    dev->entries);
    }
    e = &dev->cache[eid];
    if (e->state != BA_PINNED) {
        return fail(dev, ENOENT, "%s: entry %u is not pinned", what, eid);
    }
    if (offset > e->length || len > e->length - offset) {
        return fail(dev, ERANGE, "%s: %zu bytes at %llu go beyond entry %u (%llu bytes)", what,
                    len, (unsigned long long)offset, eid, (unsigned long long)e->length);
    }
    *p = dev->win + e->offset + offset;
    return 0;
}

/*
 * Plain stores, 8 bytes at a time where aligned: the CPU's write-combining buffers merge them
 * into 64-byte bursts.  Volatile, so the compiler neither reads the window back nor merges
 * the stores into wider vector stores it might split oddly.
 */
int ba_write(ba_dev *dev, uint32_t eid, uint64_t offset, const void *buf, size_t len)
{
    volatile uint8_t *p;
    const uint8_t *s = buf;
    int ret = entry_range(dev, "write", eid, offset, len, &p);

    if (ret) {
        return ret;
    }
    while (len && ((uintptr_t)p & 7)) {
        *p++ = *s++;
        len--;
    }
    for (; len >= 8; len -= 8, p += 8, s += 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        *(volatile uint64_t *)p = v;
    }
    while (len--) {
        *p++ = *s++;
    }
    return 0;
}

void ba_persist(ba_dev *dev)
{
    uint32_t sts;

    /* WC stores bypass the caches, so no cache-line flush applies: the fence drains the WC
     * buffers, and the uncached read of PMRSTS returns only after the posted writes ahead of
     * it have reached the device (PMRCAP.PMRWBM).  The device models what that costs on PCIe
     * by PMRSTS.PPND, which reads 1 until the modeled writes and round trip are done.  All
     * ones: the device is gone and there is nothing to wait for.  No pause between reads:
     * each read is a round trip on PCIe, and under TCG a pause leaves the translated code. */
    _mm_sfence();
    do {
        sts = dev->regs[REG_PMRSTS / 4];
    } while ((sts & NH_BA_PMRSTS_PPND) && sts != UINT32_MAX);
}

int ba_read(ba_dev *dev, uint32_t eid, uint64_t offset, void *buf, size_t len)
{
    volatile uint8_t *p;
    uint8_t *d = buf;
    int ret = entry_range(dev, "read", eid, offset, len, &p);

    if (ret) {
        return ret;
    }
    while (len && ((uintptr_t)p & 7)) {
        *d++ = *p++;
        len--;
    }
    for (; len >= 8; len -= 8, p += 8, d += 8) {
        uint64_t v = *(volatile uint64_t *)p;
        memcpy(d, &v, 8);
    }
    while (len--) {
        *d++ = *p++;
    }
    return 0;
}

int ba_read_dma(ba_dev *dev, uint32_t eid, uint64_t offset, void *buf, size_t len)
{
    void *bounce;
    int ret = 0;

    if (posix_memalign(&bounce, 4096, DMA_CHUNK)) {
        return fail(dev, ENOMEM, "read-dma: no memory for a %u-byte buffer", DMA_CHUNK);
    }
    for (size_t done = 0; done < len && !ret; done += DMA_CHUNK) {
        uint32_t n = len - done < DMA_CHUNK ? len - done : DMA_CHUNK;
        ret = admin(dev, "BA_READ_DMA", NH_BA_OP_READ_DMA, eid, offset + done, n, 0, 0, bounce, n);
        if (!ret) {
            memcpy((uint8_t *)buf + done, bounce, n);
        }
    }
    free(bounce);
    return ret;
}

/* ------------------------------------------------------------------------------ open */

/* The controller named @want (nvmeX), or the first nvme-hybrid one, from libnvme's scan of the
 * topology: its name into dev->ctrl. */
static int find_ctrl(ba_dev *dev, const char *want)
{
    nvme_root_t root = nvme_scan(NULL);
    nvme_host_t h;
    nvme_subsystem_t s;
    nvme_ctrl_t c;
    int ret = want ? fail(dev, ENODEV, "no controller %s", want)
                   : fail(dev, ENODEV, "no nvme-hybrid controller (is the nvme driver loaded?)");

    if (!root) {
        return fail(dev, errno, "libnvme cannot scan the NVMe topology: %s", strerror(errno));
    }
    nvme_for_each_host(root, h) {
        nvme_for_each_subsystem(h, s) {
            nvme_subsystem_for_each_ctrl(s, c) {
                const char *name = nvme_ctrl_get_name(c), *model = nvme_ctrl_get_model(c);
                if (!name || strlen(name) >= sizeof(dev->ctrl) ||
                    (want && strcmp(name, want))) {
                    continue;
                }
                if (model && !strcmp(model, "nvme-hybrid") &&
                    (!dev->ctrl[0] || strverscmp(name, dev->ctrl) < 0)) {
                    strcpy(dev->ctrl, name);    /* the lowest-numbered one */
                    ret = 0;
                } else if (want) {
                    ret = fail(dev, ENODEV, "%s is not an nvme-hybrid controller (model "
                               "\"%s\")", want, model ? model : "?");
                }
            }
        }
    }
    nvme_free_tree(root);
    return ret;
}

static void *map_resource(ba_dev *dev, const char *name, size_t *len, int *err)
{
    char path[300];
    struct stat st;
    void *p;
    int fd;

    snprintf(path, sizeof(path), "/sys/class/nvme/%s/device/%s", dev->ctrl, name);
    fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        *err = fail(dev, errno, "%s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    if (!*len) {
        *len = st.st_size;
    }
    p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        int e = errno;
        *err = fail(dev, e, "cannot map %s: %s%s", path, strerror(e),
                    e == EINVAL ? " (the nvme driver holds the BAR and the kernel enforces "
                    "CONFIG_IO_STRICT_DEVMEM: boot it with iomem=relaxed)" : "");
        return NULL;
    }
    return p;
}

/* The mapping part of ba_open: no /dev/nvmeX, no admin command. */
static int open_map(ba_dev *dev, const char *ctrl)
{
    size_t regs_len = REGS_MAP_SIZE;
    int ret = find_ctrl(dev, ctrl);

    if (ret) {
        return ret;
    }
    dev->regs = map_resource(dev, "resource0", &regs_len, &ret);
    if (!dev->regs) {
        return ret;
    }
    dev->win = map_resource(dev, "resource1_wc", &dev->win_size, &ret);
    if (!dev->win) {
        return ret;
    }
    dev->regs[REG_PMRCTL / 4] = 1;      /* PMRCTL.EN: the window answers from now on */
    return 0;
}

int ba_open_window(const char *ctrl, ba_dev **out)
{
    ba_dev *dev = calloc(1, sizeof(*dev));
    int ret;

    *out = NULL;
    if (!dev) {
        return -ENOMEM;
    }
    dev->fd = -1;
    ret = open_map(dev, ctrl);
    if (ret) {
        fprintf(stderr, "libba: %s\n", dev->err[0] ? dev->err : strerror(-ret));
        ba_close(dev);
        return ret;
    }
    *out = dev;
    return 0;
}

int ba_open(const char *ctrl, ba_dev **out)
{
    ba_dev *dev = calloc(1, sizeof(*dev));
    char path[300];
    size_t regs_len = REGS_MAP_SIZE;
    ba_info info;
    int ret;

    *out = NULL;
    if (!dev) {
        return -ENOMEM;
    }
    dev->fd = -1;
    ret = find_ctrl(dev, ctrl);
    if (ret) {
        goto fail;
    }
    snprintf(path, sizeof(path), "/dev/%s", dev->ctrl);
    dev->fd = open(path, O_RDWR | O_CLOEXEC);
    if (dev->fd < 0) {
        ret = fail(dev, errno, "%s: %s", path, strerror(errno));
        goto fail;
    }
    dev->regs = map_resource(dev, "resource0", &regs_len, &ret);
    if (!dev->regs) {
        goto fail;
    }
    dev->win = map_resource(dev, "resource1_wc", &dev->win_size, &ret);
    if (!dev->win) {
        goto fail;
    }
    dev->regs[REG_PMRCTL / 4] = 1;      /* PMRCTL.EN: the window answers from now on */
    ret = ba_entry_info(dev, 0, &info);
    if (ret) {
        goto fail;
    }
    dev->entries = info.entries < MAX_ENTRIES ? info.entries : MAX_ENTRIES;
    dev->cache = calloc(dev->entries, sizeof(ba_info));
    if (!dev->cache) {
        ret = -ENOMEM;
        goto fail;
    }
    for (uint32_t i = 0; i < dev->entries; i++) {
        ret = ba_entry_info(dev, i, &info);
        if (ret) {
            goto fail;
        }
    }
    *out = dev;
    return 0;

fail:
    /* Callers get the message through a dev they cannot use: keep it on stderr instead. */
    fprintf(stderr, "libba: %s\n", dev->err[0] ? dev->err : strerror(-ret));
    ba_close(dev);
    return ret;
}

void ba_close(ba_dev *dev)
{
    if (!dev) {
        return;
    }
    if (dev->win) {
        munmap((void *)dev->win, dev->win_size);
    }
    if (dev->regs) {
        munmap((void *)dev->regs, REGS_MAP_SIZE);
    }
    if (dev->fd >= 0) {
        close(dev->fd);
    }
    free(dev->cache);
    free(dev);
}
