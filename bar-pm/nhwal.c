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

#include "nhwal-priv.h"

#define FLUSH_POLL_MS   20

struct nhwal_state nhwal_g = { .fd_lock = PTHREAD_MUTEX_INITIALIZER,
                              .flusher_lock = PTHREAD_MUTEX_INITIALIZER };

/* Renames and unlinks, counted in the shared control block so that every process re-resolves
 * its tracked descriptors' paths before its next tracked write. */
#define RENAMES (nhwal_g.w.ctl->renames)

/* ------------------------------------------------------------------------------ real calls */

#define REAL(name) __typeof__(name) *real_##name
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

void nhwal_resolve(void)
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
int nhwal_abs_path(int dirfd, const char *path, char *out, size_t len)
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

int nhwal_matches(const char *abs)
{
    for (int i = 0; i < nhwal_g.npatterns; i++) {
        if (fnmatch(nhwal_g.patterns[i], abs, FNM_PATHNAME) == 0) {
            return strlen(abs) < WR_PATH_MAX;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------ fd table */

struct fdent *nhwal_fdent(int fd)
{
    return fd >= 0 && (size_t)fd < nhwal_g.nfds ? &nhwal_g.fds[fd] : NULL;
}

void nhwal_track(int fd, const char *abs)
{
    struct fdent *e = nhwal_fdent(fd);
    char *p;

    if (!e) {
        return;
    }
    p = strdup(abs);
    pthread_mutex_lock(&nhwal_g.fd_lock);
    free(e->path);
    e->path = p;
    e->tracked = p != NULL;
    if ((size_t)fd >= nhwal_g.fd_hi) {
        nhwal_g.fd_hi = fd + 1;
    }
    pthread_mutex_unlock(&nhwal_g.fd_lock);
}

void nhwal_untrack(int fd)
{
    struct fdent *e = nhwal_fdent(fd);

    if (!e || !e->tracked) {
        return;
    }
    pthread_mutex_lock(&nhwal_g.fd_lock);
    free(e->path);
    e->path = NULL;
    e->tracked = 0;
    pthread_mutex_unlock(&nhwal_g.fd_lock);
}

void nhwal_copy_track(int from, int to)
{
    struct fdent *a = nhwal_fdent(from);

    if (to < 0) {
        return;
    }
    nhwal_untrack(to);
    if (a && a->tracked) {
        nhwal_track(to, a->path);
    }
}

/* After a rename or unlink anywhere: where does each tracked descriptor point now? */
void nhwal_reresolve(void)
{
    uint64_t n = __atomic_load_n(&RENAMES, __ATOMIC_ACQUIRE);

    if (n == nhwal_g.seen_renames) {
        return;
    }
    nhwal_g.seen_renames = n;
    for (size_t fd = 0; fd < nhwal_g.fd_hi; fd++) {
        char link[64], target[PATH_MAX];
        ssize_t k;

        if (!nhwal_g.fds[fd].tracked) {
            continue;
        }
        snprintf(link, sizeof(link), "/proc/self/fd/%zu", fd);
        k = readlink(link, target, sizeof(target) - 1);
        if (k <= 0) {
            nhwal_untrack(fd);
            continue;
        }
        target[k] = 0;
        if (k > 10 && !strcmp(target + k - 10, " (deleted)")) {
            nhwal_untrack(fd);        /* writes to a removed file need no log */
        } else if (strcmp(target, nhwal_g.fds[fd].path)) {
            if (nhwal_matches(target)) {
                nhwal_track(fd, target);
            } else {
                /* From now on its writes bypass the ring: records of it already there must
                 * never be replayed over them.  (A failed flush leaves it tracked.) */
                if (wr_flush(&nhwal_g.w.ring) == 0) {
                    nhwal_untrack(fd);
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
        used = wr_used(&nhwal_g.w.ring);
        if (!used) {
            since = 0;
            continue;
        }
        if (!since) {
            since = now_ns();
        }
        if (used >= nhwal_g.w.ring.data_size / 4 || now_ns() - since >= nhwal_g.flush_after_ns) {
            int e = wr_flush(&nhwal_g.w.ring);
            if (e) {
                fprintf(stderr, "nhwal: background flush failed: %s (retrying; appenders "
                        "will wait for space)\n", strerror(-e));
            }
            since = 0;
        }
    }
    return NULL;
}

void nhwal_start_flusher(void)
{
    pthread_t t;
    pthread_attr_t a;
    sigset_t all, old;

    if (__atomic_load_n(&nhwal_g.flusher_started, __ATOMIC_ACQUIRE)) {
        return;
    }
    pthread_mutex_lock(&nhwal_g.flusher_lock);
    if (!nhwal_g.flusher_started) {
        /* The thread must never run the program's signal handlers. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 64 * 1024);
        if (pthread_create(&t, &a, flusher, NULL) == 0) {
            __atomic_store_n(&nhwal_g.flusher_started, 1, __ATOMIC_RELEASE);
        } else {
            fprintf(stderr, "nhwal: no background flusher thread; writers flush when the "
                    "ring is full\n");
            nhwal_g.flusher_started = 1;
        }
        pthread_attr_destroy(&a);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_mutex_unlock(&nhwal_g.flusher_lock);
}

static void atfork_prepare(void) { pthread_mutex_lock(&nhwal_g.fd_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&nhwal_g.fd_lock); }
static void atfork_child(void)
{
    pthread_mutex_unlock(&nhwal_g.fd_lock);
    nhwal_g.flusher_started = 0;      /* threads do not survive fork: start one on the next write */
    pthread_mutex_init(&nhwal_g.flusher_lock, NULL);
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
    nhwal_g.active = 0;
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

    nhwal_resolve();
    if (!pat || !*pat) {
        return;         /* not asked to do anything: the library is inert */
    }
    nhwal_g.flush_after_ns = (ms && atoi(ms) > 0 ? atoi(ms) : 1000) * 1000000ull;
    copy = strdup(pat);
    for (t = strtok_r(copy, ":", &save); t && nhwal_g.npatterns < MAX_PATTERNS;
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
        nhwal_g.patterns[nhwal_g.npatterns++] = t;
    }
    if (!nhwal_g.npatterns) {
        disable("NHWAL_PATTERN '%s' has no pattern", pat);
        return;
    }
    if (nhwal_attach(&nhwal_g.w, ctrl && *ctrl ? ctrl : NULL, ring && *ring ? ring : "wal", err,
                     sizeof(err))) {
        disable("%s", err);
        return;
    }
    if (nhwal_g.w.replayed > 0) {
        fprintf(stderr, "nhwal: replayed %ld records (%llu bytes) from ring '%s' into the "
                "files\n", nhwal_g.w.replayed, (unsigned long long)nhwal_g.w.replayed_bytes,
                nhwal_g.w.name);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max == RLIM_INFINITY ||
        rl.rlim_max > (1u << 20)) {
        rl.rlim_max = 1u << 20;
    }
    nhwal_g.nfds = rl.rlim_max;
    nhwal_g.fds = mmap(NULL, nhwal_g.nfds * sizeof(*nhwal_g.fds), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (nhwal_g.fds == MAP_FAILED) {
        disable("no memory for the descriptor table");
        return;
    }
    nhwal_g.seen_renames = RENAMES;
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    nhwal_g.active = 1;
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
                S_ISREG(st.st_mode) && nhwal_matches(target)) {
                nhwal_track(fd, target);
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

    if (!wr_pending_has(&nhwal_g.w.ring, abs)) {
        return 0;
    }
    e = wr_flush(&nhwal_g.w.ring);
    if (e) {
        errno = -e;
        return -1;
    }
    return 0;
}

int nhwal_barrier_at(int dirfd, const char *path, char *abs, size_t len)
{
    if (!nhwal_g.active || nhwal_abs_path(dirfd, path, abs, len) || !nhwal_matches(abs)) {
        return 0;
    }
    return barrier(abs);
}

void nhwal_renamed(void)
{
    __atomic_add_fetch(&RENAMES, 1, __ATOMIC_RELEASE);
}

/* The file at @abs (open as @fd, or -1) was cut to @size; the caller holds the order lock.
 * When the ring cannot take the record, make the cut durable the old way. */
void nhwal_logged_truncate(int fd, const char *abs, uint64_t size)
{
    int e = wr_append_truncate(&nhwal_g.w.ring, abs, size);

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
void nhwal_sync_parent(const char *abs)
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
