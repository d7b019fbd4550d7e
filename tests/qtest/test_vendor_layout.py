"""The vendor formats of include/nh-vendor.h against their mirrors.

The header is compiled here and asked for its sizes, offsets and constants;
the places that restate them without including it are held to them: the
guest's Python mirror of libba's ba_info (the power-cut campaign's guest
script), the statistics tool's header of log page C0h, the qtests' own
decoder of BA_GET_ENTRY_INFO, the BA_* opcodes wherever Python restates them.  The
device's reply is decoded by the header's offsets too."""

import ctypes
import importlib.machinery
import importlib.util
import json
import os
import re
import struct
import subprocess

import pytest

import nvme_qtest as nq
import test_bar_pm
from conftest import MODEL

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's vendor formats")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

STRUCTS = {
    "NhBaEntryInfo": ("eid", "state", "restore", "entries", "offset", "slba", "nlb", "length",
                      "window_size", "lba_size", "dumps", "dump_ns"),
    "ba_info": ("eid", "state", "offset", "slba", "nlb", "length", "entries", "restore",
                "window_size", "lba_size", "dumps", "dump_ns"),
    "NhBaHeader": ("magic", "version", "entries", "window_offset", "window_size", "lba_size",
                   "state", "dumps", "dump_ns", "window_crc", "meta_crc"),
    "NhBaEntry": ("state", "reserved", "offset", "slba", "nlb"),
    "NhStatsLogHeader": ("magic", "version", "json_len", "reserved"),
}
CONSTANTS = ("NH_BA_OP_PIN", "NH_BA_OP_GET_ENTRY_INFO", "NH_BA_OP_SYNC", "NH_BA_OP_READ_DMA",
             "NH_BA_OP_FLUSH", "NH_BA_SC_INVALID_ENTRY", "NH_BA_SC_ENTRY_PINNED",
             "NH_BA_SC_ENTRY_NOT_PINNED", "NH_BA_SC_WINDOW_RANGE", "NH_BA_SC_OVERLAP",
             "NH_BA_META_SIZE", "NH_STATS_LOG_ID", "NH_STATS_VERSION")


def probe_source():
    """A C program printing the header's layout as JSON."""
    lines = ['#include <stdio.h>', '#include "nh-vendor.h"', '#include "libba.h"',
             'int main(void) {', 'printf("{");']
    for name, fields in STRUCTS.items():
        lines.append(f'printf("\\"{name}\\": {{\\"size\\": %zu", sizeof({name}));')
        for f in fields:
            lines.append(f'printf(", \\"{f}\\": [%zu, %zu]", offsetof({name}, {f}), '
                         f'sizeof((({name} *)0)->{f}));')
        lines.append('printf("}, ");')
    for c in CONSTANTS:
        lines.append(f'printf("\\"{c}\\": %llu, ", (unsigned long long)({c}));')
    lines.append('printf("\\"NH_BA_MAGIC\\": \\"%s\\", \\"NH_STATS_MAGIC\\": \\"%s\\"}\\n", '
                 'NH_BA_MAGIC, NH_STATS_MAGIC);')
    lines += ['return 0;', '}']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    d = tmp_path_factory.mktemp("layout")
    src, exe = d / "probe.c", d / "probe"
    src.write_text(probe_source())
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"),
                    "-I", os.path.join(ROOT, "bar-pm"), "-o", str(exe), str(src)], check=True)
    return json.loads(subprocess.run([str(exe)], check=True, capture_output=True,
                                     text=True).stdout)


def load(path, name):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def find(script):
    """A mirror lives in scripts/ or guest-images/ (guest-side scripts may move)."""
    for top in ("scripts", "guest-images"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            if script in files:
                return os.path.join(d, script)
    pytest.fail(f"{script} not found under scripts/ or guest-images/")


def struct_fields(fmt, names):
    """name -> (offset, size) of a little-endian struct format without padding."""
    out, off = {}, 0
    for name, code in zip(names, re.findall(r"\d*[a-zA-Z]", fmt.lstrip("<"))):
        size = struct.calcsize("<" + code)
        out[name] = [off, size]
        off += size
    return out


def test_qtest_decoder_of_entry_info(layout):
    """test_bar_pm's BA_GET_ENTRY_INFO decoder, field by field."""
    want = layout["NhBaEntryInfo"]
    got = struct_fields("<HBBIQQQQQIIQ", STRUCTS["NhBaEntryInfo"])
    assert struct.calcsize("<HBBIQQQQQIIQ") == want["size"]
    assert got == {k: v for k, v in want.items() if k != "size"}
    assert (test_bar_pm.BA_PIN, test_bar_pm.BA_INFO, test_bar_pm.BA_SYNC,
            test_bar_pm.BA_READ_DMA, test_bar_pm.BA_FLUSH) == (
        layout["NH_BA_OP_PIN"], layout["NH_BA_OP_GET_ENTRY_INFO"], layout["NH_BA_OP_SYNC"],
        layout["NH_BA_OP_READ_DMA"], layout["NH_BA_OP_FLUSH"])
    assert (test_bar_pm.SC_BA_INVALID_ENTRY, test_bar_pm.SC_BA_ENTRY_PINNED,
            test_bar_pm.SC_BA_NOT_PINNED, test_bar_pm.SC_BA_WINDOW_RANGE,
            test_bar_pm.SC_BA_OVERLAP) == (
        layout["NH_BA_SC_INVALID_ENTRY"], layout["NH_BA_SC_ENTRY_PINNED"],
        layout["NH_BA_SC_ENTRY_NOT_PINNED"], layout["NH_BA_SC_WINDOW_RANGE"],
        layout["NH_BA_SC_OVERLAP"])
    assert test_bar_pm.META == layout["NH_BA_META_SIZE"]


def test_guest_mirror_of_ba_info(layout):
    """The power-cut campaign's guest script reads libba's ba_info through
    ctypes: same fields, same offsets, same sizes."""
    guest = load(find("powercut-guest.py"), "nh_powercut_guest")
    want = layout["ba_info"]
    assert ctypes.sizeof(guest.BaInfo) == want["size"]
    assert [f for f, _ in guest.BaInfo._fields_] == list(STRUCTS["ba_info"])
    for f, ctype in guest.BaInfo._fields_:
        assert [getattr(guest.BaInfo, f).offset, ctypes.sizeof(ctype)] == want[f], f


def test_stats_tool_header(layout):
    """nvme-hybrid-stats decodes log page C0h's header as the device writes it."""
    tool = load(os.path.join(ROOT, "guest-images", "tools", "nvme-hybrid-stats"),
                "nh_stats_tool")
    want = layout["NhStatsLogHeader"]
    assert tool.HEADER.format in ("<4sIII", b"<4sIII")
    assert tool.HEADER.size == want["size"]
    assert struct_fields("<4sIII", STRUCTS["NhStatsLogHeader"]) == {
        k: v for k, v in want.items() if k != "size"}
    assert tool.LOG_ID == layout["NH_STATS_LOG_ID"]
    assert tool.MAGIC == layout["NH_STATS_MAGIC"].encode()
    assert tool.LAYOUT_VERSION == layout["NH_STATS_VERSION"]


OPCODE_LINE = re.compile(r"^BA_PIN, BA_INFO, BA_SYNC, BA_READ_DMA, BA_FLUSH = (.*)$", re.M)


def test_opcodes_where_restated(layout):
    """Every Python file that names the five BA_* opcodes on one line (the
    crash-point campaign, the qtests) names the header's."""
    want = [layout[k] for k in ("NH_BA_OP_PIN", "NH_BA_OP_GET_ENTRY_INFO", "NH_BA_OP_SYNC",
                                "NH_BA_OP_READ_DMA", "NH_BA_OP_FLUSH")]
    found = []
    for top in ("scripts", "guest-images", os.path.join("tests", "qtest")):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                path = os.path.join(d, f)
                try:
                    text = open(path, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue
                for m in OPCODE_LINE.finditer(text):
                    found.append(os.path.relpath(path, ROOT))
                    assert [int(x, 16) for x in m.group(1).split(",")] == want, path
    assert any(p.startswith("scripts") for p in found), found


def test_device_reply_by_the_header(layout, vm):
    """A pinned entry's BA_GET_ENTRY_INFO, decoded by the compiled offsets."""
    ba = test_bar_pm.Ba(vm)
    assert ba.pin(3, 8192, 200, 16).ok
    buf = ba.c.dma_buffer(64)
    cqe = ba.c.admin_cmd(nq.sqe(layout["NH_BA_OP_GET_ENTRY_INFO"], prp1=buf, cdw10=3))
    assert cqe.ok, cqe
    raw = vm.qt.memread(buf, layout["NhBaEntryInfo"]["size"])

    def field(name):
        off, size = layout["NhBaEntryInfo"][name]
        return int.from_bytes(raw[off:off + size], "little")

    assert (field("eid"), field("state"), field("offset"), field("slba"), field("nlb")) == (
        3, 1, 8192, 200, 16)
    assert field("length") == 16 * field("lba_size") and field("window_size") == 8 << 20
    assert field("entries") == 8
