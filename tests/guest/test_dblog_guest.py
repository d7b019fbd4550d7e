"""The db guest variant (guest-images/db, docs/dblog.md): PostgreSQL 15, RocksDB's db_bench and
Redis 7 from Debian's packages run on the nvme-hybrid namespace, set up by nh-db-setup, on the
block path and with their logs on the BAR1 window (libnhwal.so)."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO, VM_EXEC, check, vm

# A tiny run of each engine's benchmark; every one must report its own success.
BENCH = r"""
set -eu
nh-db-setup %(wal)s pg redis rocksdb
cd /
runuser -u postgres -- pgbench -h /run/postgresql -c 2 -j 1 -t 20 postgres > /tmp/pgbench.out 2>&1 ||
    { cat /tmp/pgbench.out; exit 1; }
grep -E "actually processed|^tps" /tmp/pgbench.out
# bench-dblog's Linkbench-like graph (scripts/linkbench): every operation, 4 writers at once,
# then its invariant (lb_check lists the link counts that are not their visible links).
cp -r /mnt/share/linkbench /tmp/lb     # the share is the test's, which postgres may not read
runuser -u postgres -- createdb -h /run/postgresql linkdb
runuser -u postgres -- psql -q -h /run/postgresql -v maxid=1000 -f /tmp/lb/schema.sql linkdb
runuser -u postgres -- pgbench -h /run/postgresql -n -c 4 -j 2 -t 50 -D maxid=1000 \
    $(for f in /tmp/lb/*.sql; do [ $f = /tmp/lb/schema.sql ] || echo -f $f; done) \
    linkdb > /tmp/linkbench.out 2>&1 || { cat /tmp/linkbench.out; exit 1; }
grep -E "actually processed|failed transactions" /tmp/linkbench.out
echo "linkbench wrong counts: $(runuser -u postgres -- psql -At -h /run/postgresql -c 'SELECT count(*) FROM lb_check' linkdb)"
%(rocks_env)s db_bench --benchmarks=fillseq,readrandom --db=/mnt/db/rocksdb/b --num=300 \
    --value_size=64 --sync=true --threads=1 2>&1 | grep -E "^(fillseq|readrandom) +:"
redis-benchmark -s /run/redis/redis.sock -n 200 -c 4 -d 64 -t set,get --csv
redis-cli -s /run/redis/redis.sock info persistence | grep -E "aof_enabled|aof_last_write_status"
if [ -n "%(wal)s" ]; then
    for r in pg redis rocksdb; do nhwal status --name $r | sed "s/^/$r: /"; done
fi
"""

ROCKS_WAL_ENV = ("LD_PRELOAD=/usr/local/lib/libnhwal.so NHWAL_RING=rocksdb "
                 "NHWAL_PATTERN='/mnt/db/rocksdb/*/*.log'")


def _check_benchmarks(out):
    assert "number of transactions actually processed: 40/40" in out, out
    assert "number of transactions actually processed: 200/200" in out, out
    assert "number of failed transactions: 0 (0.000%)" in out, out
    assert "linkbench wrong counts: 0\n" in out, out
    assert re.search(r"^tps = [0-9.]+", out, re.M), out
    fill = re.search(r"^fillseq +: +[0-9.]+ micros/op ([0-9]+) ops/sec", out, re.M)
    assert fill and int(fill.group(1)) > 0, out
    assert re.search(r"^readrandom +: .* \(300 of 300 found\)", out, re.M), out
    for op in ("SET", "GET"):
        m = re.search(r'^"%s","([0-9.]+)"' % op, out, re.M)
        assert m and float(m.group(1)) > 0, out
    assert "aof_enabled:1" in out and "aof_last_write_status:ok" in out, out


# The block-path baseline is the slow selection's (make check-slow): make check keeps the
# window run, which also exercises every engine's start, benchmark and log on the ring.
@pytest.mark.parametrize("wal", [pytest.param("block", marks=pytest.mark.slow), "window"])
def test_db_guest_benchmarks(monkeypatch, tmp_path, wal):
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    on_window = wal == "window"
    script = BENCH % {"wal": "--wal" if on_window else "",
                      "rocks_env": ROCKS_WAL_ENV if on_window else ""}
    shutil.copytree(os.path.join(REPO, "guest-images", "workloads", "linkbench"), tmp_path / "linkbench")
    status, out = vm(script, size="1G", timeout=400, share=tmp_path)
    check(status, out, "the three benchmarks")
    _check_benchmarks(out)
    if on_window:
        # Each engine's log went through its ring, and its fsyncs were answered there.
        for ring in ("pg", "redis", "rocksdb"):
            m = re.search(r"^%s: appends ([0-9]+) append_bytes ([0-9]+)" % ring, out, re.M)
            assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, (ring, out)
    else:
        assert "nhwal" not in out, out


# Bad input: each case says what is wrong; the library stays out of the way (block path).
ERRORS = r"""
exec 2>&1
L=/usr/local/lib/libnhwal.so
mkdir -p /tmp/logs
echo "== relative"; LD_PRELOAD=$L NHWAL_PATTERN='logs/*' /bin/true
echo "== nothing"; LD_PRELOAD=$L NHWAL_PATTERN='/nonexist/*' /bin/true
echo "== noring"; LD_PRELOAD=$L NHWAL_RING=zzz NHWAL_PATTERN='/tmp/logs/*' /bin/true
echo "== toolarge"; nhwal init --name big --size 16M --lba 1000000; echo rc=$?
nhwal init --name ok --size 64K --lba 1100000 > /dev/null
# With the ring but a pattern nothing writes to: fsync stays the real one (untracked files).
echo "== untracked"; LD_PRELOAD=$L NHWAL_RING=ok NHWAL_PATTERN='/tmp/logs/*.log' \
    python3 -c 'import os; fd = os.open("/tmp/other", os.O_WRONLY | os.O_CREAT); os.write(fd, b"x"); os.fsync(fd)'
nhwal status --name ok | grep appends
ba pin 3 7340032 1900000 16 > /dev/null
echo "== inuse"; nhwal init --name y --entry 3 --size 64K --lba 1000000; echo rc=$?
for e in 1 2 4 5 6 7; do ba pin $e $((e * 65536 + 65536)) $((1000000 + e * 1000)) 16 > /dev/null; done
echo "== nofree"; nhwal init --name z --size 64K --lba 1200000; echo rc=$?
exit 0
"""


def test_nhwal_bad_input(monkeypatch):
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    status, out = vm(ERRORS, size="1G", timeout=300)
    check(status, out, "bad-input cases")
    block = "logging on the block path (fsync is a real fsync)"

    def section(name):
        return out.split("== " + name)[1].split("==")[0]
    assert "is not an absolute path pattern" in section("relative") and block in section("relative")
    assert "can match nothing: /nonexist is not a directory" in section("nothing")
    assert block in section("nothing")
    assert "no ring named 'zzz'" in section("noring") and block in section("noring")
    assert "too small for a ring of 16777216 bytes" in section("toolarge")
    assert "rc=1" in section("toolarge")
    assert "appends 0 " in section("untracked"), out
    assert "entry 3 is in use by someone else" in section("inuse") and "rc=1" in section("inuse")
    assert "no free entry" in section("nofree") and "rc=1" in section("nofree")


def test_nhwal_without_device(monkeypatch):
    """QEMU's own nvme instead of nvme-hybrid: no window anywhere."""
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    args = [VM_EXEC, "--nvme-model", "nvme", "--size", "256M", "--timeout", "200", "--",
            "LD_PRELOAD=/usr/local/lib/libnhwal.so NHWAL_PATTERN='/tmp/*' /bin/true 2>&1"]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    out = r.stdout.decode(errors="replace")
    assert r.returncode == 0, out
    assert "no nvme-hybrid controller" in out, out
    assert "logging on the block path (fsync is a real fsync)" in out, out
