"""Queue orderings: plain functions ``order(queue, view) -> list[QueuedJob]``.

The queue arrives in submission order (ties broken by trace order, which for
Parallel Workloads Archive traces is job number). An ordering returns the
jobs in the order the backfilling scheme considers them; it must not drop or
add jobs. Sorting is stable, so jobs that compare equal stay in submission
order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from policies.base import QueuedJob

Ordering = Callable[[list[QueuedJob], Any], list[QueuedJob]]


def fcfs(queue: list[QueuedJob], view: Any = None) -> list[QueuedJob]:
    """First come, first served: submission order (the queue as given)."""
    return queue


def shortest_estimate_first(queue: list[QueuedJob], view: Any = None) -> list[QueuedJob]:
    """Shortest planned runtime first (the job's ``estimate_s``; a chooser's
    prediction when a predictor-driven policy stored one in ``job.scratch``)."""

    def key(job: QueuedJob) -> float:
        cached = job.scratch
        planned = getattr(cached, "planned_runtime_s", None)
        return planned if planned is not None else job.estimate_s

    return sorted(queue, key=key)


def smallest_first(queue: list[QueuedJob], view: Any = None) -> list[QueuedJob]:
    """Fewest requested nodes first."""
    return sorted(queue, key=lambda j: j.requested_nodes)


def largest_first(queue: list[QueuedJob], view: Any = None) -> list[QueuedJob]:
    """Most requested nodes first."""
    return sorted(queue, key=lambda j: -j.requested_nodes)


ORDERINGS: dict[str, Ordering] = {
    "fcfs": fcfs,
    "sjf": shortest_estimate_first,
    "smallest": smallest_first,
    "largest": largest_first,
}
