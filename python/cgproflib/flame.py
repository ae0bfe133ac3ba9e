"""cgprof flame: flame graphs of a run's call paths (the path files,
paths.py), or of the stacks estimated from its Callgrind files' arcs
(estimate.py) when it wrote none: collapsed stacks for flamegraph.pl, a
speedscope file, a page for a browser (flamehtml.py), and the
differential graph of two runs (--diff).

    cgprof flame [--out PREFIX] [--threads=sum|each] WHAT...
    cgprof flame --diff [--out PREFIX] A B

For callers (the launcher, pprof, tests): folded_lines(), speedscope(),
write_flame(), flame_files(), write_diff(), rooted_as(), load_whats(),
run_flame(), flame_main(). Standard library only.
"""

import gc
import json
import os
import sys

from . import cmdline, estimate, flamehtml, messages, naming, summary
from .paths import (ESTIMATE_MARK, collect, escape_frame, default_run_name, load, looked_for, read, shown,
                    sum_trees, threads_of, Tree)

PROG = "cgprof flame"
SCHEMA = "https://www.speedscope.app/file-format-schema.json"

USAGE = ("usage: cgprof flame [--out PREFIX] [--threads=sum|each] WHAT...\n"
         "       cgprof flame --diff [--out PREFIX] A B")


class UsageError(Exception):
    pass


# ---- collapsed stacks (flamegraph.pl) ----------------------------------------------


_UNSET = object()


def _last(item):
    return item[0][-1]


def _walk(tree, make):
    """(value, self) of each path with self time, in path order (sorted
    by names: a depth-first walk, siblings by name). A path's value is
    make(its parent's value or None for a root, its last name), made once
    per path and only for the paths with self time and their ancestors:
    a stack is its parent's and one frame, never built again from the
    names (a thread of 65536 paths 30 deep would take 2 million escapes
    and joins otherwise), and only siblings are compared."""
    costs = tree.costs
    kids = {}
    virtual = set()
    for names, c in costs.items():
        parent = names[:-1]
        kids.setdefault(parent, []).append((names, c))
        # a path whose parent the tree lacks (a tree made by hand): its
        # ancestors are walked as paths without costs
        while parent and parent not in costs and parent not in virtual:
            virtual.add(parent)
            kids.setdefault(parent[:-1], []).append((parent, None))
            parent = parent[:-1]
    chain = []   # [names, value] of the path walked and its ancestors, root first
    todo = sorted(kids.get((), ()), key=_last, reverse=True)
    while todo:
        names, c = todo.pop()
        del chain[len(names) - 1:]
        chain.append([names, _UNSET])
        below = kids.get(names)
        if below:
            todo += sorted(below, key=_last, reverse=True)
        if c is None or c[2] <= 0:
            continue
        k = len(chain) - 1
        while k > 0 and chain[k - 1][1] is _UNSET:
            k -= 1
        for entry in chain[k:]:
            entry[1] = make(chain[k - 1][1] if k else None, entry[0][-1])
            k += 1
        yield chain[-1][1], c[2]


def folded_lines(tree):
    """One line per path with self time, "main;parse;lex 1234" (the self
    time in the files' unit, ns), sorted by path."""
    return list(_folded(tree))


ESTIMATE_NOTE = (": stacks estimated from the arcs (a frame marked ~ is a function with several callers, its "
                 "time split among them in their shares; a run with CGPROF_PATHS=1 draws every stack exactly)")


def _folded(tree, marked=None):
    esc = {}
    marked = tree.estimated if marked is None else marked

    def make(parent, name):
        e = esc.get(name)
        if e is None:
            e = esc[name] = escape_frame(shown(name, marked))
        return e if parent is None else parent + ";" + e
    for stack, self_ in _walk(tree, make):
        yield "%s %d" % (stack, self_)


# ---- speedscope ------------------------------------------------------------------

def _json_text(s):
    # names that are not UTF-8 (kept as their bytes when read) shown with
    # U+FFFD, as a browser would: JSON holds Unicode text only
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def speedscope(profiles, name="cgprof"):
    """The speedscope file (https://www.speedscope.app/file-format-schema.json)
    of [Tree]: one "sampled" profile per tree, named by its label, whose
    samples are its paths with self time (frame indexes, root first) and
    weights their self time; frames shared by all profiles."""
    try:
        from ._generated import VERSION
    except ImportError:
        VERSION = "?"
    frames, index = [], {}
    out = []
    marked = set().union(*(t.estimated for t in profiles)) if profiles else set()

    def make(parent, fn):
        i = index.get(fn)
        if i is None:
            i = index[fn] = len(frames)
            frames.append({"name": _json_text(shown(fn, marked))})
        return [i] if parent is None else parent + [i]
    for t in profiles:
        samples, weights = [], []
        for stack, self_ in _walk(t, make):
            samples.append(stack)
            weights.append(self_)
        out.append({"type": "sampled", "name": _json_text(t.label),
                    "unit": "nanoseconds" if t.event in (None, "ns") else "none",
                    "startValue": 0, "endValue": sum(weights), "samples": samples, "weights": weights})
    return {"$schema": SCHEMA, "shared": {"frames": frames}, "profiles": out, "name": _json_text(name),
            "activeProfileIndex": 0, "exporter": "cgprof %s" % VERSION}


# ---- cgprof flame ----------------------------------------------------------------

def flame_files(prefix, threads, each=True):
    """The files write_flame() writes for prefix and [Tree] (one per
    thread): (path, what) in order."""
    several = len({pid for t in threads for pid in t.pids}) > 1
    out = [(prefix + ".html", "a browser"), (prefix + ".speedscope.json", "speedscope"),
           (prefix + ".folded", "all threads")]
    if each:
        for t in threads:
            (pid, thread), = t.threads
            out.append(((prefix + ".%d-%02d.folded" % (pid, thread)) if several else
                        (prefix + "-%02d.folded" % thread), t.label))
    return out


def _write(path, write, binary=False):
    """write(f) into path (a text file, or binary), through a temporary
    renamed in place: a viewer never reads half a file."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with (open(tmp, "wb") if binary else
              open(tmp, "w", encoding="utf-8", errors="surrogateescape", newline="\n")) as f:
            write(f)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and e.errno:
            # named by the file meant, not its temporary
            raise OSError(e.errno, e.strerror, path) from e
        raise


def _dump_json(f, doc):
    """json.dumps(doc) into f, a profile at a time: json.dump() would
    encode in Python (ten times slower than dumps' C encoder), and the
    whole file as one string may be hundreds of MB."""
    def dumps(v):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    f.write("{")
    for i, (key, value) in enumerate(doc.items()):
        f.write("%s%s:" % ("," if i else "", dumps(key)))
        if key == "profiles":
            f.write("[")
            for j, p in enumerate(value):
                f.write(("," if j else "") + dumps(p))
            f.write("]")
        else:
            f.write(dumps(value))
    f.write("}\n")


def flame_title(total):
    """The name of a run's flame graphs: its command and pids, and what
    the mark of an estimate means when its stacks are estimated."""
    cmd = total.cmd or ""
    name = ("%s (pid %s)" % (cmd, ", ".join(str(p) for p in sorted(total.pids))) if cmd else "cgprof")
    return name + ESTIMATE_NOTE if total.estimated else name


def write_flame(prefix, threads, each=True, name=None):
    """Writes <prefix>.html (flamehtml.py: all threads, then each thread
    when each), <prefix>.speedscope.json (the same profiles),
    <prefix>.folded (all threads) and <prefix>-<NN>.folded per thread when
    each (<prefix>.<pid>-<NN>.folded for files of several processes).
    Returns the paths written, in that order; raises OSError."""
    total = sum_trees(threads)
    files = flame_files(prefix, threads, each)
    profiles = [total] + (threads if each else [])
    name = name or flame_title(total)
    # a function marked in one thread is marked in all: one frame per
    # function in every file of the run
    marked = total.estimated
    _write(files[0][0], lambda f: f.write(flamehtml.flame_page(profiles, name, ESTIMATE_MARK, marked)))
    doc = speedscope(profiles, name)
    _write(files[1][0], lambda f: _dump_json(f, doc))
    del doc
    _write(files[2][0], lambda f: f.writelines(line + "\n" for line in _folded(total, marked)))
    for (path, _), t in zip(files[3:], threads):
        _write(path, lambda f: f.writelines(line + "\n" for line in _folded(t, marked)))
    return [p for p, _ in files]


def diff_files(prefix):
    """The files write_diff() writes: the page and flamegraph.pl's
    differential collapsed stacks."""
    return [prefix + ".diff.html", prefix + ".diff.folded"]


def rooted_as(tree, exact):
    """tree (stacks estimated from the arcs) with the frames that start
    its paths and that exact (a tree of path files) never has left out:
    the arcs name libc's callers of main and of threads
    (__libc_start_call_main, start_thread), the path files start at the
    first instrumented function. Paths that become one are summed; a
    path of such frames alone, with no time of its own, is dropped."""
    names = {n for p in exact.costs for n in p}
    out = Tree(tree.label)
    out.files, out.event, out.pids, out.threads = list(tree.files), tree.event, set(tree.pids), set(tree.threads)
    out.cmd, out.estimated, out.folded = tree.cmd, set(tree.estimated), tree.folded
    out.beyond_calls, out.beyond_paths = tree.beyond_calls, tree.beyond_paths
    for p, c in tree.costs.items():
        k = 0
        while k < len(p) - 1 and p[k] not in names:
            k += 1
        q = p[k:]
        if len(q) == 1 and q[0] not in names and c[2] == 0:
            continue
        got = out.costs.get(q)
        if got is None:
            out.costs[q] = list(c)
        else:
            for i in range(3):
                got[i] += c[i]
    return out


def write_diff(prefix, ta, tb, title):
    """Writes the differential flame graph of Tree ta to Tree tb:
    <prefix>.diff.html (flamehtml.diff_page: tb's shape, coloured by the
    change) and <prefix>.diff.folded ("stack self_a self_b" per path,
    flamegraph.pl's input for a differential graph). Returns the paths
    written; raises OSError, ValueError (times in different units)."""
    if ta.event is not None and tb.event is not None and ta.event != tb.event:
        raise ValueError("A's times are in %s, B's in %s: they cannot be compared" % (ta.event, tb.event))
    marked = ta.estimated | tb.estimated
    html, folded = diff_files(prefix)
    _write(html, lambda f: f.write(flamehtml.diff_page(ta, tb, title, "A", "B", ESTIMATE_MARK, marked)))
    _write(folded, lambda f: f.writelines(line + "\n" for line in flamehtml.diff_folded(ta, tb, marked)))
    return [html, folded]


def flame_help():
    return "\n".join([
        USAGE, "",
        "Writes flame graphs of a run's call paths, from the path files the runtime writes with",
        "CGPROF_PATHS=1 (docs/internals/paths-format.md): every distinct call path with its exact",
        "self time, so that a function called from two places is drawn under each with its own time.",
        "",
        "From a run without path files, the flame graphs of its Callgrind files, whose stacks are",
        "estimated from the arcs: each function's self time split among its callers in the shares of",
        "their calls' inclusive time, then among theirs, up to a function nobody called. Each",
        "function's self time is the file's exactly, and a stack on which every function has one",
        "caller is exact; a function with several callers is drawn marked \"~\" (\"spin ~\"): its place",
        "under each caller is an estimate (a function whose calls cost more from one caller than from",
        "another is misplaced). Recursion is folded (a function is on a stack once).",
        "",
        "WHAT is a run's prefix (callgrind.out.1234: its path files callgrind.paths.1234-*, .*, else",
        "its Callgrind files), a file (a path file, or a Callgrind part: its path file, else the part)",
        "or a directory (every path file in it, else every Callgrind file). The parts of a thread are",
        "summed path by path, and the threads into the total.",
        "",
        "Files written (their names on standard output):",
        "  PREFIX.html             a flame graph for a browser alone (no network, nothing to install):",
        "                          all threads and each thread (a selector); hover a frame for its",
        "                          path's exact calls, self and inclusive time; click to zoom (click",
        "                          the frame above or press Escape to go back); search by regular",
        "                          expression, with the share of the time matched",
        "  PREFIX.speedscope.json  for https://www.speedscope.app or `npx speedscope FILE`: one profile",
        "                          for all threads, one per thread",
        "  PREFIX.folded           collapsed stacks of all threads (`flamegraph.pl PREFIX.folded > f.svg`):",
        "                          one line per path, `main;parse;lex 1234`, its self time in ns",
        "  PREFIX-NN.folded        the same per thread NN (PREFIX.<pid>-NN.folded for several processes)",
        "",
        "With --diff A B (two runs, each a WHAT: their threads summed), a differential flame graph:",
        "  PREFIX.diff.html        B's flame graph, each frame coloured by the change of its path from A",
        "                          to B: red more (slower), blue less (faster), white the same, the",
        "                          deepest colour the largest change; by self time, inclusive time or",
        "                          calls (a selector); hover for both runs' values and the change. The",
        "                          paths of A that B lacks are listed under the graph",
        "  PREFIX.diff.folded      `stack self_A self_B` per path (ns), flamegraph.pl's differential",
        "                          input: `flamegraph.pl PREFIX.diff.folded > diff.svg`",
        "PREFIX is B's (as without --diff) unless --out. A run without path files against one with them",
        "is drawn from main, as the path files are (libc's callers of main and threads left out).",
        "",
        "Options:",
        "  --diff              two runs, A B: the differential flame graph of A to B",
        "  --out PREFIX        where to write (default: the run's name with flame for out and no",
        "                      leading callgrind., flame.<pid> for callgrind.out.<pid>, in the path",
        "                      files' directory: KCachegrind, which loads callgrind.out*, never takes",
        "                      them for profiles, and speedscope, which reads callgrind.* as",
        "                      Callgrind's, opens the .folded files)",
        "  --threads=sum|each  each (the default): all threads and each thread; sum: all threads only",
        "                      (not with --diff, which sums each run's threads)",
        "  -h, --help          this text",
        "",
        "In a collapsed stack, ';', newlines and control bytes of a name are written %XX (';' is %3B),",
        "and the space of a name ending in \" <number>\" is %20 (flamegraph.pl would read the number).",
        "",
        "Exit status: 0; 1 if a path file cannot be read or is malformed (file:line: what was expected)",
        "or a file cannot be written; 2 on a usage error or when WHAT has neither path files nor",
        "Callgrind files.",
    ]) + "\n"


def parse_flame_args(argv):
    """The namespace of cgprof flame's command line: out, threads,
    threads_given, diff, whats, help; UsageError."""
    ap = cmdline.Parser("cgprof flame", UsageError)
    ap.add_argument("--out")
    ap.add_argument("--threads")
    # a flag: the two runs are the WHATs (--diff A B, A --diff B)
    ap.add_argument("--diff", action="store_true")
    ap.add_argument("whats", nargs="*")
    a = ap.parse(argv)
    if a.help:
        return a
    if a.out is not None and not a.out:
        raise UsageError("--out needs a prefix to name the files with")
    a.threads_given = a.threads is not None
    if a.threads is None:
        a.threads = "each"
    elif a.threads not in ("sum", "each"):
        raise UsageError("--threads=%r: accepted: sum|each" % a.threads)
    if a.diff:
        if len(a.whats) != 2:
            raise UsageError("--diff A B reads two runs, no more, no less: %s" %
                             (" ".join(a.whats) if a.whats else "none given") + "\n" + USAGE)
        if a.threads_given:
            raise UsageError("--diff sums the threads of each run: --threads does not apply")
    if not a.whats:
        raise UsageError("nothing to read: give a run's prefix, files or a directory\n" + USAGE)
    return a


def load_whats(whats, err):
    """The threads ([Tree]) of the WHATs: their path files, else the
    stacks estimated from their Callgrind files' arcs (estimate.py), and
    the default prefix of their flame graphs (None when they are of
    several processes). Returns (status, threads, prefix, several, arcs):
    status 0, or 1 (a file cannot be read or is malformed, or units
    differ) or 2 (nothing found), said through err(message); several,
    when the prefix is None, says which processes; arcs, whether the
    threads are stacks estimated from Callgrind files."""
    files, missing = collect(whats)
    arc_files, nothing = summary.collect(missing)
    if nothing:
        for what, _ in nothing:
            err("no path files and no Callgrind file for %s (looked for %s, and for Callgrind files named %s, "
                "%s.* and %s-*)" % (what, looked_for(what), what, what, what))
        return 2, None, None, None, False
    pfs, bad = load(files)
    trees, bad_arcs = estimate.trees_of_files(arc_files)
    if bad or bad_arcs:
        for _, why in bad + bad_arcs:
            err(why)
        return 1, None, None, None, False
    try:
        threads = threads_of(pfs, with_pid=bool(pfs and trees)) + trees
        sum_trees(threads)
    except ValueError as e:
        err(str(e))
        return 1, None, None, None, False
    runs = sorted({(os.path.dirname(pf.path), pf.pid) for pf in pfs} |
                  {(os.path.dirname(t.files[0]), pid) for t in trees for pid in t.pids})
    if len(runs) > 1:
        return 0, threads, None, "the %sfiles are of %d processes (pids %s)" % (
            "" if trees else "path ", len(runs), " ".join(str(pid) for _, pid in runs)), not pfs
    prefix = naming.flame_prefix_of(default_run_name(pfs[0])) if pfs else \
        estimate.flame_prefix_of(trees[0].files[0], next(iter(trees[0].pids)))
    return 0, threads, prefix, None, not pfs


def flame_main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # Hundreds of thousands of paths, each a tuple, none in a cycle: the
    # cyclic collector would walk them again and again (as in report.main)
    gc.disable()

    err = messages.to_stderr(PROG)
    try:
        a = parse_flame_args(argv)
    except UsageError as e:
        err(str(e))
        return 2
    if a.help:
        sys.stdout.write(flame_help())
        return 0
    if a.diff:
        return _diff_main(a, err)
    # the call paths where the run wrote them; else the stacks estimated
    # from its Callgrind files' arcs (estimate.py)
    status, threads, prefix, several, _ = load_whats(a.whats, err)
    if status:
        return status
    prefix = a.out or prefix
    if prefix is None:
        err("%s: name the files to write with --out PREFIX" % several)
        return 2
    try:
        written = write_flame(prefix, threads, a.threads == "each")
    except OSError as e:
        err("cannot write %s: %s" % (e.filename or prefix, e.strerror or e))
        return 1
    return _print_written(written)


def _print_written(written):
    try:
        for path in written:
            sys.stdout.write(path + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    return 0


def _run_name(what, threads):
    t = sum_trees(threads)
    pids = ", ".join(str(p) for p in sorted(t.pids))
    return "%s (%s%s%s)" % (what, t.cmd + ", " if t.cmd else "", "pid " if len(t.pids) == 1 else "pids ", pids)


def _diff_main(a, err):
    """cgprof flame --diff A B: the differential flame graph, B's shape
    coloured by the change from A, the threads of each run summed."""
    sides = []
    for what in a.whats:
        status, threads, prefix, several, arcs = load_whats([what], err)
        if status:
            return status
        sides.append((threads, prefix, several, arcs))
    prefix = a.out or sides[1][1]
    if prefix is None:
        err("B, %s: %s: name the files to write with --out PREFIX" % (a.whats[1], sides[1][2]))
        return 2
    title = "A = %s, B = %s: B's flame graph coloured by the change from A" % (
        _run_name(a.whats[0], sides[0][0]), _run_name(a.whats[1], sides[1][0]))
    if any(t.estimated for t in sides[0][0] + sides[1][0]):
        title += ESTIMATE_NOTE
    ta, tb = sum_trees(sides[0][0], "A: all threads"), sum_trees(sides[1][0], "all threads")
    # one run's path files against another's arcs: the arcs' stacks start
    # at libc's callers of main and of threads, the path files' at main
    if sides[0][3] and not sides[1][3]:
        ta = rooted_as(ta, tb)
    elif sides[1][3] and not sides[0][3]:
        tb = rooted_as(tb, ta)
    try:
        written = write_diff(prefix, ta, tb, title)
    except ValueError as e:
        err(str(e))
        return 1
    except OSError as e:
        err("cannot write %s: %s" % (e.filename or prefix, e.strerror or e))
        return 1
    return _print_written(written)


# ---- the launcher: the flame graphs of the run it ran ------------------------------

def run_flame(pattern, pid, cwd, parts):
    """For the launcher: the flame graphs of the path files that pid's
    run wrote for parts ([(part, thread)] of the Callgrind parts it
    wrote), written at flame_prefix(); their paths, [] when the run wrote
    no path files. Raises PathsFormatError, OSError, ValueError,
    rules.RulesError."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run_flame(pattern, pid, cwd, parts)
    finally:
        if enabled:
            gc.enable()


def _run_flame(pattern, pid, cwd, parts):
    want = set(parts)
    found = naming.paths_scan(pattern, pid, cwd)
    files = sorted(p for p, f in found.items() if f.pid in (pid, None) and (f.part, f.thread) in want)
    if not files:
        return []
    pfs = [read(p) for p in files]
    pfs = [pf for pf in pfs if pf.pid == pid]
    if not pfs:
        return []
    return write_flame(naming.flame_prefix(pattern, pid, cwd), threads_of(pfs))
