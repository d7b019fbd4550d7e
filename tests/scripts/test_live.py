"""The live view's arithmetic (scripts/nh/live.py), scripts/plot on a document and a record,
and nhtop's messages for bad input.  The view itself, against a guest running fio, is
tests/guest/test_live_view.py."""
import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, SCRIPTS, SIM

from nh import live as nhlive


def doc(read_cmds, write_pages, programs, hits=None, lat=(1000.0, 10)):
    d = {"host": {"read_cmds": read_cmds, "write_cmds": write_pages, "write_pages": write_pages,
                  "read_bytes": read_cmds * 4096, "write_bytes": write_pages * 4096},
         "nand": {"page_programs": programs, "page_reads": 0, "block_erases": 0},
         "ftl": {"gc_page_copies": programs - write_pages},
         "latency_ns": {"read": {"mean": lat[0], "count": lat[1], "p50": 900, "p99": 2000,
                                 "max": 3000}},
         "wear": {"erase_min": 1, "erase_max": 4, "erase_mean": 2.5}}
    if hits is not None:
        d["buffer"] = {"write_hits": hits}
    return d


def test_rates_ratios_and_absent_keys():
    a = {"t": 100.0, "stats": doc(1000, 500, 600, hits=50)}
    b = {"t": 102.0, "stats": doc(3000, 1500, 2600, hits=250, lat=(2000.0, 30))}
    first = nhlive.derive(None, a)
    assert first["read_iops"] is None and first["waf"] is None      # no interval yet
    d = nhlive.derive(a, b)
    assert d["read_iops"] == 1000 and d["write_iops"] == 500
    assert d["write_mbps"] == pytest.approx(1000 * 4096 / 2 * 1e-6)
    assert d["waf"] == 2.0 and d["buffer_hit"] == 0.2
    assert d["gc_copies"] == 500
    assert d["read_interval_mean"] == pytest.approx((2000 * 30 - 1000 * 10) / 20)
    assert d["wear_spread"] == 3
    # keys this document does not have: absent, not zero
    assert d["merges"] is nhlive.ABSENT and d["cmt_misses"] is nhlive.ABSENT
    assert d["cache_hit"] is nhlive.ABSENT and d["write_p99"] is nhlive.ABSENT
    # a later document without the buffer section
    c = {"t": 103.0, "stats": doc(3000, 1500, 2600)}
    assert nhlive.derive(b, c)["buffer_hit"] is nhlive.ABSENT
    # nothing written in the interval: the ratio says nothing, the rate is 0
    e = nhlive.derive(c, {"t": 104.0, "stats": doc(3000, 1500, 2600)})
    assert e["waf"] is None and e["write_iops"] == 0


def test_load_samples(tmp_path):
    rec = tmp_path / "r.jsonl"
    rec.write_text("\n".join(json.dumps({"t": i, "stats": doc(i, i, i)}) for i in range(3)))
    assert [s["t"] for s in nhlive.load_samples(str(rec))] == [0, 1, 2]
    one = tmp_path / "d.json"
    one.write_text(json.dumps(doc(1, 1, 1)))
    assert nhlive.load_samples(str(one))[0]["stats"]["host"]["read_cmds"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"t": 1, "stats": {}}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2: not JSON"):
        nhlive.load_samples(str(bad))


def run_plot(*args):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, "plot"), *map(str, args)],
                          capture_output=True, text=True)


@pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
def test_plot_a_simulator_document(tmp_path):
    trace = tmp_path / "t.spc"
    subprocess.run([os.path.join(SCRIPTS, "gen-workload"), "financial", "-n", "3000", "-o",
                    str(trace)], check=True)
    out = subprocess.run([SIM, "--json", "-d", "buffer=lru", "-t", str(trace), "-f", "spc",
                          "--qd", "4"], capture_output=True, text=True, check=True).stdout
    d = tmp_path / "doc.json"
    d.write_text(out)
    r = run_plot(d, "--out", tmp_path / "figs")
    assert r.returncode == 0, r.stderr
    png = tmp_path / "figs" / "doc-summary.png"
    assert r.stdout.split() == [str(png)]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000


def test_plot_a_record(tmp_path):
    rec = tmp_path / "run.jsonl"
    rec.write_text("\n".join(json.dumps({"t": 10.0 + i, "stats": doc(100 * i * i, 50 * i,
                                                                      60 * i, hits=5 * i)})
                             for i in range(20)) + "\n")
    r = run_plot(rec)
    assert r.returncode == 0, r.stderr
    names = sorted(os.path.basename(p) for p in r.stdout.split())
    assert names == ["run-ratios.png", "run-summary.png", "run-timeline.png"]
    for n in names:
        assert (tmp_path / n).stat().st_size > 20000


def test_plot_bad_input(tmp_path):
    r = run_plot(tmp_path / "nothing.jsonl")
    assert r.returncode != 0 and "cannot read" in r.stderr
    (tmp_path / "x.jsonl").write_text("[1, 2]\n")
    r = run_plot(tmp_path / "x.jsonl")
    assert r.returncode != 0 and "not a sample" in r.stderr


def test_nhtop_bad_qmp(tmp_path):
    nhtop = os.path.join(SCRIPTS, "nhtop")
    r = subprocess.run([sys.executable, nhtop, "--qmp", str(tmp_path / "none.sock"), "--no-ui",
                        "--wait", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "cannot connect to QMP at" in r.stderr
    r = subprocess.run([sys.executable, nhtop, "--qmp", "host:port"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "neither a socket path nor HOST:PORT" in r.stderr
    r = subprocess.run([sys.executable, nhtop, "--qmp", "x.sock", "--record", "/no/dir/r.jsonl"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--record: no directory /no/dir" in r.stderr


def test_ratios_of_parts_the_device_lacks():
    """No buffer, read cache or mapping cache: the ratio says so instead of 0% (a read misses
    the read cache even when there is none)."""
    a, b = doc(0, 0, 0, hits=0), doc(100, 1000, 1000, hits=0)
    for d in (a, b):
        d["cache"] = {"read_hits": 0, "read_misses": 400}
        d["config"] = {"buffer": "none", "cache-size": "0", "ftl": "page"}
    d = nhlive.derive({"t": 0.0, "stats": a}, {"t": 1.0, "stats": b})
    assert [repr(d[k]) for k in ("buffer_hit", "cache_hit", "cmt_hit")] == \
        ["no buffer", "no read cache", "no mapping cache"]
    assert all(isinstance(d[k], nhlive.Without) for k in ("buffer_hit", "cache_hit", "cmt_hit"))
    assert (repr(d["destage_pages"]), repr(d["cmt_misses"])) == ("no buffer", "no mapping cache")
    b["buffer"]["write_hits"] = 250
    b["cache"] = {"read_hits": 100, "read_misses": 800}
    for x in (a, b):
        x["config"] = {"buffer": "lru", "cache-size": "4M", "ftl": "dftl"}
    d = nhlive.derive({"t": 0.0, "stats": a}, {"t": 1.0, "stats": b})
    assert d["buffer_hit"] == 0.25 and d["cache_hit"] == 0.2
    assert d["cmt_hit"] is nhlive.ABSENT        # dftl, but no ftl.cmt in this document


def test_nhtop_says_what_it_shows(tmp_path):
    """The screen says the latency is the model's and "no buffer" for a device without one."""
    import asyncio
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("nhtop", os.path.join(SCRIPTS, "nhtop"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    nhtop = importlib.util.module_from_spec(spec)
    loader.exec_module(nhtop)
    opts = nhtop.argparse.Namespace(qmp=str(tmp_path / "none.sock"), qom_path=None,
                                    interval=1.0, history=60, record=None, wait=0)
    trace = os.path.join(REPO, "tests", "data", "traces", "mqsim_tpcc-small.trace")
    stats = json.loads(subprocess.run([SIM, "--json", "-t", trace, "-f", "mqsim", "--limit",
                                       "500"], capture_output=True, text=True,
                                      check=True).stdout)

    async def screen():
        app = nhtop.LiveView(opts)
        async with app.run_test():
            app.show({"t": 0.0, "stats": stats})
            app.show({"t": 1.0, "stats": stats})
            lat = app.query_one("#latency")
            value = str(app.query_one("#v-buffer_hit", nhtop.Label).render())
            return lat.border_title, lat.border_subtitle, value
    title, note, value = asyncio.run(screen())
    assert "model's latency" in title and "TCG" in note and "timing.md" in note
    assert value == "no buffer"
