/* test-zones.c - the zoned region (docs/zoned.md): keys and geometry, the NVMe ZNS zone state
 * machine against the specification's transitions (every action and write from every state,
 * every error), limits, Select All, flash work and timing, random sequences under the
 * consistency check, the state file and power cuts. */
#include "unit.h"

/* 8 planes (2 channels, 2 ways, 2 planes a die) of 16-page blocks of 4 KiB: a zone on every
 * plane is 128 pages, 512 KiB. */
#define GEO "channels=2,ways=2,dies=1,planes=2,pages=16,page-size=4K,cell=slc," \
            "buffer=none,cache-size=0,streams=0,one-shot=off,unwritten-reads=free"
#define CAP (4u << 20)
#define ZCAP (512u << 10)

/* The test device with zones=8, @more's keys over it. */
static NhEngine *zengine(const char *more)
{
    NhConfig c;
    GError *err = NULL;
    NhEngine *e;

    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, GEO ",ftl=page,zones=8", &err));
    g_assert_true(nh_config_parse(&c, more, &err));
    e = nh_engine_new(&c, CAP, &err);
    g_assert_no_error(err);
    return e;
}

static NhZoneState zstate(NhEngine *e, uint32_t z)
{
    NhZoneInfo i;
    g_assert_true(nh_engine_zone_info(e, z, &i));
    return i.state;
}

static uint64_t zwp(NhEngine *e, uint32_t z)
{
    NhZoneInfo i;
    g_assert_true(nh_engine_zone_info(e, z, &i));
    return i.wp;
}

/* A write of @len bytes at byte @off of zone @z; the NhZoneError code, -1 on success, or
 * RANGE for a request outside the zoned space. */
#define RANGE 100
static int zwrite(NhEngine *e, uint32_t z, uint64_t off, uint64_t len, uint64_t now)
{
    NhRequest r = { .op = NH_OP_WRITE, .offset = nh_engine_zone_base(e) + z * ZCAP + off,
                    .length = len };
    uint64_t done;
    GError *err = NULL;
    int code = -1;

    if (!nh_engine_submit(e, &r, now, &done, &err)) {
        g_assert_true(err->domain == NH_ZONE_ERROR || err->domain == NH_ERROR);
        code = err->domain == NH_ZONE_ERROR ? err->code : RANGE;
        g_error_free(err);
    }
    return code;
}

static int zact(NhEngine *e, NhZoneAction a, uint32_t z, uint64_t now)
{
    uint64_t done;
    GError *err = NULL;
    int code = -1;

    if (!nh_engine_zone_action(e, a, z, now, &done, &err)) {
        g_assert_true(err->domain == NH_ZONE_ERROR);
        code = err->code;
        g_error_free(err);
    }
    return code;
}

static void test_geometry(void)
{
    NhEngine *e = zengine("");
    NhConfig c;
    GError *err = NULL;

    g_assert_cmpuint(nh_engine_zones(e), ==, 8);
    g_assert_cmpuint(nh_engine_zone_base(e), ==, CAP);
    g_assert_cmpuint(nh_engine_zone_capacity(e), ==, ZCAP);
    /* blocks=auto: the conventional space's blocks as without zones, plus the zones' 8 */
    {
        NhEngine *plain = unit_engine(GEO ",ftl=page", CAP);
        g_assert_cmpuint(nh_engine_config(e)->blocks, ==, nh_engine_config(plain)->blocks + 8);
        /* the zones count whole in what the geometry offers: no over-provisioning there */
        g_assert_cmpuint(nh_engine_logical_capacity(e), ==,
                         nh_engine_logical_capacity(plain) + 8 * ZCAP);
        nh_engine_free(plain);
    }
    unit_check(e);
    nh_engine_free(e);

    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, GEO ",ftl=bast,zones=4", &err));
    g_assert_null(nh_engine_new(&c, CAP, &err));
    g_assert_cmpstr(err->message, ==, "zones: needs an FTL whose blocks can leave a range of "
                    "every plane to the zones (ftl=page or dftl), got ftl=bast");
    g_clear_error(&err);
    g_assert_true(nh_config_parse(&c, "ftl=page,zone-width=3", &err));
    g_assert_null(nh_engine_new(&c, CAP, &err));
    g_assert_nonnull(strstr(err->message, "zone-width: 3 planes do not divide"));
    g_clear_error(&err);
    g_assert_true(nh_config_parse(&c, "zone-width=auto,blocks=4", &err));
    g_assert_null(nh_engine_new(&c, CAP, &err));
    g_assert_nonnull(strstr(err->message, "leave none to the conventional space"));
    g_clear_error(&err);
    g_assert_true(nh_config_parse(&c, "blocks=auto,zone-max-open=3,zone-max-active=2", &err));
    g_assert_null(nh_engine_new(&c, CAP, &err));
    g_assert_nonnull(strstr(err->message, "zone-max-open: 3 with zone-max-active=2"));
    g_clear_error(&err);
}

/* States a zone is brought to before a row's operation, the way a host gets there. */
static void reach(NhEngine *e, NhZoneState st)
{
    switch (st) {
    case NH_ZONE_IMP_OPEN:
        g_assert_cmpint(zwrite(e, 0, 0, 4096, 10), ==, -1);
        break;
    case NH_ZONE_EXP_OPEN:
        g_assert_cmpint(zact(e, NH_ZONE_OPEN, 0, 10), ==, -1);
        break;
    case NH_ZONE_CLOSED:
        g_assert_cmpint(zwrite(e, 0, 0, 4096, 10), ==, -1);
        g_assert_cmpint(zact(e, NH_ZONE_CLOSE, 0, 20), ==, -1);
        break;
    case NH_ZONE_FULL:
        g_assert_cmpint(zact(e, NH_ZONE_FINISH, 0, 10), ==, -1);
        break;
    case NH_ZONE_READ_ONLY:     /* pe-cycles=1: the first reset of a written zone wears it */
    case NH_ZONE_OFFLINE:
        g_assert_cmpint(zwrite(e, 0, 0, 4096, 10), ==, -1);
        g_assert_cmpint(zact(e, NH_ZONE_RESET, 0, 1000000), ==, -1);
        if (st == NH_ZONE_OFFLINE) {
            g_assert_cmpint(zact(e, NH_ZONE_OFFLINE_ACT, 0, 5000000), ==, -1);
        }
        break;
    default:
        break;
    }
    g_assert_cmpint(zstate(e, 0), ==, st);
}

#define OK -1
#define E(x) NH_ZONE_ERR_##x
#define W 0     /* a row's operation: a write at the write pointer, not an action */

typedef struct Row {
    NhZoneState from;
    int op;             /* W or an NhZoneAction */
    int code;           /* OK or the NhZoneError */
    NhZoneState to;
} Row;

/* The specification's zone state machine, every state by every action and a write. */
static const Row rows[] = {
    { NH_ZONE_EMPTY, W, OK, NH_ZONE_IMP_OPEN },
    { NH_ZONE_EMPTY, NH_ZONE_OPEN, OK, NH_ZONE_EXP_OPEN },
    { NH_ZONE_EMPTY, NH_ZONE_CLOSE, E(INVALID_TRANSITION), NH_ZONE_EMPTY },
    { NH_ZONE_EMPTY, NH_ZONE_FINISH, OK, NH_ZONE_FULL },
    { NH_ZONE_EMPTY, NH_ZONE_RESET, OK, NH_ZONE_EMPTY },
    { NH_ZONE_EMPTY, NH_ZONE_OFFLINE_ACT, E(INVALID_TRANSITION), NH_ZONE_EMPTY },
    { NH_ZONE_IMP_OPEN, W, OK, NH_ZONE_IMP_OPEN },
    { NH_ZONE_IMP_OPEN, NH_ZONE_OPEN, OK, NH_ZONE_EXP_OPEN },
    { NH_ZONE_IMP_OPEN, NH_ZONE_CLOSE, OK, NH_ZONE_CLOSED },
    { NH_ZONE_IMP_OPEN, NH_ZONE_FINISH, OK, NH_ZONE_FULL },
    { NH_ZONE_IMP_OPEN, NH_ZONE_RESET, OK, NH_ZONE_EMPTY },
    { NH_ZONE_IMP_OPEN, NH_ZONE_OFFLINE_ACT, E(INVALID_TRANSITION), NH_ZONE_IMP_OPEN },
    { NH_ZONE_EXP_OPEN, W, OK, NH_ZONE_EXP_OPEN },
    { NH_ZONE_EXP_OPEN, NH_ZONE_OPEN, OK, NH_ZONE_EXP_OPEN },
    { NH_ZONE_EXP_OPEN, NH_ZONE_CLOSE, OK, NH_ZONE_CLOSED },
    { NH_ZONE_EXP_OPEN, NH_ZONE_FINISH, OK, NH_ZONE_FULL },
    { NH_ZONE_EXP_OPEN, NH_ZONE_RESET, OK, NH_ZONE_EMPTY },
    { NH_ZONE_EXP_OPEN, NH_ZONE_OFFLINE_ACT, E(INVALID_TRANSITION), NH_ZONE_EXP_OPEN },
    { NH_ZONE_CLOSED, W, OK, NH_ZONE_IMP_OPEN },
    { NH_ZONE_CLOSED, NH_ZONE_OPEN, OK, NH_ZONE_EXP_OPEN },
    { NH_ZONE_CLOSED, NH_ZONE_CLOSE, OK, NH_ZONE_CLOSED },
    { NH_ZONE_CLOSED, NH_ZONE_FINISH, OK, NH_ZONE_FULL },
    { NH_ZONE_CLOSED, NH_ZONE_RESET, OK, NH_ZONE_EMPTY },
    { NH_ZONE_CLOSED, NH_ZONE_OFFLINE_ACT, E(INVALID_TRANSITION), NH_ZONE_CLOSED },
    { NH_ZONE_FULL, W, E(FULL), NH_ZONE_FULL },
    { NH_ZONE_FULL, NH_ZONE_OPEN, E(INVALID_TRANSITION), NH_ZONE_FULL },
    { NH_ZONE_FULL, NH_ZONE_CLOSE, E(INVALID_TRANSITION), NH_ZONE_FULL },
    { NH_ZONE_FULL, NH_ZONE_FINISH, OK, NH_ZONE_FULL },
    { NH_ZONE_FULL, NH_ZONE_RESET, OK, NH_ZONE_EMPTY },
    { NH_ZONE_FULL, NH_ZONE_OFFLINE_ACT, E(INVALID_TRANSITION), NH_ZONE_FULL },
    { NH_ZONE_READ_ONLY, W, E(READ_ONLY), NH_ZONE_READ_ONLY },
    { NH_ZONE_READ_ONLY, NH_ZONE_OPEN, E(READ_ONLY), NH_ZONE_READ_ONLY },
    { NH_ZONE_READ_ONLY, NH_ZONE_CLOSE, E(READ_ONLY), NH_ZONE_READ_ONLY },
    { NH_ZONE_READ_ONLY, NH_ZONE_FINISH, E(READ_ONLY), NH_ZONE_READ_ONLY },
    { NH_ZONE_READ_ONLY, NH_ZONE_RESET, E(READ_ONLY), NH_ZONE_READ_ONLY },
    { NH_ZONE_READ_ONLY, NH_ZONE_OFFLINE_ACT, OK, NH_ZONE_OFFLINE },
    { NH_ZONE_OFFLINE, W, E(OFFLINE), NH_ZONE_OFFLINE },
    { NH_ZONE_OFFLINE, NH_ZONE_OPEN, E(OFFLINE), NH_ZONE_OFFLINE },
    { NH_ZONE_OFFLINE, NH_ZONE_CLOSE, E(OFFLINE), NH_ZONE_OFFLINE },
    { NH_ZONE_OFFLINE, NH_ZONE_FINISH, E(OFFLINE), NH_ZONE_OFFLINE },
    { NH_ZONE_OFFLINE, NH_ZONE_RESET, E(OFFLINE), NH_ZONE_OFFLINE },
    { NH_ZONE_OFFLINE, NH_ZONE_OFFLINE_ACT, OK, NH_ZONE_OFFLINE },
};

static void test_transitions(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
        const Row *r = &rows[i];
        bool worn = r->from == NH_ZONE_READ_ONLY || r->from == NH_ZONE_OFFLINE;
        NhEngine *e = zengine(worn ? "pe-cycles=1" : "");
        uint64_t now = 10000000;
        int got;

        reach(e, r->from);
        /* a full zone's write pointer is the next zone's start: write at its own start */
        got = r->op == W ? zwrite(e, 0, zwp(e, 0) % ZCAP, 4096, now) : zact(e, r->op, 0, now);
        if (got != r->code || zstate(e, 0) != r->to) {
            g_error("row %zu: from %#x by %d: status %d state %#x, want %d and %#x", i, r->from,
                    r->op, got, zstate(e, 0), r->code, r->to);
        }
        unit_check(e);
        nh_engine_free(e);
    }
}

/* The other statuses: not at the write pointer, past the capacity, trim, no such zone or
 * action, reads of an offline zone; none changes the model. */
static void test_errors(void)
{
    NhEngine *e = zengine("pe-cycles=1");
    NhRequest trim = { .op = NH_OP_TRIM, .offset = CAP, .length = 4096 };
    NhRequest rd = { .op = NH_OP_READ, .offset = CAP + 2 * ZCAP - 4096, .length = 8192 };
    uint64_t done, off;
    GError *err = NULL;
    char *before;

    g_assert_cmpint(zwrite(e, 0, 0, 8192, 10), ==, OK);
    before = nh_engine_stats_json(e, false);
    g_assert_cmpint(zwrite(e, 0, 4096, 4096, 20), ==, E(INVALID_WRITE));
    g_assert_cmpint(zwrite(e, 0, 16384, 4096, 20), ==, E(INVALID_WRITE));
    g_assert_cmpint(zwrite(e, 0, 8192, ZCAP, 20), ==, E(BOUNDARY));
    g_assert_false(nh_engine_zone_append(e, 0, ZCAP, 0, 20, &off, &done, &err));
    g_assert_cmpint(err->code, ==, E(BOUNDARY));
    g_clear_error(&err);
    g_assert_false(nh_engine_submit(e, &trim, 20, &done, &err));
    g_assert_cmpint(err->code, ==, E(INVALID));
    g_clear_error(&err);
    g_assert_cmpint(zact(e, NH_ZONE_OPEN, 8, 20), ==, E(INVALID));
    {   /* engine.h's stream rule holds on the zoned region too (found by the fuzz target) */
        NhRequest w = { .op = NH_OP_WRITE, .offset = CAP + 8192, .length = 4096, .stream = 1 };
        g_assert_false(nh_engine_submit(e, &w, 20, &done, &err));
        g_assert_true(err->domain == NH_ERROR);
        g_clear_error(&err);
    }
    g_assert_cmpint(zact(e, 0x7, 0, 20), ==, E(INVALID));
    g_assert_cmpuint(unit_stat(e, "zones", "refused"), ==, 7);
    g_assert_cmpuint(zwp(e, 0), ==, 8192);
    {   /* nothing else moved: the document is the same but for the refusals */
        char *after = nh_engine_stats_json(e, false);
        g_assert_true(unit_json_same(before, after, "host"));
        g_assert_true(unit_json_same(before, after, "nand"));
        g_assert_true(unit_json_same(before, after, "zones.state"));
        g_free(after);
    }
    g_free(before);
    /* a read across two zones is fine, unless one of them is offline */
    g_assert_true(nh_engine_submit(e, &rd, 30, &done, &err));
    g_assert_cmpint(zwrite(e, 1, 0, 4096, 40), ==, OK);
    g_assert_cmpint(zact(e, NH_ZONE_RESET, 1, 50), ==, OK);
    g_assert_cmpint(zstate(e, 1), ==, NH_ZONE_READ_ONLY);
    g_assert_cmpint(zact(e, NH_ZONE_OFFLINE_ACT, 1, 5000000), ==, OK);
    g_assert_false(nh_engine_submit(e, &rd, 6000000, &done, &err));
    g_assert_cmpint(err->code, ==, E(OFFLINE));
    g_clear_error(&err);
    unit_check(e);
    nh_engine_free(e);
}

/* zone-max-open=2, zone-max-active=3: explicit opens are refused at the limit, implicit ones
 * close the least recently written implicitly opened zone; Select All. */
static void test_limits(void)
{
    NhEngine *e = zengine("zone-max-open=2,zone-max-active=3");
    uint64_t t = 10;

    g_assert_cmpuint(nh_engine_zone_max_open(e), ==, 2);
    g_assert_cmpuint(nh_engine_zone_max_active(e), ==, 3);
    g_assert_cmpint(zact(e, NH_ZONE_OPEN, 0, t++), ==, OK);
    g_assert_cmpint(zact(e, NH_ZONE_OPEN, 1, t++), ==, OK);
    g_assert_cmpint(zact(e, NH_ZONE_OPEN, 2, t++), ==, E(TOO_MANY_OPEN));
    g_assert_cmpint(zwrite(e, 2, 0, 4096, t++), ==, E(TOO_MANY_OPEN));
    g_assert_cmpint(zact(e, NH_ZONE_CLOSE, NH_ZONE_ALL, t++), ==, OK);
    g_assert_cmpint(zstate(e, 0), ==, NH_ZONE_CLOSED);
    g_assert_cmpint(zstate(e, 1), ==, NH_ZONE_CLOSED);
    g_assert_cmpint(zwrite(e, 1, 0, 4096, t++), ==, OK);      /* closed -> implicitly open */
    g_assert_cmpint(zwrite(e, 0, 0, 4096, t++), ==, OK);
    /* a third open: 1, written longest ago, is closed to make room */
    g_assert_cmpint(zwrite(e, 2, 0, 4096, t++), ==, OK);
    g_assert_cmpint(zstate(e, 1), ==, NH_ZONE_CLOSED);
    g_assert_cmpuint(unit_stat(e, "zones", "implicit_closes"), ==, 1);
    g_assert_cmpint(zwrite(e, 3, 0, 4096, t++), ==, E(TOO_MANY_ACTIVE));
    g_assert_cmpint(zact(e, NH_ZONE_FINISH, 3, t++), ==, E(TOO_MANY_ACTIVE));
    g_assert_cmpint(zact(e, NH_ZONE_FINISH, 1, t++), ==, OK);
    g_assert_cmpint(zwrite(e, 3, 0, 4096, t++), ==, OK);      /* 0 closes now */
    g_assert_cmpint(zstate(e, 0), ==, NH_ZONE_CLOSED);
    g_assert_cmpint(zstate(e, 2), ==, NH_ZONE_IMP_OPEN);
    g_assert_cmpint(zstate(e, 3), ==, NH_ZONE_IMP_OPEN);
    g_assert_cmpint(zwrite(e, 4, 0, 4096, t++), ==, E(TOO_MANY_ACTIVE));
    /* open all: 1 closed zone and 2 open would pass 2 */
    g_assert_cmpint(zact(e, NH_ZONE_OPEN, NH_ZONE_ALL, t++), ==, E(TOO_MANY_OPEN));
    g_assert_cmpint(zact(e, NH_ZONE_CLOSE, NH_ZONE_ALL, t++), ==, OK);
    g_assert_cmpint(zact(e, NH_ZONE_OPEN, NH_ZONE_ALL, t++), ==, E(TOO_MANY_OPEN));
    g_assert_cmpuint(unit_stat(e, "zones.state", "closed"), ==, 3);
    g_assert_cmpint(zact(e, NH_ZONE_FINISH, NH_ZONE_ALL, t++), ==, OK);
    g_assert_cmpuint(unit_stat(e, "zones.state", "full"), ==, 4);
    g_assert_cmpint(zact(e, NH_ZONE_RESET, NH_ZONE_ALL, t++), ==, OK);
    g_assert_cmpuint(unit_stat(e, "zones.state", "empty"), ==, 8);
    unit_check(e);
    nh_engine_free(e);
}

/* Writes program whole program units in order, the rest staged; reads below the write pointer
 * read the flash, above it are unwritten reads; appends go to the write pointer; finish pads
 * the started blocks; reset erases the written blocks. */
static void test_flash(void)
{
    NhEngine *e = zengine("zone-finish=pad");
    NhRequest rd = { .op = NH_OP_READ, .offset = CAP, .length = ZCAP };
    uint64_t done, off, before;
    GError *err = NULL;

    g_assert_cmpint(zwrite(e, 0, 0, 6144, 0), ==, OK);     /* one page and a half */
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 1);
    g_assert_true(nh_engine_zone_append(e, 0, 10240, 0, 1000000, &off, &done, &err));
    g_assert_cmpuint(off, ==, CAP + 6144);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 4);
    g_assert_cmpuint(zwp(e, 0), ==, 16384);
    g_assert_true(nh_engine_is_mapped(e, CAP + 16383));
    g_assert_false(nh_engine_is_mapped(e, CAP + 16384));
    g_assert_true(nh_engine_submit(e, &rd, 2000000, &done, &err));
    g_assert_cmpuint(unit_stat(e, "nand", "page_reads"), ==, 4);
    g_assert_cmpuint(unit_stat(e, "host", "unwritten_read_pages"), ==, 124);
    /* 4 pages on 4 planes: each plane's first block started, padded to 16 pages */
    g_assert_cmpint(zact(e, NH_ZONE_FINISH, 0, 3000000), ==, OK);
    g_assert_cmpuint(zwp(e, 0), ==, ZCAP);
    g_assert_cmpuint(unit_stat(e, "zones", "finish_pad_pages"), ==, 60);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 64);
    unit_check(e);
    before = unit_stat(e, "nand", "block_erases");
    g_assert_cmpint(zact(e, NH_ZONE_RESET, 0, 9000000), ==, OK);
    g_assert_cmpuint(unit_stat(e, "nand", "block_erases") - before, ==, 4);
    g_assert_cmpuint(unit_stat(e, "zones", "reset_erases"), ==, 4);
    g_assert_cmpuint(unit_stat(e, "zones", "appends"), ==, 1);
    unit_check(e);
    nh_engine_free(e);

    /* mark: only the staged half page is programmed */
    e = zengine("zone-finish=mark");
    g_assert_cmpint(zwrite(e, 0, 0, 6144, 0), ==, OK);
    g_assert_cmpint(zact(e, NH_ZONE_FINISH, 0, 1000000), ==, OK);
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 2);
    g_assert_cmpuint(unit_stat(e, "zones", "finish_pad_pages"), ==, 0);
    unit_check(e);
    nh_engine_free(e);
}

/* Random operations on random zones, the model checked after every one: write pointers within
 * capacity, pages below them programmed, counts of open and active zones, zone blocks never
 * the FTL's; conventional writes meanwhile make the FTL collect garbage beside them. */
static void random_ops(const char *more)
{
    g_autofree char *props = g_strconcat("zone-max-open=3,zone-max-active=5,pe-cycles=40,",
                                         more, NULL);
    NhEngine *e = zengine(props);
    GRand *rnd = g_rand_new_with_seed(28);
    uint64_t now = 0, done, off;

    for (int i = 0; i < 8000; i++) {
        uint32_t z = g_rand_int_range(rnd, 0, 8);
        int what = g_rand_int_range(rnd, 0, 11);
        NhRequest conv = { .op = NH_OP_WRITE, .length = 4096,
                           .offset = (uint64_t)g_rand_int_range(rnd, 0, CAP / 4096) * 4096 };
        now += 20000;
        if (what < 4) {
            zwrite(e, z, g_rand_int_range(rnd, 0, 3) ? zwp(e, z) % ZCAP : 0,
                   (uint64_t)g_rand_int_range(rnd, 1, 12) * 2048, now);
        } else if (what == 4) {
            nh_engine_zone_append(e, z, 4096, 0, now, &off, &done, NULL);
        } else if (what < 8) {
            g_assert_true(nh_engine_submit(e, &conv, now, &done, NULL));
        } else {
            zact(e, g_rand_int_range(rnd, NH_ZONE_CLOSE, NH_ZONE_OFFLINE_ACT + 1),
                 g_rand_boolean(rnd) ? z : NH_ZONE_ALL, now);
        }
        if (i % 50 == 0) {
            unit_check(e);
        }
    }
    unit_check(e);
    g_assert_cmpuint(unit_stat(e, "ftl", "gc_blocks"), >, 0);
    /* every path was taken: limits, Select All, wear to read-only and offline */
    g_assert_cmpuint(unit_stat(e, "zones", "implicit_closes"), >, 0);
    g_assert_cmpuint(unit_stat(e, "zones", "finishes"), >, 0);
    g_assert_cmpuint(unit_stat(e, "zones", "resets"), >, 0);
    g_assert_cmpuint(unit_stat(e, "zones", "offlines"), >, 0);
    g_rand_free(rnd);
    nh_engine_free(e);
}

/* ftl=page, and beside dftl's translation blocks, with alloc=dynamic, and on TLC word lines
 * programmed one-shot (program units of 3 pages; 4 KiB writes stage) */
static void test_random(void)
{
    random_ops("zone-finish=pad");
    random_ops("zone-finish=mark,zone-width=2,zone-layout=packed,zone-blocks=2");
    random_ops("ftl=dftl,cmt-size=4K,zone-width=4,zone-blocks=3");
    random_ops("alloc=dynamic,zone-width=4");
}

static void test_random_one_shot(void)
{
    NhEngine *e;

    random_ops("cell=tlc,one-shot=on,pages=18,zone-width=auto");
    e = zengine("cell=tlc,one-shot=on,pages=18");
    g_assert_cmpint(zwrite(e, 0, 0, 8192, 0), ==, OK);      /* 2 pages: staged */
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 0);
    g_assert_cmpint(zwrite(e, 0, 8192, 4096, 10), ==, OK);  /* a word line: one program */
    g_assert_cmpuint(unit_stat(e, "nand", "page_programs"), ==, 3);
    g_assert_cmpuint(unit_stat(e, "nand", "program_ops"), ==, 1);
    unit_check(e);
    nh_engine_free(e);
}

/* The zone table survives a save and a checkpoint; an open zone comes back closed. */
static void test_state(void)
{
    NhEngine *a = zengine(""), *b = zengine("");
    char *dir = g_dir_make_tmp("nh-zones-XXXXXX", NULL);
    char *path = g_build_filename(dir, "state", NULL);
    GError *err = NULL;
    bool clean;

    g_assert_cmpint(zwrite(a, 0, 0, 40960, 0), ==, OK);
    g_assert_cmpint(zact(a, NH_ZONE_FINISH, 1, 1000000), ==, OK);
    g_assert_cmpint(zwrite(a, 2, 0, 6144, 2000000), ==, OK);
    g_assert_cmpint(zact(a, NH_ZONE_CLOSE, 2, 3000000), ==, OK);
    unit_reload(a, b);
    g_assert_cmpint(zstate(b, 0), ==, NH_ZONE_CLOSED);
    g_assert_cmpuint(zwp(b, 0), ==, 40960);
    g_assert_cmpint(zstate(b, 1), ==, NH_ZONE_FULL);
    g_assert_cmpint(zstate(b, 2), ==, NH_ZONE_CLOSED);
    g_assert_cmpuint(zwp(b, 2), ==, 6144);
    unit_check(b);
    g_assert_cmpint(zwrite(b, 0, 40960, 4096, 10), ==, OK);   /* goes on where it was */
    unit_check(b);
    /* a checkpoint (dirty: no mapping) keeps the zone table */
    g_assert_true(nh_engine_checkpoint(b, path, NULL, 0, &err));
    nh_engine_free(a);
    a = zengine("");
    g_assert_true(nh_engine_load(a, path, NULL, &clean, &err));
    g_assert_no_error(err);
    g_assert_false(clean);
    g_assert_cmpuint(zwp(a, 0), ==, 45056);
    unit_check(a);
    /* rebuilt from a backend's allocation map: written ranges move the write pointer */
    nh_engine_mark_written(a, CAP + 3 * ZCAP, 2 * ZCAP + 8192);
    g_assert_cmpint(zstate(a, 3), ==, NH_ZONE_FULL);
    g_assert_cmpint(zstate(a, 5), ==, NH_ZONE_CLOSED);
    g_assert_cmpuint(zwp(a, 5), ==, 8192);
    g_assert_cmpuint(unit_stat(a, "nand", "page_programs"), ==,
                     unit_stat(b, "nand", "page_programs"));
    unit_check(a);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    nh_engine_free(a);
    nh_engine_free(b);
}

typedef struct Lost {
    uint64_t offset, length;
    int calls;
} Lost;

static void on_lost(void *opaque, uint64_t offset, uint64_t length)
{
    Lost *l = opaque;
    l->offset = offset;
    l->length = length;
    l->calls++;
}

/* A cut between two writes' completions: the first survives, the second is lost with what
 * came after it, the zone's write pointer where the first ends. */
static void test_power(void)
{
    NhEngine *e = zengine("");
    NhRequest w = { .op = NH_OP_WRITE, .offset = CAP, .length = 32768 };
    uint64_t d1, d2;
    Lost l = { 0 };

    g_assert_true(nh_engine_submit(e, &w, 0, &d1, NULL));
    w.offset += 32768;
    g_assert_true(nh_engine_submit(e, &w, 1000, &d2, NULL));
    g_assert_cmpuint(d1, <, d2);
    nh_engine_power_loss(e, (d1 + d2) / 2, on_lost, &l);
    g_assert_cmpint(l.calls, ==, 1);
    g_assert_cmpuint(l.offset, ==, CAP + 32768);
    g_assert_cmpuint(l.length, ==, 32768);
    g_assert_cmpuint(zwp(e, 0), ==, 32768);
    g_assert_cmpint(zstate(e, 0), ==, NH_ZONE_CLOSED);
    unit_check(e);
    /* the lost pages can be written again */
    g_assert_cmpint(zwrite(e, 0, 32768, 32768, d2 + 1), ==, OK);
    unit_check(e);
    /* a cut after every completion loses nothing */
    memset(&l, 0, sizeof(l));
    nh_engine_power_loss(e, d2 * 10, on_lost, &l);
    g_assert_cmpint(l.calls, ==, 0);
    g_assert_cmpuint(zwp(e, 0), ==, 65536);
    nh_engine_free(e);
}

/* Read latency in zone A while zone B is reset: with every zone on every plane B's erases hold
 * A's dies; with a zone on one die's planes (packed) A and B share none. */
static uint64_t read_during_reset(const char *layout)
{
    g_autofree char *more = g_strconcat("zone-finish=pad,", layout, NULL);
    NhEngine *e = zengine(more);
    NhRequest rd = { .op = NH_OP_READ, .offset = CAP, .length = 4096 };
    uint64_t done, t;

    g_assert_cmpint(zwrite(e, 0, 0, 65536, 0), ==, OK);
    g_assert_cmpint(zwrite(e, 1, 0, 65536, 0), ==, OK);
    g_assert_cmpint(zact(e, NH_ZONE_RESET, 1, 100000000), ==, OK);
    g_assert_true(nh_engine_submit(e, &rd, 100000100, &done, NULL));
    t = done - 100000100;
    nh_engine_free(e);
    return t;
}

static void test_interference(void)
{
    uint64_t shared = read_during_reset("zone-width=auto");
    uint64_t apart = read_during_reset("zone-width=2,zone-layout=packed");

    /* slc: tBERS 1.5 ms, tR 25 us */
    g_assert_cmpuint(shared, >, 1000000);
    g_assert_cmpuint(apart, <, 100000);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/zones/geometry", test_geometry);
    g_test_add_func("/zones/transitions", test_transitions);
    g_test_add_func("/zones/errors", test_errors);
    g_test_add_func("/zones/limits", test_limits);
    g_test_add_func("/zones/flash", test_flash);
    g_test_add_func("/zones/random", test_random);
    g_test_add_func("/zones/random-one-shot", test_random_one_shot);
    g_test_add_func("/zones/state", test_state);
    g_test_add_func("/zones/power", test_power);
    g_test_add_func("/zones/interference", test_interference);
    return g_test_run();
}
