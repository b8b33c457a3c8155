#!/usr/bin/python3
"""Plot goodput under random loss, normalised to each transport's loss-free goodput, next to
the ideal selective-repeat bound 1 - p.

Two inputs (run with Debian's Python, which has matplotlib):

    /usr/bin/python3 plots/loss-sweep.py SWEEP_DIR [-o loss-sweep.png] [--csv loss-sweep.csv]
        a metaroce-sweep folder of the loss sweep (examples/sweeps/loss-sweep.json or the
        demo's examples/sweeps/demo-loss.json): reads index.json and every point's run
        folder (flows.csv, goodput.csv, hosts.csv, summary.pb.txt; docs/outputs.md), prints
        the table, writes it as CSV (default SWEEP_DIR/loss-sweep.csv; columns in
        docs/sweeps.md) and draws two panels: goodput while every flow runs (steady state),
        and goodput to the last completion (tail recovery included).

    /usr/bin/python3 plots/loss-sweep.py runs/<run>/results.csv [out.png]
        the results.csv of metaroce-engine-demo (engine-only testbed; columns transport,
        loss, goodput_gbps, normalized, ideal, retransmissions, timeouts, complete).
"""

import argparse
import csv
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweeplib  # noqa: E402

TICKS = [0, 0.1, 0.5, 1, 2, 5, 10]
ENGINE_LABELS = {
    "metaroce": "MetaRoCE (8 paths, SACK)",
    "rocev2": "RoCEv2 (go-back-N, DCQCN, no PFC)",
}


def _axes_style(ax, max_loss, xlabel):
    ax.set_xscale("symlog", linthresh=0.1)
    ticks = [t for t in TICKS if t <= max_loss * 1.0001] or [0]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks])
    ax.set_xlabel(xlabel)
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)


def default_title(rows):
    """The figure title, from what the runs recorded (topology, flows, link rate)."""
    setup = sweeplib.describe_setup(rows)
    return f"Goodput under random loss (ns-3 fabric, {setup})" if setup else \
        "Goodput under random loss (ns-3 fabric)"


def plot_sweep(rows, out, title=None, xlabel=None):
    """Draw the two panels. title and xlabel default to what the runs recorded
    (default_title, sweeplib.loss_axis_label)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title = title or default_title(rows)
    xlabel = xlabel or sweeplib.loss_axis_label(rows)
    ok = [r for r in rows if r["status"] == "ok" and "normalized" in r]
    max_loss = max((r["loss"] * 100 for r in rows), default=10)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    panels = [("steady_normalized", "while every flow runs (steady state)"),
              ("normalized", "to the last completion (tail recovery included)")]
    series = []
    for r in ok:
        if r["series"] not in series:
            series.append(r["series"])
    ideal = sorted({r["loss"] * 100 for r in rows})
    for ax, (key, sub) in zip(axes, panels):
        ax.plot(ideal, [1 - x / 100 for x in ideal], "k--", linewidth=1,
                label="ideal selective repeat (1-p)")
        for s in series:
            pts = sorted((r["loss"] * 100, r[key], r["complete"]) for r in ok
                         if r["series"] == s)
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                            label=sweeplib.series_label(s))
            bad = [(x, y) for x, y, done in pts if not done]
            if bad:
                ax.plot([p[0] for p in bad], [p[1] for p in bad], "x", color="k", markersize=8)
        ax.set_title(f"goodput {sub}", fontsize=10)
        _axes_style(ax, max_loss, xlabel)
    axes[0].set_ylabel("goodput / same transport's loss-free goodput")
    axes[0].legend(loc="lower left", fontsize=8)
    axes[1].plot([], [], "x", color="k", label="some flows unfinished at the stop time")
    axes[1].legend(loc="lower left", fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def sweep_mode(args):
    try:
        rows = sweeplib.loss_table(args.input)
    except (OSError, KeyError, ValueError) as e:
        print(f"error: cannot read the sweep {args.input}: {e}", file=sys.stderr)
        return 1
    print(sweeplib.format_loss_table(rows))
    csv_out = args.csv or os.path.join(args.input, "loss-sweep.csv")
    sweeplib.write_loss_csv(rows, csv_out)
    print(f"table: {csv_out}")
    out = args.output or os.path.join(args.input, "loss-sweep.png")
    try:
        plot_sweep(rows, out, args.title, args.xlabel)
    except ImportError:
        print("matplotlib is missing (use /usr/bin/python3): no plot", file=sys.stderr)
        return 1
    print(f"plot: {out}")
    return 0


def engine_demo_mode(path, out, title=None, xlabel=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = out or os.path.join(os.path.dirname(path) or ".", "loss-sweep.png")
    curves = defaultdict(list)
    ideal = []
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                loss = float(row["loss"]) * 100
                curves[row["transport"]].append(
                    (loss, float(row["normalized"]), row["complete"] == "1"))
                if row["transport"] == "metaroce":
                    ideal.append((loss, float(row["ideal"])))
    except (OSError, KeyError, ValueError) as e:
        print(f"error: cannot read {path}: {e}", file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    if ideal:
        xs, ys = zip(*sorted(ideal))
        ax.plot(xs, ys, "k--", linewidth=1, label="ideal selective repeat (1-p)")
    for name, pts in sorted(curves.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                label=ENGINE_LABELS.get(name, name))
        for x, y, ok in pts:
            if not ok:
                ax.annotate("incomplete", (x, y), fontsize=7, textcoords="offset points",
                            xytext=(0, 6), ha="center")
    _axes_style(ax, 10, xlabel or "random loss (%)")
    ax.set_ylabel("goodput / loss-free goodput")
    ax.legend(loc="lower left", fontsize=8)
    ax.set_title(title or "Goodput under loss (engine testbed, 100 Gb/s)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"plot: {out}")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("input", help="a metaroce-sweep folder, or an engine-demo results.csv")
    ap.add_argument("legacy_output", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("-o", "--output", help="PNG to write")
    ap.add_argument("--csv", help="table to write (sweep folders)")
    ap.add_argument("--title", help="figure title (default: from the runs' records, e.g. "
                    "'Goodput under random loss (ns-3 fabric, 8 flows, 2 x 8 leaf-spine, "
                    "100 Gb/s)')")
    ap.add_argument("--xlabel", help="x-axis label (default: from the loss scope the runs "
                    "recorded, e.g. end-to-end per data packet for HOST_DOWNLINKS)")
    args = ap.parse_args(argv[1:])
    args.output = args.output or args.legacy_output
    if os.path.isdir(args.input):
        return sweep_mode(args)
    return engine_demo_mode(args.input, args.output, args.title, args.xlabel)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
