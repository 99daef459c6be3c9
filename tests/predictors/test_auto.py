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
    m = select_model(SIZES, 100.0 / SIZES + 5.0, exact_scores=True)
    assert m.chosen == "amdahl" and m.bounded == frozenset()
    assert m.scores["amdahl"] < 1e-9 and m.scores["power-law"] > 0.05
    assert float(m.tau(64.0)) == pytest.approx(100.0 / 64 + 5.0)


def test_a_losing_candidate_stops_at_a_lower_bound_worked_by_hand() -> None:
    """On tau = 100/n + 5 Amdahl scores ~0, so the power law cannot win (its bar is
    0.8 x ~0): its scoring stops after the first size left out, the smallest (the
    outermost first), and its entry is that error over the 5 sizes (the others counted
    as 0), a lower bound of its full score. ADEPT stops as well. The choice, the
    chosen score and the fitted model are those of the full scoring."""
    tau = 100.0 / SIZES + 5.0
    m = select_model(SIZES, tau)
    full = select_model(SIZES, tau, exact_scores=True)
    line = fit_power_law(SIZES[1:], tau[1:])  # the power law without n = 1
    first_error = abs(math.log(float(line.tau(1.0)) / tau[0]))
    assert m.bounded == {"power-law", "adept"}
    assert m.scores["power-law"] == pytest.approx(first_error / 5, rel=1e-12)
    assert m.scores["power-law"] <= full.scores["power-law"]
    assert m.scores["adept"] <= full.scores["adept"]
    assert m.chosen == full.chosen == "amdahl"
    assert m.scores["amdahl"] == full.scores["amdahl"] and m.model == full.model
    assert m.loo_error == full.loo_error


def _curve(rng: np.random.Generator, sizes: np.ndarray) -> np.ndarray:
    """A noisy strong-scaling curve of one of the three shapes (or a non-monotone one)."""
    kind = rng.integers(4)
    if kind == 0:
        tau = rng.uniform(10, 1000) / sizes + rng.uniform(0, 50)
    elif kind == 1:
        tau = rng.uniform(10, 1000) * sizes ** -rng.uniform(0.2, 1.0)
    elif kind == 2:
        tau = 1000.0 / _speedup(sizes, rng.uniform(2, 200), rng.uniform(0, 2))
    else:
        tau = rng.uniform(1, 100, len(sizes))
    return tau * rng.lognormal(0.0, rng.choice([0.0, 0.02, 0.2]), len(sizes))


def test_stopping_the_losers_keeps_the_choice_on_many_curves() -> None:
    """On 120 random curves (3 to 10 sizes, several runs per size, some targets
    inside the data): the choice, the fitted model, the yardsticks and the chosen score
    are bit for bit those of the full scoring; every complete score is the full one;
    every stopped score is at most the full one and at least margin x some earlier
    complete score (the choice's, at least their smallest)."""
    rng = np.random.default_rng(19)
    stopped = 0
    for _ in range(120):
        count = int(rng.integers(3, 11))
        sizes = np.unique(rng.integers(1, 257, count)).astype(float)
        nodes = np.repeat(sizes, rng.integers(1, 3, len(sizes)))
        tau = _curve(rng, nodes)
        target = float(rng.choice(nodes)) if rng.random() < 0.5 else None
        kw = {"target": target, "margin": float(rng.choice([0.8, 0.5, 1.0]))}
        m = select_model(nodes, tau, **kw)
        full = select_model(nodes, tau, exact_scores=True, **kw)
        assert (m.chosen, m.model, m.yardsticks) == (full.chosen, full.model, full.yardsticks)
        assert m.loo_error == full.loo_error or math.isnan(full.loo_error)
        assert list(m.scores) == list(full.scores) and full.bounded == frozenset()
        assert m.chosen not in m.bounded
        for k, name in enumerate(m.scores):
            if name not in m.bounded:
                assert m.scores[name] == full.scores[name]
                continue
            stopped += 1
            earlier = [m.scores[c] for c in list(m.scores)[:k] if c not in m.bounded]
            assert kw["margin"] * min(earlier) <= m.scores[name] <= full.scores[name]
    assert stopped > 50  # the bound did bite


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


def test_predictor_choice_is_that_of_the_full_scoring_of_its_runs() -> None:
    """Per application, the predictor's model is select_model's with every candidate
    fully scored, on the application's runs (several per size, the target the
    median requested size): the same choice, chosen score and fitted model."""
    rng = np.random.default_rng(7)
    curves = {}
    for app in range(40):
        sizes = np.unique(rng.integers(1, 129, int(rng.integers(3, 10)))).astype(float)
        nodes = np.repeat(sizes, rng.integers(1, 4, len(sizes)))
        curves[app] = (nodes, _curve(rng, nodes))
    p = AutoPredictor().fit(Observations(runs=_runs(curves)))
    for app, (nodes, tau) in curves.items():
        target = float(np.round(np.median(nodes)))  # requested_nodes = nodes
        at_fmax = tau / 1.0 * 2.4 / 2.4  # time / work * f / Fmax, as the predictor computes
        full = select_model(nodes, at_fmax, target=target, exact_scores=True)
        got = p.model_of(app)
        assert (got.chosen, got.model, got.loo_error) == (full.chosen, full.model, full.loo_error)
        assert got.yardsticks == full.yardsticks
    models = [p.model_of(app) for app in curves]
    assert any(m.bounded for m in models) and len({m.chosen for m in models}) == 3


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
