"""The zoned namespace under fio's own zoned test suite and a zoned file system (slow: `make
check-slow`; docs/zoned.md, "The device").

Both run in the fio341 guest (guest-images/fio341: fio 3.41 built from Debian's source, its
t/zbd suite unmodified, Debian's f2fs-tools).
"""
import json
import re

import pytest

from conftest import check, vm

pytestmark = pytest.mark.slow

# 1 MiB zones with 768 KiB of capacity (a gap in every zone), as test_zoned.py's.  Some of the
# suite's cases need an active limit, others 130 zones, no active limit or 12 open zones: two
# devices between them run every case a zoned NVMe namespace can but 66 and 67, which need
# as many open as active zones and 16 times that many zones: a third device runs those two
# alone (after the whole suite, earlier cases leave zones holding its two active resources).
ZBD_GEOMETRY = "channels=2,ways=2,dies=1,planes=1,pages=48,page-size=4K,cell=slc,ba-size=0,"
ZBD_DEVICES = {
    "limited": (ZBD_GEOMETRY + "zones=32,zone-max-open=12,zone-max-active=16", "64M", ""),
    "wide": (ZBD_GEOMETRY + "zones=160,zone-max-open=14", "256M", ""),
    "two-active": (ZBD_GEOMETRY + "zones=32,zone-max-open=2,zone-max-active=2", "64M",
                   "-t 66 -t 67"),
}

ZBD_SCRIPT = r"""#guest
cd $S
/usr/local/share/fio/t/zbd/test-zbd-support %s ${CTRL}n2 > $S/zbd.out 2>&1 || true
"""


def zbd_results(text):
    """{test number: (PASS|SKIP|FAIL, skip reason)} from test-zbd-support's output."""
    return {int(m.group(1)): (m.group(2), m.group(3).strip())
            for m in re.finditer(r"Running test (\d+) \.\.\. (PASS|SKIP|FAIL)(.*)", text)}


@pytest.mark.parametrize("config", sorted(ZBD_DEVICES))
def test_fio_zbd_suite_passes_every_case_it_runs(share, tmp_path, config):
    device, size, cases = ZBD_DEVICES[config]
    status, out = vm(ZBD_SCRIPT % cases, device=device, disk=tmp_path / "disk.img", size=size,
                     share=share, timeout=3600, guest="fio341")
    check(status, out)
    text = (share / "zbd.out").read_text()
    results = zbd_results(text)
    print(text)
    assert results, text
    failed = sorted(n for n, (st, _) in results.items() if st == "FAIL")
    assert not failed, "failed: %s\n%s" % (failed, text)


# 4 MiB zones, no gap (f2fs sections are whole zones of 2 MiB segments), no open limit (f2fs
# keeps six logs open); NSID 1 (64 MiB) holds f2fs's metadata.
F2FS_DEVICE = ("channels=2,ways=2,dies=1,planes=1,pages=256,page-size=4K,cell=slc,ba-size=0,"
               "zones=32")
F2FS_SIZE = "192M"

F2FS_FILL = r"""#guest
mkfs.f2fs -f -m -c ${CTRL}n2 ${CTRL}n1 > $S/mkfs.out 2>&1
mkdir -p /mnt/f
mount -t f2fs ${CTRL}n1 /mnt/f
fio --name=fill --directory=/mnt/f --nrfiles=8 --size=64M --rw=write --bs=128k \
    --ioengine=psync --verify=crc32c --do_verify=1 --output-format=json > $S/fill.json
sync
blkzone report ${CTRL}n2 > $S/zones-after-fill.txt
umount /mnt/f
"""

F2FS_CHECK = r"""#guest
mkdir -p /mnt/f
mount -t f2fs ${CTRL}n1 /mnt/f
fio --name=fill --directory=/mnt/f --nrfiles=8 --size=64M --rw=write --bs=128k \
    --ioengine=psync --verify=crc32c --verify_only=1 --output-format=json > $S/verify.json
umount /mnt/f
"""


def test_zoned_f2fs_keeps_its_data_across_a_restart(share, tmp_path):
    disk = tmp_path / "disk.img"
    status, out = vm(F2FS_FILL, device=F2FS_DEVICE, disk=disk, size=F2FS_SIZE, share=share,
                     timeout=1800, guest="fio341")
    check(status, out)
    zones = (share / "zones-after-fill.txt").read_text().splitlines()
    assert any("zcond: 1(em)" not in z for z in zones), "f2fs wrote no zone"
    status, out = vm(F2FS_CHECK, device=F2FS_DEVICE, disk=disk, size=F2FS_SIZE, share=share,
                     timeout=1800, guest="fio341")
    check(status, out)
    for name in ("fill.json", "verify.json"):
        job = json.loads((share / name).read_text())["jobs"][0]
        assert job["error"] == 0, (name, job)
    verify = json.loads((share / "verify.json").read_text())["jobs"][0]
    assert verify["read"]["io_bytes"] == 64 << 20, "every byte read back and verified"
