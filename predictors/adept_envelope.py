"""Downey-model algebra for ADEPT: the vectorised speedup, the pairwise closed forms, the envelope.

Everything here follows ``docs/background/models.md`` sections 1.1 and 2.2. Symbols: ``A``
average parallelism, ``sigma`` (``s`` in code) variance of parallelism, ``L``
the runtime on one node, ``h(n) = T(n)/L = 1/S(n)`` the *inverse speedup*.

Inverse speedup, piece by piece (derived from the tables of docs/background/models.md, section 1.1)
---------------------------------------------------------------------------

Low variance (``s <= 1``); the pieces depend on ``A`` only, never on ``s``::

    L1 (1 <= n <= A):       1/S = (A + s/2 (n-1)) / (A n)          = 1/n + s (n-1)/(2 A n)
    L2 (A <= n <= 2A-1):    1/S = (s (A-1/2) + n (1-s/2)) / (A n)  = 1/A + s (2A-1-n)/(2 A n)
    L3 (n >= 2A-1):         1/S = 1/A

so for a fixed ``A`` the low-variance ``h`` is *linear in s*: ``h = alpha + s beta`` with
``alpha = 1/min(n, A)`` and ``beta = max(0, min(n-1, 2A-1-n)) / (2 A n)`` (the two
expressions of ``beta`` agree at ``n = A`` and vanish at ``n = 1`` and ``n >= 2A-1``).

High variance (``s >= 1``); the knee ``k = A + s (A - 1) = A + A s - s`` depends on ``s``::

    H1 (1 <= n <= k):   1/S = (s (n + A - 1) + A) / (n A (s + 1))
    H2 (n >= k):        1/S = 1/A

so ``(1 + s) h = alpha + s beta`` is again *linear in s* with
``alpha = 1/n, beta = (A - 1 + n)/(n A)`` in H1 and ``alpha = beta = 1/A`` in H2.

These two linear forms make every closed form below, and the fitting grids of
:mod:`predictors.adept`, cheap: for a fixed ``A`` everything is a rational
function of ``s`` of degree 1 or 2.

Two kinds of closed forms
-------------------------

1. **Normalised units** (docs/background/models.md, section 2.2 writes them this way): runtimes ``t``
   in units where ``T(1) = A`` (i.e. ``t = A h`` and a flat point has
   ``t = 1``). Then two points in known pieces give ``(A, s)`` directly
   (:func:`normalised_pair_solutions`, 9 piece combinations, derivations in
   its docstring). These need the runtime *scale* ``L / A`` to be known,
   which measured runtimes do not give (the scale is a third unknown), so
   they are offered for normalised data and as the reference the tests check.

2. **Scale-free** (what the envelope and the 1-D search use): the scale
   cancels in the ratio ``rho = T_i / T_j = h(n_i) / h(n_j)``. For a fixed
   ``A`` and an assumption of the pieces of ``n_i`` and ``n_j``, both modes give
   ``alpha_i + s beta_i = rho (alpha_j + s beta_j)`` (the ``1 + s`` factor of the
   high mode cancels), hence the closed form::

       s = (rho alpha_j - alpha_i) / (beta_i - rho beta_j)

   valid when ``s`` lies in the mode's range and the points lie in the assumed
   pieces. Per pair this traces the curve of every ``(A, s)`` that explains
   both points exactly, for every piece assumption: L (all pieces, which ``A``
   fixes), H1-H1, H1-H2, and the degenerate flat-flat combinations (both
   points flat: ``rho = 1`` and ``s`` is free) -- see :func:`pair_sigma`.

The envelope (:func:`envelope`) widens each observation by ``+-delta`` (so the
ratio by ``(1 -+ delta)/(1 +- delta)``), takes for every pair and piece
assumption the box ``[A_lo, A_hi] x [s_lo, s_hi]`` of the curve on a
logarithmic ``A`` grid, drops boxes contained in another, and checks whether
some instance on the curves explains *all* points within ``delta`` (with the
scale ``L`` chosen to minimise the largest relative error, closed form
``L = 2 / (min r + max r)`` with ``r_k = h_k / T_k``); if none does, ``delta``
doubles (up to ``delta_max``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

#: The compiled twin of :func:`_pair_rows` (``predictors._adept_kernels``, built by
#: ``pip install`` with a C compiler; the same values, tested), or None: then the
#: Python function runs.
try:
    from predictors._adept_kernels import pair_rows as compiled_pair_rows
except ImportError:  # installed without a C compiler, or a source tree not built
    compiled_pair_rows = None

#: The compiled twin of :func:`_widened_curve_bounds_plain` (the same indices, tested), or None.
try:
    from predictors._adept_kernels import widened_curve_bounds as compiled_widened_curve_bounds
except ImportError:  # installed without a C compiler, or a source tree not built
    compiled_widened_curve_bounds = None

#: The compiled twins of :func:`_min_error`, :func:`_flat_prefix_errors` and of the grid
#: indices of :func:`_curve_a_bounds` (the same values, tested), or None.
try:
    from predictors._adept_kernels import curve_bounds as compiled_curve_bounds
    from predictors._adept_kernels import flat_prefix_errors as compiled_flat_prefix_errors
    from predictors._adept_kernels import min_error as compiled_min_error
except ImportError:  # installed without a C compiler, or a source tree not built
    compiled_curve_bounds = compiled_flat_prefix_errors = compiled_min_error = None

__all__ = [
    "Envelope",
    "EnvelopeBox",
    "PairSolution",
    "downey_speedup_vec",
    "envelope",
    "high_coeffs",
    "inv_speedup",
    "inv_speedup_high",
    "inv_speedup_low",
    "low_coeffs",
    "max_useful_n",
    "minimax_rel_error",
    "normalised_pair_solutions",
    "pair_sigma",
]


# ----------------------------------------------------------------------------- the model


def inv_speedup_low(n: np.ndarray, A: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``1/S(n)`` with the low-variance formulas (valid for ``s <= 1``), broadcasting."""
    beta = np.maximum(np.minimum(n - 1.0, 2.0 * A - 1.0 - n), 0.0) / (2.0 * A * n)
    return 1.0 / np.minimum(n, A) + s * beta


def inv_speedup_high(n: np.ndarray, A: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``1/S(n)`` with the high-variance formulas (valid for ``s >= 1``): ``max(H1, 1/A)``.

    Beyond the knee the H1 expression falls below ``1/A`` (its speedup keeps
    growing past ``A``), so the piecewise value is the maximum of the two.
    """
    return np.maximum((A + s * (A - 1.0 + n)) / (n * A * (1.0 + s)), 1.0 / A)


def inv_speedup(n: np.ndarray | float, A: np.ndarray | float, s: np.ndarray | float) -> np.ndarray:
    """``1/S(n)`` of the Downey model, broadcasting over all three arguments.

    ``n >= 1``, ``A >= 1``, ``s >= 0``; ``s <= 1`` selects the low-variance mode.
    """
    n = np.asarray(n, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    return np.where(s <= 1.0, inv_speedup_low(n, A, s), inv_speedup_high(n, A, s))


def downey_speedup_vec(
    n: np.ndarray | float, A: np.ndarray | float, s: np.ndarray | float
) -> np.ndarray:
    """Downey speedup ``S(n)`` (both modes), vectorised with broadcasting."""
    return 1.0 / inv_speedup(n, A, s)


def max_useful_n(A: np.ndarray | float, s: np.ndarray | float) -> np.ndarray:
    """Largest useful node count: ``2A - 1`` (low variance) or ``A + A s - s`` (high)."""
    A = np.asarray(A, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    return np.where(s <= 1.0, 2.0 * A - 1.0, A + A * s - s)


def low_coeffs(n: np.ndarray | float, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, beta)`` with ``h = alpha + s beta`` in the low-variance mode (broadcasting)."""
    alpha = 1.0 / np.minimum(n, A)
    beta = np.maximum(np.minimum(n - 1.0, 2.0 * A - 1.0 - n), 0.0) / (2.0 * A * n)
    return alpha, beta


def high_coeffs(n: np.ndarray | float, A: np.ndarray, flat: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, beta)`` with ``(1 + s) h = alpha + s beta`` in piece H1 (``flat=False``) or H2."""
    if flat:
        inv = 1.0 / np.broadcast_to(A, np.broadcast_shapes(np.shape(n), np.shape(A)))
        return inv, inv
    return 1.0 / n + 0.0 * A, (A - 1.0 + n) / (n * A)


def minimax_rel_error(h: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Smallest possible max relative error of ``L h_k`` vs ``t_k`` over the last axis.

    With ``r_k = h_k / t_k`` the error of point ``k`` is ``L r_k - 1``; the best
    ``L`` equalises the extremes, ``L = 2/(min r + max r)``, giving the error
    ``(max r - min r)/(max r + min r)``.
    """
    r = h / t
    lo = r.min(axis=-1)
    hi = r.max(axis=-1)
    return (hi - lo) / (hi + lo)


# ----------------------------------------------------------------------------- scale-free forms


def pair_sigma(
    n_i: float, n_j: float, rho: np.ndarray, A: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Scale-free closed forms: every ``s`` that makes ``h(n_i)/h(n_j) = rho`` for each ``A``.

    ``n_i < n_j``; ``rho`` and ``A`` broadcast together. Returns, per piece
    assumption, ``(s, valid)``:

    * ``"L"``: low variance (pieces fixed by ``A``):
      ``s = (rho alpha_j - alpha_i)/(beta_i - rho beta_j)``, valid for ``0 <= s <= 1``;
    * ``"H11"``: both in H1, valid for ``s >= 1`` and ``n_j <= knee``;
    * ``"H12"``: ``n_i`` in H1 and ``n_j`` flat (``alpha_j = beta_j = 1/A``),
      valid for ``s >= 1`` and ``n_i <= knee <= n_j``.

    The flat-flat combinations leave ``s`` free and are handled by
    :func:`envelope` directly.
    """
    rho = np.asarray(rho, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        ai, bi = low_coeffs(np.float64(n_i), A)
        aj, bj = low_coeffs(np.float64(n_j), A)
        s = (rho * aj - ai) / (bi - rho * bj)
        out["L"] = (s, np.isfinite(s) & (s >= 0.0) & (s <= 1.0))
        ai, bi = high_coeffs(np.float64(n_i), A, flat=False)
        for key, flat_j in (("H11", False), ("H12", True)):
            aj, bj = high_coeffs(np.float64(n_j), A, flat=flat_j)
            s = (rho * aj - ai) / (bi - rho * bj)
            knee = A + s * (A - 1.0)
            ok = np.isfinite(s) & (s >= 1.0) & (n_i <= knee * (1 + 1e-12))
            ok &= (n_j >= knee * (1 - 1e-12)) if flat_j else (n_j <= knee * (1 + 1e-12))
            out[key] = (s, ok)
    return out


# ----------------------------------------------------------------------------- normalised forms


@dataclass(frozen=True)
class PairSolution:
    """One piece assumption's solution of a pair in normalised units.

    ``combo`` names the pieces (e.g. ``"L1-L2"``); ``point`` is True when the
    pair determines ``(A, s)`` uniquely (then ``A_lo == A_hi`` and
    ``s_lo == s_hi`` before widening); otherwise the ranges bound the curve of
    solutions.
    """

    combo: str
    A_lo: float
    A_hi: float
    s_lo: float
    s_hi: float
    point: bool


def normalised_pair_solutions(
    n_i: float, t_i: float, n_j: float, t_j: float, *, delta: float = 0.0, tol: float = 1e-9
) -> list[PairSolution]:
    """Closed forms of docs/background/models.md, section 2.2 in normalised units (``t = T A / L``: ``t(1) = A``, flat ``t = 1``).

    ``n_i < n_j``. With ``t = A h`` the pieces read::

        L1: n t = A + (s/2)(n - 1)                       (n t linear in n)
        L2: t   = (1 - s/2) + s (A - 1/2) / n            (t linear in 1/n)
        L3: t   = 1
        H1: t   = s/(1+s) + (A + s (A-1)) / ((1+s) n)    (t linear in 1/n)
        H2: t   = 1

    Solutions (``m`` = slope and ``c`` = intercept of ``t`` against ``1/n``
    through the two points, ``m = n_i n_j (t_i - t_j)/(n_j - n_i)``,
    ``c = t_i - m/n_i``):

    1. L1-L1: ``s = 2 (n_j t_j - n_i t_i)/(n_j - n_i)``, ``A = n_i t_i - s (n_i - 1)/2``.
    2. L2-L2: ``c = 1 - s/2`` and ``m = s (A - 1/2)``: ``s = 2 (1 - c)``, ``A = m/s + 1/2``.
    3. L1-L2: ``A = n_i t_i - s (n_i - 1)/2`` from L1, put into L2 at ``n_j``:
       ``(n_i - 1) s^2 - (2 n_i t_i - 1 - n_j) s - 2 n_j (1 - t_j) = 0`` (linear if ``n_i = 1``).
    4. H1-H1: ``c = s/(1+s)`` and ``m = A - c``: ``s = c/(1 - c)``, ``A = m + c``.
    5. L1-L3: ``t_j = 1``; ``A = n_i t_i - s (n_i - 1)/2`` for ``s`` in ``[0, 1]``, ``n_i <= A <= (n_j+1)/2``.
    6. L2-L3: ``t_j = 1``; ``A = 1/2 + n_i (t_i - 1 + s/2)/s`` for ``s`` in ``(0, 1]``, ``A <= n_i <= 2A-1 <= n_j``.
    7. L3-L3: ``t_i = t_j = 1``; ``A <= (n_i + 1)/2``, any ``s`` in ``[0, 1]``.
    8. H1-H2: ``t_j = 1``; ``A = n_i t_i - s (n_i - 1)/(1 + s)`` for ``s >= 1``, ``n_i <= A + s(A-1) <= n_j``.
    9. H2-H2: ``t_i = t_j = 1``; ``A + s (A - 1) <= n_i``.

    Point forms (1-4) are widened as docs/background/models.md, section 2.2 says for L1-L1: ``s`` by the
    factor ``[1 - delta, 1 + delta]`` and ``A`` by ``n_i t_i (1 +- delta) - ...``
    (forms 2-4: both by ``(1 +- delta)``). Curve forms (5-9) are sampled (the
    ``s`` range is clipped at 10 for the high mode) and bounded. Only combos
    consistent with the data within ``tol`` (and ``delta`` for the flat ones)
    are returned.
    """
    if not n_i < n_j:
        raise ValueError("normalised_pair_solutions needs n_i < n_j")
    out: list[PairSolution] = []
    lo, hi = 1.0 - delta, 1.0 + delta
    eps = tol

    def add_point(
        combo: str, A: float, s: float, widen_A: tuple[float, float] | None = None
    ) -> None:
        sl, sh = sorted((s * lo, s * hi))
        al, ah = widen_A if widen_A is not None else (A * lo, A * hi)
        out.append(PairSolution(combo, al, ah, sl, sh, True))

    # 1. L1-L1
    s = 2.0 * (n_j * t_j - n_i * t_i) / (n_j - n_i)
    A = n_i * t_i - s * (n_i - 1.0) / 2.0
    if -eps <= s <= 1 + eps and A >= n_j - eps:
        s = min(max(s, 0.0), 1.0)
        add_point(
            "L1-L1", A, s, (n_i * t_i * lo - s * (n_i - 1) / 2, n_i * t_i * hi - s * (n_i - 1) / 2)
        )
    # slope/intercept in 1/n (forms 2 and 4)
    m = n_i * n_j * (t_i - t_j) / (n_j - n_i)
    c = t_i - m / n_i
    # 2. L2-L2
    s = 2.0 * (1.0 - c)
    if eps < s <= 1 + eps:
        A = m / s + 0.5
        if A <= n_i + eps and n_j <= 2 * A - 1 + eps:
            add_point("L2-L2", A, min(s, 1.0))
    # 3. L1-L2
    qa, qb, qc = n_i - 1.0, -(2.0 * n_i * t_i - 1.0 - n_j), -2.0 * n_j * (1.0 - t_j)
    if abs(qa) < 1e-15:
        roots = [-qc / qb] if qb != 0 else []
    else:
        disc = qb * qb - 4 * qa * qc
        roots = (
            []
            if disc < -eps
            else [(-qb + sg * np.sqrt(max(disc, 0.0))) / (2 * qa) for sg in (1.0, -1.0)]
        )
    for s in roots:
        A = n_i * t_i - s * (n_i - 1.0) / 2.0
        if -eps <= s <= 1 + eps and n_i <= A + eps and A <= n_j + eps and n_j <= 2 * A - 1 + eps:
            add_point("L1-L2", A, min(max(s, 0.0), 1.0))
            break
    # 4. H1-H1
    if c < 1 - eps:
        s = c / (1.0 - c)
        A = m + c
        if s >= 1 - eps and n_j <= A + s * (A - 1) + eps:
            add_point("H1-H1", A, max(s, 1.0))
    # curve forms need the flat point(s) at t = 1 within delta
    flat_j = abs(t_j - 1.0) <= delta + eps
    flat_i = abs(t_i - 1.0) <= delta + eps
    if flat_j:
        ss = np.linspace(0.0, 1.0, 201)
        # 5. L1-L3
        A_c = n_i * t_i - ss * (n_i - 1.0) / 2.0
        ok_c = (A_c >= n_i - eps) & (2 * A_c - 1 <= n_j + eps)
        if ok_c.any():
            out.append(
                PairSolution(
                    "L1-L3", A_c[ok_c].min(), A_c[ok_c].max(), ss[ok_c].min(), ss[ok_c].max(), False
                )
            )
        # 6. L2-L3
        with np.errstate(divide="ignore", invalid="ignore"):
            A_c = 0.5 + n_i * (t_i - 1.0 + ss / 2.0) / ss
        ok_c = (
            np.isfinite(A_c)
            & (A_c <= n_i + eps)
            & (n_i <= 2 * A_c - 1 + eps)
            & (2 * A_c - 1 <= n_j + eps)
        )
        if ok_c.any():
            out.append(
                PairSolution(
                    "L2-L3", A_c[ok_c].min(), A_c[ok_c].max(), ss[ok_c].min(), ss[ok_c].max(), False
                )
            )
        # 8. H1-H2
        sh = np.linspace(1.0, 10.0, 361)
        A_c = n_i * t_i - sh * (n_i - 1.0) / (1.0 + sh)
        knee = A_c + sh * (A_c - 1.0)
        ok_c = (A_c >= 1.0) & (n_i <= knee + eps) & (knee <= n_j + eps)
        if ok_c.any():
            out.append(
                PairSolution(
                    "H1-H2", A_c[ok_c].min(), A_c[ok_c].max(), sh[ok_c].min(), sh[ok_c].max(), False
                )
            )
    if flat_i and flat_j:
        # 7. L3-L3 and 9. H2-H2
        out.append(PairSolution("L3-L3", 1.0, (n_i + 1.0) / 2.0, 0.0, 1.0, False))
        # A + s (A - 1) <= n_i with s >= 1  =>  A <= (n_i + s)/(1 + s) <= (n_i + 1)/2
        out.append(PairSolution("H2-H2", 1.0, (n_i + 1.0) / 2.0, 1.0, max(1.0, n_i - 1.0), False))
    return out


# ----------------------------------------------------------------------------- envelope


@dataclass(frozen=True)
class EnvelopeBox:
    """One range pair of the envelope: ``A`` in ``[A_lo, A_hi]`` and ``sigma`` in ``[s_lo, s_hi]``.

    ``pair`` = indices of the two observations, ``combo`` the piece assumption.
    """

    pair: tuple[int, int]
    combo: str
    A_lo: float
    A_hi: float
    s_lo: float
    s_hi: float

    def contains(self, other: EnvelopeBox) -> bool:
        return (
            self.A_lo <= other.A_lo
            and other.A_hi <= self.A_hi
            and self.s_lo <= other.s_lo
            and other.s_hi <= self.s_hi
        )


@dataclass(frozen=True)
class Envelope:
    """The envelope of a set of observations.

    ``boxes`` the range pairs kept (none contained in another); ``delta`` the
    widening at which some instance explained every point within ``delta``
    (``explained`` False when even ``delta_max`` did not suffice);
    ``best_error`` that instance's largest relative error.
    """

    boxes: tuple[EnvelopeBox, ...]
    delta: float
    explained: bool
    best_error: float

    def a_intervals(self) -> np.ndarray:
        """Merged ``A`` intervals of the boxes, shape ``(k, 2)``, sorted."""
        return _merged_intervals([(b.A_lo, b.A_hi) for b in self.boxes])


@dataclass(frozen=True)
class EnvelopeIntervals:
    """What a fit's search reads of an :class:`Envelope` (its ``delta``, ``explained``,
    ``best_error`` and :meth:`a_intervals`), without the boxes: the envelope of a
    subset of the points that only serves an internal fit (see :func:`_envelope`)."""

    intervals: np.ndarray
    delta: float
    explained: bool
    best_error: float

    def a_intervals(self) -> np.ndarray:
        """Merged ``A`` intervals of the envelope's boxes, shape ``(k, 2)``, sorted."""
        return self.intervals


def _merged_intervals(iv: list[tuple[float, float]]) -> np.ndarray:
    """The connected parts of a union of closed intervals ``(lo, hi)``, sorted, shape ``(k, 2)``.

    Intervals contained in another change nothing, so the boxes before the
    containment test give the intervals of the boxes after it.
    """
    if not iv:
        return np.empty((0, 2))
    iv = sorted(iv)
    merged = []
    lo, hi = iv[0]
    for a, b in iv[1:]:
        if a <= hi:
            hi = max(hi, b)
        else:
            merged.append((lo, hi))
            lo, hi = a, b
    merged.append((lo, hi))
    return np.array(merged)


def _new_box(
    pair: tuple[int, int], combo: str, A_lo: float, A_hi: float, s_lo: float, s_hi: float
) -> EnvelopeBox:
    """An :class:`EnvelopeBox` without the frozen dataclass' per-field ``__setattr__`` calls.

    Equal to ``EnvelopeBox(pair, combo, A_lo, A_hi, s_lo, s_hi)`` (same fields,
    same ``__dict__``); several times cheaper, which matters at ~20 boxes per
    envelope and thousands of envelopes per simulation.
    """
    box = _new_object(EnvelopeBox)
    _set_attr(
        box,
        "__dict__",
        {"pair": pair, "combo": combo, "A_lo": A_lo, "A_hi": A_hi, "s_lo": s_lo, "s_hi": s_hi},
    )
    return box


_new_object = object.__new__
_set_attr = object.__setattr__


# Per-grid constants of the envelope (the grid depends only on ``a_max`` and
# ``n_grid``, which a simulation repeats), cached at module level, bounded.
_GRID_CACHE_MAX = 256


class _Grid:
    """A sorted grid of ``A`` values and the ``A``-only arrays of the formulas (read-only).

    Used for the envelope's log-spaced grid (cached per ``(a_max, n_grid)``)
    and for the 1-D search's grid (cached per envelope intervals, see
    :mod:`predictors.adept`). ``h12_bound``: ``fl(fl(A + (A - 1)) (1 - 1e-12))``,
    a lower bound (in floating point too: rounding is monotone) of the
    H1-H2 test value ``fl(knee (1 - 1e-12))`` for every ``s >= 1``; the
    H1-H2 test needs it ``<= n_j``, so only the grid prefix where it is
    ``<= n_j`` can be valid. ``sorted``: ``A`` is non-decreasing (then so are
    the derived arrays, rounding being monotone, and prefixes can be found by
    bisection). The derived arrays (``Am1 = A - 1``, ``twoA = 2 A``, ``D = 2A - 1``,
    ``invA = 1/A``, ``h12_bound``, ``log``) are computed when first read: the 1-D search's
    compiled candidates compute them per grid value (the same operations).
    """

    __slots__ = (
        "A",
        "G",
        "_checked",
        "_exp",
        "_exp_arr",
        "_tables",
        "sorted",
    )

    def __init__(self, A: np.ndarray) -> None:
        self.A = A
        self.G = len(A)
        self._tables: dict[str, np.ndarray] = {}
        self.sorted = bool(np.all(A[1:] >= A[:-1]))
        A.flags.writeable = False
        self._exp: dict[int, float] = {}
        self._exp_arr: np.ndarray | None = None
        self._checked = np.zeros(0, dtype=bool)

    def _table(self, name: str) -> np.ndarray:
        """The derived array ``name``, computed on first use, read-only."""
        x = self._tables.get(name)
        if x is None:
            A = self.A
            if name == "Am1":
                x = A - 1.0
            elif name == "twoA":
                x = 2.0 * A
            elif name == "D":
                x = self.twoA - 1.0
            elif name == "invA":
                x = 1.0 / A
            elif name == "log":
                x = np.log(A)
            else:  # "h12_bound"
                x = (A + self.Am1) * (1 - 1e-12)
            x.flags.writeable = False
            self._tables[name] = x
        return x

    @property
    def Am1(self) -> np.ndarray:
        """``A - 1``."""
        return self._table("Am1")

    @property
    def twoA(self) -> np.ndarray:
        """``2 A``."""
        return self._table("twoA")

    @property
    def D(self) -> np.ndarray:
        """``2 A - 1``."""
        return self._table("D")

    @property
    def invA(self) -> np.ndarray:
        """``1 / A``."""
        return self._table("invA")

    @property
    def h12_bound(self) -> np.ndarray:
        """``(A + (A - 1)) (1 - 1e-12)`` (see the class)."""
        return self._table("h12_bound")

    @property
    def log(self) -> np.ndarray:
        """``np.log(A)`` (the 1-D search's grids never need it)."""
        return self._table("log")

    def exp_log_at(self, idx: np.ndarray) -> np.ndarray:
        """``float(np.exp(np.log(A)[i]))`` for every ``i`` in ``idx`` (box bounds are reported this way).

        From the vector ``np.exp(np.log(A))``, each index checked once against
        the scalar call (they agree in NumPy; if one ever did not, the scalar
        values are used from then on).
        """
        if self._exp_arr is None:
            self._exp_arr = np.exp(self.log)
            self._checked = np.zeros(self.G, dtype=bool)
        e = self._exp_arr
        if e.size and not self._checked.take(idx).all():
            for i in idx.tolist():
                if i not in self._exp:
                    self._exp[i] = float(np.exp(self.log[i]))
                    if self._exp[i] != e[i]:
                        self._exp_arr = e = np.empty(0)
                        break
            else:
                self._checked[idx] = True
        if e.size:
            return e.take(idx)
        return np.array([self.exp_log(i) for i in idx.tolist()])

    def exp_log(self, i: int) -> float:
        """``float(np.exp(np.log(A)[i]))`` (box bounds are reported this way), memoised."""
        v = self._exp.get(i)
        if v is None:
            v = self._exp[i] = float(np.exp(self.log[i]))
        return v

    def h12_prefix(self, n_max: float) -> int:
        """Grid prefix outside which no H1-H2 curve with ``n_j <= n_max`` is valid."""
        if not self.sorted:
            return self.G
        return int(self.h12_bound.searchsorted(n_max, side="right"))


_ENV_GRIDS: dict[tuple[float, int], _Grid] = {}
_TRIU: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _env_grid(top: float, n_grid: int) -> _Grid:
    key = (top, n_grid)
    g = _ENV_GRIDS.get(key)
    if g is None:
        if len(_ENV_GRIDS) >= _GRID_CACHE_MAX:
            _ENV_GRIDS.pop(next(iter(_ENV_GRIDS)))
        g = _ENV_GRIDS[key] = _Grid(np.geomspace(1.0, top, n_grid))
    return g


def _triu(m: int) -> tuple[np.ndarray, np.ndarray]:
    p = _TRIU.get(m)
    if p is None:
        p = _TRIU[m] = np.triu_indices(m, 1)
        for x in p:
            x.flags.writeable = False
    return p


class _PointTables:
    """Per observation ``k`` and grid ``A``: the coefficients of both modes (shape ``(m, G)``).

    ``aL, bL``: ``h = aL + s bL`` (low mode, :func:`low_coeffs`); ``hb``: ``beta``
    of piece H1 (:func:`high_coeffs`); ``c1 = A - 1 + n`` and ``nA = n A``: the
    parts of :func:`inv_speedup_high`. Every array is computed with the same
    operations, in the same order, as the formulas it replaces, so the values
    are bit-identical.
    """

    __slots__ = ("aL", "bL", "c1", "hb", "nA")

    def __init__(self, n: np.ndarray, g: _Grid) -> None:
        nn = n[:, None]
        self.aL = 1.0 / np.minimum(nn, g.A)
        self.bL = np.maximum(np.minimum(nn - 1.0, g.D - nn), 0.0) / (g.twoA * nn)
        self.c1 = g.Am1 + nn
        self.nA = nn * g.A
        self.hb = self.c1 / self.nA

    def rows(self, idx: np.ndarray) -> _PointTables:
        """The tables of the points ``idx`` (each row depends on its own point only)."""
        out = _PointTables.__new__(_PointTables)
        out.aL, out.bL, out.c1 = self.aL[idx], self.bL[idx], self.c1[idx]
        out.nA, out.hb = self.nA[idx], self.hb[idx]
        return out


def _nanmin(vals: list[float]) -> float:
    """``min`` that returns NaN when any value is NaN (like ``np.min``); ``inf`` when empty."""
    best = np.inf
    for v in vals:
        if v != v:
            return v
        if v < best:
            best = v
    return best


def _rows_spread(r: np.ndarray) -> np.ndarray:
    """Per column, ``(max r - min r)/(max r + min r)`` (max/min down each column).

    Row by row with ``np.minimum``/``np.maximum`` (exact, so equal to
    ``r.min(axis=0)``, and much faster than a reduction over a short axis).
    """
    lo = r[0].copy()
    hi = r[0].copy()
    for k in range(1, r.shape[0]):
        np.minimum(lo, r[k], out=lo)
        np.maximum(hi, r[k], out=hi)
    num = hi - lo
    hi += lo
    num /= hi
    return num


def _rows_minimax(r: np.ndarray) -> float:
    """``min`` over columns of :func:`_rows_spread`."""
    return float(_rows_spread(r).min())


def _min_error(gi: np.ndarray, s: np.ndarray, t: np.ndarray, pt: _PointTables, g: _Grid) -> float:
    """Smallest :func:`minimax_rel_error` over the instances ``(A[gi], s)`` (``inf`` when none).

    Same values as ``minimax_rel_error(inv_speedup(n, A, s), t)``: rows with
    ``s <= 1`` use the low mode ``aL + s bL``, the others the H formula. By its
    compiled twin when it is built (one pass over the instances, no tables taken).
    """
    if gi.size == 0:
        return np.inf
    if compiled_min_error is not None:
        return compiled_min_error(gi, s, t, pt.aL, pt.bL, pt.c1, pt.nA, g.A, g.invA)
    tc = t[:, None]
    low = s <= 1.0
    out = []
    nlow = int(np.count_nonzero(low))
    if nlow:
        gl, sl = (gi, s) if nlow == gi.size else (gi[low], s[low])
        h = pt.bL.take(gl, axis=1)
        h *= sl
        h += pt.aL.take(gl, axis=1)
        h /= tc
        out.append(_rows_minimax(h))
    if nlow < gi.size:
        hi_ = ~low
        gh, sh = gi[hi_], s[hi_]
        num = pt.c1.take(gh, axis=1)
        num *= sh
        num += g.A.take(gh)
        den = pt.nA.take(gh, axis=1)
        den *= 1.0 + sh
        num /= den
        np.maximum(num, g.invA.take(gh), out=num)
        num /= tc
        out.append(_rows_minimax(num))
    return _nanmin(out)


_COMBOS = ("L", "H1-H1", "H1-H2")


def _pair_rows(
    n: np.ndarray,
    rho: np.ndarray,
    I: np.ndarray,  # noqa: E741 (I, J: the pair index arrays)
    J: np.ndarray,
    g: _Grid,
    pt: _PointTables,
    out: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``s`` and validity of every piece assumption, pair and ratio ``rho`` (shape ``(P, R)``).

    Returns ``S, OK`` of shape ``(3, P, R, G)``, combos in the order of
    ``_COMBOS``; the operations are those of the scale-free closed forms (see
    :func:`pair_sigma`), element by element (``x + y`` for ``y + x`` and the
    like: IEEE addition and multiplication commute exactly), so each ratio's
    values do not depend on the other ratios. H1-H2 is computed only on the
    grid prefix where it can be valid (``S`` is undefined and ``OK`` False
    elsewhere). ``out``: arrays (views) of that shape to fill instead, ``OK``
    all False on entry.
    """
    P, nr = rho.shape
    G = g.G
    if out is None:
        S = np.empty((3, P, nr, G))
        OK = np.zeros((3, P, nr, G), dtype=bool)
    else:
        S, OK = out
    R = rho[:, :, None]
    ni = n[I][:, None, None]
    nj = n[J][:, None, None]
    # low variance, all pieces (fixed by A): s = (rho aj - ai) / (bi - rho bj)
    num = pt.aL.take(J, axis=0)[:, None, :] * R
    num -= pt.aL.take(I, axis=0)[:, None, :]
    den = pt.bL.take(J, axis=0)[:, None, :] * R
    np.subtract(pt.bL.take(I, axis=0)[:, None, :], den, out=den)
    sL = np.divide(num, den, out=S[0])
    np.greater_equal(sL, 0.0, out=OK[0])  # NaN and -inf fail here, +inf below
    OK[0] &= sL <= 1.0
    # high variance H1-H1: s = (rho/nj - 1/ni) / (hb_i - rho hb_j)
    hai = 1.0 / ni
    hbi = pt.hb.take(I, axis=0)[:, None, :]
    hbj = pt.hb.take(J, axis=0)[:, None, :]
    den = hbj * R
    np.subtract(hbi, den, out=den)
    s11 = np.divide(R / nj - hai, den, out=S[1])
    k = s11 * g.Am1
    k += g.A
    k *= 1 + 1e-12
    np.isfinite(s11, out=OK[1])
    OK[1] &= s11 >= 1.0
    OK[1] &= nj <= k
    # H1-H2 (prefix): s = (rho/A - 1/ni) / (hb_i - rho/A)
    Gh = g.h12_prefix(float(n.max()))
    if Gh:
        rA = R * g.invA[:Gh]
        s12 = np.divide(rA - hai, np.subtract(hbi[:, :, :Gh], rA, out=rA), out=S[2, :, :, :Gh])
        k = s12 * g.Am1[:Gh]
        k += g.A[:Gh]
        ok = OK[2, :, :, :Gh]
        np.isfinite(s12, out=ok)
        ok &= s12 >= 1.0
        ok &= ni <= k * (1 + 1e-12)
        k *= 1 - 1e-12
        ok &= nj >= k
    return S, OK


def _pair_curves(
    n: np.ndarray,
    rho: np.ndarray,
    I: np.ndarray,  # noqa: E741 (I, J: the pair index arrays)
    J: np.ndarray,
    g: _Grid,
    pt: _PointTables,
    out: tuple[np.ndarray, np.ndarray],
) -> None:
    """:func:`_pair_rows` into ``out``, by its compiled twin when it is built."""
    if compiled_pair_rows is None:
        _pair_rows(n, rho, I, J, g, pt, out=out)
        return
    S, OK = out
    compiled_pair_rows(
        n,
        rho,
        I,
        J,
        g.A,
        g.Am1,
        g.invA,
        g.h12_prefix(float(n.max())),
        pt.aL,
        pt.bL,
        pt.hb,
        S,
        OK.view(np.uint8),
    )


def _curve_index_bounds(OK: np.ndarray, G: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid indices of :func:`_curve_a_bounds` (the NumPy steps of the compiled
    ``curve_bounds``): combo and pair of the curves valid somewhere, and their first and
    last valid indices widened by one (clipped to the grid), the firsts then the lasts."""
    any_a = OK[:, :, 0].copy()
    for r in range(1, OK.shape[2]):
        any_a |= OK[:, :, r]
    has = any_a.any(axis=2)  # (3, P)
    cs, ps = np.nonzero(has)
    sub = any_a[cs, ps]
    g_lo = sub.argmax(axis=1)
    g_lo -= 1
    np.maximum(g_lo, 0, out=g_lo)
    g_hi = (G - 1) - sub[:, ::-1].argmax(axis=1)
    g_hi += 1
    np.minimum(g_hi, G - 1, out=g_hi)
    return cs, ps, np.concatenate([g_lo, g_hi])


def _widened_curve_bounds_plain(
    curves: PairCurves, rho: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_curve_index_bounds` of the curves ``curves.OK`` and of :func:`_pair_rows` at
    the ratios ``rho`` (shape ``(P, R)``) of the same pairs, over all their ratios."""
    with np.errstate(divide="ignore", invalid="ignore"):
        _, OK = _pair_rows(curves.n, rho, curves.I, curves.J, curves.g, curves.pt)
    return _curve_index_bounds(np.concatenate([curves.OK, OK], axis=2), curves.g.G)


def _widened_curve_a_bounds(curves: PairCurves, rho: np.ndarray) -> np.ndarray:
    """The ``A`` bounds ``(2, count)`` of :func:`_curve_a_bounds` of the curves ``curves.OK``
    together with those at the ratios ``rho`` (the widened ones, shape ``(P, R)``), by
    the compiled twin of :func:`_widened_curve_bounds_plain` when it is built (which
    computes the latter only where they decide a bound, from both ends of the grid)."""
    g, pt = curves.g, curves.pt
    if compiled_widened_curve_bounds is None:
        cs, _, bounds = _widened_curve_bounds_plain(curves, rho)
    else:
        cs, _, bounds = compiled_widened_curve_bounds(
            curves.OK.view(np.uint8),
            curves.n,
            rho,
            curves.I,
            curves.J,
            g.A,
            g.Am1,
            g.invA,
            g.h12_prefix(float(curves.n.max())),
            pt.aL,
            pt.bL,
            pt.hb,
        )
    return g.exp_log_at(bounds).reshape(2, cs.size)


def _curve_a_bounds(OK: np.ndarray, g: _Grid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Combo and pair indices of the curves valid somewhere (``OK`` over all three ratios),
    and their boxes' ``A`` bounds ``(2, count)``: the grid values (as ``exp(log A)``) one
    index beyond the first and last valid ones (clipped to the grid). The indices by a
    compiled kernel when it is built (one pass, stopping at the first and last valid)."""
    if compiled_curve_bounds is not None:
        cs, ps, bounds = compiled_curve_bounds(OK.view(np.uint8))
    else:
        cs, ps, bounds = _curve_index_bounds(OK, g.G)
    return cs, ps, g.exp_log_at(bounds).reshape(2, cs.size)


def _box_intervals(
    n: np.ndarray,
    a_bounds: np.ndarray,
    flat: np.ndarray,
    I: np.ndarray,  # noqa: E741 (I: the pairs' first points)
) -> np.ndarray:
    """:meth:`Envelope.a_intervals` of the envelope :func:`_boxes` would build, without
    the boxes: the ``A`` bounds of every box before the containment test (``a_bounds``,
    see :func:`_curve_a_bounds`, and :func:`_merged_intervals`), the flat-flat boxes'
    ``[1, (n_i + 1)/2]`` included."""
    iv = list(zip(*a_bounds.tolist(), strict=True)) if a_bounds.size else []
    if flat.size:
        top = n[I[flat]] + 1.0
        top /= 2.0
        iv += [(1.0, x) for x in top.tolist()]
    return _merged_intervals(iv)


def _boxes(
    n: np.ndarray,
    S: np.ndarray,
    OK: np.ndarray,
    flat: np.ndarray,
    I: np.ndarray,  # noqa: E741 (I, J: the pair index arrays)
    J: np.ndarray,
    g: _Grid,
) -> list[EnvelopeBox]:
    """The boxes of every pair and piece assumption (``S, OK`` over all three ratios), none contained.

    A box spans the grid indices where the curve is valid at some ratio
    (widened by one index each side) and the valid ``s``; then the flat-flat
    boxes of the pairs ``flat``. Boxes contained in another are dropped (the
    first of identical ones kept).
    """
    cs, ps, a_bounds = _curve_a_bounds(OK, g)
    fl = flat.tolist()
    nb = cs.size
    v = np.empty((4, nb + 2 * len(fl)))
    v[0:2, :nb] = a_bounds
    if nb:
        ok = OK[cs, ps].reshape(nb, -1)
        s = S[cs, ps].reshape(nb, -1)
        np.where(ok, s, np.inf).min(axis=1, out=v[2, :nb])
        np.where(ok, s, -np.inf).max(axis=1, out=v[3, :nb])
    if fl:  # the flat-flat boxes of each pair: L3-L3 then H2-H2
        ni = n[I[flat]]
        top = ni + 1.0
        top /= 2.0
        v[0, nb:] = 1.0
        v[1, nb::2] = top
        v[1, nb + 1 :: 2] = top
        v[2, nb::2] = 0.0
        v[2, nb + 1 :: 2] = 1.0
        v[3, nb::2] = 1.0
        v[3, nb + 1 :: 2] = np.maximum(ni - 1.0, 1.0)
    keep = _not_contained(v)
    Il, Jl = I.tolist(), J.tolist()
    cl, pl = cs.tolist(), ps.tolist()
    vl = v.T.tolist()
    out = []
    for b in keep:
        if b < nb:
            p = pl[b]
            out.append(_new_box((Il[p], Jl[p]), _COMBOS[cl[b]], *vl[b]))
        else:
            p = fl[(b - nb) // 2]
            out.append(_new_box((Il[p], Jl[p]), ("L3-L3", "H2-H2")[(b - nb) % 2], *vl[b]))
    return out


_UPPER: dict[int, np.ndarray] = {}


def _upper(B: int) -> np.ndarray:
    """``U[j, i] = j < i`` (cached per size)."""
    u = _UPPER.get(B)
    if u is None:
        u = np.triu(np.ones((B, B), dtype=bool), 1)
        if B <= 512:
            u.flags.writeable = False
            _UPPER[B] = u
    return u


def _not_contained(v: np.ndarray) -> list[int]:
    """Indices of the boxes ``v = (A_lo, A_hi, s_lo, s_hi)`` (columns) not contained in another.

    ``b`` is dropped when some other ``o`` contains it and either ``b`` does not
    contain ``o`` or ``o`` comes first -- the rule of ``EnvelopeBox.contains``
    (of identical boxes, the first is kept).
    """
    B = v.shape[1]
    if B < 2:
        return list(range(B))
    a_lo, a_hi, s_lo, s_hi = v
    # C[j, i]: box j contains box i
    C = a_lo[:, None] <= a_lo
    C &= a_hi <= a_hi[:, None]
    C &= s_lo[:, None] <= s_lo
    C &= s_hi <= s_hi[:, None]
    inside = ~C.T
    inside |= _upper(B)  # j < i
    inside &= C
    # the diagonal is False already: (~C[i, i] | False) & C[i, i] (no box drops itself)
    return np.flatnonzero(~inside.any(axis=0)).tolist()


def _flat_error(mask: np.ndarray, t: np.ndarray, pt: _PointTables, g: _Grid) -> float:
    """Smallest error of the instances ``(A, 0)`` and ``(A, 1)``, ``A`` in ``g.A[mask]`` (a flat-flat pair)."""
    fg = np.flatnonzero(mask)
    return _nanmin(
        [
            _min_error(fg, np.zeros(fg.size), t, pt, g),
            _min_error(fg, np.ones(fg.size), t, pt, g),
        ]
    )


def _flat_prefix_errors(t: np.ndarray, pt: _PointTables) -> tuple[np.ndarray, np.ndarray]:
    """Running minima along the grid of the errors of ``(A, 0)`` and ``(A, 1)``, with NaN kept.

    Element ``k - 1`` of each is what :func:`_min_error` returns for the grid
    prefix ``[0, k)`` at ``sigma`` 0 resp. 1 (the same per-column operations;
    ``np.minimum.accumulate`` propagates NaN like ``np.min``). By its compiled twin
    when it is built.
    """
    if compiled_flat_prefix_errors is not None:
        return compiled_flat_prefix_errors(t, pt.aL, pt.bL)
    tc = t[:, None]
    out = []
    for sig in (0.0, 1.0):
        h = pt.bL * sig
        h += pt.aL
        h /= tc
        out.append(np.minimum.accumulate(_rows_spread(h)))
    return out[0], out[1]


def envelope(
    n: np.ndarray,
    t: np.ndarray,
    *,
    delta: float = 0.05,
    delta_max: float = 0.5,
    a_max: float | None = None,
    n_grid: int = 256,
) -> Envelope:
    """The ADEPT envelope of observations ``(n, t)`` (distinct ``n``, sorted), with the delta loop.

    ``a_max`` caps ``A`` (default ``16 * max(n)``); ``n_grid`` log-spaced ``A``
    values resolve the curves. The loop starts at ``delta`` and doubles it
    until some exact-ratio instance explains every point within ``delta`` or
    ``delta_max`` is reached (then ``explained`` is False).

    Implementation: the exact-ratio instances (the curves at the observed
    ratios) do not depend on ``delta``, except those of the flat-flat pairs,
    which join when the widened ratio interval reaches 1. So their errors are
    computed once, the loop only decides which flat-flat pairs count, and the
    widened ratios' curves (needed by the boxes only) are computed once, for
    the final ``delta`` (together with the exact ratios' when that is the
    starting ``delta``, as in most calls; a ratio's curves do not depend on
    the other ratios). A flat-flat pair's error is the smallest error of
    ``sigma`` 0 or 1 over a prefix of the (sorted) grid, and an instance's
    error does not depend on the other instances: so the errors of the
    whole grid are computed once and the pairs take prefix minima.
    """
    n = np.asarray(n, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    if a_max is None:
        a_max = 16.0 * float(n.max())
    env = _envelope(PairCurves(n, t, float(delta), envelope_grid(a_max, n_grid)), delta_max)
    assert isinstance(env, Envelope)
    return env


def envelope_grid(a_max: float, n_grid: int = 256) -> _Grid:
    """The envelope's log-spaced ``A`` grid for ``a_max`` (cached)."""
    return _env_grid(max(a_max, 1.0 + 1e-9), n_grid)


class PairCurves:
    """The curves of every pair of the points ``(n, t)`` (distinct ``n``, sorted) on a grid:
    ``S, OK`` of :func:`_pair_rows` at the exact ratios and at the ratios widened by
    ``delta`` (shape ``(3, P, 3, G)``; ``S`` is meaningful where ``OK``), the point
    tables and the exact ratios. Never written: :func:`_envelope` computes the curves
    of a grown ``delta`` in new arrays.

    With ``widened=False`` (what a fit's search reads, :func:`_envelope` with
    ``boxes=False``): ``S, OK`` at the exact ratios only (shape ``(3, P, 1, G)``); of
    the widened ratios the envelope needs only where each curve is valid first and
    last, at the ``delta`` it ends with (the boxes' ``A`` bounds), which it finds
    without their arrays (:func:`_widened_curve_a_bounds`).

    :meth:`subset` gives those of a subset of the points by taking its pairs' rows: a
    pair's values depend on its two points only (H1-H2 is valid nowhere beyond the
    subset's own grid prefix either, see :meth:`_Grid.h12_prefix`), so they are the
    values computed for the subset, where ``OK``.
    """

    __slots__ = (
        "I",
        "J",
        "OK",
        "S",
        "delta",
        "exact",
        "g",
        "n",
        "pt",
        "rho0",
        "t",
        "widened",
    )

    def __init__(
        self, n: np.ndarray, t: np.ndarray, delta: float, g: _Grid, widened: bool = True
    ) -> None:
        self.n, self.t, self.delta, self.g = n, t, delta, g
        self.widened = widened
        self.exact = 1 if widened else 0  # the exact ratios' index along axis 2
        self.I, self.J = _triu(len(n))
        self.pt = _PointTables(n, g)
        self.rho0 = t[self.I] / t[self.J]
        P, G = self.rho0.size, g.G
        rho = _ratios(self.rho0, delta) if widened else self.rho0[:, None]
        self.S = np.empty((3, P, rho.shape[1], G))
        self.OK = np.zeros((3, P, rho.shape[1], G), dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            _pair_curves(n, rho, self.I, self.J, g, self.pt, out=(self.S, self.OK))

    def subset(self, idx: Sequence[int]) -> PairCurves:
        """The curves of the points ``idx`` (ascending indices)."""
        m = len(self.n)
        pair = np.empty((m, m), dtype=np.int64)
        pair[self.I, self.J] = np.arange(self.I.size)
        sub = np.asarray(idx, dtype=np.int64)
        I, J = _triu(len(sub))  # noqa: E741 (I, J: the pair index arrays)
        sel = pair[sub[I], sub[J]]
        out = PairCurves.__new__(PairCurves)
        out.n, out.t, out.delta, out.g = self.n[sub], self.t[sub], self.delta, self.g
        out.widened, out.exact = self.widened, self.exact
        out.I, out.J = I, J
        out.pt = self.pt.rows(sub)
        out.rho0 = self.rho0[sel]
        out.S = self.S.take(sel, axis=1)
        out.OK = self.OK.take(sel, axis=1)
        return out


def _ratios(rho0: np.ndarray, d: float) -> np.ndarray:
    """The exact ratios between the ratios widened by ``d``, shape ``(P, 3)``."""
    w = (1.0 - d) / (1.0 + d)
    return rho0[:, None] * np.array([w, 1.0, 1.0 / w])


def _envelope(
    curves: PairCurves, delta_max: float, boxes: bool = True
) -> Envelope | EnvelopeIntervals:
    """:func:`envelope` of the points of ``curves`` (its ``delta`` the starting one); with
    ``boxes=False`` only what a fit's search reads (:class:`EnvelopeIntervals`)."""
    n, t, g, pt = curves.n, curves.t, curves.g, curves.pt
    I, J = curves.I, curves.J  # noqa: E741 (I, J: the pair index arrays)
    S, OK = curves.S, curves.OK
    rho0 = curves.rho0
    d0 = d = curves.delta
    G = g.G
    if boxes and not curves.widened:
        raise ValueError("_envelope: the boxes need the curves at the widened ratios")
    with np.errstate(divide="ignore", invalid="ignore"):
        # exact-ratio instances of the curves: delta-independent
        okc = OK[:, :, curves.exact, :]
        at = np.flatnonzero(okc)
        best_curves = _min_error(at % G, S[:, :, curves.exact, :][okc], t, pt, g)
        flat_err: dict[int, float] = {}
        flat_min: tuple[np.ndarray, np.ndarray] | None = None
        while True:
            rho = _ratios(rho0, d)
            flat = np.flatnonzero((rho[:, 0] <= 1.0) & (rho[:, 2] >= 1.0))
            vals = [best_curves]
            for p in flat.tolist():
                i = int(I[p])
                if i not in flat_err:
                    if not g.sorted:
                        flat_err[i] = _flat_error(g.A <= (n[i] + 1.0) / 2.0, t, pt, g)
                    else:
                        if flat_min is None:
                            flat_min = _flat_prefix_errors(t, pt)
                        k = int(g.A.searchsorted((n[i] + 1.0) / 2.0, side="right"))
                        flat_err[i] = (
                            _nanmin([float(flat_min[0][k - 1]), float(flat_min[1][k - 1])])
                            if k
                            else np.inf
                        )
                vals.append(flat_err[i])
            best = _nanmin(vals)
            if best <= d or d >= delta_max:
                break
            d = min(2.0 * d, delta_max)
        if not curves.widened:  # the curves' bounds with the widened ratios' at the final delta
            a_bounds = _widened_curve_a_bounds(curves, rho[:, 0::2])
            intervals = _box_intervals(n, a_bounds, flat, I)
        elif d != d0:  # the widened ratios' curves at the final delta, in new arrays
            OK = OK.copy()
            OK[:, :, 0::2] = False
            if boxes:
                S = S.copy()
                widened_S = S[:, :, 0::2]
            else:  # only the boxes read the widened curves' sigmas: a scratch array
                widened_S = np.empty((3, rho0.size, 2, G))
            _pair_curves(n, rho[:, 0::2], I, J, g, pt, out=(widened_S, OK[:, :, 0::2]))
        if boxes:
            found = _boxes(n, S, OK, flat, I, J, g)
        elif curves.widened:
            intervals = _box_intervals(n, _curve_a_bounds(OK, g)[2], flat, I)
    explained = best <= d
    if not explained:
        log.debug(
            "ADEPT envelope: no instance explains all points within delta_max=%g (best %.3g)",
            d,
            best,
        )
    if not boxes:
        return EnvelopeIntervals(intervals, d, explained, best)
    return Envelope(tuple(found), d, explained, best)
