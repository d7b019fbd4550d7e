"""The device's trace events (hw-nvme-hybrid/trace-events, QEMU's `-trace`): commands, their
completions and error paths show up on QEMU's log when enabled."""

import pytest

import nvme_qtest as nq
from conftest import IMAGE_SIZE, MODEL, SERIAL

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's trace events")


def test_commands_and_errors_are_traced(qemu_binary):
    vm = nq.Vm(qemu_binary, MODEL, image_size=IMAGE_SIZE, serial=SERIAL,
               extra_args=("-trace", "nhc_*"))
    try:
        c = nq.Controller(vm)
        c.enable()
        assert c.identify_ctrl()
        assert c.admin_cmd(nq.sqe(0x7F)).sc == nq.SC_INVALID_OPCODE
        c.wr32(c.sq_doorbell(9), 1)             # a queue that does not exist
        log = vm.stderr_text()
        for event in ("nhc_ctrl_enable", "nhc_cmd_fetch", "nhc_admin_identify",
                      "nhc_cmd_complete", "nhc_err_cmd", "nhc_err_status", "nhc_err_doorbell",
                      "nhc_mmio_write"):
            assert event in log, f"no {event} in QEMU's log"
        assert "opcode 0x7f: status 0x4001" in log
        assert "nhc_dispatch:" in log, "nhc_err_status names where the check failed"
    finally:
        vm.close()
