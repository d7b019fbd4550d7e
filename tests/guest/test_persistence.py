"""Two runs on the same --disk: after a clean power-off the data and the
engine state (the <disk>.nh-state file) come back; after QEMU is killed the
data written (and synced) before the kill comes back and SMART counts one
unsafe shutdown."""
import hashlib
import os
import signal

import pytest

from conftest import VmRun, check, delta, seeded_bytes, smart, stats, vm

MIB = 1 << 20
PAT = 16 * MIB
OFF_MIB = 100          # where the pattern goes on the namespace

WRITE = r"""#guest
dd if=$S/pattern of=$DEV bs=1M seek=%(off)d oflag=direct conv=fsync status=none
nvme flush $DEV
snap 1
""" % {"off": OFF_MIB}

READ = r"""#guest
snap 2
rc=0
dd if=$DEV bs=1M skip=%(off)d count=%(n)d iflag=direct status=none | cmp - $S/pattern \
    > $S/cmp.out 2>&1 || rc=$?
echo $rc > $S/cmp.rc
snap 3
# The device also takes new data and returns it after the restart.
dd if=$S/pattern of=$DEV bs=1M seek=200 oflag=direct status=none
dd if=$DEV bs=1M skip=200 count=%(n)d iflag=direct status=none | sha256sum > $S/rewrite.sha
""" % {"off": OFF_MIB, "n": PAT // MIB}


def _assert_read_back(share, pat):
    assert (share / "cmp.rc").read_text().strip() == "0", \
        "data written in run 1 differs in run 2: " + (share / "cmp.out").read_text()
    assert (share / "rewrite.sha").read_text().split()[0] == hashlib.sha256(pat).hexdigest()
    # The engine knows those pages hold data (restored or rebuilt mapping):
    # reading them reads flash.  Unwritten pages would touch no flash.
    d = delta(stats(share, "3"), stats(share, "2"))
    assert d["nand.page_reads"] >= PAT // 4096, d


@pytest.mark.parametrize("fmt", ["raw", "qcow2"])
def test_clean_restart_keeps_data_and_state(share, tmp_path, fmt):
    pat = seeded_bytes(8, PAT)
    (share / "pattern").write_bytes(pat)
    disk = tmp_path / ("disk." + fmt)

    status, out = vm(WRITE, share=share, disk=disk, size="512M", fmt=fmt)
    check(status, out, "run 1")
    state = str(disk) + ".nh-state"
    assert os.path.exists(state), "no engine state file after a clean run"
    if fmt == "raw":
        # The bytes are in the backing image itself, where the guest put them.
        with open(disk, "rb") as f:
            f.seek(OFF_MIB * MIB)
            assert f.read(PAT) == pat

    status, out = vm(READ, share=share, disk=disk, size="512M", fmt=fmt)
    check(status, out, "run 2")
    _assert_read_back(share, pat)

    s1, s2 = stats(share, "1"), stats(share, "2")
    # The engine state came back: nothing was lost (NAND programs only grow),
    # and the host write counters are exactly run 1's (run 2 had not written
    # yet when it took its snapshot).
    assert s2["nand"]["page_programs"] >= s1["nand"]["page_programs"] >= PAT // 4096
    assert s2["host"]["write_bytes"] == s1["host"]["write_bytes"] == PAT
    assert s2["host"]["write_cmds"] == s1["host"]["write_cmds"]
    m1, m2 = smart(share, "1"), smart(share, "2")
    assert m2["power_cycles"] == m1["power_cycles"] + 1, (m1, m2)
    assert m2["unsafe_shutdowns"] == m1["unsafe_shutdowns"], (m1, m2)
    assert m2["data_units_written"] == m1["data_units_written"]


KILL = r"""#guest
dd if=$S/pattern of=$DEV bs=1M seek=%(off)d oflag=direct conv=fsync status=none
nvme flush $DEV
snap 1
touch $S/ready
# The host kills QEMU during this sleep.
sleep 600
""" % {"off": OFF_MIB}


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """Run 1 writes and syncs a pattern, then QEMU gets SIGKILL; run 2 on the
    same disk reads it back.  Returns (share, pattern, vm-exec status of
    run 1, whether the state file existed after the kill)."""
    tmp = tmp_path_factory.mktemp("killed")
    share = tmp / "share"
    share.mkdir()
    pat = seeded_bytes(10, PAT)
    (share / "pattern").write_bytes(pat)
    disk = tmp / "disk.img"
    pidfile = tmp / "qemu.pid"

    run = VmRun(KILL, share=share, disk=disk, size="512M", timeout=300,
                qemu="-pidfile %s" % pidfile)
    try:
        run.wait_for_file(str(share / "ready"))
        os.kill(int(pidfile.read_text()), signal.SIGKILL)
        status1, out1 = run.wait()
    finally:
        run.kill()
    state_exists = os.path.exists(str(disk) + ".nh-state")

    status, out = vm(READ, share=share, disk=disk, size="512M")
    check(status, out, "run after the kill")
    return share, pat, status1, out1, state_exists


def test_killed_qemu_keeps_synced_data_counts_unsafe_shutdown(killed):
    share, pat, status1, out1, state_exists = killed
    # vm-exec: 125 = QEMU died without the guest reporting a status.
    assert status1 == 125, (status1, out1)
    assert state_exists
    _assert_read_back(share, pat)
    m1, m2 = smart(share, "1"), smart(share, "2")
    assert m2["unsafe_shutdowns"] == m1["unsafe_shutdowns"] + 1, (m1, m2)
    assert m2["power_cycles"] == m1["power_cycles"] + 1, (m1, m2)


def test_killed_qemu_lifetime_counters_do_not_go_back(killed):
    share = killed[0]
    m1, m2 = smart(share, "1"), smart(share, "2")
    # Lifetime counts (NVMe: "over the life of the controller") never
    # decrease; run 1 had written 16 MiB when it took snapshot 1.
    for k in ("data_units_written", "host_write_commands"):
        assert m2[k] >= m1[k], (k, m1[k], m2[k])
    s1, s2 = stats(share, "1"), stats(share, "2")
    # The flash did program the pages that hold the data the device serves.
    assert s2["nand"]["page_programs"] >= s1["nand"]["page_programs"], \
        (s1["nand"], s2["nand"])
