"""Static programs, linked with libcgprof.a (docs/install.md, "Static programs"):
built here with the flags of the build's own cgprof.pc (`pkg-config
--static --cflags --libs cgprof`, its libdir pointed at the build tree),
gcc's and clang's, and run without any preload. Each profile is compared
whole with what the same source gives built dynamically and preloaded
(every arc of every thread, thread by thread: the numbers the
pthread_create wrapper gives are the same) and with the counts the program
makes by construction; then each wrapper that a static program needs: the
dump signal (the service thread), sigaction (stepping aside), exec,
longjmp, exceptions in clang-built C++. And the launcher: a static program
with the runtime runs as any other, one without it is refused, saying how
to link it."""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import cgtest
from cgproflib import reader
from cgproflib.control import parse_status
from cgtest import ProfileAssertions, example, prog, run_preloaded

STATIC_LIB = os.path.join(cgtest.BUILD_DIR, "runtime", "libcgprof.a")
LAUNCHER = os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof")
# the build's options (meson introspect): -Dstatic=disabled builds no libcgprof.a
with open(os.path.join(cgtest.BUILD_DIR, "meson-info", "intro-buildoptions.json")) as f:
    STATIC_OPTION = {o["name"]: o["value"] for o in json.load(f)}.get("static", "absent")
with open(os.environ.get("CGPROF_EXPECTED", os.path.join(cgtest.SOURCE_DIR, "examples", "expected.json"))) as f:
    EXPECTED = json.load(f)
# the examples' own flags (examples/meson.build): every call a call
EXAMPLE_FLAGS = ["-O0", "-fno-inline"]


def pkg_config(*args):
    """The build's cgprof.pc, as installed, with its directories pointed at
    the build and source trees."""
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(cgtest.BUILD_DIR, "meson-private"))
    env.pop("PKG_CONFIG_SYSROOT_DIR", None)
    p = subprocess.run(["pkg-config", "--define-variable=libdir=" + os.path.join(cgtest.BUILD_DIR, "runtime"),
                        "--define-variable=includedir=" + os.path.join(cgtest.SOURCE_DIR, "include")]
                       + list(args) + ["cgprof"], capture_output=True, text=True, env=env, timeout=cgtest.limit(60), check=True)
    return p.stdout.split()


def is_static(path):
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    return "INTERP" not in out


def own_counts(profile, own):
    """{(caller, callee): calls} of one file, a caller outside the program's
    own functions (libc's start code, start_thread, qsort's internals: named
    from libc.a's symbols in a static program, from libc.so's in a dynamic
    one) folded to "(outside)"."""
    counts = {}
    for (caller, callee), n in profile.call_counts().items():
        key = (caller if caller in own else "(outside)", callee)
        counts[key] = counts.get(key, 0) + n
    return counts


@unittest.skipIf(STATIC_OPTION == "disabled", "built with -Dstatic=disabled: no libcgprof.a")
class Static(ProfileAssertions):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(STATIC_LIB):
            raise AssertionError("%s was not built (-Dstatic=%s): the static libraries of libdw are missing "
                                 "(scripts/deps.sh installs them)" % (STATIC_LIB, STATIC_OPTION))
        cls.tmp = tempfile.mkdtemp(prefix="cgprof-static-")
        cls.cflags = pkg_config("--cflags")
        cls.libs = pkg_config("--static", "--libs")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def build(self, name, source, compiler="gcc", flags=(), libs_first=True, libs=None, static=True):
        """A static program from source; pkg-config's flags before the
        source (the order in which an archive would be read too early)
        unless libs_first is False."""
        exe = os.path.join(self.tmp, name)
        libs = self.libs if libs is None else libs
        cmd = [compiler] + (["-static"] if static else []) + list(flags) + self.cflags
        cmd += (libs + [source] if libs_first else [source] + libs) + ["-o", exe]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, " ".join(cmd) + "\n" + p.stderr)
        # no warning either: it would be printed at every link of a profiled program
        self.assertEqual(p.stderr, "", " ".join(cmd))
        self.assertEqual(is_static(exe), static)
        return exe

    def run_static(self, argv, env=None):
        return run_preloaded(self, argv, env=env, preload=False)

    # ---- exact counts ------------------------------------------------------------

    def assert_same_as_dynamic(self, name, static_run):
        """Every thread's arcs, as the dynamic build of the same source
        profiled with the runtime preloaded has them (the dynamic runtime
        is the one the nesting oracle and Valgrind check)."""
        own = set(EXPECTED[name]["functions"])
        dynamic = run_preloaded(self, [example(name)])
        self.assertEqual(dynamic.returncode, 0, dynamic.stderr)
        by_thread = lambda run: {p.thread: own_counts(p, own) for p in run.profiles()}  # noqa: E731
        self.assertEqual(by_thread(static_run), by_thread(dynamic))

    def assert_expected(self, name, run):
        expected = EXPECTED[name]
        self.assertEqual(len(run.files), expected["threads"], run.files)
        profiles = run.profiles()
        for prof in profiles:
            self.assert_valid(prof)
        counts = cgtest.merged_counts(profiles)
        own = set(expected["functions"])
        for fn, n in expected["functions"].items():
            self.assertEqual(cgtest.incoming(counts, fn), n, fn)
        want = {tuple(a.split(" -> ")): n for a, n in expected["calls"].items()
                if a.split(" -> ")[0] in own and a.split(" -> ")[1] in own}
        self.assertEqual({k: v for k, v in counts.items() if k[0] in own and k[1] in own}, want)

    def test_threads_one_file_per_thread_exact_counts(self):
        """A multi-threaded static program: one file per thread, numbered in
        the order of creation (the pthread_create wrapper), exact counts."""
        exe = self.build("threads", os.path.join(cgtest.SOURCE_DIR, "examples", "threads.c"), flags=EXAMPLE_FLAGS)
        run = self.run_static([exe])
        self.assertEqual((run.returncode, run.stderr), (0, ""))
        self.assert_expected("threads", run)
        self.assert_same_as_dynamic("threads", run)
        pid = re.search(r"\.(\d+)-01$", run.files[0]).group(1)
        self.assertEqual(sorted(os.listdir(run.directory)),
                         sorted([os.path.basename(f) for f in run.files] + ["callgrind.total." + pid]))
        for prof in run.profiles():
            # named from the program's .symtab and DWARF: function, file, line
            for key, fn in prof.functions.items():
                if key.name in EXPECTED["threads"]["functions"]:
                    self.assertEqual(key.file, os.path.join(cgtest.SOURCE_DIR, "examples", "threads.c"))
                    self.assertEqual(os.path.realpath(key.object), os.path.realpath(exe))
                    self.assertTrue(all(line.line > 0 for line in fn.cost_lines), key)

    def test_basic_clang_flags_after_the_source(self):
        """clang, the flags after the source, and a callback from libc.a's
        qsort."""
        if not shutil.which("clang"):
            self.skipTest("no clang")
        exe = self.build("basic-clang", os.path.join(cgtest.SOURCE_DIR, "examples", "basic.c"), compiler="clang",
                         flags=EXAMPLE_FLAGS, libs_first=False)
        run = self.run_static([exe])
        self.assertEqual((run.returncode, run.stderr), (0, ""))
        self.assert_expected("basic", run)
        self.assert_same_as_dynamic("basic", run)

    def test_plain_lcgprof_without_the_wraps(self):
        """-lcgprof alone after the source (no wraps): the runtime is linked
        by the hooks and profiles; the wrappers are simply not called."""
        exe = self.build("basic-plain", os.path.join(cgtest.SOURCE_DIR, "examples", "basic.c"), flags=EXAMPLE_FLAGS,
                         libs_first=False, libs=["-L" + os.path.dirname(STATIC_LIB), "-lcgprof"])
        run = self.run_static([exe])
        self.assertEqual((run.returncode, run.stderr), (0, ""))
        self.assert_expected("basic", run)

    def test_cxx_demangled(self):
        exe = self.build("cxx", os.path.join(cgtest.SOURCE_DIR, "examples", "cxx.cpp"), compiler="g++",
                         flags=EXAMPLE_FLAGS + ["-finstrument-functions-exclude-file-list=/usr/include"])
        run = self.run_static([exe])
        self.assertEqual((run.returncode, run.stderr), (0, ""))
        self.assert_expected("cxx", run)
        self.assert_same_as_dynamic("cxx", run)

    # ---- the wrappers ---------------------------------------------------------------

    def test_longjmp(self):
        """setjmp and longjmp wrapped: the 10 frames each longjmp leaves end
        when it leaves them."""
        exe = self.build("jumps", os.path.join(cgtest.SOURCE_DIR, "tests", "progs", "jumps.c"), flags=["-O0"])
        self.assert_nonlocal_run(self.run_static([exe]), self.JUMPS, 10000)

    def test_exceptions_clang(self):
        """The C++ personality routine wrapped (and the real one linked: a
        static C++ program gets it only through the -u of the flags):
        clang-built frames an exception leaves end where it lands."""
        if not shutil.which("clang++"):
            self.skipTest("no clang++")
        exe = self.build("throws-clang", os.path.join(cgtest.SOURCE_DIR, "tests", "progs", "throws.cpp"),
                         compiler="clang++", flags=["-O2"])
        self.assert_nonlocal_run(self.run_static([exe]), self.THROWS, 10000)

    def test_exceptions_gcc(self):
        exe = self.build("throws", os.path.join(cgtest.SOURCE_DIR, "tests", "progs", "throws.cpp"),
                         compiler="g++", flags=["-O0"])
        self.assert_nonlocal_run(self.run_static([exe]), self.THROWS, 0)

    def test_sigaction_steps_aside(self):
        exe = self.build("ownsig", os.path.join(cgtest.SOURCE_DIR, "tests", "progs", "ownsig.c"))
        run = self.run_static([exe])
        self.assertEqual((run.returncode, run.stdout), (0, "ownsig: handled 3\n"))
        dynamic = run_preloaded(self, [prog("ownsig")])
        self.assertEqual(run.stderr.replace(exe, "PROG"), dynamic.stderr.replace(prog("ownsig"), "PROG"))
        self.assertIn("steps aside", run.stderr)
        self.assertEqual(len(run.stderr.splitlines()), 1, run.stderr)

    def test_exec_writes_before_the_image_goes(self):
        exe = self.build("execer", os.path.join(cgtest.SOURCE_DIR, "tests", "progs", "execer.c"), flags=["-O0"])
        run = self.run_static([exe])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("child image done", run.stdout)
        parts = {}
        for f in run.files:
            m = re.search(r"\.(\d+)-(\d\d)$", f)
            parts[int(m.group(1))] = reader.load(f, strict=True)
        self.assertEqual(sorted(parts), [1, 2, 3])
        self.assertEqual([parts[i].desc_value("Trigger") for i in (1, 2, 3)],
                         ["Exec of /nonexistent/program", "Exec of /proc/self/exe", "Program termination"])
        self.assertEqual([parts[i].call_counts().get(("main", "work")) for i in (1, 2, 3)], [3, 1, 2])

    def test_dump_signal_served(self):
        """The service thread of a static program: SIGUSR1 writes a part
        while it runs, and the launcher's handshake (the signal blocked
        across the exec, unblocked by the runtime) works as for a dynamic
        one."""
        exe = self.build("server", os.path.join(cgtest.SOURCE_DIR, "examples", "server.c"), flags=EXAMPLE_FLAGS)
        d = tempfile.mkdtemp(prefix="cgprof-static-server-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        env = cgtest.clean_environ({"CGPROF_CONTROL_DIR": os.path.join(d, "ctl")})
        p = subprocess.Popen([LAUNCHER, exe, "-n", "0"], cwd=d, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        end = time.monotonic() + cgtest.limit(30)
        status = None
        while time.monotonic() < end and not status:
            status = glob.glob(os.path.join(d, "ctl", "*.status"))
            time.sleep(0.02)
        self.assertTrue(status, "the static program's runtime started no service")
        pid = int(os.path.basename(status[0]).split(".")[0])
        self.addCleanup(lambda: p.poll() is None and os.kill(pid, signal.SIGKILL))   # the program, not only cgprof
        # The service is up (its status file) before the program's first
        # hook: a dump asked for then has no thread to write, and nothing
        # is written (seen in CI on a loaded machine; its part number is
        # used all the same), so the signal is sent again until a part
        # comes, each once the one before it was served (the status's
        # done moved): none is still pending when the parts are counted.
        def served():
            with open(status[0]) as f:
                return parse_status(f.read())

        end = time.monotonic() + cgtest.limit(30)
        while not glob.glob(os.path.join(d, "callgrind.out.%d.*" % pid)):
            before = served().done
            os.kill(pid, signal.SIGUSR1)
            while served().done == before:
                if p.poll() is not None:
                    self.fail("the program ended: %s" % p.communicate()[1])
                self.assertLess(time.monotonic(), end, "SIGUSR1 not served")
                time.sleep(0.01)
            self.assertLess(time.monotonic(), end, "no part written on SIGUSR1")
        parts = glob.glob(os.path.join(d, "callgrind.out.%d.*" % pid))
        signalled = served().parts
        self.assertEqual(reader.load(sorted(parts)[0], strict=True).desc_value("Trigger"), "Signal SIGUSR1")
        # cgprof-control finds the static program (no libcgprof.so in its
        # maps: the note of the runtime linked in), by pid, by name and
        # among all, and its questions are answered
        control = os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof-control")
        for target in ([str(pid)], ["server"], []):
            c = subprocess.run([control, "-d", "static"] + target, env=env, capture_output=True, text=True,
                               timeout=cgtest.limit(120))
            self.assertEqual(c.returncode, 0, (target, c.stderr))
            self.assertIn("callgrind.out.%d." % pid, c.stdout)
        c = subprocess.run([control, "-b", str(pid)], env=env, capture_output=True, text=True, timeout=cgtest.limit(120))
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("main", c.stdout)
        c = subprocess.run([control], env=env, capture_output=True, text=True, timeout=cgtest.limit(120))
        # the listing: the parts of the signals, and 3 of cgprof-control -d
        self.assertRegex(c.stdout, r"\n%d +\d+ +%d " % (pid, signalled + 3))
        os.kill(pid, signal.SIGTERM)
        p.communicate(timeout=cgtest.limit(60))

    # ---- the launcher -------------------------------------------------------------------

    def test_launcher_runs_a_static_program_with_the_runtime(self):
        exe = self.build("threads-launched", os.path.join(cgtest.SOURCE_DIR, "examples", "threads.c"),
                         flags=EXAMPLE_FLAGS)
        d = tempfile.mkdtemp(prefix="cgprof-static-launch-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        env = cgtest.clean_environ()
        p = subprocess.run([LAUNCHER, "--out=prof", exe], cwd=d, env=env, capture_output=True, text=True,
                           timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        files = sorted(glob.glob(os.path.join(d, "prof.*-0[1-5]")))
        self.assertEqual(len(files), 5, p.stderr)
        self.assertIn("cgprof: 5 files written:\n", p.stderr)
        self.assertRegex(p.stderr, r"\ncgprof: +[0-9.]+ +[0-9.]+ +[0-9.]+ +57313  fib  \[threads\.c\]\n")
        for f in files:
            self.assert_valid(reader.load(f, strict=True))

    def test_launcher_does_not_preload_beside_a_linked_runtime(self):
        """libcgprof.a linked into a dynamic program: the launcher preloads
        no second runtime, which would take the dump signal from the first
        (it said "SIGUSR1 already has an action")."""
        exe = self.build("threads-dynamic-linked", os.path.join(cgtest.SOURCE_DIR, "examples", "threads.c"),
                         flags=EXAMPLE_FLAGS, static=False,
                         libs=[STATIC_LIB] + [a for a in self.libs if a.startswith("-Wl,-u,") or
                                              a.startswith("-Wl,--wrap=")])
        d = tempfile.mkdtemp(prefix="cgprof-static-dyn-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        env = cgtest.clean_environ()
        p = subprocess.run([LAUNCHER, "--top=0", exe], cwd=d, env=env, capture_output=True, text=True, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stderr.startswith("cgprof: %s (pid " % exe), p.stderr)
        self.assertNotIn("action", p.stderr)
        files = sorted(glob.glob(os.path.join(d, "callgrind.out.*")))
        self.assertEqual(len(files), 5, p.stderr)
        counts = cgtest.merged_counts([reader.load(f, strict=True) for f in files])
        self.assertEqual(cgtest.incoming(counts, "fib"), EXPECTED["threads"]["functions"]["fib"])

    def test_launcher_refuses_a_static_program_without_the_runtime(self):
        src = os.path.join(cgtest.SOURCE_DIR, "examples", "basic.c")
        d = tempfile.mkdtemp(prefix="cgprof-static-refused-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        cases = {
            # instrumented: the C library's empty hooks
            "instrumented": (["-finstrument-functions"], ": its __cyg_profile_func_enter is the C library's, "
                             "which does nothing.", "Link"),
            "plain": ([], "; it is not instrumented either (no __cyg_profile_func_enter).",
                      "Build it with -finstrument-functions -g -fno-omit-frame-pointer and link"),
        }
        for name, (flags, why, verb) in cases.items():
            exe = os.path.join(d, name)
            subprocess.run(["gcc", "-static"] + flags + [src, "-o", exe], check=True, timeout=cgtest.limit(120))
            p = subprocess.run([LAUNCHER, "./" + name], cwd=d, env=cgtest.clean_environ(), capture_output=True,
                               text=True, timeout=cgtest.limit(60))
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stdout, "")   # not run
            self.assertEqual(p.stderr, (
                "cgprof: ./%s is a static program: the runtime cannot be preloaded into it (no dynamic linker runs "
                "in it to read LD_PRELOAD), and none is linked in%s\n"
                "cgprof: %s the runtime into it, from libcgprof.a, with pkg-config's static flags (anywhere on "
                "the command line), e.g.\n"
                "cgprof:   gcc -static -O2 $(pkg-config --cflags cgprof) -o prog prog.c "
                "$(pkg-config --static --libs cgprof)\n"
                "cgprof: and run it as before, with cgprof or alone (the options are then the CGPROF_* variables).\n"
            ) % (name, why, verb))
            self.assertEqual(glob.glob(os.path.join(d, "callgrind.*")), [])

    def test_wraps_are_the_wrappers(self):
        """The .pc's --wrap options and the archive's __wrap_ functions are
        the same set (a wrap without its wrapper fails every link; a wrapper
        without its wrap is never called)."""
        wraps = {a.split("=", 1)[1] for a in self.libs if a.startswith("-Wl,--wrap=")}
        out = subprocess.run(["nm", "--defined-only", STATIC_LIB], capture_output=True, text=True, check=True).stdout
        wrappers = {m.group(1) for m in re.finditer(r" T __wrap_(\w+)$", out, re.M)}
        self.assertEqual(wraps, wrappers)
        # and nothing of the runtime's or elfutils' own names is global
        globals_ = set(re.findall(r" [TDBRVW] (\S+)$", out, re.M))
        self.assertEqual({g for g in globals_ if not g.startswith(("__wrap_", "cgprof_", "__cyg_profile_func_"))},
                         set())


if __name__ == "__main__":
    unittest.main(verbosity=2)
