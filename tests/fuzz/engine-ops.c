/*
 * engine-ops.c - libFuzzer target for the engine's request path: a configuration from the table
 * below and a sequence of host operations decoded from the input, checked against what
 * engine.h promises.  Built by scripts/fuzz-build as build/fuzz/nh-fuzz-engine-ops (ASan,
 * UBSan, libFuzzer); run by scripts/fuzz (docs/fuzzing.md); its seeds and the inputs that once
 * failed are replayed by `make check-unit` (tests/unit/meson.build).
 *
 * The device's generic-fuzz configurations reach the engine only through whole NVMe commands
 * at a hundred inputs a second, each resetting a machine; this target drives every FTL and
 * buffer policy directly, thousands of sequences a second, so that GC, merges, destaging,
 * DStream's reclustering and power loss meet in orders no test wrote down.
 *
 * Input: byte 0 picks the configuration, byte 1 holds flags (bit 0: save the state at the end
 * and load it into a fresh engine, which must map the same pages), then 8 bytes per operation:
 *   op        mod 16: write (6 in 16), read (2), trim, flush, FUA write, stream release,
 *             reclaim unit close, idle GC, power loss, drain; with zones, stream release
 *             and reclaim unit close are a zoned read, write or append and a zone action
 *   page      16 bits, modulo the logical pages plus 4 (so that some requests run past the end)
 *   len       low nibble: pages - 1; high nibble, bit 0: unaligned (offset and length moved by
 *             the sector count in the next byte)
 *   sectors   sectors the unaligned offset and length move by
 *   stream    placement tag, modulo the stream limit plus 2 (so that some are refused)
 *   delay     16 bits, microseconds from the previous operation
 *
 * What must hold (a violation aborts, which libFuzzer reports as a crash):
 *  - nh_engine_submit() accepts exactly the requests engine.h calls valid (arriving by
 *    NH_TIME_MAX, and a flush; or inside the space, length > 0, stream <= the limit), and
 *    completes them no earlier than now;
 *  - the mapping is what the host did: a write maps every page it touches, a trim unmaps the
 *    pages it covers whole, power loss unmaps what the engine reports lost; pages a lost range
 *    covers only in part are not checked again until rewritten;
 *  - zone operations: a refusal is a zone status or a range error and changes no zone; a
 *    write or append moves its zone's write pointer by its length exactly; power loss reports
 *    zoned ranges inside the zoned space;
 *  - nh_engine_check() is clean every 64 operations and at the end;
 *  - a saved and reloaded state maps the same pages.
 *
 * NH_FUZZ_SEEDS=DIR: write two seeds per configuration into DIR and exit (pseudo-random
 * operations, one sequence mostly writes so that GC runs); tests/fuzz/corpus/engine-ops/ was
 * made so.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "engine.h"
#include "fuzz-engine.h"

#define CAP (4u << 20)
#define PS  4096u
#define NPAGES (CAP / PS)

#define SMALL "channels=2,ways=2,op=10,"

static const char *const configs[] = {
    SMALL "pages=16,ftl=page",
    SMALL "pages=16,ftl=page,gc=cost-benefit,wl-threshold=4",
    SMALL "pages=16,ftl=page,alloc=dynamic",
    SMALL "pages=48,ftl=page,cell=tlc,one-shot=on",
    SMALL "pages=16,ftl=page,stripe-merge=on",
    SMALL "pages=16,ftl=dftl,cmt-size=4K",
    SMALL "pages=16,ftl=bast",
    SMALL "pages=16,ftl=fast",
    SMALL "pages=16,ftl=sast,log-blocks=6",
    SMALL "pages=16,ftl=page,streams=3",
    SMALL "pages=32,ftl=dftl,streams=3,stream-map=dstream,physical-streams=4,stream-buffer=4K,"
          "dstream-memory=24K,dstream-partitions=8,dstream-timestamp=64",
    SMALL "pages=48,ftl=page,cell=tlc,one-shot=on,streams=2",
    SMALL "pages=16,buffer=lru,buffer-size=64K",
    SMALL "pages=16,buffer=bplru,buffer-size=128K",
    SMALL "pages=16,buffer=fab,buffer-size=64K,cache-size=64K",
    SMALL "pages=16,buffer=clc,buffer-size=128K",
    SMALL "pages=16,buffer=ref,buffer-size=128K",
    SMALL "pages=16,buffer=bpac,buffer-size=128K",
    SMALL "pages=16,buffer=cbm,buffer-size=128K,cache-size=64K",
    SMALL "pages=16,ftl=dftl,cmt-size=1K,buffer=lbuf,buffer-size=128K,lbuf-session=64",
    SMALL "pages=16,buffer=lru,buffer-size=64K,buffer-volatile=off",
    SMALL "pages=16,ftl=fast,buffer=bplru,buffer-size=128K",
    SMALL "pages=16,cache-size=64K",
    /* the zoned region after the conventional space: ops 11 and 12 are zone operations */
    SMALL "pages=16,ftl=page,streams=0,zones=6,zone-width=2,zone-blocks=2,zone-max-open=2,"
          "zone-max-active=4,pe-cycles=40",
};
#define NCONFIGS G_N_ELEMENTS(configs)

enum { UNMAPPED, MAPPED, UNKNOWN };

typedef struct Run {
    NhEngine *e;
    uint8_t shadow[NPAGES];
    uint64_t now;
} Run;

static char *dir, *state_path;

static void cleanup(void)
{
    g_unlink(state_path);
    g_rmdir(dir);
}

#define FAIL(...) do { fprintf(stderr, "engine-ops: " __VA_ARGS__); fputc('\n', stderr); \
                       abort(); } while (0)

static NhConfig parsed[NCONFIGS];

static NhEngine *engine(size_t kind)
{
    return fuzz_engine_of("engine-ops", &parsed[kind], CAP);
}

static void compare(const Run *r, NhEngine *e, const char *when)
{
    for (uint32_t p = 0; p < NPAGES; p++) {
        if (r->shadow[p] != UNKNOWN && nh_engine_is_mapped(e, (uint64_t)p * PS) !=
                                       (r->shadow[p] == MAPPED)) {
            FAIL("%s: page %u mapped=%d, the host's operations say %d", when, p,
                 nh_engine_is_mapped(e, (uint64_t)p * PS), r->shadow[p] == MAPPED);
        }
    }
}

static void check(const Run *r, const char *when)
{
    GError *err = NULL;

    if (!nh_engine_check(r->e, &err)) {
        FAIL("%s: nh_engine_check: %s", when, err->message);
    }
    compare(r, r->e, when);
}

static void lost(void *opaque, uint64_t offset, uint64_t length)
{
    Run *r = opaque;
    uint64_t zbase = nh_engine_zone_base(r->e);
    uint64_t zend = zbase + nh_engine_zones(r->e) * nh_engine_zone_capacity(r->e);

    if (nh_engine_zones(r->e) && offset >= zbase) {
        if (length == 0 || offset + length > zend) {
            FAIL("power loss reported [%" PRIu64 ", +%" PRIu64 ") outside the zoned space",
                 offset, length);
        }
        return;
    }
    if (length == 0 || offset + length > CAP) {
        FAIL("power loss reported [%" PRIu64 ", +%" PRIu64 ") outside the space",
             offset, length);
    }
    for (uint64_t p = offset / PS; p <= (offset + length - 1) / PS; p++) {
        bool whole = p * PS >= offset && (p + 1) * PS <= offset + length;
        r->shadow[p] = whole ? UNMAPPED : UNKNOWN;
    }
}

/* A request that reached into the zoned region through the ordinary path: refused by the
 * range and stream rules with NH_ERROR, else served or refused with a zone status. */
static void zoned_submitted(Run *r, const NhRequest *q, bool ok, uint64_t done, GError *err)
{
    uint64_t end = nh_engine_zone_base(r->e) +
                   nh_engine_zones(r->e) * nh_engine_zone_capacity(r->e);
    bool legal = r->now <= NH_TIME_MAX && q->stream <= nh_engine_stream_limit(r->e) &&
                 q->length > 0 && q->offset + q->length <= end;

    if (ok ? !legal || done < r->now
           : legal != (err->domain == NH_ZONE_ERROR)) {
        FAIL("zoned op %d offset %" PRIu64 " length %" PRIu64 " stream %u: %s", q->op,
             q->offset, q->length, q->stream, ok ? "accepted against the rules or early"
                                                  : err->message);
    }
    if (err) {
        g_error_free(err);
    }
}

static void submit(Run *r, NhOp op, uint32_t flags, const uint8_t *o)
{
    uint32_t limit = nh_engine_stream_limit(r->e);
    uint64_t page = (uint64_t)(o[1] | o[2] << 8) % (NPAGES + 4);
    uint64_t len = (uint64_t)(o[3] & 15) + 1;
    NhRequest q = { .op = op, .flags = flags, .offset = page * PS, .length = len * PS,
                    .stream = o[5] % (limit + 2) };
    uint64_t done = 0;
    GError *err = NULL;
    bool valid, ok;

    if (o[3] & 16) {
        uint64_t shift = (uint64_t)(o[4] % 8) * 512;
        q.offset += shift;
        q.length -= MIN(q.length - 1, (uint64_t)(o[4] / 8 % 16) * 512 + shift);
    }
    if (op == NH_OP_FLUSH) {
        q.offset = q.length = 0;
    }
    valid = r->now <= NH_TIME_MAX && (op == NH_OP_FLUSH ||
            (q.stream <= limit && q.length > 0 && q.offset + q.length <= CAP));
    ok = nh_engine_submit(r->e, &q, r->now, &done, &err);
    if (op != NH_OP_FLUSH && nh_engine_zones(r->e) && q.offset >= nh_engine_zone_base(r->e)) {
        zoned_submitted(r, &q, ok, done, err);
        return;
    }
    if (ok != valid) {
        FAIL("op %d offset %" PRIu64 " length %" PRIu64 " stream %u (limit %u): %s",
             op, q.offset, q.length, q.stream, limit,
             ok ? "accepted, engine.h says refused" : err->message);
    }
    if (!ok) {
        g_error_free(err);
        return;
    }
    if (done < r->now) {
        FAIL("op %d completes at %" PRIu64 ", before it arrived at %" PRIu64, op, done, r->now);
    }
    if (op == NH_OP_WRITE) {
        for (uint64_t p = q.offset / PS; p <= (q.offset + q.length - 1) / PS; p++) {
            r->shadow[p] = MAPPED;
        }
    } else if (op == NH_OP_TRIM) {
        for (uint64_t p = (q.offset + PS - 1) / PS; p < (q.offset + q.length) / PS; p++) {
            r->shadow[p] = UNMAPPED;
        }
    }
}

#define MAX_ZONES 8

static void zones_of(NhEngine *e, NhZoneInfo *z)
{
    if (nh_engine_zones(e) > MAX_ZONES) {
        FAIL("a configuration with more than %d zones", MAX_ZONES);
    }
    for (uint32_t i = 0; i < nh_engine_zones(e); i++) {
        nh_engine_zone_info(e, i, &z[i]);
    }
}

static bool same_zones(const NhZoneInfo *a, const NhZoneInfo *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (a[i].state != b[i].state || a[i].wp != b[i].wp) {
            return false;
        }
    }
    return true;
}

/* A zoned read, write (at the write pointer, or off it) or append (@action false), or a zone
 * action (true); zone index zones means Select All for an action, no zone otherwise. */
static void zone_op(Run *r, const uint8_t *o, bool action)
{
    uint32_t zones = nh_engine_zones(r->e), zone = o[1] % (zones + 1);
    uint64_t cap = nh_engine_zone_capacity(r->e), len = ((uint64_t)(o[3] & 15) + 1) * 512;
    NhZoneInfo before[MAX_ZONES], after[MAX_ZONES];
    NhRequest q = { .op = o[4] & 1 ? NH_OP_READ : NH_OP_WRITE, .length = len };
    uint64_t done = 0, off = 0;
    GError *err = NULL;
    bool ok;

    zones_of(r->e, before);
    q.offset = nh_engine_zone_base(r->e) + zone * cap + (zone < zones ? before[zone].wp : 0) +
               (o[4] & 2 ? (uint64_t)o[5] * 512 : 0);
    if (action) {
        ok = nh_engine_zone_action(r->e, (NhZoneAction)(o[3] % 7),
                                   zone == zones ? NH_ZONE_ALL : zone, r->now, &done, &err);
    } else if (o[3] & 16) {
        ok = nh_engine_zone_append(r->e, zone, len, 0, r->now, &off, &done, &err);
    } else {
        ok = nh_engine_submit(r->e, &q, r->now, &done, &err);
    }
    zones_of(r->e, after);
    if (!ok) {
        if (err->domain != NH_ZONE_ERROR && err->domain != NH_ERROR) {
            FAIL("zone operation refused outside NH_ZONE_ERROR and NH_ERROR: %s", err->message);
        }
        if (!same_zones(before, after, zones)) {
            FAIL("a refused zone operation changed a zone: %s", err->message);
        }
        g_error_free(err);
        return;
    }
    if (done < r->now) {
        FAIL("zone operation completes at %" PRIu64 ", before it arrived", done);
    }
    /* the zone written: a full zone's write pointer is the next zone's start */
    zone = o[3] & 16 ? zone : (uint32_t)((q.offset - nh_engine_zone_base(r->e)) / cap);
    if (!action && (o[3] & 16 || q.op == NH_OP_WRITE) &&
        after[zone].wp != before[zone].wp + len) {
        FAIL("zone %u: a write of %" PRIu64 " moved its write pointer %" PRIu64 " -> %" PRIu64,
             zone, len, before[zone].wp, after[zone].wp);
    }
}

static void operate(Run *r, const uint8_t *o)
{
    uint32_t limit = nh_engine_stream_limit(r->e);
    uint64_t victims;

    r->now += (uint64_t)(o[6] | o[7] << 8) * 1000;
    switch (o[0] % 16) {
    case 0 ... 5:
        submit(r, NH_OP_WRITE, 0, o);
        break;
    case 6: case 7:
        submit(r, NH_OP_READ, 0, o);
        break;
    case 8:
        submit(r, NH_OP_TRIM, 0, o);
        break;
    case 9:
        submit(r, NH_OP_FLUSH, 0, o);
        break;
    case 10:
        submit(r, NH_OP_WRITE, NH_REQ_FUA, o);
        break;
    case 11:
        if (nh_engine_zones(r->e)) {
            zone_op(r, o, false);
            break;
        }
        nh_engine_stream_release(r->e, o[5] % (limit + 2));
        break;
    case 12:
        if (nh_engine_zones(r->e)) {
            zone_op(r, o, true);
            break;
        }
        if (nh_engine_stream_unit_close(r->e, o[5] % (limit + 2)) > nh_engine_unit_bytes(r->e)) {
            FAIL("a reclaim unit closed with more bytes left than a unit holds");
        }
        break;
    case 13:
        r->now = MAX(r->now, nh_engine_idle(r->e, r->now, &victims));
        break;
    case 14:
        nh_engine_power_loss(r->e, r->now, lost, r);
        break;
    case 15:
        r->now = MAX(r->now, nh_engine_drain(r->e, r->now));
        break;
    }
}

static void save_and_reload(Run *r, size_t kind)
{
    GError *err = NULL;
    NhEngine *b = engine(kind);
    GBytes *fe = NULL;
    bool clean = false;

    nh_engine_finish(r->e, r->now);
    if (!nh_engine_save(r->e, state_path, "fe", 2, &err) ||
        !nh_engine_load(b, state_path, &fe, &clean, &err)) {
        FAIL("save and load: %s", err->message);
    }
    if (!clean || g_bytes_get_size(fe) != 2) {
        FAIL("a clean save loaded as unclean, or its front-end blob changed");
    }
    g_bytes_unref(fe);
    compare(r, b, "after save and load");
    for (uint32_t i = 0; i < nh_engine_zones(b); i++) {
        NhZoneInfo x, y;
        nh_engine_zone_info(r->e, i, &x);
        nh_engine_zone_info(b, i, &y);
        /* a restart is a controller reset: open zones come back closed */
        if (x.wp != y.wp || (x.state != y.state && y.state != NH_ZONE_CLOSED &&
                             y.state != NH_ZONE_EMPTY)) {
            FAIL("zone %u after save and load: state %#x wp %" PRIu64 ", was %#x %" PRIu64, i,
                 y.state, y.wp, x.state, x.wp);
        }
    }
    nh_engine_free(b);
}

static void write_seeds(const char *seeds)
{
    GRand *g = g_rand_new_with_seed(20261125);

    g_mkdir_with_parents(seeds, 0755);
    for (size_t k = 0; k < NCONFIGS; k++) {
        for (int busy = 0; busy < 2; busy++) {
            size_t ops = busy ? 500 : 300, n = 2 + ops * 8;
            g_autofree uint8_t *b = g_malloc(n);
            g_autofree char *p = g_strdup_printf("%s/%02zu-%s", seeds, k,
                                                 busy ? "writes" : "mixed");
            GError *err = NULL;

            b[0] = (uint8_t)k;
            b[1] = 1;
            for (size_t i = 2; i < n; i++) {
                b[i] = (uint8_t)g_rand_int(g);
            }
            for (size_t i = 0; busy && i < ops; i++) {
                b[2 + i * 8] = (uint8_t)(g_rand_int_range(g, 0, 8) ? 0 : b[2 + i * 8]);
            }
            if (!g_file_set_contents(p, (const char *)b, (gssize)n, &err)) {
                FAIL("%s", err->message);
            }
        }
    }
    g_rand_free(g);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (g_getenv("NH_FUZZ_SEEDS")) {
        write_seeds(g_getenv("NH_FUZZ_SEEDS"));
        exit(0);
    }
    dir = g_dir_make_tmp("nh-fuzz-engine-XXXXXX", NULL);
    state_path = g_build_filename(dir, "state", NULL);
    atexit(cleanup);
    for (size_t k = 0; k < NCONFIGS; k++) {
        fuzz_config("engine-ops", configs[k], &parsed[k]);
        nh_engine_free(engine(k));     /* every configuration must be one the engine takes */
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Run *r;
    size_t kind, n;

    if (size < 2) {
        return 0;
    }
    kind = data[0] % NCONFIGS;
    r = g_new0(Run, 1);
    r->e = engine(kind);
    r->now = 1000;
    n = (size - 2) / 8;
    for (size_t i = 0; i < n; i++) {
        operate(r, data + 2 + i * 8);
        if (i % 64 == 63) {
            check(r, "every 64 operations");
        }
    }
    check(r, "at the end");
    g_free(nh_engine_stats_json(r->e, false));
    if (data[1] & 1) {
        save_and_reload(r, kind);
    }
    nh_engine_free(r->e);
    g_free(r);
    return 0;
}
