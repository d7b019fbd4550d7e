"""scripts/powercut-campaign's rounds: each boot (nh/session.py) checks the round before, runs its
own workload on a drawn buffer configuration and cuts the power; the totals over the rounds."""
import json
import os
import random
import signal
import time

from nh import session as nhsession
from nh.paths import WORKLOADS
from nh.powercut.record import (LOSS_CLASSES, Round, ZERO, decode, figures_line, lost_line,
                                parse_log, window_expect)

GUEST = os.path.join(WORKLOADS, "powercut-guest.py")
BUFFERS = ("lru", "bplru", "fab", "clc", "ref", "bpac", "cbm", "lbuf")
BUFFER_SIZES = ("4M", "8M", "32M")
FTLS = ("page", "dftl", "fast", "bast", "sast")


class Campaign:
    def __init__(self, opts):
        self.o = opts
        self.rng = random.Random(opts.seed)
        self.dir, self.share, self.disk = nhsession.workdir(opts.dir, "powercut-", GUEST)
        self.ftl = opts.ftl or self.rng.choice(FTLS)
        self.lba_size = opts.lba_size
        self.region = (0, opts.region_lbas)
        self.baseline = [ZERO] * opts.region_lbas
        self.window_lbas = {}                   # eid -> bytes its LBAs hold
        self.totals = dict(acked=0, lost={c: 0 for c in LOSS_CLASSES}, window_lost=0,
                           restore_failures=0, inconsistent=0)
        self.rounds = []

    def log(self, *a):
        print(*a, flush=True)

    def boot_config(self, k):
        r = self.rng
        cfg = dict(buffer=r.choice(BUFFERS), size=r.choice(BUFFER_SIZES),
                   volatile=self.o.volatile if self.o.volatile != "random"
                   else r.choice(("on", "off")),
                   window=r.random() < self.o.p_window,
                   cut=("kill", "qmp")[k % 2] if self.o.cut == "alternate" else self.o.cut,
                   after=r.uniform(self.o.min_cut, self.o.max_cut))
        return cfg

    def device(self, cfg):
        # preset=none: the keys' own small device, whose blocks the 4M buffers hold
        d = "preset=none,ftl=%s,buffer=%s,buffer-size=%s,buffer-volatile=%s,lba-size=%d" % (
            self.ftl, cfg["buffer"], cfg["size"], cfg["volatile"], self.lba_size)
        return d + ("," + self.o.device if self.o.device else "")

    def guest_cmd(self, k, cfg, check_only):
        a = ["python3", "/mnt/share/powercut-guest.py", "--round", str(k),
             "--seed", str(self.o.seed), "--region-lbas", str(self.o.region_lbas),
             "--threads", str(self.o.threads), "--use-window", str(int(cfg["window"])),
             "--lba-size", str(self.lba_size), "--window-lba", str(2 * self.o.region_lbas)]
        if check_only:
            a.append("--check-only")
        return " ".join(a)

    def boot(self, k, cfg, check_only):
        """Boot k: the check of round k-1, then round k's workload and the cut (or, for the
        last boot, a clean power-off).  Returns the model check's answer."""
        with nhsession.Session(self.dir, os.path.join(self.dir, "vm-exec-%d.log" % k)) as s:
            s.start(["--timeout", str(self.o.boot_timeout), "--disk", self.disk,
                     "--size", self.o.size, "--share", self.share,
                     "--qemu", "-pidfile " + s.pidfile, "--device", self.device(cfg)],
                    self.guest_cmd(k, cfg, check_only))
            s.wait_for("check phase", self.o.boot_timeout,
                       os.path.join(self.share, "checked-%d" % k))
            check = s.device().check()
            if check_only:
                s.power_off(self.o.boot_timeout)
                return check, s.elapsed()
            logf = os.path.join(self.share, "log-%d.txt" % k)

            def started():
                try:
                    with open(logf) as f:
                        return "\ngo\n" in f.read()
                except FileNotFoundError:
                    return False
            s.wait_for("workload start", 120, started)
            time.sleep(cfg["after"])
            # The model as the workload left it, just before the cut (a failure here is the
            # run's, not the restart's).
            cfg["check_before_cut"] = s.dev.check()
            s.cut(cfg["cut"])
            s.wait_cut(60, cfg["cut"])
            return check, s.elapsed()

    def judge(self, k, cfg):
        """Round k's verdict, from the files boot k+1 left in the share."""
        sh = self.share
        events = parse_log(os.path.join(sh, "log-%d.txt" % k))
        rd = Round(k, events, cfg["volatile"] == "on")
        with open(os.path.join(sh, "dump-%d.bin" % (k + 1)), "rb") as f:
            observed = decode(f.read(), self.region[0], self.lba_size)
        lost = rd.judge(self.baseline, observed, self.region[0], self.lba_size)
        acked = sum(w["nlb"] * self.lba_size for w in rd.writes.values() if w["ok"])
        acked += sum(s["len"] for s in rd.stores if s["acked"])
        problems = []

        # SMART: exactly one more unsafe shutdown than the boot before, and one more for each
        # QEMU of boot k+1 that vm-exec booted again after QEMU's own TCG abort (that QEMU had
        # started the device, and died: an unsafe shutdown too).
        with open(os.path.join(sh, "smart-%d.json" % k)) as f:
            before = int(json.load(f)["unsafe_shutdowns"])
        with open(os.path.join(sh, "smart-%d.json" % (k + 1))) as f:
            after = int(json.load(f)["unsafe_shutdowns"])
        with open(os.path.join(self.dir, "vm-exec-%d.log" % (k + 1)), errors="replace") as f:
            rebooted = f.read().count("; booting again")
        inconsistent = 0
        if after != before + 1 + rebooted:
            problems.append("unsafe shutdowns %d -> %d%s" % (
                before, after, " (QEMU booted %d more time(s))" % rebooted if rebooted else ""))
            inconsistent += 1
        # The BAR1 window.
        window_lost, restore_fail = 0, 0
        with open(os.path.join(sh, "ba-%d.json" % (k + 1))) as f:
            entries = {e["eid"]: e for e in json.load(f)}
        if rd.pins and entries:
            restore = next(iter(entries.values()))["restore"]
            if restore not in (1, 2):
                problems.append("window restore status %d" % restore)
                restore_fail += 1
        for eid, e in entries.items():
            pin = rd.pins.get(eid)
            if e["state"] != 1:
                if pin and pin["rc"] == 0:
                    problems.append("entry %d not pinned after the restart" % eid)
                    restore_fail += 1
                    window_lost += sum(s["len"] for s in rd.stores
                                       if s["eid"] == eid and s["acked"])
                continue
            if not pin or (pin["rc"] not in (None, 0)) or \
                    (e["offset"], e["slba"], e["nlb"]) != (pin["off"], pin["slba"], pin["nlb"]):
                problems.append("entry %d pinned as %s, the round pinned %s"
                                % (eid, (e["offset"], e["slba"], e["nlb"]), pin))
                restore_fail += 1
                continue
            with open(os.path.join(sh, "win-%d-%d.bin" % (k + 1, eid)), "rb") as f:
                got = f.read()
            loaded = self.window_lbas.get(eid, b"")
            want, alt, either = window_expect(rd, k, eid, loaded, e["length"])
            bad = [j for j in range(len(want)) if got[j] != want[j]
                   and not (either[j] and got[j] == alt[j])]
            if bad:
                problems.append("entry %d: %d window bytes differ (first at %d)"
                                % (eid, len(bad), bad[0]))
                window_lost += len(bad)
            with open(os.path.join(sh, "winlba-%d-%d.bin" % (k + 1, eid)), "rb") as f:
                on_lbas = f.read()
            if e.get("flush_rc") != 0 or on_lbas != got:
                problems.append("entry %d: BA_FLUSH rc %s, LBAs %s the window"
                                % (eid, e.get("flush_rc"),
                                   "match" if on_lbas == got else "differ from"))
                restore_fail += 1
            self.window_lbas[eid] = on_lbas
        # The next round starts from what the device now holds.
        self.baseline = observed
        return dict(acked=acked, lost=lost, window_lost=window_lost,
                    restore_failures=restore_fail, inconsistent=inconsistent,
                    problems=problems, writes=sum(1 for w in rd.writes.values() if w["ok"]),
                    flushes=len(rd.flushes),
                    stores=sum(1 for s in rd.stores if s["acked"]))

    def run(self):
        o = self.o
        self.log("powercut-campaign: %d rounds, seed %d, ftl %s, region %d LBAs of %d bytes, "
                 "in %s" % (o.rounds, o.seed, self.ftl, o.region_lbas, self.lba_size, self.dir))
        cfgs = []
        t_start = time.monotonic()
        stop = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, frame: stop.append(signum))
        rounds = o.rounds
        for k in range(o.rounds + 1):
            if stop and k < rounds:
                self.log("powercut-campaign: stopping on a signal; boot %d checks round %d "
                         "and powers off" % (k, k - 1))
                rounds = k
            last = k == rounds
            cfg = self.boot_config(k)
            cfgs.append(cfg)
            check, secs = self.boot(k, cfg, last)
            if k == 0:
                if check != "ok":
                    self.log("boot 0: model check: %s" % check)
                    self.totals["inconsistent"] += 1
                if last:
                    break
                continue
            prev = cfgs[k - 1]
            v = self.judge(k - 1, prev)
            if prev.get("check_before_cut", "ok") != "ok":
                v["problems"].append("model check just before the cut: %s"
                                     % prev["check_before_cut"])
                v["inconsistent"] += 1
            if check != "ok":
                v["problems"].append("model check after the restart: %s" % check)
                v["inconsistent"] += 1
            lost = sum(v["lost"].values())
            self.log("round %d: %s %s/%s volatile=%s window=%s cut=%s after %.1fs: "
                     "acknowledged %d writes %d flushes %d stores, %d bytes; lost %d%s; "
                     "window-lost %d; %.1f s"
                     % (k - 1, self.ftl, prev["buffer"], prev["size"], prev["volatile"],
                        "on" if prev["window"] else "off", prev["cut"], prev["after"],
                        v["writes"], v["flushes"], v["stores"], v["acked"], lost,
                        "".join(" %s=%d" % (c, n) for c, n in v["lost"].items() if n),
                        v["window_lost"], secs))
            for p in v["problems"]:
                self.log("    %s" % p)
            t = self.totals
            t["acked"] += v["acked"]
            for c, n in v["lost"].items():
                t["lost"][c] += n
            for key in ("window_lost", "restore_failures", "inconsistent"):
                t[key] += v[key]
            self.rounds.append(dict(round=k - 1, config=prev, **v))
            if last:
                break
        elapsed = time.monotonic() - t_start
        t = self.totals
        lost = sum(t["lost"].values())
        self.log(lost_line(t["lost"]))
        self.log("restore failures %d; inconsistencies %d; %.0f s, %.1f s per round"
                 % (t["restore_failures"], t["inconsistent"], elapsed,
                    elapsed / max(1, rounds)))
        self.log(figures_line(rounds, t["acked"], lost, t["window_lost"], t["inconsistent"]))
        if o.json:
            with open(o.json, "w") as f:
                json.dump(dict(rounds=rounds, seed=o.seed, ftl=self.ftl,
                               acknowledged_bytes=t["acked"], lost_bytes=lost,
                               lost_by_class=t["lost"], window_lost=t["window_lost"],
                               restore_failures=t["restore_failures"],
                               inconsistent=t["inconsistent"], seconds=elapsed,
                               per_round=self.rounds), f, indent=1)
        bad = lost or t["window_lost"] or t["inconsistent"] or t["restore_failures"]
        return 1 if bad else 0
