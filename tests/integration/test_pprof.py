"""cgprof pprof (python/cgproflib/pprof.py): a run's profile.proto, read
back by `go tool pprof` (Debian's golang-go), offline, against the files
of the same run.

- With path files (CGPROF_PATHS=1): -top per function (calls with
  -sample_index=calls, self time, cum of self time, flat of inclusive time)
  equal to the path files' sums, and the calls to `cgprof report`'s; -traces
  per sample (thread, part, stack) equal to the path files' nodes, calls and
  self time, as whole sets; -tags and -tagfocus per thread equal to each
  thread's path files.
- The same run's Callgrind files alone (stacks estimated from the arcs):
  -top equal to the Callgrind files' self time and calls per function and to
  `cgprof report`'s, a sample labelled stack=estimated when a function on it
  has several callers (else exact: decided by the arcs), and -traces per
  thread and part adding up to each part's self time per function.
- A run dumped four times (several parts a thread: one sample per part and
  path), off-CPU time (CGPROF_OFF_CPU=1, where the kernel allows it), the
  mappings' build ids against readelf.

Needs `go` (scripts/deps.sh installs golang-go): without it the tests fail,
unless CGPROF_NO_GO=1, which skips them. go runs with HOME and GOCACHE in a
scratch directory, GOTOOLCHAIN=local and GOPROXY=off: nothing is fetched.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cgtest  # noqa: E402
from cgproflib import paths, reader  # noqa: E402
from test_dumps import signal_phases  # noqa: E402

LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))
SEPARATOR = "-----------+-------------------------------------------------------"


def require_go():
    """For setUpClass: skips with CGPROF_NO_GO=1; fails without go
    otherwise (CI installs it: scripts/deps.sh)."""
    if os.environ.get("CGPROF_NO_GO") == "1":
        raise unittest.SkipTest("CGPROF_NO_GO=1: the pprof tests need go tool pprof")
    if not shutil.which("go"):
        raise AssertionError("no go on PATH: the pprof tests read the file with go tool pprof (Debian: apt-get "
                             "install golang-go; scripts/deps.sh installs it; CGPROF_NO_GO=1 skips these tests)")


class GoPprof:
    def __init__(self, test):
        self.home = tempfile.mkdtemp(prefix="cgprof-go-")
        test.addCleanup(shutil.rmtree, self.home, ignore_errors=True)
        self.env = dict(os.environ, HOME=self.home, GOCACHE=os.path.join(self.home, "cache"),
                        GOPATH=os.path.join(self.home, "go"), GOTOOLCHAIN="local", GOPROXY="off",
                        PPROF_TMPDIR=os.path.join(self.home, "pprof"))
        self.test = test

    def __call__(self, *args):
        p = subprocess.run(["go", "tool", "pprof"] + list(args), env=self.env, capture_output=True, text=True,
                           timeout=cgtest.limit(300))
        self.test.assertEqual(p.returncode, 0, "go tool pprof %s: %s" % (" ".join(args), p.stderr))
        return p.stdout

    def top(self, f, *opts):
        """{function: (flat, cum)} of -top, every node (values as integers:
        -unit=ns prints nanoseconds)."""
        out = self("-top", "-nodefraction=0", "-nodecount=1000000", "-unit=ns", *opts, f)
        rows, seen = {}, False
        for line in out.splitlines():
            if re.match(r"\s*flat\s+flat%\s+sum%\s+cum\s+cum%", line):
                seen = True
                continue
            if not seen:
                continue
            m = re.match(r"\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+)$", line)
            self.test.assertTrue(m, line)
            rows[m.group(3)] = (value(m.group(1)), value(m.group(2)))
        self.test.assertTrue(seen, out)
        return rows

    def traces(self, f, *opts):
        """[(labels {key: value}, value, stack root first)] of -traces."""
        out = self("-traces", "-unit=ns", *opts, f)
        blocks = out.split(SEPARATOR + "\n")[1:]
        got = []
        for b in blocks:
            labels, v, stack = {}, None, []
            for line in b.splitlines():
                if line[10:11] == ":":
                    labels[line[:10].strip()] = line[13:]
                elif line.startswith(" " * 13):
                    stack.append(line[13:])
                elif line.strip():
                    # "%10s   %s": the sample's value and its leaf (a value
                    # wider than 10 pushes the name right)
                    m = re.match(r"\s*(\S+)   (.+)$", line)
                    self.test.assertTrue(m and v is None, b)
                    v = value(m.group(1))
                    stack.append(m.group(2))
            if v is not None:
                got.append((labels, v, tuple(reversed(stack))))
        return got


def value(text):
    return int(text[:-2] if text.endswith("ns") else text)


def run_launcher(test, *args, cwd=None):
    p = subprocess.run([LAUNCHER] + list(args), cwd=cwd, env=cgtest.clean_environ(), capture_output=True, text=True,
                       timeout=cgtest.limit(300))
    test.assertEqual(p.returncode, 0, p.stderr)
    return p.stdout


def report_flat(test, what):
    """`cgprof report`'s flat profile, every function: {name: (self ms as
    printed, calls as printed, inclusive ms as printed)}."""
    out = run_launcher(test, "report", "--top=0", what)
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s*([0-9.]+)\s+[0-9.]+\s+([0-9.]+)\s+(\S+)\s+(.+?)  \[", line)
        if m:
            rows[m.group(4)] = (m.group(2), m.group(3), m.group(1))
    test.assertTrue(rows, out)
    return rows


def path_files(d):
    return [paths.read(p) for p in sorted(glob.glob(os.path.join(d, "callgrind.paths.*")))]


def per_function(pfs):
    """From path files: per function, calls, self, inclusive (the flats),
    and the self time of the paths it is on (self time's cum)."""
    calls, self_, incl, cum = {}, {}, {}, {}
    for pf in pfs:
        for names, c, i, s in pf.paths:
            f = names[-1]
            calls[f] = calls.get(f, 0) + c
            self_[f] = self_.get(f, 0) + s
            incl[f] = incl.get(f, 0) + i
            for g in set(names):
                cum[g] = cum.get(g, 0) + s
    nz = lambda d: {k: v for k, v in d.items() if v}  # noqa: E731
    return nz(calls), nz(self_), nz(incl), nz(cum)


def callgrind_per_function(files):
    """From Callgrind files: self time and calls per function name."""
    self_, calls = {}, {}
    for f in files:
        d = reader.digest(f)
        for (name, _obj), v in d.self_cost.items():
            self_[name] = self_.get(name, 0) + v
        for (_caller, callee, _fl, _line), (n, _c) in d.arcs.items():
            calls[callee[0]] = calls.get(callee[0], 0) + n
    nz = lambda d: {k: v for k, v in d.items() if v}  # noqa: E731
    return nz(self_), nz(calls)


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_go()

    def setUp(self):
        self.go = GoPprof(self)

    def run_paths(self, argv, env=None):
        """argv run with CGPROF_PATHS=1 (and env): its directory."""
        e = {"CGPROF_PATHS": "1"}
        e.update(env or {})
        run = cgtest.run_preloaded(self, argv, env=e)
        self.assertEqual(run.returncode, 0, run.stderr)
        return run.directory, run.stderr

    def run_phases_dumped(self, dumps):
        """tests/progs/phases with CGPROF_PATHS=1, dumped by signal while it
        runs (test_dumps.signal_phases): its directory."""
        run = signal_phases(self, env={"CGPROF_PATHS": "1"}, signals=dumps)
        rc, _, err = run.finish()
        self.assertEqual(rc, 0, err)
        return run.dir, err

    def pprof(self, what, cwd=None):
        out = os.path.join(tempfile.mkdtemp(prefix="cgprof-pprof-"), "prof.pb.gz")
        self.addCleanup(shutil.rmtree, os.path.dirname(out), ignore_errors=True)
        self.assertEqual(run_launcher(self, "pprof", "-o", out, what, cwd=cwd), out + "\n")
        return out

    def arcs_only(self, d):
        """A directory with the run's Callgrind parts alone."""
        arcs = os.path.join(d, "arcs")
        os.mkdir(arcs)
        for f in glob.glob(os.path.join(d, "callgrind.out.*")):
            shutil.copy(f, arcs)
        return arcs

    # ---- exact: the path files --------------------------------------------------------

    def check_exact(self, d):
        f = self.pprof(d)
        pfs = path_files(d)
        self.assertTrue(pfs)
        calls, self_, incl, cum = per_function(pfs)
        top = self.go.top(f)
        self.assertEqual({k: v[0] for k, v in top.items() if v[0]}, self_)
        self.assertEqual({k: v[1] for k, v in top.items() if v[1]}, cum)
        top_calls = self.go.top(f, "-sample_index=calls")
        self.assertEqual({k: v[0] for k, v in top_calls.items() if v[0]}, calls)
        top_incl = self.go.top(f, "-sample_index=inclusive_time")
        self.assertEqual({k: v[0] for k, v in top_incl.items() if v[0]}, incl)
        # cgprof report's calls: every function counted exactly (not a
        # visit, ">=", nor "-": uninstrumented code the path files fold into
        # its caller)
        rep = report_flat(self, d)
        self.assertEqual({k: int(c) for k, (_, c, _) in rep.items() if c.isdigit()}, calls)
        # and its inclusive times, which it reads from the path files (ms,
        # 3 decimals)
        self.assertEqual({k: i for k, (_, _, i) in rep.items() if k in incl},
                         {k: "%.3f" % (v / 1e6) for k, v in incl.items()})
        # per sample: the path files' nodes, as whole sets
        want = {}
        for pf in pfs:
            for names, c, i, s in pf.paths:
                if c or i or s:
                    want[(pf.pid, pf.thread, pf.part, names)] = (c, s)
        got = {}
        for kind in ("calls", "self_time"):
            for labels, v, stack in self.go.traces(f, "-sample_index=" + kind):
                self.assertEqual(labels["stack"], "exact")
                key = (int(labels["pid"]), int(labels["tid"]), int(labels["part"]), stack)
                got.setdefault(key, []).append(v)
        self.assertEqual({k: tuple(v) for k, v in got.items()}, want)
        return f, pfs

    # ---- estimated: the Callgrind files alone --------------------------------------------

    def check_estimated(self, d, labels_seen):
        arcs = self.arcs_only(d)
        f = self.pprof(arcs)
        files = sorted(glob.glob(os.path.join(arcs, "callgrind.out.*")))
        self_, calls = callgrind_per_function(files)
        top = self.go.top(f)
        self.assertEqual({k: v[0] for k, v in top.items() if v[0]}, self_)
        top_calls = self.go.top(f, "-sample_index=calls")
        self.assertEqual({k: v[0] for k, v in top_calls.items() if v[0]}, calls)
        # cgprof report's self times (ms, 3 decimals) and calls
        rep = report_flat(self, arcs)
        self.assertEqual({k: s for k, (s, _, _) in rep.items() if s != "0.000"},
                         {k: "%.3f" % (v / 1e6) for k, v in self_.items() if "%.3f" % (v / 1e6) != "0.000"})
        self.assertEqual({k: int(c.lstrip(">=")) for k, (_, c, _) in rep.items() if c != "-"}, calls)
        # each sample labelled as made, and each part's samples add up
        # to its self time per function
        want = {}
        for p in files:
            d_ = reader.digest(p)
            for (name, _obj), v in d_.self_cost.items():
                if v:
                    k = (d_.pid, d_.thread, d_.part, name)
                    want[k] = want.get(k, 0) + v
        # the functions with several callers in each part (recursion's
        # arcs aside, as estimate.py leaves them out): a stack through one
        # is an estimate, the others are decided by the arcs
        several = {}
        for p in files:
            prof = reader.load(p)
            callers = {}
            for c in prof.calls:
                if c.caller.name != c.callee.name:
                    callers.setdefault(c.callee.name, set()).add(c.caller.name)
            closing = {(g, fn) for fn, cs in callers.items() for g in cs
                       if fn in callers.get(g, ()) and len(callers[g]) == 1}
            d_ = reader.digest(p)
            several[(d_.pid, d_.thread, d_.part)] = {
                fn for fn, cs in callers.items() if len({g for g in cs if (g, fn) not in closing}) > 1}
        got, labelled = {}, set()
        for labels, v, stack in self.go.traces(f):
            part = (int(labels["pid"]), int(labels["tid"]), int(labels["part"]))
            self.assertEqual(labels["stack"], "estimated" if set(stack) & several[part] else "exact", stack)
            labelled.add(labels["stack"])
            if v:
                k = (int(labels["pid"]), int(labels["tid"]), int(labels["part"]), stack[-1])
                got[k] = got.get(k, 0) + v
        self.assertEqual(got, want)
        self.assertEqual(labelled, labels_seen)
        self.assertIn("stacks estimated from the arcs", self.go("-raw", f))
        return f


class Programs(Base):
    def test_inlined_frames(self):
        """CGPROF_INLINED=count: a call the compiler inlined (the files'
        '#inlined:' pairs) is a line of its caller's location, as pprof
        has inlined frames: every location's lines, innermost first, are
        a chain of the run's inlined calls, and every inlined call on a
        path is one (tests/progs/inlined, gcc and clang: sum_x's get_x;
        "nest": both in main, get_x in both). Without them (the default,
        fold: inlined calls have no frame) one line a location."""
        truth = {(): {("sum_x", "get_x")}, ("nest",): {("main", "both"), ("both", "get_x")}}
        for prog in ("inlined", "inlined-clang"):
            for args, want in truth.items():
                with self.subTest(prog=prog, args=args):
                    d, _ = self.run_paths([cgtest.prog(prog)] + list(args), env={"CGPROF_INLINED": "count"})
                    pairs = set()
                    for part in glob.glob(os.path.join(d, "callgrind.out.*")):
                        pairs |= reader.load(part, strict=True).inlined
                    self.assertEqual(pairs, want)
                    f = self.pprof(d)
                    raw = self.go("-raw", f)
                    locs = self.locations(raw)
                    chains = {tuple(c) for c in locs.values() if len(c) > 1}
                    self.assertTrue(chains)
                    for c in chains:
                        # innermost first: each line inlined into the next
                        self.assertTrue(all((c[i + 1], c[i]) in pairs for i in range(len(c) - 1)), c)
                    # every inlined call on a path is inside one location
                    seen = set()
                    for c in chains:
                        seen |= {(c[i + 1], c[i]) for i in range(len(c) - 1)}
                    self.assertEqual(seen, pairs)
                    # pprof's flat per function still the files' calls
                    top = self.go.top(f, "-sample_index=calls")
                    # (-top names an inlined frame "get_x (inline)")
                    self.assertEqual({k.replace(" (inline)", ""): v[0] for k, v in top.items() if v[0]},
                                     {k: int(c) for k, (_, c, _) in report_flat(self, d).items()
                                      if c not in ("-", "0")})
        d, _ = self.run_paths([cgtest.prog("inlined"), "nest"], env={"CGPROF_INLINED": "fold"})
        self.assertEqual([c for c in self.locations(self.go("-raw", self.pprof(d))).values() if len(c) > 1], [])

    @staticmethod
    def locations(raw):
        """{location id: [function of each line, innermost first]} of -raw."""
        out, cur = {}, None
        block = raw.split("\nLocations\n", 1)[1].split("\nMappings", 1)[0]
        for line in block.splitlines():
            m = re.match(r"\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
            if m:
                cur = out[m.group(1)] = [m.group(2)]
            elif line.strip() and cur is not None:
                cur.append(line.split()[0])
        return out

    def test_latency(self):
        """CGPROF_LATENCY=1: a sample per function and bucket of its calls'
        inclusive times (latency_calls), labelled with the bucket's middle:
        per function and bucket, the part's '#lat:' histogram exactly
        (examples/threads: five threads, fib's recursion)."""
        d, _ = self.run_paths([cgtest.example("threads")], env={"CGPROF_LATENCY": "1"})
        parts = sorted(glob.glob(os.path.join(d, "callgrind.out.*")))
        want = {}
        for part in parts:
            prof = reader.load(part, strict=True)
            for fn, h in prof.latency.items():
                for lo, n in h.buckets.items():
                    k = (prof.thread, fn, int(h.middle(lo)))
                    want[k] = want.get(k, 0) + n
        self.assertTrue(want)
        f = self.pprof(d)
        # -raw: each sample's values, location and labels
        raw = self.go("-raw", f)
        names = dict(re.findall(r"^\s+(\d+): 0x0 M=\d+ (\S+) ", raw, re.M))
        head = re.search(r"^calls/count .*$", raw, re.M).group(0).split()
        col = head.index("latency_calls/count")
        got = {}
        for m in re.finditer(r"^((?:\s+\d+)+): ((?:\d+ )+)\n((?:\s{16}.*\n)+)", raw, re.M):
            values = [int(v) for v in m.group(1).split()]
            lat = re.search(r"latency:\[(\d+) nanoseconds\]", m.group(3))
            if lat is None:
                self.assertEqual(values[col], 0)
                continue
            self.assertEqual(values[:col], [0] * col)
            (loc,) = m.group(2).split()
            tid = int(re.search(r"tid:\[(\d+) id\]", m.group(3)).group(1))
            k = (tid, names[loc], int(lat.group(1)))
            got[k] = got.get(k, 0) + values[col]
        self.assertEqual(got, want)
        # -top per function: the histograms' calls, fib's those of cgprof report
        top = self.go.top(f, "-sample_index=latency_calls")
        per_fn = {}
        for (_, fn, _), n in want.items():
            per_fn[fn] = per_fn.get(fn, 0) + n
        self.assertEqual({k: v[0] for k, v in top.items() if v[0]}, per_fn)
        rep = report_flat(self, d)
        self.assertEqual(per_fn["fib"], int(rep["fib"][1]))

    def test_flame(self):
        """tests/progs/flame: one thread, spin under two callers."""
        d, _ = self.run_paths([cgtest.prog("flame")])
        f, pfs = self.check_exact(d)
        # the stacks, as the program makes them
        got = {stack for _, _, stack in self.go.traces(f)}
        self.assertEqual(got, {("main",), ("main", "parse"), ("main", "parse", "tokenize"), ("main", "render"),
                               ("main", "render", "spin"), ("main", "layout"), ("main", "layout", "spin")})
        self.check_estimated(d, {"exact", "estimated"})

    def test_samples_of_no_self_time_said(self):
        """Issue 41: -traces listed samples of value 0 unexplained: the call
        paths whose time is all their callees' (main's, in sampled time,
        which no sample finds in main itself), kept for their calls and
        inclusive time. The profile's comments, which -traces prints
        first, say what they are and how many."""
        d, _ = self.run_paths([cgtest.prog("flame")], env={"CGPROF_TIME": "sample"})
        f = self.pprof(d)
        traces = self.go.traces(f)
        zero = [stack for _, v, stack in traces if not v]
        # which paths got no sample of their own is the samples' chance
        # (main, which only calls, most runs; parse or render, called
        # briefly): some always do in this program (its paths outnumber
        # the samples of its short calls)
        self.assertTrue(zero, traces)
        out = self.go("-traces", f)
        self.assertIn("samples of self_time 0 (%d of %d here, in -traces): call paths whose time is all their "
                      "callees'" % (len(zero), len(traces)), out)
        # each of them has calls: what it is kept for
        calls = {s for _, v, s in self.go.traces(f, "-sample_index=calls") if v}
        for stack in zero:
            self.assertIn(stack, calls)
        # a profile with none says nothing of them
        d, _ = self.run_paths([cgtest.prog("flame")], env={"CGPROF_TIME": "exact"})
        f = self.pprof(d)
        if all(v for _, v, _ in self.go.traces(f)):
            self.assertNotIn("samples of self_time 0", self.go("-traces", f))

    def test_lower_bounds_labelled(self):
        """Issue 38 (4): -sample_index=calls ranked throttled functions by
        the count at which they were throttled, unmarked: their samples
        are labelled calls=lower_bound (seen by -tags and -traces, left
        out by -tagignore), the exact ones not."""
        run = cgtest.run_preloaded(self, [cgtest.prog("throttle")],
                                   env={"CGPROF_THROTTLE": "500000:1000000", "CGPROF_TIME": "exact"})
        self.assertEqual(run.returncode, 0, run.stderr)
        f = self.pprof(run.directory)
        (prof,) = run.profiles()
        throttled = paths.throttled_names(prof.desc_value("Throttled"))
        self.assertEqual(throttled, {"tiny", "tinier"})
        traces = self.go.traces(f, "-sample_index=calls")
        leaves = {}
        for labels, v, stack in traces:
            if v:
                leaves.setdefault(stack[-1], set()).add(labels.get("calls"))
        for fn in ("tiny", "tinier", "main", "mid", "slow"):
            self.assertEqual(leaves.get(fn), {"lower_bound"} if fn in throttled else {None}, (fn, leaves))
        kept = self.go.top(f, "-sample_index=calls", "-tagignore=calls=lower_bound")
        self.assertEqual({fn for fn, (flat, _) in kept.items() if flat} & {"tiny", "tinier", "mid", "slow"},
                         {"mid", "slow"})
        self.assertIn("calls=lower_bound", self.go("-comments", f))

    def test_threads(self):
        """examples/threads: five threads, their labels; recursion (fib)."""
        d, _ = self.run_paths([cgtest.example("threads")])
        f, pfs = self.check_exact(d)
        self.check_estimated(d, {"exact"})
        # -tags: a tid per thread, the main thread's name (the workers have
        # none in their files)
        tags = self.go("-tags", f)
        tids = sorted({pf.thread for pf in pfs})
        self.assertEqual(len(tids), 5)
        m = re.search(r"\n tid: Total [^\n]*\n((?:\s+[^\n]*\(\s*[0-9.]+%\): [0-9]+\n)+)", tags)
        self.assertTrue(m, tags)
        self.assertEqual(sorted(int(x) for x in re.findall(r": ([0-9]+)\n", m.group(1))), tids)
        m = re.search(r"\n thread: Total [^\n]*\n((?:\s+[^\n]*\(\s*[0-9.]+%\): [^\n]+\n)+)", tags)
        self.assertTrue(m, tags)
        self.assertEqual(re.findall(r"%\): ([^\n]+)\n", m.group(1)), ["threads"])
        # per thread: -tagfocus picks its samples, whole sets
        for tid in tids:
            mine = [pf for pf in pfs if pf.thread == tid]
            _, self_, _, _ = per_function(mine)
            top = self.go.top(f, "-tagfocus=tid=%d" % tid)
            self.assertEqual({k: v[0] for k, v in top.items() if v[0]}, self_, tid)
        _, self_, _, _ = per_function([pf for pf in pfs if pf.thread == 1])
        top = self.go.top(f, "-tagfocus=thread=threads")
        self.assertEqual({k: v[0] for k, v in top.items() if v[0]}, self_)
        # the mapping: the program's object and its build id, as readelf
        # reads it; a location's file and line are its function's
        raw = self.go("-raw", f)
        build_id = re.search(r"Build ID: ([0-9a-f]+)", subprocess.run(
            ["readelf", "-n", cgtest.example("threads")], capture_output=True, text=True).stdout).group(1)
        self.assertRegex(raw, r"\n1: 0x0/0x0/0x0 %s %s \[FN\]\[FL\]\[LN\]\n" %
                         (re.escape(cgtest.example("threads")), build_id))
        src = os.path.join(cgtest.SOURCE_DIR, "examples", "threads.c")
        entry = {c.target_line for p in glob.glob(os.path.join(d, "callgrind.out.*"))
                 for c in reader.load(p).calls if c.callee.name == "fib"}
        self.assertEqual(len(entry), 1, entry)
        line, = entry
        self.assertRegex(raw, r"\n\s+[0-9]+: 0x0 M=1 fib %s:%d s=%d\n" % (re.escape(os.path.realpath(src)),
                                                                       line, line))
        self.assertIn("PeriodType: wall nanoseconds", raw)

    def test_merged_threads(self):
        """CGPROF_THREAD_EXIT=merge: the threads that ended are thread 00,
        whose samples are labelled tid 0."""
        d, _ = self.run_paths([cgtest.example("threads")], env={"CGPROF_THREAD_EXIT": "merge"})
        f, pfs = self.check_exact(d)
        self.assertEqual(sorted({pf.thread for pf in pfs}), [0, 1])
        _, self_, _, _ = per_function([pf for pf in pfs if pf.thread == 0])
        top = self.go.top(f, "-tagfocus=tid=0")
        self.assertEqual({k: v[0] for k, v in top.items() if v[0]}, self_)

    def test_parts(self):
        """tests/progs/phases dumped four times: a sample per part and
        path, each thread's parts apart."""
        d, _ = self.run_phases_dumped(4)
        f, pfs = self.check_exact(d)
        self.assertGreater(len({(pf.thread, pf.part) for pf in pfs}), 3)
        self.assertGreater(max(pf.part for pf in pfs), 1)
        self.check_estimated(d, {"exact"})

    def test_off_cpu(self):
        """CGPROF_OFF_CPU=1 (tests/progs/offcpu): off_cpu_time, the time of
        cgprof_off_cpu, whose cum is the waiting under each function."""
        d, err = self.run_paths([cgtest.prog("offcpu")], env={"CGPROF_OFF_CPU": "1"})
        pfs = path_files(d)
        if not any(names[-1] == "cgprof_off_cpu" for pf in pfs for names, *_ in pf.paths):
            self.skipTest("the kernel refused the context switch records: %s" % err.strip())
        f, _ = self.check_exact(d)
        cum = {}
        for pf in pfs:
            for names, _c, _i, s in pf.paths:
                if names[-1] == "cgprof_off_cpu" and s:
                    for g in set(names):
                        cum[g] = cum.get(g, 0) + s
        top = self.go.top(f, "-sample_index=off_cpu_time")
        self.assertEqual({k: v[1] for k, v in top.items() if v[1]}, cum)
        self.assertEqual({k: v[0] for k, v in top.items() if v[0]}, {"cgprof_off_cpu": cum["cgprof_off_cpu"]})


class Command(Base):
    def test_errors_and_default_name(self):
        d, _ = self.run_paths([cgtest.prog("flame")])
        p = subprocess.run([LAUNCHER, "pprof", os.path.join(d, "nothing")], env=cgtest.clean_environ(),
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("no path files and no Callgrind file for", p.stderr)
        p = subprocess.run([LAUNCHER, "pprof", "--bogus", d], env=cgtest.clean_environ(), capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 2, p.stderr)
        # the default name: pprof.<pid>.pb.gz in the run's directory
        run = sorted(glob.glob(os.path.join(d, "callgrind.out.*-01")))[0][:-3]
        pid = run.rsplit(".", 1)[1]
        out = run_launcher(self, "pprof", run)
        self.assertEqual(out, os.path.join(d, "pprof.%s.pb.gz" % pid) + "\n")
        self.assertIn("call paths exact", self.go("-raw", out.strip()))
        help_ = run_launcher(self, "pprof", "--help")
        for word in ("calls", "self_time", "inclusive_time", "off_cpu_time", "tid", "stack=estimated"):
            self.assertIn(word, help_)


if __name__ == "__main__":
    unittest.main()
