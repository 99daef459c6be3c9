"""``energysched workload describe``."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from energysched.cli import main
from workloads.schema import SWF_COLUMNS, Trace
from workloads.swf import write_swf

KTH = Path(str(resources.files("workloads").joinpath("data/KTH-SP2-1996-2.1-cln.swf.gz")))


def _small_trace(path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 120
    procs = rng.choice([1, 2, 4, 8], n)
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_s": np.sort(rng.uniform(0, 1e5, n)).round(),
            "wait_s": np.zeros(n),
            "runtime_s": rng.uniform(60, 3600, n).round(),
            "procs_alloc": procs,
            "procs_req": procs,
            "time_req_s": np.full(n, 7200.0),
            "status": np.ones(n, dtype=int),
            "user_id": rng.integers(1, 6, n),
            "executable_id": rng.integers(1, 9, n),
        }
    )
    for col in SWF_COLUMNS:  # unknown fields: SWF's -1
        if col not in jobs:
            jobs[col] = -1
    jobs = jobs[list(SWF_COLUMNS)]
    out = path / "small.swf"
    write_swf(Trace(jobs=jobs, header={"MaxNodes": 16, "MaxProcs": 16}, name="small"), out)
    return out


def test_describe_small_trace(tmp_path):
    trace = _small_trace(tmp_path)
    csv = tmp_path / "apps.csv"
    result = CliRunner().invoke(
        main,
        [
            "workload",
            "describe",
            "--trace",
            str(trace),
            "--preset",
            "hybrid-mix",
            "--seed",
            "3",
            "--csv",
            str(csv),
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "8 applications" in out
    assert "calibration error" in out and "preset 'hybrid-mix'" in out
    assert "S(n) at n = 2/8/32/128" in out
    table = pd.read_csv(csv)
    assert len(table) == 8 and table["jobs"].sum() == 120
    assert table["calib_err_max"].max() < 1e-12
    # deterministic: same seed, same text
    again = CliRunner().invoke(
        main,
        ["workload", "describe", "--trace", str(trace), "--preset", "hybrid-mix", "--seed", "3"],
    )
    assert again.output.splitlines()[:12] == out.splitlines()[:12]


def test_describe_with_platform_file(tmp_path):
    trace = _small_trace(tmp_path)
    toml = tmp_path / "p.toml"
    toml.write_text(
        'name = "p"\n[[node_types]]\nname = "n"\ncount = 16\ncores_per_node = 1\n'
        "pstates = [{ freq_ghz = 1.0, idle_power_w = 80.0, busy_power_w = 120.0 },"
        " { freq_ghz = 2.0, idle_power_w = 90.0, busy_power_w = 200.0 }]\n"
    )
    result = CliRunner().invoke(
        main, ["workload", "describe", "--trace", str(trace), "--platform", str(toml), "--top", "3"]
    )
    assert result.exit_code == 0, result.output
    assert "1/2 GHz" in result.output and "top 3 applications" in result.output


def test_describe_real_trace_without_executables():
    result = CliRunner().invoke(main, ["workload", "describe", "--trace", str(KTH), "--top", "5"])
    assert result.exit_code == 0, result.output
    # KTH has no executable numbers: applications are (user, size class) groups
    m = re.search(r"(\d+) jobs, (\d+) applications", result.output)
    assert m is not None and 1 < int(m.group(2)) < int(m.group(1))
    assert "calibration error (max relative, recorded size at Fmax): " in result.output


def test_unknown_preset_lists_known_ones(tmp_path):
    trace = _small_trace(tmp_path)
    result = CliRunner().invoke(
        main, ["workload", "describe", "--trace", str(trace), "--preset", "nope"]
    )
    assert result.exit_code != 0
    assert "npb-mix" in result.output and "memory-bound" in result.output
