"""bench-dblog refuses what it cannot run before it boots a guest, and --dilate K lengthens
every device time it must (the runs themselves are a benchmark, docs/dblog.md)."""
import importlib.machinery
import importlib.util
import io
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
    assert props["znand"] == {"preset": "none", "cell": "znand", "t-read": "12000ns", "t-prog": "40000ns",
                              "t-erase": "6000000ns", "channel-mbps": "200",
                              "ba-rtt-ns": "4000", "ba-write-mbps": "800"}
    assert props["default"]["t-prog"] == "800000ns" and "cell" not in props["default"]
    # Undilated, the timing models are the plain ones.
    assert m.timing_props(types.SimpleNamespace(dilate=1), "znand") == \
        "preset=none,cell=znand,t-prog=10us"
    assert m.timing_props(types.SimpleNamespace(dilate=1), "default") == "preset=none"


def test_dilated_times_start_from_the_engines_own(tmp_path):
    """NAND_NS repeats ftl/nand.c's presets: the simulator (the same engine) must agree."""
    m = load()
    trace = tmp_path / "one.msr"
    trace.write_text("128166372003061629,h,0,Write,0,4096,100\n")
    for timing, (t_read, t_prog, _) in m.NAND_NS.items():
        r = subprocess.run([SIM, "-t", str(trace), "-f", "msr", "-j"]
                           + ["-d", m.TIMINGS[timing]],
                           capture_output=True, text=True, timeout=60, check=True)
        g = json.loads(r.stdout)["geometry"]
        assert (g["t_read_ns"], g["t_prog_ns"]) == (t_read, t_prog), timing


def test_help_counts_the_engines():
    out = subprocess.run([SCRIPT, "--help"], capture_output=True, text=True, env=dict(
        os.environ, COLUMNS="200"), check=True).stdout
    assert "(default: every one, pg, linkbench, rocksdb, redis)" in out
    assert "all three" not in out


def test_the_table_names_its_clock(capsys):
    m = load()
    rows = m.summarize([run(m, "pg", mode, 4, tps) for mode, tps in
                        (("block", 100.0), ("window", 185.0), ("async", 400.0))])
    for icount, says in ((None, "clock: TCG without -icount, on the host's clock: every figure "
                                "includes what emulating the guest costs on the host"),
                         (0, "clock: -icount shift=0, on guest instructions: the guest saw the "
                             "modeled device times exactly")):
        m.print_table(rows, m.clock(types.SimpleNamespace(icount=icount))[1])
        out = capsys.readouterr().out
        assert out.startswith(says) and "docs/timing.md" in out.splitlines()[0]
    assert m.clock(types.SimpleNamespace(icount=None))[0] == "TCG, the host's clock: upper bounds"


def test_progress_names_each_finished_run():
    m = load()
    out, clock = io.StringIO(), iter([100.0, 130.0, 190.0])
    p = m.Progress("znand", 2, out=out, now=lambda: next(clock))
    p.line("vm-exec: something\n")
    p.line("rep 0 pg      block   4 clients:      101.0 /s, commit  39000.0 us (p99 90000.0)\n")
    p.line("rep 0 pg      window  4 clients:      187.0 /s, commit  21000.0 us (p99 50000.0)\n")
    lines = out.getvalue().splitlines()
    assert lines == [
        "bench-dblog: znand timing, run 1 of 2 done after 30 s; about 30 s to go: rep 0 pg      "
        "block   4 clients:      101.0 /s, commit  39000.0 us (p99 90000.0)",
        "bench-dblog: znand timing, run 2 of 2 done after 90 s: rep 0 pg      window  4 clients:"
        "      187.0 /s, commit  21000.0 us (p99 50000.0)"]
    assert list(p.tail)[0] == "vm-exec: something\n"


def run(m, engine, mode, clients, tps, rep=0, timing="default"):
    return dict(timing=timing, engine=engine, mode=mode, clients=clients, rep=rep,
                throughput=tps, lat_mean_us=1e6 / tps, lat_p99_us=2e6 / tps, commits=1000,
                flushes=10, nand_bytes=4096, ring_appends=1000)


def test_quick_plot_has_bars_from_zero():
    """One client count (--quick): a bar per mode on a linear axis, never a lone point on a log
    axis; several: lines over the client counts on a log axis. Every y axis starts at zero,
    so a 1:1.85 throughput does not look like 1:10."""
    m = load()
    one = m.summarize([run(m, e, mode, 4, tps) for e in ("pg", "redis") for mode, tps in
                       (("block", 1000.0), ("window", 1850.0), ("async", 2000.0))])
    fig = m.figure(one, "t")
    for ax in fig.axes:
        assert ax.get_xscale() == "linear" and ax.get_ylim()[0] == 0
        assert [type(c).__name__ for c in ax.containers].count("BarContainer") == 3
        assert [t.get_text() for t in ax.get_xticklabels()] == ["block", "window", "async"]
    many = m.summarize([run(m, "pg", mode, c, tps * c) for c in (1, 4, 16) for mode, tps in
                        (("block", 1000.0), ("window", 1850.0), ("async", 2000.0))])
    (ax,) = m.figure(many, "t").axes
    assert ax.get_xscale() == "log" and ax.get_ylim()[0] == 0
    assert [type(c).__name__ for c in ax.containers] == ["ErrorbarContainer"] * 3
    assert list(ax.get_xticks()) == [1, 4, 16]
