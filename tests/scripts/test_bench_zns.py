"""scripts/bench-zns: its table, JSON and figure on fewer reads, and the interference it is
about: resets of zones on the same dies hold zone A's reads, on other dies they do not."""
import json
import os
import subprocess

import pytest

from helpers import REPO, SIM

pytestmark = pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-zns")
    r = subprocess.run([os.path.join(REPO, "scripts", "bench-zns"), "--reads", "600", "--objects", "96",
                        "--sim", SIM, "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(out / "results.json") as f:
        return out, json.load(f), r.stdout


def test_rows(result):
    out, res, stdout = result
    rows = {(r["mapping"], r["resets"]): r for r in res["rows"]}
    assert sorted(rows) == [("one-die", 0), ("one-die", 1), ("wide", 0), ("wide", 1)]
    for (m, resets), r in rows.items():
        assert r["reads"] == 600
        assert r["zone_resets"] == (14 if resets else 0)
        assert r["device_gc_blocks"] == 0          # no device GC in the zoned region
    # a wide zone's reset erases one block a plane (16), a one-die zone's 16 blocks on one die
    assert rows[("wide", 1)]["reset_erases"] == rows[("one-die", 1)]["reset_erases"] == 14 * 16
    assert rows[("one-die", 1)]["reset_mean_ms"] > 4 * rows[("wide", 1)]["reset_mean_ms"]
    # the interference: zone A's reads wait for erases only where they share dies
    assert rows[("wide", 1)]["read_p99_us"] > 10 * rows[("wide", 0)]["read_p99_us"]
    assert rows[("one-die", 1)]["read_p99_us"] == rows[("one-die", 0)]["read_p99_us"]
    assert os.path.getsize(out / "read-latency.png") > 0
    assert "p99 x" in stdout


def test_waf(result):
    _, res, stdout = result
    w = {r["interface"]: r for r in res["waf"]["rows"]}
    assert sorted(w) == ["streams", "untagged", "zns"]
    # the same host writes everywhere; ZNS programs each page once and collects nothing
    assert w["zns"]["host_write_pages"] == w["streams"]["host_write_pages"] \
        == w["untagged"]["host_write_pages"] == 96 * 1024
    assert w["zns"]["waf"] == 1.0 and w["zns"]["gc_page_copies"] == 0
    assert w["zns"]["zone_resets"] == w["streams"]["trim_cmds"] > 0
    assert w["untagged"]["waf"] > w["streams"]["waf"]
    assert len({r["device"].split("blocks=")[1] for r in w.values()}) == 1   # one flash
    assert "WAF" in stdout
