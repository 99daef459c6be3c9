"""Baseline predictors and the per-application machinery the built-in predictors share.

Baselines every comparison must include (docs/background/models.md, section 2.4):

* :class:`OraclePredictor` -- reads the ground truth exactly (the upper bound);
* :class:`RequestedPredictor` -- the trace's values: requested time at the
  requested size and top frequency (the rigid baseline);
* :class:`AmdahlPredictor` -- a two-parameter Amdahl fit, ADEPT's first piece.

Shared machinery (:class:`PerApplicationPredictor`):

**Per-job work scaling.** Ground truth is calibrated per job: the jobs of one
application share the *shape* of their behaviour but not their amount of work.
A run's ``instructions`` column measures its work ``W`` (nearly independent of
``(n, f)``). Each built-in predictor therefore learns a *normalised* model
``tau(n, f) = time / W`` (seconds per instruction) from the application's
runs, and scales it for a queried job:

* the application's *request ratio* ``rho`` is the geometric mean, over its
  runs with a requested time ``R_j``, of ``W_j * tau(req_n_j, Fmax) / R_j``,
  i.e. how the model's runtime at the requested size and top frequency
  compares with what users request (users over-estimate, so ``rho < 1`` is
  typical);
* a queried job with a requested time ``R`` and size ``req_n`` gets
  ``time(n, f) = R * rho * tau(n, f) / tau(req_n, Fmax)``: its runtime at the
  requested size and ``Fmax`` is estimated as ``R * rho`` and the learned
  shape moves it to ``(n, f)``;
* a job without a requested time (or size) gets the application's median work:
  ``time = median(W) * tau(n, f)``.

``R`` is whatever length the caller puts in ``requested_time_s``: the user's
request, or a job-length prediction (:mod:`predictors.job_length`). The
policies that predict lengths give a finished run, as its length, the
runtime it had at its requested configuration, so ``rho`` then measures the
model's own bias and a prediction is taken as it is
(:mod:`policies.backfilling`, Job-length predictions).

Runs without a usable ``instructions`` value get the median of the others;
when no run has one, ``W = 1`` for every run (the shape is then learned from
raw times, which is right when the jobs have similar inputs).

**Fallback.** Applications with fewer than ``min_observations`` runs (or
whose model cannot be fitted) are answered by :meth:`Predictor.fallback`
(requested time scaled by perfect speedup and ``Fmax / f``), with the
P-state full-load power at ``f`` (200 W without a platform), marked
``reliable = False``. Predictors with an application-independent power
model override :meth:`PerApplicationPredictor._fallback_power`.

**Incremental refits.** Runs are kept per application as numpy columns
(:class:`_AppStore`: buffers grown by appending, no copy of the old runs per
update); :meth:`PerApplicationPredictor.update` appends the new runs (a
DataFrame or a :class:`~predictors.base.RunBatch`) and refits only the
applications they belong to -- at once, or, for predictors whose applications
are fitted independently (``_lazy_refit``, e.g. ADEPT), when the application's
predictions are next asked for (same result, fewer fits). The per-job scaling
is refreshed from facts the store keeps incrementally (the runs with a usable
request, the sorted work values for the median): the same values as from the
whole runs table, bit for bit. The two parts of a composite given the same runs
keep *twin* stores (one append for both, shared buffers; each part keeps its own
incremental fit state; the twins refer to each other weakly, so dropped predictors
leave no reference cycle): see :meth:`PerApplicationPredictor._append_blocks`.

**Grid fast path.** :meth:`PerApplicationPredictor.predict_grid` answers one
job on a ``sizes x frequencies`` grid from per-application tables of the
shape at every ``(n, P-state)``, computed once per fitted state (and per
:meth:`~PerApplicationPredictor._grid_token`, e.g. the fluid prior alpha)
and dropped when the application is refitted; equal to :meth:`predict` on
the same rows. Enabled per class by ``_grid_ok`` (elementwise ``_shape``).
A grid of every size ``1..count`` in order is the table itself (its
:class:`~predictors.base.GridShape` shares the table's arrays); a one-cell
grid of an application without a model is answered in plain Python
(:meth:`PerApplicationPredictor._fallback_one`, same values).
"""

from __future__ import annotations

import bisect
import logging
import math
import weakref
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from energysched.errors import ConfigError
from predictors.base import (
    MEASUREMENT_COLUMNS,
    RUN_ROW_COLUMNS,
    RUN_ROW_DTYPES,
    GridShape,
    Observations,
    PendingRunsMixin,
    Prediction,
    Predictor,
    Queries,
    RunBatch,
    grid_cell,
)

log = logging.getLogger(__name__)

#: Numeric run columns kept per application (missing ones are filled with NaN).
NUMERIC_RUN_COLUMNS: tuple[str, ...] = (
    *(c for c in MEASUREMENT_COLUMNS if c != "node_type"),
    "requested_nodes",
    "requested_time_s",
)

#: Power per node (W) assumed when neither a platform nor benchmarks say anything.
DEFAULT_POWER_W = 200.0

#: One application's runs: column name -> 1-D array (a dict, or an
#: :class:`_AppStore`'s :class:`StoreRuns`).
AppRuns = Mapping[str, np.ndarray]


# --------------------------------------------------------------------------- platform facts


@dataclass
class NodeTypeInfo:
    """What the predictors need to know about one node type (frequencies in GHz, power in W)."""

    name: str
    freqs_ghz: np.ndarray  # ascending
    busy_power_w: np.ndarray  # per P-state, NaN when unknown
    idle_power_w: np.ndarray  # per P-state, NaN when unknown

    @property
    def fmax_ghz(self) -> float:
        return float(self.freqs_ghz[-1])

    @property
    def fmin_ghz(self) -> float:
        return float(self.freqs_ghz[0])

    def busy_power(self, freq_ghz: np.ndarray) -> np.ndarray:
        """Full-load node power at ``freq_ghz`` (linear interpolation between P-states), W.

        A new array per call; the values for a float64 array of up to 64
        frequencies are kept per frequency set (the P-state figures are fixed).
        """
        cache: dict[bytes, np.ndarray] | None = None
        key = b""
        small = (
            isinstance(freq_ghz, np.ndarray)
            and freq_ghz.dtype == np.float64
            and freq_ghz.ndim == 1
            and len(freq_ghz) <= 64
        )
        if small:
            cache = self.__dict__.get("_busy_cache")
            if cache is None:
                cache = self.__dict__["_busy_cache"] = {}
            key = freq_ghz.tobytes()
            got = cache.get(key)
            if got is not None:
                return cast(np.ndarray, got.copy())
        if not np.all(np.isfinite(self.busy_power_w)):
            out = np.full(np.shape(freq_ghz), DEFAULT_POWER_W)
        else:
            out = np.interp(freq_ghz, self.freqs_ghz, self.busy_power_w)
        if cache is not None:
            if len(cache) >= 64:
                cache.clear()
            cache[key] = out.copy()
        return out


class PlatformInfo:
    """Node types of the platform (duck-typed), or inferred from the data when it is ``None``."""

    def __init__(
        self,
        platform: Any,
        runs: pd.DataFrame | None = None,
        benchmarks: pd.DataFrame | None = None,
    ):
        self.types: dict[str, NodeTypeInfo] = {}
        if platform is not None:
            for t in platform.node_types:
                ps = sorted(t.pstates, key=lambda p: p.freq_ghz)
                self.types[str(t.name)] = NodeTypeInfo(
                    str(t.name),
                    np.array([p.freq_ghz for p in ps], dtype=float),
                    np.array([p.busy_power_w for p in ps], dtype=float),
                    np.array([p.idle_power_w for p in ps], dtype=float),
                )
        else:
            frames = [
                f for f in (runs, benchmarks) if f is not None and len(f) and "node_type" in f
            ]
            seen: dict[str, set[float]] = {}
            for f in frames:
                for name, g in f.groupby("node_type", sort=False):
                    seen.setdefault(str(name), set()).update(
                        float(v) for v in g["freq_ghz"].unique()
                    )
            for name, freqs in seen.items():
                fs = np.array(sorted(freqs), dtype=float)
                nan = np.full(len(fs), np.nan)
                self.types[name] = NodeTypeInfo(name, fs, nan, nan.copy())
        self.default = next(iter(self.types)) if self.types else "node"
        self._row_fmax: dict[str, float | None] = {}  # row_fmax per type name
        #: type name -> its finite top frequency (GHz), for the names :meth:`row_fmax`
        #: has answered: ``known_fmax.get(name)`` is its answer for any ``freq``
        #: when not ``None`` (then ask :meth:`row_fmax`)
        self.known_fmax: dict[str, float] = {}

    def get(self, name: Any) -> NodeTypeInfo | None:
        return self.types.get(str(name))

    def row_fmax(self, name: Any, freq: float) -> float | None:
        """:meth:`fmax` of one row: its type's top frequency, ``freq`` when the type is
        unknown; ``None`` when the type's top frequency is not finite (then the row's value
        depends on the other rows of the array, ask :meth:`fmax`)."""
        cache = self._row_fmax
        got = cache.get(name, False) if isinstance(name, str) else False
        if got is False:
            info = self.get(name)
            got = None if info is None else info.fmax_ghz
            if got is not None and not math.isfinite(got):
                return None
            if isinstance(name, str):
                cache[name] = got
                if got is not None:
                    self.known_fmax[name] = got
        return freq if got is None else got

    def names(self, queries: Queries) -> np.ndarray:
        """Node type name of every query row (the first type when the queries give none)."""
        if queries.node_type is None:
            return np.full(len(queries), self.default, dtype=object)
        return np.asarray(queries.node_type, dtype=object)

    def _single(self, names: np.ndarray) -> NodeTypeInfo | None:
        """The node type when the platform has one and every row names it (fast paths)."""
        if len(self.types) != 1 or len(names) == 0:
            return None
        name, info = next(iter(self.types.items()))
        if len(names) <= 16:  # the same == per element as numpy's, in Python
            return info if all(v == name for v in names.tolist()) else None
        return info if bool((names == name).all()) else None

    def fmax(self, names: np.ndarray, fallback: np.ndarray | None = None) -> np.ndarray:
        """Top frequency (GHz) of each row's node type (``fallback`` where the type is unknown)."""
        one = self._single(names)
        if one is not None:
            return np.full(len(names), one.fmax_ghz)
        out = np.full(len(names), np.nan)
        for name in _unique_objects(names):
            info = self.get(name)
            if info is not None:
                out[names == name] = info.fmax_ghz
        if fallback is not None:
            out = np.where(np.isfinite(out), out, fallback)
        return out

    def fmin(self, names: np.ndarray, fallback: np.ndarray | None = None) -> np.ndarray:
        """Lowest frequency (GHz) of each row's node type."""
        out = np.full(len(names), np.nan)
        for name in _unique_objects(names):
            info = self.get(name)
            if info is not None:
                out[names == name] = info.fmin_ghz
        if fallback is not None:
            out = np.where(np.isfinite(out), out, fallback)
        return out

    def busy_power(self, names: np.ndarray, freq_ghz: np.ndarray) -> np.ndarray:
        """Full-load power per node from the P-state figures (W; 200 W when unknown)."""
        one = self._single(names)
        if one is not None:
            return np.asarray(one.busy_power(np.asarray(freq_ghz)), dtype=np.float64)
        out = np.full(len(names), DEFAULT_POWER_W)
        for name in _unique_objects(names):
            info = self.get(name)
            if info is not None:
                m = names == name
                out[m] = info.busy_power(freq_ghz[m])
        return out


def _unique_objects(values: np.ndarray) -> list[Any]:
    """Unique values of a (small-cardinality) object array, in first-seen order."""
    return list(dict.fromkeys(np.asarray(values, dtype=object).tolist()))


# --------------------------------------------------------------------------- runs per application


def split_runs(frame: pd.DataFrame | RunBatch) -> dict[int, AppRuns]:
    """Split a runs table into numpy columns per application (``node_type`` as objects)."""
    n = len(frame)
    if n == 0:
        return {}
    if isinstance(frame, RunBatch):
        return _split_batch(frame)
    cols: dict[str, np.ndarray] = {}
    position = {c: k for k, c in enumerate(frame.columns)}
    values = frame.to_numpy() if n <= 64 else None  # small batches: one conversion (fast)
    for c in NUMERIC_RUN_COLUMNS:
        if c not in position:
            cols[c] = np.full(n, np.nan)
            continue
        try:
            if values is not None:
                cols[c] = values[:, position[c]].astype(np.float64)
            else:
                cols[c] = frame[c].to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            cols[c] = pd.to_numeric(frame[c], errors="coerce").to_numpy(
                dtype=np.float64, na_value=np.nan
            )
    cols["node_type"] = (
        (
            values[:, position["node_type"]]
            if values is not None
            else frame["node_type"].to_numpy(dtype=object)
        )
        if "node_type" in frame
        else np.full(n, None, dtype=object)
    )
    apps = (
        values[:, position["application"]]
        if values is not None
        else frame["application"].to_numpy()
    ).astype(np.int64)
    if n == 1 or bool(np.all(apps == apps[0])):
        return {int(apps[0]): cols}
    order = np.argsort(apps, kind="stable")
    sorted_apps = apps[order]
    bounds = np.flatnonzero(np.diff(sorted_apps)) + 1
    out: dict[int, AppRuns] = {}
    for idx in np.split(order, bounds):
        out[int(apps[idx[0]])] = {k: v[idx] for k, v in cols.items()}
    return out


def _split_batch(batch: RunBatch) -> dict[int, AppRuns]:
    """:func:`split_runs` of a :class:`RunBatch` (same columns and dtypes, no pandas)."""
    n = len(batch)
    cols: dict[str, np.ndarray] = {}
    for c in NUMERIC_RUN_COLUMNS:
        v = batch.cols.get(c)
        if v is None:
            cols[c] = np.full(n, np.nan)
        else:
            try:
                cols[c] = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError):
                cols[c] = pd.to_numeric(pd.Series(v), errors="coerce").to_numpy(
                    dtype=np.float64, na_value=np.nan
                )
            if cols[c] is v:
                cols[c] = cols[c].copy()
    nt = batch.cols.get("node_type")
    cols["node_type"] = (
        np.full(n, None, dtype=object) if nt is None else np.asarray(nt, dtype=object).copy()
    )
    apps = np.asarray(batch["application"]).astype(np.int64)
    a0 = int(apps[0])
    if n == 1 or bool(np.all(apps == a0)):
        return {a0: cols}
    order = np.argsort(apps, kind="stable")
    bounds = np.flatnonzero(np.diff(apps[order])) + 1
    out: dict[int, AppRuns] = {}
    for idx in np.split(order, bounds):
        out[int(apps[idx[0]])] = {k: v[idx] for k, v in cols.items()}
    return out


def run_work(runs: AppRuns) -> np.ndarray:
    """Work ``W`` of every run (instructions; see the module docstring for missing values)."""
    instr = runs["instructions"]
    ok = np.isfinite(instr) & (instr > 0)
    if ok.all():
        return instr
    if not ok.any():
        return np.ones(len(instr))
    return np.where(ok, instr, np.median(instr[ok]))


def geometric_mean(values: np.ndarray) -> float:
    """Geometric mean of the positive finite values (NaN when there are none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.mean(np.log(v)))) if len(v) else math.nan


def geometric_mean_positive(values: np.ndarray) -> float:
    """:func:`geometric_mean` of a contiguous float64 array whose values are expected to be
    positive and finite (the refit path's case): the same value, bit for bit, without
    the filter.

    When every value is positive and finite the filter keeps them all and the mean
    of the logs is the same sum over the same values; a log is finite exactly when
    its value is positive and finite, so a non-finite mean means some value is not,
    and then the filtered :func:`geometric_mean` is returned. (``np.log`` warns for
    values <= 0 unless the caller ignores floating-point errors.)
    """
    n = len(values)
    if n:
        m = np.add.reduce(np.log(values)) / n  # == np.mean(np.log(values))
        if math.isfinite(m):
            return float(np.exp(m))
    return geometric_mean(values)


#: ``np.min`` / ``np.max`` of a whole array without their Python wrappers.
_MIN = np.minimum.reduce
_MAX = np.maximum.reduce
#: "not in this cache" (a cache's value may be ``None``); also used by the composite
_MISSING = object()

_COL = {c: i for i, c in enumerate(NUMERIC_RUN_COLUMNS)}
_I_FREQ, _I_INSTR = _COL["freq_ghz"], _COL["instructions"]
_I_REQ_N, _I_REQ_T = _COL["requested_nodes"], _COL["requested_time_s"]
_I_NODES, _I_TIME, _I_POWER = _COL["nodes"], _COL["time_s"], _COL["power_w"]

#: What :func:`decode_block` reads of a block of runs: ``(freq_ghz, nodes, time_s,
#: power_w, instructions, requested_nodes, requested_time_s, node_type)``, each a
#: Python list (floats; node type names as they are), one entry per run.
DecodedRuns = tuple[
    list[float],
    list[float],
    list[float],
    list[float],
    list[float],
    list[float],
    list[float],
    list[Any],
]


def decode_block(num: np.ndarray, types: np.ndarray) -> DecodedRuns:
    """The columns of a block of runs (a :func:`_run_blocks` block, or columns of an
    :class:`_AppStore`'s buffers) that the refit path reads run by run, as Python
    lists (:data:`DecodedRuns`): the block's rows converted once (``tolist``, the same
    floats as any other ``tolist`` of them), so that the store's facts and the
    predictors' incremental run containers read the same lists instead of
    converting the rows each (:meth:`_AppStore.decoded`)."""
    return (
        num[_I_FREQ].tolist(),
        num[_I_NODES].tolist(),
        num[_I_TIME].tolist(),
        num[_I_POWER].tolist(),
        num[_I_INSTR].tolist(),
        num[_I_REQ_N].tolist(),
        num[_I_REQ_T].tolist(),
        types.tolist(),
    )


_FLAGS: dict[tuple[int, int, bool], np.ndarray] = {}
#: ``id`` of each :func:`constant_flags` table -> its value (the tables are kept for
#: good in ``_FLAGS``, so no other object has their ids)
_FLAG_OF_ID: dict[int, bool] = {}


def constant_flags(rows: int, cols: int, value: bool) -> np.ndarray:
    """A ``(rows, cols)`` bool table of ``value`` (a reliability table that does not
    depend on the cell), shared per shape and value (read-only); see :func:`flags_value`."""
    key = (rows, cols, value)
    got = _FLAGS.get(key)
    if got is None:
        got = _FLAGS[key] = np.full((rows, cols), value, dtype=bool)
        got.flags.writeable = False
        _FLAG_OF_ID[id(got)] = bool(value)
    return got


def flags_value(table: np.ndarray) -> bool | None:
    """The value of a :func:`constant_flags` table, ``None`` for any other array (one
    lookup by identity)."""
    return _FLAG_OF_ID.get(id(table))


def and_flags(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a & b`` of two reliability tables with ``K`` rows (``a`` of one column or of
    ``b``'s): a :func:`constant_flags` table decides without a new table (all False,
    or all True and the other table of the result's shape), else ``a & b``."""
    va, vb = flags_value(a), flags_value(b)
    if va is None and vb is None:
        return a & b
    shape = (b.shape[0], b.shape[1] if a.shape[1] == 1 else a.shape[1])
    if va is False or vb is False:
        return constant_flags(*shape, False)
    if va is True and vb is True:
        return constant_flags(*shape, True)
    if vb is True and a.shape == shape:
        return a
    if va is True and b.shape == shape:
        return b
    return a & b


#: The compiled twin of :func:`scaled_ratio_max_plain` (``predictors._dvfs_kernels``,
#: built by ``pip install`` when a C compiler is there; ``None``: the reference runs).
try:
    from predictors._dvfs_kernels import scaled_ratio_max as compiled_scaled_ratio_max
except ImportError:  # pragma: no cover - not built (or built before it was added)
    compiled_scaled_ratio_max = None


def outer_product(col: np.ndarray, row: np.ndarray) -> np.ndarray:
    """``col[:, None] * row`` (``row`` of shape ``(F,)`` or ``(1, F)``): a new
    ``(len(col), F)`` table in column-major (Fortran) order, the same values bit for
    bit (each cell is one IEEE product, whichever operand comes first).

    A shape table has many rows (node counts) and a few columns (P-states). Made
    column by column, numpy's inner loop runs along the node counts (``row[:, None] *
    col``, seen transposed) instead of along the short rows, once per node count
    (which costs more than the multiplications: about 2x the time at 338 x 5,
    CTC-SP2, 10x at 5,544 x 5, CEA-Curie); and a column, what a chooser reads, is contiguous."""
    if col.ndim != 1 or row.size != row.shape[-1]:  # (not one column and one row)
        return col[:, None] * row
    return (row.reshape(-1, 1) * col).T


def row_table(row: np.ndarray, rows: int) -> np.ndarray:
    """``np.broadcast_to(row, (rows, len(row)))`` of a 1-D ``row``: the row seen as a
    read-only ``(rows, F)`` table (stride 0 down the rows, no copy), e.g. a power
    table that does not depend on the node count. One array constructor instead of
    ``broadcast_to``'s Python layers (about 8 times its cost for a table of a few
    columns); a row that is not contiguous goes through ``broadcast_to``."""
    if row.ndim != 1 or not row.flags.c_contiguous:
        return np.broadcast_to(row, (rows, row.shape[-1]))
    table = np.ndarray((rows, row.shape[0]), row.dtype, row, 0, (0, row.itemsize))
    table.flags.writeable = False
    return table


def scaled_ratio(scale: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``scale * (table / table[:, -1:])`` (``scale`` of shape ``(K, 1)`` or of
    ``table``'s): each column relative to the last one, times ``scale``; a new table
    (numpy lays it out as ``table``: column-major for :func:`outer_product`'s)."""
    return scale * (table / table[:, -1:])


def scaled_ratio_column(scale: np.ndarray, table: np.ndarray, j: int) -> np.ndarray:
    """Column ``j`` of :func:`scaled_ratio` without the rest of the table: the same
    two operations on each of its cells, so the same values bit for bit."""
    return scale[:, 0 if scale.shape[1] == 1 else j] * (table[:, j] / table[:, -1])


def scaled_ratio_row(scale: np.ndarray, table: np.ndarray, i: int) -> np.ndarray:
    """Row ``i`` of :func:`scaled_ratio` without the rest of the table (the same values)."""
    return scale[i] * (table[i] / table[i, -1])


def scaled_ratio_max(scale: np.ndarray, table: np.ndarray) -> float:
    """:func:`scaled_ratio_max_plain` (the same value), by its compiled twin when it is
    built and takes the arrays (float64; ``predictors._dvfs_kernels.scaled_ratio_max``:
    one pass over the table instead of five array operations; a composite's shape
    computes it once per frequency part's refit)."""
    if compiled_scaled_ratio_max is not None:
        try:
            got = compiled_scaled_ratio_max(scale, table)
        except ValueError:  # (not float64 arrays: the kernel does not take them)
            got = None
        if got is not None:
            return float(got)
    return scaled_ratio_max_plain(scale, table)


def scaled_ratio_max_plain(scale: np.ndarray, table: np.ndarray) -> float:
    """``float(max(scaled_ratio(scale, table)))`` of a one-column ``scale`` and a
    ``table`` whose cells are all finite and positive, without the table.

    Dividing by a positive number and multiplying by one round monotonically, so a
    row's largest ratio comes from its largest cell: the maximum is that of
    ``scale * (row maximum / last column)``, one value per row (the same value as
    the table's). Any other ``scale`` (several columns) goes through the table."""
    rows, cols = table.shape
    if not table.size:
        return 0.0
    if scale.shape != (rows, 1):
        return float(_MAX(scaled_ratio(scale, table), None))
    if table.flags.f_contiguous:  # contiguous columns (outer_product): one reduction
        largest = _MAX(table, 1)
    else:
        largest = table[:, 0].copy()
        for j in range(1, cols):
            np.maximum(largest, table[:, j], out=largest)
    return float(_MAX(scale[:, 0] * (largest / table[:, -1]), None))


#: The smallest and largest cells of a shape table: ``(min tau, max tau, min power, max
#: power)``, what :meth:`PerApplicationPredictor._shape_entry` checks before a shape is usable.
TableBounds = tuple[float, float, float, float]

#: A shape table as :meth:`PerApplicationPredictor._compute_table` gives it: ``(tau, power,
#: reliable)`` and its :data:`TableBounds` (``None``: not known, the tables are reduced).
ShapeTable = tuple[np.ndarray, np.ndarray, np.ndarray, "TableBounds | None"]


def outer_table_bounds(
    col: np.ndarray, row: np.ndarray, power_row: np.ndarray, col_monotone: bool = False
) -> TableBounds | None:
    """The :data:`TableBounds` of a table ``col[:, None] * row`` whose power table is
    ``power_row`` broadcast down the node counts, from the factors alone (``count + F``
    values read instead of the ``2 count F`` cells): the same values as reductions
    over the tables.

    IEEE multiplication rounds monotonically, so when every factor is finite and
    positive the smallest cell is ``min(col) * min(row)`` rounded and the largest
    ``max(col) * max(row)`` rounded (each is itself a cell; an underflow to 0 or an
    overflow to inf shows in them as in the cells); a broadcast row's smallest and
    largest cells are the row's own. ``None`` (the caller reduces the tables) when a
    factor is not finite and positive, or a table is empty.

    ``col_monotone``: the caller knows that ``col`` is monotone and that a NaN in it is
    in every cell (``c / n`` or ``c / n + d`` over ascending ``n``, scalar ``c`` and
    ``d``: IEEE division and addition round monotonically), so its smallest and
    largest values are its ends (two values read instead of two reductions)."""
    if not (col.size and row.size and power_row.size):
        return None
    inf = math.inf
    if col_monotone:
        cmin, cmax = float(col[0]), float(col[-1])
        if cmax < cmin:  # (decreasing; NaN: neither, and no bounds below)
            cmin, cmax = cmax, cmin
    else:
        cmin, cmax = float(_MIN(col, None)), float(_MAX(col, None))
    r = row.ravel().tolist()  # a few P-states: Python's min / max (no NaN among them)
    if not (cmin > 0 and cmax < inf and all(0 < v < inf for v in r)):
        return None
    p = power_row.ravel().tolist()
    if all(0 < v < inf for v in p):
        pmin, pmax = min(p), max(p)
    else:  # numpy's reductions (NaN propagates)
        pmin, pmax = float(_MIN(power_row, None)), float(_MAX(power_row, None))
    return cmin * min(r), cmax * max(r), pmin, pmax


def fallback_cell_time(rt: float, rn: float, n: int, fmax_over_f: float) -> float:
    """:meth:`PerApplicationPredictor._fb_time` of one cell as a Python float, the same
    operations in the same order: the requested time (3600 s when not finite and
    positive) times the requested size (``n`` when NaN) over ``max(n, 1)``, times
    ``Fmax / f`` (``fmax_over_f``, that one division)."""
    req_t = rt if (math.isfinite(rt) and rt > 0) else 3600.0
    nd = float(n)
    req_n = rn if rn == rn else nd
    return req_t * req_n / max(nd, 1.0) * fmax_over_f


def frozen_array(a: np.ndarray) -> bool:
    """Whether ``a`` is read-only and owns its memory: nothing changes its values
    (no writable base array shares them), so the same object holds the same
    values on every call (the invariant of a caller that passes read-only arrays,
    as :class:`policies.choosers.Chooser` passes its candidate sizes)."""
    return not a.flags.writeable and a.flags.owndata


def _is_na(value: Any) -> bool:
    """``pd.isna`` of one node type value (non-scalars are not missing)."""
    if isinstance(value, str):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _run_blocks(runs: pd.DataFrame | RunBatch) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """New runs per application: ``(application, numeric block, node types)``.

    The block is float64 with one row per :data:`NUMERIC_RUN_COLUMNS` entry and one
    column per run; node types an object array. Applications in ascending order,
    runs in their order: the same values as :func:`split_runs` (which is used for
    DataFrames and for RunBatches whose columns need ``pd.to_numeric``). A batch of
    rows (:meth:`RunBatch.rows`) is read from its rows (:func:`_rows_block`).
    """
    n = len(runs)
    if n == 0:
        return []
    if isinstance(runs, RunBatch):
        rows = runs.rows()
        got = _rows_block(rows) if rows is not None else None
        if got is not None:
            num, types, apps = got
            runs.numeric = (NUMERIC_RUN_COLUMNS, num)  # (kept: folding reuses it)
        else:
            cols = runs.cols
            try:
                num = np.array(
                    [cols[c] if c in cols else np.full(n, np.nan) for c in NUMERIC_RUN_COLUMNS],
                    dtype=np.float64,
                )
            except (TypeError, ValueError):
                num = None
            if num is not None and num.shape == (len(NUMERIC_RUN_COLUMNS), n):
                nt = cols.get("node_type")
                types = (
                    np.full(n, None, dtype=object) if nt is None else np.asarray(nt, dtype=object)
                )
                apps = np.asarray(cols["application"]).astype(np.int64).tolist()
            else:
                num = None
        if num is not None:
            a0 = apps[0]
            if n == 1 or apps.count(a0) == n:
                return [(a0, num, types)]
            rows_of: dict[int, list[int]] = {}
            for i, a in enumerate(apps):
                rows_of.setdefault(a, []).append(i)
            return [(a, num[:, rows_of[a]], types[rows_of[a]]) for a in sorted(rows_of)]
    return [
        (app, np.array([cols[c] for c in NUMERIC_RUN_COLUMNS], dtype=np.float64), cols["node_type"])
        for app, cols in split_runs(runs).items()
    ]


#: Per :data:`NUMERIC_RUN_COLUMNS` entry: its position in a :data:`RUN_ROW_COLUMNS` row
#: and whether the row's column is int64 (:meth:`RunRows.to_batch`'s dtypes).
_ROW_NUMERIC: tuple[tuple[int, bool], ...] = tuple(
    (RUN_ROW_COLUMNS.index(c), RUN_ROW_DTYPES[RUN_ROW_COLUMNS.index(c)] == "int64")
    for c in NUMERIC_RUN_COLUMNS
)
_ROW_NODE_TYPE = RUN_ROW_COLUMNS.index("node_type")
_ROW_APPLICATION = RUN_ROW_COLUMNS.index("application")


def _rows_block(
    rows: list[tuple[Any, ...]],
) -> tuple[np.ndarray, np.ndarray, list[int]] | None:
    """:func:`_run_blocks`'s numeric block, node types and application ids (a list) of
    a batch of :data:`RUN_ROW_COLUMNS` rows: the values of the batch's columns
    (:attr:`RunBatch.cols`) stacked as :func:`_run_blocks` stacks them, built from
    the rows in three numpy calls instead of one array per column and a stack.

    The int64 columns go through int64 first, as the columns do; the float64
    ones are converted once, straight to the block (the same conversion). ``None``
    when a value does not convert (then the columns decide, as before)."""
    n = len(rows)
    cols = list(zip(*rows))
    if len(cols) != len(RUN_ROW_COLUMNS):
        return None
    try:
        num = np.array(
            [
                np.array(cols[k], dtype=np.int64) if is_int else cols[k]
                for k, is_int in _ROW_NUMERIC
            ],
            dtype=np.float64,
        )
        apps = np.array(cols[_ROW_APPLICATION], dtype=np.int64).tolist()
    except (TypeError, ValueError, OverflowError):
        return None
    if num.shape != (len(NUMERIC_RUN_COLUMNS), n):
        return None
    return num, np.array(cols[_ROW_NODE_TYPE], dtype=object), apps


def _grown_capacity(capacity: int, needed: int) -> int:
    """The next capacity of a store's buffer of ``capacity`` columns that must hold
    ``needed``: half as much again (doubling leaves more than a quarter of the
    buffers empty on average; they live for the whole replay, one column per run),
    at least ``needed`` and 8."""
    return max(capacity + capacity // 2, needed, 8)


#: The buffers of an :class:`_AppStore` without runs (zero-size: nothing to write into).
_NO_NUM = np.empty((len(NUMERIC_RUN_COLUMNS), 0))
_NO_FLOATS = np.empty(0)
#: The rows of an :class:`_AppStore`'s run buffers that :meth:`_AppStore.requests` reads.
_REQUEST_ROWS = np.array([_I_REQ_N, _I_REQ_T, _I_FREQ, _I_INSTR])
_NO_INDEX = np.empty(0, dtype=np.int64)
_NO_OBJECTS = np.empty(0, dtype=object)

#: The columns of a :class:`StoreRuns`: the numeric ones (rows of the buffer), then the
#: node type names.
_STORE_COLUMNS = (*NUMERIC_RUN_COLUMNS, "node_type")


class StoreRuns(Mapping[str, np.ndarray]):
    """The first ``n`` runs of an :class:`_AppStore` as read-only :data:`AppRuns`:
    ``runs[column]`` is a view of the store's buffers (of row ``column`` of the
    numeric buffer, or of the node type names), made when read and not kept, so a
    store holds this small object instead of a dict of sixteen views (about 1.8 KB
    an application: 7.6 MB for the 4,051 stores at the end of CTC-SP2's adept+fluid
    replay, whose peak went from 365 to 357 MB). The ``instructions`` view is made
    once and kept: the refit path tells a store's own work apart by identity
    (:meth:`_AppStore.work`). A new object after every append; earlier ones keep
    their rows (the buffers are only written beyond them, or replaced when they
    grow).
    """

    __slots__ = ("_instructions", "_n", "_nt", "_num")

    def __init__(self, num: np.ndarray, nt: np.ndarray, n: int) -> None:
        self._num = num
        self._nt = nt
        self._n = n
        self._instructions = num[_I_INSTR, :n]

    def __getitem__(self, column: str) -> np.ndarray:
        i = _COL.get(column)
        if i is not None:
            return self._instructions if i == _I_INSTR else self._num[i, : self._n]
        if column == "node_type":
            return self._nt[: self._n]
        raise KeyError(column)

    def __contains__(self, column: object) -> bool:
        return column in _COL or column == "node_type"

    def __iter__(self) -> Iterator[str]:
        return iter(_STORE_COLUMNS)

    def __len__(self) -> int:
        return len(_STORE_COLUMNS)

    def __repr__(self) -> str:
        return f"StoreRuns({self._n} runs)"


#: :meth:`_AppStore.facts` of a block of runs.
_BlockFacts = tuple[list[float], int, list[int], list[Any], list[float], bool]


class _AppStore:
    """One application's runs: column buffers that grow by appending (amortised, no
    copy of the old runs per update) and what the shared refit path keeps about
    them incrementally.

    ``runs`` is the application's :data:`AppRuns` (a :class:`StoreRuns`: views of the
    buffers, the rows seen so far; a new one after every append, earlier ones keep
    their rows).
    Incremental facts (exact, they are per-run values or an order):

    * ``bad_work``: runs without a usable ``instructions`` value (see :func:`run_work`);
    * ``work_sorted``: the usable ``instructions`` values in ascending order (their
      median is ``np.median(work)`` when ``bad_work == 0``), a float64 buffer (8 bytes
      a run, kept for the whole replay);
    * the runs with a usable request (``requested_time_s > 0``, ``requested_nodes >= 1``,
      both finite): their row index (``req_idx``), node type name (``req_names``;
      missing -> the default type) and top frequency (``req_fmax``,
      :meth:`PlatformInfo.row_fmax`); their requested nodes and time, frequency and
      instructions are the run buffers' (:meth:`requests`), not copies;
      ``bad_fmax``: some of them has a top frequency that is not finite and
      non-zero (then ``f / Fmax`` at ``Fmax`` is not 1; the type's top frequency
      comes from :meth:`PlatformInfo.fmax` on the whole array).

    ``fit_cache``: for the predictor's own incremental state of this application
    (dropped with the store at the next :meth:`PerApplicationPredictor.fit`).

    ``twin``: another predictor's store of the same application holding the same
    runs (the parts of a composite, :meth:`follow`) that shares this store's
    buffers and facts (not its ``fit_cache``); ``None`` when the buffers are this
    store's own. A store that appends on its own first takes private copies
    (:meth:`_unshare`), so a twin never sees runs it was not given. Twins hold
    each other by weak reference: each store is owned by its predictor only, so
    dropped predictors are freed by reference counting, not left in a cycle for
    the garbage collector; a store whose twin is gone owns its buffers again
    (nothing else can append to them). Pickling and copying keep the pair (the
    state holds the twin itself).

    ``_recent``: the last appended block's :func:`decode_block` lists, for the
    incremental run containers of the predictors holding this store and its twin
    (:meth:`decoded`): ``[first row, end row, lists, reads left]``, shared with the
    twin; dropped once each of them has read it (or replaced at the next append).
    A store whose last block was not read by every reader keeps its lists until
    then: at the end of CTC-SP2's adept+fluid replay 1,789 of 8,102 stores (5,425
    runs, about 2 MB).
    """

    __slots__ = (
        "__weakref__",
        "_recent",
        "_twin_ref",
        "bad_fmax",
        "bad_work",
        "fit_cache",
        "n",
        "n_req",
        "nt",
        "num",
        "req_fmax",
        "req_idx",
        "req_names",
        "runs",
        "work_sorted",
    )

    def __init__(self) -> None:
        # no runs yet: zero-size buffers (shared by every new store, they hold no
        # value to change; the first append of runs makes buffers of its own)
        self.n = 0
        self.num = _NO_NUM
        self.nt = _NO_OBJECTS
        self.runs: AppRuns = {}
        self.bad_work = 0
        self.work_sorted = array("d")
        self.n_req = 0
        self.req_fmax = _NO_FLOATS
        self.req_idx = _NO_INDEX
        self.req_names = _NO_OBJECTS
        self.bad_fmax = False
        self.fit_cache: Any = None
        self._twin_ref: weakref.ref[_AppStore] | None = None
        self._recent: list[Any] | None = None

    @property
    def twin(self) -> _AppStore | None:
        """The store sharing this one's buffers (see the class docstring), or ``None``."""
        ref = self._twin_ref
        return None if ref is None else ref()

    def __getstate__(self) -> dict[str, Any]:
        # the twin itself, not the weak reference (which cannot be pickled or copied)
        weak = ("__weakref__", "_twin_ref", "_recent")
        state = {name: getattr(self, name) for name in self.__slots__ if name not in weak}
        state["twin"] = self.twin
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        twin = state.pop("twin")
        for name, value in state.items():
            setattr(self, name, value)
        self._twin_ref = None if twin is None else weakref.ref(twin)
        self._recent = None

    def append(
        self,
        num: np.ndarray,
        types: np.ndarray,
        info: PlatformInfo,
        facts: _BlockFacts | None = None,
        keep_twin: bool = False,
        decoded: DecodedRuns | None = None,
    ) -> AppRuns:
        """Append runs (a block of :func:`_run_blocks`); returns the new :attr:`runs`.

        ``facts``: :meth:`facts` of the block (computed here when ``None``), e.g. from
        another store given the same block with an equivalent ``info``.
        ``keep_twin``: the caller makes the twin :meth:`follow` this store right
        after (else a store with a twin first takes private buffers).
        ``decoded``: :func:`decode_block` of the block (made here when ``None``), kept
        for :meth:`decoded`."""
        if self._twin_ref is not None and not keep_twin:
            self._unshare()
        k = num.shape[1]
        n0 = self.n
        n1 = n0 + k
        if n1 > self.num.shape[1]:
            cap = _grown_capacity(self.num.shape[1], n1)
            grown = np.empty((num.shape[0], cap))
            nt = np.empty(cap, dtype=object)
            if n0:
                grown[:, :n0] = self.num[:, :n0]
                nt[:n0] = self.nt[:n0]
            self.num, self.nt = grown, nt
        buf = self.num
        buf[:, n0:n1] = num
        self.nt[n0:n1] = types
        self.n = n1
        runs = self.runs = StoreRuns(buf, self.nt, n1)
        if decoded is None:
            decoded = decode_block(num, types)
        self._recent = [n0, n1, decoded, 1]
        if facts is None:
            facts = self.facts(num, types, info, decoded)
        good_work, bad_work, req_rows, req_names, req_fmax, bad_fmax = facts
        work_sorted = self.work_sorted
        insort = bisect.insort
        for w in good_work:
            insort(work_sorted, w)
        self.bad_work += bad_work
        if bad_fmax:
            self.bad_fmax = True
        m = len(req_names)
        if m:
            j0 = self.n_req
            j1 = j0 + m
            if j1 > len(self.req_fmax):
                cap = _grown_capacity(len(self.req_fmax), j1)
                fmax = np.empty(cap)
                idx = np.empty(cap, dtype=np.int64)
                names = np.empty(cap, dtype=object)
                if j0:
                    fmax[:j0] = self.req_fmax[:j0]
                    idx[:j0] = self.req_idx[:j0]
                    names[:j0] = self.req_names[:j0]
                self.req_fmax, self.req_idx, self.req_names = fmax, idx, names
            if m == 1:
                self.req_fmax[j0] = req_fmax[0]
                self.req_idx[j0] = n0 + req_rows[0]
                self.req_names[j0] = req_names[0]
            else:
                if m == k:  # every run
                    self.req_idx[j0:j1] = np.arange(n0, n1)
                else:
                    self.req_idx[j0:j1] = [n0 + i for i in req_rows]
                self.req_fmax[j0:j1] = req_fmax
                req_names_buf = self.req_names
                for j, name in enumerate(req_names, j0):
                    req_names_buf[j] = name
            self.n_req = j1
        return runs

    def follow(self, other: _AppStore) -> None:
        """Become ``other``'s twin: the same runs and facts, on ``other``'s buffers
        (this store held the runs ``other`` held before its last append, and that
        append's block is this store's too)."""
        self.n = other.n
        self.num = other.num
        self.nt = other.nt
        self.runs = other.runs
        self.bad_work = other.bad_work
        self.work_sorted = other.work_sorted
        self.n_req = other.n_req
        self.req_fmax = other.req_fmax
        self.req_idx = other.req_idx
        self.req_names = other.req_names
        self.bad_fmax = other.bad_fmax
        self._twin_ref = weakref.ref(other)
        other._twin_ref = weakref.ref(self)
        recent = self._recent = other._recent
        if recent is not None:  # the last block, read by both
            recent[3] = 2

    def decoded(self, lo: int, hi: int) -> DecodedRuns:
        """:func:`decode_block` of runs ``lo .. hi - 1`` (read the lists, never change
        them): the last append's lists when that is the block asked for (the usual
        case: an incremental refit reads the runs added since the previous one), else
        converted from the buffers now (the same values). A read up to the last run
        counts as this reader's read of the last block: once each reader sharing the
        block has read it, the lists are dropped."""
        recent = self._recent
        if recent is not None and recent[1] == hi and lo <= recent[0]:
            recent[3] -= 1
            if recent[3] <= 0:  # every store sharing it has read it: drop the lists
                self._recent = None
                twin = self.twin
                if twin is not None and twin._recent is recent:
                    twin._recent = None
            if recent[0] == lo:
                return recent[2]
        return decode_block(self.num[:, lo:hi], self.nt[lo:hi])

    def _unshare(self) -> None:
        """Take private copies of the buffers shared with the twin and part from it
        (no copies when the twin is gone: the buffers are this store's alone)."""
        other = self.twin
        self._twin_ref = None
        if other is None:
            return
        if other.twin is self:
            other._twin_ref = None
        self.num = self.num.copy()
        self.nt = self.nt.copy()
        self.work_sorted = self.work_sorted[:]
        self.req_fmax = self.req_fmax.copy()
        self.req_idx = self.req_idx.copy()
        self.req_names = self.req_names.copy()

    @staticmethod
    def facts(
        num: np.ndarray, types: np.ndarray, info: PlatformInfo, decoded: DecodedRuns | None = None
    ) -> _BlockFacts:
        """What :meth:`append` adds to the incremental facts for a block of runs (the
        same for every store given the block with an equivalent ``info``):
        ``(usable instructions values in run order, count of the others, the block's
        columns of the runs with a usable request, their node type names, their top
        frequencies, whether one of these is not finite and non-zero)``.

        The tests of the class docstring on Python floats: ``0 < x < inf`` is
        ``isfinite(x) and x > 0`` (NaN fails both comparisons). ``decoded``: the
        block's :func:`decode_block` (made here when ``None``)."""
        if decoded is None:
            decoded = decode_block(num, types)
        freq, _, _, _, instr, req_n, req_t, names = decoded
        inf = math.inf
        good_work = [w for w in instr if 0 < w < inf]
        req_rows = [
            i for i, (rt, rn) in enumerate(zip(req_t, req_n)) if 0 < rt < inf and 1 <= rn < inf
        ]
        req_names: list[Any] = []
        req_fmax: list[float] = []
        bad_fmax = False
        if req_rows:
            known_fmax = info.known_fmax
            default = info.default
            isfinite = math.isfinite
            for i in req_rows:
                name = names[i]
                if not isinstance(name, str) and _is_na(name):
                    name = default
                fmax = known_fmax.get(name)
                if fmax is None:
                    fmax = info.row_fmax(name, freq[i])
                if fmax is None:  # the type's Fmax is not finite: PlatformInfo.fmax decides
                    bad_fmax = True
                    fmax = math.nan
                elif not (isfinite(fmax) and fmax != 0):  # f / Fmax is not 1 at Fmax
                    bad_fmax = True
                req_names.append(name)
                req_fmax.append(fmax)
        return good_work, len(instr) - len(good_work), req_rows, req_names, req_fmax, bad_fmax

    def requests(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(requested nodes, requested time, frequency, instructions)`` of the runs with a
        usable request, in run order (``n_req`` of them): views of the run buffers'
        rows when every run has one, else those rows gathered at ``req_idx``."""
        m = self.n_req
        if m == self.n:
            num = self.num
            return num[_I_REQ_N, :m], num[_I_REQ_T, :m], num[_I_FREQ, :m], num[_I_INSTR, :m]
        req_nodes, req_time, freq, instructions = self.num[np.ix_(_REQUEST_ROWS, self.req_idx[:m])]
        return req_nodes, req_time, freq, instructions

    def work(self) -> np.ndarray:
        """:func:`run_work` of the runs (the ``instructions`` column itself when all are usable)."""
        return self.runs["instructions"] if self.bad_work == 0 else run_work(self.runs)

    def median_work(self, work: np.ndarray) -> float:
        """``float(np.median(work))`` (``work`` from :meth:`work`)."""
        if self.bad_work == 0:
            s = self.work_sorted
            h = len(s) // 2
            # np.median: the middle value, or the mean of the two middle ones, (a + b) / 2
            return s[h] if len(s) % 2 else (s[h - 1] + s[h]) / 2
        return float(np.median(work))


@dataclass
class AppState:
    """Fitted state of one application: the predictor's model plus the work scaling."""

    model: Any
    rho: float  # geometric mean of (runtime at requested size and Fmax) / requested time
    median_work: float  # median instructions of the application's runs
    count: int  # runs seen


class PerApplicationPredictor(PendingRunsMixin, Predictor):
    """Base of the built-in predictors: per-application models on work-normalised runs.

    Subclasses implement :meth:`_fit_app` (model from one application's runs,
    or ``None`` when it cannot be fitted) and :meth:`_shape` (normalised time
    ``tau`` in s per unit of work and power per node in W at given
    configurations); scaling, fallback and incremental refits are done here
    (see the module docstring). Optional hooks: :meth:`_fit_global` (state
    shared by all applications, e.g. power constants from benchmarks) and
    :meth:`_fallback_power`.
    """

    min_observations = 1

    @property
    def accepts_run_batch(self) -> bool:  # type: ignore[override]
        return type(self).update is PerApplicationPredictor.update

    # ------------------------------------------------------------- hooks
    def _fit_global(self, observations: Observations) -> None:
        """Learn application-independent state (default: nothing)."""

    def _runs_added(self, apps: list[int]) -> None:
        """Called before the applications in ``apps`` are refitted (default: nothing)."""

    def _fit_app(
        self, app: int, runs: AppRuns, work: np.ndarray
    ) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _shape(
        self, app: int, model: Any, node_type: np.ndarray, nodes: np.ndarray, freq_ghz: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - abstract
        """``(tau s/unit of work, power W per node, reliable)`` at each configuration."""
        raise NotImplementedError

    def _uncertainty(self, app: int, model: Any, nodes: np.ndarray) -> np.ndarray | None:
        """Relative uncertainty of the time at each node count (``None``: the method has
        none; :attr:`Prediction.uncertainty` stays NaN). Scale-free, so per-job scaling
        keeps it."""
        return None

    def _fallback_power(self, names: np.ndarray, freq_ghz: np.ndarray) -> np.ndarray | None:
        """Power per node for applications without a model: the P-state full-load power at ``f``.

        (The contract's :meth:`Predictor.fallback` uses the power at ``Fmax``
        for every frequency; the P-state figure at ``f`` is as cheap and
        better at low frequencies.) Return ``None`` to use the contract's.
        """
        return self.info_.busy_power(names, freq_ghz)

    # ------------------------------------------------------------- contract
    def fit(self, observations: Observations) -> PerApplicationPredictor:
        """Fit every application of ``observations`` (and the global state). Returns self."""
        self._obs = observations
        self._pending: list[pd.DataFrame] = []
        self.platform_ = observations.platform
        self.info_ = PlatformInfo(observations.platform, observations.runs, observations.benchmarks)
        self._grid_metas: dict[Any, Any] = {}
        self._one_cell_cache: dict[Any, Any] = {}  # _one_cell_facts
        # application -> (owner, token, tables), least recently used first
        self._app_tables: dict[int, Any] = {}
        self._cells_of: dict[int, int] = {}  # application -> cells of its tables
        self._cells_total = 0
        self._tables_dropped = 0  # applications whose tables the budget dropped
        self._fit_global(observations)
        self.runs_: dict[int, AppRuns] = {}
        self._stores: dict[int, _AppStore] = {}
        for app, num, types in _run_blocks(observations.runs):
            store = self._stores[app] = _AppStore()
            self.runs_[app] = store.append(num, types, self.info_)
        self.state_: dict[int, AppState | None] = {}
        self._dirty: set[int] = set()
        apps = list(self.runs_)
        self._runs_added(apps)
        for app in apps:
            self._refit(app)
        return self

    def update(self, new_runs: pd.DataFrame | RunBatch) -> PerApplicationPredictor:
        """Append finished runs and refit only their applications. Returns self.

        ``new_runs``: a runs DataFrame or a :class:`~predictors.base.RunBatch`.
        """
        self._check_fitted()
        if len(new_runs) == 0:
            return self
        self._add_blocks(new_runs, _run_blocks(new_runs))
        return self

    def _add_blocks(
        self,
        new_runs: pd.DataFrame | RunBatch,
        blocks: list[tuple[int, np.ndarray, np.ndarray]],
        facts: list[_BlockFacts] | None = None,
    ) -> list[_BlockFacts]:
        """:meth:`update` of runs already split by :func:`_run_blocks` (``blocks``, read
        only: the stores copy them), so that two predictors given the same runs (the
        parts of a composite) split them once: :meth:`_append_blocks` then
        :meth:`_blocks_added`. Returns the facts used (see :meth:`_append_blocks`)."""
        used = self._append_blocks(blocks, facts)
        self._blocks_added(new_runs, [app for app, _, _ in blocks])
        return used

    def _append_blocks(
        self,
        blocks: list[tuple[int, np.ndarray, np.ndarray]],
        facts: list[_BlockFacts] | None = None,
        twin: PerApplicationPredictor | None = None,
    ) -> list[_BlockFacts]:
        """Append ``blocks`` to the applications' stores (no refit: see
        :meth:`_blocks_added`). ``facts``: the blocks' :meth:`_AppStore.facts` for
        this predictor's :attr:`info_` (e.g. returned by the other part's call,
        when both parts' platform facts are the same), else computed here.

        ``twin``: another predictor given the same blocks, whose platform facts are
        the same and whose stores hold the same runs as this one's (the parts of a
        composite, fitted on the same observations and updated together): its
        stores are appended too, as twins of this one's where they can be
        (:meth:`_AppStore.follow`: both empty, or twins already), else on their own
        (the same runs and facts either way). Returns the facts used."""
        stores, runs_, info = self._stores, self.runs_, self.info_
        used: list[_BlockFacts] = []
        for j, (app, num, types) in enumerate(blocks):
            store = stores.get(app)
            if store is None:
                store = stores[app] = _AppStore()
            decoded = decode_block(num, types)  # once per block: facts and stores share it
            f = facts[j] if facts is not None else _AppStore.facts(num, types, info, decoded)
            used.append(f)
            if twin is None:
                runs_[app] = store.append(num, types, info, f, decoded=decoded)
                continue
            other = twin._stores.get(app)
            if other is None:
                other = twin._stores[app] = _AppStore()
            if (store.twin is other and other.twin is store and store.n == other.n) or (
                store.n == 0 and other.n == 0 and store.twin is None and other.twin is None
            ):
                runs_[app] = store.append(num, types, info, f, keep_twin=True, decoded=decoded)
                other.follow(store)
                twin.runs_[app] = other.runs
            else:
                runs_[app] = store.append(num, types, info, f, decoded=decoded)
                twin.runs_[app] = other.append(num, types, twin.info_, f, decoded=decoded)
        return used

    def _blocks_added(self, new_runs: pd.DataFrame | RunBatch, apps: list[int]) -> None:
        """After :meth:`_append_blocks`: keep ``new_runs`` for :attr:`observations_`,
        then the refits of ``apps`` (deferred with :attr:`_lazy_refit`)."""
        self._queue_runs(new_runs)
        self._runs_added(apps)
        if self._lazy_refit:
            self._dirty.update(apps)
        else:
            for app in apps:
                self._refit(app)

    #: Refit an updated application only when its state is next read
    #: (:meth:`predict`, :meth:`predict_grid`, :meth:`model_of`; each refits
    #: only the applications it reads). Only for predictors whose applications
    #: are fitted independently of each other (then the result is the same as
    #: refitting at every update, unless the refit itself depends on the
    #: previous fit, like ADEPT's ``refit_tol``: then it is the same for the
    #: same sequence of questions, whichever of these methods asks them).
    _lazy_refit: bool = False

    def _flush(self, app: int | None = None) -> None:
        """Do the refits :meth:`update` deferred (of ``app``, or of every application)."""
        dirty = self.__dict__.get("_dirty")
        if not dirty:
            return
        if app is None:
            for a in sorted(dirty):
                self._refit(a)
            dirty.clear()
        elif app in dirty:
            dirty.discard(app)
            self._refit(app)

    def _refit(self, app: int) -> None:
        store = self._stores[app]
        runs = store.runs
        count = store.n
        if count < self.min_observations:
            self.state_[app] = None
            return
        work = store.work()
        try:
            model = self._fit_app(app, runs, work)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:
            log.debug(
                "%s: fit of application %s failed (%s); using the fallback", self.name, app, exc
            )
            model = None
        if model is None:
            self.state_[app] = None
            return
        rho = self._request_ratio(app, model, store, work) if store.n_req else math.nan
        self.state_[app] = AppState(model, rho, store.median_work(work), count)

    def _request_ratio(self, app: int, model: Any, store: _AppStore, work: np.ndarray) -> float:
        """The request ratio ``rho`` of one application (module docstring), over the runs
        with a usable request (``store.n_req > 0`` of them)."""
        m = store.n_req
        req_nodes, req_time, freq, instructions = store.requests()
        names = store.req_names[:m].copy()
        fmax = store.req_fmax[:m].copy()
        if store.bad_fmax:
            fmax = self.info_.fmax(names, freq.copy())
        w = instructions if store.bad_work == 0 else work[store.req_idx[:m]]
        with np.errstate(all="ignore"):
            tau_ref, _, _ = self._shape(app, model, names, req_nodes.copy(), fmax)
            return geometric_mean(w * tau_ref / req_time)

    def predict(self, queries: Queries) -> Prediction:
        """Time (s), power per node (W), energy of the job (J) and reliability per query row."""
        self._check_fitted()
        n = len(queries)
        if n and self.__dict__.get("_dirty"):
            # deferred refits of the queried applications only (see _lazy_refit): the
            # same refits as predict_grid / grid_shape make for the same questions
            for app in np.unique(queries.application).tolist():
                self._flush(int(app))
        fb = self.fallback(queries, self.platform_)
        names = self.info_.names(queries)
        fb_power = self._fallback_power(names, queries.freq_ghz)
        time = fb.time_s.copy()
        power = fb.power_w.copy() if fb_power is None else np.asarray(fb_power, dtype=float).copy()
        reliable = np.zeros(n, dtype=bool)
        if n == 0:
            return Prediction(time, power, time * power, reliable)
        has_unc = type(self)._uncertainty is not PerApplicationPredictor._uncertainty
        unc = np.full(n, np.nan) if has_unc else None
        apps = queries.application
        req_t = (
            np.asarray(queries.requested_time_s, dtype=float)
            if queries.requested_time_s is not None
            else np.full(n, np.nan)
        )
        req_n = (
            np.asarray(queries.requested_nodes, dtype=float)
            if queries.requested_nodes is not None
            else np.full(n, np.nan)
        )
        nodes = queries.nodes.astype(float)
        freq = queries.freq_ghz
        _, inverse = np.unique(apps, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.flatnonzero(np.diff(inverse[order])) + 1
        for idx in np.split(order, bounds):
            app = int(apps[idx[0]])
            state = self.state_.get(app)
            if state is None:
                continue
            nt = names[idx]
            with np.errstate(all="ignore"):
                tau, pw, rel = self._shape(app, state.model, nt, nodes[idx], freq[idx])
                rt, rn = req_t[idx], req_n[idx]
                use_ref = (
                    np.isfinite(rt)
                    & (rt > 0)
                    & np.isfinite(rn)
                    & (rn >= 1)
                    & np.isfinite(state.rho)
                )
                scale = np.full(len(idx), state.median_work)
                if use_ref.any():
                    fmax = self.info_.fmax(nt[use_ref], freq[idx][use_ref])
                    tau_ref, _, _ = self._shape(app, state.model, nt[use_ref], rn[use_ref], fmax)
                    # a model whose time at the reference is not positive gives no scale
                    # (the fallback answers; a negative time there times a negative
                    # time elsewhere would pass for a prediction): as _job_scale
                    scale[use_ref] = np.where(
                        tau_ref > 0, rt[use_ref] * state.rho / tau_ref, np.nan
                    )
                t = tau * scale
            good = np.isfinite(t) & (t > 0) & np.isfinite(pw) & (pw > 0)
            sel = idx[good]
            time[sel] = t[good]
            power[sel] = pw[good]
            reliable[sel] = np.asarray(rel, dtype=bool)[good] if np.ndim(rel) else bool(rel)
            if unc is not None:
                u = self._uncertainty(app, state.model, nodes[idx])
                if u is not None:
                    unc[sel] = np.asarray(u, dtype=np.float64)[good]
        energy = time * power * nodes
        return Prediction(time, power, energy, reliable, unc)

    # ------------------------------------------------------------- grid fast path
    #: Whether :meth:`_shape` is elementwise and depends only on the model, the
    #: row's configuration and :meth:`_grid_token` (enables :meth:`predict_grid`).
    _grid_ok: bool = False

    def _grid_token(self, state: AppState) -> Any:
        """Anything besides the application's state that :meth:`_shape` depends on."""
        return None

    def _grid_meta(self, name: str, freqs: np.ndarray) -> tuple[Any, ...] | None:
        """Per (node type, frequency set), cached: ``(count, P-state columns, fallback
        power per frequency, Fmax, column of Fmax or -1)``; ``None`` when a frequency
        is not a P-state of the type or the type is unknown."""
        key = (name, freqs.tobytes())
        cache = self._grid_metas
        got = cache.get(key, False)
        if got is not False:
            return got
        info = self.info_.get(name)
        count = None
        if info is not None and self.platform_ is not None:
            for t in self.platform_.node_types:
                if str(t.name) == name:
                    count = int(t.count)
        meta: tuple[Any, ...] | None = None
        if info is not None and count is not None:
            pidx = {float(f): k for k, f in enumerate(info.freqs_ghz.tolist())}
            fl = [float(f) for f in freqs.tolist()]
            if all(f in pidx for f in fl):
                names = np.full(len(freqs), name, dtype=object)
                fb = self._fallback_power(names, freqs)
                if fb is None:
                    q = Queries(
                        application=np.zeros(len(freqs), dtype=np.int64),
                        nodes=np.ones(len(freqs), dtype=np.int64),
                        freq_ghz=freqs,
                        node_type=names,
                    )
                    fb = self.fallback(q, self.platform_).power_w
                fmax = float(info.freqs_ghz[-1])
                top = fl.index(fmax) if fmax in fl else -1
                meta = (
                    count,
                    np.asarray(freqs, dtype=np.float64).copy(),
                    np.asarray(fb, float),
                    fmax,
                    top,
                )
        cache[key] = meta
        return meta

    #: Whether :meth:`_shape` depends only on ``state.model`` (and the grid
    #: token): then the tables, and the :class:`GridShape` objects made from
    #: them, survive a refit that keeps the model object (ADEPT's cached fit).
    _tables_follow_model: bool = False

    #: Shape tables kept over all applications, in table cells (node counts x
    #: frequencies, summed over the applications' tables): beyond it the least
    #: recently used applications' tables (and the shapes made from them) are
    #: dropped, and computed again when next asked for (the same values). A cell
    #: costs 8-17 bytes in a predictor's tables, so the cache stays within a few
    #: hundred MB whatever the platform's size and the number of applications
    #: (about 480 applications of CEA-Curie's 5,544 nodes x 5 clocks in a
    #: composite's node part, which counts its own tables and the frequency
    #: part's shapes the composite keeps; every one of SDSC-SP2's). On CEA-Curie
    #: (adept+fluid, one run each, quiet machine) keeping the tables of about 65,
    #: 260 and 520 applications cost 12-19 %, about 1.5 % and no measurable CPU
    #: time more than no bound (the dropped applications come back: shapes and
    #: picks made again), for peak memories of 1.11, 1.23 and 1.43 GB against
    #: 2.96 GB, measured when a composite's combined shapes held tables there;
    #: with 16M cells that replay drops 4,808 applications' tables and peaks at
    #: 720 MB (``benchmarks/bench_policies.py --trace curie``).
    table_cells_budget: int = 16_000_000

    #: Applications whose shape tables are kept, whatever their size (the least
    #: recently used beyond it are dropped as under :attr:`table_cells_budget`).
    #: A replay asks for the tables of the applications in the queue, a few dozen
    #: at a time, while a trace has thousands (CTC-SP2: 3,080 in adept+fluid's
    #: parts, 11 million cells, about 60 MB). Keeping 256 gives the same schedule
    #: (``tests/predictors/test_bounded_tables.py``) in no measurably more CPU
    #: time, for peak memories of CTC-SP2 297 MB instead of 354 MB, SDSC-SP2 228
    #: instead of 236 and CEA-Curie 675 instead of 748 (where the cell budget
    #: already bound the parts at 481 and 577 applications).
    table_apps_budget: int = 256

    def _grid_tables(self, app: int, state: AppState) -> dict[Any, Any]:
        """Per-application cache of shape tables, reset when the state (or, with
        :attr:`_tables_follow_model`, the model) changes; the application becomes
        the most recently used (:attr:`table_cells_budget`)."""
        token = self._grid_token(state)
        owner = state.model if self._tables_follow_model else state
        held = self._app_tables
        got = held.pop(app, None)
        if got is None or got[0] is not owner or got[1] != token:
            if got is not None:
                self._forget_cells(app)
            got = (owner, token, {})
        held[app] = got  # last: the most recently used
        return got[2]

    def _forget_cells(self, app: int) -> None:
        """Take the application's tables out of the cell count (they are being dropped)."""
        self._cells_total -= self._cells_of.pop(app, 0)

    def _count_cells(self, app: int, cells: int) -> None:
        """Count a new table of ``app`` (``cells`` cells); drop the least recently used
        applications' tables while the count is over :attr:`table_cells_budget`."""
        cells_of = self._cells_of
        cells_of[app] = cells_of.get(app, 0) + cells
        total = self._cells_total + cells
        held = self._app_tables
        budget_cells, budget_apps = self.table_cells_budget, self.table_apps_budget
        while (total > budget_cells or len(held) > budget_apps) and len(held) > 1:
            oldest = next(iter(held))
            if oldest == app:  # (only when app was not touched last: keep it)
                break
            del held[oldest]
            total -= cells_of.pop(oldest, 0)
            self._tables_dropped += 1
        self._cells_total = total

    def _table(
        self, app: int, state: AppState, tables: dict[Any, Any], name: str, meta: tuple[Any, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(tau, power, reliable)`` at every ``n = 1..count`` x the frequencies of
        ``meta`` (rows ``n - 1``), computed once per application state
        (:meth:`_compute_table`)."""
        return self._table_entry(app, state, tables, name, meta)[:3]

    def _table_entry(
        self, app: int, state: AppState, tables: dict[Any, Any], name: str, meta: tuple[Any, ...]
    ) -> ShapeTable:
        """:meth:`_table` and the table's :data:`TableBounds` when :meth:`_compute_table`
        gave them (``None``: unknown)."""
        key = (name, meta[1].tobytes())
        got = tables.get(key)
        if got is None:
            got = tables[key] = self._compute_table(app, state, name, meta)
            held = self._app_tables.get(app)
            if held is not None and held[2] is tables:
                self._count_cells(app, int(meta[0]) * len(meta[1]))
        return got

    def _compute_table(
        self, app: int, state: AppState, name: str, meta: tuple[Any, ...]
    ) -> ShapeTable:
        """:meth:`_table`'s arrays from :meth:`_shape` on every cell (bounds not known);
        subclasses may compute the same values more directly, and give the table's
        :data:`TableBounds` (e.g. :func:`outer_table_bounds`)."""
        count, freqs = meta[0], meta[1]
        F = len(freqs)
        nodes = np.repeat(np.arange(1, count + 1, dtype=np.float64), F)
        freq = np.tile(freqs, count)
        names = np.full(len(nodes), name, dtype=object)
        with np.errstate(all="ignore"):
            tau, pw, rel = self._shape(app, state.model, names, nodes, freq)
        return (
            np.asarray(tau, dtype=np.float64).reshape(count, F),
            np.asarray(pw, dtype=np.float64).reshape(count, F),
            np.broadcast_to(np.asarray(rel, dtype=bool), nodes.shape).reshape(count, F),
            None,
        )

    def _tau_ref(
        self, app: int, state: AppState, tables: dict[Any, Any], name: str, rn: float, fmax: float
    ) -> float:
        """``tau`` at the requested size and ``Fmax`` (cached per application state)."""
        key = (name, rn)
        got = tables.get(key)
        if got is None:
            with np.errstate(all="ignore"):
                tau, _, _ = self._shape(
                    app,
                    state.model,
                    np.array([name], dtype=object),
                    np.array([rn], dtype=np.float64),
                    np.array([fmax], dtype=np.float64),
                )
            got = tables[key] = tau[0]
        return got

    def predict_grid(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`predict` of one job on the grid ``sizes x freqs`` (fast path).

        Returns ``(time_s, power_w, energy_j, reliable)`` of shape
        ``(len(sizes), len(freqs))``, equal to :meth:`predict` on the
        flattened grid (queries of one application and node type with the
        job's requested size and time), or ``None`` when the fast path does
        not apply (sizes outside ``1..count``, a frequency that is not a
        P-state, an unknown node type; the caller then uses :meth:`predict`).
        Per application the shape at every ``(n, f)`` is tabulated once per
        fitted state (tables dropped at the next refit); a call is then a few
        array lookups scaled by the job's factor.
        """
        if "_obs" not in self.__dict__:
            self._check_fitted()
        if not self._grid_ok:
            return None
        name = self.info_.default if node_type is None else str(node_type)
        meta = self._grid_meta(name, freqs)
        if meta is None:
            return None
        count, _, fb_pw, fmax, top = meta
        if len(sizes) == 0 or int(sizes.min()) < 1 or int(sizes.max()) > count:
            return None
        app = int(application)
        if self._dirty:
            self._flush(app)
        state = self.state_.get(app)
        nodes = sizes.astype(np.float64)[:, None]
        rt, rn = float(requested_time_s), float(requested_nodes)
        if state is None:
            time = self._fb_time(nodes, freqs, fmax, rt, rn)
            power = np.broadcast_to(fb_pw, time.shape)
            return time, power, time * power * nodes, np.zeros(time.shape, dtype=bool)
        tables = self._grid_tables(app, state)
        tau_t, pw_t, rel_t = self._table(app, state, tables, name, meta)
        rows = sizes - 1
        tau, pw, rel = tau_t[rows], pw_t[rows], rel_t[rows]
        tau_top = tau_t[:, top] if top >= 0 else None
        scale = self._job_scale(app, state, tables, name, meta, tau_top, rt, rn)
        with np.errstate(all="ignore"):
            t = tau * scale
            good = np.isfinite(t) & (t > 0) & np.isfinite(pw) & (pw > 0)
        if good.all():
            time, power = t, pw
        else:
            fb_t = self._fb_time(nodes, freqs, fmax, rt, rn)
            time = np.where(good, t, fb_t)
            power = np.where(good, pw, fb_pw[None, :])
            rel = rel & good
        return time, power, time * power * nodes, rel

    def predict_one(
        self,
        application: int,
        node_type: str | None,
        nodes: int,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[float, float, float, bool] | None:
        """:meth:`predict_grid` of the one-cell grid ``[nodes] x freqs`` (``freqs``: one
        P-state) as Python values ``(time_s, power_w, energy_j, reliable)``; ``None``
        when :meth:`predict_grid` is. An application without a model (a chooser's
        rigid decision for a new application) is answered without arrays
        (:meth:`_fallback_one`, the same values) unless a subclass answers
        :meth:`predict_grid` its own way."""
        if "_obs" not in self.__dict__:
            self._check_fitted()
        n = int(nodes)
        own_grid = type(self).predict_grid is PerApplicationPredictor.predict_grid
        if own_grid and n == nodes and len(freqs) == 1:
            name = self.info_.default if node_type is None else str(node_type)
            rt, rn = float(requested_time_s), float(requested_nodes)
            got = self._fallback_one(application, name, freqs, n, rt, rn)
            if got is not None:
                time, power = got
                return time, power, time * power * n, False
        return grid_cell(
            self.predict_grid(
                application, node_type, np.array([nodes]), freqs, requested_nodes, requested_time_s
            )
        )

    def grid_shape(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[GridShape, float] | None:
        """:meth:`predict_grid` split into a cached shape and the job's scale.

        Returns ``(shape, scale)`` with ``predict_grid(...)`` equal to
        ``scale * shape.time`` etc. (see :class:`~predictors.base.GridShape`),
        or ``None`` when the job's grid involves the fallback (no model for
        the application, a non-finite value, or the cases where
        :meth:`predict_grid` returns ``None``). The shape object is the same
        for every job of the application with the same node type, sizes,
        frequencies until a refit changes the application's tables, so callers
        can cache decisions that do not depend on the scale on it.
        """
        got = self._shape_entry(application, node_type, sizes, freqs)
        if got is None:
            return None
        shape, ref_col, meta, name, app, state, tables = got
        rt, rn = float(requested_time_s), float(requested_nodes)
        scale = self._job_scale(app, state, tables, name, meta, ref_col, rt, rn)
        if not shape.usable(scale):
            return None
        return shape, scale

    def _shape_entry(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        sizes_key: bytes | None = None,
    ) -> tuple[GridShape, np.ndarray | None, tuple[Any, ...], str, int, AppState, Any] | None:
        """The job-independent part of :meth:`grid_shape`: ``(shape, tau at every n and
        Fmax (a column of the table, read only) or None, grid meta, node type name,
        application, state, tables)``, or
        ``None`` when the application has no shape (then :meth:`grid_shape` is
        ``None`` for every job). Does the application's deferred refit first, as
        :meth:`grid_shape` does. ``sizes_key``: :meth:`_sizes_bytes` when the caller
        has it (one bytes object hashes once)."""
        if not self._grid_ok or "_obs" not in self.__dict__:
            return None
        name = self.info_.default if node_type is None else str(node_type)
        meta = self._grid_meta(name, freqs)
        if meta is None:
            return None
        count, _, _, _, top = meta
        app = int(application)
        if self._dirty:
            self._flush(app)
        state = self.state_.get(app)
        if state is None:
            return None
        tables = self._grid_tables(app, state)
        # meta is cached per (node type, frequencies): its id names both
        if sizes_key is None:
            sizes_key = self._sizes_bytes(sizes)
        key = ("shape", id(meta), sizes.dtype, sizes_key)
        entry = tables.get(key)
        if entry is None:
            shape = None
            ref_col: np.ndarray | None = None
            rows = self._size_rows(sizes, sizes_key, count)
            if rows is not False:
                tau_t, pw_t, rel_t, bounds = self._table_entry(app, state, tables, name, meta)
                if rows is None:  # every n = 1..count: the table itself (no copy)
                    tau, pw, rel = tau_t, pw_t, rel_t
                else:
                    tau, pw, rel = tau_t[rows], pw_t[rows], rel_t[rows]
                    bounds = None
                # every tau and power finite and positive (min / max propagate NaN)
                if bounds is not None:  # the whole table's, known without reading it
                    tau_min, tau_max, pw_min, pw_max = bounds
                    usable = tau_min > 0 and tau_max < math.inf and pw_min > 0
                    usable = usable and pw_max < math.inf
                else:
                    tau_max = _MAX(tau, None)
                    usable = bool(
                        _MIN(tau, None) > 0
                        and tau_max < math.inf
                        and _MIN(pw, None) > 0
                        and _MAX(pw, None) < math.inf
                    )
                if usable:
                    shape = GridShape(tau, pw, rel, float(tau_max))
                    if top >= 0:  # tau at every n and Fmax: the reference of a job's scale
                        ref_col = tau_t[:, top]
            entry = tables[key] = (shape, ref_col)
        shape, ref_col = entry
        if shape is None:
            return None
        return shape, ref_col, meta, name, app, state, tables

    def _sizes_bytes(self, sizes: np.ndarray) -> bytes:
        """``sizes.tobytes()``, the sizes' part of a table key. For a
        :func:`frozen_array` (the chooser's candidate sizes) one bytes object per
        array, kept: Python hashes it once, and lookups find it by identity (every
        node count of the type is 44 KB on CEA-Curie, and hashing a new copy at
        every new shape cost more than the rest of its bookkeeping)."""
        if not frozen_array(sizes):
            return sizes.tobytes()
        kept: dict[int, tuple[np.ndarray, bytes]] | None = self.__dict__.get("_sizes_keys")
        if kept is None:
            kept = self.__dict__["_sizes_keys"] = {}
        got = kept.get(id(sizes))
        if got is None or got[0] is not sizes:
            if len(kept) >= 256:  # bounded (callers ask a handful of size sets)
                kept.clear()
            got = kept[id(sizes)] = (sizes, sizes.tobytes())
        return got[1]

    def _size_rows(self, sizes: np.ndarray, sizes_key: bytes, count: int) -> Any:
        """The table rows of a grid's ``sizes`` (``sizes - 1``), cached per sizes and
        ``count``: ``None`` when they are every row ``0..count-1`` in order (then the
        table itself is the grid), ``False`` when ``sizes`` is empty or outside
        ``1..count`` (no shape)."""
        cache: dict[tuple[int, np.dtype[Any], bytes], Any] | None = self.__dict__.get("_rows_cache")
        if cache is None:
            cache = {}
            self.__dict__["_rows_cache"] = cache
        key = (count, sizes.dtype, sizes_key)
        got = cache.get(key, _MISSING)
        if got is _MISSING:
            if len(sizes) and int(sizes.min()) >= 1 and int(sizes.max()) <= count:
                rows = sizes - 1
                full = len(rows) == count and bool((rows == np.arange(count)).all())
                got = None if full else rows
            else:
                got = False
            if len(cache) >= 256:  # bounded (callers ask a handful of size sets)
                cache.clear()
            cache[key] = got
        return got

    def _current_tables(self, app: int) -> tuple[AppState, dict[Any, Any]] | None:
        """After the application's deferred refit: its state and the tables
        :meth:`_grid_tables` would return, when that cache is current (it keeps
        its shapes); ``None`` when the application has no state or its tables
        would be reset (a fast path then takes the general one)."""
        if app in self._dirty:
            self._flush(app)
        state = self.state_.get(app)
        if state is None:
            return None
        held = self._app_tables
        got = held.get(app)
        if got is None or got[0] is not (state.model if self._tables_follow_model else state):
            return None
        if got[1] != self._grid_token(state):
            return None
        held[app] = held.pop(app)  # the most recently used (table_cells_budget)
        return state, got[2]

    def _job_scale(
        self,
        app: int,
        state: AppState,
        tables: dict[Any, Any],
        name: str,
        meta: tuple[Any, ...],
        tau_top: Any,
        rt: float,
        rn: float,
    ) -> float:
        """A job's scale (see the module docstring): ``rt * rho / tau(rn, Fmax)``
        with a requested time and size, else the median work; NaN when
        ``tau(rn, Fmax)`` is not positive. ``tau_top``: ``tau`` at every
        ``n = 1..count`` and ``Fmax`` (indexable, ``None`` when ``Fmax`` is not
        a column of the grid)."""
        if rt == rt and rt > 0 and rn == rn and rn >= 1 and math.isfinite(state.rho):
            count, fmax = meta[0], meta[3]
            if tau_top is not None and rn <= count and rn == int(rn):  # rn finite first
                tau_ref = float(tau_top[int(rn) - 1])
            else:
                tau_ref = float(self._tau_ref(app, state, tables, name, rn, fmax))
            return rt * state.rho / tau_ref if tau_ref > 0 else math.nan
        return float(state.median_work)

    def _fallback_one(
        self, application: int, name: str, freqs: np.ndarray, n: int, rt: float, rn: float
    ) -> tuple[float, float] | None:
        """:meth:`predict_grid` of the one-cell grid ``[n] x freqs`` (``len(freqs) == 1``)
        when the application has no model: ``(time_s, power_w)`` of the fallback
        (not reliable), in plain Python (:func:`fallback_cell_time`, the same
        operations as :meth:`_fb_time`). ``None`` when the application has a model
        or :meth:`predict_grid` would not answer with its fallback (then ask
        :meth:`predict_grid`). Does the application's deferred refit first, as
        :meth:`predict_grid` does."""
        facts = self._one_cell_facts(name, freqs)
        if facts is None:
            return None
        count, fmax_over_f, power_w = facts
        if not 1 <= n <= count or self._has_model(int(application)):
            return None
        return fallback_cell_time(rt, rn, n, fmax_over_f), power_w

    def _one_cell_facts(self, name: str, freqs: np.ndarray) -> tuple[int, float, float] | None:
        """What :meth:`_fallback_one` reads of one node type and P-state (``freqs``, one
        value), kept per (node type, frequency): ``(node count, Fmax / f, fallback
        power at f)`` as Python values (``Fmax``: ``f`` when not finite); ``None``
        when :meth:`predict_grid` has no fallback answer there (no grid fast path, a
        frequency that is not a P-state or is 0, an unknown node type)."""
        if not (self._grid_ok and "_obs" in self.__dict__ and len(freqs) == 1):
            return None  # no grid fast path (or not fitted: fit makes the cache)
        key = (name, freqs.tobytes())
        cache = self._one_cell_cache
        got = cache.get(key, _MISSING)
        if got is _MISSING:
            got = None
            meta = self._grid_meta(name, freqs)
            if meta is not None:
                count, f_col, fb_pw, fmax = meta[0], meta[1], meta[2], meta[3]
                f = float(f_col[0])
                if f != 0.0:  # (numpy would divide by zero)
                    fm = fmax if math.isfinite(fmax) else f
                    got = (int(count), fm / f, float(fb_pw[0]))
            cache[key] = got
        return got

    def _has_model(self, app: int) -> bool:
        """Whether the application has a model, after its deferred refit (what
        :meth:`predict_grid` reads)."""
        if self._dirty:
            self._flush(app)
        return self.state_.get(app) is not None

    @staticmethod
    def _fb_time(
        nodes: np.ndarray, freqs: np.ndarray, fmax: float, rt: float, rn: float
    ) -> np.ndarray:
        """:meth:`Predictor.fallback`'s time on a grid (``nodes`` a column)."""
        req_t = rt if (math.isfinite(rt) and rt > 0) else 3600.0
        req_n = rn if rn == rn else nodes
        fm = fmax if math.isfinite(fmax) else freqs
        return req_t * req_n / np.maximum(nodes, 1) * (fm / freqs)

    def model_of(self, application: int) -> Any:
        """The fitted model of one application (``None`` when it falls back)."""
        self._check_fitted()
        self._flush(int(application))
        state = self.state_.get(int(application))
        return None if state is None else state.model


# --------------------------------------------------------------------------- baselines


class RequestedPredictor(Predictor):
    """The rigid baseline: what the trace says, at the top frequency.

    Time: the contract's fallback formula (:meth:`Predictor.fallback`): the
    requested time (3600 s when missing) at the requested size, scaled by
    perfect speedup ``requested_nodes / n`` and by ``Fmax / f``. At the
    requested size and ``Fmax`` this is exactly the user's estimate. Power:
    the node type's full-load P-state power at ``f`` (linear interpolation
    between P-states; 200 W when the platform is unknown). Rows are reliable
    where the trace has a requested time. Learns nothing from runs.
    """

    name = "requested"
    learns_from_runs = False

    def __init__(self) -> None:
        pass

    def fit(self, observations: Observations) -> RequestedPredictor:
        self.observations_ = observations
        self.info_ = PlatformInfo(observations.platform, observations.runs, observations.benchmarks)
        return self

    def update(self, new_runs: pd.DataFrame) -> RequestedPredictor:
        """Nothing to learn: runs are ignored."""
        self._check_fitted()
        return self

    def predict_grid(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`predict` of one job on the grid ``sizes x freqs`` (the policies' fast
        path), the same values bit for bit: the fallback's time on a grid
        (:meth:`PerApplicationPredictor._fb_time`, the same operations per cell) and
        the P-state power once per clock. ``None`` (the caller then uses
        :meth:`predict`) for a node type the platform does not have."""
        self._check_fitted()
        platform = self.observations_.platform
        rn, rt = float(requested_nodes), float(requested_time_s)
        if platform is None:
            return None
        name = self.info_.default if node_type is None else str(node_type)
        fmax = next((float(t.fmax_ghz) for t in platform.node_types if t.name == name), None)
        info = self.info_.get(name)
        if fmax is None or info is None:
            return None
        nodes = sizes.astype(np.float64)[:, None]
        time = PerApplicationPredictor._fb_time(nodes, freqs, fmax, rt, rn)
        power = np.broadcast_to(info.busy_power(freqs), time.shape)
        reliable = np.full(time.shape, math.isfinite(rt) and rt > 0)
        return time, power, time * power * nodes, reliable

    def predict(self, queries: Queries) -> Prediction:
        self._check_fitted()
        fb = self.fallback(queries, self.observations_.platform)
        names = self.info_.names(queries)
        power = self.info_.busy_power(names, queries.freq_ghz)
        req_t = (
            np.asarray(queries.requested_time_s, dtype=float)
            if queries.requested_time_s is not None
            else np.full(len(queries), np.nan)
        )
        reliable = np.isfinite(req_t) & (req_t > 0)
        return Prediction(fb.time_s, power, fb.time_s * power * queries.nodes, reliable)


class OraclePredictor(Predictor):
    """The ground truth itself: the upper bound of any predictor-driven policy.

    Reads ``truth.evaluate(job_index, node_type, nodes, freq_ghz, cores)`` (a
    :class:`workloads.truth.GroundTruth`) for every query, so the queries must
    carry ``job_index`` (the job's row in the trace); without it
    :class:`~energysched.errors.ConfigError` is raised. ``platform`` (duck
    typed, with ``node_types``) gives the node type objects; by default the
    observations' platform.
    """

    name = "oracle"
    learns_from_runs = False
    #: predictions depend on the cores per node of a query (the truth's)
    models_cores = True
    #: the answers depend on the job itself (its hidden work), not only on the
    #: question: :meth:`grid_shape` takes the job's row (``job_index``), and policies
    #: ask it for every job instead of reusing an answer to the same question
    grid_shape_per_job = True
    #: the shapes kept (:meth:`grid_shape`) hold at most this many cells; beyond, the
    #: kept shapes are dropped and made again when asked
    shape_cells_budget = 2_000_000

    def __init__(self, truth: Any = None, platform: Any = None) -> None:
        self.truth = truth
        self.platform = platform

    def fit(self, observations: Observations) -> OraclePredictor:
        if self.truth is None:
            raise ConfigError(
                "oracle.truth", "the oracle needs the ground truth: OraclePredictor(truth)"
            )
        self.observations_ = observations
        self.platform_ = self.platform if self.platform is not None else observations.platform
        if self.platform_ is None:
            raise ConfigError(
                "oracle.platform", "the oracle needs a platform (none in the observations)"
            )
        from workloads.truth import get_truth_tags

        tags = get_truth_tags(self.truth)
        self._work_grid = tags.work_grid
        self._evaluate_one = tags.evaluate_one
        self._types = {str(t.name): t for t in self.platform_.node_types}
        self._shapes: dict[tuple[Any, ...], GridShape | None] = {}
        self._shape_cells = 0
        return self

    def update(self, new_runs: pd.DataFrame) -> OraclePredictor:
        """Nothing to learn: the oracle already knows."""
        self._check_fitted()
        return self

    def predict(self, queries: Queries) -> Prediction:
        self._check_fitted()
        n = len(queries)
        if queries.job_index is None:
            raise ConfigError(
                "queries.job_index",
                "the oracle reads the ground truth per job: build Queries with job_index "
                "(the job's row in the trace)",
            )
        default = next(iter(self._types))
        names = (
            np.full(n, default, dtype=object)
            if queries.node_type is None
            else np.asarray(queries.node_type, dtype=object)
        )
        time = np.empty(n)
        power = np.empty(n)
        job = np.asarray(queries.job_index, dtype=np.int64)
        for name in _unique_objects(names):
            tp = self._node_type(str(name))  # (an unknown name is an error)
            m = names == name
            cores = None if queries.cores is None else np.asarray(queries.cores)[m]
            t, p = self.truth.evaluate(job[m], tp, queries.nodes[m], queries.freq_ghz[m], cores)
            time[m] = t
            power[m] = p
        return Prediction(
            time, power, time * power * queries.nodes, np.ones(n, dtype=bool), np.zeros(n)
        )

    def grid_shape(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
        *,
        job_index: int | None = None,
    ) -> tuple[GridShape, float] | None:
        """The truth on job ``job_index``'s ``sizes x freqs`` grid as a shape (one unit
        of its application's work, all cores: the truth's ``work_grid``) and a scale
        (the job's work), which is :meth:`predict` on that grid up to the rounding of
        the product. The shape is kept per application, node type and grid (the
        truth does not change). ``None`` (the policy then calls :meth:`predict`)
        without ``job_index``, when the truth does not declare ``work_grid``
        (:class:`~workloads.truth.TruthTags`), for a hybrid application, a job
        without work (no runtime or processors in the trace) or a non-finite value.
        ``requested_nodes`` and ``requested_time_s`` are not read: the oracle
        knows."""
        self._check_fitted()
        if job_index is None or not self._work_grid:
            return None
        app, work = self.truth.job_work(job_index)
        if app != application:
            raise ValueError(
                f"job {job_index} is of application {app} in the ground truth, not {application}"
            )
        name = next(iter(self._types)) if node_type is None else str(node_type)
        self._node_type(name)  # (an unknown name is an error, as in predict)
        key = (app, name, sizes.tobytes(), freqs.tobytes())
        shapes = self._shapes
        if key in shapes:
            shape = shapes[key]
        else:
            shape = self._new_shape(app, name, sizes, freqs)
            cells = sizes.size * freqs.size
            if self._shape_cells + cells > self.shape_cells_budget:
                shapes.clear()
                self._shape_cells = 0
            shapes[key] = shape
            self._shape_cells += cells
        if shape is None or not shape.usable(work):
            return None
        return shape, work

    def job_time_s(
        self, job_index: int, node_type: str, nodes: int, freq_ghz: float
    ) -> float | None:
        """The time job ``job_index`` runs on ``nodes`` nodes of ``node_type`` at
        ``freq_ghz`` (all cores): what the engine will run it for (the truth's
        ``evaluate_one`` where it declares one, as the engine uses it; else
        ``evaluate``). A policy that picked the job's configuration on a
        :meth:`grid_shape` plans with this time, not with ``work x shape`` (which may
        round one ulp lower and have the job killed at its limit); the power is the
        shape's, which does not depend on the job."""
        tp = self._node_type(node_type)
        if self._evaluate_one:
            got = self.truth.evaluate_one(job_index, tp, nodes, freq_ghz)
            if got is not None:
                return float(got[0])
        time, _ = self.truth.evaluate(np.array([job_index]), tp, [nodes], [freq_ghz])
        return float(time[0])

    def _node_type(self, name: str) -> Any:
        types = self._types
        if name not in types:
            raise ConfigError(
                "queries.node_type", f"unknown node type {name!r}; known: {', '.join(types)}"
            )
        return types[name]

    def _new_shape(
        self, application: int, node_type: str, sizes: np.ndarray, freqs: np.ndarray
    ) -> GridShape | None:
        got = self.truth.work_grid(application, node_type, sizes, freqs)
        if got is None:
            return None
        time, power = got
        if not (np.isfinite(time).all() and np.isfinite(power).all()):
            return None
        if not ((time > 0).all() and (power > 0).all()):
            return None
        reliable = np.ones(time.shape, dtype=bool)
        for a in (time, power, reliable):
            a.flags.writeable = False
        return GridShape(time, power, reliable)


@dataclass
class AmdahlModel:
    """``tau(n) = a / n + b`` at ``Fmax`` (s per unit of work); serial fraction ``b / (a + b)``."""

    a: float
    b: float
    distinct_nodes: int

    @property
    def serial_fraction(self) -> float:
        return self.b / (self.a + self.b) if self.a + self.b > 0 else math.nan


def nnls_two_columns(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative least squares ``argmin ||design @ x - target||, x >= 0`` of a
    two-column ``design``: what ``scipy.optimize.nnls`` solves (Lawson and Hanson's
    active set method), for the Amdahl fits' two unknowns.

    With two unknowns the optimum is the unconstrained least squares solution
    (``np.linalg.lstsq``) when both of its values are positive, else the best
    of the two one-column solutions ``max(d_j . t / d_j . d_j, 0)`` (the optimum
    lies on a face of the feasible quadrant). Equal to scipy's to about 1e-12
    relative on the fits of the shared traces (a test compares); a replay's
    Amdahl fits then need no SciPy import (about 0.25 s of CPU time)."""
    a = np.asarray(design, dtype=np.float64)
    b = np.asarray(target, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 2 or b.shape != (a.shape[0],):
        raise ValueError(f"nnls_two_columns: needs an (m, 2) design and m targets, got {a.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("nnls_two_columns: the design and targets must be finite")
    x = np.linalg.lstsq(a, b, rcond=None)[0]
    if x[0] > 0 and x[1] > 0:
        return x
    best = np.zeros(2)
    best_sse = float(b @ b)  # x = 0
    for j in (0, 1):
        col = a[:, j]
        den = float(col @ col)
        c = float(col @ b) / den if den > 0 else 0.0
        if c > 0:
            r = col * c - b
            sse = float(r @ r)
            if sse < best_sse:
                best_sse = sse
                best = np.zeros(2)
                best[j] = c
    return best


def fit_amdahl(nodes: np.ndarray, tau: np.ndarray) -> AmdahlModel:
    """Two-parameter Amdahl fit ``tau = a / n + b``, ``a, b >= 0``, minimising relative errors.

    With a single distinct node count the serial part is not identifiable:
    ``b = 0`` (perfect speedup) and ``a`` is the geometric mean of ``n * tau``.
    """
    nodes = np.asarray(nodes, dtype=float)
    tau = np.asarray(tau, dtype=float)
    ok = np.isfinite(tau) & (tau > 0) & np.isfinite(nodes) & (nodes >= 1)
    nodes, tau = nodes[ok], tau[ok]
    if len(tau) == 0:
        raise ValueError("no usable runs")
    distinct = len(set(nodes.tolist()))  # == len(np.unique(nodes)): finite values
    if distinct < 2:
        return AmdahlModel(geometric_mean(nodes * tau), 0.0, distinct)
    design = np.column_stack([1.0 / nodes, np.ones_like(nodes)]) / tau[:, None]
    coef = nnls_two_columns(design, np.ones_like(tau))
    a, b = float(coef[0]), float(coef[1])
    if a + b <= 0:
        return AmdahlModel(geometric_mean(nodes * tau), 0.0, distinct)
    return AmdahlModel(a, b, distinct)


class AmdahlPredictor(PerApplicationPredictor):
    """Two-parameter Amdahl fit ``tau(n) = a / n + b`` per application (ADEPT's first piece).

    Fitted on the application's work-normalised runs (runs at ``f < Fmax`` are
    moved to ``Fmax`` assuming a fully CPU-bound run, ``time * f / Fmax``).
    Frequency dimension: fully CPU-bound (``time ~ Fmax / f``) and power from
    the platform's P-state figures (full-load power at ``f``); combine with a
    DVFS predictor (``amdahl+fluid``) for a better one. Rows are reliable once
    the application has runs at two or more node counts.
    """

    name = "amdahl"
    _grid_ok = True

    def __init__(self) -> None:
        pass

    def _fit_app(self, app: int, runs: AppRuns, work: np.ndarray) -> AmdahlModel:
        names = np.where(pd.isna(runs["node_type"]), self.info_.default, runs["node_type"]).astype(
            object
        )
        fmax = self.info_.fmax(names, runs["freq_ghz"])
        tau = runs["time_s"] / work * runs["freq_ghz"] / fmax
        return fit_amdahl(runs["nodes"], tau)

    def _shape(self, app, model, node_type, nodes, freq_ghz):
        fmax = self.info_.fmax(node_type, freq_ghz)
        tau = (model.a / np.maximum(nodes, 1.0) + model.b) * fmax / freq_ghz
        power = self.info_.busy_power(node_type, freq_ghz)
        return tau, power, np.full(len(nodes), model.distinct_nodes >= 2)
