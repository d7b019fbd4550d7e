"""Fixtures for the qtest device tests.

Environment:
  NH_QTEST_MODEL         device under test: nvme-hybrid (default) or nvme
                         (QEMU's own controller, for comparison)
  NH_QTEST_DEVICE_PROPS  extra ",key=value" properties for -device
  NH_QEMU                QEMU binary (default: build/qemu-system-x86_64)

Every test gets its own QEMU process on its own temporary image, killed
when the test ends, so tests are independent and can run in any order.
"""

import contextlib
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nvme_qtest as nq  # noqa: E402

MODEL = os.environ.get("NH_QTEST_MODEL", "nvme-hybrid")
DEVICE_PROPS = os.environ.get("NH_QTEST_DEVICE_PROPS", "")
IMAGE_SIZE = 64 << 20
SERIAL = "nhqtest0"


@pytest.fixture(scope="session")
def qemu_binary():
    qemu = nq.default_qemu_binary()
    if qemu is None:
        pytest.skip("no QEMU binary: build it (make) or set NH_QEMU")
    out = subprocess.run([qemu, "-device", "help"], capture_output=True,
                         text=True, timeout=60).stdout
    if f'name "{MODEL}"' not in out:
        # A build without the device under test is a broken build, not a
        # reason to skip: fail loudly.
        pytest.fail(f"{qemu} has no device {MODEL!r}")
    return qemu


@contextlib.contextmanager
def running(qemu_binary, props=DEVICE_PROPS, image_size=IMAGE_SIZE):
    """A QEMU with the device (@props), killed on the way out."""
    machine = nq.Vm(qemu_binary, MODEL, image_size=image_size, serial=SERIAL,
                    device_props=props)
    try:
        yield machine
    finally:
        alive = machine.proc.poll() is None
        log = machine.stderr_text()
        machine.close()
        # Shown by pytest only when the test failed: QEMU's own complaints.
        print(f"QEMU {'was running' if alive else 'had exited'} at teardown; stderr:\n{log}")


def enabled_controller(machine):
    """The controller of @machine, enabled, with its Identify Controller data in .id."""
    ctrl = nq.Controller(machine)
    ctrl.enable()
    ctrl.id = ctrl.identify_ctrl()
    return ctrl


@pytest.fixture
def vm(qemu_binary):
    with running(qemu_binary) as machine:
        yield machine


@pytest.fixture
def ctrl(vm):
    """The controller, BARs mapped, not yet enabled."""
    return nq.Controller(vm)


@pytest.fixture
def nvme(ctrl):
    """The controller enabled with an admin queue pair, Identify read once
    (which records MDTS)."""
    ctrl.enable()
    ctrl.id = ctrl.identify_ctrl()
    return ctrl


@pytest.fixture
def ns(nvme):
    return nvme.identify_ns(1)


@pytest.fixture
def ioq(nvme):
    """I/O queue pair 1 (CQ 1 + SQ 1, 64 entries)."""
    return nvme.create_io_queue(1, 64)


def qemu_nvme_deviation(reason):
    """Mark a test that QEMU's own nvme fails because it departs from the
    spec; strict, so a fixed QEMU turns the mark into a failure to remove."""
    return pytest.mark.xfail(MODEL == "nvme", reason=f"QEMU nvme: {reason}", strict=True)


def assert_status(cqe, sct, sc, why):
    assert (cqe.sct, cqe.sc) == (sct, sc), (
        f"expected SCT {sct:#x} SC {sc:#04x} ({why}); got {cqe}")


def assert_still_works(vm, ctrl):
    """After a malformed command: QEMU runs and the controller answers."""
    assert vm.alive(), f"QEMU died:\n{vm.stderr_text()}"
    assert ctrl.healthy(), "controller no longer answers Identify Controller"
