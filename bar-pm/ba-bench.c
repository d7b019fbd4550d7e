/*
 * ba-bench - persisted appends through the BAR1 window against 4 KiB O_DIRECT writes followed
 * by fdatasync on the block device; one JSON document on stdout.  Run by scripts/bench-ba in
 * the guest.
 *
 *   ba-bench [--ops N] [--block-ops N] BLOCKDEV
 *
 * Window: entry 0 is pinned over the whole window at the last LBAs of the namespace; each
 * append is ba_write() of SIZE bytes at the next offset (wrapping at the end of the window)
 * plus ba_persist(); every 64-byte line of an append holds new bytes (the append's number).
 * Block: pwrite() of 4 KiB at the next 4 KiB of the namespace's first
 * gigabyte (or all of it when smaller) plus fdatasync().  Latency is per persisted append,
 * host CLOCK_MONOTONIC in the guest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

#include "libba.h"

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void report(const char *name, size_t size, uint64_t *lat, int n, uint64_t total_ns,
                   int last)
{
    double sum = 0;

    for (int i = 0; i < n; i++) {
        sum += lat[i];
    }
    qsort(lat, n, sizeof(*lat), cmp_u64);
    printf("    {\"path\": \"%s\", \"size\": %zu, \"ops\": %d, \"mean_us\": %.3f, "
           "\"p50_us\": %.3f, \"p99_us\": %.3f, \"max_us\": %.3f, \"ops_per_s\": %.1f, "
           "\"mb_per_s\": %.3f}%s\n", name, size, n, sum / n / 1e3, lat[n / 2] / 1e3,
           lat[(int)(n * 0.99)] / 1e3, lat[n - 1] / 1e3, n / (total_ns / 1e9),
           (double)size * n / (total_ns / 1e9) / 1e6, last ? "" : ",");
}

/* New bytes in every 64-byte line of the append, as a log's records are: the device charges
 * a persist for the lines that changed (docs/bar-pm.md), and rewriting what the window already
 * holds would be free. */
static void stamp(uint8_t *buf, size_t size, uint64_t seq)
{
    for (size_t l = 0; l < size; l += 64) {
        memcpy(buf + l, &seq, sizeof(seq));
    }
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 64, 512, 4096, 65536 }, max_size = 65536;
    int ops = 20000, block_ops = 2000, fd;
    const char *blockdev = NULL;
    uint64_t *lat, devsize, region, start, t0;
    ba_dev *dev;
    ba_info info;
    uint8_t *buf;
    int ret;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
            ops = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--block-ops") && i + 1 < argc) {
            block_ops = atoi(argv[++i]);
        } else if (argv[i][0] != '-' && !blockdev) {
            blockdev = argv[i];
        } else {
            fprintf(stderr, "usage: ba-bench [--ops N] [--block-ops N] BLOCKDEV\n");
            return 2;
        }
    }
    if (!blockdev || ops < 1 || block_ops < 1) {
        fprintf(stderr, "usage: ba-bench [--ops N] [--block-ops N] BLOCKDEV\n");
        return 2;
    }
    fd = open(blockdev, O_RDWR | O_DIRECT);
    if (fd < 0 || ioctl(fd, BLKGETSIZE64, &devsize) < 0) {
        fprintf(stderr, "ba-bench: %s: %s\n", blockdev, strerror(errno));
        return 1;
    }
    if (ba_open(NULL, &dev)) {
        return 1;
    }
    if ((ret = ba_entry_info(dev, 0, &info)) ||
        (ret = ba_pin(dev, 0, 0, (devsize - info.window_size) / info.lba_size,
                      info.window_size / info.lba_size))) {
        fprintf(stderr, "ba-bench: %s\n", ba_error(dev));
        return 1;
    }
    lat = calloc(ops > block_ops ? ops : block_ops, sizeof(*lat));
    if (posix_memalign((void **)&buf, 4096, max_size) || !lat) {
        fprintf(stderr, "ba-bench: out of memory\n");
        return 1;
    }
    memset(buf, 0x5a, max_size);

    printf("{\"window_bytes\": %zu, \"results\": [\n", ba_window_size(dev));
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        uint64_t off = 0;
        start = now_ns();
        for (int i = 0; i < ops; i++) {
            if (off + sizes[s] > info.window_size) {
                off = 0;
            }
            stamp(buf, sizes[s], i);
            t0 = now_ns();
            ba_write(dev, 0, off, buf, sizes[s]);
            ba_persist(dev);
            lat[i] = now_ns() - t0;
            off += sizes[s];
        }
        report("window", sizes[s], lat, ops, now_ns() - start, 0);
    }

    region = devsize - info.window_size < (1ull << 30) ? devsize - info.window_size : 1ull << 30;
    start = now_ns();
    for (int i = 0; i < block_ops; i++) {
        uint64_t off = (uint64_t)i * 4096 % region;
        t0 = now_ns();
        if (pwrite(fd, buf, 4096, off) != 4096 || fdatasync(fd)) {
            fprintf(stderr, "ba-bench: write to %s: %s\n", blockdev, strerror(errno));
            return 1;
        }
        lat[i] = now_ns() - t0;
    }
    report("block", 4096, lat, block_ops, now_ns() - start, 1);
    printf("]}\n");
    if (ba_flush(dev, 0)) {
        fprintf(stderr, "ba-bench: %s\n", ba_error(dev));
        return 1;
    }
    ba_close(dev);
    close(fd);
    return 0;
}
