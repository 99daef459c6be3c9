"""``auto``: per-application model selection by leave-one-out; the power-law baseline."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from predictors.adept import _speedup
from predictors.auto import AutoPredictor, fit_power_law, select_model
from predictors.base import RUN_COLUMNS, Observations, Queries
from predictors.registry import get_predictor

SIZES = np.array([1.0, 2.0, 4.0, 8.0, 16.0])


def test_power_law_fit_recovers_exponent_and_constant() -> None:
    m = fit_power_law(SIZES, 100.0 * SIZES**-0.7)
    assert m.b == pytest.approx(0.7) and m.c == pytest.approx(100.0)
    one = fit_power_law(np.array([4.0, 4.0]), np.array([10.0, 10.0]))
    assert one.b == 1.0 and one.c == pytest.approx(40.0)  # perfect speedup through n * tau


def test_chooses_amdahl_on_an_amdahl_curve() -> None:
    """tau = 100/n + 5: Amdahl's leave-one-out error is 0; ADEPT's too (its first
    piece), but it is not better, and the simpler model is preferred."""
    m = select_model(SIZES, 100.0 / SIZES + 5.0)
    assert m.chosen == "amdahl"
    assert m.scores["amdahl"] < 1e-9 and m.scores["power-law"] > 0.05
    assert float(m.tau(64.0)) == pytest.approx(100.0 / 64 + 5.0)


def test_chooses_the_power_law_on_a_power_law_curve() -> None:
    noise = np.array([1.02, 0.98, 1.01, 0.99, 1.0])
    m = select_model(SIZES, 100.0 * SIZES**-0.8 * noise)
    assert m.chosen == "power-law"
    assert m.scores["power-law"] < 0.8 * m.scores["amdahl"]


def test_chooses_adept_on_a_downey_curve_that_bends() -> None:
    n = np.array([4.0, 8.0, 16.0, 24.0, 32.0, 48.0])  # the plateau A = 20 inside the data
    m = select_model(n, 1000.0 / _speedup(n, 20.0, 0.5))
    assert m.chosen == "adept"
    assert m.scores["adept"] < 0.8 * min(m.scores["amdahl"], m.scores["power-law"])
    assert m.model.A == pytest.approx(20.0, rel=0.01)


def test_leave_one_out_score_worked_by_hand() -> None:
    """Three points on tau = 12/n + 1 except the middle one (+10 %): Amdahl through
    the outer two is exact there, misses the middle by ln(1.1 * 7 / 7); each outer
    point is predicted by the line through the other two."""
    n = np.array([1.0, 2.0, 4.0])
    tau = 12.0 / n + 1.0
    tau[1] *= 1.1
    m = select_model(n, tau, candidates=("amdahl",))
    from predictors.baselines import fit_amdahl

    errs = []
    for i in range(3):
        keep = np.arange(3) != i
        f = fit_amdahl(n[keep], tau[keep])
        errs.append(abs(math.log((f.a / n[i] + f.b) / tau[i])))
    assert m.scores["amdahl"] == pytest.approx(np.mean(errs))
    assert errs[1] == pytest.approx(math.log(1.1))


def test_few_sizes_fall_back_to_amdahl_and_adept_needs_four() -> None:
    two = select_model(np.array([2.0, 4.0]), np.array([10.0, 6.0]))
    assert two.chosen == "amdahl" and two.scores == {}
    three = select_model(SIZES[:3], 100.0 / SIZES[:3])
    assert "adept" not in three.scores
    with pytest.raises(ValueError, match="unknown candidate"):
        select_model(SIZES, SIZES, candidates=("lbm",))


def _runs(curves: dict[int, tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    frames = []
    for app, (n, t) in curves.items():
        k = len(n)
        frames.append(
            pd.DataFrame(
                {
                    "application": np.full(k, app, dtype=np.int64),
                    "nodes": n.astype(np.int64),
                    "time_s": t,
                }
            )
        )
    runs = pd.concat(frames, ignore_index=True)
    k = len(runs)
    runs["job_id"] = np.arange(k)
    runs["submit_s"] = np.arange(k, dtype=float)
    runs["node_type"] = "std"
    runs["cores"] = 1
    runs["freq_ghz"] = 2.4
    runs["power_w"] = 200.0
    runs["energy_j"] = runs["time_s"] * runs["power_w"] * runs["nodes"]
    runs["instructions"] = 1.0
    runs["requested_nodes"] = runs["nodes"]
    runs["requested_time_s"] = np.nan
    for c in RUN_COLUMNS:
        if c not in runs:
            runs[c] = np.nan
    return runs[list(RUN_COLUMNS)]


def _queries(app: int, nodes: list[int]) -> Queries:
    k = len(nodes)
    return Queries(
        application=np.full(k, app),
        nodes=np.array(nodes),
        freq_ghz=np.full(k, 2.4),
        node_type=np.full(k, "std", dtype=object),
    )


def test_predictor_records_the_chosen_model_per_application() -> None:
    runs = _runs({0: (SIZES, 100.0 / SIZES + 5.0), 1: (SIZES, 100.0 * SIZES**-0.7)})
    p = AutoPredictor().fit(Observations(runs=runs))
    assert p.chosen_models() == {0: "amdahl", 1: "power-law"}
    pred = p.predict(_queries(1, [32, 64]))
    np.testing.assert_allclose(pred.time_s, 100.0 * np.array([32.0, 64.0]) ** -0.7, rtol=1e-9)
    amdahl = p.predict(_queries(0, [32]))
    assert amdahl.time_s[0] == pytest.approx(100.0 / 32 + 5.0)


def test_reliability_needs_agreement_small_error_and_bounded_extrapolation() -> None:
    """On a pure power law the Amdahl yardstick parts from it beyond the data: rows
    far out are unreliable (disagreement > 0.15), rows past 4x the largest size too."""
    runs = _runs({1: (SIZES, 100.0 * SIZES**-0.7)})
    p = AutoPredictor().fit(Observations(runs=runs))
    model = p.model_of(1)
    n = np.array([16, 24, 64, 65, 200])
    pred = p.predict(_queries(1, n.tolist()))
    gap = model.disagreement(n.astype(float))
    expected = (gap <= 0.15) & (n <= 64)
    assert pred.reliable.tolist() == expected.tolist()
    assert not expected.all() and expected[0]
    np.testing.assert_allclose(pred.uncertainty, np.expm1(gap))


def test_too_few_sizes_are_unreliable_and_auto_fluid_resolves() -> None:
    runs = _runs({0: (np.array([2.0, 4.0]), np.array([10.0, 6.0]))})
    p = AutoPredictor().fit(Observations(runs=runs))
    assert not p.predict(_queries(0, [4, 8])).reliable.any()
    composite = get_predictor("auto+fluid")
    assert type(composite.node_predictor).__name__ == "AutoPredictor"
