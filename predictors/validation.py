"""Backtests of the predictors on measured curves (``energysched predictors validate``).

The predictors were first validated on data drawn from their own models; this module
checks them against **measurements**: a corpus of published strong-scaling curves
(runtime vs node or core count) and DVFS sweeps (time and power vs clock).

**Corpus** (a directory; ``"builtin"`` is the one shipped in
``predictors/data/corpus/``, see its ``SOURCES.md``):

* ``scaling.csv``: columns :data:`SCALING_COLUMNS` -- ``curve_id`` names one curve
  (one application on one system), ``size`` the node or core count (``unit`` says
  which), ``runtime_s`` the measured wall time; repeated sizes are averaged;
* ``dvfs.csv`` (optional): columns :data:`DVFS_COLUMNS`, one row per (curve, clock);
* ``SOURCES.md``: where each ``source_id`` comes from (every ``source_id`` of the CSV
  files must appear in it).

A malformed file raises :class:`~energysched.errors.TraceFormatError` naming the
file, the line and the column.

**Strong-scaling backtest** (:func:`backtest_scaling`): for each curve and each ``k``
(default 3 and 4), the predictor is fitted on the runs at the curve's ``k`` smallest
sizes and predicts every larger size up to ``max_factor`` (default 4) times the
largest fitted one. Each curve is an application of a one-node-type platform
(every run at the top frequency, work 1, no requested time), so a prediction is the
predictor's fitted shape ``tau(n)`` itself. For a composite ``X+Y`` the time at the
top frequency is ``X``'s; ``X``'s predictions and reliability are scored (the
frequency part has nothing to learn from runs at one clock). Accuracy ``= 100 - 100 |predicted / actual - 1|`` (%); a prediction is
*warned* when the predictor marks it not reliable.

**DVFS backtest**: :func:`predictors.validation_dvfs.backtest_dvfs` when that module
is present (:func:`dvfs_backtest_available`).
"""

from __future__ import annotations

import csv
import importlib
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from energysched.errors import TraceFormatError

log = logging.getLogger(__name__)

__all__ = [
    "DVFS_COLUMNS",
    "SCALING_COLUMNS",
    "Corpus",
    "backtest_scaling",
    "builtin_corpus_dir",
    "dvfs_backtest_available",
    "load_corpus",
    "read_dvfs_csv",
    "read_scaling_csv",
    "summarize_accuracy",
    "warning_table",
]

#: Columns of ``scaling.csv``, in order.
SCALING_COLUMNS: tuple[str, ...] = (
    "curve_id",
    "application",
    "system",
    "unit",
    "size",
    "runtime_s",
    "source_id",
)

#: Columns of ``dvfs.csv``, in order.
DVFS_COLUMNS: tuple[str, ...] = (
    "curve_id",
    "application",
    "device",
    "freq_mhz",
    "time_s",
    "power_w",
    "source_id",
)

#: The node-count predictors backtested by default; ``auto`` is the recommended one.
DEFAULT_PREDICTORS: tuple[str, ...] = ("amdahl", "power-law", "adept", "auto")

#: The predictor the validation recommends for the node-count dimension.
RECOMMENDED = "auto"


@dataclass
class Corpus:
    """A loaded corpus: ``scaling`` (columns :data:`SCALING_COLUMNS`), ``dvfs``
    (:data:`DVFS_COLUMNS`; empty when the directory has no ``dvfs.csv``), the
    directory and the text of its ``SOURCES.md``."""

    scaling: pd.DataFrame
    dvfs: pd.DataFrame
    directory: Path
    sources: str


def builtin_corpus_dir() -> Path:
    """The corpus shipped as package data (``predictors/data/corpus``)."""
    return Path(__file__).resolve().parent / "data" / "corpus"


# ----------------------------------------------------------------------------- reading


def _number(path: Path, line: int, column: str, text: str, *, integer: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TraceFormatError(
            str(path), line, column, f"{text!r} is not a number", "a positive number"
        ) from None
    if not (math.isfinite(value) and value > 0):
        raise TraceFormatError(
            str(path), line, column, f"{text!r} is not positive and finite", "a positive number"
        )
    if integer and value != int(value):
        raise TraceFormatError(
            str(path), line, column, f"{text!r} is not a whole number", "a whole node or core count"
        )
    return value


def _read_table(
    path: Path,
    columns: tuple[str, ...],
    numeric: dict[str, str],
    optional: frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """Read a corpus CSV, checking the header and every cell (``numeric``: column ->
    ``"int"`` or ``"float"``; ``optional`` numeric columns may be empty: NaN)."""
    try:
        handle = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceFormatError(str(path), None, None, f"cannot read ({exc.strerror})") from exc
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise TraceFormatError(
                str(path), 1, None, "the file is empty", "a header line " + ",".join(columns)
            ) from None
        header = [h.strip() for h in header]
        if header != list(columns):
            missing = [c for c in columns if c not in header]
            detail = f"missing column {missing[0]!r}" if missing else f"columns {header}"
            raise TraceFormatError(
                str(path),
                1,
                missing[0] if missing else None,
                f"bad header: {detail}",
                ",".join(columns),
            )
        rows: dict[str, list[Any]] = {c: [] for c in (*columns, "line")}
        for cells in reader:
            line = reader.line_num
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) != len(columns):
                raise TraceFormatError(
                    str(path),
                    line,
                    None,
                    f"{len(cells)} cells, expected {len(columns)}",
                    "one value per column (quote text that contains commas)",
                )
            for name, cell in zip(columns, cells, strict=True):
                cell = cell.strip()
                kind = numeric.get(name)
                if kind is None:
                    if not cell:
                        raise TraceFormatError(str(path), line, name, "empty", "a non-empty text")
                    rows[name].append(cell)
                elif not cell and name in optional:
                    rows[name].append(math.nan)
                else:
                    rows[name].append(_number(path, line, name, cell, integer=kind == "int"))
            rows["line"].append(line)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise TraceFormatError(str(path), 2, None, "no data rows", "at least one measurement")
    return frame


def _check_curves(path: Path, frame: pd.DataFrame, constant: tuple[str, ...]) -> None:
    """Every row of a curve has the same ``constant`` columns."""
    for cid, g in frame.groupby("curve_id", sort=False):
        for col in constant:
            first = g[col].iloc[0]
            bad = g[g[col] != first]
            if len(bad):
                raise TraceFormatError(
                    str(path),
                    int(bad["line"].iloc[0]),
                    col,
                    f"curve {cid!r} changes {col} from {first!r} to {bad[col].iloc[0]!r}",
                    f"one {col} per curve_id",
                )


def read_scaling_csv(path: str | Path) -> pd.DataFrame:
    """``scaling.csv`` as a DataFrame (:data:`SCALING_COLUMNS` plus ``line``, the file's
    line number of each row). Raises :class:`TraceFormatError` on a malformed file."""
    p = Path(path)
    frame = _read_table(p, SCALING_COLUMNS, {"size": "int", "runtime_s": "float"})
    _check_curves(p, frame, ("application", "system", "unit"))
    frame["size"] = frame["size"].astype(np.int64)
    return frame


def read_dvfs_csv(path: str | Path) -> pd.DataFrame:
    """``dvfs.csv`` as a DataFrame (:data:`DVFS_COLUMNS` plus ``line``; ``power_w`` may be
    empty: NaN). Raises :class:`TraceFormatError` on a malformed file."""
    p = Path(path)
    frame = _read_table(
        p,
        DVFS_COLUMNS,
        {"freq_mhz": "float", "time_s": "float", "power_w": "float"},
        optional=frozenset({"power_w"}),
    )
    _check_curves(p, frame, ("application", "device"))
    return frame


def load_corpus(directory: str | Path = "builtin") -> Corpus:
    """Read a corpus directory (``"builtin"``: :func:`builtin_corpus_dir`).

    Raises :class:`TraceFormatError` when a file is malformed, ``scaling.csv`` is
    missing or a ``source_id`` is not cited in ``SOURCES.md``.
    """
    d = builtin_corpus_dir() if str(directory) == "builtin" else Path(directory)
    scaling_path = d / "scaling.csv"
    if not scaling_path.is_file():
        raise TraceFormatError(
            str(scaling_path),
            None,
            None,
            "no scaling.csv in the corpus directory",
            "a directory with scaling.csv, dvfs.csv and SOURCES.md",
        )
    scaling = read_scaling_csv(scaling_path)
    dvfs_path = d / "dvfs.csv"
    dvfs = (
        read_dvfs_csv(dvfs_path)
        if dvfs_path.is_file()
        else pd.DataFrame({c: pd.Series(dtype=object) for c in (*DVFS_COLUMNS, "line")})
    )
    sources_path = d / "SOURCES.md"
    sources = sources_path.read_text(encoding="utf-8") if sources_path.is_file() else ""
    for path, frame in ((scaling_path, scaling), (dvfs_path, dvfs)):
        for sid, g in frame.groupby("source_id", sort=False):
            if str(sid) not in sources:
                raise TraceFormatError(
                    str(path),
                    int(g["line"].iloc[0]),
                    "source_id",
                    f"source {sid!r} is not cited in {sources_path}",
                    "every source_id described in SOURCES.md",
                )
    return Corpus(scaling, dvfs, d, sources)


# ----------------------------------------------------------------------------- scaling


def _observations(curves: list[tuple[int, np.ndarray, np.ndarray]], platform: Any) -> Any:
    """Observations whose application ``a`` has the runs ``(sizes, runtimes)`` of curve ``a``."""
    from predictors.base import RUN_COLUMNS, Observations

    nt = platform.node_types[0]
    app, nodes, time = [], [], []
    for a, n, t in curves:
        app.extend([a] * len(n))
        nodes.extend(n.tolist())
        time.extend(t.tolist())
    k = len(app)
    nodes_a = np.asarray(nodes, dtype=np.int64)
    time_a = np.asarray(time, dtype=np.float64)
    power = float(nt.pstates[-1].busy_power_w)
    runs = pd.DataFrame(
        {
            "job_id": np.arange(k, dtype=np.int64),
            "application": np.asarray(app, dtype=np.int64),
            "submit_s": np.arange(k, dtype=np.float64),
            "node_type": np.full(k, nt.name, dtype=object),
            "nodes": nodes_a,
            "cores": np.full(k, nt.cores_per_node, dtype=np.int64),
            "freq_ghz": np.full(k, nt.fmax_ghz),
            "time_s": time_a,
            "power_w": np.full(k, power),
            "energy_j": time_a * power * nodes_a,
            "instructions": np.ones(k),
            "requested_nodes": nodes_a,
            "requested_time_s": np.full(k, np.nan),
        }
    )
    for col in RUN_COLUMNS:
        if col not in runs:
            runs[col] = np.nan
    return Observations(runs=runs[list(RUN_COLUMNS)], platform=platform)


def _split_curve(g: pd.DataFrame, k: int, max_factor: float) -> tuple[Any, ...] | None:
    sizes = np.unique(g["size"].to_numpy())
    if len(sizes) <= k:
        return None
    fit_sizes = sizes[:k]
    fitted = g[g["size"].isin(fit_sizes)]
    top = float(fit_sizes.max())
    targets = sizes[(sizes > top) & (sizes <= max_factor * top)]
    if not len(targets):
        return None
    actual = g[g["size"].isin(targets)].groupby("size")["runtime_s"].mean()
    return fitted, top, targets, actual.loc[targets].to_numpy()


def backtest_scaling(
    scaling: pd.DataFrame,
    predictors: list[str] | tuple[str, ...] = DEFAULT_PREDICTORS,
    ks: tuple[int, ...] = (3, 4),
    max_factor: float = 4.0,
) -> pd.DataFrame:
    """Fit on each curve's ``k`` smallest sizes, predict the larger ones (module docstring).

    Returns one row per (predictor, k, curve, predicted size): ``predictor, k,
    curve_id, application, unit, size, fit_max_size, factor`` (size / largest
    fitted), ``time_pred_s, time_true_s, accuracy_pct, warned, uncertainty`` and
    ``chosen`` (the model ``auto`` chose for the curve; empty for other predictors).
    Curves with ``k`` sizes or fewer, or nothing to predict within ``max_factor``,
    are skipped for that ``k``.
    """
    from predictors.base import Queries
    from predictors.composite import CompositePredictor
    from predictors.registry import get_predictor
    from predictors.testing import make_platform

    groups = list(scaling.groupby("curve_id", sort=False))
    top_size = int(scaling["size"].max()) if len(scaling) else 1
    platform = make_platform(nodes=max(32, int(max_factor * top_size) + 1))
    nt = platform.node_types[0]
    out: list[pd.DataFrame] = []
    for k in ks:
        curves, meta = [], []
        for a, (cid, g) in enumerate(groups):
            split = _split_curve(g, int(k), max_factor)
            if split is None:
                continue
            fitted, top, targets, actual = split
            curves.append((a, fitted["size"].to_numpy(), fitted["runtime_s"].to_numpy()))
            meta.append((a, cid, g, top, targets, actual))
        if not curves:
            continue
        obs = _observations(curves, platform)
        apps = np.concatenate([np.full(len(m[4]), m[0]) for m in meta])
        sizes = np.concatenate([m[4] for m in meta]).astype(np.int64)
        queries = Queries(
            application=apps,
            nodes=sizes,
            freq_ghz=np.full(len(apps), nt.fmax_ghz),
            node_type=np.full(len(apps), nt.name, dtype=object),
        )
        for spec in predictors:
            pred = get_predictor(spec).fit(obs)
            # a composite's time at the top frequency is its node part's; its frequency
            # part has nothing to learn here (every run at the top clock), so the
            # node part's reliability is the one judged
            node_part = pred.node_ if isinstance(pred, CompositePredictor) else pred
            got = node_part.predict(queries)
            chosen = getattr(node_part, "chosen_models", None)
            chosen_of = chosen() if callable(chosen) else {}
            true = np.concatenate([m[5] for m in meta])
            rows = pd.DataFrame(
                {
                    "predictor": spec,
                    "k": int(k),
                    "curve_id": np.concatenate([[m[1]] * len(m[4]) for m in meta]),
                    "application": np.concatenate(
                        [[m[2]["application"].iloc[0]] * len(m[4]) for m in meta]
                    ),
                    "unit": np.concatenate([[m[2]["unit"].iloc[0]] * len(m[4]) for m in meta]),
                    "size": sizes,
                    "fit_max_size": np.concatenate([[m[3]] * len(m[4]) for m in meta]),
                    "time_pred_s": got.time_s,
                    "time_true_s": true,
                    "warned": ~np.asarray(got.reliable, dtype=bool),
                    "uncertainty": got.uncertainty,
                    "chosen": [chosen_of.get(int(a), "") for a in apps],
                }
            )
            rows["factor"] = rows["size"] / rows["fit_max_size"]
            rows["accuracy_pct"] = 100.0 - 100.0 * np.abs(rows["time_pred_s"] / true - 1.0)
            out.append(rows)
            log.debug("validate: %s k=%d: %d predictions", spec, k, len(rows))
    cols = [
        "predictor",
        "k",
        "curve_id",
        "application",
        "unit",
        "size",
        "fit_max_size",
        "factor",
        "time_pred_s",
        "time_true_s",
        "accuracy_pct",
        "warned",
        "uncertainty",
        "chosen",
    ]
    if not out:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
    return pd.concat(out, ignore_index=True)[cols]


def summarize_accuracy(results: pd.DataFrame) -> pd.DataFrame:
    """Per predictor: ``predictions, curves, median_pct, mean_pct, share_ge_80_pct``."""
    rows = []
    for name, g in results.groupby("predictor", sort=False):
        acc = g["accuracy_pct"].to_numpy(dtype=float)
        rows.append(
            {
                "predictor": name,
                "predictions": len(acc),
                "curves": g["curve_id"].nunique(),
                "median_pct": float(np.median(acc)),
                "mean_pct": float(np.mean(acc)),
                "share_ge_80_pct": float(100.0 * np.mean(acc >= 80.0)),
            }
        )
    return pd.DataFrame(rows)


def warning_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per predictor, accuracy of warned vs unwarned predictions: counts, medians, the
    share of unwarned predictions >= 80 % accurate and how many unwarned are < 70 %."""
    rows = []
    for name, g in results.groupby("predictor", sort=False):
        w = g[g["warned"].astype(bool)]["accuracy_pct"].to_numpy(dtype=float)
        u = g[~g["warned"].astype(bool)]["accuracy_pct"].to_numpy(dtype=float)
        rows.append(
            {
                "predictor": name,
                "warned": len(w),
                "warned_median_pct": float(np.median(w)) if len(w) else math.nan,
                "unwarned": len(u),
                "unwarned_median_pct": float(np.median(u)) if len(u) else math.nan,
                "unwarned_ge_80_pct": float(100.0 * np.mean(u >= 80.0)) if len(u) else math.nan,
                "unwarned_lt_70": int(np.sum(u < 70.0)),
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- DVFS


def dvfs_backtest_available() -> bool:
    """Whether :mod:`predictors.validation_dvfs` (the DVFS half) can be imported."""
    try:
        mod = importlib.import_module("predictors.validation_dvfs")
    except ImportError:
        return False
    return callable(getattr(mod, "backtest_dvfs", None))


def backtest_dvfs(curves: pd.DataFrame, predictors: list[str], n_clocks: int) -> pd.DataFrame:
    """:func:`predictors.validation_dvfs.backtest_dvfs` (raises ImportError when absent)."""
    mod = importlib.import_module("predictors.validation_dvfs")
    return mod.backtest_dvfs(curves, predictors, n_clocks)


def summarize_dvfs(results: pd.DataFrame) -> pd.DataFrame:
    """Per predictor and number of calibration clocks: median and mean ``time_error_pct``
    over the predicted points, and the mean and largest energy loss of the picked clock
    over the curves when the results carry an ``energy_loss_pct`` column (repeated on
    every row of its curve). :mod:`predictors.validation_dvfs`'s own ``summarize_dvfs``
    when it has one."""
    try:
        mod = importlib.import_module("predictors.validation_dvfs")
    except ImportError:
        mod = None
    own = getattr(mod, "summarize_dvfs", None)
    if callable(own):
        return own(results)
    if results.empty:
        return pd.DataFrame()
    keys = [c for c in ("predictor", "n_clocks") if c in results]
    rows = []
    for key, g in results.groupby(keys, sort=False):
        key_t = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(keys, key_t, strict=True))
        if "time_error_pct" in g:
            err = pd.to_numeric(g["time_error_pct"], errors="coerce").abs().dropna()
            row["points"] = len(err)
            row["median_time_error_pct"] = float(err.median()) if len(err) else math.nan
            row["mean_time_error_pct"] = float(err.mean()) if len(err) else math.nan
        if "energy_loss_pct" in g:
            per_curve = g.drop_duplicates("curve_id") if "curve_id" in g else g
            loss = pd.to_numeric(per_curve["energy_loss_pct"], errors="coerce").dropna()
            row["curves"] = len(loss)
            row["mean_energy_loss_pct"] = float(loss.mean()) if len(loss) else math.nan
            row["max_energy_loss_pct"] = float(loss.max()) if len(loss) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)
