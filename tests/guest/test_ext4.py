"""ext4 on the namespace: copy a tree of real files, unmount, mount again,
and every file's SHA-256 equals its source's."""
from conftest import check, vm

SCRIPT = r"""#guest
mkfs.ext4 -q -F $DEV
mkdir -p /mnt/t
mount $DEV /mnt/t
cp -a /usr/bin /usr/lib/python3.11 /mnt/t/
# Checksums of the sources, by relative path, to check the copies against.
(cd /usr && find bin -type f -print0 | sort -z | xargs -0 sha256sum) > /tmp/sums
(cd /usr/lib && find python3.11 -type f -print0 | sort -z | xargs -0 sha256sum) >> /tmp/sums
wc -l < /tmp/sums > $S/nfiles
du -sb /mnt/t | cut -f1 > $S/bytes
umount /mnt/t
# Nothing cached survives: the second mount reads the device.
echo 3 > /proc/sys/vm/drop_caches
rc=0; e2fsck -fn $DEV > $S/fsck.out 2>&1 || rc=$?
echo $rc > $S/fsck.rc
mount $DEV /mnt/t
cd /mnt/t
sha256sum -c /tmp/sums > $S/check.out 2>&1 || echo failed >> $S/check.out
cd /
umount /mnt/t
"""


def test_ext4_copy_remount_checksums(share):
    status, out = vm(SCRIPT, share=share, timeout=400)
    check(status, out)
    nfiles = int((share / "nfiles").read_text())
    # /usr/bin and python's library: hundreds of files, tens of MB.
    assert nfiles > 500, nfiles
    assert int((share / "bytes").read_text()) > 20 << 20
    lines = (share / "check.out").read_text().splitlines()
    bad = [l for l in lines if not l.endswith(": OK")]
    assert not bad, bad[:20]
    assert len(lines) == nfiles
    # A read-only full check of the unmounted file system finds nothing
    # (exit status 0: no errors, nothing it would fix).
    assert (share / "fsck.rc").read_text().strip() == "0", \
        (share / "fsck.out").read_text()
