"""Filters without a rebuild: CGPROF_SKIP, CGPROF_SKIP_OBJECT,
CGPROF_SKIP_FILE and CGPROF_THROTTLE. Exact counts are known from the
programs (tests/progs/skips.c, throttle.c, plugins.c, examples/cxx.cpp)."""

import os
import re
import unittest

import cgtest
from cgtest import ProfileAssertions, prog, run_preloaded

# skips.c run without filters
SKIPS_ALL = {
    ("main", "work"): 1, ("work", "helper"): 10, ("work", "leaf"): 5, ("work", "vendor_fn"): 4,
    ("helper", "spin"): 10, ("helper", "leaf"): 20, ("helper", "other"): 10, ("helper", "nested_helper"): 10,
    ("other", "spin"): 10, ("nested_helper", "leaf"): 10, ("vendor_fn", "leaf"): 4,
}


def names_in(prof):
    return {k.name for k in prof.functions} | {c.callee.name for c in prof.calls} | \
        {c.caller.name for c in prof.calls}


def line_of(path, text):
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError("%r not in %s" % (text, path))


class Skip(ProfileAssertions):
    def run_skips(self, env):
        run = run_preloaded(self, [prog("skips")], env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("skips: 2004895146", run.stdout)
        self.assertEqual(cgtest.stderr_lines(run.stderr), [], "no message")
        (prof,) = run.profiles()
        self.assert_valid(prof)
        return run, prof

    def own_counts(self, prof):
        return {k: n for k, n in prof.call_counts().items() if k[0] != "__libc_start_call_main"}

    def test_without_filters(self):
        run, prof = self.run_skips({})
        self.assertEqual(self.own_counts(prof), SKIPS_ALL)
        self.assertIsNone(prof.desc_value("Skipped"))

    def test_skip_one_function(self):
        run, prof = self.run_skips({"CGPROF_SKIP": "helper"})
        self.assertEqual(self.own_counts(prof), {
            ("main", "work"): 1, ("work", "spin"): 10, ("work", "leaf"): 25, ("work", "other"): 10,
            ("work", "nested_helper"): 10, ("work", "vendor_fn"): 4,
            ("other", "spin"): 10, ("nested_helper", "leaf"): 10, ("vendor_fn", "leaf"): 4,
        })
        self.assertNotIn("helper", names_in(prof))
        desc = prof.desc_value("Skipped")
        self.assertIsNotNone(desc)
        self.assertIn("1 functions", desc)
        self.assertIn("CGPROF_SKIP=helper", desc)
        # The calls helper made are work's, each at its own place in
        # helper's code: a function left out has no frame (its hook calls
        # are taken back), its code runs in its caller's, as an inlined
        # call's does (docs/internals/takeback.md).
        src = os.path.join(cgtest.SOURCE_DIR, "tests", "progs", "skips.c")
        lines = {"spin": line_of(src, "    spin(20000);"), "other": line_of(src, "    other();"),
                 "nested_helper": line_of(src, "    nested_helper();")}
        sites = {}
        for c in prof.calls:
            if c.caller.name == "work" and c.callee.name in lines:
                self.assertEqual(c.line, lines[c.callee.name], c)
                sites[c.callee.name] = c.instr
        self.assertEqual(set(sites), set(lines))
        # helper's own time is work's, charged where helper's calls return
        # (after their call instructions: 5 bytes on x86-64, 4 on aarch64),
        # as work's time after a call of its own is
        (work,) = prof.functions_named("work")
        call = cgtest.direct_call_bytes()
        after = sum(c.costs[0] for c in work.cost_lines if c.instr - call in sites.values())
        self.assertGreater(after, 0, "no self time of work after the calls made in helper's code")
        # work's inclusive covers its self and its callees (assert_valid
        # checks every function; here explicitly for the one that took over)
        incoming = sum(c.costs[0] for c in prof.calls if c.callee.name == "work")
        self.assertGreaterEqual(incoming, prof.inclusive("work"))
        self.assert_annotate_accepts(run.files[0], ["work", "leaf", "nested_helper"])

    def test_skip_glob_and_source_file(self):
        run, prof = self.run_skips({"CGPROF_SKIP": "*helper", "CGPROF_SKIP_FILE": "*/vendor/*"})
        self.assertEqual(self.own_counts(prof), {
            ("main", "work"): 1, ("work", "spin"): 10, ("work", "leaf"): 39, ("work", "other"): 10,
            ("other", "spin"): 10,
        })
        self.assertFalse({"helper", "nested_helper", "vendor_fn"} & names_in(prof))
        self.assertIn("3 functions", prof.desc_value("Skipped"))
        self.assertIn("CGPROF_SKIP_FILE=*/vendor/*", prof.desc_value("Skipped"))

    def test_source_file_in_clang_built_code(self):
        # clang writes no .debug_aranges, through which libdw finds the
        # unit of an address: the runtime finds it by the units' own ranges
        # (before, no function of a clang-built program had a source file
        # here, and none was skipped)
        exe = prog("skips-clang")
        if not os.path.exists(exe):
            self.skipTest("no clang")
        run = run_preloaded(self, [exe], env={"CGPROF_SKIP_FILE": "*/vendor/*"})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("skips: 2004895146", run.stdout)
        (prof,) = run.profiles()
        self.assert_valid(prof)
        expected = {k: n for k, n in SKIPS_ALL.items() if "vendor_fn" not in k}
        expected[("work", "leaf")] += SKIPS_ALL[("vendor_fn", "leaf")]
        self.assertEqual(self.own_counts(prof), expected)
        self.assertIn("1 functions", prof.desc_value("Skipped"))

    def test_pattern_matching_nothing(self):
        run, prof = self.run_skips({"CGPROF_SKIP": "no_such_function,zz*"})
        self.assertEqual(self.own_counts(prof), SKIPS_ALL)
        self.assertIn("0 functions", prof.desc_value("Skipped"))

    def test_malformed_values_are_reported_once_and_ignored(self):
        run = run_preloaded(self, [prog("skips")], env={"CGPROF_SKIP": "helper,,leaf", "CGPROF_THROTTLE": "lots"})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout, "skips: 2004895146\n")
        lines = cgtest.stderr_lines(run.stderr)
        self.assertEqual(len(lines), 2, run.stderr)
        self.assertIn('CGPROF_SKIP="helper,,leaf" is ignored', lines[0] + lines[1])
        self.assertIn('CGPROF_THROTTLE="lots" is ignored', lines[0] + lines[1])
        self.assertIn("N:T", lines[0] + lines[1])
        (prof,) = run.profiles()
        self.assert_valid(prof)
        self.assertEqual({k: n for k, n in prof.call_counts().items() if k[0] != "__libc_start_call_main"},
                         SKIPS_ALL)
        self.assertIsNone(prof.desc_value("Skipped"))
        # the throttle's value ignored: its default, which throttles
        # nothing here (a few calls per arc), not PINNED's off
        self.assertEqual(prof.desc_value("Throttled"), "0 functions (CGPROF_THROTTLE=10000:1000, process-wide; "
                         "calls counted until then are kept)")

    def test_cxx_demangled_name(self):
        run = run_preloaded(self, [cgtest.example("cxx")], env={"CGPROF_SKIP": "total_area(*"})
        self.assertEqual(run.returncode, 0, run.stderr)
        (prof,) = run.profiles()
        self.assert_valid(prof)
        counts = prof.call_counts()
        self.assertEqual(counts[("main", "geometry::Circle::area() const")], 2)
        self.assertEqual(counts[("main", "geometry::Square::area() const")], 1)
        self.assertFalse([n for n in names_in(prof) if n.startswith("total_area")])
        self.assertIn("1 functions", prof.desc_value("Skipped"))


class SkipInLoadedLibrary(ProfileAssertions):
    """A library loaded by dlopen (twice, at two addresses) after start-up."""

    def run_plugins(self, env):
        lib = os.path.join(cgtest.BUILD_DIR, "tests", "progs", "libplugin.so")
        filler = os.path.join(cgtest.BUILD_DIR, "examples", "libcgdemo.so")
        run = run_preloaded(self, [prog("plugins"), lib, filler], env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("loaded at different addresses", run.stdout)
        (prof,) = run.profiles()
        self.assert_valid(prof)
        return prof

    def test_function_of_a_plugin(self):
        prof = self.run_plugins({"CGPROF_SKIP": "plugin_work"})
        counts = prof.call_counts()
        self.assertEqual(counts[("use", "plugin_helper")], 50)
        self.assertNotIn("plugin_work", names_in(prof))

    def test_object(self):
        prof = self.run_plugins({"CGPROF_SKIP_OBJECT": "*/libplugin.so"})
        self.assertFalse([n for n in names_in(prof) if n.startswith("plugin_")])
        self.assertEqual(prof.call_counts()[("main", "use")], 2)
        self.assertIn("CGPROF_SKIP_OBJECT=*/libplugin.so", prof.desc_value("Skipped"))
        # both loads scanned: every function symbol (the compiler's own
        # start-up ones too) at each of two addresses
        n = int(re.match(r"(\d+) functions", prof.desc_value("Skipped")).group(1))
        self.assertGreaterEqual(n, 4)
        self.assertEqual(n % 2, 0)


def throttle_threshold(test):
    """CGPROF_THROTTLE's T for this machine as it runs now: a first run of
    tests/progs/throttle unthrottled gives the mean time of a call of tiny
    (a call of tinier inside) and of mid (a 20,000-iteration loop); T is
    their geometric mean, a wide margin either way (the two are some
    1,000x apart), where a fixed T in ns failed on machines fast enough to
    run mid in less, or loaded, or under valgrind. test_takeback uses it
    too."""
    run = run_preloaded(test, [prog("throttle")])
    test.assertEqual(run.returncode, 0, run.stderr)
    (prof,) = run.profiles()
    counts = prof.call_counts()
    tiny = prof.inclusive("tiny") / counts[("main", "tiny")]
    mid = prof.inclusive("mid") / counts[("main", "mid")]
    test.assertGreater(mid, 20 * tiny, "mid must be much slower than tiny for the test to mean anything")
    # tiny's mean can come out at 0 ns or so with overhead compensation
    # (CGPROF_COMPENSATE): T would be 1 ns, within tiny's noise
    return max(1, int((max(tiny, 1.0) * mid) ** 0.5))


def throttle_checks(n, calls):
    """The counts at which CGPROF_THROTTLE=N:T checks an arc of `calls`
    calls (costs_inlines.h, cg_throttle_due): its Nth call, then each power of two
    above N; the arc's count stays where it was throttled."""
    return [n] + [1 << k for k in range(n.bit_length(), calls.bit_length()) if n < 1 << k < calls]


class Throttle(ProfileAssertions):
    def test_tiny_function_called_a_million_times(self):
        t = throttle_threshold(self)
        run = run_preloaded(self, [prog("throttle")], env={"CGPROF_THROTTLE": "1000:%d" % t})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("throttle: ", run.stdout)
        (prof,) = run.profiles()
        self.assert_valid(prof)
        counts = {k: n for k, n in prof.call_counts().items() if k[0] != "__libc_start_call_main"}
        # tiny and tinier are throttled at their 1,000th call, or at a later
        # check (a power of two) when their mean so far was above T: the
        # check averages over all the calls so far, and a thread switched
        # out for a few ms during the first thousand (some 130 us of calls
        # here; exact time is wall-clock time) or under valgrind the
        # translation of their code (seen once in CI: 4096) holds them
        # above T until enough fast calls dilute it, as designed for calls
        # slowed at first (5 runs in 40 beside stress-ng --cpu 3). tinier no later than
        # tiny: at each count tinier's time so far is within tiny's, and is
        # checked first (its exit comes first). Never throttled, they would
        # be 1,000,000.
        allowed = throttle_checks(1000, 1000000)
        for arc in (("main", "tiny"), ("tiny", "tinier")):
            self.assertIn(counts.get(arc), allowed, (arc, counts))
        self.assertLessEqual(counts[("tiny", "tinier")], counts[("main", "tiny")])
        counts[("main", "tiny")] = counts[("tiny", "tinier")] = 1000
        self.assertEqual(counts, {("main", "tiny"): 1000, ("tiny", "tinier"): 1000, ("main", "mid"): 2000,
                                  ("main", "slow"): 3})
        desc = prof.desc_value("Throttled")
        self.assertIsNotNone(desc)
        self.assertTrue(desc.startswith("2 functions (CGPROF_THROTTLE=1000:%d" % t), desc)
        self.assertTrue(desc.endswith(": tinier, tiny"), desc)
        lines = [l for l in cgtest.stderr_lines(run.stderr) if l]
        opts = [l for l in run.stderr.splitlines() if "-finstrument-functions-exclude-function-list" in l]
        self.assertEqual(len(set(opts)), 1, run.stderr)
        self.assertIn("-finstrument-functions-exclude-function-list=tinier,tiny", run.stderr)
        self.assertTrue(any(l.startswith("cgprof: CGPROF_THROTTLE=1000:%d throttled 2 functions" % t)
                            for l in lines), run.stderr)

    def test_off_by_default(self):
        run = run_preloaded(self, [prog("throttle")])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(cgtest.stderr_lines(run.stderr), [])
        (prof,) = run.profiles()
        counts = prof.call_counts()
        self.assertEqual(counts[("main", "tiny")], 1000000)
        self.assertEqual(counts[("tiny", "tinier")], 1000000)
        self.assertIsNone(prof.desc_value("Throttled"))


if __name__ == "__main__":
    unittest.main()
