"""ADEPT on data that do not pin Downey's model down (issue 14): the tie rule, the
anomaly step, the fit checks, the discriminating warnings and the uncertainty."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import predictors.adept as adept
from predictors.adept import AdeptPredictor, _speedup, fit_downey
from predictors.base import RUN_COLUMNS, Observations, Queries


def _codes(fit, i: int = 0) -> list[str]:
    return [w.code for w in fit.fits[i].warnings]


def test_first_piece_only_curve_is_not_predicted_to_plateau_at_the_largest_size() -> None:
    """Amdahl data T = 100/n + 2: every Downey instance with n <= A explains them
    (ties). The old rule (first tie) put A at the largest size, T(32) ~ T(8); the
    largest tied A continues the Amdahl curve: T(32) = 100/32 + 2 = 5.125."""
    n = np.array([1.0, 2.0, 4.0, 8.0])
    t = 100.0 / n + 2.0
    fit = fit_downey(n, t, [32])
    assert fit.A[0] > 2 * 8  # no plateau at the largest observation
    assert fit.runtimes[0] == pytest.approx(100.0 / 32 + 2.0, rel=0.01)
    assert fit.runtimes[0] < 0.5 * t[-1]


def test_the_old_tie_rule_predicted_the_plateau(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same data under TIE_RULE = "first" (the rule before issue 14): scaling stops."""
    monkeypatch.setattr(adept, "TIE_RULE", "first")
    n = np.array([1.0, 2.0, 4.0, 8.0])
    fit = fit_downey(n, 100.0 / n + 2.0, [32])
    assert fit.A[0] == pytest.approx(8.0, rel=0.01)
    assert fit.runtimes[0] > 0.85 * (100.0 / 8 + 2.0)


def test_tied_interval_gives_the_uncertainty() -> None:
    """The tied ends (A at the largest point vs the largest A) predict 12.7 vs 5.1 at
    n = 32: the uncertainty is their relative gap, far above the (zero) fit error."""
    n = np.array([1.0, 2.0, 4.0, 8.0])
    fit = fit_downey(n, 100.0 / n + 2.0, [32])
    f = fit.fits[0]
    assert f.max_rel_error < 1e-6
    ends = [a for a, _, _ in f.alternatives]
    assert min(ends) == pytest.approx(8.0, rel=0.02) and max(ends) > 4 * 8
    assert f.uncertainty > 1.0


@pytest.mark.parametrize("factor", [0.6, 0.7])
def test_anomaly_step_keeps_the_observation_nearest_the_target(factor) -> None:
    """n = 32 runs anomalously fast (exact Downey otherwise): its weight is reduced in
    the fit for n = 2, but kept in full for n = 64 (whose nearest observation it is)."""
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    t = 1000.0 / _speedup(n, 24.0, 0.6)
    t[4] *= factor
    fit = fit_downey(n, t, [64, 2])
    assert fit.anomaly == 4
    d64 = np.abs(64 - n)
    assert fit.fits[0].weights[4] == pytest.approx(2 * d64.max() - d64[4])
    d2 = np.abs(2 - n)
    assert fit.fits[1].weights[4] < 2 * d2.max() - d2[4]


def test_poor_fit_counts_the_down_weighted_observation() -> None:
    """n = 4 is 40 % slow and gets weight 0; the others are exact Downey points, so a
    check over the weighted points only could never warn. Every point counts."""
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    t = 1000.0 / _speedup(n, 24.0, 0.6)
    t[1] *= 1.4
    fit = fit_downey(n, t, [64])
    assert fit.anomaly == 1 and fit.fits[0].weights[1] == 0.0
    assert fit.fits[0].max_rel_error > 0.25
    assert "poor_fit" in _codes(fit)


def test_exact_fit_warns_only_when_points_do_not_exceed_parameters() -> None:
    n3 = np.array([4.0, 8.0, 16.0])
    n4 = np.array([4.0, 8.0, 16.0, 32.0])
    three = fit_downey(n3, 1000.0 / _speedup(n3, 20.0, 0.5), [64])
    four = fit_downey(n4, 1000.0 / _speedup(n4, 20.0, 0.5), [64])
    assert "exact_fit" in _codes(three)
    assert "exact_fit" not in _codes(four)


def test_superlinear_step_warns() -> None:
    # 1 -> 2 nodes: 100 s -> 40 s (speedup 2.5 on 2 nodes)
    fit = fit_downey([1, 2, 4, 8], [100.0, 40.0, 22.0, 12.0], [16])
    assert "superlinear" in _codes(fit)
    n = np.array([1.0, 2.0, 4.0, 8.0])
    assert "superlinear" not in _codes(fit_downey(n, 100.0 / n + 2.0, [16]))


def test_unsupported_plateau_warns_only_far_out_and_without_support() -> None:
    """A = 7: the points 2..8 reach only 1.14 A; n = 32 (4x) lies on the plateau
    (warn), n = 12 (< 2x) does not; with A = 6 the point 8 >= 1.25 A supports it."""
    n = np.array([2.0, 4.0, 6.0, 8.0])
    fit = fit_downey(n, 1000.0 / _speedup(n, 7.0, 0.5), [32, 12])
    assert fit.A[0] == pytest.approx(7.0, rel=0.01)
    assert _codes(fit, 0) == ["unsupported_plateau"]
    assert _codes(fit, 1) == []
    supported = fit_downey(n, 1000.0 / _speedup(n, 6.0, 0.5), [32])
    assert _codes(supported) == []


def _runs(nodes: list[int], times: list[float]) -> pd.DataFrame:
    k = len(nodes)
    runs = pd.DataFrame(
        {
            "job_id": np.arange(k),
            "application": np.zeros(k, dtype=np.int64),
            "submit_s": np.arange(k, dtype=float),
            "node_type": np.full(k, "std", dtype=object),
            "nodes": np.array(nodes, dtype=np.int64),
            "cores": np.ones(k, dtype=np.int64),
            "freq_ghz": np.full(k, 2.4),
            "time_s": np.array(times, dtype=float),
            "power_w": np.full(k, 200.0),
            "instructions": np.ones(k),
            "requested_nodes": np.array(nodes, dtype=np.int64),
            "requested_time_s": np.full(k, np.nan),
        }
    )
    for c in RUN_COLUMNS:
        if c not in runs:
            runs[c] = np.nan
    runs["energy_j"] = runs["time_s"] * runs["power_w"] * runs["nodes"]
    return runs[list(RUN_COLUMNS)]


def test_predictor_fills_uncertainty_and_flags_unsupported_plateau_per_row() -> None:
    """One fit serves every n: rows far out on an unsupported plateau are unreliable
    even when the fit's own target raised nothing; uncertainty is filled."""
    n = [2, 4, 6, 8]
    t = (1000.0 / _speedup(np.array(n, float), 7.0, 0.5)).tolist()
    p = AdeptPredictor().fit(Observations(runs=_runs(n, t)))
    q = Queries(
        application=np.zeros(2, dtype=np.int64),
        nodes=np.array([10, 32]),
        freq_ghz=np.full(2, 2.4),
        node_type=np.full(2, "std", dtype=object),
    )
    pred = p.predict(q)
    assert pred.reliable.tolist() == [True, False]
    assert np.all(np.isfinite(pred.uncertainty)) and np.all(pred.uncertainty >= 0)
