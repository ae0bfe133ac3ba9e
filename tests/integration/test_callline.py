"""Issue 27 (2): a call's position is the call's own line, an inlined call's
too.

An inlined call has no call instruction: cgprof places its arc where its
enter hook is called, in the inlined copy, which the line table gives a
line of the inlined function (its first). Its position must be the call's
own, DW_AT_call_file/DW_AT_call_line of the inlined entry of that callee
(for nested inlining, the entry of this callee: the call in its caller's
code), so that two call sites of one inlined function are two rows.

tests/nesting/progs/callline.c, built by gcc and clang at -O0, -O2, -O3,
marks each call `CALL caller callee` on its line (the header's helper makes
its calls on the line that calls nest_real_work). Run with
CGPROF_INLINED=count, for every function of the program, the whole set of
(caller, callee, file, line) of its arcs must be the marks' (in the
addresses-and-lines files and in CGPROF_POSITIONS=line's); and each arc's
position must be what addr2line -f -i says at its recorded address: the
frame that calls the callee in the inline chain (the one after the
callee's own frame, for an inlined callee; the innermost, for a real
call). llvm-addr2line is used when installed: GNU addr2line (binutils
2.40) does not read the DW_FORM_rnglistx ranges clang 14 gives inlined
entries (it shows no inline chain there), and names callline.c, not
nest_helpers.h, as the file of gcc -O0's out-of-line nest_checked (DWARF 5
file indexes); without it, GNU addr2line on gcc's builds, lines only. With
the default CGPROF_INLINED=fold (inlined calls folded into their hosts)
every arc is at addr2line's position too. callgrind_annotate reads every
file without a warning.
"""

import os
import re
import shutil
import subprocess
import unittest

import cgtest
from cgproflib import reader
from test_nesting import Checks, built_variants, nesting_prog

SRC = os.path.join(cgtest.SOURCE_DIR, "tests", "nesting", "progs")
MARK = re.compile(r"/\* CALL (\w+) (\w+) \*/")


def marked_calls():
    """{(caller, callee, file's base name, line)} the sources mark."""
    out = set()
    with open(os.path.join(SRC, "callline.c")) as f:
        for i, text in enumerate(f, 1):
            for caller, callee in MARK.findall(text):
                out.add((caller, callee, "callline.c", i))
    with open(os.path.join(SRC, "nest_helpers.h")) as f:
        for i, text in enumerate(f, 1):
            if "return nest_real_work(nest_clamp(x));" in text:
                out |= {("nest_checked", "nest_clamp", "nest_helpers.h", i),
                        ("nest_checked", "nest_real_work", "nest_helpers.h", i)}
    return out


def addr2line_tool(cc):
    """(the addr2line to use, whether its file names are right), or
    (None, False) (see above)."""
    if shutil.which("llvm-addr2line"):
        return shutil.which("llvm-addr2line"), True
    if cc == "gcc" and shutil.which("addr2line"):
        return shutil.which("addr2line"), False
    return None, False


def inline_chain(tool, binary, addrs):
    """{addr: [(function, file's base name, line), ...]}, innermost first,
    as `addr2line -f -i` gives them."""
    addrs = sorted(set(addrs))
    out = {a: [] for a in addrs}
    if not addrs:
        return out
    # one run for all: -a starts each address's chain with the address
    p = subprocess.run([tool, "-a", "-C", "-f", "-i", "-e", binary] + [hex(a) for a in addrs], capture_output=True,
                       text=True, check=True)
    chain, fn = None, None
    for text in p.stdout.splitlines():
        if re.fullmatch(r"0x[0-9a-fA-F]+", text):
            chain, fn = out[int(text, 16)], None
        elif fn is None:
            fn = text
        else:
            m = re.match(r"(.*):(\d+)", text.split(" (discriminator")[0])
            chain.append((fn, os.path.basename(m.group(1)) if m else "??", int(m.group(2)) if m else 0))
            fn = None
    # names llvm-addr2line -C leaves mangled (some of libstdc++'s
    # templates), demangled by c++filt
    mangled = sorted({f for chain in out.values() for f, _, _ in chain if f.startswith("_Z")})
    if mangled and shutil.which("c++filt"):
        p = subprocess.run(["c++filt"], input="\n".join(mangled) + "\n", capture_output=True, text=True, check=True)
        names = dict(zip(mangled, p.stdout.splitlines()))
        out = {a: [(names.get(f, f), fl, ln) for f, fl, ln in chain] for a, chain in out.items()}
    return out


def expected_position(chain, callee):
    """The call's place in the chain: the frame after the innermost one of
    callee's own (an inlined call of callee: the caller's frame, at the
    call), else the innermost (a real call, at its instruction)."""
    for k, (fn, _, _) in enumerate(chain):
        if fn.split(".")[0] == callee and k + 1 < len(chain):
            return chain[k + 1]
    return chain[0]


class CallLine(Checks):
    def run_prog(self, binary, env):
        run = cgtest.run_preloaded(self, [binary], env=env)
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        self.assertNotIn("warning", run.stderr)
        self.assertTrue(run.files)
        return run

    def arcs(self, binary, run):
        """Every arc made by a function of the program (not libc's call of
        main): (caller, callee, file's base name, line, address)."""
        out = []
        for f in run.files:
            prof = reader.load(f, strict=True)
            self.assertEqual(prof.violations, [], f)
            for c in prof.calls:
                if os.path.realpath(c.caller.object) == os.path.realpath(binary):
                    out.append((c.caller.name.split(".")[0], c.callee.name.split(".")[0],
                                os.path.basename(c.file), c.line, c.instr))
        return out

    def assert_at_addr2line(self, binary, cc, arcs):
        tool, files = addr2line_tool(cc)
        if not tool:
            return 0
        chains = inline_chain(tool, binary, [a[4] for a in arcs])
        got = sorted((a[0], a[1], a[2] if files else "", a[3], a[4]) for a in arcs)
        want = sorted((a[0], a[1], expected_position(chains[a[4]], a[1])[1] if files else "",
                       expected_position(chains[a[4]], a[1])[2], a[4]) for a in arcs)
        self.assertEqual(got, want)
        return len(arcs)

    def test_inlined_calls_at_their_lines(self):
        marks = marked_calls()
        checked = 0
        for cc, level in built_variants(self, "callline"):
            binary = nesting_prog("callline", cc, level)
            with self.subTest(compiler=cc, level="-O" + level):
                run = self.run_prog(binary, {"CGPROF_INLINED": "count"})
                arcs = self.arcs(binary, run)
                self.assertEqual({a[:4] for a in arcs}, marks)
                # the two call sites of twice in host: two rows
                self.assertEqual(sorted({a[3] for a in arcs if a[:2] == ("host", "twice")}),
                                 sorted(m[3] for m in marks if m[:2] == ("host", "twice")))
                checked += self.assert_at_addr2line(binary, cc, arcs)
                self.assert_annotate_reads(run)
                # the line-level view: the same positions
                lines = self.run_prog(binary, {"CGPROF_INLINED": "count", "CGPROF_POSITIONS": "line"})
                self.assertEqual({a[:4] for a in self.arcs(binary, lines)}, marks)
                self.assert_annotate_reads(lines)
                # folded: the calls the inlined code makes are its host's,
                # at their call instructions
                fold = self.run_prog(binary, {"CGPROF_INLINED": "fold"})
                checked += self.assert_at_addr2line(binary, cc, self.arcs(binary, fold))
                self.assert_annotate_reads(fold)
        self.assertGreater(checked, 0, "no arc checked against addr2line")


if __name__ == "__main__":
    unittest.main(verbosity=2)
