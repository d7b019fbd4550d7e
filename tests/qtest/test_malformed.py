"""Malformed commands get the status the NVMe specification names, and the
controller and QEMU keep working afterwards.

References are to the NVM Express Base Specification 1.4: section 4.6.1.2.1
(Generic Command Status Values, including the NVM command set values
80h-BFh), 4.6.1.2.2 (Command Specific Status Values), and the section of
the command.  The device reports VS 1.4, so 1.4 is the contract.
"""

import struct

import pytest

import nvme_qtest as nq
from conftest import assert_status, assert_still_works, qemu_nvme_deviation

G, C = nq.SCT_GENERIC, nq.SCT_CMD_SPECIFIC


# -- opcodes --------------------------------------------------------------------------


@pytest.mark.parametrize("opcode", [0x03, 0x07, 0x0B, 0x3F, 0x7B])
def test_invalid_admin_opcode(vm, nvme, opcode):
    """4.6.1.2.1: a reserved admin opcode is Invalid Command Opcode (01h)."""
    assert_status(nvme.admin_cmd(nq.sqe(opcode)), G, nq.SC_INVALID_OPCODE,
                  f"reserved admin opcode {opcode:#04x}")
    assert_still_works(vm, nvme)


@pytest.mark.parametrize("opcode", [0x03, 0x06, 0x07, 0x0A, 0x7F])
def test_invalid_io_opcode(vm, nvme, ioq, opcode):
    """4.6.1.2.1: a reserved NVM I/O opcode is Invalid Command Opcode (01h)."""
    assert_status(nvme.cmd(ioq, nq.sqe(opcode, nsid=1)), G, nq.SC_INVALID_OPCODE,
                  f"reserved I/O opcode {opcode:#04x}")
    assert_still_works(vm, nvme)
    assert nvme.cmd(ioq, nq.sqe(nq.IO_FLUSH, nsid=1)).ok


def test_admin_opcode_on_io_queue(vm, nvme, ioq):
    """Identify (06h) is an admin opcode; on an I/O queue 06h is reserved in
    the NVM command set, so Invalid Command Opcode (01h)."""
    buf = nvme.dma_buffer(4096)
    assert_status(nvme.cmd(ioq, nq.sqe(nq.ADM_IDENTIFY, nsid=1, prp1=buf, cdw10=1)), G,
                  nq.SC_INVALID_OPCODE, "Identify on an I/O queue")
    assert_still_works(vm, nvme)


# -- queue management -----------------------------------------------------------------


def test_create_sq_on_missing_cq(vm, nvme):
    """5.4 Create I/O Submission Queue: a CQID that does not exist is
    Completion Queue Invalid (SCT 1, SC 00h)."""
    cqe, _ = nvme.create_sq(1, 8, cqid=5)
    assert_status(cqe, C, nq.SC_CQ_INVALID, "SQ on a CQ that does not exist")
    assert_still_works(vm, nvme)


@pytest.mark.parametrize("kind", ["cq", "sq"])
@pytest.mark.parametrize("qid", [0, 0xFFFF])
def test_create_invalid_queue_id(vm, nvme, kind, qid):
    """5.3/5.4: a QID of 0 (the admin queue) or above the number allocated
    is Invalid Queue Identifier (SCT 1, SC 01h)."""
    if kind == "cq":
        cqe, _ = nvme.create_cq(qid, 8)
    else:
        assert nvme.create_cq(1, 8)[0].ok
        cqe, _ = nvme.create_sq(qid, 8, cqid=1)
    assert_status(cqe, C, nq.SC_INVALID_QID, f"create {kind} with QID {qid:#x}")
    assert_still_works(vm, nvme)


@pytest.mark.parametrize("kind", ["cq", "sq"])
def test_create_queue_id_in_use(vm, nvme, kind):
    """5.3/5.4: a QID already in use is Invalid Queue Identifier (SCT 1, 01h)."""
    nvme.create_io_queue(1, 8)
    if kind == "cq":
        cqe, _ = nvme.create_cq(1, 8)
    else:
        cqe, _ = nvme.create_sq(1, 8, cqid=1)
    assert_status(cqe, C, nq.SC_INVALID_QID, f"create {kind} 1 twice")
    assert_still_works(vm, nvme)


@pytest.mark.parametrize("kind", ["cq", "sq"])
@pytest.mark.parametrize("entries", ["one", "above_mqes"])
def test_create_invalid_queue_size(vm, nvme, kind, entries):
    """5.3/5.4: QSIZE 0 (a one-entry queue) or above CAP.MQES is Invalid
    Queue Size (SCT 1, SC 02h)."""
    n = 1 if entries == "one" else nvme.mqes + 2
    if n > 0x10000:
        pytest.skip("MQES is already the largest QSIZE can express")
    if kind == "cq":
        cqe, _ = nvme.create_cq(1, n, addr=nvme.vm.alloc(4096))
    else:
        assert nvme.create_cq(1, 8)[0].ok
        cqe, _ = nvme.create_sq(1, n, cqid=1, addr=nvme.vm.alloc(4096))
    assert_status(cqe, C, nq.SC_INVALID_QSIZE, f"{kind} of {n} entries")
    assert_still_works(vm, nvme)


@pytest.mark.parametrize("kind", [
    pytest.param("cq", marks=qemu_nvme_deviation(
        "Delete I/O CQ of a bad QID returns Completion Queue Invalid (SCT 1, 00h)")),
    "sq"])
@pytest.mark.parametrize("qid", [0, 7, 0xFFFF])
def test_delete_invalid_queue_id(vm, nvme, kind, qid):
    """5.5/5.6 Delete I/O Completion/Submission Queue: a QID that is 0 (the
    admin queue) or not an existing I/O queue is Invalid Queue Identifier
    (SCT 1, SC 01h)."""
    cqe = nvme.delete_cq(qid) if kind == "cq" else nvme.delete_sq(qid)
    assert_status(cqe, C, nq.SC_INVALID_QID, f"delete {kind} {qid:#x}")
    assert_still_works(vm, nvme)


def test_delete_cq_with_sq(vm, nvme, ioq):
    """5.5: deleting a CQ that still has an SQ is Invalid Queue Deletion
    (SCT 1, SC 0Ch); the queue pair keeps working."""
    assert_status(nvme.delete_cq(1), C, nq.SC_INVALID_QUEUE_DELETION,
                  "CQ 1 still has SQ 1")
    assert nvme.cmd(ioq, nq.sqe(nq.IO_FLUSH, nsid=1)).ok
    assert_still_works(vm, nvme)


def test_deleted_queue_is_gone(vm, nvme, ioq):
    """After Delete I/O SQ 1 the ID is invalid for a second delete (SCT 1,
    01h), and a doorbell write to it is ignored (no completion appears)."""
    assert nvme.delete_sq(1).ok
    assert_status(nvme.delete_sq(1), C, nq.SC_INVALID_QID, "SQ 1 already deleted")
    nvme.qt.memwrite(ioq.sq_addr, nq.sqe(nq.IO_FLUSH, nsid=1, cid=77))
    nvme.wr32(nvme.sq_doorbell(1), 1)
    nvme.qt.clock_step(10_000_000)
    assert nvme.poll(ioq.cq) is None
    assert nvme.delete_cq(1).ok
    assert_still_works(vm, nvme)


def test_create_cq_noncontiguous_when_required(vm, nvme):
    """5.3: with CAP.CQR=1, PC=0 is Invalid Field in Command (SCT 0, 02h)."""
    if not (nvme.cap >> 16) & 1:
        pytest.skip("CAP.CQR=0: non-contiguous queues are allowed")
    cqe, _ = nvme.create_cq(1, 8, pc=False)
    assert_status(cqe, G, nq.SC_INVALID_FIELD, "PC=0 with CAP.CQR=1")
    assert_still_works(vm, nvme)


# -- NVM I/O ----------------------------------------------------------------------------


@pytest.mark.parametrize("opcode", [nq.IO_READ, nq.IO_WRITE])
@pytest.mark.parametrize("where", ["at_end", "straddling", "huge"])
def test_lba_out_of_range(vm, nvme, ns, ioq, opcode, where):
    """NVM command set Read/Write: an LBA range that exceeds the namespace
    size is LBA Out of Range (SCT 0, SC 80h)."""
    slba, nlb = {"at_end": (ns.nsze, 1), "straddling": (ns.nsze - 1, 2),
                 "huge": (1 << 63, 1)}[where]
    length = nlb * ns.lba_size
    buf = nvme.dma_buffer(length)
    cqe = nvme.rw(ioq, opcode, slba, nlb, buf, length)
    assert_status(cqe, G, nq.SC_LBA_OUT_OF_RANGE, f"SLBA {slba:#x} NLB {nlb}")
    assert_still_works(vm, nvme)


@pytest.mark.parametrize("which", ["zero", "above_nn", "broadcast"])
def test_io_invalid_nsid(vm, nvme, ioq, which):
    """6.1.5 (NSID usage): an I/O command with an invalid NSID (0, above NN,
    or FFFFFFFFh, which Read does not accept) is Invalid Namespace or Format
    (SCT 0, SC 0Bh)."""
    nsid = {"zero": 0, "above_nn": nvme.id.nn + 1, "broadcast": 0xFFFFFFFF}[which]
    if nsid == 0xFFFFFFFF and which == "above_nn":
        pytest.skip("NN is FFFFFFFEh: no NSID above it but broadcast")
    buf = nvme.dma_buffer(4096)
    cqe = nvme.cmd(ioq, nq.sqe(nq.IO_READ, nsid=nsid, prp1=buf))
    assert_status(cqe, G, nq.SC_INVALID_NAMESPACE, f"Read NSID {nsid:#x}")
    assert_still_works(vm, nvme)


def test_io_inactive_nsid(vm, nvme, ioq):
    """6.1.5 (NSID usage): an I/O command with a valid NSID (<= NN) that is
    not active is Invalid Field in Command (SCT 0, SC 02h)."""
    cqe, data = nvme.identify(nq.CNS_ACTIVE_NS_LIST, nsid=0)
    active = set(struct.unpack("<1024I", data)) - {0}
    inactive = [i for i in range(1, min(nvme.id.nn, 1024) + 1) if i not in active]
    if not inactive:
        pytest.skip("every valid NSID is active")
    buf = nvme.dma_buffer(4096)
    cqe = nvme.cmd(ioq, nq.sqe(nq.IO_READ, nsid=inactive[0], prp1=buf))
    assert_status(cqe, G, nq.SC_INVALID_FIELD, f"Read inactive NSID {inactive[0]}")
    assert_still_works(vm, nvme)


def test_prp2_with_offset(vm, nvme, ns, ioq):
    """4.3: in a two-page transfer PRP2 is a data pointer that must be page
    aligned; a nonzero offset is PRP Offset Invalid (SCT 0, SC 13h)."""
    buf = nvme.dma_buffer(8192)
    cqe = nvme.cmd(ioq, nq.sqe(nq.IO_READ, nsid=1, prp1=buf, prp2=buf + 4096 + 8,
                               cdw12=8192 // ns.lba_size - 1))
    assert_status(cqe, G, nq.SC_PRP_OFFSET_INVALID, "PRP2 with offset 8")
    assert_still_works(vm, nvme)


def test_prp_list_entry_with_offset(vm, nvme, ns, ioq):
    """4.3: entries of a PRP list must have offset 0; an entry with a
    nonzero offset is PRP Offset Invalid (SCT 0, SC 13h)."""
    buf = nvme.dma_buffer(4 * 4096)
    plist = nvme.vm.alloc(4096)
    nvme.qt.memwrite(plist, struct.pack("<3Q", buf + 4096, buf + 2 * 4096 + 0x200,
                                        buf + 3 * 4096))
    cqe = nvme.cmd(ioq, nq.sqe(nq.IO_WRITE, nsid=1, prp1=buf, prp2=plist,
                               cdw12=4 * 4096 // ns.lba_size - 1))
    assert_status(cqe, G, nq.SC_PRP_OFFSET_INVALID, "list entry with offset 0x200")
    assert_still_works(vm, nvme)


@pytest.mark.parametrize("opcode", [nq.IO_READ, nq.IO_WRITE])
def test_transfer_beyond_mdts(vm, nvme, ns, ioq, opcode):
    """5.15.2 (Identify Controller, MDTS): a command that transfers more
    than MDTS is aborted with Invalid Field in Command (SCT 0, SC 02h)."""
    if nvme.id.mdts == 0:
        pytest.skip("MDTS=0: no transfer size limit")
    length = (nq.PAGE << nvme.id.mdts) + ns.lba_size
    nlb = length // ns.lba_size
    if nlb > 0x10000 or nlb > ns.nsze:
        pytest.skip("MDTS exceeds what one command can address here")
    buf = nvme.dma_buffer(length)
    cqe = nvme.rw(ioq, opcode, 0, nlb, buf, length)
    assert_status(cqe, G, nq.SC_INVALID_FIELD, f"{length} bytes > MDTS")
    assert_still_works(vm, nvme)


def test_sgl_when_unsupported(vm, nvme, ioq):
    """4.2 (PSDT): with SGLS=0 in Identify Controller, a command that asks
    for SGLs is Invalid Field in Command (SCT 0, SC 02h)."""
    if nvme.id.sgls & 3:
        pytest.skip("controller supports SGLs")
    buf = nvme.dma_buffer(4096)
    cqe = nvme.cmd(ioq, nq.sqe(nq.IO_READ, nsid=1, prp1=buf, flags=1 << 6))
    assert_status(cqe, G, nq.SC_INVALID_FIELD, "PSDT=01b without SGL support")
    assert_still_works(vm, nvme)


# -- admin commands with bad fields ---------------------------------------------------


@qemu_nvme_deviation("reports VS 1.4 but answers an unsupported log page the "
                     "Base 2.0 way, Invalid Field in Command (SCT 0, 02h)")
@pytest.mark.parametrize("lid", [0x00, 0x50, 0x7F])
def test_get_log_page_unsupported(vm, nvme, lid):
    """5.14 Get Log Page / 4.6.1.2.2: a reserved or unsupported log page is
    Invalid Log Page (SCT 1, SC 09h). (Base 2.0 moved this case to Invalid
    Field in Command; a 1.4 controller uses 09h.)"""
    cqe, _ = nvme.get_log_page(lid, 512)
    assert_status(cqe, C, nq.SC_INVALID_LOG_PAGE, f"log page {lid:#04x}")
    assert_still_works(vm, nvme)


def test_get_log_page_mandatory(vm, nvme):
    """5.14.1: Error Information (01h), SMART / Health (02h) and Firmware
    Slot Information (03h) are mandatory."""
    for lid, length in ((0x01, 64), (0x02, 512), (0x03, 512)):
        cqe, _ = nvme.get_log_page(lid, length)
        assert cqe.ok, (lid, cqe)


def test_set_features_reserved_fid(vm, nvme):
    """5.21: Feature Identifier 00h is reserved; Invalid Field in Command
    (SCT 0, SC 02h)."""
    assert_status(nvme.set_features(0x00, 0), G, nq.SC_INVALID_FIELD, "FID 00h")
    assert_still_works(vm, nvme)


def test_set_features_not_changeable(vm, nvme):
    """5.21 Set Features / 4.6.1.2.2: a feature whose capabilities (Get
    Features, SEL=011b, DW0 bit 2) say it is not changeable is rejected with
    Feature Not Changeable (SCT 1, SC 0Eh)."""
    if not nvme.id.oncs & (1 << 4):
        pytest.skip("ONCS bit 4 clear: Get Features SEL field not supported")
    fixed = []
    for fid in range(0x01, 0x20):
        cqe = nvme.get_features(fid, sel=3)
        if cqe.ok and not cqe.dw0 & 0x4:
            fixed.append(fid)
    if not fixed:
        pytest.skip("every supported feature is changeable")
    for fid in fixed:
        current = nvme.get_features(fid)
        cqe = nvme.set_features(fid, current.dw0)
        assert_status(cqe, C, nq.SC_FEATURE_NOT_CHANGEABLE, f"FID {fid:#04x}")
    assert_still_works(vm, nvme)


def test_number_of_queues_after_queue_creation(vm, nvme, ioq):
    """5.21.1.7: Number of Queues is set only before any I/O queue exists;
    afterwards Set Features fails with Command Sequence Error (SCT 0, 0Ch)
    (the 1.4 text says "shall only be issued during initialization", Base
    2.0 names the status)."""
    cqe = nvme.set_features(nq.FEAT_NUM_QUEUES, 0)
    assert_status(cqe, G, nq.SC_COMMAND_SEQUENCE_ERROR, "queues already exist")
    assert_still_works(vm, nvme)


def test_abort_command_not_outstanding(vm, nvme, ioq):
    """5.1 Abort: aborting a CID that is not outstanding completes
    successfully with DW0 bit 0 set ("command not aborted")."""
    cqe = nvme.admin_cmd(nq.sqe(nq.ADM_ABORT, cdw10=1 | (0x4242 << 16)))
    assert cqe.ok, cqe
    assert cqe.dw0 & 1 == 1
    assert_still_works(vm, nvme)


def test_abort_outstanding_aer(vm, nvme):
    """5.1: the Abort itself completes (successfully, aborted or not); if
    it aborted the outstanding Asynchronous Event Request, the AER completes
    with Command Abort Requested (SCT 0, 07h)."""
    aer = nvme.submit(nvme.admin, nq.sqe(nq.ADM_ASYNC_EVENT))
    cqe = nvme.admin_cmd(nq.sqe(nq.ADM_ABORT, cdw10=0 | (aer << 16)))
    assert cqe.ok, cqe
    if cqe.dw0 & 1 == 0:
        assert_status(nvme.wait(nvme.admin, aer), G, nq.SC_ABORT_REQUESTED,
                      "aborted AER")
    assert_still_works(vm, nvme)
