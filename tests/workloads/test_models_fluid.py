"""Fluid DVFS model: hand values, analytic optimum vs brute force, two-run calibration."""

from __future__ import annotations

import numpy as np
import pytest

from workloads.models import (
    composite_energy,
    composite_power,
    composite_runtime,
    fluid_calibrate,
    fluid_energy_factor,
    fluid_optimal_pstate,
    fluid_optimal_x,
    fluid_power,
    fluid_root,
    fluid_runtime_factor,
)


def test_hand_values():
    # (1 - 0.6) + 0.6 / 0.5 = 0.4 + 1.2 = 1.6
    assert fluid_runtime_factor(0.5, 0.6) == pytest.approx(1.6)
    # alpha = 0: does not depend on f; alpha = 1: 1/x
    assert fluid_runtime_factor(0.5, 0.0) == pytest.approx(1.0)
    assert fluid_runtime_factor(0.5, 1.0) == pytest.approx(2.0)
    # 92 + 137 * 0.5^2 = 92 + 34.25 = 126.25
    assert fluid_power(0.5, 92.0, 137.0) == pytest.approx(126.25)
    # p_coef = 3: 92 + 137 * 0.125 = 109.125
    assert fluid_power(0.5, 92.0, 137.0, p_coef=3) == pytest.approx(109.125)
    # energy factor = 1.6 * 126.25 = 202.0
    assert fluid_energy_factor(0.5, 0.6, 92.0, 137.0) == pytest.approx(202.0)


def test_root_by_hand():
    # alpha = 1: g = (p-1) x^p - Ps/Pd; p = 2, Ps/Pd = 50/200 = 0.25 -> x = 0.5
    assert fluid_root(1.0, 50.0, 200.0) == pytest.approx(0.5, abs=1e-12)
    # p = 3, alpha = 1: 2 x^3 = 0.25 -> x = 0.5
    assert fluid_root(1.0, 50.0, 200.0, p_coef=3) == pytest.approx(0.5, abs=1e-12)
    # alpha = 0.5, p = 2: 2*1*x^3 + x^2 - r = 0 at x = 0.5 -> r = 0.25 + 0.25 = 0.5
    assert fluid_root(0.5, 100.0, 200.0) == pytest.approx(0.5, abs=1e-12)
    # clamped: root 0.5 with x_min 0.6 -> 0.6; root above 1 -> 1
    assert fluid_optimal_x(0.5, 100.0, 200.0, x_min=0.6) == pytest.approx(0.6)
    assert fluid_optimal_x(1.0, 400.0, 100.0, x_min=0.5) == pytest.approx(1.0)  # root = 2


def test_root_special_cases():
    # alpha = 0 -> slowest; Pdyn = 0 -> fastest; Pstatic = 0 -> slowest
    np.testing.assert_allclose(
        fluid_optimal_x([0.0, 0.5, 0.5], [90, 90, 0], [100, 0, 100], x_min=0.4), [0.4, 1.0, 0.4]
    )


def test_analytic_optimum_equals_brute_force():
    rng = np.random.default_rng(11)
    k = 300
    alpha = rng.uniform(0.02, 1.0, k)
    ps = rng.uniform(20, 150, k)
    pd = rng.uniform(20, 250, k)
    x_min = 0.3
    for p_coef in (2.0, 2.5, 3.0):
        x_star = fluid_optimal_x(alpha, ps, pd, p_coef=p_coef, x_min=x_min)
        grid = np.linspace(x_min, 1.0, 70001)
        e = fluid_energy_factor(grid[None, :], alpha[:, None], ps[:, None], pd[:, None], p_coef)
        brute = grid[np.argmin(e, axis=1)]
        root = fluid_root(alpha, ps, pd, p_coef)
        inside = (root > x_min) & (root < 1.0)
        assert inside.sum() > 50  # the test covers interior roots
        step = grid[1] - grid[0]
        np.testing.assert_allclose(x_star[inside], brute[inside], atol=step)
        # and the analytic point is never worse than the grid's best
        e_star = fluid_energy_factor(x_star, alpha, ps, pd, p_coef)
        assert np.all(e_star <= e.min(axis=1) * (1 + 1e-12))


def test_optimal_pstate_matches_exhaustive_and_analytic():
    freqs = np.array([1.2, 1.5, 1.8, 2.1, 2.4])
    rng = np.random.default_rng(5)
    alpha = rng.uniform(0.02, 1.0, 200)
    ps = rng.uniform(60, 120, 200)
    pd = rng.uniform(60, 200, 200)
    got = fluid_optimal_pstate(freqs, alpha, ps, pd)
    e = fluid_energy_factor(freqs[None, :] / 2.4, alpha[:, None], ps[:, None], pd[:, None])
    np.testing.assert_allclose(got, freqs[np.argmin(e, axis=1)])
    # the discrete optimum is one of the P-states adjacent to the continuous optimum
    x_star = fluid_optimal_x(alpha, ps, pd, x_min=0.5) * 2.4
    lower = freqs[np.clip(np.searchsorted(freqs, x_star, side="right") - 1, 0, 4)]
    upper = freqs[np.clip(np.searchsorted(freqs, x_star, side="left"), 0, 4)]
    assert np.all((got == lower) | (got == upper))
    # hand example: alpha = 1, Ps = 50, Pd = 200: E(x) = (50 + 200 x^2)/x, minimum at x = 0.5
    # E(0.5) = 200, E(0.625) = 205, E(0.75) = 216.7: 1.2 GHz of 2.4
    assert fluid_optimal_pstate(freqs, 1.0, 50.0, 200.0) == pytest.approx(1.2)


def test_calibration_from_two_runs_is_exact_without_noise():
    rng = np.random.default_rng(2)
    alpha = rng.uniform(0.0, 1.0, 50)
    ps = rng.uniform(50, 150, 50)
    pd = rng.uniform(30, 200, 50)
    fmin, fmax = 1.2, 2.4
    d_max = rng.uniform(10, 1000, 50)
    d_min = d_max * fluid_runtime_factor(fmin / fmax, alpha)
    p_min = fluid_power(fmin / fmax, ps, pd)
    p_max = fluid_power(1.0, ps, pd)
    a, s, d = fluid_calibrate(d_min, d_max, p_min, p_max, fmin, fmax)
    np.testing.assert_allclose(a, alpha, atol=1e-12)
    np.testing.assert_allclose(s, ps, rtol=1e-12)
    np.testing.assert_allclose(d, pd, rtol=1e-12)
    # by hand: D 160 s at 1.2 GHz, 100 s at 2.4 -> alpha = (1.6 - 1) / (2 - 1) = 0.6;
    # P 126.25 W and 229 W -> Pdyn = 102.75 / 0.75 = 137, Pstatic = 92
    a, s, d = fluid_calibrate(160.0, 100.0, 126.25, 229.0, 1.2, 2.4)
    assert (a, s, d) == (pytest.approx(0.6), pytest.approx(92.0), pytest.approx(137.0))


def test_composite_by_hand():
    # L = 1000, A = 5, sigma = 0.5, n = 2 -> S = 10/5.25; alpha = 0.6, x = 0.5 -> factor 1.6
    # T = 1000 * 5.25/10 * 1.6 = 840 s; P = 92 + 137/4 = 126.25 W; E = 2 * 840 * 126.25 = 212100 J
    assert composite_runtime(2, 0.5, 1000.0, 5, 0.5, 0.6) == pytest.approx(840.0)
    assert composite_power(0.5, 92.0, 137.0) == pytest.approx(126.25)
    assert composite_energy(2, 0.5, 1000.0, 5, 0.5, 0.6, 92.0, 137.0) == pytest.approx(212100.0)


def test_scalar_forms_equal_the_array_forms():
    """The plain-Python forms (engine's scalar path) and the array forms are one formula."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from workloads.models.fluid import (
        fluid_power,
        fluid_power_scalar,
        fluid_runtime_factor,
        fluid_runtime_factor_scalar,
    )

    positive = st.floats(0.05, 1.0)

    @settings(max_examples=200, deadline=None)
    @given(
        x=positive,
        alpha=st.floats(0.0, 1.0),
        ps=st.floats(0, 500),
        pd=st.floats(0, 500),
        share=positive,
    )
    def check(x, alpha, ps, pd, share):
        assert fluid_runtime_factor_scalar(x, alpha) == pytest.approx(
            float(fluid_runtime_factor(x, alpha)), rel=1e-15
        )
        assert fluid_power_scalar(x, ps, pd, share) == pytest.approx(
            float(fluid_power(x, ps, pd, core_share=share)), rel=1e-15, abs=1e-12
        )

    check()


def test_node_power_charges_static_power_whole_and_dynamic_power_per_core_share():
    from workloads.models.fluid import fluid_power

    # 4 of 16 cores at x = 0.5: 100 + 200 * 0.25 * 0.25 = 112.5 W
    assert float(fluid_power(0.5, 100.0, 200.0, core_share=4 / 16)) == pytest.approx(112.5)
