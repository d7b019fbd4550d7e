"""Shared by scripts/vm-exec and scripts/run-vm: options, the guest image,
the backing disk and the QEMU command line for a guest with the device."""
import argparse
import ctypes
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys

from nh import version as nhversion
from nh.paths import BUILD, REPO

GUEST_DIR = os.path.join(BUILD, "guest")
# The files of a guest directory (guest-images/build writes them).
GUEST_FILES = ("vmlinux", "initrd.img", "rootfs.ext4")

# -icount shift=N makes each guest instruction take 2^N ns of virtual time.
# 0 (a 1 GHz guest CPU) is the smallest step QEMU offers: guest software
# costs the least virtual time, so modeled device latencies dominate what
# the guest measures.  sleep=off lets virtual time jump over idle periods
# instead of waiting for the host clock, so waiting on the device costs no
# wall time.
DEFAULT_ICOUNT_SHIFT = 0

# The device's id and serial, and so its QOM path, where QMP clients read its properties.
NVME_ID = "nvh0"
QOM_PATH = "/machine/peripheral/" + NVME_ID


class Error(Exception):
    pass


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMGT]?)(i?B)?", text.strip(), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError("bad size %r (examples: 512M, 1G, 2T)" % text)
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


def add_common_options(ap):
    nhversion.add_option(ap)
    ap.add_argument("--device", default="", metavar="KEY=VALUE,...",
                    help="extra properties appended to -device nvme-hybrid")
    ap.add_argument("--disk", metavar="PATH",
                    help="backing image of the NVMe namespace; created sparse with "
                         "--size when missing, and kept (default: a temporary "
                         "file, deleted afterwards)")
    ap.add_argument("--size", type=parse_size, default=parse_size("1G"),
                    help="size of a new backing image (default 1G)")
    ap.add_argument("--format", choices=("raw", "qcow2"),
                    help="backing image format (default: that of an existing "
                         "--disk; for a new one qcow2 if its name ends in .qcow2, "
                         "else raw)")
    ap.add_argument("--icount", nargs="?", type=int, const=DEFAULT_ICOUNT_SHIFT,
                    metavar="SHIFT",
                    help="run on QEMU's instruction-count clock, "
                         "-icount shift=SHIFT,sleep=off (default shift %d: one "
                         "instruction per ns); guest-observed latency then equals "
                         "the modeled one, at the cost of wall time"
                         % DEFAULT_ICOUNT_SHIFT)
    ap.add_argument("--accel", choices=("tcg", "kvm"), default="tcg",
                    help="how QEMU runs the guest's CPU: tcg (the default: translated, on any "
                         "host) or kvm (the host's CPU through /dev/kvm, as -cpu host; no "
                         "--icount). Either way the device's time is the host's clock unless "
                         "--icount; docs/timing.md says which figures need --icount")
    ap.add_argument("--qemu", default="", metavar="ARGS",
                    help="extra QEMU arguments (shell-split), added last")
    ap.add_argument("--smp", type=int, default=2, help="vCPUs (default 2)")
    ap.add_argument("--mem", default="1G", help="guest RAM (default 1G)")
    ap.add_argument("--share", metavar="DIR",
                    help="host directory mounted at /mnt/share in the guest")
    ap.add_argument("--qmp", metavar="PATH",
                    help="QMP unix socket, e.g. for qom-get of the stats property "
                         "of the device, /machine/peripheral/%s" % NVME_ID)
    ap.add_argument("--qemu-binary", metavar="PATH",
                    help="QEMU to run (default: $NVME_HYBRID_QEMU, else "
                         "build/qemu-system-x86_64)")
    ap.add_argument("--guest", default=os.environ.get("NVME_HYBRID_GUEST"),
                    metavar="NAME|DIR",
                    help="the guest: a variant NAME (guest-images/build --variant NAME, e.g. "
                         "db, built or refreshed into build/guest-NAME) or, when the value "
                         "has a '/', an already built guest directory (vmlinux, initrd.img, "
                         "rootfs.ext4) used as it is (default: $NVME_HYBRID_GUEST, else the "
                         "default guest in build/guest)")
    ap.add_argument("--watch", nargs="?", const="", metavar="NHTOP-OPTIONS",
                    help="open the live view (scripts/nhtop) beside the guest: in a new tmux "
                         "pane when running inside tmux; outside tmux a --record in its options "
                         "records without the view (nhtop --no-ui), else the command that opens "
                         "it in another terminal is printed; the optional value is more nhtop "
                         "options, e.g. --watch='--record run.jsonl'")
    # Developer switch: QEMU's own "nvme" instead of ours, for comparisons
    # and for working on the guest side while the device is unfinished.
    ap.add_argument("--nvme-model", default="nvme-hybrid", help=argparse.SUPPRESS)


def check_options(opts):
    """What add_common_options' options cannot be together, or on this host: an Error."""
    if opts.accel == "kvm" and opts.icount is not None:
        raise Error("--accel kvm cannot run with --icount: QEMU counts guest instructions only "
                    "when it translates them itself (TCG); under KVM the guest's CPU runs them "
                    "and the device's time is the host's clock. Drop --icount, or use --accel "
                    "tcg for exact guest-observed latency")
    if opts.accel == "kvm" and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        raise Error("--accel kvm: /dev/kvm %s (KVM needs the kvm_intel or kvm_amd module and "
                    "read-write access, e.g. membership of the kvm group); --accel tcg runs "
                    "anywhere" % ("is not readable and writable by this user"
                                  if os.path.exists("/dev/kvm") else "does not exist"))


def qemu_binary(opts):
    candidates = [opts.qemu_binary, os.environ.get("NVME_HYBRID_QEMU"),
                  os.path.join(REPO, "build", "qemu-system-x86_64"),
                  os.path.join(REPO, "build", "qemu-build", "qemu-system-x86_64")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise Error("no QEMU binary: run ./configure && make, or pass --qemu-binary")


def ensure_guest(opts=None):
    """The guest directory for --guest (or $NVME_HYBRID_GUEST): a directory as it
    is, or a variant built (or fetched from the cache) into build/guest-NAME; the
    default guest in build/guest without one.  Quick when current.  Build
    progress goes to stderr: stdout belongs to the guest command."""
    given = (opts and getattr(opts, "guest", None)) or os.environ.get("NVME_HYBRID_GUEST")
    if given and "/" in given:
        missing = [f for f in GUEST_FILES if not os.path.isfile(os.path.join(given, f))]
        if missing:
            raise Error("%s is not a guest directory (no %s); build one with "
                        "guest-images/build DIR" % (given, ", ".join(missing)))
        return os.path.abspath(given)
    out = GUEST_DIR + ("-" + given if given else "")
    r = subprocess.run([os.path.join(REPO, "guest-images", "build")]
                       + (["--variant", given] if given else []) + [out], stdout=sys.stderr)
    if r.returncode != 0:
        raise Error("building the guest image failed")
    return out


def guest_kernel_args(opts, guest):
    """The guest's own kernel arguments, with a leading space, or "": a variant
    NAME's guest-images/NAME/cmdline (the k510 guest's nvme_core.streams=1), or
    the file `cmdline` in a guest directory given as a path."""
    given = getattr(opts, "guest", None) or os.environ.get("NVME_HYBRID_GUEST")
    if not given:
        return ""
    path = (os.path.join(guest, "cmdline") if "/" in given
            else os.path.join(REPO, "guest-images", given, "cmdline"))
    try:
        with open(path) as f:
            args = " ".join(line.split("#", 1)[0].strip() for line in f).split()
    except FileNotFoundError:
        return ""
    return " " + " ".join(args) if args else ""


def qemu_img(qemu):
    for c in (os.path.join(os.path.dirname(qemu), "qemu-img"), shutil.which("qemu-img")):
        if c and os.access(c, os.X_OK):
            return c
    raise Error("creating a qcow2 image needs qemu-img (Debian package qemu-utils)")


def prepare_disk(path, size, fmt, qemu):
    """Create the backing image if missing; return its format."""
    if os.path.exists(path):
        with open(path, "rb") as f:
            found = "qcow2" if f.read(4) == b"QFI\xfb" else "raw"
        if fmt and fmt != found:
            raise Error("%s is a %s image, not %s" % (path, found, fmt))
        return found
    fmt = fmt or ("qcow2" if path.endswith(".qcow2") else "raw")
    if fmt == "raw":
        with open(path, "wb") as f:
            f.truncate(size)
    else:
        r = subprocess.run([qemu_img(qemu), "create", "-q", "-f", "qcow2", path, str(size)])
        if r.returncode != 0:
            raise Error("qemu-img could not create %s" % path)
    return fmt


def guest_command(argv):
    """The shell command line the guest runs (sh -c) for vm-exec's COMMAND
    words: one word is a shell string, used as it is (pipes, ;, $(...) work);
    several words are an argv, each quoted for the shell, as docker exec and
    kubectl exec take them."""
    if not argv:
        raise Error("no command")
    if len(argv) == 1:
        return argv[0]
    return shlex.join(argv)


def watch_qemu_args(opts, run_dir):
    """--watch: the QEMU arguments of a QMP socket of the view's own (a QMP socket serves
    one client at a time, and --qmp is the user's); [] without --watch."""
    if opts.watch is None:
        return []
    opts.watch_socket = os.path.join(run_dir, "watch.qmp")
    return ["-qmp", "unix:%s,server=on,wait=off" % qemu_opt(opts.watch_socket)]


def start_watch(opts, prog):
    """--watch: open scripts/nhtop on the socket of watch_qemu_args() in a tmux pane beside
    this one (focus stays here).  Outside tmux there is no screen for the view: a --record in
    its options runs headless (nhtop --no-ui), which needs none, and its HeadlessRecorder is returned
    (finish it once QEMU is gone); without one, how to open the view elsewhere is printed."""
    if opts.watch is None:
        return None
    try:
        words = shlex.split(opts.watch)
    except ValueError as e:
        raise Error("--watch: %s" % e)
    cmd = [os.path.join(REPO, "scripts", "nhtop"), "--qmp", opts.watch_socket] + words
    if os.environ.get("TMUX") and shutil.which("tmux"):
        r = subprocess.run(["tmux", "split-window", "-d", "-h", shlex.join(cmd)])
        if r.returncode == 0:
            return None
    record = None
    for i, w in enumerate(words):
        if w == "--record" and i + 1 < len(words):
            record = words[i + 1]
        elif w.startswith("--record="):
            record = w.split("=", 1)[1]
    if record:
        print("%s: --watch: not inside tmux, so no live view; recording to %s without one"
              % (prog, record), file=sys.stderr, flush=True)
        return HeadlessRecorder(cmd + ["--no-ui"], os.path.dirname(opts.watch_socket), prog)
    print("%s: --watch: not inside tmux; open the live view in another terminal with\n    %s"
          % (prog, shlex.join(cmd)), file=sys.stderr, flush=True)
    return None


class HeadlessRecorder:
    """scripts/nhtop --no-ui --record FILE beside a guest: its sample lines go nowhere (stdout is
    the guest's), its messages to a file in @run_dir, reported when it fails."""
    # After QEMU exits, the recorder sees the socket close and ends at once; one still waiting
    # to connect (QEMU failed early) is interrupted after this long.
    GRACE_SECONDS = 5

    def __init__(self, cmd, run_dir, prog):
        self.prog, self.reported = prog, False
        self.log = os.path.join(run_dir, "recorder.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=log, start_new_session=True,
                                         preexec_fn=die_with_parent)

    def check(self):
        """Report a recorder that has failed (a bad --record directory, say), once."""
        status = self.proc.poll()
        if status and not self.reported:
            self.reported = True
            with open(self.log, errors="replace") as f:
                why = f.read().strip()
            print("%s: --watch: the recorder exited with status %d, so nothing more is "
                  "recorded: %s" % (self.prog, status, why), file=sys.stderr, flush=True)

    def finish(self):
        try:
            self.proc.wait(self.GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            # SIGINT: nhtop closes the record it writes on the way out
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(self.GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            return
        self.check()


def qemu_opt(value):
    """Quote a value inside a QEMU key=value,... option (commas double)."""
    return value.replace(",", ",,")


def qemu_command(qemu, opts, guest, disk, fmt, append, console, extra=()):
    """console: the -serial argument (the guest's ttyS0); extra: the
    caller's own QEMU arguments, placed before the user's --qemu ones."""
    device = "%s,id=%s,drive=nvm0,serial=%s" % (opts.nvme_model, NVME_ID, NVME_ID)
    if opts.device:
        device += "," + opts.device
    cmd = [qemu,
           "-L", "/usr/share/qemu", "-L", "/usr/share/seabios",
           "-machine", "q35", "-accel", opts.accel,
           "-nodefaults", "-display", "none", "-no-reboot",
           "-smp", str(opts.smp), "-m", opts.mem,
           "-serial", console,
           "-kernel", os.path.join(guest, "vmlinux"),
           "-initrd", os.path.join(guest, "initrd.img"),
           "-append", append + guest_kernel_args(opts, guest),
           # snapshot=on: every boot starts from the pristine image, and
           # concurrent guests can share it.
           "-drive", "if=none,id=root,format=raw,snapshot=on,file="
           + qemu_opt(os.path.join(guest, "rootfs.ext4")),
           "-device", "virtio-blk-pci,drive=root",
           "-drive", "if=none,id=nvm0,format=%s,discard=unmap,file=%s" % (fmt, qemu_opt(disk)),
           "-device", device]
    if opts.share:
        cmd += ["-virtfs", "local,path=%s,mount_tag=nhshare,security_model=none"
                % qemu_opt(os.path.abspath(opts.share))]
    if opts.qmp:
        cmd += ["-qmp", "unix:%s,server=on,wait=off" % qemu_opt(os.path.abspath(opts.qmp))]
    if opts.accel == "kvm":
        # QEMU's default CPU model hides most of the host's features; a --qemu -cpu comes
        # later and wins
        cmd += ["-cpu", "host"]
    if opts.icount is not None:
        cmd += ["-icount", "shift=%d,sleep=off" % opts.icount]
    return cmd + list(extra) + shlex.split(opts.qemu)


# Kernel arguments for a quick, quiet boot under TCG: no KASLR relocation,
# no speculative-execution mitigations (page-table isolation makes every
# syscall flush the emulated TLB), no legacy probing that only waits.
# iomem=relaxed: the nvme driver claims every BAR of the device, and Debian's
# kernel (CONFIG_IO_STRICT_DEVMEM) then refuses to let libba map BAR0 and the
# BAR1 window through sysfs (docs/bar-pm.md).
KERNEL_ARGS = ("console=ttyS0,115200 panic=-1 nokaslr mitigations=off iomem=relaxed "
               "tsc=reliable no_timer_check i8042.noaux i8042.nokbd "
               "i8042.nomux i8042.nopnp rdinit=/init")


def die_with_parent():
    """preexec_fn: QEMU gets SIGKILL if this script dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
