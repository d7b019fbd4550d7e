"""A small NVMe host driven through QEMU's qtest protocol, with no guest OS.

QEMU runs with `-accel qtest`: no vCPU executes, and this process plays the
CPU.  It reads and writes guest RAM and MMIO over the qtest socket, programs
PCI config space through the 0xcf8/0xcfc ports, and advances the virtual
clock explicitly with `clock_step`.  That last point matters: nvme-hybrid
posts completions from virtual-clock timers at the modeled completion time,
so waiting for a completion means stepping the clock until the phase bit of
the next CQ entry flips.

The client works with both QEMU's own `-device nvme` (64-bit BAR0) and
nvme-hybrid (32-bit BAR0): BAR types are read from the BAR's low bits.
"""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile

# --- NVMe constants (NVMe Base Specification 1.4) ---------------------------

# Controller registers, section 3.1.
REG_CAP, REG_VS, REG_INTMS = 0x00, 0x08, 0x0C
REG_CC, REG_CSTS, REG_AQA = 0x14, 0x1C, 0x24
REG_ASQ, REG_ACQ = 0x28, 0x30
DOORBELL_BASE = 0x1000

CC_EN = 1 << 0
CC_IOSQES_SHIFT, CC_IOCQES_SHIFT = 16, 20
CC_CSS_SHIFT, CC_MPS_SHIFT, CC_SHN_SHIFT = 4, 7, 14
CSTS_RDY, CSTS_CFS = 1 << 0, 1 << 1

# Admin opcodes, section 5 (Figure "Opcodes for Admin Commands").
ADM_DELETE_SQ, ADM_CREATE_SQ, ADM_GET_LOG_PAGE = 0x00, 0x01, 0x02
ADM_DELETE_CQ, ADM_CREATE_CQ, ADM_IDENTIFY = 0x04, 0x05, 0x06
ADM_ABORT, ADM_SET_FEATURES, ADM_GET_FEATURES = 0x08, 0x09, 0x0A
ADM_ASYNC_EVENT = 0x0C

# NVM command set opcodes, section 6.
IO_FLUSH, IO_WRITE, IO_READ = 0x00, 0x01, 0x02
IO_COMPARE, IO_WRITE_ZEROES, IO_DSM = 0x05, 0x08, 0x09

# Identify CNS values, section 5.15.
CNS_NS, CNS_CTRL, CNS_ACTIVE_NS_LIST, CNS_NS_DESC_LIST = 0x00, 0x01, 0x02, 0x03

# Feature identifiers, section 5.21.1.
FEAT_VWC, FEAT_NUM_QUEUES, FEAT_TIMESTAMP = 0x06, 0x07, 0x0E

# Status code types and codes, section 4.6.1.2.
SCT_GENERIC, SCT_CMD_SPECIFIC = 0, 1
SC_SUCCESS = 0x00
SC_INVALID_OPCODE = 0x01
SC_INVALID_FIELD = 0x02
SC_ABORT_REQUESTED = 0x07
SC_INVALID_NAMESPACE = 0x0B
SC_COMMAND_SEQUENCE_ERROR = 0x0C
SC_PRP_OFFSET_INVALID = 0x13
SC_LBA_OUT_OF_RANGE = 0x80
# Command-specific (SCT 1h).
SC_CQ_INVALID = 0x00
SC_INVALID_QID = 0x01
SC_INVALID_QSIZE = 0x02
SC_INVALID_LOG_PAGE = 0x09
SC_INVALID_QUEUE_DELETION = 0x0C
SC_FEATURE_NOT_CHANGEABLE = 0x0E

PAGE = 4096
SQE_SIZE, CQE_SIZE = 64, 16

PCI_CLASS_NVME = 0x010802
RAM_SIZE = 256 << 20
# Guest RAM handed out by the bump allocator: above the legacy 1 MiB area.
RAM_ALLOC_START = 0x100000
# Where memory BARs go: 32-bit BARs into q35's PCI hole below 4 GiB (which
# starts at the end of RAM for -m 256M; 0xb0000000 is left to the MMCONFIG
# window), BARs that do not fit there above 4 GiB.
BAR32_START, BAR32_END = 0xC0000000, 0xFEC00000
BAR64_START = 0x10_0000_0000



# The keys the tests start from unless they name a preset: every key its own default (8
# channels x 4 SLC chips, 4 KiB pages), the device their timing was worked out on; the default
# drive's (a TLC preset) is slower under qtest's clock and its blocks larger than a 64 MiB image.
TEST_KEYS = "preset=none"

class QemuDied(Exception):
    """QEMU exited (or its qtest socket closed) while a test talked to it."""


class CommandTimeout(Exception):
    """No completion arrived within the virtual-time budget."""


# --- qtest and QMP transports -------------------------------------------------


class _LineSocket:
    def __init__(self, sock, proc):
        self.sock = sock
        self.proc = proc
        self.buf = b""

    def send_line(self, line):
        try:
            self.sock.sendall(line.encode() + b"\n")
        except OSError as e:
            raise QemuDied(f"send failed: {e}") from e

    def recv_line(self):
        while b"\n" not in self.buf:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout as e:
                raise QemuDied("no answer from QEMU within the socket timeout") from e
            except OSError as e:
                raise QemuDied(f"recv failed: {e}") from e
            if not chunk:
                raise QemuDied(f"QEMU closed the socket (exit code {self.proc.poll()})")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


class QTest(_LineSocket):
    """The qtest text protocol: one command line, one `OK ...` line back.

    `IRQ raise/lower N` lines arrive asynchronously between replies; nothing
    here intercepts IRQs (completions are found by polling the CQ), so they
    are dropped.
    """

    def cmd(self, line):
        self.send_line(line)
        while True:
            reply = self.recv_line()
            if reply.startswith("IRQ"):
                continue
            if reply == "OK" or reply.startswith("OK "):
                return reply[3:]
            raise RuntimeError(f"qtest command {line!r} failed: {reply}")

    def readb(self, addr):
        return int(self.cmd(f"readb {addr:#x}"), 16)

    def readw(self, addr):
        return int(self.cmd(f"readw {addr:#x}"), 16)

    def readl(self, addr):
        return int(self.cmd(f"readl {addr:#x}"), 16)

    def readq(self, addr):
        return int(self.cmd(f"readq {addr:#x}"), 16)

    def writeb(self, addr, val):
        self.cmd(f"writeb {addr:#x} {val:#x}")

    def writew(self, addr, val):
        self.cmd(f"writew {addr:#x} {val:#x}")

    def writel(self, addr, val):
        self.cmd(f"writel {addr:#x} {val:#x}")

    def writeq(self, addr, val):
        self.cmd(f"writeq {addr:#x} {val:#x}")

    def inl(self, port):
        return int(self.cmd(f"inl {port:#x}"), 16)

    def inw(self, port):
        return int(self.cmd(f"inw {port:#x}"), 16)

    def inb(self, port):
        return int(self.cmd(f"inb {port:#x}"), 16)

    def outl(self, port, val):
        self.cmd(f"outl {port:#x} {val:#x}")

    def outw(self, port, val):
        self.cmd(f"outw {port:#x} {val:#x}")

    def outb(self, port, val):
        self.cmd(f"outb {port:#x} {val:#x}")

    def memread(self, addr, size):
        # base64 keeps large transfers at 4/3 of their size instead of 2x.
        return base64.b64decode(self.cmd(f"b64read {addr:#x} {size:#x}"))

    def memwrite(self, addr, data):
        if data:
            enc = base64.b64encode(bytes(data)).decode()
            self.cmd(f"b64write {addr:#x} {len(data):#x} {enc}")

    def memset(self, addr, size, value=0):
        self.cmd(f"memset {addr:#x} {size:#x} {value:#x}")

    def clock_step(self, ns=None):
        """Advance the virtual clock; returns the new virtual time in ns."""
        return int(self.cmd("clock_step" if ns is None else f"clock_step {ns}"))


class Qmp(_LineSocket):
    def handshake(self):
        json.loads(self.recv_line())  # greeting
        self.execute("qmp_capabilities")

    def execute(self, command, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.send_line(json.dumps(msg))
        while True:
            reply = json.loads(self.recv_line())
            if "event" in reply:
                continue
            if "error" in reply:
                raise RuntimeError(f"QMP {command}: {reply['error']}")
            return reply["return"]


# --- QEMU process ----------------------------------------------------------------


def default_qemu_binary():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    for cand in (os.environ.get("NH_QEMU"),
                 os.path.join(root, "build", "qemu-system-x86_64"),
                 os.path.join(root, "build", "qemu-build", "qemu-system-x86_64")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


class Vm:
    """One QEMU process with an NVMe controller on a temporary raw image.

    QEMU connects to two sockets this object listens on: the qtest socket
    (QEMU waits for it before running anything) and a QMP socket.
    """

    DEVICE_ID = "nvme0"

    def __init__(self, qemu, model, image_size=64 << 20, serial="nhqtest0",
                 device_props="", extra_args=(), drive_opts="", image=None):
        self.qemu = qemu
        self.model = model
        self.serial = serial
        self.image_size = image_size
        self.tmp = tempfile.mkdtemp(prefix="nh-qtest-")
        # @image: a drive that outlives this QEMU (a restart after a power cut); created when
        # missing.  Its state and window files go next to it by default.
        self.image = image or os.path.join(self.tmp, "disk.img")
        if not os.path.exists(self.image):
            with open(self.image, "wb") as f:
                f.truncate(image_size)
        dev = f"{model},drive=d0,serial={serial},id={self.DEVICE_ID}"
        if model == "nvme-hybrid" and "preset=" not in device_props:
            dev += "," + TEST_KEYS
        if device_props:
            dev += "," + device_props
        qtest_path = os.path.join(self.tmp, "qtest.sock")
        qmp_path = os.path.join(self.tmp, "qmp.sock")
        listeners = []
        for path in (qtest_path, qmp_path):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.listen(1)
            s.settimeout(30)
            listeners.append(s)
        self.args = [
            qemu, "-L", "/usr/share/qemu", "-L", "/usr/share/seabios",
            "-machine", "q35", "-accel", "qtest", "-display", "none",
            "-nodefaults", "-m", f"{RAM_SIZE >> 20}M",
            "-qtest", f"unix:{qtest_path}", "-qtest-log", "none",
            "-chardev", f"socket,path={qmp_path},id=qmp0",
            "-mon", "chardev=qmp0,mode=control",
            "-drive", f"if=none,id=d0,file={self.image},format=raw{drive_opts}",
            "-device", dev, *extra_args,
        ]
        self.stderr_path = os.path.join(self.tmp, "stderr.log")
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=self._stderr, stderr=self._stderr)
        try:
            conns = []
            for s in listeners:
                try:
                    c, _ = s.accept()
                except socket.timeout as e:
                    raise QemuDied(f"QEMU did not connect: {self.stderr_text()}") from e
                c.settimeout(60)
                conns.append(c)
            self.qt = QTest(conns[0], self.proc)
            self.qmp = Qmp(conns[1], self.proc)
            self.qmp.handshake()
        except Exception:
            self.close()
            raise
        finally:
            for s in listeners:
                s.close()
        self.next_free = RAM_ALLOC_START

    def stderr_text(self):
        self._stderr.flush()
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def alive(self):
        """QEMU still runs and answers QMP."""
        if self.proc.poll() is not None:
            return False
        try:
            return self.qmp.execute("query-status")["status"] in ("running", "paused")
        except (QemuDied, RuntimeError):
            return False

    def stats(self):
        """The device's `stats` QOM property (nvme-hybrid only), decoded."""
        raw = self.qmp.execute("qom-get", path=f"/machine/peripheral/{self.DEVICE_ID}",
                               property="stats")
        return json.loads(raw)

    def alloc(self, size, align=PAGE):
        """Bump-allocate guest RAM (never freed: each test has its own VM)."""
        addr = (self.next_free + align - 1) & ~(align - 1)
        if addr + size > RAM_SIZE:
            raise MemoryError("test ran out of guest RAM")
        self.next_free = addr + size
        return addr

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for name in ("qt", "qmp"):
            conn = getattr(self, name, None)
            if conn:
                conn.sock.close()
        self._stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# --- PCI -----------------------------------------------------------------------------


class PciDevice:
    """A function on bus 0, configured through the legacy 0xcf8/0xcfc ports
    (which work without firmware; q35's MMCONFIG window is only enabled by
    the BIOS)."""

    def __init__(self, qt, devfn):
        self.qt = qt
        self.devfn = devfn

    def _addr(self, off):
        return 0x80000000 | (self.devfn << 8) | (off & 0xFC)

    def cfg_read(self, off, size=4):
        self.qt.outl(0xCF8, self._addr(off))
        port = 0xCFC + (off & 3)
        return {1: self.qt.inb, 2: self.qt.inw, 4: self.qt.inl}[size](port)

    def cfg_write(self, off, val, size=4):
        self.qt.outl(0xCF8, self._addr(off))
        port = 0xCFC + (off & 3)
        {1: self.qt.outb, 2: self.qt.outw, 4: self.qt.outl}[size](port, val)

    @classmethod
    def find(cls, qt, class_code):
        for devfn in range(256):
            dev = cls(qt, devfn)
            if dev.cfg_read(0x00) & 0xFFFF == 0xFFFF:
                continue
            if dev.cfg_read(0x08) >> 8 == class_code:
                return dev
        return None

    def map_bars(self):
        """Size every memory BAR, give it an address, enable memory decoding
        and bus mastering.  Returns {bar index: (address, size, is_64bit)}."""
        bars = {}
        lo, hi = BAR32_START, BAR64_START
        i = 0
        while i < 6:
            off = 0x10 + 4 * i
            orig = self.cfg_read(off)
            if orig & 1:  # I/O BAR: unused here
                i += 1
                continue
            is64 = (orig >> 1) & 3 == 2
            self.cfg_write(off, 0xFFFFFFFF)
            mask = self.cfg_read(off) & 0xFFFFFFF0
            if is64:
                self.cfg_write(off + 4, 0xFFFFFFFF)
                mask |= self.cfg_read(off + 4) << 32
            elif mask:
                mask |= 0xFFFFFFFF00000000
            if mask == 0:  # unimplemented BAR
                i += 2 if is64 else 1
                continue
            size = (~mask + 1) & 0xFFFFFFFFFFFFFFFF
            addr = (lo + size - 1) & ~(size - 1)
            if addr + size <= BAR32_END:
                lo = addr + size
            elif is64:
                addr = (hi + size - 1) & ~(size - 1)
                hi = addr + size
            else:
                raise RuntimeError(f"32-bit BAR{i} of {size:#x} bytes does not fit")
            self.cfg_write(off, addr & 0xFFFFFFFF)
            if is64:
                self.cfg_write(off + 4, addr >> 32)
            bars[i] = (addr, size, is64)
            i += 2 if is64 else 1
        cmd = self.cfg_read(0x04, 2)
        self.cfg_write(0x04, cmd | 0x6, 2)  # memory space + bus master
        return bars


# --- NVMe -----------------------------------------------------------------------------


class Cqe:
    """A decoded 16-byte completion queue entry (section 4.6)."""

    def __init__(self, raw):
        self.raw = raw
        self.dw0, self.dw1, self.sqhd, self.sqid, self.cid, status = \
            struct.unpack("<IIHHHH", raw)
        self.phase = status & 1
        self.sc = (status >> 1) & 0xFF
        self.sct = (status >> 9) & 0x7
        self.crd = (status >> 12) & 0x3
        self.more = (status >> 14) & 1
        self.dnr = (status >> 15) & 1

    @property
    def ok(self):
        return self.sct == SCT_GENERIC and self.sc == SC_SUCCESS

    def status(self):
        return (self.sct, self.sc)

    def __repr__(self):
        return (f"Cqe(sct={self.sct:#x}, sc={self.sc:#04x}, dnr={self.dnr}, "
                f"cid={self.cid}, sqid={self.sqid}, sqhd={self.sqhd}, dw0={self.dw0:#x})")


def sqe(opcode, nsid=0, prp1=0, prp2=0, cdw2=0, cdw3=0, mptr=0, flags=0,
        cdw10=0, cdw11=0, cdw12=0, cdw13=0, cdw14=0, cdw15=0, cid=0):
    """A 64-byte submission queue entry (section 4.2); the CID is filled in
    by Controller.submit unless given."""
    return struct.pack("<BBHIIIQQQIIIIII", opcode, flags, cid, nsid, cdw2, cdw3,
                       mptr, prp1, prp2, cdw10, cdw11, cdw12, cdw13, cdw14, cdw15)


def submit_together(c, q, cmds):
    """Place all `cmds` in q's SQ and ring the tail doorbell once."""
    cids = []
    for cmd in cmds:
        cmd = bytearray(cmd)
        q.next_cid = q.next_cid % 0xFFFE + 1
        struct.pack_into("<H", cmd, 2, q.next_cid)
        cids.append(q.next_cid)
        c.qt.memwrite(q.sq_addr + q.tail * SQE_SIZE, cmd)
        q.tail = (q.tail + 1) % q.sq_size
    c.wr32(c.sq_doorbell(q.qid), q.tail)
    return cids


def ba_pin_cmd(eid, off, slba, nlb):
    """BA_PIN (vendor admin C0h): window offset @off, LBAs [slba, slba + nlb), entry @eid."""
    return sqe(0xC0, cdw10=eid, cdw11=off, cdw12=slba & 0xFFFFFFFF, cdw13=slba >> 32,
               cdw14=nlb)


class CompletionQueue:
    """A CQ as the host sees it: where the next entry lands and its phase."""

    def __init__(self, cqid, addr, size):
        self.cqid, self.addr, self.size = cqid, addr, size
        self.head, self.phase = 0, 1
        self.done = {}  # (sqid, cid) -> Cqe reaped while waiting for another


class Queue:
    """An SQ and the CQ it completes to (which other SQs may share)."""

    def __init__(self, qid, sq_addr, sq_size, cq):
        self.qid = qid
        self.sq_addr, self.sq_size, self.tail = sq_addr, sq_size, 0
        self.cq = cq
        self.next_cid = 0


class Controller:
    def __init__(self, vm):
        self.vm = vm
        self.qt = vm.qt
        self.pci = PciDevice.find(self.qt, PCI_CLASS_NVME)
        if self.pci is None:
            raise RuntimeError("no NVMe controller (class 01:08:02) on bus 0")
        self.vendor_id = self.pci.cfg_read(0x00, 2)
        self.device_id = self.pci.cfg_read(0x02, 2)
        self.bars = self.pci.map_bars()
        self.bar0, _, self.bar0_is64 = self.bars[0]
        cap = self.cap
        self.dstrd = (cap >> 32) & 0xF
        self.mqes = cap & 0xFFFF
        self.timeout_ns = max(1, (cap >> 24) & 0xFF) * 500_000_000
        self.admin = None
        self.mdts = None

    # registers
    def rd32(self, off):
        return self.qt.readl(self.bar0 + off)

    def wr32(self, off, val):
        self.qt.writel(self.bar0 + off, val)

    def rd64(self, off):
        # Two dword reads: the spec (section 3.1) lets hosts access 64-bit
        # registers as two 32-bit halves, and some controllers only allow that.
        return self.rd32(off) | (self.rd32(off + 4) << 32)

    def wr64(self, off, val):
        self.wr32(off, val & 0xFFFFFFFF)
        self.wr32(off + 4, val >> 32)

    @property
    def cap(self):
        return self.rd64(REG_CAP)

    @property
    def cc(self):
        return self.rd32(REG_CC)

    @property
    def csts(self):
        return self.rd32(REG_CSTS)

    def sq_doorbell(self, qid):
        return DOORBELL_BASE + (2 * qid) * (4 << self.dstrd)

    def cq_doorbell(self, qid):
        return DOORBELL_BASE + (2 * qid + 1) * (4 << self.dstrd)

    # enable / disable
    def wait_csts(self, mask, value, timeout_ns=None, step_ns=1_000_000):
        """Step the virtual clock until CSTS & mask == value.  The bound is
        CAP.TO, the worst case time the spec (3.1.1) lets RDY take."""
        budget = self.timeout_ns if timeout_ns is None else timeout_ns
        waited = 0
        while True:
            csts = self.csts
            if csts & mask == value:
                return csts
            if waited >= budget:
                raise CommandTimeout(f"CSTS={csts:#x}, wanted {value:#x} in mask {mask:#x}")
            self.qt.clock_step(step_ns)
            waited += step_ns

    def disable(self):
        self.wr32(REG_CC, self.cc & ~CC_EN)
        self.wait_csts(CSTS_RDY, 0)
        self.admin = None

    def enable(self, admin_entries=64, css=0):
        """Disable, point AQA/ASQ/ACQ at fresh admin queues, enable and wait
        for CSTS.RDY (section 7.6.1, controller initialization).  @css is
        CC.CSS: 0 the NVM command set, 6 every I/O command set CAP.CSS offers."""
        if self.csts & CSTS_RDY or self.cc & CC_EN:
            self.disable()
        asq = self.vm.alloc(admin_entries * SQE_SIZE)
        acq = self.vm.alloc(admin_entries * CQE_SIZE)
        self.qt.memset(acq, admin_entries * CQE_SIZE)
        self.wr32(REG_AQA, ((admin_entries - 1) << 16) | (admin_entries - 1))
        self.wr64(REG_ASQ, asq)
        self.wr64(REG_ACQ, acq)
        # 64-byte SQEs and 16-byte CQEs (2^6, 2^4), 4 KiB pages (MPS=0).
        self.wr32(REG_CC, CC_EN | (css << CC_CSS_SHIFT) | (6 << CC_IOSQES_SHIFT) |
                  (4 << CC_IOCQES_SHIFT))
        self.wait_csts(CSTS_RDY, CSTS_RDY)
        self.admin = Queue(0, asq, admin_entries, CompletionQueue(0, acq, admin_entries))
        return self.admin

    # command submission
    def submit(self, q, cmd):
        """Copy a 64-byte command into q's SQ, ring its tail doorbell and
        return the CID used."""
        cmd = bytearray(cmd)
        cid = struct.unpack_from("<H", cmd, 2)[0]
        if cid == 0:
            q.next_cid = (q.next_cid % 0xFFFE) + 1
            cid = q.next_cid
            struct.pack_into("<H", cmd, 2, cid)
        self.qt.memwrite(q.sq_addr + q.tail * SQE_SIZE, cmd)
        q.tail = (q.tail + 1) % q.sq_size
        self.wr32(self.sq_doorbell(q.qid), q.tail)
        return cid

    def poll(self, cq):
        """Reap the next entry of `cq` if its phase bit says it is new."""
        addr = cq.addr + cq.head * CQE_SIZE
        if (self.qt.readl(addr + 12) >> 16) & 1 != cq.phase:
            return None
        cqe = Cqe(self.qt.memread(addr, CQE_SIZE))
        cq.head += 1
        if cq.head == cq.size:
            cq.head, cq.phase = 0, cq.phase ^ 1
        self.wr32(self.cq_doorbell(cq.cqid), cq.head)
        return cqe

    def wait(self, q, cid, timeout_ns=2_000_000_000, step_ns=100_000):
        """Step the virtual clock until the completion for `cid` submitted on
        `q` shows up.  Completions seen meanwhile are kept for later waits."""
        cq, key, waited = q.cq, (q.qid, cid), 0
        while key not in cq.done:
            cqe = self.poll(cq)
            if cqe is not None:
                cq.done[(cqe.sqid, cqe.cid)] = cqe
                continue
            if waited >= timeout_ns:
                raise CommandTimeout(f"no completion for CID {cid} of SQ {q.qid} "
                                     f"after {waited} ns of virtual time")
            self.qt.clock_step(step_ns)
            waited += step_ns
        return cq.done.pop(key)

    def cmd(self, q, command, **kw):
        return self.wait(q, self.submit(q, command), **kw)

    def admin_cmd(self, command, **kw):
        return self.cmd(self.admin, command, **kw)

    # data buffers and PRPs (section 4.3)
    def prps(self, buf, length):
        """PRP1/PRP2 for a physically contiguous buffer at `buf`: PRP2 is
        unused, the second page, or a PRP list (one page of entries is enough
        for the transfers tests make)."""
        first = PAGE - (buf % PAGE)
        if length <= first:
            return buf, 0
        rest = length - first
        page2 = buf + first
        if rest <= PAGE:
            return buf, page2
        entries = [page2 + i * PAGE for i in range((rest + PAGE - 1) // PAGE)]
        if len(entries) > PAGE // 8:
            raise ValueError("transfer needs a chained PRP list")
        plist = self.vm.alloc(PAGE)
        self.qt.memwrite(plist, struct.pack(f"<{len(entries)}Q", *entries))
        return buf, plist

    def dma_buffer(self, length, data=None, offset=0):
        """A guest RAM buffer of `length` bytes starting `offset` bytes into a
        page, filled with `data` or zeroed."""
        base = self.vm.alloc(length + offset + PAGE)
        buf = base + offset
        if data is None:
            self.qt.memset(buf, length)
        else:
            self.qt.memwrite(buf, data)
        return buf

    # admin helpers
    def identify(self, cns, nsid=0, cntid=0):
        buf = self.dma_buffer(PAGE)
        cqe = self.admin_cmd(sqe(ADM_IDENTIFY, nsid=nsid, prp1=buf,
                                 cdw10=cns | (cntid << 16)))
        return cqe, self.qt.memread(buf, PAGE)

    def identify_ctrl(self):
        cqe, data = self.identify(CNS_CTRL)
        if not cqe.ok:
            raise RuntimeError(f"Identify Controller failed: {cqe}")
        ident = IdCtrl(data)
        self.mdts = ident.mdts
        return ident

    def identify_ns(self, nsid=1):
        cqe, data = self.identify(CNS_NS, nsid=nsid)
        if not cqe.ok:
            raise RuntimeError(f"Identify Namespace failed: {cqe}")
        return IdNs(data)

    def get_log_page(self, lid, length, nsid=0xFFFFFFFF, lsp=0, offset=0):
        buf = self.dma_buffer(length)
        numd = length // 4 - 1
        prp1, prp2 = self.prps(buf, length)
        cqe = self.admin_cmd(sqe(ADM_GET_LOG_PAGE, nsid=nsid, prp1=prp1, prp2=prp2,
                                 cdw10=lid | (lsp << 8) | ((numd & 0xFFFF) << 16),
                                 cdw11=numd >> 16, cdw12=offset & 0xFFFFFFFF,
                                 cdw13=offset >> 32))
        return cqe, self.qt.memread(buf, length)

    def get_features(self, fid, sel=0, nsid=0, cdw11=0):
        return self.admin_cmd(sqe(ADM_GET_FEATURES, nsid=nsid,
                                  cdw10=fid | (sel << 8), cdw11=cdw11))

    def set_features(self, fid, cdw11, nsid=0, save=False, prp1=0):
        return self.admin_cmd(sqe(ADM_SET_FEATURES, nsid=nsid, prp1=prp1,
                                  cdw10=fid | (int(save) << 31), cdw11=cdw11))

    def create_cq(self, qid, entries, addr=None, ien=False, vector=0, pc=True):
        if addr is None:
            addr = self.vm.alloc(entries * CQE_SIZE)
            self.qt.memset(addr, entries * CQE_SIZE)
        cqe = self.admin_cmd(sqe(ADM_CREATE_CQ, prp1=addr,
                                 cdw10=((entries - 1) & 0xFFFF) << 16 | qid,
                                 cdw11=(vector << 16) | (int(ien) << 1) | int(pc)))
        return cqe, addr

    def create_sq(self, qid, entries, cqid, addr=None, prio=0, pc=True):
        if addr is None:
            addr = self.vm.alloc(entries * SQE_SIZE)
        cqe = self.admin_cmd(sqe(ADM_CREATE_SQ, prp1=addr,
                                 cdw10=((entries - 1) & 0xFFFF) << 16 | qid,
                                 cdw11=(cqid << 16) | (prio << 1) | int(pc)))
        return cqe, addr

    def delete_sq(self, qid):
        return self.admin_cmd(sqe(ADM_DELETE_SQ, cdw10=qid))

    def delete_cq(self, qid):
        return self.admin_cmd(sqe(ADM_DELETE_CQ, cdw10=qid))

    def create_io_queue(self, qid, entries=32):
        """Create CQ `qid` and SQ `qid` on it; raises if either fails.
        Interrupts stay off: completions are found by polling."""
        cqe, cq_addr = self.create_cq(qid, entries)
        if not cqe.ok:
            raise RuntimeError(f"Create I/O CQ {qid} failed: {cqe}")
        cqe, sq_addr = self.create_sq(qid, entries, qid)
        if not cqe.ok:
            raise RuntimeError(f"Create I/O SQ {qid} failed: {cqe}")
        return Queue(qid, sq_addr, entries, CompletionQueue(qid, cq_addr, entries))

    # NVM I/O helpers
    def rw(self, q, opcode, slba, nblocks, buf, length, nsid=1, cdw12_flags=0):
        prp1, prp2 = self.prps(buf, length)
        return self.cmd(q, sqe(opcode, nsid=nsid, prp1=prp1, prp2=prp2,
                               cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                               cdw12=((nblocks - 1) & 0xFFFF) | cdw12_flags))

    def write(self, q, slba, data, lba_size=512, nsid=1):
        buf = self.dma_buffer(len(data), data)
        return self.rw(q, IO_WRITE, slba, len(data) // lba_size, buf, len(data), nsid)

    def read(self, q, slba, nblocks, lba_size=512, nsid=1):
        length = nblocks * lba_size
        buf = self.dma_buffer(length)
        cqe = self.rw(q, IO_READ, slba, nblocks, buf, length, nsid)
        return cqe, self.qt.memread(buf, length)

    def healthy(self):
        """The controller still answers Identify Controller and is not in
        Controller Fatal Status."""
        if self.csts & CSTS_CFS:
            return False
        cqe, data = self.identify(CNS_CTRL)
        return cqe.ok and IdCtrl(data).sn.strip() != ""


def _ascii(b):
    return b.decode("ascii", errors="replace")


class IdCtrl:
    """The Identify Controller fields tests look at (Figure 247 of 1.4)."""

    def __init__(self, d):
        self.raw = d
        self.vid, self.ssvid = struct.unpack_from("<HH", d, 0)
        self.sn = _ascii(d[4:24])
        self.mn = _ascii(d[24:64])
        self.fr = _ascii(d[64:72])
        self.mdts = d[77]
        self.cntlid = struct.unpack_from("<H", d, 78)[0]
        self.ver = struct.unpack_from("<I", d, 80)[0]
        self.oacs = struct.unpack_from("<H", d, 256)[0]
        self.acl, self.aerl, self.frmw, self.lpa, self.elpe = d[258:263]
        self.sqes, self.cqes = d[512], d[513]
        self.maxcmd = struct.unpack_from("<H", d, 514)[0]
        self.nn = struct.unpack_from("<I", d, 516)[0]
        self.oncs = struct.unpack_from("<H", d, 520)[0]
        self.vwc = d[525]
        self.sgls = struct.unpack_from("<I", d, 536)[0]


class IdNs:
    """The Identify Namespace fields tests look at (Figure 249 of 1.4)."""

    def __init__(self, d):
        self.raw = d
        self.nsze, self.ncap, self.nuse = struct.unpack_from("<QQQ", d, 0)
        self.nsfeat, self.nlbaf, self.flbas = d[24], d[25], d[26]
        self.npwg, self.npwa, self.npdg, self.npda, self.nows = \
            struct.unpack_from("<HHHHH", d, 64)
        self.lbaf = [struct.unpack_from("<I", d, 128 + 4 * i)[0] for i in range(16)]

    @property
    def lba_size(self):
        return 1 << ((self.lbaf[self.flbas & 0xF] >> 16) & 0xFF)

    @property
    def metadata_size(self):
        return self.lbaf[self.flbas & 0xF] & 0xFFFF

