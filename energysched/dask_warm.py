"""A Dask worker plugin that imports the run stack once per worker, when the worker joins.

Imported only by :class:`energysched.sweep.DaskExecutor` (it needs ``distributed``).
Without it each Dask worker imports the stack inside its first run.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin


class WarmWorker(WorkerPlugin):
    """Runs :func:`energysched.sweep.warm_worker` on every worker, present and future."""

    name = "energysched-warm-worker"

    def setup(self, worker: Any) -> None:
        from energysched.sweep import warm_worker

        warm_worker()
