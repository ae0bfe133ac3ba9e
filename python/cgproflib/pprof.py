"""`cgprof pprof`: a run's profile as pprof's profile.proto (gzipped), the
format `go tool pprof`, Grafana Pyroscope, Parca and the cloud profilers
read (github.com/google/pprof, proto/profile.proto).

    cgprof pprof [-o FILE] WHAT...

One sample per call path of each part of each thread: the path files'
paths (CGPROF_PATHS=1, exact), else stacks estimated from the part's arcs
(estimate.py), each sample on which a function has its place estimated
(it has several callers) labelled stack=estimated, the others (path
files', or decided by the arcs: every function on the stack has one
caller) stack=exact. Its values, one
per sample type:

    calls           the calls of the path's last function on that path
    self_time       its self time on that path (the default type)
    inclusive_time  its inclusive time on that path
    off_cpu_time    the self time of a path ending in cgprof_off_cpu
                    (CGPROF_OFF_CPU=1), 0 elsewhere; only when the run has it

pprof sums a sample's value into its leaf's flat and into every frame's
cum (once per sample), so: calls' flat is each function's calls; self
time's flat is each function's self time and its cum the time with the
function on the stack, which is its inclusive time (a path holds a
function once: recursion is folded); inclusive time's flat is each
function's inclusive time (its cum counts nested calls again: no meaning);
off-CPU time's cum is the time each function waited under it.

The proto is written here (a protobuf writer of varints and
length-delimited fields): standard library only.
"""

import gc
import gzip
import os
import re
import sys
import types

from . import cmdline, elf, estimate, flame, messages, naming, paths, reader, summary
from ._shared import DESC_THREAD_NAME, DESC_THROTTLED

PROG = "cgprof pprof"
USAGE = "usage: cgprof pprof [-o FILE] WHAT..."
OFF_CPU = "cgprof_off_cpu"


class UsageError(Exception):
    pass


# ---- protobuf's wire format ---------------------------------------------------------
# A message is its fields one after another, each a key (field number << 3
# | wire type) and its value: 0, a varint (7 bits a byte, low bits first,
# the high bit set on every byte but the last); 2, length-delimited (a
# varint length, then the bytes: strings, messages, packed numbers). A
# field at its default (0, "", empty) is left out, as proto3 writes it.

def _varint(n):
    if n < 0:
        n &= (1 << 64) - 1     # int64's negative numbers: ten bytes, two's complement
    out = bytearray()
    while n > 0x7f:
        out.append((n & 0x7f) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# ids, small counts and field keys are most of a profile's varints: those
# below 2^14 made once (a 65,536-path file's samples took a third of the
# time in varint() before)
_SMALL = [_varint(n) for n in range(1 << 14)]


def varint(n):
    return _SMALL[n] if 0 <= n < 16384 else _varint(n)


def field_int(num, n):
    return varint(num << 3) + varint(n) if n else b""


def field_bytes(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_packed(num, values):
    return field_bytes(num, b"".join(varint(v) for v in values)) if values else b""


def message(*fields):
    return b"".join(fields)


class Strings:
    """The profile's string table: index 0 is ""; each string once."""

    def __init__(self):
        self.index = {"": 0}
        self.table = [""]

    def __call__(self, s):
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.table)
            self.table.append(s)
        return i


def _utf8(s):
    # names are kept as their bytes when they are not UTF-8
    # (surrogateescape): proto3 strings are UTF-8
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode("utf-8")


# ---- what the files say ---------------------------------------------------------------

class Part:
    """One part of one thread: its paths with [calls, inclusive, self]
    (root first), exact (path file) or estimated (from the arcs)."""

    def __init__(self, pid, thread, part, costs, exact, event, cmd, files):
        self.pid, self.thread, self.part = pid, thread, part
        self.costs = costs
        self.exact = exact
        self.event = event
        self.cmd = cmd
        self.files = files
        self.estimated = set()     # estimated parts: the functions with several callers
        self.name = None           # the thread's name
        self.latency = {}          # function -> latency.Histogram (CGPROF_LATENCY's '#lat:' lines)
        # the functions whose calls are a lower bound (throttled; visits
        # of a function without hooks): their samples labelled calls=lower_bound
        self.lower_bounds = set()


class Symbols:
    """Per process, what its Callgrind files say of each function name:
    the object (ob=), the source file (fl=) and the line of its entry (the
    calls= lines' target position). A name in two objects (two static
    functions of one name) is one function to the path files, which name
    functions only: the one with the most self time is taken."""

    def __init__(self):
        self.where = {}     # (pid, name) -> {(object, file): self cost}
        self.line = {}      # (pid, object, file, name) -> entry line
        self.inlined = {}   # pid -> {(caller, callee)}: calls the compiler inlined ('#inlined:')

    def add(self, prof, pid):
        self.inlined.setdefault(pid, set()).update(prof.inlined)
        ev = prof.event_index("ns") if "ns" in prof.events else 0
        for key, fn in prof.functions.items():
            w = self.where.setdefault((pid, key.name), {})
            cost = sum(c.costs[ev] for c in fn.cost_lines if ev < len(c.costs))
            w[(key.object, key.file)] = w.get((key.object, key.file), 0) + cost
        for call in prof.calls:
            k = call.callee
            self.where.setdefault((pid, k.name), {}).setdefault((k.object, k.file), 0)
            if call.target_line:
                self.line.setdefault((pid, k.object, k.file, k.name), call.target_line)

    def of(self, pid, name):
        """(object, file, line) of a function; "" and 0 where unknown."""
        w = self.where.get((pid, name))
        if not w:
            return "", "", 0
        (obj, fl), _ = max(w.items(), key=lambda kv: (kv[1], kv[0]))
        return obj, fl, self.line.get((pid, obj, fl, name), 0)


def _known(s):
    # "???": the format's unknown object or file
    return "" if s in ("???", "") else s


def _header_ints(prof):
    return tuple(v if v is not None else 0 for v in (prof.pid, prof.thread, prof.part))


def _key(path, pid, thread, part):
    return (os.path.realpath(os.path.dirname(path) or "."), pid, thread, part)


def gather(whats):
    """The parts of the WHATs' files: (parts, symbols, problems, missing):
    [Part] sorted by pid, thread and part; Symbols; [message] of files that
    cannot be read or are malformed; [WHAT] with neither path files nor
    Callgrind files."""
    pfiles, no_paths = paths.collect(whats)
    cfiles, no_callgrind = summary.collect(whats)
    missing = [w for w in no_paths if w in {what for what, _ in no_callgrind}]
    # a path file's own Callgrind part, for its symbols and thread name
    for p in pfiles:
        for cand in naming.callgrind_names_of(p):
            if os.path.isfile(cand) and cand not in cfiles:
                cfiles.append(cand)
    problems = []
    pfs, bad = paths.load(pfiles)
    problems += [why for _, why in bad]
    profs = []
    for path in cfiles:
        try:
            prof = reader.load(path)
        except OSError as e:
            problems.append("cannot read %s: %s" % (path, e.strerror or e))
            continue
        if prof.violations:
            problems.append(str(prof.violations[0]))
            continue
        profs.append(prof)
    if problems:
        return [], Symbols(), problems, missing
    symbols = Symbols()
    names = {}       # (pid, thread) -> (part, name): the latest part's name
    parts = {}
    for prof in profs:
        pid, thread, part = _header_ints(prof)
        symbols.add(prof, pid)
        name = prof.desc_value(DESC_THREAD_NAME)
        if name and ((pid, thread) not in names or names[(pid, thread)][0] <= part):
            names[(pid, thread)] = (part, name)
    for pf in pfs:
        parts[_key(pf.path, pf.pid, pf.thread, pf.part)] = Part(
            pf.pid, pf.thread, pf.part, {n: [c, i, s] for n, c, i, s in pf.paths}, True, pf.event, pf.cmd,
            [pf.path])
    for prof in profs:
        pid, thread, part = _header_ints(prof)
        key = _key(prof.path, pid, thread, part)
        if key in parts:
            parts[key].files.append(prof.path)
            parts[key].latency = prof.latency
            parts[key].lower_bounds = paths.throttled_names(prof.desc_value(DESC_THROTTLED))
            continue
        # no path file: the part's stacks estimated from its arcs
        ts, bad = estimate.threads_of_files([prof.path])
        if bad:
            problems += [why for _, why in bad]
            continue
        for t in ts:
            tree = estimate.tree_of(t)
            p = parts[key] = Part(pid, thread, part, tree.costs, False, tree.event, tree.cmd, [prof.path])
            p.estimated = tree.estimated
            p.lower_bounds = tree.lower_bounds
            p.latency = prof.latency
    out = sorted(parts.values(), key=lambda p: (p.pid, p.thread, p.part, p.files[0]))
    for p in out:
        p.name = names.get((p.pid, p.thread), (0, None))[1]
    return out, symbols, problems, missing


# ---- the profile ------------------------------------------------------------------------

def _clock(files):
    """(period type, period) of the Callgrind files' clock: sampled CPU
    time every N ns, else wall-clock time, every nanosecond counted."""
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                for i, line in enumerate(f):
                    if line.startswith("desc: Clock:"):
                        m = re.search(r"sampled.* every ([0-9]+) ns", line)
                        return ("cpu", int(m.group(1))) if m else ("wall", 1)
                    if i > 200 or line.startswith(("fn=", "ob=", "fl=")):
                        break
        except OSError:
            pass
    return "wall", 1


def build(parts, symbols, mtimes=None):
    """The profile (uncompressed profile.proto bytes) of [Part]."""
    s = Strings()
    event = next((p.event for p in parts if p.event), "ns")
    ns = event == "ns"
    unit = "nanoseconds" if ns else "count"
    # a value named by the event when it is not time (Valgrind's Ir)
    tname = (lambda w: w + "_time") if ns else (lambda w: "%s_%s" % (w, event))
    off_cpu = ns and any(names[-1] == OFF_CPU and c[2] for p in parts for names, c in p.costs.items())
    types = [("calls", "count"), (tname("self"), unit), (tname("inclusive"), unit)]
    if off_cpu:
        types.append(("off_cpu_time", "nanoseconds"))
    # CGPROF_LATENCY: a sample per function and bucket of its calls'
    # inclusive times, its calls in latency_calls, labelled with the
    # bucket's middle (latency, ns): `-tags -sample_index=latency_calls
    # -focus=FN` draws the function's distribution
    latency = ns and any(p.latency for p in parts)
    if latency:
        types.append(("latency_calls", "count"))
    out = [field_bytes(1, message(field_int(1, s(t)), field_int(2, s(u)))) for t, u in types]

    mappings, functions, locations = {}, {}, {}
    loc_of = {}

    def mapping_id(obj):
        if not obj:
            return 0
        m = mappings.get(obj)
        if m is None:
            m = mappings[obj] = (len(mappings) + 1, elf.gnu_build_id(obj) or "")
        return m[0]

    def location(pid, chain):
        """The location of a frame and the calls inlined into it (chain:
        names, the frame's function first, each inlined into the one
        before): one line per function, innermost first, as pprof has an
        inlined frame; in the frame's object."""
        k = (pid, chain)
        lid = loc_of.get(k)
        if lid is None:
            lines = []
            for name in chain:
                obj, fl, line = symbols.of(pid, name)
                fl = _known(fl)
                fkey = (name, fl, line)
                fid = functions.get(fkey)
                if fid is None:
                    fid = functions[fkey] = len(functions) + 1
                lines.append((fid, line))
            obj = _known(symbols.of(pid, chain[0])[0])
            lkey = (mapping_id(obj), tuple(reversed(lines)))
            lid = locations.get(lkey)
            if lid is None:
                lid = locations[lkey] = len(locations) + 1
            loc_of[k] = lid
        return lid

    def frames(pid, names):
        """A path's locations, leaf first: a call the compiler inlined
        (CGPROF_INLINED=count's '#inlined:' pairs) is a line of its caller's
        location, not a frame of its own."""
        inl = symbols.inlined.get(pid, ())
        chains = []
        for i, n in enumerate(names):
            if i and (names[i - 1], n) in inl:
                chains[-1].append(n)
            else:
                chains.append([n])
        return [location(pid, tuple(c)) for c in reversed(chains)]

    # the program's own object first: pprof takes the first mapping for
    # the main binary ("File:" in its reports), which would otherwise be
    # whichever object a first sample named (libc's, for main's caller)
    for p in parts:
        obj = _known(symbols.of(p.pid, "main")[0])
        if obj:
            mapping_id(obj)
            break
    key_thread, key_tid, key_pid, key_part, key_stack, key_calls = (
        s(k) for k in ("thread", "tid", "pid", "part", "stack", "calls"))
    bounds = set()
    unit_id = s("id")
    key_latency, unit_ns = s("latency"), s("nanoseconds")
    nsamples = 0
    no_self = 0      # samples of a path with calls or time but no self time
    for p in parts:
        labels = []
        if p.name:
            labels.append(field_bytes(3, message(field_int(1, key_thread), field_int(2, s(p.name)))))
        # a numeric label has a unit: one whose number is 0 (thread 00,
        # the threads that ended, merged) and no unit is read as no label
        labels += [field_bytes(3, message(field_int(1, k), field_int(3, n), field_int(4, unit_id)))
                   for k, n in ((key_tid, p.thread), (key_pid, p.pid), (key_part, p.part))]
        labels = b"".join(labels)
        # exact: the path files' stacks, and those the arcs decide (no
        # function on them with several callers: estimate.py)
        stack_label = {v: field_bytes(3, message(field_int(1, key_stack), field_int(2, s(v))))
                       for v in ("exact", "estimated")}
        bound_label = field_bytes(3, message(field_int(1, key_calls), field_int(2, s("lower_bound"))))
        for names, (calls, incl, self_) in p.costs.items():
            values = [calls, self_, incl]
            if off_cpu:
                values.append(self_ if names[-1] == OFF_CPU else 0)
            if latency:
                values.append(0)
            if not any(values):
                continue
            no_self += 0 if self_ else 1
            locs = frames(p.pid, names)
            est = not p.exact and any(n in p.estimated for n in names)
            bound = bound_label if calls and names[-1] in p.lower_bounds else b""
            bounds |= {names[-1]} if bound else set()
            out.append(field_bytes(2, message(field_packed(1, locs), field_packed(2, values), labels,
                                              stack_label["estimated" if est else "exact"], bound)))
            nsamples += 1
        for fn, h in sorted(p.latency.items()):
            for lo, n in sorted(h.buckets.items()):
                if not n:
                    continue
                mid = int(h.middle(lo))
                values = [0, 0, 0] + ([0] if off_cpu else []) + [n]
                out.append(field_bytes(2, message(
                    field_packed(1, [location(p.pid, (fn,))]), field_packed(2, values), labels,
                    field_bytes(3, message(field_int(1, key_latency), field_int(3, mid), field_int(4, unit_ns))))))
                nsamples += 1
    inline_frames = any(len(lines) > 1 for _, lines in locations)
    for obj, (mid, build_id) in mappings.items():
        out.append(field_bytes(3, message(field_int(1, mid), field_int(5, s(obj)), field_int(6, s(build_id)),
                                          field_int(7, 1), field_int(8, 1), field_int(9, 1),
                                          field_int(10, 1 if inline_frames else 0))))
    for (mid, lines), lid in locations.items():
        out.append(field_bytes(4, message(field_int(1, lid), field_int(2, mid),
                                          *(field_bytes(4, message(field_int(1, fid), field_int(2, line)))
                                            for fid, line in lines))))
    for (name, fl, line), fid in functions.items():
        out.append(field_bytes(5, message(field_int(1, fid), field_int(2, s(name)), field_int(3, s(name)),
                                          field_int(4, s(fl)), field_int(5, line))))
    # duration: the longest thread's time (the main thread's: the run's);
    # time_nanos its start, counted back from when the last file was
    # written (the files hold no clock time)
    per_thread = {}
    for p in parts:
        k = (p.pid, p.thread)
        per_thread[k] = per_thread.get(k, 0) + sum(c[2] for c in p.costs.values())
    files = [f for p in parts for f in p.files]
    period_type, period = _clock([f for f in files if not paths.is_path_file(f)]) if ns else (event, 1)
    # a duration of wall-clock time only: sampled CPU time is not one
    duration = max(per_thread.values(), default=0) if period_type == "wall" else 0
    if mtimes is None:
        mtimes = [os.stat(f).st_mtime_ns for f in files if os.path.exists(f)]
    exact = all(p.exact for p in parts)
    cmds = sorted({(p.pid, p.cmd) for p in parts if p.cmd})
    comments = ["cgprof: %s" % "; ".join("%s (pid %d)" % (c, pid) for pid, c in cmds)] if cmds else []
    comments.append("%d threads, %d parts; one sample per call path of each part (labels thread, tid, pid, part, "
                    "stack)" % (len(per_thread), len(parts)))
    if exact:
        comments.append("call paths exact: the path files' (CGPROF_PATHS=1)")
    else:
        marked = sorted(set().union(*(p.estimated for p in parts if not p.exact)))
        comments.append("%s stacks estimated from the arcs (label stack=estimated): each function's self time and "
                        "calls are the files', its place under a caller is estimated when it has several callers%s; "
                        "a run with CGPROF_PATHS=1 gives every call path exactly" %
                        ("some" if any(p.exact for p in parts) else "all",
                         " (%d here: %s%s)" % (len(marked), ", ".join(marked[:20]), ", ..." if len(marked) > 20 else "")
                         if marked else ""))
    comments.append("sample types: calls (flat: calls per function); %s (flat: self time, cum: time on the stack, "
                    "i.e. inclusive); %s (flat: inclusive time; its cum counts nested calls again)%s" %
                    (tname("self"), tname("inclusive"),
                     "; off_cpu_time (cgprof_off_cpu's self time: cum, the time waited under each function)"
                     if off_cpu else "") + ("; latency_calls (CGPROF_LATENCY: a sample per function and bucket of "
                                            "its calls' inclusive times, labelled latency = the bucket's middle, "
                                            "within 12.5%; -tags -sample_index=latency_calls -focus=FN)"
                                            if latency else ""))
    if no_self:
        # what -traces shows, by the default type: a path whose time is all
        # its callees' is a sample of self time 0, kept for its calls and
        # inclusive time (leaving it out would lose them)
        comments.append("samples of %s 0 (%d of %d here, in -traces): call paths whose time is all their callees' "
                        "(a caller's frame with no time of its own), kept for their calls and inclusive time: "
                        "-sample_index=calls or -sample_index=%s shows them"
                        % (tname("self"), no_self, nsamples, tname("inclusive")))
    if bounds:
        b = sorted(bounds)
        comments.append("calls that are a lower bound (a throttled function's, counted until it was throttled; the "
                        "visits of a function without hooks): %d functions, their samples labelled "
                        "calls=lower_bound (-tags; -tagignore=calls=lower_bound leaves them out): %s%s"
                        % (len(b), ", ".join(b[:20]), ", ..." if len(b) > 20 else ""))
    if mtimes:
        out.append(field_int(9, max(mtimes) - duration))
    out.append(field_int(10, duration))
    if ns:
        out.append(field_bytes(11, message(field_int(1, s(period_type)), field_int(2, s("nanoseconds")))))
        out.append(field_int(12, period))
    for c in comments:
        out.append(field_int(13, s(c)))
    out.append(field_int(14, s(tname("self"))))
    # the string table last: every index above is in it
    out += [field_bytes(6, _utf8(t)) for t in s.table]
    return b"".join(out), nsamples


def write(path, data):
    """data gzipped into path, through a temporary renamed in place."""
    def gz(f):
        # level 6, zlib's default: 9 took three times as long for a file a
        # few percent smaller
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=6) as z:
            z.write(data)
    flame._write(path, gz, binary=True)


def default_out(parts):
    """pprof.<pid>.pb.gz where `cgprof flame` writes flame.<pid>: the run's
    name with pprof for out (or paths), no leading callgrind., in its
    files' directory."""
    p = parts[0]
    f = p.files[0]
    prefix = naming.flame_prefix_of(paths.default_run_name(types.SimpleNamespace(path=f, pid=p.pid, part=p.part))) \
        if p.exact else \
        estimate.flame_prefix_of(f, p.pid)
    d, b = os.path.split(prefix)
    at = naming._last_word(b, "flame")
    return os.path.join(d, (b[:at] + "pprof" + b[at + 5:] if at >= 0 else "pprof." + b) + ".pb.gz")


# ---- the command --------------------------------------------------------------------------

def help_text():
    return "\n".join([
        USAGE, "",
        "Writes a run's profile as pprof's profile.proto, gzipped: the file `go tool pprof`, Grafana",
        "Pyroscope, Parca and the cloud profilers read. One sample per call path of each part of each",
        "thread, from the path files (CGPROF_PATHS=1: exact), else from the Callgrind files with the stacks",
        "estimated from the arcs, as `cgprof flame` draws them (such samples are labelled",
        "stack=estimated, and the profile's comment says so).",
        "",
        "Sample types (a sample's value goes to its leaf's flat and to every frame's cum):",
        "  calls           calls of the path's function on that path: flat is each function's calls",
        "                  (its cum, the calls at and under it, means little)",
        "  self_time       self time on the path (the default): flat is each function's self time, cum",
        "                  the time it was on the stack (its inclusive time, recursion counted once)",
        "  inclusive_time  inclusive time of the path's function: flat is each function's inclusive",
        "                  time; its cum counts nested calls again (no meaning)",
        "  off_cpu_time    where the run recorded it (CGPROF_OFF_CPU=1): the time of cgprof_off_cpu,",
        "                  whose cum is the time each function waited under it",
        "Labels per sample: thread (its name), tid (the file's thread number), pid, part, stack",
        "(exact or estimated). Locations carry their object (mapping, with its GNU build id),",
        "function, source file and the function's first line.",
        "",
        "WHAT is a run's prefix (callgrind.out.1234: its path files and Callgrind files), a file or a",
        "directory, as for cgprof flame. Parts without a path file are estimated, each on its own.",
        "",
        "  go tool pprof -top -sample_index=calls FILE     go tool pprof -http=: FILE",
        "  profilecli upload FILE  (Grafana Pyroscope; or POST it to /ingest?name=app&format=pprof)",
        "",
        "Options:",
        "  -o, --out FILE  the file to write (default: pprof.<pid>.pb.gz where cgprof flame writes",
        "                  flame.<pid>: in the files' directory, the run's name with pprof for out)",
        "  -h, --help      this text",
        "",
        "Exit status: 0; 1 if a file cannot be read or is malformed, or the file cannot be written; 2 on",
        "a usage error or when WHAT has neither path files nor Callgrind files.",
    ]) + "\n"


def parse_args(argv):
    """(out, whats), or (None, None) for --help; UsageError."""
    ap = cmdline.Parser("cgprof pprof", UsageError)
    ap.add_argument("-o", "--out")
    ap.add_argument("whats", nargs="*")
    a = ap.parse(argv)
    if a.help:
        return None, None
    if a.out is not None and not a.out:
        raise UsageError("-o needs a file name")
    if not a.whats:
        raise UsageError("nothing to read: give a run's prefix, files or a directory\n" + USAGE)
    return a.out, a.whats


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    gc.disable()   # many tuples, no cycles (as in flame.flame_main)

    err = messages.to_stderr(PROG)
    try:
        out, whats = parse_args(argv)
    except UsageError as e:
        err(str(e))
        return 2
    if whats is None:
        sys.stdout.write(help_text())
        return 0
    parts, symbols, problems, missing = gather(whats)
    if missing:
        for what in missing:
            err("no path files and no Callgrind file for %s (looked for %s, and for Callgrind files named %s, "
                "%s.* and %s-*)" % (what, paths.looked_for(what), what, what, what))
        return 2
    if problems:
        for why in problems:
            err(why)
        return 1
    events = sorted({p.event for p in parts if p.event})
    if len(events) > 1:
        err("the files' events differ (%s): times in different units cannot be one profile" % ", ".join(events))
        return 1
    if out is None:
        if len({p.pid for p in parts}) > 1 or len({os.path.dirname(p.files[0]) for p in parts}) > 1:
            err("the files are of %d processes (pids %s): name the file to write with -o FILE" %
                (len({p.pid for p in parts}), " ".join(str(pid) for pid in sorted({p.pid for p in parts}))))
            return 2
        out = default_out(parts)
    data, _ = build(parts, symbols)
    try:
        write(out, data)
    except OSError as e:
        err("cannot write %s: %s" % (e.filename or out, e.strerror or e))
        return 1
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
