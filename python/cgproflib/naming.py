"""The names of the profile files, as the runtime makes them from the
CGPROF_OUT pattern and the directory the program started in (docs/variables.md,
CGPROF_OUT):

    <prefix>.<pid>-<NN>            a run without dumps on demand
    <prefix>.<pid>.<part>-<NN>     each part of a run with dumps
    <prefix>-<NN>, <prefix>.<part>-<NN>   when the pattern names the pid (%p)
    the total: callgrind.total.<pid> for callgrind.out, and so on

No rule of that layout is typed here: every name is asked from the
runtime's own code (runtime/output/naming.c, through cgproflib.rules). The
launcher must also invert the names, to find the files of any pid: it asks
for the names of sentinel numbers (a pid, a thread, a part that the
pattern does not contain) and reads where they land.
"""

import functools
import os
import re
from typing import Dict, NamedTuple, Optional, Tuple

from . import rules


def _sentinels(pattern: str) -> Tuple[int, int, int]:
    """A pid, a thread and a part whose digits appear nowhere in the
    pattern, so that where they land in a name is certain."""
    picked = []
    for base in (987654321, 97531, 86420):
        n = base
        while str(n) in pattern or any(str(n) in str(p) or str(p) in str(n) for p in picked):
            n += 1111
        picked.append(n)
    return picked[0], picked[1], picked[2]


def _answer(name: Optional[str], pattern: str) -> str:
    if name is None:
        raise rules.RulesError("the runtime makes no file name of the pattern %r (too long)" % pattern)
    return name


def directory(pattern: str, pid: int, cwd: str) -> str:
    """The directory of the files of pid; a relative one is taken from cwd,
    the directory the program started in."""
    name = rules.file_names([(pattern, pid, cwd, 1, 0)])[0]
    return os.path.dirname(_answer(name, pattern))


def directory_names_pid(pattern: str) -> bool:
    """Whether the directory of the files depends on the pid."""
    pid, _, _ = _sentinels(pattern)
    a, b = rules.file_names([(pattern, pid, "/", 1, 0), (pattern, pid + 1, "/", 1, 0)])
    return os.path.dirname(_answer(a, pattern)) != os.path.dirname(_answer(b, pattern))


@functools.lru_cache(maxsize=32)
def file_regex(pattern: str) -> "re.Pattern[str]":
    """The names (without their directory) of the files the pattern gives,
    with the groups pid (where the name has it), part, thread; built from
    the runtime's names of sentinel numbers, and checked against them."""
    pid, thread, part = _sentinels(pattern)
    with_part, without = (os.path.basename(_answer(n, pattern)) for n in rules.file_names(
        [(pattern, pid, "", thread, part), (pattern, pid, "", thread, 0)]))
    pid_s, part_s, thread_s = str(pid), ".%d" % part, "-%d" % thread
    out, i, seen_pid = [], 0, False
    while i < len(with_part):
        rest = with_part[i:]
        if rest.startswith(pid_s):
            out.append("(?P=pid)" if seen_pid else "(?P<pid>[0-9]+)")
            seen_pid = True
            i += len(pid_s)
        elif rest.startswith(part_s):
            out.append(r"(?:\.(?P<part>[0-9]+))?")
            i += len(part_s)
        elif rest == thread_s:
            out.append(r"-(?P<thread>[0-9]+)")
            i += len(thread_s)
        else:
            out.append(re.escape(with_part[i]))
            i += 1
    rx = re.compile("".join(out))
    for name, want in ((with_part, str(part)), (without, None)):
        m = rx.fullmatch(name)
        if not m or m.group("part") != want or m.group("thread") != str(thread) or \
                m.groupdict().get("pid") not in (None, pid_s):
            raise rules.RulesError("the runtime's file name %r for %r is not understood" % (name, pattern))
    return rx


class ProfileFile(NamedTuple):
    pid: Optional[int]   # None: the name does not say (the pattern puts it elsewhere)
    part: int            # 0: a run without dumps on demand, whose names have no part
    thread: int
    mtime: int
    suffix: int          # the length of the name's .<part>-<NN> or -<NN> (run_name)


def scan(pattern: str, pid: int, cwd: str) -> Dict[str, ProfileFile]:
    """The profile files that the pattern gives for pid, of any pid, in
    their directory (as it is for pid), by path."""
    d = directory(pattern, pid, cwd)
    rx = file_regex(pattern)
    found = {}
    try:
        names = os.listdir(d)
    except OSError:
        return found
    for n in names:
        m = rx.fullmatch(n)
        if not m:
            continue
        path = os.path.join(d, n)
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            continue
        file_pid = m.groupdict().get("pid")
        # the name up to its part, or its thread when it has no part
        end = m.start("part") - 1 if m.group("part") is not None else m.start("thread") - 1
        found[path] = ProfileFile(None if file_pid is None else int(file_pid), int(m.group("part") or 0),
                                  int(m.group("thread")), mtime, len(n) - end)
    return found


def run_name(path: str, f: ProfileFile) -> str:
    """The run a file belongs to, the name KCachegrind loads all its parts
    and threads by: the file's name without its .<part> and -<NN>."""
    return path[:len(path) - f.suffix]


def total_path(pattern: str, pid: int, cwd: str) -> Optional[str]:
    """The file of the total of all threads of pid (CGPROF_TOTAL); None if
    its name would be too long for the runtime."""
    return rules.total_files([(pattern, pid, cwd)])[0]


# ---- the names made like the total's: path files, flame graphs ---------------
# The path files of a part (docs/internals/paths-format.md) are named as the total is,
# with "paths" for "total": callgrind.out.1234-01 -> callgrind.paths.1234-01,
# /tmp/prof.1234-01 -> /tmp/prof.paths.1234-01. `cgprof flame` names its
# files the same way with "flame". Neither may be loaded by KCachegrind as a
# part of the run (it loads <run>* given the run, callgrind.out* given a
# directory), for the reason the total's name is what it is.

def _word_cut(pattern: str) -> Tuple[str, int, int, str]:
    """The run's pattern (<pattern> or <pattern>.%p) and where the total's
    word goes in it: (run, at, cut, form), the name being
    run[:at] + form % word + run[at + cut:]. runtime/base/options.c's total_cut()
    read again here until the runtime names the path files itself; every
    use checks it against the runtime's total pattern (_word_pattern)."""
    run = pattern + ("" if "%p" in pattern else ".%p")
    base = run.rfind("/") + 1
    found = None
    # the last ".out" ending a word (not the one of ".output")
    for i in range(base, len(run) - 3):
        nxt = run[i + 4:i + 5]
        if run[i:i + 4] == ".out" and not (nxt.isascii() and nxt.isalnum()):
            found = (i, 4, ".%s")
    if found is None:
        # the first %p of the file name that is not an escaped "%%p"
        i = base
        while i < len(run):
            if run[i:i + 2] == "%p":
                found = (i, 0, "%s.")
                break
            if run[i:i + 2] == "%%":
                i += 1
            i += 1
    if found is None:
        found = (base, 0, "%s.")
    return (run,) + found


@functools.lru_cache(maxsize=32)
def _word_pattern(pattern: str, word: str) -> str:
    run, at, cut, form = _word_cut(pattern)
    total = rules.total_patterns([pattern])[0]
    if total is None:
        raise rules.RulesError("the runtime makes no total's name of the pattern %r (too long)" % pattern)
    if run[:at] + form % "total" + run[at + cut:] != total:
        raise rules.RulesError("the runtime's total pattern %r for %r is not understood" % (total, pattern))
    return run[:at] + form % word + run[at + cut:]


def paths_pattern(pattern: str) -> str:
    """The pattern (a CGPROF_OUT pattern naming the pid) whose files are the
    path files of pattern's parts: the same pid, part and thread."""
    return _word_pattern(pattern, "paths")


def paths_scan(pattern: str, pid: int, cwd: str) -> Dict[str, ProfileFile]:
    """The path files that pattern's runs wrote, of any pid, as scan()."""
    return scan(paths_pattern(pattern), pid, cwd)


def _not_callgrind(path: str) -> str:
    """A flame graph's name without a leading "callgrind.": speedscope reads
    any file whose name starts so as a Callgrind profile ("Unrecognized line
    "main 191410""), whatever it holds; flame.<pid>-01.folded it reads as
    the collapsed stacks it is."""
    d, b = os.path.split(path)
    return os.path.join(d, b[len("callgrind."):]) if b.startswith("callgrind.") and \
        len(b) > len("callgrind.") else path


def flame_prefix(pattern: str, pid: int, cwd: str) -> str:
    """Where `cgprof flame` writes the flame graphs of pid's run by default
    (<prefix>.folded, <prefix>-<NN>.folded, <prefix>.speedscope.json):
    flame.<pid> for callgrind.out (the run's name with "flame" for "out",
    without a leading "callgrind.")."""
    name = rules.expansions([(_word_pattern(pattern, "flame"), pid)])[0]
    return _not_callgrind(os.path.join(cwd, _answer(name, pattern)))


_PART_TAIL = re.compile(r"(?:\.[0-9]+)?-[0-9]+\Z")


def _last_word(name: str, word: str) -> int:
    """Where the last `word` ending a word is in name (and starting one,
    when it starts with a letter), -1 if nowhere."""
    def alnum(c):
        return c.isascii() and c.isalnum()
    for at in range(len(name) - len(word), -1, -1):
        if name.startswith(word, at) and not alnum(name[at + len(word):at + len(word) + 1]) and \
                not (alnum(word[0]) and alnum(name[at - 1:at] if at else "")):
            return at
    return -1


def paths_names_of(name: str) -> Tuple[str, ...]:
    """The names a run's prefix, a part or a total given by its name may
    have as path files, as prefixes (their files are the name itself,
    name.* and name-*). A name's pid cannot be told from its digits, so
    every place it may be is tried: the files found are checked by content.
    The name itself first (it may be a path file's prefix already)."""
    d, b = os.path.split(name)
    out = [b]
    for old, new in ((".out", ".paths"), (".total", ".paths")):
        at = _last_word(b, old)
        if at >= 0:
            out.append(b[:at] + new + b[at + len(old):])
    if _last_word(b, ".out") < 0:
        # "paths." before the pid: in front of any tail of numbers
        # <pid>[.<part>][-<NN>], or after the name (a prefix without the
        # pid), or at the name's start (the pid in the directory's name)
        for i in range(len(b)):
            if (i == 0 or not b[i - 1].isdigit()) and re.fullmatch(r"[0-9]+(?:\.[0-9]+)?(?:-[0-9]+)?", b[i:]):
                out.append(b[:i] + "paths." + b[i:])
        out.append(b + ("paths" if b.endswith((".", "-")) else ".paths"))
        out.append("paths." + b)
    return tuple(os.path.join(d, n) for n in dict.fromkeys(out))


def paths_run_name(path: str) -> str:
    """A path file's run: its name without .<part> and -<NN>."""
    return _PART_TAIL.sub("", path)


def flame_prefix_of(run: str) -> str:
    """The default prefix of the flame graphs of a run of path files:
    its name with the word "paths" made "flame" (callgrind.paths.1234 ->
    flame.1234: no leading "callgrind.", _not_callgrind), else "flame." in
    front of its file name."""
    d, b = os.path.split(run)
    at = _last_word(b, "paths")
    return _not_callgrind(os.path.join(d, b[:at] + "flame" + b[at + 5:] if at >= 0 else "flame." + b))


def callgrind_names_of(path: str) -> Tuple[str, ...]:
    """The names the Callgrind part of a path file may have: the path
    file's name with its word "paths" made "out" (.paths -> .out), or
    without it (paths. taken out)."""
    d, b = os.path.split(path)
    at = _last_word(b, "paths")
    if at < 0:
        return ()
    out = []
    if b[at - 1:at] == ".":
        out.append(b[:at] + "out" + b[at + 5:])
    if b[at + 5:at + 6] == ".":
        out.append(b[:at] + b[at + 6:])
    return tuple(os.path.join(d, n) for n in out)
