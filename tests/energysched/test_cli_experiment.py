"""``energysched experiment run|validate`` and ``energysched report`` from the command line."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import write_experiment

from energysched import load_results
from energysched.cli import main


def test_validate_prints_the_plan(small_experiment: Path) -> None:
    result = CliRunner().invoke(main, ["experiment", "validate", str(small_experiment), "--list"])
    assert result.exit_code == 0, result.output
    assert "OK, 8 runs (2 traces x 1 platforms x 2 configurations x 2 seeds)" in result.output
    assert "kth__trace__fcfs__none__s0" in result.output


def test_bad_file_exits_with_the_key(tmp_path: Path) -> None:
    path = write_experiment(
        tmp_path / "bad.toml",
        '[[policies]]\nname = "easy2"\npolicy = "easy"\nparams = { sloth = 1 }\n',
    )
    for args in (
        ["experiment", "validate", str(path)],
        ["experiment", "run", str(path), "--out", str(tmp_path / "o")],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code != 0
        assert "policies[2].params.sloth" in result.output and str(path) in result.output


def test_run_then_rerun_then_report(tmp_path: Path, small_experiment: Path) -> None:
    out = tmp_path / "res"
    runner = CliRunner()
    first = runner.invoke(
        main,
        [
            "experiment",
            "run",
            str(small_experiment),
            "--workers",
            "1",
            "--out",
            str(out),
            "--no-report",
        ],
    )
    assert first.exit_code == 0, first.output
    assert "8 runs: 8 ran, 0 already finished, 0 failed" in first.output
    assert not (out / "report.html").exists()
    second = runner.invoke(
        main,
        [
            "experiment",
            "run",
            str(small_experiment),
            "--workers",
            "1",
            "--out",
            str(out),
            "--format",
            "csv",
        ],
    )
    assert second.exit_code == 0, second.output
    assert "8 runs: 0 ran, 8 already finished, 0 failed" in second.output
    assert f"report: {out / 'report.html'}" in second.output
    assert (out / "summaries.csv").exists() and len(load_results(out).summaries) == 8


def test_failed_runs_give_exit_code_1(tmp_path: Path) -> None:
    extra = '[[policies]]\nname = "flaky"\npolicy = "es_experiments_plugins:FailingPolicy"\n'
    path = write_experiment(tmp_path / "f.toml", extra)
    result = CliRunner().invoke(
        main,
        [
            "experiment",
            "run",
            str(path),
            "--workers",
            "1",
            "--out",
            str(tmp_path / "o"),
            "--no-report",
        ],
    )
    assert result.exit_code == 1
    assert "4 failed" in result.output and "error.txt" in result.output


def test_report_of_a_non_results_dir(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code != 0 and "not a results directory" in result.output


def test_only_one_executor_option(small_experiment: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "experiment",
            "run",
            str(small_experiment),
            "--workers",
            "2",
            "--dask-local",
            "2",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code != 0 and "at most one of" in result.output
