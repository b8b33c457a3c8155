#!/usr/bin/env python3
"""Plot goodput under random loss, normalised to each transport's loss-free goodput.

Reads the results.csv written by metaroce-engine-demo (columns: transport, loss,
goodput_gbps, normalized, ideal, retransmissions, timeouts, complete) and writes a PNG next
to it. Run with Debian's Python, which has matplotlib:

    /usr/bin/python3 plots/loss-sweep.py runs/<run>/results.csv [out.png]
"""

import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {
    "metaroce": "MetaRoCE (8 paths, SACK)",
    "rocev2": "RoCEv2 (go-back-N, DCQCN, no PFC)",
}


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = argv[1]
    out = argv[2] if len(argv) > 2 else path.rsplit("/", 1)[0] + "/loss-sweep.png"
    curves = defaultdict(list)
    ideal = []
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                loss = float(row["loss"]) * 100
                curves[row["transport"]].append(
                    (loss, float(row["normalized"]), row["complete"] == "1")
                )
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
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        ax.plot(xs, ys, marker="o", label=LABELS.get(name, name))
        for x, y, ok in pts:
            if not ok:
                ax.annotate("incomplete", (x, y), fontsize=7, textcoords="offset points",
                            xytext=(0, 6), ha="center")
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xticks([0, 0.1, 0.5, 1, 2, 5, 10])
    ax.set_xticklabels(["0", "0.1", "0.5", "1", "2", "5", "10"])
    ax.set_xlabel("random loss (%)")
    ax.set_ylabel("goodput / loss-free goodput")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    ax.set_title("Goodput under loss (engine testbed, 100 Gb/s)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"plot: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
