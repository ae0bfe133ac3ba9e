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

It talks to the runtime as docs/control-protocol.md says: it reads
<dir>/<pid>.status, writes <dir>/<pid>.cmd, sends the dump signal named in
the status file and waits for the status file to say it handled the
command (a question's answer is then in <dir>/<pid>.reply), all under an
exclusive flock on <dir>/<pid>.lock. <dir> is $CGPROF_CONTROL_DIR, else
/tmp/cgprof-<uid>, used only if it is a real directory owned by the user and
not writable by group or others (as the runtime checks it).

The `cgprof-control` command is an entry point of this module
(scripts/command.in). Standard library only, and little of it: the
interpreter's own start is most of what `cgprof-control -d` costs, and the
imports add a couple of milliseconds to it (`subprocess`, through rules,
and the signal module's enums are imported only on the paths that need
them; annotations are never evaluated, so `typing` is not imported at
all).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
import time

from . import elf
from ._shared import (CONTROL_CMD, CONTROL_DEFAULT_DIR, CONTROL_DIR_UNSAFE, CONTROL_FILE_MODE,
                      CONTROL_REPLY, CONTROL_STATUS)

PROG = "cgprof-control"
RUNTIME_NAME = "libcgprof.so"
POLL_INTERVAL = 0.02      # seconds: the longest wait between two looks at the status file
POLL_FIRST = 0.001        # and the first: a small program's dump takes a few ms
DEFAULT_TIMEOUT = 30.0    # seconds to wait for a request to be handled
DEFAULT_REASON = "cgprof-control"
# the lock cgprof-control takes per process (the runtime never reads it)
LOCK = "lock"
MAX_REASON = 200          # bytes; the runtime reads one line of up to 511 bytes
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
                   "requests served, repairs (see docs/design.md, \"Repairs\"); one line per thread."),
    ("--timeout S", "Seconds to wait for each program to handle a request (default 30)."),
    ("--version", "Print cgprof's version."),
    ("-h, --help", "This text."),
]
NOTES = ("-b, -e and -s go together; -d, -z and -i go alone. The control directory is $CGPROF_CONTROL_DIR, else "
         "/tmp/cgprof-<uid>; the program must have been started with the same one. A request is sent with the "
         "signal the program's status file names (SIGUSR1 unless CGPROF_SIGNAL says otherwise); "
         "docs/control-protocol.md is the protocol.")
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


class ControlError(Exception):
    """A failure to tell the user in one line (exit status 1)."""


class NoControlDir(ControlError):
    """The control directory does not exist (yet): no program has made it."""


class UsageError(Exception):
    """Bad command line (exit status 2)."""


# ---------------------------------------------------------------------------
# The control directory

def control_dir_path(env: dict | None = None, uid: int | None = None) -> str:
    """$CGPROF_CONTROL_DIR if set (and not empty), else /tmp/cgprof-<uid>."""
    env = os.environ if env is None else env
    path = env.get("CGPROF_CONTROL_DIR")
    if path:
        return path
    return CONTROL_DEFAULT_DIR + "%d" % (os.geteuid() if uid is None else uid)


def check_dir_stat(path: str, st: os.stat_result, uid: int) -> None:
    """Raises ControlError unless st (from lstat/fstat of path) is a real
    directory owned by uid and not writable by group or others."""
    if stat.S_ISLNK(st.st_mode):
        raise ControlError("control directory %s is a symbolic link: not used" % path)
    if not stat.S_ISDIR(st.st_mode):
        raise ControlError("control directory %s is not a directory: not used" % path)
    if st.st_uid != uid:
        raise ControlError("control directory %s is owned by uid %d, not by you (uid %d): not used"
                           % (path, st.st_uid, uid))
    if st.st_mode & CONTROL_DIR_UNSAFE:
        raise ControlError("control directory %s is writable by group or others (mode %04o): not used"
                           % (path, stat.S_IMODE(st.st_mode)))


class ControlDir:
    """The checked control directory, held open: every file in it is reached
    through the directory's descriptor, so the directory that was checked is
    the one used."""

    def __init__(self, path: str, fd: int, uid: int):
        self.path = path
        self.fd = fd
        self.uid = uid

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return True
        except FileNotFoundError:
            return False

    def remove(self, name: str) -> bool:
        """Removes name if it is ours; True if it was removed."""
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            if st.st_uid != self.uid:
                return False
            os.unlink(name, dir_fd=self.fd)
            return True
        except FileNotFoundError:
            return False

    def read_file(self, name: str) -> str | None:
        """The text of a regular file of ours, None if there is none; a file
        that is not a regular file owned by the user is an error."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ControlError("%s is a symbolic link: not read" % self.file(name))
            raise ControlError("cannot read %s: %s" % (self.file(name), e.strerror))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != self.uid:
                raise ControlError("%s is not a regular file of yours: not read" % self.file(name))
            chunks = []
            while True:
                b = os.read(fd, 65536)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode("utf-8", errors="replace")
        finally:
            os.close(fd)

    def write_file_atomically(self, name: str, text: str) -> None:
        """Writes name through a temporary file and rename (replacing a
        stale file, never following a link planted at name)."""
        tmp = "%s.tmp%d" % (name, os.getpid())
        try:
            os.unlink(tmp, dir_fd=self.fd)
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, CONTROL_FILE_MODE,
                     dir_fd=self.fd)
        try:
            data = text.encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
        except BaseException:
            os.close(fd)
            os.unlink(tmp, dir_fd=self.fd)
            raise
        os.close(fd)
        os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def names(self) -> list:
        return os.listdir(self.fd)


def find_control_dir(env: dict | None = None, uid: int | None = None) -> ControlDir:
    """Opens and checks the control directory (see control_dir_path).
    Raises NoControlDir if it does not exist, ControlError if it is not safe
    to use (the runtime does not use such a directory either)."""
    uid = os.geteuid() if uid is None else uid
    path = control_dir_path(env, uid)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise NoControlDir("control directory %s does not exist (no program has made it)" % path)
    except OSError as e:
        raise ControlError("control directory %s: %s" % (path, e.strerror))
    check_dir_stat(path, st, uid)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise ControlError("control directory %s: %s" % (path, e.strerror))
    try:
        check_dir_stat(path, os.fstat(fd), uid)  # the one opened is the one checked
    except ControlError:
        os.close(fd)
        raise
    return ControlDir(path, fd, uid)


# ---------------------------------------------------------------------------
# The status file

class Status:
    """A status file, parsed (parse_status): its required keys as
    attributes, every key as written in fields."""

    def __init__(self, pid: int, cmd: str, signal: str, threads: int, parts: int, collecting: str, done: int,
                 last: list | None = None, fields: dict | None = None):
        self.pid = pid
        self.cmd = cmd
        self.signal = signal
        self.threads = threads
        self.parts = parts
        self.collecting = collecting
        self.done = done
        self.last = [] if last is None else last
        self.fields = {} if fields is None else fields

    def __repr__(self):
        return "Status(%r)" % self.__dict__

    def __eq__(self, other):
        return isinstance(other, Status) and self.__dict__ == other.__dict__

    def understands(self, command: str) -> bool:
        """Whether the runtime that wrote it takes command (a runtime that
        does not say: dump, zero and collect, which every one took)."""
        said = self.fields.get("commands")
        return command in (said.split() if said is not None else ("dump", "zero", "collect"))


def unescape(word: str) -> str:
    """A word of the status or reply files: \\xHH stands for that byte (a
    space, a newline, a backslash...)."""
    if "\\x" not in word:
        return word
    out = []
    i = 0
    while i < len(word):
        if word.startswith("\\x", i) and i + 4 <= len(word):
            try:
                out.append(chr(int(word[i + 2:i + 4], 16)))
                i += 4
                continue
            except ValueError:
                pass
        out.append(word[i])
        i += 1
    return "".join(out)


unescape_path = unescape


def parse_status(text: str, where: str = "status file") -> Status:
    """Parses the lines "key: value" of a status file; raises ControlError
    if a required key is missing or malformed."""
    fields: dict = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ControlError("%s: malformed line %r" % (where, line))
        fields[key.strip()] = value.strip(" \t")

    def number(key: str) -> int:
        v = fields.get(key)
        if v is None:
            raise ControlError("%s: no '%s:' line" % (where, key))
        if not v.isdigit():
            raise ControlError("%s: '%s: %s' is not a number" % (where, key, v))
        return int(v)

    for key in ("signal", "collecting"):
        if key not in fields:
            raise ControlError("%s: no '%s:' line" % (where, key))
    return Status(
        pid=number("pid"),
        cmd=fields.get("cmd", ""),
        signal=fields["signal"],
        threads=number("threads"),
        parts=number("parts"),
        collecting=fields["collecting"],
        done=number("done"),
        last=[unescape(w) for w in fields.get("last", "").split(" ") if w],
        fields=fields,
    )


def status_name(pid: int) -> str:
    return "%d.%s" % (pid, CONTROL_STATUS)


def read_status(cdir: ControlDir, pid: int) -> Status | None:
    """The status file of pid, None if there is none. Raises ControlError if
    it is malformed, not a regular file of the user, or about another pid."""
    text = cdir.read_file(status_name(pid))
    if text is None:
        return None
    where = cdir.file(status_name(pid))
    st = parse_status(text, where)
    if st.pid != pid:
        raise ControlError("%s: says 'pid: %d'" % (where, st.pid))
    return st


def signal_number(name: str) -> int | None:
    """The signal a status file names (the runtime writes it with
    cg_signal_name(): "USR1", "RTMIN+2", "10"), as the runtime reads it;
    None for "none". Raises ControlError for a name the runtime would not
    take as its dump signal."""
    from . import rules, signals  # a process start: only for a runtime that writes no signo:
    try:
        number = signals.number(name)
    except rules.RulesError as e:
        raise ControlError(str(e))
    if number < 0:
        raise ControlError("the status file names %r as the dump signal: not a signal that can ask for dumps" % name)
    return number or None


def status_signal(status: Status) -> int | None:
    """The dump signal of a status: its signo: (the runtime's number; 0 for
    none), else its name, read as the runtime reads it."""
    if status.signal == "none":
        return None
    signo = status.fields.get("signo", "")
    if signo.isdigit() and 0 < int(signo) < 128:
        return int(signo)
    return signal_number(status.signal)


# ---------------------------------------------------------------------------
# Processes

def process_alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True  # exists, but we may not look
    state = data[data.rfind(b")") + 2:][:1]
    return state not in (b"Z", b"X", b"x", b"")


def maps_mention_runtime(maps_text: str) -> bool:
    """Whether the text of a /proc/<pid>/maps maps a file named libcgprof.so."""
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5]
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        if os.path.basename(path) == RUNTIME_NAME:
            return True
    return False


class Undumpable(PermissionError):
    """The user's own process, which set PR_SET_DUMPABLE 0 (as sshd and
    some servers do): its /proc files are root's, its memory map cannot be
    read, but a signal reaches it; its status file says whether it has the
    runtime."""


def process_uid(pid: int) -> int | None:
    """The real user id of pid, from /proc/PID/status, which anyone may
    read whatever the process's dumpable flag (its other files are then
    root's)."""
    try:
        with open("/proc/%d/status" % pid, "r", errors="replace") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def has_runtime(pid: int) -> bool:
    """Whether process pid has the runtime: libcgprof.so mapped, or
    libcgprof.a linked into its executable (a static program). Raises
    ProcessLookupError if it is gone, Undumpable for the user's own process
    whose maps only root may read, PermissionError if its maps cannot be
    read otherwise."""
    if not process_alive(pid):
        raise ProcessLookupError(pid)
    try:
        with open("/proc/%d/maps" % pid, "r", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        raise ProcessLookupError(pid)
    except PermissionError:
        if process_uid(pid) == os.getuid():
            raise Undumpable(pid)
        raise
    if not text and not process_alive(pid):
        raise ProcessLookupError(pid)
    if maps_mention_runtime(text):
        return True
    # a static program: the runtime linked in, marked by its note
    exe = elf.headers("/proc/%d/exe" % pid) if text else None
    return exe is not None and exe.runtime is not None


def process_argv(pid: int) -> list:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [a.decode("utf-8", errors="replace") for a in raw.rstrip(b"\0").split(b"\0") if a]


def process_command(pid: int) -> str:
    return " ".join(process_argv(pid))


def name_matches(name: str, program: str) -> bool:
    """Whether a target NAME names program (the first word of a command, as
    callgrind_control matches its runs): the whole of it, or its last path
    components ("server" and "examples/server" name
    /build/examples/server)."""
    name = name.rstrip("/")
    if not name or not program:
        return False
    if program == name:
        return True
    if name.startswith("./"):
        name = name[2:]
    return program.endswith("/" + name) or program == name


def process_names(pid: int, cmd: str) -> list:
    """What a target NAME may match for pid: its command's first word, the
    first word of argv[0] (a program that rewrites its title, as Redis,
    nginx or PostgreSQL do, writes words with spaces into argv[0]), the
    executable's path (/proc/PID/exe) and its command name
    (/proc/PID/comm, 15 bytes at most), as pgrep and callgrind_control
    find them."""
    argv = process_argv(pid) or cmd.split(" ", 1)
    names = [argv[0]] if argv else []
    if argv and argv[0].split():
        names.append(argv[0].split()[0])
    try:
        names.append(os.readlink("/proc/%d/exe" % pid).removesuffix(" (deleted)"))
    except OSError:
        pass
    try:
        with open("/proc/%d/comm" % pid, encoding="utf-8", errors="replace") as f:
            names.append(f.read().rstrip("\n"))
    except OSError:
        pass
    return names


def names_process(name: str, names: list) -> bool:
    """Whether NAME names a process known by names (process_names): as
    name_matches says for each, or, for the command name, which the kernel
    cuts to 15 bytes, its first 15 bytes."""
    comm = names[-1] if names else ""
    return any(name_matches(name, n) for n in names) or (
        len(name.encode()) > 15 and comm != "" and name.encode()[:15] == comm.encode())


def is_launcher(argv: list) -> bool:
    """Whether a command line is the cgprof launcher's: a Python
    interpreter running a script named cgprof."""
    if len(argv) < 2 or not os.path.basename(argv[0]).startswith("python"):
        return False
    for word in argv[1:]:
        if word.startswith("-"):
            continue        # the interpreter's options (the command's shebang gives -S)
        return os.path.basename(word) == "cgprof"
    return False


def children_map() -> dict:
    """{pid: [child pids]} of every process, from /proc/<pid>/stat."""
    kids: dict = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d, "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            kids.setdefault(int(fields[1]), []).append(int(d))
    return kids


def profiled_descendants(pid: int) -> list:
    """The processes under pid that have the runtime, nearest first: the
    search does not go below one that has it (its children are its own)."""
    kids = children_map()
    found, todo, seen = [], list(kids.get(pid, [])), set()
    while todo:
        p = todo.pop(0)
        if p in seen:
            continue
        seen.add(p)
        try:
            if has_runtime(p):
                found.append(p)
                continue
        except (ProcessLookupError, PermissionError, OSError):
            continue
        todo.extend(kids.get(p, []))
    return sorted(found)


class ProcessInfo:
    def __init__(self, pid: int, cmd: str, status: Status | None, problem: str | None = None):
        self.pid = pid
        self.cmd = cmd
        self.status = status
        self.problem = problem   # why there is no status, if there is none

    def __repr__(self):
        return "ProcessInfo(%r)" % self.__dict__


def _is_control_file(name: str) -> int:
    """The pid of a control file (<pid>.status, .cmd, .lock, .reply and
    their temporaries, <pid>.<kind>.tmp...), 0 for any other name."""
    pid, dot, rest = name.partition(".")
    if not dot or not pid.isdigit():
        return 0
    for kind in (CONTROL_STATUS, CONTROL_CMD, LOCK, CONTROL_REPLY):
        if rest == kind or rest.startswith(kind + ".tmp"):
            return int(pid)
    return 0


def remove_stale(cdir: ControlDir, alive=process_alive) -> list:
    """Removes the control files (status, cmd, lock, reply and their
    temporary files) of pids that are gone; returns the pids whose status
    was removed."""
    gone = []
    dead: dict = {}
    for name in sorted(cdir.names()):
        pid = _is_control_file(name)
        if not pid:
            continue
        if pid not in dead:
            dead[pid] = not alive(pid)
        if dead[pid] and cdir.remove(name) and name == status_name(pid):
            gone.append(pid)
    return gone


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
# Requests

def check_target(cdir: ControlDir, pid: int) -> Status:
    """The status of pid, after checking that it runs, has the runtime and
    can be signalled; ControlError otherwise."""
    undumpable = False
    try:
        if not has_runtime(pid):
            raise ControlError("process %d does not have %s loaded" % (pid, RUNTIME_NAME))
    except ProcessLookupError:
        raise ControlError("no process %d (it is gone)" % pid)
    except Undumpable:
        undumpable = True
    except PermissionError:
        raise ControlError("cannot read /proc/%d/maps: permission denied (another user's process?)" % pid)
    status = read_status(cdir, pid)
    if status is None and undumpable:
        raise ControlError("process %d is yours but not dumpable (it set PR_SET_DUMPABLE 0): its memory map "
                           "cannot be read, and it has no status file %s, so it has no %s loaded, or one "
                           "started with another CGPROF_CONTROL_DIR" % (pid, cdir.file(status_name(pid)),
                                                                       RUNTIME_NAME))
    if status is None:
        raise ControlError("process %d has the runtime loaded but no status file %s: it has loaded no "
                           "instrumented code (the runtime serves dumps only where an object built with "
                           "-finstrument-functions is loaded or a hook has run), or it was started with another "
                           "CGPROF_CONTROL_DIR" % (pid, cdir.file(status_name(pid))))
    if status_signal(status) is None:
        raise ControlError("process %d has no dump signal (signal: none): it cannot be controlled" % pid)
    return status


class _Signaller:
    """Sends signals to one process; through a pidfd where the system has
    them, so a pid reused after the checks is never signalled. (_signal:
    the signal module without the enums its Python part builds, a quarter
    of this command's start-up.)"""

    def __init__(self, pid: int):
        self.pid = pid
        self.fd = -1
        try:
            from _signal import pidfd_send_signal
        except ImportError:
            try:
                from signal import pidfd_send_signal
            except ImportError:
                pidfd_send_signal = None
        self._send = pidfd_send_signal
        if pidfd_send_signal is not None and hasattr(os, "pidfd_open"):
            try:
                self.fd = os.pidfd_open(pid)
            except ProcessLookupError:
                raise ControlError("no process %d (it is gone)" % pid)
            except OSError:
                self.fd = -1   # kernel without pidfd: plain kill()

    def send(self, sig: int, tid: int = 0) -> None:
        """tid: the runtime's service thread (its status's service:), which
        the signal is sent to alone: sent to the process, it may land on any
        thread of the program's that does not block it, and a handler that
        runs there cuts its sleep short (EINTR), whatever SA_RESTART says."""
        if tid and self._send_thread(sig, tid):
            return
        try:
            if self.fd >= 0:
                self._send(self.fd, sig)
            else:
                os.kill(self.pid, sig)
        except ProcessLookupError:
            raise ControlError("no process %d (it is gone)" % self.pid)
        except PermissionError:
            raise ControlError("not allowed to signal process %d" % self.pid)

    def _send_thread(self, sig: int, tid: int) -> bool:
        """Whether the signal went to thread tid of the process: through a
        thread's pidfd (Linux 6.9: PIDFD_THREAD, PIDFD_SIGNAL_THREAD), else
        tgkill(2), which checks that tid is a thread of pid."""
        if self._send is not None and hasattr(os, "pidfd_open"):
            try:
                fd = os.pidfd_open(tid, 0o200)          # PIDFD_THREAD (O_EXCL)
            except OSError:
                fd = -1
            if fd >= 0:
                try:
                    self._send(fd, sig, None, 1)        # PIDFD_SIGNAL_THREAD
                    return True
                except OSError:
                    pass
                finally:
                    os.close(fd)
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            return libc.syscall(234, self.pid, tid, sig) == 0   # SYS_tgkill on x86-64
        except (OSError, AttributeError):
            return False

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def command_line(kind: str, arg: str | None = None) -> str:
    """The line of the cmd file: dump <reason> | zero | collect on|off |
    stacks | counters."""
    if kind == "dump":
        reason = DEFAULT_REASON if arg is None else arg
        check_reason(reason)
        return "dump " + reason
    if kind in ("zero", "stacks", "counters"):
        return kind
    if kind == "collect":
        if arg not in ("on", "off"):
            raise UsageError("collection is 'on' or 'off', not %r" % (arg,))
        return "collect " + arg
    raise ValueError(kind)


def check_reason(reason: str) -> None:
    if not reason:
        raise UsageError("the dump reason is empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in reason):
        raise UsageError("the dump reason must be one line of printable text")
    if len(reason.encode("utf-8")) > MAX_REASON:
        raise UsageError("the dump reason is longer than %d bytes" % MAX_REASON)


class _Poll:
    """The waits between two looks at something the program will change:
    a tenth of the time waited so far, from POLL_FIRST up to `longest`, so
    that an answer is seen at most 10% (and 1 ms) after it comes, without
    reading the status file a thousand times a second for a dump of
    seconds."""

    def __init__(self, longest: float):
        self.start = time.monotonic()
        self.longest = longest

    def sleep(self) -> None:
        time.sleep(min(self.longest, max(POLL_FIRST, (time.monotonic() - self.start) / 10)))


def _lock(cdir: ControlDir, pid: int, deadline: float, poll: float) -> int:
    name = "%d.%s" % (pid, LOCK)
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, CONTROL_FILE_MODE, dir_fd=cdir.fd)
    except OSError as e:
        raise ControlError("cannot open %s: %s" % (cdir.file(name), e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != cdir.uid:
            raise ControlError("%s is not a regular file of yours: not used" % cdir.file(name))
        waits = _Poll(poll)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ControlError("timed out: another control holds %s (a request to %d is in "
                                       "progress)" % (cdir.file(name), pid))
                waits.sleep()
    except BaseException:
        os.close(fd)
        raise


def send_request(cdir: ControlDir, pid: int, line: str, timeout: float = DEFAULT_TIMEOUT,
                 poll: float = POLL_INTERVAL):
    """Asks pid to do what line says (see command_line) and waits until it
    has: writes <pid>.cmd with an id, sends the dump signal, waits for the
    status to say it handled that id (a runtime without "handled:" in its
    status: for done to move and the cmd file to be taken), all under the
    flock on <pid>.lock. Returns (status before, status after); raises
    ControlError on any failure, after removing the cmd file it wrote."""
    before, after, _ = _send(cdir, pid, line, timeout, poll)
    return before, after


def ask(cdir: ControlDir, pid: int, question: str, timeout: float = DEFAULT_TIMEOUT,
        poll: float = POLL_INTERVAL):
    """Asks pid a question ("stacks", "counters") as send_request asks for
    a request; returns (status after, the reply's text after its id line):
    <pid>.reply, read and removed under the lock. ControlError for a
    runtime that does not say it understands the question."""
    _, after, reply = _send(cdir, pid, question, timeout, poll, question)
    return after, reply


def _send(cdir: ControlDir, pid: int, line: str, timeout: float, poll: float, question: str | None = None):
    deadline = time.monotonic() + timeout
    sender = _Signaller(pid)            # first: the checks below are about this process
    try:
        status = check_target(cdir, pid)
        word = line.split(" ", 1)[0]
        if not status.understands(word):
            raise ControlError("process %d runs an older cgprof runtime, which cannot answer '%s' (its status "
                               "lists: %s)" % (pid, word, status.fields.get("commands", "dump zero collect")))
        lock_fd = _lock(cdir, pid, deadline, poll)
        try:
            before, after = _request_locked(cdir, pid, line, sender, deadline, poll)
            return before, after, _take_reply(cdir, pid, after) if question else None
        finally:
            os.close(lock_fd)           # releases the flock
    finally:
        sender.close()


def _take_reply(cdir: ControlDir, pid: int, after: Status) -> str:
    name = "%d.%s" % (pid, CONTROL_REPLY)
    text = cdir.read_file(name)
    cdir.remove(name)
    if text is None:
        raise ControlError("process %d handled the request but wrote no answer (%s)" % (pid, cdir.file(name)))
    first, _, rest = text.partition("\n")
    if first != "id: " + after.fields.get("handled", ""):
        raise ControlError("%s answers another request (%s)" % (cdir.file(name), first))
    return rest


def _request_locked(cdir: ControlDir, pid: int, line: str, sender: _Signaller, deadline: float, poll: float):
    cmd_name = "%d.%s" % (pid, CONTROL_CMD)
    before = read_status(cdir, pid)     # under the lock: no other request moves done now
    if before is None:
        if not process_alive(pid):
            raise ControlError("no process %d (it is gone)" % pid)
        raise ControlError("the status file of %d disappeared (is it exiting?)" % pid)
    sig = status_signal(before)
    if sig is None:
        raise ControlError("process %d has no dump signal (signal: none): it cannot be controlled" % pid)
    # The request's id: the runtime echoes the id of the last command it
    # handled as "handled:", which tells our request from a plain signal
    # served meanwhile (done alone cannot).
    token = "%d-%s" % (os.getpid(), os.urandom(6).hex())
    cdir.write_file_atomically(cmd_name, line + "\nid: " + token + "\n")
    taken = False
    try:
        service = before.fields.get("service", "")
        sender.send(sig, int(service) if service.isdigit() else 0)
        waits = _Poll(poll)
        while True:
            waits.sleep()
            try:
                now = read_status(cdir, pid)
            except ControlError:
                now = None              # a reader never sees half a file; keep looking
            if now is not None and now.done > before.done:
                handled = now.fields.get("handled")
                if handled == token or (handled is None and not cdir.exists(cmd_name)):
                    taken = True
                    return before, now
                # done moved for a request that began before ours (a plain
                # signal); ours is still waiting in the cmd file: wait on
            if not process_alive(pid):
                raise ControlError("process %d exited before handling the request" % pid)
            if time.monotonic() >= deadline:
                if cdir.exists(cmd_name):
                    raise ControlError("timed out: process %d did not take the request (%s stays "
                                       "unread; is its signal handled?)" % (pid, cdir.file(cmd_name)))
                taken = True            # it took the file: do not remove a newer one
                raise ControlError("timed out: process %d took the request but did not finish it "
                                   "(done stays at %d)" % (pid, before.done))
    finally:
        if not taken:
            try:
                cdir.remove(cmd_name)
            except OSError:
                pass


# ---------------------------------------------------------------------------
# The answers to -b, -e, -s (docs/control-protocol.md, "Replies")

def _pairs(text: str) -> dict:
    """The key=value words of a reply line."""
    out = {}
    for word in text.split(" "):
        key, eq, value = word.partition("=")
        if eq:
            out[key] = "" if value == "-" else unescape(value)
    return out


def _num(d: dict, key: str) -> int:
    v = d.get(key, "")
    return int(v) if v.isdigit() else 0


class Frame:
    def __init__(self, words: dict):
        self.level = _num(words, "level")
        self.calls = _num(words, "calls")
        self.ns = _num(words, "ns")
        self.function = words.get("function", "") or words.get("fn", "?")
        self.flags = [f for f in words.get("flags", "").split(",") if f]
        self.at = words.get("at")
        self.defined = words.get("def")
        self.object = words.get("object")


class Thread:
    def __init__(self, words: dict):
        self.number = _num(words, "number")
        self.tid = _num(words, "tid")
        self.name = words.get("name", "")
        self.words = words
        self.frames: list = []
        self.omitted: list = []      # (after the frame at this index, how many)


def parse_stacks(text: str) -> list:
    """The threads of a stacks reply, by thread number, each with its frames
    innermost first."""
    threads = []
    for line in text.splitlines():
        key, _, rest = line.partition(": ")
        if key == "thread":
            threads.append(Thread(_pairs(rest)))
        elif key == "frame" and threads:
            threads[-1].frames.append(Frame(_pairs(rest)))
        elif key == "omitted" and threads and rest.strip().isdigit():
            threads[-1].omitted.append((len(threads[-1].frames), int(rest)))
    return sorted(threads, key=lambda t: t.number)


def parse_counters(text: str) -> tuple:
    """({key: value} of the process's lines, [Thread] by number)."""
    process, threads = {}, []
    for line in text.splitlines():
        key, _, rest = line.partition(": ")
        if key == "thread":
            threads.append(Thread(_pairs(rest)))
        elif key:
            process[key] = rest
    return process, sorted(threads, key=lambda t: t.number)


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


def parse_args(argv: list) -> Args:
    a = Args()
    positionals = []                  # text of the targets
    i = 0
    after_dump = False                # the argument right after -d may be its reason

    def set_action(kind: str, opt: str) -> None:
        if a.action is not None and not (a.action == kind == "query"):
            raise UsageError("%s: only one of -d, -z, -i, or -b/-e/-s, at a time" % opt)
        a.action = kind

    def value(opt: str) -> str:
        nonlocal i
        if i + 1 >= len(argv):
            raise UsageError("%s needs a value" % opt)
        i += 1
        return argv[i]

    while i < len(argv):
        arg = argv[i]
        reason_here, after_dump = after_dump, False
        if arg in ("-h", "--help"):
            return Args(action="help")
        if arg == "--version":
            return Args(action="version")
        if arg == "--":
            positionals += argv[i + 1:]
            break
        if arg in ("-d", "--dump"):
            set_action("dump", arg)
            after_dump = True
        elif arg.startswith("--dump="):
            set_action("dump", "--dump")
            a.arg = arg[len("--dump="):]
            if not a.arg:
                raise UsageError("--dump= needs a reason")
        elif arg in ("-z", "--zero"):
            set_action("zero", arg)
        elif arg in ("-i", "--instr") or arg.startswith("--instr="):
            set_action("collect", arg.split("=")[0])
            a.arg = arg[len("--instr="):] if arg.startswith("--instr=") else value(arg)
            if a.arg not in ("on", "off"):
                raise UsageError("%s takes 'on' or 'off', not %r" % (arg.split("=")[0], a.arg))
        elif arg in ("-b", "--back"):
            set_action("query", arg)
            a.back = True
        elif arg in ("-s", "--stat"):
            set_action("query", arg)
            a.stat = True
        elif arg == "-e":
            # -e [EVENTS]: the next argument is the list when every word of
            # it is an event's name (else it is a target)
            set_action("query", "-e")
            a.events = list(EVENTS)
            if i + 1 < len(argv) and _event_list(argv[i + 1]) is not None:
                i += 1
                a.events = _event_list(argv[i])
        elif arg == "--timeout" or arg.startswith("--timeout="):
            v = arg[len("--timeout="):] if arg.startswith("--timeout=") else value(arg)
            try:
                a.timeout = float(v)
            except ValueError:
                raise UsageError("--timeout takes a number of seconds, not %r" % v)
            if not (0 < a.timeout < float("inf")):
                raise UsageError("--timeout takes a number of seconds > 0, not %r" % v)
        elif arg.startswith("-") and arg != "-":
            raise UsageError("unknown option %s" % arg)
        elif reason_here and a.arg is None and not arg.isdigit():
            a.arg = arg                 # -d REASON, as callgrind_control takes it
        else:
            positionals.append(arg)
        i += 1

    for text in positionals:
        if not text:
            raise UsageError("an empty target: give a PID or a program's name")
        if text.isdigit() and int(text) <= 0:
            raise UsageError("PID must be a process id, not %r" % text)
        if text.startswith("-"):
            raise UsageError("PID must be a process id, not %r" % text)
    a.targets = positionals
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
