"""Device properties: nonsense is refused at realize with a message naming the property, QEMU
does not start and nothing aborts; good values reach the engine; docs/properties.md documents every
property the device has.
"""

import json
import os
import re
import subprocess

import pytest

from conftest import MODEL

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(MODEL != "nvme-hybrid", reason="nvme-hybrid's own properties")


def start(qemu, tmp_path, props, size=64 << 20, extra=()):
    img = tmp_path / "d.img"
    with open(img, "wb") as f:
        f.truncate(size)
    dev = "nvme-hybrid,id=nvh,drive=d0" + (("," + props) if props else "")
    return subprocess.run(
        [qemu, "-L", "/usr/share/qemu", "-L", "/usr/share/seabios", "-machine", "q35",
         "-accel", "qtest", "-nodefaults", "-display", "none", "-qmp", "stdio",
         "-drive", f"if=none,id=d0,file={img},format=raw", "-device", dev, *extra],
        input='{"execute":"qmp_capabilities"}\n'
              '{"execute":"qom-get","arguments":{"path":"/machine/peripheral/nvh",'
              '"property":"stats"}}\n{"execute":"quit"}\n',
        capture_output=True, text=True, timeout=60)


BAD = [
    ("serial=s,channels=0", "channels"),
    ("serial=s,channels=65", "channels"),
    ("serial=s,ways=zero", "ways"),
    ("serial=s,op=0", "op"),
    ("serial=s,op=80", "op"),
    ("serial=s,page-size=3K", "page-size"),
    ("serial=s,pages=1", "pages"),
    ("serial=s,cell=plc", "cell"),
    ("serial=s,t-read=-5us", "t-read"),
    ("serial=s,t-prog=10parsecs", "t-prog"),
    ("serial=s,t-erase=100s", "t-erase"),
    ("serial=s,channel-mbps=0", "channel-mbps"),
    ("serial=s,ftl=nope", "ftl"),
    ("serial=s,gc=random", "gc"),
    ("serial=s,gc-low=50,gc-high=10", "gc-"),
    ("serial=s,latency=fast", "latency"),
    ("serial=s,lbuf-alpha=2", "lbuf-alpha"),
    ("serial=s,blocks=1", "blocks"),                    # far too small for 64 MiB
    ("serial=s,lba-size=1000", "lba-size"),
    ("serial=s,queues=0", "queues"),
    ("serial=012345678901234567890", "serial"),          # 21 characters
    ("", "serial"),
    ("serial=s,fdp=on,streams=0", "fdp: "),                              # no placement
    ("serial=s,fdp=on,ftl=fast", "fdp: "),                               # auto: cannot place
    ("serial=s,fdp=on,streams=3,stream-map=dstream", "fdp: "),
    ("serial=s,fdp=on,streams=4,physical-streams=3", "fdp: "),           # handles would share
    ("serial=s,fdp=on,streams=64", "fdp: "),                             # 65 handles
    ("serial=s,preset=pm1733", "preset"),
    ("serial=s,host-mps=100", "host-mps"),
    ("serial=s,fw-read=fast", "fw-read"),
    ("serial=s,fw-write=2s", "fw-write"),
    ("serial=s,ftl=bast,stripe-merge=on", "stripe-merge"),  # given, not the preset's: refused
    ("serial=s,stripe-merge=off,map-unit=4K", "map-unit: "),             # needs stripe-merge
    ("serial=s,map-unit=4K,stripe-merge=on,ftl=bast", "map-unit: "),
    ("serial=s,map-unit=32K", "map-unit: "),                             # above the 16K page
]


@pytest.mark.parametrize("props,name", BAD, ids=[b[0] or "no-serial" for b in BAD])
def test_bad_property_refused(qemu_binary, tmp_path, props, name):
    r = start(qemu_binary, tmp_path, props)
    assert r.returncode == 1, f"QEMU should refuse {props!r}: rc {r.returncode}\n{r.stderr}"
    assert name in r.stderr, f"message should name {name!r}: {r.stderr}"
    assert "Aborted" not in r.stderr and "core dumped" not in r.stderr


def test_drive_not_multiple_of_lba(qemu_binary, tmp_path):
    r = start(qemu_binary, tmp_path, "serial=s,lba-size=4096", size=(64 << 20) + 512)
    assert r.returncode == 1 and "drive" in r.stderr, r.stderr


def test_good_properties_reach_the_engine(qemu_binary, tmp_path):
    r = start(qemu_binary, tmp_path,
              "serial=s,channels=4,ways=2,planes=2,pages=128,page-size=8K,op=12,cell=mlc,"
              "t-read=70us,channel-mbps=1200,gc=cost-benefit,state-file=none")
    assert r.returncode == 0, r.stderr
    reply = [json.loads(line) for line in r.stdout.splitlines() if '"return"' in line][1]
    stats = json.loads(reply["return"])
    cfg = stats["config"]
    assert (cfg["channels"], cfg["ways"], cfg["planes"], cfg["pages"]) == ("4", "2", "2", "128")
    assert cfg["page-size"] == "8K" and cfg["op"] == "12" and cfg["cell"] == "mlc"
    assert cfg["t-read"] == "70us" and cfg["gc"] == "cost-benefit"
    # blocks=auto resolved to a geometry that holds 64 MiB after 12% spare
    planes = 4 * 2 * 1 * 2
    assert int(cfg["blocks"]) * planes * 128 * 8192 * 88 // 100 >= 64 << 20


def config_of(qemu, tmp_path, props):
    r = start(qemu, tmp_path, props)
    assert r.returncode == 0, r.stderr
    reply = [json.loads(line) for line in r.stdout.splitlines() if '"return"' in line][1]
    return json.loads(reply["return"])["config"]


def test_default_device_is_the_default_preset(qemu_binary, tmp_path):
    """No preset: the PM9A3's values (docs/presets.md), on a 64 MiB drive too."""
    cfg = config_of(qemu_binary, tmp_path, "serial=s,state-file=none")
    assert (cfg["preset"], cfg["cell"], cfg["page-size"]) == ("pm9a3", "tlc", "16K"), cfg
    assert (cfg["t-read"], cfg["t-prog"], cfg["op"]) == ("45us", "450us", "12"), cfg


def test_map_unit_shows_beside_the_flash_page(qemu_binary, tmp_path):
    """map-unit=4K on the default 16 KiB-page drive: the configuration keeps the flash page and
    the unit, the geometry is in units (a 4 KiB transfer at 1,400 MB/s)."""
    r = start(qemu_binary, tmp_path, "serial=s,state-file=none,map-unit=4K,stripe-merge=on")
    assert r.returncode == 0, r.stderr
    reply = [json.loads(line) for line in r.stdout.splitlines() if '"return"' in line][1]
    stats = json.loads(reply["return"])
    assert (stats["config"]["page-size"], stats["config"]["map-unit"]) == ("16K", "4K")
    assert stats["geometry"]["t_xfer_ns"] == 2926     # ceil(4096 B / 1,400 MB/s)
    assert stats["geometry"]["pages_total"] * 4096 == stats["geometry"]["physical_bytes"]


@pytest.mark.parametrize("props", ["channels=4,preset=970pro", "preset=970pro,channels=4"])
def test_keys_override_the_preset_in_any_order(qemu_binary, tmp_path, props):
    cfg = config_of(qemu_binary, tmp_path, "serial=s,state-file=none," + props)
    assert (cfg["preset"], cfg["channels"], cfg["ways"]) == ("970pro", "4", "2"), cfg
    assert (cfg["page-size"], cfg["t-prog"], cfg["cell"]) == ("32K", "185us", "mlc"), cfg


PRESETS = ["pm9a3", "970pro", "sz985", "pm9d3a"]
# zones=4 on pm9a3 are 4 zones of a block on each of its 256 planes (3 GiB each): a sparse
# image of 64 GiB holds them and the conventional space
EXTRAS = [("fdp=on", 64 << 20), ("zones=4", 64 << 30), ("ftl=bast", 64 << 20),
          ("ftl=sast", 64 << 20), ("buffer=lru", 64 << 20)]


@pytest.mark.parametrize("extra,size", EXTRAS, ids=[e[0] for e in EXTRAS])
def test_every_preset_builds_what_preset_none_builds(qemu_binary, tmp_path, extra, size):
    """A preset's values are soft: a device that starts on preset=none with @extra starts on
    every preset with it, and the config object names what the preset gave up and why."""
    base = "serial=s,state-file=none," + extra
    none = start(qemu_binary, tmp_path, base + ",preset=none", size=size)
    assert none.returncode == 0, none.stderr
    for preset in PRESETS:
        r = start(qemu_binary, tmp_path, base + ",preset=" + preset, size=size)
        assert r.returncode == 0, f"preset={preset},{extra}: {r.stderr}"
        reply = [json.loads(line) for line in r.stdout.splitlines() if '"return"' in line][1]
        cfg = json.loads(reply["return"])["config"]
        dropped = cfg["preset-dropped"]
        # the presets' 4 KiB mapping units (and 970pro's volatile stage) need the stage, which
        # the hybrids lack, and zones need whole-page mapping
        want = {"970pro": {"map-unit", "stage-volatile"}, "pm9a3": {"map-unit"},
                "pm9d3a": {"map-unit"}}.get(preset, set())
        if extra.startswith("ftl="):
            assert cfg["stripe-merge"] == "off", cfg
            assert dropped["stripe-merge"].startswith("on: stripe-merge: only ftl=page"), dropped
            assert f"preset {preset}'s stripe-merge dropped (was on: " in r.stderr, r.stderr
            assert set(dropped) == want | {"stripe-merge"}, dropped
        elif extra == "zones=4" and want:
            assert set(dropped) == {"map-unit"}, dropped
            assert dropped["map-unit"].startswith("4K: zones: a zoned region needs"), dropped
        else:
            assert dropped == {}, dropped


def test_fdp_on_a_default_device_has_a_handle_per_stream(qemu_binary, tmp_path):
    """fdp=on alone: streams=auto gives 16 host streams on 17 frontiers, so
    17 reclaim unit handles, none sharing a unit."""
    r = start(qemu_binary, tmp_path, "serial=s,fdp=on,state-file=none")
    assert r.returncode == 0, r.stderr
    reply = [json.loads(line) for line in r.stdout.splitlines() if '"return"' in line][1]
    pl = json.loads(reply["return"])["ftl"]["placement"]
    assert (pl["host_streams"], len(pl["host_pages"]), pl["shared_streams"]) == (16, 17, 0)


def test_properties_page_documents_every_property(qemu_binary):
    out = subprocess.run([qemu_binary, "-device", "nvme-hybrid,help"], capture_output=True,
                         text=True, timeout=60).stdout
    props = set(re.findall(r"^  ([a-z][a-z0-9-]*)=", out, re.M))
    # inherited from QEMU's generic PCI device, not ours to document
    generic = {"addr", "romfile", "romsize", "rombar", "multifunction", "busnr", "acpi-index",
               "failover_pair_id", "x-max-bounce-buffer-size"}
    props = {p for p in props if p not in generic and not p.startswith("x-pcie")}
    with open(os.path.join(REPO, "docs", "properties.md")) as f:
        readme = f.read()
    documented = set(re.findall(r"^\| `([a-z0-9-]+)`", readme, re.M))
    documented |= set(re.findall(r"`([a-z0-9-]+)`,? ", readme))
    missing = sorted(p for p in props if p not in documented)
    assert not missing, f"docs/properties.md's property tables lack: {missing}"


@pytest.mark.parametrize("props,npwg,nows", [
    # 4 KiB pages, 8 channels x 4 ways: a page, and a page on each of 32 planes (in 512 B LBAs)
    ("", 8, 8 * 32),
    # 16 KiB pages on 2 x 2 x 2 dies x 2 planes
    ("page-size=16K,channels=2,ways=2,dies=2,planes=2,ba-size=0", 32, 32 * 16),
    # TLC one-shot programs a word line of 3 pages at once
    ("cell=tlc,one-shot=on,pages=384,channels=2,ways=1,ba-size=0", 24, 24 * 2),
])
def test_write_granularity_follows_geometry(qemu_binary, props, npwg, nows):
    import nvme_qtest as nq
    vm = nq.Vm(qemu_binary, MODEL, device_props=props + ("," if props else "") + "state-file=none")
    try:
        c = nq.Controller(vm)
        c.enable()
        ns = c.identify_ns(1)
        assert (ns.npwg + 1, ns.nows + 1) == (npwg, nows)
        assert ns.npwa == ns.npwg and ns.npdg == ns.npwg and ns.npda == ns.npwg
    finally:
        vm.close()
