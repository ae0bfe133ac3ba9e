"""cgprof report: read saved Callgrind files (cgprof's and Valgrind's) and
print where the time went.

    cgprof report [options] WHAT...

WHAT is a run's prefix (callgrind.out.1234: all its parts and threads, as
KCachegrind loads them), a file, or a directory (every Callgrind file in
it: all threads, parts and processes). This module is the command: its
command line, the views (--callers, --callees, --lines, --diff, --latency,
--paths) and what it prints. The numbers are cgproflib.summary's (Group,
the flat profile, the desc: warnings, which files), shared with the
launcher's exit summary; the names that other modules and the tests
import from here are re-exported.
"""

import argparse
import gc
import os
import sys

from . import cmdline, latency, messages, paths, reader
from .summary import (LOWER_BOUND_NOTE, OFF_CPU, Group, Units, _descs, collect, count_text, flat_lines,
                      is_lower_bound, load_group, pattern_names, report_notes, report_repairs, where_of)
# what the launcher, cgprof flame, cgprof pprof and the tests import from here
from .summary import ORDERS, ms, print_summary, read_desc, summarize, throttled_names, top_functions  # noqa: F401
from ._shared import DESC_THREAD_NAME

PROG = "cgprof report"
DEFAULT_TOP = 20
SORTS = ("inclusive", "self", "calls")

USAGE = ("usage: cgprof report [--top=N] [--sort=inclusive|self|calls] [--threads=sum|each] [--event=NAME]\n"
         "                     [--hide=FUNC,... | --hide-waits]\n"
         "                     [--callers FUNC | --callees FUNC | --lines FUNC | --diff A B | --paths | --latency]\n"
         "                     WHAT...")


class UsageError(Exception):
    pass


# ---- the views -------------------------------------------------------------------

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
        "                  its Callgrind files (docs/internals/paths-format.md); --top, --sort,",
        "                  --threads apply",
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


class _View(argparse.Action):
    """A view (--callers FUNC, --callees FUNC, --lines FUNC; --diff,
    --paths, --latency alone): one at a time."""

    def __call__(self, parser, ns, value, option_string=None):
        if ns.view:
            raise UsageError("one view at a time: --%s and --%s" % (ns.view, self.dest))
        ns.view = self.dest
        if self.nargs != 0:
            ns.func = value


class _Check(argparse.Action):
    """--top, --sort, --threads, --hide: their values judged at once."""

    def __call__(self, parser, ns, value, option_string=None):
        if self.dest == "top":
            if not value.isdigit():
                raise UsageError("--top=%r: accepted: a number of functions, 0 or more (0: all)" % value)
            value = int(value)
        elif self.dest == "sort" and value not in SORTS:
            raise UsageError("--sort=%r: accepted: %s" % (value, "|".join(SORTS)))
        elif self.dest == "threads" and value not in ("sum", "each"):
            raise UsageError("--threads=%r: accepted: sum|each" % value)
        elif self.dest == "hide":
            pats = [p.strip() for p in value.split(",") if p.strip()]
            if not pats:
                raise UsageError("--hide=%r: accepted: function names or globs, separated by commas" % value)
            value = ns.hide + pats
        setattr(ns, self.dest, value)


def parse_args(argv):
    """The namespace of cgprof report's command line (argparse's, through
    cgproflib.cmdline): top, sort, threads, event, view (None, callers,
    callees, lines, diff, paths, latency), func, diff (the two runs),
    whats, help, hide, hide_waits; UsageError."""
    ap = cmdline.Parser(PROG, UsageError, stop_at_help=True)
    ap.set_defaults(top=DEFAULT_TOP, sort="inclusive", threads="sum", view=None, func=None, diff=None, hide=[],
                    help=False)
    for name in ("top", "sort", "threads", "hide"):
        ap.add_argument("--" + name, action=_Check)
    ap.add_argument("--event")
    ap.add_argument("--hide-waits", action="store_true")
    for name in ("callers", "callees", "lines"):
        ap.add_argument("--" + name, action=_View)
    # --diff: its two runs are the command's two operands, wherever the
    # other options stand (--diff --top=12 A B, --diff A B --top=12)
    for name in ("diff", "paths", "latency"):
        ap.add_argument("--" + name, action=_View, nargs=0)
    ap.add_argument("whats", nargs="*")
    try:
        a = ap.parse(argv)
    except cmdline.Stop:
        return argparse.Namespace(help=True)
    positional = a.whats
    if a.view in ("paths", "latency", "lines") and (a.hide or a.hide_waits):
        raise UsageError({"paths": "--paths shows every path",
                          "latency": "--latency shows each function's calls",
                          "lines": "--lines shows one function's lines"}[a.view] +
                         ": --hide and --hide-waits apply to the other views")
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
            "(docs/internals/paths-format.md)" % (what, paths.looked_for(what)))
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
