#!/usr/bin/env python3
"""The guest half of scripts/powercut-campaign (Python standard library only; runs in the
guest, copied into the campaign's share).  One boot, two phases:

check      what the device holds after the previous round's power cut, for the host to judge:
           SMART (smart-R.json), the block region's raw bytes (dump-R.bin), the BAR1 window's
           entries (ba-R.json), the bytes of every pinned entry read through the window
           (win-R-E.bin), then BA_FLUSH of that entry and its LBAs read back (winlba-R-E.bin).
workload   writers until the host cuts power, every step logged to log-R.txt in the share
           *before* it is submitted (intent) and *after* it completed (acknowledgement), each
           line one write(2) on the 9p share, which reaches the host file before it returns:
             wi SEQ LBA NLB FUA    block write submitted     wa SEQ STATUS   it completed
             fi SEQ                Flush submitted           fa SEQ STATUS   it completed
             pi EID OFF SLBA NLB   BA_PIN submitted          pa EID RC       it completed
             xi SEQ EID OFF LEN    window store started      xa SEQ          stored and persisted
           Block writes are NVMe Write commands by passthrough (NVME_IOCTL_IO_CMD), so FUA and
           Flush are exactly the commands the device sees.  Every LBA written carries its own
           name: magic, LBA, round, sequence number, filler from those, CRC-32.
"""
import argparse
import ctypes
import json
import mmap
import os
import random
import struct
import subprocess
import sys
import threading
import time
import zlib

MAGIC = b"NHPCUT01"
HDR = struct.Struct("<8sQII")          # magic, lba, round, seq
NVME_IOCTL_IO_CMD = 0xC0484E43         # _IOWR('N', 0x43, struct nvme_passthru_cmd)
OP_FLUSH, OP_WRITE = 0x00, 0x01
NVME_RW_FUA = 1 << 30


def lba_content(lba, rnd, seq, size):
    """What a write of round @rnd, sequence @seq puts in LBA @lba (scripts/powercut-campaign
    decodes the same layout)."""
    head = HDR.pack(MAGIC, lba, rnd, seq)
    token = struct.pack("<QII", lba ^ 0x5A5A5A5A5A5A5A5A, rnd * 2654435761 & 0xFFFFFFFF, seq)
    body = head + token * ((size - len(head)) // len(token) + 1)
    body = body[:size - 4]
    return body + struct.pack("<I", zlib.crc32(body))


def window_bytes(rnd, seq, length):
    """The bytes window store @seq of round @rnd writes (the host derives the same)."""
    return random.Random(rnd * 1000003 + seq).randbytes(length)


class PassthruCmd(ctypes.Structure):
    _fields_ = [("opcode", ctypes.c_uint8), ("flags", ctypes.c_uint8),
                ("rsvd1", ctypes.c_uint16), ("nsid", ctypes.c_uint32),
                ("cdw2", ctypes.c_uint32), ("cdw3", ctypes.c_uint32),
                ("metadata", ctypes.c_uint64), ("addr", ctypes.c_uint64),
                ("metadata_len", ctypes.c_uint32), ("data_len", ctypes.c_uint32),
                ("cdw10", ctypes.c_uint32), ("cdw11", ctypes.c_uint32),
                ("cdw12", ctypes.c_uint32), ("cdw13", ctypes.c_uint32),
                ("cdw14", ctypes.c_uint32), ("cdw15", ctypes.c_uint32),
                ("timeout_ms", ctypes.c_uint32), ("result", ctypes.c_uint32)]


class BaInfo(ctypes.Structure):
    _fields_ = [("eid", ctypes.c_uint32), ("state", ctypes.c_uint32),
                ("offset", ctypes.c_uint64), ("slba", ctypes.c_uint64),
                ("nlb", ctypes.c_uint64), ("length", ctypes.c_uint64),
                ("entries", ctypes.c_uint32), ("restore", ctypes.c_uint32),
                ("window_size", ctypes.c_uint64), ("lba_size", ctypes.c_uint32),
                ("dumps", ctypes.c_uint32), ("dump_ns", ctypes.c_uint64)]


libc = ctypes.CDLL(None, use_errno=True)


def sh(cmd):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True,
                          text=True).stdout.strip()


class Log:
    """The acknowledgement channel: one line, one write(2) to the share, in order."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.lock = threading.Lock()

    def __call__(self, *words):
        line = (" ".join(str(w) for w in words) + "\n").encode()
        with self.lock:
            os.write(self.fd, line)


class Namespace:
    def __init__(self, dev, lba_size):
        self.fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
        self.lba = lba_size
        self.nsid = 1

    def command(self, opcode, buf=None, nbytes=0, cdw10=0, cdw11=0, cdw12=0):
        c = PassthruCmd(opcode=opcode, nsid=self.nsid, cdw10=cdw10, cdw11=cdw11, cdw12=cdw12,
                        data_len=nbytes, timeout_ms=0)
        if buf is not None:
            c.addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        r = libc.ioctl(self.fd, ctypes.c_ulong(NVME_IOCTL_IO_CMD), ctypes.byref(c))
        return r if r >= 0 else -ctypes.get_errno()

    def write(self, buf, lba, nlb, fua):
        return self.command(OP_WRITE, buf, nlb * self.lba, lba & 0xFFFFFFFF, lba >> 32,
                            (nlb - 1) | (NVME_RW_FUA if fua else 0))

    def flush(self):
        return self.command(OP_FLUSH)

    def read(self, lba, nlb):
        """O_DIRECT read through the block layer."""
        out = bytearray()
        chunk = 1 << 19
        buf = mmap.mmap(-1, chunk)
        off, end = lba * self.lba, (lba + nlb) * self.lba
        while off < end:
            n = min(chunk, end - off)
            got = os.preadv(self.fd, [memoryview(buf)[:n]], off)
            if got != n:
                raise OSError("short read at %d: %d of %d" % (off, got, n))
            out += buf[:n]
            off += n
        return bytes(out)


class Window:
    def __init__(self):
        self.lib = ctypes.CDLL("/usr/local/lib/libba.so", use_errno=True)
        self.dev = ctypes.c_void_p()
        rc = self.lib.ba_open(None, ctypes.byref(self.dev))
        if rc < 0:
            raise OSError("ba_open: %d" % rc)
        self.lib.ba_persist.restype = None

    def info(self, eid):
        i = BaInfo()
        rc = self.lib.ba_entry_info(self.dev, eid, ctypes.byref(i))
        if rc < 0:
            raise OSError("ba_entry_info(%d): %d" % (eid, rc))
        return {f: getattr(i, f) for f, _ in BaInfo._fields_}

    def read(self, eid, off, length):
        buf = ctypes.create_string_buffer(length)
        rc = self.lib.ba_read(self.dev, eid, ctypes.c_uint64(off), buf, ctypes.c_size_t(length))
        if rc < 0:
            raise OSError("ba_read(%d): %d" % (eid, rc))
        return buf.raw

    def pin(self, eid, off, slba, nlb):
        return self.lib.ba_pin(self.dev, eid, ctypes.c_uint64(off), ctypes.c_uint64(slba),
                               ctypes.c_uint32(nlb))

    def flush(self, eid):
        return self.lib.ba_flush(self.dev, eid)

    def store(self, eid, off, data):
        rc = self.lib.ba_write(self.dev, eid, ctypes.c_uint64(off), data,
                               ctypes.c_size_t(len(data)))
        if rc == 0:
            self.lib.ba_persist(self.dev)
        return rc


def check_phase(a, ns, win):
    d, r = a.dir, a.round
    ctrl = sh("nvme-hybrid-dev --ctrl")
    with open(os.path.join(d, "smart-%d.json" % r), "w") as f:
        f.write(sh("nvme smart-log %s -o json" % ctrl))
    with open(os.path.join(d, "dump-%d.bin" % r), "wb") as f:
        f.write(ns.read(a.region_lba, a.region_lbas))
    entries = []
    if win:
        for eid in range(a.entries):
            e = win.info(eid)
            entries.append(e)
            if e["state"] != 1:
                continue
            with open(os.path.join(d, "win-%d-%d.bin" % (r, eid)), "wb") as f:
                f.write(win.read(eid, 0, e["length"]))
            e["flush_rc"] = win.flush(eid)
            with open(os.path.join(d, "winlba-%d-%d.bin" % (r, eid)), "wb") as f:
                f.write(ns.read(e["slba"], e["nlb"]))
    with open(os.path.join(d, "ba-%d.json" % r), "w") as f:
        json.dump(entries, f)


def block_writer(a, ns, log, counter, tid, stop):
    rng = random.Random("%d/%d/%d" % (a.seed, a.round, tid))
    buf = mmap.mmap(-1, a.max_nlb * a.lba_size)
    while not stop.is_set():
        seq = counter()
        if rng.random() < a.p_flush:
            log("fi", seq)
            log("fa", seq, ns.flush())
            continue
        nlb = rng.randint(1, a.max_nlb)
        lba = a.region_lba + rng.randrange(a.region_lbas - nlb + 1)
        fua = int(rng.random() < a.p_fua)
        buf[:nlb * a.lba_size] = b"".join(lba_content(lba + i, a.round, seq, a.lba_size)
                                          for i in range(nlb))
        log("wi", seq, lba, nlb, fua)
        log("wa", seq, ns.write(buf, lba, nlb, fua))


def window_writer(a, win, log, counter, pinned, stop):
    rng = random.Random("%d/%d/window" % (a.seed, a.round))
    size = a.entry_lbas * a.lba_size
    while not stop.is_set():
        seq = counter()
        eid = rng.choice(pinned)
        length = rng.randint(8, 256)
        off = rng.randrange(size - length + 1)
        log("xi", seq, eid, off, length)
        rc = win.store(eid, off, window_bytes(a.round, seq, length))
        if rc:
            log("xe", seq, rc)
            return
        log("xa", seq)


def workload_phase(a, ns, win):
    log = Log(os.path.join(a.dir, "log-%d.txt" % a.round))
    lock = threading.Lock()
    seqs = iter(range(1, 1 << 62))

    def counter():
        with lock:
            return next(seqs)

    log("s", time.time())
    pinned = []
    if win and a.use_window:
        for eid in range(a.entries):
            off, slba = eid * a.entry_lbas * a.lba_size, a.window_lba + eid * a.entry_lbas
            log("pi", eid, off, slba, a.entry_lbas)
            rc = win.pin(eid, off, slba, a.entry_lbas)
            log("pa", eid, rc)
            if rc == 0:
                pinned.append(eid)
    stop = threading.Event()
    threads = [threading.Thread(target=block_writer, args=(a, ns, log, counter, t, stop),
                                daemon=True) for t in range(a.threads)]
    if pinned:
        threads.append(threading.Thread(target=window_writer,
                                        args=(a, win, log, counter, pinned, stop), daemon=True))
    log("go")
    for t in threads:
        t.start()
    time.sleep(a.duration)
    stop.set()
    for t in threads:
        t.join()
    log("end")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/mnt/share")
    ap.add_argument("--round", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lba-size", type=int, default=512)
    ap.add_argument("--region-lba", type=int, default=0)
    ap.add_argument("--region-lbas", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-nlb", type=int, default=16)
    ap.add_argument("--p-fua", type=float, default=0.1)
    ap.add_argument("--p-flush", type=float, default=0.05)
    ap.add_argument("--window", type=int, default=1, help="the device has a BAR1 window")
    ap.add_argument("--use-window", type=int, default=0, help="pin and store this round")
    ap.add_argument("--entries", type=int, default=2)
    ap.add_argument("--entry-lbas", type=int, default=64)
    ap.add_argument("--window-lba", type=int, default=65536)
    ap.add_argument("--duration", type=float, default=120,
                    help="seconds of workload before the writers stop (the host cuts earlier)")
    ap.add_argument("--check-only", action="store_true")
    a = ap.parse_args()

    ns = Namespace(sh("nvme-hybrid-dev"), a.lba_size)
    win = Window() if a.window else None
    check_phase(a, ns, win)
    open(os.path.join(a.dir, "checked-%d" % a.round), "w").close()
    if a.check_only:
        return 0
    workload_phase(a, ns, win)
    return 0


if __name__ == "__main__":
    sys.exit(main())
