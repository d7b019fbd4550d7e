"""scripts/bench-fidelity-sim's device: the geometry and timing both simulators are given, the
workload's fixed facts, and the analytical throughput bound of a run from its counters."""
import math

SEED = 20260110
SECTOR = 512
WS_PCT = 99            # the requests cover the first 99% of the logical space (as MQSim's Working_Set_Percentage)


class Device:
    """The geometry and timing both simulators are given."""

    def __init__(self, a):
        self.channels, self.ways, self.dies, self.planes = a.channels, a.ways, a.dies, a.planes
        self.blocks, self.pages, self.page_size = a.blocks, a.pages, a.page_size
        self.t_read, self.t_prog, self.t_erase = a.t_read, a.t_prog, a.t_erase
        self.mbps = a.channel_mbps
        self.op_ratio = a.op_ratio
        self.ndies = self.channels * self.ways * self.dies
        self.nplanes = self.ndies * self.planes
        self.physical_pages = self.nplanes * self.blocks * self.pages
        # MQSim's rule: logical pages = (unsigned)(physical pages * (1 - ratio))
        self.logical_pages = int(self.physical_pages * (1 - self.op_ratio))
        self.capacity = self.logical_pages * self.page_size
        # our t_xfer: page-size / channel-mbps (10^6 bytes per second), in ns
        self.t_xfer = self.page_size * 1000 // self.mbps

    def props(self):
        return ",".join([
            "preset=none", f"channels={self.channels}", f"ways={self.ways}", f"dies={self.dies}",
            f"planes={self.planes}", f"blocks={self.blocks}", f"pages={self.pages}",
            f"page-size={self.page_size}",
            # with explicit blocks, op only bounds the logical space (docs/engine.md, Geometry);
            # the real over-provisioning is what capacity leaves of the physical pages, MQSim's
            # 12.5%, which op (a whole percent) cannot state
            "op=1",
            f"t-read={self.t_read}ns", f"t-prog={self.t_prog}ns", f"t-erase={self.t_erase}ns",
            f"channel-mbps={self.mbps}", "ftl=page", "gc=greedy", "unwritten-reads=flash",
            # MQSim's geometry has no blocks kept for stream frontiers (docs/placement.md)
            "streams=0"])

    def high_watermark(self, spare, gc_critical=3, gc_low=10, gc_high=20):
        """Free blocks per plane our background GC restores (ftl/blocks.c watermarks(), with
        the default percentages and the GC reserve of one block)."""
        pct = lambda p: (spare * p + 99) // 100  # noqa: E731
        crit = max(2, pct(gc_critical))
        low = max(crit + 1, pct(gc_low))
        return max(low, pct(gc_high))


def bound(c, t_read, t_prog, t_erase, t_xfer, ndies, nchannels):
    """Throughput bound of a run in requests per second from its counters @c (a dict with
    requests, write_pages, page_reads, read_ops, page_programs, program_ops, erases).
    Each die is busy tR per read operation, tPROG per program operation, t_xfer per page moved
    over its bus (our model holds the die during its transfers) and tBERS per erase; each
    channel t_xfer per page moved. Work spread evenly over the dies (channels) bounds the rate."""
    moved = c["page_reads"] + c["page_programs"]
    die_ns = (c["read_ops"] * t_read + c["program_ops"] * t_prog + moved * t_xfer
              + c["erases"] * t_erase)
    chan_ns = moved * t_xfer
    req = c["requests"]
    r = {"die_ns_per_request": die_ns / req if req else 0.0,
         "die_bound_iops": ndies * 1e9 * req / die_ns if die_ns else math.inf,
         "channel_bound_iops": nchannels * 1e9 * req / chan_ns if chan_ns else math.inf}
    r["bound_iops"] = min(r["die_bound_iops"], r["channel_bound_iops"])
    r["limit"] = "die" if r["die_bound_iops"] <= r["channel_bound_iops"] else "channel"
    w = c["write_pages"]
    if w:
        r["waf"] = c["page_programs"] / w
        r["erases_per_page"] = c["erases"] / w
        r["die_ns_per_write_page"] = die_ns / w
    return r
