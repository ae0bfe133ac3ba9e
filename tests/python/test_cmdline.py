#!/usr/bin/env python3
"""The commands' command lines through argparse (cgproflib.cmdline):
cgprof flame's and cgprof pprof's options and operands in any order,
'--', the values' checks, and usage errors as UsageError with the
command's words (the command prints them, exit status 2).

Run as:  meson devenv -C build python3 ../tests/python/test_cmdline.py [-v]
"""

import unittest

from cgproflib import flame, pprof


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


if __name__ == "__main__":
    unittest.main()
