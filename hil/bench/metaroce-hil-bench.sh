#!/usr/bin/env bash
# HIL benchmark: metaroce-perf goodput (UDP and raw ports, MetaRoCE and RoCEv2) against a plain
# UDP blast of the same datagram size, on one veth pair between two network namespaces, in one
# run. Writes the figures to the "HIL on a veth pair" section of docs/benchmarks.md (other
# sections are kept).
#
#   sudo hil/bench/metaroce-hil-bench.sh [BUILD_DIR] [SECONDS]
#
# BUILD_DIR defaults to build/, SECONDS (per measurement) to 3. Needs root (namespaces, raw
# mode). The namespaces are removed on exit, also on failure or Ctrl-C.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
SECONDS_PER_RUN=${2:-3}
BIN=$BUILD/bin
MTU=4096
SIZE=65536
NS_A=mr-hil-bench-$$-a
NS_B=mr-hil-bench-$$-b

for prog in metaroce-perf metaroce-udp-blast; do
    [[ -x $BIN/$prog ]] || { echo "missing $BIN/$prog: build first" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "needs root (network namespaces, AF_PACKET)" >&2; exit 1; }

cleanup() { ip netns del "$NS_A" 2>/dev/null || true; ip netns del "$NS_B" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add va netns "$NS_A" mtu 9000 type veth peer name vb netns "$NS_B" mtu 9000
ip -n "$NS_A" addr add 10.250.1.1/24 dev va
ip -n "$NS_B" addr add 10.250.1.2/24 dev vb
ip -n "$NS_A" link set va up; ip -n "$NS_B" link set vb up
ip -n "$NS_A" link set lo up; ip -n "$NS_B" link set lo up

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

# metaroce-perf: $1 transport, $2 port mode
perf_run() {
    local extra_a=() extra_b=()
    if [[ $2 == raw ]]; then extra_a=(--dev va); extra_b=(--dev vb); fi
    ip netns exec "$NS_A" "$BIN/metaroce-perf" --transport "$1" --mtu $MTU --port-mode "$2" \
        "${extra_a[@]}" --log warn >/tmp/bench-server.$$ 2>&1 &
    local server=$!
    ip netns exec "$NS_B" "$BIN/metaroce-perf" 10.250.1.1 --transport "$1" --mtu $MTU \
        --port-mode "$2" "${extra_b[@]}" --size $SIZE --duration "$SECONDS_PER_RUN" \
        --log warn >/tmp/bench-client.$$ 2>&1 || true
    wait $server || true
    PERF_STATUS=$(field status </tmp/bench-client.$$)
    PERF_GBPS=$(field gbps </tmp/bench-client.$$)
    PERF_RETX=$(field retx </tmp/bench-client.$$)
    PERF_MSGS=$(field msgs </tmp/bench-client.$$)
    rm -f /tmp/bench-server.$$ /tmp/bench-client.$$
}

echo "plain UDP blast..."
blast
ROWS=""
for transport in metaroce rocev2; do
    for mode in udp raw; do
        echo "metaroce-perf $transport $mode..."
        perf_run "$transport" "$mode"
        ROWS+="| metaroce-perf, $transport, $mode port | $PERF_GBPS | $PERF_MSGS | $PERF_RETX | $PERF_STATUS |"$'\n'
    done
done

CPU=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
SECTION=$(cat <<MD
## HIL on a veth pair: metaroce-perf vs a plain UDP blast

Measured by \`hil/bench/metaroce-hil-bench.sh\` on $(date -u +%Y-%m-%d) ($(nproc) CPUs, ${CPU:-unknown CPU},
kernel $(uname -r)): two network namespaces joined by one veth pair (MTU 9000), engine MTU
$MTU, ${SECONDS_PER_RUN} s per measurement, message size $SIZE bytes, RDMA WRITE with immediate,
1 connection, 1 stream, depth 128, MetaRoCE with 8 paths. Goodput is verified message payload
per second at the sender; the blast counts UDP payload bytes received by the sink for
datagrams of $BLAST_SIZE bytes (the largest data datagram at this MTU). Both run in one
user-space thread per side through the kernel's UDP (or AF_PACKET) path, so the blast is the
ceiling of this machine for one socket per side.

| Sender | Goodput (Gb/s) | Messages | Retransmissions | Verified |
| --- | ---: | ---: | ---: | --- |
| plain UDP blast (sender side) | $BLAST_SENT | - | - | - |
| plain UDP blast (received) | $BLAST_RECV | - | - | - |
$ROWS
MD
)

DOC=$ROOT/docs/benchmarks.md
python3 - "$DOC" "$SECTION" <<'PY'
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
echo "$SECTION"
echo "written to $DOC"
