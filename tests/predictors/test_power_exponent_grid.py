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
