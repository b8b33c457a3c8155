#!/bin/bash
# Experiment 6 (docs/validation.md): permutation on a three-tier fat tree, MetaRoCE spraying
# (8 paths, the default, and 32) vs MetaRoCE on one path vs RoCEv2 ECMP (PFC + DCQCN), and the
# RoCEv2 ablations without PFC and without DCQCN; every RoCEv2 arm with the datacenter-tuned
# local ACK timeout of experiment 1 (7: 524 us). Then the table and the figure.
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
LAT=--ns3::MetaRoceNic::RoceLocalAckTimeout=7
run --scenario="$SCEN" --set=topology.k="$K" --transport=rocev2 "$LAT" --out="$OUT/k$K-rocev2"
run --scenario="$SCEN" --set=topology.k="$K" --transport=rocev2 --pfc=false "$LAT" \
    --out="$OUT/k$K-rocev2-nopfc"
run --scenario="$SCEN" --set=topology.k="$K" --transport=rocev2 "$LAT" \
    --ns3::MetaRoceNic::Dcqcn=false --out="$OUT/k$K-rocev2-nodcqcn"
finish
/usr/bin/python3 "$ROOT/plots/exp-spray.py" "$OUT" -o "$OUT/spray.png"
