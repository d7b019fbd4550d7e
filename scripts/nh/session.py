"""One boot of a guest under scripts/vm-exec, driven from the host over QMP: the skeleton the
campaigns share (scripts/powercut-campaign, dblog-powercut and soak; crashpoints' db workload
runs dblog-powercut).  A session spawns vm-exec with a QMP socket (and QEMU's pid file, for a
cut by SIGKILL), waits for what the guest half writes into its share directory, connects to the
device once QEMU answers, and ends the boot: a power cut (QMP's power-cut, or SIGKILL), a clean
power-off, or, when anything fails, vm-exec killed.  It imports nh.qmp: a script calls
nhvenv.ensure(("qemu.qmp",)) before it imports this module."""
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time

from nh import qmp as nhqmp
from nh.paths import SCRIPTS

VM_EXEC = os.path.join(SCRIPTS, "vm-exec")
# vm-exec's exit status when QEMU went away while the guest's command ran: after a power cut.
CUT_STATUS = 125


class Error(Exception):
    """The boot did not go as the campaign needs: vm-exec ended early, something did not come in
    time, or vm-exec's exit status was not the one expected.  The message names the log."""


def workdir(path, prefix, guest):
    """A campaign's directory: @path (made if missing), else a new temporary one named @prefix.
    Holds share/, fresh, with the guest half @guest copied in, and disk.img, removed with its
    sidecars (the engine's state, the window and its bad copy) so that round 1 starts blank.
    Returns (directory, share, disk)."""
    path = path or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(path, exist_ok=True)
    share = os.path.join(path, "share")
    shutil.rmtree(share, ignore_errors=True)
    os.makedirs(share)
    shutil.copy(guest, share)
    disk = os.path.join(path, "disk.img")
    for suffix in ("", ".nh-state", ".nh-ba", ".nh-ba.bad"):
        if os.path.exists(disk + suffix):
            os.unlink(disk + suffix)
    return path, share, disk


class Session:
    """A boot whose files (QMP socket, QEMU's pid file) are in @run_dir and whose vm-exec output
    goes to @log.  Use as a context manager: leaving it kills a vm-exec still running."""

    def __init__(self, run_dir, log):
        self.log = log
        self.qmp_path = os.path.join(run_dir, "qmp.sock")
        # for --qemu "-pidfile PATH": the process a "kill" cut ends
        self.pidfile = os.path.join(run_dir, "qemu.pid")
        for p in (self.qmp_path, self.pidfile):
            if os.path.exists(p):
                os.unlink(p)
        self.proc = self.dev = self._out = None
        self.t0 = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self, options, command):
        """vm-exec @options --qmp SOCKET -- @command, its output into the log."""
        self._out = open(self.log, "wb")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen([VM_EXEC, *options, "--qmp", self.qmp_path, "--", command],
                                     stdin=subprocess.DEVNULL, stdout=self._out,
                                     stderr=subprocess.STDOUT)

    def running(self):
        return self.proc.poll() is None

    def elapsed(self):
        """Seconds since start()."""
        return time.monotonic() - self.t0

    def wait_for(self, what, seconds, ready):
        """Until @ready() (or, given a path, until that file exists): Error when vm-exec ends
        first or @seconds pass."""
        if isinstance(ready, str):
            ready = functools.partial(os.path.exists, ready)
        end = time.monotonic() + seconds
        while not ready():
            if not self.running():
                raise Error("the guest ended (vm-exec %s) before %s; see %s"
                            % (self.proc.returncode, what, self.log))
            if time.monotonic() > end:
                raise Error("no %s within %d s; see %s" % (what, seconds, self.log))
            time.sleep(0.05)

    def device(self, seconds=300):
        """The device over QMP, once QEMU answers (again, after vm-exec booted once more)."""
        try:
            self.dev = nhqmp.Device.when_up(self.qmp_path, self.proc, seconds)
        except nhqmp.Ended:
            raise Error("vm-exec ended (%d) before QEMU answered QMP; see %s"
                        % (self.proc.returncode, self.log)) from None
        except TimeoutError:
            raise Error("QEMU did not open its QMP socket in %d s" % seconds) from None
        return self.dev

    def cut(self, how):
        """The power fails now: "qmp" through the device's power-cut, "kill" by SIGKILL to QEMU."""
        if how == "qmp":
            self.dev.cut_power()
        else:
            with open(self.pidfile) as f:
                os.kill(int(f.read()), signal.SIGKILL)

    def wait_cut(self, seconds, how):
        """After a cut (@how, for the message): QEMU gone within @seconds, vm-exec's status 125."""
        self.dev.close()
        try:
            status = self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            raise Error("QEMU still ran %d s after the cut (%s); see %s"
                        % (seconds, how, self.log)) from None
        if status != CUT_STATUS:
            raise Error("vm-exec exited %d after the cut (%d expected: QEMU gone while the "
                        "command ran); see %s" % (status, CUT_STATUS, self.log))

    def power_off(self, seconds):
        """The last boot: the guest's command ends and QEMU powers off, vm-exec's status 0."""
        self.dev.close()
        status = self.proc.wait(seconds)
        if status:
            raise Error("the last boot (check only) failed: vm-exec %d; see %s"
                        % (status, self.log))

    def stop(self):
        """vm-exec killed if it still runs; the log closed."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self._out:
            self._out.close()
