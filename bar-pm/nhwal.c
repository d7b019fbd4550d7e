/*
 * nhwal.c - libnhwal.so, a preload library that logs an unmodified database's log files on
 * the BAR1 window of nvme-hybrid (issue 12; guarantees and limits in docs/dblog.md).
 *
 *   LD_PRELOAD=/usr/local/lib/libnhwal.so NHWAL_PATTERN=/mnt/db/pg/pg_wal/0* postgres ...
 *
 * Every write to a tracked file (an absolute path matching one of the colon-separated fnmatch
 * patterns in NHWAL_PATTERN) still goes to the file, and is also appended to the ring named
 * NHWAL_RING (default "wal", made by `nhwal init`) in the window and persisted before the
 * write returns; fsync/fdatasync of a tracked file then return at once.  A background thread
 * (and, when the ring is full, the writer itself) makes the files durable with fdatasync and
 * frees the ring.  The first process since boot replays the ring into the files in its
 * constructor, before the program's main runs.  Truncations are records of the ring too.
 * Renames and unlinks of a file with records in the ring flush the ring first, and are made
 * durable (fsync of the directory) before they return, so that a replay never writes old
 * bytes into a file that was renamed or removed since.
 *
 * On any setup problem (no pattern match possible, no device, no ring, a ring that does not
 * fit) the library says so on stderr and stays out of the way: the block path, fsync a real
 * fsync.
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

#include "nhwal-core.h"

#define MAX_PATTERNS    16
#define FLUSH_POLL_MS   20

static struct {
    int active;
    nhwal w;
    char *patterns[MAX_PATTERNS];
    int npatterns;
    /* per-process fd table (inherited by fork, rebuilt after exec from /proc/self/fd) */
    struct fdent { char *path; uint8_t tracked, append; } *fds;
    size_t nfds;
    size_t fd_hi;           /* every tracked fd is below this */
    pthread_mutex_t fd_lock;
    uint64_t seen_renames;
    /* background flusher */
    pthread_mutex_t flusher_lock;
    int flusher_started;
    uint64_t flush_after_ns;
} g = { .fd_lock = PTHREAD_MUTEX_INITIALIZER, .flusher_lock = PTHREAD_MUTEX_INITIALIZER };

/* Renames and unlinks, counted in the shared control block so that every process re-resolves
 * its tracked descriptors' paths before its next tracked write. */
#define RENAMES (g.w.ctl->renames)

/* ------------------------------------------------------------------------------ real calls */

#define REAL(name) static __typeof__(name) *real_##name
REAL(openat); REAL(close); REAL(write); REAL(pwrite); REAL(writev); REAL(pwritev);
REAL(fsync); REAL(fdatasync); REAL(ftruncate); REAL(truncate); REAL(renameat2);
REAL(rename); REAL(renameat); REAL(unlink); REAL(unlinkat); REAL(dup); REAL(dup2); REAL(dup3);
REAL(fcntl); REAL(fopen); REAL(fopen64);

static void *sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "nhwal: libc has no %s: %s\n", name, dlerror());
        abort();
    }
    return p;
}

static void resolve(void)
{
    if (real_write) {
        return;
    }
    real_openat = sym("openat"); real_close = sym("close");
    real_pwrite = sym("pwrite"); real_writev = sym("writev"); real_pwritev = sym("pwritev");
    real_fsync = sym("fsync"); real_fdatasync = sym("fdatasync");
    real_ftruncate = sym("ftruncate"); real_truncate = sym("truncate");
    real_rename = sym("rename"); real_renameat = sym("renameat");
    real_renameat2 = sym("renameat2");
    real_unlink = sym("unlink"); real_unlinkat = sym("unlinkat");
    real_dup = sym("dup"); real_dup2 = sym("dup2"); real_dup3 = sym("dup3");
    real_fcntl = sym("fcntl"); real_fopen = sym("fopen"); real_fopen64 = sym("fopen64");
    __atomic_store_n(&real_write, sym("write"), __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------------ paths */

/* Absolute, lexically normalized form of @path relative to @dirfd. */
static int abs_path(int dirfd, const char *path, char *out, size_t len)
{
    char buf[2 * PATH_MAX], *comp[PATH_MAX / 2], *save = NULL, *t;
    int n = 0;
    size_t o = 0;

    if (!path || !*path) {
        return -1;
    }
    if (path[0] == '/') {
        snprintf(buf, sizeof(buf), "%s", path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof(base))) {
                return -1;
            }
        } else {
            char link[64];
            ssize_t k;
            snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
            k = readlink(link, base, sizeof(base) - 1);
            if (k <= 0) {
                return -1;
            }
            base[k] = 0;
        }
        snprintf(buf, sizeof(buf), "%s/%s", base, path);
    }
    for (t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, ".")) {
            continue;
        }
        if (!strcmp(t, "..")) {
            n -= n > 0;
            continue;
        }
        comp[n++] = t;
    }
    if (n == 0) {
        snprintf(out, len, "/");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int k = snprintf(out + o, len - o, "/%s", comp[i]);
        if (k < 0 || (size_t)k >= len - o) {
            return -1;
        }
        o += k;
    }
    return 0;
}

static int matches(const char *abs)
{
    for (int i = 0; i < g.npatterns; i++) {
        if (fnmatch(g.patterns[i], abs, FNM_PATHNAME) == 0) {
            return strlen(abs) < WR_PATH_MAX;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------ fd table */

static struct fdent *fdent(int fd)
{
    return fd >= 0 && (size_t)fd < g.nfds ? &g.fds[fd] : NULL;
}

static void track(int fd, const char *abs, int append)
{
    struct fdent *e = fdent(fd);
    char *p;

    if (!e) {
        return;
    }
    p = strdup(abs);
    pthread_mutex_lock(&g.fd_lock);
    free(e->path);
    e->path = p;
    e->append = append;
    e->tracked = p != NULL;
    if ((size_t)fd >= g.fd_hi) {
        g.fd_hi = fd + 1;
    }
    pthread_mutex_unlock(&g.fd_lock);
}

static void untrack(int fd)
{
    struct fdent *e = fdent(fd);

    if (!e || !e->tracked) {
        return;
    }
    pthread_mutex_lock(&g.fd_lock);
    free(e->path);
    e->path = NULL;
    e->tracked = 0;
    pthread_mutex_unlock(&g.fd_lock);
}

static void copy_track(int from, int to)
{
    struct fdent *a = fdent(from);

    if (to < 0) {
        return;
    }
    untrack(to);
    if (a && a->tracked) {
        track(to, a->path, a->append);
    }
}

/* After a rename or unlink anywhere: where does each tracked descriptor point now? */
static void reresolve(void)
{
    uint64_t n = __atomic_load_n(&RENAMES, __ATOMIC_ACQUIRE);

    if (n == g.seen_renames) {
        return;
    }
    g.seen_renames = n;
    for (size_t fd = 0; fd < g.fd_hi; fd++) {
        char link[64], target[PATH_MAX];
        ssize_t k;

        if (!g.fds[fd].tracked) {
            continue;
        }
        snprintf(link, sizeof(link), "/proc/self/fd/%zu", fd);
        k = readlink(link, target, sizeof(target) - 1);
        if (k <= 0) {
            untrack(fd);
            continue;
        }
        target[k] = 0;
        if (k > 10 && !strcmp(target + k - 10, " (deleted)")) {
            untrack(fd);        /* writes to a removed file need no log */
        } else if (strcmp(target, g.fds[fd].path)) {
            if (matches(target)) {
                track(fd, target, g.fds[fd].append);
            } else {
                /* From now on its writes bypass the ring: records of it already there must
                 * never be replayed over them.  (A failed flush leaves it tracked.) */
                if (wr_flush(&g.w.ring) == 0) {
                    untrack(fd);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------------------ flusher */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Flush when a quarter of the ring is used, or when records have waited flush_after_ns. */
static void *flusher(void *arg)
{
    uint64_t since = 0;

    (void)arg;
    for (;;) {
        struct timespec ts = { 0, FLUSH_POLL_MS * 1000000L };
        uint64_t used;

        nanosleep(&ts, NULL);
        used = wr_used(&g.w.ring);
        if (!used) {
            since = 0;
            continue;
        }
        if (!since) {
            since = now_ns();
        }
        if (used >= g.w.ring.data_size / 4 || now_ns() - since >= g.flush_after_ns) {
            int e = wr_flush(&g.w.ring);
            if (e) {
                fprintf(stderr, "nhwal: background flush failed: %s (retrying; appenders "
                        "will wait for space)\n", strerror(-e));
            }
            since = 0;
        }
    }
    return NULL;
}

static void start_flusher(void)
{
    pthread_t t;
    pthread_attr_t a;
    sigset_t all, old;

    if (__atomic_load_n(&g.flusher_started, __ATOMIC_ACQUIRE)) {
        return;
    }
    pthread_mutex_lock(&g.flusher_lock);
    if (!g.flusher_started) {
        /* The thread must never run the program's signal handlers. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 64 * 1024);
        if (pthread_create(&t, &a, flusher, NULL) == 0) {
            __atomic_store_n(&g.flusher_started, 1, __ATOMIC_RELEASE);
        } else {
            fprintf(stderr, "nhwal: no background flusher thread; writers flush when the "
                    "ring is full\n");
            g.flusher_started = 1;
        }
        pthread_attr_destroy(&a);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_mutex_unlock(&g.flusher_lock);
}

static void atfork_prepare(void) { pthread_mutex_lock(&g.fd_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&g.fd_lock); }
static void atfork_child(void)
{
    pthread_mutex_unlock(&g.fd_lock);
    g.flusher_started = 0;      /* threads do not survive fork: start one on the next write */
    pthread_mutex_init(&g.flusher_lock, NULL);
}

/* ------------------------------------------------------------------------------ setup */

static void disable(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "nhwal: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": logging on the block path (fsync is a real fsync)\n");
    g.active = 0;
}

/* The wildcard-free directory a pattern starts with must exist: a misspelt pattern would
 * otherwise track nothing, silently. */
static int pattern_dir_exists(const char *pat, char *dir, size_t len)
{
    size_t cut = strcspn(pat, "*?[");
    struct stat st;

    snprintf(dir, len, "%.*s", (int)cut, pat);
    if (strchr(dir, '/')) {
        *strrchr(dir, '/') = 0;
    }
    if (!dir[0]) {
        snprintf(dir, len, "/");
    }
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

__attribute__((constructor)) static void nhwal_init(void)
{
    const char *pat = getenv("NHWAL_PATTERN"), *ring = getenv("NHWAL_RING");
    const char *ctrl = getenv("NHWAL_CTRL"), *ms = getenv("NHWAL_FLUSH_MS");
    char err[512], *copy, *save = NULL, *t;
    struct rlimit rl;
    DIR *d;
    struct dirent *de;

    resolve();
    if (!pat || !*pat) {
        return;         /* not asked to do anything: the library is inert */
    }
    g.flush_after_ns = (ms && atoi(ms) > 0 ? atoi(ms) : 1000) * 1000000ull;
    copy = strdup(pat);
    for (t = strtok_r(copy, ":", &save); t && g.npatterns < MAX_PATTERNS;
         t = strtok_r(NULL, ":", &save)) {
        char dir[PATH_MAX];
        if (t[0] != '/') {
            disable("NHWAL_PATTERN '%s' is not an absolute path pattern", t);
            return;
        }
        if (!pattern_dir_exists(t, dir, sizeof(dir))) {
            disable("NHWAL_PATTERN '%s' can match nothing: %s is not a directory", t, dir);
            return;
        }
        g.patterns[g.npatterns++] = t;
    }
    if (!g.npatterns) {
        disable("NHWAL_PATTERN '%s' has no pattern", pat);
        return;
    }
    if (nhwal_attach(&g.w, ctrl && *ctrl ? ctrl : NULL, ring && *ring ? ring : "wal", err,
                     sizeof(err))) {
        disable("%s", err);
        return;
    }
    if (g.w.replayed > 0) {
        fprintf(stderr, "nhwal: replayed %ld records (%llu bytes) from ring '%s' into the "
                "files\n", g.w.replayed, (unsigned long long)g.w.replayed_bytes, g.w.name);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max == RLIM_INFINITY ||
        rl.rlim_max > (1u << 20)) {
        rl.rlim_max = 1u << 20;
    }
    g.nfds = rl.rlim_max;
    g.fds = mmap(NULL, g.nfds * sizeof(*g.fds), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (g.fds == MAP_FAILED) {
        disable("no memory for the descriptor table");
        return;
    }
    g.seen_renames = RENAMES;
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    g.active = 1;
    /* Descriptors inherited across exec that point at tracked files. */
    if ((d = opendir("/proc/self/fd"))) {
        while ((de = readdir(d))) {
            char link[300], target[PATH_MAX];
            int fd = atoi(de->d_name);
            ssize_t k;
            struct stat st;
            int fl;
            snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
            k = readlink(link, target, sizeof(target) - 1);
            if (de->d_name[0] == '.' || k <= 0 || fd == dirfd(d)) {
                continue;
            }
            target[k] = 0;
            fl = real_fcntl(fd, F_GETFL);
            if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY && fstat(fd, &st) == 0 &&
                S_ISREG(st.st_mode) && matches(target)) {
                track(fd, target, fl & O_APPEND);
            }
        }
        closedir(d);
    }
}

/* ------------------------------------------------------------------------------ barriers */

/* Before @abs is renamed, removed or cut: records of it in the ring must not be replayed
 * into whatever is at that path later, so make the file durable and free them first. */
static int barrier(const char *abs)
{
    int e;

    if (!wr_pending_has(&g.w.ring, abs)) {
        return 0;
    }
    e = wr_flush(&g.w.ring);
    if (e) {
        errno = -e;
        return -1;
    }
    return 0;
}

static int barrier_at(int dirfd, const char *path, char *abs, size_t len)
{
    if (!g.active || abs_path(dirfd, path, abs, len) || !matches(abs)) {
        return 0;
    }
    return barrier(abs);
}

static void renamed(void)
{
    __atomic_add_fetch(&RENAMES, 1, __ATOMIC_RELEASE);
}

/* The file at @abs (open as @fd, or -1) was cut to @size; the caller holds the order lock.
 * When the ring cannot take the record, make the cut durable the old way. */
static void logged_truncate(int fd, const char *abs, uint64_t size)
{
    int e = wr_append_truncate(&g.w.ring, abs, size);

    if (e) {
        fprintf(stderr, "nhwal: cannot log the truncation of %s in the ring (%s): making it "
                "durable with fdatasync\n", abs, strerror(-e));
        if (fd >= 0) {
            real_fdatasync(fd);
        } else {
            nhwal_sync_path(NULL, abs);
        }
    }
}

/* After a rename or unlink of a tracked path: make the directory change durable now, so
 * that the ring's later records for these names never land on the file's old incarnation. */
static void sync_parent(const char *abs)
{
    char dir[PATH_MAX];
    char *slash;
    long fd;

    snprintf(dir, sizeof(dir), "%s", abs);
    slash = strrchr(dir, '/');
    if (!slash) {
        return;
    }
    if (slash == dir) {
        slash[1] = 0;
    } else {
        *slash = 0;
    }
    fd = syscall(SYS_openat, AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        syscall(SYS_fsync, fd);
        syscall(SYS_close, fd);
    }
}

/* ------------------------------------------------------------------------------ open/close */

static int do_open(int dirfd, const char *path, int flags, mode_t mode)
{
    char abs[PATH_MAX];
    int fd;
    struct stat st;

    resolve();
    if (!g.active || (flags & O_ACCMODE) == O_RDONLY || (flags & O_PATH) ||
        abs_path(dirfd, path, abs, sizeof(abs)) || !matches(abs)) {
        return real_openat(dirfd, path, flags, mode);
    }
    /* O_SYNC / O_DSYNC: each write is durable once in the ring; the file need not be.
     * O_TRUNC: the cut is a record of the ring, between the writes before and after it. */
    if (flags & O_TRUNC) {
        wr_lock(&g.w.ring);
    }
    fd = real_openat(dirfd, path, flags & ~(O_SYNC | O_DSYNC), mode);
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        track(fd, abs, flags & O_APPEND);
        if (flags & O_TRUNC) {
            logged_truncate(fd, abs, 0);
        }
    } else if (fd >= 0 && (flags & (O_SYNC | O_DSYNC))) {
        /* Not a regular file, so not ours: open it again with its own flags. */
        real_close(fd);
        fd = real_openat(dirfd, path, flags & ~(O_CREAT | O_EXCL | O_TRUNC), mode);
    }
    if (flags & O_TRUNC) {
        int e = errno;
        wr_unlock(&g.w.ring);
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
    resolve();
    untrack(fd);
    return real_close(fd);
}

static FILE *do_fopen(FILE *(*real)(const char *, const char *), const char *path,
                      const char *mode)
{
    char abs[PATH_MAX];

    resolve();
    /* stdio writes do not come through write(): a tracked file opened for writing this way
     * is written behind the ring's back, so its records must not be replayed over it. */
    if (g.active && strpbrk(mode, "wa+") && barrier_at(AT_FDCWD, path, abs, sizeof(abs))) {
        return NULL;
    }
    return real(path, mode);
}

FILE *fopen(const char *path, const char *mode) { return do_fopen(real_fopen, path, mode); }
FILE *fopen64(const char *path, const char *mode) { return do_fopen(real_fopen64, path, mode); }

int dup(int fd)
{
    int n;
    resolve();
    n = real_dup(fd);
    if (g.active && n >= 0) {
        copy_track(fd, n);
    }
    return n;
}

int dup2(int fd, int to)
{
    int n;
    resolve();
    n = real_dup2(fd, to);
    if (g.active && n >= 0 && fd != to) {
        copy_track(fd, n);
    }
    return n;
}

int dup3(int fd, int to, int flags)
{
    int n;
    resolve();
    n = real_dup3(fd, to, flags);
    if (g.active && n >= 0) {
        copy_track(fd, n);
    }
    return n;
}

int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    void *arg;
    int r;

    resolve();
    va_start(ap, cmd);
    arg = va_arg(ap, void *);
    va_end(ap);
    r = real_fcntl(fd, cmd, arg);
    if (g.active && r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) {
        copy_track(fd, r);
    }
    if (g.active && r >= 0 && cmd == F_SETFL && fdent(fd) && fdent(fd)->tracked) {
        fdent(fd)->append = ((long)arg & O_APPEND) != 0;
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
    struct fdent *e = fdent(fd);
    ssize_t r;
    off_t off = 0;
    char path[WR_PATH_MAX];
    int append;

    wr_lock(&g.w.ring);
    reresolve();
    if (!e->tracked) {
        wr_unlock(&g.w.ring);
        return positional ? real_pwritev(fd, iov, iovcnt, pos) : real_writev(fd, iov, iovcnt);
    }
    snprintf(path, sizeof(path), "%s", e->path);
    append = e->append;
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
            err = wr_append(&g.w.ring, path, off, iov[i].iov_base, n);
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
                wr_unlock(&g.w.ring);
                errno = e2;
                return -1;
            }
        }
    }
    wr_unlock(&g.w.ring);
    start_flusher();
    return r;
}

static int is_tracked(int fd)
{
    struct fdent *e;
    resolve();
    return g.active && (e = fdent(fd)) && e->tracked;
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
    e = fdent(fd);
    wr_lock(&g.w.ring);
    reresolve();
    r = real_ftruncate(fd, len);
    err = errno;
    if (r == 0 && e->tracked) {
        logged_truncate(fd, e->path, len);
    }
    wr_unlock(&g.w.ring);
    start_flusher();
    errno = err;
    return r;
}

int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));

int truncate(const char *path, off_t len)
{
    char abs[PATH_MAX];
    int r, err;

    resolve();
    if (!g.active || abs_path(AT_FDCWD, path, abs, sizeof(abs)) || !matches(abs)) {
        return real_truncate(path, len);
    }
    wr_lock(&g.w.ring);
    r = real_truncate(path, len);
    err = errno;
    if (r == 0) {
        logged_truncate(-1, abs, len);
    }
    wr_unlock(&g.w.ring);
    start_flusher();
    errno = err;
    return r;
}

int truncate64(const char *path, off_t len) __attribute__((alias("truncate")));

static int do_rename(int ofd, const char *old, int nfd, const char *new, unsigned flags)
{
    char a[PATH_MAX], b[PATH_MAX];
    int r;

    resolve();
    if (barrier_at(ofd, old, a, sizeof(a)) || barrier_at(nfd, new, b, sizeof(b))) {
        return -1;
    }
    a[0] = b[0] = 0;
    if (g.active) {
        if (abs_path(ofd, old, a, sizeof(a)) || !matches(a)) {
            a[0] = 0;
        }
        if (abs_path(nfd, new, b, sizeof(b)) || !matches(b)) {
            b[0] = 0;
        }
    }
    r = flags ? real_renameat2(ofd, old, nfd, new, flags) : real_renameat(ofd, old, nfd, new);
    if (g.active && r == 0) {
        int err = errno;
        renamed();
        if (a[0]) {
            sync_parent(a);
        }
        if (b[0]) {
            sync_parent(b);
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

    resolve();
    if (!(flags & AT_REMOVEDIR) && barrier_at(dirfd, path, a, sizeof(a))) {
        return -1;
    }
    a[0] = 0;
    if (g.active && !(flags & AT_REMOVEDIR) &&
        (abs_path(dirfd, path, a, sizeof(a)) || !matches(a))) {
        a[0] = 0;
    }
    r = real_unlinkat(dirfd, path, flags);
    if (g.active && r == 0) {
        int err = errno;
        renamed();
        if (a[0]) {
            sync_parent(a);
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
