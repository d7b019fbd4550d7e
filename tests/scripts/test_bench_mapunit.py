"""scripts/bench-mapunit: map-unit=auto beside map-unit=4K on a preset's drive, in one run; the
counts it reports (bytes programmed per byte written, read-modify-write reads) follow from the
model, so they are checked; the IOPS are only checked to be measured."""
import json
import os
import subprocess

import pytest

from helpers import REPO, SIM

SCRIPT = os.path.join(REPO, "scripts", "bench-mapunit")
pytestmark = pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")


def test_quick_run_sets_both_units_side_by_side(tmp_path):
    r = subprocess.run([SCRIPT, "--quick", "--sim", SIM, "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "bench-mapunit-quick.json").read_text())
    rows = {(row["workload"], row["qd"]): row for row in doc["rows"]}
    assert set(rows) == {("rr", 32), ("rw", 32), ("rw-drive", 32)}
    for row in rows.values():
        assert row["ratio"] == pytest.approx(row["4K"]["iops"] / row["auto"]["iops"])
    rw = rows[("rw", 32)]
    # whole 16 KiB pages: each 4 KiB write reads and rewrites its page; units: one byte a byte
    assert rw["auto"]["waf_bytes"] == pytest.approx(4.0)
    assert rw["auto"]["rmw_reads"] == 5000
    assert rw["4K"]["rmw_reads"] == 0
    assert 0.98 <= rw["4K"]["waf_bytes"] <= 1.01
    assert "4K/auto" in r.stdout
