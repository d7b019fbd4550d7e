/* The BA-buffer and recovery manager (bar-pm/ba-manager.c) without QEMU: the energy model, pin
 * validation, and what a start finds after each kind of power loss or damage. */
#include "ba-manager.h"

#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define WIN (1u << 20)
#define ENTRIES 4
#define NSZE 8192u          /* 4 MiB of 512-byte LBAs */

static char *dir;

static char *path(void)
{
    return g_build_filename(dir, "w.ba", NULL);
}

static NhBa *open_ba(const char *p)
{
    GError *err = NULL;
    NhBa *ba = nh_ba_open(p, WIN, ENTRIES, 512, NSZE, &err);

    g_assert_no_error(err);
    g_assert_nonnull(ba);
    return ba;
}

static void test_energy(void)
{
    NhConfig c;
    GError *err = NULL;
    uint64_t ns;

    nh_config_defaults(&c);
    g_assert_true(nh_config_parse(&c, "preset=none", NULL));
    /* the keys' own default geometry: 32 planes x 4 KiB per 200 us SLC program = 655.36 MB/s */
    g_assert_cmpfloat_with_epsilon(nh_ba_dump_rate(&c), 655.36e6, 1e3);
    g_assert_true(nh_ba_check_energy(8 << 20, &c, 810, 35, &ns, &err));
    g_assert_cmpuint(ns, ==, (uint64_t)(((8 << 20) + NH_BA_META_SIZE) / 655.36e6 * 1e9));
    g_assert_false(nh_ba_check_energy(1u << 30, &c, 810, 35, &ns, &err));
    g_assert_nonnull(strstr(err->message, "ba-size"));
    g_clear_error(&err);
    /* 40 V and 20 mF hold 15.75 J: 2.6 s at 6 W, enough for 1 GiB at 655 MB/s */
    g_assert_true(nh_ba_check_energy(1u << 30, &c, 20000, 40, &ns, &err));
    g_assert_false(nh_ba_check_energy(8 << 20, &c, 810, 5, &ns, &err));
    g_assert_nonnull(strstr(err->message, "ba-cap-volt"));
    g_clear_error(&err);
    /* the channel bus bounds the rate: 1 channel at 10 MB/s */
    g_assert_true(nh_config_parse(&c, "channels=1,channel-mbps=10", NULL));
    g_assert_cmpfloat_with_epsilon(nh_ba_dump_rate(&c), 10e6, 1);
}

static void test_pins(void)
{
    NhBa *ba = nh_ba_open(NULL, WIN, ENTRIES, 512, NSZE, NULL);

    g_assert_cmpint(nh_ba_check_pin(ba, ENTRIES, 0, 0, 1), ==, NH_BA_EBADEID);
    g_assert_cmpint(nh_ba_check_pin(ba, 0, 0, 0, 0), ==, NH_BA_EWINDOW);
    g_assert_cmpint(nh_ba_check_pin(ba, 0, WIN - 511, 0, 1), ==, NH_BA_EWINDOW);
    g_assert_cmpint(nh_ba_check_pin(ba, 0, 0, 0, WIN / 512 + 1), ==, NH_BA_EWINDOW);
    g_assert_cmpint(nh_ba_check_pin(ba, 0, 0, NSZE - 1, 2), ==, NH_BA_ELBA);
    g_assert_cmpint(nh_ba_check_pin(ba, 0, 0, UINT64_MAX, 2), ==, NH_BA_ELBA);
    g_assert_cmpint(nh_ba_check_pin(ba, 0, 1000, 100, 8), ==, NH_BA_OK);
    nh_ba_pin(ba, 0, 1000, 100, 8);                     /* window 1000..5095, LBAs 100..107 */
    g_assert_cmpint(nh_ba_check_pin(ba, 0, 8192, 200, 1), ==, NH_BA_EBUSY);
    g_assert_cmpint(nh_ba_check_pin(ba, 1, 5095, 200, 1), ==, NH_BA_EOVERLAP);
    g_assert_cmpint(nh_ba_check_pin(ba, 1, 5096, 107, 1), ==, NH_BA_EOVERLAP);
    g_assert_cmpint(nh_ba_check_pin(ba, 1, 5096, 108, 1), ==, NH_BA_OK);
    g_assert_cmpint(nh_ba_check_entry(ba, 0), ==, NH_BA_OK);
    g_assert_cmpint(nh_ba_check_entry(ba, 1), ==, NH_BA_ENOTPINNED);
    g_assert_true(nh_ba_lbas_pinned(ba, 90, 11));
    g_assert_false(nh_ba_lbas_pinned(ba, 108, 100));
    nh_ba_release(ba, 0);
    g_assert_false(nh_ba_lbas_pinned(ba, 100, 1));
    nh_ba_close(ba);
}

static void test_recovery(void)
{
    g_autofree char *p = path();
    g_autofree char *bad = g_strdup_printf("%s.bad", p);
    NhBa *ba = open_ba(p);

    g_assert_cmpint(ba->restore, ==, NH_BA_NEW);
    nh_ba_pin(ba, 2, 4096, 64, 16);
    memcpy(ba->window + 4097, "kept", 4);
    nh_ba_close(ba);                                     /* killed: no dump */

    ba = open_ba(p);
    g_assert_cmpint(ba->restore, ==, NH_BA_RECOVERED);
    g_assert_cmpint(ba->table[2].state, ==, NH_BA_PINNED);
    g_assert_cmpuint(ba->table[2].slba, ==, 64);
    g_assert_cmpmem(ba->window + 4097, 4, "kept", 4);
    nh_ba_dump(ba, 123);
    nh_ba_close(ba);

    ba = open_ba(p);
    g_assert_cmpint(ba->restore, ==, NH_BA_RESTORED);
    g_assert_cmpuint(ba->hdr->dumps, ==, 2);             /* the recovery's and the dump */
    g_assert_cmpmem(ba->window + 4097, 4, "kept", 4);
    nh_ba_dump(ba, 123);
    ba->window[10] ^= 1;                                 /* damage after the save */
    nh_ba_close(ba);

    ba = open_ba(p);
    g_assert_cmpint(ba->restore, ==, NH_BA_CORRUPT);
    g_assert_nonnull(strstr(ba->restore_why, "window checksum"));
    g_assert_cmpint(ba->table[2].state, ==, NH_BA_FREE);
    g_assert_cmpint(ba->window[4097], ==, 0);
    g_assert_true(g_file_test(bad, G_FILE_TEST_EXISTS));
    nh_ba_pin(ba, 1, 0, 0, 1);
    nh_ba_close(ba);

    g_assert_cmpint(truncate(p, NH_BA_META_SIZE + 100), ==, 0);
    ba = open_ba(p);
    g_assert_cmpint(ba->restore, ==, NH_BA_TORN);
    nh_ba_close(ba);
    g_unlink(bad);
    g_unlink(p);
}

static void test_refusals(void)
{
    g_autofree char *p = path();
    GError *err = NULL;
    NhBa *ba = open_ba(p), *other;

    /* in use */
    g_assert_null(nh_ba_open(p, WIN, ENTRIES, 512, NSZE, &err));
    g_assert_nonnull(strstr(err->message, "in use"));
    g_clear_error(&err);
    nh_ba_close(ba);
    /* another geometry: refused, file untouched */
    g_assert_null(nh_ba_open(p, WIN * 2, ENTRIES, 512, NSZE, &err));
    g_assert_nonnull(strstr(err->message, "ba-size"));
    g_clear_error(&err);
    g_assert_null(nh_ba_open(p, WIN, ENTRIES + 1, 512, NSZE, &err));
    g_clear_error(&err);
    other = open_ba(p);
    g_assert_cmpint(other->restore, ==, NH_BA_RECOVERED);
    nh_ba_close(other);
    /* not ours */
    g_assert_true(g_file_set_contents(p, "something else entirely", -1, NULL));
    g_assert_null(nh_ba_open(p, WIN, ENTRIES, 512, NSZE, &err));
    g_assert_nonnull(strstr(err->message, "not an nvme-hybrid"));
    g_clear_error(&err);
    g_unlink(p);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    dir = g_dir_make_tmp("nh-ba-XXXXXX", NULL);
    g_test_add_func("/ba/energy", test_energy);
    g_test_add_func("/ba/pins", test_pins);
    g_test_add_func("/ba/recovery", test_recovery);
    g_test_add_func("/ba/refusals", test_refusals);
    ret = g_test_run();
    g_rmdir(dir);
    return ret;
}
