"""scripts/bench-validate: every published figure of a preset's drive beside the simulator's,
with its error; the host link caps sequential reads at the drive's PCIe rate (a benchmark's
figures are not checked here, only that they are measured and compared as documented)."""
import json
import os
import subprocess

import pytest

from helpers import REPO, SIM

SCRIPT = os.path.join(REPO, "scripts", "bench-validate")
pytestmark = pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")


def test_quick_run_compares_every_published_figure(tmp_path):
    r = subprocess.run([SCRIPT, "--quick", "--preset", "sz985", "--sim", SIM,
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "bench-validate-quick.json").read_text())
    res = doc["results"]["sz985"]
    rows = {row["figure"]: row for row in res["compare"]}
    assert set(rows) == {"rand_read_iops", "rand_write_iops", "seq_read_mbps",
                         "seq_write_mbps", "qd1_read_us", "qd1_write_us"}
    for row in rows.values():
        assert row["error"] == pytest.approx(row["ours"] / row["published"] - 1)
    # the link (host-mbps=3200) holds 128 KiB reads below the 16 channels' 12.8 GB/s
    assert 2500 < rows["seq_read_mbps"]["ours"] <= 3200
    # --quick's 4 GiB of sz985 at 128 blocks a plane: 1,048,576 pages / (128 planes x 128) =
    # 64 pages a block, the 1.5 ms erase scaled by 64/256, and the blocks that hold 4 GiB at
    # op=27%: ceil(1,048,576 x 100 / (73 x 128 planes x 64)) = 176
    assert res["device"] == "preset=sz985,pages=64,t-erase=375000ns,streams=0,blocks=176"
    assert len(res["measured"]["cliff_iops"]) == 6
    assert sorted(res["measured"]["iops"]["rr"]) == ["1", "32"]
    assert "sz985" in r.stdout and "misses by >10%" in r.stdout
    assert (tmp_path / "bench-validate-quick.png").stat().st_size > 1000
