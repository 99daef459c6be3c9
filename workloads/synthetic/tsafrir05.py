"""User runtime estimates (requested times) for synthetic jobs: the Tsafrir 2005 model.

Reference: D. Tsafrir, Y. Etsion and D. G. Feitelson, "Modeling User Runtime
Estimates", Job Scheduling Strategies for Parallel Processing (JSSPP 2005),
LNCS 3834, pp. 1-35, Springer 2005. The constants below are those of the
authors' reference implementation of the model (``m_tsafrir05``, distributed
with the Parallel Workloads Archive); this module is an independent,
vectorised implementation of the same model.

Why: a workload model without requests (Lublin-Feitelson) would make the
engine plan every job with its exact runtime, an oracle no real scheduler
has. Real requests are *modal*: about 20 round values (5 min, 15 min, 1 h,
the site's maximum, ...) are used by about 90 % of the jobs, and the maximum
allowed value is the most popular one. Every job gets a request at least as
long as its runtime, so a request overestimates the runtime by a factor that
varies a lot from job to job.

The model has two steps.

**1. The request histogram** (:func:`request_histogram`), for ``n`` jobs and
the site's maximal request ``M`` (``max_request_s``, at least one hour):

* *Number of distinct values* ``K``: piecewise linear in ``n`` through the
  points (jobs, values) = (0, 0), (20, 10), (200, 20), (1000, 35),
  (10000, 90), (70000, 340), (250000, 565), and 565 above.
* *Head*: the 20 most popular values (fewer for a small ``M``): ``M`` itself;
  the 15 values popular in all four logs the model was fitted on (5, 10, 15,
  20, 30 min, 1, 2, 3, 4, 5, 6, 8, 10, 12, 18 h) that are below ``M``; then
  round multiples below ``M`` (of 200 h, 100 h, 50 h, 10 h, 5 h, 2 h, 1 h,
  20 min, 10 min, 5 min, in that order, from the largest multiple down)
  until there are 20.
* *Head popularity*: the value of popularity rank ``x = 2..20`` is used by
  ``14.0491 exp(-0.177531 x) + 0.462513`` % of the jobs; the head together
  is used by 89 % of the jobs, so rank 1 (always ``M``) gets the rest,
  about 21.7 % (``max_request_share`` sets it instead; the other head
  values are then scaled so that the head still holds 89 %). Which time gets
  which popularity rank is drawn at random within the constraints of a
  table of the four logs (time rank -> popularity rank, the same table as
  the reference implementation): a popularity rank whose last time rank in
  the table has come is given first (the most popular such); otherwise the
  smaller of two ranks drawn from the pool of ranks seen so far.
* *Tail*: the other ``K - 20`` values, at times
  ``M (a - 1) x / (a - x)`` for ``x = i / (K - 20)``, ``i = 1 .. K - 20``,
  with ``a = 1 + 12.1039 K^-0.6026``, rounded to a minute (a clash with a
  value already taken moves it by +30, -30, +20, -20, +10 or -10 s, else the
  value is dropped); tail popularity ranks ``x = 21, 22, ...`` are used in
  proportion to ``795.6 x^-2.267``, scaled to the 11 % of jobs outside the
  head, matched to the tail times at random.
* The percentages become job counts summing to ``n`` (largest remainders;
  without a tail, for fewer than about 200 jobs, the head is scaled to all
  the jobs).

**2. Assignment** (:func:`assign_requests`): a job whose runtime exceeds
``M`` is killed at its limit (its runtime becomes ``M``, its request ``M``).
Then, in decreasing order of runtime, each job draws uniformly one of the
not yet assigned requests that are at least its runtime. (Jobs with the same
smallest eligible value draw together: a multivariate hypergeometric draw,
the same distribution as one by one.) If none is left, which the model
does not expect (the histogram's long values are too few for this
workload), the job takes the longest request left and is killed at that
limit (its runtime becomes its request); a warning counts such jobs.

**Extension (not in the 2005 model): ``limit_share``.** In the logs 8-13 %
of the jobs run to their request (killed there); the model alone kills only
jobs longer than the maximum (1-2.5 % of the jobs of CTC-SP2, SDSC-SP2 and
HPC2N with their own runtimes). With ``limit_share > 0`` that share of the
jobs, drawn at random among those at least the shortest value long, each
take a request at most their runtime (uniformly among the requests left,
before the other jobs are matched) and are killed there: their runtime is
cut to that request, which removes work from the workload (CTC-SP2 with
its measured 9.6 %: about 8 % of the summed runtime). Default 0.

So every request is one of the histogram's values and never below the
job's runtime; a job killed at its limit has ``runtime == request`` (and
SWF status 0, "failed", as the logs record jobs killed at their limit),
which the engine replays like an SWF job that used its whole request: it
runs to its limit, and is killed there under ``overrun = "kill"`` if a
slower configuration (a lower frequency, fewer nodes) would make it longer.

All draws come from the ``numpy.random.Generator`` passed in (the workload
generator's own, after its other draws), so a seed gives the same requests.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from energysched.errors import ConfigError

__all__ = [
    "HEAD_SHARE",
    "REQUEST_MODELS",
    "RequestDraw",
    "assign_requests",
    "draw_generator_requests",
    "head_request_values",
    "number_of_request_values",
    "request_histogram",
    "tsafrir05_requests",
]

logger = logging.getLogger(__name__)

#: Values of a generator's ``requests`` option: the Tsafrir 2005 model, or none.
REQUEST_MODELS = ("tsafrir2005", "none")

MINUTE_S = 60
HOUR_S = 3600

#: Number of "head" (most popular) request values.
HEAD_VALUES = 20
#: Share of jobs whose request is one of the head values.
HEAD_SHARE = 0.89
#: Head popularity of rank x (percent of jobs): a * exp(b * x) + c, x = 2..20.
HEAD_SIZE_PARAMS = (14.0491, -0.177531, 0.462513)
#: Tail popularity of rank x (relative): a * x ** b, x = 21, 22, ...
TAIL_SIZE_PARAMS = (795.6, -2.267)
#: Tail time curve parameter a = 1 + p * K ** q.
TAIL_TIME_PARAMS = (12.1039, -0.6026)
#: (jobs, distinct values) points of the piecewise-linear number of values.
VALUE_COUNT_POINTS = (
    (0, 0),
    (20, 10),
    (200, 20),
    (1000, 35),
    (10000, 90),
    (70000, 340),
    (250000, 565),
)
#: The 15 values popular in all four logs the model was fitted on (s).
JOINT_VALUES_S = tuple(m * MINUTE_S for m in (5, 15, 10, 20, 30)) + tuple(
    h * HOUR_S for h in (1, 2, 3, 4, 5, 6, 8, 10, 12, 18)
)
#: Round steps that complete the head below the maximum, in this order (s).
ROUND_STEPS_S = tuple(h * HOUR_S for h in (200, 100, 50, 10, 5, 2, 1)) + tuple(
    m * MINUTE_S for m in (20, 10, 5)
)
#: Largest ``limit_share`` accepted (the logs measured show 8-13 %).
MAX_LIMIT_SHARE = 0.5
#: Offsets (s) that move a tail value clashing with a value already taken.
TAIL_CLASH_OFFSETS_S = (0, 30, -30, 20, -20, 10, -10)
#: Popularity rank of the head value of each time rank (row 0: the maximum,
#: rows 1..19: the other head values from the shortest up) in the four logs
#: the model was fitted on (columns: SDSC-SP2, CTC-SP2, KTH-SP2, SDSC-Blue).
TIME_RANK_TO_POPULARITY = (
    (3, 1, 1, 1),
    (1, 3, 4, 6),
    (4, 4, 10, 5),
    (17, 2, 14, 3),
    (13, 12, 20, 7),
    (7, 9, 2, 2),
    (8, 8, 3, 18),
    (18, 18, 7, 19),
    (2, 6, 12, 4),
    (6, 7, 6, 11),
    (16, 11, 19, 20),
    (10, 20, 5, 9),
    (5, 16, 18, 10),
    (15, 5, 16, 14),
    (14, 14, 9, 13),
    (19, 13, 17, 16),
    (11, 10, 15, 15),
    (12, 15, 13, 17),
    (9, 17, 8, 8),
    (20, 19, 11, 12),
)


@dataclass(frozen=True)
class RequestDraw:
    """Requests drawn for a workload (arrays in the jobs' order).

    Attributes:
        request_s: requested time of each job (s), one of the histogram's values.
        runtime_s: runtime of each job (s): the input runtime, or its request
            for a job killed at its limit.
        killed_at_limit: the job ran into its request (its runtime was cut).
    """

    request_s: np.ndarray
    runtime_s: np.ndarray
    killed_at_limit: np.ndarray


def check_request_options(
    requests: object,
    max_request_s: object,
    max_request_share: object,
    *,
    allowed: tuple[str, ...] = REQUEST_MODELS,
    limit_share: object = 0.0,
) -> None:
    """Raise :class:`ConfigError` (key = the option) for invalid request options."""
    if requests not in allowed:
        raise ConfigError(
            "requests", f"unknown request model {requests!r}; known: {', '.join(allowed)}"
        )
    if (
        isinstance(max_request_s, bool)
        or not isinstance(max_request_s, (int, float))
        or not math.isfinite(max_request_s)
        or max_request_s < HOUR_S
        or max_request_s != int(max_request_s)
    ):
        raise ConfigError(
            "max_request_s",
            f"must be a whole number of seconds >= {HOUR_S} (the model needs a maximum of at "
            f"least one hour), got {max_request_s!r}",
        )
    if max_request_share is not None and (
        isinstance(max_request_share, bool)
        or not isinstance(max_request_share, (int, float))
        or not 0 < max_request_share <= HEAD_SHARE
    ):
        raise ConfigError(
            "max_request_share",
            f"must be a share in (0, {HEAD_SHARE}] (or absent for the model's value), "
            f"got {max_request_share!r}",
        )
    if (
        isinstance(limit_share, bool)
        or not isinstance(limit_share, (int, float))
        or not 0 <= limit_share <= MAX_LIMIT_SHARE
    ):
        raise ConfigError(
            "limit_share",
            f"must be a share in [0, {MAX_LIMIT_SHARE}] (0: the published model), "
            f"got {limit_share!r}",
        )


def number_of_request_values(n_jobs: int) -> int:
    """``K``, the number of distinct request values of ``n_jobs`` jobs (piecewise linear)."""
    xs = [p[0] for p in VALUE_COUNT_POINTS]
    ys = [p[1] for p in VALUE_COUNT_POINTS]
    if n_jobs >= xs[-1]:
        return ys[-1]
    return math.floor(float(np.interp(n_jobs, xs, ys)) + 0.5)


def head_request_values(max_request_s: int) -> list[int]:
    """The head values (s): ``[max_request_s, then the others from the shortest up]``."""
    values = [max_request_s]
    values += [v for v in JOINT_VALUES_S if v < max_request_s]
    for step in ROUND_STEPS_S:
        if len(values) >= HEAD_VALUES:
            break
        value = (max_request_s // step) * step
        while value > 0 and len(values) < HEAD_VALUES:
            if value not in values:
                values.append(value)
            value -= step
    return [values[0], *sorted(values[1:])]


def _time_rank_to_popularity(n_head: int, rng: np.random.Generator) -> list[int]:
    """Popularity rank (1 = most popular) of each head time rank (0 = the maximum)."""
    table = TIME_RANK_TO_POPULARITY
    last_rank = {}  # popularity rank -> the last time rank where a log has it
    for time_rank, row in enumerate(table):
        for pop in row:
            last_rank[pop] = time_rank
    chosen: list[int] = []
    pool: list[int] = []
    for time_rank, row in enumerate(table):
        pool += [p for p in row if p not in chosen]
        if time_rank == 0:
            pick = 1  # the maximum is the most popular value
        else:
            due = [
                p
                for p in range(1, HEAD_VALUES + 1)
                if last_rank[p] <= time_rank and p not in chosen
            ]
            if due:
                pick = min(due)
            else:  # the smaller of two draws from the pool favours popular ranks
                pick = min(pool[int(rng.integers(len(pool)))] for _ in range(2))
        chosen.append(pick)
        pool = [p for p in pool if p != pick]
    if n_head < HEAD_VALUES:  # fewer head values: re-rank the ranks they got
        used = chosen[:n_head]
        order = sorted(used)
        chosen = [order.index(p) + 1 for p in used]
    return chosen[:n_head]


def _head_shares(n_head: int, max_request_share: float | None) -> np.ndarray:
    """Share of jobs of popularity ranks 1..n_head (sums to HEAD_SHARE)."""
    a, b, c = HEAD_SIZE_PARAMS
    ranks = np.arange(2, n_head + 1, dtype=float)
    others = (a * np.exp(b * ranks) + c) / 100.0
    if max_request_share is None:
        first = HEAD_SHARE - float(others.sum())
    else:
        first = float(max_request_share)
        total = float(others.sum())
        others = others * ((HEAD_SHARE - first) / total) if total > 0 else others
    return np.concatenate([[first], others])


def _tail_values(max_request_s: int, n_tail: int, taken: set[int], a: float) -> list[int]:
    values: list[int] = []
    for i in range(1, n_tail + 1):
        x = i / n_tail
        y = (a - 1.0) * x / (a - x)
        base = math.floor(y * max_request_s / MINUTE_S + 0.5) * MINUTE_S
        for offset in TAIL_CLASH_OFFSETS_S:
            value = base + offset
            if 0 < value < max_request_s and value not in taken:
                values.append(value)
                taken.add(value)
                break
    return sorted(values)


def _apportion(shares: np.ndarray, n_jobs: int) -> np.ndarray:
    """Whole job counts proportional to ``shares`` summing to ``n_jobs`` (largest remainders)."""
    quota = shares / shares.sum() * n_jobs
    counts = np.floor(quota).astype(np.int64)
    missing = n_jobs - int(counts.sum())
    if missing > 0:
        order = np.argsort(-(quota - counts), kind="stable")
        counts[order[:missing]] += 1
    return counts


def request_histogram(
    n_jobs: int,
    max_request_s: int,
    rng: np.random.Generator,
    *,
    max_request_share: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The request values (s, increasing) and how many of ``n_jobs`` jobs use each.

    Args:
        n_jobs: number of jobs (>= 1).
        max_request_s: the site's maximal request (s, >= 3600).
        rng: draws the head's time-to-popularity mapping and the tail matching.
        max_request_share: share of jobs requesting the maximum (default: the
            model's, 89 % minus the other head values, about 21.7 %).

    Returns:
        ``(values_s, counts)``; ``counts.sum() == n_jobs``; values with no job
        are dropped.
    """
    check_request_options("tsafrir2005", max_request_s, max_request_share)
    max_request_s = int(max_request_s)
    head = head_request_values(max_request_s)
    popularity = _time_rank_to_popularity(len(head), rng)
    head_shares = _head_shares(len(head), max_request_share)[np.asarray(popularity) - 1]
    n_values = number_of_request_values(n_jobs)
    n_tail = n_values - len(head)
    values = list(head)
    shares = list(head_shares)
    tail: list[int] = []
    if n_tail > 0:
        a = 1.0 + TAIL_TIME_PARAMS[0] * n_values ** TAIL_TIME_PARAMS[1]
        tail = _tail_values(max_request_s, n_tail, set(head), a)
    if tail:
        ranks = np.arange(HEAD_VALUES + 1, HEAD_VALUES + 1 + len(tail), dtype=float)
        tail_shares = TAIL_SIZE_PARAMS[0] * ranks ** TAIL_SIZE_PARAMS[1]
        tail_shares *= (1.0 - HEAD_SHARE) / tail_shares.sum()
        values += tail
        shares += list(tail_shares[rng.permutation(len(tail))])
    order = np.argsort(values)
    values_s = np.asarray(values, dtype=np.int64)[order]
    counts = _apportion(np.asarray(shares, dtype=float)[order], n_jobs)
    keep = counts > 0
    return values_s[keep], counts[keep]


def assign_requests(
    runtime_s: np.ndarray,
    values_s: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
    *,
    limit_share: float = 0.0,
) -> RequestDraw:
    """Give each job one of the histogram's requests, at least its runtime.

    Args:
        runtime_s: the jobs' runtimes (s, > 0), any order.
        values_s: request values (s), increasing.
        counts: how many jobs get each value; ``counts.sum() == len(runtime_s)``.
        rng: the random generator.
        limit_share: share of the jobs that run into their request (our
            extension, 0 = the published model; see the module docstring).

    Returns:
        A :class:`RequestDraw` in the jobs' order (see the module docstring
        for the jobs killed at their limit).
    """
    runtime = np.asarray(runtime_s, dtype=np.float64).copy()
    values = np.asarray(values_s, dtype=np.int64)
    left = np.asarray(counts, dtype=np.int64).copy()
    n = runtime.size
    if int(left.sum()) != n:
        raise ConfigError("counts", f"the histogram has {int(left.sum())} requests for {n} jobs")
    killed = runtime > values[-1]
    runtime[killed] = values[-1]
    request = np.zeros(n, dtype=np.int64)
    matched = np.zeros(n, dtype=bool)
    if limit_share > 0:
        _run_into_limits(runtime, request, killed, matched, values, left, rng, limit_share)
    # jobs in decreasing runtime (ties: job order), grouped by the smallest eligible value
    rest = np.flatnonzero(~matched)
    order = rest[np.lexsort((rest, -runtime[rest]))]
    n_rest = order.size
    first_eligible = np.searchsorted(values, runtime[order], side="left")
    bounds = np.flatnonzero(np.diff(first_eligible)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [n_rest]])
    unmet = 0
    for start, end in zip(starts.tolist(), ends.tolist()):
        if start >= end:
            continue
        jobs = order[start:end]
        b = int(first_eligible[start])
        available = int(left[b:].sum())
        take = min(len(jobs), available)
        if take:
            drawn = rng.multivariate_hypergeometric(left[b:], take)
            left[b:] -= drawn
            picked = np.repeat(values[b:], drawn)
            request[jobs[:take]] = picked[rng.permutation(take)]
        for job in jobs[take:].tolist():  # none eligible left: killed at the longest one left
            k = int(np.flatnonzero(left)[-1])
            left[k] -= 1
            request[job] = values[k]
            runtime[job] = values[k]
            killed[job] = True
            unmet += 1
    if unmet:
        logger.warning(
            "%d of %d jobs found no request at least their runtime left in the "
            "Tsafrir 2005 histogram (its long values are too few for this workload); "
            "they were killed at the longest request left",
            unmet,
            n,
        )
    return RequestDraw(
        request_s=request.astype(np.float64), runtime_s=runtime, killed_at_limit=killed
    )


def _run_into_limits(
    runtime: np.ndarray,
    request: np.ndarray,
    killed: np.ndarray,
    matched: np.ndarray,
    values: np.ndarray,
    left: np.ndarray,
    rng: np.random.Generator,
    limit_share: float,
) -> None:
    """The ``limit_share`` extension, in place: jobs drawn at random among those at
    least the shortest value long each take a request at most their runtime
    (uniformly among the requests left, the most constrained jobs first) and are
    killed there (runtime = request)."""
    n = runtime.size
    eligible = np.flatnonzero(runtime >= values[0])
    k = min(math.floor(limit_share * n + 0.5), eligible.size)
    if k < math.floor(limit_share * n + 0.5):
        logger.warning(
            "limit_share %.3f asks for %d jobs killed at their limit, but only %d jobs are "
            "at least the shortest request (%d s) long",
            limit_share,
            math.floor(limit_share * n + 0.5),
            eligible.size,
            int(values[0]),
        )
    if k == 0:
        return
    chosen = np.sort(rng.choice(eligible, k, replace=False))
    last = np.searchsorted(values, runtime[chosen], side="right") - 1
    for b in np.unique(last).tolist():  # the shortest (most constrained) first
        jobs = chosen[last == b]
        take = min(jobs.size, int(left[: b + 1].sum()))
        if take == 0:
            continue  # nothing short enough left: matched like the others
        drawn = rng.multivariate_hypergeometric(left[: b + 1], take)
        left[: b + 1] -= drawn
        picked = np.repeat(values[: b + 1], drawn)[rng.permutation(take)]
        jobs = jobs[:take]
        request[jobs] = picked
        runtime[jobs] = picked
        killed[jobs] = True
        matched[jobs] = True


def tsafrir05_requests(
    runtime_s: np.ndarray,
    rng: np.random.Generator,
    *,
    max_request_s: int,
    max_request_share: float | None = None,
    limit_share: float = 0.0,
) -> RequestDraw:
    """Requests of the Tsafrir 2005 model for jobs with these runtimes (both steps).

    Args:
        runtime_s: the jobs' runtimes (s, > 0).
        rng: the workload generator's random generator.
        max_request_s: the site's maximal request (s, whole, >= 3600).
        max_request_share: share of jobs requesting the maximum (``None``: the model's).
        limit_share: share of jobs killed at their request (our extension; 0:
            the published model).
    """
    runtime = np.asarray(runtime_s, dtype=np.float64)
    if runtime.size == 0:
        empty = np.zeros(0)
        return RequestDraw(empty, empty, np.zeros(0, dtype=bool))
    values, counts = request_histogram(
        runtime.size, max_request_s, rng, max_request_share=max_request_share
    )
    draw = assign_requests(runtime, values, counts, rng, limit_share=limit_share)
    n_killed = int(draw.killed_at_limit.sum())
    logger.info(
        "Tsafrir 2005 requests for %d jobs: %d values, maximum %d s used by %.1f %%, "
        "%d jobs killed at their limit",
        runtime.size,
        values.size,
        int(values[-1]),
        100.0 * float(np.mean(draw.request_s == values[-1])),
        n_killed,
    )
    return draw


def draw_generator_requests(
    runtime_s: np.ndarray, status: np.ndarray, rng: np.random.Generator, params: Any
) -> tuple[np.ndarray, np.ndarray]:
    """A workload generator's requests: :func:`tsafrir05_requests` with the
    generator's ``params`` (``max_request_s``, ``max_request_share``,
    ``limit_share``). Returns ``(runtime_s, request_s)``; a job killed at its limit
    gets its request as runtime and SWF status 0 (failed) in ``status`` (changed in
    place). Generators draw it after every other column, so those do not depend on it.
    """
    draw = tsafrir05_requests(
        runtime_s,
        rng,
        max_request_s=int(params.max_request_s),
        max_request_share=params.max_request_share,
        limit_share=params.limit_share,
    )
    status[draw.killed_at_limit] = 0
    return draw.runtime_s, draw.request_s
