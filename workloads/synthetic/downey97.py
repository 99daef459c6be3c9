"""Downey's 1997 workload model of moldable parallel jobs.

Reference: A. B. Downey, "A parallel workload model and its implications for
processor allocation", Proc. 6th IEEE Int. Symp. on High Performance
Distributed Computing (HPDC-6), 1997 (extended in Cluster Computing 1(1),
1998). Summary of the model: Parallel Workloads Archive, "The Downey 1997
Model".

Each job has:

* **Total work** ``L`` (node-seconds; the runtime on one node):
  log-uniform, ``ln L ~ U(log_work_min, log_work_max)``.
* **Average parallelism** ``A``: log-uniform on ``[1, max_parallelism]``
  (default ``max_parallelism`` = the machine size), i.e.
  ``ln A ~ U(0, ln max_parallelism)``.
* **Variance of parallelism** ``sigma ~ U(sigma_min, sigma_max)``, default
  ``U(0, 2)`` as in Downey's workload generator, covering both the
  low-variance (``sigma <= 1``) and high-variance (``sigma >= 1``) modes.
* **Arrivals**: a Poisson process (exponential inter-arrival times).

A trace needs one node count per job; Downey's jobs are moldable, so this
module fixes it with a documented rule (``size_rule``):

* ``"pow2"`` (default): ``n = min(2**round(log2 A), nodes)``, the power of two
  nearest to the average parallelism in log scale, capped at the machine;
* ``"round"``: ``n = min(max(round(A), 1), nodes)``.

The recorded runtime is ``ceil(L / S(n, A, sigma))`` whole seconds (at least
1) with Downey's speedup ``S``; the requested time (user estimate) is
``ceil(runtime * u)``, ``u ~ U(overestimate_min, overestimate_max)``
(default ``U(1, 5)``: users overestimate, never underestimate). This is the
``requests = "uniform"`` default; ``"tsafrir2005"`` draws the requests from
the model of Tsafrir, Etsion & Feitelson, "Modeling User Runtime Estimates",
JSSPP 2005 (:mod:`workloads.synthetic.tsafrir05`; modal round values up to
``max_request_s``, a longer job killed at that limit: runtime = request,
SWF status 0), and ``"none"`` leaves ``time_req_s`` missing. The factor is
drawn in every case, so the other columns do not depend on the option.

The arrival rate: ``mean_interarrival_s`` when given; otherwise chosen so that
the offered load ``sum(n_i * T_i) / (nodes * span)`` is ``load`` in
expectation (``mean inter-arrival = sum(n_i * T_i) / (nodes * load * n_jobs)``
over the generated jobs).

**Defaults that are ours, not Downey's**: the paper fits ``L`` and ``A`` to
the SDSC Paragon log; the bounds are not reproduced here. ``log_work_min = 2``
and ``log_work_max = 13`` (about 7 node-seconds to 5 node-days) span the
range of jobs in the Parallel Workloads Archive logs; ``load = 0.7``.

The per-job ``A``, ``sigma`` and ``L`` are kept as extra columns
``downey_A``, ``downey_sigma`` and ``downey_work_s`` (ground truth).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from energysched.errors import ConfigError
from workloads.models.downey import downey_speedup
from workloads.schema import Trace
from workloads.synthetic._common import (
    build_trace,
    check_positive_int,
    check_range,
    check_seed,
    rigid_job_columns,
)
from workloads.synthetic.tsafrir05 import check_request_options, draw_generator_requests

__all__ = ["DowneyParams", "generate_downey"]

logger = logging.getLogger(__name__)

#: Values of ``DowneyParams.size_rule``.
SIZE_RULES = ("pow2", "round")
#: Values of ``DowneyParams.requests``.
DOWNEY_REQUEST_MODELS = ("uniform", "tsafrir2005", "none")


@dataclass(frozen=True)
class DowneyParams:
    """Parameters of :func:`generate_downey` (see the module docstring).

    Attributes:
        log_work_min, log_work_max: bounds of ``ln(L / 1 node-second)``.
        max_parallelism: upper bound of ``A`` (``None`` -> the machine size).
        sigma_min, sigma_max: bounds of the uniform ``sigma``.
        size_rule: ``"pow2"`` or ``"round"``: node count from ``A``.
        load: target offered load (0 < load), used when
            ``mean_interarrival_s`` is ``None``.
        mean_interarrival_s: mean of the exponential inter-arrival time (s).
        overestimate_min, overestimate_max: bounds of the uniform factor
            ``requested time / runtime`` (>= 1).
        requests: ``"uniform"`` (default, the factor above), ``"tsafrir2005"``
            or ``"none"`` (see the module docstring).
        max_request_s, max_request_share: the Tsafrir 2005 model's maximal
            request (s) and the share of jobs using it (``None``: the model's).
        limit_share: share of jobs killed at their request (Tsafrir 2005
            extension, default 0).
    """

    log_work_min: float = 2.0
    log_work_max: float = 13.0
    max_parallelism: float | None = None
    sigma_min: float = 0.0
    sigma_max: float = 2.0
    size_rule: str = "pow2"
    load: float = 0.7
    mean_interarrival_s: float | None = None
    overestimate_min: float = 1.0
    overestimate_max: float = 5.0
    requests: str = "uniform"
    max_request_s: int = 64800
    max_request_share: float | None = None
    limit_share: float = 0.0

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first invalid field."""
        check_range("log_work_min", self.log_work_min, 0.0)
        check_range("log_work_max", self.log_work_max, self.log_work_min)
        if self.max_parallelism is not None:
            check_range("max_parallelism", self.max_parallelism, 1.0)
        check_range("sigma_min", self.sigma_min, 0.0)
        check_range("sigma_max", self.sigma_max, self.sigma_min)
        if self.size_rule not in SIZE_RULES:
            raise ConfigError(
                "size_rule", f"unknown rule {self.size_rule!r}; known: {', '.join(SIZE_RULES)}"
            )
        if check_range("load", self.load, 0.0) <= 0:
            raise ConfigError("load", "must be > 0")
        if self.mean_interarrival_s is not None:
            if check_range("mean_interarrival_s", self.mean_interarrival_s, 0.0) <= 0:
                raise ConfigError("mean_interarrival_s", "must be > 0")
        check_range("overestimate_min", self.overestimate_min, 1.0)
        check_range("overestimate_max", self.overestimate_max, self.overestimate_min)
        check_request_options(
            self.requests,
            self.max_request_s,
            self.max_request_share,
            allowed=DOWNEY_REQUEST_MODELS,
            limit_share=self.limit_share,
        )


def _node_counts(A: np.ndarray, nodes: int, rule: str) -> np.ndarray:
    if rule == "pow2":
        n = np.exp2(np.floor(np.log2(A) + 0.5))
    else:
        n = np.floor(A + 0.5)
    return np.clip(n, 1, nodes).astype(np.int64)


def generate_downey(
    n_jobs: int, nodes: int, *, seed: int = 0, params: DowneyParams | None = None
) -> Trace:
    """Generate a Downey (1997) workload on a machine of ``nodes`` nodes.

    Args:
        n_jobs: number of jobs (>= 1).
        nodes: machine size in nodes (>= 1); no job is larger.
        seed: seed of ``numpy.random.default_rng``; same seed -> same trace.
        params: model parameters; default :class:`DowneyParams`.

    Returns:
        A :class:`~workloads.schema.Trace`: ``job_id`` from 1, ``submit_s``
        (whole seconds, Poisson arrivals), ``runtime_s`` (s),
        ``procs_alloc = procs_req`` (the node count of ``size_rule``),
        ``time_req_s`` (the ``requests`` model's; missing with ``"none"``),
        ``status`` (1; 0 for a job killed at its requested time),
        other SWF fields missing; extra columns ``downey_A``, ``downey_sigma``,
        ``downey_work_s`` (node-seconds).

    Raises:
        ConfigError: ``n_jobs`` or ``nodes`` < 1, or an invalid parameter.
    """
    n_jobs = check_positive_int("n_jobs", n_jobs)
    nodes = check_positive_int("nodes", nodes)
    seed = check_seed(seed)
    params = DowneyParams() if params is None else params
    if not isinstance(params, DowneyParams):
        raise ConfigError("params", f"must be a DowneyParams, got {type(params).__name__}")
    params.validate()
    rng = np.random.default_rng(seed)

    max_par = float(nodes if params.max_parallelism is None else params.max_parallelism)
    work = np.exp(rng.uniform(params.log_work_min, params.log_work_max, n_jobs))
    A = np.exp(rng.uniform(0.0, math.log(max_par), n_jobs))
    sigma = rng.uniform(params.sigma_min, params.sigma_max, n_jobs)
    size = _node_counts(A, nodes, params.size_rule)
    runtime = np.maximum(np.ceil(work / downey_speedup(size, A, sigma)), 1.0)
    factor = rng.uniform(params.overestimate_min, params.overestimate_max, n_jobs)
    time_req = np.ceil(runtime * factor)

    if params.mean_interarrival_s is not None:
        mean_gap = float(params.mean_interarrival_s)
    else:
        mean_gap = float(np.sum(size * runtime)) / (nodes * params.load * n_jobs)
    submit = np.floor(np.cumsum(rng.exponential(mean_gap, n_jobs)))
    status = np.ones(n_jobs, dtype=np.int64)
    if params.requests == "tsafrir2005":
        runtime, time_req = draw_generator_requests(runtime, status, rng, params)

    requested = time_req if params.requests != "none" else None
    columns = rigid_job_columns(submit, runtime, size, status, requested)
    note = (
        "Downey 1997 workload model (HPDC-6), "
        f"size_rule={params.size_rule}, mean_interarrival_s={mean_gap:.3f}, seed={seed}, "
        f"requests={params.requests}, "
        "generated by energysched workloads.synthetic"
    )
    trace = build_trace(
        columns,
        n_jobs=n_jobs,
        nodes=nodes,
        name=f"downey_{nodes}_{n_jobs}_s{seed}",
        header_extra={"Acknowledge": "model by Allen B. Downey"},
        note=note,
        extra_columns={"downey_A": A, "downey_sigma": sigma, "downey_work_s": work},
    )
    logger.info(
        "generated %d Downey jobs on %d nodes (mean inter-arrival %.1f s, seed=%d)",
        n_jobs,
        nodes,
        mean_gap,
        seed,
    )
    return trace
