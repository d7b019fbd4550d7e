"""nvme-hybrid-sim --fit compact|modulo (tools/fit.c).

compact is checked against traces whose dense layout is known: a trace over [0, 64 MiB) is
moved far up, or cut in two halves placed far apart in the same order; compacting must give
back exactly the original request stream, so every counter equals the original's replay.
Every trace format replays on a 1 GiB device with --fit."""
import json
import os
import random
import subprocess

import pytest

from helpers import REPO, SIM

pytestmark = pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
GIB = 1 << 30
MIB = 1 << 20
SHARED = os.path.join(REPO, "tests", "data", "traces")
DATA = os.path.join(REPO, "tests", "data")


def sim(trace, fmt="spc", *args, check=True):
    r = subprocess.run([SIM, "--json", "-t", str(trace), "-f", fmt, "--qd", "4",
                        "-d", "preset=none,buffer=lru,buffer-size=4M", *args],
                       capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout), r.stderr
    return r


def spc(path, reqs):
    """SPC lines: ASU, LBA (512 B), size (bytes), opcode, timestamp (s)."""
    with open(path, "w") as f:
        for i, (off, size, op) in enumerate(reqs):
            f.write("0,%d,%d,%s,%.6f\n" % (off // 512, size, op, i * 1e-4))
    return path


def base_requests():
    """Writes, then reads and overwrites, all inside [0, 64 MiB); sizes and in-page offsets
    vary (512-byte aligned), so read-modify-writes happen."""
    rnd = random.Random(7)
    reqs = [(o, 128 * 1024, "w") for o in range(0, 64 * MIB, 128 * 1024)]
    for _ in range(6000):
        size = rnd.choice([512, 1024, 4096, 8192, 16384])
        off = rnd.randrange(0, 64 * MIB - size) // 512 * 512
        reqs.append((off, size, rnd.choice("rww")))
    return reqs


def without_fit(doc):
    """@doc without what differs between replays of two files of one request stream: the fit
    and the file's name."""
    doc = dict(doc)
    doc.pop("fit", None)
    doc["trace"] = {k: v for k, v in doc["trace"].items() if k != "file"}
    return doc


def test_compact_gives_back_the_dense_trace(tmp_path):
    reqs = base_requests()
    dense = spc(tmp_path / "dense.spc", reqs)
    want, _ = sim(dense, "spc", "-c", "1G")
    # the whole trace moved up by 300 GiB
    up = spc(tmp_path / "up.spc", [(o + 300 * GIB, n, op) for o, n, op in reqs])
    got, err = sim(up, "spc", "--fit", "compact", "-c", "1G")
    assert without_fit(got) == without_fit(want)
    assert got["fit"]["mode"] == "compact" and got["fit"]["extents"] == 1
    assert got["fit"]["touched_bytes"] == 64 * MIB
    assert got["fit"]["span_bytes"] == 300 * GIB + 64 * MIB
    assert "--fit compact: a span of 300.06 GiB touches 0.062 GiB in 1 extents" in err
    # the halves far apart, in the same order: [32, 64) MiB moved to 900 GiB
    split = spc(tmp_path / "split.spc", [(o + (900 * GIB - 32 * MIB if o >= 32 * MIB else 0),
                                          n, op) for o, n, op in reqs])
    got, _ = sim(split, "spc", "--fit", "compact")
    assert without_fit(got) == without_fit(want)  # capacity chosen: the dense 64 MiB -> 1 GiB
    assert got["fit"]["extents"] == 2 and got["geometry"]["capacity_bytes"] == GIB
    # without --fit the document has no fit member, as the device's
    assert "fit" not in want


def test_compact_refuses_what_does_not_fit(tmp_path):
    # 300 pages 10 GiB apart and one 2 GiB write: 2 GiB + 300 * 4 KiB in 301 extents
    t = spc(tmp_path / "big.spc", [(i * 10 * GIB, 4096, "w") for i in range(300)] +
            [(5 * GIB, 2 * GIB, "w")])
    r = sim(t, "spc", "--fit", "compact", "-c", "1G", check=False)
    assert r.returncode == 1
    assert "the trace touches 2148712448 bytes (2.00 GiB in 301 extents), more than " \
           "--capacity 1073741824 bytes; give a larger capacity or use --fit modulo" in r.stderr
    r = sim(t, "spc", "--fit", "modulo", check=False)
    assert r.returncode == 1 and "--fit modulo needs --capacity" in r.stderr
    r = sim(t, "spc", "--fit", "dense", check=False)
    assert r.returncode == 1 and "'dense' is neither compact nor modulo" in r.stderr


def test_modulo_folds(tmp_path):
    reqs = base_requests()
    want, _ = sim(spc(tmp_path / "d.spc", reqs), "spc", "-c", "1G")
    # adding whole multiples of the capacity changes nothing after folding
    far = spc(tmp_path / "far.spc", [(o + (i % 7) * 3 * GIB, n, op)
                                     for i, (o, n, op) in enumerate(reqs)])
    got, err = sim(far, "spc", "--fit", "modulo", "-c", "1G")
    assert without_fit(got) == without_fit(want)
    assert got["fit"]["mode"] == "modulo" and got["fit"]["moved_back"] == 0
    # a request crossing the end is moved back to end at the capacity
    cross = spc(tmp_path / "cross.spc", [(GIB - 4096, 8192, "w"), (5 * GIB - 4096, 8192, "w")])
    got, err = sim(cross, "spc", "--fit", "modulo", "-c", "1G")
    assert got["fit"]["moved_back"] == 2 and got["host"]["write_cmds"] == 2
    assert "2 requests moved back from the end" in err


@pytest.mark.parametrize("path,fmt", [
    (os.path.join(SHARED, "mqsim_tpcc-small.trace"), "mqsim"),
    (os.path.join(SHARED, "libcachesim_cloudPhysicsIO.csv"), "cpcsv"),
    (os.path.join(DATA, "msr.csv"), "msr"),
    (os.path.join(DATA, "spc.csv"), "spc"),
    (os.path.join(DATA, "fiu.txt"), "fiu"),
    (os.path.join(DATA, "blkparse.txt"), "blkparse"),
    (os.path.join(DATA, "fio-v3.log"), "fio"),
])
def test_every_format_replays_on_1_gib(path, fmt):
    if not os.path.exists(path):
        pytest.skip("no %s" % path)
    doc, _ = sim(path, fmt, "--fit", "modulo", "-c", "1G")
    assert doc["geometry"]["capacity_bytes"] == GIB
    assert doc["host"]["read_cmds"] + doc["host"]["write_cmds"] > 0
    r = sim(path, fmt, "--fit", "compact", "-c", "1G", check=False)
    if r.returncode:
        # cloudPhysicsIO touches 1.03 GiB: compact cannot fit it, and says so
        assert "more than --capacity" in r.stderr and "use --fit modulo" in r.stderr
        doc, _ = sim(path, fmt, "--fit", "compact", "-c", "2G")
        assert GIB < doc["fit"]["touched_bytes"] <= 2 * GIB
    else:
        doc = json.loads(r.stdout)
        assert doc["fit"]["touched_bytes"] <= GIB
