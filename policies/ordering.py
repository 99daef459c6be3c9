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


def shortest_predicted_first(queue: list[QueuedJob], view: Any = None) -> list[QueuedJob]:
    """Shortest predicted job first: the predictor's runtime of the job's cached
    decision (``predicted_runtime_s``; predictor-driven choosers fill it in
    ``prepare`` before the queue is ordered), else its planned runtime, else
    its ``estimate_s`` (requested time)."""

    def key(job: QueuedJob) -> float:
        cached = job.scratch
        d = getattr(cached, "decision", cached)
        value = getattr(d, "predicted_runtime_s", None)
        if value is None:
            value = getattr(d, "planned_runtime_s", None)
        return value if value is not None else job.estimate_s

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
    "spf": shortest_predicted_first,
    "smallest": smallest_first,
    "largest": largest_first,
}
