"""module:Class plug-ins saved in the current folder or next to the experiment file import
without PYTHONPATH, and a predictor-driven policy without ground truth is warned about."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from energysched.cli import main

POLICY = """
from policies import QueuePolicy


def make(**params):
    return QueuePolicy(backfill="easy", name="{name}", **params)
"""


def _forget(name: str) -> None:
    sys.modules.pop(name, None)


def test_run_imports_a_policy_saved_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "plugin_in_cwd_policy"
    (tmp_path / f"{name}.py").write_text(POLICY.format(name=name), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in sys.path and name not in sys.modules
    try:
        result = CliRunner().invoke(
            main,
            [
                "run",
                "--trace",
                "builtin:kth-sp2",
                "--policy",
                f"{name}:make",
                "--max-jobs",
                "50",
                "--out",
                "out",
            ],
        )
        assert result.exit_code == 0, result.output
        assert f"{name}:make on" in result.output
        assert "jobs table format: " in result.output
        # appended, not prepended: a user's policies.py cannot shadow the package
        assert sys.path.index(str(tmp_path)) > sys.path.index(
            str(Path(sys.modules["policies"].__file__).parents[1])
        )
    finally:
        _forget(name)
        monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])


def test_experiment_file_folder_is_importable_and_missing_truth_is_warned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "plugin_next_to_file_policy"
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / f"{name}.py").write_text(POLICY.format(name=name), encoding="utf-8")
    (folder / "exp.toml").write_text(
        f"""
name = "plug"
ground_truth = "none"
[[traces]]
name = "kth"
source = "builtin:kth-sp2"
max_jobs = 50
[[predictors]]
name = "requested+fluid"
[[policies]]
name = "easy"
[[policies]]
name = "mine"
policy = "{name}:make"
[[policies]]
name = "easy-energy-freq"
predictors = ["requested+fluid"]
""",
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    try:
        result = CliRunner().invoke(main, ["experiment", "validate", str(folder / "exp.toml")])
        assert result.exit_code == 0, result.output
        assert "OK, 3 runs" in result.output
        # one warning, for the predictor-driven policy only
        assert result.output.count("warning: policy") == 1
        assert (
            "'easy-energy-freq' is driven by a predictor but the file sets ground_truth = \"none\""
            in result.output
        )
    finally:
        _forget(name)
        monkeypatch.setattr(
            sys, "path", [p for p in sys.path if p not in (str(folder), str(elsewhere))]
        )


def test_no_warning_with_a_ground_truth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "exp.toml").write_text(
        """
[ground_truth]
preset = "npb-mix"
[[traces]]
name = "kth"
source = "builtin:kth-sp2"
max_jobs = 50
[[predictors]]
name = "oracle"
[[policies]]
name = "easy-energy-freq"
predictors = ["oracle"]
""",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["experiment", "validate", "exp.toml"])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
