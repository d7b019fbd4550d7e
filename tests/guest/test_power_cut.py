"""An injected power cut (QMP qom-set power-cut=true) with a volatile write buffer: what the host
had flushed survives; what sat only in the volatile buffer is lost: LBAs read back what they held
before (zeroes for LBAs never written, the flushed older version for an overwrite); a
capacitor-backed buffer loses nothing.  The next start counts an unsafe shutdown either way."""
import pytest

from conftest import check, run_and_cut, seeded_bytes, smart, vm

MIB = 1 << 20

CUT = r"""#guest
dd if=$S/a of=$DEV bs=1M seek=10 oflag=direct status=none
nvme flush $DEV
dd if=$S/b of=$DEV bs=1M seek=20 oflag=direct status=none
snap 1
touch $S/ready
sleep 600
"""

AFTER = r"""#guest
snap 2
dd if=$DEV bs=1M skip=10 count=1 iflag=direct status=none | cmp -s - $S/a && echo a-kept
dd if=$DEV bs=1M skip=20 count=1 iflag=direct status=none | cmp -s - $S/b && echo b-kept
dd if=$DEV bs=1M skip=20 count=1 iflag=direct status=none | cmp -s -n 1048576 - /dev/zero && echo b-zero
exit 0
"""


def _cut(share, tmp_path, volatile, script):
    """Run @script, cut power over QMP once it signals, and return the device's string."""
    (share / "a").write_bytes(seeded_bytes(21, MIB))
    (share / "b").write_bytes(seeded_bytes(22, MIB))
    disk = tmp_path / "d.img"
    dev = f"buffer=lru,buffer-size=8M,buffer-volatile={volatile},ba-size=0"
    run_and_cut(script, dev, disk, "256M", share, str(tmp_path / "qmp.sock"))
    return dev, disk


@pytest.mark.parametrize("volatile", ["on", "off"])
def test_power_cut_drops_volatile_buffer(share, tmp_path, volatile):
    dev, disk = _cut(share, tmp_path, volatile, CUT)
    status, out = vm(AFTER, device=dev, disk=disk, size="256M", share=share)
    check(status, out, "run after the power cut")
    assert "a-kept" in out, out
    if volatile == "on":
        assert "b-zero" in out and "b-kept" not in out, out
    else:
        assert "b-kept" in out, out
    assert smart(share, "2")["unsafe_shutdowns"] == smart(share, "1")["unsafe_shutdowns"] + 1


# An overwrite the volatile buffer held: a drive still has the flushed older version on flash,
# so that is what comes back, never zeroes (the device kept the old bytes for the cut).
OVERWRITE = r"""#guest
dd if=$S/a of=$DEV bs=1M seek=20 oflag=direct status=none
nvme flush $DEV
dd if=$S/b of=$DEV bs=1M seek=20 oflag=direct status=none
snap 1
touch $S/ready
sleep 600
"""

AFTER_OVERWRITE = r"""#guest
snap 2
dd if=$DEV bs=1M skip=20 count=1 iflag=direct status=none > $S/after
"""


def test_power_cut_overwrite_falls_back_to_flushed_version(share, tmp_path):
    dev, disk = _cut(share, tmp_path, "on", OVERWRITE)
    status, out = vm(AFTER_OVERWRITE, device=dev, disk=disk, size="256M", share=share)
    check(status, out, "run after the power cut")
    got = (share / "after").read_bytes()
    assert got != bytes(MIB), "the flushed version was lost: the overwritten LBAs read zeroes"
    assert got == (share / "a").read_bytes(), "neither the flushed nor the lost version"
    assert smart(share, "2")["unsafe_shutdowns"] == smart(share, "1")["unsafe_shutdowns"] + 1
