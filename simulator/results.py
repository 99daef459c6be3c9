"""What a run returns, and how it is written to disk."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.metrics import summarize

log = logging.getLogger(__name__)

#: Columns of :attr:`RunResult.jobs`, in order.
JOB_COLUMNS: tuple[str, ...] = (
    "job_id",
    "submit_s",
    "start_s",
    "end_s",
    "wait_s",
    "runtime_s",
    "status",
    "reason",
    "node_type",
    "nodes",
    "cores",
    "freq_ghz",
    "power_w",
    "energy_j",
    "requested_procs",
    "requested_nodes",
    "requested_time_s",
    "time_limit_s",
    "planned_runtime_s",
    "predicted_runtime_s",
    "predicted_energy_j",
    "predicted_power_w",
    "application",
    "user_id",
)

#: Columns of :attr:`RunResult.power`: the platform power step function; each
#: row holds from ``time_s`` until the next row's ``time_s``.
POWER_COLUMNS: tuple[str, ...] = ("time_s", "power_w", "busy_w", "idle_w", "off_w", "switching_w")


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temp path beside ``path`` to write to; moved onto ``path`` (``os.replace``)
    only when the block ends without an error, removed otherwise. A reader never
    sees a half-written file, and a failed write leaves no ``.tmp`` file behind."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def parquet_available() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class RunResult:
    """Jobs table, power timeline and summary metrics of one run."""

    jobs: pd.DataFrame
    power: pd.DataFrame
    summary: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    predictor_log: pd.DataFrame | None = None

    def energy_from_timeline_j(self) -> float:
        """Integral of the power timeline over the energy window (equals ``summary['energy_j']``)."""
        t = self.power["time_s"].to_numpy()
        p = self.power["power_w"].to_numpy()
        if len(t) == 0:
            return 0.0
        t_end = self.meta.get("t_end_s", t[-1])
        edges = np.append(t, t_end)
        return float(np.sum(p * np.diff(edges)))

    def write(self, out_dir: str | Path, *, fmt: str = "auto") -> dict[str, Path]:
        """Write ``jobs.parquet`` (or ``jobs.csv``), ``power.csv`` and ``summary.json``.

        ``fmt``: ``"auto"`` (Parquet when pyarrow is installed), ``"parquet"`` or ``"csv"``.
        Tables are written by pyarrow when it is installed (several times faster
        than pandas; CSV numbers are written in their shortest form, e.g. ``1``
        for ``1.0``, as pandas writes a time, power or energy column whose values
        are all whole; :func:`read_jobs_table` and :func:`read_power_csv` read
        them back as the same float64 values).
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        use_parquet = jobs_table_format(fmt) == "parquet"
        # the summary is encoded first: a value JSON cannot hold fails before any file is written
        try:
            summary_text = json.dumps(
                {"summary": _jsonable(self.summary), "meta": _jsonable(self.meta)},
                indent=2,
                sort_keys=True,
                allow_nan=False,
            )
        except (TypeError, ValueError) as exc:
            from energysched.errors import ConfigError

            raise ConfigError(
                "summary.json",
                f"the run's summary cannot be saved as JSON ({exc}); a plug-in's params() "
                "must return plain numbers, strings, booleans, lists and dicts",
            ) from None
        paths["jobs"] = out / ("jobs.parquet" if use_parquet else "jobs.csv")
        with atomic_path(paths["jobs"]) as tmp:
            (write_parquet if use_parquet else write_csv)(self.jobs, tmp)
        # never leave an earlier run's table in the other format beside the new one
        (out / ("jobs.csv" if use_parquet else "jobs.parquet")).unlink(missing_ok=True)
        paths["power"] = out / "power.csv"
        with atomic_path(paths["power"]) as tmp:
            write_csv(self.power, tmp)
        plog_path = out / "predictor_log.csv"
        if self.predictor_log is not None and len(self.predictor_log):
            paths["predictor_log"] = plog_path
            with atomic_path(plog_path) as tmp:
                self.predictor_log.to_csv(tmp, index=False)
        else:
            plog_path.unlink(missing_ok=True)
        paths["summary"] = out / "summary.json"  # last: its presence marks a complete run
        with atomic_path(paths["summary"]) as tmp:
            tmp.write_text(summary_text, encoding="utf-8")
        log.info("wrote run results to %s", out)
        return paths


def jobs_table_format(fmt: str = "auto") -> str:
    """``"parquet"`` or ``"csv"``: the jobs-table format ``fmt`` resolves to
    (``"auto"``: Parquet when pyarrow is installed)."""
    if fmt == "auto":
        return "parquet" if parquet_available() else "csv"
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"unknown jobs table format {fmt!r}; use auto, parquet or csv")
    return fmt


#: Jobs-table columns with few distinct values, dictionary-encoded in Parquet (the
#: other numeric columns, nearly all distinct, are written plain: encoding them
#: took half the writing time of a 200,000-job table and made the file larger).
DICTIONARY_COLUMNS: frozenset[str] = frozenset(
    [
        "status",
        "reason",
        "node_type",
        "nodes",
        "cores",
        "freq_ghz",
        "requested_procs",
        "requested_nodes",
        "application",
        "user_id",
    ]
)


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` (without its index) as a Parquet file, written by pyarrow.

    The columns of :data:`DICTIONARY_COLUMNS` and any other non-numeric column
    are dictionary-encoded, the numeric ones written plain.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    dictionary = [
        str(name)
        for name, dtype in frame.dtypes.items()
        if name in DICTIONARY_COLUMNS or not pd.api.types.is_numeric_dtype(dtype)
    ]
    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False), path, use_dictionary=dictionary
    )


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` (without its index) as CSV: by pyarrow when installed, else pandas.

    The header line is the same either way; pyarrow quotes every string value
    and writes floats in their shortest form (``1`` for ``1.0``). Read back with
    :func:`read_csv_table` to get the same dtypes and values.
    """
    if not parquet_available():
        _whole_floats_as_integers(frame).to_csv(path, index=False)
        return
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    with open(path, "wb") as fh:
        fh.write((",".join(_csv_field(str(c)) for c in frame.columns) + "\n").encode())
        pa_csv.write_csv(
            pa.Table.from_pandas(frame, preserve_index=False),
            fh,
            pa_csv.WriteOptions(include_header=False),
        )


def _whole_floats_as_integers(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each :data:`FLOAT_COLUMNS` column whose values are all whole,
    finite, below ``2**53`` in magnitude and not ``-0.0`` as int64: in CSV the text
    pyarrow writes for them (``5`` for ``5.0``), which :func:`read_csv_table` reads
    back as the same floats. pandas writes integers two to three times faster than
    floats (a jobs table's times and energies are often whole: SDSC-SP2's seconds)."""
    whole: dict[str, np.ndarray] = {}
    for column in frame.columns:
        if column not in FLOAT_COLUMNS or frame[column].dtype != np.float64:
            continue
        values = frame[column].to_numpy()
        if (
            (np.abs(values) < 2.0**53).all()  # also: no NaN, no infinity
            and (values == np.trunc(values)).all()
            and not (np.signbit(values) & (values == 0.0)).any()
        ):
            whole[str(column)] = values.astype(np.int64)
    return frame.assign(**whole) if whole else frame


def _csv_field(text: str) -> str:
    """``text`` as one CSV field, quoted only when it must be (as pandas writes headers)."""
    if any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


#: Columns of the jobs table and the power timeline that are float64 even when
#: every value is whole (a CSV written by pyarrow holds ``5`` for ``5.0``).
FLOAT_COLUMNS: frozenset[str] = frozenset(
    [c for c in JOB_COLUMNS if c.endswith(("_s", "_w", "_j", "_ghz"))] + list(POWER_COLUMNS)
)


def read_csv_table(path: str | Path) -> pd.DataFrame:
    """A jobs or power table written by :func:`write_csv`, with float64 time,
    power, energy and clock columns (whole numbers included)."""
    columns = pd.read_csv(path, nrows=0).columns
    dtypes = {c: "float64" for c in columns if c in FLOAT_COLUMNS}
    return pd.read_csv(path, dtype=dtypes)


def read_jobs_table(out_dir: str | Path) -> pd.DataFrame:
    """The jobs table of a run directory (``jobs.parquet`` or ``jobs.csv``)."""
    out = Path(out_dir)
    parquet, csv = out / "jobs.parquet", out / "jobs.csv"
    if parquet.exists() and csv.exists():
        # written by an older version into a reused directory: the newer file is this run's
        newest = max((parquet, csv), key=lambda p: p.stat().st_mtime_ns)
        log.warning("%s: both jobs.parquet and jobs.csv present; reading %s", out, newest.name)
        return pd.read_parquet(parquet) if newest == parquet else read_csv_table(csv)
    return pd.read_parquet(parquet) if parquet.exists() else read_csv_table(csv)


def read_power_csv(out_dir: str | Path) -> pd.DataFrame:
    """The power timeline of a run directory (``power.csv``), all float64."""
    return read_csv_table(Path(out_dir) / "power.csv")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def load_run(out_dir: str | Path) -> RunResult:
    """Read a run written by :meth:`RunResult.write`."""
    out = Path(out_dir)
    jobs = read_jobs_table(out)
    power = read_power_csv(out)
    with (out / "summary.json").open(encoding="utf-8") as fh:
        data = json.load(fh)
    log_path = out / "predictor_log.csv"
    plog = pd.read_csv(log_path) if log_path.exists() else None
    return RunResult(
        jobs=jobs,
        power=power,
        summary=data["summary"],
        meta=data.get("meta", {}),
        predictor_log=plog,
    )


def _float_column(values: memoryview) -> np.ndarray:
    """A float64 column of the engine's per-job float buffers (no copy)."""
    return np.frombuffer(values, dtype=np.float64)


def _take_int_column(engine: Any, name: str) -> np.ndarray:
    """The engine's per-job list ``name`` as an int64 column; the list is released
    (the engine is done, and the jobs table is built at the replay's peak memory)."""
    values = getattr(engine, name)
    setattr(engine, name, None)
    return np.fromiter(values, dtype=np.int64, count=len(values))


def estimates_label(jobs_without_request: int, jobs: int) -> str:
    """What the engine planned with: ``"requested times"``, ``"exact runtimes (no
    requests)"``, or a mix naming the share of jobs planned with their exact runtime."""
    if jobs_without_request <= 0:
        return "requested times"
    if jobs_without_request >= jobs:
        return "exact runtimes (no requests)"
    share = 100.0 * jobs_without_request / jobs
    return f"requested times; exact runtimes for {share:.1f} % of jobs (no request)"


def build_result(engine: Any) -> RunResult:
    """Assemble the :class:`RunResult` from a finished engine (internal)."""
    from simulator.engine import STATUS_NAMES

    static = engine.job_columns  # trace order, like the per-job lists below
    status_names = np.array([STATUS_NAMES[k] for k in range(4)], dtype=object)
    start = _float_column(engine.start_s)
    end = _float_column(engine.end_s)
    submit = static["submit_s"]
    types = engine.platform.node_types
    type_names = np.array([t.name for t in types] + [""], dtype=object)
    # copy=False: one block per column (no copy into 2-D blocks; pyarrow reads the
    # columns one by one when the table is written)
    frame = pd.DataFrame(
        {
            "job_id": static["job_id"],
            "submit_s": submit,
            "start_s": start,
            "end_s": end,
            "wait_s": start - submit,
            "runtime_s": end - start,
            "status": status_names[_take_int_column(engine, "status")],
            "reason": pd.array(engine.reasons, dtype="object"),
            "node_type": type_names[_take_int_column(engine, "node_type")],
            "nodes": _take_int_column(engine, "nodes"),
            "cores": _take_int_column(engine, "cores"),
            "freq_ghz": _float_column(engine.freq),
            "power_w": _float_column(engine.power),
            "energy_j": _float_column(engine.energy),
            "requested_procs": static["requested_procs"],
            "requested_nodes": static["requested_nodes"],
            "requested_time_s": static["requested_time_s"],
            "time_limit_s": _float_column(engine.time_limit),
            "planned_runtime_s": _float_column(engine.planned),
            "predicted_runtime_s": _float_column(engine.pred_runtime),
            "predicted_energy_j": _float_column(engine.pred_energy),
            "predicted_power_w": _float_column(engine.pred_power),
            "application": static["application"],
            "user_id": static["user_id"],
        },
        copy=False,
    )
    t0 = engine.t0
    t_end = engine.t_end
    power = pd.DataFrame(
        engine.timeline_rows(),
        columns=["time_s", "busy_w", "idle_w", "off_w", "switching_w"],
        copy=False,
    )
    power.insert(
        1, "power_w", power["busy_w"] + power["idle_w"] + power["off_w"] + power["switching_w"]
    )
    summary = summarize(
        frame,
        energy_busy_j=engine.energy_busy,
        energy_idle_j=engine.energy_idle,
        energy_off_j=engine.energy_off,
        energy_switching_j=engine.energy_switching,
        total_nodes=engine.platform.total_nodes,
        t0_s=t0,
        t_end_s=t_end,
    )
    summary["power_cap_w"] = (
        engine.config.power_cap_w if math.isfinite(engine.config.power_cap_w) else None
    )
    summary["power_cap_violations"] = engine.cap_violations
    summary["peak_power_w"] = float(power["power_w"].max()) if len(power) else 0.0
    summary["policy_calls"] = engine.policy_calls
    # jobs without a requested time were planned with their exact runtime (engine.py)
    without = int(getattr(engine, "jobs_without_request", 0))
    summary["jobs_without_request"] = without
    summary["estimates"] = estimates_label(without, len(frame))
    meta = {
        "policy": getattr(engine.policy, "name", type(engine.policy).__name__),
        "policy_params": engine.policy.params(),
        "platform": engine.platform.name,
        "trace": getattr(engine.trace, "name", None),
        "config": engine.config.to_dict(),
        "t0_s": t0,
        "t_end_s": t_end,
    }
    plog = getattr(engine.policy, "predictor_log", None)
    return RunResult(
        jobs=frame,
        power=power,
        summary=summary,
        meta=meta,
        predictor_log=plog() if callable(plog) else None,
    )
