"""Policies: hand-built cases with known decisions, oracle properties, power cap,
conservative backfilling, learning loop, registry, plug-ins through the CLI."""

from __future__ import annotations

import inspect
import json
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from energysched.errors import ConfigError
from energysched.testing import SimpleTruth, check_policy, scenario_trace
from policies import factories
from policies.backfilling import Profile, QueuePolicy, reservation
from policies.base import QueuedJob, RunningJob, release_s
from policies.choosers import PredictiveChooser, pareto_front
from policies.oracle import prediction_mape, regret
from policies.registry import get_policy, list_policies
from predictors.base import Prediction, Predictor
from predictors.baselines import OraclePredictor
from simulator.config import RunConfig
from simulator.engine import simulate
from simulator.platform import homogeneous_platform
from tests.policies.replay_helpers import earliest, free_at, reservation_by_sorting, reserve

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def one_job_trace(procs: int, runtime: float = 1000.0, req: float = 2000.0, n: int = 1):
    return pd.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_s": np.arange(n) * 10.0,
            "runtime_s": np.full(n, runtime),
            "procs": np.full(n, procs),
            "time_req_s": np.full(n, req),
            "user_id": np.ones(n, dtype=int),
        }
    )


def run(policy, jobs, truth=None, nodes=16, **config):
    return simulate(jobs, homogeneous_platform(nodes), policy, RunConfig(**config), truth)


# --------------------------------------------------------------------------- known decisions


def test_low_alpha_job_gets_low_frequency_under_energy_optimal():
    jobs = one_job_trace(4, n=2)
    # job 0 memory-bound (alpha 0.05), job 1 CPU-bound (alpha 1.0)
    truth = SimpleTruth([0, 1], 1000.0, A=64.0, sigma=0.0, alpha=[0.05, 1.0])
    res = run(get_policy("easy-energy-freq", predictor="oracle"), jobs, truth)
    freq = res.jobs["freq_ghz"].to_numpy()
    platform = homogeneous_platform(16)
    fmin, fmax = platform.node_types[0].fmin_ghz, platform.node_types[0].fmax_ghz
    assert freq[0] == fmin
    assert freq[1] > freq[0]
    # the chosen P-state is the true energy minimum over all P-states
    nt = platform.node_types[0]
    for i in range(2):
        fs = np.array(nt.freqs_ghz)
        t, p = truth.evaluate(np.full(len(fs), i), nt, np.full(len(fs), 4), fs)
        assert freq[i] == fs[np.argmin(t * p)]
    assert freq[1] == fmax  # alpha = 1 with these power figures: the top frequency is optimal


def test_flattening_downey_curve_gets_fewer_nodes_under_min_energy():
    jobs = one_job_trace(16)
    truth = SimpleTruth([0], 4000.0, A=4.0, sigma=0.5, alpha=0.5)
    for name in ("easy-min-energy", "easy-min-energy-slack"):
        res = run(get_policy(name, predictor="oracle"), jobs, truth)
        n = int(res.jobs["nodes"].iloc[0])
        assert n < 16, name
    res = run(get_policy("easy-min-energy-slack", predictor="oracle", slack=0.1), jobs, truth)
    n = int(res.jobs["nodes"].iloc[0])
    nt = homogeneous_platform(16).node_types[0]
    t_n, _ = truth.evaluate(np.array([0]), nt, np.array([n]), np.array([nt.fmax_ghz]))
    t_req, _ = truth.evaluate(np.array([0]), nt, np.array([16]), np.array([nt.fmax_ghz]))
    assert t_n[0] <= 1.1 * t_req[0] * (1 + 1e-9)
    assert 4 <= n <= 7  # the speedup is flat from 2A - 1 = 7 nodes on


def test_slack_rules_never_exceed_their_slack_under_the_oracle():
    jobs, truth = scenario_trace(80, 16, seed=3)
    nt = homogeneous_platform(16).node_types[0]
    for name in ("easy-slack-size-freq", "easy-min-energy-slack", "easy-slack-freq"):
        for slack in (0.0, 0.2):
            res = run(get_policy(name, predictor="oracle", slack=slack), jobs, truth)
            j = res.jobs
            idx = np.arange(len(j))
            req = j["requested_nodes"].to_numpy()
            t_ref, _ = truth.evaluate(idx, nt, req, np.full(len(j), nt.fmax_ghz))
            t_got, _ = truth.evaluate(idx, nt, j["nodes"].to_numpy(), j["freq_ghz"].to_numpy())
            assert np.all(t_got <= (1 + slack) * t_ref * (1 + 1e-9)), (name, slack)
            assert np.allclose(j["runtime_s"], t_got)


def test_min_energy_with_oracle_never_exceeds_rigid_busy_energy():
    jobs, truth = scenario_trace(80, 16, seed=5)
    rigid = run(get_policy("easy"), jobs, truth)
    nt = homogeneous_platform(16).node_types[0]
    for name in ("easy-min-energy", "easy-energy-size-freq", "easy-min-energy-slack"):
        res = run(get_policy(name, predictor="oracle"), jobs, truth)
        j = res.jobs
        assert (j["status"] == "completed").all()
        idx = np.arange(len(j))
        t_r, p_r = truth.evaluate(idx, nt, j["requested_nodes"].to_numpy(), np.full(len(j), 2.4))
        e_rigid = t_r * p_r * j["requested_nodes"].to_numpy()
        assert np.all(j["energy_j"].to_numpy() <= e_rigid * (1 + 1e-9)), name
        assert res.summary["energy_busy_j"] <= rigid.summary["energy_busy_j"] * (1 + 1e-9)
        # with the oracle, recorded predictions are exact
        m = prediction_mape(j)
        assert m["time_mape_pct"] < 1e-6 and m["energy_mape_pct"] < 1e-6


def test_pareto_choices_lie_on_the_front_and_respect_deadline():
    jobs, truth = scenario_trace(40, 16, seed=11)
    nt = homogeneous_platform(16).node_types[0]
    # every node count (the default is the requested size's range, see test_pareto_joint.py)
    res = run(get_policy("easy-pareto-deadline", predictor="oracle", sizes="all"), jobs, truth)
    j = res.jobs
    assert (j["runtime_s"] <= j["requested_time_s"] * (1 + 1e-9)).all()
    for i in range(5):
        ns = np.repeat(np.arange(1, 17), len(nt.freqs_ghz))
        fs = np.tile(np.array(nt.freqs_ghz), 16)
        t, p = truth.evaluate(np.full(len(ns), i), nt, ns, fs)
        e = t * p * ns
        front = pareto_front(t, e)
        chosen = np.flatnonzero((ns == j["nodes"].iloc[i]) & (fs == j["freq_ghz"].iloc[i]))[0]
        # nothing on the front is both feasible and cheaper
        feasible = front[t[front] <= j["requested_time_s"].iloc[i]]
        assert e[chosen] <= e[feasible].min() * (1 + 1e-9)
    budget = run(get_policy("easy-pareto-budget", predictor="oracle"), jobs, truth)
    rigid = run(get_policy("easy"), jobs, truth)
    assert (budget.jobs["energy_j"] <= rigid.jobs["energy_j"] * (1 + 1e-9)).all()


def test_pareto_front_helper():
    t = np.array([1.0, 2.0, 3.0, 2.0, 1.0])
    e = np.array([5.0, 3.0, 1.0, 4.0, 6.0])
    assert pareto_front(t, e).tolist() == [0, 1, 2]


def test_efficiency_and_load_adaptive_rules():
    jobs = one_job_trace(4)
    truth = SimpleTruth([0], 4000.0, A=8.0, sigma=0.0, alpha=0.5)  # linear speedup up to 8
    res = run(get_policy("easy-efficiency", predictor="oracle", efficiency=0.9), jobs, truth)
    assert res.jobs["nodes"].iloc[0] == 8  # largest n with efficiency >= 0.9
    # load-adaptive: alone in an idle machine it goes wide (fastest = 8, smallest fastest size)
    res = run(get_policy("easy-load-adaptive", predictor="oracle"), jobs, truth)
    assert res.jobs["nodes"].iloc[0] == 8
    # with many jobs submitted at once, each gets at most an equipartition share
    many = one_job_trace(4, n=8)
    many["submit_s"] = 0.0
    truth8 = SimpleTruth(np.zeros(8, int), 4000.0, A=8.0, sigma=0.0, alpha=0.5)
    res = run(get_policy("easy-load-adaptive", predictor="oracle"), many, truth8)
    assert res.jobs["nodes"].iloc[0] <= 16 // 8


# --------------------------------------------------------------------------- power


@pytest.mark.parametrize("name", ["easy", "easy-min-energy", "easy-energy-freq", "conservative"])
def test_power_cap_never_exceeded(name):
    jobs, truth = scenario_trace(60, 16, seed=2)
    jobs["submit_s"] = (jobs["submit_s"] / 10).round()  # crowd the queue
    peak = homogeneous_platform(16).node_types[0].max_power_w * 16
    cap = 0.55 * peak
    pred = None if name in ("easy", "conservative") else "oracle"
    policy = get_policy(name, predictor=pred, power_cap_w=cap)
    res = run(policy, jobs, truth)
    assert res.summary["power_cap_violations"] == 0
    assert res.power["power_w"].max() <= cap * (1 + 1e-9)
    nodes = res.jobs["requested_nodes"].to_numpy()
    never = 16 * 92.0 + nodes * (229.0 - 92.0) > cap  # cannot fit even on an idle machine
    status = res.jobs["status"].to_numpy()
    if name in ("easy", "conservative"):
        assert (status[never] == "rejected").all()
        assert (status[~never] == "completed").all()
    else:
        assert (status == "completed").sum() >= (~never).sum()
    uncapped = run(get_policy(name, predictor=pred), jobs, truth)
    assert uncapped.power["power_w"].max() > cap  # the cap did bind
    if pred is not None:
        assert res.jobs.loc[status == "completed", "predicted_power_w"].notna().all()


def test_power_management_overrides():
    p = get_policy("easy-min-energy", idle_timeout_s=60, reserve_nodes=2, power_cap_w="5000")
    assert p.run_config_overrides() == {
        "idle_timeout_s": 60.0,
        "reserve_nodes": 2,
        "power_cap_w": 5000.0,
    }
    jobs, truth = scenario_trace(30, 16)
    res = run(get_policy("easy", idle_timeout_s=60, reserve_nodes=1), jobs, truth)
    assert res.summary["energy_off_j"] > 0
    assert res.meta["config"]["idle_timeout_s"] == 60


# --------------------------------------------------------------------------- backfilling


def _known_queue():
    # 4 nodes; runtimes equal requested times (no truth)
    return pd.DataFrame(
        {
            "job_id": [1, 2, 3, 4],
            "submit_s": [0.0, 1.0, 2.0, 3.0],
            "runtime_s": [100.0, 100.0, 100.0, 300.0],
            "procs": [3, 3, 4, 1],
            "time_req_s": [100.0, 100.0, 100.0, 300.0],
            "user_id": [1, 1, 1, 1],
        }
    )


def test_conservative_backfilling_known_schedule():
    res = run(get_policy("conservative"), _known_queue(), nodes=4)
    start = res.jobs.set_index("job_id")["start_s"].to_dict()
    # job 4 (1 node, 300 s) would delay job 3's reservation at t=200: it waits until 300
    assert start == {1: 0.0, 2: 100.0, 3: 200.0, 4: 300.0}


def test_easy_backfilling_same_queue_delays_the_second_job():
    res = run(get_policy("easy"), _known_queue(), nodes=4)
    start = res.jobs.set_index("job_id")["start_s"].to_dict()
    # job 4 uses the head's extra node at t=3 and delays job 3 (EASY protects only the head)
    assert start == {1: 0.0, 2: 100.0, 3: 303.0, 4: 3.0}


def test_conservative_backfills_into_holes():
    jobs = _known_queue()
    jobs.loc[3, ["runtime_s", "time_req_s"]] = 90.0  # fits before job 2's reservation
    res = run(get_policy("conservative"), jobs, nodes=4)
    start = res.jobs.set_index("job_id")["start_s"].to_dict()
    assert start == {1: 0.0, 2: 100.0, 3: 200.0, 4: 3.0}


def test_profile_earliest_and_reserve():
    prof = Profile(0.0, 1, [(100.0, 3)])
    assert earliest(prof, 1, 50.0) == 0.0
    assert earliest(prof, 2, 10.0) == 100.0
    reserve(prof, 100.0, 100.0, 3)
    assert earliest(prof, 2, 10.0) == 200.0
    assert free_at(prof, 150.0) == 1


def test_conservative_never_delays_earlier_reservations_random():
    jobs, _ = scenario_trace(120, 16, seed=9)
    jobs["runtime_s"] = jobs["time_req_s"]  # exact estimates: reservations are kept
    res = run(get_policy("conservative"), jobs, nodes=16)
    j = res.jobs.sort_values("submit_s")
    assert (j["status"] == "completed").all()
    # with exact estimates and FCFS order a job never starts later than under FCFS
    fcfs = run(get_policy("fcfs"), jobs, nodes=16).jobs.sort_values("submit_s")
    assert (j["start_s"].to_numpy() <= fcfs["start_s"].to_numpy() + 1e-9).all()


def test_predicted_reservations_use_predictions():
    jobs, truth = scenario_trace(40, 16)
    res = run(get_policy("easy", predictor="oracle"), jobs, truth)
    j = res.jobs
    # rigid configuration, planned with the (exact) predicted runtime, limit = requested
    assert np.allclose(j["planned_runtime_s"], j["runtime_s"])
    assert np.allclose(j["time_limit_s"], j["requested_time_s"])
    assert (j["freq_ghz"] == 2.4).all() and (j["nodes"] == j["requested_nodes"]).all()


class QuarterRequestedPredictor(Predictor):
    """Predicts a quarter of the requested time (too short for most jobs), 100 W per node."""

    static = True  # trusted from the first job: no learning

    def fit(self, observations):
        return self

    def predict(self, queries):
        t = np.asarray(queries.requested_time_s, dtype=float) / 4.0
        p = np.full(len(t), 100.0)
        return Prediction(t, p, t * p * queries.nodes, np.ones(len(t), dtype=bool))


def _running(start, planned_end, limit_end, nodes):
    job = QueuedJob(0, 0, 0.0, nodes, nodes, 1.0, 1.0, 0, 0)
    return RunningJob(job, 0, nodes, 1, 2.4, start, planned_end, limit_end)


def test_reservation_replans_an_overdue_job_to_its_time_limit():
    # 1 node free; a 3-node job planned to end at 50 with a limit at 200; now = 60
    running = [_running(0.0, 50.0, 200.0, 3)]
    assert reservation(running, [], 1, 4, 60.0) == (200.0, 0)
    assert release_s(running[0], 60.0) == 200.0
    assert release_s(running[0], 40.0) == 50.0  # not overdue yet: its plan
    # past its limit too: it counts as ending now
    assert reservation(running, [], 1, 4, 250.0) == (250.0, 0)
    # overdue jobs are ordered by their new release, among the others and the started ones
    running = [_running(0.0, 10.0, 500.0, 2), _running(0.0, 70.0, 80.0, 1)]
    assert reservation(running, [(90.0, 1)], 0, 2, 60.0) == (90.0, 0)
    assert reservation(running, [(90.0, 1)], 0, 3, 60.0) == (500.0, 1)
    # without a limit the planned end is all there is
    assert _running(0.0, 50.0, None, 1).limit_end_s == 50.0


def test_reservation_walk_equals_a_stable_sort_of_all_releases():
    """reservation() merges the few re-planned and started jobs into the sorted
    running jobs lazily: the same (shadow, extra) as sorting every release, ties
    included (integer times in a narrow range make many)."""
    rng = np.random.default_rng(5)
    checked_ties = 0
    for _ in range(3000):
        now = float(rng.integers(0, 20))
        running = []
        for _ in range(int(rng.integers(0, 9))):
            start = float(rng.integers(0, 10))
            planned = float(rng.integers(0, 30))
            limit = None if rng.random() < 0.2 else planned + float(rng.integers(0, 20))
            running.append(_running(start, planned, limit, int(rng.integers(1, 5))))
        running.sort(key=lambda r: r.expected_end_s)
        started = [
            (now + float(rng.integers(0, 25)), int(rng.integers(1, 5)))
            for _ in range(int(rng.integers(0, 4)))
        ]
        free_now = int(rng.integers(0, 4))
        needed = int(rng.integers(1, 16))
        got = reservation(running, started, free_now, needed, now)
        assert got == reservation_by_sorting(running, started, free_now, needed, now)
        ends = [release_s(r, now) for r in running] + [e for e, _ in started]
        checked_ties += len(ends) != len(set(ends))
    assert checked_ties > 1000


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_backfilling_behind_an_overdue_job_until_its_limit(backfill):
    # 4 nodes. Job 1: 3 nodes, runs 100 s of its 200 s limit, predicted 50 s (overdue at t=50).
    # Job 2 (head): 4 nodes. Job 3: 1 node, 100 s (planned 100 s), arrives at t=60.
    jobs = pd.DataFrame(
        {
            "job_id": [1, 2, 3],
            "submit_s": [0.0, 1.0, 60.0],
            "runtime_s": [100.0, 100.0, 100.0],
            "procs": [3, 4, 1],
            "time_req_s": [200.0, 400.0, 400.0],
            "user_id": [1, 1, 1],
        }
    )
    res = run(get_policy(backfill, predictor=QuarterRequestedPredictor()), jobs, nodes=4)
    j = res.jobs.set_index("job_id")
    assert j["planned_runtime_s"].to_dict() == {1: 50.0, 2: 100.0, 3: 100.0}
    # at t=60 job 1 is re-planned to its limit (t=200): job 3 ends (planned 160) before the
    # head's shadow time and is backfilled; the head starts when job 3 ends. Counting job 1
    # as ending "now" (t=60) would have put the shadow time at 60 and kept job 3 waiting.
    assert j["start_s"].to_dict() == {1: 0.0, 2: 160.0, 3: 60.0}


# --------------------------------------------------------------------------- learning loop


class CountingPredictor(Predictor):
    """The oracle's answers from a predictor that counts as learning: records
    its updates and predicted rows."""

    def __init__(self, truth=None):
        self.truth = truth

    def fit(self, observations):
        self.oracle_ = OraclePredictor(self.truth).fit(observations)
        self.observations_ = observations
        self.updates_ = []
        self.rows_ = 0
        return self

    def update(self, new_runs):
        self.updates_.append(sorted(set(new_runs["application"].tolist())))
        return self

    def predict(self, queries):
        self.rows_ += len(queries)
        return self.oracle_.predict(queries)


def test_unseen_application_runs_rigid_until_min_runs():
    jobs, truth = scenario_trace(80, 16, seed=4)
    pred = CountingPredictor(truth)
    policy = get_policy("easy-min-energy", predictor=pred, min_runs=3)
    assert policy.learns
    res = run(policy, jobs, truth)
    assert pred.updates_  # the learning loop ran
    j = res.jobs.sort_values("start_s")
    fin = res.jobs.sort_values("end_s")
    for app in np.unique(truth.application):
        ends = fin.loc[fin["application"] == app, "end_s"].to_numpy()
        enough_at = ends[2] if len(ends) >= 3 else math.inf
        early = j[(j["application"] == app) & (j["start_s"] < enough_at)]
        assert (early["nodes"] == early["requested_nodes"]).all()
        assert (early["freq_ghz"] == 2.4).all()
    moldable = res.jobs["nodes"] != res.jobs["requested_nodes"]
    assert moldable.any()
    stats = policy.chooser.stats
    assert stats["predict_calls"] < res.summary["policy_calls"] * 2 + 1


def test_cached_decisions_are_invalidated_on_refit():
    jobs, truth = scenario_trace(60, 16, seed=8)
    jobs["submit_s"] = (jobs["submit_s"] / 20).round()
    pred = CountingPredictor(truth)
    policy = get_policy("easy-min-energy", predictor=pred, min_runs=1)
    res = run(policy, jobs, truth)
    # re-predictions happened (more decisions than jobs) after refits of queued jobs' apps
    assert policy.chooser.stats["decisions"] > len(jobs)
    assert (res.jobs["status"] == "completed").all()


def test_oracle_twin_regret_and_static_predictor_does_not_learn():
    jobs, truth = scenario_trace(40, 16)
    oracle = get_policy("easy-min-energy-slack", predictor="oracle", job_length="requested")
    r_or = run(oracle, jobs, truth)
    assert oracle.learns is False  # nothing to learn: the engine measures nothing
    # (with the default job lengths the policy learns them from the finished jobs)
    learning = get_policy("easy-min-energy-slack", predictor="oracle")
    run(learning, jobs, truth)
    assert learning.learns is True
    r_pred = run(get_policy("easy-min-energy-slack", predictor="amdahl+fluid"), jobs, truth)
    reg = regret(r_pred, r_or)
    assert set(reg) >= {"energy_regret", "makespan_regret", "busy_energy_regret"}
    assert math.isfinite(reg["energy_regret"])
    assert regret(r_or, r_or)["energy_regret"] == 0.0


def test_oracle_without_truth_is_a_config_error():
    with pytest.raises(ConfigError, match="ground truth"):
        run(get_policy("easy-min-energy", predictor="oracle"), one_job_trace(2))


def test_calibration_run_at_lowest_frequency():
    jobs, truth = scenario_trace(60, 16, seed=1)
    res = run(get_policy("easy-energy-freq", predictor="amdahl+fluid", min_runs=1), jobs, truth)
    j = res.jobs
    assert (j["freq_ghz"] == 1.2).any()
    assert j["freq_ghz"].nunique() >= 2


# --------------------------------------------------------------------------- registry, checks


def test_registry_lists_builtins_with_params():
    rows = {r["name"]: r for r in list_policies()}
    for name in (
        "fcfs",
        "easy",
        "conservative",
        "easy-min-energy",
        "easy-min-energy-slack",
        "easy-energy-freq",
        "easy-min-edp",
        "easy-efficiency",
        "easy-load-adaptive",
        "easy-pareto-deadline",
        "easy-pareto-budget",
    ):
        assert name in rows
        assert "predictor" in rows[name]["params"]
    # issue 14: auto+fluid validates better
    assert rows["easy-min-energy"]["params"]["predictor"] == "auto+fluid"
    # each lists the rule parameters its rules read, and only those
    assert rows["easy-min-energy-slack"]["params"]["slack"] == 0.1
    assert "slack" not in rows["easy-min-energy"]["params"]
    assert "sizes" not in rows["easy"]["params"] and "min_runs" in rows["easy"]["params"]


#: a value other than the default for every rule parameter of the built-ins
_OTHER_RULE_VALUES = {
    "sizes": "pow2",
    "size_range": 3.0,
    "cores": "pow2",
    "slack": 0.5,
    "efficiency": 0.9,
    "deadline_factor": 2.0,
    "budget_factor": 2.0,
    "min_runs": 1,
    "require_reliable": True,
    "safety_factor": 1.5,
    "explore_runs": 0,
    "refit_growth": 0.0,
}


@pytest.mark.parametrize("name", [row[0] for row in factories._TABLE])
def test_a_builtin_refuses_just_the_rule_parameters_that_change_nothing(name: str) -> None:
    assert set(_OTHER_RULE_VALUES) == set(factories._RULE_PARAMS)
    _, _, default_predictor, fixed = next(r for r in factories._TABLE if r[0] == name)
    accepted = set(inspect.signature(factories.BUILTIN_FACTORIES[name]).parameters)
    refused = sorted(set(factories._RULE_PARAMS) - accepted)
    for key in refused:
        with pytest.raises(ConfigError, match=re.escape(f"{key} changes nothing under {name}'s")):
            get_policy(name, **{key: _OTHER_RULE_VALUES[key]})
    # refused because inert: the same rules given the value through build_policy
    # (which takes every rule parameter) replay the same schedule, with a predictor
    predictor = default_predictor or "amdahl+fluid"
    rules = {k: v for k, v in fixed.items() if k in ("size", "freq", "joint", "backfill")}
    jobs, truth = scenario_trace(40, 16, seed=3)

    def schedule(**params):
        policy = factories.build_policy(name=name, predictor=predictor, **rules, **params)
        return run(policy, jobs, truth).jobs[["start_s", "nodes", "freq_ghz"]]

    reference = schedule()
    for key in refused:
        pd.testing.assert_frame_equal(schedule(**{key: _OTHER_RULE_VALUES[key]}), reference)
    if default_predictor is None:  # rigid: without a predictor no rule parameter acts
        used = sorted(accepted & set(factories._RULE_PARAMS))
        assert used
        with pytest.raises(ConfigError, match="only with a predictor"):
            get_policy(name, **{used[0]: _OTHER_RULE_VALUES[used[0]]})
        get_policy(name, predictor="amdahl+fluid", **{used[0]: _OTHER_RULE_VALUES[used[0]]})


def test_a_service_aware_policy_refuses_sizes_unless_moldable() -> None:
    from policies.service import ServiceAwareChooser

    with pytest.raises(ConfigError, match="sizes applies to moldable = true only"):
        get_policy("easy-energy-bsld", sizes="pow2")
    with pytest.raises(ConfigError, match=re.escape("slack changes nothing under easy-util")):
        get_policy("easy-util-freq", slack=0.2)
    with pytest.raises(ConfigError, match="size_range applies to sizes = 'range' only"):
        get_policy("easy-energy-bsld-off", size_range=3)
    assert get_policy("easy-energy-bsld-off", sizes="pow2").chooser.sizes == "pow2"
    moved = get_policy("easy-energy-bsld", moldable=True, sizes="range", size_range=3)
    assert moved.chooser.size_range == 3.0
    # refused because inert: not moldable, the candidate sizes change nothing
    jobs, truth = scenario_trace(40, 16, seed=3)

    def schedule(**params):
        chooser = ServiceAwareChooser("amdahl+fluid", queue_threshold=4, **params)
        policy = QueuePolicy(backfill="easy", chooser=chooser)
        return run(policy, jobs, truth).jobs[["start_s", "nodes", "freq_ghz"]]

    pd.testing.assert_frame_equal(schedule(sizes="pow2"), schedule())


def test_size_range_is_refused_unless_sizes_is_range() -> None:
    with pytest.raises(ConfigError, match="size_range applies to sizes = 'range' only"):
        get_policy("easy-min-energy", size_range=3)
    assert get_policy("easy-min-energy", sizes="range", size_range="3").chooser.size_range == 3.0
    assert get_policy("easy-pareto-deadline", size_range=3).chooser.size_range == 3.0


def test_registry_errors_and_coercion():
    with pytest.raises(ConfigError, match="unknown policy"):
        get_policy("nope")
    with pytest.raises(ConfigError):
        get_policy("easy-min-energy", bogus=1)
    with pytest.raises(ConfigError):
        get_policy("easy-min-energy-slack", slack="lots")
    p = get_policy("easy-min-energy-slack", slack="0.25", min_runs="2", require_reliable="true")
    assert p.chooser.slack == 0.25 and p.chooser.min_runs == 2 and p.chooser.require_reliable
    json.dumps(p.params())
    with pytest.raises(ConfigError):
        PredictiveChooser(size="biggest")


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("easy", {}),
        ("fcfs", {}),
        ("conservative", {}),
        ("easy-min-energy-slack", {"predictor": "amdahl+fluid"}),
        ("easy-energy-size-freq", {"predictor": "oracle"}),
        ("easy-load-adaptive", {"predictor": "oracle"}),
        ("easy-pareto-budget", {"predictor": "oracle", "backfill": "conservative"}),
    ],
)
def test_check_policy_builtins(name, params):
    failures = check_policy(name, params=params)
    assert all(not v for v in failures.values())


def test_check_policy_reports_a_bad_policy():
    from policies.base import Decision, Policy

    class Greedy(Policy):
        name = "greedy"

        def schedule(self, view):
            return [Decision(j, j.requested_nodes + 100, 2.4) for j in view.queue[:1]]

    with pytest.raises(AssertionError, match="runs"):
        check_policy(Greedy)

    class Lazy(Policy):
        name = "lazy"

        def schedule(self, view):
            return []

    failures = check_policy(Lazy, raise_on_failure=False)
    assert any("not_stuck" in m for m in failures["basic"])


def test_check_policy_catches_a_chooser_whose_node_counts_lie():
    from policies.base import Decision
    from policies.choosers import RigidChooser

    class Overstating(RigidChooser):
        """Its cached decisions claim twice the nodes choose() gives: EASY skips jobs
        that would fit (and on one partition starts the oversized decisions)."""

        def decisions(self, jobs):
            return [
                Decision(
                    j, 2 * j.requested_nodes, d.freq_ghz, d.node_type, None, d.planned_runtime_s
                )
                for j, d in zip(jobs, super().decisions(jobs))
            ]

    failures = check_policy(
        lambda: QueuePolicy(backfill="easy", chooser=Overstating(), name="overstating"),
        raise_on_failure=False,
    )
    assert any(m.startswith("chooser_hooks") for m in failures["basic"]), failures
    honest = check_policy(
        lambda: QueuePolicy(backfill="easy", chooser=RigidChooser(), name="rigid-easy"),
        raise_on_failure=False,
    )
    assert not any(honest.values())


@pytest.mark.parametrize("base", ["rigid", "predictive"])
def test_a_chooser_subclass_that_overrides_choose_is_asked(base):
    """The cached-decision fast paths (Chooser.decisions) are off for a subclass that
    overrides choose(): its own decisions are the ones started."""
    from policies.base import Decision
    from policies.choosers import PredictiveChooser, RigidChooser

    parent = RigidChooser if base == "rigid" else PredictiveChooser

    class OneNode(parent):  # type: ignore[valid-type, misc]
        def choose(self, job, view):  # asks the view, like a load-aware rule would
            d = super().choose(job, view)
            n = 1 if view.free_nodes[d.node_type] > 0 else d.nodes
            return Decision(job, n, d.freq_ghz, d.node_type, None, d.planned_runtime_s)

    chooser = OneNode() if base == "rigid" else OneNode(predictor="amdahl+fluid")
    jobs, truth = scenario_trace(60, 16)
    res = run(QueuePolicy(backfill="easy", chooser=chooser), jobs, truth)
    assert (res.jobs["nodes"] == 1).all()
    assert (res.jobs["requested_nodes"] > 1).any()  # the parent would have chosen otherwise


def test_plugin_policy_and_predictor_through_the_cli(tmp_path):
    from energysched.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = CliRunner().invoke(
            main,
            [
                "run",
                "--trace",
                "builtin:kth-sp2",
                "--platform",
                "trace",
                "--policy",
                "tests.policies.plugin_mod:MyPolicy",
                "--predictor",
                "tests.policies.plugin_mod:MyPredictor",
                "--param",
                "key=value",
                "--max-jobs",
                "150",
                "--out",
                str(tmp_path / "out"),
            ],
        )
    assert result.exit_code == 0, result.output + repr(result.exception)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    text = json.dumps(summary)
    assert "my-policy" in text and "value" in text


def test_policies_list_cli():
    from energysched.cli import main

    result = CliRunner().invoke(main, ["policies", "list"])
    assert result.exit_code == 0
    assert "easy-min-energy-slack" in result.output and "slack=0.1" in result.output


def test_queue_policy_rejects_bad_parameters():
    with pytest.raises(ConfigError):
        QueuePolicy(backfill="aggressive")
    with pytest.raises(ConfigError):
        QueuePolicy(power_cap_w=-1)


def test_a_predictor_that_learns_nothing_is_static() -> None:
    """Static (no runs awaited before moldable decisions, no calibration runs): what
    a predictor declares (``learns_from_runs = False`` or ``static = True``), built-in
    or not; a composite is static when both its parts are."""
    from policies.choosers import predictor_is_static
    from predictors.baselines import AmdahlPredictor, RequestedPredictor
    from predictors.composite import CompositePredictor
    from predictors.dvfs import FluidPredictor

    class Tabulated(Predictor):  # a plug-in that reads a fixed table
        learns_from_runs = False

    class Declared(Predictor):
        static = True

    for predictor in (OraclePredictor(), RequestedPredictor(), Tabulated(), Declared()):
        assert predictor_is_static(predictor), predictor
    assert predictor_is_static(CompositePredictor(RequestedPredictor(), RequestedPredictor()))
    assert not predictor_is_static(CompositePredictor(AmdahlPredictor(), FluidPredictor()))
    assert not predictor_is_static(CompositePredictor(RequestedPredictor(), FluidPredictor()))
    assert not predictor_is_static(AmdahlPredictor())
