"""The path files (docs/internals/paths-format.md) read back by cgproflib.paths, on
files written here as the format says (by hand, with figures computed by
hand, and by a generator that folds recursion as the format does): the
strict reader and its file:line errors, parts and threads summed path by
path, the collapsed stacks, the speedscope file against speedscope's
schema, `cgprof flame`, `cgprof report --paths`, the names of the files,
and the launcher's line after a run that wrote path files.

The runtime's side (CGPROF_PATHS=1 writing them) is not here: these tests
need no runtime, so that the Python side stands on the format alone."""

import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import unittest

import cgtest
from cgproflib import flame, launcher, naming, paths, report, rules

LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))
MAN = os.environ.get("CGPROF_MAN", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof.1"))


def paths_text(pid, thread, part, fns, nodes, cmd="./prog arg", events="ns", count=None, bound=65536, folded=0,
               beyond=(0, 0)):
    """A path file: fns [(id, name)], nodes [(id, parent, fn, calls,
    inclusive, self)], written in the given order."""
    lines = ["# cgprof paths: docs/internals/paths-format.md", "paths: 1", "pid: %d" % pid, "thread: %d" % thread,
             "part: %d" % part, "cmd: %s" % cmd, "events: %s" % events,
             "nodes: %d of %d" % (len(nodes) if count is None else count, bound), "folded: %d" % folded,
             "beyond: %d %d" % beyond]
    lines += ["fn %d %s" % f for f in fns]
    lines += ["node %d %d %d %d %d %d" % n for n in nodes]
    return "\n".join(lines) + "\n"


def write(path, text):
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    return path


def callgrind_part(path, pid, thread, part, thread_name=None):
    """A Callgrind part (its header is all that is read of it here)."""
    write(path, "# callgrind format\nversion: 1\ncreator: test\npid: %d\nthread: %d\npart: %d\ncmd: ./prog\n%s"
                "positions: line\nevents: ns\nsummary: 1\n\nfn=(1) main\n1 1\n" %
          (pid, thread, part, "desc: Thread name: %s\n" % thread_name if thread_name else ""))


# ---- a run written by hand: pid 100, thread 1 in two parts, thread 2 ----------
# Thread 1, part 1: main 900 us (self 100) -> parse (1 call, 600, self 200) ->
# lex (30 calls, 400); main -> emit (2 calls, 200).
T1P1 = paths_text(100, 1, 1, [(1, "main"), (2, "parse"), (3, "lex"), (4, "emit")],
                  [(1, 0, 1, 1, 900000, 100000), (2, 1, 2, 1, 600000, 200000), (3, 2, 3, 30, 400000, 400000),
                   (4, 1, 4, 2, 200000, 200000)])
# Thread 1, part 2 (other ids, other order): main still running (0 calls:
# counted in part 1) 300 us, self 50 -> emit (1 call, 250, self 150) -> lex
# (5 calls, 100): a path of lex that part 1 did not have.
T1P2 = paths_text(100, 1, 2, [(7, "lex"), (5, "main"), (6, "emit")],
                  [(10, 0, 5, 0, 300000, 50000), (11, 10, 6, 1, 250000, 150000), (12, 11, 7, 5, 100000, 100000)],
                  folded=3)
# Thread 2 ("worker"): worker 500 us (self 100) -> parse (2, 400, self 100)
# -> lex (20, 300).
T2P1 = paths_text(100, 2, 1, [(1, "worker"), (2, "lex"), (3, "parse")],
                  [(1, 0, 1, 1, 500000, 100000), (2, 1, 3, 2, 400000, 100000), (3, 2, 2, 20, 300000, 300000)],
                  beyond=(7, 2))

# Summed by hand: thread 1 = part 1 + part 2, path by path
THREAD1 = {("main",): [1, 1200000, 150000], ("main", "parse"): [1, 600000, 200000],
           ("main", "parse", "lex"): [30, 400000, 400000], ("main", "emit"): [3, 450000, 350000],
           ("main", "emit", "lex"): [5, 100000, 100000]}
THREAD2 = {("worker",): [1, 500000, 100000], ("worker", "parse"): [2, 400000, 100000],
           ("worker", "parse", "lex"): [20, 300000, 300000]}
TOTAL = {**THREAD1, **THREAD2}

FOLDED_TOTAL = ["main 150000", "main;emit 350000", "main;emit;lex 100000", "main;parse 200000",
                "main;parse;lex 400000", "worker 100000", "worker;parse 100000", "worker;parse;lex 300000"]
FOLDED_1 = FOLDED_TOTAL[:5]
FOLDED_2 = FOLDED_TOTAL[5:]


def hand_run(directory, names=True):
    """The hand-written run in directory, with its Callgrind parts (thread
    2 named "worker" by its part's desc: lines) when names."""
    write(os.path.join(directory, "callgrind.paths.100.1-01"), T1P1)
    write(os.path.join(directory, "callgrind.paths.100.2-01"), T1P2)
    write(os.path.join(directory, "callgrind.paths.100.1-02"), T2P1)
    if names:
        callgrind_part(os.path.join(directory, "callgrind.out.100.1-01"), 100, 1, 1)
        callgrind_part(os.path.join(directory, "callgrind.out.100.2-01"), 100, 1, 2)
        callgrind_part(os.path.join(directory, "callgrind.out.100.1-02"), 100, 2, 1, "worker")


def page_data(path):
    """The data of a page of cgprof flame (flamehtml.py): the JSON in its
    script element, as the page's script reads it."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head = '<script type="application/json" id="cgflame-data">'
    start = text.index(head) + len(head)
    return json.loads(text[start:text.index("</script>", start)])


def page_costs(page, prof, side=""):
    """{path: [calls, inclusive, self]} of a profile of a page (side
    "a_": the first run's costs of a differential page), its nodes
    without costs (ancestors a tree lacks) left out."""
    out, paths_of = {}, []
    for i, parent in enumerate(prof["parent"]):
        path = (paths_of[parent] if parent >= 0 else ()) + (page["names"][prof["name"][i]],)
        paths_of.append(path)
        if prof[side + "calls"][i] is not None:
            out[path] = [prof[side + "calls"][i], prof[side + "incl"][i], prof[side + "self"][i]]
    return out


# ---- a generator: calls -> the calling-context tree, recursion folded ----------

def cct(calls):
    """{names: [calls, inclusive, self]} of root calls, each (name, own
    ns, [calls it makes]), as docs/internals/paths-format.md folds recursion: a
    call of a function on the path counts on its earlier node, whose
    inclusive time counts its outermost call only. Parents first."""
    nodes, active = {}, set()

    def enter(path, call):
        name, own, children = call
        node = path[:path.index(name) + 1] if name in path else path + (name,)
        c = nodes.setdefault(node, [0, 0, 0])
        c[0] += 1
        c[2] += own
        outer = node not in active
        active.add(node)
        took = own + sum(enter(node, ch) for ch in children)
        if outer:
            active.discard(node)
            c[1] += took
        return took
    for call in calls:
        enter((), call)
    return nodes


def random_calls(rng, names, depth):
    out = []
    for _ in range(rng.randint(0, 3 if depth else 0)):
        out.append((rng.choice(names), rng.randint(0, 5000), random_calls(rng, names, depth - 1)))
    return out


def cct_text(pid, thread, part, tree, rng, folded=0):
    """The path file of a tree, its function and node ids drawn at
    random (unique, parents before children as the format says)."""
    names = sorted({n for path in tree for n in path})
    fids = dict(zip(names, rng.sample(range(1, 10 * len(names) + 10), len(names))))
    nids = dict(zip(tree, rng.sample(range(1, 10 * len(tree) + 10), len(tree))))
    fns = sorted(((fids[n], n) for n in names), key=lambda f: rng.random())
    nodes = [(nids[p], nids[p[:-1]] if len(p) > 1 else 0, fids[p[-1]], c[0], c[1], c[2]) for p, c in tree.items()]
    return paths_text(pid, thread, part, fns, nodes, folded=folded)


class HandWritten(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, self.dir)
        hand_run(self.dir)

    def test_header_kept(self):
        pf = paths.read(os.path.join(self.dir, "callgrind.paths.100.1-02"))
        self.assertEqual((pf.pid, pf.thread, pf.part, pf.cmd, pf.event, pf.nodes, pf.bound, pf.folded,
                          pf.beyond_calls, pf.beyond_paths), (100, 2, 1, "./prog arg", "ns", 3, 65536, 0, 7, 2))
        self.assertEqual(pf.functions, {1: "worker", 2: "lex", 3: "parse"})
        self.assertEqual(pf.paths, [(("worker",), 1, 500000, 100000), (("worker", "parse"), 2, 400000, 100000),
                                    (("worker", "parse", "lex"), 20, 300000, 300000)])

    def test_parts_and_threads_summed_path_by_path(self):
        files, missing = paths.collect([os.path.join(self.dir, "callgrind.out.100")])
        self.assertEqual(missing, [])
        self.assertEqual(sorted(os.path.basename(f) for f in files),
                         ["callgrind.paths.100.1-01", "callgrind.paths.100.1-02", "callgrind.paths.100.2-01"])
        pfs, bad = paths.load(files)
        self.assertEqual(bad, [])
        threads = paths.threads_of(pfs)
        self.assertEqual([t.label for t in threads], ["thread 1", "thread 2 (worker)"])
        self.assertEqual(threads[0].costs, THREAD1)
        self.assertEqual(threads[1].costs, THREAD2)
        # parents before children, as the files give them
        self.assertEqual(list(threads[0].costs)[:3], [("main",), ("main", "parse"), ("main", "parse", "lex")])
        total = paths.sum_trees(threads)
        self.assertEqual(total.costs, TOTAL)
        self.assertEqual((total.total(), total.folded, total.beyond_calls, total.beyond_paths, len(total.files)),
                         (1700000, 3, 7, 2, 3))

    def test_same_names_from_other_ids_are_one_path(self):
        # two parts of one thread whose ids differ: one node per path of names
        pfs, _ = paths.load([os.path.join(self.dir, "callgrind.paths.100.1-01"),
                             os.path.join(self.dir, "callgrind.paths.100.2-01")])
        t, = paths.threads_of(pfs)
        self.assertEqual(t.costs[("main", "emit")], [3, 450000, 350000])

    def test_folded_lines(self):
        pfs, _ = paths.load(paths.collect([self.dir])[0])
        threads = paths.threads_of(pfs)
        self.assertEqual(flame.folded_lines(paths.sum_trees(threads)), FOLDED_TOTAL)
        self.assertEqual(flame.folded_lines(threads[0]), FOLDED_1)
        self.assertEqual(flame.folded_lines(threads[1]), FOLDED_2)

    def test_speedscope_document(self):
        pfs, _ = paths.load(paths.collect([self.dir])[0])
        threads = paths.threads_of(pfs)
        doc = flame.speedscope([paths.sum_trees(threads)] + threads)
        check_speedscope(self, doc)
        self.assertEqual(doc["shared"]["frames"], [{"name": n} for n in ("main", "emit", "lex", "parse", "worker")])
        self.assertEqual([(p["name"], p["unit"], p["startValue"], p["endValue"]) for p in doc["profiles"]],
                         [("all threads", "nanoseconds", 0, 1700000), ("thread 1", "nanoseconds", 0, 1200000),
                          ("thread 2 (worker)", "nanoseconds", 0, 500000)])
        total, one, two = doc["profiles"]
        self.assertEqual(total["samples"], [[0], [0, 1], [0, 1, 2], [0, 3], [0, 3, 2], [4], [4, 3], [4, 3, 2]])
        self.assertEqual(total["weights"], [150000, 350000, 100000, 200000, 400000, 100000, 100000, 300000])
        self.assertEqual((one["samples"], one["weights"]),
                         ([[0], [0, 1], [0, 1, 2], [0, 3], [0, 3, 2]], [150000, 350000, 100000, 200000, 400000]))
        self.assertEqual((two["samples"], two["weights"]), ([[4], [4, 3], [4, 3, 2]], [100000, 100000, 300000]))

    def test_names_without_callgrind_parts(self):
        # no Callgrind part next to them: the threads have no name
        d = tempfile.mkdtemp(dir=self.dir)
        hand_run(d, names=False)
        pfs, _ = paths.load(paths.collect([d])[0])
        self.assertEqual([t.label for t in paths.threads_of(pfs)], ["thread 1", "thread 2"])
        self.assertEqual([t.label for t in paths.threads_of(pfs, names={(100, 2): "w"})], ["thread 1", "thread 2 (w)"])

    def test_hottest_lines(self):
        pfs, _ = paths.load(paths.collect([self.dir])[0])
        total = paths.sum_trees(paths.threads_of(pfs), "")
        self.assertEqual(report.hottest_lines(total, 3, "inclusive"), [
            "top 3 paths by inclusive time (3 path files; 1.700 ms in all threads):",
            "    incl. ms      %      self ms      calls  path",
            "       1.200   70.6        0.150          1  main",
            "       0.600   35.3        0.200          1  main > parse",
            "       0.500   29.4        0.100          1  worker"])


# speedscope's file format, as its schema (speedscope 1.25.0,
# dist/release/file-format-schema.json) requires it: the fields of a file,
# a frame and a sampled profile, and the units.
FILE_REQUIRED = ("$schema", "profiles", "shared")
SAMPLED_REQUIRED = ("endValue", "name", "samples", "startValue", "type", "unit", "weights")
UNITS = ("bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds")


def check_speedscope(test, doc):
    """doc against the schema's requirements, and against the schema
    itself when speedscope's file is at hand ($CGPROF_SPEEDSCOPE_SCHEMA,
    e.g. from `npm pack speedscope@1.25.0`) and jsonschema is installed."""
    for k in FILE_REQUIRED:
        test.assertIn(k, doc)
    test.assertEqual(doc["$schema"], "https://www.speedscope.app/file-format-schema.json")
    test.assertIsInstance(doc["shared"]["frames"], list)
    for f in doc["shared"]["frames"]:
        test.assertIsInstance(f["name"], str)
    for p in doc["profiles"]:
        for k in SAMPLED_REQUIRED:
            test.assertIn(k, p)
        test.assertEqual(p["type"], "sampled")
        test.assertIn(p["unit"], UNITS)
        test.assertEqual(len(p["samples"]), len(p["weights"]))
        test.assertEqual(p["endValue"] - p["startValue"], sum(p["weights"]))
        for s in p["samples"]:
            test.assertTrue(all(isinstance(i, int) and 0 <= i < len(doc["shared"]["frames"]) for i in s))
    test.assertTrue(0 <= doc["activeProfileIndex"] < len(doc["profiles"]))
    schema = os.environ.get("CGPROF_SPEEDSCOPE_SCHEMA")
    if schema:
        import jsonschema
        with open(schema) as f:
            jsonschema.validate(doc, json.load(f))


class Generated(unittest.TestCase):
    """Random calls folded as the format says, split into parts at root
    calls and written with random ids: the reader's sums are the tree of
    all the calls, exactly."""

    def test_parts_sum_to_the_whole(self):
        rng = random.Random(16)
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d)
        want_threads, want_total = {}, {}
        for thread in (1, 2, 3):
            calls = [("main", rng.randint(0, 9000), random_calls(rng, ["a", "b", "c", "d", "e"], 6))
                     for _ in range(rng.randint(1, 6))]
            cut = sorted(rng.sample(range(1, len(calls) + 1), min(2, len(calls))))
            parts = [calls[:cut[0]]] + [calls[a:b] for a, b in zip(cut, cut[1:] + [len(calls)])]
            for part, chunk in enumerate(parts, 1):
                write(os.path.join(d, "callgrind.paths.7.%d-%02d" % (part, thread)),
                      cct_text(7, thread, part, cct(chunk), rng))
            whole = cct(calls)
            for path in whole:
                # recursion folded: no function twice on a path
                self.assertEqual(len(set(path)), len(path))
            want_threads[thread] = whole
            for path, c in whole.items():
                want_total[path] = [x + y for x, y in zip(want_total.get(path, [0, 0, 0]), c)]
        pfs, bad = paths.load(paths.collect([os.path.join(d, "callgrind.out.7")])[0])
        self.assertEqual(bad, [])
        threads = paths.threads_of(pfs)
        self.assertEqual([t.costs for t in threads], [want_threads[1], want_threads[2], want_threads[3]])
        total = paths.sum_trees(threads)
        self.assertEqual(total.costs, want_total)
        self.assertEqual(flame.folded_lines(total),
                         ["%s %d" % (";".join(p), c[2]) for p, c in sorted(want_total.items()) if c[2]])

    def test_recursion_folded_by_hand(self):
        # main -> f -> g -> f -> g -> h: the inner f and g fold onto main;f
        # and main;f;g, whose inclusive times count the outer calls only
        calls = [("main", 10, [("f", 100, [("g", 20, [("f", 5, [("g", 7, [("h", 3, [])])])])])])]
        self.assertEqual(cct(calls), {("main",): [1, 145, 10], ("main", "f"): [2, 135, 105],
                                      ("main", "f", "g"): [2, 35, 27], ("main", "f", "g", "h"): [1, 3, 3]})


# ---- the strict reader --------------------------------------------------------------

GOOD = paths_text(5, 1, 1, [(1, "main"), (2, "f")], [(1, 0, 1, 1, 10, 4), (2, 1, 2, 3, 6, 6)])


class Malformed(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, self.dir)

    def error(self, text):
        path = write(os.path.join(self.dir, "callgrind.paths.5-01"), text)
        with self.assertRaises(paths.PathsFormatError) as cm:
            paths.read(path)
        return str(cm.exception)[len(path) + 1:]

    def test_good_is_read(self):
        path = write(os.path.join(self.dir, "callgrind.paths.5-01"), GOOD)
        self.assertEqual(paths.read(path).paths, [(("main",), 1, 10, 4), (("main", "f"), 3, 6, 6)])

    def test_errors_name_the_line_and_what_was_expected(self):
        # GOOD's lines: 1 the comment, 2 paths:, 3-10 the header (pid: 3, thread: 4, part: 5, cmd: 6,
        # events: 7, nodes: 8, folded: 9, beyond: 10), 11-12 fn, 13-14 node
        cases = [
            ("", "1: expected 'paths: 1': the file is empty"),
            ("# only a comment\n", "2: expected 'paths: 1': the file is empty"),
            (GOOD.replace("paths: 1", "paths: 2"), "2: expected 'paths: 1' (a path file of format version 1), "
                                                   "found 'paths: 2'"),
            (GOOD.replace("pid: 5", "pid: x"), "3: expected pid:'s value (a number), found 'x'"),
            (GOOD.replace("nodes: 2 of 65536", "nodes: 2"), "8: expected 'nodes: <count> of <bound>', found "
                                                            "'nodes: 2'"),
            (GOOD.replace("beyond: 0 0", "beyond: 0"), "10: expected 'beyond: <calls> <paths>', found 'beyond: 0'"),
            (GOOD.replace("events: ns", "events: ns cycles"), "7: expected 'events: <name>' (one event, the unit "
                                                              "of the times: ns), found 'events: ns cycles'"),
            (GOOD.replace("thread: 1\n", "thread: 1\nthread: 2\n"), "5: 'thread:' a second time (first on line 4)"),
            (GOOD.replace("folded: 0\n", ""), "10: expected the header's folded: before the records"),
            (GOOD.replace("folded: 0\n", "").replace("fn ", "#fn ").replace("node ", "#node "),
             "14: the file ends without the header's folded:"),
            (GOOD.replace("fn 1 main\n", "fn 1 main\npart: 1\n"), "12: header line 'part' after the records "
                                                                  "(the header comes first)"),
            (GOOD.replace("cmd:", "command:"), "6: expected a header line (pid:, thread:, part:, cmd:, events:, "
                                               "nodes:, folded:, beyond:) or a record, found 'command: ./prog arg'"),
            (GOOD + "\n", "15: expected a record ('fn <id> <name>' or 'node <id> <parent> <fn> <calls> <inclusive> "
                          "<self>'), found ''"),
            (GOOD.replace("fn 2 f", "fn 2"), "12: expected 'fn <id> <name>', found 'fn 2'"),
            (GOOD.replace("fn 2 f", "fn 0 f"), "12: function id 0 is not used"),
            (GOOD.replace("fn 2 f", "fn 1 f"), "12: function id 1 defined twice"),
            (GOOD.replace("node 2 1 2 3 6 6", "node 2 1 2 3 6"), "14: expected 'node <id> <parent> <fn> <calls> "
                                                                 "<inclusive> <self>' (6 numbers), found "
                                                                 "'node 2 1 2 3 6'"),
            (GOOD.replace("node 2 1 2 3 6 6", "node 2 1 2 -3 6 6"), "14: expected calls (a number), found '-3'"),
            (GOOD.replace("node 2 1 2 3 6 6", "node 0 1 2 3 6 6"), "14: node id 0 is not used (0 is the parent "
                                                                   "of a root)"),
            (GOOD.replace("node 2 1 2 3 6 6", "node 1 1 2 3 6 6"), "14: node id 1 defined twice"),
            (GOOD.replace("node 2 1 2 3 6 6", "node 2 9 2 3 6 6"), "14: parent node 9 is not defined before "
                                                                   "this node"),
            (GOOD.replace("node 2 1 2 3 6 6", "node 2 1 3 3 6 6"), "14: function 3 is not defined by a fn line "
                                                                   "before this node"),
            (GOOD.replace("node 2 1 2 3 6 6", "node 2 1 1 3 6 6"), "14: function 1 (main) already on the node's "
                                                                   "path: recursion is folded onto the earlier node"),
            (GOOD + "node 3 1 2 1 1 1\n", "15: a second node of function 2 under parent 1: one node per path"),
            (GOOD[:-1], "14: the line has no newline at its end: the file was cut short"),
        ]
        for text, want in cases:
            with self.subTest(want=want):
                self.assertEqual(self.error(text), want)

    def test_names_to_the_end_of_the_line(self):
        text = GOOD.replace("fn 2 f", "fn 2 std::vector<int, std::allocator<int> >::push_back(int const&)")
        path = write(os.path.join(self.dir, "callgrind.paths.5-01"), text)
        self.assertEqual(paths.read(path).functions[2], "std::vector<int, std::allocator<int> >::push_back(int const&)")


# ---- collapsed stacks: names that would break them ---------------------------------

class Escapes(unittest.TestCase):
    def test_escape_frame(self):
        for name, want in [("main", "main"), ("a;b", "a%3Bb"), ("f\tx", "f%09x"), ("f\x7f", "f%7F"),
                           ("f 2", "f%202"), ("f 2.5", "f%202.5"), ("x 2 y", "x 2 y"), ("f2", "f2"),
                           ("operator<<(std::ostream&, int)", "operator<<(std::ostream&, int)"),
                           ("[paths beyond the bound]", "[paths beyond the bound]"), ("50%", "50%")]:
            self.assertEqual(paths.escape_frame(name), want)

    def test_tree_made_by_hand(self):
        # a Tree given to folded_lines and speedscope by a caller: paths in
        # any order, ancestors missing
        t = paths.Tree("mine")
        t.costs = {("z",): [1, 1, 1], ("a", "b", "c"): [1, 5, 5], ("a",): [1, 10, 2], ("a", "b", "a b"): [2, 3, 3]}
        self.assertEqual(flame.folded_lines(t), ["a 2", "a;b;a b 3", "a;b;c 5", "z 1"])
        doc = flame.speedscope([t])
        self.assertEqual(doc["shared"]["frames"], [{"name": n} for n in ("a", "b", "a b", "c", "z")])
        self.assertEqual((doc["profiles"][0]["samples"], doc["profiles"][0]["weights"]),
                         ([[0], [0, 1, 2], [0, 1, 3], [4]], [2, 3, 5, 1]))

    def test_folded_file_with_such_names(self):
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d)
        write(os.path.join(d, "callgrind.paths.5-01"),
              paths_text(5, 1, 1, [(1, "main"), (2, "a;b"), (3, "tpl<2> 2"), (4, paths.BEYOND)],
                         [(1, 0, 1, 1, 10, 1), (2, 1, 2, 1, 5, 2), (3, 2, 3, 1, 3, 3), (4, 1, 4, 2, 4, 4)]))
        pfs, _ = paths.load([os.path.join(d, "callgrind.paths.5-01")])
        self.assertEqual(flame.folded_lines(paths.threads_of(pfs)[0]),
                         ["main 1", "main;[paths beyond the bound] 4", "main;a%3Bb 2", "main;a%3Bb;tpl<2>%202 3"])
        # as flamegraph.pl reads a line: the count after the last space, and
        # a second count before it when the stack ends in a space and a
        # number (its differential input); then the frames split at ';'
        want = {("main",): 1, ("main", "[paths beyond the bound]"): 4, ("main", "a%3Bb"): 2,
                ("main", "a%3Bb", "tpl<2>%202"): 3}
        read = {}
        for line in flame.folded_lines(paths.threads_of(pfs)[0]):
            m = re.fullmatch(r"(.*)\s+?(\d+(?:\.\d*)?)", line)
            self.assertIsNone(re.fullmatch(r"(.*)\s+?(\d+(?:\.\d*)?)", m.group(1)), line)
            read[tuple(m.group(1).split(";"))] = int(m.group(2))
        self.assertEqual(read, want)
        # unescaped, the last name would have been read as a second count
        self.assertIsNotNone(re.fullmatch(r"(.*)\s+?(\d+(?:\.\d*)?)", "main;tpl<2> 2"))
        # speedscope's frames hold the names as they are
        doc = flame.speedscope(paths.threads_of(pfs))
        self.assertEqual([f["name"] for f in doc["shared"]["frames"]], ["main", paths.BEYOND, "a;b", "tpl<2> 2"])


# ---- names ------------------------------------------------------------------------

class Names(unittest.TestCase):
    def test_spec_table(self):
        # docs/internals/paths-format.md's table, through the runtime's own names of
        # the parts (cgprof-rules)
        for pattern, part, want in [("callgrind.out", 0, "callgrind.paths.1234-01"),
                                    ("callgrind.out", 2, "callgrind.paths.1234.2-03"),
                                    ("/tmp/prof", 0, "/tmp/prof.paths.1234-01")]:
            thread = 3 if part else 1
            self.assertEqual(rules.file_names([(naming.paths_pattern(pattern), 1234, "", thread, part)])[0], want)

    def test_flame_prefix_and_kcachegrind(self):
        self.assertEqual(naming.flame_prefix("callgrind.out", 1234, "/w"), "/w/flame.1234")
        self.assertEqual(naming.flame_prefix("/tmp/prof", 1234, "/w"), "/tmp/prof.flame.1234")
        self.assertEqual(naming.flame_prefix("prof-%p", 1234, "/w"), "/w/prof-flame.1234")
        for pattern in ("callgrind.out", "/tmp/prof", "prof-%p", "/tmp/%p/x.out.y"):
            run = rules.file_names([(pattern, 1234, "/w", 1, 0)])[0][:-len("-01")]
            for made in (naming.flame_prefix(pattern, 1234, "/w"),
                         rules.file_names([(naming.paths_pattern(pattern), 1234, "/w", 1, 0)])[0]):
                # KCachegrind, given the run, loads <run>*; given a directory, callgrind.out*
                self.assertFalse(made.startswith(run), (pattern, made))
                self.assertFalse(os.path.basename(made).startswith("callgrind.out"), made)
                # nor does cgprof report take it for a part of the run
                self.assertIsNone(naming.file_regex(pattern).fullmatch(os.path.basename(made)))

    def test_word_placed_as_the_runtime_places_the_total(self):
        # naming reads the total's rule again for "paths" and "flame", and
        # checks each reading against the runtime's total pattern (it raises
        # when they differ): patterns of every kind of the rule's branches
        for pattern in ("callgrind.out", "a.out.b", "a.out.out", "x.output", "x.outa.out", "x.out-y", "out", ".out",
                        "/d.out/x", "prof-%p", "prof-%p.out", "%%p.out", "a%%p", "a%%%p", "d/%p/x", "/tmp/prof",
                        "\u00e9t\u00e9.out", "x.out\u00e9"):
            with self.subTest(pattern=pattern):
                made = naming.paths_pattern(pattern)
                total = rules.total_patterns([pattern])[0]
                self.assertEqual(made.replace("paths", "total"), total.replace("paths", "total"))

    def test_paths_scan(self):
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d)
        for n in ("callgrind.paths.1234-01", "callgrind.paths.1234.2-03", "callgrind.out.1234-01"):
            write(os.path.join(d, n), GOOD)
        found = naming.paths_scan("callgrind.out", 1234, d)
        self.assertEqual({os.path.basename(p): (f.pid, f.part, f.thread) for p, f in found.items()},
                         {"callgrind.paths.1234-01": (1234, 0, 1), "callgrind.paths.1234.2-03": (1234, 2, 3)})

    def test_what_names(self):
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d)
        for n in ("callgrind.paths.12-01", "callgrind.paths.12.2-01", "callgrind.paths.123-01", "prof.paths.12-01"):
            write(os.path.join(d, n), GOOD)
        write(os.path.join(d, "callgrind.paths.12-02"), "not a path file\n")

        def found(what):
            files, missing = paths.collect([os.path.join(d, what)])
            return sorted(os.path.basename(f) for f in files)
        both = ["callgrind.paths.12-01", "callgrind.paths.12.2-01"]
        self.assertEqual(found("callgrind.out.12"), both)
        self.assertEqual(found("callgrind.paths.12"), both)
        self.assertEqual(found("callgrind.total.12"), both)
        self.assertEqual(found("callgrind.out.12-01"), ["callgrind.paths.12-01"])
        self.assertEqual(found("callgrind.paths.12-01"), ["callgrind.paths.12-01"])
        self.assertEqual(found("prof.12"), ["prof.paths.12-01"])
        self.assertEqual(found("prof"), ["prof.paths.12-01"])
        self.assertEqual(found(""), both + ["callgrind.paths.123-01", "prof.paths.12-01"])
        self.assertEqual(paths.collect([os.path.join(d, "callgrind.out.13")]),
                         ([], [os.path.join(d, "callgrind.out.13")]))


# ---- the commands ----------------------------------------------------------------------

def cgprof(*argv, cwd=None):
    return subprocess.run([LAUNCHER] + list(argv), capture_output=True, text=True, cwd=cwd, env=cgtest.clean_environ(),
                          timeout=cgtest.limit(120))


def lines_of(path):
    with open(path) as f:
        return f.read().split("\n")[:-1]


class Flame(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, self.dir)
        hand_run(self.dir)

    def test_default_prefix_and_files(self):
        p = cgprof("flame", "callgrind.out.100", cwd=self.dir)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout.split("\n"), ["flame.100.html", "flame.100.speedscope.json", "flame.100.folded",
                                                "flame.100-01.folded", "flame.100-02.folded", ""])
        self.assertEqual(lines_of(os.path.join(self.dir, "flame.100.folded")), FOLDED_TOTAL)
        self.assertEqual(lines_of(os.path.join(self.dir, "flame.100-01.folded")), FOLDED_1)
        self.assertEqual(lines_of(os.path.join(self.dir, "flame.100-02.folded")), FOLDED_2)
        with open(os.path.join(self.dir, "flame.100.speedscope.json")) as f:
            doc = json.load(f)
        check_speedscope(self, doc)
        self.assertEqual([(p["name"], p["weights"]) for p in doc["profiles"]],
                         [("all threads", [150000, 350000, 100000, 200000, 400000, 100000, 100000, 300000]),
                          ("thread 1", [150000, 350000, 100000, 200000, 400000]),
                          ("thread 2 (worker)", [100000, 100000, 300000])])
        self.assertEqual(doc["name"], "./prog arg (pid 100)")
        # the page: its title, and every path of all threads and of each
        # thread with the files' costs (test_flamehtml: what it draws)
        page = page_data(os.path.join(self.dir, "flame.100.html"))
        self.assertEqual((page["kind"], page["title"], page["unit"]), ("flame", "./prog arg (pid 100)", "ns"))
        trees = paths.threads_of(paths.load(paths.collect([self.dir])[0])[0])
        self.assertEqual([p["label"] for p in page["profiles"]], ["all threads", "thread 1", "thread 2 (worker)"])
        for prof, tree in zip(page["profiles"], [paths.sum_trees(trees)] + trees):
            self.assertEqual(page_costs(page, prof), tree.costs, prof["label"])
        self.assertEqual(page["estimated"], [])
        # nothing else written (no temporaries left), and `cgprof report`
        # takes none of them for a Callgrind file of the run
        self.assertEqual(len(os.listdir(self.dir)), 6 + 5)
        self.assertEqual(report.collect([os.path.join(self.dir, "callgrind.out.100")])[0],
                         [os.path.join(self.dir, n) for n in ("callgrind.out.100.1-01", "callgrind.out.100.1-02",
                                                              "callgrind.out.100.2-01")])

    def test_out_and_threads_sum_and_directory(self):
        out = os.path.join(self.dir, "sub", "fl")
        os.mkdir(os.path.dirname(out))
        p = cgprof("flame", "--out", out, "--threads=sum", self.dir)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout.split("\n"), [out + ".html", out + ".speedscope.json", out + ".folded", ""])
        self.assertEqual(sorted(os.listdir(os.path.dirname(out))), ["fl.folded", "fl.html", "fl.speedscope.json"])
        self.assertEqual([p["label"] for p in page_data(out + ".html")["profiles"]], ["all threads"])
        self.assertEqual(lines_of(out + ".folded"), FOLDED_TOTAL)
        with open(out + ".speedscope.json") as f:
            doc = json.load(f)
        self.assertEqual([p["name"] for p in doc["profiles"]], ["all threads"])

    def test_several_processes(self):
        write(os.path.join(self.dir, "callgrind.paths.200-01"), T2P1.replace("pid: 100", "pid: 200"))
        p = cgprof("flame", self.dir)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr, "cgprof flame: the path files are of 2 processes (pids 100 200): name the files "
                                   "to write with --out PREFIX\n")
        p = cgprof("flame", "--out=both", self.dir, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n"), ["both.html", "both.speedscope.json", "both.folded", "both.100-01.folded",
                                                "both.100-02.folded", "both.200-02.folded", ""])
        self.assertEqual(lines_of(os.path.join(self.dir, "both.200-02.folded")), FOLDED_2)
        self.assertEqual(lines_of(os.path.join(self.dir, "both.folded")),
                         FOLDED_1 + ["worker 200000", "worker;parse 200000", "worker;parse;lex 600000"])

    def test_no_path_files(self):
        """Issue 28 (1): a run without path files gets flame graphs of its
        Callgrind files (stacks estimated from the arcs: test_speedscope's
        FlameFromArcs checks them); nothing at all is a usage error."""
        d = tempfile.mkdtemp(dir=self.dir)
        p = cgprof("flame", "callgrind.out.300", cwd=d)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr, "cgprof flame: no path files and no Callgrind file for callgrind.out.300 (looked "
                                   "for callgrind.paths.300, callgrind.paths.300.* and callgrind.paths.300-*, and for "
                                   "Callgrind files named callgrind.out.300, callgrind.out.300.* and "
                                   "callgrind.out.300-*)\n")
        callgrind_part(os.path.join(d, "callgrind.out.300-01"), 300, 1, 1)
        p = cgprof("flame", "callgrind.out.300", cwd=d)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n"), ["flame.300.html", "flame.300.speedscope.json", "flame.300.folded",
                                                "flame.300-01.folded", ""])
        self.assertEqual(sorted(os.listdir(d)), ["callgrind.out.300-01", "flame.300-01.folded", "flame.300.folded",
                                                 "flame.300.html", "flame.300.speedscope.json"])

    def test_malformed_file(self):
        write(os.path.join(self.dir, "callgrind.paths.100.2-01"), T1P2.replace("node 11 10 6", "node 11 99 6"))
        p = cgprof("flame", "callgrind.out.100", cwd=self.dir)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(p.stderr, "cgprof flame: callgrind.paths.100.2-01:15: parent node 99 is not defined "
                                   "before this node\n")
        self.assertFalse([n for n in os.listdir(self.dir) if "flame" in n])

    def test_cannot_write(self):
        out = os.path.join(self.dir, "no-such-dir", "x")
        p = cgprof("flame", "--out", out, self.dir)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(p.stderr, "cgprof flame: cannot write %s.html: No such file or directory\n" % out)
        p = cgprof("flame", "--diff", "--out", out, self.dir, self.dir)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(p.stderr, "cgprof flame: cannot write %s.diff.html: No such file or directory\n" % out)

    def test_usage(self):
        for argv, msg in [(["flame"], "nothing to read: give a run's prefix, files or a directory"),
                          (["flame", "--threads=all", "x"], "--threads='all': accepted: sum|each"),
                          (["flame", "--bogus", "x"], "unknown option '--bogus' (cgprof flame --help lists them)"),
                          (["flame", "x", "--out"], "option --out needs a value"),
                          (["flame", "--diff", "x"], "--diff A B reads two runs, no more, no less: x"),
                          (["flame", "--diff", "x", "y", "z"], "--diff A B reads two runs, no more, no less: x y z"),
                          (["flame", "--diff", "x", "y", "--threads=each"],
                           "--diff sums the threads of each run: --threads does not apply")]:
            p = cgprof(*argv)
            self.assertEqual(p.returncode, 2, argv)
            self.assertEqual(p.stderr.split("\n")[0], "cgprof flame: " + msg)
        p = cgprof("flame", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertTrue(p.stdout.startswith("usage: cgprof flame [--out PREFIX] [--threads=sum|each] WHAT...\n"))
        self.assertIn("cgprof flame [options] WHAT...", cgprof("--help").stdout)

    def test_man_page(self):
        with open(MAN) as f:
            man = f.read()
        self.assertIn(".SH CGPROF FLAME", man)
        self.assertIn(".B cgprof flame", man)
        self.assertIn("\\fB\\-\\-paths\\fR", man)


class ReportPaths(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, self.dir)
        hand_run(self.dir)

    def test_hottest_paths(self):
        p = cgprof("report", "--paths", "callgrind.out.100", cwd=self.dir)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout.split("\n"), [
            "top 8 paths by inclusive time (3 path files; 1.700 ms in all threads):",
            "    incl. ms      %      self ms      calls  path",
            "       1.200   70.6        0.150          1  main",
            "       0.600   35.3        0.200          1  main > parse",
            "       0.500   29.4        0.100          1  worker",
            "       0.450   26.5        0.350          3  main > emit",
            "       0.400   23.5        0.400         30  main > parse > lex",
            "       0.400   23.5        0.100          2  worker > parse",
            "       0.300   17.6        0.300         20  worker > parse > lex",
            "       0.100    5.9        0.100          5  main > emit > lex", ""])

    def test_sort_top_threads(self):
        p = cgprof("report", "--paths", "--sort=self", "--top=2", self.dir)
        self.assertEqual(p.stdout.split("\n"), [
            "top 2 paths by self time (3 path files; 1.700 ms in all threads):",
            "    incl. ms      %      self ms      calls  path",
            "       0.400   23.5        0.400         30  main > parse > lex",
            "       0.450   26.5        0.350          3  main > emit", ""])
        p = cgprof("report", "--sort=calls", "--top=2", "--threads=each", "--paths", self.dir)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout.split("\n"), [
            "pid 100 thread 1: top 2 paths by calls (2 path files; 1.200 ms in all threads):",
            "    incl. ms      %      self ms      calls  path",
            "       0.400   33.3        0.400         30  main > parse > lex",
            "       0.100    8.3        0.100          5  main > emit > lex",
            "pid 100 thread 2 (worker): top 2 paths by calls (1 path file; 0.500 ms in all threads):",
            "    incl. ms      %      self ms      calls  path",
            "       0.300   60.0        0.300         20  worker > parse > lex",
            "       0.400   80.0        0.100          2  worker > parse", ""])

    def test_without_path_files(self):
        d = tempfile.mkdtemp(dir=self.dir)
        callgrind_part(os.path.join(d, "callgrind.out.300-01"), 300, 1, 1)
        p = cgprof("report", "--paths", "callgrind.out.300", cwd=d)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(p.stderr, "cgprof report: no path files for callgrind.out.300 (looked for "
                                   "callgrind.paths.300, callgrind.paths.300.* and callgrind.paths.300-*): the hottest "
                                   "paths need a run with CGPROF_PATHS=1 (docs/internals/paths-format.md)\n")
        # the flat profile of the same files is as it was
        p = cgprof("report", "callgrind.out.300", cwd=d)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_malformed_and_usage(self):
        write(os.path.join(self.dir, "callgrind.paths.100.1-02"), T2P1.replace("fn 3 parse", "fn 3"))
        p = cgprof("report", "--paths", "--top=1", "callgrind.out.100", cwd=self.dir)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "cgprof report: callgrind.paths.100.1-02:13: expected 'fn <id> <name>', "
                                   "found 'fn 3'\n")
        self.assertEqual(p.stdout.split("\n")[0],
                         "top 1 paths by inclusive time (2 path files; 1.200 ms in all threads):")
        for argv, msg in [(["--paths", "--callers", "f", "x"], "one view at a time: --paths and --callers"),
                          (["--callers", "f", "--paths", "x"], "one view at a time: --callers and --paths"),
                          (["--paths=3", "x"], "--paths takes no value")]:
            p = cgprof("report", *argv)
            self.assertEqual((p.returncode, p.stderr), (2, "cgprof report: %s\n" % msg))
        self.assertIn("  --paths ", cgprof("report", "--help").stdout)


class FlameDiff(unittest.TestCase):
    """cgprof flame --diff A B: the hand-written run (pid 100, threads
    summed) against another (pid 200): lex slower, emit and worker gone,
    dump new. The collapsed pairs and the page's data, whole; the drawing
    is test_flamehtml's."""

    B = paths_text(200, 1, 1, [(1, "main"), (2, "parse"), (3, "lex"), (4, "dump")],
                   [(1, 0, 1, 1, 1500000, 100000), (2, 1, 2, 1, 1000000, 200000), (3, 2, 3, 30, 800000, 800000),
                    (4, 1, 4, 1, 400000, 400000)])

    def test_diff(self):
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d)
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        os.mkdir(a)
        os.mkdir(b)
        hand_run(a)
        write(os.path.join(b, "callgrind.paths.200-01"), self.B)
        p = cgprof("flame", "--diff", a, b, cwd=d)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout.split("\n"), [os.path.join(b, "flame.200.diff.html"),
                                                os.path.join(b, "flame.200.diff.folded"), ""])
        self.assertEqual(sorted(os.listdir(b)), ["callgrind.paths.200-01", "flame.200.diff.folded",
                                                 "flame.200.diff.html"])
        self.assertEqual(lines_of(os.path.join(b, "flame.200.diff.folded")),
                         ["main 150000 100000", "main;dump 0 400000", "main;emit 350000 0", "main;emit;lex 100000 0",
                          "main;parse 200000 200000", "main;parse;lex 400000 800000", "worker 100000 0",
                          "worker;parse 100000 0", "worker;parse;lex 300000 0"])
        page = page_data(os.path.join(b, "flame.200.diff.html"))
        self.assertEqual((page["kind"], page["a"], page["b"], page["unit"]), ("diff", "A", "B", "ns"))
        self.assertEqual(page["title"], "A = %s (./prog arg, pid 100), B = %s (./prog arg, pid 200): B's flame graph "
                                        "coloured by the change from A" % (a, b))
        (prof,) = page["profiles"]
        self.assertEqual(page_costs(page, prof), {("main",): [1, 1500000, 100000], ("main", "parse"): [1, 1000000, 200000],
                                                  ("main", "parse", "lex"): [30, 800000, 800000],
                                                  ("main", "dump"): [1, 400000, 400000]})
        # A's costs of B's paths: thread 1's two parts summed
        self.assertEqual(page_costs(page, prof, "a_"), {("main",): [1, 1200000, 150000],
                                                        ("main", "parse"): [1, 600000, 200000],
                                                        ("main", "parse", "lex"): [30, 400000, 400000]})
        self.assertEqual(prof["a_total"], 1700000)
        self.assertEqual(page["gone"], [{"path": ["worker"], "calls": 1, "incl": 500000, "self": 100000, "paths": 3},
                                        {"path": ["main", "emit"], "calls": 3, "incl": 450000, "self": 350000,
                                         "paths": 2}])
        self.assertEqual((page["goneCount"], page["goneSelf"]), (2, 950000))
        # --out, and the runs the other way round: A's shape, B's gone
        out = os.path.join(d, "ba")
        p = cgprof("flame", "--diff", "--out", out, b, a, cwd=d)
        self.assertEqual((p.returncode, p.stderr, p.stdout), (0, "", out + ".diff.html\n" + out + ".diff.folded\n"))
        self.assertEqual(lines_of(out + ".diff.folded"),
                         ["main 100000 150000", "main;dump 400000 0", "main;emit 0 350000", "main;emit;lex 0 100000",
                          "main;parse 200000 200000", "main;parse;lex 800000 400000", "worker 0 100000",
                          "worker;parse 0 100000", "worker;parse;lex 0 300000"])
        page = page_data(out + ".diff.html")
        self.assertEqual([g["path"] for g in page["gone"]], [["main", "dump"]])

    def test_nothing_and_several(self):
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d)
        hand_run(d)
        p = cgprof("flame", "--diff", "callgrind.out.100", "callgrind.out.300", cwd=d)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertTrue(p.stderr.startswith("cgprof flame: no path files and no Callgrind file for callgrind.out.300 "),
                        p.stderr)
        write(os.path.join(d, "callgrind.paths.200-01"), self.B)
        p = cgprof("flame", "--diff", "callgrind.out.100", ".", cwd=d)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr, "cgprof flame: B, .: the path files are of 2 processes (pids 100 200): name the "
                                   "files to write with --out PREFIX\n")
        p = cgprof("flame", "--diff", "callgrind.out.100", ".", "--out", "x", cwd=d)
        self.assertEqual((p.returncode, p.stderr), (0, ""))


class LauncherLine(unittest.TestCase):
    """The launcher's line after a run that wrote path files (its
    flame_summary, on the files of a run written here: the runtime that
    writes them is not this test's)."""

    def test_line_and_files(self):
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d)
        hand_run(d)
        said = []
        cwd = os.getcwd()
        os.chdir(d)
        try:
            launcher.flame_summary(said.append, "callgrind.out", 100, d, [(1, 1), (2, 1), (1, 2)])
        finally:
            os.chdir(cwd)
        self.assertEqual(said, ["flame graphs of the call paths: flame.100.html (a browser), "
                                "flame.100.speedscope.json (speedscope), flame.100.folded (flamegraph.pl); "
                                "per thread: flame.100-01.folded flame.100-02.folded"])
        self.assertEqual(lines_of(os.path.join(d, "flame.100.folded")), FOLDED_TOTAL)
        # only the parts the run wrote: part 2 of thread 1 left out
        said.clear()
        os.chdir(d)
        try:
            launcher.flame_summary(said.append, "callgrind.out", 100, d, [(1, 1), (1, 2)])
        finally:
            os.chdir(cwd)
        self.assertEqual(lines_of(os.path.join(d, "flame.100-01.folded")),
                         ["main 100000", "main;emit 200000", "main;parse 200000", "main;parse;lex 400000"])
        # none: nothing said, nothing written
        said.clear()
        launcher.flame_summary(said.append, "callgrind.out", 101, d, [(1, 1)])
        self.assertEqual(said, [])
        self.assertFalse([n for n in os.listdir(d) if "101" in n])

    def test_malformed(self):
        d = tempfile.mkdtemp(prefix="cgprof-paths-")
        self.addCleanup(shutil.rmtree, d)
        write(os.path.join(d, "callgrind.paths.100-01"), "paths: 2\n")
        said = []
        launcher.flame_summary(said.append, "callgrind.out", 100, d, [(0, 1)])
        self.assertEqual(said, ["no flame graphs: %s/callgrind.paths.100-01:1: expected 'paths: 1' (a path file "
                                "of format version 1), found 'paths: 2'" % d])
        # a directory where the flame graphs cannot be written
        write(os.path.join(d, "callgrind.paths.100-01"), GOOD.replace("pid: 5", "pid: 100"))
        os.mkdir(os.path.join(d, "flame.100.speedscope.json"))
        said.clear()
        launcher.flame_summary(said.append, "callgrind.out", 100, d, [(0, 1)])
        self.assertEqual(said, ["no flame graphs: %s/flame.100.speedscope.json: Is a directory" % d])


if __name__ == "__main__":
    unittest.main()
