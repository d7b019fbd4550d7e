"""Streams from the kernel: the k510 guest (Debian 11's Linux 5.10 over the
bookworm user space, guest-images/k510) boots with nvme_core.streams=1, and
its nvme driver, unmodified, enables the Streams directive with NSID
FFFFFFFFh, reads the Streams parameters (it needs NSSA >= 4), and turns the
write-life hints SHORT..EXTREME (fcntl F_SET_RW_HINT) into writes to streams
1..4, which the engine counts per stream (ftl.placement.host_pages).

Two boots: one with MSL 8 (the driver uses 4 streams) and one with MSL 3,
where the driver must refuse ("too few streams") and disable the directive,
so the same hinted writes reach no stream at all."""
import struct

import pytest

from conftest import check, stats, vm

GUEST = "k510"
MIB = 4                                   # per hint, O_DIRECT through ext4
PAGE = 4096                               # the engine's logical page (host_pages unit)
HINTS = ("short", "medium", "long", "extreme")     # -> streams 1..4

SCRIPT = r"""#guest
cat /sys/module/nvme_core/parameters/streams > $S/param.txt
uname -r > $S/uname.txt
dmesg > $S/dmesg.txt
nvme dir-receive $DEV --dir-type=0 --dir-oper=1 -b > $S/id.bin
nvme dir-receive $DEV --dir-type=1 --dir-oper=1 -b > $S/params.bin 2> $S/params.err || true
mkfs.ext4 -q $DEV
mkdir -p /mnt/t
mount -o nodiscard $DEV /mnt/t
sync
snap fs0
for h in %(hints)s; do
    nh-rwhint /mnt/t/$h $h %(mib)d --direct >> $S/rwhint.txt
done
snap fs1
umount /mnt/t
snap raw0
nh-rwhint $DEV long 2 --direct --raw >> $S/rwhint.txt
snap raw1
mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
cat /sys/kernel/debug/block/$(basename $DEV)/write_hints > $S/write_hints.txt 2>&1 || true
""" % {"hints": " ".join(HINTS), "mib": MIB}


def boot(share, msl):
    status, out = vm(SCRIPT, device=f"streams={msl}", share=share, guest=GUEST, timeout=240)
    check(status, out)
    return share


@pytest.fixture(scope="module")
def on(tmp_path_factory):
    return boot(tmp_path_factory.mktemp("k510-msl8"), 8)


@pytest.fixture(scope="module")
def too_few(tmp_path_factory):
    return boot(tmp_path_factory.mktemp("k510-msl3"), 3)


def text(share, name):
    return (share / name).read_text()


def moved(share, a, b):
    """Per-stream host pages written between snapshots a and b."""
    before = stats(share, a)["ftl"]["placement"]["host_pages"]
    after = stats(share, b)["ftl"]["placement"]["host_pages"]
    return {int(k): after[k] - before.get(k, 0) for k in after}


def test_kernel_5_10_with_streams_param(on):
    assert text(on, "uname.txt").startswith("5.10.")
    assert text(on, "param.txt").strip() == "Y"


def test_driver_accepts_streams(on):
    dmesg = text(on, "dmesg.txt")
    assert "nvme_core.streams=1" in dmesg
    assert "nvme nvme0: Using 4 streams" in dmesg, dmesg[-3000:]
    assert "too few streams" not in dmesg


def test_driver_enabled_streams_and_read_parameters(on):
    """No one but the kernel's driver sent Enable Directive: the guest script
    only reads.  Identify Return Parameters: Streams supported and enabled;
    the Streams parameters that the driver read show NSSA >= 4."""
    ident = (on / "id.bin").read_bytes()
    assert ident[0] & 0b10 and ident[32] & 0b10, ident[:34].hex()
    raw = (on / "params.bin").read_bytes()
    msl, nssa = struct.unpack_from("<HH", raw, 0)
    assert msl == 8 and nssa >= 4


def test_hints_reach_streams_1_to_4(on):
    """SHORT..EXTREME land on streams 1..4, exactly the file data each, and
    nothing on the streams the driver never uses (5..8).  The file system's
    own writes (journal, inode tables) carry no hint: stream 0."""
    d = moved(on, "fs0", "fs1")
    assert [d.get(s, 0) for s in (1, 2, 3, 4)] == [MIB * 2**20 // PAGE] * 4, d
    assert all(d.get(s, 0) == 0 for s in (5, 6, 7, 8)), d


def test_kernel_counted_the_hints(on):
    """The block layer's own per-hint sector counts (debugfs write_hints, what
    nvme_assign_write_stream adds up): hints 1..4 carried the file data, and
    hint 3 (LONG) the raw writes as well."""
    hints = dict(line.split(": ") for line in text(on, "write_hints.txt").splitlines())
    sectors = MIB * 2048
    assert [int(hints["hint%d" % i]) for i in (1, 2, 4)] == [sectors] * 3, hints
    assert int(hints["hint3"]) == sectors + 2 * 2048, hints


def test_raw_block_device_hint(on):
    """O_DIRECT to the raw namespace with hint LONG: stream 3 only."""
    d = moved(on, "raw0", "raw1")
    assert d.get(3, 0) > 0 and all(v == 0 for s, v in d.items() if s != 3), d


def test_too_few_streams_disables(too_few):
    """MSL 3 (NSSA 3 < 4): the driver says so, disables the directive, and the
    hinted writes carry no stream."""
    dmesg = text(too_few, "dmesg.txt")
    assert "too few streams (3) available" in dmesg, dmesg[-3000:]
    assert "Using 4 streams" not in dmesg
    assert not (too_few / "id.bin").read_bytes()[32] & 0b10
    d = moved(too_few, "fs0", "fs1")
    assert d.get(0, 0) > 0 and all(v == 0 for s, v in d.items() if s != 0), d
