#!/usr/bin/python3
"""Experiment 6: packet spraying vs a single path on a fat-tree permutation. FCT slowdown
(fct / ideal fct, flows.csv) mean, p50, p99 and max for MetaRoCE spraying, MetaRoCE on one path
and RoCEv2 ECMP, against the htsim reference point (spraying about 1.2x ideal, single-path
ECMP about 5x).

Reads the run folders examples/experiments/spray.sh writes (k<K>-<arm>). Percentiles are
nearest-rank, as in summary.txt. Left: slowdown CDF per arm; right: mean / p99 / max bars.

    /usr/bin/python3 plots/exp-spray.py runs/exp6-spray -o spray.png
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exp_common import read_csv, read_summary  # noqa: E402

ARMS = [("spray", "MetaRoCE spray (8 paths)"), ("spray32", "MetaRoCE spray (32 paths)"),
        ("single", "MetaRoCE single path"), ("rocev2", "RoCEv2 ECMP (PFC+DCQCN)"),
        ("rocev2-nopfc", "RoCEv2 ECMP, no PFC"), ("rocev2-nodcqcn", "RoCEv2 ECMP, no DCQCN")]


def nearest_rank(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = max(0, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[i]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args()
    res = {}
    for k in (4, 8, 16):
        for arm, _ in ARMS:
            run = os.path.join(args.folder, f"k{k}-{arm}")
            if not os.path.exists(os.path.join(run, "summary.pb.txt")):
                continue
            flows = read_csv(run, "flows.csv")
            sd = sorted(float(f["slowdown"]) for f in flows if f["completed"] == "1")
            res[(k, arm)] = (sd, len(flows), read_summary(run))
    print("| k (hosts) | Arm | Flows done | Mean | p50 | p99 | Max | vs spray (mean / p99) "
          "| Drops | Retx | PFC pauses | Events | Wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (k, arm), (sd, n, s) in res.items():
        base = res.get((k, "spray"))
        mean = sum(sd) / len(sd)
        p99 = nearest_rank(sd, 0.99)
        rel = "-"
        if base and arm != "spray":
            bm = sum(base[0]) / len(base[0])
            rel = f"{mean / bm:.2f}x / {p99 / nearest_rank(base[0], 0.99):.2f}x"
        name = dict(ARMS)[arm]
        print(f"| {k} ({k ** 3 // 4}) | {name} | {len(sd)}/{n} | {mean:.2f} "
              f"| {nearest_rank(sd, 0.5):.2f} | {p99:.2f} | {sd[-1]:.2f} | {rel} "
              f"| {int(s['switch_drops'])} | {int(s['retransmissions'])} "
              f"| {int(s['pfc_pauses'])} | {int(s['events'])} | {s['wall_time_s']:.1f} |")
    if not args.output:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ks = sorted({k for k, _ in res})
    fig, axes = plt.subplots(len(ks), 2, figsize=(10, 3.6 * len(ks)), squeeze=False)
    for row, k in enumerate(ks):
        ax, bx = axes[row]
        for arm, name in ARMS:
            if (k, arm) not in res:
                continue
            sd = res[(k, arm)][0]
            ax.plot(sd, [(i + 1) / len(sd) for i in range(len(sd))], label=name)
        ax.axvline(1.2, color="grey", ls=":", lw=1)
        ax.axvline(5.0, color="grey", ls="--", lw=1)
        ax.text(1.2, 0.05, " htsim spray ~1.2x", fontsize=7, color="grey")
        ax.text(5.0, 0.05, " htsim ECMP ~5x", fontsize=7, color="grey")
        ax.set_xscale("log")
        ax.set_xlabel("FCT slowdown (fct / ideal)")
        ax.set_ylabel("CDF of flows")
        ax.set_title(f"permutation, k = {k} fat tree ({k ** 3 // 4} hosts)", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
        stats = ["mean", "p99", "max"]
        width = 0.8 / len(ARMS)
        for i, (arm, name) in enumerate(ARMS):
            if (k, arm) not in res:
                continue
            sd = res[(k, arm)][0]
            vals = [sum(sd) / len(sd), nearest_rank(sd, 0.99), sd[-1]]
            xs = [j + (i - (len(ARMS) - 1) / 2) * width for j in range(len(stats))]
            bx.bar(xs, vals, width, label=name)
            for x, v in zip(xs, vals):
                bx.text(x, v, f"{v:.1f}", ha="center", va="bottom", fontsize=7)
        bx.axhline(1.2, color="grey", ls=":", lw=1)
        bx.axhline(5.0, color="grey", ls="--", lw=1)
        bx.set_xticks(range(len(stats)))
        bx.set_xticklabels(stats)
        bx.set_ylabel("FCT slowdown")
    fig.tight_layout()
    fig.savefig(args.output, dpi=130)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
