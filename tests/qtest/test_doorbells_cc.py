"""Doorbell writes for queues that do not exist or with invalid values, and
CC writes while the controller is enabled (NVMe Base 1.4)."""

import pytest

import nvme_qtest as nq
from conftest import assert_status, assert_still_works

# 5.2.1, "Asynchronous Event Information - Error Status": event type 0
# (Error status), information 00h "Write to Invalid Doorbell Register",
# 01h "Invalid Doorbell Write Value"; the associated log page is Error
# Information (01h).
AER_TYPE_ERROR = 0
AEI_INVALID_DOORBELL_REGISTER = 0x00
AEI_INVALID_DOORBELL_VALUE = 0x01
LID_ERROR_INFO = 0x01


def decode_aer(cqe):
    return cqe.dw0 & 0x7, (cqe.dw0 >> 8) & 0xFF, (cqe.dw0 >> 16) & 0xFF


@pytest.mark.parametrize("kind", ["sq", "cq"])
@pytest.mark.parametrize("where", ["next", "highest_allocated"])
def test_doorbell_for_missing_queue_raises_event(vm, nvme, ioq, kind, where):
    """With an Asynchronous Event Request outstanding, a write to the
    doorbell of a queue that was not created completes it with an Error
    status event "Write to Invalid Doorbell Register" (5.2.1) pointing at
    the Error Information log; the write itself is otherwise ignored.
    Queue IDs tried: 2 (just after the one created) and the highest one
    Number of Queues (5.21.1.7) allocated."""
    if where == "next":
        qid = 2
    else:
        alloc = nvme.get_features(nq.FEAT_NUM_QUEUES).dw0
        qid = min(alloc & 0xFFFF, alloc >> 16) + 1
        if qid == 1:
            pytest.skip("only one I/O queue pair allocated")
    aer = nvme.submit(nvme.admin, nq.sqe(nq.ADM_ASYNC_EVENT))
    reg = nvme.sq_doorbell(qid) if kind == "sq" else nvme.cq_doorbell(qid)
    nvme.wr32(reg, 1)
    cqe = nvme.wait(nvme.admin, aer, timeout_ns=100_000_000)
    assert cqe.ok, cqe
    assert decode_aer(cqe) == (AER_TYPE_ERROR, AEI_INVALID_DOORBELL_REGISTER,
                               LID_ERROR_INFO), f"AER DW0 {cqe.dw0:#x}"
    # Reading the log page the event names clears it (5.2).
    assert nvme.get_log_page(LID_ERROR_INFO, 64)[0].ok
    assert nvme.cmd(ioq, nq.sqe(nq.IO_FLUSH, nsid=1)).ok
    assert_still_works(vm, nvme)


def test_doorbell_value_beyond_queue_raises_event(vm, nvme, ioq):
    """A tail value >= the queue size is an invalid doorbell write value
    (5.2.1, "Invalid Doorbell Write Value", 01h); the queue keeps working
    once the host writes sane values again."""
    aer = nvme.submit(nvme.admin, nq.sqe(nq.ADM_ASYNC_EVENT))
    nvme.wr32(nvme.sq_doorbell(1), ioq.sq_size + 5)
    cqe = nvme.wait(nvme.admin, aer, timeout_ns=100_000_000)
    assert cqe.ok, cqe
    assert decode_aer(cqe) == (AER_TYPE_ERROR, AEI_INVALID_DOORBELL_VALUE,
                               LID_ERROR_INFO), f"AER DW0 {cqe.dw0:#x}"
    assert nvme.get_log_page(LID_ERROR_INFO, 64)[0].ok
    assert_still_works(vm, nvme)


def test_doorbells_for_missing_queues_without_aer(vm, nvme, ioq):
    """Without an outstanding AER there is nothing to report: the writes
    are ignored, no completion appears, and every queue keeps working."""
    alloc = nvme.get_features(nq.FEAT_NUM_QUEUES).dw0
    for qid in range(2, min(alloc & 0xFFFF, alloc >> 16) + 2):
        nvme.wr32(nvme.sq_doorbell(qid), 3)
        nvme.wr32(nvme.cq_doorbell(qid), 3)
    nvme.qt.clock_step(10_000_000)
    assert nvme.poll(nvme.admin.cq) is None
    assert nvme.poll(ioq.cq) is None
    assert nvme.cmd(ioq, nq.sqe(nq.IO_FLUSH, nsid=1)).ok
    assert_still_works(vm, nvme)


def test_admin_doorbell_before_enable(vm, ctrl):
    """Doorbells of a disabled controller: nothing is processed, QEMU runs,
    and a normal enable afterwards works."""
    ctrl.wr32(ctrl.sq_doorbell(0), 1)
    ctrl.wr32(ctrl.cq_doorbell(0), 1)
    ctrl.qt.clock_step(10_000_000)
    assert vm.alive()
    ctrl.enable()
    assert_still_works(vm, ctrl)


@pytest.mark.parametrize("field,shift,width,value", [
    ("MPS", nq.CC_MPS_SHIFT, 4, 1),
    ("AMS", 11, 3, 7),
    ("CSS", 4, 3, 7),
    ("IOSQES", nq.CC_IOSQES_SHIFT, 4, 0),
    ("IOCQES", nq.CC_IOCQES_SHIFT, 4, 0xF),
])
def test_cc_write_while_enabled(vm, nvme, ioq, field, shift, width, value):
    """3.1.5: MPS, AMS and CSS "shall only be modified when EN is cleared";
    changing them, or IOSQES/IOCQES, while enabled is undefined. Whatever the
    controller does, QEMU keeps running, and a reset restores a working
    controller."""
    mask = ((1 << width) - 1) << shift
    nvme.wr32(nq.REG_CC, (nvme.cc & ~mask) | (value << shift))
    nvme.qt.clock_step(10_000_000)
    assert vm.alive()
    assert nvme.csts != 0xFFFFFFFF
    nvme.disable()
    nvme.enable()
    assert_still_works(vm, nvme)
    q = nvme.create_io_queue(1, 8)
    assert nvme.cmd(q, nq.sqe(nq.IO_FLUSH, nsid=1)).ok


def test_disable_with_commands_in_flight(vm, nvme, ns, ioq):
    """3.1.5/7.3.2: CC.EN 1->0 with I/O outstanding resets the controller
    (outstanding commands are abandoned); RDY goes to 0 within CAP.TO and
    the controller can be brought up again."""
    for i in range(16):
        buf = nvme.dma_buffer(4096)
        nvme.submit(ioq, nq.sqe(nq.IO_WRITE, nsid=1, prp1=buf, cdw10=i * 8,
                                cdw12=4096 // ns.lba_size - 1))
    nvme.disable()
    nvme.qt.clock_step(100_000_000)
    assert vm.alive()
    nvme.enable()
    assert_still_works(vm, nvme)


def test_reenable_with_create_after_reset(vm, nvme):
    """7.3.2: a reset deletes I/O queues, so Delete I/O SQ 1 afterwards is
    Invalid Queue Identifier (SCT 1, SC 01h)."""
    nvme.create_io_queue(1, 8)
    nvme.disable()
    nvme.enable()
    assert_status(nvme.delete_sq(1), nq.SCT_CMD_SPECIFIC, nq.SC_INVALID_QID,
                  "SQ 1 was deleted by the reset")
    assert_still_works(vm, nvme)


def test_enable_with_bad_admin_queue_address(vm, ctrl):
    """ASQ/ACQ outside guest RAM: the controller may fail to become ready
    or fail its commands, but QEMU must keep running, and a reset with sane
    addresses works."""
    ctrl.wr32(nq.REG_AQA, (7 << 16) | 7)
    ctrl.wr64(nq.REG_ASQ, 0xFFFF_F000_0000)
    ctrl.wr64(nq.REG_ACQ, 0xFFFF_E000_0000)
    ctrl.wr32(nq.REG_CC, nq.CC_EN | (6 << nq.CC_IOSQES_SHIFT) | (4 << nq.CC_IOCQES_SHIFT))
    ctrl.qt.clock_step(100_000_000)
    ctrl.wr32(ctrl.sq_doorbell(0), 1)
    ctrl.qt.clock_step(100_000_000)
    assert vm.alive()
    ctrl.enable()
    assert_still_works(vm, ctrl)
