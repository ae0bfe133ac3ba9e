#!/usr/bin/env python3
"""cgprof's accuracy benchmark: cgprof's times against a sampling profiler's.

    python3 tests/bench/accuracy.py [--build o2|noinline] [--programs a,b] [--runs N] [--quick]
                                    [-F HZ] [--seconds S] [--time exact|sample|both] [--no-floor]
                                    [--call-graph dwarf|fp] [--cgprof-env VAR=VALUE]...
    scripts/bench --accuracy [the same options]

The question: are cgprof's times the program's? Each program is profiled
by perf (`perf record -e cpu-clock -F 4999 --call-graph dwarf`: a software
event, which works in a virtual machine; DWARF unwinding, since libc has no
frame pointers) and by cgprof (libcgprof.so preloaded), and the two
profiles' self-time shares per function are compared by their total
variation distance (TVD): half the sum over the functions of |share A -
share B|, in percentage points (0: the same profile; 100: nothing in
common). When perf cannot sample here (not installed, no permission, no
kernel support), it says so and exits 0.

Two ways of building the programs (--build):

  o2        (the default) as users build: -O2 -g, the compiler inlining
            and making sibling calls as it decides (frame pointers are not
            needed by DWARF unwinding; --call-graph fp adds
            -fno-omit-frame-pointer). Each program is built plain, with
            -finstrument-functions, and, for the programs built by clang,
            with -finstrument-functions-after-inlining; each instrumented
            build has its floor. What it measures is issue 25's accuracy
            target: cgprof's default mode within 5 points of perf on the
            floor, and so within 5 points of perf on the plain build
            wherever the floor is (clang after inlining).
  noinline  the former benchmark: -O2 -g -fno-omit-frame-pointer
            -fno-inline -fno-optimize-sibling-calls for both builds (FLAGS
            below), so that every call of the source is a real frame in
            both and no inlining question arises; cgprof on the
            instrumented build against perf on the plain one, and a floor
            made differently (below).

--build o2
----------

The floor of an instrumented build is the same binary with every hook call
jumped over (tests/bench/floor.py: each call of a hook made a nop, each
tail jump to the exit hook a ret), run without cgprof: the program as if
cgprof had taken back every hook call (docs/internals/takeback.md), which no runtime
can beat. Its code is the instrumented build's: what the instrumentation
changed is in it, cgprof's own cost and accounting are not. It changes
much before inlining (gcc, clang's -finstrument-functions): every
function's address is passed to its enter hook, so a static function
called once, which the plain build inlines, keeps code of its own
(examples/basic.c's crunch, SQLite's pcache1FetchNoMutex), and what the
plain build's optimiser made of a recursion may be out of reach (the
workload by clang); the calls before an exit hook are no longer tail calls.
Per instrumented build, side by side, the TVDs of the self-time shares:

  perf/perf      perf on the plain build, run 1 against run 2: the error
                 bar, what sampling noise and run-to-run variation alone
                 give (and the floor's own, perf on the floor run 1
                 against run 2)
  floor/plain    perf on the floor against perf on the plain build: what
                 the instrumentation itself changes, which no runtime can
                 undo (with clang after inlining, the hooks go in after
                 the inlining: this one is expected to be small)
  cgprof/floor   cgprof on the instrumented build against perf on its
                 floor: what cgprof adds. The target: <= 5 points for the
                 default mode.
  cgprof/plain   cgprof against perf on the plain build: what a user
                 sees; at most floor/plain + cgprof/floor (a distance)

for each cgprof setting: the runtime's default (no CGPROF_* set but those
below), CGPROF_TIME=exact and CGPROF_TIME=sample (--time picks one), each
of them as is, with CGPROF_THROTTLE=10000:1000 and with
CGPROF_THROTTLE=off. A setting given with --cgprof-env is added to every
run; given for CGPROF_TIME or CGPROF_THROTTLE, it replaces that axis. Each
setting's line says how the runtime ran (the clock and the throttle its
files name), since the defaults change. Then per program the largest
differences (default mode against the floor, floor against plain), a
summary table of every TVD, and the targets: a line per program and
instrumented build, PASS or MISS for the default mode's cgprof/floor <= 5
points (a MISS does not change the exit status). The inclusive shares'
TVDs (the reference's top 10 functions, as --build noinline prints them)
are printed too, in a line per build.

Like compared with like:
  - time: perf's cpu-clock counts time on the CPU; cgprof runs with
    CGPROF_OFF_CPU=1 (in exact time, the time off the CPU is shown apart
    and left out here, its share printed; sampled time samples the
    thread's CPU time already) and, with sampled time, at perf's frequency
    (CGPROF_SAMPLE_HZ=-F, set in every run: the runtime reads it only in
    sampled time, which may be its default). The header's Clock line,
    shown in "ran as", says whether cgprof counted system time, as perf's
    cpu-clock does (its default ring buffer, where the kernel allows it)
    or user time only (the perf_event signals' timer).
  - inlined code: cgprof's default (CGPROF_INLINED=fold) folds an inlined
    call into its host, its time the host's; perf's samples are named by
    the symbol their address is in, as perf report's Symbol column names
    them (perf script --no-inline: perf 6.1's perf script otherwise adds
    the inlined frames it finds in the line tables), which is the host's
    for inlined code. Both sides thus count an inlined function's time in
    its host.
  - the set of functions compared is the program's functions that have
    code of their own in the instrumented build's objects (a symbol; its
    clones and split parts, fn.constprop.0, fn.cold, merged under its name)
    and whose code calls the enter hook: those cgprof can give a frame. A
    function only inlined has no symbol and is not in it; a sample in code
    of the program outside it (a function that the plain build kept and
    the instrumented build inlined everywhere, a part split off whose head
    was inlined, code excluded from instrumentation) is charged to the
    innermost function of the set in its chain, as cgprof charges code
    without a frame to the frame it runs under. The set is per
    instrumented build (clang's two differ), and the floor has its build's
    symbols.
  - time in code that is not the program's (libc, the kernel) is charged
    to the innermost function of the set in the sample's chain, as cgprof
    charges it to its caller; samples without one (the dynamic loader,
    before main, the shell that repeats a run) are dropped and counted.

--build noinline
----------------

Both profiles are reduced to the program's instrumented functions (those
of its own objects whose code calls __cyg_profile_func_enter in the
instrumented build), a perf sample charged to the innermost such function
of its call chain, as cgprof charges the time spent in uninstrumented code
(libc, zlib) to its caller's self time; samples without one are dropped
and counted, and among them those whose chain perf unwound only part way
(it does not end where a process or a thread starts: they were the
program's, perf lost their frames; with jq, in libc's malloc in some runs
and not in others). perf names inlined frames (--inline): a function
inlined in spite of -fno-inline (always_inline) keeps its hooks, and cgprof
shows it apart.

cgprof runs with each clock (--time, default both): CGPROF_TIME=exact
(every call timed) and CGPROF_TIME=sample (calls counted, the thread's CPU
time sampled, at perf's frequency: CGPROF_SAMPLE_HZ=-F); with the launcher
listing --compensate, each with CGPROF_COMPENSATE=1 ("comp": in exact time
the calibrated cost of the hooks subtracted per call, in sampled time the
samples that land in the hooks left out) and =0 ("raw"), all TVDs printed
side by side.

Per program it prints: the samples, the TVD of the self-time shares; the 5
functions whose shares differ most; and the TVD of the inclusive shares of
the 10 functions with the most inclusive time under perf (perf: the
fraction of samples whose chain holds the function, once per sample;
cgprof: the self time of every call path through the function, from the
path files, the time off the CPU left out, over the same total), the same
half sum over those 10 (inclusive shares do not add up to 100: this one
can exceed 100). The error bar: the same TVDs between two perf runs of the
plain build (and between two cgprof runs).

The floor (per clock; --no-floor leaves it out): perf on the instrumented
build running under cgprof with the same settings, its samples in cgprof's
hooks (libcgprof.so, the hooks' PLT entries) left out, the rest charged as
perf's are. That is where the program's own instructions spent their time
with the hooks between them: the hooks change how the code around them
runs (a store that fed the next call's load has long retired when the
next call comes), so no accounting of cgprof's can come closer to perf on
the plain build than the floor, but by guessing those effects.

Both modes
----------

cgprof always runs with CGPROF_OFF_CPU=1 and CGPROF_PATHS=1 (and what
--cgprof-env adds or overrides; --cgprof-env CGPROF_OFF_CPU=0 compares
wall time): its self time per function is read from the path files, a
path's self time charged to its innermost function of the set (the time
sampled in libc's malloc, shown as malloc's called from jv_mem_alloc, is
jv_mem_alloc's, as perf's sample there is), summed over all threads' and
processes' files; its time in no function of the set is left out and its
share printed ("outside").

A run of each program is repeated (in one perf record, as many times under
cgprof; at most 300 times) until the plain build has run about --seconds
(default 1 s, --quick 0.3: about 5,000 samples at 4999 Hz, a share's
standard error at most 0.7 points), --runs times (default 2: the error bars
compare run 1 with run 2; the figures pool all runs). The examples threads
and cxx run for 2 ms, mostly the dynamic loader's start-up: they give few
samples in the program's own functions (cxx: a handful), and their figures
are mostly noise.

Programs (--programs, comma-separated; default all; built by gcc but the
-clang ones):
  workload  tests/bench/workload.c, 1 thread (scripts/bench's; with
            --build o2, -DBENCH_INLINE: its helpers may be inlined)
  workload2 the same, 2 threads
  workload-clang  the workload, 1 thread, built by clang
  basic     examples/basic.c (fib 30, a call tree, qsort, a loop)
  threads   examples/threads.c (4 worker threads), repeated
  cxx       examples/cxx.cpp, repeated
  jq        jq 1.6 (Debian's source, tests/integration/test_realprog.py's
            cache and recipe), five filters on 5 MB of JSON
  xz        xz-utils 5.4.1 (Debian's source, fetched the same way), -T2
            (two compressing threads) -3 on 6 MB of text
  sqlite    sqlite3 3.40.1 (Debian's source), built as
            tests/bench/realprogs.py builds it (tests/bench/realbuild.py,
            the same cache: its own configure and make, the shell linked
            with the amalgamation); realprogs.py's SQL on an in-memory
            database, on stdin
  sqlite-clang  the same built by clang
  syscalls  tests/bench/syscalls.c: three quarters of its CPU time in
            system calls (write into the page cache, getrandom, a pipe,
            fdatasync), each libc wrapper called from one function of its
            own. Its own target line: each function that makes the calls
            within 3 points of perf's self share for it (issue 40). perf
            6.1's DWARF unwinding stops in the libc wrapper in 10 to 60%
            of its samples in the kernel here (the share changes from run
            to run): such a sample is charged to the wrapper's one caller,
            and their number is printed.

The builds of the Debian sources are cached (tests/bench/realbuild.py); the
first run builds them, at low priority (SQLite: a minute or two a build on
2 CPUs). The runs under cgprof repeat the plain build's work, whatever they
cost: with --build o2, workload-clang's -finstrument-functions build, whose
plain build inlines fib's recursion and whose instrumented one cannot, ran
its floor about 10 times as long as the plain build and cgprof's exact
time a few hundred times (short runs here, not measurements): with the
defaults, expect an hour or more for it alone, minutes for each of the
others. The figures mean something only on a machine doing little else:
the load average is printed at the start and at the end.
"""
import argparse
import collections
import glob
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the builds of the Debian sources, shared with realprogs.py (realbuild
# also puts the build's and the source's python directories on the path)
from realbuild import (BUILD, LIB, ROOT, SQLITE_ARGS, SQLITE_SQL, build_env, build_sqlite,  # noqa: E402
                       cached_build, debian_source, loadavg, nice_build, realprog, run, source_version)

BENCH = os.path.join(ROOT, "tests", "bench")

# The flags of both builds of every program (C++ adds the exclusion of
# libstdc++'s headers from instrumentation, as examples/meson.build does).
# noinline: -fno-inline: an inlined call has no frame under perf but keeps
# its hooks under -finstrument-functions, so the two profiles would name
# different functions. -fno-optimize-sibling-calls: a tail call removes its
# caller's frame under perf; the instrumented build makes none (its exit
# hook comes after the call).
# o2: as users build; DWARF unwinding needs no frame pointers (main() adds
# -fno-omit-frame-pointer for --call-graph fp).
FLAGS = {"noinline": ["-O2", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls"],
         "o2": ["-O2", "-g"]}
CXX_EXCLUDE = "-finstrument-functions-exclude-file-list=/usr/include"
# the instrumented builds, by tag: gcc has only the first
INSTRUMENT = {"instr": "-finstrument-functions", "ai": "-finstrument-functions-after-inlining"}
TOP_INCLUSIVE = 10
TOP_DIFFS = 5
# issue 25: the default mode's self-time shares within this many points of
# perf on the floor binary
TARGET = 5.0


def say(msg=""):
    print(msg, flush=True)


def log(msg):
    print("accuracy: " + msg, file=sys.stderr, flush=True)


# ---- function names ---------------------------------------------------------------

CLONE = re.compile(r"(\.(constprop|isra|part|cold|lto_priv|localalias)\.\d+)+$| \[clone [^\]]*\]$")


def norm(name):
    """A function's name without the suffix of a GCC clone (fib.constprop.0,
    f(int) [clone .isra.0]): the two builds need not clone alike."""
    while True:
        n = CLONE.sub("", name)
        if n == name:
            return n
        name = n


def instrumented_functions(objects):
    """The names of the functions of these objects that call
    __cyg_profile_func_enter (objdump, demangled as perf and cgprof name
    them). objdump's labels are the objects' symbols: with inlining, a
    function only inlined has none, and is not in the set (its hook calls
    are in its hosts' code, under their labels)."""
    names = set()
    for obj in objects:
        out = run(["objdump", "-d", "-C", "--no-show-raw-insn", obj])
        fn = None
        for line in out.splitlines():
            m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
            if m:
                fn = m.group(1)
            elif fn and "call" in line and "<__cyg_profile_func_enter" in line:
                names.add(norm(fn))
    return names


# ---- perf ------------------------------------------------------------------------


def perf_can_sample():
    """None when perf samples cpu-clock here, else why not."""
    perf = shutil.which("perf")
    if not perf:
        return "perf is not installed (Debian: linux-perf)"
    d = tempfile.mkdtemp(prefix="cgprof-acc-probe-")
    try:
        p = subprocess.run([perf, "record", "-q", "-e", "cpu-clock", "-o", os.path.join(d, "p.data"), "--", "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode:
            with open("/proc/sys/kernel/perf_event_paranoid") as f:
                paranoid = f.read().strip()
            last = [l for l in p.stdout.splitlines() if l.strip()][-1:] or ["no output"]
            return "perf record -e cpu-clock -- true failed (%s; perf_event_paranoid %s)" % (last[0].strip(), paranoid)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return None


class Profile:
    """Shares per function: self (a sample or ns charged to one function),
    inclusive (once per sample or per call tree), in units of `total`."""

    def __init__(self):
        self.self = collections.Counter()
        self.incl = collections.Counter()
        self.total = 0
        self.dropped = 0
        self.truncated = 0
        self.outside = 0
        self.off = 0
        self.hooks = 0
        self.repaired = 0  # charged to a libc wrapper's one caller (charge's sole_callers)
        self.incl_from = "files"

    def add(self, other):
        self.self.update(other.self)
        self.incl.update(other.incl)
        self.total += other.total
        self.dropped += other.dropped
        self.truncated += other.truncated
        self.outside += other.outside
        self.off += other.off
        self.hooks += other.hooks
        self.incl_from = other.incl_from
        return self

    def shares(self):
        t = self.total or 1
        return ({k: 100.0 * v / t for k, v in self.self.items()}, {k: 100.0 * v / t for k, v in self.incl.items()})


def pooled(profiles):
    """The runs' profiles added into one."""
    p = Profile()
    for x in profiles:
        p.add(x)
    return p


# where the chain of a thread ends when it is whole
OUTERMOST = {"_start", "clone", "clone3", "start_thread", "__libc_start_main", "__libc_start_call_main", "[unknown]"}
# a symbol's offset (+0x1c) and version (__libc_start_main@@GLIBC_2.34)
SYM_TAIL = re.compile(r"(\+0x[0-9a-f]+|@@?[A-Za-z0-9_.]+)$")


def perf_chains(data, inline):
    """perf.data's samples: {chain: samples}, a chain the (symbol, object)
    of each frame from the innermost. inline: perf script --inline, the
    frames of inlined calls named from the line tables (an inlined frame is
    given the object of the frame it is inlined into); else --no-inline,
    each address named by the symbol it is in (perf 6.1's perf script
    shows the inlined frames unless told not to: said either way)."""
    err = open(data + ".err", "w+")
    p = subprocess.Popen(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso",
                          "--inline" if inline else "--no-inline"],
                         stdout=subprocess.PIPE, stderr=err, text=True, errors="replace")
    chains = collections.Counter()
    frame = re.compile(r"^\s+[0-9a-f]+ (.*) \((.*)\)$")

    def sample(chain):
        # an inlined frame is in the object of the frame it is inlined into
        # (the next one that is not inlined)
        fixed, host = [], None
        for sym, dso in reversed(chain):
            if dso == "inlined":
                dso = host or dso
            else:
                host = dso
            fixed.append((sym, dso))
        chains[tuple(fixed[::-1])] += 1

    chain, started = [], False
    for line in p.stdout:
        if not line.strip():
            if started:
                sample(chain)
            chain, started = [], False
        elif not line.startswith("\t"):  # a sample's first line: its tid, right-aligned (" 3946")
            if started:
                sample(chain)
            chain, started = [], True
        else:
            m = frame.match(line.rstrip("\n"))
            if m:
                chain.append((m.group(1), m.group(2)))
    if started:
        sample(chain)
    if p.wait():
        err.seek(0)
        raise RuntimeError("perf script -i %s failed (%d): %s" % (data, p.returncode, err.read()[-2000:]))
    err.close()
    os.unlink(data + ".err")
    return chains


LIBC_PREFIX = re.compile(r"^(__GI_)?(__libc_|__)?")


def charge(chains, dsos, funcs, hooks=False, sole_callers=None):
    """The samples (perf_chains) charged as cgprof charges time: each to
    the innermost frame of its chain that is a function of the set (funcs)
    in the program's objects (dsos: their file names). hooks: the run was
    the instrumented build under cgprof (--build noinline's floor): a
    sample in libcgprof.so or in a PLT entry of a hook is cgprof's, left
    out and counted (prof.hooks). sole_callers: {libc wrapper: the one
    function of the program that calls it} (prog_syscalls): a chain whose
    unwinding stopped in such a wrapper (perf's DWARF unwinding does, in a
    share of its samples in system calls) is charged to that caller and
    counted (prof.repaired), rather than dropped."""
    prof = Profile()
    for chain, n in chains.items():
        if hooks and chain and (os.path.basename(chain[0][1]).startswith("libcgprof") or
                                chain[0][0].startswith("__cyg_profile_func_")):
            prof.hooks += n
            continue
        ours = []
        for sym, dso in chain:
            if os.path.basename(dso) in dsos:
                s = norm(SYM_TAIL.sub("", sym))
                if s in funcs:
                    ours.append(s)
        if not ours and sole_callers:
            user = [(sym, dso) for sym, dso in chain if not dso.startswith("[")]
            if user and os.path.basename(user[-1][1]).startswith("libc.so"):
                caller = sole_callers.get(LIBC_PREFIX.sub("", SYM_TAIL.sub("", user[-1][0])))
                if caller in funcs:
                    ours = [caller]
                    prof.repaired += n
        if not ours:
            prof.dropped += n
            user = [(sym, dso) for sym, dso in chain if not dso.startswith("[")]
            # a chain that does not end where a process or thread starts:
            # the unwinding stopped (in libc's malloc, seen with jq)
            if user and "ld-linux" not in user[-1][1] and SYM_TAIL.sub("", user[-1][0]) not in OUTERMOST:
                prof.truncated += n
            continue
        prof.total += n
        prof.self[ours[0]] += n
        for s in set(ours):
            prof.incl[s] += n
    return prof


def perf_profile(data, dsos, funcs, hooks=False):
    """--build noinline: perf.data's samples, inlined frames named
    (--inline: a function inlined in spite of -fno-inline, as xz's
    always_inline lzma_memcmplen, keeps its hooks, and cgprof shows it
    apart: docs/internals/design.md, "Calls as the hooks see them"), charged as cgprof charges time."""
    return charge(perf_chains(data, inline=True), dsos, funcs, hooks)


OFF_CPU = "cgprof_off_cpu"


def cgprof_profile(directory, funcs):
    """cgprof's self and inclusive ns per function, summed over the files
    (all threads and processes) in directory. The time off the CPU
    (CGPROF_OFF_CPU=1: the pseudo-function cgprof_off_cpu), which perf's
    cpu-clock does not see, is counted apart (off), in neither. From the
    path files when there are (CGPROF_PATHS=1), as perf counts: a path's
    self time is its innermost function of the set's, and a function's
    inclusive time the self time of every path through it, the time off the
    CPU left out; else the Callgrind files' (which include it)."""
    from cgproflib import paths, report
    files, _ = report.collect([directory])
    flat, _total, bad = report.summarize(files)
    if bad:
        raise RuntimeError("cgprof files that cannot be read: %s" % bad)
    prof = Profile()
    for (name, _obj), (incl, self_ns, _calls, _fl) in flat.items():
        n = norm(name)
        if n == OFF_CPU:
            prof.off += self_ns
        elif n in funcs:
            prof.self[n] += self_ns
            prof.incl[n] += incl
            prof.total += self_ns
        else:
            prof.outside += self_ns
    pfiles, _missing = paths.collect([directory])
    if pfiles:
        pfs, pbad = paths.load(pfiles)
        if pbad:
            raise RuntimeError("path files that cannot be read: %s" % pbad)
        # self time too, by perf's rule: a path's self time is its
        # innermost function of the set's (with CGPROF_TIME=sample, the
        # time sampled in libc's malloc is shown as malloc's, called from
        # the function that called it; perf's sample there is charged to
        # that caller)
        prof.incl, prof.self, prof.total, prof.outside = collections.Counter(), collections.Counter(), 0, 0
        for pf in pfs:
            for names, _calls, _incl, self_ns in pf.paths:
                if not self_ns or norm(names[-1]) == OFF_CPU:
                    continue
                ours = [n for n in (norm(x) for x in names) if n in funcs]
                if not ours:
                    prof.outside += self_ns
                    continue
                prof.self[ours[-1]] += self_ns
                prof.total += self_ns
                for n in set(ours):
                    prof.incl[n] += self_ns
        prof.incl_from = "paths"
    return prof


def cgprof_ran_as(directory):
    """How the runtime ran, from the header of one of its files: its clock
    (exact or sampled, and then by which timer, ", user" when it counted
    user time only) and its throttle ("desc: Throttled: ...
    (CGPROF_THROTTLE=N:T, ...)", absent when off). The defaults change:
    this says what a setting left to them was."""
    for path in sorted(glob.glob(os.path.join(directory, "callgrind.out.*"))):
        clock, throttle = None, "off"
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("desc: Clock:"):
                    text = line[len("desc: Clock:"):].strip()
                    clock = "exact"
                    if text.startswith("sampled"):
                        # which timer: the ring counts system time where
                        # the kernel allows it, the signals' perf timer
                        # user time only
                        timer = "ring" if "ring buffer" in text else "perf" if "perf_event" in text else "posix"
                        clock = "sample (%s%s)" % (timer, ", user" if "user time only" in text else "")
                elif line.startswith("desc: Throttled:"):
                    m = re.search(r"CGPROF_THROTTLE=([0-9]+:[0-9]+)", line)
                    throttle = m.group(1) if m else "on"
                elif not line.startswith(("desc:", "#", "version:", "creator:", "pid:", "thread:", "part:",
                                          "cmd:")):
                    break  # past the header
        if clock:
            return "%s, throttle %s" % (clock, throttle)
    return "?"


def tvd(a, b):
    keys = set(a) | set(b)
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys)


def tvd_incl(a, b, ref):
    """Half the sum of the inclusive shares' differences over the top
    functions of ref (perf's)."""
    top = sorted(ref, key=lambda k: (-ref[k], k))[:TOP_INCLUSIVE]
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in top)


# ---- the programs ------------------------------------------------------------------


class Config:
    """How the programs are built: --build's mode and flags, --quick."""

    def __init__(self, mode, flags, quick):
        self.mode, self.flags, self.quick = mode, flags, quick
        # cached builds (xz, sqlite) are told apart by their tags: o2's
        # plain flags have none, so that sqlite's gcc builds are
        # realprogs.py's own
        self.suffix = "noinline" if mode == "noinline" else ("fp" if flags != FLAGS["o2"] else "")

    def tag(self, kind):
        return "%s-%s" % (self.suffix, kind) if self.suffix else kind

    def kinds(self, cc):
        """The instrumented builds made: clang's after inlining too, but
        in noinline mode, where nothing is inlined."""
        return ["instr", "ai"] if cc == "clang" and self.mode == "o2" else ["instr"]


class Program:
    """A program's builds and its run. builds: {tag: its objects, the
    program first}: plain, the instrumented builds (INSTRUMENT's tags) and
    their floors (instr-floor, ai-floor). commands: argv lists written for
    the plain build (instr_command maps them), each run `repeat` times under
    one perf record and as many times under cgprof, stdin from a file or
    /dev/null."""

    def __init__(self, name, what, builds, commands, cwd, threads, cc="gcc", stdin=None):
        self.name, self.what, self.builds = name, what, builds
        self.commands, self.cwd, self.threads, self.cc, self.stdin = commands, cwd, threads, cc, stdin
        self.repeat = 1
        self.preload = []  # uninstrumented libraries preloaded in every build's runs
        self.env = {}  # per build tag: what its runs need more (a floor's LD_LIBRARY_PATH)
        self.floor_sites = {}
        self.syscall_funcs = ()  # the functions of issue 40's system-call target (prog_syscalls)
        self.sole_callers = None  # charge's sole_callers (prog_syscalls)

    @property
    def plain_objs(self):
        return self.builds["plain"]

    @property
    def instr_objs(self):
        return self.builds["instr"]

    def instrumented(self):
        return [t for t in INSTRUMENT if t in self.builds]

    def command(self, tag, argv):
        """argv, written for the plain build, for build tag."""
        m = dict(zip(self.builds["plain"], self.builds[tag]))
        return [m.get(a, a) for a in argv]

    def build_name(self, tag):
        return "%s %s" % (self.cc, INSTRUMENT[tag])


def build_small(tmp, cfg, name, source, cc="gcc", cxx=False, defines=()):
    """The plain build and cfg's instrumented ones of one source file:
    {tag: [program]}."""
    compiler = {"gcc": "g++" if cxx else "gcc", "clang": "clang++" if cxx else "clang"}[cc]
    builds = {}
    for tag in ["plain"] + cfg.kinds(cc):
        extra = [] if tag == "plain" else [INSTRUMENT[tag]] + ([CXX_EXCLUDE] if cxx and cc == "gcc" else [])
        exe = os.path.join(tmp, "%s-%s-%s" % (name, cc, tag))
        nice_build([compiler] + cfg.flags + extra + list(defines) + ["-o", exe, source, "-lpthread"])
        builds[tag] = [exe]
    return builds


def prog_workload(tmp, cfg, threads, cc="gcc"):
    # o2: the helpers may be inlined, as in realprogs.py's workload
    defines = ["-DBENCH_INLINE"] if cfg.mode == "o2" else []
    b = build_small(tmp, cfg, "workload", os.path.join(BENCH, "workload.c"), cc=cc, defines=defines)
    units = "%d" % (560 if cfg.quick else 2240)
    name = "workload" + ("%d" % threads if threads > 1 else "") + ("-" + cc if cc != "gcc" else "")
    return Program(name, "tests/bench/workload.c%s (%s), %s units, %d thread%s"
                   % (" -DBENCH_INLINE" if defines else "", cc, units, threads, "s" if threads > 1 else ""),
                   b, [[b["plain"][0], units, str(threads)]], tmp, threads, cc=cc)


def prog_example(tmp, cfg, name):
    src = os.path.join(ROOT, "examples", name + (".cpp" if name == "cxx" else ".c"))
    b = build_small(tmp, cfg, name, src, cxx=name == "cxx")
    args = {"basic": ["30"]}.get(name, [])
    what = {"basic": "examples/basic.c 30", "threads": "examples/threads.c (4 workers)",
            "cxx": "examples/cxx.cpp"}[name]
    return Program(name, what, b, [[b["plain"][0]] + args], tmp, 5 if name == "threads" else 1)


JQ_FILTERS = ["map(.name) | sort | unique", "group_by(.k) | map({k: .[0].k, n: length})",
              'map(.text | ascii_downcase | split(" ") | map(select(length > 3)) | join("-")) | unique | length',
              "reduce .[] as $r ({}; .[$r.k] += $r.y)", "map(tojson | fromjson) == ."]


def prog_jq(tmp, cfg):
    trp = realprog()
    src, what = trp.get_source()
    inst = {}
    for tag in ["plain"] + cfg.kinds("gcc"):
        trp.CFLAGS = dict(trp.CFLAGS, gcc=" ".join(cfg.flags + ([INSTRUMENT[tag]] if tag != "plain" else [])))
        log("jq, %s build (%s; cached after the first run)" % (tag, trp.CFLAGS["gcc"]))
        inst[tag], _ = trp.build(src, "gcc")
    data = os.path.join(tmp, "input.json")
    trp.make_input(data, 4000 if cfg.quick else 12000)
    objs = {t: [os.path.join(inst[t], "bin", "jq")] + sorted(glob.glob(os.path.join(inst[t], "lib", "libjq.so.*.*")))
            for t in inst}
    filters = JQ_FILTERS[:2] if cfg.quick else JQ_FILTERS
    # jq seeds its objects' hash with arc4random (Debian's patch): the
    # calls change from run to run. test_realprog's fixed seed, preloaded in
    # every run of both builds, makes them the same.
    seed = os.path.join(tmp, "libfixedseed.so")
    with open(seed + ".c", "w") as f:
        f.write(trp.FIXED_SEED_C)
    nice_build(["gcc", "-shared", "-fPIC", "-O2", "-o", seed, seed + ".c"])
    # the same command for both builds but the binary: the command is
    # written for the plain build and mapped to the instrumented one
    prog = Program("jq", "jq 1.6 (%s), %d filters on %.1f MB of JSON" % (what.split(",")[0], len(filters),
                                                                         os.path.getsize(data) / 1e6),
                   objs, [[objs["plain"][0], f, data] for f in filters], tmp, 1)
    prog.preload = [seed]
    return prog


XZ_CONFIGURE = ["--disable-shared", "--disable-nls", "--disable-doc", "--disable-scripts", "--disable-xzdec",
                "--disable-lzmadec", "--disable-lzmainfo", "--disable-lzma-links"]


def prog_xz(tmp, cfg):
    """xz-utils from Debian's source (realbuild: test_realprog's apt
    configuration and cache), configure and make at low priority, liblzma
    linked in (--disable-shared: the program's one object), once per
    flags."""
    cache, src = debian_source("xz-utils")
    cc = realprog().compiler_id("gcc")
    builds = {}
    for tag in ["plain"] + cfg.kinds("gcc"):
        flags = cfg.flags + ([INSTRUMENT[tag]] if tag != "plain" else [])
        configure = [os.path.join(src, "configure")] + XZ_CONFIGURE + ["CC=gcc", "CFLAGS=" + " ".join(flags)]
        builds[tag] = [cached_build(cache, cfg.tag(tag), {"flags": flags, "cc": cc, "configure": configure},
                                    [(configure, build_env()), (["make", "-j2"], build_env())], "src/xz/xz")]
    data = os.path.join(tmp, "xz-input")
    mb = 2 if cfg.quick else 6
    make_text(data, mb)
    # 1 MiB blocks: with -T2 both threads compress from the start
    return Program("xz", "xz %s -T2 -3 --block-size=1MiB on %d MB of text" % (source_version(src), mb), builds,
                   [[builds["plain"][0], "-T2", "-3", "--block-size=1MiB", "-c", data]], tmp, 3)


# tests/bench/syscalls.c's functions that make system calls: issue 40's
# second accuracy target is each one's self share (its system time
# included: perf's samples in the kernel and in libc charged to it, and
# cgprof's, as a visit of the libc function under it, by its paths file)
SYSCALL_FUNCS = ("log_records", "draw_random", "through_pipe", "sync_log")
# each libc wrapper it calls, and its one caller (syscalls.c's head comment)
SYSCALL_SOLE_CALLERS = {"write": "log_records", "getrandom": "draw_random", "writev": "through_pipe",
                        "readv": "through_pipe", "fdatasync": "sync_log"}
SYSCALL_TARGET = 3.0


def prog_syscalls(tmp, cfg):
    """tests/bench/syscalls.c: about three quarters of its CPU time in
    system calls (write into the page cache, /dev/urandom, a pipe,
    fdatasync), made by four functions of its own."""
    b = build_small(tmp, cfg, "syscalls", os.path.join(BENCH, "syscalls.c"))
    rounds = "200" if cfg.quick else "600"
    prog = Program("syscalls", "tests/bench/syscalls.c, %s rounds (write, /dev/urandom, a pipe, fdatasync)" % rounds,
                   b, [[b["plain"][0], rounds, tmp]], tmp, 1)
    prog.syscall_funcs = SYSCALL_FUNCS
    prog.sole_callers = SYSCALL_SOLE_CALLERS
    return prog


def make_text(path, mb):
    """Text that compresses to about a third: words, numbers (seeded)."""
    import random
    r = random.Random(17)
    words = [("".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9)))) for _ in range(4000)]
    with open(path, "w") as f:
        n = 0
        while n < mb << 20:
            line = " ".join(r.choice(words) for _ in range(12)) + " %d\n" % r.randint(0, 10 ** 6)
            f.write(line)
            n += len(line)


def prog_sqlite(tmp, cfg, cc="gcc"):
    """sqlite3 as realprogs.py builds it (realbuild.build_sqlite: the same
    cache, and with gcc at -O2 -g the very same builds), on its SQL."""
    kinds = ["plain"] + cfg.kinds(cc)
    exes, version = build_sqlite([(cfg.tag(k), cfg.flags + ([INSTRUMENT[k]] if k != "plain" else []))
                                  for k in kinds], cc=cc)
    builds = {k: [exes[cfg.tag(k)]] for k in kinds}
    sql = os.path.join(tmp, "sqlite.sql")
    with open(sql, "w") as f:
        f.write(SQLITE_SQL)
    return Program("sqlite" + ("-" + cc if cc != "gcc" else ""),
                   "sqlite3 %s (%s), %d statements on :memory:, from stdin" % (version, cc, SQLITE_SQL.count(";")),
                   builds, [[builds["plain"][0]] + SQLITE_ARGS], tmp, 1, cc=cc, stdin=sql)


PROGRAMS = {
    "workload": lambda t, c: prog_workload(t, c, 1),
    "workload2": lambda t, c: prog_workload(t, c, 2),
    "workload-clang": lambda t, c: prog_workload(t, c, 1, "clang"),
    "basic": lambda t, c: prog_example(t, c, "basic"),
    "threads": lambda t, c: prog_example(t, c, "threads"),
    "cxx": lambda t, c: prog_example(t, c, "cxx"),
    "jq": prog_jq,
    "xz": prog_xz,
    "sqlite": prog_sqlite,
    "sqlite-clang": lambda t, c: prog_sqlite(t, c, "clang"),
    "syscalls": prog_syscalls,
}


def soname(obj):
    m = re.search(r"^\s*SONAME\s+(\S+)", run(["objdump", "-p", obj]), re.M)
    return m.group(1) if m else None


def make_floors(prog, tmp):
    """--build o2: the floor of each instrumented build (tests/bench/floor.py
    on each of its objects, into a directory of its own), builds
    <tag>-floor. A program with libraries of its own (jq's libjq) finds
    the floor's by their sonames in that directory (LD_LIBRARY_PATH, which
    a run path set as DT_RUNPATH gives way to); ldd checks that it does."""
    for tag in prog.instrumented():
        d = os.path.join(tmp, "%s-%s-floor" % (prog.name, tag))
        os.makedirs(d)
        objs, sites = [], 0
        for k, obj in enumerate(prog.builds[tag]):
            out = os.path.join(d, os.path.basename(obj))
            p = subprocess.run([sys.executable, os.path.join(BENCH, "floor.py"), obj, out], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            if p.returncode not in (0, 1):  # 1: no site in this object
                raise RuntimeError("floor.py %s failed (%d): %s" % (obj, p.returncode, p.stdout[-2000:]))
            sites += int(p.stdout.split()[-1])
            objs.append(out)
            name = soname(obj) if k else None
            if name and name != os.path.basename(obj):
                os.symlink(os.path.basename(obj), os.path.join(d, name))
        if not sites:
            raise RuntimeError("%s: no hook call site in %s" % (prog.name, " ".join(prog.builds[tag])))
        prog.builds[tag + "-floor"] = objs
        prog.floor_sites[tag] = sites
        if len(objs) > 1:
            prog.env[tag + "-floor"] = {"LD_LIBRARY_PATH": d}
            ldd = run(["ldd", objs[0]], env=clean_env(prog.env[tag + "-floor"]))
            for lib in objs[1:]:
                if os.path.realpath(lib) not in {os.path.realpath(x) for x in re.findall(r"=> (\S+)", ldd)}:
                    raise RuntimeError("%s's floor does not load %s:\n%s" % (prog.name, lib, ldd))
        log("%s: the floor of %s: %d hook call sites made nops or rets" % (prog.name, prog.build_name(tag), sites))


# ---- the runs ----------------------------------------------------------------------


def clean_env(extra=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
    e["LC_ALL"] = "C"
    e.update(extra or {})
    return e


def run_env(prog, tag):
    """The environment of a run of build tag without cgprof."""
    extra = dict(prog.env.get(tag, {}))
    if prog.preload:
        extra["LD_PRELOAD"] = ":".join(prog.preload)
    return clean_env(extra)


def instr_command(prog, argv):
    return prog.command("instr", argv)


def script_of(prog, commands):
    """One shell command running the commands `repeat` times, their output
    thrown away."""
    stdin = " <" + shlex.quote(prog.stdin) if prog.stdin else ""
    body = "; ".join(" ".join(shlex.quote(a) for a in c) + stdin + " >/dev/null" for c in commands)
    return "i=0; while [ $i -lt %d ]; do %s; i=$((i+1)); done" % (prog.repeat, body)


def stdin_of(prog):
    return open(prog.stdin or os.devnull, "rb")


def calibrate(prog, target):
    """repeat: how many times the commands run for the plain build to take
    about target seconds."""
    times = []
    for _ in range(3):  # the fastest of 3: a run slowed by the machine's load would repeat too few
        t = time.perf_counter()
        for c in prog.commands:
            with stdin_of(prog) as i:
                subprocess.run(c, cwd=prog.cwd, env=run_env(prog, "plain"), stdin=i, stdout=subprocess.DEVNULL,
                               check=True)
        times.append(time.perf_counter() - t)
    one = min(times)
    prog.repeat = max(1, min(300, int(math.ceil(target / max(one, 1e-4)))))
    return one


def perf_record(prog, data, freq, callgraph, commands, env):
    """perf record of the commands, repeated (script_of), into data."""
    cg = ["--call-graph", "dwarf,16384"] if callgraph == "dwarf" else ["--call-graph", "fp"]
    run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq)] + cg + ["-o", data, "--", "sh", "-c",
                                                                              script_of(prog, commands)],
        cwd=prog.cwd, env=env)


def cgprof_env(prog, env, directory):
    """The environment of a run of the instrumented build under cgprof
    (settings env), its files written in directory."""
    e = clean_env(env)
    e["LD_PRELOAD"] = ":".join(prog.preload + [LIB])
    e["CGPROF_OUT"] = os.path.join(directory, "callgrind.out")
    # time off the CPU is shown apart in exact time only (sampled time, the
    # runtime's default, is CPU time: it never counts it, and the runtime
    # says so for CGPROF_OFF_CPU=1)
    if e.get("CGPROF_TIME", "sample") != "exact":
        e.pop("CGPROF_OFF_CPU", None)
    return e


def perf_run(prog, tmp, i, freq, callgraph, funcs):
    """--build noinline: perf on the plain build."""
    data = os.path.join(tmp, "%s-perf%d.data" % (prog.name, i))
    t = time.perf_counter()
    perf_record(prog, data, freq, callgraph, prog.commands, run_env(prog, "plain"))
    wall = time.perf_counter() - t
    dsos = {os.path.basename(o) for o in prog.plain_objs}
    prof = perf_profile(data, dsos, funcs)
    os.unlink(data)
    return prof, wall


def perf_samples(prog, tmp, tag, i, args):
    """--build o2: perf on build tag (plain, or a floor) run i, its samples
    named by the symbols their addresses are in: (perf_chains, seconds)."""
    data = os.path.join(tmp, "%s-%s-perf%d.data" % (prog.name, tag, i))
    t = time.perf_counter()
    perf_record(prog, data, args.freq, args.call_graph, [prog.command(tag, c) for c in prog.commands],
                run_env(prog, tag))
    wall = time.perf_counter() - t
    chains = perf_chains(data, inline=False)
    os.unlink(data)
    return chains, wall


def dsos_of(prog, tag):
    return {os.path.basename(o) for o in prog.builds[tag]}


def floor_run(prog, tmp, i, freq, callgraph, funcs, env):
    """--build noinline: perf on the instrumented build running under
    cgprof (env), the samples in cgprof's hooks left out: what the
    program's own instructions took with the hooks between them. No
    accounting of cgprof's can come closer to perf on the plain build than
    this, but by guessing how the hooks slowed or sped up the code around
    them."""
    data = os.path.join(tmp, "%s-floor%d.data" % (prog.name, i))
    d = os.path.join(tmp, "%s-floor%d" % (prog.name, i))
    os.makedirs(d)
    perf_record(prog, data, freq, callgraph, [instr_command(prog, c) for c in prog.commands],
                cgprof_env(prog, env, d))
    prof = perf_profile(data, {os.path.basename(o) for o in prog.instr_objs}, funcs, hooks=True)
    os.unlink(data)
    shutil.rmtree(d, ignore_errors=True)
    return prof


def cgprof_run(prog, tmp, i, env, funcs, tag="instr"):
    """cgprof (settings env) on build tag, run i: (its profile, seconds);
    the profile's ran_as says how the runtime ran (cgprof_ran_as)."""
    d = tempfile.mkdtemp(prefix="%s-%s-cgprof%d-" % (prog.name, tag, i), dir=tmp)
    e = cgprof_env(prog, env, d)
    cmds = [prog.command(tag, c) for c in prog.commands]
    t = time.perf_counter()
    said = set()
    for _ in range(prog.repeat):
        for c in cmds:
            with stdin_of(prog) as stdin:
                p = subprocess.run(c, cwd=prog.cwd, env=e, stdin=stdin, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, errors="replace")
            if p.returncode:
                raise RuntimeError("%s under cgprof failed (%d): %s" % (" ".join(c), p.returncode, p.stderr[-2000:]))
            for line in p.stderr.splitlines():  # cgprof's notes, once for the repeated runs
                if line.startswith("cgprof") and line not in said:
                    said.add(line)
                    log("%s under cgprof: %s" % (prog.name, line if len(line) < 300 else line[:300] + "..."))
    wall = time.perf_counter() - t
    prof = cgprof_profile(d, funcs)
    prof.ran_as = cgprof_ran_as(d)
    shutil.rmtree(d, ignore_errors=True)
    return prof, wall


def has_compensate():
    launcher = os.path.join(BUILD, "scripts", "cgprof")
    try:
        out = subprocess.run([launcher, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    except OSError:
        return False
    return "--compensate" in out


def fmt_top(perf_s, cg_s, what="cgprof", ref="perf"):
    keys = set(perf_s) | set(cg_s)
    top = sorted(keys, key=lambda k: (-abs(perf_s.get(k, 0) - cg_s.get(k, 0)), k))[:TOP_DIFFS]
    return ["    %-40s %s %5.1f%%  %s %5.1f%%  %+5.1f" % (k[:40], ref, perf_s.get(k, 0), what, cg_s.get(k, 0),
                                                    cg_s.get(k, 0) - perf_s.get(k, 0)) for k in top]


def measure_noinline(prog, args, tmp, variants):
    funcs = instrumented_functions(prog.instr_objs)
    one = calibrate(prog, args.seconds)
    log("%s: %d instrumented functions; plain run %.3f s, repeated %d times" % (prog.name, len(funcs), one,
                                                                                prog.repeat))
    perfs = []
    for i in range(args.runs):
        prof, wall = perf_run(prog, tmp, i, args.freq, args.call_graph, funcs)
        perfs.append(prof)
        log("%s: perf run %d: %d samples kept, %d dropped (%d of them unwound only part way), %.1f s"
            % (prog.name, i, prof.total, prof.dropped, prof.truncated, wall))
    cgs = {}
    for label, env in variants:
        cgs[label] = []
        for i in range(args.runs):
            prof, wall = cgprof_run(prog, tmp, i, env, funcs)
            cgs[label].append(prof)
            log("%s: cgprof (%s) run %d: %.1f s" % (prog.name, label, i, wall))
    floors = {}
    if args.floor:
        for label, env in variants:
            tm = env.get("CGPROF_TIME", "sample")  # the runtime's default
            if tm in floors or env.get("CGPROF_COMPENSATE") == "0":
                continue
            floors[tm] = []
            for i in range(args.runs):
                floors[tm].append(floor_run(prog, tmp, i, args.freq, args.call_graph, funcs, env))
                log("%s: floor (%s) run %d: %d samples kept, %d in the hooks" % (prog.name, tm, i,
                                                                                  floors[tm][-1].total,
                                                                                  floors[tm][-1].hooks))
    perf_all = Profile()
    for p in perfs:
        perf_all.add(p)
    ps, pi = perf_all.shares()
    res = {"prog": prog, "samples": perf_all.total, "dropped": perf_all.dropped, "truncated": perf_all.truncated,
           "per_run": [(p.total, p.dropped, p.truncated) for p in perfs],
         "repaired": sum(p.repaired for p in perfs), "funcs": len(funcs),
           "variants": {}}
    top = sorted(pi, key=lambda k: (-pi[k], k))[:TOP_INCLUSIVE]
    for label, profs in cgs.items():
        cg_all = Profile()
        for p in profs:
            cg_all.add(p)
        cs, ci = cg_all.shares()
        out_pct = 100.0 * cg_all.outside / max(1, cg_all.total + cg_all.outside)
        off_pct = 100.0 * cg_all.off / max(1, cg_all.total + cg_all.outside + cg_all.off)
        err = None
        if len(profs) >= 2:
            a, b = profs[0].shares(), profs[1].shares()
            err = (tvd(a[0], b[0]), tvd_incl(a[1], b[1], pi))
        res["variants"][label] = {"tvd": tvd(ps, cs), "tvd_incl": tvd_incl(pi, ci, pi), "top": fmt_top(ps, cs),
                                  "top_incl": fmt_top({k: pi[k] for k in top}, {k: ci.get(k, 0) for k in top}),
                                  "outside": out_pct, "off": off_pct, "incl_from": cg_all.incl_from,
                                  "cg_err": err}
    res["floors"] = {}
    for tm, profs in floors.items():
        fl = Profile()
        for p in profs:
            fl.add(p)
        fs, fi = fl.shares()
        res["floors"][tm] = {"tvd": tvd(ps, fs), "tvd_incl": tvd_incl(pi, fi, pi), "top": fmt_top(ps, fs, "floor"),
                             "samples": fl.total, "hooks": 100.0 * fl.hooks / max(1, fl.hooks + fl.total)}
    if len(perfs) >= 2:
        a, b = perfs[0].shares(), perfs[1].shares()
        res["perf_err"] = (tvd(a[0], b[0]), tvd_incl(a[1], b[1], pi), perfs[0].total, perfs[1].total)
    else:
        res["perf_err"] = None
    return res


def report_noinline(res, variants):
    prog = res["prog"]
    say("")
    say("%s: %s" % (prog.name, prog.what))
    say("  %d instrumented functions; run %d time%s per profile; perf samples kept %d (dropped: %d, "
        "outside the program's functions, %d of them with a chain that perf unwound only part way)"
        % (res["funcs"], prog.repeat, "s" if prog.repeat > 1 else "", res["samples"], res["dropped"],
           res["truncated"]))
    say("  per perf run, kept / dropped / unwound part way: " + ", ".join("%d / %d / %d" % r for r in res["per_run"]))
    pe = res["perf_err"]
    if pe:
        say("  error bar, perf run 1 against perf run 2 (%d and %d samples): TVD self %.1f, inclusive %.1f points"
            % (pe[2], pe[3], pe[0], pe[1]))
    for tm, f in res["floors"].items():
        say("  floor (%s time): perf on the instrumented build under cgprof, the %.0f%% of its samples in the "
            "hooks left out (%d kept): TVD self %.1f, inclusive %.1f points"
            % (tm, f["hooks"], f["samples"], f["tvd"], f["tvd_incl"]))
        for line in f["top"][:3]:
            say(line)
    for label, _ in variants:
        v = res["variants"][label]
        ce = v["cg_err"]
        say("  cgprof%s: TVD self %.1f points, inclusive (top %d, from the %s) %.1f points; cgprof's time outside "
            "the set %.1f%%, off the CPU %.1f%% (left out)%s"
            % (" (%s)" % label if label else "",
               v["tvd"], TOP_INCLUSIVE, v["incl_from"], v["tvd_incl"], v["outside"], v["off"],
               "; cgprof run 1 against run 2: self %.1f, inclusive %.1f" % ce if ce else ""))
        say("   largest self differences:")
        for line in v["top"]:
            say(line)
        say("   largest inclusive differences (top %d by perf):" % TOP_INCLUSIVE)
        for line in v["top_incl"][:3]:
            say(line)


def summary_noinline(results, variants):
    say("")
    say("summary (TVD in percentage points; error bar: perf against perf)")
    head = "  %-10s %8s" % ("program", "samples")
    for label, _ in variants:
        head += "  %17s %17s" % ("self " + label, "incl " + label)
    floor_tms = sorted({tm for r in results for tm in r["floors"]})
    for tm in floor_tms:
        head += "  %12s" % ("floor " + tm)
    head += "  %10s %10s" % ("err self", "err incl")
    say(head)
    for r in results:
        line = "  %-10s %8d" % (r["prog"].name, r["samples"])
        for label, _ in variants:
            line += "  %17.1f %17.1f" % (r["variants"][label]["tvd"], r["variants"][label]["tvd_incl"])
        for tm in floor_tms:
            line += "  %12s" % ("%.1f" % r["floors"][tm]["tvd"] if tm in r["floors"] else "-")
        pe = r["perf_err"]
        line += "  %10s %10s" % (("%.1f" % pe[0]) if pe else "-", ("%.1f" % pe[1]) if pe else "-")
        say(line)


# ---- --build o2 --------------------------------------------------------------------


def run_to_run(profs):
    """The self-time TVD of run 1 against run 2 (None with one run)."""
    return tvd(profs[0].shares()[0], profs[1].shares()[0]) if len(profs) >= 2 else None


def measure_o2(prog, args, tmp, variants):
    """perf on the plain build, then per instrumented build: perf on its
    floor and cgprof with each setting; the TVDs of each against each."""
    sets = {t: instrumented_functions(prog.builds[t]) for t in prog.instrumented()}
    one = calibrate(prog, args.seconds)
    log("%s: plain run %.3f s, repeated %d times" % (prog.name, one, prog.repeat))
    # the plain build's samples, kept as chains: each instrumented build
    # has its own set of functions to charge them to
    plain = []
    for i in range(args.runs):
        chains, wall = perf_samples(prog, tmp, "plain", i, args)
        plain.append(chains)
        log("%s: perf on the plain build, run %d: %d samples, %.1f s" % (prog.name, i + 1, sum(chains.values()),
                                                                         wall))
    res = {"prog": prog, "builds": {}}
    for tag in prog.instrumented():
        funcs = sets[tag]
        log("%s, %s: %d functions with code of their own and an enter hook"
            % (prog.name, prog.build_name(tag), len(funcs)))
        perfs = [charge(c, dsos_of(prog, "plain"), funcs, sole_callers=prog.sole_callers) for c in plain]
        floors = []
        if args.floor:
            for i in range(args.runs):
                chains, wall = perf_samples(prog, tmp, tag + "-floor", i, args)
                floors.append(charge(chains, dsos_of(prog, tag + "-floor"), funcs, sole_callers=prog.sole_callers))
                log("%s, %s: perf on the floor, run %d: %d samples kept, %.1f s"
                    % (prog.name, prog.build_name(tag), i + 1, floors[-1].total, wall))
        cgs = {}
        for label, env in variants:
            cgs[label] = []
            for i in range(args.runs):
                prof, wall = cgprof_run(prog, tmp, i, env, funcs, tag)
                cgs[label].append(prof)
                log("%s, %s: cgprof (%s) run %d: %.1f s" % (prog.name, prog.build_name(tag), label, i + 1, wall))
        res["builds"][tag] = compare_o2(perfs, floors, cgs, len(funcs))
    return res


def compare_o2(perfs, floors, cgs, nfuncs):
    """The TVDs of one instrumented build (self and inclusive shares; the
    inclusive ones over the reference's top functions)."""
    plain = pooled(perfs)
    ps, pi = plain.shares()
    r = {"funcs": nfuncs, "samples": plain.total, "dropped": plain.dropped, "truncated": plain.truncated,
         "per_run": [(p.total, p.dropped, p.truncated) for p in perfs],
         "repaired": sum(p.repaired for p in perfs), "perf_err": run_to_run(perfs),
         "floor": None, "variants": {}}
    if floors:
        fl = pooled(floors)
        fs, fi = fl.shares()
        r["floor"] = {"samples": fl.total, "dropped": fl.dropped, "truncated": fl.truncated,
                      "err": run_to_run(floors), "vs_plain": tvd(fs, ps),
                      "incl_vs_plain": tvd_incl(fi, pi, pi), "top": fmt_top(ps, fs, "floor", "plain")}
    for label, profs in cgs.items():
        cg = pooled(profs)
        cs, ci = cg.shares()
        v = {"vs_plain": tvd(cs, ps), "incl_vs_plain": tvd_incl(ci, pi, pi), "err": run_to_run(profs),
             "outside": 100.0 * cg.outside / max(1, cg.total + cg.outside),
             "off": 100.0 * cg.off / max(1, cg.total + cg.outside + cg.off),
             "ran_as": profs[0].ran_as, "top": fmt_top(ps, cs, ref="plain")}
        if floors:
            v.update(vs_floor=tvd(cs, fs), incl_vs_floor=tvd_incl(ci, fi, fi), top=fmt_top(fs, cs, ref="floor"))
        ref = fs if floors else ps
        v["shares"], v["ref_shares"] = cs, ref
        v["diffs"] = sorted(((k, cs.get(k, 0) - ref.get(k, 0)) for k in set(cs) | set(ref)),
                            key=lambda kd: (-abs(kd[1]), kd[0]))
        r["variants"][label] = v
    return r


def fmt_pts(x):
    return "-" if x is None else "%.1f" % x


def report_o2(res, variants, flags):
    prog = res["prog"]
    say("")
    say("%s: %s; run %d time%s per profile" % (prog.name, prog.what, prog.repeat, "s" if prog.repeat > 1 else ""))
    say("  plain build: %s %s" % (prog.cc, " ".join(flags)))
    w = max([len("cgprof setting")] + [len(label) for label, _ in variants])
    for tag, r in res["builds"].items():
        say("  %s: %d functions with code of their own and an enter hook%s"
            % (prog.build_name(tag), r["funcs"], "; floor: %d hook call sites jumped over" % prog.floor_sites[tag]
               if tag in prog.floor_sites else ""))
        say("    perf on the plain build, samples charged to them per run (kept / dropped / unwound part way): "
            + ", ".join("%d / %d / %d" % x for x in r["per_run"]))
        if r["repaired"]:
            say("    of those kept, %d stopped in a libc wrapper of one caller, charged to it (prog_syscalls)"
                % r["repaired"])
        say("    perf/perf (plain, run 1 against run 2, the error bar): %s points" % fmt_pts(r["perf_err"]))
        f = r["floor"]
        if f:
            say("    floor/plain (perf on the floor against perf on the plain build): %.1f points, inclusive %.1f; "
                "floor samples kept %d (dropped %d, %d unwound part way); floor run 1 against run 2: %s"
                % (f["vs_plain"], f["incl_vs_plain"], f["samples"], f["dropped"], f["truncated"], fmt_pts(f["err"])))
            for line in f["top"][:3]:
                say(line)
        say("    %-*s  %-26s %12s %12s %9s %8s %8s" % (w, "cgprof setting", "ran as", "cgprof/floor", "cgprof/plain",
                                                    "run/run", "off-CPU", "outside"))
        for label, _ in variants:
            v = r["variants"][label]
            say("    %-*s  %-26s %12s %12s %9s %7.1f%% %7.1f%%"
                % (w, label, v["ran_as"], fmt_pts(v.get("vs_floor")), fmt_pts(v["vs_plain"]), fmt_pts(v["err"]),
                   v["off"], v["outside"]))
        say("    inclusive (top %d of the reference), cgprof/floor and cgprof/plain: %s" % (
            TOP_INCLUSIVE, ", ".join("%s %s / %.1f" % (label, fmt_pts(r["variants"][label].get("incl_vs_floor")),
                                                        r["variants"][label]["incl_vs_plain"])
                                     for label, _ in variants)))
        first = variants[0][0]
        say("    largest self differences, cgprof %s against the %s:" % (first, "floor" if f else "plain build"))
        for line in r["variants"][first]["top"]:
            say(line)
        # the others' in a line each: where a setting's figure comes from
        if variants[1:]:
            say("    the 3 largest of each other setting:")
        for label, _ in variants[1:]:
            say("    %-*s  %s" % (w, label, ", ".join("%s %+.1f" % kd for kd in r["variants"][label]["diffs"][:3])))


def summary_o2(results, variants):
    say("")
    say("summary (self-time TVD in percentage points; perf/perf: perf on the plain build, run 1 against run 2; "
        "floor: perf on the floor binary)")
    rows = [("program", "build", "samples", "perf/perf", "floor/plain", "cgprof setting", "ran as", "cgprof/floor",
             "cgprof/plain")]
    for res in results:
        prog = res["prog"]
        for tag, r in res["builds"].items():
            for k, (label, _) in enumerate(variants):
                v = r["variants"][label]
                head = (prog.name, prog.build_name(tag), str(r["samples"]), fmt_pts(r["perf_err"]),
                        fmt_pts(r["floor"] and r["floor"]["vs_plain"])) if k == 0 else ("",) * 5
                rows.append(head + (label, v["ran_as"], fmt_pts(v.get("vs_floor")), fmt_pts(v["vs_plain"])))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    right = {2, 3, 4, 7, 8}
    for row in rows:
        say("  " + "  ".join(x.rjust(widths[c]) if c in right else x.ljust(widths[c]) for c, x in enumerate(row)))


def targets_o2(results, variants, extra_note):
    """Issue 25's target, per program and instrumented build: the default
    mode's cgprof/floor <= TARGET points."""
    label = variants[0][0]
    say("")
    say("targets: cgprof's default mode (setting %s%s) within %.0f points of perf on the floor binary "
        "(self-time TVD)" % (label, extra_note, TARGET))
    for res in results:
        prog = res["prog"]
        for tag, r in res["builds"].items():
            v = r["variants"][label]
            if v.get("vs_floor") is None:
                verdict, fig = "not run (--no-floor)", "-"
            else:
                verdict, fig = "PASS" if v["vs_floor"] <= TARGET else "MISS", "%.1f" % v["vs_floor"]
            say("  %-14s %-44s %-4s %5s  (cgprof/plain %s, floor/plain %s, perf/perf %s; ran as %s)"
                % (prog.name, prog.build_name(tag), verdict, fig, fmt_pts(v["vs_plain"]),
                   fmt_pts(r["floor"] and r["floor"]["vs_plain"]), fmt_pts(r["perf_err"]), v["ran_as"]))


def targets_syscalls(results, variants):
    """Issue 40's second accuracy target: in a program that spends most of
    its CPU in system calls, each function that makes them within
    SYSCALL_TARGET points of perf's share for it (on the floor, else on the
    plain build), per cgprof setting."""
    rows = [(res, tag, r) for res in results if res["prog"].syscall_funcs for tag, r in res["builds"].items()]
    if not rows:
        return
    say("")
    say("targets: in a program whose CPU goes mostly to system calls, each function that makes them within %.0f "
        "points of perf's self share for it" % SYSCALL_TARGET)
    for res, tag, r in rows:
        prog = res["prog"]
        for label, _ in variants:
            v = r["variants"][label]
            diffs = [(f, v["ref_shares"].get(f, 0.0), v["shares"].get(f, 0.0)) for f in prog.syscall_funcs]
            worst = max(abs(c - p) for _, p, c in diffs)
            say("  %-10s %-30s %-28s %-4s %4.1f  (%s; ran as %s)"
                % (prog.name, prog.build_name(tag), label, "PASS" if worst <= SYSCALL_TARGET else "MISS", worst,
                   ", ".join("%s perf %.1f%% cgprof %.1f%%" % d for d in diffs), v["ran_as"]))


def settings_label(settings):
    return " ".join("%s=%s" % (k[len("CGPROF_"):], v) for k, v in settings.items()) or "default"


def variants_o2(args, extra):
    """The cgprof settings compared: the runtime's default, then each clock
    --time asks for, each as is, with CGPROF_THROTTLE=10000:1000 and =off;
    a setting of --cgprof-env for CGPROF_TIME or CGPROF_THROTTLE replaces
    its axis. extra (every run's settings) is added to each."""
    times = [{}] if "CGPROF_TIME" in extra else \
        [{}] + [{"CGPROF_TIME": tm} for tm in (["exact", "sample"] if args.time == "both" else [args.time])]
    throttles = [{}] if "CGPROF_THROTTLE" in extra else \
        [{}, {"CGPROF_THROTTLE": "10000:1000"}, {"CGPROF_THROTTLE": "off"}]
    return [(settings_label(dict(tm, **th)), dict(extra, **tm, **th)) for tm in times for th in throttles]


def variants_noinline(args, extra):
    """Each clock asked for (CGPROF_TIME: exact, every call timed; sample,
    the thread's CPU time sampled at perf's frequency), each with and
    without overhead compensation (CGPROF_COMPENSATE)."""
    extra = dict(extra)
    times = ["exact", "sample"] if args.time == "both" else [args.time]
    if "CGPROF_TIME" in extra:
        times = [extra.pop("CGPROF_TIME")]
    variants = []
    for tm in times:
        env = dict(extra, CGPROF_TIME=tm)
        if tm == "sample":
            env.setdefault("CGPROF_SAMPLE_HZ", str(args.freq))
        if has_compensate() and "CGPROF_COMPENSATE" not in extra:
            variants += [(tm + " comp", dict(env, CGPROF_COMPENSATE="1")),
                         (tm + " raw", dict(env, CGPROF_COMPENSATE="0"))]
        else:
            variants.append((tm, env))
    return extra, variants


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", choices=("o2", "noinline"), default="o2",
                    help="o2 (default): -O2 -g as users build, against perf on the plain build and on each "
                         "instrumented build's floor binary; noinline: -fno-inline -fno-optimize-sibling-calls, "
                         "the former benchmark")
    ap.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated, of: " + ", ".join(PROGRAMS))
    ap.add_argument("--runs", type=int, default=2, help="perf and cgprof runs per program (default 2: the error bar "
                    "compares run 1 with run 2; the figures pool all runs)")
    ap.add_argument("--quick", action="store_true", help="smaller inputs, shorter runs: checks the benchmark works")
    ap.add_argument("-F", "--freq", type=int, default=4999, help="perf's sampling frequency (default 4999 Hz)")
    ap.add_argument("--seconds", type=float, default=None,
                    help="how long each profiled run of the plain build lasts, by repeating it "
                         "(default 1, --quick 0.3)")
    ap.add_argument("--call-graph", choices=("dwarf", "fp"), default="dwarf",
                    help="perf's stack walk (default dwarf: libc has no frame pointers, an fp chain through it "
                         "skips the caller; with --build o2, fp adds -fno-omit-frame-pointer to the builds)")
    ap.add_argument("--no-floor", dest="floor", action="store_false",
                    help="leave out the floor (o2: perf on each instrumented build's floor binary; noinline: perf "
                         "on the instrumented build under cgprof, the hooks' samples left out)")
    ap.add_argument("--time", choices=("exact", "sample", "both"), default="both",
                    help="cgprof's clocks (CGPROF_TIME) set explicitly: exact, sample (at perf's frequency), or both "
                         "(default); o2 runs the runtime's default as well")
    ap.add_argument("--cgprof-env", action="append", default=[], metavar="VAR=VALUE",
                    help="a runtime setting for cgprof's runs (repeatable)")
    args = ap.parse_args(argv)
    if args.seconds is None:
        args.seconds = 0.3 if args.quick else 1.0
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    names = [n for n in args.programs.split(",") if n]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        ap.error("unknown program %s (known: %s)" % (", ".join(unknown), ", ".join(PROGRAMS)))
    # perf's cpu-clock counts time on the CPU: cgprof's time off it apart
    # (CGPROF_OFF_CPU=1), and its paths for inclusive times as perf's
    # (CGPROF_PATHS=1); --cgprof-env CGPROF_OFF_CPU=0 compares wall time.
    # o2 samples at perf's frequency in every run: the runtime reads it in
    # sampled time only, which its default may be
    extra = {"CGPROF_OFF_CPU": "1", "CGPROF_PATHS": "1"}
    if args.build == "o2":
        extra["CGPROF_SAMPLE_HZ"] = str(args.freq)
    given = {}
    for kv in args.cgprof_env:
        k, sep, v = kv.partition("=")
        if not sep or not k.startswith("CGPROF_"):
            ap.error("--cgprof-env %r: expected CGPROF_VAR=VALUE" % kv)
        given[k] = v
    extra.update(given)
    why = perf_can_sample()
    if why:
        say("accuracy: skipped, perf cannot sample here: " + why)
        return 0
    if not os.path.exists(LIB):
        ap.error("%s is not built (meson setup build && ninja -C build)" % LIB)
    flags = FLAGS[args.build] + (["-fno-omit-frame-pointer"] if args.build == "o2" and args.call_graph == "fp" else [])
    cfg = Config(args.build, flags, args.quick)
    if args.build == "o2":
        variants = variants_o2(args, extra)
        say("cgprof accuracy (--build o2): cgprof on each instrumented build against perf (cpu-clock, -F %d, "
            "--call-graph %s, samples named by their symbols) on its floor binary and on the plain build"
            % (args.freq, args.call_graph))
        say("flags: %s; instrumented: + -finstrument-functions (C++ with gcc: + %s), and with clang also "
            "+ -finstrument-functions-after-inlining" % (" ".join(flags), CXX_EXCLUDE))
        say("library: %s" % LIB)
        say("every cgprof run: %s" % " ".join("%s=%s" % kv for kv in extra.items()))
        say("cgprof settings compared (besides those): %s" % ", ".join(label for label, _ in variants))
    else:
        extra, variants = variants_noinline(args, extra)
        say("cgprof accuracy (--build noinline): perf (cpu-clock, -F %d, --call-graph %s) on the plain build against "
            "cgprof on the instrumented one" % (args.freq, args.call_graph))
        say("flags of both builds: %s (+ -finstrument-functions%s)" % (" ".join(flags), "; C++: " + CXX_EXCLUDE))
        say("cgprof settings: %s" % (", ".join("%s=%s" % kv for kv in extra.items()) or "default"))
        for label, env in variants:
            say("  %-12s %s" % (label + ":", ", ".join("%s=%s" % kv for kv in env.items() if kv[0] not in extra)))
    say("load average at start: %s (%d CPUs)" % (loadavg(), os.cpu_count()))
    tmp = tempfile.mkdtemp(prefix="cgprof-accuracy-")
    results = []
    try:
        for n in names:
            ptmp = os.path.join(tmp, n)
            os.makedirs(ptmp)
            try:
                prog = PROGRAMS[n](ptmp, cfg)
            except Exception as e:  # a program that cannot be built or fetched: said, the others go on
                if type(e).__name__ == "SkipTest":
                    say("\n%s: skipped: %s" % (n, e))
                    continue
                raise
            if args.build == "o2":
                if args.floor:
                    make_floors(prog, ptmp)
                res = measure_o2(prog, args, ptmp, variants)
                report_o2(res, variants, flags)
            else:
                res = measure_noinline(prog, args, ptmp, variants)
                report_noinline(res, variants)
            results.append(res)
            shutil.rmtree(ptmp, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.build == "o2":
        summary_o2(results, variants)
        targets_o2(results, variants, ", with " + " ".join(args.cgprof_env) if args.cgprof_env else "")
        targets_syscalls(results, variants)
    else:
        summary_noinline(results, variants)
    say("load average at end: %s" % loadavg())
    return 0  # a MISS is a finding, not a failure


if __name__ == "__main__":
    sys.exit(main())
