"""Deallocate (blkdiscard -> NVMe Dataset Management): the range reads back
as zeroes, its neighbours keep their data, the engine counts the command and
its bytes, and the backing file gets a hole there."""
import hashlib
import os

from conftest import check, delta, load_json, seeded_bytes, stats, vm

MIB = 1 << 20
PAT = 16 * MIB
# Three adjacent 16 MiB regions written with data; the middle one discarded.
A, B, C = 16 * MIB, 32 * MIB, 48 * MIB

SCRIPT = r"""#guest
nvme id-ctrl $CTRL -o json > $S/id-ctrl.json
cat /sys/block/${DEV#/dev/}/queue/discard_max_bytes > $S/discard_max_bytes
for off in 16 32 48; do
    dd if=$S/pattern of=$DEV bs=1M seek=$off oflag=direct status=none
done
snap 0
blkdiscard -o %(b)d -l %(len)d $DEV
snap 1
# Read everything back from the device, not the page cache.
rc=0; dd if=$DEV bs=1M skip=32 count=16 iflag=direct status=none |
    cmp -n %(len)d - /dev/zero > $S/cmp.out 2>&1 || rc=$?
echo $rc > $S/cmp.rc
for off in 16 48; do
    dd if=$DEV bs=1M skip=$off count=16 iflag=direct status=none | sha256sum > $S/keep-$off.sha
done
""" % {"b": B, "len": PAT}


def test_discard_reads_zeroes_and_is_counted(share, tmp_path):
    pat = seeded_bytes(4, PAT)
    (share / "pattern").write_bytes(pat)
    disk = tmp_path / "disk.img"
    status, out = vm(SCRIPT, share=share, disk=disk, size="256M")
    check(status, out)

    # The controller claims Dataset Management (ONCS bit 2).
    assert load_json(share, "id-ctrl.json")["oncs"] & 0x4

    assert (share / "cmp.rc").read_text().strip() == "0", \
        "discarded range does not read as zeroes: " + (share / "cmp.out").read_text()
    want = hashlib.sha256(pat).hexdigest()
    for off in (16, 48):
        assert (share / ("keep-%d.sha" % off)).read_text().split()[0] == want, \
            "data next to the discarded range changed (at %d MiB)" % off

    d = delta(stats(share, "1"), stats(share, "0"))
    assert d["host.trim_bytes"] == PAT, d
    # The kernel splits a discard at discard_max_bytes and may merge the
    # pieces into multi-range commands: between 1 and ceil(len/max) commands.
    dmax = int((share / "discard_max_bytes").read_text())
    assert 1 <= d["host.trim_cmds"] <= -(-PAT // dmax), (d, dmax)
    assert d["host.write_cmds"] == 0 and d["host.write_bytes"] == 0, d

    # Deallocation reached the backend (discard=unmap): no data is
    # allocated in the middle region of the raw image, while its neighbours
    # keep theirs.
    with open(disk, "rb") as f:
        fd = f.fileno()
        try:
            nxt = os.lseek(fd, B, os.SEEK_DATA)
        except OSError:
            nxt = os.path.getsize(disk)
        assert nxt >= C, "data still allocated at %d in the discarded range" % nxt
        assert os.lseek(fd, A, os.SEEK_DATA) == A
        f.seek(C)
        assert f.read(PAT) == pat
