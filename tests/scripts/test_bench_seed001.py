"""scripts/bench-seed001's arithmetic (scripts/nh/seed001.py) on documents and reports made here,
and its priority part (--quick) end to end through the simulator.  The informed part needs the
postmark guest: `make bench` runs it, docs/seed001.md has its figures."""
import json
import os
import subprocess

import pytest

from helpers import REPO, SIM
from nh import seed001

# PostMark 1.51's report as Debian's postmark 1.53-2 printed it in the guest.
REPORT = """PostMark v1.51 : 8/14/01
Reading configuration from file '/tmp/pm.cfg'
Creating files...Done
Performing transactions..........Done
Deleting files...Done
Time:
\t47 seconds total
\t42 seconds of transactions (47 per second)

Files:
\t1288 created (27 per second)
\t\tCreation alone: 300 files (75 per second)
\t\tMixed with transactions: 988 files (23 per second)
\t1010 read (24 per second)
\t990 appended (23 per second)
\t1288 deleted (27 per second)
\t\tDeletion alone: 276 files (276 per second)
\t\tMixed with transactions: 1012 files (24 per second)

Data:
\t308.82 megabytes read (6.57 megabytes per second)
\t512.00 kilobytes written (8.82 megabytes per second)
"""
GEOMETRY = {"t_read_ns": 25000, "t_prog_ns": 200000, "t_erase_ns": 1500000, "t_xfer_ns": 5120}


def doc(copies, victims, writes, write_mean, reads=0, read_mean=0.0, trims=0):
    return {"host": {"write_pages": 10 * writes, "trim_cmds": trims, "trim_bytes": 4096 * trims},
            "ftl": {"gc_page_copies": copies, "gc_blocks": victims, "gc_foreground_blocks": 0},
            "nand": {"block_erases": victims},
            "latency_ns": {"read": {"count": reads, "mean": read_mean},
                           "write": {"count": writes, "mean": write_mean}},
            "geometry": GEOMETRY}


def test_parse_postmark():
    r = seed001.parse_postmark(REPORT)
    assert r["seconds"] == 47 and r["transaction_seconds"] == 42
    assert r["transactions_per_s"] == 47
    assert r["created"] == 1288 and r["deleted"] == 1288
    assert r["mb_read"] == pytest.approx(308.82)
    assert r["mb_written"] == pytest.approx(0.5)     # kilobytes, in MB


def test_parse_postmark_cut_short():
    with pytest.raises(seed001.ParseError, match="no 'mb_read' line"):
        seed001.parse_postmark(REPORT.split("Data:")[0])


def test_informed_row():
    before = doc(copies=100, victims=10, writes=4, write_mean=1000.0, reads=2, read_mean=50.0)
    after = doc(copies=1100, victims=40, writes=8, write_mean=3000.0, reads=2, read_mean=50.0,
                trims=7)
    r = seed001.informed_row(before, after, {"seconds": 1})
    assert r["pages_moved"] == 1000 and r["gc_blocks"] == 30 and r["trim_cmds"] == 7
    # a copy: tR + two transfers + tPROG; a victim: tBERS
    assert r["cleaning_ns"] == 1000 * (25000 + 2 * 5120 + 200000) + 30 * 1500000
    # the 4 writes between the documents: (8 x 3000 - 4 x 1000) / 4
    assert r["writes"] == 4 and r["write_mean_ns"] == 5000.0
    assert r["reads"] == 0 and r["response_mean_ns"] == 5000.0


def test_documents_of_two_runs_refused():
    with pytest.raises(seed001.ParseError, match="ftl.gc_page_copies went back"):
        seed001.informed_row(doc(50, 1, 1, 1.0), doc(10, 1, 1, 1.0), None)
    with pytest.raises(seed001.ParseError, match="no ftl.gc_blocks"):
        seed001.delta({"ftl": {}}, {"ftl": {}}, "ftl.gc_blocks")


def test_priority_changes():
    rows = [{"sched": "fcfs", "write_pct": 20, "aware": a, "priority_mean_ns": p,
             "other_mean_ns": q} for a, p, q in ((False, 10.0, 4.0), (True, 9.0, 5.0))]
    assert seed001.priority_changes(rows) == [
        {"sched": "fcfs", "write_pct": 20, "priority": 0.9, "other": 1.25}]


def test_informed_ratios():
    rows = [{"transactions": 5000, "mode": "nodiscard", "pages_moved": 300, "cleaning_ns": 10,
             "response_mean_ns": 4.0},
            {"transactions": 5000, "mode": "discard", "pages_moved": 100, "cleaning_ns": 6,
             "response_mean_ns": 3.0},
            {"transactions": 6000, "mode": "discard", "pages_moved": 1, "cleaning_ns": 1,
             "response_mean_ns": 1.0}]
    assert seed001.informed_ratios(rows) == [
        {"transactions": 5000, "pages_moved": 1 / 3, "cleaning_time": 0.6, "response_time": 0.75}]
    for r in rows:
        r["cold_mb"] = 48 if r["transactions"] == 5000 else 0
    assert [r["cold_mb"] for r in seed001.informed_ratios(rows, "cold_mb")] == [48]


def read_trace(path):
    with open(path) as f:
        return [tuple(int(x) for x in line.split()) for line in f]


def test_priority_trace(tmp_path):
    args = dict(requests=4000, priority_pct=10, span_pages=1024, page_size=4096, gap_ns=1000,
                max_pages=4, seed=5)
    marked = seed001.priority_trace(tmp_path / "a", write_pct=20, **args)
    seed001.priority_trace(tmp_path / "b", write_pct=80, **args)
    a, b = read_trace(tmp_path / "a"), read_trace(tmp_path / "b")
    assert len(a) == 4000 and 300 < marked < 500
    assert sum(1 for r in a if r[4] & seed001.TIME_CRITICAL) == marked
    for r in a:
        assert r[3] % 8 == 0 and 8 <= r[3] <= 32 and r[2] % 8 == 0
        assert r[2] + r[3] <= 1024 * 8
        assert r[4] in (0, 1, 2, 3)
    assert [r[0] for r in a] == sorted(r[0] for r in a)
    writes = [sum(1 for r in t if not r[4] & seed001.READ) / len(t) for t in (a, b)]
    assert 0.17 < writes[0] < 0.23 and 0.77 < writes[1] < 0.83
    # only the mix moves along the axis: times, places, sizes and marks are the same
    assert [(r[0], r[2], r[3], r[4] & 2) for r in a] == [(r[0], r[2], r[3], r[4] & 2) for r in b]


@pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
def test_quick(tmp_path):
    r = subprocess.run([os.path.join(REPO, "scripts", "bench-seed001"), "--quick",
                        "--write-pct", "20,80", "--sim", SIM, "--out", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(tmp_path / "results.json") as f:
        res = json.load(f)["priority"]
    assert "informed" not in res
    assert "sched=" not in res["device"] and "gc-critical=10" in res["device"]
    assert len(res["rows"]) == 8      # 2 write percentages x 2 schedulers x aware or not
    for row in res["rows"]:
        assert row["told"] == row["aware"]
        assert row["priority_count"] == row["priority_requests"] > 0
        assert row["priority_count"] + row["other_count"] == 5000
    assert len(res["changes"]) == 4
    assert [r["priority_pct"] for r in res["share_rows"]] == [10, 10, 90, 90]
    assert all(r["sched"] == "fcfs" and r["write_pct"] == 60 for r in res["share_rows"])
    assert [c["priority_pct"] for c in res["share_changes"]] == [10, 90]
    assert os.path.getsize(res["png"]) > 1000
    assert "aware / unaware" in r.stdout
