"""cgprof's files against the nesting oracle (tests/nesting/nest.c).

The oracle records, per thread, which function's enter hook was the
innermost one open when each enter hook ran: for a program whose hooks nest,
the exact call counts per function and per arc (caller -> callee), whatever
the compiler inlined. This module reads its files and cgprof's, puts both in
the same terms and lists every difference.

The oracle names a function by (object path, object-relative entry
address); cgprof's files give that address as the target of each calls=
line, which maps the oracle's functions to cgprof's (object, file, name).
Functions that no reader can tell apart (the static copies of a header's
inline function in several files) are one function for the comparison. cgprof shows two kinds of arcs the hooks never see, both on
purpose, and they are folded back before the comparison:
  - a thread's first function, called from the uninstrumented code that
    started it (__libc_start_call_main, start_thread): the oracle's root;
  - a callback called from uninstrumented code (qsort calling a comparator):
    cgprof shows frame -> qsort (synthetic) and qsort -> comparator; the
    oracle frame -> comparator.
A function is instrumented when the oracle saw its enter hook; an arc of
cgprof whose caller is not instrumented is folded onto the instrumented
functions that call that caller (there must be one), or onto the root.

Command line: nesting.py ORACLE_DIR CGPROF_DIR [PID] prints the comparison
(with the built package on PYTHONPATH: meson devenv -C build python3
../tests/integration/nesting.py ...).
"""

import glob
import os
import sys
from collections import defaultdict

from cgproflib import reader

ROOT = None


def _real(path):
    try:
        return os.path.realpath(path)
    except OSError:
        return path


class Oracle:
    """The oracle's files of one process, summed over its threads."""

    def __init__(self):
        self.fns = defaultdict(int)      # (object, addr) -> enters
        self.arcs = defaultdict(int)     # (caller or None, callee) -> count
        self.mismatched = self.unmatched = self.dropped = 0
        self.threads = 0
        # CGNEST_SITES=1: (kind, (object, return address), (object, fn)) -> count
        self.sites = defaultdict(int)
        # CGNEST_FOLD: listed, resolved (per process), enters, exits (summed)
        self.fold = None

    @classmethod
    def load(cls, directory, pid=None):
        o = cls()
        pattern = "nest.%s.*" % (pid if pid is not None else "*")
        files = sorted(glob.glob(os.path.join(directory, pattern)))
        if not files:
            raise FileNotFoundError("no oracle files %s in %s" % (pattern, directory))
        for path in files:
            o.threads += 1
            with open(path) as f:
                lines = f.read().splitlines()
            for line in lines:
                t = line.split()
                if not t:
                    continue
                if t[0] == "mismatched":
                    o.mismatched += int(t[1])
                    o.unmatched += int(t[3])
                    o.dropped += int(t[5])
                elif t[0] == "fn":
                    o.fns[(_real(t[1]), int(t[2], 16))] += int(t[3])
                elif t[0] == "arc":
                    caller = ROOT if t[1] == "-" else (_real(t[1]), int(t[2], 16))
                    o.arcs[(caller, (_real(t[3]), int(t[4], 16)))] += int(t[5])
                elif t[0] == "site":
                    o.sites[(t[1], (_real(t[2]), int(t[3], 16)), (_real(t[4]), int(t[5], 16)))] += int(t[6])
                elif t[0] == "fold":
                    f = dict(zip(t[1::2], map(int, t[2::2])))
                    if o.fold is None:
                        o.fold = dict(f, enters=0, exits=0)
                    o.fold["enters"] += f["enters"]
                    o.fold["exits"] += f["exits"]
        return o

    @property
    def nests(self):
        """Every exit matched the innermost open enter: arcs are the truth."""
        return self.mismatched == 0 and self.unmatched == 0 and self.dropped == 0


class Cgprof:
    """cgprof's files (one per thread and part) in the oracle's terms."""

    def __init__(self, files, oracle):
        self.files = files
        self.raw = defaultdict(int)       # (caller FnKey, callee FnKey) -> count
        self.key_of = {}                  # (object, addr) -> FnKey
        self.warnings = []                # the parts' repair counts (desc: lines)
        self.repairs = {}                 # what -> count, summed over the files
        for f in files:
            prof = reader.load(f, strict=True)  # cgprof's own promises too
            if prof.violations:
                raise ValueError("%s: %s" % (f, prof.violations[0]))
            for what in ("Unmatched exits", "Frames left without exit", "Lost"):
                if prof.desc_value(what) is not None:
                    self.warnings.append("%s: %s: %s" % (os.path.basename(f), what, prof.desc_value(what)))
                    n = int(prof.desc_value(what).split()[0])
                    self.repairs[what] = self.repairs.get(what, 0) + n
            for c in prof.calls:
                self.raw[(c.caller, c.callee)] += c.count
                if c.target_instr is not None:
                    self.key_of[(_real(c.callee.object), c.target_instr)] = c.callee
        # A function as a reader sees it: (object, file, name). Two functions
        # the readers cannot tell apart (static copies of a header's inline
        # function) are one for them, and for this comparison.
        self.instrumented = {self.key_of.get(a) for a in oracle.fns} - {None}
        self.fns = defaultdict(int)
        self.arcs = defaultdict(int)
        self.unfoldable = []
        self._fold()

    def part_of_instrumented(self, fk):
        """A compiler-made part of an instrumented function (gcc's fn.cold,
        fn.part.0, fn.constprop.0; "f(int) [clone .cold]"): its code is that
        function's, not uninstrumented code calling back. cgprof must not
        show it as a function of its own."""
        for f in self.instrumented:
            n = f.name
            if fk.object == f.object and fk.name.startswith(n) and fk.name[len(n):len(n) + 1] in (".", " ") \
                    and (fk.name[len(n)] == "." or fk.name[len(n):].startswith(" [clone .")):
                return True
        return False

    def _fold(self):
        inst = self.instrumented.__contains__
        callers_of = defaultdict(set)  # uninstrumented FnKey -> {instrumented callers}
        for (a, b), n in self.raw.items():
            if not inst(b) and inst(a):
                callers_of[b].add(a)
        self.parts = sorted({k.name for pair in self.raw for k in pair
                             if not inst(k) and self.part_of_instrumented(k)})
        for (a, b), n in self.raw.items():
            if not inst(b):
                continue  # a call into uninstrumented code: shown, not hooked
            self.fns[b] += n
            if inst(a):
                self.arcs[(a, b)] += n
                continue
            via = callers_of.get(a, set())
            if not via:
                self.arcs[(ROOT, b)] += n
            elif len(via) == 1:
                self.arcs[(next(iter(via)), b)] += n
            else:
                self.unfoldable.append((a, b, n, sorted(v.name for v in via)))

    def oracle_view(self, oracle):
        """The oracle's counts keyed like this profile's: (fns, arcs)."""
        def k(addr):
            if addr is ROOT:
                return ROOT
            return self.key_of.get(addr) or reader.FnKey(addr[0], "", "%s:%#x" % (
                os.path.basename(addr[0]), addr[1]))
        fns, arcs = defaultdict(int), defaultdict(int)
        for a, n in oracle.fns.items():
            fns[k(a)] += n
        for (a, b), n in oracle.arcs.items():
            arcs[(k(a), k(b))] += n
        return fns, arcs


def _name(key):
    return "<root>" if key is ROOT else key.name


def compare(oracle, cg, arcs=True):
    """The differences, as text lines (empty when cgprof matches): per
    function, and per arc when arcs is true."""
    ofns, oarcs = cg.oracle_view(oracle)
    diffs = []
    for k in sorted(set(ofns) | set(cg.fns)):
        if ofns.get(k, 0) != cg.fns.get(k, 0):
            diffs.append("calls of %s: cgprof %d, hooks %d" % (_name(k), cg.fns.get(k, 0), ofns.get(k, 0)))
    if arcs:
        order = lambda k: tuple(("",) if x is ROOT else x for x in k)  # noqa: E731
        for k in sorted(set(oarcs) | set(cg.arcs), key=order):
            if oarcs.get(k, 0) != cg.arcs.get(k, 0):
                diffs.append("arc %s -> %s: cgprof %d, hooks %d" % (_name(k[0]), _name(k[1]),
                                                                     cg.arcs.get(k, 0), oarcs.get(k, 0)))
    for p in cg.parts:
        diffs.append("function %s shown: a part of an instrumented function, made by the compiler" % p)
    for a, b, n, via in cg.unfoldable:
        diffs.append("cannot fold %s -> %s (%d): %s calls it from %s" % (a.name, b.name, n, a.name, ", ".join(via)))
    return diffs


def summary(oracle, cg):
    """Counts for a closing note: functions, arcs, calls, and how many differ."""
    ofns, oarcs = cg.oracle_view(oracle)
    fn_wrong = sum(1 for k in set(ofns) | set(cg.fns) if ofns.get(k, 0) != cg.fns.get(k, 0))
    arc_wrong = sum(1 for k in set(oarcs) | set(cg.arcs) if oarcs.get(k, 0) != cg.arcs.get(k, 0))
    return {
        "functions": len(ofns), "functions_wrong": fn_wrong,
        "arcs": len(oarcs), "arcs_wrong": arc_wrong,
        "calls_hooks": sum(ofns.values()), "calls_cgprof": sum(cg.fns.values()),
    }


def load_pair(oracle_dir, cgprof_dir, pid=None):
    oracle = Oracle.load(oracle_dir, pid)
    pat = "callgrind.out.%s*" % (pid if pid is not None else "*")
    files = sorted(glob.glob(os.path.join(cgprof_dir, pat)))
    if not files:
        raise FileNotFoundError("no cgprof files %s in %s" % (pat, cgprof_dir))
    return oracle, Cgprof(files, oracle)


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    oracle, cg = load_pair(argv[1], argv[2], argv[3] if len(argv) > 3 else None)
    diffs = compare(oracle, cg, arcs=oracle.nests)
    s = summary(oracle, cg)
    print("oracle: %d threads, mismatched exits %d, unmatched %d, dropped %d" %
          (oracle.threads, oracle.mismatched, oracle.unmatched, oracle.dropped))
    print("functions %(functions)d (%(functions_wrong)d wrong), arcs %(arcs)d (%(arcs_wrong)d wrong), "
          "calls: hooks %(calls_hooks)d, cgprof %(calls_cgprof)d" % s)
    for w in cg.warnings:
        print("cgprof says: " + w)
    for d in diffs[:200]:
        print(d)
    if len(diffs) > 200:
        print("... %d more" % (len(diffs) - 200))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
