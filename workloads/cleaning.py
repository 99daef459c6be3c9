"""Clean a trace before replay: drop jobs that cannot be replayed, sort by submit time.

:func:`clean_trace` never drops a job silently: every dropped job is counted
under exactly one reason in the returned :class:`CleaningReport` (and the
summary is logged). Reasons are checked in this order and a job is counted
under the **first** one that applies:

``missing_submit``
    ``submit_s`` unknown (``-1`` in the file).
``negative_submit``
    ``submit_s < 0``.
``missing_runtime``
    ``runtime_s`` unknown (mostly jobs cancelled before they started).
``zero_runtime``
    ``runtime_s == 0`` (only with ``drop_zero_runtime=True``, the default).
``missing_procs``
    both ``procs_alloc`` and ``procs_req`` unknown.
``zero_procs``
    the job's processor count (below) is 0.
``too_large``
    the job's processor count exceeds the machine: ``max_procs`` if given,
    else the header's ``MaxProcs`` (falling back to ``MaxNodes``, see
    :attr:`Trace.max_procs`). Without either, no job is dropped for size.

**The job's size.** The replay uses what a job really ran on: ``procs =
procs_alloc`` when it is known, ``procs_req`` otherwise (CTC-SP2, for
example, has no requested processors; a job cancelled before it started may
have only a request). The cleaned jobs table gets an ``int64`` column
``procs`` (processors) with that value. ``time_req_s`` (the user's runtime
estimate, s) is kept as it is, ``NaN`` when unknown (Lublin traces have none).

The kept jobs are sorted by ``submit_s`` with a stable sort (ties keep file
order) and re-indexed from 0. The header is kept unchanged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from workloads.schema import Trace

__all__ = ["DROP_REASONS", "CleaningReport", "clean_trace", "job_procs"]

logger = logging.getLogger(__name__)

#: Drop reasons, in the order they are checked.
DROP_REASONS: tuple[str, ...] = (
    "missing_submit",
    "negative_submit",
    "missing_runtime",
    "zero_runtime",
    "missing_procs",
    "zero_procs",
    "too_large",
)

_DESCRIPTIONS = {
    "missing_submit": "submit time unknown",
    "negative_submit": "negative submit time",
    "missing_runtime": "runtime unknown",
    "zero_runtime": "runtime 0 s",
    "missing_procs": "allocated and requested processors unknown",
    "zero_procs": "0 processors",
    "too_large": "more processors than the machine",
}


def job_procs(jobs: pd.DataFrame) -> pd.Series:
    """The processor count each job ran on: ``procs_alloc``, else ``procs_req``.

    Returns a nullable ``Int64`` series (``<NA>`` when both are unknown).
    """
    alloc = jobs["procs_alloc"].astype("Int64")
    req = jobs["procs_req"].astype("Int64")
    return alloc.fillna(req)


@dataclass
class CleaningReport:
    """What :func:`clean_trace` did.

    Attributes:
        jobs_in: jobs before cleaning.
        jobs_out: jobs kept.
        dropped: jobs dropped per reason (every reason of :data:`DROP_REASONS`,
            0 when none); each dropped job is counted once, under the first
            reason that applies.
        max_procs: the machine size (processors) used for ``too_large``, or
            ``None`` when unknown.
        reordered: whether sorting by submit time changed the job order.
        name: the trace's name.
    """

    jobs_in: int
    jobs_out: int
    dropped: dict[str, int] = field(default_factory=dict)
    max_procs: int | None = None
    reordered: bool = False
    name: str = "trace"

    @property
    def jobs_dropped(self) -> int:
        """Total number of dropped jobs."""
        return sum(self.dropped.values())

    def summary(self) -> str:
        """A few lines of text: kept/dropped totals and the count per reason."""
        share = 100.0 * self.jobs_dropped / self.jobs_in if self.jobs_in else 0.0
        lines = [
            f"cleaning {self.name}: kept {self.jobs_out} of {self.jobs_in} jobs, "
            f"dropped {self.jobs_dropped} ({share:.1f}%)"
        ]
        for reason in DROP_REASONS:
            count = self.dropped.get(reason, 0)
            if count:
                lines.append(f"  {reason:<16} {count:>8}  ({_DESCRIPTIONS[reason]})")
        machine = f"{self.max_procs} processors" if self.max_procs is not None else "unknown"
        lines.append(f"  machine size used for too_large: {machine}")
        if self.reordered:
            lines.append("  jobs re-sorted by submit time")
        return "\n".join(lines)


def clean_trace(
    trace: Trace,
    *,
    max_procs: int | None = None,
    drop_zero_runtime: bool = True,
    sort: bool = True,
) -> tuple[Trace, CleaningReport]:
    """Drop jobs that cannot be replayed and sort the rest by submit time.

    Args:
        trace: the trace to clean (not modified).
        max_procs: machine size in processors; overrides the header's
            ``MaxProcs``/``MaxNodes``.
        drop_zero_runtime: drop jobs with ``runtime_s == 0``.
        sort: sort the kept jobs by ``submit_s`` (stable).

    Returns:
        ``(cleaned trace, report)``. The cleaned jobs table has an extra
        ``int64`` column ``procs`` (see the module docs).
    """
    jobs = trace.jobs
    n = len(jobs)
    limit = max_procs if max_procs is not None else trace.max_procs
    if limit is not None and limit < 1:
        raise ValueError(f"max_procs must be >= 1, got {limit}")

    submit = jobs["submit_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    runtime = jobs["runtime_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    procs = job_procs(jobs)
    procs_f = procs.to_numpy(dtype=np.float64, na_value=np.nan)

    conditions: dict[str, np.ndarray] = {
        "missing_submit": np.isnan(submit),
        "negative_submit": submit < 0,
        "missing_runtime": np.isnan(runtime),
        "zero_runtime": (runtime == 0) if drop_zero_runtime else np.zeros(n, dtype=bool),
        "missing_procs": np.isnan(procs_f),
        "zero_procs": procs_f == 0,
        "too_large": procs_f > limit if limit is not None else np.zeros(n, dtype=bool),
    }
    remaining = np.ones(n, dtype=bool)
    dropped: dict[str, int] = {}
    for reason in DROP_REASONS:
        hit = conditions[reason] & remaining
        dropped[reason] = int(hit.sum())
        remaining &= ~hit

    # assign() returns a new frame (copy-on-write in pandas 3: the kept columns are
    # not copied); rows are taken only when some are dropped or out of order
    kept = (jobs if remaining.all() else jobs.loc[remaining]).assign(
        procs=procs_f[remaining].astype(np.int64)
    )
    reordered = False
    if sort and len(kept) > 1:
        order = np.argsort(kept["submit_s"].to_numpy(dtype=np.float64), kind="stable")
        reordered = bool((order != np.arange(len(order))).any())
        if reordered:
            kept = kept.iloc[order]
    kept = kept.reset_index(drop=True)

    cleaned = trace.copy()
    cleaned.jobs = kept
    report = CleaningReport(
        jobs_in=n,
        jobs_out=len(kept),
        dropped=dropped,
        max_procs=int(limit) if limit is not None else None,
        reordered=reordered,
        name=trace.name,
    )
    if limit is None:
        logger.info("%s: machine size unknown, no job dropped as too large", trace.name)
    logger.info("%s", report.summary())
    return cleaned, report
