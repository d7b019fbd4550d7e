"""Garbage collection under a verifying workload: fill a small device, then
overwrite it at random with crc32c verification.  The flash must have
collected (erases, GC copies, WAF above 1), the counters must add up
(every program is a host page or a copy), and fio must find no bad data."""
from conftest import check, delta, load_json, stats, vm

SIZE = 256 << 20

JOB = """
[global]
filename=${DEV}
ioengine=libaio
direct=1
size=%(size)d

[fill]
rw=write
bs=128k
iodepth=8

[overwrite]
stonewall
rw=randwrite
bs=16k
iodepth=16
verify=crc32c
verify_fatal=1
do_verify=1
""" % {"size": SIZE}

SCRIPT = r"""#guest
export DEV
snap 0
rc=0
fio --output-format=json --output=$S/fio.json $S/job.fio || rc=$?
echo $rc > $S/fio.rc
snap 1
"""


# About 95 s on 2 cores, under the two minutes that would make it "slow":
# it stays in the default run, since nothing else there makes GC happen.
def test_gc_under_random_overwrite_with_verify(share):
    (share / "job.fio").write_text(JOB)
    status, out = vm(SCRIPT, share=share, size=SIZE, timeout=900)
    check(status, out)
    assert (share / "fio.rc").read_text().strip() == "0", out
    jobs = {j["jobname"]: j for j in load_json(share, "fio.json")["jobs"]}
    for name, j in jobs.items():
        assert j["error"] == 0, name
        assert j["write"]["io_bytes"] == SIZE, name
    assert jobs["overwrite"]["read"]["io_bytes"] == SIZE

    s1 = stats(share, "1")
    d = delta(s1, stats(share, "0"))
    assert d["host.write_bytes"] == 2 * SIZE, d
    # Twice the namespace written into a flash only a little larger than
    # it: GC had to reclaim blocks, copying pages that were still valid.  The
    # blocks kept for the stream frontiers (streams=auto: a block per plane
    # for each of physical streams 1..k-1) take no untagged data.
    g = s1["geometry"]
    block = g["physical_bytes"] // g["blocks_total"]
    kept = (len(s1["ftl"]["placement"]["host_pages"]) - 1) * g["parallel_units"] * block
    assert kept > 0 and g["physical_bytes"] - kept < 2 * SIZE, g
    assert d["nand.block_erases"] > 0, d
    assert d["ftl.gc_blocks"] > 0 and d["ftl.gc_page_copies"] > 0, d
    # Every program is a host page, a GC copy or a wear-levelling copy.
    assert d["nand.page_programs"] == (d["host.write_pages"] + d["ftl.gc_page_copies"]
                                       + d["ftl.wl_page_copies"]
                                       + d["ftl.translation_page_writes"]), d
    # Every GC copy reads its page first.
    assert d["nand.page_reads"] >= d["ftl.gc_page_copies"], d
    waf = s1["waf"]
    assert waf > 1.0
    assert abs(waf - s1["nand"]["page_programs"] / s1["host"]["write_pages"]) < 1e-6
    w = s1["wear"]
    assert w["erase_max"] >= 1 and w["erase_min"] <= w["erase_mean"] <= w["erase_max"], w
