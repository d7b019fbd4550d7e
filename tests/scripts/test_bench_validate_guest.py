"""scripts/bench-validate-guest without a guest: its reading of the device's request log, the
per-phase figures it derives from cumulative statistics (checked on real replays of the
simulator), fio's figures, the table and the plot, on small fixed inputs."""
import json
import os
import subprocess

import pytest

from helpers import REPO, SIM
from nh import sim as nhsim
from nh import validate_guest as vg

SCRIPT = os.path.join(REPO, "scripts", "bench-validate-guest")

# QEMU's log backend as -trace nhc_io_rw -trace nhc_admin_get_log writes it: a boot read, a
# statistics read (its header, then its body: one marker), two writes, a SMART read (not a
# marker), a statistics read, three reads, a statistics read.
LOG = """\
nhc_admin_get_log lid 0x5 offset 0 length 4096
nhc_io_rw cid 896 write 0 slba 0 nlb 8 fua 0
nhc_admin_get_log lid 0xc0 offset 0 length 16
nhc_admin_get_log lid 0xc0 offset 0 length 4096
nhc_io_rw cid 1 write 1 slba 0 nlb 2048 fua 0
nhc_io_rw cid 2 write 1 slba 2048 nlb 2048 fua 0
nhc_admin_get_log lid 0x2 offset 0 length 512
nhc_admin_get_log lid 0xc0 offset 0 length 16
nhc_admin_get_log lid 0xc0 offset 0 length 4096
nhc_io_rw cid 3 write 0 slba 8 nlb 8 fua 0
nhc_io_rw cid 4 write 0 slba 16 nlb 8 fua 0
nhc_io_rw cid 5 write 0 slba 4000 nlb 8 fua 0
nhc_admin_get_log lid 0xc0 offset 0 length 16
nhc_admin_get_log lid 0xc0 offset 0 length 4096
"""


def test_log_splits_at_each_statistics_read():
    segs = vg.read_log(LOG.splitlines())
    assert [len(s) for s in segs] == [1, 2, 3]
    assert segs[1][0] == (True, 0, 2048) and segs[2][2] == (False, 4000, 8)
    with pytest.raises(vg.Error, match="1 requests after the last statistics read"):
        vg.read_log(LOG.splitlines() + ["nhc_io_rw cid 6 write 1 slba 0 nlb 8 fua 0"])


def stats(reads, writes, rmean=0.0, wmean=0.0, duration=0):
    return {"latency_ns": {"read": {"count": reads, "mean": rmean},
                           "write": {"count": writes, "mean": wmean}},
            "run": {"duration_ns": duration}}


def test_segment_must_be_what_the_device_counted():
    seg = vg.read_log(LOG.splitlines())[1]
    vg.check_segment(seg, stats(1, 0), stats(1, 2), "precondition")
    with pytest.raises(vg.Error, match="precondition: the trace log has 0 reads and 2 writes, "
                                       "the device's statistics 1 and 2"):
        vg.check_segment(seg, stats(1, 0), stats(2, 2), "precondition")


def test_between_is_exact_for_counts_and_means():
    b = vg.between(stats(2, 1, 10.0, 100.0, 1000), stats(4, 2, 20.0, 130.0, 3000))
    # 2 reads of mean 30 and 1 write of 160: (60 + 160) / 3
    assert b["requests"] == 3 and b["mean_ns"] == pytest.approx(220 / 3)
    assert b["span_ns"] == 2000


@pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
def test_phase_by_difference_of_two_replays(tmp_path):
    """The recorded log replayed: the read phase's figures by difference of the replays up to
    its start and end are those of its reads alone (the precondition before it only wrote)."""
    segs = vg.read_log(LOG.splitlines())
    trace = str(tmp_path / "t.mqsim")
    ends = vg.write_mqsim(segs, 512, trace)
    assert ends == [1, 3, 6]
    assert open(trace).read().splitlines()[1] == "1000 0 0 2048 0"
    # the write cache off: the reads of what was just written would come from it
    docs = [nhsim.replay(trace, "mqsim", "preset=pm9a3,map-unit=auto,stripe-merge=off", sim=SIM,
                         qd=1, limit=n, capacity=64 << 20) for n in ends[1:]]
    phase = vg.between(*docs)
    reads = docs[1]["latency_ns"]["read"]
    assert phase["requests"] == 3
    # the boot read is in both replays: the phase's mean is that of its own three reads
    assert phase["mean_ns"] == pytest.approx((reads["mean"] * 4 - docs[0]["latency_ns"]["read"]
                                              ["mean"]) / 3)
    assert 40e3 < phase["mean_ns"] < 80e3       # pm9a3: 45 us tR plus the transfers


def fio_doc(read_ios, write_ios):
    def part(n, iops, mean, p99):
        return {"total_ios": n, "iops": iops if n else 0,
                "lat_ns": {"mean": mean, "percentile": {"99.000000": p99}}}
    return {"jobs": [{"read": part(read_ios, 700.0, 100.0, 300), "write":
                      part(write_ios, 300.0, 500.0, 900)}]}


def test_fio_figures_join_reads_and_writes():
    f = vg.fio_figures(fio_doc(70, 30))
    assert f["requests"] == 100 and f["iops"] == 1000
    assert f["mean_ns"] == pytest.approx(220) and f["p99_ns"] == 300
    assert vg.fio_figures(fio_doc(0, 30))["p99_ns"] == 900


def test_rows_table_and_agreement(tmp_path):
    rows = []
    for qd, dev_mean in ((1, 100.0), (2, 100.0), (4, 110.0), (8, 120.0)):
        p = {"name": "rr-qd%d" % qd, "workload": "rr", "qd": qd}
        fio = {"iops": 1e7 * min(qd, 3) / 1e3 / 1.2, "mean_ns": 1.2e3 * dev_mean, "p99_ns": 2e5,
               "requests": 100}
        dev = {"mean_ns": 1e3 * dev_mean, "requests": 100 if qd < 8 else 50}
        seen = vg.device_qd(fio, dev, qd)[1]
        rows.append(vg.row(p, fio, dev, {"iops": 1e4 * qd, "mean_ns": 1e3 * dev_mean * 1.01},
                           vg.at_qd(seen, lambda n: {"mean_ns": 1e3 * dev_mean * 0.98})))
    # Little's law: at QD 8 the device saw 2.5e4 IOPS x 120 us = 3 requests in flight
    assert rows[3]["dev_qd"] == pytest.approx(3.0) and rows[3]["sim_seen_qd"] == pytest.approx(3)
    # at QD 1 the device saw 10000 IOPS x 100 us = 1 (fio's runtime covers it all)
    assert rows[0]["sim_seen_qd"] == pytest.approx(1)
    assert rows[3]["dev_sim"] == pytest.approx(1 / 0.98 - 1)
    # at QD 8 the block layer merged pairs: flagged
    assert vg.unmatched(rows) == ["rr-qd8: fio 100, device 50"]
    a = vg.agreement(rows)
    assert a["dev_sim_mean"]["error"] == pytest.approx(1 / 0.98 - 1)
    assert a["fio_sim_iops"]["phase"] == "rr-qd8"
    text = vg.table(rows).splitlines()
    assert len(text) == 6 and text[5].split()[:2] == ["rr", "8"]
    assert "+2.04%" in text[5]
    vg.plot(rows, vg.QDS, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_latency_at_a_fractional_depth_is_between_the_whole_ones():
    asked = []

    def sim_at(n):
        asked.append(n)
        return {"mean_ns": {2: 100.0, 3: 140.0}[n]}
    assert vg.at_qd(2.25, sim_at) == {"mean_ns": pytest.approx(110.0), "qd": 2.25}
    assert asked == [2, 3]
    assert vg.at_qd(3.0, sim_at)["mean_ns"] == 140.0
    assert vg.device_qd({"iops": 1e5}, {"mean_ns": 100e3}, 8) == (10.0, 8.0)
    assert vg.device_qd({"iops": 1e3}, {"mean_ns": 100e3}, 8) == (0.1, 1.0)


def test_guest_script_is_valid_shell_with_every_phase():
    plan = vg.phases(10, 5)
    assert len(plan) == 20 and plan[-1]["name"] == "sw-qd8" and plan[-1]["ios"] == 5
    script = vg.guest_script(plan)
    r = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr
    assert script.count("nvme-hybrid-stats --json") == 2 + len(plan)
    assert "--rwmixread=70" in script and "--iodepth=8 --number_ios=5" in script


def test_help_and_bad_key():
    r = subprocess.run([SCRIPT, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--ios-large" in r.stdout
    r = subprocess.run([SCRIPT, "--ios-large", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "--ios-large: '0' is not a whole number of requests" in r.stderr
    if os.access(SIM, os.X_OK):
        r = subprocess.run([SCRIPT, "--device", "t-read=fast", "--sim", SIM],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "t-read" in r.stderr


def kept_run(tmp_path, ios=3, ios_large=2, size=16 << 20):
    """A kept run (--keep's files) of a device that answered exactly as the simulator at QD 1:
    the trace log of every phase, its statistics (replays of the log at QD 1 up to each
    statistics read) and fio's documents (each at the rate of one request at a time)."""
    plan = vg.phases(ios, ios_large)
    lines = ["nhc_io_rw cid 1 write 0 slba 0 nlb 8 fua 0"]
    marker = ["nhc_admin_get_log lid 0xc0 offset 0 length 16",
              "nhc_admin_get_log lid 0xc0 offset 0 length 4096"]
    lines += marker + ["nhc_io_rw cid 1 write 1 slba %d nlb 2048 fua 0" % (i * 2048)
                       for i in range(size // (2048 * 512))] + marker
    for p in plan:
        for i in range(p["ios"]):
            write = p["rw"] in ("randwrite", "write") or (p["rw"] == "randrw" and i % 3 == 0)
            sectors = p["bs"] // 512
            slba = (i * sectors if p["bs"] > 4096 else (i * 7919 * 8) % (size // 512))
            lines.append("nhc_io_rw cid 1 write %d slba %d nlb %d fua 0"
                         % (write, slba, sectors))
        lines += marker
    work = tmp_path / "run"
    (work / "share").mkdir(parents=True)
    (work / "device-trace.log").write_text("\n".join(lines) + "\n")
    (work / "share" / "lba-size").write_text("512\n")
    (work / "run.json").write_text(json.dumps({"preset": "pm9a3", "props": "preset=pm9a3",
                                               "size": size, "ios": ios,
                                               "ios_large": ios_large, "guest_wall_s": 1.0}))
    segs = vg.read_log(lines)
    ends = vg.write_mqsim(segs, 512, str(tmp_path / "t.mqsim"))
    names = ["boot", "precondition"] + [p["name"] for p in plan]
    docs = [nhsim.replay(str(tmp_path / "t.mqsim"), "mqsim", "preset=pm9a3", sim=SIM, qd=1,
                         limit=e, capacity=size) for e in ends]
    for name, doc in zip(names, docs):
        (work / "share" / ("stats-%s.json" % name)).write_text(json.dumps(doc))
    for i, p in enumerate(plan):
        phase = vg.between(docs[i + 1], docs[i + 2])
        n_read = sum(1 for w, _, _ in segs[i + 2] if not w)
        fio = fio_doc(n_read, p["ios"] - n_read)
        for part in fio["jobs"][0].values():
            part["iops"] = 1e9 / phase["mean_ns"] * part["total_ios"] / p["ios"]
        (work / "share" / ("fio-%s.json" % p["name"])).write_text(json.dumps(fio))
    return work


@pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
def test_reuse_of_a_kept_run(tmp_path):
    """The whole script on a kept run, no guest: a device that behaved as the simulator at
    QD 1 agrees with it exactly in every phase, and every output is written."""
    work = kept_run(tmp_path)
    out = tmp_path / "out"
    r = subprocess.run([SCRIPT, "--reuse", str(work), "--sim", SIM, "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "bench-validate-guest.json").read_text())
    assert len(doc["rows"]) == 20 and doc["config_differences"] == {}
    for row in doc["rows"]:
        assert row["dev_sim"] == pytest.approx(0, abs=1e-9), row["phase"]
        assert row["dev_qd"] == pytest.approx(1) and row["fio_requests"] == row["dev_requests"]
    assert doc["published"]["rand_read_iops"] == 900000
    assert "device/sim mean +0.00%" in r.stdout and "published (Samsung PM9A3" in r.stdout
    assert (out / "bench-validate-guest.png").stat().st_size > 1000
    # one request the device did not count: the log and the statistics disagree, said plainly
    log = work / "device-trace.log"
    log.write_text("nhc_io_rw cid 1 write 0 slba 0 nlb 8 fua 0\n" + log.read_text())
    r = subprocess.run([SCRIPT, "--reuse", str(work), "--sim", SIM, "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1
    assert "boot: the trace log has 2 reads and 0 writes, the device's statistics 1" in r.stderr
