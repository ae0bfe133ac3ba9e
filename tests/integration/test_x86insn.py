"""runtime/arch/x86_64/x86insn.c, the x86-64 decoder the runtime sweeps a function's
code with (docs/internals/takeback.md), held against objdump on real code: the C
library, the dynamic linker, libm, libstdc++, the runtime itself, and
tests/progs/x86sample.c compiled here by gcc and clang at -O3 for
x86-64-v4 (AVX-512), sapphirerapids (AVX512-FP16) and bdver4 (XOP, TBM),
with the crypto and bit intrinsics, and at -O2 with -finstrument-functions
(with and without -fno-plt).

tests/progs/x86sweep decodes each function symbol of a file (FUNC or
IFUNC, of a size) by linear sweep from its start to its end, as the runtime
sweeps an unwind table's range; `objdump -d -z` decodes the whole file.
Every function must have the same instruction boundaries as objdump's, its
sweep must end exactly at its end, and each branch must be of the kind and
target objdump says (a call's and a jump's target, the memory slot of a
rip-relative one, the conditional jumps', returns and the instructions
that stop). A function where objdump itself finds no instruction (data in
the code: "(bad)", or prefixes it shows alone) is skipped and counted. Each
file's figures are printed on stderr."""

import bisect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

import cgtest

SOURCE_DIR = os.environ.get("CGPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("CGPROF_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
LIB = os.environ.get("CGPROF_LIB", os.path.join(BUILD_DIR, "runtime", "libcgprof.so"))
SWEEP = os.path.join(BUILD_DIR, "tests", "progs", "x86sweep")
SAMPLE = os.path.join(SOURCE_DIR, "tests", "progs", "x86sample.c")

SYSTEM = [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/x86_64-linux-gnu/libm.so.6",
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
]

# enum cg_insn_kind
OTHER, CALL_REL, CALL_RIP, CALL_IND, JMP_REL, JMP_RIP, JMP_IND, JCC, RET, STOP = range(10)
KIND_NAMES = ["other", "call_rel", "call_rip", "call_ind", "jmp_rel", "jmp_rip", "jmp_ind", "jcc", "ret", "stop"]

INTRINSICS = ["-maes", "-msha", "-mpclmul", "-mrdrnd", "-mrtm", "-madx", "-DSAMPLE_INTRINSICS"]
# name, compiler, flags: each built into a shared object
BUILDS = [
    ("gcc-O3-v4", "gcc", ["-O3", "-march=x86-64-v4", "-DSAMPLE_ASM"]),
    ("clang-O3-v4", "clang", ["-O3", "-march=x86-64-v4"]),
    ("gcc-O3-fp16", "gcc", ["-O3", "-march=sapphirerapids", "-DSAMPLE_FP16"]),
    ("clang-O3-fp16", "clang", ["-O3", "-march=sapphirerapids", "-DSAMPLE_FP16"]),
    ("gcc-O3-xop", "gcc", ["-O3", "-march=bdver4", "-mtbm"]),
    ("gcc-O2-intrinsics", "gcc", ["-O2", "-march=x86-64-v3"] + INTRINSICS),
    ("clang-O2-intrinsics", "clang", ["-O2", "-march=x86-64-v3"] + INTRINSICS),
    ("gcc-O2-instrumented", "gcc", ["-O2", "-finstrument-functions"]),
    ("gcc-O2-instrumented-noplt", "gcc", ["-O2", "-finstrument-functions", "-fno-plt"]),
    ("clang-O2-instrumented", "clang", ["-O2", "-finstrument-functions"]),
    ("gcc-O0-cet", "gcc", ["-O0", "-fcf-protection=full"]),
    ("clang-Os-v4", "clang", ["-Os", "-march=x86-64-v4"]),
]

PREFIXES = frozenset("bnd notrack rep repz repnz repe repne data16 data32 addr32 addr16 cs ds es ss fs gs lock "
                     "xacquire xrelease".split())
RIP_SLOT = re.compile(r"\(%[re]ip\)\s+# (?:0x)?([0-9a-f]+)")
# without their size suffix
STOPS = frozenset("ud0 ud1 ud2 hlt int3 iret lret sysret sysexit".split())


def objdump_kind(text):
    """(kind, target or memory slot) of an instruction as objdump prints it."""
    words = text.split()
    k = 0
    while k < len(words) and (words[k] in PREFIXES or words[k].startswith("rex")):
        k += 1
    if k == len(words):
        return OTHER, 0
    mn, ops = words[k], words[k + 1:]
    if mn in ("call", "callq", "callw", "jmp", "jmpq", "jmpw"):
        call = mn.startswith("call")
        if ops and ops[0].startswith("*"):
            m = RIP_SLOT.search(text)
            if m and "%fs:" not in text and "%gs:" not in text:
                # objdump shows an %eip-relative address sign-extended; the
                # processor cuts it to 32 bits
                slot = int(m.group(1), 16) & (0xffffffff if "(%eip)" in text else ~0)
                return (CALL_RIP if call else JMP_RIP), slot
            return (CALL_IND if call else JMP_IND), 0
        return (CALL_REL if call else JMP_REL), target(ops)
    if mn in ("lcall", "lcallw", "lcalll", "lcallq"):
        return CALL_IND, 0
    if mn in ("ljmp", "ljmpw", "ljmpl", "ljmpq"):
        return JMP_IND, 0
    if mn in ("ret", "retq", "retw", "retl"):
        return RET, 0
    if mn.rstrip("lqw") in STOPS:
        return STOP, 0
    if mn.startswith("j") or mn.startswith("loop") or mn.startswith("xbegin"):
        return JCC, target(ops)
    return OTHER, 0


def target(ops):
    """A branch's target as objdump prints it (None if it prints none)."""
    try:
        return int(ops[0], 16)
    except (IndexError, ValueError):
        return None


# What objdump shows where it finds no instruction: "(bad)", or prefixes
# alone, which it prints as an instruction of their own when the next one
# does not use them (a REX before another prefix: the processor ignores
# such a REX, and so does the decoder). Data in code, both.
JUNK = re.compile(r"^ *([0-9a-f]+):\t(?:.*\(bad\).*|(?:(?:rex(?:\.[WRXB]+)?|%s)\s*)+)$"
                  % "|".join(sorted(PREFIXES)), re.M)


def disassemble(path):
    """objdump's instructions: their sorted addresses, each one's text, and
    the sorted addresses where objdump finds no instruction."""
    out = subprocess.run(["objdump", "-d", "-z", "--no-show-raw-insn", "-w", path], capture_output=True, text=True,
                         check=True, timeout=cgtest.limit(120)).stdout
    text = {}
    for line in out.split("\n"):
        # "  1234:\tmnemonic operands"
        a, tab, t = line.partition(":\t")
        if tab and a.startswith(" "):
            text[int(a, 16)] = t
    junk = sorted(int(m.group(1), 16) for m in JUNK.finditer(out))
    return sorted(text), text, junk


def sweep(path):
    """x86sweep's functions: (start, end, name, [(addr, kind, target)], the
    address it stopped at or None)."""
    out = subprocess.run([SWEEP, path], capture_output=True, text=True, check=True, timeout=cgtest.limit(120)).stdout
    lines = out.splitlines()
    funcs = []
    for header, insns in zip(lines[0::2], lines[1::2]):
        _, start, end, name = header.split(" ", 3)
        stopped, decoded = None, []
        for w in insns.split()[1:]:
            if w.startswith("X:"):
                stopped = int(w[2:], 16)
            elif ":" in w:
                a, k, t = w.split(":")
                decoded.append((int(a, 16), int(k), int(t, 16)))
            else:
                decoded.append((int(w, 16), OTHER, 0))
        funcs.append((int(start, 16), int(end, 16), name, decoded, stopped))
    return funcs


def raw_bytes(path, addr):
    """The bytes objdump shows from addr on (the first difference's)."""
    out = subprocess.run(["objdump", "-d", "-z", "-w", "--start-address=%#x" % addr, "--stop-address=%#x" % (addr + 16),
                          path], capture_output=True, text=True, timeout=cgtest.limit(60)).stdout
    m = re.search(r"^ *[0-9a-f]+:\t((?:[0-9a-f]{2} )+)", out, re.M)
    return m.group(1).strip() if m else "?"


class Result:
    def __init__(self, label):
        self.label = label
        self.functions = 0
        self.instructions = 0
        self.skipped = []       # names of the functions where objdump finds no instruction
        self.differences = []   # (function, address, what)
        self.kinds = [0] * len(KIND_NAMES)
        self.decoded = {}       # addr -> (kind, target), of the functions compared

    def summary(self):
        kinds = ", ".join("%s %d" % (KIND_NAMES[k], n) for k, n in enumerate(self.kinds) if k != OTHER and n)
        return "%s: %d functions, %d instructions (%s); %d skipped%s" % (
            self.label, self.functions, self.instructions, kinds, len(self.skipped),
            " (objdump finds no instruction in %s)" % ", ".join(self.skipped[:5]) if self.skipped else "")


def compare(path, label, disassembly, funcs):
    addrs, text, junk = disassembly
    r = Result(label)
    for start, end, name, decoded, stopped in funcs:
        if bisect.bisect_left(junk, start) != bisect.bisect_left(junk, end):
            r.skipped.append(name)
            continue
        lo, hi = bisect.bisect_left(addrs, start), bisect.bisect_left(addrs, end)
        theirs = addrs[lo:hi]
        r.functions += 1
        r.instructions += len(decoded)
        ours = [d[0] for d in decoded]
        where = "%s [%#x, %#x)" % (name, start, end)
        if stopped is not None:
            r.differences.append((where, stopped, "x86insn refused the bytes (or they run past the end); objdump: %s"
                                  % text.get(stopped, "no instruction starts there")))
            continue
        if ours != theirs:
            # from the last boundary both have: each one's next ones
            first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            common = theirs[first - 1] if first > 0 else start
            r.differences.append((where, common, "x86insn: %s; objdump: %s" % (
                " ".join("%#x" % a for a in ours[max(0, first - 1):first + 2]) or "nothing",
                "; ".join("%#x: %s" % (a, text[a]) for a in theirs[max(0, first - 1):first + 2]) or "nothing")))
            continue
        for a, kind, target in decoded:
            r.kinds[kind] += 1
            r.decoded[a] = (kind, target)
            expected = objdump_kind(text[a])
            if (kind, target) != expected:
                r.differences.append((where, a, "x86insn: %s %#x; objdump: %s %s (%s)" % (
                    KIND_NAMES[kind], target, KIND_NAMES[expected[0]],
                    "?" if expected[1] is None else "%#x" % expected[1], text[a])))
                break
    r.text = text
    return r


class Decoder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cgprof-x86insn-")
        cls.pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
        cls.builds = {}   # name -> future of its path
        cls.results = {}  # label -> Result

    @classmethod
    def tearDownClass(cls):
        cls.pool.shutdown()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, paths):
        """Compares each (path, label), once per test run: objdump and
        x86sweep run on the pool while the previous file is compared.
        Returns the Results."""
        jobs = [(path, label, self.pool.submit(disassemble, path), self.pool.submit(sweep, path))
                for path, label in paths if label not in self.results]
        for path, label, dis, sw in jobs:
            r = compare(path, label, dis.result(), sw.result())
            r.path = path
            print(r.summary(), file=sys.stderr)
            self.results[label] = r
        results, failures = [self.results[label] for _, label in paths], []
        for r in results:
            self.assertGreater(r.functions, 0, r.label)
            for where, addr, what in r.differences[:10]:
                failures.append("%s: %s at %#x (bytes %s): %s" % (r.label, where, addr, raw_bytes(r.path, addr), what))
            if len(r.differences) > 10:
                failures.append("%s: and %d more functions" % (r.label, len(r.differences) - 10))
        if failures:
            self.fail("\n" + "\n".join(failures))
        return results

    def test_system_libraries(self):
        """The C library, the dynamic linker, libm, libstdc++."""
        paths = [(p, os.path.basename(p)) for p in SYSTEM if os.path.exists(p)]
        self.assertTrue(any(label == "libc.so.6" for _, label in paths), "no libc.so.6")
        self.check(paths)

    def test_runtime(self):
        self.check([(LIB, "libcgprof.so")])

    def build(self, builds):
        """x86sample.c built as each of builds says (once per test run):
        [(path, label)]."""
        def compile_one(name, compiler, flags):
            out = os.path.join(self.tmp, "lib%s.so" % name)
            subprocess.run([compiler, "-shared", "-fPIC", "-w"] + flags + ["-o", out, SAMPLE], check=True, timeout=cgtest.limit(120))
            return out
        for b in builds:
            if b[0] not in self.builds:
                self.builds[b[0]] = self.pool.submit(compile_one, *b)
        return [(self.builds[b[0]].result(), "x86sample.c " + b[0]) for b in builds]

    def test_compiled(self):
        """x86sample.c, by gcc and clang (when there), for the instruction
        sets compilers reach for. Each build must show what it was built
        for: EVEX, FP16, XOP, the crypto instructions."""
        builds = [b for b in BUILDS if shutil.which(b[1])]
        missing = sorted({b[1] for b in BUILDS} - {b[1] for b in builds})
        if missing:
            print("x86sample.c: not built by %s (not installed)" % ", ".join(missing), file=sys.stderr)
        results = self.check(self.build(builds))
        expected = {
            # EVEX: a mask, or a register only EVEX names
            "-O3-v4": r"\{%k[1-7]\}|%zmm|%[xy]mm(1[6-9]|2\d|3[01])\b",
            "-fp16": r"^v\w+ph\s",
            "-xop": r"^(vprot|vpcmov|vpperm|vpmacs|bextr\s+\$)",
            "-intrinsics": r"^(aesenc|sha256rnds2|pclmul|rdrand|xbegin|adcx|adox|crc32)",
            "-cet": r"^endbr64$",
        }
        for r in results:
            for part, pattern in expected.items():
                if part in r.label:
                    found = any(re.search(pattern, t) for t in r.text.values())
                    self.assertTrue(found, "%s: no instruction matches %s" % (r.label, pattern))

    def test_hook_sites(self):
        """The forms of the hooks' calls in instrumented code (docs/internals/takeback.md,
        "The sites"): call and tail jump to the PLT entry (gcc), call and
        tail jump through the GOT slot (-fno-plt), at the addresses
        objdump and the relocations give."""
        for name, compiler, flags in BUILDS:
            if "-finstrument-functions" not in flags or not shutil.which(compiler):
                continue
            r = self.check(self.build([(name, compiler, flags)]))[0]
            path = r.path
            relocs = subprocess.run(["readelf", "-rW", path], capture_output=True, text=True, check=True).stdout
            slots = {m.group(2): int(m.group(1), 16)
                     for m in re.finditer(r"^([0-9a-f]+)\s+\S+\s+R_X86_64_GLOB_DAT\s+\S+\s+(__cyg_profile_func_\w+)",
                                          relocs, re.M)}
            sites = {}
            for a, (kind, slot) in r.decoded.items():
                t = r.text[a]
                hook = ("enter" if "__cyg_profile_func_enter" in t
                        else "exit" if "__cyg_profile_func_exit" in t else None)
                if hook and kind in (CALL_REL, JMP_REL, CALL_RIP, JMP_RIP):
                    if kind in (CALL_RIP, JMP_RIP):
                        self.assertEqual(slot, slots["__cyg_profile_func_" + hook], t)
                    sites[(hook, kind)] = sites.get((hook, kind), 0) + 1
            if "-fno-plt" in flags:
                want = [("enter", CALL_RIP), ("exit", CALL_RIP)]
            else:
                want = [("enter", CALL_REL), ("exit", CALL_REL)]
            if compiler == "gcc":
                want.append(("exit", JMP_RIP if "-fno-plt" in flags else JMP_REL))
            for w in want:
                self.assertGreater(sites.get(w, 0), 0, "%s: no %s of the %s hook: %s" % (
                    name, KIND_NAMES[w[1]], w[0], sites))


if __name__ == "__main__":
    unittest.main(verbosity=2)
