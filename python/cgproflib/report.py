"""cgprof report: read saved Callgrind files (cgprof's and Valgrind's) and
print where the time went.

    cgprof report [options] WHAT...

WHAT is a run's prefix (callgrind.out.1234: all its parts and threads, as
KCachegrind loads them), a file, or a directory (every Callgrind file in
it: all threads, parts and processes). The launcher's exit summary is
print_summary() of this module: one implementation of the numbers.

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

import gc
import heapq
import os
import sys
from itertools import compress, count, filterfalse, repeat
from operator import add, ge, itemgetter

from . import latency, messages, naming, paths, reader
from .paths import throttled_names  # noqa: F401 (report.throttled_names: the tests use it)
from ._shared import (DESC_CALLS_IN_PROGRESS, DESC_COLLECTION, DESC_FRAMES_LEFT, DESC_LOST, DESC_PAUSED,
                      DESC_THREAD_NAME, DESC_THROTTLED, DESC_TOTAL_OF, DESC_TRIGGER, DESC_UNMATCHED_EXITS,
                      TRIGGER_EXEC, TRIGGER_EXIT, TRIGGER_THREAD_EXIT)

PROG = "cgprof report"
DEFAULT_TOP = 20
SORTS = ("inclusive", "self", "calls")

USAGE = ("usage: cgprof report [--top=N] [--sort=inclusive|self|calls] [--threads=sum|each] [--event=NAME]\n"
         "                     [--hide=FUNC,... | --hide-waits]\n"
         "                     [--callers FUNC | --callees FUNC | --lines FUNC | --diff A B | --paths | --latency]\n"
         "                     WHAT...")


class UsageError(Exception):
    pass


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
        Callgrind file `path` (its path file, docs/paths-format.md), when it
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
# the numbers shown (docs/design.md, "Repairs").
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
        say("warning: the profile holds repairs: %s; see its desc: lines and docs/design.md, \"Repairs\"" %
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
        say("note: %s; see the desc: lines and docs/design.md, \"Repairs\"" % "; ".join(what))


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


# ---- the views -------------------------------------------------------------------

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


def choose_function(asked, names):
    """The one function FUNC of --callers, --callees or --lines stands for,
    and None with the reason when none or several: the name as written
    (the full signature of a C++ function), else a glob (*, ?, [...]), else
    the name before its parameter list or after its last '::'
    (Builder::Build, Build), else a part of it."""
    if asked in names:
        return asked, None
    found = sorted(n for n in names if pattern_names(asked, n))
    if any(c in asked for c in "*?["):
        how = "matches"
    else:
        how = "names"
        if not found:
            found = sorted(n for n in names if asked in n)
            how = "is part of"
    if len(found) == 1:
        return found[0], None
    if not found:
        import difflib
        close = difflib.get_close_matches(asked, sorted(names), n=5)
        return None, "no function named %r in the files read%s" % (
            asked, "; the nearest: " + ", ".join(close) if close else "")
    shown = found[:10]
    return None, "%r %s %d functions: %s%s; give one of them (quoted), or a narrower pattern" % (
        asked, how, len(found), "; ".join(shown), "; ..." if len(found) > 10 else "")


def arcs_view(g, name, direction, say):
    u = Units(g.event)
    keys = {k for k in set(g.self_cost) | {a[0] for a in g.arcs} | {a[1] for a in g.arcs} if k[0] == name}
    if not keys:
        return False
    funcs = g.flat()
    for key in sorted(keys):
        inc, self_, calls, fl = funcs.get(key, [0, 0, 0, ""])
        say("%s  [%s]: %s inclusive, %s self, %s call%s%s" % (
            name, where_of(fl, key[1]), u.total(inc), u.total(self_), count_text(g, name, calls),
            "" if calls == 1 else "s",
            " (throttled: the calls counted until then, a lower bound)" if name in g.lower_bounds else
            " (no hooks: the visits seen, a lower bound)" if name in g.visits else ""))
        rows = []
        for (caller, callee, fl_, line), (n, c) in g.arcs.items():
            if (callee if direction == "callers" else caller) != key:
                continue
            other = caller if direction == "callers" else callee
            site = "%s:%d" % (os.path.basename(fl_), line) if fl_ and fl_ != "???" and line else ""
            rows.append((c, n, other, site))
        rows.sort(key=lambda r: (-r[0], -r[1], r[2][0], r[3]))
        say("  %s (per call site):" % ("called by" if direction == "callers" else "calls"))
        say("%14s %6s %10s  %-30s %s" % (u.head("incl."), "%", "calls",
                                         "caller" if direction == "callers" else "callee", "call site"))
        for c, n, other, site in rows:
            pct = 100.0 * c / g.total if g.total else 0.0
            rec = "  (recursive: holds the levels under it)" if other == key else ""
            callee = key[0] if direction == "callers" else other[0]
            say("%14s %6.1f %10s  %-30s %s%s" % (u.fmt(c), pct, count_text(g, callee, n), other[0], site, rec))
        if not rows:
            say("  (none)")
    return True


def lines_view(g, name, say):
    u = Units(g.event)
    rows = {}
    for (key, fl, line), c in g.lines.items():
        if key[0] == name:
            rows[(fl, line)] = rows.get((fl, line), 0) + c
    if not rows and not any(k[0] == name for k in g.self_cost):
        return False
    fself = sum(c for k, c in g.self_cost.items() if k[0] == name)
    say("%s: self %s per source line (%s in all):" % (name, u.head("").strip(), u.total(fself)))
    say("%12s %6s  %s" % (u.head("self"), "%", "line"))
    sources = {}
    for (fl, line), c in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1] if kv[0][1] is not None else -1)):
        text = ""
        if fl and line and os.path.isfile(fl):
            if fl not in sources:
                try:
                    with open(fl, encoding="utf-8", errors="replace") as f:
                        sources[fl] = f.read().split("\n")
                except OSError:
                    sources[fl] = []
            src = sources[fl]
            text = "  " + src[line - 1].strip() if 0 < line <= len(src) else ""
        pct = 100.0 * c / fself if fself else 0.0
        where = "%s:%s" % (os.path.basename(fl) if fl else "???", line if line is not None else "?")
        say("%12s %6.1f  %s%s" % (u.fmt(c), pct, where, text))
    return True


def diff_view(a, b, top, say):
    u = Units(a.event)
    fa, fb = a.flat(), b.flat()
    rows = []
    for key in set(fa) | set(fb):
        x, y = fa.get(key), fb.get(key)
        xi, xs, xc = (x[0], x[1], x[2]) if x else (0, 0, 0)
        yi, ys, yc = (y[0], y[1], y[2]) if y else (0, 0, 0)
        fl = (y or x)[3]
        rows.append((key, x is not None, y is not None, xi, yi, xs, ys, xc, yc, fl))
    rows.sort(key=lambda r: (-abs(r[4] - r[3]), -abs(r[6] - r[5]), -abs(r[8] - r[7]), r[0][0]))
    if top:
        rows = rows[:top]
    say("before: %s in %d file%s; after: %s in %d file%s; change %s (%s)" %
        (u.total(a.total), a.files, "" if a.files == 1 else "s", u.total(b.total), b.files,
         "" if b.files == 1 else "s", signed(u, b.total - a.total), pct(a.total, b.total)))
    say("%12s %12s %12s %8s  %12s %12s %12s  %10s %10s %10s  %s" %
        (u.head("incl."), u.head("incl."), "change", "%", u.head("self"), u.head("self"), "change",
         "calls", "calls", "change", "function"))
    say("%12s %12s %12s %8s  %12s %12s %12s  %10s %10s %10s" %
        ("before", "after", "", "", "before", "after", "", "before", "after", ""))
    bounds = False
    for key, ina, inb, xi, yi, xs, ys, xc, yc, fl in rows:
        only = "" if ina and inb else "  (only before)" if ina else "  (only after)"
        where = where_of(fl, key[1])
        # a lower bound on either side (a throttled function's calls, a
        # function without hooks' visits): the count shown ">=N", and the
        # change not known ("?"): two equal caps are not two equal counts
        xb, yb = ina and is_lower_bound(a, key[0]), inb and is_lower_bound(b, key[0])
        bounds |= xb or yb
        say("%12s %12s %12s %8s  %12s %12s %12s  %10s %10s %10s  %s%s%s" %
            (u.fmt(xi) if ina else "-", u.fmt(yi) if inb else "-", signed(u, yi - xi), pct(xi, yi),
             u.fmt(xs) if ina else "-", u.fmt(ys) if inb else "-", signed(u, ys - xs),
             (">=%d" if xb else "%d") % xc if ina else "-", (">=%d" if yb else "%d") % yc if inb else "-",
             "?" if xb or yb else "%+d" % (yc - xc), key[0], "  [%s]" % where if where else "", only))
    if bounds:
        say(LOWER_BOUND_NOTE + "; the change of a count that is a lower bound on either side is not known (?)")


def latency_view(g, top, sort, say):
    """Per function, its calls' latency (CGPROF_LATENCY): calls, mean,
    p50, p90, p99 and max, the functions of most time first (or most
    calls: --sort=calls). False when the files hold no histogram."""
    if not g.latency:
        return False
    key = (lambda kv: (-kv[1].calls, kv[0])) if sort == "calls" else (lambda kv: (-kv[1].sum, kv[0]))
    rows = sorted(g.latency.items(), key=key)
    if top:
        rows = rows[:top]
    subs = {h.sub for _, h in rows}
    err = max(h.error for _, h in rows) if rows else 0.125
    say("%slatency of each function's calls (the inclusive times of the calls that ended, CGPROF_LATENCY):"
        % g.label)
    say("  p50, p90, p99 within %.1f%% (a bucket's midpoint, %s buckets a power of two), exact below %d ns; "
        "calls, mean and max exact" % (100 * err, "/".join(str(x) for x in sorted(subs)),
                                       2 * min(subs) if subs else 8))
    say("  %12s %9s %9s %9s %9s %9s  %s" % ("calls", "mean", "p50", "p90", "p99", "max", "function"))
    throttled = False
    for name, h in rows:
        # a throttled function's histogram holds the calls counted until
        # then: its calls a lower bound, its percentiles those calls'
        bound = name in g.lower_bounds
        throttled |= bound
        say("  %12s %9s %9s %9s %9s %9s  %s" % (
            (">=%d" if bound else "%d") % h.calls, latency.fmt_ns(h.mean), latency.fmt_ns(h.percentile(50)[0]),
            latency.fmt_ns(h.percentile(90)[0]), latency.fmt_ns(h.percentile(99)[0]), latency.fmt_ns(h.max), name))
    if top and len(g.latency) > top:
        say("  (%d more functions: --top=0 lists all)" % (len(g.latency) - top))
    if throttled:
        say("  >=N: a throttled function (CGPROF_THROTTLE): the calls counted until it was throttled, and "
            "their times only; --throttle off counts every call")
    return True


def signed(u, v):
    return ("+" if v >= 0 else "-") + u.fmt(abs(v))


def pct(x, y):
    if x == 0:
        return "new" if y else "0.0%"
    return "%+.1f%%" % (100.0 * (y - x) / x)


# ---- the command -------------------------------------------------------------------

def help_text():
    return "\n".join([
        USAGE, "",
        "Reads saved Callgrind files, cgprof's and Valgrind's (--tool=callgrind), and prints where the time",
        "went, on standard output. WHAT is a run's prefix (callgrind.out.1234: every part and thread of",
        "it, the files callgrind.out.1234, callgrind.out.1234.* and callgrind.out.1234-*), a file, or a",
        "directory (every Callgrind file in it: all threads, parts and processes; cgprof's totals,",
        "callgrind.total.<pid>, are read only when the directory holds nothing else). Several are summed.",
        "",
        "Inclusive time is counted once under recursion: a function's own time plus its calls to other",
        "functions (a recursive fib never shows more than 100%; Valgrind's fib'2 levels are folded into",
        "fib). Time (ns) is shown in ms; other events (Valgrind's Ir) as counts.",
        "",
        "Views (one at a time; the default is the flat profile):",
        "  (none)          the flat profile: inclusive and self time, calls, % of the total",
        "  --callers FUNC  the calls into FUNC, per caller and call site: calls and inclusive time",
        "  --callees FUNC  the calls FUNC makes, per callee and call site",
        "  --lines FUNC    FUNC's self time per source line (with the line's text when the source is there)",
        "                  FUNC: a function's name as shown, or a glob of it, or its name without the",
        "                  parameters or the scopes (Builder::Build, Build), or a part of it, that names",
        "                  one function (several: they are listed)",
        "  --diff A B      two runs (each a prefix, file or directory): per function, inclusive and self",
        "                  time and calls before, after and the change, the largest change first",
        "  --paths         the hottest call paths (main > parse > lex): calls, inclusive and self time per",
        "                  distinct path, from the path files a run with CGPROF_PATHS=1 writes next to",
        "                  its Callgrind files (docs/paths-format.md); --top, --sort, --threads apply",
        "  --latency       per function, its calls' latency: calls, mean, p50, p90, p99 and max of their",
        "                  inclusive times, from the histograms a run with CGPROF_LATENCY=1 (cgprof",
        "                  --latency) writes in its files; the functions of most time first (--sort=calls:",
        "                  most calls). Each percentile is the midpoint of the bucket that holds it: 4",
        "                  buckets of equal width a power of two, so within 12.5% of the true value, exact",
        "                  below 8 ns; calls, mean and max are exact (a max of a part written after a dump",
        "                  whose longest call came before is the top of its bucket)",
        "",
        "Options:",
        "  --top=N         how many functions the flat profile and --diff list (default %d; 0: all)" % DEFAULT_TOP,
        "  --sort=inclusive|self|calls",
        "                  the flat profile's order (default inclusive)",
        "  --threads=sum|each",
        "                  one profile summed over all threads and processes (sum, the default), or one",
        "                  per thread of each process (each)",
        "  --event=NAME    the event to read (default: ns in cgprof's files, else the first: Ir in",
        "                  Valgrind's)",
        "  --hide=FUNC[,FUNC...]",
        "                  leave these functions out (a name as shown, a glob, or the name without",
        "                  parameters or scopes; repeatable), if they call no other function (a wait, a",
        "                  lock, a spin): their time, out of the total and out of every function above",
        "                  them (exact where each function on the way has one caller; else shared in the",
        "                  shares of the callers' time, marked ~)",
        "  --hide-waits    leave out the time threads spent off the CPU (waiting, blocked in a system",
        "                  call), recorded apart by a run with CGPROF_OFF_CPU=1 (as calls of",
        "                  %s); sampled time (the default) counts CPU time only, no waits" % OFF_CPU,
        "  -h, --help      this text",
        "",
        "The warnings of the files' desc: lines (repairs, losses, calls in progress, parts written at a",
        "thread's exit) are printed once, summed, on standard error. Exit status: 0; 1 if a file cannot",
        "be read, FUNC is in no file, --paths finds no path files or --latency no histograms; 2 on a",
        "usage error.",
    ]) + "\n"


class Args:
    def __init__(self):
        self.top = DEFAULT_TOP
        self.sort = "inclusive"
        self.threads = "sum"
        self.event = None
        self.view = None
        self.func = None
        self.diff = None
        self.whats = []
        self.help = False
        self.hide = []
        self.hide_waits = False


def parse_args(argv):
    a = Args()
    i = 0
    positional = []
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            positional += argv[i + 1:]
            break
        if arg in ("-h", "--help"):
            a.help = True
            return a
        if not arg.startswith("--") or arg == "-":
            if arg.startswith("-") and arg != "-":
                raise UsageError("unknown option %r (cgprof report --help lists them)" % arg)
            positional.append(arg)
            i += 1
            continue
        name, eq, value = arg[2:].partition("=")
        if name == "hide-waits":
            if eq:
                raise UsageError("--hide-waits takes no value")
            a.hide_waits = True
            i += 1
            continue
        if name not in ("top", "sort", "threads", "event", "callers", "callees", "lines", "diff", "paths", "hide",
                        "latency"):
            raise UsageError("unknown option %r (cgprof report --help lists them)" % ("--" + name))
        if name == "diff":
            # its two runs are the command's two operands, wherever the
            # other options stand (--diff --top=12 A B, --diff A B --top=12)
            if eq:
                raise UsageError("--diff takes two runs: --diff A B")
            if a.view:
                raise UsageError("one view at a time: --%s and --diff" % a.view)
            a.view = "diff"
            i += 1
            continue
        if name == "latency":
            if eq:
                raise UsageError("--latency takes no value")
            if a.view:
                raise UsageError("one view at a time: --%s and --latency" % a.view)
            a.view = "latency"
            i += 1
            continue
        if name == "paths":
            if eq:
                raise UsageError("--paths takes no value")
            if a.view:
                raise UsageError("one view at a time: --%s and --paths" % a.view)
            a.view = "paths"
            i += 1
            continue
        if not eq:
            if i + 1 >= len(argv):
                raise UsageError("option --%s needs a value" % name)
            i += 1
            value = argv[i]
        i += 1
        if name == "top":
            if not value.isdigit():
                raise UsageError("--top=%r: accepted: a number of functions, 0 or more (0: all)" % value)
            a.top = int(value)
        elif name == "sort":
            if value not in SORTS:
                raise UsageError("--sort=%r: accepted: %s" % (value, "|".join(SORTS)))
            a.sort = value
        elif name == "threads":
            if value not in ("sum", "each"):
                raise UsageError("--threads=%r: accepted: sum|each" % value)
            a.threads = value
        elif name == "event":
            a.event = value
        elif name == "hide":
            pats = [p.strip() for p in value.split(",") if p.strip()]
            if not pats:
                raise UsageError("--hide=%r: accepted: function names or globs, separated by commas" % value)
            a.hide += pats
        else:
            if a.view:
                raise UsageError("one view at a time: --%s and --%s" % (a.view, name))
            a.view, a.func = name, value
    a.whats = positional
    if a.view == "paths" and (a.hide or a.hide_waits):
        raise UsageError("--paths shows every path: --hide and --hide-waits apply to the other views")
    if a.view == "latency" and (a.hide or a.hide_waits):
        raise UsageError("--latency shows each function's calls: --hide and --hide-waits apply to the other views")
    if a.view == "lines" and (a.hide or a.hide_waits):
        raise UsageError("--lines shows one function's lines: --hide and --hide-waits apply to the other views")
    if a.view == "diff":
        if len(positional) != 2:
            raise UsageError("--diff A B reads two runs, no more, no less: %s"
                             % (" ".join(repr(p) for p in positional) or "none given"))
        a.diff = tuple(positional)
        a.whats = []
    elif not positional:
        raise UsageError("nothing to read: give a prefix, files or a directory\n" + USAGE)
    return a


def groups_of(files, threads, event, lines, sites, arcs=False):
    """[(label, Group)], and the files that cannot be read."""
    if threads == "sum":
        g, bad = load_group(files, event, lines, sites=sites, arcs=arcs)
        return [("", g)], bad
    per, bad = {}, []
    for path in files:
        try:
            d = reader.digest(path, event, lines, sites=sites, flat=not (lines or sites or arcs))
        except OSError as e:
            bad.append((path, e.strerror or str(e)))
            continue
        except reader.CallgrindFormatError as e:
            bad.append((path, str(e.violations[0])))
            continue
        key = (d.pid if d.pid is not None else -1, d.thread if d.thread is not None else 0)
        name = d.desc_value(DESC_THREAD_NAME)
        if key not in per:
            per[key] = Group("pid %s thread %d%s: " % (d.pid if d.pid is not None else "?", key[1],
                                                        " (%s)" % name if name else ""))
        per[key].add(d)
    return [(g.label, g) for _, g in sorted(per.items())], bad


def say_hidden(err, a, found):
    """One line on standard error: what --hide and --hide-waits left out,
    and which of their patterns named nothing."""
    left, refused = {}, {}
    for f, calls in found:
        for name, c in f.items():
            left[name] = left.get(name, 0) + c
        for name, callees in calls.items():
            refused.setdefault(name, set()).update(callees)
    for name, callees in sorted(refused.items()):
        err("--hide: %s is kept: it calls other functions (%s); --hide leaves out functions that call none "
            "(a wait, a lock, a spin)" % (name, ", ".join(sorted(callees)[:5]) + (", ..." if len(callees) > 5 else "")))
    for p in a.hide:
        if not any(pattern_names(p, n) for n in set(left) | set(refused)):
            err("--hide=%s: no function of that name in the files read" % p)
    if a.hide_waits and OFF_CPU not in left:
        err("--hide-waits: these files hold no time off the CPU apart (no %s): a run in wall-clock time "
            "(CGPROF_TIME=exact) counts a wait in the function that waited unless CGPROF_OFF_CPU=1; sampled "
            "time counts CPU time only" % OFF_CPU)
    if left:
        err("left out (--hide%s): %s" % ("-waits" if a.hide_waits and not a.hide else "",
                                         ", ".join(sorted(left))))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # Millions of small tables and tuples, none of them in a cycle: the
    # cyclic collector would walk them all again and again (the report of
    # a 100 MB file took twice as long with it).
    gc.disable()
    try:
        return _main(argv)
    except BrokenPipeError:
        return 1


def _main(argv):
    err = messages.to_stderr(PROG)

    def out(msg):
        sys.stdout.write(msg + "\n")
    try:
        a = parse_args(argv)
    except UsageError as e:
        err(str(e))
        return 2
    if a.help:
        sys.stdout.write(help_text())
        return 0
    status = 0
    hiding = a.hide + ([OFF_CPU] if a.hide_waits else [])
    if a.view == "diff":
        sides = []
        for what in a.diff:
            files, missing = collect([what])
            for w, why in missing:
                err("%s: %s" % (w, why))
            if not files:
                return 1
            g, bad = load_group(files, a.event, arcs=bool(hiding))
            for path, why in bad:
                err("cannot read %s: %s" % (path, why))
                status = 1
            sides.append((files, g))
        if hiding:
            say_hidden(err, a, [g.hide(hiding) for _, g in sides])
        diff_view(sides[0][1], sides[1][1], a.top, out)
        descs = _descs(sides[0][0] + sides[1][0])
        report_repairs(err, None, descs)
        report_notes(err, descs)
        return status
    if a.view == "paths":
        return report_paths(a.whats, a.top, a.sort, a.threads, out, err)
    files, missing = collect(a.whats)
    for w, why in missing:
        err("%s: %s" % (w, why))
        status = 1
    if not files:
        return 1
    groups, bad = groups_of(files, a.threads, a.event, a.view == "lines", a.view in ("callers", "callees"),
                            arcs=bool(hiding))
    for path, why in bad:
        err("cannot read %s: %s" % (path, why))
        status = 1
    if hiding:
        say_hidden(err, a, [g.hide(hiding) for _, g in groups])
    if a.view in ("callers", "callees", "lines"):
        names = set()
        for _, g in groups:
            names |= {k[0] for k in g.self_cost}
            names |= {k[i][0] for k in g.arcs for i in (0, 1)}
        chosen, why = choose_function(a.func, names)
        if chosen is None:
            err(why)
            return 1
        if chosen != a.func:
            err("%r: the one function it names: %s" % (a.func, chosen))
            a.func = chosen
    found = False
    for label, g in groups:
        if not g.files:
            continue
        if a.view is None:
            for line in flat_lines(g, a.top if a.top else sys.maxsize, a.sort, label):
                out(line)
            found = True
        elif a.view in ("callers", "callees"):
            if label:
                out(label.rstrip(": ") + ":")
            found = arcs_view(g, a.func, a.view, out) or found
        elif a.view == "lines":
            if label:
                out(label.rstrip(": ") + ":")
            found = lines_view(g, a.func, out) or found
        elif a.view == "latency":
            found = latency_view(g, a.top, a.sort, out) or found
    if a.view == "latency" and not found:
        err("no latency histograms in the files read: a run with CGPROF_LATENCY=1 (cgprof --latency) writes them")
        status = 1
    if a.view in ("callers", "callees", "lines") and not found:
        err("no function named %r in the files read" % a.func)
        status = 1
    descs = _descs(files)
    report_repairs(err, None, descs)
    report_notes(err, descs)
    return status


# ---- cgprof report --paths ---------------------------------------------------------

def hottest_lines(tree, top, sort="inclusive", prefix=""):
    """The hottest paths of a tree, with the columns of `cgprof report`'s
    flat profile: inclusive, % of all the time, self, calls, the path
    (main > parse > lex)."""
    if not tree.costs:
        return []
    u = Units(tree.event)
    order = {"inclusive": lambda kv: (-kv[1][1], -kv[1][0], kv[0]),
             "self": lambda kv: (-kv[1][2], -kv[1][1], kv[0]),
             "calls": lambda kv: (-kv[1][0], -kv[1][1], kv[0])}[sort]
    ranked = sorted(tree.costs.items(), key=order)
    if top:
        ranked = ranked[:top]
    total = tree.total()
    nfiles = len(tree.files)
    out = ["%stop %d paths by %s (%d path file%s; %s in all threads):" %
           (prefix, len(ranked), {"inclusive": "inclusive time", "self": "self time", "calls": "calls"}[sort]
            if u.ns else {"inclusive": "inclusive " + u.event, "self": "self " + u.event, "calls": "calls"}[sort],
            nfiles, "" if nfiles == 1 else "s", u.total(total))]
    out.append("%12s %6s %12s %10s  %s" % (u.head("incl."), "%", u.head("self"), "calls", "path"))
    for names, (calls, inc, self_) in ranked:
        pct = 100.0 * inc / total if total else 0.0
        out.append("%12s %6.1f %12s %10s  %s" % (u.fmt(inc), pct, u.fmt(self_), calls or "-", " > ".join(names)))
    return out


def report_paths(whats, top, sort, threads, out, err):
    """`cgprof report --paths`: the hottest paths of the WHATs' path files,
    summed (threads "sum") or per thread ("each"), through out(line);
    errors through err(line). Returns the exit status: 0, or 1 when a
    WHAT has no path files or one cannot be read."""
    status = 0
    files, missing = paths.collect(whats)
    for what in missing:
        err("no path files for %s (looked for %s): the hottest paths need a run with CGPROF_PATHS=1 "
            "(docs/paths-format.md)" % (what, paths.looked_for(what)))
        status = 1
    if not files:
        return 1
    pfs, bad = paths.load(files)
    for _, why in bad:
        err(why)
        status = 1
    if not pfs:
        return status
    try:
        trees = paths.threads_of(pfs, with_pid=True)
        groups = [paths.sum_trees(trees, "")] if threads == "sum" else trees
    except ValueError as e:
        err(str(e))
        return 1
    for t in groups:
        # as `cgprof report --threads=each` heads each thread's table
        for line in hottest_lines(t, top, sort, t.label + ": " if t.label else ""):
            out(line)
    return status
