#!/bin/bash
# Experiment 5 (docs/validation.md): 32-to-1 and 64-to-1 incast, MetaRoCE with and without the
# receiver's rate hint (MetaRoceNic attribute RateHint, on by default); 64-to-1 also with an
# first flight of 8 packets, and with a 1 ms RTO floor (sensitivity). Then table and figure.
#
#   examples/experiments/incast.sh [OUT]      (default runs/exp5-incast)
#   env: BIN (default build/bin/metaroce-run), JOBS (default 2)
set -eu
source "$(dirname "$0")/common.sh"
OUT=${1:-$ROOT/runs/exp5-incast}
mkdir -p "$OUT"
for n in 32 64; do
    for hint in true false; do
        name=n$n-hint
        [ $hint = true ] || name=n$n-nohint
        run --scenario="$ROOT/examples/scenarios/incast-hint-64.textproto" \
            --set=workload.senders=$n \
            --set="transport { nic_attributes { name: \"RateHint\" value: \"$hint\" } }" \
            --out="$OUT/$name"
    done
done
# Sensitivity (not defaults), 64-to-1: a first flight of 8 packets instead of 32 per sender
# (InitialConnectionWindow; a 4x smaller first burst, 1 packet on each of the 8 paths);
# retransmission timer floor 1 ms and initial RTO 2 ms instead of 100 / 200 us (above the
# queueing delay of the incast, so no spurious timeout).
for hint in true false; do
    h=hint
    [ $hint = true ] || h=nohint
    run --scenario="$ROOT/examples/scenarios/incast-hint-64.textproto" \
        --set=workload.senders=64 \
        --set="transport { nic_attributes { name: \"InitialConnectionWindow\" value: \"8\" } }" \
        --set="transport { nic_attributes { name: \"RateHint\" value: \"$hint\" } }" \
        --out="$OUT/n64-$h-iw1"
    run --scenario="$ROOT/examples/scenarios/incast-hint-64.textproto" \
        --set=workload.senders=64 \
        --set="transport { nic_attributes { name: \"RateHint\" value: \"$hint\" } }" \
        --set="transport { nic_attributes { name: \"RtoInitial\" value: \"2ms\" } }" \
        --set="transport { nic_attributes { name: \"RtoMin\" value: \"1ms\" } }" \
        --out="$OUT/n64-$h-rto1ms"
done
finish
/usr/bin/python3 "$ROOT/plots/exp-incast.py" "$OUT" -o "$OUT/incast.png"
