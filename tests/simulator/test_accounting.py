"""Energy accounting of work that did not complete (simulator.metrics.summarize)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from policies.registry import get_policy
from simulator.config import RunConfig
from simulator.engine import simulate
from simulator.metrics import summarize
from simulator.platform import homogeneous_platform


def test_energy_of_killed_jobs_is_the_integral_of_their_power() -> None:
    # 8 nodes, no ground truth (trace runtimes), rigid EASY at the top clock (229 W busy,
    # 92 W idle per node). Job 1: 4 nodes, runs 2000 s but asked for 1000 s: killed at
    # 1000 s. Job 2: 2 nodes, 500 s of its 1000 s: completes.
    jobs = pd.DataFrame(
        {
            "job_id": [1, 2],
            "submit_s": [0.0, 0.0],
            "runtime_s": [2000.0, 500.0],
            "procs": [4, 2],
            "time_req_s": [1000.0, 1000.0],
            "user_id": [1, 1],
        }
    )
    res = simulate(jobs, homogeneous_platform(8), get_policy("easy"), RunConfig(), None)
    s = res.summary
    assert list(res.jobs["status"]) == ["killed", "completed"]
    # by hand: 4 nodes x 229 W x 1000 s, and 2 nodes x 229 W x 500 s
    assert s["energy_killed_j"] == pytest.approx(4 * 229.0 * 1000.0)
    assert s["energy_completed_jobs_j"] == pytest.approx(2 * 229.0 * 500.0)
    # the platform: both jobs' busy energy, plus idle nodes at 92 W (2 idle nodes for
    # 500 s, then 4 for 500 s), over one completed job
    total = 4 * 229.0 * 1000.0 + 2 * 229.0 * 500.0 + 92.0 * (2 * 500.0 + 4 * 500.0)
    assert s["energy_j"] == pytest.approx(total)
    assert s["energy_per_completed_job_j"] == pytest.approx(total / 1)


def test_no_completed_job_gives_nan_per_completed_job() -> None:
    jobs = pd.DataFrame(
        {
            "status": ["rejected"],
            "reason": ["never started"],
            "wait_s": [np.nan],
            "runtime_s": [np.nan],
            "nodes": [0],
            "energy_j": [0.0],
        }
    )
    s = summarize(
        jobs,
        energy_busy_j=0.0,
        energy_idle_j=100.0,
        energy_off_j=0.0,
        energy_switching_j=0.0,
        total_nodes=1,
        t0_s=0.0,
        t_end_s=1.0,
    )
    assert s["jobs_completed"] == 0 and s["energy_killed_j"] == 0.0
    assert math.isnan(s["energy_per_completed_job_j"])
