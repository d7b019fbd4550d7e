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
    assert b["span_ns"] == 2000 and b["iops"] == pytest.approx(1.5e6)


@pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
def test_phase_by_difference_of_two_replays(tmp_path):
    """The recorded log replayed: the read phase's figures by difference of the replays up to
    its start and end are those of its reads alone (the precondition before it only wrote)."""
    segs = vg.read_log(LOG.splitlines())
    trace = str(tmp_path / "t.mqsim")
    ends = vg.write_mqsim(segs, 512, trace)
    assert ends == [1, 3, 6]
    assert open(trace).read().splitlines()[1] == "1000 0 0 2048 0"
    docs = [nhsim.replay(trace, "mqsim", "preset=pm9a3", sim=SIM, qd=1, limit=n,
                         capacity=64 << 20) for n in ends[1:]]
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
