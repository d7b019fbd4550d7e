"""Simulator sweeps on Dask distributed: a grid of traces x property strings x simulator options,
each point one `nvme-hybrid-sim --json` replay (nhsim.replay) run as a Dask task, the statistics
documents gathered into one pandas table.  Used by scripts/sweep (spec files) and
scripts/compare-buffers.  Spec format and cluster use: docs/sweep.md."""
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile

from nh import sim as nhsim

# What the table keeps of a failed replay's standard error, beyond its first and last lines.
ERROR_CHARS = 600


class SpecError(Exception):
    """A sweep specification, trace or cluster problem, with a message for the user."""


def sim_args(options):
    """argv for a dict of simulator options (checked; nhsim.OPTIONS are the ones a spec may
    set, everything else about a run is in its property string)."""
    try:
        return nhsim.options_argv(options)
    except ValueError as e:
        raise SpecError(str(e))


# ---------------------------------------------------------------------------------- the spec
def load_spec(path):
    """Read a TOML (.toml) or JSON spec file; relative paths in it are relative to its folder."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SpecError("cannot read the spec %s: %s" % (path, e.strerror))
    try:
        if path.endswith(".json"):
            spec = json.loads(data)
        else:
            import tomllib
            spec = tomllib.loads(data.decode())
    except Exception as e:  # tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeError
        raise SpecError("%s: not valid %s: %s" % (path, "JSON" if path.endswith(".json")
                                                  else "TOML", e))
    if not isinstance(spec, dict):
        raise SpecError("%s: the spec must be a table (object)" % path)
    return Grid(spec, os.path.dirname(os.path.abspath(path)), source=path)


class Axis:
    """One dimension of the grid: labelled values, each a property fragment and simulator
    options."""

    def __init__(self, d, where):
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not d["name"]:
            raise SpecError("%s: an axis needs a name" % where)
        self.name = d["name"]
        where = "%s, axis %r" % (where, self.name)
        kinds = [k for k in ("property", "properties", "options") if k in d]
        if len(kinds) != 1:
            raise SpecError("%s: give exactly one of property (+ values), properties, options"
                            % where)
        unknown = set(d) - {"name", "property", "values", "suffix", "properties", "options"}
        if unknown:
            raise SpecError("%s: unknown keys %s" % (where, ", ".join(sorted(unknown))))
        self.points = []        # (label, property fragment, options dict)
        if "property" in d:
            key, vals, suffix = d["property"], d.get("values"), d.get("suffix", "")
            if not isinstance(key, str) or not re.fullmatch(r"[a-z0-9-]+", key):
                raise SpecError("%s: property %r is not a property name" % (where, key))
            if not isinstance(vals, list) or not vals:
                raise SpecError("%s: values must be a non-empty list" % where)
            for v in vals:
                if not isinstance(v, (str, int, float)) or isinstance(v, bool):
                    raise SpecError("%s: value %r is not a string or number" % (where, v))
                self.points.append((v, "%s=%s%s" % (key, v, suffix), {}))
        elif "properties" in d:
            p = d["properties"]
            if isinstance(p, list):
                p = {s: s for s in p}
            if not isinstance(p, dict) or not p or \
                    not all(isinstance(v, str) for v in p.values()):
                raise SpecError("%s: properties must be a non-empty list of property strings "
                                "or a table label = property string" % where)
            self.points = [(k, v, {}) for k, v in p.items()]
        else:
            o = d["options"]
            if not isinstance(o, dict) or not o or not all(isinstance(v, dict) for v in o.values()):
                raise SpecError("%s: options must be a non-empty table label = {option = value}"
                                % where)
            for k, v in o.items():
                try:
                    sim_args(v)
                except SpecError as e:
                    raise SpecError("%s, %s: %s" % (where, k, e))
                self.points.append((k, "", v))
        labels = [p[0] for p in self.points]
        if len(set(map(str, labels))) != len(labels):
            raise SpecError("%s: labels repeat" % where)


class Trace:
    def __init__(self, d, base, where, upload=False):
        if not isinstance(d, dict):
            raise SpecError("%s: a trace is a table with name, path, format" % where)
        for k in ("name", "path", "format"):
            if not isinstance(d.get(k), str) or not d[k]:
                raise SpecError("%s: a trace needs %s (a string)" % (where, k))
        unknown = set(d) - {"name", "path", "format", "options", "upload"}
        if unknown:
            raise SpecError("%s, trace %r: unknown keys %s" % (where, d["name"],
                                                                ", ".join(sorted(unknown))))
        self.name, self.format = d["name"], d["format"]
        self.path = os.path.normpath(os.path.join(base, os.path.expanduser(d["path"])))
        self.options = d.get("options", {})
        self.upload = bool(d.get("upload", upload))
        try:
            sim_args(self.options)
        except SpecError as e:
            raise SpecError("%s, trace %r: %s" % (where, self.name, e))

    def check_local(self):
        if not os.path.isfile(self.path):
            raise SpecError("trace %r: no file %s" % (self.name, self.path))


class Grid:
    """traces x axes; each point is one replay."""

    def __init__(self, spec, base=".", source="spec"):
        known = {"sim", "device", "options", "trace", "traces", "axis", "axes", "plot", "name",
                 "upload"}
        unknown = set(spec) - known
        if unknown:
            raise SpecError("%s: unknown keys %s (known: %s)" % (source, ", ".join(sorted(unknown)),
                                                                   ", ".join(sorted(known))))
        self.source = source
        self.name = spec.get("name") or os.path.splitext(os.path.basename(source))[0]
        sim = spec.get("sim")
        self.sim = os.path.normpath(os.path.join(base, sim)) if sim else nhsim.simulator()
        self.device = spec.get("device", "")
        if not isinstance(self.device, str):
            raise SpecError("%s: device must be a property string" % source)
        self.options = spec.get("options", {})
        if not isinstance(self.options, dict):
            raise SpecError("%s: options must be a table" % source)
        try:
            sim_args(self.options)
        except SpecError as e:
            raise SpecError("%s: %s" % (source, e))
        traces = spec.get("trace", spec.get("traces"))
        if not isinstance(traces, list) or not traces:
            raise SpecError("%s: no traces ([[trace]] tables with name, path, format)" % source)
        self.traces = [Trace(t, base, source, spec.get("upload", False)) for t in traces]
        names = [t.name for t in self.traces]
        if len(set(names)) != len(names):
            raise SpecError("%s: trace names repeat" % source)
        axes = spec.get("axis", spec.get("axes", []))
        if not isinstance(axes, list):
            raise SpecError("%s: axes are [[axis]] tables" % source)
        self.axes = [Axis(a, source) for a in axes]
        reserved = {"trace", "device", "options", "error", "run"}
        for a in self.axes:
            if a.name in reserved or a.name in (x.name for x in self.axes if x is not a):
                raise SpecError("%s: axis name %r is reserved or repeats" % (source, a.name))
        self.plot = spec.get("plot", {})
        if not isinstance(self.plot, dict) or set(self.plot) - {"x", "series", "metrics"}:
            raise SpecError("%s: plot is a table with x, series (axis names) and metrics (a list "
                            "of statistics keys such as \"waf\")" % source)
        for k in ("x", "series"):
            if k in self.plot and self.plot[k] not in [a.name for a in self.axes]:
                raise SpecError("%s: plot.%s = %r is not an axis name (axes: %s)"
                                % (source, k, self.plot[k], ", ".join(a.name for a in self.axes)))
        m = self.plot.get("metrics", [])
        if not isinstance(m, list) or not all(isinstance(x, str) for x in m):
            raise SpecError("%s: plot.metrics must be a list of statistics keys" % source)

    def runs(self):
        """Every grid point: dict(trace=Trace, labels={axis: label}, device=str, options={})."""
        for t in self.traces:
            for combo in itertools.product(*[a.points for a in self.axes]):
                props = ",".join(p for p in [self.device] + [c[1] for c in combo] if p)
                opts = dict(self.options)
                opts.update(t.options)
                for c in combo:
                    opts.update(c[2])
                yield {"trace": t, "labels": {a.name: c[0] for a, c in zip(self.axes, combo)},
                       "device": props, "options": opts}

    def __len__(self):
        n = len(self.traces)
        for a in self.axes:
            n *= len(a.points)
        return n


# ---------------------------------------------------------------------------------- the task
def replay(sim, trace, fmt, device, options, upload_name=None):
    """One replay, run on a worker.  Returns (statistics document or None, error text or None,
    seconds, worker address).  A missing simulator or trace raises: the sweep stops."""
    where, spec_trace = "this machine", trace
    try:
        from distributed import get_worker
        w = get_worker()
        where = "worker %s" % w.address
        if upload_name:
            trace = os.path.join(w.local_directory, upload_name)
    except (ImportError, ValueError):
        w = None
    if not os.access(sim, os.X_OK):
        raise RuntimeError("%s has no simulator at %s: build it there, or point the spec's sim "
                           "at a path every worker sees" % (where, sim))
    if not os.path.isfile(trace):
        raise RuntimeError("%s has no trace %s: put the traces on storage every worker sees at "
                           "the same path, or upload them (upload = true)" % (where, trace))
    t0 = time.monotonic()
    try:
        doc, err = nhsim.replay(trace, fmt, device, sim=sim, **options), None
    except nhsim.SimError as e:
        doc, err = None, error_text(e.message)
    if doc and upload_name:
        # the trace the spec named, not the worker's copy: the row is the same wherever it ran
        doc["trace"]["file"] = spec_trace
    return doc, err, time.monotonic() - t0, w.address if w else ""


def error_text(stderr):
    """What the table keeps of a failed replay's standard error: whole lines, never a cut one.
    The first line (a refusal names its key there, with the list of valid ones) and the last
    (the message the run failed on, after any warnings) always; between them as many of the
    last lines as fit in ERROR_CHARS, the rest counted."""
    lines = stderr.strip().splitlines()
    if len(lines) <= 2:
        return "\n".join(lines)
    kept, room = [], ERROR_CHARS
    for line in reversed(lines[1:-1]):
        if len(line) > room:
            break
        kept.insert(0, line)
        room -= len(line) + 1
    skipped = len(lines) - 2 - len(kept)
    return "\n".join([lines[0]] + (["... (%d lines)" % skipped] if skipped else []) + kept
                     + [lines[-1]])


def check_devices(sim, devices):
    """The first of the property strings @devices that the simulator refuses, as (string, the
    first line of its message), or None; run as one task before a grid is scheduled, so that a
    mistyped key stops the sweep once instead of failing every run that has it.  Each string is
    checked by nhsim.check_properties."""
    if not os.access(sim, os.X_OK):
        raise RuntimeError("no simulator at %s: build it there, or point the spec's sim at a "
                           "path every worker sees" % sim)
    for device in devices:
        try:
            nhsim.check_properties(device, sim=sim)
        except nhsim.SimError as e:
            return device, e.message.splitlines()[0]
    return None


# ---------------------------------------------------------------------------------- the client
def connect(scheduler=None, workers=None, quiet=False):
    """(client, cluster or None): a LocalCluster of @workers single-thread workers, or the
    scheduler at @scheduler."""
    import dask
    from distributed import Client, LocalCluster
    # A worker that dies while running a task makes the task "suspicious"; the scheduler hands
    # it to another worker up to this many times.
    dask.config.set({"distributed.scheduler.allowed-failures": 3})
    if scheduler:
        if not re.fullmatch(r"(tcp|tls|inproc|ucx|ws|wss)://\S+|[\w.-]+:\d+", scheduler):
            raise SpecError("--scheduler %r: not a scheduler address (tcp://HOST:PORT)"
                            % scheduler)
        try:
            return Client(scheduler, timeout="10s"), None
        except (OSError, TimeoutError) as e:
            raise SpecError("cannot reach the Dask scheduler at %s: %s" % (scheduler, e))
        except ValueError as e:
            raise SpecError("--scheduler %r: %s" % (scheduler, e))
    n = workers or os.cpu_count() or 2
    # Threads, not processes: each task waits on a simulator subprocess, which does the work.
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=False,
                           dashboard_address=None, silence_logs=50 if quiet else 30)
    return Client(cluster), cluster


def _package_zip(tmp):
    """The nh package as @tmp/nh.zip, the form in which Dask's upload_file sends a package (a
    worker puts the zip on its sys.path and imports nh from it)."""
    package = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(tmp, "nh.zip")
    with zipfile.ZipFile(path, "w") as z:
        for name in sorted(os.listdir(package)):
            if name.endswith(".py"):
                z.write(os.path.join(package, name), os.path.join("nh", name))
    return path


def _upload(client, traces, tmp):
    """Upload each trace once under a name unique to its content; returns {path: name}."""
    names = {}
    for t in traces:
        if t.path in names:
            continue
        h = hashlib.sha1()
        with open(t.path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        name = "nh-trace-%s-%s" % (h.hexdigest()[:12], os.path.basename(t.path))
        copy = os.path.join(tmp, name)
        shutil.copyfile(t.path, copy)
        client.upload_file(copy, load=False)
        names[t.path] = name
    return names


def run_grid(grid, client, progress=True, log=sys.stderr, local=False, documents=None):
    """Run every point of @grid on @client; returns a pandas DataFrame, one row per point in
    grid order: trace, one column per axis, device, options, error, seconds, worker, then the
    flattened statistics document.  @local: the workers run in this process (a LocalCluster).
    @documents, a list: gets each run's statistics document (None for a failed run), in order."""
    import pandas as pd
    from distributed import as_completed

    for t in grid.traces:
        t.check_local()
    runs = list(grid.runs())
    tmp = tempfile.mkdtemp(prefix="nh-sweep-")
    try:
        if not local:
            # The task function lives in this module, which runs the replay through nh.sim: the
            # scheduler and the workers import the package from a copy sent to them (workers
            # that join later get it too).
            client.upload_file(_package_zip(tmp))
        uploads = _upload(client, [t for t in grid.traces if t.upload], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    devices = list(dict.fromkeys(r["device"] for r in runs))
    try:
        refused = client.submit(check_devices, grid.sim, devices, pure=False).result()
    except Exception as e:
        raise SpecError("checking the property strings: %s" % e)
    if refused:
        device, message = refused
        r = next(r for r in runs if r["device"] == device)
        raise SpecError("the simulator refuses the property string %r (%s), so no run of the "
                        "grid started: %s" % (device, _describe(r), message))
    futures = {}
    for i, r in enumerate(runs):
        t = r["trace"]
        args = sim_args(r["options"])
        tag = hashlib.sha1(json.dumps([t.name, r["device"], args]).encode()).hexdigest()[:10]
        f = client.submit(replay, grid.sim, t.path, t.format, r["device"], r["options"],
                          uploads.get(t.path) if t.upload else None,
                          key="replay-%d-%s" % (i, tag), pure=False)
        futures[f] = i
    rows = [None] * len(runs)
    docs = [None] * len(runs)
    done, t0, last = 0, time.monotonic(), 0.0
    for f in as_completed(futures):
        i = futures[f]
        r = runs[i]
        try:
            doc, err, secs, worker = f.result()
        except Exception as e:
            for g in futures:
                g.cancel()
            raise SpecError("run %d (trace %s, %s): %s" % (i, r["trace"].name,
                                                           _describe(r), e))
        row = {"trace": r["trace"].name, **r["labels"], "device": r["device"],
               "options": " ".join(sim_args(r["options"])), "error": err,
               "seconds": round(secs, 3), "worker": worker}
        if doc:
            row.update(nhsim.flatten(doc))
        rows[i] = row
        docs[i] = doc
        done += 1
        now = time.monotonic()
        if progress and (now - last > 2 or done == len(runs)):
            last = now
            print("sweep: %d/%d runs done (%.0f s)" % (done, len(runs), now - t0),
                  file=log, flush=True)
    if documents is not None:
        documents[:] = docs
    return pd.DataFrame(rows)


def _describe(r):
    return ", ".join("%s=%s" % kv for kv in r["labels"].items()) or r["device"]


def write_table(df, out, stem="results"):
    """results.parquet and results.csv in @out; returns their paths."""
    os.makedirs(out, exist_ok=True)
    pq = os.path.join(out, stem + ".parquet")
    csv = os.path.join(out, stem + ".csv")
    df.to_parquet(pq, index=False)
    df.to_csv(csv, index=False)
    return pq, csv


# ---------------------------------------------------------------------------------- plots
LABELS = {
    "waf": "write amplification (flash pages / host pages)",
    "latency_ns.read.mean": "mean read latency (us)",
    "latency_ns.write.mean": "mean write latency (us)",
    "latency_ns.read.p99": "99th percentile read latency (us)",
    "latency_ns.write.p99": "99th percentile write latency (us)",
    "nand.block_erases": "block erases",
    "ftl.gc_page_copies": "pages copied by GC",
    "buffer.write_hits": "write-buffer hits (pages)",
    "ftl.cmt.misses": "mapping-cache misses",
}
DEFAULT_METRICS = ["latency_ns.read.mean", "latency_ns.write.mean", "waf", "nand.block_erases"]


def metric_label(key):
    return LABELS.get(key, key)


def plot_table(df, grid_axes, out, x=None, series=None, metrics=None, title=""):
    """One PNG per trace and combination of the other axes: a panel per metric, the metric
    over axis @x, one line per value of axis @series; over categorical values of @x (page,
    dftl, fast) bars side by side instead, since a line between categories means nothing.
    Returns the PNG paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = df[df["error"].isna()] if "error" in df else df
    axes = [a for a in grid_axes if a in df]
    multi = [a for a in axes if df[a].nunique() > 1]
    x = x or (multi[0] if multi else None)
    series = series or next((a for a in multi if a != x), None)
    metrics = [m for m in (metrics or DEFAULT_METRICS) if m in df]
    facets = ["trace"] + [a for a in axes if a not in (x, series)]
    paths = []
    if not metrics or ok.empty:
        return paths
    for key, sub in ok.groupby(facets, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        fig, panels = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 4.2),
                                   squeeze=False)
        xs = list(dict.fromkeys(sub[x])) if x else [""]
        numeric = x and all(isinstance(v, (int, float)) for v in xs)
        for ax, m in zip(panels[0], metrics):
            scale = 1e-3 if m.startswith("latency_ns") else 1
            groups = list(sub.groupby(series, sort=False)) if series else [("", sub)]
            width = 0.8 / len(groups)
            for i, (label, g) in enumerate(groups):
                if x:
                    col = g.set_index(x)[m]
                    ys = [col[v] * scale if v in col.index else float("nan") for v in xs]
                else:
                    ys = [g[m].iloc[0] * scale]
                name = str(label) if series else None
                if numeric:
                    ax.plot(xs, ys, marker="o", markersize=4, label=name)
                else:
                    ax.bar([j - 0.4 + width * (i + 0.5) for j in range(len(xs))], ys,
                           width=width, label=name)
            if not numeric:
                ax.set_xticks(range(len(xs)))
                ax.set_xticklabels([str(v) for v in xs], rotation=30 if len(xs) > 4 else 0)
            else:
                if len(xs) > 2 and min(xs) > 0 and max(xs) / min(xs) >= 16:
                    ax.set_xscale("log", base=2)
                ax.set_xticks(xs)
                ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
                ax.get_xaxis().set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xlabel(x or "")
            ax.set_title(metric_label(m), fontsize=10)
            ax.grid(True, alpha=0.3)
        if series:
            h, lab = panels[0][0].get_legend_handles_labels()
            panels[0][-1].legend(h, lab, title=series, fontsize=8, loc="center left",
                                 bbox_to_anchor=(1.02, 0.5))
        facet_text = ", ".join("%s=%s" % (f, v) for f, v in zip(facets, key))
        fig.suptitle(("%s: " % title if title else "") + facet_text)
        fig.tight_layout()
        name = "-".join(re.sub(r"[^\w.=-]+", "_", str(v)) for v in key) + ".png"
        path = os.path.join(out, name)
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths.append(path)
    return paths
