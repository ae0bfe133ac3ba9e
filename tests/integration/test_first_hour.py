"""Mistakes a new user makes, caught before the run rather than after it
(issue 15, items 4 and 6): an output directory that cannot take the files
(the launcher refuses it with status 2, the runtime says it once at
start-up), a program that cannot be started (the shell's statuses and
words), a preloaded program that is not instrumented (one line with
CGPROF_VERBOSE=1), and the launcher's summary of a program whose children
wrote files too (summed, each, or left out: and it says which)."""

import glob
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

import cgtest
from cgtest import example, prog

LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))
START_UP = "(checked at the first call: the files are written at exit and on dumps, and fail unless it is fixed by then; "


class Scratch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-first-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        # a file where a directory is expected
        self.afile = os.path.join(self.dir, "afile")
        with open(self.afile, "w") as f:
            f.write("not a directory\n")

    def launch(self, args, env=None, **kw):
        return subprocess.run([LAUNCHER] + args, cwd=self.dir, env=env or cgtest.clean_environ(), capture_output=True,
                              text=True, timeout=cgtest.limit(300), **kw)

    def preloaded(self, argv, **variables):
        """The program run with the runtime preloaded, stderr merged into
        stdout: the order of its lines and the runtime's is kept."""
        env = cgtest.clean_environ(LD_PRELOAD=cgtest.LIB, **variables)
        return subprocess.run(argv, cwd=self.dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=cgtest.limit(300))

    def profiles(self):
        return sorted(glob.glob(os.path.join(self.dir, "**", "callgrind.*"), recursive=True))


class OutputDirectory(Scratch):
    """The launcher checks the files' directory before it starts the
    program, as valgrind refuses an output file it cannot open; the
    runtime, preloaded without it, says it at start-up, once."""

    def test_launcher_refuses_a_missing_directory_before_the_run(self):
        missing = os.path.join(self.dir, "missing")
        p = self.launch(["--out=%s/prof" % missing, "sh", "-c", "echo ran"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, "")   # never started
        self.assertEqual(p.stderr,
                         'cgprof: cannot write the profile files in "%s": no such directory (from --out="%s/prof"); '
                         "give a directory that exists and can be written with --out=DIR/PREFIX\n" % (missing, missing))

    def test_launcher_refuses_a_file_as_directory_from_the_environment(self):
        p = self.launch(["sh", "-c", "echo ran"], env=cgtest.clean_environ(CGPROF_OUT=self.afile + "/prof"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr,
                         'cgprof: cannot write the profile files in "%s": not a directory (from CGPROF_OUT="%s/prof"); '
                         "give a directory that exists and can be written with --out=DIR/PREFIX\n"
                         % (self.afile, self.afile))

    @unittest.skipIf(os.geteuid() == 0 and not shutil.which("setpriv"), "root writes everywhere; no setpriv")
    def test_launcher_refuses_a_directory_it_cannot_write(self):
        ro = os.path.join(self.dir, "ro")
        os.mkdir(ro, 0o555)
        os.chmod(self.dir, 0o755)
        argv = [LAUNCHER, "--out=%s/prof" % ro, "sh", "-c", "echo ran"]
        if os.geteuid() == 0:
            # as nobody, who cannot write into a directory of root's
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + argv
            os.chmod(os.path.dirname(self.dir), os.stat(os.path.dirname(self.dir)).st_mode | 0o005)
        p = subprocess.run(argv, cwd="/", env=cgtest.clean_environ(), capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertIn('cannot write the profile files in "%s": Permission denied' % ro, p.stderr)

    def test_launcher_leaves_a_directory_named_after_the_pid_to_the_program(self):
        # %p in the directory: the program may make it; the runtime says
        # at start-up that it is not there, and the run goes on
        p = self.launch(["--out=%s/d%%p/prof" % self.dir, "sh", "-c", "echo ran"])
        self.assertEqual(p.stdout, "ran\n")
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_runtime_says_it_once_at_start_up(self):
        missing = os.path.join(self.dir, "missing")
        for out, why, where in ((missing + "/prof", "no such directory", missing),
                                (self.afile + "/prof", "not a directory", self.afile)):
            run = self.preloaded([example("basic")], CGPROF_OUT=out)
            self.assertEqual(run.returncode, 0, run.stdout)
            lines = run.stdout.splitlines()
            said = [l for l in lines if l.startswith("cgprof:")]
            # one line, before the program's own output, none at the end
            self.assertEqual(said, ['cgprof: cannot write profile files in "%s": %s %sCGPROF_OUT="%s" sets where '
                                    'they go)' % (where, why, START_UP, out)])
            self.assertEqual(lines.index(said[0]), 0, run.stdout)
            self.assertTrue(lines[1].startswith("basic: fib(20)=6765"), run.stdout)
            self.assertEqual(self.profiles(), [])

    def test_a_writable_directory_is_not_mentioned_and_gets_the_files(self):
        out = os.path.join(self.dir, "sub")
        os.mkdir(out)
        run = self.preloaded([example("basic")], CGPROF_OUT=out + "/prof")
        self.assertNotIn("cgprof:", run.stdout)
        self.assertEqual(len(glob.glob(out + "/prof.*-01")), 1, os.listdir(out))
        self.assertEqual([n for n in os.listdir(out) if n.startswith(".")], [])   # the check left nothing

    def test_the_directory_made_during_the_run_gets_the_files(self):
        # said at start-up, but the files are written at exit: a program
        # that makes its output directory first gets its profile, and
        # nothing more is said
        later = os.path.join(self.dir, "later")
        run = self.preloaded(["sh", "-c", 'mkdir "$1" && exec "$2"', "sh", later, example("basic")],
                             CGPROF_OUT=later + "/prof")
        self.assertEqual(run.returncode, 0, run.stdout)
        # sh and mkdir run no hook: not a word from them; basic found it
        self.assertNotIn("cgprof:", run.stdout)
        self.assertEqual(len(glob.glob(later + "/prof.*-01")), 1, os.listdir(later))


class NotStarted(Scratch):
    """A program that cannot be started gets the status and the words a
    shell gives: 127 when there is nothing to run, 126 when what is there
    cannot be run."""

    def test_statuses_and_words_as_the_shell_says_them(self):
        plain = os.path.join(self.dir, "notexec")
        shutil.copy(example("basic"), plain)
        os.chmod(plain, 0o644)
        bad_interp = os.path.join(self.dir, "badinterp")
        with open(bad_interp, "w") as f:
            f.write("#!/nonexistent/interpreter\n")
        os.chmod(bad_interp, 0o755)
        garbage = os.path.join(self.dir, "garbage")
        with open(garbage, "wb") as f:
            f.write(b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\xff" * 48)
        os.chmod(garbage, 0o755)
        bindir = os.path.join(self.dir, "bin")
        os.mkdir(bindir)
        shutil.copy(plain, os.path.join(bindir, "inpath"))
        os.chmod(os.path.join(bindir, "inpath"), 0o644)
        env = cgtest.clean_environ(PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        cases = [
            ("./notexec", 126, "Permission denied"),
            (plain, 126, "Permission denied"),
            ("inpath", 126, "Permission denied"),   # found on PATH, not executable
            (self.dir, 126, "Is a directory"),
            ("./nonexistent", 127, "No such file or directory"),
            ("nonexistent-command", 127, "command not found"),
            (bad_interp, 127, "cannot execute: required file not found (its #! interpreter or its ELF loader)"),
            (garbage, 126, "cannot execute binary file: Exec format error"),
        ]
        for program, status, words in cases:
            p = self.launch([program], env=env)
            self.assertEqual((p.returncode, p.stderr), (status, 'cgprof: "%s": %s\n' % (program, words)), program)
            # and the shell's status, for the same command
            sh = subprocess.run(["bash", "-c", '"$0"', program], cwd=self.dir, env=env, capture_output=True,
                                timeout=cgtest.limit(60))
            self.assertEqual(sh.returncode, status, (program, sh.stderr))
            self.assertTrue(sh.stderr.decode().endswith(words.split(" (")[0] + "\n"), (program, sh.stderr))

    def test_a_program_in_the_directory_but_not_on_the_path(self):
        shutil.copy(example("basic"), os.path.join(self.dir, "here"))
        p = self.launch(["here"], env=cgtest.clean_environ(PATH="/usr/bin:/bin"))
        self.assertEqual((p.returncode, p.stderr), (127, 'cgprof: "here": command not found; did you mean ./here?\n'))


class NotInstrumented(Scratch):
    """Preloaded without the launcher, a program that never calls a hook
    gets one line at exit with CGPROF_VERBOSE=1, and none without."""

    def test_one_line_with_verbose(self):
        run = self.preloaded(["/bin/true", "an", "argument"], CGPROF_VERBOSE="1")
        self.assertEqual(run.returncode, 0)
        self.assertRegex(run.stdout, r'^cgprof: pid \d+, "/bin/true an argument": not instrumented, no call to '
                                     r'__cyg_profile_func_enter: no profile written \(build it with '
                                     r'-finstrument-functions: pkg-config --cflags cgprof\)\n\Z')
        self.assertEqual(self.profiles(), [])

    def test_silent_without_verbose(self):
        run = self.preloaded(["/bin/true"])
        self.assertEqual((run.returncode, run.stdout), (0, ""))

    def test_an_instrumented_program_is_not_called_so(self):
        run = self.preloaded([example("basic")], CGPROF_VERBOSE="1")
        self.assertNotIn("not instrumented", run.stdout)
        self.assertIn("cgprof: wrote ", run.stdout)

    def test_each_process_says_it_for_itself(self):
        # bash (not instrumented) runs basic (instrumented) as a child:
        # one line, for bash
        run = self.preloaded(["bash", "-c", '"$0"; exit 0', example("basic")], CGPROF_VERBOSE="1")
        said = [l for l in run.stdout.splitlines() if "not instrumented" in l]
        self.assertEqual(len(said), 1, run.stdout)
        self.assertIn('"bash -c ', said[0])


class Children(Scratch):
    """forker: the program's main calls work 4 times, its forked child 2
    (tests/progs/forker.c). The summary sums both processes by default,
    shows each with --children=each, and the program's alone with
    --children=none; its lines say which."""

    def summaries(self, stderr):
        """[(heading, {function: calls})] of the report's tables."""
        out = []
        for l in stderr.splitlines():
            l = l[len("cgprof: "):]
            if "top " in l and "functions by inclusive time" in l:
                out.append((l, {}))
            m = re.fullmatch(r"\s*[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+([0-9]+|-)\s+(\S+)(\s+\[.*\])?", l)
            if m and out:
                out[-1][1][m.group(2)] = 0 if m.group(1) == "-" else int(m.group(1))
        return out

    def run_forker(self, *opts):
        p = self.launch(list(opts) + [prog("forker")])
        self.assertEqual(p.returncode, 0, p.stderr)
        m = re.search(r"\(pid (\d+)\) exited", p.stderr)
        parent = int(m.group(1))
        m = re.search(r"1 file written by 1 other process \(its children, or anything else that wrote with the same "
                      r"prefix meanwhile\): pid (\d+); (.*)", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        return p, parent, int(m.group(1)), m.group(2)

    def test_summed_by_default(self):
        p, _, _, said = self.run_forker()
        self.assertEqual(said, "the summary sums them with the program's (--children=each: one summary each; "
                               "none: the program's only)")
        (heading, calls), = self.summaries(p.stderr)
        self.assertRegex(heading, r"^top \d+ functions by inclusive time, summed over 2 processes \(2 files; ")
        self.assertEqual(calls["work"], 6)
        self.assertEqual(calls["main"], 1)   # the child's main continues the parent's: calls=0

    def test_each(self):
        p, parent, child, said = self.run_forker("--children=each")
        self.assertEqual(said, "one summary each (--children=sum: their sum with the program's)")
        (h1, c1), (h2, c2) = self.summaries(p.stderr)
        self.assertRegex(h1, r"^pid %d, the program: top \d+ functions by inclusive time \(1 file; " % parent)
        self.assertRegex(h2, r"^pid %d: top \d+ functions by inclusive time \(1 file; " % child)
        self.assertEqual((c1["work"], c1["main"]), (4, 1))
        self.assertEqual((c2["work"], c2["main"]), (2, 0))

    def test_none(self):
        p, _, _, said = self.run_forker("--children=none")
        self.assertEqual(said, "the summary leaves them out (--children=sum: their sum with the program's; each: "
                               "one summary each)")
        (heading, calls), = self.summaries(p.stderr)
        self.assertRegex(heading, r"^top \d+ functions by inclusive time \(1 file; ")
        self.assertEqual(calls["work"], 4)

    def test_bad_value(self):
        p = self.launch(["--children=all", "true"])
        self.assertEqual((p.returncode, p.stderr), (2, 'cgprof: --children="all": accepted: sum|each|none\n'))
        p = self.launch(["--help"])
        self.assertIn("--children=sum|each|none", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
