"""scripts/soak's checker of the statistics it reads while the soak runs: a counter that goes
down, an undefined WAF or fewer NAND programs than GC copies are each reported; the real
statistics document of the simulator passes.  (The soak itself boots guests: make soak.)"""
import importlib.machinery
import importlib.util
import json
import os
import random
import subprocess

from helpers import REPO, SIM
from nh import stats

_loader = importlib.machinery.SourceFileLoader("soak", os.path.join(REPO, "scripts", "soak"))
soak = importlib.util.module_from_spec(importlib.util.spec_from_loader(_loader.name, _loader))
_loader.exec_module(soak)


def sim_stats(tmp_path, n):
    """The simulator's statistics after @n scattered 4 KiB writes on a small device (GC runs)."""
    rng = random.Random(1)
    trace = tmp_path / ("w%d.trace" % n)
    trace.write_text("".join("%d 0 %d 8 0\n" % (i * 1000, rng.randrange(4000) * 8)
                             for i in range(n)))
    r = subprocess.run([SIM, "--trace", str(trace), "--format", "mqsim", "--json",
                        "--capacity", "16M", "--device", "channels=1,ways=2,pages=16"],
                       stdout=subprocess.PIPE, text=True, check=True)
    return stats.numbers(json.loads(r.stdout))


def test_real_statistics_pass_and_grow(tmp_path):
    early, late = sim_stats(tmp_path, 3000), sim_stats(tmp_path, 9000)
    assert late["ftl.gc_page_copies"] > 0
    assert soak.check_stats(None, early) == []
    assert soak.check_stats(early, late) == []


def test_a_counter_that_goes_down_is_reported(tmp_path):
    early, late = sim_stats(tmp_path, 3000), sim_stats(tmp_path, 9000)
    problems = soak.check_stats(late, early)
    assert any(p.startswith("host.write_pages went down") for p in problems), problems
    assert any(p.startswith("nand.page_programs went down") for p in problems), problems


def test_gauges_may_go_down():
    cur = dict(waf=1.0, **{"buffer.metadata_bytes": 10, "sched.queued_ops": 0,
                            "latency_ns.read.mean": 5.0})
    prev = dict(waf=1.0, **{"buffer.metadata_bytes": 99, "sched.queued_ops": 7,
                             "latency_ns.read.mean": 9.0})
    assert soak.check_stats(prev, cur) == []


def test_undefined_waf_and_missing_programs_are_reported():
    assert soak.check_stats(None, {"waf": float("nan")}) == ["waf is nan"]
    assert soak.check_stats(None, {}) == ["waf is None"]
    bad = {"waf": 1.0, "nand.page_programs": 5, "ftl.gc_page_copies": 4,
           "ftl.wl_page_copies": 2}
    assert soak.check_stats(None, bad) == [
        "nand.page_programs 5 < the 6 GC and wear-levelling copies"]
