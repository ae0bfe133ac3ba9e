"""The numbers of saved Callgrind files, summed: what `cgprof report`
prints and the launcher's exit summary is made of (one implementation of
the numbers), and what cgprof flame and cgprof pprof read runs with.

Group is the sum of some files (a thread, a process, a run): self cost,
arcs or calls per function, lines, latency, and the flat profile made of
them; flat_lines() is the flat profile as text (the launcher's summary,
`cgprof report`'s default view); report_repairs() and report_notes() the
warnings of the files' desc: lines; collect() which files a WHAT (a run's
prefix, a file, a directory) stands for.

Inclusive time is counted once under recursion: a function's inclusive
time is its self time plus the arcs from it to OTHER functions. In cgprof's
files an arc's cost holds the nested calls, recursive ones included, so the
arcs fib -> fib would count the inner levels again (callgrind_annotate
--inclusive=yes adds them: fib at 427%). Valgrind's own files split the
levels (fib'2); folded back into fib, the same rule gives what Valgrind
shows for fib. Mutual recursion (f -> g -> f) is counted more than once
by arcs: a Callgrind file holds arcs, not paths. When every file read has
its path file (CGPROF_PATHS=1), inclusive times come from the paths
instead (Group.add_paths): once under any recursion.

The files are read with cgproflib.reader.digest(), the reader's fast path
(one pass, only the chosen event), not its strict model.
"""

import heapq
import os
from itertools import compress, count, filterfalse, repeat
from operator import add, ge, itemgetter

from . import latency, naming, paths, reader
from .paths import throttled_names
from ._shared import (DESC_CALLS_IN_PROGRESS, DESC_COLLECTION, DESC_FRAMES_LEFT, DESC_LOST, DESC_PAUSED,
                      DESC_THREAD_NAME, DESC_THROTTLED, DESC_TOTAL_OF, DESC_TRIGGER, DESC_UNMATCHED_EXITS,
                      TRIGGER_EXEC, TRIGGER_EXIT, TRIGGER_THREAD_EXIT)

# ---- the numbers -----------------------------------------------------------

def ms(ns):
    return "%.3f" % (ns / 1e6)


class Group:
    """The sum of some files (a thread, a process, a run): self cost per
    function, arcs (or, read for the flat profile only, calls and outgoing
    cost per function: reader.Digest.flat), lines, and the flat profile
    made of them."""

    def __init__(self, label=""):
        self.label = label
        self.files = 0
        self.self_cost = {}
        self.arcs = {}
        self.calls_out = {}
        self.lines = {}
        self.where = {}
        self.total = 0
        self.event = None
        # inclusive ns per function name from the files' path files
        # (CGPROF_PATHS), used when every file has one
        self.paths_incl = {}
        self.paths_all = True
        # the functions a file says were throttled (desc: Throttled): their
        # calls counted until then, a lower bound of the calls made
        self.lower_bounds = set()
        # the functions without hooks whose counts are visits seen (libc's,
        # known from sampling, or as code that ran callbacks): a lower bound
        self.visits = set()
        # the functions --hide left out: no row of their own, their time
        # out of the total and of their callers' inclusive time
        self.hidden = set()
        # the functions whose inclusive time --hide made an estimate
        self.estimated = set()
        # function name -> its calls' latency histogram (CGPROF_LATENCY)
        self.latency = {}

    def add_paths(self, path):
        """The inclusive time of each function from the call paths of the
        Callgrind file `path` (its path file, docs/internals/paths-format.md), when it
        has one. A function is on a path at most once (recursion folded)
        and a node's time is its outermost calls', so the sum over its
        nodes counts each of its calls' time once, mutual recursion
        included, where arcs count f -> g -> f's inner time again."""
        pf = None
        for name in naming.paths_names_of(path)[1:]:
            if os.path.isfile(name) and paths.is_path_file(name):
                try:
                    pf = paths.read(name)
                except (OSError, paths.PathsFormatError):
                    pf = None
                break
        if pf is None or (pf.event or "ns") != (self.event or "ns"):
            self.paths_all = False
            return
        incl = self.paths_incl
        for names, _calls, inclusive, _self in pf.paths:
            incl[names[-1]] = incl.get(names[-1], 0) + inclusive

    def add(self, d):
        self.files += 1
        self.event = self.event or d.event
        self.lower_bounds |= throttled_names(d.desc_value(DESC_THROTTLED))
        self.visits |= {k[0] for k in d.visits}
        for k, h in d.latency.items():
            latency.add_to(self.latency, k[0], h)
        if self.files == 1:
            # the first file's tables are taken as they are: no copy
            self.self_cost, self.arcs, self.lines, self.where = d.self_cost, d.arcs, d.lines, d.files
            self.calls_out = d.flat
            self.total = d.total
            return
        for k, v in d.self_cost.items():
            self.self_cost[k] = self.self_cost.get(k, 0) + v
        for k, (n, c) in d.arcs.items():
            a = self.arcs.get(k)
            if a is None:
                self.arcs[k] = [n, c]
            else:
                a[0] += n
                a[1] += c
        for k, (n, c) in d.flat.items():
            a = self.calls_out.get(k)
            if a is None:
                self.calls_out[k] = [n, c]
            else:
                a[0] += n
                a[1] += c
        for k, v in d.lines.items():
            self.lines[k] = self.lines.get(k, 0) + v
        for k, fl in d.files.items():
            if fl and not self.where.get(k):
                self.where[k] = fl
        self.total += d.total

    def hide(self, patterns):
        """Leaves out the functions the patterns name (pattern_names()), which must
        call no other function (a wait, a lock, a spin: what a reader wants
        out of a profile after the run): their time, out of the total and
        out of the inclusive time of every function above them. Upwards
        from a hidden function, a function's hidden time goes to its
        callers in the shares of their calls' time: exact where each
        function on the way has one caller (a worker's loop waiting), an
        estimate elsewhere (those rows are marked "~"). Needs the arcs
        (loaded with arcs=True). Returns ({name: time left out}, {name:
        the functions it calls}: those refused)."""
        keys = set(self.self_cost) | {a[0] for a in self.arcs} | {a[1] for a in self.arcs}
        found = {k for k in keys if any(pattern_names(p, k[0]) for p in patterns)}
        calls = {}
        for (caller, callee, _fl, _line) in self.arcs:
            if caller in found and callee != caller:
                calls.setdefault(caller[0], set()).add(callee[0])
        found = {k for k in found if k[0] not in calls}
        incoming, out_arcs = {}, {}
        for a, (n, c) in self.arcs.items():
            if a[0] != a[1]:
                incoming[a[1]] = incoming.get(a[1], 0) + c
                out_arcs.setdefault(a[0], []).append(a)
        memo, visiting = {}, set()
        own = {k: self.self_cost.get(k, 0) for k in found}

        def hidden_in(f):
            # the hidden time in all of f's calls together
            if f in found:
                return own[f]
            if f in memo:
                return memo[f]
            if f in visiting:   # recursion: the time is counted at the outer call
                return 0
            visiting.add(f)
            t = 0
            for a in out_arcs.get(f, ()):
                h = hidden_in(a[1])
                if h:
                    c, into = self.arcs[a][1], incoming[a[1]]
                    t += h * c / into if into else 0
            visiting.discard(f)
            memo[f] = t
            return t
        left = {}
        for k in found:
            c = self.self_cost.pop(k, 0)
            self.total -= c
            left[k[0]] = left.get(k[0], 0) + c
        adjusted = {}
        for a, (n, c) in self.arcs.items():
            if a[1] in found:
                continue
            h = hidden_in(a[1]) if a[0] != a[1] else 0
            if h:
                into = incoming[a[1]]
                if into and c != into:
                    self.estimated.add(a[0])
                    self.estimated |= {b[0] for b in self.arcs if b[1] == a[1] and b[0] != a[1]}
                c = max(0, round(c - h * c / into)) if into else c
            adjusted[a] = [n, c]
        # an estimate below makes one above
        changed = True
        while changed:
            changed = False
            for a in adjusted:
                if a[1] in self.estimated and a[0] not in self.estimated and a[0] != a[1] \
                        and hidden_in(a[1]):
                    self.estimated.add(a[0])
                    changed = True
        self.arcs = adjusted
        self.calls_out = {}
        self.lines = {k: v for k, v in self.lines.items() if k[0] not in found}
        self.hidden |= found
        # the path files' inclusive times still hold what was left out
        self.paths_all = False
        return left, calls

    def flat(self):
        """{(name, object): [inclusive, self, calls, file]}, in the order
        of the self costs, then of the arcs (the first to name each
        function; calls_out is made in that order)"""
        where = self.where
        funcs = {k: [s, s, 0, where.get(k, "")] for k, s in self.self_cost.items()}
        for (caller, callee, _fl, _line), (n, c) in self.arcs.items():
            e = funcs.get(callee)
            if e is None:
                e = funcs[callee] = [0, 0, 0, self.where.get(callee, "")]
            e[2] += n
            if caller != callee:
                e = funcs.get(caller)
                if e is None:
                    e = funcs[caller] = [0, 0, 0, self.where.get(caller, "")]
                e[0] += c
        for k, (n, c) in self.calls_out.items():
            e = funcs.get(k)
            if e is None:
                funcs[k] = [c, 0, n, where.get(k, "")]
            else:
                e[0] += c
                e[2] += n
        if self.paths_incl and self.paths_all:
            named = {}
            for k in funcs:
                named[k[0]] = named.get(k[0], 0) + 1
            for k, e in funcs.items():
                v = self.paths_incl.get(k[0])
                if v is not None and named[k[0]] == 1:  # a name in two objects: which is which?
                    e[0] = v
        for k in self.hidden:   # their calls out made them a row
            funcs.pop(k, None)
        return funcs


def summarize(paths, event=None):
    """{(name, object): [inclusive, self, calls, file]} summed over the
    files, the total, and the files that cannot be read (path, reason)."""
    g, bad = load_group(paths, event)
    return g.flat(), g.total, bad


def count_text(g, name, n):
    """A count as shown: ">=" before the count of a throttled function
    (docs/filters.md: its calls stopped being counted) and of a function
    without hooks (its visits seen, docs/costs.md)."""
    return (">=%d" % n) if n and is_lower_bound(g, name) else ("%d" % n if n else "-")


def is_lower_bound(g, name):
    return name in g.lower_bounds or name in g.visits


LOWER_BOUND_NOTE = ("  >=N: a lower bound: the calls of a throttled function counted until then, or the visits "
                    "seen of a function without hooks (libc's: by sampling, or running callbacks)")


def load_group(paths, event=None, lines=False, label="", sites=False, arcs=False):
    g, bad = Group(label), []
    for path in paths:
        try:
            g.add(reader.digest(path, event, lines, sites=sites, flat=not (lines or sites or arcs)))
            g.add_paths(path)
        except OSError as e:
            bad.append((path, e.strerror or str(e)))
        except reader.CallgrindFormatError as e:
            bad.append((path, str(e.violations[0])))
    return g, bad


def where_of(fl, obj):
    return os.path.basename(fl) if fl and fl != "???" else os.path.basename(obj or "")


class Units:
    """ns shown as ms (the launcher's convention); other events as counts."""

    def __init__(self, event):
        self.ns = event in (None, "ns")
        self.event = event or "ns"

    def fmt(self, v):
        return ms(v) if self.ns else "%d" % v

    def head(self, what):
        return "%s %s" % (what, "ms" if self.ns else self.event)

    def total(self, v):
        return "%s ms" % ms(v) if self.ns else "%d %s" % (v, self.event)


ORDERS = {"inclusive": lambda kv: (-kv[1][0], -kv[1][2], kv[0][0]),
          "self": lambda kv: (-kv[1][1], -kv[1][0], kv[0][0]),
          "calls": lambda kv: (-kv[1][2], -kv[1][0], kv[0][0])}


def top_functions(g, top, sort="inclusive"):
    """The first `top` of sorted(g.flat().items(), key=ORDERS[sort]): the
    same rows in the same order (the sort is stable: ties in the order of
    g.flat()), without making a row for each function of a big profile
    when the group was read for the flat profile only (Group.calls_out)."""
    order = ORDERS[sort]
    col = {"inclusive": 0, "self": 1, "calls": 2}[sort]
    sc, co = g.self_cost, g.calls_out
    if g.arcs or top >= len(sc) + len(co) or (g.paths_incl and g.paths_all):
        funcs = g.flat()
        items = funcs.items()
        if top < len(funcs):
            # Only the functions whose first key is at least the top N's
            # lowest can be in the top N: sorting them alone gives the
            # same rows.
            cut = heapq.nlargest(top, [v[col] for v in funcs.values()])[-1]
            items = [kv for kv in items if kv[1][col] >= cut]
        return sorted(items, key=order)[:top]
    # The column sorted on, for every function, by maps over the tables
    # (no loop in Python): the functions with calls, then those with
    # self cost only; then the rows of those that can be in the top N.
    co_keys = list(co)
    co_calls = list(map(itemgetter(0), co.values()))
    co_self = list(map(sc.get, co_keys, repeat(0)))
    only_self = list(filterfalse(co.__contains__, sc))
    if col == 0:
        vals = list(map(add, co_self, map(itemgetter(1), co.values())))
    else:
        vals = co_self if col == 1 else co_calls
    vals += map(sc.__getitem__, only_self) if col != 2 else repeat(0, len(only_self))
    cut = heapq.nlargest(top, vals)[-1]
    where = g.where
    rows = []
    for k in compress(co_keys + only_self, map(ge, vals, repeat(cut))):
        s = sc.get(k, 0)
        n, c = co.get(k, (0, 0))
        rows.append((k, [s + c, s, n, where.get(k, "")]))
    # the order of g.flat(): the self costs' keys, then the other ones of calls_out
    pos = dict(zip(sc, count()))
    later = dict(zip(co_keys, count(len(sc))))
    rows.sort(key=lambda kv: pos[kv[0]] if kv[0] in pos else later[kv[0]])
    return sorted(rows, key=order)[:top]


def flat_lines(g, top, sort="inclusive", prefix="", scope=""):
    """The flat profile as the launcher's summary prints it."""
    if top == 0:
        return []
    ranked = top_functions(g, top, sort)
    if not ranked:
        return []
    u = Units(g.event)
    out = ["%stop %d functions by %s%s (%d file%s; %s in all threads):" %
           (prefix, len(ranked), {"inclusive": "inclusive time", "self": "self time", "calls": "calls"}[sort]
            if u.ns else {"inclusive": "inclusive " + u.event, "self": "self " + u.event, "calls": "calls"}[sort],
            scope, g.files, "" if g.files == 1 else "s", u.total(g.total))]
    out.append("%12s %6s %12s %10s  %s" % (u.head("incl."), "%", u.head("self"), "calls", "function"))
    for (name, obj), (inc, self_, calls, fl) in ranked:
        where = where_of(fl, obj)
        pct = 100.0 * inc / g.total if g.total else 0.0
        # 0 calls: a thread's root in uninstrumented code (libc's
        # start_thread), seen only as a caller
        inc_text = ("~" if (name, obj) in g.estimated else "") + u.fmt(inc)
        out.append("%12s %6.1f %12s %10s  %s%s" % (inc_text, pct, u.fmt(self_), count_text(g, name, calls), name,
                                                    "  [%s]" % where if where else ""))
    if any(calls and is_lower_bound(g, name) for (name, _), (_, _, calls, _) in ranked):
        out.append(LOWER_BOUND_NOTE)
    if any(k in g.estimated for k, _ in ranked):
        out.append("  ~: inclusive time less an estimate of what --hide left out below it (a function on the "
                   "way has several callers: shared in the shares of their calls' time)")
    return out


def print_summary(say, paths, top, prefix="", scope="", quote=repr):
    """The launcher's summary: the functions with the most inclusive time
    summed over the files; prefix and scope say whose files they are."""
    g, bad = load_group(paths)
    for path, why in bad:
        say("cannot read %s: %s" % (quote(path), why))
    for line in flat_lines(g, top, "inclusive", prefix, scope):
        say(line)


# The desc: lines that say a part holds a repair, and what each means for
# the numbers shown (docs/internals/design.md, "Repairs").
REPAIRS = (
    (DESC_FRAMES_LEFT, "frame%s found left without exit (each counted as ending when found: calls "
                                 "made meanwhile may be shown under it)"),
    (DESC_UNMATCHED_EXITS, "exit%s that matched no frame (dropped)"),
    (DESC_LOST, "call%s not recorded (counts that much too low)"),
)
# What else the desc: lines say that a reader of the numbers should know
NOTES = (
    (DESC_CALLS_IN_PROGRESS, "call%s still running when its part was written (each counted once, with its time "
                          "up to the dump)"),
)


def _desc_sums(descs, table):
    sums = [0] * len(table)
    for desc in descs:
        for i, (key, _) in enumerate(table):
            for line in desc:
                t, _, v = line.partition(":")
                if t.strip() == key:
                    v = v.split()
                    if v and v[0].isdigit():
                        sums[i] += int(v[0])
    return ["%d %s" % (n, text % ("" if n == 1 else "s")) for n, (_, text) in zip(sums, table) if n]


def _descs(paths):
    out = []
    for path in paths:
        try:
            out.append(read_desc(path))
        except OSError:
            continue
    return out


def read_desc(path):
    """The desc: lines of a file's header (read up to its first body line)."""
    desc = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for raw in f:
            if raw.startswith("desc:"):
                desc.append(raw[5:].strip())
            elif raw[:3] in ("fn=", "ob=", "fl="):
                break
    return desc


def report_repairs(say, paths, descs=None):
    """One warning line when the files hold repairs; nothing otherwise."""
    what = _desc_sums(_descs(paths) if descs is None else descs, REPAIRS)
    if what:
        say("warning: the profile holds repairs: %s; see its desc: lines and docs/internals/design.md, \"Repairs\"" %
            ", ".join(what))


# Parts written as the program, or its thread, ends (exit() or quick_exit(),
# an exec, the thread's end): the calls on the stack then are the ones that
# ended it (main calling exit(), a worker's start routine calling
# pthread_exit()), not calls a dump cut through. Issue 27: every report of a
# program that called exit() noted them.
ENDINGS = tuple(DESC_TRIGGER + ": " + t for t in (TRIGGER_EXIT, TRIGGER_EXEC + " ", TRIGGER_THREAD_EXIT))


def written_at_end(desc):
    return any(line.startswith(ENDINGS) for line in desc)


def report_notes(say, descs):
    what = _desc_sums([d for d in descs if not written_at_end(d)], NOTES)
    threads_ended = sum(1 for desc in descs if DESC_TRIGGER + ": " + TRIGGER_THREAD_EXIT in desc)
    if threads_ended:
        what.append("%d part%s written when %s thread ended" % (threads_ended, "" if threads_ended == 1 else "s",
                                                                "its" if threads_ended == 1 else "their"))
    paused = sum(1 for desc in descs if any(l.startswith(DESC_COLLECTION + ": " + DESC_PAUSED) for l in desc))
    if paused:
        what.append("%d part%s written while collection was paused (cgprof_collect(false))" %
                    (paused, "" if paused == 1 else "s"))
    if what:
        say("note: %s; see the desc: lines and docs/internals/design.md, \"Repairs\"" % "; ".join(what))


# ---- which files --------------------------------------------------------------

def _is_callgrind(path):
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b"# callgrind format") or head.startswith(b"version: 1\n") or \
        (b"\nevents:" in head and (b"\nfn=" in head or b"\npositions:" in head))


def _is_total(path, desc=None):
    desc = read_desc(path) if desc is None else desc
    return any(l.startswith(DESC_THREAD_NAME + ": " + DESC_TOTAL_OF) for l in desc)


def collect(whats):
    """The files of each WHAT: a directory's Callgrind files (the totals
    cgprof writes left out when the threads' own files are there), a file,
    or a prefix (the files named prefix, prefix.* and prefix-*)."""
    files, missing = [], []
    for what in whats:
        if os.path.isdir(what):
            found = sorted(os.path.join(what, n) for n in os.listdir(what)
                           if os.path.isfile(os.path.join(what, n)) and _is_callgrind(os.path.join(what, n)))
            totals = [p for p in found if _is_total(p)]
            rest = [p for p in found if p not in totals]
            files += rest if rest else totals
            if not found:
                missing.append((what, "no Callgrind file in this directory"))
            continue
        d, base = os.path.split(what)
        d = d or "."
        found = [what] if os.path.isfile(what) else []
        try:
            names = os.listdir(d)
        except OSError:
            names = []
        found += sorted(os.path.join(d, n) if d != "." or os.path.dirname(what) else n
                        for n in names if n.startswith(base) and n[len(base):len(base) + 1] in (".", "-")
                        and os.path.isfile(os.path.join(d, n)) and _is_callgrind(os.path.join(d, n)))
        if not found:
            missing.append((what, "no such file, and no file starts with it (a prefix)"))
        files += [p for p in found if p not in files]
    return files, missing


# ---- names -------------------------------------------------------------------------

def pattern_names(pattern, name):
    """Whether a pattern (--hide's, or FUNC of --callers) names the
    function: its name as shown, a glob of it, or its name without the
    parameters or the scopes."""
    if pattern == name:
        return True
    if any(c in pattern for c in "*?["):
        import fnmatch
        return fnmatch.fnmatchcase(name, pattern)
    bare = name.split("(", 1)[0] if "(" in name else name
    return bare == pattern or bare.endswith("::" + pattern)


# The function the runtime charges a thread's time off the CPU to
# (CGPROF_OFF_CPU=1): what --hide-waits leaves out.
OFF_CPU = "cgprof_off_cpu"
