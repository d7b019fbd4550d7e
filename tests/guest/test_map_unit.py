"""Whole-page mapping on the default drive (map-unit=auto on preset=pm9a3's 16 KiB pages,
docs/mapping-units.md) in a guest, beside test_default_drive's 4 KiB units: the same fio 4 KiB
random writes with verify, and after a Flush every write has read and rewritten its 16 KiB page
(4 bytes programmed a byte written) where the default drive packs four into a page."""

from conftest import check, delta, load_json, stats, vm
from test_default_drive import JOB      # fio's 4 KiB random writes with verify, 16 MiB

SCRIPT = r"""#guest
export DEV
snap 0
rc=0
fio --output-format=json --output=$S/fio.json $S/job.fio || rc=$?
echo $rc > $S/fio.rc
nvme flush $DEV
snap 1
"""


def test_whole_pages_read_and_rewrite(share):
    (share / "job.fio").write_text(JOB)
    status, out = vm(SCRIPT, device="preset=pm9a3,map-unit=auto", share=share, timeout=400)
    check(status, out)
    assert (share / "fio.rc").read_text().strip() == "0", out
    job = load_json(share, "fio.json")["jobs"][0]
    assert job["error"] == 0
    assert job["write"]["io_bytes"] == 16 << 20
    after = stats(share, "1")
    assert (after["config"]["page-size"], after["config"]["map-unit"]) == ("16K", "auto")
    d = delta(after, stats(share, "0"))
    assert d["host.write_bytes"] == 16 << 20
    # 4,096 writes into 1,024 pages: a write to a page already staged joins it, the others
    # read the page's other 12 KiB first where it holds data
    assert d["ftl.rmw_reads"] > 0, d
    assert d["nand.page_programs"] + d["ftl.stripe_overwrites"] <= d["host.write_cmds"], d
