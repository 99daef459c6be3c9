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
        flat = [v for xi, pw in zip(x.tolist(), power.tolist()) for v in (xi, pw)]
        step = 2 * int(rng.integers(1, 12))
        for k in range(0, len(flat), step):
            pr.add(flat[k : k + step])
        sums = pr.clock_lists()
        kept_anchor = float(np.mean(pr.at_fmax)) if anchored else None
        assert kept_anchor == anchor or not anchored
        got = fit_power_exponent_of_means(*sums, kept_anchor)
        assert got == want, (trial, got, want)


def _plain_exponent_fit(x, count, power_sum_w, anchor_w):
    """The plain version of the exponent fit: _power_fits' errors over the whole grid
    (each a sum of squared residuals), their argmin, the parabolic step through it and
    its neighbours, kept if its own _power_fits error is lower."""
    from predictors.dvfs import _PCOEF_GRID

    mean_w = power_sum_w / count
    ps, pd_, sse = _power_fits(x, mean_w, _PCOEF_GRID, anchor_w, count)
    k = int(np.argmin(sse))
    best = (float(ps[k]), float(pd_[k]), float(_PCOEF_GRID[k]))
    if 0 < k < len(_PCOEF_GRID) - 1:
        s0, s1, s2 = sse[k - 1], sse[k], sse[k + 1]
        curv = s0 - 2.0 * s1 + s2
        if curv > 0:
            cand = float(
                np.clip(
                    _PCOEF_GRID[k] + 0.005 * (s0 - s2) / curv,
                    _PCOEF_GRID[k - 1],
                    _PCOEF_GRID[k + 1],
                )
            )
            c_ps, c_pd, c_sse = _power_fits(x, mean_w, np.array([cand]), anchor_w, count)
            if c_sse[0] < s1:
                best = (float(c_ps[0]), float(c_pd[0]), cand)
    return best


def test_the_anchored_exponent_fit_agrees_with_the_plain_fit() -> None:
    """The anchored fit (the grid's best exponent by max(num, 0)**2 / den, the parabolic
    step's errors from residuals on floats) gives the plain version's exponent and
    constants to within 1e-9 (relative to the anchor power for the constants): the
    same least squares, rounded differently. Varied clock sets, counts, exponents, noise
    (none to large) and anchors (the top clock's power, below every power: Pdyn = 0)."""
    from predictors.dvfs import fit_power_exponent_of_means

    rng = np.random.default_rng(13)
    clocks = [0.4, 0.5, 0.5625, 0.625, 0.75, 0.875, 0.9, 1.0]
    worst = 0.0
    for k in range(600):
        x = np.unique(rng.choice(clocks, size=rng.integers(3, 8)))
        if len(x) < 3:
            continue
        noise = float(rng.choice([0.0, 0.5, 5.0, 40.0]))
        mean = 90.0 + 140.0 * x ** rng.uniform(1.2, 4.0) + rng.normal(0.0, noise, len(x))
        count = rng.integers(1, 50, len(x)).astype(float)
        anchor = float(mean[-1]) if k % 5 else float(mean.min() - 10.0)
        got = fit_power_exponent_of_means(x, count, mean * count, anchor)
        want = _plain_exponent_fit(x, count, mean * count, anchor)
        assert got[2] == pytest.approx(want[2], abs=1e-9), k
        for a, b in zip(got[:2], want[:2]):
            assert a == pytest.approx(b, abs=1e-9 * abs(anchor)), k
            worst = max(worst, abs(a - b) / abs(anchor))
        if k % 5 == 0:  # the anchor below every power: no positive Pdyn
            assert got[1] == 0.0 and got[0] == anchor
    assert worst > 0.0  # (they do round differently: the comparison is not vacuous)


def test_the_anchored_exponent_fit_declines_degenerate_inputs() -> None:
    """Gaps to the anchor that overflow, a clock whose powers x**pcoef overflow, or a
    count of 0: the anchored fit declines (None) and fit_power_exponent_of_means
    answers what the plain version answers."""
    from predictors.dvfs import _anchored_exponent_fit, fit_power_exponent_of_means

    x = np.array([0.5, 0.75, 1.0])
    count = np.array([3.0, 2.0, 4.0])
    cases = [
        (x, np.ones(3), np.array([-1e308, -1e308, 1e308]), 1e308),  # the gaps overflow
        (np.array([0.5, 0.75, 1e60]), count, np.array([100.0, 150.0, 200.0]) * count, 200.0),
    ]
    for clocks, cnt, sums, anchor in cases:
        with np.errstate(all="ignore"):  # (as the plain version, the fallback warns)
            fast = _anchored_exponent_fit(clocks.tolist(), cnt.tolist(), sums.tolist(), anchor)
            got = fit_power_exponent_of_means(clocks, cnt, sums, anchor)
            want = _plain_exponent_fit(clocks, cnt, sums, anchor)
        assert fast is None
        np.testing.assert_array_equal(got, want)
    zero = [3.0, 0.0, 4.0]
    assert _anchored_exponent_fit(x.tolist(), zero, [300.0, 0.0, 800.0], 200.0) is None


def test_a_negative_correlation_does_not_win_the_grid() -> None:
    """Powers above the anchor at some clocks and below it at others: num = sum(c g w)
    changes sign along the grid, and num**2 / den can be largest where num < 0 (there
    the best Pdyn is 0, no gain). The fit still takes the best exponent with num > 0,
    as the plain version's errors do."""
    from predictors.dvfs import _PCOEF_GRID, _anchored_grid_parts, fit_power_exponent_of_means

    rng = np.random.default_rng(7)
    hit = 0
    for _ in range(400):
        x = np.array([0.4, 0.75, 1.0])
        anchor = 200.0
        mean = np.array([anchor + rng.uniform(0, 80), anchor - rng.uniform(0, 80), anchor])
        count = rng.integers(1, 30, 3).astype(float)
        w, ww = _anchored_grid_parts(x.tolist())
        num, den = (count * (anchor - mean)) @ w, count @ ww
        if not (num[np.argmax(num * num / den)] < 0 < num.max()):
            continue
        hit += 1
        got = fit_power_exponent_of_means(x, count, mean * count, anchor)
        want = _plain_exponent_fit(x, count, mean * count, anchor)
        assert got[1] > 0 and got[2] != _PCOEF_GRID[0]
        assert got[2] == pytest.approx(want[2], abs=1e-9)
        assert got[1] == pytest.approx(want[1], abs=1e-9 * anchor)
    assert hit >= 10
