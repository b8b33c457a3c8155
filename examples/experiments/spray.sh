#!/bin/bash
# Experiment 6 (docs/validation.md): permutation on a three-tier fat tree, MetaRoCE spraying
# (8 paths, the default, and 32) vs MetaRoCE on one path vs RoCEv2 ECMP (PFC + DCQCN); then
# the table and the figure.
#
#   examples/experiments/spray.sh [K] [OUT]   K = 8 (128 hosts, default) or 16 (1,024 hosts)
#   env: BIN (default build/bin/metaroce-run), JOBS (default 2)
set -eu
source "$(dirname "$0")/common.sh"
K=${1:-8}
OUT=${2:-$ROOT/runs/exp6-spray}
SCEN=$ROOT/examples/scenarios/spray-fat-tree-128.textproto
mkdir -p "$OUT"
run --scenario="$SCEN" --set=topology.k="$K" --out="$OUT/k$K-spray"
run --scenario="$SCEN" --set=topology.k="$K" --set=transport.paths=32 --out="$OUT/k$K-spray32"
run --scenario="$SCEN" --set=topology.k="$K" --set=transport.path_scheduler=single \
    --out="$OUT/k$K-single"
run --scenario="$SCEN" --set=topology.k="$K" --transport=rocev2 --out="$OUT/k$K-rocev2"
finish
/usr/bin/python3 "$ROOT/plots/exp-spray.py" "$OUT" -o "$OUT/spray.png"
