"""CGPROF_INLINED=fold against a truth that does not use cgprof's own rule.

A call the compiler inlined keeps its hooks, called from the code of the
function it was inlined into; with CGPROF_INLINED=fold cgprof shows no
frame for it: its time is its host's, and the calls it makes are its
host's (the nearest enclosing call that was not inlined). The truth:

1. the nesting oracle (tests/nesting/nest.c) run with CGNEST_SITES=1 says
   from which places each function's hooks were called;
2. inlined_truth.py decides from the symbol tables and the debug
   information (objdump, readelf, addr2line) which of those places are
   inlined calls';
3. the oracle run again with CGNEST_FOLD=<those places> leaves their hook
   calls out: its counts and arcs are those of the calls that were not
   inlined, each inlined call's calls re-parented to its nearest
   non-inlined ancestor;
4. cgprof (CGPROF_INLINED=fold), with its hook calls taken back and with
   CGPROF_TAKEBACK=0 (the same profile without changing the program's
   code), must give exactly those counts and arcs, whole sets: no repair,
   the program's output unchanged, files callgrind_annotate reads.

On tests/nesting/progs built by gcc and clang at -O0, -O2, -O3 (the
programs whose hooks nest: not jumps, throws' clang builds, nor polling,
whose calls depend on timing), and on the examples and tests/progs that
test_nesting's ExistingPrograms runs. At -O0 nothing is inlined: the
folded truth must be the oracle's own (a check of the truth itself); at
-O2 it must fold something, for each compiler.

The runs are made by a pool of as many workers as cores, all at the first
test; the tests then look at what each found.
"""

import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import cgtest
import inlined_truth
import nesting
import test_nesting
from cgtest import LIB, example, prog
from test_nesting import NEST_LIB, clean_env, nesting_prog

MATRIX = (("repro", []), ("shapes2", ["5000"]), ("deferpop", []), ("recurse", ["18"]), ("templates", []),
          ("loadfile", []), ("splitpart", []), ("callbacks", []), ("sortthrow", []))
# Built by clang, templates' and sortthrow's hooks do not nest (throws
# leave frames without their exit hooks, test_nesting): their calls per
# function only.
CALLS_ONLY = {("templates", "clang"), ("sortthrow", "clang")}
# name, args, built at -O0 (instrument_args: -O0 -fno-inline)
EXISTING = ((example("basic"), [], True), (example("threads"), [], True), (example("uselib"), [], True),
            (example("cxx"), [], True), (prog("deep"), ["100000"], True), (prog("deep-clang"), ["100000"], True),
            (prog("shapes"), ["mutual"], True), (prog("shapes-clang"), ["mutual"], True),
            (prog("errno_keep"), [], True), (prog("skips"), [], True), (prog("inlined"), [], False),
            (prog("inlined"), ["nest"], False), (prog("inlined-clang"), [], False),
            (prog("inlined-clang"), ["nest"], False), (prog("throws"), [], True))
# and the counting hooks (CGPROF_STACKS=unwind, sampled time: issue 38),
# which must count the same calls, keeping no stack
FOLD_ENV = ({"CGPROF_INLINED": "fold"}, {"CGPROF_INLINED": "fold", "CGPROF_TAKEBACK": "0"},
            {"CGPROF_INLINED": "fold", "CGPROF_STACKS": "unwind", "CGPROF_TIME": "sample"})
FOLD_KEYS = ("fold", "fold-notakeback", "fold-unwind")
TIMEOUT = cgtest.limit(120)
SHOW = 15   # differences shown per comparison


class Variant:
    """One program (and its arguments) through the whole chain."""

    def __init__(self, label, argv, o0, compiler=None, level=None, nests=True, cwd=None, preload=(), oracle=None):
        self.label, self.argv, self.o0, self.compiler, self.level = label, argv, o0, compiler, level
        self.nests = nests      # whether its hooks nest: arcs compared too
        # every run's working directory, for a program whose calls depend
        # on it (jq, test_realprog), the outputs then named by CGNEST_OUT
        # and CGPROF_OUT; None: each run in its output directory
        self.cwd = cwd
        self.preload = list(preload)  # libraries preloaded before the oracle and cgprof
        self.oracle = oracle or NEST_LIB
        self.problems = []      # what is wrong, as text
        self.truth_problems = []  # what is wrong with the truth itself
        self.verdicts = []
        self.inlined = 0        # sites judged inlined
        self.folded_calls = 0   # enters the folded oracle left out
        self.seconds = 0.0
        self.summary = {}
        self.always_inline = []  # at -O0: the functions judged inlined
        self.error = None       # an exception that stopped the chain

    def __repr__(self):
        return self.label


def variants():
    out = []
    for name, args in MATRIX:
        for cc in ("gcc", "clang"):
            for level in "023":
                p = nesting_prog(name, cc, level)
                if os.path.exists(p):
                    out.append(Variant("%s-%s-O%s" % (name, cc, level), [p] + args, level == "0", cc, level,
                                       (name, cc) not in CALLS_ONLY))
    for path, args, o0 in EXISTING:
        if os.path.exists(path):
            out.append(Variant(" ".join([os.path.relpath(path, cgtest.BUILD_DIR)] + args), [path] + args, o0))
    return out


def always_inline_functions():
    """The functions the sources declare always_inline: inlined at -O0 too,
    by gcc and clang, their hooks kept (shapes2.c's tiny)."""
    names = set()
    pat = re.compile(r"always_inline\)\)[^;{(]*?\b(\w+)\s*\(")
    for d in (("tests", "nesting", "progs"), ("tests", "progs"), ("examples",)):
        for path in glob.glob(os.path.join(cgtest.SOURCE_DIR, *d, "*.[ch]*")):
            with open(path, errors="replace") as f:
                names |= set(pat.findall(f.read()))
    return names


def without(oracle, gone):
    """The oracle's (fns, arcs) with the functions `gone` folded into their
    callers (each must have one caller, besides other functions gone), or
    None when that cannot be told from the arcs."""
    fns = {k: n for k, n in oracle.fns.items() if k not in gone}
    callers = {}
    for (a, b), n in oracle.arcs.items():
        if b in gone:
            callers.setdefault(b, set()).add(a)

    def host(f, seen=()):
        cs = callers.get(f, set())
        if len(cs) != 1:
            return None
        c = next(iter(cs))
        if c in gone:
            return None if c in seen else host(c, seen + (f,))
        return c
    arcs = {}
    for (a, b), n in oracle.arcs.items():
        if b in gone:
            continue
        if a in gone:
            a = host(a)
            if a is None:
                return None
        arcs[(a, b)] = arcs.get((a, b), 0) + n
    return fns, arcs


def run(argv, directory, env):
    return subprocess.run(argv, cwd=directory, env=clean_env(env), capture_output=True, text=True, timeout=TIMEOUT)


def annotate_problems(files):
    if not shutil.which("callgrind_annotate"):
        return []
    out = []
    for f in files:
        p = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", f], capture_output=True,
                           text=True, timeout=TIMEOUT)
        if p.returncode != 0 or "WARNING" in p.stderr or "malformed" in p.stderr:
            out.append("callgrind_annotate %s: %s" % (os.path.basename(f), p.stderr.strip()[:300]))
    return out


def sets(cg):
    return dict(cg.fns), dict(cg.arcs)


def evaluate(v):
    """The chain for one variant; everything found goes into v."""
    t0 = time.monotonic()
    d = tempfile.mkdtemp(prefix="cgprof-fold-")
    try:
        _evaluate(v, d)
    except Exception as e:  # noqa: BLE001: reported by the test
        v.error = "%s: %s" % (type(e).__name__, e)
    finally:
        shutil.rmtree(d, ignore_errors=True)
        v.seconds = time.monotonic() - t0
    return v


def _evaluate(v, d):
    dirs = {k: os.path.join(d, k) for k in ("sites", "folded") + FOLD_KEYS}
    for x in dirs.values():
        os.mkdir(x)
    def preload(lib):
        return ":".join(v.preload + [lib])

    # 1. the oracle, and every place a hook was called from
    r = run(v.argv, v.cwd or dirs["sites"], {"LD_PRELOAD": preload(v.oracle), "CGNEST_OUT": dirs["sites"],
                                             "CGNEST_SITES": "1"})
    if r.returncode != 0:
        v.error = "the program under the oracle: exit %d: %s" % (r.returncode, r.stderr[-500:])
        return
    stdout = r.stdout
    plain = nesting.Oracle.load(dirs["sites"])
    if plain.nests != v.nests or plain.dropped:
        v.error = "the oracle says the hooks %s (mismatched %d, unmatched %d, dropped %d)" % (
            "nest" if plain.nests else "do not nest", plain.mismatched, plain.unmatched, plain.dropped)
        return
    if not plain.sites:
        v.error = "the oracle wrote no site lines (CGNEST_SITES=1)"
        return

    # 2. which of those places are inlined calls'
    try:
        v.verdicts = inlined_truth.judge(plain.sites)
    except inlined_truth.TruthError as e:
        v.truth_problems.append("the truth cannot be computed: %s" % e)
        return
    v.inlined = sum(1 for x in v.verdicts if x.inlined)
    fold_file = inlined_truth.write_fold_file(v.verdicts, os.path.join(d, "fold.list"))

    # 3. the oracle leaving the inlined calls' hooks out
    r = run(v.argv, v.cwd or dirs["folded"], {"LD_PRELOAD": preload(v.oracle), "CGNEST_OUT": dirs["folded"],
                                              "CGNEST_FOLD": fold_file})
    if r.returncode != 0 or r.stdout != stdout:
        v.error = "the program under the folding oracle: exit %d%s: %s" % (
            r.returncode, "" if r.stdout == stdout else ", its output changed", r.stderr[-500:])
        return
    folded = nesting.Oracle.load(dirs["folded"])
    f = folded.fold or {}
    v.folded_calls = f.get("enters", 0)
    if folded.dropped or (v.nests and not folded.nests):
        v.truth_problems.append(
            "the folded oracle's hooks do not nest (mismatched %d, unmatched %d, dropped %d): the truth "
            "left out an enter without its exit or the other way round" % (
                folded.mismatched, folded.unmatched, folded.dropped))
    if f.get("listed") != f.get("resolved") or f.get("listed") != len(inlined_truth.fold_lines(v.verdicts)):
        v.truth_problems.append("the folding oracle found %s of the %d places listed" % (
            f.get("resolved"), len(inlined_truth.fold_lines(v.verdicts))))
    if v.nests and f.get("enters") != f.get("exits"):
        v.truth_problems.append("the folding oracle left out %s enters and %s exits" % (f.get("enters"),
                                                                                     f.get("exits")))
    expected_left_out = sum(x.count for x in v.verdicts if x.inlined and x.kind == "enter")
    if f.get("enters") != expected_left_out:
        v.truth_problems.append("the folding oracle left out %s enters, the inlined sites had %d" % (
            f.get("enters"), expected_left_out))
    if v.o0:
        # nothing is inlined at -O0 but what is declared always_inline,
        # and that everywhere: the truth is the oracle with those functions
        # folded into their callers
        v.always_inline = sorted({x.fn_name for x in v.verdicts if x.inlined})
        odd = set(v.always_inline) - always_inline_functions()
        if odd:
            v.truth_problems.append("built at -O0, yet sites judged inlined of functions not always_inline: %s"
                                    % [str(x) for x in v.verdicts if x.inlined and x.fn_name in odd][:5])
        gone = {(x.obj, x.fn) for x in v.verdicts if x.inlined}
        expected = without(plain, gone)
        if expected is None:
            v.truth_problems.append("built at -O0: cannot fold %s into one caller each" % v.always_inline)
        elif (dict(folded.fns), dict(folded.arcs)) != expected:
            v.truth_problems.append("built at -O0, yet the folded oracle is not the oracle%s" % (
                " without %s" % ", ".join(v.always_inline) if gone else ""))

    # 4. cgprof folding, with and without taking hook calls back
    results = []
    for env, key in zip(FOLD_ENV, FOLD_KEYS):
        env = dict(env, LD_PRELOAD=preload(LIB))
        if v.cwd:
            env["CGPROF_OUT"] = os.path.join(dirs[key], "callgrind.out")
        r = subprocess.run(cgtest.wrapped(v.argv), cwd=v.cwd or dirs[key], env=clean_env(env),
                           capture_output=True, text=True, timeout=TIMEOUT * (20 if cgtest.WRAPPER else 1))
        what = "cgprof " + " ".join("%s=%s" % kv for kv in sorted(env.items())
                                    if kv[0] not in ("LD_PRELOAD", "CGPROF_OUT"))
        if r.returncode != 0:
            v.problems.append("%s: exit %d: %s" % (what, r.returncode, r.stderr[-500:]))
            continue
        if r.stdout != stdout:
            v.problems.append("%s: the program's output changed" % what)
        files = sorted(glob.glob(os.path.join(dirs[key], "callgrind.out.*")))
        if not files:
            v.problems.append("%s: no files" % what)
            continue
        # the instrumented functions are all those whose hooks ran: a
        # function cgprof shows although every call of it was inlined is a
        # difference, not a callback from uninstrumented code
        cg = nesting.Cgprof(files, plain)
        diffs = nesting.compare(folded, cg, arcs=v.nests)
        if diffs:
            v.problems.append("%s: %d differences with the folded oracle:\n      %s" % (
                what, len(diffs), "\n      ".join(diffs[:SHOW])))
        rep = test_nesting.repairs(cg)
        if rep:
            v.problems.append("%s: repairs %s" % (what, rep))
        if "warning" in r.stderr:
            v.problems.append("%s: says %s" % (what, r.stderr.strip()[-300:]))
        v.problems += ["%s: %s" % (what, p) for p in annotate_problems(files)]
        results.append((what, cg))
        if key == "fold":
            v.summary = nesting.summary(folded, cg)
    for other in results[1:]:
        a, b = sets(results[0][1]), sets(other[1])
        if a == b:
            continue
        n = sum(1 for k in set(a[0]) | set(b[0]) if a[0].get(k) != b[0].get(k)) + \
            sum(1 for k in set(a[1]) | set(b[1]) if a[1].get(k) != b[1].get(k))
        v.problems.append("%s and %s differ: %d functions or arcs" % (results[0][0], other[0], n))


_results = None
_lock = threading.Lock()


def results(test):
    """Every variant's chain, run once (in parallel) for all the tests."""
    global _results
    if not os.path.exists(NEST_LIB):
        test.skipTest("the oracle is not built: %s" % NEST_LIB)
    with _lock:
        if _results is None:
            vs = variants()
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
                _results = list(pool.map(evaluate, vs))
            if os.environ.get("CGPROF_FOLD_VERBOSE"):
                for v in _results:
                    print("%-32s %5.2fs inlined sites %4d, enters left out %8d, %s" % (
                        v.label, v.seconds, v.inlined, v.folded_calls,
                        "ok" if not (v.problems or v.truth_problems or v.error) else "FAIL"))
    return _results


class Fold(unittest.TestCase):
    def check(self, selected):
        if not selected:
            self.skipTest("none built")
        for v in selected:
            with self.subTest(program=v.label):
                if v.error:
                    self.fail(v.error)
                if v.truth_problems:
                    self.fail("the truth for %s:\n  %s\nits sites:\n%s" % (
                        v.label, "\n  ".join(v.truth_problems), "\n".join(inlined_truth.describe(v.verdicts)[:60])))
                if v.problems:
                    self.fail("%s (%d sites judged inlined, %d enters left out%s):\n  %s" % (
                        v.label, v.inlined, v.folded_calls, "" if v.nests else "; its hooks do not nest: calls per "
                        "function compared, not arcs", "\n  ".join(v.problems)))

    def test_nesting_programs(self):
        """tests/nesting/progs, gcc and clang, -O0, -O2, -O3."""
        self.check([v for v in results(self) if v.compiler])

    def test_existing_programs(self):
        """The examples and tests/progs."""
        self.check([v for v in results(self) if not v.compiler])

    def test_truth_folds_at_O2(self):
        """The truth is not empty where the compilers inline: at -O2 some
        program of each compiler has inlined sites (the test cannot pass by
        folding nothing)."""
        rs = results(self)
        for cc in ("gcc", "clang"):
            o2 = [v for v in rs if v.compiler == cc and v.level == "2"]
            if not o2:
                continue
            with self.subTest(compiler=cc):
                self.assertTrue(any(v.inlined and v.folded_calls for v in o2),
                                ["%s: %d sites, %d enters" % (v.label, v.inlined, v.folded_calls) for v in o2])

    def test_truth_at_O0_is_the_oracle(self):
        """At -O0 nothing is inlined but what is declared always_inline
        (shapes2.c's tiny, by gcc and by clang): the folding oracle's counts
        and arcs are the oracle's, those functions folded into their one
        caller (a check of the truth itself)."""
        o0 = [v for v in results(self) if v.o0]
        if not o0:
            self.skipTest("none built")
        forced = always_inline_functions()
        for v in o0:
            with self.subTest(program=v.label):
                self.assertIsNone(v.error, v.error)
                self.assertTrue(v.verdicts, "no sites")
                self.assertEqual(v.truth_problems, [])
                self.assertLessEqual(set(v.always_inline), forced)
                if not v.always_inline:
                    self.assertEqual(v.folded_calls, 0)
        # the check is not vacuous: shapes2's tiny is folded at -O0
        shapes2 = [v for v in o0 if v.label.startswith("shapes2-")]
        for v in shapes2:
            self.assertEqual(v.always_inline, ["tiny"], v.label)


if __name__ == "__main__":
    unittest.main(verbosity=2)
