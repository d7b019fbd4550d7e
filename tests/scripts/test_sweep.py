"""scripts/sweep: a grid of simulator replays on Dask distributed.

The cluster tests start a real `dask scheduler` and two `dask worker` processes on
127.0.0.1 (single-threaded, no nanny, so a killed worker stays dead), run a small grid through
them and compare every row with the same replay run directly.  One test kills a worker while it
runs a replay: the scheduler hands the task to the other worker and the sweep completes."""
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from helpers import REPO, SIM, SCRIPTS
from nh import stats

SWEEP = os.path.join(SCRIPTS, "sweep")
DASK = os.path.join(os.path.dirname(sys.executable), "dask")

pytestmark = pytest.mark.skipif(not os.access(SIM, os.X_OK),
                                reason="no simulator at %s (ninja -C build)" % SIM)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    paths = {}
    for name, n in (("financial", 20000), ("exchange", 150000)):
        p = d / (name + ".spc")
        subprocess.run([os.path.join(SCRIPTS, "gen-workload"), name, "-n", str(n), "-o", str(p)],
                       check=True)
        paths[name] = p
    return paths


def write_spec(path, trace, fmt="spc", policies=("lru", "bplru"), sizes=(2, 8), upload=False,
               extra=""):
    path.write_text(f"""
sim = "{SIM}"
device = "pages=64,cell=slc"
options = {{ fill = 1, capacity = "1G" }}
{extra}
[[trace]]
name = "t"
path = "{trace}"
format = "{fmt}"
upload = {str(upload).lower()}

[[axis]]
name = "buffer_mb"
property = "buffer-size"
values = {list(sizes)}
suffix = "M"

[[axis]]
name = "policy"
properties = {{ {", ".join(f'{p} = "buffer={p}"' for p in policies)} }}

[[axis]]
name = "loop"
options = {{ qd8 = {{ qd = 8 }}, open = {{}} }}
""")
    return path


def sweep(*args, timeout=300):
    return subprocess.run([sys.executable, SWEEP, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def direct(trace, device, options):
    """The same replay, run by hand."""
    r = subprocess.run([SIM, "--json", "--device", device, "--trace", str(trace), "--format", "spc",
                        *options.split()], capture_output=True, text=True, check=True)
    return stats.flatten(json.loads(r.stdout))


def check_table(df, trace, n):
    assert len(df) == n and df["error"].isna().all(), df[["device", "options", "error"]]
    assert sorted(set(df["policy"])) == ["bplru", "lru"] and set(df["loop"]) == {"qd8", "open"}
    for _, row in df.iterrows():
        want = direct(trace, row["device"], row["options"])
        for k, v in want.items():
            got = row[k]
            assert got == v or (isinstance(v, float) and abs(got - v) <= 1e-9 * abs(v)), \
                (row["device"], row["options"], k, got, v)


class Cluster:
    def __init__(self, tmp):
        self.file = tmp / "scheduler.json"
        self.procs = []
        self.log = open(tmp / "dask.log", "w")
        self.procs.append(self._start("scheduler", "--host", "127.0.0.1", "--port", "0",
                                      "--no-dashboard", "--scheduler-file", self.file))
        end = time.monotonic() + 60
        while not self.file.exists():
            assert time.monotonic() < end, "the dask scheduler did not start"
            time.sleep(0.2)
        time.sleep(0.3)
        self.address = json.loads(self.file.read_text())["address"]
        self.workers = [self._start("worker", "--scheduler-file", self.file, "--nthreads", "1",
                                    "--no-nanny", "--no-dashboard", "--host", "127.0.0.1")
                        for _ in range(2)]
        self.procs += self.workers
        from distributed import Client
        self.client = Client(self.address, timeout="30s")
        self.client.wait_for_workers(2, timeout=60)

    def _start(self, *args):
        return subprocess.Popen([DASK, *map(str, args)], stdout=self.log, stderr=self.log,
                                stdin=subprocess.DEVNULL)

    def close(self):
        self.client.close()
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.log.close()


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


def test_local_cluster_matches_direct_replays(traces, tmp_path):
    spec = write_spec(tmp_path / "grid.toml", traces["financial"])
    r = sweep(spec, "--out", tmp_path / "out", "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert "8 runs (0 failed)" in r.stdout
    df = pd.read_parquet(tmp_path / "out" / "results.parquet")
    check_table(df, traces["financial"], 8)
    csv = pd.read_csv(tmp_path / "out" / "results.csv")
    assert list(csv.columns) == list(df.columns) and len(csv) == 8
    pngs = sorted(p.name for p in (tmp_path / "out").glob("*.png"))
    assert pngs == ["t-open.png", "t-qd8.png"]


def test_scheduler_and_two_workers(traces, tmp_path, cluster):
    # by path and by upload: the same table
    for upload in (False, True):
        spec = write_spec(tmp_path / "grid.toml", traces["financial"], upload=upload)
        out = tmp_path / ("out-%s" % upload)
        r = sweep(spec, "--out", out, "--scheduler", cluster.address)
        assert r.returncode == 0, r.stderr
        df = pd.read_parquet(out / "results.parquet")
        check_table(df, traces["financial"], 8)
        assert set(df["worker"]) <= set(cluster.client.scheduler_info()["workers"])


def test_worker_killed_mid_sweep(traces, tmp_path, cluster):
    spec = write_spec(tmp_path / "grid.toml", traces["exchange"], sizes=(2, 4, 8),
                      policies=("lru", "bplru"))
    proc = subprocess.Popen([sys.executable, SWEEP, str(spec), "--out", str(tmp_path / "out"),
                             "--scheduler", cluster.address, "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    end = time.monotonic() + 60
    while victim is None:
        assert proc.poll() is None, "the sweep ended before a worker could be killed: " + \
            proc.stderr.read()
        assert time.monotonic() < end, "no worker ever ran a replay"
        busy = [w for w, tasks in cluster.client.processing().items() if tasks]
        if busy:
            victim = busy[0]
        else:
            time.sleep(0.05)
    pid = cluster.client.run(os.getpid, workers=[victim])[victim]
    assert pid in [w.pid for w in cluster.workers]
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "12 runs (0 failed)" in out
    df = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert len(df) == 12 and df["error"].isna().all()
    # every run after the kill went to the surviving worker
    assert victim not in cluster.client.scheduler_info()["workers"]
    # and the results are still the replays' own
    for _, row in df.iloc[[0, 5, 11]].iterrows():
        want = direct(traces["exchange"], row["device"], row["options"])
        assert all(row[k] == v for k, v in want.items() if isinstance(v, int))


def test_bad_inputs(traces, tmp_path):
    spec = write_spec(tmp_path / "grid.toml", traces["financial"])
    r = sweep(spec, "--scheduler", "tcp://127.0.0.1:9")
    assert r.returncode == 2 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in r.stderr
    r = sweep(spec, "--scheduler", "not an address")
    assert r.returncode == 2 and "not a scheduler address" in r.stderr
    r = sweep(tmp_path / "missing.toml")
    assert r.returncode == 2 and "cannot read the spec" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("device = 'x'\n[[trace]]\nname='t'\npath='nowhere.spc'\nformat='spc'\n")
    r = sweep(bad)
    assert r.returncode == 2 and "trace 't': no file" in r.stderr
    bad.write_text(spec.read_text().replace("qd = 8", "qd = -1"))
    r = sweep(bad)
    assert r.returncode == 2 and "qd: -1 is not a positive integer" in r.stderr
    bad.write_text(spec.read_text() + "\nfrobnicate = 1\n")
    r = sweep(bad)
    assert r.returncode == 2 and "unknown keys frobnicate" in r.stderr
    bad.write_text("[[trace]\n")
    r = sweep(bad)
    assert r.returncode == 2 and "not valid TOML" in r.stderr

def test_refused_properties_stop_the_grid(traces, tmp_path):
    """A property string the simulator refuses is found once, before any run starts, and the
    sweep says which with the simulator's line whole (a mistyped key's message lists every
    valid key, longer than the table used to keep)."""
    spec = write_spec(tmp_path / "grid.toml", traces["financial"])
    bad = tmp_path / "bad.toml"
    wants = []
    for typo, message in (('"buffer=lru"', '"bufer=lru"'), ('"buffer=lru"', '"buffer=nosuch"')):
        bad.write_text(spec.read_text().replace(typo, message))
        want = subprocess.run([SIM, "-d", message.strip('"'), "-t", str(traces["financial"]),
                               "-f", "spc"], capture_output=True, text=True).stderr.strip()
        assert "\n" not in want
        r = sweep(bad, "--out", tmp_path / "bad-out", "--workers", "1", "--no-plots")
        assert r.returncode == 2, r.stderr
        assert "refuses the property string 'pages=64,cell=slc,buffer-size=2M,%s' " \
               "(buffer_mb=2, policy=lru, loop=qd8), so no run of the grid started: %s\n" \
               % (message.strip('"'), want) in r.stderr
        assert not (tmp_path / "bad-out").exists()
        wants.append(want)
    assert "bufer: unknown key (valid keys: preset, channels," in wants[0] and len(wants[0]) > 600
    assert "buffer: unknown value 'nosuch'" in wants[1]


def test_a_failed_run_keeps_its_message_whole(traces, tmp_path):
    """What only the run finds (the geometry against the trace's capacity) is a failed run,
    and its error column holds the simulator's lines whole."""
    spec = write_spec(tmp_path / "grid.toml", traces["financial"])
    bad = tmp_path / "bad.toml"
    bad.write_text(spec.read_text().replace('"buffer=lru"', '"buffer=lru,blocks=1"'))
    r = sweep(bad, "--out", tmp_path / "out", "--workers", "1", "--no-plots")
    assert r.returncode == 1 and "8 runs (4 failed)" in r.stdout
    df = pd.read_parquet(tmp_path / "out" / "results.parquet")
    failed = df[df["error"].notna()]
    assert list(failed["policy"].unique()) == ["lru"]
    for _, row in failed.iterrows():
        want = subprocess.run([SIM, "--json", "--device", row["device"], "--trace",
                               str(traces["financial"]), "--format", "spc",
                               *row["options"].split()], capture_output=True, text=True)
        assert want.returncode == 1 and row["error"] == want.stderr.strip()
        assert "use blocks=" in row["error"]


def test_error_text_keeps_lines_whole():
    from nh import sweep as nhsweep
    key = "nvme-hybrid-sim: bufer: unknown key (valid keys: %s)" % ", ".join(["k"] * 400)
    assert nhsweep.error_text(key + "\n") == key
    middle = ["warning %d %s" % (i, "x" * 90) for i in range(20)]
    text = nhsweep.error_text("\n".join([key] + middle + ["the cause"]))
    lines = text.splitlines()
    assert lines[0] == key and lines[-1] == "the cause"
    assert lines[1] == "... (15 lines)" and lines[2:-1] == middle[15:]
    assert len("\n".join(lines[2:-1])) <= nhsweep.ERROR_CHARS


def test_compare_buffers_local_and_cluster(tmp_path, cluster):
    """compare-buffers is a sweep: the same results.json on a LocalCluster and on the
    scheduler with two workers."""
    args = [os.path.join(SCRIPTS, "compare-buffers"), "--sim", SIM, "--sizes", "2,8",
            "--ftls", "fast", "--policies", "lru,bplru", "--variants", "", "--traces",
            "financial,tpcc-small", "--requests", "3000", "--limit", "3000", "--loops", "qd8",
            "--no-plots"]
    out = {}
    for where, extra in (("local", ["--jobs", "2"]), ("cluster", ["--scheduler", cluster.address])):
        d = tmp_path / where
        r = subprocess.run([sys.executable, *args, "--out", str(d), *extra], capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        out[where] = json.loads((d / "results.json").read_text())
        assert (d / "results.md").exists() and (d / "sweep.parquet").exists()
    assert out["local"] == out["cluster"]
    res = out["local"]["results"]
    assert len(res) == 8 and not any("error" in r for r in res)
    assert {r["policy"] for r in res} == {"lru", "bplru"}


def test_compare_buffers_fill_and_drain(tmp_path):
    """--fill and --no-drain reach the simulator: by default each run is filled and drained
    (what the buffer holds at the end is programmed and counted), --no-drain leaves it
    unwritten, --fill 0 starts on an empty device; results.json and results.md say which."""
    args = [os.path.join(SCRIPTS, "compare-buffers"), "--sim", SIM, "--sizes", "8",
            "--ftls", "fast", "--policies", "bplru", "--variants", "", "--traces", "financial",
            "--requests", "3000", "--limit", "3000", "--loops", "qd8", "--no-plots",
            "--jobs", "1"]
    runs = {}
    for name, extra in (("default", []), ("no-drain", ["--no-drain"]), ("empty", ["--fill", "0"])):
        d = tmp_path / name
        r = subprocess.run([sys.executable, *args, "--out", str(d), *extra], capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        doc = json.loads((d / "results.json").read_text())
        (res,) = doc["results"]
        runs[name] = (doc, res, pd.read_parquet(d / "sweep.parquet")["options"][0],
                      (d / "results.md").read_text())
    doc, res, opts, md = runs["default"]
    assert (doc["fill"], doc["drain"]) == (1.0, True) and "--fill 1.0" in opts
    assert "--no-drain" not in opts and "--fill 1, 3000 requests" in md
    doc, undrained, opts, md = runs["no-drain"]
    assert doc["drain"] is False and "--no-drain" in opts and ", --no-drain," in md
    assert undrained["drain_erases"] == 0 and undrained["waf"] < res["waf"]
    assert undrained["response_us"] == res["response_us"]   # the drain is after the last request
    doc, _, opts, md = runs["empty"]
    assert doc["fill"] == 0 and "--fill" not in opts and "no --fill" in md


def test_plot_bars_for_categories_lines_for_numbers(tmp_path, monkeypatch):
    """An axis of names (ftl: page, dftl, fast) gets bars side by side, one per series; a
    numeric one gets lines; a line joining categories would suggest values between them."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from nh import sweep as nhsweep
    saved = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig",
                        lambda fig, path, **kw: (saved.append(fig), real(fig, path, **kw)))
    rows = [{"trace": "t", "ftl": f, "buffer-size": b, "waf": 1 + i + b / 10,
             "error": None} for i, f in enumerate(("page", "dftl", "fast"))
            for b in (1, 4)]
    df = pd.DataFrame(rows)
    paths = nhsweep.plot_table(df, ["ftl", "buffer-size"], str(tmp_path), x="ftl",
                               series="buffer-size", metrics=["waf"])
    assert len(paths) == 1 and os.path.getsize(paths[0]) > 0
    ax = saved[0].axes[0]
    assert not ax.lines and len(ax.patches) == 6
    assert [t.get_text() for t in ax.get_xticklabels()] == ["page", "dftl", "fast"]
    saved.clear()
    nhsweep.plot_table(df, ["ftl", "buffer-size"], str(tmp_path), x="buffer-size",
                       series="ftl", metrics=["waf"])
    ax = saved[0].axes[0]
    assert len(ax.lines) == 3 and not ax.patches
