#!/usr/bin/env python3
"""The commands' command lines through argparse (cgproflib.cmdline):
cgprof flame's and cgprof pprof's options and operands in any order,
'--', the values' checks, and usage errors as UsageError with the
command's words (the command prints them, exit status 2).

Run as:  meson devenv -C build python3 ../tests/python/test_cmdline.py [-v]
"""

import unittest

from cgproflib import control, flame, launcher, pprof, report


class Pprof(unittest.TestCase):
    def test_forms(self):
        for argv, want in [
                (["run"], (None, ["run"])),
                (["-o", "f", "run"], ("f", ["run"])),
                (["-of", "run"], ("f", ["run"])),
                (["--out=f", "a", "b"], ("f", ["a", "b"])),
                (["a", "--out", "f", "b"], ("f", ["a", "b"])),
                (["-o", "f", "--", "-a", "--out=x"], ("f", ["-a", "--out=x"])),
                (["-"], (None, ["-"])),
                (["--help"], (None, None)),
                (["-h", "x"], (None, None))]:
            self.assertEqual(pprof.parse_args(argv), want, argv)

    def test_errors(self):
        for argv, words in [
                (["--bogus", "x"], "unknown option '--bogus' (cgprof pprof --help lists them)"),
                (["-o"], "option -o/--out needs a value"),
                (["--out=", "x"], "-o needs a file name"),
                ([], "nothing to read"),
                (["-o", "f"], "nothing to read"),
                (["--ou=f", "x"], "unknown option '--ou=f'")]:
            with self.assertRaises(pprof.UsageError, msg=argv) as e:
                pprof.parse_args(argv)
            self.assertIn(words, str(e.exception))


class Flame(unittest.TestCase):
    def test_forms(self):
        a = flame.parse_flame_args(["run"])
        self.assertEqual((a.out, a.threads, a.threads_given, a.diff, a.whats), (None, "each", False, False, ["run"]))
        a = flame.parse_flame_args(["--threads", "sum", "a", "--out=p", "b"])
        self.assertEqual((a.out, a.threads, a.threads_given, a.whats), ("p", "sum", True, ["a", "b"]))
        a = flame.parse_flame_args(["A", "--diff", "B"])
        self.assertEqual((a.diff, a.whats), (True, ["A", "B"]))
        a = flame.parse_flame_args(["--", "--diff"])
        self.assertEqual((a.diff, a.whats), (False, ["--diff"]))
        self.assertTrue(flame.parse_flame_args(["--help"]).help)

    def test_errors(self):
        for argv, words in [
                (["--bogus"], "unknown option '--bogus' (cgprof flame --help lists them)"),
                (["--threads=all", "x"], "--threads='all': accepted: sum|each"),
                (["--out=", "x"], "--out needs a prefix"),
                (["--out"], "option --out needs a value"),
                (["--diff", "a"], "--diff A B reads two runs, no more, no less: a"),
                (["--diff", "--threads=sum", "a", "b"], "--threads does not apply"),
                (["--thr=sum", "x"], "unknown option '--thr=sum'"),
                ([], "nothing to read")]:
            with self.assertRaises(flame.UsageError, msg=argv) as e:
                flame.parse_flame_args(argv)
            self.assertIn(words, str(e.exception))


class Report(unittest.TestCase):
    def test_forms(self):
        def parse(argv):
            a = report.parse_args(argv)
            return a.top, a.sort, a.threads, a.event, a.view, a.func, a.diff, a.whats, a.hide, a.hide_waits
        for argv, want in [
                (["a"], (20, "inclusive", "sum", None, None, None, None, ["a"], [], False)),
                (["--top=3", "--sort", "self", "a", "--threads=each", "b", "--event", "Ir"],
                 (3, "self", "each", "Ir", None, None, None, ["a", "b"], [], False)),
                (["a", "--callers", "f"], (20, "inclusive", "sum", None, "callers", "f", None, ["a"], [], False)),
                (["--callees=f", "a"], (20, "inclusive", "sum", None, "callees", "f", None, ["a"], [], False)),
                (["--diff", "--top=12", "A", "B"], (12, "inclusive", "sum", None, "diff", None, ("A", "B"), [], [], False)),
                (["A", "--diff", "B"], (20, "inclusive", "sum", None, "diff", None, ("A", "B"), [], [], False)),
                (["x", "--paths"], (20, "inclusive", "sum", None, "paths", None, None, ["x"], [], False)),
                (["--hide=a,b", "--hide", "c", "--hide-waits", "x"],
                 (20, "inclusive", "sum", None, None, None, None, ["x"], ["a", "b", "c"], True)),
                (["--", "--paths", "-x"], (20, "inclusive", "sum", None, None, None, None, ["--paths", "-x"], [], False))]:
            self.assertEqual(parse(argv), want, argv)
        self.assertTrue(report.parse_args(["-h", "--bogus"]).help)
        self.assertTrue(report.parse_args(["a", "--help"]).help)

    def test_errors(self):
        for argv, words in [
                (["--callers", "f", "--lines", "g", "x"], "one view at a time: --callers and --lines"),
                (["--diff", "--paths", "a", "b"], "one view at a time: --diff and --paths"),
                (["--paths=1", "x"], "--paths takes no value"),
                (["--hide-waits=1", "x"], "--hide-waits takes no value"),
                (["--top=x", "a"], "--top='x': accepted: a number of functions, 0 or more (0: all)"),
                (["--top", "-1", "a"], "--top='-1': accepted"),
                (["--sort=x", "a"], "--sort='x': accepted: inclusive|self|calls"),
                (["--threads=x", "a"], "--threads='x': accepted: sum|each"),
                (["--hide=,", "a"], "--hide=',': accepted: function names or globs"),
                (["--bogus", "a"], "unknown option '--bogus' (cgprof report --help lists them)"),
                (["-x", "a"], "unknown option '-x'"),
                (["--cal=f", "a"], "unknown option '--cal=f'"),
                ([], "nothing to read"),
                (["--lines"], "option --lines needs a value"),
                (["--diff", "a"], "--diff A B reads two runs, no more, no less: 'a'"),
                (["--paths", "--hide=x", "a"], "--paths shows every path: --hide and --hide-waits apply"),
                (["--latency", "--hide-waits", "a"], "--latency shows each function's calls"),
                (["--lines", "f", "--hide=g", "a"], "--lines shows one function's lines")]:
            with self.assertRaises(report.UsageError, msg=argv) as e:
                report.parse_args(argv)
            self.assertIn(words, str(e.exception), argv)


class Control(unittest.TestCase):
    """cgprof-control: -d's REASON and -e's EVENTS taken from the next
    argument as callgrind_control takes them, never a number for a
    reason; one action at a time; the messages."""

    def test_forms(self):
        def parse(argv):
            a = control.parse_args(argv)
            return a.action, a.arg, a.targets, a.events, a.back, a.stat, a.timeout
        for argv, want in [
                (["-d", "phase1", "42"], ("dump", "phase1", ["42"], None, False, False, 30.0)),
                (["--dump", "r", "x"], ("dump", "r", ["x"], None, False, False, 30.0)),
                (["-d", "42", "--timeout", "2"], ("dump", None, ["42"], None, False, False, 2.0)),
                (["42", "-d"], ("dump", None, ["42"], None, False, False, 30.0)),
                (["-d", "--", "server"], ("dump", None, ["server"], None, False, False, 30.0)),
                (["--dump=after warmup", "--timeout=1.5", "7"], ("dump", "after warmup", ["7"], None, False, False, 1.5)),
                (["-e", "server"], ("query", None, ["server"], ["ns", "calls"], False, False, 30.0)),
                (["-e", "calls", "-b", "--stat"], ("query", None, [], ["calls"], True, True, 30.0)),
                (["-i", "on", "a", "b"], ("collect", "on", ["a", "b"], None, False, False, 30.0)),
                (["--instr=off"], ("collect", "off", [], None, False, False, 30.0)),
                (["-z", "-h", "--bogus"], ("help", None, [], None, False, False, 30.0)),
                (["--version", "-q"], ("version", None, [], None, False, False, 30.0))]:
            self.assertEqual(parse(argv), want, argv)

    def test_errors(self):
        for argv, words in [
                (["-z", "-d", "42"], "-d: only one of -d, -z, -i, or -b/-e/-s, at a time"),
                (["-d", "-e"], "-e: only one of"),
                (["-q", "42"], "unknown option '-q' (cgprof-control --help lists them)"),
                (["-i", "maybe"], "-i takes 'on' or 'off', not 'maybe'"),
                (["-i"], "option -i/--instr needs a value"),
                (["--dump=", "42"], "--dump= needs a reason"),
                (["--zero=1"], "--zero takes no value"),
                (["--timeout", "-1", "-z"], "--timeout takes a number of seconds > 0, not '-1'"),
                (["--timeout", "x", "-z"], "--timeout takes a number of seconds, not 'x'"),
                (["-z", "-5"], "PID must be a process id, not '-5'"),
                (["-z", "0"], "PID must be a process id, not '0'"),
                (["-d", "two\nlines", "42"], "the dump reason must be one line")]:
            with self.assertRaises(control.UsageError, msg=argv) as e:
                control.parse_args(argv)
            self.assertIn(words, str(e.exception), argv)


class Launcher(unittest.TestCase):
    """cgprof [options] [--] program [args...]: argparse stops at the
    program's name; the runtime's options come from its table."""

    def parse(self, argv):
        a = launcher.parse_args(argv)
        return a.action, a.settings, a.lib, a.top, a.children, a.quiet, a.command

    def test_forms(self):
        for argv, want in [
                (["./p"], (None, {}, None, 10, "sum", False, ["./p"])),
                # the program's own options are never taken, ours included
                (["--paths", "./p", "--paths", "-q", "--top=1"],
                 (None, {"CGPROF_PATHS": "1"}, None, 10, "sum", False, ["./p", "--paths", "-q", "--top=1"])),
                (["--sample-hz", "200", "--time=exact", "p", "x"],
                 (None, {"CGPROF_SAMPLE_HZ": "200", "CGPROF_TIME": "exact"}, None, 10, "sum", False, ["p", "x"])),
                (["--crash=yes", "--top", "3", "--children=each", "--lib=/l", "-q", "p"],
                 (None, {"CGPROF_CRASH": "yes"}, "/l", 3, "each", True, ["p"])),
                (["--out", "o/", "--", "-p", "--", "a"], (None, {"CGPROF_OUT": "o/"}, None, 10, "sum", False,
                                                          ["-p", "--", "a"])),
                (["--", "--", "x"], (None, {}, None, 10, "sum", False, ["--", "x"])),
                (["-", "a"], (None, {}, None, 10, "sum", False, ["-", "a"])),
                # -h and --version end the scan where they stand
                (["--help", "--clock=x", "--bogus"], ("help", {}, None, 10, "sum", False, [])),
                (["-q", "--version", "--bogus"], ("version", {}, None, 10, "sum", False, []))]:
            self.assertEqual(self.parse(argv), want, argv)

    def test_every_option_of_the_table(self):
        for o in launcher.options.OPTIONS:
            value = {"BOOL": "1", "UINT": str(o.uint_range[0]) if o.uint_range else "1"}.get(o.type)
            if value is None:
                continue
            self.assertEqual(launcher.parse_args(["--%s=%s" % (o.name, value), "p"]).settings, {o.variable: value})

    def test_errors(self):
        for argv, words in [
                (["--tme=exact", "p"], 'unknown option "--tme"; did you mean --time? (cgprof --help lists them)'),
                (["--tme", "exact", "p"], 'unknown option "--tme"; did you mean --time?'),
                (["-x", "p"], 'unknown option "-x" (cgprof --help lists them)'),
                (["-5"], 'unknown option "-5"'),
                (["--bog=a b", "p"], 'unknown option "--bog"'),
                ([], "no program given"),
                (["-q"], "no program given"),
                (["--out"], "option --out needs a value"),
                (["--out", "-x", "p"], "option --out needs a value"),
                (["--top=x", "p"], '--top="x": accepted: a number of functions, 0 or more'),
                (["--children=x", "p"], '--children="x": accepted: sum|each|none'),
                (["--quiet=x", "p"], "--quiet takes no value"),
                (["--paths=maybe", "p"], '--paths="maybe": it is not a boolean; accepted: 0|1|no|yes|off|on|false|true'),
                # the first refused value is the error, as if judged where it stood
                (["--clock=x", "--bogus", "p"], '--clock="x": '),
                (["--bogus", "--clock=x", "p"], 'unknown option "--bogus"'),
                (["--clock=x", "--children=y", "p"], '--clock="x": '),
                (["--children=y", "--clock=x", "p"], '--children="y": ')]:
            with self.assertRaises(launcher.UsageError, msg=argv) as e:
                launcher.parse_args(argv)
            self.assertIn(words, str(e.exception), argv)


if __name__ == "__main__":
    unittest.main()
