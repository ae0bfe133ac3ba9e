#!/usr/bin/env python3
"""Reads runtime/options.inc, the one table of cgprof's options, and makes
from it what must agree with the runtime's own parser (runtime/options.c):

    gen_cgprof.py launcher TEMPLATE OPTIONS_INC OUT --version V --bindir B --libdir L
        the `cgprof` launcher: TEMPLATE with the table substituted, so that
        its options, their validation and its --help come from the table
    gen_cgprof.py man OPTIONS_INC OUT --version V
        the man page cgprof.1, from the same table
    gen_cgprof.py command TEMPLATE OUT --module M --bindir B --pkgdir P
        the command OUT: TEMPLATE made an entry point of cgproflib.M, the
        package being installed in P

Importable: parse_options() and launcher_name() are what the tests use to
compare the README with the table. Standard library only, like the rest of
scripts/. A table entry this parser cannot read fails the build: an option
silently missing from the launcher is the failure this file exists to avoid.
"""

import argparse
import json
import os
import re
import sys
from typing import List, NamedTuple

OPTION_FIELDS = ("field", "variable", "type", "default", "accepted", "help")
PREFIX = "CGPROF_"

# The launcher's own options: a table entry that would take one of these
# names is refused (the build stops) rather than shadowed.
LAUNCHER_OWN = ("help", "version", "lib", "top", "quiet")


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
    pass


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


# ---- the launcher -----------------------------------------------------------

def make_launcher(template: str, options: List[Option], version: str, bindir: str, libdir: str, pkgdir: str) -> str:
    table = json.dumps([o._asdict() for o in options], indent=1, ensure_ascii=True)
    # Relative, so that an installed tree still works when moved (or staged
    # with DESTDIR); the build tree is found by the launcher itself.
    lib_rel = os.path.relpath(libdir, bindir)
    subst = {"@OPTIONS@": table, "@VERSION@": json.dumps(version), "@LIBDIR_FROM_BINDIR@": json.dumps(lib_rel),
             "@PKGDIR_FROM_BINDIR@": json.dumps(os.path.relpath(pkgdir, bindir))}
    for key, value in subst.items():
        if key not in template:
            raise TableError("the launcher template has no " + key)
        template = template.replace(key, value)
    return template


# ---- the commands ------------------------------------------------------------

def make_command(template: str, command: str, module: str, bindir: str, pkgdir: str) -> str:
    """An entry point of the package: TEMPLATE with the command's name, its
    module and where the package is installed, relative to bindir."""
    subst = {"@COMMAND@": command, "@MODULE@": module,
             "@PKGDIR_FROM_BINDIR@": json.dumps(os.path.relpath(pkgdir, bindir))}
    for key, value in subst.items():
        if key not in template:
            raise TableError("the command template has no " + key)
        template = template.replace(key, value)
    return template


# ---- the man page -----------------------------------------------------------

def _roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line for line in text.split("\n"))


def value_word(o: Option) -> str:
    """The placeholder shown after --name= in the help and the man page."""
    return {"PATH": "PREFIX", "DIR": "DIR", "SIGNAL": "SIGNAL", "UINT": "N", "BOOL": "yes|no"}.get(
        o.type, o.accepted if o.type == "ENUM" else "VALUE")


def make_man(options: List[Option], version: str) -> str:
    out = [
        '.TH CGPROF 1 "" "cgprof %s" "User Commands"' % version,
        ".SH NAME",
        "cgprof \\- run a program with the cgprof profiling runtime preloaded",
        ".SH SYNOPSIS",
        ".B cgprof",
        "[\\fIoptions\\fR] [\\fB\\-\\-\\fR] \\fIprogram\\fR [\\fIargs\\fR...]",
        ".SH DESCRIPTION",
        _roff("cgprof runs PROGRAM with libcgprof.so preloaded, the way valgrind --tool=callgrind runs a "
              "program. The program must be built with -finstrument-functions (pkg-config --cflags cgprof "
              "gives the flags). At exit the runtime writes one Callgrind file per thread, "
              "callgrind.out.<pid>-<NN>; cgprof then lists the files written and the functions that took "
              "the most inclusive time, summed over the threads, on standard error. The program's standard "
              "output is left alone."),
        ".PP",
        _roff("The exit status is the program's; a program killed by a signal kills cgprof with the same "
              "signal (a shell shows 128+N). A bad option exits with status 2 before the program starts. "
              "A program that made no call to __cyg_profile_func_enter is reported as not instrumented."),
        ".SH OPTIONS",
        _roff("Every option of the runtime is also an environment variable: --name=VALUE sets CGPROF_NAME "
              "for the program (the option wins over the variable). The values are checked as the runtime "
              "checks them. Options end at the first argument that is not one, or at --."),
    ]
    for o in options:
        out.append(".TP")
        out.append("\\fB\\-\\-%s\\fR=\\fI%s\\fR" % (_roff(o.name), _roff(value_word(o))))
        default = o.default if o.default else "decided at run time"
        out.append(_roff("%s (%s; default: %s; accepted: %s)" % (o.help, o.variable, default, o.accepted)))
    own = [
        ("\\-\\-lib=\\fIPATH\\fR", "The runtime to preload (default: the one installed with cgprof, or the "
                                   "build tree's)."),
        ("\\-\\-top=\\fIN\\fR", "How many functions the summary lists (default 10; 0: none)."),
        ("\\-q, \\-\\-quiet", "No report on standard error: only the runtime's own messages."),
        ("\\-\\-version", "Print the version and exit."),
        ("\\-h, \\-\\-help", "Print the options and exit."),
    ]
    for flag, text in own:
        out += [".TP", "\\fB%s" % flag if "\\fI" in flag else "\\fB%s\\fR" % flag, _roff(text)]
    out += [
        ".SH FILES",
        _roff("callgrind.out.<pid>-<NN>, callgrind.out.<pid>.<part>-<NN>: the profiles (see --out)."),
        ".SH EXAMPLES",
        ".nf",
        _roff("gcc -O2 $(pkg-config --cflags cgprof) -o myprog myprog.c\n"
              "cgprof ./myprog args\n"
              "cgprof --time=sample --out=/tmp/prof.%p -- ./myprog\n"
              "kcachegrind callgrind.out.<pid>"),
        ".fi",
        ".SH SEE ALSO",
        "cgprof\\-control(1), callgrind_annotate(1), kcachegrind(1), valgrind(1)",
        "",
    ]
    return "\n".join(out)


def _write(path: str, text: str, mode: int) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    la = sub.add_parser("launcher")
    la.add_argument("template")
    la.add_argument("options_inc")
    la.add_argument("out")
    la.add_argument("--version", required=True)
    la.add_argument("--bindir", required=True)
    la.add_argument("--libdir", required=True)
    la.add_argument("--pkgdir", required=True)
    ca = sub.add_parser("command")
    ca.add_argument("template")
    ca.add_argument("out")
    ca.add_argument("--module", required=True)
    ca.add_argument("--bindir", required=True)
    ca.add_argument("--pkgdir", required=True)
    ma = sub.add_parser("man")
    ma.add_argument("options_inc")
    ma.add_argument("out")
    ma.add_argument("--version", required=True)
    args = ap.parse_args(argv)
    if args.what == "command":
        with open(args.template, encoding="utf-8") as f:
            template = f.read()
        _write(args.out, make_command(template, os.path.basename(args.out), args.module, args.bindir, args.pkgdir),
               0o755)
        return 0
    try:
        options = parse_options(args.options_inc)
        if args.what == "launcher":
            with open(args.template, encoding="utf-8") as f:
                template = f.read()
            _write(args.out, make_launcher(template, options, args.version, args.bindir, args.libdir, args.pkgdir), 0o755)
        else:
            _write(args.out, make_man(options, args.version), 0o644)
    except TableError as e:
        print("gen_cgprof.py: %s: %s" % (args.options_inc, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
