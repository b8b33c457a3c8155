#!/usr/bin/python3
"""Regression checks: reduced experiments compared with reference curves in plots/reference/.

    /usr/bin/python3 tests/regression/regress.py check loss incast permutation
    /usr/bin/python3 tests/regression/regress.py update            # regenerate the references
    /usr/bin/python3 tests/regression/regress.py selftest          # the comparator can fail
    /usr/bin/python3 tests/regression/regress.py list

Each case is a sweep (tests/regression/<case>.json, run by tools/metaroce-sweep.py); its
figures are compared point by point with plots/reference/regress-<case>.csv (columns point,
metric, reference, tolerance, spread). A figure fails when |measured - reference| > tolerance;
an ordering check fails when two points whose reference values are clearly apart (by more than
the sum of their tolerances) swap order. `update` reruns each case at the reference settings
and twice with a model-neutral perturbation (every link delay 1 ns longer / shorter, which
reorders events and random draws without changing the model), and sets

    tolerance = max(absolute floor, relative floor x |reference|, 2 x spread)

where spread is the largest deviation of the perturbed runs. docs/regression.md explains it.
Standard library only (plots need matplotlib and are skipped without it).
"""

import argparse
import csv
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "plots"))
import sweeplib  # noqa: E402

SWEEP = os.path.join(ROOT, "tools", "metaroce-sweep.py")
REFERENCE_DIR = os.path.join(ROOT, "plots", "reference")
PERTURBATIONS = ["--set=topology.link_delay_ns=1001", "--set=topology.link_delay_ns=999"]
SPREAD_FACTOR = 2.0


# ---------------------------------------------------------------------------------------------
# Cases: figures of a sweep folder, tolerance floors, ordering checks
# ---------------------------------------------------------------------------------------------


def loss_figures(sweep_dir):
    out = {}
    for r in sweeplib.loss_table(sweep_dir):
        if r["status"] != "ok":
            raise RuntimeError(f"point {r['point']} {r['status']}")
        out[(r["point"], "normalized")] = r["normalized"]
        out[(r["point"], "steady_normalized")] = r["steady_normalized"]
        out[(r["point"], "data_loss")] = r["data_loss"]
    return out


def _jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs else 0.0


INCAST_BIN_US = 250.0


def incast_figures(sweep_dir):
    out = {}
    for r in sweeplib.load_sweep(sweep_dir):
        if r["status"] != "ok":
            raise RuntimeError(f"point {r['point']} {r['status']}")
        d = os.path.join(sweep_dir, r["point"])
        s = sweeplib.read_summary(d)
        flows = sweeplib.read_csv(os.path.join(d, "flows.csv"))
        p = r["point"]
        for k in ("fct_mean_us", "fct_p50_us", "fct_max_us", "retransmissions", "timeouts",
                  "switch_drops", "ecn_marked"):
            out[(p, k)] = float(s.get(k, 0.0))
        out[(p, "flows_completed")] = float(sum(f["completed"] == "1" for f in flows))
        rates = [int(f["bytes"]) * 8 / (float(f["fct_us"]) * 1e3) for f in flows
                 if f["completed"] == "1"]
        out[(p, "sender_goodput_jain")] = _jain(rates)
        receiver = flows[0]["dst"]
        bins = {}
        for g in sweeplib.read_csv(os.path.join(d, "goodput.csv")):
            if g["host"] != receiver:
                continue
            t = float(g["time_us"]) - float(g["interval_us"])
            k = int(t // INCAST_BIN_US)
            bins[k] = bins.get(k, 0) + int(g["bytes"])
        nbins = int(math.ceil(out[(p, "fct_max_us")] / INCAST_BIN_US))
        for k in range(nbins):
            out[(p, f"rx_gbps_t{int(k * INCAST_BIN_US)}")] = bins.get(k, 0) * 8 / (
                INCAST_BIN_US * 1e3)
        # Per-sender goodput curves (flow_goodput.csv): the slowest and fastest sender and
        # the spread between them in every bin.
        per = {}
        for g in sweeplib.read_csv(os.path.join(d, "flow_goodput.csv")):
            t = float(g["time_us"]) - float(g["interval_us"])
            key = (int(t // INCAST_BIN_US), g["flow_id"])
            per[key] = per.get(key, 0) + int(g["bytes"])
        senders = sorted({f["flow_id"] for f in flows})
        for k in range(nbins):
            rates = [per.get((k, s), 0) * 8 / (INCAST_BIN_US * 1e3) for s in senders]
            out[(p, f"sender_min_gbps_t{int(k * INCAST_BIN_US)}")] = min(rates)
            out[(p, f"sender_max_gbps_t{int(k * INCAST_BIN_US)}")] = max(rates)
        fcts = [float(f["fct_us"]) for f in flows if f["completed"] == "1"]
        out[(p, "fct_min_us")] = min(fcts) if fcts else -1.0
    return out


def permutation_figures(sweep_dir):
    out = {}
    for r in sweeplib.load_sweep(sweep_dir):
        if r["status"] != "ok":
            raise RuntimeError(f"point {r['point']} {r['status']}")
        s = sweeplib.read_summary(os.path.join(sweep_dir, r["point"]))
        for k in ("slowdown_mean", "slowdown_p50", "slowdown_p99", "fct_max_us",
                  "retransmissions", "flows_completed"):
            out[(r["point"], k)] = float(s.get(k, 0.0))
    return out


# Tolerance floors by metric name prefix: (absolute, relative).
FLOORS = {
    "loss": {"normalized": (0.05, 0), "steady_normalized": (0.03, 0), "data_loss": (0.002, 0)},
    "incast": {"fct_": (0, 0.05), "retransmissions": (20, 0.2), "timeouts": (2, 0.2),
               "switch_drops": (20, 0.2), "ecn_marked": (50, 0.2), "flows_completed": (0, 0),
               "sender_goodput_jain": (0.02, 0), "rx_gbps_": (10, 0.1),
               "sender_m": (0.5, 0.1)},
    "permutation": {"slowdown_": (0, 0.05), "fct_max_us": (0, 0.05),
                    "retransmissions": (20, 0.2), "flows_completed": (0, 0)},
}

# Ordering checks: (metric, point pattern pairs). A pair (a, b) is checked when the reference
# values of a and b differ by more than the sum of their tolerances.
ORDERINGS = {
    "loss": [("normalized", "metaroce-p{p}", "rocev2-p{p}"),
             ("steady_normalized", "metaroce-p{p}", "rocev2-p{p}")],
    "incast": [("fct_mean_us", "hint-on", "hint-off"), ("fct_p50_us", "hint-on", "hint-off"),
               ("fct_min_us", "hint-on", "hint-off"),
               ("sender_goodput_jain", "hint-on", "hint-off")],
    "permutation": [("slowdown_mean", "metaroce-spray", "metaroce-single"),
                    ("slowdown_mean", "metaroce-spray", "rocev2"),
                    ("slowdown_mean", "metaroce-single", "rocev2"),
                    ("slowdown_p99", "metaroce-spray", "metaroce-single"),
                    ("slowdown_p99", "metaroce-spray", "rocev2"),
                    ("slowdown_p99", "metaroce-single", "rocev2")],
}

CASES = {
    "loss": loss_figures,
    "incast": incast_figures,
    "permutation": permutation_figures,
}


def floor_of(case, metric):
    for prefix, floor in FLOORS[case].items():
        if metric.startswith(prefix):
            return floor
    return (0, 0.05)


def ordering_pairs(case, reference):
    """Concrete (metric, a, b) pairs of a case, expanded over the points in the reference."""
    points = {p for p, _ in reference}
    pairs = []
    for metric, a, b in ORDERINGS[case]:
        if "{p}" in a:
            for p in sorted(points):
                if p.startswith("metaroce-p"):
                    suffix = p[len("metaroce-p"):]
                    if float(suffix) > 0:
                        pairs.append((metric, a.format(p=suffix), b.format(p=suffix)))
        else:
            pairs.append((metric, a, b))
    return [(m, a, b) for m, a, b in pairs if (a, m) in reference and (b, m) in reference]


# ---------------------------------------------------------------------------------------------
# Comparator
# ---------------------------------------------------------------------------------------------


def read_reference(path):
    ref = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            ref[(row["point"], row["metric"])] = {
                "reference": float(row["reference"]), "tolerance": float(row["tolerance"]),
                "spread": float(row.get("spread") or 0)}
    return ref


def compare(case, reference, measured):
    """Compare figures with a reference. Returns (ok, lines) with one line per check."""
    lines = []
    ok = True
    width = max([len(f"{p} {m}") for p, m in reference] + [20])
    lines.append(f"  {'point metric':<{width}} {'reference':>12} {'measured':>12} "
                 f"{'diff':>10} {'tolerance':>10}")
    for key in sorted(reference):
        ref = reference[key]
        name = f"{key[0]} {key[1]}"
        if key not in measured:
            ok = False
            lines.append(f"  {name:<{width}} {ref['reference']:>12.6g} {'missing':>12} "
                         f"{'':>10} {ref['tolerance']:>10.4g}  FAIL (no such figure)")
            continue
        diff = measured[key] - ref["reference"]
        bad = abs(diff) > ref["tolerance"] + 1e-12
        ok &= not bad
        lines.append(f"  {name:<{width}} {ref['reference']:>12.6g} {measured[key]:>12.6g} "
                     f"{diff:>+10.4g} {ref['tolerance']:>10.4g}  {'FAIL' if bad else 'ok'}")
    for metric, a, b in ordering_pairs(case, reference):
        ra, rb = reference[(a, metric)], reference[(b, metric)]
        if abs(ra["reference"] - rb["reference"]) <= ra["tolerance"] + rb["tolerance"]:
            continue
        if (a, metric) not in measured or (b, metric) not in measured:
            continue
        sign = 1 if ra["reference"] > rb["reference"] else -1
        rel = ">" if sign > 0 else "<"
        ma, mb = measured[(a, metric)], measured[(b, metric)]
        bad = (ma - mb) * sign <= 0
        ok &= not bad
        lines.append(f"  order {metric}: {a} {rel} {b} (reference {ra['reference']:.6g} {rel} "
                     f"{rb['reference']:.6g}; measured {ma:.6g} vs {mb:.6g})  "
                     f"{'FAIL (order flipped)' if bad else 'ok'}")
    return ok, lines


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


def run_case(case, runner, work, jobs, extra=()):
    out = os.path.join(work, case)
    if os.path.isdir(out):
        shutil.rmtree(out)
    cmd = [sys.executable, SWEEP, os.path.join(HERE, case + ".json"), "-o", out, "-j",
           str(jobs), "--runner", runner, "-q"] + [f"--arg={a}" for a in extra]
    rc = subprocess.call(cmd)
    if rc != 0:
        raise RuntimeError(f"the sweep of case {case} failed (exit status {rc}); "
                           f"see {out}/index.csv")
    return out


def default_runner():
    return os.environ.get("METAROCE_RUN", os.path.join(ROOT, "build", "bin", "metaroce-run"))


def cmd_check(args):
    status = 0
    for case in args.cases:
        ref_path = os.path.join(args.reference_dir, f"regress-{case}.csv")
        try:
            reference = read_reference(ref_path)
        except OSError as e:
            print(f"[regress] {case}: no reference {ref_path} ({e.strerror}); "
                  "run: /usr/bin/python3 tests/regression/regress.py update", file=sys.stderr)
            status = 1
            continue
        try:
            out = run_case(case, args.runner, args.work, args.jobs, args.arg)
            measured = CASES[case](out)
        except (RuntimeError, OSError, KeyError, ValueError) as e:
            print(f"[regress] {case}: FAILED to run: {e}", file=sys.stderr)
            status = 1
            continue
        ok, lines = compare(case, reference, measured)
        print(f"[regress] {case}: {'PASS' if ok else 'FAIL'} against {ref_path}")
        for line in lines if (not ok or args.verbose) else []:
            print(line)
        if not ok:
            print("  (only the FAIL lines matter; if the change is intended, regenerate the "
                  "references: /usr/bin/python3 tests/regression/regress.py update)")
            status = 1
    return status


def cmd_update(args):
    os.makedirs(args.reference_dir, exist_ok=True)
    for case in args.cases:
        base = CASES[case](run_case(case, args.runner, args.work, args.jobs))
        spread = {k: 0.0 for k in base}
        for i, pert in enumerate(PERTURBATIONS):
            fig = CASES[case](run_case(case, args.runner, os.path.join(args.work, f"pert{i}"),
                                       args.jobs, [pert]))
            for k in base:
                if k in fig:
                    spread[k] = max(spread[k], abs(fig[k] - base[k]))
        path = os.path.join(args.reference_dir, f"regress-{case}.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["point", "metric", "reference", "tolerance", "spread"])
            for (p, m) in sorted(base):
                a, r = floor_of(case, m)
                tol = max(a, r * abs(base[(p, m)]), SPREAD_FACTOR * spread[(p, m)])
                w.writerow([p, m, f"{base[(p, m)]:.6g}", f"{tol:.4g}", f"{spread[(p, m)]:.4g}"])
        print(f"[regress] {case}: wrote {path}")
        try:
            plot_case(case, os.path.join(args.work, case),
                      os.path.join(args.reference_dir, f"regress-{case}.png"))
        except ImportError:
            print("[regress] matplotlib is missing: no reference plot", file=sys.stderr)
    return 0


def plot_case(case, sweep_dir, out):
    if case == "loss":
        rows = sweeplib.loss_table(sweep_dir)
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "loss_sweep_plot", os.path.join(ROOT, "plots", "loss-sweep.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.plot_sweep(rows, out, "Regression reference: goodput under loss (reduced)")
    else:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig_values = CASES[case](sweep_dir)
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        if case == "incast":
            def curve(point, prefix):
                return sorted((int(m[len(prefix):]), v) for (p, m), v in fig_values.items()
                              if p == point and m.startswith(prefix))
            for point in sorted({p for p, _ in fig_values}):
                lo = curve(point, "sender_min_gbps_t")
                hi = curve(point, "sender_max_gbps_t")
                line, = ax.plot([x for x, _ in lo], [y for _, y in lo], marker="v",
                                label=f"{point}: slowest sender")
                ax.plot([x for x, _ in hi], [y for _, y in hi], marker="^",
                        color=line.get_color(), linestyle="--",
                        label=f"{point}: fastest sender")
            ax.set_xlabel(f"time (us, {INCAST_BIN_US:g} us bins)")
            ax.set_ylabel("per-sender goodput (Gb/s)")
            ax.set_title("Regression reference: 32-to-1 incast, rate hint on / off")
        else:
            points = sorted({p for p, _ in fig_values})
            xs = range(len(points))
            ax.bar([x - 0.2 for x in xs], [fig_values[(p, "slowdown_mean")] for p in points],
                   0.4, label="mean")
            ax.bar([x + 0.2 for x in xs], [fig_values[(p, "slowdown_p99")] for p in points],
                   0.4, label="p99")
            ax.set_xticks(list(xs))
            ax.set_xticklabels(points)
            ax.set_ylabel("FCT slowdown")
            ax.set_title("Regression reference: permutation on a k=4 fat tree")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out, dpi=110)
        plt.close(fig)
    print(f"[regress] plot: {out}")


def cmd_selftest(args):
    """The comparator must pass a reference against itself and fail perturbed copies."""
    failures = 0
    for case in CASES:
        path = os.path.join(args.reference_dir, f"regress-{case}.csv")
        reference = read_reference(path)
        same = {k: v["reference"] for k, v in reference.items()}
        ok, _ = compare(case, reference, same)
        if not ok:
            print(f"[selftest] {case}: the reference does not pass against itself")
            failures += 1
        # Every figure moved by 1.5 tolerances (or +1 when the tolerance is 0) must fail.
        for key, v in sorted(reference.items()):
            bent = dict(same)
            bent[key] = v["reference"] + (1.5 * v["tolerance"] if v["tolerance"] > 0 else 1)
            ok, lines = compare(case, reference, bent)
            named = any(line.lstrip().startswith(f"{key[0]} {key[1]} ") and "FAIL" in line
                        for line in lines)
            if ok or not named:
                print(f"[selftest] {case}: moving {key} by 1.5 tolerances was not caught")
                failures += 1
            # Moved by 0.5 tolerances it must still pass (the tolerance is what is stated).
            bent[key] = v["reference"] + 0.5 * v["tolerance"]
            ok, lines = compare(case, reference, bent)
            if not ok:
                print(f"[selftest] {case}: moving {key} by half a tolerance failed: "
                      + "; ".join(l for l in lines if "FAIL" in l))
                failures += 1
        # A swapped ordering must fail even when each figure alone stays within tolerance...
        # so swap two whole points (every metric): the pair checks must catch it.
        pairs = [(m, a, b) for m, a, b in ordering_pairs(case, reference)
                 if abs(reference[(a, m)]["reference"] - reference[(b, m)]["reference"])
                 > reference[(a, m)]["tolerance"] + reference[(b, m)]["tolerance"]]
        for metric, a, b in pairs:
            swapped = dict(same)
            swapped[(a, metric)], swapped[(b, metric)] = same[(b, metric)], same[(a, metric)]
            ok, lines = compare(case, reference, swapped)
            if ok or not any("order flipped" in line for line in lines):
                print(f"[selftest] {case}: swapping {a} and {b} on {metric} was not caught")
                failures += 1
        print(f"[selftest] {case}: {len(reference)} figures, {len(pairs)} ordering checks "
              f"exercised")
    print(f"[selftest] {'PASS' if failures == 0 else 'FAIL'} ({failures} problems)")
    return 1 if failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("command", choices=["check", "update", "selftest", "list"])
    ap.add_argument("cases", nargs="*", help=f"cases (default all: {', '.join(CASES)})")
    ap.add_argument("--runner", default=default_runner(),
                    help="metaroce-run (default $METAROCE_RUN or build/bin/metaroce-run)")
    ap.add_argument("--work", help="folder for the sweep outputs (default a temporary one)")
    ap.add_argument("--reference-dir", default=REFERENCE_DIR)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--arg", action="append", default=[],
                    help="extra runner argument for every point (check only; e.g. to show "
                    "that a changed parameter fails the check)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print passing checks too")
    args = ap.parse_args(argv)
    args.cases = args.cases or list(CASES)
    for c in args.cases:
        if c not in CASES:
            ap.error(f"unknown case {c} (cases: {', '.join(CASES)})")
    if args.command == "list":
        for c in CASES:
            print(c, os.path.join(HERE, c + ".json"))
        return 0
    if args.command == "selftest":
        return cmd_selftest(args)
    if not os.access(args.runner, os.X_OK):
        print(f"[regress] no runner {args.runner} (build metaroce-run or pass --runner)",
              file=sys.stderr)
        return 1
    tmp = None
    if not args.work:
        tmp = tempfile.mkdtemp(prefix="metaroce-regress-")
        args.work = tmp
    try:
        return cmd_check(args) if args.command == "check" else cmd_update(args)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
