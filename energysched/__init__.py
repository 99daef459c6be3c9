"""energysched: a testbed for energy-aware scheduling of HPC clusters.

This package is the front door. The distribution also ships the layers it
builds on as top-level packages: ``simulator`` (the engine), ``workloads``
(traces, generators, ground truth), ``predictors`` and ``policies``.

Typical use from a notebook::

    import energysched

    summary = energysched.run_sweep("my-experiment.toml", "results/mine")
    res = energysched.load_results("results/mine")
    res.summaries                      # one row per run, every metric
    res.jobs(res.summaries.run_id[0])  # per-job table of one run
    energysched.make_report("results/mine")   # report.html + report.md

One run on its own is :func:`energysched.run` (what ``energysched run``
calls; it returns DataFrames).

Every layer imports :mod:`energysched.errors`, so this module imports nothing
else eagerly: the names below load their module on first access (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import lazy_loader

from energysched.errors import (
    ConfigError,
    EnergySchedError,
    NotFittedError,
    PolicyError,
    TraceFormatError,
)

__version__ = "0.1.0"

# public names by the module that defines them, loaded on first access (lazy_loader)
_lazy_getattr, _, _lazy_names = lazy_loader.attach(
    __name__,
    submod_attrs={
        "config": ["ExperimentFileError", "ExperimentSpec", "load_experiment", "parse_experiment"],
        "demo": ["default_experiment", "default_experiment_path", "run_demo"],
        "pareto": ["pareto_front", "pareto_mask"],
        "reporting": ["Report", "headline_table", "make_report"],
        "runner": ["RunSpec", "build_platform", "load_trace", "run_spec"],
        "store": ["Results", "load_results"],
        "sweep": [
            "DaskExecutor",
            "ProcessExecutor",
            "RunTask",
            "SerialExecutor",
            "SweepSummary",
            "execute_task",
            "make_executor",
            "plan_runs",
            "run_sweep",
        ],
    },
)
# front-door aliases: short names for the everyday calls
_ALIASES: dict[str, tuple[str, str]] = {
    "run": ("energysched.runner", "run_spec"),
    "report": ("energysched.reporting", "make_report"),
}

__all__ = [
    "ConfigError",
    "DaskExecutor",
    "EnergySchedError",
    "ExperimentFileError",
    "ExperimentSpec",
    "NotFittedError",
    "PolicyError",
    "ProcessExecutor",
    "Report",
    "Results",
    "RunSpec",
    "RunTask",
    "SerialExecutor",
    "SweepSummary",
    "TraceFormatError",
    "__version__",
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
    "report",
    "run",
    "run_demo",
    "run_spec",
    "run_sweep",
]


def __getattr__(name: str) -> Any:
    alias = _ALIASES.get(name)
    if alias is None:
        return _lazy_getattr(name)
    value = getattr(importlib.import_module(alias[0]), alias[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)


if TYPE_CHECKING:  # static checkers see the lazy names as ordinary imports
    from energysched.config import (
        ExperimentFileError,
        ExperimentSpec,
        load_experiment,
        parse_experiment,
    )
    from energysched.demo import default_experiment, default_experiment_path, run_demo
    from energysched.pareto import pareto_front, pareto_mask
    from energysched.reporting import Report, headline_table, make_report
    from energysched.reporting import make_report as report
    from energysched.runner import RunSpec, build_platform, load_trace, run_spec
    from energysched.runner import run_spec as run
    from energysched.store import Results, load_results
    from energysched.sweep import (
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
