"""The BAR1 persistent-memory window from a Linux guest, through libba and
the `ba` tool (docs/bar-pm.md): byte writes at odd offsets read back through
the mapping and by DMA, coherence with dd on the block device, and the window
surviving SIGKILL, an injected power cut, and a corrupted save being caught.

The window file is the disk's `<disk>.nh-ba`; its layout (64 KiB of header
and entry table, then the window) lets the host check the bytes too."""
import json
import os
import signal
import struct

from conftest import VmRun, check, seeded_bytes, vm

META = 64 * 1024
MIB = 1 << 20

# (offset in entry 0, length): every length from 1 byte to 1 MiB, at odd
# offsets, disjoint so that all of them can be checked at the end.
SIZES = [1, 2, 7, 63, 64, 65, 511, 512, 4095, 4097, 65537, MIB]


def layout():
    off, out = 1, []
    for n in SIZES:
        out.append((off, n))
        off += n + 13
        off |= 1
    return out


WRITES = r"""#guest
ba pin 0 0 0 8192
i=0
while read off len; do
    ba write 0 $off --file $S/d$i
    ba read 0 $off $len > $S/m$i
    ba read-dma 0 $off $len > $S/r$i
    i=$((i+1))
done < $S/layout
ba info --json > $S/info.json
"""


def test_odd_offset_writes_read_back(share, tmp_path):
    lay = layout()
    (share / "layout").write_text("".join("%d %d\n" % x for x in lay))
    data = []
    for i, (_, n) in enumerate(lay):
        data.append(seeded_bytes(100 + i, n))
        (share / ("d%d" % i)).write_bytes(data[-1])
    disk = tmp_path / "disk.img"
    status, out = vm(WRITES, share=share, disk=disk, size="256M")
    check(status, out)
    info = json.loads((share / "info.json").read_text())
    assert info["entry"][0]["state"] == "pinned" and info["entry"][0]["length"] == 4 * MIB
    window = open(str(disk) + ".nh-ba", "rb").read()[META:]
    for i, (off, n) in enumerate(lay):
        assert (share / ("m%d" % i)).read_bytes() == data[i], "mapping, %d bytes at %d" % (n, off)
        assert (share / ("r%d" % i)).read_bytes() == data[i], "DMA, %d bytes at %d" % (n, off)
        assert window[off:off + n] == data[i], "window file, %d bytes at %d" % (n, off)


COHERENCE = r"""#guest
dd if=$S/old of=$DEV bs=64K seek=32 oflag=direct conv=fsync status=none  # LBA 4096..
ba pin 1 0x400000 4096 64
ba read 1 0 32768 > $S/pinned
ba write 1 100 --data 'changed by the window'
# the block path may not write pinned LBAs
if dd if=$S/old of=$DEV bs=512 seek=4100 count=1 oflag=direct status=none 2>$S/dd.err; then
    echo accepted > $S/refused; else echo refused > $S/refused; fi
dd if=$DEV bs=32K skip=64 count=1 iflag=direct status=none > $S/before-sync
ba sync 1
dd if=$DEV bs=32K skip=64 count=1 iflag=direct status=none > $S/after-sync
ba info --json > $S/info-synced.json
ba flush 1
ba info --json > $S/info-flushed.json
dd if=$S/old of=$DEV bs=512 seek=4100 count=1 oflag=direct status=none && echo ok > $S/write-after
"""


def test_pin_sync_flush_coherent_with_dd(share):
    old = seeded_bytes(7, 64 * 1024)
    (share / "old").write_bytes(old)
    status, out = vm(COHERENCE, share=share, size="256M")
    check(status, out)
    assert (share / "pinned").read_bytes() == old[:32768], "BA_PIN loads what dd wrote"
    assert (share / "refused").read_text().strip() == "refused", "block write to pinned LBAs"
    assert (share / "before-sync").read_bytes() == old[:32768]
    new = old[:100] + b"changed by the window" + old[121:32768]
    assert (share / "after-sync").read_bytes() == new, "dd reads what BA_SYNC wrote"
    synced = json.loads((share / "info-synced.json").read_text())["entry"][1]
    assert synced["state"] == "pinned" and synced["slba"] == 4096 and synced["nlb"] == 64
    assert json.loads((share / "info-flushed.json").read_text())["entry"][1]["state"] == "free"
    assert (share / "write-after").read_text().strip() == "ok", "released LBAs are writable"


BEFORE_LOSS = r"""#guest
ba pin 3 0x10001 0x20000 100
ba write 3 5 --file $S/payload
touch $S/ready
sleep 600
"""

AFTER_LOSS = r"""#guest
ba info --json > $S/info.json
ba read 3 5 %d > $S/back
nvme smart-log $CTRL -o json > $S/smart.json
"""


def _restored(share, payload, restore):
    info = json.loads((share / "info.json").read_text())
    assert info["restore"] == restore, info
    e = info["entry"][3]
    assert (e["state"], e["offset"], e["slba"], e["nlb"]) == ("pinned", 0x10001, 0x20000, 100)
    assert (share / "back").read_bytes() == payload
    assert (info["pmrsts"] >> 9) & 7 == 0, "PMRSTS.HSTS normal"
    return json.loads((share / "smart.json").read_text())


def _lose_power(share, tmp_path, how, before=BEFORE_LOSS, signals=("ready",)):
    payload = seeded_bytes(3, 40000)
    (share / "payload").write_bytes(payload)
    disk = tmp_path / "disk.img"
    pidfile = tmp_path / "qemu.pid"
    qmp = tmp_path / "qmp.sock"
    run = VmRun(before, share=share, disk=disk, size="256M", qmp=qmp,
                qemu="-pidfile %s" % pidfile)
    try:
        for name in signals:
            run.wait_for_file(str(share / name))
        pid = int(pidfile.read_text())
        if how == "sigkill":
            os.kill(pid, signal.SIGKILL)
        else:
            run.cut_power()
        status, out = run.wait()
    finally:
        run.kill()
    assert status == 125, "QEMU stopped without the guest finishing: %s\n%s" % (status, out)
    status, out = vm(AFTER_LOSS % len(payload), share=share, disk=disk, size="256M")
    check(status, out, "run after the power loss")
    return payload, disk


# The same, with a process storing into the window (outside the pinned entry) without pause
# while the power goes: the capacitors' dump must see a window no vCPU changes any more, or
# its checksum does not match what the file holds and the next start discards the window.
BUSY_BEFORE_LOSS = BEFORE_LOSS.replace("touch $S/ready", r"""python3 - <<'EOF' &
import mmap, os
path = "/sys/class/nvme/%s/device/resource1_wc" % os.path.basename(os.environ["CTRL"])
with open(path, "r+b") as f:
    m = mmap.mmap(f.fileno(), os.path.getsize(path))
    n = 0
    while True:
        off = (1 << 20) + (n * 64) % (1 << 20)
        m[off:off + 8] = n.to_bytes(8, "little")
        n += 1
        if n == 100000:     # storing for a while now: the host may cut
            open("/mnt/share/busy", "w").close()
EOF
touch $S/ready""").replace("#guest\n", "#guest\nexport CTRL\n", 1)


def test_sigkill_window_and_entries_come_back(share, tmp_path):
    payload, _ = _lose_power(share, tmp_path, "sigkill")
    smart = _restored(share, payload, "recovered")
    assert int(smart["unsafe_shutdowns"]) >= 1


def test_power_cut_over_qmp_saves_window(share, tmp_path):
    payload, disk = _lose_power(share, tmp_path, "power-cut")
    smart = _restored(share, payload, "restored")
    assert int(smart["unsafe_shutdowns"]) >= 1, "a power cut is an unsafe shutdown"
    hdr = open(str(disk) + ".nh-ba", "rb").read(64)
    assert struct.unpack_from("<Q", hdr, 40)[0] >= 1, "dump count in the header"


def test_power_cut_while_the_window_is_being_stored_to(share, tmp_path):
    payload, _ = _lose_power(share, tmp_path, "power-cut", BUSY_BEFORE_LOSS, ("ready", "busy"))
    _restored(share, payload, "restored")


CORRUPT_1 = r"""#guest
ba pin 0 0 0 64
ba write 0 0 --data 'saved but damaged later'
"""

CORRUPT_2 = r"""#guest
ba info --json > $S/info.json
ba pin 0 0 0 64
ba read 0 0 23 > $S/back
nvme error-log $CTRL -e 64 -o json > $S/errlog.json
"""


def test_corrupted_save_is_detected(share, tmp_path):
    disk = tmp_path / "disk.img"
    status, out = vm(CORRUPT_1, share=share, disk=disk, size="256M")
    check(status, out, "run 1")
    ba_file = str(disk) + ".nh-ba"
    with open(ba_file, "r+b") as f:            # one bit of the saved window flips
        f.seek(META + 5)
        b = f.read(1)
        f.seek(META + 5)
        f.write(bytes([b[0] ^ 0x10]))
    status, out = vm(CORRUPT_2, share=share, disk=disk, size="256M")
    check(status, out, "run 2")
    info = json.loads((share / "info.json").read_text())
    assert info["restore"] == "corrupt" and info["entry"][0]["state"] == "free", info
    assert (info["pmrsts"] >> 9) & 7 == 1, "PMRSTS.HSTS: Restore Error"
    assert (share / "back").read_bytes() == b"\0" * 23, "the damaged save is not used"
    # The Error Information log has an entry not tied to a command (SQ and CID
    # FFFFh): Unrecovered Read Error (SCT 2h, SC 81h), the save not read back.
    errs = json.loads((share / "errlog.json").read_text())["errors"]
    ours = [e for e in errs if int(e["cmdid"]) == 0xFFFF and int(e["sqid"]) == 0xFFFF]
    assert len(ours) == 1, errs
    # (nvme-cli prints the status without the phase bit)
    assert int(ours[0]["status_field"]) & 0x7FF == 0x281, ours
    assert os.path.exists(ba_file + ".bad")


# One vCPU persists through the window in a loop (each persist ends in a read of PMRSTS) while
# the other drives block I/O.  The persist cost model once cleared the window's dirty bits with
# a call that, under multi-threaded TCG, waits for every other vCPU with the BQL released: the
# PMRSTS read then held the device's reentrancy guard while the other vCPU's doorbell writes
# were refused ("Blocked re-entrant IO"), and its commands were lost until the kernel's timeout.
PERSIST_BESIDE_IO = r"""#guest
taskset -c 0 ba-bench --ops 1000000 --block-ops 1 $DEV > /dev/null 2>&1 &
bench=$!
sleep 2
taskset -c 1 fio --name=io --filename=$DEV --size=64M --rw=randwrite --bs=4k --direct=1 \
    --ioengine=libaio --iodepth=8 --loops=4 --verify=crc32c --verify_fatal=1 \
    --output-format=json > $S/fio.json
kill -0 $bench && echo running > $S/bench-alive
kill $bench
dmesg > $S/dmesg
"""


def test_persists_beside_block_io_lose_no_doorbell(share):
    status, out = vm(PERSIST_BESIDE_IO, share=share, timeout=400)
    check(status, out)
    assert "Blocked re-entrant IO" not in out
    assert (share / "bench-alive").exists(), "the persist loop ended before the I/O did"
    job = json.loads((share / "fio.json").read_text())["jobs"][0]
    assert job["error"] == 0 and job["write"]["io_bytes"] == 4 * 64 * MIB
    assert " timeout" not in (share / "dmesg").read_text()
