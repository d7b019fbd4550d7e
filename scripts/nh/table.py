"""The simulator's table (tools/nvme-hybrid-sim.c print_table) from a statistics document, for
the tools that have a document but no simulator: the guest's nvme-hybrid-stats (guest-images/
build installs the package's table.py and stats.py beside it) and the host's scripts.  The lines
are the simulator's, character for character, except what only a replay knows (its wall time,
the --fit summary, the first malformed line); tests/scripts/test_table.py holds the two equal on
the same document.

A document from a device (the vendor log page, the stats property) has no `trace` member: its
requests line counts the host's commands over the device's clock instead."""
import math

from nh.stats import get

# The columns the C table pads its labels to ("%-12s")
LABEL = "%-12s"


def size_text(nbytes):
    """A size in the largest binary unit it reaches, KiB at least: "256 MiB", "1.5 GiB"."""
    v, unit = nbytes / 1024, "KiB"
    for bigger in ("MiB", "GiB", "TiB", "PiB"):
        if v < 1024:
            break
        v, unit = v / 1024, bigger
    return ("%.0f %s" if v == math.floor(v) else "%.1f %s") % (v, unit)


def _requests(doc):
    secs = get(doc, "run.duration_ns", 0) / 1e9
    if "trace" in doc:
        n, clock = get(doc, "trace.requests", 0), "simulated"
    else:
        n = sum(get(doc, "host." + k, 0) for k in ("read_cmds", "write_cmds", "trim_cmds",
                                                  "flush_cmds"))
        clock = "on the device's clock"
    return "%d in %.3f s %s (%.0f IOPS)" % (n, secs, clock, n / secs if secs > 0 else 0.0)


def _placement(doc):
    cfg = doc["config"]
    pages = get(doc, "ftl.placement.host_pages", {})
    if not pages:
        return None
    line = "streams %d%s map=%s physical streams %d" % (
        get(doc, "ftl.placement.host_streams", 0), " (auto)" if cfg["streams"] == "auto" else "",
        cfg["stream-map"], len(pages))
    if cfg["stream-map"] == "dstream":
        line += " (k %d now)" % get(doc, "ftl.placement.k", 0)
    shared = get(doc, "ftl.placement.shared_streams", 0)
    if shared:
        line += ", %d host streams share one" % shared
    written = "".join(" %s:%d" % (k, v) for k, v in pages.items() if v)
    zeros = any(not v for v in pages.values())
    tail = " none" if not written else written + (" (others 0)" if zeros else "")
    return line + "  host pages per stream" + tail


def _buffer(doc):
    cfg = doc["config"]
    lines = []
    if cfg["buffer"] == "none":
        lines.append(("buffer", "none"))
    else:
        hits, written = get(doc, "buffer.write_hits", 0), get(doc, "host.write_pages", 0)
        share = ("%.1f%% of host pages written" % (100.0 * hits / written) if written
                 else "no host pages written")
        lines.append(("buffer", "%s %s  write hits %d (%s)  read hits %d  evictions %d  "
                      "destaged pages %d" % (cfg["buffer"], cfg["buffer-size"], hits, share,
                                             get(doc, "buffer.read_hits", 0),
                                             get(doc, "buffer.evictions", 0),
                                             get(doc, "buffer.destage_pages", 0))))
    if cfg["cache-size"] != "0":
        hits, misses = get(doc, "cache.read_hits", 0), get(doc, "cache.read_misses", 0)
        ratio = "hit ratio %.1f%%" % (100.0 * hits / (hits + misses)) if hits + misses \
            else "nothing read"
        lines.append(("read cache", "%s  hits %d  misses %d (%s)" % (cfg["cache-size"], hits,
                                                                      misses, ratio)))
    return lines


def table(doc):
    """The table's lines for statistics document @doc, as one string ending in a newline."""
    g = lambda k: get(doc, k, 0)  # noqa: E731
    cfg = doc["config"]
    rows = [("device", "ftl=%s cell=%s channels=%s ways=%s blocks=%s op=%s%% capacity=%s" % (
                cfg["ftl"], cfg["cell"], cfg["channels"], cfg["ways"], cfg["blocks"], cfg["op"],
                size_text(g("geometry.capacity_bytes")))),
            ("requests", _requests(doc)),
            ("host", "reads %d (%.1f MiB)  writes %d (%.1f MiB)  trims %d  flushes %d" % (
                g("host.read_cmds"), g("host.read_bytes") / 1048576.0, g("host.write_cmds"),
                g("host.write_bytes") / 1048576.0, g("host.trim_cmds"), g("host.flush_cmds"))),
            ("nand", "page reads %d  page programs %d  block erases %d" % (
                g("nand.page_reads"), g("nand.page_programs"), g("nand.block_erases"))),
            ("ftl", "gc copies %d  gc blocks %d (foreground %d)  rmw reads %d" % (
                g("ftl.gc_page_copies"), g("ftl.gc_blocks"), g("ftl.gc_foreground_blocks"),
                g("ftl.rmw_reads")))]
    hits, misses = g("ftl.cmt.hits"), g("ftl.cmt.misses")
    if hits + misses:
        rows.append(("mapping", "cmt hits %d  misses %d (hit ratio %.1f%%)  translation page "
                     "reads %d  writes %d" % (hits, misses, 100.0 * hits / (hits + misses),
                                              g("ftl.translation_page_reads"),
                                              g("ftl.translation_page_writes"))))
    placement = _placement(doc)
    if placement:
        rows.append(("placement", placement))
    rows += _buffer(doc)
    if g("drain.page_programs") or g("drain.time_ns"):
        rows.append(("drain", "page programs %d  erases %d  gc copies %d  in %.3f ms (counted "
                     "above)" % (g("drain.page_programs"), g("drain.block_erases"),
                                 g("drain.gc_page_copies"), g("drain.time_ns") / 1e6)))
    rows.append(("waf", "%.3f pages programmed per page written, %.3f bytes per byte" % (
        g("waf"), g("waf_bytes"))))
    rows.append(("wear", "erases min %d max %d mean %.2f" % (
        g("wear.erase_min"), g("wear.erase_max"), g("wear.erase_mean"))))
    out = [LABEL % label + text for label, text in rows]
    out.append(LABEL % "latency us" + "%-6s %10s %10s %10s %10s" % ("", "mean", "p50", "p99",
                                                                     "max"))
    for kind in ("read", "write"):
        out.append(LABEL % "" + "%-6s %10.1f %10.1f %10.1f %10.1f" % (
            kind, *(g("latency_ns.%s.%s" % (kind, q)) / 1e3 for q in ("mean", "p50", "p99",
                                                                        "max"))))
    return "\n".join(out) + "\n"
