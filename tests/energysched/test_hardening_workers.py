"""A dead or stuck worker fails its own run only (issue 17, item 2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import HERE, write_experiment

from energysched import ProcessExecutor, SerialExecutor, load_experiment, plan_runs, run_sweep
from energysched.errors import ConfigError
from energysched.sweep import make_executor


@pytest.fixture(autouse=True)
def _plugins_importable_in_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [str(HERE), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


def _experiment(tmp_path: Path, plugin: str) -> Path:
    extra = f'[[policies]]\nname = "bad"\npolicy = "es_experiments_plugins:{plugin}"\n'
    return write_experiment(tmp_path / "exp.toml", extra)


def test_killed_worker_fails_only_its_own_run(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "SigkillPolicy")
    tasks = plan_runs(load_experiment(exp))
    bad = sorted(t.run_id for t in tasks if t.policy == "bad")
    out = tmp_path / "out"
    summary = run_sweep(exp, out, executor=ProcessExecutor(2), progress=False)
    assert sorted(summary.failed) == bad
    assert sorted(summary.completed) == sorted(t.run_id for t in tasks if t.policy != "bad")
    error = (out / "failed" / bad[0] / "error.txt").read_text()
    assert "killed by SIGKILL" in error and "out-of-memory" in error
    assert "worker process" in error and any(ch.isdigit() for ch in error)  # the pid


def test_run_timeout_stops_a_hanging_run_in_a_worker(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "HangingPolicy")
    tasks = plan_runs(load_experiment(exp))
    out = tmp_path / "out"
    summary = run_sweep(exp, out, executor=ProcessExecutor(2, run_timeout_s=10.0), progress=False)
    bad = sorted(t.run_id for t in tasks if t.policy == "bad")
    assert sorted(summary.failed) == bad
    assert len(summary.completed) == len(tasks) - len(bad)
    assert "run timeout of 10 s" in (out / "failed" / bad[0] / "error.txt").read_text()


def test_run_timeout_in_process(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "HangingPolicy")
    tasks = plan_runs(load_experiment(exp))
    summary = run_sweep(
        exp, tmp_path / "out", executor=SerialExecutor(run_timeout_s=1.0), progress=False
    )
    assert sorted(summary.failed) == sorted(t.run_id for t in tasks if t.policy == "bad")
    assert len(summary.completed) == len(tasks) - len(summary.failed)


def test_run_timeout_is_checked() -> None:
    with pytest.raises(ConfigError):
        make_executor(workers=2, run_timeout_s=float("nan"))
    with pytest.raises(ConfigError, match="local workers"):
        make_executor(dask_local=1, run_timeout_s=5.0)


def test_progress_lines_with_an_eta_off_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from energysched.sweep import _Progress

    monkeypatch.setattr(_Progress, "log_interval_s", 0.0)
    exp = write_experiment(tmp_path / "small.toml")
    with caplog.at_level(logging.INFO, logger="energysched.sweep"):
        run_sweep(exp, tmp_path / "out", executor=SerialExecutor(), progress=False)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("sweep: ")]
    assert len(lines) == 8
    assert lines[0].startswith("sweep: 1/8 runs (0 failed, 0 running)") and "ETA" in lines[0]
    assert lines[-1].endswith("ETA 0m00s")


def test_eta_is_remaining_runs_times_mean_run_time() -> None:
    from energysched.sweep import _Progress

    bar = _Progress(total=10, initial=2, show=False)
    bar.t0 = 0.0
    bar.done = 6  # 4 ran in 100 s: 25 s each, 4 left
    assert (
        bar.status_line(100.0) == "sweep: 6/10 runs (0 failed, 0 running), 1m40s elapsed, ETA 1m40s"
    )
    bar.close()
