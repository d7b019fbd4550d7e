"""Flexible Data Placement from the guest with Debian 12's nvme-cli, unmodified:
`nvme fdp configs/usage/stats/status/update/set-events/events` and `nvme
write --dir-type 2 --dir-spec N`, the data read back, the engine's per-handle
page counters moving for exactly the handles written, and the FDP statistics
log's media / host bytes equal to the engine's WAF after random overwrites
(fio, untagged: placement handle 0) made GC run.  One boot serves every test.

The device: `fdp=on,streams=3` (4 reclaim unit handles) on 2 planes of
64-page blocks (a reclaim unit of 512 KiB), a 64 MiB namespace."""
import struct

import pytest

from conftest import check, stats, vm

NRUH = 4
PIDS = (1, 3)
RUNS = 2 * 64 * 4096
DEVICE = f"fdp=on,streams={NRUH - 1},channels=2,ways=1,pages=64,ba-size=0"

SCRIPT = r"""#guest
LBS=$(blockdev --getss $DEV)
NLB=$((4096 / LBS - 1))
run() {     # run NAME CMD...: the command line into the share, then the command
    echo "$*" > $S/$1.cmd; shift
    "$@"
}
fdp() { nvme fdp "$@"; }

run configs fdp configs $CTRL -e 1 > $S/configs.txt
fdp configs $CTRL -e 1 -b > $S/configs.bin
run usage fdp usage $CTRL -e 1 > $S/usage.txt
fdp stats $CTRL -e 1 -b > $S/stats0.bin
run set-events fdp set-events $DEV -n 1 -p 0 -t 3 -e > $S/set-events.txt
fdp set-events $DEV -n 1 -p 1 -t 0 -e > /dev/null
run status0 fdp status $DEV -n 1 > $S/status0.txt
fdp status $DEV -n 1 -b > $S/status0.bin

snap w0
for pid in %(pids)s; do
    head -c 4096 /dev/urandom > $S/data-$pid
    run write-$pid nvme write $DEV --start-block=$((pid * 8)) --block-count=$NLB \
        --data-size=4096 --data=$S/data-$pid --dir-type=2 --dir-spec=$pid > $S/write-$pid.txt 2>&1
done
snap w1
fdp status $DEV -n 1 -b > $S/status1.bin
head -c 4096 /dev/urandom > $S/data-bad
run write-bad nvme write $DEV --start-block=64 --block-count=$NLB --data-size=4096 \
    --data=$S/data-bad --dir-type=2 --dir-spec=9 > $S/write-bad.txt 2>&1
snap w2
run update fdp update $DEV -n 1 -p 1 > $S/update.txt
fdp status $DEV -n 1 -b > $S/status2.bin
run events fdp events $CTRL -e 1 -E > $S/events.txt
fdp events $CTRL -e 1 -E -b > $S/events.bin
for pid in %(pids)s bad; do
    n=$([ $pid = bad ] && echo 64 || echo $((pid * 8)))
    nvme read $DEV --start-block=$n --block-count=$NLB --data-size=4096 \
        --data=$S/read-$pid > /dev/null
done

fio --name=ow --filename=$DEV --direct=1 --rw=randwrite --bs=4k --size=100%% \
    --io_size=192M --ioengine=psync --randseed=7 --output=$S/fio.txt
snap w3
run stats fdp stats $CTRL -e 1 > $S/stats.txt
fdp stats $CTRL -e 1 -b > $S/stats1.bin
""" % {"pids": " ".join(map(str, PIDS))}


@pytest.fixture(scope="module")
def boot(tmp_path_factory):
    share = tmp_path_factory.mktemp("fdp")
    status, out = vm(SCRIPT, device=DEVICE, share=share, size="64M", timeout=900)
    check(status, out)
    return share


def read(share, name):
    return (share / name).read_bytes()


def text(share, name):
    return read(share, name).decode()


def ruamw(raw):
    n = struct.unpack_from("<H", raw, 14)[0]
    return [struct.unpack_from("<Q", raw, 16 + 32 * i + 8)[0] for i in range(n)]


def fdp_stats(raw):
    hbmw, _, mbmw, _, mbe, _ = struct.unpack_from("<6Q", raw, 0)
    return hbmw, mbmw, mbe


def test_configs(boot):
    """`nvme fdp configs`: one valid configuration, 4 handles, the unit size."""
    raw = read(boot, "configs.bin")
    numfdpc, size = struct.unpack_from("<HxxI", raw, 0)
    nruh, maxpids = struct.unpack_from("<HH", raw, 16 + 8)
    assert (numfdpc, size, nruh, maxpids) == (0, 16 + 64 + 4 * NRUH, NRUH, NRUH - 1)
    assert struct.unpack_from("<Q", raw, 16 + 16)[0] == RUNS
    print(text(boot, "configs.txt"))
    assert str(RUNS) in text(boot, "configs.txt")


def test_usage(boot):
    """`nvme fdp usage`: every handle host specified (namespace 1's)."""
    out = text(boot, "usage.txt")
    print(out)
    assert [f"Reclaim Unit Handle {i} Attributes: 0x1 (Host Specified)" for i in range(NRUH)] \
        == out.splitlines()


def test_set_events_and_update(boot):
    assert "Success" in text(boot, "set-events.txt")
    assert "Success" in text(boot, "update.txt")


def test_writes_through_handles_and_status(boot):
    """Each 4 KiB write with --dir-type 2 --dir-spec N took 8 LBAs from
    handle N's reclaim unit and moved engine tag N's page counter only; the
    update gave handle 1 an empty unit; the data reads back."""
    lbs = 512
    full = RUNS // lbs
    assert ruamw(read(boot, "status0.bin")) == [full] * NRUH
    s1 = ruamw(read(boot, "status1.bin"))
    assert s1 == [full if i not in PIDS else full - 4096 // lbs for i in range(NRUH)]
    assert ruamw(read(boot, "status2.bin"))[1] == full
    before = stats(boot, "w0")["ftl"]["placement"]["host_pages"]
    after = stats(boot, "w1")["ftl"]["placement"]["host_pages"]
    moved = {int(k): after[k] - before[k] for k in after if after[k] != before[k]}
    assert moved == {pid: 1 for pid in PIDS}, (before, after)
    for pid in PIDS:
        assert read(boot, f"read-{pid}") == read(boot, f"data-{pid}")
        assert "Success" in text(boot, f"write-{pid}.txt")


def test_invalid_pid_write_and_events(boot):
    """A write with PID 9 (beyond the 4 handles) succeeds through handle 0 and
    logs an Invalid Placement Identifier host event; the update of handle 1's
    partly written unit logs RU Not Written to Capacity."""
    assert "Success" in text(boot, "write-bad.txt")
    assert read(boot, "read-bad") == read(boot, "data-bad")
    a, b = (stats(boot, n)["ftl"]["placement"]["host_pages"] for n in ("w1", "w2"))
    assert b["0"] - a["0"] == 1
    raw = read(boot, "events.bin")
    n = struct.unpack_from("<I", raw, 0)[0]
    evs = [(raw[64 + 64 * i], struct.unpack_from("<H", raw, 64 + 64 * i + 2)[0])
           for i in range(n)]
    assert evs == [(0x03, 9), (0x00, 1)]
    print(text(boot, "events.txt"))


def test_stats_log_waf_is_the_engines(boot):
    """After 192 MiB of random 4 KiB writes over the 64 MiB namespace, GC has
    copied pages: the FDP statistics log's MBMW / HBMW is above 1 and equal to
    the engine's own waf (whole-page writes), and MBE counts its erases."""
    assert fdp_stats(read(boot, "stats0.bin")) == (0, 0, 0)
    hbmw, mbmw, mbe = fdp_stats(read(boot, "stats1.bin"))
    s = stats(boot, "w3")
    assert s["ftl"]["gc_page_copies"] > 0 and mbe > 0
    assert hbmw == s["host"]["write_bytes"]
    assert mbmw == s["nand"]["page_programs"] * 4096
    assert mbmw > hbmw
    assert abs(mbmw / hbmw - s["waf"]) < 1e-9
    print(text(boot, "stats.txt"))
    print(f"FDP stats: HBMW {hbmw} MBMW {mbmw} MBE {mbe}: WAF {mbmw / hbmw:.4f}, "
          f"engine waf {s['waf']:.4f}, host pages per handle "
          f"{s['ftl']['placement']['host_pages']}, gc copies {s['ftl']['placement']['gc_copies']}")
