"""cgproflib.control's pieces that run nothing: the status file, the command
line, the listing; and cgproflib.signals, which it reads the status file's
signal with. (tests/integration/test_control.py runs the command against a
fake runtime and the real one.)"""

import signal
import unittest

from cgproflib import control, signals


class Pieces(unittest.TestCase):
    def test_parse_status(self):
        text = ("pid: 1234\ncmd: ./server --threads 4\nsignal: USR1\nthreads: 5\nparts: 2\n"
                "collecting: on\ndone: 3\n"
                "last: /abs/path/callgrind.out.1234.2-01 /abs/my\\x20dir/callgrind.out.1234.2-02\n")
        st = control.parse_status(text)
        self.assertEqual((st.pid, st.cmd, st.signal, st.threads, st.parts, st.collecting, st.done),
                         (1234, "./server --threads 4", "USR1", 5, 2, "on", 3))
        self.assertEqual(st.last, ["/abs/path/callgrind.out.1234.2-01", "/abs/my dir/callgrind.out.1234.2-02"])

    def test_parse_status_empty_last(self):
        for last in ("last:\n", "last: \n", ""):
            st = control.parse_status("pid: 7\ncmd: x\nsignal: none\nthreads: 1\nparts: 0\n"
                                      "collecting: off\ndone: 0\n" + last)
            self.assertEqual(st.last, [])
            self.assertEqual(st.collecting, "off")

    def test_parse_status_malformed(self):
        good = "pid: 7\ncmd: x\nsignal: USR1\nthreads: 1\nparts: 0\ncollecting: on\ndone: 0\n"
        for bad in (good.replace("done: 0\n", ""), good.replace("done: 0", "done: x"),
                    good.replace("signal: USR1\n", ""), good + "no colon here\n"):
            with self.assertRaises(control.ControlError):
                control.parse_status(bad)

    def test_signal_number(self):
        self.assertEqual(control.signal_number("USR1"), signal.SIGUSR1)
        self.assertEqual(control.signal_number("SIGUSR2"), signal.SIGUSR2)
        self.assertEqual(control.signal_number("12"), 12)
        self.assertEqual(control.signal_number("RTMIN+2"), signal.SIGRTMIN + 2)
        self.assertIsNone(control.signal_number("none"))
        for bad in ("KILL", "9", "STOP", "FOO", "0", "100000", ""):
            with self.assertRaises(control.ControlError, msg=bad):
                control.signal_number(bad)

    def test_maps_mention_runtime(self):
        line = "7f0000000000-7f0000001000 r-xp 00000000 08:01 1234                       %s\n"
        self.assertTrue(control.maps_mention_runtime(line % "/opt/cg/build/runtime/libcgprof.so"))
        self.assertTrue(control.maps_mention_runtime(line % "/my dir/libcgprof.so (deleted)"))
        self.assertFalse(control.maps_mention_runtime(line % "/usr/lib/libcgprof.so.old"))
        self.assertFalse(control.maps_mention_runtime(line % "/usr/lib/x86_64-linux-gnu/libc.so.6"))
        self.assertFalse(control.maps_mention_runtime(line % "[heap]"))
        self.assertFalse(control.maps_mention_runtime("7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n"))

    def test_parse_args(self):
        pa = control.parse_args
        self.assertEqual(pa([]).action, None)
        a = pa(["-d", "42"])
        self.assertEqual((a.action, a.arg, a.pid), ("dump", None, 42))
        a = pa(["-d", "phase1", "42"])
        self.assertEqual((a.action, a.arg, a.pid), ("dump", "phase1", 42))
        a = pa(["--dump=after warmup", "42", "--timeout", "2.5"])
        self.assertEqual((a.action, a.arg, a.pid, a.timeout), ("dump", "after warmup", 42, 2.5))
        a = pa(["-d", "phase1", "--timeout=3", "42"])
        self.assertEqual((a.arg, a.pid, a.timeout), ("phase1", 42, 3.0))
        a = pa(["-d", "42", "--timeout", "5"])
        self.assertEqual((a.arg, a.pid, a.timeout), (None, 42, 5.0))
        self.assertEqual(pa(["-z", "42"]).action, "zero")
        a = pa(["-i", "off", "42"])
        self.assertEqual((a.action, a.arg), ("collect", "off"))
        self.assertEqual(pa(["--instr=on", "42"]).arg, "on")
        self.assertEqual(pa(["42"]).pid, 42)
        self.assertEqual(pa(["-z", "-h"]).action, "help")
        self.assertEqual(pa(["--version"]).action, "version")

    def test_parse_args_targets(self):
        """Targets as callgrind_control takes them: pids and program names,
        any number, none for every process; the argument right after -d is
        the reason unless it is a number."""
        pa = control.parse_args
        for argv, action, arg, targets in (
                (["-d"], "dump", None, []),
                (["-z"], "zero", None, []),
                (["-i", "on"], "collect", "on", []),
                (["-d", "phase1"], "dump", "phase1", []),
                (["-d", "phase1", "server", "42"], "dump", "phase1", ["server", "42"]),
                (["-d", "a", "b", "c"], "dump", "a", ["b", "c"]),
                (["-d", "--", "server"], "dump", None, ["server"]),
                (["server", "-d"], "dump", None, ["server"]),
                (["-z", "abc"], "zero", None, ["abc"]),
                (["1", "2"], None, None, ["1", "2"]),
                (["examples/server"], None, None, ["examples/server"])):
            a = pa(argv)
            self.assertEqual((a.action, a.arg, a.targets), (action, arg, targets), argv)
        self.assertIsNone(pa(["1", "2"]).pid)
        self.assertIsNone(pa(["-z", "abc"]).pid)
        self.assertEqual(pa(["-z", "7"]).pid, 7)

    def test_parse_args_questions(self):
        pa = control.parse_args
        a = pa(["-b", "42"])
        self.assertEqual((a.action, a.back, a.events, a.stat, a.targets), ("query", True, None, False, ["42"]))
        a = pa(["-e"])
        self.assertEqual((a.action, a.back, a.events, a.stat, a.targets), ("query", False, ["ns", "calls"], False, []))
        self.assertEqual(pa(["-e", "calls", "42"]).events, ["calls"])
        self.assertEqual(pa(["-e", "calls,ns"]).events, ["calls", "ns"])
        a = pa(["-e", "server"])            # no event's name: a target
        self.assertEqual((a.events, a.targets), (["ns", "calls"], ["server"]))
        a = pa(["-b", "-e", "--stat", "server"])
        self.assertEqual((a.action, a.back, a.events, a.stat, a.targets), ("query", True, ["ns", "calls"], True,
                                                                          ["server"]))
        self.assertEqual(pa(["--back", "-s"]).stat, True)

    def test_parse_args_refused(self):
        pa = control.parse_args
        for bad in (["-i", "maybe", "42"], ["-i"], ["-z", "-d", "42"], ["-b", "-z"], ["-d", "-e"], ["-s", "-i", "on"],
                    ["-q", "42"], ["-z", "0"], ["-z", "-5"], ["-z", ""],
                    ["--dump=", "42"], ["--timeout", "0", "-z", "42"], ["--timeout", "x", "-z", "42"],
                    ["--timeout", "nan", "-z", "42"], ["--dump=two\nlines", "42"], ["-d", "x" * 300, "42"]):
            with self.assertRaises(control.UsageError, msg=bad):
                pa(bad)

    def test_command_line(self):
        self.assertEqual(control.command_line("dump", "phase 1"), "dump phase 1")
        self.assertEqual(control.command_line("dump"), "dump cgprof-control")
        self.assertEqual(control.command_line("zero"), "zero")
        self.assertEqual(control.command_line("collect", "off"), "collect off")
        self.assertEqual(control.command_line("stacks"), "stacks")
        self.assertEqual(control.command_line("counters"), "counters")

    def test_name_matches(self):
        """A program's name names the first word of a command: the whole of
        it, or its last path components."""
        m = control.name_matches
        for name, prog in (("server", "/b/examples/server"), ("examples/server", "/b/examples/server"),
                           ("./server", "./server"), ("server", "./server"), ("server", "server"),
                           ("/b/examples/server", "/b/examples/server")):
            self.assertTrue(m(name, prog), (name, prog))
        for name, prog in (("rver", "/b/examples/server"), ("server", "/b/examples/server2"),
                           ("les/server", "/b/examples/server"), ("", "/b/server"), ("server", "")):
            self.assertFalse(m(name, prog), (name, prog))

    def test_is_launcher(self):
        self.assertTrue(control.is_launcher(["/usr/bin/python3", "-S", "/usr/local/bin/cgprof", "./server"]))
        self.assertTrue(control.is_launcher(["python3", "/b/scripts/cgprof", "--total=1", "x"]))
        self.assertFalse(control.is_launcher(["/usr/bin/python3", "/b/scripts/cgprof-control", "-d"]))
        self.assertFalse(control.is_launcher(["./server", "cgprof"]))
        self.assertFalse(control.is_launcher(["/usr/bin/python3", "serve.py", "cgprof"]))
        self.assertFalse(control.is_launcher(["cgprof"]))

    def test_unescape(self):
        self.assertEqual(control.unescape("a\\x20b"), "a\\x20b".replace("\\x20", " "))
        self.assertEqual(control.unescape("std::map<int,\\x20int>"), "std::map<int, int>")
        self.assertEqual(control.unescape("a\\x5cx20"), "a\\x20")
        self.assertEqual(control.unescape("plain"), "plain")
        self.assertEqual(control.unescape("bad\\xzz"), "bad\\xzz")

    def test_parse_stacks(self):
        text = ("thread: number=2 tid=11 depth=1 shown=1 moved=1 name=worker\\x201\n"
                "frame: level=0 fn=0x10 calls=3 ns=1500 flags=inlined,moved def=/s/a.c:4 function=f(int,\\x20char)\n"
                "thread: number=1 tid=10 depth=130 shown=128 moved=0 name=-\n"
                "frame: level=0 fn=0x20 calls=1 ns=9 flags=- def=/s/b.c:1 function=g\n"
                "omitted: 2\n"
                "frame: level=129 fn=0x30 calls=1 ns=99 flags=- at=/s/m.c:7 function=main\n")
        threads = control.parse_stacks(text)
        self.assertEqual([t.number for t in threads], [1, 2])
        one, two = threads
        self.assertEqual((two.tid, two.name), (11, "worker 1"))
        self.assertEqual(one.name, "")
        f = two.frames[0]
        self.assertEqual((f.level, f.calls, f.ns, f.flags, f.defined, f.function),
                         (0, 3, 1500, ["inlined", "moved"], "/s/a.c:4", "f(int, char)"))
        self.assertEqual(one.omitted, [(1, 2)])
        shown = control.format_stacks(threads, times=True)
        self.assertIn("  Thread 1 (tid 10): 130 calls in progress, innermost first\n", shown)
        self.assertIn("   [ 0]   9 ns  g (1 x)  in /s/b.c:1\n", shown)
        self.assertIn("         ... 2 frames not shown ...\n", shown)
        self.assertIn("   [129]  99 ns  main (1 x)  at /s/m.c:7\n", shown)
        self.assertIn('  Thread 2 "worker 1" (tid 11): 1 call in progress, innermost first (1 of the frames shown '
                      'changed while being read: marked *)\n', shown)
        self.assertIn("  *[ 0]  1.5 us  f(int, char) (3 x) [inlined]  in /s/a.c:4\n", shown)

    def test_listing_one_line_per_process(self):
        st = control.parse_status("pid: 7\ncmd: x\nsignal: USR1\nthreads: 2\nparts: 1\ncollecting: on\ndone: 1\n")
        text = control.format_listing([control.ProcessInfo(7, "prog 'a\nb'", st),
                                       control.ProcessInfo(8, "other\targ", None, "no status")])
        lines = text.splitlines()
        self.assertEqual(len(lines), 3, text)
        self.assertEqual(lines[1].split(), ["7", "2", "1", "on", "USR1", "prog", "'a\\x0ab'"])
        self.assertTrue(lines[2].startswith("8 "), lines[2])
        self.assertIn("other\\x09arg", lines[2])
        self.assertIn("(control files unavailable: no status)", lines[2])

    def test_control_dir_path(self):
        self.assertEqual(control.control_dir_path({}, uid=1234), "/tmp/cgprof-1234")
        self.assertEqual(control.control_dir_path({"CGPROF_CONTROL_DIR": "/x/y"}, uid=1234), "/x/y")


class Signals(unittest.TestCase):
    def test_the_runtimes_names(self):
        # runtime/base/options.c's cg_parse_signal(): its names, with or without
        # SIG, in any ASCII case; numbers; RTMIN/RTMAX with an offset; none
        for name, number in (("USR1", signal.SIGUSR1), ("sigusr2", signal.SIGUSR2), ("PROF", signal.SIGPROF),
                             ("16", 16), ("RTMIN+3", signal.SIGRTMIN + 3), ("rtmax-1", signal.SIGRTMAX - 1),
                             ("none", 0)):
            self.assertEqual(signals.number(name), number, name)
        # refused: faults, KILL and STOP, unknown names, non-ASCII case
        # folding, offsets out of the real-time range
        for name in ("SEGV", "ABRT", "KILL", "9", "STOP", "FOO", "", " USR1", "u\u017fr1", "RTMIN-1", "RTMAX+1",
                     "0", "65"):
            self.assertEqual(signals.number(name), -1, name)

    def test_name_of_a_signal_that_killed_a_program(self):
        self.assertEqual(signals.name(signal.SIGABRT), "SIGABRT")
        self.assertEqual(signals.name(signal.SIGRTMIN + 3), "signal %d" % (signal.SIGRTMIN + 3))


if __name__ == "__main__":
    unittest.main(verbosity=2)
