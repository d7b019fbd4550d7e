/*
 * state-file.c - libFuzzer target for the files nvme-hybrid parses when it starts: the engine's
 * state file (state-file=, engine/state.c) and the BAR1 window's file (ba-file=,
 * bar-pm/ba-manager.c).  Built by scripts/fuzz-build as build/fuzz/nh-fuzz-state-file with
 * ASan, UBSan and libFuzzer; run by scripts/fuzz (docs/fuzzing.md).
 *
 * Input: byte 0 picks the file (a state file for one of the configurations below, or the window
 * file), byte 1 holds flags, the rest is the file:
 *  - state file: the bytes as they are; flag 1 recomputes the image's CRC-32 first, so that
 *    mutations reach the parser behind the checksum.  A state that loads is then checked with
 *    nh_engine_check() and driven with a short write/trim/read workload.
 *  - window file: the first 64 bytes are the header, the next the entry table (at 4 KiB in the
 *    file), the rest the start of the window; flag 1 recomputes meta_crc, flag 2 window_crc,
 *    flags 4 and 8 cut the file short or make it longer.  An opened window is pinned, checked
 *    and dumped as the device would.
 *
 * NH_FUZZ_SEEDS=DIR: write one seed per file kind (real saves) into DIR and exit; the seeds in
 * tests/fuzz/corpus/state-file/ were made so.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <zlib.h>

#include "engine.h"
#include "fuzz-engine.h"
#include "ba-manager.h"

#define CAP (4u << 20)
#define GEOMETRY "channels=2,ways=2,pages=16,op=10,wl-threshold=8"

static const char *const configs[] = {
    "ftl=page," GEOMETRY,
    "ftl=dftl,cmt-size=4K," GEOMETRY,
    "ftl=bast," GEOMETRY,
    "ftl=fast," GEOMETRY,
    "ftl=sast," GEOMETRY,
    "ftl=page,streams=3," GEOMETRY,
};
#define NCONFIGS G_N_ELEMENTS(configs)
#define KIND_BA NCONFIGS

#define BA_SIZE     8192u
#define BA_ENTRIES  8u
#define BA_LBA      512u
#define BA_NSZE     (CAP / BA_LBA)

#define STATE_HDR   64
#define STATE_CRC   48
#define STATE_CLEAN 12

static char *dir, *state_path, *ba_path, *ba_bad;

static void cleanup(void)
{
    g_unlink(state_path);
    g_unlink(ba_path);
    g_unlink(ba_bad);
    g_rmdir(dir);
}

static NhEngine *engine(size_t kind)
{
    return fuzz_engine("state-file fuzzer", configs[kind], CAP);
}

static void workload(NhEngine *e, uint32_t seed, int n)
{
    uint64_t now = 1000, done, cap = nh_engine_logical_capacity(e) / 4096;

    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        NhRequest q = { .op = (seed >> 8) % 4 == 0 ? NH_OP_TRIM : (seed >> 8) % 4 == 1 ?
                              NH_OP_READ : NH_OP_WRITE,
                        .offset = ((seed >> 12) % (cap - 4)) * 4096ull,
                        .length = (1 + (seed >> 4) % 3) * 4096ull };
        now += 1000;
        nh_engine_submit(e, &q, now, &done, NULL);
    }
}

static void write_file(const char *path, const uint8_t *d, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (fd < 0 || (n && write(fd, d, n) != (ssize_t)n) || close(fd) < 0) {
        perror(path);
        abort();
    }
}

/* ----------------------------------------------------------------------------- state file */

static void fuzz_state(size_t kind, uint8_t flags, const uint8_t *d, size_t n)
{
    g_autofree uint8_t *f = g_memdup2(d, n);
    NhEngine *e = engine(kind);
    GBytes *fe = NULL;
    bool clean = false;

    if ((flags & 1) && n >= STATE_HDR) {
        uint8_t h[STATE_HDR];
        uint32_t crc;
        memcpy(h, f, STATE_HDR);
        memset(h + STATE_CLEAN, 0, 4);
        memset(h + STATE_CRC, 0, 4);
        crc = (uint32_t)crc32_z(crc32_z(0, h, STATE_HDR), f + STATE_HDR, n - STATE_HDR);
        memcpy(f + STATE_CRC, &crc, 4);
    }
    write_file(state_path, f, n);
    if (nh_engine_load(e, state_path, &fe, &clean, NULL)) {
        g_bytes_unref(fe);
        nh_engine_check(e, NULL);
        workload(e, n, 64);
        g_free(nh_engine_stats_json(e, false));
    }
    nh_engine_free(e);
}

/* ----------------------------------------------------------------------------- window file */

static void fuzz_ba(uint8_t flags, const uint8_t *d, size_t n)
{
    size_t len = NH_BA_META_SIZE + BA_SIZE, tab = BA_ENTRIES * sizeof(NhBaEntry), k;
    g_autofree uint8_t *f = g_malloc0(len + 4096);
    NhBa *ba;

    k = MIN(n, sizeof(NhBaHeader));
    memcpy(f, d, k);
    d += k, n -= k;
    k = MIN(n, tab);
    memcpy(f + NH_BA_TABLE_OFFSET, d, k);
    d += k, n -= k;
    memcpy(f + NH_BA_META_SIZE, d, MIN(n, BA_SIZE));
    if (flags & 1) {
        NhBaHeader h;
        uint32_t crc;
        memcpy(&h, f, sizeof(h));
        h.meta_crc = 0;
        crc = crc32(crc32(0, (const Bytef *)&h, sizeof(h)), f + NH_BA_TABLE_OFFSET, tab);
        memcpy(f + offsetof(NhBaHeader, meta_crc), &crc, 4);
    }
    if (flags & 2) {
        uint32_t crc = crc32(0, f + NH_BA_META_SIZE, BA_SIZE);
        memcpy(f + offsetof(NhBaHeader, window_crc), &crc, 4);
    }
    if (flags & 4) {
        len = (flags >> 4) * (len / 16) + (flags & 8 ? 7 : 0);   /* short, down to empty */
    } else if (flags & 8) {
        len += 4096;
    }
    write_file(ba_path, f, len);
    ba = nh_ba_open(ba_path, BA_SIZE, BA_ENTRIES, BA_LBA, BA_NSZE, NULL);
    if (ba) {
        for (uint32_t i = 0; i < BA_ENTRIES; i++) {
            if (nh_ba_check_entry(ba, i) == NH_BA_OK) {
                nh_ba_lbas_pinned(ba, ba->table[i].slba, ba->table[i].nlb);
                nh_ba_release(ba, i);
            } else if (nh_ba_check_pin(ba, i, i * 1024ull, i * 100ull, 2) == NH_BA_OK) {
                nh_ba_pin(ba, i, i * 1024ull, i * 100ull, 2);
            }
        }
        nh_ba_dump(ba, 1000);
        nh_ba_close(ba);
    }
}

/* ----------------------------------------------------------------------------- seeds */

static void put_seed(const char *seeds, const char *name, uint8_t kind, uint8_t flags,
                     const uint8_t *d, size_t n)
{
    g_autofree char *p = g_build_filename(seeds, name, NULL);
    g_autofree uint8_t *b = g_malloc(n + 2);

    b[0] = kind;
    b[1] = flags;
    memcpy(b + 2, d, n);
    write_file(p, b, n + 2);
}

typedef bool (*SaveFn)(const NhEngine *, const char *, const void *, size_t, GError **);

/* A seed of kind @k: the state file @save writes for @e. */
static void state_seed(const char *seeds, NhEngine *e, size_t k, SaveFn save, const char *what)
{
    g_autofree char *data = NULL;
    g_autofree char *name = g_strdup_printf("state-%zu-%s", k, what);
    gsize len;

    if (!save(e, state_path, "smart", 5, NULL) ||
        !g_file_get_contents(state_path, &data, &len, NULL)) {
        abort();
    }
    put_seed(seeds, name, k, 0, (uint8_t *)data, len);
}

static void make_seeds(const char *seeds)
{
    g_mkdir_with_parents(seeds, 0755);
    for (size_t k = 0; k < NCONFIGS; k++) {
        NhEngine *e = engine(k);

        workload(e, k + 1, 3000);
        state_seed(seeds, e, k, nh_engine_save, "clean");
        state_seed(seeds, e, k, nh_engine_checkpoint, "checkpoint");
        nh_engine_free(e);
    }
    for (int dumped = 0; dumped < 2; dumped++) {
        NhBa *ba = nh_ba_open(ba_path, BA_SIZE, BA_ENTRIES, BA_LBA, BA_NSZE, NULL);
        size_t tab = BA_ENTRIES * sizeof(NhBaEntry);
        g_autofree uint8_t *b = g_malloc(sizeof(NhBaHeader) + tab + 64);

        nh_ba_pin(ba, 1, 0, 10, 4);
        nh_ba_pin(ba, 3, 4096, 100, 8);
        memset(ba->window, 0xa5, 64);
        if (dumped) {
            nh_ba_dump(ba, 1000);
        }
        memcpy(b, ba->hdr, sizeof(NhBaHeader));
        memcpy(b + sizeof(NhBaHeader), ba->table, tab);
        memcpy(b + sizeof(NhBaHeader) + tab, ba->window, 64);
        put_seed(seeds, dumped ? "ba-dumped" : "ba-running", KIND_BA, 0, b,
                 sizeof(NhBaHeader) + tab + 64);
        nh_ba_close(ba);
        g_unlink(ba_path);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    dir = g_dir_make_tmp("nh-fuzz-XXXXXX", NULL);
    state_path = g_build_filename(dir, "state", NULL);
    ba_path = g_build_filename(dir, "window", NULL);
    ba_bad = g_strdup_printf("%s.bad", ba_path);
    atexit(cleanup);
    if (getenv("NH_FUZZ_SEEDS")) {
        make_seeds(getenv("NH_FUZZ_SEEDS"));
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t kind;

    if (size < 2) {
        return 0;
    }
    kind = data[0] % (NCONFIGS + 1);
    if (kind == KIND_BA) {
        fuzz_ba(data[1], data + 2, size - 2);
    } else {
        fuzz_state(kind, data[1], data + 2, size - 2);
    }
    return 0;
}
