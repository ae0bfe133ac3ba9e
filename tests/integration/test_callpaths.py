"""CGPROF_PATHS: the calling-context tree the hooks keep (docs/internals/paths-format.md).

What a user of flame graphs checks: every path with its exact calls (against
Valgrind's own call paths, --separate-callers, on the same binary), self
times that add up to the Callgrind part's total, a tree whose times nest,
recursion that does not blow the tree up, a bound that holds, and the same
paths through dumps, thread merging and fork. Programs: tests/nesting/progs/
paths.c built by gcc and clang at -O0, -O2 and -O3 (inlined calls keep their
hooks), the examples, and the programs of longjmp, exceptions and sampling.

The path files are read here by a parser of this file's own, written from
the format's document: an independent check of the runtime's writer.
"""

import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import cgtest
from cgproflib import reader
from test_dumps import signal_phases

NEST_DIR = os.path.join(cgtest.BUILD_DIR, "tests", "nesting")
PATHS_SRC = os.path.join(cgtest.SOURCE_DIR, "tests", "nesting", "progs", "paths.c")


def paths_prog(cc, level):
    return os.path.join(NEST_DIR, "paths-%s-O%s" % (cc, level))


class PathFile:
    """One path file: its header and nodes, each node with its path (a tuple
    of function names from the root)."""

    HEADER = ("paths", "pid", "thread", "part", "cmd", "events", "nodes", "folded", "beyond")

    def __init__(self, path):
        self.path = path
        self.header = {}
        self.nodes = {}  # id -> dict(parent, fn, calls, incl, self, path)
        names = {}
        with open(path) as f:
            lines = f.read().split("\n")
        assert lines[-1] == "", "%s: does not end with a newline" % path
        for no, line in enumerate(lines[:-1], 1):
            where = "%s:%d: %r" % (path, no, line)
            if line.startswith("#"):
                continue
            if line.startswith("fn "):
                _, fid, name = line.split(" ", 2)
                assert int(fid) not in names, where
                names[int(fid)] = name
            elif line.startswith("node "):
                f = line.split(" ")
                assert len(f) == 7, where
                nid, parent, fid, calls, incl, self_ = (int(x) for x in f[1:])
                assert nid not in self.nodes and (parent == 0 or parent in self.nodes), where
                assert fid in names, where
                p = (self.nodes[parent]["path"] if parent else ()) + (names[fid],)
                self.nodes[nid] = dict(parent=parent, fn=names[fid], calls=calls, incl=incl, self=self_, path=p)
            else:
                key, _, value = line.partition(": ")
                assert key in self.HEADER and key not in self.header, where
                self.header[key] = value
        for key in self.HEADER:
            assert key in self.header, "%s: no %s: line" % (path, key)
        m = re.fullmatch(r"(\d+) of (\d+)", self.header["nodes"])
        assert m, self.header["nodes"]
        self.tree_nodes, self.bound = int(m.group(1)), int(m.group(2))
        self.folded = int(self.header["folded"])
        self.beyond_calls, self.beyond_paths = (int(x) for x in self.header["beyond"].split())

    def calls_by_path(self):
        out = {}
        for n in self.nodes.values():
            out[n["path"]] = out.get(n["path"], 0) + n["calls"]
        return out

    def children(self, nid):
        return [n for n in self.nodes.values() if n["parent"] == nid]


def path_file_of(part):
    """The path file of a Callgrind part: its name's .out made .paths."""
    d, name = os.path.split(part)
    i = name.rfind(".out")
    return os.path.join(d, name[:i] + ".paths" + name[i + 4:])


def fold(chain):
    """A chain of functions from the root, folded as the runtime folds
    recursion: a function already on the path goes back to its node."""
    path = []
    for f in chain:
        if f in path:
            del path[path.index(f) + 1:]
        else:
            path.append(f)
    return tuple(path)


class Checks(cgtest.ProfileAssertions):

    def run_paths(self, argv, env=None, **kw):
        # the logical paths (every hook pair a call), which paths.c's
        # shapes are counted in; folded, below (test_folded_builds_agree)
        e = {"CGPROF_PATHS": "1", "CGPROF_INLINED": "count"}
        e.update(env or {})
        run = cgtest.run_preloaded(self, argv, env=e, **kw)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(cgtest.stderr_lines(run.stderr), [], run.stderr)
        self.assertTrue(run.files)
        return run

    def assert_agrees_with_part(self, part, running_slack=0.0):
        """The path file of a part against the part itself (whose arcs are
        exact: tests elsewhere): the same calls per function, the same
        total self time, times that nest, no function twice on a path.
        running_slack: for a part of a thread that ran while it was read
        (a dump by signal), how far a node's time may be from its own and
        its children's, as a fraction of the part's total (assert_valid's
        allowance: such a reading is torn)."""
        prof = reader.load(part)
        self.assertEqual(prof.violations, [], part)
        pf = PathFile(path_file_of(part))
        where = os.path.basename(part)
        self.assertEqual(int(pf.header["thread"]), int(prof.thread), where)
        self.assertEqual(int(pf.header["part"]), int(prof.part), where)
        # calls of each function: the part's incoming arcs, the whole set
        arcs = {}
        for (_, callee), n in prof.call_counts().items():
            arcs[callee] = arcs.get(callee, 0) + n
        paths = {}
        for n in pf.nodes.values():
            paths[n["fn"]] = paths.get(n["fn"], 0) + n["calls"]
        arcs = {k: v for k, v in arcs.items() if v}
        paths = {k: v for k, v in paths.items() if v}
        # The part may also hold calls the hooks never saw, inferred: into
        # the uninstrumented function from which a callback was called
        # (qsort's msort_with_tmp calling cmp), counted by the callback's
        # runs; no path goes through those.
        inferred = {k for k in set(arcs) - set(paths)
                    if all(c.count == 0 or c.callee.name != k or c.caller.name in paths or c.caller.name == k
                           for c in prof.calls)}
        # Nor are such counts exact where a path has the function too (a
        # sample landed in it: a visit): both are lower bounds (visits),
        # the arcs' the runs of its callbacks, which overshoot where it
        # calls back from several sites (aarch64's msort: 15 for 1, under
        # load, when a sample landed there), the paths' the samples seen.
        visits = {k for k in set(arcs) & set(paths) if k in prof.visits}
        self.assertEqual({k: v for k, v in paths.items() if k not in visits},
                         {k: v for k, v in arcs.items() if k not in inferred and k not in visits}, where)
        # self time: the part's total, to the nanosecond
        self.assertEqual(sum(n["self"] for n in pf.nodes.values()), prof.total_self(), where)
        for nid, n in pf.nodes.items():
            self.assertEqual(len(set(n["path"])), len(n["path"]), "%s: %s" % (where, n["path"]))
            # a node's time is its own and its children's (with recursion
            # folded, the time of a re-entry is its earlier node's: the
            # outermost call's time holds it, its parent's own does not)
            if pf.folded == 0:
                below = n["self"] + sum(c["incl"] for c in pf.children(nid))
                self.assertLessEqual(abs(n["incl"] - below), int(running_slack * prof.total_self()),
                                     "%s: %s: %d, its own and its children's %d" % (where, n["path"], n["incl"], below))
            self.assertGreaterEqual(n["incl"], n["self"], "%s: %s" % (where, n["path"]))
        # under a root called once, a child's time is the root's arcs' to
        # it, to the nanosecond (the paths and the arcs time the same calls)
        for rid, root in pf.nodes.items():
            if root["parent"] != 0 or root["calls"] != 1:
                continue
            for child in pf.children(rid):
                if child["fn"] in (root["fn"], "[paths beyond the bound]"):
                    continue
                arcs = [c for c in prof.calls if c.caller.name == root["fn"] and c.callee.name == child["fn"]]
                if not arcs:
                    continue  # a callback, called from the library's code (qsort): the arc's caller is that
                self.assertEqual(child["incl"], sum(c.costs[0] for c in arcs), "%s: %s" % (where, child["path"]))
        return pf, prof


class AgreesWithArcs(Checks):
    """Every thread's path file against its Callgrind part."""

    def test_paths_prog_every_build(self):
        found = [(cc, lv) for cc in ("gcc", "clang") for lv in "023" if os.path.exists(paths_prog(cc, lv))]
        self.assertTrue(found, "no build of paths.c in " + NEST_DIR)
        if shutil.which("clang"):
            self.assertIn(("clang", "2"), found)
        for cc, level in found:
            with self.subTest(compiler=cc, level=level):
                run = self.run_paths([paths_prog(cc, level), "1000"])
                self.assertEqual(len(run.files), 1)
                pf, _ = self.assert_agrees_with_part(run.files[0])
                calls = pf.calls_by_path()
                # the shapes: lex under parse and under eval, apart
                self.assertEqual(calls[("main", "parse", "lex")], 10 + 1 + 3 + 1)
                self.assertEqual(calls[("main", "eval", "lex")], 5)
                # mutual recursion 1000 deep: two nodes, every call counted
                self.assertEqual(calls[("main", "is_even")] + calls[("main", "is_even", "is_odd")], 1001)
                self.assertNotIn(("main", "is_even", "is_odd", "is_even"), calls)
                self.assertEqual(calls[("main", "fib")], 1973)  # fib(15): 2 * fib(16) - 1 calls
                self.assertEqual(calls[("main", "down")], 1001)
                self.assertEqual(calls[("main", "down", "lex")], 1)
                self.assertEqual(calls[("main", "sort", "cmp")], pf.calls_by_path()[("main", "sort", "cmp")])
                self.assertGreater(calls[("main", "sort", "cmp")], 0)
                self.assertGreater(pf.folded, 0)

    def test_folded_builds_agree(self):
        """CGPROF_INLINED=fold (the default): a folded call is no step of a
        path either; every build's path file agrees with its part (calls
        per function, self time, inclusive = self + children), and folding
        removed calls at -O2 and -O3, none at -O0."""
        for cc in ("gcc", "clang"):
            for level in "023":
                exe = paths_prog(cc, level)
                if not os.path.exists(exe):
                    continue
                with self.subTest(compiler=cc, level=level):
                    folded = self.run_paths([exe, "1000"], env={"CGPROF_INLINED": "fold"})
                    pf, _ = self.assert_agrees_with_part(folded.files[0])
                    logical = PathFile(path_file_of(self.run_paths([exe, "1000"]).files[0]))
                    n_fold, n_all = sum(pf.calls_by_path().values()), sum(logical.calls_by_path().values())
                    if level == "0":
                        self.assertEqual(n_fold, n_all)
                    else:
                        self.assertLess(n_fold, n_all)

    def test_examples_and_hazards(self):
        cases = [
            ([cgtest.example("basic")], {}),
            ([cgtest.example("cxx")], {}),
            ([cgtest.example("threads")], {}),
            ([cgtest.prog("jumps")], {}),
            ([cgtest.prog("throws")], {}),
            ([cgtest.prog("inlined")], {}),
            # handlers making calls, their hooks deferred and replayed
            ([cgtest.prog("sigstorm"), "3000000", "0", cgtest.SIGSTORM_US], {}),
            ([cgtest.prog("ownsig")], {"CGPROF_SIGNAL": "USR2"}),
            ([cgtest.prog("skips")], {"CGPROF_SKIP": "skipped_*"}),
            ([cgtest.example("basic")], {"CGPROF_TIME": "sample", "CGPROF_SAMPLE_HZ": "250"}),
        ]
        for argv, env in cases:
            if not os.path.exists(argv[0]):
                continue
            with self.subTest(prog=os.path.basename(argv[0]), env=env):
                run = self.run_paths(argv, env=env)
                for part in run.files:
                    self.assert_agrees_with_part(part)


class MatchesValgrind(Checks):
    """Calls per path against Valgrind's call contexts (--separate-callers)
    on the same binary, built so that every call is a real call (Valgrind
    does not see inlined ones): the whole set of paths, recursion folded by
    the runtime's rule on both sides."""

    def valgrind_paths(self, argv, ours):
        if not shutil.which("valgrind"):
            self.skipTest("valgrind is not installed")
        d = tempfile.mkdtemp(prefix="cgprof-vgpaths-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        out = os.path.join(d, "vg.out")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        p = subprocess.run(["valgrind", "--tool=callgrind", "--separate-callers=60", "--callgrind-out-file=" + out]
                           + argv, cwd=d, env=env, capture_output=True, text=True, timeout=cgtest.limit(600))
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        prof = reader.load(out)
        calls = {}
        for (_, callee), n in prof.call_counts().items():
            # "callee['N]'caller1'caller2'...": the innermost first
            parts = [x for x in callee.split("'") if not x.isdigit()]
            if parts[0] not in ours or "main" not in parts:
                continue
            chain = [f for f in reversed(parts[:parts.index("main") + 1]) if f in ours]
            path = fold(chain)
            calls[path] = calls.get(path, 0) + n
        return calls

    def test_paths_equal_valgrinds(self):
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        compilers = [cc for cc in ("gcc", "clang") if shutil.which(cc)]
        for cc in compilers:
            with self.subTest(compiler=cc):
                exe = os.path.join(d, "paths-" + cc)
                subprocess.run([cc, "-O1", "-fno-inline", "-g", "-finstrument-functions", "-o", exe, PATHS_SRC],
                               check=True)
                # 12 deep: Valgrind's contexts (60 callers) hold every chain whole
                run = self.run_paths([exe, "12"])
                pf = PathFile(path_file_of(run.files[0]))
                ours = {k: v for k, v in pf.calls_by_path().items() if v}
                theirs = self.valgrind_paths([exe, "12"], {n["fn"] for n in pf.nodes.values()})
                self.assertEqual(ours, theirs)
                self.assertEqual(len(ours), 12)


class Report(Checks):
    """cgprof report's flat profile with the path files at hand: a
    function's inclusive time from its paths, counted once under mutual
    recursion, where the arcs count the inner levels again."""

    def test_mutual_recursion_counted_once(self):
        from cgproflib import report
        for cc, level in (("gcc", "2"), ("clang", "0")):
            exe = paths_prog(cc, level)
            if not os.path.exists(exe):
                continue
            with self.subTest(compiler=cc, level=level):
                run = self.run_paths([exe, "3000"])
                prof = reader.load(run.files[0])
                flat, total, bad = report.summarize(run.files)
                self.assertEqual(bad, [])
                incl = {k[0]: v[0] for k, v in flat.items()}
                # is_even's time is its one call's from main: the arc's
                arc = sum(c.costs[0] for c in prof.calls if c.caller.name == "main" and c.callee.name == "is_even")
                self.assertEqual(incl["is_even"], arc)
                self.assertLessEqual(incl["is_odd"], incl["is_even"])
                self.assertLessEqual(incl["main"], total)
                # every function's, from the paths: the sum of its nodes'
                pf = PathFile(path_file_of(run.files[0]))
                for fn in ("main", "parse", "lex", "fib", "down", "sort", "cmp"):
                    self.assertEqual(incl[fn], sum(n["incl"] for n in pf.nodes.values() if n["fn"] == fn), fn)
                # without the path files the arcs count the levels again:
                # is_even's time is the sum of its arcs, the call from main
                # (the time counted once, above) and every nested call from
                # is_odd again: more than its time counted once. Compared
                # within the recursion, it holds however long the thread is
                # switched out: anywhere in the recursion that makes the
                # once-counted time longer and the arcs' sum at least as
                # much (it was compared with the whole run's total, which a
                # preemption in main outside the recursion raised past it)
                arcs = sum(c.costs[0] for c in prof.calls if c.callee.name == "is_even")
                for f in glob.glob(os.path.join(run.directory, "callgrind.paths.*")):
                    os.unlink(f)
                flat, _, _ = report.summarize(run.files)
                self.assertEqual({k[0]: v[0] for k, v in flat.items()}["is_even"], arcs)
                self.assertGreater(arcs, incl["is_even"])


class Bounded(Checks):

    def test_recursion_does_not_grow_the_tree(self):
        exe = paths_prog("gcc", "2")
        small = self.run_paths([exe, "10"])
        deep = self.run_paths([exe, "100000"])
        a, b = (PathFile(path_file_of(r.files[0])) for r in (small, deep))
        self.assertEqual(set(a.calls_by_path()), set(b.calls_by_path()))
        self.assertEqual(a.tree_nodes, b.tree_nodes)
        calls = b.calls_by_path()
        self.assertEqual(calls[("main", "is_even")] + calls[("main", "is_even", "is_odd")], 100001)
        self.assertEqual(calls[("main", "down")], 100001)
        # a recursive node's time is its outermost call's: the arc from main
        # (whose cost holds the nested calls), to the nanosecond
        prof = reader.load(deep.files[0])
        for fn in ("down", "is_even", "fib"):
            arc = sum(c.costs[0] for c in prof.calls if c.caller.name == "main" and c.callee.name == fn)
            node = [n for n in b.nodes.values() if n["path"] == ("main", fn)][0]
            self.assertEqual(node["incl"], arc, fn)
        self.assert_agrees_with_part(deep.files[0])

    def test_the_bound_holds(self):
        run = self.run_paths([cgtest.example("cxx")], env={"CGPROF_PATHS_MAX": "16"})
        pf, prof = PathFile(path_file_of(run.files[0])), reader.load(run.files[0])
        self.assertEqual(pf.bound, 16)
        self.assertLessEqual(pf.tree_nodes, 16)
        beyond = [n for n in pf.nodes.values() if n["fn"] == "[paths beyond the bound]"]
        self.assertTrue(beyond)
        self.assertEqual(pf.beyond_calls, sum(n["calls"] for n in beyond))
        self.assertGreater(pf.beyond_paths, 0)
        # nothing lost: every call and every nanosecond is on some node
        self.assertEqual(sum(n["calls"] for n in pf.nodes.values()), sum(prof.call_counts().values()))
        self.assertEqual(sum(n["self"] for n in pf.nodes.values()), prof.total_self())

    # 20 callers of two leaves each, called from main three times: 61
    # paths, which a bound of 16 cuts under main and under a caller
    WIDE = ("static volatile int sink;\n"
            "__attribute__((noinline)) void leaf_a(void) { sink++; }\n"
            "__attribute__((noinline)) void leaf_b(void) { sink += 2; }\n"
            + "".join("__attribute__((noinline)) void mid_%d(void) { leaf_a(); leaf_b(); }\n" % i
                      for i in range(20))
            + "int main(void) { for (int r = 0; r < 3; r++) {"
            + "".join(" mid_%d();" % i for i in range(20)) + " } return 0; }\n")

    def test_every_call_on_a_node_when_the_cut_has_no_room(self):
        """The bound's last sixteenth (one node of 16) holds the first
        parent's "beyond" node; the paths past the cut under the others
        went to no node (the calls of a caller cut from its leaves, each
        round: in no file, unsaid). They are on the nearest ancestor's, or
        the root's: every call and every nanosecond on some node."""
        d = tempfile.mkdtemp(prefix="cgprof-wide-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        src, exe = os.path.join(d, "wide.c"), os.path.join(d, "wide")
        with open(src, "w") as f:
            f.write(self.WIDE)
        subprocess.run([cgtest.CC, "-O0", "-g", "-finstrument-functions", src, "-o", exe], check=True,
                       timeout=cgtest.limit(120))
        run = self.run_paths([exe], env={"CGPROF_PATHS_MAX": "16"})
        pf, prof = PathFile(path_file_of(run.files[0])), reader.load(run.files[0])
        self.assertLessEqual(pf.tree_nodes, 16)
        self.assertGreater(len([n for n in pf.nodes.values() if n["fn"] == "[paths beyond the bound]"]), 0)
        self.assertEqual(sum(n["calls"] for n in pf.nodes.values()), sum(prof.call_counts().values()))
        self.assertEqual(sum(n["self"] for n in pf.nodes.values()), prof.total_self())
        self.assertEqual(sum(prof.call_counts().values()), 1 + 3 * 20 * 3)

    def test_bad_bound_is_refused(self):
        run = cgtest.run_preloaded(self, [paths_prog("gcc", "0"), "10"],
                                   env={"CGPROF_PATHS": "1", "CGPROF_PATHS_MAX": "5"})
        self.assertEqual(run.returncode, 0)
        lines = cgtest.stderr_lines(run.stderr)
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertIn("CGPROF_PATHS_MAX", lines[0])
        self.assertIn("an integer from 16 to 16777216", lines[0])
        self.assertEqual(PathFile(path_file_of(run.files[0])).bound, 262144)

    def test_off_by_default(self):
        run = cgtest.run_preloaded(self, [paths_prog("gcc", "0"), "10"])
        self.assertEqual(run.returncode, 0)
        self.assertTrue(run.files)
        self.assertEqual(glob.glob(os.path.join(run.directory, "*paths*")), [])


class PartsAndProcesses(Checks):

    def test_api_dump_zero_pause(self):
        """tests/progs/api.c: dumps by the API, a zero and a pause cut the
        paths as they cut the arcs: each part's paths agree with it, and
        hold exactly the calls of its phase."""
        run = self.run_paths([cgtest.prog("api")])
        main = {}
        for part in run.files:
            pf, prof = self.assert_agrees_with_part(part)
            if int(prof.thread) == 1:
                main[int(prof.part)] = {p: c for p, c in pf.calls_by_path().items() if c and p != ("main",)}
        self.assertEqual(main, {
            1: {("main", "repeat"): 1, ("main", "repeat", "work_a"): 3},
            2: {("main", "repeat"): 2, ("main", "repeat", "work_c"): 4, ("main", "repeat", "work_e"): 6},
            3: {("main", "repeat"): 1, ("main", "repeat", "work_f"): 7},
        })

    def test_thread_exit_merge(self):
        run = self.run_paths([cgtest.example("threads")], env={"CGPROF_THREAD_EXIT": "merge"})
        merged = [f for f in run.files if f.endswith("-00")]
        self.assertEqual(len(merged), 1, run.files)
        for part in run.files:
            self.assert_agrees_with_part(part)

    def test_fork(self):
        run = self.run_paths([cgtest.prog("forker")])
        pids = {os.path.basename(f).split(".")[2].split("-")[0] for f in run.files}
        self.assertGreaterEqual(len(pids), 2, run.files)
        for part in run.files:
            self.assert_agrees_with_part(part)

    def test_dumps_add_up(self):
        """Parts written by dumps on demand: each agrees with its part, and
        the parts' paths sum to what one part of the same run has."""
        run = signal_phases(self, env={"CGPROF_PATHS": "1"}, signals=4)
        rc, _, err = run.finish()
        self.assertEqual(rc, 0, err)
        files = run.files()
        self.assertGreater(len(files), 3, files)
        calls = {}
        for part in files:
            # read while the program ran: main's (main, tick) once had its
            # children 106 ns over it (1 run in about 30, a fresh clone's CI)
            pf, _ = self.assert_agrees_with_part(part, running_slack=0.01)
            for p, c in pf.calls_by_path().items():
                calls[p] = calls.get(p, 0) + c
        # phases.c: main -> tick 600, tick -> leaf 600*50; spin_a -> leaf
        # 500*80; spin_b -> leaf 400*90, each thread's root its function
        self.assertEqual(calls[("main", "tick")], 600)
        self.assertEqual(calls[("main", "tick", "leaf")], 600 * 50)
        self.assertEqual(calls[("spin_a", "leaf")], 500 * 80)
        self.assertEqual(calls[("spin_b", "leaf")], 400 * 90)


if __name__ == "__main__":
    unittest.main()
