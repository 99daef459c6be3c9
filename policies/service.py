"""Service-aware energy policies: lower a job's clock only while service holds.

Energy-optimal clocks for every job (``easy-energy-freq``) save energy and
wreck service: each slowed job occupies its nodes longer, the queue grows
and every later job waits. The power-aware scheduling literature's answer,
implemented here, lowers a job's clock only when the job itself and the
queue can afford it.

:class:`ServiceAwareChooser` decides each job **when the backfilling scheme
considers it** (per batch, not once per job): the decision depends on the
job's wait so far and on the state of the cluster. A decision holds, while its
node type's gate (below) and its prediction stay as they are, until the wait
passes the bound it was picked within, so each is kept with that time and
decided again only then (or when the gate flips or the application is
refitted): the same decisions as deciding every queued job in every batch,
and backfilling reads only the changed ones on a long queue
(:meth:`~policies.choosers.Chooser.changed_decisions`).

BSLD-threshold rule (``easy-energy-bsld``)
    Etinski, Corbalan, Labarta and Valero, "BSLD threshold driven power
    management policy for HPC centers", IPDPS Workshops 2010, pp. 1-8
    (doi:10.1109/IPDPSW.2010.5470907): EASY backfilling where each job, when
    scheduled, runs at the lowest frequency whose *predicted* bounded
    slowdown stays under a threshold ``BSLD_th``, and at the top frequency
    while the wait queue holds more than ``WQ_th`` jobs. Their two knobs
    give "fine grain energy-performance trade-off control"; they report
    7-18 % less CPU energy "depending on allowed job performance penalty"
    (abstract). Here, for a job that has waited ``w`` seconds so far and
    whose predicted runtime at configuration ``(n, f)`` is ``T(n, f)``::

        predicted_bsld(n, f) = (w + T(n, f)) / max(T(n_req, Fmax), tau)

    with ``tau = 10 s`` (:data:`BSLD_TAU_S`, the usual bound, as in
    :mod:`simulator.metrics`). The rule picks the **lowest predicted energy** ``(n, f)`` with
    ``predicted_bsld <= bsld_threshold`` and ``T(n, f) <= max_stretch *
    T(n_req, Fmax)`` (the stretch cap, below; Etinski et al. pick the lowest
    frequency; with a convex power curve the lowest-energy P-state is the
    better-defined target, and it is never below the energy-optimal clock),
    over the P-states of the requested size (default) or, with
    ``moldable=True``, over the candidate sizes of
    :class:`~policies.choosers.PredictiveChooser` too. When no configuration
    qualifies (the job has waited too long already), or while more than
    ``queue_threshold`` jobs wait for the job's node type (the job itself
    included), the job runs rigid: requested size, top clock. Ties go to the
    requested size and the top clock.

Utilisation-driven rule (``easy-util-freq``)
    Etinski, Corbalan, Labarta and Valero, "Utilization driven power-aware
    parallel job scheduling", Computer Science - Research and Development
    25(3-4), 2010, pp. 207-216 (doi:10.1007/s00450-010-0129-X; UPAS):
    "apply DVFS when system utilization is below a certain threshold,
    exploiting periods of low system activity" (abstract; about 8 % less CPU
    energy). Here a job's clock may be lowered only while the busy nodes of
    its node type (running or booting) are below ``util_threshold`` of the
    node type's nodes; the clock is then the lowest-energy one within the
    BSLD threshold (``inf`` by default for this rule: the energy-optimal
    clock), else the top clock.

Both rules read runtimes from the predictor the policy is given (every
prediction is ``T(n, f)`` of :class:`~predictors.base.Predictor`), so a
better job-length predictor makes both the BSLD estimate and the planned
runtimes better without a change here. Later work by the same authors
("Power-aware parallel job scheduling", PhD thesis, UPC 2012; "Parallel job
scheduling for power constrained HPC systems", Parallel Computing 38(12),
2012) keeps the BSLD-threshold frequency assignment and adds a power budget;
the power cap of :class:`~policies.backfilling.QueuePolicy` plays that role
here.

Stretch cap (``max_stretch``)
    A lowered clock must also keep the job's own predicted runtime within
    ``max_stretch`` times its runtime at the top clock (``T(n, f) <=
    max_stretch * T(n_req, Fmax)``), the performance-loss bound of DVFS
    run-time systems (Hsu and Feng's beta-adaptation, "A power-aware run-time
    system for high-performance computing", SC 2005, lowers the clock only
    while the predicted slowdown stays within a user-given bound). Under the
    Fluid model a memory-bound job (small ``alpha``) saves much energy for
    little stretch and a CPU-bound one little for much; the cap keeps the
    first kind and refuses the second, whose extra node-seconds cost the
    queue more waiting than the energy they save. The BSLD bound alone allows
    a 2x stretch to a job that has not waited.

Busy-queue rule (``busy_rule``)
    While the gate is closed, Etinski et al. run every job rigid
    (``busy_rule = "rigid"``, the default). With ``moldable = True`` the
    ``"shrink"`` rule (the default of ``easy-energy-bsld-off``) instead takes
    the lowest-energy *smaller* size at the top clock whose predicted
    node-seconds ``n T(n, Fmax)`` are at most the requested size's and whose
    predicted bounded slowdown, counting the wait so far, stays under
    ``bsld_threshold``. Such a move leaves the queue at least as much machine
    as the rigid run (a job whose speedup is sublinear needs fewer
    node-seconds on fewer nodes) and costs only the job's own slowdown, which
    the bound limits; a lowered clock, by contrast, adds node-seconds and
    waits for a short queue. Choosing smaller partitions when the machine is
    loaded is the moldable-scheduling result of Srinivasan, Subramani,
    Kettimuthu, Holenarsipur and Sadayappan ("Effective selection of
    partition sizes for moldable scheduling of parallel jobs", HiPC 2002,
    LNCS 2552) and of Sabin, Lang and Sadayappan (job efficiency, JSSPP 2006,
    LNCS 4376); here the efficiency comes from the predictor.

Shrink bound (``max_shrink``)
    The stretch cap bounds the damage of a lowered clock when its prediction
    is right; the BSLD bound does the same for a smaller size. Neither bounds
    a *wrong* prediction: a moldable pick ``n < n_req`` is given the time limit
    its request allows in the worst case, ``R * n_req / n``
    (:meth:`ServiceAwareChooser._worst_case_limit_s`), and a job whose speedup
    the predictor overrates runs up to that. With ``max_shrink`` no size below
    ``n_req / max_shrink`` is a candidate, so under the models' assumption
    that speedup does not fall with more nodes a moved job runs at most
    ``max_shrink`` times its runtime at the requested size (``Fmax / f`` more
    at a lowered clock), and its time limit grows at most as much, whatever
    the prediction said: the bound ``max_stretch`` (Hsu and Feng's) is for
    clocks. Without it, on CTC-SP2 (``--truth npb-mix``, seeds 1 and 2) a
    288-node job of one application was shrunk to 1 node on a prediction
    that it would run as long there as on 288 (64,600 s; the predictor had
    seen that application at 316 and 320 nodes only and flagged both cells
    unreliable); it ran 15.4 million s (178 days) within its moved limit,
    and the makespan grew from 339 to 479-483 days. Keeping only the cells
    the predictor flags reliable would have excluded that case (and every
    other runaway of those replays) but bounds nothing: of the shrinks by
    more than 4x to cells flagged reliable (CTC-SP2, seed 1), 48 of 186 ran
    more than 3 times their predicted runtime.

Defaults and why (replays of the full traces with ``--truth npb-mix --seed
0``, platform ``trace``, default predictor and job lengths; the tables are in
``docs/background/service-aware-energy.md``; the variants' figures come from
replays whose reservations ignored nodes shutting down: compare them with
each other)
    ``bsld_threshold = 2.0``: the middle of the 1.5-3 range such studies use
    (we could not check Etinski et al.'s exact values); 1.5 saved less and
    served worse with a variant of the shrink rule that also lowers clocks
    (SDSC-SP2: 9.2 %, mean BSLD 96).
    ``queue_threshold = 4``: 8, 16 or no gate saved 0.2-1 point more on
    SDSC-SP2 at a mean BSLD at or above rigid EASY's. ``max_stretch = 1.1``
    (clocks only): 1.2 saves 0.3 points more at rigid EASY's mean BSLD
    exactly (86.0 on SDSC-SP2), 1.3 exceeds it. ``plan_with = "prediction"``:
    with history-based job lengths the predicted plans are EASY++'s better
    reservations (``easy++``), the service headroom the lowered clocks spend.
    ``busy_rule = "shrink"`` in ``easy-energy-bsld-off``: with ``"rigid"`` it
    saved 9.5 % (SDSC-SP2) and 6.8 % (CTC-SP2) with ``combined`` job
    lengths; shrinking at any clock while the queue is long (node-seconds
    bound only; same lengths) saved 11.3 % and 12.8 % but served KTH-SP2
    worse than rigid EASY (mean BSLD 110 against 92); at the top clock it
    stays under. ``tau_s = 10``. Calibration runs (the lowest
    clock, ``explore_runs``) are lowered clocks too and wait for a short
    queue: made whenever they came, they raised CTC-SP2's calibration jobs'
    mean BSLD from 37 to 110; they are not bound by ``max_stretch`` (they
    measure the lowest clock). A job due for one that starts rigid instead is
    planned with its job-length prediction.

    ``max_shrink = 4`` in ``easy-energy-bsld-off`` (the chooser's own default
    is ``inf``, no bound): twice ``bsld_threshold``, so a shrink the predictor
    gets right stretches its job at most ``bsld_threshold`` times (the BSLD
    bound) and a wrong one at most ``max_shrink`` times (speedup not falling
    with more nodes). Replays with ``--truth npb-mix`` seeds 0, 1 and 2 (same
    code otherwise; savings against rigid EASY of the same seed): without the
    bound CTC-SP2 saved 10.7 / 9.8 / 8.3 % with makespans of 339 / 479 / 483
    days (rigid EASY: 339; the longest job 33 / 179 / 184 days) and SDSC-SP2
    10.4 / 13.5 / 10.3 %; with ``max_shrink = 4`` CTC-SP2 saves 10.4 / 10.3 /
    9.5 % at 339 days and a mean BSLD of 32 / 40 / 40 (EASY: 50), SDSC-SP2
    10.2 / 12.8 / 10.1 % at 76 / 68 / 79 (EASY: 86), no job longer than 3.5
    days; ``max_shrink = 2`` also forbids shrinks the predictor gets right:
    CTC-SP2 8.8 / 8.3 / 8.3 %, mean BSLD 45-47. Seed 0, full traces:
    KTH-SP2 20.7 % (20.4 % without), mean BSLD 82 (83; EASY: 92), makespan
    334 days (343; EASY: 333); HPC2N 31.2 % (30.0 %), mean BSLD 86 (80;
    EASY: 90), the longest job 17 days (41).

    With these defaults ``easy-energy-bsld-off`` saves 10.2 % (SDSC-SP2) and
    10.4 % (CTC-SP2) of rigid EASY's energy at a lower mean BSLD (76 against
    86, 32 against 50) with fewer killed jobs; most of the saving is the idle
    power-off, then the smaller sizes; clocks add about 1 % of the busy
    energy (with this truth's large static power only the memory-bound jobs
    save much by running slower).

Calibration runs (``explore_runs``), the ``min_runs`` fallback, planned
runtimes and time limits are those of
:class:`~policies.choosers.PredictiveChooser`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from energysched.errors import ConfigError
from policies.base import ClusterView, Decision, QueuedJob, rigid_decision
from policies.choosers import (
    TIE_RTOL,
    PredictiveChooser,
    _argmin_one,
    _Entry,
    _length_input,
    _read_only,
)

__all__ = ["BSLD_TAU_S", "BUSY_RULES", "PLAN_WITH", "ServiceAwareChooser", "predicted_bsld"]

#: What the backfilling plans a decision with (``plan_with``).
PLAN_WITH = ("limit", "prediction")

#: What a job gets while the queue or utilisation gate is closed (``busy_rule``).
BUSY_RULES = ("rigid", "shrink")

#: The bound of the bounded slowdown (s); the same value as
#: ``simulator.metrics.BSLD_TAU_S``, which policies may not import (layers).
BSLD_TAU_S = 10.0


def predicted_bsld(
    wait_s: float, runtime_s: np.ndarray | float, top_runtime_s: float, tau_s: float = BSLD_TAU_S
) -> np.ndarray | float:
    """Predicted bounded slowdown of a job that has waited ``wait_s`` so far and
    would run ``runtime_s`` from now: ``(wait + runtime) / max(top_runtime, tau)``
    (``top_runtime``: its predicted runtime at the requested size and top clock)."""
    return (wait_s + runtime_s) / max(top_runtime_s, tau_s)


#: How long before a held decision's expiry time (:meth:`ServiceAwareChooser._decide`)
#: :meth:`ServiceAwareChooser._hold` decides its job again, as a fraction of the
#: clock: far more than the rounding of that time (``submit + bound - T``), far
#: less than a second.
_EXPIRY_SLACK = 1e-12

#: A job's predicted grid as :meth:`ServiceAwareChooser._ask_grids` makes it:
#: ``(grid, t_ref, rel_req)``, ``grid`` as :class:`_ServiceEntry` holds it.
_Asked = tuple[tuple[Any, ...], float, bool]


class _ServiceEntry(_Entry):
    """A job's predicted grid and its rigid (top-clock) decision; the per-batch
    choice is made from them (:meth:`ServiceAwareChooser._current`)."""

    __slots__ = ("busy", "last", "top")

    def __init__(self, app: int, version: int, grid: Any, top: Decision) -> None:
        super().__init__(app, version, None, grid)
        self.top = top
        #: (cell, Decision) of the last lowered-clock pick
        self.last: tuple[int, Decision] | None = None
        #: busy-queue shrink candidates (``busy_rule = "shrink"``,
        #: :meth:`ServiceAwareChooser._shrink_candidates`). ``None``: not computed yet.
        self.busy: list[list[Any]] | None = None


class ServiceAwareChooser(PredictiveChooser):
    """Lowest-energy ``(n, f)`` within a predicted-BSLD bound, gated by the
    queue length and the utilisation (see the module docstring).

    Args:
        predictor: as for :class:`~policies.choosers.PredictiveChooser`.
        bsld_threshold: largest predicted bounded slowdown of a lowered
            configuration (``inf``: no bound).
        queue_threshold: lower clocks only while at most this many jobs wait
            for the job's node type, the job included (``None``: no gate).
        util_threshold: lower clocks only while busy nodes / nodes of the
            job's node type is below this (``None``: no gate).
        tau_s: the bound of the bounded slowdown (s).
        moldable: also choose the size among the candidate ``sizes``
            (default: the requested size, clocks only).
        plan_with: what the backfilling plans a decision with:
            ``"prediction"`` (default) the predicted runtime (as
            PredictiveChooser; EASY++'s reservations with the user-history job
            lengths; with request-based job lengths it loosened reservations:
            CTC-SP2's mean bounded slowdown 83 instead of 56); or ``"limit"``
            its time limit: the requested time, moved by the predicted
            slowdown of a lowered clock (at the top clock, rigid EASY's plan).
        max_stretch: largest predicted runtime of a lowered configuration
            relative to the top-clock runtime at the requested size (``inf``:
            no cap; see the module docstring).
        busy_rule: what a job gets while the gate is closed (the queue is
            long or the utilisation high): ``"rigid"`` (Etinski et al.: the
            requested size and top clock) or ``"shrink"`` (with ``moldable``:
            a smaller size at the top clock when it is predicted to use no
            more node-seconds and less energy, within ``bsld_threshold``; see
            the module docstring).
        max_shrink: with ``moldable``, no size below ``n_req / max_shrink``
            (``n_req``: the requested size), for the busy-queue shrink and the
            lowered-clock choice alike (``inf``: no bound; see "Shrink bound"
            in the module docstring).
        **params: the other parameters of PredictiveChooser (``sizes``,
            ``min_runs``, ``explore_runs``, ``safety_factor``, ...).
    """

    name = "service-aware"

    def __init__(
        self,
        predictor: Any = "adept+fluid",
        *,
        bsld_threshold: float = 2.0,
        queue_threshold: int | None = None,
        util_threshold: float | None = None,
        tau_s: float = BSLD_TAU_S,
        moldable: bool = False,
        plan_with: str = "prediction",
        max_stretch: float = 1.1,
        busy_rule: str = "rigid",
        max_shrink: float = math.inf,
        **params: Any,
    ) -> None:
        for key in ("size", "freq", "joint"):
            if key in params:
                raise ConfigError(key, "the service-aware chooser has its own rule")
        super().__init__(
            predictor=predictor,
            size="min-energy" if moldable else "rigid",
            freq="energy-optimal",
            **params,
        )
        if not bsld_threshold >= 1:
            raise ConfigError("bsld_threshold", f"must be >= 1 (or inf), got {bsld_threshold!r}")
        if queue_threshold is not None and not (
            isinstance(queue_threshold, (int, np.integer)) and queue_threshold >= 0
        ):
            raise ConfigError(
                "queue_threshold", f"must be an integer >= 0 or None, got {queue_threshold!r}"
            )
        if util_threshold is not None and not 0 <= util_threshold <= 1:
            raise ConfigError(
                "util_threshold", f"must be in [0, 1] or None, got {util_threshold!r}"
            )
        if plan_with not in PLAN_WITH:
            raise ConfigError(
                "plan_with", f"must be one of {', '.join(PLAN_WITH)}, got {plan_with!r}"
            )
        if not (tau_s > 0 and math.isfinite(tau_s)):
            raise ConfigError("tau_s", f"must be a finite number > 0, got {tau_s!r}")
        if not max_stretch >= 1:
            raise ConfigError("max_stretch", f"must be >= 1 (or inf), got {max_stretch!r}")
        if busy_rule not in BUSY_RULES:
            raise ConfigError(
                "busy_rule", f"must be one of {', '.join(BUSY_RULES)}, got {busy_rule!r}"
            )
        if not max_shrink >= 1:
            raise ConfigError("max_shrink", f"must be >= 1 (or inf), got {max_shrink!r}")
        if busy_rule == "shrink" and not moldable:
            raise ConfigError("busy_rule", "'shrink' chooses among sizes: it needs moldable = true")
        self.bsld_threshold = float(bsld_threshold)
        self.queue_threshold = None if queue_threshold is None else int(queue_threshold)
        self.util_threshold = None if util_threshold is None else float(util_threshold)
        self.tau_s = float(tau_s)
        self.moldable = bool(moldable)
        self.plan_with = plan_with
        self.max_stretch = float(max_stretch)
        self.busy_rule = busy_rule
        self.max_shrink = float(max_shrink)
        # the decision depends on the wait so far and the cluster: made per batch
        self.cacheable = False
        self.name = "bsld" if util_threshold is None else "util-bsld"
        self._lower_ok: list[bool] = []
        self._calibration_rigid: dict[int, Decision] = {}
        self._now_s = 0.0

    @property
    def shape_rules(self) -> bool:
        return False  # view-dependent: the general grid path caches the grids

    def setup(self, platform: Any, **context: Any) -> None:
        super().setup(platform, **context)
        self._calibration_rigid = {}
        self._lower_ok = []
        #: the grids asked since the predictor's last update, by question (_grids)
        self._grids_kept: dict[Any, _Asked | None] = {}
        self._grids_kept_at = -1
        # every queued job's decision as of the last prepare(), and when each may expire
        #: job index -> (decision, sequence number of its entry in _expiry)
        self._held: dict[int, tuple[Decision, int]] = {}
        #: heap of (until, sequence number, job): decide the job again once the clock
        #: reaches until (see _decide); an entry whose number is not the held one is stale
        self._expiry: list[tuple[float, int, QueuedJob]] = []
        self._seq = 0
        #: the jobs whose held decision the last prepare() changed (None: not known)
        self._moved: list[QueuedJob] | None = None
        #: decisions change with the wait and the gates: _hold moves the epoch
        self.decision_epoch = 0

    def params(self) -> dict[str, Any]:
        out = super().params()
        for key in ("size", "freq", "joint", "cores", "slack", "efficiency"):
            out.pop(key, None)
        for key in ("deadline_factor", "budget_factor"):  # rules this chooser does not use
            out.pop(key, None)
        out.update(
            bsld_threshold=self.bsld_threshold,
            queue_threshold=self.queue_threshold,
            util_threshold=self.util_threshold,
            tau_s=self.tau_s,
            moldable=self.moldable,
            plan_with=self.plan_with,
            max_stretch=self.max_stretch,
            busy_rule=self.busy_rule,
            max_shrink=self.max_shrink,
        )
        return out

    # ------------------------------------------------------------------ per batch
    def prepare(self, queue: Sequence[QueuedJob], view: ClusterView) -> None:
        super().prepare(queue, view)  # predicts the new jobs and the refitted ones
        self._now_s = view.now_s
        gates = self._lower_ok
        self._lower_ok = self.lowering_allowed(queue, view)
        decided = self._changed
        self._moved = None
        if decided is None:  # nothing decided (no free node): decisions() computes
            return
        self._moved = self._hold(queue, decided, gates)

    def _hold(
        self, queue: Sequence[QueuedJob], decided: list[QueuedJob], gates: list[bool]
    ) -> list[QueuedJob]:
        """Bring every queued job's held decision (:attr:`_held`) to what
        :meth:`_current` answers now, deciding again only the jobs whose answer
        may have moved since the previous :meth:`prepare`: ``decided`` (new jobs
        and jobs of refitted applications), every job of a node type whose gate
        (:meth:`lowering_allowed`; ``gates``: the previous batch's) flipped, and
        the jobs whose answer was due to expire (:attr:`_expiry`: a decision
        holds, gate and prediction unchanged, until its ``until`` time, see
        :meth:`_decide`). Returns the jobs whose held decision is another object
        now (:meth:`changed_decisions`); a change to a job held before moves
        :attr:`decision_epoch`."""
        held = self._held
        now = self._now_s
        recheck = {job.index: job for job in decided}
        gates_now = self._lower_ok
        if gates != gates_now:
            flipped = [a != b for a, b in zip(gates, gates_now)] or [True] * len(gates_now)
            for job in queue:
                if flipped[job.node_type]:
                    recheck[job.index] = job
        expiry = self._expiry
        while expiry and expiry[0][0] <= now + _EXPIRY_SLACK * max(1.0, abs(now)):
            _, seq, job = heapq.heappop(expiry)
            got = held.get(job.index)
            if got is not None and got[1] == seq:  # (else started, or decided again since)
                recheck[job.index] = job
        moved: list[QueuedJob] = []
        changed_held = False
        for job in recheck.values():
            decision, until = self._decide(job)
            old = held.get(job.index)
            self._seq += 1
            held[job.index] = (decision, self._seq)
            if until != math.inf:
                heapq.heappush(expiry, (until, self._seq, job))
            if old is None or old[0] is not decision:
                moved.append(job)
                changed_held = changed_held or old is not None
        if changed_held and self.decision_epoch is not None:
            self.decision_epoch += 1
        return moved

    def lowering_allowed(self, queue: Sequence[QueuedJob], view: ClusterView) -> list[bool]:
        """Per node type: whether a clock below the top is allowed in this batch
        (queue-length and utilisation gates)."""
        types = self._types
        ok = [True] * len(types)
        if self.queue_threshold is not None:
            if len(types) == 1:
                waiting = [len(queue)]
            else:
                waiting = [0] * len(types)
                for job in queue:
                    waiting[job.node_type] += 1
            ok = [a and w <= self.queue_threshold for a, w in zip(ok, waiting)]
        if self.util_threshold is not None:
            busy = [t.count - f for t, f in zip(types, view.free_nodes)]
            ok = [a and b < self.util_threshold * t.count for a, b, t in zip(ok, busy, types)]
        return ok

    def decisions(self, jobs: Sequence[QueuedJob]) -> list[Decision] | None:
        if type(self).choose is not ServiceAwareChooser.choose:
            return None
        if self._moved is not None:  # prepare() brought every queued job's decision up
            held = self._held
            try:
                return [held[j.index][0] for j in jobs]
            except KeyError:  # a job prepare() did not see
                pass
        current = self._current
        return [current(j) for j in jobs]

    def changed_decisions(self) -> Sequence[QueuedJob] | None:
        if not self._decides_as(ServiceAwareChooser):
            return None
        return self._moved

    def choose(self, job: QueuedJob, view: ClusterView) -> Decision:
        return self._current(job)

    def started(self, decisions: Sequence[Decision]) -> None:
        super().started(decisions)
        held = self._held
        for d in decisions:
            held.pop(d.job.index, None)
        if self._calibration_rigid:
            for d in decisions:
                if self._calibration_rigid.get(d.job.index) is d:
                    # started rigid instead of as a calibration run: a later job may make it
                    del self._calibration_rigid[d.job.index]
                    self._explored[d.job.application] -= 1

    def _current(self, job: QueuedJob) -> Decision:
        return self._decide(job)[0]

    def _decide(self, job: QueuedJob) -> tuple[Decision, float]:
        """The job's decision now, and until when it holds while its node type's gate
        and its prediction stay as they are (``inf``: as long as they do). The wait
        only grows, so a lowered configuration stays allowed until ``submit +
        bsld_threshold * max(T_top, tau) - T`` and a shrink candidate until its
        bound; that time is rounded, and :meth:`_hold` decides the job again a
        little before it (:data:`_EXPIRY_SLACK`)."""
        e = job.scratch
        if (
            e is None
            or (e.__class__ is not _ServiceEntry and e.__class__ is not _Entry)
            or e.version != self._version.get(e.app, 0)
        ):
            self._predict_jobs([job])
            e = job.scratch
        if e.__class__ is _Entry:  # rigid fallback or calibration run
            if e.grid == "explore" and not self._lower_ok[job.node_type]:
                return self._rigid_for_calibration(job), math.inf
            # such entries always hold a decision (mypy cannot know; no check on this hot path)
            return e.decision, math.inf  # type: ignore[return-value]
        if not self._lower_ok[job.node_type]:
            return (e.top, math.inf) if self.busy_rule == "rigid" else self._shrunk(job, e)
        sizes, T, E, P, prefer, n_freqs, freqs = e.grid
        wait = self._now_s - job.submit_s
        top_runtime_s = e.top.predicted_runtime_s
        bound_s = self.bsld_threshold * max(top_runtime_s, self.tau_s)
        limit = min(bound_s - wait, self.max_stretch * top_runtime_s)
        last = e.last
        # the wait only grows: the allowed set only shrinks, so the last pick
        # stays the minimum while it is still allowed
        if last is not None and T[last[0]] <= limit:
            return last[1], job.submit_s + (bound_s - float(T[last[0]]))
        cell = _argmin_one(np.where(T <= limit, E, np.inf), prefer)
        if not T[cell] <= limit:  # nothing allowed, now or later
            return e.top, math.inf
        until = job.submit_s + (bound_s - float(T[cell]))
        if cell == prefer:
            return e.top, until
        k, f = divmod(cell, n_freqs)
        n = int(sizes[k])
        d = self._decision(
            job, n, float(freqs[f]), None, T[cell], E[cell], P[cell], e.top.predicted_runtime_s
        )
        e.last = (cell, d)
        return d, until

    def _shrunk(self, job: QueuedJob, e: _ServiceEntry) -> tuple[Decision, float]:
        """The busy-queue pick of ``busy_rule = "shrink"``: the lowest-energy
        smaller size at the top clock whose predicted node-seconds do not exceed
        the requested size's and whose predicted bounded slowdown, counting the
        wait so far, stays under ``bsld_threshold``; else the rigid decision.
        With the time until which it holds (as :meth:`_decide`)."""
        busy = e.busy
        if busy is None:
            busy = e.busy = self._shrink_candidates(job, e)
        now_s = self._now_s
        # by increasing energy; a candidate whose bound has passed never returns
        # (the wait only grows), so it is dropped for good
        while busy and busy[0][0] < now_s:
            del busy[0]
        if not busy:
            return e.top, math.inf
        candidate = busy[0]
        if candidate[2] is None:
            sizes, T, E, P, _prefer, n_freqs, freqs = e.grid
            cell = candidate[1]
            top_runtime_s = e.top.predicted_runtime_s
            assert top_runtime_s is not None  # e.top was made by _decision, with a runtime
            candidate[2] = self._decision(
                job,
                int(sizes[cell // n_freqs]),
                float(freqs[-1]),
                None,
                T[cell],
                E[cell],
                P[cell],
                top_runtime_s,
            )
        return candidate[2], candidate[0]

    def _shrink_candidates(self, job: QueuedJob, e: _ServiceEntry) -> list[list[Any]]:
        """``[valid_until_s, cell, None]`` per top-clock cell of a smaller size whose
        predicted node-seconds are at most the requested size's and whose predicted
        energy is lower (beyond the tie tolerance), by increasing energy.
        ``valid_until_s``: the last moment its predicted bounded slowdown, counting
        the wait, stays under the threshold: ``T <= bsld_threshold * max(T_top,
        tau) - (now - submit)`` while ``now <= submit + bsld_threshold * max(T_top,
        tau) - T``."""
        sizes, T, E, _P, prefer, n_freqs, _freqs = e.grid
        rigid_node_s = float(sizes[prefer // n_freqs]) * T[prefer]
        rigid_energy = E[prefer] * (1.0 - TIE_RTOL)
        at_top = np.arange(n_freqs - 1, len(sizes) * n_freqs, n_freqs)  # each size's top clock
        kept = (sizes.astype(np.float64) * T[at_top] <= rigid_node_s) & (E[at_top] < rigid_energy)
        kept &= at_top != prefer
        found = at_top[kept]
        cells = found[np.lexsort((found, E[found]))].tolist()  # by energy, then cell
        top_runtime_s = e.top.predicted_runtime_s
        assert top_runtime_s is not None  # e.top was made by _decision, with a runtime
        bound_s = self.bsld_threshold * max(top_runtime_s, self.tau_s)
        return [[job.submit_s + (bound_s - float(T[c])), c, None] for c in cells]

    def _rigid_for_calibration(self, job: QueuedJob) -> Decision:
        """The rigid decision of a job due for a calibration run (lowest clock)
        while clocks may not be lowered: a calibration run is a lowered clock
        too, so it waits for a short queue (or a later job of its application
        makes it, see :meth:`started`). Planned, like every rigid decision,
        with the job-length prediction (the request without one), which is
        also its predicted runtime."""
        d = self._calibration_rigid.get(job.index)
        if d is None:
            ti = self._types[job.node_type]
            d = rigid_decision(job, ti.fmax, min(job.requested_nodes, ti.count))
            self._calibration_rigid[job.index] = d
        return d

    # ------------------------------------------------------------------ predictions
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
        d = super()._decision(job, n, f, cores, t, e, p, t_ref)
        if d.time_limit_s is not None:
            d.time_limit_s = max(d.time_limit_s, self._worst_case_limit_s(job, d))
        if self.plan_with == "limit" and d.time_limit_s is not None:
            d.planned_runtime_s = d.time_limit_s
        return d

    def _worst_case_limit_s(self, job: QueuedJob, d: Decision) -> float:
        """The user's limit ``R`` moved to ``(n, f)`` by the worst case of every model
        whose speedup does not fall with more nodes and whose runtime grows at most
        like ``Fmax / f``: ``R * max(1, n_req / n) * Fmax / f``.

        A mispredicted job then runs as long at its new configuration as it could
        have at the one it asked for: the policy kills no job the rigid schedule
        would have let finish (a prediction only plans; it never cuts a run short).
        """
        limit = job.requested_time_s
        if not limit == limit or limit <= 0:  # no request: no limit to move
            return 0.0
        ntype = self.platform.node_types[d.node_type]
        n_req = min(job.requested_nodes, ntype.count)
        return limit * max(1.0, n_req / d.nodes) * (ntype.fmax_ghz / d.freq_ghz)

    def _choose_size_freq(self, jobs: list[QueuedJob]) -> list[QueuedJob]:
        """Cache each job's predicted size x P-state grid and its rigid decision;
        returns the jobs to run rigid (no finite prediction at the rigid
        configuration, or an unreliable one under ``require_reliable``). A job
        may become a calibration run instead (see PredictiveChooser)."""
        types = self._types
        explore = self.explore_runs > 0 and not self.static
        version = self._version
        fallback: list[QueuedJob] = []
        for job, asked in zip(jobs, self._grids(jobs)):
            if asked is None:  # no finite prediction at the rigid configuration
                fallback.append(job)
                continue
            grid, t_ref, rel_req = asked
            if self.require_reliable and not rel_req:
                fallback.append(job)
                continue
            if explore and not rel_req and self._wants_exploration(job):
                self._explore(job)
                continue
            sizes, _T, E, P, prefer, nf, _freqs = grid
            n_req = int(sizes[prefer // nf])
            fmax = types[job.node_type].fmax
            top_d = self._decision(job, n_req, fmax, None, t_ref, E[prefer], P[prefer], t_ref)
            job.scratch = _ServiceEntry(
                job.application, version.get(job.application, 0), grid, top_d
            )
        return fallback

    def _grids(self, jobs: list[QueuedJob]) -> list[_Asked | None]:
        """Per job, its predicted grid as :meth:`_ask_grids` makes it; a job asking
        the same question as an earlier one since the predictor's last update
        (application, node type, requested nodes, length) gets that job's grid
        without asking the predictor: a predictor answers a question the same way
        between two updates (:attr:`~policies.choosers.PredictiveChooser.reuse_without_asking`;
        not for a predictor whose answers depend on the job itself, the oracle).
        About 44 % of the questions of the SDSC-SP2 replay repeat one."""
        if not self.reuse_without_asking or self._shape_per_job:
            return self._ask_grids(jobs)
        kept = self._grids_kept
        if self._grids_kept_at != self._predictor_updates:
            kept.clear()  # the predictor was updated: its answers may differ
            self._grids_kept_at = self._predictor_updates
        keys = [(j.application, j.node_type, j.requested_nodes, _length_input(j)) for j in jobs]
        asking: dict[Any, QueuedJob] = {}
        for key, job in zip(keys, jobs):
            if key not in kept and key not in asking:
                asking[key] = job
        if asking:
            kept.update(zip(asking, self._ask_grids(list(asking.values()))))
        return [kept[key] for key in keys]

    def _ask_grids(self, jobs: list[QueuedJob]) -> list[_Asked | None]:
        """Ask the predictor each job's grid over the candidate sizes (the requested
        size only unless ``moldable``; none below ``n_req / max_shrink``) x its
        node type's P-states, in one call: per job ``(grid, t_ref, rel_req)``
        (see :class:`_ServiceEntry`; ``t_ref``: the predicted runtime at the
        requested size and top clock, ``rel_req``: whether that prediction is
        reliable), or ``None`` when that prediction is not finite and positive.
        The grid's arrays are read-only: jobs asking the same question share them."""
        types = self._types
        B = len(jobs)
        if self.moldable:
            sizes, valid, req_col = self._size_grid(jobs)
        else:
            sizes = np.fromiter(
                (min(j.requested_nodes, types[j.node_type].count) for j in jobs), np.int64, B
            )[:, None]
            valid = np.ones((B, 1), dtype=bool)
            req_col = np.zeros(B, dtype=np.int64)
        freqs, fvalid = self._freq_grid(jobs)
        got = self._predict_grid(jobs, sizes, valid, freqs, fvalid)
        if got is None:
            got = self._predict_flat(jobs, sizes, valid, freqs, fvalid)
        T3, P3, E3, R3 = got
        shrink_bounded = self.moldable and math.isfinite(self.max_shrink)
        out: list[_Asked | None] = []
        for k, job in enumerate(jobs):
            ti = types[job.node_type]
            nk = int(valid[k].sum())
            nf = len(ti.freqs)
            top = nf - 1
            req = int(req_col[k])
            T = T3[k, :nk, :nf]
            E = E3[k, :nk, :nf]
            P = P3[k, :nk, :nf]
            ok = np.isfinite(T) & (T > 0) & np.isfinite(E) & (E > 0)
            if shrink_bounded:
                # no size below n_req / max_shrink (the requested size always passes)
                ok &= (sizes[k, :nk] * self.max_shrink >= sizes[k, req])[:, None]
            if not ok[req, top]:
                out.append(None)
                continue
            t_ref = float(T[req, top])
            rel_req = bool(R3[k, req, top])
            grid = (
                _read_only(sizes[k, :nk].copy()),
                _read_only(np.where(ok, T, np.inf).ravel()),
                _read_only(np.where(ok, E, np.inf).ravel()),
                _read_only(P.ravel().copy()),
                req * nf + top,
                nf,
                ti.freqs,
            )
            out.append((grid, t_ref, rel_req))
        return out
