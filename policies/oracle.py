"""Oracle twins: the same policy driven by the ground truth, and the regret against it.

Any predictor-driven policy runs with ``predictor="oracle"``: its chooser
builds :class:`~predictors.baselines.OraclePredictor` from the ground truth
handed to ``setup(..., truth=...)``. The oracle twin of a run is the same run
spec with ``predictor="oracle"`` (:func:`oracle_twin`); :func:`regret`
compares the two results.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def oracle_twin(spec: Any) -> Any:
    """A copy of a run spec (any dataclass with a ``predictor`` field) using the oracle."""
    return dataclasses.replace(spec, predictor="oracle")


def _rel(value: float, reference: float) -> float:
    if reference == 0 or not (math.isfinite(value) and math.isfinite(reference)):
        return math.nan
    return (value - reference) / reference


def regret(result: Any, oracle_result: Any) -> dict[str, float]:
    """Relative regret of a run against its oracle twin (0.05 = 5 % worse).

    Keys: ``energy_regret`` (total energy), ``busy_energy_regret``,
    ``makespan_regret``, ``mean_wait_regret``, ``mean_bsld_regret``, and the
    absolute figures of both runs (``energy_j``, ``oracle_energy_j``,
    ``makespan_s``, ``oracle_makespan_s``). Positive = the predictor-driven
    run is worse than the oracle-driven one.
    """
    s, o = result.summary, oracle_result.summary
    out = {
        "energy_regret": _rel(s["energy_j"], o["energy_j"]),
        "busy_energy_regret": _rel(s["energy_busy_j"], o["energy_busy_j"]),
        "makespan_regret": _rel(s["makespan_s"], o["makespan_s"]),
        "mean_wait_regret": _rel(s["mean_wait_s"], o["mean_wait_s"]),
        "mean_bsld_regret": _rel(s["mean_bsld"], o["mean_bsld"]),
        "energy_j": float(s["energy_j"]),
        "oracle_energy_j": float(o["energy_j"]),
        "makespan_s": float(s["makespan_s"]),
        "oracle_makespan_s": float(o["makespan_s"]),
    }
    return out


def prediction_mape(jobs: Any) -> dict[str, float]:
    """MAPE (%) of the decisions' predictions against the measured truth, from a jobs table.

    Over the jobs that completed (not killed: a killed job's runtime is its
    limit, not its truth) and have a prediction: ``time_mape_pct``
    (``predicted_runtime_s`` vs ``runtime_s``), ``energy_mape_pct``
    (``predicted_energy_j`` vs ``energy_j``), ``power_mape_pct``
    (``predicted_power_w`` vs ``power_w``) and ``predicted_jobs``.
    MAPE = mean of ``|measured - predicted| / measured * 100``.
    """
    done = (jobs["status"] == "completed").to_numpy()
    out: dict[str, float] = {}
    for key, pred_col, true_col in (
        ("time_mape_pct", "predicted_runtime_s", "runtime_s"),
        ("energy_mape_pct", "predicted_energy_j", "energy_j"),
        ("power_mape_pct", "predicted_power_w", "power_w"),
    ):
        p = jobs[pred_col].to_numpy(dtype=float)
        m = jobs[true_col].to_numpy(dtype=float)
        ok = done & np.isfinite(p) & np.isfinite(m) & (m > 0)
        out[key] = float(np.mean(np.abs(m[ok] - p[ok]) / m[ok]) * 100) if ok.any() else math.nan
        if key == "time_mape_pct":
            out["predicted_jobs"] = int(ok.sum())
    return out
