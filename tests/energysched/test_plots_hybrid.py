"""Hybrid plots and the bundled hybrid experiment (issue 16)."""

from __future__ import annotations

from importlib.resources import files

import numpy as np
import pandas as pd

from energysched.config import load_experiment
from energysched.plots_hybrid import job_front, plot_chosen_configs, plot_energy_time_front
from simulator.platform import load_platform
from workloads import Trace, assign_ground_truth, get_preset

PLATFORM_PATH = files("simulator") / "data" / "hybrid-128x16.toml"


def test_bundled_platform_is_the_hybrid_cluster():
    platform = load_platform(str(PLATFORM_PATH))
    node = platform.node_types[0]
    assert (node.count, node.cores_per_node, platform.nodes_per_switch) == (128, 16, 16)
    assert len(node.freqs_ghz) == 5


def test_bundled_hybrid_experiment_validates():
    spec = load_experiment(str(files("energysched") / "data" / "hybrid.toml"))
    names = [p.name for p in spec.policies]
    assert names == ["easy", "easy-pareto-deadline", "easy-pareto-budget"]
    assert spec.ground_truth.preset == "hybrid-mix"


def _truth():
    platform = load_platform(str(PLATFORM_PATH))
    jobs = pd.DataFrame(
        {
            "job_id": [1, 2],
            "submit_s": [0.0, 0.0],
            "runtime_s": [3000.0, 800.0],
            "procs": [64, 32],
            "time_req_s": [6000.0, 1000.0],
            "user_id": [1, 2],
        }
    )
    preset = get_preset("hybrid-mix").with_options(hybrid_share=1.0)
    return platform, assign_ground_truth(Trace(jobs=jobs), platform, preset=preset, seed=2)


def test_job_front_flags_exactly_the_undominated_configurations():
    platform, truth = _truth()
    node = platform.node_types[0]
    front = job_front(truth, node, 0, nodes=[2, 4, 8], cores=[2, 8, 16])
    assert len(front) == 3 * 3 * len(node.freqs_ghz)
    t, e = front["runtime_s"].to_numpy(), front["energy_j"].to_numpy()
    dominated = np.array(
        [np.any((t <= t[i]) & (e <= e[i]) & ((t < t[i]) | (e < e[i]))) for i in range(len(t))]
    )
    assert (front["pareto"].to_numpy() == ~dominated).all()
    fig = plot_energy_time_front(front, {"pick": (float(t[0]), float(e[0]))})
    assert len(fig.axes) == 2  # the plot and its colour bar


def test_chosen_configs_plot_has_three_panels():
    jobs = pd.DataFrame(
        {
            "cores": [16, 8, 4],
            "freq_ghz": [2.4, 1.2, 1.8],
            "nodes": [1, 2, 4],
            "requested_nodes": [1, 1, 2],
        }
    )
    fig = plot_chosen_configs({"a": jobs, "b": jobs}, 16, [1.2, 1.5, 1.8, 2.1, 2.4])
    assert len(fig.axes) == 3
