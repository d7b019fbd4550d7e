"""scripts/crashpoints' points: the template drive, the uncut run that numbers the events, and one
run per point, cut at its event (a QEMU that hangs in the cut is killed), restarted and judged."""
import json
import os
import re
import shutil
import subprocess
import threading
import time

from nh.crashpoints.host import CampaignError, HANG_S, Host, IMAGE_SIZE, LBA, QOM, nq
from nh.crashpoints.judge import judge_blocks, judge_window
from nh.crashpoints.workloads import WORKLOADS


def sparse_copy(src, dst):
    with open(src, "rb") as f, open(dst, "wb") as g:
        size = os.fstat(f.fileno()).st_size
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            if chunk.count(0) == len(chunk):
                g.seek(len(chunk), os.SEEK_CUR)
            else:
                g.write(chunk)
        g.truncate(size)


FILES = ("disk.img", "disk.img.nh-state", "disk.img.nh-ba")


class CutWatch:
    """Watches a QEMU with power-cut-at: once the cut has begun (its trace line on stderr),
    QEMU must exit; one that stays, using no CPU, for STILL_S is hung, and is killed (the
    host's next qtest read then fails at once instead of after the socket's timeout)."""
    STILL_S = 0.6

    def __init__(self, vm):
        self.vm = vm
        self.hung = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _cpu(self):
        try:
            with open("/proc/%d/stat" % self.vm.proc.pid) as f:
                w = f.read().rsplit(")", 1)[1].split()
            return int(w[11]) + int(w[12]), w[0]
        except (OSError, IndexError, ValueError):
            return None, None

    def _run(self):
        proc = self.vm.proc
        while not self._stop.wait(0.05):
            if proc.poll() is not None:
                return
            try:
                with open(self.vm.stderr_path, "rb") as f:
                    if b"nhc_power_cut" not in f.read():
                        continue
            except OSError:
                continue
            t0 = still = time.monotonic()
            last, _ = self._cpu()
            while not self._stop.wait(0.1):
                if proc.poll() is not None:
                    return
                cpu, state = self._cpu()
                if cpu != last or state in ("R", "D"):
                    last, still = cpu, time.monotonic()
                elif time.monotonic() - still >= self.STILL_S:
                    self.hung = time.monotonic() - t0
                    proc.kill()
                    return
            return

    def stop(self):
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()


class Runner:
    def __init__(self, qemu, wl_name, seed, steps, extra_props, workdir):
        self.qemu = qemu
        self.wl_name, self.seed, self.steps = wl_name, seed, steps
        self.extra = extra_props
        self.dir = workdir
        self.template = os.path.join(workdir, "template")

    def workload(self):
        return WORKLOADS[self.wl_name](self.seed, self.steps)

    def props(self, wl, cut_at=0):
        p = "x-exact-time=on," + wl.props
        if self.extra:
            p += "," + self.extra
        if cut_at:
            p += ",power-cut-at=%d" % cut_at
        return p

    def start(self, wl, image, cut_at=0):
        vm = nq.Vm(self.qemu, "nvme-hybrid", image_size=IMAGE_SIZE, serial="nhcrash0",
                   device_props=self.props(wl, cut_at), image=image,
                   extra_args=("-trace", "nhc_power_cut") if cut_at else ())
        vm.qt.sock.settimeout(HANG_S)
        vm.qmp.sock.settimeout(HANG_S)
        return vm

    def copy_template(self, dest):
        os.makedirs(dest, exist_ok=True)
        for f in FILES:
            src = os.path.join(self.template, f)
            if os.path.exists(src):
                sparse_copy(src, os.path.join(dest, f))
        return os.path.join(dest, "disk.img")

    def make_template(self):
        """Regions prefilled with version 0 and flushed, then a clean shutdown."""
        os.makedirs(self.template, exist_ok=True)
        wl = self.workload()
        vm = self.start(wl, os.path.join(self.template, "disk.img"))
        try:
            h = Host(vm)
            h.setup(window=wl.window)
            wl.prefill(h)
            try:
                vm.qmp.execute("quit")
            except nq.QemuDied:
                pass
            if vm.proc.wait(60) != 0:
                raise CampaignError("template QEMU exited %d: %s" % (vm.proc.returncode,
                                                                    vm.stderr_text()))
        finally:
            vm.close()

    def uncut(self):
        """The workload once, uncut: its events, and SMART's Unsafe Shutdowns before a cut."""
        d = os.path.join(self.dir, "uncut")
        image = self.copy_template(d)
        wl = self.workload()
        vm = self.start(wl, image)
        try:
            h = Host(vm)
            h.setup(window=wl.window)
            wl.run(h)
            events = json.loads(vm.qmp.execute("qom-get", path=QOM, property="x-events"))
            unsafe = h.smart_unsafe_shutdowns()
            check = vm.qmp.execute("qom-get", path=QOM, property="x-check")
            return dict(events=events, unsafe=unsafe, check=check, problems=h.problems,
                        commands=len(h.cmds))
        finally:
            vm.close()
            shutil.rmtree(d, ignore_errors=True)

    def point(self, k, unsafe_before, keep=False):
        """Cut at event @k, restart, judge.  Returns the point's figures."""
        d = os.path.join(self.dir, "point-%d" % k)
        res = None
        try:
            res = self._point(k, d, unsafe_before)
            return res
        finally:
            bad = res is None or res.get("error") or res["lost"] or res["window_lost"] or \
                res["inconsistent"]
            if not (keep and bad):
                shutil.rmtree(d, ignore_errors=True)

    def _point(self, k, d, unsafe_before):
        t0 = time.monotonic()
        shutil.rmtree(d, ignore_errors=True)
        image = self.copy_template(d)
        wl = self.workload()
        res = dict(k=k, event=None, acked=0, lost=0, lost_by_class={}, window_lost=0,
                   inconsistent=0, problems=[], error=None)
        vm = self.start(wl, image, cut_at=k)
        h = Host(vm)
        watch = CutWatch(vm)
        try:
            try:
                h.setup(window=wl.window)
                wl.run(h)
                res["error"] = "the workload ended without the cut at event %d" % k
                return res
            except nq.QemuDied:
                pass
            except nq.CommandTimeout as e:
                res["inconsistent"] += 1
                res["problems"].append("a command timed out before the cut: %s" % e)
                return res
            try:
                rc = vm.proc.wait(HANG_S)
            except subprocess.TimeoutExpired:
                rc = None
            watch.stop()
            err = vm.stderr_text()
            m = re.search(r"nhc_power_cut power-cut-at=(\d+), event ([\w-]+)", err)
            res["event"] = m.group(2) if m else None
            if watch.hung:
                # The power began to fail and QEMU stopped moving: killed, then judged as a
                # SIGKILL (nothing of the cut's own work done).
                res["hung"] = True
                res["inconsistent"] += 1
                res["problems"].append("QEMU hung at the cut (event %s), killed after %.1f s "
                                       "without using CPU; judged as killed" % (
                                           res["event"], watch.hung))
            elif rc != 0 or not m or int(m.group(1)) != k or \
                    "nvme-hybrid: power cut (power-cut-at=%d, " % k not in err:
                res["inconsistent"] += 1
                res["problems"].append("QEMU did not stop at the cut (exit %s): %s"
                                       % (rc, err.strip()[-600:]))
                return res
        finally:
            watch.stop()
            vm.close()
        res["seq"] = h.seq
        try:
            self.judge(wl, h, image, unsafe_before, res)
        except (nq.QemuDied, nq.CommandTimeout) as e:
            res["inconsistent"] += 1
            res["problems"].append("the restart failed: %s" % e)
        res["problems"] = h.problems + res["problems"]
        res["seconds"] = round(time.monotonic() - t0, 3)
        return res

    def judge(self, wl, h, image, unsafe_before, res):
        vm = self.start(wl, image)
        try:
            check = vm.qmp.execute("qom-get", path=QOM, property="x-check")
            if check != "ok":
                res["inconsistent"] += 1
                res["problems"].append("model check after the restart: %s" % check)
            j = Host(vm)
            j.setup(window=wl.window)
            unsafe = j.smart_unsafe_shutdowns()
            if unsafe != unsafe_before + 1:
                res["inconsistent"] += 1
                res["problems"].append("unsafe shutdowns %d -> %d" % (unsafe_before, unsafe))
            wlost, losses, wprob = judge_window(wl, j)
            res["window_lost"] = wlost
            if wprob:
                res["inconsistent"] += 1
            res["problems"] += losses + wprob
            observed = {}
            for slba, nlb in wl.regions:
                data = j.read_lbas(slba, nlb)
                for i in range(nlb):
                    observed[slba + i] = data[i * LBA:(i + 1) * LBA]
            lost, acked, details = judge_blocks(wl, h, observed)
            res["lost_by_class"] = {c: n for c, n in lost.items() if n}
            res["lost"] = sum(lost.values())
            res["acked"] = acked + (wl.fenced_bytes + wl.loaded_bytes if wl.window else 0)
            res["problems"] += details
        finally:
            vm.close()


def choose_points(total, n):
    """@n points spread evenly over 1..@total (all of them when n is None or >= total)."""
    if n is None or n >= total:
        return list(range(1, total + 1))
    return sorted({1 + (2 * i + 1) * total // (2 * n) for i in range(n)})


def run_point(args):
    qemu, wl_name, seed, steps, extra, workdir, k, unsafe, keep = args
    r = Runner(qemu, wl_name, seed, steps, extra, workdir)
    try:
        return r.point(k, unsafe, keep)
    except Exception as e:          # the campaign's own failure at this point: reported
        return dict(k=k, error="%s: %s" % (type(e).__name__, e), acked=0, lost=0,
                    window_lost=0, inconsistent=0, problems=[], lost_by_class={})
