"""The log library on the real window through a power loss (docs/dblog.md): a process appends
records to a tracked log file, each followed by fdatasync, and reports every acknowledged one to
the host; QEMU is killed with SIGKILL (or the device's QMP power-cut), so the guest's page cache
(and with it every log write the library answered from the window) is gone; after a restart on the same disk the ring is
replayed and every acknowledged record must be in the file."""
import os
import re
import signal

import pytest

from conftest import VmRun, check, vm

WRITER = r"""
set -eu
nh-db-setup --wal rocksdb > /dev/null
mkdir -p /mnt/db/applog
sync
# The background flusher must not make the file durable behind our back: only the ring may
# hold the acknowledged records when the power goes.
LD_PRELOAD=/usr/local/lib/libnhwal.so NHWAL_RING=rocksdb NHWAL_PATTERN='/mnt/db/applog/*' \
NHWAL_FLUSH_MS=600000 python3 - <<'EOF'
import os
fd = os.open("/mnt/db/applog/log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
ack = open("/mnt/share/acked", "a")
for n in range(%(records)d):
    os.write(fd, b"record %%06d %%s\n" %% (n, b"x" * (n %% 200)))
    os.fdatasync(fd)
    ack.write("%%d\n" %% n)
    ack.flush()
    os.fsync(ack.fileno())
open("/mnt/share/ready", "w").close()
EOF
nhwal status --name rocksdb > /mnt/share/status.tmp
mv /mnt/share/status.tmp /mnt/share/status-before
sleep 600
"""

AFTER = r"""
set -eu
nh-db-setup --keep --wal rocksdb
cp /mnt/db/applog/log /mnt/share/log-after
"""


@pytest.mark.parametrize("how", ["sigkill", pytest.param("power-cut", marks=pytest.mark.slow)])
def test_acknowledged_records_survive_power_loss(share, tmp_path, monkeypatch, how):
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    records = 400
    disk = tmp_path / "disk.img"
    pidfile = tmp_path / "qemu.pid"
    qmp = tmp_path / "qmp.sock"
    run = VmRun(WRITER % {"records": records}, share=share, disk=disk, size="512M",
                qemu="-pidfile %s" % pidfile, qmp=qmp, timeout=400)
    try:
        run.wait_for_file(str(share / "ready"), timeout=300)
        run.wait_for_file(str(share / "status-before"), timeout=60)
        if how == "sigkill":
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        else:
            run.cut_power()
        status, out = run.wait()
    finally:
        run.kill()
    assert status == 125, "QEMU should have died under the guest: %s\n%s" % (status, out)
    before = (share / "status-before").read_text()
    m = re.search(r"in the ring: ([0-9]+) records", before)
    assert m and int(m.group(1)) == records, before

    status, out = vm(AFTER, share=share, disk=disk, size="512M", timeout=300)
    check(status, out, "restart after the power loss")

    acked = [int(x) for x in (share / "acked").read_text().split()]
    assert acked == list(range(records))
    # The replay did the work: the records were in the ring, not yet in the file.
    m = re.search(r"replayed ([0-9]+) records .* from ring 'rocksdb'", out)
    assert m and int(m.group(1)) > 0, out
    log = (share / "log-after").read_bytes().split(b"\n")
    want = [b"record %06d %s" % (n, b"x" * (n % 200)) for n in acked]
    assert log[:len(want)] == want, "acknowledged records missing or damaged after replay"


PG_WRITER = r"""
set -eu
NHWAL_FLUSH_MS=600000 nh-db-setup --wal pg > /dev/null
psql="runuser -u postgres -- psql -h /run/postgresql -X -q -v ON_ERROR_STOP=1 postgres"
$psql -c "create table acked (id int primary key, pad text)"
sync
# One session, autocommit: each INSERT returns after its commit is durable (synchronous_commit
# on); the \echo after it is printed only then, and the host learns it through the share.
{
    for i in $(seq %(commits)d); do
        printf '%%s\n' "insert into acked values ($i, repeat('p', 100));" "\\echo ack $i"
    done
} | $psql | while read -r word n; do
    [ "$word" = ack ] && echo $n >> /mnt/share/acked
done
# The ring may have just been flushed (by size, or by PostgreSQL's own file handling): commit
# more, one at a time, until the power goes with acknowledged commits in the ring only.
for i in $(seq %(commits)d $((%(commits)d + 50))); do
    nhwal status --name pg > /mnt/share/status.tmp
    grep -q "in the ring: [1-9]" /mnt/share/status.tmp && break
    $psql -c "insert into acked values ($((i + 1)), repeat('p', 100))"
    echo $((i + 1)) >> /mnt/share/acked
done
mv /mnt/share/status.tmp /mnt/share/ready
sleep 600
"""

PG_AFTER = r"""
set -eu
nh-db-setup --keep --wal pg
runuser -u postgres -- psql -h /run/postgresql -X -A -t -c "select id from acked" postgres \
    > /mnt/share/present
"""


def killed_after_ready(script, share, tmp_path, disk, size, timeout, ready_timeout):
    """Boot on @disk, run @script until it creates ready in the share, then SIGKILL QEMU: the
    power goes with whatever the guest's page cache held."""
    pidfile = tmp_path / "qemu.pid"
    run = VmRun(script, share=share, disk=disk, size=size, qemu="-pidfile %s" % pidfile,
                timeout=timeout)
    try:
        run.wait_for_file(str(share / "ready"), timeout=ready_timeout)
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
        status, out = run.wait()
    finally:
        run.kill()
    assert status == 125, "QEMU should have died under the guest: %s\n%s" % (status, out)


def test_postgres_commits_survive_sigkill(share, tmp_path, monkeypatch):
    """PostgreSQL's WAL on the window (the background flusher held off, so the last commits
    are durable only in the ring): every commit acknowledged before SIGKILL is in the table
    after the ring's replay and PostgreSQL's own recovery."""
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    commits = 200
    disk = tmp_path / "disk.img"
    killed_after_ready(PG_WRITER % {"commits": commits}, share, tmp_path, disk, "1G", 500, 450)
    ring = (share / "ready").read_text()
    m = re.search(r"in the ring: ([0-9]+) records", ring)
    assert m and int(m.group(1)) > 0, ring

    status, out = vm(PG_AFTER, share=share, disk=disk, size="1G", timeout=300)
    check(status, out, "restart after the power loss")
    acked = {int(x) for x in (share / "acked").read_text().split()}
    present = {int(x) for x in (share / "present").read_text().split()}
    assert acked == set(range(1, max(acked) + 1)) and max(acked) >= commits
    m = re.search(r"replayed ([0-9]+) records .* from ring 'pg'", out)
    assert m and int(m.group(1)) > 0, out
    missing = sorted(acked - present)
    assert not missing, "acknowledged commits missing after recovery: %s" % missing[:20]


REDIS_WRITER = r"""
set -eu
NHWAL_FLUSH_MS=600000 nh-db-setup --wal redis > /dev/null
sync
# appendfsync always: a reply comes after the AOF write and its fdatasync.
python3 - <<'EOF2'
import os, redis
r = redis.Redis(unix_socket_path="/run/redis/redis.sock")
ack = open("/mnt/share/acked", "a")
for i in range(1, %(writes)d + 1):
    r.set("k%%d" %% i, "v%%d" %% i * 8)
    ack.write("%%d\n" %% i)
    ack.flush()
    os.fsync(ack.fileno())
EOF2
nhwal status --name redis > /mnt/share/status.tmp
mv /mnt/share/status.tmp /mnt/share/ready
sleep 600
"""

REDIS_AFTER = r"""
set -eu
nh-db-setup --keep --wal redis
python3 - <<'EOF2'
import redis
r = redis.Redis(unix_socket_path="/run/redis/redis.sock")
with open("/mnt/share/present", "w") as f:
    for k in r.scan_iter("k*", count=1000):
        i = int(k[1:])
        if r.get(k) == ("v%d" % i * 8).encode():
            f.write("%d\n" % i)
EOF2
"""


def test_redis_writes_survive_sigkill(share, tmp_path, monkeypatch):
    """Redis with its AOF on the window (appendfsync always): every SET answered before
    SIGKILL is there after the ring's replay and Redis's AOF load."""
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    writes = 300
    disk = tmp_path / "disk.img"
    killed_after_ready(REDIS_WRITER % {"writes": writes}, share, tmp_path, disk, "1G", 400, 350)
    ring = (share / "ready").read_text()
    m = re.search(r"in the ring: ([0-9]+) records", ring)
    assert m and int(m.group(1)) > 0, ring

    status, out = vm(REDIS_AFTER, share=share, disk=disk, size="1G", timeout=300)
    check(status, out, "restart after the power loss")
    acked = {int(x) for x in (share / "acked").read_text().split()}
    present = {int(x) for x in (share / "present").read_text().split()}
    assert acked == set(range(1, writes + 1))
    m = re.search(r"replayed ([0-9]+) records .* from ring 'redis'", out)
    assert m and int(m.group(1)) > 0, out
    missing = sorted(acked - present)
    assert not missing, "acknowledged writes missing after recovery: %s" % missing[:20]


# Renames, truncation, unlinking, dup and fork of tracked files, then a power loss: the replay
# must give each path what the program left there, never older bytes of another incarnation.
META_WRITER = r"""
set -eu
nh-db-setup --wal rocksdb > /dev/null
mkdir -p /mnt/db/applog
sync
LD_PRELOAD=/usr/local/lib/libnhwal.so NHWAL_RING=rocksdb NHWAL_PATTERN='/mnt/db/applog/*' \
NHWAL_FLUSH_MS=600000 python3 - <<'EOF2'
import os
D = "/mnt/db/applog/"
def put(path, data, off=0, flags=0):
    fd = os.open(D + path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    os.pwrite(fd, data, off)
    os.fdatasync(fd)
    return fd
# a: written, renamed to b; a new a written.  b then rewritten through the old descriptor.
fd = put("a", b"A" * 3000)
os.rename(D + "a", D + "b")
os.close(put("a", b"new-a"))
os.pwrite(fd, b"via-old-fd", 100)
os.fdatasync(fd)
# b cut to 200 bytes after more writes; then written past the cut.
os.pwrite(fd, b"Z" * 1000, 1000)
os.fdatasync(fd)
os.ftruncate(fd, 200)
os.pwrite(fd, b"end", 300)
os.fdatasync(fd)
os.close(fd)
# c written and removed; d written, c made again with other bytes.
os.close(put("c", b"C" * 500))
os.unlink(D + "c")
os.close(put("c", b"c2"))
# O_TRUNC reopen of e after writes; dup'd descriptor writes; a forked child writes too.
os.close(put("e", b"E" * 800))
fd = put("e", b"e2", flags=os.O_TRUNC)
fd2 = os.dup(fd)
os.pwrite(fd2, b"dup", 10)
os.fdatasync(fd2)
pid = os.fork()
if pid == 0:
    os.pwrite(fd, b"child", 20)
    os.fdatasync(fd)
    os._exit(0)
os.waitpid(pid, 0)
# f: a non-empty file opened again with O_APPEND (as Redis reopens its AOF) and appended to.
os.close(put("f", b"F" * 100))
fd = os.open(D + "f", os.O_WRONLY | os.O_APPEND)
os.write(fd, b"tail")
os.fdatasync(fd)
os.close(fd)
open("/mnt/share/ready", "w").close()
EOF2
sleep 600
"""

META_AFTER = r"""
set -eu
nh-db-setup --keep --wal rocksdb
cd /mnt/db/applog
for f in a b c e f; do python3 -c "import sys; print(repr(open('$f','rb').read()))" > /mnt/share/$f; done
"""


def test_renames_truncation_unlink_fork_survive_sigkill(share, tmp_path, monkeypatch):
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    disk = tmp_path / "disk.img"
    killed_after_ready(META_WRITER, share, tmp_path, disk, "512M", 300, 250)
    status, out = vm(META_AFTER, share=share, disk=disk, size="512M", timeout=300)
    check(status, out, "restart after the power loss")
    m = re.search(r"replayed ([0-9]+) records .* from ring 'rocksdb'", out)
    assert m and int(m.group(1)) > 0, out

    def content(name):
        return eval((share / name).read_text())     # repr() of bytes, written by the guest
    assert content("a") == b"new-a"
    b = bytearray(b"A" * 200 + b"\0" * 103)
    b[100:110] = b"via-old-fd"
    b[300:303] = b"end"
    assert content("b") == bytes(b)
    assert content("c") == b"c2"
    e = bytearray(b"e2" + b"\0" * 23)
    e[10:13] = b"dup"
    e[20:25] = b"child"
    assert content("e") == bytes(e)
    assert content("f") == b"F" * 100 + b"tail"


ROCKS_WRITER = r"""
set -eu
nh-db-setup --wal rocksdb > /dev/null
sync
# fillseq with sync=true: db_bench returns after every Put's WAL write and fdatasync; with a
# large memtable and no flush on close the keys live only in the WAL (000004.log).
NHWAL_FLUSH_MS=600000 LD_PRELOAD=/usr/local/lib/libnhwal.so NHWAL_RING=rocksdb \
NHWAL_PATTERN='/mnt/db/rocksdb/*/*.log' db_bench --benchmarks=fillseq --db=/mnt/db/rocksdb/k \
    --num=%(keys)d --value_size=64 --sync=true --write_buffer_size=67108864 > /tmp/bench.out 2>&1 ||
    { cat /tmp/bench.out; exit 1; }
grep -q "^fillseq .* %(keys)d operations" /tmp/bench.out
ls /mnt/db/rocksdb/k > /mnt/share/files
nhwal status --name rocksdb > /mnt/share/status.tmp
mv /mnt/share/status.tmp /mnt/share/ready
sleep 600
"""

ROCKS_AFTER = r"""
set -eu
nh-db-setup --keep --wal rocksdb
ldb --db=/mnt/db/rocksdb/k --hex scan > /mnt/share/keys
"""


def test_rocksdb_writes_survive_sigkill(share, tmp_path, monkeypatch):
    """RocksDB's WAL on the window: every key db_bench wrote with sync=true (it finished, so
    all were acknowledged) is there after the ring's replay and RocksDB's own WAL recovery."""
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    keys = 500
    disk = tmp_path / "disk.img"
    killed_after_ready(ROCKS_WRITER % {"keys": keys}, share, tmp_path, disk, "512M", 300, 250)
    files = (share / "files").read_text().split()
    assert not [f for f in files if f.endswith(".sst")], files    # only the WAL holds them
    ring = (share / "ready").read_text()
    m = re.search(r"in the ring: ([0-9]+) records", ring)
    assert m and int(m.group(1)) >= keys, ring

    status, out = vm(ROCKS_AFTER, share=share, disk=disk, size="512M", timeout=300)
    check(status, out, "restart after the power loss")
    m = re.search(r"replayed ([0-9]+) records .* from ring 'rocksdb'", out)
    assert m and int(m.group(1)) >= keys, out
    # fillseq's keys: the counter 0..keys-1 as 8 big-endian bytes, then "00000000".
    got = [line.split(" : ")[0] for line in (share / "keys").read_text().splitlines()]
    want = ["0x" + (i.to_bytes(8, "big") + b"0" * 8).hex().upper() for i in range(keys)]
    assert got == want, "keys missing after recovery: %d of %d present" % (len(got), keys)
