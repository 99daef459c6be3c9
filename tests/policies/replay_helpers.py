"""What several policy tests share: a shared trace's jobs all submitted at once,
the start times a policy gives them, and the definition of the reservation walk."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from energysched.runner import build_platform, load_trace
from policies.base import release_s
from simulator import RunConfig, simulate
from tests.shared_data import require_shared


def submitted_at_once(trace_file: str, max_jobs: int) -> Any:
    """The first ``max_jobs`` jobs of a shared trace, every submit time set to the
    first job's (skips when the trace is not there)."""
    trace, _ = load_trace(require_shared("traces", trace_file), max_jobs=max_jobs)
    jobs = trace.jobs.copy()
    jobs["submit_s"] = float(jobs["submit_s"].iloc[0])
    return dataclasses.replace(trace, jobs=jobs)


def start_times(trace: Any, policy: Any) -> np.ndarray:
    """Start time of every job of ``trace`` replayed by ``policy`` (no ground truth)."""
    result = simulate(trace, build_platform("trace", trace), policy, RunConfig())
    return result.jobs["start_s"].to_numpy()


def reservation_by_sorting(
    running: Any, started: Any, free_now: int, needed: int, now: float
) -> tuple[float, int]:
    """The definition :func:`policies.backfilling.reservation` must agree with:
    every release (``running`` in planned-end order at :func:`~policies.base.release_s`,
    then ``started``) stably sorted by time, walked until ``needed`` nodes are free."""
    merged = [(release_s(r, now), r.nodes) for r in running] + list(started)
    merged.sort(key=lambda x: x[0])
    avail = free_now
    for end, nodes in merged:
        avail += nodes
        if avail >= needed:
            return max(end, now), avail - needed
    return math.inf, 0
