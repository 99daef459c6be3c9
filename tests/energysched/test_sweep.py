"""Sweeps: resume after a crash, failed runs, executors, the results store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import HERE, write_experiment

from energysched import (
    ProcessExecutor,
    SerialExecutor,
    load_experiment,
    load_results,
    plan_runs,
    run_sweep,
)
from energysched.store import build_summaries


#: Columns that must be identical between two sweeps of the same experiment.
def _comparable(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values("run_id").reset_index(drop=True)


def _run_json(out: Path, run_id: str) -> dict:
    return json.loads((out / "runs" / run_id / "run.json").read_text())


def test_sweep_writes_one_directory_per_run_and_a_tidy_table(
    tmp_path: Path, small_experiment: Path
) -> None:
    out = tmp_path / "out"
    summary = run_sweep(small_experiment, out, progress=False)
    tasks = plan_runs(load_experiment(small_experiment))
    assert summary.ok and summary.completed == [t.run_id for t in tasks]
    for t in tasks:
        d = out / "runs" / t.run_id
        assert (d / "summary.json").is_file() and (d / "power.csv").is_file()
        assert (d / "jobs.parquet").is_file() or (d / "jobs.csv").is_file()
        meta = _run_json(out, t.run_id)
        assert (
            meta["status"] == "ok"
            and meta["seed"] == t.seed
            and meta["config_hash"] == t.config_hash()
        )
        assert meta["energysched_version"]
    saved = json.loads((out / "experiment.json").read_text())
    assert saved["seeds"] == load_experiment(small_experiment).seeds.values()
    assert [r["run_id"] for r in saved["runs"]] == [t.run_id for t in tasks]
    assert (out / "experiment.toml").read_text() == small_experiment.read_text()

    res = load_results(out)
    table = res.summaries
    assert list(table["run_id"]) == [t.run_id for t in tasks]
    assert {
        "energy_j",
        "makespan_s",
        "mean_wait_s",
        "mean_bsld",
        "energy_idle_j",
        "energy_vs_baseline",
    } <= set(table.columns)
    # the baseline (easy) compared with itself
    assert (table.loc[table["policy"] == "easy", "energy_vs_baseline"] == 1.0).all()
    # the table written to disk is the one load_results builds
    written = (
        pd.read_parquet(out / "summaries.parquet")
        if (out / "summaries.parquet").exists()
        else pd.read_csv(out / "summaries.csv")
    )
    pd.testing.assert_frame_equal(_comparable(written), _comparable(table), check_dtype=False)
    jobs = res.jobs(tasks[0].run_id)
    assert len(jobs) == 150 and {"wait_s", "energy_j", "predicted_runtime_s"} <= set(jobs.columns)
    assert len(res.all_jobs(policy="easy", trace="kth")) == 2 * 150


def test_rerun_skips_finished_runs(tmp_path: Path, small_experiment: Path) -> None:
    out = tmp_path / "out"
    run_sweep(small_experiment, out, progress=False)
    stamps = {p.parent.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*/run.json")}
    again = run_sweep(small_experiment, out, progress=False)
    assert again.completed == [] and len(again.skipped) == again.total == 8
    assert {
        p.parent.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*/run.json")
    } == stamps


def test_changed_configuration_reruns_only_the_changed_runs(tmp_path: Path) -> None:
    path = write_experiment(tmp_path / "e.toml")
    out = tmp_path / "out"
    run_sweep(path, out, progress=False)
    path.write_text(
        path.read_text().replace('name = "easy"', 'name = "easy"\nengine = { idle_timeout_s = 60 }')
    )
    again = run_sweep(path, out, progress=False)
    assert sorted(again.completed) == sorted(
        t.run_id for t in plan_runs(load_experiment(path)) if t.policy == "easy"
    )
    assert len(again.skipped) == 4


def _crash_experiment(tmp_path: Path, marker: Path) -> Path:
    extra = f'[[policies]]\nname = "crashy"\npolicy = "es_experiments_plugins:CrashOncePolicy"\nparams = {{ marker = "{marker}" }}\n[[policies]]\nname = "conservative"\n'
    return write_experiment(tmp_path / "crash.toml", extra)


def _sweep_in_subprocess(path: Path, out: Path) -> subprocess.CompletedProcess:
    code = "import sys; from energysched import run_sweep; run_sweep(sys.argv[1], sys.argv[2], progress=False)"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-c", code, str(path), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_sweep_killed_midway_resumes_without_redoing_finished_runs(tmp_path: Path) -> None:
    marker = tmp_path / "crashed-once"
    path = _crash_experiment(tmp_path, marker)
    tasks = plan_runs(load_experiment(path))
    out = tmp_path / "interrupted"

    first = _sweep_in_subprocess(
        path, out
    )  # the process dies hard (os._exit) in the first crashy run
    assert first.returncode == 17, first.stderr
    finished = {p.parent.name for p in (out / "runs").glob("*/run.json")}
    assert 0 < len(finished) < len(tasks)
    assert not any("crashy" in run_id for run_id in finished)
    assert not (out / "summaries.parquet").exists() and not (out / "summaries.csv").exists()
    stamps = {p.parent.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*/run.json")}

    second = run_sweep(path, out, progress=False)  # the same command again
    assert sorted(second.skipped) == sorted(finished)
    assert sorted(second.completed) == sorted({t.run_id for t in tasks} - finished)
    after = {p.parent.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*/run.json")}
    assert set(after) == {t.run_id for t in tasks}
    assert all(after[k] == v for k, v in stamps.items())  # finished runs were not redone
    assert not list((out / "runs").glob(".tmp-*"))

    clean = tmp_path / "uninterrupted"
    assert run_sweep(path, clean, progress=False).ok
    pd.testing.assert_frame_equal(
        _comparable(load_results(out).summaries), _comparable(load_results(clean).summaries)
    )


def test_failed_run_is_recorded_does_not_stop_the_sweep_and_is_retried(tmp_path: Path) -> None:
    marker = tmp_path / "now-it-works"
    extra = f'[[policies]]\nname = "flaky"\npolicy = "es_experiments_plugins:FailingPolicy"\nparams = {{ marker = "{marker}" }}\n'
    path = write_experiment(tmp_path / "fail.toml", extra)
    out = tmp_path / "out"
    summary = run_sweep(path, out, progress=False)
    flaky = sorted(t.run_id for t in plan_runs(load_experiment(path)) if t.policy == "flaky")
    assert sorted(summary.failed) == flaky and len(summary.completed) == 8
    error = (out / "failed" / flaky[0] / "error.txt").read_text()
    assert "Traceback" in error and "deliberate failure for the tests" in error
    res = load_results(out)
    assert (
        sorted(res.failures["run_id"]) == flaky
        and "deliberate failure" in res.failures["error"].iloc[0]
    )
    assert set(res.summaries["policy"]) == {"fcfs", "easy"}

    marker.write_text("ok")
    retry = run_sweep(path, out, progress=False)
    assert sorted(retry.completed) == flaky and not retry.failed and len(retry.skipped) == 8
    res = load_results(out)
    assert res.failures.empty and not (out / "failed" / flaky[0]).exists()
    easy = res.summaries[res.summaries["policy"] == "easy"].reset_index(drop=True)
    flaky_rows = res.summaries[res.summaries["policy"] == "flaky"].reset_index(drop=True)
    assert list(easy["energy_j"]) == list(flaky_rows["energy_j"])  # same policy, same numbers


def test_local_processes_give_the_same_numbers_as_in_process(
    tmp_path: Path, small_experiment: Path
) -> None:
    ids = [t.run_id for t in plan_runs(load_experiment(small_experiment)) if t.replicate == 1][:3]
    serial = run_sweep(
        small_experiment, tmp_path / "serial", executor=SerialExecutor(), only=ids, progress=False
    )
    procs = run_sweep(
        small_experiment, tmp_path / "procs", executor=ProcessExecutor(2), only=ids, progress=False
    )
    assert serial.ok and procs.ok and sorted(procs.completed) == sorted(ids)
    a = build_summaries(tmp_path / "serial")
    b = build_summaries(tmp_path / "procs")
    assert len(a) == 3
    pd.testing.assert_frame_equal(_comparable(a), _comparable(b))


def test_a_free_worker_gets_its_next_run_before_the_result_goes_back(
    small_experiment: Path,
) -> None:
    """The caller writes each result; a worker must not wait for that: by the time
    an outcome reaches the caller, the next run is already handed out."""
    tasks = [t for t in plan_runs(load_experiment(small_experiment)) if t.replicate == 1][:3]
    handed_out: list[str] = []
    executor = ProcessExecutor(1)
    handed_out_when_yielded = []
    for outcome in executor.run(tasks, lambda task: handed_out.append(task.run_id)):
        assert outcome.ok, outcome.error
        handed_out_when_yielded.append(len(handed_out))
    executor.close()
    assert handed_out_when_yielded == [2, 3, 3]
    assert handed_out == [t.run_id for t in tasks]


def test_local_workers_write_their_runs_results_themselves(
    tmp_path: Path, small_experiment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a recorder, a worker writes its run's directory and sends back the outcome
    without the result's tables: this process never writes (its store refuses here)."""
    import functools

    from energysched import store
    from energysched.sweep import record_outcome

    spec = load_experiment(small_experiment)
    tasks = [t for t in plan_runs(spec) if t.replicate == 1][:3]
    out = tmp_path / "out"
    store.prepare_out_dir(out, spec, tasks)

    sweep_process = os.getpid()
    write_outcome = store.write_outcome

    def in_workers_only(*args: Any, **kwargs: Any) -> Any:
        # (workers forked from this process inherit this function)
        if os.getpid() == sweep_process:
            raise AssertionError("the sweep process wrote a run's results")
        return write_outcome(*args, **kwargs)

    monkeypatch.setattr(store, "write_outcome", in_workers_only)
    executor = ProcessExecutor(2)
    record = functools.partial(record_outcome, out, fmt="csv")
    outcomes = list(executor.run(tasks, lambda task: None, record=record))
    executor.close()
    assert sorted(o.task.run_id for o in outcomes) == sorted(t.run_id for t in tasks)
    assert all(o.ok and o.result is None for o in outcomes), [o.error for o in outcomes]
    for task in tasks:
        run = out / "runs" / task.run_id
        assert (run / "jobs.csv").is_file() and _run_json(out, task.run_id)["status"] == "ok"
        assert len(pd.read_csv(run / "jobs.csv")) == {"kth": 150, "lublin": 120}[task.trace]


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (an exited child not reaped yet does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_workers_exit_after_the_last_run_and_close_waits_for_them(small_experiment: Path) -> None:
    """The last outcome is yielded without waiting for the workers to exit (the caller
    writes the summaries meanwhile); close() returns once they have."""
    tasks = [t for t in plan_runs(load_experiment(small_experiment)) if t.replicate == 1][:2]
    executor = ProcessExecutor(2)
    pids = {int(o.host.rsplit(":", 1)[1]) for o in executor.run(tasks, lambda task: None)}
    assert pids and os.getpid() not in pids
    executor.close()
    assert not [pid for pid in pids if _alive(pid)]


def test_only_restricts_the_runs(tmp_path: Path, small_experiment: Path) -> None:
    ids = [t.run_id for t in plan_runs(load_experiment(small_experiment))][:2]
    summary = run_sweep(small_experiment, tmp_path / "o", only=ids, progress=False)
    assert summary.completed == ids
    assert list(load_results(tmp_path / "o").summaries["run_id"]) == ids


def test_csv_store_when_asked(tmp_path: Path, small_experiment: Path) -> None:
    run_sweep(small_experiment, tmp_path / "csv", fmt="csv", progress=False)
    assert (tmp_path / "csv" / "summaries.csv").is_file()
    run_id = plan_runs(load_experiment(small_experiment))[0].run_id
    assert (tmp_path / "csv" / "runs" / run_id / "jobs.csv").is_file()
    assert len(load_results(tmp_path / "csv").jobs(run_id)) == 150


@pytest.mark.parametrize(
    "kw", [{"workers": 2, "scheduler": "tcp://x:1"}, {"scheduler": "http://x"}]
)
def test_executor_options_are_checked(kw: dict) -> None:
    from energysched import make_executor
    from energysched.errors import ConfigError

    with pytest.raises(ConfigError):
        make_executor(**kw)


def test_the_progress_bar_imports_no_asyncio() -> None:
    """The bar is made before the first run is handed out; tqdm.auto's asyncio
    mix-in (about 0.015 s) is not needed for it."""
    from tests.fresh_python import fresh_python

    code = (
        "import sys\n"
        "from energysched.sweep import _Progress\n"
        "_Progress(total=2, initial=0, show=False).close()\n"
        "print('asyncio' in sys.modules)\n"
    )
    assert fresh_python(code) == "False"


def test_comparisons_against_the_baseline_and_the_oracle_twin_worked_by_hand() -> None:
    """Ratios to the first baseline run of the same trace, platform and replicate (NaN
    without one), regrets against the same policy's oracle-driven run."""
    import numpy as np

    from energysched.store import add_comparisons

    rows = [  # trace, replicate, policy, predictor_spec, energy_j, makespan_s
        ("a", 0, "easy", "none", 10.0, 100.0),
        ("a", 0, "easy", "none", 99.0, 999.0),  # a second baseline row: the first one counts
        ("a", 0, "eco", "adept", 8.0, 120.0),
        ("a", 0, "eco", "oracle", 5.0, 150.0),
        ("a", 1, "eco", "adept", 6.0, 90.0),  # replicate 1 has no baseline run
        ("b", 0, "easy", "none", 0.0, 50.0),
        ("b", 0, "eco", "adept", 4.0, 50.0),  # baseline energy 0: inf
    ]
    table = pd.DataFrame(
        [
            {
                "run_id": f"r{i}",
                "trace": t,
                "platform": "p",
                "replicate": r,
                "policy": pol,
                "predictor_spec": pred,
                "energy_j": e,
                "makespan_s": m,
            }
            for i, (t, r, pol, pred, e, m) in enumerate(rows)
        ]
    )
    out = add_comparisons(table, baseline="easy")
    ratio = out["energy_vs_baseline"].to_numpy()
    assert list(ratio[:4]) == [1.0, 9.9, 0.8, 0.5] and np.isnan(ratio[4])
    assert np.isnan(ratio[5]) and np.isinf(ratio[6])  # 0 / 0 and 4 / 0
    assert list(out["makespan_vs_baseline"].to_numpy()[:4]) == [1.0, 9.99, 1.2, 1.5]
    assert out["mean_wait_vs_baseline"].isna().all()  # no such metric in the table
    regret = out["oracle_energy_regret"].to_numpy()
    assert np.isnan(regret[:2]).all() and regret[2] == 8.0 / 5.0 - 1.0 and regret[3] == 0.0
    assert np.isnan(regret[4:]).all()  # no oracle twin of replicate 1 or trace b
    assert out["oracle_makespan_regret"].to_numpy()[2] == 120.0 / 150.0 - 1.0
