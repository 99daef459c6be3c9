"""Truth check (issue 16): what the engine charges a node whose job uses fewer cores than it has.

The hybrid model's node power already holds the static power of the whole
node (idle cores included: ``Psys_idle``); the busy cores add their active
and stall power. The engine must charge ``nodes x truth power x runtime`` to
the job's nodes (nothing more for the unused cores) and the idle power to the
other nodes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from policies.backfilling import QueuePolicy
from policies.base import Decision
from policies.choosers import RigidChooser
from simulator import RunConfig, simulate
from simulator.platform import DEFAULT_PSTATES, NodeType, Platform, build_tree_topology
from workloads import Trace, assign_ground_truth, get_preset


class FourCores(RigidChooser):
    """Requested nodes, 4 cores per node, top frequency."""

    def choose(self, job, view):  # type: ignore[no-untyped-def]
        return Decision(job, job.requested_nodes, self._fmax[job.node_type], job.node_type, 4, None)


def test_engine_charges_truth_power_of_a_four_core_job_and_idle_power_elsewhere() -> None:
    ntype = NodeType(name="n", count=4, cores_per_node=16, pstates=DEFAULT_PSTATES)
    platform = Platform(
        name="p",
        node_types=(ntype,),
        topology=build_tree_topology((ntype,), 4, 12.5),
        nodes_per_switch=4,
        link_bandwidth_gbs=12.5,
    )
    jobs = pd.DataFrame(
        {
            "job_id": [1],
            "submit_s": [0.0],
            "runtime_s": [1000.0],
            "procs": [32],  # 2 nodes of 16 cores
            "time_req_s": [1e6],
            "user_id": [1],
        }
    )
    preset = dataclasses.replace(get_preset("hybrid-mix"), name="h", hybrid_share=1.0)
    truth = assign_ground_truth(Trace(jobs=jobs), platform, preset=preset, seed=4)
    runtime, power = truth.evaluate([0], ntype, [2], [ntype.fmax_ghz], [4])
    policy = QueuePolicy(backfill="easy", chooser=FourCores())
    result = simulate(jobs, platform, policy, RunConfig(), truth)
    row = result.jobs.iloc[0]
    assert int(row["cores"]) == 4
    assert row["runtime_s"] == pytest.approx(runtime[0], rel=1e-12)
    assert row["energy_j"] == pytest.approx(2 * power[0] * runtime[0], rel=1e-12)
    summary = result.summary
    assert summary["energy_busy_j"] == pytest.approx(2 * power[0] * runtime[0], rel=1e-9)
    idle_w = ntype.pstates[0].idle_power_w
    assert summary["energy_idle_j"] == pytest.approx(2 * idle_w * runtime[0], rel=1e-9)
    # the job's node power holds the static power and lies below the node's full load
    figures = truth._types["n"].hybrid
    assert (
        float(np.asarray(figures.sys_idle_w)[0]) < power[0] < ntype.pstates[-1].busy_power_w * 1.05
    )
