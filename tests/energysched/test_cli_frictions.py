"""Small CLI frictions of issue 18: shared policy parameters printed once, --out everywhere,
the jobs-table format named, Dask's INFO lines kept quiet."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from energysched.cli import main
from energysched.cli.policies_cmd import shared_params


def test_policies_list_prints_shared_parameters_once() -> None:
    result = CliRunner().invoke(main, ["policies", "list"])
    assert result.exit_code == 0, result.output
    assert result.output.count("refit_growth=") == 1  # shared: once, not under each of 16 policies
    assert "Parameters every built-in policy takes" in result.output
    # what differs between policies stays on each policy's line
    lines = result.output.splitlines()
    easy_line = lines[next(i for i, line in enumerate(lines) if line.startswith("easy ")) + 1]
    assert "backfill='easy'" in easy_line and "predictor=None" in easy_line


def test_shared_params_are_those_with_one_default_everywhere() -> None:
    items = [
        {"params": {"a": 1, "b": 2, "c": 3}},
        {"params": {"a": 1, "b": 5, "c": 3}},
        {"params": {"a": 1, "c": 3, "d": 0}},
    ]
    assert shared_params(items) == {"a": 1, "c": 3}


@pytest.mark.parametrize("option", ["--out", "--output"])
def test_predictors_evaluate_takes_out_and_the_old_output(option: str, tmp_path: Path) -> None:
    target = tmp_path / "errors.csv"
    result = CliRunner().invoke(
        main,
        [
            "predictors",
            "evaluate",
            "--trace",
            "builtin:kth-sp2",
            "--predictors",
            "amdahl",
            "--max-jobs",
            "60",
            option,
            str(target),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "amdahl" in set(pd.read_csv(target)["predictor"])


def test_run_names_the_jobs_table_format(tmp_path: Path) -> None:
    args = ["run", "--trace", "builtin:kth-sp2", "--max-jobs", "40"]
    result = CliRunner().invoke(main, [*args, "--format", "csv", "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert "jobs table format: CSV (--format csv)" in result.output
    assert (tmp_path / "a" / "jobs.csv").is_file()
    pytest.importorskip("pyarrow")
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "b")])
    assert (
        "jobs table format: Parquet (pyarrow is installed; --format csv for CSV)" in result.output
    )


def test_dask_loggers_quiet_unless_verbose() -> None:
    pytest.importorskip("distributed")
    from energysched.cli.experiment_cmd import _quiet_dask

    logging.getLogger("distributed").setLevel(logging.INFO)
    _quiet_dask()  # outside a click context: as without -v
    assert logging.getLogger("distributed").level == logging.WARNING
