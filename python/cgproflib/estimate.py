"""Call stacks estimated from a run's arcs, for flame graphs (and pprof)
of a run that wrote no path files (CGPROF_PATHS, paths.py).

A Callgrind file holds arcs: caller -> callee with calls and inclusive
time, and each function's self time. It does not say, of a function
called from two places, how its time splits among its callers' own call
paths. The stacks here are made as gprof made its call graph: upwards
from each function, its self time (and its calls) split among its
callers in the shares of their arcs' inclusive time (of their calls for
the calls), then among theirs, up to a function nobody called. So:

- every function's self time and calls, summed over its stacks, are the
  file's exactly (the shares at each step add up to 1), and the stacks
  add up to the thread's total;
- a stack on which every function has one caller is exact (decided by
  the arcs): each step's share is 1;
- a function with two or more callers has its place under each caller
  estimated: it is returned in Tree.estimated, and the writers mark its
  frames (paths.ESTIMATE_MARK), so that a stack drawn from a guess is
  labelled as one wherever it is shown;
- recursion is folded as the path files fold it (a function is on a
  stack at most once, its time counted at the outermost call): the arcs
  that close a cycle (the back edges of a depth-first walk down from the
  functions nobody calls: is_odd -> is_even under main -> is_even ->
  is_odd, f -> f) are left out of the shares, so that every walk up
  ends at a root;
- a share too small to draw (below MIN_SHARE of the thread's total, in
  time and in calls) is not followed on its own: its weight goes to the
  function's other callers in their shares (the largest takes it when
  all are small), which keeps the sums exact and the number of stacks
  bounded on a large call graph.
"""

import re

from . import naming, paths, reader
from ._shared import DESC_THREAD_NAME, DESC_THROTTLED

# A stack's weight below this share of its thread's total time (and of
# its calls) is not split further on its own: 1/20,000 is below what a
# flame graph draws (a frame of one pixel in 2,000).
MIN_SHARE = 5e-5


class Thread:
    """A thread's arcs and self costs, summed over its parts."""

    def __init__(self, pid, thread):
        self.pid, self.thread = pid, thread
        self.name = None
        self.cmd = None
        self.event = None
        self.files = []
        self.self_cost = {}      # name -> self cost
        self.calls_in = {}       # name -> calls into it (recursive ones too)
        self.callers = {}        # callee -> {caller: [calls, inclusive]} (callee != caller)
        self.total = 0
        self.lower_bounds = set()  # throttled functions, and those without hooks (visits)

    def add(self, d):
        if self.event is None:
            self.event = d.event
        elif d.event != self.event:
            raise ValueError("%s: event %s, and %s before it: times in different units cannot be summed" %
                             (d.path, d.event, self.event))
        self.files.append(d.path)
        self.name = d.desc_value(DESC_THREAD_NAME) or self.name
        self.cmd = self.cmd or d.cmd
        self.total += d.total
        self.lower_bounds |= paths.throttled_names(d.desc_value(DESC_THROTTLED)) | {k[0] for k in d.visits}
        for (name, _obj), v in d.self_cost.items():
            self.self_cost[name] = self.self_cost.get(name, 0) + v
        for (caller, callee, _fl, _line), (n, c) in d.arcs.items():
            f = callee[0]
            self.calls_in[f] = self.calls_in.get(f, 0) + n
            if caller[0] == f:
                continue
            a = self.callers.setdefault(f, {}).setdefault(caller[0], [0, 0])
            a[0] += n
            a[1] += c


def threads_of_files(files, event=None):
    """[Thread] of the Callgrind files, per (pid, thread) in that order,
    and [(path, reason)] of those that cannot be read."""
    per, bad = {}, []
    for path in files:
        try:
            d = reader.digest(path, event, False, sites=False)
        except OSError as e:
            bad.append((path, "cannot read %s: %s" % (path, e.strerror or e)))
            continue
        except reader.CallgrindFormatError as e:
            bad.append((path, str(e.violations[0])))
            continue
        key = (d.pid if d.pid is not None else 0, d.thread if d.thread is not None else 0)
        t = per.get(key)
        if t is None:
            t = per[key] = Thread(*key)
        t.add(d)
    return [t for _, t in sorted(per.items())], bad


def _drop_back_edges(callers, names):
    """callers ({callee: {caller: v}}) without the arcs that close a cycle:
    the back edges of a depth-first walk down from the functions nobody
    calls (then from any function not reached yet, by name), callees in
    name order. What is left has no cycle."""
    callees = {}
    for g, cs in callers.items():
        for c in cs:
            callees.setdefault(c, []).append(g)
    for v in callees.values():
        v.sort()
    state = {}   # 1: on the walk's stack, 2: done
    back = set()
    roots = sorted(f for f in names if not callers.get(f))
    for start in roots + sorted(names):
        if start in state:
            continue
        state[start] = 1
        walk = [(start, iter(callees.get(start, ())))]
        while walk:
            f, it = walk[-1]
            for g in it:
                st = state.get(g)
                if st == 1:
                    back.add((f, g))
                elif st is None:
                    state[g] = 1
                    walk.append((g, iter(callees.get(g, ()))))
                    break
            else:
                state[f] = 2
                walk.pop()
    return {g: {c: v for c, v in cs.items() if (c, g) not in back} for g, cs in callers.items()}


def _shares(cands, index):
    """Each candidate's share by its arc's value at index (calls 0,
    inclusive 1), or by the other when those are all 0."""
    total = sum(v[index] for _, v in cands)
    if total <= 0:
        index = 1 - index
        total = sum(v[index] for _, v in cands)
    if total <= 0:
        return [1.0 / len(cands)] * len(cands)
    return [v[index] / total for _, v in cands]


def tree_of(t, several_pids=False):
    """The paths.Tree of a Thread's estimated stacks: per stack (root
    first) [calls, inclusive, self] of its last function; .estimated holds
    the functions whose place under their callers is a split by shares."""
    tree = paths.Tree()
    tree.event = t.event
    tree.files = list(t.files)
    tree.pids = {t.pid}
    tree.threads = {(t.pid, t.thread)}
    tree.thread_name = t.name
    tree.cmd = t.cmd
    tree.label = paths.thread_label(t.pid, t.thread, t.name, several_pids)
    names = set(t.self_cost) | set(t.calls_in) | set(t.callers) | {c for cs in t.callers.values() for c in cs}
    callers = _drop_back_edges(t.callers, names)
    tree.estimated = {f for f, cs in callers.items() if len(cs) > 1}
    tree.lower_bounds = set(t.lower_bounds)
    min_t = max(1, sum(t.self_cost.values())) * MIN_SHARE
    min_c = max(1, sum(t.calls_in.values())) * MIN_SHARE
    costs = {}
    for f in sorted(names):
        s, n = t.self_cost.get(f, 0), t.calls_in.get(f, 0)
        if s <= 0 and n <= 0:
            continue
        # upwards: (stack from f up, time, calls); no cycle is left
        todo = [([f], float(s), float(n))]
        while todo:
            stack, wt, wc = todo.pop()
            cands = list(callers.get(stack[-1], {}).items())
            if not cands:
                key = tuple(reversed(stack))
                e = costs.get(key)
                if e is None:
                    e = costs[key] = [0.0, 0, 0.0]
                e[0] += wc
                e[2] += wt
                continue
            st, sc = _shares(cands, 1), _shares(cands, 0)
            keep = [i for i in range(len(cands)) if wt * st[i] >= min_t or wc * sc[i] >= min_c]
            if not keep:
                keep = [max(range(len(cands)), key=lambda i: (st[i], sc[i]))]
            kt, kc = sum(st[i] for i in keep), sum(sc[i] for i in keep)
            for i in keep:
                c = cands[i][0]
                todo.append((stack + [c],
                             wt * (st[i] / kt if kt > 0 else 1.0 / len(keep)),
                             wc * (sc[i] / kc if kc > 0 else 1.0 / len(keep))))
    _integral(costs, t)
    # inclusive: the self times of the stack and of those below it
    for key, e in list(costs.items()):
        for k in range(1, len(key)):
            p = costs.get(key[:k])
            if p is None:
                p = costs[key[:k]] = [0, 0, 0]
            p[1] += e[2]
        e[1] += e[2]
    tree.costs = dict(sorted(costs.items()))
    return tree


def _integral(costs, t):
    """Whole numbers for the stacks' calls and self times, each function's
    summing to its own exactly (largest remainders): a flame graph's
    weights and pprof's values are integers, and a function's total must
    stay the file's."""
    for index, own in ((0, t.calls_in), (2, t.self_cost)):
        by_fn = {}
        for key, e in costs.items():
            by_fn.setdefault(key[-1], []).append(e)
        for f, es in by_fn.items():
            want = own.get(f, 0)
            floors = [int(e[index]) for e in es]
            left = want - sum(floors)
            order = sorted(range(len(es)), key=lambda i: es[i][index] - floors[i], reverse=True)
            for i in order[:max(0, left)]:
                floors[i] += 1
            for e, v in zip(es, floors):
                e[index] = v


def trees_of_files(files, event=None):
    """[paths.Tree] per thread of the Callgrind files (estimated stacks),
    and [(path, reason)] of the files that cannot be read."""
    threads, bad = threads_of_files(files, event)
    several = len({t.pid for t in threads}) > 1
    return [tree_of(t, several) for t in threads], bad


def flame_prefix_of(path, pid):
    """The default prefix of the flame graphs of the run a Callgrind file
    (a part or a total) of process pid is of: flame.1234 for
    callgrind.out.1234-01 and callgrind.out.1234.2-01 (as for its path
    files: naming.flame_prefix_of)."""
    run = re.sub(r"-[0-9]+\Z", "", path)
    part = re.search(r"\.[0-9]+\Z", run)
    if part and run[:part.start()].endswith(str(pid)):
        run = run[:part.start()]
    names = naming.paths_names_of(run)
    return naming.flame_prefix_of(names[1] if len(names) > 1 else run)
