"""EASY keeps the head job's reservation under power management.

When a job becomes the head of the FCFS queue, the running jobs' planned ends
(start + limit) give the earliest time enough nodes are free: its shadow time.
EASY starts the head by then whatever it backfills. Under power management a
node may be shutting down at that moment; it was once invisible to the
reservation, which then moved the shadow to a far later end and let long jobs
take the head's nodes (on a Lublin workload one head waited 30,774 s past its
shadow, and the mean wait fell 38 % below EASY's: not EASY any more). A node
that is switched off while it waits for the head adds a boot, so the bound
here is the shadow plus one shutdown and two boots.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from energysched.runner import build_platform
from policies.registry import get_policy
from simulator.config import RunConfig
from simulator.engine import simulate
from workloads.cleaning import clean_trace
from workloads.synthetic import generate


def late_heads(jobs: pd.DataFrame, total_nodes: int, slack_s: float) -> list[tuple[int, float]]:
    """``(job_id, seconds late)`` of every job that started more than ``slack_s``
    after its shadow time as a head (plain reference computation, FCFS order)."""
    j = jobs[jobs["status"].isin(["completed", "killed"])].sort_values(["submit_s", "job_id"])
    submit, start, end = (j[c].to_numpy(dtype=float) for c in ("submit_s", "start_s", "end_s"))
    nodes = j["nodes"].to_numpy()
    limit = j["time_limit_s"].fillna(j["runtime_s"]).to_numpy(dtype=float)
    late = []
    for k in range(len(j)):
        t = submit[k] if k == 0 else max(submit[k], start[:k].max())  # becomes the head
        running = (start <= t) & (end > t)
        free = total_nodes - nodes[running].sum()
        if start[k] <= t or free >= nodes[k]:
            continue
        planned_end = np.maximum(start[running] + limit[running], t)
        order = np.argsort(planned_end, kind="stable")
        enough = np.searchsorted(free + np.cumsum(nodes[running][order]), nodes[k])
        shadow = planned_end[order][enough] if enough < len(order) else np.inf
        if start[k] > shadow + slack_s:
            late.append((int(j["job_id"].iloc[k]), float(start[k] - shadow)))
    return late


@pytest.mark.parametrize("idle_timeout_s", [None, 600.0])
def test_easy_starts_every_head_by_its_shadow_time(idle_timeout_s):
    got = clean_trace(generate("lublin", 4000, 128, seed=3010243945))
    trace = got[0] if isinstance(got, tuple) else got
    platform = build_platform("trace", trace)
    node_type = platform.node_types[0]
    config = RunConfig() if idle_timeout_s is None else RunConfig(idle_timeout_s=idle_timeout_s)
    jobs = simulate(trace, platform, get_policy("easy"), config, None).jobs
    slack_s = 0.0
    if idle_timeout_s is not None:
        slack_s = node_type.shutdown_time_s + 2 * node_type.boot_time_s
        assert (jobs["start_s"] - jobs["submit_s"]).max() > 0  # the workload queues
    assert late_heads(jobs, node_type.count, slack_s + 1e-6) == []
