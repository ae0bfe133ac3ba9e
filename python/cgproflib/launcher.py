"""cgprof: run a program with the cgprof runtime preloaded, then say which
profile files it wrote and where its time went.

    cgprof [options] [--] program [args...]

The `cgprof` command is an entry point of this module (scripts/command.in).
Its options are the runtime's (cgproflib.options: runtime/base/options.inc), and
the runtime's own parser judges their values (cgproflib.rules), so that a
value the runtime would refuse (its warning, the default used, the program
run anyway) is a usage error before anything runs.

Python, not shell: the report reads the Callgrind files with the format
reader the tests use (cgproflib.reader), and signals and exit statuses are
handled exactly with subprocess. Standard library only.

What the user gave (option values, the program's name, paths, the names of
the files written, which come from CGPROF_OUT) is never printed raw: a
newline in it would make a line that passes for one of cgprof's, and other
control bytes reach the terminal. Error messages show it as the runtime's
messages do (cg_quote(), asked through cgproflib.rules: between double
quotes, escaped); the report shows a name as it is when that quoting would
only add the quotes, else quoted.
"""

import argparse
import difflib
import errno
import os
import re
import resource
import signal
import subprocess
import sys
import textwrap
import time

from . import cmdline, elf, messages, naming, options, report, rules, signals, summary
from ._generated import VERSION
from .optable import LAUNCHER_OWN, value_word

PROG = "cgprof"
RUNTIME = "libcgprof.so"
# cgprof's private directory, where this package is: <libdir>/cgprof once
# installed, build/python in the build tree.
PRIVATE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INSTRUMENT_FLAGS = "-finstrument-functions -g -fno-omit-frame-pointer"
DEFAULT_TOP = 10
MAX_LISTED_FILES = 20
# --children: what the summary does with the files of other processes (the
# program's children) written with the same prefix during the run
CHILDREN = ("sum", "each", "none")

USAGE = ("usage: cgprof [options] [--] program [args...]\n"
         "       cgprof report [options] WHAT...   (reads saved profiles: cgprof report --help)\n"
         "       cgprof flame [options] WHAT...    (flame graphs of call paths: cgprof flame --help)\n"
         "       cgprof pprof [-o FILE] WHAT...    (the profile for go tool pprof, Pyroscope: cgprof pprof --help)")


class UsageError(Exception):
    """A bad command line: exit status 2, before the program runs."""


def quoted(*values):
    """Each value as the runtime's messages show one (cg_quote()), in one
    question to the runtime; Python's repr, never the raw text, if the
    helper cannot answer (its own error is reported where it matters)."""
    try:
        return rules.quoted(values)
    except rules.RulesError:
        return [repr(v) for v in values]


def shown(values):
    """For the report: each value as it is when quoting would only add the
    quotes, else quoted."""
    return [v if q == '"%s"' % v else q for v, q in zip(values, quoted(*values))]


# ---- the command line --------------------------------------------------------

def help_text():
    lines = [USAGE, "",
             "Runs PROGRAM with the cgprof runtime (%s) preloaded. PROGRAM must be built with" % RUNTIME,
             "-finstrument-functions (`pkg-config --cflags cgprof`). The runtime writes one Callgrind file",
             "per thread, callgrind.out.<pid>-<NN>; cgprof then prints on stderr the files written and the",
             "functions with the most inclusive time, summed over the threads. The program's stdout is left",
             "alone; its exit status is cgprof's (killed by a signal: cgprof dies of the same signal).",
             "",
             "A static PROGRAM cannot be preloaded: it must have the runtime linked in, from libcgprof.a",
             "(gcc -static ... $(pkg-config --static --libs cgprof)); cgprof runs it as it is, the options",
             "reaching it as the CGPROF_* variables. One without it is refused (exit status 1), saying how",
             "to link it.",
             "",
             "Runtime options: each sets the environment variable named, for the program only (and wins",
             "over that variable). A value the runtime would refuse is an error (exit status 2).", ""]
    wrap = textwrap.TextWrapper(width=100, initial_indent="      ", subsequent_indent="      ")
    for o in options.OPTIONS:
        lines.append("  --%s=%s" % (o.name, value_word(o)) + ("   (--%s alone: 1)" % o.name if o.type == "BOOL" else ""))
        default = o.default if o.default else "decided at run time"
        lines += wrap.wrap("%s [%s; default: %s; accepted: %s]" % (o.help, o.variable, default, o.accepted))
    lines += ["", "Launcher options:",
              "  --lib=PATH   the runtime to preload (default: the one installed with cgprof, else the build",
              "               tree's)",
              "  --top=N      how many functions the summary lists (default %d; 0: none)" % DEFAULT_TOP,
              "  --children=sum|each|none",
              "               the files other processes wrote with the same prefix during the run (the",
              "               program's children): summed with the program's in one summary (sum, the",
              "               default), one summary per process (each), or left out (none)",
              "  -q, --quiet  no report, only the runtime's own messages",
              "  --version    print the version",
              "  -h, --help   this text",
              "",
              "Options end at the first argument that is not one, or at --. Option values go as --name=VALUE",
              "or --name VALUE (one that starts with -: --name=VALUE).",
              "",
              "cgprof report [options] WHAT... reads saved profiles, cgprof's and Valgrind's (a run's prefix,",
              "files or a directory): the flat profile with recursion counted once, --callers/--callees FUNC,",
              "--lines FUNC, --diff A B, --paths; `cgprof report --help` lists its options. A program named",
              "report runs as ./report or after --.",
              "",
              "cgprof flame [--out PREFIX] [--threads=sum|each] WHAT... writes flame graphs (a page for a",
              "browser, speedscope's JSON, flamegraph.pl's collapsed stacks) of the call paths a run with",
              "CGPROF_PATHS=1 wrote (else estimated from its arcs); the launcher writes them itself after",
              "such a run. cgprof flame --diff A B draws the change between two runs. `cgprof flame --help`",
              "says more. A program named flame runs as ./flame or after --.",
              "",
              "cgprof pprof [-o FILE] WHAT... writes a run's profile as pprof's gzipped profile.proto (for go",
              "tool pprof, Grafana Pyroscope, Parca): one sample per call path of each part of each thread,",
              "with its calls, self and inclusive time, labelled by thread, tid, pid and part. `cgprof pprof",
              "--help` says more. A program named pprof runs as ./pprof or after --."]
    return "\n".join(lines) + "\n"


class Args:
    def __init__(self):
        self.settings = {}   # variable -> value
        self.lib = None
        self.top = DEFAULT_TOP
        self.children = "sum"
        self.quiet = False
        self.command = []
        self.action = None   # "help" / "version"


class _Setting(argparse.Action):
    """A runtime option (one entry of options.OPTIONS): its value kept
    with the others, in the order of the command line, for the runtime's
    parser to judge."""

    def __call__(self, parser, ns, value, option_string=None):
        ns.given.append((self.const, value))


class _Checked(argparse.Action):
    """--top and --children: judged here, at once (an error here comes
    after the runtime's refusal of a value given before it)."""

    def __call__(self, parser, ns, value, option_string=None):
        if self.dest == "children" and value not in CHILDREN:
            raise UsageError("--children=%s: accepted: %s" % (quoted(value)[0], "|".join(CHILDREN)))
        if self.dest == "top":
            if not re.fullmatch(r"[0-9]+", value):
                raise UsageError("--top=%s: accepted: a number of functions, 0 or more" % quoted(value)[0])
            value = int(value)
        setattr(ns, self.dest, value)


def _parser():
    """The launcher's command line, argparse's (cgproflib.cmdline): one
    option per entry of the runtime's table, the launcher's own, and the
    program with its arguments, which argparse leaves alone from the first
    argument that is no option (argparse.REMAINDER)."""
    ap = cmdline.Parser(PROG, UsageError, stop_at_help=True)
    ap.set_defaults(given=[], lib=None, top=DEFAULT_TOP, children="sum")
    for o in options.OPTIONS:
        ap.add_argument("--" + o.name, action=_Setting, const=o, dest="setting_" + o.field)
    ap.add_argument("--lib")
    ap.add_argument("--top", action=_Checked)
    ap.add_argument("--children", action=_Checked)
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("--version", action=cmdline.StopAction, dest="version")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    return ap


# The runtime's boolean options, which take no value when given alone
# (--paths: 1) and never the next argument, which may be the program.
_BOOLS = frozenset("--" + o.name for o in options.OPTIONS if o.type == "BOOL")


def _index(argv, given):
    """Where on the command line each (option, value) of given stands:
    argparse takes them from left to right, each as --name=VALUE or as
    --name VALUE."""
    at, j = [], 0
    for opt, value in given:
        while j < len(argv) and argv[j] != "--%s=%s" % (opt.name, value) and \
                not (argv[j] == "--" + opt.name and j + 1 < len(argv) and argv[j + 1] == value):
            j += 1
        at.append(j)
        j += 1
    return at


def parse_args(argv):
    """Raises UsageError; stops at the first non-option (the program). The
    runtime's parser judges the options' values, all in one question once
    the scan stops: a value it refuses is the error, ahead of any other the
    scan met after it, as if each value had been judged where it stood."""
    argv = list(argv)
    # a boolean alone is given its value, one word for one (the program's
    # words are taken back from argv as they were)
    words = [w + "=1" if w in _BOOLS else w for w in argv]
    ap = _parser()
    ns = argparse.Namespace(given=[])
    error, stop, unknown = None, None, []
    try:
        ns, unknown = ap.parse_known_args(words, ns)
    except UsageError as e:
        error = e
    except cmdline.Stop as e:
        stop = e.action
    given = ns.given
    if error is None and stop is None:
        command = ns.command
        after_dashes = command[:1] == ["--"]
        if after_dashes:
            command = command[1:]
        command = argv[len(argv) - len(command):]
        # what argparse takes for the program but is an option: a word
        # with a space in it, a negative number
        if not after_dashes and command and command[0].startswith("-") and command[0] != "-":
            unknown.insert(0, command[0])
        if unknown:
            name = unknown[0].partition("=")[0]
            if name.startswith("--"):
                near = difflib.get_close_matches(name[2:], list(options.BY_NAME) + list(LAUNCHER_OWN), 1)
                error = UsageError("unknown option %s%s (cgprof --help lists them)" %
                                   (quoted(name)[0], "; did you mean --%s?" % near[0] if near else ""))
            else:
                error = UsageError("unknown option %s (cgprof --help lists them)" % quoted(unknown[0])[0])
            # an unknown option is the error unless a value refused came before it
            first = words.index(unknown[0]) if unknown[0] in words else len(words)
            given = [g for g, at in zip(given, _index(words, given)) if at < first]
        elif not command:
            error = UsageError("no program given\n" + USAGE)
    for (opt, value), why in zip(given, options.refusals(given)):
        if why:
            raise UsageError("--%s=%s: %s; accepted: %s" % (opt.name, quoted(value)[0], why, opt.accepted))
    if error:
        raise error
    a = Args()
    a.settings = {opt.variable: value for opt, value in given}
    if stop:
        a.action = stop
        return a
    a.lib, a.top, a.children, a.quiet, a.command = ns.lib, ns.top, ns.children, ns.quiet, command
    return a


# ---- finding the runtime ------------------------------------------------------

def runtime_candidates():
    """Where libcgprof.so is, seen from this package: installed, in <libdir>
    above cgprof's private directory; in the build tree, build/runtime."""
    return (os.path.join(PRIVATE_DIR, "..", RUNTIME), os.path.join(PRIVATE_DIR, "..", "runtime", RUNTIME))


def find_runtime(explicit):
    if explicit:
        if not os.path.isfile(explicit):
            raise UsageError("--lib=%s: no such file" % quoted(explicit)[0])
        return os.path.abspath(explicit)
    for candidate in runtime_candidates():
        if os.path.isfile(candidate):
            return os.path.normpath(candidate)
    return None


# ---- is the program instrumented? -----------------------------------------------
# Dynamically, the runtime answers already: at exit() it writes a file for
# every thread that ran a hook, so a program that ended by exit() and left no
# file made no call to __cyg_profile_func_enter. What cannot be told from
# that alone is a program that ended without exit() (_exit(), a signal): the
# ELF files then say whether it could have called the hooks at all.

# The sanitizers whose runtime must come first in the list of libraries
# ("ASan runtime does not come first in initial library list").
FIRST_RUNTIMES = ("libasan.so", "libhwasan.so")


def sanitizer_runtime(prog, path, env):
    """The path of the sanitizer runtime that the dynamic program at path
    needs first (gcc's -fsanitize=address links libasan.so), as its dynamic
    linker resolves it (ld.so --list, without our preload), or None."""
    if prog is None or prog.static or not prog.interp or not path:
        return None
    names = [n for n in prog.needed if n.startswith(FIRST_RUNTIMES)]
    if not names:
        return None
    clean = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    try:
        out = subprocess.run([prog.interp, "--list", path], env=clean, capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        name, _, rest = line.strip().partition(" => ")
        if name in names and rest.startswith("/"):
            return rest.split(" (", 1)[0]
    return None

def secure_exec(path):
    """Why the loader runs path in secure-execution mode (AT_SECURE) when
    this user runs it, or None: a set-user-ID file of another owner, a
    set-group-ID file of another group."""
    import stat
    try:
        st = os.stat(path) if path else None
    except OSError:
        return None
    if st is None:
        return None
    # the kernel sets AT_SECURE when the exec changes the effective ids
    # away from the real ones
    if st.st_mode & stat.S_ISUID and st.st_uid != os.getuid():
        return "set-user-ID (owner uid %d)" % st.st_uid
    if st.st_mode & stat.S_ISGID and st.st_gid != os.getgid():
        return "set-group-ID (group gid %d)" % st.st_gid
    return None

def elf_calls_hooks(path, env=None):
    """True if the program, or one of the libraries it names that is found
    in its run path or LD_LIBRARY_PATH, calls __cyg_profile_func_enter; None
    if the program is not an ELF file this can read."""
    info = elf.dynamic(path)
    if info is None:
        return None
    undefined, needed, runpath = info
    if "__cyg_profile_func_enter" in undefined:
        return True
    origin = os.path.dirname(os.path.realpath(path))
    dirs = [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for d in runpath if d]
    dirs += [d for d in (env or os.environ).get("LD_LIBRARY_PATH", "").split(":") if d]
    for lib in needed:
        for d in dirs:
            candidate = os.path.join(d, lib)
            if os.path.isfile(candidate):
                sub = elf.dynamic(candidate)
                if sub and "__cyg_profile_func_enter" in sub[0]:
                    return True
                break
    return False


def runtime_loads_in(path, prog):
    """False if the runtime cannot be in the program at path (prog: its
    program_elf()): a static ELF executable without the runtime linked in
    (nothing reads LD_PRELOAD in a static program) or one that runs
    set-user-ID or set-group-ID to someone else (the dynamic linker ignores
    LD_PRELOAD's paths then). True otherwise, and when it cannot be told (a
    script: its interpreter loads it)."""
    try:
        st = os.stat(path)
        if (st.st_mode & 0o4000 and st.st_uid != os.geteuid()) or (st.st_mode & 0o2000 and st.st_gid != os.getegid()):
            return False
    except OSError:
        return True
    return prog is None or not prog.static or prog.runtime is not None


# ---- programs with the runtime linked in, static programs -----------------------
# A static program has no dynamic linker, so LD_PRELOAD means nothing to it:
# the runtime must be linked in, from libcgprof.a (docs/install.md, "Static
# programs"), which marks the program with an ELF note (runtime/entry/static.c)
# that strip keeps. A dynamic program may have it linked in too (libcgprof.a
# in a dynamic link): preloading libcgprof.so beside it would start a
# second runtime, which would take the dump signal from the first.

class ProgramELF:
    def __init__(self, static, runtime, hooks, interp=None, needed=()):
        self.static = static     # no PT_INTERP: no dynamic linker runs in it
        self.runtime = runtime   # the version of the runtime linked in, or None
        self.hooks = hooks       # static: __cyg_profile_func_enter in .symtab: True, False, None (stripped)
        self.interp = interp     # the dynamic linker (PT_INTERP)
        self.needed = list(needed)   # DT_NEEDED


def program_elf(path):
    """A ProgramELF if path is an ELF64 little-endian executable, else None
    (not ELF, unreadable). The headers and notes are read where they are
    (cgproflib.elf); the whole file only for a static program without the
    runtime, whose symbol table tells whether it is instrumented."""
    exe = elf.headers(path)
    if exe is None:
        return None
    hooks = elf.defines(path, "__cyg_profile_func_enter") if exe.static and exe.runtime is None else None
    return ProgramELF(exe.static, exe.runtime, hooks, exe.interp, exe.needed)


def static_refusal(program, static):
    """The lines that say why a static program without the runtime is
    refused, and how to link the runtime into it."""
    first = ("%s is a static program: the runtime cannot be preloaded into it (no dynamic linker runs in it to "
             "read LD_PRELOAD), and none is linked in" % program)
    if static.hooks:
        first += ": its __cyg_profile_func_enter is the C library's, which does nothing."
    elif static.hooks is False:
        first += "; it is not instrumented either (no __cyg_profile_func_enter)."
    else:
        first += "."
    build = ("Build it with %s and link" % INSTRUMENT_FLAGS) if static.hooks is False else "Link"
    return [first,
            "%s the runtime into it, from libcgprof.a, with pkg-config's static flags (anywhere on the "
            "command line), e.g." % build,
            "  gcc -static -O2 $(pkg-config --cflags cgprof) -o prog prog.c $(pkg-config --static --libs cgprof)",
            "and run it as before, with cgprof or alone (the options are then the CGPROF_* variables)."]


def which(program, env):
    if "/" in program:
        return program
    for d in env.get("PATH", os.defpath).split(":"):
        p = os.path.join(d or ".", program)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return program


def exec_failure(program, error, env):
    """(exit status, message) for a program that could not be started, as a
    shell says them: 127 when there is nothing to run, 126 when there is
    something that cannot be run."""
    if "/" not in program and isinstance(error, FileNotFoundError):
        here = os.path.join(".", program)
        hint = "; did you mean %s?" % here if os.path.isfile(here) and os.access(here, os.X_OK) else ""
        return 127, "command not found" + hint
    if isinstance(error, FileNotFoundError):
        path = which(program, env)
        if os.path.isfile(path):
            # the file is there: its interpreter (#!) or loader is not
            return 127, "cannot execute: required file not found (its #! interpreter or its ELF loader)"
        return 127, "No such file or directory"
    if isinstance(error, PermissionError) and os.path.isdir(which(program, env)):
        return 126, "Is a directory"
    if isinstance(error, PermissionError):
        return 126, "Permission denied"
    if error.errno == errno.ENOEXEC:
        return 126, "cannot execute binary file: Exec format error"
    return 126, "cannot run it: %s" % (error.strerror or error)


def out_dir_problem(directory):
    """Why the profile files cannot be written in directory, or None: as
    the runtime checks it at start-up (an unnamed O_TMPFILE file, else the
    permissions)."""
    try:
        if not os.path.isdir(directory):
            return "not a directory" if os.path.exists(directory) else "no such directory"
        try:
            os.close(os.open(directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600))
            return None
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                return e.strerror
        if not os.access(directory, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
            return "Permission denied"
    except OSError as e:
        return e.strerror
    return None


# ---- the summary -------------------------------------------------------------
# cgproflib.summary's: the launcher's summary is `cgprof report`'s flat
# profile of the files the run wrote, and its repair warning the same.

def report_summary(say, paths, top, prefix="", scope=""):
    """The functions with the most inclusive time summed over the files;
    prefix and scope say whose files they are when that is not plain."""
    summary.print_summary(say, paths, top, prefix, scope, quote=lambda p: quoted(p)[0])


def report_repairs(say, paths):
    """One warning line when the files hold repairs; nothing otherwise."""
    summary.report_repairs(say, paths)


def flame_summary(say, out, pid, cwd, parts):
    """After a run with CGPROF_PATHS: the flame graphs of the program's
    path files (cgproflib.flame), written next to its profile, in one
    line; nothing when it wrote none. Only the program's: its children's
    have their own pids, and `cgprof flame` on their prefixes."""
    from . import flame, paths
    try:
        written = flame.run_flame(out, pid, cwd, parts)
    except paths.PathsFormatError as e:
        say("no flame graphs: %s:%d: %s" % (shown([e.path])[0], e.line, e.message))
        return
    except OSError as e:
        say("no flame graphs: %s: %s" % (shown([e.filename])[0] if e.filename else "", e.strerror or e))
        return
    except (ValueError, rules.RulesError) as e:
        say("no flame graphs: %s" % e)
        return
    if not written:
        return
    names = shown([os.path.relpath(p) if not os.path.relpath(p).startswith("..") else p for p in written])
    threads = names[3:]
    say("flame graphs of the call paths: %s (a browser), %s (speedscope), %s (flamegraph.pl)%s" %
        (names[0], names[1], names[2], "; per thread: " + " ".join(threads) if len(threads) <= 4 else
         "; per thread: %s ... %s (%d files)" % (threads[0], threads[-1], len(threads))))


# ---- running -----------------------------------------------------------------

# Sent to cgprof, meant for the program: passed on. SIGINT and SIGQUIT come
# from the terminal to the program as well, so cgprof only ignores them while
# it waits (as system() does).
FORWARDED = (signal.SIGHUP, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)


def die_like(sig):
    """Ends cgprof as the program ended: killed by the same signal, so a
    shell or a parent sees the same status. No core of cgprof itself."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ValueError, OSError):
        pass
    try:
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    except (OSError, ValueError):
        pass
    os._exit(128 + sig)   # a signal whose default action does not end a process


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # `cgprof report ...` reads saved files (cgproflib.report); a program
    # named report runs as ./report or after --.
    if argv[:1] == ["report"]:
        return report.main(argv[1:])
    # `cgprof flame ...` the same (cgproflib.flame)
    if argv[:1] == ["flame"]:
        from . import flame
        return flame.flame_main(argv[1:])
    # `cgprof pprof ...` the same (cgproflib.pprof)
    if argv[:1] == ["pprof"]:
        from . import pprof
        return pprof.main(argv[1:])
    # The signals cgprof forwards to the program are held from here until
    # the program runs and the forwarding is in place, then forwarded: one
    # sent to a cgprof that has just started is not lost and does not end
    # it. The program starts with the mask cgprof was given.
    original_mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        return _main(argv, original_mask)
    except BrokenPipeError:
        return 1
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, original_mask)


def _main(argv, original_mask):
    say = messages.to_stderr(PROG)
    try:
        args = parse_args(argv)
    except UsageError as e:
        say(str(e))
        return 2
    except rules.RulesError as e:
        say(str(e))
        return 1
    if args.action == "help":
        sys.stdout.write(help_text())
        return 0
    if args.action == "version":
        sys.stdout.write("cgprof %s\n" % VERSION)
        return 0
    # A static program runs the runtime linked into it, or cannot be
    # profiled: refused before it runs, for nothing, saying how to link it.
    prog = program_elf(which(args.command[0], os.environ))
    static = prog if prog is not None and prog.static else None
    linked = prog is not None and prog.runtime is not None
    if static is not None and static.runtime is None:
        program, = shown([args.command[0]])
        say("\n".join(static_refusal(program, static)))
        return 1
    try:
        lib = find_runtime(args.lib)
    except UsageError as e:
        say(str(e))
        return 2
    if lib is None and not linked:
        say("cannot find %s (installed: %s; build tree: %s); give it with --lib=PATH" %
            ((RUNTIME,) + tuple(os.path.normpath(c) for c in runtime_candidates())))
        return 1
    if lib and re.search(r"[\s:]", lib):
        if not linked:
            say("%s: the dynamic linker cannot preload a path with a space or a colon in it" % quoted(lib)[0])
            return 1
        lib = None

    env = dict(os.environ)
    env.update(args.settings)
    # Preloaded into a static program too: it reads nothing of it, but the
    # dynamic programs it starts are profiled, as a dynamic one's are. Not
    # into a dynamic program that has the runtime linked in: two runtimes.
    if lib and (static is not None or not linked):
        env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        # AddressSanitizer's runtime refuses to start unless it is the
        # first library: before ours, as the program's own
        first = sanitizer_runtime(prog, which(args.command[0], os.environ), env)
        if first:
            env["LD_PRELOAD"] = first + ":" + env["LD_PRELOAD"]
    if linked and prog.runtime != VERSION and not args.quiet:
        say("note: %s has the runtime of cgprof %s linked in, and this is cgprof %s: the options were checked "
            "against %s's rules" % (shown([args.command[0]])[0], shown([prog.runtime])[0], VERSION, VERSION))
    if not args.quiet:
        # the summary says it, once, for all the files
        env.setdefault("CGPROF_REPAIR_WARNING", "0")
    # The prefix the runtime will use. One it refuses is not replaced by
    # the default: it writes no profile at all. The command line's were
    # judged already; one from the environment is judged here, before the
    # run, which would be for nothing.
    out_option = options.BY_VARIABLE["CGPROF_OUT"]
    out = env.get("CGPROF_OUT")
    try:
        why = None if out is None or out_option.variable in args.settings else \
            options.refusals([(out_option, out)])[0]
    except rules.RulesError as e:
        say(str(e))
        return 1
    if why:
        say("%s=%s in the environment: %s; accepted: %s; the runtime would write no profile" %
            (out_option.variable, quoted(out)[0], why, out_option.accepted))
        return 2
    if out is None:
        out = out_option.default
    elif out.endswith("/"):
        out += out_option.default   # a directory: the files with their usual names there (options.c)
    cwd = os.getcwd()
    # The files' directory, checked now rather than after the whole run,
    # as valgrind refuses an output file it cannot open. Not when the
    # directory is named after the pid (%p): the program may make it.
    names_pid = naming.directory_names_pid(out)
    if not names_pid:
        directory = naming.directory(out, 0, cwd)
        problem = out_dir_problem(directory)
        if problem:
            where = ("--out=%s" % quoted(out)[0] if out_option.variable in args.settings else
                     "%s=%s" % (out_option.variable, quoted(out)[0]) if "CGPROF_OUT" in os.environ else
                     "the default prefix %s" % quoted(out)[0])
            say("cannot write the profile files in %s: %s (from %s); give a directory that exists and can be "
                "written with --out=DIR/PREFIX" % (quoted(directory)[0], problem, where))
            return 2
    before = {} if names_pid else naming.scan(out, 0, cwd)

    # The dump signal is blocked across the exec and unblocked by the
    # runtime once its handler is in (_CGPROF_UNBLOCK_SIGNAL): a dump asked
    # for in the program's first milliseconds, before the runtime's
    # constructor runs, waits for it instead of ending the program. Not if
    # the signal was blocked here already: the program gets it blocked, as
    # it would have.
    try:
        dump_signal = signals.number(env.get("CGPROF_SIGNAL") or options.BY_VARIABLE["CGPROF_SIGNAL"].default)
        if dump_signal < 0:
            dump_signal = signals.number(options.BY_VARIABLE["CGPROF_SIGNAL"].default)
    except rules.RulesError as e:
        say(str(e))
        return 1
    blocked = (dump_signal > 0 and dump_signal not in original_mask
               and runtime_loads_in(which(args.command[0], env), prog))
    child_mask = set(original_mask)
    if blocked:
        env["_CGPROF_UNBLOCK_SIGNAL"] = str(dump_signal)
        child_mask.add(dump_signal)
    started = time.time()
    try:
        child = subprocess.Popen(args.command, env=env,
                                 preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, child_mask))
    except OSError as e:
        status, why = exec_failure(args.command[0], e, env)
        say("%s: %s" % (quoted(args.command[0])[0], why))
        return status
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    for s in FORWARDED:
        signal.signal(s, lambda sig, _frame: child.send_signal(sig))
    # the forwarding in place: what was sent to cgprof meanwhile goes to
    # the program now
    signal.pthread_sigmask(signal.SIG_SETMASK, original_mask)
    status = child.wait()
    # The program is gone: a dump asked for now has nothing to dump (it
    # must not end cgprof while it reports); the others end cgprof.
    for s in FORWARDED:
        signal.signal(s, signal.SIG_IGN if s in (signal.SIGUSR1, signal.SIGUSR2) else signal.SIG_DFL)
    if args.quiet:
        return status if status >= 0 else die_like(-status)

    pid = child.pid
    seconds = time.time() - started
    program, = shown([args.command[0]])
    if status >= 0:
        say("%s (pid %d) exited with status %d after %.2f s" % (program, pid, status, seconds))
    else:
        say("%s (pid %d) was killed by %s after %.2f s" % (program, pid, signals.name(-status), seconds))

    after = naming.scan(out, pid, cwd)
    new = {p: v for p, v in after.items() if before.get(p) != v}
    mine = sorted((p for p, v in new.items() if v.pid in (pid, None)), key=lambda p: (new[p].part, new[p].thread, p))
    others = sorted((p for p, v in new.items() if v.pid not in (pid, None)),
                    key=lambda p: (new[p].pid, new[p].part, new[p].thread, p))

    if mine or others:
        # the processes whose files the summary reads, and how: the sum of
        # them all, each one, or the program's only
        pids = sorted({new[p].pid for p in others})
        if args.children == "none" and mine:
            groups = [(("", ""), mine)]
        elif args.children == "each":
            groups = [(("pid %d%s: " % (q, ", the program" if q == child.pid else ""), ""), files)
                      for q, files in [(child.pid, mine)] + [(q, [p for p in others if new[p].pid == q])
                                                             for q in pids] if files]
        else:
            n = len(pids) + (1 if mine else 0)
            groups = [(("", "") if n == 1 else ("", ", summed over %d processes" % n), mine + others)]
        files = mine or others
        if mine:
            say("%d file%s written:" % (len(mine), "" if len(mine) == 1 else "s"))
        listed = mine[:MAX_LISTED_FILES]
        names = [os.path.relpath(p) if not os.path.relpath(p).startswith("..") else p for p in listed]
        first = os.path.relpath(files[0])
        run = naming.run_name(first, new[files[0]])
        try:
            total = naming.total_path(out, pid, cwd) if mine else None
        except rules.RulesError as e:
            say(str(e))
            total = None
        if total and os.path.exists(total):
            # callgrind_annotate reads one part: the total is the whole program
            first = os.path.relpath(total)
        else:
            total = None
        # every name shown, in one question
        names = shown(names + [run, first])
        run, first = names[-2:]
        for name in names[:-2]:
            say("  " + name)
        if len(mine) > len(listed):
            say("  ... and %d more" % (len(mine) - len(listed)))
        if others:
            say("%d file%s written by %d other process%s (its children, or anything else that wrote with the "
                "same prefix meanwhile): pid%s %s; %s" %
                (len(others), "" if len(others) == 1 else "s", len(pids), "" if len(pids) == 1 else "es",
                 "" if len(pids) == 1 else "s", " ".join(map(str, pids[:10])) + (" ..." if len(pids) > 10 else ""),
                 {"sum": "the summary sums them with the program's (--children=each: one summary each; "
                         "none: the program's only)",
                  "each": "one summary each (--children=sum: their sum with the program's)",
                  "none": "the summary leaves them out (--children=sum: their sum with the program's; each: "
                          "one summary each)" if mine else
                          "the program wrote none, the summary is theirs"}[args.children]))
        for (prefix, scope), group in groups:
            report_summary(say, group, args.top, prefix, scope)
        report_repairs(say, [p for _, group in groups for p in group])
        if total:
            say("the total of all threads: %s" % first)
        # not callgrind_annotate --inclusive=yes: it adds a recursive
        # function's time once per level (examples/basic's fib at 233%)
        say("open them with: kcachegrind %s   or: cgprof report %s   or: callgrind_annotate %s" %
            (run, run, first))
        if "CGPROF_PATHS" in env and mine:
            flame_summary(say, out, pid, cwd, [(new[p].part, new[p].thread) for p in mine])
        elif mine:
            say("a flame graph: cgprof flame %s   (its stacks estimated from the arcs: exact with --paths)" % run)
        if env.get("CGPROF_LATENCY", "").lower() in ("1", "yes", "on", "true") and mine:
            say("latency (p50, p90, p99, max of each function's calls): cgprof report --latency %s" % run)
    elif status < 0:
        say("no profile was written: the program was killed before exit() (with --crash=yes a crash "
            "still leaves its profile)")
    else:
        exe = which(args.command[0], env)
        hooks = elf_calls_hooks(exe, env)
        secure = secure_exec(exe)
        if secure:
            say("no profile was written: %s is %s, so the dynamic loader ran it in secure-execution mode, "
                "which ignores LD_PRELOAD (and a runtime linked in writes nothing there either); profile a copy "
                "without that bit" % (program, secure))
        elif hooks:
            say("no profile was written, though %s is instrumented: it ended without exit() (_exit()?), "
                "or the files could not be written (see the runtime's message above)" % program)
        else:
            say("%s is not instrumented: it made no call to __cyg_profile_func_enter, so there is nothing "
                "to profile." % program)
            say("Rebuild it (and the libraries you want to see) with %s, e.g." % INSTRUMENT_FLAGS)
            say("  gcc -O2 %s -o prog prog.c       (or: $(pkg-config --cflags cgprof))" % INSTRUMENT_FLAGS)
    return status if status >= 0 else die_like(-status)

