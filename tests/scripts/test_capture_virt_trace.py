"""scripts/capture-virt-trace without a guest: its refusals (each before anything boots), and the
committed Virt trace it captured (tests/data/traces): gzip-compressed, only issued (D) events
after a header saying how it was captured, and the simulator replays it with the counts below."""
import gzip
import json
import os
import re
import subprocess

import pytest

from helpers import REPO, SIM

SCRIPT = os.path.join(REPO, "scripts", "capture-virt-trace")
TRACE = os.path.join(REPO, "tests", "data", "traces", "virt-rocksdb-fileserver.blkparse.gz")
# what the committed capture holds (printed by capture-virt-trace when it was made)
REQUESTS = 94093
WRITES = 63665
READS = 22462
FLUSHES = 7966
D_EVENT = re.compile(r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d{9}\s+\d+\s+D\s+[A-Z]+( \d+ \+ \d+)?"
                     r"( \[.*\])?$")


def refuse(tmp_path, *args):
    r = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=30,
                       cwd=tmp_path)
    assert r.returncode != 0, r.stdout
    assert "capture-virt-trace" in r.stderr
    return r.stderr


def test_refuses_small_namespace(tmp_path):
    assert "512M is too small" in refuse(tmp_path, "--size", "512M")


def test_refuses_bad_numbers(tmp_path):
    assert "must be above 0" in refuse(tmp_path, "--seconds", "0")
    assert "not a number" in refuse(tmp_path, "--num", "many")
    assert "must be above 0" in refuse(tmp_path, "--fs-think-us", "-5")
    assert "bad size" in refuse(tmp_path, "--size", "4X")


def test_refuses_database_larger_than_half(tmp_path):
    err = refuse(tmp_path, "--size", "1G", "--num", "10000000", "--value-size", "400")
    assert "must be at most half of --size" in err


def test_refuses_output(tmp_path):
    assert "does not exist" in refuse(tmp_path, "--out", str(tmp_path / "no" / "t.gz"))
    assert "must end in .gz" in refuse(tmp_path, "--out", str(tmp_path / "t.blkparse"))


def test_refuses_deb(tmp_path):
    assert "no such file" in refuse(tmp_path, "--deb", str(tmp_path / "none.deb"))
    junk = tmp_path / "junk.deb"
    junk.write_text("not an archive\n")
    assert "is not a Debian package" in refuse(tmp_path, "--deb", str(junk))
    # a real package, but not blktrace
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: not-blktrace\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\n"
        "Description: test\n")
    subprocess.run(["dpkg-deb", "--build", str(pkg), str(tmp_path / "other.deb")], check=True,
                   capture_output=True)
    assert "'not-blktrace', not blktrace" in refuse(tmp_path, "--deb",
                                                   str(tmp_path / "other.deb"))


def test_committed_trace_is_small_and_only_issue_events():
    assert os.path.getsize(TRACE) < 5 << 20
    header, events = [], 0
    with gzip.open(TRACE, "rt") as f:
        for line in f:
            if line.startswith("#"):
                assert not events, "comments only before the events"
                header.append(line)
                continue
            assert D_EVENT.match(line.rstrip("\n")), line
            events += 1
    assert events == REQUESTS
    text = "".join(header)
    for what in ("blktrace -a issue", "fillrandom,overwrite", "written once", "file-server"):
        assert what in text, what


@pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
def test_committed_trace_replays():
    r = subprocess.run([SIM, "--trace", TRACE, "--format", "blkparse", "--json", "--fit",
                        "compact", "--device", "ftl=page"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    host = json.loads(r.stdout)["host"]
    assert host["write_cmds"] == WRITES
    assert host["read_cmds"] == READS
    assert host["flush_cmds"] == FLUSHES
    assert host["trim_cmds"] == 0
    assert WRITES + READS + FLUSHES == REQUESTS
    assert host["write_bytes"] > 2 * host["read_bytes"]
