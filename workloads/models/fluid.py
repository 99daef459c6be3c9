"""The Fluid DVFS model (Da Costa 2025), vectorised.

Per (node type, application), with ``x = f / Fmax`` (docs/background/models.md, section 1.2):

* power of one node: ``P(x) = Pstatic + Pdyn * x**p_coef`` (W), ``p_coef = 2``
  by default;
* duration: ``D(x) = ((1 - alpha) + alpha / x) * D(Fmax)``: ``alpha`` is the
  fraction of the run at ``Fmax`` that scales with frequency;
* energy: ``E(x) = D(x) * P(x)`` (times the node count).

``dE/dx`` has the sign of
``g(x) = p_coef (1 - alpha)/alpha x**(p_coef+1) + (p_coef - 1) x**p_coef - Pstatic/Pdyn``,
which increases strictly in ``x > 0`` and is negative at 0: ``E`` is unimodal
and its minimum over ``[x_min, 1]`` is the root of ``g`` clamped to the range.
"""

from __future__ import annotations

import logging

import numpy as np
from numpy.typing import ArrayLike

log = logging.getLogger(__name__)

#: The physical range of ``alpha`` (fraction of the run that scales with ``1/f``).
#: A calibrated value outside it is an anomaly (MODELS.md 1.2; real hardware often
#: slows slightly more than the clock ratio at its lowest clocks).
ALPHA_RANGE = (0.0, 1.0)
#: How far outside :data:`ALPHA_RANGE` a calibrated ``alpha`` may fall and still be
#: read as measurement noise (clipped to the range, not an anomaly): 2 % time noise
#: on runs at ``Fmax`` and ``Fmax/2`` moves a two-point ``alpha`` by about 0.04.
ALPHA_ANOMALY_TOL = 0.05

__all__ = [
    "ALPHA_ANOMALY_TOL",
    "ALPHA_RANGE",
    "fluid_alpha_anomalous",
    "fluid_calibrate",
    "fluid_energy_factor",
    "fluid_optimal_pstate",
    "fluid_optimal_x",
    "fluid_power",
    "fluid_power_scalar",
    "fluid_root",
    "fluid_runtime_factor",
    "fluid_runtime_factor_scalar",
]


def fluid_runtime_factor(x: ArrayLike, alpha: ArrayLike) -> np.ndarray:
    """``D(x) / D(Fmax) = (1 - alpha) + alpha / x`` (dimensionless), ``x = f/Fmax > 0``."""
    x_arr = np.asarray(x, dtype=np.float64)
    a_arr = np.asarray(alpha, dtype=np.float64)
    return (1.0 - a_arr) + a_arr / x_arr


def fluid_runtime_factor_scalar(x: float, alpha: float) -> float:
    """:func:`fluid_runtime_factor` for one run in plain Python (the engine's scalar
    path evaluates one job at a time; numpy's per-call overhead would dominate)."""
    return (1.0 - alpha) + alpha / x


def fluid_power(
    x: ArrayLike,
    p_static_w: ArrayLike,
    p_dyn_w: ArrayLike,
    p_coef: float = 2.0,
    core_share: ArrayLike = 1.0,
) -> np.ndarray:
    """Power of one node (W): ``Pstatic + Pdyn * x**p_coef * core_share``.

    ``core_share = c / cores_per_node`` when a job runs on ``c`` of a node's cores:
    the idle cores draw no dynamic power, the node's static power is charged whole.
    """
    x_arr = np.asarray(x, dtype=np.float64)
    return np.asarray(p_static_w, dtype=np.float64) + np.asarray(
        p_dyn_w, dtype=np.float64
    ) * np.power(x_arr, p_coef) * np.asarray(core_share, dtype=np.float64)


def fluid_power_scalar(
    x: float, p_static_w: float, p_dyn_w: float, core_share: float = 1.0
) -> float:
    """:func:`fluid_power` (``p_coef = 2``) for one node in plain Python (scalar paths)."""
    return p_static_w + p_dyn_w * x * x * core_share


def fluid_energy_factor(
    x: ArrayLike,
    alpha: ArrayLike,
    p_static_w: ArrayLike,
    p_dyn_w: ArrayLike,
    p_coef: float = 2.0,
) -> np.ndarray:
    """Energy of one node per second of ``D(Fmax)`` (J/s = W): ``D(x)/D(Fmax) * P(x)``."""
    return fluid_runtime_factor(x, alpha) * fluid_power(x, p_static_w, p_dyn_w, p_coef)


def _g(x: np.ndarray, ratio: np.ndarray, r: np.ndarray, p_coef: float) -> np.ndarray:
    # g(x) = p (1-a)/a x^(p+1) + (p-1) x^p - Pstatic/Pdyn ; ratio = (1-a)/a, r = Pstatic/Pdyn
    xp = np.power(x, p_coef)
    return p_coef * ratio * xp * x + (p_coef - 1.0) * xp - r


def fluid_root(
    alpha: ArrayLike,
    p_static_w: ArrayLike,
    p_dyn_w: ArrayLike,
    p_coef: float = 2.0,
    *,
    tol: float = 1e-13,
) -> np.ndarray:
    """Unclamped positive root in ``x`` of the optimality equation of docs/background/models.md, section 1.2.

    Vectorised bracketing bisection (robust: ``g`` is strictly increasing for
    ``x > 0``, ``g(0) = -Pstatic/Pdyn <= 0``): the upper bracket starts at 1 and
    doubles until ``g >= 0``, then bisection to ``tol`` relative width.
    Special cases: ``alpha <= 0`` (runtime independent of f) -> 0 (run as
    slowly as possible); ``Pdyn <= 0`` (power independent of f) -> ``inf``
    (run as fast as possible); ``Pstatic <= 0`` -> 0.

    Requires ``p_coef > 1``.
    """
    if not p_coef > 1.0:
        raise ValueError("fluid_root: p_coef must be > 1")
    a, ps, pd = np.broadcast_arrays(
        np.asarray(alpha, dtype=np.float64),
        np.asarray(p_static_w, dtype=np.float64),
        np.asarray(p_dyn_w, dtype=np.float64),
    )
    shape = a.shape
    a, ps, pd = a.ravel(), ps.ravel(), pd.ravel()
    out = np.full(a.shape, np.nan)
    zero = (a <= 0) | ((ps <= 0) & (pd > 0))
    inf = (pd <= 0) & ~zero
    out[zero] = 0.0
    out[inf] = np.inf
    todo = ~(zero | inf) & np.isfinite(a) & np.isfinite(ps) & np.isfinite(pd)
    if np.any(todo):
        at = np.minimum(a[todo], 1.0)
        ratio = (1.0 - at) / at
        r = ps[todo] / pd[todo]
        lo = np.zeros(at.shape)
        hi = np.ones(at.shape)
        for _ in range(200):  # g(2^k) grows at least like 2^(k p): a few steps suffice
            neg = _g(hi, ratio, r, p_coef) < 0
            if not np.any(neg):
                break
            lo = np.where(neg, hi, lo)
            hi = np.where(neg, hi * 2.0, hi)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            neg = _g(mid, ratio, r, p_coef) < 0
            lo = np.where(neg, mid, lo)
            hi = np.where(neg, hi, mid)
            if np.all(hi - lo <= tol * np.maximum(hi, 1e-300)):
                break
        out[todo] = 0.5 * (lo + hi)
    return out.reshape(shape)


def fluid_optimal_x(
    alpha: ArrayLike,
    p_static_w: ArrayLike,
    p_dyn_w: ArrayLike,
    p_coef: float = 2.0,
    x_min: ArrayLike = 0.5,
) -> np.ndarray:
    """Energy-optimal ``x = f/Fmax`` over the continuous range ``[x_min, 1]``.

    The root of the optimality equation (:func:`fluid_root`) clamped to
    ``[x_min, 1]``; exact because the energy is unimodal in ``x``. ``x_min``
    is ``Fmin/Fmax`` of the node type (default 0.5).
    """
    root = fluid_root(alpha, p_static_w, p_dyn_w, p_coef)
    return np.clip(root, np.asarray(x_min, dtype=np.float64), 1.0)


def fluid_optimal_pstate(
    freqs_ghz: ArrayLike,
    alpha: ArrayLike,
    p_static_w: ArrayLike,
    p_dyn_w: ArrayLike,
    p_coef: float = 2.0,
    fmax_ghz: float | None = None,
) -> np.ndarray:
    """Energy-optimal frequency (GHz) among discrete P-states, by evaluating ``E`` at each.

    Args:
        freqs_ghz: the available frequencies (1-D).
        alpha, p_static_w, p_dyn_w: per-application parameters (broadcast together).
        fmax_ghz: the top frequency (``x = f / fmax``); default ``max(freqs_ghz)``.

    Returns:
        frequencies (GHz) of the broadcast shape of the parameters. Ties (within
        a relative 1e-12) go to the higher frequency (same energy, shorter run).
    """
    freqs = np.asarray(freqs_ghz, dtype=np.float64).ravel()
    if freqs.size == 0:
        raise ValueError("fluid_optimal_pstate: no frequencies")
    order = np.argsort(freqs)[::-1]  # descending: argmin's first hit is the fastest tie
    freqs = freqs[order]
    fmax = float(freqs.max()) if fmax_ghz is None else float(fmax_ghz)
    a, ps, pd = np.broadcast_arrays(
        np.asarray(alpha, dtype=np.float64),
        np.asarray(p_static_w, dtype=np.float64),
        np.asarray(p_dyn_w, dtype=np.float64),
    )
    x = freqs / fmax
    e = fluid_energy_factor(x, a[..., None], ps[..., None], pd[..., None], p_coef)
    best = e.min(axis=-1, keepdims=True)
    idx = np.argmax(e <= best * (1.0 + 1e-12), axis=-1)
    return freqs[idx]


def fluid_calibrate(
    d_fmin: ArrayLike,
    d_fmax: ArrayLike,
    p_fmin: ArrayLike,
    p_fmax: ArrayLike,
    fmin: ArrayLike,
    fmax: ArrayLike,
    p_coef: float = 2.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fluid parameters from two runs, at ``fmin`` and ``fmax`` (docs/background/models.md, section 1.2).

    Args:
        d_fmin, d_fmax: durations (s) at ``fmin`` and ``fmax``.
        p_fmin, p_fmax: node powers (W) at ``fmin`` and ``fmax``.
        fmin, fmax: the two frequencies (any unit, same for both).

    Returns:
        ``(alpha, p_static_w, p_dyn_w)`` with
        ``Pdyn = (P(fmax) - P(fmin)) / (1 - (fmin/fmax)**p_coef)``,
        ``Pstatic = P(fmax) - Pdyn``,
        ``alpha = (D(fmin)/D(fmax) - 1) / (fmax/fmin - 1)``.

    ``alpha`` is returned as computed, but a value more than
    :data:`ALPHA_ANOMALY_TOL` outside :data:`ALPHA_RANGE` is not accepted
    silently: a warning is logged (how many and the extremes);
    test with :func:`fluid_alpha_anomalous`. The DVFS predictors' calibration
    (``predictors.dvfs.calibrate_dvfs_curve``) marks such fits unreliable and refits.
    """
    d0 = np.asarray(d_fmin, dtype=np.float64)
    d1 = np.asarray(d_fmax, dtype=np.float64)
    p0 = np.asarray(p_fmin, dtype=np.float64)
    p1 = np.asarray(p_fmax, dtype=np.float64)
    f0 = np.asarray(fmin, dtype=np.float64)
    f1 = np.asarray(fmax, dtype=np.float64)
    p_dyn = (p1 - p0) / (1.0 - np.power(f0 / f1, p_coef))
    p_static = p1 - p_dyn
    alpha = (d0 / d1 - 1.0) / (f1 / f0 - 1.0)
    bad = fluid_alpha_anomalous(alpha)
    if np.any(bad):
        worst = np.asarray(alpha, dtype=np.float64)[bad]
        log.warning(
            "fluid_calibrate: %d calibrated alpha outside [0, 1] (min %.4g, max %.4g): "
            "the runs do not follow the fluid model (a calibration anomaly)",
            int(np.count_nonzero(bad)),
            float(np.min(worst)),
            float(np.max(worst)),
        )
    return alpha, p_static, p_dyn


def fluid_alpha_anomalous(alpha: ArrayLike, tol: float = ALPHA_ANOMALY_TOL) -> np.ndarray:
    """Whether a calibrated ``alpha`` is more than ``tol`` outside :data:`ALPHA_RANGE`
    (a calibration anomaly; NaN: not anomalous)."""
    a = np.asarray(alpha, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return (a < ALPHA_RANGE[0] - tol) | (a > ALPHA_RANGE[1] + tol)
