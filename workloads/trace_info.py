"""Summary statistics of a trace: size, span, job sizes, runtimes, load, missing values.

:func:`trace_info` returns a plain dict (JSON-friendly: ints, floats, strings,
``None``) and :func:`format_trace_info` turns it into text for the CLI.

Definitions (times in s):

* ``span_s``: last submit time minus first submit time (``span_days`` the same
  in days of 86 400 s).
* job size: ``procs`` = ``procs_alloc`` when known, else ``procs_req`` (the rule
  of :func:`workloads.cleaning.job_procs`); a ``procs`` column, when present
  (a cleaned trace), is used as is.
* ``procs_pow2_share``: share of jobs with a known size whose size is a power
  of two (1, 2, 4, ...).
* ``offered_load``: ``sum(procs * runtime_s) / (max_procs * span_s)`` over jobs
  with both known, where ``max_procs`` is the header's ``MaxProcs`` (or
  ``MaxNodes``); ``None`` when the machine size is unknown or the span is 0.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import numpy as np
import pandas as pd

from workloads.cleaning import job_procs
from workloads.schema import SWF_COLUMNS, Trace

__all__ = ["format_trace_info", "trace_info"]

_DAY_S = 86_400.0


def _num(value: Any) -> float | None:
    """A finite float, or None."""
    if value is None:
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def _stats(values: np.ndarray) -> dict[str, float | None]:
    """min/mean/median/p90/max of the finite values (None when there are none)."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return {"min": None, "mean": None, "median": None, "p90": None, "max": None}
    return {
        "min": float(v.min()),
        "mean": float(v.mean()),
        "median": float(np.median(v)),
        "p90": float(np.percentile(v, 90)),
        "max": float(v.max()),
    }


def trace_info(trace: Trace) -> dict[str, Any]:
    """Summary statistics of ``trace`` (see the module docs for definitions).

    Keys: ``name``, ``path``, ``jobs``, ``bad_lines``, ``first_submit_s``,
    ``last_submit_s``, ``span_s``, ``span_days``, ``start_time_utc`` (from the
    header's ``UnixStartTime``, else ``None``), ``max_nodes``, ``max_procs``,
    ``procs`` (``min``, ``median``, ``max`` in processors, ``known`` jobs with
    a size, ``pow2_share``), ``runtime_s`` (``min``, ``mean``, ``median``,
    ``p90``, ``max``), ``time_req_s`` (same), ``offered_load``,
    ``missing`` (field -> count of unknown values, every SWF field),
    ``users`` and ``executables`` (distinct known ids).
    """
    jobs = trace.jobs
    n = len(jobs)
    submit = jobs["submit_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    runtime = jobs["runtime_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    if "procs" in jobs.columns:
        procs = pd.to_numeric(jobs["procs"]).to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        procs = job_procs(jobs).to_numpy(dtype=np.float64, na_value=np.nan)

    known_submit = submit[np.isfinite(submit)]
    first = float(known_submit.min()) if known_submit.size else None
    last = float(known_submit.max()) if known_submit.size else None
    span = (last - first) if first is not None and last is not None else None

    sizes = procs[np.isfinite(procs)]
    positive = sizes[sizes >= 1].astype(np.int64)
    pow2 = int(((positive & (positive - 1)) == 0).sum())
    procs_info: dict[str, Any] = {
        "known": int(sizes.size),
        "min": int(sizes.min()) if sizes.size else None,
        "median": float(np.median(sizes)) if sizes.size else None,
        "max": int(sizes.max()) if sizes.size else None,
        "pow2_share": pow2 / sizes.size if sizes.size else None,
    }

    max_procs = trace.max_procs
    both = np.isfinite(procs) & np.isfinite(runtime)
    work = float((procs[both] * runtime[both]).sum())
    load = work / (max_procs * span) if max_procs and span else None

    start_utc = None
    unix_start = trace.header.get("UnixStartTime")
    if isinstance(unix_start, (int, float)) and not isinstance(unix_start, bool):
        start_utc = (
            _dt.datetime.fromtimestamp(float(unix_start), tz=_dt.timezone.utc)
            .replace(tzinfo=None)
            .isoformat(sep=" ")
        )

    missing = {c: int(jobs[c].isna().sum()) for c in SWF_COLUMNS if c in jobs.columns}

    def distinct(column: str) -> int:
        return int(jobs[column].dropna().nunique()) if column in jobs.columns else 0

    return {
        "name": trace.name,
        "path": trace.path,
        "jobs": n,
        "bad_lines": trace.bad_lines,
        "first_submit_s": first,
        "last_submit_s": last,
        "span_s": span,
        "span_days": span / _DAY_S if span is not None else None,
        "start_time_utc": start_utc,
        "max_nodes": trace.max_nodes,
        "max_procs": max_procs,
        "procs": procs_info,
        "runtime_s": _stats(runtime),
        "time_req_s": _stats(jobs["time_req_s"].to_numpy(dtype=np.float64, na_value=np.nan)),
        "work_proc_s": work,
        "offered_load": load,
        "missing": missing,
        "users": distinct("user_id"),
        "executables": distinct("executable_id"),
    }


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value)}"
        return f"{value:.{digits}f}"
    return str(value)


def format_trace_info(info: dict[str, Any]) -> str:
    """Human-readable text of a :func:`trace_info` dict (several lines, no trailing newline)."""
    p = info["procs"]
    r = info["runtime_s"]
    q = info["time_req_s"]
    lines = [
        f"trace          {info['name']}" + (f"  ({info['path']})" if info.get("path") else ""),
        f"jobs           {info['jobs']}"
        + (f"  ({info['bad_lines']} bad lines skipped)" if info.get("bad_lines") else ""),
        f"machine        {_fmt(info['max_nodes'])} nodes, {_fmt(info['max_procs'])} processors",
        f"submit span    {_fmt(info['span_s'], 0)} s = {_fmt(info['span_days'], 2)} days "
        f"(first {_fmt(info['first_submit_s'], 0)} s, last {_fmt(info['last_submit_s'], 0)} s)",
    ]
    if info.get("start_time_utc"):
        lines.append(f"log start      {info['start_time_utc']} UTC")
    pow2 = f"{100 * p['pow2_share']:.1f}%" if p["pow2_share"] is not None else "n/a"
    lines += [
        f"processors     min {_fmt(p['min'])}, median {_fmt(p['median'])}, max {_fmt(p['max'])}; "
        f"powers of two {pow2} (of {p['known']} jobs with a size)",
        f"runtime (s)    min {_fmt(r['min'])}, median {_fmt(r['median'])}, mean {_fmt(r['mean'])}, "
        f"p90 {_fmt(r['p90'])}, max {_fmt(r['max'])}",
        f"requested (s)  min {_fmt(q['min'])}, median {_fmt(q['median'])}, mean {_fmt(q['mean'])}, "
        f"p90 {_fmt(q['p90'])}, max {_fmt(q['max'])}",
        f"offered load   {_fmt(info['offered_load'], 3)}",
        f"users          {info['users']}",
        f"executables    {info['executables']}",
    ]
    missing = {k: v for k, v in info["missing"].items() if v}
    if missing:
        lines.append("missing values (unknown, -1 in the file):")
        width = max(len(k) for k in missing)
        lines += [f"  {k:<{width}} {v:>8}" for k, v in missing.items()]
    else:
        lines.append("missing values none")
    return "\n".join(lines)
