#!/usr/bin/python3
"""Experiment 4: one of 4 planes fails mid-run and later returns. Fabric goodput over time,
recovery time (in unloaded RTTs) to >= 95% of the surviving capacity, use of the returned
plane, and the byte accounting.

Reads the run folders examples/experiments/plane-failure.sh writes: fail-return (plane 1
down from 300 to 900 us), fail-never (down from 300 us on), no-failure. Definitions:
  G0        mean fabric goodput over [200 us, fail) of the run (all 4 planes, flows at speed;
            without failure up to the first flow completion)
  target    0.95 x 3/4 x G0 (95% of the surviving capacity); after the return 0.95 x G0
  recovery  time from the failure until the 10 us moving average of the fabric goodput
            reaches the target and stays there until the plane returns or the first flow
            completes (sustained); "first" is the first time it reaches it
  RTT       the unloaded round trip of the longest (cross-leaf) flow path, from flows.csv:
            ideal_fct_us - bytes * 8 / (planes * link rate)
  bytes     per receiving host, the goodput.csv rows (first copies placed) summed over the run
            against the flow bytes sent to that host (flows.csv); plane 1 switch traffic
            (switches.csv) with and without the return shows the returned plane in use

    /usr/bin/python3 plots/exp-plane-failure.py runs/exp4-plane-failure -o plane-failure.png
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exp_common import fabric_goodput, read_csv, read_summary  # noqa: E402


def scenario_value(run, pattern, default=None):
    with open(os.path.join(run, "scenario.pb.txt")) as f:
        text = f.read()
    m = re.search(pattern, text, re.S)
    return float(m.group(1)) if m else default


def moving_average(t, g, window_us):
    out = []
    for i in range(len(t)):
        j = i
        while j > 0 and t[i] - t[j - 1] < window_us - 1e-9:
            j -= 1
        out.append(sum(g[j:i + 1]) / (i + 1 - j))
    return out


def analyse(run):
    t, dt, g = fabric_goodput(run)
    fail = scenario_value(run, r"fail_plane\s*\{[^}]*start_us:\s*([0-9.e+]+)")
    back = scenario_value(run, r"fail_plane\s*\{[^}]*stop_us:\s*([0-9.e+]+)", 0.0)
    planes = scenario_value(run, r"planes:\s*([0-9]+)")
    rate = scenario_value(run, r"link_rate_gbps:\s*([0-9.e+]+)")
    flows = read_csv(run, "flows.csv")
    rtt = max(float(f["ideal_fct_us"]) - int(f["bytes"]) * 8 / (planes * rate * 1e3)
              for f in flows)
    s = read_summary(run)
    res = {"t": t, "g": g, "fail": fail, "back": back, "rtt": rtt, "summary": s,
           "planes": planes, "rate": rate}
    first_done = min(float(f["finish_us"]) for f in flows if f["completed"] == "1")
    end_pre = fail if fail else first_done
    pre = [gi for ti, gi in zip(t, g) if 200 <= ti <= end_pre]
    g0 = sum(pre) / len(pre)
    res["g0"] = g0
    ma = moving_average(t, g, 10.0)
    res["ma"] = ma
    # Byte accounting per receiving host.
    placed = {}
    for r in read_csv(run, "goodput.csv"):
        if r["host"] != "-1":
            placed[r["host"]] = placed.get(r["host"], 0) + int(r["bytes"])
    sent = {}
    for f in flows:
        sent[f["dst"]] = sent.get(f["dst"], 0) + int(f["bytes"])
    res["bytes_ok"] = placed == sent
    res["bytes_sent"] = sum(sent.values())
    res["bytes_placed"] = sum(placed.values())
    res["completed"] = all(f["completed"] == "1" for f in flows)
    res["failed_flows"] = int(s.get("flows_failed", 0))
    # Plane-1 switch traffic.
    plane_frames = {}
    for r in read_csv(run, "switches.csv"):
        if r["port"] == "-1":
            plane_frames[r["plane"]] = plane_frames.get(r["plane"], 0) + int(r["enqueued_frames"])
    res["plane_frames"] = plane_frames
    if not fail:
        return res
    # The failure period ends when the plane returns or the first flow completes.
    last = min(back, first_done) if back else first_done
    target = 0.95 * (planes - 1) / planes * g0
    res["target"] = target
    first = sustained = None
    for i, ti in enumerate(t):
        if ti <= fail or ti > last:
            continue
        if first is None and ma[i] >= target:
            first = ti - fail
    # Sustained: the last time in (fail, last] the average was below target, then recovered.
    below = [ti for ti, m in zip(t, ma) if fail < ti <= last and m < target]
    if below and below[-1] < last:
        sustained = below[-1] + (t[1] - t[0]) - fail
    elif not below:
        sustained = 0.0
    res["first"], res["sustained"] = first, sustained
    during = [gi for ti, gi in zip(t, g) if fail + (sustained or 0) < ti <= last]
    res["during"] = sum(during) / len(during) if during else 0.0
    if back:
        target2 = 0.95 * g0
        res["target2"] = target2
        after = None
        for i, ti in enumerate(t):
            if ti > back and ma[i] >= target2:
                after = ti - back
                break
        res["after"] = after
        post = [gi for ti, gi in zip(t, g) if back + (after or 0) < ti <= back + 200]
        res["post"] = sum(post) / len(post) if post else 0.0
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args()
    runs = {}
    for name in ("fail-return", "fail-never", "no-failure"):
        run = os.path.join(args.folder, name)
        if os.path.exists(os.path.join(run, "summary.pb.txt")):
            runs[name] = analyse(run)
    print("| Run | G0 before (Gb/s) | Recovery: first / sustained (us) | in RTTs | Goodput while "
          "down (Gb/s, % of 3/4 G0) | Back to 95% G0 after return (us) | All flows done "
          "| Bytes placed = sent | Retx | Timeouts | Plane-1 frames | Wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        s = r["summary"]
        rec = rtts = down = after = "-"
        if r.get("fail"):
            f, su = r["first"], r["sustained"]
            rec = f"{f:.0f} / {su:.0f}" if f is not None and su is not None else "not reached"
            rtts = (f"{f / r['rtt']:.1f} / {su / r['rtt']:.1f}"
                    if f is not None and su is not None else "-")
            down = f"{r['during']:.0f} ({r['during'] / (0.75 * r['g0']):.1%})"
            if r.get("back"):
                after = f"{r['after']:.0f}" if r["after"] is not None else "not reached"
        print(f"| {name} | {r['g0']:.0f} | {rec} | {rtts} | {down} | {after} "
              f"| {'yes' if r['completed'] else 'NO'} ({r['failed_flows']} failed) "
              f"| {'yes' if r['bytes_ok'] else 'NO'} ({r['bytes_placed']} of {r['bytes_sent']}) "
              f"| {int(s['retransmissions'])} | {int(s['timeouts'])} "
              f"| {r['plane_frames'].get('1', 0)} | {s['wall_time_s']:.1f} |")
    for name, r in runs.items():
        print(f"{name}: unloaded RTT {r['rtt']:.2f} us, capacity {r['planes'] * r['rate']:.0f} "
              f"Gb/s per host")
    if not args.output:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    styles = {"fail-return": "-", "fail-never": "--", "no-failure": ":"}
    for name, r in runs.items():
        ax.plot(r["t"], [m / 1e3 for m in r["ma"]], styles[name], lw=1.2,
                label=f"{name} (10 us average)")
    r = runs.get("fail-return")
    if r:
        ax.axvline(r["fail"], color="red", lw=0.8)
        ax.axvline(r["back"], color="green", lw=0.8)
        ax.axhline(r["target"] / 1e3, color="grey", ls="-.", lw=0.8,
                   label="95% of surviving capacity (3/4 G0)")
        ax.text(r["fail"], ax.get_ylim()[1] * 0.02, " plane 1 fails", color="red", fontsize=8)
        ax.text(r["back"], ax.get_ylim()[1] * 0.02, " plane 1 returns", color="green",
                fontsize=8)
    ax.set_xlabel("time (us)")
    ax.set_ylabel("fabric goodput (Tb/s)")
    ax.set_title("4-plane fabric, 16-host permutation: plane 1 fails and returns")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(args.output, dpi=130)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
