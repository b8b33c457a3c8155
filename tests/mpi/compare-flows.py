#!/usr/bin/python3
"""Compare the flows.csv of a one-process run and of a distributed run (tests/mpi).

    compare-flows.py ONE.csv MANY.csv [--exact] [--max-rel 0.05] [--mean-rel 0.01]

Byte-identical files pass. Otherwise the flows (id, src, dst, bytes, start, completed) must be
the same and, unless --exact, every FCT within --max-rel of the one-process FCT and the mean FCT
within --mean-rel; the differences are printed. Exit status 0 on pass, 1 on fail.
"""

import argparse
import csv
import sys

KEYS = ["flow_id", "src", "dst", "bytes", "start_us", "completed"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("one")
    ap.add_argument("many")
    ap.add_argument("--exact", action="store_true", help="only byte-identical files pass")
    ap.add_argument("--max-rel", type=float, default=0.05)
    ap.add_argument("--mean-rel", type=float, default=0.01)
    a = ap.parse_args()
    with open(a.one, "rb") as f1, open(a.many, "rb") as f2:
        if f1.read() == f2.read():
            print("flows.csv byte-identical")
            return 0
    if a.exact:
        print("FAIL: flows.csv differs (byte-identical required)")
        return 1
    with open(a.one) as f:
        one = list(csv.DictReader(f))
    with open(a.many) as f:
        many = list(csv.DictReader(f))
    if len(one) != len(many) or not one:
        print(f"FAIL: {len(one)} flows on one process, {len(many)} distributed")
        return 1
    rel = []
    for r1, r2 in zip(one, many):
        if [r1[k] for k in KEYS] != [r2[k] for k in KEYS]:
            print(f"FAIL: flow rows differ: {r1} / {r2}")
            return 1
        if r1["completed"] == "1":
            f1, f2 = float(r1["fct_us"]), float(r2["fct_us"])
            rel.append((abs(f2 - f1) / f1, r1["flow_id"], f1, f2))
    same = sum(1 for r in rel if r[0] == 0)
    worst = max(rel) if rel else (0, "-", 0, 0)
    m1 = sum(r[2] for r in rel) / max(1, len(rel))
    m2 = sum(r[3] for r in rel) / max(1, len(rel))
    mean_rel = abs(m2 - m1) / m1 if m1 else 0
    print(
        f"flows.csv differs: {same}/{len(rel)} FCTs identical; largest difference flow "
        f"{worst[1]}: {worst[2]:.3f} vs {worst[3]:.3f} us ({100 * worst[0]:.2f}%); mean FCT "
        f"{m1:.3f} vs {m2:.3f} us ({100 * mean_rel:.3f}%)"
    )
    if worst[0] > a.max_rel or mean_rel > a.mean_rel:
        print(f"FAIL: beyond tolerance (per flow {a.max_rel}, mean {a.mean_rel})")
        return 1
    print(f"PASS within tolerance (per flow {a.max_rel}, mean {a.mean_rel})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
