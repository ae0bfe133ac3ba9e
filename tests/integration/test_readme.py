"""docs/variables.md against runtime/base/options.inc, the one table of options
(as the build read it into cgproflib.options): every variable of the table
is in the page's table and none other, with the table's default and
accepted values; the launcher's and the install pages name only options
that exist; the README keeps its two commands first, the test command the
one CI runs."""

import os
import re
import unittest

from cgproflib.optable import LAUNCHER_OWN
from cgproflib.options import OPTIONS

SOURCE_DIR = os.environ.get("CGPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def page(name):
    with open(os.path.join(SOURCE_DIR, name), encoding="utf-8") as f:
        return f.read()


README = page("README.md")


def readme_table():
    """{variable: (default, meaning)} of the environment variables' table."""
    rows = {}
    for line in page("docs/variables.md").splitlines():
        m = re.fullmatch(r"\|\s*`(CGPROF_\w+)`\s*\|\s*(.*?)\s*\|\s*(.*?)\s*\|", line)
        if m:
            if m.group(1) in rows:
                raise AssertionError("%s twice in docs/variables.md's table" % m.group(1))
            rows[m.group(1)] = (m.group(2).strip("`"), m.group(3))
    return rows


class ReadmeTable(unittest.TestCase):
    def setUp(self):
        self.rows = readme_table()

    def test_same_variables(self):
        self.assertEqual(sorted(self.rows), sorted(o.variable for o in OPTIONS),
                         "docs/variables.md's table and runtime/base/options.inc list different variables")

    def test_same_defaults(self):
        for o in OPTIONS:
            if o.variable not in self.rows:
                continue
            default, _ = self.rows[o.variable]
            if o.default:
                self.assertEqual(default, o.default, o.variable)
            else:
                # decided at run time: the table's help says what it is
                self.assertIn("default: " + default, o.help, o.variable)

    def test_same_accepted_values(self):
        for o in OPTIONS:
            if o.variable not in self.rows:
                continue
            _, meaning = self.rows[o.variable]
            if o.type == "ENUM":
                for value in o.accepted.split("|"):
                    self.assertIn("`%s`" % value, meaning,
                                  "%s: docs/variables.md does not name %s" % (o.variable, value))
            elif o.type == "UINT":
                lo, hi = o.uint_range
                self.assertIn("%d to %d" % (lo, hi), meaning,
                              "%s: docs/variables.md does not give the range" % o.variable)
            elif o.type == "BOOL":
                self.assertIn("`1`", meaning, o.variable)
            elif o.type == "SIGNAL":
                self.assertEqual("none" in o.accepted, "`none`" in meaning, "%s: `none` accepted?" % o.variable)
                if "number" in o.accepted:
                    self.assertIn("number", meaning, o.variable)
            elif o.type == "DIR":
                self.assertIn("absolute", meaning, o.variable)


class ReadmeFront(unittest.TestCase):
    def test_two_commands_first(self):
        # the first block a newcomer sees: the demo, and the test command
        # that .ci/run runs
        first = re.search(r"^```sh\n(.*?)^```$", README, re.M | re.S).group(1)
        self.assertEqual([line.split()[0] for line in first.splitlines()], ["scripts/demo", "scripts/test"])
        self.assertRegex(page(".ci/run"), r"(?m)^exec scripts/test$")

    def test_short(self):
        self.assertLessEqual(README.count("\n"), 350, "the README is the front page: at most 350 lines")


class ReadmeLauncher(unittest.TestCase):
    def test_options_named_exist(self):
        names = {o.name for o in OPTIONS} | set(LAUNCHER_OWN)
        text = page("docs/cgprof.md") + page("docs/install.md")
        named = set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", text))
        # options of other commands quoted there (pkg-config, meson, the
        # linker, valgrind, callgrind_annotate), and the placeholder of the rule
        named -= {"cflags", "libs", "static", "variable", "prefix", "libdir", "destdir", "inclusive", "tool", "name",
                  "wrap", "as-needed", "no-as-needed", "push-state", "pop-state"}
        self.assertTrue(named, "the launcher's section names no option")
        self.assertEqual(sorted(named - names), [], "options the launcher does not have")


if __name__ == "__main__":
    unittest.main(verbosity=2)
