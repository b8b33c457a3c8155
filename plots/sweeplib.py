"""Readers for metaroce-run folders and metaroce-sweep folders (standard library only).

Used by the plot scripts (plots/*.py) and the regression checks (tests/regression/regress.py).
The files are documented in docs/outputs.md (run folder) and docs/sweeps.md (sweep folder).
"""

import csv
import json
import os


def read_csv(path):
    """Rows of a CSV file as dicts of strings."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_summary(run_dir):
    """summary.pb.txt (a flat RunSummary in protobuf text format) as a dict of numbers/strings."""
    out = {}
    with open(os.path.join(run_dir, "summary.pb.txt")) as f:
        for line in f:
            key, sep, value = line.partition(":")
            if not sep:
                continue
            value = value.strip()
            if value.startswith('"'):
                out[key.strip()] = value.strip('"')
            elif value in ("true", "false"):
                out[key.strip()] = value == "true"
            else:
                try:
                    out[key.strip()] = float(value)
                except ValueError:
                    out[key.strip()] = value
    return out


def read_scenario(run_dir):
    """scenario.pb.txt (the scenario as run, protobuf text format) as a flat dict of dotted
    field paths ("topology.pfc", "loss.scope") to numbers/strings/bools; a repeated field
    keeps its last value. Fields at their zero value are absent (proto3 does not print them)."""
    out = {}
    path = []
    with open(os.path.join(run_dir, "scenario.pb.txt")) as f:
        for line in f:
            line = line.strip()
            if line.endswith("{"):
                path.append(line[:-1].strip())
                continue
            if line == "}":
                path.pop()
                continue
            key, sep, value = line.partition(":")
            if not sep:
                continue
            value = value.strip()
            if value.startswith('"'):
                value = value.strip('"')
            elif value in ("true", "false"):
                value = value == "true"
            else:
                try:
                    value = float(value)
                except ValueError:
                    pass
            out[".".join(path + [key.strip()])] = value
    return out


def load_sweep(sweep_dir):
    """The point records of a sweep folder's index.json, in point order."""
    with open(os.path.join(sweep_dir, "index.json")) as f:
        return json.load(f)["points"]


def run_metrics(run_dir):
    """Goodput and loss figures of one run folder.

    goodput_gbps    all payload bytes placed / (last flow completion - first start); when
                    some flow did not complete, the end is the simulated end (stop time)
    steady_gbps     bytes placed while every flow was still running / that time (from the
                    first start to the first completion, whole goodput intervals)
    data_loss       frames lost on the links into the hosts that only receive data, over
                    the frames sent to them (hosts.csv: drops / (rx - PFC + drops))
    ack_loss        the same for the hosts that only send data (their frames are ACKs)
    """
    s = read_summary(run_dir)
    flows = read_csv(os.path.join(run_dir, "flows.csv"))
    goodput = [g for g in read_csv(os.path.join(run_dir, "goodput.csv")) if g["host"] == "-1"]
    start = min(float(f["start_us"]) for f in flows)
    done = [float(f["finish_us"]) for f in flows if f["completed"] == "1"]
    complete = len(done) == len(flows)
    end = max(done) if complete else s.get("sim_time_us", 0.0)
    placed = sum(int(g["bytes"]) for g in goodput)
    first_done = min(done) if done else end
    steady_bytes = 0
    steady_end = start
    for g in goodput:
        t = float(g["time_us"])
        if t <= first_done:
            steady_bytes += int(g["bytes"])
            steady_end = t
    m = {
        "goodput_gbps": placed * 8 / ((end - start) * 1e3) if end > start else 0.0,
        "steady_gbps": steady_bytes * 8 / ((steady_end - start) * 1e3)
        if steady_end > start else 0.0,
        "complete": complete,
        "flows": len(flows),
        "flows_completed": len(done),
        "fct_max_us": max(done) - start if done else -1.0,
        "retransmissions": int(s.get("retransmissions", 0)),
        "timeouts": int(s.get("timeouts", 0)),
        "switch_drops": int(s.get("switch_drops", 0)),
        "pfc_pauses": int(s.get("pfc_pauses", 0)),
        "sim_time_us": s.get("sim_time_us", 0.0),
    }
    srcs = {f["src"] for f in flows}
    dsts = {f["dst"] for f in flows}
    hosts_csv = os.path.join(run_dir, "hosts.csv")
    if os.path.exists(hosts_csv):
        sent = {"data": 0, "ack": 0}
        lost = {"data": 0, "ack": 0}
        for h in read_csv(hosts_csv):
            kind = ("data" if h["host"] in dsts and h["host"] not in srcs
                    else "ack" if h["host"] in srcs and h["host"] not in dsts else None)
            if kind is None:
                continue
            drops = int(h["drops_channel_loss"])
            lost[kind] += drops
            sent[kind] += int(h["rx_frames"]) - int(h["pfc_pause_received"]) + drops
        m["data_frames"] = sent["data"]
        m["data_lost"] = lost["data"]
        m["data_loss"] = lost["data"] / sent["data"] if sent["data"] else 0.0
        m["ack_loss"] = lost["ack"] / sent["ack"] if sent["ack"] else 0.0
    return m


def series_key(params):
    """(transport, recovery, pfc) of a loss-sweep point's parameters (for points without a
    run folder; run_series_key reads what a run actually did)."""
    return (params.get("transport", "metaroce"), params.get("recovery", ""),
            bool(params.get("pfc", False)))


def run_series_key(run_dir):
    """(transport, recovery, pfc) from a run folder's own record (scenario.pb.txt), which the
    sweep's parameters only describe: a point whose arguments set PFC differently from its
    parameters is labelled by what ran."""
    sc = read_scenario(run_dir)
    transport = sc.get("transport.name", "metaroce")
    recovery = "sack" if transport == "metaroce" else sc.get("transport.rocev2_recovery", "gbn")
    return (transport, recovery, bool(sc.get("topology.pfc", False)))


LOSS_SCOPE_LABELS = {
    "ALL_LINKS": "random loss p (%) per frame on every link, each direction",
    "FABRIC_LINKS": "random loss p (%) per frame on each switch-to-switch link",
    "HOST_LINKS": "random loss p (%) per frame on each host link, each direction",
    "HOST_DOWNLINKS": "random loss p (%), end-to-end per data packet (host downlinks)",
}


def loss_axis_label(rows):
    """The x-axis label of a loss sweep, from the loss scope its runs recorded."""
    scopes = {r["loss_scope"] for r in rows if r.get("loss_scope")}
    if len(scopes) == 1:
        return LOSS_SCOPE_LABELS.get(next(iter(scopes)), "random loss p (%)")
    return "random loss p (%)"


def describe_setup(rows):
    """A short description of the runs' topology and workload ("8 flows, 2 x 8 leaf-spine,
    100 Gb/s") from their records, or "" when the points differ or none ran."""
    setups = {r["setup"] for r in rows if r.get("setup")}
    return next(iter(setups)) if len(setups) == 1 else ""


def _setup_of(sc, summary):
    kind = sc.get("topology.kind", "")
    if kind == "FAT_TREE":
        shape = f"k = {sc.get('topology.k', 0):g} fat tree"
    elif kind == "SINGLE_SWITCH":
        shape = f"{sc.get('topology.hosts', 0):g}-host single switch"
    else:
        shape = (f"{sc.get('topology.leaves', 0):g} x "
                 f"{sc.get('topology.hosts_per_leaf', 0):g} leaf-spine")
        planes = sc.get("topology.planes", 1)
        if planes > 1:
            shape += f", {planes:g} planes"
    rate = sc.get("topology.link_rate_gbps", 0)
    return f"{summary.get('flows', 0):g} flows, {shape}, {rate:g} Gb/s"


SERIES_LABELS = {
    ("metaroce", "sack", False): "MetaRoCE (8 paths, SACK)",
    ("rocev2", "gbn", True): "RoCEv2 go-back-N, PFC on",
    ("rocev2", "gbn", False): "RoCEv2 go-back-N, PFC off",
    ("rocev2", "irn", False): "RoCEv2 IRN (selective repeat), PFC off",
}


def series_label(key):
    return SERIES_LABELS.get(key, f"{key[0]} {key[1]} pfc={'on' if key[2] else 'off'}")


def loss_table(sweep_dir):
    """One row per ok point of a loss sweep, with goodput normalised to the same series'
    loss-free point. Points that failed are listed with status and no figures."""
    rows = []
    for r in load_sweep(sweep_dir):
        row = {"point": r["point"], "status": r["status"], "loss": float(r["params"]["loss"]),
               "series": series_key(r["params"]), "wall_s": r["wall_s"]}
        if r["status"] == "ok":
            run_dir = os.path.join(sweep_dir, r["point"])
            row.update(run_metrics(run_dir))
            row["series"] = run_series_key(run_dir)
            sc = read_scenario(run_dir)
            row["loss_scope"] = sc.get("loss.scope", "ALL_LINKS")
            row["setup"] = _setup_of(sc, read_summary(run_dir))
        rows.append(row)
    base = {row["series"]: row for row in rows if row["loss"] == 0 and row["status"] == "ok"}
    for row in rows:
        b = base.get(row["series"])
        if row["status"] == "ok" and b and b["goodput_gbps"] > 0:
            row["normalized"] = row["goodput_gbps"] / b["goodput_gbps"]
            row["steady_normalized"] = (row["steady_gbps"] / b["steady_gbps"]
                                        if b["steady_gbps"] > 0 else 0.0)
        row["ideal"] = 1 - row["loss"]
    rows.sort(key=lambda x: (x["series"] != ("metaroce", "sack", False), x["series"],
                             x["loss"]))
    return rows


LOSS_COLUMNS = ["series", "loss", "status", "goodput_gbps", "normalized", "steady_gbps",
                "steady_normalized", "ideal", "data_loss", "ack_loss", "retransmissions",
                "timeouts", "flows_completed", "flows", "fct_max_us", "pfc_pauses",
                "switch_drops", "wall_s"]


def write_loss_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["point"] + LOSS_COLUMNS)
        for r in rows:
            out = [r["point"]]
            for c in LOSS_COLUMNS:
                v = r.get(c, "")
                if c == "series":
                    v = f"{v[0]}/{v[1]}/{'pfc' if v[2] else 'nopfc'}"
                elif isinstance(v, bool):
                    v = int(v)
                elif isinstance(v, float):
                    v = f"{v:.6g}"
                out.append(v)
            w.writerow(out)


def format_loss_table(rows):
    """A plain-text table of a loss sweep."""
    lines = [f"{'series':<40} {'loss%':>6} {'Gb/s':>7} {'norm':>6} {'steady':>6} "
             f"{'1-p':>5} {'data loss%':>10} {'retx':>6} {'RTO':>4} {'done':>5}"]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"{series_label(r['series']):<40} {r['loss'] * 100:>6g}   "
                         f"{r['status'].upper()}")
            continue
        norm = r.get("normalized")
        lines.append(
            f"{series_label(r['series']):<40} {r['loss'] * 100:>6g} {r['goodput_gbps']:>7.1f} "
            f"{norm if norm is not None else float('nan'):>6.3f} "
            f"{r.get('steady_normalized', float('nan')):>6.3f} {r['ideal']:>5.3f} "
            f"{r.get('data_loss', float('nan')) * 100:>10.3f} {r['retransmissions']:>6d} "
            f"{r['timeouts']:>4d} {r['flows_completed']:>2d}/{r['flows']:<2d}")
    return "\n".join(lines)
