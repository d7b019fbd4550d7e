"""Directives: Directive Receive (1Ah) and Directive Send (19h) with the
Identify and Streams directives, and Writes that carry a stream.

References are to the NVM Express Base Specification 2.2, section 8.1.8
(Directives: 8.1.8.1 use in I/O commands, 8.1.8.2 Identify, 8.1.8.3
Streams) and Figure 93 (NSID rules); NVMe 1.4 section 9 defines the same
operations and structures.  docs/device.md ("Directives and Streams") lists every
status and decision these tests hold the device to.

The device is started with `streams=8`: the engine accepts stream tags
1..8, so MSL is 8.  A default device (streams=auto) supports Streams with
16; with streams=0, or where the engine cannot place, Streams is not
supported (last tests).
"""

import struct

import pytest

import nvme_qtest as nq
from conftest import (IMAGE_SIZE, MODEL, SERIAL, assert_status, assert_still_works,
                      enabled_controller, running)

G = nq.SCT_GENERIC
ADM_DIRECTIVE_SEND, ADM_DIRECTIVE_RECV = 0x19, 0x1A
DIR_IDENTIFY, DIR_STREAMS = 0x00, 0x01
OP_RETURN_PARAMS, OP_GET_STATUS, OP_ALLOCATE = 0x01, 0x02, 0x03
OP_ENABLE, OP_RELEASE_ID, OP_RELEASE_RES = 0x01, 0x01, 0x02
OACS_DIRECTIVES = 1 << 5
MSL = 8
ALL = 0xFFFFFFFF

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid",
                                reason="QEMU's nvme has no Streams directive")


@pytest.fixture
def svm(qemu_binary):
    """A device whose engine places streams (streams=8)."""
    with running(qemu_binary, f"streams={MSL}") as machine:
        yield machine


@pytest.fixture
def dev(svm):
    return enabled_controller(svm)


@pytest.fixture
def q(dev):
    return dev.create_io_queue(1, 64)


# -- helpers ------------------------------------------------------------------------------


def recv(dev, dtype, doper, length=4096, nsid=1, cdw12=0, dspec=0, numd=None):
    """Directive Receive into a buffer with a canary page after `length`."""
    buf = dev.dma_buffer(length + 4096, b"\xa5" * (length + 4096))
    numd = length // 4 - 1 if numd is None else numd
    prp1, prp2 = dev.prps(buf, length)
    cqe = dev.admin_cmd(nq.sqe(ADM_DIRECTIVE_RECV, nsid=nsid, prp1=prp1, prp2=prp2,
                               cdw10=numd, cdw11=dspec << 16 | dtype << 8 | doper,
                               cdw12=cdw12))
    return cqe, dev.qt.memread(buf, length + 4096)


def send(dev, dtype, doper, nsid=1, cdw12=0, dspec=0):
    """Directive Send; none of the operations transfers data (NUMD 0, no PRP)."""
    return dev.admin_cmd(nq.sqe(ADM_DIRECTIVE_SEND, nsid=nsid,
                                cdw11=dspec << 16 | dtype << 8 | doper, cdw12=cdw12))


def enable(dev, on=True, nsid=1, dtype=DIR_STREAMS):
    return send(dev, DIR_IDENTIFY, OP_ENABLE, nsid=nsid, cdw12=dtype << 8 | int(on))


def identify_params(dev, nsid=1):
    cqe, d = recv(dev, DIR_IDENTIFY, OP_RETURN_PARAMS, nsid=nsid)
    assert cqe.ok, cqe
    return d[0], d[32], d[64]          # supported, enabled, persistent (low bytes)


def stream_params(dev, nsid=1):
    cqe, d = recv(dev, DIR_STREAMS, OP_RETURN_PARAMS, 32, nsid=nsid)
    assert cqe.ok, cqe
    msl, nssa, nsso = struct.unpack_from("<HHH", d, 0)
    sws, sgs, nsa, nso = struct.unpack_from("<IHHH", d, 16)
    return dict(msl=msl, nssa=nssa, nsso=nsso, nssc=d[6], sws=sws, sgs=sgs, nsa=nsa, nso=nso)


def open_streams(dev, nsid=1):
    cqe, d = recv(dev, DIR_STREAMS, OP_GET_STATUS, 4096, nsid=nsid)
    assert cqe.ok, cqe
    osc = struct.unpack_from("<H", d, 0)[0]
    return list(struct.unpack_from(f"<{osc}H", d, 2))


def write(dev, q, slba, data, dtype=0, dspec=0, opcode=nq.IO_WRITE):
    buf = dev.dma_buffer(len(data), data)
    prp1, prp2 = dev.prps(buf, len(data))
    return dev.cmd(q, nq.sqe(opcode, nsid=1, prp1=prp1, prp2=prp2, cdw10=slba,
                             cdw12=(len(data) // 512 - 1) | dtype << 20, cdw13=dspec << 16))


def read(dev, q, slba, nblocks, dtype=0, dspec=0):
    buf = dev.dma_buffer(nblocks * 512)
    cqe = dev.cmd(q, nq.sqe(nq.IO_READ, nsid=1, prp1=buf, cdw10=slba,
                            cdw12=(nblocks - 1) | dtype << 20, cdw13=dspec << 16))
    return cqe, dev.qt.memread(buf, nblocks * 512)


def invalid_field(cqe, why):
    assert_status(cqe, G, nq.SC_INVALID_FIELD, why)


# -- Identify directive -------------------------------------------------------------------


def test_oacs_reports_directives(dev):
    """Identify Controller OACS bit 5: Directives supported (8.1.8)."""
    assert dev.id.oacs & OACS_DIRECTIVES


def test_identify_return_parameters(dev):
    """8.1.8.2.1.1, Figure 601: Identify and Streams supported; Identify
    always enabled, Streams not until the host enables it; SDIRCLR 0."""
    assert identify_params(dev) == (0b11, 0b01, 0)
    assert enable(dev).ok
    assert identify_params(dev) == (0b11, 0b11, 0)
    assert enable(dev, on=False).ok
    assert identify_params(dev) == (0b11, 0b01, 0)


def test_identify_return_parameters_broadcast_is_invalid_field(svm, dev):
    """8.1.8.2.1.1: NSID FFFFFFFFh is Invalid Field in Command."""
    cqe, _ = recv(dev, DIR_IDENTIFY, OP_RETURN_PARAMS, nsid=ALL)
    invalid_field(cqe, "Identify Return Parameters for FFFFFFFFh")
    assert_still_works(svm, dev)


@pytest.mark.parametrize("dtype", [DIR_IDENTIFY, 0x02, 0x0F, 0xFF])
def test_enable_other_directive_is_invalid_field(svm, dev, dtype):
    """Figure 602: enabling the Identify directive, or one that is not
    supported (Data Placement, vendor specific, reserved), is Invalid Field."""
    invalid_field(enable(dev, dtype=dtype), f"enable directive {dtype:#x}")
    assert_still_works(svm, dev)


# -- Streams: parameters and the Linux 5.10 sequence --------------------------------------


def test_stream_return_parameters(dev):
    """Figure 608: MSL from the engine, NSSA all of it, nothing open; SWS is
    one program operation capped at 4 KiB, SGS a stripe in SWS units
    (the same geometry as Identify Namespace's NPWG and NOWS)."""
    ns = dev.identify_ns(1)
    assert enable(dev).ok
    p = stream_params(dev)
    program_lbas, stripe_lbas = ns.npwg + 1, ns.nows + 1
    sws = max(min(program_lbas * 512, 4096) // 512, 1)
    assert p == dict(msl=MSL, nssa=MSL, nsso=0, nssc=0, sws=sws,
                     sgs=max(stripe_lbas // sws, 1), nsa=0, nso=0)
    assert p["sws"] * ns.lba_size <= 4096


def test_linux_510_probe_sequence(dev):
    """What Linux 5.10 (nvme_core.streams=1) sends: Enable Streams and Return
    Parameters both with NSID FFFFFFFFh; it needs NSSA >= 4, then reads the
    namespace's SWS/SGS with its own NSID.  For FFFFFFFFh NSA/NSO are 0."""
    assert enable(dev, nsid=ALL).ok
    p = stream_params(dev, nsid=ALL)
    assert p["msl"] == MSL and p["nssa"] >= 4 and p["nsa"] == p["nso"] == 0
    assert p["sws"] == stream_params(dev, nsid=1)["sws"] > 0
    assert identify_params(dev)[1] & 0b10


# -- Streams: writes, implicit open, Get Status ---------------------------------------------


def test_writes_open_streams_and_read_back(dev, q):
    """8.1.8.3: a Write with DTYPE 1 opens its stream; Get Status lists the
    open identifiers in ascending order; the data reads back."""
    assert enable(dev).ok
    for i, sid in enumerate((3, 1, 7)):
        assert write(dev, q, 8 * i, bytes([sid]) * 4096, dtype=1, dspec=sid).ok
    assert open_streams(dev) == [1, 3, 7]
    p = stream_params(dev)
    assert (p["nso"], p["nsso"], p["nsa"]) == (3, 3, 0)
    for i, sid in enumerate((3, 1, 7)):
        cqe, data = read(dev, q, 8 * i, 8)
        assert cqe.ok and data == bytes([sid]) * 4096


def test_writes_reach_the_engine_streams(svm, dev, q):
    """The stream of a write is the engine's tag: identifiers 1..MSL keep
    their numbers, so the engine's per-stream host pages move for them."""
    assert enable(dev).ok
    before = svm.stats()["ftl"]["placement"]["host_pages"]
    assert write(dev, q, 0, b"\x11" * 8192, dtype=1, dspec=2).ok
    assert write(dev, q, 64, b"\x22" * 4096, dtype=1, dspec=5).ok
    after = svm.stats()["ftl"]["placement"]["host_pages"]
    moved = sorted(int(k) for k in after if after[k] != before.get(k, 0))
    assert moved == [2, 5], (before, after)     # physical stream t for tag t (stream-map=fixed)


def test_dspec_zero_is_an_ordinary_write(dev, q):
    """8.1.8.1: DTYPE 1 with DSPEC 0 is processed as if DTYPE were 0."""
    assert enable(dev).ok
    assert write(dev, q, 0, b"\x01" * 512, dtype=1, dspec=0).ok
    assert open_streams(dev) == []


def test_stream_id_above_msl_is_valid(dev, q):
    """8.1.8.3: identifiers are the host's, 0001h-FFFFh, sparse; MSL limits
    how many are open at once, not their values.  Such a write succeeds."""
    assert enable(dev).ok
    assert write(dev, q, 0, b"\x02" * 512, dtype=1, dspec=0xFFFF).ok
    assert write(dev, q, 1, b"\x03" * 512, dtype=1, dspec=MSL + 1).ok
    assert open_streams(dev) == [MSL + 1, 0xFFFF]


def test_open_beyond_msl_releases_least_recent(dev, q):
    """8.1.8.3: with no allocation and NSSA exhausted, a write to a new
    identifier succeeds and the controller releases an open one: here the
    least recently written."""
    assert enable(dev).ok
    for sid in range(1, MSL + 1):
        assert write(dev, q, sid, b"\x04" * 512, dtype=1, dspec=sid).ok
    assert write(dev, q, 1, b"\x05" * 512, dtype=1, dspec=1).ok      # 2 is now the oldest
    assert write(dev, q, 100, b"\x06" * 512, dtype=1, dspec=100).ok
    assert open_streams(dev) == [1] + list(range(3, MSL + 1)) + [100]


def test_write_dtype_ignored_while_streams_disabled(dev, q):
    """8.1.8.1: with no I/O directive enabled, DTYPE and DSPEC are ignored:
    the write succeeds and opens nothing."""
    assert write(dev, q, 0, b"\x07" * 512, dtype=1, dspec=5).ok
    assert write(dev, q, 1, b"\x07" * 512, dtype=0xF, dspec=5).ok
    assert enable(dev).ok
    assert open_streams(dev) == []


@pytest.mark.parametrize("dtype", [0x2, 0x3, 0xF])
def test_write_unsupported_dtype_is_invalid_field(svm, dev, q, dtype):
    """8.1.8.1: with Streams enabled, a DTYPE that is not supported or not
    enabled is Invalid Field in Command, and nothing is written."""
    assert enable(dev).ok
    assert write(dev, q, 0, b"\x08" * 512).ok
    invalid_field(write(dev, q, 0, b"\x09" * 512, dtype=dtype, dspec=1), f"DTYPE {dtype}")
    assert read(dev, q, 0, 1)[1] == b"\x08" * 512
    assert open_streams(dev) == []
    assert_still_works(svm, dev)


def test_read_with_dtype_is_ignored(dev, q):
    """A Read has no DTYPE/DSPEC (NVM Command Set: CDW12 bits 23:16 and CDW13
    bits 31:8 are reserved), and a recipient is not required to check
    reserved fields (1.4.1.6): the read succeeds and opens no stream."""
    assert enable(dev).ok
    assert write(dev, q, 0, b"\x0a" * 512).ok
    cqe, data = read(dev, q, 0, 1, dtype=1, dspec=9)
    assert cqe.ok and data == b"\x0a" * 512
    assert open_streams(dev) == []


# -- Streams: release and allocation --------------------------------------------------------


def test_release_identifier(dev, q):
    """8.1.8.3.2.1: Release Identifier closes the stream; an identifier that
    is not open is not an error."""
    assert enable(dev).ok
    for sid in (1, 3, 7):
        assert write(dev, q, sid, b"\x0b" * 512, dtype=1, dspec=sid).ok
    assert send(dev, DIR_STREAMS, OP_RELEASE_ID, dspec=3).ok
    assert open_streams(dev) == [1, 7]
    assert send(dev, DIR_STREAMS, OP_RELEASE_ID, dspec=42).ok
    assert send(dev, DIR_STREAMS, OP_RELEASE_ID, dspec=3).ok
    assert open_streams(dev) == [1, 7]


def test_release_identifier_broadcast_is_invalid_field(svm, dev):
    """8.1.8.3.2.1: NSID FFFFFFFFh is Invalid Field in Command."""
    assert enable(dev).ok
    invalid_field(send(dev, DIR_STREAMS, OP_RELEASE_ID, nsid=ALL, dspec=1),
                  "Release Identifier for FFFFFFFFh")
    assert_still_works(svm, dev)


def test_allocate_and_release_resources(svm, dev):
    """8.1.8.3.1.3 and 8.1.8.3.2.2: Allocate returns NSA in dword 0 and
    takes it from NSSA; a second Allocate is Invalid Field; Release
    Resources gives it back, and again with nothing allocated does nothing."""
    assert enable(dev).ok
    cqe, _ = recv(dev, DIR_STREAMS, OP_ALLOCATE, 4, cdw12=4)
    assert cqe.ok and cqe.dw0 == 4
    p = stream_params(dev)
    assert (p["nsa"], p["nssa"]) == (4, MSL - 4)
    assert stream_params(dev, nsid=ALL)["nssa"] == MSL - 4
    cqe, _ = recv(dev, DIR_STREAMS, OP_ALLOCATE, 4, cdw12=2)
    invalid_field(cqe, "Allocate Resources while resources are allocated")
    assert send(dev, DIR_STREAMS, OP_RELEASE_RES).ok
    assert stream_params(dev)["nsa"] == 0 and stream_params(dev)["nssa"] == MSL
    assert send(dev, DIR_STREAMS, OP_RELEASE_RES).ok
    assert_still_works(svm, dev)


def test_allocate_beyond_nssa_grants_nssa(dev):
    """8.1.8.3.1.3: the controller may allocate less than requested: asking
    for more than NSSA grants NSSA."""
    assert enable(dev).ok
    cqe, _ = recv(dev, DIR_STREAMS, OP_ALLOCATE, 4, cdw12=1000)
    assert cqe.ok and cqe.dw0 == MSL
    assert stream_params(dev)["nssa"] == 0


def test_allocation_limits_open_streams(dev, q):
    """NSA bounds the open streams: an allocation smaller than what is open
    releases the least recently written; a write to a new identifier at the
    limit releases one; Release Resources closes the namespace's streams."""
    assert enable(dev).ok
    for sid in (5, 6, 7):
        assert write(dev, q, sid, b"\x0c" * 512, dtype=1, dspec=sid).ok
    cqe, _ = recv(dev, DIR_STREAMS, OP_ALLOCATE, 4, cdw12=2)
    assert cqe.ok and cqe.dw0 == 2
    assert open_streams(dev) == [6, 7]
    assert write(dev, q, 9, b"\x0d" * 512, dtype=1, dspec=9).ok
    assert open_streams(dev) == [7, 9]
    assert stream_params(dev, nsid=ALL)["nsso"] == 0
    assert send(dev, DIR_STREAMS, OP_RELEASE_RES).ok
    assert open_streams(dev) == []


def test_allocate_broadcast_is_invalid_field(svm, dev):
    """Allocate Resources is for one namespace; FFFFFFFFh is not defined for
    it (Figure 93: Invalid Field in Command)."""
    assert enable(dev).ok
    cqe, _ = recv(dev, DIR_STREAMS, OP_ALLOCATE, 4, nsid=ALL, cdw12=1)
    invalid_field(cqe, "Allocate Resources for FFFFFFFFh")
    assert_still_works(svm, dev)


def test_disable_releases_everything(dev, q):
    """8.1.8.3: when Streams is disabled, every stream and resource of the
    namespace is released."""
    assert enable(dev).ok
    assert write(dev, q, 0, b"\x0e" * 512, dtype=1, dspec=4).ok
    assert recv(dev, DIR_STREAMS, OP_ALLOCATE, 4, cdw12=3)[0].ok
    assert enable(dev, on=False).ok
    assert enable(dev).ok
    assert open_streams(dev) == []
    assert stream_params(dev)["nsa"] == 0


def test_controller_reset_disables_streams(dev):
    """8.1.8.2.2.1 with SDIRCLR 0: a Controller Level Reset disables Streams
    and so releases its streams and resources."""
    q = dev.create_io_queue(1, 16)
    assert enable(dev).ok
    assert write(dev, q, 0, b"\x0f" * 512, dtype=1, dspec=2).ok
    assert recv(dev, DIR_STREAMS, OP_ALLOCATE, 4, cdw12=2)[0].ok
    dev.enable()                                    # CC.EN 1 -> 0 -> 1
    assert identify_params(dev)[1] == 0b01
    assert enable(dev).ok
    assert open_streams(dev) == []
    assert stream_params(dev)["nsa"] == 0


# -- malformed directives -------------------------------------------------------------------


@pytest.mark.parametrize("opcode", [ADM_DIRECTIVE_RECV, ADM_DIRECTIVE_SEND])
@pytest.mark.parametrize("dtype", [0x02, 0x03, 0x0F, 0xFF])
def test_unknown_directive_type_is_invalid_field(svm, dev, opcode, dtype):
    """8.1.8: a Directive Type that is not supported is Invalid Field."""
    cqe = (recv(dev, dtype, 1)[0] if opcode == ADM_DIRECTIVE_RECV else send(dev, dtype, 1))
    invalid_field(cqe, f"directive type {dtype:#x}")
    assert_still_works(svm, dev)


@pytest.mark.parametrize("cmd,dtype,doper", [
    ("recv", DIR_IDENTIFY, 0x00), ("recv", DIR_IDENTIFY, 0x02), ("recv", DIR_IDENTIFY, 0xFF),
    ("recv", DIR_STREAMS, 0x00), ("recv", DIR_STREAMS, 0x04), ("recv", DIR_STREAMS, 0xFF),
    ("send", DIR_IDENTIFY, 0x00), ("send", DIR_IDENTIFY, 0x02),
    ("send", DIR_STREAMS, 0x00), ("send", DIR_STREAMS, 0x03), ("send", DIR_STREAMS, 0xFF),
])
def test_unknown_operation_is_invalid_field(svm, dev, cmd, dtype, doper):
    """Figures 600 and 605: reserved Directive Operations are Invalid Field."""
    assert enable(dev).ok
    cqe = recv(dev, dtype, doper)[0] if cmd == "recv" else send(dev, dtype, doper)
    invalid_field(cqe, f"{cmd} dtype {dtype} doper {doper:#x}")
    assert_still_works(svm, dev)


@pytest.mark.parametrize("cmd,doper", [("recv", OP_RETURN_PARAMS), ("recv", OP_GET_STATUS),
                                       ("recv", OP_ALLOCATE), ("send", OP_RELEASE_ID),
                                       ("send", OP_RELEASE_RES)])
def test_streams_not_enabled_is_invalid_field(svm, dev, cmd, doper):
    """8.1.8: a directive that is supported but disabled makes every Directive
    Send and Receive of its type Invalid Field in Command."""
    cqe = (recv(dev, DIR_STREAMS, doper, cdw12=1)[0] if cmd == "recv"
           else send(dev, DIR_STREAMS, doper, dspec=1))
    invalid_field(cqe, f"Streams {cmd} {doper} while disabled")
    assert_still_works(svm, dev)


@pytest.mark.parametrize("nsid", [0, 2, 0xFFFFFFFE])
@pytest.mark.parametrize("cmd,dtype,doper", [
    ("recv", DIR_IDENTIFY, OP_RETURN_PARAMS), ("recv", DIR_STREAMS, OP_RETURN_PARAMS),
    ("recv", DIR_STREAMS, OP_GET_STATUS), ("recv", DIR_STREAMS, OP_ALLOCATE),
    ("send", DIR_IDENTIFY, OP_ENABLE), ("send", DIR_STREAMS, OP_RELEASE_ID),
    ("send", DIR_STREAMS, OP_RELEASE_RES),
])
def test_bad_nsid_is_invalid_namespace(svm, dev, nsid, cmd, dtype, doper):
    """Figure 93: an NSID that names no namespace (0, beyond NN, FFFFFFFEh) is
    Invalid Namespace or Format."""
    assert enable(dev).ok
    cdw12 = DIR_STREAMS << 8 | 1 if dtype == DIR_IDENTIFY and cmd == "send" else 1
    cqe = (recv(dev, dtype, doper, nsid=nsid, cdw12=cdw12)[0] if cmd == "recv"
           else send(dev, dtype, doper, nsid=nsid, cdw12=cdw12))
    assert_status(cqe, G, nq.SC_INVALID_NAMESPACE, f"{cmd} {dtype}/{doper} nsid {nsid:#x}")
    assert_still_works(svm, dev)


@pytest.mark.parametrize("dtype,doper,size", [(DIR_IDENTIFY, OP_RETURN_PARAMS, 4096),
                                              (DIR_STREAMS, OP_RETURN_PARAMS, 32),
                                              (DIR_STREAMS, OP_GET_STATUS, 6)])
def test_short_numd_transfers_numd_dwords(svm, dev, q, dtype, doper, size):
    """5.1.6: NUMD is the number of dwords to transfer.  Shorter than the
    structure is not an error: the controller transfers exactly NUMD dwords
    (the start of the structure) and writes nothing beyond them."""
    assert enable(dev).ok
    assert write(dev, q, 0, b"\x10" * 512, dtype=1, dspec=6).ok
    cqe, full = recv(dev, dtype, doper, 4096)
    assert cqe.ok
    cqe, short = recv(dev, dtype, doper, 4096, numd=0)
    assert cqe.ok
    assert short[:4] == full[:4] and short[4:] == b"\xa5" * (len(short) - 4)
    assert full[size:4096] == bytes(4096 - size)        # zeroes past the structure
    assert_still_works(svm, dev)


@pytest.mark.parametrize("numd", [(512 << 10) // 4, 0xFFFFFFFF])
def test_numd_beyond_mdts_is_invalid_field(svm, dev, numd):
    """A transfer beyond MDTS (512 KiB) is Invalid Field in Command, as for
    every other command with data; NUMD all ones does not wrap."""
    cqe, _ = recv(dev, DIR_IDENTIFY, OP_RETURN_PARAMS, 4096, numd=numd)
    invalid_field(cqe, "NUMD beyond MDTS")
    assert_still_works(svm, dev)


def test_error_paths_and_streams_are_traced(qemu_binary):
    """Every refused directive has the trace event nhc_err_directive with
    its reason; streams opening and closing are traced too."""
    vm = nq.Vm(qemu_binary, MODEL, image_size=IMAGE_SIZE, serial=SERIAL,
               device_props=f"streams={MSL}", extra_args=("-trace", "nhc_*"))
    try:
        dev = nq.Controller(vm)
        dev.enable()
        q = dev.create_io_queue(1, 16)
        invalid_field(send(dev, DIR_STREAMS, OP_RELEASE_ID, dspec=1), "disabled")
        assert enable(dev).ok
        assert write(dev, q, 0, b"\x12" * 512, dtype=1, dspec=4).ok
        invalid_field(write(dev, q, 0, b"\x12" * 512, dtype=2, dspec=4), "DTYPE 2")
        assert send(dev, DIR_STREAMS, OP_RELEASE_ID, dspec=4).ok
        log = vm.stderr_text()
        for text in ("send: Streams not enabled", "write: DTYPE not supported or enabled",
                     "nhc_stream_open stream 4 on engine stream 4",
                     "nhc_stream_release stream 4 (engine stream 4): Release Identifier",
                     "nhc_err_status nhc_admin_directive_send:"):
            assert text in log, f"{text!r} not in QEMU's log"
    finally:
        vm.close()


def test_get_status_broadcast_lists_unallocated_streams(dev, q):
    """8.1.8.3.1.2: for FFFFFFFFh, the streams open on NVM subsystem
    resources, i.e. in namespaces without an allocation."""
    assert enable(dev).ok
    for sid in (2, 9):
        assert write(dev, q, sid, b"\x13" * 512, dtype=1, dspec=sid).ok
    assert open_streams(dev, nsid=ALL) == [2, 9]
    assert recv(dev, DIR_STREAMS, OP_ALLOCATE, 4, cdw12=4)[0].ok
    assert open_streams(dev, nsid=ALL) == []
    assert open_streams(dev) == [2, 9]


# -- the default device ----------------------------------------------------------------------


def test_default_device_supports_streams(vm, nvme, ioq):
    """A default device is a multi-stream SSD (streams=auto): Streams is
    supported with MSL 16, what `nvme dir-send -D 0 -O 1 -T 1 -e 1` and
    `nvme dir-receive -D 1 -O 1 -H` do succeed, and streams 1 and 16 land
    on distinct physical streams (17 frontiers: one per stream and the
    untagged one)."""
    assert identify_params(nvme) == (0b11, 0b01, 0)
    assert enable(nvme).ok
    assert identify_params(nvme)[1] == 0b11
    p = stream_params(nvme)
    assert (p["msl"], p["nssa"], p["nsso"]) == (16, 16, 0)
    for sid in (1, 16):
        assert write(nvme, ioq, sid * 8, bytes([sid]) * 4096, dtype=1, dspec=sid).ok
    assert open_streams(nvme) == [1, 16]
    doc = vm.stats()
    pl = doc["ftl"]["placement"]
    assert pl["host_streams"] == 16 and pl["shared_streams"] == 0
    assert len(pl["host_pages"]) == 17
    assert pl["stream_pages"]["1"] == 1 and pl["stream_pages"]["16"] == 1
    assert pl["host_pages"]["1"] == 1 and pl["host_pages"]["16"] == 1
    assert_still_works(vm, nvme)


# -- Streams not supported -------------------------------------------------------------------


@pytest.fixture(params=["streams=0", "ftl=fast", "buffer=lru"])
def plain(request, qemu_binary):
    """A device whose engine does not place: streams=0, or streams=auto
    where it cannot (a hybrid FTL, a write buffer)."""
    with running(qemu_binary, request.param) as machine:
        yield machine


def test_without_placement_only_identify_is_supported(plain):
    """Without placement (nh_engine_stream_limit 0) only the Identify
    directive is reported; Streams is Invalid Field everywhere, and a
    write's DTYPE is ignored (no I/O directive enabled)."""
    nvme = enabled_controller(plain)
    ioq = nvme.create_io_queue(1, 64)
    vm = plain
    assert nvme.id.oacs & OACS_DIRECTIVES
    assert identify_params(nvme) == (0b01, 0b01, 0)
    invalid_field(enable(nvme), "enable Streams when not supported")
    invalid_field(recv(nvme, DIR_STREAMS, OP_RETURN_PARAMS, 32, nsid=ALL)[0],
                  "Streams Return Parameters when not supported")
    invalid_field(send(nvme, DIR_STREAMS, OP_RELEASE_ID, dspec=1),
                  "Release Identifier when not supported")
    assert write(nvme, ioq, 0, b"\x11" * 512, dtype=1, dspec=1).ok
    assert_still_works(vm, nvme)


# -- robustness ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_directives_keep_state_consistent(svm, dev, q, seed):
    """Seeded random Directive Send/Receive (any DTYPE, DOPER, NSID, NUMD,
    CDW12) and writes with random DTYPE/DSPEC: every command completes, QEMU
    keeps running, and the streams state stays within its limits."""
    import random
    rng = random.Random(seed)
    nsids = [0, 1, 1, 1, 2, ALL]
    for _ in range(300):
        kind = rng.random()
        dtype, doper = rng.choice([0, 1, 1, 1, 2, 0xFF]), rng.choice([0, 1, 1, 2, 2, 3, 4])
        if kind < 0.35:
            recv(dev, dtype, doper, 64, nsid=rng.choice(nsids),
                 cdw12=rng.choice([0, 1, 3, MSL, 0xFFFF]), numd=rng.choice([0, 1, 15]))
        elif kind < 0.6:
            send(dev, dtype, doper, nsid=rng.choice(nsids), dspec=rng.randrange(0x10000),
                 cdw12=rng.choice([0, 0x100, 0x101, 0x101, 0x101, 0x201]))
        else:
            write(dev, q, rng.randrange(1024), b"\x14" * 512, dtype=rng.choice([0, 1, 1, 2]),
                  dspec=rng.choice([0, 1, 2, MSL, MSL + 1, rng.randrange(0x10000)]))
    assert_still_works(svm, dev)
    if not identify_params(dev)[1] & 0b10:
        assert enable(dev).ok
    ids, p = open_streams(dev), stream_params(dev)
    assert ids == sorted(set(ids)) and len(ids) == p["nso"]
    assert p["nso"] <= (p["nsa"] or p["nssa"]) <= MSL and p["nsa"] + p["nssa"] == MSL
