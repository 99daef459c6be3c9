"""The ``hybrid`` predictor: contract, recovery of the hybrid model from a few runs, exploration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from predictors import get_predictor
from predictors.base import Observations, Queries
from predictors.hybrid import HybridPredictor
from predictors.testing import check_predictor
from simulator.platform import DEFAULT_PSTATES, NodeType, Platform
from workloads.models.hybrid import HybridApp, hybrid_evaluate, hybrid_power_figures


def test_conforms_to_the_predictor_contract():
    check_predictor(HybridPredictor)


def test_registered_by_name():
    assert isinstance(get_predictor("hybrid"), HybridPredictor)
    assert HybridPredictor.models_cores


PLATFORM = Platform(
    name="p",
    node_types=(NodeType(name="n", count=32, cores_per_node=16, pstates=DEFAULT_PSTATES),),
)
NT = PLATFORM.node_types[0]
APP = HybridApp(
    work_cycles=3e12,
    stall_cycles=1e12,
    mem_stall_cycles=2e11,
    kappa=0.6,
    messages=2000.0,
    message_bytes=1e5,
    cpu_utilisation=0.9,
)


def _truth(n, c, f):
    idle = NT.pstates[0].idle_power_w
    power = hybrid_power_figures(idle, NT.pstates[-1].busy_power_w - idle, 16)
    r = hybrid_evaluate(n, c, f, NT.fmax_ghz, APP, power, 12.5)
    return np.asarray(r.runtime_s, float), np.asarray(r.power_w, float)


def _runs(configs):
    n, c, f = (np.array(v, dtype=float) for v in zip(*configs))
    t, p = _truth(n, c, f)
    k = len(configs)
    return pd.DataFrame(
        {
            "job_id": np.arange(k),
            "application": np.zeros(k, dtype=np.int64),
            "submit_s": np.arange(k, dtype=float),
            "node_type": ["n"] * k,
            "nodes": n.astype(np.int64),
            "cores": c.astype(np.int64),
            "freq_ghz": f,
            "time_s": t,
            "power_w": p,
            "energy_j": t * p * n,
            "instructions": np.full(k, 1e12),
            "requested_nodes": np.full(k, 4, dtype=np.int64),
            "requested_time_s": np.full(k, float(_truth(4, 16, NT.fmax_ghz)[0]) * 1.5),
        }
    )


def test_exploration_then_prediction_recovers_the_hybrid_model():
    fmin, fmax = NT.pstates[0].freq_ghz, NT.fmax_ghz
    configs = [(4, 16, fmax)]
    p = HybridPredictor().fit(Observations(runs=_runs(configs), platform=PLATFORM))
    asked = []
    for _ in range(6):
        cfg = p.exploration(0, "n", 4, 32, 16, NT.freqs_ghz, [])
        if cfg is None:
            break
        asked.append(cfg)
        configs.append(cfg)
        p = HybridPredictor().fit(Observations(runs=_runs(configs), platform=PLATFORM))
    # the four calibration runs of the module docstring, then nothing more
    assert asked == [(4, 16, fmin), (4, 8, fmax), (2, 16, fmax), (4, 4, fmin)]
    assert p.models_[0].kind == "hybrid"
    grid = [(n, c, f) for n in (2, 4, 8) for c in (1, 4, 8, 12, 16) for f in NT.freqs_ghz]
    n, c, f = (np.array(v) for v in zip(*grid))
    q = Queries(
        application=np.zeros(len(grid), dtype=np.int64),
        nodes=n,
        freq_ghz=f,
        cores=c,
        requested_nodes=np.full(len(grid), 4),
        requested_time_s=np.full(len(grid), float(_truth(4, 16, fmax)[0]) * 1.5),
    )
    pred = p.predict(q)
    t, pw = _truth(n.astype(float), c.astype(float), f)
    assert pred.reliable.all()
    # noise-free runs: runtime within 3 %, power within 3 % everywhere on the grid
    assert np.max(np.abs(pred.time_s / t - 1)) < 0.03
    assert np.max(np.abs(pred.power_w / pw - 1)) < 0.03


def test_dimensions_not_observed_are_unreliable():
    fmax = NT.fmax_ghz
    p = HybridPredictor().fit(
        Observations(runs=_runs([(4, 16, fmax), (4, 16, fmax)]), platform=PLATFORM)
    )
    q = Queries(
        application=np.zeros(4, dtype=np.int64),
        nodes=np.array([4, 4, 4, 8]),
        freq_ghz=np.array([fmax, NT.pstates[0].freq_ghz, fmax, fmax]),
        cores=np.array([16, 16, 8, 16]),
        requested_nodes=np.full(4, 4),
        requested_time_s=np.full(4, 1000.0),
    )
    pred = p.predict(q)
    assert pred.reliable.tolist() == [True, False, False, False]
    # at the observed configuration the job's requested time times the request ratio
    ratio = float(_truth(4, 16, fmax)[0]) / (float(_truth(4, 16, fmax)[0]) * 1.5)
    assert pred.time_s[0] == pytest.approx(1000.0 * ratio, rel=1e-6)


def test_downey_fluid_application_is_fitted_by_the_amdahl_fluid_model():
    """T = L / S(n c / C) x ((1 - alpha) + alpha / x), power Pstatic + Pdyn x^2 c / C (first
    Downey piece, n c / C <= A): the Amdahl x Fluid columns reproduce it exactly."""
    a_par, sigma, alpha, work = 64.0, 0.8, 0.6, 1e12
    p_static, p_dyn = 95.0, 130.0
    fmax = NT.fmax_ghz

    def truth(n, c, f):
        n_eff = np.asarray(n, float) * np.asarray(c, float) / 16
        speedup = a_par * n_eff / (a_par + sigma / 2 * (n_eff - 1))
        x = np.asarray(f, float) / fmax
        t = 3e-9 * work / speedup * ((1 - alpha) + alpha / x)
        return t, p_static + p_dyn * x**2 * np.asarray(c, float) / 16

    configs = [(4, 16, fmax), (4, 16, 1.2), (4, 8, fmax), (2, 16, fmax), (4, 4, 1.2)]
    n, c, f = (np.array(v, dtype=float) for v in zip(*configs))
    t, p = truth(n, c, f)
    runs = _runs(configs).assign(time_s=t, power_w=p, energy_j=t * p * n)
    model = HybridPredictor().fit(Observations(runs=runs, platform=PLATFORM)).models_[0]
    assert model.kind == "amdahl-fluid"
    assert model.residual < 1e-6
    pred = HybridPredictor().fit(Observations(runs=runs, platform=PLATFORM))
    q_n, q_c, q_f = np.array([8, 3, 4]), np.array([12, 16, 2]), np.array([1.8, 2.4, 1.2])
    out = pred.predict(
        Queries(
            application=np.zeros(3, dtype=np.int64),
            nodes=q_n,
            freq_ghz=q_f,
            cores=q_c,
            requested_nodes=np.full(3, 4),
            requested_time_s=runs["requested_time_s"].to_numpy()[:3],
        )
    )
    want_t, want_p = truth(q_n, q_c, q_f)
    # every run has the same work (instructions), so the request ratio maps a job's
    # requested time back to exactly the runs' runtime at the requested size
    np.testing.assert_allclose(out.time_s, want_t, rtol=1e-6)
    np.testing.assert_allclose(out.power_w, want_p, rtol=0.02)
