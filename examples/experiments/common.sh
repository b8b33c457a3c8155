# Shared by the experiment scripts of this folder (sourced, bash): ROOT, BIN, JOBS, and `run`,
# which starts one metaroce-run in the background with at most JOBS at a time. `finish` waits
# for all and fails if any run failed.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${BIN:-$ROOT/build/bin/metaroce-run}
JOBS=${JOBS:-2}
FAILED=0

run() {
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
        wait -n || FAILED=1
    done
    echo "metaroce-run $*" >&2
    "$BIN" --quiet "$@" &
}

finish() {
    while [ "$(jobs -rp | wc -l)" -gt 0 ]; do
        wait -n || FAILED=1
    done
    wait || FAILED=1
    if [ "$FAILED" != 0 ]; then
        echo "a run failed" >&2
        exit 1
    fi
}
