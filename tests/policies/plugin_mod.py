"""A plug-in policy and predictor, loaded by dotted path in the CLI test
(``tests.policies.plugin_mod:MyPolicy`` / ``tests.policies.plugin_mod:MyPredictor``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from policies.backfilling import QueuePolicy
from policies.choosers import PredictiveChooser
from predictors.base import Observations, Prediction, Predictor, Queries


class MyPredictor(Predictor):
    """Perfect speedup from the requested time, fully CPU-bound, flat 200 W per node."""

    name = "my-predictor"

    def __init__(self, power_w: float = 200.0) -> None:
        self.power_w = power_w

    def fit(self, observations: Observations) -> MyPredictor:
        self.observations_ = observations
        self.seen_ = 0
        return self

    def update(self, new_runs: pd.DataFrame) -> MyPredictor:
        self.seen_ += len(new_runs)
        return self

    def predict(self, queries: Queries) -> Prediction:
        self._check_fitted()
        fb = self.fallback(queries, self.observations_.platform)
        power = np.full(len(queries), self.power_w)
        return Prediction(
            fb.time_s, power, fb.time_s * power * queries.nodes, np.ones(len(queries), bool)
        )


class MyPolicy(QueuePolicy):
    """EASY with the minimum-predicted-time size; ``key`` is an opaque parameter."""

    def __init__(self, predictor: Any = None, key: str = "default") -> None:
        super().__init__(
            backfill="easy",
            chooser=PredictiveChooser(
                predictor=predictor or MyPredictor(), size="min-time", min_runs=0
            ),
            name="my-policy",
        )
        self.key = key

    def params(self) -> dict[str, Any]:
        return {**super().params(), "key": self.key}
