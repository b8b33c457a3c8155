#!/usr/bin/python3
"""Experiment 5: N-to-1 incast with and without the receiver's rate hint: time for every
sender to settle within 20% of its fair share, peak queue, drops; per-sender goodput figure.

Reads the run folders examples/experiments/incast.sh writes (n<N>-hint, n<N>-nohint), each
with flow_goodput.csv and queues.csv (output.flow_goodput / output.queue_peaks). Definitions:
  fair share F   the receiver's mean goodput while all N senders are active (from the first
                 start to the first flow completion), divided by N
  window W       per-sender rate = bytes placed in a sliding window of W us. At fair share a
                 sender delivers one MTU packet per N packet times, so W is chosen to hold
                 20 packets per sender at F (W = 20 * MTU * 8 / F); ±20% is then resolvable
                 (±1 packet is ±5%; a shorter window measures packet quantization, not rate)
  settle         the start of the first window from which on every sender's windowed rate
                 stays within ±20% of F until the first flow completes; in us after the
                 flows start and in unloaded RTTs (ideal_fct_us - bytes*8/rate of flows.csv).
                 Computed twice: on the delivered rate (bytes placed at the receiver) and on
                 the send rate (tx_packets of flow_goodput.csv x MTU, retransmissions
                 included; up to the time the first sender sent its last packet)
  loaded RTT     base RTT + the peak queue drained at the line rate (the RTT the first
                 packets behind the initial burst see)
  peak queue     queues.csv: the receiver's switch port (peer h<receiver>), its largest
                 egress queue; drops = switch drops (summary)

    /usr/bin/python3 plots/exp-incast.py runs/exp5-incast -o incast.png
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exp_common import read_csv, read_summary  # noqa: E402

MTU = 4096
VARIANTS = {"": "defaults", "-iw1": "first flight 8 packets",
            "-rto1ms": "RtoInitial 2 ms, RtoMin 1 ms"}


def analyse(run):
    s = read_summary(run)
    flows = read_csv(run, "flows.csv")
    n = len(flows)
    start = min(float(f["start_us"]) for f in flows)
    first_done = min(float(f["finish_us"]) if f["completed"] == "1" else 1e18 for f in flows)
    rate_gbps = 100.0
    rtt = max(float(f["ideal_fct_us"]) - int(f["bytes"]) * 8 / (rate_gbps * 1e3) for f in flows)
    recv = flows[0]["dst"]
    # Per-flow byte series.
    series = {}
    txs = {}
    for r in read_csv(run, "flow_goodput.csv"):
        fid = r["flow_id"]
        t = float(r["time_us"])
        series.setdefault(fid, []).append((t, int(r["bytes"])))
        txs.setdefault(fid, []).append(int(r.get("tx_packets") or 0))
    ids = sorted(series, key=int)
    times = [t for t, _ in series[ids[0]]]
    dt = times[1] - times[0]
    # Aggregate while all active.
    active_bytes = sum(b for fid in ids for t, b in series[fid] if start < t <= first_done)
    agg = active_bytes * 8 / ((first_done - start) * 1e3)
    fair = agg / n
    window = 20 * MTU * 8 / (fair * 1e3)  # us holding 20 packets per sender at fair share
    k = max(1, int(round(window / dt)))
    window = k * dt
    # Windowed per-sender rates at every sample time t (window (t - W, t]).
    cum = {fid: [0] for fid in ids}
    for fid in ids:
        for _, b in series[fid]:
            cum[fid].append(cum[fid][-1] + b)
    cum_tx = {fid: [0] for fid in ids}
    for fid in ids:
        for b in txs[fid]:
            cum_tx[fid].append(cum_tx[fid][-1] + b * MTU)

    # The send-rate test ends when the first sender has sent its last packet.
    last_tx = min(max((t for (t, _), x in zip(series[fid], txs[fid]) if x), default=0)
                  for fid in ids)

    def settle_of(c, until):
        last_bad_start = None
        worst = []
        for i in range(k, len(times) + 1):
            t_end = times[i - 1]
            if t_end > until:
                break
            rates = [(c[fid][i] - c[fid][i - k]) * 8 / (window * 1e3) for fid in ids]
            dev = max(abs(r / fair - 1) for r in rates)
            worst.append((t_end - window, dev))
            if dev > 0.2:
                last_bad_start = t_end - window
        ok_from = None
        if worst:
            if last_bad_start is None:
                ok_from = worst[0][0]
            elif last_bad_start + dt <= worst[-1][0]:
                ok_from = last_bad_start + dt
        return (ok_from - start) if ok_from is not None else None, worst

    settle, worst = settle_of(cum, first_done)
    settle_tx, worst_tx = settle_of(cum_tx, last_tx)
    # Jain's fairness over the bytes delivered while all active.
    per = [sum(b for t, b in series[fid] if start < t <= first_done) for fid in ids]
    jain = sum(per) ** 2 / (n * sum(x * x for x in per)) if sum(per) else 0
    peak = 0
    peak_t = 0
    buf_peak = 0
    for r in read_csv(run, "queues.csv"):
        if r["peer"] == f"h{recv}" and int(r["peak_queue_bytes"]) >= peak:
            peak, peak_t = int(r["peak_queue_bytes"]), float(r["peak_queue_time_us"])
        if r["port"] == "-1":
            buf_peak = max(buf_peak, int(r["peak_queue_bytes"]))
    fcts = [float(f["fct_us"]) for f in flows if f["completed"] == "1"]
    loaded_rtt = rtt + peak * 8 / (rate_gbps * 1e3)
    return {"n": n, "summary": s, "fair": fair, "agg": agg, "window": window, "settle": settle,
            "settle_tx": settle_tx, "worst_tx": worst_tx, "cum_tx": cum_tx,
            "rtt": rtt, "loaded_rtt": loaded_rtt, "jain": jain, "peak": peak, "peak_t": peak_t, "buf_peak": buf_peak,
            "series": series, "ids": ids, "times": times, "cum": cum, "k": k, "start": start,
            "first_done": first_done, "fct_min": min(fcts), "fct_max": max(fcts),
            "worst": worst}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args()
    runs = {}
    for n, hint, variant in ((32, "hint", ""), (32, "nohint", ""), (64, "hint", ""),
                             (64, "nohint", ""), (64, "hint", "-iw1"), (64, "nohint", "-iw1"),
                             (64, "hint", "-rto1ms"), (64, "nohint", "-rto1ms")):
        run = os.path.join(args.folder, f"n{n}-{hint}{variant}")
        if os.path.exists(os.path.join(run, "summary.pb.txt")):
            runs[(n, hint, variant)] = analyse(run)
    print("| Senders | Rate hint | Variant | Fair share (Gb/s) | Aggregate (Gb/s) | Window W (us) "
          "| Settle, send rate: us (RTTs; loaded RTTs) "
          "| Settle, delivered rate: us (RTTs; loaded RTTs) | Jain "
          "| Peak queue (KiB) at (us) "
          "| Peak buffer (KiB) | Drops | Retx | Timeouts | ECN marks | FCT min-max (us) "
          "| Wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def fmt(st, r):
        if st is None:
            return "never"
        if st <= r["times"][r["k"] - 1] - r["window"] - r["start"] + 1e-9:
            return f"within the first window (<= {r['window']:.0f})"
        return f"{st:.0f} ({st / r['rtt']:.0f}; {st / r['loaded_rtt']:.1f})"
    for (n, hint, variant), r in runs.items():
        s = r["summary"]
        print(f"| {n} | {'on' if hint == 'hint' else 'off'} | {VARIANTS[variant]} "
              f"| {r['fair']:.2f} | {r['agg']:.1f} "
              f"| {r['window']:.0f} | {fmt(r['settle_tx'], r)} "
              f"| {fmt(r['settle'], r)} | {r['jain']:.3f} ", end="")
        print(f"| {r['peak'] / 1024:.0f} at {r['peak_t']:.1f} | {r['buf_peak'] / 1024:.0f} "
              f"| {int(s['switch_drops'])} | {int(s['retransmissions'])} | {int(s['timeouts'])} "
              f"| {int(s['ecn_marked'])} | {r['fct_min']:.0f}-{r['fct_max']:.0f} "
              f"| {s['wall_time_s']:.2f} |")
    for (n, hint, variant), r in runs.items():
        print(f"n{n}-{hint}{variant}: unloaded RTT {r['rtt']:.2f} us, loaded RTT {r['loaded_rtt']:.1f} us")
    if not args.output:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = list(runs)
    cols = min(4, len(keys))
    blocks = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(2 * blocks, cols, figsize=(3.6 * cols, 5 * blocks),
                             squeeze=False)
    for j, key in enumerate(keys):
        r = runs[key]
        c = j % cols
        ax = axes[2 * (j // cols)][c]
        k = r["k"]
        ts = r["times"][k - 1:]
        for key2, label, color in (("cum", "delivered", "C0"), ("cum_tx", "sent", "C1")):
            per = [[(c[i] - c[i - k]) * 8 / (r["window"] * 1e3) for i in range(k, len(c))]
                   for c in (r[key2][fid] for fid in r["ids"])]
            lo = [min(v) for v in zip(*per)]
            hi = [max(v) for v in zip(*per)]
            ax.fill_between(ts, lo, hi, color=color, alpha=0.3,
                            label=f"{label}: min-max over senders")
        ax.axhline(r["fair"], color="k", lw=1)
        ax.axhspan(0.8 * r["fair"], 1.2 * r["fair"], color="grey", alpha=0.25)
        ax.set_ylim(0, 3 * r["fair"])
        ax.set_title(f"{key[0]}-to-1, hint {'on' if key[1] == 'hint' else 'off'}"
                     + (f"\n{VARIANTS[key[2]]}" if key[2] else ""), fontsize=8)
        ax.set_ylabel(f"Gb/s per sender ({r['window']:.0f} us window)", fontsize=7)
        ax.legend(fontsize=6, loc="upper right")
        ax2 = axes[2 * (j // cols) + 1][c]
        ax2.sharex(ax)
        ax2.plot([w[0] for w in r["worst_tx"]], [w[1] for w in r["worst_tx"]], lw=0.8,
                 label="send rate")
        ax2.plot([w[0] for w in r["worst"]], [w[1] for w in r["worst"]], lw=0.8,
                 label="delivered rate")
        ax2.legend(fontsize=7)
        ax2.axhline(0.2, color="red", lw=0.8)
        ax2.set_yscale("log")
        ax2.set_ylabel("worst sender |rate/F - 1| (window start)", fontsize=7)
        ax2.set_xlabel("time (us)")
        for st in (r["settle"], r["settle_tx"]):
            if st is not None:
                ax2.axvline(r["start"] + st, color="green", lw=0.8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=130)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
