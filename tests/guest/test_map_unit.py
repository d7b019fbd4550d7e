"""4 KiB mapping units on the default 16 KiB-page drive (map-unit=4K, docs/mapping-units.md) in a
guest: Linux binds the device, fio writes and verifies 4 KiB random writes, and after a Flush
the statistics show the units packed into whole pages, one byte programmed per byte written and
no read-modify-write (map-unit=auto reads and rewrites a 16 KiB page per write: 4 bytes a
byte, test_default_drive)."""

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


def test_units_packed_into_pages(share):
    (share / "job.fio").write_text(JOB)
    status, out = vm(SCRIPT, device="preset=pm9a3,map-unit=4K,stripe-merge=on", share=share,
                     timeout=400)
    check(status, out)
    assert (share / "fio.rc").read_text().strip() == "0", out
    job = load_json(share, "fio.json")["jobs"][0]
    assert job["error"] == 0
    assert job["write"]["io_bytes"] == 16 << 20
    after = stats(share, "1")
    assert (after["config"]["page-size"], after["config"]["map-unit"]) == ("16K", "4K")
    d = delta(after, stats(share, "0"))
    assert d["host.write_bytes"] == 16 << 20
    assert d["ftl.rmw_reads"] == 0, d
    # 4,096 units, each written once, the Flush padding the last flash page (3 units at most)
    assert 4096 <= d["nand.page_programs"] <= 4096 + 3, d
    assert d["ftl.stripe_pages"] == 4096, d
