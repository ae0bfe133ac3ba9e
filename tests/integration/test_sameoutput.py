"""The files the runtime writes are the same as those of an earlier
revision's runtime, times and pids aside: a change that should not change
behaviour (a restructuring) must leave every byte of them as it was.

The earlier runtime is built from the repository's own history (git archive
of BASELINE, meson with its tests off as that tree names the option, only
libcgprof.so), into a cache, and each program runs twice, once under each
runtime, in the same environment: the same binary, the same libraries, so
that every address, name, count and line can be compared. What may differ is left out: the times (and so the
self-cost lines, one of which is absent from a run where it added up to 0
ns), the pid (pid:, the file names), the TSC's calibration (desc: Clock:),
the time the overhead compensation left out (desc: Overhead compensated:).

Skipped, saying why, where the history or a build of it is not at hand.
CGPROF_BASELINE_REV names another revision; CGPROF_BASELINE_LIB a runtime
already built.
"""

import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import cgtest
from cgproflib import reader
from cgtest import BUILD_DIR, LIB, SOURCE_DIR, example
from test_callline import addr2line_tool, inline_chain

# The runtime before issue 13's restructuring (with its writer made
# deterministic): what the restructured runtime must write the same.
BASELINE = os.environ.get("CGPROF_BASELINE_REV", "bee86aa852cff6bf21fc07cebe7f4420895f24af")
CACHE = os.environ.get("CGPROF_BASELINE_CACHE") or os.path.join(BUILD_DIR, "baseline")

NEST = os.path.join(BUILD_DIR, "tests", "nesting")

# (program, arguments, environment): the examples (not the server, which
# waits for requests), in the default mode and on the general path (the
# monotonic clock), and -O2 builds that exercise inlining, longjmp and
# exceptions. Sampled time is left out: its samples differ run to run.
RUNS = [
    (example("basic"), [], {}),
    (example("threads"), [], {}),
    (example("uselib"), [], {}),
    (example("cxx"), [], {}),
    (example("threads"), [], {"CGPROF_CLOCK": "monotonic"}),
    (os.path.join(NEST, "repro-gcc-O2"), [], {}),
    (os.path.join(NEST, "shapes2-gcc-O2"), ["2000"], {}),
    (os.path.join(NEST, "recurse-clang-O3"), ["16"], {}),
    (os.path.join(NEST, "jumps-gcc-O2"), ["100"], {}),
    (os.path.join(NEST, "throws-clang-O2"), [], {}),
    (os.path.join(NEST, "templates-gcc-O2"), [], {}),
]


def tests_off(src):
    """The meson option that leaves a tree's tests out, as that tree's own
    meson_options.txt declares it: -Dtests=false where the option is a
    boolean (BASELINE's), -Dtests=disabled where it is a feature (since
    the runtime was put in layers: meson refuses false there), none where
    the tree has no such option."""
    path = os.path.join(src, "meson_options.txt")
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    m = re.search(r"option\(\s*'tests'\s*,\s*type\s*:\s*'(\w+)'", text)
    if not m:
        return []
    return ["-Dtests=disabled"] if m.group(1) == "feature" else ["-Dtests=false"]


def baseline_lib():
    """libcgprof.so of BASELINE, built once into CACHE; None and why."""
    given = os.environ.get("CGPROF_BASELINE_LIB")
    if given:
        return (given, None) if os.path.exists(given) else (None, "CGPROF_BASELINE_LIB=%s does not exist" % given)
    lib = os.path.join(CACHE, BASELINE[:12], "build", "runtime", "libcgprof.so")
    if os.path.exists(lib):
        return lib, None
    if not shutil.which("git") or subprocess.run(["git", "-C", SOURCE_DIR, "cat-file", "-e", BASELINE + "^{commit}"],
                                                 capture_output=True).returncode != 0:
        return None, "revision %s is not in this checkout's history" % BASELINE
    src = os.path.join(CACHE, BASELINE[:12], "src")
    shutil.rmtree(os.path.dirname(src), ignore_errors=True)
    os.makedirs(os.path.dirname(src))
    # the tree of that revision, without touching this checkout's worktrees
    archive = subprocess.run(["git", "-C", SOURCE_DIR, "archive", "--format=tar", BASELINE], capture_output=True)
    if archive.returncode != 0:
        return None, "git archive %s failed: %s" % (BASELINE, archive.stderr.decode(errors="replace")[-300:])
    os.makedirs(src)
    subprocess.run(["tar", "-x", "-C", src], input=archive.stdout, check=True)
    build = os.path.join(os.path.dirname(src), "build")
    for cmd in (["meson", "setup", build, src] + tests_off(src), ["ninja", "-C", build, "runtime/libcgprof.so"]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return None, "building %s failed: %s" % (BASELINE, (p.stdout + p.stderr)[-500:])
    return lib, None


def inlined_places(prof, program):
    """{(caller, address, callee)} of the calls at an address that the
    debug information puts inside an inlined copy of their callee: inlined
    calls, whose line is now the call's own (issue 27 (2), checked by
    test_callline), the baseline's their callee's. The address is looked
    up in the caller's object and in the program: a function inlined from
    a library's header is named by the library's copy (its block is under
    the library's ob=), its code is the program's."""
    tool, _ = addr2line_tool("gcc")
    if not tool:
        raise unittest.SkipTest("no addr2line to tell inlined calls")
    out = set()
    by_object = {}
    for c in prof.calls:
        if c.instr is None:
            continue
        for obj in {c.caller.object, program}:
            if os.path.isfile(obj):
                by_object.setdefault(obj, []).append(c)
    for obj, calls in by_object.items():
        chains = inline_chain(tool, obj, [c.instr for c in calls])
        for c in calls:
            callee = short_name(c.callee.name)
            if any(short_name(fn) == callee for fn, _, _ in chains[c.instr][:-1]):
                out.add((c.caller, c.instr, c.callee))
    return out


def short_name(name):
    """A function's name as addr2line's inline frames and cgprof's both
    give it: without parameters, template arguments, scope and clone
    suffix ("main::{lambda(int)#1}::operator()(int) const" and
    "operator()" are both "operator")."""
    out, depth = [], 0
    for ch in name.split(" [clone")[0]:
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    text = "".join(out).replace(" const", "").strip()
    return text.split("::")[-1].split(".")[0]


def normalise(path, program):
    """The file as a list of what a reader sees, times and pid aside: the
    header (but the clock's calibration), every function, and every call
    with its count, position and target (an inlined call's line aside: see
    inlined_places). Not the self-cost lines: one whose time added up to 0
    ns in a run is left out of that run's file (timing, not behaviour);
    their positions follow from the arcs anyway."""
    prof = reader.load(path)
    inlined = inlined_places(prof, program)
    out = ["violations %s" % [str(v).split(":", 1)[1] for v in prof.violations],
           "version %s creator %s thread %s part %s" % (prof.version, prof.creator, prof.thread, prof.part),
           "cmd %s" % prof.cmd, "positions %s events %s" % (prof.positions, prof.events)]
    # the time the overhead compensation left out (CGPROF_COMPENSATE, issue
    # 17) is timing too: the baseline has none
    out += ["desc %s" % ("Clock: invariant TSC at <MHz>" if d.startswith("Clock: invariant TSC at ") else d)
            for d in prof.desc if not d.startswith("Overhead compensated: ")]
    out += ["function %s | %s | %s" % k for k in sorted(prof.functions)]
    out += sorted("call %s -> %s: %d at %s %s to %s %s" % (
        c.caller, c.callee, c.count, c.instr,
        "<inlined call>" if (c.caller, c.instr, c.callee) in inlined else c.line,
        c.target_instr, c.target_line) for c in prof.calls)
    return "\n".join(out) + "\n"


def written(lib, argv, env, directory):
    """Runs argv with lib preloaded in directory; returns {file name with
    the pid taken out: normalised text}."""
    e = cgtest.clean_environ(env)
    e["LD_PRELOAD"] = lib
    p = subprocess.run(argv, cwd=directory, env=e, capture_output=True, text=True, timeout=cgtest.limit(300))
    if p.returncode != 0:
        raise AssertionError("%s failed under %s: %s" % (argv, lib, p.stderr[-1000:]))
    files = {}
    for f in glob.glob(os.path.join(directory, "callgrind.*")):
        m = re.match(r"callgrind\.(out|total)\.(\d+)(.*)$", os.path.basename(f))
        files["callgrind.%s.<pid>%s" % (m.group(1), m.group(3))] = normalise(f, argv[0])
    return files, p.stdout, p.stderr


class SameOutput(unittest.TestCase):
    def test_files_as_the_baseline_writes_them(self):
        lib, why = baseline_lib()
        if not lib:
            self.skipTest(why)
        for argv0, args, env in RUNS:
            if not os.path.exists(argv0):
                continue  # a clang build where clang is not installed
            with self.subTest(program=os.path.basename(argv0), env=env):
                before_dir = tempfile.mkdtemp(prefix="cgprof-same-")
                after_dir = tempfile.mkdtemp(prefix="cgprof-same-")
                self.addCleanup(shutil.rmtree, before_dir, ignore_errors=True)
                self.addCleanup(shutil.rmtree, after_dir, ignore_errors=True)
                before, out_b, err_b = written(lib, [argv0] + args, env, before_dir)
                # the baseline's calls: every hook pair one (inlined calls
                # are folded by default since issue 25)
                after, out_a, err_a = written(LIB, [argv0] + args, dict(env, CGPROF_INLINED="count"), after_dir)
                self.assertEqual(out_a, out_b, "the program's output")
                # the messages' one change since: the README's sections
                # became pages (issue 29), and a message names the page
                err_b = err_b.replace('the README, "Repairs"', 'docs/internals/design.md, "Repairs"')
                self.assertEqual(err_a.replace(after_dir, "<dir>"), err_b.replace(before_dir, "<dir>"),
                                 "the runtime's messages")
                self.assertEqual(sorted(after), sorted(before), "the files written")
                for name in before:
                    self.assertEqual(after[name], before[name], name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
