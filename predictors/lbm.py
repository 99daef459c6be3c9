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
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import linprog, nnls

from energysched.errors import ConfigError
from predictors.base import Observations
from predictors.baselines import AppRuns, PerApplicationPredictor

log = logging.getLogger(__name__)

SOLVERS = ("lstsq", "nnls", "l1")
#: Relative residual ``||A x - b|| / ||b||`` above which ``b`` is reported outside the span.
DEFAULT_SPAN_TOL = 0.05


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

    @property
    def determined(self) -> bool:
        """Whether the surrogate is unique (``rows >= columns`` and full column rank)."""
        return self.rows >= self.columns and self.rank == self.columns

    def predict(self, c: np.ndarray) -> np.ndarray:
        """``c . x`` for a vector (one configuration) or a matrix (one row per configuration)."""
        return np.asarray(c, dtype=float) @ self.x


def lbm_surrogate(
    A: np.ndarray,
    b: np.ndarray,
    solver: str = "lstsq",
    normalize: bool = False,
    nonneg: bool = False,
    span_tol: float = DEFAULT_SPAN_TOL,
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
    """
    A = np.atleast_2d(np.asarray(A, dtype=float))
    b = np.asarray(b, dtype=float).ravel()
    if A.shape[0] != b.shape[0]:
        raise ValueError(f"A has {A.shape[0]} rows but b has {b.shape[0]} entries")
    if solver not in SOLVERS:
        raise ConfigError("lbm.solver", f"unknown solver {solver!r}; known: {', '.join(SOLVERS)}")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
        raise ValueError("A and b must be finite")
    rows, cols = A.shape
    if normalize:
        scale = np.max(np.abs(A), axis=1)
        scale = np.where(scale > 0, scale, 1.0)
        An, bn = A / scale[:, None], b / scale
    else:
        An, bn = A, b
    if solver == "nnls" or (solver == "lstsq" and nonneg):
        x, _ = nnls(An, bn)
        used, nonneg = "nnls", True
    elif solver == "lstsq":
        x, *_ = np.linalg.lstsq(An, bn, rcond=None)
        used = "lstsq"
    else:
        # variables [x (cols), t (rows)]: min sum t  s.t.  A x - t <= b,  -A x - t <= -b
        eye = np.eye(rows)
        a_ub = np.block([[An, -eye], [-An, -eye]])
        b_ub = np.concatenate([bn, -bn])
        cost = np.concatenate([np.zeros(cols), np.ones(rows)])
        bounds = [(0, None) if nonneg else (None, None)] * cols + [(0, None)] * rows
        res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
        if res.status != 0:
            raise ValueError(f"L1 linear program failed: {res.message}")
        x = np.asarray(res.x[:cols])
        used = "l1"
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
    return LbmResult(
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
    )


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

    ``A``'s rows: each resource of each observed run (benchmarks measured at
    the run's configuration); ``b``: the run's measurement, work-normalised
    (module docstring). Rows are ``reliable`` when the surrogate is unique
    (enough distinct configurations) and ``b`` is inside the span. Without
    benchmark measurements every application falls back.
    """

    name = "lbm"

    def __init__(
        self,
        solver: str = "lstsq",
        normalize: bool = True,
        nonneg: bool = False,
        resources: tuple[str, ...] = ("time", "energy"),
        span_tol: float = DEFAULT_SPAN_TOL,
    ) -> None:
        self.solver = solver
        self.normalize = normalize
        self.nonneg = nonneg
        self.resources = resources
        self.span_tol = span_tol

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
            a[ok], b[ok], self.solver, self.normalize, self.nonneg, self.span_tol
        )
        return LbmAppModel(result, work_ref)

    def _shape(self, app, model, node_type, nodes, freq_ghz):
        tau = np.empty(len(nodes))
        energy = np.empty(len(nodes))
        for name in dict.fromkeys(node_type.tolist()):
            m = node_type == name
            t, e = self.grid_.lookup(name, nodes[m], freq_ghz[m])
            tau[m] = model.result.predict(t) / model.work_ref
            energy[m] = model.result.predict(e) / model.work_ref
        power = energy / (tau * np.maximum(nodes, 1.0))
        reliable = np.full(len(nodes), model.result.determined and not model.result.out_of_span)
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
    "DEFAULT_SPAN_TOL",
    "SOLVERS",
    "BenchmarkGrid",
    "LbmPredictor",
    "LbmResult",
    "lbm_surrogate",
]
