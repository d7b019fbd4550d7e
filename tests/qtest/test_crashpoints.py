"""scripts/crashpoints in short (issue 24, docs/powercut.md "Crash points"): a sample of
crash points over the volatile-buffer block workload and the window workload loses nothing
(and exits 0); with the test-only broken durability rule x-flush-no-drain (Flush completes
without draining the volatile buffer) the same kind of sample reports acknowledged, flushed
bytes lost (and exits 1), so the oracle can fail.  The full run over every event of the
three workloads is `make crashpoints`."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import MODEL

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's power cuts")

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "crashpoints")
FINAL = re.compile(r"^points (\d+) acknowledged-bytes (\d+) lost-bytes (\d+) "
                   r"window-lost (\d+) inconsistent (\d+)$", re.M)


def crashpoints(qemu, tmp_path, *args):
    out = tmp_path / "crashpoints.json"
    r = subprocess.run([sys.executable, SCRIPT, "--qemu", qemu, "--dir", str(tmp_path / "work"),
                        "--json", str(out), "--jobs", "2"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    lines = FINAL.findall(r.stdout)
    assert lines, "no final line (exit %d):\n%s" % (r.returncode, r.stdout)
    assert r.stdout.rstrip().splitlines()[-1].startswith("points "), r.stdout
    with open(out) as f:
        doc = json.load(f)
    return r, tuple(map(int, lines[-1])), doc


def test_sample_loses_nothing(qemu_binary, tmp_path):
    r, (points, acked, lost, wlost, inconsistent), doc = crashpoints(
        qemu_binary, tmp_path, "--points", "40", "--workload", "block-volatile",
        "--workload", "window")
    assert (lost, wlost, inconsistent) == (0, 0, 0), r.stdout
    assert r.returncode == 0, r.stdout
    assert points == 80 and acked > 0, r.stdout
    runs = {w["workload"]: w for w in doc["workloads"]}
    assert set(runs) == {"block-volatile", "window"}
    for w in runs.values():
        assert w["events"]["total"] > 40 and len(w["per_point"]) == 40
        # the sample is spread over the run: cuts at several kinds of event
        assert len(w["by_event"]) >= 4, w["by_event"]
    assert runs["window"]["events"]["window-dma"] > 0, runs["window"]["events"]


def test_flush_that_does_not_drain_is_caught(qemu_binary, tmp_path):
    r, (points, acked, lost, wlost, inconsistent), doc = crashpoints(
        qemu_binary, tmp_path, "--points", "24", "--workload", "block-volatile",
        "--break", "flush-no-drain")
    assert r.returncode == 1, r.stdout
    assert points == 24 and lost > 0, r.stdout
    assert doc["workloads"][0]["lost_by_class"].get("flush", 0) > 0, doc["workloads"][0]
    assert "x-flush-no-drain=on" in doc["workloads"][0]["device"]
