"""scripts/crashpoints' workloads, each a deterministic function of its seed: block writes, reads
and Flushes on a volatile or a capacitor-backed buffer, and the BAR1 window's pins, stores,
barriers, syncs and DMA among block I/O."""
import random

from nh.crashpoints.host import BA_FLUSH, BA_PIN, BA_READ_DMA, BA_SYNC, CampaignError, LBA, PPND, REG_PMRSTS, WINDOW_SIZE, decode, nq, patterns


class Workload:
    name = None
    props = ""
    volatile = True
    regions = ()            # (slba, nlb) prefilled and judged
    window = False

    def __init__(self, seed, steps):
        self.seed = seed
        self.steps = steps

    def prefill(self, h):
        for slba, nlb in self.regions:
            for s in range(slba, slba + nlb, 64):
                raw, cmd = h.write_item(0, s, min(64, slba + nlb - s), True)
                h.submit(h.ioq, [(raw, cmd)])
                h.wait([cmd])
                if not cmd.ok:
                    raise CampaignError("prefill write at %d: %s" % (s, cmd.status))
        raw, cmd = h.flush_item()
        h.submit(h.ioq, [(raw, cmd)])
        h.wait([cmd])

    def run(self, h):
        raise NotImplementedError

    def block_step(self, h, rng, region, nwid, max_nlb=64):
        """A batch of 1-4 block commands on region (slba, nlb): writes (a fifth FUA), reads,
        Flushes; submitted together or one doorbell each.  Returns the next version number."""
        slba0, nlb0 = region
        items = []
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            if r < 0.66:
                nlb = min(rng.choice((1, 1, 2, 3, 4, 8, 8, 16, 24, 32, 64)), max_nlb)
                slba = slba0 + rng.randrange(0, nlb0 - nlb + 1)
                items.append(h.write_item(nwid, slba, nlb, rng.random() < 0.2))
                nwid += 1
            elif r < 0.88:
                nlb = rng.choice((1, 4, 8, 32))
                items.append(h.read_item(slba0 + rng.randrange(0, nlb0 - nlb + 1), nlb))
            else:
                items.append(h.flush_item())
        if rng.random() < 0.5:
            h.submit(h.ioq, items)
        else:
            for it in items:
                h.submit(h.ioq, [it])
        return nwid

    def settle_step(self, h, rng):
        """Let time pass: wait for everything, for the oldest command, or a little while."""
        r = rng.random()
        if r < 0.25:
            h.wait_all()
        elif r < 0.6 and h.inflight:
            h.wait([next(iter(h.inflight.values()))])
        else:
            h.step(rng.choice((1_000, 5_000, 20_000, 100_000)))
            h.reap()
        h.wait_io_below(24)


class BlockWorkload(Workload):
    regions = ((0, 4096),)          # 2 MiB, twice the buffer

    def run(self, h):
        rng = random.Random(self.seed * 7919 + 1)
        h.on_ack = lambda cmd: h.check_read(cmd) if cmd.kind == "read" else None
        nwid = 1
        for _ in range(self.steps):
            nwid = self.block_step(h, rng, self.regions[0], nwid)
            self.settle_step(h, rng)
        h.wait_all()


class BlockVolatile(BlockWorkload):
    name = "block-volatile"
    props = "preset=none,buffer=lru,buffer-size=1M,buffer-volatile=on,ba-size=0"
    volatile = True


class BlockDurable(BlockWorkload):
    name = "block-durable"
    props = "preset=none,buffer=lru,buffer-size=1M,buffer-volatile=off,ba-size=0"
    volatile = False


class WindowWorkload(Workload):
    """BA entries e (0..7) at window offset e*64K on LBAs 4096+32e, 4-16 LBAs each; block
    writes on LBAs 0..2047; NVMe Reads into the window from LBAs 8192..8703 (never written
    after the prefill), into a pinned entry or the unpinned upper half of the window."""
    name = "window"
    props = ("preset=none,buffer=lru,buffer-size=1M,buffer-volatile=on,ba-size=%d,ba-entries=8"
             % WINDOW_SIZE)
    volatile = True
    window = True
    ENTRIES = 8
    SLOT = 64 << 10
    A = (0, 2048)
    B = (4096, 256)
    C = (8192, 512)
    regions = (A, B, C)

    def __init__(self, seed, steps):
        super().__init__(seed, steps)
        self.now = bytearray(WINDOW_SIZE)       # the window as the host last wrote or saw it
        self.committed = bytearray(WINDOW_SIZE)  # what must survive a cut
        self.pending = []                       # [(off, data, kind)]: stores not fenced, DMA
        self.entry = {}                         # eid -> (off, slba, nlb) while pinned
        self.ba_cmds = {e: [] for e in range(self.ENTRIES)}
        self.dma_into = {}                      # eid or None -> Reads into it in flight
        self.fenced_bytes = 0
        self.loaded_bytes = 0

    def run(self, h):
        self.h = h
        rng = random.Random(self.seed * 104729 + 3)
        h.on_ack = self.acked
        nwid = 1
        ops = ("pin", "store", "fence", "sync", "baflush", "readdma", "readwin", "block",
               "settle")
        weights = (12, 22, 12, 7, 6, 5, 12, 16, 8)
        for _ in range(self.steps):
            op = rng.choices(ops, weights)[0]
            free = [e for e in range(self.ENTRIES) if e not in self.entry]
            quiet = [e for e in self.entry if not self.dma_into.get(e)]
            if op == "pin" and free:
                nwid = self.pin(rng, rng.choice(free), nwid)
            elif op == "store" and quiet:
                self.store(rng, rng.choice(quiet))
            elif op == "fence":
                self.fence()
            elif op in ("sync", "baflush") and quiet:
                self.sync(rng.choice(quiet), op == "baflush")
            elif op == "readdma" and quiet:
                self.read_dma(rng, rng.choice(quiet))
            elif op == "readwin":
                self.read_into_window(rng, rng.choice(quiet + [None]) if quiet else None)
            elif op == "block":
                nwid = self.block_step(h, rng, self.A, nwid, max_nlb=32)
                if self.entry and rng.random() < 0.1:
                    nwid = self.write_pinned(rng, rng.choice(list(self.entry)), nwid)
            else:
                self.settle_step(h, rng)
            h.wait_io_below(24)
        h.wait_all()
        self.fence()

    # the steps
    def pin(self, rng, eid, nwid):
        h = self.h
        off, nlb = eid * self.SLOT, rng.randint(4, 16)
        slba = self.B[0] + 32 * eid
        # writes to the LBAs still in flight: the pin must wait for them and load their data
        for _ in range(rng.choice((0, 0, 1, 2))):
            n = rng.randint(1, nlb)
            s = slba + rng.randrange(0, nlb - n + 1)
            h.submit(h.ioq, [h.write_item(nwid, s, n, rng.random() < 0.3)])
            nwid += 1
        raw, cmd = h.ba_item(BA_PIN, "pin", eid, nbytes=nlb * LBA, off=off, slba=slba, nlb=nlb)
        self.ba_cmds[eid].append(cmd)
        h.submit(h.c.admin, [(raw, cmd)])
        h.wait([cmd])
        if cmd.ok:
            data = h.qt.memread(h.bar1 + off, nlb * LBA)
            self.now[off:off + len(data)] = data
            self.committed[off:off + len(data)] = data
            self.pending = [p for p in self.pending
                            if p[0] + len(p[1]) <= off or p[0] >= off + len(data)]
            self.entry[eid] = (off, slba, nlb)
            self.loaded_bytes += len(data)
            for i in range(nlb):
                got = decode(data[i * LBA:(i + 1) * LBA], slba + i)
                if not h.known(slba + i, got):
                    h.problems.append("BA_PIN %d loaded LBA %d with no version of it"
                                      % (eid, slba + i))
        return nwid

    def write_pinned(self, rng, eid, nwid):
        """A block write to a pinned entry's LBAs: refused (Access Denied)."""
        h = self.h
        _, slba, nlb = self.entry[eid]
        raw, cmd = h.write_item(nwid, slba + rng.randrange(0, nlb), 1, False)
        cmd.args["pinned"] = True
        h.submit(h.ioq, [(raw, cmd)])
        return nwid + 1

    def store(self, rng, eid):
        off, _, nlb = self.entry[eid]
        length = nlb * LBA
        for _ in range(rng.randint(1, 3)):
            n = rng.choice((1, 8, 64, 100, 512, 600, length))
            n = min(n, length)
            o = off + rng.randrange(0, length - n + 1)
            data = rng.randbytes(n)
            self.h.qt.memwrite(self.h.bar1 + o, data)
            self.now[o:o + n] = data
            self.pending.append((o, data, "store"))

    def fence(self):
        """The persist barrier: PMRSTS read until PPND is 0; the stores before it are then
        persisted (and must survive)."""
        h = self.h
        while h.c.rd32(REG_PMRSTS) & PPND:
            h.step(250)
        h.tick()
        keep = []
        for o, data, kind in self.pending:
            if kind == "store":
                self.committed[o:o + len(data)] = data
                self.fenced_bytes += len(data)
            else:
                keep.append((o, data, kind))
        self.pending = keep

    def sync(self, eid, release):
        h = self.h
        off, slba, nlb = self.entry[eid]
        raw, cmd = h.ba_item(BA_FLUSH if release else BA_SYNC, "baflush" if release else "sync",
                             eid, nbytes=nlb * LBA)
        for i in range(nlb):
            h.versions.setdefault(slba + i, []).append(
                (decode(bytes(self.now[off + i * LBA:off + (i + 1) * LBA]), slba + i), cmd))
        self.ba_cmds[eid].append(cmd)
        h.submit(h.c.admin, [(raw, cmd)])
        h.wait([cmd])
        if cmd.ok and release:
            del self.entry[eid]

    def read_dma(self, rng, eid):
        h = self.h
        off, _, nlb = self.entry[eid]
        length = nlb * LBA
        o = rng.randrange(0, length, 4)
        n = rng.randint(1, length - o)
        buf = h.c.dma_buffer(n)
        raw, cmd = h.ba_item(BA_READ_DMA, "readdma", eid, off=o, len=n, buf=buf)
        h.submit(h.c.admin, [(raw, cmd)])
        h.wait([cmd])
        if cmd.ok and h.qt.memread(buf, n) != bytes(self.now[off + o:off + o + n]):
            h.problems.append("BA_READ_DMA %d at %d+%d returned other bytes than the window"
                              % (eid, o, n))
        elif not cmd.ok:
            h.problems.append("BA_READ_DMA %d failed: %s" % (eid, cmd.status))

    def read_into_window(self, rng, eid):
        """An NVMe Read of never-rewritten LBAs whose PRPs point into the window."""
        h = self.h
        if eid is None:
            nlb = rng.randint(1, 16)
            o = WINDOW_SIZE // 2 + rng.randrange(0, WINDOW_SIZE // 2 - nlb * LBA, 4)
        else:
            off, _, enlb = self.entry[eid]
            nlb = rng.randint(1, enlb)
            o = off + rng.randrange(0, (enlb - nlb) * LBA + 1, 4)
        slba = self.C[0] + rng.randrange(0, self.C[1] - nlb + 1)
        raw, cmd = h.read_item(slba, nlb, buf=h.bar1 + o)
        cmd.args.update(eid=eid, woff=o)
        self.dma_into.setdefault(eid, []).append(cmd)
        self.pending.append((o, patterns(0, slba, nlb), cmd))
        h.submit(h.ioq, [(raw, cmd)])

    def supersede(self, off, length):
        """Bytes [off, off+length) of the window were overwritten by the device: stores made
        before, not yet fenced, no longer hold them (the next fence must not bring them back)."""
        keep = []
        for o, data, kind in self.pending:
            if kind != "store" or o + len(data) <= off or o >= off + length:
                keep.append((o, data, kind))
                continue
            if o < off:
                keep.append((o, data[:off - o], kind))
            if o + len(data) > off + length:
                keep.append((off + length, data[off + length - o:], kind))
        self.pending = keep

    def acked(self, cmd):
        h = self.h
        if cmd.kind == "write" and cmd.args.get("pinned") and cmd.ok:
            h.problems.append("a write to pinned LBA %d succeeded" % cmd.args["slba"])
        if cmd.kind != "read":
            return
        if cmd.args["buf"] < nq.RAM_SIZE:
            h.check_read(cmd)
            return
        # a Read into the window: its bytes are there now (or it failed and changed nothing)
        eid, o = cmd.args["eid"], cmd.args["woff"]
        self.dma_into[eid].remove(cmd)
        data = None
        keep = []
        for p in self.pending:
            if p[2] is cmd:
                data = p[1]
            else:
                keep.append(p)
        self.pending = keep
        if cmd.ok:
            self.now[o:o + len(data)] = data
            self.committed[o:o + len(data)] = data
            self.supersede(o, len(data))
            if h.qt.memread(h.bar1 + o, len(data)) != data:
                h.problems.append("NVMe Read into the window at %d+%d: other bytes there"
                                  % (o, len(data)))
        else:
            h.problems.append("NVMe Read into the window at %d failed: %s" % (o, cmd.status))


WORKLOADS = {w.name: w for w in (BlockVolatile, BlockDurable, WindowWorkload)}
DEFAULT_STEPS = {"block-volatile": 180, "block-durable": 180, "window": 200}
