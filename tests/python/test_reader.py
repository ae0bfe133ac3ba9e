#!/usr/bin/env python3
"""Self-tests of cgproflib.reader, the Callgrind format checker.

Run as:  meson devenv -C build python3 ../tests/python/test_reader.py [-v]

Every violation test shows both halves: the crafted file is flagged with the
expected message, and the corrected file passes without any violation.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from cgproflib import reader as cc


# -- the examples of the specification (callgrind-format.txt) ---------------

SPEC_SIMPLE = """\
# callgrind format
events: Cycles Instructions Flops
fl=file.f
fn=main
15 90 14 2
16 20 12
"""

SPEC_EXTENDED = """\
# callgrind format
events: Instructions

fl=file1.c
fn=main
16 20
cfn=func1
calls=1 50
16 400
cfi=file2.c
cfn=func2
calls=3 20
16 400

fn=func1
51 100
cfi=file2.c
cfn=func2
calls=2 20
51 300

fl=file2.c
fn=func2
20 700
"""

SPEC_EXTENDED_COMPRESSED = """\
# callgrind format
events: Instructions

fl=(1) file1.c
fn=(1) main
16 20
cfn=(2) func1
calls=1 50
16 400
cfi=(2) file2.c
cfn=(3) func2
calls=3 20
16 400

fn=(2)
51 100
cfi=(2)
cfn=(3)
calls=2 20
51 300

fl=(2)
fn=(3)
20 700
"""

# spec 3.1.5, "can also be written as": the id mappings first.  The spec
# elides the rest ("..."); this is the same profile, completed.
SPEC_EXTENDED_DEFINITIONS_FIRST = """\
# callgrind format
events: Instructions

# define file ID mapping
fl=(1) file1.c
fl=(2) file2.c
# define function ID mapping
fn=(1) main
fn=(2) func1
fn=(3) func2

fl=(1)
fn=(1)
16 20
cfn=(2)
calls=1 50
16 400
cfi=(2)
cfn=(3)
calls=3 20
16 400

fn=(2)
51 100
cfi=(2)
cfn=(3)
calls=2 20
51 300

fl=(2)
fn=(3)
20 700
"""

SPEC_SUBPOS_PLAIN = """\
# callgrind format
positions: instr line
events: ticks

fn=func
0x80001234 90 1
0x80001237 90 5
0x80001238 91 6
"""

SPEC_SUBPOS_COMPRESSED = """\
# callgrind format
positions: instr line
events: ticks

fn=func
0x80001234 90 1
+3 * 5
+1 +1 6
"""

SPEC_EVENT_LONG_NAMES = """\
event: Ir : Instruction Fetches
events: Ir Dr
event: Sum = Ir + Dr
fn=f
1 3 4
"""

# -- a file as cgprof promises to write it: passes --strict ------------------

CGPROF = """\
# callgrind format
version: 1
creator: cgprof-0.1.0
pid: 4242
thread: 1
part: 1
cmd: ./basic --fast
desc: Trigger: Program termination
positions: instr line
event: ns : Time (ns)
events: ns
summary: 1000

ob=(1) /tmp/basic
fl=(1) basic.c
fn=(1) main
0x1130 10 100
+8 * 50
cfn=(2) work
calls=2 0x1200 20
+5 12 850
fn=(2)
0x1200 20 600
+4 21 250

totals: 1000
"""


def parse(text, strict=False):
    return cc.loads(text, path="t.out", strict=strict)


def edit(text, old, new, count=1):
    """Replace `old` (which must occur in `text` `count` times) by `new`."""
    if text.count(old) != count:
        raise AssertionError(f"{old!r} occurs {text.count(old)} times, want {count}")
    return text.replace(old, new)


class CheckerTestCase(unittest.TestCase):
    def assertClean(self, text, strict=False):
        prof = parse(text, strict)
        self.assertEqual([str(v) for v in prof.violations], [],
                         "expected no violation in:\n" + text)
        return prof

    def assertFlagged(self, text, pattern, line=None, strict=False):
        """`text` has a violation whose message matches `pattern` (at `line`)."""
        prof = parse(text, strict)
        hits = [v for v in prof.violations if re.search(pattern, v.message)]
        self.assertTrue(hits, f"no violation matching {pattern!r}; got "
                              f"{[str(v) for v in prof.violations]} for:\n{text}")
        if line is not None:
            self.assertIn(line, [v.line for v in hits], [str(v) for v in hits])
        if strict:
            self.assertTrue(all(v.strict for v in hits))
        return prof

    def assertBadGood(self, bad, good, pattern, line=None, strict=False):
        self.assertFlagged(bad, pattern, line, strict)
        self.assertClean(good, strict)


# ---------------------------------------------------------------------------

class SpecExamples(CheckerTestCase):
    def test_simple_example(self):
        p = self.assertClean(SPEC_SIMPLE)
        self.assertEqual(p.events, ["Cycles", "Instructions", "Flops"])
        self.assertEqual(p.positions, ["line"])          # the default
        self.assertEqual(p.self_cost("main", None), [110, 26, 2])
        self.assertEqual(p.self_cost("main", "Flops"), 2)
        f = p.functions[cc.FnKey("", "file.f", "main")]
        # line 16 gives fewer costs than events: the rest is zero
        self.assertEqual([(c.line, c.costs) for c in f.cost_lines],
                         [(15, [90, 14, 2]), (16, [20, 12, 0])])
        self.assertEqual(p.total_self(None), [110, 26, 2])

    def check_extended_model(self, p):
        self.assertEqual(p.call_counts(), {("main", "func1"): 1, ("main", "func2"): 3,
                                           ("func1", "func2"): 2})
        self.assertEqual(p.inclusive("main"), 820)
        self.assertEqual(p.inclusive("func1"), 400)
        self.assertEqual(p.inclusive("func2"), 700)
        self.assertEqual(p.self_cost("main"), 20)
        self.assertEqual(p.self_cost("func1"), 100)
        self.assertEqual(p.self_cost("func2"), 700)
        self.assertEqual(p.total_self(), 820)
        keys = {(k.file, k.name) for k in p.functions}
        self.assertEqual(keys, {("file1.c", "main"), ("file1.c", "func1"),
                                ("file2.c", "func2")})
        callees = {(c.caller.name, c.callee.name): (c.callee.file, c.line) for c in p.calls}
        self.assertEqual(callees[("main", "func1")], ("file1.c", 16))   # no cfi=: caller's file
        self.assertEqual(callees[("main", "func2")], ("file2.c", 16))
        self.assertEqual(callees[("func1", "func2")], ("file2.c", 51))

    def test_extended_example(self):
        self.check_extended_model(self.assertClean(SPEC_EXTENDED))

    def test_extended_example_name_compressed(self):
        self.check_extended_model(self.assertClean(SPEC_EXTENDED_COMPRESSED))

    def test_extended_example_definitions_first(self):
        self.check_extended_model(self.assertClean(SPEC_EXTENDED_DEFINITIONS_FIRST))

    def test_subposition_compression(self):
        plain = self.assertClean(SPEC_SUBPOS_PLAIN)
        comp = self.assertClean(SPEC_SUBPOS_COMPRESSED)
        want = [(0x80001234, 90, [1]), (0x80001237, 90, [5]), (0x80001238, 91, [6])]
        for p in (plain, comp):
            (f,) = p.functions.values()
            self.assertEqual([(c.instr, c.line, c.costs) for c in f.cost_lines], want)

    def test_event_long_names_and_inherited_types(self):
        p = self.assertClean(SPEC_EVENT_LONG_NAMES)
        self.assertEqual(p.event_long_names, {"Ir": "Instruction Fetches"})
        self.assertEqual(p.event_formulas, {"Sum": "Ir + Dr"})

    def test_cgprof_style_file_passes_strict(self):
        p = self.assertClean(CGPROF, strict=True)
        self.assertEqual((p.version, p.creator, p.pid, p.thread, p.part, p.cmd),
                         (1, "cgprof-0.1.0", 4242, 1, 1, "./basic --fast"))
        self.assertEqual(p.desc, ["Trigger: Program termination"])
        self.assertEqual(p.desc_value("Trigger"), "Program termination")
        self.assertEqual(p.positions, ["instr", "line"])
        self.assertEqual(p.summary, [1000])
        self.assertEqual(p.totals, [1000])
        self.assertEqual(p.inclusive("main"), 1000)
        self.assertEqual(p.call_counts(), {("main", "work"): 2})
        (call,) = p.calls
        self.assertEqual((call.instr, call.line, call.costs), (0x1138 + 5, 12, [850]))
        self.assertEqual((call.target_instr, call.target_line), (0x1200, 20))
        self.assertEqual(call.callee, cc.FnKey("/tmp/basic", "basic.c", "work"))


# ---------------------------------------------------------------------------

class Model(CheckerTestCase):
    def test_self_cost_unknown_function_raises(self):
        p = parse(SPEC_EXTENDED)
        with self.assertRaises(KeyError):
            p.self_cost("nosuch")
        with self.assertRaises(KeyError):
            p.inclusive("nosuch")

    def test_fi_changes_cost_file_not_function_identity(self):
        p = self.assertClean("""\
events: Ir
fl=a.c
fn=f
1 1
fi=inl.h
7 2
fe=a.c
2 4
fn=g
3 8
""")
        f = p.functions[cc.FnKey("", "a.c", "f")]
        self.assertEqual([(c.file, c.line) for c in f.cost_lines],
                         [("a.c", 1), ("inl.h", 7), ("a.c", 2)])
        self.assertIn(cc.FnKey("", "a.c", "g"), p.functions)
        self.assertEqual(len(p.functions), 2)

    def test_fn_resets_current_file_to_last_fl(self):
        # KCachegrind: fn= goes back to the fl= file even after fi=.
        p = parse("events: Ir\nfl=a.c\nfn=f\nfi=x.h\n1 1\nfn=g\n2 2\n")
        g = p.functions[cc.FnKey("", "a.c", "g")]
        self.assertEqual(g.cost_lines[0].file, "a.c")

    def test_cob_cfi_apply_to_next_call_only(self):
        p = self.assertClean("""\
events: Ir
ob=main.so
fl=a.c
fn=f
1 1
cob=lib.so
cfi=b.c
cfn=g
calls=1 5
1 10
cfn=h
calls=1 5
1 20
""")
        callees = [c.callee for c in p.calls]
        self.assertEqual(callees, [cc.FnKey("lib.so", "b.c", "g"),
                                   cc.FnKey("main.so", "a.c", "h")])

    def test_callee_default_file_is_current_fi_file(self):
        # Both readers take the callee's file from the current file, fi= included.
        p = self.assertClean("events: Ir\nfl=a.c\nfn=f\nfi=i.h\ncfn=g\ncalls=1 1\n1 5\n")
        self.assertEqual(p.calls[0].callee.file, "i.h")
        self.assertEqual(p.calls[0].caller.file, "a.c")

    def test_relative_to_previous_cost_line_not_call_target(self):
        p = self.assertClean("""\
positions: instr line
events: Ir
fn=f
0x100 10 1
cfn=g
calls=1 0x900 90
+4 +1 7
+2 * 3
""")
        (call,) = p.calls
        self.assertEqual((call.instr, call.line), (0x104, 11))
        self.assertEqual((call.target_instr, call.target_line), (0x900, 90))
        f = p.functions[cc.FnKey("", "", "f")]
        # the call's cost line is a cost line: the next one is relative to it
        self.assertEqual([(c.instr, c.line) for c in f.cost_lines], [(0x100, 10), (0x106, 11)])
        self.assertEqual(p.total_self(), 4)

    def test_relative_base_survives_fn_change(self):
        p = self.assertClean("events: Ir\nfn=f\n10 1\nfn=g\n+5 1\n")
        self.assertEqual(p.functions[cc.FnKey("", "", "g")].cost_lines[0].line, 15)

    def test_call_counts_sum_over_call_sites(self):
        p = self.assertClean("""\
events: Ir
fn=main
cfn=f
calls=2 1
3 10
cfn=f
calls=5 1
4 30
""")
        self.assertEqual(p.call_counts(), {("main", "f"): 7})
        self.assertEqual(len(p.calls), 2)
        self.assertEqual(p.inclusive("main"), 40)
        self.assertEqual(p.self_cost("main"), 0)

    def test_jumps_are_modelled_and_not_self_cost(self):
        p = self.assertClean("""\
positions: instr line
events: Ir
fn=f
0x10 3 2
jump=4 +6 *
* * 
jcnd=1/3 -2 -1
+2 * 
+4 5 1
totals: 3
""")
        self.assertEqual([(j.kind, j.count, j.executed, j.instr, j.target_instr)
                          for j in p.jumps],
                         [("jump", 4, None, 0x10, 0x16), ("jcnd", 1, 3, 0x12, 0x0e)])
        self.assertEqual(p.total_self(), 3)

    def test_hex_absolute_subpositions(self):
        p = self.assertClean("positions: instr\nevents: Ir\nfn=f\n0xff 1\n+0x10 2\n")
        self.assertEqual([c.instr for c in p.functions[cc.FnKey("", "", "f")].cost_lines],
                         [0xff, 0x10f])

    def test_load_and_raise_on_violation(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.out")
            with open(path, "w") as f:
                f.write("events: Ir\n1 1\n")
            p = cc.load(path)
            self.assertFalse(p.ok)
            self.assertEqual(cc.check(path), p.violations)
            with self.assertRaises(cc.CallgrindFormatError) as cm:
                cc.load(path, raise_on_violation=True)
            self.assertIn(f"{path}:2: cost line before any fn=", str(cm.exception))


class FoldRecursion(CheckerTestCase):
    RECURSIVE = """\
events: Ir
fn=main
1 5
cfn=fib
calls=1 1
2 100
fn=fib
1 10
cfn=fib'2
calls=2 1
2 90
fn=fib'2
1 60
cfn=fib'2
calls=3 1
2 30
"""

    def test_fold_recursion(self):
        self.assertEqual(cc.fold_recursion("fib'2"), "fib")
        self.assertEqual(cc.fold_recursion("fib'12"), "fib")
        self.assertEqual(cc.fold_recursion("fib"), "fib")
        self.assertEqual(cc.fold_recursion("a'b"), "a'b")      # --separate-callers style
        self.assertEqual(cc.fold_recursion("x'2'"), "x'2'")

    def test_call_counts_fold(self):
        p = self.assertClean(self.RECURSIVE)
        self.assertEqual(p.call_counts(), {("main", "fib"): 1, ("fib", "fib'2"): 2,
                                           ("fib'2", "fib'2"): 3})
        self.assertEqual(p.call_counts(fold=True), {("main", "fib"): 1, ("fib", "fib"): 5})

    def test_inclusive_with_recursion(self):
        p = self.assertClean(self.RECURSIVE)
        self.assertEqual(p.inclusive("fib"), 100)             # 10 + call to fib'2 (90)
        # self 10 + 60; the recursive calls are not added a second time
        self.assertEqual(p.inclusive("fib", fold=True), 70)
        self.assertEqual(p.self_cost("fib", fold=True), 70)
        self.assertEqual(p.inclusive("main"), 105)


# ---------------------------------------------------------------------------

class Violations(CheckerTestCase):
    """Checks made always.  Each test: flagged, and the corrected file passes."""

    def test_line_matching_no_rule(self):
        self.assertBadGood(edit(SPEC_EXTENDED, "\nfn=func1\n", "\nfn=func1\nbogus line\n"),
                           SPEC_EXTENDED, r"matches no rule", line=16)
        self.assertFlagged("events: Ir\narch: arm\nfn=f\n1 1\n", r"matches no rule", 2)
        self.assertFlagged("events: Ir\nfn=f\n 1 1\n", r"matches no rule", 3)

    def test_header_line_in_body(self):
        self.assertBadGood("events: Ir\nfn=f\npid: 12\n1 1\n",
                           "pid: 12\nevents: Ir\nfn=f\n1 1\n", r"'pid:' header line in the body", 3)
        # callgrind_annotate ends the header at events:, so positions: after it is lost
        self.assertBadGood("events: Ir\npositions: instr\nfn=f\n0x1 1\n",
                           "positions: instr\nevents: Ir\nfn=f\n0x1 1\n",
                           r"'positions:' header line in the body", 2)

    def test_totals_and_summary_allowed_in_body(self):
        self.assertClean("events: Ir\nsummary: 3\nfn=f\n1 3\nsummary:  3\n".replace(
            "summary:  3\n", "totals: 3\n"))

    def test_events_missing(self):
        self.assertBadGood("# callgrind format\nfn=f\n1 1\n",
                           "# callgrind format\nevents: Ir\nfn=f\n1 1\n",
                           r"no 'events:' line", 2)

    def test_events_after_body(self):
        self.assertBadGood("fn=f\nevents: Ir\n1 1\n", "events: Ir\nfn=f\n1 1\n",
                           r"'events:' after the body", 2)

    def test_events_twice(self):
        self.assertBadGood("events: Ir\nevents: Ir\nfn=f\n1 1\n", "events: Ir\nfn=f\n1 1\n",
                           r"'events:' given twice", 2)

    def test_too_many_costs(self):
        self.assertBadGood(edit(SPEC_SIMPLE, "16 20 12\n", "16 20 12 0 1\n"), SPEC_SIMPLE,
                           r"4 cost numbers but 'events:' names 3", 6)

    def test_non_numeric_cost(self):
        self.assertBadGood(edit(SPEC_SIMPLE, "16 20 12", "16 20 1x2"), SPEC_SIMPLE,
                           r"non-numeric cost '1x2'", 6)
        self.assertFlagged(edit(SPEC_SIMPLE, "16 20 12", "16 20 -12"), r"'-12' is not a cost")
        self.assertFlagged(edit(SPEC_SIMPLE, "16 20 12", "16 . 12"), r"'\.' is Cachegrind's zero")

    def test_hex_cost(self):
        self.assertBadGood(edit(SPEC_SIMPLE, "16 20 12", "16 0x14 12"), SPEC_SIMPLE,
                           r"hexadecimal cost '0x14'", 6)

    def test_cost_too_big(self):
        self.assertBadGood(edit(SPEC_SIMPLE, "16 20 12", "16 18446744073709551616 12"),
                           edit(SPEC_SIMPLE, "16 20 12", "16 18446744073709551615 12"),
                           r"does not fit the 64-bit", 6)

    def test_invalid_subposition(self):
        self.assertBadGood(edit(SPEC_SUBPOS_COMPRESSED, "+3 * 5", "+3 ** 5"),
                           SPEC_SUBPOS_COMPRESSED, r"subposition '\*\*' is neither", 7)
        self.assertFlagged(edit(SPEC_SUBPOS_COMPRESSED, "+3 * 5", "0x8000123g * 5"),
                           r"subposition '0x8000123g' is neither", 7)

    def test_relative_subposition_without_previous_cost_line(self):
        self.assertBadGood(edit(SPEC_SUBPOS_COMPRESSED, "0x80001234 90 1", "+0 90 1"),
                           SPEC_SUBPOS_COMPRESSED, r"relative subposition '\+0' but no previous",
                           6)
        self.assertFlagged(edit(SPEC_SUBPOS_COMPRESSED, "0x80001234 90 1", "0x80001234 * 1"),
                           r"relative subposition '\*' but no previous cost line gives a line")

    def test_subposition_resolving_negative(self):
        self.assertBadGood(edit(SPEC_SUBPOS_COMPRESSED, "+1 +1 6", "+1 -91 6"),
                           edit(SPEC_SUBPOS_COMPRESSED, "+1 +1 6", "+1 -90 6"),
                           r"'-91' resolves to -1", 8)

    def test_subposition_count_mismatch(self):
        # too few
        self.assertBadGood(edit(SPEC_SUBPOS_PLAIN, "0x80001237 90 5", "0x80001237"),
                           SPEC_SUBPOS_PLAIN, r"1 subposition\(s\), 'positions:' declares 2", 7)
        # too many: the extra relative subposition lands among the costs
        self.assertFlagged(edit(SPEC_SIMPLE, "16 20 12", "+1 +4 12"),
                           r"'\+4' is not a cost number \(a subposition\? 'positions:' declares 1")
        # in a calls= target as well
        self.assertBadGood(edit(SPEC_EXTENDED, "calls=1 50", "calls=1 50 3"), SPEC_EXTENDED,
                           r"calls=: target position has 2 subposition\(s\)", 8)

    def test_last_line_unterminated(self):
        self.assertBadGood("events: Ir\nfn=f\n16", "events: Ir\nfn=f\n16\n",
                           r"last line does not end with a newline", 3)

    def test_hex_line_number(self):
        text = "positions: instr line\nevents: Ir\nfn=f\n0x1 0x10 1\n"
        self.assertBadGood(text, text.replace("0x10", "16"), r"hexadecimal line number", 4)

    def test_calls_not_followed_by_cost_line(self):
        self.assertBadGood(edit(SPEC_EXTENDED, "calls=1 50\n", "calls=1 50\n\n"), SPEC_EXTENDED,
                           r"calls= line is not directly followed by a cost line", 8)
        self.assertFlagged(edit(SPEC_EXTENDED, "calls=1 50\n", "calls=1 50\n# note\n"),
                           r"not directly followed", 8)
        self.assertFlagged(SPEC_EXTENDED + "cfn=func1\ncalls=1 50\n",
                           r"calls= line at the end of the file", 26)

    def test_calls_count_not_a_number(self):
        self.assertBadGood(edit(SPEC_EXTENDED, "calls=3 20", "calls=three 20"), SPEC_EXTENDED,
                           r"calls=: count 'three' is not a number", 12)
        self.assertFlagged(edit(SPEC_EXTENDED, "calls=3 20", "calls=0x3 20"),
                           r"hexadecimal count '0x3'")
        self.assertFlagged(edit(SPEC_EXTENDED, "calls=3 20", "calls= 3 20"),
                           r"blank after '='")

    def test_calls_without_cfn(self):
        self.assertBadGood("events: Ir\nfn=f\ncalls=1 2\n2 5\n",
                           "events: Ir\nfn=f\ncfn=g\ncalls=1 2\n2 5\n",
                           r"calls= without a preceding cfn=", 3)

    def test_undefined_compressed_id(self):
        # (3) is defined in the fn space, not in the file space
        self.assertBadGood(edit(SPEC_EXTENDED_COMPRESSED, "fl=(2)\nfn=(3)", "fl=(3)\nfn=(3)"),
                           SPEC_EXTENDED_COMPRESSED,
                           r"fl=\(3\): id 3 is not defined in the file name space", 22)
        self.assertFlagged(edit(SPEC_EXTENDED_COMPRESSED, "fn=(2)\n", "fn=(7)\n"),
                           r"fn=\(7\): id 7 is not defined in the function name space", 15)
        self.assertFlagged(edit(SPEC_EXTENDED_COMPRESSED, "fn=(2)\n", "fn=(2\n"),
                           r"malformed compressed name")

    def test_id_spaces_are_shared_as_the_readers_share_them(self):
        # cfi= defines in the file space that fl= uses; cfn= in the fn= space.
        p = self.assertClean("events: Ir\nfl=(1) a.c\nfn=(1) f\ncfi=(2) b.c\ncfn=(2) g\n"
                             "calls=1 1\n1 1\nfl=(2)\nfn=(2)\n1 1\n")
        self.assertEqual(p.calls[0].callee, cc.FnKey("", "b.c", "g"))
        self.assertIn(cc.FnKey("", "b.c", "g"), p.functions)
        self.assertClean("events: Ir\nob=(1) x\nfn=f\ncob=(1)\ncfn=g\ncalls=1 1\n1 1\n")

    def test_id_redefined_to_other_name(self):
        self.assertBadGood(edit(SPEC_EXTENDED_COMPRESSED, "fl=(2)\nfn=(3)",
                                "fl=(1) file3.c\nfn=(3)"),
                           SPEC_EXTENDED_COMPRESSED,
                           r"fl=\(1\): id 1 redefined from 'file1.c' to 'file3.c'", 22)

    def test_cost_line_before_fn(self):
        self.assertBadGood("events: Ir\nfl=a.c\n1 1\nfn=f\n", "events: Ir\nfl=a.c\nfn=f\n1 1\n",
                           r"cost line before any fn=", 3)
        self.assertFlagged("events: Ir\nfn=f\n1 1\nob=x.so\n2 2\n",
                           r"after ob= without a new fn=", 5)
        self.assertFlagged("events: Ir\ncfn=g\ncalls=1 1\n1 1\nfn=f\n",
                           r"call cost line before any fn=", 4)

    def test_fi_before_fn(self):
        self.assertBadGood("events: Ir\nfl=a.c\nfi=b.h\nfn=f\n1 1\n",
                           "events: Ir\nfl=a.c\nfn=f\nfi=b.h\n1 1\n",
                           r"fi= before any fn=", 3)

    def test_blank_after_equals(self):
        self.assertBadGood("events: Ir\nfn= f\n1 1\n", "events: Ir\nfn=f\n1 1\n",
                           r"fn=: blank after '='", 2)

    def test_totals_must_equal_self_sum(self):
        good = SPEC_EXTENDED + "totals: 820\n"
        self.assertBadGood(SPEC_EXTENDED + "totals: 2020\n", good,
                           r"'totals:' differs.*Instructions 2020 != 820", 25)
        # calls' inclusive costs are not in the sum
        self.assertEqual(parse(good).total_self(), 820)

    def test_summary_not_smaller_than_self_sum(self):
        base = edit(SPEC_EXTENDED, "events: Instructions\n", "events: Instructions\nsummary: {}\n")
        self.assertBadGood(base.format(819), base.format(820), r"'summary:' is smaller", 3)
        self.assertClean(base.format(5000))        # larger is fine (spec 3.2.2)

    def test_summary_and_totals_numbers(self):
        self.assertFlagged("events: Ir\nsummary: 1 2\nfn=f\n1 1\n", r"2 cost numbers but", 2)
        self.assertFlagged("events: Ir\nsummary: x\nfn=f\n1 1\n", r"non-numeric cost 'x'", 2)
        self.assertBadGood("summary: 1\nevents: Ir\nfn=f\n1 1\n",
                           "events: Ir\nsummary: 1\nfn=f\n1 1\n", r"'summary:' before 'events:'", 1)

    def test_version(self):
        self.assertBadGood("# callgrind format\nversion: 2\nevents: Ir\n",
                           "# callgrind format\nversion: 1\nevents: Ir\n",
                           r"only version 1", 2)
        self.assertBadGood("# callgrind format\ncreator: me\nversion: 1\nevents: Ir\n",
                           "# callgrind format\nversion: 1\ncreator: me\nevents: Ir\n",
                           r"'version:' must directly follow", 3)
        self.assertClean("version: 1\nevents: Ir\n")     # first line without format line
        self.assertFlagged("events: Ir\nversion: 1\n", r"'version:' header line in the body")

    def test_format_line_not_first(self):
        self.assertBadGood("\n# callgrind format\nevents: Ir\n", "# callgrind format\nevents: Ir\n",
                           r"'# callgrind format' must be the first line", 2)

    def test_whitespace_after_colon(self):
        for key, value in (("pid", "12"), ("cmd", "./a"), ("positions", "line"),
                           ("creator", "x")):
            with self.subTest(key=key):
                self.assertBadGood(f"{key}:{value}\nevents: Ir\n", f"{key}: {value}\nevents: Ir\n",
                                   rf"'{key}:' must be followed by whitespace", 1)
        self.assertFlagged("events:Ir\n", r"'events:' must be followed by whitespace")
        self.assertClean("version:1\nevents: Ir\n")     # callgrind_annotate: version:\s*

    def test_header_values(self):
        self.assertBadGood("pid: abc\nevents: Ir\n", "pid: 0x1f\nevents: Ir\n",
                           r"'pid:' needs a number", 1)
        self.assertBadGood("positions: line instr\nevents: Ir\n", "positions: instr\nevents: Ir\n",
                           r"'positions: line instr'", 1)
        self.assertBadGood("events: Ir I-r\n", "events: Ir Ir2\n", r"'I-r' is not a Name", 1)
        self.assertBadGood("events: Ir Ir\n", "events: Ir\n", r"named twice", 1)
        self.assertBadGood("desc: nothing here\nevents: Ir\n", "desc: I1 cache: \nevents: Ir\n",
                           r"'desc:' needs 'type: value'", 1)
        self.assertBadGood("event: Sum = Ir +\nevents: Ir\n", "event: Sum = 2 * Ir\nevents: Ir\n",
                           r"not an InheritedExpr", 1)
        self.assertBadGood("pid: 1\npid: 2\nevents: Ir\n", "pid: 1\nevents: Ir\n",
                           r"'pid:' given twice", 2)

    def test_carriage_return(self):
        self.assertBadGood("events: Ir\r\nfn=f\n1 1\n", "events: Ir\nfn=f\n1 1\n",
                           r"carriage return", 1)

    def test_jump_source_line(self):
        good = "positions: line\nevents: Ir\nfn=f\n1 1\njump=1 5\n1 \n"
        self.assertBadGood(good.replace("1 \n", "1 7\n"), good, r"source line of a jump", 6)
        self.assertBadGood(good.replace("jump=1 5\n", "jump=1 5\n\n"), good,
                           r"jump= line is not directly followed", 5)
        self.assertClean(good.replace("jump=1 5", "jcnd=1 3 5"))      # spec grammar
        self.assertClean(good.replace("jump=1 5", "jcnd=1/3 5"))      # what Callgrind writes
        self.assertFlagged(good.replace("jump=1 5", "jcnd=1/x 5"), r"execution count 'x'")

    def test_empty_file(self):
        self.assertFlagged("", r"no 'events:' line.*empty", 1)

    def test_violation_format(self):
        (v,) = parse("events: Ir\n1 1\n").violations
        self.assertEqual(str(v), "t.out:2: cost line before any fn=")
        self.assertFalse(v.strict)


# ---------------------------------------------------------------------------

class StrictViolations(CheckerTestCase):
    """Checks only made with --strict: what cgprof promises about its files."""

    def test_normal_mode_does_not_make_strict_checks(self):
        self.assertClean(SPEC_EXTENDED)
        p = parse(SPEC_EXTENDED, strict=True)
        self.assertTrue(p.violations)
        self.assertTrue(all(v.strict and v.message.startswith("strict: ") for v in p.violations))

    def test_first_lines(self):
        self.assertBadGood(CGPROF.replace("# callgrind format\n", ""), CGPROF,
                           r"line 1 must be '# callgrind format'", 1, strict=True)
        self.assertBadGood(CGPROF.replace("version: 1\n", ""), CGPROF,
                           r"line 2 must be 'version: 1'", 2, strict=True)

    def test_required_header_lines(self):
        for line in ("creator: cgprof-0.1.0\n", "pid: 4242\n", "thread: 1\n", "part: 1\n",
                     "cmd: ./basic --fast\n", "summary: 1000\n"):
            key = line.split(":")[0]
            with self.subTest(key=key):
                self.assertFlagged(edit(CGPROF, line, ""), rf"no '{key}:' in the header",
                                   strict=True)
        self.assertFlagged(edit(CGPROF, "positions: instr line\n", ""),
                           r"no 'positions:' in the header", strict=True)
        self.assertFlagged(edit(CGPROF, "positions: instr line\n", "positions: instr\n"),
                           r"want 'positions: instr line' or 'positions: line'", strict=True)
        self.assertFlagged(edit(CGPROF, "event: ns : Time (ns)\n", "event: ns\n"),
                           r"no 'event: NAME : long name'", strict=True)
        self.assertFlagged(edit(CGPROF, "desc: Trigger: Program termination\n",
                                "desc: Timerange: 0 - 1\n"),
                           r"no 'desc: Trigger: \.\.\.'", strict=True)
        # summary: after the first body line is not "in the header"
        self.assertFlagged(edit(CGPROF, "summary: 1000\n\n", "\n").replace(
            "fn=(1) main\n", "fn=(1) main\nsummary: 1000\n"),
            r"no 'summary:' in the header", strict=True)
        self.assertClean(CGPROF, strict=True)

    def test_line_positions(self):
        # CGPROF_POSITIONS=line: one position column, the calls= target too
        text = CGPROF.replace("positions: instr line", "positions: line")
        for old, new in (("0x1130 10 100", "10 100"), ("+8 * 50", "* 50"), ("calls=2 0x1200 20", "calls=2 20"),
                         ("+5 12 850", "12 850"), ("0x1200 20 600", "20 600"), ("+4 21 250", "+1 250")):
            text = edit(text, old, new)
        self.assertClean(text, strict=True)
        p = parse(text, strict=True)
        self.assertEqual(p.positions, ["line"])
        self.assertEqual(p.self_cost("main"), 150)
        self.assertEqual(p.inclusive("main"), 1000)
        self.assertEqual([(c.line, c.target_line, c.target_instr) for c in p.calls], [(12, 20, None)])
        self.assertEqual([(l.instr, l.line) for l in p.functions_named("work")[0].cost_lines], [(None, 20), (None, 21)])
        # two columns where one is declared
        self.assertFlagged(edit(text, "calls=2 20", "calls=2 0x1200 20"),
                           r"calls=: target position has 2 subposition\(s\), .positions:. declares 1")

    def test_event_after_events(self):
        moved = edit(CGPROF, "event: ns : Time (ns)\nevents: ns\n",
                     "events: ns\nevent: ns : Time (ns)\n")
        self.assertBadGood(moved, CGPROF, r"'event:' after 'events:'", 11, strict=True)
        self.assertClean(moved)          # spec 3.1.7.2: the order is of no importance

    def test_totals(self):
        self.assertBadGood(edit(CGPROF, "\ntotals: 1000\n", "\n"), CGPROF,
                           r"no 'totals:' line", strict=True)
        self.assertBadGood(CGPROF + "# end\n", CGPROF + "\n\n",
                           r"'totals:' must be the last non-empty line", 26, strict=True)

    def test_name_compression_used(self):
        for old, new in (("ob=(1) /tmp/basic", "ob=/tmp/basic"), ("fl=(1) basic.c", "fl=basic.c"),
                         ("cfn=(2) work", "cfn=work")):
            with self.subTest(spec=old):
                self.assertFlagged(edit(CGPROF, old, new), r"name compression not used",
                                   strict=True)
        self.assertFlagged(edit(CGPROF, "fn=(2)\n", "fn=(2) work\n"),
                           r"fn=\(2\) work: id defined again", 22, strict=True)
        # one id per name
        self.assertFlagged(edit(CGPROF, "fn=(2)\n", "fl=(2) basic.c\nfn=(2)\n"),
                           r"fl=\(2\): already defined as \(1\)", 22, strict=True)
        # for functions: one id per (object, file, name) -- a second static
        # "work" in another file is another function and needs its own id.
        other = edit(CGPROF, "fn=(2)\n", "fn=(2)\n0x1200 20 0\nfl=(2) other.c\nfn=(3) work\n")
        self.assertClean(other, strict=False)
        self.assertFlagged(other.replace("fl=(2) other.c\n", ""),
                           r"fn=\(3\): already defined as \(2\)", strict=True)

    def test_function_id_keeps_its_object_and_file(self):
        # work was defined by cfn= in /tmp/basic, basic.c; used by fn= in lib.so
        bad = edit(CGPROF, "fn=(2)\n", "ob=(2) /tmp/lib.so\nfn=(2)\n")
        self.assertBadGood(bad, CGPROF, r"fn=\(2\) 'work': used with object '/tmp/lib.so'",
                           23, strict=True)
        # correct when the call names the callee's object and file first
        good = edit(bad, "cfn=(2) work", "cob=(2) /tmp/lib.so\ncfi=(2) lib.c\ncfn=(2) work")
        good = edit(good, "ob=(2) /tmp/lib.so\nfn=(2)\n", "ob=(2)\nfl=(2)\nfn=(2)\n")
        self.assertClean(good, strict=True)

    def test_fn_while_fi_active(self):
        bad = edit(CGPROF, "+5 12 850\n", "+5 12 850\nfi=(2) inl.h\n+1 40 0\n")
        self.assertBadGood(bad, edit(bad, "fn=(2)\n", "fe=(1)\nfn=(2)\n"),
                           r"fn= while 'inl.h' from fi=/fe= is active", strict=True)
        self.assertClean(bad)

    def test_cob_cfi_order_around_cfn(self):
        call = "cfn=(2) work\ncalls=2"
        self.assertFlagged(edit(CGPROF, call, "cfn=(2) work\ncfi=(2) x.c\ncalls=2"),
                           r"cob=/cfi= between cfn= and calls=", strict=True)
        self.assertFlagged(edit(CGPROF, call, "cfi=(1)\ncfn=(3) idle\ncfn=(2) work\ncalls=2"),
                           r"second cfn= after cob=/cfi=", strict=True)
        self.assertClean(edit(CGPROF, call, "cfi=(1)\ncfn=(2) work\ncalls=2"), strict=True)

    def test_calls_zero(self):
        self.assertBadGood(edit(CGPROF, "calls=2 ", "calls=0 "), CGPROF, r"calls=0", 20,
                           strict=True)
        self.assertClean(edit(CGPROF, "calls=2 ", "calls=0 "))     # Callgrind writes it too

    def test_negative_inclusive_cost_is_not_a_number(self):
        # The grammar has no negative numbers, so a negative inclusive cost
        # never reaches the model: it is reported as not a cost number.
        self.assertFlagged(edit(CGPROF, "+5 12 850", "+5 12 -850"), r"'-850' is not a cost")

    def test_sorted_self_cost_lines_not_required(self):
        self.assertClean(edit(CGPROF, "0x1200 20 600\n+4 21 250\n", "0x1204 21 250\n-4 20 600\n"),
                         strict=True)


# ---------------------------------------------------------------------------

class CommandLine(unittest.TestCase):
    def run_checker(self, *args):
        return subprocess.run([sys.executable, "-m", "cgproflib.reader", *args], capture_output=True, text=True)

    def test_exit_codes_and_output(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "good.out")
            bad = os.path.join(d, "bad.out")
            with open(good, "w") as f:
                f.write(CGPROF)
            with open(bad, "w") as f:
                f.write(edit(CGPROF, "calls=2 ", "calls=x "))
            r = self.run_checker(good)
            self.assertEqual((r.returncode, r.stdout), (0, ""))
            r = self.run_checker("--strict", good)
            self.assertEqual((r.returncode, r.stdout), (0, ""))
            r = self.run_checker(good, bad)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stdout, f"{bad}:20: calls=: count 'x' is not a number\n")
            r = self.run_checker("--strict", os.path.join(d, "missing.out"))
            self.assertEqual(r.returncode, 2)
            r = self.run_checker("--dump", good)
            self.assertIn("call main -> work: 2", r.stdout)

    def test_usage_error(self):
        self.assertEqual(self.run_checker().returncode, 2)
        self.assertEqual(self.run_checker("--bogus", "x").returncode, 2)


# ---------------------------------------------------------------------------

PROGRAM = r"""
#include <stdio.h>
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static int leaf(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * i; return s; }
int main(void) {
    int s = 0;
    for (int i = 0; i < 3; i++) s += leaf(10);
    printf("%d %d\n", fib(10), s);
    return 0;
}
"""


@unittest.skipUnless(shutil.which("valgrind") and shutil.which("gcc"), "needs valgrind and gcc")
class ValgrindOutput(unittest.TestCase):
    """Valgrind's own --tool=callgrind files load without violation."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        src, exe = os.path.join(d, "prog.c"), os.path.join(d, "prog")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["gcc", "-O0", "-g", "-fno-inline", "-o", exe, src], check=True)
        cls.outputs = {}
        for name, opts in (("instr", ["--dump-instr=yes", "--collect-jumps=yes"]),
                           ("line", ["--collect-jumps=yes"])):
            out = os.path.join(d, f"callgrind.{name}.out")
            subprocess.run(["valgrind", "--tool=callgrind", *opts,
                            f"--callgrind-out-file={out}", exe],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cls.outputs[name] = out

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_loads_without_violation(self):
        for name, path in self.outputs.items():
            with self.subTest(positions=name):
                p = cc.load(path)
                self.assertEqual([str(v) for v in p.violations], [])
                self.assertEqual(p.positions, ["instr", "line"] if name == "instr" else ["line"])
                self.assertEqual(p.totals, p.total_self(None))
                counts = p.call_counts(fold=True)
                self.assertEqual(counts[("main", "leaf")], 3)
                self.assertEqual(counts[("main", "fib")], 1)
                self.assertEqual(counts[("fib", "fib")], 176)     # fib(10) makes 177 calls
                self.assertGreater(p.inclusive("main"), p.self_cost("main"))

    def test_strict_reports_only_cgprof_promises(self):
        for name, path in self.outputs.items():
            with self.subTest(positions=name):
                p = cc.load(path, strict=True)
                self.assertTrue(all(v.strict for v in p.violations))
                msgs = {v.message for v in p.violations}
                self.assertIn("strict: no 'thread:' in the header", msgs)
                self.assertIn("strict: no 'event: NAME : long name' line in the header", msgs)


if __name__ == "__main__":
    unittest.main(verbosity=1)
