"""A 1 TiB namespace on a sparse image: the device starts, the guest's driver takes it, data at
the far end reads back, the image stays sparse and QEMU stays small; and the driver's bring-up
of a fresh controller causes no error (the Error Information log stays empty)."""
import os
import subprocess

from conftest import check, vm

TIB = 1 << 40


def test_one_tebibyte(tmp_path):
    disk = tmp_path / "big.img"
    script = r"""
D=$(nvme-hybrid-dev)
blockdev --getsize64 $D
nvme smart-log /dev/nvme0 -o json | python3 -c 'import json,sys; print("errors", json.load(sys.stdin)["num_err_log_entries"])'
dd if=/dev/urandom of=/tmp/p bs=1M count=4 status=none
dd if=/tmp/p of=$D bs=1M seek=1048000 oflag=direct status=none
dd if=$D bs=1M skip=1048000 count=4 iflag=direct status=none | cmp - /tmp/p && echo readback-ok
sha256sum < /tmp/p
"""
    status, out = vm(script, disk=str(disk), size="1T", timeout=300)
    check(status, out)
    lines = out.split()
    assert str(TIB) in lines, out
    assert "readback-ok" in lines, out
    first_sha = lines[lines.index("readback-ok") + 1]
    assert out.split("errors")[1].split()[0] == "0", out
    # sparse: 4 MiB of data and no more than a few MiB of metadata on the host
    assert os.path.getsize(disk) == TIB
    used = os.stat(disk).st_blocks * 512
    assert used < 64 << 20, used
    state = str(disk) + ".nh-state"
    assert os.path.getsize(state) < 16 << 20
    # a second start on the same 1 TiB image comes up with the data still there
    status, out = vm("dd if=$(nvme-hybrid-dev) bs=1M skip=1048000 count=4 iflag=direct "
                     "status=none | sha256sum", disk=str(disk), size="1T", timeout=300)
    check(status, out)
    assert out.split()[0] == first_sha
