"""What several policy tests share: a shared trace's jobs all submitted at once,
the start times a policy gives them, a learning replay and a watch on the
decisions its chooser names as changed, and the plain definitions the fast code
is tested against: the reservation walk, and the earliest-start search and the
reservation of a conservative :class:`~policies.profile.Profile`."""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
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


def learning_replay(trace: Any, policy: Any) -> Any:
    """The jobs table of ``policy`` replaying ``trace`` with the default ground truth
    and the benchmark suite's observations (as ``energysched run`` does)."""
    from predictors.base import Observations
    from workloads.applications import assign_ground_truth
    from workloads.benchmark_suite import measure_benchmark_suite

    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    obs = Observations(benchmarks=measure_benchmark_suite(platform, seed=0), platform=platform)
    return simulate(trace, platform, policy, RunConfig(), truth, observations=obs).jobs


def watch_changed_decisions(
    chooser: Any, check: Callable[[Sequence[Any], list[Any]], None] | None = None
) -> dict[str, int]:
    """Check ``chooser.changed_decisions`` after each of its ``prepare`` calls: a
    queued job left out holds the decision object it held after the previous
    call, and a job seen for the first time is named. ``check(queue, decisions)``
    (optional) is called too. Returns the counts, filled as the replay runs:
    ``batches`` checked, decisions ``kept``, decisions of jobs seen before
    ``changed``."""
    prepare = chooser.prepare
    before: dict[int, Any] = {}
    counts = {"batches": 0, "kept": 0, "changed": 0}

    def checking_prepare(queue: Sequence[Any], view: Any) -> None:
        prepare(queue, view)
        changed = chooser.changed_decisions()
        if changed is None:
            before.clear()  # nothing decided (no free node): the next call decides
            return
        decisions = chooser.decisions(queue)
        if check is not None:
            check(queue, decisions)
        named = {job.index for job in changed}
        for job, d in zip(queue, decisions):
            if job.index not in named:
                assert job.index in before, "a job seen for the first time was not named"
                assert before[job.index] is d, "a changed decision was not named"
                counts["kept"] += 1
            elif job.index in before:
                counts["changed"] += 1
        counts["batches"] += 1
        before.clear()
        before.update((job.index, d) for job, d in zip(queue, decisions))

    chooser.prepare = checking_prepare
    return counts


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


def earliest(profile: Any, nodes: int, duration: float, not_before: float | None = None) -> float:
    """Earliest start in ``profile`` from which ``nodes`` stay free for ``duration``
    (inf: never), searched step by step from ``not_before`` (a breakpoint at or
    before the answer; ``None``: the profile's start)."""
    times, free = profile.times, profile.free
    m = len(times)
    i = 0 if not_before is None else bisect_left(times, not_before)
    while i < m:
        if free[i] < nodes:
            i += 1
            continue
        start = times[i]
        end = start + duration
        j = i + 1
        while j < m and times[j] < end:
            if free[j] < nodes:
                break
            j += 1
        else:
            return start
        i = j + 1
    return math.inf


def reserve(profile: Any, start: float, duration: float, nodes: int) -> None:
    """Take ``nodes`` out of ``profile`` over ``[start, start + duration)``."""
    times, free = profile.times, profile.free

    def split(t: float) -> int:  # the index of the step starting at t (inserted)
        k = bisect_left(times, t)
        if k < len(times) and times[k] == t:
            return k
        times.insert(k, t)
        free.insert(k, free[k - 1])
        return k

    a = split(start)
    end = start + duration
    b = split(end) if math.isfinite(end) else len(times)
    for k in range(a, b):
        free[k] -= nodes


def free_at(profile: Any, t: float) -> int:
    """Free nodes of ``profile`` at time ``t``."""
    return profile.free[bisect_right(profile.times, t) - 1]
