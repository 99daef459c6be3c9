"""A rigid replay gives the same schedule with the ground truth switched on.

Calibration reproduces each job's recorded runtime at its recorded size and
the top frequency, and without a topology no job slows another, so the truth
must not move a single start or end (issue "Ground truth").
"""

from __future__ import annotations

import numpy as np
import pytest

from energysched.runner import build_platform, load_trace
from policies.registry import get_policy
from simulator import RunConfig, simulate
from tests.shared_data import require_shared
from workloads import assign_ground_truth


def _same_schedule(source: object, max_jobs: int | None, preset: str, policy: str) -> None:
    trace, _ = load_trace(source, max_jobs=max_jobs)
    platform = build_platform("trace", trace)
    plain = simulate(trace, platform, get_policy(policy), RunConfig())
    truth = assign_ground_truth(trace, platform, preset=preset, seed=7)
    with_truth = simulate(trace, platform, get_policy(policy), RunConfig(), truth)
    np.testing.assert_allclose(with_truth.jobs["start_s"], plain.jobs["start_s"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(with_truth.jobs["end_s"], plain.jobs["end_s"], rtol=0, atol=1e-6)
    assert (with_truth.jobs["status"] == plain.jobs["status"]).all()
    # the schedule is the same, the energy is not: jobs draw their application's power
    assert with_truth.summary["energy_busy_j"] != pytest.approx(plain.summary["energy_busy_j"])


@pytest.mark.parametrize(
    ("preset", "policy"), [("npb-mix", "easy"), ("hybrid-mix", "easy"), ("npb-mix", "fcfs")]
)
def test_rigid_replay_of_bundled_kth_is_unchanged_by_the_ground_truth(
    preset: str, policy: str
) -> None:
    _same_schedule("builtin:kth-sp2", 4000, preset, policy)


@pytest.mark.slow
def test_rigid_replay_of_sdsc_sp2_is_unchanged_by_the_ground_truth() -> None:
    sdsc = require_shared("traces", "SDSC-SP2-1998-4.2-cln.swf.gz")
    _same_schedule(sdsc, None, "npb-mix", "easy")
