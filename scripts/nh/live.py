"""Samples of the device's statistics document over time, and what follows from two of them:
shared by scripts/nhtop (the live view) and scripts/plot.

A sample is one statistics document (docs/statistics.md) and the wall-clock time it was read.
Rates are counter deltas over time deltas, ratios are deltas over deltas, so they describe the
interval between two samples; gauges (wear, latency percentiles) are read as they are.  Every
derived value is None when a key it needs is absent from the document (an older device, a
counter that a later version adds), so a view can say "absent" instead of inventing a 0."""
import json
import os
import time

from nh.stats import get
from nh.vm import QOM_PATH as DEFAULT_QOM_PATH  # the device vm-exec and run-vm create


def _sum(doc, keys):
    vals = [get(doc, k) for k in keys]
    if any(not isinstance(v, (int, float)) for v in vals):
        return None
    return sum(vals)


# Rates: name -> (label, unit, counter keys summed, scale).  Sections are prefixes of keys; a
# rate whose keys are absent is shown as absent.
RATES = [
    ("read_iops", "read IOPS", "/s", ["host.read_cmds"], 1),
    ("write_iops", "write IOPS", "/s", ["host.write_cmds"], 1),
    ("read_mbps", "read MB/s", "MB/s", ["host.read_bytes"], 1e-6),
    ("write_mbps", "write MB/s", "MB/s", ["host.write_bytes"], 1e-6),
    ("nand_programs", "NAND page programs", "/s", ["nand.page_programs"], 1),
    ("nand_reads", "NAND page reads", "/s", ["nand.page_reads"], 1),
    ("erases", "block erases", "/s", ["nand.block_erases"], 1),
    ("gc_copies", "GC page copies", "/s", ["ftl.gc_page_copies"], 1),
    ("merges", "merges (switch+partial+full)", "/s",
     ["ftl.merges.switch", "ftl.merges.partial", "ftl.merges.full"], 1),
    ("destage_pages", "buffer destage pages", "/s", ["buffer.destage_pages"], 1),
    ("cmt_misses", "mapping-cache misses", "/s", ["ftl.cmt.misses"], 1),
]

# Interval ratios: name -> (label, numerator keys, denominator keys)
RATIOS = [
    ("waf", "write amplification", ["nand.page_programs"], ["host.write_pages"]),
    ("buffer_hit", "write-buffer hit ratio", ["buffer.write_hits"], ["host.write_pages"]),
    ("cache_hit", "read-cache hit ratio", ["cache.read_hits"],
     ["cache.read_hits", "cache.read_misses"]),
    ("cmt_hit", "mapping-cache hit ratio", ["ftl.cmt.hits"], ["ftl.cmt.hits", "ftl.cmt.misses"]),
]

# Rates and ratios of a part the device may not have, and what to say then instead of a 0 (a
# read misses the read cache even when there is none): name -> (config key, test, text)
WITHOUT = {
    "buffer_hit": ("buffer", lambda v: v == "none", "no buffer"),
    "destage_pages": ("buffer", lambda v: v == "none", "no buffer"),
    "cache_hit": ("cache-size", lambda v: v == "0", "no read cache"),
    "cmt_hit": ("ftl", lambda v: v != "dftl", "no mapping cache"),
    "cmt_misses": ("ftl", lambda v: v != "dftl", "no mapping cache"),
}

# Gauges read as they are: name -> (label, key, scale, unit)
GAUGES = [
    ("waf_total", "write amplification since start", "waf", 1, ""),
    ("waf_bytes_total", "write amplification in bytes since start", "waf_bytes", 1, ""),
    ("erase_min", "erase count min", "wear.erase_min", 1, ""),
    ("erase_max", "erase count max", "wear.erase_max", 1, ""),
    ("erase_mean", "erase count mean", "wear.erase_mean", 1, ""),
]


class _Absent:
    """The value of something whose key the document does not have."""

    def __repr__(self):
        return "ABSENT"

    def __bool__(self):
        return False


ABSENT = _Absent()


class Without:
    """The value of a ratio of something this device does not have (WITHOUT): .text says
    what ("no buffer")."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text

    def __bool__(self):
        return False


def without(doc, name):
    """A Without for ratio @name when @doc's device lacks its part, else None."""
    key, test, text = WITHOUT.get(name, (None, None, None))
    v = get(doc, "config." + key) if key else None
    return Without(text) if isinstance(v, str) and test(v) else None


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def derive(prev, cur):
    """Everything the view shows for the interval from sample @prev to sample @cur (@prev may
    be None): {name: value}.  A value is ABSENT when a key it needs is not in @cur's document,
    None when it is there but says nothing yet (no previous sample, nothing happened in the
    interval for a ratio), a Without for a rate or ratio of a part the device does not have."""
    out = {}
    doc = cur["stats"]
    pdoc = prev["stats"] if prev else None
    dt = (cur["t"] - prev["t"]) if prev else 0
    for name, _label, _unit, keys, scale in RATES:
        out[name] = without(doc, name)
        if out[name] is not None:
            continue
        a = _sum(doc, keys)
        b = _sum(pdoc, keys) if pdoc else None
        if a is None:
            out[name] = ABSENT
        elif b is None or dt <= 0 or a < b:     # a < b: the statistics were reset
            out[name] = None
        else:
            out[name] = (a - b) * scale / dt
    for name, _label, num, den in RATIOS:
        out[name] = without(doc, name)
        if out[name] is not None:
            continue
        n1, d1 = _sum(doc, num), _sum(doc, den)
        n0, d0 = (_sum(pdoc, num), _sum(pdoc, den)) if pdoc else (None, None)
        if n1 is None or d1 is None:
            out[name] = ABSENT
        elif None in (n0, d0) or d1 - d0 <= 0:
            out[name] = None
        else:
            out[name] = (n1 - n0) / (d1 - d0)
    for name, _label, key, scale, _unit in GAUGES:
        v = get(doc, key)
        out[name] = v * scale if number(v) else ABSENT
    lo, hi = out["erase_min"], out["erase_max"]
    out["wear_spread"] = hi - lo if number(lo) and number(hi) else ABSENT
    for kind in ("read", "write"):
        lat = get(doc, "latency_ns." + kind)
        plat = get(pdoc, "latency_ns." + kind) if pdoc else None
        for q in ("p50", "p99", "max", "mean", "count"):
            v = get(lat, q) if isinstance(lat, dict) else None
            out["%s_%s" % (kind, q)] = v if number(v) else ABSENT
        # the mean of the requests completed in the interval, from sum = mean * count
        m, c = out[kind + "_mean"], out[kind + "_count"]
        pm, pc = (get(plat, "mean"), get(plat, "count")) if isinstance(plat, dict) else (None, None)
        if not (number(m) and number(c)):
            out[kind + "_interval_mean"] = ABSENT
        elif number(pm) and number(pc) and c > pc:
            out[kind + "_interval_mean"] = (m * c - pm * pc) / (c - pc)
        else:
            out[kind + "_interval_mean"] = None
    return out


def describe(doc):
    """One line about the device: FTL, buffer, cell, geometry, capacity."""
    cfg = get(doc, "config") or {}
    geo = get(doc, "geometry") or {}
    parts = []
    for k in ("ftl", "buffer", "cell", "channels", "ways"):
        if k in cfg:
            parts.append("%s=%s" % (k, cfg[k]))
    if cfg.get("buffer", "none") != "none" and "buffer-size" in cfg:
        parts.append("buffer-size=%s" % cfg["buffer-size"])
    cap = geo.get("capacity_bytes")
    if isinstance(cap, int):
        parts.append("capacity %.1f GiB" % (cap / 2**30))
    return " ".join(parts) or "(no config in the document)"


# ------------------------------------------------------------------------------------ QMP
class Source:
    """Reads the device's stats property over QMP (qemu.qmp, QEMU's own Python library)."""

    def __init__(self, address, qom_path=None):
        self.address, self.qom_path = address, qom_path
        self.qmp = None

    @staticmethod
    def parse_address(text):
        """A unix socket path, or HOST:PORT for a TCP QMP server."""
        if ":" in text and not os.path.exists(text):
            host, _, port = text.rpartition(":")
            if not port.isdigit():
                raise ValueError("QMP address %r: neither a socket path nor HOST:PORT" % text)
            return (host or "127.0.0.1", int(port))
        return text

    async def connect(self, wait=0.0):
        """Connect, retrying for @wait seconds (QEMU may still be starting); find the device."""
        from qemu.qmp import QMPClient
        import asyncio
        end = time.monotonic() + wait
        while True:
            self.qmp = QMPClient("nhtop")
            try:
                await self.qmp.connect(self.parse_address(self.address))
                break
            except Exception as e:      # ConnectError wraps OSError
                if time.monotonic() >= end:
                    raise ConnectionError("cannot connect to QMP at %s: %s" % (self.address, e))
                await asyncio.sleep(0.25)
        if not self.qom_path:
            self.qom_path = await self.find_device()
        return self

    async def find_device(self):
        """The QOM path of the first nvme-hybrid device: /machine/peripheral/<id>, or
        /machine/peripheral-anon/<name> for a device without an id."""
        for parent in ("/machine/peripheral", "/machine/peripheral-anon"):
            try:
                children = await self.qmp.execute("qom-list", {"path": parent})
            except Exception:
                continue
            for c in children:
                if c.get("type") == "child<nvme-hybrid>":
                    return "%s/%s" % (parent, c["name"])
        raise LookupError("no nvme-hybrid device in this QEMU (qom-list of /machine/peripheral)")

    async def sample(self):
        raw = await self.qmp.execute("qom-get", {"path": self.qom_path, "property": "stats"})
        return {"t": time.time(), "stats": json.loads(raw) if isinstance(raw, str) else raw}

    async def close(self):
        if self.qmp:
            try:
                await self.qmp.disconnect()
            except Exception:
                pass


# ------------------------------------------------------------------------------------ records
class Recorder:
    """--record FILE: one JSON object per line, {"t": unix seconds, "stats": document}."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def write(self, sample):
        self.f.write(json.dumps(sample, separators=(",", ":")) + "\n")

    def close(self):
        self.f.close()


def load_samples(path):
    """A record (JSON lines of samples) or one statistics document; a list of samples."""
    with open(path) as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        if "stats" in doc and "t" in doc:
            return [doc]
        return [{"t": 0.0, "stats": doc}]
    samples = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            s = json.loads(line)
        except ValueError as e:
            raise ValueError("%s:%d: not JSON: %s" % (path, n, e))
        if not isinstance(s, dict) or not isinstance(s.get("stats"), dict) or "t" not in s:
            raise ValueError("%s:%d: not a sample ({\"t\": ..., \"stats\": {...}})" % (path, n))
        samples.append(s)
    if not samples:
        raise ValueError("%s: no samples" % path)
    return samples
