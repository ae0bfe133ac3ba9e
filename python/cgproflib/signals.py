"""Signals by name, in one place:

- number(): what the runtime takes a name for (CGPROF_SIGNAL's values, the
  signal: line of its status file): runtime/base/options.c's cg_parse_signal(),
  asked through cgprof-rules; no table of names here;
- name(): how the launcher names the signal that killed a program
  ("SIGABRT"), as the system does (Python's signal module).
"""

import functools
import signal

from . import rules


@functools.lru_cache(maxsize=None)
def number(name: str) -> int:
    """The signal the runtime takes name for: its number, 0 for none, -1
    if it refuses it (not a signal that can ask for dumps)."""
    return rules.signal_numbers([name])[0]


def name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal %d" % sig
