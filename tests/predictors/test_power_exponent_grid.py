"""fit_power_exponent's kept grid of powers x**pcoef gives the same fits as computing them."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.dvfs import PCOEF_BOUNDS, _grid_powers, _power_fits, fit_power_exponent


@pytest.mark.parametrize("anchored", [False, True])
def test_kept_grid_powers_give_the_same_fits_bit_for_bit(anchored: bool) -> None:
    rng = np.random.default_rng(3)
    grid = PCOEF_BOUNDS[0] + 0.01 * np.arange(round((PCOEF_BOUNDS[1] - PCOEF_BOUNDS[0]) / 0.01) + 1)
    for _ in range(50):
        x = np.unique(rng.choice([0.5, 0.5625, 0.625, 0.75, 0.875, 1.0], size=rng.integers(3, 7)))
        power = 90.0 + 140.0 * x ** rng.uniform(1.2, 4.0) + rng.normal(0.0, 2.0, len(x))
        count = rng.integers(1, 9, len(x)).astype(float)
        anchor = float(power[-1]) if anchored else None
        kept = _power_fits(x, power, grid, anchor, count, _grid_powers(x))
        plain = _power_fits(x, power, grid, anchor, count)
        for a, b in zip(kept, plain):
            assert a.tobytes() == b.tobytes()
        assert _grid_powers(x) is _grid_powers(x.copy())  # kept per clock set


def test_the_fitted_exponent_recovers_a_known_curve() -> None:
    # P = 100 + 150 x**2.5 at five clocks, no noise: the fit finds 2.5 and the constants
    x = np.array([0.5, 0.625, 0.75, 0.875, 1.0])
    ps, pd_, pcoef = fit_power_exponent(x, 100.0 + 150.0 * x**2.5)
    assert pcoef == pytest.approx(2.5, abs=1e-6)
    assert ps == pytest.approx(100.0, abs=1e-3) and pd_ == pytest.approx(150.0, abs=1e-3)


@pytest.mark.parametrize("anchored", [False, True])
def test_the_fit_from_per_clock_sums_is_the_fit_from_the_runs(anchored: bool) -> None:
    """fit_power_exponent_of_means on _PowerRows.add's kept per-clock sums (runs added
    in pieces, as refits add them) equals fit_power_exponent on the runs, bit for bit,
    also with many runs per clock (numpy's pairwise sums of the anchor's mean)."""
    from predictors.dvfs import FMAX_RTOL, _PowerRows, fit_power_exponent_of_means

    rng = np.random.default_rng(5)
    for trial in range(60):
        n = int(rng.choice([3, 5, 9, 40, 300]))
        x = rng.choice([0.5, 0.5625, 0.625, 0.75, 0.875, 1.0], n)
        x[:3] = [0.5, 0.75, 1.0]  # three distinct clocks
        power = 90.0 + 140.0 * x ** rng.uniform(1.2, 4.0) + rng.normal(0.0, 3.0, n)
        at = np.abs(x - 1.0) <= FMAX_RTOL
        anchor = float(np.mean(power[at])) if anchored else None
        want = fit_power_exponent(x, power, anchor)
        pr = _PowerRows()
        flat = [v for xi, pw in zip(x.tolist(), power.tolist()) for v in (1.0, xi * xi, pw, xi)]
        step = 4 * int(rng.integers(1, 12))
        for k in range(0, len(flat), step):
            pr.add(flat[k : k + step])
        sums = pr.clock_sums()
        assert sums is not None
        kept_anchor = float(np.mean(pr.at_fmax.view()[:, 0])) if anchored else None
        assert kept_anchor == anchor or not anchored
        got = fit_power_exponent_of_means(*sums, kept_anchor)
        assert got == want, (trial, got, want)
    # rows appended without add(): no sums (the caller fits the rows themselves)
    pr.rows.extend([1.0, 1.0, 100.0, 1.0])
    assert pr.clock_sums() is None


def test_anchored_grid_fits_equal_the_plain_fits_bit_for_bit() -> None:
    """_anchored_grid_fits (kept clock parts, residuals clock by clock) is _power_fits on
    the whole grid, anchored, for varied clock sets, counts, powers and anchors
    (including a power of 0, a huge one and an anchor below every power)."""
    from predictors.dvfs import _PCOEF_GRID, _anchored_grid_fits

    rng = np.random.default_rng(13)
    clocks = [0.4, 0.5, 0.5625, 0.625, 0.75, 0.875, 0.9, 1.0]
    for k in range(400):
        x = np.unique(rng.choice(clocks, size=rng.integers(3, 8)))
        power = 90.0 + 140.0 * x ** rng.uniform(1.2, 4.0) + rng.normal(0.0, 5.0, len(x))
        if k % 10 == 0:
            power[int(rng.integers(len(x)))] = float(rng.choice([0.0, 1e300, 1e-300]))
        count = rng.integers(1, 50, len(x)).astype(float)
        anchor = float(rng.choice([power[-1], power.min() - 10.0, 0.0]))
        with np.errstate(over="ignore"):  # 1e300 squared: inf in both
            got = _anchored_grid_fits(x, power, anchor, count)
            want = _power_fits(x, power, _PCOEF_GRID, anchor, count, _grid_powers(x))
        for a, b in zip(got, want):
            assert a.shape == b.shape and a.tobytes() == b.tobytes(), k
