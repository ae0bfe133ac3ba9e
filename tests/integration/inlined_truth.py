"""Which hook calls belong to inlined calls, from the debug information and
the symbol tables only (not from cgprof's own rule, docs/internals/takeback.md).

The nesting oracle (tests/nesting/nest.c) run with CGNEST_SITES=1 says,
for each place a hook was called from, the function it was called for:
(object, return address, fn). For each such site this module decides
whether the call it belongs to was inlined into another function, and
writes the oracle's CGNEST_FOLD file: run again with it, the oracle counts
only the calls that were not inlined, which is what cgprof must show with
CGPROF_INLINED=fold.

The call instructions come from `objdump -d`: calls of
__cyg_profile_func_enter/exit (through the PLT, through the GOT with
-fno-plt, or directly in a static program) and tail jumps to the exit
hook. A site of fn is an inlined call's when
  1. the machine function that holds the call instruction (the symbol of
     the symbol table whose [value, value + size) holds it) is neither fn
     nor a compiler-made copy or part of it (fn.constprop.0, fn.isra.0,
     fn.part.0, fn.cold: the same symbol name before the first dot, or the
     same address): clang gives the hook calls of what it inlined the
     scope of the function they were inlined into, so only this tells; or
  2. `addr2line -i` gives the instruction a chain of more than one frame
     whose innermost is fn: the call is in an inlined copy of fn, in code
     of fn's own when gcc inlined a recursive function into itself.
A tail jump to the exit hook is never an inlined call's: the compiler
only makes one of the exit at the very end of a function's own code (and
the oracle then sees the return address of the call of that function, in
its caller's code, no hook site at all). Unless that code is a part gcc
split off fn (fn.part.0, -fipa-split) whose head was inlined into the
caller: the call before the return address is then a call of the part
from code that is not fn's, and the exit is that inlined call's.

Names in rule 2 are compared demangled, base names (before the first dot)
on both sides: addr2line names the function of an inlined copy by the
abstract function's linkage name, which for a C++ constructor or
destructor is gcc's "C4"/"D4" variant, never a symbol; demangled it reads
as the symbols' C1/C2/D1/D2 do.
"""

import bisect
import os
import re
import subprocess
import threading
from collections import defaultdict

ENTER, EXIT = "enter", "exit"
HOOK = {"__cyg_profile_func_enter": ENTER, "__cyg_profile_func_exit": EXIT}


class TruthError(Exception):
    """The debug information or the code does not say what the rules need:
    the truth cannot be computed for this program."""


def _run(argv, text_in=None):
    p = subprocess.run(argv, input=text_in, capture_output=True, text=True)
    if p.returncode != 0:
        raise TruthError("%s: %s" % (" ".join(argv[:3]), p.stderr.strip()[-500:]))
    return p.stdout


def base(name):
    """A symbol's name without the compiler's suffixes (fn.constprop.0,
    fn.cold, fn.part.0.isra.0) and without a symbol version."""
    return name.split("@")[0].split(".")[0]


def demangle_all(names):
    """{name: demangled} with one c++filt for all of them."""
    names = sorted(set(names))
    if not names:
        return {}
    out = _run(["c++filt"], "\n".join(names) + "\n").splitlines()
    if len(out) != len(names):
        raise TruthError("c++filt gave %d names for %d" % (len(out), len(names)))
    return dict(zip(names, out))


_OPEN, _CLOSE = "<({[", ">)}]"


def _top_level(text, sep):
    """The positions of sep in text outside brackets."""
    depth, out, i = 0, [], 0
    while i < len(text):
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(sep, i):
            out.append(i)
            i += len(sep)
            continue
        i += 1
    return out


def short_name(demangled):
    """The unqualified name of a demangled function name, without its
    parameters, template arguments or return type:
    "void std::sort<It, Cmp>(It, It, Cmp)" -> "sort". addr2line names the
    frames around the innermost by DW_AT_name alone ("_M_get_pointer",
    "sort<...>"), and, built by gcc, sometimes names an inlined C++
    function's innermost frame by its host's name."""
    t = demangled.strip()
    for q in (" const", " volatile", " &&", " &"):
        if t.endswith(q):
            t = t[:-len(q)].rstrip()
    if t.endswith(")"):
        depth = 0
        for i in range(len(t) - 1, -1, -1):
            depth += t[i] in _CLOSE
            depth -= t[i] in _OPEN
            if depth == 0:
                if i > 0 and not t[:i].endswith("operator"):  # "operator()" keeps its own "()"
                    t = t[:i]
                break
    cuts = _top_level(t, "::")
    if cuts:
        t = t[cuts[-1] + 2:]
    spaces = _top_level(t, " ")
    if spaces and not t.startswith("operator"):
        t = t[spaces[-1] + 1:]
    if t.startswith("operator()"):
        return "operator()"
    if t.endswith(">") and not t.startswith("operator"):
        depth = 0
        for i in range(len(t) - 1, -1, -1):
            depth += t[i] == ">"
            depth -= t[i] == "<"
            if depth == 0:
                t = t[:i]
                break
    return t


class Site:
    """A hook call instruction: its address, length, hook and kind."""

    __slots__ = ("addr", "ret", "kind", "op")

    def __init__(self, addr, ret, kind, op):
        self.addr, self.ret, self.kind, self.op = addr, ret, kind, op

    def __repr__(self):
        return "<%s %s %#x>" % (self.op, self.kind, self.addr)


_INSN = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*\t(?:(?:bnd|notrack|rex\.W)\s+)*(call|jmp)q?\s+(.*)$")
_TARGET = re.compile(r"<(__cyg_profile_func_(?:enter|exit))(?:@[\w.@]*)?>\s*$")
_FUNC_HEAD = re.compile(r"^([0-9a-f]+) <(.*)>:$")
_SECTION = re.compile(r"^Disassembly of section (\S+):$")


class ObjectCode:
    """One ELF object: its hook sites, its function symbols, its debug
    information (asked of addr2line)."""

    def __init__(self, path):
        self.path = path
        self._sites = self._jumps = self._calls = None
        self._symbols()

    @property
    def sites(self):
        """return address -> Site, of the calls of the hooks"""
        if self._sites is None:
            self._disassemble()
        return self._sites

    @property
    def jumps(self):
        """address -> Site, of the tail jumps to the exit hook"""
        if self._jumps is None:
            self._disassemble()
        return self._jumps

    @property
    def calls(self):
        """return address -> the function symbol a direct call there calls"""
        if self._calls is None:
            self._disassemble()
        return self._calls

    def _symbols(self):
        funcs = []
        for line in _run(["readelf", "-sW", "--syms", self.path]).splitlines():
            t = line.split()
            # Num: Value Size Type Bind Vis Ndx Name
            if len(t) < 8 or t[3] != "FUNC" or t[6] == "UND":
                continue
            value, size = int(t[1], 16), int(t[2], 0)
            if size == 0:
                continue
            funcs.append((value, size, t[7]))
        if not funcs:
            raise TruthError("%s: no function symbols (stripped?)" % self.path)
        funcs = sorted(set(funcs))
        self.funcs = funcs
        self.starts = [f[0] for f in funcs]
        self.names_at = defaultdict(set)   # value -> {names}
        for v, _, n in funcs:
            self.names_at[v].add(n)
        self.max_size = max(f[1] for f in funcs)

    def _disassemble(self):
        sites, jumps, calls = {}, {}, {}
        got = self._hook_got_slots()
        section = func = None
        for line in _run(["objdump", "-d", "-w", self.path]).splitlines():
            m = _SECTION.match(line)
            if m:
                section = m.group(1)
                continue
            m = _FUNC_HEAD.match(line)
            if m:
                func = m.group(2)
                continue
            m = _INSN.match(line)
            if not m or (section or "").startswith(".plt") or (func or "").endswith("@plt"):
                continue
            addr = int(m.group(1), 16)
            length = len(m.group(2).split())
            op, operand = m.group(3), m.group(4)
            kind = None
            t = _TARGET.search(operand)
            if t:
                kind = HOOK[t.group(1)]
            else:
                # call *disp(%rip) # slot <...>: a GOT slot of a hook (-fno-plt)
                g = re.search(r"\*(?:0x)?[0-9a-f-]*\(%rip\)\s+#\s+([0-9a-f]+)", operand)
                if g and int(g.group(1), 16) in got:
                    kind = got[int(g.group(1), 16)]
            if kind is None:
                c = re.match(r"[0-9a-f]+ <([^+>]+)>\s*$", operand)
                if op == "call" and c:
                    calls[addr + length] = c.group(1)
                continue
            site = Site(addr, addr + length, kind, op)
            if op == "call":
                sites[site.ret] = site
            elif kind == EXIT:
                jumps[addr] = site
            else:
                raise TruthError("%s: a jump to the enter hook at %#x" % (self.path, addr))
        self._sites, self._jumps, self._calls = sites, jumps, calls

    def _hook_got_slots(self):
        """GOT slot address -> kind, of the hooks' GLOB_DAT/JUMP_SLOT
        relocations (calls through the GOT, -fno-plt)."""
        slots = {}
        for line in _run(["readelf", "-rW", self.path]).splitlines():
            t = line.split()
            if len(t) >= 5 and ("GLOB_DAT" in t[2] or "JUMP_SLO" in t[2]):
                name = t[4].split("@")[0]
                if name in HOOK:
                    slots[int(t[0], 16)] = HOOK[name]
        return slots

    def containing(self, addr):
        """The function symbols whose [value, value + size) holds addr."""
        out = []
        i = bisect.bisect_right(self.starts, addr)
        while i > 0:
            i -= 1
            v, size, name = self.funcs[i]
            if v + self.max_size <= addr:
                break
            if v <= addr < v + size:
                out.append((v, name))
        return out

    def inline_chains(self, addrs):
        """{addr: [function names, innermost first]} from addr2line -i."""
        addrs = sorted(set(addrs))
        if not addrs:
            return {}
        out = _run(["addr2line", "-i", "-f", "-a", "-e", self.path], "".join("%#x\n" % a for a in addrs))
        chains, cur, lines = {}, None, out.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if re.match(r"^0x[0-9a-f]+$", line):
                cur = int(line, 16)
                chains[cur] = []
                i += 1
                continue
            if cur is None or i + 1 >= len(lines):
                raise TruthError("addr2line: cannot read %r" % line)
            chains[cur].append(line)  # the function; the next line is file:line
            i += 2
        if set(chains) != set(addrs):
            raise TruthError("addr2line answered for %d addresses of %d" % (len(chains), len(addrs)))
        return chains


_cache = {}
_cache_lock = threading.Lock()


def object_code(path):
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    with _cache_lock:
        oc = _cache.get(key)
    if oc is None:
        oc = ObjectCode(path)
        with _cache_lock:
            _cache[key] = oc
    return oc


class Verdict:
    """One site the oracle saw: whether it is an inlined call's, and why."""

    __slots__ = ("kind", "obj", "ret", "fn", "fn_name", "inlined", "why", "count")

    def __init__(self, kind, obj, ret, fn, fn_name, inlined, why, count):
        self.kind, self.obj, self.ret, self.fn, self.fn_name = kind, obj, ret, fn, fn_name
        self.inlined, self.why, self.count = inlined, why, count

    def __repr__(self):
        return "%s %s+%#x of %s: %s (%s)" % (self.kind, os.path.basename(self.obj), self.ret, self.fn_name,
                                             "inlined" if self.inlined else "own", self.why)


def judge(sites):
    """sites: {(kind, (object, ret), (object, fn)): count}, as the oracle's
    CGNEST_SITES lines give them (nesting.Oracle.sites). Returns the
    verdicts, one per site. Raises TruthError when a site is not what the
    rules expect."""
    by_obj = defaultdict(list)
    verdicts = []
    # the objects whose code calls hooks (an exit's return address may be
    # in uninstrumented code, the C library's, that called a function
    # ending with a tail jump to the exit hook)
    instrumented = {obj for (kind, (obj, _), _) in sites if kind == ENTER}
    for (kind, (obj, ret), (fobj, fn)), n in sites.items():
        if kind == EXIT and (obj not in instrumented or ret not in object_code(obj).sites):
            # an exit hook reached by a tail jump: the return address is
            # that of fn's caller; fn's own code (or a part's) must hold one
            foc = object_code(fobj)
            names = foc.names_at.get(fn, set())
            bases = {base(x) for x in names}
            if not names or not any(any(v == fn or base(name) in bases for v, name in foc.containing(j.addr))
                                    for j in foc.jumps.values()):
                raise TruthError("%s+%#x: an exit hook for %s+%#x returned there, after no hook call, and no "
                                 "code of that function jumps to it" % (obj, ret, fobj, fn))
            # the return address after a call of a part of fn (fn.part.0)
            # made from code that is not fn's: fn's head inlined there. Not
            # a call of fn through the PLT (fn@plt, in a shared library):
            # that is fn's own real call, and a part is local, never
            # called through the PLT
            part = object_code(obj).calls.get(ret) if obj == fobj else None
            holders = object_code(obj).containing(ret - 1)
            if part and "@plt" not in part and part not in names and base(part) in bases and \
                    holders and not any(v == fn or base(h) in bases for v, h in holders):
                verdicts.append(Verdict(kind, obj, ret, fn, min(names, key=len), True, "tail jump of %s, called "
                                        "in the code of %s" % (part, min((h for _, h in holders), key=len)), n))
                continue
            verdicts.append(Verdict(kind, obj, ret, fn, min(names, key=len), False, "tail jump", n))
            continue
        if obj == fobj:
            by_obj[obj].append((kind, ret, fn, n))
            continue
        # fn's code is in another object: this is a copy of it, inlined
        # (clang instruments glibc's extern inline functions, atoi, whose
        # address is the C library's)
        oc = object_code(obj)
        s = oc.sites.get(ret)
        if s is None or s.kind != kind:
            raise TruthError("%s+%#x: a %s hook for %s+%#x returned there, after no such hook call"
                             % (obj, ret, kind, fobj, fn))
        names = object_code(fobj).names_at.get(fn) or {"%s+%#x" % (os.path.basename(fobj), fn)}
        shown = min(names, key=len)
        if {base(h) for _, h in oc.containing(s.addr)} & {base(x) for x in names}:
            # the code of a function of the same name: obj's own copy of a
            # function whose address is taken in another object that
            # interposes it (a library's function the program defines too)
            verdicts.append(Verdict(kind, obj, ret, fn, shown, False, "own code, interposed", n))
            continue
        verdicts.append(Verdict(kind, obj, ret, fn, shown, True, "a function of %s, inlined"
                                % os.path.basename(fobj), n))
    for obj, items in sorted(by_obj.items()):
        oc = object_code(obj)
        calls = {}   # ret -> Site: the sites that are call instructions
        for kind, ret, fn, n in items:
            s = oc.sites.get(ret)
            if s is not None:
                if s.kind != kind:
                    raise TruthError("%s+%#x: the oracle saw the %s hook return there, the code calls the %s hook"
                                     % (obj, ret, kind, s.kind))
                calls[ret] = s
            else:
                raise TruthError("%s+%#x: an enter hook returned there, after no hook call" % (obj, ret))
        chains = oc.inline_chains(s.addr for s in calls.values())
        fn_names = {fn: oc.names_at.get(fn, set()) for _, _, fn, _ in items}
        demangled = demangle_all([base(n) for c in chains.values() for n in c] +
                                 [base(n) for ns in fn_names.values() for n in ns])
        for kind, ret, fn, n in items:
            names = fn_names[fn]
            if not names:
                raise TruthError("%s+%#x: a hook called for %#x, where no function symbol starts" % (obj, ret, fn))
            bases = {base(x) for x in names}
            shown = min(names, key=len)
            s = calls[ret]
            holders = oc.containing(s.addr)
            if not holders:
                raise TruthError("%s+%#x: a hook call in no function symbol" % (obj, s.addr))
            if not any(v == fn or base(name) in bases for v, name in holders):
                verdicts.append(Verdict(kind, obj, ret, fn, shown, True,
                                        "in the code of %s" % min((nm for _, nm in holders), key=len), n))
                continue
            chain = chains[s.addr]
            fn_demangled = {demangled[b] for b in bases}
            inner = demangled.get(base(chain[0]), chain[0])
            if len(chain) > 1 and (inner in fn_demangled or
                                   short_name(inner) in {short_name(x) for x in fn_demangled}):
                verdicts.append(Verdict(kind, obj, ret, fn, shown, True,
                                        "inlined copy: " + " < ".join(chain), n))
                continue
            verdicts.append(Verdict(kind, obj, ret, fn, shown, False, "own code", n))
    _check_own_enters(verdicts)
    return verdicts


def _check_own_enters(verdicts):
    """A function's own enter is called from one place of each machine
    function (its own code, a clone's): two own enters of one function in
    one machine function mean an inlined copy the rules did not see."""
    seen = defaultdict(list)
    for v in verdicts:
        if v.kind == ENTER and not v.inlined:
            holders = object_code(v.obj).containing(v.ret - 1)
            seen[(v.obj, v.fn, min(h[0] for h in holders))].append(v)
    for (obj, fn, at), vs in seen.items():
        if len(vs) > 1:
            raise TruthError("%s: %d own enter sites of %s in the machine function at %#x: %s"
                             % (obj, len(vs), vs[0].fn_name, at, vs))


def fold_lines(verdicts):
    """The lines of the oracle's CGNEST_FOLD file: the inlined calls' sites."""
    return sorted({"%s %#x" % (v.obj, v.ret) for v in verdicts if v.inlined})


def write_fold_file(verdicts, path):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in fold_lines(verdicts)))
    return path


def describe(verdicts):
    """One line per site, for a failure message or the command line."""
    return ["%-5s %s %s+%#x x%d: %s (%s)" % (v.kind, v.fn_name, os.path.basename(v.obj), v.ret, v.count,
                                             "INLINED" if v.inlined else "own", v.why)
            for v in sorted(verdicts, key=lambda v: (v.obj, v.fn_name, v.kind, v.ret))]


def main(argv):
    """inlined_truth.py ORACLE_DIR [FOLD_FILE]: the verdicts of the sites an
    oracle's CGNEST_SITES=1 run saw (and the fold file written)."""
    import nesting
    oracle = nesting.Oracle.load(argv[1])
    verdicts = judge(oracle.sites)
    for line in describe(verdicts):
        print(line)
    if len(argv) > 2:
        write_fold_file(verdicts, argv[2])
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv))
