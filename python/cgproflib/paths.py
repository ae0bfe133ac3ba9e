"""The path files (docs/internals/paths-format.md): a thread's calling-context tree,
every distinct call path with its exact calls, inclusive and self time,
written by the runtime with CGPROF_PATHS=1 next to each Callgrind part.
This module reads them (strictly) and sums them into trees (Tree), the
model that `cgprof flame` (flame.py), `cgprof report --paths` (report.py),
`cgprof pprof` (pprof.py) and the stacks estimated from arcs (estimate.py)
share. It imports none of them: they import it.

WHAT is found as `cgprof report` finds Callgrind files: a run's prefix
(callgrind.out.1234: its path files callgrind.paths.1234, .* and -*), a
file (a path file, or a Callgrind part: its path file), or a directory
(every path file in it, known by its first line, not its name).

Summing: the parts of a thread add up node by node, matched by their path
of function names (a tuple, root first); the threads add up the same way
into the total. The numbers are the files' own: nothing is apportioned.

For callers: read(), parse(), load(), collect(), threads_of(), sum_trees(),
escape_frame(), shown(), default_run_name(). Standard library only.
"""

import os
import re

from . import naming
from ._shared import DESC_THREAD_NAME, DESC_THROTTLED

VERSION_LINE = "paths: 1"
BEYOND = "[paths beyond the bound]"
HEADER = ("pid", "thread", "part", "cmd", "events", "nodes", "folded", "beyond")
NO_PATHS = "path files are written by a run with CGPROF_PATHS=1 (docs/internals/paths-format.md)"


class PathsFormatError(Exception):
    """A path file that is not as docs/internals/paths-format.md says: its name, the
    line (1-based) and what was expected there."""

    def __init__(self, path, line, message):
        super().__init__("%s:%d: %s" % (path, line, message))
        self.path, self.line, self.message = path, line, message


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
        # the functions whose calls are a lower bound (throttled, or the
        # visits of a function without hooks): shown ">=" (issue 38)
        self.lower_bounds = set()

    def add(self, pf):
        """Adds a file (PathFile) or a Tree."""
        if isinstance(pf, Tree):
            items = [(k, v[0], v[1], v[2]) for k, v in pf.costs.items()]
            self.files += pf.files
            self.pids |= pf.pids
            self.threads |= pf.threads
            self.estimated |= pf.estimated
            self.lower_bounds |= pf.lower_bounds
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
    name, throttled = None, set()
    for d in got["desc"]:
        t, _, v = d.partition(":")
        if t.strip() == DESC_THREAD_NAME:
            name = v.strip()
        elif t.strip() == DESC_THROTTLED:
            throttled = throttled_names(v.strip())
    return got.get("pid"), got.get("thread"), got.get("part"), name, throttled


def throttled_names(value):
    """The functions a "desc: Throttled: N functions (...): a, b" line
    lists (an empty set: none); a comma inside a C++ name's brackets or
    parameters is not a separator."""
    if not value:
        return set()
    _, sep, names = value.partition("): ")
    if not sep:
        return set()
    names = names.split(" (and more:")[0]
    out, depth, cur = set(), 0, []
    for ch in names:
        if ch in "<([":
            depth += 1
        elif ch in ">)]" and depth:
            depth -= 1
        if ch == "," and depth == 0:
            out.add("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.add("".join(cur).strip())
    return {n for n in out if n}


def part_header(pf):
    """(the thread's name (pthread_setname_np) or None, the throttled
    functions) as the path file's Callgrind part gives them in its desc:
    lines: a path file has neither."""
    for cand in naming.callgrind_names_of(pf.path):
        try:
            pid, thread, part, name, throttled = _callgrind_header(cand)
        except OSError:
            continue
        if (pid, thread, part) == (str(pf.pid), str(pf.thread), str(pf.part)):
            return name, throttled
    return None, set()


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
        name, throttled = part_header(pf)
        t.lower_bounds |= throttled
        if names is None:
            # the latest part's name: a thread may name itself late
            t.thread_name = name or t.thread_name
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


# A frame whose place under its caller is an estimate (a stack made from
# arcs, estimate.py: the function has several callers, its time split
# among them in their shares) is drawn with this after its name.
ESTIMATE_MARK = " ~"


def shown(name, marked):
    return name + ESTIMATE_MARK if name in marked else name


def default_run_name(pf):
    """A path file's run (its name without -<NN>, and without .<part> when
    the name has its part: the header's part, right after the pid)."""
    base = re.sub(r"-[0-9]+\Z", "", pf.path)
    tail = ".%d" % pf.part
    if base.endswith(tail) and base[:-len(tail)].endswith(str(pf.pid)):
        base = base[:-len(tail)]
    return base
