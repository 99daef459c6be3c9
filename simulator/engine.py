"""The discrete-event engine: replay a trace on a platform under a policy.

How it works
------------
One SimPy process drives an *event calendar*: submissions come from the
trace (sorted by submit time), everything else (job ends, boot and shutdown
completions, idle-timeout checks) sits in a heap. The process sleeps with
``env.timeout`` until the next event time, then handles **every** event at
that instant as one batch: completions first (they free nodes), then
boot/shutdown completions and idle checks, then submissions; then it calls
the policy **once** for the batch. So a job costs O(1) calendar events
(submit, end, and a boot/shutdown when power management is on) and there
are no per-node processes and no time stepping.

Nodes are not simulated one by one: per node type the engine keeps how many
nodes are busy, idle (on), held (allocated to a job that waits for booting
nodes), off, booting and shutting down. Power is a step function of these
counts and of the running jobs' per-node powers, so energy is integrated
**exactly**, piecewise between batches: ``E += P * dt`` per category
(busy, idle, off, switching). Per-job energy is ``nodes * power * runtime``.
The power timeline records the platform power after every batch in which it
changed; its integral equals the total energy.

Power states and energy categories
----------------------------------
* busy: nodes running a job, at the job's per-node power (from the ground
  truth; without one, the chosen P-state's ``busy_power_w``);
* idle: nodes on and unallocated, and nodes held for a job whose other nodes
  are still booting, at the node type's idle power (lowest P-state);
* off: at ``off_power_w``;
* switching: booting or shutting-down nodes at ``boot_energy_j / boot_time_s``
  or ``shutdown_energy_j / shutdown_time_s``.

The energy window starts at the first submission (all nodes on and idle)
and ends at the last job end (the makespan).

Power management (``RunConfig.idle_timeout_s``): a node idle for the timeout
is switched off unless that would leave fewer than ``reserve_nodes`` idle
nodes on. Jobs take the most recently idled nodes first, so the nodes idle
longest are the ones that time out. A job given more nodes than are idle
and on boots the difference; it starts when the boot completes (its wait
includes the boot delay) and its other nodes are held idle meanwhile.

Runtime of a started job
------------------------
With a ground truth (:mod:`workloads.truth`) the runtime and per-node power
come from ``truth.evaluate``. Without one, the runtime is the trace's
recorded runtime scaled by ``requested_nodes / nodes`` (perfect speedup) and
``Fmax / f`` (fully CPU-bound), and the power is the P-state's full-load
power; a rigid replay therefore reproduces the trace's runtimes exactly.

Overruns (``RunConfig.overrun``): with ``"kill"`` a job whose runtime
exceeds its time limit plus ``kill_grace_s`` ends at that point with status
``killed``; with ``"let-run"`` it completes.

Network contention (hybrid MPI+OpenMP jobs)
-------------------------------------------
When the platform has a topology (leaf switches of ``nodes_per_switch``
nodes) and the ground truth has communicating jobs
(``truth.communicates``), the engine allocates concrete node ids (lowest
free ids first, so jobs stay compact) and tracks which communicating jobs
use each leaf switch. A job's *background* traffic is the message rate of
the other communicating jobs on its busiest switch (per-node rate times
their nodes on that switch). Whenever a communicating job starts or ends,
every running communicating job sharing a switch with it is re-evaluated:
the fraction of work done at the old speed is banked
(``done += dt / T_old``) with its energy, the truth is asked for the new
runtime and power given the new background, and the job's end moves to
``now + (1 - done) * T_new`` (the earlier end event becomes stale). Without
a topology no job slows another, so rigid replays reproduce the trace.

Every submitted job ends exactly once: ``completed``, ``killed`` or
``rejected`` (with a reason: larger than every node type, or never started
by the policy when nothing else could happen).
"""

from __future__ import annotations

import gc
import heapq
import logging
import math
import sys
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Generator
from itertools import chain
from operator import attrgetter
from types import MethodType
from typing import Any, cast

import numpy as np
import pandas as pd
import simpy

from energysched.errors import ConfigError
from policies.base import (
    ClusterView,
    Decision,
    Policy,
    QueuedJob,
    ReleaseOrder,
    RunningJob,
    get_policy_tags,
    validate_decision,
)
from simulator.config import RunConfig, policy_settings
from simulator.platform import Platform
from simulator.results import RunResult, build_result
from workloads.runs import RunBatch, RunRows
from workloads.truth import TruthTags, get_truth_tags

log = logging.getLogger(__name__)

# Calendar event kinds (ends first at equal times: they free nodes).
_END = 0
_SHUTDOWN_DONE = 1
_BOOT_DONE = 2
_IDLE_CHECK = 3

STATUS_PENDING = 0
STATUS_COMPLETED = 1
STATUS_KILLED = 2
STATUS_REJECTED = 3
STATUS_NAMES = {
    STATUS_PENDING: "pending",
    STATUS_COMPLETED: "completed",
    STATUS_KILLED: "killed",
    STATUS_REJECTED: "rejected",
}

_job_index = attrgetter("index")


class _Run:
    """A started job (engine side).

    ``cutoff`` is the runtime at which the overrun rule kills the job (inf:
    never). Progress is tracked so that a job's speed may change while it runs
    (network contention): ``done`` is the fraction of its work finished at
    ``t_last``, ``full_runtime`` the runtime at the current speed, and
    ``energy_acc`` the energy up to ``t_last``. ``end_seq`` identifies the
    job's current end event; older end events in the calendar are stale.
    """

    __slots__ = (
        "comm",
        "cutoff",
        "done",
        "end_s",
        "end_seq",
        "energy_acc",
        "full_runtime",
        "job",
        "msg_rate",
        "node_ids",
        "power_w",
        "running",
        "start_s",
        "status",
        "switches",
        "t_last",
        "view",
    )

    def __init__(self, job: QueuedJob, view: RunningJob, cutoff: float) -> None:
        self.job = job
        self.view = view
        self.start_s = 0.0
        self.end_s = 0.0
        self.power_w = 0.0
        self.status = STATUS_COMPLETED
        self.running = False
        self.cutoff = cutoff
        self.done = 0.0
        self.t_last = 0.0
        self.full_runtime = 0.0
        self.energy_acc = 0.0
        self.end_seq = 0
        self.comm = False
        self.msg_rate = 0.0
        self.node_ids: list[int] | None = None
        self.switches: dict[int, int] | None = None


class _TypeState:
    """Node-state counts of one node type."""

    __slots__ = (
        "boot_power_w",
        "booting",
        "busy",
        "held",
        "idle_chunks",
        "idle_on",
        "idle_power_w",
        "ntype",
        "off",
        "off_power_w",
        "shutdown_power_w",
        "shutting",
    )

    def __init__(self, ntype: Any) -> None:
        self.ntype = ntype
        self.idle_on = ntype.count
        self.busy = 0
        self.held = 0
        self.off = 0
        self.booting = 0
        self.shutting = 0
        self.idle_power_w = ntype.idle_power_w
        self.off_power_w = ntype.off_power_w
        self.boot_power_w = ntype.boot_power_w
        self.shutdown_power_w = ntype.shutdown_power_w
        # (idle_since_s, count) chunks, oldest first; only kept with power management.
        self.idle_chunks: deque[list[float]] = deque()


class _JobFeed:
    """The trace's jobs in submit order, made into :class:`QueuedJob` records a
    block at a time as the replay reaches them: a record lives from shortly
    before its job's submission until its job ends (nothing keeps it then), not
    for the whole replay (CEA-Curie: 296k records of about 280 bytes each).

    ``block(k)`` returns the records of the jobs ``k, k + 1, ...`` (in submit
    order) up to the end of a block of :attr:`BLOCK` jobs; an empty list past
    the last job. ``order``: the trace rows in submit order; ``columns``: the
    records' attribute values, in trace order."""

    #: jobs per block of records
    BLOCK = 4096

    def __init__(self, order: np.ndarray, columns: list[np.ndarray]) -> None:
        self.order = order
        self.columns = columns
        self.n = len(order)

    def block(self, first: int) -> list[QueuedJob]:
        rows = self.order[first : first + self.BLOCK]
        return list(
            map(QueuedJob, rows.tolist(), *(column[rows].tolist() for column in self.columns))
        )


def _jobs_from_trace(
    trace: Any, platform: Platform, truth: Any
) -> tuple[_JobFeed, np.ndarray, list[str | None], dict[str, np.ndarray]]:
    """The jobs in submit order (as QueuedJob records, made as the replay needs
    them), the recorded runtimes, the rejection reasons and the jobs' static
    columns (trace order, the values of the records' attributes)."""
    jobs_df: pd.DataFrame = trace.jobs if hasattr(trace, "jobs") else trace
    n = len(jobs_df)
    for col in ("job_id", "submit_s", "runtime_s"):
        if col not in jobs_df:
            raise ConfigError(f"trace.{col}", "column missing from the jobs table")
    if "procs" in jobs_df:
        procs = jobs_df["procs"].to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        alloc = (
            jobs_df["procs_alloc"].to_numpy(dtype=np.float64, na_value=np.nan)
            if "procs_alloc" in jobs_df
            else np.full(n, np.nan)
        )
        req = (
            jobs_df["procs_req"].to_numpy(dtype=np.float64, na_value=np.nan)
            if "procs_req" in jobs_df
            else np.full(n, np.nan)
        )
        procs = np.where(np.isfinite(alloc), alloc, req)
    submit = jobs_df["submit_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    runtime = jobs_df["runtime_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    time_req = (
        jobs_df["time_req_s"].to_numpy(dtype=np.float64, na_value=np.nan)
        if "time_req_s" in jobs_df
        else np.full(n, np.nan)
    )
    job_id = jobs_df["job_id"].to_numpy(dtype=np.float64, na_value=-1).astype(np.int64)
    user = (
        jobs_df["user_id"].to_numpy(dtype=np.float64, na_value=-1).astype(np.int64)
        if "user_id" in jobs_df
        else np.full(n, -1)
    )
    if truth is not None:
        app = np.asarray(truth.application, dtype=np.int64)
        if len(app) != n:
            raise ConfigError("truth", f"ground truth covers {len(app)} jobs but the trace has {n}")
    elif "application" in jobs_df:
        app = jobs_df["application"].to_numpy(dtype=np.float64, na_value=-1).astype(np.int64)
    else:
        app = np.full(n, -1, dtype=np.int64)
    bad = (
        ~(np.isfinite(submit) & np.isfinite(runtime) & np.isfinite(procs))
        | (runtime < 0)
        | (procs < 1)
    )
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ConfigError(
            "trace",
            f"{int(bad.sum())} jobs lack a submit time, runtime or processor count (first: job {job_id[first]}); "
            "clean the trace first (workloads.clean_trace)",
        )
    order = np.argsort(submit, kind="stable")
    types = platform.node_types
    # Node type: the first whose node count can hold the job; nodes = ceil(procs / cores).
    procs_i = procs.astype(np.int64)
    t_index = np.full(n, -1, dtype=np.int64)
    nodes = np.zeros(n, dtype=np.int64)
    for k in range(len(types) - 1, -1, -1):  # reversed, so the first fitting type wins
        need = -(-procs_i // types[k].cores_per_node)
        fits = need <= types[k].count
        t_index = np.where(fits, k, t_index)
        nodes = np.where(fits, need, nodes)
    unfit = t_index < 0
    nodes = np.maximum(1, np.where(unfit, -(-procs_i // types[0].cores_per_node), nodes))
    has_req = np.isfinite(time_req) & (time_req > 0)
    estimate = np.where(has_req, time_req, runtime)
    estimate = np.where(estimate > 0, estimate, 1.0)
    requested = np.where(has_req, time_req, np.nan)
    reasons: list[str | None] = [None] * n
    for i in np.flatnonzero(unfit).tolist():
        reasons[i] = f"needs {int(procs_i[i])} processors, more than any node type provides"
    # QueuedJob's arguments after the row index, in order
    feed = _JobFeed(
        order,
        [
            job_id,
            submit,
            procs_i,
            nodes,
            requested,
            estimate,
            app,
            user,
            np.maximum(t_index, 0),
        ],
    )
    # the same values in trace order (the jobs table's static columns)
    columns = {
        "job_id": job_id,
        "submit_s": submit,
        "requested_procs": procs_i,
        "requested_nodes": nodes,
        "requested_time_s": requested,
        "application": app,
        "user_id": user,
    }
    return feed, runtime, reasons, columns


def _run_row(run: _Run, measured: tuple[Any, ...]) -> tuple[Any, ...]:
    """A finished run's :class:`~workloads.runs.RunRows` row (``RUN_ROW_COLUMNS``
    order) from what the truth measured of it (``measure_row_values``: the
    application, then ``MEASUREMENT_COLUMNS``)."""
    job = run.job
    return (
        job.job_id,
        measured[0],
        job.submit_s,
        *measured[1:],
        job.requested_nodes,
        job.requested_time_s,
        run.status == STATUS_KILLED,
    )


def _by_node_type(runs: list[_Run]) -> Any:
    """``(node type index, runs)`` groups of (at least one) runs, in order of first
    appearance (one group in the usual case); for finished runs, the order
    measurements draw in."""
    t0 = runs[0].view.node_type
    for r in runs:
        if r.view.node_type != t0:
            break
    else:
        return ((t0, runs),)
    by_type: dict[int, list[_Run]] = {}
    for r in runs:
        by_type.setdefault(r.view.node_type, []).append(r)
    return by_type.items()


def simulate(
    trace: Any,
    platform: Platform,
    policy: Policy,
    config: RunConfig | None = None,
    truth: Any = None,
    *,
    observations: Any = None,
) -> RunResult:
    """Replay ``trace`` on ``platform`` under ``policy``; return the :class:`RunResult`.

    Args:
        trace: a :class:`workloads.Trace` (cleaned: every job has a submit
            time, runtime and processor count) or a jobs DataFrame.
        platform: the cluster.
        policy: a :class:`policies.base.Policy`.
        config: engine knobs (:class:`RunConfig`); defaults when ``None``.
        truth: optional ground truth (:class:`workloads.truth.GroundTruth`).
        observations: initial observations handed to ``policy.setup``
            (e.g. the benchmark suite for LBM).

    The objects that exist when the replay starts (the trace, the ground
    truth, fitted predictors) are frozen for the garbage collector during
    the replay (``gc.freeze``; skipped when the caller froze objects
    already): a full collection would otherwise walk them all again (0.63 ->
    0.21 s of collections in the 9 s learning replay of SDSC-SP2 in
    ``benchmarks/bench_policies.py``). In the same case the youngest
    generation's threshold is raised to :data:`GC_YOUNG_THRESHOLD` during the
    replay, and when it ends what it kept (the results, the policy's learned
    state) joins the oldest generation with the frozen objects without being
    walked (``gc.freeze`` then ``gc.unfreeze``; the threshold is restored).
    The young generation is collected each time that many more objects are
    alive than at the last collection, and what a learning replay keeps
    grows all along (the predictors' runs and tables) while it makes no
    garbage that only the collector can free (on CTC-SP2 its collections
    freed nothing): a collection only walks survivors. At 700 objects
    (Python's default) that cost 0.55 s of CPU time in the whole CTC-SP2
    replay of that benchmark (35 young and 3 middle collections); at
    100,000, 0.27 s (3 young collections, and a fourth over the young
    survivors once the threshold was restored); at 1,000,000, with the
    survivors promoted at the end, none (CTC-SP2's replay keeps about
    390,000 objects; the same peak memory). A policy that makes reference
    cycles keeps its garbage until a million more objects are alive (after
    the replay: until the next full collection); the built-in policies and
    predictors make none, and the engine breaks the one SimPy's environment
    makes (:func:`_unbind_environment`), so a dropped replay is freed by
    reference counting (``tests/simulator/test_replay_garbage.py``).
    """
    config = config or RunConfig()
    config = config.with_policy_settings(
        policy_settings(policy), getattr(policy, "name", type(policy).__name__)
    )
    freeze = gc.isenabled() and gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
        thresholds = gc.get_threshold()
        gc.set_threshold(max(thresholds[0], GC_YOUNG_THRESHOLD), *thresholds[1:])
    try:
        engine = _Engine(trace, platform, policy, config, truth, observations)
        return engine.run()
    finally:
        if freeze:
            gc.freeze()  # what the replay kept joins the frozen objects, unwalked,
            gc.unfreeze()  # and all of them the oldest generation
            gc.set_threshold(*thresholds)


def _unbind_environment(env: simpy.Environment) -> None:
    """Drop the methods a SimPy :class:`~simpy.Environment` binds to itself when made
    (``env.process``, ``env.timeout``, ...: ``BoundClass.bind_early``, a reference
    cycle), so that reference counting frees the environment when the replay ends,
    not the garbage collector; its class binds them again if they are used."""
    for name, value in list(vars(env).items()):
        if isinstance(value, MethodType) and value.__self__ is env:
            delattr(env, name)


#: Rows of the power timeline kept as tuples before they move into its float64 buffer.
TIMELINE_BLOCK_ROWS = 4096

#: Youngest-generation threshold of the garbage collector during :func:`simulate`
#: (Python's default is 700 allocations).
GC_YOUNG_THRESHOLD = 1_000_000


def _float_column(n: int, fill: float = math.nan) -> memoryview[float]:
    """``n`` float64 values set to ``fill``, written item by item through the
    returned memoryview (``np.frombuffer`` reads them without a copy)."""
    # (a view of an array("d") holds floats; its type does not say so)
    return cast("memoryview[float]", memoryview(array("d", [fill]) * n))


class _Engine:
    def __init__(
        self,
        trace: Any,
        platform: Platform,
        policy: Policy,
        config: RunConfig,
        truth: Any,
        observations: Any,
    ) -> None:
        self.trace = trace
        self.platform = platform
        self.policy = policy
        self.config = config
        self.truth = truth
        self.rng = np.random.default_rng(config.seed)
        self.feed, self.recorded_runtime, self.reasons, self.job_columns = _jobs_from_trace(
            trace, platform, truth
        )
        n = len(self.recorded_runtime)
        # -- honest flag: jobs without a requested time are planned with their exact runtime
        # (an oracle estimate); counted for the run's summary, warned about once per run.
        self.jobs_without_request = int(np.isnan(self.job_columns["requested_time_s"]).sum())
        if self.jobs_without_request:
            log.warning(
                "%d of %d jobs have no requested time: the engine plans them with their exact "
                "runtime (an oracle estimate that favours request-driven policies such as EASY)",
                self.jobs_without_request,
                n,
            )
        self.n = n
        # Per-job outputs, by trace row; build_result makes them the jobs table's
        # columns. Small integers as Python lists (the cheapest item writes; the
        # ints are shared objects), floats as float64 buffers written through a
        # memoryview (a third of a numpy item write; a list would keep a 24-byte
        # float object per value for the whole replay).
        self.start_s = _float_column(n)
        self.end_s = _float_column(n)
        self.nodes: list[int] = [0] * n
        self.cores: list[int] = [0] * n
        self.freq = _float_column(n)
        self.node_type: list[int] = [-1] * n
        self.energy = _float_column(n, 0.0)
        self.power = _float_column(n)
        self.status: list[int] = [0] * n
        self.time_limit = _float_column(n)
        self.planned = _float_column(n)
        self.pred_energy = _float_column(n)
        self.pred_power = _float_column(n)
        self.pred_runtime = _float_column(n)
        self.types = [_TypeState(t) for t in platform.node_types]
        # per node type, the running jobs in release order (ClusterView.releases);
        # their ``jobs`` lists, by planned end, are ClusterView.running
        self.releases = [ReleaseOrder() for _ in platform.node_types]
        self.running: list[list[RunningJob]] = [r.jobs for r in self.releases]
        self.queue: list[QueuedJob] = []
        # the queue keeps submission order; when that is trace order too, a started
        # job is found in it by bisection (list.remove compares it with every job
        # in front of it: slow on long queues)
        self.queue_by_index = bool(np.all(self.feed.order[1:] > self.feed.order[:-1]))
        self.queued_ids: set[int] = set()
        self.calendar: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.busy_power_w = 0.0
        self.energy_busy = 0.0
        self.energy_idle = 0.0
        self.energy_off = 0.0
        self.energy_switching = 0.0
        self.busy_node_s = 0.0
        # the power timeline: (time, busy, idle, off, switching) rows, all but the
        # last TIMELINE_BLOCK_ROWS or fewer moved into one float64 buffer, flat
        # (timeline_rows() makes it the table without a copy)
        self.timeline: list[tuple[float, float, float, float, float]] = []
        self.timeline_values = array("d")
        self.power_cap_tolerance_w = config.power_cap_w * (1 + 1e-12)
        # the overrun rule: a job is killed this long after its time limit (inf: never)
        self.kill_grace_s = config.kill_grace_s if config.overrun == "kill" else math.inf
        self.record_timeline = bool(config.record_power)
        self.cap_violations = 0
        self.ended = 0
        self.pending_runs: list[_Run] = []
        self.policy_calls = 0
        self.pm = config.idle_timeout_s is not None
        self._observations = observations
        self.progress: Any = None
        self.t0 = 0.0
        self.t_end = 0.0
        self.idle_power_w = self.off_power_w = self.switching_power_w = 0.0
        self.states_dirty = True
        self.freq_sets = [frozenset(t.freqs_ghz) for t in platform.node_types]
        self.single_type = len(platform.node_types) == 1
        #: ClusterView.shutting_nodes without power management: nodes never switch
        self.no_shutting = [0] * len(platform.node_types)
        self.view = ClusterView(
            0.0,
            platform,
            self.queue,
            [],
            [],
            self.running,
            0.0,
            config.power_cap_w,
            releases=self.releases,
        )
        truth_tags = get_truth_tags(truth) if truth is not None else TruthTags()
        self.scalar_truth = truth.evaluate_one if truth_tags.evaluate_one else None
        communicates = getattr(truth, "communicates", None) if truth is not None else None
        self.contention = bool(
            platform.topology is not None
            and platform.nodes_per_switch
            and communicates is not None
            and np.any(communicates)
        )
        self.reevaluations = 0
        self.truth_tags = truth_tags
        # what the policy declares is read once it is set up (see _read_policy_tags)
        self.learns = self.observe_rows = self.measure_rows = False
        self.measurers: list[Any] | None = None
        if self.contention:
            self.communicates = np.asarray(communicates, dtype=bool)
            self.nodes_per_switch = int(platform.nodes_per_switch)  # type: ignore[arg-type]
            offset = 0
            self.free_ids: list[list[int]] = []
            for t in platform.node_types:
                self.free_ids.append(
                    list(range(offset, offset + t.count))
                )  # a heap: lowest ids first
                offset += t.count
            # per switch, its communicating runs in start order: a dict, not a set, so that
            # sums over them (the background message rate) do not depend on memory addresses
            self.switch_jobs: dict[int, dict[_Run, None]] = {}
        self.type_counts = [t.count for t in platform.node_types]

    # -- calendar -------------------------------------------------------------------------
    def _push(self, t: float, kind: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.calendar, (t, kind, self.seq, payload))

    # -- power ------------------------------------------------------------------------------
    def _refresh_category_powers(self) -> None:
        """Set ``idle_power_w``, ``off_power_w`` and ``switching_power_w`` (the platform's
        power in each category now); called when ``states_dirty`` (a node-state count
        changed since the last refresh)."""
        self.states_dirty = False
        idle = off = sw = 0.0
        for s in self.types:
            idle += (s.idle_on + s.held) * s.idle_power_w
            off += s.off * s.off_power_w
            sw += s.booting * s.boot_power_w + s.shutting * s.shutdown_power_w
        self.idle_power_w = idle
        self.off_power_w = off
        self.switching_power_w = sw

    # -- node allocation --------------------------------------------------------------------
    def _take_idle_chunks(self, s: _TypeState, count: int) -> None:
        """Power management: take ``count`` idle nodes from the chunks, most recently idled first."""
        chunks = s.idle_chunks
        while count > 0 and chunks:
            last = chunks[-1]
            if last[1] <= count:
                count -= int(last[1])
                chunks.pop()
            else:
                last[1] -= count
                count = 0

    def _idle_check(self, t_index: int, now: float) -> None:
        s = self.types[t_index]
        timeout = self.config.idle_timeout_s
        assert timeout is not None
        chunks = s.idle_chunks
        reserve = self.config.reserve_nodes
        switched = 0
        while chunks and chunks[0][0] + timeout <= now:
            allowed = s.idle_on - reserve
            if allowed <= 0:
                break
            chunk = chunks[0]
            k = int(min(chunk[1], allowed))
            chunk[1] -= k
            if chunk[1] <= 0:
                chunks.popleft()
            s.idle_on -= k
            switched += k
        if switched:
            self.states_dirty = True
            ntype = s.ntype
            if ntype.shutdown_time_s > 0:
                s.shutting += switched
                self._push(now + ntype.shutdown_time_s, _SHUTDOWN_DONE, (t_index, switched))
            else:
                s.off += switched

    # -- job lifecycle ------------------------------------------------------------------------
    def _start(self, decision: Decision, now: float) -> None:
        job = decision.job
        job.scratch = None  # the policy's per-job cache is no longer needed
        t_index = decision.node_type
        s = self.types[t_index]
        ntype = s.ntype
        nodes = int(decision.nodes)
        from_idle = min(nodes, s.idle_on)
        to_boot = nodes - from_idle
        s.idle_on -= from_idle
        self.states_dirty = True
        if self.pm:
            self._take_idle_chunks(s, from_idle)
        planned = (
            decision.planned_runtime_s if decision.planned_runtime_s is not None else job.estimate_s
        )
        boot_delay = ntype.boot_time_s if to_boot > 0 else 0.0
        limit = decision.time_limit_s  # the time limit, else the requested time (NaN: none)
        if limit is None:
            limit = job.requested_time_s
        begin = now + boot_delay
        view = RunningJob(
            job,
            t_index,
            nodes,
            decision.cores if decision.cores is not None else ntype.cores_per_node,
            float(decision.freq_ghz),
            begin,
            begin + planned,
            begin + limit if limit == limit else None,  # limit is not NaN
        )
        self.releases[t_index].add(view)
        run = _Run(job, view, limit + self.kill_grace_s if limit == limit else math.inf)
        if self.contention:
            heap = self.free_ids[t_index]
            ids = [heapq.heappop(heap) for _ in range(nodes)]
            run.node_ids = ids
            per_switch: dict[int, int] = {}
            for node_id in ids:
                sw = node_id // self.nodes_per_switch
                per_switch[sw] = per_switch.get(sw, 0) + 1
            run.switches = per_switch
        i = job.index
        self.nodes[i] = nodes
        self.cores[i] = view.cores
        self.freq[i] = view.freq_ghz
        self.node_type[i] = t_index
        self.planned[i] = planned
        self.time_limit[i] = limit
        if decision.predicted_energy_j is not None:
            self.pred_energy[i] = decision.predicted_energy_j
        if decision.predicted_power_w is not None:
            self.pred_power[i] = decision.predicted_power_w
        if decision.predicted_runtime_s is not None:
            self.pred_runtime[i] = decision.predicted_runtime_s
        if to_boot > 0:
            self.states_dirty = True
            s.off -= to_boot
            s.held += from_idle
            if ntype.boot_time_s > 0:
                s.booting += to_boot
                self._push(now + ntype.boot_time_s, _BOOT_DONE, (t_index, to_boot, run))
                return
            s.held -= from_idle
        self.pending_runs.append(run)

    def _begin_running(self, runs: list[_Run], now: float) -> None:
        """Evaluate runtimes/powers of the runs starting now (one batch) and schedule their ends."""
        types = self.platform.node_types
        truth = self.truth
        if truth is None:
            rec = self.recorded_runtime
            for r in runs:
                ntype = types[r.view.node_type]
                job = r.job
                f = r.view.freq_ghz
                runtime = float(rec[job.index])
                if r.view.nodes != job.requested_nodes:
                    runtime = runtime * job.requested_nodes / r.view.nodes
                fmax = ntype.pstates[-1].freq_ghz
                if f != fmax:
                    runtime = runtime * fmax / f
                    power = ntype.pstate(f).busy_power_w
                else:
                    power = ntype.pstates[-1].busy_power_w
                self._schedule_end(r, runtime, power, now)
            return
        rest: list[_Run] = []
        comm: list[_Run] = []
        scalar = self.scalar_truth
        for r in runs:
            if self.contention and self.communicates[r.job.index]:
                comm.append(r)
                continue
            v = r.view
            got = (
                scalar(r.job.index, types[v.node_type], v.nodes, v.freq_ghz, v.cores)
                if scalar
                else None
            )
            if got is None:
                rest.append(r)
            else:
                self._schedule_end(r, got[0], got[1], now)
        for t_index, group in _by_node_type(rest) if rest else ():
            idx = np.fromiter((r.job.index for r in group), dtype=np.int64, count=len(group))
            nodes = np.fromiter((r.view.nodes for r in group), dtype=np.int64, count=len(group))
            freq = np.fromiter((r.view.freq_ghz for r in group), dtype=np.float64, count=len(group))
            cores = np.fromiter((r.view.cores for r in group), dtype=np.int64, count=len(group))
            rt, pw = truth.evaluate(idx, types[t_index], nodes, freq, cores)
            for r, runtime, power in zip(group, rt.tolist(), pw.tolist()):
                self._schedule_end(r, runtime, power, now)
        for r in comm:
            self._start_communicating(r, now)

    # -- network contention (hybrid jobs on a platform with a topology) ----------------------
    def _background_rate(self, run: _Run) -> float:
        """Messages/s of the *other* communicating jobs on the busiest leaf switch the job uses."""
        worst = 0.0
        assert run.switches is not None
        for sw in run.switches:
            others = 0.0
            for other in self.switch_jobs.get(sw, ()):
                if other is not run:
                    others += other.switches[sw] * other.msg_rate  # type: ignore[index]
            if others > worst:
                worst = others
        return worst

    def _evaluate_comm(self, run: _Run) -> tuple[float, float]:
        v = run.view
        rt, pw = self.truth.evaluate(
            np.array([run.job.index]),
            self.platform.node_types[v.node_type],
            np.array([v.nodes]),
            np.array([v.freq_ghz]),
            np.array([v.cores]),
            background_msg_rate=np.array([self._background_rate(run)]),
        )
        return float(rt[0]), float(pw[0])

    def _start_communicating(self, run: _Run, now: float) -> None:
        v = run.view
        run.comm = True
        run.msg_rate = float(
            self.truth.message_rate(
                np.array([run.job.index]),
                self.platform.node_types[v.node_type],
                np.array([v.nodes]),
                np.array([v.freq_ghz]),
                np.array([v.cores]),
            )[0]
        )
        assert run.switches is not None
        for sw in run.switches:
            self.switch_jobs.setdefault(sw, {})[run] = None
        runtime, power = self._evaluate_comm(run)
        self._schedule_end(run, runtime, power, now)
        self._reevaluate_neighbours(run, now)

    def _reevaluate_neighbours(self, run: _Run, now: float) -> None:
        """Re-evaluate the running communicating jobs that share a switch with ``run``."""
        assert run.switches is not None
        affected: set[_Run] = set()
        for sw in run.switches:
            affected.update(self.switch_jobs.get(sw, ()))
        affected.discard(run)
        for other in sorted(affected, key=lambda r: r.job.index):  # deterministic order
            if other.running:
                self._reevaluate(other, now)

    def _reevaluate(self, run: _Run, now: float) -> None:
        """Bank the progress and energy made at the old speed, then continue at the new one."""
        dt = now - run.t_last
        if dt > 0:
            run.done += dt / run.full_runtime if run.full_runtime > 0 else 1.0
            run.energy_acc += run.view.nodes * run.power_w * dt
            run.t_last = now
        runtime, power = self._evaluate_comm(run)
        self.busy_power_w += run.view.nodes * (power - run.power_w)
        run.power_w = power
        run.full_runtime = runtime
        self.reevaluations += 1
        self._set_end(run, now + max(0.0, 1.0 - run.done) * runtime)

    def _schedule_end(self, run: _Run, runtime: float, power: float, now: float) -> None:
        run.start_s = now
        run.t_last = now
        run.full_runtime = runtime
        run.power_w = power
        run.running = True
        self.types[run.view.node_type].busy += run.view.nodes
        self.busy_power_w += power * run.view.nodes
        self._set_end(run, now + runtime)

    def _set_end(self, run: _Run, natural_end: float) -> None:
        """(Re)schedule the job's end: its natural end, or the kill at its time limit."""
        kill_end = run.start_s + run.cutoff
        if natural_end > kill_end:
            run.end_s = kill_end
            run.status = STATUS_KILLED
        else:
            run.end_s = natural_end
            run.status = STATUS_COMPLETED
        self.seq += 1
        run.end_seq = self.seq
        heapq.heappush(self.calendar, (run.end_s, _END, self.seq, run))

    def _finish(self, run: _Run, now: float) -> None:
        job = run.job
        i = job.index
        nodes = run.view.nodes
        runtime = run.end_s - run.start_s
        self.start_s[i] = run.start_s
        self.end_s[i] = run.end_s
        energy = run.energy_acc + nodes * run.power_w * (run.end_s - run.t_last)
        self.energy[i] = energy
        # mean power per node over the run (constant unless contention changed it)
        self.power[i] = energy / (nodes * runtime) if runtime > 0 else run.power_w
        self.status[i] = run.status
        run.running = False
        self.busy_node_s += nodes * runtime
        self.busy_power_w -= run.power_w * nodes
        t_index = run.view.node_type
        s = self.types[t_index]
        s.busy -= nodes
        self.releases[t_index].remove(run.view)
        s.idle_on += nodes
        self.states_dirty = True
        if self.pm:
            s.idle_chunks.append([now, nodes])
            self._push(now + self.config.idle_timeout_s, _IDLE_CHECK, t_index)  # type: ignore[operator]
        if run.node_ids is not None:
            heap = self.free_ids[t_index]
            for node_id in run.node_ids:
                heapq.heappush(heap, node_id)
        if run.comm:
            assert run.switches is not None
            for sw in run.switches:
                self.switch_jobs[sw].pop(run, None)
            self._reevaluate_neighbours(run, now)
        self.ended += 1

    def _read_policy_tags(self) -> None:
        """What the set-up policy declares (:class:`~policies.base.PolicyTags`), combined
        with the truth's tags into the hand-over :meth:`_observe` uses."""
        tags = get_policy_tags(self.policy)
        truth = self.truth_tags
        self.learns = tags.learns
        self.observe_rows = tags.observe_rows
        self.measure_rows = tags.observe_rows and truth.measure_columns and truth.measure_rows
        # per node type, the truth's function that measures a run finishing alone
        # (made on first use); None: measure_row_values measures every batch
        self.measurers = (
            [None] * len(self.types) if self.measure_rows and truth.row_measurer else None
        )

    def _timeline_to_block(self) -> None:
        """Move the timeline's rows but the last (which the next batch may replace)
        into its float64 buffer: 40 bytes a row instead of a tuple of floats (about 180)."""
        rows = self.timeline
        self.timeline_values.extend(chain.from_iterable(rows[:-1]))
        del rows[:-1]

    def timeline_rows(self) -> np.ndarray:
        """The power timeline as a ``(rows, 5)`` float64 array: time, busy, idle, off
        and switching power, moved out of the engine (the buffer itself, not a copy:
        the table is built at the replay's peak memory; a second call has no rows)."""
        values = self.timeline_values
        values.extend(chain.from_iterable(self.timeline))
        self.timeline_values = array("d")
        self.timeline = []
        return np.frombuffer(values, dtype=np.float64).reshape(-1, 5)

    # -- main loop ------------------------------------------------------------------------------
    def run(self) -> RunResult:
        self.policy.setup(
            self.platform, self.rng, observations=self._observations, truth=self.truth
        )
        self._read_policy_tags()
        progress = None
        if self.config.progress and sys.stderr.isatty():
            from tqdm import tqdm

            progress = tqdm(total=self.n, unit="job", desc="replay", mininterval=0.5)
        self.progress = progress
        if self.n == 0:
            return build_result(self)
        env = simpy.Environment()
        env.process(self._loop(env))
        try:
            env.run()
        finally:
            _unbind_environment(env)
        if progress is not None:
            progress.update(self.ended - progress.n)
            progress.close()
        return build_result(self)

    def _loop(self, env: simpy.Environment) -> Generator[simpy.Event, Any, None]:
        feed = self.feed
        n_jobs = feed.n
        # the records of the next jobs to submit: block[pos] is the next one
        block = feed.block(0)
        pos = 0
        next_submit = 0  # jobs submitted so far
        calendar = self.calendar
        heappop = heapq.heappop
        learns = self.learns
        now = block[0].submit_s if block else 0.0
        self.t0 = now
        inf = math.inf
        report_every = max(1, n_jobs // 200)
        next_report = report_every
        progress = self.progress
        reasons = self.reasons
        queued_ids = self.queued_ids  # (self.queue may be replaced by _schedule: not kept)
        finish = self._finish
        timeline = self.timeline if self.record_timeline else None
        cap_w = self.power_cap_tolerance_w
        # energy per category, integrated exactly: E += P * dt between batches
        e_busy = e_idle = e_off = e_sw = 0.0
        t_sub = block[0].submit_s if block else inf  # the next submission
        while True:
            # The power after the batch (on the first pass: all nodes idle), constant
            # until the next one; a timeline row if it changed.
            if self.states_dirty:
                self._refresh_category_powers()
            busy = self.busy_power_w
            idle = self.idle_power_w
            off = self.off_power_w
            sw = self.switching_power_w
            if timeline is not None:
                row = (now, busy, idle, off, sw)
                last = timeline[-1] if timeline else None
                if last is None:
                    timeline.append(row)
                elif last[0] == now:
                    timeline[-1] = row
                elif last[1] != busy or last[2] != idle or last[3] != off or last[4] != sw:
                    timeline.append(row)
                    if len(timeline) > TIMELINE_BLOCK_ROWS:
                        self._timeline_to_block()
            if busy + idle + off + sw > cap_w:
                self.cap_violations += 1
            if self.ended >= n_jobs:
                break  # the energy window ends when the last job leaves the system
            t_cal = calendar[0][0] if calendar else inf
            t_next = t_sub if t_sub < t_cal else t_cal
            if t_next == inf:
                break
            if t_next > now:
                dt = t_next - now
                yield env.timeout(dt)
                e_busy += busy * dt
                e_idle += idle * dt
                e_off += off * dt
                e_sw += sw * dt
                now = t_next
            changed = False
            finished: list[_Run] = []
            while calendar and calendar[0][0] <= now:
                _, kind, seq, payload = heappop(calendar)
                if kind == _END:
                    if payload.end_seq != seq:
                        continue  # superseded by a re-evaluation (contention)
                    finish(payload, now)
                    finished.append(payload)
                    changed = True
                elif kind == _SHUTDOWN_DONE:
                    t_index, count = payload
                    s = self.types[t_index]
                    s.shutting -= count
                    s.off += count
                    self.states_dirty = True
                    changed = True
                elif kind == _BOOT_DONE:
                    t_index, count, run = payload
                    s = self.types[t_index]
                    s.booting -= count
                    s.held -= run.view.nodes - count
                    self.states_dirty = True
                    self.pending_runs.append(run)  # begins running after the scheduling
                else:  # _IDLE_CHECK
                    self._idle_check(payload, now)
            if t_sub <= now:
                while block and block[pos].submit_s <= now:
                    job = block[pos]
                    pos += 1
                    next_submit += 1
                    if pos == len(block):
                        block = feed.block(next_submit)
                        pos = 0
                    if reasons[job.index] is not None:
                        self.status[job.index] = STATUS_REJECTED
                        self.ended += 1
                        continue
                    self.queue.append(job)
                    queued_ids.add(job.index)
                    changed = True
                t_sub = block[pos].submit_s if block else inf
            if finished and learns:
                self._observe(finished)
            if changed and self.queue:
                self._schedule(now)
            if self.pending_runs:
                runs = self.pending_runs
                self.pending_runs = []
                self._begin_running(runs, now)
            if progress is not None and self.ended >= next_report:
                progress.update(self.ended - progress.n)
                next_report = self.ended + report_every
            if not calendar and next_submit >= n_jobs and self.queue:
                self._reject_stuck()
        self.t_end = now
        self.energy_busy = e_busy
        self.energy_idle = e_idle
        self.energy_off = e_off
        self.energy_switching = e_sw

    def _reject_stuck(self) -> None:
        """Nothing can happen any more but jobs wait: the policy never starts them."""
        log.warning(
            "%d jobs were never started by the policy; marking them rejected", len(self.queue)
        )
        for job in self.queue:
            self.status[job.index] = STATUS_REJECTED
            self.reasons[job.index] = (
                "never started by the policy (no event left that could change its decision)"
            )
            self.ended += 1
        self.queue.clear()
        self.queued_ids.clear()

    def _schedule(self, now: float) -> None:
        types = self.types
        if self.single_type:
            s0 = types[0]
            free = [s0.idle_on + s0.off]
            if not free[0]:
                return  # no decision can start a job (each needs >= 1 free node): skip the call
            idle_on = [s0.idle_on]
        else:
            free = [s.idle_on + s.off for s in types]
            if not any(free):
                return
            idle_on = [s.idle_on for s in types]
        if self.states_dirty:
            self._refresh_category_powers()
        # One view object, refreshed per call (policies must not keep it between calls).
        view = self.view
        view.now_s = now
        view.queue = self.queue
        view.free_nodes = free
        view.idle_on_nodes = idle_on
        view.shutting_nodes = [s.shutting for s in types] if self.pm else self.no_shutting
        view.power_w = (
            self.busy_power_w + self.idle_power_w + self.off_power_w + self.switching_power_w
        )
        for order in self.releases:  # the jobs that outlived their plans since the last call
            order.advance(now)
        self.policy_calls += 1
        decisions = self.policy.schedule(view)
        if not decisions:
            return
        if self.single_type:
            s0 = types[0]
            free = view.free_nodes = [s0.idle_on + s0.off]
        else:
            free = view.free_nodes = [s.idle_on + s.off for s in types]
        queued_ids = self.queued_ids
        platform = self.platform
        freq_sets = self.freq_sets
        n_types = len(free)
        for d in decisions:
            # Fast path for well-formed decisions; anything unusual gets the full
            # check, which raises PolicyError naming the job and the limit.
            t = d.node_type
            if not (
                d.__class__ is Decision
                and d.job.index in queued_ids
                and t.__class__ is int
                and 0 <= t < n_types
                and d.nodes.__class__ is int
                and 1 <= d.nodes <= free[t]
                and d.freq_ghz in freq_sets[t]
                and d.cores is None
                and (d.planned_runtime_s is None or 0 < d.planned_runtime_s < math.inf)
                and (d.time_limit_s is None or 0 < d.time_limit_s < math.inf)
            ):
                validate_decision(d, platform, free, queued_ids)
            free[t] -= d.nodes
            queued_ids.discard(d.job.index)
            self._start(d, now)
        queue = self.queue
        k = len(decisions)
        if k == 1:
            if queue[0] is decisions[0].job:
                del queue[0]  # the head started (the common case)
            else:
                self._unqueue(decisions[0].job)
        elif all(queue[i].index not in queued_ids for i in range(min(k, len(queue)))):
            del queue[:k]  # the started jobs were the head of the queue (the common case)
        elif k <= 8:
            for d in decisions:
                self._unqueue(d.job)  # cheaper than rebuilding the queue for a few jobs
        else:
            self.queue = [j for j in queue if j.index in queued_ids]

    def _unqueue(self, job: QueuedJob) -> None:
        """Take a started job out of the queue (found by bisection when the queue
        is in trace order, else by a C-level scan)."""
        queue = self.queue
        if self.queue_by_index:
            i = bisect_left(queue, job.index, key=_job_index)
            if i < len(queue) and queue[i] is job:
                del queue[i]
                return
        queue.remove(job)

    def _observe(self, finished: list[_Run]) -> None:
        """Measure the finished runs and hand them to ``policy.observe``.

        A policy that declares ``observe_rows`` (:class:`~policies.base.PolicyTags`)
        receives a :class:`~workloads.runs.RunRows` when the truth can measure
        into rows (``measure_rows``, :class:`~workloads.truth.TruthTags`), else a
        :class:`~workloads.runs.RunBatch`; every other policy receives the same
        runs as a DataFrame (columns :data:`RUN_COLUMNS` + ``killed``).
        """
        truth = self.truth
        if truth is None:
            return
        if self.measure_rows:  # no arrays per run
            self.policy.observe(self._measured_rows(truth, finished))
            return
        groups = _by_node_type(finished)
        batches = []
        i64, f64 = np.int64, np.float64
        for t_index, group in groups:
            k = len(group)
            # one pass over the runs, then one array per column
            rows = [
                (
                    r.job.index,
                    r.view.nodes,
                    r.view.freq_ghz,
                    r.view.cores,
                    r.end_s - r.start_s,
                    r.power_w,
                    r.job.job_id,
                    r.job.submit_s,
                    r.job.requested_nodes,
                    r.job.requested_time_s,
                    r.status == STATUS_KILLED,
                )
                for r in group
            ]
            col = list(zip(*rows))
            args = (
                np.array(col[0], dtype=i64),
                self.platform.node_types[t_index],
                np.array(col[1], dtype=i64),
                np.array(col[2], dtype=f64),
                np.array(col[3], dtype=i64),
                np.array(col[4], dtype=f64),
                np.array(col[5], dtype=f64),
                self.rng,
            )
            if self.truth_tags.measure_columns:
                cols = truth.measure(*args, as_columns=True)
            else:
                frame = truth.measure(*args)
                cols = {str(c): frame[c].to_numpy() for c in frame.columns}
            cols["job_id"] = np.array(col[6], dtype=i64)
            cols["submit_s"] = np.array(col[7], dtype=f64)
            cols["requested_nodes"] = np.array(col[8], dtype=i64)
            cols["requested_time_s"] = np.array(col[9], dtype=f64)
            cols["killed"] = np.array(col[10], dtype=bool)
            batches.append(RunBatch(cols, k))
        runs = RunBatch.concat(batches)
        self.policy.observe(runs if self.observe_rows else runs.to_frame())

    def _measured_rows(self, truth: Any, finished: list[_Run]) -> Any:
        """The finished runs measured by ``truth`` as a :class:`~workloads.runs.RunRows`:
        the same runs, order, values and draws as the column path of :meth:`_observe`
        (grouped by node type), without a dozen one-element arrays per run. A run
        that finishes alone is measured by the truth's ``row_measurer`` of its node
        type when it declares one (made on first use, kept for the replay), else by
        ``measure_row_values`` like a batch."""
        node_types = self.platform.node_types
        if len(finished) == 1:  # the usual hand-over: one run (no grouping, no lists to fill)
            r = finished[0]
            v = r.view
            measurers = self.measurers
            if measurers is not None:
                t_index = v.node_type
                measure = measurers[t_index]
                if measure is None:
                    measure = measurers[t_index] = truth.row_measurer(node_types[t_index], self.rng)
                measured = measure(
                    r.job.index, v.nodes, v.freq_ghz, v.cores, r.end_s - r.start_s, r.power_w
                )
                return RunRows([_run_row(r, measured)])
            (measured,) = truth.measure_row_values(
                [r.job.index],
                node_types[v.node_type],
                [v.nodes],
                [v.freq_ghz],
                [v.cores],
                [r.end_s - r.start_s],
                [r.power_w],
                self.rng,
            )
            return RunRows([_run_row(r, measured)])
        rows: list[tuple[Any, ...]] = []
        for t_index, group in _by_node_type(finished):
            index: list[int] = []
            nodes: list[int] = []
            freq: list[float] = []
            cores: list[int] = []
            runtime: list[float] = []
            power: list[float] = []
            for r in group:
                v = r.view
                index.append(r.job.index)
                nodes.append(v.nodes)
                freq.append(v.freq_ghz)
                cores.append(v.cores)
                runtime.append(r.end_s - r.start_s)
                power.append(r.power_w)
            measured = truth.measure_row_values(
                index, node_types[t_index], nodes, freq, cores, runtime, power, self.rng
            )
            rows.extend(map(_run_row, group, measured))
        return RunRows(rows)
