"""The DVFS family: formulas, calibration, optimal frequency, online regression, predictors."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from predictors.base import RUN_COLUMNS, Observations, Queries
from predictors.dvfs import (
    ONLINE_FEATURES,
    FluidParams,
    FluidPredictor,
    NaiveDvfsPredictor,
    NodeTypeDvfsPredictor,
    OnlineDvfsPredictor,
    PerAppDvfsPredictor,
    benchmark_power_constants,
    calibrate_fluid,
    fit_alpha,
    fit_online_model,
    fit_power_law,
    fluid_power,
    fluid_profile,
    fluid_time_factor,
    optimal_freq,
    optimal_x_analytic,
)
from predictors.testing import make_case

FREQS = np.array([1.2, 1.5, 1.8, 2.1, 2.4])


@pytest.mark.parametrize(
    "ps,pd_,alpha", [(100.0, 120.0, 0.6), (60.0, 200.0, 1.0), (150.0, 40.0, 0.05)]
)
def test_calibration_is_the_inverse_of_the_model(ps, pd_, alpha):
    fmin, fmax = 1.2, 2.4
    d_max = 500.0
    d_min = d_max * float(fluid_time_factor(fmin / fmax, alpha))
    p_min = float(fluid_power(fmin / fmax, ps, pd_))
    p_max = float(fluid_power(1.0, ps, pd_))
    got = calibrate_fluid(fmin, fmax, d_min, d_max, p_min, p_max)
    assert got.pstatic_w == pytest.approx(ps)
    assert got.pdyn_w == pytest.approx(pd_)
    assert got.alpha == pytest.approx(alpha)
    # fit_alpha on the same two runs is the same formula
    assert fit_alpha(np.array([0.5, 1.0]), np.array([d_min, d_max])) == pytest.approx(alpha)
    assert fit_power_law(np.array([0.5, 1.0]), np.array([p_min, p_max])) == pytest.approx((ps, pd_))


def test_calibration_rejects_bad_frequencies():
    with pytest.raises(ValueError):
        calibrate_fluid(2.4, 1.2, 1, 1, 1, 1)


@pytest.mark.parametrize("seed", range(6))
def test_optimal_frequency_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    prm = FluidParams(rng.uniform(20, 200), rng.uniform(30, 200), rng.uniform(0.05, 1.0))
    # discrete: the P-state with the smallest energy, computed directly
    energy = [
        (prm.pstatic_w + prm.pdyn_w * (f / 2.4) ** 2) * ((1 - prm.alpha) + prm.alpha * 2.4 / f)
        for f in FREQS
    ]
    assert optimal_freq(FREQS, prm) == pytest.approx(FREQS[int(np.argmin(energy))])
    # continuous: the analytic root against a fine grid of x in [0.5, 1]
    xs = np.linspace(0.5, 1.0, 200001)
    e = fluid_power(xs, prm.pstatic_w, prm.pdyn_w) * fluid_time_factor(xs, prm.alpha)
    assert optimal_x_analytic(prm, xmin=0.5) == pytest.approx(xs[int(np.argmin(e))], abs=1e-4)


def test_optimal_x_edge_cases():
    assert optimal_x_analytic(FluidParams(100, 0, 0.5)) == 1.0  # no dynamic power: run fast
    assert optimal_x_analytic(FluidParams(100, 100, 0.0), xmin=0.5) == 0.5  # time flat: run slow
    assert optimal_x_analytic(FluidParams(1000, 1, 1.0)) == 1.0  # static dominates


def test_profile_columns_and_energy():
    prof = fluid_profile(100.0, FREQS, FluidParams(100, 100, 0.5), nodes=4)
    assert list(prof.columns) == ["freq_ghz", "time_s", "power_w", "energy_j"]
    row = prof.iloc[-1]
    assert row.time_s == pytest.approx(100.0) and row.power_w == pytest.approx(200.0)
    np.testing.assert_allclose(prof.energy_j, prof.time_s * prof.power_w * 4)


def test_online_regression_recovers_coefficients():
    rng = np.random.default_rng(1)
    feats = np.column_stack(
        [
            rng.uniform(1e8, 3e9, 40),
            rng.uniform(0, 1, 40),
            rng.uniform(1, 50, 40),
            rng.uniform(0, 1, 40),
            rng.uniform(20, 150, 40),
        ]
    )
    coef = np.array(
        [
            [50.0, 80.0, 0.9],
            [1e-8, 2e-8, 1e-10],
            [30.0, -20.0, -0.3],
            [0.5, 0.2, -0.004],
            [-10.0, 5.0, 0.1],
            [0.3, 0.6, -0.001],
        ]
    )
    targets = coef[0] + feats @ coef[1:]
    model = fit_online_model(feats, targets)
    np.testing.assert_allclose(model.coef, coef, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(model.predict(feats[:3]), targets[:3], rtol=1e-9)


def _online_runs(n_apps=30, seed=2):
    """Each app: one run at Fmax and one at Fmin; (Ps, Pd, alpha) linear in its Fmax counters."""
    rng = np.random.default_rng(seed)
    coef = np.array(
        [
            [80.0, 60.0, 0.2],
            [1e-9, 2e-9, 1e-10],
            [20.0, 10.0, -0.2],
            [0.4, 0.8, 0.005],
            [-15.0, 30.0, 0.3],
            [0.2, 0.3, 0.002],
        ]
    )
    rows = []
    for a in range(n_apps):
        f_max = np.array(
            [
                rng.uniform(5e8, 2e9),
                rng.uniform(0, 0.5),
                rng.uniform(1, 20),
                rng.uniform(0, 0.6),
                rng.uniform(30, 90),
            ]
        )
        f_min = f_max * rng.uniform(0.5, 1.0, 5)
        ps, pd_, alpha = coef[0] + f_max @ coef[1:]
        for f, feats in ((2.4, f_max), (1.2, f_min)):
            x = f / 2.4
            t = 100.0 * ((1 - alpha) + alpha / x)
            p = ps + pd_ * x**2
            rows.append(
                dict(
                    job_id=len(rows),
                    application=a,
                    submit_s=float(len(rows)),
                    node_type="node",
                    nodes=2,
                    cores=4,
                    freq_ghz=f,
                    time_s=t,
                    power_w=p,
                    energy_j=t * p * 2,
                    ctr_instructions_per_s=feats[0],
                    ctr_llc_miss_ratio=feats[1],
                    ctr_mem_bandwidth_gbs=feats[2],
                    ctr_stall_ratio=feats[3],
                    rapl_power_w=feats[4],
                    instructions=1e12,
                    requested_nodes=2,
                    requested_time_s=np.nan,
                )
            )
    return pd.DataFrame(rows)[list(RUN_COLUMNS)], coef


@pytest.mark.parametrize("per_node_type", [True, False])
def test_online_predictor_recovers_linear_coefficients(per_node_type):
    runs, coef = _online_runs()
    case = make_case()
    p = OnlineDvfsPredictor(per_node_type=per_node_type).fit(
        Observations(runs=runs, platform=case.platform)
    )
    got = p.coefficients("node", "fmax").coef
    expected = coef.copy()
    if not per_node_type:  # generic: Pstatic with the node type's mean idle power removed
        idle = np.mean([s.idle_power_w for s in case.platform.node_types[0].pstates])
        expected[0, 0] -= idle
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-9)
    # incremental: the same coefficients when the runs arrive in two batches
    q = make_case().platform
    u = OnlineDvfsPredictor(per_node_type=per_node_type).fit(
        Observations(runs=runs.iloc[:20], platform=q)
    )
    u.update(runs.iloc[20:])
    np.testing.assert_allclose(u.coefficients("node", "fmax").coef, got, rtol=1e-6, atol=1e-9)


def test_fluid_predictor_exact_on_noise_free_runs():
    case = make_case(noise=0.0)
    p = FluidPredictor().fit(case.observations)
    nt = case.platform.node_types[0]
    for app in range(4):
        model = p.model_of(app)
        assert model.alpha == pytest.approx(case.truth.alpha[app], rel=1e-6)
        prm = p.params_for(model, "node")
        assert prm.pstatic_w == pytest.approx(case.truth.pstatic_w[app], rel=1e-6)
        truth = FluidParams(
            case.truth.pstatic_w[app], case.truth.pdyn_w[app], case.truth.alpha[app]
        )
        assert p.optimal_freq(app) == optimal_freq(np.array(nt.freqs_ghz), truth)
        prof = p.profile(app, 100.0, nodes=2)
        np.testing.assert_allclose(prof.energy_j, prof.time_s * prof.power_w * 2)
    # relative time between frequencies of a new job is exact
    j = int(case.jobs.index[(case.jobs.application == 1)][-1])
    q = Queries(
        application=[1, 1],
        nodes=[4, 4],
        freq_ghz=[1.2, 2.4],
        requested_nodes=[4, 4],
        requested_time_s=[1000, 1000],
    )
    pred = p.predict(q)
    t, _ = case.truth.evaluate(np.array([j, j]), nt, np.array([4, 4]), np.array([1.2, 2.4]))
    assert pred.time_s[0] / pred.time_s[1] == pytest.approx(t[0] / t[1], rel=1e-6)


def test_family_power_sources():
    case = make_case(noise=0.0)
    obs = case.observations
    naive = NaiveDvfsPredictor().fit(obs)
    per_type = NodeTypeDvfsPredictor().fit(obs)
    per_app = PerAppDvfsPredictor().fit(obs)
    # naive uses the first benchmark ("cpu-bound": 120 + 110 x^2 in the synthetic suite)
    assert naive.type_power_["*"] == pytest.approx((120.0, 110.0))
    # per node type, mean of all benchmarks' constants
    assert per_type.type_power_["node"] == pytest.approx(
        (np.mean([120, 95, 105, 90]), np.mean([110, 70, 95, 50]))
    )
    assert per_app.model_of(0).power["node"] == pytest.approx(
        (case.truth.pstatic_w[0], case.truth.pdyn_w[0])
    )
    # all three: duration ~ 1/f
    q = Queries(application=[0, 0], nodes=[2, 2], freq_ghz=[1.2, 2.4])
    for p in (naive, per_type, per_app):
        pred = p.predict(q)
        assert pred.time_s[0] / pred.time_s[1] == pytest.approx(2.0)


def test_power_constants_without_benchmarks_use_pstates():
    case = make_case()
    from predictors.baselines import PlatformInfo

    info = PlatformInfo(case.platform)
    consts = benchmark_power_constants(pd.DataFrame(), info)
    assert consts["node"] == pytest.approx((110.0, 119.0), abs=0.01)
    assert consts["*"] == pytest.approx((110.0, 119.0), abs=0.01)


def test_fluid_prior_alpha_for_single_frequency_apps():
    case = make_case(noise=0.0)
    runs = case.observations.runs
    only_fmax = runs[(runs.application != 3) | (runs.freq_ghz == 2.4)]
    p = FluidPredictor().fit(
        Observations(
            runs=only_fmax, benchmarks=case.observations.benchmarks, platform=case.platform
        )
    )
    assert np.isnan(p.model_of(3).alpha)
    assert p.params_for(p.model_of(3), "node").alpha == pytest.approx(np.mean(case.truth.alpha[:3]))
    pred = p.predict(Queries(application=[3], nodes=[2], freq_ghz=[1.2]))
    assert not pred.reliable[0]


def test_online_alpha_extrapolated_beyond_its_training_is_flagged(caplog):
    """A new application whose counters lie far beyond the training
    applications' gets a regressed alpha outside [0, 1]: it is clipped as
    before, but its predictions are marked unreliable and it is logged once."""
    runs, coef = _online_runs()
    case = make_case()
    p = OnlineDvfsPredictor().fit(Observations(runs=runs, platform=case.platform))
    # one run at Fmax (no training sample of its own): stall ratio 5 instead of <= 0.6
    new = runs[(runs.application == 0) & (runs.freq_ghz == 2.4)].copy()
    new["application"], new["job_id"] = 99, 10_000
    new["ctr_stall_ratio"] = 5.0
    p.update(new)
    feats = new[list(ONLINE_FEATURES)].to_numpy()[0]
    raw_alpha = coef[0, 2] + feats @ coef[1:, 2]
    assert raw_alpha > 1.5  # worked from the regression's coefficients: far outside [0, 1]
    assert p.params_for(p.model_of(99), "node").alpha == 1.0  # clipped, as before
    q = Queries(application=[99, 0, 99], nodes=[2, 2, 4], freq_ghz=[1.2, 1.2, 2.4])
    with caplog.at_level(logging.WARNING, logger="predictors.dvfs"):
        pred = p.predict(q)
        p.predict(q)
    assert pred.reliable.tolist() == [False, True, False]
    warned = [r for r in caplog.records if "regressed alpha of application 99" in r.getMessage()]
    assert len(warned) == 1
