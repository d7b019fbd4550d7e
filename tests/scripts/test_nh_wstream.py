"""The wstreams guest's pieces that run without a guest: nh-wstream's refusals of bad
input (it is built on the host, for the guest), and guest-images/build naming the
variants it knows.  The writes themselves are tests/guest/test_write_streams.py."""
import os
import subprocess

import pytest

from helpers import REPO

NH_WSTREAM = os.path.join(REPO, "build", "nh-wstream")


def run(*args):
    if not os.access(NH_WSTREAM, os.X_OK):
        pytest.fail(f"{NH_WSTREAM} is not built (run make)")
    r = subprocess.run([NH_WSTREAM, *args], capture_output=True, text=True)
    return r.returncode, r.stderr


@pytest.mark.parametrize("args,message", [
    ((), "expected DEVICE STREAM OFFSET SIZE"),
    (("/dev/x", "256", "0", "4K"), "STREAM '256': the SQE's write_stream is 8 bits, 0..255"),
    (("/dev/x", "-1", "0", "4K"), "STREAM '-1'"),
    (("/dev/x", "1", "4Q", "4K"), "OFFSET: not a size: '4Q'"),
    (("/dev/x", "1", "0", "K"), "SIZE: not a size: 'K'"),
    (("/dev/x", "1", " -4", "4K"), "OFFSET: not a size: ' -4'"),
    (("/dev/x", " 1", "0", "4K"), "STREAM ' 1'"),
    (("--bs", "1X", "/dev/x", "1", "0", "4K"), "--bs: not a size: '1X'"),
])
def test_bad_usage(args, message):
    status, err = run(*args)
    assert status == 2 and message in err and "usage: nh-wstream" in err, err


def test_not_a_block_device(tmp_path):
    f = tmp_path / "file"
    f.write_bytes(bytes(8192))
    status, err = run(str(f), "1", "0", "4K")
    assert status == 2, err
    assert "not a block device (write streams are for raw block devices only)" in err, err


def test_missing_device(tmp_path):
    status, err = run(str(tmp_path / "none"), "1", "0", "4K")
    assert status == 1 and "opening with O_DIRECT: No such file or directory" in err, err


def test_build_names_the_variants():
    r = subprocess.run([os.path.join(REPO, "guest-images", "build"), "--variant", "nosuch"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "unknown variant 'nosuch' (there are: db, fio341, k510, postmark, wstreams)" in r.stderr
