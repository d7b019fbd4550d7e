"""bench-streams-rocksdb refuses what cannot run before it boots a guest: a key space and
cold data that would fill ext4 (db_bench, built with assertions, then dies with no message)
and a namespace size that is not one.  The runs themselves are a benchmark (docs/device.md)."""
import os
import subprocess

import pytest

from helpers import REPO

SCRIPT = os.path.join(REPO, "scripts", "bench-streams-rocksdb")


@pytest.mark.parametrize("args,message", [
    (["--keys", "250000"], "--keys 250000 (242 MiB live, about 727 MiB during compaction) and "
     "--cold 0 need 727 MiB, more than 90% of the 349 MiB ext4 gives on a 384M namespace"),
    (["--keys", "40000", "--cold", "300"], "need 416 MiB, more than 90% of the 349 MiB"),
    (["--keys", "120000", "--cold", "300", "--size", "512M"], "on a 512M namespace"),
    (["--size", "3Q"], "argument --size: bad size '3Q'"),
])
def test_refuses_before_booting(args, message):
    r = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert message in r.stderr
    assert "==" not in r.stdout  # no run started

