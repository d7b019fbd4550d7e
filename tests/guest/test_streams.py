"""The Streams directive from the guest with Debian 12's nvme-cli, unmodified:
dir-receive (Identify and Streams Return Parameters, Get Status, Allocate
Resources), dir-send (Enable, Release Identifier, Release Resources) and
`nvme write --dir-type=1 --dir-spec=N`, the data read back, and the
engine's per-stream page counters (vendor log, nvme-hybrid-stats) moving
for exactly the streams written.  The device is a default one (streams=auto:
16 host streams on 17 frontiers), as a new user's first `nvme dir-send` meets
it.  One boot serves every test."""
import struct

import pytest

from conftest import check, load_json, stats, vm

MSL = 16
STREAMS = (3, 1, 7, 16)

SCRIPT = r"""#guest
LBS=$(blockdev --getss $DEV)
NLB=$((4096 / LBS - 1))
run() {     # run NAME CMD...: the command's output, and the command itself, into the share
    echo "$*" > $S/$1.cmd; shift
    "$@"
}
recv() { nvme dir-receive $DEV "$@"; }
send() { nvme dir-send $DEV "$@"; }

run id-h recv --dir-type=0 --dir-oper=1 -H > $S/id-h.txt
recv --dir-type=0 --dir-oper=1 -b > $S/id.bin
run enable send --dir-type=0 --dir-oper=1 --target-dir=1 --endir=1 > $S/enable.txt
recv --dir-type=0 --dir-oper=1 -b > $S/id-enabled.bin
run params-h recv --dir-type=1 --dir-oper=1 -H > $S/params-h.txt
recv --dir-type=1 --dir-oper=1 -b > $S/params.bin

snap w0
for sid in %(streams)s; do
    head -c 4096 /dev/urandom > $S/data-$sid
    run write-$sid nvme write $DEV --start-block=$((sid * 8)) --block-count=$NLB \
        --data-size=4096 --data=$S/data-$sid --dir-type=1 --dir-spec=$sid > $S/write-$sid.txt 2>&1
done
snap w1
run status-h recv --dir-type=1 --dir-oper=2 -H > $S/status-h.txt
recv --dir-type=1 --dir-oper=2 -b > $S/status.bin
run release send --dir-type=1 --dir-oper=1 --dir-spec=3 > $S/release.txt
recv --dir-type=1 --dir-oper=2 -b > $S/status-released.bin
for sid in %(streams)s; do
    nvme read $DEV --start-block=$((sid * 8)) --block-count=$NLB --data-size=4096 \
        --data=$S/read-$sid > /dev/null
done
run alloc recv --dir-type=1 --dir-oper=3 --req-resource=4 > $S/alloc.txt
recv --dir-type=1 --dir-oper=1 -b > $S/params-alloc.bin
run release-res send --dir-type=1 --dir-oper=2 > $S/release-res.txt
recv --dir-type=1 --dir-oper=1 -b > $S/params-released.bin
run disable send --dir-type=0 --dir-oper=1 --target-dir=1 --endir=0 > $S/disable.txt
recv --dir-type=0 --dir-oper=1 -b > $S/id-disabled.bin
""" % {"streams": " ".join(map(str, STREAMS))}


@pytest.fixture(scope="module")
def boot(tmp_path_factory):
    share = tmp_path_factory.mktemp("streams")
    status, out = vm(SCRIPT, share=share)      # a default device
    check(status, out)
    return share


def read(share, name):
    return (share / name).read_bytes()


def params(raw):
    msl, nssa, nsso = struct.unpack_from("<HHH", raw, 0)
    sws, sgs, nsa, nso = struct.unpack_from("<IHHH", raw, 16)
    return dict(msl=msl, nssa=nssa, nsso=nsso, sws=sws, sgs=sgs, nsa=nsa, nso=nso)


def open_ids(raw):
    osc = struct.unpack_from("<H", raw, 0)[0]
    return list(struct.unpack_from(f"<{osc}H", raw, 2))


def test_identify_directive(boot):
    """Identify Return Parameters: Streams supported; enabled by dir-send
    Enable and disabled again at the end."""
    assert read(boot, "id.bin")[0] == 0b11 and read(boot, "id.bin")[32] == 0b01
    assert read(boot, "id-enabled.bin")[32] == 0b11
    assert read(boot, "id-disabled.bin")[32] == 0b01
    assert "supported" in read(boot, "id-h.txt").decode()


def test_stream_parameters(boot):
    p = params(read(boot, "params.bin"))
    assert (p["msl"], p["nssa"], p["nsso"], p["nsa"], p["nso"]) == (MSL, MSL, 0, 0, 0)
    assert p["sws"] >= 1 and p["sgs"] >= 1


def test_writes_open_streams_and_read_back(boot):
    assert open_ids(read(boot, "status.bin")) == sorted(STREAMS)
    assert open_ids(read(boot, "status-released.bin")) == [1, 7, 16]
    for sid in STREAMS:
        assert read(boot, f"read-{sid}") == read(boot, f"data-{sid}")


def test_per_stream_counters_moved(boot):
    """The engine counts each host stream's pages, and each went to a
    physical stream of its own (1 and 16 no longer share one): only those
    of streams 1, 3, 7 and 16 moved, each by the 4 KiB written."""
    before = stats(boot, "w0")["ftl"]["placement"]
    after = stats(boot, "w1")["ftl"]["placement"]
    assert (after["host_streams"], after["shared_streams"]) == (MSL, 0)
    assert len(after["host_pages"]) == MSL + 1
    for counter in ("stream_pages", "host_pages"):
        b, a = before[counter], after[counter]
        moved = {int(k): a[k] - b.get(k, 0) for k in a if a[k] != b.get(k, 0)}
        assert sorted(moved) == sorted(STREAMS), (counter, b, a)
        assert len(set(moved.values())) == 1


def test_allocate_and_release_resources(boot):
    assert "result:0x4" in read(boot, "alloc.txt").decode()     # NSA in CQE dword 0
    p = params(read(boot, "params-alloc.bin"))
    assert (p["nsa"], p["nssa"]) == (4, MSL - 4)
    assert params(read(boot, "params-released.bin"))["nsa"] == 0
