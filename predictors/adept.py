"""ADEPT: fit Downey's speedup model from a few observations (docs/background/models.md, section 2.2), and its predictor.

:func:`fit_downey` implements every step of docs/background/models.md, section 2.2 on runtimes
``t_i`` measured at node counts ``n_i`` (``T(1)`` optional):

1. **Envelope** (:mod:`predictors.adept_envelope`): pairwise closed forms for
   every piece assumption of both variance modes, widened by ``+-delta``,
   contained range pairs dropped, ``delta`` doubled until some instance
   explains every point within ``delta`` (up to ``delta_max``).
2. **Curve fitting per target** by the weighted sum of squared relative
   errors ``WSSRE = sum_i W_i ((L h_i - t_i)/t_i)^2``, ``h = 1/S``, weights
   ``W_i = q max_j |n_target - n_j| - |n_target - n_i|``.

   *Closed-form L* (derivation): ``d WSSRE / dL = 2 sum_i W_i r_i (L r_i - 1) = 0``
   with ``r_i = h_i / t_i`` gives ``L* = sum W r / sum W r^2`` and
   ``WSSRE(L*) = sum W - (sum W r)^2 / sum W r^2``. ``L`` is ``T(1)``.

   *Deterministic sums*: every sum over the points (the candidates' WSSRE,
   the grid's coefficients, the final ``L*``) runs left to right over the
   sorted points, one vectorised operation per point, never through a BLAS
   matrix product; so a candidate's WSSRE depends on its ``(A, sigma)`` and
   the data only (not on its position among, or the number of, the other
   candidates), within a few ulps of ``sum W`` of the exact value (tested
   against long-double sums).

   *1-D search*: ``n_1d`` values of ``A`` spread log-uniformly over the
   envelope's ``A`` intervals; for each, ``sigma`` is solved in closed form
   (:func:`predictors.adept_envelope.pair_sigma`) so that the model passes
   through the observation closest to the target -- "passes through" fixes
   the ratio of that observation to a reference whose scale is known: ``T(1)``
   when given (then ``L = T(1)`` and the model goes through the point
   exactly), else the second-closest observation (the scale ``L`` being
   unknown, two points are needed to pin one degree of freedom). Then ``L*``.
   **(project choice; tie rule, issue 14)** candidates whose WSSRE is within
   ``32 eps sum W`` of the smallest are ties up to rounding: whole curves of
   candidates can predict the same runtimes at every point (e.g. all points
   in the Amdahl-like first piece: then every ``A`` above the largest point
   explains them equally), and rounding must not choose among them. The rule
   (:data:`TIE_RULE`, default ``"largest"``) takes the tied candidate with the
   **largest** ``A``: the plateau is put where no observation contradicts it
   rather than at the largest observed size (the former rule, the first tie in
   block order, predicted that scaling stops right after the data; on 13
   measured strong-scaling extrapolations its median accuracy was -48 %; on
   the 67 extrapolations of the bundled corpus (``predictors validate``,
   :func:`fit_downey` weighted for each predicted size) the first tie gives a
   median accuracy of 9 %, the largest ``A`` 82 %, and the geometric middle
   of the tied ``A`` interval, ``"middle"``, 80 %). The 2-D
   search below runs from both the first tie and the pick, and the pick's
   result is kept unless the first's WSSRE is below half of it (on exact
   Downey points the first tie's neighbourhood reaches the truth, WSSRE ~ 0,
   and the seed figures are unchanged). The tied interval's two ends become
   :attr:`TargetFit.alternatives` (the fit's uncertainty).

   *2-D search*: ``n_2d x n_2d`` grid of ``A*(1 +- v)`` x ``sigma*(1 +- v)``
   around the 1-D optimum (``sigma`` half-width at least ``v * 0.1`` so that
   ``sigma* = 0`` still searches). For a fixed ``A``, ``h`` is linear in
   ``sigma`` (low variance) or ``(1 + sigma) h`` is (high variance, where
   ``1 + sigma`` cancels in ``WSSRE(L*)``), so ``sum W r`` and ``sum W r^2``
   are polynomials in ``sigma`` whose coefficients depend on ``A`` only (and,
   in the high mode, on how many points lie before the knee, a prefix of the
   sorted points). Two evaluations of the same grid are available
   (``grid=``): ``"broadcast"`` materialises all ``n_2d x n_2d`` WSSRE values
   in one broadcast expression (the reference, ~20 ms of CPU: memory-bound);
   ``"exact"`` (default) returns the *same grid cell* without materialising
   it, because along a row segment of constant coefficients WSSRE has a
   single interior minimum in closed form, so only 4 columns per segment can
   win (see ``_grid_argmin``; tested to equal the brute-force argmin). This
   is neither a coarse-to-fine search nor a change of resolution or extent.
3. **Anomaly detection** (4+ points): ``R_i`` of docs/background/models.md, candidates after
   each rise ``R_{i+1} > (1 + epsilon) R_i``, the candidate whose removal
   flattens ``R`` most (smallest total upward fluctuation
   ``sum max(0, R_{i+1}/R_i - 1)`` after removal), ``D = (R_{j+1} - R_j)/epsilon``,
   ``W' = max(0, W (theta - min(phi, D))/phi)``. **(project choice)** the
   ``R`` test alone also fires on exact data with irregular spacing (``R``
   of a linear speedup is ``2 - n_i/n_{i+1}``), so a candidate is confirmed
   only when the model fitted to the other points (target = the candidate)
   misses it by more than ``poor_fit``. **(issue 14)** the anomaly's weight is
   not reduced in the fit of a target whose nearest observation it is (it is
   the point that says most about that target: on measured curves it was
   often the one showing that scaling continues).
4. **Patterns.** Stepwise scalability: a rise of ``R`` that no single
   removal flattens, 5+ points, confirmed by a poor single-model fit:
   the points are split after the rise into two phases (each 2+ points),
   one model per phase, each target uses the phase of the observation
   nearest to it. Specially-optimised sizes (9+ points): families of regular
   sizes (powers of two, multiples of 2, 4, 8, 16) are tried; a family is
   accepted when the model fitted to the other points (3+) misses every
   member (3+) by more than ``poor_fit`` on the fast side; then only the
   family's points are kept and the feasible sizes are reported.
5. **Reliability judgment** as data (:class:`AdeptWarning`):
   ``all_linear`` (every point in the first piece: low variance and
   ``n_i <= A``, or -- extension -- high variance and ``n_i <=`` the knee;
   suggests the end of that piece), ``poor_fit`` (max relative error of
   **every** point of the fit, down-weighted ones included, ``> poor_fit``),
   ``runner_up`` (a 1-D instance with
   ``WSSRE <= 1.1 x`` best and ``A`` more than 1.5x different; suggests the
   size outside the observed range where the two predictions differ most),
   ``target_not_optimised`` (specially-optimised pattern and the target is
   not a feasible size), and (issue 14) ``exact_fit`` (no more points used
   than the model's 3 parameters: the fit is exact whatever the data),
   ``superlinear`` (a step with ``t_i n_i > 1.05 t_{i+1} n_{i+1}``: Downey's
   speedup never is), ``unsupported_plateau`` (target ``>= 2x`` the largest
   point, on the plateau -- speedup ``>= 0.9 A`` -- while no point lies at or
   beyond ``1.25 A``). Detected anomalies and patterns are reported in
   ``notes`` (they do not make a fit unreliable). Each target's
   ``uncertainty`` is the largest relative gap at the target between the fit
   and its alternatives (tied ends, runner-up), at least its largest
   fitting error.
6. **Derived quantities**: largest useful ``n``, processor working set
   (smallest integer ``n`` maximising ``S(n)^2/n``).

:class:`AdeptPredictor` wraps it in the predictor contract of
:mod:`predictors.base` (see its docstring for per-job scaling and refits).
"""

from __future__ import annotations

import bisect
import inspect
import logging
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from energysched.errors import ConfigError
from predictors.adept_envelope import (
    Envelope,
    EnvelopeIntervals,
    PairCurves,
    _envelope,
    _Grid,
    envelope,
    envelope_grid,
    inv_speedup,
    inv_speedup_high,
    inv_speedup_low,
    pair_sigma,
)
from predictors.baselines import (
    AmdahlModel,
    AppRuns,
    PerApplicationPredictor,
    ShapeTable,
    _AppStore,
    constant_flags,
    fit_amdahl,
    geometric_mean_positive,
    nnls_two_columns,
    outer_product,
    outer_table_bounds,
    row_table,
)

log = logging.getLogger(__name__)

#: The compiled twin of :func:`_grid_argmin` (``predictors._adept_kernels``, built by
#: ``pip install`` with a C compiler; the same cell and value, tested), or None: then
#: the Python function runs.
try:
    from predictors._adept_kernels import grid_argmin as compiled_grid_argmin
except ImportError:  # installed without a C compiler, or a source tree not built
    compiled_grid_argmin = None

#: The compiled twin of :func:`_pair_candidates_sorted` (the same candidates, tested),
#: or None: then the NumPy expressions run.
try:
    from predictors._adept_kernels import pair_candidates as compiled_pair_candidates
except ImportError:  # installed without a C compiler, or a source tree not built
    compiled_pair_candidates = None

#: The compiled twins of :func:`_candidate_wssre`'s blocks (``candidate_wssre`` of an
#: ``(A, s)`` block, ``product_wssre`` of a product block with its pruned prefixes;
#: the same values, tested), or None: then the NumPy expressions run.
try:
    from predictors._adept_kernels import candidate_wssre as compiled_candidate_wssre
    from predictors._adept_kernels import product_wssre as compiled_product_wssre
except ImportError:  # installed without a C compiler, or a source tree not built
    compiled_candidate_wssre = compiled_product_wssre = None

__all__ = [
    "AdeptFit",
    "AdeptModel",
    "AdeptPredictor",
    "AdeptWarning",
    "TargetFit",
    "_speedup",
    "fit_downey",
    "fit_downey_params",
]

#: Fallback sigma values tried in the 1-D search where the two reference
#: points are both flat (then the ratio leaves sigma free).
_DEGENERATE_SIGMAS = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0])

#: Candidates of the 1-D search whose WSSRE is within ``_TIE_EPS x sum W`` of
#: the smallest are ties up to rounding (WSSRE = sum W - s1^2/s2 is computed to
#: a few ulps of sum W); the first of them is the 1-D optimum.
_TIE_EPS = 32.0 * float(np.finfo(np.float64).eps)

#: The 2-D result from the tie rule's pick is kept unless the first tie's WSSRE is below
#: this fraction of it (then the first tie's neighbourhood explains the data clearly
#: better: on exact Downey points it reaches the truth, WSSRE ~ 0).
_TIE_2D = 0.5

#: Parameters of Downey's model (A, sigma, L): a fit on this many observations or
#: fewer is exact whatever the data (warning ``exact_fit``).
_N_PARAMETERS = 3

#: A step ``n_i -> n_{i+1}`` is superlinear when ``t_i n_i > (1 + tol) t_{i+1} n_{i+1}``
#: (warning ``superlinear``; 5 %: above the run-to-run noise of the measured curves).
_SUPERLINEAR_TOL = 0.05

#: Warning ``unsupported_plateau``: the target is at least ``_FAR_FACTOR`` x the largest
#: observation, the model's speedup there is at least ``_PLATEAU_SHARE`` of its plateau
#: ``A``, and no observation lies at or beyond ``_SUPPORT_FACTOR x A`` (where the bend
#: towards the plateau shows in the data).
_FAR_FACTOR = 2.0
_PLATEAU_SHARE = 0.9
_SUPPORT_FACTOR = 1.25


def _speedup(n: np.ndarray | float, A: np.ndarray | float, sigma: np.ndarray | float) -> np.ndarray:
    """Downey speedup ``S(n)``, both variance modes, vectorised (broadcasts all arguments)."""
    return 1.0 / inv_speedup(n, A, sigma)


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class AdeptWarning:
    """A reliability warning: ``code`` (``all_linear``, ``poor_fit``, ``runner_up``,
    ``target_not_optimised``, ``exact_fit``, ``superlinear``, ``unsupported_plateau``), a human message, the target it concerns and the
    suggested next observation (node count) when the warning has one."""

    code: str
    message: str
    target: float | None = None
    suggested_n: int | None = None


@dataclass(frozen=True)
class TargetFit:
    """The fit for one target.

    ``points``: indices (into :attr:`AdeptFit.obs_nodes`) of the points used;
    ``weights``: final weight of every observation (0 where unused), after
    the anomaly reduction; ``runner_up``: ``(A, sigma, L)`` of the runner-up
    instance when warning (c) fired; ``alternatives``: ``(A, sigma, L)`` of the
    instances that explain the points (almost) as well: the tied 1-D candidates
    with the smallest and the largest ``A``, and the runner-up;
    ``uncertainty``: relative uncertainty of the runtime at the target, the
    largest relative gap between the alternatives' predictions and the fit's
    there, and at least ``max_rel_error``. :attr:`working_set` is computed when
    first read (a predictor's refits never read it).
    """

    target: float
    A: float
    sigma: float
    L: float
    runtime: float
    speedup: float
    max_useful_n: float
    wssre: float
    max_rel_error: float
    points: np.ndarray
    weights: np.ndarray
    warnings: tuple[AdeptWarning, ...]
    runner_up: tuple[float, float, float] | None = None
    uncertainty: float = math.nan
    alternatives: tuple[tuple[float, float, float], ...] = ()

    @cached_property
    def working_set(self) -> int:
        """The processor working set: the smallest ``n`` maximising ``S(n)^2 / n``."""
        return _working_set(self.A, self.sigma)


@dataclass(frozen=True)
class AdeptFit:
    """Result of :func:`fit_downey`. Per-target arrays follow the order of ``targets``.

    ``obs_nodes``/``obs_runtimes``: distinct node counts (sorted, ``T(1)``
    included as ``n = 1`` when given) and their averaged runtimes;
    ``dropped``: measurements dropped as outliers of repeated sizes;
    ``delta``: the envelope's final ``delta``; ``anomaly``: index of the
    detected anomaly (or None) and ``anomaly_deviation`` its ``D``;
    ``phases``: index arrays of the two phases of a stepwise pattern (or
    None); ``feasible_sizes``: the specially-optimised sizes (or None);
    ``notes``: informational records (anomaly, patterns); :attr:`envelope`:
    the envelope of the fitted points, computed when first read (from
    ``envelope_of``: those points, ``delta``, ``delta_max`` and ``a_max`` of
    the fit; the search reads only its ``delta`` and ``A`` intervals, so a
    fit builds no boxes).
    """

    targets: np.ndarray
    fits: tuple[TargetFit, ...]
    obs_nodes: np.ndarray
    obs_runtimes: np.ndarray
    dropped: int
    delta: float
    anomaly: int | None = None
    anomaly_deviation: float | None = None
    phases: tuple[np.ndarray, np.ndarray] | None = None
    feasible_sizes: np.ndarray | None = None
    notes: tuple[AdeptWarning, ...] = field(default_factory=tuple)
    envelope_of: tuple[np.ndarray, np.ndarray, float, float, float] | None = field(
        default=None, repr=False, compare=False
    )

    @cached_property
    def envelope(self) -> Envelope:
        """The envelope (:func:`~predictors.adept_envelope.envelope`) of the fitted points:
        the same as the fit's own (the envelope of a subset of points is that of its
        points, tested)."""
        if self.envelope_of is None:
            raise ValueError("AdeptFit: no envelope inputs (envelope_of) given")
        n, t, delta, delta_max, a_max = self.envelope_of
        return envelope(n, t, delta=delta, delta_max=delta_max, a_max=a_max)

    @property
    def A(self) -> np.ndarray:
        return np.array([f.A for f in self.fits])

    @property
    def sigma(self) -> np.ndarray:
        return np.array([f.sigma for f in self.fits])

    @property
    def L(self) -> np.ndarray:
        return np.array([f.L for f in self.fits])

    @property
    def runtimes(self) -> np.ndarray:
        """Predicted runtime at each target."""
        return np.array([f.runtime for f in self.fits])

    @property
    def speedups(self) -> np.ndarray:
        """Predicted speedup ``S(target)`` at each target."""
        return np.array([f.speedup for f in self.fits])

    @property
    def max_useful_n(self) -> np.ndarray:
        return np.array([f.max_useful_n for f in self.fits])

    @property
    def working_set(self) -> np.ndarray:
        return np.array([f.working_set for f in self.fits])

    @property
    def warnings(self) -> tuple[AdeptWarning, ...]:
        """Every target's warnings, in target order."""
        return tuple(w for f in self.fits for w in f.warnings)

    @property
    def suggested_n(self) -> int | None:
        """The first suggested next observation among the warnings (None when none)."""
        for w in self.warnings:
            if w.suggested_n is not None:
                return w.suggested_n
        return None

    @property
    def reliable(self) -> bool:
        return not self.warnings


# ----------------------------------------------------------------------------- numerics


def _weights(n: np.ndarray, target: float, q: float) -> np.ndarray:
    """``W_i = q max_j |n_t - n_j| - |n_t - n_i|`` (all ones when every n equals the target)."""
    d = [abs(target - x) for x in n.tolist()]
    top = q * max(d)
    w = [top - x for x in d]
    if not any(x > 0 for x in w):
        return np.ones_like(n)
    return np.array([x if x > 0.0 else 0.0 for x in w])


def _inv1(x: float, A: float, s: float) -> float:
    """:func:`inv_speedup` of scalars, with the same operations (``x`` the node count)."""
    if s <= 1.0:
        return 1.0 / min(x, A) + s * (max(min(x - 1.0, 2.0 * A - 1.0 - x), 0.0) / (2.0 * A * x))
    return max((A + s * (A - 1.0 + x)) / (x * A * (1.0 + s)), 1.0 / A)


def _inv_mode(n: np.ndarray, A: float, s: float) -> np.ndarray:
    """:func:`inv_speedup` at scalar ``(A, s)``: only the formulas of its mode (same values)."""
    return inv_speedup_low(n, A, s) if s <= 1.0 else inv_speedup_high(n, A, s)  # type: ignore[arg-type]


def _max_useful1(A: float, s: float) -> float:
    """:func:`max_useful_n` of scalars."""
    return 2.0 * A - 1.0 if s <= 1.0 else A + A * s - s


def _best_L(h: np.ndarray, t: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form ``L*`` and ``WSSRE(L*)`` over the last axis (see module docstring).

    The reference of the fixed-order sums every WSSRE of the fit uses: with
    ``r = h/t`` and ``x = W r``, ``s1 = x_0 + x_1 + ...`` and
    ``s2 = x_0 r_0 + x_1 r_1 + ...`` summed left to right over the points
    (no BLAS product: its last bits depend on where a row sits in the
    matrix), ``L* = s1/s2`` and ``WSSRE(L*) = sum W - s1^2/s2``. Every value
    is a function of its own row only.
    """
    r = h / t
    x = r * W
    y = x * r
    s1 = x[..., 0].copy()
    s2 = y[..., 0].copy()
    for k in range(1, r.shape[-1]):
        s1 += x[..., k]
        s2 += y[..., k]
    return s1 / s2, W.sum() - s1 * s1 / s2


def _best_L1(h: list[float], t: list[float], W: list[float], sum_w: float) -> tuple[float, float]:
    """:func:`_best_L` of one row of Python floats (same operations, same order, same values)."""
    s1 = s2 = 0.0
    for hk, tk, wk in zip(h, t, W, strict=True):
        r = hk / tk
        x = r * wk
        s1 += x
        s2 += x * r
    return s1 / s2, sum_w - s1 * s1 / s2


_INT_CONSTANTS: dict[tuple[str, int], np.ndarray] = {}


def _int_constant(kind: str, k: int) -> np.ndarray:
    """``np.arange(k)`` (``kind="arange"``) or ``np.zeros(k)`` (``"zeros"``), int64,
    read-only, cached per kind and length (up to 128 arrays)."""
    got = _INT_CONSTANTS.get((kind, k))
    if got is None:
        got = np.arange(k, dtype=np.int64) if kind == "arange" else np.zeros(k, dtype=np.int64)
        got.flags.writeable = False
        if len(_INT_CONSTANTS) < 128:
            _INT_CONSTANTS[(kind, k)] = got
    return got


def _grid_coeffs(
    n: np.ndarray, t: np.ndarray, W: np.ndarray, Av: np.ndarray, sv: np.ndarray
) -> tuple[list[tuple[np.ndarray, ...]], int]:
    """Per-row polynomial coefficients of the 2-D grid, as segments of constant coefficients.

    Low mode (``s <= 1``): ``h_k = a_k(A) + s b_k(A)``, so with ``u = W/t`` and
    ``u2 = W/t^2``: ``sum W r = a1 + s b1`` and ``sum W r^2 = c0 + 2 s c1 + s^2 c2``
    (``WSSRE(L*) = sum W - (a1 + s b1)^2 / (c0 + 2 s c1 + s^2 c2)``).
    High mode (``s > 1``): the same with ``(1 + s) h`` (the factor cancels); the
    coefficients of a row depend on how many (sorted) points lie before the
    knee, a prefix ``p``: point ``k`` is before the knee iff
    ``s >= (n_k - A)/(A - 1)``, so along a row the coefficients are piecewise
    constant with at most ``m + 1`` segments.

    Returns segments ``(row, col_lo, col_hi, a1, b1, c0, c1, c2)`` (arrays;
    columns ``[col_lo, col_hi)``) and the number of low-mode columns.

    Implementation: the per-point tables are computed point-major (``(m, nA)``,
    long inner loops) and summed over the points left to right, one
    vectorised operation per point (no BLAS product, whose last bits depend
    on a row's position in the matrix): a row's coefficients depend on its
    ``A`` and the data only. Cumulative sums run column by column in the
    order of ``np.cumsum``.
    """
    u = W / t
    u2 = W / (t * t)
    nA, ns = len(Av), len(sv)
    m = len(n)
    nl = int(sv.searchsorted(1.0, side="right"))
    nn = n[:, None]
    rows = _int_constant("arange", nA)
    segs: list[tuple[np.ndarray, ...]] = []
    if nl:
        # low_coeffs, with 1/min(n, A) = max(1/n, 1/A) (exact: rounding is monotone)
        twoA = 2.0 * Av
        aT = np.maximum(1.0 / nn, 1.0 / Av)
        bT = np.subtract(twoA - 1.0, nn)
        np.minimum(nn - 1.0, bT, out=bT)
        np.maximum(bT, 0.0, out=bT)
        bT /= twoA * nn
        # products point-major, then summed over the points left to right (the
        # order of _best_L): no BLAS product, whose bits depend on the row's position
        X = np.empty((5, m, nA))
        np.multiply(aT, u[:, None], out=X[0])
        np.multiply(bT, u[:, None], out=X[1])
        np.multiply(aT, aT, out=X[2])
        np.multiply(aT, bT, out=X[3])
        np.multiply(bT, bT, out=X[4])
        X[2:] *= u2[:, None]
        sums = X[:, 0]
        for k in range(1, m):
            sums += X[:, k]
        a1, b1, c0, c1, c2 = sums
        zeros = _int_constant("zeros", nA)
        segs.append((rows, zeros, zeros + nl, a1, b1, c0, c1, c2))
    if nl < ns:
        inv_n = 1.0 / n
        b_h1 = ((Av - 1.0) + nn) / (nn * Av)  # (m, nA)
        inv = 1.0 / Av

        # prefix p (0..m): points k < p in H1 (before the knee), k >= p in H2 (flat).
        # Seven point-major rows per point, accumulated over the points together
        # (np.cumsum's order): the H1 parts of the five tables, then the H2 parts
        # (1/A for u, 1/A^2 for u2); cumulative tables are (., m + 1, nA): table, prefix, grid row
        x = np.empty((m, 7, nA))
        x[:, 0] = (inv_n * u)[:, None]
        np.multiply(b_h1, u[:, None], out=x[:, 1])
        x[:, 2] = ((inv_n * inv_n) * u2)[:, None]
        np.multiply(inv_n[:, None] * b_h1, u2[:, None], out=x[:, 3])
        np.multiply(b_h1 * b_h1, u2[:, None], out=x[:, 4])
        np.multiply(u[:, None], inv, out=x[:, 5])
        np.multiply(u2[:, None], inv * inv, out=x[:, 6])
        c = np.empty((7, m + 1, nA))  # (table, prefix, grid row)
        c[:, 0] = 0.0
        c[:, 1] = x[0]
        for k in range(1, m):
            np.add(c[:, k], x[k], out=c[:, k + 1])
        flat = c[5:, m : m + 1] - c[5:]  # (2, m + 1, nA): the H2 parts of points >= p
        tab = np.empty((5, m + 1, nA))
        np.add(c[0:2], flat[0:1], out=tab[0:2])
        np.add(c[2:5], flat[1:2], out=tab[2:5])
        tabs = tuple(tab)
        if Av.min() > 1.0:  # the usual case: no special values
            thr = (nn - Av) / (Av - 1.0)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                thr = np.where(
                    Av > 1.0, (nn - Av) / (Av - 1.0), np.where(nn <= 1.0, -np.inf, np.inf)
                )
        idx = np.searchsorted(sv[nl:], thr.ravel()).reshape(m, nA)
        for k in range(1, m):
            np.maximum(idx[k - 1], idx[k], out=idx[k])
        idx += nl
        bounds = np.empty((m + 2, nA), np.int64)
        bounds[0] = nl
        bounds[1:-1] = idx
        bounds[-1] = ns
        # segments in row-major (grid row, prefix) order; tables are (prefix, grid row)
        keep = np.flatnonzero((bounds[1:] > bounds[:-1]).T)
        row_k, p_k = np.divmod(keep, m + 1)
        at = p_k * nA
        at += row_k
        segs.append(
            (
                row_k,
                bounds[:-1].take(at),
                bounds[1:].take(at),
                *(tb.take(at) for tb in tabs),
            )
        )
    return segs, nl


def _grid_wssre(
    n: np.ndarray, t: np.ndarray, W: np.ndarray, Av: np.ndarray, sv: np.ndarray
) -> np.ndarray:
    """``WSSRE(L*)`` on the full grid ``Av x sv`` (``sv`` sorted): one broadcast expression per segment set.

    The reference (brute-force) evaluation of the 2-D search; ``_grid_argmin``
    finds the same grid cell without materialising the grid.
    """
    segs, _ = _grid_coeffs(n, t, W, Av, sv)
    nA, ns = len(Av), len(sv)
    coef = np.zeros((5, nA, ns))
    col = np.arange(ns)
    for row, lo, hi, *cs in segs:
        # expand each segment's coefficients over its columns (vectorised)
        lengths = hi - lo
        r = np.repeat(row, lengths)
        c = np.repeat(lo - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(
            lengths.sum()
        )
        for q, x in enumerate(cs):
            coef[q, r, c] = np.repeat(x, lengths)
    del col
    a1, b1, c0, c1, c2 = coef
    s = sv[None, :]
    num = a1 + b1 * s
    den = c0 + s * (2.0 * c1 + c2 * s)
    return W.sum() - num * num / den


def _grid_argmin(
    n: np.ndarray, t: np.ndarray, W: np.ndarray, Av: np.ndarray, sv: np.ndarray
) -> tuple[int, int, float]:
    """The cell ``(i, j)`` of the uniform grid ``Av x sv`` minimising ``WSSRE(L*)``, and its value.

    Exactly the argmin of :func:`_grid_wssre`, found per segment: on a segment
    ``f(s) = (a1 + b1 s)^2 / (c0 + 2 c1 s + c2 s^2)`` (``WSSRE = sum W - f``;
    the denominator is a sum of squares, positive) has derivative zero only
    at the root of the numerator (its minimum, ``f = 0``) and at
    ``s1 = (a1 c1 - b1 c0) / (b1 c1 - a1 c2)`` (its maximum), so on the
    segment's grid columns ``f`` is largest at one of the two columns around
    ``s1`` or at an end of the segment: four candidates per segment instead
    of every column.
    """
    segs, _ = _grid_coeffs(n, t, W, Av, sv)
    ds = (sv[-1] - sv[0]) / (len(sv) - 1) if len(sv) > 1 else 1.0
    best = (-np.inf, 0, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        for row, lo, hi, a1, b1, c0, c1, c2 in segs:
            s1 = (a1 * c1 - b1 * c0) / (b1 * c1 - a1 * c2)
            j1 = np.floor((s1 - sv[0]) / ds)
            j1 = np.where(np.isfinite(j1), j1, lo).astype(np.int64)
            # the four candidate columns of each segment, candidate-major (4, K):
            # the same values as the (K, 4) layout, long inner loops
            hm1 = hi - 1
            cand = np.empty((4, lo.size), np.int64)
            cand[0] = lo
            cand[1] = hm1
            cand[2] = j1
            np.add(j1, 1, out=cand[3])
            np.maximum(cand, lo, out=cand)  # clip to the segment
            np.minimum(cand, hm1, out=cand)
            s = sv[cand]
            num = b1 * s
            num += a1
            den = c2 * s
            den += 2.0 * c1
            den *= s
            den += c0
            num *= num
            num /= den
            f = np.where(np.isfinite(num), num, -np.inf)
            # first maximum in (segment, candidate) order: each candidate row's first
            # maximum, then the smallest (segment, candidate) among the rows reaching the top
            qs = f.argmax(axis=1).tolist()
            vals = [f[c, q] for c, q in enumerate(qs)]
            top = max(vals)
            q, c = min((q, c) for c, q in enumerate(qs) if vals[c] == top)
            if f[c, q] > best[0]:
                best = (float(f[c, q]), int(row[q]), int(cand[c, q]))
    return best[1], best[2], float(W.sum() - best[0])


def _grid_search(
    n: np.ndarray, t: np.ndarray, W: np.ndarray, Av: np.ndarray, sv: np.ndarray
) -> tuple[int, int, float]:
    """:func:`_grid_argmin`, by its compiled twin when it is built."""
    if compiled_grid_argmin is None:
        return _grid_argmin(n, t, W, Av, sv)
    c = np.ascontiguousarray
    return compiled_grid_argmin(c(n), c(t), c(W), c(Av), c(sv), float(W.sum()))


_ARANGE: dict[int, np.ndarray] = {}


def _linspace(start: float, stop: float, num: int) -> np.ndarray:
    """``np.linspace(start, stop, num)`` for scalars, the same operations without its overhead.

    ``arange(num) * step + start`` with the last value set to ``stop``, as
    ``np.linspace`` computes it (``np.linspace`` itself for the cases it
    treats specially: fewer than 2 values or a zero step).
    """
    if num < 2:
        return np.linspace(start, stop, num)
    step = (stop - start) / (num - 1)
    if step == 0 or not math.isfinite(step):
        return np.linspace(start, stop, num)
    base = _ARANGE.get(num)
    if base is None:
        base = np.arange(num, dtype=np.float64)
        base.flags.writeable = False
        if len(_ARANGE) < 64:
            _ARANGE[num] = base
    y = base * step
    y += start
    y[-1] = stop
    return y


def _a_values(
    env: Envelope | EnvelopeIntervals, count: int, a_lo: float, a_hi: float
) -> np.ndarray:
    """``count`` values of ``A`` spread log-uniformly over the envelope's merged ``A`` intervals."""
    iv = env.a_intervals()
    if len(iv) == 0:
        iv = np.array([[a_lo, a_hi]])
    iv = np.maximum(iv, 1.0)  # np.clip(iv, 1.0, None)
    lg = np.log(iv)
    lengths = lg[:, 1] - lg[:, 0]
    total = lengths.sum()
    if total <= 0:
        return np.repeat(iv[:, 0], max(1, count // max(1, len(iv))))[:count]
    pos = _linspace(0.0, float(total), count)
    if len(iv) == 1:  # every position in the first interval: k = 0, cum[0] = 0 (x - 0.0 = x)
        pos += lg[0, 0]
        return np.exp(pos, out=pos)
    # interval k of each position: k = clip(searchsorted(cum, pos, "right") - 1, 0, K - 1);
    # pos is sorted (a linspace from 0 with a positive step), so the intervals hold
    # runs of positions, from the first pos >= cum[k]: exp(lg[k, 0] + (pos - cum[k]))
    # run by run (the same operations on the same values)
    cum = np.concatenate([[0.0], np.cumsum(lengths)])
    starts = [0, *pos.searchsorted(cum[1:-1], side="left").tolist(), count]
    lo_l, cum_l = lg[:, 0].tolist(), cum.tolist()
    for k in range(len(iv)):
        run = pos[starts[k] : starts[k + 1]]
        run -= cum_l[k]
        run += lo_l[k]
    return np.exp(pos, out=pos)


_A_GRIDS: dict[tuple[Any, ...], _Grid] = {}
_A_GRIDS_MAX = 32  # ~240 kB each at n_1d = 5000


def _lru_get(cache: dict[Any, Any], key: Any) -> Any:
    """``cache[key]`` moved to the end (most recently used), or None."""
    v = cache.pop(key, None)
    if v is not None:
        cache[key] = v
    return v


def _lru_put(cache: dict[Any, Any], key: Any, value: Any, size: int) -> Any:
    if len(cache) >= size:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


def _a_grid(env: Envelope | EnvelopeIntervals, count: int, a_lo: float, a_hi: float) -> _Grid:
    """:func:`_a_values` with its ``A``-only tables, cached per (envelope intervals, ``count``).

    The intervals' ends are values of the envelope's fixed grid, so refits of
    one application often ask for the same 1-D grid again (least recently
    used grids are dropped first).
    """
    iv = env.a_intervals()
    key = (count, a_lo, a_hi) if len(iv) == 0 else (count, *iv.ravel().tolist())
    g = _lru_get(_A_GRIDS, key)
    if g is None:
        g = _lru_put(_A_GRIDS, key, _Grid(_a_values(env, count, a_lo, a_hi)), _A_GRIDS_MAX)
    return g


def _low_ab(nk: float, g: _Grid) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`low_coeffs` of one point on a sorted grid, and the end of its flat prefix.

    ``alpha = 1/min(n, A)`` is ``1/A`` below ``n`` and ``1/n`` from there;
    ``beta = max(min(n - 1, 2A - 1 - n), 0) / (2 A n)`` has numerator ``0``
    while ``2A - 1 - n < 0`` (the flat prefix, returned), ``2A - 1 - n``, then
    ``n - 1``. ``2A - 1 - n`` is non-decreasing along a sorted grid (rounding
    is monotone), so the pieces are found by bisection and filled: the same
    values as the elementwise formulas.
    """
    alpha = g.invA.copy()
    alpha[int(g.A.searchsorted(nk, side="left")) :] = 1.0 / nk
    X = g.D - nk
    k0 = int(X.searchsorted(0.0, side="left"))
    k1 = int(X.searchsorted(nk - 1.0, side="left"))
    X[:k0] = 0.0
    X[k1:] = nk - 1.0
    X /= g.twoA * nk
    return alpha, X, k0


def _pair_candidates(
    n_i: float, n_j: float, rho: float, g: _Grid
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(A, s)`` of the valid solutions of :func:`pair_sigma` on ``g`` for keys L, H11, H12, in order.

    Same values and order as ``A[ok], s[ok]`` of :func:`pair_sigma` (``n_i < n_j``);
    on a sorted grid it skips what cannot be valid: L where both points are
    flat (``beta_i = beta_j = 0``: the denominator is 0), H1-H2 beyond the
    prefix of ``g.h12_bound <= n_j``.
    """
    if not g.sorted:
        sols = pair_sigma(n_i, n_j, np.asarray(rho), g.A)
        return [(g.A[sols[k][1]], sols[k][0][sols[k][1]]) for k in ("L", "H11", "H12")]
    if compiled_pair_candidates is not None:  # (the grid's tables computed as it goes)
        return compiled_pair_candidates(n_i, n_j, rho, g.A)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _pair_candidates_sorted(n_i, n_j, rho, g)


def _pair_candidates_sorted(
    n_i: float, n_j: float, rho: float, g: _Grid
) -> list[tuple[np.ndarray, np.ndarray]]:
    A = g.A
    out = []
    # L: s = (rho aj - ai) / (bi - rho bj), valid in [0, 1]
    ai, bi, k0 = _low_ab(n_i, g)
    aj, bj, _ = _low_ab(n_j, g)
    num = aj[k0:] * rho
    num -= ai[k0:]
    den = bj[k0:] * rho
    np.subtract(bi[k0:], den, out=den)
    num /= den
    ok = num >= 0.0  # NaN and -inf fail here, +inf below
    ok &= num <= 1.0
    out.append((A[k0:][ok], num[ok]))
    # H1 coefficients: beta = (A - 1 + n) / (n A); alpha = 1/n
    hbi = (g.Am1 + n_i) / (n_i * A)
    hbj = (g.Am1 + n_j) / (n_j * A)
    ahi = 1.0 / n_i
    # H11: s = (rho/n_j - 1/n_i) / (hb_i - rho hb_j), s >= 1, n_j <= knee (1 + 1e-12)
    den = hbj * rho
    np.subtract(hbi, den, out=den)
    s11 = np.divide(rho * (1.0 / n_j) - ahi, den, out=den)
    k = s11 * g.Am1
    k += A
    k *= 1 + 1e-12
    ok = np.isfinite(s11)
    ok &= s11 >= 1.0
    ok &= n_j <= k  # n_i < n_j: n_i <= knee (1 + 1e-12) follows
    out.append((A[ok], s11[ok]))
    # H12 (prefix): s = (rho/A - 1/n_i) / (hb_i - rho/A), n_i <= knee (1 + 1e-12), n_j >= knee (1 - 1e-12)
    Gh = int(g.h12_bound.searchsorted(n_j, side="right"))
    rA = g.invA[:Gh] * rho
    s12 = np.divide(rA - ahi, np.subtract(hbi[:Gh], rA, out=rA), out=rA)
    k = s12 * g.Am1[:Gh]
    k += A[:Gh]
    ok = np.isfinite(s12)
    ok &= s12 >= 1.0
    ok &= n_i <= k * (1 + 1e-12)
    k *= 1 - 1e-12
    ok &= n_j >= k
    out.append((A[:Gh][ok], s12[ok]))
    return out


#: Relative margin of the knee below which a point counts as flat (``h = 1/A``) for
#: every high-variance sigma of a product block: there ``h``'s H1 value is below
#: ``1/A`` by ``(n - knee)/(n (1 + sigma))`` relative, far more than its rounding
#: error (a few ulps), so ``max(H1 value, 1/A)`` is ``1/A`` exactly.
_KNEE_MARGIN = 1e-6


def _flat_prefix(mask: np.ndarray) -> int:
    """Length of the leading run of True in ``mask``."""
    if mask.all():
        return mask.size
    return int(mask.argmin())


#: The runner-up band of :func:`_target_fit`: candidates within this factor of the best WSSRE.
_RUNNER_UP_FACTOR = 1.1

#: Product-block remnants (after pruning) of at most this many cells x points are scored as
#: ``(A, s)`` blocks (repeated ``A``, tiled sigmas): fewer NumPy calls than the product's
#: per-point loop, the same values.
_LISTED_CELLS_MAX = 30_000

#: Margin (relative to ``sum W``) of the pruning of product blocks: a cell is dropped only
#: when a lower bound of its WSSRE exceeds ``1.1 max(U, 0) + margin sum W`` (``U``: the
#: smallest WSSRE of the earlier blocks, which bounds the fit's best from above). The
#: runner-up test adds ``1e-10 sum W``, the 1-D tie rule ``32 eps sum W``, and the rounding
#: of a WSSRE (and of the bound, and of the final WSSRE recomputed at the chosen point) is
#: a few tens of ``eps sum W`` (``s1^2/s2 <= sum W``): far below this margin.
_PRUNE_MARGIN = 2e-9


def _wssre_of_sums(s1: np.ndarray, s2: np.ndarray, sum_w: float) -> np.ndarray:
    """``sum_w - s1 * s1 / s2`` (the operations of :func:`_best_L`'s WSSRE), in ``s1``'s memory."""
    s1 *= s1
    s1 /= s2
    return np.subtract(sum_w, s1, out=s1)


def _flat_bound_prefixes(
    A: np.ndarray, sig: np.ndarray, n: list[float], t: list[float], w: list[float], above: float
) -> tuple[int, int]:
    """Column prefixes of a product block ``(A, sig)`` whose cells all have a WSSRE ``> above``:
    ``(low-mode prefix, high-mode prefix)`` (0 when none).

    Where every point ``k >= l`` (points sorted by ``n``, weights ``w > 0``) is flat for a
    mode's sigmas (``h = 1/A``: low mode where ``2A - 1 <= n_l``, high mode where the
    largest sigma's knee ``A + sigma (A - 1) <= n_l``), a candidate's WSSRE is at least the
    smallest weighted squared error of those points alone, over ``L``: with ``r_k = 1/(A t_k)``
    that is ``B_l = sum w - (sum w/t)^2 / sum w/t^2`` (``A`` cancels), the same for every such
    column (the other points' terms are not negative). ``B_l`` grows with the number of
    points, so the longest pruned prefix is that of the largest ``l`` with ``B_l > above``.
    """
    m = len(n)
    level = -1
    sw = s1 = s2 = 0.0
    for k in range(m - 1, -1, -1):  # the suffixes k.., shortest first
        u = w[k] / t[k]
        sw += w[k]
        s1 += u
        s2 += u / t[k]
        if sw - s1 * s1 / s2 > above:
            level = k
            break
    if level < 0:
        return 0, 0
    n_l = n[level]
    srt = bool(np.all(A[1:] >= A[:-1]))

    def run(x: np.ndarray) -> int:  # length of the leading run of x <= n_l
        return int(x.searchsorted(n_l, side="right")) if srt else _flat_prefix(x <= n_l)

    c_low = run(2.0 * A - 1.0)
    s_max = float(sig.max())
    c_high = run((A + s_max * (A - 1.0)) * (1.0 + _KNEE_MARGIN)) if s_max > 1.0 else 0
    return c_low, c_high


def _candidate_wssre(
    n: np.ndarray,
    t: np.ndarray,
    W: np.ndarray,
    blocks: list[tuple[Any, ...]],
    prune: bool = False,
) -> np.ndarray:
    """``WSSRE(L*)`` of every candidate ``(A, s)`` (the blocks concatenated), each in its own mode.

    Equal to ``_best_L(h, t, W)[1]`` with ``h`` (rows = candidates)
    ``inv_speedup_low`` for ``s <= 1`` and ``inv_speedup_high`` otherwise,
    bit for bit: ``h``, ``r = h/t``, ``x = r W`` and ``x r`` are computed for
    every point at once (point-major, long inner loops; the same operations,
    with ``1/min(n, A) = max(1/n, 1/A)`` and ``max(min(n - 1, x), 0)``, exact
    since rounding is monotone) and the sums over the points run in
    :func:`_best_L`'s fixed order, one vectorised addition per point. So a
    candidate's value depends on its ``(A, s)`` and the data only, not on its
    position or on how many candidates there are. A value that is not finite (NaN,
    ``-inf``) is returned as ``+inf``: it counts as no fit (the kernels write it so). Points of weight 0 are
    left out (their terms are exact zeros). A product block ``(A, s, (A_d, sig))``
    (``A`` and ``s`` are not read: they may be None) is the candidates
    ``A = repeat(A_d, len(sig))``, ``s = tile(sig, len(A_d))``, computed by
    mode: on the ``A`` prefix where every point is flat in the low mode
    (``2A - 1 <= n``: ``h = max(1/n, 1/A)``, whatever sigma) one row serves every
    low sigma, and every high sigma where, in addition, every point lies beyond
    their knee (with the margin ``_KNEE_MARGIN``) and none is ``n = 1``
    (``h = 1/A`` at every point in both modes); elsewhere each mode's formulas
    at every point and sigma.

    ``prune=True`` (the fit's search): a product block after blocks with a finite
    WSSRE gets ``+inf`` instead of its WSSRE on the column prefixes where a lower
    bound of every cell's WSSRE is above ``1.1 max(U, 0) + _PRUNE_MARGIN sum W``
    (``U`` the earlier blocks' smallest WSSRE; see :func:`_flat_bound_prefixes`):
    such a cell can be neither the 1-D optimum (nor tied with it) nor in
    :func:`_target_fit`'s runner-up band, so the fit is the same. The other cells
    are computed as without pruning (a cell's value does not depend on the others).
    """
    sum_w = W.sum()
    act = np.flatnonzero(W)
    if act.size < W.size:
        n, t, W = n[act], t[act], W[act]
    nn = n[:, None]
    tl, wl = t.tolist(), W.tolist()
    inv_n = 1.0 / nn
    nm1 = nn - 1.0
    C = sum(_block_size(blk) for blk in blocks)
    res = np.empty(C)

    t_col, w_col = t[:, None], W[:, None]

    def wssre(h: np.ndarray) -> np.ndarray:
        # h: (m, k) -> WSSRE(L*) (k,): the sums of _best_L's terms (see sums), then its WSSRE
        return _wssre_of_sums(*sums(h), sum_w)

    def h_low(A: np.ndarray, s: np.ndarray) -> np.ndarray:
        twoA = 2.0 * A
        out = np.subtract(twoA - 1.0, nn)
        np.minimum(nm1, out, out=out)
        np.maximum(out, 0.0, out=out)
        out /= twoA * nn
        out *= s
        out += np.maximum(inv_n, 1.0 / A)
        return out

    def h_high(A: np.ndarray, s: np.ndarray) -> np.ndarray:
        out = np.add(A - 1.0, nn)
        out *= s
        out += A
        den = nn * A
        den *= 1.0 + s
        out /= den
        np.maximum(out, 1.0 / A, out=out)
        return out

    def sums(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # h: (m, ...) -> s1 = sum of x = (h/t) W and s2 = sum of x h/t over the points,
        # left to right (h is overwritten)
        h /= t_col.reshape((-1,) + (1,) * (h.ndim - 1))
        x = h * w_col.reshape(h.shape[:1] + (1,) * (h.ndim - 1))
        h *= x  # x r (products commute exactly)
        s1 = x[0] + x[1] if len(x) > 1 else x[0].copy()
        s2 = h[0] + h[1] if len(x) > 1 else h[0].copy()
        for k in range(2, len(x)):
            s1 += x[k]
            s2 += h[k]
        return s1, s2

    def product(A: np.ndarray, sig: np.ndarray, dst: np.ndarray) -> None:
        # the block repeat(A, Q) x tile(sig, D), every point at once, in three parts: on
        # the A prefix [0, F) where every point is flat in the low mode (2A - 1 <= the
        # smallest n > 1) h does not depend on sigma there (h = max(1/n, 1/A): 1/A, or 1
        # at n = 1), so one row serves every low sigma, and every high sigma on the
        # prefix [0, Fh) where also every point lies beyond their knees (h = 1/A in both
        # modes); elsewhere each mode's formulas at every point and sigma (where a point
        # is flat they give 1/A exactly, see _KNEE_MARGIN). The same operations on the
        # same values as the per-candidate formulas, summed over the points left to right
        D, Q = A.size, sig.size
        sl = sig.tolist()
        perm = [q for q, x in enumerate(sl) if x <= 1.0]
        nl_ = len(perm)
        perm += [q for q, x in enumerate(sl) if x > 1.0]
        sg = sig[perm][:, None]
        s_lo, s_hi = sg[:nl_], sg[nl_:]
        invA = 1.0 / A
        nlist = n.tolist()
        # D1 and knee are non-decreasing along a sorted A (rounding is monotone): then
        # the leading run of x <= v is found by bisection
        srt = bool(np.all(A[1:] >= A[:-1]))

        def run(x: np.ndarray, v: float) -> int:
            # length of the leading run of x <= v
            return int(x.searchsorted(v, side="right")) if srt else _flat_prefix(x <= v)

        twoA = 2.0 * A
        D1 = twoA - 1.0
        Am1 = A - 1.0
        F = 0  # low mode: columns [0, F) flat at every point
        if nl_:
            above = [v for v in nlist if v > 1.0]
            F = run(D1, min(above)) if above else D
        Fh = 0  # high mode: columns [0, Fh) flat at every point, equal to the shared low row
        if nl_ < Q and F and min(nlist) > 1.0:
            knee = s_hi.max() * Am1
            knee += A
            knee *= 1.0 + _KNEE_MARGIN
            # h = 1/A at every point in both modes (n >= 2A - 1 >= A: max(1/n, 1/A) = 1/A)
            Fh = min(F, run(knee, min(nlist)))
        out = np.empty((Q, D))  # rows in perm order
        if F:  # the shared row
            s1, s2 = sums(np.maximum(inv_n, invA[:F]))
            out[0, :F] = _wssre_of_sums(s1, s2, sum_w)
            out[1:nl_, :F] = out[0, :F]
            out[nl_:, :Fh] = out[0, :Fh]
        if nl_ and F < D:  # low rows beyond the shared prefix: alpha + s beta
            beta = np.subtract(D1[F:], nn)
            np.minimum(nm1, beta, out=beta)
            np.maximum(beta, 0.0, out=beta)
            beta /= twoA[F:] * nn
            h = beta[:, None, :] * s_lo
            h += np.maximum(inv_n, invA[F:])[:, None, :]
            out[:nl_, F:] = _wssre_of_sums(*sums(h), sum_w)
        if nl_ < Q and Fh < D:  # high rows beyond theirs: max(H1, 1/A)
            h = np.add(Am1[Fh:], nn)[:, None, :] * s_hi
            h += A[Fh:]
            den = (nn * A[Fh:])[:, None, :] * (1.0 + s_hi)
            h /= den
            np.maximum(h, invA[Fh:], out=h)
            out[nl_:, Fh:] = _wssre_of_sums(*sums(h), sum_w)
        dst.reshape(D, Q)[:, perm] = out.T

    def product_above(A: np.ndarray, sig: np.ndarray, dst: np.ndarray, above: float) -> None:
        # product(A, sig, dst) except that the cells of a flat prefix (see _flat_bound_prefixes)
        # whose WSSRE is provably above ``above`` are set to +inf instead of computed
        c_low, c_high = _flat_bound_prefixes(A, sig, n.tolist(), tl, wl, above)
        if not (c_low or c_high):
            product(A, sig, dst)
            return
        D, Q = A.size, sig.size
        out = dst.reshape(D, Q)
        sl = sig.tolist()
        for low, c, cols in (
            (True, c_low, [q for q, x in enumerate(sl) if x <= 1.0]),
            (False, c_high, [q for q, x in enumerate(sl) if x > 1.0]),
        ):
            if not cols:
                continue
            idx = np.array(cols, dtype=np.int64)
            out[:c, idx] = np.inf
            if c < D:
                rest, sigs = A[c:], sig[idx]
                if rest.size * sigs.size * len(tl) <= _LISTED_CELLS_MAX:
                    # a few cells (one mode): as an (A, s) block, with fewer NumPy calls
                    # than the product's per-point loop (a cell's value is the same)
                    rows = np.repeat(rest, sigs.size), np.tile(sigs, rest.size)
                    part = wssre(h_low(*rows) if low else h_high(*rows))
                else:
                    part = np.empty(rest.size * sigs.size)
                    product(rest, sigs, part)
                out[c:, idx] = part.reshape(D - c, len(cols))

    # the compiled blocks (each candidate's formulas, point by point: the same values)
    one, many = compiled_candidate_wssre, compiled_product_wssre
    if one is not None or many is not None:
        n, t, W = np.ascontiguousarray(n), np.ascontiguousarray(t), np.ascontiguousarray(W)
    c0 = 0
    for blk in blocks:
        k = _block_size(blk)
        if not k:
            continue
        dst = res[c0 : c0 + k]
        if len(blk) > 2:
            A_d, sig = blk[2]
            earlier = res[:c0][np.isfinite(res[:c0])] if prune else res[:0]
            if earlier.size:
                # a candidate above this can be neither the 1-D optimum nor within the
                # runner-up band of the fit (see _PRUNE_MARGIN)
                best = max(float(earlier.min()), 0.0)
                above = _RUNNER_UP_FACTOR * best + _PRUNE_MARGIN * float(sum_w)
                if many is not None:
                    pruned = _flat_bound_prefixes(A_d, sig, n.tolist(), tl, wl, above)
                    many(n, t, W, A_d, sig, sum_w, dst, *pruned, _KNEE_MARGIN)
                else:
                    product_above(A_d, sig, dst, above)
            elif many is not None:
                many(n, t, W, A_d, sig, sum_w, dst, 0, 0, _KNEE_MARGIN)
            else:
                product(A_d, sig, dst)
            c0 += k
            continue
        c0 += k
        A, s = blk[0], blk[1]
        if one is not None:
            one(n, t, W, A, s, sum_w, dst)
            continue
        low = s <= 1.0
        nlow = int(np.count_nonzero(low))
        if nlow == k:
            dst[...] = wssre(h_low(A, s))
        elif nlow == 0:
            dst[...] = wssre(h_high(A, s))
        else:
            hi = ~low
            dst[low] = wssre(h_low(A[low], s[low]))
            dst[hi] = wssre(h_high(A[hi], s[hi]))
    if one is None or many is None:  # some blocks by NumPy: no fit (NaN, -inf) as +inf
        res[~np.isfinite(res)] = np.inf
    return res


#: The coarse 2-D fallback of the 1-D search: sigma values, and ``A`` grids per ``a_max``.
_FALLBACK_SIGMAS = np.concatenate([np.linspace(0.0, 1.0, 21), np.geomspace(1.05, 20.0, 20)])
_FALLBACK_SIGMAS.flags.writeable = False
_FALLBACK_A: dict[float, np.ndarray] = {}


class _Cands:
    """The candidates of the 1-D search, blocks in order, without materialising them.

    A block is ``(A, s)`` (candidate ``k`` is ``(A[k], s[k])``) or a product block
    ``(None, None, (A_d, sig))``, the candidates ``repeat(A_d, Q)`` x
    ``tile(sig, D)`` (candidate ``k`` is ``(A_d[k // Q], sig[k % Q])``, ``Q =
    len(sig)``): indexing, so the values of the concatenated arrays.
    """

    __slots__ = ("blocks", "offsets")

    def __init__(self, blocks: list[tuple[Any, ...]]) -> None:
        self.blocks = blocks
        self.offsets = [0]
        for blk in blocks:
            self.offsets.append(self.offsets[-1] + _block_size(blk))

    def at(self, k: int) -> tuple[float, float]:
        """``(A, s)`` of candidate ``k``."""
        q = bisect.bisect_right(self.offsets, k) - 1
        blk, k = self.blocks[q], k - self.offsets[q]
        if len(blk) > 2:
            A_d, sig = blk[2]
            return float(A_d[k // sig.size]), float(sig[k % sig.size])
        return float(blk[0][k]), float(blk[1][k])

    def A_at(self, idx: np.ndarray) -> np.ndarray:
        """``A`` of the candidates ``idx`` (ascending)."""
        ends = idx.searchsorted(self.offsets).tolist()
        parts = []
        for q, blk in enumerate(self.blocks):
            lo, hi = ends[q], ends[q + 1]
            if lo == hi:
                continue
            k = idx[lo:hi] - self.offsets[q]
            if len(blk) > 2:
                A_d, sig = blk[2]
                parts.append(A_d[k // sig.size])
            else:
                parts.append(blk[0][k])
        return np.concatenate(parts) if len(parts) != 1 else parts[0]


def _block_size(blk: tuple[Any, ...]) -> int:
    """The number of candidates of a block of :func:`_candidate_wssre`."""
    if len(blk) > 2:
        return int(blk[2][0].size * blk[2][1].size)
    return int(blk[0].size)


@dataclass
class _Core:
    A: float
    s: float
    L: float
    wssre: float
    cands: _Cands
    cand_w: np.ndarray
    #: ``((A, sigma), (A, sigma))`` of the tied 1-D candidates with the smallest and the
    #: largest ``A`` (None without ties)
    tied_A: tuple[tuple[float, float], tuple[float, float]] | None = None


#: Which of the 1-D search's tied candidates is the optimum (see :func:`_tie_pick`).
TIE_RULE = "largest"


def _tie_pick(tied: np.ndarray, cands: _Cands) -> int:
    """The 1-D optimum among the candidates ``tied`` (ascending indices, WSSRE equal up to
    rounding), by :data:`TIE_RULE`: ``"largest"`` the largest ``A`` (first in block order
    among equal ``A``); ``"middle"`` the ``A`` nearest the geometric middle of the tied
    ``A``; ``"first"`` the first in block order (the rule before issue 14, which put the
    plateau at the largest observed size whenever every point lies in the first piece)."""
    if tied.size == 1 or TIE_RULE == "first":
        return int(tied[0])
    tA = cands.A_at(tied)
    if TIE_RULE == "middle":
        mid = math.sqrt(float(tA.min()) * float(tA.max()))
        return int(tied[int(np.argmin(np.abs(np.log(tA / mid))))])
    return int(tied[int(np.argmax(tA))])


def _fit_core(
    n: np.ndarray,
    t: np.ndarray,
    W: np.ndarray,
    target: float,
    env: Envelope | EnvelopeIntervals,
    *,
    has_serial: bool,
    v: float,
    n_1d: int,
    n_2d: int,
    a_max: float,
    grid: str = "exact",
) -> _Core:
    """1-D then 2-D WSSRE search on points ``(n, t)`` (sorted, distinct) with weights ``W``."""
    nl = n.tolist()
    m = len(nl)
    d = [abs(x - target) for x in nl]
    d_act = [dk if wk > 0 else math.inf for dk, wk in zip(d, W.tolist(), strict=True)]
    # nearest active first; ties -> the larger n, then the index (np.lexsort((-n, d_act)))
    order = sorted(range(m), key=lambda q: (d_act[q], -nl[q]))
    k = order[0]
    if has_serial and nl[0] == 1.0 and k != 0:
        r = 0
    else:
        if math.isfinite(d_act[order[1]]):
            r = order[1]
        else:
            r = int(np.argsort(np.array(d))[1]) if m > 1 else k
        if r == k:
            r = order[1]
    i, j = (k, r) if nl[k] < nl[r] else (r, k)
    rho = t[i] / t[j]
    ag = _a_grid(env, n_1d, 1.0, a_max)
    Agrid = ag.A
    # candidates come in mode blocks (L, H1-H1, H1-H2): each evaluated with its own formulas
    blocks: list[tuple[Any, ...]] = list(_pair_candidates(n[i], n[j], rho, ag))
    # degenerate: both reference points flat (2A - 1 <= n_i) -> sigma free when rho ~ 1;
    # the last block, a product block (the degenerate sigmas at every such A)
    tol = (1.0 + env.delta) / (1.0 - env.delta)
    if 1.0 / tol <= rho <= tol:
        deg = Agrid[ag.D <= n[i]]
        if deg.size:
            blocks.append((None, None, (deg, _DEGENERATE_SIGMAS)))
    if not any(_block_size(blk) for blk in blocks):
        # nothing passes through the reference pair (e.g. runtime grows with n): coarse 2-D fallback
        gA = _lru_get(_FALLBACK_A, a_max)
        if gA is None:
            gA = np.geomspace(1.0, a_max, 200)
            gA.flags.writeable = False
            _lru_put(_FALLBACK_A, a_max, gA, 64)
        blocks = [(None, None, (gA, _FALLBACK_SIGMAS))]
    cands = _Cands(blocks)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cand_w = _candidate_wssre(n, t, W, blocks, prune=True)
    # ties up to rounding go to the first candidate (block order, then increasing A):
    # whole curves of candidates can predict the same runtimes at every point (e.g.
    # every point in the Amdahl-like first piece), and their WSSRE then differ only
    # by rounding, which must not pick the 1-D optimum
    b = int(np.argmin(cand_w))
    tie = cand_w[b] + _TIE_EPS * float(W.sum())
    tied_A: tuple[tuple[float, float], tuple[float, float]] | None = None
    starts = [b]
    if tie > cand_w[b]:
        tied = np.flatnonzero(cand_w <= tie)
        b = int(tied[0])
        starts = [b]
        if tied.size > 1:
            tA = cands.A_at(tied)
            tied_A = (
                cands.at(int(tied[int(np.argmin(tA))])),
                cands.at(int(tied[int(np.argmax(tA))])),
            )
            other = _tie_pick(tied, cands)
            if other != b:
                starts.append(other)
    # 2-D search around each start: the first tie (block order), and the tie rule's pick
    # when it differs; the pick's result is kept unless the first's is clearly better
    # (WSSRE below _TIE_2D x the pick's: the 1-D ties can be off the data's curve, and the
    # 2-D search being local, only one of them may reach it)
    results = []
    for bb in starts:
        A0, s0 = cands.at(bb)
        Av = _linspace(max(1.0, A0 * (1.0 - v)), A0 * (1.0 + v), n_2d)
        hw = v * max(s0, 0.1)
        sv = _linspace(max(0.0, s0 - hw), s0 + hw, n_2d)
        if grid == "broadcast":
            full = _grid_wssre(n, t, W, Av, sv)
            g = int(np.nanargmin(full))
            gi, gj, gw = g // n_2d, g % n_2d, float(full.flat[g])
        else:
            gi, gj, gw = _grid_search(n, t, W, Av, sv)
        A1, s1 = float(Av[gi]), float(sv[gj])
        if not gw <= cand_w[bb]:
            A1, s1, gw = A0, s0, float(cand_w[bb])
        results.append((A1, s1, gw))
    A1, s1, gw = results[-1]
    if len(results) > 1 and results[0][2] < _TIE_2D * gw - _TIE_EPS * float(W.sum()):
        A1, s1, gw = results[0]
    L1, w1 = _best_L1([_inv1(x, A1, s1) for x in nl], t.tolist(), W.tolist(), float(W.sum()))
    return _Core(A1, s1, float(L1), max(float(w1), 0.0), cands, cand_w, tied_A)


def _fluctuation(n: list[float], t: list[float]) -> list[float]:
    """``R_i = ((t_i n_i / n_{i+1}) / t_{i+1}) (1 + (n_{i+1} - n_i)/n_{i+1})`` (points sorted by n).

    Plain floats (a fit has a few points): element by element the operations of
    ``(t[:-1] * n[:-1] / n[1:]) / t[1:] * (1.0 + (n[1:] - n[:-1]) / n[1:])``, so its values.
    """
    return [
        ((ta * na / nb) / tb) * (1.0 + (nb - na) / nb)
        for na, nb, ta, tb in zip(n, n[1:], t, t[1:], strict=False)
    ]


def _rises(R: list[float], eps: float) -> list[int]:
    """Indices ``i`` with ``R_{i+1} > (1 + eps) R_i``."""
    k = 1.0 + eps
    return [i for i in range(len(R) - 1) if R[i + 1] > k * R[i]]


def _upward(R: list[float]) -> float:
    """``sum max(0, R_{i+1}/R_i - 1)`` (NaN kept, summed in NumPy's order: ``_np_sum``)."""
    if len(R) < 2:
        return 0.0
    x = [_fdiv(R[i + 1], R[i]) - 1.0 for i in range(len(R) - 1)]
    return _np_sum([0.0 if v < 0.0 else v for v in x])


def _fdiv(a: float, b: float) -> float:
    """``a / b`` with NumPy's float64 semantics: inf or NaN on a division by zero (no exception)."""
    if b:
        return a / b
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(a) / np.float64(b))


def _argmax(x: list[float]) -> int:
    """``np.argmax`` of a list: the first maximum, or the first NaN."""
    best = 0
    for k, v in enumerate(x):
        if v != v:
            return k
        if v > x[best]:
            best = k
    return best


def _merge_duplicates(
    n: np.ndarray, t: np.ndarray, outlier: float
) -> tuple[np.ndarray, np.ndarray, int]:
    """Average repeated sizes after dropping obvious outliers.

    With 3+ measurements at one ``n``, a measurement is dropped when it is
    farther from the median than ``max(3 x 1.4826 MAD, outlier x median)``;
    with 2 nothing can be told apart and both are averaged.

    Plain Python on the (few) values: medians as ``np.median`` takes them and
    means summed in NumPy's (pairwise) order, :func:`_np_sum`, so the results
    are those of the NumPy expressions.
    """
    nl = n.tolist()
    tl = t.tolist()
    order = sorted(range(len(nl)), key=nl.__getitem__)  # stable, like argsort(kind="stable")
    un: list[float] = []
    groups: list[list[float]] = []
    for q in order:
        if un and nl[q] == un[-1]:
            groups[-1].append(tl[q])
        else:
            un.append(nl[q])
            groups.append([tl[q]])
    if len(un) == len(nl):
        return np.array(un), np.array([x[0] for x in groups]), 0
    out = []
    dropped = 0
    for x in groups:
        c = len(x)
        if c >= 3:
            med = _median(x)
            dev = [abs(v - med) for v in x]
            mad = _median(dev) * 1.4826
            lim = max(3.0 * mad, outlier * med)
            kept = [v for v, e in zip(x, dev, strict=True) if e <= lim]
            dropped += c - len(kept)
            x = kept
        out.append(_np_sum(x) / len(x))
    return np.array(un), np.array(out), dropped


def _median(x: list[float]) -> float:
    """``np.median`` of a short list (the middle value, or the mean of the two middle ones)."""
    y = sorted(x)
    h = len(y) // 2
    return y[h] if len(y) % 2 else (y[h - 1] + y[h]) / 2.0


def _np_sum(x: list[float]) -> float:
    """``np.sum`` of a 1-D float64 array, in NumPy's order (pairwise summation, blocks of 8)."""
    k = len(x)
    if k < 8:
        res = -0.0
        for v in x:
            res += v
        return res
    if k <= 128:
        r = x[:8]
        i = 8
        top = k - k % 8
        while i < top:
            r = [a + b for a, b in zip(r, x[i : i + 8], strict=True)]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for v in x[i:]:
            res += v
        return res
    h = k // 2
    h -= h % 8
    return _np_sum(x[:h]) + _np_sum(x[h:])


def _working_set(A: float, s: float) -> int:
    """Smallest integer ``n`` maximising ``S(n)^2 / n``.

    High variance (``s > 1``): before the knee ``S(n)^2 / n`` is ``n / (s n + c)^2`` up
    to a constant (``c = s (A - 1) + A``), largest at ``n = c / s < 2A - 1``, and after
    the knee ``A^2 / n`` decreases; so the search stops at ``2A`` (a large ``s`` puts the
    knee ``A + s (A - 1)`` far out, and searching up to it cost milliseconds per fit)."""
    top = math.ceil(_max_useful1(A, s)) + 1
    if s > 1.0:
        top = min(top, math.ceil(2.0 * A) + 1)
    nn = np.arange(1, max(top, 1) + 1, dtype=np.float64)
    val = (1.0 / _inv_mode(nn, A, s)) ** 2 / nn
    return int(nn[int(np.argmax(val >= val.max() * (1.0 - 1e-12)))])


# ----------------------------------------------------------------------------- the fit


class _Fitter:
    """Holds the prepared points and hyper-parameters of one :func:`fit_downey` call."""

    def __init__(self, n: np.ndarray, t: np.ndarray, has_serial: bool, kw: dict[str, Any]) -> None:
        self.n, self.t, self.has_serial = n, t, has_serial
        self.kw = kw
        self.a_max = kw["a_max"] if kw["a_max"] is not None else 16.0 * float(n.max())
        self._env: dict[tuple[int, ...], EnvelopeIntervals] = {}
        self._curves: PairCurves | None = None

    def env(self, idx: np.ndarray) -> EnvelopeIntervals:
        """What a fit's search reads of the :func:`envelope` of the points ``idx`` (its
        ``delta`` and ``A`` intervals, without the boxes), cached per point set.

        The curves of every pair of the points are computed once per fit, at the exact
        ratios, with the grid bounds of their validity at the widened ratios once per
        ``delta`` the envelopes end with (:class:`PairCurves` with ``widened=False``), and
        a subset's envelope takes its pairs' rows: the same envelope as :func:`envelope`
        of the subset's points."""
        key = tuple(idx.tolist())
        got = self._env.get(key)
        if got is None:
            if self._curves is None:
                grid = envelope_grid(self.a_max)
                self._curves = PairCurves(
                    self.n, self.t, float(self.kw["delta"]), grid, widened=False
                )
            curves = self._curves if len(key) == len(self.n) else self._curves.subset(key)
            env = _envelope(curves, self.kw["delta_max"], boxes=False)
            assert isinstance(env, EnvelopeIntervals)  # boxes=False
            got = self._env[key] = env
        return got

    def core(self, idx: np.ndarray, W: np.ndarray, target: float) -> _Core:
        kw = self.kw
        has_serial = self.has_serial and idx[0] == 0 and self.n[0] == 1.0
        return _fit_core(
            self.n[idx],
            self.t[idx],
            W,
            target,
            self.env(idx),
            has_serial=has_serial,
            v=kw["v"],
            n_1d=kw["n_1d"],
            n_2d=kw["n_2d"],
            a_max=self.a_max,
            grid=kw["grid"],
        )

    def miss(self, idx: np.ndarray, other: int) -> float:
        """Relative miss of point ``other`` by the model fitted to ``idx`` (target = that point)."""
        nt = float(self.n[other])
        core = self.core(idx, _weights(self.n[idx], nt, self.kw["q"]), nt)
        pred = core.L * float(inv_speedup(nt, core.A, core.s))
        return (self.t[other] - pred) / pred

    def max_error(self, idx: np.ndarray) -> float:
        """Largest relative error of a single model fitted to ``idx`` with uniform weights."""
        core = self.core(idx, np.ones(len(idx)), float(self.n[idx][-1]))
        pred = core.L * inv_speedup(self.n[idx], core.A, core.s)
        return float(np.max(np.abs(self.t[idx] / pred - 1.0)))


def fit_downey(
    nodes: Sequence[float] | np.ndarray,
    runtimes: Sequence[float] | np.ndarray,
    targets: float | Sequence[float] | np.ndarray,
    *,
    serial_runtime: float | None = None,
    delta: float = 0.05,
    delta_max: float = 0.5,
    q: float = 2.0,
    v: float = 0.15,
    n_1d: int = 5000,
    n_2d: int = 500,
    epsilon: float = 0.1,
    phi: float = 10.0,
    theta: float = 5.0,
    poor_fit: float = 0.10,
    a_max: float | None = None,
    patterns: bool = True,
    grid: str = "exact",
) -> AdeptFit:
    """Fit Downey's model to ``(nodes, runtimes)`` for each target (ADEPT, docs/background/models.md, section 2.2).

    Args:
        nodes, runtimes: observations (repeated sizes allowed: outliers
            dropped, the rest averaged). Runtimes in any unit (errors are relative).
        targets: node count(s) to predict; each gets its own target-weighted fit.
        serial_runtime: ``T(1)`` when known (treated as an observation at ``n = 1``).
        delta, delta_max: envelope start and cap (the loop doubles ``delta``).
        q: weight bias (smaller = more weight near the target).
        v: relative half-width of the 2-D search.
        n_1d, n_2d: resolutions of the 1-D and 2-D searches.
        epsilon, phi, theta: anomaly sensitivity and weight-reduction constants.
        poor_fit: threshold of the poor-fit warning (and of confirmations).
        a_max: largest ``A`` searched (default ``16 x`` the largest ``n``).
        patterns: run anomaly and pattern detection.
        grid: how the 2-D grid is searched: ``"exact"`` (default) finds the
            grid's minimum cell per row segment in closed form (same cell as
            brute force, see ``_grid_argmin``); ``"broadcast"`` materialises
            all ``n_2d x n_2d`` values (the reference; slower).

    Returns:
        :class:`AdeptFit` (per-target ``A``, ``sigma``, ``L = T(1)``,
        runtimes, speedups, warnings, suggested next observation).

    Raises:
        ValueError: fewer than two distinct sizes, or non-positive / non-finite values.
    """
    prep = _prepare(
        nodes,
        runtimes,
        targets,
        serial_runtime=serial_runtime,
        delta=delta,
        delta_max=delta_max,
        q=q,
        v=v,
        n_1d=n_1d,
        n_2d=n_2d,
        epsilon=epsilon,
        poor_fit=poor_fit,
        a_max=a_max,
        patterns=patterns,
        grid=grid,
    )
    fitter, active = prep.fitter, prep.active
    main_env = fitter.env(active)
    fits = []
    for target in prep.targets:
        idx, W, core = _target_core(prep, float(target), q=q, theta=theta, phi=phi)
        fits.append(_target_fit(fitter, idx, W, float(target), core, poor_fit, prep.feasible))
    return AdeptFit(
        targets=prep.targets,
        fits=tuple(fits),
        obs_nodes=fitter.n,
        obs_runtimes=fitter.t,
        dropped=prep.dropped,
        delta=main_env.delta,
        anomaly=prep.anomaly,
        anomaly_deviation=prep.dev,
        phases=prep.phases,
        feasible_sizes=prep.feasible,
        notes=prep.notes,
        envelope_of=(fitter.n[active], fitter.t[active], delta, delta_max, fitter.a_max),
    )


#: The keyword arguments of :func:`fit_downey` and their defaults.
_FIT_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(fit_downey).parameters.items()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
}


def fit_downey_params(
    nodes: Sequence[float] | np.ndarray,
    runtimes: Sequence[float] | np.ndarray,
    target: float,
    **options: Any,
) -> tuple[float, float, float]:
    """``(A, sigma, L)`` of ``fit_downey(nodes, runtimes, [target], **options).fits[0]``.

    The same steps and values, without what only the full result reports (the
    diagnostics of :class:`TargetFit`: warnings, runner-up, uncertainty, ...): for
    callers that read the parameters only, such as ``auto``'s leave-one-out.
    ``options``: the keyword arguments of :func:`fit_downey`.
    """
    unknown = sorted(set(options) - set(_FIT_DEFAULTS))
    if unknown:
        raise TypeError(f"fit_downey_params: unknown option(s) {', '.join(unknown)}")
    kw = {**_FIT_DEFAULTS, **options}
    q, theta, phi = kw.pop("q"), kw.pop("theta"), kw.pop("phi")
    prep = _prepare(nodes, runtimes, [target], q=q, **kw)
    _, _, core = _target_core(prep, float(prep.targets[0]), q=q, theta=theta, phi=phi)
    return core.A, core.s, core.L


@dataclass(frozen=True)
class _Prepared:
    """The points and the pattern findings of one :func:`fit_downey` call, before its targets."""

    fitter: _Fitter
    targets: np.ndarray
    active: np.ndarray
    dropped: int
    notes: tuple[AdeptWarning, ...]
    feasible: np.ndarray | None
    anomaly: int | None
    dev: float | None
    phases: tuple[np.ndarray, np.ndarray] | None


def _prepare(
    nodes: Sequence[float] | np.ndarray,
    runtimes: Sequence[float] | np.ndarray,
    targets: float | Sequence[float] | np.ndarray,
    *,
    serial_runtime: float | None,
    delta: float,
    delta_max: float,
    q: float,
    v: float,
    n_1d: int,
    n_2d: int,
    epsilon: float,
    poor_fit: float,
    a_max: float | None,
    patterns: bool,
    grid: str,
) -> _Prepared:
    """:func:`fit_downey`'s checks, duplicate merging and pattern detection."""
    n_raw = np.asarray(nodes, dtype=np.float64).ravel()
    t_raw = np.asarray(runtimes, dtype=np.float64).ravel()
    if n_raw.shape != t_raw.shape:
        raise ValueError(f"nodes and runtimes differ in length ({n_raw.size} vs {t_raw.size})")
    if serial_runtime is not None:
        n_raw = np.concatenate([[1.0], n_raw])
        t_raw = np.concatenate([[float(serial_runtime)], t_raw])
    # the checks on plain floats (a fit has a few points: cheaper than NumPy calls)
    isfinite = math.isfinite
    nl_raw, tl_raw = n_raw.tolist(), t_raw.tolist()
    if not (all(map(isfinite, nl_raw)) and all(map(isfinite, tl_raw))):
        raise ValueError("fit_downey: nodes and runtimes must be finite")
    if any(x < 1 for x in nl_raw) or any(x <= 0 for x in tl_raw):
        raise ValueError("fit_downey: nodes must be >= 1 and runtimes > 0")
    tg = np.atleast_1d(np.asarray(targets, dtype=np.float64))
    tgl = tg.ravel().tolist()
    if not tgl or not all(map(isfinite, tgl)) or any(x < 1 for x in tgl):
        raise ValueError("fit_downey: targets must be finite node counts >= 1")
    n, t, dropped = _merge_duplicates(n_raw, t_raw, 2.0 * poor_fit)
    if len(n) < 2:
        raise ValueError("fit_downey needs observations at two or more distinct node counts")
    if grid not in ("exact", "broadcast"):
        raise ValueError(f"fit_downey: grid must be 'exact' or 'broadcast', not {grid!r}")
    kw = dict(
        delta=delta, delta_max=delta_max, q=q, v=v, n_1d=n_1d, n_2d=n_2d, a_max=a_max, grid=grid
    )
    has_serial = serial_runtime is not None or bool(n[0] == 1.0)
    fitter = _Fitter(n, t, has_serial, kw)
    all_idx = np.arange(len(n))
    active = all_idx
    notes: list[AdeptWarning] = []
    feasible: np.ndarray | None = None
    anomaly: int | None = None
    dev: float | None = None
    phases: tuple[np.ndarray, np.ndarray] | None = None

    # ---- specially optimised sizes (9+ points)
    if patterns and len(n) >= 9:
        found = _special_sizes(fitter, n, poor_fit)
        if found is not None:
            name, mask = found
            active = all_idx[mask]
            notes.append(
                AdeptWarning(
                    "special_sizes",
                    f"sizes that are {name} run anomalously fast; fitting them only",
                )
            )
            feasible = mask  # replaced below by the sizes themselves
            feasible = _family_sizes(name, n)

    # ---- anomaly and stepwise (4+ points)
    if patterns and len(active) >= 4:
        anomaly, dev, phases = _anomaly(fitter, active, epsilon, poor_fit)
        if anomaly is not None:
            notes.append(
                AdeptWarning(
                    "anomaly",
                    f"observation at n={n[anomaly]:g} is anomalous (D={dev:.3g}); its weight is reduced",
                )
            )
        if phases is not None:
            notes.append(
                AdeptWarning(
                    "stepwise",
                    f"stepwise scalability: phases n<={n[phases[0][-1]]:g} and n>={n[phases[1][0]]:g}",
                )
            )

    return _Prepared(fitter, tg, active, dropped, tuple(notes), feasible, anomaly, dev, phases)


def _target_core(
    prep: _Prepared, target: float, *, q: float, theta: float, phi: float
) -> tuple[np.ndarray, np.ndarray, _Core]:
    """The points, weights and search result of one target of :func:`fit_downey`."""
    fitter, active, phases, anomaly, dev = (
        prep.fitter,
        prep.active,
        prep.phases,
        prep.anomaly,
        prep.dev,
    )
    n = fitter.n
    idx = active
    if phases is not None:
        near = int(active[np.argmin(np.abs(n[active] - target))])
        idx = phases[0] if near in set(phases[0].tolist()) else phases[1]
    W = _weights(n[idx], target, q)
    # the anomaly's weight is reduced, unless it is the observation nearest the
    # target (ties: the larger n): the point that says most about the target is kept
    nearest = int(
        idx[sorted(range(len(idx)), key=lambda p: (abs(n[idx[p]] - target), -n[idx[p]]))[0]]
    )
    if anomaly is not None and anomaly != nearest and anomaly in set(idx.tolist()):
        assert dev is not None  # _anomaly returns a deviation with every anomaly
        p = int(np.flatnonzero(idx == anomaly)[0])
        W = W.copy()
        W[p] = max(0.0, W[p] * (theta - min(phi, dev)) / phi)
        if not np.any(W > 0):
            W = np.ones_like(W)
    return idx, W, fitter.core(idx, W, target)


def _anomaly(
    fitter: _Fitter, active: np.ndarray, eps: float, poor_fit: float
) -> tuple[int | None, float | None, tuple[np.ndarray, np.ndarray] | None]:
    """Anomaly detection and stepwise pattern on the points ``active`` (sorted by n)."""
    nl, tl = fitter.n[active].tolist(), fitter.t[active].tolist()
    m = len(nl)
    R = _fluctuation(nl, tl)
    rises = _rises(R, eps)
    if not rises:
        return None, None, None
    # candidate -> the rise that nominated it (largest deviation wins)
    cand: dict[int, float] = {}
    for i in rises:
        D = _fdiv(R[i + 1] - R[i], eps)
        for c in (i + 1, i + 2):
            if c < m:
                cand[c] = max(cand.get(c, -math.inf), D)
    scores = {}
    for c in cand:
        Rk = _fluctuation(nl[:c] + nl[c + 1 :], tl[:c] + tl[c + 1 :])
        scores[c] = (len(_rises(Rk, eps)), _upward(Rk))
    best = min(scores, key=lambda c: (scores[c][0], scores[c][1], c))
    flattened = scores[best][0] == 0
    if not flattened and m >= 5:
        # stepwise: split after the largest rise, each phase >= 2 points, confirmed by a poor single fit
        i = rises[_argmax([_fdiv(R[q + 1], R[q]) for q in rises])]
        b = i + 2  # phase 1 = points 0..i+1, phase 2 = i+2..
        if b >= 2 and m - b >= 2 and fitter.max_error(active) > poor_fit:
            return None, None, (active[:b], active[b:])
    keep = np.delete(active, best)
    miss = fitter.miss(keep, int(active[best]))
    if abs(miss) > poor_fit:
        return int(active[best]), cand[best], None
    return None, None, None


_FAMILIES = (
    "powers of two",
    "multiples of 16",
    "multiples of 8",
    "multiples of 4",
    "multiples of 2",
)


def _family_mask(name: str, n: np.ndarray) -> np.ndarray:
    ni = np.round(n).astype(np.int64)
    if name == "powers of two":
        return (ni > 0) & ((ni & (ni - 1)) == 0)
    k = int(name.rsplit(" ", 1)[1])
    return ni % k == 0


def _family_sizes(name: str, n: np.ndarray) -> np.ndarray:
    top = int(np.max(n))
    sizes = np.arange(1, 2 * top + 1)
    return sizes[_family_mask(name, sizes.astype(np.float64))]


def _special_sizes(
    fitter: _Fitter, n: np.ndarray, poor_fit: float
) -> tuple[str, np.ndarray] | None:
    """A family of regular sizes that runs anomalously fast (9+ points), or None."""
    all_idx = np.arange(len(n))
    best: tuple[float, str, np.ndarray] | None = None
    for name in _FAMILIES:
        mask = _family_mask(name, n)
        if mask.sum() < 3 or (~mask).sum() < 3:
            continue
        rest = all_idx[~mask]
        misses = np.array([fitter.miss(rest, int(c)) for c in all_idx[mask]])
        if np.all(misses < -poor_fit):
            score = float(misses.mean())
            if best is None or score < best[0]:
                best = (score, name, mask)
    return None if best is None else (best[1], best[2])


def _nanmax(x: list[float]) -> float:
    """``max`` that returns NaN when any value is NaN (like ``np.max``)."""
    for v in x:
        if v != v:
            return v
    return max(x)


def _target_fit(
    fitter: _Fitter,
    idx: np.ndarray,
    W: np.ndarray,
    target: float,
    core: _Core,
    poor_fit: float,
    feasible: np.ndarray | None,
) -> TargetFit:
    """Derived quantities and the reliability judgment of one target's fit."""
    n, t = fitter.n[idx], fitter.t[idx]
    nl, tl = n.tolist(), t.tolist()
    A, s, L = core.A, core.s, core.L
    S_t = 1.0 / _inv1(target, A, s)
    warns: list[AdeptWarning] = []
    sug: int | None  # suggested node count to observe next (per warning)
    # (a) all points in the first (linear / Amdahl) piece
    if s <= 1.0:
        if all(x <= A for x in nl):
            sug = math.ceil(A)
            warns.append(
                AdeptWarning(
                    "all_linear",
                    f"every observation lies in the linear section (n <= A={A:.3g}); observe at n >= {sug}",
                    target,
                    sug,
                )
            )
    else:
        knee = A + s * (A - 1.0)
        if all(x <= knee for x in nl):
            sug = math.ceil(knee)
            warns.append(
                AdeptWarning(
                    "all_linear",
                    f"every observation lies before the knee n={knee:.3g} (high variance); observe at n >= {sug}",
                    target,
                    sug,
                )
            )
    # (b) poor fit
    # every observation of the fit counts, whatever its weight (an observation the
    # anomaly step down-weighted still has to be explained)
    rel = [abs(L * _inv1(x, A, s) - y) / y for x, y in zip(nl, tl, strict=True)]
    max_err = _nanmax(rel)
    if max_err > poor_fit:
        warns.append(
            AdeptWarning(
                "poor_fit", f"max relative fitting error {max_err:.1%} > {poor_fit:.0%}", target
            )
        )
    # (c) runner-up
    runner: tuple[float, float, float] | None = None
    tol = 1e-10 * float(W.sum())
    # candidates within 1.1 x the best WSSRE whose A differs by more than 1.5x
    # (the ratio is only computed for the first kind: same set, same order)
    ok = np.flatnonzero(core.cand_w <= _RUNNER_UP_FACTOR * core.wssre + tol)
    if ok.size:
        cA = core.cands.A_at(ok)
        ok = ok[np.maximum(cA / A, A / cA) > 1.5]
    if ok.size:
        b = int(ok[np.argmin(core.cand_w[ok])])
        A2, s2 = core.cands.at(b)
        L2, _ = _best_L1([_inv1(x, A2, s2) for x in nl], tl, W.tolist(), float(W.sum()))
        runner = (A2, s2, float(L2))
        n_max = max(nl)
        top = math.ceil(max(2.0 * n_max, _max_useful1(A, s), _max_useful1(A2, s2))) + 1
        top = min(top, int(64 * n_max) + 1)
        cand_n = np.concatenate(
            [np.arange(1, int(n.min())), np.arange(int(n.max()) + 1, top + 1)]
        ).astype(np.float64)
        sug = None
        if cand_n.size:
            p1 = L * _inv_mode(cand_n, A, s)
            p2 = runner[2] * _inv_mode(cand_n, A2, s2)
            diff = np.abs(p1 - p2) / np.minimum(p1, p2)
            sug = int(cand_n[int(np.argmax(diff))])
        warns.append(
            AdeptWarning(
                "runner_up",
                f"another instance (A={A2:.3g}, sigma={s2:.3g}) fits almost as well as (A={A:.3g}, sigma={s:.3g})"
                + (f"; observe at n={sug}" if sug is not None else ""),
                target,
                sug,
            )
        )
    # (d) exact fit: no more observations than parameters (A, sigma, L)
    used_n = [x for x, w in zip(nl, W.tolist(), strict=True) if w > 0]
    if len(used_n) <= _N_PARAMETERS:
        warns.append(
            AdeptWarning(
                "exact_fit",
                f"{len(used_n)} observations for {_N_PARAMETERS} parameters: any fit is exact, "
                "nothing checks it; observe another size",
                target,
            )
        )
    # (e) superlinear steps: Downey's speedup is never superlinear
    steps = [
        (nl[i], nl[i + 1])
        for i in range(len(nl) - 1)
        if tl[i] * nl[i] > (1.0 + _SUPERLINEAR_TOL) * tl[i + 1] * nl[i + 1]
    ]
    if steps:
        warns.append(
            AdeptWarning(
                "superlinear",
                "superlinear speedup between n="
                + ", ".join(f"{a:g} and {b:g}" for a, b in steps)
                + " (the model has none)",
                target,
            )
        )
    # (f) extrapolation onto a plateau no observation supports
    n_max = max(nl)
    if target >= _FAR_FACTOR * n_max and S_t >= _PLATEAU_SHARE * A and n_max < _SUPPORT_FACTOR * A:
        warns.append(
            AdeptWarning(
                "unsupported_plateau",
                f"target n={target:g} >= {_FAR_FACTOR:g}x the largest observation puts it on the "
                f"plateau S={A:.3g}, but no observation lies past {_SUPPORT_FACTOR:g}x A; "
                f"observe at n={math.ceil(_SUPPORT_FACTOR * A)}",
                target,
                math.ceil(_SUPPORT_FACTOR * A),
            )
        )
    # relative uncertainty at the target: the spread of the tied or runner-up
    # instances' predictions, and at least the fit's largest error
    pred_t = L / S_t
    spread = max_err if max_err == max_err else 0.0
    alts = list(core.tied_A) if core.tied_A is not None else []
    if runner is not None:
        alts.append((runner[0], runner[1]))
    alternatives = []
    for A_e, s_e in alts:
        L_e, _ = _best_L1([_inv1(x, A_e, s_e) for x in nl], tl, W.tolist(), float(W.sum()))
        alternatives.append((A_e, s_e, float(L_e)))
        other = float(L_e) * _inv1(target, A_e, s_e)
        if math.isfinite(other) and pred_t > 0:
            spread = max(spread, abs(other / pred_t - 1.0))
    if feasible is not None and not np.any(np.isclose(feasible, target)):
        warns.append(
            AdeptWarning(
                "target_not_optimised",
                f"target n={target:g} is not one of the specially optimised sizes",
                target,
                int(feasible[np.argmin(np.abs(feasible - target))]),
            )
        )
    weights = np.zeros(len(fitter.n))
    weights[idx] = W
    return TargetFit(
        target=target,
        A=A,
        sigma=s,
        L=L,
        runtime=L / S_t,
        speedup=S_t,
        max_useful_n=_max_useful1(A, s),
        wssre=core.wssre,
        max_rel_error=max_err,
        points=idx.copy(),
        weights=weights,
        warnings=tuple(warns),
        runner_up=runner,
        uncertainty=float(spread),
        alternatives=tuple(alternatives),
    )


# ----------------------------------------------------------------------------- the predictor


@dataclass
class AdeptModel:
    """ADEPT state of one application (times in seconds per unit of work at ``Fmax``).

    ``nodes``/``tau``: distinct node counts and averaged normalised times (the
    refit key); ``target``: the node count the fit was weighted for;
    ``A``, ``sigma``, ``L``: the fitted model, ``tau(n) = L / S(n)``;
    ``fit``: the full :class:`AdeptFit`; ``per_target``: lazily fitted
    ``(A, sigma, L, reliable)`` per queried node count (``per_target=True`` only).
    """

    nodes: np.ndarray
    tau: np.ndarray
    run_nodes: np.ndarray
    run_tau: np.ndarray
    scale: float
    target: float
    A: float
    sigma: float
    L: float
    reliable: bool
    fit: AdeptFit
    per_target: dict[float, tuple[float, float, float, bool]] = field(default_factory=dict)


def array_median(x: np.ndarray) -> float:
    """``float(np.median(x))`` of a non-empty float64 array without NaN (the middle value of
    the sorted values, or the mean of the two middle ones: ``np.median``'s operations)."""
    y = np.sort(x)
    h = len(y) // 2
    return float(y[h] if len(y) % 2 else (y[h - 1] + y[h]) / 2.0)


def _sorted_median(y: Sequence[float]) -> float:
    """``np.median`` of an ascending list (the middle value, or the mean of the two middle ones)."""
    h = len(y) // 2
    return y[h] if len(y) % 2 else (y[h - 1] + y[h]) / 2.0


def _is_missing(value: Any) -> bool:
    """``pd.isna`` of one node type value (non-scalars are not missing)."""
    if value is None or isinstance(value, str):
        return value is None
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


class _AdeptRuns:
    """What :meth:`AdeptPredictor._fit_app` needs of one application's runs, kept up to
    date run by run (the application's ``fit_cache``; runs without usable
    ``instructions`` are never put here: the reference path fits those applications).

    A run is *usable* when its normalised time ``tau = time_s * (f / Fmax) /
    instructions`` is finite and positive and its node count finite and ``>= 1``;
    it is *kept* unless it is not at ``Fmax`` while its node count has usable runs
    at ``Fmax`` (a run at ``Fmax`` arriving later drops the others of its size).
    Per usable run, in arrival order, in typed buffers (8 bytes a value, 1 a flag,
    where a list of floats costs 32: they live for the whole replay, one entry per
    run; a refit makes the arrays it reads from them): ``kept`` (a ``bytearray``
    of 0 / 1), ``nodes``, ``tau``, ``prod = nodes * tau`` (the single-size Amdahl
    fit's values) and ``req``, the usable requested node count (NaN when none).
    Per node count (``sizes``): the sum and count of its runs at ``Fmax`` and of
    the others, each summed in arrival order like ``np.bincount`` sums the kept
    runs (so the averaged time of a size is the reference's, bit for bit). Until
    a size has a run at ``Fmax`` every run of it is kept, so its first run at
    ``Fmax`` drops exactly the earlier runs with its node count (:meth:`_drop_size`).
    ``size_list``: the distinct node counts, ascending; ``req_sorted``: the kept
    runs' usable requested node counts, ascending (their median is the fit's
    target). ``model``, ``model_nodes``, ``model_tau``: the last Downey model
    fitted here, its node counts and averaged times as lists (the refit test
    reads them).
    """

    __slots__ = (
        "done",
        "dropped",
        "kept",
        "model",
        "model_nodes",
        "model_tau",
        "n",
        "nodes",
        "prod",
        "req",
        "req_sorted",
        "size_list",
        "sizes",
        "tau",
    )

    def __init__(self) -> None:
        self.done = 0  # rows of the store read so far
        self.n = 0  # usable runs
        self.dropped = 0  # usable runs not kept
        self.kept = bytearray()
        self.nodes = array("d")
        self.tau = array("d")
        self.prod = array("d")
        self.req = array("d")
        # n -> [sum, count of its runs at Fmax, sum, count of the others]
        self.sizes: dict[float, list[Any]] = {}
        self.size_list: list[float] = []
        self.req_sorted = array("d")
        self.model: AdeptModel | None = None
        self.model_nodes: list[float] = []
        self.model_tau: list[float] = []

    def extend(self, pred: AdeptPredictor, store: _AppStore) -> None:
        """Read the store's new rows: the reference's per-row operations on scalars, then
        what :meth:`_add` does run by run, the same operations in the same order. A node
        type name's top frequency is ``PlatformInfo.known_fmax``'s entry when it has one
        (what :meth:`PlatformInfo.row_fmax` answers for it at any frequency)."""
        lo, hi = self.done, store.n
        freq, nodes, time_s, _, work, req_n, _, types = store.decoded(lo, hi)
        info = pred.info_
        default = info.default
        known_fmax = info.known_fmax
        isfinite = math.isfinite
        nan = math.nan
        insort = bisect.insort
        sizes, size_list, req_sorted = self.sizes, self.size_list, self.req_sorted
        kept, nodes_of, tau_of, prod = self.kept, self.nodes, self.tau, self.prod
        req_of = self.req
        j = self.n
        dropped = self.dropped
        for i in range(hi - lo):
            name = types[i]
            if not isinstance(name, str) and _is_missing(name):
                name = default
            f = freq[i]
            fmax = known_fmax.get(name) if isinstance(name, str) else None
            if fmax is None:
                fmax = info.row_fmax(name, f)
                if fmax is None:  # not finite: _adept_runs does not use this class then
                    raise AssertionError("row_fmax is finite for every node type here")
            t = time_s[i] * (f / fmax) / work[i]
            n = nodes[i]
            if not (isfinite(t) and t > 0 and isfinite(n) and n >= 1):
                continue
            top = abs(f - fmax) <= 1e-8 + 1e-6 * abs(fmax)
            r = req_n[i]
            if not (isfinite(r) and r >= 1):
                r = nan
            # _add(n, t, r, top)
            size = sizes.get(n)
            if size is None:
                size = sizes[n] = [0.0, 0, 0.0, 0]
                insort(size_list, n)
            if top:
                if size[1] == 0 and size[3]:  # the size's first run at Fmax: drop its others
                    self._drop_size(n, j)
                    dropped += size[3]
                size[0] += t
                size[1] += 1
                keep = True
            else:
                size[2] += t
                size[3] += 1
                keep = size[1] == 0
                if not keep:
                    dropped += 1
            kept.append(keep)
            nodes_of.append(n)
            tau_of.append(t)
            prod.append(n * t)
            req_of.append(r)
            j += 1
            if keep and r == r:
                insort(req_sorted, r)
        self.done = hi
        self.n = j
        self.dropped = dropped

    def _add(self, n: float, t: float, r: float, top: bool) -> None:
        """Add one usable run (the plain path of :meth:`extend`, which does the same
        operations for a block of runs; the tests compare the two)."""
        j = self.n
        self.n = j + 1
        size = self.sizes.get(n)
        if size is None:
            size = self.sizes[n] = [0.0, 0, 0.0, 0]
            bisect.insort(self.size_list, n)
        if top:
            if size[1] == 0 and size[3]:  # the size's first run at Fmax: drop its others
                for k in range(j):
                    if self.nodes[k] == n:
                        self.kept[k] = False
                        rk = self.req[k]
                        if rk == rk:
                            del self.req_sorted[bisect.bisect_left(self.req_sorted, rk)]
                self.dropped += size[3]
            size[0] += t
            size[1] += 1
            keep = True
        else:
            size[2] += t
            size[3] += 1
            keep = size[1] == 0
            if not keep:
                self.dropped += 1
        self.kept.append(keep)
        self.nodes.append(n)
        self.tau.append(t)
        self.prod.append(n * t)
        self.req.append(r)
        if keep and r == r:
            bisect.insort(self.req_sorted, r)

    def _drop_size(self, n: float, j: int) -> None:
        """Drop the first ``j`` runs' runs of node count ``n`` (what :meth:`_add` does
        run by run when the size gets its first run at ``Fmax``; every run of it is
        kept until then) with one scan of the node counts."""
        positions = np.flatnonzero(np.frombuffer(self.nodes, count=j) == n).tolist()
        kept, req, req_sorted = self.kept, self.req, self.req_sorted
        for k in positions:
            kept[k] = False
            rk = req[k]
            if rk == rk:
                del req_sorted[bisect.bisect_left(req_sorted, rk)]

    def averages(self) -> list[float]:
        """Averaged ``tau`` per node count (``size_list`` order), as ``np.bincount`` gives them."""
        out = []
        for n in self.size_list:
            size = self.sizes[n]
            out.append(size[0] / size[1] if size[1] else size[2] / size[3])
        return out

    def _kept(self, values: array[float]) -> np.ndarray:
        """The kept runs' entries of a per-run buffer, as a new array."""
        if not self.dropped:
            return np.array(values)
        return np.array(values)[np.frombuffer(self.kept, dtype=np.bool_)]

    def kept_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """``(nodes, tau)`` of the kept runs in arrival order (new arrays)."""
        return self._kept(self.nodes), self._kept(self.tau)

    def amdahl(self) -> AmdahlModel:
        """:func:`~predictors.baselines.fit_amdahl` of the kept runs (the same operations)."""
        distinct = len(self.size_list)
        if distinct >= 2:
            # fit_amdahl's design ((1/n)/tau, 1/tau), C-contiguous as there
            nodes, tau = self.kept_columns()
            design = np.empty((len(tau), 2))
            np.divide(1.0 / nodes, tau, out=design[:, 0])
            np.divide(1.0, tau, out=design[:, 1])
            coef = nnls_two_columns(design, np.ones(len(design)))
            a, b = float(coef[0]), float(coef[1])
            if not a + b <= 0:
                return AmdahlModel(a, b, distinct)
        return AmdahlModel(geometric_mean_positive(self._kept(self.prod)), 0.0, distinct)


def _same_amdahl(old: Any, new: AmdahlModel) -> bool:
    """Whether ``old`` is an :class:`AmdahlModel` with the same parameters as ``new``,
    bit for bit (``0.0`` and ``-0.0`` differ; a NaN is never the same): everything
    computed from one is the same computed from the other."""
    if not isinstance(old, AmdahlModel) or old.distinct_nodes != new.distinct_nodes:
        return False
    return all(
        a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
        for a, b in ((old.a, new.a), (old.b, new.b))
    )


class AdeptPredictor(PerApplicationPredictor):
    """ADEPT (docs/background/models.md, section 2.2) as a predictor of the node-count dimension.

    **Shape.** Per application, every run is normalised to a time per unit of
    work at the top frequency, ``tau = time_s * (f / Fmax) / instructions``
    (runtime assumed proportional to ``Fmax / f``; ``instructions`` measures
    the job's work, so runs of different jobs become comparable). Where a node
    count has runs at ``Fmax``, only those are used for it (the ``Fmax / f``
    correction of the others is only an assumption). Runs at one
    node count are averaged (obvious outliers dropped) and Downey's model is
    fitted with :func:`fit_downey`, ``tau(n) = L / S(n)``. With
    ``per_target=False`` (default) one fit per application, weighted for the
    median requested size of its jobs, serves every queried ``n``; with
    ``per_target=True`` each distinct queried ``n`` gets its own
    target-weighted fit (the models page's "curve fitting per target"), computed on
    first use and cached until the application is refitted.

    **Per-job scaling** (shared with the other built-ins, see
    :mod:`predictors.baselines`): the application's request ratio ``rho`` is
    the geometric mean over its runs of ``work * tau(req_n) / requested_time``;
    a queried job with requested time ``R`` at ``req_n`` nodes gets
    ``time(n, f) = R * rho * tau(n) / tau(req_n) * Fmax / f``, i.e. its
    runtime at the requested size is ``R * rho`` and the fitted Downey shape
    moves it to ``n``. Without a requested time or size: the application's
    median work times ``tau(n)``.

    **Frequency and power.** ADEPT models only ``n``: runtime ``~ Fmax / f``
    and power per node = the platform's full-load power of the queried
    P-state (no per-application power model). Combine with a frequency predictor
    (``adept+fluid``) for a real DVFS model.

    **Reliability and uncertainty.** Rows are ``reliable`` only when the fit
    raised no warning (judged at the fit's target) and, at the queried ``n``,
    the prediction is not an extrapolation onto an unsupported plateau (the
    ``unsupported_plateau`` rule of :func:`fit_downey` applied per row).
    ``Prediction.uncertainty`` is the largest relative gap at ``n`` between the
    fit and its alternatives (:attr:`TargetFit.alternatives`), at least the
    fit's largest error.

    **Fallback.** Applications with fewer than ``min_observations`` distinct
    node counts get ADEPT's first piece, the two-parameter Amdahl fit of
    :func:`predictors.baselines.fit_amdahl` (perfect speedup with a single
    size), scaled per job like every fit, with ``reliable = False``: with one
    or two sizes the Downey shape is not identifiable. Applications with no
    runs get :meth:`Predictor.fallback`.

    **Refits.** :meth:`update` appends the runs and refits only their
    applications -- lazily: the refit of an updated application is done when
    its predictions (or its model) are next asked for, so several updates
    between two predictions cost one refit (same result: applications are
    fitted independently) -- and an application's Downey fit is recomputed only when its
    set of distinct node counts changed or an averaged normalised time moved
    by more than ``refit_tol`` (relative, default 2 %, the order of a
    measurement's noise: smaller moves carry no information; 0 = refit on any
    change); otherwise the cached fit is reused (the request ratio and median
    work are always refreshed, they are cheap). ``n_refits_`` counts the
    Downey fits done. What a refit reads of the runs is kept up to date run
    by run (:class:`_AdeptRuns`: each run's node count, normalised time and
    their product, the per-size sums, the sorted requested sizes), so a refit
    that reuses the fit or falls back to Amdahl reads only the new runs, and
    makes arrays of the kept runs only when it fits (and
    the request ratio is one pass over the runs with a request, without
    :meth:`_shape`); the same values as the whole-table computation
    (:meth:`_fit_app_reference`, used where that state does not apply: an
    application with a run without usable ``instructions``, a node type
    without a finite top frequency), bit for bit.

    **Many sizes.** ADEPT is built for a few observed sizes: its envelope
    solves every pair of them, so a fit's cost grows with the square of the
    number of distinct node counts (about 3 ms with 4 sizes, 30 ms with 10,
    180 ms with 20 here). A scheduler that varies job sizes quickly collects
    many, so the fit uses the runs at the ``max_sizes`` distinct node counts
    nearest the target (default 8; ties to the smaller count; ``None`` = all),
    which are also those the WSSRE weights most.

    Args:
        min_observations: distinct node counts needed per application.
        per_target: one fit per queried node count instead of one per application.
        refit_tol: relative change of an averaged time that triggers a refit.
        max_sizes: distinct node counts a fit uses at most (nearest the target; None: all).
        delta, delta_max, q, v, n_1d, n_2d, poor_fit: passed to :func:`fit_downey`.
    """

    name = "adept"

    def __init__(
        self,
        min_observations: int = 3,
        per_target: bool = False,
        refit_tol: float = 0.02,
        max_sizes: int | None = 8,
        delta: float = 0.05,
        delta_max: float = 0.5,
        q: float = 2.0,
        v: float = 0.15,
        n_1d: int = 5000,
        n_2d: int = 500,
        poor_fit: float = 0.10,
    ) -> None:
        self.min_observations = min_observations
        self.per_target = per_target
        self.refit_tol = refit_tol
        if max_sizes is not None and int(max_sizes) < 3:
            raise ConfigError("max_sizes", f"must be >= 3 or None, got {max_sizes!r}")
        self.max_sizes = max_sizes
        self.delta = delta
        self.delta_max = delta_max
        self.q = q
        self.v = v
        self.n_1d = n_1d
        self.n_2d = n_2d
        self.poor_fit = poor_fit

    _lazy_refit = True  # applications are fitted independently: refit when next read
    _tables_follow_model = True  # _shape reads only the model: a reused fit keeps its tables

    @property
    def n_refits_(self) -> int:
        """Downey fits done so far (deferred refits are done first)."""
        self._flush()
        return self._n_refits

    @property
    def _grid_ok(self) -> bool:  # type: ignore[override]
        # per-target fits are made lazily per queried n: no whole-grid tables
        return not self.per_target

    def _fit_kwargs(self) -> dict[str, Any]:
        return dict(
            delta=self.delta,
            delta_max=self.delta_max,
            q=self.q,
            v=self.v,
            n_1d=self.n_1d,
            n_2d=self.n_2d,
            poor_fit=self.poor_fit,
        )

    def _fit_global(self, observations: Any) -> None:
        self.models_: dict[int, AdeptModel] = {}
        self._n_refits = 0
        # the incremental path computes each run's Fmax alone (PlatformInfo.row_fmax):
        # the reference's value too when every node type's top frequency is finite
        self._rows_ok = all(math.isfinite(t.fmax_ghz) for t in self.info_.types.values())

    #: Whether :meth:`_fit_app` may use the application's :class:`_AdeptRuns`
    #: (False: always :meth:`_fit_app_reference`; tests compare the two).
    _incremental = True

    def _fit_app(
        self, app: int, runs: AppRuns, work: np.ndarray
    ) -> AdeptModel | AmdahlModel | None:
        """:meth:`_fit_app_reference` from the application's incremental :class:`_AdeptRuns`
        (the same model, bit for bit), or by the reference when it cannot be used."""
        inc = self._adept_runs(app, runs, work)
        if inc is None:
            return self._kept_amdahl(app, self._fit_app_reference(app, runs, work))
        sizes = inc.size_list
        if len(sizes) < max(2, int(self.min_observations)):
            self.models_.pop(app, None)
            if inc.n == 0:
                return None
            return self._kept_amdahl(app, inc.amdahl())
        req = inc.req_sorted
        target = float(round(_sorted_median(req))) if req else None
        if target is None:
            target = float(np.round(np.median(inc.kept_columns()[0])))
        old = self.models_.get(app)
        avg = inc.averages()
        if old is not None and old.target == target:
            if inc.model is old:
                old_nodes, old_tau = inc.model_nodes, inc.model_tau
            else:
                old_nodes, old_tau = old.nodes.tolist(), old.tau.tolist()
            tol = self.refit_tol
            if old_nodes == sizes and all(
                abs(a - o) <= tol * o for a, o in zip(avg, old_tau, strict=True)
            ):
                return old
        nodes, tau = inc.kept_columns()
        model = self._fit_model(app, nodes, tau, np.array(sizes), np.array(avg), target)
        inc.model, inc.model_nodes, inc.model_tau = model, list(sizes), avg
        return model

    def _kept_amdahl(self, app: int, model: Any) -> Any:
        """``model``, or the application's current model when both are Amdahl fits with
        the same parameters (:func:`_same_amdahl`): then the shape tables made from it,
        and the shapes and picks made from those, stay valid (:attr:`_tables_follow_model`)
        instead of being made again with the same values. About half the Amdahl
        refits of a CTC-SP2 replay (an application at one node count whose runs have
        the same normalised time) give the same parameters again."""
        if not isinstance(model, AmdahlModel):
            return model
        state = self.state_.get(app)
        old = None if state is None else state.model
        return old if _same_amdahl(old, model) else model

    def _adept_runs(self, app: int, runs: AppRuns, work: np.ndarray) -> _AdeptRuns | None:
        """The application's :class:`_AdeptRuns` extended to every run, or ``None`` when the
        reference path must fit it (runs not from the predictor's store, a run without
        usable ``instructions``, a node type without a finite top frequency, hooks
        overridden by a subclass)."""
        store = self._stores.get(app)
        if (
            not self._incremental
            or store is None
            or store.runs is not runs
            or store.bad_work
            or work is not runs["instructions"]
            or not self.__dict__.get("_rows_ok", False)
            or type(self)._single_fmax is not AdeptPredictor._single_fmax
        ):
            return None
        inc = store.fit_cache
        if not isinstance(inc, _AdeptRuns):
            inc = store.fit_cache = _AdeptRuns()
        if inc.done < store.n:
            inc.extend(self, store)
        return inc

    def _fit_model(
        self,
        app: int,
        nodes: np.ndarray,
        tau: np.ndarray,
        un: np.ndarray,
        avg: np.ndarray,
        target: float,
    ) -> AdeptModel:
        """A new Downey fit of the usable runs ``(nodes, tau)`` (distinct sizes ``un``,
        averaged times ``avg``) for ``target``; stored in :attr:`models_`."""
        scale = array_median(tau)
        fit_n, fit_tau = self._nearest_sizes(nodes, tau / scale, target, distinct=un)
        fit = fit_downey(fit_n, fit_tau, [target], **self._fit_kwargs())
        self._n_refits += 1
        f = fit.fits[0]
        model = AdeptModel(
            nodes=un,
            tau=avg,
            run_nodes=nodes,
            run_tau=tau / scale,
            scale=scale,
            target=target,
            A=f.A,
            sigma=f.sigma,
            L=f.L * scale,
            reliable=not f.warnings,
            fit=fit,
        )
        self.models_[app] = model
        return model

    @np.errstate(all="ignore")  # (as a decorator: half the cost of a with block)
    def _request_ratio(self, app: int, model: Any, store: _AppStore, work: np.ndarray) -> float:
        """The request ratio without :meth:`_shape` (same values): at the requested size
        and ``Fmax`` the shape's ``Fmax / f`` factor is ``x / x = 1`` for every run with a
        usable request (finite non-zero top frequencies: ``store.bad_fmax`` is False)."""
        if (
            store.bad_work
            or store.bad_fmax
            or self.per_target
            or type(self)._shape is not AdeptPredictor._shape
            or not isinstance(model, (AdeptModel, AmdahlModel))
        ):
            return super()._request_ratio(app, model, store, work)
        # the requested sizes as they are: _shape's np.maximum(n, 1.0) of them is n
        # itself (the store keeps only requests with 1 <= n < inf)
        nodes, req_time, _, instructions = store.requests()
        if isinstance(model, AmdahlModel):
            tau_ref = model.a / nodes + model.b
        else:
            tau_ref = model.L * _inv_mode(nodes, model.A, model.sigma)
        return geometric_mean_positive(instructions * tau_ref / req_time)

    def _fit_app_reference(
        self, app: int, runs: AppRuns, work: np.ndarray
    ) -> AdeptModel | AmdahlModel | None:
        """The fit from the whole runs table (any runs; :meth:`_fit_app`'s reference)."""
        freq = runs["freq_ghz"]
        fmax: Any = self._single_fmax(runs["node_type"])
        if fmax is None:  # several node types (or unnamed runs): per-row top frequency
            names = np.where(
                pd.isna(runs["node_type"]), self.info_.default, runs["node_type"]
            ).astype(object)
            fmax = self.info_.fmax(names, freq)
        tau = runs["time_s"] * (freq / fmax) / work
        nodes = runs["nodes"]
        ok = np.isfinite(tau) & (tau > 0) & np.isfinite(nodes) & (nodes >= 1)
        # prefer runs at Fmax: where a node count has some, its other runs are not used
        # (their Fmax/f correction is only an assumption); same test as np.isclose(rtol=1e-6)
        at_top = ok & (np.abs(freq - fmax) <= 1e-8 + 1e-6 * np.abs(fmax))
        if at_top.any() and (ok & ~at_top).any():
            ok &= at_top | ~np.isin(nodes, nodes[at_top])
        if not ok.all():
            nodes, tau = nodes[ok], tau[ok]
        un, inv = np.unique(nodes, return_inverse=True)
        if len(un) < max(2, int(self.min_observations)):
            # Too few sizes for a Downey fit: use ADEPT's first piece (Amdahl)
            # so the job's time at its requested size still benefits from the
            # application's learned runtime/request ratio; rows stay unreliable.
            self.models_.pop(app, None)
            if len(tau) == 0:
                return None
            return fit_amdahl(nodes, tau)
        avg = np.bincount(inv, weights=tau) / np.bincount(inv)
        req_n = runs["requested_nodes"][ok]
        good_req = np.isfinite(req_n) & (req_n >= 1)
        if not good_req.all():
            req_n = req_n[good_req]
        target = (
            float(np.round(np.median(req_n))) if req_n.size else float(np.round(np.median(nodes)))
        )
        old = self.models_.get(app)
        if (
            old is not None
            and old.target == target
            and np.array_equal(old.nodes, un)
            and np.all(np.abs(avg - old.tau) <= self.refit_tol * old.tau)
        ):
            return old
        return self._fit_model(app, nodes, tau, un, avg, target)

    def _nearest_sizes(
        self,
        nodes: np.ndarray,
        tau: np.ndarray,
        target: float,
        distinct: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The runs at the ``max_sizes`` distinct node counts nearest ``target``
        (``distinct``: ``np.unique(nodes)`` when the caller has it)."""
        limit = self.max_sizes
        if limit is None:
            return nodes, tau
        un = np.unique(nodes) if distinct is None else distinct
        if len(un) <= limit:
            return nodes, tau
        keep = un[np.argsort(np.abs(un - target), kind="stable")[: int(limit)]]
        sel = np.isin(nodes, keep)
        return nodes[sel], tau[sel]

    def _single_fmax(self, node_type: np.ndarray) -> float | None:
        """The top frequency when the platform has one node type and every run names it."""
        one = self.info_._single(node_type)
        return None if one is None else one.fmax_ghz

    def _params_at(self, model: AdeptModel, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(A, sigma, L, reliable)`` per row (per-target fits computed once per distinct n)."""
        k = len(nodes)
        if not self.per_target:
            return (
                np.full(k, model.A),
                np.full(k, model.sigma),
                np.full(k, model.L),
                np.full(k, model.reliable),
            )
        un, inv = np.unique(nodes, return_inverse=True)
        rows = []
        for x in un:
            key = float(x)
            if key not in model.per_target:
                fit_n, fit_tau = self._nearest_sizes(model.run_nodes, model.run_tau, max(key, 1.0))
                fit = fit_downey(fit_n, fit_tau, [max(key, 1.0)], **self._fit_kwargs())
                f = fit.fits[0]
                model.per_target[key] = (f.A, f.sigma, f.L * model.scale, not f.warnings)
            rows.append(model.per_target[key])
        tab = np.array(rows, dtype=np.float64).reshape(len(un), 4)[inv]
        return tab[:, 0], tab[:, 1], tab[:, 2], tab[:, 3].astype(bool)

    def _compute_table(self, app: int, state: Any, name: str, meta: tuple[Any, ...]) -> ShapeTable:
        """The base class's shape table, computed as one column of ``tau(n)`` times
        the ``Fmax / f`` row (the same operations as :meth:`_shape` per cell), with
        its bounds (:func:`~predictors.baselines.outer_table_bounds`).

        What does not depend on the model (the node counts, the ``Fmax / f`` row, the
        power table and both reliability tables) is computed once per node type,
        ``count`` and frequency set (:meth:`_table_parts`); the power and reliability
        tables are shared read-only arrays (callers never write into the tables).
        """
        model = state.model
        if self.per_target or not isinstance(model, (AdeptModel, AmdahlModel)):
            return super()._compute_table(app, state, name, meta)
        parts = self._table_parts(name, meta)
        if parts is None:
            return super()._compute_table(app, state, name, meta)
        n, ratio, power, rel_tabs = parts
        monotone = False
        if isinstance(model, AmdahlModel):  # a / n + b is monotone (see outer_table_bounds)
            monotone = True
            col = model.a / n + model.b
            rel_tab = rel_tabs[0]
        else:
            # inv_speedup at a scalar sigma: only its mode's formulas (same values)
            col = model.L * _inv_mode(n, model.A, model.sigma)
            rel_tab = rel_tabs[1 if model.reliable else 0]
            if model.reliable:
                ok = self._plateau_ok(model, n)
                if not ok.all():
                    rel_tab = np.repeat(ok[:, None], ratio.shape[1], 1)
        bounds = outer_table_bounds(col, ratio, power[0], col_monotone=monotone)
        return outer_product(col, ratio), power, rel_tab, bounds

    def _table_parts(
        self, name: str, meta: tuple[Any, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]] | None:
        """``(n = 1..count, Fmax / f as a row, power table, (all False, all True))`` of a
        table (cached per node type, ``count`` and frequencies; ``None`` for an unknown
        node type). The P-state figures are fixed once fitted: a new :meth:`fit` starts
        a new cache."""
        count, freqs = meta[0], meta[1]
        held: tuple[Any, dict[tuple[str, int, bytes], Any]] | None = self.__dict__.get(
            "_parts_cache"
        )
        if held is None or held[0] is not self.info_:
            held = (self.info_, {})
            self._parts_cache = held
        cache = held[1]
        key = (name, int(count), freqs.tobytes())
        got = cache.get(key, False)
        if got is False:
            info = self.info_.get(name)
            if info is None:
                got = None
            else:
                n = np.arange(1, count + 1, dtype=np.float64)
                ratio = (info.fmax_ghz / freqs)[None, :]
                power = self.info_.busy_power(np.full(len(freqs), name, dtype=object), freqs)
                power = row_table(np.asarray(power, dtype=np.float64), count)
                rel_tabs = (
                    constant_flags(count, len(freqs), False),
                    constant_flags(count, len(freqs), True),
                )
                for x in (n, ratio):
                    x.flags.writeable = False
                got = (n, ratio, power, rel_tabs)
            if len(cache) >= 256:  # bounded (a platform has a few types and P-state sets)
                cache.clear()
            cache[key] = got
        return got

    def _uncertainty(self, app: int, model: Any, nodes: np.ndarray) -> np.ndarray | None:
        """Relative uncertainty at each ``n``: the largest relative gap between the fit and
        its alternatives (:attr:`TargetFit.alternatives`: the tied 1-D ends, the
        runner-up) at ``n``, at least the fit's largest error (NaN for the Amdahl
        fallback; with ``per_target=True`` the alternatives of the application's fit)."""
        if not isinstance(model, AdeptModel):
            return None
        f = model.fit.fits[0]
        n = np.maximum(np.asarray(nodes, dtype=np.float64), 1.0)
        with np.errstate(all="ignore"):
            base = model.L * inv_speedup(n, model.A, model.sigma)
            unc = np.full(len(n), f.max_rel_error if f.max_rel_error == f.max_rel_error else 0.0)
            for A_e, s_e, L_e in f.alternatives:
                other = L_e * model.scale * inv_speedup(n, A_e, s_e)
                gap = np.abs(other / base - 1.0)
                unc = np.where(np.isfinite(gap), np.maximum(unc, gap), unc)
        return unc

    @staticmethod
    def _plateau_ok(model: AdeptModel, nodes: np.ndarray) -> np.ndarray:
        """False where ``n`` is an extrapolation onto a plateau no observation supports
        (the ``unsupported_plateau`` rule of :func:`fit_downey` at the queried ``n``:
        one fit serves every ``n``, its warnings were judged at its own target)."""
        n_max = float(model.fit.obs_nodes.max())
        if n_max >= _SUPPORT_FACTOR * model.A:
            return np.ones(len(nodes), dtype=bool)
        with np.errstate(all="ignore"):
            speedup = 1.0 / inv_speedup(nodes, model.A, model.sigma)
        return ~((nodes >= _FAR_FACTOR * n_max) & (speedup >= _PLATEAU_SHARE * model.A))

    def _shape(self, app, model, node_type, nodes, freq_ghz):
        nodes = np.maximum(np.asarray(nodes, dtype=np.float64), 1.0)
        fmax = self._single_fmax(node_type)
        if fmax is None:
            fmax = self.info_.fmax(node_type, freq_ghz)
        if isinstance(model, AmdahlModel):
            tau = (model.a / nodes + model.b) * (fmax / freq_ghz)
            return tau, self.info_.busy_power(node_type, freq_ghz), np.zeros(len(nodes), dtype=bool)
        if not self.per_target:  # one fit for every n: scalars (same values as _params_at's)
            tau = model.L * inv_speedup(nodes, model.A, model.sigma) * (fmax / freq_ghz)
            power = self.info_.busy_power(node_type, freq_ghz)
            rel = self._plateau_ok(model, nodes) if model.reliable else np.zeros(len(nodes), bool)
            return tau, power, rel
        A, s, L, rel = self._params_at(model, nodes)
        tau = L * inv_speedup(nodes, A, s) * (fmax / freq_ghz)
        power = self.info_.busy_power(node_type, freq_ghz)
        return tau, power, rel
