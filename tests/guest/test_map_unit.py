"""Whole-page mapping on the default drive (map-unit=auto on preset=pm9a3's 16 KiB pages,
docs/mapping-units.md) in a guest, beside test_default_drive's 4 KiB units: the same fio 4 KiB
random writes with verify, and after a Flush every write has read and rewritten its 16 KiB page
(4 bytes programmed a byte written) where the default drive packs four into a page."""

from test_default_drive import random_writes


def test_whole_pages_read_and_rewrite(share):
    after, d = random_writes(share, "preset=pm9a3,map-unit=auto")
    assert (after["config"]["page-size"], after["config"]["map-unit"]) == ("16K", "auto")
    # 4,096 writes into 1,024 pages: a write to a page already staged joins it, the others
    # read the page's other 12 KiB first where it holds data
    assert d["ftl.rmw_reads"] > 0, d
    assert d["nand.page_programs"] + d["ftl.stripe_overwrites"] <= d["host.write_cmds"], d
