"""Summary metrics of a run (docs/background/models.md, section 4).

Definitions (jobs that ran = status ``completed`` or ``killed``):

* ``makespan_s``: from the first submission until the last job leaves the
  system (its end, or its rejection);
* ``energy_j``: platform energy over the same window, split into
  ``energy_busy_j``, ``energy_idle_j``, ``energy_off_j``,
  ``energy_switching_j`` (see :mod:`simulator.engine`);
* ``mean_wait_s``, ``p95_wait_s``: wait = start - submit (boot delays included);
* ``mean_bsld``: mean bounded slowdown ``max((wait + run) / max(run, tau), 1)``
  with ``tau = 10 s``;
* ``utilisation``: node-seconds of running jobs / (nodes x makespan);
* ``edp_js``: energy-delay product ``energy_j * makespan_s``;
* ``energy_killed_j``: the busy energy of the killed jobs (the integral of
  their nodes' power over their runtime, each job's ``energy_j``): spent on
  work that did not complete; ``energy_completed_jobs_j`` the same of the
  completed jobs;
* ``energy_per_completed_job_j``: ``energy_j / jobs_completed`` (the whole
  platform's energy, idle and killed work included, per job that completed;
  ``nan`` when none did): a policy that kills or rejects more jobs cannot
  look cheaper per unit of work done;
* ``jobs_completed``, ``jobs_killed``, ``jobs_rejected`` and the rejection
  reasons with their counts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

BSLD_TAU_S = 10.0


def bounded_slowdown(
    wait_s: np.ndarray, run_s: np.ndarray, tau_s: float = BSLD_TAU_S
) -> np.ndarray:
    """``max((wait + run) / max(run, tau), 1)`` element-wise."""
    wait_s = np.asarray(wait_s, dtype=np.float64)
    run_s = np.asarray(run_s, dtype=np.float64)
    return np.maximum((wait_s + run_s) / np.maximum(run_s, tau_s), 1.0)


def summarize(
    jobs: pd.DataFrame,
    *,
    energy_busy_j: float,
    energy_idle_j: float,
    energy_off_j: float,
    energy_switching_j: float,
    total_nodes: int,
    t0_s: float,
    t_end_s: float,
) -> dict[str, Any]:
    """The summary dictionary of a run from its jobs table and energy totals."""
    ran = jobs["status"].isin(["completed", "killed"]).to_numpy()
    wait = jobs["wait_s"].to_numpy()[ran]
    run = jobs["runtime_s"].to_numpy()[ran]
    nodes = jobs["nodes"].to_numpy()[ran]
    makespan = float(t_end_s - t0_s)
    energy = energy_busy_j + energy_idle_j + energy_off_j + energy_switching_j
    reasons = Counter(jobs.loc[jobs["status"] == "rejected", "reason"].fillna("unknown"))
    busy_node_s = float(np.sum(nodes * run))
    status = jobs["status"].to_numpy()
    job_energy = jobs["energy_j"].to_numpy(dtype=np.float64)
    killed = status == "killed"
    completed = status == "completed"
    n_completed = int(completed.sum())
    summary: dict[str, Any] = {
        "jobs": len(jobs),
        "jobs_completed": n_completed,
        "jobs_killed": int(killed.sum()),
        "jobs_rejected": int((jobs["status"] == "rejected").sum()),
        "rejection_reasons": dict(reasons),
        "makespan_s": makespan,
        "energy_j": energy,
        "energy_busy_j": energy_busy_j,
        "energy_idle_j": energy_idle_j,
        "energy_off_j": energy_off_j,
        "energy_switching_j": energy_switching_j,
        "energy_kwh": energy / 3.6e6,
        "mean_power_w": energy / makespan if makespan > 0 else 0.0,
        "mean_wait_s": float(wait.mean()) if len(wait) else 0.0,
        "p95_wait_s": float(np.percentile(wait, 95)) if len(wait) else 0.0,
        "max_wait_s": float(wait.max()) if len(wait) else 0.0,
        "mean_bsld": float(bounded_slowdown(wait, run).mean()) if len(wait) else 0.0,
        "utilisation": busy_node_s / (total_nodes * makespan) if makespan > 0 else 0.0,
        "edp_js": energy * makespan,
        "energy_killed_j": float(np.nansum(job_energy[killed])),
        "energy_completed_jobs_j": float(np.nansum(job_energy[completed])),
        "energy_per_completed_job_j": energy / n_completed if n_completed else float("nan"),
        "busy_node_s": busy_node_s,
    }
    return summary
