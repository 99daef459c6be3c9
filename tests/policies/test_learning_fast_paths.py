"""The learning loop's fast paths change nothing: RunBatch vs DataFrame observations,
grid_shape / predict_grid vs the generic predict, on a real replay (same decisions;
predicted times may differ in the last bits, the frames are compared to 1e-5)."""

from __future__ import annotations

import warnings
from typing import ClassVar

import pandas as pd
import pytest

from policies.choosers import PredictiveChooser
from policies.registry import get_policy
from predictors.base import GridShape, Observations, RunBatch
from simulator.engine import simulate


class _FrameChooser(PredictiveChooser):
    """Receives DataFrames (observe overridden) and predicts without predict_grid."""

    seen: ClassVar[list[type]] = []

    def observe(self, runs):  # type: ignore[override]
        _FrameChooser.seen.append(type(runs))
        super().observe(runs)

    def setup(self, platform, **context):  # type: ignore[override]
        super().setup(platform, **context)
        self._grid_fn = None  # generic predict path
        self._shape_fn = None


def _replay(policy_name: str, generic: bool, **params) -> pd.DataFrame:
    from energysched.runner import build_platform, load_trace
    from workloads.applications import assign_ground_truth
    from workloads.benchmark_suite import measure_benchmark_suite
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=400)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    obs = Observations(benchmarks=measure_benchmark_suite(platform, seed=0), platform=platform)
    policy = get_policy(policy_name, predictor="adept+fluid", **params)
    if generic:
        c = policy.chooser
        policy.chooser = _FrameChooser(
            predictor=c.predictor_spec, size=c.size, freq=c.freq, joint=c.joint, **params
        )
    return simulate(trace, platform, policy, None, truth, observations=obs).jobs


@pytest.mark.parametrize(
    "name",
    [
        "easy-slack-size-freq",
        "easy-energy-freq",
        "easy",
        "easy-energy-size-freq",
        "easy-min-energy-slack",
        "easy-min-edp",
    ],
)
def test_fast_paths_give_the_same_replay(name: str) -> None:
    fast = _replay(name, generic=False)
    _FrameChooser.seen.clear()
    slow = _replay(name, generic=True)
    assert _FrameChooser.seen and all(t is pd.DataFrame for t in _FrameChooser.seen)
    pd.testing.assert_frame_equal(fast, slow)


@pytest.mark.parametrize("sizes", ["range", "pow2"])
def test_shape_path_with_other_size_sets(sizes: str) -> None:
    """Picks kept per shape and requested size: the same replay as the generic path
    when the candidate sizes depend on the request."""
    fast = _replay("easy-slack-size-freq", generic=False, sizes=sizes)
    slow = _replay("easy-slack-size-freq", generic=True, sizes=sizes)
    pd.testing.assert_frame_equal(fast, slow)


def test_require_reliable_through_the_shape_path() -> None:
    """Jobs whose prediction at the rigid configuration is unreliable run rigid on the
    shape path too (it used to leave them undecided and crash)."""
    fast = _replay("easy-slack-size-freq", generic=False, require_reliable=True)
    slow = _replay("easy-slack-size-freq", generic=True, require_reliable=True)
    pd.testing.assert_frame_equal(fast, slow)
    assert (fast["nodes"] == fast["requested_nodes"]).mean() > 0.5


def test_run_batch_round_trip() -> None:
    frame = pd.DataFrame({"application": [1, 2, 1], "nodes": [4, 8, 2], "node_type": ["a"] * 3})
    batch = RunBatch.from_frame(frame)
    assert len(batch) == 3 and batch.columns == list(frame.columns)
    pd.testing.assert_frame_equal(batch.to_frame(), frame)
    part = batch.take(batch["application"] == 1)
    assert part["nodes"].tolist() == [4, 2]
    assert RunBatch.concat([part, part])["nodes"].tolist() == [4, 2, 4, 2]


def test_shape_path_is_used_and_ties_prefer_the_requested_size() -> None:
    from policies.choosers import _argmin_ties

    # the shape fast path really decides most moldable jobs of a replay
    policy = get_policy("easy-energy-size-freq", predictor="adept+fluid")
    from energysched.runner import build_platform, load_trace
    from workloads.applications import assign_ground_truth
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=300)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    simulate(trace, platform, policy, None, truth, observations=None)
    stats = policy.chooser.stats
    assert stats["shape_hits"] > 0.3 * stats["decisions"]
    # ties within 1e-9 relative: the preferred column wins, else the first tied one
    import numpy as np

    v = np.array([[2.0, 1.0, 1.0 + 1e-12, 3.0], [2.0, 1.0, 1.0 + 1e-12, 3.0], [np.inf] * 4])
    assert _argmin_ties(v, np.array([2, 0, 3])).tolist() == [2, 1, 3]
    v2 = np.array([[5.0, 1.0, 1.0 + 1e-6]])
    assert _argmin_ties(v2, np.array([2])).tolist() == [1]


def _plain_scans(mp) -> None:
    """Full queue scans that ask the chooser for every job: no resumed scans
    (QueuePolicy._resumed), no skipping by cached decisions and no one-partition loop (decisions)."""
    from policies.backfilling import QueuePolicy
    from policies.choosers import RigidChooser

    mp.setattr(QueuePolicy, "_resumed", lambda self, *a: None)
    mp.setattr(PredictiveChooser, "decisions", lambda self, jobs: None)
    mp.setattr(RigidChooser, "decisions", lambda self, jobs: None)


@pytest.mark.parametrize(
    ("name", "predictor"),
    [
        ("easy-slack-size-freq", "adept+fluid"),
        ("easy", "adept+fluid"),
        ("easy-energy-freq", "oracle"),
        ("fcfs", "adept+fluid"),
    ],
)
def test_resumed_queue_scans_give_the_same_replay(name: str, predictor: str, monkeypatch) -> None:
    """EASY / FCFS resume the previous batch's queue scan when only jobs arrived
    (QueuePolicy._resumed) and skip jobs by their cached node counts: the same
    schedule as rescanning the whole queue, asking for every decision."""
    from energysched.runner import build_platform, load_trace
    from workloads.applications import assign_ground_truth
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=1500)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)

    def replay() -> tuple[pd.DataFrame, int]:
        policy = get_policy(name, predictor=predictor)
        jobs = simulate(trace, platform, policy, None, truth, observations=None).jobs
        return jobs, policy.resumed_batches

    fast, resumed = replay()
    assert resumed > 50  # the shortcut is really taken
    _plain_scans(monkeypatch)
    slow, none = replay()
    assert none == 0
    pd.testing.assert_frame_equal(fast, slow)


def test_resumed_scans_on_two_node_types(monkeypatch) -> None:
    """Rigid EASY and FCFS on two partitions (the general scan): resuming gives the same schedule."""
    import numpy as np

    from simulator.platform import NodeType, Platform, PState

    fat = NodeType(name="fat", count=8, cores_per_node=4, pstates=(PState(2.0, 100.0, 300.0),))
    thin = NodeType(name="thin", count=16, cores_per_node=1, pstates=(PState(2.0, 50.0, 100.0),))
    platform = Platform(name="two", node_types=(fat, thin))
    rng = np.random.default_rng(3)
    n = 600
    runtime = rng.uniform(10, 2000, n).round()
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_s": np.cumsum(rng.exponential(60, n)).round(),
            "runtime_s": runtime,
            "procs": rng.choice([1, 2, 4, 8, 16, 32], n),
            "time_req_s": (runtime * rng.uniform(1.0, 3.0, n)).round(),
            "user_id": rng.integers(1, 9, n),
        }
    )
    for name in ("easy", "fcfs"):
        policy = get_policy(name)
        fast = simulate(jobs, platform, policy).jobs
        assert policy.resumed_batches > 20, name
        with monkeypatch.context() as mp:
            _plain_scans(mp)
            slow = simulate(jobs, platform, get_policy(name)).jobs
        pd.testing.assert_frame_equal(fast, slow)
        assert fast["start_s"].gt(fast["submit_s"]).any()  # jobs really queued


class _NeverKept(dict):
    """A PredictiveChooser._reuse that never finds anything (every job is decided
    through its predictor's shape)."""

    def get(self, key, default=None):
        return None


@pytest.mark.parametrize(
    ("name", "params", "reused"),
    [
        # with requested lengths most jobs repeat an earlier job's request and scale
        ("easy-slack-size-freq", {"job_length": "requested"}, 0.3),  # calibration runs on
        ("easy-slack-size-freq", {"job_length": "requested", "explore_runs": 3}, 0.2),
        # calibration runs wait in the queue
        ("easy-energy-freq", {"job_length": "requested", "explore_runs": 40}, 0.0),
        # unreliable rigid predictions: those jobs run rigid, nothing to reuse
        ("easy-slack-size-freq", {"job_length": "requested", "require_reliable": True}, 0.0),
        ("easy-energy-freq", {"job_length": "requested"}, 0.3),
        ("easy-min-energy-slack", {"job_length": "requested"}, 0.3),
        # predicted lengths (the default) vary from job to job: fewer scales repeat
        # (14 % of the decisions on these 1,500 jobs)
        ("easy-slack-size-freq", {}, 0.1),
    ],
)
def test_reused_decisions_give_the_same_replay(
    name: str, params: dict, reused: float, monkeypatch
) -> None:
    """A job whose application (same fitted state), node type, request and power
    cap match an earlier job's copies that job's decision (PredictiveChooser._reuse):
    the same schedule and predictions as deciding every job through the shape."""
    from energysched.runner import build_platform, load_trace
    from workloads.applications import assign_ground_truth
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=1500)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)

    def replay() -> tuple[pd.DataFrame, dict]:
        policy = get_policy(name, predictor="adept+fluid", **params)
        jobs = simulate(trace, platform, policy, None, truth, observations=None).jobs
        return jobs, dict(policy.chooser.stats)

    fast, stats = replay()
    assert stats["shape_reuses"] >= reused * stats["decisions"]  # the shortcut is taken
    setup = PredictiveChooser.setup

    def plain_setup(self, platform, **context):
        setup(self, platform, **context)
        self._reuse = _NeverKept()

    monkeypatch.setattr(PredictiveChooser, "setup", plain_setup)
    slow, plain = replay()
    assert plain["shape_reuses"] == 0
    pd.testing.assert_frame_equal(fast, slow)


@pytest.mark.parametrize("params", [{"job_length": "requested"}, {}])
def test_reusing_without_asking_the_predictor_gives_the_same_replay(params, monkeypatch) -> None:
    """A decision made since the predictor's last update is copied for a job asking
    the same question without calling the predictor's grid_shape: the same
    schedule, predictions and counters as asking and comparing its answer."""
    from energysched.runner import build_platform, load_trace
    from workloads.applications import assign_ground_truth
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=1500)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)

    def replay(ask: bool) -> tuple[pd.DataFrame, dict, int]:
        policy = get_policy("easy-slack-size-freq", predictor="adept+fluid", **params)
        policy.chooser.reuse_without_asking = not ask
        calls = [0]
        setup = policy.chooser.setup

        def counting_setup(platform, **context):
            setup(platform, **context)
            shape_fn = policy.chooser._shape_fn

            def counting(*args):
                calls[0] += 1
                return shape_fn(*args)

            policy.chooser._shape_fn = counting

        policy.chooser.setup = counting_setup
        jobs = simulate(trace, platform, policy, None, truth, observations=None).jobs
        return jobs, dict(policy.chooser.stats), calls[0]

    fast, stats, fewer = replay(ask=False)
    slow, plain, calls = replay(ask=True)
    pd.testing.assert_frame_equal(fast, slow)
    assert stats == plain
    assert fewer < calls - 50  # the shortcut is taken


def test_a_queued_calibration_run_stays_one_when_its_decision_could_be_reused() -> None:
    """A calibration run re-decided after its application refits stays a calibration
    run (lowest frequency), even when a job with the same request was just decided
    normally and its decision is kept for reuse."""
    import numpy as np

    from policies.base import ClusterView, QueuedJob
    from predictors.base import GridShape
    from simulator.platform import homogeneous_platform

    platform = homogeneous_platform(8)
    chooser = PredictiveChooser(
        predictor="amdahl+fluid", size="min-energy", freq="slack", explore_runs=1
    )
    chooser.setup(platform)
    chooser.static = False  # learning: calibration runs are on (explore_runs=1)
    chooser._min_runs = 0
    freqs = chooser._types[0].freqs
    k, f = 8, len(freqs)
    # every prediction unreliable: the first job of the application calibrates
    time = np.linspace(2.0, 1.0, k)[:, None] * (freqs.max() / freqs)[None, :]
    shape = GridShape(time, np.full((k, f), 100.0), np.zeros((k, f), dtype=bool))
    chooser._shape_fn = lambda *args: (shape, 10.0)

    def job(index: int) -> QueuedJob:
        return QueuedJob(index, index, 0.0, 4, 4, 1000.0, 1000.0, application=7)

    queue = [job(0), job(1)]
    view = ClusterView(0.0, platform, queue, [8], [8], [[]])
    chooser.prepare(queue, view)  # decides new jobs from the back: job 1 calibrates
    calibrating, normal = queue[1], queue[0]
    assert calibrating.scratch.grid == "explore"
    assert calibrating.scratch.decision.freq_ghz == freqs.min()
    assert normal.scratch.grid != "explore"
    assert normal.scratch.decision.freq_ghz > freqs.min()
    # the application refits (a new version); a third job with the same request
    # arrives and is decided first, then the queued jobs of the application again
    chooser._version[7] = chooser._version.get(7, 0) + 1
    chooser._stale.add(7)
    queue.append(job(2))
    chooser.prepare(queue, view)
    assert chooser.stats["shape_reuses"] >= 1  # the normal job copied job 2's decision
    assert calibrating.scratch.grid == "explore"  # still the calibration run
    assert calibrating.scratch.decision.freq_ghz == freqs.min()
    assert normal.scratch.decision.freq_ghz == queue[2].scratch.decision.freq_ghz > freqs.min()


def test_a_decision_is_copied_only_while_the_predictor_gives_the_same_answer() -> None:
    """Jobs with the same request copy a decision only while the predictor answers with
    the same shape and scale: a shape that changed without a refit of the job's own
    application (e.g. the fluid prior, the mean alpha over applications, moved) is
    decided again."""
    import numpy as np

    from policies.base import ClusterView, QueuedJob
    from predictors.base import GridShape
    from simulator.platform import homogeneous_platform

    platform = homogeneous_platform(8)
    chooser = PredictiveChooser(predictor="amdahl+fluid", size="min-energy", freq="fmax")
    chooser.setup(platform)
    chooser._min_runs = 0
    freqs = chooser._types[0].top_freq
    f = len(freqs)

    def shape_with_best(n_best: int) -> GridShape:
        # energy per node-time flat except at n_best nodes, where it is lowest
        time = np.array([[1.0 / n] for n in range(1, 9)]) * np.ones((8, f))
        time[n_best - 1] *= 0.5
        return GridShape(time, np.full((8, f), 100.0), np.ones((8, f), dtype=bool))

    answer = {"shape": shape_with_best(2), "scale": 10.0}
    chooser._shape_fn = lambda *args: (answer["shape"], answer["scale"])
    # the answers below change without an update of the predictor (in a replay
    # another application's update moves them): ask the predictor every time
    chooser.reuse_without_asking = False

    def job(index: int) -> QueuedJob:
        return QueuedJob(index, index, 0.0, 4, 4, 1000.0, 1000.0, application=3)

    queue = [job(0)]
    view = ClusterView(0.0, platform, queue, [8], [8], [[]])
    chooser.prepare(queue, view)
    assert queue[0].scratch.decision.nodes == 2
    queue.append(job(1))
    chooser.prepare(queue, view)  # same answer: copied
    assert chooser.stats["shape_reuses"] == 1
    assert queue[1].scratch.decision.nodes == 2
    answer["shape"] = shape_with_best(5)  # a new answer, same application version
    queue.append(job(2))
    chooser.prepare(queue, view)
    assert chooser.stats["shape_reuses"] == 1
    assert queue[2].scratch.decision.nodes == 5
    answer["scale"] = 20.0  # the same shape at another scale (e.g. a new request ratio)
    queue.append(job(3))
    chooser.prepare(queue, view)
    assert chooser.stats["shape_reuses"] == 1
    t2, t3 = (queue[k].scratch.decision.predicted_runtime_s for k in (2, 3))
    assert t3 == 2 * t2


def test_calibration_runs_visit_the_lowest_then_the_middle_clock() -> None:
    """With the default two calibration runs per application, the first runs at the
    lowest clock and the second at the middle one (the clocks of the DVFS calibration
    rule: with Fmax, three clocks); each is planned as if CPU-bound (Fmax / f)."""
    import numpy as np

    from policies.base import ClusterView, QueuedJob
    from predictors.base import GridShape
    from simulator.platform import homogeneous_platform

    platform = homogeneous_platform(8)
    chooser = PredictiveChooser(predictor="amdahl+fluid", size="rigid", freq="energy-optimal")
    assert chooser.explore_runs == 2
    chooser.setup(platform)
    chooser.static = False
    chooser._min_runs = 0
    freqs = chooser._types[0].freqs
    k, f = 8, len(freqs)
    time = np.ones((k, 1)) * (freqs.max() / freqs)[None, :]
    shape = GridShape(time, np.full((k, f), 100.0), np.zeros((k, f), dtype=bool))
    chooser._shape_fn = lambda *args: (shape, 10.0)

    def job(index: int) -> QueuedJob:
        return QueuedJob(index, index, 0.0, 4, 4, 1000.0, 1000.0, application=3)

    queue = [job(0), job(1), job(2)]
    chooser.prepare(queue, ClusterView(0.0, platform, queue, [8], [8], [[]]))
    explored = [j for j in queue if j.scratch.grid == "explore"]
    assert len(explored) == 2  # the third job is not a calibration run
    got = sorted(j.scratch.decision.freq_ghz for j in explored)
    assert len(freqs) == 5  # 1.2 .. 2.4 GHz
    # calibration clocks of m = 5 clocks, k = 3: indices 0, floor(4 / 2 + 1/2) = 2, 4
    assert got == [1.2, 1.8]
    for j in explored:
        d = j.scratch.decision
        assert d.planned_runtime_s == pytest.approx(1000.0 * freqs.max() / d.freq_ghz)


@pytest.mark.parametrize("size", ["min-energy", "efficiency"])
def test_all_sizes_are_the_union_of_every_node_count_and_the_request(size: str) -> None:
    """sizes="all": the candidate sizes kept once per node type (one array, shared by
    every request) and the request's column are what the general construction gives,
    the union of 1..count with the request (and 1 for the efficiency rule), for every
    request, also one larger than the node type (capped at its count)."""
    import numpy as np

    from policies.base import QueuedJob
    from simulator.platform import NodeType, Platform, PState

    fat = NodeType(name="fat", count=6, cores_per_node=4, pstates=(PState(2.0, 100.0, 300.0),))
    thin = NodeType(name="thin", count=11, cores_per_node=1, pstates=(PState(2.0, 50.0, 90.0),))
    chooser = PredictiveChooser(predictor="amdahl+fluid", size=size, sizes="all")
    chooser.setup(Platform(name="two", node_types=(fat, thin)))
    for t, ntype in enumerate((fat, thin)):
        arrays = set()
        for requested in range(1, ntype.count + 3):
            job = QueuedJob(requested, requested, 0.0, requested, requested, 60.0, 60.0, 0, 1, t)
            sizes, column = chooser._candidate_sizes(job)
            req = min(requested, ntype.count)
            extra = [req, 1] if size == "efficiency" else [req]
            expected = np.union1d(np.arange(1, ntype.count + 1), np.asarray(extra, np.int64))
            assert sizes.dtype == np.int64
            assert sizes.tolist() == expected.tolist() == list(range(1, ntype.count + 1))
            assert column == int(np.searchsorted(expected, req)) == req - 1
            assert chooser._candidate_sizes(job) == (sizes, column)  # kept
            arrays.add(id(sizes))
        assert len(arrays) == 1  # one array per node type


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("easy-slack-size-freq", {}),
        ("easy-energy-size-freq", {}),
        ("easy-min-edp", {}),
        ("easy-slack-size-freq", {"sizes": "range"}),
    ],
)
def test_lazy_composite_shapes_and_one_cell_predictions_give_the_same_replay(
    name: str, params: dict, monkeypatch
) -> None:
    """Composite shapes that compute the columns and rows a pick reads instead of
    their table (RatioShape) and rigid
    decisions predicted through predict_one give the very same replay (every value,
    bit for bit) as whole tables and one-cell predict_grid calls."""
    from predictors import composite

    def replay(lazy: bool) -> tuple[pd.DataFrame, dict]:
        with monkeypatch.context() as m:
            if lazy:
                column = composite.RatioShape.time_column

                def counted(self, j):
                    columns_read[0] += 1
                    return column(self, j)

                m.setattr(composite.RatioShape, "time_column", counted)
            else:  # columns and rows read from the whole table, as a plain GridShape does
                m.setattr(composite.RatioShape, "time_column", GridShape.time_column)
                m.setattr(composite.RatioShape, "time_row", GridShape.time_row)
                setup = PredictiveChooser.setup

                def grid_setup(self, platform, **context):
                    setup(self, platform, **context)
                    self._one_fn = None  # rigid predictions through predict_grid

                m.setattr(PredictiveChooser, "setup", grid_setup)
            policy = get_policy(name, predictor="adept+fluid", **params)
            from energysched.runner import build_platform, load_trace
            from workloads.applications import assign_ground_truth
            from workloads.bundled import builtin_trace_path

            warnings.simplefilter("ignore", RuntimeWarning)
            trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=600)
            platform = build_platform("trace", trace)
            truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
            jobs = simulate(trace, platform, policy, None, truth, observations=None).jobs
            return jobs, dict(policy.chooser.stats)

    columns_read = [0]
    lazy, lazy_stats = replay(lazy=True)
    assert columns_read[0] >= lazy_stats["shape_picks"] > 20  # picks read RatioShapes
    eager, eager_stats = replay(lazy=False)
    assert lazy_stats["predict_rows"] > 20 and lazy_stats == eager_stats
    pd.testing.assert_frame_equal(lazy, eager, check_exact=True)
