"""scripts/crashpoints' verdicts after the restart: which block versions had to survive a cut, and
what the window must hold again, from what the host saw acknowledged."""
import struct

from nh.crashpoints.host import BA_INFO, LBA, LOSS_CLASSES, PREFILL, RECOVERED, REG_PMRSTS, RESTORED, ZERO, decode, nq


def figures_line(points, acked, lost, wlost, inconsistent):
    return ("points %d acknowledged-bytes %d lost-bytes %d window-lost %d inconsistent %d"
            % (points, acked, lost, wlost, inconsistent))


def durable_kind(cmd, volatile, flushes):
    """Why @cmd's content must survive ("fua", "flush", ...), or None."""
    if cmd is PREFILL:
        return "prefill"
    if not cmd.ok:
        return None
    if cmd.kind in ("sync", "baflush"):
        return "ba"
    if cmd.kind != "write":
        return None
    if cmd.args["fua"]:
        return "fua"
    if not volatile:
        return "nonvolatile"
    if any(f.ok and f.sub > cmd.ack for f in flushes):
        return "flush"
    return None


def judge_blocks(wl, h, observed):
    """{class: lost bytes}, the acknowledged-durable bytes and the first losses, per LBA of
    wl's regions (@observed: lba -> its 512 bytes after the restart)."""
    lost = {c: 0 for c in LOSS_CLASSES}
    details = []
    for slba, nlb in wl.regions:
        for lba in range(slba, slba + nlb):
            got = decode(observed[lba], lba)
            vs = [(0, PREFILL)] + h.versions.get(lba, [])
            durable = [(cmd.sub, why, cmd) for _, cmd in vs
                       if (why := durable_kind(cmd, wl.volatile, h.flushes))]
            cut, why, dcmd = max(durable, key=lambda d: d[0])
            # the latest durable version, or one not acknowledged before it was submitted
            allowed = {k for k, cmd in vs
                       if cmd is dcmd or ((cmd.status is None or cmd.ok) and
                                          (cmd.ack is None or cmd.ack > cut))}
            if got in allowed:
                continue
            cls = why if got in {k for k, _ in vs} or got == ZERO else "torn"
            lost[cls] += LBA
            if len(details) < 8:
                details.append("LBA %d holds %s; durable: %s (%s)" % (
                    lba, "zeroes" if got == ZERO else "version %d" % got
                    if isinstance(got, int) else "bytes of no version",
                    "the prefill" if dcmd is PREFILL else "%s %s acknowledged at %d" % (
                        dcmd.kind, dcmd.args.get("wid", ""), dcmd.ack), why))
    acked = sum(cmd.nbytes for cmd in h.cmds
                if durable_kind(cmd, wl.volatile, h.flushes) in ("fua", "flush", "nonvolatile",
                                                                 "ba"))
    return lost, acked, details


def ba_info(j, eid):
    buf = j.c.dma_buffer(64)
    cqe = j.c.admin_cmd(nq.sqe(BA_INFO, prp1=buf, cdw10=eid))
    keys = ("eid", "state", "restore", "entries", "offset", "slba", "nlb", "length",
            "window", "lba_size", "dumps", "dump_ns")
    return cqe, dict(zip(keys, struct.unpack("<HBBIQQQQQIIQ", j.qt.memread(buf, 64))))


def judge_window(wl, j):
    """After the restart: window-lost bytes, what was lost, and state problems (a restore
    that failed, an entry in a state the host's record does not allow)."""
    wlost, losses, problems = 0, [], []
    if not wl.window:
        return wlost, losses, problems
    sts = j.c.rd32(REG_PMRSTS)
    if (sts >> 9) & 7:
        problems.append("PMRSTS.HSTS %d after the restart" % ((sts >> 9) & 7))
    for eid in range(wl.ENTRIES):
        # what the host's record allows: free, pinned, or either (a command in flight)
        exp, pin = "free", None
        for cmd in wl.ba_cmds[eid]:
            if cmd.kind == "pin":
                if cmd.ack is None:
                    exp, pin = "maybe-pinned", cmd
                elif cmd.ok:
                    exp, pin = "pinned", cmd
            elif cmd.kind == "baflush":
                if cmd.ack is None:
                    exp = "maybe-free"
                elif cmd.ok:
                    exp, pin = "free", None
        cqe, info = ba_info(j, eid)
        if not cqe.ok:
            problems.append("BA_INFO %d: %r" % (eid, cqe))
            continue
        if eid == 0 and info["restore"] not in (RESTORED, RECOVERED):
            problems.append("window restore status %d (not restored)" % info["restore"])
        pinned = info["state"] == 1
        if exp == "free" and pinned:
            problems.append("entry %d pinned after the restart; the host's record has it free"
                            % eid)
            continue
        if exp == "pinned" and not pinned:
            wlost += pin.args["nlb"] * LBA
            losses.append("entry %d (pin acknowledged) not pinned after the restart" % eid)
            continue
        if not pinned:
            continue
        args = (pin.args["off"], pin.args["slba"], pin.args["nlb"])
        if (info["offset"], info["slba"], info["nlb"]) != args:
            problems.append("entry %d pinned as %s, the host pinned %s" % (
                eid, (info["offset"], info["slba"], info["nlb"]), args))
            continue
        if pin.ack is None:
            continue                    # loaded or not: what it holds is not known
        off, length = args[0], args[2] * LBA
        got = j.qt.memread(j.bar1 + off, length)
        alts = {}
        for o, data, _ in wl.pending:
            for k in range(max(o, off), min(o + len(data), off + length)):
                alts.setdefault(k, set()).add(data[k - o])
        bad = [k for k in range(length) if got[k] != wl.committed[off + k]
               and got[k] not in alts.get(off + k, ())]
        if bad:
            wlost += len(bad)
            losses.append("entry %d: %d window bytes lost (first at +%d: %#x, want %#x)" % (
                eid, len(bad), bad[0], got[bad[0]], wl.committed[off + bad[0]]))
    return wlost, losses, problems
