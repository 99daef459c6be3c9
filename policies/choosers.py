"""Choosers: decide a queued job's configuration ``(node type, n, c, f)``.

A chooser is asked for a job's configuration when the backfilling scheme
considers the job; it returns a :class:`~policies.base.Decision` that the
scheme starts if it fits. Protocol (all called by
:class:`~policies.backfilling.QueuePolicy`):

* ``setup(platform, rng=..., observations=..., truth=...)`` once per run;
* ``prepare(queue, view)`` once per batch, before the queue is ordered
  (batch the predictions of every job that lacks a valid cached decision);
* ``choose(job, view) -> Decision`` for each job the scheme considers;
* ``started(decisions)`` with the decisions the scheme returned (drop caches);
* ``observe(runs)`` with the measurements of finished jobs (learning loop).

:class:`RigidChooser` is the trace's own choice: the requested node count on
the job's node type, all cores, the top frequency, planned with the job's
``estimate_s`` (requested time), or its job-length prediction when the policy
makes one (:func:`~policies.base.planned_length_s`; :mod:`policies.backfilling`,
Job-length predictions, which also gives the length predictors scale a job by).

:class:`PredictiveChooser` chooses from a :class:`~predictors.base.Predictor`.

Candidate sizes (``sizes``)
    ``"all"`` (default): every node count ``1..count`` of the job's node
    type; ``"pow2"``: powers of two up to the node type's count; ``"range"``:
    the counts in ``[ceil(req / size_range), floor(req * size_range)]``
    around the requested count ``req`` (clamped to ``1..count``). The
    requested count is always a candidate; the ``efficiency`` rule also
    always considers ``n = 1`` (its reference).

Size rules (``size``), evaluated at the top frequency
    ``rigid``: the requested count. ``min-time``: minimum predicted runtime.
    ``min-energy``: minimum predicted energy. ``min-edp``: minimum predicted
    energy x runtime. ``min-energy-slack``: minimum predicted energy among the
    sizes whose predicted runtime is ``<= (1 + slack) x`` the predicted
    runtime at the requested size. ``efficiency``: the largest size whose
    predicted efficiency ``T(1) / (n T(n)) >= efficiency``.
    ``load-adaptive``: minimum predicted runtime among the sizes up to an
    equipartition share ``max(1, count // (1 + waiting))`` where ``waiting``
    counts the other jobs queued for the node type: the whole machine when
    the queue is empty, narrower as the queue grows (re-evaluated every
    batch). Ties go to the smaller size.

Ties
    Predicted values within ``TIE_RTOL`` (1e-9, relative) of a rule's best
    value are ties: the requested size wins a tie of a size rule (the top
    frequency one of a frequency rule), else the smallest size (lowest
    frequency). Flat curves are common (energy under perfect speedup does
    not depend on ``n``), and without a tolerance rounding noise would pick.

Frequency rules (``freq``), evaluated at the chosen size
    ``fmax``: the top frequency. ``energy-optimal``: minimum predicted energy
    over the P-states. ``slack``: the lowest frequency whose predicted
    runtime is ``<= (1 + slack) x`` the predicted runtime at the requested
    size and top frequency (so a size and a frequency rule together never
    exceed the slack; the top frequency when none qualifies). ``deadline``:
    the lowest frequency whose predicted runtime is ``<=`` the job's deadline
    (``deadline_factor x`` its requested time, its ``estimate_s`` when the
    trace has none; the top frequency when none qualifies).

Joint rules (``joint``) over the predicted grid ``(n, c, f)``
    ``pareto-deadline``: minimum predicted energy among the configurations
    that meet the deadline (above); ``pareto-budget``: minimum predicted
    runtime among the configurations whose predicted energy is
    ``<= budget_factor x`` the predicted energy of the rigid configuration.
    Both choices lie on the predicted time-energy Pareto front
    (:func:`pareto_front`); without a feasible configuration: the fastest
    (deadline) or the most frugal (budget) one. The time limit of a moved
    configuration (below) is widened by the predictor's relative
    ``uncertainty`` where it gives one (``R x T / T_ref x (1 + u)``), so a
    prediction that is a little optimistic does not kill the job. Cores per node (``cores``):
    ``"all"`` every count ``1..cores_per_node``, ``"pow2"`` ``1, 2, 4, ...``
    and the node's count, ``"full"`` only the node's count. A predictor that
    does not declare ``models_cores = True`` cannot tell the counts apart, so
    the grid then keeps only the node's count (with a logged warning). The
    built-in Pareto policies default to ``sizes="range"`` (so no job takes
    more than ``size_range`` times its requested nodes), ``cores="all"``,
    the ``hybrid`` predictor and ``explore_runs=4``. Calibration runs of the
    joint rules: see :meth:`PredictiveChooser._joint_explore`.

Learning loop and fallback
    ``observe(runs)`` hands finished runs to ``predictor.update`` (built-in
    predictors refit only the applications in ``runs``) and invalidates the
    cached decisions of the queued jobs of those applications. A job whose
    application has fewer than ``min_runs`` observed runs (initial
    observations plus runs seen so far) runs **rigid**: requested size, top
    frequency, planned with its requested time. With ``require_reliable``
    the same holds while the predictor flags its prediction at the rigid
    configuration unreliable. Predictors that learn nothing (``oracle``,
    ``requested``) are trusted from the first job (``min_runs`` is ignored)
    and the engine does not measure runs for them.

Refit schedule (``refit_growth``, default 0.5)
    Finished runs are buffered per application and handed to
    ``predictor.update`` once the buffered runs of an application reach
    ``refit_growth x`` the runs the predictor already has of it (with 0.5:
    at 3, 5, 8, 12, 18, ... runs; with 0.1 after every run up to 10, then
    every 10 % more): each finished job becomes an observation, refits (and
    the invalidation of cached decisions they cause) grow only
    logarithmically with an application's run count. An application's first
    runs are held back until it has ``min_runs`` of them (its jobs run rigid
    until then anyway, planned with their requested times), then handed over
    at once. ``refit_growth=0`` refits after every batch. ``min_runs`` counts
    the runs handed to the predictor.

    Why 0.5: refitting more eagerly buys nothing measurable (an earlier
    version of the code: 0.1 and 0.25 stayed within 0.6 % of 0.5's energy,
    with waits moving both ways, and 0.5 makes about a third of the refits,
    5,200 instead of 15,000 on SDSC-SP2), and refitting less often costs
    answers. Refits are about a third of a predictor-driven replay's CPU
    time; growth 1.0 makes 3,502 instead of 5,176 on SDSC-SP2 (11.7 % fewer
    instructions over its first 10,000 jobs) but ``easy-energy-bsld-off``
    (``auto+fluid``, ``npb-mix`` seed 0) then saves 9.6 % instead of 10.7 % on
    CTC-SP2, and its mean bounded slowdown on SDSC-SP2 rises to 86.5 (rigid
    EASY: 86.0). Handing over at 0.5 only the runs that bring a new node
    count or clock, the others at 2.0, made about as few refits as 1.0
    (3,539 on SDSC-SP2) and kept those two answers, but not on another draw
    of the truth (CTC-SP2 seed 2: 7.96 % against 0.5's 8.29 %; measured
    before ``max_shrink``, see :mod:`policies.service`). Replays with
    ADEPT x fluid learning online (``npb-mix``, seed 0; energy MWh / mean
    wait s; first 60,000 jobs of HPC2N, the others in full)::

        policy, trace                  growth 0.45      0.5              0.55             1.0
        slack-size-freq, SDSC-SP2      407.5 / 21,352   406.7 / 22,218   410.1 / 35,632   406.9 / 24,088
        slack-size-freq, CTC-SP2       481.9 /  7,948   480.8 /  7,782   483.4 /  7,476   479.9 / 10,082
        slack-size-freq, KTH-SP2       131.7 /  5,876   131.7 /  6,228   131.9 /  6,296   128.5 /  5,297
        slack-size-freq, HPC2N         444.0 /  4,733   449.7 /  4,671   449.2 /  4,783   451.0 /  4,691
        min-energy-slack, SDSC-SP2     430.6 / 14,141   430.8 / 14,645   431.6 / 14,405   430.5 / 14,187

    0.45 and 0.55 are noise controls: the learning dynamics are sensitive to
    when a refit lands, so a small change of the schedule moves single-run
    waits by up to 60 % (and ``easy-energy-bsld-off``'s mean bounded slowdown
    on SDSC-SP2 between 74 and 83): read single differences of that size
    as noise.

Calibration runs (frequency rules, ``explore_runs``)
    A predictor only learns an application's DVFS sensitivity from runs at
    two frequencies, and a scheduler that always runs at ``Fmax`` never
    makes one. So, while the predictor flags the prediction at the rigid
    configuration unreliable, up to ``explore_runs`` jobs per application
    (default 2; 0 disables) run at the requested size and a calibration
    clock, planned (and limited) as if fully CPU-bound: requested time x
    ``Fmax / f``. The clocks are those of the DVFS calibration rule
    (:func:`predictors.dvfs.exploration_clock_index`): the first run at the
    **lowest** clock, the second (made only if the prediction is still
    unreliable, e.g. a fitted ``alpha`` outside ``[0, 1]``) at the middle
    clock, so the fit gets the third clock it refits on. Their predicted
    columns are left empty (no prediction was made for them).

Planned runtime and time limit (predictor-driven decisions)
    ``predicted = T(n, f)`` is recorded as ``predicted_runtime_s`` (and the
    predicted energy of the job and power per node). ``planned =
    safety_factor x predicted``. With a requested time ``R``: the rigid
    configuration keeps ``time_limit = R`` and plans ``min(planned, R)``; any
    other configuration gets ``time_limit = max(R x T(n, f) / T(n_req, Fmax),
    planned)`` (the user's limit moved by the predicted ratio, never below
    the plan). Without a requested time there is no limit. Fallback (rigid)
    decisions plan with the job's length (:func:`~policies.base.planned_length_s`)
    and keep the requested limit. The
    backfilling planners re-plan a job still running past its planned end
    to end at its time limit (:func:`policies.base.release_s`).

Performance
    Predictions are made in batches: ``prepare`` sends one ``predict`` call
    covering every candidate configuration of every job that needs one (for
    a size rule followed by a frequency rule, the whole size x P-state grid:
    one large call is cheaper than two small ones), plus one call for the jobs
    that run rigid; the decision is cached on the job (``job.scratch``) until
    the predictor refits the job's application, and ``changed_decisions``
    names the jobs each ``prepare`` decided, so that backfilling keeps a long
    queue's decisions in an index and reads only those. Nothing is predicted in
    batches where no node is free. Predictors with a ``predict_grid`` method
    (the built-ins) answer one job's size x P-state grid from per-application
    shape tables computed once per refit (same values as ``predict``; plug-in
    predictors go through ``predict``); the rigid decisions ask a predictor's
    ``predict_one`` (the built-ins) for their one configuration as Python
    values, without arrays. Predictors with a ``grid_shape``
    method (the built-ins) go further: a job's grid is a per-application
    shape times a per-job scale (:class:`~predictors.base.GridShape`), and
    every rule except ``deadline``, ``load-adaptive`` and the joint rules is
    unchanged by that scale, so the choice is made once per shape (per
    application, node type and requested size, until the next refit) and a
    job's decision costs a few multiplications. On that path a job whose
    node type, requested nodes and time and power cap match an earlier job
    of its application, and whose predictor answers with the same shape and
    scale, copies that job's decision (72 % of the decisions of the
    SDSC-SP2 replay; calibration runs are never copied). When the predictor
    was not updated since that decision and the job's length is the same, the
    predictor is not even asked (``grid_shape`` answers a question the same way
    between two updates): 43 % fewer ``grid_shape`` calls on CEA-Curie's first
    100,000 jobs. A predictor whose answers depend on the job itself
    (``grid_shape_per_job``: the oracle, whose shape is one unit of the
    application's work and whose scale is the job's work) is given the job
    and asked for every job; the chosen configuration is planned with its
    ``job_time_s``, the job's own time. Finished runs arrive as a
    :class:`~predictors.base.RunBatch` (numpy columns) from the engine and go
    to predictors that accept one (``accepts_run_batch``); others get a
    DataFrame.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from energysched.errors import ConfigError
from policies.base import ClusterView, Decision, QueuedJob, planned_length_s, rigid_decision

log = logging.getLogger(__name__)

SIZE_RULES = (
    "rigid",
    "min-time",
    "min-energy",
    "min-edp",
    "min-energy-slack",
    "efficiency",
    "load-adaptive",
)
FREQ_RULES = ("fmax", "energy-optimal", "slack", "deadline")
# the rules _pick_shape implements (the others take the general _pick_size_freq)
_SHAPE_SIZE_RULES = ("rigid", "min-time", "min-energy", "min-edp", "min-energy-slack")
_SHAPE_FREQ_RULES = ("fmax", "energy-optimal", "slack")
JOINT_RULES = ("pareto-deadline", "pareto-budget")
SIZE_SETS = ("all", "pow2", "range")
CORE_SETS = ("all", "pow2", "full")


def rule_params_in_effect(
    size: str, freq: str, joint: str | None, sizes: str = "all"
) -> frozenset[str]:
    """The parameters of :class:`PredictiveChooser` (besides the rules and the
    predictor) that can change a decision or a plan under these rules.

    Always ``min_runs``, ``require_reliable``, ``safety_factor`` and
    ``refit_growth`` (the learning loop, the rigid fallback, the plans);
    ``sizes`` when a rule chooses the size (``size_range`` when ``sizes`` is
    ``"range"``); ``explore_runs`` when a rule chooses the clock (calibration
    runs); ``cores`` with a joint rule; ``slack``, ``efficiency``,
    ``deadline_factor`` and ``budget_factor`` with the rules that read them
    (see the class docstring). The built-in policies take no other rule
    parameter: a value that cannot change anything is refused, not ignored.
    """
    used = {"min_runs", "require_reliable", "safety_factor", "refit_growth"}
    if joint is not None:
        used |= {"sizes", "cores", "explore_runs"}
        used.add("deadline_factor" if joint == "pareto-deadline" else "budget_factor")
    else:
        if size != "rigid":
            used.add("sizes")
        if freq != "fmax":
            used.add("explore_runs")
        if size == "min-energy-slack" or freq == "slack":
            used.add("slack")
        if size == "efficiency":
            used.add("efficiency")
        if freq == "deadline":
            used.add("deadline_factor")
    if "sizes" in used and sizes == "range":
        used.add("size_range")
    return frozenset(used)


class Chooser:
    """Base class: ``choose(job, view) -> Decision``.

    ``cacheable`` = True means the decision of a job does not depend on the
    cluster state (informational; choosers manage their own caches).
    ``learns`` = True asks the engine to measure finished jobs and call
    :meth:`observe`. ``decision_epoch`` is a number that changes whenever
    the decision of a queued job may have changed (a refit); ``None`` (the
    default, e.g. for plug-ins) means "unknown": backfilling then rescans the
    whole queue every batch instead of only the jobs that arrived since a
    batch that started nothing.

    ``rigid_decisions`` = True declares that :meth:`choose` returns the trace's
    own choice whatever the view: ``rigid_decision(job, top frequency of
    job.node_type)`` (:func:`~policies.base.rigid_decision`: requested nodes,
    planned with :func:`~policies.base.planned_length_s`). Backfilling may then build those
    decisions itself (rigid EASY and FCFS on one partition) and bound the
    conservative scan by the queued jobs' shapes. False (the default, the safe
    answer) asks :meth:`choose` for every decision.
    """

    name = "chooser"
    cacheable = True
    learns = False
    decision_epoch: int | None = None
    rigid_decisions = False

    def setup(self, platform: Any, **context: Any) -> None:
        self.platform = platform

    def prepare(self, queue: Sequence[QueuedJob], view: ClusterView) -> None:
        """Called once per batch before ordering (default: nothing)."""

    def choose(self, job: QueuedJob, view: ClusterView) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError

    def decisions(self, jobs: Sequence[QueuedJob]) -> list[Decision] | None:
        """After :meth:`prepare`: the decision :meth:`choose` would return for
        each of ``jobs`` in this batch (the same objects), read from the
        chooser's cache without deciding anything; or ``None`` (the default)
        when that is not known that cheaply. Backfilling uses them to skip
        the jobs that cannot fit the free nodes without asking for their
        decisions, and to scan one partition in a tight loop."""
        return None

    def changed_decisions(self) -> Sequence[QueuedJob] | None:
        """After :meth:`prepare`: the queued jobs whose decision that call made or may
        have changed (new jobs; jobs of an application the predictor was refitted
        for), when :meth:`decisions` answers for the whole queue and every other
        queued job keeps the decision it had after the previous :meth:`prepare`;
        ``None`` (the default) when that is not known. On a long queue,
        backfilling keeps an index of the queued decisions up to date from these
        jobs alone instead of reading every queued job's decision in every
        batch."""
        return None

    def started(self, decisions: Sequence[Decision]) -> None:
        """The decisions returned to the engine this batch (default: nothing)."""

    def observe(self, runs: Any) -> None:
        """Finished runs (learning loop; default: nothing)."""

    def params(self) -> dict[str, Any]:
        return {}


class RigidChooser(Chooser):
    """Requested nodes, all cores, top frequency, requested time (or the job's
    predicted length, when the policy predicts job lengths: it is then also the
    decision's predicted runtime).

    The decision is cached in ``job.scratch``.
    """

    name = "rigid"
    decision_epoch = 0  # decisions never change
    accepts_run_batch = True  # (observes nothing; the policy may learn job lengths)

    @property
    def rigid_decisions(self) -> bool:  # type: ignore[override]
        """Declared (see :class:`Chooser`) unless a subclass decides or reports its
        decisions differently (overrides :meth:`choose` or :meth:`decisions`
        without declaring it again)."""
        cls = type(self)
        return cls.choose is RigidChooser.choose and cls.decisions is RigidChooser.decisions

    def setup(self, platform: Any, **context: Any) -> None:
        super().setup(platform, **context)
        self._fmax = [t.fmax_ghz for t in platform.node_types]

    def decisions(self, jobs: Sequence[QueuedJob]) -> list[Decision] | None:
        if type(self).choose is not RigidChooser.choose:
            return None  # a subclass decides differently
        choose = self.choose
        return [choose(j, None) for j in jobs]  # type: ignore[arg-type]  # view unused

    def choose(self, job: QueuedJob, view: ClusterView) -> Decision:
        d = job.scratch
        if d is not None and d.__class__ is Decision:
            return d
        d = job.scratch = rigid_decision(job, self._fmax[job.node_type])
        return d


# --------------------------------------------------------------------------- predictors


def resolve_predictor(spec: Any, *, truth: Any = None, platform: Any = None) -> Any:
    """A predictor instance from a spec (name, ``module:Class``, or instance).

    ``"oracle"`` (or an :class:`~predictors.baselines.OraclePredictor` without
    a truth) is given the run's ground truth ``truth``; it is a
    :class:`~energysched.errors.ConfigError` when the run has none. Other
    names go through :func:`predictors.registry.get_predictor`.
    """
    from predictors.baselines import OraclePredictor

    if spec is None:
        raise ConfigError("predictor", "a predictor-driven policy needs a predictor")
    if isinstance(spec, str):
        if spec == "oracle":
            if truth is None:
                raise ConfigError(
                    "predictor",
                    "the oracle predictor reads the ground truth, but this run has none "
                    "(give a ground-truth preset)",
                )
            return OraclePredictor(truth, platform)
        from predictors.registry import get_predictor

        return get_predictor(spec)
    if isinstance(spec, type):
        spec = spec()
    if isinstance(spec, OraclePredictor) and spec.truth is None:
        if truth is None:
            raise ConfigError("predictor", "the oracle predictor needs the run's ground truth")
        spec.truth = truth
        if spec.platform is None:
            spec.platform = platform
    return spec


def predictor_is_static(predictor: Any) -> bool:
    """True for predictors that learn nothing from runs: those that declare
    ``learns_from_runs = False`` (oracle, requested, a composite of two such) or
    ``static = True``."""
    return not getattr(predictor, "learns_from_runs", True) or bool(
        getattr(predictor, "static", False)
    )


def pareto_front(time_s: np.ndarray, energy_j: np.ndarray) -> np.ndarray:
    """Indices of the time-energy Pareto-optimal points (no other point is
    at least as good in both and better in one), sorted by time (s)."""
    t = np.asarray(time_s, dtype=float)
    e = np.asarray(energy_j, dtype=float)
    ok = np.flatnonzero(np.isfinite(t) & np.isfinite(e))
    if len(ok) == 0:
        return ok
    order = ok[np.lexsort((e[ok], t[ok]))]
    front = []
    best = math.inf
    for i in order.tolist():
        if e[i] < best:
            front.append(i)
            best = e[i]
    return np.asarray(front, dtype=np.int64)


class _Entry:
    """A job's cached choice: decision (or the grid for view-dependent rules)."""

    __slots__ = ("app", "decision", "grid", "version")

    def __init__(self, app: int, version: int, decision: Decision | None, grid: Any = None) -> None:
        self.app = app
        self.version = version
        self.decision = decision
        self.grid = grid

    @property
    def planned_runtime_s(self) -> float | None:
        d = self.decision
        return None if d is None else d.planned_runtime_s


class _TypeInfo:
    __slots__ = ("cores", "count", "fmax", "freqs", "name", "pow2", "top_freq")

    def __init__(self, ntype: Any) -> None:
        self.name = str(ntype.name)
        self.count = int(ntype.count)
        self.cores = int(ntype.cores_per_node)
        self.freqs = np.asarray(ntype.freqs_ghz, dtype=float)
        self.top_freq = self.freqs[-1:]  # the top P-state alone (fmax rules)
        self.fmax = float(ntype.fmax_ghz)
        p = [1]
        while p[-1] * 2 <= self.count:
            p.append(p[-1] * 2)
        self.pow2 = np.asarray(p, dtype=np.int64)


#: Applications whose reusable decisions :class:`PredictiveChooser` keeps (each holds
#: the predictor's shape of its last answer: a (node counts x clocks) table).
REUSE_APPLICATIONS = 256


class PredictiveChooser(Chooser):
    """Chooses ``(n, f)`` (and ``c``) from a predictor; see the module docstring.

    Args:
        predictor: spec (registry name, ``module:Class``) or a Predictor instance.
        size: size rule (:data:`SIZE_RULES`).
        freq: frequency rule (:data:`FREQ_RULES`).
        joint: joint rule (:data:`JOINT_RULES`) or ``None``; replaces size and freq.
        sizes: candidate sizes (:data:`SIZE_SETS`).
        size_range: factor of the ``"range"`` candidate set (>= 1).
        cores: cores-per-node candidates of the joint rules (:data:`CORE_SETS`;
            ``"all"``: every count, ``"full"``: only the node's count).
        slack: relative runtime slack of the slack rules (0.1 = 10%).
        efficiency: threshold of the efficiency rule (0..1].
        deadline_factor: deadline = factor x requested time.
        budget_factor: energy budget = factor x predicted rigid energy.
        min_runs: observed runs of an application before its jobs are moldable.
        require_reliable: also run rigid while the rigid prediction is unreliable.
        safety_factor: planned runtime = factor x predicted runtime (> 0).
        explore_runs: calibration runs per application (frequency rules only;
            the lowest clock, then the middle one: see the module docstring).
        refit_growth: refit an application once its unseen runs reach this
            fraction of the runs the predictor has of it (0: after every batch).
    """

    name = "predictive"
    #: the jobs the last prepare() decided (changed_decisions); None: not known
    _changed: list[QueuedJob] | None = None
    learns = True
    #: reuse a decision made since the predictor's last update for the same question
    #: without asking the predictor (False: ask, and reuse on the same answer)
    reuse_without_asking = True

    def __init__(
        self,
        predictor: Any = "auto+fluid",
        size: str = "rigid",
        freq: str = "fmax",
        joint: str | None = None,
        sizes: str = "all",
        size_range: float = 2.0,
        cores: str = "all",
        slack: float = 0.1,
        efficiency: float = 0.5,
        deadline_factor: float = 1.0,
        budget_factor: float = 1.0,
        min_runs: int = 3,
        require_reliable: bool = False,
        safety_factor: float = 1.0,
        explore_runs: int = 2,
        refit_growth: float = 0.5,
    ) -> None:
        if size not in SIZE_RULES:
            raise ConfigError("size", f"unknown size rule {size!r}; known: {', '.join(SIZE_RULES)}")
        if freq not in FREQ_RULES:
            raise ConfigError(
                "freq", f"unknown frequency rule {freq!r}; known: {', '.join(FREQ_RULES)}"
            )
        if joint is not None and joint not in JOINT_RULES:
            raise ConfigError(
                "joint", f"unknown joint rule {joint!r}; known: {', '.join(JOINT_RULES)}"
            )
        if sizes not in SIZE_SETS:
            raise ConfigError("sizes", f"must be one of {', '.join(SIZE_SETS)}, got {sizes!r}")
        if cores not in CORE_SETS:
            raise ConfigError("cores", f"must be one of {', '.join(CORE_SETS)}, got {cores!r}")
        checks = {
            "size_range": size_range >= 1,
            "slack": slack >= 0,
            "efficiency": 0 < efficiency <= 1,
            "deadline_factor": deadline_factor > 0,
            "budget_factor": budget_factor > 0,
            "safety_factor": safety_factor > 0,
            "refit_growth": refit_growth >= 0,
            "min_runs": isinstance(min_runs, (int, np.integer)) and min_runs >= 0,
            "explore_runs": isinstance(explore_runs, (int, np.integer)) and explore_runs >= 0,
        }
        for key, ok in checks.items():
            if not ok:
                raise ConfigError(key, f"invalid value {locals()[key]!r}")
        self.predictor_spec = predictor
        self.size = size
        self.freq = freq
        self.joint = joint
        self.sizes = sizes
        self.size_range = float(size_range)
        self.cores = cores
        self.slack = float(slack)
        self.efficiency = float(efficiency)
        self.deadline_factor = float(deadline_factor)
        self.budget_factor = float(budget_factor)
        self.min_runs = int(min_runs)
        self.require_reliable = bool(require_reliable)
        self.safety_factor = float(safety_factor)
        self.explore_runs = int(explore_runs)
        self.refit_growth = float(refit_growth)
        self.one_call = True  # size x frequency grid in one predict call (faster than two)
        self.cacheable = size != "load-adaptive" or joint is not None
        self.name = joint if joint is not None else f"{size}/{freq}"

    @property
    def shape_rules(self) -> bool:
        """Whether the rules' choice is unchanged when every predicted time and
        energy of a job is multiplied by the same positive factor (then it is
        made once per :class:`~predictors.base.GridShape`, see Performance)."""
        return (
            self.joint is None
            and self.size != "load-adaptive"
            and self.freq != "deadline"
            and (self.one_call or self.freq == "fmax" or self.size == "rigid")
        )

    # ------------------------------------------------------------------ setup
    def params(self) -> dict[str, Any]:
        spec = self.predictor_spec
        return {
            "predictor": spec if isinstance(spec, str) else type(spec).__name__,
            "size": self.size,
            "freq": self.freq,
            "joint": self.joint,
            "sizes": self.sizes,
            "size_range": self.size_range,
            "cores": self.cores,
            "slack": self.slack,
            "efficiency": self.efficiency,
            "deadline_factor": self.deadline_factor,
            "budget_factor": self.budget_factor,
            "min_runs": self.min_runs,
            "require_reliable": self.require_reliable,
            "safety_factor": self.safety_factor,
            "explore_runs": self.explore_runs,
            "refit_growth": self.refit_growth,
        }

    def setup(self, platform: Any, **context: Any) -> None:
        from predictors.base import Observations

        super().setup(platform, **context)
        truth = context.get("truth")
        observations = context.get("observations")
        predictor = resolve_predictor(self.predictor_spec, truth=truth, platform=platform)
        if observations is None:
            observations = Observations(platform=platform)
        elif getattr(observations, "platform", None) is None:
            observations = Observations(
                runs=observations.runs, benchmarks=observations.benchmarks, platform=platform
            )
        predictor.fit(observations)
        self.predictor = predictor
        # fast path (built-in predictors): one job's size x frequency grid from cached tables
        self._grid_fn = getattr(predictor, "predict_grid", None)
        # and one configuration of one job as Python values (rigid decisions)
        self._one_fn = getattr(predictor, "predict_one", None)
        # faster still: scale-free rules are decided once per application shape
        self._shape_fn = getattr(predictor, "grid_shape", None) if self.shape_rules else None
        # a predictor whose answers depend on the job itself (the oracle) is told the
        # job, and asked for every job (the same question may get another answer)
        self._shape_per_job = bool(getattr(predictor, "grid_shape_per_job", False))
        # and gives the job's own time at the configuration picked
        self._job_time_fn = getattr(predictor, "job_time_s", None) if self._shape_per_job else None
        self.static = predictor_is_static(predictor)
        self.learns = not self.static
        self.decision_epoch = 0 if self.cacheable else None
        self._min_runs = 0 if self.static else self.min_runs
        self._types = [_TypeInfo(t) for t in platform.node_types]
        self._max_freqs = max(len(t.freqs) for t in self._types)
        self._version: dict[int, int] = {}
        self._runs: dict[int, int] = {}
        runs = getattr(observations, "runs", None)
        if runs is not None and len(runs):
            apps, counts = np.unique(
                runs["application"].to_numpy(dtype=np.int64), return_counts=True
            )
            for a, c in zip(apps.tolist(), counts.tolist()):
                self._runs[a] = c
        self._by_app: dict[int, dict[int, QueuedJob]] = {}
        self._stale: set[int] = set()
        self._size_cache: dict[tuple[int, int], tuple[np.ndarray, int]] = {}
        self._size_sets: dict[tuple[str, bytes], np.ndarray] = {}  # distinct candidate sets
        self._all_sizes: dict[int, np.ndarray] = {}  # sizes="all": per node type, 1..count
        # id of a size set -> (the set, its sizes as floats), for _pick_shape
        self._float_sizes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._cap: list[int] = [t.count for t in self._types]
        self._explored: dict[int, int] = {}
        self._explore_pending: dict[int, list[tuple[int, int, float]]] = {}
        self._core_cache: dict[int, np.ndarray] = {}
        self._use_cores = self.cores != "full" and bool(getattr(predictor, "models_cores", False))
        if self.joint is not None and self.cores != "full" and not self._use_cores:
            log.warning(
                "predictor %s does not model cores per node (no models_cores): the %s rule "
                "keeps every core of a node (cores=%r ignored)",
                type(predictor).__name__,
                self.joint,
                self.cores,
            )
        self._pending: dict[int, list[Any]] = {}
        self._cap_w = math.inf
        self._fresh = False
        self._changed = None
        from predictors.base import RunRows

        self._run_rows = RunRows
        types = platform.node_types
        self._idle_all_w = sum(t.count * t.idle_power_w for t in types)
        self._idle_w = np.array([t.idle_power_w for t in types], dtype=float)
        self._boot_w = np.array([t.boot_power_w for t in types], dtype=float)
        self.stats = {
            "predict_calls": 0,
            "predict_rows": 0,
            "refits": 0,
            "decisions": 0,
            "shape_hits": 0,
            "shape_picks": 0,
            "shape_reuses": 0,
        }
        #: per application: (version, {(node type, requested nodes, requested time,
        #: power cap): (shape, scale, Decision fields but the job)}) of the shape
        #: path's decisions. A decision is a function of these and of the shape and
        #: scale the predictor answered (a shape is a new object whenever its
        #: values change, e.g. when another application's refit moves a shared
        #: prior), once the application's calibration runs are done (until then,
        #: and for a job that is a calibration run, nothing is kept): the next job
        #: with the same key and the same answer copies it (most jobs of a trace
        #: repeat an earlier request) instead of picking and building it again.
        #: (At most REUSE_APPLICATIONS applications, the least recently refitted or
        #: first seen dropped first: the kept shapes hold the predictor's tables.)
        self._reuse: dict[int, tuple[int, dict[Any, tuple[Any, ...]]]] = {}
        #: predictor updates so far: a reusable decision made since the last one is
        #: reused without asking the predictor again (see _choose_by_shape)
        self._predictor_updates = 0
        self._rigid_sizes: dict[tuple[int, int], np.ndarray] = {}

    # ------------------------------------------------------------------ learning loop
    @property
    def accepts_run_batch(self) -> bool:
        """The engine may hand :meth:`observe` a :class:`~predictors.base.RunBatch`."""
        return type(self).observe is PredictiveChooser.observe

    def observe(self, runs: Any) -> None:
        """Buffer finished runs per application; hand them to the predictor when due.

        ``runs``: a DataFrame, a :class:`~predictors.base.RunBatch` or a
        :class:`~predictors.base.RunRows` (the engine's usual hand-over: the
        rows are buffered as they are and become columns once, when handed
        over). The predictor receives a RunBatch when it accepts one, else a
        DataFrame.
        """
        if self.static or runs is None or len(runs) == 0:
            return
        rows_cls = self._run_rows
        if runs.__class__ is not rows_cls:
            from predictors.base import RunBatch

            if not isinstance(runs, RunBatch):
                runs = RunBatch.from_frame(runs)
        if self.refit_growth <= 0:
            batch = runs.to_batch() if runs.__class__ is rows_cls else runs
            apps, counts = np.unique(
                np.asarray(batch["application"], dtype=np.int64), return_counts=True
            )
            self._update(batch, zip(apps.tolist(), counts.tolist()))
            return
        buffer = self._buffer
        if runs.__class__ is rows_cls:
            app_at = rows_cls.APPLICATION
            rows = runs.rows
            if len(rows) == 1:  # the engine's usual hand-over: one run, seldom due
                row = rows[0]
                if not buffer(row[app_at], row, 1):
                    return
                due = {row[app_at]}
            else:
                due = {row[app_at] for row in rows if buffer(row[app_at], row, 1)}
        else:
            app_col = np.asarray(runs["application"], dtype=np.int64)
            a0 = int(app_col[0])
            if len(app_col) == 1 or (app_col == a0).all():
                due = {a0} if buffer(a0, runs, len(runs)) else set()
            else:
                due = set()
                for a in np.unique(app_col).tolist():
                    part = runs.take(app_col == a)
                    if buffer(a, part, len(part)):
                        due.add(a)
        if not due:
            return
        # applications in ascending order, each one's runs in the order they came
        handed = [(a, *self._pending.pop(a)) for a in sorted(due)]  # (app, parts, runs)
        parts = [p for _, got, _ in handed for p in got]
        if all(p.__class__ is tuple for p in parts):
            new = rows_cls(parts).to_batch()
        else:
            from predictors.base import RunBatch

            new = RunBatch.concat(
                [p if p.__class__ is not tuple else rows_cls([p]).to_batch() for p in parts]
            )
        self._update(new, [(a, n) for a, _, n in handed])

    def _buffer(self, app: int, part: Any, count: int) -> bool:
        """Buffer ``count`` finished runs of ``app`` (``part``: a RunBatch, or one
        row of a RunRows); whether its buffered runs are due (refit schedule)."""
        slot = self._pending.get(app)
        if slot is None:
            slot = self._pending[app] = [[], 0]
        slot[0].append(part)
        slot[1] += count
        had = self._runs.get(app, 0)
        return slot[1] >= self.refit_growth * had and had + slot[1] >= self._min_runs

    def _update(self, runs: Any, counts: Iterable[tuple[int, int]]) -> None:
        """Hand ``runs`` to the predictor and invalidate the decisions of their
        applications (``counts``: ``(application, runs)`` pairs, ascending)."""
        predictor = self.predictor
        self.predictor.update(
            runs if getattr(predictor, "accepts_run_batch", False) else runs.to_frame()
        )
        self._predictor_updates += 1
        self.stats["refits"] += 1
        self._fresh = False
        if self.decision_epoch is not None:
            self.decision_epoch += 1
        version = self._version
        nruns = self._runs
        stale = self._stale
        by_app = self._by_app
        pending = self._explore_pending
        for a, c in counts:
            pending.pop(a, None)  # the predictor now has these runs
            nruns[a] = nruns.get(a, 0) + c
            version[a] = version.get(a, 0) + 1
            if a in by_app:
                stale.add(a)

    def started(self, decisions: Sequence[Decision]) -> None:
        by_app = self._by_app
        for d in decisions:
            job = d.job
            waiting = by_app.get(job.application)
            if waiting is not None:
                waiting.pop(job.index, None)
                if not waiting:
                    del by_app[job.application]

    # ------------------------------------------------------------------ per batch
    def prepare(self, queue: Sequence[QueuedJob], view: ClusterView) -> None:
        self._cap_w = view.power_cap_w
        self._fresh = False
        if self.size == "load-adaptive" and self.joint is None:
            waiting = [0] * len(self._types)
            for job in queue:
                waiting[job.node_type] += 1
            self._cap = [max(1, t.count // max(1, w)) for t, w in zip(self._types, waiting)]
        self._changed = None
        if not any(view.free_nodes):
            return
        need: list[QueuedJob] = []
        # new jobs are appended by the engine: scan backwards to the first cached one
        for job in reversed(queue):
            if job.scratch is not None:
                break
            need.append(job)
        if self._stale:
            version = self._version
            for app in self._stale:
                for job in self._by_app.get(app, {}).values():
                    e = job.scratch
                    if e is not None and e.version != version.get(app, 0):
                        need.append(job)
            self._stale = set()
        if need:
            self._predict_jobs(need)
        # every queued job has a current decision (see decisions()); the others'
        # decisions are those of the previous call
        self._fresh = self.cacheable
        self._changed = need

    def decisions(self, jobs: Sequence[QueuedJob]) -> list[Decision] | None:
        if not self._fresh or type(self).choose is not PredictiveChooser.choose:
            return None  # not all decided and current, or a subclass decides differently
        try:
            # _fresh: prepare() decided every queued job and nothing changed since
            return [j.scratch.decision for j in jobs]
        except AttributeError:  # a job prepare() did not see
            return None

    def changed_decisions(self) -> Sequence[QueuedJob] | None:
        if not self._decides_as(PredictiveChooser):
            return None
        if self._changed is None or self.decisions([]) is None:
            return None  # prepare() decided nothing, or decisions() does not answer
        return self._changed

    def _decides_as(self, cls: type[Chooser]) -> bool:
        """Whether this chooser's ``prepare`` and ``decisions`` are those of ``cls``,
        whose ``changed_decisions`` then holds for it too. A subclass that decides or
        reports its decisions its own way answers ``changed_decisions`` with
        ``None`` unless it declares the hook itself: only it can say which change."""
        own = type(self)
        return own.decisions is cls.decisions and own.prepare is cls.prepare

    def choose(self, job: QueuedJob, view: ClusterView) -> Decision:
        e = job.scratch
        if e is None or e.__class__ is not _Entry or e.version != self._version.get(e.app, 0):
            self._predict_jobs([job])
            e = job.scratch
        d = e.decision
        if d is None:  # view-dependent rule
            d = self._load_adaptive(job, e)
        return d

    # ------------------------------------------------------------------ predictions
    def _candidate_sizes(self, job: QueuedJob) -> tuple[np.ndarray, int]:
        """Allowed sizes of a job (ascending) and the column of its requested size.

        The arrays are read-only and shared: one object per distinct size set,
        which a predictor may recognise by identity (the invariant
        :func:`predictors.baselines.frozen_array` states)."""
        key = (job.node_type, job.requested_nodes)
        got = self._size_cache.get(key)
        if got is not None:
            return got
        t = self._types[job.node_type]
        req = min(job.requested_nodes, t.count)
        if self.sizes == "all" and req >= 1:
            # every node count of the type, the request (and 1) among them: the union
            # below gives the same sizes for every request, so they are built once per
            # node type (not sorted and hashed again for each new request: 5,040
            # sizes on CEA-Curie), and the request's column is req - 1
            s = self._all_sizes.get(job.node_type)
            if s is None:
                s = np.arange(1, t.count + 1, dtype=np.int64)
                s = self._size_sets.setdefault((s.dtype.str, s.tobytes()), _read_only(s))
                self._all_sizes[job.node_type] = s
            got = (s, req - 1)
            self._size_cache[key] = got
            return got
        if self.sizes == "all":
            s = np.arange(1, t.count + 1, dtype=np.int64)
        elif self.sizes == "pow2":
            s = t.pow2
        else:
            lo = max(1, math.ceil(req / self.size_range))
            hi = min(t.count, math.floor(req * self.size_range))
            s = np.arange(lo, hi + 1, dtype=np.int64)
        extra = [req]
        if self.size == "efficiency" and self.joint is None:
            extra.append(1)
        s = np.union1d(s, np.asarray(extra, dtype=np.int64))
        # one array per distinct size set (with sizes="all", every request up to the
        # node type's count has the same candidates: one array, not one per request)
        s = self._size_sets.setdefault((s.dtype.str, s.tobytes()), _read_only(s))
        got = (s, int(np.searchsorted(s, req)))
        self._size_cache[key] = got
        return got

    def _predict(
        self,
        jobs: Sequence[QueuedJob],
        rows_per_job: np.ndarray,
        nodes: np.ndarray,
        freq: np.ndarray,
        cores: np.ndarray | None = None,
    ) -> Any:
        from predictors.base import Queries

        rep = rows_per_job
        apps = np.repeat(np.fromiter((j.application for j in jobs), np.int64, len(jobs)), rep)
        # single node type: omit the names (the predictors' default), cheaper for them
        names = None
        if len(self._types) > 1:
            names_per_job = np.array([self._types[j.node_type].name for j in jobs], dtype=object)
            names = np.repeat(names_per_job, rep)
        q = Queries(
            application=apps,
            nodes=nodes,
            freq_ghz=freq,
            node_type=names,
            cores=cores,
            requested_nodes=np.repeat(
                np.fromiter((j.requested_nodes for j in jobs), np.int64, len(jobs)), rep
            ),
            requested_time_s=np.repeat(
                np.fromiter((_length_input(j) for j in jobs), np.float64, len(jobs)), rep
            ),
            job_index=np.repeat(np.fromiter((j.index for j in jobs), np.int64, len(jobs)), rep),
        )
        self.stats["predict_calls"] += 1
        self.stats["predict_rows"] += len(apps)
        pred = self.predictor.predict(q)
        return pred

    def _predict_grid(
        self,
        jobs: Sequence[QueuedJob],
        sizes: np.ndarray,
        valid: np.ndarray,
        freqs: np.ndarray,
        fvalid: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """Predictions on each job's grid ``sizes[k][valid[k]] x freqs[k][fvalid[k]]``
        through the predictor's ``predict_grid`` fast path: ``(T, P, E, R)`` of shape
        ``(B, K, F)`` padded with ``inf``/``nan``/``inf``/False, exactly what
        :meth:`_predict` on the flattened grid gives; ``None`` when the predictor
        has no fast path for some job."""
        grid = self._grid_fn
        if grid is None:
            return None
        B, K = sizes.shape
        F = freqs.shape[1]
        T3 = np.full((B, K, F), np.inf)
        P3 = np.full((B, K, F), np.nan)
        E3 = np.full((B, K, F), np.inf)
        R3 = np.zeros((B, K, F), dtype=bool)
        types = self._types
        rows = 0
        for k, job in enumerate(jobs):
            nk = int(valid[k].sum())
            nf = int(fvalid[k].sum())
            got = grid(
                job.application,
                types[job.node_type].name,
                sizes[k, :nk],
                freqs[k, :nf],
                job.requested_nodes,
                _length_input(job),
            )
            if got is None:
                return None
            T3[k, :nk, :nf], P3[k, :nk, :nf], E3[k, :nk, :nf], R3[k, :nk, :nf] = got
            rows += nk * nf
        self.stats["predict_calls"] += 1
        self.stats["predict_rows"] += rows
        return T3, P3, E3, R3

    def _predict_jobs(self, jobs: list[QueuedJob]) -> None:
        """Predict and cache the choice of ``jobs`` (batched)."""
        nruns = self._runs
        min_runs = self._min_runs
        by_app = self._by_app
        rigid: list[QueuedJob] = []
        moldable: list[QueuedJob] = []
        for job in jobs:
            app = job.application
            if min_runs and nruns.get(app, 0) < min_runs:
                rigid.append(job)
            else:
                moldable.append(job)
            waiting = by_app.get(app)
            if waiting is None:
                waiting = by_app[app] = {}
            waiting[job.index] = job
        if moldable and self._shape_fn is not None:
            moldable = self._choose_by_shape(moldable, rigid)
        if moldable:
            if self.joint is not None:
                rigid.extend(self._choose_joint(moldable))
            else:
                rigid.extend(self._choose_size_freq(moldable))
        if rigid:
            self._choose_rigid(rigid)
        self.stats["decisions"] += len(jobs)

    def _choose_rigid(self, jobs: list[QueuedJob]) -> None:
        """Fallback: requested size, Fmax, planned with the requested time."""
        types = self._types
        nodes = [min(j.requested_nodes, types[j.node_type].count) for j in jobs]
        freq = [types[j.node_type].fmax for j in jobs]
        got = self._predict_one_each(jobs, nodes)
        if got is not None:
            t, p, e = got
        else:
            pred = self._predict(
                jobs,
                np.ones(len(jobs), dtype=np.int64),
                np.asarray(nodes, dtype=np.int64),
                np.asarray(freq, dtype=np.float64),
            )
            t, p, e = pred.time_s.tolist(), pred.power_w.tolist(), pred.energy_j.tolist()
        version = self._version
        for k, job in enumerate(jobs):
            d = Decision(
                job,
                nodes[k],
                freq[k],
                job.node_type,
                None,
                planned_length_s(job),
                None,
                _finite(p[k]),
                _finite(e[k]),
                _finite(t[k]),
            )
            job.scratch = _Entry(job.application, version.get(job.application, 0), d)

    def _predict_one_each(
        self, jobs: list[QueuedJob], nodes: list[int]
    ) -> tuple[list[float], list[float], list[float]] | None:
        """Predicted time, power and energy of each job at ``nodes[k]`` nodes and the
        top P-state through the predictor's ``predict_one`` (Python values), else its
        ``predict_grid`` (one cell per job; the same values as :meth:`_predict_grid`);
        ``None`` without either fast path."""
        types = self._types
        t: list[float] = []
        p: list[float] = []
        e: list[float] = []
        one = self._one_fn
        if one is not None:
            for job, n in zip(jobs, nodes):
                ti = types[job.node_type]
                got = one(
                    job.application,
                    ti.name,
                    n,
                    ti.top_freq,
                    job.requested_nodes,
                    _length_input(job),
                )
                if got is None:
                    return None
                t.append(got[0])
                p.append(got[1])
                e.append(got[2])
            self.stats["predict_calls"] += 1
            self.stats["predict_rows"] += len(jobs)
            return t, p, e
        grid = self._grid_fn
        if grid is None:
            return None
        for job, n in zip(jobs, nodes):
            ti = types[job.node_type]
            got = grid(
                job.application,
                ti.name,
                np.array([n], dtype=np.int64),
                ti.top_freq,
                job.requested_nodes,
                _length_input(job),
            )
            if got is None:
                return None
            t.append(float(got[0][0, 0]))
            p.append(float(got[1][0, 0]))
            e.append(float(got[2][0, 0]))
        self.stats["predict_calls"] += 1
        self.stats["predict_rows"] += len(jobs)
        return t, p, e

    def _size_grid(self, jobs: list[QueuedJob]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Padded candidate sizes ``(B, K)``, validity mask and requested column."""
        cands = [self._candidate_sizes(j) for j in jobs]
        width = max(len(c[0]) for c in cands)
        sizes = np.ones((len(jobs), width), dtype=np.int64)
        valid = np.zeros((len(jobs), width), dtype=bool)
        req_col = np.empty(len(jobs), dtype=np.int64)
        for k, (s, r) in enumerate(cands):
            sizes[k, : len(s)] = s
            valid[k, : len(s)] = True
            req_col[k] = r
        return sizes, valid, req_col

    def _choose_size_freq(self, jobs: list[QueuedJob]) -> list[QueuedJob]:
        """Size rule at Fmax, then frequency rule at the chosen size. Returns jobs to run rigid."""
        types = self._types
        B = len(jobs)
        fmax = np.fromiter((types[j.node_type].fmax for j in jobs), np.float64, B)
        if self.size == "rigid":
            sizes = np.fromiter(
                (min(j.requested_nodes, types[j.node_type].count) for j in jobs), np.int64, B
            )[:, None]
            valid = np.ones((B, 1), dtype=bool)
            req_col = np.zeros(B, dtype=np.int64)
        else:
            sizes, valid, req_col = self._size_grid(jobs)
        need_freq = self.freq != "fmax"
        grid_freq = need_freq and (self.one_call or self.size in ("rigid", "load-adaptive"))
        if grid_freq:
            # one call: every size x every frequency (sizes is a single column for rigid)
            freqs, fvalid = self._freq_grid(jobs)
            got = self._predict_grid(jobs, sizes, valid, freqs, fvalid)
            if got is None:
                got = self._predict_flat(jobs, sizes, valid, freqs, fvalid)
        else:
            freqs = fmax[:, None]
            one = np.ones((B, 1), dtype=bool)
            got = self._predict_grid(jobs, sizes, valid, freqs, one)
            if got is None:
                got = self._predict_flat(jobs, sizes, valid, freqs, one)
        picked = self._pick_size_freq(jobs, sizes, req_col, freqs, got, grid_freq)
        if isinstance(picked, list):  # load-adaptive: grids cached, decided per batch
            return picked
        return self._finish_size_freq(jobs, picked)

    def _freq_grid(self, jobs: Sequence[QueuedJob]) -> tuple[np.ndarray, np.ndarray]:
        """Padded P-state frequencies ``(B, F)`` of each job's node type and their mask."""
        types = self._types
        B = len(jobs)
        F = self._max_freqs
        freqs = np.full((B, F), np.nan)
        fvalid = np.zeros((B, F), dtype=bool)
        for k, j in enumerate(jobs):
            fs = types[j.node_type].freqs
            freqs[k, : len(fs)] = fs
            fvalid[k, : len(fs)] = True
        return freqs, fvalid

    def _predict_flat(
        self,
        jobs: Sequence[QueuedJob],
        sizes: np.ndarray,
        valid: np.ndarray,
        freqs: np.ndarray,
        fvalid: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Like :meth:`_predict_grid` through :meth:`Predictor.predict` (any predictor)."""
        B, K = sizes.shape
        F = freqs.shape[1]
        v3 = valid[:, :, None] & fvalid[:, None, :]
        n3 = np.broadcast_to(sizes[:, :, None], (B, K, F))
        f3 = np.broadcast_to(freqs[:, None, :], (B, K, F))
        pred = self._predict(jobs, v3.reshape(B, -1).sum(axis=1), n3[v3], f3[v3])
        T3 = np.full((B, K, F), np.inf)
        P3 = np.full((B, K, F), np.nan)
        E3 = np.full((B, K, F), np.inf)
        R3 = np.zeros((B, K, F), dtype=bool)
        T3[v3] = pred.time_s
        P3[v3] = pred.power_w
        E3[v3] = pred.energy_j
        R3[v3] = pred.reliable
        return T3, P3, E3, R3

    def _pick_size_freq(
        self,
        jobs: list[QueuedJob],
        sizes: np.ndarray,
        req_col: np.ndarray,
        freqs: np.ndarray,
        grids: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        grid_freq: bool,
    ) -> tuple[Any, ...] | list[QueuedJob]:
        """Apply the size and frequency rules to predicted grids ``(T, P, E, R)`` of
        shape ``(B, K, F)`` (``F = 1``, the top frequency, unless ``grid_freq``).

        Returns per job ``(n, f, t, e, p, t_ref, ok_ref, rel_req)`` arrays, or
        for the load-adaptive rule the list of jobs to run rigid (the grids of
        the others are cached on them and decided per batch,
        :meth:`_load_adaptive`).
        """
        types = self._types
        B = len(jobs)
        rows = np.arange(B)
        T3, P3, E3, R3 = grids
        if grid_freq:
            top = np.fromiter((len(types[j.node_type].freqs) - 1 for j in jobs), np.int64, B)
            T = T3[rows, :, top]
            E = E3[rows, :, top]
            P = P3[rows, :, top]
            rel_req = R3[rows, req_col, top]
        else:
            T, P, E = T3[:, :, 0], P3[:, :, 0], E3[:, :, 0]
            rel_req = R3[rows, req_col, 0]
        T = np.where(np.isfinite(T) & (T > 0), T, np.inf)
        E = np.where(np.isfinite(E) & (E > 0), E, np.inf)
        t_ref = T[rows, req_col]
        ok_ref = np.isfinite(t_ref)
        if self._cap_w < math.inf:  # sizes that can never start under the cap are not candidates
            T, E = self._mask_cap(jobs, sizes, P, T, E)
            if grid_freq:
                n3 = np.broadcast_to(sizes[:, :, None], T3.shape)
                T3, E3 = self._mask_cap(jobs, n3, P3, T3, E3)
        if self.require_reliable:
            ok_ref &= rel_req
        if self.size == "load-adaptive":
            version = self._version
            fallback: list[QueuedJob] = []
            for k, job in enumerate(jobs):
                if not ok_ref[k]:
                    fallback.append(job)
                    continue
                grid: tuple[Any, ...] = (sizes[k], T[k], E[k], P[k], int(req_col[k]))
                if grid_freq:
                    grid = (*grid, T3[k], E3[k], P3[k], freqs[k])
                job.scratch = _Entry(job.application, version.get(job.application, 0), None, grid)
            return fallback
        col = self._size_rule(sizes, T, E, req_col)
        n_star = sizes[rows, col]
        if not grid_freq and self.freq == "fmax":
            f_star = freqs[:, 0]
            return n_star, f_star, T[rows, col], E[rows, col], P[rows, col], t_ref, ok_ref, rel_req
        if grid_freq:
            fcol = self._freq_rule(T3[rows, col], E3[rows, col], t_ref, jobs)
            f_star = freqs[rows, fcol]
            return (
                n_star,
                f_star,
                T3[rows, col, fcol],
                E3[rows, col, fcol],
                P3[rows, col, fcol],
                t_ref,
                ok_ref,
                rel_req,
            )
        # two calls: the frequency grid at the chosen size only
        freqs2, fvalid = self._freq_grid(jobs)
        T2, P2, E2, _ = self._predict_flat(
            jobs, n_star[:, None], np.ones((B, 1), bool), freqs2, fvalid
        )
        T2, P2, E2 = T2[:, 0], P2[:, 0], E2[:, 0]
        T2 = np.where(np.isfinite(T2) & (T2 > 0), T2, np.inf)
        E2 = np.where(np.isfinite(E2) & (E2 > 0), E2, np.inf)
        if self._cap_w < math.inf:
            nf = np.broadcast_to(n_star[:, None], T2.shape)
            T2, E2 = self._mask_cap(jobs, nf, P2, T2, E2)
        fcol = self._freq_rule(T2, E2, t_ref, jobs)
        return (
            n_star,
            freqs2[rows, fcol],
            T2[rows, fcol],
            E2[rows, fcol],
            P2[rows, fcol],
            t_ref,
            ok_ref,
            rel_req,
        )

    def _finish_size_freq(self, jobs: list[QueuedJob], picked: tuple[Any, ...]) -> list[QueuedJob]:
        """Cache the decisions of :meth:`_pick_size_freq` on the jobs; returns the
        jobs to run rigid."""
        n_star, f_star, t_star, e_star, p_star, t_ref, ok_ref, rel_req = (
            a.tolist() if isinstance(a, np.ndarray) else a for a in picked
        )
        explore = self.freq != "fmax" and self.explore_runs > 0 and not self.static
        return [
            job
            for k, job in enumerate(jobs)
            if not self._finish_one(
                job,
                n_star[k],
                f_star[k],
                t_star[k],
                e_star[k],
                p_star[k],
                t_ref[k],
                ok_ref[k],
                rel_req[k],
                None,
                explore,
            )
        ]

    def _finish_one(
        self,
        job: QueuedJob,
        n: int,
        f: float,
        t: float,
        e: float,
        p: float,
        t_ref: float,
        ok_ref: bool,
        rel_req: bool,
        scale: float | None,
        explore: bool,
    ) -> bool:
        """Cache one job's decision from its pick (time and reference time times
        ``scale`` when given, a pick made on a :class:`~predictors.base.GridShape`,
        and the energy from them); ``False`` when the job must run rigid (no
        reliable reference or no finite time). A job may become a calibration run
        instead (``explore``: the frequency rule may ask for one)."""
        if not ok_ref or not math.isfinite(t):
            return False
        if explore and not rel_req and self._wants_exploration(job):
            self._explore(job)
            return True
        if scale is not None:
            t = scale * t
            t_ref = scale * t_ref
            e = t * p * n
        d = self._decision(job, n, f, None, t, e, p, t_ref)
        app = job.application
        job.scratch = _Entry(app, self._version.get(app, 0), d)
        return True

    def _pick_shape(
        self, shape: Any, sizes: np.ndarray, req: int, freqs: np.ndarray
    ) -> tuple[Any, ...] | None:
        """:meth:`_pick_size_freq` of one job's :class:`~predictors.base.GridShape`
        for the common rules, without the general path's masking (a shape is
        finite and positive everywhere), as scalars; ``None`` for the other rules
        (and under a power cap): the caller uses the general path. Same picks."""
        size_rule, freq_rule = self.size, self.freq
        if (
            self._cap_w < math.inf
            or size_rule not in _SHAPE_SIZE_RULES
            or freq_rule not in _SHAPE_FREQ_RULES
        ):
            return None
        # the Fmax column and the chosen size's row (a shape may compute them alone)
        P3 = shape.power_w
        top = P3.shape[1] - 1
        T = shape.time_column(top)
        t_ref = T.item(req)  # (Python floats: the same IEEE operations as numpy's scalars)
        within = t_ref * (1.0 + self.slack)  # the slack rules' bound
        if size_rule == "rigid":
            col = req
        elif size_rule == "min-time":
            col = _argmin_one(T, req)
        else:
            # (float sizes: the same products, without a mixed-type ufunc; kept per
            # size set, the chooser's own arrays)
            kept = self._float_sizes.get(id(sizes))
            if kept is None or kept[0] is not sizes:
                kept = self._float_sizes[id(sizes)] = (sizes, sizes.astype(np.float64))
            E = T * P3[:, top] * kept[1]
            if size_rule == "min-energy-slack":
                col = _argmin_one(np.where(T <= within, E, np.inf), req)
            elif size_rule == "min-energy":
                col = _argmin_one(E, req)
            else:  # min-edp
                col = _argmin_one(E * T, req)
        n = int(sizes.item(col))
        if freq_rule == "fmax":
            fcol = top
            t = T.item(col)
        else:
            row = shape.time_row(col)
            if freq_rule == "energy-optimal":
                fcol = _argmin_one(row * P3[col] * float(n), top)
                t = row.item(fcol)
            else:  # "slack": the lowest frequency within the slack, else the top one
                times = row.tolist()  # (a few clocks: compared one by one)
                fcol = next((k for k, v in enumerate(times) if v <= within), top)
                t = times[fcol]
        p = P3.item(col, fcol)
        e = t * p * n
        rel_req = bool(shape.reliable.item(req, top))
        ok_ref = rel_req or not self.require_reliable
        return n, freqs.item(fcol), t, e, p, t_ref, ok_ref, rel_req

    def _choose_by_shape(self, jobs: list[QueuedJob], rigid: list[QueuedJob]) -> list[QueuedJob]:
        """Decide ``jobs`` from their predictors' :class:`~predictors.base.GridShape`:
        the rules are scale-free (:attr:`shape_rules`), so a shape's pick is made
        once and reused for every job of the application (and requested size)
        until the next refit. Returns the jobs without a shape (decided by
        :meth:`_choose_size_freq`); appends the jobs that must run rigid (an
        unreliable prediction at the rigid configuration under
        ``require_reliable``) to ``rigid``."""
        shape_fn = self._shape_fn
        assert shape_fn is not None
        types = self._types
        grid_freq = self.freq != "fmax"
        cap_w = self._cap_w
        memo_key = (id(self), cap_w)
        explore = grid_freq and self.explore_runs > 0 and not self.static
        finish = self._finish_one
        version_of = self._version.get
        reuse = self._reuse
        n_hits = 0
        n_reused = 0
        rest: list[QueuedJob] = []
        rigid_rule = self.size == "rigid"
        rigid_sizes = self._rigid_sizes
        size_cache = self._size_cache  # _candidate_sizes' cache, read inline
        updates = self._predictor_updates
        per_job = self._shape_per_job
        job_time = self._job_time_fn
        reuse_without_asking = self.reuse_without_asking and not per_job
        for job in jobs:
            app = job.application
            length = _length_input(job)
            reuse_key = (job.node_type, job.requested_nodes, job.requested_time_s, cap_w)
            slot = reuse.get(app)
            if slot is None:
                kept = None
            else:
                kept = slot[1].get(reuse_key)
                if (
                    kept is not None
                    and reuse_without_asking
                    and kept[3] == updates
                    and kept[4] == length
                    and slot[0] == version_of(app, 0)  # (implied by updates; cheap to check)
                    and (job.scratch is None or job.scratch.grid != "explore")
                ):
                    # the predictor was not updated since this decision was made for the
                    # same question: it would answer the same shape and scale (see _reuse)
                    job.scratch = _Entry(app, slot[0], Decision(job, *kept[2]))
                    n_reused += 1
                    continue
            ti = types[job.node_type]
            size_key = (job.node_type, job.requested_nodes)
            if rigid_rule:
                sizes = rigid_sizes.get(size_key)
                if sizes is None:
                    sizes = rigid_sizes[size_key] = _read_only(
                        np.array([min(job.requested_nodes, ti.count)], dtype=np.int64)
                    )
                req = 0
            else:
                cands = size_cache.get(size_key)
                sizes, req = self._candidate_sizes(job) if cands is None else cands
            freqs = ti.freqs if grid_freq else ti.top_freq
            if per_job:
                got = shape_fn(
                    app, ti.name, sizes, freqs, job.requested_nodes, length, job_index=job.index
                )
            else:
                got = shape_fn(app, ti.name, sizes, freqs, job.requested_nodes, length)
            if got is None:
                rest.append(job)
                continue
            shape, scale = got
            # the decision of an earlier job with the same shape (the same object: the
            # predictor's answer did not change), scale, node type, request and power
            # cap has the same values (see _reuse)
            version = version_of(app, 0)
            if slot is None or slot[0] != version:
                slot = self._new_reuse_slot(app, version)
                kept = None
            old = job.scratch  # a calibration run stays one (_wants_exploration)
            if (
                kept is not None
                and kept[0] is shape
                and kept[1] == scale
                and (old is None or old.grid != "explore")
            ):
                job.scratch = _Entry(app, version, Decision(job, *kept[2]))
                # confirmed at this update count: a later job asking the same skips
                # the predictor (above)
                slot[1][reuse_key] = (shape, scale, kept[2], updates, length)
                n_reused += 1
                continue
            # a shape belongs to one node type; the requested size fixes the
            # candidate sizes and the requested column (cheaper than sizes' bytes)
            key = (memo_key, job.requested_nodes)
            picked: Any = shape.memo.get(key)
            if picked is None:
                picked = self._pick_shape(shape, sizes, req, freqs)
                if picked is None:
                    time = shape.time[None]
                    power = shape.power_w[None]
                    grids = (
                        time,
                        power,
                        time * power * sizes[None, :, None],
                        shape.reliable[None],
                    )
                    picked = self._pick_size_freq(
                        [job], sizes[None, :], np.array([req]), freqs[None, :], grids, grid_freq
                    )
                    # one job's pick as scalars (the general path gives arrays)
                    picked = tuple(a.tolist()[0] for a in picked)
                shape.memo[key] = picked
                self.stats["shape_picks"] += 1
            n_hits += 1
            n, f, t, e, p, t_ref, ok_ref, rel_req = picked
            time_scale: float | None = scale
            if job_time is not None and ok_ref and math.isfinite(t):
                # the job's own times at the pick and at the reference configuration
                # (scale x shape may round otherwise: an oracle's planned runtime one ulp
                # below the true one gets its job killed); the power is the shape's
                own = job_time(job.index, ti.name, n, f)
                ref = job_time(job.index, ti.name, int(sizes.item(req)), float(freqs[-1]))
                if own is not None and ref is not None:
                    t, t_ref = own, ref
                    e = t * p * n
                    time_scale = None
            if not finish(job, n, f, t, e, p, t_ref, ok_ref, rel_req, time_scale, explore):
                rigid.append(job)
            elif job.scratch.grid != "explore":
                # not a calibration run: then none is due for a later job with this
                # key and shape either (_wants_exploration said no for good, or the
                # rigid prediction is reliable, which the shape fixes): reusable
                d = job.scratch.decision
                slot[1][reuse_key] = (
                    shape,
                    scale,
                    (
                        d.nodes,
                        d.freq_ghz,
                        d.node_type,
                        d.cores,
                        d.planned_runtime_s,
                        d.time_limit_s,
                        d.predicted_power_w,
                        d.predicted_energy_j,
                        d.predicted_runtime_s,
                        d.reference_runtime_s,
                    ),
                    updates,
                    length,
                )
        self.stats["shape_hits"] += n_hits + n_reused
        self.stats["shape_reuses"] += n_reused
        return rest

    def _new_reuse_slot(self, app: int, version: int) -> tuple[int, dict[Any, tuple[Any, ...]]]:
        """A fresh :attr:`_reuse` slot of ``app`` at ``version``, the newest; beyond
        :data:`REUSE_APPLICATIONS` the oldest slot is dropped (its application's next
        decisions are picked again: the same decisions, see :meth:`_choose_by_shape`),
        so that the decisions kept do not hold on to every application's shapes."""
        reuse = self._reuse
        reuse.pop(app, None)
        if len(reuse) >= REUSE_APPLICATIONS:
            del reuse[next(iter(reuse))]
        slot: tuple[int, dict[Any, tuple[Any, ...]]] = (version, {})
        reuse[app] = slot
        return slot

    def _mask_cap(
        self,
        jobs: Sequence[QueuedJob],
        nodes: np.ndarray,
        P: np.ndarray,
        T: np.ndarray,
        E: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``T``, ``E`` with ``inf`` where ``nodes`` at power ``P`` per node exceed the
        power cap even on an otherwise idle platform (first axis: jobs)."""
        t_idx = np.fromiter((j.node_type for j in jobs), np.int64, len(jobs))
        shape = (len(jobs),) + (1,) * (np.ndim(nodes) - 1)
        idle = self._idle_w[t_idx].reshape(shape)
        boot = self._boot_w[t_idx].reshape(shape)
        with np.errstate(invalid="ignore"):
            bad = self._idle_all_w + nodes * (np.maximum(P, boot) - idle) > self._cap_w * (
                1 + 1e-12
            )
        if not bad.any():
            return T, E
        return np.where(bad, np.inf, T), np.where(bad, np.inf, E)

    def _wants_exploration(self, job: QueuedJob) -> bool:
        """Whether ``job`` is (or becomes) a calibration run of its application."""
        old = job.scratch
        if old is not None and old.__class__ is _Entry and old.grid == "explore":
            return True
        app = job.application
        done = self._explored.get(app, 0)
        if done >= self.explore_runs:
            return False
        self._explored[app] = done + 1
        return True

    def _explore(self, job: QueuedJob) -> None:
        """Calibration run: requested size at the application's next calibration clock
        (:func:`predictors.dvfs.exploration_clock_index`: the lowest, then the middle
        one), planned (and limited) as if fully CPU-bound (``Fmax / f`` x the
        requested time). A job that already is a calibration run keeps its clock."""
        ti = self._types[job.node_type]
        old = job.scratch
        if old is not None and old.__class__ is _Entry and old.grid == "explore":
            calibration = old.decision
            assert calibration is not None  # explore entries keep their calibration decision
            f = float(calibration.freq_ghz)
        else:
            from predictors.dvfs import exploration_clock_index

            run = self._explored.get(job.application, 1) - 1  # counted by _wants_exploration
            f = float(ti.freqs[exploration_clock_index(len(ti.freqs), self.explore_runs, run)])
        fmin = f
        stretch = ti.fmax / fmin
        R = job.requested_time_s
        n = min(job.requested_nodes, ti.count)
        d = Decision(
            job,
            n,
            fmin,
            job.node_type,
            None,
            planned_length_s(job) * stretch,
            R * stretch if R == R else None,
        )
        job.scratch = _Entry(job.application, self._version.get(job.application, 0), d, "explore")

    def _size_rule(
        self, sizes: np.ndarray, T: np.ndarray, E: np.ndarray, req_col: np.ndarray
    ) -> np.ndarray:
        """Column of the chosen size per row (rows: jobs, columns: candidate sizes)."""
        rows = np.arange(len(sizes))
        rule = self.size
        if rule == "rigid":
            return req_col
        if rule == "min-time":
            return _argmin_ties(T, req_col)
        if rule == "min-energy":
            return _argmin_ties(E, req_col)
        if rule == "min-edp":
            return _argmin_ties(E * T, req_col)
        if rule == "min-energy-slack":
            limit = T[rows, req_col] * (1.0 + self.slack)
            masked = np.where(T <= limit[:, None], E, np.inf)
            col = _argmin_ties(masked, req_col)
            bad = ~np.isfinite(masked[rows, col])
            col[bad] = req_col[bad]
            return col
        if rule == "efficiency":
            one = np.argmax(sizes == 1, axis=1)
            t1 = T[rows, one]
            eff = t1[:, None] / (sizes * T)
            ok = (eff >= self.efficiency - 1e-12) & np.isfinite(T)
            # largest qualifying size: last True column
            width = sizes.shape[1]
            last = width - 1 - np.argmax(ok[:, ::-1], axis=1)
            col = np.where(ok.any(axis=1), last, one)
            return col
        raise AssertionError(rule)  # pragma: no cover

    def _deadlines(self, jobs: Sequence[QueuedJob]) -> np.ndarray:
        f = self.deadline_factor
        return np.fromiter(
            (
                (j.requested_time_s if j.requested_time_s == j.requested_time_s else j.estimate_s)
                * f
                for j in jobs
            ),
            np.float64,
            len(jobs),
        )

    def _freq_rule(
        self, T: np.ndarray, E: np.ndarray, t_ref: np.ndarray, jobs: Sequence[QueuedJob]
    ) -> np.ndarray:
        """Column (P-state index) of the chosen frequency per row (rows: jobs)."""
        B, F = T.shape
        finite = np.isfinite(T)
        top = F - 1 - np.argmax(finite[:, ::-1], axis=1)  # highest valid P-state
        rule = self.freq
        if rule == "energy-optimal":
            col = _argmin_ties(E, top)
            bad = ~np.isfinite(E[np.arange(B), col])
            col[bad] = top[bad]
            return col
        if rule == "slack":
            limit = t_ref * (1.0 + self.slack)
        else:  # deadline
            limit = self._deadlines(jobs)
        ok = finite & (T <= limit[:, None])
        col = np.argmax(ok, axis=1)  # lowest qualifying frequency
        return np.where(ok.any(axis=1), col, top)

    def _load_adaptive(self, job: QueuedJob, e: _Entry) -> Decision:
        grid = e.grid
        sizes, T, E, P, req = grid[:5]
        cap = self._cap[job.node_type]
        masked = np.where(sizes <= cap, T, np.inf)
        col = int(np.argmin(masked))
        if not math.isfinite(masked[col]):
            col = 0
        n = int(sizes[col])
        t_ref = T[req]
        if len(grid) > 5:
            T3, E3, P3, freqs = grid[5:]
            fcol = int(
                self._freq_rule(T3[col][None, :], E3[col][None, :], np.array([t_ref]), [job])[0]
            )
            return self._decision(
                job, n, float(freqs[fcol]), None, T3[col, fcol], E3[col, fcol], P3[col, fcol], t_ref
            )
        t = self._types[job.node_type]
        return self._decision(job, n, t.fmax, None, T[col], E[col], P[col], t_ref)

    def _joint_cores(self, t_index: int) -> np.ndarray:
        """Cores-per-node candidates of the joint rules on node type ``t_index``
        (ascending, the node's core count last): :data:`CORE_SETS`, only the
        node's core count when the predictor does not model cores."""
        got = self._core_cache.get(t_index)
        if got is not None:
            return got
        full = self._types[t_index].cores
        if not self._use_cores or self.cores == "full":
            cs = [full]
        elif self.cores == "pow2":
            cs = [c for c in (1 << i for i in range(full.bit_length())) if c < full] + [full]
        else:  # "all"
            cs = list(range(1, full + 1))
        got = self._core_cache[t_index] = np.asarray(cs, dtype=np.int64)
        return got

    def _choose_joint(self, jobs: list[QueuedJob]) -> list[QueuedJob]:
        """Pareto-deadline / pareto-budget over the (n, c, f) grid. Returns jobs to run rigid.

        Each job's grid is its candidate sizes (``sizes``, by default the
        ``"range"`` around the requested size) x :meth:`_joint_cores` x the
        P-states of its node type, predicted in one call. The rule is applied
        to the whole grid (every configuration, Pareto-optimal or not, so the
        pick is the brute-force optimum of the rule over the grid; it lies on
        the predicted front). A job of an application the predictor still
        needs observations of becomes a calibration run (:meth:`_joint_explore`).
        """
        types = self._types
        version = self._version
        sizes, valid, req_col = self._size_grid(jobs)
        B, K = sizes.shape
        core_lists = [self._joint_cores(j.node_type) for j in jobs]
        C = max(len(c) for c in core_lists)
        F = self._max_freqs
        nn = np.ones((B, K, C, F), dtype=np.int64)
        cc = np.ones((B, K, C, F), dtype=np.int64)
        ff = np.ones((B, K, C, F), dtype=float)
        vv = np.zeros((B, K, C, F), dtype=bool)
        top_c = np.empty(B, dtype=np.int64)
        top_f = np.empty(B, dtype=np.int64)
        for k, j in enumerate(jobs):
            t = types[j.node_type]
            cores_k = core_lists[k]
            fs = t.freqs
            nn[k] = sizes[k][:, None, None]
            cc[k, :, : len(cores_k), :] = cores_k[None, :, None]
            ff[k, :, :, : len(fs)] = fs[None, None, :]
            vv[k, :, : len(cores_k), : len(fs)] = valid[k][:, None, None]
            top_c[k] = len(cores_k) - 1
            top_f[k] = len(fs) - 1
        counts = vv.reshape(B, -1).sum(axis=1)
        cores_arg = cc[vv] if C > 1 else None
        pred = self._predict(jobs, counts, nn[vv], ff[vv], cores_arg)
        T = np.full(vv.shape, np.inf)
        E = np.full(vv.shape, np.inf)
        P = np.full(vv.shape, np.nan)
        R = np.zeros(vv.shape, dtype=bool)
        T[vv] = np.where(np.isfinite(pred.time_s) & (pred.time_s > 0), pred.time_s, np.inf)
        E[vv] = np.where(np.isfinite(pred.energy_j) & (pred.energy_j > 0), pred.energy_j, np.inf)
        P[vv] = pred.power_w
        R[vv] = pred.reliable
        U = np.full(vv.shape, np.nan)
        if pred.uncertainty is not None:
            U[vv] = pred.uncertainty
        rows = np.arange(B)
        t_ref = T[rows, req_col, top_c, top_f]
        e_ref = E[rows, req_col, top_c, top_f]
        rel_ref = R[rows, req_col, top_c, top_f]
        if self._cap_w < math.inf:
            T, E = self._mask_cap(jobs, nn, P, T, E)
        if self.require_reliable:  # no reliable prediction, no candidate
            T = np.where(R, T, np.inf)
            E = np.where(R, E, np.inf)
        Tf = T.reshape(B, -1)
        Ef = E.reshape(B, -1)
        if self.joint == "pareto-deadline":
            limit = self._deadlines(jobs)
            masked = np.where(Tf <= limit[:, None], Ef, np.inf)
            pick = np.argmin(masked, axis=1)
            none = ~np.isfinite(masked[rows, pick])
            pick[none] = np.argmin(Tf[none], axis=1)
        else:
            budget = e_ref * self.budget_factor
            masked = np.where(Ef <= budget[:, None], Tf, np.inf)
            pick = np.argmin(masked, axis=1)
            none = ~np.isfinite(masked[rows, pick])
            pick[none] = np.argmin(Ef[none], axis=1)
        fallback = []
        nflat, cflat, fflat = nn.reshape(B, -1), cc.reshape(B, -1), ff.reshape(B, -1)
        Pf = P.reshape(B, -1)
        Uf = U.reshape(B, -1)
        explore = self.explore_runs > 0 and not self.static
        for k, job in enumerate(jobs):
            p = pick[k]
            # a calibration run needs no candidate (all may be unreliable until it is made)
            if explore and math.isfinite(t_ref[k]) and self._joint_explore(job, bool(rel_ref[k])):
                continue
            if not math.isfinite(t_ref[k]) or not math.isfinite(Tf[k, p]):
                fallback.append(job)
                continue
            c = int(cflat[k, p])
            d = self._decision(
                job,
                int(nflat[k, p]),
                float(fflat[k, p]),
                None if c == types[job.node_type].cores else c,
                Tf[k, p],
                Ef[k, p],
                Pf[k, p],
                t_ref[k],
            )
            u = Uf[k, p]
            if u > 0 and d.time_limit_s is not None and d.time_limit_s != job.requested_time_s:
                # a moved limit is widened by the predictor's relative uncertainty
                d.time_limit_s = max(
                    d.time_limit_s, job.requested_time_s * Tf[k, p] / t_ref[k] * (1.0 + u)
                )
            job.scratch = _Entry(job.application, version.get(job.application, 0), d)
        return fallback

    def _joint_explore(self, job: QueuedJob, reliable_ref: bool) -> bool:
        """Make ``job`` a calibration run of the joint rules if its application needs one.

        The predictor's ``exploration(application, node_type, requested_nodes,
        count, cores_per_node, freqs_ghz, pending)`` (optional) names the next
        ``(n, c, f)`` it needs observed (``pending``: the configurations already
        started and not yet handed to it), or ``None``; without that method,
        the DVFS calibration run: requested size, all cores, the lowest
        frequency, while the prediction at the rigid configuration is
        unreliable. At most ``explore_runs`` per application. The run is
        planned and limited as if fully CPU-bound and perfectly parallel in
        ``c`` and in ``n`` below the requested size: requested time x
        ``(Fmax / f) x (cores / c) x max(1, requested / n)``.
        """
        old = job.scratch
        app = job.application
        if old is not None and old.__class__ is _Entry and old.grid == "explore":
            job.scratch = _Entry(app, self._version.get(app, 0), old.decision, "explore")
            return True
        done = self._explored.get(app, 0)
        if done >= self.explore_runs:
            return False
        ti = self._types[job.node_type]
        req = min(job.requested_nodes, ti.count)
        pending = self._explore_pending.setdefault(app, [])
        ask = getattr(self.predictor, "exploration", None)
        if ask is not None:
            cfg = ask(app, ti.name, req, ti.count, ti.cores, ti.freqs, list(pending))
        elif not reliable_ref and not pending:
            cfg = (req, ti.cores, float(ti.freqs[0]))
        else:
            cfg = None
        if cfg is None:
            return False
        n, c, f = int(cfg[0]), int(cfg[1]), float(cfg[2])
        if not self._use_cores:
            c = ti.cores
        n = max(1, min(n, ti.count))
        c = max(1, min(c, ti.cores))
        if f not in ti.freqs:
            f = float(ti.freqs[int(np.argmin(np.abs(ti.freqs - f)))])
        self._explored[app] = done + 1
        pending.append((n, c, f))
        stretch = (ti.fmax / f) * (ti.cores / c) * max(1.0, req / n)
        R = job.requested_time_s
        d = Decision(
            job,
            n,
            f,
            job.node_type,
            None if c == ti.cores else c,
            job.estimate_s * stretch,
            R * stretch if R == R else None,
        )
        job.scratch = _Entry(app, self._version.get(app, 0), d, "explore")
        return True

    def _decision(
        self,
        job: QueuedJob,
        n: int,
        f: float,
        cores: int | None,
        t: float,
        e: float,
        p: float,
        t_ref: float,
    ) -> Decision:
        """A predictor-driven decision with the planned runtime / time limit rule."""
        t = float(t)
        planned = t * self.safety_factor
        R = job.requested_time_s
        limit: float | None = None
        if R == R:  # has a requested time
            rigid = (
                n == job.requested_nodes and f == self._types[job.node_type].fmax and cores is None
            )
            if rigid:
                limit = R
                planned = min(planned, R)
            else:
                limit = max(R * t / float(t_ref), planned)
        return Decision(
            job, n, f, job.node_type, cores, planned, limit, _finite(p), _finite(e), t, t_ref
        )


#: Relative tolerance under which two predicted values are a tie for the rules.
TIE_RTOL = 1e-9


def _argmin_one(values: np.ndarray, prefer: int) -> int:
    """:func:`_argmin_ties` of one row."""
    # (the minimum read at argmin: the same value as values.min(), NaN included, faster;
    # the preferred column's tie is one comparison, the tied columns' array is made only
    # when it is not tied)
    bound = values.item(values.argmin()) * (1.0 + TIE_RTOL)
    if values.item(prefer) <= bound:
        return prefer
    return int((values <= bound).argmax())


def _argmin_ties(values: np.ndarray, prefer: np.ndarray) -> np.ndarray:
    """Column of the row minimum of ``values`` (rows: jobs; positive or ``inf``).

    Values within :data:`TIE_RTOL` (relative) of the row's minimum are ties:
    the ``prefer`` column (the requested size, or the top frequency) wins a
    tie, else the first (smallest) column. Without a tolerance, flat curves
    (e.g. energy under perfect speedup) would be decided by rounding noise.
    """
    low = values.min(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        tied = values <= low[:, None] * (1.0 + TIE_RTOL)
    col = np.argmax(tied, axis=1)
    rows = np.arange(len(values))
    return np.where(tied[rows, prefer], prefer, col)


def _finite(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _length_input(job: QueuedJob) -> float:
    """The length a predictor scales a job's predictions with: its job-length
    prediction (:attr:`~policies.base.QueuedJob.predicted_time_s`) when it has one,
    else its requested time (see :mod:`policies.backfilling`, Job-length predictions)."""
    p = job.predicted_time_s
    return p if p is not None and p == p else job.requested_time_s


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` made read-only (in place) and returned: the chooser's shared size arrays."""
    a.flags.writeable = False
    return a
