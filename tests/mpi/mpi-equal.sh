#!/usr/bin/env bash
# Runs one scenario on 1 rank (plain metaroce-run) and on N ranks (mpirun -np N metaroce-run),
# prints both wall times and compares flows.csv with compare-flows.py: "exact" requires
# byte-identical files, "all" also byte-identical paths.csv, switches.csv and hosts.csv,
# "collectives" byte-identical collectives.csv (completed) and flows.csv, "tolerance" the same
# flows with close FCTs (docs/distributed.md says why).
#
#   mpi-equal.sh <metaroce-run> <mpirun> <scenario> <work dir> <ranks>
#                <exact|all|collectives|tolerance>
#                [metaroce-run args...]
# With MPI_FAKE_HOSTS=H in the environment the N ranks are launched over H fake hosts (below).
set -euo pipefail

run="$1"
mpirun="$2"
scenario="$3"
work="$4"
ranks="$5"
mode="$6"
shift 6

mpi_args=(-np "$ranks" --oversubscribe)
if [[ $EUID -eq 0 ]]; then
    mpi_args+=(--allow-run-as-root)
fi
# Keep OpenMPI off the network and away from busy-polling (shared CI machines).
export OMPI_MCA_btl="self,vader"
export OMPI_MCA_mpi_yield_when_idle=1
# MPI_FAKE_HOSTS=H: a dry run of a launch over H machines on this one. A hostfile names H hosts
# that do not exist (ranks/H slots each), OpenMPI's rsh launcher starts a daemon per host
# through fake-ssh.sh (which gives each host a /tmp of its own), and ranks on different hosts
# talk over TCP on loopback, as on different machines (shared memory within a host).
if [[ -n "${MPI_FAKE_HOSTS:-}" ]]; then
    hostfile="$work.hosts"
    : >"$hostfile"
    for ((h = 0; h < MPI_FAKE_HOSTS; h++)); do
        echo "fake-host-$h slots=$(((ranks + MPI_FAKE_HOSTS - 1) / MPI_FAKE_HOSTS))" >>"$hostfile"
    done
    mpi_args+=(--hostfile "$hostfile" --display-map
               --mca plm_rsh_agent "$(dirname "$0")/fake-ssh.sh"
               --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
    export OMPI_MCA_btl="self,vader,tcp"
fi

rm -rf "$work"
mkdir -p "$work"

now() { date +%s.%N; }

t0=$(now)
"$run" --scenario="$scenario" --out="$work/rank1" --quiet "$@"
t1=$(now)
"$mpirun" "${mpi_args[@]}" "$run" --scenario="$scenario" --out="$work/rank$ranks" --quiet "$@"
t2=$(now)

wall1=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")
wallN=$(awk "BEGIN{printf \"%.2f\", $t2 - $t1}")
echo "wall: 1 rank ${wall1} s, $ranks ranks ${wallN} s"

for f in "$work/rank1/flows.csv" "$work/rank$ranks/flows.csv"; do
    [[ -s "$f" ]] || { echo "FAIL: $f is missing or empty"; exit 1; }
done
# Every rank's share (docs/distributed.md): one row per rank, each with nodes of its own.
ranks_csv="$work/rank$ranks/ranks.csv"
[[ -s "$ranks_csv" ]] || { echo "FAIL: $ranks_csv is missing or empty"; exit 1; }
cat "$ranks_csv"
rows=$(awk -F, 'NR > 1 && $2 + $3 > 0' "$ranks_csv" | wc -l)
if [[ "$rows" != "$ranks" ]]; then
    echo "FAIL: ranks.csv has $rows ranks with nodes, expected $ranks"
    exit 1
fi
[[ ! -e "$work/rank1/ranks.csv" ]] || { echo "FAIL: a one-process run wrote ranks.csv"; exit 1; }
if [[ "$mode" == all ]]; then
    # Rank 0 gathers every node's counters: the per-path, per-switch-port and per-host-port
    # files must be the same as one process's too (with event_order "link"; with ns-3's order
    # the RTT estimates can differ in the last digits even when every FCT is the same).
    for f in paths.csv switches.csv hosts.csv; do
        if ! cmp -s "$work/rank1/$f" "$work/rank$ranks/$f"; then
            echo "FAIL: $f differs between 1 and $ranks ranks:"
            diff "$work/rank1/$f" "$work/rank$ranks/$f" | head -20
            exit 1
        fi
        echo "$f byte-identical"
    done
fi
if [[ "$mode" == collectives ]]; then
    # Each rank sees the (rank, channel) pairs of its own hosts finish; rank 0 merges them.
    if ! cmp -s "$work/rank1/collectives.csv" "$work/rank$ranks/collectives.csv"; then
        echo "FAIL: collectives.csv differs between 1 and $ranks ranks:"
        diff "$work/rank1/collectives.csv" "$work/rank$ranks/collectives.csv"
        exit 1
    fi
    grep -q ',1$' "$work/rank1/collectives.csv" || { echo "FAIL: the collective did not complete"; exit 1; }
    echo "collectives.csv byte-identical"
fi
compare=(/usr/bin/python3 "$(dirname "$0")/compare-flows.py")
[[ "$mode" != tolerance ]] && compare+=(--exact)
exec "${compare[@]}" "$work/rank1/flows.csv" "$work/rank$ranks/flows.csv"
