"""fio write+verify: mixed block sizes at queue depths 1, 4 and 32, each job
on its own 32 MiB region, one after the other (stonewall) so each depth is
really reached.  fio checks every block's crc32c on read-back."""

from conftest import check, delta, load_json, stats, vm

REGION = 32 << 20
JOB = """
[global]
filename=${DEV}
ioengine=libaio
direct=1
size=%(region)d
verify=crc32c
verify_fatal=1
do_verify=1
randrepeat=0
stonewall

# sequential, every size from 4k to 128k (in 4k steps)
[qd1]
rw=write
bsrange=4k-128k
iodepth=1
offset=0

# random, the same range of sizes; fio's random map writes each block once
[qd4]
rw=randwrite
bsrange=4k-128k
iodepth=4
offset=%(region)d

# random, a weighted mix of sizes
[qd32]
rw=randwrite
bssplit=4k/40:8k/10:16k/20:64k/20:128k/10
iodepth=32
offset=%(off3)d
""" % {"region": REGION, "off3": 2 * REGION}

SCRIPT = r"""#guest
export DEV
snap 0
rc=0
fio --output-format=json --output=$S/fio.json $S/job.fio || rc=$?
echo $rc > $S/fio.rc
snap 1
"""


def test_fio_verify_mixed_sizes_and_depths(share):
    (share / "job.fio").write_text(JOB)
    status, out = vm(SCRIPT, share=share, timeout=400)
    check(status, out)
    assert (share / "fio.rc").read_text().strip() == "0", out
    res = load_json(share, "fio.json")
    jobs = {j["jobname"]: j for j in res["jobs"]}
    assert sorted(jobs) == ["qd1", "qd32", "qd4"]
    written = 0
    for name, j in jobs.items():
        assert j["error"] == 0, (name, j["error"])
        # Every byte of the region was written once and read back for
        # verification (a verify mismatch would have ended the job early
        # with an error, and short I/O would show up here).
        assert j["write"]["io_bytes"] == REGION, name
        assert j["read"]["io_bytes"] == REGION, name
        written += j["write"]["io_bytes"]
    # Sizes really were mixed: the mean request size lies strictly between
    # the smallest and the largest (all-4k or all-128k would sit on a bound).
    for name, j in jobs.items():
        mean = j["write"]["io_bytes"] / j["write"]["total_ios"]
        assert 4096 < mean < 131072, (name, mean)
    # The engine saw exactly what fio wrote (nothing else writes here).
    d = delta(stats(share, "1"), stats(share, "0"))
    assert d["host.write_bytes"] == written == 3 * REGION, d
    assert d["host.read_bytes"] >= 3 * REGION, d
    assert d["nand.page_programs"] >= written // 4096, d
