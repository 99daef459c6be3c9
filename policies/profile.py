"""Availability profile of one partition for conservative backfilling.

A :class:`Profile` is a step function of free nodes over time: ``free`` nodes
from each breakpoint ``time`` to the next (the last step lasts forever).
Conservative backfilling (:mod:`policies.backfilling`) places each queued job
at its :meth:`Profile.earliest` start and takes its nodes out with
:meth:`Profile.reserve`.

The breakpoints are kept in chunks of at most ``2 * CHUNK`` (sorted by time),
each with the largest free count among its steps. :meth:`Profile.earliest`
skips every chunk whose largest free count is below the job's node count
without reading its steps, and a new breakpoint is inserted into one chunk
only: on a long queue (thousands of reservations) a search reads a few chunks
instead of every step since its lower bound. The answers are those of the
plain list-based search (tests compare them on random profiles).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

#: breakpoints per chunk after a split (a chunk is split when it exceeds twice this)
CHUNK = 64


class Profile:
    """Free nodes of one partition over time: a step function.

    Built from the free nodes ``free_now`` at ``now`` and the releases
    ``(time, nodes)`` of the running jobs. ``times`` and ``free`` give the
    steps as two flat lists (a copy: for checks and small profiles); the
    search and the updates work on the chunks. Times in seconds.
    """

    __slots__ = ("_firsts", "_free", "_max", "_times")

    def __init__(self, now: float, free_now: int, releases: Sequence[tuple[float, int]]) -> None:
        times = [now]
        free = [free_now]
        for t, n in sorted(releases):
            if t <= times[-1]:
                free[-1] += n
            else:
                times.append(t)
                free.append(free[-1] + n)
        self._times = [times[k : k + CHUNK] for k in range(0, len(times), CHUNK)]
        self._free = [free[k : k + CHUNK] for k in range(0, len(free), CHUNK)]
        self._max = [max(f) for f in self._free]
        self._firsts = [t[0] for t in self._times]

    @property
    def times(self) -> list[float]:
        return list(chain.from_iterable(self._times))

    @property
    def free(self) -> list[int]:
        return list(chain.from_iterable(self._free))

    def steps(self) -> Any:
        """``(time, free)`` of every step in time order (an iterator)."""
        return zip(chain.from_iterable(self._times), chain.from_iterable(self._free))

    def earliest(self, nodes: int, duration: float, not_before: float | None = None) -> float:
        """Earliest breakpoint from which ``nodes`` stay free for ``duration``
        (inf: never).

        ``not_before``: a breakpoint time known to be at or before the answer
        (for example an earlier answer for the same or a smaller job: reserving
        only takes nodes away, so answers never move earlier); the search
        starts there. The answer is the same."""
        times, free, top = self._times, self._free, self._max
        n_chunks = len(times)
        c = i = 0
        if not_before is not None:
            c = bisect_right(self._firsts, not_before) - 1
            if c < 0:
                c = 0
            i = bisect_left(times[c], not_before)
        while c < n_chunks:
            if top[c] < nodes:  # no step of this chunk has enough nodes
                c += 1
                i = 0
                continue
            f = free[c]
            m = len(f)
            while i < m and f[i] < nodes:
                i += 1
            if i == m:
                c += 1
                i = 0
                continue
            start = times[c][i]
            end = start + duration
            # the steps after ``start`` must keep ``nodes`` free until ``end``
            cc, j = c, i + 1
            t, f = times[cc], free[cc]
            while True:
                if j == len(t):
                    cc += 1
                    if cc == n_chunks:
                        return start  # the last step lasts forever
                    j = 0
                    t, f = times[cc], free[cc]
                if t[j] >= end:
                    return start
                if f[j] < nodes:
                    break
                j += 1
            c, i = cc, j + 1
        return math.inf

    def _split(self, t: float) -> None:
        """Make ``t`` a breakpoint (``t`` at or after the first one)."""
        c = bisect_right(self._firsts, t) - 1
        times = self._times[c]
        k = bisect_left(times, t)
        if k < len(times) and times[k] == t:
            return
        free = self._free[c]
        times.insert(k, t)
        free.insert(k, free[k - 1])  # k >= 1: times[0] <= t
        if len(times) > 2 * CHUNK:
            self._times[c + 1 : c + 1] = [times[CHUNK:]]
            self._free[c + 1 : c + 1] = [free[CHUNK:]]
            del times[CHUNK:], free[CHUNK:]
            self._firsts.insert(c + 1, self._times[c + 1][0])
            self._max[c : c + 1] = [max(free), max(self._free[c + 1])]

    def reserve(self, start: float, duration: float, nodes: int) -> None:
        """Take ``nodes`` out of ``[start, start + duration)``."""
        end = start + duration
        self._split(start)
        finite = math.isfinite(end)
        if finite:
            self._split(end)
        times, free, firsts = self._times, self._free, self._firsts
        c = bisect_right(firsts, start) - 1
        k = bisect_left(times[c], start)
        while c < len(times):
            t, f = times[c], free[c]
            m = len(t)
            while k < m and not (finite and t[k] >= end):
                f[k] -= nodes
                k += 1
            self._max[c] = max(f)
            if k < m:
                return
            c += 1
            k = 0

    def free_at(self, t: float) -> int:
        """Free nodes at time ``t`` (at or after the first breakpoint)."""
        c = bisect_right(self._firsts, t) - 1
        return self._free[c][bisect_right(self._times[c], t) - 1]


def suffix_shapes(queue: Sequence[Any], every: int) -> list[list[tuple[int, float]]]:
    """For each position ``c * every`` of ``queue``: the (nodes, shortest planned
    length) pairs of the jobs from that position on, by node count (rigid jobs:
    requested nodes, :func:`~policies.base.planned_length_s`)."""
    from policies.base import planned_length_s

    out: list[list[tuple[int, float]]] = [[] for _ in range((len(queue) - 1) // every + 1)]
    shortest: dict[int, float] = {}
    nodes = [job.requested_nodes for job in queue]
    lengths = list(map(planned_length_s, queue))
    inf = math.inf
    for i in range(len(queue) - 1, -1, -1):
        n = nodes[i]
        if lengths[i] < shortest.get(n, inf):
            shortest[n] = lengths[i]
        if not i % every:
            out[i // every] = sorted(shortest.items())
    return out


def may_start_now(profile: Profile, now: float, shapes: list[tuple[int, float]]) -> bool:
    """Whether a job of one of ``shapes`` ((nodes, length) by node count) could start
    now in ``profile``: its nodes free in every step that begins before
    ``now + length`` (as :meth:`Profile.earliest` tests a start at ``now``).
    Reserving only takes nodes away, so when this is False no job of these shapes,
    nor a longer job of the same node count, starts now once more are reserved."""
    steps = profile.steps()
    _, free_now = next(steps)
    if not shapes or shapes[0][0] > free_now:
        return False
    horizon = now + max(length for _, length in shapes)
    lowest = free_now
    drops: list[tuple[float, int]] = []  # (time, the lowest free count from then on)
    for t, f in steps:
        if t >= horizon:
            break
        if f < lowest:
            lowest = f
            drops.append((t, lowest))
            if lowest < shapes[0][0]:
                break
    for n, length in shapes:
        if n > free_now:
            return False
        end = now + length
        # the first step with fewer than n free nodes begins at or after the end
        if next((t for t, low in drops if low < n), math.inf) >= end:
            return True
    return False


def any_starts_now(profile: Profile, now: float, shortest_upto: Any) -> bool:
    """Whether some job could start now in ``profile``, given
    ``shortest_upto[c]``: the shortest planned length among the jobs of at most
    ``c`` nodes (a prefix minimum over node counts, inf where there is none;
    the block summaries of :class:`~policies.queue_index.QueueIndex`).

    The same answer as :func:`may_start_now` on those jobs' shapes: with
    ``g(L)`` the fewest free nodes over the steps that begin before ``now + L``,
    a job of ``n`` nodes and length ``d`` starts now when ``n <= g(d)``; then
    ``c = n`` has ``shortest_upto[n] <= d``, so ``n <= g(shortest_upto[n])``;
    conversely when ``c <= g(shortest_upto[c])`` the job of that shortest length
    has at most ``c`` nodes and starts now."""
    steps = profile.steps()
    _, free_now = next(steps)
    top = min(free_now, len(shortest_upto) - 1)
    if top < 1:
        return False
    lengths = np.asarray(shortest_upto[1 : top + 1], dtype=np.float64)
    listed = np.isfinite(lengths)
    if not listed.any():
        return False
    ends = now + lengths
    horizon = float(ends[listed].max())
    smallest = int(np.argmax(listed)) + 1  # the fewest nodes any listed job needs
    times = [now]
    lows = [free_now]
    for t, f in steps:
        if t >= horizon:
            break
        if f < lows[-1]:
            times.append(t)
            lows.append(f)
            if f < smallest:
                break
    # g at each end: the lowest count among the steps that begin before it
    fewest = np.asarray(lows)[np.searchsorted(times, ends, side="left") - 1]
    counts = np.arange(1, top + 1)
    return bool(np.any(listed & (counts <= fewest)))
