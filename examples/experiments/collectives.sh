#!/bin/bash
# Experiment 2 (docs/validation.md): ring all-reduce and all-to-all over 64 hosts, loss-free
# and at 1% random loss on every link (each direction), MetaRoCE vs RoCEv2 + PFC + DCQCN vs
# RoCEv2 without PFC (DCQCN on, go-back-N) vs RoCEv2 without PFC with IRN recovery. Every
# RoCEv2 arm uses the datacenter-tuned local ACK timeout of experiment 1 (7: 524 us; the
# engine's default 14 is 67 ms). The all-to-all also as RDMA READs. 24 runs, JOBS at a time;
# then table and figure.
#
#   examples/experiments/collectives.sh [OUT]      (default runs/exp2-collectives)
#   env: BIN (default build/bin/metaroce-run), JOBS (default 2)
set -eu
source "$(dirname "$0")/common.sh"
OUT=${1:-$ROOT/runs/exp2-collectives}
mkdir -p "$OUT"
LAT=--ns3::MetaRoceNic::RoceLocalAckTimeout=7
# alltoall-read: the all-to-all as RDMA READs (each host reads 256 KiB from every other, as
# storage and parameter-server traffic does): workload.operation READ.
for coll in allreduce alltoall alltoall-read; do
    for loss in 0 0.01; do
        scen=$ROOT/examples/scenarios/collective-${coll%-read}-64.textproto
        op=()
        if [ "$coll" = alltoall-read ]; then op=(--set='workload { operation: READ }'); fi
        run --scenario="$scen" "${op[@]}" --loss=$loss --out="$OUT/$coll-metaroce-loss$loss"
        run --scenario="$scen" "${op[@]}" --loss=$loss --transport=rocev2 --pfc=true "$LAT" \
            --out="$OUT/$coll-rocev2-pfc-loss$loss"
        run --scenario="$scen" "${op[@]}" --loss=$loss --transport=rocev2 --pfc=false "$LAT" \
            --out="$OUT/$coll-rocev2-nopfc-loss$loss"
        run --scenario="$scen" "${op[@]}" --loss=$loss --transport=rocev2 --pfc=false "$LAT" \
            --ns3::MetaRoceNic::RoceRecovery=irn --out="$OUT/$coll-rocev2-irn-loss$loss"
    done
done
finish
/usr/bin/python3 "$ROOT/plots/exp-collectives.py" "$OUT" -o "$OUT/collectives.png"
