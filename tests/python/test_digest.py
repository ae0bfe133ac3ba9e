#!/usr/bin/env python3
"""Self-tests of cgproflib.reader.digest()'s fast path (what `cgprof report`
reads for the flat profile, --diff, --threads=each and the launcher's
summary): its numbers against the strict reader's and the line reader's.

Run as:  meson devenv -C build python3 ../tests/python/test_digest.py [-v]

The fast path reads tokens of whole lines found by one regular expression
and sums calls and costs per function as it reads; what it leaves to the
line reader (_digest_lines) must give the same numbers. Each test compares
every function's self cost, inclusive cost and calls, and the order the
functions come in (the order ties are printed in), so that a call or a
cost line dropped or counted twice by a shortcut fails here.
"""

import os
import subprocess
import sys
import tempfile
import unittest

from cgproflib import digests, reader, report

# the tests' one time limit (cgtest.limit: CGPROF_TIMEOUT_MULTIPLIER)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import cgtest  # noqa: E402

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN_PROFILE = os.path.join(SOURCE_DIR, "tests", "bench", "gen_profile.py")


def flat_numbers(d):
    """{(name, object): (self, inclusive, calls)} of a digest(flat=True)."""
    out = {}
    for k in list(d.self_cost) + [k for k in d.flat if k not in d.self_cost]:
        s = d.self_cost.get(k, 0)
        n, c = d.flat.get(k, (0, 0))
        out[k] = (s, s + c, n)
    return out


def strict_numbers(path, event=None):
    """The same numbers from reader.load(), the strict model: self cost
    summed over the cost lines, calls over the calls= lines, inclusive as
    self plus the calls to other functions (names folded: fib'2 is fib)."""
    prof = reader.load(path)
    ev = prof.event_index(event) if event else prof.event_index("ns") if "ns" in prof.events else 0
    key = lambda k: (reader.fold_recursion(k.name), k.object)  # noqa: E731
    out = {}
    for k, fn in prof.functions.items():
        s = fn.self_costs(len(prof.events))[ev]
        e = out.setdefault(key(k), [0, 0, 0])
        e[0] += s
        e[1] += s
    for c in prof.calls:
        a, b = key(c.caller), key(c.callee)
        out.setdefault(b, [0, 0, 0])[2] += c.count
        if a != b:
            out.setdefault(a, [0, 0, 0])[1] += c.costs[ev]
    return {k: tuple(v) for k, v in out.items()}, prof


# Corners of the format in one file: cob= and cfi=/cfl= naming a callee
# for the first time (its object and file come from them), a name given
# without compression, fi=/fe=, recursion and Valgrind's fib'2, self cost
# lines after a call's, a call whose cost line lacks the event (0), lines
# with fewer events, a hexadecimal cost, "\r\n" and a lone "\r" (which
# ends a line too), jump=/jcnd=, ob= in the
# middle, the same name in two objects, comments and blank lines.
CORNERS = """# callgrind format
version: 1
creator: test
positions: line
events: Ir Dr
summary: 0

ob=(1) /bin/prog
fl=(1) /src/main.c
fn=(1) main
10 100 7
11 5
cob=(2) /lib/libc.so
cfi=(2) /src/libc.c
cfn=(2) memcpy
calls=3 20
11 40 2
12 8 1
cfl=(3) /src/util.c
cfn=(3) util
calls=2 30
13 700
cfn=(3)
calls=1 30
14
# a comment
fi=(4) /src/inl.h
15 9
fe=(1)
cfn=(4) fib
calls=1 40
16 300

fn=(4)
40 50
cfn=(5) fib'2
calls=4 40
41 250
cfn=(4)
calls=1 40
41 20
jump=2 44
45
jcnd=1/3 46
47
42 0x10
cfn=(3)
calls=5 30
43 60\r
cfn=main
calls=1 10
44 1
fn=(5)
40 200
cfn=(5)
calls=3 40
41 120

ob=(2)
fl=(2)
fn=(2)
20 40 9
fn=(6) util
20 1\r21 2

ob=(1)
fn=(3)
30 500
cob=(2)
cfn=(6)
calls=7 20
31 100

totals: 0
"""

# cgprof's way: name compression, relative positions, instr and line.
CGPROF = """# callgrind format
version: 1
creator: cgprof
pid: 7
thread: 1
part: 1
positions: instr line
event: ns : Wall-clock time (nanoseconds)
events: ns
summary: 0

ob=(1) /bin/synth
fl=(1) /src/synth.c
fn=(1) main
0x10 10 100000
cfn=(2) rec
calls=1 0x20 20
0x11 11 500000
+1 +1 7
cfn=(3) leaf
calls=4 0x30 30
0x12 12 50000

fn=(2)
0x20 20 300000
+1 +1 100000
cfn=(2)
calls=5 0x20 20
+1 +2 400000
cfn=(3)
calls=2 0x30 30
+1 +1 100000

fn=(3)
0x30 30 150000

totals: 0
"""


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-digest-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.dir]))
        self.block = digests._FAST_BLOCK
        self.addCleanup(setattr, digests, "_FAST_BLOCK", self.block)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w", newline="") as f:
            f.write(text)
        return path

    def same_as_line_reader(self, path, event=None):
        """digest(flat=True) and digest(sites=False), whichever way they
        read, against the line reader: every table, the same order."""
        lines = digests._digest_lines(path, event, False, True, False)
        fast = reader.digest(path, event, flat=True)
        self.assertEqual(fast.total, lines.total)
        self.assertEqual(list(fast.self_cost.items()), list(lines.self_cost.items()))
        self.assertEqual(list(fast.files.items()), list(lines.files.items()))
        want = digests._flat_of_arcs(lines.arcs)
        self.assertEqual(list(fast.flat.items()), list(want.items()))
        self.assertEqual((fast.events, fast.event, fast.desc, fast.pid, fast.thread, fast.part, fast.cmd),
                         (lines.events, lines.event, lines.desc, lines.pid, lines.thread, lines.part, lines.cmd))
        arcs = reader.digest(path, event, sites=False)
        self.assertEqual(list(arcs.arcs.items()), list(lines.arcs.items()))
        self.assertEqual(arcs.self_cost, lines.self_cost)
        return fast


class AgainstStrict(Base):
    def check(self, path, event=None):
        fast = self.same_as_line_reader(path, event)
        want, prof = strict_numbers(path, event)
        got = flat_numbers(fast)
        zero = (0, 0, 0)
        self.assertEqual({k: v for k, v in got.items() if v != zero}, {k: v for k, v in want.items() if v != zero})
        self.assertEqual(fast.total, prof.total_self(fast.event))
        return got

    def test_generated_profile(self):
        path = os.path.join(self.dir, "big.cg")
        subprocess.run([sys.executable, GEN_PROFILE, path, "3"], check=True, timeout=cgtest.limit(300))
        got = self.check(path)
        self.assertGreater(len(got), 8000)
        # read in small blocks: tokens cut anywhere are read line by line
        for block in (4096, 65536):
            digests._FAST_BLOCK = block
            self.check(path)

    def test_cgprof_file(self):
        path = self.write("cg", CGPROF)
        got = self.check(path)
        # the line after a call's cost line is main's own again
        self.assertEqual(got[("main", "/bin/synth")], (100000 + 7, 100007 + 500000 + 50000, 0))
        # rec's recursive arc is not added to its inclusive cost
        self.assertEqual(got[("rec", "/bin/synth")], (400000, 500000, 6))
        self.assertEqual(got[("leaf", "/bin/synth")], (150000, 150000, 6))

    def test_every_block_boundary(self):
        path = self.write("cg", CGPROF)
        for block in range(1, len(CGPROF) + 2):
            digests._FAST_BLOCK = block
            self.check(path)


class AgainstLineReader(Base):
    def test_corners(self):
        path = self.write("corners", CORNERS)
        for event in (None, "Ir", "Dr"):
            for block in (1, 7, 64, 1 << 20):
                digests._FAST_BLOCK = block
                d = self.same_as_line_reader(path, event)
        digests._FAST_BLOCK = self.block
        got = flat_numbers(reader.digest(path, "Ir", flat=True))
        # fib'2 folded into fib (its own fn= too); fib -> fib'2 and fib ->
        # fib are recursive; 0x10 is 16; the lines after jump= and jcnd= are
        # no cost; the call whose cost line ends in "\r" counts
        self.assertEqual(got[("fib", "/bin/prog")], (50 + 16 + 200, 50 + 16 + 200 + 60 + 1, 1 + 4 + 1 + 3))
        self.assertEqual(got[("main", "/bin/prog")], (100 + 5 + 8 + 9, 122 + 40 + 700 + 0 + 300, 1))
        # the callee named under cob= is libc's; util in libc is another function
        self.assertEqual(got[("memcpy", "/lib/libc.so")], (40, 40, 3))
        # a lone "\r" ends a line, as the file object reads it: 1 + 2
        self.assertEqual(got[("util", "/lib/libc.so")], (3, 3, 7))
        self.assertEqual(got[("util", "/bin/prog")], (500, 600, 8))
        self.assertEqual(d.files[("memcpy", "/lib/libc.so")], "/src/libc.c")
        self.assertEqual(d.files[("util", "/bin/prog")], "/src/util.c")

    def test_errors_named_by_the_line_reader(self):
        bad = CGPROF.replace("cfn=(3) leaf", "cfn=(9)")
        path = self.write("bad", bad)
        with self.assertRaises(reader.CallgrindFormatError) as fast:
            reader.digest(path, flat=True)
        with self.assertRaises(reader.CallgrindFormatError) as lines:
            digests._digest_lines(path, None, False, True, False)
        self.assertEqual(str(fast.exception), str(lines.exception))
        self.assertIn(":20: id (9) is not defined", str(fast.exception))

    def test_garbled_words_named_in_the_format_s_words(self):
        """Issue 41: a garbled word was reported in Python's words, "cannot
        read the line (invalid literal for int() with base 10: '200D000')";
        the message names the word and what the line should hold."""
        head = "version: 1\npositions: line\nevents: ns calls\nfl=a.c\nfn=main\n"
        cases = [
            ("200D000 5\n", "'200D000' is not a line number: a cost line holds its position (line: each a "
             "number, decimal or 0x hex, or +N, -N or * relative to the line before) then its costs (ns calls: "
             "numbers, decimal or 0x hex)"),
            ("3 1y 5\n", "'1y' is not a number (ns): a cost line holds its position"),
            ("3 5\ncfn=f\ncalls=1x 3\n3 4\n", "'1x' is not a count: calls= holds the number of calls "
             "(decimal), then the target's position (line)"),
        ]
        for body, want in cases:
            path = self.write("garbled", head + body)
            # the line views read every word; the flat profile and the arcs
            # only the positions and the event they need: a word they skip
            # is no error to them, one they read is named alike
            for read, must in ((lambda: reader.digest(path, lines=True), True),
                               (lambda: reader.digest(path, flat=True), False),
                               (lambda: digests._digest_lines(path, None, False, True, False), False)):
                try:
                    read()
                except reader.CallgrindFormatError as e:
                    self.assertIn(want, str(e))
                    self.assertNotIn("invalid literal", str(e))
                    line = 6 if body.count("\n") == 1 else 8
                    self.assertTrue(str(e).startswith("%s:%d: " % (path, line)), str(e))
                else:
                    self.assertFalse(must, body)

    def test_header_after_the_body(self):
        late = CGPROF.replace("totals: 0\n", "positions: line\n0x1 1 5\ntotals: 0\n")
        self.same_as_line_reader(self.write("late", late))


# Ties: the same name in three objects with the same numbers, and
# functions seen only in calls (no self cost): printed in the order the
# report has always printed them (the order of Group.flat()).
TIES = """# callgrind format
events: ns

ob=(1) /a
fl=(1) t.c
fn=(1) caller
cfn=(2) f
calls=1 1
1 10
cob=(2) /b
cfn=(3) f
calls=1 1
1 10
cob=(3) /c
cfn=(4) f
calls=1 1
1 10
cfn=(5) g
calls=2 1
1 0
fn=(6) h
cfn=(7) k
calls=2 1
1 0
fn=(2)
1 10
ob=(2)
fn=(3)
1 10
ob=(3)
fn=(4)
1 10
"""


class TopFunctions(Base):
    """report.top_functions() of a group read for the flat profile only,
    against what the report printed before the fast path: the arcs of the
    line reader summed by Group.flat() and all of it sorted."""

    def check(self, path):
        old = report.Group()
        old.add(digests._digest_lines(path, None, False, True, False))
        new = report.Group()
        new.add(reader.digest(path, flat=True))
        self.assertFalse(new.arcs)
        self.assertEqual(list(new.flat().items()), list(old.flat().items()))
        n = len(old.flat())
        for sort in report.SORTS:
            full = sorted(old.flat().items(), key=report.ORDERS[sort])
            for top in (1, 2, 3, 5, 20, n - 1, n, n + 1):
                if top > 0:
                    self.assertEqual(report.top_functions(new, top, sort), full[:top], (sort, top))

    def test_ties(self):
        self.check(self.write("ties", TIES))

    def test_corners(self):
        self.check(self.write("corners", CORNERS))

    def test_generated_profile(self):
        path = os.path.join(self.dir, "big.cg")
        subprocess.run([sys.executable, GEN_PROFILE, path, "1"], check=True, timeout=cgtest.limit(300))
        self.check(path)


if __name__ == "__main__":
    unittest.main()
