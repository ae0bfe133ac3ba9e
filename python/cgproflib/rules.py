"""The runtime's own rules, asked from the runtime's own code: cgprof-rules
(python/cgprof-rules.c, linked with runtime/base/options.c) answers with
cg_options_parse(), cg_quote(), cg_parse_signal(), cg_expand_path(),
cg_total_pattern() and the file names of runtime/output/naming.c, so that nothing
here re-implements them. It lives next
to the package, in cgprof's private directory (build/python in the build
tree). Each call is one process start, about a millisecond.
"""

import os
import subprocess
from typing import List, Optional, Sequence, Tuple

HELPER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cgprof-rules")


class RulesError(Exception):
    """cgprof-rules could not be run, or did not answer as it should."""


def _unescape(line: bytes) -> str:
    """An answer's text: "\\\\", "\\n", "\\t" are a backslash, a newline, a
    tab; bytes that are not UTF-8 come back as they went (surrogateescape)."""
    out, i = [], 0
    while i < len(line):
        if line[i:i + 1] == b"\\" and i + 1 < len(line):
            out.append({b"n": b"\n", b"t": b"\t"}.get(line[i + 1:i + 2], line[i + 1:i + 2]))
            i += 2
        else:
            out.append(line[i:i + 1])
            i += 1
    return os.fsdecode(b"".join(out))


def _run(questions: Sequence[Tuple[str, ...]]) -> List[bytes]:
    """The lines cgprof-rules prints for questions, each a tuple of words
    (see cgprof-rules.c), as they come."""
    argv = [HELPER] + [str(w) for q in questions for w in q]
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except OSError as e:
        raise RulesError("cannot run %s: %s" % (HELPER, e.strerror or e))
    if p.returncode != 0:
        raise RulesError("%s failed (status %d): %s" % (HELPER, p.returncode, os.fsdecode(p.stderr).strip()))
    return p.stdout.split(b"\n")[:-1]


def _ask(questions: Sequence[Tuple[str, ...]]) -> List[str]:
    """One answer per question, unescaped."""
    lines = _run(questions)
    if len(lines) != len(questions):
        raise RulesError("%s gave %d answers to %d questions" % (HELPER, len(lines), len(questions)))
    return [_unescape(line) for line in lines]


def refusals(assignments: Sequence[Tuple[str, str]]) -> List[Optional[str]]:
    """For each (variable, value): None if the runtime accepts the value,
    else its reason for refusing it, in its own words."""
    answers = _ask([("option", "%s=%s" % a) for a in assignments])
    return [None if a == "ok" else a[len("refused "):] for a in answers]


def quoted(values: Sequence[str]) -> List[str]:
    """Each value as the runtime's messages show a value (cg_quote(), whole):
    between double quotes, with control bytes, backslash, quote and bytes
    that are not UTF-8 escaped as C writes them."""
    answers = _ask([("quote", v) for v in values])
    if not all(a.startswith("ok ") for a in answers):
        raise RulesError("%s could not quote a value" % HELPER)
    return [a[len("ok "):] for a in answers]


def signal_numbers(names: Sequence[str]) -> List[int]:
    """For each name, the signal the runtime takes it for: its number, 0
    for none, -1 if it refuses it (not a signal that can ask for dumps)."""
    return [int(a) for a in _ask([("signal", n) for n in names])]


def _path(answer: str) -> Optional[str]:
    return answer[len("ok "):] if answer.startswith("ok ") else None


def total_patterns(patterns: Sequence[str]) -> List[Optional[str]]:
    """For each CGPROF_OUT pattern, the pattern of the total's file; None
    where it would be too long."""
    return [_path(a) for a in _ask([("total", p) for p in patterns])]


def expansions(patterns: Sequence[Tuple[str, int]]) -> List[Optional[str]]:
    """For each (pattern, pid), the pattern with %p and %% expanded; None
    where it would be too long."""
    return [_path(a) for a in _ask([("expand", p, pid) for p, pid in patterns])]


def file_names(questions: Sequence[Tuple[str, int, str, int, int]]) -> List[Optional[str]]:
    """For each (pattern, pid, cwd, thread, part), the file the runtime
    writes for that thread and part (part 0: a run without dumps on
    demand, whose names have no part), made absolute against cwd ("" leaves
    a relative one relative); None where it would be too long."""
    return [_path(a) for a in _ask([("file",) + tuple(q) for q in questions])]


def total_files(questions: Sequence[Tuple[str, int, str]]) -> List[Optional[str]]:
    """For each (pattern, pid, cwd), the file of the total of all threads."""
    return [_path(a) for a in _ask([("totalfile",) + tuple(q) for q in questions])]


def option_table() -> List[Tuple[str, ...]]:
    """The runtime's option table as compiled: (field, variable, type,
    default, accepted, help) per option."""
    lines = _run([("table",)])
    count = int(lines[0].split()[1])
    return [tuple(_unescape(f) for f in line.split(b"\t")) for line in lines[1:1 + count]]
