"""cgproflib.options and cgproflib.optable: the table the build generated
from runtime/base/options.inc is the runtime's own (as the C compiler read the
file), and the launcher refuses exactly the values the runtime's parser
(runtime/base/options.c, asked through cgprof-rules) refuses, in its words."""

import os
import unittest

from cgproflib import launcher, optable, rules
from cgproflib.options import OPTIONS

SOURCE_DIR = os.environ.get("CGPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

def relative_of_length(n):
    """A relative path of n bytes: names of 150 bytes, the last of 1 to 151."""
    dirs = max(0, (n - 1) // 151)
    return ("d" * 150 + "/") * dirs + "x" * (n - 151 * dirs)


# Values each type of option is tried with: the accepted and refused ones of
# options.c's rules, and their edges.
COMMON = ["", " ", "x", "-1", "0", "1", "+1", "1x", "0x10", "none", "None", "\u017fig", "\u0130", "yes\n"]
BY_TYPE = {
    # the edges of NAME_MAX (a name, less the 73 bytes the runtime adds,
    # a %p counted as 10 digits) and of PATH_MAX (4095 bytes with those 73;
    # a relative one with this process's working directory)
    "PATH": ["callgrind.out", "/tmp/p.%p", "p.%%", "p%", "p%x", "dir/", "a\tb", "%p/x", "x" * 182, "x" * 183,
             "%p" * 18 + "x" * 2, "%p" * 18 + "x" * 3, "/" + "d" * 255 + "/x", "/" + "d" * 256 + "/x",
             ("/" + "d" * 200) * 20 + "/" + "x" * 7, ("/" + "d" * 200) * 20 + "/" + "x" * 8,
             ("d" * 200 + "/") * 19 + "x", "\u00e9t\u00e9", "\udcff"] + [
                 relative_of_length(4095 - 73 - len(os.getcwd()) - 1 + k) for k in (0, 1)],
    "DIR": ["/tmp", "tmp", ("/" + "d" * 200) * 20 + "/" + "d" * 41, ("/" + "d" * 200) * 20 + "/" + "d" * 42,
            "/" + "d" * 255, "/" + "d" * 256, "/a\x01b", "/"],
    "ENUM": [],   # filled from each option's accepted values
    "BOOL": ["no", "YES", "Off", "on", "true", "FALSE", "2", "y", "\u017f"],
    "SIGNAL": ["USR1", "usr2", "SIGUSR2", "sigusr1", "SIG", "SIGSIG", "10", "010", "0", "65", "64", "RTMIN", "rtmin+3",
               "RTMIN-1", "RTMAX", "RTMAX+1", "RTMAX-30", "RTMAX-31", "RTMIN+", "RTMIN+x", "RTMIN+-1",
               "RTMIN+99999999999999999999", "KILL", "STOP", "SEGV", "SIGABRT", "TRAP", "9", "19", "6", "PROF",
               "NONE", "sigNone", "u\u017fr1", "USR1 ", "IO", "SYS", "WINCH", "CHLD", "2147483648"],
    "UINT": ["9", "10", "100000", "100001", "1000", "01000", "1e3", "1000.0", "99999999999999999999999",
             "18446744073709551616", "4294968296"],
    "GLOBS": ["helper", "a,b", "*/vendor/*", "a,,b", ",a", "a,", ",", "a\\,b", "a\\", "a\\,", "\\,,x",
              "a\tb", "x" * 4095, "x" * 4096, "\u00e9t\u00e9*"],
    "THRESHOLD": ["off", "OFF", "oFf", "0", "00", "1:1", "100:5", "4000000000:1000000000", "4000000001:1",
                  "1:1000000001", "0:5", "5:0", "0:x", "10:x", "10:", ":5", "10", "10:5:", "10:5:1", "10 :5",
                  "10:+5", "+10:5", "1e3:5", "010:05", "99999999999999999999999:1"],
}


class Table(unittest.TestCase):
    def test_the_generated_table_is_the_runtimes(self):
        self.assertEqual([tuple(o) for o in OPTIONS], rules.option_table())

    def test_the_generated_table_is_options_inc(self):
        self.assertEqual(OPTIONS, optable.parse_options(os.path.join(SOURCE_DIR, "runtime", "base", "options.inc")))

    def test_every_type_has_a_placeholder(self):
        # --help and the man page show it after --name=
        for o in OPTIONS:
            self.assertNotEqual(optable.value_word(o), "VALUE", o.variable)

    def test_the_reader_refuses_what_it_cannot_read(self):
        for bad in ['CG_OPTION(x, "CGPROF_X", ENUM, "a", "a|b")',                    # 5 arguments
                    'CG_OPTION(x, CGPROF_X, ENUM, "a", "a|b", "h")',                  # not a string
                    'CG_OPTION(x, "CGPROF_X", UINT, "1", "1 to 9", "h")',             # no range
                    'CG_OPTION(help, "CGPROF_HELP", BOOL, "0", "0|1", "h")',          # the launcher's own
                    'CG_OPTION(x, "OTHER_X", BOOL, "0", "0|1", "h")',
                    '/* CG_OPTION(x, "CGPROF_X", BOOL, "0", "0|1", "h") */']:
            with self.assertRaises(optable.TableError, msg=bad):
                optable.parse_options_text(bad)
        got = optable.parse_options_text('/* c */ CG_OPTION(skip, "CGPROF_SKIP_FN", LIST, "", "a, b (x|y)",\n'
                                         '  "one " "two, \\"three\\"")')
        self.assertEqual(got, [optable.Option("skip", "CGPROF_SKIP_FN", "LIST", "", "a, b (x|y)",
                                              'one two, "three"')])
        self.assertEqual(got[0].name, "skip-fn")


class SameRulesAsTheRuntime(unittest.TestCase):
    """The launcher reports the runtime's verdict (options.c, through
    cgprof-rules) on every value tried, in its words."""

    def test_every_option_every_value(self):
        cases = []
        for o in OPTIONS:
            values = COMMON + BY_TYPE[o.type]
            if o.type == "ENUM":
                for a in o.accepted.split("|"):
                    values += [a, a.upper(), a.capitalize(), a + "x", a[:-1], " " + a]
            if o.default:
                values.append(o.default)
            cases += [(o, v) for v in values]
        verdicts = rules.refusals([(o.variable, v) for o, v in cases])
        shown = rules.quoted([v for _, v in cases])
        for (o, v), why, q in zip(cases, verdicts, shown):
            with self.subTest(option=o.variable, value=v):
                try:
                    args = launcher.parse_args(["--%s=%s" % (o.name, v), "true"])
                except launcher.UsageError as e:
                    # the value as the runtime's message shows it
                    self.assertEqual(str(e), "--%s=%s: %s; accepted: %s" % (o.name, q, why, o.accepted))
                    self.assertNotIn("\n", str(e))
                else:
                    self.assertIsNone(why)
                    self.assertEqual(args.settings, {o.variable: v})
        self.assertGreater(verdicts.count(None), 50)
        self.assertGreater(len(verdicts) - verdicts.count(None), 50)

    def test_values_for_every_type_of_the_table(self):
        for o in OPTIONS:
            self.assertIn(o.type, BY_TYPE, "no values to try for %s" % o.variable)

    def test_the_first_refused_value_is_the_error(self):
        # as if each value were judged where it stands: before a later
        # error of the command line, after an earlier one
        with self.assertRaisesRegex(launcher.UsageError, '^--clock="x": '):
            launcher.parse_args(["--clock=x", "--bogus", "true"])
        with self.assertRaisesRegex(launcher.UsageError, '^--clock="x": '):
            launcher.parse_args(["--clock=x", "--time=y", "true"])
        with self.assertRaisesRegex(launcher.UsageError, '^--clock="x": '):
            launcher.parse_args(["--clock=x", "--help"])
        with self.assertRaisesRegex(launcher.UsageError, '^unknown option "--bogus"'):
            launcher.parse_args(["--bogus", "--clock=x", "true"])
        self.assertEqual(launcher.parse_args(["--help", "--clock=x"]).action, "help")


if __name__ == "__main__":
    unittest.main(verbosity=2)
