"""Replays the long-queue tests share: a shared trace's jobs all submitted at
once, and the start times a policy gives them."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from energysched.runner import build_platform, load_trace
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
