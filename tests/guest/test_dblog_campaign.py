"""scripts/dblog-powercut, short: one power cut under PostgreSQL, Redis and RocksDB logging on
the window loses no acknowledged commit or write, and the same cut under asynchronous logging
does lose some (so the checker can fail); one cut at a device event (--at-events, the db
workload of scripts/crashpoints) loses nothing either.  docs/dblog.md, docs/powercut.md; the
long campaigns are `make dblog-powercut` and `make crashpoints`."""
import os
import re
import subprocess

from conftest import REPO

CAMPAIGN = os.path.join(REPO, "scripts", "dblog-powercut")
SUMMARY = re.compile(r"^cuts ([0-9]+) acknowledged ([0-9]+) missing ([0-9]+) "
                     r"recovery-failures ([0-9]+)$")


def campaign(tmp_path, *args):
    """One cut 5-8 s after the clients started, and not before each engine acknowledged 20
    writes (a loaded host can start them late); (exit status, summary numbers, output)."""
    r = subprocess.run([CAMPAIGN, "1", "--seed", "1", "--min-cut", "5", "--max-cut", "8",
                        "--min-acks", "20",
                        "--dir", str(tmp_path / "campaign")] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    m = SUMMARY.match(last)
    assert m, "no summary line (status %d):\n%s" % (r.returncode, r.stdout[-4000:])
    return r.returncode, [int(x) for x in m.groups()], r.stdout


def test_window_loses_nothing_acknowledged(tmp_path):
    status, (cuts, acked, missing, failures), out = campaign(tmp_path)
    assert cuts == 3 and acked > 0, out
    assert missing == 0 and failures == 0 and status == 0, out


def test_async_logging_loses_acknowledged_writes(tmp_path):
    """Under asynchronous logging a cut loses acknowledged writes.  Recovery may fail too: Redis
    (appendfsync everysec) finds zeroes where ext4 had committed the AOF's new size before
    its data (appends into a block already allocated are not ordered), "Bad file format"."""
    status, (cuts, acked, missing, failures), out = campaign(tmp_path, "--async")
    assert cuts == 3 and acked > 0, out
    assert missing > 0 and status == 1, out


def test_cut_at_a_device_event_loses_nothing(tmp_path):
    """The workload boot under -icount, the power cut at the device's D-th event after every
    client acknowledged a write (x-power-cut-in): the restart must find every acknowledged
    commit, and the round must say at which event it was cut."""
    status, (cuts, acked, missing, failures), out = campaign(
        tmp_path, "--at-events", "--event-span", "400")
    assert cuts == 3 and acked > 0, out
    assert missing == 0 and failures == 0 and status == 0, out
    assert re.search(r"^round 0: event [0-9]+: [a-z-]+ after", out, re.M), out
