"""Local workers forked from the sweep process once it has done what they share
(issue 19, item 2): the trace is read once, by the sweep process, and the
results are those of a sweep in one process; a run that fails, kills its
worker or hangs is still recorded as failed, and the others run (the rebuilt
pool comes from the fork server: threads are alive by then)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
from conftest import HERE, write_experiment

from energysched import SerialExecutor, load_experiment, plan_runs, run_sweep
from energysched.store import build_summaries
from energysched.sweep import RunTask, _cached_trace, _Progress, fork_context, prepare_shared
from tests.fresh_python import fresh_python

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")

# A fresh process (no thread of an earlier test alive) runs the sweep on 2 workers;
# every call of the trace reader appends the calling process's pid to a file.
FORKED_SWEEP = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, {plugins!r})
import workloads.swf
from multiprocessing import forkserver
from energysched import ProcessExecutor, run_sweep

calls = Path({calls!r})
plain_read = workloads.swf.read_swf

def counted_read(*args, **kwargs):
    with open(calls, "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    return plain_read(*args, **kwargs)

workloads.swf.read_swf = counted_read
executor = ProcessExecutor(2, run_timeout_s={timeout!r})
summary = run_sweep({experiment!r}, {out!r}, executor=executor, progress=False)
again = run_sweep({experiment!r}, {out!r}, executor=executor, progress=False, force=True)
executor.close()
assert sorted(again.completed) == sorted(summary.completed), again
print(json.dumps({{
    "pid": os.getpid(),
    "completed": sorted(summary.completed),
    "failed": sorted(summary.failed),
    "fork_server": forkserver._forkserver._forkserver_pid,
}}))
"""


def _forked_sweep(
    tmp_path: Path, experiment: Path, out: Path, timeout: float | None = None
) -> dict:
    calls = tmp_path / "reads.txt"
    code = FORKED_SWEEP.format(
        plugins=str(HERE),
        calls=str(calls),
        experiment=str(experiment),
        out=str(out),
        timeout=timeout,
    )
    done = json.loads(fresh_python(code).splitlines()[-1])
    done["reads"] = calls.read_text().split() if calls.exists() else []
    return done


ONE_TRACE = """
name = "one-trace"
[seeds]
base = 7
replicates = 2
[[traces]]
name = "kth"
source = "builtin:kth-sp2"
max_jobs = 150
[[policies]]
name = "fcfs"
[[policies]]
name = "easy"
{extra}
"""


def _errors(out: Path) -> str:
    """The tracebacks of a sweep's failed runs (its ``failed/RUN_ID/error.txt``)."""
    return "\n".join(
        f"{path.parent.name}: {path.read_text()}" for path in sorted(out.glob("failed/*/error.txt"))
    )


def _comparable(table: pd.DataFrame) -> pd.DataFrame:
    drop = [c for c in table.columns if "elapsed" in c or c in ("host", "finished_at")]
    return table.drop(columns=drop).sort_values("run_id").reset_index(drop=True)


@linux_only
def test_forked_workers_share_the_trace_read_and_give_the_serial_numbers(tmp_path: Path) -> None:
    """4 runs of one SWF trace on 2 workers, then the same sweep again (``force``)
    with the same executor: the sweep process reads the trace once, no worker
    reads it again, no fork server starts; every column of the summaries table
    equals that of the same sweep in one process."""
    experiment = write_experiment(tmp_path / "kth.toml", template=ONE_TRACE)
    ids = [t.run_id for t in plan_runs(load_experiment(experiment))]
    assert len(ids) == 4

    forked = _forked_sweep(tmp_path, experiment, tmp_path / "forked")
    assert forked["completed"] == sorted(ids) and forked["failed"] == [], _errors(
        tmp_path / "forked"
    )
    assert forked["reads"] == [str(forked["pid"])]  # once, in the sweep process
    assert forked["fork_server"] is None
    serial = run_sweep(experiment, tmp_path / "serial", executor=SerialExecutor(), progress=False)
    assert serial.ok
    pd.testing.assert_frame_equal(
        _comparable(build_summaries(tmp_path / "serial")),
        _comparable(build_summaries(tmp_path / "forked")),
    )
    hosts = {
        json.loads((tmp_path / "forked" / "runs" / i / "run.json").read_text())["host"] for i in ids
    }
    assert hosts and not any(h.endswith(f":{forked['pid']}") for h in hosts)  # in workers


# A sweep's pool winds down in a thread while the caller goes on (ProcessExecutor.run);
# the next sweep's start() must wait for it, not take it for a thread that makes
# forking unsafe and start a fork server (this made the test above fail now and
# then on a loaded machine: the second sweep of the same executor).
WINDING_DOWN = """
import threading, time
from multiprocessing import forkserver
from energysched import ProcessExecutor

executor = ProcessExecutor(2)
winding_down = threading.Thread(target=time.sleep, args=(0.5,))
winding_down.start()
executor._exiting.append(winding_down)  # as a finished sweep leaves it
executor.start()
print(forkserver._forkserver._forkserver_pid is None, winding_down.is_alive())
"""


@linux_only
def test_a_pool_still_winding_down_starts_no_fork_server() -> None:
    assert fresh_python(WINDING_DOWN).splitlines()[-1] == "True False"


@linux_only
def test_a_run_failing_killed_or_stuck_in_a_forked_worker_is_recorded(tmp_path: Path) -> None:
    """A plug-in that raises fails its runs (traceback recorded); one that kills its
    worker, or one stopped at the run timeout, fails its own runs, and the runs in
    flight beside it run again in a pool rebuilt from the fork server; the other
    runs complete."""
    extra = (
        '[[policies]]\nname = "raises"\npolicy = "es_experiments_plugins:FailingPolicy"\n'
        '[[policies]]\nname = "killed"\npolicy = "es_experiments_plugins:SigkillPolicy"\n'
        '[[policies]]\nname = "stuck"\npolicy = "es_experiments_plugins:HangingPolicy"\n'
    )
    experiment = write_experiment(tmp_path / "exp.toml", extra)
    tasks = plan_runs(load_experiment(experiment))
    out = tmp_path / "out"
    forked = _forked_sweep(tmp_path, experiment, out, timeout=5.0)
    bad = sorted(t.run_id for t in tasks if t.policy in ("raises", "killed", "stuck"))
    assert forked["failed"] == bad
    assert forked["completed"] == sorted(t.run_id for t in tasks if t.run_id not in bad)
    raised = next(t.run_id for t in tasks if t.policy == "raises")
    assert "deliberate failure for the tests" in (out / "failed" / raised / "error.txt").read_text()
    killed = next(t.run_id for t in tasks if t.policy == "killed")
    assert "killed by SIGKILL" in (out / "failed" / killed / "error.txt").read_text()
    stuck = next(t.run_id for t in tasks if t.policy == "stuck")
    assert "run timeout of 5 s" in (out / "failed" / stuck / "error.txt").read_text()
    assert len(build_summaries(out)) == len(tasks) - len(bad)


def test_no_fork_while_another_thread_runs() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert fork_context() is None
    finally:
        stop.set()
        other.join()


def test_the_progress_bar_starts_no_thread() -> None:
    """tqdm starts a monitor thread with its first bar, which would stop the
    workers of this and every later sweep of the process being forked."""
    threads = threading.active_count()
    for show in (False, True):
        bar = _Progress(total=3, initial=0, show=show)
        bar.start(RunTask("r", "t", "p", "easy", None, 0, 1))
        bar.finish(ok=True)
        assert (bar.done, bar.running) == (1, 0)
        bar.close()
        assert threading.active_count() == threads


def test_prepare_shared_reads_the_traces_enough_runs_share_once(tmp_path: Path) -> None:
    """The small experiment: 2 traces x 2 policies x 2 seeds, 4 runs each. With 4
    workers or fewer each trace is read (each worker would read it); with 5 none
    (the workers that need one read it at once); a missing file is left to its
    runs (which fail)."""
    tasks = plan_runs(load_experiment(write_experiment(tmp_path / "exp.toml")))
    _cached_trace.cache_clear()
    assert prepare_shared(tasks, min_runs=5) == []
    assert _cached_trace.cache_info().currsize == 0
    assert prepare_shared(tasks, min_runs=4) == ["kth", "lublin"]
    assert _cached_trace.cache_info().currsize == 2
    missing = [
        RunTask(
            f"m{i}", "missing", "trace", "easy", None, i, i, trace_source=str(tmp_path / "no.swf")
        )
        for i in range(2)
    ]
    assert prepare_shared(missing) == []
    _cached_trace.cache_clear()


@linux_only
def test_the_workers_are_children_of_the_sweep_process() -> None:
    """The pool of a fresh process forks its workers from it (their parent is the
    sweep process, not a fork server)."""
    code = (
        "import os\n"
        "from energysched.sweep import fork_context, process_pool\n"
        "assert fork_context() is not None\n"
        "with process_pool(2, fork_context()) as pool:\n"
        "    parents = {pool.submit(os.getppid).result() for _ in range(4)}\n"
        "print(parents == {os.getpid()})\n"
    )
    assert fresh_python(code) == "True"
