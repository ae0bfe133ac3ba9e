"""The commands' messages on stderr: each line of a message behind the
command's name ("cgprof report: ..."), as the runtime writes its own
behind "cgprof:". One helper for cgprof, cgprof report, cgprof flame and
cgprof pprof, so that they say things alike."""

import sys


def to_stderr(prog):
    """A function that writes a message, each of its lines behind
    'prog: ', to the stderr of the moment (a test may replace it)."""
    def say(msg):
        for line in msg.split("\n"):
            sys.stderr.write("%s: %s\n" % (prog, line))
    return say
