#!/usr/bin/env bash
# HIL benchmark, four parts, each a set of same-run ratios:
#
# 1. metaroce-perf goodput (UDP and raw ports, MetaRoCE and RoCEv2) against a plain UDP blast of
#    the same datagram size, on one veth pair between two network namespaces. Section "HIL on a
#    veth pair" of docs/benchmarks.md.
# 2. metaroce-perf through metaroce-hil-forwarder (a third namespace with seeded drops and added
#    latency) at 0%, 1% and 5% drops: MetaRoCE, RoCEv2 IRN and RoCEv2 go-back-N, retransmissions
#    against the drops the forwarder made, and the data frames it forwarded against the
#    sender's count. Section "HIL through the loss-injecting forwarder".
# 3. metaroce-perf with --threads 1 and --threads 2 on both sides (the veth pair of part 1;
#    THREAD_MODES, default "udp", any of the port modes of part 1), against the blast: goodput,
#    and the CPU time both sides used per GB delivered. Section "HIL with several engine
#    threads".
# 4. The raw port's AF_XDP backend (--raw-io xdp) in generic and native XDP against the V2 ring
#    and the blast, at engine MTU 3584 (AF_XDP's frame limit): goodput, CPU of both processes.
#    Section "HIL raw port: AF_XDP generic, native and the V2 ring" of docs/benchmarks.md.
# 5. (PARTS=xdp-threads) AF_XDP with --threads 1 and --threads 2 on both sides, alternated in
#    each round, over a second veth pair with two queues per device (shard i reads queue i),
#    in generic and native XDP: goodput, CPU per GB, and the frames handed between shards.
#    Section "HIL AF_XDP with several engine threads".
#
#   sudo hil/bench/metaroce-hil-bench.sh [BUILD_DIR] [SECONDS] [ROUNDS]
#
# BUILD_DIR defaults to build/, SECONDS (per veth measurement) to 3, ROUNDS (repetitions of
# part 1, each with its own blast, for the spread) to 1. Environment: PARTS ("veth forwarder"
# by default; any of veth, forwarder, threads, xdp, xdp-threads), FWD_DELAY_US (one-way delay added by the forwarder, default 1000),
# FWD_ITERS (64 KiB messages per forwarder run, default 300), FWD_ACK_LOSS (drop probability
# in the ACK direction, default the same P as the data direction; 0: drop data frames only),
# PERF_EXTRA (options added to both metaroce-perf sides in part 1, e.g. "--udp-gso off"),
# FWD_SERVER_EXTRA (options added to the
# receiving metaroce-perf of part 2, e.g. "--backlog-ecn 0"), WRITE_DOC (0: print the sections, do
# not write them to docs/benchmarks.md). Needs root (namespaces, raw mode). The
# namespaces are removed on exit, also on failure or Ctrl-C.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
SECONDS_PER_RUN=${2:-3}
ROUNDS=${3:-1}
PARTS=${PARTS:-veth forwarder}
FWD_DELAY_US=${FWD_DELAY_US:-1000}
FWD_ITERS=${FWD_ITERS:-300}
read -r -a PERF_EXTRA <<<"${PERF_EXTRA:-}"
read -r -a FWD_SERVER_EXTRA <<<"${FWD_SERVER_EXTRA:-}"
BIN=$BUILD/bin
MTU=4096
SIZE=65536
NS_A=mr-hil-bench-$$-a
NS_B=mr-hil-bench-$$-b
NS_M=mr-hil-bench-$$-m
NS_FA=mr-hil-bench-$$-fa
NS_FB=mr-hil-bench-$$-fb
NS_QA=mr-hil-bench-$$-qa
NS_QB=mr-hil-bench-$$-qb

for prog in metaroce-perf metaroce-udp-blast; do
    [[ -x $BIN/$prog ]] || { echo "missing $BIN/$prog: build first" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "needs root (network namespaces, AF_PACKET)" >&2; exit 1; }

cleanup() {
    for ns in "$NS_A" "$NS_B" "$NS_M" "$NS_FA" "$NS_FB" "$NS_QA" "$NS_QB"; do
        ip netns del "$ns" 2>/dev/null || true
    done
}
trap cleanup EXIT
ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add va netns "$NS_A" mtu 9000 type veth peer name vb netns "$NS_B" mtu 9000
ip -n "$NS_A" addr add 10.250.1.1/24 dev va
ip -n "$NS_B" addr add 10.250.1.2/24 dev vb
ip -n "$NS_A" link set va up; ip -n "$NS_B" link set vb up
ip -n "$NS_A" link set lo up; ip -n "$NS_B" link set lo up
# The forwarder's setup: client (FB, 10.250.2.2, device vb) -- fb [M: forwarder] fa -- server
# (FA, 10.250.2.1, device va).
ip netns add "$NS_M"; ip netns add "$NS_FA"; ip netns add "$NS_FB"
ip link add va netns "$NS_FA" mtu 9000 type veth peer name fa netns "$NS_M" mtu 9000
ip link add vb netns "$NS_FB" mtu 9000 type veth peer name fb netns "$NS_M" mtu 9000
ip -n "$NS_FA" addr add 10.250.2.1/24 dev va
ip -n "$NS_FB" addr add 10.250.2.2/24 dev vb
for link in "$NS_FA va" "$NS_FB vb" "$NS_M fa" "$NS_M fb"; do
    read -r ns dev <<<"$link"; ip -n "$ns" link set dev "$dev" up
done
for ns in "$NS_FA" "$NS_FB" "$NS_M"; do ip -n "$ns" link set dev lo up; done

field() { sed -n 's/.*RESULT.* '"$1"'=\([^ ]*\).*/\1/p' | tail -1; }

# Plain UDP blast of the engine's largest datagram at this MTU (what a full data packet is).
blast() {
    ip netns exec "$NS_A" "$BIN/metaroce-udp-blast" sink --port 4791 --idle 0.5 >/tmp/bench-sink.$$ &
    local sink=$!
    sleep 0.3
    ip netns exec "$NS_B" "$BIN/metaroce-udp-blast" send 10.250.1.1 --port 4791 \
        --engine-mtu $MTU --duration "$SECONDS_PER_RUN" >/tmp/bench-send.$$
    wait $sink
    BLAST_SIZE=$(field size </tmp/bench-send.$$)
    BLAST_SENT=$(field gbps </tmp/bench-send.$$)
    BLAST_RECV=$(field gbps </tmp/bench-sink.$$)
    rm -f /tmp/bench-sink.$$ /tmp/bench-send.$$
}

# metaroce-perf: $1 transport, $2 port mode (udp; raw: TPACKET_V2 rings; raw-ring-v3: TPACKET_V3
# receive blocks; raw-socket: raw with recvmmsg/sendmmsg)
perf_run() {
    local extra_a=() extra_b=() mode=$2 io=""
    case $2 in
        raw) io=ring ;;
        raw-ring-v3) io=ring-v3 ;;
        raw-socket) io=socket ;;
        raw-xdp-generic | raw-xdp-native) io=xdp ;;
    esac
    if [[ -n $io ]]; then
        mode=raw; extra_a=(--dev va --raw-io $io); extra_b=(--dev vb --raw-io $io)
    fi
    if [[ $io == xdp ]]; then
        extra_a+=(--xdp-mode "${2#raw-xdp-}"); extra_b+=(--xdp-mode "${2#raw-xdp-}")
    fi
    local threads=${PERF_THREADS:-1}
    if [[ $threads -gt 1 ]]; then
        extra_a+=(--threads "$threads"); extra_b+=(--threads "$threads")
    fi
    # (/usr/bin/time -f: each side's user + system CPU seconds, on the file's last line.)
    ip netns exec "$NS_A" /usr/bin/time -f "CPU %U %S" "$BIN/metaroce-perf" --listen 10.250.1.1 \
        --transport "$1" --mtu $MTU --port-mode "$mode" "${extra_a[@]}" "${PERF_EXTRA[@]}" \
        --log warn >/tmp/bench-server.$$ 2>&1 &
    local server=$!
    ip netns exec "$NS_B" /usr/bin/time -f "CPU %U %S" "$BIN/metaroce-perf" 10.250.1.1 \
        --transport "$1" --mtu $MTU --port-mode "$mode" "${extra_b[@]}" "${PERF_EXTRA[@]}" \
        --size $SIZE --duration "$SECONDS_PER_RUN" --log warn >/tmp/bench-client.$$ 2>&1 || true
    wait $server || true
    local result=RESULT
    # With several threads the client prints one RESULT per session and their TOTAL.
    [[ $threads -gt 1 ]] && result=TOTAL
    total() { sed -n 's/.*'"$result"'.* '"$1"'=\([^ ]*\).*/\1/p' | tail -1; }
    PERF_STATUS=$(total status </tmp/bench-client.$$)
    PERF_GBPS=$(total gbps </tmp/bench-client.$$)
    PERF_RETX=$(total retx </tmp/bench-client.$$)
    PERF_MSGS=$(total msgs </tmp/bench-client.$$)
    PERF_RTO=$(total rto </tmp/bench-client.$$)
    PERF_BYTES=$(total bytes </tmp/bench-client.$$)
    PERF_CPU=$(cat /tmp/bench-server.$$ /tmp/bench-client.$$ | sed -n 's/^CPU \([0-9.]*\) \([0-9.]*\)$/\1 \2/p' |
        awk '{ s += $1 + $2 } END { printf "%.2f", s }')
    # Sums over every session's RESULT line (AF_XDP shards: frames handed to another shard).
    sum() { sed -n 's/^RESULT.* '"$1"'=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }'; }
    PERF_DATA=$(sum data_packets </tmp/bench-client.$$)
    PERF_HANDOFF_S=$(sum rx_handoffs </tmp/bench-server.$$)
    PERF_HANDOFF_C=$(sum rx_handoffs </tmp/bench-client.$$)
    PERF_HANDOFF_DROPS=$(cat /tmp/bench-server.$$ /tmp/bench-client.$$ | sum rx_handoff_drops)
    rm -f /tmp/bench-server.$$ /tmp/bench-client.$$
}

ratio() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print(f'{a / b:.2f}' if b else '-')" "$@"; }

# metaroce-perf through the forwarder: $1 transport, $2 recovery, $3 loss. Sets FWD_* and PERF_*.
forwarded_run() {
    local ackLoss=()
    [[ -n ${FWD_ACK_LOSS:-} ]] && ackLoss=(--loss-ab "$FWD_ACK_LOSS") # a -> b: the ACK direction
    ip netns exec "$NS_M" "$BIN/metaroce-hil-forwarder" --a fa --b fb --loss "$3" "${ackLoss[@]}" \
        --delay-us "$FWD_DELAY_US" --seed 19 >/tmp/bench-fwd.$$ 2>&1 &
    local fwd=$!
    sleep 0.3
    ip netns exec "$NS_FA" "$BIN/metaroce-perf" --listen 10.250.2.1 --transport "$1" \
        --roce-recovery "$2" --mtu $MTU "${FWD_SERVER_EXTRA[@]}" \
        --log warn >/tmp/bench-server.$$ 2>&1 &
    local server=$!
    local start=$(date +%s.%N)
    ip netns exec "$NS_FB" timeout 120 "$BIN/metaroce-perf" 10.250.2.1 --transport "$1" \
        --roce-recovery "$2" --mtu $MTU --size $SIZE --iters "$FWD_ITERS" --seed 5 --log warn \
        >/tmp/bench-client.$$ 2>&1 || true
    FWD_WALL=$(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$start")
    wait $server || true
    kill -TERM $fwd; wait $fwd || true
    PERF_STATUS=$(field status </tmp/bench-client.$$)
    PERF_GBPS=$(field gbps </tmp/bench-client.$$)
    PERF_RETX=$(field retx </tmp/bench-client.$$)
    PERF_PACKETS=$(field data_packets </tmp/bench-client.$$)
    PERF_RTO=$(field rto </tmp/bench-client.$$)
    # The client in FB sends the data: it enters the forwarder at fb (direction b_to_a).
    FWD_DATA=$(field b_to_a_data </tmp/bench-fwd.$$)
    FWD_DATA_DROPS=$(field b_to_a_dropped </tmp/bench-fwd.$$)
    FWD_ACK_DROPS=$(field a_to_b_dropped </tmp/bench-fwd.$$)
    FWD_KERNEL_DROPS=$(field b_to_a_kernel_drops </tmp/bench-fwd.$$)
    rm -f /tmp/bench-server.$$ /tmp/bench-client.$$ /tmp/bench-fwd.$$
}

# Replace (or append) the section whose heading is the first line of $1 in docs/benchmarks.md.
DOC=$ROOT/docs/benchmarks.md
write_section() {
    if [[ ${WRITE_DOC:-1} == 0 ]]; then echo "$1"; return; fi
    python3 - "$DOC" "$1" <<'PY'
import os, sys
path, section = sys.argv[1], sys.argv[2].rstrip() + "\n"
heading = section.splitlines()[0]
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
lines = text.splitlines(keepends=True)
start = next((i for i, l in enumerate(lines) if l.rstrip() == heading), None)
if start is None:
    text = text.rstrip("\n") + "\n\n" + section
else:
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    text = "".join(lines[:start]) + section + ("\n" if end < len(lines) else "") + "".join(lines[end:])
open(path, "w").write(text)
PY
    echo "$1"
    echo "written to $DOC"
}

CPU=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

if [[ " $PARTS " == *" veth "* ]]; then
ROWS=""
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round: plain UDP blast..."
    blast
    ROWS+="| $round | plain UDP blast (sender side) | $BLAST_SENT | - | - | - | - | - |"$'\n'
    ROWS+="| $round | plain UDP blast (received) | $BLAST_RECV | 1.00 | - | - | - | - |"$'\n'
    for transport in metaroce rocev2; do
        for mode in udp raw raw-ring-v3 raw-socket; do
            echo "round $round: metaroce-perf $transport $mode..."
            perf_run "$transport" "$mode"
            label="$mode port"
            [[ $mode == raw ]] && label="raw port (TPACKET_V2 rings)"
            [[ $mode == raw-ring-v3 ]] && label="raw port (TPACKET_V3 rings)"
            [[ $mode == raw-socket ]] && label="raw port (recvmmsg/sendmmsg)"
            ROWS+="| $round | metaroce-perf, $transport, $label | $PERF_GBPS | $(ratio "$PERF_GBPS" "$BLAST_RECV") | $PERF_MSGS | $PERF_RETX | $PERF_RTO | $PERF_STATUS |"$'\n'
        done
    done
done

SECTION=$(cat <<MD
## HIL on a veth pair: metaroce-perf vs a plain UDP blast

Measured by \`hil/bench/metaroce-hil-bench.sh\` on $(date -u +%Y-%m-%d) ($(nproc) CPUs, ${CPU:-unknown CPU},
kernel $(uname -r)): two network namespaces joined by one veth pair (MTU 9000), engine MTU
$MTU, ${SECONDS_PER_RUN} s per measurement, message size $SIZE bytes, RDMA WRITE with immediate,
1 connection, 1 stream, depth 128, MetaRoCE with 8 paths. Goodput is verified message payload
per second at the sender; the blast counts UDP payload bytes received by the sink for
datagrams of $BLAST_SIZE bytes (the largest data datagram at this MTU). Both run in one
user-space thread per side through the kernel's UDP (or AF_PACKET) path, so the blast is the
ceiling of this machine for one socket per side. "Ratio" is the goodput over the blast
received in the same round. Extra metaroce-perf options: \`${PERF_EXTRA[*]:-none}\`.

| Round | Sender | Goodput (Gb/s) | Ratio | Messages | Retransmissions | RTO expiries | Verified |
| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |
$ROWS
MD
)
write_section "$SECTION"
fi

if [[ " $PARTS " == *" threads "* ]]; then
ROWS=""
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round: plain UDP blast..."
    blast
    ROWS+="| $round | plain UDP blast (received) | - | $BLAST_RECV | 1.00 | - | - | - | - | - |"$'\n'
    for mode in ${THREAD_MODES:-udp}; do
    for transport in metaroce rocev2; do
        for threads in 1 2; do
            echo "round $round: metaroce-perf $transport $mode --threads $threads..."
            PERF_THREADS=$threads perf_run "$transport" "$mode"
            per_gb=$(python3 -c "import sys; c, b = map(float, sys.argv[1:]); print(f'{c / (b / 1e9):.2f}' if b else '-')" "${PERF_CPU:-0}" "${PERF_BYTES:-0}")
            ROWS+="| $round | metaroce-perf, $transport, $mode port | $threads | $PERF_GBPS | $(ratio "$PERF_GBPS" "$BLAST_RECV") | $PERF_CPU | $per_gb | $PERF_RETX | $PERF_RTO | $PERF_STATUS |"$'\n'
        done
    done
    done
done
SECTION=$(cat <<MD
## HIL with several engine threads

Measured by \`hil/bench/metaroce-hil-bench.sh\` (PARTS=threads) on $(date -u +%Y-%m-%d) ($(nproc) CPUs, ${CPU:-unknown CPU},
kernel $(uname -r)): the veth pair of "HIL on a veth pair", port modes: ${THREAD_MODES:-udp}, engine MTU $MTU,
${SECONDS_PER_RUN} s per measurement, messages of $SIZE bytes, RDMA WRITE with immediate, 1
connection and 1 stream per session, MetaRoCE with 8 paths. \`--threads N\` on both sides: the
client runs N sessions, one per engine thread, and the server places each on its own thread;
the kernel steers each datagram to its thread by destination QPN. Goodput is the client's
total over its sessions; "CPU" is the user plus system time of both processes together, and
"CPU s / GB" that time per GB delivered (lower is cheaper). Ratio: goodput over the blast of
the same round. Extra metaroce-perf options: \`${PERF_EXTRA[*]:-none}\`.

| Round | Sender | Threads | Goodput (Gb/s) | Ratio | CPU (s) | CPU s / GB | Retransmissions | RTO expiries | Verified |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
$ROWS
MD
)
write_section "$SECTION"
fi

if [[ " $PARTS " == *" xdp "* ]]; then
SAVED_MTU=$MTU
MTU=3584 # AF_XDP's copy-mode frames are at most 3,840 bytes; the blast and the ring use it too
ROWS=""
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round: plain UDP blast..."
    blast
    ROWS+="| $round | plain UDP blast (received) | $BLAST_RECV | 1.00 | - | - | - | - |"$'\n'
    for transport in metaroce rocev2; do
        for mode in raw-xdp-generic raw-xdp-native raw; do
            echo "round $round: metaroce-perf $transport $mode..."
            perf_run "$transport" "$mode"
            label="AF_XDP, ${mode#raw-xdp-} XDP"
            [[ $mode == raw ]] && label="TPACKET_V2 rings"
            ROWS+="| $round | metaroce-perf, $transport, $label | $PERF_GBPS | $(ratio "$PERF_GBPS" "$BLAST_RECV") | $PERF_CPU | $PERF_RETX | $PERF_RTO | $PERF_STATUS |"$'\n'
        done
    done
done
SECTION=$(cat <<MD
## HIL raw port: AF_XDP generic, native and the V2 ring

Measured by \`hil/bench/metaroce-hil-bench.sh\` (PARTS=xdp) on $(date -u +%Y-%m-%d) ($(nproc) CPUs, ${CPU:-unknown CPU},
kernel $(uname -r)): the veth pair of "HIL on a veth pair", raw port, engine MTU $MTU (the
largest AF_XDP's copy-mode frames allow; the blast sends datagrams of $BLAST_SIZE bytes to
match), ${SECONDS_PER_RUN} s per measurement, messages of $SIZE bytes, RDMA WRITE with
immediate, 1 connection, MetaRoCE with 8 paths. \`--raw-io xdp --xdp-mode generic\` attaches
the port's XDP program in generic (SKB) mode, \`native\` in the veth driver; both bind the
socket in copy mode. "CPU" is the user plus system time of both processes together. Ratio:
goodput over the blast of the same round. Extra metaroce-perf options: \`${PERF_EXTRA[*]:-none}\`.

| Round | Sender | Goodput (Gb/s) | Ratio | CPU (s) | Retransmissions | RTO expiries | Verified |
| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |
$ROWS
MD
)
write_section "$SECTION"
MTU=$SAVED_MTU
fi

if [[ " $PARTS " == *" xdp-threads "* ]]; then
# A second veth pair with two queues per device, so that shard i of each side has queue i; the
# other parts keep their one-queue pair. perf_run and blast use NS_A and NS_B: point them here.
ip netns add "$NS_QA"; ip netns add "$NS_QB"
ip link add va netns "$NS_QA" mtu 9000 numrxqueues 2 numtxqueues 2 type veth peer name vb \
    netns "$NS_QB" mtu 9000 numrxqueues 2 numtxqueues 2
ip -n "$NS_QA" addr add 10.250.1.1/24 dev va
ip -n "$NS_QB" addr add 10.250.1.2/24 dev vb
ip -n "$NS_QA" link set va up; ip -n "$NS_QB" link set vb up
ip -n "$NS_QA" link set lo up; ip -n "$NS_QB" link set lo up
SAVED_NS_A=$NS_A; SAVED_NS_B=$NS_B; NS_A=$NS_QA; NS_B=$NS_QB
SAVED_MTU=$MTU
MTU=3584
ROWS=""
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round: plain UDP blast..."
    blast
    ROWS+="| $round | plain UDP blast (received) | - | $BLAST_RECV | 1.00 | - | - | - | - | - | - |"$'\n'
    for transport in metaroce rocev2; do
        for mode in raw-xdp-generic raw-xdp-native; do
            for threads in 1 2; do
                echo "round $round: metaroce-perf $transport $mode --threads $threads..."
                PERF_THREADS=$threads perf_run "$transport" "$mode"
                per_gb=$(python3 -c "import sys; c, b = map(float, sys.argv[1:]); print(f'{c / (b / 1e9):.2f}' if b else '-')" "${PERF_CPU:-0}" "${PERF_BYTES:-0}")
                share=$(python3 -c "import sys; h, d = map(float, sys.argv[1:]); print(f'{100 * h / d:.0f}%' if d else '-')" "${PERF_HANDOFF_S:-0}" "${PERF_DATA:-0}")
                ROWS+="| $round | metaroce-perf, $transport, AF_XDP ${mode#raw-xdp-} XDP | $threads | $PERF_GBPS | $(ratio "$PERF_GBPS" "$BLAST_RECV") | $PERF_CPU | $per_gb | $PERF_HANDOFF_S ($share) / $PERF_HANDOFF_C | $PERF_HANDOFF_DROPS | $PERF_RETX | $PERF_STATUS |"$'\n'
            done
        done
    done
done
SECTION=$(cat <<MD
## HIL AF_XDP with several engine threads

Measured by \`hil/bench/metaroce-hil-bench.sh\` (PARTS=xdp-threads) on $(date -u +%Y-%m-%d) ($(nproc) CPUs, ${CPU:-unknown CPU},
kernel $(uname -r), load average before the run: ${LOAD_BEFORE:-not recorded}): a veth pair with two
queues per device (\`numrxqueues 2 numtxqueues 2\`) between two namespaces, raw port with
\`--raw-io xdp\`, engine MTU $MTU, ${SECONDS_PER_RUN} s per measurement, messages of $SIZE bytes, RDMA
WRITE with immediate, 1 connection and 1 stream per session, MetaRoCE with 8 paths. \`--threads 1\`
and \`--threads 2\` on both sides alternate within each round. With two threads shard i binds its
AF_XDP socket to queue i; the client runs two sessions, one per shard. "Hand-offs" are the frames
the server's shards received on their queue for the other shard's QPN (and their share of the
client's data packets) / the same at the client; "drops": hand-offs lost to a full ring. "CPU" is
the user plus system time of both processes, "CPU s / GB" that per GB delivered. Ratio: goodput
over the blast of the same round. Extra metaroce-perf options: \`${PERF_EXTRA[*]:-none}\`.

| Round | Sender | Threads | Goodput (Gb/s) | Ratio | CPU (s) | CPU s / GB | Hand-offs server (share) / client | Hand-off drops | Retransmissions | Verified |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
$ROWS
MD
)
write_section "$SECTION"
MTU=$SAVED_MTU
NS_A=$SAVED_NS_A; NS_B=$SAVED_NS_B
fi

if [[ " $PARTS " == *" forwarder "* ]]; then
[[ -x $BIN/metaroce-hil-forwarder ]] || { echo "missing $BIN/metaroce-hil-forwarder" >&2; exit 1; }
ROWS=""
for loss in 0 0.01 0.05; do
    for arm in "metaroce gbn" "rocev2 irn" "rocev2 gbn"; do
        read -r transport recovery <<<"$arm"
        label=$transport; [[ $transport == rocev2 ]] && label="rocev2 $recovery"
        echo "forwarder, loss $loss: metaroce-perf $label..."
        forwarded_run "$transport" "$recovery" "$loss"
        sent=$(( ${PERF_PACKETS:-0} + ${PERF_RETX:-0} ))
        check=$([[ $sent == "$FWD_DATA" ]] && echo "= $FWD_DATA" || echo "$FWD_DATA (sent $sent)")
        [[ ${FWD_KERNEL_DROPS:-0} != 0 ]] && check+=", $FWD_KERNEL_DROPS dropped by the forwarder's kernel"
        ROWS+="| $loss | $label | $PERF_GBPS | $FWD_WALL | ${PERF_PACKETS:--} | ${PERF_RETX:--} | ${PERF_RTO:--} | $FWD_DATA_DROPS | $FWD_ACK_DROPS | $(ratio "${PERF_RETX:-0}" "$FWD_DATA_DROPS") | $check | ${PERF_STATUS:-none} |"$'\n'
    done
done
HEADING="## HIL through the loss-injecting forwarder"
DIR_TEXT="in both directions"
if [[ -n ${FWD_ACK_LOSS:-} ]]; then
    HEADING+=", ACK-direction loss $FWD_ACK_LOSS"
    DIR_TEXT="in the data direction and $FWD_ACK_LOSS in the ACK direction (\`--loss-ab $FWD_ACK_LOSS\`)"
fi
SECTION=$(cat <<MD
$HEADING

Measured by \`hil/bench/metaroce-hil-bench.sh\` on $(date -u +%Y-%m-%d) ($(nproc) CPUs, ${CPU:-unknown CPU},
kernel $(uname -r)): client and server in two namespaces, each joined by a veth pair to a third
where \`metaroce-hil-forwarder --delay-us $FWD_DELAY_US --loss P --seed 19\` forwards every
frame (a round trip of about $(( 2 * FWD_DELAY_US )) us plus the hosts' own), dropping data-plane
frames (UDP 4791) with probability P $DIR_TEXT. UDP ports, engine MTU $MTU,
$FWD_ITERS messages of $SIZE bytes, RDMA WRITE with immediate, 1 connection, default HIL timer
settings. "Data drops" are the frames the forwarder dropped in the data direction, "ACK drops"
in the other; "Frames seen" is the forwarder's count of data-direction frames, which must equal
the sender's data packets plus retransmissions.

| Loss | Transport | Goodput (Gb/s) | Wall (s) | Data packets | Retransmissions | RTO expiries | Data drops | ACK drops | Retx / data drops | Frames seen | Verified |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
$ROWS
MD
)
write_section "$SECTION"
fi

