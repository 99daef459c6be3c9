"""The EASY reservation with an incremental list of the running jobs past their plan.

:func:`policies.backfilling.reservation` plans each running job's release at
:func:`~policies.base.release_s`: its planned end while that is ahead, else
the end of its time limit (``now`` once that has passed too). The running
jobs come sorted by planned end, so only the jobs past it (a prefix of the
list) are out of release order; the plain function rebuilds and sorts every
release at every call. When predictions are short, most running jobs are past
their plan (72 % on CEA-Curie under ``easy-slack-size-freq``) and that sort is
a large part of a replay.

:class:`OverdueJobs` keeps those jobs of one partition in release order
across calls: each running job moves into it once, when it outlives its
plan, and leaves it when it is found finished. :meth:`OverdueJobs.reservation`
answers exactly what :func:`~policies.backfilling.reservation` answers (the
same merged order, ties included: a stable sort by release of the running
jobs in list order, then the jobs started in the batch), walking the three
sorted sequences only as far as the reservation needs.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence
from operator import attrgetter, itemgetter

from policies.base import RunningJob

__all__ = ["OverdueJobs"]

_planned_end = attrgetter("expected_end_s")
_first = itemgetter(0)
_second = itemgetter(1)

#: Rebuild the list when it holds more than twice the overdue jobs plus this many
#: (entries of finished jobs that no reservation walked over yet).
_SLACK_ENTRIES = 64


class OverdueJobs:
    """The running jobs of one partition past their planned end, in release order.

    Entries are ``(limit_end_s, order, job)`` sorted by time-limit end, then by
    ``order``, which follows the jobs' positions in the running list (a job
    becomes overdue after every job before it in that list, or in the same
    call, in list order). Finished jobs leave lazily: an entry is checked when
    a reservation reaches it, and the list is rebuilt from the running list
    when stale entries pile up. Bound to one running list (the engine keeps
    one per partition for a whole run); another list starts it afresh.
    """

    __slots__ = ("_entries", "_last_now", "_next_order", "_running", "_tracked")

    def __init__(self) -> None:
        self._running: Sequence[RunningJob] | None = None
        self._entries: list[tuple[float, int, RunningJob]] = []
        self._tracked: set[int] = set()  # ids of the jobs in _entries (kept alive by them)
        self._next_order = 0
        self._last_now = -math.inf

    def _rebuild(self, running: Sequence[RunningJob], k: int) -> None:
        """Entries for the overdue prefix ``running[:k]`` (list positions as order)."""
        self._running = running
        self._entries = sorted((job.limit_end_s, pos, job) for pos, job in enumerate(running[:k]))
        self._tracked = {id(job) for job in running[:k]}
        self._next_order = k

    def _sync(self, running: Sequence[RunningJob], now: float) -> int:
        """Bring the entries up to ``now``; returns ``k``, the number of overdue jobs
        (``running[:k]``, planned end ``<= now``)."""
        k = bisect_right(running, now, key=_planned_end)
        if running is not self._running or now < self._last_now:
            self._rebuild(running, k)
        else:
            # jobs that became overdue since the last call: planned end in
            # (last now, now], or at the last now for a job started since then
            entries, tracked = self._entries, self._tracked
            start = bisect_left(running, self._last_now, 0, k, key=_planned_end)
            for pos in range(start, k):
                job = running[pos]
                if id(job) not in tracked:
                    tracked.add(id(job))
                    insort(entries, (job.limit_end_s, self._next_order, job))
                    self._next_order += 1
            if len(entries) > 2 * k + _SLACK_ENTRIES:
                self._rebuild(running, k)
        self._last_now = now
        return k

    @staticmethod
    def _running_now(running: Sequence[RunningJob], k: int, job: RunningJob) -> bool:
        """Whether ``job`` is still in ``running[:k]`` (found by its planned end)."""
        end = job.expected_end_s
        i = bisect_left(running, end, 0, k, key=_planned_end)
        while i < k:
            other = running[i]
            if other is job:
                return True
            if other.expected_end_s != end:
                return False
            i += 1
        return False

    def _drop(self, dead: list[int]) -> None:
        """Remove the entries at positions ``dead`` (ascending)."""
        entries = self._entries
        for i in reversed(dead):
            self._tracked.discard(id(entries[i][2]))
            del entries[i]

    def _late_releases(self, running: Sequence[RunningJob], k: int, now: float):
        """``(release, nodes)`` of the live overdue jobs in the plain sort's order:
        by release, ties in running-list order. Jobs past their time limit too
        release at ``now``, all tied: they come first, in list order."""
        entries = self._entries
        j = bisect_right(entries, now, key=_first)  # time limit passed: release now
        if j:
            dead = [i for i in range(j) if not self._running_now(running, k, entries[i][2])]
            if dead:
                self._drop(dead)
                j -= len(dead)
            for _, _, job in sorted(entries[:j], key=_second):
                yield now, job.nodes
        dead = []
        try:
            for i in range(j, len(entries)):
                limit_end, _, job = entries[i]
                if self._running_now(running, k, job):
                    yield limit_end, job.nodes
                else:
                    dead.append(i)
        finally:  # also when the caller stops early (the reservation was found)
            if dead:
                self._drop(dead)

    def reservation(
        self,
        running: Sequence[RunningJob],
        started: Sequence[tuple[float, int]],
        free_now: int,
        needed: int,
        now: float,
    ) -> tuple[float, int]:
        """:func:`policies.backfilling.reservation` (same arguments, same answer)."""
        k = self._sync(running, now)
        late = self._late_releases(running, k, now)
        plan = sorted(started, key=_first) if started else ()
        n_run, n_plan = len(running), len(plan)
        i_run, i_plan = k, 0
        nxt = next(late, None)
        avail = free_now
        try:
            while True:
                # the earliest release; ties: overdue jobs, then the others in list
                # order, then the jobs started in this batch (the plain stable sort)
                source = 0
                end = math.inf
                if nxt is not None:
                    end, source = nxt[0], 1
                if i_run < n_run:
                    at = running[i_run].expected_end_s
                    if source == 0 or at < end:
                        end, source = at, 2
                if i_plan < n_plan:
                    at = plan[i_plan][0]
                    if source == 0 or at < end:
                        end, source = at, 3
                if source == 0:
                    return math.inf, 0
                if source == 1:
                    avail += nxt[1]  # type: ignore[index]
                    nxt = next(late, None)
                elif source == 2:
                    avail += running[i_run].nodes
                    i_run += 1
                else:
                    avail += plan[i_plan][1]
                    i_plan += 1
                if avail >= needed:
                    return (end if end > now else now), avail - needed
        finally:
            late.close()
