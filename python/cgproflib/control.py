"""cgprof-control: look at and control programs running with libcgprof.so
preloaded, in the spirit of Valgrind's callgrind_control.

    cgprof-control [TARGET...]            list the processes with the runtime
    cgprof-control -d [REASON] [TARGET...]  dump a part now, print the files
    cgprof-control -z [TARGET...]         zero the costs
    cgprof-control -i on|off [TARGET...]  resume / pause collection
    cgprof-control -b [-e] [TARGET...]    each thread's stack, innermost first
    cgprof-control -e [EVENTS] [TARGET...] each thread's costs so far
    cgprof-control -s [TARGET...]         counters: calls, memory, parts, repairs

A TARGET is a pid or a program's name; none: every process of the user that
has the runtime. The pid of the `cgprof` launcher stands for its program.

It talks to the runtime as docs/internals/control-protocol.md says: it reads
<dir>/<pid>.status, writes <dir>/<pid>.cmd, sends the dump signal named in
the status file and waits for the status file to say it handled the
command (a question's answer is then in <dir>/<pid>.reply), all under an
exclusive flock on <dir>/<pid>.lock. <dir> is $CGPROF_CONTROL_DIR, else
/tmp/cgprof-<uid>, used only if it is a real directory owned by the user and
not writable by group or others (as the runtime checks it).

The protocol is cgproflib.protocol's, the processes as /proc shows them
cgproflib.processes'; this module is the command (its options, targets,
listing and what it prints). The `cgprof-control` command is an entry point of this module
(scripts/command.in). Standard library only, and little of it: the
interpreter's own start is most of what `cgprof-control -d` costs, and the
imports add a couple of milliseconds to it (`subprocess`, through rules,
and the signal module's enums are imported only on the paths that need
them; annotations are never evaluated, so `typing` is not imported at
all). The command line is argparse's (cgproflib.cmdline), about 4 ms of
imports more than `re`, which the option table imports already.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import cmdline
from .processes import (RUNTIME_NAME, ControlError, Undumpable, has_runtime, is_launcher, names_process,
                        process_argv, process_command, process_names, process_uid, profiled_descendants)
from .protocol import (DEFAULT_TIMEOUT, ControlDir, NoControlDir, Status, Thread, UsageError, _num, _pairs,
                       ask, check_reason, command_line, find_control_dir, parse_counters, parse_stacks,
                       read_status, remove_stale, send_request, status_name)
# what users and tests of the protocol and the processes import from here
from .processes import maps_mention_runtime, name_matches  # noqa: F401
from .protocol import control_dir_path, parse_status, signal_number, unescape  # noqa: F401

PROG = "cgprof-control"
EVENTS = ("ns", "calls")  # what -e shows: time (the files' event) and calls

USAGE = """\
usage: cgprof-control [-h] [--version] [--timeout S]
                      [-d [REASON] | --dump[=REASON] | -z | -i on|off | [-b] [-e [EVENTS]] [-s]]
                      [PID | PROGRAM]..."""

# What --help and the man page (scripts/gen_cgprof.py control-man) say, in
# one place: paragraphs of flowing text, and the options with theirs.
DESCRIPTION = ("Looks at and controls programs running with libcgprof.so preloaded, as callgrind_control does "
               "for programs run by Callgrind.")
TARGETS = ("Targets: a PID, or a PROGRAM's name, matched against the first word of each process's command: "
           "the whole of it, its last component, or its last components (\"server\", \"examples/server\" and "
           "\"./server\" name ./examples/server). No target: every process of yours that has the runtime and "
           "its status in the control directory. The pid of the cgprof launcher stands for the program it runs "
           "(said on stderr), so `cgprof ./server &` then `cgprof-control -d $!` works.")
OPTIONS = [
    ("(no option)", "List the processes: pid, threads, parts dumped so far, collecting, dump signal, command."),
    ("-d, --dump [REASON]", "Write a part now, wait until it is on disk, and print the files written, one per "
                            "line (their names carry the pid). REASON goes in \"desc: Trigger:\" (default "
                            "\"cgprof-control\"). A REASON right after -d is taken as the reason unless it is a "
                            "number, as callgrind_control takes it: -d -- NAME dumps program NAME with the default "
                            "reason."),
    ("--dump=REASON", "The same."),
    ("-z, --zero", "Zero the costs collected so far, without writing."),
    ("-i, --instr on|off", "Resume (on) or pause (off) collection; also --instr=on."),
    ("-b, --back", "Each thread's stack of calls in progress, innermost first, as callgrind_control -b shows "
                   "it, with names: [level] function (calls of it from that caller since the last dump or zero, "
                   "this one included); \"at FILE:LINE\" is the call the frame is making, \"in FILE:LINE\" "
                   "where the innermost function begins. With -e, how long each call has run so far. The "
                   "threads keep running: a frame that changed while it was read is marked *; of a stack "
                   "deeper than 128, the 96 innermost and 32 outermost frames are shown."),
    ("-e [EVENTS]", "Each thread's costs since the last dump or zero (what the next part would hold), as "
                    "callgrind_control -e shows them: EVENTS, comma-separated, among ns (time) and calls "
                    "(default: both)."),
    ("-s, --stat", "Counters: threads, calls since the start, the memory of the tables, parts written and "
                   "requests served, repairs (see docs/internals/design.md, \"Repairs\"); one line per thread."),
    ("--timeout S", "Seconds to wait for each program to handle a request (default 30)."),
    ("--version", "Print cgprof's version."),
    ("-h, --help", "This text."),
]
NOTES = ("-b, -e and -s go together; -d, -z and -i go alone. The control directory is $CGPROF_CONTROL_DIR, else "
         "/tmp/cgprof-<uid>; the program must have been started with the same one. A request is sent with the "
         "signal the program's status file names (SIGUSR1 unless CGPROF_SIGNAL says otherwise); "
         "docs/internals/control-protocol.md is the protocol.")
EXIT = ("Exit status: 0 done, 1 failed for at least one process (a message on stderr for each; the others are "
        "done), 2 usage error.")


def _fill(text: str, width: int, indent: str = "", first: str = "") -> list:
    """Words of text in lines of at most width (textwrap's job, without
    its import: this command starts in milliseconds)."""
    lines, line = [], first
    for word in text.split():
        if len(line) + 1 + len(word) > width and line.strip():
            lines.append(line)
            line = indent
        line += ("" if not line.strip() else " ") + word
    lines.append(line)
    return lines


def help_text() -> str:
    out = [USAGE, ""] + _fill(DESCRIPTION, 79) + [""] + _fill(TARGETS, 79) + [""]
    for opt, text in OPTIONS:
        if len(opt) < 20:
            out += _fill(text, 79, " " * 23, "  %-20s" % opt)
        else:
            out += ["  " + opt] + _fill(text, 79, " " * 23, " " * 23)
    return "\n".join(out + [""] + _fill(NOTES, 79) + [""] + _fill(EXIT, 79))


class ProcessInfo:
    def __init__(self, pid: int, cmd: str, status: Status | None, problem: str | None = None):
        self.pid = pid
        self.cmd = cmd
        self.status = status
        self.problem = problem   # why there is no status, if there is none

    def __repr__(self):
        return "ProcessInfo(%r)" % self.__dict__


def list_processes(cdir: ControlDir | None, cdir_problem: str | None = None,
                   clean: bool = True, pids: list | None = None) -> list:
    """The running processes of the user that have the runtime loaded, with
    their status when the control directory has it. cdir None: no usable
    control directory, cdir_problem says why. clean: remove the status files
    of pids that are gone. pids: look at these only."""
    if pids is None:
        pids = sorted(int(d) for d in os.listdir("/proc") if d.isdigit())
    me, uid = os.getpid(), os.geteuid()
    found = []
    for pid in pids:
        if pid == me:
            continue
        try:
            if os.stat("/proc/%d" % pid).st_uid != uid and process_uid(pid) != uid:
                continue            # another user's: its control files are not ours
        except OSError:
            continue
        try:
            if not has_runtime(pid):
                continue
        except Undumpable:
            # the user's own, undumpable: listed if it has a status file
            if cdir is None or not cdir.exists(status_name(pid)):
                continue
        except (ProcessLookupError, PermissionError, OSError):
            continue
        status, problem = None, None
        if cdir is None:
            problem = cdir_problem or "no control directory"
        else:
            try:
                status = read_status(cdir, pid)
                if status is None:
                    problem = "no %s: no instrumented code loaded, or another CGPROF_CONTROL_DIR" % (
                        cdir.file(status_name(pid)))
            except ControlError as e:
                problem = str(e)
        cmd = process_command(pid) or (status.cmd if status else "") or "?"
        found.append(ProcessInfo(pid, cmd, status, problem))
    if cdir is not None and clean:
        try:
            remove_stale(cdir)
        except OSError:
            pass
    return found


def printable(text: str) -> str:
    """text on one line: control characters (a newline in an argument) as \\xHH."""
    return "".join("\\x%02x" % ord(c) if ord(c) < 0x20 or c == "\x7f" else c for c in text)


def format_listing(procs: list) -> str:
    lines = ["%-8s %7s %5s  %-10s  %-7s %s" % ("PID", "THREADS", "PARTS", "COLLECTING", "SIGNAL", "COMMAND")]
    for p in procs:
        if p.status is not None:
            s = p.status
            lines.append("%-8d %7d %5d  %-10s  %-7s %s" % (p.pid, s.threads, s.parts, printable(s.collecting),
                                                            printable(s.signal), printable(p.cmd)))
        else:
            lines.append("%-8d %7s %5s  %-10s  %-7s %s   (control files unavailable: %s)"
                         % (p.pid, "-", "-", "-", "-", printable(p.cmd), printable(p.problem or "")))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Targets: pids and program names

class Target:
    """A process to act on: its pid, and why it was chosen when it was not
    named by its own pid (the launcher's pid stood for it); by_pid: named
    by a pid (its own or its launcher's), not found by a name or as one of
    all."""

    def __init__(self, pid: int, note: str | None = None, by_pid: bool = True):
        self.pid = pid
        self.note = note
        self.by_pid = by_pid


def check_pid(pid: int) -> None:
    """ControlError unless pid runs, is the user's and has the runtime
    (an undumpable process of the user's: its status file decides, later)."""
    try:
        if has_runtime(pid):
            return
        why = "process %d does not have %s loaded" % (pid, RUNTIME_NAME)
    except ProcessLookupError:
        raise ControlError("no process %d (it is gone)" % pid)
    except Undumpable:
        return
    except PermissionError:
        raise ControlError("cannot read /proc/%d/maps: permission denied (another user's process?)" % pid)
    kids = profiled_descendants(pid)
    if kids:
        why += " (process%s %s under it: give %s)" % (
            "es" if len(kids) > 1 else "", ", ".join(str(k) for k in kids), "one of those" if len(kids) > 1
            else "that pid")
    raise ControlError(why)


def pid_targets(pid: int) -> list:
    """The process(es) a pid stands for: itself when it has the runtime;
    for the cgprof launcher's pid, the program(s) it runs."""
    try:
        if has_runtime(pid):
            return [Target(pid)]
        if is_launcher(process_argv(pid)):
            kids = profiled_descendants(pid)
            if kids:
                return [Target(k, "process %d is the cgprof launcher: acting on its program, process %d (%s)"
                               % (pid, k, printable(process_command(k)) or "?")) for k in kids]
            raise ControlError("process %d is the cgprof launcher, but no program under it has %s loaded "
                               "(yet, or any more)" % (pid, RUNTIME_NAME))
    except (ProcessLookupError, PermissionError):
        pass
    check_pid(pid)          # says why not
    return [Target(pid)]    # (it came to have the runtime meanwhile)


def resolve_targets(names: list, procs: list) -> list:
    """The processes the command line's targets (pids and names) stand for,
    in order, each once; all of procs (the processes with the runtime)
    when there is none. ControlError for a target that stands for none."""
    if not names:
        return [Target(p.pid, by_pid=False) for p in procs]
    out: list = []
    seen: set = set()
    for name in names:
        if name.isdigit():
            found = pid_targets(int(name))
        else:
            found = [Target(p.pid, by_pid=False) for p in procs if names_process(name, process_names(p.pid, p.cmd))]
            if not found:
                raise ControlError("no process named %r has %s loaded" % (name, RUNTIME_NAME))
        for t in found:
            if t.pid not in seen:
                seen.add(t.pid)
                out.append(t)
    return out


# ---------------------------------------------------------------------------
# What -b, -e and -s print

def commas(n: int) -> str:
    return "{:,}".format(n)


def duration(ns: int) -> str:
    """ns as a person reads a duration: 850 ns, 12.3 us, 4.56 ms, 7.89 s."""
    if ns >= 1e9:
        return "%.2f s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.1f us" % (ns / 1e3)
    return "%d ns" % ns


def size(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d bytes" % n


def thread_title(t: Thread) -> str:
    name = (' "%s"' % printable(t.name)) if t.name else ""
    return "Thread %d%s (tid %d)" % (t.number, name, t.tid)


def format_stacks(threads: list, times: bool) -> str:
    """-b: each thread's stack as callgrind_control -b shows one, with the
    places of the calls; times (-e): how long each call has run."""
    out = []
    for t in threads:
        depth = _num(t.words, "depth")
        moved = _num(t.words, "moved")
        head = "  %s: %s in progress, innermost first" % (thread_title(t), "no call" if not depth
                                                           else "1 call" if depth == 1 else "%s calls" % commas(depth))
        if moved:
            head += " (%d of the frames shown changed while being read: marked *)" % moved
        out.append(head)
        gaps = dict(t.omitted)
        width = max((len(duration(f.ns)) for f in t.frames), default=0)
        for i, f in enumerate(t.frames):
            if i in gaps:
                out.append("         ... %s frames not shown ..." % commas(gaps[i]))
            where = ""
            if f.at:
                where = "  at " + printable(f.at)
            elif f.defined:
                where = "  in " + printable(f.defined)
            elif f.object:
                where = "  in " + printable(f.object)
            notes = []
            if "inlined" in f.flags:
                notes.append("inlined")
            if "skipped" in f.flags:
                notes.append("left out by CGPROF_SKIP")
            note = (" [%s]" % ", ".join(notes)) if notes else ""
            mark = "*" if "moved" in f.flags else " "
            took = ("%*s  " % (width, duration(f.ns))) if times else ""
            out.append("  %s[%2d]  %s%s (%s x)%s%s" % (mark, f.level, took, printable(f.function), commas(f.calls),
                                                      note, where))
        out.append("")
    if not threads:
        out.append("  (no thread has made a call yet)")
        out.append("")
    return "\n".join(out) + "\n"


def format_events(threads: list, events: list, paused: bool) -> str:
    """-e: each thread's costs since the last dump or zero, as
    callgrind_control -e shows its per-thread totals."""
    cols = {"ns": ("ns", "ns_part"), "calls": ("calls", "calls_part")}
    rows = [[commas(_num(t.words, cols[e][1])) for e in events] for t in threads]
    widths = [max([len(e)] + [len(r[i]) for r in rows]) for i, e in enumerate(events)]
    out = ["  Totals since the last dump or zero%s:" % (" (collection paused: up to the pause)" if paused else ""),
           "        " + " ".join("%*s" % (w, e) for w, e in zip(widths, events))]
    for t, r in zip(threads, rows):
        out.append("   Th%3d " % t.number + " ".join("%*s" % (w, v) for w, v in zip(widths, r)))
    return "\n".join(out) + "\n\n"


def format_stat(status: Status, process: dict, threads: list) -> str:
    """-s: the process's counters, then one line per thread."""
    def pnum(key):
        v = process.get(key, "")
        return int(v) if v.isdigit() else 0

    repairs = _pairs(process.get("repairs", ""))
    left, unmatched, lost = (_num(repairs, k) for k in ("left", "unmatched", "lost"))
    said = []
    if left:
        said.append("%s frame%s left without exit" % (commas(left), "" if left == 1 else "s"))
    if unmatched:
        said.append("%s exit%s that matched no frame" % (commas(unmatched), "" if unmatched == 1 else "s"))
    if lost:
        said.append("%s call%s not recorded" % (commas(lost), "" if lost == 1 else "s"))
    numbers = " ".join(str(t.number) for t in threads)
    out = [
        "  Threads: %d running, %d of them profiled (numbers %s); %d profiled thread%s ended"
        % (status.threads, pnum("profiled"), numbers or "-", pnum("ended"), "" if pnum("ended") == 1 else "s"),
        "  Events collected: %s (time: %s)" % (process.get("events", "ns"), process.get("time", "?")),
        "  Collecting: %s" % status.collecting,
        "  Calls: %s since the start (running threads and those that ended)" % commas(pnum("calls")),
        "  Parts written: %d; requests served: %d" % (status.parts, status.done),
        "  Memory: %s in the threads' tables, %s kept by the dumps" % (size(pnum("tables")), size(pnum("state"))),
        "  Repairs: %s" % ("; ".join(said) if said else "none") + " (in the parts written and the next one)",
        "",
    ]
    rows = [("Th", "tid", "calls", "depth", "arcs", "tables", "repairs", "name")]
    for t in threads:
        w = t.words
        rows.append(("%d" % t.number, "%d" % t.tid, commas(_num(w, "calls")), "%d" % _num(w, "depth"),
                     commas(_num(w, "arcs")), size(_num(w, "tables")),
                     commas(sum(_num(w, k) for k in ("left", "unmatched", "lost"))), printable(t.name)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        out.append("   " + " ".join("%*s" % (wd, v) for wd, v in zip(widths, r[:-1])) + "  " + r[-1])
    return "\n".join(out) + "\n\n"


# ---------------------------------------------------------------------------
# Command line

class Args:
    def __init__(self, action: str | None = None, arg: str | None = None, targets: list | None = None,
                 timeout: float = DEFAULT_TIMEOUT):
        self.action = action      # None (list), "dump", "zero", "collect", "query", "help", "version"
        self.arg = arg            # the reason, or on/off
        self.targets = [] if targets is None else targets
        self.timeout = timeout
        self.back = False         # -b
        self.events: list | None = None   # -e: the events shown
        self.stat = False         # -s

    @property
    def pid(self) -> int | None:
        """The one target, when it is a pid (the command's old form)."""
        if len(self.targets) == 1 and self.targets[0].isdigit():
            return int(self.targets[0])
        return None


def _event_list(word: str) -> list | None:
    """The events of -e's argument, None if it is no list of them (then it
    is a target)."""
    names = word.split(",")
    return names if all(n in EVENTS for n in names) else None


# The word that stands for "no value" for -d and -e given alone: a NUL,
# which no argument can hold (see _words).
_ALONE = "\0"


class _Action(argparse.Action):
    """The action options, one at a time (-b, -e and -s together): -d,
    --dump, -z, -i, -b, -e, -s; their values judged where they stand."""

    def __call__(self, parser, ns, value, option_string=None):
        kind = self.const
        if ns.action is not None and not (ns.action == kind == "query"):
            raise UsageError("%s: only one of -d, -z, -i, or -b/-e/-s, at a time" % option_string)
        ns.action = kind
        if self.dest == "dump":
            if value == "":
                raise UsageError("--dump= needs a reason")
            ns.arg = None if value in (None, _ALONE) else value
        elif self.dest == "instr":
            if value not in ("on", "off"):
                raise UsageError("%s takes 'on' or 'off', not %r" % (option_string, value))
            ns.arg = value
        elif self.dest == "events":
            ns.events = list(EVENTS) if value == _ALONE else _event_list(value)
            if ns.events is None:
                raise UsageError("-e takes events among %s, comma-separated, not %r" % (", ".join(EVENTS), value))
        else:
            setattr(ns, self.dest, True)


class _Timeout(argparse.Action):
    def __call__(self, parser, ns, v, option_string=None):
        try:
            ns.timeout = float(v)
        except ValueError:
            raise UsageError("--timeout takes a number of seconds, not %r" % v)
        if not (0 < ns.timeout < float("inf")):
            raise UsageError("--timeout takes a number of seconds > 0, not %r" % v)


def _words(argv: list) -> list:
    """argv with the optional values of -d and -e joined to them, as
    callgrind_control takes them: the argument right after -d (or --dump)
    is its REASON unless it is a number or an option (-d 42 dumps pid 42,
    -d -- NAME program NAME); the one after -e its EVENTS when every word
    of it is an event's name (else it is a target). Alone, each is given
    _ALONE, so that argparse never takes the next argument for them."""
    out, i = [], 0
    while i < len(argv):
        w = argv[i]
        i += 1
        if w == "--":
            out += argv[i - 1:]
            break
        if w in ("-d", "--dump", "-e"):
            nxt = argv[i] if i < len(argv) else None
            if nxt is not None and (not nxt.isdigit() and not nxt.startswith("-") if w != "-e"
                                    else _event_list(nxt) is not None):
                out.append(w + "=" + nxt)
                i += 1
            else:
                out.append(w + "=" + _ALONE)
            continue
        out.append(w)
    return out


def parse_args(argv: list) -> Args:
    """The command line, parsed by argparse (cgproflib.cmdline); UsageError."""
    ap = cmdline.Parser(PROG, UsageError, stop_at_help=True)
    ap.set_defaults(action=None, arg=None, back=False, events=None, stat=False, timeout=DEFAULT_TIMEOUT)
    ap.add_argument("--version", action=cmdline.StopAction, dest="version")
    ap.add_argument("-d", "--dump", action=_Action, const="dump")
    ap.add_argument("-z", "--zero", action=_Action, const="zero", nargs=0)
    ap.add_argument("-i", "--instr", action=_Action, const="collect")
    ap.add_argument("-b", "--back", action=_Action, const="query", nargs=0)
    ap.add_argument("-e", dest="events", action=_Action, const="query")
    ap.add_argument("-s", "--stat", action=_Action, const="query", nargs=0)
    ap.add_argument("--timeout", action=_Timeout)
    ap.add_argument("targets", nargs="*")
    try:
        ns = ap.parse(_words(argv), "targets")
    except cmdline.Stop as e:
        return Args(action=e.action)
    a = Args(ns.action, ns.arg, ns.targets, ns.timeout)
    a.back, a.events, a.stat = ns.back, ns.events, ns.stat
    for text in a.targets:
        if not text:
            raise UsageError("an empty target: give a PID or a program's name")
        if text.isdigit() and int(text) <= 0:
            raise UsageError("PID must be a process id, not %r" % text)
        if text.startswith("-"):
            raise UsageError("PID must be a process id, not %r" % text)
    if a.action == "dump" and a.arg is not None:
        check_reason(a.arg)
    return a


def main(argv: list | None = None, out=None, err=None, env: dict | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        args = parse_args(argv)
    except UsageError as e:
        print("%s: %s" % (PROG, e), file=err)
        print(USAGE, file=err)
        return 2
    if args.action == "help":
        print(help_text(), file=out)
        return 0
    if args.action == "version":
        from ._generated import VERSION
        print("%s (cgprof) %s" % (PROG, VERSION), file=out)
        return 0
    try:
        return _run(args, out, err, env)
    except UsageError as e:
        print("%s: %s" % (PROG, e), file=err)
        print(USAGE, file=err)
        return 2
    except ControlError as e:
        print("%s: %s" % (PROG, e), file=err)
        return 1
    except KeyboardInterrupt:
        print("%s: interrupted" % PROG, file=err)
        return 130


def _listing(args: Args, out, err, env) -> int:
    cdir, problem = None, None
    try:
        cdir = find_control_dir(env)
    except NoControlDir as e:
        problem = str(e)
    try:
        if args.pid is not None:
            targets = pid_targets(args.pid)
            for t in targets:
                if t.note:
                    print("%s: %s" % (PROG, t.note), file=err)
            procs = list_processes(cdir, problem, pids=[t.pid for t in targets])
            if not procs:
                raise ControlError("process %d is another user's" % args.pid)
        else:
            procs = list_processes(cdir, problem)
            if args.targets:
                chosen = {t.pid for t in resolve_targets(args.targets, procs)}
                procs = [p for p in procs if p.pid in chosen]
    finally:
        if cdir is not None:
            cdir.close()
    if not procs:
        print("%s: no running process has %s loaded" % (PROG, RUNTIME_NAME), file=err)
        return 0
    out.write(format_listing(procs))
    return 0


def _targets(args: Args, cdir: ControlDir, err) -> list:
    """The processes to act on, each noted on stderr when a launcher's pid
    stood for it. Those found by a name or as all (no target) whose status
    is not in this control directory are left alone, and said to be: they
    run with another CGPROF_CONTROL_DIR (another user's tests, say)."""
    if args.pid is not None:
        targets = pid_targets(args.pid)
    else:
        procs = list_processes(cdir, clean=False)
        with_status = {p.pid for p in procs if p.status is not None}
        targets = []
        for t in resolve_targets(args.targets, procs):
            if t.by_pid or t.pid in with_status:
                targets.append(t)
            else:
                print("%s: process %d has the runtime but no %s: left alone (started with another "
                      "CGPROF_CONTROL_DIR?)" % (PROG, t.pid, cdir.file(status_name(t.pid))), file=err)
        if not targets:
            raise ControlError("no running process has %s loaded%s" % (
                RUNTIME_NAME, " with its status in %s" % cdir.path if procs else ""))
    for t in targets:
        if t.note:
            print("%s: %s" % (PROG, t.note), file=err)
    return targets


def _run(args: Args, out, err, env) -> int:
    if args.action is None:
        return _listing(args, out, err, env)
    try:
        cdir = find_control_dir(env)
    except NoControlDir as e:
        if args.pid is not None:
            loaded = False
            try:
                loaded = has_runtime(args.pid)
            except (OSError, Undumpable):
                pass
            why = (" (process %d has the runtime loaded, but no instrumented code: the runtime serves dumps "
                   "only where an object built with -finstrument-functions is loaded or a hook has run)"
                   % args.pid if loaded else "")
            raise ControlError("%s: cannot control process %d%s" % (e, args.pid, why))
        raise
    failed = 0
    with cdir:
        targets = _targets(args, cdir, err)
        for t in targets:
            try:
                failed += _act(args, cdir, t.pid, out, err)
            except ControlError as e:
                print("%s: %s" % (PROG, e), file=err)
                failed += 1
            out.flush()
    return 1 if failed else 0


def _act(args: Args, cdir: ControlDir, pid: int, out, err) -> int:
    """Does what args say to process pid; returns 1 if it failed (said on
    err), 0 if done."""
    if args.action == "query":
        return _query(args, cdir, pid, out)
    before, after = send_request(cdir, pid, command_line(args.action, args.arg), args.timeout)
    if args.action == "dump":
        for path in after.last:
            print(path, file=out)
        if after.parts <= before.parts:
            print("%s: process %d handled the dump but wrote no new part" % (PROG, pid), file=err)
            return 1
        return 0
    if args.action == "zero":
        print("process %d: costs zeroed" % pid, file=out)
        return 0
    if after.collecting != args.arg:
        print("%s: process %d handled the request but says 'collecting: %s'"
              % (PROG, pid, after.collecting), file=err)
        return 1
    print("process %d: collection %s" % (pid, "resumed (on)" if args.arg == "on" else "paused (off)"),
          file=out)
    return 0


def _query(args: Args, cdir: ControlDir, pid: int, out) -> int:
    """-b, -e, -s: the answers first, then one block, headed by the
    process as callgrind_control heads it."""
    stacks = counters = None
    status = None
    if args.back:
        status, text = ask(cdir, pid, "stacks", args.timeout)
        stacks = parse_stacks(text)
    if args.events is not None or args.stat:
        status, text = ask(cdir, pid, "counters", args.timeout)
        counters = parse_counters(text)
    cmd = printable(process_command(pid) or status.cmd)
    block = ["PID %d: %s\n" % (pid, cmd)]
    if args.stat:
        block.append(format_stat(status, *counters))
    if args.events is not None:
        block.append(format_events(counters[1], args.events, status.collecting == "off"))
    if stacks is not None:
        block.append(format_stacks(stacks, args.events is not None))
    out.write("".join(block))
    return 0
