#!/bin/bash
# Experiment 3 (docs/validation.md): multiplane scaling. 64-host all-to-all (4,032 MetaRoCE
# connections) on 1, 2, 4 and 8 planes, 64 KiB x P per flow; then the table and the figure.
#
#   examples/experiments/multiplane.sh [OUT]      (default runs/exp3-multiplane)
#   env: BIN (default build/bin/metaroce-run), JOBS (default 2)
set -eu
source "$(dirname "$0")/common.sh"
OUT=${1:-$ROOT/runs/exp3-multiplane}
mkdir -p "$OUT"
for p in 8 4 2 1; do
    run --scenario="$ROOT/examples/scenarios/multiplane-alltoall-64.textproto" \
        --set=topology.planes=$p --set=workload.flow_bytes=$((65536 * p)) --out="$OUT/planes$p"
done
finish
/usr/bin/python3 "$ROOT/plots/exp-multiplane.py" "$OUT" -o "$OUT/multiplane.png"
