"""The built-in default experiment and the demo that runs it.

``energysched demo`` = :func:`run_demo`: run ``energysched/data/default.toml``
(the first 5,000 jobs of the bundled KTH-SP2 trace and a 4,000-job synthetic
Lublin workload, rigid baselines versus energy-aware policies, learning
predictors and their oracle twins, 2 seeds: 32 runs, about 42 s of CPU time)
and write the report. ``quick=True`` shrinks the traces to 300 jobs and one
seed (16 runs), for tests and a first look.
"""

from __future__ import annotations

import copy
import logging
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

from energysched.config import ExperimentSpec, parse_experiment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

log = logging.getLogger(__name__)

#: Jobs per trace with ``quick=True``.
QUICK_JOBS = 300


def default_experiment_path() -> Path:
    """Path of the bundled default experiment file."""
    return Path(str(files("energysched") / "data" / "default.toml"))


def default_experiment_text() -> str:
    """The default experiment file's text."""
    return default_experiment_path().read_text(encoding="utf-8")


def quick_overrides(data: dict[str, Any], jobs: int = QUICK_JOBS) -> dict[str, Any]:
    """A copy of an experiment mapping shrunk for a quick look: ``jobs`` jobs per trace, one seed."""
    data = copy.deepcopy(data)
    for trace in data.get("traces", []):
        if "synthetic" in trace:
            trace["synthetic"]["n_jobs"] = min(int(trace["synthetic"]["n_jobs"]), jobs)
        else:
            trace["max_jobs"] = min(int(trace.get("max_jobs") or jobs), jobs)
    seeds = data.setdefault("seeds", {})
    seeds.pop("list", None)
    seeds["replicates"] = 1
    data["name"] = f"{data.get('name', 'experiment')}-quick"
    return data


def default_experiment(*, quick: bool = False) -> tuple[ExperimentSpec, str]:
    """The default experiment (validated) and the TOML text it came from."""
    path = default_experiment_path()
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    if quick:
        data = quick_overrides(data)
        text += f"\n# energysched demo --quick: {QUICK_JOBS} jobs per trace, one seed\n"
    return parse_experiment(data, source=str(path), base_dir=path.parent), text


def run_demo(
    out_dir: str | Path = "energysched-demo",
    *,
    quick: bool = False,
    executor: Any = None,
    progress: bool | None = None,
) -> tuple[Any, Any]:
    """Run the default experiment into ``out_dir`` and write its report.

    Returns ``(sweep_summary, report)`` (:class:`energysched.sweep.SweepSummary`,
    :class:`energysched.reporting.Report`). Re-running skips finished runs.
    """
    from energysched.reporting import make_report
    from energysched.sweep import run_sweep

    spec, text = default_experiment(quick=quick)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "experiment.toml").write_text(text, encoding="utf-8")
    summary = run_sweep(spec, out, executor=executor, progress=progress)
    report = make_report(out)
    return summary, report
