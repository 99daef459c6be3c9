"""Replay a trace's observation stream and measure predictor accuracy (MAPE).

:func:`evaluate_predictors` walks the jobs of a trace in submission order.
Each job, *before* it is observed, is predicted at a few configurations and
compared with the ground truth; then its measured run is given to the
predictor with ``update``. So every prediction uses only runs that finished
earlier in the stream, like a predictor inside a scheduler.

Configurations predicted for a job (first node type of the platform, where
the ground truth is calibrated): its recorded node count ``n_rec``, half of
it and twice it (capped at the node type's size), each at every P-state.

The observed run of a job is its recorded node count at a frequency chosen by
``observe``: ``"alternate"`` (default) runs an application's even-numbered
jobs at ``Fmax`` and odd-numbered ones at ``Fmin``, as a learning policy that
explores frequencies would, so that the DVFS predictors can calibrate;
``"fmax"`` observes everything at ``Fmax`` (what the trace itself recorded).

Metrics (``MAPE = mean(|M - E| / M) * 100``, ``M`` the true value):

* ``time_mape``, ``power_mape``, ``energy_mape``: absolute predictions. The
  time of a job nobody has seen depends on how well its work is guessed from
  the user's requested time, so these include that error.
* ``time_shape_mape``, ``energy_shape_mape``: the same after rescaling each
  job's predictions so the predicted time at ``(n_rec, Fmax)`` equals the true
  one (the "known work" view of the published studies, which predict one
  program at one input); rows at ``(n_rec, Fmax)`` are excluded.

Per-job scale (``job_length``): every query carries the job's length as the
predictors' per-job scale input, as inside a scheduler
(:mod:`policies.backfilling`, Job-length predictions): the job-length
prediction of :mod:`predictors.job_length` made at the job's submit from the
jobs finished by then (trace end times), or the request with
``job_length="requested"``. An observed run whose job had a prediction
carries its runtime at ``Fmax`` as its length (what the policies hand their
predictors, :mod:`policies.backfilling`), so a predictor's request ratio only
corrects its model's bias and does not rescale the predictions.
:func:`job_length_table` gives the job-length predictors' own errors.

Rows are split by how many runs of the application the predictor had seen
(``0``, ``1-2``, ``3-5``, ``6+``), plus ``all``.

Jobs in one replay batch never share an application (so per-application
predictors see exactly the runs before each job); ``batch`` bounds the batch
size. Predictions are vectorised per batch; each ``update`` refits only the
applications of the batch.
"""

from __future__ import annotations

import logging
import time as _time
from typing import Any, Literal, TypedDict, overload

import numpy as np
import pandas as pd

from predictors.base import RUN_COLUMNS, Observations, Predictor, Queries

log = logging.getLogger(__name__)

#: Observation-count buckets of the table: (label, low, high) inclusive.
BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("0", 0, 0),
    ("1-2", 1, 2),
    ("3-5", 3, 5),
    ("6+", 6, 1 << 62),
)
BUCKET_ORDER: tuple[str, ...] = (*(b[0] for b in BUCKETS), "all")


def _bucket(counts: np.ndarray) -> np.ndarray:
    out = np.empty(len(counts), dtype=object)
    for label, lo, hi in BUCKETS:
        out[(counts >= lo) & (counts <= hi)] = label
    return out


def _replay_batches(apps: np.ndarray, batch: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` ranges in which no application repeats."""
    out = []
    start = 0
    seen: set[int] = set()
    for i, a in enumerate(apps.tolist()):
        if a in seen or i - start >= batch:
            out.append((start, i))
            start = i
            seen = set()
        seen.add(a)
    if start < len(apps):
        out.append((start, len(apps)))
    return out


@overload
def evaluate_predictors(
    trace: Any,
    platform: Any,
    truth: Any,
    predictor_names: list[str] | tuple[str, ...],
    *,
    seed: int = 0,
    noise: float = 0.02,
    max_jobs: int | None = None,
    benchmarks: pd.DataFrame | None = None,
    observe: str = "alternate",
    batch: int = 512,
    return_rows: Literal[False] = False,
    predictors: dict[str, Predictor] | None = None,
    job_length: str = "request-history",
) -> pd.DataFrame: ...


@overload
def evaluate_predictors(
    trace: Any,
    platform: Any,
    truth: Any,
    predictor_names: list[str] | tuple[str, ...],
    *,
    seed: int = 0,
    noise: float = 0.02,
    max_jobs: int | None = None,
    benchmarks: pd.DataFrame | None = None,
    observe: str = "alternate",
    batch: int = 512,
    return_rows: Literal[True],
    predictors: dict[str, Predictor] | None = None,
    job_length: str = "request-history",
) -> tuple[pd.DataFrame, pd.DataFrame]: ...


@overload
def evaluate_predictors(
    trace: Any,
    platform: Any,
    truth: Any,
    predictor_names: list[str] | tuple[str, ...],
    *,
    seed: int = 0,
    noise: float = 0.02,
    max_jobs: int | None = None,
    benchmarks: pd.DataFrame | None = None,
    observe: str = "alternate",
    batch: int = 512,
    return_rows: bool = False,
    predictors: dict[str, Predictor] | None = None,
    job_length: str = "request-history",
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]: ...


def evaluate_predictors(
    trace: Any,
    platform: Any,
    truth: Any,
    predictor_names: list[str] | tuple[str, ...],
    *,
    seed: int = 0,
    noise: float = 0.02,
    max_jobs: int | None = None,
    benchmarks: pd.DataFrame | None = None,
    observe: str = "alternate",
    batch: int = 512,
    return_rows: bool = False,
    predictors: dict[str, Predictor] | None = None,
    job_length: str = "request-history",
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """MAPE of each predictor over the replayed observation stream (module docstring).

    Args:
        trace: a :class:`workloads.schema.Trace` (or its jobs DataFrame).
        platform: duck-typed platform (the truth's platform).
        truth: ground truth of the trace (``workloads.assign_ground_truth``):
            ``application``, ``recorded_nodes``, ``evaluate``, ``measure``.
        predictor_names: registry specs (``"oracle"`` gets ``truth``).
        seed: seed of the measurement noise (and of the benchmark suite when
            ``benchmarks`` is not given).
        noise: relative measurement noise of observed runs.
        max_jobs: evaluate only the first ``max_jobs`` usable jobs.
        benchmarks: the benchmark measurements predictors see (default:
            ``workloads.benchmark_suite.measure_benchmark_suite(platform)``).
        observe: ``"alternate"`` or ``"fmax"`` (frequency of observed runs).
        batch: largest replay batch.
        return_rows: also return the per-row table.
        predictors: ready predictor objects by label (instead of / besides names).
        job_length: job-length predictor of the per-job scale (module
            docstring; default: :data:`predictors.job_length.DEFAULT_JOB_LENGTH`).

    Returns:
        One row per (predictor, observations bucket): ``predictor``,
        ``observations``, ``jobs``, ``rows``, ``time_mape``, ``power_mape``,
        ``energy_mape``, ``time_shape_mape``, ``energy_shape_mape``,
        ``time_median_ape`` (median, robust to the few jobs whose request is
        far from their runtime),
        ``reliable_pct``, ``seconds`` (wall time of the predictor's replay).
    """
    from predictors.registry import get_predictor

    if observe not in ("alternate", "fmax"):
        raise ValueError(f"observe must be 'alternate' or 'fmax', got {observe!r}")
    jobs = trace.jobs if hasattr(trace, "jobs") else trace
    nt = next(iter(platform.node_types))
    freqs = np.array(sorted(p.freq_ghz for p in nt.pstates), dtype=float)
    fmax, fmin = freqs[-1], freqs[0]
    rec_n = np.asarray(truth.recorded_nodes, dtype=float)
    rec_t = np.asarray(
        getattr(truth, "recorded_runtime_s", jobs["runtime_s"].to_numpy(dtype=float)), dtype=float
    )
    usable = np.isfinite(rec_n) & (rec_n >= 1) & np.isfinite(rec_t) & (rec_t > 0)
    submit = (
        jobs["submit_s"].to_numpy(dtype=float)
        if "submit_s" in jobs
        else np.arange(len(jobs), dtype=float)
    )
    order = np.flatnonzero(usable)
    order = order[np.argsort(submit[order], kind="stable")]
    if max_jobs is not None:
        order = order[: int(max_jobs)]
    nj = len(order)
    if nj == 0:
        raise ValueError("no usable job (runtime and processors known) in the trace")
    apps = np.asarray(truth.application, dtype=np.int64)[order]
    # k-th run of its application (submission order)
    k = pd.Series(apps).groupby(apps).cumcount().to_numpy()

    # ---------------------------------------------------------------- observed runs
    f_obs = np.where((k % 2 == 1) & (observe == "alternate"), fmin, fmax)
    n_obs = rec_n[order]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 4]))
    t_obs, p_obs = truth.evaluate(order, nt, n_obs, f_obs, None)
    runs = truth.measure(order, nt, n_obs, f_obs, None, t_obs, p_obs, rng, noise=noise)
    runs = runs[list(RUN_COLUMNS)].reset_index(drop=True)
    ok_run = np.isfinite(runs["time_s"].to_numpy()) & (runs["time_s"].to_numpy() > 0)

    # ---------------------------------------------------------------- queries
    sizes = np.column_stack(
        [n_obs, np.maximum(1, np.floor(n_obs / 2)), np.minimum(nt.count, 2 * n_obs)]
    )
    n_cfg = sizes.shape[1] * len(freqs)
    q_job = np.repeat(np.arange(nj), n_cfg)
    q_nodes = np.repeat(sizes, len(freqs), axis=1).ravel()
    q_freq = np.tile(freqs, nj * sizes.shape[1])
    q_is_ref = np.tile(
        np.concatenate([freqs == fmax, np.zeros(n_cfg - len(freqs), dtype=bool)]), nj
    )
    req_n = runs["requested_nodes"].to_numpy(dtype=float)
    req_n = np.where(req_n >= 1, req_n, n_obs)
    req_t = runs["requested_time_s"].to_numpy(dtype=float)
    lengths = _predicted_lengths(jobs, truth, job_length)
    if lengths is not None:
        # the predictors' length input; a run whose job had a prediction carries its
        # runtime at Fmax (CPU-bound normalisation, as policies.backfilling does)
        got = lengths[order]
        predicted = np.isfinite(got)
        req_t = np.where(predicted, got, req_t)
        at_fmax = runs["time_s"].to_numpy(dtype=float) * (f_obs / fmax)
        old = runs["requested_time_s"].to_numpy(dtype=float)
        runs["requested_time_s"] = np.where(predicted & (at_fmax > 0), at_fmax, old)
    t_true, p_true = truth.evaluate(order[q_job], nt, q_nodes, q_freq, None)
    e_true = t_true * p_true * q_nodes
    queries_all = Queries(
        application=apps[q_job],
        nodes=q_nodes.astype(np.int64),
        freq_ghz=q_freq,
        node_type=np.full(len(q_job), nt.name, dtype=object),
        requested_nodes=req_n[q_job].astype(np.int64),
        requested_time_s=req_t[q_job],
        job_index=order[q_job],
    )
    valid = np.isfinite(t_true) & (t_true > 0) & np.isfinite(p_true) & (p_true > 0)

    if benchmarks is None:
        from workloads.benchmark_suite import measure_benchmark_suite

        benchmarks = measure_benchmark_suite(platform, seed=seed)
    empty = runs.iloc[0:0]
    batches = _replay_batches(apps, batch)

    models: dict[str, Predictor] = {}
    for name in predictor_names:
        models[name] = get_predictor(name, truth=truth) if name == "oracle" else get_predictor(name)
    models.update(predictors or {})

    tables = []
    rows_out = []
    bucket = _bucket(k[q_job])
    for label, model in models.items():
        started = _time.perf_counter()
        model.fit(Observations(runs=empty, benchmarks=benchmarks, platform=platform))
        pt = np.empty(len(q_job))
        pp = np.empty(len(q_job))
        rel = np.empty(len(q_job), dtype=bool)
        for a, b in batches:
            lo, hi = a * n_cfg, b * n_cfg
            q = _slice(queries_all, lo, hi)
            pred = model.predict(q)
            pt[lo:hi] = pred.time_s
            pp[lo:hi] = pred.power_w
            rel[lo:hi] = pred.reliable
            new = runs.iloc[a:b]
            if not ok_run[a:b].all():
                new = new[ok_run[a:b]]
            if len(new):
                model.update(new)
        seconds = _time.perf_counter() - started
        pe = pt * pp * q_nodes
        # shape view: scale each job so its (n_rec, Fmax) time is right
        ref_pred = pt[q_is_ref]
        ref_true = t_true[q_is_ref]
        factor = np.repeat(ref_true / ref_pred, n_cfg)
        st = pt * factor
        frame = pd.DataFrame(
            {
                "predictor": label,
                "job": q_job,
                "application": apps[q_job],
                "observations": bucket,
                "nodes": q_nodes,
                "freq_ghz": q_freq,
                "is_ref": q_is_ref,
                "ape_time": np.abs(pt - t_true) / t_true * 100,
                "ape_power": np.abs(pp - p_true) / p_true * 100,
                "ape_energy": np.abs(pe - e_true) / e_true * 100,
                "ape_time_shape": np.where(q_is_ref, np.nan, np.abs(st - t_true) / t_true * 100),
                "ape_energy_shape": np.where(
                    q_is_ref, np.nan, np.abs(st * pp * q_nodes - e_true) / e_true * 100
                ),
                "reliable": rel,
            }
        )[valid]
        tables.append(_summarise(frame, label, seconds))
        if return_rows:
            rows_out.append(frame)
        log.info("evaluated %s on %d jobs in %.2f s", label, nj, seconds)
    table = pd.concat(tables, ignore_index=True)
    if return_rows:
        return table, pd.concat(rows_out, ignore_index=True)
    return table


class _JobColumns(TypedDict):
    """The keyword arguments of :func:`predictors.job_length.backtest` taken from a jobs table."""

    submit_s: np.ndarray
    wait_s: np.ndarray
    runtime_s: np.ndarray
    requested_time_s: np.ndarray
    user_id: np.ndarray
    application: np.ndarray


def _job_columns(jobs: pd.DataFrame, application: Any) -> _JobColumns:
    """The columns :func:`predictors.job_length.backtest` reads, from a jobs table."""
    n = len(jobs)

    def col(name: str) -> np.ndarray:
        if name not in jobs:
            return np.full(n, np.nan)
        return jobs[name].to_numpy(dtype=np.float64, na_value=np.nan)

    user = col("user_id")
    return {
        "submit_s": col("submit_s") if "submit_s" in jobs else np.arange(n, dtype=float),
        "wait_s": col("wait_s"),
        "runtime_s": col("runtime_s"),
        "requested_time_s": col("time_req_s"),
        "user_id": np.where(np.isfinite(user), user, -1).astype(np.int64),
        "application": np.asarray(application, dtype=np.int64),
    }


def _predicted_lengths(jobs: pd.DataFrame, truth: Any, job_length: str) -> np.ndarray | None:
    """Each job's job-length prediction at its submit (trace order; NaN where there
    is none), or ``None`` for the ``requested`` predictor (the request itself)."""
    from predictors.job_length import RequestedLength, backtest, get_job_length_predictor

    jl = get_job_length_predictor(job_length)
    if isinstance(jl, RequestedLength):
        return None
    return backtest(jl, **_job_columns(jobs, truth.application)).predicted_s


def job_length_table(
    trace: Any,
    application: Any,
    names: list[str] | tuple[str, ...] | None = None,
    max_jobs: int | None = None,
) -> pd.DataFrame:
    """Errors of the job-length predictors (:mod:`predictors.job_length`) on a trace.

    Each job is predicted at its submit from the jobs finished by then
    (:func:`~predictors.job_length.backtest`); scored are the jobs with a
    positive runtime and request (the first ``max_jobs`` of them in submit
    order). One row per predictor: ``job_length``, ``jobs``, ``median_pct``
    and ``mean_pct`` of ``|predicted / actual - 1|`` in %.
    """
    from predictors.job_length import JOB_LENGTH_PREDICTORS, backtest

    jobs = trace.jobs if hasattr(trace, "jobs") else trace
    cols = _job_columns(jobs, application)
    rows = []
    for name in names or tuple(JOB_LENGTH_PREDICTORS):
        bt = backtest(name, **cols)
        scored = bt.scored
        if max_jobs is not None:
            order = np.argsort(cols["submit_s"], kind="stable")
            keep = order[scored[order]][: int(max_jobs)]
            scored = np.zeros(len(scored), dtype=bool)
            scored[keep] = True
        err = np.abs(bt.predicted_s[scored] / bt.actual_s[scored] - 1.0) * 100.0
        rows.append(
            {
                "job_length": name,
                "jobs": int(scored.sum()),
                "median_pct": float(np.median(err)) if len(err) else np.nan,
                "mean_pct": float(np.mean(err)) if len(err) else np.nan,
            }
        )
    return pd.DataFrame(rows)


def format_job_length_table(table: pd.DataFrame) -> str:
    """Markdown table of :func:`job_length_table`."""
    lines = [
        "| job length | jobs | median error % | mean error % |",
        "|---|---:|---:|---:|",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r['job_length']} | {r['jobs']} | {r['median_pct']:.1f} | {r['mean_pct']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def _slice(q: Queries, lo: int, hi: int) -> Queries:
    def take(v: np.ndarray | None) -> np.ndarray | None:
        return None if v is None else v[lo:hi]

    return Queries(
        application=q.application[lo:hi],
        nodes=q.nodes[lo:hi],
        freq_ghz=q.freq_ghz[lo:hi],
        node_type=take(q.node_type),
        cores=take(q.cores),
        requested_nodes=take(q.requested_nodes),
        requested_time_s=take(q.requested_time_s),
        job_index=take(q.job_index),
    )


def _summarise(frame: pd.DataFrame, label: str, seconds: float) -> pd.DataFrame:
    out = []
    for bucket in BUCKET_ORDER:
        sub = frame if bucket == "all" else frame[frame["observations"] == bucket]
        out.append(
            {
                "predictor": label,
                "observations": bucket,
                "jobs": int(sub["job"].nunique()),
                "rows": len(sub),
                "time_mape": sub["ape_time"].mean(),
                "time_median_ape": sub["ape_time"].median(),
                "power_mape": sub["ape_power"].mean(),
                "energy_mape": sub["ape_energy"].mean(),
                "time_shape_mape": sub["ape_time_shape"].mean(),
                "energy_shape_mape": sub["ape_energy_shape"].mean(),
                "reliable_pct": 100.0 * sub["reliable"].mean() if len(sub) else np.nan,
                "seconds": seconds,
            }
        )
    return pd.DataFrame(out)


def format_mape_table(
    table: pd.DataFrame, metrics: tuple[str, ...] = ("power", "time", "energy")
) -> str:
    """Markdown table like the published ones: MAPE (%) per predictor, one block per bucket.

    Columns ``<metric>`` (absolute mean), ``<metric> (median)`` (median absolute
    error, where the table has one) and ``<metric> (shape)`` where a shape view exists.
    """
    cols = []
    for m in metrics:
        cols.append((f"{m}", f"{m}_mape"))
        if f"{m}_median_ape" in table:
            cols.append((f"{m} (median)", f"{m}_median_ape"))
        if f"{m}_shape_mape" in table:
            cols.append((f"{m} (shape)", f"{m}_shape_mape"))
    lines = []
    for bucket in BUCKET_ORDER:
        sub = table[table["observations"] == bucket]
        if sub.empty or sub["rows"].sum() == 0:
            continue
        lines.append(
            f"\n**{bucket} observations of the application** ({int(sub['jobs'].max())} jobs)\n"
        )
        lines.append("| predictor | " + " | ".join(c[0] for c in cols) + " | reliable % |")
        lines.append("|---|" + "---:|" * (len(cols) + 1))
        for _, r in sub.iterrows():
            vals = " | ".join("" if pd.isna(r[c]) else f"{r[c]:.1f}" for _, c in cols)
            lines.append(f"| {r['predictor']} | {vals} | {r['reliable_pct']:.0f} |")
    return "\n".join(lines).strip() + "\n"


__all__ = [
    "BUCKETS",
    "evaluate_predictors",
    "format_job_length_table",
    "format_mape_table",
    "job_length_table",
]
