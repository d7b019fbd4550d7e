"""The default drive in a guest: a device given no preset is the PM9A3 preset (docs/presets.md),
16 KiB flash pages holding 4 KiB mapping units (map-unit=4K), 256 planes, and its
capacitor-backed write cache (stripe-merge=on).
Every other guest test names preset=none (conftest's TEST_KEYS), so this is the one that boots
what a user gets with no keys: Linux binds it, fio writes and verifies 4 KiB random writes, and
after a Flush the statistics say which drive ran and that the 4 KiB writes were packed into
whole pages, one byte programmed a byte written, none reading and rewriting a 16 KiB page
(test_map_unit has the same drive with whole-page mapping)."""

from conftest import check, delta, load_json, stats, vm

JOB = """
[verify]
filename=${DEV}
ioengine=libaio
direct=1
rw=randwrite
bs=4k
iodepth=8
size=16M
verify=crc32c
verify_fatal=1
do_verify=1
"""

SCRIPT = r"""#guest
export DEV
snap 0
rc=0
fio --output-format=json --output=$S/fio.json $S/job.fio || rc=$?
echo $rc > $S/fio.rc
nvme id-ns $DEV -o json > $S/id-ns.json
nvme flush $DEV
snap 1
"""


def random_writes(share, device):
    """fio's verified 4 KiB random writes (JOB) on @device, then a Flush: the statistics after
    them and their difference from before."""
    (share / "job.fio").write_text(JOB)
    status, out = vm(SCRIPT, device=device, share=share, timeout=400)
    check(status, out)
    assert (share / "fio.rc").read_text().strip() == "0", out
    job = load_json(share, "fio.json")["jobs"][0]
    assert job["error"] == 0
    assert job["write"]["io_bytes"] == 16 << 20
    after = stats(share, "1")
    d = delta(after, stats(share, "0"))
    assert d["host.write_bytes"] == 16 << 20
    return after, d


def test_default_drive_is_pm9a3_and_verifies(share):
    # "preset=pm9a3" only so that conftest does not put the tests' preset=none first: it is
    # what a device without keys gets (/config/preset-default checks that)
    after, d = random_writes(share, "preset=pm9a3")
    cfg = after["config"]
    assert cfg["preset"] == "pm9a3"
    assert cfg["page-size"] == "16K"
    assert (cfg["map-unit"], cfg["stripe-merge"], cfg["preset-dropped"]) == ("4K", "on", {})
    assert after["geometry"]["parallel_units"] == 256
    assert d["ftl.rmw_reads"] == 0, d
    # 4,096 units, each written once, the Flush padding the last flash page (3 units at most)
    assert 4096 <= d["nand.page_programs"] <= 4096 + 3, d
    assert d["ftl.stripe_pages"] == 4096, d
    # Identify's preferred write granularity is the 16 KiB program unit (NPWG, 0-based LBAs)
    ns = load_json(share, "id-ns.json")
    lba = 1 << ns["lbafs"][ns["flbas"] & 0xf]["ds"]
    assert (ns["npwg"] + 1) * lba % (16 << 10) == 0
