"""Sweeps: the cross product of an experiment becomes independent runs.

:func:`plan_runs` expands an :class:`~energysched.config.ExperimentSpec` into
:class:`RunTask` objects (traces x platforms x policies x their predictors x
seeds) with stable, readable run ids. :func:`run_sweep` executes the tasks
that are not finished yet on an executor (in-process, local processes, or a
Dask cluster), writing each run's directory as soon as it finishes (see
:mod:`energysched.store`; local workers write their runs' directories
themselves). Local workers are forked from the sweep process once it has done
the work they share (:func:`prepare_shared`: imports, trace files read). A
failed run is recorded with its traceback and the sweep goes on; running the
same sweep again skips finished runs and retries failed ones.

A task is a pure function of its fields: whichever executor runs it, the
numbers are the same.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import math
import os
import re
import signal
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from energysched.cpus import usable_cpus
from energysched.logtags import run_log, tagged_run

if TYPE_CHECKING:  # imported where used: make_executor() starts workers before numpy/pydantic load
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
        skip_bad_lines: skip malformed job lines of the SWF file instead of failing.
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
    skip_bad_lines: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (round-trips through :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunTask:
        return cls(**data)

    def config_hash(self) -> str:
        """SHA-256 (16 hex digits) of the task's canonical JSON: changes when any input changes."""
        data = self.to_dict()
        if not data["skip_bad_lines"]:
            # (absent from tasks planned before it existed: their finished runs keep their hashes)
            del data["skip_bad_lines"]
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_hash(task: RunTask) -> str:
    """SHA-256 (16 hex digits) of everything a finished run's numbers depend on:
    the task's configuration (:meth:`RunTask.config_hash`), the energysched
    version, the source of every ``module:Class`` plug-in it names, the
    content of its trace file and of its platform file. A sweep reruns a
    finished run when this changes.
    """
    from energysched import __version__

    parts = {
        "config": task.config_hash(),
        "version": __version__,
        "plugins": {
            spec: _plugin_source_digest(spec)
            for spec in (task.policy_spec, task.predictor_spec)
            if spec and ":" in spec
        },
        "trace": _trace_digest(task.trace_source),
    }
    if task.platform_source != "trace":
        # (only then: the hashes of runs on a trace's own platform stay as they were)
        parts["platform"] = _platform_digest(task.platform_source)
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    stat = path.stat()
    return _file_digest_cached(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _file_digest_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _plugin_source_digest(spec: str) -> str | None:
    """Hash of the file of a ``module:Class`` plug-in's module (found, not imported)."""
    import importlib.util

    module = spec.split(":", 1)[0]
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin or not Path(found.origin).is_file():
        return None
    return _file_digest(Path(found.origin))


def _trace_digest(source: str | None) -> str | None:
    """Hash of a trace file's bytes (``None`` for synthetic traces: the task holds their settings)."""
    if source is None:
        return None
    from energysched.errors import ConfigError
    from workloads.bundled import resolve_trace_source

    try:
        path = Path(resolve_trace_source(source))
    except ConfigError:  # an unknown builtin:NAME
        return None
    return _file_digest(path) if path.is_file() else None


def _platform_digest(source: str) -> str | None:
    """Hash of a platform file's bytes (``builtin:NAME``: the bundled file)."""
    from energysched.errors import ConfigError
    from simulator.platform import resolve_platform_source

    try:
        path = resolve_platform_source(source)
    except ConfigError:  # an unknown builtin:NAME
        return None
    return _file_digest(path) if path.is_file() else None


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
                            synthetic["seed"] = trace.synthetic_seed(seeds, seed)
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
                                skip_bad_lines=trace.skip_bad_lines,
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
def _cached_trace(
    source: str | None, synthetic_json: str | None, skip_bad_lines: bool = False
) -> Any:
    """Read (or generate) a trace once per process; runs copy what they change."""
    if synthetic_json is not None:
        from workloads.synthetic import generate

        s = json.loads(synthetic_json)
        trace = generate(s["model"].lower(), s["n_jobs"], s["nodes"], seed=s["seed"], **s["params"])
        trace.name = f"{s['model']}-{s['n_jobs']}x{s['nodes']}-seed{s['seed']}"
        return trace
    from workloads.swf import read_swf

    assert source is not None
    return read_swf(source, skip_bad_lines=skip_bad_lines)  # (also reads builtin:NAME)


def _synthetic_key(task: RunTask) -> str | None:
    """The synthetic trace settings of ``task`` as canonical JSON (the cache key)."""
    return json.dumps(task.trace_synthetic, sort_keys=True) if task.trace_synthetic else None


def task_trace(task: RunTask) -> Any:
    """The raw (uncleaned) trace of ``task`` (a fresh copy; cached per process)."""
    import copy

    trace = _cached_trace(task.trace_source, _synthetic_key(task), task.skip_bad_lines)
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

    config = RunConfig.from_settings(task.engine, seed=task.seed)
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
    """What came back from one task: a result, or the error's traceback.

    ``result`` is ``None`` in an outcome a local worker recorded itself (see
    :meth:`Executor.run`): the result is in the results store, not sent back.
    """

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
    """:func:`execute_task` that never raises: errors come back as a traceback.

    The run's log records carry its id (:func:`energysched.logtags.tagged_run`).
    """
    import socket

    t0 = time.perf_counter()
    host = f"{socket.gethostname()}:{os.getpid()}"
    with (
        warnings.catch_warnings(record=True) as caught,
        tagged_run(task.run_id),
        run_log(task.run_id) as logged,
    ):
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
                warnings=_unique(caught, logged),
            )
    return TaskOutcome(
        task,
        result=result,
        elapsed_s=time.perf_counter() - t0,
        host=host,
        warnings=_unique(caught, logged),
    )


def _unique(caught: list[warnings.WarningMessage], logged: list[str]) -> list[str]:
    """Distinct warnings of a run, with their counts: Python's warnings as
    ``"Category: message (file:line) xN"`` (logged at INFO), then its log records of
    WARNING and above as ``"LEVEL logger: message xN"``."""
    counts: dict[str, int] = {}
    for w in caught:
        key = f"{w.category.__name__}: {w.message} ({Path(w.filename).name}:{w.lineno})"
        counts[key] = counts.get(key, 0) + 1
    python_warnings = [_counted(k, n) for k, n in counts.items()]
    for line in python_warnings:
        log.info("warning during run: %s", line)
    return python_warnings + [_counted(k, n) for k, n in Counter(logged).items()]


def _counted(text: str, times: int) -> str:
    """A run's warning as :class:`TaskOutcome` keeps it: ``"TEXT xN"``."""
    return f"{text} x{times}"


def split_counted(line: str) -> tuple[str, int]:
    """``(text, times)`` of a warning :class:`TaskOutcome` kept (``"TEXT xN"``; a line
    without the count is one time)."""
    text, sep, times = line.rpartition(" x")
    return (text, int(times)) if sep and times.isdigit() else (line, 1)


#: Modules a run needs, imported before the workers fork (by the sweep process,
#: :func:`prepare_shared`, or by the fork server) or else by each worker before
#: its first run (about 0.5 s of CPU time, half a predictor-driven run of 5,000
#: jobs). Every module a default run imports is here (the default predictor's,
#: the trace reader's), and those a worker needs to write the run's results (the
#: store, pyarrow's Parquet and CSV writers), so that forked workers share them
#: instead of each importing them in its first run.
WORKER_PRELOAD: tuple[str, ...] = (
    "energysched.runner",
    "energysched.store",
    "pyarrow.parquet",
    "pyarrow.csv",
    "simulator.engine",
    "policies.registry",
    "policies.factories",
    "predictors.registry",
    "predictors.composite",
    "predictors.adept",
    "predictors.dvfs",
    "predictors.lbm",
    "predictors.baselines",
    "predictors.auto",
    "predictors.job_length",
    "workloads.applications",
    "workloads.benchmark_suite",
    "workloads.swf",
    "workloads.cleaning",
    "workloads.bundled",
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
    """The multiprocessing context of local workers when they cannot be forked from
    the sweep process (:func:`fork_context`).

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


def fork_context() -> Any:
    """The ``fork`` context when this process may fork its workers now, else ``None``.

    Only on Linux (elsewhere system libraries are not fork-safe: macOS) and while
    no other Python thread is alive (a thread holding a lock at the fork would
    leave the lock held forever in the child). Native threads of the libraries
    the stack imports (OpenBLAS's pool) are alive then, as in a fork server
    that has imported them; they handle forks themselves.
    """
    import multiprocessing
    import sys
    import threading

    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return None
    if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover
        return None
    return multiprocessing.get_context("fork")


def prepare_shared(tasks: list[RunTask], min_runs: int = 2) -> list[str]:
    """Do once, in this process, what the workers forked from it would each do in
    their first runs: import :data:`WORKER_PRELOAD`, read every trace that
    ``min_runs`` or more of ``tasks`` use (:func:`task_trace`'s per-process
    cache), hash its file (:func:`run_hash`, written with each run's results).
    Returns the traces read (their ``trace`` labels).

    :class:`ProcessExecutor` reads ahead the traces at least as many runs use as
    it has workers: each worker would read such a trace itself, so reading it
    here first costs no more time, and a trace few runs use is still read by
    the workers that need it, at once on their cores. A trace that cannot be
    read is left to its runs, which report the error.
    """
    warm_worker()
    by_trace: dict[tuple[Any, ...], list[RunTask]] = {}
    for task in tasks:
        key = (task.trace_source, _synthetic_key(task), task.skip_bad_lines)
        by_trace.setdefault(key, []).append(task)
    shared = [(key, runs) for key, runs in by_trace.items() if len(runs) >= min_runs]
    read: list[str] = []
    for key, runs in shared[: _cached_trace.cache_info().maxsize]:
        task = runs[0]
        try:
            _cached_trace(*key)
            run_hash(task)
        except Exception as exc:  # its runs fail with the full traceback
            log.debug("trace %s not read ahead: %s", task.trace, exc)
            continue
        read.append(task.trace)
    return read


def process_pool(workers: int, ctx: Any = None, started: Any = None) -> Any:
    """Long-lived worker processes, each taking many runs, started warm
    (:func:`worker_context`, :func:`warm_worker`); each worker tells ``started``
    (a ``ctx.SimpleQueue``, optional) which run it begins, in which process."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx or worker_context(),
        initializer=_init_worker,
        initargs=(started,),
    )


#: Writes an outcome to the results store and returns the outcome as recorded (a
#: failed one when writing failed): :func:`record_outcome` bound to a results
#: directory. It must pickle, as local workers call it.
Recorder = Callable[[TaskOutcome], TaskOutcome]


class Executor:
    """Runs tasks and yields their outcomes as they finish.

    ``on_start(task)`` is called when a task is handed to a worker, so the
    progress bar can show how many are running. With ``record``, every
    outcome is recorded before it is yielded: by the worker that ran it where
    workers share this process's file system (:class:`ProcessExecutor`), else
    in this process.
    """

    name = "executor"

    def run(
        self,
        tasks: list[RunTask],
        on_start: Callable[[RunTask], None],
        record: Recorder | None = None,
    ) -> Iterator[TaskOutcome]:
        raise NotImplementedError

    def start(self) -> None:
        """Begin starting workers now, ahead of the first run (optional; :func:`run_sweep`
        calls it before it reads and plans the experiment, so that the two overlap)."""

    def close(self) -> None:
        """Release workers/clusters this executor started."""


def _recorded(record: Recorder | None, outcome: TaskOutcome) -> TaskOutcome:
    return record(outcome) if record is not None else outcome


class RunTimeoutError(Exception):
    """A run went on longer than the sweep's run timeout."""


class SerialExecutor(Executor):
    """In this process, one task after the other (``--workers 1``).

    ``run_timeout_s``: a run still going after that many seconds is stopped
    (a timer signal, so only from Python code, in the main thread) and recorded
    as failed.
    """

    name = "serial"

    def __init__(self, *, run_timeout_s: float | None = None) -> None:
        self.run_timeout_s = run_timeout_s

    def run(
        self,
        tasks: list[RunTask],
        on_start: Callable[[RunTask], None],
        record: Recorder | None = None,
    ) -> Iterator[TaskOutcome]:
        for task in tasks:
            on_start(task)
            outcome = self._run_one(task)
            yield _recorded(record, outcome)

    def _run_one(self, task: RunTask) -> TaskOutcome:
        import threading

        limit = self.run_timeout_s
        if limit is None or threading.current_thread() is not threading.main_thread():
            return run_task(task)

        def expire(signum: int, frame: Any) -> None:
            raise RunTimeoutError(f"run exceeded the run timeout of {limit:g} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            return run_task(task)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


_WORKER_STARTED: Any = None  # in a worker process: the queue it reports (run id, pid) on


def _init_worker(started: Any) -> None:
    global _WORKER_STARTED
    _WORKER_STARTED = started
    warm_worker()  # imports are not part of a run's time budget


def _run_in_worker(task: RunTask, record: Recorder | None = None) -> TaskOutcome:
    """:func:`run_task` in a pool worker, first telling the parent which process runs it.

    With ``record``, the worker writes the outcome to the results store itself
    and sends back the outcome without its result (what the parent needs to
    count it): the result's tables do not cross the pipe, and a worker never
    waits for the parent to write another worker's results.
    """
    if _WORKER_STARTED is not None:
        _WORKER_STARTED.put((task.run_id, os.getpid(), time.time()))
    outcome = run_task(task)
    if record is None:
        return outcome
    return replace(record(outcome), result=None)


#: Exit statuses of a worker that say nothing against its run when the pool broke:
#: still running, a clean exit, the SIGTERM the executor sends the other workers of
#: a broken pool, and 255, what a fork-server child reports when the fork server
#: could not tell its status (``multiprocessing.popen_forkserver``: the workers the
#: executor tore down). Their runs are run again; a run that really ends its worker
#: with 255 is failed after the pool broke twice under it.
_BYSTANDER_EXIT_CODES = (None, 0, -signal.SIGTERM, 255)


def describe_worker_death(pid: int, exitcode: int | None) -> str:
    """Why worker ``pid`` ended, with a hint for the usual causes."""
    if exitcode is None:
        return f"worker process {pid} died (exit status unknown)"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        text = f"worker process {pid} was killed by {name}"
        if -exitcode == signal.SIGKILL:
            text += (
                " (the Linux out-of-memory killer sends SIGKILL: check the run's memory use, "
                "e.g. with 'dmesg | grep -i oom', or run fewer workers)"
            )
        return text
    return f"worker process {pid} exited with status {exitcode} during the run"


class ProcessExecutor(Executor):
    """Local worker processes (:class:`concurrent.futures.ProcessPoolExecutor`, started
    warm and reused for many runs: :func:`process_pool`). Given a ``record``
    (:meth:`Executor.run`), each worker writes its runs' results itself.

    On Linux, while this process runs no other thread, the workers are forked
    from it once it has imported the run stack and read the traces the runs
    share (:func:`prepare_shared`): they start with everything a first run
    would otherwise read or import, and no second interpreter imports the stack.
    Elsewhere they come from a fork server (:func:`worker_context`).

    At most ``workers`` tasks are in flight, so "running" is accurate. A
    worker that dies (killed by the OOM killer, a plug-in calling
    ``os._exit``) fails its own task only, with the pid and the signal; the
    pool is rebuilt and the other tasks that were in flight run again.
    ``run_timeout_s``: a run still going after that many seconds has its
    worker killed and is recorded as failed.
    """

    name = "processes"

    def __init__(self, workers: int, *, run_timeout_s: float | None = None) -> None:
        self.workers = max(1, int(workers))
        self.run_timeout_s = run_timeout_s
        # the threads that wind down pools whose workers exit while the caller goes on
        self._exiting: list[Any] = []

    def start(self) -> None:
        """Where the workers will be forked from this process (:func:`fork_context`),
        nothing: they are forked in :meth:`run`, once this process has done what
        they share. Else start the fork server now: it imports
        :data:`WORKER_PRELOAD` (about 0.5 s of CPU time) on another core while this
        process reads and plans the experiment, instead of the first run waiting
        for it. Cheap when already running."""
        # a previous sweep's pool may still be winding down in a thread: wait for it
        # (its workers are exiting), or the fork check below would see that thread and
        # start a fork server for nothing
        self.close()
        if fork_context() is not None:
            return
        ctx = worker_context()
        if ctx.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()

    def run(
        self,
        tasks: list[RunTask],
        on_start: Callable[[RunTask], None],
        record: Recorder | None = None,
    ) -> Iterator[TaskOutcome]:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        pending = list(reversed(tasks))
        self.close()  # a previous sweep's pool winds down in a thread: no fork beside it
        if tasks and fork_context() is not None:
            prepare_shared(tasks, max(2, self.workers))  # once, not in every worker

        def new_pool() -> tuple[Any, Any]:
            # forked from this process while that is safe (the first pool); a pool
            # rebuilt after a worker died, beside the old pool's threads, comes
            # from the fork server
            ctx = fork_context() or worker_context()
            started_queue = ctx.SimpleQueue()
            return process_pool(self.workers, ctx, started_queue), started_queue

        pool, started_queue = new_pool()
        in_flight: dict[Any, RunTask] = {}
        announced: set[str] = set()
        started: dict[str, tuple[int, float]] = {}  # run id -> (pid, start time)
        processes: dict[int, Any] = {}
        timed_out: dict[int, str] = {}  # pid -> run id killed for its timeout
        attempts: dict[str, int] = {}

        def hand_out() -> bool:
            """Give every free worker its next run; False when the pool is broken."""
            while pending and len(in_flight) < self.workers:
                task = pending.pop()
                try:
                    fut = pool.submit(_run_in_worker, task, record)
                except BrokenProcessPool:
                    pending.append(task)
                    return False
                in_flight[fut] = task
                if task.run_id not in announced:
                    announced.add(task.run_id)
                    on_start(task)
            return True

        all_done = False
        try:
            while pending or in_flight:
                broken = not hand_out()
                processes.update(getattr(pool, "_processes", None) or {})
                done, _ = wait(
                    list(in_flight),
                    timeout=None if self.run_timeout_s is None or broken else 1.0,
                    return_when=FIRST_COMPLETED,
                )
                while not started_queue.empty():
                    run_id, pid, t_start = started_queue.get()
                    started[run_id] = (pid, t_start)
                if self.run_timeout_s is not None:
                    now = time.time()
                    for task in in_flight.values():
                        pid_start = started.get(task.run_id)
                        if pid_start and now - pid_start[1] > self.run_timeout_s:
                            pid = pid_start[0]
                            if pid not in timed_out:
                                timed_out[pid] = task.run_id
                                with contextlib.suppress(OSError):  # already gone
                                    os.kill(pid, signal.SIGKILL)
                finished: list[TaskOutcome] = []
                for fut in done:
                    task = in_flight.pop(fut)
                    try:
                        finished.append(fut.result())
                    except BrokenProcessPool:
                        broken = True
                        in_flight[fut] = task  # decided below, with the others
                if not broken:
                    # the freed workers get their next runs before the results go back,
                    # so they do not wait while the caller writes them
                    broken = not hand_out()
                yield from finished
                if not broken:
                    continue
                # One worker died and took the pool with it: fail the task it ran,
                # run the others again in a new pool.
                while not started_queue.empty():
                    run_id, pid, t_start = started_queue.get()
                    started[run_id] = (pid, t_start)
                for proc in processes.values():
                    proc.join(timeout=5)
                dead = {
                    pid: proc.exitcode
                    for pid, proc in processes.items()
                    if proc.exitcode not in _BYSTANDER_EXIT_CODES
                }
                for task in list(in_flight.values()):
                    pid = started.get(task.run_id, (None, 0.0))[0]
                    attempts[task.run_id] = attempts.get(task.run_id, 0) + 1
                    if pid is not None and (pid in dead or pid in timed_out):
                        if pid in timed_out:
                            reason = (
                                f"run exceeded the run timeout of {self.run_timeout_s:g} s; "
                                f"worker process {pid} was killed"
                            )
                        else:
                            reason = describe_worker_death(pid, dead[pid])
                        yield _recorded(
                            record, TaskOutcome(task, error=f"{reason}\n", host=f"pid {pid}")
                        )
                    elif attempts[task.run_id] > 2:
                        yield _recorded(
                            record,
                            TaskOutcome(
                                task,
                                error="the worker pool broke twice while this run was in "
                                "flight; it was not run again\n",
                            ),
                        )
                    else:
                        pending.append(task)  # an innocent bystander: run it again
                    started.pop(task.run_id, None)
                in_flight.clear()
                pool.shutdown(wait=False, cancel_futures=True)
                pool, started_queue = new_pool()
                processes, timed_out = {}, {}
            all_done = True
        finally:
            # Every run done: the workers exit while the caller writes the summaries
            # (close() waits for them); else (an error, the caller stopped) wait now.
            winding_down = getattr(pool, "_executor_manager_thread", None)
            pool.shutdown(wait=not all_done, cancel_futures=True)
            if all_done and winding_down is not None:
                self._exiting.append(winding_down)

    def close(self) -> None:
        """Wait for the workers of finished sweeps to exit."""
        while self._exiting:
            self._exiting.pop().join()


@contextlib.contextmanager
def local_dask_workers_forked() -> Iterator[None]:
    """While the block runs, a Dask nanny starts its worker process from a fork
    server that has imported ``distributed`` and :data:`WORKER_PRELOAD` once,
    instead of spawning a fresh interpreter that imports both (Dask's default,
    ``distributed.worker.multiprocessing-method = "spawn"``): the local cluster's
    workers start warm, as the local workers do (:func:`worker_context`). Where
    the platform has no fork server, nothing changes. A worker the nanny restarts
    after the block (one that died) is spawned as usual.
    """
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        yield
        return
    import dask
    from distributed.utils import get_mp_context

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        # get_mp_context sets Dask's own preload once; ours replaces it (a no-op
        # when this process's fork server already runs)
        get_mp_context().set_forkserver_preload(["distributed", *WORKER_PRELOAD])
        yield


class DaskExecutor(Executor):
    """Tasks on a Dask distributed cluster, one Dask task per run.

    ``address``: ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` of an existing
    scheduler (``tls_ca_file``, ``tls_cert``, ``tls_key``: the certificates
    to reach a TLS scheduler; giving them makes TLS required); or
    ``local_workers=N`` to start a :class:`distributed.LocalCluster` bound to
    127.0.0.1 only, with TLS and mutual authentication under a throw-away
    certificate (``Security.temporary()``), so other accounts on the machine
    cannot submit work to its workers. Results come back to this process,
    which writes them, so workers need no shared file system; they do need
    energysched installed (same version).
    """

    name = "dask"

    def __init__(
        self,
        address: str | None = None,
        *,
        local_workers: int | None = None,
        connect_timeout_s: float = 10.0,
        tls_ca_file: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
    ) -> None:
        from energysched.errors import ConfigError

        try:
            from distributed import Client, LocalCluster
            from distributed.security import Security
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ConfigError(
                "executor", "Dask is not installed: pip install 'energysched[dask]'"
            ) from exc
        self.cluster = None
        if address is None:
            n = max(1, int(local_workers or usable_cpus()))
            try:
                security = Security.temporary()
            except ImportError as exc:  # pragma: no cover - cryptography missing
                raise ConfigError(
                    "executor",
                    "a local Dask cluster uses TLS, which needs the 'cryptography' package: "
                    "pip install 'energysched[dask]'",
                ) from exc
            self.security = security
            with local_dask_workers_forked():
                self.cluster = LocalCluster(
                    n_workers=n,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    protocol="tls://",
                    security=security,
                    dashboard_address="127.0.0.1:0",
                )
            self.client = Client(self.cluster, security=security)
        else:
            security = tls_security(address, tls_ca_file, tls_cert, tls_key)
            self.security = security
            probe_scheduler(address)
            try:
                self.client = Client(address, timeout=connect_timeout_s, security=security)
            except (OSError, TimeoutError) as exc:
                raise ConfigError(
                    "scheduler",
                    f"cannot connect to the Dask scheduler at {address}: {exc}; "
                    "check the address and that the scheduler is running",
                ) from None
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
        self,
        tasks: list[RunTask],
        on_start: Callable[[RunTask], None],
        record: Recorder | None = None,
    ) -> Iterator[TaskOutcome]:
        """Results come back to this process, which records them (Dask workers
        need no shared file system)."""
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
                outcome = fut.result()
            except Exception:  # worker lost, deserialisation error...
                outcome = TaskOutcome(task, error=traceback.format_exc())
            fut.release()
            yield _recorded(record, outcome)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def tls_security(address: str, ca_file: str | None, cert: str | None, key: str | None) -> Any:
    """A :class:`distributed.security.Security` from certificate files, or ``None``.

    ``tls://`` addresses need a CA file and a client certificate (and its key,
    unless the certificate file holds it); the files must exist.
    """
    from energysched.errors import ConfigError

    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        if address.startswith("tls://"):
            raise ConfigError(
                "scheduler",
                f"{address} uses TLS: give --tls-ca-file and --tls-cert (and --tls-key)",
            )
        return None
    if not address.startswith("tls://"):
        raise ConfigError(
            "scheduler", f"certificates were given but {address!r} is not a tls:// address"
        )
    for flag in ("--tls-ca-file", "--tls-cert"):
        if not given[flag]:
            raise ConfigError("scheduler", f"TLS needs {flag} too")
    for flag, path in given.items():
        if path and not Path(path).is_file():
            raise ConfigError("scheduler", f"{flag} {path}: file not found")
    from distributed.security import Security

    return Security(
        tls_ca_file=ca_file,
        tls_client_cert=cert,
        tls_client_key=key,
        require_encryption=True,
    )


def probe_scheduler(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast, with a one-line :class:`ConfigError`, when nothing listens at a
    ``tcp://`` or ``tls://`` scheduler address (instead of Dask's 30 s timeout)."""
    from urllib.parse import urlsplit

    from energysched.errors import ConfigError

    parts = urlsplit(address)
    if parts.scheme not in ("tcp", "tls"):
        return
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise ConfigError("scheduler", f"bad address {address!r}: {exc}") from None
    if not host or port is None:
        raise ConfigError("scheduler", f"expected {parts.scheme}://HOST:PORT, got {address!r}")
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ConfigError(
            "scheduler",
            f"cannot reach the Dask scheduler at {address} ({reason}); "
            "check the address and that the scheduler is running",
        ) from None


def make_executor(
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    *,
    run_timeout_s: float | None = None,
    tls: dict[str, str | None] | None = None,
) -> Executor:
    """Executor from the CLI options (at most one of them; default: one process per CPU
    this process may use, :func:`energysched.cpus.usable_cpus`).

    ``run_timeout_s`` (``--run-timeout``): local executors only. ``tls``:
    ``tls_ca_file``, ``tls_cert``, ``tls_key`` for ``--scheduler tls://...``.
    """
    from energysched.errors import ConfigError

    given = [x is not None for x in (workers, scheduler, dask_local)]
    if sum(given) > 1:
        raise ConfigError("executor", "give at most one of --workers, --scheduler, --dask-local")
    if tls and any(tls.values()) and scheduler is None:
        raise ConfigError("scheduler", "--tls-* options go with --scheduler tls://HOST:PORT")
    if run_timeout_s is not None:
        if not (run_timeout_s > 0 and run_timeout_s < float("inf")):
            raise ConfigError("run_timeout", f"must be a finite number > 0, got {run_timeout_s!r}")
        if scheduler is not None or dask_local is not None:
            raise ConfigError(
                "run_timeout", "--run-timeout works with local workers (--workers) only"
            )
    if scheduler is not None:
        if not re.match(r"^(tcp|tls|inproc|ucx)://", scheduler):
            raise ConfigError("scheduler", f"expected tcp://HOST:PORT, got {scheduler!r}")
        tls = tls or {}
        return DaskExecutor(
            scheduler,
            tls_ca_file=tls.get("tls_ca_file") or None,
            tls_cert=tls.get("tls_cert") or None,
            tls_key=tls.get("tls_key") or None,
        )
    if dask_local is not None:
        return DaskExecutor(local_workers=dask_local)
    n = workers if workers is not None else usable_cpus()
    if n <= 1:
        return SerialExecutor(run_timeout_s=run_timeout_s)
    return ProcessExecutor(n, run_timeout_s=run_timeout_s)


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
    """A tqdm bar on a terminal; elsewhere (a batch job's log) an INFO line with
    an ETA at most every ``log_interval_s`` seconds.

    The bar starts no thread (tqdm's monitor thread, which lowers ``miniters`` of
    bars updated in bursts, is not needed by a bar refreshed at every run): local
    workers are forked from the sweep process only while no other thread runs
    (:func:`fork_context`).
    """

    log_interval_s = 30.0

    def __init__(self, total: int, initial: int, show: bool | None) -> None:
        import sys

        from tqdm import TqdmExperimentalWarning

        # tqdm.auto's choice of a notebook or a text bar, without its asyncio
        # mix-in (asyncio costs about 0.015 s before the first run is handed out)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TqdmExperimentalWarning)
            from tqdm.autonotebook import tqdm

        self.running = 0
        self.failed = 0
        self.done = initial
        self.total = total
        self.initial = initial
        on_terminal = sys.stderr.isatty() if show is None else show
        self.log_lines = not on_terminal
        self.t0 = time.monotonic()
        self.last_log = self.t0
        bar_without_monitor = type("SweepBar", (tqdm,), {"monitor_interval": 0})
        self.bar = bar_without_monitor(
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
        now = time.monotonic()
        if self.log_lines and now - self.last_log >= self.log_interval_s:
            self.last_log = now
            log.info("%s", self.status_line(now))

    def status_line(self, now: float) -> str:
        """``sweep: 12/40 runs (1 failed, 2 running), 3m20s elapsed, ETA 7m45s``."""
        finished = self.done + self.failed
        ran = finished - self.initial
        elapsed = now - self.t0
        eta = elapsed / ran * (self.total - finished) if ran > 0 else math.nan
        return (
            f"sweep: {finished}/{self.total} runs ({self.failed} failed, {self.running} running), "
            f"{_duration(elapsed)} elapsed, ETA {_duration(eta)}"
        )

    def close(self) -> None:
        self.bar.close()


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def run_sweep(
    experiment: ExperimentSpec | str | Path,
    out_dir: str | Path,
    *,
    executor: Executor | None = None,
    progress: bool | None = None,
    fmt: str = "auto",
    only: Iterable[str] | None = None,
    force: bool = False,
) -> SweepSummary:
    """Run every unfinished run of ``experiment`` and write results to ``out_dir``.

    Args:
        experiment: a validated spec or the path of an experiment TOML file.
        out_dir: results directory (created); see :mod:`energysched.store`.
        executor: where runs execute (default :class:`SerialExecutor`).
        progress: progress bar: ``None`` when stderr is a terminal, or force on/off.
        fmt: ``"auto"`` (Parquet when pyarrow is installed), ``"parquet"`` or ``"csv"``.
        only: restrict to these run ids (others are left alone).
        force: run every planned run again, finished or not.

    Finished runs (same run id and :func:`run_hash`: configuration, version,
    plug-in source, trace and platform files' content) are skipped; failed runs are retried. A
    run whose results cannot be written (a full disk, a plug-in whose
    ``params()`` JSON cannot hold) is recorded as failed and the sweep goes
    on. The summaries table is rewritten at the end, also when some runs
    failed.
    """
    t0 = time.perf_counter()
    executor = executor or SerialExecutor()
    executor.start()  # workers get ready while the experiment is read and planned
    from energysched import store
    from energysched.config import ExperimentSpec, load_experiment

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
        if not force and store.is_finished(out, task):
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
    bar = _Progress(len(tasks), len(summary.skipped), progress)
    record = functools.partial(record_outcome, out, fmt=fmt)
    try:
        for outcome in executor.run(todo, bar.start, record=record):
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


def record_outcome(out: Path, outcome: TaskOutcome, *, fmt: str = "auto") -> TaskOutcome:
    """Write ``outcome`` to the results store; a write that fails turns it into a
    failed outcome (recorded if the disk allows) instead of stopping the sweep."""
    from energysched import store

    try:
        store.write_outcome(out, outcome, fmt=fmt)
        return outcome
    except Exception:
        failed = TaskOutcome(
            outcome.task,
            error="writing the run's results failed:\n" + traceback.format_exc(),
            elapsed_s=outcome.elapsed_s,
            host=outcome.host,
            warnings=outcome.warnings,
        )
    try:
        store.write_outcome(out, failed, fmt=fmt)
    except Exception:  # the disk is full: the failure is still counted and logged
        log.exception("run %s: could not record the failure either", outcome.task.run_id)
    return failed
