"""The device of a running guest over QMP, as the campaigns (scripts/soak, powercut-campaign,
dblog-powercut) read it and cut its power: qemu.qmp's synchronous client on the socket that
vm-exec --qmp PATH opens.  qemu.qmp lives in build/venv: a script calls
nhvenv.ensure(("qemu.qmp",)) before it imports this module.  (The live view reads the same
properties with qemu.qmp's asyncio client, nh/live.py, as it runs in textual's event loop.)"""
import json
import os
import time

from qemu.qmp.legacy import QEMUMonitorProtocol

from nh import vm as nhvm


class Ended(Exception):
    """The QEMU process (or vm-exec around it) ended before its QMP socket answered."""


class Device:
    """A QMP connection to QEMU at socket @path, for the device's properties."""

    def __init__(self, path):
        self.qmp = QEMUMonitorProtocol(path)
        self.qmp.connect()

    @classmethod
    def when_up(cls, path, proc, seconds):
        """A Device once QEMU, started under @proc, answers at @path.  Raises Ended when @proc
        ends first, TimeoutError when nothing answers within @seconds."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise Ended()
            if os.path.exists(path):
                try:
                    return cls(path)
                except OSError:     # the socket exists before QEMU listens on it
                    pass
            time.sleep(0.5)
        raise TimeoutError()

    def get(self, prop):
        return self.qmp.cmd("qom-get", path=nhvm.QOM_PATH, property=prop)

    def set(self, prop, value):
        """qom-set; returns QMP's answer, {"error": ...} included, as it is."""
        return self.qmp.cmd_obj({"execute": "qom-set", "arguments": {
            "path": nhvm.QOM_PATH, "property": prop, "value": value}})

    def stats(self):
        """The engine's statistics document (docs/statistics.md)."""
        return json.loads(self.get("stats"))

    def check(self):
        """The engine's full consistency check: "ok", or what is wrong."""
        return self.get("x-check")

    def cut_power(self):
        """The device's power fails now: QEMU ends before it answers, so no answer comes."""
        try:
            self.set("power-cut", True)
        except Exception:   # noqa: BLE001 - qemu.qmp's own errors as the connection drops
            pass

    def close(self):
        """Close the connection, which a QEMU that already ended has closed itself."""
        try:
            self.qmp.close()
        except Exception:   # noqa: BLE001
            pass
