"""Sweeps: the cross product of an experiment becomes independent runs.

:func:`plan_runs` expands an :class:`~energysched.config.ExperimentSpec` into
:class:`RunTask` objects (traces x platforms x policies x their predictors x
seeds) with stable, readable run ids. :func:`run_sweep` executes the tasks
that are not finished yet on an executor (in-process, local processes, or a
Dask cluster), writing each run's directory as soon as it finishes (see
:mod:`energysched.store`). A failed run is recorded with its traceback and
the sweep goes on; running the same sweep again skips finished runs and
retries failed ones.

A task is a pure function of its fields: whichever executor runs it, the
numbers are the same.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from energysched.config import ExperimentSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunTask:
    """One run of a sweep: everything needed to execute it, JSON-serialisable.

    Attributes:
        run_id: stable id ``TRACE__PLATFORM__POLICY__PREDICTOR__sREPLICATE``.
        trace: trace label; ``trace_source`` the path/``builtin:`` name, or
            ``trace_synthetic`` the generator settings (``seed`` filled in).
        platform: platform label; ``platform_source`` ``"trace"`` or a path.
        policy: policy label; ``policy_spec`` and ``policy_params`` what the
            registry gets.
        predictor: predictor label (``None``: no predictor);
            ``predictor_spec``/``predictor_params`` what the registry gets.
        truth_preset, noise: ground truth (``None``: trace runtimes).
        engine: :class:`~simulator.config.RunConfig` fields (without ``seed``).
        replicate, seed: replicate index and its seed.
        max_jobs: replay only the first ``max_jobs`` jobs after cleaning.
    """

    run_id: str
    trace: str
    platform: str
    policy: str
    predictor: str | None
    replicate: int
    seed: int
    trace_source: str | None = None
    trace_synthetic: dict[str, Any] | None = None
    max_jobs: int | None = None
    platform_source: str = "trace"
    policy_spec: str = "easy"
    policy_params: dict[str, Any] = field(default_factory=dict)
    predictor_spec: str | None = None
    predictor_params: dict[str, Any] = field(default_factory=dict)
    truth_preset: str | None = None
    noise: float = 0.02
    engine: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (round-trips through :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunTask:
        return cls(**data)

    def config_hash(self) -> str:
        """SHA-256 (16 hex digits) of the task's canonical JSON: changes when any input changes."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+\-]", "-", text)


def make_run_id(
    trace: str, platform: str, policy: str, predictor: str | None, replicate: int
) -> str:
    """``TRACE__PLATFORM__POLICY__PREDICTOR__sREPLICATE`` (``none`` for no predictor)."""
    parts = [trace, platform, policy, predictor or "none", f"s{replicate}"]
    return "__".join(_slug(p) for p in parts)


def plan_runs(spec: ExperimentSpec) -> list[RunTask]:
    """The experiment's cross product as tasks, in a deterministic order.

    Order: traces, platforms, policies (each with its predictors, or none),
    replicates, as listed in the file. A policy with ``predictors = "all"``
    gets every declared predictor.
    """
    seeds = spec.seeds.values()
    predictors = {p.name: p for p in spec.predictors}
    tasks: list[RunTask] = []
    for trace in spec.traces:
        for platform in spec.platforms:
            for policy in spec.policies:
                names: list[str | None] = (
                    list(predictors) if policy.predictors == "all" else list(policy.predictors)
                )
                for pred_name in names or [None]:
                    pred = predictors[pred_name] if pred_name is not None else None
                    pred_spec = (
                        pred.resolved_spec if pred else default_predictor(policy.resolved_spec)
                    )
                    if pred_name is None and pred_spec is not None:
                        pred_name = pred_spec  # the policy's own default predictor
                    for rep, seed in enumerate(seeds):
                        synthetic = None
                        if trace.synthetic is not None:
                            synthetic = trace.synthetic.model_dump()
                            if synthetic["seed"] is None:
                                synthetic["seed"] = seed
                        engine = {**spec.engine, **policy.engine}
                        tasks.append(
                            RunTask(
                                run_id=make_run_id(
                                    trace.name, platform.name, policy.name, pred_name, rep
                                ),
                                trace=trace.name,
                                platform=platform.name,
                                policy=policy.name,
                                predictor=pred_name,
                                replicate=rep,
                                seed=seed,
                                trace_source=trace.source,
                                trace_synthetic=synthetic,
                                max_jobs=trace.max_jobs,
                                platform_source=platform.source,
                                policy_spec=policy.resolved_spec,
                                policy_params=dict(policy.params),
                                predictor_spec=pred_spec,
                                predictor_params=dict(pred.params) if pred else {},
                                truth_preset=spec.ground_truth.preset
                                if spec.ground_truth
                                else None,
                                noise=spec.ground_truth.noise if spec.ground_truth else 0.0,
                                engine=engine,
                            )
                        )
    return tasks


def default_predictor(policy_spec: str) -> str | None:
    """The predictor a policy uses when none is given (its factory's ``predictor`` default), or None."""
    import inspect

    from policies.registry import resolve_policy_factory

    try:
        sig = inspect.signature(resolve_policy_factory(policy_spec))
    except (TypeError, ValueError):
        return None
    param = sig.parameters.get("predictor")
    if param is None or not isinstance(param.default, str):
        return None
    return param.default


# --------------------------------------------------------------------------- execution


@functools.lru_cache(maxsize=8)
def _cached_trace(source: str | None, synthetic_json: str | None) -> Any:
    """Read (or generate) a trace once per process; runs copy what they change."""
    if synthetic_json is not None:
        from workloads.synthetic import generate

        s = json.loads(synthetic_json)
        trace = generate(s["model"].lower(), s["n_jobs"], s["nodes"], seed=s["seed"], **s["params"])
        trace.name = f"{s['model']}-{s['n_jobs']}x{s['nodes']}-seed{s['seed']}"
        return trace
    from workloads.bundled import builtin_trace_path
    from workloads.swf import read_swf

    assert source is not None
    path = (
        builtin_trace_path(source.split(":", 1)[1])
        if source.startswith("builtin:")
        else Path(source)
    )
    return read_swf(path)


def task_trace(task: RunTask) -> Any:
    """The raw (uncleaned) trace of ``task`` (a fresh copy; cached per process)."""
    import copy

    synthetic = json.dumps(task.trace_synthetic, sort_keys=True) if task.trace_synthetic else None
    trace = _cached_trace(task.trace_source, synthetic)
    clone = copy.copy(trace)
    clone.jobs = trace.jobs.copy()
    return clone


def execute_task(task: RunTask) -> Any:
    """Run one task and return its :class:`~simulator.results.RunResult`.

    This is what every executor calls (in a worker process or a Dask
    worker); it only reads, never writes, so it is safe anywhere.
    """
    from energysched.runner import RunSpec, run_spec
    from simulator.config import RunConfig

    engine = dict(task.engine)
    if engine.get("power_cap_w", 0) is None:
        engine["power_cap_w"] = float("inf")
    config = RunConfig(**engine, seed=task.seed)
    spec = RunSpec(
        trace=task_trace(task),
        platform=task.platform_source,
        policy=task.policy_spec,
        policy_params=dict(task.policy_params),
        predictor=task.predictor_spec,
        predictor_params=dict(task.predictor_params),
        truth_preset=task.truth_preset,
        seed=task.seed,
        noise=task.noise,
        config=config,
        max_jobs=task.max_jobs,
    )
    result = run_spec(spec)
    result.meta["trace_source"] = task.trace_source or "synthetic"
    result.meta["run_id"] = task.run_id
    return result


@dataclass
class TaskOutcome:
    """What came back from one task: a result, or the error's traceback."""

    task: RunTask
    result: Any = None
    error: str | None = None
    elapsed_s: float = 0.0
    host: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


def run_task(task: RunTask) -> TaskOutcome:
    """:func:`execute_task` that never raises: errors come back as a traceback."""
    import socket

    t0 = time.perf_counter()
    host = f"{socket.gethostname()}:{os.getpid()}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = execute_task(task)
        except Exception:  # a failed run must not stop the sweep
            error = traceback.format_exc()
            return TaskOutcome(
                task,
                error=error,
                elapsed_s=time.perf_counter() - t0,
                host=host,
                warnings=_unique(caught),
            )
    return TaskOutcome(
        task, result=result, elapsed_s=time.perf_counter() - t0, host=host, warnings=_unique(caught)
    )


def _unique(caught: list[warnings.WarningMessage]) -> list[str]:
    """Distinct warnings of a run as ``"Category: message (file:line) xN"``, logged at INFO."""
    counts: dict[str, int] = {}
    for w in caught:
        key = f"{w.category.__name__}: {w.message} ({Path(w.filename).name}:{w.lineno})"
        counts[key] = counts.get(key, 0) + 1
    out = [f"{k} x{n}" for k, n in counts.items()]
    for line in out:
        log.info("warning during run: %s", line)
    return out


#: Modules a run needs, imported once per worker process before its first run
#: (about 1 s of CPU time, as long as a run of a few thousand jobs).
WORKER_PRELOAD: tuple[str, ...] = (
    "energysched.runner",
    "simulator.engine",
    "policies.registry",
    "policies.factories",
    "predictors.registry",
    "predictors.composite",
    "predictors.adept",
    "predictors.dvfs",
    "predictors.lbm",
    "predictors.baselines",
    "workloads.applications",
    "workloads.benchmark_suite",
)


def warm_worker() -> None:
    """Import :data:`WORKER_PRELOAD` (a worker initializer; cheap when already imported)."""
    import importlib

    for name in WORKER_PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # an optional part missing: its runs report it
            log.debug("worker preload: %s not imported (%s)", name, exc)


def worker_context() -> Any:
    """The multiprocessing context of local workers.

    ``forkserver`` where the platform has it: the fork server imports
    :data:`WORKER_PRELOAD` once and every worker is forked from it with the
    stack already imported (a worker starts in milliseconds instead of
    re-importing it, as spawned workers do). Else ``spawn``.
    """
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(WORKER_PRELOAD))
        return ctx
    return multiprocessing.get_context("spawn")


def process_pool(workers: int) -> Any:
    """Long-lived worker processes, each taking many runs, started warm
    (:func:`worker_context`, :func:`warm_worker`)."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=workers, mp_context=worker_context(), initializer=warm_worker
    )


class Executor:
    """Runs tasks and yields their outcomes as they finish.

    ``on_start(task)`` is called when a task is handed to a worker, so the
    progress bar can show how many are running.
    """

    name = "executor"

    def run(
        self, tasks: list[RunTask], on_start: Callable[[RunTask], None]
    ) -> Iterator[TaskOutcome]:
        raise NotImplementedError

    def close(self) -> None:
        """Release workers/clusters this executor started."""


class SerialExecutor(Executor):
    """In this process, one task after the other (``--workers 1``)."""

    name = "serial"

    def run(
        self, tasks: list[RunTask], on_start: Callable[[RunTask], None]
    ) -> Iterator[TaskOutcome]:
        for task in tasks:
            on_start(task)
            yield run_task(task)


class ProcessExecutor(Executor):
    """Local worker processes (:class:`concurrent.futures.ProcessPoolExecutor`, started
    warm and reused for many runs: :func:`process_pool`).

    At most ``workers`` tasks are in flight, so "running" is accurate. A
    worker that dies (e.g. killed by the OOM killer) fails its task only.
    """

    name = "processes"

    def __init__(self, workers: int) -> None:
        self.workers = max(1, int(workers))

    def run(
        self, tasks: list[RunTask], on_start: Callable[[RunTask], None]
    ) -> Iterator[TaskOutcome]:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        pending = list(reversed(tasks))
        pool = process_pool(self.workers)
        in_flight: dict[Any, RunTask] = {}
        try:
            while pending or in_flight:
                while pending and len(in_flight) < self.workers:
                    task = pending.pop()
                    try:
                        fut = pool.submit(run_task, task)
                    except BrokenProcessPool:
                        pool = process_pool(self.workers)
                        fut = pool.submit(run_task, task)
                    in_flight[fut] = task
                    on_start(task)
                done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for fut in done:
                    task = in_flight.pop(fut)
                    try:
                        yield fut.result()
                    except BrokenProcessPool as exc:
                        yield TaskOutcome(task, error=f"worker process died: {exc!r}")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor(Executor):
    """Tasks on a Dask distributed cluster, one Dask task per run.

    ``address``: ``tcp://HOST:PORT`` of an existing scheduler; or
    ``local_workers=N`` to start a :class:`distributed.LocalCluster` bound to
    127.0.0.1 only (its dashboard is on loopback too). Results come back to
    this process, which writes them, so workers need no shared file system;
    they do need energysched installed (same version).
    """

    name = "dask"

    def __init__(self, address: str | None = None, *, local_workers: int | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - optional dependency
            from energysched.errors import ConfigError

            raise ConfigError(
                "executor", "Dask is not installed: pip install 'energysched[dask]'"
            ) from exc
        self.cluster = None
        if address is None:
            n = max(1, int(local_workers or os.cpu_count() or 1))
            self.cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
            )
            self.client = Client(self.cluster)
        else:
            self.client = Client(address)
        self._warm_workers()
        log.info("dask client %s, dashboard %s", self.client, self.client.dashboard_link)

    def _warm_workers(self) -> None:
        """Import the run stack on every worker as it joins (:mod:`energysched.dask_warm`)."""
        from energysched.dask_warm import WarmWorker

        self.client.register_plugin(WarmWorker())

    @property
    def dashboard_link(self) -> str:
        return str(self.client.dashboard_link)

    def run(
        self, tasks: list[RunTask], on_start: Callable[[RunTask], None]
    ) -> Iterator[TaskOutcome]:
        from distributed import as_completed

        futures = []
        for task in tasks:
            futures.append(
                self.client.submit(
                    run_task,
                    task,
                    key=f"energysched-{task.run_id}-{task.config_hash()}",
                    pure=False,
                )
            )
            on_start(task)
        by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        for fut in as_completed(futures):
            task = by_key[fut.key]
            try:
                yield fut.result()
            except Exception:  # worker lost, deserialisation error...
                yield TaskOutcome(task, error=traceback.format_exc())
            fut.release()

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def make_executor(
    workers: int | None = None, scheduler: str | None = None, dask_local: int | None = None
) -> Executor:
    """Executor from the CLI options (at most one of them; default: one process per CPU)."""
    from energysched.errors import ConfigError

    given = [x is not None for x in (workers, scheduler, dask_local)]
    if sum(given) > 1:
        raise ConfigError("executor", "give at most one of --workers, --scheduler, --dask-local")
    if scheduler is not None:
        if not re.match(r"^(tcp|tls|inproc|ucx)://", scheduler):
            raise ConfigError("scheduler", f"expected tcp://HOST:PORT, got {scheduler!r}")
        return DaskExecutor(scheduler)
    if dask_local is not None:
        return DaskExecutor(local_workers=dask_local)
    n = workers if workers is not None else (os.cpu_count() or 1)
    return SerialExecutor() if n <= 1 else ProcessExecutor(n)


# --------------------------------------------------------------------------- the sweep


def _expected_cost(task: RunTask) -> float:
    """Rough relative cost of a task, to start the long ones first (stable sort keeps plan order)."""
    jobs = task.max_jobs or (task.trace_synthetic or {}).get("n_jobs") or 30_000
    learning = task.predictor_spec is not None and task.predictor_spec not in (
        "oracle",
        "requested",
    )
    return float(jobs) * (20.0 if learning else 1.0)


@dataclass
class SweepSummary:
    """What :func:`run_sweep` did."""

    out_dir: Path
    total: int
    skipped: list[str] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


class _Progress:
    def __init__(self, total: int, initial: int, show: bool | None) -> None:
        from tqdm.auto import tqdm

        self.running = 0
        self.failed = 0
        self.done = initial
        self.bar = tqdm(
            total=total,
            initial=initial,
            unit="run",
            desc="sweep",
            disable=(None if show is None else not show),
            dynamic_ncols=True,
        )
        self._refresh()

    def _refresh(self) -> None:
        self.bar.set_postfix_str(
            f"done {self.done}, running {self.running}, failed {self.failed}", refresh=True
        )

    def start(self, task: RunTask) -> None:
        self.running += 1
        self._refresh()

    def finish(self, ok: bool) -> None:
        self.running = max(0, self.running - 1)
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self.bar.update(1)
        self._refresh()

    def close(self) -> None:
        self.bar.close()


def run_sweep(
    experiment: ExperimentSpec | str | Path,
    out_dir: str | Path,
    *,
    executor: Executor | None = None,
    progress: bool | None = None,
    fmt: str = "auto",
    only: Iterable[str] | None = None,
) -> SweepSummary:
    """Run every unfinished run of ``experiment`` and write results to ``out_dir``.

    Args:
        experiment: a validated spec or the path of an experiment TOML file.
        out_dir: results directory (created); see :mod:`energysched.store`.
        executor: where runs execute (default :class:`SerialExecutor`).
        progress: progress bar: ``None`` when stderr is a terminal, or force on/off.
        fmt: ``"auto"`` (Parquet when pyarrow is installed), ``"parquet"`` or ``"csv"``.
        only: restrict to these run ids (others are left alone).

    Finished runs (same run id and configuration hash) are skipped; failed
    runs are retried. The summaries table is rewritten at the end, also when
    some runs failed.
    """
    from energysched import store
    from energysched.config import load_experiment

    t0 = time.perf_counter()
    source_text = None
    if not isinstance(experiment, ExperimentSpec):
        source_text = Path(experiment).read_text(encoding="utf-8")
        experiment = load_experiment(experiment)
    out = Path(out_dir)
    tasks = plan_runs(experiment)
    store.prepare_out_dir(out, experiment, tasks, source_text=source_text)
    if only is not None:
        wanted = set(only)
        tasks = [t for t in tasks if t.run_id in wanted]
    todo: list[RunTask] = []
    summary = SweepSummary(out_dir=out, total=len(tasks))
    for task in tasks:
        if store.is_finished(out, task):
            summary.skipped.append(task.run_id)
        else:
            todo.append(task)
    log.info(
        "sweep %s: %d runs, %d finished already, %d to run",
        experiment.name,
        len(tasks),
        len(summary.skipped),
        len(todo),
    )
    todo.sort(key=_expected_cost, reverse=True)  # longest first: shorter sweep on many workers
    executor = executor or SerialExecutor()
    bar = _Progress(len(tasks), len(summary.skipped), progress)
    try:
        for outcome in executor.run(todo, bar.start):
            store.write_outcome(out, outcome, fmt=fmt)
            if outcome.ok:
                summary.completed.append(outcome.task.run_id)
            else:
                summary.failed.append(outcome.task.run_id)
                first = outcome.error.strip().splitlines()[-1] if outcome.error else "?"
                log.warning("run %s failed: %s", outcome.task.run_id, first)
            bar.finish(outcome.ok)
    finally:
        bar.close()
        store.write_tables(out, fmt=fmt)
    summary.elapsed_s = time.perf_counter() - t0
    return summary
