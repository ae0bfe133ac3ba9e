"""runtime/base/options.inc, the one table of the runtime's options, as Python
reads it: its entries (Option), the reader of the file itself, and what an
entry is on the launcher's command line (--name, the placeholder of its
value). scripts/gen_cgprof.py reads the file with it at build time and
writes the table into cgproflib/_generated.py (see cgproflib.options); the
man page takes the same names and placeholders from here.

A table entry this reader cannot read fails the build: an option silently
missing from the launcher is the failure it exists to avoid. Nothing here
needs the build (the generator imports it from the source tree).
"""

import re
from typing import List, NamedTuple

OPTION_FIELDS = ("field", "variable", "type", "default", "accepted", "help")
PREFIX = "CGPROF_"

# The launcher's own options: a table entry that would take one of these
# names is refused (the build stops) rather than shadowed.
LAUNCHER_OWN = ("help", "version", "lib", "top", "children", "quiet")


class Option(NamedTuple):
    field: str
    variable: str
    type: str
    default: str
    accepted: str
    help: str

    @property
    def name(self) -> str:
        return launcher_name(self.variable)

    @property
    def uint_range(self):
        """(MIN, MAX) of a UINT, read from its accepted text as options.c
        reads it; None if the text gives none."""
        m = re.fullmatch(r"an integer from (\d+) to (\d+)", self.accepted)
        return (int(m.group(1)), int(m.group(2))) if m else None


class TableError(Exception):
    """options.inc says something this reader cannot read."""


def launcher_name(variable: str) -> str:
    """CGPROF_SAMPLE_HZ -> sample-hz (the launcher's --sample-hz)."""
    if not variable.startswith(PREFIX):
        raise TableError("%s does not start with %s" % (variable, PREFIX))
    return variable[len(PREFIX):].lower().replace("_", "-")


_C_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}


def _strip_comments(text: str) -> str:
    """Removes /* */ and // comments, keeping string literals intact."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise TableError("unterminated comment")
            out.append(" ")
            i = j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _split_args(body: str) -> List[str]:
    """The top-level comma-separated arguments of one CG_OPTION(...)."""
    args, cur, i, depth = [], [], 0, 0
    while i < len(body):
        c = body[i]
        if c == '"':
            j = i + 1
            while j < len(body) and body[j] != '"':
                j += 2 if body[j] == "\\" else 1
            cur.append(body[i:j + 1])
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    args.append("".join(cur).strip())
    return args


def _string(arg: str, what: str) -> str:
    """The value of adjacent C string literals ("a" "b" -> ab)."""
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
    if not pieces or re.sub(r'"((?:[^"\\]|\\.)*)"', "", arg).strip():
        raise TableError("%s is not a string literal: %s" % (what, arg))

    def unescape(s):
        def one(m):
            if m.group(1) not in _C_ESCAPES:
                raise TableError("%s: escape \\%s not understood" % (what, m.group(1)))
            return _C_ESCAPES[m.group(1)]
        return re.sub(r"\\(.)", one, s)
    return "".join(unescape(p) for p in pieces)


def parse_options_text(text: str) -> List[Option]:
    code = _strip_comments(text)
    options = []
    pos = 0
    while True:
        m = re.compile(r"\bCG_OPTION\s*\(").search(code, pos)
        if not m:
            break
        i, depth = m.end(), 1
        while i < len(code) and depth:
            if code[i] == '"':
                i += 1
                while i < len(code) and code[i] != '"':
                    i += 2 if code[i] == "\\" else 1
            elif code[i] == "(":
                depth += 1
            elif code[i] == ")":
                depth -= 1
            i += 1
        if depth:
            raise TableError("unterminated CG_OPTION( at offset %d" % m.start())
        args = _split_args(code[m.end():i - 1])
        if len(args) != len(OPTION_FIELDS):
            raise TableError("CG_OPTION with %d arguments, not %d: %s" % (len(args), len(OPTION_FIELDS), args[:2]))
        field, type_ = args[0], args[2]
        if not re.fullmatch(r"[A-Za-z_]\w*", field) or not re.fullmatch(r"[A-Z]+", type_):
            raise TableError("CG_OPTION(%s, ..., %s, ...): field or type is not an identifier" % (field, type_))
        opt = Option(field, _string(args[1], field + " variable"), type_, _string(args[3], field + " default"),
                     _string(args[4], field + " accepted"), _string(args[5], field + " help"))
        if opt.type == "UINT" and not opt.uint_range:
            raise TableError("%s: a UINT's accepted text must read 'an integer from MIN to MAX'" % opt.variable)
        options.append(opt)
        pos = i
    if not options:
        raise TableError("no CG_OPTION entry found")
    names = [o.name for o in options]
    for o in options:
        if names.count(o.name) > 1:
            raise TableError("two options are called --%s" % o.name)
        if o.name in LAUNCHER_OWN:
            raise TableError("%s would be --%s, which the launcher already uses" % (o.variable, o.name))
    return options


def parse_options(path: str) -> List[Option]:
    with open(path, encoding="utf-8") as f:
        return parse_options_text(f.read())


def value_word(o: Option) -> str:
    """The placeholder shown after --name= in --help and the man page."""
    return {"PATH": "PREFIX", "DIR": "DIR", "SIGNAL": "SIGNAL", "UINT": "N", "BOOL": "yes|no", "GLOBS": "GLOBS",
            "THRESHOLD": "N:T"}.get(o.type, o.accepted if o.type == "ENUM" else "VALUE")
