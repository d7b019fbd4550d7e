"""bench-dblog refuses what it cannot run before it boots a guest, and --dilate K lengthens
every device time it must (the runs themselves are a benchmark, docs/dblog.md)."""
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import types

import pytest

from helpers import REPO, SIM

SCRIPT = os.path.join(REPO, "scripts", "bench-dblog")


def load():
    loader = importlib.machinery.SourceFileLoader("bench_dblog", SCRIPT)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("args,message", [
    (["--dilate", "4"], "more than 1 needs --icount"),
    (["--dilate", "0", "--icount"], "--dilate must be at least 1"),
    (["--dilate", "3", "--icount"], "--dilate must divide the channel's 800 MB/s"),
    (["--dilate", "4", "--icount", "--device", "buffer=lru,ba-rtt-ns=0"],
     "leave ba-rtt-ns=0 out of --device"),
    (["--dilate", "2", "--icount", "--device", "cell=mlc"], "leave cell=mlc out of --device"),
    (["--clients", "4,x"], "--clients takes numbers separated by commas"),
])
def test_refuses_before_booting(args, message):
    r = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert "runs of" not in r.stderr  # no boot started


def test_dilate_lengthens_every_device_time():
    m = load()
    props = {t: dict(kv.split("=") for kv in m.timing_props(types.SimpleNamespace(dilate=4), t)
                     .split(",")) for t in ("default", "znand")}
    assert props["znand"] == {"cell": "znand", "t-read": "12000ns", "t-prog": "40000ns",
                              "t-erase": "6000000ns", "channel-mbps": "200",
                              "ba-rtt-ns": "4000", "ba-write-mbps": "800"}
    assert props["default"]["t-prog"] == "800000ns" and "cell" not in props["default"]
    # Undilated, the timing models are the plain ones.
    assert m.timing_props(types.SimpleNamespace(dilate=1), "znand") == "cell=znand,t-prog=10us"
    assert m.timing_props(types.SimpleNamespace(dilate=1), "default") == ""


def test_dilated_times_start_from_the_engines_own(tmp_path):
    """NAND_NS repeats ftl/nand.c's presets: the simulator (the same engine) must agree."""
    m = load()
    trace = tmp_path / "one.msr"
    trace.write_text("128166372003061629,h,0,Write,0,4096,100\n")
    for timing, (t_read, t_prog, _) in m.NAND_NS.items():
        r = subprocess.run([SIM, "-t", str(trace), "-f", "msr", "-j"]
                           + (["-d", m.TIMINGS[timing]] if m.TIMINGS[timing] else []),
                           capture_output=True, text=True, timeout=60, check=True)
        g = json.loads(r.stdout)["geometry"]
        assert (g["t_read_ns"], g["t_prog_ns"]) == (t_read, t_prog), timing
