"""The Lublin-Feitelson workload model of rigid parallel jobs.

Reference: U. Lublin and D. G. Feitelson, "The workload on parallel
supercomputers: modeling the characteristics of rigid jobs", Journal of
Parallel and Distributed Computing 63(11):1105-1122, 2003. The parameter
values are those of the authors' reference generator ``m_lublin99.c`` as
distributed by the Parallel Workloads Archive (model "Lublin 99"); this module
is an independent, vectorised implementation of the same model.

The model, per job class (batch or interactive; the paper fits both, plus
"combined" parameters for a class-less workload):

* **Size** (processors). With probability ``serial_prob`` the job is serial
  (1 processor). Otherwise ``x = log2(size)`` is drawn from a *two-stage
  uniform*: with probability ``uprob`` uniform on ``[ulow, umed]``, else
  uniform on ``[umed, uhi]``. With probability ``pow2_prob`` (unconditional,
  i.e. of all jobs, as in the reference generator) ``x`` is rounded to an
  integer, so the size is a power of two; the size is ``round(2**x)``.
  ``uhi`` is log2 of the machine size: the published values are for a
  128-processor machine (``uhi = 7``); for another machine ``umed`` and
  ``uhi`` are shifted by ``log2(nodes) - 7`` (the reference generator's
  advice: ``uhi = log2(machine size)``, ``umed`` about 2.5 below it), and
  sizes never exceed the machine.
* **Runtime** (seconds). ``ln(runtime)`` follows a *hyper-gamma*: with
  probability ``p`` a gamma with shape ``a1`` and scale ``b1``, else a gamma
  with shape ``a2`` and scale ``b2``, where ``p = clip(pa * size + pb, 0, 1)``
  depends linearly on the size. ``pa < 0``, so larger jobs more often come from
  the second (longer) gamma: runtime is positively correlated with size.
  ``ln(runtime)`` is conditioned on ``<= max_log_runtime`` (12, about 45 h;
  a draw above is redrawn whole), and the runtime is ``floor(exp(.))``
  whole seconds.
* **Arrivals**. The "rush-hour" inter-arrival time is ``exp(g)`` seconds with
  ``g ~ gamma(shape = aarr * arar, scale = barr)`` conditioned on
  ``g <= max_log_interarrival`` (13, about 5 days). The daily cycle divides the
  day into 48 half-hour buckets; bucket weights are the probability mass of a
  ``gamma(shape = anum, scale = bnum)`` (in bucket units) on ``[i - 0.5,
  i + 0.5]`` for ``i = 11 .. 58``, bucket ``i`` being the half hour starting at
  ``((i - 1) mod 48) / 2`` o'clock; the weights are normalised to mean 1. The
  inter-arrival times are laid out in "weighted time" (a bucket of weight
  ``w`` lasts ``w`` half-hours of weighted time), so the arrival rate in a
  bucket is proportional to its weight: more jobs in the early afternoon,
  fewest around 5 a.m. This is the continuous-time form of the reference
  generator's "points" scheme. Batch and interactive jobs arrive as two
  independent streams, merged by time.

**Requested times**. The Lublin-Feitelson model has no user runtime
estimate; without one the engine would plan every job with its exact
runtime (an oracle). So by default (``requests = "tsafrir2005"``) each job
gets a requested time ``time_req_s`` from the model of Tsafrir, Etsion &
Feitelson, "Modeling User Runtime Estimates", JSSPP 2005
(:mod:`workloads.synthetic.tsafrir05`): about 20 popular round values, the
maximum ``max_request_s`` (default 18 h, the limit of the CTC-SP2 and
SDSC-SP2 logs, two of the logs the Lublin model was fitted on) the most
popular, every request at least the job's runtime. A job longer than the
maximum is killed at its limit: its runtime becomes its request and its SWF
status 0 ("failed"), as the logs record such jobs. ``requests = "none"``
leaves ``time_req_s`` missing (the published model alone).

Every draw comes from one ``numpy.random.Generator`` (the requests are drawn
last, so the other columns do not depend on the ``requests`` option); the
output is a :class:`~workloads.schema.Trace`. ``queue_id`` carries the class
with the SWF convention: 0 interactive, 1 batch (missing for the class-less
"combined" parameters).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

from energysched.errors import ConfigError
from workloads.schema import Trace
from workloads.synthetic._common import (
    build_trace,
    check_positive_int,
    check_range,
    check_seed,
    rigid_job_columns,
    truncated_gamma,
)
from workloads.synthetic.tsafrir05 import (
    REQUEST_MODELS,
    check_request_options,
    draw_generator_requests,
)

__all__ = [
    "LUBLIN_BATCH",
    "LUBLIN_COMBINED",
    "LUBLIN_INTERACTIVE",
    "LublinClassParams",
    "LublinParams",
    "daily_cycle_weights",
    "generate_lublin",
]

logger = logging.getLogger(__name__)

#: Half-hour buckets per day of the daily cycle.
BUCKETS_PER_DAY = 48
#: Seconds per bucket (30 min).
BUCKET_S = 86400.0 / BUCKETS_PER_DAY
#: Values of ``LublinParams.classes``.
CLASS_MODES = ("mixed", "batch", "interactive", "combined")
#: SWF queue numbers of the classes (SWF convention: 0 means interactive).
QUEUE_INTERACTIVE = 0
QUEUE_BATCH = 1


@dataclass(frozen=True)
class LublinClassParams:
    """Parameters of one job class of the Lublin-Feitelson model.

    Sizes: ``serial_prob`` (probability of a 1-processor job), ``pow2_prob``
    (probability of a power-of-two parallel job, of all jobs), the two-stage
    uniform of log2(size) ``ulow``, ``umed``, ``uhi`` (log2 processors, for the
    128-processor reference machine) and ``uprob`` (weight of ``[ulow, umed]``).

    Runtime: hyper-gamma of ``ln(runtime / 1 s)``: ``a1``, ``b1`` (shape,
    scale of the first, short gamma), ``a2``, ``b2`` (second, long gamma) and
    the mixing probability ``p = pa * size + pb`` (``pa`` per processor).

    Arrivals: ``aarr``, ``barr`` (shape, scale of the gamma of ``ln`` of the
    rush-hour inter-arrival time in seconds), ``arar`` (the paper's
    rush-to-all ratio, multiplying ``aarr``), ``anum``, ``bnum`` (shape, scale
    in half-hour buckets of the gamma giving the daily cycle).
    """

    serial_prob: float
    pow2_prob: float
    ulow: float
    umed: float
    uhi: float
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float

    def validate(self, prefix: str) -> None:
        """Raise :class:`ConfigError` (key ``prefix.field``) for an out-of-range value."""
        check_range(f"{prefix}.serial_prob", self.serial_prob, 0.0, 1.0)
        check_range(f"{prefix}.pow2_prob", self.pow2_prob, 0.0, 1.0)
        if self.serial_prob + self.pow2_prob > 1.0:
            raise ConfigError(f"{prefix}.pow2_prob", "serial_prob + pow2_prob must be <= 1")
        check_range(f"{prefix}.ulow", self.ulow, 0.0)
        check_range(f"{prefix}.umed", self.umed, self.ulow)
        check_range(f"{prefix}.uhi", self.uhi, self.umed)
        check_range(f"{prefix}.uprob", self.uprob, 0.0, 1.0)
        for name in ("a1", "b1", "a2", "b2", "aarr", "barr", "anum", "bnum", "arar"):
            value = check_range(f"{prefix}.{name}", getattr(self, name))
            if value <= 0:
                raise ConfigError(f"{prefix}.{name}", f"must be > 0, got {value}")
        check_range(f"{prefix}.pa", self.pa)
        check_range(f"{prefix}.pb", self.pb)


#: Batch jobs (Lublin & Feitelson 2003; reference generator ``m_lublin99.c``).
LUBLIN_BATCH = LublinClassParams(
    serial_prob=0.2927,
    pow2_prob=0.6686,
    ulow=1.2,
    umed=5.0,
    uhi=7.0,
    uprob=0.875,
    a1=6.57,
    b1=0.823,
    a2=639.1,
    b2=0.0156,
    pa=-0.003,
    pb=0.6986,
    aarr=6.0415,
    barr=0.8531,
    anum=6.1271,
    bnum=5.2740,
    arar=1.0519,
)

#: Interactive jobs (same source).
LUBLIN_INTERACTIVE = LublinClassParams(
    serial_prob=0.1541,
    pow2_prob=0.625,
    ulow=1.0,
    umed=3.0,
    uhi=5.5,
    uprob=0.705,
    a1=3.8351,
    b1=0.6605,
    a2=7.073,
    b2=0.6856,
    pa=-0.0118,
    pb=0.9156,
    aarr=6.5510,
    barr=0.6621,
    anum=8.9186,
    bnum=3.6680,
    arar=0.9797,
)

#: The whole workload without a batch/interactive split (same source).
LUBLIN_COMBINED = LublinClassParams(
    serial_prob=0.244,
    pow2_prob=0.576,
    ulow=0.8,
    umed=4.5,
    uhi=7.0,
    uprob=0.86,
    a1=4.2,
    b1=0.94,
    a2=312.0,
    b2=0.03,
    pa=-0.0054,
    pb=0.78,
    aarr=10.2303,
    barr=0.4871,
    anum=8.1737,
    bnum=3.9631,
    arar=1.0225,
)


@dataclass(frozen=True)
class LublinParams:
    """Parameters of :func:`generate_lublin` (defaults: the published model).

    Attributes:
        classes: ``"mixed"`` (batch and interactive streams merged by time, as
            the reference generator does by default), ``"batch"``,
            ``"interactive"`` or ``"combined"`` (class-less parameters).
        batch, interactive, combined: per-class parameters.
        reference_log2_nodes: log2 of the machine size the published size
            parameters were fitted for (128 processors -> 7).
        max_log_runtime: cap of ``ln(runtime / 1 s)`` (12 -> about 45 h).
        max_log_interarrival: cap of ``ln(inter-arrival / 1 s)`` (13 -> about 5 days).
        cycle_start_bucket: first half-hour bucket (1-based) of the modelled
            day in the daily-cycle gamma (11 -> the day "starts" at 5:00).
        start_hour: time of day (hours, 0-24) at ``submit_s = 0``.
        requests: requested times: ``"tsafrir2005"`` (default; the model of
            Tsafrir, Etsion & Feitelson 2005) or ``"none"`` (no request; the
            engine then plans with exact runtimes).
        max_request_s: the site's maximal request (s, whole, >= 3600; default
            18 h); a longer job is killed at this limit.
        max_request_share: share of jobs requesting the maximum (``None``: the
            model's, about 21.7 %).
        limit_share: share of jobs killed at their request (an extension of
            the model, default 0; :mod:`workloads.synthetic.tsafrir05`).
    """

    classes: str = "mixed"
    batch: LublinClassParams = field(default=LUBLIN_BATCH)
    interactive: LublinClassParams = field(default=LUBLIN_INTERACTIVE)
    combined: LublinClassParams = field(default=LUBLIN_COMBINED)
    reference_log2_nodes: float = 7.0
    max_log_runtime: float = 12.0
    max_log_interarrival: float = 13.0
    cycle_start_bucket: int = 11
    start_hour: float = 0.0
    requests: str = "tsafrir2005"
    max_request_s: int = 64800
    max_request_share: float | None = None
    limit_share: float = 0.0

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first invalid field."""
        if self.classes not in CLASS_MODES:
            raise ConfigError(
                "classes", f"unknown class mode {self.classes!r}; known: {', '.join(CLASS_MODES)}"
            )
        for name in ("batch", "interactive", "combined"):
            value = getattr(self, name)
            if not isinstance(value, LublinClassParams):
                raise ConfigError(name, "must be a LublinClassParams")
            value.validate(name)
        check_range("reference_log2_nodes", self.reference_log2_nodes, 0.0)
        check_range("max_log_runtime", self.max_log_runtime, 0.0)
        check_range("max_log_interarrival", self.max_log_interarrival, 0.0)
        check_range("cycle_start_bucket", self.cycle_start_bucket)
        check_range("start_hour", self.start_hour, 0.0, 24.0)
        check_request_options(
            self.requests,
            self.max_request_s,
            self.max_request_share,
            allowed=REQUEST_MODELS,
            limit_share=self.limit_share,
        )


def daily_cycle_weights(anum: float, bnum: float, cycle_start_bucket: int = 11) -> np.ndarray:
    """Relative arrival rate of each half-hour bucket of the day (mean 1).

    Args:
        anum, bnum: shape and scale (in buckets) of the daily-cycle gamma.
        cycle_start_bucket: first bucket (1-based) of the modelled day.

    Returns:
        Array of 48 weights; entry ``k`` is the half hour starting at ``k / 2``
        o'clock. The expected share of arrivals in bucket ``k`` is ``w[k] / 48``.
    """
    # the gamma's CDF is the regularised lower incomplete gamma function of x / scale
    # (the same values as scipy.stats.gamma's cdf, whose import costs about 0.5 s
    # against 0.15 s for scipy.special)
    from scipy.special import gammainc

    i = np.arange(cycle_start_bucket, cycle_start_bucket + BUCKETS_PER_DAY, dtype=float)
    mass = gammainc(anum, (i + 0.5) / bnum) - gammainc(anum, (i - 0.5) / bnum)
    weights = np.empty(BUCKETS_PER_DAY)
    weights[(i.astype(int) - 1) % BUCKETS_PER_DAY] = mass
    weights = np.maximum(weights, 1e-12 * max(float(weights.max()), 1e-300))
    return weights / weights.mean()


def _class_arrivals(
    rng: np.random.Generator, cp: LublinClassParams, params: LublinParams, n: int
) -> np.ndarray:
    """``n`` arrival times (s since the start, float, increasing) of one class."""
    log_gap = truncated_gamma(
        rng,
        np.full(n, cp.aarr * cp.arar),
        np.full(n, cp.barr),
        params.max_log_interarrival,
    )
    weights = daily_cycle_weights(cp.anum, cp.bnum, params.cycle_start_bucket)
    cum = np.concatenate(([0.0], np.cumsum(weights)))
    cum[-1] = float(BUCKETS_PER_DAY)  # exact, the weights have mean 1

    # Weighted position (in weighted buckets) of the start time.
    start = params.start_hour * 3600.0 / BUCKET_S
    b0 = min(int(start), BUCKETS_PER_DAY - 1)
    v0 = cum[b0] + weights[b0] * (start - b0)
    virtual = v0 + np.cumsum(np.exp(log_gap) / BUCKET_S)

    # Invert the piecewise-linear weighted clock.
    day = np.floor(virtual / BUCKETS_PER_DAY)
    rest = virtual - day * BUCKETS_PER_DAY
    bucket = np.clip(np.searchsorted(cum, rest, side="right") - 1, 0, BUCKETS_PER_DAY - 1)
    real = day * BUCKETS_PER_DAY + bucket + (rest - cum[bucket]) / weights[bucket]
    return (real - start) * BUCKET_S


def _scaled_size_bounds(
    cp: LublinClassParams, nodes: int, reference_log2_nodes: float
) -> tuple[float, float, float]:
    """``(ulow, umed, uhi)`` shifted to a machine of ``nodes`` processors."""
    log_nodes = math.log2(nodes)
    shift = log_nodes - reference_log2_nodes
    uhi = min(cp.uhi + shift, log_nodes)
    ulow = min(cp.ulow, uhi)
    umed = min(max(cp.umed + shift, ulow), uhi)
    return ulow, umed, uhi


def _draw_sizes(
    rng: np.random.Generator,
    cp: LublinClassParams,
    n: int,
    nodes: int,
    reference_log2_nodes: float,
) -> np.ndarray:
    """``n`` processor counts of one class, each in ``[1, nodes]``."""
    ulow, umed, uhi = _scaled_size_bounds(cp, nodes, reference_log2_nodes)
    u = rng.random(n)
    first = rng.random(n) < cp.uprob
    x = np.where(first, rng.uniform(ulow, umed, n), rng.uniform(umed, uhi, n))
    serial = u < cp.serial_prob
    pow2 = ~serial & (u < cp.serial_prob + cp.pow2_prob)
    max_exp = math.floor(math.log2(nodes) + 1e-12)
    x = np.where(pow2, np.minimum(np.floor(x + 0.5), max_exp), x)
    size = np.floor(np.exp2(x) + 0.5)
    size[serial] = 1.0
    return np.clip(size, 1, nodes).astype(np.int64)


def _draw_runtimes(
    rng: np.random.Generator, cp: LublinClassParams, size: np.ndarray, max_log_runtime: float
) -> np.ndarray:
    """Runtimes (whole seconds, >= 1) for jobs of the given sizes.

    A hyper-gamma draw of ``ln(runtime)`` above ``max_log_runtime`` is redrawn
    whole (component choice included), as in the reference generator, so the
    result follows the mixture conditioned on ``<= max_log_runtime``.
    """
    p = np.clip(cp.pa * size + cp.pb, 0.0, 1.0)
    log_runtime = np.empty(size.size)
    todo = np.arange(size.size)
    for _ in range(1000):
        first = rng.random(todo.size) < p[todo]
        log_runtime[todo] = rng.gamma(np.where(first, cp.a1, cp.a2), np.where(first, cp.b1, cp.b2))
        todo = todo[log_runtime[todo] > max_log_runtime]
        if todo.size == 0:
            break
    else:
        raise ConfigError(
            "max_log_runtime", "the runtime cap rejects almost every draw; check the parameters"
        )
    return np.maximum(np.floor(np.exp(log_runtime)), 1.0)


def generate_lublin(
    n_jobs: int, nodes: int, *, seed: int = 0, params: LublinParams | None = None
) -> Trace:
    """Generate a Lublin-Feitelson (2003) workload of rigid jobs.

    Args:
        n_jobs: number of jobs (>= 1).
        nodes: machine size in processors (>= 1); no job is larger.
        seed: seed of ``numpy.random.default_rng``; same seed -> same trace.
        params: model parameters; default :class:`LublinParams` (published values).

    Returns:
        A :class:`~workloads.schema.Trace` sorted by submit time: ``job_id``
        from 1, ``submit_s`` (whole seconds from the start), ``runtime_s``,
        ``procs_alloc = procs_req``, ``time_req_s`` (the requested time of
        the ``requests`` model; missing with ``"none"``), ``status`` (1; 0
        for a job killed at its requested time), ``queue_id`` (0
        interactive, 1 batch); every other SWF field missing. Header: ``MaxJobs``, ``MaxRecords``,
        ``MaxNodes``, ``MaxProcs``, ``MaxRuntime`` and a ``Note`` naming the
        model, class mode and seed.

    Raises:
        ConfigError: ``n_jobs`` or ``nodes`` < 1, or an invalid parameter.
    """
    n_jobs = check_positive_int("n_jobs", n_jobs)
    nodes = check_positive_int("nodes", nodes)
    seed = check_seed(seed)
    params = LublinParams() if params is None else params
    if not isinstance(params, LublinParams):
        raise ConfigError("params", f"must be a LublinParams, got {type(params).__name__}")
    params.validate()
    rng = np.random.default_rng(seed)

    if params.classes == "mixed":
        t_batch = _class_arrivals(rng, params.batch, params, n_jobs)
        t_inter = _class_arrivals(rng, params.interactive, params, n_jobs)
        submit = np.floor(np.concatenate([t_inter, t_batch]))
        queue = np.concatenate([np.full(n_jobs, QUEUE_INTERACTIVE), np.full(n_jobs, QUEUE_BATCH)])
        order = np.argsort(submit, kind="stable")[:n_jobs]
        submit, queue = submit[order], queue[order]
    else:
        cp = getattr(params, params.classes)
        submit = np.floor(_class_arrivals(rng, cp, params, n_jobs))
        code = {"batch": QUEUE_BATCH, "interactive": QUEUE_INTERACTIVE}.get(params.classes, -1)
        queue = np.full(n_jobs, code)

    size = np.empty(n_jobs, dtype=np.int64)
    runtime = np.empty(n_jobs, dtype=float)
    groups = (
        [(QUEUE_BATCH, params.batch), (QUEUE_INTERACTIVE, params.interactive)]
        if params.classes == "mixed"
        else [(int(queue[0]), getattr(params, params.classes))]
    )
    for code, cp in groups:
        idx = np.flatnonzero(queue == code)
        if idx.size == 0:
            continue
        size[idx] = _draw_sizes(rng, cp, idx.size, nodes, params.reference_log2_nodes)
        runtime[idx] = _draw_runtimes(rng, cp, size[idx], params.max_log_runtime)

    status = np.ones(n_jobs, dtype=np.int64)
    time_req = None
    if params.requests == "tsafrir2005":
        runtime, time_req = draw_generator_requests(runtime, status, rng, params)
    columns = rigid_job_columns(submit, runtime, size, status, time_req)
    if params.classes != "combined":
        columns["queue_id"] = queue
    note = (
        "Lublin & Feitelson 2003 workload model (JPDC 63(11)), "
        f"classes={params.classes}, seed={seed}, requests={params.requests}"
        + (f" (max {int(params.max_request_s)} s)" if params.requests != "none" else "")
        + ", generated by energysched workloads.synthetic"
    )
    header_extra = {"Acknowledge": "model by Uri Lublin and Dror Feitelson, Hebrew University"}
    if params.classes == "mixed":
        header_extra["Queues"] = "0 interactive, 1 batch"
    trace = build_trace(
        columns,
        n_jobs=n_jobs,
        nodes=nodes,
        name=f"lublin_{nodes}_{n_jobs}_s{seed}",
        header_extra=header_extra,
        note=note,
    )
    logger.info(
        "generated %d Lublin jobs on %d processors (classes=%s, seed=%d)",
        n_jobs,
        nodes,
        params.classes,
        seed,
    )
    return trace
