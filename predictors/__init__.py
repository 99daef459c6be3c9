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

import lazy_loader

# public names by the module that defines them, loaded on first access (lazy_loader)
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "adept": ["AdeptFit", "AdeptPredictor", "fit_downey"],
        "base": [
            "BENCHMARK_COLUMNS",
            "COUNTER_COLUMNS",
            "RUN_COLUMNS",
            "GridShape",
            "Observations",
            "Prediction",
            "Predictor",
            "Queries",
        ],
        "baselines": [
            "AmdahlPredictor",
            "OraclePredictor",
            "PerApplicationPredictor",
            "RequestedPredictor",
        ],
        "composite": ["CompositePredictor"],
        "dvfs": [
            "FluidPredictor",
            "NaiveDvfsPredictor",
            "NodeTypeDvfsPredictor",
            "OnlineDvfsPredictor",
            "PerAppDvfsPredictor",
            "optimal_freq",
        ],
        "evaluate": ["evaluate_predictors", "format_mape_table"],
        "lbm": ["LbmPredictor", "LbmResult", "lbm_surrogate"],
        "registry": ["DEFAULT_PREDICTOR", "get_predictor", "list_predictors"],
        "testing": ["check_predictor"],
    },
)
