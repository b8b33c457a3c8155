#!/usr/bin/python3
"""metaroce-sweep: run the points of a sweep, each as its own metaroce-run process, in parallel.

A sweep definition (JSON) names a scenario file and a list of points; a point is a set of
metaroce-run overrides (--transport, --loss, --set=..., --seed, ...). Every point runs into
<sweep-dir>/<point>/ (the runner's run folder, plus runner.stdout / runner.stderr and
point.json), and the sweep writes index.csv and index.json at the top of <sweep-dir>.

    /usr/bin/python3 tools/metaroce-sweep.py examples/sweeps/loss-sweep.json -j 2
    /usr/bin/python3 tools/metaroce-sweep.py SWEEP --list          # index, name, arguments
    /usr/bin/python3 tools/metaroce-sweep.py SWEEP -o DIR --point 3   # one point (job arrays)
    /usr/bin/python3 tools/metaroce-sweep.py SWEEP -o DIR --collect   # rebuild the index

docs/sweeps.md documents the definition format, the outputs and cluster use. Standard library
only; exit status 0 when every point ran with exit status 0, 1 when some failed, 2 on a bad
definition or option, 130 when interrupted.
"""

import argparse
import csv
import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_RUNNER = os.path.join(ROOT, "build", "bin", "metaroce-run")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=-]*$")
INDEX_FIELDS = ["index", "point", "status", "exit_code", "wall_s", "dir"]


class SweepError(Exception):
    """A bad sweep definition or option (exit status 2)."""


# ---------------------------------------------------------------------------------------------
# Definition
# ---------------------------------------------------------------------------------------------


def _variant(axis_no, item):
    """One value of a grid axis as {name, args, params}."""
    if not isinstance(item, dict) or "name" not in item:
        raise SweepError(f"grid axis {axis_no}: each variant needs a 'name'")
    args = item.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise SweepError(f"grid axis {axis_no}, variant {item['name']}: 'args' must be strings")
    return {
        "name": str(item["name"]),
        "args": list(args),
        "params": dict(item.get("params", {})),
        "scenario": item.get("scenario"),
    }


def _axis(axis_no, axis):
    """Expand one grid axis: a list of variants, or {param, values, arg, name} shorthand."""
    if isinstance(axis, list):
        return [_variant(axis_no, v) for v in axis]
    if not isinstance(axis, dict) or "values" not in axis or "param" not in axis:
        raise SweepError(
            f"grid axis {axis_no}: a list of variants or an object with 'param' and 'values'"
        )
    param = axis["param"]
    arg = axis.get("arg", "--" + param + "={}")
    name = axis.get("name", param + "{}")
    out = []
    for v in axis["values"]:
        text = json.dumps(v) if isinstance(v, (dict, list)) else str(v)
        args = arg if isinstance(arg, list) else [arg]
        out.append(
            {
                "name": name.format(text),
                "args": [a.format(text) for a in args],
                "params": {param: v},
                "scenario": None,
            }
        )
    return out


def load_definition(path):
    """Read a sweep definition and expand it into an ordered list of points."""
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise SweepError(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise SweepError(f"{path}:{e.lineno}:{e.colno}: {e.msg}")
    if not isinstance(d, dict):
        raise SweepError(f"{path}: the definition must be a JSON object")
    base = os.path.dirname(os.path.abspath(path))
    stem = os.path.splitext(os.path.basename(path))[0]

    def resolve(scenario):
        if scenario is None:
            return None
        return scenario if os.path.isabs(scenario) else os.path.normpath(
            os.path.join(base, scenario))

    common = d.get("args", [])
    if not isinstance(common, list) or not all(isinstance(a, str) for a in common):
        raise SweepError(f"{path}: 'args' must be a list of strings")
    scenario = resolve(d.get("scenario"))
    points = []
    for p in d.get("points", []):
        if not isinstance(p, dict) or "name" not in p:
            raise SweepError(f"{path}: every entry of 'points' needs a 'name'")
        points.append(
            {
                "name": str(p["name"]),
                "args": list(p.get("args", [])),
                "params": dict(p.get("params", {})),
                "scenario": resolve(p.get("scenario")),
            }
        )
    grid = d.get("grid")
    if grid:
        if not isinstance(grid, list):
            raise SweepError(f"{path}: 'grid' must be a list of axes")
        axes = [_axis(i, a) for i, a in enumerate(grid)]
        for combo in itertools.product(*axes):
            params = {}
            args = []
            scen = None
            for v in combo:
                params.update(v["params"])
                args += v["args"]
                scen = resolve(v["scenario"]) or scen
            points.append(
                {
                    "name": "-".join(v["name"] for v in combo),
                    "args": args,
                    "params": params,
                    "scenario": scen,
                }
            )
    if not points:
        raise SweepError(f"{path}: no points (give 'points' and/or 'grid')")
    seen = set()
    for i, p in enumerate(points):
        if not NAME_RE.match(p["name"]):
            raise SweepError(
                f"{path}: point name '{p['name']}' must be letters, digits and . _ + = -"
            )
        if p["name"] in seen:
            raise SweepError(f"{path}: two points are named '{p['name']}'")
        seen.add(p["name"])
        p["index"] = i
        p["scenario"] = p["scenario"] or scenario
        p["args"] = list(common) + p["args"]
        if not all(isinstance(a, str) for a in p["args"]):
            raise SweepError(f"{path}: point {p['name']}: 'args' must be strings")
    return {"name": d.get("name", stem), "description": d.get("description", ""),
            "definition": os.path.abspath(path), "points": points}


def command_of(point, runner, out_dir, extra):
    """The runner command line of one point."""
    cmd = [runner]
    if point["scenario"]:
        cmd.append("--scenario=" + point["scenario"])
    cmd += point["args"] + list(extra)
    cmd += ["--out=" + os.path.join(out_dir, point["name"]), "--quiet"]
    return cmd


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


def _fmt_time(seconds):
    if seconds is None:
        return "--:--"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            text = f.read().rstrip("\n").splitlines()
    except OSError:
        return []
    return text[-lines:]


class Progress:
    """Points done / total, running, failed, elapsed and ETA: one updating line on a TTY,
    one plain line per finished point otherwise."""

    def __init__(self, total, stream, quiet):
        self.total = total
        self.stream = stream
        self.quiet = quiet
        self.tty = stream.isatty()
        self.start = time.monotonic()
        self.done = 0
        self.failed = 0
        self.running = 0
        self.last_draw = 0.0
        self.width = 0

    def _eta(self):
        if self.done == 0:
            return None
        elapsed = time.monotonic() - self.start
        return elapsed / self.done * (self.total - self.done)

    def _status(self):
        elapsed = time.monotonic() - self.start
        failed = f", {self.failed} FAILED" if self.failed else ""
        return (f"[sweep] {self.done}/{self.total} done, {self.running} running{failed}, "
                f"elapsed {_fmt_time(elapsed)}, ETA {_fmt_time(self._eta())}")

    def draw(self, force=False):
        if self.quiet or not self.tty:
            return
        now = time.monotonic()
        if not force and now - self.last_draw < 0.5:
            return
        self.last_draw = now
        line = self._status()
        pad = max(0, self.width - len(line))
        self.width = len(line)
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()

    def finished(self, point, status, wall):
        self.done += 1
        self.failed += status != "ok"
        if self.quiet:
            return
        msg = f"{point['name']}: {status} in {wall:.1f} s"
        if self.tty:
            if status != "ok":
                self.stream.write("\r" + " " * self.width + "\r" + "[sweep] " + msg + "\n")
                self.width = 0
            self.draw(force=True)
        else:
            self.stream.write(f"{self._status()}  ({msg})\n")
            self.stream.flush()

    def close(self):
        if not self.quiet and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def write_point_record(out_dir, point, cmd, status, exit_code, wall):
    record = {
        "index": point["index"],
        "point": point["name"],
        "params": point["params"],
        "scenario": point["scenario"],
        "args": point["args"],
        "command": cmd,
        "status": status,
        "exit_code": exit_code,
        "wall_s": round(wall, 3),
    }
    with open(os.path.join(out_dir, point["name"], "point.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    return record


def start_point(point, runner, out_dir, extra):
    pdir = os.path.join(out_dir, point["name"])
    os.makedirs(pdir, exist_ok=True)
    for stale in ("point.json",):
        try:
            os.remove(os.path.join(pdir, stale))
        except FileNotFoundError:
            pass
    cmd = command_of(point, runner, out_dir, extra)
    stdout = open(os.path.join(pdir, "runner.stdout"), "w")
    stderr = open(os.path.join(pdir, "runner.stderr"), "w")
    try:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                cwd=ROOT)
    except OSError as e:
        stderr.write(f"metaroce-sweep: cannot start {cmd[0]}: {e.strerror}\n")
        stdout.close()
        stderr.close()
        return None, cmd
    stdout.close()
    stderr.close()
    return proc, cmd


def run_points(points, runner, out_dir, jobs, extra, timeout, quiet):
    """Run points with at most `jobs` processes at a time. Returns the point records."""
    progress = Progress(len(points), sys.stderr, quiet)
    pending = list(points)
    running = {}  # pid -> (point, proc, cmd, start)
    records = []

    def finish(point, cmd, status, code, wall):
        records.append(write_point_record(out_dir, point, cmd, status, code, wall))
        progress.running = len(running)
        progress.finished(point, status, wall)

    try:
        while pending or running:
            while pending and len(running) < jobs:
                point = pending.pop(0)
                proc, cmd = start_point(point, runner, out_dir, extra)
                if proc is None:
                    finish(point, cmd, "failed", -1, 0.0)
                    continue
                running[proc.pid] = (point, proc, cmd, time.monotonic())
            progress.running = len(running)
            progress.draw()
            time.sleep(0.05)
            for pid in list(running):
                point, proc, cmd, t0 = running[pid]
                code = proc.poll()
                wall = time.monotonic() - t0
                if code is None and timeout and wall > timeout:
                    proc.kill()
                    proc.wait()
                    with open(os.path.join(out_dir, point["name"], "runner.stderr"), "a") as f:
                        f.write(f"metaroce-sweep: killed after the {timeout:g} s timeout\n")
                    del running[pid]
                    finish(point, cmd, "timeout", -9, wall)
                elif code is not None:
                    del running[pid]
                    finish(point, cmd, "ok" if code == 0 else "failed", code, wall)
            progress.running = len(running)
    except KeyboardInterrupt:
        for point, proc, cmd, t0 in running.values():
            proc.send_signal(signal.SIGTERM)
        for point, proc, cmd, t0 in running.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            records.append(write_point_record(out_dir, point, cmd, "interrupted", -2,
                                              time.monotonic() - t0))
        progress.close()
        raise
    progress.close()
    return records


# ---------------------------------------------------------------------------------------------
# Index
# ---------------------------------------------------------------------------------------------


def collect(sweep, out_dir):
    """Read every point's point.json (missing ones are 'not-run') into an ordered list."""
    records = []
    for p in sweep["points"]:
        path = os.path.join(out_dir, p["name"], "point.json")
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, json.JSONDecodeError):
            r = {"index": p["index"], "point": p["name"], "params": p["params"],
                 "scenario": p["scenario"], "args": p["args"], "command": None,
                 "status": "not-run", "exit_code": None, "wall_s": None}
        r["index"] = p["index"]
        records.append(r)
    return records


def write_index(sweep, out_dir, records):
    """index.json (definition and every record) and index.csv (one row per point)."""
    records = sorted(records, key=lambda r: r["index"])
    params = []
    for r in records:
        for k in r["params"]:
            if k not in params:
                params.append(k)
    with open(os.path.join(out_dir, "index.json"), "w") as f:
        json.dump({"sweep": sweep["name"], "description": sweep["description"],
                   "definition": sweep["definition"], "points": records}, f, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "index.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(INDEX_FIELDS + params)
        for r in records:
            w.writerow([r["index"], r["point"], r["status"],
                        "" if r["exit_code"] is None else r["exit_code"],
                        "" if r["wall_s"] is None else f"{r['wall_s']:.3f}", r["point"]]
                       + [_csv_value(r["params"].get(k, "")) for k in params])


def _csv_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(";", ":")).replace(",", ";")
    return v


def load_index(out_dir):
    """Helper for plot scripts: the records of <out_dir>/index.json, in point order."""
    with open(os.path.join(out_dir, "index.json")) as f:
        return json.load(f)["points"]


def report_failures(out_dir, records, stream):
    bad = [r for r in records if r["status"] not in ("ok",)]
    for r in bad:
        if r["status"] == "not-run":
            stream.write(f"[sweep] point {r['index']} '{r['point']}' NOT RUN (no point.json)\n")
            continue
        stream.write(f"\n[sweep] point {r['index']} '{r['point']}' {r['status'].upper()}"
                     f" (exit status {r['exit_code']})\n")
        if r.get("command"):
            stream.write("  command: " + " ".join(shlex.quote(c) for c in r["command"]) + "\n")
        tail = _tail(os.path.join(out_dir, r["point"], "runner.stderr"))
        if tail:
            stream.write("  stderr (last lines):\n")
            for line in tail:
                stream.write("    " + line + "\n")
        else:
            stream.write("  stderr: (empty)\n")
    return bad


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def select(points, spec):
    """A point by index or name."""
    for p in points:
        if spec == p["name"] or (spec.isdigit() and int(spec) == p["index"]):
            return p
    raise SweepError(f"no point '{spec}' (indices 0..{len(points) - 1}; see --list)")


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="metaroce-sweep",
        description="Run the points of a sweep definition as parallel metaroce-run processes.",
        epilog="See docs/sweeps.md.")
    ap.add_argument("definition", help="sweep definition (JSON)")
    ap.add_argument("-o", "--out", help="sweep folder (default runs/<sweep>-<YYYYmmdd-HHMMSS>)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="points run at once (default: the number of cores, %(default)s)")
    ap.add_argument("--runner", default=os.environ.get("METAROCE_RUN", DEFAULT_RUNNER),
                    help="the metaroce-run binary (default $METAROCE_RUN or build/bin/metaroce-run)")
    ap.add_argument("--arg", dest="extra", action="append", default=[], metavar="ARG",
                    help="extra runner argument for every point, after the point's own "
                    "(repeatable), e.g. --arg=--stop-ms=20")
    ap.add_argument("--only", metavar="REGEX", help="run only the points whose name matches")
    ap.add_argument("--skip-done", action="store_true",
                    help="do not rerun points whose point.json says ok (resume a sweep)")
    ap.add_argument("--timeout", type=float, default=0,
                    help="kill a point after this many seconds (default: no limit)")
    ap.add_argument("--list", action="store_true",
                    help="print 'index name arguments' for every point and exit")
    ap.add_argument("--count", action="store_true", help="print the number of points and exit")
    ap.add_argument("--point", metavar="I",
                    help="run only point I (index or name), e.g. $SLURM_ARRAY_TASK_ID; needs -o")
    ap.add_argument("--collect", action="store_true",
                    help="rebuild index.csv / index.json from the point folders; needs -o")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    args = ap.parse_args(argv)

    try:
        sweep = load_definition(args.definition)
        points = sweep["points"]
        if args.count:
            print(len(points))
            return 0
        if args.list:
            for p in points:
                cmd = command_of(p, "metaroce-run", args.out or "<dir>", args.extra)[1:-2]
                print(f"{p['index']}\t{p['name']}\t" + " ".join(shlex.quote(c) for c in cmd))
            return 0
        if args.jobs < 1:
            raise SweepError("-j must be at least 1")
        if (args.point is not None or args.collect) and not args.out:
            raise SweepError("--point and --collect need the sweep folder (-o DIR)")
        out_dir = args.out or os.path.join(
            "runs", f"{sweep['name']}-{time.strftime('%Y%m%d-%H%M%S')}")
        out_dir = os.path.abspath(out_dir)
        if args.collect:
            records = collect(sweep, out_dir)
            write_index(sweep, out_dir, records)
            bad = report_failures(out_dir, records, sys.stderr)
            print(f"[sweep] index: {os.path.join(out_dir, 'index.csv')} "
                  f"({len(records) - len(bad)} of {len(records)} points ok)", file=sys.stderr)
            return 1 if bad else 0
        todo = points
        if args.point is not None:
            todo = [select(points, args.point)]
        if args.only:
            rx = re.compile(args.only)
            todo = [p for p in todo if rx.search(p["name"])]
        if args.skip_done:
            done = {r["point"] for r in collect(sweep, out_dir) if r["status"] == "ok"}
            todo = [p for p in todo if p["name"] not in done]
        args.runner = os.path.abspath(args.runner)  # points run with the repository as cwd
        if not os.access(args.runner, os.X_OK):
            raise SweepError(f"the runner {args.runner} is not an executable "
                             "(build it: ./metaroce build, or pass --runner)")
    except SweepError as e:
        print(f"metaroce-sweep: {e}", file=sys.stderr)
        return 2

    os.makedirs(out_dir, exist_ok=True)
    if not args.quiet:
        print(f"[sweep] {sweep['name']}: {len(todo)} point(s), -j {args.jobs}, folder {out_dir}",
              file=sys.stderr)
    t0 = time.monotonic()
    try:
        run_points(todo, args.runner, out_dir, args.jobs, args.extra, args.timeout, args.quiet)
    except KeyboardInterrupt:
        if args.point is None:
            write_index(sweep, out_dir, collect(sweep, out_dir))
        print("[sweep] interrupted", file=sys.stderr)
        return 130
    records = collect(sweep, out_dir)
    if args.point is not None:
        # Job-array task: only this point's point.json; --collect writes the index.
        bad = report_failures(out_dir, [r for r in records if r["point"] == todo[0]["name"]],
                              sys.stderr)
        return 1 if bad else 0
    write_index(sweep, out_dir, records)
    ran = {p["name"] for p in todo}
    bad = report_failures(out_dir, [r for r in records if r["point"] in ran], sys.stderr)
    if not args.quiet:
        print(f"[sweep] {len(ran) - len(bad)} of {len(ran)} point(s) ok in "
              f"{time.monotonic() - t0:.1f} s; index {os.path.join(out_dir, 'index.csv')}",
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
