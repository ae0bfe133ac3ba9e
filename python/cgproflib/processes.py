"""The processes cgprof-control looks at, as /proc shows them: alive or
not, whose, whether the runtime is loaded, their command lines and
program names, the launcher's, and the profiled children of a process."""

from __future__ import annotations

import os

from . import elf

RUNTIME_NAME = "libcgprof.so"


class ControlError(Exception):
    """A failure to tell the user in one line (exit status 1)."""


def process_state(pid: int) -> bytes:
    """The state letter of /proc/<pid>/stat (R, S, D, T stopped, t traced,
    Z zombie...): b"" for a process that is gone, b"?" for one we may not
    look at."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return b""
    except OSError:
        return b"?"  # exists, but we may not look
    return data[data.rfind(b")") + 2:][:1]


def process_alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    return process_state(pid) not in (b"Z", b"X", b"x", b"")


def process_stopped(pid: int) -> bool:
    """True while pid is stopped (SIGSTOP, SIGTSTP: state T) or held by a
    debugger (t): a signal sent to it stays pending until it runs again."""
    return process_state(pid) in (b"T", b"t")


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
