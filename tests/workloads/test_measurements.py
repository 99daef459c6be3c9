"""Measurements: exact with noise 0, consistent energy, seeded, counters carry signal."""

from __future__ import annotations

import numpy as np
import pytest

from workloads.measurements import (
    COUNTER_COLUMNS,
    MEASUREMENT_COLUMNS,
    draw_counter_traits,
    measure,
)


def _rows(k: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    return dict(
        node_type="node",
        nodes=rng.integers(1, 64, k),
        cores=np.full(k, 16),
        cores_per_node=16,
        freq_ghz=rng.choice([1.2, 1.8, 2.4], k),
        fmax_ghz=2.4,
        runtime_s=rng.uniform(10, 1e4, k),
        power_w=rng.uniform(100, 250, k),
        alpha=rng.uniform(0.02, 1.0, k),
        p_static_w=np.full(k, 92.0),
        instructions=rng.uniform(1e12, 1e15, k),
        traits=draw_counter_traits(rng, k),
    )


def test_counter_columns_match_contract():
    from predictors.base import BENCHMARK_COLUMNS
    from predictors.base import COUNTER_COLUMNS as CONTRACT

    assert COUNTER_COLUMNS == CONTRACT
    assert set(MEASUREMENT_COLUMNS) <= set(BENCHMARK_COLUMNS)


def test_noise_zero_equals_truth():
    r = _rows()
    m = measure(**r, noise=0.0, rng=np.random.default_rng(0))
    assert tuple(m.columns) == MEASUREMENT_COLUMNS
    np.testing.assert_array_equal(m["time_s"], r["runtime_s"])
    np.testing.assert_array_equal(m["power_w"], r["power_w"])
    np.testing.assert_allclose(m["energy_j"], r["runtime_s"] * r["power_w"] * r["nodes"])
    np.testing.assert_array_equal(m["instructions"], r["instructions"])
    # per-core instruction rate = I / (n c T)
    np.testing.assert_allclose(
        m["ctr_instructions_per_s"], r["instructions"] / (r["nodes"] * 16 * r["runtime_s"])
    )


def test_energy_is_time_power_nodes_with_noise():
    r = _rows()
    m = measure(**r, noise=0.05, rng=np.random.default_rng(3))
    np.testing.assert_allclose(m["energy_j"], m["time_s"] * m["power_w"] * m["nodes"], rtol=1e-12)
    assert not np.allclose(m["time_s"], r["runtime_s"])


def test_noise_statistics():
    r = _rows(20000)
    m = measure(**r, noise=0.02, rng=np.random.default_rng(9))
    rel = m["time_s"] / r["runtime_s"] - 1
    assert abs(rel.mean()) < 0.001
    assert rel.std() == pytest.approx(0.02, rel=0.05)


def test_seeded_determinism():
    r = _rows()
    a = measure(**r, noise=0.02, rng=np.random.default_rng(1))
    b = measure(**r, noise=0.02, rng=np.random.default_rng(1))
    c = measure(**r, noise=0.02, rng=np.random.default_rng(2))
    assert a.equals(b)
    assert not np.allclose(a["time_s"], c["time_s"])


def test_counters_carry_signal_but_not_exactly():
    k = 400
    r = _rows(k, seed=5)
    r["freq_ghz"] = np.full(k, 2.4)
    m = measure(**r, noise=0.02, rng=np.random.default_rng(0))
    alpha = r["alpha"]
    assert np.corrcoef(alpha, m["ctr_llc_miss_ratio"])[0, 1] < -0.8  # falls as alpha rises
    assert np.corrcoef(1 - alpha, m["ctr_mem_bandwidth_gbs"])[0, 1] > 0.8  # rises with 1 - alpha
    assert np.corrcoef(1 - alpha, m["ctr_stall_ratio"])[0, 1] > 0.8
    # ... but a linear fit of alpha on the counters is not exact (hidden per-application traits)
    X = np.column_stack([np.ones(k), m["ctr_llc_miss_ratio"], m["ctr_stall_ratio"]])
    coef, *_ = np.linalg.lstsq(X, alpha, rcond=None)
    resid = alpha - X @ coef
    assert 0.005 < resid.std() < 0.15
    for col in ("ctr_llc_miss_ratio", "ctr_stall_ratio"):
        assert m[col].between(0, 1).all()
    # RAPL: a share of node power, below it
    assert np.all(m["rapl_power_w"] < m["power_w"] * 1.1)
    assert np.corrcoef(m["rapl_power_w"], r["power_w"])[0, 1] > 0.9


def test_instruction_rate_rises_with_frequency_times_alpha():
    # same job (fixed instructions, Downey x Fluid runtime) at two frequencies
    t_max = 1000.0
    alpha = np.array([0.1, 0.5, 1.0])
    traits = draw_counter_traits(np.random.default_rng(0), 3)
    out = {}
    for f in (1.2, 2.4):
        t = t_max * ((1 - alpha) + alpha * 2.4 / f)
        out[f] = measure(
            node_type="n",
            nodes=1,
            cores=1,
            cores_per_node=1,
            freq_ghz=f,
            fmax_ghz=2.4,
            runtime_s=t,
            power_w=150.0,
            alpha=alpha,
            p_static_w=90.0,
            instructions=1e12,
            traits=traits,
            noise=0.0,
            rng=np.random.default_rng(0),
        )["ctr_instructions_per_s"].to_numpy()
    gain = out[2.4] / out[1.2]
    # ratio = (1 - a + 2a) / 1 = 1 + a: 1.1, 1.5, 2.0
    np.testing.assert_allclose(gain, 1 + alpha)


def test_negative_noise_rejected():
    with pytest.raises(ValueError):
        measure(**_rows(3), noise=-0.1, rng=np.random.default_rng(0))
