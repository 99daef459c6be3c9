"""The fast paths of the two predictors that learn nothing: the oracle's grid shapes
(OraclePredictor.grid_shape, the truth's work_grid: a job's grid is one unit of its
application's work times its work) and the requested baseline's grids
(RequestedPredictor.predict_grid); the replays are those through ``predict``, bit for
bit."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from policies.registry import get_policy
from predictors.base import Observations
from predictors.baselines import OraclePredictor, RequestedPredictor
from simulator import simulate
from workloads.truth import get_truth_tags


@pytest.fixture(scope="module")
def kth() -> tuple[Any, Any, Any]:
    """The first 2,000 jobs of the bundled KTH-SP2 trace, its platform and ground truth."""
    from energysched.runner import build_platform, load_trace
    from workloads.applications import assign_ground_truth
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=2000)
    platform = build_platform("trace", trace)
    return trace, platform, assign_ground_truth(trace, platform, preset="npb-mix", seed=0)


def _oracle(kth: tuple[Any, Any, Any]) -> tuple[Any, Any, OraclePredictor]:
    _, platform, truth = kth
    return truth, platform, OraclePredictor(truth, platform).fit(Observations(platform=platform))


def test_scale_times_shape_is_the_truth_on_the_grid(kth) -> None:
    truth, platform, oracle = _oracle(kth)
    ntype = platform.node_types[0]
    sizes = np.array([1, 2, 3, 5, 8], dtype=np.int64)
    freqs = np.asarray(ntype.freqs_ghz, dtype=np.float64)
    assert get_truth_tags(truth).work_grid
    checked = 0
    for job in range(len(truth.application)):
        app = int(truth.application[job])
        got = oracle.grid_shape(app, ntype.name, sizes, freqs, 4, 3600.0, job_index=job)
        if truth.hybrid_[app]:
            assert got is None  # not proportional to work: predict answers
            continue
        assert got is not None
        shape, scale = got
        n = np.repeat(sizes, len(freqs)).astype(float)
        f = np.tile(freqs, len(sizes))
        t, p = truth.evaluate(np.full(n.size, job), ntype, n, f)
        np.testing.assert_allclose(scale * shape.time, t.reshape(shape.time.shape), rtol=1e-14)
        # computed once per node count and per clock, the grid is the rows' formula, bit for bit
        unit = truth.app_runtime(np.full(n.size, app), ntype, n, f)
        assert np.array_equal(shape.time, unit.reshape(shape.time.shape))
        assert np.array_equal(shape.power_w, p.reshape(shape.power_w.shape))  # no job in it
        assert shape.reliable.all() and not shape.time.flags.writeable
        for k, nodes in enumerate(sizes.tolist()):  # the time the engine runs the job for
            for j, freq in enumerate(freqs.tolist()):
                own = oracle.job_time_s(job, ntype.name, nodes, freq)
                assert own == truth.evaluate_one(job, ntype, nodes, freq)[0]
                assert own == pytest.approx(scale * shape.time[k, j], rel=1e-14)
        checked += 1
    assert checked > 10


def test_shapes_are_kept_per_application_and_grid_within_a_budget(kth) -> None:
    truth, platform, oracle = _oracle(kth)
    ntype = platform.node_types[0]
    freqs = np.asarray(ntype.freqs_ghz, dtype=np.float64)
    sizes = np.array([1, 2, 4], dtype=np.int64)
    jobs_of: dict[int, list[int]] = {}
    for job, application in enumerate(truth.application.tolist()):
        if not truth.hybrid_[application]:
            jobs_of.setdefault(application, []).append(job)
    first, second = next(jobs[:2] for jobs in jobs_of.values() if len(jobs) >= 2)
    app = int(truth.application[first])
    a = oracle.grid_shape(app, ntype.name, sizes, freqs, 1, 60.0, job_index=first)
    b = oracle.grid_shape(app, ntype.name, sizes, freqs, 1, 60.0, job_index=second)
    assert a is not None and b is not None and a[0] is b[0]  # one shape per grid
    assert oracle.grid_shape(app, ntype.name, sizes, freqs, 1, 60.0) is None  # no job: predict
    oracle.shape_cells_budget = (sizes.size + 1) * freqs.size  # the next grid goes beyond
    other = np.array([1, 3], dtype=np.int64)
    oracle.grid_shape(app, ntype.name, other, freqs, 1, 60.0, job_index=first)
    oracle.grid_shape(
        app, ntype.name, np.array([2], dtype=np.int64), freqs, 1, 60.0, job_index=first
    )
    assert oracle._shape_cells <= oracle.shape_cells_budget
    again = oracle.grid_shape(app, ntype.name, sizes, freqs, 1, 60.0, job_index=first)
    assert again is not None and again[0] is not a[0]  # dropped, made again
    assert np.array_equal(again[0].time, a[0].time) and again[1] == a[1]
    with pytest.raises(ValueError, match="application"):
        oracle.grid_shape(app + 1, ntype.name, sizes, freqs, 1, 60.0, job_index=first)


class _PredictOnlyOracle(OraclePredictor):
    """The oracle without its fast path: every grid through ``predict``."""

    grid_shape = None  # type: ignore[assignment]


class _PredictOnlyRequested(RequestedPredictor):
    """The requested baseline without its fast path."""

    predict_grid = None  # type: ignore[assignment]


@pytest.mark.parametrize(
    "policy", ["easy-slack-size-freq", "easy-min-energy-slack", "easy-energy-freq"]
)
def test_an_oracle_replay_through_shapes_is_the_replay_through_predict(policy: str, kth) -> None:
    """Every column of the jobs table equal, bit for bit: the same picks, and the
    planned runtimes and time limits of the jobs' own times (each job is asked for:
    jobs with the same request have different work)."""
    trace, platform, truth = kth

    def replay(oracle: OraclePredictor) -> tuple[pd.DataFrame, dict[str, int]]:
        chosen = get_policy(policy, predictor=oracle)
        jobs = simulate(trace, platform, chosen, None, truth).jobs
        return jobs, dict(chosen.chooser.stats)

    fast, stats = replay(OraclePredictor(truth))
    assert stats["shape_hits"] == stats["decisions"] and stats["predict_calls"] == 0
    assert stats["shape_reuses"] < stats["decisions"] // 2  # asked for each job
    slow, plain = replay(_PredictOnlyOracle(truth))
    assert plain["shape_hits"] == 0
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)


def test_the_requested_grid_is_predict_on_the_grid(kth) -> None:
    _, platform, _ = kth
    from predictors.base import Queries

    requested = RequestedPredictor().fit(Observations(platform=platform))
    ntype = platform.node_types[0]
    sizes = np.arange(1, ntype.count + 1, dtype=np.int64)
    freqs = np.asarray(ntype.freqs_ghz, dtype=np.float64)
    # (an unknown requested size is the queried one, on both paths)
    for rn, rt in ((4.0, 3600.0), (1.0, 17.5), (64.0, float("nan")), (float("nan"), 60.0)):
        got = requested.predict_grid(3, ntype.name, sizes, freqs, rn, rt)
        assert got is not None
        k = sizes.size * freqs.size
        ref = requested.predict(
            Queries(
                application=np.full(k, 3),
                nodes=np.repeat(sizes, freqs.size),
                freq_ghz=np.tile(freqs, sizes.size),
                node_type=np.full(k, ntype.name, dtype=object),
                requested_nodes=np.full(k, rn),
                requested_time_s=np.full(k, rt),
            )
        )
        for mine, theirs in zip(got, (ref.time_s, ref.power_w, ref.energy_j, ref.reliable)):
            assert np.array_equal(mine, theirs.reshape(mine.shape))  # bit for bit
    assert requested.predict_grid(3, "no-such-type", sizes, freqs, 4.0, 60.0) is None


@pytest.mark.parametrize("policy", ["easy-slack-size-freq", "easy-energy-freq"])
def test_a_requested_replay_through_grids_is_the_replay_through_predict(policy: str, kth) -> None:
    trace, platform, truth = kth

    def replay(requested: RequestedPredictor) -> tuple[pd.DataFrame, dict[str, int]]:
        chosen = get_policy(policy, predictor=requested)
        jobs = simulate(trace, platform, chosen, None, truth).jobs
        return jobs, dict(chosen.chooser.stats)

    fast, _ = replay(RequestedPredictor())
    slow, _ = replay(_PredictOnlyRequested())
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
