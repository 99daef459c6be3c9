"""Queue-based policies: an ordering, a backfilling scheme and a chooser.

:class:`QueuePolicy` walks the ordered queue once per batch. Each node type
is an independent partition (a job is queued for one node type, see
:class:`~policies.base.QueuedJob`). The chooser decides every job's
configuration ``(n, c, f)`` and planned runtime (:mod:`policies.choosers`);
a batch without any free node returns no decision without asking it.

FCFS (``backfill="none"``)
    Start jobs in queue order while they fit; the first job that does not
    fit blocks every job behind it on its partition.

EASY backfilling (``backfill="easy"``), the exact semantics
    (Lifka 1995; Mu'alem & Feitelson 2001):

    1. Start jobs in queue order while they fit in the free nodes.
    2. The first job that does not fit (the *head*) gets a reservation: walk
       the running jobs (including those started in step 1) in order of
       expected release (:func:`~policies.base.release_s`: the planned end
       ``expected_end_s``; a job past it is re-planned to end at its time
       limit, and counts as ending now once that has passed too), adding
       their nodes to the free ones until the head fits.
       That instant is the *shadow time*; the nodes left over at the shadow
       time beyond the head's need are the *extra nodes*.
    3. Every later job in queue order is backfilled when it fits in the free
       nodes now **and** either its planned end ``now + planned`` is ``<=``
       the shadow time (it cannot delay the head; equality allowed), or it
       needs no more than the extra nodes (then the extra nodes shrink by its
       size). Otherwise it is skipped. Only the head holds a reservation.
    4. Ties: jobs are considered in the ordering's order (FCFS: submit time,
       then trace order); running jobs with equal planned ends are taken in
       start order.

    Planned runtimes are the chooser's ``planned_runtime_s``: the requested
    time for the rigid chooser (a predicted runtime for predictor-driven
    choosers), or the recorded runtime when the trace has no requested time.
    A job that overruns its plan is re-planned to its time limit (Tsafrir,
    Etsion & Feitelson 2007 extend predictions that turn out too short): a
    predicted runtime is often too short, and counting such a job as ending
    "now" would put the shadow time at "now" and stop all backfilling except
    on the extra nodes. With the rigid chooser the plan is the limit, so
    nothing changes. The shadow time never lies in the past.

Conservative backfilling (``backfill="conservative"``)
    Every queued job gets a reservation, in queue order, in a *profile* of
    free nodes over time (Mu'alem & Feitelson 2001): the profile starts from
    the free nodes now and the expected releases of the running jobs (as for
    EASY; a job past its planned end and its time limit is assumed to end
    just after now), and each job is
    placed at the earliest instant from which its node count stays free for
    its whole planned runtime; its nodes are then taken out of the profile.
    A later job can only use holes left by earlier reservations, so **no job
    delays any earlier job's reservation**. Jobs whose reservation starts now
    are started. The profile is rebuilt every batch, so reservations move
    earlier when jobs end before their plan (compression).

    What "rebuilt every batch" means, exactly: every batch (a job ended, a
    job arrived) re-plans the whole queue from scratch, in queue order, as if
    no reservation had been made before; only the jobs whose new reservation
    starts now are started. This is not the compression of Mu'alem &
    Feitelson, which moves each reservation earlier within the previous
    schedule and never delays one: a full re-plan can put an earlier job into
    the hole a later job had, and that later job then moves (earlier or
    later). So a job's reservation depends on every re-placement before it
    in the queue, and keeping the reservations between batches (re-placing
    only what a change can move) would have to find the jobs a change does
    not move without re-placing them, which needs each job's profile of the
    jobs ahead of it; the policy does not do that and re-plans the queue
    every batch (its cost grows with the queue times the profile's length).

Power cap (``power_cap_w``, or the run's :class:`~simulator.config.RunConfig`)
    A job starts only if the predicted platform power after starting it fits
    under the cap: ``view.power_w + committed + delta <= cap`` where for
    ``n`` nodes at predicted power ``p`` per node (the decision's
    ``predicted_power_w``, else the P-state's full-load power; times ``1 +
    power_margin``) taking ``i`` idle nodes and booting ``b = n - i`` off
    nodes: ``delta = i (p - P_idle) + b (max(p, P_boot) - P_off)``.
    ``committed`` is the power that jobs still waiting for their boot will
    add when they start. With the oracle predictor and no power management
    the cap therefore holds at every instant. A job that does not fit the cap
    is treated like a job that does not fit the nodes (it blocks FCFS; as the
    EASY head its shadow time is the next planned end). A job that would
    exceed the cap even on an otherwise idle platform (all nodes on and idle)
    is skipped without blocking anyone; the engine finally rejects it as
    never started. Power management's
    own transitions (shutdowns draw ``shutdown_energy_j / shutdown_time_s``)
    are the engine's and are not predicted.

Job-length predictions (``job_length``)
    A job-length predictor (:mod:`predictors.job_length`: ``requested``, the
    default, ``user-history``, ``application-history``, ``combined``) predicts
    each queued job's runtime at its requested configuration when the policy
    first sees it (:attr:`~policies.base.QueuedJob.predicted_time_s`). Rigid
    decisions plan with it (the expected end of the job once it runs, and its
    length as a backfilling candidate or reservation holder); predictor-driven
    choosers scale their predictions with it instead of the request: their
    predictors take it as the job's length (``Queries.requested_time_s``), and
    the finished runs they learn from carry, as that length, the runtime the
    job had at its requested configuration (normalised as below), so the
    request ratio of :mod:`predictors.baselines` no longer rescales a
    prediction, it only corrects the model's own bias (measured on SDSC-SP2's
    first 5,000 jobs, ``adept+fluid``: median time error 45.6 %, against
    54.1 % when the ratio was learnt against the predicted lengths and 79.2 %
    from requests). Jobs are still killed
    at their requested time. A running job that outlives its prediction is
    re-planned to end at its time limit (:func:`~policies.base.release_s`,
    Tsafrir, Etsion & Feitelson 2007), never left ending in the past.
    Finished jobs are fed back through :meth:`QueuePolicy.observe` (the
    engine's learning loop, so a learning job-length predictor needs a ground
    truth; without one it learns nothing, with a warning, and the policy plans
    with requests): a run at another configuration than the requested one is
    normalised to it with perfect speedup and a CPU-bound clock (runtime x
    ``n / requested n`` x ``f / Fmax``), the fallback's assumption. With
    ``user-history`` and EASY this is Tsafrir et al.'s EASY++ (``easy++``).
    Cost: O(1) per job (a prediction at first sight, a history update per
    finished job); predicted lengths vary from job to job, so fewer decisions
    repeat an earlier one (PredictiveChooser's reuse): the first 10,000 jobs
    of SDSC-SP2 under ``easy-slack-size-freq`` take 5.8 % more instructions
    with ``combined`` than with ``requested`` (callgrind, 4,969 vs 4,695
    million; 3,378 vs 7,246 reused decisions).

Power management (``idle_timeout_s``, ``reserve_nodes``)
    Handed to the engine through :meth:`QueuePolicy.run_config_overrides`
    (see :mod:`simulator.engine`): idle nodes switch off after the timeout,
    keeping ``reserve_nodes`` idle nodes per node type on.

Performance (EASY and FCFS)
    A batch that starts nothing leaves its scan state behind (free nodes,
    reservations). When the next batch only adds jobs to the end of the
    queue, with the same free nodes, the same reservations (recomputed) and
    no decision changed (the chooser's ``decision_epoch``), the jobs scanned
    before would fail again, so only the new ones are looked at
    (``resumed_batches`` counts these batches). FCFS order and no power cap
    only. And behind a partition's EASY head, the chooser's cached decisions
    (``Chooser.decisions``) skip the jobs that cannot fit the free nodes
    without asking for their decisions; on one partition (FCFS order, no
    cap) the whole scan reads them in a tight loop (:meth:`QueuePolicy._one_partition`).
    The schedule is the same either way (tested against full rescans that
    ask for every decision). The head's reservation reads the running jobs in
    release order from the engine's :class:`~policies.base.ReleaseOrder`
    (``ClusterView.releases``: each job moves once into an overdue list when it
    passes its plan) and stops at the shadow time, instead of re-planning and
    sorting every running job (on CEA-Curie 72 % of them are past a predicted
    end); the same shadow and extra nodes (tested against the sorted walk).

Performance (long queues)
    Rigid EASY on one partition with a queue of 256 jobs or more (FCFS order,
    no power cap) finds the jobs to backfill through a
    :class:`~policies.queue_index.QueueIndex` (per block of 64 queued jobs:
    the smallest node count, and the shortest planned length per node-count
    prefix): a batch costs a few vector operations over the blocks instead of
    a walk over the queue (100,000 HPC2N jobs submitted at once: 3.6 s of CPU
    time instead of 173 s). Same decisions (tested against a plain walk).
    Predictor-driven EASY on one partition does the same with an index of the
    chooser's decisions (:meth:`QueuePolicy._indexed_decisions`), when the
    chooser names the queued jobs each ``prepare`` decided or decided again
    (:meth:`~policies.choosers.Chooser.changed_decisions`: new jobs, jobs of a
    refitted application): those alone are read and put in place
    (:meth:`~policies.queue_index.QueueIndex.replace`), instead of every queued
    job's decision in every batch. A ``prepare`` the index did not follow
    voids it (it is rebuilt from the whole queue). Conservative backfilling
    reads the same index for its shapes and its stop test. Same decisions
    (tested against the plain scans, :meth:`QueuePolicy._one_partition` and
    :meth:`QueuePolicy._conservative`).
    Conservative backfilling places each job with :meth:`Profile.place
    <policies.profile.Profile.place>`: one pass that finds the earliest start
    and reserves it, starting from a bound at or before the answer (the start
    found earlier in the batch for a job no larger and no longer: the profile
    only loses nodes during a batch, so that job cannot start earlier). A batch
    stops as soon as no job left in the queue could start now, checked every 32
    jobs: with a rigid chooser (``rigid_decisions``) or one that names its
    changed decisions, FCFS order, one partition and no cap, from the block
    summaries of the same
    :class:`~policies.queue_index.QueueIndex` on a queue of 256 jobs or more
    (:func:`~policies.profile.any_starts_now`), on a shorter queue of more
    than 64 jobs (rigid chooser) from the shapes of the jobs left
    (:func:`~policies.profile.may_start_now`); other batches scan the whole
    queue. Same decisions
    (tested against a plain loop that places every job from the profile's
    start). Every batch still re-plans the queue up to that point: 5,000
    SDSC-SP2 jobs submitted at once take 3.6 million placements, which is
    what the compiled kernel is for (docs/performance.md, The compiled
    kernel).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from itertools import islice
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from energysched.errors import ConfigError
from policies.base import (
    ClusterView,
    Decision,
    Policy,
    PolicyTags,
    ReleaseOrder,
    RunningJob,
    planned_length_s,
    release_s,
    rigid_decision,
)
from policies.choosers import Chooser, RigidChooser
from policies.ordering import ORDERINGS, Ordering, fcfs
from policies.profile import (
    Profile,
    long_queue_batch,
    may_start_now,
    suffix_shapes,
)
from policies.queue_index import BLOCK, GONE, QueueIndex
from workloads.runs import RUN_ROW_COLUMNS

log = logging.getLogger(__name__)

BACKFILL_MODES = ("none", "easy", "conservative")


_first = itemgetter(0)
_requested_nodes = attrgetter("requested_nodes")
_decision_nodes = attrgetter("nodes")
_decided_job = attrgetter("job")


def _itself(item: Any) -> Any:
    return item


def _index_follows(index: QueueIndex, queue: Sequence[Any], job_of: Any) -> bool:
    """Whether ``queue`` is still the index's waiting jobs (``job_of`` an index item's
    job) followed by new submits. Since the index's last batch the engine removed
    the jobs the policy started (which left the index) and appended submits: the
    queue's length and its jobs at the index's first and last places tell that
    nothing else happened."""
    waiting = index.waiting
    if len(queue) < waiting:
        return False
    items = index.jobs
    return not waiting or (
        queue[0] is job_of(items[index.first]) and queue[waiting - 1] is job_of(items[index.last])
    )


def _decision_length(d: Decision) -> float:
    """The length a decision is planned with (as the plain scans read it)."""
    planned = d.planned_runtime_s
    return d.job.estimate_s if planned is None else planned


#: from this queue length on, rigid EASY on one partition finds backfill candidates
#: through a QueueIndex (QueuePolicy._indexed_easy); it is dropped below a quarter of it
_INDEX_FROM_JOBS = 256
#: QueuePolicy._one_partition: the head blocks, its reservation is not computed yet
_UNRESERVED = ("unreserved",)


#: conservative backfilling on a long queue: jobs between two checks that a later job
#: could still start now
_STOP_EVERY = 32


def reservation(
    running: Sequence[RunningJob],
    started: Sequence[tuple[float, int]],
    free_now: int,
    needed: int,
    now: float,
    order: ReleaseOrder | None = None,
) -> tuple[float, int]:
    """Shadow time and extra nodes for a head job needing ``needed`` nodes.

    ``running`` is sorted by ``expected_end_s``; ``started`` holds
    ``(planned_end, nodes)`` of jobs started earlier in this batch. Running
    jobs release their nodes at :func:`~policies.base.release_s`, in that
    order (ties: a stable sort of ``running``, then ``started``), and the
    shadow time is the release that brings the free nodes to ``needed``.
    Returns ``(inf, 0)`` when the running jobs never free enough nodes.

    ``order``: the same running jobs kept in release order
    (:class:`~policies.base.ReleaseOrder`, ``ClusterView.releases``); when it
    is current at ``now``, the walk reads it and stops at the shadow time
    instead of re-planning and sorting every running job (the same answer).
    """
    if order is not None and order.now_s == now:
        return _ordered_reservation(order, started, free_now, needed, now)
    avail = free_now
    # only the jobs past their plan (first in ``running``) are re-planned; without
    # them and without started jobs, ``running`` is in release order already
    if started or (running and running[0].expected_end_s <= now):
        merged = [
            (r.expected_end_s if r.expected_end_s > now else release_s(r, now), r.nodes)
            for r in running
        ]
        merged += started
        merged.sort(key=_first)
        for end, nodes in merged:
            avail += nodes
            if avail >= needed:
                return (end if end > now else now), avail - needed
        return math.inf, 0
    for r in running:
        avail += r.nodes
        if avail >= needed:
            end = r.expected_end_s
            return (end if end > now else now), avail - needed
    return math.inf, 0


def _release_order(view: ClusterView, node_type: int) -> ReleaseOrder | None:
    """The view's :class:`~policies.base.ReleaseOrder` of a node type, if it keeps one."""
    releases = view.releases
    return None if releases is None else releases[node_type]


def _ordered_reservation(
    order: ReleaseOrder,
    started: Sequence[tuple[float, int]],
    free_now: int,
    needed: int,
    now: float,
) -> tuple[float, int]:
    """:func:`reservation` from a :class:`~policies.base.ReleaseOrder` current at
    ``now``: the jobs past their limit first (they release now), then a merge of
    the overdue jobs (by limit), the jobs on plan (by planned end) and
    ``started`` (stably sorted), ties in that order, until ``needed`` nodes are
    free. The same releases in the same order as the plain walk."""
    avail = free_now
    for _, nodes, _ in order.expired:
        avail += nodes
        if avail >= needed:
            return now, avail - needed
    overdue = order.overdue
    jobs = order.jobs
    i, n_overdue = 0, len(overdue)
    j, n_jobs = order.moved, len(jobs)
    inf = math.inf
    a = overdue[0][0] if n_overdue else inf
    if not started:  # (the usual case) two lists to merge
        for job in islice(jobs, j, None):  # the jobs on plan, by planned end
            b = job.expected_end_s
            # first the overdue jobs releasing up to this planned end (ties: overdue
            # first; ``not a > b``: the plain walk's order even for a NaN end)
            while not a > b and i < n_overdue:
                avail += overdue[i][2]
                if avail >= needed:
                    return a, avail - needed  # (a > now: the limit is ahead)
                i += 1
                a = overdue[i][0] if i < n_overdue else inf
            avail += job.nodes
            if avail >= needed:
                return b, avail - needed  # (b > now: on plan)
        for entry in islice(overdue, i, None):  # the overdue jobs after every planned end
            avail += entry[2]
            if avail >= needed:
                return entry[0], avail - needed
        return inf, 0
    b = jobs[j].expected_end_s if j < n_jobs else inf
    if len(started) > 1:
        started = sorted(started, key=_first)
    k, n_started = 0, len(started)
    c = started[0][0] if n_started else inf
    while i < n_overdue or j < n_jobs or k < n_started:
        if i < n_overdue and a <= b and a <= c:
            end = a
            avail += overdue[i][2]
            i += 1
            a = overdue[i][0] if i < n_overdue else inf
        elif j < n_jobs and (b <= c or k == n_started):
            end = b
            avail += jobs[j].nodes
            j += 1
            b = jobs[j].expected_end_s if j < n_jobs else inf
        else:
            end = c
            avail += started[k][1]
            k += 1
            c = started[k][0] if k < n_started else inf
        if avail >= needed:
            return (end if end > now else now), avail - needed
    return math.inf, 0


class QueuePolicy(Policy):
    """Ordering + backfilling scheme + chooser (+ power cap and power management).

    Args:
        backfill: ``"none"`` (FCFS), ``"easy"`` or ``"conservative"``.
        order: an ordering function or the name of one in :data:`policies.ordering.ORDERINGS`.
        chooser: decides ``(n, f)`` per job (default :class:`RigidChooser`).
        name: registry/report name.
        idle_timeout_s: switch idle nodes off after this many seconds (``None``: never).
        reserve_nodes: idle nodes per node type kept on by power management.
        power_cap_w: platform power cap in W (``None``: the run's, none by default).
        power_margin: relative margin on predicted power per node for the cap (0.05 = +5%).
        job_length: job-length predictor (a name of
            :data:`predictors.job_length.JOB_LENGTH_PREDICTORS`, ``module:Class``
            or an instance; see the module docstring).

    ``honours_power_cap`` is True: with exact power predictions the platform
    power never exceeds the cap (see the module docstring).
    """

    honours_power_cap = True

    def __init__(
        self,
        backfill: str = "easy",
        order: str | Ordering = "fcfs",
        chooser: Chooser | None = None,
        name: str | None = None,
        idle_timeout_s: float | None = None,
        reserve_nodes: int | None = None,
        power_cap_w: float | None = None,
        power_margin: float = 0.0,
        job_length: Any = "requested",
    ) -> None:
        if backfill not in BACKFILL_MODES:
            raise ConfigError(
                "backfill", f"must be one of {', '.join(BACKFILL_MODES)}, got {backfill!r}"
            )
        if isinstance(order, str):
            if order not in ORDERINGS:
                raise ConfigError(
                    "order", f"unknown ordering {order!r}; known: {', '.join(ORDERINGS)}"
                )
            self.order_name = order
            self.order: Ordering = ORDERINGS[order]
        else:
            self.order_name = getattr(order, "__name__", "custom")
            self.order = order
        if idle_timeout_s is not None and not (
            idle_timeout_s >= 0 and math.isfinite(idle_timeout_s)
        ):
            raise ConfigError(
                "idle_timeout_s", f"must be a finite number >= 0, got {idle_timeout_s!r}"
            )
        if reserve_nodes is not None and (
            not isinstance(reserve_nodes, (int, np.integer)) or reserve_nodes < 0
        ):
            raise ConfigError("reserve_nodes", f"must be an integer >= 0, got {reserve_nodes!r}")
        if power_cap_w is not None and not power_cap_w > 0:
            raise ConfigError("power_cap_w", f"must be > 0, got {power_cap_w!r}")
        if not power_margin >= 0:
            raise ConfigError("power_margin", f"must be >= 0, got {power_margin!r}")
        self.backfill = backfill
        self.chooser = chooser if chooser is not None else RigidChooser()
        self.name = (
            name or {"none": "fcfs", "easy": "easy", "conservative": "conservative"}[backfill]
        )
        self.learns = bool(getattr(self.chooser, "learns", False))
        self.idle_timeout_s = idle_timeout_s
        self.reserve_nodes = None if reserve_nodes is None else int(reserve_nodes)
        self.power_cap_w = power_cap_w
        self.power_margin = float(power_margin)
        self.job_length = job_length
        self._job_length: Any = None  # the requests: nothing to predict, nothing to import
        if job_length != "requested":
            from predictors.job_length import get_job_length_predictor  # (lazy: heavy package)

            self._job_length = get_job_length_predictor(job_length)  # (validates the spec)
        self._predicts_length = False
        self._learns_length = False
        self._index: QueueIndex | None = None
        self._decision_index: QueueIndex | None = None
        self.indexed_batches = 0

    # ------------------------------------------------------------------ contract
    def run_config_overrides(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.idle_timeout_s is not None:
            out["idle_timeout_s"] = float(self.idle_timeout_s)
        if self.reserve_nodes is not None:
            out["reserve_nodes"] = self.reserve_nodes
        if self.power_cap_w is not None:
            out["power_cap_w"] = float(self.power_cap_w)
        return out

    def setup(self, platform: Any, rng: np.random.Generator | None = None, **context: Any) -> None:
        super().setup(platform, rng, **context)
        self.chooser.setup(platform, rng=rng, **context)
        self.learns = bool(getattr(self.chooser, "learns", False))
        self._setup_job_length(platform, context.get("truth"))
        types = platform.node_types
        self._idle_w = [t.idle_power_w for t in types]
        self._off_w = [t.off_power_w for t in types]
        self._boot_w = [t.boot_power_w for t in types]
        self._boot_s = [t.boot_time_s for t in types]
        self._fmax_ghz = [t.fmax_ghz for t in types]  # (rigid decisions' clock)
        self._busy_w = {
            (k, p.freq_ghz): p.busy_power_w for k, t in enumerate(types) for p in t.pstates
        }
        self._idle_all_w = sum(t.count * t.idle_power_w for t in types)
        self._boots: list[
            tuple[float, float, float]
        ] = []  # (done_s, power while booting, power after)
        self._resume: tuple[Any, ...] | None = None
        #: per node type, no switching nodes (_switching_releases' usual answer; its
        #: readers copy it, never change it)
        self._no_switching: list[list[tuple[float, int]]] = [[] for _ in types]
        #: the chooser's ``rigid_decisions`` (a declaration of its class: read once a run,
        #: not at every batch)
        self._rigid_chooser = bool(getattr(self.chooser, "rigid_decisions", False))
        self._index = None
        #: the long-queue index of the chooser's decisions (_indexed_decisions), the
        #: key of each of its jobs (by ``QueuedJob.index``), and the chooser's
        #: prepare() it is up to date with (a prepare() it missed voids it)
        self._decision_index = None
        self._decision_keys: dict[int, int] = {}
        self._decision_index_at = -1
        self._prepares = 0
        #: batches decided through a long-queue index (see _indexed_easy,
        #: _indexed_decisions and _conservative_indexed)
        self.indexed_batches = 0
        #: batches whose queue scan resumed after the previous batch's (see _resumed)
        self.resumed_batches = 0

    def __energysched_tags__(self) -> PolicyTags:
        """Learns and takes row hand-overs when its chooser does (copied from the
        chooser, as a scikit-learn wrapper copies its part's tags); a subclass that
        overrides :meth:`observe` keeps the safe DataFrame hand-over unless it
        declares otherwise."""
        tags = super().__energysched_tags__()
        tags.observe_rows = type(self).observe is QueuePolicy.observe and bool(
            getattr(self.chooser, "accepts_run_batch", False)
        )
        return tags

    def observe(self, runs: Any) -> None:
        if self._learns_length and len(runs):
            runs = self._learn_lengths(runs)
        self.chooser.observe(runs)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "backfill": self.backfill,
            "order": self.order_name,
            "chooser": self.chooser.name,
            **self.chooser.params(),
        }
        if self._job_length is not None and self._job_length.name != "requested":
            out["job_length"] = self._job_length.name
        if self.idle_timeout_s is not None:
            out["idle_timeout_s"] = self.idle_timeout_s
        if self.reserve_nodes is not None:
            out["reserve_nodes"] = self.reserve_nodes
        if self.power_cap_w is not None:
            out["power_cap_w"] = self.power_cap_w
        if self.power_margin:
            out["power_margin"] = self.power_margin
        return out

    def predictor_log(self) -> Any:
        """Counters of the chooser's predictor use (one-row DataFrame) or ``None``."""
        stats = getattr(self.chooser, "stats", None)
        if not stats:
            return None
        import pandas as pd

        return pd.DataFrame([stats])

    # ------------------------------------------------------------------ power cap
    def _power_state(self, view: ClusterView) -> list[Any] | None:
        """``[power_w, idle_on per type]`` when a cap applies, else ``None``."""
        cap = view.power_cap_w
        if not math.isfinite(cap):
            return None
        now = view.now_s
        committed = 0.0
        boots = [b for b in self._boots if b[0] >= now]
        for done, during, after in boots:
            committed += after if done == now else max(0.0, after - during)
        self._boots = boots
        return [view.power_w + committed, list(view.idle_on_nodes)]

    def _power_delta(self, d: Decision, idle_on: list[int]) -> tuple[float, int, float, float]:
        t = d.node_type
        p = d.predicted_power_w
        if p is None:
            p = self._busy_w.get((t, d.freq_ghz))
            if p is None:
                p = self.platform.node_types[t].pstate(d.freq_ghz).busy_power_w
        p *= 1.0 + self.power_margin
        n = d.nodes
        from_idle = n if n <= idle_on[t] else idle_on[t]
        to_boot = n - from_idle
        delta = from_idle * (p - self._idle_w[t])
        during = 0.0
        if to_boot:
            delta += to_boot * (max(p, self._boot_w[t]) - self._off_w[t])
            during = from_idle * self._idle_w[t] + to_boot * self._boot_w[t]
        return delta, from_idle, during, n * p

    def _never_fits_power(self, d: Decision, cap: float) -> bool:
        """True when ``d`` exceeds the cap even on an otherwise idle platform."""
        t = d.node_type
        p = d.predicted_power_w
        if p is None:
            p = self._busy_w.get((t, d.freq_ghz), 0.0)
        p *= 1.0 + self.power_margin
        return self._idle_all_w + d.nodes * (max(p, self._boot_w[t]) - self._idle_w[t]) > cap * (
            1 + 1e-12
        )

    def _fits_power(self, d: Decision, ps: list[Any], cap: float, now: float) -> bool:
        delta, from_idle, during, after = self._power_delta(d, ps[1])
        if ps[0] + delta > cap * (1 + 1e-12):
            return False
        ps[0] += delta
        ps[1][d.node_type] -= from_idle
        if from_idle < d.nodes and self._boot_s[d.node_type] > 0:
            self._boots.append((now + self._boot_s[d.node_type], during, after))
        return True

    # ------------------------------------------------------------------ schedule
    def schedule(self, view: ClusterView) -> list[Decision]:
        if not any(view.free_nodes):
            return []
        self._switching = self._switching_releases(view)
        if self._predicts_length:
            self._predict_lengths(view.queue)
        self.chooser.prepare(view.queue, view)
        self._prepares += 1
        queue = self.order(view.queue, view) if self.order is not fcfs else view.queue
        if self.backfill == "conservative":
            decisions = self._conservative(queue, view)
        elif len(view.free_nodes) == 1 and not math.isfinite(view.power_cap_w):
            if self._rigid_chooser:
                decisions = self._rigid_single_partition(queue, view)
            else:
                got = self._one_partition(queue, view) if self.order is fcfs else None
                decisions = self._easy_or_fcfs(queue, view) if got is None else got
        else:
            decisions = self._easy_or_fcfs(queue, view)
        if decisions:
            self.chooser.started(decisions)
            if self._learns_length:
                self._remember_starts(decisions)
        return decisions

    def _switching_releases(self, view: ClusterView) -> list[list[tuple[float, int]]]:
        """Per node type, the nodes shutting down (``view.shutting_nodes``) as one
        release ``(when, nodes)``: they can run a job at the latest after their
        shutdown and a boot. Every reservation counts them: without them a node
        shutting down looked lost for good, the head's shadow moved to a far later
        end, and jobs backfilled onto nodes the head needed (an EASY violation)."""
        shutting = view.shutting_nodes
        if not any(shutting):  # the usual case (no power management): nothing switching
            none = self._no_switching
            return none if len(none) == len(shutting) else [[] for _ in shutting]
        now = view.now_s
        return [
            [(now + nt.shutdown_time_s + nt.boot_time_s, n)] if n > 0 else []
            for nt, n in zip(view.platform.node_types, shutting)
        ]

    def _easy_or_fcfs(self, queue: Sequence[Any], view: ClusterView) -> list[Decision]:
        free = list(view.free_nodes)
        now = view.now_s
        n_types = len(free)
        decisions: list[Decision] = []
        # (planned end, nodes) per type: jobs started in this batch, and switching nodes
        started: list[list[tuple[float, int]]] = [list(sw) for sw in self._switching]
        # per type: None = not blocked; [shadow, extra] = EASY reservation; False = FCFS-blocked
        blocked: list[Any] = [None] * n_types
        heads = [0] * n_types  # nodes of the job holding the reservation
        n_blocked = 0
        easy = self.backfill == "easy"
        choose = self.chooser.choose
        ps = self._power_state(view)
        cap = view.power_cap_w
        epoch = self.chooser.decision_epoch
        if ps is not None or self.order is not fcfs:
            epoch = None
        resume = self._resume
        self._resume = None
        scan = queue
        if resume is not None and epoch is not None:
            got = self._resumed(resume, queue, view, epoch)
            if got is not None:
                first, blocked, heads, n_blocked = got
                scan = queue[first:]
                self.resumed_batches += 1
        # the chooser's cached decisions, asked for once a head holds an EASY
        # reservation: a job behind it that cannot fit the free nodes is skipped
        # without asking for its decision
        cached = self.chooser.decisions(scan) if easy and n_blocked else None
        ask_cached = easy and not n_blocked
        for k, job in enumerate(scan):
            t = job.node_type
            b = blocked[t]
            if free[t] == 0 or b is False:
                if not any(free):
                    break
                continue
            if b is not None and cached is not None:
                d = cached[k]
                if d.nodes > free[t]:
                    continue  # its decision does not fit
            else:
                d = choose(job, view)
            n = d.nodes
            planned = d.planned_runtime_s if d.planned_runtime_s is not None else job.estimate_s
            if ps is not None and self._never_fits_power(d, cap):
                continue  # can never start under the cap: must not block the queue
            if b is None:
                if n <= free[t] and (ps is None or self._fits_power(d, ps, cap, now)):
                    decisions.append(d)
                    free[t] -= n
                    started[t].append((now + planned, n))
                    continue
                n_blocked += 1
                if not easy:
                    blocked[t] = False
                    if n_blocked == n_types:
                        break
                    continue
                if n <= free[t]:  # blocked by the power cap: wait for the next planned end
                    ends = [release_s(r, now) for r in view.running[t]]
                    ends += [e for e, _ in started[t]]
                    shadow = max(now, min(ends)) if ends else now
                    blocked[t] = [shadow, free[t] - n]
                else:
                    shadow, extra = reservation(
                        view.running[t], started[t], free[t], n, now, _release_order(view, t)
                    )
                    blocked[t] = [shadow, extra]
                    heads[t] = n
                if ask_cached:
                    cached = self.chooser.decisions(scan)
                    ask_cached = False
                continue
            if n > free[t]:
                continue
            if now + planned <= b[0]:
                if ps is None or self._fits_power(d, ps, cap, now):
                    decisions.append(d)
                    free[t] -= n
            elif n <= b[1] and (ps is None or self._fits_power(d, ps, cap, now)):
                decisions.append(d)
                free[t] -= n
                b[1] -= n
        if not decisions and epoch is not None and queue:
            state = [b if b is None or b is False else (b[0], b[1]) for b in blocked]
            self._resume = (queue, len(queue), queue[-1], free, state, heads, n_blocked, epoch)
        return decisions

    def _one_partition(self, queue: Sequence[Any], view: ClusterView) -> list[Decision] | None:
        """:meth:`_easy_or_fcfs` for one partition, FCFS order and no power cap, from
        the chooser's cached decisions (:meth:`Chooser.decisions`) in a tight loop;
        ``None`` when the chooser has none (the caller scans the general way). Same
        decisions, and the same state left behind for the next batch's resumed scan."""
        if self.backfill == "easy" and (
            self._decision_index is not None or len(queue) >= _INDEX_FROM_JOBS
        ):
            indexed = self._indexed_decisions(queue, view)
            if indexed is not None:
                return indexed
        chooser = self.chooser
        epoch = chooser.decision_epoch
        resume = self._resume
        first = 0
        # None: not blocked; False: FCFS-blocked; [shadow, extra]: EASY; _UNRESERVED:
        # EASY-blocked, the reservation not computed yet (no job behind the head
        # fitted the free nodes so far: then nothing depended on it)
        b: Any = None
        head = 0  # nodes of the job holding the reservation
        # (planned end, nodes) started before the head, and switching nodes
        started: list[tuple[float, int]] = list(self._switching[0])
        if resume is not None and epoch is not None:
            got = self._resumed(resume, queue, view, epoch)
            if got is not None:
                first, blocked, heads, _ = got
                b, head = blocked[0], heads[0]
        ds = chooser.decisions(queue[first:] if first else queue)
        if ds is None:
            return None  # self._resume is left for the general scan
        self._resume = None
        if first:
            self.resumed_batches += 1
        free = view.free_nodes[0]
        now = view.now_s
        decisions: list[Decision] = []
        scan = iter(ds)
        if b is None:  # start jobs in order until one does not fit: the head
            for d in scan:
                n = d.nodes
                if n > free:
                    if self.backfill == "easy":
                        b = _UNRESERVED
                        head = n
                    else:
                        b = False
                    break
                planned = d.planned_runtime_s
                decisions.append(d)
                free -= n
                started.append((now + (d.job.estimate_s if planned is None else planned), n))
                if free == 0:
                    return decisions
        if b:  # backfill behind the head's reservation [shadow, extra]
            shadow, extra = (None, 0) if b is _UNRESERVED else b
            for d in scan:
                n = d.nodes
                if n > free:
                    continue
                if shadow is None:  # the first job that fits: now the reservation matters
                    # (free is still what it was when the head blocked)
                    shadow, extra = reservation(
                        view.running[0], started, free, head, now, _release_order(view, 0)
                    )
                planned = d.planned_runtime_s
                if now + (d.job.estimate_s if planned is None else planned) <= shadow:
                    decisions.append(d)
                    free -= n
                elif n <= extra:
                    decisions.append(d)
                    free -= n
                    extra -= n
                else:
                    continue
                if free == 0:
                    break
            b = _UNRESERVED if shadow is None else (shadow, extra)
        if not decisions and epoch is not None and queue:
            n_blocked = 0 if b is None else 1
            self._resume = (queue, len(queue), queue[-1], [free], [b], [head], n_blocked, epoch)
        return decisions

    def _resumed(
        self, resume: tuple[Any, ...], queue: Sequence[Any], view: ClusterView, epoch: int
    ) -> tuple[int, list[Any], list[int], int] | None:
        """Where the previous batch's scan may be resumed: ``(first new job, blocked,
        heads, n_blocked)``, or ``None`` when the queue must be scanned from the start.

        The previous batch started nothing. If, since then, jobs were only
        appended to the queue, the free nodes are the same, no decision changed
        (same ``decision_epoch``) and each reservation is the same (same shadow
        time and extra nodes, recomputed), then every job scanned then fails
        again now: it still does not fit, or still ends after the shadow time
        (``now`` only grew) and needs more than the extra nodes. Only the new
        jobs need a look. Not used under a power cap or another ordering.
        """
        old_queue, length, last, free, state, heads, n_blocked, old_epoch = resume
        if (
            old_epoch != epoch
            or old_queue is not queue
            or len(queue) < length
            or queue[length - 1] is not last
            or free != view.free_nodes
        ):
            return None
        blocked: list[Any] = []
        now = view.now_s
        for t, b in enumerate(state):
            if b is None or b is False or b is _UNRESERVED:
                blocked.append(b)  # (no job scanned then depended on a reservation)
                continue
            got = reservation(
                view.running[t], self._switching[t], free[t], heads[t], now, _release_order(view, t)
            )
            if got != b:
                return None
            blocked.append([got[0], got[1]])
        return length, blocked, list(heads), n_blocked

    def _rigid_single_partition(self, queue: Sequence[Any], view: ClusterView) -> list[Decision]:
        """:meth:`_easy_or_fcfs` for one partition, the rigid chooser and no power
        cap, as a tight loop (the decision is read from ``job.scratch`` directly).
        Same decisions; it exists because rigid replays are the hot path of
        long-trace studies. A long queue under EASY goes to :meth:`_indexed_easy`."""
        if (
            self.backfill == "easy"
            and self.order is fcfs
            and (self._index is not None or len(queue) >= _INDEX_FROM_JOBS)
        ):
            got = self._indexed_easy(queue, view)
            if got is not None:
                return got
        free = view.free_nodes[0]
        now = view.now_s
        fmax = self._fmax_ghz[0]
        decisions: list[Decision] = []
        started: list[tuple[float, int]] = list(self._switching[0])  # and switching nodes
        n_queue = len(queue)
        i = 0
        d: Any = None
        while i < n_queue:
            job = queue[i]
            d = job.scratch
            if d is None or d.__class__ is not Decision:
                d = job.scratch = rigid_decision(job, fmax)
            if d.nodes > free:
                break
            decisions.append(d)
            free -= d.nodes
            started.append((now + d.planned_runtime_s, d.nodes))
            i += 1
        if i == n_queue or self.backfill != "easy" or free == 0:
            return decisions
        shadow, extra = reservation(
            view.running[0], started, free, d.nodes, now, _release_order(view, 0)
        )
        for k in range(i + 1, n_queue):
            job = queue[k]
            d = job.scratch
            if d is None or d.__class__ is not Decision:
                d = job.scratch = rigid_decision(job, fmax)
            n = d.nodes
            if n > free:
                continue
            if now + d.planned_runtime_s <= shadow:
                decisions.append(d)
                free -= n
            elif n <= extra:
                decisions.append(d)
                free -= n
                extra -= n
            else:
                continue
            if free == 0:
                break
        return decisions

    def _synced_index(self, queue: Sequence[Any]) -> QueueIndex | None:
        """The queue index of :meth:`_indexed_easy`, brought up to date with
        ``queue``: built when the queue grows long, dropped when it gets short
        (``None``: scan the plain way). Since the last batch the engine removed
        the jobs this policy started and appended new submits; the first and last
        of the jobs the index holds and the queue's length check that nothing
        else happened (otherwise the index is rebuilt)."""
        index = self._index
        if index is not None:
            waiting = index.waiting
            n_queue = len(queue)
            if not _index_follows(index, queue, _itself):
                index = None  # the queue changed in a way the index did not follow
            elif n_queue < _INDEX_FROM_JOBS // 4:
                self._index = None
                return None
            elif n_queue > waiting:
                index.append(queue[waiting:])
        if index is None:
            if len(queue) < _INDEX_FROM_JOBS:
                self._index = None
                return None
            index = QueueIndex(
                queue,
                _requested_nodes,
                planned_length_s,
                self.platform.node_types[0].count,
            )
        self._index = index
        return index

    def _indexed_easy(self, queue: Sequence[Any], view: ClusterView) -> list[Decision] | None:
        """:meth:`_rigid_single_partition` under EASY on a long queue: the same
        decisions, with the jobs behind the head found through a
        :class:`~policies.queue_index.QueueIndex` (a few vector operations per
        batch instead of a walk over the whole queue). ``None`` when the queue is
        short (the caller scans it)."""
        index = self._synced_index(queue)
        if index is None:
            return None
        fmax = self._fmax_ghz[0]
        jobs = index.jobs
        taken = self._easy_through_index(index, view)
        decisions = [rigid_decision(jobs[key], fmax) for key in taken]
        for key in taken:
            index.remove(key)
        return decisions

    def _synced_decisions(self, queue: Sequence[Any]) -> QueueIndex | None:
        """The index of :meth:`_indexed_decisions` (its items are the chooser's
        decisions, in queue order), brought up to date with ``queue`` and the
        chooser's last :meth:`~policies.choosers.Chooser.prepare`: the jobs it
        decided again (:meth:`~policies.choosers.Chooser.changed_decisions`) get
        their new decisions, the new submits are added. Built when the queue
        grows long; ``None`` (and dropped) when it is short, when the chooser
        cannot tell which decisions changed, or when a prepare() went by without
        it (then it is rebuilt)."""
        chooser = self.chooser
        index = self._decision_index
        keys = self._decision_keys
        self._decision_index = None
        changed = chooser.changed_decisions()
        if changed is None:
            return None
        n_queue = len(queue)
        if index is not None:
            waiting = index.waiting
            items = index.jobs
            if self._decision_index_at != self._prepares - 1 or not _index_follows(
                index, queue, _decided_job
            ):
                index = None  # the queue or the decisions changed in a way the index missed
            elif n_queue < _INDEX_FROM_JOBS // 4:
                return None
            else:
                again = [job for job in changed if job.index in keys]
                if again:
                    found = chooser.decisions(again)
                    if found is None:
                        return None
                    index.replace((keys[d.job.index], d) for d in found)
                if n_queue > waiting:
                    new = chooser.decisions(queue[waiting:])
                    if new is None:
                        return None
                    first_key = len(items)
                    index.append(new)
                    keys.update((d.job.index, first_key + i) for i, d in enumerate(new))
        if index is None:
            if n_queue < _INDEX_FROM_JOBS:
                return None
            every = chooser.decisions(queue)
            if every is None:
                return None
            index = QueueIndex(
                every, _decision_nodes, _decision_length, self.platform.node_types[0].count
            )
            keys = {d.job.index: key for key, d in enumerate(every)}
        self._decision_index = index
        self._decision_keys = keys
        self._decision_index_at = self._prepares
        return index

    def _indexed_decisions(self, queue: Sequence[Any], view: ClusterView) -> list[Decision] | None:
        """:meth:`_one_partition` under EASY on a long queue: the same decisions,
        read from an index of the chooser's decisions
        (:meth:`_synced_decisions`) instead of a walk over every queued job's
        decision. ``None`` when the queue is short or the chooser cannot tell
        which of its decisions changed (the caller scans the queue)."""
        index = self._synced_decisions(queue)
        if index is None:
            return None
        self._resume = None  # (a later plain scan starts afresh)
        return self._take_decisions(index, self._easy_through_index(index, view))

    def _take_decisions(
        self, index: QueueIndex, taken: list[int], resummarise: bool = False
    ) -> list[Decision]:
        """The decisions at ``taken`` in the index of the chooser's decisions, which
        they leave (``resummarise``: their blocks' summaries are recomputed)."""
        keys = self._decision_keys
        decisions = [index.jobs[key] for key in taken]
        for key, d in zip(taken, decisions):
            index.remove(key, resummarise)
            del keys[d.job.index]
        return decisions

    def _easy_through_index(self, index: QueueIndex, view: ClusterView) -> list[int]:
        """EASY on one partition over the jobs of ``index`` (no power cap): the keys
        of the jobs that start now, in the order the plain scan starts them. Jobs
        start in queue order while they fit; behind the first that does not (the
        head), the index finds each next job that fits the free nodes and ends
        by the head's shadow time or fits in its extra nodes. The caller removes
        the keys from the index."""
        self.indexed_batches += 1
        free = view.free_nodes[0]
        now = view.now_s
        nodes, lengths = index.nodes_list, index.lengths_list
        n_keys = len(index.jobs)
        started: list[tuple[float, int]] = list(self._switching[0])  # and switching nodes
        taken: list[int] = []
        key = index.first
        while key < n_keys:  # start jobs in order while they fit
            n = nodes[key]
            if n > free:
                break
            taken.append(key)
            free -= n
            started.append((now + lengths[key], n))
            key = index.next_waiting(key + 1)
        if key < n_keys and free > 0:  # the job at ``key`` is the head: backfill behind it
            shadow, extra = reservation(
                view.running[0], started, free, nodes[key], now, _release_order(view, 0)
            )
            key += 1
            while free > 0:
                key = index.first_backfill(key, free, extra, shadow, now)
                if key < 0:
                    break
                n = nodes[key]
                taken.append(key)
                free -= n
                if not now + lengths[key] <= shadow:
                    extra -= n  # backfilled on the extra nodes
                key += 1
        return taken

    def _conservative(self, queue: Sequence[Any], view: ClusterView) -> list[Decision]:
        free = list(view.free_nodes)
        now = view.now_s
        just_after = math.nextafter(now, math.inf)
        profiles = [
            Profile(
                now,
                free[t],
                [(max(release_s(r, now), just_after), r.nodes) for r in view.running[t]]
                + [(max(w, just_after), n) for w, n in self._switching[t]],
            )
            for t in range(len(free))
        ]
        ps = self._power_state(view)
        cap = view.power_cap_w
        choose = self.chooser.choose
        decisions: list[Decision] = []
        # A long queue (one partition, no cap): every _STOP_EVERY jobs, stop once no job
        # left in the queue could start now (see policies.profile.may_start_now)
        shapes = None
        if len(queue) > 2 * _STOP_EVERY and ps is None and len(free) == 1:
            if self._rigid_chooser:
                index = self._synced_index(queue) if self.order is fcfs else None
                if index is not None:
                    jobs = index.jobs
                    taken = self._conservative_indexed(index, profiles[0], view)
                    rigid = [choose(jobs[key], view) for key in taken]
                    for key in taken:
                        index.remove(key, resummarise=True)
                    return rigid
                shapes = suffix_shapes(queue, _STOP_EVERY)
            elif self.order is fcfs:  # a chooser that names its changed decisions
                index = self._synced_decisions(queue)
                if index is not None:
                    taken = self._conservative_indexed(index, profiles[0], view)
                    return self._take_decisions(index, taken, resummarise=True)
        for k, job in enumerate(queue):
            if (
                shapes is not None
                and not k % _STOP_EVERY
                and k
                and not may_start_now(profiles[0], now, shapes[k // _STOP_EVERY])
            ):
                break
            t = job.node_type
            if free[t] == 0:
                # nothing more starts on this partition in this batch, and its
                # reservations only matter to its own jobs: the batch's decisions
                # are made (the profile is rebuilt next batch)
                if not any(free):
                    break
                continue
            d = choose(job, view)
            n = d.nodes
            planned = d.planned_runtime_s if d.planned_runtime_s is not None else job.estimate_s
            if ps is not None and self._never_fits_power(d, cap):
                continue  # can never start under the cap: holds no reservation
            # (Profile.place searches from the starts found earlier in the batch: the
            # profile only loses nodes, so a job no larger and no longer starts no earlier)
            start = profiles[t].place(n, planned)
            if start == math.inf:
                continue  # larger than the partition: never placeable
            if start == now and n <= free[t] and (ps is None or self._fits_power(d, ps, cap, now)):
                decisions.append(d)
                free[t] -= n
        return decisions

    def _conservative_indexed(
        self, index: QueueIndex, profile: Profile, view: ClusterView
    ) -> list[int]:
        """:meth:`_conservative` on one partition, FCFS order and no cap, on a long
        queue held in ``index`` (the rigid jobs', or the chooser's decisions): the
        keys of the jobs that start now, from the same placements in queue order,
        with the jobs' shapes read from the index and the stop test (every
        ``_STOP_EVERY`` jobs: could any job left start now?) answered from its
        block summaries (:func:`~policies.profile.any_starts_now`) instead of a
        pass over the whole queue per batch. The caller removes the keys from the
        index, their block summaries recomputed."""
        self.indexed_batches += 1
        now = view.now_s
        batch = long_queue_batch()
        nodes: Any = index.nodes if batch.reads_arrays else index.nodes_list
        lengths: Any = index.lengths if batch.reads_arrays else index.lengths_list
        taken = batch.run(
            profile,
            now,
            view.free_nodes[0],
            nodes,
            lengths,
            index.first,
            len(index.jobs),
            index.block_min_length,
            _STOP_EVERY,
            BLOCK,
            GONE,
        )
        return list(taken)

    # ------------------------------------------------------------------ job lengths
    def _setup_job_length(self, platform: Any, truth: Any) -> None:
        """A fresh history per run; whether lengths are predicted and learned."""
        jl = self._job_length
        if jl is None:
            self._predicts_length = self._learns_length = False
            return
        from predictors.job_length import RequestedLength

        jl.reset()
        self._predicts_length = not isinstance(jl, RequestedLength)
        self._learns_length = self._predicts_length and bool(jl.learns)
        if self._learns_length:
            if truth is None:
                log.warning(
                    "%s: the job-length predictor %r learns from finished jobs, which the "
                    "engine reports only under a ground truth; without one it has no "
                    "history and every job is planned with its request (give a truth, "
                    "e.g. --truth npb-mix)",
                    self.name,
                    jl.name,
                )
            self.learns = True
        #: job_id -> (user, application, runtime normalisation, predicted length, request)
        self._starts: dict[int, tuple[int, int, float, Any, float]] = {}
        from predictors.base import RunRows

        self._run_rows_cls = RunRows

    def _predict_lengths(self, queue: Sequence[Any]) -> None:
        """Predict the length of the jobs seen for the first time (the engine appends
        new jobs to the queue: scan back to the first one already predicted)."""
        predict = self._job_length.predict
        for job in reversed(queue):
            if job.predicted_time_s is not None:
                break
            job.predicted_time_s = predict(job.user_id, job.application, job.requested_time_s)

    def _remember_starts(self, decisions: Sequence[Decision]) -> None:
        starts = self._starts
        fmax = self._fmax_ghz
        for d in decisions:
            job = d.job
            ratio = 1.0
            f_top = fmax[d.node_type]
            if d.nodes != job.requested_nodes or d.freq_ghz != f_top:
                ratio = _to_request_ratio(d, f_top)
            starts[job.job_id] = (
                job.user_id,
                job.application,
                ratio,
                job.predicted_time_s,
                job.requested_time_s,
            )

    def _learn_lengths(self, runs: Any) -> Any:
        """Feed the finished runs to the job-length predictor; return ``runs`` with
        the ``requested_time_s`` of each run whose job was predicted with a
        job-length prediction replaced by its runtime at the requested
        configuration, the length that would have been exact (for the chooser's
        predictor, see the module docstring)."""
        RunRows = self._run_rows_cls
        starts = self._starts
        observe = self._job_length.observe
        to_chooser = bool(self.chooser.learns)
        k = _ROW_REQUESTED_TIME
        if runs.__class__ is RunRows:  # the engine's usual hand-over: rows, often one
            rows = runs.rows
            replaced: list[Any] | None = None
            for i, row in enumerate(rows):
                got = starts.pop(row[_ROW_JOB_ID], None)
                if got is None:
                    continue
                at_request = row[_ROW_TIME] * got[2]
                observe(got[0], got[1], at_request, got[4])
                length = got[3]
                if to_chooser and length is not None and length == length and at_request > 0:
                    if replaced is None:
                        replaced = list(rows)
                    replaced[i] = (*row[:k], at_request, *row[k + 1 :])
            return runs if replaced is None else RunRows(replaced)
        ids = np.asarray(runs["job_id"]).tolist()
        times = np.asarray(runs["time_s"], dtype=np.float64).tolist()
        lengths: list[Any] = []
        for job_id, time_s in zip(ids, times):
            got = starts.pop(job_id, None)
            if got is None:
                lengths.append(None)
                continue
            user, app, ratio, length, request_s = got
            at_request = time_s * ratio
            observe(user, app, at_request, request_s)
            predicted = length is not None and length == length and at_request > 0
            lengths.append(at_request if predicted else None)
        if not to_chooser or all(x is None for x in lengths):
            return runs
        old = np.asarray(runs["requested_time_s"], dtype=np.float64)
        new = np.array([o if x is None else x for o, x in zip(old.tolist(), lengths)])
        from workloads.runs import RunBatch

        if isinstance(runs, RunBatch):
            cols = dict(runs.cols)
            cols["requested_time_s"] = new
            return RunBatch(cols, len(runs))
        runs = runs.copy()
        runs["requested_time_s"] = new
        return runs


def _to_request_ratio(d: Decision, f_top: float) -> float:
    """The factor that moves a moved job's measured runtime to its requested
    configuration: the predictor's own ratio ``reference_runtime_s /
    predicted_runtime_s`` when the decision carries both, else perfect speedup
    and runtime ~ 1/f (``nodes / requested_nodes * f / f_top``)."""
    ref, pred = d.reference_runtime_s, d.predicted_runtime_s
    if ref is not None and pred is not None and ref > 0 and pred > 0:
        return ref / pred
    return d.nodes / d.job.requested_nodes * d.freq_ghz / f_top


# positions in a finished run's row (workloads.runs: a light module, no predictor import)
_ROW_JOB_ID = RUN_ROW_COLUMNS.index("job_id")
_ROW_TIME = RUN_ROW_COLUMNS.index("time_s")
_ROW_REQUESTED_TIME = RUN_ROW_COLUMNS.index("requested_time_s")


def fcfs_policy(**kwargs: Any) -> QueuePolicy:
    """Rigid first-come-first-served without backfilling."""
    return QueuePolicy(backfill="none", name="fcfs", **kwargs)


def easy_policy(**kwargs: Any) -> QueuePolicy:
    """Rigid EASY backfilling."""
    return QueuePolicy(backfill="easy", name="easy", **kwargs)


def conservative_policy(**kwargs: Any) -> QueuePolicy:
    """Rigid conservative backfilling."""
    return QueuePolicy(backfill="conservative", name="conservative", **kwargs)
