"""The log library on the real window through a power loss (docs/dblog.md): a process appends
records to a tracked log file, each followed by fdatasync, and reports every acknowledged one to
the host; QEMU is killed with SIGKILL, so the guest's page cache (and with it every log write
the library answered from the window) is gone; after a restart on the same disk the ring is
replayed and every acknowledged record must be in the file."""
import os
import re
import signal

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


def test_acknowledged_records_survive_sigkill(share, tmp_path, monkeypatch):
    monkeypatch.setenv("NVME_HYBRID_GUEST", "db")
    records = 400
    disk = tmp_path / "disk.img"
    pidfile = tmp_path / "qemu.pid"
    run = VmRun(WRITER % {"records": records}, share=share, disk=disk, size="512M",
                qemu="-pidfile %s" % pidfile, timeout=400)
    try:
        run.wait_for_file(str(share / "ready"), timeout=300)
        run.wait_for_file(str(share / "status-before"), timeout=60)
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
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
