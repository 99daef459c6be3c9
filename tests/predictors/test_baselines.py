"""Baselines, work scaling, fallback and incremental refits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from energysched.errors import ConfigError
from predictors.base import Observations, Queries
from predictors.baselines import AmdahlPredictor, OraclePredictor, RequestedPredictor, fit_amdahl
from predictors.composite import CompositePredictor
from predictors.dvfs import FluidPredictor
from predictors.testing import make_case


def test_fit_amdahl_exact():
    n = np.array([1, 2, 4, 8.0])
    m = fit_amdahl(n, 3.0 / n + 0.5)
    assert (m.a, m.b) == pytest.approx((3.0, 0.5))
    assert m.serial_fraction == pytest.approx(0.5 / 3.5)
    one = fit_amdahl(np.array([4.0, 4.0]), np.array([2.0, 2.0]))
    assert (one.a, one.b) == pytest.approx((8.0, 0.0))


def test_oracle_needs_job_index():
    case = make_case()
    p = OraclePredictor(case.truth).fit(case.observations)
    q = case.queries
    pred = p.predict(q)
    t, w = case.truth.evaluate(q.job_index, case.platform.node_types[0], q.nodes, q.freq_ghz)
    np.testing.assert_allclose(pred.time_s, t)
    np.testing.assert_allclose(pred.power_w, w)
    with pytest.raises(ConfigError, match="job_index"):
        p.predict(Queries(application=[0], nodes=[1], freq_ghz=[2.4]))
    with pytest.raises(ConfigError, match="truth"):
        OraclePredictor().fit(case.observations)


def test_requested_is_the_rigid_baseline():
    case = make_case()
    p = RequestedPredictor().fit(case.observations)
    q = Queries(
        application=[0, 0],
        nodes=[4, 8],
        freq_ghz=[2.4, 1.2],
        requested_nodes=[4, 4],
        requested_time_s=[1000.0, 1000.0],
    )
    pred = p.predict(q)
    assert pred.time_s == pytest.approx([1000.0, 1000.0 * 0.5 * 2])
    assert pred.power_w[0] == pytest.approx(229.0)
    assert pred.reliable.all()


def test_work_scaling_from_requested_time():
    case = make_case(noise=0.0)
    p = FluidPredictor().fit(case.observations)
    q = Queries(
        application=[0, 0, 0],
        nodes=[4, 4, 8],
        freq_ghz=[2.4] * 3,
        requested_nodes=[4, 4, 4],
        requested_time_s=[1000.0, 2000.0, 1000.0],
    )
    pred = p.predict(q)
    assert pred.time_s[1] == pytest.approx(2 * pred.time_s[0])  # twice the request, twice the time
    assert pred.time_s[2] == pytest.approx(pred.time_s[0] / 2)  # perfect speedup in the DVFS family
    # the request ratio: runs' time at the requested size and Fmax over their request
    rho = p.state_[0].rho
    assert pred.time_s[0] == pytest.approx(1000.0 * rho)
    assert 1 / 3.0 <= rho <= 1 / 1.2  # make_case requests 1.2x to 3x the true time


def test_unknown_application_falls_back_and_update_refits_only_its_application(monkeypatch):
    case = make_case()
    runs = case.observations.runs
    first = Observations(
        runs=runs[runs.application != 2],
        benchmarks=case.observations.benchmarks,
        platform=case.platform,
    )
    p = AmdahlPredictor().fit(first)
    q = Queries(
        application=[2], nodes=[4], freq_ghz=[2.4], requested_nodes=[4], requested_time_s=[500.0]
    )
    fb = p.predict(q)
    assert not fb.reliable[0] and fb.time_s[0] == pytest.approx(500.0)
    calls = []
    original = AmdahlPredictor._fit_app

    def spy(self, app, r, w):
        calls.append(app)
        return original(self, app, r, w)

    monkeypatch.setattr(AmdahlPredictor, "_fit_app", spy)
    p.update(runs[runs.application == 2])
    assert calls == [2]
    assert p.state_[2] is not None
    assert len(p.observations_.runs) == len(runs)
    # fit(all) and fit(part) + update(rest) agree
    full = AmdahlPredictor().fit(case.observations)
    np.testing.assert_allclose(
        p.predict(case.queries).time_s, full.predict(case.queries).time_s, rtol=1e-12
    )


def test_composite_combines_node_and_frequency():
    case = make_case(noise=0.0)
    c = CompositePredictor(AmdahlPredictor(), FluidPredictor()).fit(case.observations)
    a = AmdahlPredictor().fit(case.observations)
    f = FluidPredictor().fit(case.observations)
    q = Queries(
        application=[1, 1],
        nodes=[8, 8],
        freq_ghz=[1.2, 2.4],
        requested_nodes=[4, 4],
        requested_time_s=[900.0, 900.0],
    )
    pc, pa, pf = c.predict(q), a.predict(q), f.predict(q)
    assert pc.time_s[1] == pytest.approx(pa.time_s[1])  # at Fmax: the node predictor
    assert pc.time_s[0] / pc.time_s[1] == pytest.approx(
        pf.time_s[0] / pf.time_s[1]
    )  # slow-down: fluid
    np.testing.assert_allclose(pc.power_w, pf.power_w)
    np.testing.assert_allclose(pc.energy_j, pc.time_s * pc.power_w * 8)
    # the given sub-predictors are not fitted in place
    assert not hasattr(c.node_predictor, "state_")


def test_missing_columns_and_empty_observations():
    case = make_case()
    runs = case.observations.runs.drop(columns=["instructions", "rapl_power_w"])
    p = FluidPredictor().fit(Observations(runs=runs, platform=case.platform))
    assert np.all(np.isfinite(p.predict(case.queries).time_s))
    empty = AmdahlPredictor().fit(Observations())
    pred = empty.predict(case.queries)
    assert not pred.reliable.any() and np.all(pred.power_w == 200.0)
    assert (
        len(empty.predict(Queries(application=np.array([], dtype=int), nodes=[], freq_ghz=[]))) == 0
    )
    _ = pd


def test_a_model_with_no_positive_time_at_the_reference_falls_back() -> None:
    """A job's scale is its requested time over the model's time at its requested
    size and Fmax; a model whose time there is not positive gives no scale, and the
    job's rows get the fallback (before, a negative time there times a negative time
    elsewhere passed for a positive prediction). predict and predict_grid agree."""

    class NegativeAmdahl(AmdahlPredictor):  # fitted as Amdahl, then every time negative
        negative = False

        def _shape(self, app, model, node_type, nodes, freq_ghz):
            tau, power, reliable = super()._shape(app, model, node_type, nodes, freq_ghz)
            return (-np.asarray(tau) if self.negative else tau), power, reliable

    case = make_case()
    p = NegativeAmdahl().fit(case.observations)  # (its request ratios from positive times)
    p.negative = True
    ntype = case.platform.node_types[0]
    sizes = np.array([1, 2, 4, 8], dtype=np.int64)
    freqs = np.asarray(ntype.freqs_ghz, dtype=np.float64)
    app = int(case.observations.runs["application"].iloc[0])
    k = sizes.size * freqs.size
    queries = Queries(
        application=np.full(k, app),
        nodes=np.repeat(sizes, freqs.size),
        freq_ghz=np.tile(freqs, sizes.size),
        requested_nodes=np.full(k, 4.0),
        requested_time_s=np.full(k, 1800.0),
    )
    pred = p.predict(queries)
    fb = p.fallback(queries, case.platform)
    assert np.array_equal(pred.time_s, fb.time_s) and not pred.reliable.any()
    grid = p.predict_grid(app, ntype.name, sizes, freqs, 4.0, 1800.0)
    assert grid is not None
    assert np.array_equal(grid[0], pred.time_s.reshape(grid[0].shape))
