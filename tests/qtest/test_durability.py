"""Regressions for the second outside audit (issue 24): exact-time mode and
power cuts.  The audit gave no inputs; each test drives the device into the
state its class describes, from our own reading.

Exact time: under -icount completions are posted inline and commands are
fetched inside the doorbell write.  qtest cannot run with -icount, so these
tests take that path with the test-only property x-exact-time=on.

Power cuts at an exact point: power-cut-at=K makes the power fail at the
device's K-th event (powercut.c), and x-events reports how many there were,
so a test runs its workload once to find the event it wants, then again with
the cut placed there, and restarts on the same drive."""

import json
import os
import socket
import struct
import subprocess

import pytest

import nvme_qtest as nq
from conftest import IMAGE_SIZE, MODEL, SERIAL, assert_status

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's durability")

G, C = nq.SCT_GENERIC, nq.SCT_CMD_SPECIFIC
BA_PIN, BA_INFO, BA_SYNC, BA_READ_DMA, BA_FLUSH = 0xC0, 0xC2, 0xC4, 0xC6, 0xC8
REG_PMRCTL, REG_PMRSTS = 0xE04, 0xE08
HANG_S = 30
DEV = "/machine/peripheral/nvme0"


def start(qemu, props="", image=None, drive=""):
    vm = nq.Vm(qemu, MODEL, image_size=IMAGE_SIZE, serial=SERIAL, device_props=props,
               image=image, drive_opts=drive)
    vm.qt.sock.settimeout(HANG_S)
    vm.qmp.sock.settimeout(HANG_S)
    return vm


@pytest.fixture
def make(qemu_binary):
    vms = []

    def _make(props="", image=None, admin_entries=64, drive=""):
        vm = start(qemu_binary, props, image, drive)
        vms.append(vm)
        c = nq.Controller(vm)
        c.enable(admin_entries=admin_entries)
        c.id = c.identify_ctrl()
        return vm, c

    yield _make
    for vm in vms:
        print(f"QEMU stderr:\n{vm.stderr_text()}")
        vm.close()


def alive(vm):
    assert vm.alive(), f"QEMU died or hangs:\n{vm.stderr_text()}"


def events(vm):
    return json.loads(vm.qmp.execute("qom-get", path=DEV, property="x-events"))


# -- 1. nothing is fetched from inside a completion or a reset -------------------------

# DFTL with a one-entry mapping cache.  Deallocating a mapped LBA whose mapping is not cached
# rewrites its translation page, so a Dataset Management command waits for the flash (a
# timer).  Its ranges span LBAs 0 to 28,008, so a BA_PIN of LBAs 16,384-16,391 (never written,
# their translation page never written either) waits for it too, and then loads at once: its
# mapping lookup reads nothing and evicts a clean entry, and unwritten reads are free.  The
# pin thus completes inside the completion of the deallocation.
CHAIN = "x-exact-time=on,ftl=dftl,cmt-size=8,unwritten-reads=free"
PIN_LBA = 16384


def chain_setup(c):
    """I/O queue 1, LBAs 0-7 written and their mapping written back and evicted (clean
    entries of other pages cached), the window on, the admin queue holding its four
    Asynchronous Event Requests."""
    c.wr32(REG_PMRCTL, 1)
    q = c.create_io_queue(1, 16)
    assert c.write(q, 0, b"\x5a" * 4096).ok
    for lba in (5000 * 8, 6000 * 8, 7000 * 8):
        assert c.read(q, lba, 8)[0].ok
    aers = nq.submit_together(c, c.admin, [nq.sqe(nq.ADM_ASYNC_EVENT)] * 4)
    return q, aers


def chain_dsm(c):
    buf = c.dma_buffer(32, struct.pack("<IIQIIQ", 0, 8, 0, 0, 8, 3500 * 8))
    return nq.sqe(nq.IO_DSM, nsid=1, prp1=buf, cdw10=1, cdw11=1 << 2)


@pytest.fixture
def perturb(monkeypatch):
    """glibc fills freed memory: a use after free reads garbage instead of the old values."""
    monkeypatch.setenv("MALLOC_PERTURB_", "165")


def test_completion_does_not_fetch_a_delete_of_its_own_queue(perturb, make):
    """The admin queue has no free slot (four event requests and a BA_PIN waiting for a
    deallocation of its LBAs); a Delete I/O SQ of the deallocation's queue waits in it.  When
    the deallocation completes, the pin starts, completes at once and frees an admin slot.
    Fetching the Delete right there (as the device did under -icount) freed the SQ, and the
    request array the deallocation's completion was still using."""
    vm, c = make(CHAIN, admin_entries=5)
    q, _ = chain_setup(c)
    [dsm] = nq.submit_together(c, q, [chain_dsm(c)])
    [pin] = nq.submit_together(c, c.admin, [nq.ba_pin_cmd(0, 0, PIN_LBA, 8)])
    [delete] = nq.submit_together(c, c.admin, [nq.sqe(nq.ADM_DELETE_SQ, cdw10=q.qid)])
    assert c.wait(c.admin, pin).ok
    assert c.wait(c.admin, delete).ok
    cqe = c.wait(q, dsm)
    assert cqe.ok, cqe
    alive(vm)
    assert c.healthy()


def test_reset_does_not_fetch_queue_creations(perturb, make):
    """The same chain inside a Controller Level Reset: CC.EN=0 aborts the deallocation,
    whose end starts the pin, whose completion frees an admin slot while Create I/O CQ/SQ
    wait in the admin queue.  Fetched during the reset, the SQ outlived it with its CQ freed,
    and its next doorbell dereferenced NULL."""
    vm, c = make(CHAIN, admin_entries=5)
    q, _ = chain_setup(c)
    nq.submit_together(c, q, [chain_dsm(c)])
    nq.submit_together(c, c.admin, [nq.ba_pin_cmd(0, 0, PIN_LBA, 8)])
    cq_addr, sq_addr = c.vm.alloc(16 * nq.CQE_SIZE), c.vm.alloc(16 * nq.SQE_SIZE)
    nq.submit_together(c, c.admin, [
        nq.sqe(nq.ADM_CREATE_CQ, prp1=cq_addr, cdw10=15 << 16 | 2, cdw11=1),
        nq.sqe(nq.ADM_CREATE_SQ, prp1=sq_addr, cdw10=15 << 16 | 2, cdw11=2 << 16 | 1)])
    c.disable()
    alive(vm)
    c.enable()
    c.wr32(c.sq_doorbell(2), 1)      # no such queue after the reset: an invalid doorbell
    alive(vm)
    assert c.healthy()


# -- 4. a BA_PIN waits for its writes without scanning them ----------------------------

def test_many_pins_behind_many_writes(make):
    """Two hundred and fifty BA_PINs wait for writes to their LBAs while sixteen I/O queues
    of a thousand writes each are in flight, and the writes end together (one step of the
    clock).  The device keeps a count per pin as writes end; it used to walk every queue for
    every waiting pin each time a write under a pin ended, and that one step then held QEMU's
    main lock for minutes (QMP and qtest dead).  Every pin still starts after its writes and
    loads their data."""
    vm, c = make("x-exact-time=on,ba-entries=256,ba-size=8M", admin_entries=1024,
                 drive=",cache.no-flush=on")
    c.wr32(REG_PMRCTL, 1)
    bufs = [c.dma_buffer(nq.PAGE, bytes([i]) * nq.PAGE) for i in range(16)]
    queues = [c.create_io_queue(qid, 1024) for qid in range(1, 17)]
    # Each write waits for its modeled time (a timer) while the pins arrive; one step of the
    # clock then ends them all.
    writes = [(q, nq.submit_together(c, q, [nq.sqe(nq.IO_WRITE, nsid=1, prp1=bufs[i],
                                                  cdw10=(j % 250) * 8, cdw12=7)
                                          for j in range(1000)]))
              for i, q in enumerate(queues)]
    pins = nq.submit_together(c, c.admin, [nq.ba_pin_cmd(e, e * nq.PAGE, e * 8, 8)
                                        for e in range(250)])
    c.qt.clock_step(10_000_000_000)
    for cid in pins:
        assert c.wait(c.admin, cid).ok
    for q, cids in writes:
        for cid in cids:
            assert c.wait(q, cid).ok
    rd = c.dma_buffer(512)
    for e in (0, 249):
        cqe = c.admin_cmd(nq.sqe(BA_READ_DMA, prp1=rd, cdw10=e, cdw11=0, cdw12=512))
        # the last queue wrote each pin's LBAs last: its byte is what the pin loaded
        assert cqe.ok and c.qt.memread(rd, 512) == bytes([15]) * 512, f"pin {e}: stale data"
    alive(vm)


# -- 5. a state or window file that is not a regular file ------------------------------

@pytest.mark.parametrize("prop", ["state-file", "ba-file"])
def test_fifo_file_is_refused(qemu_binary, tmp_path, prop):
    """A FIFO as the state or window file blocked QEMU's start in open(); now the device
    is refused at once with a message naming the file."""
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    img = tmp_path / "r.img"
    img.write_bytes(b"")
    os.truncate(img, IMAGE_SIZE)
    r = subprocess.run(
        [qemu_binary, "-L", "/usr/share/qemu", "-L", "/usr/share/seabios", "-machine", "q35",
         "-accel", "qtest", "-nodefaults", "-display", "none", "-qmp", "stdio",
         "-drive", f"if=none,id=d0,file={img},format=raw",
         "-device", f"nvme-hybrid,drive=d0,serial=s,{prop}={fifo}"],
        input='{"execute":"qmp_capabilities"}\n{"execute":"quit"}\n',
        capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode != 0 and f"{fifo} is not a regular file" in r.stderr, r.stderr


# -- 6. Volatile Write Cache on a device without one -----------------------------------

def test_vwc_feature_without_a_cache(make):
    """No volatile write cache (the backend writes through, no engine buffer): Set Features
    of it, to disable as well as to enable, and Get Features of it, any select, all answer
    Invalid Field in Command; Set used to answer Success to disabling."""
    vm, c = make("write-cache=off")
    assert not c.id.vwc & 1
    for wce in (0, 1):
        assert_status(c.set_features(nq.FEAT_VWC, wce), G, nq.SC_INVALID_FIELD, f"set {wce}")
    for sel in range(4):
        assert_status(c.get_features(nq.FEAT_VWC, sel=sel), G, nq.SC_INVALID_FIELD,
                      f"get, select {sel}")


# -- 2 and 3. a power cut at an exact event --------------------------------------------

def run_to_cut(qemu_binary, props, image, workload, want, drive=""):
    """Run @workload once to number its events and find the first for which @want(kind,
    counts before, counts after) holds; then run it again on a fresh drive with the power cut
    at that event.  Returns after QEMU has exited."""
    vm = start(qemu_binary, props, image + ".probe", drive)
    try:
        marks = workload(vm)
    finally:
        vm.close()
    k = want(marks)
    assert k, f"the workload never reached the event wanted: {marks}"
    vm = start(qemu_binary, f"{props},power-cut-at={k}", image, drive)
    try:
        with pytest.raises(nq.QemuDied):
            workload(vm)
        assert vm.proc.wait(30) == 0
        assert f"power-cut-at={k}," in vm.stderr_text(), vm.stderr_text()
    finally:
        vm.close()
    return k


VOLATILE = "x-exact-time=on,buffer=lru,buffer-size=1M,buffer-volatile=on"


def test_cut_between_model_and_undo_keeps_flushed_data(qemu_binary, tmp_path):
    """A non-FUA write over flushed data on a volatile buffer is modeled before the old
    bytes of its LBAs are read for the undo.  A power cut between the two found nothing kept
    and wrote zeroes over the flushed data; the LBAs must hold their flushed data (or the
    new data, which was never acknowledged)."""
    image = str(tmp_path / "d.img")
    old, new = b"\x11" * 4096, b"\x22" * 4096

    def workload(vm):
        c = nq.Controller(vm)
        c.enable()
        q = c.create_io_queue(1, 16)
        assert c.write(q, 80, old).ok
        assert c.cmd(q, nq.sqe(nq.IO_FLUSH, nsid=1)).ok
        before = events(vm)
        c.write(q, 80, new)
        return before, events(vm)

    def after_model(marks):
        before, after = marks
        # the write's events: fetch, model, then the read of the old bytes is issued
        return before["total"] + 3 if after["model"] > before["model"] else None

    run_to_cut(qemu_binary, VOLATILE, image, workload, after_model)
    vm = start(qemu_binary, VOLATILE, image)
    try:
        c = nq.Controller(vm)
        c.enable()
        q = c.create_io_queue(1, 16)
        back = c.read(q, 80, 8)[1]
        assert back in (old, new), f"LBAs 80-87 hold {back[:16].hex()}..., not the flushed data"
        assert vm.qmp.execute("qom-get", path=DEV, property="x-check") == "ok"
    finally:
        vm.close()


@pytest.mark.parametrize("into", ["pin", "read"])
def test_cut_during_dma_into_the_window(qemu_binary, tmp_path, into):
    """A power cut is an instant for the device too: DMA into the window happened before it
    or not at all.  Here the block layer's worker has been given a BA_PIN's load, or an NVMe
    Read whose PRPs point into the window, and the power fails at the next command's fetch,
    before that DMA is done.  The worker wrote the window directly, so it went on writing
    while the capacitors saved the window: bytes the host had stored and fenced there before
    were replaced by data that arrived after the cut (and, when it raced the checksum, the
    next start discarded the whole window).  They must be the host's bytes; an entry pinned
    long before the cut must be intact.  This is the asynchronous path (no exact time)."""
    props = "ba-size=4M"
    drive = ",cache.no-flush=on"        # the cut's backend flush returns at once
    mine = bytes((i * 7 + 1) & 0xFF for i in range(4096))
    big = 1 << 20 if into == "pin" else 512 << 10

    def workload(vm):
        c = nq.Controller(vm)
        c.enable()
        c.wr32(REG_PMRCTL, 1)
        bar1 = c.bars[1][0]
        q = c.create_io_queue(1, 16)
        data = c.dma_buffer(512 << 10, bytes((i * 13 + 5) & 0xFF for i in range(512 << 10)))
        for off in range(0, big, 512 << 10):
            assert c.rw(q, nq.IO_WRITE, 8192 + off // 512, 1024, data, 512 << 10).ok
        assert c.admin_cmd(nq.ba_pin_cmd(1, 3 << 20, 100, 8)).ok
        c.qt.memwrite(bar1 + (3 << 20), mine)
        c.qt.memwrite(bar1, mine)                   # where the DMA will land
        c.rd32(REG_PMRSTS)                          # fenced: persisted
        before = events(vm)
        if into == "pin":
            cids = nq.submit_together(c, c.admin, [nq.ba_pin_cmd(2, 0, 8192, big // 512),
                                                nq.sqe(nq.ADM_GET_FEATURES, cdw10=0x07)])
            for cid in cids:
                assert c.wait(c.admin, cid).ok
        else:
            prp1, prp2 = c.prps(bar1, big)
            cids = nq.submit_together(c, q, [
                nq.sqe(nq.IO_READ, nsid=1, prp1=prp1, prp2=prp2, cdw10=8192, cdw12=big // 512 - 1),
                nq.sqe(nq.IO_FLUSH, nsid=1)])
            for cid in cids:
                assert c.wait(q, cid).ok
        return before, events(vm)

    def next_fetch(marks):
        before, after = marks
        # fetch, model, backend I/O issued; then the second command's fetch
        return before["total"] + 4 if after["fetch"] - before["fetch"] == 2 else None

    image = str(tmp_path / "d.img")
    run_to_cut(qemu_binary, props, image, workload, next_fetch, drive)
    vm = start(qemu_binary, props, image, drive)
    try:
        c = nq.Controller(vm)
        c.enable()
        c.wr32(REG_PMRCTL, 1)
        buf = c.dma_buffer(64)
        cqe = c.admin_cmd(nq.sqe(BA_INFO, prp1=buf, cdw10=1))
        info = struct.unpack("<HBBIQQQQQIIQ", c.qt.memread(buf, 64))
        assert cqe.ok and info[2] == 1, f"window not restored: {info}\n{vm.stderr_text()}"
        assert info[1] == 1, f"entry 1 lost: {info}"
        assert c.qt.memread(c.bars[1][0] + (3 << 20), 4096) == mine, "entry 1's bytes lost"
        assert c.qt.memread(c.bars[1][0], 4096) == mine, \
            "the window holds data a DMA brought after the power cut"
    finally:
        vm.close()


# -- arming a cut while running ---------------------------------------------------------

def test_power_cut_in_arms_a_cut_from_now(make):
    """x-power-cut-in=N (scripts/dblog-powercut --at-events): the power fails at the N-th
    event after the write, as power-cut-at would at that absolute number."""
    vm, c = make("x-exact-time=on")
    q = c.create_io_queue(1, 16)
    assert c.write(q, 0, b"\x11" * 4096).ok
    seen = events(vm)["total"]
    for bad in (0, 2 ** 64 - 1):
        with pytest.raises(RuntimeError, match="x-power-cut-in: .* events"):
            vm.qmp.execute("qom-set", path=DEV, property="x-power-cut-in", value=bad)
    assert events(vm)["total"] == seen
    vm.qmp.execute("qom-set", path=DEV, property="x-power-cut-in", value=3)
    # A write: fetched (1), modeled (2), its backend I/O issued (3): the cut.
    with pytest.raises(nq.QemuDied):
        c.write(q, 8, b"\x22" * 4096)
    assert vm.proc.wait(30) == 0
    assert f"power-cut-at={seen + 3}, event backend-issue" in vm.stderr_text(), \
        vm.stderr_text()


def test_power_cut_in_needs_an_exact_clock(qemu_binary, tmp_path):
    """Outside qtest and -icount the events are not points of a repeatable run: refused."""
    path = str(tmp_path / "qmp.sock")
    image = tmp_path / "disk.img"
    image.write_bytes(b"")
    os.truncate(image, IMAGE_SIZE)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(HANG_S)
    p = subprocess.Popen([qemu_binary, "-L", "/usr/share/qemu", "-L", "/usr/share/seabios",
                          "-machine", "q35", "-accel", "tcg", "-nodefaults",
                          "-display", "none", "-S", "-chardev", f"socket,path={path},id=m",
                          "-mon", "chardev=m,mode=control",
                          "-drive", f"if=none,id=d0,format=raw,file={image}",
                          "-device", f"{MODEL},id=nvme0,drive=d0,serial={SERIAL}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        conn, _ = listener.accept()
        conn.settimeout(HANG_S)
        qmp = nq.Qmp(conn, p)
        qmp.handshake()
        with pytest.raises(RuntimeError, match="needs -icount"):
            qmp.execute("qom-set", path=DEV, property="x-power-cut-in", value=1)
        conn.close()
    finally:
        listener.close()
        p.kill()
        p.wait()
