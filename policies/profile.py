"""Availability profile of one partition for conservative backfilling.

A :class:`Profile` is a step function of free nodes over time: ``free[i]``
nodes from ``times[i]`` to ``times[i + 1]`` (the last step lasts forever).
Conservative backfilling (:mod:`policies.backfilling`) places each queued job
at its earliest start and takes its nodes out there (:meth:`Profile.place`, one
pass); on a long queue a batch stops once no job left could
start now (:func:`may_start_now` on the jobs' shapes, :func:`any_starts_now` on
the block summaries of :class:`~policies.queue_index.QueueIndex`).

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

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np

from policies.queue_index import BLOCK

#: conservative backfilling on a long queue: jobs between two checks that a later job
#: could still start now
_STOP_EVERY = 32


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

    @classmethod
    def from_steps(
        cls, times: list[float], free: list[int], bounds_of: Profile | None = None
    ) -> Profile:
        """A profile of these steps (the lists are used, not copied), with the lower
        bounds of :meth:`place` of ``bounds_of`` (shared) when this profile has
        nowhere more free nodes than ``bounds_of`` had (nor will have)."""
        profile = cls(times[0], free[0], ())
        profile.times = times
        profile.free = free
        if bounds_of is not None:
            profile._same = bounds_of._same
            profile._latest = bounds_of._latest
            profile._recent = bounds_of._recent
            profile._lowest = bounds_of._lowest
        return profile

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


def _add(times: list[float], values: Any, start: float, end: float, amount: int) -> None:
    """Add ``amount`` to the step function ``(times, values)`` over ``[start, end)``
    (``start`` at or after ``times[0]``), splitting steps at both ends."""
    if not end > start:
        return
    i = bisect_left(times, start)
    if i == len(times) or times[i] != start:
        times.insert(i, start)
        values.insert(i, values[i - 1])
    j = len(times) if end == math.inf else bisect_left(times, end, i)
    if j < len(times) and times[j] != end:
        times.insert(j, end)
        values.insert(j, values[j - 1])
    elif j == len(times) and end != math.inf:
        times.append(end)
        values.append(values[-1])
    for k in range(i, j):
        values[k] += amount


def _from(times: list[float], values: list[int], now: float) -> tuple[list[float], list[int]]:
    """The step function ``(times, values)`` from ``now`` on (new lists)."""
    k = bisect_right(times, now) - 1
    out_times = times[k:]
    out_times[0] = now
    return out_times, values[k:]


def _difference(
    new: tuple[list[float], list[int]], old: tuple[list[float], list[int]], now: float
) -> tuple[list[float], list[int]]:
    """``new - old`` from ``now`` on, as a step function (both start at or before now)."""
    points = sorted({now, *(t for t in new[0] if t > now), *(t for t in old[0] if t > now)})
    values = [
        new[1][bisect_right(new[0], t) - 1] - old[1][bisect_right(old[0], t) - 1] for t in points
    ]
    return points, values


class _Block:
    """The kept plan of one block of :data:`~policies.queue_index.BLOCK` queue keys:
    the profile before its first job was placed, and its jobs' starts."""

    __slots__ = (
        "arrays",
        "free",
        "gone",
        "keys",
        "max_end",
        "min_nodes",
        "min_start",
        "pending",
        "start_key",
        "starts",
        "times",
    )

    def __init__(self, start_key: int, times: list[float], free: list[int]) -> None:
        self.start_key = start_key  # the profile is the one this key's job was placed in
        #: the change of the profile since it was kept, when its block lies behind
        #: where a batch stopped (None: none)
        self.pending: tuple[list[float], list[int]] | None = None
        #: (key, start, end, nodes) of its jobs started since its profile was kept
        #: while it lay behind a stop (the profile does not hold them; they run now)
        self.gone: list[tuple[int, float, float, int]] = []
        self.times = times
        self.free = free
        self.keys: list[int] = []
        self.starts: list[float] = []
        self.min_start = math.inf
        self.max_end = -math.inf
        self.min_nodes = math.inf

    def summarise(self, nodes_of: list[int], lengths_of: list[float]) -> None:
        """Its placed jobs' starts, ends and nodes as arrays (a job never placeable
        left out), and the earliest start, latest end and fewest nodes."""
        placed = [(start, key) for key, start in zip(self.keys, self.starts) if start != math.inf]
        starts = np.array([start for start, _ in placed], dtype=np.float64)
        lengths = np.array([lengths_of[key] for _, key in placed], dtype=np.float64)
        # (a job of no length needs its nodes at its start)
        ends = np.where(lengths > 0, starts + lengths, np.nextafter(starts, math.inf))
        nodes = np.array([nodes_of[key] for _, key in placed], dtype=np.int64)
        self.arrays = (starts, ends, nodes)
        if placed:
            self.min_start, self.max_end = float(starts.min()), float(ends.max())
            self.min_nodes = int(nodes.min())
        else:
            self.min_start, self.max_end, self.min_nodes = math.inf, -math.inf, math.inf


#: KeptPlan: blocks kept behind the block where a batch stopped (the plan ends after
#: them), and the most steps of the change still to apply to one of them
_BEHIND_BLOCKS = 4
_PENDING_STEPS = 256


class KeptPlan:
    """Conservative backfilling's plan of one long queue, kept between batches.

    Every batch must place the queue's jobs in queue order, each at its earliest
    start in the profile of the running jobs and the jobs placed before it (the
    greedy plan from scratch). This class gives the same starts without placing
    every job again: it keeps the last batch's starts, and per block of
    :data:`~policies.queue_index.BLOCK` queue keys the profile its first job was
    placed in. With ``P_j`` the profile job ``j`` is placed in and ``D`` the
    change of the profile since the last batch (nodes freed by jobs that ended
    before their planned end, a released reservation of a job that moved, minus
    the new reservation of a job that moved; the jobs started last batch count
    as running now and as reserved then, the same), a job keeps its start
    unless

    * an earlier start fits now: its window then meets a time ``t`` where ``D(t)
      > 0`` (it did not fit there before) and ``P_j(t) >= nodes`` (it fits there
      now), before its old end; or
    * its old reservation no longer fits: ``D < 0`` somewhere in it. (A job
      started last batch after ``j`` in the queue is now running where it was
      reserved; the old plan held both, so it cannot push ``j`` out.)

    A block is placed again (from its profile, patched with ``D``) when some of
    its jobs might move by that test with the block's fewest nodes, earliest
    start and latest end, or when one of its starts has passed; otherwise its
    starts stay and ``D`` is unchanged behind it. A batch still stops at a block
    where no job left could start now (:func:`any_starts_now`), and places the
    jobs the plan does not hold yet as a batch from scratch does.
    """

    def __init__(self, index: Any) -> None:
        self.index = index
        self.blocks: list[_Block] = []
        self.end = index.first  # the first key the plan does not hold
        self.frontier: tuple[list[float], list[int]] | None = None  # profile at ``end``
        self.initial: tuple[list[float], list[int]] | None = None  # last batch's profile
        self.started: list[tuple[int, float, float, int]] = []  # (key, start, end, nodes)
        #: the change of the profile at ``end`` since ``frontier`` was kept (None: none)
        self.frontier_pending: tuple[list[float], list[int]] | None = None

    def batch(self, profile: Profile, now: float, free: int, shortest: Any) -> list[int]:
        """The keys of the jobs that start now, in queue order; ``profile`` is the
        running jobs' profile (not changed), ``free`` the free nodes now,
        ``shortest[b]`` the stop test's summaries of blocks ``b`` and later."""
        index = self.index
        nodes_of, lengths_of, jobs = index.nodes_list, index.lengths_list, index.jobs
        initial = (list(profile.times), list(profile.free))
        taken: list[int] = []
        kept: list[_Block] = []
        current: Profile | None = None  # exact at the current key after a block placed again
        if self.initial is None:
            self.initial = initial
            self.blocks = []
            self._extend(
                Profile.from_steps(list(initial[0]), list(initial[1])), now, free, shortest, taken
            )
            self._remember(taken, now)
            return taken
        # D: the profile now minus the profile the last batch planned against
        # (the jobs it started count as reserved in both)
        d_times, d_values = _difference(initial, self.initial, now)
        for _, start, end, n in self.started:
            if end > now:
                _add(d_times, d_values, max(start, now), end, n)
        # the last profile placed in: its lower bounds hold for every later one
        # of the batch (a profile further down the queue has no more free nodes)
        bounds: Profile | None = None
        stopped = truncated = False
        stopped_at = 0
        behind: dict[int, Any] = {}  # a pending change -> it plus D (blocks behind the stop)
        for block in self.blocks:
            keys = block.keys
            if any(jobs[key] is None for key in keys):  # started last batch
                pairs = [(k, s) for k, s in zip(keys, block.starts) if jobs[k] is not None]
                block.keys = keys = [k for k, _ in pairs]
                block.starts = [s for _, s in pairs]
                block.summarise(nodes_of, lengths_of)
            if not keys:
                continue
            if stopped:
                pending = _pending(behind, block.pending, d_times, d_values, now)
                if len(kept) - stopped_at >= _BEHIND_BLOCKS or len(pending[0]) > _PENDING_STEPS:
                    # the plan ends here: this block's profile becomes the frontier
                    times, values = _from(block.times, block.free, now)
                    _apply(times, values, *pending)
                    for _, start, end, n in block.gone + self._behind(block):
                        if end > now:
                            _add(times, values, max(start, now), end, -n)
                    self.end = keys[0]
                    self.frontier = (times, values)
                    self.frontier_pending = None
                    truncated = True
                    break
                block.pending = pending
                block.gone += self._behind(block)
                kept.append(block)
                continue
            # the change since this block's profile was kept
            change = (
                (d_times, d_values)
                if block.pending is None
                else _sum(d_times, d_values, *block.pending, now)
            )
            if current is not None:
                times, values = current.times, current.free
            elif not kept:
                times, values = list(initial[0]), list(initial[1])
            else:
                times, values = _from(block.times, block.free, now)
                _apply(times, values, *change)
                for _, start, end, n in block.gone + self._behind(block):
                    if end > now:
                        _add(times, values, max(start, now), end, -n)
            if kept and (
                free == 0
                or not any_starts_now(
                    current or Profile.from_steps(times, values), now, shortest[keys[0] // BLOCK]
                )
            ):
                # no job from here on starts now: the blocks from here keep their
                # starts and profiles, with the change still to apply
                stopped = True
                stopped_at = len(kept)
                block.pending = _pending(behind, block.pending, d_times, d_values, now)
                block.gone += self._behind(block)
                kept.append(block)
                continue
            block.start_key = keys[0]
            kept.append(block)
            block.pending = None
            block.gone = []
            if _may_move(block, times, values, *change, now):
                if current is None:
                    current = Profile.from_steps(times, values, bounds)
                    bounds = current
                block.times, block.free = list(times), list(values)
                starts = block.starts
                for i, key in enumerate(keys):
                    n, length = nodes_of[key], lengths_of[key]
                    start = current.place(n, length)
                    old = starts[i]
                    if start != old:
                        starts[i] = start
                        if old != math.inf and old + length > now:
                            _add(d_times, d_values, max(old, now), old + length, n)
                        if start != math.inf:
                            _add(d_times, d_values, start, start + length, -n)
                    if start == now and n <= free:
                        taken.append(key)
                        free -= n
                block.summarise(nodes_of, lengths_of)
            else:
                block.times, block.free = times, values
                current = None
                if block.min_start == now:
                    for key, start in zip(keys, block.starts):
                        n = nodes_of[key]
                        if start == now and n <= free:
                            taken.append(key)
                            free -= n
        self.blocks = kept
        if truncated:
            pass
        elif stopped:
            self.frontier_pending = _pending(behind, self.frontier_pending, d_times, d_values, now)
        else:
            if current is None:
                change = (
                    (d_times, d_values)
                    if self.frontier_pending is None
                    else _sum(d_times, d_values, *self.frontier_pending, now)
                )
                times, values = _from(*self.frontier, now)
                _apply(times, values, *change)
                current = Profile.from_steps(times, values, bounds)
            self.frontier_pending = None
            self._extend(current, now, free, shortest, taken)
        self.initial = initial
        self._remember(taken, now)
        return taken

    def _behind(self, block: _Block) -> list[tuple[int, float, float, int]]:
        """The jobs started last batch at or behind the job ``block``'s profile was
        kept for (the kept profile does not hold them)."""
        return [got for got in self.started if got[0] >= block.start_key]

    def _remember(self, taken: list[int], now: float) -> None:
        nodes_of, lengths_of = self.index.nodes_list, self.index.lengths_list
        self.started = [(key, now, now + lengths_of[key], nodes_of[key]) for key in taken]

    def _extend(
        self, profile: Profile, now: float, free: int, shortest: Any, taken: list[int]
    ) -> None:
        """Place the jobs from ``self.end`` on in ``profile`` (exact there), as a batch
        from scratch does, until no job left could start now."""
        index = self.index
        nodes_of, lengths_of, jobs = index.nodes_list, index.lengths_list, index.jobs
        n_keys = len(jobs)
        first = index.first
        key = max(self.end, first)
        block = self.blocks[-1] if self.blocks else None
        if block is not None and block.start_key // BLOCK != key // BLOCK:
            block = None
        while key < n_keys:
            if (
                not key % _STOP_EVERY
                and key - first >= _STOP_EVERY
                and not any_starts_now(profile, now, shortest[key // BLOCK])
            ):
                break
            job = jobs[key]
            if job is None:
                key += 1
                continue
            if free == 0:
                break
            if block is None or block.start_key // BLOCK != key // BLOCK:
                if block is not None:
                    block.summarise(nodes_of, lengths_of)
                block = _Block(key, list(profile.times), list(profile.free))
                self.blocks.append(block)
            n = nodes_of[key]
            start = profile.place(n, lengths_of[key])
            block.keys.append(key)
            block.starts.append(start)
            if start == now and n <= free:
                taken.append(key)
                free -= n
            key += 1
        if block is not None:
            block.summarise(nodes_of, lengths_of)
        self.end = key
        self.frontier = (profile.times, profile.free)


def _sum(
    a_times: list[float], a_values: list[int], b_times: list[float], b_values: list[int], now: float
) -> tuple[list[float], list[int]]:
    """The sum of two step functions from ``now`` on (both start at or before now)."""
    points = sorted({now, *(t for t in a_times if t > now), *(t for t in b_times if t > now)})
    values = [
        a_values[bisect_right(a_times, t) - 1] + b_values[bisect_right(b_times, t) - 1]
        for t in points
    ]
    return points, values


def _pending(
    cache: dict[int, Any],
    pending: tuple[list[float], list[int]] | None,
    d_times: list[float],
    d_values: list[int],
    now: float,
) -> tuple[list[float], list[int]]:
    """``pending`` plus ``D``, once per pending change (blocks share them)."""
    got = cache.get(id(pending))
    if got is None:
        total = (
            (list(d_times), list(d_values))
            if pending is None
            else _sum(d_times, d_values, *pending, now)
        )
        got = cache[id(pending)] = (pending, total)  # (holds ``pending``: its id stays its own)
    return got[1]


def _apply(
    times: list[float], values: list[int], d_times: list[float], d_values: list[int]
) -> None:
    """Add the step function ``(d_times, d_values)`` to ``(times, values)``."""
    last = len(d_times) - 1
    for i, amount in enumerate(d_values):
        if amount:
            _add(times, values, d_times[i], d_times[i + 1] if i < last else math.inf, amount)


def _may_move(
    block: _Block,
    times: list[float],
    free: list[int],
    d_times: list[float],
    d_values: list[int],
    now: float,
) -> bool:
    """Whether a job of ``block`` might start elsewhere than its kept start in the
    profile ``(times, free)`` (exact at the block's first job), given the change
    ``D = (d_times, d_values)`` of that profile since the kept plan was made (see
    :class:`KeptPlan`): a job of ``n`` nodes whose old reservation ends at ``e``
    might move earlier when before ``e`` some step with ``D > 0`` has ``n`` free
    nodes now, and might lose its reservation when a step with ``D < 0`` meets it."""
    if block.min_start < now:
        return True
    lo, hi, fewest = block.min_start, block.max_end, block.min_nodes
    m = len(d_times)
    n_steps = len(times)
    # the runs of steps with at least ``fewest`` free nodes that meet a step with
    # D > 0: (where that step begins, the run's length, the most free nodes in the
    # steps with D > 0 it meets)
    gain_from: list[float] = []
    run_length: list[float] = []
    most_free: list[int] = []
    loss_from: list[float] = []  # starts of the steps with D < 0 ...
    loss_until: list[float] = []  # ... and the latest end of those steps up to there
    latest = -math.inf
    for i in range(m):
        a = d_times[i]
        if a >= hi:
            break
        amount = d_values[i]
        if not amount:
            continue
        c = d_times[i + 1] if i + 1 < m else math.inf
        if amount < 0:
            if c > lo:
                latest = c if c > latest else latest
                loss_from.append(a)
                loss_until.append(latest)
            continue
        k = bisect_right(times, a) - 1
        stop = bisect_left(times, c if c < hi else hi, k + 1)
        while k < stop:
            if free[k] < fewest:
                k += 1
                continue
            first = k
            while first > 0 and free[first - 1] >= fewest:
                first -= 1
            last = k + 1
            while last < n_steps and free[last] >= fewest:
                last += 1
            gain_from.append(a)
            run_length.append((times[last] if last < n_steps else math.inf) - times[first])
            most_free.append(max(free[k : min(last, stop)]))
            k = last
    if not gain_from and not loss_from:
        return False
    starts, ends, nodes = block.arrays
    if gain_from:
        fits = (
            (np.asarray(gain_from)[:, None] < ends)
            & (np.asarray(run_length)[:, None] >= ends - starts)
            & (np.asarray(most_free)[:, None] >= nodes)
        )
        if fits.any():
            return True
    if loss_from:
        k = np.searchsorted(loss_from, ends) - 1
        if np.any((k >= 0) & (np.asarray(loss_until)[k] > starts)):
            return True
    return False
