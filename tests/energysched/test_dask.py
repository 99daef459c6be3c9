"""The same sweep on local processes and on a Dask LocalCluster gives identical summaries."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pandas as pd
import pytest

from energysched import DaskExecutor, ProcessExecutor, load_experiment, plan_runs, run_sweep
from energysched.store import build_summaries
from tests.fresh_python import fresh_python

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


# A fresh process (no fork server of an earlier test running) starts a 1-worker local
# cluster and asks its worker for its parent.
FORKED_DASK_WORKER = """
import json, os
import dask
from multiprocessing import forkserver
from energysched import DaskExecutor

executor = DaskExecutor(local_workers=1)
try:
    parents = list(executor.client.run(os.getppid).values())
finally:
    executor.close()
print(json.dumps({
    "sweep": os.getpid(),
    "fork_server": forkserver._forkserver._forkserver_pid,
    "parents": parents,
    "method_after": dask.config.get("distributed.worker.multiprocessing-method"),
}))
"""


@pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here"
)
def test_local_dask_workers_come_from_a_preloaded_fork_server() -> None:
    seen = json.loads(fresh_python(FORKED_DASK_WORKER).splitlines()[-1])
    assert seen["fork_server"] not in (None, seen["sweep"])
    assert seen["parents"] == [seen["fork_server"]]  # forked by it, not spawned by the sweep
    assert seen["method_after"] == "spawn"  # Dask's setting is restored after the start
