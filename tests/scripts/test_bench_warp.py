"""bench-warp's parsing and derivation, without a guest: the job rewrite touches only
`runtime=` lines, the `nvme fdp stats` log (nvme-cli's text, as WARP's 5.get_waf.sh collects
it) turns into the right counters, curves and steady-state WAF, and --from re-derives a
previous run's table, JSON and PNG.  The runs themselves are a benchmark (docs/placement.md)."""
import json
import os
import subprocess

from helpers import REPO
from nh import warp

SCRIPT = os.path.join(REPO, "scripts", "bench-warp")

JOB = """[global]
ioengine=io_uring_cmd
filename=/dev/ng0n1
fdp=1

[seq]
rw=write
size=90%
offset=0%
time_based=1
runtime=22000
fdp_pli=0

[rand]
rw=randwrite
size=10%
offset=90%
runtime=22000
;runtime=5
fdp_pli=1
"""


def sample(clock, hbmw, mbmw, mbe=0, ruh=()):
    lines = [clock,
             f"Host Bytes with Metadata Written (HBMW): {hbmw:,}",
             f"Media Bytes with Metadata Written (MBMW): {mbmw:,}",
             f"Media Bytes Erased (MBE): {mbe:,}"]
    lines += [f"Reclaim Unit Handle {h} Attributes: 0x1 (Host Specified) {a} {b} "
              for h, a, b in ruh]
    return "\n".join(lines) + "\n"


def test_rewrite_touches_only_runtime():
    new, changes = warp.rewrite_job(JOB, 60)
    assert changes == [(11, "runtime=22000", "runtime=60"), (18, "runtime=22000", "runtime=60")]
    old_lines, new_lines = JOB.splitlines(), new.splitlines()
    assert len(old_lines) == len(new_lines)
    diff = [(o, n) for o, n in zip(old_lines, new_lines) if o != n]
    assert diff == [("runtime=22000", "runtime=60")] * 2
    assert ";runtime=5" in new_lines  # a commented line stays theirs


def test_parse_counters_clock_and_handles():
    text = (sample("Thu Sep 11 11:59:59 AM UTC 2025", 0, 0, ruh=[(0, 0, 0)])
            + sample("Thu Sep 11 12:00:01 PM UTC 2025", 4096, 8192, 1 << 20,
                     ruh=[(0, 4096, 8192), (2, 0, 0)])
            + sample("Thu Sep 11 11:59:58 PM UTC 2025", 8192, 12288)
            + sample("Fri Sep 12 00:00:03 UTC 2025", 12288, 16384)
            + "Fri Sep 12 00:00:04 UTC 2025\nHost Bytes with Metadata Written (HBMW): 99\n")
    s = warp.parse_fdp_stats(text)
    assert [x["t"] for x in s] == [43199, 43201, 86398, 86403]  # PM and midnight
    assert [(x["hbmw"], x["mbmw"]) for x in s] == [(0, 0), (4096, 8192), (8192, 12288),
                                                     (12288, 16384)]
    assert s[1]["mbe"] == 1 << 20
    assert s[1]["ruh"] == {0: (4096, 8192), 2: (0, 0)}
    assert len(s) == 4  # the last sample lacks MBMW and MBE: the logger was killed


def test_curve_and_steady_state():
    # WAF 1 for the first 600 host units, then 3 for the last 300: the last third is steady
    text = "".join(sample(f"10:00:{i:02d}", h, m)
                   for i, (h, m) in enumerate([(0, 0), (300, 300), (600, 600), (750, 1050),
                                               (900, 1500)]))
    s = warp.parse_fdp_stats(text)
    assert warp.steady(s) == 3.0
    c = warp.curve(s, capacity=300)
    assert [p["dw"] for p in c] == [1.0, 2.0, 2.5, 3.0]
    assert [p["waf_interval"] for p in c] == [1.0, 1.0, 3.0, 3.0]
    assert c[-1]["waf"] == 1500 / 900
    assert warp.steady(s[:1]) is None


def test_job_names_and_bandwidth():
    assert warp.job_names(JOB) == ["seq", "rand"]
    log = "100, 1000, 1, 0, 0\n200, 3000, 1, 0, 0\n300, 5000, 1, 0, 0\n"
    assert warp.bandwidth(log) == 4000 * 1024 / 1e6  # the last third of 300 ms: t >= 200
    assert warp.bandwidth(log, tail=1) == 3000 * 1024 / 1e6
    assert warp.bandwidth("") is None


def test_tag_waf():
    before = {"ftl": {"placement": {"host_pages": {"0": 10, "1": 5}, "gc_copies": {"0": 2}}}}
    after = {"ftl": {"placement": {"host_pages": {"0": 110, "1": 5, "2": 50},
                                   "gc_copies": {"0": 52, "2": 25, "gc": 7}}}}
    assert warp.tag_waf(before, after) == {"0": (100, 50, 1.5), "2": (50, 25, 1.5)}


def fake_run(root, name, hw):
    d = root / "runs" / name
    d.mkdir(parents=True)
    text = "".join(sample(f"10:00:{i:02d}", h, m) for i, (h, m) in enumerate(hw))
    (d / "waf_1sec.txt").write_text(text)
    (d / "fio.txt").write_text("seq: (groupid=0, jobs=1): err= 0: pid=1\n")
    (d / "x_bw.2.log").write_text("100, 2000, 1, 0, 0\n200, 2000, 1, 0, 0\n")
    (root / "jobs").mkdir(exist_ok=True)
    (root / "jobs" / name).write_text(JOB)
    for i, pages in enumerate((0, 100, 200)):
        doc = {"ftl": {"placement": {"host_pages": {"1": pages}, "gc_copies": {"1": pages // 4}}}}
        (d / f"tags-{i:04d}.json").write_text(json.dumps(doc))


def test_from_previous_run(tmp_path):
    fake_run(tmp_path, "2s-10p.fdp", [(0, 0), (1 << 27, 1 << 27), (1 << 28, 3 << 27)])
    (tmp_path / "changes.json").write_text(json.dumps({"2s-10p.fdp": []}))
    (tmp_path / "params.json").write_text(json.dumps({"device": "fdp=on", "size": "128M",
                                                      "runtime": 60, "guest": "fio341"}))
    r = subprocess.run([SCRIPT, "--from", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("2s-10p"))
    assert row.split()[2:5] == ["2.00", "1.50", "2.0"], row
    doc = json.loads((tmp_path / "warp.json").read_text())
    ours = doc["results"]["2s-10p.fdp"]["ours"]
    assert ours["steady"] == 2.0 and ours["handles"]["1"]["waf"] == 1.25
    assert ours["jobs_mb_s"] == {"rand": 2000 * 1024 / 1e6}
    assert (tmp_path / "warp.png").stat().st_size > 0


def test_bad_size_is_refused():
    r = subprocess.run([SCRIPT, "--size", "3Q"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "argument --size: bad size '3Q'" in r.stderr
