"""The guest half of bench-validate (issue 27, item 2): fio in a guest under -icount on the
nvme-hybrid device, the device's own statistics, and the simulator replaying the requests the
device recorded, phase by phase.  scripts/bench-validate-guest runs it; this module holds what
can be checked without a guest: the guest's script, the reading of the device's request log,
the per-phase figures from cumulative statistics, and the table.

Phases: the namespace written sequentially once (the precondition), then each workload at each
queue depth, in order, on the one device.  Between phases the guest reads the device's
statistics (nvme-hybrid-stats): its Get Log Page 0xC0 commands mark the phase boundaries in
QEMU's trace of the device's read and write commands (nhc_io_rw), so the log splits into the
same phases as the statistics."""
import math
import re

# name, fio's rw, block size, fraction of reads (for the simulator's sanity only)
WORKLOADS = (("rr", "randread", 4096), ("rw", "randwrite", 4096), ("mix", "randrw", 4096),
             ("sr", "read", 128 << 10), ("sw", "write", 128 << 10))
TITLES = {"rr": "4 KiB random read", "rw": "4 KiB random write", "mix": "4 KiB 70/30 read/write",
          "sr": "128 KiB sequential read", "sw": "128 KiB sequential write"}
QDS = (1, 2, 4, 8)
# QEMU trace events (log backend, -D FILE) of the device: its read/write commands, and the
# Get Log Page of the statistics between phases.
TRACE_EVENTS = ("nhc_io_rw", "nhc_admin_get_log")
STATS_LID = 0xC0
IO_RW = re.compile(r"nhc_io_rw cid \d+ write (\d) slba (\d+) nlb (\d+)")
GET_LOG = re.compile(r"nhc_admin_get_log lid (0x[0-9a-f]+)")


class Error(Exception):
    pass


def phases(ios_small, ios_large, qds=QDS):
    """The measured phases in the order the guest runs them."""
    out = []
    for name, rw, bs in WORKLOADS:
        for qd in qds:
            out.append({"name": "%s-qd%d" % (name, qd), "workload": name, "rw": rw, "bs": bs,
                        "qd": qd, "ios": ios_small if bs == 4096 else ios_large})
    return out


def guest_script(plan):
    """The shell script the guest runs: statistics, the precondition, statistics, then each
    phase followed by statistics; fio's JSON and the statistics into /mnt/share."""
    fio = ("fio --filename=$d --direct=1 --ioengine=libaio --norandommap --randrepeat=0 "
           "--lat_percentiles=1 --output-format=json")
    lines = ["set -e", "d=$(nvme-hybrid-dev)", "s=/mnt/share",
             "blockdev --getss $d > $s/lba-size",
             "nvme-hybrid-stats --json > $s/stats-boot.json",
             "fio --name=precondition --filename=$d --rw=write --bs=1M --direct=1 "
             "--ioengine=libaio --iodepth=8 --output-format=json > $s/fio-precondition.json",
             "nvme-hybrid-stats --json > $s/stats-precondition.json"]
    for p in plan:
        mix = " --rwmixread=70" if p["rw"] == "randrw" else ""
        lines.append("%s --name=%s --rw=%s --bs=%d --iodepth=%d --number_ios=%d%s "
                     "> $s/fio-%s.json" % (fio, p["name"], p["rw"], p["bs"], p["qd"], p["ios"],
                                           mix, p["name"]))
        lines.append("nvme-hybrid-stats --json > $s/stats-%s.json" % p["name"])
        lines.append("echo bench-validate-guest: %s done" % p["name"])
    return "\n".join(lines) + "\n"


def read_log(lines):
    """The device's requests from QEMU's trace log, split at the statistics reads: a list of
    segments (a run of consecutive Get Log Page 0xC0 commands ends one), each a list of
    (write, slba, nlb).  Segment 0 is the boot's I/O, 1 the precondition, then the phases."""
    segments, current, in_marker = [], [], False
    for line in lines:
        m = IO_RW.search(line)
        if m:
            current.append((m.group(1) == "1", int(m.group(2)), int(m.group(3))))
            in_marker = False
            continue
        m = GET_LOG.search(line)
        if m and int(m.group(1), 16) == STATS_LID and not in_marker:
            segments.append(current)
            current, in_marker = [], True
    if current:
        raise Error("%d requests after the last statistics read: the log was cut short"
                    % len(current))
    return segments


def write_mqsim(segments, lba_size, path):
    """All segments as one trace in MQSim's format (sectors of 512 bytes; the times are not
    used: the simulator replays it closed loop); returns the request index at which each
    segment ends."""
    ends, i = [], 0
    with open(path, "w") as f:
        for seg in segments:
            for write, slba, nlb in seg:
                f.write("%d 0 %d %d %d\n" % (i * 1000, slba * lba_size // 512,
                                              nlb * lba_size // 512, 0 if write else 1))
                i += 1
            ends.append(i)
    return ends


def counts(doc):
    """(reads, writes) the statistics document @doc has counted latencies for."""
    lat = doc["latency_ns"]
    return lat["read"]["count"], lat["write"]["count"]


def check_segment(seg, before, after, name):
    """The recorded requests of a phase must be the ones the device's statistics counted."""
    rec = (sum(1 for w, _, _ in seg if not w), sum(1 for w, _, _ in seg if w))
    got = tuple(a - b for a, b in zip(counts(after), counts(before)))
    if rec != got:
        raise Error("%s: the trace log has %d reads and %d writes, the device's statistics %d "
                    "and %d" % ((name,) + rec + got))


def between(before, after):
    """Requests, mean latency (ns, reads and writes together) and span (ns) of what @after
    counted beyond @before (two cumulative statistics documents of one device or one replay):
    the sums are exact, count x mean; quantiles are not, so none is derived.  The span (from
    the last completion before to the last after) is not a phase's duration when an earlier
    request outlives the phase's (a flash read behind writes the write cache acknowledged):
    it may be 0, and a closed loop's IOPS come from its mean instead (row)."""
    n = total = 0.0
    for kind in ("read", "write"):
        a, b = after["latency_ns"][kind], before["latency_ns"][kind]
        n += a["count"] - b["count"]
        total += a["count"] * a["mean"] - b["count"] * b["mean"]
    span = after["run"]["duration_ns"] - before["run"]["duration_ns"]
    return {"requests": int(n), "mean_ns": total / n if n else 0.0, "span_ns": span}


def fio_figures(doc):
    """IOPS, mean and p99 latency (ns; fio's lat: submission to completion) of a fio JSON
    document's one job, reads and writes together; p99 is that of the reads when there are
    any (the 70/30 mix: its majority), else of the writes."""
    job = doc["jobs"][0]
    parts = [job[k] for k in ("read", "write") if job[k]["total_ios"]]
    n = sum(p["total_ios"] for p in parts)
    mean = sum(p["lat_ns"]["mean"] * p["total_ios"] for p in parts) / n
    p99 = parts[0]["lat_ns"]["percentile"]["99.000000"]
    return {"requests": n, "iops": sum(p["iops"] for p in parts), "mean_ns": mean,
            "p99_ns": p99}


def device_qd(fio, device, qd):
    """The queue depth the device saw on average (Little's law: fio's IOPS x the device's mean
    latency), below fio's iodepth @qd by the share of time the guest held the requests, and the
    same held to 1..@qd for the simulator."""
    seen = fio["iops"] * device["mean_ns"] / 1e9
    return seen, min(float(qd), max(1.0, seen))


def at_qd(qd, sim_at):
    """The simulator's mean latency at a fractional queue depth @qd: linear between its closed
    loops at the whole depths either side (sim_at(n) -> figures at n), as a host that holds
    requests for a while keeps the device's depth moving between them."""
    lo, hi = math.floor(qd), math.ceil(qd)
    a, b = sim_at(lo), sim_at(hi)
    return {"mean_ns": a["mean_ns"] + (b["mean_ns"] - a["mean_ns"]) * (qd - lo), "qd": qd}


def row(phase, fio, device, sim, sim_seen):
    """One line of the table: the three views of a phase and their ratios.  @sim is the
    simulator at fio's iodepth, @sim_seen (at_qd) at the queue depth the device saw: the
    device's latency is compared with the latter, fio's with the former.  The simulator's
    IOPS are its closed loop's at fio's iodepth by Little's law (depth / mean latency), exact
    for a loop that always holds that many."""
    sim_iops = phase["qd"] * 1e9 / sim["mean_ns"]
    return {"phase": phase["name"], "workload": phase["workload"], "qd": phase["qd"],
            "fio_requests": fio["requests"], "dev_requests": device["requests"],
            "fio_iops": fio["iops"], "fio_mean_us": fio["mean_ns"] / 1e3,
            "fio_p99_us": fio["p99_ns"] / 1e3,
            "dev_mean_us": device["mean_ns"] / 1e3,
            "dev_qd": device_qd(fio, device, phase["qd"])[0], "sim_seen_qd": sim_seen["qd"],
            "sim_iops": sim_iops, "sim_mean_us": sim["mean_ns"] / 1e3,
            "sim_seen_mean_us": sim_seen["mean_ns"] / 1e3,
            "dev_sim": device["mean_ns"] / sim_seen["mean_ns"] - 1,
            "fio_sim_mean": fio["mean_ns"] / sim["mean_ns"] - 1,
            "fio_sim_iops": fio["iops"] / sim_iops - 1}


def unmatched(rows):
    """Phases whose requests at the device are not fio's one for one (the block layer split or
    merged them, or other I/O reached the device): their latencies are not of the same
    requests."""
    return ["%s: fio %d, device %d" % (r["phase"], r["fio_requests"], r["dev_requests"])
            for r in rows if r["fio_requests"] != r["dev_requests"]]


def agreement(rows):
    """The largest device/simulator and fio/simulator mean-latency gaps, and fio's IOPS gap."""
    def worst(k):
        r = max(rows, key=lambda r: abs(r[k]))
        return {"error": r[k], "phase": r["phase"]}
    return {"dev_sim_mean": worst("dev_sim"), "fio_sim_mean": worst("fio_sim_mean"),
            "fio_sim_iops": worst("fio_sim_iops")}


def table(rows):
    """The text table, one line per phase."""
    head = ("%-4s %2s %8s %8s %7s %8s %8s %7s %8s %8s %6s %8s %8s"
            % ("", "QD", "fio IOPS", "sim IOPS", "fio/sim", "fio us", "sim us", "fio/sim",
               "fio p99", "dev us", "dev QD", "sim us", "dev/sim"))
    out = [head]
    for r in rows:
        out.append("%-4s %2d %8.0f %8.0f %+6.1f%% %8.1f %8.1f %+6.1f%% %8.1f %8.1f %6.2f %8.1f "
                   "%+7.2f%%" % (r["workload"], r["qd"], r["fio_iops"], r["sim_iops"],
                                 100 * r["fio_sim_iops"], r["fio_mean_us"], r["sim_mean_us"],
                                 100 * r["fio_sim_mean"], r["fio_p99_us"], r["dev_mean_us"],
                                 r["dev_qd"], r["sim_seen_mean_us"], 100 * r["dev_sim"]))
    return "\n".join(["%52s | %s" % ("fio's iodepth: guest against simulator",
                                     "the device's depth: device against simulator")] + out)


def plot(rows, qds, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [w[0] for w in WORKLOADS]
    fig, axes = plt.subplots(2, len(names), figsize=(4 * len(names), 7))
    lines = ((0, "fio_mean_us", "fio (guest)", "o-"), (0, "dev_mean_us", "device (engine)", "s--"),
             (0, "sim_seen_mean_us", "simulator at the device's QD", "x-"),
             (0, "sim_mean_us", "simulator at fio's QD", "+:"),
             (1, "fio_iops", "fio (guest)", "o-"), (1, "sim_iops", "simulator at fio's QD", "+:"))
    for col, name in enumerate(names):
        rs = sorted((r for r in rows if r["workload"] == name), key=lambda r: r["qd"])
        for ax_row, key, label, style in lines:
            axes[ax_row][col].plot([r["qd"] for r in rs], [r[key] for r in rs], style,
                                   label=label)
        for ax_row, ylabel in ((0, "mean latency (us)"), (1, "IOPS")):
            ax = axes[ax_row][col]
            ax.set(xscale="log", xlabel="queue depth (fio's iodepth)", ylabel=ylabel,
                   title=TITLES[name])
            ax.set_xticks(list(qds), [str(x) for x in qds])
            ax.minorticks_off()
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=7)
    fig.suptitle("bench-validate-guest: under -icount, guest (fio) vs device (engine) vs "
                 "simulator replaying the device's requests")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
