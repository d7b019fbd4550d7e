"""Small promises of the tools in scripts/: sizes with suffixes, help texts that cite files the
checkout has and every option the tool takes, numbers in docs that the simulator prints."""
import importlib.machinery
import importlib.util
import os
import re
import subprocess

import pytest

from helpers import REPO, SCRIPTS, SIM

# The tools a user runs on the host (their guest halves are in guest-images/workloads/).
TOOLS = ["bench-ba", "bench-dblog", "bench-dstream", "bench-fidelity", "bench-fidelity-sim",
         "bench-overhead", "bench-sim", "bench-streams-rocksdb", "capture-virt-trace",
         "compare-buffers", "crashpoints", "dblog-powercut", "fuzz", "gen-workload", "nhtop",
         "plot", "powercut-campaign", "run-vm", "soak", "sweep", "vm-exec"]


def load(name):
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"),
                                                  os.path.join(SCRIPTS, name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def tool(name, *args):
    # COLUMNS: argparse wraps at the terminal's width, which would split a path in two
    return subprocess.run([os.path.join(SCRIPTS, name), *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, COLUMNS="400"))


def test_gen_workload_space_takes_a_size(tmp_path):
    out = tool("gen-workload", "financial", "-n", "20000", "--space", "4G").stdout
    ends = [int(f.split(",")[1]) * 512 + int(f.split(",")[2]) for f in out.splitlines()]
    assert len(ends) == 20000 and 3 << 30 < max(ends) <= 4 << 30
    assert tool("gen-workload", "financial", "-n", "5", "--space", "1073741824").returncode == 0
    r = tool("gen-workload", "financial", "--space", "4X")
    assert r.returncode == 2 and "bad size '4X'" in r.stderr
    r = tool("gen-workload", "financial", "--space", "100K")
    assert r.returncode == 2 and "--space 102400 bytes is too small" in r.stderr


@pytest.mark.parametrize("name", TOOLS)
def test_help_cites_files_that_exist(name):
    r = tool(name, "--help")
    assert r.returncode == 0, r.stderr
    # a path of the checkout, not the tail of an absolute one (a checkout in .../wt-scripts/)
    cited = re.findall(r"(?<![\w./-])(?:scripts|docs|tests|guest-images|tools)/[\w./-]*\w",
                       r.stdout)
    missing = [p for p in cited if not os.path.exists(os.path.join(REPO, p))]
    assert not missing, "%s --help cites %s" % (name, ", ".join(missing))


def test_plot_usage_names_every_option():
    usage = tool("plot", "--help").stdout.split("\n\n")[0]
    assert usage == "usage: plot FILE [--out DIR] [--title TEXT]"


def test_plot_counts_one_request():
    plot = load("plot")
    assert plot.requests(1) == "1 request"
    assert plot.requests(2500) == "2,500 requests"
    assert plot.requests(None) == "absent requests"


@pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
def test_placement_doc_says_what_the_fit_touches():
    """docs/placement.md's sizes of the compacted traces are the simulator's, in bench-dstream's
    geometry (its 8 KiB pages set the unit of --fit compact)."""
    with open(os.path.join(REPO, "docs", "placement.md")) as f:
        text = " ".join(f.read().split())
    m = re.search(r"cloudPhysicsIO touches ([\d.]+) GiB, tpcc-small (\d+) MiB", text)
    assert m, "docs/placement.md no longer says what the traces touch"
    geometry = load("bench-dstream").GEOMETRY
    touched = {}
    for name, fmt in (("libcachesim_cloudPhysicsIO.csv", "cpcsv"),
                      ("mqsim_tpcc-small.trace", "mqsim")):
        r = subprocess.run([SIM, "-t", os.path.join(REPO, "tests", "data", "traces", name),
                            "-f", fmt, "--fit", "compact", "-c", "16G", "-d", geometry, "-j"],
                           capture_output=True, text=True, timeout=120, check=True)
        touched[name] = int(re.search(r'"touched_bytes" *: *(\d+)', r.stdout).group(1))
    assert float(m.group(1)) == round(touched["libcachesim_cloudPhysicsIO.csv"] / 2**30, 3)
    assert int(m.group(2)) == round(touched["mqsim_tpcc-small.trace"] / 2**20)


@pytest.mark.parametrize("name", TOOLS)
def test_version(name):
    """Every tool prints the one version of the checkout, the VERSION file meson.build reads
    for the C programs too."""
    with open(os.path.join(REPO, "VERSION")) as f:
        version = f.read().strip()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    with open(os.path.join(REPO, "meson.build")) as f:
        assert "version: files('VERSION')" in f.readline()
    r = tool(name, "--version")
    assert (r.returncode, r.stdout) == (0, "%s %s\n" % (name, version)), r.stderr
