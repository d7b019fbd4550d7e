"""Identify (NVMe Base 1.4 section 5.15) and the consistency of what it
claims with what the controller does."""

import struct

import pytest

import nvme_qtest as nq
from conftest import IMAGE_SIZE, SERIAL, assert_status, assert_still_works, qemu_nvme_deviation


def printable(s):
    return all(0x20 <= ord(c) < 0x7F for c in s)


def test_identify_controller_fields(nvme):
    """Figure 247 (Identify Controller data structure)."""
    ident = nvme.id
    assert ident.vid == nvme.vendor_id
    assert ident.ssvid == nvme.pci.cfg_read(0x2C, 2)
    # SN/MN/FR are ASCII, left-justified, padded with spaces.
    assert ident.sn == SERIAL.ljust(20)
    assert printable(ident.mn) and ident.mn.strip() and ident.mn == ident.mn.strip().ljust(40)
    assert printable(ident.fr) and ident.fr.strip() and ident.fr == ident.fr.strip().ljust(8)
    # VER "shall be" the value of the VS register.
    assert ident.ver == nvme.rd32(nq.REG_VS)
    # SQES/CQES: required (low nibble) and maximum (high nibble) entry sizes;
    # the spec fixes the required ones at 64 and 16 bytes.
    assert ident.sqes & 0xF == 6 and ident.sqes >> 4 >= 6
    assert ident.cqes & 0xF == 4 and ident.cqes >> 4 >= 4
    assert ident.nn >= 1
    # MDTS is a power of two in units of CAP.MPSMIN; 0 means no limit.
    assert ident.mdts == 0 or ident.mdts >= 1


def test_identify_namespace(nvme, ns):
    """Figure 249: NSZE is the namespace size in logical blocks."""
    assert ns.lba_size >= 512 and ns.lba_size & (ns.lba_size - 1) == 0
    assert ns.metadata_size == 0
    assert ns.nsze == IMAGE_SIZE // ns.lba_size
    assert 0 < ns.ncap <= ns.nsze
    assert ns.nuse <= ns.ncap
    assert ns.flbas & 0xF <= ns.nlbaf


def test_identify_namespace_invalid_nsid(nvme):
    """5.15.2: CNS 00h with an NSID that is not valid (0, or above NN and
    not FFFFFFFFh) fails with Invalid Namespace or Format (SCT 0, SC 0Bh)."""
    nn = nvme.id.nn
    for nsid in (0, nn + 1):
        cqe, _ = nvme.identify(nq.CNS_NS, nsid=nsid)
        assert_status(cqe, nq.SCT_GENERIC, nq.SC_INVALID_NAMESPACE,
                      f"Identify Namespace NSID {nsid:#x}")
    assert_still_works(nvme.vm, nvme)


def test_active_namespace_list(nvme):
    """5.15.2 CNS 02h: increasing active NSIDs greater than NSID, zero-padded."""
    cqe, data = nvme.identify(nq.CNS_ACTIVE_NS_LIST, nsid=0)
    assert cqe.ok, cqe
    ids = struct.unpack("<1024I", data)
    active = list(ids[:ids.index(0)]) if 0 in ids else list(ids)
    assert active and active[0] == 1
    assert active == sorted(set(active))
    assert all(i <= nvme.id.nn for i in active)
    assert all(i == 0 for i in ids[len(active):])
    cqe, data = nvme.identify(nq.CNS_ACTIVE_NS_LIST, nsid=active[-1])
    assert cqe.ok, cqe
    assert data == bytes(4096)


def test_namespace_identification_descriptors(nvme):
    """5.15.2 CNS 03h, Figure 251: a list of (NIDT, NIDL, NID) descriptors
    with at least one identifier, each length matching its type."""
    cqe, data = nvme.identify(nq.CNS_NS_DESC_LIST, nsid=1)
    assert cqe.ok, cqe
    lengths = {1: 8, 2: 16, 3: 16, 4: 1}  # EUI64, NGUID, UUID, CSI (2.0)
    off, seen = 0, []
    while off + 4 <= len(data) and data[off] != 0:
        nidt, nidl = data[off], data[off + 1]
        assert nidt in lengths, f"unknown NIDT {nidt}"
        assert nidl == lengths[nidt]
        if nidt != 4:
            assert any(data[off + 4:off + 4 + nidl]), "all-zero identifier"
        seen.append(nidt)
        off += 4 + nidl
    assert seen, "no namespace identifier"
    assert len(seen) == len(set(seen)), "same identifier type twice"


def test_identify_unsupported_cns(nvme):
    """5.15.1: a CNS value the controller does not support fails with
    Invalid Field in Command (SCT 0, SC 02h). FFh is reserved."""
    cqe, _ = nvme.identify(0xFF)
    assert_status(cqe, nq.SCT_GENERIC, nq.SC_INVALID_FIELD, "reserved CNS")
    assert_still_works(nvme.vm, nvme)


# ONCS bits (Figure 247) and a harmless command that exercises each.
ONCS_PROBES = {
    0: ("Compare", nq.IO_COMPARE),
    1: ("Write Uncorrectable", 0x04),
    2: ("Dataset Management", nq.IO_DSM),
    3: ("Write Zeroes", nq.IO_WRITE_ZEROES),
    7: ("Verify", 0x0C),
}


@pytest.mark.parametrize("bit", [
    pytest.param(b, marks=qemu_nvme_deviation("executes Verify without claiming it in ONCS"))
    if b == 7 else b for b in sorted(ONCS_PROBES)])
def test_oncs_matches_commands(nvme, ioq, bit):
    """An optional NVM command is accepted exactly when ONCS claims it;
    otherwise it fails with Invalid Command Opcode (SCT 0, SC 01h)."""
    name, opcode = ONCS_PROBES[bit]
    buf = nvme.dma_buffer(4096)
    # LBA 8, one block; DSM gets one range of one block (its NR is 0-based
    # and the range list is in the buffer), Compare compares zeroes with
    # never-written (zero) blocks.
    if opcode == nq.IO_DSM:
        nvme.qt.memwrite(buf, struct.pack("<IIQ", 0, 1, 8))
        cmd = nq.sqe(opcode, nsid=1, prp1=buf, cdw10=0, cdw11=1 << 2)
    else:
        cmd = nq.sqe(opcode, nsid=1, prp1=buf, cdw10=8, cdw12=0)
    cqe = nvme.cmd(ioq, cmd)
    if nvme.id.oncs & (1 << bit):
        assert cqe.ok, f"{name} claimed in ONCS but failed: {cqe}"
    else:
        assert_status(cqe, nq.SCT_GENERIC, nq.SC_INVALID_OPCODE,
                      f"{name} not claimed in ONCS")


# OACS bits (Figure 247) and the opcodes they cover; only unclaimed ones are
# sent, since a claimed Format or Namespace Management would do real work.
OACS_OPCODES = {
    0: ("Security Send/Receive", (0x81, 0x82)),
    1: ("Format NVM", (0x80,)),
    2: ("Firmware Commit/Image Download", (0x10, 0x11)),
    3: ("Namespace Management/Attachment", (0x0D, 0x15)),
    4: ("Device Self-test", (0x14,)),
    5: ("Directive Send/Receive", (0x19, 0x1A)),
    6: ("NVMe-MI Send/Receive", (0x1D, 0x1E)),
    7: ("Virtualization Management", (0x1C,)),
    8: ("Doorbell Buffer Config", (0x7C,)),
    9: ("Get LBA Status", (0x86,)),
}


@pytest.mark.parametrize("bit", sorted(OACS_OPCODES))
def test_unclaimed_oacs_commands_are_invalid(nvme, bit):
    """An optional admin command not claimed in OACS is not supported, so
    it fails with Invalid Command Opcode (SCT 0, SC 01h)."""
    name, opcodes = OACS_OPCODES[bit]
    if nvme.id.oacs & (1 << bit):
        pytest.skip(f"{name} is claimed in OACS")
    for opcode in opcodes:
        cqe = nvme.admin_cmd(nq.sqe(opcode))
        assert_status(cqe, nq.SCT_GENERIC, nq.SC_INVALID_OPCODE,
                      f"{name} ({opcode:#04x}) not claimed in OACS")
    assert_still_works(nvme.vm, nvme)


def test_directives_claim(nvme):
    """OACS bit 5: if Directives are claimed, Directive Receive of the
    Identify directive's Return Parameters (5.8, 9.2) succeeds and reports
    the Identify directive as supported."""
    if not nvme.id.oacs & (1 << 5):
        pytest.skip("Directives not claimed")
    buf = nvme.dma_buffer(4096)
    cqe = nvme.admin_cmd(nq.sqe(0x1A, nsid=1, prp1=buf, cdw10=1023,
                                cdw11=0x01 | (0x00 << 8)))
    assert cqe.ok, cqe
    assert nvme.qt.memread(buf, 1)[0] & 1


def test_volatile_write_cache_claim(nvme, ioq):
    """VWC bit 0 and 5.21.1.6: with a volatile write cache, the Volatile
    Write Cache feature can be set and read back; without one the feature is
    not supported, so Set Features (enabling or disabling it) and Get
    Features (any select) of it both fail with Invalid Field in Command.
    Flush is mandatory either way."""
    if nvme.id.vwc & 1:
        for wce in (0, 1):
            assert nvme.set_features(nq.FEAT_VWC, wce).ok
            cqe = nvme.get_features(nq.FEAT_VWC)
            assert cqe.ok and cqe.dw0 & 1 == wce, cqe
    else:
        for wce in (0, 1):
            assert_status(nvme.set_features(nq.FEAT_VWC, wce), nq.SCT_GENERIC,
                          nq.SC_INVALID_FIELD, f"set WCE={wce} without a volatile write cache")
        for sel in range(4):
            assert_status(nvme.get_features(nq.FEAT_VWC, sel=sel), nq.SCT_GENERIC,
                          nq.SC_INVALID_FIELD, f"get (select {sel}) without a volatile cache")
    assert nvme.cmd(ioq, nq.sqe(nq.IO_FLUSH, nsid=1)).ok


def test_timestamp_claim(nvme):
    """ONCS bit 6: the Timestamp feature (5.21.1.14) is supported exactly
    when claimed; set then get returns a time at or after the one set."""
    buf = nvme.dma_buffer(4096, struct.pack("<Q", 1_600_000_000_000)[:6] + bytes(2))
    cqe = nvme.admin_cmd(nq.sqe(nq.ADM_SET_FEATURES, prp1=buf, cdw10=nq.FEAT_TIMESTAMP))
    if not nvme.id.oncs & (1 << 6):
        assert_status(cqe, nq.SCT_GENERIC, nq.SC_INVALID_FIELD, "Timestamp not claimed")
        return
    assert cqe.ok, cqe
    out = nvme.dma_buffer(4096)
    cqe = nvme.admin_cmd(nq.sqe(nq.ADM_GET_FEATURES, prp1=out, cdw10=nq.FEAT_TIMESTAMP))
    assert cqe.ok, cqe
    ts = int.from_bytes(nvme.qt.memread(out, 6), "little")
    assert ts >= 1_600_000_000_000


def test_number_of_queues(nvme):
    """5.21.1.7: Set Features Number of Queues returns the allocated counts
    (0's based) in DW0, and Get Features reports the same allocation."""
    cqe = nvme.set_features(nq.FEAT_NUM_QUEUES, (3 << 16) | 3)
    assert cqe.ok, cqe
    get = nvme.get_features(nq.FEAT_NUM_QUEUES)
    assert get.ok and get.dw0 == cqe.dw0, get
