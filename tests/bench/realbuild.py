"""The benchmarks' real programs: Debian bookworm's sources, fetched once
and built by their own build systems, each build cached; shared by
tests/bench/realprogs.py (what profiling costs) and tests/bench/accuracy.py
(how close cgprof's times are to perf's), so that both measure the same
builds of the same programs.

The cache is tests/integration/test_realprog.py's ($CGPROF_REALPROG_CACHE,
default ~/.cache/cgprof-realprog): one directory per package, with its
download, its unpacked source and one build-<tag> directory per build. A
build is redone only when its recipe (the flags, the compiler's path and
version, the configure line) changes, or RECIPE is bumped.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
LIB = os.path.join(BUILD, "runtime", "libcgprof.so")
# the package as the build has it (its generated modules, _shared.py among
# them), before the source tree's copy, which lacks them
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

# Bumped when a build's recipe changes, so that cached builds are redone.
RECIPE = 1


def log(msg):
    # named after the benchmark that runs (realprogs, accuracy)
    name = os.path.splitext(os.path.basename(sys.argv[0] or "bench"))[0]
    print("%s: %s" % (name, msg), file=sys.stderr, flush=True)


def run(argv, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if p.returncode:
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(argv), p.returncode, p.stdout[-3000:]))
    return p.stdout


def nice_build(argv, **kw):
    """A compile at low priority: the machine is shared."""
    return run(["nice", "-n", "10"] + argv, **kw)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def realprog():
    """tests/integration/test_realprog.py, its builds made at low priority."""
    import test_realprog as trp
    if not getattr(trp, "_acc_nice", False):
        orig = trp.sh

        def sh(argv, cwd=None, timeout=1200, env=None):
            if argv and (argv[0] in ("make", "autoreconf") or argv[0].endswith("/configure")):
                argv = ["nice", "-n", "10"] + argv
            return orig(argv, cwd=cwd, timeout=timeout, env=env)
        trp.sh = sh
        trp._acc_nice = True
    return trp


def apt_source(trp, package, directory):
    """package's bookworm source, fetched with test_realprog's private apt
    configuration (its lists, already updated by it, or updated here)."""
    dscs = [d for d in glob.glob(os.path.join(directory, package + "_*.dsc")) if trp.dsc_complete(d)]
    if dscs:
        return max(dscs, key=os.path.getmtime)
    return trp.apt_download(directory, package)


def debian_source(package):
    """package's bookworm source, fetched once with test_realprog's private
    apt configuration and unpacked with Debian's patches: (its cache
    directory, the unpacked source)."""
    trp = realprog()
    cache = os.path.join(trp.CACHE, package)
    os.makedirs(os.path.join(cache, "download"), exist_ok=True)
    dsc = apt_source(trp, package, os.path.join(cache, "download"))
    src = os.path.join(cache, "src", os.path.basename(dsc)[:-len(".dsc")])
    if not os.path.exists(os.path.join(src, ".ready")):
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(os.path.dirname(src), exist_ok=True)
        trp.unpack_dsc(dsc, src)
        open(os.path.join(src, ".ready"), "w").close()
    return cache, src


def source_version(src):
    """The upstream version in an unpacked source's name (sqlite3_3.40.1-2+deb12u2: 3.40.1-2+deb12u2)."""
    return os.path.basename(src).split("_", 1)[1]


def cached_build(cache, tag, recipe, steps, exe):
    """The build in cache/build-<tag>, made by steps ((argv, env) run there
    at low priority) unless the one there was made by the same recipe
    (the flags, the compiler's path and version). Returns the path of exe
    in it."""
    bdir = os.path.join(cache, "build-" + tag)
    path = os.path.join(bdir, exe)
    stamp = os.path.join(bdir, "recipe.json")
    key = json.dumps([RECIPE, recipe], sort_keys=True)
    if os.path.isfile(path) and os.path.isfile(stamp) and open(stamp).read() == key:
        return path
    shutil.rmtree(bdir, ignore_errors=True)
    os.makedirs(bdir)
    log("%s: building (%s; cached after the first run)" % (os.path.basename(cache) + "/build-" + tag,
                                                          " ".join(recipe["flags"])))
    t = time.perf_counter()
    for argv, env in steps:
        nice_build(argv, cwd=bdir, env=env)
    with open(path, "rb") as f:
        # a program, not a wrapper script around one (libtool's)
        if f.read(4) != b"\x7fELF":
            raise RuntimeError("%s is not an ELF program" % path)
    with open(stamp, "w") as f:
        f.write(key)
    log("%s/build-%s: %.0f s" % (os.path.basename(cache), tag, time.perf_counter() - t))
    return path


def build_env(**extra):
    e = realprog().clean_env(**extra)
    for k in ("CXX", "CXXFLAGS", "AR"):  # what ninja's configure.py reads, but ours
        if k not in extra:
            e.pop(k, None)
    return e


def ensure_tool(tool, package):
    if not shutil.which(tool):
        why = realprog().install_packages([package])
        if not shutil.which(tool):
            raise RuntimeError("%s is needed (Debian: %s) and could not be installed: %s"
                               % (tool, package, why or "apt-get install failed"))


# ---- SQLite ------------------------------------------------------------------------

# The workload: an in-memory database, the SQL on the shell's stdin. The
# plain build runs it in about 0.5 s.
SQLITE_SQL = """\
PRAGMA journal_mode=OFF;
PRAGMA synchronous=OFF;
CREATE TABLE t(a INTEGER PRIMARY KEY, b INTEGER, c TEXT, d REAL);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<200000)
INSERT INTO t SELECT i, (i*7919)%10007, printf('name-%d-%x', i, i*31), i*0.5 FROM s;
CREATE INDEX tb ON t(b);
CREATE TABLE u(x INTEGER PRIMARY KEY, y TEXT);
INSERT INTO u SELECT b, max(c) FROM t GROUP BY b;
SELECT count(*), sum(d), avg(b) FROM t WHERE b BETWEEN 100 AND 5000;
SELECT b, count(*) AS n FROM t GROUP BY b ORDER BY n DESC, b LIMIT 5;
SELECT count(*) FROM t JOIN u ON t.b = u.x WHERE u.y LIKE 'name-1%';
UPDATE t SET d = d * 2 WHERE a % 3 = 0;
SELECT sum(d) FROM t;
SELECT substr(c, 1, 8), length(c) FROM t ORDER BY c DESC LIMIT 3;
DELETE FROM t WHERE b < 1000;
SELECT count(*) FROM t;
"""
SQLITE_ARGS = [":memory:"]

# --disable-shared: Debian's patch (32-dynamic_link) links the shell with
# libsqlite3.la, which would make ./sqlite3 libtool's wrapper script (a
# shell that would be measured and preloaded too) in front of a program
# using libsqlite3.so; static, the shell is one program with the library in
# it, as upstream builds it.
SQLITE_CONFIGURE = ["--disable-tcl", "--disable-readline", "--disable-shared"]


def build_sqlite(builds, cc="gcc"):
    """sqlite3 (the shell linked with the amalgamation) built by cc with
    its own configure and make, once per (tag, flags) of builds, in
    sqlite3/build-<tag> (build-<cc>-<tag> for a compiler other than gcc:
    gcc's tags are realprogs.py's). Returns ({tag: the program}, the
    source's version)."""
    cache, src = debian_source("sqlite3")
    # the amalgamation (sqlite3.c) is generated by a Tcl script
    ensure_tool("tclsh", "tcl")
    ensure_tool("make", "make")
    if cc != "gcc":
        ensure_tool(cc, cc)
    ccid = realprog().compiler_id(cc)
    exes = {}
    for tag, flags in builds:
        flags = list(flags)
        configure = [os.path.join(src, "configure")] + SQLITE_CONFIGURE + ["CC=" + cc, "CFLAGS=" + " ".join(flags)]
        exes[tag] = cached_build(cache, tag if cc == "gcc" else "%s-%s" % (cc, tag),
                                 {"flags": flags, "cc": ccid, "configure": configure},
                                 [(configure, build_env()), (["make", "-j2", "sqlite3"], build_env())], "sqlite3")
    return exes, source_version(src)


# ---- Lua ---------------------------------------------------------------------------

# tests/bench/work.lua's rounds: about half a second of the plain build's CPU
LUA_ROUNDS = 6


def upstream_source(package):
    """package's bookworm orig tarball, unpacked without Debian's patches:
    (its cache directory, the unpacked source). For a program whose Debian
    patches replace its own build system (lua5.4's builds a shared library
    with libtool, and the interpreter is then libtool's wrapper script)."""
    trp = realprog()
    cache = os.path.join(trp.CACHE, package)
    os.makedirs(os.path.join(cache, "download"), exist_ok=True)
    dsc = apt_source(trp, package, os.path.join(cache, "download"))
    (orig,) = [n for n in trp.dsc_files(dsc) if ".orig.tar." in n]
    src = os.path.join(cache, "src", orig.split(".orig.tar.")[0] + "-upstream")
    if not os.path.exists(os.path.join(src, ".ready")):
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(os.path.dirname(src), exist_ok=True)
        trp.unpack_tarball(os.path.join(os.path.dirname(dsc), orig), src)
        open(os.path.join(src, ".ready"), "w").close()
    return cache, src


def build_lua(builds):
    """The Lua 5.4 interpreter (src/lua, the library linked in statically),
    built by upstream's own Makefile (`make linux`, its -O2 kept, the extra
    flags in MYCFLAGS) once per (tag, flags) of builds, in
    lua5.4/build-<tag>. Returns ({tag: the program}, the source's version)."""
    cache, src = upstream_source("lua5.4")
    ensure_tool("make", "make")
    ccid = realprog().compiler_id("gcc")
    exes = {}
    for tag, flags in builds:
        flags = list(flags)
        # the Makefile builds in its source tree: a copy per build
        steps = [(["cp", "-a", src + "/.", "."], build_env()),
                 (["make", "-j2", "linux", "MYCFLAGS=" + " ".join(flags)], build_env())]
        exes[tag] = cached_build(cache, tag, {"flags": flags, "cc": ccid, "make": "linux MYCFLAGS"}, steps,
                                 os.path.join("src", "lua"))
    return exes, source_version(src.replace("-upstream", ""))
