"""The same sweep on local processes and on a Dask LocalCluster gives identical summaries."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from energysched import DaskExecutor, ProcessExecutor, load_experiment, plan_runs, run_sweep
from energysched.store import build_summaries

pytest.importorskip("distributed")


@pytest.mark.slow
def test_local_processes_and_local_dask_cluster_agree(
    tmp_path: Path, small_experiment: Path
) -> None:
    tasks = plan_runs(load_experiment(small_experiment))
    procs = run_sweep(
        small_experiment, tmp_path / "procs", executor=ProcessExecutor(2), progress=False
    )
    dask = DaskExecutor(local_workers=2)
    try:
        assert dask.client.scheduler_info()["address"].startswith("tls://127.0.0.1:")
        assert "127.0.0.1" in dask.dashboard_link
        on_dask = run_sweep(small_experiment, tmp_path / "dask", executor=dask, progress=False)
    finally:
        dask.close()
    assert procs.ok and on_dask.ok
    assert sorted(on_dask.completed) == sorted(t.run_id for t in tasks)
    a = build_summaries(tmp_path / "procs")
    b = build_summaries(tmp_path / "dask")
    assert list(a["run_id"]) == list(b["run_id"]) == [t.run_id for t in tasks]
    pd.testing.assert_frame_equal(a, b)
    # and the per-job tables too
    for t in tasks[:3]:
        pa = tmp_path / "procs" / "runs" / t.run_id / "jobs.parquet"
        pb = tmp_path / "dask" / "runs" / t.run_id / "jobs.parquet"
        pd.testing.assert_frame_equal(pd.read_parquet(pa), pd.read_parquet(pb))
