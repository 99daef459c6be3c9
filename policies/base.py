"""The policy interface: what the engine shows a policy and what it may answer.

The engine calls :meth:`Policy.schedule` once per *batch* of simultaneous
events (all submissions and completions at one instant), with a
:class:`ClusterView`. The policy answers with a list of :class:`Decision`:
which queued jobs start now, on which node type, with how many nodes, cores
per node and which frequency. The engine validates every decision before
acting on it (:func:`validate_decision`) and raises
:class:`~energysched.errors.PolicyError` naming the job and the violated limit.

Jobs a policy sees are :class:`QueuedJob` records: trace fields a real
scheduler knows at submission (requested size and time, user, application
id), never the true runtime.

Learning policies set ``learns = True``; the engine then calls
:meth:`Policy.observe` once per batch with the measurements of the jobs that
finished (a runs table with :data:`workloads.schema.RUN_COLUMNS` and ``killed``).

What the engine needs to know about a policy beyond these methods it reads
from the policy's :class:`PolicyTags` (:func:`get_policy_tags`), never from
its class: a plug-in that declares nothing gets the safe defaults.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from energysched.errors import PolicyError

if TYPE_CHECKING:  # an annotation only: checking an experiment file needs no pandas
    import pandas as pd


class QueuedJob:
    """A waiting job as a scheduler sees it.

    Attributes:
        index: row of the job in the trace's jobs table.
        job_id: SWF job number.
        submit_s: submit time.
        requested_procs: processors requested (allocated when the trace lacks
            the request).
        requested_nodes: nodes that covers ``requested_procs`` on the job's
            node type (``ceil(procs / cores_per_node)``).
        requested_time_s: the user's runtime estimate; NaN when the trace has none.
        estimate_s: the runtime a rigid scheduler plans with: the requested
            time, or when the trace has none the recorded runtime (a perfect
            estimate, documented in the README).
        application: application id (-1 without ground truth).
        user_id: SWF user number (-1 when missing).
        node_type: index of the node type the job is queued for.
        scratch: free slot for the policy (e.g. a cached decision).
        predicted_time_s: the scheduler's job-length prediction
            (:mod:`predictors.job_length`), set by the policy at its first look
            at the job: ``None`` before (or when the policy predicts nothing),
            NaN when the predictor has none. Rigid decisions plan with it
            (:func:`planned_length_s`); the kill limit stays the request.
    """

    __slots__ = (
        "application",
        "estimate_s",
        "index",
        "job_id",
        "node_type",
        "predicted_time_s",
        "requested_nodes",
        "requested_procs",
        "requested_time_s",
        "scratch",
        "submit_s",
        "user_id",
    )

    def __init__(
        self,
        index: int,
        job_id: int,
        submit_s: float,
        requested_procs: int,
        requested_nodes: int,
        requested_time_s: float,
        estimate_s: float,
        application: int = -1,
        user_id: int = -1,
        node_type: int = 0,
    ) -> None:
        self.index = index
        self.job_id = job_id
        self.submit_s = submit_s
        self.requested_procs = requested_procs
        self.requested_nodes = requested_nodes
        self.requested_time_s = requested_time_s
        self.estimate_s = estimate_s
        self.application = application
        self.user_id = user_id
        self.node_type = node_type
        self.scratch: Any = None
        self.predicted_time_s: float | None = None

    def __repr__(self) -> str:
        return (
            f"QueuedJob(id={self.job_id}, submit={self.submit_s:g}s, "
            f"nodes={self.requested_nodes}, estimate={self.estimate_s:g}s)"
        )


class RunningJob:
    """A started job as a scheduler sees it.

    ``expected_end_s`` is what the scheduler plans with: start (after any boot
    delay) plus the decision's ``planned_runtime_s``. A job that runs past it
    keeps ``expected_end_s`` in the past. ``limit_end_s`` is the end of its
    time limit (start plus the decision's ``time_limit_s``, else the job's
    requested time; ``expected_end_s`` when it has neither). The built-in
    planners re-plan a job past its planned end to end at ``limit_end_s``,
    or "now" once that has passed too (:func:`release_s`).
    """

    __slots__ = (
        "cores",
        "expected_end_s",
        "freq_ghz",
        "job",
        "limit_end_s",
        "node_type",
        "nodes",
        "start_s",
    )

    def __init__(
        self,
        job: QueuedJob,
        node_type: int,
        nodes: int,
        cores: int,
        freq_ghz: float,
        start_s: float,
        expected_end_s: float,
        limit_end_s: float | None = None,
    ) -> None:
        self.job = job
        self.node_type = node_type
        self.nodes = nodes
        self.cores = cores
        self.freq_ghz = freq_ghz
        self.start_s = start_s
        self.expected_end_s = expected_end_s
        self.limit_end_s = expected_end_s if limit_end_s is None else limit_end_s

    def __repr__(self) -> str:
        return (
            f"RunningJob(id={self.job.job_id}, nodes={self.nodes}, start={self.start_s:g}s, "
            f"expected_end={self.expected_end_s:g}s)"
        )


def planned_length_s(job: QueuedJob) -> float:
    """The runtime a rigid decision plans ``job`` with: its job-length prediction
    (:attr:`QueuedJob.predicted_time_s`, capped at the request by the predictor)
    when it has one, else its ``estimate_s`` (the requested time)."""
    p = job.predicted_time_s
    return p if p is not None and p == p else job.estimate_s


def rigid_decision(job: QueuedJob, fmax_ghz: float, nodes: int | None = None) -> Decision:
    """The rigid decision for ``job``: its requested nodes (or ``nodes``, e.g. the
    request capped at the partition), all cores, the top clock ``fmax_ghz`` of its
    partition, planned with :func:`planned_length_s`. A job-length prediction it is
    planned with is also the decision's predicted runtime (so the plan's accuracy
    is reported like any predictor's)."""
    length_s = job.predicted_time_s
    predicted = length_s is not None and length_s == length_s
    return Decision(
        job,
        job.requested_nodes if nodes is None else nodes,
        fmax_ghz,
        job.node_type,
        None,
        length_s if predicted else job.estimate_s,
        predicted_runtime_s=length_s if predicted else None,
    )


def release_s(job: RunningJob, now_s: float) -> float:
    """When a planner expects ``job`` to free its nodes, seen at ``now_s``: its
    planned end while that is ahead; past it, the end of its time limit (a
    prediction that turned out too short is extended to the limit, as in
    Tsafrir, Etsion & Feitelson 2007); past both, ``now_s``."""
    end = job.expected_end_s
    if end > now_s:
        return end
    end = job.limit_end_s
    return end if end > now_s else now_s


_expected_end = attrgetter("expected_end_s")


class ReleaseOrder:
    """The running jobs of one node type, kept in the order a planner expects
    them to free their nodes (:func:`release_s`), updated as jobs start, end
    and outlive their plans: the engine's answer to "when do nodes come back",
    without re-planning every running job at every batch.

    ``jobs`` holds the running jobs by planned end ``expected_end_s`` (ties in
    the order they were added): the list :attr:`ClusterView.running` shows.
    Its first ``moved`` jobs are past their planned end at ``now_s``; each
    moved once (:meth:`advance`) into one of two lists kept sorted, of tuples:

    * ``overdue``: ``(limit_end_s, move, nodes, job)``, the jobs whose time
      limit is still ahead (they release at their limit);
    * ``expired``: ``(move, nodes, job)``, the jobs past their limit too (they
      release "now").

    ``move`` numbers the moves; jobs move in the order of ``jobs`` (a job not
    yet moved ends after every moved one), so it breaks ties as the position
    in ``jobs`` does. The release order at ``now_s`` is then: ``expired``,
    then ``overdue`` and ``jobs[moved:]`` merged by release time (a tie puts
    the overdue job first, as its planned end is earlier): the order of a
    stable sort of ``jobs`` by :func:`release_s`, which
    :func:`policies.backfilling.reservation` walks. Each job moves at most
    twice over its run, so keeping the order costs O(log n) per job and
    event, against re-planning every running job at every batch.
    """

    __slots__ = ("_entry", "_moves", "expired", "jobs", "moved", "now_s", "overdue")

    def __init__(self) -> None:
        self.jobs: list[RunningJob] = []
        self.moved = 0
        self.overdue: list[tuple[float, int, int, RunningJob]] = []
        self.expired: list[tuple[int, int, RunningJob]] = []
        self.now_s = -math.inf
        self._moves = 0
        #: moved job -> its tuple in ``overdue`` or ``expired``
        self._entry: dict[RunningJob, tuple[Any, ...]] = {}

    def add(self, job: RunningJob) -> None:
        """A job starts (normally planned to end after ``now_s``)."""
        insort(self.jobs, job, key=_expected_end)
        if job.expected_end_s <= self.now_s:
            # already past its plan (the engine never adds such a job): move the
            # jobs again, so that the moves keep the order of ``jobs``
            self.moved = 0
            self.overdue.clear()
            self.expired.clear()
            self._entry.clear()
            self.advance(self.now_s)

    def remove(self, job: RunningJob) -> None:
        """A job ends (found by identity, from its planned end on)."""
        jobs = self.jobs
        i = bisect_left(jobs, job.expected_end_s, key=_expected_end)
        if jobs[i] is not job:  # after others planned to end at the same time
            i = jobs.index(job, i)
        del jobs[i]
        entry = self._entry.pop(job, None)
        if entry is None:
            return
        self.moved -= 1
        target = self.overdue if len(entry) == 4 else self.expired
        del target[bisect_left(target, entry)]

    def advance(self, now_s: float) -> None:
        """Move the jobs that passed their planned end or their limit by ``now_s``
        (which never goes back)."""
        self.now_s = now_s
        jobs = self.jobs
        m = self.moved
        n = len(jobs)
        while m < n and jobs[m].expected_end_s <= now_s:
            self._move(jobs[m], now_s)
            m += 1
        self.moved = m
        overdue = self.overdue
        if overdue and overdue[0][0] <= now_s:
            k = bisect_right(overdue, (now_s, math.inf))
            entries = self._entry
            for _, move, nodes, job in overdue[:k]:
                entry = (move, nodes, job)
                insort(self.expired, entry)
                entries[job] = entry
            del overdue[:k]

    def _move(self, job: RunningJob, now_s: float) -> None:
        self._moves += 1
        limit = job.limit_end_s
        if limit > now_s:
            entry: tuple[Any, ...] = (limit, self._moves, job.nodes, job)
            insort(self.overdue, entry)
        else:
            entry = (self._moves, job.nodes, job)
            insort(self.expired, entry)
        self._entry[job] = entry


class Decision:
    """Start ``job`` now with this configuration.

    Attributes:
        job: the queued job.
        nodes: node count (>= 1, <= free nodes of the node type).
        freq_ghz: one of the node type's P-state frequencies.
        node_type: node type index.
        cores: cores per node (``None``: all cores of the node type).
        planned_runtime_s: runtime the scheduler plans with (reservations,
            expected end); ``None``: the job's ``estimate_s``.
        time_limit_s: wall-clock limit enforced by the engine's overrun rule;
            ``None``: the job's requested time (no limit when the trace has none).
        predicted_power_w: predicted power per node (power-capped policies);
            ``None`` when not predicted.
        predicted_energy_j: predicted energy of the whole job, or ``None``.
        predicted_runtime_s: the predictor's runtime (before any safety
            margin the policy adds to ``planned_runtime_s``), or ``None``.
        reference_runtime_s: the same predictor's runtime of the job at its
            requested configuration (requested size, top clock), or ``None``.
            A policy that learns job lengths moves a moved job's measured
            runtime to its requested configuration by the predicted ratio
            ``reference_runtime_s / predicted_runtime_s`` when both are given.
    """

    __slots__ = (
        "cores",
        "freq_ghz",
        "job",
        "node_type",
        "nodes",
        "planned_runtime_s",
        "predicted_energy_j",
        "predicted_power_w",
        "predicted_runtime_s",
        "reference_runtime_s",
        "time_limit_s",
    )

    def __init__(
        self,
        job: QueuedJob,
        nodes: int,
        freq_ghz: float,
        node_type: int = 0,
        cores: int | None = None,
        planned_runtime_s: float | None = None,
        time_limit_s: float | None = None,
        predicted_power_w: float | None = None,
        predicted_energy_j: float | None = None,
        predicted_runtime_s: float | None = None,
        reference_runtime_s: float | None = None,
    ) -> None:
        self.job = job
        self.nodes = nodes
        self.freq_ghz = freq_ghz
        self.node_type = node_type
        self.cores = cores
        self.planned_runtime_s = planned_runtime_s
        self.time_limit_s = time_limit_s
        self.predicted_power_w = predicted_power_w
        self.predicted_energy_j = predicted_energy_j
        self.predicted_runtime_s = predicted_runtime_s
        self.reference_runtime_s = reference_runtime_s

    def __repr__(self) -> str:
        return f"Decision(job={self.job.job_id}, nodes={self.nodes}, freq={self.freq_ghz:g}GHz, type={self.node_type})"


class ClusterView:
    """The state a policy decides on. Read-only by convention. The engine
    refreshes one view object for every call, so a policy must not keep it (or
    its lists) from one call to the next.

    Attributes:
        now_s: current simulated time.
        platform: the :class:`simulator.platform.Platform`.
        queue: waiting jobs in submission order (sort a copy to reorder).
        free_nodes: per node type, nodes a decision may take now (idle nodes
            that are on plus nodes that are off and would boot).
        idle_on_nodes: per node type, idle nodes that are on (start without boot delay).
        shutting_nodes: per node type, nodes shutting down under power management:
            neither free nor running a job, they can run one after their shutdown
            and a boot (reservations count them then).
        running: per node type, running jobs sorted by ``expected_end_s``.
        power_w: current platform power.
        power_cap_w: the platform power cap (``inf`` when none).
        releases: per node type, the running jobs in the order they are expected
            to free their nodes at ``now_s`` (:class:`ReleaseOrder`, whose
            ``jobs`` are ``running``'s lists), kept by the engine as jobs start,
            end and outlive their plans; ``None`` when whoever built the view
            does not keep one (then a planner sorts ``running`` itself).
    """

    __slots__ = (
        "free_nodes",
        "idle_on_nodes",
        "now_s",
        "platform",
        "power_cap_w",
        "power_w",
        "queue",
        "releases",
        "running",
        "shutting_nodes",
    )

    def __init__(
        self,
        now_s: float,
        platform: Any,
        queue: list[QueuedJob],
        free_nodes: list[int],
        idle_on_nodes: list[int],
        running: list[list[RunningJob]],
        power_w: float = 0.0,
        power_cap_w: float = math.inf,
        shutting_nodes: list[int] | None = None,
        releases: list[ReleaseOrder] | None = None,
    ) -> None:
        self.now_s = now_s
        self.platform = platform
        self.queue = queue
        self.free_nodes = free_nodes
        self.idle_on_nodes = idle_on_nodes
        self.running = running
        self.power_w = power_w
        self.power_cap_w = power_cap_w
        self.shutting_nodes = [0] * len(free_nodes) if shutting_nodes is None else shutting_nodes
        self.releases = releases


@dataclass(slots=True)
class PolicyTags:
    """What a policy declares to the engine (scikit-learn's estimator tags, for policies).

    Every field defaults to the safe, slow answer, so a policy that declares
    nothing works unchanged. A policy declares its tags by returning them from
    ``__energysched_tags__()``; the engine reads them once per run through
    :func:`get_policy_tags`.

    Attributes:
        learns: the engine measures finished jobs and calls ``observe`` with them.
        observe_rows: ``observe`` accepts the light hand-overs
            :class:`workloads.runs.RunRows` and :class:`workloads.runs.RunBatch`
            besides a DataFrame (the engine then skips building a DataFrame per
            batch). Only declare it when ``observe`` handles all three.
        honours_power_cap: the policy keeps the platform's power under the run's
            cap (the conformance check then verifies that it does).
    """

    learns: bool = False
    observe_rows: bool = False
    honours_power_cap: bool = False


def get_policy_tags(policy: Any) -> PolicyTags:
    """The :class:`PolicyTags` of ``policy``: its ``__energysched_tags__()`` when it
    has one, else the defaults with ``learns`` and ``honours_power_cap`` read from
    the attributes of those names (plain objects that only implement ``schedule``)."""
    declare = getattr(policy, "__energysched_tags__", None)
    if declare is not None:
        tags = declare()
        if not isinstance(tags, PolicyTags):
            raise TypeError(
                f"{type(policy).__name__}.__energysched_tags__() must return a PolicyTags, "
                f"got {type(tags).__name__}"
            )
        return tags
    return PolicyTags(
        learns=bool(getattr(policy, "learns", False)),
        honours_power_cap=bool(getattr(policy, "honours_power_cap", False)),
    )


class Policy:
    """Base class of scheduling policies.

    Subclasses implement :meth:`schedule`. Class attributes:

    * ``name``: registry name;
    * ``learns``: when True the engine measures finished jobs and calls
      :meth:`observe` (costs time; rigid policies leave it False).
    """

    name: str = "policy"
    learns: bool = False
    honours_power_cap: bool = False

    def __energysched_tags__(self) -> PolicyTags:
        """This policy's capabilities (override and extend ``super()``'s to declare more)."""
        return PolicyTags(learns=bool(self.learns), honours_power_cap=bool(self.honours_power_cap))

    def run_config_overrides(self) -> dict[str, Any]:
        """Engine settings this policy imposes (e.g. ``idle_timeout_s``,
        ``reserve_nodes``, ``power_cap_w`` for power-managing policies); they
        replace the matching :class:`simulator.config.RunConfig` fields."""
        return {}

    def setup(self, platform: Any, rng: np.random.Generator | None = None, **context: Any) -> None:
        """Called once before a run with the platform and the run's RNG.

        ``context`` may hold ``observations`` (initial
        :class:`predictors.base.Observations`, e.g. the benchmark suite) and
        ``truth`` (only for the oracle predictor). Default: remember the platform.
        """
        self.platform = platform

    def schedule(self, view: ClusterView) -> Sequence[Decision]:  # pragma: no cover - abstract
        raise NotImplementedError

    def observe(self, runs: pd.DataFrame) -> None:
        """Measurements of the jobs that finished in this batch (learning loop)."""

    def params(self) -> dict[str, Any]:
        """Parameters for reports (override to list them)."""
        return {}


def validate_decision(
    decision: Decision, platform: Any, free_nodes: list[int], queued_ids: set[int]
) -> None:
    """Check one decision against the platform and the current free nodes.

    Raises :class:`PolicyError` naming the job and the violated limit. On
    success the caller deducts the nodes from ``free_nodes``.
    """
    job = decision.job
    job_id = getattr(job, "job_id", None)
    if not isinstance(job, QueuedJob) or job.index not in queued_ids:
        raise PolicyError(
            job_id,
            "queue",
            "decision for a job that is not waiting in the queue (already started or never submitted)",
        )
    types = platform.node_types
    t_index = decision.node_type
    if not isinstance(t_index, (int, np.integer)) or not 0 <= t_index < len(types):
        raise PolicyError(
            job_id, "node_type", f"node type index {t_index!r} not in 0..{len(types) - 1}"
        )
    ntype = types[t_index]
    nodes = decision.nodes
    if not isinstance(nodes, (int, np.integer)) or nodes < 1:
        raise PolicyError(job_id, "nodes", f"node count must be an integer >= 1, got {nodes!r}")
    if nodes > ntype.count:
        raise PolicyError(
            job_id, "nodes", f"{nodes} nodes exceed the {ntype.count} nodes of type {ntype.name!r}"
        )
    if nodes > free_nodes[t_index]:
        raise PolicyError(
            job_id,
            "free_nodes",
            f"{nodes} nodes requested but only {free_nodes[t_index]} free of type {ntype.name!r}",
        )
    if not ntype.has_freq(decision.freq_ghz):
        raise PolicyError(
            job_id,
            "freq_ghz",
            f"{decision.freq_ghz!r} GHz is not a P-state of {ntype.name!r} ({', '.join(f'{f:g}' for f in ntype.freqs_ghz)})",
        )
    cores = decision.cores
    if cores is not None and (
        not isinstance(cores, (int, np.integer)) or not 1 <= cores <= ntype.cores_per_node
    ):
        raise PolicyError(
            job_id, "cores", f"cores per node must be in 1..{ntype.cores_per_node}, got {cores!r}"
        )
    for attr in ("planned_runtime_s", "time_limit_s"):
        value = getattr(decision, attr)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise PolicyError(job_id, attr, f"must be a finite number > 0, got {value!r}")
