/*
 * nh-wstream - write to a raw block device with O_DIRECT through io_uring, every write carrying
 * the block layer's write stream (Linux 6.16 and later) in the submission queue entry.  The
 * wstreams guest's tool (guest-images/wstreams, docs/device.md "Linux write streams"): Linux's
 * nvme driver sends a write of stream S (1 <= S <= max_write_streams) as a Write with DTYPE 2
 * (Data Placement) and DSPEC the S-th placement identifier the device listed in its Reclaim
 * Unit Handle Status; stream 0 is an untagged write.
 *
 * Built statically on the host (meson.build) and copied into the guest by guest-images/build.
 * The ring is driven with the raw system calls, not liburing: bookworm's liburing 2.3 has no
 * write_stream.
 */
#define _GNU_SOURCE             /* O_DIRECT, strerrorname_np */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * The submission queue entry of Linux 7.3, as include/uapi/linux/io_uring.h defines struct
 * io_uring_sqe (read in Debian's linux-libc-dev 7.3.4-1~bpo13+1, trixie-backports): write_stream
 * is the __u8 at byte 44, in the union with splice_fd_in and file_index, followed by __pad4[3].
 * The build host's header (Linux 6.1) predates the field, so the 64-byte layout is spelled out
 * here with the names this tool sets; the static assertions pin the offsets.  Everything else
 * (io_uring_params, the ring offsets, the completion entry, IORING_OP_WRITE) has not changed
 * since Linux 5.6 and comes from the host's <linux/io_uring.h>.
 */
struct wsqe {
    uint8_t  opcode;
    uint8_t  flags;
    uint16_t ioprio;
    int32_t  fd;
    uint64_t off;
    uint64_t addr;
    uint32_t len;
    uint32_t rw_flags;
    uint64_t user_data;
    uint16_t buf_index;
    uint16_t personality;
    uint8_t  write_stream;
    uint8_t  pad4[3];
    uint64_t addr3;
    uint64_t pad2;
};
_Static_assert(sizeof(struct wsqe) == 64, "an io_uring SQE is 64 bytes");
_Static_assert(offsetof(struct wsqe, user_data) == 32, "user_data at byte 32");
_Static_assert(offsetof(struct wsqe, write_stream) == 44, "write_stream at byte 44");

#define DEPTH 8                 /* writes in flight */

static const char usage[] =
    "usage: nh-wstream [--bs SIZE] DEVICE STREAM OFFSET SIZE\n"
    "Writes SIZE bytes of random data at byte OFFSET of the block device DEVICE with O_DIRECT,\n"
    "in writes of --bs bytes (default 4K), through io_uring with the write stream STREAM\n"
    "(0 = none; 1..max_write_streams, see /sys/block/DEV/queue/max_write_streams).  Sizes take\n"
    "a K, M or G suffix (powers of 2).  Exit status 0; 1 when a write failed (the kernel's\n"
    "error on stderr); 2 on bad usage.\n";

struct ring {
    int fd;
    uint32_t *sq_head, *sq_tail, *sq_mask, *sq_array;
    uint32_t *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
    struct wsqe *sqes;
};

static const char *prog = "nh-wstream";

static void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int status, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (status == 2) {
        fputs(usage, stderr);
    }
    exit(status);
}

static uint64_t size_arg(const char *what, const char *s)
{
    char *end;
    uint64_t v;
    int shift = 0;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (*end && !end[1]) {
        const char *units = "KMG", *u = strchr(units, *end);
        shift = u && *u ? 10 * (int)(u - units + 1) : -1;
        end += shift >= 0;
    }
    if (errno || !isdigit((unsigned char)*s) || *end || shift < 0 || v > (UINT64_MAX >> shift)) {
        die(2, "%s: not a size: '%s'", what, s);
    }
    return v << shift;
}

static void ring_setup(struct ring *r, unsigned entries)
{
    /* SUBMIT_ALL: a write the kernel refuses when it takes the entry (its completion carries
     * the error) does not stop the ones queued after it */
    struct io_uring_params p = { .flags = IORING_SETUP_SUBMIT_ALL };
    size_t sq_len, cq_len;
    uint8_t *sq, *cq;

    r->fd = syscall(__NR_io_uring_setup, entries, &p);
    if (r->fd < 0) {
        die(1, "io_uring_setup: %s (%s)", strerror(errno), strerrorname_np(errno));
    }
    sq_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
    cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP) {
        sq_len = cq_len = sq_len > cq_len ? sq_len : cq_len;
    }
    sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
              IORING_OFF_SQ_RING);
    cq = p.features & IORING_FEAT_SINGLE_MMAP ? sq :
         mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
              IORING_OFF_CQ_RING);
    r->sqes = mmap(NULL, p.sq_entries * sizeof(struct wsqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED) {
        die(1, "mapping the io_uring rings: %s", strerror(errno));
    }
    r->sq_head = (uint32_t *)(sq + p.sq_off.head);
    r->sq_tail = (uint32_t *)(sq + p.sq_off.tail);
    r->sq_mask = (uint32_t *)(sq + p.sq_off.ring_mask);
    r->sq_array = (uint32_t *)(sq + p.sq_off.array);
    r->cq_head = (uint32_t *)(cq + p.cq_off.head);
    r->cq_tail = (uint32_t *)(cq + p.cq_off.tail);
    r->cq_mask = (uint32_t *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

/* Queue a write of len bytes of buf at off, tagged with stream; user_data is its offset. */
static void queue_write(struct ring *r, int fd, const void *buf, uint32_t len, uint64_t off,
                        uint8_t stream)
{
    uint32_t tail = *r->sq_tail, i = tail & *r->sq_mask;
    struct wsqe *e = &r->sqes[i];

    memset(e, 0, sizeof(*e));
    e->opcode = IORING_OP_WRITE;
    e->fd = fd;
    e->off = off;
    e->addr = (uintptr_t)buf;
    e->len = len;
    e->user_data = off;
    e->write_stream = stream;
    r->sq_array[i] = i;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/* One block of random bytes, written again and again: aligned for O_DIRECT. */
static void *random_buffer(uint64_t bs)
{
    void *buf;

    if (posix_memalign(&buf, 4096, bs)) {
        die(1, "out of memory for a %" PRIu64 "-byte buffer", bs);
    }
    for (uint64_t n = 0; n < bs; ) {
        ssize_t got = getrandom((char *)buf + n, bs - n, 0);
        if (got < 0) {
            die(1, "getrandom: %s", strerror(errno));
        }
        n += got;
    }
    return buf;
}

int main(int argc, char **argv)
{
    uint64_t bs = 4096, off, size, devsize, first_bad = UINT64_MAX;
    unsigned long long stream;
    int fd, lbs, bad_res = 0;
    const char *dev;
    struct ring r;
    struct stat st;
    char *end;
    void *buf;

    if (argc > 2 && !strcmp(argv[1], "--bs")) {
        bs = size_arg("--bs", argv[2]);
        argc -= 2;
        argv += 2;
    }
    if (argc != 5) {
        die(2, "expected DEVICE STREAM OFFSET SIZE");
    }
    dev = argv[1];
    errno = 0;
    stream = strtoull(argv[2], &end, 10);
    if (errno || !isdigit((unsigned char)argv[2][0]) || *end || stream > UINT8_MAX) {
        die(2, "STREAM '%s': the SQE's write_stream is 8 bits, 0..255", argv[2]);
    }
    off = size_arg("OFFSET", argv[3]);
    size = size_arg("SIZE", argv[4]);

    fd = open(dev, O_WRONLY | O_DIRECT);
    if (fd < 0) {
        die(1, "%s: opening with O_DIRECT: %s", dev, strerror(errno));
    }
    if (fstat(fd, &st) || !S_ISBLK(st.st_mode)) {
        die(2, "%s: not a block device (write streams are for raw block devices only)", dev);
    }
    if (ioctl(fd, BLKSSZGET, &lbs) || ioctl(fd, BLKGETSIZE64, &devsize)) {
        die(1, "%s: block size: %s", dev, strerror(errno));
    }
    if (!bs || bs % lbs || bs > (1u << 20)) {
        die(2, "--bs %" PRIu64 ": a multiple of the logical block size %d, at most 1M", bs, lbs);
    }
    if (!size || off % bs || size % bs) {
        die(2, "OFFSET %" PRIu64 " and SIZE %" PRIu64 " must be multiples of --bs %" PRIu64
            ", SIZE above 0", off, size, bs);
    }
    if (off > devsize || size > devsize - off) {
        die(2, "%" PRIu64 " bytes at %" PRIu64 " go beyond %s's %" PRIu64 " bytes", size, off,
            dev, devsize);
    }
    buf = random_buffer(bs);

    ring_setup(&r, DEPTH);
    for (uint64_t at = off; at < off + size && first_bad == UINT64_MAX; ) {
        unsigned n = 0;
        long took;

        for (; n < DEPTH && at < off + size; n++, at += bs) {
            queue_write(&r, fd, buf, bs, at, stream);
        }
        /* wait for all n: a write that fails completes with its error, the rest still run */
        took = syscall(__NR_io_uring_enter, r.fd, n, n, IORING_ENTER_GETEVENTS, NULL, 0);
        if (took < 0) {
            die(1, "io_uring_enter: %s", strerror(errno));
        }
        if (took != n) {
            die(1, "io_uring_enter took %ld of %u writes", took, n);
        }
        for (uint32_t head = *r.cq_head; n; n--, head++) {
            struct io_uring_cqe *c;

            /* a signal can end the wait before every write completed */
            while (head == __atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE)) {
                if (syscall(__NR_io_uring_enter, r.fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
                    die(1, "io_uring_enter: %s", strerror(errno));
                }
            }
            c = &r.cqes[head & *r.cq_mask];
            if (c->res != (int32_t)bs && c->user_data < first_bad) {
                first_bad = c->user_data;
                bad_res = c->res;
            }
            __atomic_store_n(r.cq_head, head + 1, __ATOMIC_RELEASE);
        }
    }
    if (first_bad != UINT64_MAX) {
        if (bad_res >= 0) {
            die(1, "%s: write of %" PRIu64 " bytes at %" PRIu64 " with write_stream %llu: "
                "short write (%d bytes)", dev, bs, first_bad, stream, bad_res);
        }
        die(1, "%s: write of %" PRIu64 " bytes at %" PRIu64 " with write_stream %llu: %s (%s)",
            dev, bs, first_bad, stream, strerror(-bad_res), strerrorname_np(-bad_res));
    }
    printf("%s: %" PRIu64 " bytes at %" PRIu64 " in %" PRIu64 " writes of %" PRIu64
           " with write_stream %llu\n", dev, size, off, size / bs, bs, stream);
    return 0;
}
