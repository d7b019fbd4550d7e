"""200 seeded random admin and I/O commands; afterwards QEMU still runs,
the controller is not in Controller Fatal Status, answers Identify, and
survives a reset.

The fields are random, but the addresses the controller may DMA into are
not: this process keeps its own queues and buffers in guest RAM, and a
random PRP that hit them would break the test harness, not the device.
So every data pointer lands in a scratch area, outside RAM, or in page 0,
and PRP lists are confined to one "list" area whose entries are rewritten
before every command and point only at safe places (its chain pointers
lead back into the list area, never into data the device wrote).  PSDT is
kept at PRPs for the same reason (an SGL read from scratch could point
anywhere), and Delete I/O SQ never names SQ 1, which the I/O half uses.
"""

import random
import struct

import pytest

import nvme_qtest as nq

COMMANDS = 200
OUTSIDE_RAM = (0x7F_0000_0000, 0xFFFF_FFFF_FFFF_F000)

# Opcodes both devices implement come up four times as often as the
# optional ones, so that most commands get past the opcode check.
ADMIN_CORE = [0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0A, 0x0C]
ADMIN_OPTIONAL = [0x0D, 0x10, 0x11, 0x14, 0x15, 0x18, 0x19, 0x1A, 0x1C, 0x1D,
                  0x1E, 0x7F, 0x80, 0x81, 0x82, 0x84, 0x86]
IO_CORE = [0x00, 0x01, 0x02, 0x05, 0x08, 0x09]
IO_OPTIONAL = [0x04, 0x0C, 0x0D, 0x0E, 0x11, 0x15, 0x19]
# Doorbell Buffer Config moves the doorbells into host memory: a protocol
# change this host would have to follow, not a malformed command.
NEVER = {0x7C}


class Fuzzer:
    def __init__(self, nvme, ns, ioq, seed):
        self.nvme, self.ns, self.ioq = nvme, ns, ioq
        self.rng = random.Random(seed)
        self.data = nvme.vm.alloc(64 * nq.PAGE)
        self.lists = nvme.vm.alloc(4 * nq.PAGE)
        self.log = []

    def dword(self):
        r = self.rng
        return r.choice([0, r.randrange(256), r.getrandbits(32), 0xFFFFFFFF])

    def data_ptr(self):
        r = self.rng
        return r.choice([self.data + r.randrange(64) * nq.PAGE,
                         self.data + r.randrange(64) * nq.PAGE + r.randrange(nq.PAGE),
                         0, *OUTSIDE_RAM])

    def list_ptr(self):
        """PRP2: a data pointer or, for longer transfers, a PRP list pointer,
        so it may only point into the list area (or nowhere)."""
        r = self.rng
        return r.choice([self.lists + r.randrange(4) * nq.PAGE,
                         self.lists + r.randrange(4) * nq.PAGE + 8 * r.randrange(512),
                         0, *OUTSIDE_RAM])

    def refill_lists(self):
        """Entries are data pointers, except the last of each page, which a
        controller follows as the pointer to the next list page: those point
        back into the list area, so a chain never reads device-written data."""
        r = self.rng
        entries = []
        for i in range(4 * 512):
            if i % 512 == 511:
                entries.append(r.choice([self.lists + r.randrange(4) * nq.PAGE,
                                         0, *OUTSIDE_RAM]))
            else:
                entries.append(self.data_ptr())
        self.nvme.qt.memwrite(self.lists, struct.pack("<2048Q", *entries))

    def admin_fields(self):
        """A plausible admin command: a known opcode with fields in range."""
        r = self.rng
        opcode = r.choice(ADMIN_CORE if r.random() < 0.8 else ADMIN_OPTIONAL)
        qid = r.randrange(2, 9)
        entries = r.choice([2, 8, 64, 1024])
        dw = {
            nq.ADM_DELETE_SQ: [qid],
            nq.ADM_DELETE_CQ: [qid],
            nq.ADM_CREATE_SQ: [(entries - 1) << 16 | qid,
                               r.randrange(1, 9) << 16 | r.randrange(8)],
            nq.ADM_CREATE_CQ: [(entries - 1) << 16 | qid, r.randrange(4)],
            nq.ADM_IDENTIFY: [r.randrange(4)],
            nq.ADM_GET_LOG_PAGE: [r.randrange(1, 4) | r.randrange(128) << 16],
            nq.ADM_ABORT: [r.randrange(2) | r.randrange(1, 300) << 16],
            nq.ADM_GET_FEATURES: [r.randrange(1, 16) | r.randrange(4) << 8],
            nq.ADM_SET_FEATURES: [r.randrange(1, 16), self.dword()],
        }.get(opcode, [])
        return opcode, self.nvme.admin, dw + [0] * (6 - len(dw))

    def io_fields(self):
        """A plausible NVM command: a known opcode on LBAs in range."""
        r = self.rng
        opcode = r.choice(IO_CORE if r.random() < 0.8 else IO_OPTIONAL)
        slba = r.randrange(self.ns.nsze - 256)
        return opcode, self.ioq, [slba & 0xFFFFFFFF, slba >> 32, r.randrange(256), 0, 0, 0]

    def nsid(self):
        r = self.rng
        return r.choice([0, 2, 0xFFFFFFFF, r.getrandbits(32)])

    def mutate(self, fields):
        """Replace one to three fields with random values: mostly-valid
        commands get past the first check and reach the deeper ones."""
        r = self.rng
        for name in r.sample(sorted(set(fields) - {"q"}), r.randrange(1, 4)):
            if name == "opcode":
                fields[name] = r.randrange(256)
            elif name == "nsid":
                fields[name] = self.nsid()
            elif name == "flags":
                fields[name] = r.randrange(4)  # FUSE only; PSDT stays PRP
            elif name == "prp2":
                fields[name] = self.list_ptr()
            elif name in ("prp1", "mptr"):
                fields[name] = self.data_ptr()
            else:
                fields[name] = self.dword()

    def run_one(self, i):
        r = self.rng
        opcode, q, dw = self.admin_fields() if r.random() < 0.5 else self.io_fields()
        fields = dict(opcode=opcode, nsid=1 if q.qid else 0, flags=0,
                      prp1=self.data_ptr(), prp2=self.list_ptr(), mptr=0,
                      **{f"cdw{10 + k}": v for k, v in enumerate(dw)})
        fields["q"] = q
        if r.random() < 0.7:
            self.mutate(fields)
        fields.pop("q")
        if fields["opcode"] in NEVER:
            fields["opcode"] = nq.ADM_IDENTIFY
        if q.qid == 0 and fields["opcode"] == nq.ADM_DELETE_SQ and fields["cdw10"] & 0xFFFF == 1:
            fields["cdw10"] |= 0x100  # keep SQ 1: the I/O half of the fuzz uses it
        cmd = nq.sqe(**fields)
        self.refill_lists()
        cid = self.nvme.submit(q, cmd)
        try:
            # AERs and aborted commands may legitimately never complete.
            cqe = self.nvme.wait(q, cid, timeout_ns=50_000_000, step_ns=1_000_000)
            result = repr(cqe)
        except nq.CommandTimeout:
            result = "no completion within 50 ms"
        self.log.append(f"#{i} sq{q.qid} {cmd.hex()} -> {result}")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_commands(vm, nvme, ns, ioq, seed):
    fuzz = Fuzzer(nvme, ns, ioq, seed)
    for i in range(COMMANDS):
        fuzz.run_one(i)
        assert vm.proc.poll() is None, "QEMU exited; last commands:\n" + \
            "\n".join(fuzz.log[-10:]) + "\n" + vm.stderr_text()
    history = "\n".join(fuzz.log[-20:])
    assert vm.alive(), f"QEMU stopped running; last commands:\n{history}"
    assert not nvme.csts & nq.CSTS_CFS, f"Controller Fatal Status; last commands:\n{history}"
    assert nvme.healthy(), f"no answer to Identify; last commands:\n{history}"
    # A reset clears whatever state the fuzz left behind.
    nvme.disable()
    nvme.enable()
    assert nvme.healthy()
    assert nvme.identify_ctrl().sn.strip() == vm.serial
