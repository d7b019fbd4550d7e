"""The live view as a person uses it: scripts/nhtop in a tmux window beside a guest running
fio, its screen read with tmux capture-pane twice: connected, the rates are there and they
move; then its record plots to PNGs."""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import REPO, VmRun

NHTOP = os.path.join(REPO, "scripts", "nhtop")
PLOT = os.path.join(REPO, "scripts", "plot")
FIO = ("fio --name=w --filename=$(nvme-hybrid-dev) --rw=randrw --bs=4k --size=128M --direct=1 "
       "--ioengine=libaio --iodepth=4 --time_based --runtime=45 --output=/dev/null")

pytestmark = pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")


def capture(session):
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                          text=True, check=True).stdout


def screen_value(screen, label):
    """The number the view shows after @label, e.g. 'read IOPS    3,015 ▄▄▅'."""
    m = re.search(re.escape(label) + r"\s+([\d,.]+|absent|-)\s", screen)
    return m.group(1) if m else None


def test_live_view_beside_fio(tmp_path):
    qmp = tmp_path / "vm.qmp"
    rec = tmp_path / "run.jsonl"
    session = "nh-live-test-%d" % os.getpid()
    run = VmRun(FIO, device="buffer=lru,buffer-size=4M,state-file=none", size="256M",
                qmp=qmp, timeout=300, log=str(tmp_path / "vm.log"))
    try:
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "140", "-y", "50",
                        # pytest exports COLUMNS/LINES, which would pin the view to 80x24
                        "env -u COLUMNS -u LINES %s %s --qmp %s --record %s; sleep 300"
                        % (sys.executable, NHTOP, qmp, rec)], check=True)
        # wait for fio's I/O to show up
        end = time.monotonic() + 120
        while True:
            screen = capture(session)
            if screen_value(screen, "write IOPS") not in (None, "-", "0", "absent"):
                break
            assert run.proc.poll() is None, "the guest ended first:\n" + run.output()
            assert time.monotonic() < end, "no write IOPS on the screen:\n" + screen
            time.sleep(1)
        samples1 = int(re.search(r"samples (\d+)", screen).group(1))
        time.sleep(5)
        screen2 = capture(session)
        samples2 = int(re.search(r"samples (\d+)", screen2).group(1))
        assert "connected" in screen2 and "not connected" not in screen2, screen2
        assert samples2 >= samples1 + 3, (samples1, samples2)       # about 1 Hz
        # the rates move: a counter table value and the read/write rates changed
        moved = [label for label in ("read IOPS", "write IOPS", "NAND page programs")
                 if screen_value(screen, label) != screen_value(screen2, label)]
        assert moved, "nothing moved in 5 s:\n%s\n%s" % (screen, screen2)
        # the document has these keys: numbers, never "absent"
        for label in ("read IOPS", "write IOPS", "NAND page programs", "write amplification",
                      "merges (switch+partial+full)"):
            assert screen_value(screen2, label) not in (None, "absent"), (label, screen2)
        assert re.search(r"host\.write_cmds\s+[\d,]+\s+[\d,]+\.\d", screen2), screen2
        status, out = run.wait()
        assert status == 0, out
        end = time.monotonic() + 15
        while "QEMU closed the connection" not in capture(session):
            assert time.monotonic() < end, "the view did not notice QEMU exit:\n" + \
                capture(session)
            time.sleep(0.5)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        run.kill()
    lines = rec.read_text().splitlines()
    assert len(lines) >= 10
    r = subprocess.run([sys.executable, PLOT, str(rec)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name in ("run-timeline.png", "run-ratios.png", "run-summary.png"):
        assert (tmp_path / name).stat().st_size > 20000
