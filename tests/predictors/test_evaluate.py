"""The replayed-stream evaluation and the predictors CLI."""

from __future__ import annotations

from importlib.resources import files

import numpy as np
import pytest
from click.testing import CliRunner

from predictors.evaluate import _replay_batches, evaluate_predictors, format_mape_table

KTH = str(files("workloads") / "data" / "KTH-SP2-1996-2.1-cln.swf.gz")


@pytest.fixture(scope="module")
def kth():
    from simulator.platform import platform_from_trace
    from workloads.applications import assign_ground_truth
    from workloads.swf import read_swf

    trace = read_swf(KTH)
    platform = platform_from_trace(trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    return trace, platform, truth


def test_replay_batches_never_repeat_an_application():
    apps = np.array([1, 2, 1, 3, 3, 4, 5, 6])
    got = _replay_batches(apps, batch=3)
    assert got == [(0, 2), (2, 4), (4, 7), (7, 8)]
    for a, b in got:
        assert len(set(apps[a:b])) == b - a


def test_evaluate_small_kth(kth):
    trace, platform, truth = kth
    names = ["requested", "fluid", "amdahl+fluid", "lbm", "online-node-type", "oracle"]
    table, rows = evaluate_predictors(trace, platform, truth, names, max_jobs=150, return_rows=True)
    assert set(table["predictor"]) == set(names)
    assert list(table[table.predictor == "fluid"]["observations"]) == [
        "0",
        "1-2",
        "3-5",
        "6+",
        "all",
    ]
    oracle = table[table.predictor == "oracle"]
    assert np.allclose(oracle[["time_mape", "power_mape", "energy_mape"]].fillna(0), 0.0)
    allrows = table[table.observations == "all"].set_index("predictor")
    assert (allrows["jobs"] == 150).all()
    # learning helps: with 6+ runs the fluid model's power beats the P-state guess of the rigid baseline
    six = table[table.observations == "6+"].set_index("predictor")
    assert six.loc["fluid", "power_mape"] < six.loc["requested", "power_mape"]
    # the bucket of a row is the count of earlier runs of its application
    assert set(rows["observations"]) <= {"0", "1-2", "3-5", "6+"}
    text = format_mape_table(table)
    assert "| fluid |" in text and "power" in text


def test_evaluate_is_deterministic(kth):
    trace, platform, truth = kth
    a = evaluate_predictors(trace, platform, truth, ["fluid"], max_jobs=120, seed=3)
    b = evaluate_predictors(trace, platform, truth, ["fluid"], max_jobs=120, seed=3)
    cols = ["time_mape", "power_mape", "energy_mape"]
    assert np.allclose(a[cols].to_numpy(), b[cols].to_numpy(), equal_nan=True)


def test_cli_list_and_evaluate(tmp_path):
    from energysched.cli import main

    runner = CliRunner()
    got = runner.invoke(main, ["predictors", "list"])
    assert got.exit_code == 0, got.output
    assert "fluid" in got.output and "adept+fluid" in got.output
    out = tmp_path / "table.csv"
    got = runner.invoke(
        main,
        [
            "predictors",
            "evaluate",
            "--trace",
            KTH,
            "--max-jobs",
            "80",
            "--predictors",
            "requested,fluid",
            "--output",
            str(out),
        ],
    )
    assert got.exit_code == 0, got.output
    assert "| fluid |" in got.output and out.exists()
    got = runner.invoke(main, ["predictors", "evaluate", "--trace", KTH, "--predictors", "nope"])
    assert got.exit_code != 0 and "known" in got.output
