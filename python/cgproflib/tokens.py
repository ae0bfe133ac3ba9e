"""The Callgrind format's words: its numbers, names and keys (the
specification's grammar, as regular expressions), cgprof's comment lines
that carry data, and the one tokenizer, _token(), that says what a line is
for every reader of the format (parser: the strict reader and its model;
digests: what `cgprof report` sums)."""

from __future__ import annotations

import re
from typing import Tuple

from .latency import LATENCY_PREFIX, SCHEME_PREFIX

MAX_U64 = (1 << 64) - 1

# spec 3.2.1: Number := HexNumber | (Digit)+ ; HexNumber := "0x" (Digit|HexChar)+
_NUMBER = r"(?:0x[0-9a-fA-F]+|[0-9]+)"
_NUMBER_RE = re.compile(_NUMBER + r"\Z")
_DECIMAL_RE = re.compile(r"[0-9]+\Z")
# spec 3.2.1: SubPosition := Number | "+" Number | "-" Number | "*"
_SUBPOS_RE = re.compile(r"(?P<sign>[+-]?)(?P<num>" + _NUMBER + r")\Z|\*\Z")
# spec 3.2.1: Name = Alpha (Digit | Alpha)*   (event names)
_NAME = r"[A-Za-z][A-Za-z0-9]*"
_NAME_RE = re.compile(_NAME + r"\Z")
# spec 3.2.1: InheritedExpr := Name | Number Space* ("*" Space*)? Name
#                              | InheritedExpr Space* "+" Space* InheritedExpr
_INH_TERM = r"(?:[0-9]+[ \t]*(?:\*[ \t]*)?)?" + _NAME
_INHERITED_RE = re.compile(_INH_TERM + r"(?:[ \t]*\+[ \t]*" + _INH_TERM + r")*\Z")
_EVENT_SPEC_RE = re.compile(
    r"(?P<name>[^ \t=:]+)[ \t]*(?:=[ \t]*(?P<expr>[^:]*?))?[ \t]*(?::[ \t]*(?P<long>.*))?\Z")

_HEADER_KEYS = ("version", "creator", "pid", "thread", "part", "cmd", "desc",
                "events", "event", "positions", "summary", "totals")
# Keys that may appear only once per part.
_SINGLE_KEYS = {"creator", "pid", "thread", "part", "cmd", "positions",
                "events", "summary", "totals"}

# spec 3.2.1 PositionSpec, plus Callgrind's jfi=/jfn= (jump targets), each
# in one of the three name-compression id spaces, as KCachegrind and
# callgrind_annotate share them (spec 3.1.5 says "a separate ID mapping for each position
# specification", but both readers map cfn= ids into the fn= space, etc.).
_ID_SPACE = {
    "ob": "ob", "cob": "ob",
    "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl", "jfi": "fl",
    "fn": "fn", "cfn": "fn", "jfn": "fn",
}
_SPACE_WORD = {"ob": "object", "fl": "file", "fn": "function"}
# The specifications --strict requires to use name compression.
_STRICT_COMPRESSED = {"ob", "fl", "fi", "fe", "fn", "cob", "cfi", "cfl", "cfn"}

_COMPRESSED_RE = re.compile(r"\((?P<id>[0-9]+)\)(?P<rest>.*)\Z")
_RECURSION_SUFFIX_RE = re.compile(r"'[0-9]+\Z")

FORMAT_LINE = "# callgrind format"
# cgprof writes the calls a part continues from an earlier one (calls=0) as
# comments with this prefix, after everything else: callgrind_annotate takes
# a calls=0 line's cost for the caller's own, so only cgprof's reader sees
# them (runtime/output/writer.c, write_continued).
CONTINUED_PREFIX = "#> "
# ... and the functions without hooks whose counts are visits seen (a lower
# bound), by id, on one comment line after the rest: "#visits: (12) (15)".
VISITS_PREFIX = "#visits:"
# "#inlined: (3)>(7) ...": the calls the compiler inlined, caller>callee
# by id (runtime/output/writer.c, write_inlined; CGPROF_INLINED=count)
INLINED_PREFIX = "#inlined:"
# ... and, with CGPROF_LATENCY=1, each function's calls by inclusive time:
# "#latency: 4" then "#lat: (12) calls sum max lower:count..." (cgproflib.
# latency says what they hold).
_DATA_COMMENTS = (VISITS_PREFIX, INLINED_PREFIX, SCHEME_PREFIX, LATENCY_PREFIX)
_DIGITS = set("0123456789")


# --------------------------------------------------------------------------
# The tokenizer: what a line of the format is
# --------------------------------------------------------------------------
# Both readers of a file line by line -- _Parser (load(): the model, every
# check) and _digest_lines (digest(): one event's sums, no checks beyond
# what it needs), and _digest_fast for the lines its expression leaves --
# classify each line with _token(), so that a line is a cost line, a name,
# a header line or a comment for all alike; what each then makes of it (a
# violation with its message, or the file left as unreadable) stays its
# own. The readers strip "#> " (CONTINUED_PREFIX) first: only the strict
# one notes that it did.

_T_COST = 0        # position(s) and costs: key is the first character
_T_SPEC = 1        # ob= fl= fi= fe= fn= cob= cfi= cfl= cfn= jfi= jfn=: key, its value
_T_ASSOC = 2       # calls= jump= jcnd=: key, its value
_T_HEADER = 3      # version: creator: ... totals: (_HEADER_KEYS): key, what follows ":"
_T_BLANK = 4       # nothing but blanks and tabs
_T_COMMENT = 5     # "#...": key "" for a plain comment, else the prefix of the
                   # data it carries (VISITS_, INLINED_, SCHEME_, LATENCY_PREFIX)
_T_OTHER = 6       # none of these: the grammar has no rule for it

_COST_CHARS = "0123456789+-*"
_LINE_KEYS = dict.fromkeys(_ID_SPACE, _T_SPEC)
_LINE_KEYS.update(dict.fromkeys(("calls", "jump", "jcnd"), _T_ASSOC))
_HEADER_KEY_SET = frozenset(_HEADER_KEYS)


def _token(raw: str) -> Tuple[int, str, str]:
    """(kind, key, value) of one line without its end of line (see the
    _T_ kinds); value is the line itself but for names, associations and
    header lines, where it is what follows the key's "=" or ":". The
    grammar's rules are told apart by their first characters: a cost line
    starts with a position, a name or an association with its key and
    "=", a header line with its key and ":"."""
    c = raw[:1]
    if c in _COST_CHARS and c:
        return _T_COST, c, raw
    eq = raw.find("=", 0, 6)
    if eq > 0:
        kind = _LINE_KEYS.get(raw[:eq])
        if kind is not None:
            return kind, raw[:eq], raw[eq + 1:]
    if c == "#":
        for prefix in _DATA_COMMENTS:
            if raw.startswith(prefix):
                return _T_COMMENT, prefix, raw
        return _T_COMMENT, "", raw
    if not raw.strip(" \t"):
        return _T_BLANK, "", raw
    key, colon, value = raw.partition(":")
    if colon and key in _HEADER_KEY_SET:
        return _T_HEADER, key, value
    return _T_OTHER, "", raw


def _split_name(value: str) -> Tuple[str, str]:
    """The name compression (spec 3.1.5) of a _T_SPEC token's value that
    starts with "(": ("(id)", name) of a definition "(id) name", ("(id)",
    "") of a reference "(id)", ("", value) when no ")" closes the id. The
    blanks after ")" are skipped, as both real readers do. What an id may
    hold and what it maps to is the reader's: the strict one wants digits
    (and "(01)" is "(1)"), the digest takes the text between the
    parentheses as it is."""
    close = value.find(")")
    if close < 0:
        return "", value
    return value[:close + 1], value[close + 1:].lstrip(" \t")
