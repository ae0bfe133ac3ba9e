"""Strict reader and checker of the Callgrind profile format.

Usable as a module (the launcher's summary, the tests: a model of each
profile to query) and as a command, installed as callgrind_check::

    callgrind_check [--strict] [--dump] FILE...
    python3 -m cgproflib.reader [--strict] [--dump] FILE...

Exit status: 0 if no file has a violation, 1 if some file has one (each is
printed as ``FILE:LINE: message``), 2 on a usage error or an unreadable file.

The reference is the Callgrind Format Specification, version 1 (Valgrind
technical documentation, chapter 3; "spec 3.x.y" below), read together with
the two readers our files have to satisfy:

* callgrind_annotate (perl): ``events:`` ends the header, only ``totals:`` and
  ``summary:`` are accepted after it; ``key:`` must be followed by whitespace;
  ``calls=`` counts and line numbers must be decimal; a ``calls=0`` line is
  not recognised as a call (cgprof writes its calls=0 behind ``#> ``, see
  CONTINUED_PREFIX).
* KCachegrind (libcore/cachegrindloader.cpp): ``ob=``/``cob=`` share one id
  space, ``fl=``/``fi=``/``fe=``/``cfi=``/``cfl=``/``jfi=`` another,
  ``fn=``/``cfn=``/``jfn=`` a third; a function id is bound to the object and
  file current when it is *defined*; relative subpositions are relative to
  the previous cost line of the part (self, call or jump-source line), never
  to the target of ``calls=``, which it ignores; ``fn=`` resets the current
  file to the last ``fl=``; ``ob=`` forgets the current function; ``cob=`` and
  ``cfi=`` apply to the next call only.

Two kinds of check:

* always: the file breaks the spec grammar or its rules, or a real reader
  would reject or misread it;
* ``--strict`` (messages start with ``strict:``): what cgprof promises about
  the files it writes, on top of that (listed in ``_Parser.finish_strict``).

The package splits the reader by job: cgproflib.tokens (the grammar and
the one tokenizer), cgproflib.model (the model of a file), cgproflib.parser
(the strict reader: load(), check()) and cgproflib.digests (digest(), what
`cgprof report` sums); this module gathers their entry points, as users
and tests import them (`from cgproflib import reader`; `reader.load`), and
is the command. One tokenizer, _token(), says what each line is (a cost line, a name,
a call, a header line, a comment and which data it carries, a blank
line), and _split_name() reads a name's compression, for the readers
of the format, which differ in what they make of the tokens:
load() builds the model of every line and checks it (_Parser, so that
a violation is named exactly); digest() sums one event for `cgprof
report` without a model, on files of hundreds of MB, line by line
(_digest_lines: the views that need positions, and whatever the fast
path leaves to it) or, for the flat profile and the call graph, by
tokens of whole lines found by one regular expression (_digest_fast,
which hands the lines its expression does not know to _token() too;
_digest_fast says why it is kept). The two digests read the header,
the names and cgprof's data comments with the same functions
(_digest_header, _digest_name, _digest_comment);
tests/python/test_digest.py holds digest() to load().

Only the standard library is used; Python 3.9 or newer.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from .digests import Digest, digest
from .model import (Call, CallgrindFormatError, CostLine, FnKey, Function, Jump, Profile,
                    Violation, fold_recursion)
from .parser import check, load, loads
from .tokens import CONTINUED_PREFIX, FORMAT_LINE, INLINED_PREFIX, MAX_U64, VISITS_PREFIX

__all__ = [
    "FnKey", "CostLine", "Call", "Jump", "Function", "Violation", "Profile",
    "CallgrindFormatError", "load", "loads", "check", "fold_recursion", "main", "Digest", "digest",
]


def _dump(p: Profile, out) -> None:
    ev = " ".join(p.events)
    print(f"== {p.path}: events: {ev}; positions: {' '.join(p.positions)}", file=out)
    print(f"   total self: {p.total_self(None)}  summary: {p.summary}  totals: {p.totals}",
          file=out)
    for k, f in sorted(p.functions.items()):
        print(f"   fn {k.name} [{k.file or '?'} in {k.object or '?'}]: "
              f"self {f.self_costs(len(p.events))}, {len(f.cost_lines)} cost line(s)", file=out)
    for (a, b), n in sorted(p.call_counts().items()):
        print(f"   call {a} -> {b}: {n}", file=out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:          # e.g. "... --dump FILE | head"
        sys.stderr.close()
        return 1


def _main(argv: Optional[Sequence[str]]) -> int:
    ap = argparse.ArgumentParser(
        description="Check Callgrind profile files against the format specification, "
                    "callgrind_annotate and KCachegrind.")
    ap.add_argument("--strict", action="store_true",
                    help="also check what cgprof promises about its own files")
    ap.add_argument("--dump", action="store_true",
                    help="print the model (functions, self costs, call counts) of each file")
    ap.add_argument("files", nargs="+", metavar="FILE")
    args = ap.parse_args(argv)          # exits with 2 on a usage error

    status = 0
    for path in args.files:
        try:
            prof = load(path, strict=args.strict)
        except OSError as e:
            print(f"{path}: cannot read: {e.strerror or e}", file=sys.stderr)
            return 2
        for v in prof.violations:
            print(v)
        if prof.violations:
            status = 1
        if args.dump:
            _dump(prof, sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main())
