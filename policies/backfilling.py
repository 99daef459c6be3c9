"""Queue-based policies: an ordering, a backfilling scheme and a chooser.

:class:`QueuePolicy` walks the ordered queue once per batch. Each node type
is an independent partition (a job is queued for one node type, see
:class:`~policies.base.QueuedJob`).

FCFS (``backfill="none"``)
    Start jobs in queue order while they fit; the first job that does not
    fit blocks every job behind it on its partition.

EASY backfilling (``backfill="easy"``), the exact semantics
    (Lifka 1995; Mu'alem & Feitelson 2001):

    1. Start jobs in queue order while they fit in the free nodes.
    2. The first job that does not fit (the *head*) gets a reservation: walk
       the running jobs (including those started in step 1) in order of
       planned end (``expected_end_s``; a job past its planned end counts as
       ending now), adding their nodes to the free ones until the head fits.
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
    Jobs that overrun their plan are not "re-planned"; they count as ending
    now, so the shadow time never lies in the past.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from energysched.errors import ConfigError
from policies.base import ClusterView, Decision, Policy, RunningJob
from policies.choosers import Chooser, RigidChooser
from policies.ordering import ORDERINGS, Ordering, fcfs

BACKFILL_MODES = ("none", "easy")


def reservation(
    running: Sequence[RunningJob],
    started: Sequence[tuple[float, int]],
    free_now: int,
    needed: int,
    now: float,
) -> tuple[float, int]:
    """Shadow time and extra nodes for a head job needing ``needed`` nodes.

    ``running`` is sorted by ``expected_end_s``; ``started`` holds
    ``(planned_end, nodes)`` of jobs started earlier in this batch.
    Returns ``(inf, 0)`` when the running jobs never free enough nodes.
    """
    avail = free_now
    if started:
        merged = sorted(
            [(r.expected_end_s, r.nodes) for r in running] + list(started), key=lambda e: e[0]
        )
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


class QueuePolicy(Policy):
    """Ordering + backfilling scheme + chooser.

    Args:
        backfill: ``"none"`` (FCFS) or ``"easy"``.
        order: an ordering function or the name of one in :data:`policies.ordering.ORDERINGS`.
        chooser: decides ``(n, f)`` per job (default :class:`RigidChooser`).
        name: registry/report name.
    """

    def __init__(
        self,
        backfill: str = "easy",
        order: str | Ordering = "fcfs",
        chooser: Chooser | None = None,
        name: str | None = None,
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
        self.backfill = backfill
        self.chooser = chooser if chooser is not None else RigidChooser()
        self.name = name or ("fcfs" if backfill == "none" else "easy")
        self.learns = bool(getattr(self.chooser, "learns", False))

    def setup(self, platform: Any, rng: np.random.Generator | None = None, **context: Any) -> None:
        super().setup(platform, rng, **context)
        self.chooser.setup(platform, rng=rng, **context)
        self._cacheable = bool(self.chooser.cacheable)

    def observe(self, runs: Any) -> None:
        observe = getattr(self.chooser, "observe", None)
        if observe is not None:
            observe(runs)

    def params(self) -> dict[str, Any]:
        return {
            "backfill": self.backfill,
            "order": self.order_name,
            "chooser": self.chooser.name,
            **self.chooser.params(),
        }

    def schedule(self, view: ClusterView) -> list[Decision]:
        queue = self.order(view.queue, view) if self.order is not fcfs else view.queue
        free = list(view.free_nodes)
        now = view.now_s
        n_types = len(free)
        decisions: list[Decision] = []
        started: list[list[tuple[float, int]]] = [[] for _ in range(n_types)]
        # per type: None = not blocked; [shadow, extra] = EASY reservation; False = FCFS-blocked
        blocked: list[Any] = [None] * n_types
        n_blocked = 0
        easy = self.backfill == "easy"
        choose = self.chooser.choose
        cacheable = self._cacheable
        for job in queue:
            t = job.node_type
            b = blocked[t]
            if b is False or (b is not None and free[t] == 0):
                if n_blocked == n_types and not any(free):
                    break
                continue
            if cacheable:
                d = job.scratch
                if d is None or d.__class__ is not Decision:
                    d = job.scratch = choose(job, view)
            else:
                d = choose(job, view)
            n = d.nodes
            planned = d.planned_runtime_s if d.planned_runtime_s is not None else job.estimate_s
            if b is None:
                if n <= free[t]:
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
                shadow, extra = reservation(view.running[t], started[t], free[t], n, now)
                blocked[t] = [shadow, extra]
                continue
            if n > free[t]:
                continue
            if now + planned <= b[0]:
                decisions.append(d)
                free[t] -= n
            elif n <= b[1]:
                decisions.append(d)
                free[t] -= n
                b[1] -= n
        return decisions


def fcfs_policy(**kwargs: Any) -> QueuePolicy:
    """Rigid first-come-first-served without backfilling."""
    return QueuePolicy(backfill="none", name="fcfs", **kwargs)


def easy_policy(**kwargs: Any) -> QueuePolicy:
    """Rigid EASY backfilling."""
    return QueuePolicy(backfill="easy", name="easy", **kwargs)
