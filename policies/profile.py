"""Availability profile of one partition for conservative backfilling.

A :class:`Profile` is a step function of free nodes over time: ``free[i]``
nodes from ``times[i]`` to ``times[i + 1]`` (the last step lasts forever).
Conservative backfilling (:mod:`policies.backfilling`) places each queued job
at its earliest start and takes its nodes out there (:meth:`Profile.place`, one
pass); on a long queue a batch stops once no job left could
start now (:func:`may_start_now` on the jobs' shapes, :func:`any_starts_now` on
the block summaries of :class:`~policies.queue_index.QueueIndex`). Such a batch
(:func:`conservative_batch`) also runs as one compiled function,
``policies/_placement.pyx`` (:func:`long_queue_batch` picks it when it was built):
3.6 million placements at a few microseconds each are what this module costs
on 5,000 jobs submitted at once, and no way of skipping steps in Python below
was faster.

Two flat lists and a linear search: measured on 2,000 SDSC-SP2 jobs submitted
at once, a search reads about 46 steps (34 with too few nodes, 4 candidate
starts, 8 steps of their windows), and a chunked variant that skips chunks
without enough nodes (largest free count per chunk of 64 steps) was 1.5x
slower: the steps it could skip are few and the bookkeeping is not free.
On 5,000 such jobs (profiles of about 610 steps) the steps are unevenly
spread: 74 % of searches skip fewer than 10 steps and 56 % take their first
candidate, while 3 % skip 200 steps or more (478 on average, jobs of 16 to 64
of the 128 nodes behind a fully booked stretch) and read 58 % of all skipped
steps. Other ways to skip faster gave the same starts and were not faster
(CPU time replaying every eighth batch's placements, 3 alternated runs): the
steps kept in a ``bytearray`` and skipped by a compiled regular expression
(``[\\xNN-\\xff]``), 1.3x slower, also when used only after 24 skipped steps;
``for``/``range`` loops with the window's end found by bisection, 1.26x slower;
a lower bound per node count that also serves larger counts, no change; a
remembered fully booked interval per node count, 8 % slower.
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

log = logging.getLogger(__name__)


class Profile:
    """Free nodes of one partition over time: a step function.

    ``times[i]`` is where segment ``i`` starts; ``free[i]`` holds until
    ``times[i + 1]`` (the last segment lasts forever). Times in seconds.
    """

    __slots__ = ("_latest", "_lowest", "_recent", "_same", "free", "times")

    def __init__(self, now: float, free_now: int, releases: Sequence[tuple[float, int]]) -> None:
        times = [now]
        free = [free_now]
        for t, n in sorted(releases):
            if t <= times[-1]:
                free[-1] += n
            else:
                times.append(t)
                free.append(free[-1] + n)
        self.times = times
        self.free = free
        # lower bounds of later answers for :meth:`place` (the profile only loses nodes)
        self._same: dict[tuple[int, float], float] = {}  # (nodes, length) -> its last start
        self._latest: dict[int, tuple[float, float]] = {}  # nodes -> the last (length, start)
        # (nodes, length, start) of the last job placed
        self._recent: tuple[float, float, float] = (math.inf, math.inf, now)
        self._lowest: dict[int, float] = {}  # nodes -> no step before it has that many free

    def place(self, nodes: int, duration: float) -> float:
        """The earliest start from which ``nodes`` stay free for ``duration`` (inf:
        never), reserved there when finite: the same answer and steps as
        :meth:`place_from` searching from the profile's start.

        The search starts from a bound known to be at or before the answer:
        the largest of the last start placed for a job of the same size and
        length, for a job of the same size and no longer length, and for the
        last job placed when it was no larger and no longer, since the profile
        only loses nodes (reservations; never give nodes back while placing
        with this method); or from the first step that had that many free
        nodes when a search last read the profile from before it."""
        shape = (nodes, duration)
        bound = self._same.get(shape)
        last = self._latest.get(nodes)
        if last is not None and last[0] <= duration and (bound is None or last[1] > bound):
            bound = last[1]
        recent = self._recent
        if recent[0] <= nodes and recent[1] <= duration and (bound is None or recent[2] > bound):
            bound = recent[2]
        low = self._lowest.get(nodes)
        if bound is None or (low is not None and low >= bound):
            # a search from before every step with that many free nodes: its first
            # candidate is the next such bound
            start, self._lowest[nodes] = self.place_from(nodes, duration, low)
        else:
            start = self.place_from(nodes, duration, bound)[0]
        self._same[shape] = start
        self._latest[nodes] = (duration, start)
        self._recent = (nodes, duration, start)
        return start

    def place_from(
        self, nodes: int, duration: float, not_before: float | None = None
    ) -> tuple[float, float]:
        """The earliest start from which ``nodes`` stay free for ``duration`` (inf:
        never), searched from the breakpoint ``not_before`` (known to be at or
        before the answer), and ``nodes`` taken out of ``[start, start +
        duration)`` when it is finite, in one pass: the start is a breakpoint
        already and the search has found where the reservation ends. Returns ``(start, first)``: ``first`` is the
        first breakpoint from ``not_before`` on with at least ``nodes`` free
        before the reservation (inf: none), so when no earlier step has that many
        free nodes, no step before ``first`` has them after it either (a lower
        bound for later searches of ``nodes`` nodes, whatever their duration)."""
        times, free = self.times, self.free
        m = len(times)
        i = 0 if not_before is None else bisect_left(times, not_before)
        first = math.inf
        while i < m:
            if free[i] < nodes:
                i += 1
                continue
            start = times[i]
            if first == math.inf:
                first = start
            end = start + duration
            j = i + 1
            while j < m and times[j] < end:
                if free[j] < nodes:
                    break
                j += 1
            else:
                if end > start:  # (a zero-length job reserves nothing)
                    if j < m:
                        if times[j] != end:  # times[j - 1] < end < times[j]
                            times.insert(j, end)
                            free.insert(j, free[j - 1])
                    elif end != math.inf:
                        times.append(end)
                        free.append(free[-1])
                    for k in range(i, j):
                        free[k] -= nodes
                return start, first
            i = j + 1
        return math.inf, first


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
    ``now + length`` (as :meth:`Profile.place` tests a start at ``now``).
    Reserving only takes nodes away, so when this is False no job of these shapes,
    nor a longer job of the same node count, starts now once more are reserved."""
    times, free = profile.times, profile.free
    if not shapes or shapes[0][0] > free[0]:
        return False
    horizon = now + max(length for _, length in shapes)
    lowest = free[0]
    drops: list[tuple[float, int]] = []  # (time, the lowest free count from then on)
    for i in range(1, len(times)):
        t = times[i]
        if t >= horizon:
            break
        if free[i] < lowest:
            lowest = free[i]
            drops.append((t, lowest))
            if lowest < shapes[0][0]:
                break
    for n, length in shapes:
        if n > free[0]:
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
    times, free = profile.times, profile.free
    free_now = free[0]
    top = min(free_now, len(shortest_upto) - 1)
    if top < 1:
        return False
    row = shortest_upto[1 : top + 1]
    lengths = row.tolist() if hasattr(row, "tolist") else list(row)
    # c from top down: the shortest length grows (a prefix minimum), so the steps
    # that begin before ``now + length`` only grow, and so does their lowest count
    lowest = free_now
    i, m = 1, len(times)
    for c in range(top, 0, -1):
        length = lengths[c - 1]
        if length == math.inf:
            return False  # no job of at most c nodes, so none of fewer
        end = now + length
        while i < m and times[i] < end:
            if free[i] < lowest:
                lowest = free[i]
                if lowest < 1:
                    return False
            i += 1
        if c <= lowest:
            return True
    return False


def conservative_batch(
    profile: Profile,
    now: float,
    free: int,
    nodes: Sequence[int],
    lengths: Sequence[float],
    first: int,
    n_keys: int,
    block_min_length: Any,
    stop_every: int,
    block: int,
    gone: int,
    update_profile: bool = True,
) -> list[int]:
    """One batch of conservative backfilling on a long queue: the keys of the jobs
    that start now, in queue order (the loop of
    :meth:`~policies.backfilling.QueuePolicy._conservative_indexed`).

    Jobs are keys ``first`` to ``n_keys - 1`` of a
    :class:`~policies.queue_index.QueueIndex`: ``nodes[key]`` and
    ``lengths[key]`` (``gone``: the job left), ``block_min_length`` its block
    summaries (at least the blocks of those keys). Each job is placed in
    ``profile`` in queue order (:meth:`Profile.place`); it starts when its
    reservation starts at ``now`` and it fits in the ``free`` nodes left. Every
    ``stop_every`` keys, the batch stops once no job from that key's block on
    could start now (:func:`any_starts_now` on the suffix minima of the block
    summaries: a job that started leaves its block's summary stale until
    refreshed, so only more jobs seem able to start, never fewer), and it stops
    when no node is left free.

    This is the reference of the compiled kernel
    :func:`policies._placement.conservative_batch` (same arguments and answers;
    ``update_profile``: the kernel writes its final steps back to ``profile``
    only when asked, this function always changes ``profile`` in place).
    """
    # shortest[b, c]: the shortest planned length among the jobs of at most c
    # nodes in blocks b and later
    last_block = (n_keys - 1) // block
    table = block_min_length[: last_block + 1]
    shortest = np.minimum.accumulate(table[::-1], axis=0)[::-1]
    place = profile.place
    taken: list[int] = []
    for key in range(first, n_keys):
        if (
            not key % stop_every
            and key - first >= stop_every
            and not any_starts_now(profile, now, shortest[key // block])
        ):
            break
        n = nodes[key]
        if n == gone:
            continue
        if free == 0:
            break
        start = place(n, lengths[key])
        if start == math.inf:
            continue  # larger than the partition: never placeable
        if start == now and n <= free:
            taken.append(key)
            free -= n
    return taken


#: the compiled kernel of :func:`conservative_batch` (None: not built, the
#: Python reference runs)
try:
    from policies._placement import conservative_batch as compiled_conservative_batch
except ImportError:  # installed without a C compiler, or run from a source tree not built
    compiled_conservative_batch = None
_path_logged = False


class LongQueueBatch(NamedTuple):
    """An implementation of :func:`conservative_batch` and the form of the queue
    columns it takes: ``reads_arrays`` True for the index's NumPy columns
    (:attr:`~policies.queue_index.QueueIndex.nodes`, ``lengths``; what compiled
    code reads without a Python object per job), False for their lists
    (``nodes_list``, ``lengths_list``; what Python code indexes fastest)."""

    run: Callable[..., list[int]]
    reads_arrays: bool


def long_queue_batch() -> LongQueueBatch:
    """The implementation that runs a long-queue batch of conservative backfilling:
    the compiled kernel when it was built (``pip install`` with a C compiler),
    else the Python reference :func:`conservative_batch`; which one is logged
    (INFO) the first time."""
    global _path_logged
    compiled = compiled_conservative_batch is not None
    if not _path_logged:
        _path_logged = True
        if compiled:
            log.info("conservative backfilling on long queues: compiled kernel policies._placement")
        else:
            log.info(
                "conservative backfilling on long queues: the compiled kernel "
                "(policies._placement) is not built, the Python reference runs (slower, "
                "same schedules); `pip install` with a C compiler builds it"
            )
    if compiled_conservative_batch is not None:
        return LongQueueBatch(compiled_conservative_batch, reads_arrays=True)
    return LongQueueBatch(conservative_batch, reads_arrays=False)
