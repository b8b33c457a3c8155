#!/usr/bin/python3
"""Plot the CDF of flow slowdown (FCT / ideal FCT) from metaroce-run's flows.csv.

One curve per run folder (or flows.csv path), labelled with the folder name. The CDF is over
all flows: flows that did not complete keep the curve below 1 and are counted in the legend.
Writes a PNG (default: fct-slowdown.png next to the first input). Runs as an executable (its
shebang is Debian's Python, which has matplotlib):

    plots/fct-slowdown.py runs/a runs/b [-o out.png]
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_slowdowns(path):
    """Return (sorted slowdowns of completed flows, number of incomplete flows)."""
    done, missing = [], 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["completed"] == "1":
                done.append(float(row["slowdown"]))
            else:
                missing += 1
    return sorted(done), missing


def main(argv):
    args = argv[1:]
    if "-h" in args or "--help" in args:
        print(__doc__)
        return 0
    out = None
    if "-o" in args:
        i = args.index("-o")
        if i + 1 >= len(args):
            print(__doc__, file=sys.stderr)
            return 2
        out = args[i + 1]
        del args[i : i + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    fig, ax = plt.subplots(figsize=(6, 4))
    for arg in args:
        path = os.path.join(arg, "flows.csv") if os.path.isdir(arg) else arg
        try:
            values, missing = read_slowdowns(path)
        except (OSError, KeyError, ValueError) as e:
            print(f"fct-slowdown: {path}: {e}", file=sys.stderr)
            return 1
        label = os.path.basename(os.path.dirname(os.path.abspath(path)))
        if missing:
            label += f" ({missing} incomplete)"
        n = len(values) + missing
        ax.step(values, [(i + 1) / n for i in range(len(values))], where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("slowdown (FCT / ideal FCT)")
    ax.set_ylabel("CDF of flows")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    first = os.path.join(args[0], "flows.csv") if os.path.isdir(args[0]) else args[0]
    out = out or os.path.join(os.path.dirname(os.path.abspath(first)), "fct-slowdown.png")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
