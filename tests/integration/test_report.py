"""cgprof report (cgproflib.report): saved files read back, cgprof's and
Valgrind's, with exact figures: synthetic files whose costs are known, real
runs of the examples against examples/expected.json, recursion counted
once (against Valgrind's own split of the same binary), --diff, the
desc: warnings, and the launcher's summary as the same table."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import cgtest
from cgproflib import reader
from cgtest import example, prog

LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))
with open(os.path.join(cgtest.SOURCE_DIR, "examples", "expected.json")) as f:
    EXPECTED = json.load(f)


HEADER = """# callgrind format
version: 1
creator: test
pid: {pid}
thread: {thread}
part: 1
cmd: synth
desc: Trigger: {trigger}
{desc}positions: instr line
event: ns : Wall-clock time (nanoseconds)
events: ns
summary: {total}

"""

# main (self 100 us) -> rec (1 call, 500 us) -> rec (5 recursive calls
# whose arc holds the 400 us of the levels under it), rec -> leaf (2 calls,
# 100 us), main -> leaf (4 calls, 50 us), main -> gone (1 call, 30 us).
# rec: self 300 us on line 20 and 100 us on line 21. Total 680 us.
# callgrind_annotate --inclusive=yes would give rec 400+400+100 = 900 us,
# more than the whole run; its outermost activations took 500 us.
BODY_A = """ob=(1) /bin/synth
fl=(1) /src/synth.c
fn=(1) main
0x10 10 100000
cfn=(2) rec
calls=1 0x20 20
0x11 11 500000
cfn=(3) leaf
calls=4 0x30 30
0x12 12 50000
cfn=(4) gone
calls=1 0x40 40
0x13 13 30000

fn=(2)
0x20 20 300000
+1 +1 100000
cfn=(2)
calls=5 0x20 20
0x21 22 400000
cfn=(3)
calls=2 0x30 30
0x22 23 100000

fn=(3)
0x30 30 150000

fn=(4)
0x40 40 30000

totals: 680000
"""

# The run after: main -> leaf 6 calls (150 us), leaf's self 250 us, gone
# no more, extra (1 call, 20 us) new. Total 770 us.
BODY_B = """ob=(1) /bin/synth
fl=(1) /src/synth.c
fn=(1) main
0x10 10 100000
cfn=(2) rec
calls=1 0x20 20
0x11 11 500000
cfn=(3) leaf
calls=6 0x30 30
0x12 12 150000
cfn=(5) extra
calls=1 0x50 50
0x14 14 20000

fn=(2)
0x20 20 300000
+1 +1 100000
cfn=(2)
calls=5 0x20 20
0x21 22 400000
cfn=(3)
calls=2 0x30 30
0x22 23 100000

fn=(3)
0x30 30 250000

fn=(5)
0x50 50 20000

totals: 770000
"""


# A server's thread in wall-clock time with its waits apart (CGPROF_OFF_CPU=1):
# main (self 100 us) -> serve (1 call, 900 us); serve: self 200 us, 40 waits
# (cgprof_off_cpu, 600 us), parse 10 calls (100 us). main also calls a
# (60 us) and b (40 us) once; both call helper (50 and 30 us), which waits
# 40 us in lockwait: how much of it under a and how much under b the arcs
# cannot say. Total 1,100 us.
BODY_WAITS = """ob=(1) /bin/srv
fl=(1) /src/srv.c
fn=(1) main
0x10 10 100000
cfn=(2) serve
calls=1 0x20 20
0x11 11 900000
cfn=(5) a
calls=1 0x50 50
0x12 12 60000
cfn=(6) b
calls=1 0x60 60
0x13 13 40000

fn=(2)
0x20 20 200000
cfn=(3) cgprof_off_cpu
calls=40 0x0 0
0x21 21 600000
cfn=(4) parse
calls=10 0x30 30
0x22 22 100000

fn=(3)
0x0 0 600000

fn=(4)
0x30 30 100000

fn=(5)
0x50 50 10000
cfn=(7) helper
calls=1 0x70 70
0x51 51 50000

fn=(6)
0x60 60 10000
cfn=(7)
calls=1 0x70 70
0x61 61 30000

fn=(7)
0x70 70 40000
cfn=(8) lockwait
calls=2 0x80 80
0x71 71 40000

fn=(8)
0x80 80 40000

totals: 1100000
"""

# C++ names as the demangler writes them: for --callers NAME's matching
BODY_CXX = """ob=(1) /bin/b
fl=(1) /src/b.cc
fn=(1) main
0x10 10 100000
cfn=(2) Builder::Build(std::__cxx11::basic_string<char>*)
calls=2 0x20 20
0x11 11 300000
cfn=(3) Builder::BuildAll()
calls=1 0x30 30
0x12 12 200000

fn=(2)
0x20 20 300000

fn=(3)
0x30 30 200000

totals: 600000
"""


def synth(directory, name, body, total, pid=100, thread=1, desc="", trigger="Program termination"):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(HEADER.format(pid=pid, thread=thread, total=total, desc=desc, trigger=trigger) + body)
    prof = reader.load(path, strict=True)
    assert not prof.violations, prof.violations
    return path


def rows(text):
    """{function: [columns]} of a table: the words of each row, by the
    function's name (the word before [file])."""
    out = {}
    for line in text.splitlines():
        w = line.split()
        if len(w) >= 5 and w[-1].startswith("[") and re.fullmatch(r"~?[0-9.+-]+|-", w[0]):
            out[w[-2]] = w[:-2]
    return out


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-report-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def report(self, *args, status=0):
        p = subprocess.run([LAUNCHER, "report"] + list(args), cwd=self.dir, env=cgtest.clean_environ(),
                           capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, status, p.stdout + p.stderr)
        return p


class Synthetic(Base):
    def test_flat_profile_counts_recursion_once(self):
        synth(self.dir, "callgrind.out.100-01", BODY_A, 680000)
        p = self.report("callgrind.out.100")
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "top 4 functions by inclusive time (1 file; 0.680 ms in all threads):")
        self.assertEqual(lines[1], "    incl. ms      %      self ms      calls  function")
        self.assertEqual(lines[2:], [
            "       0.680  100.0        0.100          -  main  [synth.c]",
            "       0.500   73.5        0.400          6  rec  [synth.c]",
            "       0.150   22.1        0.150          6  leaf  [synth.c]",
            "       0.030    4.4        0.030          1  gone  [synth.c]"])
        self.assertEqual(p.stderr, "")

    def test_sort_top_and_threads(self):
        synth(self.dir, "callgrind.out.100-01", BODY_A, 680000)
        synth(self.dir, "callgrind.out.100-02", BODY_B, 770000, thread=2, desc="desc: Thread name: worker\n")
        # the prefix reads both threads, summed
        t = rows(self.report("callgrind.out.100").stdout)
        self.assertEqual(t["main"], ["1.450", "100.0", "0.200", "-"])
        self.assertEqual(t["rec"], ["1.000", "69.0", "0.800", "12"])
        self.assertEqual(t["leaf"], ["0.400", "27.6", "0.400", "14"])
        self.assertEqual(t["extra"], ["0.020", "1.4", "0.020", "1"])
        out = self.report("--sort=self", "--top=2", self.dir).stdout.splitlines()
        self.assertEqual(out[0], "top 2 functions by self time (2 files; 1.450 ms in all threads):")
        self.assertEqual([l.split()[-2] for l in out[2:]], ["rec", "leaf"])
        out = self.report("--sort=calls", "--top=1", self.dir).stdout.splitlines()
        self.assertEqual(out[2].split()[-2], "leaf")
        each = self.report("--threads=each", self.dir).stdout
        self.assertIn("pid 100 thread 1: top 4 functions by inclusive time (1 file; 0.680 ms in all threads):",
                      each.splitlines())
        self.assertIn("pid 100 thread 2 (worker): top 4 functions by inclusive time (1 file; 0.770 ms in all "
                      "threads):", each.splitlines())

    def test_callers_callees_lines(self):
        synth(self.dir, "callgrind.out.100-01", BODY_A, 680000)
        out = self.report("--callers", "rec", "callgrind.out.100-01").stdout.splitlines()
        self.assertEqual(out[0], "rec  [synth.c]: 0.500 ms inclusive, 0.400 ms self, 6 calls")
        self.assertEqual([l.split() for l in out[3:]],
                         [["0.500", "73.5", "1", "main", "synth.c:11"],
                          ["0.400", "58.8", "5", "rec", "synth.c:22", "(recursive:", "holds", "the", "levels",
                           "under", "it)"]])
        out = self.report("--callees", "main", self.dir).stdout.splitlines()
        self.assertEqual([l.split() for l in out[3:]],
                         [["0.500", "73.5", "1", "rec", "synth.c:11"],
                          ["0.050", "7.4", "4", "leaf", "synth.c:12"],
                          ["0.030", "4.4", "1", "gone", "synth.c:13"]])
        out = self.report("--lines", "rec", self.dir).stdout.splitlines()
        self.assertEqual(out[0], "rec: self ms per source line (0.400 ms in all):")
        self.assertEqual([l.split() for l in out[2:]], [["0.300", "75.0", "synth.c:20"],
                                                        ["0.100", "25.0", "synth.c:21"]])
        p = self.report("--callers", "nosuch", self.dir, status=1)
        self.assertEqual(p.stderr, "cgprof report: no function named 'nosuch' in the files read\n")

    def test_a_function_named_by_part_of_its_name(self):
        # issue 27 (5): the name before the parameters, after the last ::,
        # a glob, a part; several: said, with the candidates
        d = os.path.join(self.dir, "cxx")
        os.mkdir(d)
        synth(d, "callgrind.out.300-01", BODY_CXX, 600000, pid=300)
        build = "Builder::Build(std::__cxx11::basic_string<char>*)"
        for asked, chosen in (("Builder::Build", build), ("Build", build), ("BuildA", "Builder::BuildAll()"),
                              ("*basic_string*", build), (build, build)):
            with self.subTest(asked=asked):
                p = self.report("--callers", asked, d)
                self.assertTrue(p.stdout.startswith(chosen + "  [b.cc]: "), p.stdout)
                self.assertEqual(p.stderr, "" if asked == chosen else
                                 "cgprof report: %r: the one function it names: %s\n" % (asked, chosen))
        p = self.report("--callees", "Builder::*", d, status=1)
        self.assertEqual(p.stderr, "cgprof report: 'Builder::*' matches 2 functions: %s; Builder::BuildAll(); give "
                                   "one of them (quoted), or a narrower pattern\n" % build)
        p = self.report("--lines", "uild", d, status=1)
        self.assertIn("'uild' is part of 2 functions", p.stderr)
        p = self.report("--callers", "mian", d, status=1)
        self.assertEqual(p.stderr, "cgprof report: no function named 'mian' in the files read; the nearest: main\n")

    def test_diff(self):
        a = os.path.join(self.dir, "a")
        b = os.path.join(self.dir, "b")
        os.mkdir(a)
        os.mkdir(b)
        synth(a, "callgrind.out.100-01", BODY_A, 680000)
        synth(b, "callgrind.out.200-01", BODY_B, 770000, pid=200)
        out = self.report("--diff", "a", "b/callgrind.out.200").stdout.splitlines()
        # issue 27 (5): the options anywhere around the two runs
        for args in (("--diff", "--top=12", "a", "b/callgrind.out.200"), ("--top=12", "--diff", "a", "b/callgrind.out.200"),
                     ("--diff", "a", "b/callgrind.out.200", "--top", "12")):
            self.assertEqual(self.report(*args).stdout.splitlines(), out, args)
        for args, got in ((("--diff", "a"), "'a'"), (("--diff", "a", "b", "c"), "'a' 'b' 'c'"), (("--diff",), "none given")):
            p = self.report(*args, status=2)
            self.assertIn("--diff A B reads two runs, no more, no less: " + got, p.stderr)
        self.assertEqual(out[0], "before: 0.680 ms in 1 file; after: 0.770 ms in 1 file; change +0.090 (+13.2%)")
        body = [l.split() for l in out[3:]]
        self.assertEqual(body, [
            ["0.150", "0.250", "+0.100", "+66.7%", "0.150", "0.250", "+0.100", "6", "8", "+2", "leaf", "[synth.c]"],
            ["0.680", "0.770", "+0.090", "+13.2%", "0.100", "0.100", "+0.000", "0", "0", "+0", "main", "[synth.c]"],
            ["0.030", "-", "-0.030", "-100.0%", "0.030", "-", "-0.030", "1", "-", "-1", "gone", "[synth.c]",
             "(only", "before)"],
            ["-", "0.020", "+0.020", "new", "-", "0.020", "+0.020", "-", "1", "+1", "extra", "[synth.c]",
             "(only", "after)"],
            ["0.500", "0.500", "+0.000", "+0.0%", "0.400", "0.400", "+0.000", "6", "6", "+0", "rec", "[synth.c]"]])

    def test_diff_of_lower_bounds(self):
        """Issue 38 (4): a throttled function's count is a lower bound in
        a diff too: ">=N" on the side that throttled it, and its change
        "?" (the diff printed "10000 10000 +0" for two inputs whose true
        counts differ); the exact counts beside it keep their change."""
        a = os.path.join(self.dir, "a")
        b = os.path.join(self.dir, "b")
        os.mkdir(a)
        os.mkdir(b)
        synth(a, "callgrind.out.100-01", BODY_A, 680000,
              desc="desc: Throttled: 1 functions (CGPROF_THROTTLE=6:1000, process-wide; calls counted until then "
                   "are kept): leaf\n")
        synth(b, "callgrind.out.200-01", BODY_B, 770000, pid=200)
        out = self.report("--diff", "a", "b").stdout.splitlines()
        body = {l.split()[-2]: l.split() for l in out[3:] if l.endswith("[synth.c]")}
        self.assertEqual(body["leaf"][7:10], [">=6", "8", "?"], out)
        self.assertEqual(body["rec"][7:10], ["6", "6", "+0"], out)
        self.assertEqual(out[-1], "  >=N: a lower bound: the calls of a throttled function counted until then, or the "
                                  "visits seen of a function without hooks (libc's: by sampling, or running callbacks); "
                                  "the change of a count that is a lower bound on either side is not known (?)")
        # no lower bound: no note
        self.assertNotIn("lower bound", self.report("--diff", "b", "b").stdout)

    def test_desc_warnings_once_summed(self):
        synth(self.dir, "callgrind.out.100-01", BODY_A, 680000, trigger="Signal SIGUSR1",
              desc="desc: Calls in progress: 2 (counted up to the dump)\n"
                   "desc: Lost: 3 calls not recorded (out of memory, or signal handlers nested too deep)\n")
        synth(self.dir, "callgrind.out.100-02", BODY_B, 770000, thread=2,
              desc="desc: Trigger: Thread exit\ndesc: Lost: 1 calls not recorded (out of memory)\n"
                   "desc: Unmatched exits: 4 (dropped)\n")
        p = self.report(self.dir)
        self.assertEqual(p.stderr.splitlines(), [
            "cgprof report: warning: the profile holds repairs: 4 exits that matched no frame (dropped), "
            "4 calls not recorded (counts that much too low); see its desc: lines and docs/internals/design.md, \"Repairs\"",
            "cgprof report: note: 2 calls still running when its part was written (each counted once, with its "
            "time up to the dump); 1 part written when its thread ended; see the desc: lines and docs/internals/design.md, "
            "\"Repairs\""])

    def test_no_note_for_the_calls_that_ended_the_program(self):
        """Issue 27 (5): a program that calls exit() from main, or from
        deeper, has those calls on the stack when its last part is written:
        not a dump cut through them, no note. A dump's part, a crash's, do
        note theirs."""
        for trigger, noted in (("Program termination", False), ("Program termination by quick_exit()", False),
                               ("Exec of /bin/true", False), ("Thread exit", False),
                               ("Signal SIGUSR1", True), ("Crash: SIGSEGV at 0x0", True)):
            with self.subTest(trigger=trigger):
                for f in os.listdir(self.dir):
                    os.unlink(os.path.join(self.dir, f))
                synth(self.dir, "callgrind.out.100-01", BODY_A, 680000, trigger=trigger,
                      desc="desc: Calls in progress: 2 (counted up to the dump)\n")
                err = self.report(self.dir).stderr
                self.assertEqual("2 calls still running when its part was written" in err, noted, err)
        # and a real run: exits deep calls exit(3) from depth 20
        os.unlink(os.path.join(self.dir, "callgrind.out.100-01"))
        run = subprocess.run([prog("exits"), "deep"], cwd=self.dir, capture_output=True, text=True, timeout=cgtest.limit(120),
                             env=cgtest.clean_environ(LD_PRELOAD=cgtest.LIB))
        self.assertEqual(run.returncode, 3, run.stderr)
        part = [f for f in os.listdir(self.dir) if re.fullmatch(r"callgrind\.out\.\d+-01", f)]
        self.assertEqual(len(part), 1, os.listdir(self.dir))
        self.assertEqual(reader.load(os.path.join(self.dir, part[0])).desc_value("Calls in progress").split()[0],
                         "21")
        p = self.report(part[0])
        self.assertNotIn("still running", p.stderr)

    def test_hide_waits_and_functions(self):
        """Issue 27 (5): a server's wall-clock profile is mostly waiting,
        and nothing left waits or chosen functions out after the run.
        --hide-waits leaves out cgprof_off_cpu's time (CGPROF_OFF_CPU=1),
        --hide=FUNC a function that calls none: out of the total and of
        every function above, exactly along single callers, marked ~ where
        shared out among several."""
        synth(self.dir, "callgrind.out.100-01", BODY_WAITS, 1100000)
        before = rows(self.report(self.dir).stdout)
        self.assertEqual(before["main"][:3], ["1.100", "100.0", "0.100"])
        p = self.report("--hide-waits", "--top=0", self.dir)
        t = rows(p.stdout)
        self.assertNotIn("cgprof_off_cpu", t)
        self.assertIn("(1 file; 0.500 ms in all threads)", p.stdout)
        self.assertEqual({k: v[:3] for k, v in t.items()}, {
            "main": ["0.500", "100.0", "0.100"], "serve": ["0.300", "60.0", "0.200"],
            "parse": ["0.100", "20.0", "0.100"], "a": ["0.060", "12.0", "0.010"], "b": ["0.040", "8.0", "0.010"],
            "helper": ["0.080", "16.0", "0.040"], "lockwait": ["0.040", "8.0", "0.040"]})
        self.assertEqual(p.stderr, "cgprof report: left out (--hide-waits): cgprof_off_cpu\n")
        # lockwait too: under helper exactly (its one callee's arcs), then
        # shared between a and b by their calls' time (50:30): ~
        p = self.report("--hide-waits", "--hide=lock*", "--top=0", self.dir)
        t = rows(p.stdout)
        self.assertEqual({k: v[:3] for k, v in t.items()}, {
            "main": ["~0.460", "100.0", "0.100"], "serve": ["0.300", "65.2", "0.200"],
            "parse": ["0.100", "21.7", "0.100"], "a": ["~0.035", "7.6", "0.010"], "b": ["~0.025", "5.4", "0.010"],
            "helper": ["0.040", "8.7", "0.040"]})
        self.assertIn("  ~: inclusive time less an estimate of what --hide left out", p.stdout)
        # the callers view: serve's call without its waits
        p = self.report("--hide-waits", "--callers", "serve", self.dir)
        self.assertIn("serve  [srv.c]: 0.300 ms inclusive, 0.200 ms self, 1 call", p.stdout)
        # a function that calls others is kept; a name that is nowhere said
        p = self.report("--hide=serve,nosuch", self.dir)
        self.assertEqual(rows(p.stdout)["serve"][:3], ["0.900", "81.8", "0.200"])
        self.assertEqual(p.stderr.splitlines(), [
            "cgprof report: --hide: serve is kept: it calls other functions (cgprof_off_cpu, parse); --hide "
            "leaves out functions that call none (a wait, a lock, a spin)",
            "cgprof report: --hide=nosuch: no function of that name in the files read"])
        # no waits apart in the files: said
        os.unlink(os.path.join(self.dir, "callgrind.out.100-01"))
        synth(self.dir, "callgrind.out.100-01", BODY_A, 680000)
        p = self.report("--hide-waits", self.dir)
        self.assertIn("--hide-waits: these files hold no time off the CPU apart (no cgprof_off_cpu)", p.stderr)
        self.assertEqual(rows(p.stdout)["main"][:2], ["0.680", "100.0"])
        for args, msg in ((["--hide=", "x"], "--hide='': accepted: function names or globs"),
                          (["--hide-waits=1", "x"], "--hide-waits takes no value"),
                          (["--paths", "--hide-waits", "x"], "--paths shows every path")):
            self.assertIn(msg, self.report(*args, status=2).stderr)

    def test_usage(self):
        p = self.report(status=2)
        self.assertIn("nothing to read", p.stderr)
        p = self.report("--sort=name", ".", status=2)
        self.assertIn("--sort='name': accepted: inclusive|self|calls", p.stderr)
        p = self.report("nosuch.prefix", status=1)
        self.assertIn("nosuch.prefix: no such file, and no file starts with it (a prefix)", p.stderr)
        p = self.report("--help")
        self.assertIn("--callers FUNC", p.stdout)
        synth(self.dir, "callgrind.out.100-01", BODY_A, 680000)
        p = self.report("--event=Ir", self.dir, status=1)
        self.assertIn("no event Ir in this file (its events: ns)", p.stderr)


class FastPath(Base):
    """reader.digest(), the report's reader, against reader.load(), the
    strict one, on a big synthetic file written as cgprof writes (name
    compression, relative positions, fi=/fe=, cfi=, recursive arcs) and on
    a real run: the same self costs, arcs with their call sites, lines."""

    def agree(self, path):
        prof = reader.load(path, strict=True)
        self.assertEqual(prof.violations, [])
        d = reader.digest(path, lines=True)
        ev = prof.event_index("ns")
        self_cost, arcs, lines = {}, {}, {}
        for key, fn in prof.functions.items():
            k = (reader.fold_recursion(key.name), key.object)
            s = fn.self_costs(len(prof.events))[ev]
            if s:
                self_cost[k] = self_cost.get(k, 0) + s
            for cl in fn.cost_lines:
                if cl.costs[ev]:
                    lk = (k, cl.file, cl.line)
                    lines[lk] = lines.get(lk, 0) + cl.costs[ev]
        for c in prof.calls:
            ak = ((reader.fold_recursion(c.caller.name), c.caller.object),
                  (reader.fold_recursion(c.callee.name), c.callee.object), c.file, c.line)
            a = arcs.setdefault(ak, [0, 0])
            a[0] += c.count
            a[1] += c.costs[ev]
        self.assertEqual(d.self_cost, self_cost)
        self.assertEqual(d.arcs, arcs)
        self.assertEqual(d.lines, lines)
        self.assertEqual(d.total, prof.total_self(ev))
        # without the sites: the same arcs summed per caller and callee
        bare = reader.digest(path, sites=False)
        per = {}
        for (a, b, _f, _l), (n, c) in arcs.items():
            e = per.setdefault((a, b, "", None), [0, 0])
            e[0] += n
            e[1] += c
        self.assertEqual(bare.arcs, per)
        return d

    def test_generated_file(self):
        path = os.path.join(self.dir, "big.cg")
        subprocess.run(["python3", os.path.join(cgtest.SOURCE_DIR, "tests", "bench", "gen_profile.py"), path,
                        "2"], check=True, timeout=cgtest.limit(300))
        d = self.agree(path)
        self.assertGreater(len(d.arcs), 5000)
        self.assertTrue(any(k[0] == k[1] for k in d.arcs))   # recursive arcs are there

    def test_real_run(self):
        p = subprocess.run([LAUNCHER, "-q", example("basic")], cwd=self.dir, env=cgtest.clean_environ(),
                           capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        path, = [os.path.join(self.dir, n) for n in os.listdir(self.dir) if n.startswith("callgrind.out.")]
        self.agree(path)

    def test_bad_line_named(self):
        path = synth(self.dir, "callgrind.out.100-01", BODY_A, 680000)
        with open(path) as f:
            n = len(f.read().splitlines())
        with open(path, "a") as f:
            f.write("fn=(1)\nbogus line\n")
        p = self.report(path, status=1)
        self.assertEqual(p.stderr, "cgprof report: cannot read %s: %s:%d: line matches no rule of the format "
                                   "grammar: 'bogus line\\n'\n" % (path, path, n + 2))


class Documented(Base):
    def test_help_and_man(self):
        p = subprocess.run([LAUNCHER, "--help"], capture_output=True, text=True, timeout=cgtest.limit(60))
        self.assertIn("cgprof report [options] WHAT...", p.stdout)
        man = os.environ.get("CGPROF_MAN", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof.1"))
        with open(man) as f:
            text = f.read()
        self.assertIn(".SH CGPROF REPORT", text)
        own = self.report("--help").stdout
        for opt in ("--top=N", "--sort=inclusive|self|calls", "--threads=sum|each", "--event=NAME",
                    "--callers FUNC", "--callees FUNC", "--lines FUNC", "--diff A B"):
            self.assertIn(opt, own)
            self.assertIn("\\fB%s\\fR" % opt.replace("-", "\\-"), text)


class OtherMachine(Base):
    """A profile the runtime took on the programs' own machine, read by
    this machine's commands: in the aarch64 step (scripts/test-aarch64),
    examples/basic built for aarch64 and run under qemu-aarch64
    (cgtest.EMULATOR), read by cgprof report and cgprof pprof on x86-64,
    as a profile taken on an ARM server is read on a laptop; elsewhere the
    same on this machine's build. Nothing the commands read depends on the
    machine: the files are text, and the objects' build ids (pprof's
    mappings) are read from their ELF notes, whatever e_machine says."""

    def test_report_and_build_ids(self):
        run = cgtest.run_preloaded(self, [example("basic")])
        self.assertEqual(run.returncode, 0, run.stderr)
        (path,) = run.files
        with open(os.environ.get("CGPROF_EXPECTED", os.path.join(cgtest.SOURCE_DIR, "examples", "expected.json"))) as f:
            expected = json.load(f)["basic"]["functions"]
        table = rows(self.report("--top=0", path).stdout)
        self.assertEqual({f: int(table[f][3]) for f in expected}, expected)
        # the build id pprof gives the program's mapping: its own note, as
        # readelf (binutils reads every machine's notes) prints it
        note = subprocess.run(["readelf", "-n", example("basic")], capture_output=True, text=True,
                              timeout=cgtest.limit(60)).stdout
        want = re.search(r"Build ID: ([0-9a-f]+)", note)
        self.assertIsNotNone(want, note)
        from cgproflib import elf
        self.assertEqual(elf.gnu_build_id(example("basic")), want.group(1))
        p = subprocess.run([LAUNCHER, "pprof", "-o", os.path.join(self.dir, "basic.pb.gz"), path], cwd=self.dir,
                           env=cgtest.clean_environ(), capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        import gzip
        with gzip.open(os.path.join(self.dir, "basic.pb.gz")) as f:
            self.assertIn(want.group(1).encode(), f.read())


class RealRuns(Base):
    def launch(self, argv):
        p = subprocess.run([LAUNCHER] + argv, cwd=self.dir, env=cgtest.clean_environ(), capture_output=True, text=True,
                           timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        m = re.search(r"\(pid ([0-9]+)\)", p.stderr)
        return int(m.group(1)), p.stderr

    def test_basic_calls_and_the_launchers_summary(self):
        pid, stderr = self.launch([example("basic")])
        out = self.report("callgrind.out.%d" % pid).stdout
        table = rows(out)
        for fn, n in EXPECTED["basic"]["functions"].items():
            self.assertEqual(table[fn][3], str(n), fn)
        # fib: once, under 100%, and its own time plus its calls to others
        prof = reader.load(os.path.join(self.dir, "callgrind.out.%d-01" % pid), strict=True)
        self.assertEqual(prof.violations, [])
        self.assertEqual(table["fib"][0], "%.3f" % (prof.inclusive("fib") / 1e6))
        self.assertLessEqual(float(table["fib"][1]), 100.0)
        # the launcher's summary is report's table, line for line
        summary = [l[len("cgprof: "):] for l in stderr.splitlines() if l.startswith("cgprof: ")]
        start = [i for i, l in enumerate(summary) if l.startswith("top 10 functions")][0]
        mine = self.report("--top=10", "callgrind.out.%d-01" % pid).stdout.splitlines()
        self.assertEqual(summary[start:start + len(mine)], mine)

    def test_counts_without_hooks_marked(self):
        """Issue 27 (5): the calls column held, unmarked beside exact
        counts, the visits seen of functions without hooks (libc's, known
        only by sampling or as the code that ran callbacks: basic's qsort
        calling its comparator). They are a lower bound: ">=" and a note,
        as for a throttled function; the program's own counts stay plain."""
        for settings in (["--time=exact"], ["--time=sample"]):
            with self.subTest(settings=settings):
                for f in os.listdir(self.dir):
                    os.unlink(os.path.join(self.dir, f))
                pid, _ = self.launch(settings + ["--throttle=off", example("basic")])
                prof = reader.load(os.path.join(self.dir, "callgrind.out.%d-01" % pid), strict=True)
                self.assertEqual(prof.violations, [])
                # the file's list: exactly the callees in libc (no hook there)
                libc = {c.callee.name for c in prof.calls if "libc.so" in c.callee.object}
                self.assertTrue(libc)    # qsort's code, running the comparator
                self.assertEqual(prof.visits, libc)
                out = self.report("--top=0", "callgrind.out.%d" % pid).stdout
                table = rows(out)
                marked = {fn for fn, cols in table.items() if cols[3].startswith(">=")}
                self.assertEqual(marked, libc, out)
                for fn, n in EXPECTED["basic"]["functions"].items():
                    self.assertEqual(table[fn][3], str(n), fn)
                self.assertIn("  >=N: a lower bound: ", out)
                callee = sorted(libc)[0]
                p = self.report("--callers", callee, "callgrind.out.%d" % pid)
                self.assertIn("(no hooks: the visits seen, a lower bound)", p.stdout)

    def test_server_without_its_waits(self):
        """Issue 27 (5): examples/server in wall-clock time with its waits
        apart (CGPROF_OFF_CPU=1) is 95% waiting; --hide-waits leaves the
        time on the CPU: the total less cgprof_off_cpu's, no function above
        100%, the program's counts unchanged."""
        pid, stderr = self.launch(["--time=exact", "--throttle=off", "--off-cpu", "--top=0",
                                   example("server"), "-n", "400", "-p", "200"])
        before = self.report("--top=0", ".").stdout
        t0 = rows(before)
        if "cgprof_off_cpu" not in t0:
            self.skipTest("no time off the CPU recorded (the kernel refused its context switch records): "
                          + stderr)
        total0 = float(re.search(r"; ([0-9.]+) ms in all threads\)", before).group(1))
        p = self.report("--top=0", "--hide-waits", ".")
        t = rows(p.stdout)
        total = float(re.search(r"; ([0-9.]+) ms in all threads\)", p.stdout).group(1))
        self.assertNotIn("cgprof_off_cpu", t)
        self.assertAlmostEqual(total, total0 - float(t0["cgprof_off_cpu"][2]), delta=0.002)
        self.assertLess(total, total0 / 2)        # mostly waiting, as said
        for fn, cols in t.items():
            self.assertLessEqual(float(cols[1]), 100.0, p.stdout)
            self.assertEqual(cols[2:4], t0[fn][2:4], fn)     # self and calls unchanged
        self.assertEqual(t["handle_request"][3], "400")

    def test_threads_summed_and_each(self):
        pid, _ = self.launch([example("threads")])
        table = rows(self.report(".").stdout)
        for fn, n in EXPECTED["threads"]["functions"].items():
            self.assertEqual(table[fn][3], str(n), fn)
        each = self.report("--threads=each", "callgrind.out.%d" % pid).stdout
        heads = [l for l in each.splitlines() if "top " in l]
        self.assertEqual(len(heads), EXPECTED["threads"]["threads"], each)
        self.assertTrue(all(h.startswith("pid %d thread " % pid) for h in heads), heads)

    def test_deep_recursion_once(self):
        """tests/progs/deep: recurse 10,000 levels deep on a worker thread:
        its arcs recurse -> recurse sum to about 10,000 times its time, its
        inclusive time is its worker's call of it, under 100%."""
        pid, _ = self.launch([cgtest.prog("deep"), "10000"])
        out = self.report("--top=0", "callgrind.out.%d" % pid).stdout
        table = rows(out)
        self.assertEqual(table["recurse"][3], "10000")
        self.assertEqual(table["worker"][3], "1")
        self.assertLessEqual(float(table["recurse"][1]), 100.0)
        callees = self.report("--callees", "worker", ".").stdout.splitlines()
        self.assertEqual(callees[3].split()[2:5], ["1", "recurse", "deep.c:22"])
        # recurse's inclusive time is exactly the time of worker's one call of it
        self.assertEqual(callees[3].split()[0], table["recurse"][0])
        callers = self.report("--callers", "recurse", ".").stdout.splitlines()
        self.assertEqual(callers[0].split()[-2:], ["10000", "calls"])

    @unittest.skipUnless(shutil.which("valgrind") and shutil.which("callgrind_annotate"), "no valgrind")
    def test_valgrind_file_recursion_as_valgrind_splits_it(self):
        vg = os.path.join(self.dir, "callgrind.out.vg")
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + vg, example("basic")],
                           cwd=self.dir, env=cgtest.clean_environ(), capture_output=True, text=True, timeout=cgtest.limit(600))
        self.assertEqual(p.returncode, 0, p.stderr)
        # callgrind_annotate --inclusive=yes on Valgrind's own file: fib,
        # the outermost level (fib'2 holds the deeper ones), and fib'2
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", vg],
                             capture_output=True, text=True, timeout=cgtest.limit(300)).stdout
        incl = {}
        for line in ann.splitlines():
            m = re.match(r"\s*([0-9,]+) \(\s*[0-9.]+%\)\s+\S*:(fib(?:'2)?) \[", line)
            if m:
                incl[m.group(2)] = int(m.group(1).replace(",", ""))
        self.assertIn("fib", incl, ann)
        self.assertIn("fib'2", incl, ann)
        out = self.report("--top=0", vg).stdout
        self.assertTrue(out.splitlines()[1].startswith("    incl. Ir"), out)
        table = rows(out)
        self.assertEqual(table["fib"][0], str(incl["fib"]))
        self.assertNotIn("fib'2", table)
        self.assertEqual(table["fib"][3], str(EXPECTED["basic"]["functions"]["fib"]))
        self.assertLessEqual(float(table["fib"][1]), 100.0)
        for fn, n in EXPECTED["basic"]["functions"].items():
            self.assertEqual(table[fn][3], str(n), fn)
        callers = self.report("--callers", "fib", vg).stdout.splitlines()
        self.assertEqual(callers[0].split()[:4], ["fib", "[basic.c]:", str(incl["fib"]), "Ir"])


if __name__ == "__main__":
    unittest.main()
