# Sourced by scripts/demo and scripts/test: installs, with apt-get, the
# Debian packages cgprof needs to build and test that are not installed yet.
# Needs root (or sudo) only when something is missing.

CGPROF_PACKAGES="gcc g++ meson ninja-build pkg-config python3 libdw-dev libelf-dev zlib1g-dev liblzma-dev libbz2-dev libunwind-dev libcmocka-dev valgrind clang libclang-rt-dev cmake"
# Only the tests need these (scripts/test adds them): chromium, headless, to
# open profiles in speedscope (tests/vendor/speedscope, test_speedscope.py);
# golang-go, whose `go tool pprof` reads cgprof pprof's files back
# (test_pprof.py); ccache, which the tests' scratch copies of the tree (the
# README's, the guide's and docs/install.md's commands, each a build from
# nothing) share, so that the tree is compiled once rather than four times
# (tests/integration/test_guide.py, SCRATCH_CCACHE).
CGPROF_TEST_PACKAGES="chromium golang-go ccache"

# The aarch64 step of scripts/test (scripts/test-aarch64, which builds with
# cross/aarch64-linux-gnu-gcc.ini and runs the tests under qemu-user):
# Debian's cross compilers and binutils, qemu-user-static, and the arm64
# architecture's own packages of the libraries the runtime and the tests
# build with (libc6-dev's, libdw-dev's, libunwind-dev's, libcmocka-dev's
# headers and .pc files) and run with (libstdc++6 for the C++ programs,
# libc6-dbg for the C library's symbols, as valgrind brings amd64's:
# start_thread named in the profiles). Installed by cgprof_install_cross_deps.
CGPROF_CROSS_PACKAGES="gcc-aarch64-linux-gnu g++-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user-static libc6:arm64 libc6-dev:arm64 libc6-dbg:arm64 libstdc++6:arm64 libdw-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 libunwind-dev:arm64 libcmocka-dev:arm64"

# cgprof_say MESSAGE: one line on stderr, "cgprof: MESSAGE", as each step
# starts, so that a slow machine is never taken for a hung one.
cgprof_say() {
    echo "cgprof: $*" >&2
}

# cgprof_as_root WHY: prints what runs a command as root here ("" as root,
# "sudo" where there is sudo); else says WHY on stderr and fails.
cgprof_as_root() {
    if [ "$(id -u)" = 0 ]; then
        echo ""
    elif command -v sudo >/dev/null 2>&1; then
        echo sudo
    else
        echo "cgprof: $1" >&2
        return 1
    fi
}

cgprof_install_deps() {
    local missing="" pkg
    for pkg in $CGPROF_PACKAGES; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
            missing="$missing $pkg"
        fi
    done
    [ -z "$missing" ] && return 0
    local n
    n=$(echo $missing | wc -w)
    cgprof_say "installing $n missing Debian packages with apt-get (a minute or more on a fresh machine; apt's own lines follow):$missing"
    local sudo
    sudo=$(cgprof_as_root "these packages are missing and installing them needs root:$missing") || return 1
    export DEBIAN_FRONTEND=noninteractive
    cgprof_say "apt-get update"
    $sudo apt-get update -qq >&2 || return 1
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing >&2 || return 1
    cgprof_say "installed:$missing"
}

# cgprof_progress LABEL LOG COMMAND...: runs a build command (meson compile
# or ninja, whose lines start with [n/N]), its output kept in LOG, and says
# how far it is at each tenth of its steps; on failure, the end of LOG.
cgprof_progress() {
    local label="$1" log="$2" rc=0
    shift 2
    if ! "$@" 2>&1 | awk -v label="$label" -v logfile="$log" '
        { print > logfile; fflush(logfile) }
        /^\[[0-9]+\/[0-9]+\]/ {
            split(substr($1, 2), a, "/"); n = a[1] + 0; total = a[2] + 0
            if (!started) { printf "cgprof: %s: %d steps\n", label, total > "/dev/stderr"; started = 1 }
            tenth = int(n * 10 / total)
            if (tenth > shown) { shown = tenth; printf "cgprof: %s: %d/%d\n", label, n, total > "/dev/stderr" }
        }
        /no work to do/ { printf "cgprof: %s: up to date\n", label > "/dev/stderr" }'; then
        rc=${PIPESTATUS[0]}
        echo "cgprof: $label failed (exit $rc); the end of $log:" >&2
        tail -n 40 "$log" >&2
    fi
    return "$rc"
}

# meson setup once, then build.
cgprof_build() {
    local builddir="$1"
    shift
    if [ ! -f "$builddir/build.ninja" ]; then
        cgprof_say "configuring $builddir/ (meson setup${*:+ $*})"
        meson setup "$builddir" "$@" >/dev/null || return 1
    elif [ $# -gt 0 ]; then
        # a build directory made before (scripts/demo's, without the
        # tests): the options asked for now, on it
        meson configure "$builddir" "$@" >/dev/null || return 1
    fi
    mkdir -p "$builddir/meson-logs"
    cgprof_progress "building $builddir/" "$builddir/meson-logs/compile.log" meson compile -C "$builddir"
}

# The aarch64 step's packages (CGPROF_CROSS_PACKAGES), the arm64
# architecture added to dpkg first where it is not (its packages come from
# the same archive; cgprof_install_deps then runs apt-get update, as
# something is missing).
cgprof_install_cross_deps() {
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        local sudo
        sudo=$(cgprof_as_root "the arm64 architecture is not in dpkg's and adding it needs root") || return 1
        cgprof_say "dpkg --add-architecture arm64 (the aarch64 step's libraries)"
        $sudo dpkg --add-architecture arm64 || return 1
    fi
    CGPROF_PACKAGES="$CGPROF_CROSS_PACKAGES" cgprof_install_deps
}
