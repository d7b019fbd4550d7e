"""Seed 001 (Rajimwale, Prabhakaran and Davis, "Block Management in Solid-State Devices", USENIX
ATC 2009) as the paper measured it: what scripts/bench-seed001 computes from the device's
statistics documents, PostMark's report and the simulator's, apart from running them, so that
tests/scripts can check it without a guest."""
import random
import re

# What the paper reports (its slides, /work/shared/seeds/001_*.txt): informed cleaning moved
# "one-third pages" and took "30 to 40 %" less cleaning time, response time "improved";
# priority-aware cleaning gave "10% improvement in response time of priority requests" at
# "the cost of non-priority traffic".
PAPER = {"informed": {"pages_moved_ratio": 1 / 3, "cleaning_time_reduction": [0.30, 0.40],
                      "transactions": [5000, 6000, 7000, 8000]},
         "priority": {"priority_improvement": 0.10, "write_percentages": [20, 40, 60, 80]}}

# DiskSim's ASCII trace flags (disksim_global.h): bit 0 read, bit 1 TIME_CRITICAL.  The
# simulator's mqsim format reads its type column this way (docs/simulator.md).
READ, TIME_CRITICAL = 0x1, 0x2


class ParseError(ValueError):
    """A report or document lacks what the benchmark needs; the message says what."""


def get(doc, path):
    """@doc's member at the dotted @path: ParseError naming the path when it is missing."""
    node = doc
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ParseError("the statistics document has no %s" % path)
        node = node[part]
    return node


def delta(before, after, path):
    """How much the counter at @path grew between two documents of one device."""
    d = get(after, path) - get(before, path)
    if d < 0:
        raise ParseError("%s went back from %s to %s: not two documents of one run"
                         % (path, get(before, path), get(after, path)))
    return d


def hist_between(before, after, path):
    """(count, mean) of the latency samples taken between two documents: the histograms'
    counts and exact means give the samples' sum (their quantiles cannot be split so)."""
    b, a = get(before, path), get(after, path)
    n = a["count"] - b["count"]
    if n < 0:
        raise ParseError("%s.count went back: not two documents of one run" % path)
    total = a["count"] * a["mean"] - b["count"] * b["mean"]
    return n, (total / n if n else 0.0)


def cleaning_ns(copies, victims, geometry):
    """Die time of GC: a copy reads its page (tR, then the page over the bus) and programs it
    elsewhere in its plane (over the bus, then tPROG: GC copies are single-page operations that
    cross the bus, docs/engine.md), and each victim is erased (tBERS)."""
    g = geometry
    per_copy = g["t_read_ns"] + 2 * g["t_xfer_ns"] + g["t_prog_ns"]
    return copies * per_copy + victims * g["t_erase_ns"]


POSTMARK_LINES = {
    "seconds": r"^\s*(\d+) seconds total",
    "transaction_seconds": r"^\s*(\d+) seconds of transactions",
    "transactions_per_s": r"seconds of transactions \((\d+) per second\)",
    "created": r"^\s*(\d+) created",
    "deleted": r"^\s*(\d+) deleted",
    "mb_read": r"^\s*([\d.]+) (megabytes|kilobytes|bytes) read",
    "mb_written": r"^\s*([\d.]+) (megabytes|kilobytes|bytes) written",
}
UNIT_MB = {"megabytes": 1, "kilobytes": 1 / 1024, "bytes": 1 / (1 << 20)}


def parse_postmark(text):
    """PostMark 1.5's report as numbers: ParseError when a line it always prints is missing (a
    run that stopped early).  Sizes in MB whatever unit PostMark chose."""
    out = {}
    for key, pattern in POSTMARK_LINES.items():
        m = re.search(pattern, text, re.MULTILINE)
        if not m:
            raise ParseError("PostMark's report has no '%s' line:\n%s" % (key, text[-800:]))
        out[key] = (float(m.group(1)) * UNIT_MB[m.group(2)] if key.startswith("mb_")
                    else int(m.group(1)))
    return out


def informed_row(before, after, postmark):
    """One PostMark run's figures from the device's documents before and after it."""
    copies = delta(before, after, "ftl.gc_page_copies")
    victims = delta(before, after, "ftl.gc_blocks")
    nr, read_mean = hist_between(before, after, "latency_ns.read")
    nw, write_mean = hist_between(before, after, "latency_ns.write")
    return {
        "host_write_pages": delta(before, after, "host.write_pages"),
        "trim_cmds": delta(before, after, "host.trim_cmds"),
        "trim_bytes": delta(before, after, "host.trim_bytes"),
        "pages_moved": copies,
        "gc_blocks": victims,
        "gc_foreground_blocks": delta(before, after, "ftl.gc_foreground_blocks"),
        "erases": delta(before, after, "nand.block_erases"),
        "cleaning_ns": cleaning_ns(copies, victims, get(after, "geometry")),
        "reads": nr, "writes": nw,
        "read_mean_ns": read_mean, "write_mean_ns": write_mean,
        "response_mean_ns": (nr * read_mean + nw * write_mean) / (nr + nw) if nr + nw else 0.0,
        "postmark": postmark,
    }


def ratio(a, b):
    return a / b if b else None


def informed_ratios(rows, key="transactions"):
    """Per value of @key (the transaction count), discard over nodiscard: pages moved,
    cleaning time, response time."""
    out = []
    for n in sorted({r[key] for r in rows}):
        by = {r["mode"]: r for r in rows if r[key] == n}
        if set(by) != {"discard", "nodiscard"}:
            continue
        d, nd = by["discard"], by["nodiscard"]
        out.append({key: n,
                    "pages_moved": ratio(d["pages_moved"], nd["pages_moved"]),
                    "cleaning_time": ratio(d["cleaning_ns"], nd["cleaning_ns"]),
                    "response_time": ratio(d["response_mean_ns"], nd["response_mean_ns"])})
    return out


def priority_trace(path, *, requests, write_pct, priority_pct, span_pages, page_size, gap_ns,
                   max_pages, seed):
    """A synthetic DiskSim-style trace in the simulator's mqsim format (time_ns device lba
    sectors flags): uniformly random page-aligned requests of 1 to @max_pages pages, a write
    with probability @write_pct %, marked TIME_CRITICAL with probability @priority_pct %,
    Poisson arrivals with mean gap @gap_ns.  The same seed gives the same offsets, sizes, times
    and priority marks at every write percentage (separate generators), so that only the mix
    changes along the figure's axis."""
    where, kind, when = random.Random(seed), random.Random(seed + 1), random.Random(seed + 2)
    sectors = page_size // 512
    t = 0
    marked = 0
    with open(path, "w") as f:
        for _ in range(requests):
            pages = where.randint(1, max_pages)
            lpn = where.randrange(span_pages - pages + 1)
            write = kind.random() * 100 < write_pct
            prio = when.random() * 100 < priority_pct
            t += int(when.expovariate(1.0 / gap_ns))
            flags = (0 if write else READ) | (TIME_CRITICAL if prio else 0)
            marked += prio
            f.write("%d 0 %d %d %d\n" % (t, lpn * sectors, pages * sectors, flags))
    return marked


def priority_row(doc):
    """The simulator's document of one replay: mean response of priority requests and of the
    others (reads and writes together), from its `priority` member."""
    p = get(doc, "priority")
    out = {"priority_requests": p["requests"], "told": p["told"]}
    for cls in ("priority", "other"):
        n = total = 0
        for op in ("read", "write"):
            h = p["latency_ns"][cls][op]
            n += h["count"]
            total += h["count"] * h["mean"]
            out["%s_%s_mean_ns" % (cls, op)] = h["mean"]
            out["%s_%s_p99_ns" % (cls, op)] = h["p99"]
        out["%s_mean_ns" % cls] = total / n if n else 0.0
        out["%s_count" % cls] = n
    out["gc_blocks"] = get(doc, "ftl.gc_blocks")
    out["gc_foreground_blocks"] = get(doc, "ftl.gc_foreground_blocks")
    out["waf"] = get(doc, "waf")
    return out


def priority_changes(rows, keys=("sched", "write_pct")):
    """Per value of @keys (scheduler and write percentage), aware over unaware: the mean
    response of priority requests and of the others (below 1: faster when the device is
    told)."""
    out = []
    for values in sorted({tuple(r[k] for k in keys) for r in rows}):
        by = {r["aware"]: r for r in rows if tuple(r[k] for k in keys) == values}
        if set(by) != {True, False}:
            continue
        a, u = by[True], by[False]
        out.append(dict(zip(keys, values),
                        priority=ratio(a["priority_mean_ns"], u["priority_mean_ns"]),
                        other=ratio(a["other_mean_ns"], u["other_mean_ns"])))
    return out
