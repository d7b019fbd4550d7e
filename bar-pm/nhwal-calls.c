/*
 * nhwal-calls.c - the libc entry points libnhwal.so intercepts: open/close, writes and
 * metadata calls (see nhwal.c for what the library does, and docs/dblog.md).
 */
#define _GNU_SOURCE
/* We define open and open64, pwrite and pwrite64, ... ourselves: the headers must not rename
 * one into the other (meson builds with _FILE_OFFSET_BITS=64). */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "nhwal-priv.h"

/* ------------------------------------------------------------------------------ open/close */

static int do_open(int dirfd, const char *path, int flags, mode_t mode)
{
    char abs[PATH_MAX];
    int fd;
    struct stat st;

    nhwal_resolve();
    if (!nhwal_g.active || (flags & O_ACCMODE) == O_RDONLY || (flags & O_PATH) ||
        nhwal_abs_path(dirfd, path, abs, sizeof(abs)) || !nhwal_matches(abs)) {
        return real_openat(dirfd, path, flags, mode);
    }
    /* O_SYNC / O_DSYNC: each write is durable once in the ring; the file need not be.
     * O_TRUNC: the cut is a record of the ring, between the writes before and after it. */
    if (flags & O_TRUNC) {
        wr_lock(&nhwal_g.w.ring);
    }
    fd = real_openat(dirfd, path, flags & ~(O_SYNC | O_DSYNC), mode);
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        nhwal_track(fd, abs);
        if (flags & O_TRUNC) {
            nhwal_logged_truncate(fd, abs, 0);
        }
    } else if (fd >= 0 && (flags & (O_SYNC | O_DSYNC))) {
        /* Not a regular file, so not ours: open it again with its own flags. */
        real_close(fd);
        fd = real_openat(dirfd, path, flags & ~(O_CREAT | O_EXCL | O_TRUNC), mode);
    }
    if (flags & O_TRUNC) {
        int e = errno;
        wr_unlock(&nhwal_g.w.ring);
        errno = e;
    }
    return fd;
}

static mode_t open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = open_mode(flags, ap);
    va_end(ap);
    return do_open(AT_FDCWD, path, flags, m);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = open_mode(flags, ap);
    va_end(ap);
    return do_open(dirfd, path, flags, m);
}

int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int creat(const char *path, mode_t mode)
{
    return do_open(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode) __attribute__((alias("creat")));

int close(int fd)
{
    nhwal_resolve();
    nhwal_untrack(fd);
    return real_close(fd);
}

static FILE *do_fopen(FILE *(*real)(const char *, const char *), const char *path,
                      const char *mode)
{
    char abs[PATH_MAX];

    nhwal_resolve();
    /* stdio writes do not come through write(): a tracked file opened for writing this way
     * is written behind the ring's back, so its records must not be replayed over it. */
    if (nhwal_g.active && strpbrk(mode, "wa+") &&
        nhwal_barrier_at(AT_FDCWD, path, abs, sizeof(abs))) {
        return NULL;
    }
    return real(path, mode);
}

FILE *fopen(const char *path, const char *mode) { return do_fopen(real_fopen, path, mode); }
FILE *fopen64(const char *path, const char *mode) { return do_fopen(real_fopen64, path, mode); }

int dup(int fd)
{
    int n;
    nhwal_resolve();
    n = real_dup(fd);
    if (nhwal_g.active && n >= 0) {
        nhwal_copy_track(fd, n);
    }
    return n;
}

int dup2(int fd, int to)
{
    int n;
    nhwal_resolve();
    n = real_dup2(fd, to);
    if (nhwal_g.active && n >= 0 && fd != to) {
        nhwal_copy_track(fd, n);
    }
    return n;
}

int dup3(int fd, int to, int flags)
{
    int n;
    nhwal_resolve();
    n = real_dup3(fd, to, flags);
    if (nhwal_g.active && n >= 0) {
        nhwal_copy_track(fd, n);
    }
    return n;
}

int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    void *arg;
    int r;

    nhwal_resolve();
    va_start(ap, cmd);
    arg = va_arg(ap, void *);
    va_end(ap);
    r = real_fcntl(fd, cmd, arg);
    if (nhwal_g.active && r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) {
        nhwal_copy_track(fd, r);
    }
    return r;
}

int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* ------------------------------------------------------------------------------ writes */

/* The write path of a tracked descriptor.  Under the ring's order lock: write the file,
 * learn where the bytes went, append them to the ring (persisted).  If the ring cannot take
 * them, make the file durable the old way before returning. */
static ssize_t tracked_write(int fd, const struct iovec *iov, int iovcnt, off_t pos, int positional)
{
    struct fdent *e = nhwal_fdent(fd);
    ssize_t r;
    off_t off = 0;
    char path[WR_PATH_MAX];
    int append;

    wr_lock(&nhwal_g.w.ring);
    nhwal_reresolve();
    if (!e->tracked) {
        wr_unlock(&nhwal_g.w.ring);
        return positional ? real_pwritev(fd, iov, iovcnt, pos) : real_writev(fd, iov, iovcnt);
    }
    snprintf(path, sizeof(path), "%s", e->path);
    /* O_APPEND as the kernel has it now (open, fcntl, dup and inheritance all set it).  Kept
     * in the descriptor table it was lost (O_APPEND does not fit the uint8_t it was stored
     * in): the first write after an O_APPEND open of a non-empty file was logged at the
     * descriptor's position 0, and a replay put it over the file's start (Redis's AOF after
     * a power cut, found by scripts/dblog-powercut). */
    append = (real_fcntl(fd, F_GETFL) & O_APPEND) != 0;
    if (positional && !append) {
        off = pos;
        r = real_pwritev(fd, iov, iovcnt, pos);
    } else if (!append) {
        off = lseek(fd, 0, SEEK_CUR);
        r = real_writev(fd, iov, iovcnt);
    } else {
        /* O_APPEND (also for pwrite on Linux): the bytes went to the end of the file. */
        struct stat st;
        r = positional ? real_pwritev(fd, iov, iovcnt, pos) : real_writev(fd, iov, iovcnt);
        off = r > 0 && fstat(fd, &st) == 0 ? st.st_size - r : -1;
    }
    if (r > 0) {
        int err = off < 0 ? -EIO : 0;
        size_t left = r;
        for (int i = 0; i < iovcnt && left && !err; i++) {
            size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
            err = wr_append(&nhwal_g.w.ring, path, off, iov[i].iov_base, n);
            off += n;
            left -= n;
        }
        if (err) {
            static int said;
            if (!said++) {
                fprintf(stderr, "nhwal: cannot log a write to %s in the ring (%s): making "
                        "it durable with fdatasync\n", path, strerror(-err));
            }
            if (real_fdatasync(fd) < 0) {
                int e2 = errno;
                wr_unlock(&nhwal_g.w.ring);
                errno = e2;
                return -1;
            }
        }
    }
    wr_unlock(&nhwal_g.w.ring);
    nhwal_start_flusher();
    return r;
}

static int is_tracked(int fd)
{
    struct fdent *e;
    nhwal_resolve();
    return nhwal_g.active && (e = nhwal_fdent(fd)) && e->tracked;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    struct iovec v = { (void *)buf, n };
    return is_tracked(fd) ? tracked_write(fd, &v, 1, 0, 0) : real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    struct iovec v = { (void *)buf, n };
    return is_tracked(fd) ? tracked_write(fd, &v, 1, off, 1) : real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite")));

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    return is_tracked(fd) ? tracked_write(fd, iov, cnt, 0, 0) : real_writev(fd, iov, cnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return is_tracked(fd) ? tracked_write(fd, iov, cnt, off, 1) : real_pwritev(fd, iov, cnt, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
    __attribute__((alias("pwritev")));

/* Every write to a tracked file was persisted in the ring before it returned. */
int fsync(int fd)
{
    return is_tracked(fd) ? 0 : real_fsync(fd);
}

int fdatasync(int fd)
{
    return is_tracked(fd) ? 0 : real_fdatasync(fd);
}

/* ------------------------------------------------------------------------------ metadata */

int ftruncate(int fd, off_t len)
{
    struct fdent *e;
    int r, err;

    if (!is_tracked(fd)) {
        return real_ftruncate(fd, len);
    }
    e = nhwal_fdent(fd);
    wr_lock(&nhwal_g.w.ring);
    nhwal_reresolve();
    r = real_ftruncate(fd, len);
    err = errno;
    if (r == 0 && e->tracked) {
        nhwal_logged_truncate(fd, e->path, len);
    }
    wr_unlock(&nhwal_g.w.ring);
    nhwal_start_flusher();
    errno = err;
    return r;
}

int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));

int truncate(const char *path, off_t len)
{
    char abs[PATH_MAX];
    int r, err;

    nhwal_resolve();
    if (!nhwal_g.active || nhwal_abs_path(AT_FDCWD, path, abs, sizeof(abs)) ||
        !nhwal_matches(abs)) {
        return real_truncate(path, len);
    }
    wr_lock(&nhwal_g.w.ring);
    r = real_truncate(path, len);
    err = errno;
    if (r == 0) {
        nhwal_logged_truncate(-1, abs, len);
    }
    wr_unlock(&nhwal_g.w.ring);
    nhwal_start_flusher();
    errno = err;
    return r;
}

int truncate64(const char *path, off_t len) __attribute__((alias("truncate")));

static int do_rename(int ofd, const char *old, int nfd, const char *new, unsigned flags)
{
    char a[PATH_MAX], b[PATH_MAX];
    int r;

    nhwal_resolve();
    if (nhwal_barrier_at(ofd, old, a, sizeof(a)) || nhwal_barrier_at(nfd, new, b, sizeof(b))) {
        return -1;
    }
    a[0] = b[0] = 0;
    if (nhwal_g.active) {
        if (nhwal_abs_path(ofd, old, a, sizeof(a)) || !nhwal_matches(a)) {
            a[0] = 0;
        }
        if (nhwal_abs_path(nfd, new, b, sizeof(b)) || !nhwal_matches(b)) {
            b[0] = 0;
        }
    }
    r = flags ? real_renameat2(ofd, old, nfd, new, flags) : real_renameat(ofd, old, nfd, new);
    if (nhwal_g.active && r == 0) {
        int err = errno;
        nhwal_renamed();
        if (a[0]) {
            nhwal_sync_parent(a);
        }
        if (b[0]) {
            nhwal_sync_parent(b);
        }
        errno = err;
    }
    return r;
}

int rename(const char *old, const char *new)
{
    return do_rename(AT_FDCWD, old, AT_FDCWD, new, 0);
}

int renameat(int ofd, const char *old, int nfd, const char *new)
{
    return do_rename(ofd, old, nfd, new, 0);
}

int renameat2(int ofd, const char *old, int nfd, const char *new, unsigned flags)
{
    return do_rename(ofd, old, nfd, new, flags);
}

static int do_unlink(int dirfd, const char *path, int flags)
{
    char a[PATH_MAX];
    int r;

    nhwal_resolve();
    if (!(flags & AT_REMOVEDIR) && nhwal_barrier_at(dirfd, path, a, sizeof(a))) {
        return -1;
    }
    a[0] = 0;
    if (nhwal_g.active && !(flags & AT_REMOVEDIR) &&
        (nhwal_abs_path(dirfd, path, a, sizeof(a)) || !nhwal_matches(a))) {
        a[0] = 0;
    }
    r = real_unlinkat(dirfd, path, flags);
    if (nhwal_g.active && r == 0) {
        int err = errno;
        nhwal_renamed();
        if (a[0]) {
            nhwal_sync_parent(a);
        }
        errno = err;
    }
    return r;
}

int unlink(const char *path)
{
    return do_unlink(AT_FDCWD, path, 0);
}

int unlinkat(int dirfd, const char *path, int flags)
{
    return do_unlink(dirfd, path, flags);
}
