#!/usr/bin/env python3
"""cgprof's accuracy benchmark: cgprof's times against a sampling profiler's.

    python3 tests/bench/accuracy.py [--programs a,b] [--runs N] [--quick] [-F HZ]
                                    [--time exact|sample|both]
                                    [--call-graph dwarf|fp] [--cgprof-env VAR=VALUE]...
    scripts/bench --accuracy [the same options]

Each program is built twice with the same flags (FLAGS below: -O2 with no
inlining and no sibling calls, so that every call of the source is a real
frame in both builds; frame pointers and debug info for perf), once plain
and once with -finstrument-functions. The plain build is profiled with
`perf record -e cpu-clock --call-graph dwarf` (a software event: it works in
virtual machines), the instrumented one with cgprof (libcgprof.so preloaded,
default settings but what --cgprof-env adds).

Both profiles are reduced to the same functions: the program's instrumented
functions (those of its own objects whose code calls
__cyg_profile_func_enter in the instrumented build). A perf sample is
charged to the innermost such function of its call chain, as cgprof charges
the time spent in uninstrumented code (libc, zlib) to its caller's self
time; samples without one (the dynamic loader, before main, the shell that
repeats a run) are dropped and counted, and among them those whose chain
perf unwound only part way (it does not end where a process or a thread
starts: they were the program's, perf lost their frames; with jq, in
libc's malloc in some runs and not in others). perf names inlined frames
(--inline): a function inlined in spite of -fno-inline (always_inline) keeps
its hooks, and cgprof shows it apart.

cgprof runs with CGPROF_OFF_CPU=1 and CGPROF_PATHS=1 (and what --cgprof-env
adds or overrides): perf's cpu-clock counts time on the CPU, so cgprof's time
off it (descheduled, blocked: a thread waiting for its work) is left out and
its share printed; its self time per function is summed over all threads'
files (cgproflib.report.summarize), its time in functions outside the set
(the libc function named as the caller of a callback) left out and counted.

Per program it prints: the samples, the total variation distance (TVD) of
the self-time shares, half the sum over the functions of |perf share -
cgprof share|, in percentage points (0: the same profile; 100: nothing in
common); the 5 functions whose shares differ most; and the TVD of the
inclusive shares of the 10 functions with the most inclusive time under perf
(perf: the fraction of samples whose chain holds the function, once per
sample; cgprof: the self time of every call path through the function, from
the path files, the time off the CPU left out, over the same total), the same half sum over those 10 (inclusive shares
do not add up to 100: this one can exceed 100).

A run of each program is repeated (in one perf record, as many times under
cgprof; at most 300 times) until the plain build has run about --seconds
(default 1 s: about 5,000 samples at 4999 Hz, a share's standard error at
most 0.7 points). The examples threads and cxx run for 2 ms, mostly the
dynamic loader's start-up: they give few samples in the program's own
functions (cxx: a handful), and their figures are mostly noise.

The error bar: the same TVDs between two perf runs of the plain build (and
between two cgprof runs): what sampling noise and run-to-run variation alone
give. A difference between perf and cgprof well above it is cgprof's error.

The floor (per clock; --no-floor leaves it out): perf on the instrumented
build running under cgprof with the same settings, its samples in cgprof's
hooks (libcgprof.so, the hooks' PLT entries) left out, the rest charged as
perf's are. That is where the program's own instructions spent their time
with the hooks between them: the hooks change how the code around them
runs (a store that fed the next call's load has long retired when the
next call comes), so no accounting of cgprof's can come closer to perf on
the plain build than the floor, but by guessing those effects.

cgprof runs with each clock (--time, default both): CGPROF_TIME=exact
(every call timed) and CGPROF_TIME=sample (calls counted, the thread's CPU
time sampled, at perf's frequency: CGPROF_SAMPLE_HZ=-F); with the launcher
listing --compensate, each with CGPROF_COMPENSATE=1 ("comp": in exact time
the calibrated cost of the hooks subtracted per call, in sampled time the
samples that land in the hooks left out) and =0 ("raw"), all TVDs printed
side by side. When perf cannot sample here (not installed, no
permission, no kernel support), it says so and exits 0.

Programs (--programs, comma-separated; default all):
  workload  tests/bench/workload.c, 1 thread (scripts/bench's)
  workload2 the same, 2 threads
  basic     examples/basic.c (fib 30, a call tree, qsort, a loop)
  threads   examples/threads.c (4 worker threads), repeated
  cxx       examples/cxx.cpp, repeated
  jq        jq 1.6 (Debian's source, tests/integration/test_realprog.py's
            cache and recipe), five filters on 5 MB of JSON
  xz        xz-utils 5.4.1 (Debian's source, fetched the same way), -T2
            (two compressing threads) -3 on 6 MB of text
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
LIB = os.path.join(BUILD, "runtime", "libcgprof.so")
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

# The flags of both builds of every program (C++ adds the exclusion of
# libstdc++'s headers from instrumentation, as examples/meson.build does).
# -fno-inline: an inlined call has no frame under perf but keeps its hooks
# under -finstrument-functions, so the two profiles would name different
# functions. -fno-optimize-sibling-calls: a tail call removes its caller's
# frame under perf; the instrumented build makes none (its exit hook comes
# after the call).
FLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls"]
CXX_EXCLUDE = "-finstrument-functions-exclude-file-list=/usr/include"
TOP_INCLUSIVE = 10
TOP_DIFFS = 5


def say(msg=""):
    print(msg, flush=True)


def log(msg):
    print("accuracy: " + msg, file=sys.stderr, flush=True)


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
    them)."""
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


# where the chain of a thread ends when it is whole
OUTERMOST = {"_start", "clone", "clone3", "start_thread", "__libc_start_main", "__libc_start_call_main", "[unknown]"}


def perf_profile(data, dsos, funcs, hooks=False):
    """The samples of perf.data charged as cgprof charges time. hooks: the
    run was the instrumented build under cgprof (the floor): a sample in
    libcgprof.so or in a PLT entry of a hook is cgprof's, left out and
    counted (prof.hooks)."""
    err = open(data + ".err", "w+")
    # --inline: a function inlined in spite of -fno-inline (always_inline,
    # as xz's lzma_memcmplen) keeps its hooks, and cgprof shows it apart
    # (README, "Inlined calls"); perf names it from the line tables, as a
    # frame of dso "inlined" before its host's
    p = subprocess.Popen(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso", "--inline"],
                         stdout=subprocess.PIPE, stderr=err, text=True, errors="replace")
    prof = Profile()
    frame = re.compile(r"^\s+[0-9a-f]+ (.*) \((.*)\)$")

    def sample(chain):
        if hooks:
            first = [c for c in chain if c[1] != "inlined"][:1]
            if first and (os.path.basename(first[0][1]).startswith("libcgprof") or
                          first[0][0].startswith("__cyg_profile_func_")):
                prof.hooks += 1
                return
        # an inlined frame is in the object of the frame it is inlined into
        # (the next one that is not inlined)
        fixed, host = [], None
        for sym, dso in reversed(chain):
            if dso == "inlined":
                dso = host or dso
            else:
                host = dso
            fixed.append((sym, dso))
        chain = fixed[::-1]
        ours = []
        for sym, dso in chain:
            if os.path.basename(dso) in dsos:
                s = norm(re.sub(r"\+0x[0-9a-f]+$", "", sym))
                if s in funcs:
                    ours.append(s)
        if not ours:
            prof.dropped += 1
            user = [(sym, dso) for sym, dso in chain if not dso.startswith("[")]
            # a chain that does not end where a process or thread starts:
            # the unwinding stopped (in libc's malloc, seen with jq)
            if user and "ld-linux" not in user[-1][1] and \
                    re.sub(r"\+0x[0-9a-f]+$", "", user[-1][0]) not in OUTERMOST:
                prof.truncated += 1
            return
        prof.total += 1
        prof.self[ours[0]] += 1
        for s in set(ours):
            prof.incl[s] += 1

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
    return prof


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


def tvd(a, b):
    keys = set(a) | set(b)
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys)


def tvd_incl(a, b, ref):
    """Half the sum of the inclusive shares' differences over the top
    functions of ref (perf's)."""
    top = sorted(ref, key=lambda k: (-ref[k], k))[:TOP_INCLUSIVE]
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in top)


# ---- the programs ------------------------------------------------------------------


class Program:
    """A program's two builds and its run: commands (argv lists), each run
    `repeat` times under one perf record and as many times under cgprof."""

    def __init__(self, name, what, plain_objs, instr_objs, commands, cwd, threads):
        self.name, self.what = name, what
        self.plain_objs, self.instr_objs = plain_objs, instr_objs
        self.commands, self.cwd, self.threads = commands, cwd, threads
        self.repeat = 1
        self.preload = []  # uninstrumented libraries preloaded in both builds' runs


def build_small(tmp, name, source, cxx=False, defines=()):
    cc = "g++" if cxx else "gcc"
    out = {}
    for tag, extra in (("plain", []), ("instr", ["-finstrument-functions"] + ([CXX_EXCLUDE] if cxx else []))):
        exe = os.path.join(tmp, "%s-%s" % (name, tag))
        nice_build([cc] + FLAGS + extra + list(defines) + ["-o", exe, source, "-lpthread"])
        out[tag] = exe
    return out["plain"], out["instr"]


def prog_workload(tmp, quick, threads):
    p, i = build_small(tmp, "workload", os.path.join(ROOT, "tests", "bench", "workload.c"))
    units = "%d" % (560 if quick else 2240)
    return Program("workload" if threads == 1 else "workload%d" % threads,
                   "tests/bench/workload.c, %s units, %d thread%s" % (units, threads, "s" if threads > 1 else ""),
                   [p], [i], [[p, units, str(threads)]], tmp, threads)


def prog_example(tmp, quick, name):
    src = os.path.join(ROOT, "examples", name + (".cpp" if name == "cxx" else ".c"))
    p, i = build_small(tmp, name, src, cxx=name == "cxx")
    args = {"basic": ["30"]}.get(name, [])
    what = {"basic": "examples/basic.c 30", "threads": "examples/threads.c (4 workers)",
            "cxx": "examples/cxx.cpp"}[name]
    return Program(name, what, [p], [i], [[p] + args], tmp, 5 if name == "threads" else 1)


JQ_FILTERS = ["map(.name) | sort | unique", "group_by(.k) | map({k: .[0].k, n: length})",
              'map(.text | ascii_downcase | split(" ") | map(select(length > 3)) | join("-")) | unique | length',
              "reduce .[] as $r ({}; .[$r.k] += $r.y)", "map(tojson | fromjson) == ."]


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


def prog_jq(tmp, quick):
    trp = realprog()
    src, what = trp.get_source()
    inst = {}
    for tag, extra in (("plain", ""), ("instr", " -finstrument-functions")):
        trp.CFLAGS = dict(trp.CFLAGS, gcc=" ".join(FLAGS) + extra)
        log("jq, %s build (%s; cached after the first run)" % (tag, trp.CFLAGS["gcc"]))
        inst[tag], _ = trp.build(src, "gcc")
    data = os.path.join(tmp, "input.json")
    trp.make_input(data, 4000 if quick else 12000)
    objs = {t: [os.path.join(inst[t], "bin", "jq")] + sorted(glob.glob(os.path.join(inst[t], "lib", "libjq.so.*.*")))
            for t in inst}
    filters = JQ_FILTERS[:2] if quick else JQ_FILTERS
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
                   objs["plain"], objs["instr"], [[objs["plain"][0], f, data] for f in filters], tmp, 1)
    prog.preload = [seed]
    return prog


def apt_source(trp, package, directory):
    """package's bookworm source, fetched with test_realprog's private apt
    configuration (its lists, already updated by it, or updated here)."""
    dscs = [d for d in glob.glob(os.path.join(directory, package + "_*.dsc")) if trp.dsc_complete(d)]
    if dscs:
        return max(dscs, key=os.path.getmtime)
    return trp.apt_download(directory, package)


XZ_CONFIGURE = ["--disable-shared", "--disable-nls", "--disable-doc", "--disable-scripts", "--disable-xzdec",
                "--disable-lzmadec", "--disable-lzmainfo", "--disable-lzma-links"]


def prog_xz(tmp, quick):
    """xz-utils from Debian's source (test_realprog's apt configuration and
    cache), configure and make at low priority, liblzma linked in
    (--disable-shared: the program's one object), once per flags."""
    trp = realprog()
    cache = os.path.join(trp.CACHE, "xz-utils")
    os.makedirs(os.path.join(cache, "download"), exist_ok=True)
    dsc = apt_source(trp, "xz-utils", os.path.join(cache, "download"))
    src = os.path.join(cache, "src", os.path.basename(dsc)[:-4])
    if not os.path.exists(os.path.join(src, ".ready")):
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(os.path.dirname(src), exist_ok=True)
        trp.unpack_dsc(dsc, src)
        open(os.path.join(src, ".ready"), "w").close()
    objs = {}
    for tag, extra in (("plain", []), ("instr", ["-finstrument-functions"])):
        flags = " ".join(FLAGS + extra)
        bdir = os.path.join(cache, "build-" + tag)
        exe = os.path.join(bdir, "src", "xz", "xz")
        stamp = os.path.join(bdir, "flags")
        if not (os.path.exists(exe) and os.path.exists(stamp) and open(stamp).read() == flags + " ".join(XZ_CONFIGURE)):
            shutil.rmtree(bdir, ignore_errors=True)
            os.makedirs(bdir)
            log("xz, %s build (%s; cached after the first run)" % (tag, flags))
            nice_build([os.path.join(src, "configure")] + XZ_CONFIGURE + ["CFLAGS=" + flags], cwd=bdir)
            nice_build(["make", "-j2"], cwd=bdir)
            with open(stamp, "w") as f:
                f.write(flags + " ".join(XZ_CONFIGURE))
        objs[tag] = [exe]
    data = os.path.join(tmp, "xz-input")
    mb = 2 if quick else 6
    make_text(data, mb)
    # 1 MiB blocks: with -T2 both threads compress from the start
    return Program("xz", "xz %s -T2 -3 --block-size=1MiB on %d MB of text" % (os.path.basename(dsc)[9:-4], mb),
                   objs["plain"], objs["instr"],
                   [[objs["plain"][0], "-T2", "-3", "--block-size=1MiB", "-c", data]], tmp, 3)


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


PROGRAMS = {
    "workload": lambda t, q: prog_workload(t, q, 1),
    "workload2": lambda t, q: prog_workload(t, q, 2),
    "basic": lambda t, q: prog_example(t, q, "basic"),
    "threads": lambda t, q: prog_example(t, q, "threads"),
    "cxx": lambda t, q: prog_example(t, q, "cxx"),
    "jq": prog_jq,
    "xz": prog_xz,
}


# ---- the runs ----------------------------------------------------------------------


def clean_env(extra=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
    e["LC_ALL"] = "C"
    e.update(extra or {})
    return e


def instr_command(prog, argv):
    m = dict(zip(prog.plain_objs, prog.instr_objs))
    return [m.get(a, a) for a in argv]


def script_of(prog, commands):
    """One shell command running the commands `repeat` times, their output
    thrown away."""
    body = "; ".join(" ".join(shlex.quote(a) for a in c) + " >/dev/null" for c in commands)
    return "i=0; while [ $i -lt %d ]; do %s; i=$((i+1)); done" % (prog.repeat, body)


def calibrate(prog, target):
    """repeat: how many times the commands run for the plain build to take
    about target seconds."""
    times = []
    for _ in range(3):  # the fastest of 3: a run slowed by the machine's load would repeat too few
        t = time.perf_counter()
        for c in prog.commands:
            subprocess.run(c, cwd=prog.cwd, env=clean_env({"LD_PRELOAD": ":".join(prog.preload)} if prog.preload
                                                          else None), stdout=subprocess.DEVNULL, check=True)
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
    return e


def perf_run(prog, tmp, i, freq, callgraph, funcs):
    data = os.path.join(tmp, "%s-perf%d.data" % (prog.name, i))
    t = time.perf_counter()
    perf_record(prog, data, freq, callgraph, prog.commands,
                clean_env({"LD_PRELOAD": ":".join(prog.preload)} if prog.preload else None))
    wall = time.perf_counter() - t
    dsos = {os.path.basename(o) for o in prog.plain_objs}
    prof = perf_profile(data, dsos, funcs)
    os.unlink(data)
    return prof, wall


def floor_run(prog, tmp, i, freq, callgraph, funcs, env):
    """perf on the instrumented build running under cgprof (env), the
    samples in cgprof's hooks left out: what the program's own
    instructions took with the hooks between them. No accounting of
    cgprof's can come closer to perf on the plain build than this, but by
    guessing how the hooks slowed or sped up the code around them."""
    data = os.path.join(tmp, "%s-floor%d.data" % (prog.name, i))
    d = os.path.join(tmp, "%s-floor%d" % (prog.name, i))
    os.makedirs(d)
    perf_record(prog, data, freq, callgraph, [instr_command(prog, c) for c in prog.commands],
                cgprof_env(prog, env, d))
    prof = perf_profile(data, {os.path.basename(o) for o in prog.instr_objs}, funcs, hooks=True)
    os.unlink(data)
    shutil.rmtree(d, ignore_errors=True)
    return prof


def cgprof_run(prog, tmp, i, env, funcs):
    d = os.path.join(tmp, "%s-cgprof%d-%s" % (prog.name, i, "-".join("%s" % v for v in env.values()) or "default"))
    os.makedirs(d)
    e = cgprof_env(prog, env, d)
    cmds = [instr_command(prog, c) for c in prog.commands]
    t = time.perf_counter()
    said = set()
    for _ in range(prog.repeat):
        for c in cmds:
            p = subprocess.run(c, cwd=prog.cwd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               errors="replace")
            if p.returncode:
                raise RuntimeError("%s under cgprof failed (%d): %s" % (" ".join(c), p.returncode, p.stderr[-2000:]))
            for line in p.stderr.splitlines():  # cgprof's notes, once for the repeated runs
                if line.startswith("cgprof") and line not in said:
                    said.add(line)
                    log("%s under cgprof: %s" % (prog.name, line))
    wall = time.perf_counter() - t
    prof = cgprof_profile(d, funcs)
    shutil.rmtree(d, ignore_errors=True)
    return prof, wall


def has_compensate():
    launcher = os.path.join(BUILD, "scripts", "cgprof")
    try:
        out = subprocess.run([launcher, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    except OSError:
        return False
    return "--compensate" in out


def fmt_top(perf_s, cg_s, what="cgprof"):
    keys = set(perf_s) | set(cg_s)
    top = sorted(keys, key=lambda k: (-abs(perf_s.get(k, 0) - cg_s.get(k, 0)), k))[:TOP_DIFFS]
    return ["    %-40s perf %5.1f%%  %s %5.1f%%  %+5.1f" % (k[:40], perf_s.get(k, 0), what, cg_s.get(k, 0),
                                                      cg_s.get(k, 0) - perf_s.get(k, 0)) for k in top]


def measure(prog, args, tmp, variants):
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
            tm = env.get("CGPROF_TIME", "exact")
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
           "per_run": [(p.total, p.dropped, p.truncated) for p in perfs], "funcs": len(funcs),
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


def report(res, variants):
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated, of: " + ", ".join(PROGRAMS))
    ap.add_argument("--runs", type=int, default=2, help="perf and cgprof runs per program (default 2: the error bar "
                    "compares run 1 with run 2; the figures pool all runs)")
    ap.add_argument("--quick", action="store_true", help="smaller inputs, shorter runs: checks the benchmark works")
    ap.add_argument("-F", "--freq", type=int, default=4999, help="perf's sampling frequency (default 4999 Hz)")
    ap.add_argument("--seconds", type=float, default=None,
                    help="how long each profiled run of the plain build lasts, by repeating it (default 1, --quick 0.3)")
    ap.add_argument("--call-graph", choices=("dwarf", "fp"), default="dwarf",
                    help="perf's stack walk (default dwarf: libc has no frame pointers, an fp chain through it "
                         "skips the caller)")
    ap.add_argument("--no-floor", dest="floor", action="store_false",
                    help="leave out the floor: perf on the instrumented build under cgprof, the hooks' samples "
                         "left out (per clock: what no accounting of cgprof's can beat)")
    ap.add_argument("--time", choices=("exact", "sample", "both"), default="both",
                    help="cgprof's clock (CGPROF_TIME): exact, sample (at perf's frequency), or both (default)")
    ap.add_argument("--cgprof-env", action="append", default=[], metavar="VAR=VALUE",
                    help="a runtime setting for cgprof's runs (repeatable)")
    args = ap.parse_args(argv)
    if args.seconds is None:
        args.seconds = 0.3 if args.quick else 1.0
    names = [n for n in args.programs.split(",") if n]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        ap.error("unknown program %s (known: %s)" % (", ".join(unknown), ", ".join(PROGRAMS)))
    # perf's cpu-clock counts time on the CPU: cgprof's time off it apart
    # (CGPROF_OFF_CPU=1), and its paths for inclusive times as perf's
    # (CGPROF_PATHS=1); --cgprof-env CGPROF_OFF_CPU=0 compares wall time
    extra = {"CGPROF_OFF_CPU": "1", "CGPROF_PATHS": "1"}
    for kv in args.cgprof_env:
        k, sep, v = kv.partition("=")
        if not sep or not k.startswith("CGPROF_"):
            ap.error("--cgprof-env %r: expected CGPROF_VAR=VALUE" % kv)
        extra[k] = v
    why = perf_can_sample()
    if why:
        say("accuracy: skipped, perf cannot sample here: " + why)
        return 0
    if not os.path.exists(LIB):
        ap.error("%s is not built (meson setup build && ninja -C build)" % LIB)
    # each clock asked for (CGPROF_TIME: exact, every call timed; sample,
    # the thread's CPU time sampled at perf's frequency), each with and
    # without overhead compensation (CGPROF_COMPENSATE)
    times = ["exact", "sample"] if args.time == "both" else [args.time]
    if "CGPROF_TIME" in extra:
        times = [extra.pop("CGPROF_TIME")]
    variants = []
    for tm in times:
        env = dict(extra, CGPROF_TIME=tm)
        if tm == "sample":
            env.setdefault("CGPROF_SAMPLE_HZ", str(args.freq))
        if has_compensate() and "CGPROF_COMPENSATE" not in extra:
            variants += [(tm + " comp", dict(env, CGPROF_COMPENSATE="1")), (tm + " raw", dict(env, CGPROF_COMPENSATE="0"))]
        else:
            variants.append((tm, env))
    say("cgprof accuracy: perf (cpu-clock, -F %d, --call-graph %s) on the plain build against cgprof on the "
        "instrumented one" % (args.freq, args.call_graph))
    say("flags of both builds: %s (+ -finstrument-functions%s)" % (" ".join(FLAGS), "; C++: " + CXX_EXCLUDE))
    say("cgprof settings: %s" % (", ".join("%s=%s" % kv for kv in extra.items()) or "default"))
    for label, env in variants:
        say("  %-12s %s" % (label + ":", ", ".join("%s=%s" % kv for kv in env.items() if kv[0] not in extra)))
    say("load average at start: %s (%d CPUs)" % (loadavg(), os.cpu_count()))
    tmp = tempfile.mkdtemp(prefix="cgprof-accuracy-")
    results = []
    try:
        for n in names:
            try:
                prog = PROGRAMS[n](tmp, args.quick)
            except Exception as e:  # a program that cannot be built or fetched: said, the others go on
                if type(e).__name__ == "SkipTest":
                    say("\n%s: skipped: %s" % (n, e))
                    continue
                raise
            res = measure(prog, args, tmp, variants)
            report(res, variants)
            results.append(res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
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
    say("load average at end: %s" % loadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
