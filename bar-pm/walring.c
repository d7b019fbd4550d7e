/* walring.c - the write-through redo ring (format, append, flush, replay); see walring.h and
 * docs/dblog.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "walring.h"

#define SB_MAGIC        0x31475241574c4148ull    /* "HALWARG1" little endian */
#define SB_VERSION      1u
#define SB_TAIL_OFF     64u                     /* the persisted tail, its own 8-byte word */
#define REC_MAGIC       0x5257484eu             /* "NHWR" */
#define REC_HDR         64u
#define REC_WRITE       1u
#define REC_PAD         2u
#define REC_TRUNC       3u                      /* the file's size became off */
#define CTL_MAGIC       0x314c54434c41574eull   /* "NWALCTL1" */

/* Superblock, bytes 0-63 (the tail lives at 64). */
typedef struct sb {
    uint64_t magic;
    uint32_t version;
    uint32_t crc;           /* CRC-32C of these 64 bytes with crc = 0 */
    uint64_t size;
    uint64_t data_size;
    char name[16];          /* which ring (several may share a window) */
    uint8_t zero[16];
} sb;

typedef struct rec {
    uint32_t magic;
    uint16_t type;
    uint16_t path_len;
    uint64_t pos;
    uint64_t off;
    uint32_t len;
    uint32_t crc;           /* CRC-32C of header (crc = 0), path and payload */
    uint32_t total;         /* bytes of the record, padded to 64 */
    uint8_t zero[28];
} rec;

_Static_assert(sizeof(sb) == 64 && sizeof(rec) == REC_HDR, "layout");

/* ------------------------------------------------------------------------------ CRC-32C */

/* Every byte a database logs is checksummed here, so the CRC is most of what an append costs
 * the guest's CPU beside the copy: the byte-wise table loop takes 8 instructions a byte, 75,000
 * for a PostgreSQL commit's 9 KiB of WAL pages.  SSE4.2's crc32 instruction computes the same
 * CRC-32C (Castagnoli, reflected) 8 bytes at a time; the table loop is kept for CPUs without it
 * (QEMU's default qemu64 model among them). */

static uint32_t crc_table[256];
static uint32_t (*crc_update)(uint32_t crc, const uint8_t *p, size_t len);
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static uint32_t crc_update_table(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len--) {
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

__attribute__((target("sse4.2")))
static uint32_t crc_update_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = crc;

    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
    }
    for (; len; len--) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    }
    return (uint32_t)c;
}

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        }
        crc_table[i] = c;
    }
    __builtin_cpu_init();
    crc_update = __builtin_cpu_supports("sse4.2") ? crc_update_sse42 : crc_update_table;
}

uint32_t wr_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return ~crc_update(~crc, buf, len);
}

uint32_t wr_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return ~crc_update_table(~crc, buf, len);
}

/* ------------------------------------------------------------------------------ memory */

/* Stores into the persistent region: 8 bytes at a time where aligned, volatile so the compiler
 * keeps them plain stores (the CPU's write-combining buffers merge them). */
static void pm_store(volatile uint8_t *d, const void *src, size_t len)
{
    const uint8_t *s = src;

    while (len && ((uintptr_t)d & 7)) {
        *d++ = *s++;
        len--;
    }
    for (; len >= 8; len -= 8, d += 8, s += 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        *(volatile uint64_t *)d = v;
    }
    while (len--) {
        *d++ = *s++;
    }
}

static void pm_load(void *dst, const volatile uint8_t *s, size_t len)
{
    uint8_t *d = dst;

    while (len && ((uintptr_t)s & 7)) {
        *d++ = *s++;
        len--;
    }
    for (; len >= 8; len -= 8, d += 8, s += 8) {
        uint64_t v = *(const volatile uint64_t *)s;
        memcpy(d, &v, 8);
    }
    while (len--) {
        *d++ = *s++;
    }
}

static uint64_t align64(uint64_t v)
{
    return (v + 63) & ~(uint64_t)63;
}

static volatile uint64_t *sb_tail(const walring *r)
{
    return (volatile uint64_t *)(r->base + SB_TAIL_OFF);
}

static volatile uint8_t *at(const walring *r, uint64_t pos)
{
    return r->base + WR_SB_SIZE + pos % r->data_size;
}

/* ------------------------------------------------------------------------------ superblock */

int wr_format(volatile void *region, size_t size, const char *name, wr_persist_fn persist,
              void *ctx)
{
    volatile uint8_t *b = region;
    sb s = { .magic = SB_MAGIC, .version = SB_VERSION, .size = size,
             .data_size = size - WR_SB_SIZE };
    uint64_t zero = 0, start;

    if (size < WR_MIN_SIZE || size % 64 || !name[0] || strlen(name) >= sizeof(s.name)) {
        return -EINVAL;
    }
    memcpy(s.name, name, strlen(name));
    s.crc = wr_crc32c(0, &s, sizeof(s));
    /* Positions start at a random lap, so that records an earlier ring left in this memory
     * (whose positions count from that ring's own start) never carry a position this one
     * expects. */
    if (getrandom(&start, sizeof(start), 0) != sizeof(start)) {
        start = (uint64_t)time(NULL) * 2654435761u;
    }
    start = (start >> 24) * s.data_size;
    for (size_t i = 0; i < REC_HDR; i += 8) {
        pm_store(b + WR_SB_SIZE + i, &zero, 8);
    }
    pm_store(b + SB_TAIL_OFF, &start, 8);
    pm_store(b, &s, sizeof(s));
    persist(ctx);
    return 0;
}

int wr_check(const volatile void *region, size_t size, char *err, size_t errlen)
{
    sb s;
    uint32_t crc;

    pm_load(&s, region, sizeof(s));
    if (s.magic != SB_MAGIC) {
        snprintf(err, errlen, "no ring there (no superblock magic)");
        return -EINVAL;
    }
    crc = s.crc;
    s.crc = 0;
    if (wr_crc32c(0, &s, sizeof(s)) != crc) {
        snprintf(err, errlen, "the ring's superblock is damaged (CRC mismatch)");
        return -EINVAL;
    }
    if (s.version != SB_VERSION) {
        snprintf(err, errlen, "ring version %u, this library knows %u", s.version, SB_VERSION);
        return -EINVAL;
    }
    if (s.size < WR_MIN_SIZE || s.size > size || s.data_size != s.size - WR_SB_SIZE ||
        s.size % 64) {
        snprintf(err, errlen, "ring size %llu does not fit the %zu bytes it sits in",
                 (unsigned long long)s.size, size);
        return -EINVAL;
    }
    return 0;
}

uint64_t wr_ring_size(const volatile void *region)
{
    sb s;

    pm_load(&s, region, sizeof(s));
    return s.size;
}

void wr_ring_name(const volatile void *region, char name[16])
{
    sb s;

    pm_load(&s, region, sizeof(s));
    memcpy(name, s.name, 16);
    name[15] = 0;
}

/* ------------------------------------------------------------------------------ locks */

static void rlock(pthread_mutex_t *m, int *owner_died)
{
    int e = pthread_mutex_lock(m);

    if (e == EOWNERDEAD) {
        /* A process died holding it; what it protected is made consistent by the caller
         * (every update below is ordered so that a half-done one is harmless). */
        pthread_mutex_consistent(m);
        if (owner_died) {
            *owner_died = 1;
        }
    }
}

int wr_ctl_init(wr_ctl *ctl, uint64_t data_size)
{
    pthread_mutexattr_t a;
    int e;

    memset(ctl, 0, sizeof(*ctl));
    if ((e = pthread_mutexattr_init(&a)) || (e = pthread_mutexattr_setpshared(&a, 1)) ||
        (e = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST)) ||
        (e = pthread_mutex_init(&ctl->order, &a)) || (e = pthread_mutex_init(&ctl->flush, &a)) ||
        (e = pthread_mutex_init(&ctl->state, &a))) {
        return -e;
    }
    pthread_mutexattr_destroy(&a);
    ctl->data_size = data_size;
    ctl->magic = CTL_MAGIC;
    return 0;
}

void wr_bind(walring *r, volatile void *region, size_t size, wr_ctl *ctl, wr_persist_fn persist,
             wr_sync_fn sync, void *ctx)
{
    memset(r, 0, sizeof(*r));
    r->base = region;
    r->size = wr_ring_size(region);
    (void)size;
    r->data_size = r->size - WR_SB_SIZE;
    r->ctl = ctl;
    r->persist = persist;
    r->sync = sync;
    r->ctx = ctx;
}

void wr_lock(walring *r)
{
    /* A holder that died mid-append never published its head: the next append overwrites
     * whatever it stored. */
    rlock(&r->ctl->order, NULL);
}

void wr_unlock(walring *r)
{
    pthread_mutex_unlock(&r->ctl->order);
}

uint64_t wr_used(const walring *r)
{
    return __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE) -
           __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------------------ pending set */

int wr_pending_has(walring *r, const char *path)
{
    wr_ctl *c = r->ctl;
    int found = 0;

    if (!__atomic_load_n(&c->npending, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    rlock(&c->state, NULL);
    for (uint32_t i = 0; i < c->npending && !found; i++) {
        found = !strcmp(c->pending[i].path, path);
    }
    pthread_mutex_unlock(&c->state);
    return found;
}

/* Note that @path has a record ending at @end; -ENOSPC when the set is full. */
static int pending_add(walring *r, const char *path, uint64_t end)
{
    wr_ctl *c = r->ctl;
    int ret = -ENOSPC;

    rlock(&c->state, NULL);
    for (uint32_t i = 0; i < c->npending; i++) {
        if (!strcmp(c->pending[i].path, path)) {
            c->pending[i].max_end = end;
            ret = 0;
            break;
        }
    }
    if (ret && c->npending < WR_PENDING_MAX) {
        /* Fill the slot, then count it: a death in between leaves the set as it was. */
        wr_pending *p = &c->pending[c->npending];
        p->max_end = end;
        snprintf(p->path, sizeof(p->path), "%s", path);
        __atomic_store_n(&c->npending, c->npending + 1, __ATOMIC_RELEASE);
        ret = 0;
    }
    pthread_mutex_unlock(&c->state);
    return ret;
}

/* ------------------------------------------------------------------------------ flush */

int wr_flush(walring *r)
{
    wr_ctl *c = r->ctl;
    int died = 0, ret = 0;
    uint64_t head, tail, persisted;
    uint32_t n;
    char (*paths)[WR_PATH_MAX];

    rlock(&c->flush, &died);
    persisted = *sb_tail(r);
    if (died && persisted > c->tail) {
        /* The last flusher persisted its tail and died before publishing it. */
        __atomic_store_n(&c->tail, persisted, __ATOMIC_RELEASE);
    }
    head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
    tail = c->tail;
    if (head == tail) {
        pthread_mutex_unlock(&c->flush);
        return 0;
    }
    paths = malloc(sizeof(*paths) * WR_PENDING_MAX);
    if (!paths) {
        pthread_mutex_unlock(&c->flush);
        return -ENOMEM;
    }
    rlock(&c->state, NULL);
    n = c->npending;
    for (uint32_t i = 0; i < n; i++) {
        memcpy(paths[i], c->pending[i].path, WR_PATH_MAX);
    }
    pthread_mutex_unlock(&c->state);

    for (uint32_t i = 0; i < n && !ret; i++) {
        int e = r->sync(r->ctx, paths[i]);
        if (e < 0 && e != -ENOENT) {
            ret = e;
        }
    }
    free(paths);
    if (!ret) {
        /* Every record below head is in its file and the file is durable: free them. */
        uint64_t v = head;
        pm_store((volatile uint8_t *)sb_tail(r), &v, 8);
        r->persist(r->ctx);
        rlock(&c->state, NULL);
        __atomic_store_n(&c->tail, head, __ATOMIC_RELEASE);
        for (uint32_t i = 0; i < c->npending;) {
            if (c->pending[i].max_end <= head) {
                c->pending[i] = c->pending[c->npending - 1];
                c->npending--;
            } else {
                i++;
            }
        }
        pthread_mutex_unlock(&c->state);
        __atomic_add_fetch(&c->flushes, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&c->flush);
    return ret;
}

/* ------------------------------------------------------------------------------ append */

/* Wait (by flushing) until @need bytes fit at the head. */
static int make_room(walring *r, uint64_t head, uint64_t need)
{
    int waited = 0;

    while (head + need - __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE) > r->data_size) {
        int e = wr_flush(r);
        if (e) {
            return e;
        }
        waited = 1;
    }
    if (waited) {
        __atomic_add_fetch(&r->ctl->full_waits, 1, __ATOMIC_RELAXED);
    }
    return 0;
}

static int append_one(walring *r, uint16_t type, const char *path, size_t plen, uint64_t off,
                      const uint8_t *buf, size_t len)
{
    wr_ctl *c = r->ctl;
    uint64_t head = c->head;        /* only appenders, under the order lock, move it */
    uint64_t need = align64(REC_HDR + plen + len);
    uint64_t to_end = r->data_size - head % r->data_size;
    uint64_t pad = need > to_end ? to_end : 0;
    rec h = { .magic = REC_MAGIC, .type = type, .path_len = plen, .off = off, .len = len,
              .total = need };
    int e = make_room(r, head, pad + need);

    if (e) {
        return e;
    }
    if (pad) {
        rec p = { .magic = REC_MAGIC, .type = REC_PAD, .pos = head, .total = pad };
        p.crc = wr_crc32c(0, &p, sizeof(p));
        pm_store(at(r, head), &p, sizeof(p));
        head += pad;
    }
    h.pos = head;
    h.crc = wr_crc32c(wr_crc32c(0, &h, sizeof(h)), path, plen);
    pm_store(at(r, head) + REC_HDR, path, plen);
    /* The caller's buffer may change while we read it (PostgreSQL writes the WAL page it is
     * still inserting into, from shared memory): take each piece once, checksum that copy and
     * store the same copy, so the record's CRC always matches its bytes. */
    for (size_t done = 0; done < len;) {
        uint8_t piece[4096];
        size_t n = len - done < sizeof(piece) ? len - done : sizeof(piece);

        memcpy(piece, buf + done, n);
        h.crc = wr_crc32c(h.crc, piece, n);
        pm_store(at(r, head) + REC_HDR + plen + done, piece, n);
        done += n;
    }
    pm_store(at(r, head), &h, sizeof(h));
    if (r->after_store) {
        r->after_store(r->ctx);
    }
    r->persist(r->ctx);
    while ((e = pending_add(r, path, head + need)) == -ENOSPC) {
        if ((e = wr_flush(r))) {
            return e;
        }
    }
    /* Publish only now: the record is durable and a flush will sync its file. */
    __atomic_store_n(&c->head, head + need, __ATOMIC_RELEASE);
    __atomic_add_fetch(&c->appends, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->append_bytes, len, __ATOMIC_RELAXED);
    return 0;
}

int wr_append(walring *r, const char *path, uint64_t off, const void *buf, size_t len)
{
    size_t plen = strlen(path);
    /* A record at most a quarter of the ring, so that a flush always makes room for one. */
    size_t max = r->data_size / 4 - REC_HDR - align64(plen);
    const uint8_t *p = buf;

    if (plen == 0 || plen >= WR_PATH_MAX) {
        return -ENAMETOOLONG;
    }
    while (len) {
        size_t n = len < max ? len : max;
        int e = append_one(r, REC_WRITE, path, plen, off, p, n);
        if (e) {
            return e;
        }
        p += n;
        off += n;
        len -= n;
    }
    return 0;
}

int wr_append_truncate(walring *r, const char *path, uint64_t size)
{
    size_t plen = strlen(path);

    if (plen == 0 || plen >= WR_PATH_MAX) {
        return -ENAMETOOLONG;
    }
    return append_one(r, REC_TRUNC, path, plen, size, NULL, 0);
}

/* ------------------------------------------------------------------------------ replay */

/* The valid record at @pos: its header in @h and, when @buf, its path and payload
 * (NUL-terminated path first).  0, or 1 when there is no valid record there. */
static int read_rec(const walring *r, uint64_t pos, rec *h, uint8_t **buf, size_t *cap)
{
    uint64_t to_end = r->data_size - pos % r->data_size;
    uint32_t crc;
    size_t body;

    pm_load(h, at(r, pos), sizeof(*h));
    if (h->magic != REC_MAGIC || h->pos != pos || h->total % 64 || h->total < REC_HDR ||
        h->total > to_end) {
        return 1;
    }
    crc = h->crc;
    h->crc = 0;
    if (h->type == REC_PAD) {
        return wr_crc32c(0, h, sizeof(*h)) == crc ? 0 : 1;
    }
    if ((h->type != REC_WRITE && h->type != REC_TRUNC) || h->path_len == 0 ||
        h->path_len >= WR_PATH_MAX || (h->type == REC_TRUNC && h->len) ||
        REC_HDR + (uint64_t)h->path_len + h->len > h->total) {
        return 1;
    }
    body = h->path_len + h->len;
    if (*cap < body + 1) {
        uint8_t *n = realloc(*buf, body + 1);
        if (!n) {
            return 1;
        }
        *buf = n;
        *cap = body + 1;
    }
    pm_load(*buf, at(r, pos) + REC_HDR, body);
    if (wr_crc32c(wr_crc32c(0, h, sizeof(*h)), *buf, body) != crc) {
        return 1;
    }
    h->crc = crc;
    return 0;
}

long wr_scan(const walring *r, uint64_t *nbytes)
{
    uint64_t tail = *sb_tail(r), pos = tail, bytes = 0;
    uint8_t *buf = NULL;
    size_t cap = 0;
    long n = 0;
    rec h;

    while (pos - tail < r->data_size && read_rec(r, pos, &h, &buf, &cap) == 0) {
        if (h.type != REC_PAD) {
            n++;
            bytes += h.len;
        }
        pos += h.total;
    }
    free(buf);
    if (nbytes) {
        *nbytes = bytes;
    }
    return n;
}

long wr_replay(walring *r, wr_apply_fn apply, wr_truncate_fn truncate, uint64_t *nbytes)
{
    uint64_t tail = *sb_tail(r), pos = tail, bytes = 0;
    uint8_t *buf = NULL;
    size_t cap = 0;
    char (*files)[WR_PATH_MAX] = NULL;
    size_t nfiles = 0, capfiles = 0;
    long n = 0;
    int ret = 0;
    rec h;

    while (pos - tail < r->data_size && read_rec(r, pos, &h, &buf, &cap) == 0) {
        if (h.type != REC_PAD) {
            char path[WR_PATH_MAX];
            size_t i;

            memcpy(path, buf, h.path_len);
            path[h.path_len] = 0;
            ret = h.type == REC_TRUNC ? truncate(r->ctx, path, h.off)
                                      : apply(r->ctx, path, h.off, buf + h.path_len, h.len);
            if (ret) {
                break;
            }
            for (i = 0; i < nfiles && strcmp(files[i], path); i++) {
            }
            if (i == nfiles) {
                if (nfiles == capfiles) {
                    void *f = realloc(files, (capfiles = capfiles * 2 + 8) * WR_PATH_MAX);
                    if (!f) {
                        ret = -ENOMEM;
                        break;
                    }
                    files = f;
                }
                memcpy(files[nfiles++], path, WR_PATH_MAX);
            }
            n++;
            bytes += h.len;
        }
        pos += h.total;
    }
    free(buf);
    for (size_t i = 0; i < nfiles && !ret; i++) {
        ret = r->sync(r->ctx, files[i]);
    }
    free(files);
    if (ret) {
        return ret;
    }
    if (pos != tail) {
        pm_store((volatile uint8_t *)sb_tail(r), &pos, 8);
        r->persist(r->ctx);
    }
    __atomic_store_n(&r->ctl->tail, pos, __ATOMIC_RELEASE);
    __atomic_store_n(&r->ctl->head, pos, __ATOMIC_RELEASE);
    r->ctl->replayed += n;
    if (nbytes) {
        *nbytes = bytes;
    }
    return n;
}
