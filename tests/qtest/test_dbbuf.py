"""Doorbell Buffer Config (NVMe 1.3 section 5.7, OACS bit 8): with shadow doorbells the controller
takes an I/O SQ's tail from the host's shadow buffer, not only from the register, and publishes
how far it fetched in the EventIdx buffer, which the host uses to skip register writes."""
import struct

import pytest

import nvme_qtest as nq
from conftest import MODEL, assert_status

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's OACS")

DBBUF = 0x7C


def test_claimed(nvme):
    assert nvme.id.oacs & (1 << 8)


def test_misaligned_buffers_refused(nvme):
    dbs, eis = nvme.vm.alloc(4096), nvme.vm.alloc(4096)
    for prp1, prp2 in ((dbs + 8, eis), (dbs, eis + 512), (0, eis)):
        cqe = nvme.admin_cmd(nq.sqe(DBBUF, prp1=prp1, prp2=prp2))
        assert_status(cqe, 0, 0x02, "Invalid Field in Command: buffers must be page aligned")


def test_shadow_tail_and_eventidx(nvme):
    dbs, eis = nvme.vm.alloc(4096), nvme.vm.alloc(4096)
    nvme.qt.memset(dbs, 4096)
    nvme.qt.memset(eis, 4096)
    assert nvme.admin_cmd(nq.sqe(DBBUF, prp1=dbs, prp2=eis)).ok
    q = nvme.create_io_queue(1, 16)
    # three Flush commands in the SQ; the shadow tail says 3, the register is told only 1
    for i in range(3):
        nvme.qt.memwrite(q.sq_addr + i * nq.SQE_SIZE, nq.sqe(0x00, nsid=1, cid=i + 1))
    nvme.qt.memwrite(dbs + 8, struct.pack("<I", 3))          # SQ 1 tail shadow
    nvme.wr32(nvme.sq_doorbell(1), 1)
    seen = set()
    for _ in range(100):
        cqe = nvme.poll(q.cq)
        if cqe is None:
            nvme.qt.clock_step(100_000)
            continue
        assert cqe.ok, cqe
        seen.add(cqe.cid)
        if len(seen) == 3:
            break
    assert seen == {1, 2, 3}
    # the controller published that it fetched up to 3
    assert struct.unpack("<I", nvme.qt.memread(eis + 8, 4))[0] == 3
    assert nvme.healthy()
