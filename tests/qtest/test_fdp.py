"""Flexible Data Placement (TP4146, NVMe Base Specification 2.0 and later).

The device runs with `fdp=on,streams=3`: FDP is enabled on endurance group 1
from power-on with 4 reclaim unit handles (placement handles 0..3 = engine
tags 0..3), one reclaim group.  The geometry is small (2 planes of 64-page
blocks, 8 MiB) so that a reclaim unit is 512 KiB and GC runs after a few
MiB of overwrites.  docs/device.md ("Flexible Data Placement") lists every
status and decision these tests hold the device to.
"""

import random
import struct

import pytest

import nvme_qtest as nq
from conftest import (MODEL, SERIAL, assert_status, assert_still_works, enabled_controller,
                      running)

G = nq.SCT_GENERIC
SC_FDP_DISABLED = 0x29
LOG_ENDGRP, LOG_CONFS, LOG_RUHU, LOG_STATS, LOG_EVENTS = 0x09, 0x20, 0x21, 0x22, 0x23
FEAT_FDP, FEAT_FDP_EVENTS = 0x1D, 0x1E
IO_MGMT_RECV, IO_MGMT_SEND = 0x12, 0x1D
ADM_DIRECTIVE_SEND, ADM_DIRECTIVE_RECV = 0x19, 0x1A
EVT_RU_NOT_FULLY_WRITTEN, EVT_INVALID_PID = 0x00, 0x03
NRUH = 4
PAGE_SIZE, PAGES, PLANES = 4096, 64, 2
RUNS = PAGE_SIZE * PAGES * PLANES
IMAGE = 8 << 20
GEOMETRY = f"channels={PLANES},ways=1,pages={PAGES},ba-size=0"
ALL = 0xFFFFFFFF

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's FDP")


def start(qemu, props):
    return nq.Vm(qemu, MODEL, image_size=IMAGE, serial=SERIAL, device_props=props)


@pytest.fixture
def fvm(qemu_binary):
    with running(qemu_binary, f"fdp=on,streams={NRUH - 1},{GEOMETRY}", IMAGE) as machine:
        yield machine


@pytest.fixture
def dev(fvm):
    return enabled_controller(fvm)


@pytest.fixture
def q(dev):
    return dev.create_io_queue(1, 64)


# -- helpers ------------------------------------------------------------------------------


def stat(vm, path):
    v = vm.stats()
    for k in path.split("."):
        v = v[k]
    return v


def log(dev, lid, length, lsi=1, lsp=0, numd=None):
    """Get Log Page of endurance group `lsi` into a buffer with a canary after `length`."""
    buf = dev.dma_buffer(length + 4096, b"\xa5" * (length + 4096))
    numd = length // 4 - 1 if numd is None else numd
    prp1, prp2 = dev.prps(buf, length)
    cqe = dev.admin_cmd(nq.sqe(nq.ADM_GET_LOG_PAGE, nsid=ALL, prp1=prp1, prp2=prp2,
                               cdw10=lid | lsp << 8 | (numd & 0xFFFF) << 16,
                               cdw11=lsi << 16 | numd >> 16))
    return cqe, dev.qt.memread(buf, length + 4096)


def config_log(dev):
    cqe, d = log(dev, LOG_CONFS, 4096)
    assert cqe.ok, cqe
    return d


def ruh_status(dev, q, length=4096, numd=None, nsid=1, mo=1):
    buf = dev.dma_buffer(length + 4096, b"\xa5" * (length + 4096))
    numd = length // 4 - 1 if numd is None else numd
    prp1, prp2 = dev.prps(buf, length)
    cqe = dev.cmd(q, nq.sqe(IO_MGMT_RECV, nsid=nsid, prp1=prp1, prp2=prp2, cdw10=mo,
                            cdw11=numd))
    return cqe, dev.qt.memread(buf, length + 4096)


def ruamw(dev, q):
    """RUAMW of each placement identifier, in LBAs, from Reclaim Unit Handle Status."""
    cqe, d = ruh_status(dev, q)
    assert cqe.ok, cqe
    n = struct.unpack_from("<H", d, 14)[0]
    out = {}
    for i in range(n):
        pid, ruhid, earutr, left = struct.unpack_from("<HHIQ", d, 16 + 32 * i)
        assert pid == ruhid == i and earutr == 0
        out[pid] = left
    return out


def ruh_update(dev, q, pids, nsid=1, npid=None, mo=1):
    data = struct.pack(f"<{len(pids)}H", *pids) if pids else b"\0\0"
    buf = dev.dma_buffer(len(data), data)
    npid = len(pids) if npid is None else npid
    return dev.cmd(q, nq.sqe(IO_MGMT_SEND, nsid=nsid, prp1=buf,
                             cdw10=mo | ((npid - 1) & 0xFFFF) << 16))


def write(dev, q, slba, nlb, buf, dtype=2, dspec=0, opcode=nq.IO_WRITE):
    prp1, prp2 = dev.prps(buf, nlb * 512)
    return dev.cmd(q, nq.sqe(opcode, nsid=1, prp1=prp1, prp2=prp2, cdw10=slba,
                             cdw12=(nlb - 1) | dtype << 20, cdw13=dspec << 16))


def set_events(dev, ph, types, enable=True, nsid=1):
    data = bytes(types) or b"\0"
    buf = dev.dma_buffer(len(data), data)
    return dev.admin_cmd(nq.sqe(nq.ADM_SET_FEATURES, nsid=nsid, prp1=buf, cdw10=FEAT_FDP_EVENTS,
                                cdw11=len(types) << 16 | ph, cdw12=int(enable)))


def get_events_feature(dev, ph, noet=8, nsid=1):
    buf = dev.dma_buffer(4096)
    cqe = dev.admin_cmd(nq.sqe(nq.ADM_GET_FEATURES, nsid=nsid, prp1=buf,
                               cdw10=FEAT_FDP_EVENTS, cdw11=noet << 16 | ph))
    d = dev.qt.memread(buf, 2 * cqe.dw0)
    return cqe, {d[2 * i]: d[2 * i + 1] for i in range(cqe.dw0)}


def events(dev, host=True):
    cqe, d = log(dev, LOG_EVENTS, 64 + 63 * 64, lsp=int(host))
    assert cqe.ok, cqe
    n = struct.unpack_from("<I", d, 0)[0]
    out = []
    for i in range(n):
        e = d[64 + 64 * i: 128 + 64 * i]
        typ, flags, pid, ts, nsid = struct.unpack_from("<BBHQI", e, 0)
        out.append(dict(type=typ, flags=flags, pid=pid, nsid=nsid, ruhid=e[34]))
    return out


def stats_log(dev):
    cqe, d = log(dev, LOG_STATS, 64)
    assert cqe.ok, cqe
    hbmw, _, mbmw, _, mbe, _ = struct.unpack_from("<6Q", d, 0)
    return hbmw, mbmw, mbe


def invalid_field(cqe, why):
    assert_status(cqe, G, nq.SC_INVALID_FIELD, why)


# -- Identify and the configuration ---------------------------------------------------------


def test_identify_reports_fdp_and_endurance_group(dev):
    """CTRATT bit 19 (FDPS) and bit 4 (endurance groups), ENDGIDMAX 1; the
    namespace is in endurance group 1; the Identify directive reports Data
    Placement (bit 2) supported and enabled and Streams not supported."""
    ctratt = struct.unpack_from("<I", dev.id.raw, 96)[0]
    assert ctratt & (1 << 19) and ctratt & (1 << 4)
    assert struct.unpack_from("<H", dev.id.raw, 340)[0] == 1
    cqe, ns = dev.identify(nq.CNS_NS, nsid=1)
    assert cqe.ok and struct.unpack_from("<H", ns, 102)[0] == 1
    buf = dev.dma_buffer(4096)
    cqe = dev.admin_cmd(nq.sqe(ADM_DIRECTIVE_RECV, nsid=1, prp1=buf, cdw10=1023,
                               cdw11=0x0001))
    d = dev.qt.memread(buf, 64)
    assert cqe.ok and d[0] == 0b101 and d[32] == 0b101


def test_configuration_log_layout(dev, fvm):
    """FDP Configurations log (20h): one configuration (NUMFDPC 0's based),
    valid, one reclaim group, 4 handles all Initially Isolated, MAXPIDS 3,
    RUNS a block on every plane, no time limit; SIZE covers it exactly and
    the canary after it is untouched (zeroes up to NUMD, nothing beyond)."""
    d = config_log(dev)
    numfdpc, ver, size = struct.unpack_from("<HBxI", d, 0)
    assert (numfdpc, ver, size) == (0, 0, 16 + 64 + 4 * NRUH)
    dsze, fdpa, vss, nrg, nruh, maxpids, nnss, runs, erutl = \
        struct.unpack_from("<HBBIHHIQI", d, 16)
    assert (dsze, fdpa, vss, nrg, nruh, maxpids, nnss) == (64 + 4 * NRUH, 0x80, 0, 1, NRUH,
                                                          NRUH - 1, 0)
    assert runs == RUNS == stat(fvm, "geometry.parallel_units") * PAGES * PAGE_SIZE
    assert erutl == 0
    assert [d[80 + 4 * i] for i in range(NRUH)] == [1] * NRUH
    assert d[size:4096] == bytes(4096 - size) and d[4096:4100] == b"\xa5" * 4


def test_configuration_log_header_first_like_nvme_cli(dev):
    """nvme-cli reads the 16-byte header, then SIZE bytes: a NUMD shorter
    than the log transfers exactly that much and succeeds."""
    cqe, d = log(dev, LOG_CONFS, 16)
    assert cqe.ok
    size = struct.unpack_from("<I", d, 4)[0]
    assert d[16:20] == b"\xa5" * 4
    cqe, d2 = log(dev, LOG_CONFS, size)
    assert cqe.ok and d2[:16] == d[:16] and d2[size:size + 4] == b"\xa5" * 4


def test_fdp_feature_enabled_from_power_on(dev, fvm):
    """Get Features FDP (1Dh) of endurance group 1: FDPE 1, configuration 0;
    not changeable (SEL 11b).  Set Features keeping it succeeds; disabling it
    is Command Sequence Error (the namespace exists); another configuration
    or endurance group is Invalid Field."""
    cqe = dev.get_features(FEAT_FDP, cdw11=1)
    assert cqe.ok and cqe.dw0 == 0x1
    cqe = dev.get_features(FEAT_FDP, sel=3, cdw11=1)
    assert cqe.ok and not cqe.dw0 & 0b100

    def set_fdp(endgid, cdw12):
        return dev.admin_cmd(nq.sqe(nq.ADM_SET_FEATURES, cdw10=FEAT_FDP, cdw11=endgid,
                                    cdw12=cdw12))
    assert set_fdp(1, 0x1).ok
    assert_status(set_fdp(1, 0x0), G, nq.SC_COMMAND_SEQUENCE_ERROR, "disable FDP")
    invalid_field(set_fdp(1, 0x101), "configuration index 1")
    invalid_field(set_fdp(2, 0x1), "endurance group 2")
    invalid_field(dev.get_features(FEAT_FDP, cdw11=2), "get, endurance group 2")
    assert dev.get_features(FEAT_FDP, cdw11=1).dw0 == 0x1
    assert_still_works(fvm, dev)


def test_ruh_usage_log(dev):
    """RUH Usage log (21h): every handle is referenced by namespace 1's
    placement handles (RUHA 01h, host specified)."""
    cqe, d = log(dev, LOG_RUHU, 8 + 8 * NRUH)
    assert cqe.ok
    assert struct.unpack_from("<H", d, 0)[0] == NRUH
    assert [d[8 + 8 * i] for i in range(NRUH)] == [1] * NRUH


def test_endurance_group_log(dev, q):
    """Endurance Group Information (09h): host write commands and media
    units written move with a write."""
    buf = dev.dma_buffer(4096, b"\x11" * 4096)
    assert write(dev, q, 0, 8, buf, dspec=1).ok
    cqe, d = log(dev, LOG_ENDGRP, 512)
    assert cqe.ok
    assert struct.unpack_from("<Q", d, 112)[0] == 1    # host write commands
    assert struct.unpack_from("<Q", d, 80)[0] == 1     # media units written (thousands of 512 B)


# -- reclaim unit handles and the engine ------------------------------------------------------


def test_ruh_status_follows_writes_and_update(dev, q, fvm):
    """Reclaim Unit Handle Status: RUAMW is the LBAs left in each handle's
    reclaim unit.  A 4 KiB write with DTYPE 2 / DSPEC 2 takes 8 LBAs from
    handle 2 only and lands on engine tag 2 (ftl.placement.host_pages."2");
    Reclaim Unit Handle Update of PID 2 gives it an empty unit again."""
    full = RUNS // 512
    assert ruamw(dev, q) == {i: full for i in range(NRUH)}
    buf = dev.dma_buffer(4096, b"\x22" * 4096)
    assert write(dev, q, 64, 8, buf, dspec=2).ok
    assert ruamw(dev, q) == {0: full, 1: full, 2: full - 8, 3: full}
    assert stat(fvm, "ftl.placement.host_pages") == {"0": 0, "1": 0, "2": 1, "3": 0}
    assert ruh_update(dev, q, [2]).ok
    assert ruamw(dev, q)[2] == full
    assert write(dev, q, 80, 8, buf, dspec=2).ok
    assert ruamw(dev, q)[2] == full - 8
    cqe, d = dev.read(q, 64, 8)
    assert cqe.ok and d == b"\x22" * 4096
    assert fvm.qmp.execute("qom-get", path="/machine/peripheral/nvme0",
                           property="x-check") == "ok"


def test_writes_without_directive_use_handle_0(dev, q, fvm):
    """A write with no directive (DTYPE 0) goes through placement handle 0,
    the engine's untagged frontier."""
    buf = dev.dma_buffer(8192, b"\x33" * 8192)
    assert write(dev, q, 0, 16, buf, dtype=0, dspec=3).ok
    assert stat(fvm, "ftl.placement.host_pages")["0"] == 2
    assert ruamw(dev, q)[0] == RUNS // 512 - 16


def test_stats_log_is_the_engines_bytes(dev, q, fvm):
    """FDP Statistics (22h): HBMW is the bytes the host wrote, MBMW the pages
    the flash programmed, MBE the blocks erased, all from the engine; so
    MBMW / HBMW is the engine's WAF.  A fill and 3 times the namespace in
    random 4 KiB overwrites (a hot tenth on handle 1, the rest on handle 2)
    make GC copy pages: MBMW > HBMW and MBE > 0."""
    assert stats_log(dev) == (0, 0, 0)
    buf = dev.dma_buffer(128 << 10, b"\x44" * (128 << 10))
    assert write(dev, q, 0, 256, buf, dspec=1).ok
    hbmw, mbmw, mbe = stats_log(dev)
    assert hbmw == 128 << 10 and mbmw >= hbmw
    rng = random.Random(11)
    pages = IMAGE // PAGE_SIZE
    for slba in range(0, IMAGE // 512, 256):                   # fill once
        assert write(dev, q, slba, 256, buf, dspec=2).ok
    for _ in range(3 * pages):                                  # a hot tenth on handle 1
        hot = rng.random() < 0.8
        page = rng.randrange(pages // 10) if hot else rng.randrange(pages)
        assert write(dev, q, page * 8, 8, buf, dspec=1 if hot else 2).ok
    hbmw, mbmw, mbe = stats_log(dev)
    s = fvm.stats()
    assert hbmw == s["host"]["write_bytes"]
    assert mbmw == s["nand"]["page_programs"] * PAGE_SIZE
    assert mbe == s["nand"]["block_erases"] * PAGES * PAGE_SIZE
    assert s["ftl"]["gc_page_copies"] > 0 and mbmw > hbmw and mbe > 0
    assert abs(mbmw / hbmw - s["waf"]) < 1e-9
    print(f"FDP stats log: HBMW {hbmw} MBMW {mbmw} MBE {mbe} WAF {mbmw / hbmw:.4f}; "
          f"engine waf {s['waf']:.4f}; host pages per handle {s['ftl']['placement']}")


def hot_cold_waf(qemu, tagged):
    """A fill, then random 4 KiB overwrites, 80% into a hot tenth: hot data on
    handle 1 and cold on handle 2 when `tagged`, everything on handle 0
    otherwise.  Returns the WAF the FDP statistics log reports."""
    vm = start(qemu, f"fdp=on,streams={NRUH - 1},{GEOMETRY}")
    try:
        dev = nq.Controller(vm)
        dev.enable()
        q = dev.create_io_queue(1, 64)
        buf = dev.dma_buffer(128 << 10, b"\x5a" * (128 << 10))
        rng = random.Random(3)
        pages = IMAGE // PAGE_SIZE
        for slba in range(0, IMAGE // 512, 256):
            assert write(dev, q, slba, 256, buf, dspec=2 if tagged else 0).ok
        for _ in range(4 * pages):
            hot = rng.random() < 0.8
            page = rng.randrange(pages // 10) if hot else rng.randrange(pages // 10, pages)
            assert write(dev, q, page * 8, 8, buf, dspec=(1 if hot else 2) if tagged else 0).ok
        hbmw, mbmw, _ = stats_log(dev)
        return mbmw / hbmw
    finally:
        vm.close()


def test_placement_lowers_the_reported_waf(qemu_binary):
    """What FDP is for, measured by its own log: the same hot/cold overwrites
    through two handles (hot, cold) give a lower WAF than through one, because
    each handle fills blocks of its own (QEMU's nvme would report 1 for both)."""
    one, two = hot_cold_waf(qemu_binary, False), hot_cold_waf(qemu_binary, True)
    print(f"hot/cold WAF from the FDP statistics log: one handle {one:.3f}, "
          f"hot and cold on two handles {two:.3f}")
    assert 1 < two < one


# -- events -----------------------------------------------------------------------------------


def test_events_feature_and_log(dev, q, fvm):
    """FDP Events (1Eh) enables event types per placement handle (none by
    default); an Invalid Placement Identifier write (logged on handle 0) and
    an update of a partly written unit (RU Not Written to Capacity) are host
    events, in order; disabled types are not logged; no controller events."""
    buf = dev.dma_buffer(4096, b"\x55" * 4096)
    cqe, ev = get_events_feature(dev, 0)
    assert cqe.ok and ev == {EVT_RU_NOT_FULLY_WRITTEN: 0, EVT_INVALID_PID: 0}
    cqe = dev.get_features(FEAT_FDP_EVENTS, sel=3, nsid=1)     # capabilities: changeable, per ns
    assert cqe.ok and cqe.dw0 == 0b110
    assert write(dev, q, 0, 8, buf, dspec=9).ok                 # not enabled yet
    assert events(dev) == []
    assert set_events(dev, 0, [EVT_INVALID_PID]).ok
    assert set_events(dev, 1, [EVT_RU_NOT_FULLY_WRITTEN, EVT_INVALID_PID]).ok
    assert get_events_feature(dev, 0)[1] == {EVT_RU_NOT_FULLY_WRITTEN: 0, EVT_INVALID_PID: 1}
    assert write(dev, q, 0, 8, buf, dspec=9).ok
    assert write(dev, q, 8, 8, buf, dspec=1).ok
    assert ruh_update(dev, q, [1, 3]).ok                        # 3 has no events enabled
    ev = events(dev)
    assert [(e["type"], e["pid"], e["ruhid"]) for e in ev] == \
        [(EVT_INVALID_PID, 9, 0), (EVT_RU_NOT_FULLY_WRITTEN, 1, 1)]
    assert all(e["nsid"] == 1 and e["flags"] & 1 for e in ev)
    assert events(dev, host=False) == []
    assert set_events(dev, 1, [EVT_RU_NOT_FULLY_WRITTEN], enable=False).ok
    assert get_events_feature(dev, 1)[1][EVT_RU_NOT_FULLY_WRITTEN] == 0
    assert_still_works(fvm, dev)


def test_controller_reset(dev, q, fvm):
    """A Controller Level Reset returns the FDP Events feature to its default
    (none enabled); FDP stays enabled, the reclaim units (the engine's) and
    the event log stay as they were."""
    buf = dev.dma_buffer(4096, b"\x5b" * 4096)
    assert set_events(dev, 0, [EVT_INVALID_PID]).ok
    assert write(dev, q, 0, 8, buf, dspec=9).ok
    assert write(dev, q, 8, 8, buf, dspec=3).ok
    before = ruamw(dev, q)
    dev.disable()
    dev.enable()
    q = dev.create_io_queue(1, 64)
    assert get_events_feature(dev, 0)[1][EVT_INVALID_PID] == 0
    assert dev.get_features(FEAT_FDP, cdw11=1).dw0 == 0x1
    assert ruamw(dev, q) == before and before[3] == RUNS // 512 - 8
    assert [e["type"] for e in events(dev)] == [EVT_INVALID_PID]
    assert_still_works(fvm, dev)


def test_units_and_statistics_survive_a_restart(qemu_binary, tmp_path):
    """The reclaim units and the statistics are the engine's, saved with its
    state: after a clean stop and a start on the same state file, RUAMW and
    the FDP statistics log read the same."""
    props = f"fdp=on,streams={NRUH - 1},{GEOMETRY},state-file={tmp_path / 's.nh-state'}"
    seen = []
    for run in range(2):
        vm = start(qemu_binary, props)
        try:
            dev = nq.Controller(vm)
            dev.enable()
            q = dev.create_io_queue(1, 64)
            if run == 0:
                buf = dev.dma_buffer(8192, b"\x5c" * 8192)
                assert write(dev, q, 0, 16, buf, dspec=3).ok
            seen.append((ruamw(dev, q), stats_log(dev)))
            vm.qmp.execute("quit")
            vm.proc.wait(timeout=30)
        finally:
            vm.close()
    assert seen[0] == seen[1]
    assert seen[0][0][3] == RUNS // 512 - 16 and seen[0][1][0] == 8192


# -- bad input: the specification's status, and QEMU keeps running ------------------------------


def test_invalid_placement_identifier_writes_through_handle_0(dev, q, fvm):
    """A PID beyond the configuration is not an error: the write succeeds
    through handle 0 (and the data reads back)."""
    buf = dev.dma_buffer(4096, b"\x66" * 4096)
    assert write(dev, q, 16, 8, buf, dspec=NRUH).ok
    assert write(dev, q, 24, 8, buf, dspec=0xFFFF).ok
    assert stat(fvm, "ftl.placement.host_pages")["0"] == 2
    cqe, d = dev.read(q, 16, 8)
    assert cqe.ok and d == b"\x66" * 4096
    assert_still_works(fvm, dev)


@pytest.mark.parametrize("dtype", [1, 3, 0xF])
def test_other_dtype_on_a_write_is_invalid_field(dev, q, fvm, dtype):
    """With FDP the Data Placement directive is the one enabled: a Write with
    DTYPE 1 (Streams, not supported with FDP) or another is Invalid Field in
    Command and writes nothing."""
    buf = dev.dma_buffer(4096, b"\x99" * 4096)
    invalid_field(write(dev, q, 0, 8, buf, dtype=dtype, dspec=1), f"write DTYPE {dtype}")
    assert stat(fvm, "host.write_cmds") == 0
    assert_still_works(fvm, dev)


def test_dtype_on_a_read_is_ignored(dev, q, fvm):
    """Read has no DTYPE/DSPEC (reserved there): set, they are ignored."""
    buf = dev.dma_buffer(4096)
    cqe = dev.cmd(q, nq.sqe(nq.IO_READ, nsid=1, prp1=buf, cdw10=0, cdw12=7 | 2 << 20,
                            cdw13=0x7777 << 16))
    assert cqe.ok
    assert stat(fvm, "host.write_cmds") == 0
    assert_still_works(fvm, dev)


def test_streams_not_supported_with_fdp(dev, fvm):
    """With FDP enabled the Streams directive is not supported: enabling it
    and its operations are Invalid Field in Command; enabling Data Placement
    through the Identify directive too (FDP enables it)."""
    for dtype in (1, 2):
        invalid_field(dev.admin_cmd(nq.sqe(ADM_DIRECTIVE_SEND, nsid=1, cdw11=0x0001,
                                           cdw12=dtype << 8 | 1)), f"enable dtype {dtype}")
    buf = dev.dma_buffer(4096)
    invalid_field(dev.admin_cmd(nq.sqe(ADM_DIRECTIVE_RECV, nsid=1, prp1=buf, cdw10=7,
                                       cdw11=0x0101)), "Streams Return Parameters")
    assert_still_works(fvm, dev)


def test_short_ruh_status_transfers_numd(dev, q, fvm):
    """NUMD shorter than the structure: exactly NUMD dwords, the rest of the
    buffer untouched; NUMD 3 gives the header with NRUHSD."""
    cqe, d = ruh_status(dev, q, length=16, numd=3)
    assert cqe.ok and struct.unpack_from("<H", d, 14)[0] == NRUH
    assert d[16:20] == b"\xa5" * 4
    assert_still_works(fvm, dev)


@pytest.mark.parametrize("pids,npid,why", [
    ([NRUH], None, "PID beyond the configuration"),
    ([1, 0x8000], None, "one invalid PID among valid ones"),
    ([0, 1, 2, 3, 0], None, "more PIDs than MAXPIDS + 1"),
])
def test_bad_ruh_update_is_invalid_field(dev, q, fvm, pids, npid, why):
    """Reclaim Unit Handle Update with an invalid PID or too many: Invalid
    Field in Command, and no reclaim unit changes."""
    buf = dev.dma_buffer(4096, b"\x77" * 4096)
    assert write(dev, q, 0, 8, buf, dspec=1).ok
    before = ruamw(dev, q)
    invalid_field(ruh_update(dev, q, pids, npid=npid), why)
    assert ruamw(dev, q) == before
    assert_still_works(fvm, dev)


def test_bad_io_management(dev, q, fvm):
    """Unknown management operations are Invalid Field; a namespace that
    does not exist is Invalid Namespace or Format."""
    invalid_field(ruh_status(dev, q, mo=0x05)[0], "receive operation 05h")
    invalid_field(ruh_update(dev, q, [0], mo=0x07), "send operation 07h")
    assert ruh_status(dev, q, mo=0)[0].ok and ruh_update(dev, q, [0], mo=0).ok   # no-ops
    for nsid in (0, 2, ALL):
        assert_status(ruh_status(dev, q, nsid=nsid)[0], G, nq.SC_INVALID_NAMESPACE,
                      f"nsid {nsid:#x}")
    assert_still_works(fvm, dev)


def test_bad_log_and_feature_variants(dev, fvm):
    """Endurance group other than 1: Invalid Field; unknown event types or
    placement handles in the FDP Events feature: Invalid Field, nothing
    enabled; NOET 0 on Get: Invalid Field."""
    for lid in (LOG_ENDGRP, LOG_CONFS, LOG_RUHU, LOG_STATS, LOG_EVENTS):
        for lsi in (0, 2):
            invalid_field(log(dev, lid, 64, lsi=lsi)[0], f"log {lid:#x} endgid {lsi}")
    invalid_field(set_events(dev, 0, [0x55]), "event type 55h")
    invalid_field(set_events(dev, 0, [EVT_INVALID_PID, 0x80]), "event type 80h in a list")
    assert get_events_feature(dev, 0)[1][EVT_INVALID_PID] == 0
    invalid_field(set_events(dev, NRUH, [EVT_INVALID_PID]), "placement handle 4")
    invalid_field(get_events_feature(dev, NRUH)[0], "get, placement handle 4")
    invalid_field(get_events_feature(dev, 0, noet=0)[0], "get, NOET 0")
    assert_status(set_events(dev, 0, [EVT_INVALID_PID], nsid=2), G, nq.SC_INVALID_NAMESPACE,
                  "nsid 2")
    assert_still_works(fvm, dev)


# -- without FDP ---------------------------------------------------------------------------------


@pytest.fixture
def plain(qemu_binary):
    machine = start(qemu_binary, f"streams=3,{GEOMETRY}")
    try:
        ctrl = nq.Controller(machine)
        ctrl.enable()
        ctrl.id = ctrl.identify_ctrl()
        yield machine, ctrl
    finally:
        machine.close()


def test_without_fdp(plain):
    """fdp=off: CTRATT.FDPS 0; the FDP logs are Invalid Log Page, the FDP
    features Invalid Field; I/O Management is FDP Disabled; a Write with
    DTYPE 2 is an ordinary write (no directive is enabled)."""
    vm, dev = plain
    assert not struct.unpack_from("<I", dev.id.raw, 96)[0] & (1 << 19)
    for lid in (LOG_CONFS, LOG_RUHU, LOG_STATS, LOG_EVENTS):
        assert_status(log(dev, lid, 64)[0], nq.SCT_CMD_SPECIFIC, nq.SC_INVALID_LOG_PAGE, f"log {lid:#x}")
    invalid_field(dev.get_features(FEAT_FDP, cdw11=1), "FDP feature")
    invalid_field(set_events(dev, 0, [EVT_INVALID_PID]), "FDP events feature")
    q = dev.create_io_queue(1, 16)
    assert_status(ruh_status(dev, q)[0], G, SC_FDP_DISABLED, "RUH status")
    assert_status(ruh_update(dev, q, [0]), G, SC_FDP_DISABLED, "RUH update")
    buf = dev.dma_buffer(4096, b"\x88" * 4096)
    assert write(dev, q, 0, 8, buf, dspec=1).ok
    assert stat(vm, "ftl.placement.host_pages")["0"] == 1
    assert_still_works(vm, dev)
