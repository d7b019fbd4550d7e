"""A volatile staging buffer (stage-volatile=on, docs/volatile-stage.md): the device reports a
volatile write cache, and a power cut loses what was staged and not flushed, the guest then
reading the old data, while flushed data survives.  With the default (capacitor-protected)
staging nothing is lost.  map-unit=4K keeps units staged until their stripe fills or a Flush
(no bounded wait), so the unflushed writes below are still staged at the cut."""

import pytest

import nvme_qtest as nq
from conftest import IMAGE_SIZE, MODEL, SERIAL

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's staging")

DEV = "/machine/peripheral/nvme0"
# write-cache=off: the backend writes through, so VWC is the engine's alone
BASE = "write-cache=off,x-exact-time=on,map-unit=4K,stripe-merge=on"
OLD, FLUSHED, NEW = b"\x11" * 4096, b"\x33" * 4096, b"\x22" * 4096


def start(qemu, props, image):
    vm = nq.Vm(qemu, MODEL, image_size=IMAGE_SIZE, serial=SERIAL, device_props=props,
               image=image)
    c = nq.Controller(vm)
    c.enable()
    c.id = c.identify_ctrl()
    return vm, c, c.create_io_queue(1, 16)


def power_cut(vm):
    try:
        vm.qmp.execute("qom-set", path=DEV, property="power-cut", value=True)
    except nq.QemuDied:
        pass            # QEMU may stop before it answers
    assert vm.proc.wait(30) == 0, vm.stderr_text()


@pytest.mark.parametrize("volatile", ["on", "off"])
def test_power_cut_loses_unflushed_staged_writes(qemu_binary, tmp_path, volatile):
    props = f"{BASE},stage-volatile={volatile}"
    image = str(tmp_path / "d.img")
    vm, c, q = start(qemu_binary, props, image)
    try:
        assert bool(c.id.vwc & 1) == (volatile == "on"), f"VWC {c.id.vwc:#x}"
        assert c.write(q, 0, OLD).ok                # LBAs 0-7: one 4 KiB unit ...
        assert c.write(q, 8, FLUSHED).ok
        assert c.cmd(q, nq.sqe(nq.IO_FLUSH, nsid=1)).ok      # ... both programmed
        assert c.write(q, 0, NEW).ok                # acknowledged, staged, not flushed
        assert c.write(q, 64, NEW).ok               # never written before
        assert c.read(q, 0, 8)[1] == NEW            # served from the stage
        power_cut(vm)
    finally:
        vm.close()
    vm, c, q = start(qemu_binary, props, image)
    try:
        lost = volatile == "on"
        assert c.read(q, 0, 8)[1] == (OLD if lost else NEW), "LBAs 0-7 after the cut"
        assert c.read(q, 64, 8)[1] == (bytes(4096) if lost else NEW), "LBAs 64-71"
        assert c.read(q, 8, 8)[1] == FLUSHED, "flushed LBAs 8-15 lost"
        assert vm.qmp.execute("qom-get", path=DEV, property="x-check") == "ok"
    finally:
        print(f"QEMU stderr:\n{vm.stderr_text()}")
        vm.close()


def test_power_cut_of_part_of_a_unit_keeps_its_flushed_sectors(qemu_binary, tmp_path):
    """A 512-byte write stages its whole 4 KiB unit, and the cut reports the unit lost: the
    written sector falls back to its flushed bytes, and the unit's other seven sectors, which
    no write touched since the Flush, keep theirs (they were zeroed before)."""
    props = f"{BASE},stage-volatile=on"
    image = str(tmp_path / "d.img")
    vm, c, q = start(qemu_binary, props, image)
    try:
        assert c.write(q, 0, FLUSHED).ok
        assert c.cmd(q, nq.sqe(nq.IO_FLUSH, nsid=1)).ok
        assert c.write(q, 3, NEW[:512]).ok
        power_cut(vm)
    finally:
        vm.close()
    vm, c, q = start(qemu_binary, props, image)
    try:
        assert c.read(q, 0, 8)[1] == FLUSHED
    finally:
        vm.close()
