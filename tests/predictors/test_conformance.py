"""check_predictor passes for every built-in predictor and catches broken ones."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from energysched.errors import NotFittedError
from predictors.base import Prediction, Predictor
from predictors.dvfs import FluidPredictor
from predictors.registry import BUILTINS, get_predictor
from predictors.testing import check_predictor, make_case

CASE = make_case()
_ADEPT = importlib.util.find_spec("predictors.adept") is not None


def _adept_ready() -> bool:
    if not _ADEPT:
        return False
    try:
        get_predictor("adept")
    except Exception:
        return False
    return True


NAMES = [n for n in BUILTINS if n != "adept"] + [
    "amdahl+fluid",
    "lbm+fluid",
    "amdahl+online-generic",
    "auto+fluid",
    "power-law+fluid",
]


@pytest.mark.parametrize("name", NAMES)
def test_builtin_predictors_conform(name):
    kwargs = {"truth": CASE.truth} if name == "oracle" else {}
    check_predictor(lambda: get_predictor(name, **kwargs), CASE.observations, CASE.queries)


@pytest.mark.parametrize("name", ["adept", "adept+fluid"])
def test_adept_conforms_once_it_exists(name):
    if not _adept_ready():
        pytest.skip("predictors.adept.AdeptPredictor is not available yet")
    check_predictor(lambda: get_predictor(name), CASE.observations, CASE.queries)


def test_instance_and_class_are_accepted():
    check_predictor(get_predictor("lbm", solver="nnls"))
    check_predictor(get_predictor("fluid").__class__)


def test_noisy_case_conforms():
    case = make_case(seed=3, noise=0.05, n_apps=6, runs_per_app=4)
    check_predictor(lambda: get_predictor("amdahl+fluid"), case.observations, case.queries)


class _Good(Predictor):
    """A minimal predictor that honours the contract (always the fallback)."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def fit(self, observations):
        self.observations_ = observations
        return self

    def predict(self, queries):
        self._check_fitted()
        return self.fallback(queries, self.observations_.platform)


class _BadEnergy(_Good):
    def predict(self, queries):
        p = super().predict(queries)
        return Prediction(
            p.time_s, p.power_w, p.time_s * p.power_w, p.reliable
        )  # forgets the nodes


class _NoNotFitted(_Good):
    def predict(self, queries):
        n = len(queries)
        return Prediction(np.ones(n), np.ones(n), np.ones(n) * queries.nodes, np.zeros(n, bool))


class _LearnsInInit(_Good):
    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self.cache_ = {}


class _Random(_Good):
    def predict(self, queries):
        p = super().predict(queries)
        t = p.time_s * np.random.default_rng().uniform(1, 2, len(p.time_s))
        return Prediction(t, p.power_w, t * p.power_w * queries.nodes, p.reliable)


class _CrashOnUnknown(_Good):
    def fit(self, observations):
        self.apps_ = set(observations.runs["application"].tolist())
        return super().fit(observations)

    def predict(self, queries):
        self._check_fitted()
        if not set(queries.application.tolist()) <= self.apps_:
            raise KeyError("unknown application")
        return super().predict(queries)


class _ReturnsNone(_Good):
    def fit(self, observations):
        super().fit(observations)
        return None


class _NaN(_Good):
    def predict(self, queries):
        p = super().predict(queries)
        p.time_s[0] = np.nan
        return Prediction(p.time_s, p.power_w, p.time_s * p.power_w * queries.nodes, p.reliable)


class _ReliableFallback(_Good):
    def predict(self, queries):
        p = super().predict(queries)
        return Prediction(p.time_s, p.power_w, p.energy_j, np.ones(len(p.time_s), bool))


class _WrongLength(_Good):
    def predict(self, queries):
        p = super().predict(queries)
        return Prediction(p.time_s[:-1], p.power_w[:-1], p.energy_j[:-1], p.reliable[:-1])


def test_minimal_predictor_passes():
    check_predictor(_Good)


@pytest.mark.parametrize(
    "cls,check",
    [
        (_BadEnergy, "units"),
        (_NoNotFitted, "not_fitted"),
        (_LearnsInInit, "init_params"),
        (_Random, "determinism"),
        (_CrashOnUnknown, "unknown_application"),
        (_ReturnsNone, "fit_returns_self"),
        (_NaN, "units"),
        (_ReliableFallback, "unknown_application"),
        (_WrongLength, "shapes"),
    ],
)
def test_broken_predictors_fail_with_the_check_named(cls, check):
    with pytest.raises(AssertionError, match=rf"check_predictor\[{check}\]"):
        check_predictor(cls)


def test_not_fitted_error_is_the_contract():
    with pytest.raises(NotFittedError):
        get_predictor("fluid").predict(CASE.queries)


class _ShapeOff(FluidPredictor):
    """grid_shape answers 1 % off predict (a wrong fast path the chooser would cache)."""

    def grid_shape(self, *args):
        got = super().grid_shape(*args)
        return None if got is None else (got[0], got[1] * 1.01)


class _GridOff(FluidPredictor):
    """predict_grid reports every cell reliable, whatever predict says."""

    def predict_grid(self, *args):
        got = super().predict_grid(*args)
        return None if got is None else (*got[:3], np.ones_like(got[3], dtype=bool))


@pytest.mark.parametrize(("cls", "what"), [(_ShapeOff, "grid_shape"), (_GridOff, "predict_grid")])
def test_wrong_fast_paths_fail_the_fast_paths_check(cls, what):
    with pytest.raises(AssertionError, match=rf"check_predictor\[fast_paths\]: {what}"):
        check_predictor(cls, CASE.observations, CASE.queries)
