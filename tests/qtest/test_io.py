"""I/O queue creation and data transfer by PRP (NVMe Base 1.4 sections 4.3,
5.3, 5.4, and the NVM command set's Read/Write)."""

import os
import random

import pytest

import nvme_qtest as nq
from conftest import MODEL


def pattern(seed, length):
    return random.Random(seed).randbytes(length)


def max_transfer(nvme):
    """MDTS in bytes (units of CAP.MPSMIN, which is 4 KiB here); None if
    unlimited."""
    return None if nvme.id.mdts == 0 else nq.PAGE << nvme.id.mdts


# (length, offset of the buffer into its first page): one page, two pages
# (PRP2 is a data pointer), three and more (PRP2 points to a PRP list), and
# unaligned starts whose tail spills into one more page than the length says.
TRANSFERS = [(512, 0), (4096, 0), (8192, 0), (3 * 4096, 0), (16 * 4096, 0),
             (4096, 512), (2 * 4096, 1024), (5 * 4096, 3584), (64 * 4096, 0)]


@pytest.mark.parametrize("length,offset", TRANSFERS)
def test_write_read_roundtrip(nvme, ns, ioq, length, offset):
    limit = max_transfer(nvme)
    if limit is not None and length > limit:
        pytest.skip(f"beyond MDTS ({limit} bytes)")
    lbas = length // ns.lba_size
    data = pattern(length + offset, length)
    wbuf = nvme.dma_buffer(length, data, offset=offset)
    cqe = nvme.rw(ioq, nq.IO_WRITE, 100, lbas, wbuf, length)
    assert cqe.ok, cqe
    rbuf = nvme.dma_buffer(length, offset=offset)
    cqe = nvme.rw(ioq, nq.IO_READ, 100, lbas, rbuf, length)
    assert cqe.ok, cqe
    assert nvme.qt.memread(rbuf, length) == data


def test_completion_fields(nvme, ioq):
    """4.6: the CQE names the SQ it came from, the command's CID, and the SQ
    head pointer after the command was fetched."""
    cid = nvme.submit(ioq, nq.sqe(nq.IO_FLUSH, nsid=1))
    cqe = nvme.wait(ioq, cid)
    assert cqe.ok, cqe
    assert (cqe.sqid, cqe.cid, cqe.sqhd) == (1, cid, 1)


def test_unwritten_blocks_read_as_zeroes(nvme, ns, ioq):
    cqe, data = nvme.read(ioq, 1000, 8, ns.lba_size)
    assert cqe.ok, cqe
    assert data == bytes(8 * ns.lba_size)


def test_last_block_of_namespace(nvme, ns, ioq):
    data = pattern(7, ns.lba_size)
    assert nvme.write(ioq, ns.nsze - 1, data, ns.lba_size).ok
    cqe, back = nvme.read(ioq, ns.nsze - 1, 1, ns.lba_size)
    assert cqe.ok and back == data


def test_several_queue_pairs(nvme, ns):
    """Ask for 4 queue pairs (5.21.1.7), create as many as were allocated
    (up to 4), write on each and read every block back through another."""
    cqe = nvme.set_features(nq.FEAT_NUM_QUEUES, (3 << 16) | 3)
    assert cqe.ok, cqe
    pairs = min(4, (cqe.dw0 & 0xFFFF) + 1, (cqe.dw0 >> 16) + 1)
    queues = [nvme.create_io_queue(qid, 16) for qid in range(1, pairs + 1)]
    blocks = {}
    for i, q in enumerate(queues):
        blocks[200 + i] = pattern(i, ns.lba_size)
        assert nvme.write(q, 200 + i, blocks[200 + i], ns.lba_size).ok
    for i, q in enumerate(queues):
        lba = 200 + (i + 1) % len(queues)
        cqe, data = nvme.read(q, lba, 1, ns.lba_size)
        assert cqe.ok and data == blocks[lba], (lba, cqe)


def test_many_outstanding_commands(nvme, ns, ioq):
    """16 writes submitted before any completion is reaped; completions may
    come in any order (4.6), each CID exactly once."""
    cids = {}
    for i in range(16):
        data = pattern(100 + i, ns.lba_size)
        buf = nvme.dma_buffer(ns.lba_size, data)
        cmd = nq.sqe(nq.IO_WRITE, nsid=1, prp1=buf, cdw10=300 + i)
        cids[nvme.submit(ioq, cmd)] = (300 + i, data)
    for cid in cids:
        assert nvme.wait(ioq, cid).ok
    for lba, data in cids.values():
        cqe, back = nvme.read(ioq, lba, 1, ns.lba_size)
        assert cqe.ok and back == data


def test_small_io_queue_wraps(nvme, ns):
    """A 2-entry queue pair (the minimum, MQES >= 1) used 9 times."""
    q = nvme.create_io_queue(1, 2)
    for i in range(9):
        data = pattern(i, ns.lba_size)
        assert nvme.write(q, i, data, ns.lba_size).ok
        cqe, back = nvme.read(q, i, 1, ns.lba_size)
        assert cqe.ok and back == data


def test_queue_id_reuse_after_delete(nvme, ns):
    """5.5/5.6: after Delete I/O SQ then Delete I/O CQ, the IDs are free
    again; the new queue pair works."""
    q = nvme.create_io_queue(1, 8)
    assert nvme.write(q, 0, pattern(1, ns.lba_size), ns.lba_size).ok
    assert nvme.delete_sq(1).ok
    assert nvme.delete_cq(1).ok
    q = nvme.create_io_queue(1, 16)
    cqe, back = nvme.read(q, 0, 1, ns.lba_size)
    assert cqe.ok and back == pattern(1, ns.lba_size)


def test_two_sqs_share_one_cq(nvme, ns):
    """Several SQs may complete to one CQ (5.4, CQID): SQ 1 and SQ 2 both
    on CQ 1, each completion naming its SQ."""
    cqe, cq_addr = nvme.create_cq(1, 16)
    assert cqe.ok, cqe
    cq = nq.CompletionQueue(1, cq_addr, 16)
    queues = []
    for qid in (1, 2):
        cqe, sq_addr = nvme.create_sq(qid, 8, cqid=1)
        assert cqe.ok, cqe
        queues.append(nq.Queue(qid, sq_addr, 8, cq))
    cids = [nvme.submit(q, nq.sqe(nq.IO_FLUSH, nsid=1)) for q in queues]
    for q, cid in zip(queues, cids):
        cqe = nvme.wait(q, cid)
        assert cqe.ok and cqe.sqid == q.qid, cqe


def test_write_reaches_the_drive(vm, nvme, ns, ioq):
    """User data lives in the block backend (DESIGN.md): after Write and
    Flush, the bytes are in the image file at LBA * LBA size."""
    data = pattern(42, 4096)
    lba = 4096 // ns.lba_size * 3
    assert nvme.write(ioq, lba, data, ns.lba_size).ok
    assert nvme.cmd(ioq, nq.sqe(nq.IO_FLUSH, nsid=1)).ok
    with open(vm.image, "rb") as f:
        f.seek(lba * ns.lba_size)
        assert f.read(len(data)) == data


@pytest.mark.skipif(MODEL != "nvme-hybrid", reason="stats is an nvme-hybrid property")
def test_stats_property_moves(vm, nvme, ns, ioq):
    """The QOM property `stats` is one JSON object; host writes change it."""
    before = vm.stats()
    assert isinstance(before, dict) and before
    for i in range(8):
        assert nvme.write(ioq, i * 8, os.urandom(4096), ns.lba_size).ok
    assert vm.stats() != before


@pytest.mark.skipif(MODEL != "nvme-hybrid", reason="the engine's state file")
def test_durable_buffer_pages_survive_a_clean_restart(qemu_binary, tmp_path):
    """A capacitor-backed write buffer keeps its pages across a Flush.  At a clean stop the
    device writes them to flash before it saves its state (nh_engine_finish), so the next
    start maps them: reading them reads flash.  Saved after a Flush-like drain, as it was until
    the engine-ops fuzz target found it, the state left them out and they read as never
    written (no NAND read), though the guest's data was there."""
    props = f"buffer=lru,buffer-size=1M,buffer-volatile=off,state-file={tmp_path / 's'}"
    seen = []
    for run in range(2):
        vm = nq.Vm(qemu_binary, MODEL, device_props=props)
        try:
            dev = nq.Controller(vm)
            dev.enable()
            ns = dev.identify_ns(1)
            q = dev.create_io_queue(1, 64)
            lbas = 4096 // ns.lba_size
            if run == 0:
                for i in range(4):
                    assert dev.write(q, i * lbas, os.urandom(4096), ns.lba_size).ok
                assert dev.cmd(q, nq.sqe(nq.IO_FLUSH, nsid=1)).ok
                assert vm.stats()["nand"]["page_programs"] == 0     # all still in the buffer
            else:
                before = vm.stats()
                for i in range(4):
                    assert dev.read(q, i * lbas, lbas, ns.lba_size)[0].ok
                seen = [vm.stats()["nand"]["page_reads"] - before["nand"]["page_reads"],
                        before["drain"]["destage_pages"]]
            vm.qmp.execute("quit")
            vm.proc.wait(timeout=30)
        finally:
            vm.close()
    assert seen == [4, 4]
