"""One fio workload through the three placement interfaces and none, on one flash (issue 28's
WAF figure in the guest; docs/zoned.md): the devices, the fio job files, and turning the
engine's statistics documents and fio's JSON into the table.  Used by
scripts/bench-placement-waf; no guest here.

The workload: four fio jobs, each overwriting a region of its own sequentially in 128 KiB
writes, all writing the same bytes, so the job with the smallest region rewrites it most
often (hot) and the one with the largest least often (cold).  A fill phase writes every region
once; the run phase then writes RUN_BYTES more per job.  Untagged, the jobs' writes interleave
in every block and a block's hot pages die long before its cold ones, which GC then copies;
with a stream or a placement handle per job, or a job's own zones, a block holds one job's
pages and is overwritten whole."""
import json
import os

KIB, MIB = 1 << 10, 1 << 20

# Every engine key the results depend on, with preset=none so no drive's preset fills in the
# rest.  4 x 2 planes of 64 pages of 4 KiB: a block is 256 KiB, a row of blocks across the
# planes (a ZNS zone with zone-width=auto, zone-blocks=1) 2 MiB, a power of two, so the zone
# size equals the capacity and zones have no gap.  36 blocks a plane is what blocks=auto gives
# the conventional 48 MiB at op=10 with 4 streams (each stream keeps a block a plane), and it
# holds the 24 zones and the zoned device's small conventional namespace (34 needed).
GEOMETRY = ("preset=none,channels=4,ways=2,dies=1,planes=1,blocks=36,pages=64,page-size=4K,"
            "cell=slc,op=10,ftl=page,gc=greedy,buffer=none,cache-size=0,one-shot=off,"
            "lba-size=4096,ba-size=0")
PAGE = 4 * KIB
ZONE = 2 * MIB
# (job, its region in zones): 24 zones, 48 MiB in all
JOBS = (("hot", 2), ("warm", 4), ("cool", 6), ("cold", 12))
SPACE = sum(z for _, z in JOBS) * ZONE
RUN_BYTES = 48 * MIB            # per job after the fill: 4 x the space in all
BS = 128 * KIB
CONV_ZNS = 8 * MIB              # the zoned device's conventional namespace (NSID 1), unused

# interface -> (device keys besides GEOMETRY, drive bytes, NSID fio writes, placement options
# per job (job index i, from 1), what the guest does first)
INTERFACES = {
    # streams=0: the zones' device places nothing on NSID 1, and 16 kept blocks would not fit
    "zns": (f"zones={SPACE // ZONE},zone-width=auto,zone-blocks=1,streams=0",
            CONV_ZNS + SPACE, 2, "zonemode=zbd\n", ""),
    "fdp": (f"fdp=on,streams={len(JOBS)}", SPACE, 1,
            "dataplacement=fdp\nplids={i}\n", ""),
    "streams": (f"streams={len(JOBS)}", SPACE, 1, "dataplacement=streams\nplids={i}\n",
                "nvme dir-send $DEV --namespace-id=1 --dir-type=0 --dir-oper=1 --target-dir=1"
                " --endir=1 > $S/streams-enable.txt"),
    # streams=0: a device without placement has every block for its one frontier; with
    # streams=4 four blocks a plane would sit kept for streams nobody opens
    "untagged": ("streams=0", SPACE, 1, "", ""),
}
PHASES = ("fill", "run")


class Error(Exception):
    """A run that cannot be used: a fio error, or devices that did not see the same writes."""


def device(iface):
    return f"{GEOMETRY},{INTERFACES[iface][0]}"


def jobfile(iface, phase):
    """fio's job file for @phase: every job sequential in its own region, `${NG}` the generic
    character device of the namespace (the guest's environment)."""
    placement = INTERFACES[iface][3]
    out = ["[global]", "ioengine=io_uring_cmd", "cmd_type=nvme", "filename=${NG}",
           "rw=write", f"bs={BS // KIB}k", "iodepth=1", "group_reporting=0", ""]
    offset = 0
    for i, (name, zones) in enumerate(JOBS, 1):
        size = zones * ZONE
        io = size if phase == "fill" else RUN_BYTES
        out += [f"[{name}]", f"offset={offset}", f"size={size}", f"io_size={io}"]
        out += placement.format(i=i).splitlines()
        out.append("")
        offset += size
    return "\n".join(out)


def delta(after, before, *path):
    """A counter's growth between two statistics documents; a section the device does not
    have (zones on a conventional device) counts 0."""
    def get(doc):
        for key in path:
            doc = doc.get(key, {}) if isinstance(doc, dict) else {}
        return doc if isinstance(doc, (int, float)) else 0
    return get(after) - get(before)


def engine_row(before, after):
    """What the device did between two documents (nvme-hybrid-stats --json)."""
    host = delta(after, before, "host", "write_bytes")
    geo = after["geometry"]
    media = delta(after, before, "nand", "page_programs") * (geo["physical_bytes"]
                                                            // geo["pages_total"])
    tags = {}
    for tag, n in after.get("ftl", {}).get("placement", {}).get("host_pages", {}).items():
        moved = n - before.get("ftl", {}).get("placement", {}).get("host_pages", {}).get(tag, 0)
        if moved:
            tags[tag] = moved
    return {"host_bytes": host, "media_bytes": media, "waf": media / host if host else None,
            "gc_page_copies": delta(after, before, "ftl", "gc_page_copies"),
            "block_erases": delta(after, before, "nand", "block_erases"),
            "zone_resets": delta(after, before, "zones", "resets"),
            "reset_erases": delta(after, before, "zones", "reset_erases"),
            "host_pages_by_tag": tags}


def fio_row(doc):
    """fio's JSON (--output-format=json): bytes written, MB/s summed over the jobs (each ran
    the whole phase), the first error.  fio 3.41 counts its zone resets but does not print
    them; the device's zones.resets is the count."""
    jobs = doc["jobs"]
    return {"fio_bytes": sum(j["write"]["io_bytes"] for j in jobs),
            "mb_s": sum(j["write"]["bw_bytes"] for j in jobs) / 1e6,
            "error": next((j["error"] for j in jobs if j["error"]), 0),
            "jobs": {j["jobname"]: j["write"]["io_bytes"] for j in jobs}}


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def check_tags(iface, phase, row):
    """With a stream or handle per job, job i's pages must all be on tag i: fio placed them."""
    if "plids=" not in INTERFACES[iface][3]:
        return
    want = {str(i): row["jobs"][name] // PAGE for i, (name, _) in enumerate(JOBS, 1)}
    if row["host_pages_by_tag"] != want:
        raise Error(f"{iface} {phase}: host pages by tag {row['host_pages_by_tag']}, "
                    f"not each job's on its own tag {want}")


def phase_rows(d, iface):
    """Per phase and for both together, from a run directory: stats-start/-fill/-run.json and
    fio-fill/-run.json, as the guest wrote them."""
    docs = {n: load(d, f"stats-{n}.json") for n in ("start",) + PHASES}
    rows = {}
    for prev, phase in zip(("start",) + PHASES, PHASES):
        rows[phase] = {**engine_row(docs[prev], docs[phase]),
                       **fio_row(load(d, f"fio-{phase}.json"))}
        if rows[phase]["error"]:
            raise Error(f"{d}: fio {phase}: error {rows[phase]['error']}")
        if rows[phase]["fio_bytes"] != rows[phase]["host_bytes"]:
            raise Error(f"{d}: fio {phase} wrote {rows[phase]['fio_bytes']} bytes, the device "
                        f"counted {rows[phase]['host_bytes']}")
        check_tags(iface, phase, rows[phase])
    rows["total"] = engine_row(docs["start"], docs[PHASES[-1]])
    return rows


def derive(out, ifaces):
    """Every interface's rows; Error unless they all wrote the same host bytes in each phase."""
    res = {i: phase_rows(os.path.join(out, i), i) for i in ifaces}
    for phase in PHASES:
        seen = {i: r[phase]["host_bytes"] for i, r in res.items()}
        if len(set(seen.values())) != 1:
            raise Error(f"{phase}: the devices saw different host bytes: {seen}")
    return res


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def table(res):
    lines = [f"{'interface':<9} {'WAF run':>7} {'WAF all':>7} {'GC copies':>9} {'erases':>7} "
             f"{'resets':>6} {'host MiB':>8} {'media MiB':>9} {'fio MB/s':>8}"]
    for i, r in res.items():
        run, tot = r["run"], r["total"]
        lines.append(f"{i:<9} {fmt(run['waf'], '.3f'):>7} {fmt(tot['waf'], '.3f'):>7} "
                     f"{run['gc_page_copies']:>9,} {run['block_erases']:>7,} "
                     f"{run['zone_resets']:>6,} {run['host_bytes'] / MIB:>8.0f} "
                     f"{run['media_bytes'] / MIB:>9.1f} {run['mb_s']:>8.1f}")
    return lines
