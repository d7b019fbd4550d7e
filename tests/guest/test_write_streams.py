"""Block-layer write streams against the device's FDP (issue 11): the wstreams guest
(guest-images/wstreams: bookworm with trixie-backports' kernel, Linux 7.3) boots on
`fdp=on,streams=3`; its nvme driver, unmodified, reads the FDP feature, the FDP
Configurations log and the Reclaim Unit Handle Status, and exposes the namespace's
placement identifiers as write streams (/sys/block/nvme0n1/queue/max_write_streams,
write_stream_granularity).  nh-wstream writes to the raw block device with O_DIRECT
through io_uring with the SQE's write_stream set.

Linux sends stream S as a Write with DTYPE 2 and DSPEC the S-th placement identifier of
the RUH Status (drivers/nvme/host/core.c, nvme_setup_rw: head->plids[write_stream - 1]).
The device lists PIDs 0..3 in that order, so stream S lands on placement handle S - 1:
streams 1..4 on handles 0..3, an untagged write on handle 0 as well, and a stream above
max_write_streams is refused by the kernel (EINVAL) before it reaches the device.  The
engine's per-handle page counters (ftl.placement.host_pages) must move exactly so.  One
boot serves every test.  Skipped, with the build's own words, when the variant cannot be
built here (no trixie-backports kernel)."""
import os
import struct
import subprocess

import pytest

from conftest import REPO, check, stats, vm

GUEST = "wstreams"
NRUH = 4                                    # streams=3: 4 reclaim unit handles
RUNS = 2 * 64 * 4096                        # a block on each of the 2 planes, 64 pages of 4 KiB
DEVICE = f"fdp=on,streams={NRUH - 1},channels=2,ways=1,pages=64,ba-size=0"
MIB = 1
PAGES = MIB * 256                           # engine pages (4 KiB) per step
# (step, write stream, placement handle the writes must land on): 0 is an untagged write
STEPS = [("untagged", 0, 0)] + [(f"stream{s}", s, s - 1) for s in range(1, NRUH + 1)]

SCRIPT = r"""#guest
Q=/sys/block/$(basename $DEV)/queue
uname -r > $S/uname.txt
cat $Q/max_write_streams > $S/max_write_streams.txt
cat $Q/write_stream_granularity > $S/write_stream_granularity.txt
nvme fdp configs $CTRL -e 1 -b > $S/configs.bin
nvme fdp status $DEV -n 1 -b > $S/status.bin
dmesg | grep -i nvme > $S/dmesg.txt || true
snap start
at=0
for step in %(steps)s; do
    name=${step%%%%:*}; stream=${step#*:}
    nh-wstream $DEV $stream $at %(mib)dM >> $S/writes.txt
    snap $name
    at=$((at + %(mib)d * 1048576))
done
rc=0
beyond=$(( $(cat $Q/max_write_streams) + 1 ))
nh-wstream $DEV $beyond $at 4K > $S/beyond.out 2> $S/beyond.err || rc=$?
echo $rc > $S/beyond.rc
snap beyond
""" % {"steps": " ".join(f"{name}:{s}" for name, s, _ in STEPS), "mib": MIB}


@pytest.fixture(scope="module")
def boot(tmp_path_factory):
    build = subprocess.run([os.path.join(REPO, "guest-images", "build"), "--variant", GUEST],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if build.returncode:
        tail = "\n".join(build.stdout.splitlines()[-8:])
        pytest.skip(f"the {GUEST} guest cannot be built on this machine:\n{tail}")
    share = tmp_path_factory.mktemp("wstreams")
    status, out = vm(SCRIPT, device=DEVICE, share=share, size="64M", timeout=300, guest=GUEST)
    check(status, out)
    return share


def text(share, name):
    return (share / name).read_text()


def moved(share, a, b):
    """Engine pages written per placement handle between snapshots a and b, nonzero only."""
    before = stats(share, a)["ftl"]["placement"]["host_pages"]
    after = stats(share, b)["ftl"]["placement"]["host_pages"]
    return {int(k): after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def test_kernel_has_write_streams(boot):
    major, minor = map(int, text(boot, "uname.txt").split(".")[:2])
    assert (major, minor) >= (6, 16), text(boot, "uname.txt")


def test_sysfs_is_the_devices_fdp_configuration(boot):
    """max_write_streams: one stream per placement identifier of the RUH Status (NRUHSD),
    which is every handle of the configuration (NRUH); granularity: the reclaim unit (RUNS)."""
    nruhsd = struct.unpack_from("<H", (boot / "status.bin").read_bytes(), 14)[0]
    configs = (boot / "configs.bin").read_bytes()
    nruh = struct.unpack_from("<H", configs, 16 + 8)[0]
    runs = struct.unpack_from("<Q", configs, 16 + 16)[0]
    streams = int(text(boot, "max_write_streams.txt"))
    granularity = int(text(boot, "write_stream_granularity.txt"))
    print(f"kernel {text(boot, 'uname.txt').strip()}: max_write_streams {streams}, "
          f"write_stream_granularity {granularity}; RUH Status NRUHSD {nruhsd}, "
          f"configuration NRUH {nruh}, RUNS {runs}")
    assert streams == nruhsd == nruh == NRUH
    assert granularity == runs == RUNS
    assert "FDP" not in text(boot, "dmesg.txt"), text(boot, "dmesg.txt")


@pytest.mark.parametrize("step,stream,handle", STEPS)
def test_writes_land_on_the_streams_handle(boot, step, stream, handle):
    """1 MiB of 4 KiB writes with write_stream S: 256 engine pages on handle S - 1 (handle 0
    untagged), none anywhere else."""
    i = [name for name, _, _ in STEPS].index(step)
    prev = STEPS[i - 1][0] if i else "start"
    line = text(boot, "writes.txt").splitlines()[i]
    assert moved(boot, prev, step) == {handle: PAGES}, line
    assert line.endswith(f": {MIB << 20} bytes at {i * MIB << 20} in {PAGES} writes of 4096 "
                         f"with write_stream {stream}"), line


def test_stream_beyond_max_is_refused_by_the_kernel(boot):
    """Stream NRUH + 1: io_uring's write fails with EINVAL and the device sees nothing."""
    assert text(boot, "beyond.rc").strip() == "1"
    err = text(boot, "beyond.err")
    assert f"write_stream {NRUH + 1}: Invalid argument (EINVAL)" in err, err
    assert moved(boot, STEPS[-1][0], "beyond") == {}
