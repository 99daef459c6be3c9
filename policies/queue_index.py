"""An index of a long queue for EASY backfilling: find the next job that may be
backfilled without walking the whole queue.

EASY backfilling (:mod:`policies.backfilling`) scans the queue behind the head
for the first job that fits the free nodes now and either ends by the shadow
time or fits in the extra nodes. In the FCFS order the test is a question
about two numbers per job, its decision's node count and planned length
(fixed while a rigid job waits; a predictor-driven decision changes when its
application is refitted, and the index is told, :meth:`QueueIndex.replace`):

    the first job (in queue order, after position ``k``) with
    ``n <= free`` and (``now + length <= shadow`` or ``n <= extra``).

:class:`QueueIndex` keeps the waiting jobs of one partition in queue order,
cut into blocks of :data:`BLOCK` jobs. Each block keeps the smallest node count
of its jobs and, for every node count ``c``, the shortest planned length among
its jobs needing at most ``c`` nodes (a prefix minimum over node counts). A
block can then only hold a backfill candidate when its smallest node count is
at most ``min(free, extra)`` or its shortest length among jobs of at most
``free`` nodes ends by the shadow time; the blocks are tested together (numpy)
and only a candidate block is scanned job by job, with the exact test of the
plain scan. A batch therefore costs a few vector operations over the blocks
instead of a Python loop over the queue.

A block's summary may be stale after a job in it starts (it then claims a
candidate that is gone): the job-by-job scan finds nothing, the block's
summary is recomputed and the search goes on, so a summary is refreshed at
most once per started job. Jobs are only appended (new submits) and removed
(started), as the engine does to its queue, or replaced where they stand
(a new decision).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

#: jobs per block: the job-by-job scan of a candidate block is vectorised over this many
BLOCK = 64
#: the node count of a job that left the index (never fits)
GONE = int(np.iinfo(np.int64).max // 4)


class QueueIndex:
    """Waiting jobs of one partition in queue order, with block summaries.

    Args:
        jobs: the waiting jobs in queue order.
        nodes_of: a job's node count (read when it is added or replaced).
        length_of: a job's planned length in seconds (read then too).
        max_nodes: nodes of the partition (a job needing more never fits).

    Keys are positions in the index (0 for the first job ever added); a job
    keeps its key until it leaves.
    """

    def __init__(
        self,
        jobs: Sequence[Any],
        nodes_of: Callable[[Any], int],
        length_of: Callable[[Any], float],
        max_nodes: int,
    ) -> None:
        self.nodes_of = nodes_of
        self.length_of = length_of
        self.max_nodes = int(max_nodes)
        capacity = max(4 * BLOCK, len(jobs) + len(jobs) // 4)
        capacity += -capacity % BLOCK
        self.jobs: list[Any] = []
        # the same numbers as Python lists, for the job-by-job scan
        self.nodes_list: list[int] = []
        self.lengths_list: list[float] = []
        self.nodes = np.full(capacity, GONE, dtype=np.int64)
        self.lengths = np.full(capacity, math.inf, dtype=np.float64)
        n_blocks = capacity // BLOCK
        self.block_min_nodes = np.full(n_blocks, GONE, dtype=np.int64)
        #: block_min_length[b, c]: the shortest length among block b's jobs of <= c nodes,
        #: for c up to the largest node count indexed so far (``top``; the prefix
        #: minimum is flat beyond it)
        self.top = 1
        self.block_min_length = np.full((n_blocks, self.top + 1), math.inf)
        self.first = 0  # key of the first waiting job (len(jobs) when none waits)
        self.last = -1  # key of the last waiting job (-1 when none waits)
        self.waiting = 0
        self.append(jobs)

    # ------------------------------------------------------------------ updates
    def append(self, jobs: Sequence[Any]) -> None:
        """Add jobs at the end of the queue."""
        if not jobs:
            return
        start = len(self.jobs)
        end = start + len(jobs)
        if end > len(self.nodes):
            self._grow(end)
        self.jobs.extend(jobs)
        nodes_of, length_of = self.nodes_of, self.length_of
        nodes = [int(nodes_of(j)) for j in jobs]
        lengths = [float(length_of(j)) for j in jobs]
        self.nodes[start:end] = nodes
        self.lengths[start:end] = lengths
        self.nodes_list.extend(nodes)
        self.lengths_list.extend(lengths)
        self._widen(max(nodes))
        if self.waiting == 0:
            self.first = start
        for b in range(start // BLOCK, (end - 1) // BLOCK + 1):
            self._summarise(b)
        self.waiting += len(jobs)
        self.last = end - 1

    def replace(self, changes: Iterable[tuple[int, Any]]) -> None:
        """Waiting jobs whose node count or planned length changed: each ``(key,
        job)`` puts ``job`` (the same job, or what stands for it, e.g. its new
        decision) at ``key``, its two numbers read again; the summaries of their
        blocks are recomputed at once (a summary that claims too little would hide
        a candidate)."""
        nodes_of, length_of = self.nodes_of, self.length_of
        blocks: set[int] = set()
        largest = 0
        for key, job in changes:
            n = int(nodes_of(job))
            length = float(length_of(job))
            self.jobs[key] = job
            self.nodes[key] = n
            self.nodes_list[key] = n
            self.lengths[key] = length
            self.lengths_list[key] = length
            largest = max(largest, n)
            blocks.add(key // BLOCK)
        self._widen(largest)
        for b in blocks:
            self._summarise(b)

    def _widen(self, largest: int) -> None:
        """Columns of the length summaries up to ``largest`` nodes (capped at the
        partition): the prefix minimum is flat beyond the old top, so the new
        columns repeat the last one."""
        top = min(largest, self.max_nodes)
        if top > self.top:
            table = self.block_min_length
            more = np.repeat(table[:, -1:], top - self.top, axis=1)
            self.block_min_length = np.concatenate([table, more], axis=1)
            self.top = top

    def _grow(self, size: int) -> None:
        capacity = max(size, 2 * len(self.nodes))
        capacity += -capacity % BLOCK
        extra = capacity - len(self.nodes)
        self.nodes = np.concatenate([self.nodes, np.full(extra, GONE, dtype=np.int64)])
        self.lengths = np.concatenate([self.lengths, np.full(extra, math.inf)])
        more = extra // BLOCK
        self.block_min_nodes = np.concatenate(
            [self.block_min_nodes, np.full(more, GONE, dtype=np.int64)]
        )
        self.block_min_length = np.concatenate(
            [self.block_min_length, np.full((more, self.top + 1), math.inf)]
        )

    def remove(self, key: int, resummarise: bool = False) -> None:
        """The job at ``key`` left the queue (its block's summary goes stale,
        unless ``resummarise``: then it is recomputed)."""
        self.nodes[key] = GONE
        self.nodes_list[key] = GONE
        self.jobs[key] = None
        self.waiting -= 1
        jobs = self.jobs
        if key == self.first:
            k = key + 1
            while k < len(jobs) and jobs[k] is None:
                k += 1
            self.first = k
        if key == self.last:
            k = key - 1
            while k >= self.first and jobs[k] is None:
                k -= 1
            self.last = k if self.waiting else -1
        if resummarise:
            self._summarise(key // BLOCK)

    def _summarise(self, b: int) -> None:
        lo = b * BLOCK
        nodes = self.nodes[lo : lo + BLOCK]
        keep = nodes <= self.top
        row = self.block_min_length[b]
        row.fill(math.inf)
        if keep.any():
            nodes = nodes[keep]
            # fmin: a NaN length (which no test passes) hides no other job's length
            np.fmin.at(row, nodes, self.lengths[lo : lo + BLOCK][keep])
            np.fmin.accumulate(row, out=row)
            self.block_min_nodes[b] = nodes.min()
        else:
            self.block_min_nodes[b] = GONE

    # ------------------------------------------------------------------ queries
    def waiting_jobs(self) -> list[Any]:
        """The waiting jobs in queue order (for checks)."""
        return [j for j in self.jobs[self.first :] if j is not None]

    def next_waiting(self, key: int) -> int:
        """The first waiting job's key at or after ``key`` (``len(jobs)``: none)."""
        jobs = self.jobs
        n = len(jobs)
        while key < n and jobs[key] is None:
            key += 1
        return key

    def first_backfill(self, key: int, free: int, extra: int, shadow: float, now: float) -> int:
        """Key of the first waiting job at or after ``key`` with ``n <= free`` and
        (``now + length <= shadow`` or ``n <= extra``); -1 when there is none.
        ``free`` is at most the partition's ``max_nodes`` (free nodes of it)."""
        size = len(self.jobs)
        if key >= size or free <= 0:
            return -1
        limit = free if free < extra else extra
        column = free if free < self.top else self.top
        # ``now + length <= shadow`` in floating point implies ``length <= shadow - now``
        # up to a few ulps: the summaries may only over-select (the job-by-job
        # scan applies the exact test of the plain scan)
        slack = shadow - now
        if math.isfinite(slack):
            slack += 4.0 * (math.ulp(shadow) + math.ulp(now))
        elif slack > 0:  # no shadow time: any job of at most ``free`` nodes (lengths are finite)
            slack = sys.float_info.max
        nodes, lengths = self.nodes_list, self.lengths_list
        last_block = (size - 1) // BLOCK
        b = key // BLOCK
        while b <= last_block:
            candidates = self.block_min_nodes[b : last_block + 1] <= limit
            candidates |= self.block_min_length[b : last_block + 1, column] <= slack
            i = int(candidates.argmax())
            if not candidates[i]:
                return -1
            b += i
            lo = b * BLOCK
            for k in range(lo if lo > key else key, min(lo + BLOCK, size)):
                n = nodes[k]
                if n <= free and (now + lengths[k] <= shadow or n <= extra):
                    return k
            self._summarise(b)  # the summary was stale: a candidate had left
            b += 1
        return -1
