/*
 * test-walring.c - the database log ring (bar-pm/walring.c) on the host: a shared mmap of a
 * file stands in for the BAR1 window, another for the control block in /dev/shm.
 *
 * The "disk" is modeled: each log file has a live copy (the page cache: every write lands
 * there) and a durable copy (what survives a power cut), updated only by the ring's sync
 * callback, as fdatasync would.  A power cut throws the live copies and the control block away;
 * the replay must then rebuild every acknowledged write from the durable copies and the ring.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "walring.h"

typedef struct fx {
    char dir[256];
    uint8_t *win;
    size_t win_size;
    wr_ctl *ctl;
    walring r;
} fx;

static uint64_t persists;
static int fail_syncs;      /* make the next sync callbacks fail */

static void persist(void *ctx)
{
    (void)ctx;
    __sync_synchronize();
    __atomic_add_fetch(&persists, 1, __ATOMIC_RELAXED);
}

static void *map_file(const char *path, size_t size)
{
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    void *p;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, size), ==, 0);
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_assert_true(p != MAP_FAILED);
    close(fd);
    return p;
}

/* "live/NAME" -> "durable/NAME" */
static char *durable_of(const char *live)
{
    char *d = g_strdup(live), *p = strstr(d, "/live/");
    char *r;

    g_assert_nonnull(p);
    *p = 0;
    r = g_strdup_printf("%s/durable/%s", d, p + 6);
    g_free(d);
    return r;
}

static int copy_file(const char *from, const char *to)
{
    gchar *data;
    gsize len;
    GError *err = NULL;

    if (!g_file_get_contents(from, &data, &len, &err)) {
        int e = err->code == G_FILE_ERROR_NOENT ? -ENOENT : -EIO;
        g_error_free(err);
        return e;
    }
    g_assert_true(g_file_set_contents(to, data, len, NULL));
    g_free(data);
    return 0;
}

/* fdatasync, modeled: the live file becomes the durable one. */
static int sync_cb(void *ctx, const char *path)
{
    char *d;
    int e;

    (void)ctx;
    if (fail_syncs > 0) {
        fail_syncs--;
        return -EIO;
    }
    d = durable_of(path);
    e = copy_file(path, d);
    g_free(d);
    return e;
}

static int apply_cb(void *ctx, const char *path, uint64_t off, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0600);

    (void)ctx;
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pwrite(fd, buf, len, off), ==, (ssize_t)len);
    close(fd);
    return 0;
}

static int truncate_cb(void *ctx, const char *path, uint64_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0600);

    (void)ctx;
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, size), ==, 0);
    close(fd);
    return 0;
}

static void fx_setup(fx *f, size_t ring)
{
    char *p;

    snprintf(f->dir, sizeof(f->dir), "%s/walring-XXXXXX", g_get_tmp_dir());
    g_assert_nonnull(mkdtemp(f->dir));
    p = g_strdup_printf("%s/live", f->dir);
    g_assert_cmpint(mkdir(p, 0700), ==, 0);
    g_free(p);
    p = g_strdup_printf("%s/durable", f->dir);
    g_assert_cmpint(mkdir(p, 0700), ==, 0);
    g_free(p);
    f->win_size = ring + 8192;
    p = g_strdup_printf("%s/window", f->dir);
    f->win = map_file(p, f->win_size);
    g_free(p);
    /* The ring sits 4 KiB into the "window", as it would beside another entry. */
    g_assert_cmpint(wr_format(f->win + 4096, ring, "test", persist, NULL), ==, 0);
    p = g_strdup_printf("%s/ctl", f->dir);
    f->ctl = map_file(p, sizeof(wr_ctl));
    g_free(p);
    g_assert_cmpint(wr_ctl_init(f->ctl, ring - WR_SB_SIZE), ==, 0);
    wr_bind(&f->r, f->win + 4096, ring, f->ctl, persist, sync_cb, f);
    g_assert_cmpint(wr_replay(&f->r, apply_cb, truncate_cb, NULL), ==, 0);
}

static char *live(fx *f, const char *name)
{
    return g_strdup_printf("%s/live/%s", f->dir, name);
}

/* What the interposer does for one write: file, then ring, under the order lock. */
static void logged_write(walring *r, int fd, const char *path, uint64_t off, const void *buf,
                         size_t len)
{
    wr_lock(r);
    g_assert_cmpint(pwrite(fd, buf, len, off), ==, (ssize_t)len);
    g_assert_cmpint(wr_append(r, path, off, buf, len), ==, 0);
    wr_unlock(r);
}

/* Power cut: the page cache (live files) and the control block are gone; the next start
 * replays.  Returns the number of records replayed. */
static long power_cut_and_replay(fx *f, const char *const *names, int n)
{
    long rec;

    for (int i = 0; i < n; i++) {
        char *l = live(f, names[i]), *d = durable_of(l);
        unlink(l);
        if (access(d, F_OK) == 0) {
            g_assert_cmpint(copy_file(d, l), ==, 0);
        }
        g_free(l);
        g_free(d);
    }
    memset(f->ctl, 0xa5, sizeof(*f->ctl));
    g_assert_cmpint(wr_ctl_init(f->ctl, f->r.data_size), ==, 0);
    rec = wr_replay(&f->r, apply_cb, truncate_cb, NULL);
    g_assert_cmpint(rec, >=, 0);
    return rec;
}

static GBytes *read_file(const char *path)
{
    gchar *data = NULL;
    gsize len = 0;

    if (!g_file_get_contents(path, &data, &len, NULL)) {
        return g_bytes_new(NULL, 0);
    }
    return g_bytes_new_take(data, len);
}

static void assert_same(fx *f, const char *name, GBytes *want)
{
    char *l = live(f, name);
    GBytes *got = read_file(l);

    if (!g_bytes_equal(got, want)) {
        g_error("%s: %zu bytes after replay, %zu acknowledged", name, g_bytes_get_size(got),
                g_bytes_get_size(want));
    }
    g_bytes_unref(got);
    g_free(l);
}

/* One writer's work: appends of random length, and rewrites of earlier ranges (as
 * PostgreSQL rewrites a WAL page's tail). */
static void writer(walring *r, const char *path, unsigned seed, int writes)
{
    GRand *rnd = g_rand_new_with_seed(seed);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    uint8_t buf[3000];
    uint64_t size = 0;

    g_assert_cmpint(fd, >=, 0);
    for (int i = 0; i < writes; i++) {
        size_t len = g_rand_int_range(rnd, 1, sizeof(buf));
        uint64_t off = size;
        for (size_t k = 0; k < len; k++) {
            buf[k] = g_rand_int(rnd);
        }
        if (size > 4096 && g_rand_int_range(rnd, 0, 4) == 0) {
            off = g_rand_int_range(rnd, 0, size - 1);
        }
        logged_write(r, fd, path, off, buf, len);
        if (off + len > size) {
            size = off + len;
        }
    }
    close(fd);
    g_rand_free(rnd);
}

typedef struct targ { walring *r; char *path; unsigned seed; } targ;

static void *writer_thread(void *a)
{
    targ *t = a;
    writer(t->r, t->path, t->seed, 400);
    return NULL;
}

/* Check that each file after a power cut and replay holds exactly its live content before. */
static void cut_and_check(fx *f, const char *const *names, int n, long *replayed)
{
    GBytes **want = g_new(GBytes *, n);

    for (int i = 0; i < n; i++) {
        char *l = live(f, names[i]);
        want[i] = read_file(l);
        g_free(l);
    }
    *replayed = power_cut_and_replay(f, names, n);
    for (int i = 0; i < n; i++) {
        assert_same(f, names[i], want[i]);
        g_bytes_unref(want[i]);
    }
    g_free(want);
}

static void test_threads(void)
{
    static const char *const names[] = { "t0", "t1", "t2", "t3" };
    fx f;
    pthread_t th[4];
    targ a[4];
    long rec;

    fx_setup(&f, 256 * 1024);
    for (int i = 0; i < 4; i++) {
        a[i] = (targ){ &f.r, live(&f, names[i]), 100 + i };
        pthread_create(&th[i], NULL, writer_thread, &a[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        g_free(a[i].path);
    }
    /* 1600 writes of 1.5 KB on average: the log is ~10x the ring, which had to wrap. */
    g_assert_cmpuint(f.ctl->append_bytes, >, 8 * f.r.data_size);
    g_assert_cmpuint(f.ctl->flushes, >, 5);
    g_assert_cmpuint(f.ctl->full_waits, >, 0);
    cut_and_check(&f, names, 4, &rec);
    g_assert_cmpint(rec, >, 0);
}

static void test_processes(void)
{
    static const char *const names[] = { "p0", "p1", "p2" };
    fx f;
    pid_t pid[3];
    long rec;

    fx_setup(&f, 128 * 1024);
    for (int i = 0; i < 3; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            char *p = live(&f, names[i]);
            writer(&f.r, p, 200 + i, 300);
            _exit(0);
        }
    }
    for (int i = 0; i < 3; i++) {
        int st;
        g_assert_cmpint(waitpid(pid[i], &st, 0), ==, pid[i]);
        g_assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    g_assert_cmpuint(f.ctl->appends, ==, 900);
    g_assert_cmpuint(f.ctl->flushes, >, 3);
    cut_and_check(&f, names, 3, &rec);
    g_assert_cmpint(rec, >, 0);
}

/* One write far larger than the ring: split into records, flushed as it goes, nothing lost. */
static void test_larger_than_ring(void)
{
    static const char *const names[] = { "big" };
    fx f;
    size_t len = 1 << 20;
    uint8_t *buf = g_malloc(len);
    char *p;
    int fd;
    long rec;

    fx_setup(&f, WR_MIN_SIZE);
    for (size_t i = 0; i < len; i++) {
        buf[i] = i * 7 + (i >> 12);
    }
    p = live(&f, "big");
    fd = open(p, O_WRONLY | O_CREAT, 0600);
    logged_write(&f.r, fd, p, 0, buf, len);
    logged_write(&f.r, fd, p, len, "tail", 4);
    close(fd);
    g_assert_cmpuint(f.ctl->appends, >=, len / (WR_MIN_SIZE / 4));
    cut_and_check(&f, names, 1, &rec);
    g_assert_cmpint(rec, >, 0);
    g_free(p);
    g_free(buf);
}

/* A process killed after its record's stores and before the barrier: its write was never
 * acknowledged; the head did not move; the next appender (after the robust lock reports the
 * dead owner) overwrites the torn record and everything after it is replayed. */
static int torn;
static size_t torn_path_len;
static void die_after_store(void *ctx)
{
    fx *f = ctx;
    if (torn) {
        /* Only part of the stores reached the window: damage a payload byte. */
        volatile uint8_t *rec = f->r.base + WR_SB_SIZE + f->ctl->head % f->r.data_size;
        rec[64 + torn_path_len + 10] ^= 0xff;
    }
    _exit(9);
}

static void kill_between_store_and_barrier(int torn_record, int later_writes)
{
    static const char *const names[] = { "k", "after" };
    fx f;
    pid_t pid;
    int st;
    char *pk, *pa;
    uint8_t acked[4096], buf[1500];
    long rec;
    int fd;

    fx_setup(&f, 1 << 20);
    pk = live(&f, "k");
    pa = live(&f, "after");
    memset(acked, 'a', sizeof(acked));
    torn = torn_record;
    torn_path_len = strlen(pk);
    pid = fork();
    if (pid == 0) {
        int kfd = open(pk, O_WRONLY | O_CREAT, 0600);
        logged_write(&f.r, kfd, pk, 0, acked, sizeof(acked));    /* acknowledged */
        f.r.after_store = die_after_store;
        f.r.ctx = &f;
        memset(buf, 'x', sizeof(buf));
        logged_write(&f.r, kfd, pk, sizeof(acked), buf, sizeof(buf));   /* dies inside */
        _exit(0);
    }
    g_assert_cmpint(waitpid(pid, &st, 0), ==, pid);
    g_assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 9);
    g_assert_cmpuint(f.ctl->appends, ==, 1);
    /* Another process goes on: the lock comes back (EOWNERDEAD) and its records follow. */
    fd = open(pa, O_WRONLY | O_CREAT, 0600);
    for (int i = 0; i < later_writes; i++) {
        memset(buf, 'A' + i, 100);
        logged_write(&f.r, fd, pa, i * 100, buf, 100);
    }
    close(fd);
    {
        char *l = live(&f, "after");
        GBytes *want = read_file(l);
        gsize klen;
        const uint8_t *k;
        GBytes *kb;

        rec = power_cut_and_replay(&f, names, 2);
        assert_same(&f, "after", want);
        g_bytes_unref(want);
        /* k: the acknowledged 4 KiB exactly; the unacknowledged write is not there (its file
         * write never became durable and its record was overwritten). */
        kb = read_file(pk);
        k = g_bytes_get_data(kb, &klen);
        g_assert_cmpuint(klen, >=, sizeof(acked));
        g_assert_cmpint(memcmp(k, acked, sizeof(acked)), ==, 0);
        if (later_writes || torn_record) {
            g_assert_cmpuint(klen, ==, sizeof(acked));
        } else {
            /* Complete but unacknowledged, nothing after it: replayed whole (allowed). */
            g_assert_cmpuint(klen, ==, sizeof(acked) + sizeof(buf));
            for (size_t i = 0; i < sizeof(buf); i++) {
                g_assert_cmpint(k[sizeof(acked) + i], ==, 'x');
            }
        }
        g_bytes_unref(kb);
        g_free(l);
    }
    g_assert_cmpint(rec, ==, 1 + later_writes + (!later_writes && !torn_record));
    g_free(pk);
    g_free(pa);
}

static void test_kill_complete(void) { kill_between_store_and_barrier(0, 20); }
static void test_kill_torn(void) { kill_between_store_and_barrier(1, 20); }
static void test_kill_complete_last(void) { kill_between_store_and_barrier(0, 0); }
static void test_kill_torn_last(void) { kill_between_store_and_barrier(1, 0); }

/* A flush that fails frees nothing and drops nothing: the appender gets the error, and what
 * was acknowledged before is still replayed. */
static void test_flush_failure(void)
{
    static const char *const names[] = { "f" };
    fx f;
    char *p;
    uint8_t buf[4000];
    int fd, e = 0, n = 0;
    long rec;

    fx_setup(&f, WR_MIN_SIZE);
    p = live(&f, "f");
    fd = open(p, O_WRONLY | O_CREAT, 0600);
    memset(buf, 'f', sizeof(buf));
    fail_syncs = 1000000;
    for (; n < 100 && !e; n++) {
        wr_lock(&f.r);
        g_assert_cmpint(pwrite(fd, buf, sizeof(buf), n * sizeof(buf)), ==, sizeof(buf));
        e = wr_append(&f.r, p, n * sizeof(buf), buf, sizeof(buf));
        wr_unlock(&f.r);
    }
    fail_syncs = 0;
    g_assert_cmpint(e, ==, -EIO);
    g_assert_cmpint(n, >, 5);
    /* The failed append's bytes are in the live file only; cut to what was acknowledged. */
    g_assert_cmpint(ftruncate(fd, (n - 1) * sizeof(buf)), ==, 0);
    close(fd);
    cut_and_check(&f, names, 1, &rec);
    g_assert_cmpint(rec, ==, n - 1);
    g_free(p);
}

/* A truncation between writes, after the longer file was made durable: the replay cuts it
 * where the program did, and the writes after the cut land as they did. */
/* The caller's buffer changes while it is being logged (PostgreSQL writes the WAL page it is
 * still inserting into, from shared memory: the bytes past what it needs durable change under
 * the write).  Every record must still be whole and valid, so that the replay goes past it. */
typedef struct mut { uint8_t *page; volatile int running, stop; } mut;

static void *mutator(void *a)
{
    mut *m = a;
    for (uint8_t v = 0; !m->stop; v++) {
        memset(m->page + 2048, v, 2048);
        m->running = 1;
    }
    return NULL;
}

static void test_buffer_changing_under_append(void)
{
    static const char *const names[] = { "wal" };
    static uint8_t page[4096];
    mut m = { page, 0, 0 };
    pthread_t t;
    fx f;
    char *path;
    int fd, records = 1000;

    fx_setup(&f, 8 << 20);
    path = live(&f, "wal");
    fd = open(path, O_WRONLY | O_CREAT, 0600);
    g_assert_cmpint(fd, >=, 0);
    memset(page, 'w', 2048);
    pthread_create(&t, NULL, mutator, &m);
    while (!m.running) {
        sched_yield();
    }
    for (int i = 0; i < records; i++) {
        logged_write(&f.r, fd, path, (uint64_t)i * sizeof(page), page, sizeof(page));
    }
    m.stop = 1;
    pthread_join(t, NULL);
    close(fd);
    g_assert_cmpint(power_cut_and_replay(&f, names, 1), ==, records);
    g_free(path);
}

static void test_truncate(void)
{
    static const char *const names[] = { "cut" };
    fx f;
    char *p;
    int fd;
    long rec;
    uint8_t buf[1000];

    fx_setup(&f, WR_MIN_SIZE);
    p = live(&f, "cut");
    fd = open(p, O_WRONLY | O_CREAT, 0600);
    memset(buf, 'L', sizeof(buf));
    logged_write(&f.r, fd, p, 0, buf, sizeof(buf));
    g_assert_cmpint(wr_flush(&f.r), ==, 0);        /* the 1000 bytes are durable */
    wr_lock(&f.r);
    g_assert_cmpint(ftruncate(fd, 100), ==, 0);
    g_assert_cmpint(wr_append_truncate(&f.r, p, 100), ==, 0);
    wr_unlock(&f.r);
    logged_write(&f.r, fd, p, 200, "after", 5);
    close(fd);
    cut_and_check(&f, names, 1, &rec);
    g_assert_cmpint(rec, ==, 2);
    g_free(p);
}

/* Records an earlier ring left in the memory are never replayed by a new one. */
static void test_reformat(void)
{
    static const char *const names[] = { "old" };
    fx f;
    char *p;
    int fd;
    long rec;
    uint8_t buf[200];

    fx_setup(&f, WR_MIN_SIZE);
    p = live(&f, "old");
    fd = open(p, O_WRONLY | O_CREAT, 0600);
    memset(buf, 'o', sizeof(buf));
    for (int i = 0; i < 50; i++) {
        logged_write(&f.r, fd, p, i * sizeof(buf), buf, sizeof(buf));
    }
    close(fd);
    g_assert_cmpint(wr_format(f.win + 4096, WR_MIN_SIZE, "test", persist, NULL), ==, 0);
    unlink(p);
    rec = power_cut_and_replay(&f, names, 1);
    g_assert_cmpint(rec, ==, 0);
    g_assert_cmpint(access(p, F_OK), ==, -1);
    g_free(p);
}

static void test_bad_superblock(void)
{
    uint8_t *mem = g_malloc0(WR_MIN_SIZE);
    char err[200];

    g_assert_cmpint(wr_check(mem, WR_MIN_SIZE, err, sizeof(err)), ==, -EINVAL);
    g_assert_nonnull(strstr(err, "no ring"));
    g_assert_cmpint(wr_format(mem, WR_MIN_SIZE - 64, "x", persist, NULL), ==, -EINVAL);
    g_assert_cmpint(wr_format(mem, WR_MIN_SIZE, "x", persist, NULL), ==, 0);
    g_assert_cmpint(wr_check(mem, WR_MIN_SIZE, err, sizeof(err)), ==, 0);
    g_assert_cmpint(wr_check(mem, WR_MIN_SIZE - 4096, err, sizeof(err)), ==, -EINVAL);
    g_assert_nonnull(strstr(err, "does not fit"));
    mem[20] ^= 1;
    g_assert_cmpint(wr_check(mem, WR_MIN_SIZE, err, sizeof(err)), ==, -EINVAL);
    g_assert_nonnull(strstr(err, "damaged"));
    g_free(mem);
}

/* The CRC-32C check value of "123456789" (the catalogue's 0xE3069283) on both paths, and the
 * two paths in agreement on random buffers at every alignment, in pieces as records are
 * summed (header, path, payload). */
static void test_crc32c(void)
{
    GRand *rnd = g_rand_new_with_seed(12);
    uint8_t buf[4096 + 16];

    g_assert_cmphex(wr_crc32c(0, "123456789", 9), ==, 0xe3069283);
    g_assert_cmphex(wr_crc32c_portable(0, "123456789", 9), ==, 0xe3069283);
    g_assert_cmphex(wr_crc32c(0, "", 0), ==, 0);
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (uint8_t)g_rand_int(rnd);
    }
    for (int k = 0; k < 2000; k++) {
        size_t off = g_rand_int_range(rnd, 0, 16);
        size_t len = g_rand_int_range(rnd, 0, 4097);
        size_t cut = g_rand_int_range(rnd, 0, (int)len + 1);
        uint32_t want = wr_crc32c_portable(0, buf + off, len);

        g_assert_cmphex(wr_crc32c(0, buf + off, len), ==, want);
        g_assert_cmphex(wr_crc32c(wr_crc32c(0, buf + off, cut), buf + off + cut, len - cut),
                        ==, want);
    }
    g_rand_free(rnd);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/walring/crc32c", test_crc32c);
    g_test_add_func("/walring/threads", test_threads);
    g_test_add_func("/walring/processes", test_processes);
    g_test_add_func("/walring/larger-than-ring", test_larger_than_ring);
    g_test_add_func("/walring/kill-after-store", test_kill_complete);
    g_test_add_func("/walring/kill-torn-store", test_kill_torn);
    g_test_add_func("/walring/kill-after-store-last", test_kill_complete_last);
    g_test_add_func("/walring/kill-torn-store-last", test_kill_torn_last);
    g_test_add_func("/walring/flush-failure", test_flush_failure);
    g_test_add_func("/walring/buffer-changing", test_buffer_changing_under_append);
    g_test_add_func("/walring/truncate", test_truncate);
    g_test_add_func("/walring/reformat", test_reformat);
    g_test_add_func("/walring/bad-superblock", test_bad_superblock);
    return g_test_run();
}
