"""WARP's (FAST'26) fio workloads and the FDP statistics log they are judged by: reading their
job files from the mirrored artifact, rewriting only the lines a smaller device needs, and
turning a log of `nvme fdp stats` samples (theirs or ours, the same nvme-cli text) into WAF
over time and a steady-state figure.  Used by scripts/bench-warp; no guest here."""
import re
import subprocess

MIRROR = "/work/.mirror/MoatLab+WARP-FAST26-AE/repo"

# workload -> directory of its job files in the artifact
WORKLOADS = {
    "2s-10p": "FIO-scripts/2stream/seq_rand/10p",
    "2s-50p": "FIO-scripts/2stream/seq_rand/50p",
    "2s-90p": "FIO-scripts/2stream/seq_rand/90p",
    "3s-uniform": "FIO-scripts/3stream/uniform",
    "3s-zipf1.2": "FIO-scripts/3stream/zipf_1.2",
    "3s-zipf2.2": "FIO-scripts/3stream/zipf_2.2",
    "3s-zoned": "FIO-scripts/3stream/zoned",
}
# mode -> job file, as their run scripts pair them (run_script_three.sh: t0 is "nofdp")
MODES = {
    "fdp": "py_randwritefiles_bs4K_QD4_fdp",
    "fdp_share": "py_randwritefiles_bs4K_QD4_fdp_share",
    "nofdp": "py_randwritefiles_bs4K_QD4_t0",
}
# WARP's own emulator runs archived beside the figures (Fig14.py: a 448 GiB device), under the
# file name their scripts give every log; the real drive's logs of these workloads are not in
# the artifact (FIO-scripts/*/archive/*/samsung_waf_1sec.txt are absent from the mirror or hold
# one date line).
WARP_ARCHIVE = "archive/result-FIO/cylon448-II/3syn/{name}/{mode}/samsung_waf_1sec.txt"
WARP_ARCHIVE_GIB = 448
WARP_NAMES = {"3s-uniform": "uniform", "3s-zipf1.2": "zipf_1.2", "3s-zipf2.2": "zipf_2.2",
              "3s-zoned": "zoned"}

REWRITTEN = ("runtime",)
_TIME = re.compile(r"\b(\d{1,2}):(\d{2}):(\d{2})(?:\s+(AM|PM))?\b")
_COUNTER = re.compile(r"\((HBMW|MBMW|MBE)\):\s*([\d,]+)")
_RUH = re.compile(r"^Reclaim Unit Handle (\d+) Attributes:.*\)\s+(\d+)\s+(\d+)\s*$")


class Error(Exception):
    """Bad input: a job file or log that cannot be used, with what is wrong."""


def git_show(mirror, path):
    """A file of the artifact's HEAD, or Error naming it when the mirror lacks it."""
    r = subprocess.run(["git", "-C", mirror, "show", "HEAD:" + path],
                       capture_output=True, text=True)
    if r.returncode:
        raise Error(f"{path}: not in the mirror {mirror}: {r.stderr.strip()}")
    return r.stdout


def rewrite_job(text, runtime):
    """The job file with every `runtime=` set to `runtime` seconds and nothing else touched;
    returns (text, [(line number, old, new)]).  Sizes and offsets are percentages of the
    device in every WARP job, so a smaller namespace needs no other change."""
    out, changes = [], []
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        key = line.split("=", 1)[0].strip()
        if key in REWRITTEN and not line.lstrip().startswith(";"):
            new = f"{key}={runtime}\n"
            if new.strip() != line.strip():
                changes.append((n, line.strip(), new.strip()))
            line = new
        out.append(line)
    return "".join(out), changes


def _seconds(line, last):
    """Seconds of a `date` line, kept increasing across midnight; None if it has no time."""
    m = _TIME.search(line)
    if not m:
        return None
    h, mi, s, half = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
    if half:
        h = h % 12 + (12 if half == "PM" else 0)
    t = h * 3600 + mi * 60 + s
    while last is not None and t < last:
        t += 86400
    return t


def parse_fdp_stats(text):
    """Samples of a `date; nvme fdp stats` log (5.get_waf.sh's file): a list of dicts with
    t (seconds), hbmw, mbmw, mbe and, where the log has them (WARP's nvme-cli prints per-handle
    lines), ruh {handle: (hbmw, mbmw)}.  A sample missing any of the three counters is
    dropped (the file can end mid-sample when the logger is killed)."""
    samples, cur, last = [], None, None
    for line in text.splitlines():
        line = line.strip()
        m = _COUNTER.search(line)
        r = _RUH.match(line)
        if m and cur is not None:
            cur[m.group(1).lower()] = int(m.group(2).replace(",", ""))
        elif r and cur is not None:
            cur["ruh"][int(r.group(1))] = (int(r.group(2)), int(r.group(3)))
        elif not m and not r:
            t = _seconds(line, last)
            if t is not None:
                if cur is not None:
                    samples.append(cur)
                cur, last = {"t": t, "ruh": {}}, t
    if cur is not None:
        samples.append(cur)
    return [s for s in samples if all(k in s for k in ("hbmw", "mbmw", "mbe"))]


def curve(samples, capacity):
    """WAF over time from the first sample on: per sample, drive writes (host bytes since the
    start / capacity), cumulative WAF (MBMW / HBMW since the start, as WARP's Fig13.py plots
    it) and interval WAF (since the previous sample with host writes)."""
    if not samples:
        return []
    h0, m0, t0 = samples[0]["hbmw"], samples[0]["mbmw"], samples[0]["t"]
    out, ph, pm = [], h0, m0
    for s in samples[1:]:
        dh, dm = s["hbmw"] - h0, s["mbmw"] - m0
        ih, im = s["hbmw"] - ph, s["mbmw"] - pm
        if ih > 0:
            out.append({"t": s["t"] - t0, "dw": dh / capacity, "waf": dm / dh,
                        "waf_interval": im / ih, "mb_s": ih / 1e6})
            ph, pm = s["hbmw"], s["mbmw"]
    return out


def steady(samples, tail=1 / 3):
    """Steady-state WAF: media bytes over host bytes across the last `tail` of the host bytes
    the log shows written (the same rule for their logs and ours).  None without writes."""
    if len(samples) < 2:
        return None
    h0, h1 = samples[0]["hbmw"], samples[-1]["hbmw"]
    if h1 <= h0:
        return None
    cut = h1 - tail * (h1 - h0)
    start = next(s for s in samples if s["hbmw"] >= cut)
    if start is samples[-1]:
        start = samples[-2]
    return (samples[-1]["mbmw"] - start["mbmw"]) / (samples[-1]["hbmw"] - start["hbmw"])


def handle_waf(samples, tail=1 / 3):
    """Per handle, from WARP's per-handle lines: steady-state media / host bytes over the same
    tail as `steady` ({} when the log has no per-handle lines)."""
    if len(samples) < 2 or not samples[-1]["ruh"]:
        return {}
    h0, h1 = samples[0]["hbmw"], samples[-1]["hbmw"]
    cut = h1 - tail * (h1 - h0)
    start = next(s for s in samples if s["hbmw"] >= cut)
    out = {}
    for ruh, (h, m) in samples[-1]["ruh"].items():
        sh, sm = start["ruh"].get(ruh, (0, 0))
        if h > sh:
            out[ruh] = (m - sm) / (h - sh)
    return out


def tag_waf(before, after):
    """Per placement handle, from two engine statistics documents (nvme-hybrid-stats --json):
    (host pages, GC copies out of the handle's reclaim units, 1 + copies / host pages)."""
    def get(doc, key):
        return doc["ftl"]["placement"].get(key, {})
    out = {}
    for tag, pages in get(after, "host_pages").items():
        host = pages - get(before, "host_pages").get(tag, 0)
        copies = get(after, "gc_copies").get(tag, 0) - get(before, "gc_copies").get(tag, 0)
        if host > 0:
            out[tag] = (host, copies, 1 + copies / host)
    return out


def job_names(text):
    """The job file's jobs in order ([global] is not one): fio numbers its logs by this order,
    from 1 (write_bw_log=X gives X_bw.N.log for the Nth job)."""
    names = re.findall(r"^\[([^\]]+)\]", text, re.MULTILINE)
    return [n for n in names if n != "global"]


def bandwidth(log_text, tail=1 / 3):
    """Mean MB/s of a fio bandwidth log (time ms, KiB/s, ...) over its last `tail` of time."""
    rows = [line.split(",") for line in log_text.splitlines() if line.strip()]
    pts = [(int(r[0]), int(r[1])) for r in rows]
    if not pts:
        return None
    cut = pts[-1][0] - tail * pts[-1][0]
    last = [kib for t, kib in pts if t >= cut]
    return sum(last) / len(last) * 1024 / 1e6
