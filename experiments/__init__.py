"""Experiments: experiment files, sweeps (local processes or Dask), results store, reports.

Typical use from a notebook::

    from experiments import load_experiment, run_sweep, load_results, make_report

    summary = run_sweep("my-experiment.toml", "results/mine")
    res = load_results("results/mine")
    res.summaries                      # one row per run, every metric
    res.jobs(res.summaries.run_id[0])  # per-job table of one run
    make_report("results/mine")        # report.html + report.md

One run on its own is :func:`run_spec` (what ``energysched run`` calls).
"""

from __future__ import annotations

from experiments.config import (
    ExperimentFileError,
    ExperimentSpec,
    load_experiment,
    parse_experiment,
)
from experiments.demo import default_experiment, default_experiment_path, run_demo
from experiments.pareto import pareto_front, pareto_mask
from experiments.report import Report, headline_table, make_report
from experiments.runner import RunSpec, build_platform, load_trace, run_spec
from experiments.store import Results, load_results
from experiments.sweep import (
    DaskExecutor,
    ProcessExecutor,
    RunTask,
    SerialExecutor,
    SweepSummary,
    execute_task,
    make_executor,
    plan_runs,
    run_sweep,
)

__all__ = [
    "DaskExecutor",
    "ExperimentFileError",
    "ExperimentSpec",
    "ProcessExecutor",
    "Report",
    "Results",
    "RunSpec",
    "RunTask",
    "SerialExecutor",
    "SweepSummary",
    "build_platform",
    "default_experiment",
    "default_experiment_path",
    "execute_task",
    "headline_table",
    "load_experiment",
    "load_results",
    "load_trace",
    "make_executor",
    "make_report",
    "pareto_front",
    "pareto_mask",
    "parse_experiment",
    "plan_runs",
    "run_demo",
    "run_spec",
    "run_sweep",
]
