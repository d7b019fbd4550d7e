"""fio's own acceptance scripts for NVMe placement, run unchanged against the device (issue 11):
t/nvmept_streams.py (the Streams directive) and t/nvmept_fdp.py (Flexible Data Placement) from
fio 3.41's source, with that fio, as the fio341 guest carries them (/usr/local/share/fio/t,
guest-images/fio341).  Both drive io_uring_cmd passthrough on /dev/ng0n1 and judge the device
through nvme-cli (bookworm's 2.3), not through anything of ours:

- nvmept_streams.py writes 256 MiB sequentially and at random on one and on four streams with
  identifiers up to 135, asks the device which streams are open (Directive Receive, Get Status)
  and expects exactly the ones written, releases them (Directive Send, Release Identifier)
  between tests, and expects fio to fail on two bad identifier lists;
- nvmept_fdp.py points every reclaim unit handle at an empty reclaim unit (I/O Management Send,
  Reclaim Unit Handle Update), then writes to placement identifiers singly, round robin, at
  random and by an LBA scheme, and after each run reads the Reclaim Unit Handle Status: every
  handle's Reclaim Unit Available Media Writes must have gone down by exactly the logical
  blocks written to it, and not at all for reads.  It asks for 4 KiB logical blocks and at
  least five placement identifiers.

The test passes when fio's runner reports every one of its tests passed and none failed or was
skipped.  Slow (make check-slow): several GiB of verified I/O under TCG."""
import re

import pytest

from conftest import check, vm

GUEST = "fio341"
T = "/usr/local/share/fio/t"
SUMMARY = re.compile(r"^(\d+) test\(s\) passed, (\d+) failed, (\d+) skipped$", re.M)

CASES = {
    # (device, commands before the script, fio's test count); a 1 GiB namespace each
    "streams": ("streams=16",
                "nvme dir-send $DEV --namespace-id=1 --dir-type=0 --dir-oper=1 "
                "--target-dir=1 --endir=1", 14),
    "fdp": ("fdp=on,streams=7,lba-size=4096", ":", 41),
}

SCRIPT = r"""#guest
NG=$(echo $DEV | sed 's|/dev/nvme|/dev/ng|')
%(setup)s
cd %(t)s
rc=0
python3 nvmept_%(name)s.py --dut $NG -a $S/artifacts > $S/runner.txt 2>&1 || rc=$?
echo $rc > $S/runner.rc
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_fio_acceptance_script_passes(tmp_path, name):
    device, setup, tests = CASES[name]
    status, out = vm(SCRIPT % {"setup": setup, "t": T, "name": name}, device=device,
                     share=tmp_path, size="1G", timeout=3600, guest=GUEST)
    check(status, out)
    runner = (tmp_path / "runner.txt").read_text()
    print(runner[-3000:])
    summary = SUMMARY.findall(runner)
    assert summary, f"fio's runner printed no summary:\n{runner[-3000:]}"
    passed, failed, skipped = map(int, summary[-1])
    assert (passed, failed, skipped) == (tests, 0, 0), runner[-6000:]
    assert (tmp_path / "runner.rc").read_text().strip() == "0", runner[-3000:]
