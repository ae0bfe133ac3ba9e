# Sourced by scripts/demo and scripts/test: installs, with apt-get, the
# Debian packages cgprof needs to build and test that are not installed yet.
# Needs root (or sudo) only when something is missing.

CGPROF_PACKAGES="gcc g++ meson ninja-build pkg-config python3 libdw-dev libelf-dev zlib1g-dev liblzma-dev libbz2-dev libunwind-dev libcmocka-dev valgrind clang libclang-rt-dev cmake"
# Only the tests need these (scripts/test adds them): chromium, headless, to
# open profiles in speedscope (tests/vendor/speedscope, test_speedscope.py);
# golang-go, whose `go tool pprof` reads cgprof pprof's files back
# (test_pprof.py).
CGPROF_TEST_PACKAGES="chromium golang-go"

cgprof_install_deps() {
    local missing="" pkg
    for pkg in $CGPROF_PACKAGES; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
            missing="$missing $pkg"
        fi
    done
    [ -z "$missing" ] && return 0
    echo "cgprof: installing missing packages:$missing" >&2
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo="sudo"
        else
            echo "cgprof: these packages are missing and installing them needs root:$missing" >&2
            return 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2 || return 1
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing >&2 || return 1
}

# meson setup once, then build.
cgprof_build() {
    local builddir="$1"
    shift
    if [ ! -f "$builddir/build.ninja" ]; then
        meson setup "$builddir" "$@" >/dev/null || return 1
    elif [ $# -gt 0 ]; then
        # a build directory made before (scripts/demo's, without the
        # tests): the options asked for now, on it
        meson configure "$builddir" "$@" >/dev/null || return 1
    fi
    meson compile -C "$builddir" >/dev/null || { meson compile -C "$builddir"; return 1; }
}
