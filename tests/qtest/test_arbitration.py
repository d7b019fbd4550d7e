"""Arbitration (feature 01h, NVMe 1.4 sections 4.13 and 5.21.1.1): round robin among SQs, with
Arbitration Burst commands fetched from one SQ before the next gets its turn.

Two SQs share one CQ and each holds eight commands that complete as soon as they are fetched
(an unsupported opcode), so the CQ shows the fetch order.  Both tail doorbells are rung by one
qtest write that covers SQ 1's tail, CQ 1's head (rewritten with its current value, a no-op) and
SQ 2's tail, so the device sees both before it fetches anything.
"""
import struct

import pytest

import nvme_qtest as nq
from conftest import MODEL

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="QEMU's nvme fetches all of one "
                                "SQ per doorbell and ignores Arbitration Burst")

N = 8
BAD_OPCODE = 0x7F


def fetch_order(nvme, ab):
    cqe = nvme.set_features(0x01, ab)       # AB in bits 2:0, priority weights 0
    assert cqe.ok, cqe
    cqe, cq_addr = nvme.create_cq(1, 64)
    assert cqe.ok, cqe
    cq = nq.CompletionQueue(1, cq_addr, 64)
    sqs = []
    for qid in (1, 2):
        cqe, sq_addr = nvme.create_sq(qid, 32, 1)
        assert cqe.ok, cqe
        sqs.append(nq.Queue(qid, sq_addr, 32, cq))
    for q in sqs:
        for i in range(N):
            nvme.qt.memwrite(q.sq_addr + i * nq.SQE_SIZE, nq.sqe(BAD_OPCODE, nsid=1, cid=i + 1))
    # SQ1 tail at 0x1008, CQ1 head at 0x100c, SQ2 tail at 0x1010 (CAP.DSTRD = 0)
    assert nvme.sq_doorbell(1) == 0x1008 and nvme.sq_doorbell(2) == 0x1010
    nvme.qt.memwrite(nvme.bar0 + 0x1008, struct.pack("<III", N, 0, N))
    order = []
    for _ in range(200):
        cqe = nvme.poll(cq)
        if cqe is None:
            nvme.qt.clock_step(100_000)
            continue
        assert (cqe.sct, cqe.sc) == (0, 0x01), cqe     # Invalid Command Opcode
        order.append(cqe.sqid)
        if len(order) == 2 * N:
            break
    for qid in (2, 1):
        assert nvme.delete_sq(qid).ok
    assert nvme.delete_cq(1).ok
    return order


def test_burst_of_one_alternates(nvme):
    assert fetch_order(nvme, 0) == [1, 2] * N


def test_burst_of_four(nvme):
    assert fetch_order(nvme, 2) == ([1] * 4 + [2] * 4) * (N // 4)


def test_no_limit_fetches_each_queue_whole(nvme):
    assert fetch_order(nvme, 7) == [1] * N + [2] * N


def test_default_is_no_limit(nvme):
    assert nvme.get_features(0x01).dw0 & 7 == 7
