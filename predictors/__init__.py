"""Black-box predictors: fit on observations, predict time, power and energy.

The contract (:mod:`predictors.base`) is scikit-learn style: ``fit(observations)
-> self``, ``update(new_runs) -> self``, ``predict(queries) -> Prediction``.
Built-ins: LBM (:mod:`predictors.lbm`), ADEPT (:mod:`predictors.adept`), the
DVFS family (:mod:`predictors.dvfs`), baselines (:mod:`predictors.baselines`)
and node-count x frequency composites (:mod:`predictors.composite`).
:func:`get_predictor` resolves names, entry points and ``module:Class``;
:func:`predictors.testing.check_predictor` checks a third-party predictor.

The names below load on first use (PEP 562): ``import predictors.job_length``
(what every backfilling policy needs) does not import scipy through ADEPT.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module that defines it
_HOMES: dict[str, str] = {
    "AdeptFit": "predictors.adept",
    "AdeptPredictor": "predictors.adept",
    "fit_downey": "predictors.adept",
    "BENCHMARK_COLUMNS": "predictors.base",
    "COUNTER_COLUMNS": "predictors.base",
    "RUN_COLUMNS": "predictors.base",
    "GridShape": "predictors.base",
    "Observations": "predictors.base",
    "Prediction": "predictors.base",
    "Predictor": "predictors.base",
    "Queries": "predictors.base",
    "AmdahlPredictor": "predictors.baselines",
    "OraclePredictor": "predictors.baselines",
    "PerApplicationPredictor": "predictors.baselines",
    "RequestedPredictor": "predictors.baselines",
    "CompositePredictor": "predictors.composite",
    "FluidPredictor": "predictors.dvfs",
    "NaiveDvfsPredictor": "predictors.dvfs",
    "NodeTypeDvfsPredictor": "predictors.dvfs",
    "OnlineDvfsPredictor": "predictors.dvfs",
    "PerAppDvfsPredictor": "predictors.dvfs",
    "optimal_freq": "predictors.dvfs",
    "evaluate_predictors": "predictors.evaluate",
    "format_mape_table": "predictors.evaluate",
    "LbmPredictor": "predictors.lbm",
    "LbmResult": "predictors.lbm",
    "lbm_surrogate": "predictors.lbm",
    "DEFAULT_PREDICTOR": "predictors.registry",
    "get_predictor": "predictors.registry",
    "list_predictors": "predictors.registry",
    "check_predictor": "predictors.testing",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'predictors' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
