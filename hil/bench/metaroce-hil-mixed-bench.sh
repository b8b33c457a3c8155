#!/usr/bin/env bash
# Mixed-run benchmark: a real metaroce-perf client (namespace B, TAP mrf0) writes to a simulated
# host (metaroce-hil-fabric --sim-hosts, control TAP mrc0 in namespace A) through the simulated
# leaf-spine fabric. Per run: goodput, the fabric's CPU time (user + sys), its largest and mean
# lag, the most frames queued at a TAP, the frames marked CE for the lag, and the simulated
# host's verdict. Section "Mixed runs: the batched TAP frame path" of docs/benchmarks.md.
#
#   sudo hil/bench/metaroce-hil-mixed-bench.sh [BUILD_DIR] [ROUNDS] [ITERS]
#
# BUILD_DIR defaults to build/, ROUNDS to 3, ITERS (64 KiB messages per run) to 1000.
# Environment: MTUS (engine MTUs, default "1024 4096"), OTHER_BUILD (more build directories,
# space-separated, run alternately with BUILD_DIR in each round, for a same-sitting
# comparison; a directory's bin/metaroce-hil-fabric may be a script that adds options), FABRIC_EXTRA
# (options added to metaroce-hil-fabric, e.g. "--lag-ecn-us 0"). Needs root. The namespaces are
# removed on exit, also on failure or Ctrl-C.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
ROUNDS=${2:-3}
ITERS=${3:-1000}
read -r -a MTU_LIST <<<"${MTUS:-1024 4096}"
read -r -a FABRIC_EXTRA <<<"${FABRIC_EXTRA:-}"
BUILDS=("$BUILD")
read -r -a OTHER_BUILDS <<<"${OTHER_BUILD:-}"
BUILDS+=("${OTHER_BUILDS[@]}")
NS_A=mr-mixed-$$-a
NS_B=mr-mixed-$$-b
TMP=$(mktemp -d)

for b in "${BUILDS[@]}"; do
    for prog in metaroce-perf metaroce-hil-fabric; do
        [[ -x $b/bin/$prog ]] || { echo "missing $b/bin/$prog: build first" >&2; exit 1; }
    done
done
[[ $(id -u) -eq 0 ]] || { echo "needs root (network namespaces, TAP devices)" >&2; exit 1; }

FABRIC_PID=
cleanup() {
    [[ -n $FABRIC_PID ]] && kill -INT "$FABRIC_PID" 2>/dev/null || true
    ip netns del "$NS_A" 2>/dev/null || true
    ip netns del "$NS_B" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

# One run: print a table row.
run() {
    local build=$1 mtu=$2 round=$3
    ip netns add "$NS_A"
    ip netns add "$NS_B"
    local t0 t1
    t0=$(cut -d' ' -f1 /proc/loadavg)
    "$build/bin/metaroce-hil-fabric" --taps "$NS_B:mrf0" --sim-hosts "$NS_A:mrc0" \
        "${FABRIC_EXTRA[@]}" >"$TMP/fabric.out" 2>&1 &
    FABRIC_PID=$!
    # Wait for the simulated host's control plane (the fabric prints its line when it listens).
    for _ in $(seq 100); do
        grep -q "^sim host" "$TMP/fabric.out" && break
        sleep 0.05
    done
    sleep 0.5
    local client_rc=0
    timeout 120 ip netns exec "$NS_B" "$build/bin/metaroce-perf" 10.0.1.1 --port-mode raw \
        --dev mrf0 --op write --size 64K --iters "$ITERS" --paths 4 --mtu "$mtu" \
        >"$TMP/client.out" 2>&1 || client_rc=$?
    kill -INT "$FABRIC_PID"
    local fabric_rc=0
    wait "$FABRIC_PID" || fabric_rc=$?
    FABRIC_PID=
    t1=$(cut -d' ' -f1 /proc/loadavg)
    ip netns del "$NS_A"
    ip netns del "$NS_B"
    field() { tr ' ' '\n' <"$1" | grep "^$2=" | head -1 | cut -d= -f2; }
    local res="$TMP/result"
    grep '^RESULT' "$TMP/client.out" >"$res.c" || echo "" >"$res.c"
    grep '^RESULT' "$TMP/fabric.out" >"$res.f" || echo "" >"$res.f"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s-%s |\n' \
        "$round" "$build" "$mtu" "$(field "$res.c" status)" \
        "$(field "$res.c" gbps)" "$(field "$res.f" cpu_s)" "$(field "$res.f" lag_max_us)" \
        "$(field "$res.f" lag_mean_us)" "$(field "$res.f" queued_max)" "$(field "$res.f" lag_ce)" \
        "$(field "$res.f" sim_verified_msgs)/$(field "$res.f" sim_errors) (rc $client_rc/$fabric_rc)" \
        "$t0" "$t1"
}

echo "Mixed runs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kernel $(uname -r), $ITERS x 64 KiB per run"
echo
echo "| Round | Build | MTU | Status | Goodput (Gb/s) | Fabric CPU (s) | Largest lag (us) | Mean lag (us) | Queued (max) | Marked for the lag | Verified msgs / errors (rc client/fabric) | Load |"
echo "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"
for round in $(seq "$ROUNDS"); do
    for mtu in "${MTU_LIST[@]}"; do
        for b in "${BUILDS[@]}"; do
            run "$b" "$mtu" "$round"
        done
    done
done
