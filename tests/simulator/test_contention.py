"""Network contention: communicating jobs on a shared leaf switch slow each other down.

The engine re-evaluates every running communicating job whose switch gains or
loses a communicating job: it banks the fraction of work done at the old
speed and finishes the rest at the new speed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from policies.backfilling import easy_policy
from simulator import RunConfig, simulate
from simulator.platform import DEFAULT_PSTATES, NodeType, Platform, build_tree_topology
from workloads import Trace, assign_ground_truth, get_preset


def topology_platform(nodes: int = 4, per_switch: int = 4) -> Platform:
    ntype = NodeType(name="n", count=nodes, cores_per_node=8, pstates=DEFAULT_PSTATES)
    return Platform(
        name="topo",
        node_types=(ntype,),
        topology=build_tree_topology((ntype,), per_switch, 1.0),
        nodes_per_switch=per_switch,
        link_bandwidth_gbs=1.0,
    )


def all_hybrid_truth(jobs: pd.DataFrame, platform: Platform, seed: int = 2):  # type: ignore[no-untyped-def]
    preset = dataclasses.replace(
        get_preset("hybrid-mix"),
        name="all-hybrid",
        hybrid_share=1.0,
        hybrid_comm_share_range=(0.3, 0.3),
    )
    return assign_ground_truth(
        Trace(jobs=jobs), platform, preset=preset, seed=seed, grouping="user-size"
    )


def two_jobs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": [1, 2],
            "submit_s": [0.0, 0.0],
            "runtime_s": [1000.0, 600.0],
            "procs": [16, 16],  # 2 nodes of 8 cores each
            "time_req_s": [1e6, 1e6],
            "user_id": [1, 2],
        }
    )


def test_shared_switch_slows_jobs_and_finisher_speeds_up_the_other() -> None:
    platform = topology_platform()
    jobs = two_jobs()
    truth = all_hybrid_truth(jobs, platform)
    assert truth.communicates.all()
    ntype = platform.node_types[0]
    idx, n, f = np.array([0, 1]), np.array([2, 2]), np.array([ntype.fmax_ghz] * 2)
    rate = truth.message_rate(idx, ntype, n, f)  # per node
    alone, _ = truth.evaluate(idx, ntype, n, f)
    # each job's background: the other job's 2 nodes x its per-node rate
    shared, power_shared = truth.evaluate(
        idx, ntype, n, f, background_msg_rate=np.array([2 * rate[1], 2 * rate[0]])
    )
    assert (shared > alone).all()  # contention slows both

    result = simulate(jobs, platform, easy_policy(), RunConfig(), truth)
    out = result.jobs.set_index("job_id")
    first, second = (0, 1) if shared[0] <= shared[1] else (1, 0)
    t_change = shared[first]
    # the first to finish ran contended the whole time
    assert out.loc[first + 1, "end_s"] == pytest.approx(t_change, rel=1e-12)
    # the other: fraction t_change / shared done under contention, the rest alone
    done = t_change / shared[second]
    expected_end = t_change + (1 - done) * alone[second]
    assert out.loc[second + 1, "end_s"] == pytest.approx(expected_end, rel=1e-12)
    # energy: contended power until t_change, then the power alone
    _, power_alone = truth.evaluate(idx, ntype, n, f)
    expected_energy = 2 * power_shared[second] * t_change + 2 * power_alone[second] * (
        expected_end - t_change
    )
    assert out.loc[second + 1, "energy_j"] == pytest.approx(expected_energy, rel=1e-9)
    # invariants still hold with piecewise job power
    assert result.energy_from_timeline_j() == pytest.approx(result.summary["energy_j"], rel=1e-12)
    assert result.summary["energy_busy_j"] == pytest.approx(out["energy_j"].sum(), rel=1e-12)


def test_separate_switches_do_not_interfere() -> None:
    platform = topology_platform(nodes=4, per_switch=2)  # each 2-node job gets its own switch
    jobs = two_jobs()
    truth = all_hybrid_truth(jobs, platform)
    ntype = platform.node_types[0]
    alone, _ = truth.evaluate(
        np.array([0, 1]), ntype, np.array([2, 2]), np.array([ntype.fmax_ghz] * 2)
    )
    result = simulate(jobs, platform, easy_policy(), RunConfig(), truth)
    assert result.jobs["end_s"].to_numpy() == pytest.approx(alone, rel=1e-12)


def test_no_topology_means_no_contention() -> None:
    ntype = NodeType(name="n", count=4, cores_per_node=8, pstates=DEFAULT_PSTATES)
    platform = Platform(name="flat", node_types=(ntype,))
    jobs = two_jobs()
    truth = all_hybrid_truth(jobs, platform)
    result = simulate(jobs, platform, easy_policy(), RunConfig(), truth)
    # calibrated: the recorded runtimes at the recorded size and top frequency
    assert result.jobs["runtime_s"].to_numpy() == pytest.approx([1000.0, 600.0], rel=1e-9)
