/* nhwal-core.c - a walring in the BAR1 window: find, attach, replay (nhwal-core.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nhwal-core.h"

/* Raw system calls: inside the preload library the libc names are our own wrappers. */
static int sys_open(const char *path, int flags, mode_t mode)
{
    long r = syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode);
    return r < 0 ? -errno : (int)r;
}

static void sys_close(int fd)
{
    syscall(SYS_close, fd);
}

int nhwal_sync_path(void *ctx, const char *path)
{
    int fd = sys_open(path, O_RDONLY, 0);
    long r;

    (void)ctx;
    if (fd < 0) {
        return fd;
    }
    r = syscall(SYS_fdatasync, fd);
    r = r < 0 ? -errno : 0;
    sys_close(fd);
    return (int)r;
}

void nhwal_persist(void *ctx)
{
    ba_persist(ctx);
}

/* Replay one record.  A file that has to be created gets the owner of its directory (the
 * replay may run as root for a database running as another user). */
static int apply(void *ctx, const char *path, uint64_t off, const void *buf, size_t len)
{
    int fd = sys_open(path, O_WRONLY, 0);
    const char *p = buf;

    (void)ctx;
    if (fd == -ENOENT) {
        char dir[WR_PATH_MAX];
        struct stat st;
        char *slash;

        fd = sys_open(path, O_WRONLY | O_CREAT, 0600);
        snprintf(dir, sizeof(dir), "%s", path);
        slash = strrchr(dir, '/');
        if (fd >= 0 && slash && slash != dir) {
            *slash = 0;
            if (stat(dir, &st) == 0 && geteuid() == 0) {
                (void)syscall(SYS_fchown, fd, st.st_uid, st.st_gid);
            }
        }
    }
    if (fd < 0) {
        fprintf(stderr, "nhwal: replay: cannot open %s: %s\n", path, strerror(-fd));
        return fd;
    }
    while (len) {
        long n = syscall(SYS_pwrite64, fd, p, len, (off_t)off);
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            fprintf(stderr, "nhwal: replay: writing %s: %s\n", path, strerror(e));
            sys_close(fd);
            return -e;
        }
        p += n;
        off += n;
        len -= n;
    }
    sys_close(fd);
    return 0;
}

static int truncate_cb(void *ctx, const char *path, uint64_t size)
{
    int fd = sys_open(path, O_WRONLY | O_CREAT, 0600);
    long r;

    (void)ctx;
    if (fd < 0) {
        fprintf(stderr, "nhwal: replay: cannot open %s: %s\n", path, strerror(-fd));
        return fd;
    }
    r = syscall(SYS_ftruncate, fd, (off_t)size);
    r = r < 0 ? -errno : 0;
    if (r) {
        fprintf(stderr, "nhwal: replay: cannot cut %s to %llu bytes: %s\n", path,
                (unsigned long long)size, strerror((int)-r));
    }
    sys_close(fd);
    return (int)r;
}

int nhwal_find(ba_dev *dev, const char *name, uint64_t *off, char *err, size_t errlen)
{
    volatile uint8_t *win = ba_window(dev);
    size_t size = ba_window_size(dev);
    char e[128], found[16];

    for (uint64_t o = 0; o + WR_MIN_SIZE <= size; o += WR_SB_SIZE) {
        if (wr_check(win + o, size - o, e, sizeof(e)) == 0) {
            wr_ring_name(win + o, found);
            if (!strcmp(found, name)) {
                *off = o;
                return 0;
            }
            o += wr_ring_size(win + o) - WR_SB_SIZE;
        }
    }
    snprintf(err, errlen, "no ring named '%s' in the %zu-byte window of %s (make one with "
             "`nhwal init`)", name, size, ba_ctrl_name(dev));
    return -ENOENT;
}

int nhwal_attach_dev(nhwal *w, ba_dev *dev, const char *name, char *err, size_t errlen)
{
    char shm[128];
    int fd, ret;
    wr_ctl *ctl;
    uint64_t off;

    memset(w, 0, sizeof(*w));
    w->replayed = -1;
    snprintf(w->name, sizeof(w->name), "%s", name);
    ret = nhwal_find(dev, name, &off, err, errlen);
    if (ret) {
        return ret;
    }
    w->dev = dev;
    w->ring_off = off;
    snprintf(shm, sizeof(shm), "/dev/shm/nhwal-%s-%s", ba_ctrl_name(dev), name);
    fd = sys_open(shm, O_RDWR | O_CREAT, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", shm, strerror(-fd));
        return fd;
    }
    /* The engines run as different users; the control block is shared by them all. */
    (void)fchmod(fd, 0666);
    /* One process at a time sets the control block up (and replays). */
    if (flock(fd, LOCK_EX) < 0 || ftruncate(fd, sizeof(wr_ctl)) < 0) {
        ret = -errno;
        snprintf(err, errlen, "%s: %s", shm, strerror(errno));
        sys_close(fd);
        return ret;
    }
    ctl = mmap(NULL, sizeof(wr_ctl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ctl == MAP_FAILED) {
        ret = -errno;
        snprintf(err, errlen, "mapping %s: %s", shm, strerror(errno));
        flock(fd, LOCK_UN);
        sys_close(fd);
        return ret;
    }
    w->ctl = ctl;
    wr_bind(&w->ring, ba_window(dev) + off, ba_window_size(dev) - off, ctl, nhwal_persist,
            nhwal_sync_path, dev);
    if (!__atomic_load_n(&ctl->ready, __ATOMIC_ACQUIRE) ||
        ctl->data_size != w->ring.data_size) {
        /* First since boot (/dev/shm is a tmpfs), or the ring was remade: replay. */
        long n;
        ret = wr_ctl_init(ctl, w->ring.data_size);
        if (ret) {
            snprintf(err, errlen, "cannot initialize the shared locks: %s", strerror(-ret));
            goto fail;
        }
        n = wr_replay(&w->ring, apply, truncate_cb, &w->replayed_bytes);
        if (n < 0) {
            ret = (int)n;
            snprintf(err, errlen, "replay of ring '%s' failed: %s (the ring is kept; nothing "
                     "was dropped)", name, strerror(-ret));
            goto fail;
        }
        w->replayed = n;
        __atomic_store_n(&ctl->ready, 1, __ATOMIC_RELEASE);
    }
    flock(fd, LOCK_UN);
    sys_close(fd);
    return 0;

fail:
    munmap(ctl, sizeof(wr_ctl));
    w->ctl = NULL;
    flock(fd, LOCK_UN);
    sys_close(fd);
    return ret;
}

int nhwal_attach(nhwal *w, const char *ctrl, const char *name, char *err, size_t errlen)
{
    ba_dev *dev;
    int ret = ba_open_window(ctrl, &dev);

    if (ret) {
        snprintf(err, errlen, "cannot map the window of %s: %s", ctrl ? ctrl : "nvme-hybrid",
                 strerror(-ret));
        return ret;
    }
    ret = nhwal_attach_dev(w, dev, name, err, errlen);
    if (ret) {
        ba_close(dev);
    }
    return ret;
}

void nhwal_detach(nhwal *w)
{
    if (w->ctl) {
        munmap(w->ctl, sizeof(wr_ctl));
        w->ctl = NULL;
    }
}
