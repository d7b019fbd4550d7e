"""Guest end-to-end tests: each test boots a fresh Debian guest with the
nvme-hybrid device through scripts/vm-exec and checks what the guest (and,
where useful, the host) sees.

Guest scripts hand results back as files in a --share directory rather than
on stdout: stdout interleaves with stderr and kernel chatter, files do not.
The guest helpers below (GUEST_PRELUDE) give every script the same names for
the namespace, the controller and a "snapshot" of the statistics and SMART
log, so the host side can compare snapshots taken at known points.
"""
import json
import os
import subprocess
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VM_EXEC = os.path.join(REPO, "scripts", "vm-exec")
# The keys the guest tests start from unless they name a preset: every key its own default (8
# channels x 4 SLC chips, 4 KiB pages).  Under TCG without -icount the virtual clock follows the
# host's, so the default drive's slower TLC flash would make every guest wait longer; the
# tests' figures were worked out on this device.
TEST_KEYS = "preset=none"

# The serial number is set by vm-exec, not by us: read it from the same module
# so the identify test follows it if it changes.
from nh import qmp as nhqmp  # noqa: E402
from nh import stats as nhstats  # noqa: E402
from nh import vm as nhvm  # noqa: E402

# vm-exec gives the controller an id (its QOM path under /machine/peripheral)
# and uses the same string as the serial.
SERIAL = nhvm.NVME_ID

# NVMe SMART "data units": thousands of 512-byte units, rounded up.
DATA_UNIT = 512 * 1000

# Shell prelude for guest scripts.  `snap NAME` saves the engine statistics
# (vendor log page through nvme-hybrid-stats) and the SMART log into the
# share as stats-NAME.json and smart-NAME.json; neither is an I/O command, so
# taking a snapshot does not move the host counters it records.
GUEST_PRELUDE = r"""
set -eu
S=/mnt/share
DEV=$(nvme-hybrid-dev)
CTRL=$(nvme-hybrid-dev --ctrl)
snap() {
    nvme-hybrid-stats --json > $S/stats-$1.json
    nvme smart-log $CTRL -o json > $S/smart-$1.json
}
"""


def _tail(text, n=80):
    return "\n".join(text.splitlines()[-n:])


def _vm_exec_args(cmd, device, disk, size, share, timeout, qmp, qemu, fmt, guest=None):
    args = [VM_EXEC, "--timeout", str(timeout), "--size", str(size)]
    if guest:
        args += ["--guest", guest]
    if "preset=" not in (device or ""):
        device = TEST_KEYS + ("," + device if device else "")
    args += ["--device", device]
    if disk:
        args += ["--disk", str(disk)]
    if fmt:
        args += ["--format", fmt]
    if share:
        args += ["--share", str(share)]
    if qmp:
        args += ["--qmp", str(qmp)]
    if qemu:
        args += ["--qemu", qemu]
    if share and cmd.lstrip().startswith("#guest"):
        cmd = GUEST_PRELUDE + cmd
    return args + ["--", cmd]


class VmRun:
    """A vm-exec run in the background (for tests that talk to QEMU over QMP
    or kill it while the guest runs).  Output goes to a file, so a chatty
    guest cannot fill a pipe and stall."""

    def __init__(self, cmd, device="", disk=None, size="1G", share=None,
                 timeout=300, qmp=None, qemu="", fmt=None, log=None, guest=None):
        self.timeout = timeout
        self.qmp = str(qmp) if qmp else None
        self.log = log or os.path.join(str(share or "/tmp"), "vm-exec.log")
        self.args = _vm_exec_args(cmd, device, disk, size, share, timeout, qmp, qemu, fmt,
                                  guest)
        self._out = open(self.log, "wb")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=subprocess.STDOUT)

    def output(self):
        with open(self.log, "rb") as f:
            return f.read().decode(errors="replace")

    def wait(self):
        """(status, output).  vm-exec enforces the timeout itself (exit 124);
        the extra minute only guards against vm-exec hanging."""
        try:
            status = self.proc.wait(self.timeout + 60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = 124
        self._out.close()
        out = self.output()
        if status == 124:
            pytest.fail("guest timed out after %s s; its output:\n%s"
                        % (self.timeout, _tail(out)), pytrace=False)
        return status, out

    def wait_for_file(self, path, timeout=120):
        """Wait until the guest creates `path` in the share (its signal that
        it reached a given point); fail with the output if vm-exec ends or
        the time runs out first."""
        end = time.monotonic() + timeout
        while not os.path.exists(path):
            if self.proc.poll() is not None:
                pytest.fail("vm-exec exited (%s) before the guest created %s:\n%s"
                            % (self.proc.returncode, os.path.basename(path),
                               _tail(self.output())), pytrace=False)
            if time.monotonic() > end:
                pytest.fail("guest did not create %s within %s s:\n%s"
                            % (os.path.basename(path), timeout, _tail(self.output())),
                            pytrace=False)
            time.sleep(0.1)

    def device(self, seconds=60):
        """The device over QMP (nh.qmp, the campaigns' client) once QEMU answers
        on the run's socket."""
        return nhqmp.Device.when_up(self.qmp, self.proc, seconds)

    def cut_power(self):
        """The device's power fails now; QEMU ends before it answers."""
        dev = self.device()
        dev.cut_power()
        dev.close()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self._out.closed:
            self._out.close()


def run_and_cut(cmd, device, disk, size, share, qmp):
    """Run @cmd, which touches $S/ready and then sleeps, cut the power once it has, and check
    that QEMU stopped before the command ended."""
    run = VmRun(cmd, device=device, disk=disk, size=size, share=share, qmp=qmp)
    try:
        run.wait_for_file(share / "ready")
        run.cut_power()
        status, _ = run.wait()
    finally:
        run.kill()
    assert status != 0, "vm-exec should report that QEMU stopped before the command ended"


def vm(cmd, device="", disk=None, size="1G", share=None, timeout=300, qmp=None,
       qemu="", fmt=None, guest=None):
    """Boot a fresh guest, run the shell script `cmd` in it as root and
    return (status, output), output being stdout then stderr merged as they
    came.  A script starting with the line "#guest" gets GUEST_PRELUDE
    (needs `share`).  guest: vm-exec's --guest (a variant name), else the
    default guest.  Fails the test, with the guest's output, on timeout."""
    log = None
    if share is None:
        # No share: keep the log out of the way in a private temp file.
        import tempfile
        fd, log = tempfile.mkstemp(prefix="nh-guest-test-", suffix=".log")
        os.close(fd)
    run = VmRun(cmd, device=device, disk=disk, size=size, share=share,
                timeout=timeout, qmp=qmp, qemu=qemu, fmt=fmt, guest=guest,
                log=log or os.path.join(str(share), "vm-exec.log"))
    try:
        return run.wait()
    finally:
        run.kill()
        if log:
            os.unlink(log)


def check(status, out, what="guest command"):
    """Assert a guest run succeeded, showing its output if not."""
    assert status == 0, "%s exited with %d; output:\n%s" % (what, status, _tail(out, 120))


def load_json(share, name):
    with open(os.path.join(str(share), name)) as f:
        return json.load(f)


def stats(share, name):
    return load_json(share, "stats-%s.json" % name)


def smart(share, name):
    """The SMART log with nvme-cli's 128-bit counters (printed as strings)
    turned into ints."""
    s = load_json(share, "smart-%s.json" % name)
    return {k: int(v) if isinstance(v, str) and v.isdigit() else v for k, v in s.items()}


def counters(doc):
    """The integer counters of a stats document as {"a.b": n}.
    Used to compare two documents and to take deltas."""
    return {k: v for k, v in nhstats.flatten(doc).items()
            if isinstance(v, int) and not isinstance(v, bool)}


def delta(after, before):
    a, b = counters(after), counters(before)
    return {k: a[k] - b.get(k, 0) for k in a}


def seeded_bytes(seed, n):
    """Reproducible pseudo-random data (no compressible runs, no zeroes
    pattern a broken device could fake)."""
    import random
    return random.Random(seed).randbytes(n)


@pytest.fixture
def share(tmp_path):
    d = tmp_path / "share"
    d.mkdir()
    return d
