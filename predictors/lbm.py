"""LBM, the linear benchmarking model (docs/background/models.md, section 2.1).

A target application is written as a linear combination of benchmarks, its
*surrogate* ``x``: ``A x = b`` where the columns of ``A`` are the benchmarks,
the rows are additive resources (time, energy; never power) on the
configurations where the target was observed, and ``b`` holds the target's
measurements of the same resources. The prediction of a resource on a new
configuration is ``c . x``, ``c`` the benchmarks' measurements there.

:func:`lbm_surrogate` solves the system (least squares, non-negative least
squares, or least absolute deviations as a linear program with HiGHS) and
reports the diagnostics: residual, rank, condition number, and whether ``b``
is outside the benchmarks' span (a pattern no benchmark has: the signal to add
a benchmark).

:class:`LbmPredictor` builds ``A``, ``b``, ``c`` from
:attr:`Observations.benchmarks` (measured once on a grid of configurations;
other node counts and frequencies are interpolated, log-log in ``n`` and
linearly in ``f``) and the application's runs. **Per-job work scaling:** the
application's runs come from different jobs (different inputs), so each run's
time and energy are divided by its work (``instructions``) and multiplied by
the application's median work before entering ``b``; the surrogate thus
describes the application at its median input, and predictions for a job are
scaled from its requested time as described in :mod:`predictors.baselines`.
Power is predicted as ``energy / (time * nodes)``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from energysched.errors import ConfigError
from predictors.base import Observations
from predictors.baselines import AppRuns, PerApplicationPredictor

log = logging.getLogger(__name__)

SOLVERS = ("lstsq", "nnls", "l1")
#: Relative residual ``||A x - b|| / ||b||`` above which ``b`` is reported outside the span.
DEFAULT_SPAN_TOL = 0.05
#: Condition number of the (normalised) ``A`` above which a surrogate is flagged
#: ill-conditioned (warning, ``reliable`` False). A relative perturbation ``e`` of
#: ``b`` can move ``x`` by up to ``cond * e`` relatively: with measurements good to
#: about 1 %, ``cond = 1e3`` already allows a 10x error in ``x``. Two benchmark
#: columns equal up to a relative ``d`` give ``cond ~ 1/d``.
DEFAULT_COND_LIMIT = 1e3
#: Relative disagreement of the three solvers' surrogates (see
#: :attr:`LbmResult.solver_disagreement`) above which a surrogate is flagged
#: (warning, ``reliable`` False).
DEFAULT_SOLVER_TOL = 0.1


@dataclass
class LbmResult:
    """A surrogate and its diagnostics.

    Attributes:
        x: surrogate, one weight per benchmark (column of ``A``).
        residual: ``||A x - b||_2`` of the solved system (normalised rows if
            ``normalization != "none"``).
        relative_residual: ``residual / ||b||_2``.
        residual_l1: ``sum |A x - b|`` of the solved system.
        rank: numerical rank of the (normalised) ``A``.
        condition_number: 2-norm condition number of the (normalised) ``A``
            (``inf`` when rank-deficient; high = benchmarks too correlated).
        out_of_span: ``relative_residual > span_tol``.
        normalization: ``"none"`` or ``"row-max"`` (each row and its ``b``
            divided by the row's largest absolute entry).
        solver: ``"lstsq"``, ``"nnls"`` or ``"l1"``; ``nonneg`` whether ``x >= 0`` was imposed.
        rows, columns: shape of ``A``.
        ill_conditioned: the condition number (with ``ridge`` or ``rcond``:
            of the regularised problem) is above ``cond_limit`` (the
            surrogate's weights are not determined by the data to useful
            precision).
        solver_disagreement: ``max ||V (x_s - x)|| / ||V x||`` over the other
            solvers' surrogates ``x_s`` (same sign constraint and
            regularisation), ``V`` the right singular vectors of ``A`` with a
            singular value above ``s_1 / cond_limit`` (NaN when not checked:
            ``check_solvers`` off, or ``decisive_check_only`` on a surrogate already
            not reliable).
        solvers_disagree: ``solver_disagreement > solver_tol``.
        rcond: the ``rcond`` given to ``lstsq`` (``None``: numpy's default).
        ridge: the Tikhonov weight used (0: none).
    """

    x: np.ndarray
    residual: float
    relative_residual: float
    residual_l1: float
    rank: int
    condition_number: float
    out_of_span: bool
    normalization: str
    solver: str
    nonneg: bool
    rows: int
    columns: int
    ill_conditioned: bool = False
    solver_disagreement: float = math.nan
    solvers_disagree: bool = False
    rcond: float | None = None
    ridge: float = 0.0

    @property
    def determined(self) -> bool:
        """Whether the surrogate is unique (``rows >= columns`` and full column rank)."""
        return self.rows >= self.columns and self.rank == self.columns

    @property
    def reliable(self) -> bool:
        """Determined, inside the span, well conditioned and the solvers agree."""
        return (
            self.determined
            and not self.out_of_span
            and not self.ill_conditioned
            and not self.solvers_disagree
        )

    @property
    def flagged(self) -> bool:
        """Ill-conditioned or the solvers disagree: what a warning reports
        (:func:`flag_reasons`)."""
        return self.ill_conditioned or self.solvers_disagree

    def predict(self, c: np.ndarray) -> np.ndarray:
        """``c . x`` for a vector (one configuration) or a matrix (one row per configuration)."""
        return np.asarray(c, dtype=float) @ self.x


def _check_system(A: np.ndarray, b: np.ndarray) -> None:
    """Reject what no solver may see: empty shapes, mismatched sizes, non-finite values.

    (``scipy.optimize.nnls`` on a ``3 x 0`` or ``0 x 3`` matrix aborts the
    interpreter with a double free or returns uninitialised memory: the check
    runs before any solver.)
    """
    if A.ndim != 2:
        raise ValueError(f"lbm_surrogate: A must be a 2-D matrix, got {A.ndim} dimensions")
    rows, cols = A.shape
    if rows == 0 or cols == 0:
        raise ValueError(
            f"lbm_surrogate: A is {rows} x {cols}: it needs at least one resource row and "
            "one benchmark column (an application without usable runs, or a benchmark "
            "suite without measurements at its configurations)"
        )
    if b.shape[0] != rows:
        raise ValueError(f"lbm_surrogate: A has {rows} rows but b has {b.shape[0]} entries")
    bad_a = np.argwhere(~np.isfinite(A))
    if len(bad_a):
        r, c = (int(v) for v in bad_a[0])
        raise ValueError(
            f"lbm_surrogate: A has {len(bad_a)} non-finite entries (first: row {r}, column "
            f"{c}: {A[r, c]}); drop the rows of configurations without a benchmark measurement"
        )
    bad_b = np.flatnonzero(~np.isfinite(b))
    if len(bad_b):
        i = int(bad_b[0])
        raise ValueError(
            f"lbm_surrogate: b has {len(bad_b)} non-finite entries (first: entry {i}: "
            f"{b[i]}); drop the runs without a measurement"
        )


def l1_constraints(An: np.ndarray) -> Any:
    """The L1 program's constraint matrix ``[[A, -I], [-A, -I]]`` as a sparse (CSC)
    matrix: the same entries as the dense block, which the solver would convert to
    this same CSC matrix, without the ``2 rows x (cols + rows)`` dense array (an
    application with 2,000 runs made one of 4,000 x 4,008 doubles, 130 MB, at each
    refit)."""
    from scipy import sparse

    ident = sparse.identity(An.shape[0], format="csc")
    return sparse.bmat(
        [[sparse.csc_matrix(An), -ident], [sparse.csc_matrix(-An), -ident]], format="csc"
    )


def _solve(
    An: np.ndarray,
    bn: np.ndarray,
    solver: str,
    nonneg: bool,
    rcond: float | None,
    ridge: float,
) -> np.ndarray:
    rows, cols = An.shape
    if ridge > 0:  # Tikhonov: append sqrt(ridge) I rows (and zeros to b)
        An = np.vstack([An, math.sqrt(ridge) * np.eye(cols)])
        bn = np.concatenate([bn, np.zeros(cols)])
        rows = An.shape[0]
    if solver == "nnls":
        from scipy.optimize import nnls  # imported where used: ~0.45 s that most runs never need

        x, _ = nnls(An, bn)
        return np.asarray(x, dtype=float)
    if solver == "lstsq":
        x, *_ = np.linalg.lstsq(An, bn, rcond=rcond)
        return np.asarray(x, dtype=float)
    # variables [x (cols), t (rows)]: min sum t  s.t.  A x - t <= b,  -A x - t <= -b
    b_ub = np.concatenate([bn, -bn])
    cost = np.concatenate([np.zeros(cols), np.ones(rows)])
    bounds = [(0, None) if nonneg else (None, None)] * cols + [(0, None)] * rows
    from scipy.optimize import linprog

    res = linprog(cost, A_ub=l1_constraints(An), b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise ValueError(f"L1 linear program failed: {res.message}")
    return np.asarray(res.x[:cols], dtype=float)


def lbm_surrogate(
    A: np.ndarray,
    b: np.ndarray,
    solver: str = "lstsq",
    normalize: bool = False,
    nonneg: bool = False,
    span_tol: float = DEFAULT_SPAN_TOL,
    *,
    cond_limit: float = DEFAULT_COND_LIMIT,
    check_solvers: bool = True,
    solver_tol: float = DEFAULT_SOLVER_TOL,
    rcond: float | None = None,
    ridge: float = 0.0,
    decisive_check_only: bool = False,
    warn: bool = True,
) -> LbmResult:
    """Solve ``A x = b`` for the surrogate ``x``.

    Args:
        A: ``(resources, benchmarks)`` benchmark measurements.
        b: ``(resources,)`` the target's measurements, same order.
        solver: ``"lstsq"`` (minimum-norm least squares; with ``nonneg=True``
            the same as ``"nnls"``), ``"nnls"`` (least squares with
            ``x >= 0``), ``"l1"`` (minimise ``sum |A x - b|`` as a linear
            program, HiGHS; ``x >= 0`` when ``nonneg``).
        normalize: divide each row and its ``b`` entry by the row's largest
            absolute entry (rows in J and in s then weigh alike).
        nonneg: impose ``x >= 0`` (always on for ``"nnls"``).
        span_tol: relative residual above which ``out_of_span`` is set.
        cond_limit: condition number above which the result is flagged
            ``ill_conditioned`` (:data:`DEFAULT_COND_LIMIT`).
        check_solvers: also solve with the two other solvers and flag
            ``solvers_disagree`` when their surrogates differ by more than
            ``solver_tol`` (relative, max norm).
        rcond: ``lstsq``'s cut-off for small singular values (relative to the
            largest; ``None``: numpy's default, machine precision x size).
            ``rcond=1e-3`` with ``cond_limit=1e3`` drops the directions the
            flag warns about.
        ridge: Tikhonov weight ``lambda`` (>= 0): minimise ``||A x - b||^2 +
            lambda ||x||^2`` (on the normalised system) with every solver;
            shrinks the weights of near-duplicate benchmarks.
        decisive_check_only: with ``check_solvers``, solve with the other solvers
            only when the surrogate is otherwise reliable (determined, inside the
            span, well conditioned), the one case where their disagreement
            changes :attr:`LbmResult.reliable`; a surrogate already not reliable
            keeps ``solver_disagreement`` NaN. The same ``reliable`` either way,
            without two extra solves (one a linear program) per surrogate that
            cannot use them (:class:`LbmPredictor` refits many such).
        warn: log a warning when the surrogate is flagged (ill-conditioned,
            solvers disagreeing); ``False`` leaves the report to the caller
            (the result carries the flags; :func:`flag_reasons` words them).

    Raises:
        ValueError: an empty ``A`` (``m x 0`` or ``0 x n``), sizes that do not
            match, or non-finite entries: before any solver runs.
        ConfigError: an unknown solver, a negative ``ridge`` or ``rcond``.
    """
    if solver not in SOLVERS:
        raise ConfigError("lbm.solver", f"unknown solver {solver!r}; known: {', '.join(SOLVERS)}")
    if not ridge >= 0:
        raise ConfigError("lbm.ridge", f"must be >= 0, got {ridge!r}")
    if rcond is not None and not rcond >= 0:
        raise ConfigError("lbm.rcond", f"must be >= 0 or None, got {rcond!r}")
    A = np.asarray(A, dtype=float)
    if A.ndim < 2:
        A = np.atleast_2d(A)
    b = np.asarray(b, dtype=float).ravel()
    _check_system(A, b)
    rows, cols = A.shape
    if normalize:
        scale = np.max(np.abs(A), axis=1)
        scale = np.where(scale > 0, scale, 1.0)
        An, bn = A / scale[:, None], b / scale
    else:
        An, bn = A, b
    if solver == "nnls" or (solver == "lstsq" and nonneg):
        used, nonneg = "nnls", True
    else:
        used = solver
    x = _solve(An, bn, used, nonneg, rcond, ridge)
    r = An @ x - bn
    residual = float(np.linalg.norm(r))
    bnorm = float(np.linalg.norm(bn))
    rel = residual / bnorm if bnorm > 0 else (0.0 if residual == 0 else math.inf)
    sv = np.linalg.svd(An, compute_uv=False)
    tol = sv.max() * max(An.shape) * np.finfo(float).eps if len(sv) else 0.0
    rank = int(np.sum(sv > tol))
    cond = float(sv[0] / sv[-1]) if len(sv) and rank == min(An.shape) and sv[-1] > 0 else math.inf
    if rows < cols:
        cond = math.inf
    # rank-deficient systems are reported by ``determined``; the flag is for
    # full-rank systems whose weights the data pin down only loosely
    # the regularisation asked for bounds the amplification: the flag reads the
    # effective condition number (ridge: sqrt((s1^2 + l) / (sn^2 + l)); rcond: the
    # singular values lstsq keeps)
    effective = cond
    if math.isfinite(cond) and len(sv):
        if ridge > 0:
            effective = math.sqrt((sv[0] ** 2 + ridge) / (sv[-1] ** 2 + ridge))
        elif used == "lstsq" and rcond is not None and rcond > 0:
            kept = sv[sv > rcond * sv[0]]
            effective = float(sv[0] / kept[-1])
    ill = bool(rank == cols and rows >= cols and effective > cond_limit)
    result = LbmResult(
        x=x,
        residual=residual,
        relative_residual=float(rel),
        residual_l1=float(np.sum(np.abs(r))),
        rank=rank,
        condition_number=cond,
        out_of_span=bool(rel > span_tol),
        normalization="row-max" if normalize else "none",
        solver=used,
        nonneg=bool(nonneg),
        rows=rows,
        columns=cols,
        ill_conditioned=ill,
        rcond=rcond,
        ridge=float(ridge),
    )
    # (before the solvers are compared, ``reliable`` reads every other test)
    if check_solvers and (result.reliable or not decisive_check_only):
        disagreement = _solver_disagreement(An, bn, x, used, nonneg, rcond, ridge, cond_limit)
        result = replace(
            result,
            solver_disagreement=disagreement,
            solvers_disagree=bool(disagreement > solver_tol),
        )
    if warn and result.flagged:
        log.warning(
            "lbm_surrogate: %s; the surrogate is marked not reliable (%s)",
            flag_reasons(result, cond_limit, solver_tol),
            _FLAG_ADVICE,
        )
    return result


#: What a flagged surrogate's warning suggests.
_FLAG_ADVICE = "consider removing near-duplicate benchmarks, or ridge= / rcond="


def flag_reasons(result: LbmResult, cond_limit: float, solver_tol: float) -> str:
    """Why ``result`` is flagged, in words: its system's size, then ``ill-conditioned
    (cond C > limit)`` and/or ``solvers disagree by D (relative, > tol)``."""
    reasons = []
    if result.ill_conditioned:
        reasons.append(f"ill-conditioned (cond {result.condition_number:.3g} > {cond_limit:g})")
    if result.solvers_disagree:
        reasons.append(
            f"solvers disagree by {result.solver_disagreement:.3g} (relative, > {solver_tol:g})"
        )
    return f"{result.rows} x {result.columns} system {' and '.join(reasons)}"


def _solver_disagreement(
    An: np.ndarray,
    bn: np.ndarray,
    x: np.ndarray,
    used: str,
    nonneg: bool,
    rcond: float | None,
    ridge: float,
    cond_limit: float,
) -> float:
    """:attr:`LbmResult.solver_disagreement` of the surrogate ``x`` that solver ``used``
    found for ``An x = bn``: the other solvers' surrogates compared with it."""
    # the other solvers under the same sign constraint; nnls (always x >= 0) is
    # compared with an unconstrained solution only when that one is >= 0
    # (else they differ by construction, which out_of_span already reports)
    others = [o for o in SOLVERS if o != used]
    if nonneg:  # lstsq under x >= 0 is nnls
        others = [o for o in others if o != "lstsq"]
    if not nonneg and bool(np.any(x < -1e-12 * max(float(np.max(np.abs(x))), 1e-300))):
        others = [o for o in others if o != "nnls"]
    # compared in the directions the data determine (right singular vectors
    # with singular value > s1 / cond_limit): near-duplicate benchmarks may
    # share their weight in any proportion (the condition flag reports that)
    _, sv_full, vt = np.linalg.svd(An, full_matrices=False)
    basis = vt[sv_full > sv_full[0] / cond_limit] if len(sv_full) and sv_full[0] > 0 else vt
    scale = float(np.linalg.norm(basis @ x))
    worst = 0.0
    for other in others:
        try:
            xs = _solve(An, bn, other, nonneg, rcond, ridge)
        except ValueError:
            worst = math.inf
            continue
        worst = max(worst, float(np.linalg.norm(basis @ (xs - x))))
    return worst / scale if scale > 0 else (0.0 if worst == 0 else math.inf)


# --------------------------------------------------------------------------- benchmark grid


class BenchmarkGrid:
    """Benchmark time (s) and energy (J) on any configuration, interpolated from the measured grid.

    Per node type: rows at full cores (the largest core count measured); log
    time and log energy are interpolated linearly in ``log n`` (extrapolated
    from the two outermost measured sizes) and linearly in ``f`` (clamped to
    the measured frequencies). Missing grid cells are filled along ``n``
    then ``f`` before interpolation.
    """

    def __init__(self, benchmarks: pd.DataFrame) -> None:
        self.names: list[str] = sorted(benchmarks["benchmark"].astype(str).unique().tolist())
        self.types: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        for tname, tb in benchmarks.groupby("node_type", sort=False):
            if "cores" in tb and tb["cores"].notna().any():
                tb = tb[tb["cores"] == tb["cores"].max()]
            ns = np.sort(tb["nodes"].unique().astype(float))
            fs = np.sort(tb["freq_ghz"].unique().astype(float))
            cube = []
            for col in ("time_s", "energy_j"):
                piv = tb.pivot_table(
                    index=["nodes", "freq_ghz"], columns="benchmark", values=col, aggfunc="mean"
                )
                full = pd.MultiIndex.from_product([ns, fs], names=["nodes", "freq_ghz"])
                piv = piv.reindex(index=full, columns=self.names)
                arr = np.log(piv.to_numpy(dtype=float).clip(min=1e-300)).reshape(
                    len(ns), len(fs), len(self.names)
                )
                arr = _fill_nan(arr)
                cube.append(arr)
            self.types[str(tname)] = (np.log(ns), fs, cube[0], cube[1])

    def lookup(
        self, node_type: str, nodes: np.ndarray, freq_ghz: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(time, energy)`` arrays of shape ``(len(nodes), benchmarks)``; NaN for an unknown node type."""
        q = len(nodes)
        got = self.types.get(str(node_type))
        if got is None:
            nan = np.full((q, len(self.names)), np.nan)
            return nan, nan.copy()
        ln, fs, lt, le = got
        x = np.log(np.maximum(np.asarray(nodes, dtype=float), 1e-9))
        if len(ln) >= 2:
            i = np.clip(np.searchsorted(ln, x) - 1, 0, len(ln) - 2)
            wn = (x - ln[i]) / (ln[i + 1] - ln[i])
        else:
            i = np.zeros(q, dtype=np.int64)
            wn = np.zeros(q)
        f = np.clip(np.asarray(freq_ghz, dtype=float), fs[0], fs[-1])
        if len(fs) >= 2:
            j = np.clip(np.searchsorted(fs, f) - 1, 0, len(fs) - 2)
            wf = (f - fs[j]) / (fs[j + 1] - fs[j])
        else:
            j = np.zeros(q, dtype=np.int64)
            wf = np.zeros(q)
        out = []
        for cube in (lt, le):
            if len(ln) >= 2:
                lo = cube[i] + (cube[i + 1] - cube[i]) * wn[:, None, None]
            else:
                lo = cube[i]
            # lo: (q, freqs, benchmarks)
            rows = np.arange(q)
            if len(fs) >= 2:
                v = lo[rows, j] + (lo[rows, j + 1] - lo[rows, j]) * wf[:, None]
            else:
                v = lo[rows, j]
            out.append(np.exp(v))
        if len(ln) < 2:  # one measured size: perfect speedup for time, constant energy
            out[0] = out[0] * np.exp(ln[0]) / np.exp(x)[:, None]
        return out[0], out[1]


def _fill_nan(arr: np.ndarray) -> np.ndarray:
    """Fill NaN cells of a ``(n, f, b)`` log grid: along ``n``, then ``f``, then the column mean."""
    if not np.isnan(arr).any():
        return arr
    a = arr.copy()
    for axis in (0, 1):
        moved = np.moveaxis(a, axis, 0)
        shape = moved.shape
        flat = moved.reshape(shape[0], -1)
        idx = np.arange(shape[0])
        for k in range(flat.shape[1]):
            col = flat[:, k]
            ok = np.isfinite(col)
            if ok.any() and not ok.all():
                flat[:, k] = np.interp(idx, idx[ok], col[ok])
        a = np.moveaxis(flat.reshape(shape), 0, axis)
    if np.isnan(a).any():
        mean = np.nanmean(a, axis=(0, 1), keepdims=True)
        a = np.where(np.isnan(a), np.broadcast_to(np.nan_to_num(mean, nan=0.0), a.shape), a)
    return a


# --------------------------------------------------------------------------- predictor


@dataclass
class LbmAppModel:
    """Surrogate of one application (per unit of its median work ``work_ref``)."""

    result: LbmResult
    work_ref: float


class LbmPredictor(PerApplicationPredictor):
    """LBM predictor: time and energy on unobserved configurations from benchmark surrogates.

    Args:
        solver: ``"lstsq"``, ``"nnls"`` or ``"l1"`` (see :func:`lbm_surrogate`).
        normalize: row normalisation (default on: rows in s and J mix).
        nonneg: impose ``x >= 0``.
        resources: rows of ``A`` per observed run: ``"time"`` and/or ``"energy"``.
        span_tol: relative residual above which a fit is flagged out of span.
        cond_limit, check_solvers, solver_tol, rcond, ridge: the guards and
            regularisation of :func:`lbm_surrogate`.

    ``A``'s rows: each resource of each observed run (benchmarks measured at
    the run's configuration); ``b``: the run's measurement, work-normalised
    (module docstring). Rows are ``reliable`` when the surrogate is
    :attr:`LbmResult.reliable`: unique (enough distinct configurations), ``b``
    inside the span, the condition number under ``cond_limit`` and the three
    solvers agreeing within ``solver_tol`` (compared only for a surrogate that
    passes the other tests: ``decisive_check_only`` of :func:`lbm_surrogate`).
    Without benchmark measurements every application falls back.
    """

    name = "lbm"
    #: ``_shape`` is elementwise (each configuration's benchmark values times the
    #: surrogate): the grid fast paths apply (module :mod:`predictors.baselines`)
    _grid_ok = True

    def __init__(
        self,
        solver: str = "lstsq",
        normalize: bool = True,
        nonneg: bool = False,
        resources: tuple[str, ...] = ("time", "energy"),
        span_tol: float = DEFAULT_SPAN_TOL,
        cond_limit: float = DEFAULT_COND_LIMIT,
        check_solvers: bool = True,
        solver_tol: float = DEFAULT_SOLVER_TOL,
        rcond: float | None = None,
        ridge: float = 0.0,
    ) -> None:
        self.solver = solver
        self.normalize = normalize
        self.nonneg = nonneg
        self.resources = resources
        self.span_tol = span_tol
        self.cond_limit = cond_limit
        self.check_solvers = check_solvers
        self.solver_tol = solver_tol
        self.rcond = rcond
        self.ridge = ridge

    def _fit_global(self, observations: Observations) -> None:
        if self.solver not in SOLVERS:
            raise ConfigError(
                "lbm.solver", f"unknown solver {self.solver!r}; known: {', '.join(SOLVERS)}"
            )
        bad = [r for r in self.resources if r not in ("time", "energy")]
        if bad or not self.resources:
            raise ConfigError(
                "lbm.resources", f"must be a subset of ('time', 'energy'), got {self.resources!r}"
            )
        bench = observations.benchmarks
        self.grid_ = BenchmarkGrid(bench) if bench is not None and len(bench) else None
        if self.grid_ is None:
            log.info("lbm: no benchmark measurements; every application falls back")
        #: application -> why its current surrogate is flagged (flagged_applications)
        self._flagged: dict[int, str] = {}
        self._flag_logged: set[int] = set()

    def _fit_app(self, app: int, runs: AppRuns, work: np.ndarray) -> LbmAppModel | None:
        if self.grid_ is None:
            return None
        names = np.where(pd.isna(runs["node_type"]), self.info_.default, runs["node_type"]).astype(
            object
        )
        work_ref = float(np.median(work))
        a_rows, b_rows = [], []
        for name in dict.fromkeys(names.tolist()):
            m = names == name
            t, e = self.grid_.lookup(name, runs["nodes"][m], runs["freq_ghz"][m])
            if "time" in self.resources:
                a_rows.append(t)
                b_rows.append(runs["time_s"][m] / work[m] * work_ref)
            if "energy" in self.resources:
                a_rows.append(e)
                b_rows.append(runs["energy_j"][m] / work[m] * work_ref)
        a = np.vstack(a_rows)
        b = np.concatenate(b_rows)
        ok = np.all(np.isfinite(a), axis=1) & np.isfinite(b)
        if not ok.any():
            return None
        result = lbm_surrogate(
            a[ok],
            b[ok],
            self.solver,
            self.normalize,
            self.nonneg,
            self.span_tol,
            cond_limit=self.cond_limit,
            check_solvers=self.check_solvers,
            solver_tol=self.solver_tol,
            rcond=self.rcond,
            ridge=self.ridge,
            decisive_check_only=True,
            warn=False,
        )
        self._note_flags(app, result)
        return LbmAppModel(result, work_ref)

    def _note_flags(self, app: int, result: LbmResult) -> None:
        """Keep why ``app``'s surrogate is flagged (:meth:`flagged_applications`) and
        log it when the application is first flagged: the first application of the
        fit at WARNING, the others at INFO (a replay refits hundreds of
        applications, and one warning says what every flag means)."""
        if not result.flagged:
            self._flagged.pop(app, None)
            return
        reasons = flag_reasons(result, self.cond_limit, self.solver_tol)
        self._flagged[app] = reasons
        if app in self._flag_logged:
            return
        first = not self._flag_logged
        self._flag_logged.add(app)
        log.log(
            logging.WARNING if first else logging.INFO,
            "lbm: application %s: %s; its surrogate is marked not reliable (%s)%s",
            app,
            reasons,
            _FLAG_ADVICE,
            " (further flagged applications at INFO level; flagged_applications() lists them)"
            if first
            else "",
        )

    def flagged_applications(self) -> dict[int, str]:
        """Applications whose current surrogate is flagged (ill-conditioned, solvers
        disagreeing: its predictions are not reliable), each with the reasons."""
        self._check_fitted()
        return dict(sorted(self._flagged.items()))

    def _shape(self, app, model, node_type, nodes, freq_ghz):
        tau = np.empty(len(nodes))
        energy = np.empty(len(nodes))
        for name in dict.fromkeys(node_type.tolist()):
            m = node_type == name
            t, e = self.grid_.lookup(name, nodes[m], freq_ghz[m])
            tau[m] = model.result.predict(t) / model.work_ref
            energy[m] = model.result.predict(e) / model.work_ref
        power = energy / (tau * np.maximum(nodes, 1.0))
        reliable = np.full(len(nodes), model.result.reliable)
        return tau, power, reliable

    def surrogate(self, application: int) -> LbmResult | None:
        """The fitted surrogate of one application (``None`` when it falls back)."""
        model = self.model_of(application)
        return None if model is None else model.result

    def benchmark_names(self) -> list[str]:
        """Column order of the surrogates."""
        self._check_fitted()
        return [] if self.grid_ is None else list(self.grid_.names)


__all__ = [
    "DEFAULT_COND_LIMIT",
    "DEFAULT_SOLVER_TOL",
    "DEFAULT_SPAN_TOL",
    "SOLVERS",
    "BenchmarkGrid",
    "LbmPredictor",
    "LbmResult",
    "flag_reasons",
    "lbm_surrogate",
]
