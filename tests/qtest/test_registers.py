"""Controller registers at reset, enable/disable handshake, shutdown.

Section numbers are from the NVM Express Base Specification 1.4.
"""

import nvme_qtest as nq
from conftest import MODEL, assert_still_works


def test_cap_reset_values(ctrl):
    """3.1.1 CAP."""
    cap = ctrl.cap
    mqes = cap & 0xFFFF
    to = (cap >> 24) & 0xFF
    dstrd = (cap >> 32) & 0xF
    css = (cap >> 37) & 0xFF
    mpsmin = (cap >> 48) & 0xF
    mpsmax = (cap >> 52) & 0xF
    # MQES is 0's based and "shall be 1h or greater" (queues of >= 2 entries).
    assert mqes >= 1
    # TO is the worst-case time to RDY in 500 ms units; 0 would promise an
    # instant transition the host could not bound.
    assert to >= 1
    # nvme-hybrid packs doorbells 4 bytes apart; the host code assumes it too.
    assert dstrd == 0
    # CSS bit 0: the NVM command set.
    assert css & 1
    # MPSMIN: 2^(12+MPSMIN); a 4 KiB host page must be allowed.
    assert mpsmin == 0
    assert mpsmax >= mpsmin
    # Bits 63:58 are reserved in 1.4 (57 is CMBS, 56 PMRS).
    assert (cap >> 58) == 0


def test_version_is_1_4(ctrl):
    """3.1.2 VS: MJR=1, MNR=4, TER=0."""
    assert ctrl.rd32(nq.REG_VS) == 0x00010400


def test_registers_at_reset(ctrl):
    """3.1.5 CC, 3.1.6 CSTS, 3.1.8-3.1.10 AQA/ASQ/ACQ reset to 0."""
    assert ctrl.cc == 0
    csts = ctrl.csts
    assert csts & nq.CSTS_RDY == 0
    assert csts & nq.CSTS_CFS == 0
    assert (csts >> 2) & 3 == 0  # SHST: normal operation
    assert ctrl.rd32(nq.REG_AQA) == 0
    assert ctrl.rd64(nq.REG_ASQ) == 0
    assert ctrl.rd64(nq.REG_ACQ) == 0


def test_pci_identity(ctrl):
    """PCI class 01:08:02 (mass storage, NVM, NVMe I/O controller) and a
    memory BAR0 of at least 16 KiB (registers plus doorbells)."""
    assert ctrl.pci.cfg_read(0x08) >> 8 == nq.PCI_CLASS_NVME
    addr, size, is64 = ctrl.bars[0]
    assert size >= 0x2000
    if MODEL == "nvme-hybrid":
        # BAR0 is 32-bit so that BAR1 stays free for the persistent window.
        assert not is64


def test_enable_sets_ready(ctrl):
    """7.6.1: set AQA/ASQ/ACQ, CC.EN=1, wait for CSTS.RDY=1 (within CAP.TO)."""
    ctrl.enable(admin_entries=16)
    assert ctrl.csts & nq.CSTS_RDY
    assert ctrl.cc & nq.CC_EN
    assert ctrl.rd32(nq.REG_AQA) == (15 << 16) | 15
    assert ctrl.rd64(nq.REG_ASQ) == ctrl.admin.sq_addr
    assert ctrl.rd64(nq.REG_ACQ) == ctrl.admin.cq.addr
    assert ctrl.healthy()


def test_disable_resets_controller(nvme):
    """3.1.5 CC.EN 1->0 resets the controller: RDY goes to 0, and (7.3.2)
    all I/O queues are deleted, so after re-enabling queue ID 1 is free."""
    nvme.create_io_queue(1, 16)
    nvme.disable()
    assert nvme.csts & nq.CSTS_RDY == 0
    nvme.enable()
    q = nvme.create_io_queue(1, 16)
    cqe = nvme.write(q, 0, b"\x5a" * 512)
    assert cqe.ok, cqe


def test_admin_queue_wraps(nvme):
    """A 4-entry admin queue used for 10 commands: the phase tag flips each
    time the CQ wraps (4.6, Phase Tag)."""
    nvme.enable(admin_entries=4)
    for _ in range(10):
        assert nvme.healthy()


def test_shutdown_notification(nvme):
    """7.6.2: CC.SHN=01b, then CSTS.SHST reaches 10b (shutdown complete);
    a reset (EN 0->1) brings the controller back."""
    nvme.wr32(nq.REG_CC, nvme.cc | (1 << nq.CC_SHN_SHIFT))
    nvme.wait_csts(0xC, 0x8)
    nvme.disable()
    nvme.enable()
    assert nvme.healthy()


def test_readonly_registers_ignore_writes(vm, nvme):
    """3.1.1/3.1.2: CAP and VS are read-only."""
    cap, vs = nvme.cap, nvme.rd32(nq.REG_VS)
    nvme.wr32(nq.REG_CAP, 0xFFFFFFFF)
    nvme.wr32(nq.REG_CAP + 4, 0xFFFFFFFF)
    nvme.wr32(nq.REG_VS, 0)
    assert nvme.cap == cap
    assert nvme.rd32(nq.REG_VS) == vs
    assert_still_works(vm, nvme)


def test_odd_sized_register_access(vm, nvme):
    """Byte and word accesses to dword registers are not what 3.1 asks of a
    host; whatever the controller makes of them, QEMU keeps running."""
    for off in (nq.REG_CAP, nq.REG_CC + 1, nq.REG_CSTS, 0x1002, 0xFFF):
        nvme.qt.readb(nvme.bar0 + off)
        nvme.qt.readw(nvme.bar0 + (off & ~1))
    nvme.qt.writeb(nvme.bar0 + nq.REG_INTMS, 0)
    nvme.qt.writew(nvme.bar0 + 0x1002, 0)
    assert vm.alive()
    nvme.disable()
    nvme.enable()
    assert_still_works(vm, nvme)
