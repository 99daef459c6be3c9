"""Service-aware energy policies (policies.service): the BSLD-threshold rule,
the queue-length and utilisation gates, worked by hand on tiny queues."""

from __future__ import annotations

import math

import numpy as np
import pytest

from energysched.errors import ConfigError
from energysched.testing import _without_chooser_hooks, check_policy, scenarios
from policies.base import ClusterView, QueuedJob
from policies.registry import get_policy
from policies.service import ServiceAwareChooser, predicted_bsld
from predictors.base import Prediction, Predictor
from simulator.platform import homogeneous_platform

FMAX = 2.4


class HalfCpuBoundPredictor(Predictor):
    """Known predictions: a job runs its requested time at the top clock on any
    size, half of it CPU-bound (Fluid alpha 0.5): ``T(f) = R (0.5 + 0.5 Fmax / f)``;
    per-node power ``110 + 119 (f / Fmax)^2`` W (the default platform's figures)."""

    static = True  # trusted from the first job, learns nothing

    def fit(self, observations):
        return self

    def predict(self, queries):
        f = np.asarray(queries.freq_ghz, dtype=float)
        t = np.asarray(queries.requested_time_s, dtype=float) * (0.5 + 0.5 * FMAX / f)
        p = 110.0 + 119.0 * (f / FMAX) ** 2
        return Prediction(t, p, t * p * queries.nodes, np.ones(len(t), dtype=bool))


# By hand, for a 1000 s request (T in s, P in W per node, E / n in kJ):
#   f (GHz)   T        P         E / n      BSLD at wait w: (w + T) / 1000
#   1.2       1500     139.75    209.6      <= 2 while w <= 500
#   1.5       1300     156.48    203.4      <= 2 while w <= 700   (lowest energy)
#   1.8       1166.7   176.94    206.4      <= 2 while w <= 833.3
#   2.1       1071.4   201.11    215.5      <= 2 while w <= 928.6
#   2.4       1000     229.00    229.0      <= 2 while w <= 1000
# so with a threshold of 2: 1.5 GHz up to a wait of 700 s, then 1.8 GHz (the
# next-lowest energy still allowed) up to 833 s, then 2.1 GHz up to 929 s,
# then the top clock.
HAND_WORKED = [(0.0, 1.5), (700.0, 1.5), (750.0, 1.8), (900.0, 2.1), (990.0, 2.4), (2000.0, 2.4)]


def _job(index: int = 0, nodes: int = 4, submit_s: float = 0.0, req_s: float = 1000.0):
    return QueuedJob(index, index + 1, submit_s, nodes, nodes, req_s, req_s, 0, 1)


def _view(platform, now_s: float, queue, free: int | None = None) -> ClusterView:
    n = platform.node_types[0].count
    return ClusterView(now_s, platform, list(queue), [n if free is None else free], [n], [[]])


def _chooser(**kw) -> tuple[ServiceAwareChooser, object]:
    platform = homogeneous_platform(16)
    kw.setdefault("plan_with", "limit")
    kw.setdefault("max_stretch", math.inf)  # the bare BSLD rule unless a test sets a cap
    chooser = ServiceAwareChooser(predictor=HalfCpuBoundPredictor(), **kw)
    chooser.setup(platform)
    return chooser, platform


def _decide(chooser, platform, job, now_s, queue=None, free=None):
    queue = [job] if queue is None else queue
    view = _view(platform, now_s, queue, free)
    chooser.prepare(queue, view)
    return chooser.choose(job, view)


def test_predicted_bsld_formula():
    assert predicted_bsld(700.0, 1300.0, 1000.0) == pytest.approx(2.0)
    assert predicted_bsld(0.0, 3.0, 2.0) == pytest.approx(0.3)  # bounded by tau = 10 s


@pytest.mark.parametrize("fresh", [True, False])
def test_bsld_rule_picks_the_lowest_energy_clock_within_the_threshold(fresh):
    chooser, platform = _chooser(bsld_threshold=2.0)
    job = _job()
    for wait, expected in HAND_WORKED:
        if fresh:  # a new chooser and job each time: no memo of an earlier pick
            chooser, platform = _chooser(bsld_threshold=2.0)
            job = _job()
        d = _decide(chooser, platform, job, wait)
        assert d.freq_ghz == expected, (wait, d.freq_ghz)
        assert d.nodes == 4
        assert d.predicted_runtime_s == pytest.approx(1000.0 * (0.5 + 0.5 * FMAX / expected))
        if expected == FMAX:  # rigid: the requested limit and plan
            assert d.time_limit_s == 1000.0 and d.planned_runtime_s == 1000.0
        else:  # the user's limit moved by the worst case, R * Fmax / f (not the prediction)
            assert d.time_limit_s == pytest.approx(1000.0 * FMAX / expected)
        assert d.planned_runtime_s == d.time_limit_s  # plan_with="limit", as rigid EASY
        # the same object when asked twice in one batch (decisions() and choose())
        assert chooser.decisions([job]) == [d]


def test_plan_with_the_prediction():
    chooser, platform = _chooser(bsld_threshold=2.0, plan_with="prediction", safety_factor=1.1)
    d = _decide(chooser, platform, _job(), 0.0)
    assert d.freq_ghz == 1.5
    assert d.planned_runtime_s == pytest.approx(1.1 * 1300.0)  # safety_factor x predicted
    # the limit: the worst case R * Fmax / f = 1600 s, above the plan (1430 s)
    assert d.time_limit_s == pytest.approx(1000.0 * FMAX / 1.5)
    d = _decide(chooser, platform, _job(index=1), 2000.0)  # rigid: the request caps the plan
    assert d.freq_ghz == FMAX and d.planned_runtime_s == 1000.0 and d.time_limit_s == 1000.0


def test_a_wider_threshold_allows_the_energy_optimal_clock_longer():
    chooser, platform = _chooser(bsld_threshold=3.0)
    # 1.5 GHz allowed while (w + 1300) / 1000 <= 3, i.e. w <= 1700
    assert _decide(chooser, platform, _job(), 1700.0).freq_ghz == 1.5
    chooser, platform = _chooser(bsld_threshold=3.0)
    assert _decide(chooser, platform, _job(), 1800.0).freq_ghz == 1.8  # 1800 + 1166.7 <= 3000


def test_the_stretch_cap_keeps_clocks_that_slow_the_job_little():
    # a cap of 1.1: only T <= 1100 s qualifies: 2.1 GHz (1071.4 s, 215.5 kJ / node)
    chooser, platform = _chooser(bsld_threshold=2.0, max_stretch=1.1)
    d = _decide(chooser, platform, _job(), 0.0)
    assert d.freq_ghz == 2.1
    assert d.predicted_runtime_s == pytest.approx(1000.0 * (0.5 + 0.5 * FMAX / 2.1))
    # a cap of 1.2: 1.8 GHz (1166.7 s, 206.4 kJ) beats 2.1 GHz; 1.5 GHz (1300 s) is out
    chooser, platform = _chooser(bsld_threshold=2.0, max_stretch=1.2)
    assert _decide(chooser, platform, _job(), 0.0).freq_ghz == 1.8
    # both bounds hold: after a wait of 900 s the BSLD bound (T <= 1100 s) is the tighter
    chooser, platform = _chooser(bsld_threshold=2.0, max_stretch=1.2)
    assert _decide(chooser, platform, _job(), 900.0).freq_ghz == 2.1
    # a cap of 1: no clock below the top qualifies
    chooser, platform = _chooser(bsld_threshold=2.0, max_stretch=1.0)
    assert _decide(chooser, platform, _job(), 0.0).freq_ghz == FMAX


def test_top_clock_while_the_queue_is_long():
    chooser, platform = _chooser(bsld_threshold=2.0, queue_threshold=4)
    queue = [_job(i) for i in range(5)]  # 5 jobs wait: more than 4
    assert _decide(chooser, platform, queue[0], 0.0, queue).freq_ghz == FMAX
    # one job leaves the queue: 4 wait, lowering allowed again, the same job at 1.5 GHz
    queue = queue[:4]
    assert _decide(chooser, platform, queue[0], 0.0, queue).freq_ghz == 1.5


def test_utilisation_gate():
    chooser, platform = _chooser(bsld_threshold=math.inf, util_threshold=0.5)  # no BSLD bound
    job = _job()
    # 16 nodes, 10 free: 6 busy = 37.5 % < 50 %: the energy-optimal clock (no BSLD bound)
    assert _decide(chooser, platform, job, 5000.0, free=10).freq_ghz == 1.5
    # 8 busy = 50 %: not below the threshold: the top clock
    assert _decide(chooser, platform, job, 5000.0, free=8).freq_ghz == FMAX


def test_moldable_picks_the_lowest_energy_size_too():
    # this predictor's runtime does not shrink with the size: energy grows with n, one node wins
    chooser, platform = _chooser(bsld_threshold=2.0, moldable=True, sizes="pow2")
    d = _decide(chooser, platform, _job(nodes=4), 0.0)
    assert d.nodes == 1 and d.freq_ghz == 1.5  # 1 node: a quarter of the energy, same T


def test_parameters_are_checked():
    with pytest.raises(ConfigError, match="bsld_threshold"):
        ServiceAwareChooser(bsld_threshold=0.5)
    with pytest.raises(ConfigError, match="queue_threshold"):
        ServiceAwareChooser(queue_threshold=-1)
    with pytest.raises(ConfigError, match="util_threshold"):
        ServiceAwareChooser(util_threshold=1.5)
    with pytest.raises(ConfigError, match="freq"):
        ServiceAwareChooser(freq="slack")
    with pytest.raises(ConfigError, match="max_stretch"):
        ServiceAwareChooser(max_stretch=0.9)


@pytest.mark.parametrize(
    "name", ["easy-energy-bsld", "easy-energy-bsld-off", "easy-util-freq", "easy-util-freq-off"]
)
def test_registered_and_conform(name):
    policy = get_policy(name, predictor="oracle", queue_threshold="2")
    assert policy.name == name
    assert policy.chooser.queue_threshold == 2  # command-line strings are converted
    # the tuned defaults of the family (docs/background/service-aware-energy.md)
    assert policy.chooser.plan_with == "prediction"
    if name == "easy-energy-bsld-off":  # the whole policy: moldable, no stretch cap
        assert policy.chooser.moldable and policy.chooser.max_stretch == math.inf
        assert policy.chooser.safety_factor == 1.5 and policy.chooser.queue_threshold == 2
    else:
        assert not policy.chooser.moldable and policy.chooser.max_stretch == 1.1
    assert get_policy(name, predictor="oracle", max_stretch="1.25").chooser.max_stretch == 1.25
    off = policy.run_config_overrides().get("idle_timeout_s")
    assert (off == 600.0) == name.endswith("-off")
    scenario_list = scenarios()
    if name.endswith("-off"):
        # under a power cap, power management's shutdowns draw power no policy
        # predicts (QueuePolicy's docstring): easy-energy-freq with an idle timeout
        # exceeds the capped scenario's cap the same way
        scenario_list = [sc for sc in scenario_list if sc.name != "capped"]
    failures = check_policy(name, params={"predictor": "oracle"}, scenario_list=scenario_list)
    assert all(not v for v in failures.values()), failures


class UncalibratedPredictor(HalfCpuBoundPredictor):
    """The same predictions, flagged unreliable (no run at a second clock yet), and
    learning (not static): the chooser asks for calibration runs."""

    static = False

    def update(self, runs):
        return self

    def predict(self, queries):
        pred = super().predict(queries)
        return Prediction(
            pred.time_s, pred.power_w, pred.energy_j, np.zeros(len(pred.time_s), bool)
        )


def test_calibration_runs_wait_for_a_short_queue():
    platform = homogeneous_platform(16)
    chooser = ServiceAwareChooser(
        predictor=UncalibratedPredictor(), queue_threshold=1, min_runs=0, explore_runs=1
    )
    chooser.setup(platform)
    a, b = _job(0), _job(1)
    # two jobs wait: no lowered clock, so no calibration run (the lowest clock) either
    d = _decide(chooser, platform, a, 0.0, [a, b])
    assert d.freq_ghz == FMAX and d.planned_runtime_s == 1000.0
    chooser.started([d])
    # a started rigid: b, alone in the queue, makes the application's calibration run
    d = _decide(chooser, platform, b, 10.0, [b])
    assert d.freq_ghz == platform.node_types[0].fmin_ghz
    assert d.planned_runtime_s == pytest.approx(1000.0 * FMAX / 1.2)  # as if CPU-bound


def test_a_moved_job_keeps_the_time_its_request_allowed_in_the_worst_case():
    """Shrinking 4 -> 2 nodes at 1.2 GHz: at worst twice the node-seconds' share per
    node (speedup never falls with more nodes) and Fmax / f = 2 times slower, so the
    1000 s request becomes 1000 * 4/2 * 2.4/1.2 = 4000 s; growing to 8 nodes at the
    top clock can only be faster: the request stays 1000 s."""
    from policies.base import Decision

    chooser, _platform = _chooser(bsld_threshold=2.0)
    job = _job()
    assert chooser._worst_case_limit_s(job, Decision(job, 2, 1.2)) == pytest.approx(4000.0)
    assert chooser._worst_case_limit_s(job, Decision(job, 8, FMAX)) == pytest.approx(1000.0)


def test_a_calibration_job_started_rigid_plans_with_its_job_length():
    """While the queue is long a job due for a calibration run starts rigid; it is
    planned (and its runtime predicted) with its job-length prediction, as every
    rigid decision, not with its request."""
    platform = homogeneous_platform(16)
    chooser = ServiceAwareChooser(
        predictor=UncalibratedPredictor(), queue_threshold=1, min_runs=0, explore_runs=1
    )
    chooser.setup(platform)
    a, b = _job(0), _job(1)
    a.predicted_time_s = 250.0  # what the job-length predictor said (request 1000 s)
    d = _decide(chooser, platform, a, 0.0, [a, b])
    assert d.freq_ghz == FMAX and d.nodes == 4
    assert d.planned_runtime_s == 250.0 and d.predicted_runtime_s == 250.0
    # no job length: the request, and no runtime prediction recorded
    chooser = ServiceAwareChooser(
        predictor=UncalibratedPredictor(), queue_threshold=1, min_runs=0, explore_runs=1
    )
    chooser.setup(platform)
    c = _job(2)
    d = _decide(chooser, platform, c, 0.0, [c, b])
    assert d.planned_runtime_s == 1000.0 and d.predicted_runtime_s is None


class AmdahlHalfSerialPredictor(HalfCpuBoundPredictor):
    """Half of the work serial (Amdahl, s = 0.5) across node counts, the clock as
    :class:`HalfCpuBoundPredictor`: ``T(n, f) = R (0.5 + 0.5 n_req / n)(0.5 + 0.5 Fmax / f)``."""

    def predict(self, queries):
        pred = super().predict(queries)
        n = np.asarray(queries.nodes, dtype=float)
        n_req = np.asarray(queries.requested_nodes, dtype=float)
        t = pred.time_s * (0.5 + 0.5 * n_req / n)
        return Prediction(t, pred.power_w, t * pred.power_w * n, pred.reliable)


# By hand, a 4-node job requesting 1000 s, at the top clock (229 W per node):
#   n   T (s)   node-seconds   E (kJ)     BSLD at wait w: (w + T) / 1000
#   4   1000    4000           916.0      (rigid)
#   2   1500    3000           687.0      <= 2 while w <= 500; <= 3 while w <= 1500
#   1   2500    2500           572.5      <= 3 while w <= 500
# While the queue is long the shrink rule takes the lowest-energy smaller size at
# the top clock within the BSLD bound (fewer node-seconds than 4 x 1000 s: both).


def _amdahl_chooser(platform, **kw) -> ServiceAwareChooser:
    """A moldable chooser over 1, 2, 4 nodes with the half-serial predictor,
    gated at 4 waiting jobs (``kw``: the rule's other parameters)."""
    kw.setdefault("max_stretch", math.inf)
    chooser = ServiceAwareChooser(
        predictor=AmdahlHalfSerialPredictor(), moldable=True, sizes="pow2", queue_threshold=4, **kw
    )
    chooser.setup(platform)
    return chooser


def test_busy_rule_shrink_takes_a_smaller_size_at_the_top_clock_while_the_queue_is_long():
    platform = homogeneous_platform(16)

    def decide(wait_s, threshold):
        queue = [_job(i) for i in range(5)]  # 5 wait: more than queue_threshold
        chooser = _amdahl_chooser(
            platform, busy_rule="shrink", bsld_threshold=threshold, plan_with="limit"
        )
        return _decide(chooser, platform, queue[0], wait_s, queue)

    d = decide(0.0, 2.0)
    assert (d.nodes, d.freq_ghz) == (2, FMAX)
    assert d.predicted_runtime_s == pytest.approx(1500.0)
    assert d.time_limit_s == pytest.approx(2000.0)  # the request moved by n_req / n
    assert (decide(0.0, 3.0).nodes, decide(0.0, 3.0).freq_ghz) == (1, FMAX)
    assert decide(600.0, 3.0).nodes == 2  # 1 node no longer within the bound
    d = decide(600.0, 2.0)  # nothing smaller within the bound: rigid
    assert (d.nodes, d.freq_ghz, d.time_limit_s) == (4, FMAX, 1000.0)
    # the same job once the queue is short: clocks may be lowered as well
    queue = [_job(i) for i in range(5)]
    chooser = _amdahl_chooser(platform, busy_rule="shrink")
    assert _decide(chooser, platform, queue[0], 0.0, queue[:1]).freq_ghz < FMAX


def test_busy_rule_rigid_is_etinskis_top_clock_and_requested_size():
    platform = homogeneous_platform(16)
    chooser = _amdahl_chooser(platform)
    queue = [_job(i) for i in range(5)]
    d = _decide(chooser, platform, queue[0], 0.0, queue)
    assert (d.nodes, d.freq_ghz) == (4, FMAX)


def test_busy_rule_is_checked():
    with pytest.raises(ConfigError, match="busy_rule"):
        ServiceAwareChooser(busy_rule="sometimes", moldable=True)
    with pytest.raises(ConfigError, match="moldable"):
        ServiceAwareChooser(busy_rule="shrink")
    assert get_policy("easy-energy-bsld-off", predictor="oracle").chooser.busy_rule == "shrink"
    assert get_policy("easy-energy-bsld", predictor="oracle").chooser.busy_rule == "rigid"


def test_busy_rule_shrink_follows_the_wait_of_one_job():
    """One chooser, one job, asked at growing waits (threshold 3, table above):
    1 node until a wait of 500 s, then 2 nodes until 1500 s, then rigid."""
    platform = homogeneous_platform(16)
    chooser = _amdahl_chooser(
        platform, busy_rule="shrink", bsld_threshold=3.0, plan_with="limit", max_stretch=1.1
    )
    queue = [_job(i) for i in range(5)]
    picks = [
        _decide(chooser, platform, queue[0], w, queue).nodes for w in (0, 500, 501, 1500, 1501)
    ]
    assert picks == [1, 1, 2, 2, 4]


def test_max_shrink_bounds_the_smaller_sizes_and_the_worst_case_limit():
    """Threshold 3, no wait (table above): the shrink rule's best pick is 1 node
    (572.5 kJ), a quarter of the request. With ``max_shrink = 2`` no size below
    4 / 2 = 2 nodes is a candidate: it takes 2 nodes (687 kJ), and the time limit,
    the request moved by n_req / n, is at most max_shrink x the request: 2000 s
    instead of the 4000 s of the 1-node run. ``max_shrink = 4`` allows 1 node."""
    platform = homogeneous_platform(16)

    def decide(**kw):
        queue = [_job(i) for i in range(5)]  # 5 wait: more than queue_threshold
        chooser = _amdahl_chooser(
            platform, busy_rule="shrink", bsld_threshold=3.0, plan_with="limit", **kw
        )
        return _decide(chooser, platform, queue[0], 0.0, queue)

    d = decide()
    assert (d.nodes, d.time_limit_s) == (1, pytest.approx(4000.0))
    d = decide(max_shrink=2.0)
    assert (d.nodes, d.freq_ghz) == (2, FMAX)
    assert d.time_limit_s == pytest.approx(2000.0)
    assert decide(max_shrink=4.0).nodes == 1
    assert decide(max_shrink=1.0).nodes == 4  # no smaller size at all: rigid


def test_max_shrink_bounds_the_moldable_clock_choice_too():
    """Short queue, threshold 3 (limit 3000 s), no stretch cap, by hand at the
    grid of 1, 2, 4 nodes (T = R (0.5 + 0.5 n_req / n)(0.5 + 0.5 Fmax / f)):
    1 node at 1.8 GHz runs 2916.7 s for 2916.7 x 176.94 J = 516.1 kJ, the lowest
    energy within the limit (1 node at 1.5 GHz: 3250 s, over it). With
    ``max_shrink = 2`` the best is 2 nodes at 1.5 GHz: 1950 s x 156.48 W x 2 =
    610.3 kJ (1.8 GHz: 619.3 kJ; 1.2 GHz: 628.9 kJ)."""
    platform = homogeneous_platform(16)

    def decide(**kw):
        job = _job()  # a fresh job: no grid cached by another chooser
        chooser = _amdahl_chooser(platform, bsld_threshold=3.0, plan_with="limit", **kw)
        return _decide(chooser, platform, job, 0.0, [job])

    d = decide()
    assert (d.nodes, d.freq_ghz) == (1, 1.8)
    d = decide(max_shrink=2.0)
    assert (d.nodes, d.freq_ghz) == (2, 1.5)
    assert d.predicted_runtime_s == pytest.approx(1950.0)
    # the worst case at 2 nodes and 1.5 GHz: 1000 s x 4/2 x 2.4/1.5 = 3200 s
    assert d.time_limit_s == pytest.approx(3200.0)


def test_max_shrink_is_checked():
    with pytest.raises(ConfigError, match="max_shrink"):
        ServiceAwareChooser(max_shrink=0.5, moldable=True)
    assert ServiceAwareChooser(max_shrink=2, moldable=True).params()["max_shrink"] == 2.0
    assert ServiceAwareChooser().max_shrink == math.inf  # the chooser's own default: no bound
    assert get_policy("easy-energy-bsld-off", predictor="oracle").chooser.max_shrink == 4.0


class CountingPredictor(HalfCpuBoundPredictor):
    """:class:`HalfCpuBoundPredictor` that counts the jobs it is asked about."""

    def __init__(self) -> None:
        self.asked_rows = 0

    def predict(self, queries):
        self.asked_rows += len(queries.freq_ghz)
        return super().predict(queries)


def test_a_question_asked_since_the_last_update_is_not_asked_again():
    """Two jobs of one application, node type, size and length ask the same question:
    the second gets the first one's grid (and its own decision) without a call; a
    job with another length is asked."""
    platform = homogeneous_platform(16)
    predictor = CountingPredictor()
    chooser = ServiceAwareChooser(predictor=predictor, plan_with="limit", max_stretch=math.inf)
    chooser.setup(platform)
    first, same, longer = _job(0), _job(1), _job(2, req_s=2000.0)
    d_first = _decide(chooser, platform, first, 0.0)
    per_job = predictor.asked_rows  # the 5 clocks of the requested size
    assert per_job == 5
    d_same = _decide(chooser, platform, same, 0.0, [first, same])
    assert predictor.asked_rows == per_job
    assert d_same.job is same and d_first.job is first
    assert (d_same.nodes, d_same.freq_ghz) == (d_first.nodes, d_first.freq_ghz) == (4, 1.5)
    assert same.scratch.grid[1] is first.scratch.grid[1]  # one grid, read-only
    assert not first.scratch.grid[1].flags.writeable
    _decide(chooser, platform, longer, 0.0, [first, same, longer])
    assert predictor.asked_rows == 2 * per_job


def test_reusing_asked_grids_gives_the_same_replay(monkeypatch):
    """A learning replay (the predictor updated as runs finish) schedules the same
    when each job's grid is asked of the predictor as when a grid asked since the
    last update is reused, and the reuse saves calls."""
    import warnings

    import pandas as pd

    from energysched.runner import build_platform, load_trace
    from simulator.engine import simulate
    from workloads.applications import assign_ground_truth
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=1500)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)

    def replay(reuse: bool) -> tuple[pd.DataFrame, int]:
        policy = get_policy("easy-energy-bsld-off", predictor="adept+fluid")
        chooser = policy.chooser
        chooser.reuse_without_asking = reuse
        calls = [0]
        setup = chooser.setup

        def counting_setup(platform, **context):
            setup(platform, **context)
            grid_fn = chooser._grid_fn

            def counting(*args):
                calls[0] += 1
                return grid_fn(*args)

            chooser._grid_fn = counting

        chooser.setup = counting_setup
        jobs = simulate(trace, platform, policy, None, truth, observations=None).jobs
        return jobs, calls[0]

    reused, fewer = replay(reuse=True)
    asked, calls = replay(reuse=False)
    pd.testing.assert_frame_equal(reused, asked)
    assert fewer < 0.8 * calls


def _replay(policy, trace_file: str, max_jobs: int, at_once: bool = False):
    """The jobs table of ``policy`` replaying a shared trace's first ``max_jobs`` jobs
    (``at_once``: every job submitted at the first one's time, a long queue;
    else at the trace's own times) with the default ground truth and the
    benchmark suite's observations."""
    import warnings

    from energysched.runner import load_trace
    from tests.policies.replay_helpers import learning_replay, submitted_at_once
    from tests.shared_data import require_shared

    warnings.simplefilter("ignore", RuntimeWarning)
    if at_once:
        trace = submitted_at_once(trace_file, max_jobs)
    else:
        trace, _ = load_trace(require_shared("traces", trace_file), max_jobs=max_jobs)
    return learning_replay(trace, policy)


@pytest.mark.parametrize(
    "name, predictor, trace_file, max_jobs, at_once, params",
    [
        ("easy-energy-bsld-off", "adept+fluid", "SDSC-SP2-1998-4.2-cln.swf.gz", 3000, False, {}),
        ("easy-util-freq", "auto+fluid", "KTH-SP2-1996-2.1-cln.swf.gz", 3000, False, {}),
        ("easy-energy-bsld-off", "adept+fluid", "SDSC-SP2-1998-4.2-cln.swf.gz", 1500, True, {}),
        ("easy-util-freq-off", "adept+fluid", "CTC-SP2-1996-3.1-cln.swf.gz", 1000, True, {}),
        (
            "easy-energy-bsld-off",
            "adept+fluid",
            "KTH-SP2-1996-2.1-cln.swf.gz",
            800,
            True,
            {"backfill": "conservative"},
        ),
    ],
)
def test_held_decisions_schedule_as_the_rule_evaluated_at_every_batch(
    name, predictor, trace_file, max_jobs, at_once, params
):
    """The decisions held between batches (each decided again only when its gate
    flips, its application is refitted or its wait passes the bound it was picked
    within) start the same jobs at the same times, sizes and clocks as the rule
    evaluated for every queued job at every batch: on a trace's own arrivals and
    with every job submitted at once (the long queue read through the index),
    under EASY and conservative backfilling."""
    policy = get_policy(name, predictor=predictor, **params)
    got = _replay(policy, trace_file, max_jobs, at_once)
    if at_once:
        assert policy.indexed_batches > max_jobs // 4  # the index of held decisions
    else:
        assert policy.resumed_batches > 100  # scans resumed: the epoch stood still
    # the chooser's hooks off (check_policy's chooser_hooks check): backfilling asks
    # choose() for every job it looks at, the rule evaluated afresh at every batch
    plain = _without_chooser_hooks(get_policy(name, predictor=predictor, **params))
    want = _replay(plain, trace_file, max_jobs, at_once)
    assert plain.indexed_batches == 0 and plain.resumed_batches == 0
    for column in ("start_s", "end_s", "nodes", "freq_ghz", "planned_runtime_s"):
        assert np.array_equal(got[column].to_numpy(), want[column].to_numpy(), equal_nan=True)


@pytest.mark.parametrize("name", ["easy-energy-bsld-off", "easy-util-freq"])
def test_held_decisions_are_the_rule_now_and_changes_are_named(name):
    """After every prepare of a learning replay: every queued job's held decision is
    the one the rule gives now (the same object), and a job left out of
    ``changed_decisions`` holds the object it held after the previous prepare."""
    from tests.policies.replay_helpers import watch_changed_decisions

    policy = get_policy(name, predictor="adept+fluid")
    chooser = policy.chooser

    def held_is_fresh(queue, held):
        fresh = [chooser._decide(job)[0] for job in queue]
        assert all(a is b for a, b in zip(held, fresh)), "a held decision is stale"

    counts = watch_changed_decisions(chooser, held_is_fresh)
    _replay(policy, "SDSC-SP2-1998-4.2-cln.swf.gz", 2500)
    assert counts["batches"] > 2000
    assert counts["kept"] > 5000 and counts["changed"] > 50


@pytest.mark.parametrize(
    "name, params",
    [
        ("easy-energy-bsld", {}),
        ("easy-util-freq", {}),
        ("easy-energy-bsld-off", {"queue_threshold": 2}),
    ],
)
def test_held_decisions_on_two_node_types_schedule_as_the_rule_evaluated_at_every_batch(
    name, params
):
    """Two node types, each with its own gate (queue length, utilisation): a gate
    that flips decides that type's queued jobs again; the schedule is that of the
    rule evaluated for every queued job at every batch (KTH-SP2's first 2,000
    jobs, learning from their runs)."""
    import dataclasses
    import warnings

    import pandas as pd

    from energysched.runner import load_trace
    from simulator.engine import simulate
    from simulator.platform import Platform
    from workloads.applications import assign_ground_truth
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    base = homogeneous_platform(16).node_types[0]
    platform = Platform(
        name="two",
        node_types=(
            # a job goes to the first node type that can hold it: up to 8
            # processors on the thin nodes, more on the fat ones
            dataclasses.replace(base, name="thin", count=8),
            dataclasses.replace(base, name="fat", count=25, cores_per_node=4),
        ),
    )
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=2000)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    moved: list[int] = []
    policy = get_policy(name, predictor="adept+fluid", **params)
    prepare = policy.chooser.prepare

    def counting(queue, view):
        prepare(queue, view)
        got = policy.chooser.changed_decisions()
        moved.append(0 if got is None else len(got))

    policy.chooser.prepare = counting
    held = simulate(trace, platform, policy, None, truth).jobs
    plain = _without_chooser_hooks(get_policy(name, predictor="adept+fluid", **params))
    want = simulate(trace, platform, plain, None, truth).jobs
    assert held["node_type"].nunique() == 2 and held["freq_ghz"].nunique() > 1
    assert sum(moved) > len(held)  # jobs were decided again while they waited
    pd.testing.assert_frame_equal(held, want)
