"""Same inputs, same bytes: under network contention the result files do not depend on
the process's history or on the executor (issue 17, item 7)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from energysched import ProcessExecutor, SerialExecutor, run_sweep
from energysched.runner import RunSpec, run_spec
from simulator.config import RunConfig

DATA = Path(__file__).resolve().parent / "data"
PLATFORM = DATA / "contention_platform.toml"  # 100 nodes on one leaf switch

EXPERIMENT = f"""
name = "contention"
platform = "{PLATFORM}"
[ground_truth]
preset = "hybrid-mix"
[[traces]]
name = "kth"
source = "builtin:kth-sp2"
max_jobs = 1000
[[policies]]
name = "easy"
"""


def _digest(result: object) -> tuple[str, str, str]:
    jobs = result.jobs  # type: ignore[attr-defined]
    power = result.power  # type: ignore[attr-defined]
    return (
        float(result.summary["energy_j"]).hex(),  # type: ignore[attr-defined]
        hashlib.sha256(jobs[["start_s", "end_s", "energy_j"]].to_numpy().tobytes()).hexdigest(),
        hashlib.sha256(power.to_numpy().tobytes()).hexdigest(),
    )


def test_contention_does_not_depend_on_memory_addresses() -> None:
    """The background message rate sums the other jobs on a switch; summed in an
    order set by memory addresses, it changed with whatever the process allocated
    before. Here the allocator is deliberately disturbed between two replays."""
    import simulator.engine as engine

    spec = RunSpec(
        trace="builtin:kth-sp2",
        platform=str(PLATFORM),
        truth_preset="hybrid-mix",
        max_jobs=1000,
        config=RunConfig(),
    )
    first = _digest(run_spec(spec))
    kept = []
    for k in range(3):  # fill the allocator's free slots of engine runs in a new pattern
        junk = [engine._Run.__new__(engine._Run) for _ in range(5000)]
        kept += junk[k::7]
    second = _digest(run_spec(spec))
    assert first == second


def _result_bytes(out: Path) -> dict[str, bytes]:
    files = {}
    for run in sorted((out / "runs").iterdir()):
        for name in ("jobs.parquet", "jobs.csv", "power.csv"):
            if (run / name).exists():
                files[f"{run.name}/{name}"] = (run / name).read_bytes()
    return files


def test_executors_write_identical_result_files(tmp_path: Path) -> None:
    exp = tmp_path / "contention.toml"
    exp.write_text(EXPERIMENT, encoding="utf-8")
    outs = {
        "serial": run_sweep(exp, tmp_path / "serial", executor=SerialExecutor(), progress=False),
        "processes": run_sweep(
            exp, tmp_path / "processes", executor=ProcessExecutor(2), progress=False
        ),
    }
    try:
        from energysched import DaskExecutor

        pytest.importorskip("distributed")
        dask = DaskExecutor(local_workers=2)
        try:
            outs["dask"] = run_sweep(exp, tmp_path / "dask", executor=dask, progress=False)
        finally:
            dask.close()
    except pytest.skip.Exception:
        pass
    assert all(s.ok for s in outs.values())
    reference = _result_bytes(tmp_path / "serial")
    assert reference
    for name in outs:
        assert _result_bytes(tmp_path / name) == reference, name
