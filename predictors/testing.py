"""Conformance checks for predictor authors, and small synthetic test cases.

Use in your own tests::

    from predictors.testing import check_predictor
    from mypackage import MyPredictor

    def test_contract():
        check_predictor(MyPredictor)          # a class, a factory, or an instance

:func:`check_predictor` fits the predictor on a small synthetic case (or your
``observations``/``queries``) and raises :class:`AssertionError` naming the
failed check (``check_predictor[<check>]: ...``). Checks:

``init_params``       ``__init__`` stores hyper-parameters only: no learned
                      (``*_``) attribute before ``fit``; ``get_params`` round-trips.
``not_fitted``        ``predict`` before ``fit`` raises ``NotFittedError``.
``fit_returns_self``  ``fit(observations)`` returns the predictor.
``shapes``            every output array has ``len(queries)`` entries.
``units``             time > 0 s, power > 0 W, energy > 0 J, all finite (no NaN),
                      ``energy = time * power * nodes`` within 1e-6 relative,
                      ``reliable`` boolean.
``determinism``       a fresh instance fitted on the same data predicts the same.
``pickle``            a pickle round trip predicts the same.
``unknown_application``  queries for an application without runs are answered
                      (the documented fallback), valid, and not ``reliable``
                      (unless the class sets ``learns_from_runs = False``).
``update``            ``update(new_runs)`` returns the predictor and keeps the
                      outputs valid; with ``exact_update=True`` (default) fitting
                      on part of the runs then updating with the rest predicts
                      what fitting on all runs predicts (1e-6 relative).
``fast_paths``        only for predictors that offer them (the policies use them
                      instead of ``predict`` and cache on their answers):
                      ``predict_grid`` gives what ``predict`` gives on the same
                      size x P-state grid, and ``grid_shape``'s ``scale *
                      shape.time`` (and its power and reliability) is that grid
                      too (1e-9 relative), for every application of the queries
                      (with and without a requested time) before and after an
                      ``update``; ``predict_one`` gives cells of that grid.

The synthetic case (:func:`make_case`): one node type (1.2 to 2.4 GHz, the
default platform's power figures), a few applications whose jobs follow
Downey x Fluid (docs/background/models.md, section 1.4) with per-job work, counters that depend on the
hidden ``alpha`` and power, and a benchmark suite measured on every
configuration. :class:`SyntheticTruth` implements the
:class:`workloads.truth.GroundTruth` protocol so the ``oracle`` can be checked.
"""

from __future__ import annotations

import copy
import inspect
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from energysched.errors import NotFittedError
from predictors.base import (
    BENCHMARK_COLUMNS,
    RUN_COLUMNS,
    Observations,
    Prediction,
    Predictor,
    Queries,
)
from workloads.models.downey import downey_runtime
from workloads.node_types import NodeType, PState

# --------------------------------------------------------------------------- a tiny platform


@dataclass(frozen=True)
class ToyPlatform:
    """A platform (duck type of ``simulator.platform.Platform``)."""

    name: str
    node_types: tuple[NodeType, ...]


def make_platform(nodes: int = 32, cores_per_node: int = 4) -> ToyPlatform:
    """One node type ``"node"``: P-states 1.2..2.4 GHz, busy power ``110 + 119 x**2`` W."""
    ps = tuple(
        PState(f, round(92.0 + 8.0 * (f - 1.2) / 1.2, 3), round(110.0 + 119.0 * (f / 2.4) ** 2, 3))
        for f in (1.2, 1.5, 1.8, 2.1, 2.4)
    )
    return ToyPlatform("test-platform", (NodeType("node", nodes, cores_per_node, ps),))


# --------------------------------------------------------------------------- synthetic truth


@dataclass
class SyntheticTruth:
    """Downey x Fluid ground truth of a list of jobs (implements ``GroundTruth``).

    Per job ``j``: ``application[j]`` and its work ``work[j]`` (one-node
    runtime at ``Fmax``, s). Per application ``a``: Downey ``A``, ``sigma``,
    Fluid ``alpha``, ``pstatic_w``, ``pdyn_w`` (arrays indexed by application id).
    """

    application: np.ndarray
    work: np.ndarray
    A: np.ndarray
    sigma: np.ndarray
    alpha: np.ndarray
    pstatic_w: np.ndarray
    pdyn_w: np.ndarray
    noise: float = 0.0

    def evaluate(
        self,
        job_index: np.ndarray,
        node_type: Any,
        nodes: np.ndarray,
        freq_ghz: np.ndarray,
        cores: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """True runtime (s) and power per node (W)."""
        j = np.asarray(job_index, dtype=np.int64)
        a = self.application[j]
        x = np.asarray(freq_ghz, dtype=float) / node_type.fmax_ghz
        t = downey_runtime(np.asarray(nodes, dtype=float), self.work[j], self.A[a], self.sigma[a])
        t = t * ((1 - self.alpha[a]) + self.alpha[a] / x)
        p = self.pstatic_w[a] + self.pdyn_w[a] * x**2
        return t, p

    def measure(
        self,
        job_index: np.ndarray,
        node_type: Any,
        nodes: np.ndarray,
        freq_ghz: np.ndarray,
        cores: np.ndarray | None,
        runtime_s: np.ndarray,
        power_w: np.ndarray,
        rng: np.random.Generator,
    ) -> pd.DataFrame:
        """Measured runs (``truth * (1 + e)``, counters from ``alpha`` and power)."""
        j = np.asarray(job_index, dtype=np.int64)
        a = self.application[j]
        n = len(j)
        e = rng.standard_normal((4, n)) * self.noise
        x = np.asarray(freq_ghz, dtype=float) / node_type.fmax_ghz
        time = np.asarray(runtime_s) * (1 + e[0])
        power = np.asarray(power_w) * (1 + e[1])
        alpha = self.alpha[a]
        nodes = np.asarray(nodes, dtype=np.int64)
        c = (
            np.full(n, node_type.cores_per_node)
            if cores is None
            else np.asarray(cores, dtype=np.int64)
        )
        instr = self.work[j] * 1e9 * (1 + e[2])
        return pd.DataFrame(
            {
                "job_id": j + 1,
                "application": a,
                "submit_s": j.astype(float),
                "node_type": np.full(n, node_type.name, dtype=object),
                "nodes": nodes,
                "cores": c,
                "freq_ghz": np.asarray(freq_ghz, dtype=float),
                "time_s": time,
                "power_w": power,
                "energy_j": time * power * nodes,
                "ctr_instructions_per_s": instr / (nodes * c * time),
                "ctr_llc_miss_ratio": 0.02 + 0.5 * (1 - np.minimum(alpha, 1)),
                "ctr_mem_bandwidth_gbs": 20 * (0.05 + (1 - alpha)) / ((1 - alpha) + alpha / x),
                "ctr_stall_ratio": np.clip(0.9 * (1 - alpha), 0, 1),
                "rapl_power_w": (0.35 * self.pstatic_w[a] + 0.9 * (power - self.pstatic_w[a]))
                * (1 + e[3]),
                "instructions": instr,
                "requested_nodes": nodes,
                "requested_time_s": np.nan,
            }
        )


@dataclass
class SyntheticCase:
    """A ready-made test case: truth, platform, observations, queries (with ``job_index``)."""

    truth: SyntheticTruth
    platform: ToyPlatform
    observations: Observations
    queries: Queries
    jobs: pd.DataFrame = field(repr=False)  # requested_nodes, requested_time_s per job


def make_case(
    seed: int = 0,
    n_apps: int = 4,
    runs_per_app: int = 6,
    noise: float = 0.0,
    unknown_apps: int = 1,
    queries_per_app: int = 6,
) -> SyntheticCase:
    """A small deterministic case (see the module docstring).

    Observed runs of each application use node counts 1..16 and frequencies
    cycling Fmax, Fmin, 1.8 GHz; queries ask for new jobs of each application
    (and of ``unknown_apps`` applications without runs) at several sizes and
    every frequency.
    """
    rng = np.random.default_rng(seed)
    platform = make_platform()
    nt = platform.node_types[0]
    total_apps = n_apps + unknown_apps
    A = rng.uniform(4, 40, total_apps)
    sigma = rng.uniform(0, 2, total_apps)
    alpha = rng.uniform(0.2, 1.0, total_apps)
    pstatic = rng.uniform(80, 130, total_apps)
    pdyn = rng.uniform(60, 140, total_apps)
    app_of_job: list[int] = []
    obs_jobs: list[int] = []
    query_jobs: list[int] = []
    for a in range(total_apps):
        if a < n_apps:
            for _ in range(runs_per_app):
                obs_jobs.append(len(app_of_job))
                app_of_job.append(a)
        for _ in range(max(1, queries_per_app // 3)):
            query_jobs.append(len(app_of_job))
            app_of_job.append(a)
    application = np.array(app_of_job, dtype=np.int64)
    work = rng.uniform(2e3, 5e4, len(application))
    truth = SyntheticTruth(application, work, A, sigma, alpha, pstatic, pdyn, noise)
    node_choices = np.array([1, 2, 4, 8, 16])
    freq_cycle = np.array([nt.fmax_ghz, nt.fmin_ghz, 1.8])
    k = np.arange(len(application))
    req_nodes = node_choices[(k * 7 + application) % len(node_choices)]
    t_req, _ = truth.evaluate(k, nt, req_nodes, np.full(len(k), nt.fmax_ghz))
    req_time = np.round(t_req * rng.uniform(1.2, 3.0, len(k)))
    jobs = pd.DataFrame(
        {"application": application, "requested_nodes": req_nodes, "requested_time_s": req_time}
    )
    # observed runs
    oj = np.array(obs_jobs, dtype=np.int64)
    pos = np.arange(len(oj))
    f_obs = freq_cycle[pos % 3]
    n_obs = req_nodes[oj]
    t_true, p_true = truth.evaluate(oj, nt, n_obs, f_obs)
    runs = truth.measure(
        oj, nt, n_obs, f_obs, None, t_true, p_true, np.random.default_rng(seed + 1)
    )
    runs["requested_nodes"] = req_nodes[oj]
    runs["requested_time_s"] = req_time[oj]
    runs = runs[list(RUN_COLUMNS)]
    # benchmarks: 4 programs of known behaviour on every (n, f)
    bench_rows = []
    bparams = [
        (64.0, 0.0, 1.0, 120.0, 110.0),
        (8.0, 1.0, 0.3, 95.0, 70.0),
        (24.0, 0.5, 0.7, 105.0, 95.0),
        (2.0, 2.0, 0.1, 90.0, 50.0),
    ]
    bnames = ["cpu-bound", "memory-bound", "mixed", "serial"]
    for name, (bA, bs, ba, bps, bpd) in zip(bnames, bparams, strict=False):
        for n in (1, 2, 4, 8, 16, 32):
            for f in nt.freqs_ghz:
                x = f / nt.fmax_ghz
                t = float(downey_runtime(n, 1000.0, bA, bs)) * ((1 - ba) + ba / x)
                p = bps + bpd * x**2
                bench_rows.append(
                    {
                        "benchmark": name,
                        "node_type": nt.name,
                        "nodes": n,
                        "cores": nt.cores_per_node,
                        "freq_ghz": f,
                        "time_s": t,
                        "power_w": p,
                        "energy_j": t * p * n,
                        "ctr_instructions_per_s": 1e12 / (n * nt.cores_per_node * t),
                        "ctr_llc_miss_ratio": 0.02 + 0.5 * (1 - ba),
                        "ctr_mem_bandwidth_gbs": 20 * (0.05 + (1 - ba)) / ((1 - ba) + ba / x),
                        "ctr_stall_ratio": 0.9 * (1 - ba),
                        "rapl_power_w": 0.35 * bps + 0.9 * bpd * x**2,
                        "instructions": 1e12,
                    }
                )
    benchmarks = pd.DataFrame(bench_rows)[list(BENCHMARK_COLUMNS)]
    observations = Observations(
        runs=runs.reset_index(drop=True), benchmarks=benchmarks, platform=platform
    )
    # queries: each query job at 3 sizes x every frequency (subsampled to a handful)
    qj = np.array(query_jobs, dtype=np.int64)
    rows = []
    for j in qj:
        for i, n in enumerate((req_nodes[j], max(1, req_nodes[j] // 2), req_nodes[j] * 2)):
            for f in nt.freqs_ghz[:: 2 if i else 1]:
                rows.append((j, n, f))
    arr = np.array(rows, dtype=float)
    jidx = arr[:, 0].astype(np.int64)
    queries = Queries(
        application=application[jidx],
        nodes=arr[:, 1].astype(np.int64),
        freq_ghz=arr[:, 2],
        node_type=np.full(len(jidx), nt.name, dtype=object),
        requested_nodes=req_nodes[jidx],
        requested_time_s=req_time[jidx],
        job_index=jidx,
    )
    return SyntheticCase(truth, platform, observations, queries, jobs)


def make_observations(seed: int = 0, **kwargs: Any) -> Observations:
    """The observations of :func:`make_case`."""
    return make_case(seed, **kwargs).observations


def make_queries(seed: int = 0, **kwargs: Any) -> Queries:
    """The queries of :func:`make_case` (new jobs of known and unknown applications)."""
    return make_case(seed, **kwargs).queries


# --------------------------------------------------------------------------- the checks


def _fail(check: str, message: str) -> AssertionError:
    return AssertionError(f"check_predictor[{check}]: {message}")


def _factory_of(predictor_or_factory: Any) -> Callable[[], Predictor]:
    if isinstance(predictor_or_factory, Predictor):
        proto = predictor_or_factory

        def make() -> Predictor:
            return type(proto)(**copy.deepcopy(proto.get_params()))

        return make
    if callable(predictor_or_factory):
        return predictor_or_factory  # a class or a function returning a fresh predictor
    raise TypeError(
        f"check_predictor needs a Predictor, a class or a factory, got {predictor_or_factory!r}"
    )


def _check_valid(check: str, pred: Any, queries: Queries) -> Prediction:
    if not isinstance(pred, Prediction):
        raise _fail(check, f"predict() returned {type(pred).__name__}, expected Prediction")
    n = len(queries)
    for attr in ("time_s", "power_w", "energy_j", "reliable"):
        arr = np.asarray(getattr(pred, attr))
        if arr.shape != (n,):
            raise _fail(
                "shapes", f"{attr} has shape {arr.shape}, expected ({n},) (one entry per query)"
            )
    if pred.reliable.dtype != bool:
        raise _fail("units", "reliable must be a boolean array")
    for attr, unit in (("time_s", "s"), ("power_w", "W"), ("energy_j", "J")):
        arr = getattr(pred, attr)
        bad = ~np.isfinite(arr)
        if bad.any():
            raise _fail(
                "units",
                f"{attr} has {int(bad.sum())} non-finite values (first at row {int(np.flatnonzero(bad)[0])})",
            )
        if np.any(arr <= 0):
            i = int(np.flatnonzero(arr <= 0)[0])
            raise _fail("units", f"{attr} must be > 0 {unit}; row {i} is {arr[i]!r}")
    expect = pred.time_s * pred.power_w * queries.nodes
    rel = np.abs(pred.energy_j - expect) / expect
    if np.any(rel > 1e-6):
        i = int(np.argmax(rel))
        raise _fail(
            "units",
            f"energy_j must equal time_s * power_w * nodes (whole job); row {i}: {pred.energy_j[i]!r} vs {expect[i]!r}",
        )
    return pred


def _same(check: str, a: Prediction, b: Prediction, rtol: float = 0.0) -> None:
    for attr in ("time_s", "power_w", "energy_j"):
        x, y = getattr(a, attr), getattr(b, attr)
        if not np.allclose(x, y, rtol=rtol, atol=0.0):
            i = int(np.argmax(np.abs(x - y)))
            raise _fail(check, f"{attr} differs at row {i}: {x[i]!r} vs {y[i]!r}")
    if not np.array_equal(a.reliable, b.reliable):
        raise _fail(check, "reliable flags differ")


def _subset(queries: Queries, mask: np.ndarray) -> Queries:
    def take(v: np.ndarray | None) -> np.ndarray | None:
        return None if v is None else np.asarray(v)[mask]

    return Queries(
        application=np.asarray(queries.application)[mask],
        nodes=np.asarray(queries.nodes)[mask],
        freq_ghz=np.asarray(queries.freq_ghz)[mask],
        node_type=take(queries.node_type),
        cores=take(queries.cores),
        requested_nodes=take(queries.requested_nodes),
        requested_time_s=take(queries.requested_time_s),
        job_index=take(queries.job_index),
    )


def check_predictor(
    predictor_or_factory: Any,
    observations: Observations | None = None,
    queries: Queries | None = None,
    *,
    exact_update: bool = True,
) -> None:
    """Check that a predictor honours the contract of :mod:`predictors.base`.

    Args:
        predictor_or_factory: a :class:`Predictor` instance (cloned from its
            ``get_params``), a predictor class, or a zero-argument factory.
        observations, queries: the data to use (default: :func:`make_case`).
            ``queries`` should contain some rows of an application that has no
            runs in ``observations``.
        exact_update: also check that ``fit(part).update(rest)`` predicts like
            ``fit(all)`` (disable for predictors that learn in an order-dependent way).

    Raises:
        AssertionError: ``check_predictor[<check>]: <what is wrong>``.
    """
    make = _factory_of(predictor_or_factory)
    if observations is None or queries is None:
        case = make_case()
        observations = case.observations if observations is None else observations
        queries = case.queries if queries is None else queries

    # init_params
    p = make()
    if not isinstance(p, Predictor):
        raise _fail(
            "init_params",
            f"the factory returned {type(p).__name__}, not a predictors.base.Predictor",
        )
    learned = [k for k in vars(p) if k.endswith("_") and not k.startswith("_")]
    if learned:
        raise _fail(
            "init_params",
            f"__init__ must store hyper-parameters only; found learned attributes {learned}",
        )
    try:
        params = p.get_params()
        clone = type(p)(**params)
    except Exception as exc:
        raise _fail("init_params", f"type(p)(**p.get_params()) failed: {exc!r}") from exc
    if set(clone.get_params()) != set(params):
        raise _fail("init_params", "get_params() does not round-trip through __init__")
    sig = inspect.signature(type(p).__init__)
    for k in sig.parameters:
        if k != "self" and sig.parameters[k].kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            if not hasattr(p, k):
                raise _fail(
                    "init_params", f"__init__ parameter {k!r} must be stored as attribute {k!r}"
                )

    # not_fitted
    try:
        make().predict(queries)
    except NotFittedError:
        pass
    except Exception as exc:
        raise _fail(
            "not_fitted", f"predict() before fit() must raise NotFittedError, raised {exc!r}"
        ) from exc
    else:
        raise _fail("not_fitted", "predict() before fit() must raise NotFittedError, it returned")

    # fit_returns_self
    p = make()
    got = p.fit(observations)
    if got is not p:
        raise _fail(
            "fit_returns_self",
            f"fit() must return the predictor itself, returned {type(got).__name__}",
        )

    # unknown application
    known = set(np.unique(observations.runs["application"].to_numpy()).tolist())
    unknown_mask = ~np.isin(queries.application, list(known))
    if not unknown_mask.any():
        fresh = int(max(known | set(queries.application.tolist())) + 1)
        q = _subset(queries, np.arange(len(queries)) < min(3, len(queries)))
        q.application = np.full(len(q), fresh, dtype=np.int64)
        unknown_mask = np.ones(len(q), dtype=bool)
    else:
        q = _subset(queries, unknown_mask)
        unknown_mask = np.ones(len(q), dtype=bool)
    try:
        pred = p.predict(q)
    except Exception as exc:
        raise _fail(
            "unknown_application", f"predict() for an application without runs raised {exc!r}"
        ) from exc
    _check_valid("unknown_application", pred, q)
    if getattr(p, "learns_from_runs", True) and pred.reliable[unknown_mask].any():
        raise _fail(
            "unknown_application",
            "rows of an application without runs must be reliable=False (fallback)",
        )

    # shapes / units
    try:
        raw = p.predict(queries)
    except Exception as exc:
        raise _fail("units", f"predict() on the queries raised {exc!r}") from exc
    first = _check_valid("units", raw, queries)

    # determinism
    again = make().fit(observations).predict(queries)
    _same("determinism", first, _check_valid("determinism", again, queries))
    _same("determinism", first, p.predict(queries))

    # pickle
    try:
        restored = pickle.loads(pickle.dumps(p))
    except Exception as exc:
        raise _fail("pickle", f"the fitted predictor cannot be pickled: {exc!r}") from exc
    _same("pickle", first, restored.predict(queries))

    # update
    runs = observations.runs
    half = len(runs) // 2
    part = Observations(
        runs=runs.iloc[:half].reset_index(drop=True),
        benchmarks=observations.benchmarks,
        platform=observations.platform,
    )
    rest = runs.iloc[half:].reset_index(drop=True)
    u = make().fit(part)
    got = u.update(rest)
    if got is not u:
        raise _fail(
            "update", f"update() must return the predictor itself, returned {type(got).__name__}"
        )
    upd = _check_valid("update", u.predict(queries), queries)
    if exact_update:
        _same("update", first, upd, rtol=1e-6)

    # fast_paths
    if any(hasattr(p, name) for name in ("predict_grid", "grid_shape", "predict_one")):
        _check_fast_paths(make().fit(part), queries, observations.platform)
        _check_fast_paths(u, queries, observations.platform)


def _grid_queries(
    app: int,
    name: str,
    sizes: np.ndarray,
    freqs: np.ndarray,
    rn: float,
    rt: float,
    job: int | None = None,
) -> Queries:
    """The flattened ``sizes x freqs`` grid of one job as :class:`Queries` (size-major;
    ``job``: the job's row, for predictors whose answers depend on the job)."""
    k = len(sizes) * len(freqs)
    return Queries(
        application=np.full(k, app, dtype=np.int64),
        nodes=np.repeat(sizes, len(freqs)),
        freq_ghz=np.tile(freqs, len(sizes)),
        node_type=np.full(k, name, dtype=object),
        requested_nodes=np.full(k, rn, dtype=np.float64),
        requested_time_s=np.full(k, rt, dtype=np.float64),
        job_index=None if job is None else np.full(k, job, dtype=np.int64),
    )


def _check_fast_paths(p: Any, queries: Queries, platform: Any) -> None:
    """``predict_grid``, ``grid_shape`` and ``predict_one`` against ``predict`` (check
    ``fast_paths``). A predictor whose answers depend on the job
    (``grid_shape_per_job``) is asked about one job of each application of the
    queries (their ``job_index``), its ``grid_shape`` given that job and its
    ``job_time_s`` checked too."""
    if platform is None:
        return
    grid_fn = getattr(p, "predict_grid", None)
    shape_fn = getattr(p, "grid_shape", None)
    one_fn = getattr(p, "predict_one", None)
    per_job = bool(getattr(p, "grid_shape_per_job", False))
    time_fn = getattr(p, "job_time_s", None) if per_job else None
    job_of: dict[int, int] = {}
    if per_job and queries.job_index is not None:
        for app, job in zip(queries.application.tolist(), queries.job_index.tolist()):
            job_of.setdefault(int(app), int(job))
    apps = sorted(set(np.asarray(queries.application).tolist()))
    for t in platform.node_types:
        sizes = np.arange(1, int(t.count) + 1, dtype=np.int64)
        freqs = np.asarray(t.freqs_ghz, dtype=np.float64)
        for app in apps:
            job = job_of.get(app)
            if per_job and job is None:
                continue  # (no job of this application to ask about)
            for rn, rt in ((min(4, int(t.count)), 3600.0), (1, float("nan"))):
                where = f"application {app}, node type {t.name!r}, request ({rn}, {rt})"
                if per_job:
                    where += f", job {job}"
                ref = p.predict(_grid_queries(app, t.name, sizes, freqs, rn, rt, job))
                shape = (len(sizes), len(freqs))
                want = (
                    ref.time_s.reshape(shape),
                    ref.power_w.reshape(shape),
                    ref.energy_j.reshape(shape),
                    ref.reliable.reshape(shape),
                )
                if grid_fn is not None:
                    got = grid_fn(app, t.name, sizes, freqs, rn, rt)
                    if got is not None:
                        _same_grid("fast_paths", f"predict_grid ({where})", got, want)
                if shape_fn is not None:
                    answer = (
                        shape_fn(app, t.name, sizes, freqs, rn, rt, job_index=job)
                        if per_job
                        else shape_fn(app, t.name, sizes, freqs, rn, rt)
                    )
                    if answer is not None:
                        gs, scale = answer
                        time = scale * np.asarray(gs.time)
                        power = np.asarray(gs.power_w)
                        got = (time, power, time * power * sizes[:, None], gs.reliable)
                        _same_grid("fast_paths", f"grid_shape ({where})", got, want)
                if time_fn is not None and job is not None:
                    for k, j in ((0, len(freqs) - 1), (len(sizes) - 1, 0)):
                        got_t = time_fn(job, t.name, int(sizes[k]), float(freqs[j]))
                        if got_t is not None:
                            _same_grid(
                                "fast_paths",
                                f"job_time_s (n={sizes[k]}, f={freqs[j]}; {where})",
                                (np.array([[got_t]]),),
                                (want[0][k : k + 1, j : j + 1],),
                            )
                if one_fn is not None:
                    for k, j in ((0, len(freqs) - 1), (len(sizes) - 1, 0)):
                        got = one_fn(app, t.name, int(sizes[k]), freqs[j : j + 1], rn, rt)
                        if got is not None:
                            cell = tuple(np.array([[v]]) for v in got)
                            _same_grid(
                                "fast_paths",
                                f"predict_one (n={sizes[k]}, f={freqs[j]}; {where})",
                                cell,
                                tuple(w[k : k + 1, j : j + 1] for w in want),
                            )


def _same_grid(check: str, what: str, got: Any, want: Any) -> None:
    names = ("time_s", "power_w", "energy_j", "reliable")
    for name, g, w in zip(names, got, want):
        g = np.asarray(g)
        if g.shape != w.shape:
            raise _fail(check, f"{what}: {name} has shape {g.shape}, the grid is {w.shape}")
        if name == "reliable":
            if not np.array_equal(g.astype(bool), w):
                raise _fail(check, f"{what}: reliable differs from predict()")
        elif not np.allclose(g, w, rtol=1e-9, atol=0.0, equal_nan=True):
            bad = np.flatnonzero(~np.isclose(g, w, rtol=1e-9, atol=0.0, equal_nan=True).ravel())
            i = int(bad[0])
            raise _fail(
                check,
                f"{what}: {name} differs from predict() at grid cell {i} "
                f"({g.ravel()[i]!r} vs {w.ravel()[i]!r})",
            )


__all__ = [
    "SyntheticCase",
    "SyntheticTruth",
    "ToyPlatform",
    "check_predictor",
    "make_case",
    "make_observations",
    "make_platform",
    "make_queries",
]
