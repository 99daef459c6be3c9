"""The Pareto policies (issue 16): brute force over (n, c, f) under the oracle, defaults, guards."""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np
import pandas as pd
import pytest

from policies import get_policy
from policies.base import ClusterView, QueuedJob
from simulator.platform import NodeType, Platform, PState
from workloads import Trace, assign_ground_truth, get_preset

PLATFORM = Platform(
    name="p",
    node_types=(
        NodeType(
            name="n",
            count=16,
            cores_per_node=8,
            pstates=(PState(1.2, 88.0, 135.0), PState(1.8, 90.0, 170.0), PState(2.4, 92.0, 230.0)),
        ),
    ),
)
NT = PLATFORM.node_types[0]


def _case(n_jobs: int = 40):
    rng = np.random.default_rng(11)
    runtime = rng.uniform(200, 5000, n_jobs)
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(n_jobs),
            "submit_s": np.zeros(n_jobs),
            "runtime_s": runtime,
            "procs": rng.choice([8, 16, 24, 32, 64], n_jobs),
            "time_req_s": runtime * rng.uniform(1.0, 3.0, n_jobs),
            "user_id": np.arange(n_jobs),
        }
    )
    preset = dataclasses.replace(get_preset("hybrid-mix"), name="half-hybrid", hybrid_share=0.5)
    truth = assign_ground_truth(
        Trace(jobs=jobs), PLATFORM, preset=preset, seed=3, grouping="user-size"
    )
    queue = [
        QueuedJob(
            i,
            i,
            0.0,
            int(jobs.procs[i]),
            int(truth.recorded_nodes[i]),
            float(jobs.time_req_s[i]),
            float(jobs.time_req_s[i]),
            application=int(truth.application[i]),
        )
        for i in range(n_jobs)
    ]
    return truth, queue


def _brute_force(truth, job, rule, size_range=2.0):
    """Every (n, c, f) of the job's range x all cores x all P-states, evaluated by the truth."""
    req = job.requested_nodes
    sizes = range(
        max(1, math.ceil(req / size_range)), min(NT.count, math.floor(req * size_range)) + 1
    )
    grid = [(n, c, f) for n in sizes for c in range(1, NT.cores_per_node + 1) for f in NT.freqs_ghz]
    n, c, f = (np.array(v) for v in zip(*grid))
    t, p = truth.evaluate(np.full(len(grid), job.index), NT, n, f, c)
    e = t * p * n
    t_ref, p_ref = truth.evaluate([job.index], NT, [req], [NT.fmax_ghz], [NT.cores_per_node])
    if rule == "deadline":
        ok = t <= job.requested_time_s
        return (float(np.min(e[ok])), "energy") if ok.any() else (float(np.min(t)), "time")
    budget = float(t_ref[0] * p_ref[0] * req)
    ok = e <= budget
    return (float(np.min(t[ok])), "time") if ok.any() else (float(np.min(e)), "energy")


@pytest.mark.parametrize("rule", ["deadline", "budget"])
def test_oracle_pick_is_the_brute_force_optimum_over_n_c_f(rule):
    truth, queue = _case()
    policy = get_policy(f"easy-pareto-{rule}", predictor="oracle")
    chooser = policy.chooser
    chooser.setup(PLATFORM, truth=truth)
    view = ClusterView(0.0, PLATFORM, queue, [NT.count], [NT.count], [[]])
    chooser.prepare(queue, view)
    used_fewer_cores = used_lower_clock = 0
    for job in queue:
        d = chooser.choose(job, view)
        cores = NT.cores_per_node if d.cores is None else d.cores
        t, p = truth.evaluate([job.index], NT, [d.nodes], [d.freq_ghz], [cores])
        best, what = _brute_force(truth, job, rule)
        got = float(t[0]) if what == "time" else float(t[0] * p[0] * d.nodes)
        assert got == pytest.approx(best, rel=1e-9), (job, d.nodes, cores, d.freq_ghz)
        # within the job's size range: no job takes the whole machine
        assert math.ceil(job.requested_nodes / 2) <= d.nodes <= 2 * job.requested_nodes
        used_fewer_cores += cores < NT.cores_per_node
        used_lower_clock += d.freq_ghz < NT.fmax_ghz
    # the whole space is used by default: some jobs on fewer cores, some at a lower clock
    assert used_fewer_cores > 0
    assert used_lower_clock > 0


def test_pareto_defaults_search_cores_and_a_bounded_size_range():
    policy = get_policy("easy-pareto-budget")
    ch = policy.chooser
    assert (ch.sizes, ch.cores, ch.predictor_spec, ch.require_reliable) == (
        "range",
        "all",
        "hybrid",
        True,
    )


def test_a_predictor_without_cores_keeps_every_core_and_warns(caplog):
    truth, queue = _case(10)
    policy = get_policy("easy-pareto-deadline", predictor="amdahl+fluid", min_runs=0)
    with caplog.at_level(logging.WARNING, logger="policies.choosers"):
        policy.chooser.setup(PLATFORM, truth=truth)
    assert "does not model cores per node" in caplog.text
    assert policy.chooser._joint_cores(0).tolist() == [NT.cores_per_node]
    view = ClusterView(0.0, PLATFORM, queue, [NT.count], [NT.count], [[]])
    policy.chooser.prepare(queue, view)
    assert all(policy.chooser.choose(j, view).cores is None for j in queue)
