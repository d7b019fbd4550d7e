#!/usr/bin/env python3
"""Write the seeds of the generic-fuzz configurations (tests/fuzz/corpus/{mmio,vendor}/).

A generic-fuzz input is a list of operations separated by "FUZZ" (QEMU's
tests/qtest/fuzz/generic_fuzz.c; its first byte modulo 10 picks the operation).  The ones used
here: MMIO write (3: size 0-3 for 1/2/4/8 bytes, index of the device's MMIO region, offset,
value), add DMA pattern (7: the bytes QEMU hands the device for any guest memory it reads that
nobody wrote), clock step (9).  Each seed brings the controller up (admin queue, CC.EN) and
submits commands whose 64-byte entries come from DMA patterns, so that the fuzzer starts from
inputs that reach the command handlers instead of finding CC, AQA and the doorbells alone.

Run from the repository: tests/fuzz/mkseeds.py (rewrites the seed files).
"""
import os
import struct
import sys

SEP = b"FUZZ"
REGS = 0            # index of nvme-hybrid-regs among the device's MMIO regions (BAR0)
ASQ, ACQ = 0x100000, 0x101000
IOSQ, IOCQ = 0x102000, 0x103000
DATA = 0x110000
# BAR addresses as qpci_iomap assigns them on q35 with only this device (QTEST_LOG shows them)
BAR0, BAR1 = 0xe0000000, 0xe0100000


def write(off, value, size=2, region=REGS):
    """MMIO write; size 0..3 is 1, 2, 4, 8 bytes."""
    return struct.pack("<BBBxxIQ", 3, size, region, off, value)


def pattern(data, index=0, stride=0):
    return struct.pack("<BBB", 7, index, stride) + data


def step():
    return bytes([9])


def sqe(opc, cid=1, nsid=0, prp1=0, prp2=0, cdw=(0,) * 6):
    cdw = list(cdw) + [0] * (6 - len(cdw))
    return struct.pack("<BBHIQQQQ6I", opc, 0, cid, nsid, 0, 0, prp1, prp2, *cdw)


def enable():
    return [write(0x24, (63 << 16) | 63), write(0x28, ASQ, 3), write(0x30, ACQ, 3),
            write(0x14, 0x00460001), step()]


def admin(cmds, first_tail=1):
    """Each command: its entry as the only DMA pattern, then the admin SQ tail doorbell."""
    ops = []
    for i, c in enumerate(cmds):
        ops += [bytes([8]), pattern(c), write(0x1000, first_tail + i), step(), step()]
    return ops


def seed(ops):
    return SEP.join(ops)


def io_queues():
    # Create I/O CQ 1 (contiguous, interrupts on vector 0) and SQ 1 bound to it.
    return admin([sqe(0x05, 1, prp1=IOCQ, cdw=(1 | (63 << 16), 3)),
                  sqe(0x01, 2, prp1=IOSQ, cdw=(1 | (63 << 16), (1 << 16) | 1))])


def mmio_seeds():
    s = {}
    s["enable-identify"] = seed(enable() + admin([sqe(0x06, 1, prp1=DATA, cdw=(1,)),
                                                  sqe(0x06, 2, nsid=1, prp1=DATA, cdw=(0,))]))
    io = []
    for i, (opc, slba, nlb, prp1) in enumerate([(0x01, 0, 7, DATA), (0x02, 0, 7, DATA),
                                               (0x01, 8, 0, BAR1), (0x02, 16, 0, BAR0 + 0x1000),
                                               (0x09, 0, 0, DATA), (0x00, 0, 0, 0)]):
        cdw = (slba, 0, nlb) if opc != 0x09 else (0, 1)
        io += [bytes([8]), pattern(sqe(opc, 10 + i, nsid=1, prp1=prp1, cdw=cdw)),
               write(0x1008, i + 1), step(), step()]
    s["io-rw"] = seed(enable() + io_queues() + io)
    s["log-features"] = seed(enable() + admin([
        sqe(0x02, 1, nsid=0xffffffff, prp1=DATA, cdw=(0x02 | (127 << 16),)),   # SMART
        sqe(0x02, 2, prp1=DATA, cdw=(0xc0 | (1023 << 16),)),                   # vendor log
        sqe(0x0a, 3, cdw=(0x07,)), sqe(0x09, 4, cdw=(0x06, 1)),                # features
        sqe(0x7c, 5, prp1=DATA, cdw=(DATA,)),                 # doorbell buffer config
        sqe(0x0c, 6),                                          # AER
    ]))
    s["reset"] = seed(enable() + io_queues() + [write(0x14, 0), step(), write(0x14, 0x00460001)])
    s["pmr"] = seed(enable() + [write(0xe04, 1), write(0xe08, 0, 2), write(0xe14, BAR1, 3)])
    return s


def vendor_seeds():
    pin = sqe(0xc0, 1, nsid=1, cdw=(0, 0, 0, 0, 8))
    info = sqe(0xc2, 2, prp1=DATA, cdw=(0,))
    sync = sqe(0xc4, 3, cdw=(0,))
    rdma = sqe(0xc6, 4, prp1=DATA, cdw=(0, 0, 4096))
    flush = sqe(0xc8, 5, cdw=(0,))
    s = {"pin-info-sync-read-flush": seed(enable() + admin([pin, info, sync, rdma, flush]))}
    for name, c in [("pin", pin), ("info", info), ("sync", sync), ("read-dma", rdma),
                    ("flush", flush)]:
        s[name] = seed(enable() + admin([c]))
    # a window range at the end, a pin over BAR memory, the same entry twice
    s["pin-edges"] = seed(enable() + admin([sqe(0xc0, 1, nsid=1, cdw=(7, 0xff000, 100, 0, 8)),
                                            sqe(0xc0, 2, nsid=1, cdw=(7, 0, 0, 0, 1)),
                                            sqe(0xc6, 3, prp1=BAR0, cdw=(7, 0, 512)),
                                            sqe(0xc8, 4, cdw=(7,))]))
    return s


def main():
    top = os.path.dirname(os.path.abspath(__file__))
    for name, seeds in [("mmio", mmio_seeds()), ("vendor", vendor_seeds())]:
        d = os.path.join(top, "corpus", name)
        os.makedirs(d, exist_ok=True)
        for f, data in seeds.items():
            with open(os.path.join(d, f), "wb") as fh:
                fh.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
