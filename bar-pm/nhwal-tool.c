/*
 * nhwal - set up and inspect the log rings of libnhwal.so in the BAR1 window (docs/dblog.md).
 *
 *   nhwal init [--name NAME] [--entry ID|auto] [--size SIZE] --lba SLBA [-c CTRL]
 *       Claim a BA entry for ring NAME (default "wal"): pin a free window range of SIZE
 *       (default 4M) to the LBAs from SLBA (outside any file system: block writes to pinned
 *       LBAs are refused) and format the ring.  When the ring is already there (a restart),
 *       keep it and replay it instead.  --entry auto (default): the entry holding the ring,
 *       else the first free one.
 *   nhwal replay [--name NAME] [-c CTRL]
 *       Attach; the first process since boot replays the ring into the files.
 *   nhwal status [--name NAME] [-c CTRL]
 *       Where the ring is, what it holds, and the shared counters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nhwal-core.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: nhwal init [--name NAME] [--entry ID|auto] [--size SIZE] --lba SLBA "
               "[-c CTRL]\n"
               "       nhwal replay [--name NAME] [-c CTRL]\n"
               "       nhwal status [--name NAME] [-c CTRL]\n");
}

static int parse_size(const char *s, uint64_t *v)
{
    char *end;
    unsigned long long n = strtoull(s, &end, 0);
    int shift = 0;

    if (end == s) {
        return -1;
    }
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    }
    if (*end || n > (UINT64_MAX >> shift)) {
        return -1;
    }
    *v = (uint64_t)n << shift;
    return 0;
}

static int report_attach(nhwal *w)
{
    if (w->replayed > 0) {
        printf("nhwal: replayed %ld records (%llu bytes) from ring '%s' into the files\n",
               w->replayed, (unsigned long long)w->replayed_bytes, w->name);
    } else if (w->replayed == 0) {
        printf("nhwal: ring '%s' had nothing to replay\n", w->name);
    }
    return 0;
}

/* Attach to ring @name if a pinned entry already holds it (a restart); 1 when there is none. */
static int attach_existing(ba_dev *dev, const ba_info *info, const char *name,
                           const char *entry)
{
    char err[512];
    uint64_t off;
    ba_info e;
    nhwal w;

    for (uint32_t i = 0; i < info->entries; i++) {
        if (ba_entry_info(dev, i, &e) || e.state != BA_PINNED ||
            nhwal_find(dev, name, &off, err, sizeof(err)) || off != e.offset) {
            continue;
        }
        if (strcmp(entry, "auto") && (uint32_t)atoi(entry) != i) {
            fprintf(stderr, "nhwal: ring '%s' is in entry %u, not %s\n", name, i, entry);
            return -1;
        }
        printf("nhwal: ring '%s' found in entry %u (window offset %llu, %llu bytes)\n",
               name, i, (unsigned long long)e.offset, (unsigned long long)e.length);
        if (nhwal_attach_dev(&w, dev, name, err, sizeof(err))) {
            fprintf(stderr, "nhwal: %s\n", err);
            return -1;
        }
        return report_attach(&w);
    }
    return 1;
}

/* The entry --entry names (it must be free), or the first free one; exit status on failure. */
static int pick_entry(ba_dev *dev, const ba_info *info, const char *name, const char *entry,
                      int *eid)
{
    ba_info e;

    if (!strcmp(entry, "auto")) {
        for (uint32_t i = 0; i < info->entries; i++) {
            if (ba_entry_info(dev, i, &e) == 0 && e.state == BA_FREE) {
                *eid = i;
                return 0;
            }
        }
        fprintf(stderr, "nhwal: no free entry: all %u entries of the window are pinned "
                "(`ba info` shows them)\n", info->entries);
        return 1;
    }
    char *end;
    long v = strtol(entry, &end, 0);
    if (*end || v < 0 || (uint64_t)v >= info->entries) {
        fprintf(stderr, "nhwal: --entry %s: the device has entries 0 to %u\n", entry,
                info->entries - 1);
        return 2;
    }
    ba_entry_info(dev, v, &e);
    if (e.state == BA_PINNED) {
        fprintf(stderr, "nhwal: entry %ld is in use by someone else (pinned: window "
                "offset %llu, %llu bytes, LBAs %llu-%llu) and holds no ring '%s'\n", v,
                (unsigned long long)e.offset, (unsigned long long)e.length,
                (unsigned long long)e.slba, (unsigned long long)(e.slba + e.nlb - 1), name);
        return 1;
    }
    *eid = v;
    return 0;
}

/* The lowest 4 KiB-aligned window range of @size no pinned entry overlaps. */
static uint64_t free_window_range(ba_dev *dev, const ba_info *info, uint64_t size)
{
    uint64_t off = 0;
    ba_info e;

    for (int moved = 1; moved;) {
        moved = 0;
        for (uint32_t i = 0; i < info->entries; i++) {
            if (ba_entry_info(dev, i, &e) == 0 && e.state == BA_PINNED &&
                off < e.offset + e.length && e.offset < off + size) {
                off = (e.offset + e.length + 4095) & ~4095ull;
                moved = 1;
            }
        }
    }
    return off;
}

static int cmd_init(ba_dev *dev, const char *name, const char *entry, uint64_t size, int64_t lba)
{
    ba_info info;
    char err[512];
    uint64_t off;
    nhwal w;
    int eid = -1, ret;

    if (ba_entry_info(dev, 0, &info)) {
        fprintf(stderr, "nhwal: %s\n", ba_error(dev));
        return 1;
    }
    if ((ret = attach_existing(dev, &info, name, entry)) <= 0) {
        return ret < 0 ? 1 : 0;
    }
    if (lba < 0) {
        fprintf(stderr, "nhwal: init needs --lba: the first LBA of a range outside any file "
                "system for the ring's entry\n");
        return 2;
    }
    if (size < WR_MIN_SIZE || size % info.lba_size || size % 64) {
        fprintf(stderr, "nhwal: ring size %llu: at least %u bytes and a multiple of the LBA "
                "size %u\n", (unsigned long long)size, WR_MIN_SIZE, info.lba_size);
        return 2;
    }
    if (size > info.window_size) {
        fprintf(stderr, "nhwal: the window (%llu bytes) is too small for a ring of %llu "
                "bytes\n", (unsigned long long)info.window_size, (unsigned long long)size);
        return 1;
    }
    if ((ret = pick_entry(dev, &info, name, entry, &eid))) {
        return ret;
    }
    off = free_window_range(dev, &info, size);
    if (off + size > info.window_size) {
        fprintf(stderr, "nhwal: the window (%llu bytes) has no free range of %llu bytes left "
                "beside the pinned entries\n", (unsigned long long)info.window_size,
                (unsigned long long)size);
        return 1;
    }
    if (ba_pin(dev, eid, off, lba, size / info.lba_size)) {
        fprintf(stderr, "nhwal: pinning entry %d: %s\n", eid, ba_error(dev));
        return 1;
    }
    if ((ret = wr_format((uint8_t *)ba_window(dev) + off, size, name, nhwal_persist, dev))) {
        fprintf(stderr, "nhwal: cannot format ring '%s': %s\n", name, strerror(-ret));
        return 1;
    }
    printf("nhwal: ring '%s' made in entry %d (window offset %llu, %llu bytes, LBAs %lld-%lld)\n",
           name, eid, (unsigned long long)off, (unsigned long long)size, (long long)lba,
           (long long)(lba + size / info.lba_size - 1));
    if (nhwal_attach_dev(&w, dev, name, err, sizeof(err))) {
        fprintf(stderr, "nhwal: %s\n", err);
        return 1;
    }
    return 0;
}

static int cmd_status(nhwal *w)
{
    uint64_t bytes;
    long n = wr_scan(&w->ring, &bytes);
    wr_ctl *c = w->ctl;

    printf("ring %s: window offset %llu, %llu bytes (%llu for records)\n", w->name,
           (unsigned long long)w->ring_off, (unsigned long long)w->ring.size,
           (unsigned long long)w->ring.data_size);
    printf("in the ring: %ld records, %llu bytes (used %llu)\n", n, (unsigned long long)bytes,
           (unsigned long long)wr_used(&w->ring));
    printf("appends %llu append_bytes %llu flushes %llu full_waits %llu replayed %llu "
           "pending_files %u\n", (unsigned long long)c->appends,
           (unsigned long long)c->append_bytes, (unsigned long long)c->flushes,
           (unsigned long long)c->full_waits, (unsigned long long)c->replayed, c->npending);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "name", required_argument, NULL, 'n' }, { "entry", required_argument, NULL, 'e' },
        { "size", required_argument, NULL, 's' }, { "lba", required_argument, NULL, 'l' },
        { "ctrl", required_argument, NULL, 'c' }, { "help", no_argument, NULL, 'h' },
        { 0 }
    };
    const char *name = "wal", *entry = "auto", *ctrl = NULL, *cmd;
    uint64_t size = 4 << 20, v;
    int64_t lba = -1;
    char err[512];
    ba_dev *dev;
    nhwal w;
    int c, ret;

    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            name = optarg;
            if (!*name || strlen(name) > 15 || strchr(name, '/')) {
                fprintf(stderr, "nhwal: --name: 1 to 15 characters, no '/'\n");
                return 2;
            }
            break;
        case 'e': entry = optarg; break;
        case 's':
            if (parse_size(optarg, &size)) {
                fprintf(stderr, "nhwal: bad --size '%s'\n", optarg);
                return 2;
            }
            break;
        case 'l':
            if (parse_size(optarg, &v) || v > INT64_MAX) {
                fprintf(stderr, "nhwal: bad --lba '%s'\n", optarg);
                return 2;
            }
            lba = v;
            break;
        case 'c': ctrl = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    cmd = argv[optind];
    if (strcmp(cmd, "init") && strcmp(cmd, "replay") && strcmp(cmd, "status")) {
        fprintf(stderr, "nhwal: unknown command '%s'\n", cmd);
        usage(stderr);
        return 2;
    }
    if (!strcmp(cmd, "init")) {
        if (ba_open(ctrl, &dev)) {
            return 1;
        }
        ret = cmd_init(dev, name, entry, size, lba);
        ba_close(dev);
        return ret;
    }
    if (nhwal_attach(&w, ctrl, name, err, sizeof(err))) {
        fprintf(stderr, "nhwal: %s\n", err);
        return 1;
    }
    ret = !strcmp(cmd, "replay") ? report_attach(&w) : cmd_status(&w);
    if (w.replayed < 0 && !strcmp(cmd, "replay")) {
        printf("nhwal: ring '%s' was already replayed since boot\n", name);
    }
    return ret;
}
