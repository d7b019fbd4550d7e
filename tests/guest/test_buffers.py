"""Write buffers in the guest (issue 4): fio write+verify passes with every
policy, and Flush drains a volatile buffer but not a durable one.

The buffer is a model (docs/buffers.md): the bytes always go through to the
block backend, so a verify failure would mean the device mishandled a
command, not that the model lost data.  What the model does is checked with
its counters: every program the flash did is a destaged page or a copy, and
the pages the buffer holds dirty (derived below; the statistics have no
gauge for it) go to the flash on Flush exactly when the buffer is volatile.

Identify's VWC bit is the OR of two things (docs/device.md): the block
backend caching writes (QEMU's write-cache, on by default for a -drive) and
a volatile engine buffer.  Boots that check what the buffer alone claims
therefore set write-cache=off.
"""
import pytest

from conftest import check, delta, load_json, stats, vm

SIZE = 64 << 20
# 4 planes of 64-page (256 KiB) blocks; the BAR1 window off, since its
# default 8 MiB could not be saved on power loss by so few planes.
GEOMETRY = "channels=2,ways=2,pages=64,ba-size=0"
# Four flash blocks of buffer: the 24 MiB below is 24 times that, so every
# policy has to choose victims and destage many times.
BUFFER_SIZE = "1M"

# ref prefers blocks already in the FTL's log blocks and lbuf weighs
# plugging against logging with the FTL's merge costs: both only mean
# something on a hybrid FTL (on page-mapped FTLs ref is plain block LRU).
POLICIES = {
    "none": "ftl=page",
    "lru": "ftl=page",
    "bplru": "ftl=page",
    "fab": "ftl=page",
    "clc": "ftl=page",
    "ref": "ftl=fast",
    "bpac": "ftl=page",
    "cbm": "ftl=page,cache-size=1M",
    # Sessions of 64 write requests (the default is 4096), so alpha is
    # re-tuned several times during the ~600 writes.
    "lbuf": "ftl=fast,lbuf-session=64",
}

# Three regions written once each (fio's random map: no block written twice
# within a job, so every block has one version to verify), mixed sizes,
# queue depths 1, 32 and 8; each job reads its region back and checks
# crc32c.  2 KiB blocks make partial pages (read-modify-write on destage).
VERIFY_JOB = """
[global]
filename=${DEV}
ioengine=libaio
direct=1
size=8M
verify=crc32c
verify_fatal=1
do_verify=1
randseed=11
stonewall

[qd1-random]
offset=0
rw=randwrite
bssplit=4k/50:16k/30:64k/20
iodepth=1

[qd32-random]
offset=8M
rw=randwrite
bssplit=2k/20:8k/40:128k/40
iodepth=32

[qd8-sequential]
offset=16M
rw=write
bs=256k
iodepth=8
"""
VERIFY_BYTES = 24 << 20

VERIFY_SCRIPT = r"""#guest
export DEV
nvme id-ctrl $CTRL -o json > $S/id-ctrl.json
cat /sys/block/$(basename $DEV)/queue/write_cache > $S/write_cache
snap 0
rc=0
fio --output-format=json --output=$S/fio.json $S/job.fio || rc=$?
echo $rc > $S/fio.rc
snap 1
"""


def programs_are_destages_or_copies(d):
    """With a buffer, the FTL programs what the buffer destages (dirty,
    padding and merge-on-flush pages) plus its own copies."""
    return d["nand.page_programs"] == (d["buffer.destage_pages"] + d["ftl.gc_page_copies"]
                                       + d["ftl.wl_page_copies"]
                                       + d["ftl.translation_page_writes"])


def dirty_pages(d):
    """Pages the buffer holds dirty, from counters taken since it was empty
    and with no trim in between: every host page written that was not
    already dirty became dirty, and it stopped being dirty when destaged.
    Destaged pages that were not dirty ones are the padding (each read from
    flash first) and the merge-on-flush pages."""
    destaged_dirty = (d["buffer.destage_pages"] - d["buffer.padding_reads"]
                      - d["buffer.merge_on_flush_pages"])
    return d["host.write_pages"] - d["buffer.write_hits"] - destaged_dirty


def vwc(share):
    return load_json(share, "id-ctrl.json")["vwc"] & 1


@pytest.mark.parametrize("policy", list(POLICIES))
def test_fio_verify_with_every_policy(share, policy):
    props = "%s,%s,buffer=%s,write-cache=off" % (GEOMETRY, POLICIES[policy], policy)
    if policy != "none":
        props += ",buffer-size=" + BUFFER_SIZE
    (share / "job.fio").write_text(VERIFY_JOB)
    status, out = vm(VERIFY_SCRIPT, device=props, share=share, size=SIZE, timeout=300)
    check(status, out)
    assert (share / "fio.rc").read_text().strip() == "0", out
    jobs = load_json(share, "fio.json")["jobs"]
    assert len(jobs) == 3
    for j in jobs:
        assert j["error"] == 0, j["jobname"]
        assert j["write"]["io_bytes"] == 8 << 20, j["jobname"]
        # The verify pass read back everything the job wrote.
        assert j["read"]["io_bytes"] == 8 << 20, j["jobname"]

    s1 = stats(share, "1")
    d = delta(s1, stats(share, "0"))
    assert d["host.write_bytes"] == VERIFY_BYTES, d
    assert d["host.read_bytes"] == VERIFY_BYTES, d
    assert d["host.flush_cmds"] == 0, d  # direct I/O never asked for one
    assert s1["config"]["buffer"] == policy

    # With write-cache=off only the engine's buffer (DRAM: volatile by
    # default) can make the device claim a volatile write cache.
    expect_vwc = 0 if policy == "none" else 1
    assert vwc(share) == expect_vwc
    assert (share / "write_cache").read_text().strip() == \
        ("write back" if expect_vwc else "write through")

    if policy == "none":
        assert all(v == 0 for k, v in d.items() if k.startswith("buffer.")), d
        assert d["nand.page_programs"] == (d["host.write_pages"] + d["ftl.gc_page_copies"]
                                           + d["ftl.wl_page_copies"])
        return
    # 24 MiB through a 1 MiB buffer: victims had to be destaged...
    assert d["buffer.evictions"] > 0 and d["buffer.destage_pages"] > 0, d
    assert programs_are_destages_or_copies(d), d
    # ... and what is still dirty (nothing flushed it) fits in the buffer's
    # 256 pages.
    held = dirty_pages(d)
    assert 0 < held <= (1 << 20) // 4096, (held, d)
    # The verify reads found the most recent writes still in the buffer.
    assert d["buffer.read_hits"] > 0, d
    if policy in ("bplru", "ref", "lbuf"):
        # bplru and ref pad victims more than half dirty, lbuf plugs above
        # lambda, with pages read from flash: the partly written random
        # blocks of the first two jobs need it.
        assert d["buffer.padding_reads"] > 0, d
    else:
        assert d["buffer.padding_reads"] == 0, d
    if policy == "cbm":
        # The first job's verify reads put its clean pages into the read
        # cache; its blocks still dirty are evicted during the second job
        # and take those clean pages with them (merge-on-flush).
        assert d["buffer.merge_on_flush_pages"] > 0 and d["cache.read_misses"] > 0, d
    else:
        assert d["buffer.merge_on_flush_pages"] == 0, d
    if policy == "lbuf":
        lb = s1["buffer"]["lbuf"]
        assert d["buffer.lbuf.sessions"] == d["host.write_cmds"] // 64, (lb, d)
        assert sum(lb["alpha_sessions"].values()) == lb["sessions"], lb


FLUSH_SCRIPT = r"""#guest
export DEV
nvme id-ctrl $CTRL -o json > $S/id-ctrl.json
cat /sys/block/$(basename $DEV)/queue/write_cache > $S/write_cache
snap 0
# 2 MiB of random 4 KiB writes into a 4 MiB buffer: nothing needs evicting.
fio --name=w --filename=$DEV --ioengine=libaio --direct=1 --iodepth=8 \
    --rw=randwrite --bs=4k --size=2M --randseed=5 \
    --output-format=json --output=$S/fio.json
snap 1
nvme flush $DEV
snap 2
"""

FLUSH_CASES = {
    # DRAM buffer, volatile: VWC claimed by the buffer alone, Flush drains.
    "volatile": ("buffer-volatile=on,write-cache=off", 1, True),
    # Capacitor-backed buffer on an uncached backend: no VWC; a Flush the
    # host sends anyway (nvme-cli does) leaves the buffer as it is.
    "durable": ("buffer-volatile=off,write-cache=off", 0, False),
    # The same durable buffer on a write-back backend (QEMU's default):
    # VWC is claimed for the backend's sake, and Flush still does not drain
    # the durable buffer.
    "durable-cached-backend": ("buffer-volatile=off", 1, False),
}


@pytest.mark.parametrize("case", list(FLUSH_CASES))
def test_flush_drains_only_a_volatile_buffer(share, case):
    extra, expect_vwc, drains = FLUSH_CASES[case]
    props = "%s,ftl=page,buffer=lru,buffer-size=4M,%s" % (GEOMETRY, extra)
    status, out = vm(FLUSH_SCRIPT, device=props, share=share, size=SIZE, timeout=180)
    check(status, out)
    assert vwc(share) == expect_vwc
    assert (share / "write_cache").read_text().strip() == \
        ("write back" if expect_vwc else "write through")

    s0, s1, s2 = (stats(share, str(i)) for i in range(3))
    w = delta(s1, s0)
    assert w["host.write_cmds"] == 512 and w["host.flush_cmds"] == 0, w
    # Every write was absorbed: no victim, no program yet.
    assert w["buffer.evictions"] == 0 and w["buffer.destage_pages"] == 0, w
    assert w["nand.page_programs"] == 0, w
    held = dirty_pages(w)
    # 512 random 4 KiB writes over 512 pages (fio's random map visits each
    # once): all of them dirty, none a rewrite.
    assert held == 512 and w["buffer.write_hits"] == 0, w

    f = delta(s2, s1)
    assert f["host.flush_cmds"] == 1 and f["host.write_cmds"] == 0, f
    if drains:
        # Every dirty page went to the flash, as whole-block destages.
        assert f["buffer.destage_pages"] == held, f
        assert f["nand.page_programs"] == held, f
        assert f["buffer.evictions"] == 0, f  # flush destages are not evictions
        # The 2 MiB region is 8 logical blocks of 64 pages, all of them
        # fully dirty: one destage of 64 pages per block.
        assert f["buffer.destage_length.count"] == 8, f
        assert s2["buffer"]["destage_length"]["max"] == 64, s2["buffer"]
        assert dirty_pages(delta(s2, s0)) == 0
    else:
        assert f["buffer.destage_pages"] == 0 and f["nand.page_programs"] == 0, f
        assert dirty_pages(delta(s2, s0)) == held
