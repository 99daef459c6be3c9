"""DVFS calibration on curves that do not follow the fluid model (issue 14).

Hand-built runs: an alpha above 1 is an anomaly (logged, not reliable, refitted
on [0, 1]), T(Fmax) and P(Fmax) are anchored on the measured Fmax runs, the
power exponent is fitted from three clocks.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest

from predictors.base import RUN_COLUMNS, Observations, Queries
from predictors.dvfs import (
    FluidPredictor,
    calibrate_dvfs_curve,
    fit_power_exponent,
)
from predictors.testing import make_platform
from workloads.models.fluid import fluid_alpha_anomalous, fluid_calibrate


def _runs(points, app=0, nodes=2, work=1e12, requested_time_s=500.0):
    """One application's runs: ``points`` = [(freq_ghz, time_s, power_w)], same job size and work."""
    rows = []
    for j, (f, t, p) in enumerate(points):
        rows.append(
            {
                "job_id": j,
                "application": app,
                "submit_s": float(j),
                "node_type": "node",
                "nodes": nodes,
                "cores": 4,
                "freq_ghz": f,
                "time_s": t,
                "power_w": p,
                "energy_j": t * p * nodes,
                "ctr_instructions_per_s": 1e9,
                "ctr_llc_miss_ratio": 0.1,
                "ctr_mem_bandwidth_gbs": 5.0,
                "ctr_stall_ratio": 0.2,
                "rapl_power_w": 50.0,
                "instructions": work,
                "requested_nodes": nodes,
                "requested_time_s": requested_time_s,
            }
        )
    return pd.DataFrame(rows)[list(RUN_COLUMNS)]


# --------------------------------------------------------------------------- alpha anomaly

# Fmax = 2.4, Fmin = 1.2: alpha = (T(Fmin)/T(Fmax) - 1) / (Fmax/Fmin - 1) = (230/100 - 1) / 1 = 1.3
ANOMALOUS = [(2.4, 100.0, 229.0), (1.2, 230.0, 126.25)]


def test_fluid_calibrate_warns_on_alpha_above_one(caplog):
    with caplog.at_level(logging.WARNING, logger="workloads.models.fluid"):
        alpha, _, _ = fluid_calibrate(230.0, 100.0, 126.25, 229.0, 1.2, 2.4)
    assert alpha == pytest.approx(1.3)
    assert fluid_alpha_anomalous(alpha)
    assert "outside [0, 1]" in caplog.text
    # noise-level excursions (within 0.05) and in-range values are not anomalies
    assert not fluid_alpha_anomalous(1.04) and not fluid_alpha_anomalous(0.5)
    assert fluid_alpha_anomalous(-0.06) and not fluid_alpha_anomalous(math.nan)


def test_curve_calibration_flags_and_refits_alpha_above_one(caplog):
    f, t, p = (np.array(c) for c in zip(*ANOMALOUS))
    with caplog.at_level(logging.WARNING, logger="predictors.dvfs"):
        cal = calibrate_dvfs_curve(f, t, p, label="kernel")
    assert not cal.reliable
    assert cal.params.alpha == 1.0  # the constrained least squares on [0, 1]: the bound
    assert any("1.3 outside [0, 1]" in n for n in cal.notes)
    assert "kernel" in caplog.text and "unreliable" in caplog.text
    # anchored at Fmax: T(Fmax) is the measured 100 s; T(Fmin) = 100 * 2 with alpha = 1
    assert cal.time_s(2.4) == 100.0
    assert cal.time_s(1.2) == pytest.approx(200.0)


def test_curve_calibration_three_clocks_least_squares():
    # runs at x = 1, 0.75, 0.5: T = 100 (1 - a + a / x) with a = 0.6 exactly
    a = 0.6
    f = np.array([2.4, 1.8, 1.2])
    t = 100.0 * (1 - a + a * 2.4 / f)
    cal = calibrate_dvfs_curve(f, t, np.array([229.0, 176.9375, 136.75]))
    assert cal.reliable and cal.params.alpha == pytest.approx(a, rel=1e-12)


def test_fluid_predictor_flags_an_anomalous_application(caplog):
    obs = Observations(runs=_runs(ANOMALOUS), platform=make_platform())
    with caplog.at_level(logging.WARNING, logger="predictors.dvfs"):
        p = FluidPredictor().fit(obs)
    model = p.model_of(0)
    assert model.anomaly and model.alpha == 1.0  # not 1.2 (the former silent clip)
    assert p.anomalous_applications() == [0]
    assert "outside [0, 1]" in caplog.text
    pred = p.predict(Queries(application=[0, 0], nodes=[2, 2], freq_ghz=[1.2, 2.4]))
    assert not pred.reliable.any()
    # an application whose runs follow the model is reliable, and not listed
    good = _runs([(2.4, 100.0, 229.0), (1.2, 180.0, 126.25)], app=1)  # alpha = 0.8
    p2 = FluidPredictor().fit(Observations(runs=good, platform=make_platform()))
    assert p2.anomalous_applications() == [] and p2.model_of(1).alpha == pytest.approx(0.8)
    assert p2.predict(Queries(application=[1], nodes=[2], freq_ghz=[1.2])).reliable.all()


# --------------------------------------------------------------------------- Fmax anchoring

# three clocks that no fluid curve passes through (T against Fmax/f = 1, 4/3, 2 has
# slopes 75 then 97.5): a least-squares fit of T = p + q Fmax/f misses T(Fmax);
# anchored, alpha = (0.25/3 + 0.9) / (1/9 + 1) = 0.885 (inside [0, 1])
OFF_MODEL = [(2.4, 100.0, 229.0), (1.8, 125.0, 176.9), (1.2, 190.0, 136.75)]


def test_fluid_predictor_reproduces_its_measured_fmax_run():
    obs = Observations(runs=_runs(OFF_MODEL), platform=make_platform())
    p = FluidPredictor().fit(obs)
    q = Queries(
        application=[0], nodes=[2], freq_ghz=[2.4], requested_nodes=[2], requested_time_s=[500.0]
    )
    pred = p.predict(q)
    assert pred.reliable.all()
    assert pred.time_s[0] == pytest.approx(100.0, rel=1e-12)
    assert pred.power_w[0] == pytest.approx(229.0, rel=1e-12)
    # the same anchored alpha as the curve calibration (and its backtest):
    # (0.25/3 + 0.9) / (1/9 + 1) = 0.885, so T(1.2 GHz) = 100 (0.115 + 0.885 * 2) = 188.5
    f, t, pw = (np.array(c) for c in zip(*OFF_MODEL))
    assert p.model_of(0).alpha == pytest.approx(0.885, rel=1e-12)
    assert p.model_of(0).alpha == pytest.approx(calibrate_dvfs_curve(f, t, pw).params.alpha)
    q2 = Queries(
        application=[0], nodes=[2], freq_ghz=[1.2], requested_nodes=[2], requested_time_s=[500.0]
    )
    assert p.predict(q2).time_s[0] == pytest.approx(188.5, rel=1e-12)


def test_curve_calibration_anchors_time_and_power_at_fmax():
    f, t, p = (np.array(c) for c in zip(*OFF_MODEL))
    for fit_pcoef in (True, False):
        cal = calibrate_dvfs_curve(f, t, p, fit_pcoef=fit_pcoef)
        assert cal.time_s(2.4) == 100.0
        assert float(cal.power_w(2.4)) == pytest.approx(229.0, rel=1e-12)
        assert cal.reliable and cal.params.alpha == pytest.approx(0.885)
    # without a run at the device's Fmax (given), T(Fmax) is fitted and noted
    cal = calibrate_dvfs_curve(f[1:], t[1:], p[1:], fmax=2.4)
    assert any("no run at Fmax" in n for n in cal.notes)


# --------------------------------------------------------------------------- power exponent


def test_power_exponent_fitted_from_three_clocks():
    # P = 50 + 100 x^3 at four clocks: the fit finds pcoef = 3, Pstatic 50, Pdyn 100
    x = np.array([0.5, 0.625, 0.75, 1.0])
    power = 50.0 + 100.0 * x**3
    ps, pd_, pcoef = fit_power_exponent(x, power)
    assert pcoef == pytest.approx(3.0, abs=1e-4)
    assert (ps, pd_) == pytest.approx((50.0, 100.0), rel=1e-4)
    # through the calibration (anchored at the Fmax run), and 2 with two clocks only
    f = 2.0 * x
    t = 10.0 / x
    cal = calibrate_dvfs_curve(f, t, power)
    assert cal.params.pcoef == pytest.approx(3.0, abs=1e-4)
    assert float(cal.power_w(1.0)) == pytest.approx(50.0 + 100.0 / 8, rel=1e-4)
    two = calibrate_dvfs_curve(f[[0, 3]], t[[0, 3]], power[[0, 3]])
    assert two.params.pcoef == 2.0
    # two-point anchored: Pdyn = (150 - 62.5) / (1 - 0.5^2), Pstatic = 150 - Pdyn
    assert two.params.pdyn_w == pytest.approx(87.5 / 0.75)
    with pytest.raises(ValueError, match="three distinct clocks"):
        fit_power_exponent(x[:2], power[:2])


def test_curve_calibration_rejects_a_single_clock():
    with pytest.raises(ValueError, match="two distinct"):
        calibrate_dvfs_curve(np.array([2.4, 2.4]), np.array([1.0, 1.1]), np.array([1.0, 1.0]))


def test_fluid_predictor_fits_the_power_exponent_from_three_clocks():
    # node power 50 + 100 x^3 at 2.4, 1.8, 1.2 GHz (x = 1, 0.75, 0.5); time follows alpha = 1
    pts = [(f, 100.0 * 2.4 / f, 50.0 + 100.0 * (f / 2.4) ** 3) for f in (2.4, 1.8, 1.2)]
    p = FluidPredictor().fit(Observations(runs=_runs(pts), platform=make_platform()))
    model = p.model_of(0)
    assert model.pcoef["node"] == pytest.approx(3.0, abs=1e-4)
    prm = p.params_for(model, "node")
    assert (prm.pstatic_w, prm.pdyn_w, prm.pcoef) == pytest.approx((50.0, 100.0, 3.0), rel=1e-4)
    # the unobserved 1.5 GHz: x = 0.625, P = 50 + 100 * 0.625^3
    pred = p.predict(Queries(application=[0], nodes=[2], freq_ghz=[1.5]))
    assert pred.power_w[0] == pytest.approx(50.0 + 100.0 * 0.625**3, rel=1e-4)
    # two clocks: the exponent stays the predictor's (2); fit_pcoef=False keeps it too
    two = FluidPredictor().fit(Observations(runs=_runs(pts[::2]), platform=make_platform()))
    assert not two.model_of(0).pcoef and two.params_for(two.model_of(0), "node").pcoef == 2.0
    fixed = FluidPredictor(fit_pcoef=False).fit(
        Observations(runs=_runs(pts), platform=make_platform())
    )
    assert fixed.params_for(fixed.model_of(0), "node").pcoef == 2.0
