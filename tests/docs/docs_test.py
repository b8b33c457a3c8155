#!/usr/bin/python3
"""Checks of the documentation against the repository (no build needed): relative links in the
Markdown docs lead to files inside the repository, repository paths named in the proto schema
exist, and docs/building.md describes every command of `./metaroce help` (with `demo` as the
driver runs it). Standard library only; exit status 0 when all pass."""

import glob
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PATH = re.compile(r"\b((?:docs|examples|hil|tools|plots|proto|tests|contrib)/[\w./-]*\w)")


def markdown_files():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs",
                                                                             "*.md")))


class DocsTest(unittest.TestCase):
    def test_relative_links_stay_in_the_repository_and_exist(self):
        for md in markdown_files():
            with open(md) as f:
                text = f.read()
            name = os.path.relpath(md, ROOT)
            self.assertNotIn("../shared/", text, f"{name} points outside the repository")
            for target in LINK.findall(text):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue  # a URL or an anchor in the same page
                path = os.path.normpath(os.path.join(os.path.dirname(md),
                                                     target.split("#")[0]))
                self.assertTrue(path.startswith(ROOT + os.sep),
                                f"{name}: link {target} leaves the repository")
                self.assertTrue(os.path.exists(path), f"{name}: link {target} is broken")

    def test_paths_named_in_the_proto_schema_exist(self):
        protos = glob.glob(os.path.join(ROOT, "proto", "*.proto"))
        self.assertTrue(protos)
        for proto in protos:
            with open(proto) as f:
                comments = "\n".join(line.split("//", 1)[1] for line in f if "//" in line)
            for path in PATH.findall(comments):
                self.assertTrue(os.path.exists(os.path.join(ROOT, path.rstrip("."))),
                                f"{os.path.basename(proto)} names {path}, which does not exist")

    def test_building_md_describes_the_driver_commands(self):
        help_text = subprocess.run([os.path.join(ROOT, "metaroce"), "help"],
                                   capture_output=True, text=True).stdout
        commands = re.findall(r"^  ([a-z][a-z-]*)\b", help_text, re.MULTILINE)
        self.assertIn("demo", commands)
        with open(os.path.join(ROOT, "docs", "building.md")) as f:
            building = f.read()
        rows = {m.group(1): m.group(0) for m in
                re.finditer(r"^\| `\./metaroce ([a-z-]+)[^`]*` \|.*$", building, re.MULTILINE)}
        for command in commands:
            if command != "help":
                self.assertIn(command, rows, f"docs/building.md has no row for {command}")
        # demo: the driver runs the ns-3 loss sweep of this definition; --engine the old demo.
        with open(os.path.join(ROOT, "metaroce")) as f:
            driver = f.read()
        self.assertIn("examples/sweeps/demo-loss.json", driver)
        self.assertIn("examples/sweeps/demo-loss.json", rows["demo"])
        self.assertIn("--engine", rows["demo"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)
