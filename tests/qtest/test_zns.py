"""The Zoned Namespace Command Set on NSID 2 (hw-nvme-hybrid/zns.c, docs/zoned.md).

Every device here has an explicit geometry, so the zones do not follow the default
configuration: two channels of one plane each, 48 pages of 4 KiB a block, each zone one block
on one plane.  A zone's capacity is then 192 KiB = 384 LBAs of 512 bytes, its size the next
power of two, 512 LBAs, and LBAs 384-511 of every zone are its gap.  Eight zones take 2 MiB at
the end of the 64 MiB drive; NSID 1 has the rest.
"""

import os
import struct

import pytest

import nvme_qtest as nq
from conftest import IMAGE_SIZE, MODEL, SERIAL, assert_status, assert_still_works
from test_bar_pm import power_cut
from test_properties import start

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's zoned namespace")

GEOMETRY = "channels=2,ways=1,dies=1,planes=1,pages=48,page-size=4K,op=7,cell=slc,ba-size=0"
ZONES = 8
ZPROPS = f"{GEOMETRY},zones={ZONES},zone-width=1,zone-blocks=1"
LBA = 512
ZCAP, ZSZE = 384, 512
NSID = 2
CSS_ALL = 6

# Zoned Namespace Command Set opcodes and statuses (ZNS 1.1, 4.1 and 3.4.2)
ZMS, ZMR, ZAPPEND = 0x79, 0x7A, 0x7D
CLOSE, FINISH, OPEN, RESET, OFFLINE = 1, 2, 3, 4, 5
EMPTY, IMP_OPEN, EXP_OPEN, CLOSED, READ_ONLY, FULL, ZOFFLINE = 1, 2, 3, 4, 0xD, 0xE, 0xF
C, G = nq.SCT_CMD_SPECIFIC, nq.SCT_GENERIC
BOUNDARY, ZFULL, ZREAD_ONLY, ZIS_OFFLINE = 0xB8, 0xB9, 0xBA, 0xBB
INVALID_WRITE, TOO_MANY_ACTIVE, TOO_MANY_OPEN, BAD_TRANSITION = 0xBC, 0xBD, 0xBE, 0xBF


class Zoned:
    """An enabled controller with every I/O command set (CC.CSS = 110b) and an I/O queue."""

    def __init__(self, vm, css=CSS_ALL):
        self.vm = vm
        self.c = nq.Controller(vm)
        self.c.enable(css=css)
        self.c.id = self.c.identify_ctrl()
        self.q = self.c.create_io_queue(1, 64)

    def io(self, opcode, slba, nlb, data=None, nsid=NSID, cdw13=0):
        length = nlb * LBA
        buf = self.c.dma_buffer(length, data)
        prp1, prp2 = self.c.prps(buf, length)
        cqe = self.c.cmd(self.q, nq.sqe(opcode, nsid=nsid, prp1=prp1, prp2=prp2,
                                        cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                                        cdw12=(nlb - 1) & 0xFFFF, cdw13=cdw13))
        return cqe, self.vm.qt.memread(buf, length)

    def write(self, slba, data):
        return self.io(nq.IO_WRITE, slba, len(data) // LBA, data)[0]

    def read(self, slba, nlb):
        return self.io(nq.IO_READ, slba, nlb)

    def append(self, zslba, data):
        cqe = self.io(ZAPPEND, zslba, len(data) // LBA, data)[0]
        return cqe, cqe.dw0 | cqe.dw1 << 32

    def send(self, action, slba=0, select_all=False, flags=0):
        return self.c.cmd(self.q, nq.sqe(ZMS, nsid=NSID, cdw10=slba & 0xFFFFFFFF,
                                         cdw11=slba >> 32,
                                         cdw13=action | int(select_all) << 8 | flags))

    def receive(self, slba=0, length=4096, options=0, partial=False, action=0):
        buf = self.c.dma_buffer(length)
        prp1, prp2 = self.c.prps(buf, length)
        cqe = self.c.cmd(self.q, nq.sqe(ZMR, nsid=NSID, prp1=prp1, prp2=prp2,
                                        cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                                        cdw12=length // 4 - 1,
                                        cdw13=action | options << 8 | int(partial) << 16))
        return cqe, self.vm.qt.memread(buf, length)

    def report(self, slba=0, length=4096, options=0, partial=False):
        """(number of zones in the header, [(state, zslba, wp, zcap, type)] as returned)."""
        cqe, data = self.receive(slba, length, options, partial)
        assert cqe.ok, cqe
        count = struct.unpack_from("<Q", data, 0)[0]
        zones = []
        for i in range(min(count, (length - 64) // 64)):
            zt, zs, _za, zcap, zslba, wp = struct.unpack_from("<BBB5xQQQ", data, 64 + 64 * i)
            zones.append((zs >> 4, zslba, wp, zcap, zt))
        return count, zones

    def state(self, zone):
        return self.report(zone * ZSZE, 128, partial=True)[1][0][:3]


@pytest.fixture
def zoned(qemu_binary):
    vms = []

    def _make(props="", css=CSS_ALL, image=None):
        vm = nq.Vm(qemu_binary, MODEL, image_size=IMAGE_SIZE, serial=SERIAL,
                   device_props=ZPROPS + ("," + props if props else ""), image=image)
        vms.append(vm)
        return Zoned(vm, css)

    yield _make
    for vm in vms:
        print(f"QEMU stderr:\n{vm.stderr_text()}")
        vm.close()


def pattern(nlb, seed):
    return bytes((seed + i) & 0xFF for i in range(nlb * LBA))


# -- namespaces and Identify ----------------------------------------------------------------

def test_two_namespaces_and_their_command_sets(zoned):
    z = zoned("zone-max-open=2,zone-max-active=3,zasl=1")
    c = z.c
    assert (c.cap >> 37) & 0xFF == 0x41, "CAP.CSS: NVM and one or more I/O command sets"
    assert c.id.nn == 2
    cqe, data = c.identify(nq.CNS_ACTIVE_NS_LIST)
    assert cqe.ok and struct.unpack_from("<3I", data) == (1, 2, 0)
    ids = {}
    for nsid, csi in ((1, 0), (2, 2)):
        cqe, data = c.identify(nq.CNS_NS_DESC_LIST, nsid=nsid)
        assert cqe.ok
        assert data[0:2] == b"\x02\x10" and data[20:24] == bytes([4, 1, 0, 0]), data[:24]
        assert data[24] == csi
        ids[nsid] = data[4:20]
    assert ids[1] != ids[2], "Linux ignores namespaces with the same NGUID"
    assert c.identify_ns(1).nsze == (IMAGE_SIZE - ZONES * ZSZE * LBA) // LBA
    assert c.identify_ns(2).nsze == ZONES * ZSZE
    cqe, data = identify_cs(c, 0x05, 2, 2)
    zoc, ozcs, mar, mor = struct.unpack_from("<HHII", data, 0)
    assert cqe.ok and (zoc, ozcs, mar, mor) == (0, 0, 2, 1)
    zsze, zdes = struct.unpack_from("<QB", data, 2816)
    assert (zsze, zdes) == (ZSZE, 0)


def identify_cs(c, cns, nsid, csi):
    buf = c.dma_buffer(4096)
    cqe = c.admin_cmd(nq.sqe(nq.ADM_IDENTIFY, nsid=nsid, prp1=buf, cdw10=cns, cdw11=csi << 24))
    return cqe, c.qt.memread(buf, 4096)


def test_command_set_identify_structures(zoned):
    c = zoned("zasl=2").c
    cqe, data = identify_cs(c, 0x06, 0, 2)
    assert cqe.ok and data[0] == 2, "ZASL"
    cqe, data = identify_cs(c, 0x1C, 0, 0)
    assert cqe.ok and struct.unpack_from("<2Q", data) == (0b101, 0), "NVM + Zoned, index 0"
    assert identify_cs(c, 0x05, 1, 0)[0].ok
    assert_status(identify_cs(c, 0x05, 1, 2)[0], G, nq.SC_INVALID_FIELD, "NSID 1 is NVM")
    assert_status(identify_cs(c, 0x05, 2, 0)[0], G, nq.SC_INVALID_FIELD, "NSID 2 is zoned")
    assert_status(identify_cs(c, 0x05, 3, 2)[0], G, nq.SC_INVALID_NAMESPACE, "no NSID 3")
    assert_status(identify_cs(c, 0x06, 0, 1)[0], G, nq.SC_INVALID_FIELD, "no CSI 1")


def test_io_command_set_profile_feature(zoned):
    c = zoned().c
    cqe = c.get_features(0x19)
    assert cqe.ok and cqe.dw0 == 0, "index 0 of CNS 1Ch in force"
    assert c.set_features(0x19, 0).ok
    assert_status(c.set_features(0x19, 1), C, 0x2B, "I/O Command Set Combination Rejected")


def test_nvm_only_controller_does_not_attach_the_zoned_namespace(zoned):
    z = zoned(css=0)
    cqe, data = z.c.identify(nq.CNS_ACTIVE_NS_LIST)
    assert cqe.ok and struct.unpack_from("<2I", data) == (1, 0)
    assert_status(z.read(0, 1)[0], G, nq.SC_INVALID_NAMESPACE, "NSID 2 is not attached")


def test_effects_log_per_command_set(zoned):
    c = zoned().c

    def iocs(csi):
        buf = c.dma_buffer(4096)
        cqe = c.admin_cmd(nq.sqe(nq.ADM_GET_LOG_PAGE, nsid=0, prp1=buf,
                                 cdw10=0x05 | (1023 << 16), cdw14=csi << 24))
        return cqe, struct.unpack_from("<256I", c.qt.memread(buf, 4096), 1024)

    cqe, nvm = iocs(0)
    assert cqe.ok and nvm[ZAPPEND] == 0 and nvm[nq.IO_DSM] & 1
    cqe, zns = iocs(2)
    assert cqe.ok
    assert all(zns[op] & 1 for op in (nq.IO_FLUSH, nq.IO_WRITE, nq.IO_READ, ZMS, ZMR, ZAPPEND))
    assert zns[ZAPPEND] & 2 and zns[ZMS] & 2 and not zns[ZMR] & 2, "LBCC"
    assert zns[nq.IO_DSM] == 0 and zns[nq.IO_WRITE_ZEROES] == 0
    assert_status(iocs(1)[0], G, nq.SC_INVALID_FIELD, "no command set 1")


# -- reads and writes at the write pointer --------------------------------------------------

def test_write_at_write_pointer_and_read_back(zoned):
    z = zoned()
    data = pattern(8, 1)
    assert z.write(0, data).ok
    assert z.state(0) == (IMP_OPEN, 0, 8)
    assert_status(z.write(0, data), C, INVALID_WRITE, "not at the write pointer")
    assert_status(z.write(16, data), C, INVALID_WRITE, "beyond the write pointer")
    cqe, back = z.read(0, 8)
    assert cqe.ok and back == data
    cqe, back = z.read(8, 8)
    assert cqe.ok and back == bytes(8 * LBA), "above the write pointer: zeroes"
    cqe, back = z.read(ZCAP + 8, 16)
    assert cqe.ok and back == bytes(16 * LBA), "the gap reads as zeroes"
    assert_status(z.write(ZCAP, pattern(1, 2)), C, BOUNDARY, "a write in the gap")
    assert_status(z.read(ZSZE - 4, 8)[0], C, BOUNDARY, "a read across zones (RAZB 0)")
    assert_status(z.read(ZONES * ZSZE - 4, 8)[0], G, nq.SC_LBA_OUT_OF_RANGE, "past the end")
    # the conventional namespace is untouched by all this, and writes anywhere
    assert z.c.write(z.q, 1000, pattern(8, 3)).ok
    assert z.c.read(z.q, 1000, 8)[1] == pattern(8, 3)


def test_write_across_zone_capacity_is_refused(zoned):
    z = zoned()
    for i in range(ZCAP // 64 - 1):
        assert z.write(i * 64, pattern(64, i)).ok
    assert_status(z.write(ZCAP - 64, pattern(72, 9)), C, BOUNDARY, "crosses the capacity")
    assert z.write(ZCAP - 64, pattern(64, 9)).ok
    assert z.state(0) == (FULL, 0, ZCAP)
    assert_status(z.write(ZCAP, pattern(1, 2)), C, BOUNDARY, "in the gap of a full zone")
    assert_status(z.append(0, pattern(1, 1))[0], C, ZFULL, "append to a full zone")


def test_append_returns_the_assigned_lba(zoned):
    z = zoned("zasl=1")          # 8 KiB: 16 LBAs
    cqe, lba = z.append(ZSZE, pattern(4, 1))
    assert cqe.ok and lba == ZSZE
    cqe, lba = z.append(ZSZE, pattern(16, 2))
    assert cqe.ok and lba == ZSZE + 4
    assert z.write(ZSZE + 20, pattern(2, 3)).ok, "a write continues at the write pointer"
    cqe, lba = z.append(ZSZE, pattern(1, 4))
    assert cqe.ok and lba == ZSZE + 22
    assert z.read(ZSZE, 23)[1] == pattern(4, 1) + pattern(16, 2) + pattern(2, 3) + pattern(1, 4)
    assert_status(z.append(ZSZE, pattern(17, 5))[0], G, nq.SC_INVALID_FIELD, "beyond ZASL")
    assert_status(z.append(ZSZE + 1, pattern(1, 5))[0], G, nq.SC_INVALID_FIELD,
                  "not a zone's first LBA")
    assert_status(z.io(ZAPPEND, 0, 1, nsid=1)[0], G, nq.SC_INVALID_OPCODE,
                  "no Zone Append on the conventional namespace")


def test_append_beyond_the_room_left_is_a_boundary_error(zoned):
    z = zoned()
    for i in range(ZCAP // 64 - 1):
        assert z.append(0, pattern(64, i))[0].ok
    assert_status(z.append(0, pattern(65, 1))[0], C, BOUNDARY, "65 LBAs, 64 left")
    assert z.append(0, pattern(64, 1))[1] == ZCAP - 64


# -- zone management ------------------------------------------------------------------------

def test_open_close_finish_reset(zoned):
    z = zoned()
    zs = 2 * ZSZE
    assert z.send(OPEN, zs).ok
    assert z.state(2) == (EXP_OPEN, zs, zs)
    assert z.write(zs, pattern(8, 1)).ok
    assert z.state(2) == (EXP_OPEN, zs, zs + 8)
    assert z.send(CLOSE, zs).ok
    assert z.state(2) == (CLOSED, zs, zs + 8)
    assert z.send(FINISH, zs).ok
    assert z.state(2) == (FULL, zs, zs + ZCAP)
    assert_status(z.write(zs + 8, pattern(1, 1)), C, ZFULL, "write to a full zone")
    assert_status(z.send(OPEN, zs), C, BAD_TRANSITION, "full -> open")
    assert_status(z.send(CLOSE, zs), C, BAD_TRANSITION, "full -> closed")
    assert z.read(zs, 8)[1] == pattern(8, 1)
    assert z.send(RESET, zs).ok
    assert z.state(2) == (EMPTY, zs, zs)
    cqe, back = z.read(zs, 8)
    assert cqe.ok and back == bytes(8 * LBA), "a reset zone reads as zeroes"
    assert z.write(zs, pattern(8, 2)).ok, "an empty zone takes writes from its start"
    assert_status(z.send(OFFLINE, zs), C, BAD_TRANSITION, "offline needs read-only")


def test_management_send_fields(zoned):
    z = zoned()
    assert_status(z.send(OPEN, 8), G, nq.SC_INVALID_FIELD, "not a zone's first LBA")
    assert_status(z.send(OPEN, ZONES * ZSZE), G, nq.SC_LBA_OUT_OF_RANGE, "no such zone")
    for action in (0, 6, 0x10, 0x11, 0xFF):
        assert_status(z.send(action, 0), G, nq.SC_INVALID_FIELD, f"action {action:#x}")
    assert_status(z.send(OPEN, 0, flags=1 << 9), G, nq.SC_INVALID_FIELD, "no ZRWA")


def test_select_all(zoned):
    z = zoned()
    for zone in range(4):
        assert z.write(zone * ZSZE, pattern(8, zone)).ok
    assert z.send(CLOSE, 0, select_all=True).ok
    assert [z.state(i)[0] for i in range(5)] == [CLOSED] * 4 + [EMPTY]
    assert z.send(OPEN, 0, select_all=True).ok
    assert [z.state(i)[0] for i in range(5)] == [EXP_OPEN] * 4 + [EMPTY]
    assert z.send(FINISH, 1 * ZSZE).ok
    assert z.send(RESET, 12345, select_all=True).ok, "the SLBA is ignored"
    assert z.report()[0] == ZONES and all(s == EMPTY for s, *_ in z.report()[1])
    for zone in range(4):
        assert z.read(zone * ZSZE, 8)[1] == bytes(8 * LBA)


def test_open_and_active_limits(zoned):
    z = zoned("zone-max-open=2,zone-max-active=3")
    assert z.send(OPEN, 0).ok and z.send(OPEN, ZSZE).ok
    assert_status(z.send(OPEN, 2 * ZSZE), C, TOO_MANY_OPEN, "two open already")
    assert z.send(CLOSE, 0).ok
    assert z.send(OPEN, 2 * ZSZE).ok
    assert_status(z.send(OPEN, 3 * ZSZE), C, TOO_MANY_ACTIVE, "three active")
    assert_status(z.write(3 * ZSZE, pattern(1, 1)), C, TOO_MANY_ACTIVE, "implicit open")
    assert z.send(FINISH, 0).ok, "a full zone is not active"
    assert_status(z.write(3 * ZSZE, pattern(1, 1)), C, TOO_MANY_OPEN,
                  "both open zones are explicitly opened: none to close")
    assert z.send(CLOSE, ZSZE).ok
    assert z.write(3 * ZSZE, pattern(1, 1)).ok
    assert z.state(3)[0] == IMP_OPEN


def test_implicitly_opened_zone_is_closed_for_a_new_one(zoned):
    z = zoned("zone-max-open=1")
    assert z.write(0, pattern(1, 1)).ok
    assert z.write(ZSZE, pattern(1, 2)).ok
    assert (z.state(0)[0], z.state(1)[0]) == (CLOSED, IMP_OPEN)
    assert z.send(OPEN, ZSZE).ok, "implicitly -> explicitly opened takes no new resource"
    assert_status(z.write(1, pattern(1, 3)), C, TOO_MANY_OPEN, "the one open zone is explicit")
    assert z.state(0) == (CLOSED, 0, 1)


# -- report zones ---------------------------------------------------------------------------

def states_0_to_3(z):
    assert z.write(0, pattern(1, 0)).ok               # implicitly opened
    assert z.send(OPEN, ZSZE).ok                       # explicitly opened
    assert z.write(2 * ZSZE, pattern(1, 0)).ok and z.send(CLOSE, 2 * ZSZE).ok
    assert z.send(FINISH, 3 * ZSZE).ok                 # full


def test_report_filters_by_state(zoned):
    z = zoned()
    states_0_to_3(z)
    count, zones = z.report()
    assert count == ZONES
    assert [(s, lba, wp) for s, lba, wp, _c, _t in zones] == [
        (IMP_OPEN, 0, 1), (EXP_OPEN, ZSZE, ZSZE), (CLOSED, 2 * ZSZE, 2 * ZSZE + 1),
        (FULL, 3 * ZSZE, 3 * ZSZE + ZCAP)] + [(EMPTY, i * ZSZE, i * ZSZE) for i in range(4, 8)]
    assert all((zcap, zt) == (ZCAP, 2) for *_x, zcap, zt in zones), "sequential write required"
    for option, want in ((1, [4, 5, 6, 7]), (2, [0]), (3, [1]), (4, [2]), (5, [3]), (6, []),
                         (7, [])):
        count, zones = z.report(options=option)
        assert count == len(want) and [lba // ZSZE for _s, lba, *_r in zones] == want, option
    count, zones = z.report(slba=2 * ZSZE + 100)
    assert count == 6 and zones[0][1] == 2 * ZSZE, "from the zone holding the SLBA"


def test_partial_report(zoned):
    z = zoned()
    states_0_to_3(z)
    room = 64 + 2 * 64
    count, zones = z.report(length=room)
    assert count == ZONES and len(zones) == 2, "all matching zones counted"
    count, zones = z.report(length=room, partial=True)
    assert count == 2 and [lba for _s, lba, *_r in zones] == [0, ZSZE]
    count, _ = z.report(length=room, options=1, partial=True)
    assert count == 2
    count, _ = z.report(length=64, options=1)
    assert count == 4, "a header alone still counts"


def test_report_fields(zoned):
    z = zoned()
    assert_status(z.receive(action=1)[0], G, nq.SC_INVALID_FIELD, "no descriptor extensions")
    assert_status(z.receive(action=2)[0], G, nq.SC_INVALID_FIELD, "no such action")
    assert_status(z.receive(options=8)[0], G, nq.SC_INVALID_FIELD, "no such state filter")
    assert_status(z.receive(length=32)[0], G, nq.SC_INVALID_FIELD, "smaller than the header")
    assert_status(z.receive(slba=ZONES * ZSZE)[0], G, nq.SC_LBA_OUT_OF_RANGE, "past the end")


# -- wear: read-only and offline ------------------------------------------------------------

def test_worn_zone_is_read_only_then_offline(zoned):
    """A zone whose block has used up its rated cycles becomes read-only (the engine's rule);
    from there only the offline action leads on."""
    z = zoned("pe-cycles=2")
    for _ in range(4):
        assert z.write(0, pattern(8, 1)).ok
        assert z.send(RESET, 0).ok
        if z.state(0)[0] == READ_ONLY:
            break
    assert z.state(0)[0] == READ_ONLY, z.report()
    assert_status(z.write(0, pattern(1, 1)), C, ZREAD_ONLY, "write to a read-only zone")
    assert_status(z.send(OPEN, 0), C, ZREAD_ONLY, "read-only -> open")
    assert z.read(0, 1)[0].ok, "a read-only zone reads"
    assert z.send(OFFLINE, 0, select_all=True).ok
    assert z.state(0)[0] == ZOFFLINE
    assert_status(z.read(0, 1)[0], C, ZIS_OFFLINE, "read of an offline zone")
    assert_status(z.read(ZCAP, 1)[0], C, ZIS_OFFLINE, "read of its gap")
    assert_status(z.write(0, pattern(1, 1)), C, ZIS_OFFLINE, "write to an offline zone")


# -- persistence, bad input, realize --------------------------------------------------------

def test_zones_survive_a_clean_restart(zoned, tmp_path):
    image = str(tmp_path / "zoned.img")
    z = zoned(image=image)
    states_0_to_3(z)
    assert z.write(1, pattern(7, 5)).ok
    z.vm.qmp.execute("quit")
    z.vm.proc.wait(timeout=30)
    z = zoned(image=image)
    count, zones = z.report()
    # open zones close at a restart as at a controller reset (empty again if never written)
    assert (count, [(s, lba, wp) for s, lba, wp, *_ in zones]) == (ZONES, [
        (CLOSED, 0, 8), (EMPTY, ZSZE, ZSZE), (CLOSED, 2 * ZSZE, 2 * ZSZE + 1),
        (FULL, 3 * ZSZE, 3 * ZSZE + ZCAP)] + [(EMPTY, i * ZSZE, i * ZSZE) for i in range(4, 8)])
    assert z.read(0, 8)[1] == pattern(1, 0) + pattern(7, 5)
    assert z.write(8, pattern(1, 6)).ok and z.append(0, pattern(1, 7))[1] == 9


def test_power_cut_rolls_back_a_zoned_write_not_completed(zoned, tmp_path):
    """The write pointer after a cut is where the durable data ends: a write the device had
    not completed (its modeled time still ahead) is gone, and its LBAs read zeroes again."""
    image = str(tmp_path / "zoned.img")
    z = zoned(image=image)
    assert z.write(0, pattern(8, 1)).ok
    buf = z.c.dma_buffer(8 * LBA, pattern(8, 2))
    z.c.submit(z.q, nq.sqe(nq.IO_WRITE, nsid=NSID, prp1=buf, cdw10=8, cdw12=7))
    power_cut(z.vm)
    z = zoned(image=image)
    assert z.state(0) == (CLOSED, 0, 8)
    assert z.read(0, 16)[1] == pattern(8, 1) + bytes(8 * LBA)
    assert z.write(8, pattern(8, 3)).ok


def test_killed_qemu_restarts_zones_from_their_data(zoned, tmp_path):
    """SIGKILL: the state file is at most a checkpoint old; the write pointers come back
    from the data in the drive."""
    image = str(tmp_path / "zoned.img")
    z = zoned(image=image)
    assert z.write(0, pattern(3, 1)).ok
    assert z.append(ZSZE, pattern(5, 2))[0].ok
    z.vm.proc.kill()
    z.vm.proc.wait()
    z = zoned(image=image)
    assert [z.state(i) for i in range(3)] == [
        (CLOSED, 0, 3), (CLOSED, ZSZE, ZSZE + 5), (EMPTY, 2 * ZSZE, 2 * ZSZE)]
    assert z.read(ZSZE, 5)[1] == pattern(5, 2)
    assert z.append(0, pattern(1, 3))[1] == 3


def test_malformed_zoned_commands_never_crash(zoned):
    z = zoned()
    bad = [
        nq.sqe(ZMR, nsid=NSID, cdw12=0xFFFFFFFF),                  # 16 GiB report: over MDTS
        nq.sqe(ZMR, nsid=NSID, cdw10=0xFFFFFFFF, cdw11=0xFFFFFFFF, cdw12=15),
        nq.sqe(ZMS, nsid=NSID, cdw10=0xFFFFFFFF, cdw11=0xFFFFFFFF, cdw13=RESET),
        nq.sqe(ZAPPEND, nsid=NSID, cdw10=0xFFFFFFFF, cdw11=0xFFFFFFFF, cdw12=0xFFFF),
        nq.sqe(ZAPPEND, nsid=NSID, cdw12=0xFFFF),                   # 32 MiB: over MDTS
        nq.sqe(nq.IO_WRITE, nsid=NSID, cdw10=ZONES * ZSZE - 1, cdw12=1),
        nq.sqe(nq.IO_DSM, nsid=NSID, cdw11=4),
        nq.sqe(nq.IO_WRITE_ZEROES, nsid=NSID),
        nq.sqe(ZMS, nsid=1, cdw13=RESET | 1 << 8),
        nq.sqe(ZMS, nsid=3, cdw13=RESET | 1 << 8),
        nq.sqe(ZMR, nsid=NSID, cdw12=15, cdw13=0xFFFFFFFF),
    ]
    for cmd in bad:
        cqe = z.c.cmd(z.q, cmd)
        assert not cqe.ok and cqe.dnr, cqe
    assert_still_works(z.vm, z.c)
    assert z.write(0, pattern(1, 1)).ok


@pytest.mark.parametrize("size", [2 << 20, 1 << 20])
def test_drive_too_small_for_the_zones_is_refused(qemu_binary, tmp_path, size):
    """Eight zones take exactly 2 MiB: a 2 MiB drive leaves NSID 1 nothing."""
    r = start(qemu_binary, tmp_path, f"serial=s,{ZPROPS}", size=size)
    assert r.returncode == 1 and "drive: " in r.stderr and "8 zones of 512 LBAs" in r.stderr, \
        r.stderr
    assert "Aborted" not in r.stderr


def test_zasl_above_mdts_is_refused(qemu_binary, tmp_path):
    r = start(qemu_binary, tmp_path, f"serial=s,{ZPROPS},zasl=8")
    assert r.returncode == 1 and "zasl: " in r.stderr, r.stderr


def test_zoned_writes_need_no_flush(zoned, tmp_path):
    """No volatile cache on the zoned namespace: a write is in the drive when it completes."""
    image = str(tmp_path / "zoned.img")
    z = zoned("buffer=lru,buffer-size=1M", image=image)
    data = os.urandom(8 * LBA)
    assert z.write(0, data).ok
    with open(image, "rb") as f:
        f.seek(IMAGE_SIZE - ZONES * ZSZE * LBA)
        assert f.read(len(data)) == data
