"""The runtime's options: the table of runtime/base/options.inc, which
scripts/gen_cgprof.py writes into _generated.py at build time (so that
nothing here is typed again), and the runtime's verdict on their values,
asked from runtime/base/options.c itself (cgproflib.rules).
"""

from typing import List, Optional, Sequence, Tuple

from . import rules
from ._generated import OPTIONS
from .optable import Option

BY_NAME = {o.name: o for o in OPTIONS}
BY_VARIABLE = {o.variable: o for o in OPTIONS}


def refusals(values: Sequence[Tuple[Option, str]]) -> List[Optional[str]]:
    """For each (option, value), in one question to the runtime: None if it
    accepts the value, else why it refuses it, in options.c's words."""
    if not values:
        return []
    return rules.refusals([(o.variable, v) for o, v in values])
