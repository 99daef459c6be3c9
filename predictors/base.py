"""The predictor contract: what a predictor sees, what it is asked, what it answers.

scikit-learn style (see docs/how-to/plug-in-a-predictor.md):

* ``__init__`` stores hyper-parameters only (no data, no work);
* ``fit(observations) -> self`` learns; learned state lives in attributes
  whose names end in ``_``;
* ``update(new_runs) -> self`` adds finished runs and refits only the
  applications they belong to (the learning loop of a policy calls this);
* ``predict(queries) -> Prediction`` answers a whole batch of configurations
  at once (vectorised).

Predicting before ``fit`` raises :class:`~energysched.errors.NotFittedError`.
Predicting for an application with no or too few observations is **not** an
error: the predictor answers with its documented fallback and marks those rows
``reliable = False`` (the default fallback, :meth:`Predictor.fallback`, scales
the trace's requested time at the requested size and top frequency; see its
docstring).

Predictors never see the ground-truth model objects: only
:class:`Observations` (finished runs with measurement noise, the platform's
benchmark measurements, the platform description).

Units: time in seconds, power in watts **per node** (mean over the run),
energy in joules **for the whole job** (all its nodes): ``energy_j = time_s *
power_w * nodes``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np
import pandas as pd

from energysched.errors import NotFittedError
from workloads.runs import RUN_ROW_COLUMNS as RUN_ROW_COLUMNS
from workloads.runs import RUN_ROW_DTYPES as RUN_ROW_DTYPES
from workloads.runs import RunBatch as RunBatch
from workloads.runs import RunRows as RunRows
from workloads.runs import column_dtype
from workloads.runs import empty_runs as empty_runs
from workloads.schema import BENCHMARK_COLUMNS as BENCHMARK_COLUMNS
from workloads.schema import COUNTER_COLUMNS as COUNTER_COLUMNS
from workloads.schema import MEASUREMENT_COLUMNS as MEASUREMENT_COLUMNS
from workloads.schema import RUN_COLUMNS as RUN_COLUMNS


@dataclass
class Observations:
    """Everything a predictor may learn from.

    Attributes:
        runs: finished runs, columns :data:`RUN_COLUMNS`, in the order they finished.
        benchmarks: benchmark measurements, columns :data:`BENCHMARK_COLUMNS`
            (may be empty when the platform has no benchmark suite).
        platform: the platform description (duck-typed: ``node_types``, each
            with ``name``, ``count``, ``cores_per_node``, ``freqs_ghz``,
            ``fmax_ghz``, ``fmin_ghz``, ``idle_power_w``, ``max_power_w`` and
            ``pstates`` with ``freq_ghz``, ``idle_power_w``, ``busy_power_w``);
            ``None`` when unknown.
    """

    runs: pd.DataFrame = field(default_factory=empty_runs)
    benchmarks: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(
            {c: pd.Series(dtype=column_dtype(c)) for c in BENCHMARK_COLUMNS}
        )
    )
    platform: Any = None

    def __post_init__(self) -> None:
        missing = [c for c in ("application", "nodes", "freq_ghz", "time_s") if c not in self.runs]
        if missing:
            raise ValueError(f"Observations.runs lacks columns {missing}; expected {RUN_COLUMNS}")
        self._groups: dict[int, pd.DataFrame] | None = None

    def applications(self) -> np.ndarray:
        """Application ids that have at least one run."""
        return np.unique(self.runs["application"].to_numpy())

    def for_application(self, application: int) -> pd.DataFrame:
        """The runs of one application (empty frame when none)."""
        if self._groups is None:
            self._groups = {int(k): g for k, g in self.runs.groupby("application", sort=False)}
        got = self._groups.get(int(application))
        return got if got is not None else self.runs.iloc[0:0]

    def with_runs(self, new_runs: pd.DataFrame) -> Observations:
        """A new Observations with ``new_runs`` appended."""
        runs = new_runs if self.runs.empty else pd.concat([self.runs, new_runs], ignore_index=True)
        return Observations(runs=runs, benchmarks=self.benchmarks, platform=self.platform)


@dataclass
class Queries:
    """A batch of configurations to predict. All arrays have the same length.

    Attributes:
        application: int application ids.
        nodes: node counts.
        freq_ghz: frequencies.
        node_type: node type names (object array) or ``None`` for the first type.
        cores: cores per node (``None``: all cores of the node type).
        requested_nodes, requested_time_s: the job's trace fields (used by
            the ``requested`` baseline and by fallbacks); ``None`` if unknown.
        job_index: row of the job in the trace (only the ``oracle`` baseline
            may use it, to read the ground truth); ``None`` if unknown.

    Why the job matters, not only the application: ground truth is calibrated
    per job (each job's recorded runtime is reproduced at its recorded size),
    so jobs of one application share the *shape* of their behaviour (speedup,
    DVFS sensitivity, power) but not their amount of work. A predictor learns
    the shape from the application's runs (the ``instructions`` column
    measures each run's work) and scales it for a new job from that job's
    trace fields (requested time and size).
    """

    application: np.ndarray
    nodes: np.ndarray
    freq_ghz: np.ndarray
    node_type: np.ndarray | None = None
    cores: np.ndarray | None = None
    requested_nodes: np.ndarray | None = None
    requested_time_s: np.ndarray | None = None
    job_index: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.application = np.asarray(self.application, dtype=np.int64)
        self.nodes = np.asarray(self.nodes, dtype=np.int64)
        self.freq_ghz = np.asarray(self.freq_ghz, dtype=np.float64)
        n = len(self.application)
        for name in (
            "nodes",
            "freq_ghz",
            "node_type",
            "cores",
            "requested_nodes",
            "requested_time_s",
            "job_index",
        ):
            value = getattr(self, name)
            if value is not None:
                arr = np.asarray(value)
                if arr.shape != (n,):
                    raise ValueError(f"Queries.{name} has shape {arr.shape}, expected ({n},)")
                setattr(self, name, arr)

    def __len__(self) -> int:
        return len(self.application)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> Queries:
        """From a DataFrame with columns ``application, nodes, freq_ghz`` (+ optional ones)."""
        opt = {
            k: (frame[k].to_numpy() if k in frame else None)
            for k in ("node_type", "cores", "requested_nodes", "requested_time_s", "job_index")
        }
        return cls(
            application=frame["application"].to_numpy(),
            nodes=frame["nodes"].to_numpy(),
            freq_ghz=frame["freq_ghz"].to_numpy(),
            **opt,
        )


@dataclass
class Prediction:
    """Predicted time, power and energy for each query row.

    ``time_s`` runtime; ``power_w`` mean power per node; ``energy_j`` energy of
    the whole job (``time_s * power_w * nodes``); ``reliable`` False where the
    predictor fell back or flagged the fit; ``uncertainty`` a relative
    uncertainty (0.1 = +-10%) where the method has one, else NaN.
    """

    time_s: np.ndarray
    power_w: np.ndarray
    energy_j: np.ndarray
    reliable: np.ndarray
    uncertainty: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.time_s = np.asarray(self.time_s, dtype=np.float64)
        self.power_w = np.asarray(self.power_w, dtype=np.float64)
        self.energy_j = np.asarray(self.energy_j, dtype=np.float64)
        self.reliable = np.asarray(self.reliable, dtype=bool)
        if self.uncertainty is None:
            self.uncertainty = np.full(self.time_s.shape, np.nan)
        else:
            self.uncertainty = np.asarray(self.uncertainty, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.time_s)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "time_s": self.time_s,
                "power_w": self.power_w,
                "energy_j": self.energy_j,
                "reliable": self.reliable,
                "uncertainty": self.uncertainty,
            }
        )


class GridShape:
    """The job-independent part of a grid prediction (the ``grid_shape`` fast path).

    Built-in predictors answer a job's ``sizes x frequencies`` grid as a
    per-application *shape* times a per-job *scale*: for a job with scale
    ``s`` (see :mod:`predictors.baselines`, per-job work scaling)::

        time_s   = s * time                 # (K, F)
        power_w  = power_w                  # (K, F), per node
        energy_j = time_s * power_w * n     # n: the grid's sizes, a column
        reliable = reliable                 # (K, F)

    which equals ``predict_grid`` on the same grid up to the rounding of
    the product. A shape is cached by the predictor for one fitted state of
    the application (a new object when a refit changes it), so a caller may key
    its own derived results on it: :attr:`memo` is a dict for that purpose,
    dropped with the shape. Every entry of ``time`` and ``power_w`` is
    finite and positive (the predictor returns no shape otherwise). The arrays
    are shared with the predictor's tables (they may be read-only views):
    read them, never write into them.

    ``time_max``: ``float(time.max())`` when the caller has it already (else
    computed here).
    """

    __slots__ = ("memo", "power_w", "reliable", "time", "time_max")

    def __init__(
        self,
        time: np.ndarray,
        power_w: np.ndarray,
        reliable: np.ndarray,
        time_max: float | None = None,
    ) -> None:
        self.time = time
        self.power_w = power_w
        self.reliable = reliable
        if time_max is None:
            time_max = float(time.max()) if time.size else 0.0
        self.time_max = time_max
        self.memo: dict[Any, Any] = {}

    def usable(self, scale: float) -> bool:
        """Whether ``scale * time`` is finite and positive everywhere."""
        return scale > 0 and math.isfinite(scale * self.time_max)

    def time_column(self, j: int) -> np.ndarray:
        """``time[:, j]``; a shape whose table is made on first read (a composite's)
        computes the column alone, with the same values."""
        return self.time[:, j]

    def time_row(self, i: int) -> np.ndarray:
        """``time[i]`` (see :meth:`time_column`)."""
        return self.time[i]


class _Fitted(Protocol):
    """A fitted predictor. ``observations_`` is set by each subclass's ``fit``
    (a plain attribute, or a read-only property as in ``PerApplicationPredictor``),
    so :class:`Predictor` does not declare it."""

    @property
    def observations_(self) -> Observations: ...


class Predictor:
    """Base class of every predictor. Subclasses implement :meth:`fit` and :meth:`predict`.

    Class attributes:
        name: registry name.
        min_observations: runs of an application needed before its
            predictions are its own (fewer: :meth:`fallback`).
    """

    name: str = "predictor"
    min_observations: int = 1
    #: Whether :meth:`update` accepts a :class:`RunBatch` (built-ins); else a DataFrame.
    accepts_run_batch: bool = False

    def fit(self, observations: Observations) -> Predictor:  # pragma: no cover - abstract
        raise NotImplementedError

    def update(self, new_runs: pd.DataFrame) -> Predictor:
        """Add finished runs and refit. Default: refit on everything seen so far.

        Built-in predictors override this to refit only the applications in
        ``new_runs``.
        """
        self._check_fitted()
        obs = cast(_Fitted, self).observations_
        return self.fit(obs.with_runs(new_runs))

    def predict(self, queries: Queries) -> Prediction:  # pragma: no cover - abstract
        raise NotImplementedError

    def get_params(self) -> dict[str, Any]:
        """Hyper-parameters as given to ``__init__`` (for reports and cloning)."""
        import inspect

        sig = inspect.signature(type(self).__init__)
        return {
            k: getattr(self, k)
            for k in sig.parameters
            if k != "self"
            and sig.parameters[k].kind
            not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        }

    def _check_fitted(self) -> None:
        if not hasattr(self, "observations_"):
            raise NotFittedError(
                f"{type(self).__name__} is not fitted yet: call fit(observations) before predict()"
            )

    @staticmethod
    def fallback(queries: Queries, platform: Any = None) -> Prediction:
        """Prediction for applications the predictor knows nothing about.

        Time: the requested time (3600 s when the trace has none) at the
        requested size (the queried size when the request's is unknown), scaled
        by ``requested_nodes / nodes`` (perfect speedup) and by ``Fmax / f``
        (fully CPU-bound). Power: the node type's
        full-load power at the top frequency when the platform is known (else
        200 W). Every row is marked ``reliable = False``. At the requested size
        and top frequency this is exactly the rigid baseline's estimate.
        """
        n = len(queries)
        req_t = (
            np.asarray(queries.requested_time_s, dtype=np.float64)
            if queries.requested_time_s is not None
            else np.full(n, np.nan)
        )
        req_t = np.where(np.isfinite(req_t) & (req_t > 0), req_t, 3600.0)
        nodes = queries.nodes.astype(np.float64)
        req_n = (
            np.asarray(queries.requested_nodes, dtype=np.float64)
            if queries.requested_nodes is not None
            else nodes
        )
        # an unknown requested size (NaN) is the queried one, as on the grid paths
        # (PerApplicationPredictor._fb_time, baselines.fallback_cell_time)
        req_n = np.where(req_n == req_n, req_n, nodes)
        fmax = np.full(n, np.nan)
        power = np.full(n, 200.0)
        if platform is not None:
            types = list(platform.node_types)
            names = (
                queries.node_type
                if queries.node_type is not None
                else np.full(n, types[0].name, dtype=object)
            )
            for t in types:
                mask = names == t.name
                fmax[mask] = t.fmax_ghz
                power[mask] = t.max_power_w
        fmax = np.where(np.isfinite(fmax), fmax, queries.freq_ghz)
        time = req_t * req_n / np.maximum(queries.nodes, 1) * (fmax / queries.freq_ghz)
        energy = time * power * queries.nodes
        return Prediction(time, power, energy, np.zeros(n, dtype=bool))


class PendingRunsMixin:
    """``observations_`` for predictors whose :meth:`Predictor.update` only queues runs.

    Such a predictor sets ``self._obs`` (the fit's observations) and
    ``self._pending`` (a list of runs tables or batches) in ``fit`` and appends
    to ``_pending`` in ``update``; the queued runs are folded into ``_obs``
    only when ``observations_`` is read. Put it before :class:`Predictor` in
    the bases.
    """

    _obs: Observations
    _pending: list[Any]

    #: queued batches folded into one batch of columns (:meth:`_queue_runs`)
    PENDING_FOLD = 256

    def _check_fitted(self) -> None:
        if "_obs" not in self.__dict__:
            super()._check_fitted()  # type: ignore[misc]

    def _queue_runs(self, runs: Any) -> None:
        """Append ``runs`` to ``_pending``; every :attr:`PENDING_FOLD` queued
        :class:`RunBatch` es are folded into one batch of columns (the same runs in
        the same order): the engine's hand-overs are batches of Python row tuples,
        about 430 bytes a run against 113 in columns (CEA-Curie: 296k runs kept
        for the whole replay). Two predictors given the same batches (the parts of
        a composite) share the folded batch."""
        pending = self._pending
        pending.append(runs)
        loose = min(self.__dict__.get("_pending_loose", 0) + 1, len(pending))
        if loose >= self.PENDING_FOLD:
            folded = _fold_batches(pending[-loose:])
            if folded is not None:  # (else, e.g. DataFrames: left as they are)
                pending[-loose:] = [folded]
            loose = 0
        self._pending_loose = loose

    @property
    def observations_(self) -> Observations:
        """Everything seen so far (the fit's observations plus the updates' runs)."""
        if "_obs" not in self.__dict__:
            raise AttributeError("observations_")
        if self._pending:
            self._obs = self._obs.with_runs(concat_runs(self._pending))
            self._pending = []
        return self._obs


#: the last chunk folded by _fold_batches and its folded batch (the other part of a
#: composite folds the same chunk next)
_last_fold: list[Any] = [(), None]


def grid_cell(
    grid: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None,
) -> tuple[float, float, float, bool] | None:
    """The one cell of a one-cell ``predict_grid`` answer as Python values
    ``(time_s, power_w, energy_j, reliable)`` (what ``predict_one`` returns);
    ``None`` stays ``None``."""
    if grid is None:
        return None
    time, power, energy, reliable = grid
    return float(time[0, 0]), float(power[0, 0]), float(energy[0, 0]), bool(reliable[0, 0])


def _fold_batches(chunk: list[Any]) -> RunBatch | None:
    """``chunk`` as one :class:`RunBatch` of columns (:meth:`RunBatch.concat`), or
    ``None`` when it holds anything else than batches of the same columns; the
    same object as the last call's when ``chunk`` holds the same batches."""
    last, folded = _last_fold
    if len(last) == len(chunk) and all(a is b for a, b in zip(last, chunk)):
        return cast(RunBatch, folded)
    if not all(b.__class__ is RunBatch for b in chunk):
        return None
    rows = [b.rows() for b in chunk]
    if all(r is not None for r in rows):  # batches of rows: their columns at once
        folded = RunBatch.fold_rows(chunk)
    else:
        columns = chunk[0].columns
        if any(b.columns != columns for b in chunk):
            return None
        folded = RunBatch.concat(chunk)
    _last_fold[:] = [tuple(chunk), folded]
    return folded


def as_frame(runs: Any) -> pd.DataFrame:
    """``runs`` as a DataFrame (a :class:`RunBatch` is converted)."""
    return runs.to_frame() if isinstance(runs, RunBatch) else runs


def concat_runs(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate runs tables (helper for the learning loop; RunBatches are converted)."""
    frames = [as_frame(f) for f in frames if len(f)]
    if not frames:
        return empty_runs()
    return pd.concat(frames, ignore_index=True)
