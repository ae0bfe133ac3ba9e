"""Latency histograms (CGPROF_LATENCY=1): the '#lat:' comment lines of a
part, their sums and their percentiles, for the reader (cgproflib.reader)
and `cgprof report --latency`.

What a part holds (runtime/output/writer.c, write_latency; docs/latency.md):

    #latency: 4
    #lat: (12) CALLS SUM MAX LOWER:COUNT LOWER:COUNT...

"#latency: S": the buckets' scheme, S buckets of equal width in each power
of two. A time t below S ns has a bucket of its own; above, the power of two
[2^e, 2^(e+1)) is cut into S buckets of width 2^e / S. A bucket is written
by the least time it holds (LOWER, ns), so that a reader needs no rule but
S: the bucket ends at LOWER + 1 below S, else at LOWER + 2^floor(log2 LOWER)
/ S (the last the runtime has, from 2^40 * 1.75 ns on, holds every longer
time: its end is the longest call, MAX). "(12)": the function, by its id in
the part (fn=/cfn=). CALLS: the calls that ended in the part (the counts'
sum), SUM their inclusive times (ns), MAX the longest (exact, but for a part
after a dump or cgprof-control -z whose longest call came before: then the
top of that part's highest bucket). Lines of one function add up.

A percentile is the midpoint of the bucket that holds it, at most MAX: the
true value is in that bucket, so the midpoint is within 1 / (2 S) of it
(12.5% with S = 4), and exact below 2 S ns. The mean (SUM / CALLS) and the
count are exact.
"""

from typing import Dict, Optional, Tuple

LATENCY_PREFIX = "#lat:"
SCHEME_PREFIX = "#latency:"
DEFAULT_SUB = 4


class Histogram:
    """One function's calls by inclusive time (ns), in a part or summed
    over parts, threads and processes."""

    __slots__ = ("sub", "calls", "sum", "max", "buckets")

    def __init__(self, sub: int = DEFAULT_SUB):
        self.sub = sub
        self.calls = 0
        self.sum = 0
        self.max = 0
        self.buckets: Dict[int, int] = {}   # least time of the bucket (ns) -> calls

    def add(self, other: "Histogram") -> None:
        if other.sub != self.sub:
            raise ValueError("histograms of %d and %d buckets a power of two cannot be added"
                             % (self.sub, other.sub))
        self.calls += other.calls
        self.sum += other.sum
        self.max = max(self.max, other.max)
        b = self.buckets
        for lo, n in other.buckets.items():
            b[lo] = b.get(lo, 0) + n

    def end(self, lower: int) -> int:
        """Where the bucket that starts at `lower` ends (the least time of
        the next one)."""
        if lower < self.sub:
            return lower + 1
        return lower + (1 << (lower.bit_length() - 1)) // self.sub

    def bounded_end(self, lower: int) -> int:
        """end(lower), but the longest call bounds every bucket that holds
        it: a bucket's times lie in [lower, bounded_end(lower))."""
        end = self.end(lower)
        return min(end, self.max + 1) if self.max >= lower else end

    def middle(self, lower: int) -> float:
        """The middle of the times the bucket at `lower` can hold: what a
        bucket stands for when one figure is shown (a percentile, pprof's
        latency label)."""
        return (lower + self.bounded_end(lower) - 1) / 2.0

    @property
    def mean(self) -> float:
        return self.sum / self.calls if self.calls else 0.0

    @property
    def error(self) -> float:
        """The bound of a percentile's error, relative to the true value."""
        return 1.0 / (2 * self.sub)

    def percentile(self, p: float) -> Tuple[float, int, int]:
        """(estimate, lower, end) of the p-th percentile (0 < p <= 100): the
        time of the ceil(p/100 * calls)-th call in increasing order lies in
        [lower, end) (end at most the longest call + 1); the estimate is the
        midpoint of the times it holds."""
        if not self.calls:
            return (0.0, 0, 0)
        rank = max(1, -(-int(p * self.calls * 1000) // 100000))  # ceil(p/100 * calls), p to 0.001
        seen = 0
        for lo in sorted(self.buckets):
            seen += self.buckets[lo]
            if seen >= rank:
                if rank == self.calls and self.max >= lo:
                    return (float(self.max), lo, self.max + 1)   # the longest call itself
                return (self.middle(lo), lo, self.bounded_end(lo))
        lo = max(self.buckets)
        return (float(self.max), lo, self.max + 1)


def parse_scheme(raw: str) -> Optional[int]:
    """S of a "#latency: S" line, or None if it is not one that can be read."""
    toks = raw[len(SCHEME_PREFIX):].split()
    if len(toks) != 1 or not toks[0].isdigit() or int(toks[0]) < 1:
        return None
    return int(toks[0])


def parse(raw: str, sub: int) -> Optional[Tuple[str, Histogram]]:
    """("(id)", Histogram) of a "#lat:" line, or None if it cannot be read
    (a comment to every other reader: it is then left out)."""
    toks = raw[len(LATENCY_PREFIX):].split()
    if len(toks) < 4 or not (toks[0].startswith("(") and toks[0].endswith(")") and toks[0][1:-1].isdigit()):
        return None
    h = Histogram(sub)
    try:
        h.calls, h.sum, h.max = int(toks[1]), int(toks[2]), int(toks[3])
        n = 0
        for t in toks[4:]:
            lo, colon, c = t.partition(":")
            if not colon:
                return None
            k = int(lo)
            h.buckets[k] = h.buckets.get(k, 0) + int(c)
            n += int(c)
    except ValueError:
        return None
    if n != h.calls or min(h.calls, h.sum, h.max) < 0:
        return None
    return toks[0], h


def add_to(table: dict, key, h: Histogram) -> None:
    """table[key] += h (a copy of h when new)."""
    had = table.get(key)
    if had is None:
        had = table[key] = Histogram(h.sub)
    had.add(h)


def fmt_ns(ns: float) -> str:
    """A time for a table: ns, us, ms or s, three significant digits."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            v = ns / scale
            return ("%.0f" if v >= 100 else "%.1f" if v >= 10 else "%.2f") % v + " " + unit
    return "%.0f ns" % ns
