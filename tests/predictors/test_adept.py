"""Tests of ADEPT (docs/background/models.md, section 2.2): fit_downey, the envelope algebra and AdeptPredictor."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from energysched.errors import ConfigError
from predictors.adept import (
    AdeptPredictor,
    _grid_argmin,
    _grid_wssre,
    _speedup,
    fit_downey,
)
from predictors.adept_envelope import (
    envelope,
    inv_speedup,
    normalised_pair_solutions,
    pair_sigma,
)
from predictors.base import RUN_COLUMNS, Observations, Predictor, Queries

# ----------------------------------------------------------------------------- the model


def _table_speedup(n: float, A: float, s: float) -> float:
    """docs/background/models.md, section 1.1 tables, written out literally (scalar reference)."""
    if s <= 1:
        if n <= A:
            return A * n / (A + s / 2 * (n - 1))
        if n <= 2 * A - 1:
            return A * n / (s * (A - 0.5) + n * (1 - s / 2))
        return A
    if n <= A + A * s - s:
        return n * A * (s + 1) / (s * (n + A - 1) + A)
    return A


@pytest.mark.parametrize(
    "A,s", [(1.0, 0.3), (7.5, 0.0), (20, 0.5), (20, 1.0), (13, 1.7), (40, 3.0)]
)
def test_speedup_matches_the_tables_of_models_md(A: float, s: float) -> None:
    n = np.arange(1, 200, dtype=float)
    ref = np.array([_table_speedup(x, A, s) for x in n])
    np.testing.assert_allclose(_speedup(n, A, s), ref, rtol=1e-12)


def test_speedup_continuous_and_modes_agree_at_sigma_one() -> None:
    n = np.linspace(1, 100, 2000)
    np.testing.assert_allclose(_speedup(n, 17.0, 1.0), _speedup(n, 17.0, 1.0 + 1e-12), rtol=1e-9)
    for s in (0.4, 1.6):
        S = _speedup(n, 17.0, s)
        assert np.all(np.diff(S) >= -1e-12)  # no declining part
        assert np.max(np.abs(np.diff(S))) < 0.1  # continuous (fine grid, bounded slope)


def test_speedup_agrees_with_the_workloads_model_when_present() -> None:
    downey = pytest.importorskip("workloads.models.downey")
    n = np.arange(1, 120, dtype=float)
    for A, s in ((20, 0.5), (13, 1.7), (5, 0.0)):
        np.testing.assert_allclose(_speedup(n, A, s), downey.downey_speedup(n, A, s), rtol=1e-12)


# ----------------------------------------------------------------------------- closed forms


def _normalised(n: np.ndarray, A: float, s: float) -> np.ndarray:
    """Runtimes in normalised units (T(1) = A, flat = 1)."""
    return A * inv_speedup(n, A, s)


@pytest.mark.parametrize(
    "combo,A,s,ni,nj",
    [
        ("L1-L1", 30.0, 0.6, 4.0, 20.0),
        ("L1-L1", 30.0, 0.6, 1.0, 20.0),
        ("L2-L2", 20.0, 0.5, 24.0, 36.0),
        ("L1-L2", 20.0, 0.5, 8.0, 30.0),
        ("L1-L2", 20.0, 0.8, 1.0, 30.0),
        ("H1-H1", 20.0, 1.5, 8.0, 40.0),
        ("H1-H1", 10.0, 3.0, 2.0, 30.0),
    ],
)
def test_normalised_point_forms_reproduce_A_and_sigma_exactly(combo, A, s, ni, nj) -> None:
    ti, tj = _normalised(np.array([ni, nj]), A, s)
    sols = {p.combo: p for p in normalised_pair_solutions(ni, ti, nj, tj)}
    assert combo in sols
    p = sols[combo]
    assert p.point
    assert p.A_lo == pytest.approx(A, rel=1e-9) and p.A_hi == pytest.approx(A, rel=1e-9)
    assert p.s_lo == pytest.approx(s, rel=1e-9, abs=1e-12)


def test_normalised_point_forms_widen_by_delta_like_models_md() -> None:
    A, s, ni, nj = 30.0, 0.6, 4.0, 20.0
    ti, tj = _normalised(np.array([ni, nj]), A, s)
    p = {q.combo: q for q in normalised_pair_solutions(ni, ti, nj, tj, delta=0.05)}["L1-L1"]
    assert (p.s_lo, p.s_hi) == pytest.approx((0.95 * s, 1.05 * s))
    assert (p.A_lo, p.A_hi) == pytest.approx(
        (ni * ti * 0.95 - s * (ni - 1) / 2, ni * ti * 1.05 - s * (ni - 1) / 2)
    )


@pytest.mark.parametrize(
    "combo,A,s,ni,nj",
    [
        ("L1-L3", 10.0, 0.4, 4.0, 30.0),
        ("L2-L3", 10.0, 0.4, 14.0, 30.0),
        ("L3-L3", 6.0, 0.4, 14.0, 30.0),
        ("H1-H2", 10.0, 2.0, 8.0, 60.0),
        ("H2-H2", 5.0, 2.0, 20.0, 60.0),
    ],
)
def test_normalised_curve_forms_contain_the_truth(combo, A, s, ni, nj) -> None:
    ti, tj = _normalised(np.array([ni, nj]), A, s)
    sols = {p.combo: p for p in normalised_pair_solutions(ni, ti, nj, tj)}
    assert combo in sols
    p = sols[combo]
    assert not p.point
    assert p.A_lo - 1e-6 <= A <= p.A_hi + 1e-6
    assert p.s_lo - 1e-6 <= s <= p.s_hi + 1e-6


@pytest.mark.parametrize(
    "key,A,s,ni,nj",
    [
        ("L", 20.0, 0.5, 4.0, 16.0),  # L1-L1
        ("L", 20.0, 0.5, 8.0, 30.0),  # L1-L2
        ("L", 20.0, 0.5, 24.0, 36.0),  # L2-L2
        ("L", 20.0, 0.5, 8.0, 64.0),  # L1-L3
        ("L", 20.0, 0.5, 30.0, 64.0),  # L2-L3
        ("H11", 20.0, 1.5, 8.0, 40.0),
        ("H12", 20.0, 1.5, 8.0, 80.0),
    ],
)
def test_scale_free_pair_forms_pass_through_the_truth(key, A, s, ni, nj) -> None:
    T = 1234.0 * inv_speedup(np.array([ni, nj]), A, s)  # arbitrary scale
    sol, ok = pair_sigma(ni, nj, np.array(T[0] / T[1]), np.array(A))[key]
    assert bool(ok)
    assert float(sol) == pytest.approx(s, rel=1e-9)


def test_envelope_contains_the_truth_and_drops_contained_boxes() -> None:
    n = np.array([4.0, 8.0, 16.0, 32.0])
    t = 500.0 * inv_speedup(n, 20.0, 0.5)
    env = envelope(n, t)
    assert env.explained and env.delta == 0.05
    assert any(b.A_lo <= 20.0 <= b.A_hi and b.s_lo <= 0.5 <= b.s_hi for b in env.boxes)
    for i, b in enumerate(env.boxes):
        assert not any(o.contains(b) for j, o in enumerate(env.boxes) if j != i)


def test_envelope_delta_loop_grows_until_explained() -> None:
    n = np.array([4.0, 8.0, 16.0, 32.0])
    t = 500.0 * inv_speedup(n, 20.0, 0.5) * np.array([1.0, 1.15, 1.0, 1.0])
    env = envelope(n, t, delta=0.01, delta_max=0.64)
    assert env.delta > 0.01 and env.explained
    assert env.best_error <= env.delta


# ----------------------------------------------------------------------------- fitting

CASES = [
    # (A, sigma, nodes) -- points reaching beyond the first piece so (A, sigma) is identifiable
    (20.0, 0.5, [8, 24, 32]),
    (20.0, 0.5, [4, 16, 24, 32]),
    (10.0, 0.2, [4, 8, 12, 16]),
    (50.0, 0.8, [16, 48, 64, 96]),
    (32.0, 2.0, [8, 32, 64, 96]),
    (16.0, 1.5, [4, 16, 24, 40]),
    (8.0, 3.0, [2, 8, 16, 32]),
]


@pytest.mark.parametrize("with_t1", [False, True])
@pytest.mark.parametrize("A,s,nodes", CASES)
def test_recovers_A_and_sigma_from_exact_points(A, s, nodes, with_t1) -> None:
    n = np.array(nodes, dtype=float)
    L = 777.0
    fit = fit_downey(
        n, L / _speedup(n, A, s), [2.5 * n.max()], serial_runtime=L if with_t1 else None
    )
    assert fit.A[0] == pytest.approx(A, rel=0.01)
    assert fit.sigma[0] == pytest.approx(s, rel=0.01)
    assert fit.L[0] == pytest.approx(L, rel=0.01)
    if len(nodes) + with_t1 <= 3:
        # three points for three parameters: the fit is exact whatever the data, so
        # (issue 14) it warns even when it recovers the truth
        assert [w.code for w in fit.warnings] == ["exact_fit"]
    else:
        assert fit.reliable


@pytest.mark.parametrize("A,s,nodes", CASES)
def test_predicts_extrapolations_beyond_twice_the_largest_n(A, s, nodes) -> None:
    n = np.array(nodes, dtype=float)
    targets = np.array([2.2, 3.0, 4.0]) * n.max()
    fit = fit_downey(n, 100.0 / _speedup(n, A, s), targets)
    np.testing.assert_allclose(fit.runtimes, 100.0 / _speedup(targets, A, s), rtol=0.01)
    np.testing.assert_allclose(fit.speedups, _speedup(targets, A, s), rtol=0.01)


def test_derived_quantities() -> None:
    n = np.array([4.0, 16.0, 24.0, 32.0])
    fit = fit_downey(n, 100.0 / _speedup(n, 20.0, 0.5), [64])
    tf = fit.fits[0]
    assert tf.max_useful_n == pytest.approx(2 * tf.A - 1)
    assert "working_set" not in tf.__dict__  # computed when first read (refits never read it)
    nn = np.arange(1, 200, dtype=float)
    val = _speedup(nn, tf.A, tf.sigma) ** 2 / nn
    assert tf.working_set == int(nn[np.argmax(val)])
    hv = fit_downey(
        np.array([8.0, 32.0, 64.0, 96.0]),
        100.0 / _speedup(np.array([8.0, 32, 64, 96]), 32, 2.0),
        [128],
    )
    assert hv.max_useful_n[0] == pytest.approx(hv.A[0] + hv.A[0] * hv.sigma[0] - hv.sigma[0])


def test_weights_follow_the_formula() -> None:
    n = np.array([2.0, 4.0, 8.0, 16.0])
    fit = fit_downey(n, 100.0 / _speedup(n, 20.0, 0.5), [10], q=2.0)
    d = np.abs(10 - n)
    np.testing.assert_allclose(fit.fits[0].weights, 2 * d.max() - d)


def test_repeated_sizes_drop_outliers_and_average() -> None:
    n1 = np.array([4.0, 8.0, 16.0, 32.0])
    t1 = 100.0 / _speedup(n1, 20.0, 0.5)
    n = np.concatenate([n1, [8.0, 8.0, 8.0]])
    t = np.concatenate([t1, [t1[1] * 1.02, t1[1] * 0.98, t1[1] * 3.0]])
    fit = fit_downey(n, t, [64])
    assert fit.dropped == 1
    np.testing.assert_array_equal(fit.obs_nodes, n1)
    assert fit.obs_runtimes[1] == pytest.approx(t1[1])
    assert fit.A[0] == pytest.approx(20.0, rel=0.01)


def test_grid_argmin_is_the_brute_force_argmin() -> None:
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = np.sort(rng.choice(np.arange(1, 80), 4, replace=False)).astype(float)
        A, s = rng.uniform(2, 60), rng.uniform(0, 3)
        t = inv_speedup(n, A, s) * (1 + rng.normal(0, 0.05, 4))
        W = rng.uniform(0.1, 3, 4)
        Av = np.linspace(A * 0.85, A * 1.15, 40)
        sv = np.linspace(max(0.0, s * 0.8), s * 1.2 + 0.1, 50)
        full = _grid_wssre(n, t, W, Av, sv)
        i, j, w = _grid_argmin(n, t, W, Av, sv)
        assert w == pytest.approx(full.min(), rel=1e-9, abs=1e-12)
        assert full[i, j] == pytest.approx(full.min(), rel=1e-9, abs=1e-12)


def test_broadcast_grid_gives_the_same_fit() -> None:
    n = np.array([4.0, 8.0, 16.0, 32.0])
    t = 100.0 / _speedup(n, 16.0, 1.5) * np.array([1.0, 1.03, 0.98, 1.01])
    a = fit_downey(n, t, [64])
    b = fit_downey(n, t, [64], grid="broadcast", n_2d=200)
    c = fit_downey(n, t, [64], n_2d=200)
    assert (b.A[0], b.sigma[0]) == (c.A[0], c.sigma[0])
    assert a.A[0] == pytest.approx(b.A[0], rel=0.01)


def test_deterministic() -> None:
    n = np.array([4.0, 8.0, 16.0, 32.0])
    t = 100.0 / _speedup(n, 16.0, 1.5) * np.array([1.0, 1.03, 0.98, 1.01])
    a, b = fit_downey(n, t, [64, 8]), fit_downey(n, t, [64, 8])
    np.testing.assert_array_equal(a.A, b.A)
    np.testing.assert_array_equal(a.runtimes, b.runtimes)


@pytest.mark.parametrize(
    "nodes,runtimes,kw",
    [
        ([4], [1.0], {}),
        ([4, 4], [1.0, 1.1], {}),
        ([4, 8], [1.0, -1.0], {}),
        ([0, 8], [1.0, 1.0], {}),
        ([4, 8], [1.0, np.nan], {}),
        ([4, 8, 16], [1.0, 0.6, 0.4], {"grid": "nope"}),
    ],
)
def test_bad_input_raises(nodes, runtimes, kw) -> None:
    with pytest.raises(ValueError):
        fit_downey(nodes, runtimes, [8], **kw)


# ----------------------------------------------------------------------------- anomalies, patterns


@pytest.mark.parametrize("factor,where", [(1.5, 2), (0.6, 3), (1.4, 1)])
def test_injected_anomaly_is_detected_and_down_weighted(factor, where) -> None:
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    t = 1000.0 / _speedup(n, 24.0, 0.6)
    t[where] *= factor
    fit = fit_downey(n, t, [64], epsilon=0.1, phi=10.0, theta=5.0)
    assert fit.anomaly == where
    D = fit.anomaly_deviation
    assert D is not None and D > 0
    d = np.abs(64 - n)
    W = 2 * d.max() - d
    expected = max(0.0, W[where] * (5.0 - min(10.0, D)) / 10.0)
    assert fit.fits[0].weights[where] == pytest.approx(expected)
    assert fit.fits[0].weights[where] < W[where]
    assert "anomaly" in [x.code for x in fit.notes]
    assert fit.A[0] == pytest.approx(24.0, rel=0.02)


def test_weight_reduction_formula_partial() -> None:
    """A mild anomaly (D < theta) keeps part of its weight, per W' = W (theta - min(phi, D)) / phi."""
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    t = 1000.0 / _speedup(n, 24.0, 0.6)
    t[2] *= 1.5
    fit = fit_downey(n, t, [64], epsilon=0.5, theta=10.0, phi=10.0, poor_fit=0.1)
    assert fit.anomaly == 2
    D = fit.anomaly_deviation
    d = np.abs(64 - n)
    W = 2 * d.max() - d
    assert 0 < fit.fits[0].weights[2] == pytest.approx(W[2] * (10.0 - min(10.0, D)) / 10.0)


def test_exact_irregularly_spaced_points_are_not_anomalies() -> None:
    n = np.array([2.0, 4.0, 5.0, 10.0, 20.0])  # the R test alone rises at 4 -> 5 -> 10
    fit = fit_downey(n, 1000.0 / _speedup(n, 12.0, 0.3), [30])
    assert fit.anomaly is None
    assert fit.A[0] == pytest.approx(12.0, rel=0.01)


def test_stepwise_scalability_uses_the_phase_of_the_target() -> None:
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    phase1 = 1000.0 / _speedup(n, 8.0, 0.5)
    phase2 = 300.0 / _speedup(n, 40.0, 0.5)
    t = np.where(n <= 8, phase1, phase2)
    fit = fit_downey(n, t, [128.0, 3.0])
    assert fit.phases is not None
    np.testing.assert_array_equal(fit.obs_nodes[fit.phases[0]], [1, 2, 4, 8])
    np.testing.assert_array_equal(fit.obs_nodes[fit.phases[1]], [16, 32, 64])
    assert "stepwise" in [x.code for x in fit.notes]
    assert fit.runtimes[0] == pytest.approx(300.0 / _speedup(128.0, 40.0, 0.5), rel=0.02)
    assert fit.runtimes[1] == pytest.approx(1000.0 / _speedup(3.0, 8.0, 0.5), rel=0.02)
    assert set(fit.fits[0].points.tolist()) == {4, 5, 6}


def test_specially_optimised_sizes_are_kept_and_reported() -> None:
    n = np.arange(2, 19, dtype=float)
    t = 1000.0 / _speedup(n, 24.0, 0.5)
    pw = (n.astype(int) & (n.astype(int) - 1)) == 0
    t[pw] *= 0.7
    fit = fit_downey(n, t, [16.0, 12.0])
    assert fit.feasible_sizes is not None
    np.testing.assert_array_equal(fit.feasible_sizes, [1, 2, 4, 8, 16, 32])
    assert set(fit.obs_nodes[fit.fits[0].points].tolist()) == {2, 4, 8, 16}
    assert fit.runtimes[0] == pytest.approx(700.0 / _speedup(16.0, 24.0, 0.5), rel=0.01)
    assert "target_not_optimised" in [w.code for w in fit.fits[1].warnings]
    assert "target_not_optimised" not in [w.code for w in fit.fits[0].warnings]


# ----------------------------------------------------------------------------- reliability


def _codes(fit) -> list[str]:
    return [w.code for w in fit.warnings]


def test_warning_all_linear_asks_for_n_at_least_A() -> None:
    n = np.array([2.0, 4.0, 8.0])
    fit = fit_downey(n, 100.0 / _speedup(n, 40.0, 0.5), [16])
    w = next(w for w in fit.warnings if w.code == "all_linear")
    assert w.suggested_n is not None and w.suggested_n >= min(fit.A[0], 2 * fit.A[0] + 99)
    assert w.suggested_n > n.max()
    assert not fit.reliable


def test_warning_poor_fit_on_non_downey_data() -> None:
    n = np.array([2.0, 4.0, 8.0, 16.0])
    fit = fit_downey(n, np.array([10.0, 12.0, 9.0, 15.0]), [32], poor_fit=0.10)
    assert "poor_fit" in _codes(fit)
    assert fit.fits[0].max_rel_error > 0.10


def test_no_warning_on_a_good_fit() -> None:
    n = np.array([4.0, 16.0, 24.0, 32.0])
    fit = fit_downey(n, 100.0 / _speedup(n, 20.0, 0.5) * np.array([1.01, 0.99, 1.0, 1.01]), [48])
    assert _codes(fit) == []


def test_warning_runner_up_suggests_an_observation_outside_the_range() -> None:
    # Amdahl-like points only: instances with very different A explain them equally well
    n = np.array([2.0, 4.0, 8.0])
    fit = fit_downey(n, 100.0 / _speedup(n, 40.0, 0.5), [16])
    w = next(w for w in fit.warnings if w.code == "runner_up")
    A2, s2, L2 = fit.fits[0].runner_up
    assert max(A2 / fit.A[0], fit.A[0] / A2) > 1.5
    assert w.suggested_n is not None and not (n.min() <= w.suggested_n <= n.max())
    # the two instances really differ there
    p1 = fit.L[0] / _speedup(w.suggested_n, fit.A[0], fit.sigma[0])
    p2 = L2 / _speedup(w.suggested_n, A2, s2)
    assert abs(p1 - p2) / min(p1, p2) > 0.01
    assert fit.suggested_n is not None


# ----------------------------------------------------------------------------- predictor


APPS = {0: (24.0, 0.6), 1: (12.0, 1.8), 2: (16.0, 0.3)}
K = 1e-8  # seconds per instruction on one node


def _runs(seed: int = 0, overestimate: float = 1.5) -> pd.DataFrame:
    """Runs built from the Downey formulas: job j of app a, work w_j, time = K w_j / S_a(n)."""
    rng = np.random.default_rng(seed)
    rows = []
    jid = 0
    for app, (A, s) in APPS.items():
        sizes = [2, 4, 8, 16, 32] if app != 2 else [4, 8]
        for _rep in range(2):
            for n in sizes:
                w = float(rng.uniform(1e11, 5e11))
                t = K * w / float(_speedup(n, A, s))
                rows.append(
                    dict(
                        job_id=jid,
                        application=app,
                        submit_s=float(jid),
                        node_type="std",
                        nodes=n,
                        cores=16,
                        freq_ghz=2.4,
                        time_s=t,
                        power_w=200.0,
                        energy_j=t * 200.0 * n,
                        rapl_power_w=150.0,
                        instructions=w,
                        requested_nodes=n,
                        requested_time_s=overestimate * t,
                    )
                )
                jid += 1
    df = pd.DataFrame(rows)
    for c in RUN_COLUMNS:
        if c not in df:
            df[c] = np.nan
    return df[list(RUN_COLUMNS)]


def _queries(
    app: int, nodes: np.ndarray, work: float, req_n: int, overestimate: float = 1.5
) -> tuple[Queries, np.ndarray]:
    A, s = APPS[app]
    truth = K * work / _speedup(nodes.astype(float), A, s)
    req_t = overestimate * K * work / float(_speedup(req_n, A, s))
    k = len(nodes)
    q = Queries(
        application=np.full(k, app),
        nodes=nodes,
        freq_ghz=np.full(k, 2.4),
        node_type=np.full(k, "std", dtype=object),
        requested_nodes=np.full(k, req_n),
        requested_time_s=np.full(k, req_t),
    )
    return q, truth


def test_predictor_scales_the_learned_shape_to_a_new_job() -> None:
    p = AdeptPredictor().fit(Observations(runs=_runs()))
    for app in (0, 1):
        nodes = np.array([1, 2, 8, 20, 48, 64, 100])
        q, truth = _queries(app, nodes, work=3.3e11, req_n=8)
        pred = p.predict(q)
        np.testing.assert_allclose(pred.time_s, truth, rtol=0.01)
        assert pred.reliable.all()
        np.testing.assert_allclose(pred.energy_j, pred.time_s * pred.power_w * nodes)
    m = p.model_of(0)
    assert m.A == pytest.approx(24.0, rel=0.01) and m.sigma == pytest.approx(0.6, rel=0.01)


def test_predictor_frequency_rule_is_fmax_over_f() -> None:
    p = AdeptPredictor().fit(Observations(runs=_runs()))
    q, _ = _queries(0, np.array([8, 8]), work=3e11, req_n=8)
    q.freq_ghz = np.array([2.4, 1.2])
    pred = p.predict(q)
    assert pred.time_s[1] == pytest.approx(2 * pred.time_s[0])
    assert pred.power_w[1] == pred.power_w[0]


def test_predictor_falls_back_below_min_observations() -> None:
    """Two sizes: ADEPT's first piece (the Amdahl fit), unreliable; unknown app: the contract fallback."""
    from predictors.baselines import AmdahlPredictor

    obs = Observations(runs=_runs())
    p = AdeptPredictor().fit(obs)
    q, _ = _queries(2, np.array([4, 8, 16]), work=3e11, req_n=8)  # app 2 has two sizes only
    pred = p.predict(q)
    assert not pred.reliable.any()
    np.testing.assert_allclose(pred.time_s, AmdahlPredictor().fit(obs).predict(q).time_s, rtol=1e-9)
    q.application = np.full(3, 99)  # unknown application
    unknown = p.predict(q)
    assert not unknown.reliable.any()
    np.testing.assert_allclose(unknown.time_s, Predictor.fallback(q).time_s)


def test_predictor_unreliable_when_a_warning_fires() -> None:
    runs = _runs()
    runs = runs[~((runs.application == 0) & (runs.nodes > 8))]  # app 0 (A=24): all points linear
    p = AdeptPredictor().fit(Observations(runs=runs))
    q, _ = _queries(0, np.array([4, 64]), work=3e11, req_n=8)
    assert not p.predict(q).reliable.any()
    assert "all_linear" in [w.code for w in p.model_of(0).fit.warnings]


def test_predictor_update_refits_only_changed_applications() -> None:
    runs = _runs()
    p = AdeptPredictor(refit_tol=0.0).fit(Observations(runs=runs))
    assert p.n_refits_ == 2  # apps 0 and 1 (app 2 falls back)
    m1 = p.model_of(1)
    new = _runs(seed=5)
    new = new[new.application == 0].iloc[:3]
    p.update(new)
    assert p.n_refits_ == 3
    assert p.model_of(1) is m1
    # a run that changes no averaged normalised time (nor the target size): cached fit reused
    only = runs[runs.application == 1].drop_duplicates("nodes")
    p3 = AdeptPredictor().fit(Observations(runs=only))
    count, cached = p3.n_refits_, p3.model_of(1)
    p3.update(only[only.nodes == 8])  # same tau at n=8 (the median requested size)
    assert p3.n_refits_ == count
    assert p3.model_of(1) is cached


def test_refit_tolerance_and_size_limit() -> None:
    runs = _runs()
    app0 = runs[runs.application == 0]
    p = AdeptPredictor().fit(Observations(runs=runs))  # refit_tol = 2 %
    count, cached = p.n_refits_, p.model_of(0)
    # a run 1 % slower at n = 8 moves that size's average by 0.5 %: fit reused
    slow = app0[app0.nodes == 8].iloc[:1].copy()
    slow["time_s"] *= 1.01
    p.update(slow)
    assert p.n_refits_ == count and p.model_of(0) is cached
    # 10 % slower moves it by more than 2 %: refitted
    slower = app0[app0.nodes == 8].iloc[:1].copy()
    slower["time_s"] *= 1.3
    p.update(slower)
    assert p.n_refits_ == count + 1 and p.model_of(0) is not cached
    # a new node count always refits
    new_size = app0[app0.nodes == 32].iloc[:1].copy()
    new_size["nodes"] = 64
    new_size["time_s"] *= float(_speedup(32, *APPS[0]) / _speedup(64, *APPS[0]))
    p.update(new_size)
    assert p.n_refits_ == count + 2
    # 12 distinct sizes: the fit sees the 8 nearest the target (median requested size 8)
    sizes = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    many = pd.concat([app0.iloc[:1].assign(nodes=n) for n in sizes], ignore_index=True)
    many["time_s"] = [
        K * w / float(_speedup(n, *APPS[0])) for n, w in zip(sizes, many.instructions)
    ]
    many["requested_nodes"] = 8
    fit = AdeptPredictor().fit(Observations(runs=many)).model_of(0).fit
    assert fit.obs_nodes.tolist() == [1, 2, 3, 4, 6, 8, 12, 16]
    full = AdeptPredictor(max_sizes=None).fit(Observations(runs=many)).model_of(0).fit
    assert full.obs_nodes.tolist() == sizes
    with pytest.raises(ConfigError):
        AdeptPredictor(max_sizes=2)


def test_predictor_update_equals_fit_on_everything() -> None:
    runs = _runs()
    q, _ = _queries(1, np.array([2, 16, 50]), work=2e11, req_n=16)
    full = AdeptPredictor().fit(Observations(runs=runs)).predict(q)
    part = AdeptPredictor().fit(Observations(runs=runs.iloc[:12])).update(runs.iloc[12:]).predict(q)
    np.testing.assert_allclose(part.time_s, full.time_s)


def test_predictor_per_target_mode() -> None:
    p = AdeptPredictor(per_target=True).fit(Observations(runs=_runs()))
    nodes = np.array([2, 8, 64, 100, 64])
    q, truth = _queries(1, nodes, work=3.3e11, req_n=8)
    pred = p.predict(q)
    np.testing.assert_allclose(pred.time_s, truth, rtol=0.01)
    assert set(p.model_of(1).per_target) >= {2.0, 8.0, 64.0, 100.0}


def test_predictor_picklable_and_deterministic() -> None:
    obs = Observations(runs=_runs())
    q, _ = _queries(0, np.array([2, 8, 64]), work=3e11, req_n=8)
    p = AdeptPredictor().fit(obs)
    a = p.predict(q)
    b = pickle.loads(pickle.dumps(p)).predict(q)
    c = AdeptPredictor().fit(obs).predict(q)
    np.testing.assert_array_equal(a.time_s, b.time_s)
    np.testing.assert_array_equal(a.time_s, c.time_s)


def test_predictor_init_stores_params_only() -> None:
    p = AdeptPredictor(min_observations=4, n_1d=1000)
    assert p.get_params()["min_observations"] == 4
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(p))


def test_check_predictor_conformance() -> None:
    testing = pytest.importorskip("predictors.testing")
    testing.check_predictor(AdeptPredictor)
