"""The device and the simulator agree: the request sequence fio issued in the
guest, recorded with --write_iolog and replayed through build/nvme-hybrid-sim
with the same engine properties and capacity, gives the same counters.

What is compared, and why it can be exact:
- The engine's counters depend only on the request sequence, not on time,
  for the configurations used here: background GC reclaims one victim before
  a request (not on a timer) and is deferred only by priority requests,
  which the device marks only for DSM Access Latency = Low, a hint Linux
  never sets on reads and writes; victims are chosen greedily (fewest valid
  pages, not age); hybrid merges happen only for a waiting write; a write
  buffer destages its victims at the arrival of the write that needs room;
  host pages are dealt to the planes in a fixed order (alloc=static, the
  default: alloc=dynamic places them where a die is free, which depends on
  time, so these counters would no longer match).
  So host.*, nand.*, ftl.*, buffer.*, wear.* and waf must match to the last
  page, even though the guest's timing (TCG, timers on the host clock) and
  the simulator's are unrelated.
  The page FTL runs with modeled latency to show exactly that; the others run
  with latency=zero (the engine still models and counts everything, the
  device just completes at once), only to keep the boot short.
- latency_ns.*, nand.die_busy_ns and nand.channel_busy_ns (a read that
  suspends garbage collection adds the suspension), sched.* (what the
  flash scheduler ran in idle time) and ftl.gc_foreground_blocks (the GC
  victims whose erase a host program had to wait for, under sched=prio the
  ones the scheduler had not yet run in idle time) are not compared: they
  depend on when requests arrive.  The flash work itself does not: the scheduler decides
  when an operation runs, never whether.

What could differ, and how it is handled:
- The kernel reads the namespace at boot (partition scan: 3 reads, 12 KiB,
  of never-written pages).  They touch no flash, so deltas from a snapshot
  taken before fio remove them from every counter.  With DFTL they also put
  clean entries into the mapping cache, which would shift later evictions;
  the first fio phase therefore reads more distinct (never-written) pages
  than the cache holds, away from the pages the kernel read, so the cache
  then holds exactly the same entries in the same order in the device and in
  the simulator (asserted: every lookup of that phase was a miss).
- The kernel may split or merge requests.  Direct I/O, one request at a time
  (psync) and blocks of at most 256 KiB (the queue allows 127 segments of
  4 KiB, so 512 KiB could be split) map one fio I/O to one NVMe command;
  asserted by equal command counts.  fio's trimwrite is not used: its
  writes reached the device merged (128 writes of 32 KiB as 9 commands), so
  trims come from randtrim and writes from separate phases.
- Kernel flushes would not be in the iolog, and with a volatile write
  buffer a flush destages it.  Direct I/O never asks for one: asserted
  (host.flush_cmds stays 0), so the buffered run sees the same sequence.
"""
import json
import os
import subprocess

import pytest

from conftest import TEST_KEYS, check, counters, delta, load_json, stats, vm
from nh import paths

SIM = paths.simulator()
SIZE = 64 << 20
PAGE = 4096

# A small device that garbage-collects hard: 4 planes of 64-page blocks, so
# a 64 MiB namespace has 10 spare blocks per plane (7% op).
GEOMETRY = "channels=2,ways=2,pages=64"
# QEMU-only property: the default 8 MiB BAR1 window cannot be saved by the
# default capacitors on only four planes, and the device refuses to start.
# It is not an engine key, so the simulator does not get it.
DEVICE_ONLY = "ba-size=0"
# On both sides: the kernel reads never-written pages at boot (the partition scan), which fio's
# iolog does not hold; free, they stay out of the flash counters the two must agree on.
BOTH = "unwritten-reads=free"

# The DFTL cache holds 2048 entries (16 KiB / 8 bytes), far fewer than the
# namespace's 16384 pages, so entries are evicted and written back.
CMT_ENTRIES = 2048
WARM_BYTES = 12 << 20           # 3072 pages > CMT_ENTRIES
WARM_OFFSET = 24 << 20          # clear of the kernel's reads at both ends

FTLS = {
    "page": GEOMETRY + ",ftl=page",
    "dftl": GEOMETRY + ",ftl=dftl,cmt-size=%d,latency=zero" % (CMT_ENTRIES * 8),
    "fast": GEOMETRY + ",ftl=fast,latency=zero",
    # A 1 MiB block-LRU write buffer in front of FAST: destages with padding
    # reads, so the buffer's counters must agree too.
    "fast-bplru": GEOMETRY + ",ftl=fast,buffer=bplru,buffer-size=1M,latency=zero",
}

# One fio job per phase, run one after another (stonewall), each logging to
# its own iolog (fio appends to an existing iolog, so the share starts
# empty).  Block sizes include 2 KiB (offsets 2 KiB aligned: partial pages,
# read-modify-write; partial trims that deallocate nothing).
PHASES = [
    ("warm", "rw=read\nbs=64k\noffset=%d\nsize=%d" % (WARM_OFFSET, WARM_BYTES)),
    ("fill", "rw=write\nbs=128k"),
    ("randwrite", "rw=randwrite\nbssplit=2k/10:4k/40:16k/25:64k/15:256k/10\nio_size=96M"),
    ("randtrim", "rw=randtrim\nbssplit=2k/20:16k/40:64k/40\nnumber_ios=150"),
    ("randrw", "rw=randrw\nrwmixread=60\nbssplit=4k/50:32k/50\nio_size=32M"),
    ("seqread", "rw=read\nbs=256k"),
]

JOB = """[global]
filename=${DEV}
ioengine=psync
direct=1
size=%d
randseed=7
stonewall
""" % SIZE + "".join("\n[%s]\n%s\nwrite_iolog=/mnt/share/%d.iolog\n" % (name, body, i)
                     for i, (name, body) in enumerate(PHASES))

SCRIPT = r"""#guest
export DEV
snap 0
fio --section=warm --output-format=json --output=$S/fio-warm.json $S/job.fio
snap w
rc=0
for j in %s; do
    fio --section=$j --output-format=json --output=$S/fio-$j.json $S/job.fio || rc=$?
done
echo $rc > $S/fio.rc
snap 1
""" % " ".join(name for name, _ in PHASES[1:])


def combine_iologs(share):
    """One v3 iolog of every phase in order, and the count of each action.
    Times restart in each file; the simulator's open loop never lets time go
    back, and its closed loop ignores them."""
    lines, count = ["fio version 3 iolog"], {}
    for i in range(len(PHASES)):
        with open(os.path.join(str(share), "%d.iolog" % i)) as f:
            log = f.read().splitlines()
        assert log[0] == "fio version 3 iolog", log[:1]
        for line in log[1:]:
            f = line.split()
            if len(f) == 5:
                count[f[2]] = count.get(f[2], 0) + 1
                count[f[2] + "_bytes"] = count.get(f[2] + "_bytes", 0) + int(f[4])
        lines += log[1:]
    path = os.path.join(str(share), "all.iolog")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path, count


def replay(props, trace, qd=None, fmt="fio"):
    """The simulator's statistics document for the replay."""
    # --no-drain: the device does not drain its write buffer when fio ends
    args = [SIM, "--device", TEST_KEYS + "," + props + "," + BOTH, "--trace", trace,
            "--format", fmt, "--capacity", str(SIZE), "--json", "--no-drain"]
    if qd:
        args += ["--qd", str(qd)]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def comparable(doc, base=None):
    """The counters that depend only on the request sequence: host, nand,
    ftl, buffer and cache as deltas from `base` (the device's snapshot
    before the workload), wear, waf and ftl.placement.* absolute: nothing
    was written or erased before the snapshot, so the device's placement
    state was the initial one, and k, host_streams, open_streams,
    cmt_entries and sample_stride are levels, not counts, which a delta
    would get wrong (a default device places: streams=auto)."""
    d = delta(doc, base) if base else counters(doc)
    out = {k: v for k, v in d.items()
           if k.split(".")[0] in ("host", "nand", "ftl", "buffer", "cache")
           and k not in ("host.flush_cmds", "nand.die_busy_ns", "nand.channel_busy_ns",
                         "ftl.gc_foreground_blocks")}
    out.update((k, v) for k, v in counters(doc).items() if k.startswith("ftl.placement."))
    for k in ("erase_min", "erase_max", "erase_mean"):
        out["wear." + k] = doc["wear"][k]
    out["waf"] = doc["waf"]
    return out


def mismatches(dev, sim):
    return {k: (dev.get(k), sim.get(k)) for k in sorted(set(dev) | set(sim))
            if dev.get(k) != sim.get(k)}


@pytest.mark.parametrize("ftl", sorted(FTLS))
def test_device_and_simulator_agree(share, ftl):
    props = FTLS[ftl]
    (share / "job.fio").write_text(JOB)
    status, out = vm(SCRIPT, device=props + "," + BOTH + "," + DEVICE_ONLY, share=share, size=SIZE,
                     timeout=300)
    check(status, out)
    assert (share / "fio.rc").read_text().strip() == "0", out

    s0, sw, s1 = stats(share, "0"), stats(share, "w"), stats(share, "1")
    # Fresh image: before fio the device had seen only the kernel's reads of
    # never-written pages, so no flash operation and no wear.
    assert s0["host"]["write_cmds"] == 0 and s0["host"]["trim_cmds"] == 0, s0["host"]
    assert s0["nand"]["page_programs"] == 0 and s0["nand"]["block_erases"] == 0, s0["nand"]
    assert all(v == 0 for v in s0["nand"].values()), s0["nand"]
    assert s0["wear"]["erase_max"] == 0

    trace, n = combine_iologs(share)
    # fio did what its iolog says (all phases logged, nothing lost).
    fio_ios = {"read": 0, "write": 0, "trim": 0}
    for name, _ in PHASES:
        job = load_json(share, "fio-%s.json" % name)["jobs"][0]
        assert job["error"] == 0, name
        for ddir in fio_ios:
            fio_ios[ddir] += job[ddir]["total_ios"]
    assert fio_ios == {k: n.get(k, 0) for k in fio_ios}, (fio_ios, n)

    d = delta(s1, s0)
    # One NVMe command per fio I/O: nothing split or merged on the way.
    assert d["host.read_cmds"] == n["read"], (d["host.read_cmds"], n)
    assert d["host.write_cmds"] == n["write"], (d["host.write_cmds"], n)
    assert d["host.trim_cmds"] == n["trim"], (d["host.trim_cmds"], n)
    assert d["host.read_bytes"] == n["read_bytes"]
    assert d["host.write_bytes"] == n["write_bytes"]
    assert d["host.trim_bytes"] == n["trim_bytes"]
    # No flush reached the device (direct I/O never asks for one); the
    # iolog has none either.
    assert d["host.flush_cmds"] == 0, d["host.flush_cmds"]

    # The workload did what it is here for: GC under partial-page writes
    # and trims.
    assert d["nand.block_erases"] > 0 and d["ftl.gc_page_copies"] > 0, d
    assert d["ftl.rmw_reads"] > 0, d
    assert s1["waf"] > 1.0
    if ftl == "dftl":
        # The warm-up read only never-written pages, none the kernel had
        # read: every lookup missed, so the cache now holds the same entries
        # as the simulator's will.
        dw = delta(sw, s0)
        assert dw["ftl.cmt.misses"] == WARM_BYTES // PAGE and dw["ftl.cmt.hits"] == 0, dw
        assert d["ftl.translation_page_writes"] > 0 and d["ftl.cmt.hits"] > 0, d
    if ftl.startswith("fast"):
        assert d["ftl.merges.full"] + d["ftl.merges.partial"] > 0, d
    if ftl == "fast-bplru":
        assert d["buffer.evictions"] > 0 and d["buffer.padding_reads"] > 0, d

    dev = comparable(s1, s0)

    # Open loop (fio's v3 timestamps) ...
    sim = replay(props, trace)
    assert sim["geometry"] == s1["geometry"]
    assert mismatches(dev, comparable(sim)) == {}
    # ... closed loop, one request at a time, as fio issued them ...
    assert mismatches(dev, comparable(replay(props, trace, qd=1))) == {}
    # ... and 32 at a time: other times, same counters.  (With
    # gc=cost-benefit, whose victim choice weighs block age, the page run's
    # three replays reclaimed 1889, 1899 and 1930 blocks: greedy victim
    # choice is why the comparison can be exact.)
    assert mismatches(dev, comparable(replay(props, trace, qd=32))) == {}



# ------------------------------------------------------------------ with tags
# The same comparison with placement tags: streams enabled with nvme-cli's
# dir-send and every I/O issued by nvme-cli (one passthrough command at a
# time, so the order is exact), writes tagged with `nvme write --dir-type=1
# --dir-spec=N` or untagged; the host writes the same sequence as an mqsim
# trace whose sixth column is the tag (docs/simulator.md) and replays it.
# fio is not used: Debian 12's fio cannot tag writes, and its iolog has no
# tag column.
#
# page: tags 1-4 each on a fixed stream of its own (physical-streams auto =
# 5), untagged on stream 0, modeled latency.  dftl-dstream: the host's 4 streams and 16 LBA partitions
# clustered by DStream, whose k resizes the mapping cache live: 1 KiB stream
# buffers in a 32 KiB budget, so the cache holds 2048 entries at k = 16 and
# 3968 at k = 1, fewer than the 16384 pages, and k's moves evict and write
# back entries.  page-streams-one-shot: page-streams on TLC with one-shot
# programming, each stream staging its own word lines (docs/placement.md,
# "Staging").  A staged word line waits at most one t-prog for its other
# pages, so the counters depend on time: t-prog is 200 us, far below the gap
# between two nvme-cli commands under TCG (and a GC victim, 66 pages, about
# 20 ms), so at every command the device has programmed every waiting word
# line, padded, and its dies are idle; the trace spaces the commands 100 ms
# apart so that the simulator sees the same.  Open loop only: a closed-loop
# replay issues the next write before any word line waited one t-prog.
TAGGED = {
    "page-streams": GEOMETRY + ",ftl=page,streams=4",
    "page-streams-one-shot": "channels=2,ways=2,pages=66,cell=tlc,one-shot=on,t-prog=200us,"
                             "ftl=page,streams=4",
    "dftl-dstream": GEOMETRY + ",ftl=dftl,cmt-size=%d,streams=4,stream-map=dstream,"
                    "stream-buffer=1K,dstream-partitions=16,latency=zero" % (CMT_ENTRIES * 8),
}
TAG_SIZES = (4096, 16384, 65536)


def tagged_ops(seed=7):
    """(op, offset, length, tag) in bytes, the whole run: the warm-up reads
    (as above), a sequential fill in 128 KiB writes tagged by the quarter of
    the space they land in (the last quarter untagged), then 1,500 writes,
    80% of them into the first eighth (tag 1) and the rest anywhere with tags
    2-4 or none, and 300 reads, interleaved."""
    import random
    rnd = random.Random(seed)
    ops = [("r", WARM_OFFSET + i * 65536, 65536, 0) for i in range(WARM_BYTES // 65536)]
    for off in range(0, SIZE, 128 << 10):
        q = off * 4 // SIZE
        ops.append(("w", off, 128 << 10, q + 1 if q < 3 else 0))
    for _ in range(1800):
        n = rnd.choice(TAG_SIZES)
        if rnd.random() < 300 / 1800:
            ops.append(("r", rnd.randrange(0, SIZE - n, PAGE), n, 0))
        elif rnd.random() < 0.8:
            ops.append(("w", rnd.randrange(0, SIZE // 8 - n, PAGE), n, 1))
        else:
            ops.append(("w", rnd.randrange(0, SIZE - n, PAGE), n, rnd.choice((0, 2, 3, 4))))
    return ops


TAGGED_SCRIPT = r"""#guest
LBS=$(blockdev --getss $DEV)
for n in %(sizes)s; do head -c $n /dev/urandom > /tmp/data-$n; done
nvme dir-send $DEV --dir-type=0 --dir-oper=1 --target-dir=1 --endir=1 > /dev/null
snap 0
i=0
while read op off len tag; do
    slba=$((off / LBS)); nlb=$((len / LBS - 1))
    if [ $op = r ]; then
        nvme read $DEV -s $slba -c $nlb -z $len -d /tmp/rd > /dev/null
    elif [ $tag = 0 ]; then
        nvme write $DEV -s $slba -c $nlb -z $len -d /tmp/data-$len > /dev/null
    else
        nvme write $DEV -s $slba -c $nlb -z $len -d /tmp/data-$len \
            --dir-type=1 --dir-spec=$tag > /dev/null
    fi
    i=$((i + 1))
    [ $i = %(warm)d ] && snap w
done < $S/ops.txt
echo $i > $S/done
snap 1
"""


def tagged_trace(ops, path, gap=1000):
    """The mqsim trace of @ops: time (@gap ns apart), device 0, LBA and
    sectors in 512-byte units, 0 write / 1 read, the tag on writes."""
    with open(path, "w") as f:
        for i, (op, off, n, tag) in enumerate(ops):
            f.write("%d 0 %d %d %d%s\n" % (i * gap, off // 512, n // 512,
                                           0 if op == "w" else 1,
                                           " %d" % tag if op == "w" else ""))
    return path


# 2,504 nvme-cli commands take 4 to 9 minutes under TCG: `make check` runs the page FTL's,
# `make check-slow` DStream's as well.
@pytest.mark.parametrize("name", ["page-streams",
                                  pytest.param("dftl-dstream", marks=pytest.mark.slow),
                                  pytest.param("page-streams-one-shot", marks=pytest.mark.slow)])
def test_device_and_simulator_agree_with_tags(share, name):
    props = TAGGED[name]
    ops = tagged_ops()
    warm = WARM_BYTES // 65536
    with open(share / "ops.txt", "w") as f:
        for op in ops:
            f.write("%s %d %d %d\n" % op)
    script = TAGGED_SCRIPT % {"sizes": " ".join(map(str, sorted({n for _, _, n, _ in ops}))),
                              "warm": warm}
    status, out = vm(script, device=props + "," + BOTH + "," + DEVICE_ONLY, share=share, size=SIZE,
                     timeout=900)
    check(status, out)
    assert int((share / "done").read_text()) == len(ops)
    s0, sw, s1 = stats(share, "0"), stats(share, "w"), stats(share, "1")
    assert s0["host"]["write_cmds"] == 0 and s0["nand"]["page_programs"] == 0, s0

    d = delta(s1, s0)
    writes = [o for o in ops if o[0] == "w"]
    assert d["host.write_cmds"] == len(writes)
    assert d["host.read_cmds"] == len(ops) - len(writes)
    assert d["host.write_bytes"] == sum(n for _, _, n, _ in writes)
    # Tags reached the engine (fixed: every physical stream wrote; DStream:
    # several did), GC ran.
    p = s1["ftl"]["placement"]
    if name.startswith("page-streams"):
        assert all(v > 0 for v in p["host_pages"].values()), p["host_pages"]
    else:
        assert sum(v > 0 for v in p["host_pages"].values()) > 4, p["host_pages"]
    assert p["open_streams"] == 4, p
    assert d["nand.block_erases"] > 0 and d["ftl.gc_page_copies"] > 0, d
    if name == "dftl-dstream":
        dw = delta(sw, s0)
        assert dw["ftl.cmt.misses"] == WARM_BYTES // PAGE and dw["ftl.cmt.hits"] == 0, dw
        assert p["k_changes"] > 0 and p["timestamps"] > 0, p
        assert d["ftl.translation_page_writes"] > 0, d
    one_shot = name.endswith("one-shot")
    if one_shot:
        # every stream staged word lines; partial ones were padded
        assert d["ftl.stripe_pages"] > 0 and d["ftl.stripe_padding"] > 0, d

    dev = comparable(s1, s0)
    trace = tagged_trace(ops, str(share / "tagged.mqsim"), gap=100000000 if one_shot else 1000)
    for qd in (None,) if one_shot else (None, 1, 32):
        sim = replay(props, trace, qd, fmt="mqsim")
        assert sim["geometry"] == s1["geometry"]
        assert mismatches(dev, comparable(sim)) == {}, qd
