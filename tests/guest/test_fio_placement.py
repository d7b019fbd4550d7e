"""fio's own data placement against the device (issue 11): fio 3.41 built from Debian's source
(the fio341 guest variant, guest-images/fio341) drives tagged writes through io_uring_cmd
passthrough on the namespace's generic character device (/dev/ng0n1, Debian 12's kernel 6.1),
unmodified: `dataplacement=fdp` with `plids=1,2` on a device with `fdp=on` (fio reads the
placement identifiers with I/O Management Receive, then writes with DTYPE 2), and
`dataplacement=streams` with `plids=1,2` after the Streams directive is enabled with nvme-cli
(DTYPE 1).  The engine's per-tag page counters must show the writes on exactly the tags fio
was given, split evenly by `plid_select=roundrobin`, and nothing on the untagged frontier."""
import re

import pytest

from conftest import check, stats, vm

GEOMETRY = "channels=2,ways=1,pages=64,ba-size=0"
MIB = 8
PAGES = MIB * 256           # 4 KiB writes

SCRIPT = r"""#guest
NG=$(echo $DEV | sed 's|/dev/nvme|/dev/ng|')
%(setup)s
snap before
fio --name=tagged --filename=$NG --ioengine=io_uring_cmd --cmd_type=nvme \
    --rw=randwrite --bs=4k --size=%(mib)dM --iodepth=8 --randseed=5 \
    --dataplacement=%(mode)s --plids=1,2 --plid_select=roundrobin \
    --output=/mnt/share/fio.txt
snap after
fio --version > $S/version.txt
"""

CASES = {
    "fdp": (f"fdp=on,streams=3,{GEOMETRY}", ":"),
    # Streams must be enabled on the namespace first (Identify directive, Enable, Streams).
    "streams": (f"streams=4,{GEOMETRY}",
                "nvme dir-send $DEV --namespace-id=1 --dir-type=0 --dir-oper=1 "
                "--target-dir=1 --endir=1 > $S/enable.txt"),
}


@pytest.mark.parametrize("mode", sorted(CASES))
def test_fio_writes_land_on_the_plids_it_was_given(tmp_path, mode):
    device, setup = CASES[mode]
    script = SCRIPT % {"setup": setup, "mib": MIB, "mode": mode}
    status, out = vm(script, device=device, share=tmp_path, size="64M", timeout=900,
                     guest="fio341")
    check(status, out)
    assert (tmp_path / "version.txt").read_text().startswith("fio-3.41"), out
    fio = (tmp_path / "fio.txt").read_text()
    assert re.search(r"err= *0", fio), fio
    before = stats(tmp_path, "before")["ftl"]["placement"]["host_pages"]
    after = stats(tmp_path, "after")["ftl"]["placement"]["host_pages"]
    moved = {tag: after.get(tag, 0) - before.get(tag, 0) for tag in after}
    moved = {tag: n for tag, n in moved.items() if n}
    print(f"{mode}: host pages by tag {moved}")
    assert set(moved) == {"1", "2"}, moved
    assert moved["1"] + moved["2"] == PAGES, moved
    assert abs(moved["1"] - moved["2"]) <= 1, moved
