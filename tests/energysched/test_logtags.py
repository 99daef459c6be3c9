"""A sweep's log lines name the run they come from (energysched.logtags), in this
process and in forked workers that share the terminal."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import (
    write_experiment,
    write_trace_with_a_job_without_request,
    write_warning_experiment,
)

from energysched import load_experiment, plan_runs
from energysched.logtags import (
    LOG_FORMAT,
    REPEAT_NOTE,
    command_line_handler,
    current_run,
    tagged_run,
)


def _logged(emit: Callable[[logging.Logger], None]) -> str:
    """What the command line's handler writes while ``emit(logger)`` runs."""
    handler = command_line_handler()
    stream = io.StringIO()
    handler.setStream(stream)
    logger = logging.getLogger("energysched.test_logtags")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        emit(logger)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    return stream.getvalue()


def test_a_record_is_tagged_only_inside_its_run() -> None:
    def emit(logger: logging.Logger) -> None:
        logger.error("before")
        with tagged_run("kth__easy__s7"):
            logger.error("inside")
            with tagged_run("inner"):
                logger.error("nested")
            logger.error("back")
        logger.error("after")

    lines = _logged(emit).splitlines()
    assert lines == [
        "ERROR energysched.test_logtags: before",
        "ERROR energysched.test_logtags [kth__easy__s7]: inside",
        "ERROR energysched.test_logtags [inner]: nested",
        "ERROR energysched.test_logtags [kth__easy__s7]: back",
        "ERROR energysched.test_logtags: after",
    ]
    assert "%(run_tag)s" in LOG_FORMAT


def test_a_later_runs_repeat_of_a_warning_is_not_shown_again() -> None:
    def emit(logger: logging.Logger) -> None:
        for run in ("r0", "r1"):
            with tagged_run(run):
                logger.warning("application %d is anomalous", 1 if run == "r0" else 2)
                logger.warning("application %d is anomalous", 3)  # r0: the same run
                logger.error("failed %s", run)  # errors are always shown
        logger.warning("application %d is anomalous", 4)  # outside a run: shown

    name = "WARNING energysched.test_logtags"
    assert _logged(emit).splitlines() == [
        f"{name} [r0]: application 1 is anomalous{REPEAT_NOTE}",
        f"{name} [r0]: application 3 is anomalous{REPEAT_NOTE}",
        "ERROR energysched.test_logtags [r0]: failed r0",
        "ERROR energysched.test_logtags [r1]: failed r1",
        f"{name}: application 4 is anomalous",
    ]


def test_the_tag_ends_with_a_run_that_raises() -> None:
    with pytest.raises(RuntimeError), tagged_run("failing-run"):
        assert current_run() == "failing-run"
        raise RuntimeError("the run failed")
    assert current_run() is None


def _sweep(
    experiment: Path, out: Path, *options: str, verbose: bool = False
) -> subprocess.CompletedProcess[str]:
    """``energysched [-v] experiment run EXPERIMENT --out OUT --no-report OPTIONS`` in a
    fresh process (its own terminal log handler); it must exit 0."""
    command = [sys.executable, "-m", "energysched", *(["-v"] if verbose else [])]
    done = subprocess.run(
        [
            *command,
            "experiment",
            "run",
            str(experiment),
            "--out",
            str(out),
            "--no-report",
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers on Linux only")
def test_every_run_of_a_two_worker_sweep_logs_under_its_own_id(tmp_path: Path) -> None:
    experiment = write_experiment(tmp_path / "small.toml")
    run_ids = {task.run_id for task in plan_runs(load_experiment(experiment))}
    done = _sweep(experiment, tmp_path / "out", "--workers", "2", verbose=True)
    # each run logs one "run: N jobs, policy ..." line from the runner
    tags = re.findall(r"^INFO energysched\.runner \[([^\]]+)\]: run: ", done.stderr, re.M)
    assert sorted(tags) == sorted(run_ids), done.stderr
    # the sweep's own lines, outside any run, carry no tag
    assert re.search(r"^INFO energysched\.sweep: sweep small: ", done.stderr, re.M), done.stderr


RUN_LOG_SCRIPT = """
import logging, sys, threading
if sys.argv[1] == "configured":
    logging.basicConfig(format="%(name)s: %(message)s")
from energysched.logtags import run_log, tagged_run
log = logging.getLogger("predictors.x")
with tagged_run("r1"), run_log("r1") as lines:
    log.warning("inside %d", 1)
    log.info("below the level")
    with tagged_run("r2"):
        log.error("another run's")
log.warning("outside")
print(lines)
# two runs side by side in threads (a Dask worker's): each keeps its own records,
# and each record is printed once
kept = {}
started = threading.Barrier(2)
def run(run_id):
    with tagged_run(run_id), run_log(run_id) as mine:
        started.wait()
        log.warning("from %s", run_id)
        started.wait()
    kept[run_id] = mine
threads = [threading.Thread(target=run, args=(r,)) for r in ("a", "b")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sorted(kept.items()))
"""


@pytest.mark.parametrize("logging_set_up", ["bare", "configured"])
def test_run_log_keeps_a_runs_warnings_and_prints_them_where_they_were_printed(
    logging_set_up: str,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_LOG_SCRIPT, logging_set_up],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['WARNING predictors.x: inside 1']",
        "[('a', ['WARNING predictors.x: from a']), ('b', ['WARNING predictors.x: from b'])]",
    ]
    # each record printed once: by logging's last resort without a handler (the
    # collector forwards it), by the configured handler with one
    prefix = "predictors.x: " if logging_set_up == "configured" else ""
    lines = done.stderr.splitlines()
    assert lines[:3] == [f"{prefix}inside 1", f"{prefix}another run's", f"{prefix}outside"]
    assert sorted(lines[3:]) == [f"{prefix}from a", f"{prefix}from b"]


def test_a_runs_warnings_are_recorded_with_its_results(tmp_path: Path) -> None:
    from energysched import store
    from energysched.sweep import RunTask, run_task

    trace = write_trace_with_a_job_without_request(tmp_path / "t.swf")
    task = RunTask("t__trace__easy__none__s0", "t", "trace", "easy", None, 0, 1, str(trace))
    outcome = run_task(task)
    assert outcome.ok, outcome.error
    expected = "WARNING simulator.engine: 1 of 5 jobs have no requested time"
    assert [w[: len(expected)] for w in outcome.warnings] == [expected]
    assert outcome.warnings[0].endswith(" x1")
    run_dir = store.write_outcome(tmp_path / "out", outcome)
    assert json.loads((run_dir / "run.json").read_text())["warnings"] == outcome.warnings


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers on Linux only")
def test_a_sweep_shows_a_warning_once_and_records_it_for_every_run(tmp_path: Path) -> None:
    experiment = write_warning_experiment(tmp_path)
    done = _sweep(experiment, tmp_path / "out", "--workers", "1")
    shown = [line for line in done.stderr.splitlines() if "have no requested time" in line]
    assert len(shown) == 1 and shown[0].endswith(REPEAT_NOTE), done.stderr
    recorded = [
        json.loads(path.read_text())["warnings"]
        for path in sorted((tmp_path / "out" / "runs").glob("*/run.json"))
    ]
    assert len(recorded) == 4
    assert all(len(w) == 1 and "have no requested time" in w[0] for w in recorded)
