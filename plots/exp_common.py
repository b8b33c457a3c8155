"""Readers shared by the experiment plot scripts (plots/exp-*.py): the run folder files that
docs/outputs.md documents (CSV files and summary.pb.txt)."""

import collections
import csv
import os


def read_csv(run, name):
    """Rows of <run>/<name> as dicts of strings ([] if the file is missing)."""
    path = os.path.join(run, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_summary(run):
    """summary.pb.txt (a flat RunSummary in text format) as a dict of str -> str/float; fields
    protobuf leaves out (zero) read as 0."""
    out = collections.defaultdict(float)
    with open(os.path.join(run, "summary.pb.txt")) as f:
        for line in f:
            if ":" not in line:
                continue
            key, value = line.split(":", 1)
            value = value.strip()
            if value.startswith('"'):
                out[key.strip()] = value.strip('"')
                continue
            try:
                out[key.strip()] = float(value)
            except ValueError:
                out[key.strip()] = value
    return out


def fabric_goodput(run):
    """(time_us, interval_us, goodput_gbps) lists of the whole-fabric rows of goodput.csv."""
    t, dt, g = [], [], []
    for r in read_csv(run, "goodput.csv"):
        if r["host"] == "-1":
            t.append(float(r["time_us"]))
            dt.append(float(r["interval_us"]))
            g.append(float(r["goodput_gbps"]))
    return t, dt, g
