#!/bin/bash
# Experiment 4 (docs/validation.md): plane 1 of 4 fails at 300 us and returns at 900 us
# (fail-return); for comparison it never returns (fail-never) or never fails (no-failure).
# Then the table and the figure.
#
#   examples/experiments/plane-failure.sh [OUT]      (default runs/exp4-plane-failure)
#   env: BIN (default build/bin/metaroce-run), JOBS (default 2)
set -eu
source "$(dirname "$0")/common.sh"
OUT=${1:-$ROOT/runs/exp4-plane-failure}
SCEN=$ROOT/examples/scenarios/plane-failure-4.textproto
mkdir -p "$OUT"
# Variants of the scenario's one fail_plane entry (a repeated field: --set would append).
sed 's/stop_us: 900/stop_us: 0/' "$SCEN" > "$OUT/fail-never.textproto"
grep -v 'fail_plane {' "$SCEN" > "$OUT/no-failure.textproto"
run --scenario="$SCEN" --out="$OUT/fail-return"
run --scenario="$OUT/fail-never.textproto" --out="$OUT/fail-never"
run --scenario="$OUT/no-failure.textproto" --out="$OUT/no-failure"
finish
/usr/bin/python3 "$ROOT/plots/exp-plane-failure.py" "$OUT" -o "$OUT/plane-failure.png"
