"""The simulator's table and scripts/nh/table.py, which prints it from a document for the guest's
nvme-hybrid-stats: the same lines on the same document; capacities in a unit that fits, the
placement and buffer lines; --version and what the document records about the replay."""
import json
import os
import re
import subprocess

import pytest

from helpers import REPO, SIM

from nh import table as nhtable

TRACE = os.path.join(REPO, "tests", "data", "traces", "mqsim_tpcc-small.trace")


def sim(*args):
    """The simulator's output on the tests' device: preset=none (the keys' own defaults, on
    which the expected lines were written) before the keys of -d."""
    args = list(args)
    if "-d" in args:
        args[args.index("-d") + 1] = "preset=none," + args[args.index("-d") + 1]
    else:
        args += ["-d", "preset=none"]
    r = subprocess.run([SIM, "-t", TRACE, "-f", "mqsim", *args], capture_output=True, text=True,
                       timeout=120, check=True)
    return r.stdout


DEVICES = [
    [],
    ["-d", "ftl=dftl,streams=4", "--capacity", "256M", "--fit", "modulo"],
    ["-d", "ftl=dftl,stream-map=dstream", "--capacity", "1536M", "--fit", "modulo"],
    ["-d", "buffer=lru,buffer-size=1M,cache-size=4M", "--qd", "8", "--limit", "3000"],
    ["-d", "ftl=fast,buffer=bplru,buffer-size=1M", "--capacity", "128M", "--fit", "compact",
     "--fill", "0.5"],
]


@pytest.mark.parametrize("args", DEVICES, ids=lambda a: " ".join(a) or "default")
def test_python_table_is_the_simulators(args):
    c = sim(*args).splitlines()
    doc = json.loads(sim("--json", *args))
    # only a replay knows its wall time and the --fit summary
    c = [re.sub(r", replayed in .*", "", line) for line in c if not line.startswith("fit ")]
    assert nhtable.table(doc).splitlines() == c


def test_lines_the_table_has():
    lines = sim("-d", "ftl=dftl,streams=4", "--capacity", "256M", "--fit", "modulo")
    assert "capacity=256 MiB\n" in lines
    assert re.search(r"^placement   streams 4 map=fixed physical streams 5  host pages per "
                     r"stream 0:\d+ \(others 0\)$", lines, re.M)
    # the default device: 16 host streams on 17 physical streams
    assert re.search(r"^placement   streams 16 \(auto\) map=fixed physical streams 17  ",
                     sim("--limit", "100"), re.M)
    lines = sim("-d", "streams=16,physical-streams=16", "--limit", "100")
    assert re.search(r"^placement   streams 16 map=fixed physical streams 16, 2 host streams "
                     r"share one  host pages per stream 0:\d+ \(others 0\)$", lines, re.M)
    assert re.search(r"^buffer      none$", lines, re.M)
    lines = sim("-d", "buffer=lru,buffer-size=1M", "--limit", "3000")
    assert re.search(r"^buffer      lru 1M  write hits \d+ \(\d+\.\d% of host pages written\)",
                     lines, re.M)
    assert "capacity=217 GiB" in lines and "placement" not in lines


def test_size_text():
    assert [nhtable.size_text(n) for n in (256 << 20, 1 << 30, 3 << 29, 217 << 30, 4096,
                                          2 << 40)] == \
        ["256 MiB", "1 GiB", "1.5 GiB", "217 GiB", "4 KiB", "2 TiB"]


def test_version_and_what_was_replayed():
    with open(os.path.join(REPO, "VERSION")) as f:
        version = f.read().strip()
    r = subprocess.run([SIM, "--version"], capture_output=True, text=True, check=True)
    assert r.stdout == "nvme-hybrid-sim %s\n" % version
    t = json.loads(sim("--json", "--qd", "4", "--limit", "100", "--sort", "--no-drain"))["trace"]
    assert t == dict(t, file=TRACE, format="mqsim", qd=4, limit=100, sort=True, fill=0.0,
                     drain=False, simulator="nvme-hybrid-sim " + version, requests=100)
    t = json.loads(sim("--json", "--limit", "50"))["trace"]
    assert (t["qd"], t["sort"], t["drain"]) == (0, False, True)


def test_device_document_without_trace():
    """A device's document has no trace member: the requests line counts its commands."""
    doc = json.loads(sim("--json", "--limit", "1000"))
    del doc["trace"]
    line = nhtable.table(doc).splitlines()[1]
    assert re.match(r"requests    1000 in \d+\.\d{3} s on the device's clock \(\d+ IOPS\)$",
                    line)


def stats_tool(monkeypatch, doc, text):
    """guest-images/tools/nvme-hybrid-stats as a module, its device read replaced by @doc."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(REPO, "guest-images", "tools", "nvme-hybrid-stats")
    loader = importlib.machinery.SourceFileLoader("nvme_hybrid_stats", path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    tool = importlib.util.module_from_spec(spec)
    loader.exec_module(tool)
    monkeypatch.setattr(tool, "read_stats", lambda device: (text, doc))

    def run(*argv):
        monkeypatch.setattr("sys.argv", ["nvme-hybrid-stats", "/dev/nvme0", *argv])
        tool.main()
    return run


def test_stats_tool_prints_the_table_by_default(monkeypatch, capsys):
    text = sim("--json", "-d", "buffer=lru", "--limit", "2000")
    doc = json.loads(text)
    del doc["trace"]      # a device's document has none
    run = stats_tool(monkeypatch, doc, text)
    run()
    assert capsys.readouterr().out == nhtable.table(doc)
    run("--json")
    assert json.loads(capsys.readouterr().out) == doc
    run("--raw")
    assert capsys.readouterr().out == text + "\n"
    run("--key", "host.write_cmds")
    assert capsys.readouterr().out == "%d\n" % doc["host"]["write_cmds"]
    run("--key", "config.buffer")
    assert capsys.readouterr().out == "lru\n"
