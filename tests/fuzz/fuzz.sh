#!/usr/bin/env bash
# Coverage-guided fuzzing of Endpoint::HandleDatagram (libFuzzer, clang++, ASan + UBSan).
#
#   fuzz.sh build <dir>                  build the targets (targets/CMakeLists.txt) in <dir>
#   fuzz.sh ci <dir> <transport> [sec]   CTest: replay the seeds and regressions/<transport>/,
#                                        then fuzz <sec> seconds (default 20) from the seeds
#   fuzz.sh campaign <dir> <out> [runs]  build, then fuzz every transport for <runs> executions
#                                        (default 10^6) in parallel, keeping the corpus in
#                                        <dir>/corpus/; logs, crashes and results.md in <out>
#
# Exits 77 (CTest's skip) when clang++ cannot build a libFuzzer program. Transports: metaroce,
# rocev2. Environment: METAROCE_FUZZ_CXX (default clang++), METAROCE_FUZZ_MAX_LEN (8192).

set -euo pipefail

HERE="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CXX="${METAROCE_FUZZ_CXX:-clang++}"
MAX_LEN="${METAROCE_FUZZ_MAX_LEN:-8192}"
TRANSPORTS=(metaroce rocev2)
SKIP=77

log() {
    echo "[fuzz] $*" >&2
}

# libFuzzer's own error exit code is 77, CTest's skip code: every failure exits 1 instead.
# -timeout: an input running 10 s is a hang (a livelock in the engine), a finding.
common_flags() {
    local dir="$1" transport="$2"
    echo "-max_len=$MAX_LEN -timeout=10 -error_exitcode=1 -timeout_exitcode=1" \
        "-artifact_prefix=$dir/artifacts/$transport-"
}

cmd_build() {
    local dir="$1"
    mkdir -p "$dir"
    if ! command -v "$CXX" >/dev/null; then
        log "SKIP: $CXX not found (install clang libclang-rt-14-dev, or ./metaroce setup)"
        exit $SKIP
    fi
    local probe="$dir/libfuzzer-probe"
    if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long)
               { return 0; }' |
        "$CXX" -x c++ -fsanitize=fuzzer,address,undefined - -o "$probe" 2>"$probe.log"; then
        log "SKIP: $CXX cannot link -fsanitize=fuzzer,address,undefined (install" \
            "libclang-rt-14-dev, or ./metaroce setup): $(head -c 300 "$probe.log")"
        exit $SKIP
    fi
    command -v cmake >/dev/null || { log "cmake not found"; exit 1; }
    local generator=()
    if [[ ! -f "$dir/CMakeCache.txt" ]]; then
        if command -v ninja >/dev/null; then generator=(-G Ninja); else generator=(-G "Unix Makefiles"); fi
    fi
    log "building the fuzz targets with $CXX in $dir"
    cmake -S "$HERE/targets" -B "$dir" "${generator[@]}" --log-level=WARNING \
        -DCMAKE_CXX_COMPILER="$CXX" >/dev/null
    cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)"
}

# Generate the seed corpus (fast, deterministic) into <dir>/seeds/<transport>.
make_seeds() {
    local dir="$1" transport="$2"
    rm -rf "$dir/seeds/$transport"
    mkdir -p "$dir/seeds/$transport"
    "$dir/fuzz-make-seeds" "$transport" "$dir/seeds/$transport"
}

# The input folders of a run: the working corpus (new inputs go there), the seeds, and the
# saved findings of tests/fuzz/regressions/<transport>/ if any.
inputs() {
    local dir="$1" transport="$2" corpus="$3"
    echo "$corpus $dir/seeds/$transport"
    [[ -d "$HERE/regressions/$transport" ]] && echo "$HERE/regressions/$transport"
    return 0
}

require_target() {
    local dir="$1" transport="$2"
    if [[ ! -x "$dir/fuzz-$transport" || ! -x "$dir/fuzz-make-seeds" ]]; then
        log "SKIP: $dir/fuzz-$transport was not built (see the fuzz-build test)"
        exit $SKIP
    fi
}

report_crashes() {
    local dir="$1" transport="$2" artifact
    for artifact in "$dir/artifacts/$transport-"*; do
        [[ -e "$artifact" ]] || continue
        log "finding: $artifact"
        log "  reproduce: $dir/fuzz-$transport $artifact"
        log "  minimise:  $dir/fuzz-$transport -minimize_crash=1 -runs=100000" \
            "-exact_artifact_path=<out> $artifact"
        log "  then keep it as tests/fuzz/regressions/$transport/<name> (replayed by CTest)"
    done
}

cmd_ci() {
    local dir="$1" transport="$2" seconds="${3:-20}"
    require_target "$dir" "$transport"
    make_seeds "$dir" "$transport"
    local corpus="$dir/ci-corpus/$transport"
    rm -rf "$corpus" "$dir/artifacts/$transport-"*
    mkdir -p "$corpus" "$dir/artifacts"
    log "$transport: replaying the seeds and tests/fuzz/regressions/$transport/, then" \
        "fuzzing for $seconds s"
    local rc=0
    # shellcheck disable=SC2046
    "$dir/fuzz-$transport" $(common_flags "$dir" "$transport") -max_total_time="$seconds" \
        -print_final_stats=1 $(inputs "$dir" "$transport" "$corpus") || rc=$?
    if [[ $rc != 0 ]]; then
        report_crashes "$dir" "$transport"
        exit 1
    fi
}

cmd_campaign() {
    local dir="$1" out="$2" runs="${3:-1000000}" commit
    mkdir -p "$out" "$dir/artifacts"
    # The engine as built now (commits may land while the campaign runs); uncommitted changes
    # are kept next to the results.
    commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if ! git -C "$ROOT" diff --quiet HEAD -- contrib/metaroce/engine 2>/dev/null; then
        git -C "$ROOT" diff HEAD -- contrib/metaroce/engine >"$out/engine.diff"
        commit="$commit + uncommitted engine changes (engine.diff)"
    fi
    cmd_build "$dir"
    local transport pids=() start
    start=$(date +%s)
    for transport in "${TRANSPORTS[@]}"; do
        make_seeds "$dir" "$transport"
        mkdir -p "$dir/corpus/$transport"
        log "$transport: $runs executions, corpus $dir/corpus/$transport, log $out/$transport.log"
        # One process per transport, side by side: one core each.
        (
            t0=$(date +%s)
            rc=0
            # shellcheck disable=SC2046
            "$dir/fuzz-$transport" $(common_flags "$dir" "$transport") -runs="$runs" \
                -print_final_stats=1 $(inputs "$dir" "$transport" "$dir/corpus/$transport") \
                >"$out/$transport.log" 2>&1 || rc=$?
            echo "$rc $(($(date +%s) - t0))" >"$out/$transport.status"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    local table="$out/results.md" failed=0 line rc wall
    {
        echo "Fuzz campaign $(date -u +%Y-%m-%dT%H:%MZ), commit $commit," \
            "$(nproc) cores, $("$CXX" --version | head -1)"
        echo
        echo "| transport | executions | cov | ft | corpus (files/bytes) | exec/s | wall (s) | result |"
        echo "|---|---|---|---|---|---|---|---|"
        for transport in "${TRANSPORTS[@]}"; do
            read -r rc wall <"$out/$transport.status"
            # The last status line: "#N DONE cov: C ft: F corp: K/S lim: L exec/s: E rss: R".
            line="$(grep -E '^#[0-9]+' "$out/$transport.log" | tail -1)"
            local execs cov ft corp eps result="ok"
            execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$transport.log")"
            [[ -n "$execs" ]] || execs="$(sed -E 's/^#([0-9]+).*/\1/' <<<"$line")"
            cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$line")"
            ft="$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$line")"
            corp="$(sed -nE 's/.* corp: ([^ ]+).*/\1/p' <<<"$line")"
            eps="$(sed -nE 's/^stat::average_exec_per_sec: *//p' "$out/$transport.log")"
            if [[ $rc != 0 ]]; then
                result="FINDING (exit $rc; see $transport.log)"
                failed=1
            fi
            echo "| $transport | $execs | $cov | $ft | $corp | $eps | $wall | $result |"
        done
        echo
        echo "Total wall time $(($(date +%s) - start)) s; libFuzzer flags:" \
            "$(common_flags "$dir" '<transport>') -runs=$runs"
    } >"$table"
    cat "$table"
    for transport in "${TRANSPORTS[@]}"; do
        report_crashes "$dir" "$transport"
    done
    log "results: $table"
    return $failed
}

command="${1:-}"
[[ $# -gt 0 ]] && shift
case "$command" in
    build) [[ $# -eq 1 ]] || { log "usage: fuzz.sh build <dir>"; exit 2; }; cmd_build "$@" ;;
    ci) [[ $# -ge 2 ]] || { log "usage: fuzz.sh ci <dir> <transport> [sec]"; exit 2; }; cmd_ci "$@" ;;
    campaign)
        [[ $# -ge 2 ]] || { log "usage: fuzz.sh campaign <dir> <out> [runs]"; exit 2; }
        cmd_campaign "$@"
        ;;
    *)
        sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
