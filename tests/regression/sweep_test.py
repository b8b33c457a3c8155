#!/usr/bin/python3
"""Tests of tools/metaroce-sweep.py with a fake runner (no ns-3): grid expansion, parallel
runs, the index, failure reporting and exit status, --point / --collect (job arrays), --list,
--skip-done and bad definitions. Standard library only; exit status 0 when all pass."""

import csv
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = os.path.join(ROOT, "tools", "metaroce-sweep.py")

# The fake runner writes its arguments into --out and fails when asked to (--loss=bad).
FAKE_RUNNER = """#!/bin/sh
out=""
for a in "$@"; do
  case "$a" in
    --out=*) out="${a#--out=}" ;;
  esac
done
mkdir -p "$out"
printf '%s\\n' "$@" > "$out/args.txt"
for a in "$@"; do
  if [ "$a" = "--loss=bad" ]; then
    echo "metaroce-run: --loss=bad: not a probability" >&2
    exit 2
  fi
done
echo "summary" > "$out/summary.txt"
exit 0
"""


class SweepTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.runner = os.path.join(self.dir, "fake-run")
        with open(self.runner, "w") as f:
            f.write(FAKE_RUNNER)
        os.chmod(self.runner, os.stat(self.runner).st_mode | stat.S_IEXEC)
        with open(os.path.join(self.dir, "scen.textproto"), "w") as f:
            f.write("name: \"x\"\n")

    def tearDown(self):
        self.tmp.cleanup()

    def definition(self, losses, extra=None):
        d = {
            "name": "t",
            "scenario": "scen.textproto",
            "args": ["--stop-ms=5"],
            "grid": [
                [{"name": "a", "args": ["--transport=metaroce"], "params": {"transport": "a"}},
                 {"name": "b", "args": ["--transport=rocev2"], "params": {"transport": "b"}}],
                {"param": "loss", "values": losses, "arg": "--loss={}", "name": "p{}"},
            ],
        }
        d.update(extra or {})
        path = os.path.join(self.dir, "sweep.json")
        with open(path, "w") as f:
            json.dump(d, f)
        return path

    def sweep(self, *args):
        return subprocess.run([sys.executable, SWEEP, *args, "--runner", self.runner],
                              capture_output=True, text=True)

    def test_grid_runs_every_point_in_parallel_and_indexes(self):
        out = os.path.join(self.dir, "out")
        r = self.sweep(self.definition([0, 0.01]), "-o", out, "-j", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "index.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([x["point"] for x in rows], ["a-p0", "a-p0.01", "b-p0", "b-p0.01"])
        self.assertTrue(all(x["status"] == "ok" and x["exit_code"] == "0" for x in rows))
        self.assertEqual(rows[3]["transport"], "b")
        self.assertEqual(rows[3]["loss"], "0.01")
        with open(os.path.join(out, "b-p0.01", "args.txt")) as f:
            args = f.read().split("\n")
        self.assertIn("--scenario=" + os.path.join(self.dir, "scen.textproto"), args)
        # Common args first, then the variants' in axis order, then --out and --quiet.
        self.assertLess(args.index("--stop-ms=5"), args.index("--transport=rocev2"))
        self.assertLess(args.index("--transport=rocev2"), args.index("--loss=0.01"))
        self.assertIn("--out=" + os.path.join(out, "b-p0.01"), args)
        with open(os.path.join(out, "index.json")) as f:
            self.assertEqual(len(json.load(f)["points"]), 4)

    def test_failed_point_is_reported_with_stderr_and_exit_1(self):
        out = os.path.join(self.dir, "out")
        r = self.sweep(self.definition([0, "bad"]), "-o", out, "-j", "2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("'a-pbad' FAILED (exit status 2)", r.stderr)
        self.assertIn("--loss=bad: not a probability", r.stderr)
        with open(os.path.join(out, "index.csv")) as f:
            status = {x["point"]: x["status"] for x in csv.DictReader(f)}
        self.assertEqual(status, {"a-p0": "ok", "a-pbad": "failed", "b-p0": "ok",
                                  "b-pbad": "failed"})

    def test_job_array_point_then_collect(self):
        d = self.definition([0, 0.1])
        out = os.path.join(self.dir, "arr")
        self.assertEqual(self.sweep(d, "--count").stdout.strip(), "4")
        listing = self.sweep(d, "--list").stdout.strip().split("\n")
        self.assertTrue(listing[2].startswith("2\tb-p0\t"))
        for i in (0, 1, 3):
            r = self.sweep(d, "-o", out, "--point", str(i), "-q")
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "index.csv")))
        r = self.sweep(d, "-o", out, "--collect")
        self.assertEqual(r.returncode, 1)
        self.assertIn("'b-p0' NOT RUN", r.stderr)
        self.assertEqual(self.sweep(d, "-o", out, "--point", "b-p0", "-q").returncode, 0)
        self.assertEqual(self.sweep(d, "-o", out, "--collect").returncode, 0)
        # --skip-done then runs nothing.
        r = self.sweep(d, "-o", out, "--skip-done")
        self.assertIn("0 point(s)", r.stderr)

    def test_bad_definitions_exit_2(self):
        bad = os.path.join(self.dir, "bad.json")
        for text, message in [
            ("{", "Expecting"),
            ('{"points": [{"name": "x y"}]}', "must be letters"),
            ('{"points": [{"name": "x"}, {"name": "x"}]}', "two points are named"),
            ('{"name": "e"}', "no points"),
        ]:
            with open(bad, "w") as f:
                f.write(text)
            r = self.sweep(bad, "-o", os.path.join(self.dir, "o"))
            self.assertEqual(r.returncode, 2, text)
            self.assertIn(message, r.stderr)
        r = subprocess.run([sys.executable, SWEEP, self.definition([0]), "--runner",
                            os.path.join(self.dir, "missing")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not an executable", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
