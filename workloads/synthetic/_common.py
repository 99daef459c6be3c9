"""Helpers shared by the synthetic generators: argument checks, the SWF table.

Private module: the public names live in :mod:`workloads.synthetic`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from energysched.errors import ConfigError
from workloads.schema import FLOAT_COLUMNS, INT_COLUMNS, SWF_COLUMNS, Trace

P = TypeVar("P")


def check_positive_int(name: str, value: Any) -> int:
    """Return ``value`` as an ``int`` >= 1, or raise :class:`ConfigError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(name, f"must be an integer >= 1, got {value!r}")
    if value < 1:
        raise ConfigError(name, f"must be >= 1, got {value}")
    return int(value)


def check_seed(seed: Any) -> int:
    """Return ``seed`` as a non-negative ``int`` (what ``numpy.random.default_rng`` takes)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ConfigError("seed", f"must be a non-negative integer, got {seed!r}")
    return int(seed)


def check_range(key: str, value: Any, low: float | None = None, high: float | None = None) -> float:
    """Check a finite real number in ``[low, high]`` (``None`` = unbounded)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ConfigError(key, f"must be a finite number, got {value!r}")
    number = float(value)
    if low is not None and number < low:
        raise ConfigError(key, f"must be >= {low}, got {value}")
    if high is not None and number > high:
        raise ConfigError(key, f"must be <= {high}, got {value}")
    return number


def resolve_params(
    kind: type[P], params: P | None, overrides: Mapping[str, Any], *, model: str
) -> P:
    """Build the parameter object from an optional ``params=`` plus field overrides.

    ``generate("lublin", ..., classes="batch")`` replaces the field ``classes``
    of the default :class:`LublinParams`; an unknown field raises
    :class:`ConfigError` listing the valid ones.
    """
    if params is None:
        params = kind()
    elif not isinstance(params, kind):
        raise ConfigError(
            "params", f"must be a {kind.__name__} for model {model!r}, got {type(params).__name__}"
        )
    if overrides:
        names = [f.name for f in dataclasses.fields(kind)]  # type: ignore[arg-type]
        unknown = sorted(set(overrides) - set(names))
        if unknown:
            raise ConfigError(
                unknown[0],
                f"unknown parameter of model {model!r}; known: {', '.join(names)}",
            )
        params = dataclasses.replace(params, **overrides)  # type: ignore[type-var]
    return params


def truncated_gamma(
    rng: np.random.Generator, shape: np.ndarray, scale: np.ndarray, upper: float
) -> np.ndarray:
    """Gamma draws with per-entry ``shape``/``scale``, conditioned on ``<= upper``.

    The truncation is done by redrawing rejected entries, as in the reference
    generator of Lublin & Feitelson (2003).
    """
    shape = np.asarray(shape, dtype=float)
    scale = np.asarray(scale, dtype=float)
    values = rng.gamma(shape, scale)
    bad = np.flatnonzero(values > upper)
    rounds = 0
    while bad.size:
        rounds += 1
        if rounds > 1000:
            raise ConfigError(
                "params", f"truncation at {upper} rejects almost every draw; check the parameters"
            )
        values[bad] = rng.gamma(shape[bad], scale[bad])
        bad = bad[values[bad] > upper]
    return values


def rigid_job_columns(
    submit_s: np.ndarray,
    runtime_s: np.ndarray,
    size: np.ndarray,
    status: np.ndarray,
    time_req_s: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """The SWF columns of generated rigid jobs numbered from 1 (each allocated the
    ``size`` it requested), for :func:`build_trace`; ``time_req_s`` ``None``: the jobs
    have no requested time."""
    columns = {
        "job_id": np.arange(1, len(submit_s) + 1),
        "submit_s": submit_s,
        "runtime_s": runtime_s,
        "procs_alloc": size,
        "procs_req": size,
        "status": status,
    }
    if time_req_s is not None:
        columns["time_req_s"] = time_req_s
    return columns


def build_trace(
    columns: Mapping[str, np.ndarray],
    *,
    n_jobs: int,
    nodes: int,
    name: str,
    header_extra: Mapping[str, str],
    note: str,
    extra_columns: Mapping[str, np.ndarray] | None = None,
) -> Trace:
    """Assemble a :class:`Trace` with all 18 SWF columns plus the header facts.

    Columns not given are missing (``<NA>`` for integer fields, ``NaN`` for
    float fields). Integer SWF fields use pandas' nullable ``Int64``.
    """
    data: dict[str, Any] = {}
    for col in SWF_COLUMNS:
        values = columns.get(col)
        if col in INT_COLUMNS:
            if values is None:
                data[col] = pd.arrays.IntegerArray(
                    np.zeros(n_jobs, dtype=np.int64), np.ones(n_jobs, dtype=bool)
                )
            else:
                data[col] = pd.array(np.asarray(values, dtype=np.int64), dtype="Int64")
        else:
            assert col in FLOAT_COLUMNS
            if values is None:
                data[col] = np.full(n_jobs, np.nan)
            else:
                data[col] = np.asarray(values, dtype=np.float64)
    for col, values in (extra_columns or {}).items():
        data[col] = np.asarray(values, dtype=np.float64)
    jobs = pd.DataFrame(data)

    runtime = jobs["runtime_s"].to_numpy(dtype=float)
    max_runtime = int(np.nanmax(runtime)) if n_jobs else 0
    text: dict[str, str] = {"Version": "2", "Computer": "synthetic (energysched)"}
    text.update(header_extra)
    text.update(
        {
            "Note": note,
            "MaxJobs": str(n_jobs),
            "MaxRecords": str(n_jobs),
            "MaxNodes": str(nodes),
            "MaxProcs": str(nodes),
            "MaxRuntime": str(max_runtime),
        }
    )
    header: dict[str, Any] = {}
    for key, value in text.items():
        header[key] = int(value) if value.isdigit() else value
    lines = [f"; {key}: {value}" for key, value in text.items()]
    return Trace(jobs=jobs, header=header, header_text=text, header_lines=lines, name=name)
