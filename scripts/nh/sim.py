"""The trace simulator from Python: replay a block trace through the SSD engine with a property
string and get its statistics document, one replay or a batch, as dicts or a pandas table.

    from nh import sim as nhsim
    doc = nhsim.replay("tests/data/traces/mqsim_tpcc-small.trace", "mqsim", "ftl=page", qd=8)
    doc["waf"], nhsim.flatten(doc)["latency_ns.write.p99"]

Each call runs build/nvme-hybrid-sim (or $NVME_HYBRID_SIM, or sim=PATH) with --json, so a
result is exactly what the command line gives.  nh/sweep.py runs its Dask tasks through
replay() too.  Guide and example: docs/python-api.md."""
import collections
import concurrent.futures
import json
import logging
import os
import re
import subprocess
import tempfile
import time

# Part of this module's API (nhsim.flatten, nhsim.simulator), kept where the package keeps them.
from nh.paths import simulator  # noqa: F401
from nh.stats import flatten

log = logging.getLogger("nhsim")


class SimError(Exception):
    """The simulator refused or failed a replay.  str(e) and e.message are its standard error,
    whole (a refused key's message lists every valid key); e.returncode, e.argv."""

    def __init__(self, message, returncode, argv):
        super().__init__(message)
        self.message, self.returncode, self.argv = message, returncode, argv


# The simulator's options that a replay may set, by their command-line names: each maps a value
# to the words after --NAME ([] for a flag, which is given only when true).  The checks keep a
# value from ever reading as another option.
def _positive(name, v):
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError("option %s: %r is not a positive integer" % (name, v))
    return [str(v)]


def _fraction(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise ValueError("option %s: %r is not a fraction in (0, 1]" % (name, v))
    return [repr(float(v))]


def _size(name, v):
    if isinstance(v, bool) or not (isinstance(v, int) and v > 0 or
                                   isinstance(v, str) and re.fullmatch(r"\d+[KMGT]?", v)):
        raise ValueError("option %s: %r is not a size (bytes, or a number with K/M/G/T)"
                         % (name, v))
    return [str(v)]


def _word(name, v):
    if not isinstance(v, str) or not re.fullmatch(r"\w[\w-]*", v):
        raise ValueError("option %s: %r is not a word" % (name, v))
    return [v]


def _flag(name, v):
    if not isinstance(v, bool):
        raise ValueError("option %s: %r is not true or false" % (name, v))
    return []


OPTIONS = {"qd": _positive, "limit": _positive, "capacity": _size, "fit": _word,
           "fill": _fraction, "no-drain": _flag, "skip-bad": _flag, "sort": _flag}


def options_argv(options):
    """The simulator's arguments for a dict of options, named as on its command line or with
    underscores (no_drain); a value of None is left out.  ValueError names a bad one."""
    args = []
    for key, value in options.items():
        name = key.replace("_", "-")
        if name not in OPTIONS:
            raise ValueError("unknown simulator option %r (known: %s)"
                             % (key, ", ".join(sorted(OPTIONS))))
        if value is None:
            continue
        words = OPTIONS[name](name, value)
        if OPTIONS[name] is not _flag or value:
            args += ["--" + name] + words
    return args


def _run(argv):
    if not os.access(argv[0], os.X_OK):
        raise FileNotFoundError("no simulator at %s: build it (make sim), or give sim=PATH or "
                                "$NVME_HYBRID_SIM" % argv[0])
    return subprocess.run(argv, capture_output=True, text=True)


def replay(trace, format, device="", *, sim=None, **options):
    """Replay @trace (a file in @format: mqsim, cpcsv, msr, spc, fiu, blkparse, fio) on a device
    with the property string @device; return the statistics document as a dict.

    Options, as the simulator's flags: qd (closed loop, N in flight; default: the trace's own
    times), limit (at most N requests), capacity (bytes, or "8G"), fit ("compact" or "modulo"),
    fill (precondition a fraction of the space), no_drain, skip_bad, sort (True or False).

    Raises SimError with the simulator's message when it refuses the properties or the trace,
    ValueError for a bad option, FileNotFoundError when the simulator or the trace is missing.
    What the simulator notes on a good run (the fit, the preconditioning, unwritten reads) goes
    to the "nhsim" logger at level INFO."""
    if not os.path.isfile(trace):
        raise FileNotFoundError("no trace file %s" % trace)
    argv = [simulator(sim), "--json", "--device", device, "--trace", trace,
            "--format", format] + options_argv(options)
    r = _run(argv)
    if r.returncode != 0:
        raise SimError(r.stderr.strip() or "exit status %d" % r.returncode, r.returncode, argv)
    for line in r.stderr.splitlines():
        log.info("%s", line)
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise SimError("the simulator printed no JSON document: %r" % r.stdout[:200], 0, argv)


def check_properties(device, *, sim=None):
    """Raise SimError, with the simulator's message whole, when it refuses the property string
    @device; return None when it takes it.  Quick: the string is given with an empty trace, and
    the simulator parses the properties before it reads the trace, so a string it accepts fails
    on the trace instead, with a message that names the trace's path."""
    with tempfile.NamedTemporaryFile(prefix="nhsim-empty-", suffix=".spc") as empty:
        argv = [simulator(sim), "--device", device, "--trace", empty.name, "--format", "spc"]
        r = _run(argv)
        message = r.stderr.strip() or "exit status %d" % r.returncode
        if r.returncode != 0 and empty.name not in message.splitlines()[0]:
            raise SimError(message, r.returncode, argv)


def row(doc, **labels):
    """A statistics document as one flat pandas row (a Series), after the @labels given."""
    import pandas as pd
    return pd.Series({**labels, **flatten(doc)})


# The replay() parameters a run of table() may set; its other keys are labels.
_REPLAY_KEYS = {"trace", "format", "device"} | {n.replace("-", "_") for n in OPTIONS} | set(OPTIONS)


def table(runs, *, jobs=1, on_done=None, sim=None):
    """Replay each run of @runs, up to @jobs at a time, and return a pandas DataFrame with a row
    per run in the order given: the run's keys, then error (the simulator's message, whole;
    None when the run succeeded), seconds, then the flattened statistics document.

    A run is a dict of replay() arguments (trace, format, device, options such as qd) plus any
    keys of your own, which label the row (e.g. {"policy": "lru", "device": "buffer=lru", ...}).
    @on_done(done, total, row) is called in this thread after each replay finishes, in the
    order they finish: the simulator reports no progress within a replay to a program (its
    progress line goes to a terminal only), so a batch reports per replay."""
    import pandas as pd
    runs = [dict(r) for r in runs]
    for r in runs:
        missing = {"trace", "format"} - set(r)
        if missing:
            raise ValueError("a run needs %s: %r" % (" and ".join(sorted(missing)), r))
        options_argv({k: v for k, v in r.items() if k in _REPLAY_KEYS - {"trace", "format",
                                                                          "device"}})

    def one(r):
        t0 = time.monotonic()
        try:
            doc, err = replay(sim=sim, **{k: v for k, v in r.items() if k in _REPLAY_KEYS}), None
        except SimError as e:
            doc, err = {}, e.message
        return {**r, "error": err, "seconds": round(time.monotonic() - t0, 3), **flatten(doc)}

    rows = [None] * len(runs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(one, r): i for i, r in enumerate(runs)}
        for done, f in enumerate(concurrent.futures.as_completed(futures), 1):
            rows[futures[f]] = f.result()
            if on_done:
                on_done(done, len(runs), rows[futures[f]])
    return pd.DataFrame(rows)


Key = collections.namedtuple("Key", "name values default meaning choices")
Key.__doc__ = """A device property: values (the accepted values, as the simulator words them),
default, meaning, and choices (the tuple of names for a key that takes one of a list, such as
ftl or buffer; None for numbers and sizes)."""


def list_keys(sim=None):
    """Every device property the engine takes, from `nvme-hybrid-sim --list-keys`: a dict
    name -> Key, in the simulator's order."""
    argv = [simulator(sim), "--list-keys"]
    r = _run(argv)
    if r.returncode != 0:
        raise SimError(r.stderr.strip() or "exit status %d" % r.returncode, r.returncode, argv)
    keys, entry = {}, []
    # Each key is its name on a line of its own, then indented lines: "VALUES; default D",
    # then the meaning.
    for line in r.stdout.splitlines() + [""]:
        if line.startswith(" "):
            entry.append(line.strip())
            continue
        if entry:
            if len(entry) < 3 or "; default " not in entry[1]:
                raise SimError("unexpected --list-keys output for %r: %r" % (entry[0], entry),
                               0, argv)
            name, meaning = entry[0], " ".join(entry[2:])
            values, _, default = entry[1].rpartition("; default ")
            choices = None
            if values.startswith("one of: "):
                choices = tuple(values[len("one of: "):].split(", "))
            keys[name] = Key(name, values, default, meaning, choices)
        entry = [line] if line else []
    return keys
