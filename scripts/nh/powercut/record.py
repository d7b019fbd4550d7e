"""scripts/powercut-campaign's record of a round: the lines the guest half writes before and after
each command, what its dump of the region says each LBA holds, and what the restart had to keep
of what was acknowledged."""
import zlib

MAGIC = b"NHPCUT01"
LOSS_CLASSES = ("durable-fua", "durable-flush", "durable-nonvolatile", "not-old-or-new", "torn")
ZERO = "zero"


def figures_line(rounds, acked, lost, window_lost, inconsistent):
    """The campaign's last line (docs/powercut.md), for one campaign or the sum of chunks."""
    return ("rounds %d acknowledged-bytes %d lost-bytes %d window-lost %d inconsistent %d"
            % (rounds, acked, lost, window_lost, inconsistent))


def lost_line(lost_by_class):
    return "lost bytes by class: " + ", ".join("%s %d" % kv for kv in lost_by_class.items())


# ------------------------------------------------------------------------------ judging

def decode(dump, first_lba, lba_size):
    """Per LBA of a dump: ZERO, (round, seq) of the write whose whole, CRC-valid content it
    holds, or ("torn", crc) for anything else."""
    out = []
    zero = bytes(lba_size)
    for i in range(len(dump) // lba_size):
        b = dump[i * lba_size:(i + 1) * lba_size]
        if b == zero:
            out.append(ZERO)
            continue
        lba = int.from_bytes(b[8:16], "little")
        crc = int.from_bytes(b[-4:], "little")
        if b[:8] == MAGIC and lba == first_lba + i and zlib.crc32(b[:-4]) == crc:
            out.append((int.from_bytes(b[16:20], "little"), int.from_bytes(b[20:24], "little")))
        else:
            out.append(("torn", zlib.crc32(b)))
    return out


def parse_log(path):
    """The round's log: [(kind, words...)] in the order the host file holds them."""
    events = []
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break           # a line cut short by the power cut: not seen whole
            w = line.split()
            if w:
                events.append(w)
    return events


class Round:
    """What the log of one round says about its block writes, flushes and window stores."""

    def __init__(self, rnd, events, volatile):
        self.rnd = rnd
        self.writes = {}        # seq -> dict(lba, nlb, fua, issue, ack, ok)
        self.flushes = []       # (issue index, ack index) of completed, successful flushes
        fl = {}
        self.pins = {}          # eid -> dict(off, slba, nlb, ack_rc or None)
        self.stores = []        # dict(seq, eid, off, len, acked)
        stores = {}
        for i, w in enumerate(events):
            k = w[0]
            if k == "wi":
                self.writes[int(w[1])] = dict(lba=int(w[2]), nlb=int(w[3]), fua=w[4] == "1",
                                              issue=i, ack=None, ok=False)
            elif k == "wa":
                wr = self.writes[int(w[1])]
                wr["ack"], wr["ok"] = i, int(w[2]) == 0
            elif k == "fi":
                fl[int(w[1])] = i
            elif k == "fa" and int(w[2]) == 0:
                self.flushes.append((fl[int(w[1])], i))
            elif k == "pi":
                self.pins[int(w[1])] = dict(off=int(w[2]), slba=int(w[3]), nlb=int(w[4]),
                                            rc=None)
            elif k == "pa":
                self.pins[int(w[1])]["rc"] = int(w[2])
            elif k == "xi":
                s = dict(seq=int(w[1]), eid=int(w[2]), off=int(w[3]), len=int(w[4]),
                         acked=False)
                stores[s["seq"]] = s
                self.stores.append(s)
            elif k == "xa":
                stores[int(w[1])]["acked"] = True
        # A write is durable by FUA, by a capacitor-backed buffer, or by a Flush submitted
        # after its acknowledgement that completed.
        first_flush_after = {}
        for wr in self.writes.values():
            wr["durable"] = None
            if not wr["ok"]:
                continue
            if wr["fua"]:
                wr["durable"] = "durable-fua"
            elif not volatile:
                wr["durable"] = "durable-nonvolatile"
            elif any(fi > wr["ack"] for fi, _ in self.flushes):
                wr["durable"] = "durable-flush"
        self.acked_bytes = 0

    def judge(self, baseline, observed, first_lba, lba_size):
        """Compare what the device holds (observed, decoded) with what the log allows.
        Returns {class: bytes lost}."""
        per_lba = {}
        for seq, wr in self.writes.items():
            for lba in range(wr["lba"], wr["lba"] + wr["nlb"]):
                per_lba.setdefault(lba, []).append((seq, wr))
        lost = {c: 0 for c in LOSS_CLASSES}
        for i, got in enumerate(observed):
            lba = first_lba + i
            ws = per_lba.get(lba, [])
            durable = [(wr["issue"], wr["durable"]) for _, wr in ws if wr["durable"]]
            if durable:
                cut, why = max(durable)
                allowed = {(self.rnd, seq) for seq, wr in ws
                           if wr["ack"] is None or wr["ack"] > cut}
            else:
                why = "not-old-or-new"
                allowed = {(self.rnd, seq) for seq, _ in ws} | {baseline[i]}
            if got in allowed:
                continue
            if isinstance(got, tuple) and got[0] == "torn" and got != baseline[i]:
                why = "torn"
            lost[why] += lba_size
        return lost


def window_expect(rnd_obj, rnd, eid, loaded, entry_len):
    """The bytes entry @eid must hold (what the pin loaded plus every acknowledged store) and a
    per-byte mask of where the one unacknowledged store may have left either version."""
    from random import Random
    want = bytearray(loaded[:entry_len].ljust(entry_len, b"\0"))
    either = bytearray(entry_len)
    alt = bytearray(want)
    for s in rnd_obj.stores:
        if s["eid"] != eid:
            continue
        data = Random(rnd * 1000003 + s["seq"]).randbytes(s["len"])
        if s["acked"]:
            want[s["off"]:s["off"] + s["len"]] = data
            alt[s["off"]:s["off"] + s["len"]] = data
        else:
            alt[s["off"]:s["off"] + s["len"]] = data
            for j in range(s["off"], s["off"] + s["len"]):
                either[j] = 1
    return bytes(want), bytes(alt), either
