"""scripts/crashpoints' host: the device under qtest (tests/qtest/nvme_qtest.py) driven as a driver
would, every command's submission and acknowledgement recorded, and the block contents that name
their writer and version."""
import functools
import importlib.util
import os
import struct
import zlib

from nh.paths import REPO


def _load_qtest():
    """tests/qtest/nvme_qtest.py, the qtest driver of the device tests, whose controller this
    campaign drives: loaded from its file, as tests/qtest is no package."""
    spec = importlib.util.spec_from_file_location(
        "nvme_qtest", os.path.join(REPO, "tests", "qtest", "nvme_qtest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nq = _load_qtest()

QOM = "/machine/peripheral/" + nq.Vm.DEVICE_ID
LBA = 512
IMAGE_SIZE = 32 << 20
MAGIC = b"NHCRASH1"
ZERO = "zero"
BA_PIN, BA_INFO, BA_SYNC, BA_READ_DMA, BA_FLUSH = 0xC0, 0xC2, 0xC4, 0xC6, 0xC8
REG_PMRCTL, REG_PMRSTS = 0xE04, 0xE08
PPND = 1 << 31
FUA = 1 << 30
RESTORED, RECOVERED = 1, 2
WINDOW_SIZE = 1 << 20
HANG_S = 60
LOSS_CLASSES = ("prefill", "fua", "flush", "nonvolatile", "ba", "torn")


class CampaignError(Exception):
    """The campaign itself failed: not the device's fault (or not only)."""


@functools.lru_cache(maxsize=1 << 16)
def pattern(wid, lba):
    """The 512 bytes version @wid writes to @lba: magic, LBA, version, filler, CRC-32."""
    head = MAGIC + struct.pack("<QI", lba, wid)
    fill = (struct.pack("<IQ", (wid * 2654435761) & 0xFFFFFFFF, lba ^ 0x5A5A5A5A) * 41)[:LBA - 24]
    body = head + fill
    return body + struct.pack("<I", zlib.crc32(body))


def patterns(wid, slba, nlb):
    return b"".join(pattern(wid, lba) for lba in range(slba, slba + nlb))


def decode(block, lba):
    """What an LBA holds: a version number, ZERO, or the raw bytes (no version of ours)."""
    if block[:8] == MAGIC and int.from_bytes(block[8:16], "little") == lba and \
            zlib.crc32(block[:-4]) == int.from_bytes(block[-4:], "little"):
        return int.from_bytes(block[16:20], "little")
    if block == bytes(len(block)):
        return ZERO
    return bytes(block)


# ------------------------------------------------------------------------------ the host

class Cmd:
    """One command as the host saw it: submitted (host sequence number), acknowledged."""
    __slots__ = ("kind", "sub", "ack", "status", "args", "nbytes")

    def __init__(self, kind, nbytes=0, **args):
        self.kind, self.args, self.nbytes = kind, args, nbytes
        self.sub = self.ack = self.status = None

    @property
    def ok(self):
        return self.status == (0, 0)

    def __repr__(self):
        return "%s%s sub=%s ack=%s status=%s" % (self.kind, self.args, self.sub, self.ack,
                                                  self.status)


PREFILL = Cmd("prefill")
PREFILL.sub, PREFILL.ack, PREFILL.status = 0, 0, (0, 0)


class Host:
    """The qtest host of one QEMU: submits, reaps, and keeps the record the oracle judges.

    Every step the host sees takes the next sequence number: a command is submitted when its
    sequence number is taken, just before the doorbell is rung; acknowledged when its CQE has
    been read (before the CQ head doorbell).  A CQE posted but not read before the cut counts
    as not acknowledged."""

    def __init__(self, vm):
        self.vm = vm
        self.qt = vm.qt
        self.c = None
        self.seq = 0
        self.inflight = {}          # (sqid, cid) -> Cmd
        self.cmds = []
        self.versions = {}          # lba -> [(content key, Cmd)]
        self.flushes = []           # NVMe Flush commands
        self.problems = []          # what the workload saw wrong while it ran
        self.on_ack = None
        self.vm_time = 0

    def tick(self):
        self.seq += 1
        return self.seq

    def setup(self, window=False):
        self.c = nq.Controller(self.vm)
        self.c.enable()
        self.c.id = self.c.identify_ctrl()
        self.ioq = self.c.create_io_queue(1, 64)
        self.cqs = [self.c.admin.cq, self.ioq.cq]
        if window:
            self.c.wr32(REG_PMRCTL, 1)
            self.bar1 = self.c.bars[1][0]

    # submission and completion
    def submit(self, q, items):
        """Place [(sqe, Cmd)] in q's SQ, then ring its tail doorbell once."""
        for raw, cmd in items:
            raw = bytearray(raw)
            q.next_cid = q.next_cid % 0xFFFE + 1
            struct.pack_into("<H", raw, 2, q.next_cid)
            self.qt.memwrite(q.sq_addr + q.tail * nq.SQE_SIZE, raw)
            q.tail = (q.tail + 1) % q.sq_size
            self.inflight[(q.qid, q.next_cid)] = cmd
        for _, cmd in items:
            cmd.sub = self.tick()
            self.cmds.append(cmd)
        self.c.wr32(self.c.sq_doorbell(q.qid), q.tail)
        return [cmd for _, cmd in items]

    def reap(self):
        for cq in self.cqs:
            reaped = False
            while True:
                raw = self.qt.memread(cq.addr + cq.head * nq.CQE_SIZE, nq.CQE_SIZE)
                cqe = nq.Cqe(raw)
                if cqe.phase != cq.phase:
                    break
                cq.head += 1
                if cq.head == cq.size:
                    cq.head, cq.phase = 0, cq.phase ^ 1
                cmd = self.inflight.pop((cqe.sqid, cqe.cid), None)
                if cmd is None:
                    raise CampaignError("completion for a command never submitted: %r" % cqe)
                cmd.ack = self.tick()
                cmd.status = (cqe.sct, cqe.sc)
                if self.on_ack:
                    self.on_ack(cmd)
                reaped = True
            if reaped:
                self.c.wr32(self.c.cq_doorbell(cq.cqid), cq.head)

    def step(self, ns=None):
        """Advance the virtual clock: to the next timer (@ns None), or by @ns."""
        try:
            self.vm_time = self.qt.clock_step(ns)
        except RuntimeError:        # no timer pending: a little time anyway
            self.vm_time = self.qt.clock_step(10_000)

    def wait(self, cmds, budget_ns=20_000_000_000):
        start = self.vm_time
        while True:
            self.reap()
            if all(c.ack is not None for c in cmds):
                return
            self.step()
            if self.vm_time - start > budget_ns:
                raise nq.CommandTimeout("no completion for %s" % [c for c in cmds if c.ack is None])

    def wait_all(self):
        self.wait(list(self.inflight.values()))

    def wait_io_below(self, n):
        """Wait for the oldest I/O commands until fewer than @n are in flight."""
        while sum(1 for (qid, _) in self.inflight if qid) >= n:
            oldest = next(c for (qid, _), c in self.inflight.items() if qid)
            self.wait([oldest])

    # NVM commands
    def _rw_sqe(self, opcode, slba, nlb, prp1, prp2, flags=0):
        return nq.sqe(opcode, nsid=1, prp1=prp1, prp2=prp2, cdw10=slba & 0xFFFFFFFF,
                      cdw11=slba >> 32, cdw12=((nlb - 1) & 0xFFFF) | flags)

    def write_item(self, wid, slba, nlb, fua):
        data = patterns(wid, slba, nlb)
        buf = self.c.dma_buffer(len(data), data)
        prp1, prp2 = self.c.prps(buf, len(data))
        cmd = Cmd("write", nbytes=nlb * LBA, wid=wid, slba=slba, nlb=nlb, fua=fua)
        for lba in range(slba, slba + nlb):
            self.versions.setdefault(lba, []).append((wid, cmd))
        return self._rw_sqe(nq.IO_WRITE, slba, nlb, prp1, prp2, FUA if fua else 0), cmd

    def read_item(self, slba, nlb, buf=None):
        """A Read of [slba, slba+nlb) into guest RAM (or @buf, e.g. the window)."""
        if buf is None:
            buf = self.vm.alloc(nlb * LBA)
        prp1, prp2 = self.c.prps(buf, nlb * LBA)
        cmd = Cmd("read", slba=slba, nlb=nlb, buf=buf)
        return self._rw_sqe(nq.IO_READ, slba, nlb, prp1, prp2), cmd

    def flush_item(self):
        cmd = Cmd("flush")
        self.flushes.append(cmd)
        return nq.sqe(nq.IO_FLUSH, nsid=1), cmd

    def check_read(self, cmd):
        """An acknowledged Read returned a version of each LBA ever submitted (or the
        prefill): anything else is a problem, not a loss (nothing was cut yet)."""
        if not cmd.ok or cmd.args["buf"] >= nq.RAM_SIZE:
            return
        data = self.qt.memread(cmd.args["buf"], cmd.args["nlb"] * LBA)
        for i in range(cmd.args["nlb"]):
            lba = cmd.args["slba"] + i
            got = decode(data[i * LBA:(i + 1) * LBA], lba)
            if not self.known(lba, got):
                self.problems.append("read of LBA %d returned %s, no version of it"
                                     % (lba, got if not isinstance(got, bytes) else "other bytes"))

    def known(self, lba, key):
        """Is @key the prefill's or a version submitted to @lba?"""
        return key == 0 or key in [k for k, _ in self.versions.get(lba, [])]

    # BA commands on the admin queue
    def ba_item(self, opcode, kind, eid, nbytes=0, **kw):
        cdw = dict(cdw10=eid)
        if opcode == BA_PIN:
            cdw.update(cdw11=kw["off"], cdw12=kw["slba"] & 0xFFFFFFFF, cdw13=kw["slba"] >> 32,
                       cdw14=kw["nlb"])
        if opcode == BA_READ_DMA:
            cdw.update(cdw11=kw["off"], cdw12=kw["len"])
        prp1 = prp2 = 0
        if "buf" in kw:
            prp1, prp2 = self.c.prps(kw["buf"], kw["len"])
        return nq.sqe(opcode, prp1=prp1, prp2=prp2, **cdw), Cmd(kind, nbytes=nbytes, eid=eid,
                                                                  **kw)

    def smart_unsafe_shutdowns(self):
        cqe, log = self.c.get_log_page(0x02, 512)
        if not cqe.ok:
            raise CampaignError("SMART log: %r" % cqe)
        return int.from_bytes(log[144:160], "little")

    def read_lbas(self, slba, nlb, chunk=128):
        """The contents of [slba, slba+nlb), read back by NVMe Reads (used when judging)."""
        out = []
        for s in range(slba, slba + nlb, chunk):
            n = min(chunk, slba + nlb - s)
            cqe, data = self.c.read(self.ioq, s, n)
            if not cqe.ok:
                raise CampaignError("read of LBAs %d+%d after the restart: %r" % (s, n, cqe))
            out.append(data)
        return b"".join(out)
