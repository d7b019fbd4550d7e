"""The 970pro preset's volatile staging buffer (stage-volatile=on with map-unit=4K,
docs/volatile-stage.md) seen by a Linux guest: its kernel finds a write-back cache, and a power
cut loses a write it acknowledged but was never asked to flush (the LBAs read their older,
flushed version), while flushed data survives.  With stage-volatile=off the same write survives.
A 64 KiB write is 16 of the 128 units of a 970pro stripe (16 dies x 32 KiB): still staged at
the cut (units wait for their stripe, a Flush or a FUA; no bounded wait)."""
import pytest

from conftest import check, run_and_cut, seeded_bytes, vm

KIB = 1 << 10

CUT = r"""#guest
cat /sys/block/$(basename $DEV)/queue/write_cache > $S/write_cache
dd if=$S/a of=$DEV bs=64K seek=160 oflag=direct status=none
nvme flush $DEV
dd if=$S/b of=$DEV bs=64K seek=160 oflag=direct status=none
touch $S/ready
sleep 600
"""

AFTER = r"""#guest
dd if=$DEV bs=64K skip=160 count=1 iflag=direct status=none > $S/after
"""


@pytest.mark.parametrize("volatile", ["on", "off"])
def test_power_cut_loses_what_the_volatile_stage_held(share, tmp_path, volatile):
    a, b = seeded_bytes(31, 64 * KIB), seeded_bytes(32, 64 * KIB)
    (share / "a").write_bytes(a)
    (share / "b").write_bytes(b)
    disk = tmp_path / "d.img"
    # write-cache=off: the backend writes through, so the write-back cache is the stage's alone
    dev = f"preset=970pro,stage-volatile={volatile},write-cache=off,ba-size=0"
    run_and_cut(CUT, dev, disk, "256M", share, str(tmp_path / "qmp.sock"))
    assert (share / "write_cache").read_text().strip() == \
        ("write back" if volatile == "on" else "write through")
    status, out = vm(AFTER, device=dev, disk=disk, size="256M", share=share)
    check(status, out, "run after the power cut")
    assert (share / "after").read_bytes() == (a if volatile == "on" else b)
