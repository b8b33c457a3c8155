#!/usr/bin/env bash
# MetaRoCE-ns3: an MPI-enabled ns-3.37 and a build of this project against it (docs/distributed.md).
#
#   tools/metaroce-mpi.sh setup   (./metaroce mpi-setup)  Debian's ns-3.37 source, built with
#                                 NS3_MPI=ON and only the modules we need, installed to a prefix
#   tools/metaroce-mpi.sh build   (./metaroce mpi-build)  configure + build this project into
#                                 build-mpi/ against that prefix
#   tools/metaroce-mpi.sh source-dir                      print the unpacked ns-3.37 source tree
#                                 (for tools/check-ns3-tree.sh; fails when there is none)
#
# Both are idempotent: a finished step (source unpacked, ns-3 installed, build-mpi configured) is
# not redone. Environment:
#   METAROCE_NS3_MPI_DIR   where the ns-3 source, build and install live (default .cache/ns3-mpi)
#   METAROCE_MPI_BUILD_DIR our build folder (default build-mpi)
#   METAROCE_JOBS          parallel jobs (default: nproc)
#   METAROCE_MPI_TARGETS   build only these targets (space-separated; default: all), e.g.
#                          metaroce-run for the MPI CTests (what ./metaroce test does)

set -euo pipefail

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
NS3_MPI_DIR="${METAROCE_NS3_MPI_DIR:-$ROOT/.cache/ns3-mpi}"
BUILD_DIR="${METAROCE_MPI_BUILD_DIR:-$ROOT/build-mpi}"
JOBS="${METAROCE_JOBS:-$(nproc 2>/dev/null || echo 2)}"
PREFIX="$NS3_MPI_DIR/install"
# What the metaroce module links (core, network) plus mpi. ns-3's mpi module itself needs
# network; point-to-point is not needed (our remote channel is our own).
NS3_MODULES="core;network;mpi"
MPI_PACKAGES=(libopenmpi-dev openmpi-bin dpkg-dev cmake g++ make libgsl-dev libsqlite3-dev
              libxml2-dev)

log() { echo "[metaroce] $*" >&2; }
die() {
    echo "[metaroce] error: $*" >&2
    exit 1
}

as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        die "'$*' needs root and sudo is not installed; run as root"
    fi
}

is_installed() {
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == "installed" ]]
}

# deb-src entries for the configured archive (deb822 sources or a classic sources.list).
enable_deb_src() {
    if apt-get indextargets 2>/dev/null | grep -q '^MetaKey: .*Sources'; then
        return 0
    fi
    local deb822=/etc/apt/sources.list.d/debian.sources
    if [[ -f $deb822 ]] && grep -q '^Types: deb$' "$deb822"; then
        log "enabling deb-src in $deb822 (Types: deb deb-src)"
        as_root sed -i 's/^Types: deb$/Types: deb deb-src/' "$deb822"
    elif [[ -f /etc/apt/sources.list ]] && grep -q '^deb ' /etc/apt/sources.list; then
        log "adding deb-src lines to /etc/apt/sources.list"
        as_root sed -i -e 'p' -e 's/^deb /deb-src /;t' -e 'd' /etc/apt/sources.list
    else
        die "no apt source found to add deb-src to; add a deb-src line for Debian 12 by hand"
    fi
    NEED_UPDATE=1
}

# The unpacked ns-3.37 source tree (empty if none).
find_source_dir() {
    find "$NS3_MPI_DIR/src" -mindepth 2 -maxdepth 3 -name CMakeLists.txt \
        -path '*ns-3.37*' -printf '%h\n' 2>/dev/null | sort | head -n1
}

cmd_source_dir() {
    local srcdir
    srcdir="$(find_source_dir)"
    [[ -n "$srcdir" ]] || die "no ns-3.37 source under $NS3_MPI_DIR/src; run ./metaroce mpi-setup"
    echo "$srcdir"
}

cmd_setup() {
    command -v apt-get >/dev/null || die "mpi-setup needs Debian/Ubuntu (apt-get)"
    local start=$SECONDS
    if [[ -f "$PREFIX/.metaroce-ns3-mpi-done" ]]; then
        log "MPI-enabled ns-3 already installed in $PREFIX (remove $NS3_MPI_DIR to redo)"
        return 0
    fi

    NEED_UPDATE=0
    enable_deb_src
    local missing=() pkg
    for pkg in "${MPI_PACKAGES[@]}"; do
        is_installed "$pkg" || missing+=("$pkg")
    done
    [[ ${#missing[@]} -gt 0 ]] && NEED_UPDATE=1
    if [[ $NEED_UPDATE == 1 ]]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    fi
    if [[ ${#missing[@]} -gt 0 ]]; then
        log "installing: ${missing[*]}"
        as_root env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi

    # 1. Source: Debian's ns3 3.37 source package (orig tarball + Debian patches).
    mkdir -p "$NS3_MPI_DIR/src"
    local srcdir
    srcdir="$(find_source_dir)"
    if [[ -z "$srcdir" ]]; then
        log "apt-get source ns3 into $NS3_MPI_DIR/src"
        (cd "$NS3_MPI_DIR/src" && apt-get source -q ns3) ||
            die "apt-get source ns3 failed (is deb-src enabled and apt-get update run?)"
        srcdir="$(find "$NS3_MPI_DIR/src" -mindepth 2 -maxdepth 3 -name CMakeLists.txt \
            -path '*ns-3.37*' -printf '%h\n' | sort | head -n1)"
        [[ -n "$srcdir" ]] || die "no ns-3.37 CMakeLists.txt under $NS3_MPI_DIR/src"
    fi
    log "ns-3 source: $srcdir"

    # 2. Configure + build + install only the modules we need, with MPI.
    local generator=(-G "Unix Makefiles")
    command -v ninja >/dev/null && generator=(-G Ninja)
    [[ -f "$NS3_MPI_DIR/build/CMakeCache.txt" ]] && generator=()
    log "configuring ns-3 (modules: $NS3_MODULES; NS3_MPI=ON) in $NS3_MPI_DIR/build"
    cmake -S "$srcdir" -B "$NS3_MPI_DIR/build" "${generator[@]}" --log-level=WARNING \
        -DCMAKE_BUILD_TYPE=release \
        -DCMAKE_INSTALL_PREFIX="$PREFIX" \
        -DNS3_MPI=ON \
        -DNS3_ENABLED_MODULES="$NS3_MODULES" \
        -DNS3_EXAMPLES=OFF -DNS3_TESTS=OFF \
        -DNS3_PYTHON_BINDINGS=OFF \
        -DNS3_WARNINGS_AS_ERRORS=OFF \
        -DNS3_ASSERT=OFF -DNS3_LOG=OFF ||
        die "configuring ns-3 failed (see above)"
    grep -q '^NS3_MPI:BOOL=ON' "$NS3_MPI_DIR/build/CMakeCache.txt" ||
        die "ns-3 was configured without MPI (is libopenmpi-dev installed?)"
    log "building ns-3 (-j$JOBS)"
    cmake --build "$NS3_MPI_DIR/build" -j "$JOBS" || die "building ns-3 failed (see above)"
    log "installing ns-3 into $PREFIX"
    cmake --install "$NS3_MPI_DIR/build" >/dev/null || die "installing ns-3 failed"
    ls "$PREFIX"/lib*/libns3*mpi*.so >/dev/null 2>&1 ||
        die "the install in $PREFIX has no libns3*-mpi library"
    touch "$PREFIX/.metaroce-ns3-mpi-done"
    log "MPI-enabled ns-3 installed in $PREFIX ($((SECONDS - start)) s)"
    log "next: ./metaroce mpi-build"
}

cmd_build() {
    [[ -f "$PREFIX/.metaroce-ns3-mpi-done" ]] ||
        die "no MPI-enabled ns-3 in $PREFIX; run ./metaroce mpi-setup first"
    command -v mpirun >/dev/null || die "mpirun not found; run ./metaroce mpi-setup"
    local generator=()
    if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
        generator=(-G "Unix Makefiles")
        command -v ninja >/dev/null && generator=(-G Ninja)
    fi
    log "configuring $BUILD_DIR against $PREFIX (METAROCE_ENABLE_MPI=ON)"
    cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" --log-level=NOTICE \
        -DCMAKE_BUILD_TYPE=Release \
        -DMETAROCE_NS3_ROOT="$PREFIX" \
        -DMETAROCE_ENABLE_MPI=ON "$@"
    local targets=()
    if [[ -n "${METAROCE_MPI_TARGETS:-}" ]]; then
        read -r -a targets <<<"$METAROCE_MPI_TARGETS"
        targets=(--target "${targets[@]}")
    fi
    log "building $BUILD_DIR (-j$JOBS) ${targets[*]}"
    cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
    log "MPI tests: ctest --test-dir $BUILD_DIR -L mpi --output-on-failure"
}

command="${1:-}"
[[ $# -gt 0 ]] && shift
case "$command" in
    setup) cmd_setup "$@" ;;
    build) cmd_build "$@" ;;
    source-dir) cmd_source_dir ;;
    *) die "usage: tools/metaroce-mpi.sh setup|build|source-dir (./metaroce mpi-setup, mpi-build)" ;;
esac
