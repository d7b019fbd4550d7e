"""scripts/bench-fidelity-sim's report: the analytical table, ours beside MQSim, and the plot."""
import math

from nh.fidelity.ours import label


def fmt(x, spec="{:,.0f}"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return spec.format(x)


def us(ns):
    return None if ns is None else ns / 1000.0


def table(head, rows):
    w = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i])  # noqa: E731
                               for i, c in enumerate(r))
    return "\n".join([line(head), line(["-" * x for x in w])] + [line(r) for r in rows])


def analytical_table(res):
    head = ["workload", "sched/alloc", "IOPS", "bound", "limit", "ratio", "WAF", "erases/pg",
            "die us/req", "die util", "chan util", "die busy ms", "chan busy ms", "rd p99 us",
            "wr p99 us", "queued"]
    rows = []
    for name, wl in res["workloads"].items():
        for run, r in wl["ours"].items():
            b = r["bound"]
            p99 = [fmt(us(r[d]["p99"]) if r[d]["count"] else None, "{:,.0f}")
                   for d in ("read", "write")]
            rows.append([name, run, fmt(r["iops"]), fmt(b["bound_iops"]), b["limit"],
                         fmt(r["ratio"], "{:.3f}"), fmt(b.get("waf"), "{:.3f}"),
                         fmt(b.get("erases_per_page"), "{:.4f}"),
                         fmt(us(b["die_ns_per_request"]), "{:.1f}"),
                         fmt(r["die_util"], "{:.3f}"), fmt(r["chan_util"], "{:.3f}"),
                         fmt(None if r["die_busy_ns"] is None else r["die_busy_ns"] / 1e6),
                         fmt(None if r["chan_busy_ns"] is None else r["chan_busy_ns"] / 1e6)]
                        + p99 + [fmt(r["queued_ops"])])
        m = wl.get("mqsim")
        if m and "error" not in m:
            # MQSim reports no busy times nor percentiles
            b = m["bound"]
            rows.append([name, "MQSim", fmt(m["iops"]), fmt(b["bound_iops"]), b["limit"],
                         fmt(m["ratio"], "{:.3f}"), fmt(b.get("waf"), "{:.3f}"),
                         fmt(b.get("erases_per_page"), "{:.4f}"),
                         fmt(us(b["die_ns_per_request"]), "{:.1f}")] + ["-"] * 7)
    return table(head, rows)


def side_by_side(res):
    head = ["workload", "model", "IOPS", "rd mean", "rd p50", "rd p99", "rd p99.9", "rd max",
            "wr mean", "wr p50", "wr p99", "wr p99.9", "wr max", "WAF", "erases", "valid/victim"]
    rows = []
    for name, wl in res["workloads"].items():
        for run, r in wl["ours"].items():
            lat = []
            for d in ("read", "write"):
                h = r[d] if r[d]["count"] else {}
                lat += [fmt(us(h.get(k)), "{:,.1f}") for k in ("mean", "p50", "p99", "p999")]
                lat.append(fmt(us(h.get("max")), "{:,.1f}"))
            rows.append([name, "ours " + run, fmt(r["iops"])] + lat +
                        [fmt(r["waf"], "{:.3f}"), fmt(r["erases"]),
                         fmt(r["valid_per_victim"], "{:.1f}")])
        m = wl.get("mqsim")
        if m and "error" not in m:
            # MQSim gives one mean and one maximum per flow, reads and writes together
            rd = m["reads"] and not m["writes"]
            wr = m["writes"] and not m["reads"]
            one = [fmt(m["mean_us"], "{:,.1f}"), "-", "-", "-", fmt(m["max_us"], "{:,.1f}")]
            both = ["(all) " + fmt(m["mean_us"], "{:,.1f}"), "-", "-", "-",
                    "(all) " + fmt(m["max_us"], "{:,.1f}")]
            if rd:
                lat = one + ["-"] * 5
            elif wr:
                lat = ["-"] * 5 + one
            else:
                lat = both + ["-"] * 5
            rows.append([name, "MQSim", fmt(m["iops"])] + lat +
                        [fmt(m["waf"], "{:.3f}"), fmt(m["erases"]),
                         fmt(m["valid_per_victim"], "{:.1f}")])
        elif m:
            rows.append([name, "MQSim", m["error"]] + [""] * (len(head) - 3))
    return table(head, rows)


def plot(res, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = list(res["workloads"])
    series = {}
    for i, name in enumerate(names):
        wl = res["workloads"][name]
        for run, r in wl["ours"].items():
            tag = "" if run == "-" else " " + run
            series.setdefault("ours" + tag, [None] * len(names))[i] = r["iops"]
            series.setdefault("bound" + tag, [None] * len(names))[i] = r["bound"]["bound_iops"]
        m = wl.get("mqsim")
        if m and "error" not in m:
            series.setdefault("MQSim", [None] * len(names))[i] = m["iops"]
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(series))
    for j, (label, vals) in enumerate(series.items()):
        ax.bar([i + j * width for i in range(len(names))], [v or 0 for v in vals], width,
               label=label)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))])
    ax.set_xticklabels(names)
    ax.set_yscale("log")
    ax.set_ylabel("IOPS (4 KiB random, QD %d)" % res["config"]["qd"])
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path
