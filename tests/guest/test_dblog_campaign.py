"""scripts/dblog-powercut, short: one power cut under PostgreSQL, Redis and RocksDB logging on
the window loses no acknowledged commit or write, and the same cut under asynchronous logging
does lose some (so the checker can fail).  docs/dblog.md; the long campaign is
`make dblog-powercut`."""
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
