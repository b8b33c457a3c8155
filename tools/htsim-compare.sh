#!/usr/bin/env bash
# MetaRoCE-ns3: issue 20's permutation on our fabric benchmark and on UEC's htsim, in one sitting.
#
#   tools/htsim-compare.sh --htsim PATH [options]
#
# CPU time on a shared VM drifts by 30-50 % between sittings, so issue 20's target (2x htsim)
# is judged by the same-sitting ratio htsim CPU / our CPU. This script alternates
# build/bin/metaroce-fabric-benchmark and htsim_uec (a binary you built from
# github.com/ultraethernet/uet-htsim; the script never downloads or builds it) for N rounds
# under /usr/bin/time, and prints CPU (user+sys), wall and peak RSS per run, the ratio per round
# and its median. Both run the same permutation: our benchmark prints its flows
# (--listFlows) and they are written as htsim's connection matrix, together with an htsim
# topology file for the same k-ary 3-tier fat tree. Options:
#   --htsim PATH       htsim_uec binary (required)
#   --ours PATH        our benchmark (default: build/bin/metaroce-fabric-benchmark)
#   --rounds N         rounds, each one run of both, the order alternating (default 3)
#   --paths P          paths per connection on both sides (default 8)
#   --k K              fat-tree radix, K^3/4 hosts (default 16: 1,024 hosts)
#   --bytes B          bytes per flow (default 2097152)
#   --seed S           permutation seed, our --seed (default 1)
#   --delay NS         link delay on both sides; default: ours from its --rtt 12 (832 ns at
#                      the defaults), htsim 1000 ns (its default, issue 20's "1 us links")
#   --end US           htsim's simulated time limit, us (default 10000; it stops earlier
#                      when no traffic is left)
#   --ours-arg ARG     one more argument for our benchmark (repeatable)
#   --htsim-arg ARG    one more argument for htsim (repeatable)
#   --keep DIR         keep the matrix, topology and logs in DIR (default: a temp dir, removed)
#
# A run counts only when it finished every flow: ours exits 0 and prints "flows N/N done";
# htsim prints one "finished at" line per connection and its final "Done".
# Exit status: 0 when every run finished every flow; 1 otherwise; 2 on usage errors.

set -euo pipefail

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
HTSIM=""
OURS="$ROOT/build/bin/metaroce-fabric-benchmark"
ROUNDS=3
PATHS=8
K=16
BYTES=2097152
SEED=1
DELAY_NS=""
END_US=10000
KEEP=""
OURS_EXTRA=()
HTSIM_EXTRA=()

log() { echo "[htsim-compare] $*" >&2; }
die() {
    echo "[htsim-compare] error: $1" >&2
    exit "${2:-1}"
}
usage() {
    sed -n '3,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [[ $# -gt 0 ]]; do
    case "$1" in
    --htsim) HTSIM="${2:?--htsim needs a path}"; shift 2 ;;
    --htsim=*) HTSIM="${1#*=}"; shift ;;
    --ours) OURS="${2:?--ours needs a path}"; shift 2 ;;
    --ours=*) OURS="${1#*=}"; shift ;;
    --rounds) ROUNDS="${2:?--rounds needs a number}"; shift 2 ;;
    --rounds=*) ROUNDS="${1#*=}"; shift ;;
    --paths) PATHS="${2:?--paths needs a number}"; shift 2 ;;
    --paths=*) PATHS="${1#*=}"; shift ;;
    --k) K="${2:?--k needs a number}"; shift 2 ;;
    --k=*) K="${1#*=}"; shift ;;
    --bytes) BYTES="${2:?--bytes needs a number}"; shift 2 ;;
    --bytes=*) BYTES="${1#*=}"; shift ;;
    --seed) SEED="${2:?--seed needs a number}"; shift 2 ;;
    --seed=*) SEED="${1#*=}"; shift ;;
    --delay) DELAY_NS="${2:?--delay needs nanoseconds}"; shift 2 ;;
    --delay=*) DELAY_NS="${1#*=}"; shift ;;
    --end) END_US="${2:?--end needs microseconds}"; shift 2 ;;
    --end=*) END_US="${1#*=}"; shift ;;
    --ours-arg) OURS_EXTRA+=("${2?--ours-arg needs an argument}"); shift 2 ;;
    --ours-arg=*) OURS_EXTRA+=("${1#*=}"); shift ;;
    --htsim-arg) HTSIM_EXTRA+=("${2?--htsim-arg needs an argument}"); shift 2 ;;
    --htsim-arg=*) HTSIM_EXTRA+=("${1#*=}"); shift ;;
    --keep) KEEP="${2:?--keep needs a directory}"; shift 2 ;;
    --keep=*) KEEP="${1#*=}"; shift ;;
    -h | --help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
    esac
done

[[ -n "$HTSIM" ]] || { echo "--htsim PATH is required (a built htsim_uec)" >&2; usage; }
[[ -f "$HTSIM" && -x "$HTSIM" ]] || die "--htsim: not an executable file: $HTSIM" 2
[[ -f "$OURS" && -x "$OURS" ]] ||
    die "--ours: not an executable file: $OURS (ninja -C build metaroce-fabric-benchmark)" 2
for v in ROUNDS PATHS K BYTES END_US; do
    [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v,,}: not a positive number: ${!v}" 2
done
[[ "$SEED" =~ ^[0-9]+$ ]] || die "--seed: not a number: $SEED" 2
[[ $((K % 2)) == 0 && $K -ge 4 ]] || die "--k: need an even radix >= 4: $K" 2
[[ -z "$DELAY_NS" || "$DELAY_NS" =~ ^[1-9][0-9]*$ ]] || die "--delay: not nanoseconds: $DELAY_NS" 2
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)" 2

if [[ -n "$KEEP" ]]; then
    mkdir -p "$KEEP"
    WORK="$(cd "$KEEP" && pwd)"
else
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/htsim-compare.XXXXXX")"
    trap 'rm -rf "$WORK"' EXIT
fi
HOSTS=$((K * K * K / 4))
HALF=$((K / 2))

# htsim's connection matrix: our permutation, as the benchmark builds it (--listFlows prints
# "id src dst bytes" per flow and exits). Our flows start at 1 us, htsim's at 0 (its matrices
# start at whole microseconds; the offset is the same for all).
"$OURS" --workload=permutation --k="$K" --bytes="$BYTES" --seed="$SEED" --listFlows \
    >"$WORK/flows.txt" || die "$OURS --listFlows failed"
[[ $(wc -l <"$WORK/flows.txt") -eq $HOSTS ]] ||
    die "$OURS --listFlows printed $(wc -l <"$WORK/flows.txt") flows, expected $HOSTS"
{
    echo "Nodes $HOSTS"
    echo "Connections $HOSTS"
    awk '{ printf "%d->%d id %d start 0 size %d\n", $2, $3, $1 + 1, $4 }' "$WORK/flows.txt"
} >"$WORK/permutation.cm"

# htsim's topology: the same k-ary 3-tier fat tree as our BuildFatTree(k, 3) (k/2 hosts per
# leaf, k/2 leaves and k/2 aggregation switches per pod, (k/2)^2 cores with one link per pod),
# host i under leaf i / (k/2) on both sides.
HTSIM_DELAY_NS="${DELAY_NS:-1000}"
{
    echo "Nodes $HOSTS"
    echo "Tiers 3"
    echo "Podsize $((K * K / 4))"
    for tier in 0 1 2; do
        echo
        echo "Tier $tier"
        [[ $tier == 2 ]] || echo "Oversubscribed 1"
        echo "Downlink_speed_Gbps 100"
        if [[ $tier == 2 ]]; then
            echo "Radix_Down $K"
        else
            echo "Radix_Down $HALF"
            echo "Radix_Up $HALF"
        fi
        echo "Downlink_Latency_ns $HTSIM_DELAY_NS"
        echo "Switch_Latency_ns 0"
        [[ $tier == 0 ]] || echo "Bundle 1"
    done
} >"$WORK/fat-tree.topo"

OURS_CMD=("$OURS" --paths="$PATHS" --k="$K" --bytes="$BYTES" --seed="$SEED")
[[ -n "$DELAY_NS" ]] && OURS_CMD+=(--delay="$DELAY_NS")
OURS_CMD+=("${OURS_EXTRA[@]}")
# -sender_cc_only: NSCC at the sender, as in htsim's own validation runs (validate_uec_sender.txt);
# queues (1 BDP with trimming) and ECN thresholds (20 % / 80 % of a BDP) are htsim's defaults.
HTSIM_CMD=("$HTSIM" -tm "$WORK/permutation.cm" -topo "$WORK/fat-tree.topo" -sender_cc_only
    -paths "$PATHS" -end "$END_US" -o "$WORK/htsim-logout.dat" "${HTSIM_EXTRA[@]}")

log "$(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); work dir $WORK"
log "ours:  ${OURS_CMD[*]}"
log "htsim: ${HTSIM_CMD[*]}"

FAILED=0
# run NAME ROUND: one run under /usr/bin/time; sets CPU (user+sys), WALL, RSS_MB, WORK_FIGURES.
run() {
    local name="$1" round="$2" out="$WORK/$1-$2.log" times="$WORK/$1-$2.time" status=0
    local -a cmd
    if [[ $name == ours ]]; then cmd=("${OURS_CMD[@]}"); else cmd=("${HTSIM_CMD[@]}"); fi
    # htsim writes nothing but its -o log file outside the work dir; run it there all the same.
    (cd "$WORK" && /usr/bin/time -f '%U %S %e %M' -o "$times" "${cmd[@]}") >"$out" 2>&1 ||
        status=$?
    local user sys
    # (time(1) puts "Command exited with non-zero status N" first when the run fails.)
    read -r user sys WALL RSS_KB < <(tail -n1 "$times") ||
        die "no /usr/bin/time figures for $name (see $out)"
    CPU="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
    RSS_MB="$(awk -v k="$RSS_KB" 'BEGIN { printf "%.0f", k / 1024 }')"
    local done_ok=0
    if [[ $name == ours ]]; then
        # "flows 1024/1024 done; ..." and exit status 0 (the benchmark returns 1 otherwise).
        local flows
        flows="$(sed -n 's/^flows \([0-9]*\/[0-9]*\) done.*/\1/p' "$out")"
        [[ $status == 0 && -n "$flows" && "${flows%/*}" == "${flows#*/}" ]] && done_ok=1
        WORK_FIGURES="flows ${flows:-?}; $(grep -o 'simulated [0-9.]* us' "$out" || true);"
        WORK_FIGURES+=" $(grep -o 'packet-hops [0-9]*' "$out" | head -n1 || true);"
        WORK_FIGURES+=" $(grep -o 'events [0-9]*' "$out" | head -n1 || true);"
        WORK_FIGURES+=" $(grep -o 'NIC frames [0-9]* (data [0-9]*, ACK [0-9]*' "$out" |
            sed 's/$/)/' || true); $(grep -o 'retransmissions [0-9]*' "$out" || true)"
    else
        # One "Flow ... finished at T" line per connection, then ".Done" (after its clock's
        # dots); the last finish time is the simulated time (htsim stops when no traffic is
        # left, or at -end: then flows are missing).
        local finished last summary
        finished="$(grep -c ' finished at ' "$out" || true)"
        last="$(sed -n 's/.* finished at \([0-9.e+]*\) .*/\1/p' "$out" | sort -g | tail -n1)"
        summary="$(grep -E '^New: [0-9]+' "$out" | tail -n1 || true)"
        [[ $status == 0 && "$finished" == "$HOSTS" ]] && grep -q 'Done$' "$out" && done_ok=1
        WORK_FIGURES="flows $finished/$HOSTS; last finish ${last:-?} us; ${summary:-no summary}"
    fi
    if [[ $done_ok != 1 ]]; then
        log "round $round: $name did not finish every flow (exit $status; log $out)"
        FAILED=1
    fi
}

declare -a RATIOS=()
printf '%-5s %-5s %8s %8s %8s  %s\n' round sim cpu_s wall_s rss_MB "work (the simulator's own figures)"
for ((r = 1; r <= ROUNDS; r++)); do
    # Alternate the order so that a drift within the sitting does not favour one side.
    if ((r % 2 == 1)); then order=(ours htsim); else order=(htsim ours); fi
    for name in "${order[@]}"; do
        run "$name" "$r"
        printf '%-5s %-5s %8s %8s %8s  %s\n' "$r" "$name" "$CPU" "$WALL" "$RSS_MB" "$WORK_FIGURES"
        if [[ $name == ours ]]; then OUR_CPU="$CPU"; else HTSIM_CPU="$CPU"; fi
    done
    ratio="$(awk -v h="$HTSIM_CPU" -v o="$OUR_CPU" 'BEGIN { printf "%.3f", (o > 0 ? h / o : 0) }')"
    RATIOS+=("$ratio")
    printf '%-5s ratio htsim_cpu/our_cpu %s (load average %s)\n' "$r" "$ratio" \
        "$(cut -d' ' -f1-3 /proc/loadavg)"
done
median="$(printf '%s\n' "${RATIOS[@]}" | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
echo "median ratio htsim_cpu/our_cpu over $ROUNDS round(s): $median (issue 20's target: >= 2)"
[[ -n "$KEEP" ]] && log "logs kept in $WORK"
if [[ $FAILED != 0 ]]; then
    log "some runs did not finish every flow: their times do not compare"
    exit 1
fi
