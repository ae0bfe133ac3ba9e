"""Profiles opened in speedscope (npm speedscope, vendored in
tests/vendor/speedscope) in headless Chromium, through the harness
tests/integration/speedscope.py: what it draws, frame by frame, against
what the file says (the strict reader). And CGPROF_POSITIONS=line, the
files speedscope's Callgrind importer reads right: it takes the first
number after the position as the cost, so with cgprof's default
"positions: instr line" it takes the line number for it (issue 16).

tests/progs/flame.c is the program: a call tree in which every function
has work of its own (speedscope leaves out frames under 1/10,000 of the
heaviest root), no recursion (speedscope draws a recursive call inside its
caller's frame) and one function with two callers. With those, what
speedscope draws is exactly the file: each function's self cost and its
inclusive cost (self plus its calls), no function more or less.

Needs Chromium (scripts/deps.sh installs it): without it the tests fail,
unless CGPROF_NO_BROWSER=1, which skips them."""

import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cgtest  # noqa: E402
import speedscope  # noqa: E402
from cgproflib import paths, reader  # noqa: E402

LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))
FLAME = ("main", "parse", "tokenize", "render", "layout", "spin")
# cgprof names the caller of main by the libc function that calls it
ROOT = "__libc_start_call_main"


def file_weights(prof):
    """{function: (self, inclusive)} of every function of the file with a
    block of its own (fn=), by name: what a flame graph of it must show."""
    names = [k.name for k, f in prof.functions.items() if f.defined]
    if len(set(names)) != len(names):
        raise AssertionError("two functions of one name in %s: %s" % (prof.path, sorted(names)))
    return {n: (prof.self_cost(n), prof.inclusive(n)) for n in names}


def shown_weights(profile, names=None):
    """{frame: (self, total)} that speedscope shows (all, or those named),
    each name once."""
    out = {}
    for f in profile.frames:
        if names is not None and f.name not in names:
            continue
        if f.name in out:
            raise AssertionError("speedscope shows two frames named %r" % f.name)
        out[f.name] = (f.self, f.total)
    return out


def sandwich_number(text):
    """ "1,234,567 (42%)" -> 1234567, as the sandwich view displays a weight
    without unit."""
    m = re.fullmatch(r"([0-9,]+) \([^)]*\)", text.strip())
    if not m:
        raise AssertionError("sandwich cell %r is not a weight without unit" % text)
    return int(m.group(1).replace(",", ""))


class Speedscope(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        speedscope.require_browser()

    def run_flame(self, env=None):
        run = cgtest.run_preloaded(self, [cgtest.prog("flame")], env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(run.files), 1, run.files)
        return run

    def assert_drawn_as_file(self, path, shown):
        """speedscope draws the file's functions, exactly those, each with
        the file's self and inclusive cost, in its model and in its
        sandwich view; and the flame graph is drawn."""
        prof = reader.load(path, strict=True)
        self.assertEqual([str(v) for v in prof.violations], [])
        want = file_weights(prof)
        self.assertEqual(set(want), set(FLAME) | {ROOT})
        self.assertEqual(shown.importer, "Importing as Callgrind profile")
        (profile,) = shown.profiles  # one event, ns: one profile
        self.assertEqual(profile.name, os.path.basename(path) + " -- ns")
        self.assertEqual(shown_weights(profile), want)
        self.assertEqual(profile.total_weight, prof.totals[0])
        rows = {r.name: (sandwich_number(r.self), sandwich_number(r.total)) for r in shown.sandwich}
        self.assertEqual(len(rows), len(shown.sandwich), "a name twice in the sandwich view")
        self.assertEqual(rows, want)
        self.assertGreater(shown.drawn, 0.02, "the flame graph is blank")

    def test_valgrind_file(self):
        # The harness on the file speedscope's importer was written for:
        # Valgrind's own (one position column, "line", by default). The
        # hooks, empty in glibc, are left out (--fn-skip); LD_BIND_NOW, so
        # that no function's first call of them runs the dynamic linker's
        # lookup, too light for speedscope to draw (its cost then shows as
        # the caller's own).
        if not shutil.which("valgrind"):
            self.fail("valgrind is not installed (scripts/deps.sh installs it)")
        d = tempfile.mkdtemp(prefix="cgprof-ss-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        out = os.path.join(d, "callgrind.out.vg")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        env["LD_BIND_NOW"] = "1"
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                            "--fn-skip=__cyg_profile_func_*", cgtest.prog("flame")],
                           env=env, cwd=d, capture_output=True, text=True, timeout=cgtest.limit(600))
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        prof = reader.load(out)
        self.assertEqual([str(v) for v in prof.violations], [])
        self.assertEqual(prof.positions, ["line"])
        want = {n: (prof.self_cost(n), prof.inclusive(n)) for n in FLAME}
        shown = speedscope.open_profile(out)
        self.assertEqual(shown.importer, "Importing as Callgrind profile")
        (profile,) = shown.profiles
        self.assertEqual(profile.name, "callgrind.out.vg -- Ir")
        self.assertEqual(shown_weights(profile, FLAME), want)
        self.assertGreater(shown.drawn, 0.02, "the flame graph is blank")

    def test_positions_line_drawn_as_the_file_default_empty(self):
        # cgprof's default, "positions: instr line": speedscope takes each
        # cost line's second number (the line) for its cost, and the root's
        # call from line 0 makes the whole graph weigh 0: imported without
        # a word, nothing drawn, the sandwich view "No symbols found."
        run = self.run_flame()
        prof = reader.load(run.files[0], strict=True)
        self.assertEqual(prof.positions, ["instr", "line"])
        shown = speedscope.open_profile(run.files[0])
        self.assertEqual(shown.importer, "Importing as Callgrind profile")
        (profile,) = shown.profiles
        self.assertEqual(profile.total_weight, 0)
        self.assertEqual(shown_weights(profile), {})
        self.assertEqual(shown.sandwich, [])
        self.assertLess(shown.drawn, 0.01)

        # CGPROF_POSITIONS=line: drawn as the file says
        run = self.run_flame({"CGPROF_POSITIONS": "line"})
        self.assertEqual(reader.load(run.files[0]).positions, ["line"])
        self.assert_drawn_as_file(run.files[0], speedscope.open_profile(run.files[0]))
        # and the total of the run, written with the same columns
        (total,) = glob.glob(os.path.join(run.directory, "callgrind.total.*"))
        self.assertEqual(reader.load(total).positions, ["line"])
        self.assert_drawn_as_file(total, speedscope.open_profile(total))

    def test_launcher_positions_option(self):
        # cgprof --positions=line: the launcher's option of the variable
        d = tempfile.mkdtemp(prefix="cgprof-ss-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        env = cgtest.clean_environ()
        p = subprocess.run([LAUNCHER, "--quiet", "--positions=line", cgtest.prog("flame")], cwd=d, env=env,
                           capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        (part,) = glob.glob(os.path.join(d, "callgrind.out.*"))
        self.assert_drawn_as_file(part, speedscope.open_profile(part))
        p = subprocess.run([LAUNCHER, "--positions=instr", cgtest.prog("flame")], cwd=d, env=env,
                           capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 2)
        self.assertIn("instr line|line", p.stderr)

    def test_speedscope_json(self):
        # speedscope's own format (its file-format-schema.json), a sampled
        # profile with weights: a, a;b twice, a;b;c, a;c, d. Weights by
        # frame: self a 5, b 3+4, c 2+6, d 1; total a 5+3+4+2+6 = 20, b 9,
        # c 8, d 1. The same name in two files is two frames: c here is
        # one frame (index 2), called from a and from b.
        doc = {
            "$schema": "https://www.speedscope.app/file-format-schema.json",
            "name": "hand-written",
            "activeProfileIndex": 0,
            "exporter": "cgprof tests",
            "shared": {"frames": [{"name": "a", "file": "a.c", "line": 1}, {"name": "b", "file": "a.c"},
                                  {"name": "c", "file": "c.c"}, {"name": "d"}]},
            "profiles": [{
                "type": "sampled", "name": "hand-written profile", "unit": "nanoseconds",
                "startValue": 0, "endValue": 21,
                "samples": [[0], [0, 1], [0, 1], [0, 1, 2], [0, 2], [3]],
                "weights": [5, 3, 4, 2, 6, 1],
            }],
        }
        d = tempfile.mkdtemp(prefix="cgprof-ss-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        path = os.path.join(d, "hand.speedscope.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        shown = speedscope.open_profile(path, view="time-ordered")
        self.assertEqual(shown.importer, "Importing as speedscope json file")
        self.assertEqual(shown.title, "hand-written - speedscope")
        (profile,) = shown.profiles
        self.assertEqual((profile.name, profile.unit, profile.total_weight), ("hand-written profile", "nanoseconds", 21))
        self.assertEqual(sorted((f.name, f.file, f.self, f.total) for f in profile.frames),
                         [("a", "a.c", 5, 20), ("b", "a.c", 7, 9), ("c", "c.c", 8, 8), ("d", None, 1, 1)])
        # the sandwich view: the same frames, their weights as speedscope
        # writes nanoseconds
        self.assertEqual(sorted((r.name, r.file, r.total, r.self) for r in shown.sandwich),
                         [("a", "a.c", "20.00ns (95%)", "5.00ns (24%)"), ("b", "a.c", "9.00ns (43%)", "7.00ns (33%)"),
                          ("c", "c.c", "8.00ns (38%)", "8.00ns (38%)"), ("d", "", "1.00ns (4.8%)", "1.00ns (4.8%)")])
        self.assertGreater(shown.drawn, 0.02, "the flame graph is blank")


def paths_weights(path_files):
    """{function: (self, total)} that a flame graph of the call paths must
    show, from the path files themselves (read here as the format says):
    self, the function's self time on every path; total, the self time of
    every path through it (a function is on a path at most once: recursion
    is folded)."""
    self_, total = {}, {}
    for path in path_files:
        for names, _calls, _incl, s in paths.read(path).paths:
            for fn in names:
                total[fn] = total.get(fn, 0) + s
            self_[names[-1]] = self_.get(names[-1], 0) + s
    return {fn: (self_[fn], total[fn]) for fn in self_ if total[fn]}


class FlameGraphs(unittest.TestCase):
    """The flame graphs of the call paths (CGPROF_PATHS=1, cgprof flame):
    speedscope opens the speedscope file and draws every thread and all
    threads with exactly the paths' self and total times, frame by frame."""

    @classmethod
    def setUpClass(cls):
        speedscope.require_browser()

    def flame_of(self, argv):
        d = tempfile.mkdtemp(prefix="cgprof-flame-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        env = cgtest.clean_environ()
        p = subprocess.run([LAUNCHER, "--paths"] + argv, cwd=d, env=env, capture_output=True, text=True,
                           timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        (json_file,) = glob.glob(os.path.join(d, "flame.*.speedscope.json"))
        return d, json_file

    def assert_profiles(self, d, shown):
        threads = sorted(glob.glob(os.path.join(d, "callgrind.paths.*")))
        self.assertTrue(threads)
        self.assertEqual(shown.importer, "Importing as speedscope json file")
        by_name = {p.name: p for p in shown.profiles}
        self.assertEqual(len(by_name), len(shown.profiles))
        self.assertEqual(len(shown.profiles), len(threads) + 1, sorted(by_name))
        self.assertEqual(shown.profiles[0].name, "all threads")
        # all threads: the first profile
        whole = shown.profiles[0]
        self.assertEqual(whole.unit, "nanoseconds")
        self.assertEqual(shown_weights(whole), paths_weights(threads))
        for path in threads:
            nn = path.rsplit("-", 1)[1]
            (mine,) = [p for p in shown.profiles[1:] if p.name.startswith("thread %d" % int(nn))]
            self.assertEqual(shown_weights(mine), paths_weights([path]), path)
        self.assertGreater(shown.drawn, 0.02, "the flame graph is blank")

    def test_flame_prog(self):
        d, js = self.flame_of([cgtest.prog("flame")])
        shown = speedscope.open_profile(js)
        self.assertEqual(set(shown_weights(shown.profiles[0])), set(FLAME))
        self.assert_profiles(d, shown)

    def test_folded_files_open_as_collapsed_stacks(self):
        """Issue 28: the .folded files were named callgrind.flame.<pid>...,
        and speedscope reads any file named callgrind.* as a Callgrind
        profile ("Unrecognized line "main 191410" on line 1"). Named
        flame.<pid>..., each opens as collapsed stacks, by its own name,
        with the paths' self and total times."""
        d, _ = self.flame_of([cgtest.prog("flame")])
        folded = sorted(glob.glob(os.path.join(d, "*.folded")))
        self.assertTrue(folded)
        for f in folded:
            self.assertFalse(os.path.basename(f).startswith("callgrind."), f)
            shown = speedscope.open_profile(f)
            self.assertEqual(shown.importer, "Importing as collapsed stack format", (f, shown.console))
            threads = sorted(glob.glob(os.path.join(d, "callgrind.paths.*")))
            if "-" in os.path.basename(f).rsplit(".", 2)[-2]:
                nn = f.rsplit("-", 1)[1].split(".")[0]
                threads = [t for t in threads if t.endswith("-" + nn)]
            self.assertEqual(shown_weights(shown.profiles[0]), paths_weights(threads), f)

    def test_threads_and_recursion(self):
        # examples/threads: five threads, fib recursive under fib_worker
        d, js = self.flame_of([cgtest.example("threads")])
        shown = speedscope.open_profile(js)
        self.assertIn("fib", shown_weights(shown.profiles[0]))
        self.assert_profiles(d, shown)


def folded_stacks(path):
    """{(frame, ...): self} of a .folded file (no name of these programs
    needs an escape)."""
    out = {}
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            out[tuple(stack.split(";"))] = out.get(tuple(stack.split(";")), 0) + int(n)
    return out


class FlameFromArcs(unittest.TestCase):
    """Issue 28 (1): a flame graph from a run that wrote no path files,
    its stacks estimated from the arcs (cgproflib/estimate.py). Checked
    against the path files of the same run (CGPROF_PATHS=1, exact time:
    the Callgrind parts and the path files hold the same times): every
    function's self time summed over its stacks is the file's; the frames
    marked as estimates (" ~") are exactly the functions with two or more
    callers (recursion's arcs aside); and every stack with no marked frame
    is a stack of the path files with the same self time, and the path
    files' stacks without a marked function are all there (whole sets)."""

    def estimate_of(self, argv):
        d = tempfile.mkdtemp(prefix="cgprof-estimate-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        env = cgtest.clean_environ({"CGPROF_PATHS": "1"})
        p = subprocess.run([LAUNCHER, "--quiet"] + argv, cwd=d, env=env, capture_output=True, text=True,
                           timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        arcs = os.path.join(d, "arcs")
        os.mkdir(arcs)
        parts = sorted(glob.glob(os.path.join(d, "callgrind.out.*")))
        self.assertTrue(parts)
        for f in parts:
            shutil.copy(f, arcs)
        p = subprocess.run([LAUNCHER, "flame", arcs], cwd=d, env=env, capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        written = p.stdout.split()
        self.assertEqual([os.path.dirname(w) for w in written], [arcs] * len(written))
        return d, arcs, parts, written

    def check_thread(self, folded, part, path_file):
        prof = reader.load(part, strict=True)
        est = folded_stacks(folded)
        marked = {fr[:-len(paths.ESTIMATE_MARK)] for st in est for fr in st if fr.endswith(paths.ESTIMATE_MARK)}
        callers = {}
        for c in prof.calls:
            if c.caller.name != c.callee.name:
                callers.setdefault(c.callee.name, set()).add(c.caller.name)
        # recursion's arcs aside: shapes' is_even is called by main and
        # by is_odd, which only it calls
        closing = {(g, f) for f, cs in callers.items() for g in cs if f in callers.get(g, ()) and len(callers[g]) == 1}
        several = {f for f, cs in callers.items() if len({g for g in cs if (g, f) not in closing}) > 1}
        self.assertEqual(marked, several, folded)
        # self per function: the file's, exactly
        per = {}
        for st, v in est.items():
            fn = st[-1][:-len(paths.ESTIMATE_MARK)] if st[-1].endswith(paths.ESTIMATE_MARK) else st[-1]
            per[fn] = per.get(fn, 0) + v
        names = {k.name for k in prof.functions}
        want = {n: prof.self_cost(n) for n in names if prof.self_cost(n)}
        self.assertEqual({k: v for k, v in per.items() if v}, want, folded)
        # the stacks the arcs decide: those of the path files
        exact = {}
        for names, _calls, _incl, s in paths.read(path_file).paths:
            if s:
                exact[names] = s
        instrumented = {fn for names in exact for fn in names}
        decided = {}
        for st, v in est.items():
            if any(fr.endswith(paths.ESTIMATE_MARK) for fr in st):
                continue
            # the path files hold instrumented functions only; the arcs
            # also libc's callers of main and threads, and libc code seen
            # running callbacks (qsort's msort_with_tmp: its time is the
            # caller's own on a path)
            st = tuple(fr for fr in st if fr in instrumented)
            if st:
                decided[st] = decided.get(st, 0) + v
        self.assertEqual(decided, {st: v for st, v in exact.items() if not set(st) & marked}, folded)
        return marked

    def check_run(self, argv, expect_marked):
        d, arcs, parts, written = self.estimate_of(argv)
        marked = set()
        for part in parts:
            nn = part.rsplit("-", 1)[1]
            (folded,) = [w for w in written if w.endswith("-%s.folded" % nn)]
            path_file = os.path.join(d, os.path.basename(part).replace("callgrind.out.", "callgrind.paths."))
            marked |= self.check_thread(folded, part, path_file)
        self.assertEqual(marked, expect_marked)
        return written

    def test_two_callers(self):
        written = self.check_run([cgtest.prog("flame")], {"spin"})
        (js,) = [w for w in written if w.endswith(".speedscope.json")]
        with open(js) as f:
            doc = json.load(f)
        self.assertIn("stacks estimated from the arcs", doc["name"])
        self.assertIn("spin" + paths.ESTIMATE_MARK, [fr["name"] for fr in doc["shared"]["frames"]])

    def test_mutual_recursion(self):
        for prog in ("shapes", "shapes-clang"):
            with self.subTest(prog=prog):
                self.check_run([cgtest.prog(prog), "mutual"], set())

    def test_threads(self):
        self.check_run([cgtest.example("threads")], set())

    def test_opens_in_speedscope(self):
        speedscope.require_browser()
        written = self.check_run([cgtest.prog("flame")], {"spin"})
        (js,) = [w for w in written if w.endswith(".speedscope.json")]
        shown = speedscope.open_profile(js)
        self.assertEqual(shown.importer, "Importing as speedscope json file")
        weights = shown_weights(shown.profiles[0])
        self.assertEqual(set(weights), {"main", "parse", "tokenize", "render", "layout", "spin ~", ROOT})
        self.assertGreater(shown.drawn, 0.02, "the flame graph is blank")


class PositionsLine(unittest.TestCase):
    """CGPROF_POSITIONS=line against the default, in the readers that need
    no browser: callgrind_annotate and the strict reader. Two runs of one
    program (the option is read at start-up): the same functions, calls and
    source lines; only the times, the addresses and the order differ."""

    def load_run(self, env):
        run = cgtest.run_preloaded(self, [cgtest.example("basic")], env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        (part,) = run.files
        (total,) = glob.glob(os.path.join(run.directory, "callgrind.total.*"))
        return [reader.load(part, strict=True), reader.load(total, strict=True)]

    @staticmethod
    def shape(prof):
        """The file without its costs and addresses: the source lines that
        have self cost per function, and the calls summed per (caller,
        callee, call line, callee line). Not in file order: the tables are
        hashed by address, so the order changes with ASLR from run to run,
        and with positions "line" two addresses on one line may be written
        as one cost line or two (as they come), which a reader sums."""
        lines = set()
        for key, f in prof.functions.items():
            for c in f.cost_lines:
                lines.add((key, c.file, c.line))
        calls = collections.Counter()
        for c in prof.calls:
            calls[(c.caller, c.callee, c.file, c.line, c.target_line)] += c.count
        return sorted(lines), sorted(calls.items())

    def annotate(self, path):
        if not shutil.which("callgrind_annotate"):
            self.fail("callgrind_annotate is not installed (scripts/deps.sh installs valgrind)")
        p = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True,
                           timeout=cgtest.limit(120))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        total = re.search(r"^([0-9,]+) \(100\.0%\)\s+PROGRAM TOTALS$", p.stdout, re.M)
        self.assertIsNotNone(total, p.stdout)
        fns = {}
        for m in re.finditer(r"^\s*([0-9,]+) \(\s*[0-9.]+%\)\s+\S*:(\S+) \[", p.stdout, re.M):
            fns[m.group(2)] = fns.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
        return int(total.group(1).replace(",", "")), fns

    def test_line_file_is_the_default_without_addresses(self):
        # Without compensation: it may bring a short segment of self time
        # to 0 ns, and a line with no cost is not written, so which lines
        # have self cost would depend on the machine's speed.
        default = self.load_run({"CGPROF_COMPENSATE": "0"})
        line = self.load_run({"CGPROF_POSITIONS": "line", "CGPROF_COMPENSATE": "0"})
        for d, l in zip(default, line):
            self.assertEqual([str(v) for v in d.violations + l.violations], [])
            self.assertEqual(d.positions, ["instr", "line"])
            self.assertEqual(l.positions, ["line"])
            self.assertTrue(all(c.instr is None for f in l.functions.values() for c in f.cost_lines))
            self.assertTrue(all(c.target_instr is None for c in l.calls))
            self.assertEqual(self.shape(l), self.shape(d))
            # callgrind_annotate reads it: its totals, and each function's
            # self cost, are the file's (as the strict reader sums them)
            total, fns = self.annotate(l.path)
            self.assertEqual(total, l.totals[0])
            self.assertEqual(total, l.total_self())
            want = {}
            for key, f in l.functions.items():
                cost = f.self_costs(1)[0]
                if cost:
                    want[key.name] = want.get(key.name, 0) + cost
            self.assertEqual(fns, want)

    def test_every_file_follows(self):
        # every Callgrind file of a run: each thread's, the threads that
        # ended merged (thread 00), the total
        run = cgtest.run_preloaded(self, [cgtest.example("threads")],
                                   env={"CGPROF_POSITIONS": "line", "CGPROF_THREAD_EXIT": "merge"})
        self.assertEqual(run.returncode, 0, run.stderr)
        files = run.files + glob.glob(os.path.join(run.directory, "callgrind.total.*"))
        names = sorted(os.path.basename(f).split(".")[-1].split("-")[-1] for f in files)
        self.assertEqual(len(names), 3, files)  # main, the merged workers (00), the total
        self.assertIn("00", names)
        for f in files:
            prof = reader.load(f, strict=True)
            self.assertEqual([str(v) for v in prof.violations], [], f)
            self.assertEqual(prof.positions, ["line"], f)
            total, _ = self.annotate(f)
            self.assertEqual(total, prof.totals[0], f)


if __name__ == "__main__":
    unittest.main(verbosity=2)
