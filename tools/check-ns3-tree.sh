#!/usr/bin/env bash
# MetaRoCE-ns3: check that the module works as a drop-in ns-3 contrib module (docs/building.md).
#
#   tools/check-ns3-tree.sh [options] PATH-TO-NS3-SOURCE
#
# Copies contrib/metaroce/ into PATH/contrib/metaroce/ (updating an earlier copy), configures
# ns-3 there with only the modules the module needs (core, network and what they pull in), with
# examples and tests built for metaroce only, builds, fails on any compiler warning in the
# module's own files, and runs the module's examples and test suites with ns-3's test.py.
#
# The ns-3 tree keeps its build (PATH/cmake-cache, PATH/build), so a second run rebuilds only
# what changed; a first run builds ns-3's core and network (minutes). Options:
#   --jobs N        parallel build jobs (default: METAROCE_JOBS or nproc)
#   --timeout S     give up (exit 124) when configure + build + tests take longer than S
#                   seconds (default: none)
#   --profile P     ns-3 build profile on the first configure: debug, default (ns-3's default:
#                   optimized, with asserts and logs) or release (default: default)
#   --build-only    configure and build, run nothing
#
# Exit status: 0 when everything built warning-free and passed; 1 otherwise; 2 on usage errors;
# 124 on --timeout.

set -euo pipefail

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
MODULE_DIR="$ROOT/contrib/metaroce"
JOBS="${METAROCE_JOBS:-$(nproc 2>/dev/null || echo 2)}"
TIMEOUT=0
PROFILE=default
BUILD_ONLY=0
# The modules to enable; ns-3 adds their dependencies (stats, ...).
NS3_MODULES="metaroce;core;network"
# The module's test suites (contrib/metaroce/test/*-test-suite.cc).
SUITES=(metaroce-model metaroce-scheduler metaroce-simulator-impl metaroce-device metaroce-switch metaroce-nic metaroce-fabric metaroce-workload metaroce-helper metaroce-example-incast metaroce-example-incast-rocev2)

log() { echo "[check-ns3-tree] $*" >&2; }
die() {
    echo "[check-ns3-tree] error: $1" >&2
    exit "${2:-1}"
}
usage() {
    sed -n '3,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

NS3=""
while [[ $# -gt 0 ]]; do
    case "$1" in
    --jobs) JOBS="${2:?--jobs needs a number}"; shift 2 ;;
    --jobs=*) JOBS="${1#*=}"; shift ;;
    --timeout) TIMEOUT="${2:?--timeout needs seconds}"; shift 2 ;;
    --timeout=*) TIMEOUT="${1#*=}"; shift ;;
    --profile) PROFILE="${2:?--profile needs a name}"; shift 2 ;;
    --profile=*) PROFILE="${1#*=}"; shift ;;
    --build-only) BUILD_ONLY=1; shift ;;
    -h | --help) usage ;;
    -*) echo "unknown option: $1" >&2; usage ;;
    *)
        [[ -z "$NS3" ]] || { echo "one ns-3 source tree, please" >&2; usage; }
        NS3="$1"
        shift
        ;;
    esac
done
[[ -n "$NS3" ]] || usage
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "--jobs: not a positive number: $JOBS" 2
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "--timeout: not a number of seconds: $TIMEOUT" 2
case "$PROFILE" in debug | default | release | optimized) ;; *) die "--profile: $PROFILE?" 2 ;; esac
NS3="$(cd "$NS3" 2>/dev/null && pwd)" || die "no such directory: $NS3" 2
for file in ns3 test.py VERSION CMakeLists.txt src/core/CMakeLists.txt; do
    [[ -e "$NS3/$file" ]] || die "$NS3 is not an ns-3 source tree (no $file)" 2
done
[[ "$NS3" != "$ROOT" ]] || die "$NS3 is this repository; give an ns-3 source tree" 2

# --timeout: the whole run, enforced by re-running this script under timeout(1).
if [[ "$TIMEOUT" -gt 0 && -z "${METAROCE_CHECK_NS3_UNDER_TIMEOUT:-}" ]]; then
    args=(--jobs "$JOBS" --profile "$PROFILE")
    [[ $BUILD_ONLY == 1 ]] && args+=(--build-only)
    status=0
    METAROCE_CHECK_NS3_UNDER_TIMEOUT=1 timeout --kill-after=30 "$TIMEOUT" \
        "${BASH_SOURCE[0]}" "${args[@]}" "$NS3" || status=$?
    [[ $status == 124 ]] && log "gave up after $TIMEOUT s (--timeout)"
    exit "$status"
fi

cd "$NS3"
# ns-3's ns3 script refuses to run at all when USER is root (it only wants to avoid running
# simulations with root rights by accident); test.py and the examples-as-tests call it.
if [[ "${USER:-}" == root ]]; then
    export USER=ns3-check
fi
# ./ns3 sets CLICOLOR=1, and ns-3's CMake then adds -fdiagnostics-color=always to every compile
# command. CMake re-runs from the build below must see the same, or every object of the tree
# (ns-3's core and network included) rebuilds because its command line changed.
export CLICOLOR=1
ns3_version="$(head -n1 VERSION)"
log "ns-3 tree: $NS3 (VERSION $ns3_version); $(c++ --version | head -n1); cmake $(cmake --version |
    head -n1 | awk '{print $3}')"

# 1. The module: PATH/contrib/metaroce made equal to ours. Only files whose content differs are
# copied (and so get a new modification time); unchanged files keep theirs and do not rebuild.
# (Copying modification times instead would hide an edit older than the tree's last build.)
log "updating $NS3/contrib/metaroce from contrib/metaroce"
[[ -L contrib/metaroce ]] && rm contrib/metaroce # a link to our module: replace it by a copy
mkdir -p contrib/metaroce
(cd "$MODULE_DIR" && find . -type d) | (cd contrib/metaroce && xargs mkdir -p)
while IFS= read -r -d '' file; do
    cmp -s "$MODULE_DIR/$file" "contrib/metaroce/$file" ||
        cp "$MODULE_DIR/$file" "contrib/metaroce/$file"
done < <(cd "$MODULE_DIR" && find . -type f -print0)
while IFS= read -r -d '' file; do
    [[ -e "$MODULE_DIR/$file" ]] || rm -rf "contrib/metaroce/$file"
done < <(cd contrib/metaroce && find . -mindepth 1 -depth -print0)

# 2. Configure, unless the tree is already configured this way (then the build re-runs CMake
# by itself when a CMakeLists.txt changed).
cache=cmake-cache/CMakeCache.txt
configured=0
# (A configure that failed leaves a cache but no build files.)
if [[ -f $cache ]] && ls .lock-ns3_* >/dev/null 2>&1 &&
    [[ -f cmake-cache/build.ninja || -f cmake-cache/Makefile ]] &&
    grep -qx "NS3_ENABLED_MODULES:STRING=$NS3_MODULES" "$cache" &&
    grep -qx "NS3_FILTER_MODULE_EXAMPLES_AND_TESTS:STRING=metaroce" "$cache" &&
    grep -qx "NS3_EXAMPLES:BOOL=ON" "$cache" && grep -qx "NS3_TESTS:BOOL=ON" "$cache"; then
    configured=1
fi
if [[ $configured == 0 ]]; then
    generator=()
    if [[ ! -f $cache ]] && command -v ninja >/dev/null; then
        generator=(-G Ninja)
    fi
    log "configuring: ./ns3 configure -d $PROFILE --enable-examples --enable-tests" \
        "--enable-modules '$NS3_MODULES' --filter-module-examples-and-tests metaroce"
    ./ns3 configure -d "$PROFILE" --enable-examples --enable-tests \
        --enable-modules "$NS3_MODULES" --filter-module-examples-and-tests metaroce \
        "${generator[@]}" >configure.metaroce.log 2>&1 || {
        tail -n 40 configure.metaroce.log >&2
        die "configuring ns-3 failed (full log: $NS3/configure.metaroce.log)"
    }
fi
grep -q "^metaroce\b\|[[:space:]]metaroce[[:space:]]" configure.metaroce.log 2>/dev/null ||
    [[ $configured == 1 ]] || log "warning: metaroce is not in ns-3's list of modules to build"

# 3. Build, and fail on warnings in the module's own files (those compiled in this run).
log "building (-j$JOBS)"
start=$SECONDS
status=0
cmake --build cmake-cache -j "$JOBS" >build.metaroce.log 2>&1 || status=$?
if [[ $status != 0 ]]; then
    sed -i 's/\x1b\[[0-9;]*[mK]//g' build.metaroce.log
    grep -E "error|Error" build.metaroce.log | head -n 40 >&2 || true
    die "building failed (full log: $NS3/build.metaroce.log)"
fi
log "built in $((SECONDS - start)) s"
# (Without the colour codes of -fdiagnostics-color.)
sed -i 's/\x1b\[[0-9;]*[mK]//g' build.metaroce.log
warnings="$(grep -E "contrib/metaroce/[^:]+:[0-9]+:[0-9]+: warning:" build.metaroce.log |
    sort -u || true)"
if [[ -n "$warnings" ]]; then
    echo "$warnings" >&2
    die "the module compiles with warnings (full log: $NS3/build.metaroce.log)"
fi
[[ $BUILD_ONLY == 1 ]] && { log "built warning-free (--build-only: nothing run)"; exit 0; }

# 4. The test suites (unit, system, examples as tests) and the examples of
# test/examples-to-run.py: one test.py run without rebuilding. With examples and tests filtered
# to metaroce, test.py finds only the module's (and possibly a few of ns-3's own).
log "./test.py --no-build"
status=0
./test.py --no-build --nocolor >test.metaroce.log 2>&1 || status=$?
# Result lines: "PASS: TestSuite metaroce-model", with a "[1/9] " progress prefix in ns-3.37.
result='^(\[[0-9]+/[0-9]+\] )?'
grep -E "${result}(PASS|FAIL|CRASH|SKIP|VALGR)" test.metaroce.log | grep -i metaroce >&2 || true
grep -E "tests passed" test.metaroce.log >&2 || true
failed=0
[[ $status == 0 ]] || failed=1
for suite in "${SUITES[@]}"; do
    # A suite test.py does not know is simply not run: a failure here.
    grep -qE "${result}PASS: TestSuite $suite\$" test.metaroce.log || {
        log "test suite $suite did not pass (or did not run)"
        failed=1
    }
done
expected="$(python3 -c '
import runpy, sys
examples = runpy.run_path(sys.argv[1])["cpp_examples"]
print(sum(1 for _, do_run, _ in examples if eval(do_run)))
' contrib/metaroce/test/examples-to-run.py)"
passed="$(grep -cE "${result}PASS: Example contrib/metaroce/" test.metaroce.log || true)"
if [[ "$passed" != "$expected" ]]; then
    log "$passed of the $expected examples in contrib/metaroce/test/examples-to-run.py passed"
    failed=1
fi
if [[ $failed != 0 ]]; then
    grep -vE "${result}PASS" test.metaroce.log | tail -n 60 >&2
    die "some test suites or examples failed in $NS3 (ns-3 $ns3_version; log: $NS3/test.metaroce.log)"
fi
log "ns-3 $ns3_version: built warning-free; suites ${SUITES[*]} and $passed examples passed"
