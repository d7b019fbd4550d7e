"""The statistics and the SMART log count what the host did.

One boot on a fresh device: fio writes a known number of bytes (SMART data
units), then dd writes and reads exactly N 4 KiB blocks with O_DIRECT (the
engine's host and NAND counters).  Snapshots between the steps are compared.
A second boot compares the QOM `stats` property (QMP, from the host) with
the vendor log page the guest decodes, at the same idle moment."""
import os

from conftest import (DATA_UNIT, VmRun, check,
                      counters, delta, load_json, smart, stats, vm)

FIO_BYTES = 12 << 20   # 12 MiB = 24.576 data units: exercises the rounding up
FIO_BS = 64 << 10
N = 1000               # 4 KiB blocks written and read by dd
DD_SEEK = 8192         # in 4 KiB blocks: 32 MiB, clear of fio's range

SCRIPT = r"""#guest
snap 0
fio --name=w --filename=$DEV --ioengine=libaio --direct=1 --rw=write \
    --bs=%(bs)d --size=%(size)d --iodepth=4 --output-format=json --output=$S/fio.json
snap 1
dd if=/dev/urandom of=$DEV bs=4k count=%(n)d seek=%(seek)d oflag=direct status=none
snap 2
dd if=$DEV of=/dev/null bs=4k count=%(n)d skip=%(seek)d iflag=direct status=none
snap 3
""" % {"bs": FIO_BS, "size": FIO_BYTES, "n": N, "seek": DD_SEEK}


def ceil_div(a, b):
    return -(-a // b)


def test_smart_and_stats_counters(share):
    status, out = vm(SCRIPT, share=share)
    check(status, out)
    s = {i: stats(share, str(i)) for i in range(4)}
    sm = {i: smart(share, str(i)) for i in range(4)}

    # Fresh device, no file system: the kernel itself wrote nothing before
    # the test (it only read, to look for a partition table).  So the
    # absolute SMART value after fio is exactly fio's bytes in data units.
    assert s[0]["host"]["write_bytes"] == 0 and s[0]["host"]["write_cmds"] == 0
    assert sm[0]["data_units_written"] == 0

    fio = load_json(share, "fio.json")["jobs"][0]
    assert fio["error"] == 0
    assert fio["write"]["io_bytes"] == FIO_BYTES
    d01 = delta(s[1], s[0])
    assert d01["host.write_bytes"] == FIO_BYTES, d01
    assert d01["host.write_cmds"] == fio["write"]["total_ios"] == FIO_BYTES // FIO_BS, d01
    # 12582912 bytes / 512000 = 24.58 -> 25 data units, rounded up.
    assert sm[1]["data_units_written"] == ceil_div(FIO_BYTES, DATA_UNIT) == 25
    assert sm[1]["host_write_commands"] - sm[0]["host_write_commands"] == FIO_BYTES // FIO_BS

    # At every snapshot, SMART and the engine agree on the totals: data
    # units are the engine's bytes in 512000-byte units, rounded up, and the
    # command counts are the same counts.
    for i in range(4):
        h = s[i]["host"]
        assert sm[i]["data_units_written"] == ceil_div(h["write_bytes"], DATA_UNIT), i
        assert sm[i]["data_units_read"] == ceil_div(h["read_bytes"], DATA_UNIT), i
        assert sm[i]["host_write_commands"] == h["write_cmds"], i
        assert sm[i]["host_read_commands"] == h["read_cmds"], i

    # dd oflag=direct bs=4k: one 4 KiB Write per block, nothing else.
    d12 = delta(s[2], s[1])
    assert d12["host.write_bytes"] == N * 4096, d12
    assert d12["host.write_cmds"] == N, d12
    assert d12["host.read_cmds"] == 0, d12
    assert d12["nand.page_programs"] >= N, d12
    assert d12["latency_ns.write.count"] == N, d12
    # WAF = NAND programs / host-written pages: never below 1.
    assert s[2]["waf"] >= 1.0, s[2]["waf"]
    lat = s[2]["latency_ns"]["write"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"], lat
    assert 0 < lat["mean"] <= lat["max"], lat
    geo = s[2]["geometry"]
    if s[2]["config"].get("buffer", "none") == "none":
        # Without a write buffer a 4 KiB write at queue depth 1 waits for its
        # page program, so the median modeled latency is at least tPROG.
        assert lat["p50"] >= geo["t_prog_ns"], (lat, geo)

    # Reading the blocks back: N 4 KiB Reads, each of a page that is mapped.
    d23 = delta(s[3], s[2])
    assert d23["host.read_bytes"] == N * 4096, d23
    assert d23["host.read_cmds"] == N, d23
    assert d23["nand.page_reads"] >= N, d23
    assert d23["host.write_cmds"] == 0, d23
    # ...and each such read costs at least a page read plus its transfer.
    geo = s[3]["geometry"]
    assert s[3]["latency_ns"]["read"]["p50"] >= geo["t_read_ns"] + geo["t_xfer_ns"]


QMP_SCRIPT = r"""#guest
dd if=/dev/urandom of=$DEV bs=4k count=256 oflag=direct status=none
dd if=$DEV of=/dev/null bs=4k count=64 iflag=direct status=none
snap a
touch $S/ready
# The host reads QMP now.  Nothing touches the device until the second
# snapshot, which shows that the window really was idle.
sleep 4
snap b
"""


def test_qmp_stats_equal_guest_stats(share):
    sock = os.path.join(str(share), "..", "qmp.sock")
    run = VmRun(QMP_SCRIPT, share=share, qmp=sock, timeout=120)
    try:
        run.wait_for_file(os.path.join(str(share), "ready"))
        q = run.device()
        host_doc = q.stats()
        q.close()
        status, out = run.wait()
    finally:
        run.kill()
    check(status, out)
    a, b = stats(share, "a"), stats(share, "b")
    assert counters(a) == counters(b), "the device was not idle around the QMP read"
    ca, ch = counters(a), counters(host_doc)
    assert ca["host.write_cmds"] == 256 and ca["host.write_bytes"] == 256 * 4096
    assert ch == ca, {k: (ca.get(k), ch.get(k)) for k in set(ca) | set(ch)
                      if ca.get(k) != ch.get(k)}
    # Not only the counters: the whole document is the same one.
    assert host_doc == a
