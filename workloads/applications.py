"""Applications of a trace and their hidden ground truth (docs/background/models.md, section 1.4).

Three steps turn a replayed trace into jobs that really behave:

1. :func:`group_applications` maps every job to a dense application id.
2. :func:`assign_ground_truth` draws each application's hidden parameters from
   a preset (:mod:`workloads.presets`) with a seeded generator and calibrates
   each job's amount of work so that its recorded runtime is reproduced
   exactly at its recorded node count and ``Fmax`` (the trace was recorded at
   full speed). The result, a :class:`TraceGroundTruth`, implements the
   :class:`workloads.truth.GroundTruth` protocol the engine calls.
3. :func:`describe_applications` tabulates the applications for people.

Two populations of applications:

* **Downey x Fluid** (default): ``T(n, f) = L_j / S(n) * ((1 - alpha) + alpha/x)``,
  node power ``Pstatic + Pdyn x**2``. ``n`` is counted in *reference
  node-equivalents* ``n c / cores_per_node(first node type)``, so a job on
  fewer cores, or on a node type with more cores, gets the matching
  parallelism; the dynamic power is scaled by the share ``c / cores_per_node``
  of cores in use. ``A``, ``sigma``, ``alpha`` are shared by all node types;
  ``Pstatic``, ``Pdyn`` are per (node type, application).
* **Hybrid MPI+OpenMP** (a preset's ``hybrid_share``): the queueing model of
  :mod:`workloads.models.hybrid`, scaled per job (``w, b, m1, eta`` times the
  job's work factor).

Network contention: the engine's hook
-------------------------------------
Only hybrid applications send messages (Downey x Fluid jobs have no network
model: :meth:`TraceGroundTruth.message_rate` returns 0 for them, and
:attr:`TraceGroundTruth.communicates` tells which jobs matter). For a
platform with a topology (``nodes_per_switch``), the engine should:

1. When a job starts, compute its per-node message rate
   ``r_j = truth.message_rate(job, node_type, n, f, c)`` (messages/s per node;
   it does not depend on other jobs) and remember the leaf switch of each of
   its nodes.
2. The traffic of switch ``s`` is ``R_s = sum_k (nodes of job k on s) * r_k``.
   A job's *background* is ``max over its switches s of (R_s - (its nodes on
   s) * r_j)``, the other jobs' messages/s on its busiest switch.
3. Evaluate ``truth.evaluate(job, node_type, n, f, c, background_msg_rate=bg)``
   at start, and again for every running communicating job whose background
   changed whenever a job starts or ends on one of its switches. With
   ``done`` the fraction of the job completed so far, set
   ``done += (now - t_last) / T_old`` and the new end time
   ``now + (1 - done) * T_new`` (power changes to the new per-node power from
   ``now``). Saturated configurations (``truth.evaluate_detail(...).saturated``)
   are charged the documented maximum waiting; a policy may refuse to start
   them.

Without a topology the platform is treated as a dedicated switch per job
(``background_msg_rate = 0`` always). With ``background_msg_rate = 0`` (or
``None``) at the recorded size and ``Fmax``, :meth:`TraceGroundTruth.evaluate`
returns the recorded runtime, so a rigid replay is unchanged **if the engine
does not apply contention** during that replay.

Grouping rule (:func:`group_applications`, ``by="auto"``): the SWF executable
number (field 14) when at least half the jobs have one; jobs without one (or
every job, when the trace has none, e.g. KTH-SP2 and HPC2N) are grouped by
``(user_id, size class)`` with size class ``floor(log2(processors))``
(missing user or processors -> their own bucket ``-1``). Ids are dense,
``0..A-1``, in the sorted order of the keys (executables first), so they are
deterministic.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from energysched.errors import ConfigError
from workloads.measurements import (
    CounterTraits,
    _measure_columns,
    draw_counter_traits,
    measure_columns,
    measure_row,
    trait_rows,
)
from workloads.models.downey import speedup_scalar, speedup_unchecked
from workloads.models.fluid import (
    fluid_optimal_pstate,
    fluid_power,
    fluid_power_scalar,
    fluid_runtime_factor,
    fluid_runtime_factor_scalar,
)
from workloads.models.hybrid import (
    DEFAULT_MAX_WAIT_FACTOR,
    HybridApp,
    HybridPower,
    hybrid_evaluate,
    hybrid_evaluate_scalar,
    hybrid_message_rate,
    hybrid_power_figures,
)
from workloads.presets import WorkloadPreset, fluid_alpha_table, get_preset
from workloads.schema import MEASUREMENT_COLUMNS, RUN_COLUMNS
from workloads.truth import TruthTags

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "RUN_COLUMNS",
    "Evaluation",
    "TraceGroundTruth",
    "assign_ground_truth",
    "describe_applications",
    "group_applications",
    "recorded_procs",
]

logger = logging.getLogger(__name__)

#: Link throughput used when the platform has no topology (GB/s).
DEFAULT_LINK_BANDWIDTH_GBS = 12.5


def _column(jobs: pd.DataFrame, name: str) -> np.ndarray:
    """A column as float64 with NaN for missing (and for SWF's -1 or any negative value)."""
    if name not in jobs:
        return np.full(len(jobs), np.nan)
    values = pd.to_numeric(jobs[name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return np.where(values >= 0, values, np.nan)


def recorded_procs(jobs: pd.DataFrame) -> np.ndarray:
    """Processors each job ran on: column ``procs`` if present, else ``procs_alloc``,
    else ``procs_req`` (per job, the first positive value); NaN when none."""
    out = np.full(len(jobs), np.nan)
    for name in ("procs", "procs_alloc", "procs_req"):
        values = _column(jobs, name)
        values = np.where(values > 0, values, np.nan)
        out = np.where(np.isnan(out), values, out)
    return out


#: ``group_applications(by="auto")`` uses executable numbers only when at least
#: half of the jobs that have one belong to an executable with this many jobs.
MIN_REPEATS = 3


def _executables_repeat(exe: np.ndarray) -> bool:
    known = exe[~np.isnan(exe)]
    if len(known) == 0:
        return False
    _, inverse, counts = np.unique(known, return_inverse=True, return_counts=True)
    return bool(np.mean(counts[inverse] >= MIN_REPEATS) >= 0.5)


def group_applications(trace: Any, *, by: str = "auto") -> np.ndarray:
    """Dense int application id (``0..A-1``) of every job of ``trace``.

    Args:
        trace: a :class:`workloads.schema.Trace` (or anything with ``.jobs``).
        by: ``"auto"`` (executable numbers when at least half the jobs have
            one **and** they repeat: at least half of those jobs share their
            executable with :data:`MIN_REPEATS` - 1 other jobs; else user and
            size class. SDSC-SP2's executable numbers are nearly unique per job,
            which would leave predictors nothing to learn from, so it falls
            back to user and size class), ``"executable"`` (executable number; jobs
            without one fall back to user and size class), ``"user-size"``
            (``user_id`` plus ``floor(log2(processors))``).

    Returns:
        int64 array, one id per job row.
    """
    jobs = trace.jobs if hasattr(trace, "jobs") else trace
    if by not in ("auto", "executable", "user-size"):
        raise ConfigError("grouping", f"unknown rule {by!r}; known: auto, executable, user-size")
    k = len(jobs)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    exe = _column(jobs, "executable_id")
    use_exe = by == "executable" or (
        by == "auto" and np.mean(~np.isnan(exe)) >= 0.5 and _executables_repeat(exe)
    )
    user = _column(jobs, "user_id")
    procs = recorded_procs(jobs)
    with np.errstate(divide="ignore", invalid="ignore"):
        size_class = np.where(procs >= 1, np.floor(np.log2(procs)), -1.0)
    user = np.where(np.isnan(user), -1.0, user)
    if use_exe:
        has = ~np.isnan(exe)
        keys = np.stack(
            [
                np.where(has, 0, 1),
                np.where(has, exe, user),
                np.where(has, 0, size_class),
            ],
            axis=1,
        ).astype(np.int64)
    else:
        keys = np.stack([np.ones(k), user, size_class], axis=1).astype(np.int64)
    return dense_row_ids(keys)


def dense_row_ids(keys: np.ndarray) -> np.ndarray:
    """Dense id of every row of the 2-D int array ``keys``: the rank of the row among
    the distinct rows in lexicographic order (column 0 first).

    The same ids as ``np.unique(keys, axis=0, return_inverse=True)[1]``, from one
    ``np.lexsort`` (several times faster than ``np.unique`` sorting rows as records:
    0.26 -> 0.04 s for 200,000 jobs).
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys.T[::-1])  # lexsort sorts by its last key first
    ranked = keys[order]
    starts = np.empty(n, dtype=bool)  # the row differs from the one before it
    starts[0] = True
    np.any(ranked[1:] != ranked[:-1], axis=1, out=starts[1:])
    ids = np.empty(n, dtype=np.int64)
    ids[order] = np.cumsum(starts) - 1
    return ids


@dataclass
class Evaluation:
    """Detailed truth of a batch of configurations (arrays, one entry per row).

    ``saturated``, ``rho`` and ``msg_rate_per_node`` are False / 0 for
    Downey x Fluid jobs.
    """

    runtime_s: np.ndarray
    power_w: np.ndarray
    saturated: np.ndarray
    rho: np.ndarray
    msg_rate_per_node: np.ndarray


@dataclass(eq=False)
class _TypePower:
    """Per (node type, application) power figures (arrays over applications)."""

    name: str
    cores_per_node: int
    fmin_ghz: float
    fmax_ghz: float
    freqs_ghz: tuple[float, ...]
    p_static_w: np.ndarray
    p_dyn_w: np.ndarray
    hybrid: HybridPower


#: Fields of :class:`HybridApp` in the order :func:`hybrid_evaluate_scalar` takes
#: them, each with whether it scales with the job's work (:meth:`HybridApp.scaled`).
_HYBRID_PROGRAM_FIELDS = (
    ("work_cycles", True),
    ("stall_cycles", True),
    ("mem_stall_cycles", True),
    ("kappa", False),
    ("messages", True),
    ("message_bytes", False),
    ("cpu_utilisation", False),
)
_HYBRID_POWER_FIELDS = ("core_active_w", "core_stall_w", "mem_w", "net_w", "sys_idle_w")

#: Largest batch :meth:`TraceGroundTruth.measure` computes row by row in plain
#: Python; larger batches use numpy (same results).
SMALL_BATCH = 16


@dataclass(eq=False)
class _TypeTables:
    """Per node type inputs of :meth:`TraceGroundTruth.measure` (cached)."""

    tp: _TypePower
    #: per application, ``p_static_w`` of the formulas (the hybrid model's idle
    #: power for hybrid applications), as an array and as a list
    p_static_w: np.ndarray
    p_static_list: list[float]
    #: per job, the ``requested_nodes`` column on this node type
    requested_nodes: np.ndarray
    cores_per_node: float
    fmax_ghz: float


@dataclass(eq=False)
class _MeasureTables:
    """Cached inputs of :meth:`TraceGroundTruth.measure`: ``sources`` are the
    arrays the tables come from, ``traits`` the :func:`trait_rows` of every
    application, ``applications`` and ``instructions`` the per-job
    ``application`` and ``instructions_`` as lists (for the per-run loops),
    ``types`` the :class:`_TypeTables` by node type name."""

    sources: tuple[Any, ...]
    traits: list[tuple[float, ...]]
    applications: Sequence[int]
    instructions: Sequence[float]
    types: dict[str, _TypeTables] = field(default_factory=dict)


def _per_job(values: ArrayLike, dtype: Any) -> memoryview:
    """A per-job array read one item at a time (Python ints or floats) through a
    memoryview: no copy, where a list would hold a Python object per job for the
    whole replay (CEA-Curie: about 35 bytes per job and list)."""
    array = np.ascontiguousarray(values, dtype=dtype)
    # numpy's stubs declare its buffer protocol (__buffer__) for Python >= 3.12 only
    return memoryview(cast("Buffer", array))


def _small_column(values: ArrayLike, k: int) -> np.ndarray | None:
    """``values`` as a float64 array of shape ``(k,)`` (a scalar or a single value is
    repeated), or ``None`` when that needs more general broadcasting."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape == (k,):
        return v
    if v.ndim > 1 or v.size != 1:
        return None
    return np.full(k, v.reshape(()))


@dataclass(eq=False)
class TraceGroundTruth:
    """Hidden behaviour of every job of one trace (implements :class:`workloads.truth.GroundTruth`).

    Build it with :func:`assign_ground_truth`. Per-application arrays are
    indexed by application id, per-job arrays by the job's row in the trace's
    jobs table. Attributes ending in ``_`` are hidden parameters: predictors
    must never read them (only the ``oracle`` baseline may).

    Attributes:
        application: application id of every job.
        preset: the preset the parameters were drawn from.
        seed: the seed.
        noise: default measurement noise of :meth:`measure`.
        kind_: per application, the benchmark kind (``"bt"``, ... or ``"hybrid"``).
        hybrid_: per application, True for hybrid MPI+OpenMP programs.
        A_, sigma_: Downey parameters (NaN for hybrid applications).
        alpha_: DVFS sensitivity (for hybrid applications an effective value,
            from two unit runs at ``Fmin`` and ``Fmax``).
        work_: per job, ``L_j`` (one-node runtime at ``Fmax``, s) or the hybrid
            work factor; NaN where the trace lacks runtime or processors.
        recorded_nodes: per job, ``ceil(procs / cores_per_node)`` on the first node type.
        recorded_runtime_s: per job, the trace's runtime (NaN when missing).
        instructions_: per job, true total instructions.
        switch_ports: nodes per leaf switch (``None``: no topology).
        link_bandwidth_gbs: link throughput of the hybrid model.
        max_wait_factor: saturation cap of the hybrid model.
    """

    application: np.ndarray
    preset: WorkloadPreset
    seed: int
    noise: float
    kind_: np.ndarray
    hybrid_: np.ndarray
    A_: np.ndarray
    sigma_: np.ndarray
    alpha_: np.ndarray
    work_: np.ndarray
    recorded_nodes: np.ndarray
    recorded_runtime_s: np.ndarray
    instructions_: np.ndarray
    hybrid_app_: HybridApp
    traits_: CounterTraits
    switch_ports: int | None
    link_bandwidth_gbs: float
    max_wait_factor: float = DEFAULT_MAX_WAIT_FACTOR
    job_id: np.ndarray | None = None
    submit_s: np.ndarray | None = None
    requested_procs: np.ndarray | None = None
    requested_time_s: np.ndarray | None = None
    _types: dict[str, _TypePower] = field(default_factory=dict, repr=False)
    _ref_cores: int = 1
    _scalar_cache: Any = field(default=None, repr=False)
    #: (node type object, its scalar record) of the last evaluate_one call
    _scalar_type: tuple[Any, Any] = field(default=(None, None), repr=False)
    _measure_cache: _MeasureTables | None = field(default=None, repr=False)

    def __energysched_tags__(self) -> TruthTags:
        """All three fast paths, except those whose method a subclass replaced (the
        fast path would then no longer match the method it stands in for)."""
        own_measure = type(self).measure is TraceGroundTruth.measure
        own_evaluate = type(self).evaluate is TraceGroundTruth.evaluate
        own_rows = (
            own_measure and type(self).measure_row_values is TraceGroundTruth.measure_row_values
        )
        return TruthTags(
            measure_columns=own_measure,
            measure_rows=own_measure,
            evaluate_one=own_evaluate,
            row_measurer=own_rows,
            work_grid=own_evaluate,
        )

    # ------------------------------------------------------------------ helpers
    @property
    def n_applications(self) -> int:
        return len(self.kind_)

    @property
    def node_type_names(self) -> tuple[str, ...]:
        return tuple(self._types)

    @property
    def communicates(self) -> np.ndarray:
        """Per job: True when the job sends messages (hybrid applications)."""
        return self.hybrid_[self.application]

    def _type(self, node_type: Any) -> _TypePower:
        name = node_type if isinstance(node_type, str) else getattr(node_type, "name", None)
        if name is None and self._types:
            return next(iter(self._types.values()))
        try:
            return self._types[str(name)]
        except KeyError:
            raise KeyError(
                f"node type {name!r} is not in this ground truth; known: {', '.join(self._types)}"
            ) from None

    def _rows(
        self,
        job_index: ArrayLike,
        tp: _TypePower,
        nodes: ArrayLike,
        freq_ghz: ArrayLike,
        cores: ArrayLike | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        j = np.atleast_1d(np.asarray(job_index, dtype=np.int64))
        n = np.broadcast_to(np.asarray(nodes, dtype=np.float64), j.shape)
        f = np.broadcast_to(np.asarray(freq_ghz, dtype=np.float64), j.shape)
        c = (
            np.full(j.shape, float(tp.cores_per_node))
            if cores is None
            else np.broadcast_to(np.asarray(cores, dtype=np.float64), j.shape)
        )
        return j, self.application[j], n, f, c

    def _evaluate_apps(
        self,
        apps: np.ndarray,
        work: np.ndarray,
        tp: _TypePower,
        n: np.ndarray,
        f: np.ndarray,
        c: np.ndarray,
        background: np.ndarray,
    ) -> Evaluation:
        """Truth for rows of (application, work, configuration)."""
        k = apps.shape[0]
        runtime = np.empty(k)
        power = np.empty(k)
        saturated = np.zeros(k, dtype=bool)
        rho = np.zeros(k)
        rate = np.zeros(k)
        x = f / tp.fmax_ghz
        hyb = self.hybrid_[apps]
        down = ~hyb
        if down.any():
            if np.any(~(n > 0)) or np.any(~(c > 0)) or np.any(~(f > 0)):
                raise ValueError("nodes, cores and freq_ghz must be > 0")
            a = apps[down]
            runtime[down], power[down] = self._downey_fluid(
                work[down], a, tp, n[down] * c[down] / self._ref_cores, x[down], c[down]
            )
        if k == 1 and hyb[0]:  # one hybrid row (the engine's usual call): plain Python
            a0 = int(apps[0])
            w0 = float(work[0])
            prog = self.hybrid_app_
            pw = tp.hybrid
            r = hybrid_evaluate_scalar(
                float(n[0]),
                float(c[0]),
                float(f[0]),
                tp.fmax_ghz,
                tuple(
                    float(np.asarray(getattr(prog, name))[a0]) * (w0 if scaled else 1.0)
                    for name, scaled in _HYBRID_PROGRAM_FIELDS
                ),
                (
                    *(float(np.asarray(getattr(pw, name))[a0]) for name in _HYBRID_POWER_FIELDS),
                    float(pw.p_coef),
                ),
                self.link_bandwidth_gbs,
                self.switch_ports,
                float(background[0]),
                self.max_wait_factor,
            )
            runtime[0], power[0], saturated[0], rho[0], rate[0] = r
        elif hyb.any():
            a = apps[hyb]
            res = hybrid_evaluate(
                n[hyb],
                c[hyb],
                f[hyb],
                tp.fmax_ghz,
                self.hybrid_app_.take(a).scaled(work[hyb]),
                tp.hybrid.take(a),
                self.link_bandwidth_gbs,
                switch_ports=self.switch_ports,
                background_msg_rate=background[hyb],
                max_wait_factor=self.max_wait_factor,
            )
            runtime[hyb] = res.runtime_s
            power[hyb] = res.power_w
            saturated[hyb] = res.saturated
            rho[hyb] = res.rho
            rate[hyb] = res.msg_rate_per_node
        return Evaluation(runtime, power, saturated, rho, rate)

    # --------------------------------------------------------------- protocol
    def evaluate_detail(
        self,
        job_index: ArrayLike,
        node_type: Any,
        nodes: ArrayLike,
        freq_ghz: ArrayLike,
        cores: ArrayLike | None = None,
        *,
        background_msg_rate: ArrayLike | None = None,
    ) -> Evaluation:
        """Like :meth:`evaluate`, with saturation flags, utilisation and message rates."""
        tp = self._type(node_type)
        j, apps, n, f, c = self._rows(job_index, tp, nodes, freq_ghz, cores)
        bg = (
            np.zeros(j.shape)
            if background_msg_rate is None
            else np.broadcast_to(np.asarray(background_msg_rate, dtype=np.float64), j.shape)
        )
        return self._evaluate_apps(apps, self.work_[j], tp, n, f, c, bg)

    def evaluate(
        self,
        job_index: ArrayLike,
        node_type: Any,
        nodes: ArrayLike,
        freq_ghz: ArrayLike,
        cores: ArrayLike | None = None,
        *,
        background_msg_rate: ArrayLike | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """True ``(runtime_s, power_w per node)`` for each row.

        Args:
            job_index: rows of the jobs in the trace.
            node_type: a node type (duck-typed, by ``name``) or its name.
            nodes: node counts.
            freq_ghz: core frequencies (GHz); ``x = f / Fmax`` of the node type.
            cores: cores per node (``None``: all cores of the node type).
            background_msg_rate: messages/s of other jobs on each job's busiest
                switch (hybrid jobs only; see the module docstring).

        Jobs whose trace runtime or processors are missing get NaN runtimes.
        """
        ev = self.evaluate_detail(
            job_index, node_type, nodes, freq_ghz, cores, background_msg_rate=background_msg_rate
        )
        return ev.runtime_s, ev.power_w

    def evaluate_one(
        self, job_index: int, node_type: Any, nodes: int, freq_ghz: float, cores: int | None = None
    ) -> tuple[float, float] | None:
        """:meth:`evaluate` for one Downey x Fluid job in plain Python, or
        ``None`` for jobs that need the vectorised path (hybrid jobs).

        Same formulas as :meth:`_evaluate_apps`; a test checks both agree.
        """
        cache = self._scalar_cache
        if cache is None:
            cache = self._scalar_cache = (
                _per_job(self.application, np.int64),
                self.hybrid_.tolist(),
                _per_job(self.work_, np.float64),
                self.A_.tolist(),
                self.sigma_.tolist(),
                self.alpha_.tolist(),
                {
                    name: (tp.p_static_w.tolist(), tp.p_dyn_w.tolist())
                    for name, tp in self._types.items()
                },
            )
        app_l, hyb_l, work_l, a_l, s_l, alpha_l, powers = cache
        app = app_l[job_index]
        if hyb_l[app]:
            return None
        seen, record = self._scalar_type
        if record is None or node_type is not seen:  # the engine passes the same objects
            tp = self._type(node_type)
            record = (tp.cores_per_node, tp.fmax_ghz, *powers[tp.name])
            self._scalar_type = (node_type, record)
        cores_per_node, fmax_ghz, p_static, p_dyn = record
        c = cores_per_node if cores is None else cores
        if nodes <= 0 or c <= 0 or freq_ghz <= 0:
            raise ValueError("nodes, cores and freq_ghz must be > 0")
        x = freq_ghz / fmax_ghz
        n_eff = nodes * c / self._ref_cores
        runtime = (
            work_l[job_index]
            / speedup_scalar(n_eff, a_l[app], s_l[app])
            * fluid_runtime_factor_scalar(x, alpha_l[app])
        )
        power = fluid_power_scalar(x, p_static[app], p_dyn[app], c / cores_per_node)
        return runtime, power

    def message_rate(
        self,
        job_index: ArrayLike,
        node_type: Any,
        nodes: ArrayLike,
        freq_ghz: ArrayLike,
        cores: ArrayLike | None = None,
        *,
        per_node: bool = True,
    ) -> np.ndarray:
        """Messages/s each node of the job sends (``per_node=False``: the whole job).

        0 for Downey x Fluid jobs; independent of other jobs (see the module
        docstring for how the engine combines them into a switch's traffic).
        """
        tp = self._type(node_type)
        j, apps, n, f, c = self._rows(job_index, tp, nodes, freq_ghz, cores)
        out = np.zeros(j.shape)
        hyb = self.hybrid_[apps]
        if len(j) == 1 and hyb[0]:  # one row: the scalar form (same value)
            ev = self._evaluate_apps(apps, self.work_[j], tp, n, f, c, np.zeros(1))
            out[0] = ev.msg_rate_per_node[0]
        elif np.any(hyb):
            prog = self.hybrid_app_.take(apps[hyb]).scaled(self.work_[j[hyb]])
            out[hyb] = hybrid_message_rate(
                n[hyb], c[hyb], f[hyb], tp.fmax_ghz, prog, self.link_bandwidth_gbs
            )
        return out if per_node else out * n

    def measure(
        self,
        job_index: ArrayLike,
        node_type: Any,
        nodes: ArrayLike,
        freq_ghz: ArrayLike,
        cores: ArrayLike | None,
        runtime_s: ArrayLike | None,
        power_w: ArrayLike | None,
        rng: np.random.Generator,
        *,
        noise: float | None = None,
        as_columns: bool = False,
    ) -> Any:
        """Noisy measurements of finished runs, columns :data:`RUN_COLUMNS`.

        A DataFrame, or with ``as_columns=True`` a dict of 1-D numpy arrays
        keyed by :data:`RUN_COLUMNS` in that order (same values and dtypes;
        the engine's learning loop uses it: no DataFrame per batch).

        ``runtime_s`` and ``power_w`` are the truth the engine actually
        applied (they may include contention); ``None`` evaluates them without
        contention. Formulas: :mod:`workloads.measurements`. The trace fields
        ``job_id``, ``submit_s``, ``requested_nodes`` (``ceil(procs_req /
        cores_per_node)`` of the run's node type, the recorded processors when
        the request is missing) and ``requested_time_s`` (``time_req_s``, NaN
        when missing) are filled from the trace; the caller may overwrite them.

        Batches of up to :data:`SMALL_BATCH` rows (the engine's usual
        finished-job batches) are computed row by row in plain Python
        (:func:`workloads.measurements.measure_row`), larger ones with numpy
        (:func:`workloads.measurements.measure_columns`): the values, dtypes
        and the draws taken from ``rng`` are the same either way.
        """
        tp = self._type(node_type)
        level = self.noise if noise is None else noise
        out = self._measure_small(
            job_index, tp, nodes, freq_ghz, cores, runtime_s, power_w, rng, level
        )
        if out is None:
            j, apps, n, f, c = self._rows(job_index, tp, nodes, freq_ghz, cores)
            if runtime_s is None or power_w is None:
                t_true, p_true = self.evaluate(j, tp.name, n, f, c)
                runtime_s = t_true if runtime_s is None else runtime_s
                power_w = p_true if power_w is None else power_w
            tt = self._measure_tables(tp)[1]
            cols = measure_columns(
                **self._measure_inputs(j, apps, tt, n, f, c, runtime_s, power_w),
                noise=level,
                rng=rng,
            )
            out = self._run_columns(cols, j, apps, tt)
        if as_columns:
            return out
        return pd.DataFrame(out, copy=False)

    def _measure_inputs(
        self,
        j: np.ndarray,
        apps: np.ndarray,
        tt: _TypeTables,
        n: np.ndarray,
        f: np.ndarray,
        c: np.ndarray,
        runtime_s: ArrayLike,
        power_w: ArrayLike,
    ) -> dict[str, Any]:
        """Keyword arguments of :func:`measure_columns` for rows ``j`` (all but noise and draws)."""
        tp = tt.tp
        return {
            "node_type": tp.name,
            "nodes": n,
            "cores": c,
            "cores_per_node": tp.cores_per_node,
            "freq_ghz": f,
            "fmax_ghz": tp.fmax_ghz,
            "runtime_s": runtime_s,
            "power_w": power_w,
            "alpha": self.alpha_[apps],
            "p_static_w": tt.p_static_w[apps],
            "instructions": self.instructions_[j],
            "traits": self.traits_.take(apps),
        }

    def _run_columns(
        self, cols: dict[str, np.ndarray], j: np.ndarray, apps: np.ndarray, tt: _TypeTables
    ) -> dict[str, np.ndarray]:
        """The measured columns ``cols`` plus the trace fields of rows ``j``, in RUN_COLUMNS order."""
        k = len(j)
        cols["job_id"] = self.job_id[j] if self.job_id is not None else j
        cols["application"] = apps
        cols["submit_s"] = self.submit_s[j] if self.submit_s is not None else np.full(k, np.nan)
        cols["requested_nodes"] = tt.requested_nodes[j]
        cols["requested_time_s"] = (
            self.requested_time_s[j] if self.requested_time_s is not None else np.full(k, np.nan)
        )
        return {name: cols[name] for name in RUN_COLUMNS}

    def _measure_tables(self, tp: _TypePower) -> tuple[_MeasureTables, _TypeTables]:
        """The node-type-independent tables and those of node type ``tp`` (built on
        first use).

        Rebuilt when one of the arrays they come from is replaced (not when it
        is modified in place: hidden parameters are read-only once
        :func:`assign_ground_truth` returns).
        """
        m = self._measure_cache
        s = None if m is None else m.sources
        if (
            m is None
            or s is None
            or s[0] is not self.alpha_
            or s[1] is not self.traits_
            or s[2] is not self.hybrid_
            or s[3] is not self.requested_procs
            or s[4] is not self.recorded_nodes
            or s[5] is not self.application
            or s[6] is not self.instructions_
        ):
            m = self._measure_cache = _MeasureTables(
                sources=(
                    self.alpha_,
                    self.traits_,
                    self.hybrid_,
                    self.requested_procs,
                    self.recorded_nodes,
                    self.application,
                    self.instructions_,
                ),
                traits=trait_rows(self.alpha_, self.traits_),
                applications=_per_job(self.application, np.int64),
                instructions=_per_job(self.instructions_, np.float64),
            )
        tt = m.types.get(tp.name)
        if tt is None or tt.tp is not tp:
            ps = np.where(self.hybrid_, np.asarray(tp.hybrid.sys_idle_w), tp.p_static_w)
            req_procs = (
                self.requested_procs
                if self.requested_procs is not None
                else np.full(len(self.recorded_nodes), np.nan)
            )
            req_nodes = np.where(
                np.isfinite(req_procs),
                np.maximum(1.0, np.ceil(req_procs / tp.cores_per_node)),
                np.nan,
            )
            req_nodes = np.where(np.isfinite(req_nodes), req_nodes, self.recorded_nodes)
            tt = m.types[tp.name] = _TypeTables(
                tp=tp,
                p_static_w=ps,
                p_static_list=ps.tolist(),
                requested_nodes=np.where(np.isfinite(req_nodes), req_nodes, -1).astype(np.int64),
                cores_per_node=float(tp.cores_per_node),
                fmax_ghz=float(tp.fmax_ghz),
            )
        return m, tt

    def _measure_small(
        self,
        job_index: ArrayLike,
        tp: _TypePower,
        nodes: ArrayLike,
        freq_ghz: ArrayLike,
        cores: ArrayLike | None,
        runtime_s: ArrayLike | None,
        power_w: ArrayLike | None,
        rng: np.random.Generator,
        noise: float,
    ) -> dict[str, np.ndarray] | None:
        """:meth:`measure` of a small batch as columns, or ``None`` (nothing drawn)
        when the batch is large or its arguments need numpy broadcasting."""
        j = np.asarray(job_index, dtype=np.int64)
        if j.ndim != 1:
            if j.ndim != 0:
                return None
            j = np.atleast_1d(j)
        k = j.shape[0]
        if not 0 < k <= SMALL_BATCH:
            return None
        n = _small_column(nodes, k)
        f = _small_column(freq_ghz, k)
        c = np.full(k, float(tp.cores_per_node)) if cores is None else _small_column(cores, k)
        if n is None or f is None or c is None:
            return None
        apps = self.application[j]
        if runtime_s is None or power_w is None:
            t_true, p_true = self.evaluate(j, tp.name, n, f, c)
            runtime_s = t_true if runtime_s is None else runtime_s
            power_w = p_true if power_w is None else power_w
        t = _small_column(runtime_s, k)
        p = _small_column(power_w, k)
        if t is None or p is None:
            return None
        if noise < 0:
            raise ValueError("measure: noise must be >= 0")
        tt = self._measure_tables(tp)[1]
        e = rng.standard_normal((8, k))
        rows = self._measured_values(
            j.tolist(),
            tp,
            n.tolist(),
            c.tolist(),
            f.tolist(),
            t.tolist(),
            p.tolist(),
            float(noise),
            e,
        )
        time_s, power, energy, ips, llc, bw, stall, rapl, instr = zip(*rows)
        return {  # RUN_COLUMNS order (a test checks)
            "job_id": self.job_id[j] if self.job_id is not None else j,
            "application": apps,
            "submit_s": self.submit_s[j] if self.submit_s is not None else np.full(k, np.nan),
            "node_type": np.array([tp.name] * k, dtype=object),
            "nodes": n.astype(np.int64),
            "cores": c.astype(np.int64),
            "freq_ghz": f.copy(),
            "time_s": np.array(time_s, dtype=np.float64),
            "power_w": np.array(power, dtype=np.float64),
            "energy_j": np.array(energy, dtype=np.float64),
            "ctr_instructions_per_s": np.array(ips, dtype=np.float64),
            "ctr_llc_miss_ratio": np.array(llc, dtype=np.float64),
            "ctr_mem_bandwidth_gbs": np.array(bw, dtype=np.float64),
            "ctr_stall_ratio": np.array(stall, dtype=np.float64),
            "rapl_power_w": np.array(rapl, dtype=np.float64),
            "instructions": np.array(instr, dtype=np.float64),
            "requested_nodes": tt.requested_nodes[j],
            "requested_time_s": (
                self.requested_time_s[j]
                if self.requested_time_s is not None
                else np.full(k, np.nan)
            ),
        }

    def measure_row_values(
        self,
        job_index: list[int],
        node_type: Any,
        nodes: list[int],
        freq_ghz: list[float],
        cores: list[int],
        runtime_s: list[float],
        power_w: list[float],
        rng: np.random.Generator,
    ) -> list[tuple[Any, ...]]:
        """:meth:`measure` of runs given as plain lists, one tuple per run.

        Each tuple holds ``application`` and the :data:`MEASUREMENT_COLUMNS`
        (``node_type`` ... ``instructions``) as Python values: the engine's
        learning loop builds its rows from these instead of a dozen one-element
        arrays per finished job. Same values, the same draws from ``rng`` and
        the same noise level as :meth:`measure` (a test checks).
        """
        tp = self._type(node_type)
        k = len(job_index)
        if k > SMALL_BATCH:
            cols = self.measure(
                job_index, tp, nodes, freq_ghz, cores, runtime_s, power_w, rng, as_columns=True
            )
            return list(zip(*(cols[c].tolist() for c in ("application", *MEASUREMENT_COLUMNS))))
        if k == 1:  # the usual case: the same 8 draws as (8, 1), without the transpose
            draws = [rng.standard_normal(8).tolist()]
        else:
            draws = rng.standard_normal((8, k)).T.tolist()
        measure = self._run_measurer(tp, float(self.noise))
        return list(map(measure, job_index, nodes, freq_ghz, cores, runtime_s, power_w, draws))

    def row_measurer(
        self, node_type: Any, rng: np.random.Generator
    ) -> Callable[..., tuple[Any, ...]]:
        """A function that measures one finished run on ``node_type``:
        ``measure(job_index, nodes, freq_ghz, cores, runtime_s, power_w)`` returns the
        tuple :meth:`measure_row_values` returns for that run alone (the same values,
        the same 8 draws from ``rng``); given ``draws=`` (a list of 8 normal draws),
        it measures the run with those instead, as :meth:`measure_row_values` does
        each run of a batch with its column of the batch's draws.

        The engine makes one per node type and replay, and measures every finished
        job with it: the node type's tables are looked up once, not per run. It
        reads the hidden parameters as they are when it is made (replacing one of
        their arrays later is not seen; make a new one).
        """
        return self._run_measurer(self._type(node_type), float(self.noise), rng)

    def _run_measurer(
        self,
        tp: _TypePower,
        noise: float,
        rng: np.random.Generator | None = None,
        *,
        rows: bool = True,
    ) -> Callable[..., tuple[Any, ...]]:
        """The measurement of one run on node type ``tp``, the one place every
        measurement path of plain Python values goes through (:meth:`row_measurer`,
        :meth:`measure_row_values` and, for small column batches,
        :meth:`_measured_values`): ``measure(job_index, nodes, freq_ghz, cores,
        runtime_s, power_w, draws=None)`` returns the nine values of
        :func:`workloads.measurements.measure_row` (its order) at noise level
        ``noise`` from the run's 8 normal ``draws`` (``None``: the next 8 draws of
        ``rng``), after ``(application, node type name, nodes, cores, freq_ghz)``
        when ``rows`` (the engine's rows); on a division by zero, the vectorised
        formulas (:meth:`_vectorised_values`: numpy's ``inf`` and NaN) with the
        same draws."""
        m, tt = self._measure_tables(tp)
        traits, app_of, instr_of = m.traits, m.applications, m.instructions
        ps = tt.p_static_list
        cpn, fmax = tt.cores_per_node, tt.fmax_ghz
        name = tp.name
        normal = None if rng is None else rng.standard_normal
        e = np.empty(8)  # the draws land here (the same as standard_normal(8), no new array)

        def measure(
            job_index: int,
            nodes: int,
            freq_ghz: float,
            cores: int,
            runtime_s: float,
            power_w: float,
            draws: list[float] | None = None,
        ) -> tuple[Any, ...]:
            if draws is None:
                draws = normal(out=e).tolist()  # type: ignore[misc]  # (None only with draws)
            a = app_of[job_index]
            try:
                values = measure_row(
                    draws,
                    traits[a],
                    float(nodes),
                    float(cores),
                    freq_ghz,
                    runtime_s,
                    power_w,
                    ps[a],
                    instr_of[job_index],
                    cpn,
                    fmax,
                    noise,
                    noise,
                )
            except ZeroDivisionError:  # numpy's inf and NaN, with the same draws
                (values,) = self._vectorised_values(
                    [job_index],
                    tt,
                    [nodes],
                    [cores],
                    [freq_ghz],
                    [runtime_s],
                    [power_w],
                    noise,
                    np.array(draws, dtype=np.float64).reshape(8, 1),
                )
            if rows:
                return (a, name, int(nodes), int(cores), float(freq_ghz), *values)
            return values

        return measure

    def _measured_values(
        self,
        job_index: list[int],
        tp: _TypePower,
        nodes: list[float],
        cores: list[float],
        freq_ghz: list[float],
        runtime_s: list[float],
        power_w: list[float],
        noise: float,
        normals: np.ndarray,
    ) -> list[tuple[float, ...]]:
        """The nine measured values of each run (:meth:`_run_measurer` without the
        row's first fields) from the ``(8, runs)`` draws ``normals``."""
        measure = self._run_measurer(tp, noise, rows=False)
        draws = normals.T.tolist()
        return list(map(measure, job_index, nodes, freq_ghz, cores, runtime_s, power_w, draws))

    def _vectorised_values(
        self,
        job_index: list[int],
        tt: _TypeTables,
        nodes: list[Any],
        cores: list[Any],
        freq_ghz: list[float],
        runtime_s: list[float],
        power_w: list[float],
        noise: float,
        normals: np.ndarray,
    ) -> list[tuple[float, ...]]:
        """:meth:`_measured_values` by the vectorised formulas (numpy's ``inf`` and
        NaN where plain Python divides by zero), with the same draws, so both
        measurement paths give the same values."""
        jj = np.asarray(job_index, dtype=np.int64)
        cols = _measure_columns(
            **self._measure_inputs(
                jj,
                self.application[jj],
                tt,
                np.asarray(nodes, dtype=np.float64),
                np.asarray(freq_ghz, dtype=np.float64),
                np.asarray(cores, dtype=np.float64),
                np.asarray(runtime_s, dtype=np.float64),
                np.asarray(power_w, dtype=np.float64),
            ),
            noise=noise,
            rng=None,
            normals=normals,
        )
        return list(zip(*(cols[c].tolist() for c in MEASUREMENT_COLUMNS[4:])))

    # ----------------------------------------------------------- description
    def app_runtime(
        self,
        application: ArrayLike,
        node_type: Any,
        nodes: ArrayLike,
        freq_ghz: ArrayLike,
        cores: ArrayLike | None = None,
    ) -> np.ndarray:
        """Runtime (s) of one unit of work of each application (for describing shapes).

        Downey x Fluid: one-node runtime at ``Fmax`` is 1 s; hybrid: the unit
        program (1 s of compute on one node at ``Fmax``, all cores).
        """
        tp = self._type(node_type)
        apps = np.atleast_1d(np.asarray(application, dtype=np.int64))
        n = np.broadcast_to(np.asarray(nodes, dtype=np.float64), apps.shape)
        f = np.broadcast_to(np.asarray(freq_ghz, dtype=np.float64), apps.shape)
        c = (
            np.full(apps.shape, float(tp.cores_per_node))
            if cores is None
            else np.broadcast_to(np.asarray(cores, dtype=np.float64), apps.shape)
        )
        return self._evaluate_apps(
            apps, np.ones(apps.shape), tp, n, f, c, np.zeros(apps.shape)
        ).runtime_s

    def _downey_fluid(
        self,
        work: Any,
        apps: Any,
        tp: _TypePower,
        n_eff: np.ndarray,
        x: np.ndarray,
        cores: Any,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Runtime and power per node of Downey x Fluid applications ``apps`` (arrays
        or one application) at ``n_eff`` reference nodes and clock ratio ``x``, on
        ``cores`` cores per node (NumPy broadcasting): the one formula of
        :meth:`_evaluate_apps` (one entry per row) and :meth:`work_grid` (nodes x
        clocks; every entry the same operations as for one row)."""
        runtime = (
            work
            / speedup_unchecked(n_eff, self.A_[apps], self.sigma_[apps])
            * fluid_runtime_factor(x, self.alpha_[apps])
        )
        power = fluid_power(
            x, tp.p_static_w[apps], tp.p_dyn_w[apps], core_share=cores / tp.cores_per_node
        )
        return runtime, power

    def work_grid(
        self, application: int, node_type: Any, nodes: ArrayLike, freqs: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``(runtime_s, power_w per node)`` of one unit of ``application``'s work on
        every ``nodes x freqs`` configuration (all cores), shape ``(len(nodes),
        len(freqs))``; ``None`` for a hybrid application (its runtime is not
        proportional to its work). The same values as :meth:`evaluate` of such rows
        with a work of 1 (:meth:`_downey_fluid`), the speedup computed once per node
        count and the power once per clock; a Downey x Fluid job's :meth:`evaluate`
        is its work (:meth:`job_work`) times this runtime (rounded once more)."""
        if self.hybrid_[application]:
            return None
        tp = self._type(node_type)
        n = np.asarray(nodes, dtype=np.float64)
        f = np.asarray(freqs, dtype=np.float64)
        if np.any(~(n > 0)) or np.any(~(f > 0)):
            raise ValueError("nodes and freq_ghz must be > 0")
        cores = float(tp.cores_per_node)
        runtime, power = self._downey_fluid(
            1.0,
            application,
            tp,
            (n * cores / self._ref_cores)[:, None],
            (f / tp.fmax_ghz)[None, :],
            cores,
        )
        return runtime, np.broadcast_to(power, runtime.shape)

    def job_work(self, job_index: int) -> tuple[int, float]:
        """The job's ``(application, work)`` (see :meth:`work_grid`); the work is NaN
        where the trace lacks the job's runtime or processors."""
        return int(self.application[job_index]), float(self.work_[job_index])

    def app_energy(
        self, application: ArrayLike, node_type: Any, nodes: ArrayLike, freq_ghz: ArrayLike
    ) -> np.ndarray:
        """Energy (J) of one unit of work of each application (all nodes, all cores)."""
        tp = self._type(node_type)
        apps = np.atleast_1d(np.asarray(application, dtype=np.int64))
        n = np.broadcast_to(np.asarray(nodes, dtype=np.float64), apps.shape)
        f = np.broadcast_to(np.asarray(freq_ghz, dtype=np.float64), apps.shape)
        c = np.full(apps.shape, float(tp.cores_per_node))
        ev = self._evaluate_apps(apps, np.ones(apps.shape), tp, n, f, c, np.zeros(apps.shape))
        return ev.runtime_s * ev.power_w * n


def _ptype_figures(node_type: Any) -> tuple[float, float, float, float, tuple[float, ...], int]:
    pstates = sorted(node_type.pstates, key=lambda p: p.freq_ghz)
    return (
        float(pstates[0].idle_power_w),
        float(pstates[-1].busy_power_w),
        float(pstates[0].freq_ghz),
        float(pstates[-1].freq_ghz),
        tuple(float(p.freq_ghz) for p in pstates),
        int(node_type.cores_per_node),
    )


def _median_by_group(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """NaN-aware median of ``values`` per group (NaN where a group has no value)."""
    series = pd.Series(values).groupby(groups).median()
    out = np.full(n_groups, np.nan)
    out[series.index.to_numpy()] = series.to_numpy()
    return out


def assign_ground_truth(
    trace: Any,
    platform: Any,
    *,
    preset: str | WorkloadPreset = "npb-mix",
    seed: int = 0,
    noise: float = 0.02,
    grouping: str = "auto",
    max_wait_factor: float = DEFAULT_MAX_WAIT_FACTOR,
) -> TraceGroundTruth:
    """Draw every application's hidden parameters and calibrate every job.

    Args:
        trace: a :class:`workloads.schema.Trace`.
        platform: duck-typed platform (``node_types`` with ``name``,
            ``cores_per_node``, ``pstates``; optional ``nodes_per_switch`` and
            ``link_bandwidth_gbs``).
        preset: preset name or object (:mod:`workloads.presets`).
        seed: seed of the ``numpy.random.SeedSequence`` all draws come from.
        noise: default relative measurement noise (0 allowed).
        grouping: rule of :func:`group_applications`.
        max_wait_factor: saturation cap of the hybrid model's waiting.

    Calibration: with ``n_j = ceil(procs_j / cores_per_node)`` of the first
    node type (processors from :func:`recorded_procs`) and ``T_j`` the
    recorded runtime, ``L_j = T_j S(n_j)`` (Downey x Fluid) or the hybrid work
    factor ``T_j / T_unit(n_j, all cores, Fmax)``, so that
    ``evaluate(j, first type, n_j, Fmax)`` returns ``T_j`` (to rounding).
    """
    if noise < 0:
        raise ConfigError("noise", f"must be >= 0, got {noise}")
    spec = get_preset(preset)
    jobs = trace.jobs if hasattr(trace, "jobs") else trace
    node_types = list(platform.node_types)
    if not node_types:
        raise ConfigError("platform", "has no node types")
    app = group_applications(jobs, by=grouping)
    n_apps = int(app.max()) + 1 if len(app) else 0
    _, _, ref_fmin, ref_fmax, _, ref_cores = _ptype_figures(node_types[0])

    procs = recorded_procs(jobs)
    rec_nodes = np.where(np.isfinite(procs), np.maximum(1.0, np.ceil(procs / ref_cores)), np.nan)
    runtime = _column(jobs, "runtime_s")
    med_nodes = _median_by_group(rec_nodes, app, n_apps)
    med_nodes = np.where(np.isfinite(med_nodes), med_nodes, 1.0)

    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(6)]
    kind_rng, downey_rng, power_rng, hybrid_rng, share_rng, counter_rng = streams

    # kinds and alpha (Downey x Fluid); drawn for every application
    bench_names, _, table = fluid_alpha_table()
    kind_idx = kind_rng.choice(len(spec.kinds), size=n_apps, p=spec.kind_probabilities())
    columns = np.array([bench_names.index(k) for k in spec.kinds])[kind_idx]
    cluster = kind_rng.integers(0, table.shape[0], size=n_apps)
    alpha = table[cluster, columns] + kind_rng.normal(0.0, spec.alpha_jitter, size=n_apps)
    alpha = np.clip(alpha, *spec.alpha_range)
    lo, hi = spec.a_factor_range
    a_par = np.maximum(1.0, med_nodes * np.exp(downey_rng.uniform(np.log(lo), np.log(hi), n_apps)))
    sigma = downey_rng.uniform(*spec.sigma_range, size=n_apps)
    hybrid = share_rng.random(n_apps) < spec.hybrid_share
    kind = np.array(spec.kinds, dtype=object)[kind_idx]
    kind[hybrid] = "hybrid"

    # hybrid unit programs, relative to the reference node type at n_med, all cores, Fmax
    f_ref_hz = ref_fmax * 1e9
    link_bw = getattr(platform, "link_bandwidth_gbs", None) or DEFAULT_LINK_BANDWIDTH_GBS
    ports = getattr(platform, "nodes_per_switch", None)
    stall_share = hybrid_rng.uniform(*spec.hybrid_stall_share_range, n_apps)
    mem_share = hybrid_rng.uniform(*spec.hybrid_mem_share_range, n_apps)
    kappa = hybrid_rng.uniform(*spec.hybrid_kappa_range, n_apps)
    comm_share = hybrid_rng.uniform(*spec.hybrid_comm_share_range, n_apps)
    mlo, mhi = spec.hybrid_msg_bytes_range
    msg_bytes = np.exp(hybrid_rng.uniform(np.log(mlo), np.log(mhi), n_apps))
    util = hybrid_rng.uniform(*spec.hybrid_utilisation_range, n_apps)
    # memory-bound hybrid programs (drawn last: the draws above do not move)
    if spec.hybrid_memory_bound_share > 0:
        mem_bound = hybrid_rng.random(n_apps) < spec.hybrid_memory_bound_share
        mem_share = np.where(
            mem_bound,
            hybrid_rng.uniform(*spec.hybrid_memory_bound_mem_share_range, n_apps),
            mem_share,
        )
        kappa = np.where(
            mem_bound, hybrid_rng.uniform(*spec.hybrid_memory_bound_kappa_range, n_apps), kappa
        )
    cycles = f_ref_hz * ref_cores * 1.0  # 1 s of compute on one node, all cores, at Fmax
    hyb_app = HybridApp(
        work_cycles=cycles * (1.0 - stall_share),
        stall_cycles=cycles * stall_share,
        mem_stall_cycles=mem_share * f_ref_hz / (1.0 + kappa * (ref_cores - 1.0)),
        kappa=kappa,
        messages=comm_share / med_nodes * (link_bw * 1e9) / msg_bytes,
        message_bytes=msg_bytes,
        cpu_utilisation=util,
    )

    types: dict[str, _TypePower] = {}
    for nt in node_types:
        idle, busy, fmin, fmax, freqs, cpn = _ptype_figures(nt)
        j = spec.pstatic_jitter
        p_static = idle * power_rng.uniform(1.0 - j, 1.0 + j, n_apps)
        factor = power_rng.uniform(*spec.power_factor_range, n_apps)
        p_dyn = np.maximum(busy * factor - p_static, 0.0)
        types[nt.name] = _TypePower(
            name=nt.name,
            cores_per_node=cpn,
            fmin_ghz=fmin,
            fmax_ghz=fmax,
            freqs_ghz=freqs,
            p_static_w=p_static,
            p_dyn_w=p_dyn,
            hybrid=hybrid_power_figures(p_static, p_dyn, cpn),
        )
    traits = draw_counter_traits(counter_rng, n_apps)

    truth = TraceGroundTruth(
        application=app,
        preset=spec,
        seed=seed,
        noise=float(noise),
        kind_=kind,
        hybrid_=hybrid,
        A_=np.where(hybrid, np.nan, a_par),
        sigma_=np.where(hybrid, np.nan, sigma),
        alpha_=alpha,
        work_=np.zeros(len(app)),
        recorded_nodes=rec_nodes,
        recorded_runtime_s=runtime,
        instructions_=np.zeros(len(app)),
        hybrid_app_=hyb_app,
        traits_=traits,
        switch_ports=int(ports) if ports else None,
        link_bandwidth_gbs=float(link_bw),
        max_wait_factor=max_wait_factor,
        job_id=(
            np.where(np.isnan(ids := _column(jobs, "job_id")), -1, ids).astype(np.int64)
            if "job_id" in jobs
            else np.arange(len(app), dtype=np.int64)
        ),
        submit_s=_column(jobs, "submit_s"),
        requested_procs=np.where(
            _column(jobs, "procs_req") > 0, _column(jobs, "procs_req"), np.nan
        ),
        requested_time_s=np.where(
            _column(jobs, "time_req_s") > 0, _column(jobs, "time_req_s"), np.nan
        ),
        _types=types,
        _ref_cores=ref_cores,
    )
    ref = types[node_types[0].name]

    # effective alpha of hybrid applications: two unit runs at Fmin and Fmax
    if np.any(hybrid):
        ha = np.flatnonzero(hybrid)
        d_max = truth.app_runtime(ha, ref.name, med_nodes[ha], ref_fmax)
        d_min = truth.app_runtime(ha, ref.name, med_nodes[ha], ref_fmin)
        if ref_fmax > ref_fmin:
            truth.alpha_[ha] = np.clip(
                (d_min / d_max - 1.0) / (ref_fmax / ref_fmin - 1.0), 0.0, 1.0
            )

    # calibration: unit runtime at the recorded size and Fmax, then scale
    ok = np.isfinite(rec_nodes) & np.isfinite(runtime)
    idx = np.flatnonzero(ok)
    unit = truth.app_runtime(app[idx], ref.name, rec_nodes[idx], ref_fmax)
    work = np.full(len(app), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        work[idx] = runtime[idx] / unit
    truth.work_ = work
    ipc = np.asarray(traits.ipc)[app]
    instr = np.where(
        hybrid[app],
        ipc * np.asarray(hyb_app.work_cycles)[app] * work,
        ipc * f_ref_hz * ref_cores * np.maximum(alpha[app], 0.05) * work,
    )
    truth.instructions_ = instr
    logger.info(
        "ground truth %s seed %d: %d jobs, %d applications (%d hybrid), %d jobs not calibrated",
        spec.name,
        seed,
        len(app),
        n_apps,
        int(hybrid.sum()),
        int((~ok).sum()),
    )
    return truth


def describe_applications(
    truth: TraceGroundTruth,
    platform: Any,
    *,
    sizes: tuple[int, ...] = (2, 8, 32, 128),
) -> pd.DataFrame:
    """One row per application: its hidden parameters and true curves.

    Columns: ``application, kind, jobs, median_nodes, A, sigma, alpha,
    pstatic_w, pdyn_w`` (first node type), ``calib_err_max`` (max relative
    error of the truth at each job's recorded size and ``Fmax`` against its
    recorded runtime; NaN when no job is calibrated), ``speedup_n<k>`` (true
    speedup over one node, all cores, ``Fmax``), ``tfactor_<f>ghz`` (runtime
    at each P-state over runtime at ``Fmax``, at the median recorded size)
    and ``fopt_ghz`` (energy-optimal P-state at the median recorded size).
    Sorted by application id.
    """
    nt = next(iter(platform.node_types))
    tp = truth._type(nt.name)
    n_apps = truth.n_applications
    apps = np.arange(n_apps)
    jobs = np.bincount(truth.application, minlength=n_apps)
    med = _median_by_group(truth.recorded_nodes, truth.application, n_apps)
    med = np.where(np.isfinite(med), med, 1.0)

    # calibration error of every job at its recorded configuration
    ok = np.isfinite(truth.work_) & (truth.recorded_runtime_s > 0)
    idx = np.flatnonzero(ok)
    err = np.full(n_apps, np.nan)
    if idx.size:
        t, _ = truth.evaluate(idx, tp.name, truth.recorded_nodes[idx], tp.fmax_ghz)
        rel = np.abs(t - truth.recorded_runtime_s[idx]) / truth.recorded_runtime_s[idx]
        got = np.full(n_apps, -np.inf)
        np.maximum.at(got, truth.application[idx], rel)
        err = np.where(np.isfinite(got), got, np.nan)

    table: dict[str, Any] = {
        "application": apps,
        "kind": truth.kind_,
        "jobs": jobs,
        "median_nodes": med,
        "A": truth.A_,
        "sigma": truth.sigma_,
        "alpha": truth.alpha_,
        "pstatic_w": tp.p_static_w,
        "pdyn_w": tp.p_dyn_w,
        "calib_err_max": err,
    }
    t1 = truth.app_runtime(apps, tp.name, 1.0, tp.fmax_ghz)
    for k in sizes:
        table[f"speedup_n{k}"] = t1 / truth.app_runtime(apps, tp.name, float(k), tp.fmax_ghz)
    t_top = truth.app_runtime(apps, tp.name, med, tp.fmax_ghz)
    energies = []
    for f in tp.freqs_ghz:
        table[f"tfactor_{f:g}ghz"] = truth.app_runtime(apps, tp.name, med, f) / t_top
        energies.append(truth.app_energy(apps, tp.name, med, f))
    e = np.stack(energies, axis=1)[:, ::-1]  # descending frequency: ties go to the faster one
    best = np.argmin(e, axis=1)
    fopt = np.asarray(tp.freqs_ghz)[::-1][best]
    down = ~truth.hybrid_
    if np.any(down):  # Downey x Fluid: the Fluid reference (identical, cheaper to check)
        fopt[down] = fluid_optimal_pstate(
            tp.freqs_ghz,
            truth.alpha_[down],
            tp.p_static_w[down],
            tp.p_dyn_w[down],
            fmax_ghz=tp.fmax_ghz,
        )
    table["fopt_ghz"] = fopt
    return pd.DataFrame(table)
