"""The Commands Supported and Effects log page (Log Identifier 05h, NVMe
Base 1.4 5.14.1.5), against the specification and against what the device
does: every opcode the page marks supported is dispatched, every other one
is Invalid Command Opcode, and the effects are the ones this device's
commands have.  Linux reads this page at probe and acts on the effects of
passthrough commands, so a wrong bit changes what the guest kernel does."""

import struct

import pytest

import nvme_qtest as nq
from conftest import MODEL, assert_status, assert_still_works, running

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's command table")

G = nq.SCT_GENERIC
LID = 0x05
LOG_SIZE = 4096
CSUPP, LBCC, NCC, NIC, CCC = 1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4
CSE_MASK = 7 << 16
# what a dword may hold in 1.4: CSUPP..CCC, CSE, UUID Selection Supported (bit 19)
DEFINED = CSUPP | LBCC | NCC | NIC | CCC | CSE_MASK | 1 << 19

ADMIN = {0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0A, 0x0C, 0x19, 0x1A, 0x7C}
WINDOW = {0xC0, 0xC2, 0xC4, 0xC6, 0xC8}          # BA_* (docs/bar-pm.md)
IO = {0x00, 0x01, 0x02, 0x05, 0x08, 0x09, 0x12, 0x1D}
# Commands that may change what LBAs read back: Write, Write Zeroes, Dataset
# Management; BA_SYNC and BA_FLUSH write the window to its LBAs.
ADMIN_LBCC = {0xC4, 0xC8}
IO_LBCC = {0x01, 0x08, 0x09}
AER = 0x0C          # stays outstanding: not sent by the dispatch probe


def effects(c):
    cqe, data = c.get_log_page(LID, LOG_SIZE, nsid=0)
    assert cqe.ok, cqe
    acs = list(struct.unpack_from("<256I", data, 0))
    return acs, list(struct.unpack_from("<256I", data, 1024)), data


def check_page(acs, iocs, raw, admin_supported):
    for op in range(256):
        assert bool(acs[op] & CSUPP) == (op in admin_supported), f"admin {op:#04x} CSUPP"
        assert bool(iocs[op] & CSUPP) == (op in IO), f"I/O {op:#04x} CSUPP"
        for table, supported, lbcc, name in ((acs, admin_supported, ADMIN_LBCC, "admin"),
                                             (iocs, IO, IO_LBCC, "I/O")):
            d = table[op]
            if op not in supported:
                assert d == 0, f"{name} {op:#04x}: unsupported, so 0 (got {d:#x})"
                continue
            assert d & ~DEFINED == 0, f"{name} {op:#04x}: reserved bits {d:#x}"
            assert bool(d & LBCC) == (op in lbcc), f"{name} {op:#04x} LBCC"
            # nothing here changes a namespace, the namespace set or the controller's
            # capabilities, and nothing needs the queues idle
            assert d & (NCC | NIC | CCC | CSE_MASK) == 0, f"{name} {op:#04x}: {d:#x}"
    assert raw[2048:] == bytes(2048), "bytes 2048-4095 are reserved"


def test_lpa_announces_the_page(nvme):
    """Identify Controller LPA bit 1: the page is supported."""
    assert nvme.id.lpa & 0x2


def test_page_against_the_spec(nvme):
    acs, iocs, raw = effects(nvme)
    check_page(acs, iocs, raw, ADMIN | WINDOW)


def test_page_without_a_window(qemu_binary):
    """ba-size=0: the BA_* opcodes are Invalid Command Opcode, so not supported."""
    with running(qemu_binary, props="ba-size=0") as vm:
        c = nq.Controller(vm)
        c.enable()
        acs, iocs, raw = effects(c)
        check_page(acs, iocs, raw, ADMIN)


def invalid_opcode(cqe):
    return cqe.sct == G and cqe.sc == nq.SC_INVALID_OPCODE


def test_page_against_the_dispatch(vm, nvme, ioq):
    """Each opcode, fields zeroed: Invalid Command Opcode exactly where the
    page says the command is not supported."""
    acs, iocs, _ = effects(nvme)
    scratch = nvme.dma_buffer(nq.PAGE)
    for op in range(256):
        if op == AER:
            continue
        cqe = nvme.admin_cmd(nq.sqe(op, prp1=scratch))
        assert invalid_opcode(cqe) == (not acs[op] & CSUPP), f"admin {op:#04x}: {cqe}"
    for op in range(256):
        cqe = nvme.cmd(ioq, nq.sqe(op, nsid=1, prp1=scratch))
        assert invalid_opcode(cqe) == (not iocs[op] & CSUPP), f"I/O {op:#04x}: {cqe}"
    assert_still_works(vm, nvme)


def test_offsets(nvme):
    """Extended data (LPA bit 2): a read at offset 1024 returns the I/O half."""
    acs, iocs, _ = effects(nvme)
    cqe, data = nvme.get_log_page(LID, 1024, nsid=0, offset=1024)
    assert cqe.ok, cqe
    assert list(struct.unpack("<256I", data)) == iocs


@pytest.mark.parametrize("offset,length,why", [
    (2, 64, "offset not dword aligned"),
    (LOG_SIZE + 4, 64, "offset beyond the page"),
    (0, 1 << 20, "length beyond MDTS"),
])
def test_bad_offset_or_length(vm, nvme, offset, length, why):
    """5.14: an offset that is not dword aligned or lies beyond the page, or a
    transfer larger than MDTS, is Invalid Field in Command."""
    cqe, _ = nvme.get_log_page(LID, length, nsid=0, offset=offset)
    assert_status(cqe, G, nq.SC_INVALID_FIELD, why)
    assert_still_works(vm, nvme)
