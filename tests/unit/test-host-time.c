/*
 * The controller's firmware time (fw-*) and the PCIe link's packet overhead (host-mps): known
 * answers.  Firmware time is a fixed delay a request pays before the back end sees it, so a
 * request costs exactly it more and requests in flight do not wait for each other's; a
 * transfer of N bytes over the link takes (N + ceil(N / host-mps) x 24) bytes at host-mbps.
 */
#include "unit.h"

#define IDLE 1000000000000ull   /* far after anything booked so far */
#define GEO "channels=8,ways=1,pages=64,op=10,streams=0"

/* The time of a read of @len at offset 0 on an idle drive of @props, after a write of it;
 * *write is the write's. */
static uint64_t read_time(const char *props, uint64_t len, uint64_t *write)
{
    NhEngine *e = unit_engine(props, 64 << 20);
    uint64_t t;

    *write = unit_submit(e, NH_OP_WRITE, 0, len, 0);
    t = unit_submit(e, NH_OP_READ, 0, len, IDLE) - IDLE;
    nh_engine_free(e);
    return t;
}

/* On the 970pro preset (NVMeVirt's firmware times): a 4 KiB read costs 21.5 us more than
 * with fw-read=0, a 128 KiB read 30.49 us more; a write 4 us + 0.46 us per 4 KiB. */
static void test_firmware_preset(void)
{
    uint64_t w0, w1, w0big, w1big;
    uint64_t r0 = read_time("preset=970pro,fw-read=0,fw-read-large=0,fw-write=0,fw-write-4k=0",
                            4096, &w0);
    uint64_t r1 = read_time("preset=970pro", 4096, &w1);
    uint64_t r0big = read_time("preset=970pro,fw-read=0,fw-read-large=0,fw-write=0,"
                               "fw-write-4k=0", 128 << 10, &w0big);
    uint64_t r1big = read_time("preset=970pro", 128 << 10, &w1big);

    g_assert_cmpuint(r1 - r0, ==, 21500);
    g_assert_cmpuint(r1big - r0big, ==, 30490);
    g_assert_cmpuint(w1 - w0, ==, 4000 + 460);
    g_assert_cmpuint(w1big - w0big, ==, 4000 + 32 * 460);
}

/* A fixed delay, not a resource: 8 reads on 8 channels at once each take fw-read more than
 * alone would, all of them together, not 8 x fw-read for the last. */
static void test_firmware_does_not_serialise(void)
{
    NhEngine *plain = unit_engine(GEO, 64 << 20), *fw = unit_engine(GEO ",fw-read=50us",
                                                                      64 << 20);
    uint64_t last_plain = 0, last_fw = 0;

    unit_submit(plain, NH_OP_WRITE, 0, 8 * 4096, 0);
    unit_submit(fw, NH_OP_WRITE, 0, 8 * 4096, 0);
    for (uint64_t i = 0; i < 8; i++) {
        last_plain = MAX(last_plain, unit_submit(plain, NH_OP_READ, i * 4096, 4096, IDLE));
        last_fw = MAX(last_fw, unit_submit(fw, NH_OP_READ, i * 4096, 4096, IDLE));
    }
    g_assert_cmpuint(last_fw - last_plain, ==, 50000);
    nh_engine_free(plain);
    nh_engine_free(fw);
}

/* Zone appends pay fw-write too (the requests' common path, nh_engine_arrive), zone
 * management does not. */
static void test_firmware_zoned(void)
{
    const char *geo = "channels=2,ways=2,dies=1,planes=2,pages=16,page-size=4K,cell=slc,op=10,"
                      "ftl=page,zones=8";
    char *with = g_strconcat(geo, ",fw-write=7us,fw-write-4k=1us", NULL);
    NhEngine *a = unit_engine(geo, 4 << 20), *b = unit_engine(with, 4 << 20);
    uint64_t off, da, db, za, zb;

    g_assert_true(nh_engine_zone_append(a, 0, 8192, 0, 0, &off, &da, NULL));
    g_assert_true(nh_engine_zone_append(b, 0, 8192, 0, 0, &off, &db, NULL));
    g_assert_cmpuint(db - da, ==, 7000 + 2 * 1000);
    g_assert_true(nh_engine_zone_action(a, NH_ZONE_FINISH, 0, IDLE, &za, NULL));
    g_assert_true(nh_engine_zone_action(b, NH_ZONE_FINISH, 0, IDLE, &zb, NULL));
    g_assert_cmpuint(za, ==, zb);
    nh_engine_free(a);
    nh_engine_free(b);
    g_free(with);
}

/* 1 MiB at 100 MB/s with 256-byte payloads: 4,096 packets of 24 bytes of overhead, so
 * 1,146,880 bytes, 11,468,800 ns; without (host-mps=0) 10,485,760 ns.  A read pays it after
 * its flash read, a write before its program. */
static void test_packet_overhead(void)
{
    uint64_t w_free, w_mps, w_line;
    uint64_t r_free = read_time(GEO, 1 << 20, &w_free);
    uint64_t r_mps = read_time(GEO ",host-mbps=100,host-mps=256", 1 << 20, &w_mps);
    uint64_t r_line = read_time(GEO ",host-mbps=100,host-mps=0", 1 << 20, &w_line);
    NhConfig c;

    g_assert_cmpuint(r_mps - r_free, ==, 11468800);
    g_assert_cmpuint(w_mps - w_free, ==, 11468800);
    g_assert_cmpuint(r_line - r_free, ==, 10485760);
    /* 4 KiB at 4096-byte payloads: one packet, 4,120 bytes at 1,000 MB/s */
    unit_defaults(&c);
    g_assert_true(nh_config_parse(&c, "host-mbps=1000,host-mps=4096", NULL));
    g_assert_cmpuint(nh_engine_link_time(&c, 4096), ==, 4120);
    g_assert_cmpuint(nh_engine_link_time(&c, 4097), ==, 4145);  /* 2 packets, rounded up */
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/host-time/firmware-preset", test_firmware_preset);
    g_test_add_func("/host-time/firmware-does-not-serialise", test_firmware_does_not_serialise);
    g_test_add_func("/host-time/firmware-zoned", test_firmware_zoned);
    g_test_add_func("/host-time/packet-overhead", test_packet_overhead);
    return g_test_run();
}
