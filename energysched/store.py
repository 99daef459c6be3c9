"""The results store: one directory per run, one tidy table of run summaries.

Layout of a results directory::

    OUT/
      experiment.toml        the experiment file as given (when run from a file)
      experiment.json        resolved configuration, energysched version, seeds,
                             baseline, metrics and the planned runs (in order)
      runs/RUN_ID/           one finished run (written to a temp dir, then renamed)
        run.json             the task, its configuration hash, version, seed, timing
        summary.json         RunResult summary + meta
        jobs.parquet|csv     per-job table (simulator.results.JOB_COLUMNS)
        power.csv            platform power timeline (busy/idle/off/switching)
      failed/RUN_ID/         a failed run: run.json + error.txt (the traceback)
      summaries.parquet|csv  one row per finished run (see :func:`build_summaries`)
      failures.csv           one row per failed run

A run directory appears atomically (``os.replace`` of a finished temp dir), so
a crash loses only runs in flight; :func:`is_finished` tells the sweep which
runs to skip. :func:`load_results` is the one call for notebooks.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from energysched.sweep import RunTask, TaskOutcome, run_hash, split_counted

if TYPE_CHECKING:  # (a worker that writes its runs' results needs no pydantic)
    from energysched.config import ExperimentSpec

log = logging.getLogger(__name__)

RUNS = "runs"
FAILED = "failed"
LABEL_COLUMNS: tuple[str, ...] = (
    "run_id",
    "trace",
    "platform",
    "policy",
    "predictor",
    "replicate",
    "seed",
    "policy_spec",
    "predictor_spec",
)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, default=_json_default)
    _write_text(path, text)


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` atomically (temp file + ``os.replace``; no temp file left on failure)."""
    from simulator.results import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _version() -> str:
    from energysched import __version__

    return __version__


def prepare_out_dir(
    out: Path, experiment: ExperimentSpec, tasks: list[RunTask], *, source_text: str | None = None
) -> None:
    """Create ``out``, remove temp dirs left by a crash, save the resolved configuration.

    Raises:
        ConfigError: ``out`` holds files but is not a results directory
            (no ``experiment.json``): results are never mixed into it.
    """
    entries = {p.name for p in out.iterdir()} if out.is_dir() else set()
    if entries and not entries & {"experiment.json", "experiment.toml", RUNS, FAILED}:
        from energysched.errors import ConfigError

        raise ConfigError(
            "out",
            f"{out} is not empty and is not a results directory (no experiment.json); "
            "choose an empty or new directory",
        )
    try:
        (out / RUNS).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from energysched.errors import ConfigError

        raise ConfigError(
            "out", f"cannot create {out} ({exc.strerror or exc}); choose another directory"
        ) from None
    for stale in (out / RUNS).glob(".tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    if source_text is not None:
        _write_text(out / "experiment.toml", source_text)
    _write_json(
        out / "experiment.json",
        {
            "name": experiment.name,
            "description": experiment.description,
            "energysched_version": _version(),
            "experiment": experiment.model_dump(mode="json", by_alias=True),
            "seeds": experiment.seeds.values(),
            "baseline": experiment.baseline_policy(),
            "metrics": list(experiment.metrics),
            "runs": [t.to_dict() for t in tasks],
        },
    )


_RUN_ID_RE = re.compile(r"[A-Za-z0-9_+\-][A-Za-z0-9_.+\-]*")


def check_run_id(run_id: Any) -> str:
    """``run_id`` if it names a directory inside the results directory, else a ConfigError.

    Run ids come from :func:`energysched.sweep.make_run_id` (letters, digits
    and ``_.+-``); a crafted ``experiment.json`` with ``../`` or an absolute
    path in a run id must not make a reader leave the results directory.
    """
    if not isinstance(run_id, str) or _RUN_ID_RE.fullmatch(run_id) is None:
        from energysched.errors import ConfigError

        raise ConfigError(
            "run_id",
            f"{run_id!r} is not a run id (letters, digits and _.+- only, not starting with '.')",
        )
    return run_id


def run_dir(out: Path, run_id: str) -> Path:
    """The directory of run ``run_id`` (always inside ``out/runs``)."""
    return out / RUNS / check_run_id(run_id)


def is_finished(out: Path, task: RunTask) -> bool:
    """True when ``task`` has a finished run directory with the same configuration hash."""
    meta_path = run_dir(out, task.run_id) / "run.json"
    if not meta_path.is_file():
        return False
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    if meta.get("config_hash") != task.config_hash():
        log.warning("run %s: configuration changed since it ran; running it again", task.run_id)
        return False
    if meta.get("run_hash") != run_hash(task):
        log.warning(
            "run %s: energysched version, plug-in source or trace changed since it ran; "
            "running it again",
            task.run_id,
        )
        return False
    return meta.get("status") == "ok" and (run_dir(out, task.run_id) / "summary.json").is_file()


def derived_metrics(jobs: pd.DataFrame, summary: dict[str, Any]) -> dict[str, Any]:
    """Per-run metrics computed from the jobs table.

    * ``energy_per_job_j``: ``energy_j / jobs``;
    * ``mape_runtime`` / ``mape_energy``: mean absolute percentage error (as a
      fraction) of ``predicted_runtime_s`` vs ``runtime_s`` and
      ``predicted_energy_j`` vs ``energy_j`` over the completed jobs that
      have a prediction (killed jobs are excluded: their runtime is cut);
    * ``mdape_runtime`` / ``mdape_energy``: the median of the same absolute
      relative errors ``|predicted / actual - 1|`` (a fraction; a few huge
      errors dominate a mean, not a median);
    * ``n_predicted``: how many jobs entered the MAPE.
    """
    out: dict[str, Any] = {}
    n_jobs = summary.get("jobs") or len(jobs)
    out["energy_per_job_j"] = float(summary.get("energy_j", np.nan)) / n_jobs if n_jobs else np.nan
    done = (
        jobs["status"].to_numpy() == "completed" if "status" in jobs else np.ones(len(jobs), bool)
    )
    for name, pred_col, true_col in (
        ("runtime", "predicted_runtime_s", "runtime_s"),
        ("energy", "predicted_energy_j", "energy_j"),
    ):
        if pred_col not in jobs or true_col not in jobs:
            out[f"mape_{name}"] = np.nan
            out[f"mdape_{name}"] = np.nan
            continue
        pred = jobs[pred_col].to_numpy(dtype=float, na_value=np.nan)
        true = jobs[true_col].to_numpy(dtype=float, na_value=np.nan)
        mask = done & np.isfinite(pred) & np.isfinite(true) & (true > 0)
        ape = np.abs(pred[mask] - true[mask]) / true[mask]
        out[f"mape_{name}"] = float(np.mean(ape)) if mask.any() else np.nan
        out[f"mdape_{name}"] = float(np.median(ape)) if mask.any() else np.nan
        if name == "runtime":
            out["n_predicted"] = int(mask.sum())
    return out


def write_outcome(out: Path, outcome: TaskOutcome, *, fmt: str = "auto") -> Path:
    """Write one finished (or failed) run atomically; returns its directory."""
    task = outcome.task
    meta = {
        "run_id": task.run_id,
        "status": "ok" if outcome.ok else "failed",
        "config_hash": task.config_hash(),
        "run_hash": run_hash(task),
        "task": task.to_dict(),
        "energysched_version": _version(),
        "seed": task.seed,
        "elapsed_s": outcome.elapsed_s,
        "host": outcome.host,
        "warnings": outcome.warnings,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    failed_dir = out / FAILED / task.run_id
    if not outcome.ok:
        failed_dir.mkdir(parents=True, exist_ok=True)
        _write_text(failed_dir / "error.txt", outcome.error or "")
        _write_json(failed_dir / "run.json", meta)
        return failed_dir
    result = outcome.result
    meta["derived"] = derived_metrics(result.jobs, result.summary)
    target = run_dir(out, task.run_id)
    tmp = out / RUNS / f".tmp-{task.run_id}-{uuid.uuid4().hex[:8]}"
    try:
        result.write(tmp, fmt=fmt)
        _write_json(tmp / "run.json", meta)  # written last: its presence marks a complete run
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # no half-written run directory left behind
        raise
    if target.exists():
        trash = out / RUNS / f".tmp-old-{task.run_id}-{uuid.uuid4().hex[:8]}"
        os.replace(target, trash)
        os.replace(tmp, target)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, target)
    if failed_dir.exists():
        shutil.rmtree(failed_dir, ignore_errors=True)
    return target


def _planned_ids(out: Path) -> list[str] | None:
    path = out / "experiment.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return [r["run_id"] for r in data.get("runs", [])]


def _iter_run_meta(out: Path, sub: str) -> Iterator[tuple[str, dict[str, Any], Path]]:
    base = out / sub
    if not base.is_dir():
        return
    planned = _planned_ids(out)
    ids = (
        planned
        if planned is not None
        else sorted(p.name for p in base.iterdir() if not p.name.startswith("."))
    )
    for run_id in ids:
        try:
            check_run_id(run_id)
        except ValueError:
            log.warning("%s: ignoring run id %r that points outside the results", out, run_id)
            continue
        meta_path = base / run_id / "run.json"
        if meta_path.is_file():
            yield run_id, json.loads(meta_path.read_text(encoding="utf-8")), base / run_id


def build_summaries(out: Path) -> pd.DataFrame:
    """The tidy table: one row per finished run of the plan, in plan order.

    Columns: the labels (:data:`LABEL_COLUMNS`), every numeric summary metric
    of :func:`simulator.metrics.summarize`, the :func:`derived_metrics`, and
    comparisons across runs of the same trace, platform and replicate:

    * ``energy_vs_baseline``, ``makespan_vs_baseline``, ``mean_wait_vs_baseline``,
      ``mean_bsld_vs_baseline``, ``jobs_completed_vs_baseline``: ratio to the
      baseline policy's run (1 = same);
    * ``oracle_energy_regret``, ``oracle_makespan_regret``: ``x / x_oracle - 1``
      against the same policy driven by the ``oracle`` predictor (NaN when the
      experiment has no oracle twin).
    """
    rows = []
    for run_id, meta, path in _iter_run_meta(out, RUNS):
        if meta.get("status") != "ok":
            continue
        task = meta["task"]
        data = json.loads((path / "summary.json").read_text(encoding="utf-8"))
        row: dict[str, Any] = {
            "run_id": run_id,
            "trace": task["trace"],
            "platform": task["platform"],
            "policy": task["policy"],
            "predictor": task["predictor"] or "none",
            "replicate": task["replicate"],
            "seed": task["seed"],
            "policy_spec": task["policy_spec"],
            "predictor_spec": task["predictor_spec"] or "none",
        }
        for key, value in data["summary"].items():
            if isinstance(value, bool):
                row[key] = int(value)
            elif isinstance(value, (int, float)) or value is None:
                row[key] = np.nan if value is None else value
            else:
                row[key] = json.dumps(value, sort_keys=True)
        row.update(meta.get("derived", {}))
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=list(LABEL_COLUMNS))
    return add_comparisons(table, baseline=_baseline(out))


def _baseline(out: Path) -> str | None:
    path = out / "experiment.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8")).get("baseline")
    return None


def add_comparisons(table: pd.DataFrame, *, baseline: str | None) -> pd.DataFrame:
    """Add the ``*_vs_baseline`` and ``oracle_*_regret`` columns (see :func:`build_summaries`)."""
    table = table.copy()
    keys = ["trace", "platform", "replicate"]
    ratios = {
        "energy_j": "energy_vs_baseline",
        "makespan_s": "makespan_vs_baseline",
        "mean_wait_s": "mean_wait_vs_baseline",
        "mean_bsld": "mean_bsld_vs_baseline",
        "jobs_completed": "jobs_completed_vs_baseline",
    }
    if baseline is not None and baseline in set(table["policy"]):
        base_row = _first_row_alike(table, keys, (table["policy"] == baseline).to_numpy())
        for metric, col in ratios.items():
            if metric not in table:
                table[col] = np.nan
                continue
            values = table[metric].to_numpy(dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                table[col] = values / _at_rows(values, base_row)
    else:
        for col in ratios.values():
            table[col] = np.nan
    okeys = ["trace", "platform", "policy", "replicate"]
    oracle_row = _first_row_alike(table, okeys, (table["predictor_spec"] == "oracle").to_numpy())
    has_pred = (table["predictor_spec"] != "none").to_numpy()
    for metric, col in (
        ("energy_j", "oracle_energy_regret"),
        ("makespan_s", "oracle_makespan_regret"),
    ):
        values = table[metric].to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = values / _at_rows(values, oracle_row) - 1.0
        table[col] = np.where(has_pred, value, np.nan)
    return table


def _first_row_alike(table: pd.DataFrame, keys: list[str], chosen: np.ndarray) -> np.ndarray:
    """For every row of ``table``, the position of the first ``chosen`` row with the same
    ``keys`` values (-1: none). A dictionary of a few rows, not pandas' index machinery,
    which took most of the time of writing a sweep's summaries table (about 0.015 s)."""
    rows = list(zip(*(table[key].tolist() for key in keys)))
    first: dict[tuple[Any, ...], int] = {}
    for position in np.flatnonzero(chosen):
        first.setdefault(rows[position], int(position))
    return np.array([first.get(row, -1) for row in rows], dtype=np.intp)


def _at_rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]``, NaN where ``rows`` is -1."""
    return np.where(rows >= 0, values[rows], np.nan)


def _run_labels(run_id: str, task: dict[str, Any]) -> dict[str, Any]:
    """A run's labels in the failures and warnings tables."""
    return {
        "run_id": run_id,
        "trace": task["trace"],
        "policy": task["policy"],
        "predictor": task["predictor"] or "none",
        "replicate": task["replicate"],
    }


def build_failures(out: Path) -> pd.DataFrame:
    """One row per failed run: labels, the last line of the error, and where the traceback is."""
    rows = []
    for run_id, meta, path in _iter_run_meta(out, FAILED):
        if (run_dir(out, run_id) / "run.json").is_file():
            continue  # succeeded on a later attempt
        err = (
            (path / "error.txt").read_text(encoding="utf-8")
            if (path / "error.txt").is_file()
            else ""
        )
        lines = err.strip().splitlines()
        rows.append(
            {
                **_run_labels(run_id, meta["task"]),
                "error": lines[-1] if lines else "",
                "traceback_file": str(path / "error.txt"),
            }
        )
    return pd.DataFrame(
        rows,
        columns=["run_id", "trace", "policy", "predictor", "replicate", "error", "traceback_file"],
    )


#: the columns of :func:`build_warnings`
WARNING_COLUMNS = ("run_id", "trace", "policy", "predictor", "replicate", "warning", "count")


def build_warnings(out: Path) -> pd.DataFrame:
    """One row per distinct warning of each finished run (its ``run.json``'s
    ``warnings``: Python warnings and log records of WARNING and above): the run's
    labels, the warning as it was shown, and how many times the run gave it."""
    rows = []
    for run_id, meta, _ in _iter_run_meta(out, RUNS):
        if meta.get("status") != "ok":
            continue
        labels = _run_labels(run_id, meta["task"])
        for line in meta.get("warnings", []):
            text, times = split_counted(str(line))
            rows.append({**labels, "warning": text, "count": times})
    return pd.DataFrame(rows, columns=list(WARNING_COLUMNS))


def _use_parquet(fmt: str) -> bool:
    from simulator.results import parquet_available

    return fmt == "parquet" or (fmt == "auto" and parquet_available())


def write_tables(out: Path, *, fmt: str = "auto") -> dict[str, Path]:
    """(Re)write ``summaries.parquet|csv`` and ``failures.csv`` from the run directories."""
    table = build_summaries(out)
    paths: dict[str, Path] = {}
    for stale in ("summaries.parquet", "summaries.csv"):
        if stale != ("summaries.parquet" if _use_parquet(fmt) else "summaries.csv"):
            (out / stale).unlink(missing_ok=True)
    from simulator.results import atomic_path

    failures = build_failures(out)
    paths["summaries"] = out / ("summaries.parquet" if _use_parquet(fmt) else "summaries.csv")
    with atomic_path(paths["summaries"]) as tmp:
        if paths["summaries"].suffix == ".parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)
    paths["failures"] = out / "failures.csv"
    with atomic_path(paths["failures"]) as tmp:
        failures.to_csv(tmp, index=False)
    return paths


@dataclass
class Results:
    """A results directory, loaded: the summaries table plus lazy per-run tables.

    Attributes:
        out_dir: the directory.
        summaries: one row per finished run (see :func:`build_summaries`).
        failures: one row per failed run.
        experiment: the saved ``experiment.json`` (resolved configuration,
            version, seeds, baseline, metrics, planned runs).
        warnings: one row per distinct warning of each finished run
            (:func:`build_warnings`).
    """

    out_dir: Path
    summaries: pd.DataFrame
    failures: pd.DataFrame
    experiment: dict[str, Any] = field(default_factory=dict)
    warnings: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=list(WARNING_COLUMNS))
    )

    @property
    def baseline(self) -> str | None:
        """Label of the baseline policy."""
        return self.experiment.get("baseline")

    @property
    def metrics(self) -> list[str]:
        """Metrics the experiment asked the report to show."""
        return list(self.experiment.get("metrics", []))

    def run(self, run_id: str) -> Any:
        """The full :class:`~simulator.results.RunResult` of one run."""
        from simulator.results import load_run

        return load_run(run_dir(self.out_dir, run_id))

    def jobs(self, run_id: str) -> pd.DataFrame:
        """Per-job table of one run."""
        from simulator.results import read_jobs_table

        return read_jobs_table(run_dir(self.out_dir, run_id))

    def power(self, run_id: str) -> pd.DataFrame:
        """Power timeline of one run (``time_s, power_w, busy_w, idle_w, off_w, switching_w``)."""
        from simulator.results import read_power_csv

        return read_power_csv(run_dir(self.out_dir, run_id))

    def all_jobs(self, columns: list[str] | None = None, **where: Any) -> pd.DataFrame:
        """Per-job tables of all finished runs (or those matching ``where``, e.g.
        ``policy="easy"``), concatenated with the run labels in front."""
        sel = self.summaries
        for key, value in where.items():
            sel = sel[sel[key] == value]
        frames = []
        for row in sel.itertuples(index=False):
            jobs = self.jobs(row.run_id)
            if columns is not None:
                jobs = jobs[[c for c in columns if c in jobs]]
            jobs.insert(0, "run_id", row.run_id)
            for i, key in enumerate(("trace", "platform", "policy", "predictor", "replicate")):
                jobs.insert(1 + i, key, getattr(row, key))
            frames.append(jobs)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_results(out_dir: str | Path) -> Results:
    """Load a results directory written by a sweep: ``res.summaries``, ``res.jobs(run_id)``, ...

    The summaries table is rebuilt from the run directories, so it is
    current even when the sweep was interrupted before writing it.
    """
    out = Path(out_dir)
    if not (out / "experiment.json").is_file() and not (out / RUNS).is_dir():
        from energysched.errors import ConfigError

        raise ConfigError(
            "results_dir", f"{out} is not a results directory (no experiment.json or runs/)"
        )
    experiment = (
        json.loads((out / "experiment.json").read_text(encoding="utf-8"))
        if (out / "experiment.json").is_file()
        else {}
    )
    return Results(
        out_dir=out,
        summaries=build_summaries(out),
        failures=build_failures(out),
        experiment=experiment,
        warnings=build_warnings(out),
    )
