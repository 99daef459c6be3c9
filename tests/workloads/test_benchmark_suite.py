"""The benchmark suite: every configuration, contrasting behaviour, exact with noise 0."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.platform import NodeType, Platform, PState, build_tree_topology, homogeneous_platform
from workloads.benchmark_suite import (
    BENCHMARK_COLUMNS,
    BENCHMARKS,
    default_node_counts,
    measure_benchmark_suite,
)


def test_columns_match_contract():
    from predictors.base import BENCHMARK_COLUMNS as CONTRACT

    assert BENCHMARK_COLUMNS == CONTRACT


def test_default_node_counts():
    assert default_node_counts(100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert default_node_counts(64) == [1, 2, 4, 8, 16, 32, 64]
    assert default_node_counts(1) == [1]


def test_every_configuration_once():
    pl = homogeneous_platform(100, 16)
    d = measure_benchmark_suite(pl)
    assert tuple(d.columns) == BENCHMARK_COLUMNS
    assert len(d) == len(BENCHMARKS) * 8 * 5
    assert not d.duplicated(["benchmark", "node_type", "nodes", "cores", "freq_ghz"]).any()
    assert set(d["cores"]) == {16}
    np.testing.assert_allclose(d["energy_j"], d["time_s"] * d["power_w"] * d["nodes"])
    assert set(d["benchmark"]) >= {"cpu-bound", "memory-bound", "comm-bound", "serial-heavy"}
    d2 = measure_benchmark_suite(pl, node_counts=[1, 4, 500], cores=[1, 8, 16])
    assert set(d2["nodes"]) == {1, 4} and set(d2["cores"]) == {1, 8, 16}


def test_contrasting_behaviour():
    pl = homogeneous_platform(64, 16)
    d = measure_benchmark_suite(pl).set_index(["benchmark", "nodes", "freq_ghz"])
    t = d["time_s"]
    # frequency sensitivity: cpu-bound ~ 1/f, memory-bound barely (alpha 0.15 -> 1.15)
    assert t["cpu-bound", 8, 1.2] / t["cpu-bound", 8, 2.4] == pytest.approx(1.98)
    assert t["memory-bound", 8, 1.2] / t["memory-bound", 8, 2.4] == pytest.approx(1.15)
    # scaling: serial-heavy is flat beyond A + A sigma - sigma = 10 nodes, cpu-bound keeps scaling
    assert t["serial-heavy", 16, 2.4] == pytest.approx(t["serial-heavy", 64, 2.4])
    assert t["cpu-bound", 64, 2.4] < t["cpu-bound", 32, 2.4] / 1.9
    # communication-bound: poor efficiency at 64 nodes
    assert t["comm-bound", 1, 2.4] / t["comm-bound", 64, 2.4] < 32
    # the energy-optimal frequency differs between memory- and cpu-bound benchmarks
    e = d["energy_j"]
    best = {
        b: e.xs((b, 8), level=("benchmark", "nodes")).idxmin()
        for b in ("cpu-bound", "memory-bound")
    }
    assert best["memory-bound"] < best["cpu-bound"]


def test_seeded_noise_and_noise_zero_exact():
    pl = homogeneous_platform(16, 4)
    a = measure_benchmark_suite(pl, seed=1, noise=0.02)
    b = measure_benchmark_suite(pl, seed=1, noise=0.02)
    c = measure_benchmark_suite(pl, seed=2, noise=0.02)
    exact = measure_benchmark_suite(pl)
    assert a.equals(b)
    assert not np.allclose(a["time_s"], c["time_s"])
    rel = a["time_s"] / exact["time_s"] - 1
    assert 0 < rel.abs().max() < 0.15


def test_multiple_node_types_and_topology():
    fat = NodeType(
        name="fat",
        count=8,
        cores_per_node=32,
        pstates=(PState(1.0, 120.0, 200.0), PState(3.0, 140.0, 420.0)),
    )
    thin = NodeType(
        name="thin",
        count=32,
        cores_per_node=16,
        pstates=homogeneous_platform(1, 16).node_types[0].pstates,
    )
    pl = Platform(
        name="p",
        node_types=(thin, fat),
        topology=build_tree_topology((thin, fat), 8, 12.5),
        nodes_per_switch=8,
        link_bandwidth_gbs=12.5,
    )
    d = measure_benchmark_suite(pl)
    assert set(d["node_type"]) == {"thin", "fat"}
    fat_rows = d[d["node_type"] == "fat"]
    assert set(fat_rows["nodes"]) == {1, 2, 4, 8} and set(fat_rows["freq_ghz"]) == {1.0, 3.0}
    assert np.all(np.isfinite(d["time_s"])) and np.all(d["power_w"] > 0)
