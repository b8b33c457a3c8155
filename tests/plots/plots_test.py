#!/usr/bin/python3
"""Tests of the plot scripts (plots/*.py) without ns-3: every script with a shebang runs as an
executable under a Python that has matplotlib, and plots/loss-sweep.py labels each series from
the run's own record (scenario.pb.txt) and takes its axis label and title from the runs, not
from hard-coded text. Exit status 0 when all pass."""

import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOTS = os.path.join(ROOT, "plots")

FLOWS_HEADER = ("flow_id,src,dst,bytes,start_us,finish_us,fct_us,ideal_fct_us,slowdown,"
                "retransmissions,timeouts,completed")


def write_run(run_dir, transport, pfc, recovery="gbn", scope="HOST_DOWNLINKS", goodput=1000):
    """A minimal run folder: what sweeplib reads (docs/outputs.md)."""
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "flows.csv"), "w") as f:
        f.write(FLOWS_HEADER + "\n")
        f.write("0,1,0,2000,1,21,20,10,2,0,0,1\n")
    with open(os.path.join(run_dir, "goodput.csv"), "w") as f:
        f.write("time_us,interval_us,host,bytes,goodput_gbps\n")
        f.write(f"11,10,-1,{goodput},0.8\n21,10,-1,{goodput},0.8\n")
    with open(os.path.join(run_dir, "summary.pb.txt"), "w") as f:
        # Deliberately the transport only: the series comes from scenario.pb.txt.
        f.write(f'scenario: "fake"\ntransport: "{transport}"\nflows: 1\nsim_time_us: 30\n')
    with open(os.path.join(run_dir, "scenario.pb.txt"), "w") as f:
        f.write('name: "fake"\ntopology {\n  kind: LEAF_SPINE\n  leaves: 2\n'
                '  hosts_per_leaf: 8\n  planes: 1\n  link_rate_gbps: 100\n'
                f'  pfc: {"true" if pfc else "false"}\n}}\n'
                f'transport {{\n  name: "{transport}"\n  rocev2_recovery: "{recovery}"\n'
                '  nic_attributes {\n    name: "RtoMin"\n    value: "50us"\n  }\n}\n'
                + ('loss {\n  bernoulli: 0.01\n' + (f'  scope: {scope}\n' if scope else '')
                   + '}\n'))


def write_sweep(sweep_dir, points):
    """index.json of a fake sweep: (name, params, record pfc, scope) per point."""
    records = []
    for name, params, pfc, scope in points:
        write_run(os.path.join(sweep_dir, name), params["transport"], pfc,
                  params.get("recovery", "gbn"), scope,
                  goodput=1000 if params["loss"] == 0 else 800)
        records.append({"point": name, "status": "ok", "params": params, "wall_s": 0.1})
    with open(os.path.join(sweep_dir, "index.json"), "w") as f:
        json.dump({"points": records}, f)


def load_loss_sweep():
    spec = importlib.util.spec_from_file_location("loss_sweep", os.path.join(PLOTS,
                                                                             "loss-sweep.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PlotScriptsTest(unittest.TestCase):
    def test_scripts_run_as_executables_with_matplotlib(self):
        scripts = sorted(f for f in os.listdir(PLOTS) if f.endswith(".py"))
        with_shebang = 0
        for name in scripts:
            path = os.path.join(PLOTS, name)
            with open(path) as f:
                first = f.readline().rstrip("\n")
            if not first.startswith("#!"):
                continue  # a library module (sweeplib.py, exp_common.py)
            with_shebang += 1
            self.assertTrue(os.access(path, os.X_OK), f"{name} is not executable")
            interpreter = first[2:].split()
            # `env python3` finds whatever python3 is first on PATH, which may lack matplotlib.
            self.assertNotIn("env", os.path.basename(interpreter[0]),
                             f"{name}: {first} depends on PATH")
            check = subprocess.run(interpreter + ["-c", "import matplotlib"],
                                   capture_output=True, text=True)
            self.assertEqual(check.returncode, 0,
                             f"{name}: {first} has no matplotlib: {check.stderr}")
            run = subprocess.run([path, "--help"], capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, f"{name} --help: {run.stderr}")
        self.assertGreaterEqual(with_shebang, 7)

    def test_loss_sweep_labels_pfc_from_the_run_record(self):
        with tempfile.TemporaryDirectory() as tmp:
            sweep = os.path.join(tmp, "sweep")
            os.makedirs(sweep)
            # The parameters say PFC off, but the runs' arguments turned it on: the record wins.
            params = {"transport": "rocev2", "recovery": "gbn", "pfc": False}
            write_sweep(sweep, [
                ("rocev2-p0", dict(params, loss=0), True, "HOST_DOWNLINKS"),
                ("rocev2-p0.01", dict(params, loss=0.01), True, "HOST_DOWNLINKS"),
                ("metaroce-p0", {"transport": "metaroce", "recovery": "sack", "pfc": False,
                                 "loss": 0}, False, "HOST_DOWNLINKS"),
            ])
            run = subprocess.run([os.path.join(PLOTS, "loss-sweep.py"), sweep],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("RoCEv2 go-back-N, PFC on", run.stdout)
            self.assertNotIn("PFC off", run.stdout)
            with open(os.path.join(sweep, "loss-sweep.csv")) as f:
                series = {r["point"]: r["series"] for r in csv.DictReader(f)}
            self.assertEqual(series["rocev2-p0.01"], "rocev2/gbn/pfc")
            self.assertEqual(series["metaroce-p0"], "metaroce/sack/nopfc")
            self.assertTrue(os.path.getsize(os.path.join(sweep, "loss-sweep.png")) > 0)

    def test_loss_sweep_axis_label_and_title_come_from_the_runs(self):
        module = load_loss_sweep()
        import matplotlib.figure

        drawn = {}

        def capture(fig, out, **kwargs):
            drawn["title"] = fig._suptitle.get_text()
            drawn["xlabels"] = [ax.get_xlabel() for ax in fig.axes]

        saved = matplotlib.figure.Figure.savefig
        matplotlib.figure.Figure.savefig = capture
        try:
            cases = [("HOST_DOWNLINKS", "end-to-end per data packet"),
                     ("FABRIC_LINKS", "switch-to-switch link"),
                     (None, "on every link")]  # ALL_LINKS, the default, is not printed
            for scope, label in cases:
                with tempfile.TemporaryDirectory() as tmp:
                    params = {"transport": "metaroce", "recovery": "sack", "pfc": False}
                    write_sweep(tmp, [("a", dict(params, loss=0), False, scope),
                                      ("b", dict(params, loss=0.01), False, scope)])
                    rows = module.sweeplib.loss_table(tmp)
                    module.plot_sweep(rows, os.path.join(tmp, "x.png"))
                    self.assertIn(label, drawn["xlabels"][0], scope)
                    self.assertEqual(drawn["title"], "Goodput under random loss (ns-3 fabric, "
                                     "1 flows, 2 x 8 leaf-spine, 100 Gb/s)")
                    module.plot_sweep(rows, os.path.join(tmp, "x.png"), "My title", "My axis")
                    self.assertEqual(drawn["title"], "My title")
                    self.assertEqual(drawn["xlabels"][0], "My axis")
        finally:
            matplotlib.figure.Figure.savefig = saved


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)
