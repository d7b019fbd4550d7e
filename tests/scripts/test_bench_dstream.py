"""scripts/bench-dstream --quick: the structure of its output on a small slice of the shared
traces and of our Virt capture (the numbers of a quick run are not the benchmark's;
docs/placement.md has those)."""
import json
import os
import subprocess

import pytest

from helpers import REPO, SIM

pytestmark = pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
CONFIGS = ["1-stream", "16-streams", "dstream", "per-element"]
METRICS = ["miss_rate", "meta_io", "gc_io", "flash_io", "all_io"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-dstream")
    r = subprocess.run([os.path.join(REPO, "scripts", "bench-dstream"), "--quick", "--jobs", "2",
                        "--sim", SIM, "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(out / "results.json") as f:
        return out, json.load(f), r.stdout


def test_paper_rows(quick):
    _, res, _ = quick
    p = res["paper"]
    assert p["normalised_to"] == "16-streams"
    assert "cell=tlc,one-shot=on" in p["device"]     # the paper's one-shot programming
    traces = sorted({r["trace"] for r in p["rows"]})
    assert traces == ["cloudPhysicsIO", "tpcc-small", "virt"]
    for t in traces:
        rows = {r["config"]: r for r in p["rows"] if r["trace"] == t}
        assert sorted(rows) == sorted(CONFIGS)
        for c, r in rows.items():
            assert 0 <= r["miss_rate"] <= 1
            assert r["flash_io"] == r["meta_io"] + r["gc_io"]
            assert r["misses"] <= r["lookups"]
            assert r["padding"] >= 0
            for m in METRICS:
                n = r["normalised"][m]
                base = rows["16-streams"][m]
                # the quick slice is sized so that every base is non-zero but GC's: with
                # one-shot staging its 5,000 requests run no GC at 16 streams
                if m == "gc_io" and base == 0:
                    assert n is None
                    continue
                assert base > 0, (t, m)
                assert n == r[m] / base
        for m in METRICS:
            assert rows["16-streams"]["normalised"][m] == (1.0 if rows["16-streams"][m] else None)
        assert rows["1-stream"]["k_final"] == 1
        assert rows["16-streams"]["k_final"] == 16
        assert rows["16-streams"]["k_changes"] == 0
        for c in ("dstream", "per-element"):
            assert 1 <= rows[c]["k_final"] <= 16
            assert 1 <= rows[c]["k_mean"] <= 16


def test_figure3(quick):
    out, res, _ = quick
    fig = res["paper"]["figure3"]
    assert sorted(fig) == ["cloudPhysicsIO", "tpcc-small", "virt"]
    mem = res["paper"]["dstream_memory"]
    buf = res["paper"]["stream_buffer"]
    runs = [s for t in fig.values() for s in t.values()]
    assert len(runs) == 6   # both readings of the rule on each trace
    for s in runs:
        n = len(s["timestamp"])
        assert n > 1 and len(s["k"]) == n and len(s["cache_mib"]) == n
        assert s["timestamp"] == sorted(s["timestamp"])
        for k, mib in zip(s["k"], s["cache_mib"]):
            assert 1 <= k <= 16
            # the cache gets what k stream buffers leave of the budget (8-byte entries)
            assert round(mib * (1 << 20)) == (mem - k * buf) // 8 * 8
    for png in res["paper"]["png"]:
        assert os.path.getsize(png) > 1000
    assert os.path.exists(out / "sweep-paper.parquet")


def test_hotcold(quick):
    _, res, _ = quick
    rows = res["hotcold"]["rows"]
    assert {(r["ftl"], r["run"]) for r in rows} == {
        (f, v) for f in ("page", "dftl")
        for v in ("untagged 1 stream", "tagged 2 streams", "dstream untagged")}
    for r in rows:
        assert r["host_write_pages"] == res["hotcold"]["writes"]
        assert r["waf"] >= 1 and r["erases"] > 0
        if r["run"] == "untagged 1 stream":
            assert r["waf_vs_untagged"] == 1.0


def test_printed_table(quick):
    _, res, stdout = quick
    assert "\n".join(res["paper"]["table"]) in stdout
    assert "\n".join(res["hotcold"]["table"]) in stdout
    line = next(x for x in stdout.splitlines()
                if x.startswith("tpcc-small") and "cache miss rate" in x)
    assert line.split()[-5] == "1.0000"      # the 16-streams column
