"""``energysched run``: files written, summary keys with units, clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from energysched.cli import main
from energysched.cli.run_cmd import parse_param
from workloads import Trace, write_swf
from workloads.schema import SWF_COLUMNS


@pytest.fixture()
def small_trace(tmp_path: Path) -> Path:
    rows = {c: [np.nan] * 3 for c in SWF_COLUMNS}
    frame = pd.DataFrame(rows)
    frame["job_id"] = [1, 2, 3]
    frame["submit_s"] = [0.0, 10.0, 20.0]
    frame["runtime_s"] = [100.0, 50.0, 30.0]
    frame["procs_alloc"] = [2, 4, 1]
    frame["procs_req"] = [2, 4, 1]
    frame["time_req_s"] = [200.0, 100.0, 60.0]
    frame["user_id"] = [1, 2, 1]
    frame["status"] = [1, 1, 1]
    for col in SWF_COLUMNS:
        if col not in (
            "submit_s",
            "wait_s",
            "runtime_s",
            "cpu_time_avg_s",
            "memory_used_kb",
            "time_req_s",
            "memory_req_kb",
            "think_time_s",
        ):
            frame[col] = frame[col].astype("Int64")
    path = tmp_path / "small.swf"
    write_swf(
        Trace(
            jobs=frame,
            header={"MaxNodes": 4, "MaxProcs": 4},
            header_lines=["; MaxNodes: 4", "; MaxProcs: 4"],
        ),
        path,
    )
    return path


def test_run_writes_results(small_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--trace",
            str(small_trace),
            "--platform",
            "trace",
            "--policy",
            "easy",
            "--truth",
            "none",  # the trace's runtimes: the schedule below is worked by hand from them
            "--out",
            str(out),
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "mean bounded slowdown" in result.output
    jobs = pd.read_csv(out / "jobs.csv")
    assert len(jobs) == 3 and set(jobs["status"]) == {"completed"}
    summary = json.loads((out / "summary.json").read_text())["summary"]
    for key in (
        "makespan_s",
        "energy_j",
        "energy_busy_j",
        "energy_idle_j",
        "energy_off_j",
        "energy_switching_j",
        "mean_wait_s",
        "p95_wait_s",
        "mean_bsld",
        "utilisation",
        "jobs_completed",
        "edp_js",
    ):
        assert key in summary
    # 4 nodes of 1 core; J1 (2 nodes, 0-100), J2 needs 4 nodes: waits for J1 (start 100);
    # J3 (1 node, 60 s) backfills at 20 (ends 80 <= shadow 100).
    assert jobs.set_index("job_id")["start_s"].to_dict() == {1: 0.0, 2: 100.0, 3: 20.0}
    assert summary["makespan_s"] == pytest.approx(150.0)
    power = pd.read_csv(out / "power.csv")
    edges = np.append(power["time_s"].to_numpy(), 150.0)
    assert float(np.sum(power["power_w"].to_numpy() * np.diff(edges))) == pytest.approx(
        summary["energy_j"]
    )


def test_run_parquet_by_default_when_available(small_trace: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "pq"
    result = CliRunner().invoke(
        main, ["run", "--trace", str(small_trace), "--policy", "fcfs", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert (out / "jobs.parquet").exists()


def test_run_bad_inputs_give_clean_errors(small_trace: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(
        main, ["run", "--trace", str(tmp_path / "nope.swf"), "--out", str(tmp_path / "o")]
    )
    assert missing.exit_code == 1
    assert isinstance(missing.exception, SystemExit)  # a clean ClickException, not a crash
    assert "trace file not found" in missing.output
    bad_policy = runner.invoke(
        main,
        ["run", "--trace", str(small_trace), "--policy", "nonsense", "--out", str(tmp_path / "o")],
    )
    assert bad_policy.exit_code == 1 and isinstance(bad_policy.exception, SystemExit)
    assert "unknown policy 'nonsense'" in bad_policy.output and "easy" in bad_policy.output
    bad_platform = runner.invoke(
        main,
        [
            "run",
            "--trace",
            str(small_trace),
            "--platform",
            str(tmp_path / "p.toml"),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert bad_platform.exit_code != 0 and "file not found" in bad_platform.output
    bad_param = runner.invoke(
        main,
        ["run", "--trace", str(small_trace), "--param", "novalue", "--out", str(tmp_path / "o")],
    )
    assert bad_param.exit_code == 2 and "key=value" in bad_param.output


def test_parse_param_values() -> None:
    assert parse_param("slack=0.2") == ("slack", 0.2)
    assert parse_param("sizes=[1, 2, 4]") == ("sizes", [1, 2, 4])
    assert parse_param("enabled=true") == ("enabled", True)
    assert parse_param("order=sjf") == ("order", "sjf")


def test_run_with_a_bad_line(small_trace: Path, tmp_path: Path) -> None:
    lines = small_trace.read_text().splitlines()
    data = [i for i, line in enumerate(lines) if line.strip() and not line.startswith(";")]
    lines.insert(data[1] + 1, "   9   30  -1  oops  1  -1 -1 1 100 -1 1 1 -1 -1 -1 -1 -1 -1")
    bad = tmp_path / "bad.swf"
    bad.write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    failed = runner.invoke(main, ["run", "--trace", str(bad), "--out", str(tmp_path / "a")])
    assert failed.exit_code == 1
    assert f"line {data[1] + 2}" in failed.output and "runtime_s" in failed.output
    ok = runner.invoke(
        main, ["run", "--trace", str(bad), "--skip-bad-lines", "--out", str(tmp_path / "b")]
    )
    assert ok.exit_code == 0, ok.output
    assert "skipped 1 malformed trace lines" in ok.output
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["summary"]["jobs"] == 3
    assert summary["meta"]["cleaning"]["bad_lines_skipped"] == 1


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_rigid_and_predictive_policies_get_the_same_ground_truth(
    small_trace: Path, tmp_path: Path
) -> None:
    """No --truth: every policy runs the default preset (npb-mix); EASY used to get
    none while the energy policies got npb-mix, so their energies did not compare."""
    runner = CliRunner()
    apps = {}
    for policy in ("easy", "easy-energy-freq"):
        out = tmp_path / policy
        result = runner.invoke(
            main,
            [
                "run",
                "--trace",
                str(small_trace),
                "--policy",
                policy,
                "--out",
                str(out),
                "--format",
                "csv",
            ],
        )
        assert result.exit_code == 0, result.output
        assert "ground truth: npb-mix (seed 0)" in result.output
        data = _summary(out)
        assert data["summary"]["ground_truth"] == "npb-mix"
        assert data["meta"]["truth_preset"] == "npb-mix"
        assert "energy_killed_j" in data["summary"]
        assert "energy_per_completed_job_j" in data["summary"]
        apps[policy] = pd.read_csv(out / "jobs.csv")["application"].tolist()
    # the same jobs: the same hidden applications drawn for both
    assert apps["easy"] == apps["easy-energy-freq"] and min(apps["easy"]) >= 0
    # told otherwise: no ground truth
    out = tmp_path / "easy-none"
    result = runner.invoke(
        main,
        [
            "run",
            "--trace",
            str(small_trace),
            "--truth",
            "none",
            "--out",
            str(out),
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "ground truth: none" in result.output
    assert _summary(out)["summary"]["ground_truth"] == "none"


def test_run_prints_the_decisions_prediction_errors(tmp_path: Path) -> None:
    """A predictor-driven run prints median and mean |predicted / actual - 1| of its
    decisions over the completed jobs that had a prediction (the figures recomputed
    here from its jobs table); a rigid run, whose decisions predict nothing, does not."""
    from workloads.bundled import builtin_trace_path

    trace = str(builtin_trace_path("kth-sp2"))
    out = tmp_path / "bsld"
    args = ["run", "--trace", trace, "--max-jobs", "400", "--platform", "trace", "--out"]
    result = CliRunner().invoke(main, [*args, str(out), "--policy", "easy-energy-bsld-off"])
    assert result.exit_code == 0, result.output
    jobs = pd.read_parquet(out / "jobs.parquet")
    done = jobs[(jobs["status"] == "completed") & jobs["predicted_runtime_s"].notna()]
    ape = (done["predicted_runtime_s"] / done["runtime_s"] - 1.0).abs() * 100.0
    n_completed = int((jobs["status"] == "completed").sum())
    line = next(x for x in result.output.splitlines() if "runtime error median / mean" in x)
    assert f"{ape.median():,.0f} / {ape.mean():,.0f} %" in line
    assert f"({len(done)} of {n_completed} completed jobs predicted" in line
    rigid = CliRunner().invoke(main, [*args, str(tmp_path / "easy"), "--policy", "easy"])
    assert rigid.exit_code == 0, rigid.output
    assert "runtime error" not in rigid.output
