"""Choosers: decide a queued job's configuration ``(node type, n, c, f)``.

A chooser is asked for a job's configuration when the backfilling scheme
considers the job; it returns a :class:`~policies.base.Decision` that the
scheme starts if it fits. :class:`RigidChooser` is the trace's own choice:
the requested node count on the job's node type, all cores, the top
frequency, planned with the job's ``estimate_s`` (requested time).
"""

from __future__ import annotations

from typing import Any

from policies.base import ClusterView, Decision, QueuedJob


class Chooser:
    """Base class: ``choose(job, view) -> Decision``.

    ``cacheable`` = True means the decision of a job does not depend on the
    cluster state, so schemes may compute it once and keep it in ``job.scratch``.
    """

    name = "chooser"
    cacheable = True

    def setup(self, platform: Any, **context: Any) -> None:
        self.platform = platform

    def choose(self, job: QueuedJob, view: ClusterView) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        return {}


class RigidChooser(Chooser):
    """Requested nodes, all cores, top frequency, requested time."""

    name = "rigid"

    def setup(self, platform: Any, **context: Any) -> None:
        super().setup(platform, **context)
        self._fmax = [t.fmax_ghz for t in platform.node_types]

    def choose(self, job: QueuedJob, view: ClusterView) -> Decision:
        return Decision(
            job, job.requested_nodes, self._fmax[job.node_type], job.node_type, None, job.estimate_s
        )
