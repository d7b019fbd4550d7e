"""The zoned namespace as Linux 6.1 and Debian's tools see it (docs/zoned.md, "The device").

One boot: NSID 2 is a host-managed zoned block device (sysfs, `blkzone report`); nvme-cli
2.3's `nvme zns` commands, unmodified, identify it, append, open, close, finish and reset
zones; fio 3.33 writes zones with `zonemode=zbd` and verifies what it wrote.

The geometry is explicit: 2 x 2 planes, 48 pages of 4 KiB a block, a zone one block on each
plane: a zone capacity of 768 KiB (1536 LBAs) in a 1 MiB zone (2048 LBAs), so every zone
has a 256 KiB gap that Linux must respect.
"""
import json
import re

from conftest import check, load_json, seeded_bytes, vm

ZONES = 16
DEVICE = ("channels=2,ways=2,dies=1,planes=1,pages=48,page-size=4K,cell=slc,ba-size=0,"
          "zones=%d,zone-max-open=6,zone-max-active=8" % ZONES)
ZSZE, ZCAP = 2048, 1536                      # LBAs of 512 bytes

SCRIPT = r"""#guest
Z=${CTRL}n2
B=${Z#/dev/}
for f in zoned chunk_sectors nr_zones max_open_zones max_active_zones; do
    cat /sys/block/$B/queue/$f > $S/sys-$f
done
nvme list-ns $CTRL > $S/list-ns.txt
nvme zns id-ctrl $CTRL -o json > $S/zns-id-ctrl.json
nvme zns id-ns $Z -o json > $S/zns-id-ns.json
blkzone report $Z > $S/blkzone-0.txt

# zone 0: a write at its start, then finish, then reset
dd if=$S/pattern of=$Z bs=4k count=8 oflag=direct status=none
nvme zns report-zones $Z -o json > $S/report-written.json
nvme zns finish-zone $Z -s 0
nvme zns report-zones $Z -d 1 -o json > $S/report-finished.json
nvme zns reset-zone $Z -s 0
dd if=$Z bs=4k count=8 iflag=direct status=none | cmp - /dev/zero -n 32768 && echo zero > $S/reset-reads

# zone 1: two appends, the second lands after the first
nvme zns zone-append $Z -s %(z1)d -z 8192 -d $S/pattern > $S/append-1.txt
nvme zns zone-append $Z -s %(z1)d -z 4096 -d $S/pattern > $S/append-2.txt
dd if=$Z bs=512 skip=%(z1)d count=24 iflag=direct status=none > $S/zone1-data

# zone 2: opened explicitly, then closed
nvme zns open-zone $Z -s %(z2)d
nvme zns report-zones $Z -o json > $S/report-open.json
nvme zns close-zone $Z -s %(z2)d
nvme zns report-zones $Z -o json > $S/report-closed.json
nvme zns reset-zone $Z -a

# fio: sequential zone writes with verify on 8 zones, then random writes at write pointers
fio --name=seq --filename=$Z --direct=1 --zonemode=zbd --rw=write --bs=64k \
    --ioengine=psync --offset=0 --size=8M --verify=crc32c --do_verify=1 \
    --output-format=json > $S/fio-seq.json
fio --name=rnd --filename=$Z --direct=1 --zonemode=zbd --rw=randwrite --bs=16k \
    --ioengine=libaio --iodepth=4 --offset=8M --size=8M --io_size=4M --max_open_zones=4 \
    --verify=md5 --do_verify=1 --output-format=json > $S/fio-rnd.json
blkzone report $Z > $S/blkzone-1.txt
""" % {"z1": ZSZE, "z2": 2 * ZSZE}


def zones_of(report):
    return {z["slba"]: z for z in
            (dict((k.lower(), v) for k, v in z.items()) for z in report["zone_list"])}


def test_linux_sees_a_host_managed_zoned_namespace(share, tmp_path):
    pattern = seeded_bytes(28, 32768)
    (share / "pattern").write_bytes(pattern)
    status, out = vm(SCRIPT, device=DEVICE, disk=tmp_path / "disk.img", size="64M",
                     share=share, timeout=600)
    check(status, out)

    sysfs = {f: (share / ("sys-" + f)).read_text().strip()
             for f in ("zoned", "chunk_sectors", "nr_zones", "max_open_zones",
                       "max_active_zones")}
    assert sysfs == {"zoned": "host-managed", "chunk_sectors": str(ZSZE),
                     "nr_zones": str(ZONES), "max_open_zones": "6",
                     "max_active_zones": "8"}, sysfs

    assert re.findall(r"0x([0-9a-f]+)", (share / "list-ns.txt").read_text()) == ["1", "2"]

    blk = (share / "blkzone-0.txt").read_text().splitlines()
    assert len(blk) == ZONES, blk
    assert re.search(r"start: 0x0*800, len 0x0*800, cap 0x0*600, wptr 0x0*0 .*zcond: *1\(em\)",
                     blk[1]), blk[1]

    idns = load_json(share, "zns-id-ns.json")
    assert idns["mor"] == 5 and idns["mar"] == 7, idns
    assert idns["lbafe"][0]["zsze"] == ZSZE, idns["lbafe"][0]

    z0 = zones_of(load_json(share, "report-written.json"))[0]
    assert (z0["wp"], z0["cap"]) == (64, ZCAP), z0
    z0 = zones_of(load_json(share, "report-finished.json"))[0]
    assert "FULL" in str(z0["state"]).upper(), z0
    assert (share / "reset-reads").read_text().strip() == "zero"

    lbas = [int(re.search(r"LBA\s+(?:0x)?([0-9a-fA-F]+)", (share / f).read_text()).group(1), 16)
            for f in ("append-1.txt", "append-2.txt")]
    assert lbas == [ZSZE, ZSZE + 16], lbas
    assert (share / "zone1-data").read_bytes() == pattern[:8192] + pattern[:4096]

    assert "EXP" in str(zones_of(load_json(share, "report-open.json"))[2 * ZSZE]["state"]).upper()
    assert "CLOSED" in str(
        zones_of(load_json(share, "report-closed.json"))[2 * ZSZE]["state"]).upper()

    for name in ("fio-seq.json", "fio-rnd.json"):
        job = json.loads((share / name).read_text())["jobs"][0]
        assert job["error"] == 0, (name, job["error"])
        assert job["write"]["io_bytes"] > 0, name
    seq = json.loads((share / "fio-seq.json").read_text())["jobs"][0]
    assert seq["write"]["io_bytes"] == 8 * ZCAP * 512, "8 zones written to their capacity"
