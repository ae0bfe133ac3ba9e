"""cgproflib.rules: what crosses between the package and cgprof-rules, the
helper that answers with the runtime's own code."""

import os
import unittest

from cgproflib import rules


class Rules(unittest.TestCase):
    """What crosses between the package and cgprof-rules."""

    def test_any_text_comes_back_as_it_went(self):
        for text in ("a\\b", "a\\nb", "new\nline", "tab\there", "\\", os.fsdecode(b"\xff\x01")):
            self.assertEqual(rules.expansions([(text, 1)]), [text])

    def test_values_quoted_as_the_runtime_shows_them(self):
        # cg_quote(), whole: control bytes, backslash, quote and bytes that
        # are not UTF-8 escaped, valid UTF-8 kept
        self.assertEqual(rules.quoted(["tsc\ncgprof: x", "a\\b\"c", "\t\x01\x7f", "caf\u00e9",
                                       os.fsdecode(b"\xff\xc3"), "x" * 5000]),
                         ['"tsc\\ncgprof: x"', '"a\\\\b\\"c"', '"\\t\\x01\\x7f"', '"caf\u00e9"',
                          '"\\xff\\xc3"', '"%s"' % ("x" * 5000)])

    def test_a_helper_that_cannot_run(self):
        helper = rules.HELPER
        self.addCleanup(setattr, rules, "HELPER", helper)
        rules.HELPER = "/nonexistent/cgprof-rules"
        with self.assertRaisesRegex(rules.RulesError, "cannot run /nonexistent/cgprof-rules"):
            rules.expansions([("x", 1)])
        rules.HELPER = "false"
        with self.assertRaisesRegex(rules.RulesError, "failed"):
            rules.expansions([("x", 1)])


if __name__ == "__main__":
    unittest.main(verbosity=2)
