"""The DVFS predictor family of the Fluid model study (docs/background/models.md, sections 1.2 and 2.3).

Model of one node at frequency ``f`` (``x = f / Fmax``):

* power ``P(f) = Pstatic + Pdyn * x**pcoef`` (W per node, ``pcoef = 2``);
* duration ``D(f) = ((1 - alpha) + alpha / x) * D(Fmax)`` (s);
* energy ``E(f) = D(f) * P(f) * n`` (J).

The five members differ in where the constants come from:

=================  ==========================================  =====================
predictor          power constants                             duration
=================  ==========================================  =====================
``dvfs-naive``     one platform-wide ``(Pstatic, Pdyn)``,       ``D(Fmax) * Fmax/f``
                   one benchmark
``dvfs-node-type`` per node type, one benchmark or the mean     ``D(Fmax) * Fmax/f``
                   of all benchmarks
``dvfs-per-app``   per (node type, application), from its runs  ``D(Fmax) * Fmax/f``
``fluid``          per (node type, application)                fluid formula
``online-*``       linear regression of ``Pstatic``, ``Pdyn``,   fluid formula, the
                   ``alpha`` on 4 counters + RAPL power          regressed ``alpha``
=================  ==========================================  =====================

Benchmark constants come from :attr:`Observations.benchmarks` (power at every
frequency, fitted with the power law); without benchmarks, from the platform's
P-state figures (full-load power); without those, ``Pstatic = 110 W``,
``Pdyn = 119 W`` (the default platform's figures).

As predictors on queries ``(application, n, f)`` they model the *frequency*
dimension. The node dimension is perfect speedup from the job's reference:
the job's runtime at its requested size and ``Fmax`` is its requested time
scaled by the application's observed runtime/request ratio (see
:mod:`predictors.baselines` for the per-job work scaling), and moves to other
node counts as ``requested_nodes / n``. Combine with a node-count predictor
(:class:`predictors.composite.CompositePredictor`, e.g. ``adept+fluid``) for a
real node dimension.

Each predictor also answers, for one application, the whole frequency profile
(:meth:`DvfsPredictor.profile`) and the energy-optimal frequency
(:meth:`DvfsPredictor.optimal_freq`).
"""

from __future__ import annotations

import bisect
import logging
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from energysched.errors import ConfigError
from predictors.base import COUNTER_COLUMNS, Observations
from predictors.baselines import (
    AppRuns,
    PerApplicationPredictor,
    PlatformInfo,
    ShapeTable,
    TableBounds,
    _AppStore,
    constant_flags,
    geometric_mean,
    geometric_mean_positive,
    outer_product,
    outer_table_bounds,
    row_table,
    run_work,
)
from workloads.models.fluid import (
    ALPHA_RANGE,
    fluid_alpha_anomalous,
    fluid_calibrate,
    fluid_power,
    fluid_runtime_factor,
)

log = logging.getLogger(__name__)

#: Power constants used when neither benchmarks nor P-state figures are known (W).
DEFAULT_PSTATIC_W = 110.0
DEFAULT_PDYN_W = 119.0
#: Bounds of a fitted ``alpha``: :data:`workloads.models.fluid.ALPHA_RANGE`. A fit
#: outside is a calibration anomaly (logged, rows not reliable) and is refitted on
#: the range (the former silent clip to 1.2 is gone).
ALPHA_BOUNDS = (0.0, 1.0)
#: Features of the online model: the 4 counters and RAPL power.
ONLINE_FEATURES: tuple[str, ...] = (*COUNTER_COLUMNS, "rapl_power_w")


# --------------------------------------------------------------------------- formulas


@dataclass(frozen=True)
class FluidParams:
    """Constants of the fluid model of one (node type, application).

    ``pstatic_w``/``pdyn_w``: W per node; ``alpha``: fraction of the run at
    ``Fmax`` that scales with ``1/f`` (0 = frequency-insensitive, 1 = CPU-bound).
    """

    pstatic_w: float
    pdyn_w: float
    alpha: float
    pcoef: float = 2.0


def fluid_time_factor(x: np.ndarray | float, alpha: np.ndarray | float) -> np.ndarray:
    """``D(f) / D(Fmax) = (1 - alpha) + alpha / x`` with ``x = f / Fmax``
    (:func:`workloads.models.fluid.fluid_runtime_factor`, the formula's home)."""
    return fluid_runtime_factor(x, alpha)


def calibrate_fluid(
    fmin_ghz: float,
    fmax_ghz: float,
    time_fmin_s: float,
    time_fmax_s: float,
    power_fmin_w: float,
    power_fmax_w: float,
    pcoef: float = 2.0,
) -> FluidParams:
    """The fluid constants from one run at ``Fmin`` and one at ``Fmax`` (same job, same size).

    :func:`workloads.models.fluid.fluid_calibrate` (which logs a warning when
    ``alpha`` falls outside ``[0, 1]``): ``Pdyn = (P(Fmax) - P(Fmin)) / (1 -
    (Fmin/Fmax)**pcoef)``, ``Pstatic = P(Fmax) - Pdyn``, ``alpha = (D(Fmin)/D(Fmax)
    - 1) / (Fmax/Fmin - 1)``. The returned ``alpha`` is the raw value; see
    :func:`calibrate_dvfs_curve` for the calibration with anomaly handling.
    """
    if not fmax_ghz > fmin_ghz > 0:
        raise ValueError(f"need 0 < Fmin < Fmax, got {fmin_ghz}, {fmax_ghz}")
    alpha, p_static, p_dyn = fluid_calibrate(
        time_fmin_s, time_fmax_s, power_fmin_w, power_fmax_w, fmin_ghz, fmax_ghz, pcoef
    )
    return FluidParams(float(p_static), float(p_dyn), float(alpha), pcoef)


def fit_power_law(x: np.ndarray, power_w: np.ndarray, pcoef: float = 2.0) -> tuple[float, float]:
    """Least-squares ``(Pstatic, Pdyn)`` of ``P = Pstatic + Pdyn * x**pcoef`` (W).

    Needs two distinct ``x``; ``Pdyn`` is clamped at 0 (then ``Pstatic`` is the mean power).
    """
    x = np.asarray(x, dtype=float)
    p = np.asarray(power_w, dtype=float)
    ok = np.isfinite(x) & np.isfinite(p)
    x, p = x[ok], p[ok]
    if len(np.unique(x)) < 2:
        raise ValueError("need power at two distinct frequencies")
    design = np.column_stack([np.ones_like(x), x**pcoef])
    (ps, pd_), *_ = np.linalg.lstsq(design, p, rcond=None)
    if pd_ < 0:
        return float(np.mean(p)), 0.0
    return float(ps), float(pd_)


def fit_alpha(
    x: np.ndarray, tau: np.ndarray, groups: np.ndarray | None = None, clip: bool = True
) -> float:
    """``alpha`` from work-normalised durations ``tau`` at relative frequencies ``x``.

    Within each group (same node type and node count): when it has runs at
    ``Fmax`` (``x = 1``) and below, the fit is anchored at ``Fmax`` as in
    :func:`calibrate_dvfs_curve`: ``tau_1`` = the mean ``tau`` of its ``Fmax``
    runs and ``alpha`` the least squares of ``tau / tau_1 - 1 = alpha (1/x - 1)``
    over the runs below; otherwise, with two or more distinct ``x``, ``tau = p
    + q / x`` is fitted by least squares and ``alpha = q / (p + q)``. Groups
    are averaged weighted by their run count. With exactly one run at ``Fmin``
    and one at ``Fmax`` both are the calibration formula of
    :func:`calibrate_fluid`. NaN when no group has two frequencies. Clipped to :data:`ALPHA_BOUNDS` (``clip=False``: the raw value,
    to detect an anomaly).
    """
    x = np.asarray(x, dtype=float)
    tau = np.asarray(tau, dtype=float)
    ok = np.isfinite(tau) & (tau > 0) & np.isfinite(x) & (x > 0)
    if groups is None:
        groups = np.zeros(len(x))
    _, g = np.unique(np.asarray(groups)[ok], return_inverse=True)
    u, y = 1.0 / x[ok], tau[ok]
    # per-group least squares of y = p + q u from sums (vectorised over groups)
    cnt = np.bincount(g).astype(float)
    su, sy = np.bincount(g, u), np.bincount(g, y)
    suu, suy = np.bincount(g, u * u), np.bincount(g, u * y)
    # anchored at Fmax: sums over the runs at Fmax and (ua = 1/x - 1) below it
    at = np.abs(x[ok] - 1.0) <= FMAX_RTOL
    below = (~at).astype(float)
    ua = u - 1.0
    n_at, s_at = np.bincount(g, at.astype(float)), np.bincount(g, y * at)
    sua, suua, suay = (
        np.bincount(g, ua * below),
        np.bincount(g, ua * ua * below),
        np.bincount(g, ua * y * below),
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        var = suu - su * su / cnt
        q = (suy - su * sy / cnt) / var
        p = (sy - q * su) / cnt
        alpha = q / (p + q)
        use = (
            (cnt >= 2) & (var > 1e-12 * np.maximum(suu, 1e-300)) & np.isfinite(alpha) & (p + q > 0)
        )
        anchored = (n_at > 0) & (suua > 0)
        alpha_a = (suay / (s_at / n_at) - sua) / suua
        alpha = np.where(anchored, alpha_a, alpha)
        use = np.where(anchored, np.isfinite(alpha_a), use)
    if not use.any():
        return math.nan
    raw = np.sum(alpha[use] * cnt[use]) / np.sum(cnt[use])
    return float(np.clip(raw, *ALPHA_BOUNDS)) if clip else float(raw)


#: Bounds of a fitted power exponent ``pcoef`` (> 1: the optimality root needs it).
PCOEF_BOUNDS = (1.05, 6.0)
#: Relative tolerance for "a run at Fmax" (``|f / Fmax - 1| <= FMAX_RTOL``).
FMAX_RTOL = 1e-9
#: Time laws of :func:`calibrate_dvfs_curve`.
TIME_LAWS = ("fluid", "inverse-clock")


@dataclass(frozen=True)
class CurveCalibration:
    """A DVFS calibration of one application on one device (see :func:`calibrate_dvfs_curve`).

    Attributes:
        params: the fluid constants (``alpha``, ``Pstatic``, ``Pdyn``, ``pcoef``).
        time_fmax_s: the time at ``Fmax`` the time law is anchored on (s).
        fmax: the top clock (the unit of the clocks given).
        reliable: ``False`` after a calibration anomaly (see ``notes``).
        notes: what the calibration did that a user should know (anomalies,
            refits, bounds hit), one short sentence each.
    """

    params: FluidParams
    time_fmax_s: float
    fmax: float
    reliable: bool
    notes: tuple[str, ...] = ()

    def time_s(self, freq: np.ndarray | float) -> np.ndarray:
        """Predicted time (s) at clock ``freq`` (same unit as ``fmax``)."""
        x = np.asarray(freq, dtype=float) / self.fmax
        return self.time_fmax_s * fluid_time_factor(x, self.params.alpha)

    def power_w(self, freq: np.ndarray | float) -> np.ndarray:
        """Predicted power (W) at clock ``freq``."""
        x = np.asarray(freq, dtype=float) / self.fmax
        prm = self.params
        return fluid_power(x, prm.pstatic_w, prm.pdyn_w, prm.pcoef)


def _anchored_alpha(u: np.ndarray, y: np.ndarray) -> float:
    """Least squares of ``y = alpha u`` (``u = Fmax/f - 1``, ``y = T(f)/T(Fmax) - 1``)."""
    den = float(np.dot(u, u))
    return float(np.dot(u, y) / den) if den > 0 else math.nan


def _power_fit(
    x: np.ndarray, power_w: np.ndarray, pcoef: float, anchor_w: float | None
) -> tuple[float, float, float]:
    """``(Pstatic, Pdyn, sse)`` of ``P = Pstatic + Pdyn x**pcoef`` by least squares.

    Anchored (``anchor_w`` = measured ``P(Fmax)``): ``Pstatic + Pdyn = anchor_w``
    and ``Pdyn`` fits the other runs. ``Pdyn`` is clamped at 0.
    """
    xp = np.power(x, pcoef)
    if anchor_w is not None:
        w = 1.0 - xp
        d = anchor_w - power_w
        den = float(np.dot(w, w))
        pdyn = max(float(np.dot(w, d) / den), 0.0) if den > 0 else 0.0
        pstatic = anchor_w - pdyn
    else:
        design = np.column_stack([np.ones_like(x), xp])
        (pstatic, pdyn), *_ = np.linalg.lstsq(design, power_w, rcond=None)
        if pdyn < 0:
            pstatic, pdyn = float(np.mean(power_w)), 0.0
    resid = pstatic + pdyn * xp - power_w
    return float(pstatic), float(pdyn), float(np.dot(resid, resid))


def _power_fits(
    x: np.ndarray,
    power_w: np.ndarray,
    pcoefs: np.ndarray,
    anchor_w: float | None,
    weight: np.ndarray | None = None,
    xp: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_power_fit` for many exponents at once: ``(Pstatic, Pdyn, sse)`` arrays
    (``weight``: a weight per point, e.g. the run count of a mean power; ``xp``:
    ``np.power(x[None, :], pcoefs[:, None])`` when the caller has it)."""
    w8 = np.ones_like(x) if weight is None else weight
    if xp is None:
        xp = np.power(x[None, :], pcoefs[:, None])
    if anchor_w is not None:
        w = 1.0 - xp
        den = (w * w) @ w8
        with np.errstate(divide="ignore", invalid="ignore"):
            pdyn = np.where(den > 0, (w @ (w8 * (anchor_w - power_w))) / den, 0.0)
        pdyn = np.maximum(pdyn, 0.0)
        pstatic = anchor_w - pdyn
    else:
        total = float(np.sum(w8))
        pm = float(np.dot(w8, power_w)) / total
        xm = (xp @ w8) / total
        dx = xp - xm[:, None]
        var = (dx * dx) @ w8
        with np.errstate(divide="ignore", invalid="ignore"):
            pdyn = np.where(var > 0, (dx @ (w8 * (power_w - pm))) / var, 0.0)
        pstatic = pm - pdyn * xm
        flat = pdyn < 0
        pstatic = np.where(flat, pm, pstatic)
        pdyn = np.where(flat, 0.0, pdyn)
    resid = pstatic[:, None] + pdyn[:, None] * xp - power_w[None, :]
    return pstatic, pdyn, (resid * resid) @ w8


#: The exponents :func:`fit_power_exponent` tries first: PCOEF_BOUNDS by steps of 0.01.
_PCOEF_STEP = 0.01
_PCOEF_GRID = PCOEF_BOUNDS[0] + _PCOEF_STEP * np.arange(
    round((PCOEF_BOUNDS[1] - PCOEF_BOUNDS[0]) / _PCOEF_STEP) + 1
)
_PCOEF_GRID.flags.writeable = False
_GRID_POWERS: dict[bytes, np.ndarray] = {}


def _grid_powers(x: np.ndarray) -> np.ndarray:
    """``np.power(x[None, :], _PCOEF_GRID[:, None])`` (read-only), kept per ``x``: the
    relative clocks ``f / Fmax`` of a platform are a handful, so every fit of the
    exponent asks the same few (the same values as computing them each time)."""
    key = x.tobytes()
    got = _GRID_POWERS.get(key)
    if got is None:
        got = np.power(x[None, :], _PCOEF_GRID[:, None])
        got.flags.writeable = False
        if len(_GRID_POWERS) >= 256:  # bounded (a platform has a few clock sets)
            _GRID_POWERS.clear()
        _GRID_POWERS[key] = got
    return got


_PCOEF_GRID_VALUES: list[float] = _PCOEF_GRID.tolist()
_GRID_PARTS: dict[tuple[float, ...], tuple[np.ndarray, np.ndarray] | None] = {}


def _anchored_grid_parts(clocks: list[float]) -> tuple[np.ndarray, np.ndarray] | None:
    """``(w, w * w)``, ``w = 1 - x**pcoef``: one row per clock ``x`` of ``clocks``, one
    column per exponent of the grid (read-only), kept per clock set (a platform has a
    handful: every fit of the exponent asks the same few). ``None`` unless both are
    finite and, for each exponent, ``w`` is not 0 at some clock (then ``sum(c w w)``
    of positive counts ``c`` is positive)."""
    key = tuple(clocks)
    if key in _GRID_PARTS:
        return _GRID_PARTS[key]
    with np.errstate(over="ignore", invalid="ignore"):  # (checked below)
        w = np.ascontiguousarray((1.0 - _grid_powers(np.array(clocks, dtype=np.float64))).T)
        ww = w * w
    got = None
    if np.isfinite(ww).all() and (ww.max(axis=0) > 0).all():
        for a in (w, ww):
            a.flags.writeable = False
        got = (w, ww)
    if len(_GRID_PARTS) >= 256:  # bounded (a platform has a few clock sets)
        _GRID_PARTS.clear()
    _GRID_PARTS[key] = got
    return got


def _anchored_exponent_fit(
    clocks: list[float], counts: list[float], power_sums_w: list[float], anchor_w: float
) -> tuple[float, float, float] | None:
    """:func:`fit_power_exponent_of_means` anchored on ``anchor_w``, from the runs per
    clock as lists (``clocks`` ascending and distinct, the runs' ``counts`` and the
    sums of their powers): ``(Pstatic, Pdyn, pcoef)``, or ``None`` when the inputs are
    not finite or the fit is degenerate (the caller then fits by :func:`_power_fits`).

    With ``Pstatic = anchor - Pdyn`` the law is ``anchor - P = Pdyn w``, ``w = 1 -
    x**pcoef``: per exponent a least squares through the origin. With ``g = anchor -
    the mean power`` at each clock and ``c`` its runs, ``num = sum(c g w)`` and ``den
    = sum(c w w)``: ``Pdyn = max(num, 0) / den`` and the error is ``sum(c g**2) -
    max(num, 0)**2 / den``, whose first term does not depend on the exponent. So the
    best grid exponent is the one with the largest ``max(num, 0)**2 / den``: two
    matrix products (``num`` and ``den`` of every exponent, from ``w`` and ``w * w``
    kept per clock set) and three vector operations, instead of a table of residuals
    per exponent and clock. The parabolic step then takes the errors of the best
    grid exponent and its neighbours, and of its own exponent, from the residuals,
    on floats (the difference of the error's two large terms would lose digits
    there). The same fit as :func:`_power_fits`' errors give, rounded differently:
    a test bounds the difference by 1e-9; on the 3,908 fits of a whole SDSC-SP2
    replay it is at most 1.6e-13 (relative), and the fits are closer to an 80-bit
    computation than :func:`_power_fits`' (5.5e-14 against 1.4e-13)."""
    if not (math.isfinite(anchor_w) and min(counts) > 0):
        return None
    parts = _anchored_grid_parts(clocks)
    if parts is None:
        return None
    gaps = [anchor_w - s / c for s, c in zip(power_sums_w, counts)]
    w, ww = parts
    num = np.array([c * g for c, g in zip(counts, gaps)]) @ w
    den = np.array(counts) @ ww
    if compiled_exponent_step is not None and max(clocks) <= 2.0:
        # (x**exponent of a clock up to 2 is finite: Python's ** raises no OverflowError)
        got = compiled_exponent_step(num, den, w, counts, gaps, clocks, _PCOEF_GRID, _PCOEF_STEP)
    else:
        got = _anchored_exponent_step_plain(num, den, w, counts, gaps, clocks)
    if got is None:
        return None
    best, best_pd = got
    return anchor_w - best_pd, best_pd, best


def _anchored_exponent_step_plain(
    num: np.ndarray,
    den: np.ndarray,
    w: np.ndarray,
    counts: list[float],
    gaps: list[float],
    clocks: list[float],
) -> tuple[float, float] | None:
    """:func:`_anchored_exponent_fit` after its matrix products (``num``, ``den`` per
    grid exponent; ``w`` one row per clock): ``(exponent, Pdyn)`` -- the best grid
    exponent, then the parabolic step -- or ``None`` when the best gain is not finite.
    The reference of the compiled ``predictors._dvfs_kernels.anchored_exponent_step``
    (one pass, the same operations; about 60 % of a fit's cost in Python)."""
    gain = np.maximum(num, 0.0)
    np.multiply(gain, gain, out=gain)
    np.divide(gain, den, out=gain)
    k = int(gain.argmax())  # (the first of equal gains, as np.argmin of the errors)
    grid = _PCOEF_GRID_VALUES
    if not math.isfinite(float(gain[k])):  # (an infinite count, an overflow or a NaN)
        return None
    best, best_pd = grid[k], max(float(num[k]), 0.0) / float(den[k])
    if 0 < k < len(grid) - 1:
        # the errors at grid[k - 1 : k + 2] from their residuals
        n0, n1, n2 = num[k - 1 : k + 2].tolist()
        d0, d1, d2 = den[k - 1 : k + 2].tolist()
        pd0, pd1, pd2 = max(n0, 0.0) / d0, max(n1, 0.0) / d1, max(n2, 0.0) / d2
        s0 = s1 = s2 = 0.0
        for c, g, (w0, w1, w2) in zip(counts, gaps, w[:, k - 1 : k + 2].tolist()):
            r0, r1, r2 = g - w0 * pd0, g - w1 * pd1, g - w2 * pd2
            s0 += c * (r0 * r0)
            s1 += c * (r1 * r1)
            s2 += c * (r2 * r2)
        curv = s0 - 2.0 * s1 + s2
        if curv > 0:
            cand = min(
                max(grid[k] + 0.5 * _PCOEF_STEP * (s0 - s2) / curv, grid[k - 1]), grid[k + 1]
            )
            ws = [1.0 - x**cand for x in clocks]
            c_num = c_den = 0.0
            for c, g, wc in zip(counts, gaps, ws):
                c_num += (c * g) * wc
                c_den += c * (wc * wc)
            c_pd = max(c_num, 0.0) / c_den if c_den > 0 else math.nan
            c_sse = 0.0
            for c, g, wc in zip(counts, gaps, ws):
                r = g - wc * c_pd
                c_sse += c * (r * r)
            if c_sse < s1:
                best, best_pd = cand, c_pd
    return best, best_pd


def fit_power_exponent(
    x: np.ndarray, power_w: np.ndarray, anchor_w: float | None = None
) -> tuple[float, float, float]:
    """``(Pstatic, Pdyn, pcoef)`` of ``P = Pstatic + Pdyn x**pcoef`` with ``pcoef`` fitted.

    Needs three distinct ``x``. ``pcoef`` minimises the squared power error over
    :data:`PCOEF_BOUNDS`: a grid of step 0.01, then one parabolic step through
    the best grid point and its neighbours (kept if it lowers the error); for
    each ``pcoef`` the constants are linear least squares (anchored on
    ``anchor_w``, the measured ``P(Fmax)``, when given; ``Pdyn >= 0``).
    """
    x = np.asarray(x, dtype=float)
    power_w = np.asarray(power_w, dtype=float)
    # runs at the same clock enter through their mean power, weighted by their
    # count (the same least squares up to a constant): the cost does not grow
    # with the number of runs
    ux, inv = np.unique(x, return_inverse=True)
    count = np.bincount(inv).astype(float)
    return fit_power_exponent_of_means(ux, count, np.bincount(inv, power_w), anchor_w)


def _float_list(values: Sequence[float] | np.ndarray) -> list[float]:
    """``values`` as a list of Python floats (the same values)."""
    if isinstance(values, np.ndarray):
        return values.astype(np.float64, copy=False).tolist()
    return [float(v) for v in values]


def fit_power_exponent_of_means(
    clocks: Sequence[float] | np.ndarray,
    count: Sequence[float] | np.ndarray,
    power_sum_w: Sequence[float] | np.ndarray,
    anchor_w: float | None = None,
) -> tuple[float, float, float]:
    """:func:`fit_power_exponent` of runs given per distinct clock: ``clocks`` (``x``,
    ascending, distinct), the runs' ``count`` at each (float) and the sum of their
    powers ``power_sum_w`` (added in run order, as ``np.bincount`` adds them); the
    same result as :func:`fit_power_exponent` of the runs themselves (a caller that
    keeps these sums as runs arrive does not go over every run at each fit).
    Arrays or lists (a caller keeping the sums as lists builds no arrays for the
    anchored fit). Anchored: :func:`_anchored_exponent_fit` (the general least
    squares of :func:`_power_fits` when it declines, and without an anchor)."""
    if len(clocks) < 3:
        raise ValueError("fitting the power exponent needs power at three distinct clocks")
    if anchor_w is not None:
        got = _anchored_exponent_fit(
            _float_list(clocks), _float_list(count), _float_list(power_sum_w), float(anchor_w)
        )
        if got is not None:
            return got
    return _grid_exponent_fit(clocks, count, power_sum_w, anchor_w)


def _grid_exponent_fit(
    clocks: Sequence[float] | np.ndarray,
    count: Sequence[float] | np.ndarray,
    power_sum_w: Sequence[float] | np.ndarray,
    anchor_w: float | None,
) -> tuple[float, float, float]:
    """:func:`fit_power_exponent_of_means` by the errors of :func:`_power_fits` over
    the grid (without an anchor, or when :func:`_anchored_exponent_fit` declines)."""
    ux = np.asarray(clocks, dtype=np.float64)
    count = np.asarray(count, dtype=np.float64)
    power_sum_w = np.asarray(power_sum_w, dtype=np.float64)
    mean_w = power_sum_w / count
    step = _PCOEF_STEP
    grid = _PCOEF_GRID
    ps, pd_, sse = _power_fits(ux, mean_w, grid, anchor_w, count, _grid_powers(ux))
    k = int(np.argmin(sse))
    best, best_ps, best_pd, best_sse = float(grid[k]), float(ps[k]), float(pd_[k]), sse[k]
    if 0 < k < len(grid) - 1:
        s0, s1, s2 = sse[k - 1], sse[k], sse[k + 1]
        curv = s0 - 2.0 * s1 + s2
        if curv > 0:
            # np.clip's maximum then minimum, on floats
            cand = min(
                max(float(grid[k] + 0.5 * step * (s0 - s2) / curv), float(grid[k - 1])),
                float(grid[k + 1]),
            )
            c_ps, c_pd, c_sse = _power_fits(ux, mean_w, np.array([cand]), anchor_w, count)
            if c_sse[0] < best_sse:
                best, best_ps, best_pd = cand, float(c_ps[0]), float(c_pd[0])
    return best_ps, best_pd, best


def calibration_clock_indices(n_available: int, n_clocks: int) -> list[int]:
    """Indices (into the ascending clocks) of the ``n_clocks`` calibration clocks.

    ``floor(j (m - 1) / (k - 1) + 1/2)`` for ``j = 0 .. k-1`` (``m`` clocks,
    ``k = min(n_clocks, m)``): the lowest and the top clock and evenly spread
    ones between; all clocks when ``n_clocks >= m``. The DVFS backtest
    (:mod:`predictors.validation_dvfs`) calibrates on these clocks and the
    learning policies' calibration runs visit the lower ones
    (:func:`exploration_clock_index`).
    """
    m, k = int(n_available), int(n_clocks)
    if k < 2:
        raise ConfigError("n_clocks", f"a DVFS calibration needs at least 2 clocks, got {k}")
    if k >= m:
        return list(range(m))
    return sorted({math.floor(j * (m - 1) / (k - 1) + 0.5) for j in range(k)})


def exploration_clock_index(n_available: int, explore_runs: int, run: int) -> int:
    """Index (into the ascending clocks) of an application's calibration run number ``run``.

    With ``explore_runs`` calibration runs per application, together with the
    runs at ``Fmax`` they cover :func:`calibration_clock_indices` of
    ``explore_runs + 1`` clocks: run ``k`` (0-based) takes the ``k``-th lowest of
    them (``explore_runs = 1``: the lowest clock; ``2``: the lowest, then the
    middle one, so an anomalous two-clock fit gets its third clock).
    """
    if n_available <= 1:
        return 0
    lower = calibration_clock_indices(n_available, max(int(explore_runs), 1) + 1)[:-1]
    return lower[min(max(int(run), 0), len(lower) - 1)]


def calibrate_dvfs_curve(
    freq: np.ndarray,
    time_s: np.ndarray,
    power_w: np.ndarray,
    *,
    fmax: float | None = None,
    time_law: str = "fluid",
    fit_pcoef: bool = True,
    pcoef: float = 2.0,
    label: str = "",
) -> CurveCalibration:
    """Calibrate the DVFS model of one application on one device from runs at a few clocks.

    The calibration rules (docs/background/models.md, "DVFS calibration"):

    1. **Anchors.** ``T(Fmax)`` and ``P(Fmax)`` are the measured values at
       ``Fmax`` (geometric mean of time, mean of power when several runs) when
       a run at ``Fmax`` is present (``fmax``: the device's top clock, default
       the top clock observed); otherwise they come from the fits below
       (unanchored least squares).
    2. **Time law.** ``"fluid"``: ``T(f) = T(Fmax) ((1 - alpha) + alpha Fmax/f)``
       (equivalently a clock-bound part ``alpha`` plus a part ``1 - alpha``
       that does not scale with the clock: the memory-bound blend); ``alpha``
       by least squares over the runs below ``Fmax`` (with one lower clock
       this is the two-point formula of :func:`calibrate_fluid`).
       ``"inverse-clock"``: ``alpha = 1`` (``T = T(Fmax) Fmax/f``).
    3. **Anomaly.** A fitted ``alpha`` more than ``ALPHA_ANOMALY_TOL`` (0.05,
       measurement noise) outside ``[0, 1]`` is a calibration anomaly (within
       the tolerance it is clipped to the range, as noise): a warning is logged, the calibration is marked
       ``reliable = False``, and ``alpha`` is refitted by least squares
       constrained to ``[0, 1]`` over the same runs (for this one-parameter
       fit: the nearest bound, so ``alpha > 1`` becomes the ``1/f`` law).
       Dropping the run that breaks the range was tried and rejected: on the
       V100 sweeps it keeps only the middle clock and the picked clock then
       lost up to 87 % energy (the dropped lowest clock is the one the model
       must not recommend).
    4. **Power.** ``P(f) = Pstatic + Pdyn (f/Fmax)**pcoef``; ``pcoef`` is
       fitted (:func:`fit_power_exponent`) when ``fit_pcoef`` and three or
       more distinct clocks have a power, else ``pcoef`` (default 2).
       ``Pdyn >= 0``.

    Args:
        freq, time_s, power_w: one entry per run (power may be NaN: no power fit
            from that run); clocks in any unit, the same as ``fmax``.
        label: names the curve in log messages.

    Raises:
        ValueError: fewer than two distinct clocks with a positive finite time,
            an unknown ``time_law``, or a run above ``fmax``.
    """
    if time_law not in TIME_LAWS:
        raise ValueError(f"unknown time law {time_law!r}; known: {', '.join(TIME_LAWS)}")
    f = np.asarray(freq, dtype=float).ravel()
    t = np.asarray(time_s, dtype=float).ravel()
    p = np.asarray(power_w, dtype=float).ravel()
    if not (len(f) == len(t) == len(p)):
        raise ValueError("freq, time_s and power_w must have the same length")
    ok = np.isfinite(f) & (f > 0) & np.isfinite(t) & (t > 0)
    f, t, p = f[ok], t[ok], p[ok]
    top = float(f.max()) if len(f) else math.nan
    fmax = top if fmax is None else float(fmax)
    if len(np.unique(f)) < 2:
        raise ValueError(
            f"DVFS calibration{' of ' + label if label else ''} needs runs at two distinct "
            f"clocks with a positive finite time; got {len(np.unique(f))}"
        )
    if top > fmax * (1 + FMAX_RTOL):
        raise ValueError(f"a run at clock {top} is above Fmax = {fmax}")
    name = f" of {label}" if label else ""
    notes: list[str] = []
    reliable = True
    x = f / fmax
    at_max = np.abs(x - 1.0) <= FMAX_RTOL
    # time
    if at_max.sum() == 1:
        t1 = float(t[at_max][0])
    elif at_max.any():
        t1 = float(np.exp(np.mean(np.log(t[at_max]))))
    else:
        design = np.column_stack([np.ones_like(x), 1.0 / x])
        (a0, b0), *_ = np.linalg.lstsq(design, t, rcond=None)
        t1 = float(a0 + b0)
        notes.append("no run at Fmax: T(Fmax) fitted")
    alpha = 1.0
    if time_law == "fluid":
        below = ~at_max
        u = 1.0 / x[below] - 1.0
        y = t[below] / t1 - 1.0
        alpha = _anchored_alpha(u, y)
        if not bool(fluid_alpha_anomalous(alpha)):
            alpha = float(np.clip(alpha, *ALPHA_RANGE))  # noise-level excursions
        else:
            reliable = False
            raw = alpha
            # the constrained least squares over [0, 1]: for this one-parameter
            # quadratic, the nearest bound
            alpha = float(np.clip(raw, *ALPHA_RANGE))
            how = f"refitted on [0, 1] by least squares over {len(u)} run(s): {alpha:g}"
            notes.append(f"alpha {raw:.4g} outside [0, 1]: {how}")
            log.warning(
                "DVFS calibration%s: alpha %.4g is outside [0, 1] (the runs slow %s than "
                "the fluid model allows); %s; marked unreliable",
                name,
                raw,
                "more" if raw > 1 else "less",
                how,
            )
    # power
    has_p = np.isfinite(p) & (p > 0)
    xp, pp = x[has_p], p[has_p]
    anchor_w = float(np.mean(pp[at_max[has_p]])) if (at_max[has_p]).any() else None
    n_clocks_p = len(np.unique(xp))
    if n_clocks_p >= 3 and fit_pcoef:
        ps, pd_, pc = fit_power_exponent(xp, pp, anchor_w)
        if pc <= PCOEF_BOUNDS[0] + 1e-6 or pc >= PCOEF_BOUNDS[1] - 1e-6:
            notes.append(f"pcoef at its bound {pc:.3g}")
    elif n_clocks_p >= 2:
        pc = pcoef
        ps, pd_, _ = _power_fit(xp, pp, pc, anchor_w)
    elif n_clocks_p == 1:
        pc, ps, pd_ = pcoef, float(np.mean(pp)), 0.0
        notes.append("power at one clock: taken as constant")
        reliable = False
    else:
        pc, ps, pd_ = pcoef, math.nan, math.nan
        notes.append("no power measured")
        reliable = False
    return CurveCalibration(
        FluidParams(ps, pd_, float(alpha), float(pc)), t1, fmax, reliable, tuple(notes)
    )


def fluid_profile(
    time_fmax_s: float,
    freqs_ghz: np.ndarray,
    params: FluidParams,
    nodes: int = 1,
    fmax_ghz: float | None = None,
) -> pd.DataFrame:
    """Time (s), power per node (W) and energy (J, all ``nodes``) at every frequency."""
    freqs = np.asarray(freqs_ghz, dtype=float)
    fmax = float(freqs.max()) if fmax_ghz is None else float(fmax_ghz)
    x = freqs / fmax
    time = time_fmax_s * fluid_time_factor(x, params.alpha)
    power = fluid_power(x, params.pstatic_w, params.pdyn_w, params.pcoef)
    return pd.DataFrame(
        {"freq_ghz": freqs, "time_s": time, "power_w": power, "energy_j": time * power * nodes}
    )


def optimal_freq(
    freqs_ghz: np.ndarray, params: FluidParams, fmax_ghz: float | None = None
) -> float:
    """Energy-optimal frequency among the available ones (evaluate ``E`` at each; GHz).

    This is the reference: always correct with discrete P-states. Ties go to
    the higher frequency (shorter run).
    """
    prof = fluid_profile(1.0, freqs_ghz, params, 1, fmax_ghz)
    energy = prof["energy_j"].to_numpy()
    best = np.flatnonzero(energy <= energy.min() * (1 + 1e-12))
    return float(prof["freq_ghz"].to_numpy()[best].max())


def optimal_x_analytic(params: FluidParams, xmin: float = 0.0) -> float:
    """Energy-optimal ``x = f / Fmax`` of the continuous model, clamped to ``[xmin, 1]``.

    Root in ``x`` of ``pcoef (1 - alpha)/alpha x**(pcoef+1) + (pcoef - 1) x**pcoef
    - Pstatic/Pdyn = 0`` (the left side increases with ``x`` for
    ``0 < alpha <= 1``). ``alpha <= 0`` (time does not depend on ``f``): ``xmin``;
    ``Pdyn <= 0``: 1.
    """
    a, p = params.alpha, params.pcoef
    if params.pdyn_w <= 0:
        return 1.0
    if a <= 0:
        return max(xmin, 0.0) if xmin > 0 else 0.0
    ratio = params.pstatic_w / params.pdyn_w

    def g(x: float) -> float:
        return p * (1 - a) / a * x ** (p + 1) + (p - 1) * x**p - ratio

    if g(1.0) <= 0:
        return 1.0
    from scipy.optimize import brentq  # here: a replay's refits need no SciPy import

    if a > 1:  # the x**(p+1) term is negative: search only where g rises through 0
        xs = np.linspace(1e-6, 1.0, 2001)
        vals = p * (1 - a) / a * xs ** (p + 1) + (p - 1) * xs**p - ratio
        cross = np.flatnonzero((vals[:-1] < 0) & (vals[1:] >= 0))
        if len(cross) == 0:
            return 1.0
        root = brentq(g, xs[cross[0]], xs[cross[0] + 1])
    else:
        root = brentq(g, 0.0, 1.0) if g(0.0) < 0 else 0.0
    return float(min(max(root, xmin), 1.0))


# --------------------------------------------------------------------------- online regression


@dataclass
class OnlineLinearModel:
    """``targets = [1, features] @ coef``: weights of the intercept and each feature per target.

    ``coef`` has shape ``(1 + n_features, n_targets)``; row 0 is the intercept.
    """

    coef: np.ndarray
    feature_names: tuple[str, ...] = ONLINE_FEATURES
    target_names: tuple[str, ...] = ("pstatic_w", "pdyn_w", "alpha")

    def predict(self, features: np.ndarray) -> np.ndarray:
        f = np.atleast_2d(np.asarray(features, dtype=float))
        return self.coef[0] + f @ self.coef[1:]


def _solve_normal(xtx: np.ndarray, xty: np.ndarray) -> np.ndarray:
    """Least-squares weights from normal equations, Jacobi-scaled (features differ by 1e9 in scale)."""
    d = np.sqrt(np.diag(xtx))
    d = np.where(d > 0, d, 1.0)
    scaled = xtx / np.outer(d, d)
    z, *_ = np.linalg.lstsq(scaled, xty / d[:, None], rcond=1e-12)
    return z / d[:, None]


def fit_online_model(features: np.ndarray, targets: np.ndarray) -> OnlineLinearModel:
    """Linear regression with intercept of each target column on the feature columns.

    ``features``: ``(runs, 5)`` counters + RAPL power; ``targets``: ``(runs, 3)``
    ``Pstatic``, ``Pdyn``, ``alpha``. Minimum-norm solution when under-determined.
    """
    f = np.asarray(features, dtype=float)
    t = np.asarray(targets, dtype=float)
    design = np.column_stack([np.ones(len(f)), f])
    return OnlineLinearModel(_solve_normal(design.T @ design, design.T @ t))


# --------------------------------------------------------------------------- predictors


_FAST_FIT_OK: dict[type, bool] = {}
_SIZES: dict[int, np.ndarray] = {}


def _sizes_column(count: int) -> np.ndarray:
    """``np.arange(1, count + 1, dtype=np.float64)``, kept per ``count`` (read-only)."""
    got = _SIZES.get(count)
    if got is None:
        got = _SIZES[count] = np.arange(1, count + 1, dtype=np.float64)
        got.flags.writeable = False
    return got


#: The compiled twin of :func:`_fluid_table_plain` (``predictors._dvfs_kernels``, built
#: by ``pip install`` when a C compiler is there; ``None``: the Python reference runs).
try:
    from predictors._dvfs_kernels import fluid_table as compiled_fluid_table
except ImportError:  # pragma: no cover - not built
    compiled_fluid_table = None
#: The compiled twin of :func:`_anchored_exponent_step_plain` (``None``: not built).
try:
    from predictors._dvfs_kernels import anchored_exponent_step as compiled_exponent_step
except ImportError:  # pragma: no cover - not built (or built before it was added)
    compiled_exponent_step = None


def _fluid_table_plain(
    g: float,
    count: int,
    x: np.ndarray,
    alpha: float,
    pstatic_w: float,
    pdyn_w: float,
    x_pow: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, TableBounds | None]:
    """A fluid shape table: ``(tau, power, bounds)``, ``tau`` the ``(count, len(x))``
    table ``g / n x ((1 - alpha) + alpha / x)`` over ``n = 1..count`` (column-major,
    :func:`~predictors.baselines.outer_product`), ``power`` the row ``Pstatic + Pdyn
    x_pow`` (``x_pow``: ``x**pcoef``) and ``bounds`` the tables' smallest and largest
    cells (:func:`~predictors.baselines.outer_table_bounds`): :func:`fluid_time_factor`
    and :func:`fluid_power`'s operations, inline (the reference of the compiled
    :func:`_fluid_table`)."""
    factor = (1.0 - alpha) + alpha / x
    power = np.asarray(pstatic_w + pdyn_w * x_pow, dtype=np.float64)
    return _fluid_table_of_rows(g, count, factor, power)


def _fluid_table_of_rows(
    g: float, count: int, factor: np.ndarray, power: np.ndarray
) -> tuple[np.ndarray, np.ndarray, TableBounds | None]:
    """``(tau, power, bounds)`` of a fluid shape table given its factor row and power
    row: ``tau`` the column ``g / n`` over ``n = 1..count`` times ``factor``
    (column-major, :func:`~predictors.baselines.outer_product`), ``bounds`` the tables'
    smallest and largest cells (:func:`~predictors.baselines.outer_table_bounds`)."""
    col = g / _sizes_column(count)
    tau = outer_product(col, factor)
    # col = g / n over n = 1..count: monotone (outer_table_bounds)
    return tau, power, outer_table_bounds(col, factor, power, col_monotone=True)


def _fluid_table(
    g: float,
    count: int,
    x: np.ndarray,
    alpha: float,
    pstatic_w: float,
    pdyn_w: float,
    x_pow: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, TableBounds | None]:
    """:func:`_fluid_table_plain` (same values), by its compiled twin when it is built,
    ``g`` and the constants are floats, ``x`` and ``x_pow`` contiguous float64 arrays
    and every factor and power is finite and positive (a usable table: the twin
    declines the others)."""
    if (
        compiled_fluid_table is not None
        and isinstance(g, float)
        and isinstance(pstatic_w, float)
        and isinstance(pdyn_w, float)
        and x.dtype == np.float64
        and x_pow.dtype == np.float64
        and x.flags.c_contiguous
        and x_pow.flags.c_contiguous
    ):
        got = compiled_fluid_table(g, count, x, alpha, pstatic_w, pdyn_w, x_pow)
        if got is not None:
            return got
    return _fluid_table_plain(g, count, x, alpha, pstatic_w, pdyn_w, x_pow)


def _fast_fit_ok(cls: type[DvfsPredictor]) -> bool:
    """Whether the fast path of :meth:`DvfsPredictor._fit_app` (and its request ratio)
    computes what ``cls``'s hooks would: none of them is overridden."""
    got = _FAST_FIT_OK.get(cls)
    if got is None:
        got = _FAST_FIT_OK[cls] = (
            cls._app_power is DvfsPredictor._app_power
            and cls._shape is DvfsPredictor._shape
            and cls.params_for is DvfsPredictor.params_for
            and cls._fit_app in (DvfsPredictor._fit_app, FluidPredictor._fit_app)
            and (not cls.fluid_duration or cls._alpha_of is FluidPredictor._alpha_of)
        )
    return got


def _config_groups(runs: AppRuns) -> np.ndarray:
    """Group id of each run: same node type and node count."""
    names = runs["node_type"].tolist()
    if len(set(names)) <= 1:
        return runs["nodes"]
    codes = {v: i for i, v in enumerate(dict.fromkeys(names))}
    return np.array([codes[v] for v in names]) * 1e7 + runs["nodes"]


@dataclass
class DvfsAppModel:
    """Fitted DVFS state of one application.

    ``g``: work-normalised time on one node at ``Fmax`` (s per unit of work,
    perfect speedup); ``alpha``: fitted ``alpha`` (NaN = not identifiable,
    the predictor's prior is used); ``power``: node type -> ``(Pstatic, Pdyn)``
    fitted for this application (other types use the predictor's constants).
    """

    g: float
    alpha: float
    power: dict[str, tuple[float, float]]
    features: dict[str, tuple[str, np.ndarray]] | None = (
        None  # online: node type -> (level, mean features)
    )
    #: The fitted ``alpha`` was outside ``[0, 1]`` (a calibration anomaly; ``alpha``
    #: holds the value refitted on the range and the rows are not reliable).
    anomaly: bool = False
    #: node type -> fitted power exponent (types without one use the predictor's)
    pcoef: dict[str, float] | None = None


try:  # the LAPACK least-squares gufunc behind np.linalg.lstsq (without its wrapper)
    from numpy.linalg import _umath_linalg

    _LSTSQ: Any = _umath_linalg.lstsq
except (ImportError, AttributeError):  # pragma: no cover - other numpy layouts
    _LSTSQ = None
_EPS = float(np.finfo(np.float64).eps)


def _lstsq(design: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``np.linalg.lstsq(design, y, rcond=None)[0]`` of a ``(m, 2)`` float64 design.

    Calls the same LAPACK routine with the same ``rcond`` (same solution, bit for
    bit), without the wrapper's checks; a non-finite solution (LAPACK failed) is
    redone with ``np.linalg.lstsq``, which raises its usual ``LinAlgError``.
    """
    if _LSTSQ is not None:
        sol = _LSTSQ(design, y[:, None], _EPS * max(design.shape), signature="ddd->ddid")[0]
        a, b = float(sol[0, 0]), float(sol[1, 0])
        if math.isfinite(a) and math.isfinite(b):
            return a, b
    a, b = np.linalg.lstsq(design, y, rcond=None)[0]
    return float(a), float(b)


def _sum(values: Sequence[float]) -> float:
    """``float(np.add.reduce(np.array(values)))`` of a non-empty list: for fewer than 8
    values numpy adds them left to right (its pairwise summation starts with blocks
    of 8), so does this; longer lists go to numpy."""
    if len(values) < 8:
        total = values[0]
        for v in values[1:]:
            total += v
        return total
    return float(np.add.reduce(np.array(values, dtype=np.float64)))


def _mean(values: Sequence[float]) -> float:
    """``float(np.mean(np.array(values)))`` of a non-empty list: numpy's mean is its sum
    (:func:`_sum`) divided by the count."""
    return _sum(values) / len(values)


def _geomean_few(values: list[float]) -> float:
    """``geometric_mean_positive(np.array(values))`` of 1 to 7 values: the logs added
    left to right (numpy's sum of fewer than 8 values, see :func:`_sum`)."""
    m = _sum(np.log(values).tolist()) / len(values)  # np.add.reduce(np.log(...)) / n
    if math.isfinite(m):
        return float(np.exp(m))
    return geometric_mean(np.array(values, dtype=np.float64))


def _anomalous(raw: float) -> bool:
    """``bool(fluid_alpha_anomalous(raw))`` of one fitted ``alpha``: an ``alpha`` in
    ``ALPHA_RANGE`` is not anomalous (the tolerance is not negative), nor is NaN (no
    ``alpha`` fitted: the model's rule compares it false), so only the others ask the
    model's rule (the common cases cost a few comparisons, not numpy)."""
    if ALPHA_RANGE[0] <= raw <= ALPHA_RANGE[1] or raw != raw:
        return False
    return bool(fluid_alpha_anomalous(raw))


def _g_of_rows(rows: Sequence[float], alpha: float, *, positive: bool = False) -> float:
    """``geometric_mean(tn / ((1 - alpha) + alpha / x))``: ``g`` of the runs' rows
    ``(x, tn)`` given flat (``[x0, tn0, x1, tn1, ...]``), the same value bit for bit.
    ``positive``: every quotient is known to be positive and finite (no filter). Below 8
    rows the same operations on Python floats (elementwise IEEE divisions and
    additions, the filter of :func:`geometric_mean`, then :func:`_geomean_few`)."""
    if len(rows) < 16:
        b = 1.0 - alpha
        inf = math.inf
        quotients = [tn / (b + alpha / x) for x, tn in zip(rows[::2], rows[1::2])]
        kept = quotients if positive else [v for v in quotients if 0 < v < inf]
        return _geomean_few(kept) if kept else math.nan
    flat = np.array(rows, dtype=np.float64)
    quotient_array = flat[1::2] / ((1.0 - alpha) + alpha / flat[::2])
    return geometric_mean_positive(quotient_array) if positive else geometric_mean(quotient_array)


class _OrderedValues:
    """Float values by key, kept in a float64 buffer in the order a dict given the same
    ``set`` and ``delete`` calls would list them (a new key goes last; a deleted key's
    successors move up): :meth:`view` is ``np.fromiter(d.values(), np.float64)``
    without reading the dict."""

    __slots__ = ("buf", "keys", "n", "pos")

    def __init__(self) -> None:
        self.buf = np.empty(16)
        self.n = 0
        self.pos: dict[Any, int] = {}
        self.keys: list[Any] = []

    def set(self, key: Any, value: float) -> None:
        j = self.pos.get(key)
        if j is None:
            j = self.n
            if j == len(self.buf):
                grown = np.empty(2 * j)
                grown[:j] = self.buf
                self.buf = grown
            self.pos[key] = j
            self.keys.append(key)
            self.n = j + 1
        self.buf[j] = value

    def delete(self, key: Any) -> None:
        j = self.pos.pop(key)
        n = self.n
        self.buf[j : n - 1] = self.buf[j + 1 : n].copy()
        del self.keys[j]
        pos = self.pos
        for k in self.keys[j:]:
            pos[k] -= 1
        self.n = n - 1

    def view(self) -> np.ndarray:
        return self.buf[: self.n]


class _PowerRows:
    """One node type's runs with a usable power (finite and positive), as they arrive
    (:meth:`add`), for the fit of its power constants:

    * ``xs``, ``powers``: each run's ``x = f / Fmax`` and power, in run order (the fits
      on the runs themselves), in float64 buffers (8 bytes a run each, not a float
      object and a pointer: kept for the whole replay);
    * ``clocks``: the distinct ``x`` in ascending order, ``counts`` the runs at each
      (float) and ``sums`` the sum of their powers added in run order (what
      :func:`fit_power_exponent`'s ``np.unique`` and ``np.bincount`` compute), kept as
      lists of floats in that order, which :func:`_anchored_exponent_fit` reads as
      they are; ``at_fmax``: the powers at ``Fmax`` in run order (their mean is its
      anchor; a float64 buffer too);
    * ``result``: the fitted ``(Pstatic, Pdyn)`` (``None``: to refit, set by :meth:`add`)
      and ``pcoef`` the exponent fitted with it (``None``: the predictor's).
    """

    __slots__ = ("at_fmax", "clocks", "counts", "pcoef", "powers", "result", "sums", "xs")

    def __init__(self) -> None:
        self.xs = array("d")
        self.powers = array("d")
        self.clocks: list[float] = []
        self.counts: list[float] = []
        self.sums: list[float] = []
        self.at_fmax = array("d")
        self.result: tuple[float, float] | None = None
        self.pcoef: float | None = None

    def add(self, runs: list[float]) -> None:
        """Append runs ``(x, power)`` given flat (``[x0, power0, x1, power1, ...]``; every
        ``x`` finite)."""
        xs, powers = runs[::2], runs[1::2]
        self.xs.fromlist(xs)
        self.powers.fromlist(powers)
        clocks, counts, sums = self.clocks, self.counts, self.sums
        at_fmax = self.at_fmax
        for x, pw in zip(xs, powers):
            j = bisect.bisect_left(clocks, x)
            if j < len(clocks) and clocks[j] == x:
                counts[j] += 1.0
                sums[j] += pw
            else:  # a new clock (a platform has a handful)
                clocks.insert(j, x)
                counts.insert(j, 1.0)
                sums.insert(j, pw)
            if abs(x - 1.0) <= FMAX_RTOL:
                at_fmax.append(pw)
        self.result = None

    def clock_lists(self) -> tuple[list[float], list[float], list[float]]:
        """``(distinct x ascending, runs at each, sum of their powers)``: what ``np.unique``
        and ``np.bincount`` give for the runs (the kept lists, not copies)."""
        return self.clocks, self.counts, self.sums


#: A new group's sums (:class:`_DvfsRuns`), all zero.
_ZERO_SUMS = array("d", [0.0] * 10)


class _DvfsRuns:
    """What :meth:`DvfsPredictor._fit_app` keeps per application between refits (fast path).

    Extended with each refit's new runs (each run read once, as Python floats); the
    fit then costs a few operations on the kept values and no per-run pandas work.
    Exact: the same floating-point operations as the reference path, in the same order:

    * ``xt``: rows ``(x, tn)`` per run, flat (``[x0, tn0, x1, tn1, ...]``), ``x = f /
      Fmax`` and ``tn = time / work * nodes``, for ``g``; ``at``: the rows of the runs
      at ``Fmax`` (``|x - 1| <= FMAX_RTOL``), in run order (what the anchored ``g``
      reads); both float64 buffers (``array("d")``: 8 bytes a value where a list of
      floats costs 32, and they live for the whole replay);
    * per (node type, node count) group the sums of :func:`fit_alpha`
      (``bincount`` sums are sequential in run order, so are these);
      per group its ``alpha`` and whether it is used, in the groups' sorted
      order (the order of the weighted mean);
    * per node type the runs with a usable power (:class:`_PowerRows`), its
      fitted constants kept until the type gets new power rows.

    ``ok`` False: the application's runs need the reference path (a node type
    that is not a string, a non-finite or non-positive ``x``, a node count that
    is not an integer in ``[0, 1e6)``): set for good (until the next ``fit``).
    """

    __slots__ = (
        "at",
        "bad_tn",
        "codes",
        "galpha",
        "gcnt",
        "gkeys",
        "groups",
        "guse",
        "max_x",
        "n",
        "n_at_max",
        "n_used",
        "ok",
        "power",
        "xt",
    )

    def __init__(self) -> None:
        self.n = 0
        self.ok = True
        self.codes: dict[str, int] = {}  # node type -> first-seen code (_config_groups)
        self.xt = array("d")
        self.at = array("d")
        self.max_x = -math.inf
        self.n_at_max = 0  # runs at Fmax (|x - 1| <= FMAX_RTOL)
        self.bad_tn = 0  # runs whose time / work * nodes is not positive and finite
        # per group, 10 sums in a float64 buffer: cnt, su, sy, suu, suy, then n_at,
        # s_at, sua, suua, suay (anchored)
        self.groups: dict[tuple[int, float], array[float]] = {}
        self.gkeys: list[tuple[int, float]] = []
        # per group, in the order of gkeys: alpha, run count, whether it is used
        self.galpha: list[float] = []
        self.gcnt: list[float] = []
        self.guse: list[bool] = []
        self.n_used = 0
        self.power: dict[str, _PowerRows] = {}

    def extend(self, p: DvfsPredictor, store: _AppStore, n1: int) -> None:
        """Add runs ``self.n .. n1 - 1`` of ``store`` (their work is their ``instructions``)."""
        n0 = self.n
        freq, nodes, time, power, work, _, _, names = store.decoded(n0, n1)
        per_app = p.power_per_app
        if not per_app:
            power = [math.nan] * (n1 - n0)
        fluid = p.fluid_duration
        row_fmax = p.info_.row_fmax
        known_fmax = p.info_.known_fmax  # name -> Fmax, what row_fmax answers for them
        isfinite = math.isfinite
        rtol = FMAX_RTOL
        codes, groups, power_rows = self.codes, self.groups, self.power
        max_x = self.max_x
        n_at_max = 0
        bad_tn = 0
        xt: list[float] = []  # the rows (x, tn) of xt, flat
        at: list[float] = []  # those at Fmax, flat
        touched: set[tuple[int, float]] = set()
        # per node type: (Fmax when known for any frequency, group code, its new runs
        # (x, power) with a usable power, flat; None without per-application power)
        facts: dict[str, tuple[float | None, int, list[float] | None]] = {}
        for name, f, nd, t, w, pw in zip(names, freq, nodes, time, work, power):
            if not isinstance(name, str):
                self.ok = False
                return
            got = facts.get(name)
            if got is None:
                code = codes.get(name)
                if code is None:
                    code = codes[name] = len(codes)
                new_power: list[float] | None = None
                if per_app:
                    if name not in power_rows:
                        power_rows[name] = _PowerRows()
                    new_power = []
                got = facts[name] = (known_fmax.get(name), code, new_power)
            fmax, code, new_power = got
            if fmax is None:
                fmax = row_fmax(name, f)
            if fmax is None or not fmax > 0 or not 0.0 <= nd < 1e6 or not nd.is_integer():
                self.ok = False
                return
            x = f / fmax
            if not (isfinite(x) and x > 0):
                self.ok = False
                return
            tau = t / w
            tn = tau * nd
            xt += (x, tn)
            if not (isfinite(tn) and tn > 0):
                bad_tn += 1
            if x > max_x:
                max_x = x
            at_fmax = abs(x - 1.0) <= rtol
            if at_fmax:
                n_at_max += 1
                at += (x, tn)
            if fluid and isfinite(tau) and tau > 0:
                key = (code, nd)
                s = groups.get(key)
                if s is None:
                    s = groups[key] = array("d", _ZERO_SUMS)
                    self._new_group(key)
                u = 1.0 / x
                s[0] += 1.0
                s[1] += u
                s[2] += tau
                s[3] += u * u
                s[4] += u * tau
                if at_fmax:  # anchored fit: runs at Fmax
                    s[5] += 1.0
                    s[6] += tau
                else:  # and below it (ua = 1/x - 1)
                    ua = u - 1.0
                    s[7] += ua
                    s[8] += ua * ua
                    s[9] += ua * tau
                touched.add(key)
            if new_power is not None and isfinite(pw) and pw > 0:
                new_power += (x, pw)
        self.xt.fromlist(xt)
        if at:
            self.at.fromlist(at)
        self.n = n1
        self.max_x = max_x
        self.n_at_max += n_at_max
        self.bad_tn += bad_tn
        for key in touched:
            self._group_alpha(key)
        for name, (_, _, new_power) in facts.items():
            if new_power:
                power_rows[name].add(new_power)

    def _new_group(self, key: tuple[int, float]) -> None:
        j = bisect.bisect_left(self.gkeys, key)
        self.gkeys.insert(j, key)
        self.galpha.insert(j, math.nan)
        self.gcnt.insert(j, 0.0)
        self.guse.insert(j, False)

    def _group_alpha(self, key: tuple[int, float]) -> None:
        """One group's ``alpha`` and use flag: :func:`fit_alpha`'s formulas on its sums."""
        cnt, su, sy, suu, suy, n_at, s_at, sua, suua, suay = self.groups[key]
        j = bisect.bisect_left(self.gkeys, key)
        self.gcnt[j] = cnt
        var = suu - su * su / cnt
        use = False
        alpha = math.nan
        if n_at > 0 and suua > 0:  # anchored at Fmax
            alpha = (suay / (s_at / n_at) - sua) / suua
            use = math.isfinite(alpha)
        elif cnt >= 2 and var > 1e-12 * max(suu, 1e-300):
            q = (suy - su * sy / cnt) / var
            p = (sy - q * su) / cnt
            if p + q > 0:
                alpha = q / (p + q)
                use = math.isfinite(alpha)
        self.galpha[j] = alpha
        self.n_used += int(use) - int(self.guse[j])
        self.guse[j] = use

    def alpha(self, clip: bool = True) -> float:
        """:func:`fit_alpha` of the runs so far (NaN when no group has two frequencies)."""
        if not self.n_used:
            return math.nan
        weighted: list[float] = []
        counts: list[float] = []
        for a, c, u in zip(self.galpha, self.gcnt, self.guse):
            if u:
                weighted.append(a * c)
                counts.append(c)
        value = _sum(weighted) / _sum(counts)  # np.sum(alpha * cnt) / np.sum(cnt)
        if not clip:
            return float(value)
        return float(min(max(value, ALPHA_BOUNDS[0]), ALPHA_BOUNDS[1]))  # np.clip


class DvfsPredictor(PerApplicationPredictor):
    """Common machinery of the DVFS family (see the module docstring). Not registered itself."""

    name = "dvfs"
    #: Whether the duration follows the fluid formula (else ``Fmax / f``).
    fluid_duration = False
    #: Whether power constants are fitted per application.
    power_per_app = False
    #: Whether ``T(Fmax)`` is anchored on the application's measured runs at ``Fmax``
    #: when it has any (else every run contributes through the time law).
    anchor_fmax = False
    #: Whether the power exponent is fitted per (application, node type) once its
    #: runs have a power at three distinct clocks (:func:`fit_power_exponent`).
    fit_pcoef = False
    _grid_ok = True

    def __init__(self, pcoef: float = 2.0) -> None:
        self.pcoef = pcoef

    # ----------------------------------------------------------- constants
    def _fit_global(self, observations: Observations) -> None:
        self.type_power_ = self._platform_constants(observations)
        # (node type, frequencies) -> f / Fmax, for _compute_table
        self._x_rows: dict[tuple[str, bytes], np.ndarray] = {}

    def _platform_constants(self, observations: Observations) -> dict[str, tuple[float, float]]:
        """Node type -> ``(Pstatic, Pdyn)``; key ``"*"`` is the platform-wide pair."""
        return benchmark_power_constants(
            observations.benchmarks, self.info_, self.pcoef, benchmark="mean"
        )

    def _type_constants(self, name: str) -> tuple[float, float]:
        got = self.type_power_.get(str(name))
        return got if got is not None else self.type_power_["*"]

    def _prior_alpha(self) -> float:
        return 1.0

    # ----------------------------------------------------------- fitting
    def _alpha_of(self, runs: AppRuns, work: np.ndarray, x: np.ndarray) -> float:
        return 1.0

    def _fit_app(self, app: int, runs: AppRuns, work: np.ndarray) -> DvfsAppModel:
        cache = self._fit_cache(app, runs, work)
        if cache is not None:
            return self._fit_fast(cache)
        return self._fit_app_reference(app, runs, work)

    def _fit_cache(self, app: int, runs: AppRuns, work: np.ndarray) -> _DvfsRuns | None:
        """The application's :class:`_DvfsRuns`, extended to every run, or ``None`` when
        the reference path must fit it (runs not from the predictor's store, a run
        without usable ``instructions``, hooks overridden by a subclass, odd runs)."""
        store = self._stores.get(app)
        if (
            store is None
            or store.runs is not runs
            or store.bad_work
            or work is not runs["instructions"]
            or not _fast_fit_ok(type(self))
        ):
            return None
        cache = store.fit_cache
        if cache is None:
            cache = store.fit_cache = _DvfsRuns()
        if cache.ok and cache.n < store.n:
            cache.extend(self, store, store.n)
        return cache if cache.ok else None

    def _fit_fast(self, c: _DvfsRuns) -> DvfsAppModel:
        """:meth:`_fit_app_reference` from the incremental statistics (same values)."""
        raw = c.alpha(clip=False) if self.fluid_duration else 1.0
        alpha = min(max(raw, ALPHA_BOUNDS[0]), ALPHA_BOUNDS[1]) if math.isfinite(raw) else raw
        a_eff = alpha if math.isfinite(alpha) else self._prior_alpha()
        # every quotient positive and finite when every run's time per work is and no
        # run is above Fmax (x <= 1) with alpha in its bounds (so are those at Fmax)
        positive = c.bad_tn == 0 and c.max_x <= 1.0 and 0.0 <= a_eff <= ALPHA_BOUNDS[1]
        if self.anchor_fmax and c.n_at_max:
            g = _g_of_rows(c.at, a_eff, positive=positive)
        else:
            g = _g_of_rows(c.xt, a_eff, positive=positive)
        if not math.isfinite(g):
            return None  # type: ignore[return-value]
        power: dict[str, tuple[float, float]] = {}
        pcoefs: dict[str, float] | None = None
        if self.power_per_app:
            for name, rows in c.power.items():
                if rows.result is None:
                    rows.pcoef = None
                    rows.result = self._power_of_rows(name, rows)
                power[name] = rows.result
                if rows.pcoef is not None:
                    if pcoefs is None:
                        pcoefs = {}
                    pcoefs[name] = rows.pcoef
        return DvfsAppModel(g, alpha, power, anomaly=_anomalous(raw), pcoef=pcoefs)

    def _power_of_rows(self, name: str, pr: _PowerRows) -> tuple[float, float]:
        """:meth:`_app_power` of one node type's runs (already filtered: usable power, finite x)."""
        distinct = len(pr.clocks)
        if distinct >= 3 and self.fit_pcoef:
            if type(self)._fitted_exponent is not DvfsPredictor._fitted_exponent:
                x, power_w = np.array(pr.xs), np.array(pr.powers)
                ps, pd_, pr.pcoef = self._fitted_exponent(x, power_w)
                return ps, pd_
            # _fitted_exponent from the kept per-clock sums (the same values)
            at = pr.at_fmax
            anchor = _mean(at) if self.anchor_fmax and at else None
            ps, pd_, pr.pcoef = fit_power_exponent_of_means(pr.clocks, pr.counts, pr.sums, anchor)
            return ps, pd_
        if distinct >= 2:
            x, power_w = np.array(pr.xs), np.array(pr.powers)
            if self.anchor_fmax:
                anchored = self._anchored_power(x, power_w)
                if anchored is not None:
                    return anchored
            design = np.column_stack([np.ones_like(x), x**self.pcoef])  # fit_power_law's
            ps, pd_ = _lstsq(design, power_w)
            if pd_ < 0:
                return float(np.mean(power_w)), 0.0
            return ps, pd_
        # one frequency (or no run): _app_power's fallback, without its filter (the
        # runs are usable) and its np.unique (``clocks`` has the same count)
        ps, pd_ = self._type_constants(name)
        if not pr.powers:
            return ps, pd_
        mean = _mean(pr.powers)  # == np.mean(power_w)
        x0 = pr.xs[0]
        if self.pcoef == 2.0:  # fluid_power's ps + pd_ * x**2.0; numpy's x**2.0 is x * x
            level = ps + pd_ * (x0 * x0)
        else:
            level = float(fluid_power(x0, ps, pd_, self.pcoef))
        scale = mean / level
        return ps * scale, pd_ * scale

    def _fit_app_reference(self, app: int, runs: AppRuns, work: np.ndarray) -> DvfsAppModel:
        """The fit from the whole runs table (any runs; the fast path's reference)."""
        names = np.where(pd.isna(runs["node_type"]), self.info_.default, runs["node_type"]).astype(
            object
        )
        fmax = self.info_.fmax(names, runs["freq_ghz"])
        x = runs["freq_ghz"] / fmax
        raw = self._alpha_of(runs, work, x) if self.fluid_duration else 1.0
        alpha = float(np.clip(raw, *ALPHA_BOUNDS)) if np.isfinite(raw) else raw
        a_eff = alpha if np.isfinite(alpha) else self._prior_alpha()
        tau = runs["time_s"] / work
        v = tau * runs["nodes"] / fluid_time_factor(x, a_eff)
        at = np.abs(np.asarray(x, dtype=float) - 1.0) <= FMAX_RTOL
        g = geometric_mean(v[at] if self.anchor_fmax and at.any() else v)
        if not np.isfinite(g):
            return None  # type: ignore[return-value]
        power: dict[str, tuple[float, float]] = {}
        pcoefs: dict[str, float] | None = None
        if self.power_per_app:
            for name in dict.fromkeys(names.tolist()):
                m = names == name
                xm, pm = np.asarray(x[m], dtype=float), np.asarray(runs["power_w"][m], dtype=float)
                ok = np.isfinite(pm) & (pm > 0) & np.isfinite(xm)
                if self.fit_pcoef and len(np.unique(xm[ok])) >= 3:
                    ps, pd_, pc = self._fitted_exponent(xm[ok], pm[ok])
                    power[str(name)] = (ps, pd_)
                    pcoefs = {} if pcoefs is None else pcoefs
                    pcoefs[str(name)] = pc
                    continue
                power[str(name)] = self._app_power(str(name), x[m], runs["power_w"][m])
        return DvfsAppModel(g, alpha, power, anomaly=bool(fluid_alpha_anomalous(raw)), pcoef=pcoefs)

    def _fitted_exponent(self, x: np.ndarray, power_w: np.ndarray) -> tuple[float, float, float]:
        """:func:`fit_power_exponent` anchored on the mean power at ``Fmax`` (when
        :attr:`anchor_fmax` and such runs exist)."""
        at = np.abs(x - 1.0) <= FMAX_RTOL
        anchor = float(np.mean(power_w[at])) if self.anchor_fmax and at.any() else None
        return fit_power_exponent(x, power_w, anchor)

    def _pcoef_of(self, model: DvfsAppModel | None, node_type: str) -> float:
        """The power exponent of one application (fitted, else the predictor's) on one type."""
        if model is None or not model.pcoef:
            return self.pcoef
        return model.pcoef.get(str(node_type), self.pcoef)

    def _anchored_power(self, x: np.ndarray, power_w: np.ndarray) -> tuple[float, float] | None:
        """``(Pstatic, Pdyn)`` with ``Pstatic + Pdyn`` = the mean measured power at ``Fmax``
        and ``Pdyn`` fitted on the other runs (``None`` without a run at ``Fmax``)."""
        at = np.abs(x - 1.0) <= FMAX_RTOL
        if not at.any():
            return None
        ps, pd_, _ = _power_fit(x, power_w, self.pcoef, float(np.mean(power_w[at])))
        return ps, pd_

    def _app_power(self, name: str, x: np.ndarray, power_w: np.ndarray) -> tuple[float, float]:
        ok = np.isfinite(power_w) & (power_w > 0)
        x, power_w = x[ok], power_w[ok]
        if len(np.unique(x)) >= 2 and self.anchor_fmax:
            got = self._anchored_power(np.asarray(x, dtype=float), np.asarray(power_w, dtype=float))
            if got is not None:
                return got
        if len(np.unique(x)) >= 2:
            return fit_power_law(x, power_w, self.pcoef)
        ps, pd_ = self._type_constants(name)
        if len(x) == 0:
            return ps, pd_
        # One frequency only: keep the node type's shape, match the observed level.
        scale = float(np.mean(power_w)) / float(fluid_power(x[0], ps, pd_, self.pcoef))
        return ps * scale, pd_ * scale

    @np.errstate(all="ignore")  # (as a decorator: half the cost of a with block)
    def _request_ratio(self, app: int, model: Any, store: _AppStore, work: np.ndarray) -> float:
        """The request ratio without :meth:`_shape` (same values): at the requested size and
        ``Fmax`` (``x = 1``) the shape is ``tau = g / n * ((1 - alpha) + alpha)``."""
        if store.bad_work or store.bad_fmax or not _fast_fit_ok(type(self)):
            return super()._request_ratio(app, model, store, work)
        alpha = 1.0
        if self.fluid_duration:
            alpha = model.alpha if math.isfinite(model.alpha) else self._prior_alpha()
        m = store.n_req
        req_nodes, req_time, _, instructions = store.requests()
        if 0 < m < 8:  # the same operations on a few floats (no run has n < 1 or t <= 0)
            g, scale = model.g, (1.0 - alpha) + alpha / 1.0
            return _geomean_few(
                [
                    w * (g / n * scale) / t
                    for n, t, w in zip(req_nodes.tolist(), req_time.tolist(), instructions.tolist())
                ]
            )
        tau_ref = model.g / req_nodes * ((1.0 - alpha) + alpha / 1.0)
        return geometric_mean_positive(instructions * tau_ref / req_time)

    def params_for(self, model: DvfsAppModel | None, node_type: str) -> FluidParams:
        """Fluid constants this predictor uses for one application (``None``: fallback) and node type."""
        if model is not None and str(node_type) in model.power:
            ps, pd_ = model.power[str(node_type)]
        else:
            ps, pd_ = self._type_constants(node_type)
        alpha = 1.0
        if self.fluid_duration:
            alpha = (
                self._prior_alpha()
                if model is None or not math.isfinite(model.alpha)
                else model.alpha
            )
        return FluidParams(ps, pd_, alpha, self._pcoef_of(model, node_type))

    def _constants(self, model: DvfsAppModel, node_type: str) -> tuple[float, float, float, float]:
        """``(Pstatic, Pdyn, alpha, pcoef)`` of :meth:`params_for` (without the FluidParams)."""
        if type(self).params_for is not DvfsPredictor.params_for:
            prm = self.params_for(model, node_type)
            return prm.pstatic_w, prm.pdyn_w, prm.alpha, prm.pcoef
        got = model.power.get(node_type)
        ps, pd_ = got if got is not None else self._type_constants(node_type)
        alpha = 1.0
        if self.fluid_duration:
            alpha = model.alpha if math.isfinite(model.alpha) else self._prior_alpha()
        return ps, pd_, alpha, self._pcoef_of(model, node_type)

    def _shape(self, app, model, node_type, nodes, freq_ghz):
        reliable = np.full(
            len(nodes),
            not self.fluid_duration or (np.isfinite(model.alpha) and not model.anomaly),
        )
        first = node_type[0] if len(node_type) else None
        if isinstance(first, str) and bool((node_type == first).all()):
            # one node type (e.g. a grid table): the loop below without masks, same values
            prm = self.params_for(model, first)
            fmax = self.info_.row_fmax(first, math.nan)  # == info_.fmax of every row
            if fmax is None:
                x = freq_ghz / self.info_.fmax(node_type, freq_ghz)
            else:
                x = freq_ghz / (freq_ghz if math.isnan(fmax) else fmax)  # NaN: unknown type
            tau = model.g / np.maximum(nodes, 1.0) * fluid_time_factor(x, prm.alpha)
            power = fluid_power(x, prm.pstatic_w, prm.pdyn_w, prm.pcoef)
            if self.power_per_app and first not in model.power:
                reliable[:] = False
            return (
                np.asarray(tau, dtype=np.float64),
                np.asarray(power, dtype=np.float64),
                reliable,
            )
        tau = np.empty(len(nodes))
        power = np.empty(len(nodes))
        for name in dict.fromkeys(node_type.tolist()):
            m = node_type == name
            prm = self.params_for(model, name)
            fmax = self.info_.fmax(node_type[m], freq_ghz[m])
            x = freq_ghz[m] / fmax
            tau[m] = model.g / np.maximum(nodes[m], 1.0) * fluid_time_factor(x, prm.alpha)
            power[m] = fluid_power(x, prm.pstatic_w, prm.pdyn_w, prm.pcoef)
            if self.power_per_app and str(name) not in model.power:
                reliable[m] = False
        return tau, power, reliable

    def _compute_table(self, app: int, state: Any, name: str, meta: tuple[Any, ...]) -> ShapeTable:
        """The base class's shape table as a ``g / n`` column times the fluid
        factor row (the same operations per cell as :meth:`_shape`); the power
        table is its one row broadcast (callers never write into the tables); with
        the table's bounds (:func:`~predictors.baselines.outer_table_bounds`)."""
        info = self.info_.get(name)
        if info is None or type(self)._shape is not DvfsPredictor._shape:
            return super()._compute_table(app, state, name, meta)
        model = state.model
        count, freqs = meta[0], meta[1]
        ps, pd_, alpha, pcoef = self._constants(model, name)
        # x = f / Fmax, kept per node type and frequencies (not per power exponent:
        # a fitted exponent is rarely seen twice, and x**pcoef is one small power)
        xkey = (name, meta[1].tobytes())
        x_rows = self.__dict__.get("_x_rows")
        if x_rows is None:
            x_rows = self.__dict__["_x_rows"] = {}
        x = x_rows.get(xkey)
        if x is None:
            x = x_rows[xkey] = freqs / info.fmax_ghz
        if isinstance(alpha, float):
            x_pow = np.asarray(x, dtype=float) ** pcoef
            tau, power, bounds = _fluid_table(model.g, count, x, alpha, ps, pd_, x_pow)
        else:
            factor = fluid_time_factor(x, alpha)
            power = np.asarray(fluid_power(x, ps, pd_, pcoef), dtype=np.float64)
            tau, power, bounds = _fluid_table_of_rows(model.g, count, factor, power)
        reliable = not self.fluid_duration or (math.isfinite(model.alpha) and not model.anomaly)
        if self.power_per_app and name not in model.power:
            reliable = False
        flags = constant_flags(count, len(freqs), reliable)
        # power does not depend on n: one row seen as the table (read-only, no copy)
        return tau, row_table(power, count), flags, bounds

    # ----------------------------------------------------------- profile API
    def profile(
        self, application: int, time_fmax_s: float, node_type: str | None = None, nodes: int = 1
    ) -> pd.DataFrame:
        """Time, power per node and energy at every P-state, given the runtime at ``Fmax`` (s)."""
        self._check_fitted()
        name = self.info_.default if node_type is None else str(node_type)
        info = self.info_.get(name)
        if info is None:
            raise KeyError(f"unknown node type {name!r}; known: {', '.join(self.info_.types)}")
        prm = self.params_for(self.model_of(application), name)
        return fluid_profile(time_fmax_s, info.freqs_ghz, prm, nodes, info.fmax_ghz)

    def optimal_freq(self, application: int, node_type: str | None = None) -> float:
        """Energy-optimal P-state (GHz) of one application on one node type (independent of size)."""
        self._check_fitted()
        name = self.info_.default if node_type is None else str(node_type)
        info = self.info_.get(name)
        if info is None:
            raise KeyError(f"unknown node type {name!r}; known: {', '.join(self.info_.types)}")
        return optimal_freq(
            info.freqs_ghz, self.params_for(self.model_of(application), name), info.fmax_ghz
        )


def benchmark_power_constants(
    benchmarks: pd.DataFrame,
    info: PlatformInfo,
    pcoef: float = 2.0,
    benchmark: str | None = "mean",
) -> dict[str, tuple[float, float]]:
    """``(Pstatic, Pdyn)`` per node type and platform-wide (key ``"*"``) from benchmark power.

    ``benchmark``: a benchmark name, ``None`` (the first benchmark in sorted
    order) or ``"mean"`` (fit each benchmark, average the constants). Uses the
    benchmark rows at full cores (largest core count per node type). Without
    benchmarks: the P-state full-load power of each node type; without those,
    :data:`DEFAULT_PSTATIC_W`, :data:`DEFAULT_PDYN_W`.
    """
    out: dict[str, tuple[float, float]] = {}
    pooled_x: list[np.ndarray] = []
    pooled_p: list[np.ndarray] = []
    bench = benchmarks
    if bench is not None and len(bench):
        if "cores" in bench and bench["cores"].notna().any():
            full = bench.groupby("node_type")["cores"].transform("max")
            bench = bench[bench["cores"] == full]
        names = sorted(bench["benchmark"].unique().tolist())
        chosen = names if benchmark == "mean" else [names[0] if benchmark is None else benchmark]
        if benchmark not in (None, "mean") and benchmark not in names:
            raise KeyError(f"unknown benchmark {benchmark!r}; known: {', '.join(names)}")
        for tname, tb in bench.groupby("node_type", sort=False):
            t = info.get(tname)
            fmax = t.fmax_ghz if t is not None else float(tb["freq_ghz"].max())
            pairs = []
            for b in chosen:
                rows = tb[tb["benchmark"] == b]
                if rows["freq_ghz"].nunique() < 2:
                    continue
                x = rows["freq_ghz"].to_numpy(dtype=float) / fmax
                p = rows["power_w"].to_numpy(dtype=float)
                pairs.append(fit_power_law(x, p, pcoef))
                pooled_x.append(x)
                pooled_p.append(p)
            if pairs:
                out[str(tname)] = (
                    float(np.mean([a for a, _ in pairs])),
                    float(np.mean([b for _, b in pairs])),
                )
    for name, t in info.types.items():
        if name in out:
            continue
        if np.all(np.isfinite(t.busy_power_w)) and len(t.freqs_ghz) >= 2:
            x = t.freqs_ghz / t.fmax_ghz
            out[name] = fit_power_law(x, t.busy_power_w, pcoef)
            pooled_x.append(x)
            pooled_p.append(t.busy_power_w)
    if pooled_x:
        out["*"] = fit_power_law(np.concatenate(pooled_x), np.concatenate(pooled_p), pcoef)
    else:
        out["*"] = (DEFAULT_PSTATIC_W, DEFAULT_PDYN_W)
    return out


class NaiveDvfsPredictor(DvfsPredictor):
    """DVFS ``naive``: one platform-wide ``(Pstatic, Pdyn)`` from one benchmark; ``D ~ Fmax/f``.

    ``benchmark``: which benchmark (``None``: the first in sorted order).
    Power does not depend on the application, so unseen applications get
    this power too (time from the contract fallback, ``reliable = False``).
    """

    name = "dvfs-naive"

    def __init__(self, pcoef: float = 2.0, benchmark: str | None = None) -> None:
        self.pcoef = pcoef
        self.benchmark = benchmark

    def _platform_constants(self, observations: Observations) -> dict[str, tuple[float, float]]:
        consts = benchmark_power_constants(
            observations.benchmarks, self.info_, self.pcoef, self.benchmark
        )
        return {"*": consts["*"]}

    def _fallback_power(self, names, freq_ghz):
        fmax = self.info_.fmax(names, freq_ghz)
        ps, pd_ = self.type_power_["*"]
        return fluid_power(freq_ghz / fmax, ps, pd_, self.pcoef)


class NodeTypeDvfsPredictor(DvfsPredictor):
    """DVFS ``per-node-type``: ``(Pstatic, Pdyn)`` per node type; ``D ~ Fmax/f``.

    ``benchmark``: ``"mean"`` (average of the constants fitted on every
    benchmark, default), a benchmark name, or ``None`` (the first one).
    Unseen applications get this power too (time from the contract fallback).
    """

    name = "dvfs-node-type"

    def __init__(self, pcoef: float = 2.0, benchmark: str | None = "mean") -> None:
        self.pcoef = pcoef
        self.benchmark = benchmark

    def _platform_constants(self, observations: Observations) -> dict[str, tuple[float, float]]:
        return benchmark_power_constants(
            observations.benchmarks, self.info_, self.pcoef, self.benchmark
        )

    def _fallback_power(self, names, freq_ghz):
        out = np.empty(len(names))
        fmax = self.info_.fmax(names, freq_ghz)
        for name in dict.fromkeys(names.tolist()):
            m = names == name
            ps, pd_ = self._type_constants(name)
            out[m] = fluid_power(freq_ghz[m] / fmax[m], ps, pd_, self.pcoef)
        return out


class PerAppDvfsPredictor(DvfsPredictor):
    """DVFS ``per-app``: ``(Pstatic, Pdyn)`` per (node type, application) from its runs; ``D ~ Fmax/f``.

    Needs runs at two frequencies for both constants; with one frequency the
    node type's benchmark constants are scaled to the observed power level.
    """

    name = "dvfs-per-app"
    power_per_app = True


class FluidPredictor(DvfsPredictor):
    """DVFS ``fluid``: per (node type, application) power and ``alpha`` (see :func:`fit_alpha`).

    ``alpha`` needs runs of the application at two frequencies on the same
    node type and node count; until then the mean ``alpha`` of the
    applications fitted so far is used (1.0 before any) and the rows are
    marked ``reliable = False``.

    Calibration rules (the same as :func:`calibrate_dvfs_curve`'s, over jobs of
    different sizes and inputs): a fitted ``alpha`` more than
    ``ALPHA_ANOMALY_TOL`` (0.05) outside ``[0, 1]`` is an anomaly (logged, :meth:`anomalous_applications`, rows ``reliable =
    False``) and is refitted on ``[0, 1]`` (the nearest bound); ``T(Fmax)`` is
    anchored on the application's runs at ``Fmax`` when it has any (their
    geometric mean, work-normalised), and so is ``P(Fmax)`` (their mean power;
    ``Pdyn`` fits the other runs). With ``fit_pcoef`` (default) the power
    exponent of a node type is fitted (:func:`fit_power_exponent`) once the
    application's runs there have a power at three distinct clocks; before,
    ``pcoef`` (default 2). Cost: an exponent fit (:func:`_anchored_exponent_fit`)
    is about 70,000 instructions with its compiled step (120,000 without); the
    1,800 of the predictor-driven replay of the first 20,000 CTC-SP2 jobs
    (``benchmarks/bench_policies.py --instructions``) are about 1 % of its
    instructions; ``fit_pcoef=False`` avoids them.
    """

    name = "fluid"
    fluid_duration = True
    power_per_app = True
    anchor_fmax = True

    def __init__(self, pcoef: float = 2.0, fit_pcoef: bool = True) -> None:
        self.pcoef = pcoef
        self.fit_pcoef = bool(fit_pcoef)

    def _fit_global(self, observations: Observations) -> None:
        super()._fit_global(observations)
        self._anomalous: dict[int, float] = {}
        self._warned = False
        self.alphas_: dict[int, float] = {}
        self._prior_cache: float | None = None
        # the mean of alphas_ when it last changed (recomputed only after a change)
        self._prior_value = 1.0
        self._alphas_changed = False
        self._alpha_values = _OrderedValues()  # alphas_'s values, in its order

    def _runs_added(self, apps: list[int]) -> None:
        self._prior_cache = None

    def _alpha_of(self, runs: AppRuns, work: np.ndarray, x: np.ndarray) -> float:
        # the raw value: the fit clips it to ALPHA_BOUNDS and flags an anomaly
        return fit_alpha(x, runs["time_s"] / work, _config_groups(runs), clip=False)

    def _fit_app(self, app: int, runs: AppRuns, work: np.ndarray) -> DvfsAppModel:
        model = super()._fit_app(app, runs, work)
        anomalous = self.__dict__.setdefault("_anomalous", {})
        if model is not None and model.anomaly:
            if app not in anomalous:
                # the first anomaly of a fit at WARNING, the others at INFO (a replay
                # may have hundreds): anomalous_applications() lists them all
                anomalous[app] = model.alpha
                first = len(anomalous) == 1 and not self.__dict__.get("_warned", False)
                self.__dict__["_warned"] = True
                log.log(
                    logging.WARNING if first else logging.INFO,
                    "fluid: application %s: the fitted alpha is outside [0, 1] (its runs do "
                    "not follow the fluid model); alpha refitted to %g on [0, 1], its "
                    "predictions are marked not reliable%s",
                    app,
                    model.alpha,
                    " (further anomalies at INFO level)" if first else "",
                )
        else:
            anomalous.pop(app, None)
        alphas = self.alphas_
        if model is not None and math.isfinite(model.alpha):
            if alphas.get(app, math.nan) != model.alpha:
                alphas[app] = model.alpha
                self._alpha_values.set(app, model.alpha)
                self._alphas_changed = True
        elif app in alphas:
            del alphas[app]
            self._alpha_values.delete(app)
            self._alphas_changed = True
        return model

    def anomalous_applications(self) -> list[int]:
        """Applications whose fitted ``alpha`` is outside ``[0, 1]`` (calibration anomalies:
        refitted on the range, predictions not reliable)."""
        self._check_fitted()
        return sorted(self.__dict__.get("_anomalous", {}))

    def _grid_token(self, state: Any) -> Any:
        # an application without its own alpha uses the prior (mean over applications)
        return None if math.isfinite(state.model.alpha) else self._prior_alpha()

    def _prior_alpha(self) -> float:
        """The mean ``alpha`` of the applications that have one (1.0 before any), as of
        the first call after the last update began (kept while ``alphas_`` is unchanged)."""
        if self._prior_cache is None:
            if self._alphas_changed:
                vals = self.alphas_
                n = len(vals)
                kept = self._alpha_values
                # == np.mean(list(vals.values())): the same pairwise sum / n, over the
                # values kept in the dict's order (or read from the dict if it was
                # changed by other means)
                if kept.n == n and n:
                    self._prior_value = float(np.add.reduce(kept.view()) / n)
                else:
                    self._prior_value = (
                        float(np.add.reduce(np.fromiter(vals.values(), np.float64, n)) / n)
                        if n
                        else 1.0
                    )
                self._alphas_changed = False
            self._prior_cache = self._prior_value
        return float(self._prior_cache)


class OnlineDvfsPredictor(DvfsPredictor):
    """DVFS ``online``: ``Pstatic``, ``Pdyn``, ``alpha`` regressed on counters + RAPL power.

    Training set: every application whose fluid constants can be calibrated
    from its own runs (runs at two frequencies, see :class:`FluidPredictor`);
    samples are its runs at ``Fmin`` and at ``Fmax`` (features: the 4 counter
    medians and RAPL power; targets: the calibrated constants). Because
    counter rates depend on the frequency, one regression (5 weights +
    intercept per target) is kept per frequency level (``Fmin``, ``Fmax``),
    per node type (``per_node_type=True``) or pooled over node types
    (generic: ``Pstatic`` with each node type's mean idle power removed).

    Prediction for an application uses the mean features of its own runs at
    ``Fmax`` (else at ``Fmin``, else at any frequency with the nearer level's
    regression): one run, at any frequency, is enough, unlike ``fluid``. The
    regressions are kept as normal-equation sums and updated incrementally
    (an application's contribution is replaced when it is refitted).
    """

    name = "online-node-type"
    fluid_duration = True

    _grid_ok = False  # _shape reads per-type regressions: generic path

    def __init__(self, pcoef: float = 2.0, per_node_type: bool = True) -> None:
        self.pcoef = pcoef
        self.per_node_type = per_node_type

    def _fit_global(self, observations: Observations) -> None:
        super()._fit_global(observations)
        self._xtx: dict[tuple[str, str], np.ndarray] = {}
        self._xty: dict[tuple[str, str], np.ndarray] = {}
        self._contrib: dict[int, list[tuple[tuple[str, str], np.ndarray, np.ndarray]]] = {}
        self._coef_cache: dict[tuple[str, str], np.ndarray | None] = {}
        #: (application, node type) whose regressed alpha was an anomaly, logged once
        self._extrapolated: set[tuple[int, str]] = set()
        self.idle_mean_ = {
            name: float(np.nanmean(t.idle_power_w)) if np.any(np.isfinite(t.idle_power_w)) else 0.0
            for name, t in self.info_.types.items()
        }

    def _key(self, name: str, level: str) -> tuple[str, str]:
        return (str(name) if self.per_node_type else "*", level)

    def _fit_app(self, app: int, runs: AppRuns, work: np.ndarray) -> DvfsAppModel:
        names = np.where(pd.isna(runs["node_type"]), self.info_.default, runs["node_type"]).astype(
            object
        )
        fmax = self.info_.fmax(names, runs["freq_ghz"])
        fmin = self.info_.fmin(names, runs["freq_ghz"])
        f = runs["freq_ghz"]
        x = f / fmax
        tau = runs["time_s"] / work
        feats = np.column_stack([runs[c] for c in ONLINE_FEATURES])
        # remove this application's old contribution to the regressions
        for key, a, b in self._contrib.pop(app, []):
            self._xtx[key] -= a
            self._xty[key] -= b
            self._coef_cache.pop(key, None)
        contrib = []
        features: dict[str, tuple[str, np.ndarray]] = {}
        for name in dict.fromkeys(names.tolist()):
            m = names == name
            at_max = m & np.isclose(f, fmax)
            at_min = m & np.isclose(f, fmin) & ~at_max
            finite = np.all(np.isfinite(feats), axis=1)
            if (at_max & finite).any():
                features[str(name)] = ("fmax", feats[at_max & finite].mean(axis=0))
            elif (at_min & finite).any():
                features[str(name)] = ("fmin", feats[at_min & finite].mean(axis=0))
            elif (m & finite).any():
                xm = float(np.mean(x[m & finite]))
                fmin_x = float(np.mean(fmin[m] / fmax[m]))
                level = "fmax" if xm >= (1.0 + fmin_x) / 2 else "fmin"
                features[str(name)] = (level, feats[m & finite].mean(axis=0))
            # training samples: calibrate this app on this node type
            alpha = fit_alpha(x[m], tau[m], runs["nodes"][m])
            if not np.isfinite(alpha):
                continue
            try:
                ps, pd_ = fit_power_law(x[m], runs["power_w"][m], self.pcoef)
            except ValueError:
                continue
            if not self.per_node_type:
                ps -= self.idle_mean_.get(str(name), 0.0)
            target = np.array([ps, pd_, alpha])
            for level, sel in (("fmax", at_max & finite), ("fmin", at_min & finite)):
                if not sel.any():
                    continue
                design = np.column_stack([np.ones(sel.sum()), feats[sel]])
                a = design.T @ design
                b = design.T @ np.tile(target, (int(sel.sum()), 1))
                key = self._key(name, level)
                self._xtx[key] = self._xtx.get(key, np.zeros((6, 6))) + a
                self._xty[key] = self._xty.get(key, np.zeros((6, 3))) + b
                self._coef_cache.pop(key, None)
                contrib.append((key, a, b))
        if contrib:
            self._contrib[app] = contrib
        if not features:
            return None  # type: ignore[return-value]
        g = geometric_mean(
            tau * runs["nodes"] / x
        )  # refined at predict time with the regressed alpha
        return DvfsAppModel(g, math.nan, {}, features)

    def coefficients(
        self, node_type: str | None = None, level: str = "fmax"
    ) -> OnlineLinearModel | None:
        """The current regression (``None`` while it has no training run)."""
        self._check_fitted()
        key = self._key(self.info_.default if node_type is None else node_type, level)
        if key not in self._coef_cache:
            xtx = self._xtx.get(key)
            self._coef_cache[key] = (
                None if xtx is None or xtx[0, 0] < 0.5 else _solve_normal(xtx, self._xty[key])
            )
        coef = self._coef_cache[key]
        return None if coef is None else OnlineLinearModel(coef)

    def params_for(self, model: DvfsAppModel | None, node_type: str) -> FluidParams:
        return self._regressed(model, node_type)[0]

    def _regressed(self, model: DvfsAppModel | None, node_type: str) -> tuple[FluidParams, float]:
        """The fluid constants regressed from the application's counter features
        (``alpha`` clipped to :data:`ALPHA_BOUNDS`) and the regression's raw
        ``alpha``. A raw ``alpha`` outside ``[0, 1]`` by more than the anomaly
        tolerance (:func:`_anomalous`) is an extrapolation beyond the
        applications the regression was fitted on: :meth:`_shape` marks those
        rows unreliable and logs it once per application and node type."""
        if model is None or not model.features:
            ps, pd_ = self._type_constants(node_type)
            return FluidParams(ps, pd_, 1.0, self.pcoef), 1.0
        level, feats = model.features.get(str(node_type), next(iter(model.features.values())))
        reg = self.coefficients(node_type, level) or self.coefficients(
            node_type, "fmin" if level == "fmax" else "fmax"
        )
        if reg is None:
            ps, pd_ = self._type_constants(node_type)
            return FluidParams(ps, pd_, math.nan, self.pcoef), math.nan
        ps, pd_, alpha = reg.predict(feats)[0]
        if not self.per_node_type:
            ps += self.idle_mean_.get(str(node_type), 0.0)
        params = FluidParams(
            max(float(ps), 0.0),
            max(float(pd_), 0.0),
            float(np.clip(alpha, *ALPHA_BOUNDS)),
            self.pcoef,
        )
        return params, float(alpha)

    def _shape(self, app, model, node_type, nodes, freq_ghz):
        runs = self.runs_[app]
        tau = np.empty(len(nodes))
        power = np.empty(len(nodes))
        reliable = np.ones(len(nodes), dtype=bool)
        rnames = np.where(pd.isna(runs["node_type"]), self.info_.default, runs["node_type"]).astype(
            object
        )
        rx = runs["freq_ghz"] / self.info_.fmax(rnames, runs["freq_ghz"])
        work_tau_n = runs["time_s"] / run_work(runs) * runs["nodes"]
        for name in dict.fromkeys(node_type.tolist()):
            m = node_type == name
            prm, raw_alpha = self._regressed(model, name)
            alpha = prm.alpha
            if not np.isfinite(alpha):
                alpha, reliable[m] = 1.0, False
            elif _anomalous(raw_alpha):
                reliable[m] = False
                if (app, name) not in self._extrapolated:
                    self._extrapolated.add((app, name))
                    log.warning(
                        "%s: the regressed alpha of application %s on %s is %.4g, outside "
                        "[0, 1] (its counters lie beyond the applications the regression "
                        "learnt from); clipped to %g, its predictions marked unreliable",
                        self.name,
                        app,
                        name,
                        raw_alpha,
                        alpha,
                    )
            g = geometric_mean(work_tau_n / fluid_time_factor(rx, alpha))
            x = freq_ghz[m] / self.info_.fmax(node_type[m], freq_ghz[m])
            tau[m] = g / np.maximum(nodes[m], 1.0) * fluid_time_factor(x, alpha)
            power[m] = fluid_power(x, prm.pstatic_w, prm.pdyn_w, self.pcoef)
        return tau, power, reliable


__all__ = [
    "ALPHA_BOUNDS",
    "PCOEF_BOUNDS",
    "CurveCalibration",
    "DvfsAppModel",
    "DvfsPredictor",
    "FluidParams",
    "FluidPredictor",
    "NaiveDvfsPredictor",
    "NodeTypeDvfsPredictor",
    "OnlineDvfsPredictor",
    "OnlineLinearModel",
    "PerAppDvfsPredictor",
    "benchmark_power_constants",
    "calibrate_dvfs_curve",
    "calibrate_fluid",
    "calibration_clock_indices",
    "exploration_clock_index",
    "fit_alpha",
    "fit_online_model",
    "fit_power_exponent",
    "fit_power_exponent_of_means",
    "fit_power_law",
    "fluid_power",
    "fluid_profile",
    "fluid_time_factor",
    "optimal_freq",
    "optimal_x_analytic",
]
