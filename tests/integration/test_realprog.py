"""A real program, built by its own build system: jq 1.6 from Debian
bookworm's source, compiled with -finstrument-functions by gcc (and by clang
when it is there), run on a few MB of JSON with several filters, once under
the nesting oracle (tests/nesting/nest.c) and once under cgprof. The outputs
must be identical and cgprof's counts must be the oracle's (nesting.py):
per function always, and per arc when the oracle says the hooks nest.

Optional: the suite 'realprog', left out of a plain `meson test` (and so of
scripts/test and CI) by the default test setup in tests/meson.build:

    meson test -C build --suite realprog --print-errorlogs

or directly: meson devenv -C build python3 ../tests/integration/test_realprog.py
(stderr shows a line per build and filter). It needs the network once, to fetch the source with
apt-get into a private cache (the system's apt configuration is not touched),
or CGPROF_REALPROG_SRC=<jq's unpacked source, a directory with its .dsc, or
its .orig.tar.gz>. It skips, saying why, when it can get neither.

Environment:
  CGPROF_REALPROG_SRC    a jq source at hand instead of apt-get's
  CGPROF_REALPROG_CACHE  the cache (default $HOME/.cache/cgprof-realprog):
                         the download, the unpacked source, one build per
                         compiler and flags; a second run reuses all of them
  CGPROF_NEST_LIB        a built oracle (libcgnest.so); else built here
  CGPROF_REALPROG_KEEP   1: keep each run's oracle and cgprof files (their
                         directory is printed) to run nesting.py on them
  CGPROF_REALPROG_QUICK  1: gcc's build only, four filters, a third of the
                         input (what scripts/test runs, in about a minute)
"""

import glob
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

import cgtest
import nesting
import test_fold

CACHE = os.environ.get("CGPROF_REALPROG_CACHE") or os.path.join(
    os.path.expanduser("~"), ".cache", "cgprof-realprog")
LOCAL_SRC = os.environ.get("CGPROF_REALPROG_SRC")
KEEP = os.environ.get("CGPROF_REALPROG_KEEP") == "1"
QUICK = os.environ.get("CGPROF_REALPROG_QUICK") == "1"

HOW_TO_ENABLE = ("to run it, give it network access to deb.debian.org once (the source is cached in %s), "
                 "or set CGPROF_REALPROG_SRC to jq's unpacked source, a directory with its .dsc, "
                 "or its .orig.tar.gz" % CACHE)

# Bumped when the way jq is built changes, so that cached builds are redone.
RECIPE = 1

# jq 1.6 as Debian builds it (debian/rules: dh's autoreconf, then configure),
# with what keeps it offline and free of build dependencies we do not need:
# no docs (Ruby), no maintainer mode (bison and flex: the generated parser
# and lexer are in the source, and Debian's patches update both), no
# oniguruma (the source's copy is an empty git submodule and Debian uses
# libonig-dev; without it the regex builtins report an error, and the regex
# filter is left out). libjq stays a shared library as in Debian's package:
# two instrumented objects, the program and its library.
CONFIGURE_ARGS = ["--disable-docs", "--disable-maintainer-mode", "--with-oniguruma=no", "--disable-static"]
CFLAGS = {"gcc": "-O2 -g -finstrument-functions", "clang": "-O2 -g -finstrument-functions"}

# The workload: each filter is run once under each preload. The heavy ones
# (every path, walk, the string builtins) take a slice: on the whole input
# they make half a billion hook calls or more, minutes under the oracle and
# cgprof for nothing more.
FILTERS = [
    ("identity", "."),
    ("select", "[.[] | select(.x > 10)] | length"),
    ("names", "map(.name) | sort | unique"),   # libc's qsort calls jq's sort_cmp: a callback nesting.py folds
    ("group_by", "group_by(.k) | map({k: .[0].k, n: length})"),
    ("paths", ".[:2000] | [paths] | length"),
    ("strings", '.[:6000] | map(.text | ascii_downcase | split(" ") | map(select(length > 3)) | join("-"))'
                ' | unique | length'),
    ("reduce", "reduce .[] as $r ({}; .[$r.k] += $r.y)"),
    ("entries", "[.[] | .sub | to_entries[] | .key] | unique"),
    ("tojson", "map(tojson | fromjson) == ."),
    ("walk", '.[:1000] | walk(if type == "number" then . + 1 else . end) | map(.x) | add'),
]
# Read from a file (jq -f) with a second file slurped (--slurpfile): both
# through jv_load_file, the host whose frame grows after its enter hook
# (issue 27: main and jv_load_file were counted once more, calls invented)
FROM_FILE = ("fromfile", "[.[] | select(.k == $side[0].k)] | length")
REGEX_FILTER = ("regex", '[.[] | select(.text | test("a.b"))] | length')
QUICK_FILTERS = ("identity", "names", "strings", "reduce", "fromfile")


def log(msg):
    print("realprog: " + msg, file=sys.stderr, flush=True)


def clean_env(**extra):
    """The environment without what would change a build or a run behind our
    back: a preload, the runtime's own variables (but cgtest.PINNED: exact
    counts), compiler flags."""
    drop = {"CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "MAKEFLAGS", "MFLAGS", "CGNEST_OUT"}
    e = {k: v for k, v in cgtest.clean_environ().items() if k not in drop}
    e["LC_ALL"] = "C"
    e.update(extra)
    return e


def sh(argv, cwd=None, timeout=cgtest.limit(1200), env=None):
    """Runs a build step; returns (status, output) for the caller to judge."""
    p = subprocess.run(argv, cwd=cwd, env=env or clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---- the source ---------------------------------------------------------------


def dsc_files(dsc):
    """The files a .dsc lists, {name: (size, sha256)}."""
    files, section = {}, None
    for line in open(dsc, encoding="utf-8", errors="replace"):
        if line.startswith("Checksums-Sha256:"):
            section = "sha256"
        elif not line.startswith(" "):
            section = None
        elif section == "sha256":
            digest, size, name = line.split()
            files[name] = (int(size), digest)
    return files


def dsc_complete(dsc):
    """The .dsc and every file it lists are there, with their checksums: a
    download cut short is not taken for a source."""
    files = dsc_files(dsc)
    d = os.path.dirname(dsc)
    if not any(".orig.tar." in n for n in files):
        return False
    for name, (size, digest) in files.items():
        p = os.path.join(d, name)
        if not os.path.isfile(p) or os.path.getsize(p) != size or sha256(p) != digest:
            return False
    return True


def apt_download(directory, package="jq"):
    """Fetches jq's (or package's: tests/bench/accuracy.py's pigz) bookworm source (.dsc, orig tarball, Debian tarball) into
    directory with apt-get, in a private configuration: our sources list
    only, our package lists and cache, under CACHE/apt. Returns the .dsc;
    raises SkipTest saying why when it cannot."""
    if not shutil.which("apt-get"):
        raise unittest.SkipTest("no apt-get to fetch jq's source; " + HOW_TO_ENABLE)
    apt = os.path.join(CACHE, "apt")
    for d in ("lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(apt, d), exist_ok=True)
    sources = os.path.join(apt, "sources.list")
    with open(sources, "w") as f:
        f.write("deb-src http://deb.debian.org/debian bookworm main\n")
    opts = ["-o", "Dir::Etc::SourceList=" + sources, "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", "Dir::State::Lists=" + os.path.join(apt, "lists"),
            "-o", "Dir::Cache=" + os.path.join(apt, "cache"),
            # offline, fail in seconds rather than retry for minutes
            "-o", "Acquire::http::Timeout=20", "-o", "Acquire::Retries=0"]
    if os.geteuid() == 0:
        # as root apt hands downloads to the user _apt, who cannot write here
        opts += ["-o", "APT::Sandbox::User=root"]
    for step in (["update"], ["source", "--download-only", package]):
        try:
            status, out = sh(["apt-get", "-q"] + opts + step, cwd=directory, timeout=cgtest.limit(600))
        except subprocess.TimeoutExpired:
            status, out = -1, "timed out"
        # apt-get update that cannot reach the archive only warns, and
        # exits 0: no Sources index in our lists is its failure
        if step == ["update"] and not glob.glob(os.path.join(apt, "lists", "*_Sources*")):
            status = status or -1
        if status:
            lines = [l.strip() for l in out.splitlines() if l.strip()]
            why = [l for l in lines if l.startswith(("E:", "W:", "Err:"))] or lines[-2:]
            raise unittest.SkipTest("apt-get %s failed (no network?): %s; %s"
                                    % (step[0], " / ".join(why[:3]), HOW_TO_ENABLE))
    dscs = [d for d in glob.glob(os.path.join(directory, package + "_*.dsc")) if dsc_complete(d)]
    if not dscs:
        raise unittest.SkipTest("apt-get source " + package + " left no complete .dsc and orig tarball in %s; %s"
                                % (directory, HOW_TO_ENABLE))
    return max(dscs, key=os.path.getmtime)


def unpack_dsc(dsc, dest):
    """dpkg-source -x: the orig tarball with Debian's patches, as Debian
    builds it. Without dpkg-source (dpkg-dev), the orig tarball alone
    (upstream jq 1.6, which builds the same way)."""
    if shutil.which("dpkg-source"):
        status, out = sh(["dpkg-source", "--no-check", "-x", dsc, dest])
        if status:
            raise RuntimeError("dpkg-source -x %s failed:\n%s" % (dsc, out[-3000:]))
        return "Debian's source (%s, patches applied)" % os.path.basename(dsc)
    (orig,) = [n for n in dsc_files(dsc) if ".orig.tar." in n]
    unpack_tarball(os.path.join(os.path.dirname(dsc), orig), dest)
    return "the orig tarball of %s without Debian's patches (no dpkg-source)" % os.path.basename(dsc)


def unpack_tarball(tarball, dest):
    """The tarball's single top directory becomes dest."""
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(tarball) as t:
        # the "data" filter (no absolute paths, no links out) where Python has it
        t.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    tops = os.listdir(tmp)
    top = os.path.join(tmp, tops[0]) if len(tops) == 1 and os.path.isdir(os.path.join(tmp, tops[0])) else tmp
    shutil.move(top, dest)
    shutil.rmtree(tmp, ignore_errors=True)
    return "the tarball " + tarball


def local_source():
    """CGPROF_REALPROG_SRC: (key, unpack), unpack(dest) putting the source
    in dest and saying what it is."""
    path = os.path.abspath(LOCAL_SRC)
    st = os.stat(path)
    key = "local-" + hashlib.sha256(("%s %d %d" % (path, st.st_mtime_ns, st.st_size)).encode()).hexdigest()[:12]
    if os.path.isfile(path):
        return key, lambda dest: unpack_tarball(path, dest)
    if os.path.isfile(os.path.join(path, "configure.ac")):
        def copy(dest):
            # a copy: autoreconf writes into the source, which is not ours
            shutil.copytree(path, dest, symlinks=True)
            return "a copy of the source tree " + path
        return key, copy
    dscs = sorted(glob.glob(os.path.join(path, "jq_*.dsc")))
    if dscs:
        return key, lambda dest: unpack_dsc(dscs[-1], dest)
    tarballs = sorted(glob.glob(os.path.join(path, "jq_*.orig.tar.*")) + glob.glob(os.path.join(path, "jq-*.tar.*")))
    if tarballs:
        return key, lambda dest: unpack_tarball(tarballs[-1], dest)
    raise unittest.SkipTest("CGPROF_REALPROG_SRC=%s holds no configure.ac, jq_*.dsc or jq tarball" % LOCAL_SRC)


def get_source():
    """jq's source, unpacked in CACHE/src/<key> and ready to configure:
    (directory, what it is). Fetched, unpacked and autoreconf'd once; the
    stamp .ready says it was all done (a run cut short starts again)."""
    if LOCAL_SRC:
        key, unpack = local_source()
    else:
        download = os.path.join(CACHE, "download")
        os.makedirs(download, exist_ok=True)
        dscs = [d for d in glob.glob(os.path.join(download, "jq_*.dsc")) if dsc_complete(d)]
        dsc = max(dscs, key=os.path.getmtime) if dscs else apt_download(download)
        key = os.path.basename(dsc)[:-len(".dsc")]
        unpack = lambda dest: unpack_dsc(dsc, dest)  # noqa: E731
    src = os.path.join(CACHE, "src", key)
    stamp = os.path.join(src, ".ready")
    if os.path.exists(stamp):
        ensure_tools(src)
        with open(stamp) as f:
            return src, f.read().strip()
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(os.path.dirname(src), exist_ok=True)
    what = unpack(src)
    ensure_tools(src)
    if not os.path.exists(os.path.join(src, "configure")):
        t = time.perf_counter()
        status, out = sh(["autoreconf", "-fi"], cwd=src)
        if status:
            raise AssertionError("autoreconf -fi in %s failed:\n%s" % (src, out[-3000:]))
        log("autoreconf -fi: %.1f s" % (time.perf_counter() - t))
    with open(stamp, "w") as f:
        f.write(what + "\n")
    return src, what


# ---- the build ----------------------------------------------------------------


def install_packages(packages):
    """apt-get install, as scripts/deps.sh does: root or sudo, and the
    system's package lists updated only when the install fails without."""
    prefix = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
    if prefix is None or not shutil.which("apt-get"):
        return "needs root (or sudo) and apt-get to install them"
    env = clean_env(DEBIAN_FRONTEND="noninteractive")
    install = prefix + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + packages
    log("installing " + " ".join(packages))
    status, out = sh(install, env=env)
    if status:
        sh(prefix + ["apt-get", "update", "-qq"], env=env)
        status, out = sh(install, env=env)
    return out.strip().splitlines()[-1] if status else None


def ensure_tools(src):
    """The tools the build needs: make, and when the source has no configure
    script (Debian's orig tarball is GitHub's tag archive: no configure, the
    oniguruma submodule empty), autoreconf's autoconf, automake and libtool.
    Installed with apt-get when missing; flex and bison are not needed."""
    need = {"make": "make"}
    if not os.path.exists(os.path.join(src, "configure")):
        need.update({"autoreconf": "autoconf", "automake": "automake", "libtoolize": "libtool"})
    missing = sorted({pkg for tool, pkg in need.items() if not shutil.which(tool)})
    if missing:
        why = install_packages(missing)
        still = sorted({pkg for tool, pkg in need.items() if not shutil.which(tool)})
        if still:
            raise unittest.SkipTest("building jq needs %s, not installed (%s); install them with apt-get install %s"
                                    % (", ".join(still), why or "apt-get install failed", " ".join(still)))


def compiler_id(cc):
    path = shutil.which(cc)
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.splitlines()
    return os.path.realpath(path), out[0] if out else ""


def build(src, cc):
    """jq built by gcc or clang with its own configure and make -j2 in
    CACHE/build/<key>, the key made of the source, the compiler (its path
    and version) and the flags, so that a second run reuses it; installed
    into the build's inst/ (a real jq and libjq.so, with a run path to each
    other, instead of libtool's wrapper script that would run a shell under
    the preload). Returns (inst, its build.json)."""
    cc_path, cc_version = compiler_id(cc)
    key = hashlib.sha256(json.dumps([RECIPE, src, cc_path, cc_version, CFLAGS[cc], CONFIGURE_ARGS]).encode())
    bdir = os.path.join(CACHE, "build", "%s-%s" % (cc, key.hexdigest()[:16]))
    inst = os.path.join(bdir, "inst")
    stamp = os.path.join(bdir, "build.json")
    if os.path.exists(stamp):
        with open(stamp) as f:
            info = json.load(f)
        info["cached"] = True
        return inst, info
    shutil.rmtree(bdir, ignore_errors=True)  # a build cut short: from scratch
    os.makedirs(bdir)
    info = {"cc": cc_path, "version": cc_version, "cflags": CFLAGS[cc], "configure_args": CONFIGURE_ARGS}
    steps = [("configure", [os.path.join(src, "configure"), "--prefix=" + inst] + CONFIGURE_ARGS
              + ["CC=" + cc_path, "CFLAGS=" + CFLAGS[cc]]),
             ("make", ["make", "-j2"]),
             ("install", ["make", "install"])]
    for name, argv in steps:
        t = time.perf_counter()
        status, out = sh(argv, cwd=bdir)
        info[name + "_seconds"] = round(time.perf_counter() - t, 2)
        with open(os.path.join(bdir, name + ".log"), "w") as f:
            f.write(out)
        if status:
            raise AssertionError("%s of jq with %s failed (status %d, log in %s):\n%s"
                                 % (name, cc, status, os.path.join(bdir, name + ".log"), out[-4000:]))
    with open(stamp, "w") as f:
        json.dump(info, f, indent=1)
    info["cached"] = False
    return inst, info


def build_lib(testcase, name, source, *flags):
    """A small preload library, built with gcc into a temporary directory."""
    d = tempfile.mkdtemp(prefix="cgprof-realprog-lib-")
    testcase.addClassCleanup(shutil.rmtree, d, ignore_errors=True)
    lib = os.path.join(d, name)
    if not os.path.isfile(source):
        with open(os.path.join(d, "src.c"), "w") as f:
            f.write(source)
        source = os.path.join(d, "src.c")
    status, out = sh(["gcc", "-shared", "-fPIC", "-O2", "-o", lib, source] + list(flags))
    if status:
        raise AssertionError("building %s failed:\n%s" % (name, out))
    return lib


def nest_lib(testcase):
    """The oracle: CGPROF_NEST_LIB, or built here (meson does not build it
    yet)."""
    return os.environ.get("CGPROF_NEST_LIB") or build_lib(
        testcase, "libcgnest.so", os.path.join(cgtest.SOURCE_DIR, "tests", "nesting", "nest.c"), "-ldl", "-pthread")


# jq seeds the hash of its objects' keys with arc4random() (Debian's fix for
# CVE-2026-40164): the collision chains, and so the calls of
# jvp_object_next_slot and of what it calls, change from one run to the
# next, and the oracle's run and cgprof's would not make the same calls.
# Every run of jq here has this arc4random preloaded first: jq 1.6's former
# fixed seed. Neither cgprof nor the oracle calls arc4random; the library
# has no hooks (not instrumented).
FIXED_SEED_C = """
#include <stdint.h>
uint32_t arc4random(void);
uint32_t arc4random(void) { return 0x432A9843u; } /* HASH_SEED of jq 1.6's src/jv.c */
"""


# ---- the workload -------------------------------------------------------------

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar "
         "papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu arb aab "
         "Café naïve Ünïcode 日本語 ÅNGSTRÖM").split()


def make_input(path, records=12000):
    """A few MB of JSON, the same every time (a seeded generator): an array
    of records with numbers (ints, floats, large), strings (ASCII, mixed
    case and UTF-8, for the string builtins and jq's UTF-8 checks), arrays,
    nested objects and nulls and booleans."""
    r = random.Random(20240611)

    def text(n):
        return " ".join(r.choice(WORDS) for _ in range(n))

    rows = []
    for i in range(records):
        rows.append({
            "id": i,
            "x": r.randint(-50, 150),
            "y": round(r.uniform(-1000, 1000), 3),
            "big": r.randint(0, 2 ** 53),
            "name": "%s%d" % (r.choice(WORDS), r.randint(0, 60)),
            "k": r.choice("abcdefg"),
            "flag": r.choice([True, False, None]),
            "text": text(r.randint(3, 12)),
            "tags": [r.choice(WORDS).upper() for _ in range(r.randint(0, 5))],
            "sub": {
                "a": [r.randint(0, 9) for _ in range(r.randint(0, 6))],
                "b": {"c": r.choice(WORDS), "d": [{"e": r.random(), "f": text(2)} for _ in range(r.randint(0, 3))]},
                "depth": {"one": {"two": {"three": [i, str(i), {"four": None}]}}},
            },
        })
    with open(path, "w", encoding="utf-8") as f:
        json.dump(rows, f, ensure_ascii=False)
    return os.path.getsize(path)


def run_jq(jq, args, cwd, preload, env=None):
    """One run of jq with args: (status, stdout bytes, stderr, wall
    seconds). preload: the libraries to preload, first the fixed seed.

    The runs to compare must make the same calls, and jq's calls depend on
    more than its input: it keeps the working directory's real path as a
    string (PROGRAM_ORIGIN, each character through jvp_utf8_next), and the
    input file's name. So the runs of a filter share both, and the
    preloads' output directories are given by absolute paths (CGNEST_OUT,
    CGPROF_OUT). The environment itself differs (LD_PRELOAD, those
    variables): no filter may read it ($ENV, env)."""
    e = clean_env(**(env or {}))
    e["LD_PRELOAD"] = ":".join(preload)
    t = time.perf_counter()
    p = subprocess.run([jq] + args, cwd=cwd, env=e, capture_output=True, timeout=cgtest.limit(900))
    return p.returncode, p.stdout, p.stderr.decode(errors="replace"), time.perf_counter() - t


def first_difference(a, b):
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return "sizes %d and %d, first difference at byte %d: %r vs %r" % (len(a), len(b), n, a[n:n + 60], b[n:n + 60])


class Jq(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if cgtest.WRAPPER:
            raise unittest.SkipTest("not meant for a wrapper (valgrind): a run takes seconds natively")
        os.makedirs(CACHE, exist_ok=True)
        cls.src, what = get_source()
        log("source: %s, in %s" % (what, cls.src))
        cls.nest = nest_lib(cls)
        cls.seed = build_lib(cls, "libfixedseed.so", FIXED_SEED_C, "-fno-instrument-functions")
        cls.tmp = tempfile.mkdtemp(prefix="cgprof-realprog-")
        if not KEEP:
            cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.data = os.path.join(cls.tmp, "input.json")
        log("input: %.1f MB of JSON" % (make_input(cls.data, 4000 if QUICK else 12000) / 1e6))

    def test_gcc(self):
        self.check_compiler("gcc")

    def test_clang(self):
        if QUICK:
            self.skipTest("CGPROF_REALPROG_QUICK=1: gcc's build only")
        if not shutil.which("clang"):
            self.skipTest("clang is not installed")
        self.check_compiler("clang")

    def check_compiler(self, cc):
        inst, info = build(self.src, cc)
        log("%s build (%s, CFLAGS=%s): configure %.1f s, make -j2 %.1f s, install %.1f s%s"
            % (cc, info["version"], info["cflags"], info["configure_seconds"], info["make_seconds"],
               info["install_seconds"], " (cached: built by an earlier run)" if info["cached"] else ""))
        jq = os.path.join(inst, "bin", "jq")
        filters = [f for f in FILTERS + [FROM_FILE] if not QUICK or f[0] in QUICK_FILTERS]
        # the regex builtins only with oniguruma (not in this build's configure)
        status, out, _, _ = run_jq(jq, ["-n", '"axb" | test("a.b")'], self.tmp, [self.seed])
        if status == 0:
            filters.append(REGEX_FILTER)
        with self.subTest(compiler=cc, check="repeatable"):
            self.check_repeatable(jq)
        for name, filt in filters:
            with self.subTest(compiler=cc, filter=name):
                self.check_filter(cc, jq, name, filt)
        with self.subTest(compiler=cc, filter=FROM_FILE[0], mode="fold"):
            self.check_fold(cc, jq)

    def check_repeatable(self, jq):
        """The comparison holds only if jq makes the same calls in the
        oracle's run and in cgprof's: two runs under the oracle, parsing the
        whole input, must count the same calls of every function."""
        counts = []
        for i in range(2):
            odir = tempfile.mkdtemp(prefix="repeat-", dir=self.tmp)
            status, _, err, _ = run_jq(jq, ["length", self.data], self.tmp, [self.seed, self.nest],
                                       {"CGNEST_OUT": odir})
            self.assertEqual(status, 0, err)
            counts.append(nesting.Oracle.load(odir).fns)
            shutil.rmtree(odir, ignore_errors=True)
        differ = ["%s %#x: %d, then %d" % (os.path.basename(k[0]), k[1], counts[0].get(k, 0), counts[1].get(k, 0))
                  for k in sorted(set(counts[0]) | set(counts[1])) if counts[0].get(k, 0) != counts[1].get(k, 0)]
        self.assertEqual(differ, [], "jq does not make the same calls in two runs of the same input: "
                                     "no comparison of two runs can hold (a random seed? see FIXED_SEED_C)")

    def from_file_args(self, run_dir):
        """FROM_FILE's arguments: its filter in a file, a second file to
        slurp, both written into run_dir."""
        prog, side = os.path.join(run_dir, "filter.jq"), os.path.join(run_dir, "side.json")
        with open(prog, "w") as f:
            f.write(FROM_FILE[1] + "\n")
        with open(side, "w") as f:
            f.write('{"k": "c"}\n')
        return ["-c", "--slurpfile", "side", side, "-f", prog, self.data]

    def check_fold(self, cc, jq):
        """The default mode (CGPROF_INLINED=fold: an inlined call's time and
        calls are its host's) on FROM_FILE, through test_fold's chain: its
        truth does not use cgprof's rule (the oracle says where each hook
        was called from, inlined_truth.py judges from the symbols and DWARF
        which of those places are inlined calls', the oracle run again
        leaving their hooks out gives the counts and arcs cgprof must show,
        with its hook calls taken back and without), every run from one
        working directory, the fixed seed preloaded first."""
        run_dir = tempfile.mkdtemp(prefix="%s-fold-" % cc, dir=self.tmp)
        v = test_fold.evaluate(test_fold.Variant("jq %s (%s)" % (FROM_FILE[0], cc), [jq] + self.from_file_args(run_dir),
                                                 False, cwd=run_dir, preload=[self.seed], oracle=self.nest))
        s = v.summary
        log("%-5s %-8s fold: %d sites, %d inlined; functions %s (%s wrong), arcs %s (%s wrong), calls %s "
            "(cgprof %s)" % (cc, FROM_FILE[0], len(v.verdicts), v.inlined, s.get("functions"),
                             s.get("functions_wrong"), s.get("arcs"), s.get("arcs_wrong"), s.get("calls_hooks"),
                             s.get("calls_cgprof")))
        self.assertEqual((v.error, v.truth_problems, v.problems), (None, [], []))

    def check_filter(self, cc, jq, name, filt):
        run_dir = tempfile.mkdtemp(prefix="%s-%s-" % (cc, name), dir=self.tmp)
        odir, cdir = os.path.join(run_dir, "oracle"), os.path.join(run_dir, "cgprof")
        os.makedirs(odir)
        os.makedirs(cdir)
        # without a preload: the expected output, and the time a run takes
        args = self.from_file_args(run_dir) if (name, filt) == FROM_FILE else [filt, self.data]
        status, plain, err, t_plain = run_jq(jq, args, run_dir, [self.seed])
        self.assertEqual(status, 0, err)
        # the oracle writes nest.<pid>.<tid> into CGNEST_OUT, cgprof
        # callgrind.out.<pid>-<thread> (and callgrind.total.<pid>) at
        # CGPROF_OUT: one directory each, so nesting.py finds one run; the
        # same working directory for all (see run_jq)
        status, out_o, err, t_oracle = run_jq(jq, args, run_dir, [self.seed, self.nest], {"CGNEST_OUT": odir})
        self.assertEqual(status, 0, "under the oracle: " + err)
        # CGPROF_INLINED=count: the oracle counts every hook call, the
        # inlined copies' too; the default (fold) gives an inlined call to
        # the function it was inlined into (test_fold checks that mode)
        status, out_c, err, t_cgprof = run_jq(jq, args, run_dir, [self.seed, cgtest.LIB],
                                              {"CGPROF_OUT": os.path.join(cdir, "callgrind.out"),
                                               "CGPROF_INLINED": "count"})
        self.assertEqual(status, 0, "under cgprof: " + err)
        self.assertTrue(out_o == out_c, "the outputs under the oracle and cgprof differ: "
                        + first_difference(out_o, out_c))
        self.assertTrue(out_c == plain, "the output under cgprof is not jq's alone: " + first_difference(out_c, plain))

        oracle, cg = nesting.load_pair(odir, cdir)
        # arcs are the truth only when every exit hook matched its enter;
        # otherwise the enters per function still are
        arcs = oracle.nests
        diffs = nesting.compare(oracle, cg, arcs=arcs)
        s = nesting.summary(oracle, cg)
        log("%-5s %-8s functions %d (%d wrong), arcs %d (%d wrong%s), calls %d (cgprof %d, %+d); "
            "wall: cgprof %.2f s, oracle %.2f s (cgprof/oracle %.2f), no preload %.2f s%s"
            % (cc, name, s["functions"], s["functions_wrong"], s["arcs"], s["arcs_wrong"],
               "" if arcs else ", not compared: the hooks do not nest", s["calls_hooks"], s["calls_cgprof"],
               s["calls_cgprof"] - s["calls_hooks"], t_cgprof, t_oracle, t_cgprof / t_oracle, t_plain,
               (", files in " + run_dir) if KEEP else ""))
        for w in cg.warnings:
            log("%s %s: cgprof says %s" % (cc, name, w))
        if not KEEP:
            shutil.rmtree(run_dir, ignore_errors=True)
        self.assertEqual(diffs, [], "%s, filter %s (%s): %d differences between cgprof and the oracle%s, "
                         "the first 30:\n%s" % (cc, name, filt, len(diffs), "" if arcs else " (function counts only)",
                                                "\n".join(diffs[:30])))


if __name__ == "__main__":
    # meson counts exit status 77 as a skip: a run with nothing to test
    # (no source, no network) shows as SKIP, not OK.
    result = unittest.main(verbosity=2, exit=False).result
    # (a skip in setUpClass is a skip that no test counts)
    if result.wasSuccessful() and result.skipped and len(result.skipped) >= result.testsRun:
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
