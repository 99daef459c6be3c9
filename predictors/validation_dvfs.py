"""Backtest of the DVFS predictors on measured frequency curves.

A *curve* is one application on one device measured at several clocks:
rows ``curve_id, application, device, freq_mhz, time_s, power_w,
source_id`` (one row per measured clock; the corpus format of
``predictors/data/corpus/dvfs.csv``). :func:`backtest_dvfs` calibrates each
predictor from ``n_clocks`` of a curve's clocks, as a user would after a few
calibration runs, predicts time and power at the other clocks and scores
them; :func:`summarize_dvfs` condenses the rows per predictor.

**Which clocks calibrate** (deterministic): the curve's distinct clocks
sorted ascending ``f_0 < ... < f_(m-1)``; with ``k = n_clocks`` the clocks
of index ``floor(j (m - 1) / (k - 1) + 1/2)`` for ``j = 0 .. k-1``: always
the top clock ``Fmax`` and the lowest, the others evenly spread between
(``k = 3`` of 10 clocks: indices 0, 5, 9). Curves with at most
``n_clocks`` clocks have nothing to predict and give no rows.

**Predictors** (names; ``"x+y"`` means the DVFS part ``y`` of a composite):

* ``fluid`` (also ``dvfs-fluid``): the calibration of
  :func:`predictors.dvfs.calibrate_dvfs_curve` (anchored at ``Fmax``,
  ``alpha`` anomalies refitted, ``pcoef`` fitted from three clocks);
* ``fluid-p2``: the same with ``pcoef`` fixed at 2 (to see what fitting it buys);
* ``inverse-clock``: the baseline ``T = T(Fmax) Fmax / f`` anchored at the
  measured ``Fmax`` run, power from the same power fit as ``fluid``.

**Energy lost by the picked clock:** each calibration picks the clock of
least predicted energy ``T P`` among all the curve's measured clocks; the
loss is ``E(picked) / min E - 1`` with ``E = time_s * power_w`` measured
(in %). It is repeated on every row of its (curve, predictor, n_clocks).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from energysched.errors import ConfigError
from predictors.dvfs import CurveCalibration, calibrate_dvfs_curve, calibration_clock_indices

log = logging.getLogger(__name__)

#: Columns of a DVFS curve table.
CURVE_COLUMNS = ("curve_id", "application", "device", "freq_mhz", "time_s", "power_w", "source_id")
#: Columns of :func:`backtest_dvfs`'s rows (the first ten are the contract; then
#: the calibration's reliability and the energy figures of the picked clock).
ROW_COLUMNS = (
    "curve_id",
    "predictor",
    "n_clocks",
    "freq_mhz",
    "time_pred_s",
    "time_true_s",
    "time_error_pct",
    "power_pred_w",
    "power_true_w",
    "power_error_pct",
    "reliable",
    "picked_freq_mhz",
    "optimal_freq_mhz",
    "energy_loss_pct",
)

Calibrator = Callable[[np.ndarray, np.ndarray, np.ndarray, float, str], CurveCalibration]


def _fluid(f, t, p, fmax, label):
    return calibrate_dvfs_curve(f, t, p, fmax=fmax, time_law="fluid", label=label)


def _fluid_p2(f, t, p, fmax, label):
    return calibrate_dvfs_curve(f, t, p, fmax=fmax, time_law="fluid", fit_pcoef=False, label=label)


def _inverse_clock(f, t, p, fmax, label):
    return calibrate_dvfs_curve(f, t, p, fmax=fmax, time_law="inverse-clock", label=label)


#: Predictor name -> calibration of one curve (see the module docstring).
CALIBRATORS: dict[str, Calibrator] = {
    "fluid": _fluid,
    "dvfs-fluid": _fluid,
    "fluid-p2": _fluid_p2,
    "inverse-clock": _inverse_clock,
}


def _resolve(name: str) -> Calibrator:
    key = name.split("+")[-1]
    got = CALIBRATORS.get(key)
    if got is None:
        raise ConfigError(
            "predictors",
            f"no DVFS curve calibration for {name!r}; known: {', '.join(CALIBRATORS)}",
        )
    return got


def _check_curves(curves: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("curve_id", "freq_mhz", "time_s", "power_w") if c not in curves]
    if missing:
        raise ConfigError(
            "curves",
            f"DVFS curves lack columns {missing}; expected {', '.join(CURVE_COLUMNS)}",
        )
    out = curves.copy()
    for col in ("freq_mhz", "time_s", "power_w"):
        out[col] = pd.to_numeric(out[col], errors="coerce")
    bad = ~(np.isfinite(out["freq_mhz"]) & (out["freq_mhz"] > 0))
    bad |= ~(np.isfinite(out["time_s"]) & (out["time_s"] > 0))
    if bad.any():
        log.warning(
            "backtest_dvfs: %d rows without a positive clock and time are left out", int(bad.sum())
        )
        out = out[~bad]
    return out


def backtest_dvfs(curves: pd.DataFrame, predictors: list[str], n_clocks: int) -> pd.DataFrame:
    """Calibrate each predictor on ``n_clocks`` clocks of each curve; score the other clocks.

    Args:
        curves: columns ``curve_id, application, device, freq_mhz, time_s,
            power_w, source_id``, one row per measured clock (several rows at
            one clock of a curve are averaged: geometric mean of time, mean
            of power).
        predictors: names (see the module docstring).
        n_clocks: calibration clocks per curve (>= 2; chosen by
            :func:`calibration_clock_indices`).

    Returns:
        one row per predicted point, columns :data:`ROW_COLUMNS`. Errors are
        signed, ``100 (predicted / measured - 1)``.
    """
    calibrators = [(name, _resolve(name)) for name in predictors]
    calibration_clock_indices(10**9, n_clocks)  # validates n_clocks
    table = _check_curves(curves)
    out: list[dict] = []
    for curve_id, rows in table.groupby("curve_id", sort=True):
        per_clock = rows.groupby("freq_mhz").agg(
            time_s=("time_s", lambda s: float(np.exp(np.mean(np.log(s))))),
            power_w=("power_w", "mean"),
        )
        freqs = per_clock.index.to_numpy(dtype=float)  # ascending
        time_true = per_clock["time_s"].to_numpy(dtype=float)
        power_true = per_clock["power_w"].to_numpy(dtype=float)
        cal_idx = calibration_clock_indices(len(freqs), n_clocks)
        if len(cal_idx) >= len(freqs):
            continue
        cal = np.zeros(len(freqs), dtype=bool)
        cal[cal_idx] = True
        energy_true = time_true * power_true
        has_energy = np.isfinite(energy_true)
        for name, calibrate in calibrators:
            fit = calibrate(
                freqs[cal], time_true[cal], power_true[cal], float(freqs[-1]), str(curve_id)
            )
            t_pred = np.asarray(fit.time_s(freqs), dtype=float)
            p_pred = np.asarray(fit.power_w(freqs), dtype=float)
            e_pred = np.where(has_energy, t_pred * p_pred, np.inf)
            picked = optimal = loss = math.nan
            if has_energy.any() and np.isfinite(e_pred).any():
                # ties go to the higher clock (same energy, shorter run)
                j = int(np.flatnonzero(e_pred <= np.min(e_pred) * (1 + 1e-12))[-1])
                k = int(np.flatnonzero(energy_true == np.min(energy_true[has_energy]))[-1])
                picked, optimal = float(freqs[j]), float(freqs[k])
                loss = 100.0 * (energy_true[j] / energy_true[k] - 1.0)
            for i in np.flatnonzero(~cal):
                out.append(
                    {
                        "curve_id": curve_id,
                        "predictor": name,
                        "n_clocks": int(n_clocks),
                        "freq_mhz": float(freqs[i]),
                        "time_pred_s": float(t_pred[i]),
                        "time_true_s": float(time_true[i]),
                        "time_error_pct": 100.0 * (t_pred[i] / time_true[i] - 1.0),
                        "power_pred_w": float(p_pred[i]),
                        "power_true_w": float(power_true[i]),
                        "power_error_pct": 100.0 * (p_pred[i] / power_true[i] - 1.0),
                        "reliable": bool(fit.reliable),
                        "picked_freq_mhz": picked,
                        "optimal_freq_mhz": optimal,
                        "energy_loss_pct": loss,
                    }
                )
    return pd.DataFrame(out, columns=list(ROW_COLUMNS))


def summarize_dvfs(rows: pd.DataFrame) -> pd.DataFrame:
    """Per predictor (and ``n_clocks``): time and power errors and the energy lost.

    Columns: ``predictor, n_clocks, curves, points, time_error_median_pct,
    time_error_mean_pct`` (of ``|time error|``), ``power_error_median_pct,
    power_error_mean_pct``, ``energy_loss_mean_pct, energy_loss_max_pct``
    (energy lost by the predicted energy-optimal clock vs the measured
    optimum, one value per curve), ``unreliable_curves`` (calibrations
    flagged not reliable). Rows in the order predictors first appear.
    """
    cols = [
        "predictor",
        "n_clocks",
        "curves",
        "points",
        "time_error_median_pct",
        "time_error_mean_pct",
        "power_error_median_pct",
        "power_error_mean_pct",
        "energy_loss_mean_pct",
        "energy_loss_max_pct",
        "unreliable_curves",
    ]
    if rows is None or len(rows) == 0:
        return pd.DataFrame(columns=cols)
    out = []
    for (name, k), g in rows.groupby(["predictor", "n_clocks"], sort=False):
        t_err = g["time_error_pct"].abs()
        p_err = g["power_error_pct"].abs()
        per_curve = g.groupby("curve_id", sort=False).first()
        loss = per_curve["energy_loss_pct"] if "energy_loss_pct" in per_curve else pd.Series([])
        unreliable = (~per_curve["reliable"]).sum() if "reliable" in per_curve else 0
        out.append(
            {
                "predictor": name,
                "n_clocks": int(k),
                "curves": len(per_curve),
                "points": len(g),
                "time_error_median_pct": float(t_err.median()),
                "time_error_mean_pct": float(t_err.mean()),
                "power_error_median_pct": float(p_err.median()),
                "power_error_mean_pct": float(p_err.mean()),
                "energy_loss_mean_pct": float(loss.mean()) if loss.notna().any() else math.nan,
                "energy_loss_max_pct": float(loss.max()) if loss.notna().any() else math.nan,
                "unreliable_curves": int(unreliable),
            }
        )
    return pd.DataFrame(out, columns=cols)


__all__ = [
    "CALIBRATORS",
    "CURVE_COLUMNS",
    "ROW_COLUMNS",
    "backtest_dvfs",
    "calibration_clock_indices",
    "summarize_dvfs",
]
