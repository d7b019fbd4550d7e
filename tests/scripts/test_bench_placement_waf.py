"""bench-placement-waf without a guest: its fio job files give every interface the same writes
in disjoint regions, its devices are one flash that the simulator accepts (36 blocks a plane
hold each of them; a zone is 2 MiB), and --from turns statistics documents and fio's JSON into
the right WAF, copies, erases and resets, refusing runs whose writes do not add up.  The guest
runs are a benchmark (docs/zoned.md)."""
import configparser
import json
import os
import subprocess

import pytest

from helpers import REPO, SIM
from nh import placement_waf as pw

SCRIPT = os.path.join(REPO, "scripts", "bench-placement-waf")
DEVICE_ONLY = ("lba-size", "ba-size", "fdp")


def jobs(iface, phase):
    p = configparser.ConfigParser(interpolation=None)
    p.read_string(pw.jobfile(iface, phase))
    return p


@pytest.mark.parametrize("phase", pw.PHASES)
def test_jobfiles_write_the_same_bytes_in_disjoint_regions(phase):
    written = {}
    for iface in pw.INTERFACES:
        p = jobs(iface, phase)
        assert p["global"]["filename"] == "${NG}" and p["global"]["rw"] == "write"
        names = [s for s in p.sections() if s != "global"]
        assert names == [n for n, _ in pw.JOBS]
        end = 0
        for i, name in enumerate(names, 1):
            j = p[name]
            offset, size, io = int(j["offset"]), int(j["size"]), int(j["io_size"])
            assert offset == end and offset % pw.ZONE == 0 and size % pw.ZONE == 0
            end = offset + size
            assert io == (size if phase == "fill" else pw.RUN_BYTES)
            placement = {k: v for k, v in j.items() if k in ("dataplacement", "plids",
                                                               "zonemode")}
            assert placement == {"zns": {"zonemode": "zbd"},
                                 "fdp": {"dataplacement": "fdp", "plids": str(i)},
                                 "streams": {"dataplacement": "streams", "plids": str(i)},
                                 "untagged": {}}[iface]
        assert end == pw.SPACE
        written[iface] = sum(int(p[n]["io_size"]) for n in names)
    assert len(set(written.values())) == 1


def engine_keys(iface):
    return ",".join(k for k in pw.device(iface).split(",")
                    if k.split("=")[0] not in DEVICE_ONLY)


@pytest.mark.skipif(not os.access(SIM, os.X_OK), reason="no simulator")
@pytest.mark.parametrize("iface", list(pw.INTERFACES))
def test_every_device_is_the_same_flash(tmp_path, iface):
    keys, drive = pw.INTERFACES[iface][:2]
    conv = drive - pw.SPACE if "zones=" in keys else drive
    trace = tmp_path / "t.trace"
    # zns: zone 1 written to its capacity at the zoned space's start + ZONE; else the last page
    lba = (conv + pw.ZONE) // 512 if "zones=" in keys else (drive - pw.PAGE) // 512
    n = pw.ZONE // 512 if "zones=" in keys else pw.PAGE // 512
    trace.write_text(f"0 0 {lba} {n} 0\n")
    r = subprocess.run([SIM, "-d", engine_keys(iface), "-t", str(trace), "-f", "mqsim",
                        "-c", str(conv), "-j"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["geometry"]["blocks_per_plane"] == 36
    assert doc["geometry"]["physical_bytes"] // doc["geometry"]["pages_total"] == pw.PAGE
    if "zones=" in keys:
        assert doc["zones"]["refused"] == 0 and doc["zones"]["state"]["full"] == 1
    stripped = {k for k in pw.device(iface).split(",")} - set(keys.split(","))
    assert stripped == set(pw.GEOMETRY.split(","))


def stats(host, programs, copies=0, erases=0, resets=None, tags=None):
    doc = {"host": {"write_bytes": host}, "nand": {"page_programs": programs,
                                                   "block_erases": erases},
           "ftl": {"gc_page_copies": copies, "placement": {"host_pages": tags or {}}},
           "geometry": {"physical_bytes": 8 * pw.PAGE, "pages_total": 8}}
    if resets is not None:
        doc["zones"] = {"resets": resets, "reset_erases": 8 * resets}
    return doc


def fio(per_job, mb_s=10.0, error=0):
    return {"jobs": [{"jobname": n, "error": error,
                      "write": {"io_bytes": per_job, "bw_bytes": mb_s * 1e6}}
                     for n, _ in pw.JOBS]}


FILL, RUN = 12 * pw.MIB, 24 * pw.MIB     # per job, so 4 x that in all
PAGES = pw.MIB // pw.PAGE


def write_run(root, iface, run_programs, copies, zones=False, fio_run=RUN, tags=None):
    """A run directory as the guest leaves it; @tags: host pages by tag after the fill and
    after the run (default: each job's pages on its own tag)."""
    d = root / iface
    d.mkdir()
    host = 4 * (FILL + RUN)
    fill_tags, run_tags = tags or ({t: FILL // pw.PAGE for t in "1234"},
                                   {t: (FILL + RUN) // pw.PAGE for t in "1234"})
    docs = {"start": stats(0, 0, resets=0 if zones else None),
            "fill": stats(4 * FILL, 4 * FILL // pw.PAGE, erases=1,
                          resets=0 if zones else None, tags=fill_tags),
            "run": stats(host, 4 * FILL // pw.PAGE + run_programs, copies, erases=30,
                         resets=12 if zones else None, tags=run_tags)}
    for name, doc in docs.items():
        (d / f"stats-{name}.json").write_text(json.dumps(doc))
    (d / "fio-fill.json").write_text(json.dumps(fio(FILL)))
    (d / "fio-run.json").write_text(json.dumps(fio(fio_run)))


def run_from(root):
    return subprocess.run([SCRIPT, "--from", str(root)], capture_output=True, text=True,
                          timeout=120)


def test_from_previous_run(tmp_path):
    run_pages = 4 * RUN // pw.PAGE
    write_run(tmp_path, "zns", run_pages, 0, zones=True,
              tags=({"1": 5}, {"1": 5 + 3 * PAGES, "2": 7}))
    write_run(tmp_path, "untagged", run_pages + run_pages // 2, run_pages // 2)
    r = run_from(tmp_path)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[1:3]}
    # WAF run, WAF all, GC copies, erases, resets, host MiB, media MiB, fio MB/s
    assert rows["zns"][1:] == ["1.000", "1.000", "0", "29", "12", "96", "96.0", "40.0"]
    assert rows["untagged"][1:] == ["1.500", "1.333", "12,288", "29", "0", "96", "144.0",
                                    "40.0"]
    doc = json.loads((tmp_path / "placement-waf.json").read_text())
    z = doc["results"]["zns"]
    assert z["run"]["reset_erases"] == 96
    assert z["run"]["host_pages_by_tag"] == {"1": 3 * PAGES, "2": 7}
    assert z["total"]["waf"] == 1.0 and doc["results"]["untagged"]["total"]["zone_resets"] == 0
    assert (tmp_path / "placement-waf.png").stat().st_size > 0


def test_writes_that_do_not_add_up_are_refused(tmp_path):
    run_pages = 4 * RUN // pw.PAGE
    write_run(tmp_path, "fdp", run_pages, 0, fio_run=RUN - pw.PAGE)
    r = run_from(tmp_path)
    assert r.returncode == 1
    assert f"fio run wrote {4 * (RUN - pw.PAGE)} bytes, the device counted {4 * RUN}" in r.stderr


def test_interfaces_with_different_host_writes_are_refused(tmp_path):
    write_run(tmp_path, "fdp", 4 * RUN // pw.PAGE, 0)
    d = tmp_path / "streams"
    write_run(tmp_path, "streams", 4 * RUN // pw.PAGE, 0)
    for name in ("fio-run.json", "stats-run.json"):
        doc = json.loads((d / name).read_text())
        if "jobs" in doc:
            doc["jobs"][0]["write"]["io_bytes"] += pw.PAGE
        else:
            doc["host"]["write_bytes"] += pw.PAGE
            doc["ftl"]["placement"]["host_pages"]["1"] += 1
        (d / name).write_text(json.dumps(doc))
    r = run_from(tmp_path)
    assert r.returncode == 1
    assert "run: the devices saw different host bytes" in r.stderr


def test_placement_off_its_tags_is_refused(tmp_path):
    run_pages = 4 * RUN // pw.PAGE
    fill = {t: FILL // pw.PAGE for t in "1234"}
    # the run's writes of job 4 (cold) landed on tag 3 with job 3's
    run = {"1": (FILL + RUN) // pw.PAGE, "2": (FILL + RUN) // pw.PAGE,
           "3": (FILL + 2 * RUN) // pw.PAGE, "4": FILL // pw.PAGE}
    write_run(tmp_path, "streams", run_pages, 0, tags=(fill, run))
    r = run_from(tmp_path)
    assert r.returncode == 1
    assert "streams run: host pages by tag" in r.stderr and "not each job's on its own tag" \
        in r.stderr
