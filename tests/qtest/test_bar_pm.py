"""The BAR1 persistent-memory window (docs/bar-pm.md), without a guest: BAR
and PMR registers, the BA_* vendor admin commands, bad input (each gets a
named status and QEMU keeps running), block writes to pinned LBAs, and the
three kinds of power loss with the recovery manager's integrity checks."""

import os
import struct
import subprocess
import zlib

import pytest

import nvme_qtest as nq
from conftest import IMAGE_SIZE, MODEL, SERIAL, assert_status, assert_still_works

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's BAR1 window")

G, C, MEDIA = nq.SCT_GENERIC, nq.SCT_CMD_SPECIFIC, 2
BA_PIN, BA_INFO, BA_SYNC, BA_READ_DMA, BA_FLUSH = 0xC0, 0xC2, 0xC4, 0xC6, 0xC8
SC_BA_INVALID_ENTRY, SC_BA_ENTRY_PINNED, SC_BA_NOT_PINNED = 0xC0, 0xC1, 0xC2
SC_BA_WINDOW_RANGE, SC_BA_OVERLAP = 0xC3, 0xC4
SC_DATA_TRANSFER_ERROR, SC_ACCESS_DENIED, SC_UNRECOVERED_READ = 0x04, 0x86, 0x81
REG_PMRCAP, REG_PMRCTL, REG_PMRSTS, REG_PMREBS, REG_PMRSWTP = 0xE00, 0xE04, 0xE08, 0xE0C, 0xE10
WINDOW = 8 << 20
ENTRIES = 8
LBA = 512
META = 64 * 1024       # header + entry table before the window in the ba-file
NEW, RESTORED, RECOVERED, CORRUPT, TORN = range(5)


class Ba:
    """The controller plus its window: BA_* commands and BAR1 access."""

    def __init__(self, vm):
        self.vm = vm
        self.c = nq.Controller(vm)
        self.c.enable()
        self.c.id = self.c.identify_ctrl()
        self.bar1, self.bar1_size, self.bar1_is64 = self.c.bars[1]

    def enable(self):
        self.c.wr32(REG_PMRCTL, 1)

    def pin(self, eid, off, slba, nlb):
        return self.c.admin_cmd(nq.sqe(BA_PIN, cdw10=eid, cdw11=off, cdw12=slba & 0xFFFFFFFF,
                                       cdw13=slba >> 32, cdw14=nlb))

    def sync(self, eid):
        return self.c.admin_cmd(nq.sqe(BA_SYNC, cdw10=eid))

    def flush(self, eid):
        return self.c.admin_cmd(nq.sqe(BA_FLUSH, cdw10=eid))

    def info(self, eid):
        buf = self.c.dma_buffer(64)
        cqe = self.c.admin_cmd(nq.sqe(BA_INFO, prp1=buf, cdw10=eid))
        raw = self.vm.qt.memread(buf, 64)
        keys = ("eid", "state", "restore", "entries", "offset", "slba", "nlb", "length",
                "window", "lba_size", "dumps", "dump_ns")
        return cqe, dict(zip(keys, struct.unpack("<HBBIQQQQQIIQ", raw)))

    def read_dma(self, eid, off, length, prp1=None):
        buf = self.c.dma_buffer(length)
        p1, p2 = self.c.prps(buf, length)
        cqe = self.c.admin_cmd(nq.sqe(BA_READ_DMA, prp1=p1 if prp1 is None else prp1, prp2=p2,
                                      cdw10=eid, cdw11=off, cdw12=length))
        return cqe, self.vm.qt.memread(buf, length)

    def wwrite(self, off, data):
        self.vm.qt.memwrite(self.bar1 + off, data)

    def wread(self, off, length):
        return self.vm.qt.memread(self.bar1 + off, length)


def start(qemu_binary, props=""):
    return nq.Vm(qemu_binary, MODEL, image_size=IMAGE_SIZE, serial=SERIAL, device_props=props)


@pytest.fixture
def ba(vm):
    b = Ba(vm)
    b.enable()
    return b


def test_bar1_and_pmr_registers(vm):
    b = Ba(vm)
    assert b.bar1_is64 and b.bar1_size == WINDOW
    assert b.c.pci.cfg_read(0x14) & 0xF == 0xC, "BAR1: 64-bit prefetchable memory"
    assert (b.c.cap >> 56) & 1, "CAP.PMRS"
    pmrcap = b.c.rd32(REG_PMRCAP)
    assert (pmrcap >> 3) & 1 and (pmrcap >> 4) & 1, "PMRCAP.RDS and WDS"
    assert (pmrcap >> 5) & 7 == 1, "PMRCAP.BIR = 1"
    assert (pmrcap >> 10) & 0xF & 2, "PMRCAP.PMRWBM: a PMRSTS read is the write barrier"
    assert b.c.rd32(REG_PMRSTS) >> 8 & 1, "PMRSTS.NRDY while PMRCTL.EN = 0"
    b.enable()
    assert b.c.rd32(REG_PMRCTL) == 1
    sts = b.c.rd32(REG_PMRSTS)
    assert not sts >> 8 & 1 and (sts >> 9) & 7 == 0, f"ready and healthy: {sts:#x}"
    b.wwrite(12345, b"hello, window")
    assert b.wread(12345, 13) == b"hello, window"
    # disabled: the window no longer answers
    b.c.wr32(REG_PMRCTL, 0)
    assert b.wread(12345, 13) != b"hello, window"
    b.enable()
    assert b.wread(12345, 13) == b"hello, window"


def test_pin_sync_flush(vm, ba):
    ioq = ba.c.create_io_queue(1, 16)
    old = bytes(range(256)) * 16                     # 8 LBAs
    assert ba.c.write(ioq, 100, old).ok
    cqe = ba.pin(0, 4096, 100, 8)
    assert cqe.ok, cqe
    assert ba.wread(4096, len(old)) == old, "BA_PIN loads the LBAs' data into the window"
    cqe, info = ba.info(0)
    assert cqe.ok and info["state"] == 1 and info["offset"] == 4096
    assert (info["slba"], info["nlb"], info["length"]) == (100, 8, 4096)
    assert (info["entries"], info["window"], info["lba_size"]) == (ENTRIES, WINDOW, LBA)

    new = b"\xA5" * 777
    ba.wwrite(4096 + 3, new)
    cqe, data = ba.read_dma(0, 3, 777)
    assert cqe.ok and data == new, "BA_READ_DMA copies the window"
    # block writes to pinned LBAs are refused; reads still see the LBAs
    assert_status(ba.c.write(ioq, 104, b"x" * 512), MEDIA, SC_ACCESS_DENIED, "pinned LBA")
    cqe, data = ba.c.read(ioq, 100, 8)
    assert cqe.ok and data == old, "before BA_SYNC the LBAs hold the old data"
    assert ba.sync(0).ok
    cqe, data = ba.c.read(ioq, 100, 8)
    assert data == old[:3] + new + old[780:], "BA_SYNC wrote the window to the LBAs"
    assert ba.info(0)[1]["state"] == 1, "still pinned after BA_SYNC"

    # nor Write Zeroes, nor Deallocate
    assert_status(ba.c.cmd(ioq, nq.sqe(nq.IO_WRITE_ZEROES, nsid=1, cdw10=107, cdw12=0)),
                  MEDIA, SC_ACCESS_DENIED, "Write Zeroes of a pinned LBA")
    ranges = ba.c.dma_buffer(16, struct.pack("<IIQ", 0, 4, 98))
    assert_status(ba.c.cmd(ioq, nq.sqe(nq.IO_DSM, nsid=1, prp1=ranges, cdw10=0, cdw11=4)),
                  MEDIA, SC_ACCESS_DENIED, "Deallocate of pinned LBAs")
    ba.wwrite(4096, b"last")
    assert ba.flush(0).ok
    assert ba.info(0)[1]["state"] == 0, "BA_FLUSH releases the entry"
    cqe, data = ba.c.read(ioq, 100, 1)
    assert data[:4] == b"last"
    assert ba.c.write(ioq, 104, b"x" * 512).ok, "released LBAs take block writes again"
    s = vm.stats()
    assert s["host"]["write_bytes"] >= 2 * 4096 and s["host"]["read_bytes"] >= 4096


BAD = [
    # (what, command builder, expected (sct, sc))
    ("entry id out of range", lambda b: b.pin(ENTRIES, 0, 0, 1), (C, SC_BA_INVALID_ENTRY)),
    ("entry id 0xffffffff", lambda b: b.sync(0xFFFFFFFF), (C, SC_BA_INVALID_ENTRY)),
    ("info of a bad entry", lambda b: b.info(ENTRIES)[0], (C, SC_BA_INVALID_ENTRY)),
    ("window range beyond BAR1", lambda b: b.pin(1, WINDOW - 512, 0, 2), (C, SC_BA_WINDOW_RANGE)),
    ("window offset beyond BAR1", lambda b: b.pin(1, 0xFFFFFFFF, 0, 1), (C, SC_BA_WINDOW_RANGE)),
    ("zero LBAs", lambda b: b.pin(1, 0, 0, 0), (C, SC_BA_WINDOW_RANGE)),
    ("more LBAs than the window", lambda b: b.pin(1, 0, 0, 0xFFFFFFFF), (C, SC_BA_WINDOW_RANGE)),
    ("LBA range beyond the namespace",
     lambda b: b.pin(1, 0, IMAGE_SIZE // LBA - 1, 2), (G, nq.SC_LBA_OUT_OF_RANGE)),
    ("LBA beyond 2^64", lambda b: b.pin(1, 0, 2**64 - 1, 2), (G, nq.SC_LBA_OUT_OF_RANGE)),
    ("window overlap", lambda b: b.pin(1, 4096 + 512, 5000, 1), (C, SC_BA_OVERLAP)),
    ("LBA overlap", lambda b: b.pin(1, 1 << 20, 107, 4), (C, SC_BA_OVERLAP)),
    ("pin of a pinned entry", lambda b: b.pin(0, 1 << 20, 5000, 1), (C, SC_BA_ENTRY_PINNED)),
    ("sync of a free entry", lambda b: b.sync(1), (C, SC_BA_NOT_PINNED)),
    ("flush of a free entry", lambda b: b.flush(1), (C, SC_BA_NOT_PINNED)),
    ("read-dma of a free entry", lambda b: b.read_dma(1, 0, 8)[0], (C, SC_BA_NOT_PINNED)),
    ("read-dma beyond the entry", lambda b: b.read_dma(0, 4000, 200)[0], (C, SC_BA_WINDOW_RANGE)),
    ("read-dma of 0 bytes", lambda b: b.read_dma(0, 0, 0)[0], (G, nq.SC_INVALID_FIELD)),
    ("read-dma to an unmapped address",
     lambda b: b.read_dma(0, 0, 64, prp1=0xFFFF_FFFF_F000)[0], (G, SC_DATA_TRANSFER_ERROR)),
    ("read-dma to a misaligned PRP",
     lambda b: b.read_dma(0, 0, 64, prp1=0x100001)[0], (G, nq.SC_PRP_OFFSET_INVALID)),
]


@pytest.mark.parametrize("what,cmd,want", BAD, ids=[b[0] for b in BAD])
def test_bad_input(vm, ba, what, cmd, want):
    assert ba.pin(0, 4096, 100, 8).ok        # LBAs 100..107 at window 4096..8191
    assert_status(cmd(ba), *want, what)
    assert_still_works(vm, ba.c)
    assert ba.info(0)[1]["state"] == 1, "the good entry is untouched"


def test_no_window(qemu_binary):
    vm = start(qemu_binary, "ba-size=0")
    try:
        c = nq.Controller(vm)
        c.enable()
        assert 1 not in c.bars and not (c.cap >> 56) & 1 and c.rd32(REG_PMRCAP) == 0
        assert_status(c.admin_cmd(nq.sqe(BA_PIN, cdw14=1)), G, nq.SC_INVALID_OPCODE, "no window")
    finally:
        vm.close()


def run_qemu(qemu, tmp_path, props):
    img = tmp_path / "r.img"
    with open(img, "wb") as f:
        f.truncate(IMAGE_SIZE)
    return subprocess.run(
        [qemu, "-L", "/usr/share/qemu", "-L", "/usr/share/seabios", "-machine", "q35",
         "-accel", "qtest", "-nodefaults", "-display", "none", "-qmp", "stdio",
         "-drive", f"if=none,id=d0,file={img},format=raw",
         "-device", "nvme-hybrid,drive=d0,serial=s,%s,%s" % (nq.TEST_KEYS, props)],
        input='{"execute":"qmp_capabilities"}\n{"execute":"quit"}\n',
        capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("props,name,why", [
    ("ba-size=1G", "ba-size", "cannot be saved"),
    ("ba-size=16M,ba-cap-uf=100", "ba-size", "ba-cap-uf=100"),
    ("ba-size=3M", "ba-size", "power of two"),
    ("ba-size=2K", "ba-size", "power of two"),
    ("ba-entries=0", "ba-entries", "between"),
    ("ba-cap-volt=5", "ba-cap-volt", "dropout"),
    ("ba-rtt-ns=1000001", "ba-rtt-ns", "0 (free) to 1000000 ns, got 1000001"),
    ("ba-write-mbps=1000001", "ba-write-mbps", "0 (free) to 1000000 MB/s, got 1000001"),
    ("ba-rtt-ns=-1", "ba-rtt-ns", ""),
    ("ba-write-mbps=fast", "ba-write-mbps", ""),
])
def test_bad_window_property(qemu_binary, tmp_path, props, name, why):
    r = run_qemu(qemu_binary, tmp_path, props)
    assert r.returncode == 1 and name in r.stderr and why in r.stderr, r.stderr
    assert "Aborted" not in r.stderr


def test_big_window_with_enough_capacitance(qemu_binary, tmp_path):
    r = run_qemu(qemu_binary, tmp_path, "ba-size=1G,ba-cap-uf=20000,ba-cap-volt=40")
    assert r.returncode == 0, r.stderr


def test_ba_file_of_another_geometry_refused(qemu_binary, tmp_path):
    f = tmp_path / "w.ba"
    assert run_qemu(qemu_binary, tmp_path, f"ba-file={f}").returncode == 0
    r = run_qemu(qemu_binary, tmp_path, f"ba-file={f},ba-size=4M")
    assert r.returncode == 1 and "ba-file" in r.stderr and "ba-size=8388608" in r.stderr, r.stderr
    f2 = tmp_path / "foreign"
    f2.write_bytes(b"not ours" * 100)
    r = run_qemu(qemu_binary, tmp_path, f"ba-file={f2}")
    assert r.returncode == 1 and "not an nvme-hybrid BA window file" in r.stderr, r.stderr
    assert f2.read_bytes() == b"not ours" * 100


def test_ba_file_in_use_refused(qemu_binary, tmp_path):
    f = tmp_path / "w.ba"
    vm = start(qemu_binary, f"ba-file={f}")
    try:
        r = run_qemu(qemu_binary, tmp_path, f"ba-file={f}")
        assert r.returncode == 1 and "in use" in r.stderr, r.stderr
        assert vm.alive()
    finally:
        vm.close()


# -- power loss ------------------------------------------------------------------------

PATTERN = bytes((i * 7 + 3) & 0xFF for i in range(64 * 1024))


def write_and_pin(b):
    b.enable()
    assert b.pin(2, 1 << 20, 2048, 128).ok
    b.wwrite((1 << 20) + 1, PATTERN)
    b.c.rd32(REG_PMRSTS)        # the persist barrier


def check_restored(b, restore):
    b.enable()
    cqe, info = b.info(2)
    assert cqe.ok and info["restore"] == restore, info
    assert (info["state"], info["offset"], info["slba"], info["nlb"]) == (1, 1 << 20, 2048, 128)
    assert b.wread((1 << 20) + 1, len(PATTERN)) == PATTERN
    assert (b.c.rd32(REG_PMRSTS) >> 9) & 7 == 0, "PMRSTS.HSTS: normal"
    assert b.read_dma(2, 1, 4096)[1] == PATTERN[:4096]


def power_cut(vm):
    try:
        vm.qmp.execute("qom-set", path=f"/machine/peripheral/{vm.DEVICE_ID}",
                       property="power-cut", value=True)
    except nq.QemuDied:
        pass            # QEMU may stop before it answers
    assert vm.proc.wait(30) == 0


def test_sigkill_keeps_window_and_entries(qemu_binary, tmp_path):
    props = f"ba-file={tmp_path / 'w.ba'}"
    vm = start(qemu_binary, props)
    try:
        b = Ba(vm)
        assert b.info(0)[1]["restore"] == NEW
        write_and_pin(b)
    finally:
        vm.close()                      # SIGKILL
    vm = start(qemu_binary, props)
    try:
        check_restored(Ba(vm), RECOVERED)
    finally:
        vm.close()


def test_power_cut_saves_the_window(qemu_binary, tmp_path):
    props = f"ba-file={tmp_path / 'w.ba'}"
    vm = start(qemu_binary, props)
    try:
        write_and_pin(Ba(vm))
        power_cut(vm)
    finally:
        vm.close()
    hdr = (tmp_path / "w.ba").read_bytes()[:64]
    assert struct.unpack_from("<I", hdr, 36)[0] == 3, "header state DUMPED"
    vm = start(qemu_binary, props)
    try:
        b = Ba(vm)
        check_restored(b, RESTORED)
        assert b.info(2)[1]["dumps"] == 1
    finally:
        vm.close()


def test_quit_saves_the_window(qemu_binary, tmp_path):
    props = f"ba-file={tmp_path / 'w.ba'}"
    vm = start(qemu_binary, props)
    try:
        write_and_pin(Ba(vm))
        try:
            vm.qmp.execute("quit")
        except nq.QemuDied:
            pass
        assert vm.proc.wait(30) == 0
    finally:
        vm.close()
    vm = start(qemu_binary, props)
    try:
        check_restored(Ba(vm), RESTORED)
    finally:
        vm.close()


def reseal(raw):
    """Recompute the header's meta_crc (CRC-32 of the header with meta_crc
    zeroed, then the entry table), as a device would have written it."""
    raw = bytearray(raw)
    raw[60:64] = b"\0" * 4
    crc = zlib.crc32(bytes(raw[:64]) + bytes(raw[4096:4096 + 32 * ENTRIES]))
    raw[60:64] = struct.pack("<I", crc)
    return raw


@pytest.mark.parametrize("damage,restore", [
    ("window", CORRUPT), ("table", CORRUPT), ("torn", TORN), ("truncated", TORN),
    ("empty", TORN), ("longer", CORRUPT), ("window offset", CORRUPT)])
def test_damaged_save_is_detected(qemu_binary, tmp_path, damage, restore):
    f = tmp_path / "w.ba"
    props = f"ba-file={f}"
    vm = start(qemu_binary, props)
    try:
        write_and_pin(Ba(vm))
        power_cut(vm)
    finally:
        vm.close()
    raw = bytearray(f.read_bytes())
    if damage == "window":
        raw[META + (1 << 20) + 100] ^= 0x40
    elif damage == "table":
        raw[4096 + 2 * 32 + 16] ^= 1            # entry 2's slba
    elif damage == "torn":
        raw[36:40] = struct.pack("<I", 2)        # state DUMPING, checksums consistent
        raw = reseal(raw)
    elif damage == "truncated":
        raw = raw[:META + 4096]
    elif damage == "empty":
        raw = b""
    elif damage == "longer":
        raw += b"\xee" * 4096
    else:
        raw[16:24] = struct.pack("<Q", 4096)     # header says the window starts at 4 KiB
        raw = reseal(raw)
    f.write_bytes(raw)

    vm = start(qemu_binary, props)
    try:
        b = Ba(vm)
        b.enable()
        cqe, info = b.info(2)
        assert info["restore"] == restore and info["state"] == 0, info
        assert (b.c.rd32(REG_PMRSTS) >> 9) & 7 == 1, "PMRSTS.HSTS: Restore Error"
        assert b.wread((1 << 20) + 1, 64) == b"\0" * 64, "a damaged save is never used"
        cqe, log = b.c.get_log_page(0x01, 64)
        status = struct.unpack_from("<H", log, 12)[0] >> 1
        assert ((status >> 8) & 7, status & 0xFF) == (MEDIA, SC_UNRECOVERED_READ), hex(status)
        assert os.path.exists(str(f) + ".bad"), "the damaged file is kept for inspection"
        with open(str(f) + ".bad", "rb") as kept:
            assert kept.read() == raw, "the copy is the file as it was found"
        assert "not restored" in vm.stderr_text()
    finally:
        vm.close()
