/* ba - command line tool for the nvme-hybrid BAR1 window, on top of libba (docs/bar-pm.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libba.h"

static const char usage[] =
    "usage: ba [-c nvmeX] COMMAND ...\n"
    "  info [--json]                       window, restore status and every entry\n"
    "  pin EID OFFSET SLBA NLB             pin window bytes [OFFSET, OFFSET+NLB*lba) to LBAs;\n"
    "                                      loads the LBAs' data into the window\n"
    "  write EID OFFSET (--data S | --file P)  store bytes at OFFSET of the entry and persist\n"
    "  read EID OFFSET LENGTH              bytes through the mapping, to stdout\n"
    "  read-dma EID OFFSET LENGTH          bytes by the device's DMA, to stdout\n"
    "  sync EID                            write the entry to its LBAs, keep it pinned\n"
    "  flush EID                           write the entry to its LBAs, release it\n"
    "Numbers may be decimal or 0x hex.  Exit status 0, 1 on a failure (with the reason on\n"
    "stderr), 2 on bad usage.\n";

static uint64_t num(const char *s)
{
    char *end;
    uint64_t v;

    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || !*s || *end || *s == '-') {
        fprintf(stderr, "ba: not a number: %s\n%s", s, usage);
        exit(2);
    }
    return v;
}

static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);

    if (!f || !buf) {
        fprintf(stderr, "ba: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    for (size_t r; (r = fread(buf + n, 1, cap - n, f)) > 0; ) {
        n += r;
        if (n == cap && !(buf = realloc(buf, cap *= 2))) {
            fprintf(stderr, "ba: out of memory reading %s\n", path);
            exit(1);
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

static int info(ba_dev *dev, int json)
{
    ba_info e;
    int ret = ba_entry_info(dev, 0, &e);

    if (ret) {
        return ret;
    }
    if (json) {
        printf("{\"ctrl\": \"%s\", \"window\": %" PRIu64 ", \"entries\": %u, \"lba_size\": %u, "
               "\"restore\": \"%s\", \"dumps\": %u, \"dump_ns\": %" PRIu64 ", "
               "\"pmrsts\": %u, \"entry\": [", ba_ctrl_name(dev), e.window_size, e.entries,
               e.lba_size, ba_restore_name(e.restore), e.dumps, e.dump_ns, ba_pmrsts(dev));
    } else {
        printf("%s: window %" PRIu64 " bytes, %u entries, lba-size %u, restore: %s, "
               "%u saves, save time %.2f ms, PMRSTS 0x%x\n", ba_ctrl_name(dev), e.window_size,
               e.entries, e.lba_size, ba_restore_name(e.restore), e.dumps, e.dump_ns / 1e6,
               ba_pmrsts(dev));
    }
    for (uint32_t i = 0, n = e.entries; i < n; i++) {
        if ((ret = ba_entry_info(dev, i, &e))) {
            return ret;
        }
        if (json) {
            printf("%s{\"eid\": %u, \"state\": \"%s\", \"offset\": %" PRIu64 ", \"slba\": %"
                   PRIu64 ", \"nlb\": %" PRIu64 ", \"length\": %" PRIu64 "}", i ? ", " : "",
                   i, e.state == BA_PINNED ? "pinned" : "free", e.offset, e.slba, e.nlb,
                   e.length);
        } else if (e.state == BA_PINNED) {
            printf("entry %u: pinned, offset %" PRIu64 ", slba %" PRIu64 ", nlb %" PRIu64
                   " (%" PRIu64 " bytes)\n", i, e.offset, e.slba, e.nlb, e.length);
        } else {
            printf("entry %u: free\n", i);
        }
    }
    if (json) {
        printf("]}\n");
    }
    return 0;
}

static void out(const void *buf, size_t len)
{
    if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
        fprintf(stderr, "ba: cannot write to stdout: %s\n", strerror(errno));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const char *ctrl = NULL, *cmd;
    ba_dev *dev;
    int ret;

    if (argc > 2 && !strcmp(argv[1], "-c")) {
        ctrl = argv[2];
        argc -= 2;
        argv += 2;
    }
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    cmd = argv[1];
#define NEED(n) do { if (argc != (n) + 2) { fputs(usage, stderr); return 2; } } while (0)
    if (!strcmp(cmd, "info")) {
        if (argc > 3 || (argc == 3 && strcmp(argv[2], "--json"))) {
            fputs(usage, stderr);
            return 2;
        }
    } else if (!strcmp(cmd, "pin")) {
        NEED(4);
    } else if (!strcmp(cmd, "write")) {
        NEED(4);
        if (strcmp(argv[4], "--data") && strcmp(argv[4], "--file")) {
            fputs(usage, stderr);
            return 2;
        }
    } else if (!strcmp(cmd, "read") || !strcmp(cmd, "read-dma")) {
        NEED(3);
    } else if (!strcmp(cmd, "sync") || !strcmp(cmd, "flush")) {
        NEED(1);
    } else {
        fprintf(stderr, "ba: unknown command %s\n%s", cmd, usage);
        return 2;
    }

    if (ba_open(ctrl, &dev)) {
        return 1;
    }
    if (!strcmp(cmd, "info")) {
        ret = info(dev, argc == 3);
    } else if (!strcmp(cmd, "pin")) {
        uint64_t nlb = num(argv[5]);
        if (nlb > UINT32_MAX) {
            fprintf(stderr, "ba pin: NLB %" PRIu64 " does not fit the command\n", nlb);
            ba_close(dev);
            return 1;
        }
        ret = ba_pin(dev, num(argv[2]), num(argv[3]), num(argv[4]), nlb);
    } else if (!strcmp(cmd, "write")) {
        size_t len = strlen(argv[5]);
        void *buf = !strcmp(argv[4], "--data") ? strdup(argv[5]) : slurp(argv[5], &len);
        ret = ba_write(dev, num(argv[2]), num(argv[3]), buf, len);
        if (!ret) {
            ba_persist(dev);
        }
        free(buf);
    } else if (!strcmp(cmd, "read") || !strcmp(cmd, "read-dma")) {
        size_t len = num(argv[4]);
        void *buf = malloc(len ? len : 1);
        ret = !buf ? -ENOMEM : !strcmp(cmd, "read") ?
              ba_read(dev, num(argv[2]), num(argv[3]), buf, len) :
              ba_read_dma(dev, num(argv[2]), num(argv[3]), buf, len);
        if (!ret) {
            out(buf, len);
        }
        free(buf);
    } else if (!strcmp(cmd, "sync")) {
        ret = ba_sync(dev, num(argv[2]));
    } else {
        ret = ba_flush(dev, num(argv[2]));
    }
    if (ret) {
        fprintf(stderr, "ba %s: %s\n", cmd, ba_error(dev));
    }
    ba_close(dev);
    return ret ? 1 : 0;
}
