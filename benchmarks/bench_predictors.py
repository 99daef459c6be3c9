"""Performance of the predictors: one-application refit, batch prediction, LBM solvers.

Run: ``.venv/bin/python benchmarks/bench_predictors.py`` (prints a table), or
with pytest-benchmark: ``.venv/bin/pytest benchmarks/bench_predictors.py -m benchmark``.
Not part of the default test run. Measures:

* ``update`` of one finished run (refits only its application) for each
  cheap predictor, on a predictor already holding 2,000 runs of 200 applications;
* ``predict`` of a 1,000-row batch;
* ``lbm_surrogate`` on a 20 x 9 system for each solver.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from predictors.base import Observations, Queries
from predictors.lbm import lbm_surrogate
from predictors.registry import get_predictor
from predictors.testing import make_case

CHEAP = (
    "amdahl",
    "dvfs-naive",
    "dvfs-node-type",
    "dvfs-per-app",
    "fluid",
    "online-node-type",
    "lbm",
    "requested",
)


def _setup(name: str):
    case = make_case(n_apps=200, runs_per_app=10, queries_per_app=3, unknown_apps=0)
    runs = case.observations.runs
    base = Observations(
        runs=runs.iloc[:-10], benchmarks=case.observations.benchmarks, platform=case.platform
    )
    p = get_predictor(name).fit(base)
    one = runs.iloc[[-1]]
    q = case.queries
    idx = np.arange(min(1000, len(q)))
    batch = Queries(
        application=q.application[idx],
        nodes=q.nodes[idx],
        freq_ghz=q.freq_ghz[idx],
        node_type=q.node_type[idx],
        requested_nodes=q.requested_nodes[idx],
        requested_time_s=q.requested_time_s[idx],
    )
    return p, one, batch


def _time(fn, repeat: int = 200) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def main() -> None:
    print(f"{'predictor':<18} {'update 1 run (ms)':>18} {'predict 1000 rows (ms)':>24}")
    for name in CHEAP:
        p, one, batch = _setup(name)
        tu = _time(lambda p=p, one=one: p.update(one))
        tp = _time(lambda p=p, batch=batch: p.predict(batch), repeat=20)
        print(f"{name:<18} {tu * 1e3:>18.3f} {tp * 1e3:>24.3f}")
    rng = np.random.default_rng(0)
    A, b = rng.uniform(1, 10, (20, 9)), rng.uniform(1, 10, 20)
    for solver in ("lstsq", "nnls", "l1"):
        t = _time(lambda solver=solver: lbm_surrogate(A, b, solver=solver, normalize=True))
        print(f"lbm_surrogate {solver:<5} {t * 1e3:>13.3f} ms")


@pytest.mark.benchmark
@pytest.mark.parametrize("name", CHEAP)
def test_update_one_run(benchmark, name):
    p, one, _ = _setup(name)
    benchmark(p.update, one)


@pytest.mark.benchmark
@pytest.mark.parametrize("name", CHEAP)
def test_predict_batch(benchmark, name):
    p, _, batch = _setup(name)
    benchmark(p.predict, batch)


@pytest.mark.benchmark
@pytest.mark.parametrize("solver", ["lstsq", "nnls", "l1"])
def test_lbm_solver(benchmark, solver):
    rng = np.random.default_rng(0)
    A, b = rng.uniform(1, 10, (20, 9)), rng.uniform(1, 10, 20)
    benchmark(lbm_surrogate, A, b, solver, True)


if __name__ == "__main__":
    main()
