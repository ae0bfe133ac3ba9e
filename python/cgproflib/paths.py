"""The path files (docs/paths-format.md): a thread's calling-context tree,
every distinct call path with its exact calls, inclusive and self time,
written by the runtime with CGPROF_PATHS=1 next to each Callgrind part.
This module reads them (strictly), sums them, and makes of them what a
Callgrind file cannot give without guessing: flame graphs (collapsed
stacks for flamegraph.pl, a speedscope file) and the hottest call paths.

    cgprof flame [--out PREFIX] [--threads=sum|each] WHAT...
    cgprof flame --diff [--out PREFIX] A B
    cgprof report --paths [--top=N] [--sort=inclusive|self|calls] [--threads=sum|each] WHAT...

WHAT is found as `cgprof report` finds Callgrind files: a run's prefix
(callgrind.out.1234: its path files callgrind.paths.1234, .* and -*), a
file (a path file, or a Callgrind part: its path file), or a directory
(every path file in it, known by its first line, not its name).

Summing: the parts of a thread add up node by node, matched by their path
of function names (a tuple, root first); the threads add up the same way
into the total. The numbers are the files' own: nothing is apportioned.

For callers (the launcher, tests): read(), load(), collect(), threads_of(),
sum_trees(), folded_lines(), speedscope(), write_flame(), flame_files(),
write_diff(), rooted_as(), load_whats(),
hottest_lines(), run_flame(). Standard library only.
"""

import gc
import json
import os
import re
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from . import naming, report

PROG = "cgprof flame"
VERSION_LINE = "paths: 1"
BEYOND = "[paths beyond the bound]"
SCHEMA = "https://www.speedscope.app/file-format-schema.json"
HEADER = ("pid", "thread", "part", "cmd", "events", "nodes", "folded", "beyond")
NO_PATHS = "path files are written by a run with CGPROF_PATHS=1 (docs/paths-format.md)"

USAGE = ("usage: cgprof flame [--out PREFIX] [--threads=sum|each] WHAT...\n"
         "       cgprof flame --diff [--out PREFIX] A B")


class PathsFormatError(Exception):
    """A path file that is not as docs/paths-format.md says: its name, the
    line (1-based) and what was expected there."""

    def __init__(self, path, line, message):
        super().__init__("%s:%d: %s" % (path, line, message))
        self.path, self.line, self.message = path, line, message


class UsageError(Exception):
    pass


# ---- reading one file ------------------------------------------------------------

class PathFile:
    """One path file: its header's fields, its functions (id -> name) and
    its nodes as paths: [(names, calls, inclusive, self)], root first,
    each after its parent."""

    def __init__(self, path):
        self.path = path
        self.pid = self.thread = self.part = None
        self.cmd = None
        self.event = None
        self.nodes = self.bound = None        # nodes: N of BOUND
        self.folded = None
        self.beyond_calls = self.beyond_paths = None
        self.functions = {}
        self.paths = []


_NUM = re.compile(r"[0-9]+\Z")


def _num(path, line, value, what):
    if not _NUM.match(value):
        raise PathsFormatError(path, line, "expected %s (a number), found %r" % (what, value))
    return int(value)


def parse(lines, path="<paths>"):
    """A PathFile from the file's lines (str, with their newlines);
    raises PathsFormatError at the first line that is not as the format
    says."""
    pf = PathFile(path)
    seen_version = False
    header = {}
    nodes = {}           # id -> (names, fn ids on the path)
    children = set()     # (parent, fn): one node per path
    n = 0
    for n, raw in enumerate(lines, 1):
        if not raw.endswith("\n"):
            raise PathsFormatError(path, n, "the line has no newline at its end: the file was cut short")
        line = raw[:-1]
        if line.startswith("#"):
            continue
        if not seen_version:
            if line != VERSION_LINE:
                raise PathsFormatError(path, n, "expected %r (a path file of format version 1), found %r" %
                                       (VERSION_LINE, line))
            seen_version = True
            continue
        key, colon, value = line.partition(":")
        if colon and key in HEADER:
            if pf.functions or pf.paths:
                raise PathsFormatError(path, n, "header line %r after the records (the header comes first)" % key)
            if key in header:
                raise PathsFormatError(path, n, "%r a second time (first on line %d)" % (key + ":", header[key]))
            header[key] = n
            value = value[1:] if value.startswith(" ") else value
            _header_field(pf, path, n, key, value)
            continue
        if line.startswith("fn ") or line.startswith("node "):
            missing = [k for k in HEADER if k not in header]
            if missing:
                raise PathsFormatError(path, n, "expected the header's %s before the records" %
                                       ", ".join(k + ":" for k in missing))
        if line.startswith("fn "):
            fields = line.split(" ", 2)
            if len(fields) < 3 or not fields[2]:
                raise PathsFormatError(path, n, "expected 'fn <id> <name>', found %r" % line)
            fid = _num(path, n, fields[1], "a function id")
            if fid == 0:
                raise PathsFormatError(path, n, "function id 0 is not used")
            if fid in pf.functions:
                raise PathsFormatError(path, n, "function id %d defined twice" % fid)
            pf.functions[fid] = fields[2]
        elif line.startswith("node "):
            fields = line.split(" ")
            if len(fields) != 7:
                raise PathsFormatError(path, n, "expected 'node <id> <parent> <fn> <calls> <inclusive> <self>' "
                                                "(6 numbers), found %r" % line)
            nid, parent, fid, calls, inclusive, self_ = (
                _num(path, n, v, what) for v, what in zip(fields[1:], ("a node id", "a parent node id",
                                                                      "a function id", "calls", "inclusive time",
                                                                      "self time")))
            if nid == 0:
                raise PathsFormatError(path, n, "node id 0 is not used (0 is the parent of a root)")
            if nid in nodes:
                raise PathsFormatError(path, n, "node id %d defined twice" % nid)
            if parent and parent not in nodes:
                raise PathsFormatError(path, n, "parent node %d is not defined before this node" % parent)
            if fid not in pf.functions:
                raise PathsFormatError(path, n, "function %d is not defined by a fn line before this node" % fid)
            names, fids = nodes[parent] if parent else ((), ())
            if fid in fids:
                raise PathsFormatError(path, n, "function %d (%s) already on the node's path: recursion is folded "
                                                "onto the earlier node" % (fid, pf.functions[fid]))
            if (parent, fid) in children:
                raise PathsFormatError(path, n, "a second node of function %d under parent %d: one node per path" %
                                       (fid, parent))
            children.add((parent, fid))
            names = names + (pf.functions[fid],)
            nodes[nid] = (names, fids + (fid,))
            pf.paths.append((names, calls, inclusive, self_))
        elif not (pf.functions or pf.paths):
            raise PathsFormatError(path, n, "expected a header line (%s) or a record, found %r" %
                                   (", ".join(k + ":" for k in HEADER), line))
        else:
            raise PathsFormatError(path, n, "expected a record ('fn <id> <name>' or 'node <id> <parent> <fn> "
                                            "<calls> <inclusive> <self>'), found %r" % line)
    if not seen_version:
        raise PathsFormatError(path, n + 1, "expected %r: the file is empty" % VERSION_LINE)
    missing = [k for k in HEADER if k not in header]
    if missing:
        raise PathsFormatError(path, n + 1, "the file ends without the header's %s" %
                               ", ".join(k + ":" for k in missing))
    return pf


def _header_field(pf, path, n, key, value):
    if key in ("pid", "thread", "part", "folded"):
        setattr(pf, key, _num(path, n, value, key + ":'s value"))
    elif key == "cmd":
        pf.cmd = value
    elif key == "events":
        if not re.fullmatch(r"[A-Za-z0-9_]+", value):
            raise PathsFormatError(path, n, "expected 'events: <name>' (one event, the unit of the times: ns), "
                                            "found %r" % ("events: " + value))
        pf.event = value
    elif key == "nodes":
        m = re.fullmatch(r"([0-9]+) of ([0-9]+)", value)
        if not m:
            raise PathsFormatError(path, n, "expected 'nodes: <count> of <bound>', found %r" % ("nodes: " + value))
        pf.nodes, pf.bound = int(m.group(1)), int(m.group(2))
    elif key == "beyond":
        m = re.fullmatch(r"([0-9]+) ([0-9]+)", value)
        if not m:
            raise PathsFormatError(path, n, "expected 'beyond: <calls> <paths>', found %r" % ("beyond: " + value))
        pf.beyond_calls, pf.beyond_paths = int(m.group(1)), int(m.group(2))


def read(path):
    """The path file at path (a PathFile); raises OSError, PathsFormatError."""
    with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        return parse(f, path)


def is_path_file(path):
    """Whether the file starts as a path file: its first line that is not
    a comment is "paths: <version>"."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    for line in head.split(b"\n"):
        if not line.startswith(b"#"):
            return line.startswith(b"paths: ")
    return False


# ---- which files -------------------------------------------------------------

def _prefix_files(prefix):
    d, base = os.path.split(prefix)
    try:
        names = os.listdir(d or ".")
    except OSError:
        return []
    return [os.path.join(d, n) for n in names
            if n.startswith(base) and (n == base or n[len(base):len(base) + 1] in (".", "-"))]


def looked_for(what):
    """What collect() looked for, for the message when it found nothing."""
    if os.path.isdir(what):
        return "path files in the directory %s" % what
    names = naming.paths_names_of(what)
    p = names[1] if len(names) > 1 else names[0]
    return "%s, %s.* and %s-*" % (p, p, p)


def collect(whats):
    """The path files of each WHAT, as `cgprof report` finds Callgrind
    files: a directory's path files, a path file, or a prefix (a run's,
    a part's or a total's name: the path files named as its paths would
    be, and those it is the prefix of, each checked by content). Returns
    (files, [WHATs with none])."""
    files, missing = [], []
    seen = set()
    for what in whats:
        if os.path.isdir(what):
            found = [os.path.join(what, n) for n in os.listdir(what)]
        else:
            found = [p for name in naming.paths_names_of(what) for p in _prefix_files(name)]
        found = sorted(p for p in set(found) if os.path.isfile(p) and is_path_file(p))
        if not found:
            missing.append(what)
        for p in found:
            real = os.path.realpath(p)
            if real not in seen:
                seen.add(real)
                files.append(p)
    return files, missing


def no_paths_message(what):
    return "no path files for %s (looked for %s): %s" % (what, looked_for(what), NO_PATHS)


# ---- sums ------------------------------------------------------------------------

class Tree:
    """The sum of path files (a thread's parts, or threads): per path of
    function names, [calls, inclusive, self]; parents come before their
    children."""

    def __init__(self, label=""):
        self.label = label
        self.costs = {}
        self.files = []
        self.event = None
        self.pids = set()
        self.threads = set()
        self.thread_name = None
        self.cmd = None
        self.folded = 0
        # the functions whose place under their callers is estimated
        # (a tree of stacks made from arcs: estimate.py); their frames
        # are drawn marked (ESTIMATE_MARK)
        self.estimated = set()
        self.beyond_calls = 0
        self.beyond_paths = 0

    def add(self, pf):
        """Adds a file (PathFile) or a Tree."""
        if isinstance(pf, Tree):
            items = [(k, v[0], v[1], v[2]) for k, v in pf.costs.items()]
            self.files += pf.files
            self.pids |= pf.pids
            self.threads |= pf.threads
            self.estimated |= pf.estimated
        else:
            items = pf.paths
            self.files.append(pf.path)
            self.pids.add(pf.pid)
            self.threads.add((pf.pid, pf.thread))
        if self.event is None:
            self.event = pf.event
        elif pf.event is not None and pf.event != self.event:
            raise ValueError("%s: events: %s, and %s before it: times in different units cannot be summed" %
                             (getattr(pf, "path", "a thread"), pf.event, self.event))
        self.cmd = self.cmd if self.cmd is not None else pf.cmd
        self.folded += pf.folded
        self.beyond_calls += pf.beyond_calls
        self.beyond_paths += pf.beyond_paths
        costs = self.costs
        for names, calls, inclusive, self_ in items:
            c = costs.get(names)
            if c is None:
                costs[names] = [calls, inclusive, self_]
            else:
                c[0] += calls
                c[1] += inclusive
                c[2] += self_

    def total(self):
        """All the time of the tree: the sum of its self times."""
        return sum(c[2] for c in self.costs.values())


def load(files):
    """[PathFile] of the files that can be read, and [(path, reason)] of
    those that cannot (a reason of a malformed file starts with its
    file:line)."""
    pfs, bad = [], []
    for path in files:
        try:
            pfs.append(read(path))
        except OSError as e:
            bad.append((path, "cannot read %s: %s" % (path, e.strerror or e)))
        except PathsFormatError as e:
            bad.append((path, str(e)))
    return pfs, bad


def thread_label(pid, thread, name, several_pids):
    return "%sthread %d%s" % ("pid %d " % pid if several_pids else "", thread, " (%s)" % name if name else "")


def _callgrind_header(path):
    """pid, thread, part and thread name of a Callgrind file's header."""
    got = {"desc": []}
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for i, raw in enumerate(f):
            if raw[:3] in ("fn=", "ob=", "fl=") or i > 200:
                break
            key, _, value = raw.rstrip("\n").partition(":")
            if key in ("pid", "thread", "part"):
                got[key] = value.strip()
            elif key == "desc":
                got["desc"].append(value.strip())
    name = None
    for d in got["desc"]:
        t, _, v = d.partition(":")
        if t.strip() == "Thread name":
            name = v.strip()
    return got.get("pid"), got.get("thread"), got.get("part"), name


def thread_name(pf):
    """The thread's name (pthread_setname_np) as the path file's Callgrind
    part gives it in its desc: lines, or None: a path file has no name."""
    for cand in naming.callgrind_names_of(pf.path):
        try:
            pid, thread, part, name = _callgrind_header(cand)
        except OSError:
            continue
        if (pid, thread, part) == (str(pf.pid), str(pf.thread), str(pf.part)):
            return name
    return None


def threads_of(pfs, names=None, with_pid=False):
    """[Tree] per thread (pid, thread), in that order, each labelled
    "thread N (name)" ("pid P thread N (name)" when the files are of
    several processes, or with_pid). names: {(pid, thread): name} to use
    instead of the names the Callgrind parts give."""
    per = {}
    for pf in sorted(pfs, key=lambda p: (p.pid, p.thread, p.part, p.path)):
        t = per.get((pf.pid, pf.thread))
        if t is None:
            t = per[(pf.pid, pf.thread)] = Tree()
        t.add(pf)
        if names is None:
            # the latest part's name: a thread may name itself late
            t.thread_name = thread_name(pf) or t.thread_name
    several = with_pid or len({pid for pid, _ in per}) > 1
    for (pid, thread), t in per.items():
        if names is not None:
            t.thread_name = names.get((pid, thread))
        t.label = thread_label(pid, thread, t.thread_name, several)
    return [t for _, t in sorted(per.items())]


def sum_trees(trees, label="all threads"):
    total = Tree(label)
    for t in trees:
        total.add(t)
    return total


# ---- collapsed stacks (flamegraph.pl) ----------------------------------------------

_TRAILING_NUMBER = re.compile(r" ([0-9]+(?:\.[0-9]*)?)\Z")


def escape_frame(name):
    """A function's name as a frame of a collapsed stack: ';' separates the
    frames and a line is one stack, so ';', a newline and every other
    control byte are written %XX (their code in hex: ';' is %3B). A name
    ending in a space and a number ("f 2") would make flamegraph.pl take
    the number for a second count (its differential input): that space is
    written %20. Nothing else changes: the names are readable as they are."""
    s = "".join("%%%02X" % ord(c) if c == ";" or ord(c) < 0x20 or c == "\x7f" else c for c in name)
    m = _TRAILING_NUMBER.search(s)
    return s[:m.start()] + "%20" + s[m.start() + 1:] if m else s


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


# A frame whose place under its caller is an estimate (a stack made from
# arcs, estimate.py: the function has several callers, its time split
# among them in their shares) is drawn with this after its name.
ESTIMATE_MARK = " ~"
ESTIMATE_NOTE = (": stacks estimated from the arcs (a frame marked ~ is a function with several callers, its "
                 "time split among them in their shares; a run with CGPROF_PATHS=1 draws every stack exactly)")


def shown(name, marked):
    return name + ESTIMATE_MARK if name in marked else name


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
    from . import flamehtml
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
    from . import flamehtml
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
        "CGPROF_PATHS=1 (docs/paths-format.md): every distinct call path with its exact self time, so",
        "that a function called from two places is drawn under each with its own time.",
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


class FlameArgs:
    def __init__(self):
        self.out = None
        self.threads = "each"
        self.threads_given = False
        self.diff = False
        self.whats = []
        self.help = False


def parse_flame_args(argv):
    a = FlameArgs()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            a.whats += argv[i:]
            break
        if arg in ("-h", "--help"):
            a.help = True
            return a
        if not arg.startswith("-") or arg == "-":
            a.whats.append(arg)
            continue
        if arg == "--diff":
            # a flag: the two runs are the WHATs (--diff A B, A --diff B)
            a.diff = True
            continue
        name, eq, value = arg.partition("=")
        if name not in ("--out", "--threads"):
            raise UsageError("unknown option %r (cgprof flame --help lists them)" % arg)
        if not eq:
            if i >= len(argv):
                raise UsageError("option %s needs a value" % name)
            value = argv[i]
            i += 1
        if name == "--out":
            if not value:
                raise UsageError("--out needs a prefix to name the files with")
            a.out = value
        elif value not in ("sum", "each"):
            raise UsageError("--threads=%r: accepted: sum|each" % value)
        else:
            a.threads = value
            a.threads_given = True
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
    from . import estimate
    files, missing = collect(whats)
    arc_files, nothing = report.collect(missing)
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

    def err(msg):
        for line in msg.split("\n"):
            sys.stderr.write("%s: %s\n" % (PROG, line))
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


def default_run_name(pf):
    """A path file's run (its name without -<NN>, and without .<part> when
    the name has its part: the header's part, right after the pid)."""
    base = re.sub(r"-[0-9]+\Z", "", pf.path)
    tail = ".%d" % pf.part
    if base.endswith(tail) and base[:-len(tail)].endswith(str(pf.pid)):
        base = base[:-len(tail)]
    return base


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


# ---- cgprof report --paths ---------------------------------------------------------

def hottest_lines(tree, top, sort="inclusive", prefix=""):
    """The hottest paths of a tree, with the columns of `cgprof report`'s
    flat profile: inclusive, % of all the time, self, calls, the path
    (main > parse > lex)."""
    if not tree.costs:
        return []
    u = report.Units(tree.event)
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
    files, missing = collect(whats)
    for what in missing:
        err("no path files for %s (looked for %s): the hottest paths need a run with CGPROF_PATHS=1 "
            "(docs/paths-format.md)" % (what, looked_for(what)))
        status = 1
    if not files:
        return 1
    pfs, bad = load(files)
    for _, why in bad:
        err(why)
        status = 1
    if not pfs:
        return status
    try:
        trees = threads_of(pfs, with_pid=True)
        groups = [sum_trees(trees, "")] if threads == "sum" else trees
    except ValueError as e:
        err(str(e))
        return 1
    for t in groups:
        # as `cgprof report --threads=each` heads each thread's table
        for line in hottest_lines(t, top, sort, t.label + ": " if t.label else ""):
            out(line)
    return status
