#!/usr/bin/python3
"""Experiment 2: 64-host ring all-reduce and all-to-all, MetaRoCE vs RoCEv2 (+PFC +DCQCN) vs
RoCEv2 without PFC (go-back-N, and IRN), loss-free and at 1% loss: completion time and bus
bandwidth.

Reads the run folders examples/experiments/collectives.sh writes (<coll>-<arm>-loss<p>):
all-reduce from collectives.csv (duration_us, busbw_gbps); all-to-all (WRITEs, and READs:
a flow's src is the host that reads) from flows.csv
(completion = last finish_us - first start_us; bus bandwidth, NCCL's all-to-all convention
algbw * (n-1)/n, = bytes a rank sends to the other ranks * 8 / completion time). Prints the
Markdown table and draws two bar panels.

    /usr/bin/python3 plots/exp-collectives.py runs/exp2-collectives -o collectives.png
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exp_common import read_csv, read_summary  # noqa: E402

ARMS = [("metaroce", "MetaRoCE"), ("rocev2-pfc", "RoCEv2+PFC+DCQCN"),
        ("rocev2-nopfc", "RoCEv2 no PFC"), ("rocev2-irn", "RoCEv2 IRN, no PFC")]
COLLS = [("allreduce", "ring all-reduce"), ("alltoall", "all-to-all"),
         ("alltoall-read", "READ all-to-all")]
LOSSES = ["0", "0.01"]


def measure(run, coll):
    """(completion_us or None, busbw_gbps, completed, summary) of one run folder."""
    s = read_summary(run)
    if coll == "allreduce":
        rows = read_csv(run, "collectives.csv")
        r = rows[0]
        done = r["completed"] == "1"
        return (float(r["duration_us"]) if done else None,
                float(r["busbw_gbps"]) if done else 0.0, done, s)
    flows = read_csv(run, "flows.csv")
    done = all(f["completed"] == "1" for f in flows)
    ranks = len({f["src"] for f in flows} | {f["dst"] for f in flows})
    per_rank = {}
    for f in flows:
        per_rank[f["src"]] = per_rank.get(f["src"], 0) + int(f["bytes"])
    if not done:
        return None, 0.0, False, s
    t = max(float(f["finish_us"]) for f in flows) - min(float(f["start_us"]) for f in flows)
    sent = sum(per_rank.values()) / ranks
    assert ranks > 1
    return t, sent * 8 / (t * 1e3), True, s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="the folder holding the 24 run folders")
    ap.add_argument("-o", "--output", default=None, help="figure file (PNG/PDF)")
    args = ap.parse_args()

    res = {}
    for coll, _ in COLLS:
        for loss in LOSSES:
            for arm, _ in ARMS:
                run = os.path.join(args.folder, f"{coll}-{arm}-loss{loss}")
                if os.path.exists(os.path.join(run, "summary.pb.txt")):
                    res[(coll, loss, arm)] = measure(run, coll)

    print("| Collective | Loss | Transport | Completion (us) | Bus bw (Gb/s) "
          "| Completion vs MetaRoCE | Retx | Timeouts | Link losses | Switch drops "
          "| PFC pauses | Wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for coll, cname in COLLS:
        for loss in LOSSES:
            base = res.get((coll, loss, "metaroce"))
            for arm, aname in ARMS:
                r = res.get((coll, loss, arm))
                if r is None:
                    print(f"| {cname} | {float(loss):.0%} | {aname} | (not run) |||||||")
                    continue
                t, bw, done, s = r
                if arm == "metaroce":
                    rel = "-"
                elif base and base[0] and t:
                    rel = f"{t / base[0]:.2f}x"
                elif arm == "metaroce":
                    rel = "-"
                elif base and base[0]:
                    rel = "RoCEv2 did not complete"
                else:
                    rel = "n/a"
                tt = f"{t:.0f}" if t else f"not done by {s['sim_time_us']:.0f}"
                print(f"| {cname} | {float(loss):.0%} | {aname} | {tt} | {bw:.1f} | {rel} "
                      f"| {int(s.get('retransmissions', 0))} | {int(s.get('timeouts', 0))} "
                      f"| {int(s.get('channel_drops', 0))} "
                      f"| {int(s.get('switch_drops', 0))} | {int(s.get('pfc_pauses', 0))} "
                      f"| {s.get('wall_time_s', 0):.1f} |")

    if not args.output:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(COLLS), figsize=(16, 4))
    width = 0.8 / len(ARMS)
    for ax, (coll, cname) in zip(axes, COLLS):
        groups = [f"{cname}\nloss {float(l):.0%}" for l in LOSSES]
        for i, (arm, aname) in enumerate(ARMS):
            vals = [res.get((coll, l, arm), (None, 0.0, False, {}))[1] for l in LOSSES]
            xs = [g + (i - (len(ARMS) - 1) / 2) * width for g in range(len(LOSSES))]
            bars = ax.bar(xs, vals, width, label=aname)
            for x, v in zip(xs, vals):
                label = "DNF" if v <= 0 else (f"{v:.1f}" if v < 10 else f"{v:.0f}")
                ax.text(x, v, label, ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(LOSSES)))
        ax.set_xticklabels(groups)
        ax.set_ylabel("bus bandwidth (Gb/s)")
        ax.axhline(100, color="grey", lw=0.8, ls=":")
        ax.set_title(f"{cname}, 64 hosts, 100 Gb/s")
    axes[-1].legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(args.output, dpi=130)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
