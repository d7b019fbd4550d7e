"""Identify, flush and controller reset, seen from the guest's nvme-cli.
One boot serves all three tests: the script records everything into the
share, and each test asserts its part."""
import hashlib

import pytest

from conftest import SERIAL, check, load_json, seeded_bytes, stats, vm, delta

# Not the default 1G, and not a power of two: the namespace size must follow
# --size, not a built-in default.
SIZE = 1536 << 20
MODEL = "nvme-hybrid"
PATTERN_MIB = 4

SCRIPT = r"""#guest
nvme list -o json > $S/list.json
nvme id-ctrl $CTRL -o json > $S/id-ctrl.json
nvme id-ns $DEV -o json > $S/id-ns.json
nvme fw-log $CTRL -o json > $S/fw-log.json
blockdev --getsize64 $DEV > $S/getsize64

snap f0
rc=0; nvme flush $DEV || rc=$?
echo $rc > $S/flush.rc
snap f1

# Data written before the reset must still read back after it.
dd if=$S/pattern of=$DEV bs=1M seek=8 oflag=direct status=none
snap r0
rc=0; nvme reset $CTRL || rc=$?
echo $rc > $S/reset.rc
# The reset is synchronous in nvme-cli, but wait for "live" to be sure.
for i in $(seq 100); do
    [ "$(cat /sys/class/nvme/${CTRL#/dev/}/state)" = live ] && break
    sleep 0.1
done
cat /sys/class/nvme/${CTRL#/dev/}/state > $S/state-after-reset
dd if=$DEV bs=1M skip=8 count=%(mib)d iflag=direct status=none | sha256sum > $S/old.sha
# ...and the device must take new writes and read them back.
dd if=$S/pattern2 of=$DEV bs=1M seek=64 oflag=direct status=none
dd if=$DEV bs=1M skip=64 count=%(mib)d iflag=direct status=none | sha256sum > $S/new.sha
snap r1
""" % {"mib": PATTERN_MIB}


@pytest.fixture(scope="module")
def boot(tmp_path_factory):
    share = tmp_path_factory.mktemp("admin")
    pat = seeded_bytes(1, PATTERN_MIB << 20)
    pat2 = seeded_bytes(2, PATTERN_MIB << 20)
    (share / "pattern").write_bytes(pat)
    (share / "pattern2").write_bytes(pat2)
    status, out = vm(SCRIPT, size=SIZE, share=share)
    check(status, out)
    return share, hashlib.sha256(pat).hexdigest(), hashlib.sha256(pat2).hexdigest()


def test_identify(boot):
    share = boot[0]
    devices = load_json(share, "list.json")["Devices"]
    ours = [d for d in devices if d["ModelNumber"].strip() == MODEL]
    assert len(ours) == 1, devices
    d = ours[0]
    assert d["SerialNumber"].strip() == SERIAL
    assert d["PhysicalSize"] == SIZE

    idc = load_json(share, "id-ctrl.json")
    assert idc["mn"].strip() == MODEL
    assert idc["sn"].strip() == SERIAL
    fr = idc["fr"].strip()
    assert fr, "empty firmware revision"
    # The firmware slot log must name the same revision in the active slot.
    # nvme-cli 2.3 prints each slot as "<the 8 bytes as a little-endian
    # u64> (<text with dots for blanks>)"; the number is the exact field.
    fw = load_json(share, "fw-log.json")
    slots = next(iter(fw.values()))
    active = slots["Active Firmware Slot (afi)"] & 7
    frs = int(slots["Firmware Rev Slot %d" % active].split()[0])
    assert frs.to_bytes(8, "little").decode().strip() == fr, fw
    assert d["Firmware"].strip() == fr
    assert idc["nn"] >= 1

    ns = load_json(share, "id-ns.json")
    lbaf = ns["lbafs"][ns["flbas"] & 0xf]
    lba_bytes = 1 << lbaf["ds"]
    assert ns["nsze"] * lba_bytes == SIZE
    assert ns["ncap"] == ns["nsze"]
    assert int((share / "getsize64").read_text()) == SIZE


def test_flush(boot):
    share = boot[0]
    assert (share / "flush.rc").read_text().strip() == "0"
    d = delta(stats(share, "f1"), stats(share, "f0"))
    # Nothing else runs on the device: exactly the one Flush we sent.
    assert d["host.flush_cmds"] == 1, d
    assert d["host.write_cmds"] == 0 and d["host.read_cmds"] == 0, d


def test_reset(boot):
    share, old_sha, new_sha = boot
    assert (share / "reset.rc").read_text().strip() == "0"
    assert (share / "state-after-reset").read_text().strip() == "live"
    assert (share / "old.sha").read_text().split()[0] == old_sha, \
        "data written before the reset reads back differently after it"
    assert (share / "new.sha").read_text().split()[0] == new_sha, \
        "data written after the reset reads back differently"
    # The engine kept counting across the reset: 4 MiB written, 8 MiB read.
    d = delta(stats(share, "r1"), stats(share, "r0"))
    assert d["host.write_bytes"] == PATTERN_MIB << 20, d
    assert d["host.read_bytes"] >= 2 * PATTERN_MIB << 20, d
