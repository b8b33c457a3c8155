#!/usr/bin/python3
"""Experiment 3: multiplane scaling. Aggregate goodput of a 64-host all-to-all (4,032
connections) on P = 1, 2, 4, 8 planes against P x the single-plane figure.

Reads the run folders examples/experiments/multiplane.sh writes (planes<P>). Two goodput
figures per run, both from the whole-fabric rows (host -1) of goodput.csv:
  mean    all bytes placed / (last completion - first start) (= summary goodput_mean_gbps)
  steady  bytes placed between the times 10% and 90% of all bytes had been placed, divided by
          that time span (excludes the start-up ramp and the tail of the last flows)

    /usr/bin/python3 plots/exp-multiplane.py runs/exp3-multiplane -o multiplane.png
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exp_common import fabric_goodput, read_csv, read_summary  # noqa: E402


def steady(run, lo=0.1, hi=0.9):
    """Goodput (Gb/s) between the lo and hi fractions of all bytes placed."""
    t, dt, g = fabric_goodput(run)
    b = [gi * di * 1e3 / 8 for gi, di in zip(g, dt)]  # bytes per interval
    total = sum(b)
    acc, t_lo, t_hi, b_lo, b_hi = 0.0, None, None, 0.0, 0.0
    for ti, di, bi in zip(t, dt, b):
        if t_lo is None and acc + bi >= lo * total:
            t_lo, b_lo = ti - di, acc
        if t_hi is None and acc + bi >= hi * total:
            t_hi, b_hi = ti, acc + bi
        acc += bi
    return (b_hi - b_lo) * 8 / ((t_hi - t_lo) * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args()
    rows = []
    for p in (1, 2, 4, 8):
        run = os.path.join(args.folder, f"planes{p}")
        if not os.path.exists(os.path.join(run, "summary.pb.txt")):
            continue
        s = read_summary(run)
        flows = read_csv(run, "flows.csv")
        rows.append((p, s, steady(run), len(flows)))
    if not rows or rows[0][0] != 1:
        sys.exit("needs the planes1 run")
    one_mean = rows[0][1]["goodput_mean_gbps"]
    one_steady = rows[0][2]
    print("| Planes | Connections | Flow bytes | Completed | Mean goodput (Gb/s) | vs P x 1-plane "
          "| Steady goodput (Gb/s) | vs P x 1-plane | Drops | Retx | Sim time (us) | Wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p, s, st, n in rows:
        fb = int(s["bytes_total"] / max(n, 1))
        print(f"| {p} | {n} | {fb} | {int(s['flows_completed'])}/{n} "
              f"| {s['goodput_mean_gbps']:.0f} | {s['goodput_mean_gbps'] / (p * one_mean):.1%} "
              f"| {st:.0f} | {st / (p * one_steady):.1%} | {int(s['switch_drops'])} "
              f"| {int(s['retransmissions'])} | {s['sim_time_us']:.0f} | {s['wall_time_s']:.1f} |")
    if not args.output:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ps = [r[0] for r in rows]
    ax.plot(ps, [r[2] / 1e3 for r in rows], "o-", label="MetaRoCE, steady goodput")
    ax.plot(ps, [r[1]["goodput_mean_gbps"] / 1e3 for r in rows], "s--",
            label="MetaRoCE, mean goodput")
    ax.plot(ps, [p * one_steady / 1e3 for p in ps], "k:", label="P x 1-plane (steady)")
    ax.fill_between(ps, [0.9 * p * one_steady / 1e3 for p in ps],
                    [p * one_steady / 1e3 for p in ps], color="grey", alpha=0.2,
                    label="within 10%")
    ax.set_xticks(ps)
    ax.set_xticklabels([str(p) for p in ps])
    ax.set_xlabel("planes P")
    ax.set_ylabel("aggregate goodput (Tb/s)")
    ax.set_title("64-host all-to-all, 4,032 connections")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=130)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
