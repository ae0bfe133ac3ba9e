"""The launcher, build/scripts/cgprof (cgproflib.launcher): its options
are the runtime's (runtime/base/options.inc), it refuses exactly the values the
runtime's parser refuses, it runs the program unchanged (stdout, exit
status, death by a signal), and it reports the files written, the top
functions, or that the program is not instrumented."""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import cgtest
from cgproflib import launcher, reader
from cgproflib.options import OPTIONS
from cgtest import example, prog

LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))
MAN = os.environ.get("CGPROF_MAN", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof.1"))
with open(os.path.join(cgtest.SOURCE_DIR, "examples", "expected.json")) as f:
    EXPECTED = json.load(f)


class OptionTable(unittest.TestCase):
    def test_help_lists_every_option_of_the_table(self):
        p = subprocess.run([LAUNCHER, "--help"], capture_output=True, text=True, timeout=cgtest.limit(60))
        self.assertEqual(p.returncode, 0, p.stderr)
        for o in OPTIONS:
            self.assertIn("--%s=" % o.name, p.stdout)
            self.assertIn(o.variable, p.stdout)
            self.assertIn("accepted: %s]" % o.accepted, " ".join(p.stdout.split()))

    def test_man_page_lists_every_option_of_the_table(self):
        with open(MAN) as f:
            man = f.read()
        self.assertTrue(man.startswith(".TH CGPROF 1"))
        for o in OPTIONS:
            self.assertIn("\\fB\\-\\-%s\\fR=" % o.name.replace("-", "\\-"), man)
            self.assertIn(o.variable, man)
        if shutil.which("man"):
            p = subprocess.run(["man", "-l", "-P", "cat", MAN], capture_output=True, text=True, timeout=cgtest.limit(60),
                               env=dict(os.environ, MANWIDTH="100"))
            if p.returncode == 0:
                self.assertIn("--sample-hz=N", p.stdout)
                self.assertNotIn("warning", p.stderr.lower())


class Runs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-launch-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def launch(self, args, env=None, timeout=cgtest.limit(300)):
        return subprocess.run([LAUNCHER] + args, cwd=self.dir, env=env or cgtest.clean_environ(), capture_output=True,
                              text=True, timeout=timeout)

    def files(self, pattern="callgrind.out.*"):
        return sorted(glob.glob(os.path.join(self.dir, pattern)))

    def report(self, stderr):
        return [l[len("cgprof: "):] for l in stderr.splitlines() if l.startswith("cgprof: ")]

    def top_table(self, stderr):
        """{function: (inclusive ms, %, calls)} of the report's table."""
        rows = {}
        for l in self.report(stderr):
            m = re.fullmatch(r"\s*([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+(?:>=)?([0-9]+|-)\s+(\S+)(\s+\[.*\])?", l)
            if m:
                rows[m.group(5)] = (float(m.group(1)), float(m.group(2)), 0 if m.group(4) == "-" else int(m.group(4)))
        return rows

    def test_basic_report_and_untouched_stdout(self):
        plain = subprocess.run([example("basic")], capture_output=True, text=True, timeout=cgtest.limit(60),
                               env=cgtest.clean_environ())
        p = self.launch([example("basic")])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, plain.stdout)
        files = self.files()
        self.assertEqual(len(files), 1)
        lines = self.report(p.stderr)
        self.assertIn("1 file written:", lines)
        self.assertIn("  " + os.path.basename(files[0]), lines)
        pid = int(re.search(r"\.(\d+)-01$", files[0]).group(1))
        self.assertTrue(any("(pid %d) exited with status 0" % pid in l for l in lines), lines)
        rows = self.top_table(p.stderr)
        self.assertEqual(len(rows), 10, p.stderr)
        self.assertEqual(rows["main"][2], 1)
        self.assertEqual(rows["fib"][2], EXPECTED["basic"]["functions"]["fib"])
        self.assertAlmostEqual(rows["main"][1], 100.0, delta=1.0)
        prof = reader.load(files[0])
        self.assertAlmostEqual(rows["main"][0], prof.inclusive("main") / 1e6, delta=0.0015)
        ordered = [r[0] for r in rows.values()]
        self.assertEqual(ordered, sorted(ordered, reverse=True))
        self.assertTrue(any("kcachegrind callgrind.out.%d " % pid in l for l in lines), lines)

    def test_repairs_said_once(self):
        """A profile with a repair: one warning line, in the launcher's
        summary (the runtime's own end-of-run line is turned off under
        it), with the counts; the runtime alone prints it at the end of the
        run; a clean -O2 program prints none. The repairs are those of
        CGPROF_INLINED=count: a function clang inlined into the frame an
        exception lands in keeps its frame there (docs/internals/design.md, "Calls as the
        hooks see them"); folded (the default) it has none to repair."""
        nest = os.path.join(cgtest.BUILD_DIR, "tests", "nesting")
        repaired, clean = os.path.join(nest, "throws-clang-O2"), os.path.join(nest, "repro-gcc-O2")
        if not os.path.exists(repaired):
            self.skipTest("no clang build of tests/nesting/progs/throws.cpp")
        p = self.launch(["--inlined=count", repaired])
        self.assertEqual(p.returncode, 0, p.stderr)
        warned = [l for l in p.stderr.splitlines() if "warning" in l]
        self.assertEqual(len(warned), 1, p.stderr)
        self.assertRegex(warned[0], r"^cgprof: warning: the profile holds repairs: 50 frames found left without "
                                    r"exit \(each counted as ending when found: calls made meanwhile may be shown "
                                    r"under it\); see its desc: lines and docs/internals/design.md, \"Repairs\"$")
        # the line comes after the table, before the files to open
        lines = self.report(p.stderr)
        at = [i for i, l in enumerate(lines) if l.startswith("warning")][0]
        self.assertTrue(lines[at + 1].startswith("the total of all threads"), lines)
        # the runtime alone, preloaded: its own line, once, at the end
        r = subprocess.run([repaired], cwd=self.dir,
                           env=cgtest.clean_environ(LD_PRELOAD=cgtest.LIB, CGPROF_INLINED="count"),
                           capture_output=True, text=True, timeout=cgtest.limit(60))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([l for l in r.stderr.splitlines() if "warning" in l], [warned[0]])
        r = subprocess.run([repaired], cwd=self.dir,
                           env=cgtest.clean_environ(LD_PRELOAD=cgtest.LIB, CGPROF_REPAIR_WARNING="0",
                                                    CGPROF_INLINED="count"),
                           capture_output=True, text=True, timeout=cgtest.limit(60))
        self.assertNotIn("warning", r.stderr)
        # folded, the default: nothing to repair
        p = self.launch([repaired])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("warning", p.stderr)
        # a clean run at -O2: nothing
        if os.path.exists(clean):
            p = self.launch([clean])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("warning", p.stderr)

    def test_threads_summed(self):
        p = self.launch(["--top=40", example("threads")])
        self.assertEqual(p.returncode, 0, p.stderr)
        files = self.files()
        self.assertEqual(len(files), EXPECTED["threads"]["threads"])
        self.assertIn("%d files written:" % len(files), self.report(p.stderr))
        rows = self.top_table(p.stderr)
        for fn, n in EXPECTED["threads"]["functions"].items():
            self.assertEqual(rows[fn][2], n, fn)
        total = sum(reader.load(f).total_self() for f in files)
        self.assertIn("%.3f ms in all threads" % (total / 1e6), p.stderr)

    def test_options_reach_the_runtime(self):
        env = cgtest.clean_environ(CGPROF_OUT="from-env", CGPROF_THREAD_EXIT="file")
        p = self.launch(["--out", "prof.%p", "--thread-exit=merge", "--verbose", "--top=0", "--",
                         example("threads")], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.files("from-env*"), [])
        files = [f for f in self.files("prof.*") if ".total." not in f]
        names = [os.path.basename(f) for f in files]
        self.assertTrue(all(re.fullmatch(r"prof\.\d+-0[01]", n) for n in names), names)
        # the total of all threads, named by the runtime's rule for this prefix
        (total,) = self.files("prof.total.*")
        self.assertIn("the total of all threads: " + os.path.basename(total), p.stderr)
        self.assertIn("or: callgrind_annotate " + os.path.basename(total) + "\n", p.stderr)
        self.assertIn("00", [n[-2:] for n in names])   # merge: the workers as thread 00
        self.assertIn("%d files written:" % len(files), p.stderr)
        self.assertNotIn("top ", p.stderr)             # --top=0
        self.assertIn("cgprof: wrote", p.stderr)       # --verbose: the runtime's own lines

    def test_the_suggested_readers_show_no_share_above_the_whole(self):
        """Issue 27 (6): the commands the launcher suggests, run as shown,
        on a recursive program: no function above 100% of the program
        (callgrind_annotate --inclusive=yes, suggested before, showed
        examples/basic's fib at 233%), and callgrind_annotate's fib is
        cgprof report's self time of fib."""
        p = self.launch(["--time=exact", "--throttle=off", "--top=0", cgtest.example("basic")])
        self.assertEqual(p.returncode, 0, p.stderr)
        line = [l for l in self.report(p.stderr) if l.startswith("open them with: ")]
        self.assertEqual(len(line), 1, p.stderr)
        commands = [c.split() for c in line[0][len("open them with: "):].split("   or: ")]
        self.assertEqual([c[:-1] for c in commands], [["kcachegrind"], ["cgprof", "report"], ["callgrind_annotate"]])
        ann = subprocess.run(commands[2] + ["--threshold=100"], cwd=self.dir, capture_output=True, text=True,
                             timeout=cgtest.limit(120))
        self.assertEqual(ann.returncode, 0, ann.stderr)
        shares = {m.group(2): float(m.group(1)) for m in
                  re.finditer(r"^\s*[\d,]+ \(\s*([\d.]+)%\)\s+\S*:(\w+) ", ann.stdout, re.M)}
        self.assertIn("fib", shares, ann.stdout)
        self.assertLessEqual(max(shares.values()), 100.0, ann.stdout)
        rep = subprocess.run([LAUNCHER] + commands[1][1:] + ["--top=50"], cwd=self.dir, capture_output=True,
                             text=True, timeout=cgtest.limit(120))
        self.assertEqual(rep.returncode, 0, rep.stderr)
        m = re.search(r"^\s*([0-9.]+)\s+[0-9.]+\s+([0-9.]+)\s+\d+\s+fib\b", rep.stdout, re.M)
        total = re.search(r"; ([0-9.]+) ms in all threads\)", rep.stdout)
        self.assertTrue(m and total, rep.stdout)
        self.assertAlmostEqual(shares["fib"], 100.0 * float(m.group(2)) / float(total.group(1)), delta=0.2)

    def test_the_files_of_every_kind_of_prefix(self):
        """What the launcher finds (cgproflib.naming, which inverts naming.c's
        file names) is what the runtime wrote, parts and total included:
        prefixes with the pid or without, twice, after an escaped %, in a
        directory, or only seemingly (%%p)."""
        for prefix, run in (("callgrind.out", "callgrind.out.{pid}"), ("sub/p.%p.x", "sub/p.{pid}.x"),
                            ("%p-%p", "{pid}-{pid}"), ("r%%%p", "r%{pid}"), ("q%%p", "q%p")):
            with self.subTest(prefix=prefix):
                cwd = tempfile.mkdtemp(dir=self.dir)
                os.mkdir(os.path.join(cwd, "sub"))
                p = subprocess.run([LAUNCHER, "--out=" + prefix, prog("api")], cwd=cwd, env=cgtest.clean_environ(),
                                   capture_output=True, text=True, timeout=cgtest.limit(300))
                self.assertEqual(p.returncode, 0, p.stderr)
                pid = re.search(r"\(pid (\d+)\)", p.stderr).group(1)
                written = sorted(os.path.relpath(os.path.join(d, f), cwd) for d, _, fs in os.walk(cwd) for f in fs)
                total = [f for f in written if "total" in f]
                self.assertEqual(len(total), 1, written)
                parts = [f for f in written if f != total[0]]
                self.assertEqual(len(parts), 4, written)   # tests/progs/api.c: 3 parts, 2 threads in the first
                report = self.report(p.stderr)
                self.assertEqual(report[1:6], ["4 files written:"] + ["  " + f for f in parts])
                self.assertIn("the total of all threads: " + total[0], report)
                self.assertIn("open them with: kcachegrind %s   or: cgprof report %s   or: callgrind_annotate %s"
                              % (run.format(pid=pid), run.format(pid=pid), total[0]), report)

    def test_exit_status_passed_through(self):
        p = self.launch([prog("exits"), "deep"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("exited with status 3", p.stderr)
        self.assertEqual(len(self.files()), 1)
        self.assertEqual(self.top_table(p.stderr)["descend"][2], 20)
        p = self.launch(["sh", "-c", "exit 42"])
        self.assertEqual(p.returncode, 42)

    def test_death_by_signal_passed_through(self):
        p = self.launch([prog("crasher"), "abort"])
        self.assertEqual(p.returncode, -signal.SIGABRT, p.stderr)
        self.assertIn("killed by SIGABRT", p.stderr)
        self.assertIn("no profile was written", p.stderr)
        self.assertEqual(self.files(), [])
        p = self.launch(["--crash=yes", prog("crasher"), "segv"])
        self.assertEqual(p.returncode, -signal.SIGSEGV, p.stderr)
        self.assertEqual(len(self.files()), 1)
        self.assertEqual(self.top_table(p.stderr)["crash_at"][2], 5)
        # through a shell, as a user sees it: 128 + the signal
        sh = subprocess.run(["sh", "-c", '"$0" "$1" abort; echo "status $?"', LAUNCHER, prog("crasher")],
                            cwd=self.dir, env=cgtest.clean_environ(), capture_output=True, text=True, timeout=cgtest.limit(60))
        self.assertIn("status %d" % (128 + signal.SIGABRT), sh.stdout)

    def test_signals_sent_to_the_launcher_reach_the_program(self):
        p = subprocess.Popen([LAUNCHER, "sh", "-c", "echo ready; exec sleep 30"], cwd=self.dir,
                             env=cgtest.clean_environ(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline(), "ready\n")
        import time
        time.sleep(0.3)   # the launcher sets its handlers right after starting the program
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=cgtest.limit(20))
        self.assertEqual(p.returncode, -signal.SIGTERM, err)   # the program's death, re-raised
        self.assertIn("was killed by SIGTERM", err)

    def test_arguments_after_the_program_are_its_own(self):
        p = self.launch(["--top=1", "sh", "-c", 'printf "%s|" "$@"', "sh", "--top=3", "--bogus", "--"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "--top=3|--bogus|--|")
        p = self.launch(["--", "--not-an-option"])
        self.assertEqual(p.returncode, 127, p.stderr)   # the program, not an option
        self.assertIn('"--not-an-option": command not found', p.stderr)

    def test_bad_options_exit_2_before_running(self):
        marker = os.path.join(self.dir, "ran")
        cmd = ["sh", "-c", "touch " + marker]
        long_name = os.path.join(self.dir, "p" * 200)
        too_long = ("/" + "d" * 200) * 20 + "/" + "p" * 30   # 4051 bytes, 4118 with what the runtime adds
        cases = [
            (["--bogus"], 'unknown option "--bogus"'),
            (["--sigal=USR2"], "did you mean --signal?"),
            (["-x"], 'unknown option "-x"'),
            (["--clock=rdtsc"], '--clock="rdtsc": it is not one of the accepted values; accepted: auto|tsc|monotonic'),
            (["--crash=maybe"], '--crash="maybe": it is not a boolean; accepted: 0|1|no|yes|off|on|false|true'),
            (["--sample-hz=5"], '--sample-hz="5": it is out of range; accepted: an integer from 10 to 100000'),
            (["--sample-hz", "lots"], '--sample-hz="lots": it is not a decimal integer'),
            (["--signal=KILL"], '--signal="KILL": it is not a signal that can ask for dumps'),
            (["--sample-signal=SEGV"], '--sample-signal="SEGV": it is not a signal'),
            (["--out=" + too_long + "/"], "it is 4065 bytes long"),   # DIR/: DIR/callgrind.out, judged whole
            (["--control-dir=rel"], '--control-dir="rel": it is not an absolute path'),
            (["--top=many"], '--top="many"'),
            # the runtime's limits, in its words (options.c through cgprof-rules)
            (["--out=" + long_name], '--out="%s": its last name is 200 bytes long' % long_name),
            (["--out=" + too_long], '--out="/ddd'),
            (["--out=" + too_long], "it is 4051 bytes long: with the up to 73 bytes the runtime adds, its files' "
                                    "full names would be up to 4124 bytes, over the system's limit of 4095"),
            (["--control-dir=" + too_long + "q" * 15], "it is 4066 bytes long: with the up to 33 bytes the "
                                                        "runtime adds, the control files' full names would be up "
                                                        "to 4099 bytes"),
            # a value shown escaped, on its message's one line
            (["--clock=tsc\ncgprof: fine\x01"], '--clock="tsc\\ncgprof: fine\\x01": it is not one of'),
        ]
        for args, message in cases:
            p = self.launch(args + cmd)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(message, p.stderr, args)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertFalse(os.path.exists(marker), args)
        for args, message in [(["--out"], "--out needs a value"), ([], "no program given")]:
            p = self.launch(args)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(message, p.stderr)

    def test_prefix_refused_in_the_environment(self):
        """A CGPROF_OUT from the environment that the runtime refuses (it
        would write no profile at all) stops the launcher before the run,
        in the runtime's words."""
        marker = os.path.join(self.dir, "ran")
        for value, why in (("x" * 197, "its last name is 197 bytes long"),):
            p = self.launch(["sh", "-c", "touch " + marker], env=cgtest.clean_environ(CGPROF_OUT=value))
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn('CGPROF_OUT="%s" in the environment: %s' % (value, why), p.stderr)
            self.assertFalse(os.path.exists(marker))
        # the command line's wins, and is judged instead
        p = self.launch(["--out=prof", "--top=0", example("basic")], env=cgtest.clean_environ(CGPROF_OUT="x" * 197))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(self.files("prof.*")), 2)

    def test_a_directory_for_prefix(self):
        """Issue 27 (8): CGPROF_OUT=DIR/ (or --out=DIR/) writes the files
        with their usual names into DIR, as the user means (it was
        refused: "names a directory"), from the runtime alone and through
        the launcher, which lists them."""
        d = os.path.join(self.dir, "profiles")
        os.mkdir(d)
        plain = subprocess.run([example("basic")], cwd=self.dir, env=cgtest.clean_environ(LD_PRELOAD=cgtest.LIB,
                               CGPROF_OUT=d + "/"), capture_output=True, text=True, timeout=cgtest.limit(120))
        self.assertEqual((plain.returncode, plain.stderr), (0, ""))
        pid = [f.split(".")[2].split("-")[0] for f in os.listdir(d)][0]
        self.assertEqual(sorted(os.listdir(d)), ["callgrind.out.%s-01" % pid, "callgrind.total.%s" % pid])
        p = self.launch(["--out=profiles/", "--top=0", example("basic")])
        self.assertEqual(p.returncode, 0, p.stderr)
        lpid = re.search(r"\(pid (\d+)\)", p.stderr).group(1)
        self.assertIn("  profiles/callgrind.out.%s-01" % lpid, self.report(p.stderr))
        self.assertEqual(len(os.listdir(d)), 4, os.listdir(d))

    def test_long_prefix(self):
        """A prefix of about 3000 bytes, in a tree the test makes: written
        there, listed, and the names the report shows are the runtime's."""
        deep = self.dir
        while len(deep) < 2950:
            deep = os.path.join(deep, "d" * min(200, 2950 - len(deep) - 1))
        os.makedirs(deep)
        p = self.launch(["--out=" + os.path.join(deep, "prof"), "--top=1", example("basic")])
        self.assertEqual(p.returncode, 0, p.stderr)
        names = sorted(os.listdir(deep))
        self.assertEqual(len(names), 2, names)
        report = self.report(p.stderr)
        rel = os.path.relpath(os.path.join(deep, names[0]), self.dir)
        self.assertIn("  " + rel, report)
        self.assertIn("the total of all threads: " + os.path.relpath(os.path.join(deep, names[1]), self.dir), report)

    def test_names_shown_escaped(self):
        """A file name with a byte that is not UTF-8, or a DEL (CGPROF_OUT
        refuses control bytes below 0x20), is shown quoted and escaped in
        the report; the program's name too."""
        prefix = os.fsdecode(b"caf\xe9\x7f")
        p = subprocess.run([LAUNCHER, "--out=" + prefix, "--top=0", example("basic")], cwd=self.dir,
                           env=cgtest.clean_environ(), capture_output=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, rb'cgprof:   "caf\\xe9\\x7f\.\d+-01"\n')
        self.assertRegex(p.stderr, rb'the total of all threads: "caf\\xe9\\x7f\.total\.\d+"\n')
        self.assertEqual([c for c in p.stderr if c < 0x20 and c != 0x0a or c >= 0x7f], [])

    def test_not_instrumented(self):
        src = os.path.join(self.dir, "plain.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\nstatic int twice(int x) { return 2 * x; }\n"
                    "int main(void) { printf(\"%d\\n\", twice(21)); return 4; }\n")
        exe = os.path.join(self.dir, "plain")
        subprocess.run(["cc", "-O0", "-g", "-o", exe, src], check=True, timeout=cgtest.limit(120))
        for argv, status in (([exe], 4), (["true"], 0)):
            p = self.launch(argv)
            self.assertEqual(p.returncode, status, p.stderr)
            if argv == [exe]:
                self.assertEqual(p.stdout, "42\n")
            self.assertIn("%s is not instrumented: it made no call to __cyg_profile_func_enter" % argv[0], p.stderr)
            self.assertIn("-finstrument-functions -g", p.stderr)
            self.assertNotIn("written", p.stderr)
            self.assertEqual(self.files(), [])

    def test_instrumented_without_exit(self):
        # _exit(): hooks ran, nothing written; the launcher must not call
        # the program uninstrumented.
        src = os.path.join(self.dir, "quick.c")
        with open(src, "w") as f:
            f.write("#include <unistd.h>\nstatic void leave(void) { _exit(5); }\n"
                    "int main(void) { leave(); return 0; }\n")
        exe = os.path.join(self.dir, "quick")
        subprocess.run(["cc", "-O0", "-g", "-finstrument-functions", "-o", exe, src], check=True, timeout=cgtest.limit(120))
        p = self.launch([exe])
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("no profile was written, though %s is instrumented" % exe, p.stderr)
        self.assertNotIn("not instrumented", p.stderr)

    def test_instrumented_library_only(self):
        # uselib's library is instrumented: the check follows the program's
        # run path to it.
        self.assertTrue(launcher.elf_calls_hooks(example("uselib")))
        self.assertIs(launcher.elf_calls_hooks("/bin/sh"), False)
        self.assertIsNone(launcher.elf_calls_hooks(os.path.join(cgtest.SOURCE_DIR, "README.md")))

    def test_report_goes_to_stderr_only(self):
        p = self.launch(["-q", example("basic")])
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stderr, "")
        self.assertEqual(len(self.files()), 1)

    def test_version(self):
        p = self.launch(["--version"])
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^cgprof \d+\.\d+\.\d+\n$")


if __name__ == "__main__":
    unittest.main(verbosity=2)
