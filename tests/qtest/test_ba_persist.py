"""What a persist through the BAR1 window costs (hw-nvme-hybrid/ba-persist.c,
docs/bar-pm.md "What a persist costs"): after window writes, PMRSTS.PPND reads 1
until the modeled time has passed on the virtual clock, which only clock_step
moves here, so every time below is a known answer (bad values of the two properties are
in test_bar_pm.py's test_bad_window_property):

    ready = max(now, link free) + 64 x changed lines x 1000 / ba-write-mbps + ba-rtt-ns
"""

import pytest

import nvme_qtest as nq
from conftest import IMAGE_SIZE, MODEL, SERIAL
from test_bar_pm import REG_PMRCAP, REG_PMRCTL, REG_PMRSTS, REG_PMRSWTP, Ba

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's BAR1 window")

PPND = 1 << 31
RTT_NS, MBPS = 1000, 3200                   # the defaults: ~1 us round trip, PCIe gen3 x4


def link_ns(nbytes, mbps=MBPS):
    return -(-nbytes * 1000 // mbps)        # rounded up, as the device does


def start(qemu_binary, props=""):
    vm = nq.Vm(qemu_binary, MODEL, image_size=IMAGE_SIZE, serial=SERIAL, device_props=props)
    b = Ba(vm)
    b.c.wr32(REG_PMRCTL, 1)
    return vm, b


@pytest.fixture
def model(qemu_binary):
    vm, b = start(qemu_binary)
    yield vm, b
    vm.close()


def pending(b):
    return bool(b.c.rd32(REG_PMRSTS) & PPND)


def persist_ns(vm, b):
    """Step the clock by 1 ns, then read PMRSTS as libba does, stepping 1 ns between reads,
    until PPND is 0; returns the virtual time from the first read to the ready one."""
    t0 = t = vm.qt.clock_step(1)
    while pending(b):
        t = vm.qt.clock_step(1)
    return t - t0


def test_pending_until_the_modeled_time(model):
    vm, b = model
    assert not pending(b), "nothing written: ready"
    b.wwrite(4096, b"\x5a" * 64)                # one line
    t0 = vm.qt.clock_step(1)
    want = link_ns(64) + RTT_NS                 # 20 + 1000 ns
    assert pending(b), "right after the write the persist has not completed"
    assert vm.qt.clock_step(want - 1) == t0 + want - 1
    assert pending(b), f"still pending 1 ns before {want} ns"
    vm.qt.clock_step(1)
    assert not pending(b), f"ready at {want} ns"
    assert not pending(b), "and it stays ready while nothing is written"


@pytest.mark.parametrize("nbytes", [1, 64, 512, 4096, 65536])
def test_modeled_time_grows_with_the_bytes(model, nbytes):
    vm, b = model
    b.wwrite(8192 + 64, bytes((i % 251) + 1 for i in range(nbytes)))
    lines = -(-nbytes // 64)                    # a partial line costs a whole line (a WC burst)
    assert persist_ns(vm, b) == link_ns(64 * lines) + RTT_NS


def test_rewriting_the_same_bytes_is_free_and_the_link_is_shared(model):
    vm, b = model
    data = b"\x11" * 4096
    b.wwrite(0, data)
    assert persist_ns(vm, b) == link_ns(4096) + RTT_NS
    b.wwrite(0, data)
    assert not pending(b), "the same content again: no line changed, nothing to carry"
    # writes made while a persist is pending queue behind it on the link
    b.wwrite(0, b"\x22" * 4096)
    t0 = vm.qt.clock_step(1)
    assert pending(b)                           # the link carries it until t0 + 1280 ns
    b.wwrite(1 << 20, b"\x33" * 4096)
    assert vm.qt.clock_step(100) == t0 + 100
    while pending(b):                           # counted at t0 + 100, sent after the first
        t = vm.qt.clock_step(1)
    assert t - t0 == 2 * link_ns(4096) + RTT_NS


def test_other_properties(qemu_binary):
    vm, b = start(qemu_binary, "ba-rtt-ns=500,ba-write-mbps=1000")
    try:
        b.wwrite(0, b"\x01" * 4096)
        assert persist_ns(vm, b) == 4096 + 500
        swtp = b.c.rd32(REG_PMRSWTP)
        assert (swtp & 0xF, swtp >> 8) == (1, 1000 * 10**6 // 1024), "PMRSWTP in KiB/s"
    finally:
        vm.close()


def test_device_writes_to_the_window_are_free(model):
    vm, b = model
    ioq = b.c.create_io_queue(1, 16)
    assert b.c.write(ioq, 100, b"\x77" * 4096).ok
    assert b.pin(0, 4096, 100, 8).ok
    assert b.wread(4096, 4096) == b"\x77" * 4096
    assert not pending(b), "BA_PIN's load is the device's own datapath, not posted writes"


def test_registers_describe_the_model(model):
    vm, b = model
    assert (b.c.rd32(REG_PMRCAP) >> 10) & 0xF == 2, "PMRWBM: only a PMRSTS read is a barrier"
    swtp = b.c.rd32(REG_PMRSWTP)
    assert (swtp & 0xF, swtp >> 8) == (1, MBPS * 10**6 // 1024), "PMRSWTP: 3200 MB/s in KiB/s"


def test_zero_is_free(qemu_binary):
    vm, b = start(qemu_binary, "ba-rtt-ns=0,ba-write-mbps=0")
    try:
        for n in (1, 4096, 1 << 20):
            b.wwrite(0, bytes((i % 253) + 1 for i in range(n)))
            assert not pending(b), f"free persists: ready at once after {n} bytes"
        assert (b.c.rd32(REG_PMRCAP) >> 10) & 0xF == 3, "PMRWBM: any PMR read is a barrier too"
        assert b.c.rd32(REG_PMRSWTP) == 0, "PMRSWTP: write throughput not modeled"
    finally:
        vm.close()


def test_zero_bandwidth_is_free_writes_with_a_round_trip(qemu_binary):
    vm, b = start(qemu_binary, "ba-write-mbps=0")
    try:
        b.wwrite(0, b"\x09" * 65536)
        assert persist_ns(vm, b) == RTT_NS
    finally:
        vm.close()
