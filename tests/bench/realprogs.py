#!/usr/bin/env python3
"""What each way of profiling costs in CPU time, on real programs built by
their own build systems.

    python3 tests/bench/realprogs.py [--programs a,b] [--runs N] [--lib PATH]
                                     [--set NAME=VAR=VALUE,...]... [--json FILE]
    scripts/bench --real [the same options]

Each program is built, once and cached (test_realprog.py's cache:
$CGPROF_REALPROG_CACHE, default ~/.cache/cgprof-realprog; the Debian
sources fetched and built by tests/bench/realbuild.py, which
tests/bench/accuracy.py shares: its sqlite builds by gcc are these), by
its own build system with -O2 -g:

  plain   the flags alone
  instr   the same with -finstrument-functions
  floor   a copy of instr with every hook call made a nop and every tail
          jump to a hook a ret (tests/bench/floor.py): the floor no runtime
          can go below
  clang after-inlining (ninja, built by clang++): a second instrumented
          build with -finstrument-functions-after-inlining instead, and
          its floor

and run, the variants interleaved round-robin (the first of the round
moving by one each round, so that no variant always follows the same
other), --runs times each (default 5; the least reported, --stat):

  plain, floor
  empty hooks   the instrumented build with nothing preloaded: glibc's own
                empty __cyg_profile_func_enter/exit
  cgprof ...    build/runtime/libcgprof.so preloaded, with no CGPROF_*
                setting but CGPROF_OUT ("cgprof default"), then with each
                line of CGPROF_SETTINGS below, then each --set; with --lib,
                each of those again with that other library
  perf record -F 1000 -g   the plain build under perf, when `perf record
                true` works here
  clang after-inlining: floor, empty hooks, cgprof default and
                CGPROF_TIME=exact CGPROF_THROTTLE=off (ninja only)

What is measured is the CPU time of the program's process (user + sys,
from os.wait4's rusage: the program is this script's child, no shell
between), in an environment without CGPROF_* or LD_PRELOAD, stdout to a
file and compared with the plain build's (a variant whose output differs
stops the benchmark), cgprof's files in a directory removed after the run.
Under perf the program's own time is measured inside perf's run by
tests/bench/cputime.c (perf's own process is shown apart); the samples'
interrupts are in the program's sys time, as they are a cost of profiling
it. One unmeasured run of the plain build comes first (the reference
output; the files it reads in the page cache).

Per program, a table: CPU seconds (the least of the runs, --stat: on a
shared virtual machine interference only adds, and the same variant's
median moved 25% between two benchmarks; or their median), the spread of the runs
((max - min) / median), the ratio to plain and to the floor of the same
build, and for cgprof the calls the profile counted (the calls= lines of
its total file, callgrind.out.total.<pid>: hook call pairs that kept a
frame; folded, throttled or skipped calls are not in it) and the first
number of its "Hook calls taken back" line (call sites changed), and what
a counted call cost: ns/call = (the variant's CPU - the floor's) / those
calls (so a throttled run's few counted calls look dear: the figure is
meant for runs that count every call). Then the targets (issue 38), one
line each, PASS or MISS: the default mode <= 5 ns a counted call, every
call counted with exact time (TIME=exact INLINED=fold THROTTLE=off) <= 25
ns; the default mode <= 1.6x plain on sqlite, <= 2.0x on the others;
CGPROF_COLLECT=off (with fold) <= 1.05x the floor; the counting hooks
(STACKS=unwind, every call counted) <= 5 ns a counted call. A MISS does not change
the exit status; a run that fails or an output that differs does (1).

Programs (--programs, comma-separated; default all):
  sqlite    sqlite3 3.40.1 (Debian bookworm's source), gcc, the shell
            linked with the amalgamation; the SQL below on an in-memory
            database, on stdin
  ninja     ninja 1.11.1 (Debian bookworm's source), clang++, its own
            configure.py; `ninja -n` on a generated no-op build of 40,102
            edges over 10,000 sources in 100 directories (implicit inputs,
            order-only inputs, a depfile per compile in .ninja_deps), every
            output built once by ninja itself (in the cache), so up to date
  workload  tests/bench/workload.c built as scripts/bench's "inlined calls"
            build (-O2 -DBENCH_INLINE: its helpers inlined, their hooks
            kept), WORKLOAD_UNITS units

The numbers mean something only on a machine doing nothing else: the load
average is printed at the start and at the end. With 5 runs it takes about
10 minutes once built (the workload's cgprof default alone, 30-40 s a run);
the first run builds (about 5 minutes on 2 CPUs, at low priority) and makes
ninja's workload (40,102 commands, about a minute).
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from realbuild import (LIB, LUA_ROUNDS, RECIPE, ROOT, SQLITE_ARGS, SQLITE_SQL, build_env, build_lua,  # noqa: E402
                       build_sqlite, cached_build, debian_source, loadavg, nice_build, realprog, run)

BENCH = os.path.join(ROOT, "tests", "bench")

# The cgprof variants beyond the default: a line each, the settings besides
# CGPROF_OUT. The labels are made from them (label()).
# Each spelt out in full (the runtime's defaults changed once: sampled time,
# the throttle and the fold since issue 25; a row's label must say what ran
# whatever the defaults are).
CGPROF_SETTINGS = [
    # every call timed and counted: the default before issue 25
    {"CGPROF_TIME": "exact", "CGPROF_INLINED": "count", "CGPROF_THROTTLE": "off"},
    {"CGPROF_TIME": "exact", "CGPROF_INLINED": "fold", "CGPROF_THROTTLE": "off"},
    {"CGPROF_TIME": "exact", "CGPROF_INLINED": "fold", "CGPROF_THROTTLE": "10000:1000"},
    {"CGPROF_TIME": "sample", "CGPROF_INLINED": "fold", "CGPROF_THROTTLE": "off"},
    # the defaults, spelt out
    {"CGPROF_TIME": "sample", "CGPROF_INLINED": "fold", "CGPROF_THROTTLE": "10000:1000"},
    {"CGPROF_COLLECT": "off", "CGPROF_INLINED": "fold"},
    # the counting hooks (issue 38): every call counted, no shadow stack
    {"CGPROF_TIME": "sample", "CGPROF_INLINED": "fold", "CGPROF_STACKS": "unwind"},
]

# (what, the cgprof settings, against, the largest figure, the programs it
# is for or None for all). against: "plain" or "floor" (a ratio of CPU
# times), or "ns/call": (CPU - the floor's CPU) / the calls the profile
# counted, what one counted call costs in that program (issue 38).
EXACT_ALL = {"CGPROF_TIME": "exact", "CGPROF_INLINED": "fold", "CGPROF_THROTTLE": "off"}
TARGETS = [
    ("default mode", {}, "ns/call", 5.0, None),
    ("exact time", EXACT_ALL, "ns/call", 25.0, None),
    ("default mode", {}, "plain", 1.6, ("sqlite",)),
    ("default mode", {}, "plain", 2.0, ("lua", "ninja", "workload")),
    ("collection off", {"CGPROF_COLLECT": "off", "CGPROF_INLINED": "fold"}, "floor", 1.05, None),
    ("counting hooks", {"CGPROF_TIME": "sample", "CGPROF_INLINED": "fold", "CGPROF_STACKS": "unwind"}, "ns/call", 5.0,
     None),
]

PERF = ["perf", "record", "-F", "1000", "-g"]
PERF_LABEL = "perf record -F 1000 -g"
AI = "clang after-inlining"

# ninja's workload: 10,000 sources in 10 x 10 directories, each naming 6
# of 1,000 headers: 40,102 edges, about 0.3 s for the plain build's `ninja
# -n` here (5,000 sources took 0.15 s)
NINJA_SOURCES = 10000
NINJA_HEADERS = 1000
NINJA_HEADERS_PER_SOURCE = 6
NINJA_DIRS = [(a, b) for a in range(10) for b in range(10)]
# 4 per source (compile, preprocess, lint, index), a library per
# directory, the link and the generated stamp (ninja_manifest())
NINJA_EDGES = 4 * NINJA_SOURCES + len(NINJA_DIRS) + 2

# about 0.3 s for the plain build (25 us a unit here; 44,092 hook pairs a
# unit in the instrumented build)
WORKLOAD_UNITS = 12000


def say(msg=""):
    print(msg, flush=True)


def log(msg):
    print("realprogs: " + msg, file=sys.stderr, flush=True)


def clean_env(extra=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
    e["LC_ALL"] = "C"
    e.update(extra or {})
    return e


def label(settings):
    if not settings:
        return "cgprof default"
    return "cgprof " + " ".join("%s=%s" % (k[len("CGPROF_"):] if k.startswith("CGPROF_") else k, v)
                                for k, v in settings.items())


# ---- sources and builds ------------------------------------------------------------


class Program:
    """A program's builds ({tag: path}: plain, instr, and for clang ai), and
    its run: the arguments after the program, its stdin (a file or None),
    its working directory, and a pattern of output lines that change from
    run to run, left out of the comparison."""

    def __init__(self, name, what, exes, args, cwd, stdin=None, varying=None):
        self.name, self.what, self.exes, self.args = name, what, exes, args
        self.cwd, self.stdin, self.varying = cwd, stdin, varying


def prog_sqlite(tmp):
    exes, version = build_sqlite([("plain", ["-O2", "-g"]), ("instr", ["-O2", "-g", "-finstrument-functions"])])
    sql = os.path.join(tmp, "work.sql")
    with open(sql, "w") as f:
        f.write(SQLITE_SQL)
    return Program("sqlite", "sqlite3 %s (gcc), %d statements on :memory:, from stdin"
                   % (version, SQLITE_SQL.count(";")), exes, SQLITE_ARGS, tmp, stdin=sql)


def prog_lua(tmp):
    exes, version = build_lua([("plain", ["-g"]), ("instr", ["-g", "-finstrument-functions"])])
    script = os.path.join(BENCH, "work.lua")
    return Program("lua", "lua %s (gcc -O2, its own Makefile), tests/bench/work.lua %d rounds: calls, tables, "
                   "strings, closures, sorting" % (version, LUA_ROUNDS), exes, [script, str(LUA_ROUNDS)], tmp)


def prog_ninja(tmp):
    cache, src = debian_source("ninja-build")
    cxx = realprog().compiler_id("clang++")
    configure = [sys.executable, os.path.join(src, "configure.py")]
    exes = {}
    for tag, flags in (("plain", ["-O2", "-g"]), ("instr", ["-O2", "-g", "-finstrument-functions"]),
                       ("ai", ["-O2", "-g", "-finstrument-functions-after-inlining"])):
        # configure.py takes CXX and CFLAGS from the environment, CFLAGS on
        # the compile and link lines after its own (-O2 -g among them).
        # With a ninja at hand (meson's), configure.py and `ninja ninja`
        # build the program once; --bootstrap builds it twice.
        env = build_env(CXX="clang++", CFLAGS=" ".join(flags))
        steps = [(configure, env), (["ninja", "-j2", "ninja"], env)] if shutil.which("ninja") else \
            [(configure + ["--bootstrap"], env)]
        exes[tag] = cached_build(cache, tag, {"flags": flags, "cxx": cxx, "steps": [s[0][1:] for s in steps]},
                                 steps, "ninja")
    work = ninja_workload(cache, exes["plain"])
    what = "ninja %s (clang++), ninja -n on a no-op build of %s edges over %s sources" % (
        os.path.basename(src).split("_")[1], "{:,}".format(NINJA_EDGES), "{:,}".format(NINJA_SOURCES))
    return Program("ninja", what, exes, ["-C", work, "-n"], tmp)


def ninja_manifest():
    """build.ninja and the inputs it names ({path: content}) of the
    workload: per source a compile (with a depfile naming its headers, read
    into .ninja_deps), a preprocess (the same headers as implicit inputs),
    a lint (an order-only input) and an index; a library per directory, a
    link, a generated stamp every compile waits for."""
    files = {"gen/config.in": "config\n"}
    for h in range(NINJA_HEADERS):
        files["include/h%03d.h" % h] = "/* h%03d */\n" % h
    out = ["ninja_required_version = 1.3",
           "cflags = -O2 -Wall",
           "rule cc",
           # the source names its headers: the depfile says the output depends on them
           "  command = echo \"$out: $in $$(cat $in)\" > $out.d && touch $out",
           "  depfile = $out.d", "  deps = gcc", "  description = CC $out",
           "rule pp", "  command = touch $out", "  description = PP $out",
           "rule lint", "  command = touch $out",
           "rule index", "  command = touch $out",
           "rule ar", "  command = touch $out", "  description = AR $out",
           "rule link", "  command = touch $out", "  description = LINK $out",
           "rule gen", "  command = touch $out",
           "build out/gen/config.stamp: gen gen/config.in",
           ""]
    per_dir = NINJA_SOURCES // len(NINJA_DIRS)
    libs, tops = [], []
    i = 0
    for a, b in NINJA_DIRS:
        d = "m%d/s%d" % (a, b)
        objs = []
        for _ in range(per_dir):
            s = "src/%s/f%04d.c" % (d, i)
            o = "out/%s/f%04d" % (d, i)
            hdrs = " ".join("include/h%03d.h" % ((i * 7 + k * 131) % NINJA_HEADERS)
                            for k in range(NINJA_HEADERS_PER_SOURCE))
            files[s] = hdrs + "\n"
            out += ["build %s.o: cc %s || out/gen/config.stamp" % (o, s),
                    "  cflags = $cflags -Isrc/%s" % d,
                    "build %s.i: pp %s | %s" % (o, s, hdrs),
                    "build %s.lint: lint %s | %s.i || out/gen/config.stamp" % (o, s, o),
                    "build %s.idx: index %s.o | %s" % (o, o, hdrs.split()[0])]
            objs.append(o + ".o")
            tops += [o + ".lint", o + ".idx"]
            i += 1
        libs.append("out/%s/lib.a" % d)
        out.append("build %s: ar %s" % (libs[-1], " ".join(objs)))
    out += ["build out/app: link %s" % " ".join(libs),
            "build all: phony out/app %s" % " ".join(tops),
            "default all", ""]
    return "\n".join(out), files


def ninja_workload(cache, ninja):
    """The workload's directory, made once (in the cache): the manifest and
    its inputs written, then built by the plain ninja, so that every output
    is newer than its inputs and in .ninja_log, every compile's headers in
    .ninja_deps: `ninja -n` finds nothing to do, and reads, parses and
    stats all of it to find so."""
    d = os.path.join(cache, "work-%d-%d-%d-%d" % (RECIPE, NINJA_SOURCES, NINJA_HEADERS, NINJA_HEADERS_PER_SOURCE))
    if os.path.exists(d + ".ready"):
        # still up to date? (a copy of the cache, a touched file: the
        # outputs' times are what makes it a no-op)
        if "no work to do" in run([ninja, "-C", d, "-n"], env=clean_env()):
            return d
        log("ninja: the cached workload is not up to date: made again")
        os.unlink(d + ".ready")
    shutil.rmtree(d, ignore_errors=True)
    manifest, files = ninja_manifest()
    for path, content in files.items():
        p = os.path.join(d, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(content)
    with open(os.path.join(d, "build.ninja"), "w") as f:
        f.write(manifest)
    log("ninja: building the workload once ({:,} commands; cached)".format(NINJA_EDGES))
    t = time.perf_counter()
    nice_build([ninja, "-C", d, "-j2"], env=clean_env())
    out = run([ninja, "-C", d, "-n"], env=clean_env())
    if "no work to do" not in out:
        raise RuntimeError("ninja: the workload is not up to date after its build:\n" + out[-2000:])
    open(d + ".ready", "w").close()
    log("ninja: workload built in %.0f s" % (time.perf_counter() - t))
    return d


def prog_workload(tmp):
    src = os.path.join(BENCH, "workload.c")
    cc = ["gcc", "-O2", "-DBENCH_INLINE", "-g", "-fno-omit-frame-pointer"]  # scripts/bench's "O2i"
    exes = {}
    for tag, extra in (("plain", []), ("instr", ["-finstrument-functions"])):
        exes[tag] = os.path.join(tmp, "workload-" + tag)
        nice_build(cc + extra + ["-o", exes[tag], src, "-lpthread"])
    # "ms": the time of its work, different in every run
    return Program("workload", "tests/bench/workload.c -O2 -DBENCH_INLINE (gcc), %d units, 1 thread"
                   % WORKLOAD_UNITS, exes, [str(WORKLOAD_UNITS), "1"], tmp, varying=re.compile(rb"^ms "))


PROGRAMS = {"sqlite": prog_sqlite, "lua": prog_lua, "ninja": prog_ninja, "workload": prog_workload}


# ---- the variants and their runs ---------------------------------------------------


class Variant:
    """A way of running a program: its build (a key of the program's exes),
    the library preloaded (cgprof's, or None) with its settings, under perf
    or not. floor: the label of the floor of the same build (None for the
    plain build's variants)."""

    def __init__(self, label, build, floor, lib=None, settings=None, perf=False):
        self.label, self.build, self.floor = label, build, floor
        self.lib, self.settings, self.perf = lib, dict(settings or {}), perf


def variants(prog, lib2, extra, perf_ok):
    settings = [{}] + CGPROF_SETTINGS
    vs = [Variant("plain", "plain", None), Variant("floor", "instr-floor", "floor"),
          Variant("empty hooks", "instr", "floor")]
    vs += [Variant(label(s), "instr", "floor", LIB, s) for s in settings]
    vs += [Variant("cgprof " + name, "instr", "floor", LIB, s) for name, s in extra]
    if lib2:
        vs += [Variant("--lib " + label(s), "instr", "floor", lib2, s) for s in settings]
        vs += [Variant("--lib cgprof " + name, "instr", "floor", lib2, s) for name, s in extra]
    if perf_ok:
        vs.append(Variant(PERF_LABEL, "plain", None, perf=True))
    if "ai" in prog.exes:
        f = AI + ": floor"
        vs += [Variant(f, "ai-floor", f), Variant(AI + ": empty hooks", "ai", f),
               Variant(AI + ": cgprof default", "ai", f, LIB, {}),
               Variant(AI + ": cgprof TIME=exact THROTTLE=off", "ai", f, LIB,
                       {"CGPROF_TIME": "exact", "CGPROF_THROTTLE": "off"})]
    return vs


def perf_works():
    """None when `perf record` runs here, else why not."""
    if not shutil.which("perf"):
        return "perf is not installed (Debian: linux-perf)"
    d = tempfile.mkdtemp(prefix="cgprof-realprogs-perf-")
    try:
        p = subprocess.run(PERF + ["-o", os.path.join(d, "p.data"), "--", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=clean_env())
        if p.returncode:
            last = [line for line in p.stdout.splitlines() if line.strip()][-1:] or ["no output"]
            return "perf record true failed: " + last[0].strip()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return None


def spawn(argv, env, stdin, cwd, out, err):
    """Runs argv as our child: (exit status, user s, sys s), its own rusage
    (os.wait4), not a shell's around it."""
    with open(stdin or os.devnull, "rb") as i, open(out, "wb") as o, open(err, "wb") as e:
        p = subprocess.Popen(argv, stdin=i, stdout=o, stderr=e, env=env, cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it
    return p.returncode, ru.ru_utime, ru.ru_stime


TAKEN_BACK = re.compile(r"^desc: Hook calls taken back: (\d+)")


def profile_figures(prefix):
    """(calls, sites taken back) in the profile written at prefix: from its
    total file (all threads), else from its parts; None for what is not
    there (collection off records nothing; an older library may not say
    what it took back)."""
    files = glob.glob(prefix + ".total.*") or [f for f in glob.glob(prefix + ".*") if ".paths." not in f]
    if not files:
        return None, None
    calls, taken = 0, None
    for path in files:
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("calls="):
                    calls += int(line[6:].split()[0])
                elif line.startswith("desc: Hook"):
                    m = TAKEN_BACK.match(line)
                    if m:
                        taken = max(taken or 0, int(m.group(1)))  # per process: the same in every file
    return calls, taken


def normalized(path, varying):
    with open(path, "rb") as f:
        data = f.read()
    if varying:
        data = b"".join(line for line in data.splitlines(True) if not varying.match(line))
    return data


def run_variant(prog, v, tmp, cputime, said):
    """One run: {"user", "sys", "cpu"} seconds of the program, with
    "calls" and "taken" for cgprof, "perf_own" (perf's own process) under
    perf; and its normalised output."""
    argv = [prog.exes[v.build]] + prog.args
    env = clean_env()
    outdir = tempfile.mkdtemp(prefix="run-", dir=tmp)
    prefix = os.path.join(outdir, "callgrind.out")
    cpu_file = os.path.join(outdir, "cputime")
    if v.lib:
        env.update(v.settings)
        env["LD_PRELOAD"] = v.lib
        env["CGPROF_OUT"] = prefix
    if v.perf:
        argv = PERF + ["-o", os.path.join(outdir, "perf.data"), "--", cputime, cpu_file] + argv
    out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
    status, user, sys_ = spawn(argv, env, prog.stdin, prog.cwd, out, err)
    with open(err, errors="replace") as f:
        stderr = f.read()
    if status:
        raise SystemExit("realprogs: %s, %s: %s exited with %d:\n%s" % (prog.name, v.label, " ".join(argv), status,
                                                                         stderr[-3000:]))
    r = {"user": user, "sys": sys_}
    if v.perf:
        # the program's own time, measured inside perf's run; the rest of
        # the whole is perf's (and cputime's fork and wait: nothing)
        with open(cpu_file) as f:
            u, s = (int(x) / 1e6 for x in f.read().split())
        r = {"user": u, "sys": s, "perf_own": user + sys_ - u - s}
    r["cpu"] = r["user"] + r["sys"]
    if v.lib:
        r["calls"], r["taken"] = profile_figures(prefix)
    for line in stderr.splitlines():  # cgprof's notes (throttled functions...), once per variant
        if line.startswith("cgprof") and (v.label, line[:80]) not in said:
            said.add((v.label, line[:80]))
            log("%s, %s: %s" % (prog.name, v.label, line if len(line) < 300 else line[:300] + "..."))
    shutil.rmtree(outdir, ignore_errors=True)
    return r, normalized(out, prog.varying)


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    n = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
    pick = lambda lines: lines[n].decode(errors="replace") if n < len(lines) else "(end of output)"  # noqa: E731
    return "line %d: %r against the plain build's %r" % (n + 1, pick(la), pick(lb))


def measure(prog, vs, runs, tmp, cputime):
    said = set()
    # unmeasured: the reference output, and the inputs in the page cache
    _, ref = run_variant(prog, vs[0], tmp, cputime, said)
    res = {v.label: [] for v in vs}
    w = max(len(v.label) for v in vs)
    for r in range(runs):
        k = r % len(vs)
        for v in vs[k:] + vs[:k]:
            got, out = run_variant(prog, v, tmp, cputime, said)
            if out != ref:
                raise SystemExit("realprogs: %s: the output of %s differs from the plain build's, %s"
                                 % (prog.name, v.label, first_difference(out, ref)))
            res[v.label].append(got)
            log("%s: run %d/%d: %-*s %7.3f s" % (prog.name, r + 1, runs, w, v.label, got["cpu"]))
    return res


def median(rows, key):
    xs = [x[key] for x in rows if x.get(key) is not None]
    return statistics.median(xs) if xs else None


def least(rows, key):
    xs = [x[key] for x in rows if x.get(key) is not None]
    return min(xs) if xs else None


# What the ratios are taken from (--stat): the least of the runs by
# default. On a shared virtual machine what slows a run down comes from
# outside (the plain build's runs spread over 40%, the same variant's
# medians 25% apart from one benchmark to the next), and it only ever adds:
# the least run is the one closest to the program's own cost.
STAT = {"least": least, "median": median}
stat_name = "least"


def table(prog, vs, res):
    med = {v.label: STAT[stat_name](res[v.label], "cpu") for v in vs}
    plain = med["plain"]
    say("")
    say("%s: %s" % (prog.name, prog.what))
    w = max(len(v.label) for v in vs)
    head = "  %-*s %8s %7s %8s %8s %13s %9s %10s" % (w, "", "CPU s", "spread", "x plain", "x floor", "calls",
                                                     "ns/call", "taken back")
    say(head)
    say("  " + "-" * (len(head) - 2))
    for v in vs:
        rows = res[v.label]
        cpus = [x["cpu"] for x in rows]
        m = med[v.label]
        spread = "%6.1f%%" % (100.0 * (max(cpus) - min(cpus)) / m) if len(cpus) > 1 and m else "%7s" % "-"
        floor = "%7.2fx" % (m / med[v.floor]) if v.floor and med.get(v.floor) else "%8s" % "-"
        calls, taken = median(rows, "calls"), median(rows, "taken")
        pc = per_call(med, v, calls)
        say("  %-*s %8.3f %s %7.2fx %s %13s %9s %10s" % (w, v.label, m, spread, m / plain, floor,
                                                        "{:,}".format(int(calls)) if calls is not None else "-",
                                                        "%.1f" % pc if pc is not None else "-",
                                                        "{:,}".format(int(taken)) if taken is not None else "-"))
    for v in vs:
        if v.perf:
            say("  %s: the program's CPU time (measured inside perf's run by tests/bench/cputime.c); perf's own "
                "process took %.3f s more (median)" % (v.label, median(res[v.label], "perf_own")))
    return med


def per_call(med, v, calls):
    """What a counted call costs in ns: (the variant's CPU - its floor's) /
    the calls its profile counted; None without a floor or calls."""
    if not v.floor or not calls or med.get(v.floor) is None:
        return None
    return (med[v.label] - med[v.floor]) * 1e9 / calls


def targets(prog, vs, med, res):
    """The targets' lines for prog: (what, label, figure, limit, against, PASS/MISS)."""
    out = []
    by_label = {v.label: v for v in vs}
    for what, settings, against, limit, progs in TARGETS:
        if progs is not None and prog.name not in progs:
            continue
        lab = label(settings)
        v = by_label.get(lab)
        if v is None:
            out.append((what, lab, None, limit, against, "not run"))
            continue
        if against == "ns/call":
            fig = per_call(med, v, median(res[lab], "calls"))
            if fig is None:
                out.append((what, lab, None, limit, against, "not run"))
                continue
        else:
            fig = med[lab] / med[v.floor if against == "floor" else "plain"]
        out.append((what, lab, fig, limit, against, "PASS" if fig <= limit else "MISS"))
    return out


def parse_set(s):
    """NAME=VAR=VALUE,VAR=VALUE,... -> (NAME, {VAR: VALUE})."""
    name, sep, rest = s.partition("=")
    settings = {}
    for kv in rest.split(",") if sep else []:
        k, sep2, val = kv.partition("=")
        if not sep2 or not k.startswith("CGPROF_"):
            raise ValueError(kv)
        settings[k] = val
    if not name or not settings:
        raise ValueError(s)
    return name, settings


def machine():
    try:
        cpu = open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].splitlines()[0].strip()
    except (OSError, IndexError):
        cpu = platform.processor() or "?"
    return {"host": platform.node(), "nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated, of: " + ", ".join(PROGRAMS))
    ap.add_argument("--runs", type=int, default=5, help="runs of each variant, interleaved (default 5)")
    ap.add_argument("--stat", choices=sorted(STAT), default="least",
                    help="the runs' figure the table and the ratios use: least (default) or median")
    ap.add_argument("--lib", metavar="PATH", help="another libcgprof.so: every cgprof variant run with it too")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VAR=VALUE,...",
                    help="a cgprof variant more, 'cgprof NAME', with these settings (repeatable)")
    ap.add_argument("--json", metavar="FILE", help="write the raw numbers (every run) to FILE")
    args = ap.parse_args(argv)
    names = [n for n in args.programs.split(",") if n]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        ap.error("unknown program %s (known: %s)" % (", ".join(unknown), ", ".join(PROGRAMS)))
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    global stat_name
    stat_name = args.stat
    extra = []
    for s in args.set:
        try:
            extra.append(parse_set(s))
        except ValueError as e:
            ap.error("--set %s: expected NAME=CGPROF_VAR=VALUE[,CGPROF_VAR=VALUE...] (at %s)" % (s, e))
    taken = {label(x) for x in [{}] + CGPROF_SETTINGS}
    for name, _ in extra:
        if "cgprof " + name in taken:
            ap.error("--set %s: the name of another variant" % name)
        taken.add("cgprof " + name)
    lib2 = os.path.abspath(args.lib) if args.lib else None
    for lib in [LIB] + ([lib2] if lib2 else []):
        if not os.path.isfile(lib):
            ap.error("%s is not built (meson setup build && ninja -C build)" % lib)
    why_no_perf = perf_works()
    mach = machine()
    start = loadavg()
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    say("cgprof on real programs: CPU time (user + sys) of each variant, the %s of %d run%s, interleaved"
        % ("least" if stat_name == "least" else "median", args.runs, "s" if args.runs > 1 else ""))
    say("%s; %s, %d CPUs (nproc), %s, kernel %s" % (date, mach["host"], mach["nproc"], mach["cpu"],
                                                   mach["kernel"]))
    say("library: %s%s" % (LIB, "; --lib " + lib2 if lib2 else ""))
    say("load average at start: %s" % start)
    for name, settings in extra:
        say("--set %s: cgprof %s" % (name, " ".join("%s=%s" % kv for kv in settings.items())))
    if why_no_perf:
        say("(no perf variant: %s)" % why_no_perf)
    tmp = tempfile.mkdtemp(prefix="cgprof-realprogs-")
    results = {}
    try:
        cputime = os.path.join(tmp, "cputime")
        nice_build(["gcc", "-O2", "-o", cputime, os.path.join(BENCH, "cputime.c")])
        summary = []
        for n in names:
            ptmp = os.path.join(tmp, n)
            os.makedirs(ptmp)
            try:
                prog = PROGRAMS[n](ptmp)
            except Exception as e:  # a source that cannot be fetched: said, the others go on
                if type(e).__name__ == "SkipTest":
                    say("\n%s: skipped: %s" % (n, e))
                    continue
                raise
            # the floors, made from this run's instrumented builds by this
            # checkout's floor.py
            for tag in [t for t in ("instr", "ai") if t in prog.exes]:
                floor = os.path.join(ptmp, "%s-%s.floor" % (n, tag))
                sites = run([sys.executable, os.path.join(BENCH, "floor.py"), prog.exes[tag], floor]).strip()
                log("%s: the floor of %s: %s hook call sites made nops or rets" % (n, tag, sites))
                prog.exes[tag + "-floor"] = floor
            vs = variants(prog, lib2, extra, why_no_perf is None)
            res = measure(prog, vs, args.runs, ptmp, cputime)
            med = table(prog, vs, res)
            tl = targets(prog, vs, med, res)
            summary += [(n,) + t for t in tl]
            results[n] = {"what": prog.what, "binaries": prog.exes,
                          "variants": {v.label: {"build": v.build, "lib": v.lib, "settings": v.settings,
                                                 "perf": v.perf, "floor": v.floor, "runs": res[v.label],
                                                 "median_cpu": med[v.label]} for v in vs},
                          "targets": [dict(zip(("what", "variant", "ratio", "limit", "against", "result"), t))
                                      for t in tl]}
            shutil.rmtree(ptmp, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say("")
    say("targets")
    for n, what, lab, ratio, limit, against, result in summary:
        if ratio is None:
            say("  %-8s %-14s %s: not run" % (n, what, lab))
        elif against == "ns/call":
            say("  %-8s %-14s %-4s %5.1f ns a counted call (target <= %.0f ns)  %s"
                % (n, what, result, ratio, limit, lab))
        else:
            say("  %-8s %-14s %-4s %5.2fx %-5s (target <= %.2fx)  %s"
                % (n, what, result, ratio, against, limit, lab))
    end = loadavg()
    say("load average at end: %s (%d CPUs)" % (end, mach["nproc"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": date, "machine": mach, "loadavg_start": start, "loadavg_end": end,
                       "runs": args.runs, "lib": LIB, "lib2": lib2, "perf": why_no_perf or "yes",
                       "programs": results}, f, indent=1)
    return 0  # a MISS is a finding, not a failure: only a wrong output or a failed run stops it


if __name__ == "__main__":
    sys.exit(main())
