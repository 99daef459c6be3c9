"""``energysched workload generate``: writes an SWF file that reads back."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from energysched.cli import main
from workloads.swf import read_swf
from workloads.synthetic import generate


def run(*args: str):
    return CliRunner().invoke(main, ["workload", "generate", *args])


@pytest.mark.parametrize("model", ["lublin", "downey"])
@pytest.mark.parametrize("suffix", [".swf", ".swf.gz"])
def test_generate_writes_a_readable_trace(tmp_path, model, suffix):
    out = tmp_path / f"w{suffix}"
    result = run(
        "--model", model, "--jobs", "700", "--nodes", "48", "--out", str(out), "--seed", "3"
    )
    assert result.exit_code == 0, result.output
    assert "700 jobs" in result.output and "offered load" in result.output
    assert len(result.output.strip().splitlines()) == 1

    trace = read_swf(out)
    assert len(trace) == 700
    procs = trace.jobs["procs_alloc"].to_numpy(dtype=int)
    assert procs.min() >= 1 and procs.max() <= 48
    assert trace.max_nodes == 48 and trace.header["MaxJobs"] == 700
    assert "seed=3" in trace.header_text["Note"]
    # The file holds exactly what the library generates for the same arguments.
    expected = generate(model, 700, 48, seed=3).jobs
    for col in ("job_id", "submit_s", "runtime_s", "procs_alloc", "procs_req", "time_req_s"):
        np.testing.assert_array_equal(
            trace.jobs[col].to_numpy(dtype=float, na_value=np.nan),
            expected[col].to_numpy(dtype=float, na_value=np.nan),
        )


def test_generate_is_deterministic_and_seed_matters(tmp_path):
    paths = [tmp_path / "a.swf.gz", tmp_path / "b.swf.gz", tmp_path / "c.swf.gz"]
    for path, seed in zip(paths, ("5", "5", "6"), strict=True):
        result = run(
            "--model",
            "lublin",
            "--jobs",
            "300",
            "--nodes",
            "64",
            "--out",
            str(path),
            "--seed",
            seed,
        )
        assert result.exit_code == 0, result.output
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()


def test_default_seed_is_zero(tmp_path):
    out = tmp_path / "d.swf"
    assert (
        run("--model", "downey", "--jobs", "50", "--nodes", "8", "--out", str(out)).exit_code == 0
    )
    assert "seed=0" in read_swf(out).header_text["Note"]


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "feitelson96", "--jobs", "10", "--nodes", "8"],
        ["--model", "lublin", "--jobs", "0", "--nodes", "8"],
        ["--model", "lublin", "--jobs", "10", "--nodes", "0"],
        ["--model", "lublin", "--jobs", "10", "--nodes", "8", "--seed", "-1"],
        ["--model", "lublin", "--nodes", "8"],
    ],
)
def test_bad_arguments_fail_cleanly(tmp_path, args):
    out = tmp_path / "x.swf"
    result = run(*args, "--out", str(out))
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert not out.exists()


def test_unwritable_output_is_a_clean_error(tmp_path):
    out = tmp_path / "missing-dir" / "x.swf"
    result = run("--model", "lublin", "--jobs", "10", "--nodes", "8", "--out", str(out))
    assert result.exit_code == 1
    assert "Error" in result.output


def test_help_lists_the_models():
    result = CliRunner().invoke(main, ["workload", "generate", "--help"])
    assert result.exit_code == 0
    assert "lublin" in result.output and "downey" in result.output
