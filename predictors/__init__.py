"""Black-box predictors: fit on observations, predict time, power and energy.

The contract (:mod:`predictors.base`) is scikit-learn style: ``fit(observations)
-> self``, ``update(new_runs) -> self``, ``predict(queries) -> Prediction``.
Built-ins: LBM (:mod:`predictors.lbm`), ADEPT (:mod:`predictors.adept`), the
DVFS family (:mod:`predictors.dvfs`), baselines (:mod:`predictors.baselines`)
and node-count x frequency composites (:mod:`predictors.composite`).
:func:`get_predictor` resolves names, entry points and ``module:Class``;
:func:`predictors.testing.check_predictor` checks a third-party predictor.
"""

from predictors.adept import AdeptFit, AdeptPredictor, fit_downey
from predictors.base import (
    BENCHMARK_COLUMNS,
    COUNTER_COLUMNS,
    RUN_COLUMNS,
    GridShape,
    Observations,
    Prediction,
    Predictor,
    Queries,
)
from predictors.baselines import (
    AmdahlPredictor,
    OraclePredictor,
    PerApplicationPredictor,
    RequestedPredictor,
)
from predictors.composite import CompositePredictor
from predictors.dvfs import (
    FluidPredictor,
    NaiveDvfsPredictor,
    NodeTypeDvfsPredictor,
    OnlineDvfsPredictor,
    PerAppDvfsPredictor,
    optimal_freq,
)
from predictors.evaluate import evaluate_predictors, format_mape_table
from predictors.lbm import LbmPredictor, LbmResult, lbm_surrogate
from predictors.registry import DEFAULT_PREDICTOR, get_predictor, list_predictors
from predictors.testing import check_predictor

__all__ = [
    "BENCHMARK_COLUMNS",
    "COUNTER_COLUMNS",
    "DEFAULT_PREDICTOR",
    "RUN_COLUMNS",
    "AdeptFit",
    "AdeptPredictor",
    "AmdahlPredictor",
    "CompositePredictor",
    "FluidPredictor",
    "GridShape",
    "LbmPredictor",
    "LbmResult",
    "NaiveDvfsPredictor",
    "NodeTypeDvfsPredictor",
    "Observations",
    "OnlineDvfsPredictor",
    "OraclePredictor",
    "PerAppDvfsPredictor",
    "PerApplicationPredictor",
    "Prediction",
    "Predictor",
    "Queries",
    "RequestedPredictor",
    "check_predictor",
    "evaluate_predictors",
    "fit_downey",
    "format_mape_table",
    "get_predictor",
    "lbm_surrogate",
    "list_predictors",
    "optimal_freq",
]
