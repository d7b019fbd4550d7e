"""scripts/bench-fidelity-sim's side of our simulator: the generated MQSim-format trace, and one
closed-loop replay per scheduler and allocation pair, read back as counts and utilisations."""
import json
import os
import random
import subprocess
import sys
import time

from nh import stats
from nh.fidelity.device import SECTOR, bound


UTIL_KEYS = [("die_util", "run.die_utilisation"),
             ("chan_util", "run.channel_utilisation"),
             ("die_busy_ns", "nand.die_busy_ns"),
             ("chan_busy_ns", "nand.channel_busy_ns"),
             ("queued_ops", "sched.queued_ops")]


def counts(doc):
    h, n = doc["host"], doc["nand"]
    return {"requests": h["read_cmds"] + h["write_cmds"] + h["trim_cmds"] + h["flush_cmds"],
            "write_pages": h["write_pages"], "page_reads": n["page_reads"],
            "read_ops": n.get("read_ops", n["page_reads"]),
            "page_programs": n["page_programs"],
            "program_ops": n.get("program_ops", n["page_programs"]),
            "erases": n["block_erases"]}


def list_keys(sim):
    r = subprocess.run([sim, "--list-keys"], capture_output=True, text=True, check=True)
    return {ln.strip() for ln in r.stdout.splitlines() if ln and not ln[0].isspace()}


def make_trace(path, n, read_pct, ws_pages, seed):
    """MQSim/DiskSim ASCII: 'time_ns device lba sectors type' (0 write, 1 read), all at time 0
    (the closed loop issues them)."""
    if os.path.exists(path):
        return path
    rnd = random.Random(seed)
    spp = 4096 // SECTOR
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        lines = []
        for _ in range(n):
            t = 1 if rnd.random() * 100 < read_pct else 0
            lines.append(f"0 0 {rnd.randrange(ws_pages) * spp} {spp} {t}\n")
            if len(lines) >= 100000:
                f.write("".join(lines))
                lines = []
        f.write("".join(lines))
    os.replace(tmp, path)
    return path


def label(sched, alloc):
    """A run's name in the tables and the JSON: sched/alloc, '-' for a simulator with neither."""
    return "/".join(x for x in (sched, alloc) if x) or "-"


def run_ours(a, dev, trace, sched, alloc):
    props = (dev.props() + (f",sched={sched}" if sched else "")
             + (f",alloc={alloc}" if alloc else ""))
    cmd = [a.sim, "--trace", trace, "--format", "mqsim", "--capacity", str(dev.capacity),
           "--qd", str(a.qd), "--json", "--device", props]
    if a.fill > 0:
        cmd += ["--fill", str(a.fill)]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench-fidelity-sim: {' '.join(cmd)} failed:\n{r.stderr}")
    doc = json.loads(r.stdout)
    lat = doc["latency_ns"]
    res = {"command": cmd, "wall_s": round(time.time() - t0, 2),
           "iops": doc["run"]["iops"], "duration_ns": doc["run"]["duration_ns"],
           "waf": doc["waf"], "erases": doc["nand"]["block_erases"],
           "gc_copies": doc["ftl"]["gc_page_copies"],
           "valid_per_victim": (doc["ftl"]["gc_page_copies"] / doc["ftl"]["gc_blocks"]
                                if doc["ftl"]["gc_blocks"] else None),
           "read": {k: lat["read"].get(k) for k in ("count", "mean", "p50", "p99", "p999", "max")},
           "write": {k: lat["write"].get(k) for k in ("count", "mean", "p50", "p99", "p999", "max")},
           "conditioning": doc.get("conditioning"),
           "spare_blocks_per_plane": doc["geometry"]["spare_blocks_per_plane"],
           "t_xfer_ns": doc["geometry"]["t_xfer_ns"]}
    for name, key in UTIL_KEYS:
        res[name] = stats.get(doc, key)
    res["counts"] = counts(doc)
    g = doc["geometry"]
    res["bound"] = bound(res["counts"], g["t_read_ns"], g["t_prog_ns"], g["t_erase_ns"],
                         g["t_xfer_ns"], dev.ndies, dev.channels)
    res["ratio"] = res["iops"] / res["bound"]["bound_iops"] if res["bound"]["bound_iops"] else 0
    return res
