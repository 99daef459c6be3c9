"""Engine: hand-worked energy, known schedules, and invariants on random workloads."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from energysched.errors import ConfigError, PolicyError
from policies.backfilling import easy_policy, fcfs_policy
from policies.base import Decision, Policy
from simulator.config import RunConfig
from simulator.engine import simulate
from simulator.platform import NodeType, Platform, PState


def jobs_frame(rows: list[tuple[float, int, float, float]]) -> pd.DataFrame:
    """(submit_s, procs, runtime_s, time_req_s) rows -> a minimal jobs table."""
    return pd.DataFrame(
        {
            "job_id": np.arange(1, len(rows) + 1),
            "submit_s": [r[0] for r in rows],
            "procs": [r[1] for r in rows],
            "runtime_s": [r[2] for r in rows],
            "time_req_s": [r[3] for r in rows],
            "user_id": 1,
        }
    )


def small_platform(nodes: int = 2, **kw: float) -> Platform:
    ntype = NodeType(
        name="n",
        count=nodes,
        cores_per_node=1,
        pstates=(PState(1.0, 80.0, 150.0), PState(2.0, 100.0, 200.0)),
        off_power_w=kw.get("off_power_w", 10.0),
        boot_time_s=kw.get("boot_time_s", 10.0),
        boot_energy_j=kw.get("boot_energy_j", 1000.0),
        shutdown_time_s=kw.get("shutdown_time_s", 5.0),
        shutdown_energy_j=kw.get("shutdown_energy_j", 250.0),
    )
    return Platform(name="small", node_types=(ntype,))


def test_energy_hand_worked_switch_off_and_boot() -> None:
    """Two nodes, three jobs, idle timeout 20 s: every joule accounted by hand.

    Idle power is the lowest P-state's idle power: 80 W.
    t=0    J1 (100 s) on A, J2 (30 s) on B                      busy 2 x 200 W
    t=30   J2 ends, B idle                                      busy 200, idle 80
    t=50   B idle 20 s -> shutting down until 55 (50 W)
    t=55   B off (10 W)
    t=100  J1 ends, A idle; t=120 A shutting; t=125 A off
    t=200  J3 (2 nodes, 50 s) submitted; both nodes boot 10 s (100 W each)
    t=210  J3 runs on 2 nodes until 260
    busy      = 200*100 + 200*30 + 2*200*50           = 46000 J
    idle      = 80*(50-30) + 80*(120-100)               =  3200 J
    switching = 2 shutdowns * 250 J + 2 boots * 1000 J  =  2500 J
    off       = 10*(200-55) + 10*(200-125)              =  2200 J
    total                                               = 53900 J
    """
    trace = jobs_frame([(0, 1, 100, 1000), (0, 1, 30, 1000), (200, 2, 50, 1000)])
    result = simulate(trace, small_platform(), easy_policy(), RunConfig(idle_timeout_s=20.0))
    s = result.summary
    assert s["energy_busy_j"] == pytest.approx(46000.0)
    assert s["energy_idle_j"] == pytest.approx(3200.0)
    assert s["energy_switching_j"] == pytest.approx(2500.0)
    assert s["energy_off_j"] == pytest.approx(2200.0)
    assert s["energy_j"] == pytest.approx(53900.0)
    assert s["makespan_s"] == pytest.approx(260.0)
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc[3, "start_s"] == pytest.approx(210.0)
    assert jobs.loc[3, "wait_s"] == pytest.approx(10.0)
    assert jobs["energy_j"].tolist() == pytest.approx([20000.0, 6000.0, 20000.0])
    assert result.energy_from_timeline_j() == pytest.approx(53900.0)


def test_no_power_management_idle_energy() -> None:
    """Without switch-off: idle = 80 W x idle node-seconds over [0, 100]."""
    trace = jobs_frame([(0, 1, 100, 1000), (0, 1, 30, 1000)])
    s = simulate(trace, small_platform(), easy_policy()).summary
    assert s["energy_busy_j"] == pytest.approx(200 * 130)
    assert s["energy_idle_j"] == pytest.approx(80 * 70)
    assert s["energy_off_j"] == 0 and s["energy_switching_j"] == 0
    # utilisation = 130 node-s / (2 nodes * 100 s)
    assert s["utilisation"] == pytest.approx(0.65)


def test_reserve_nodes_stay_on() -> None:
    trace = jobs_frame([(0, 1, 100, 1000), (0, 1, 30, 1000)])
    s = simulate(
        trace, small_platform(), easy_policy(), RunConfig(idle_timeout_s=20.0, reserve_nodes=1)
    ).summary
    # B idles from 30; it is the reserve (1 idle node kept on), so it never switches off.
    assert s["energy_switching_j"] == 0
    assert s["energy_idle_j"] == pytest.approx(80 * 70)


def test_kill_at_walltime_and_let_run() -> None:
    trace = jobs_frame([(0, 1, 100, 60)])
    killed = simulate(trace, small_platform(), easy_policy(), RunConfig(overrun="kill")).jobs.iloc[
        0
    ]
    assert killed["status"] == "killed"
    assert killed["runtime_s"] == pytest.approx(60.0)
    assert killed["energy_j"] == pytest.approx(200 * 60)
    grace = simulate(
        trace, small_platform(), easy_policy(), RunConfig(overrun="kill", kill_grace_s=15)
    ).jobs.iloc[0]
    assert grace["runtime_s"] == pytest.approx(75.0)
    ran = simulate(trace, small_platform(), easy_policy(), RunConfig(overrun="let-run")).jobs.iloc[
        0
    ]
    assert ran["status"] == "completed"
    assert ran["runtime_s"] == pytest.approx(100.0)


def test_missing_requested_time_is_never_killed() -> None:
    trace = jobs_frame([(0, 1, 100, float("nan"))])
    job = simulate(trace, small_platform(), easy_policy()).jobs.iloc[0]
    assert job["status"] == "completed" and job["runtime_s"] == 100


def test_too_large_job_rejected_with_reason() -> None:
    trace = jobs_frame([(0, 3, 10, 100), (0, 1, 10, 100)])
    result = simulate(trace, small_platform(), easy_policy())
    rejected = result.jobs[result.jobs["status"] == "rejected"]
    assert rejected["job_id"].tolist() == [1]
    assert "more than any node type" in rejected["reason"].iloc[0]
    assert result.summary["jobs_rejected"] == 1
    assert result.summary["jobs_completed"] == 1


# Known schedules: 4 nodes.
#   J1 submit 0, 2 nodes, 100 s         -> starts 0
#   J2 submit 1, 4 nodes, 50 s          -> head; reservation at t=100 (shadow), extra 0
#   J3 submit 2, 2 nodes, 150 s         -> fits now but 2+150 > 100 and 2 > extra: must NOT backfill
#   J4 submit 3, 1 node, 90 s           -> 3+90 = 93 <= 100: backfills at 3 under EASY
KNOWN = [(0, 2, 100, 100), (1, 4, 50, 50), (2, 2, 150, 150), (3, 1, 90, 90)]


def starts(result) -> dict[int, float]:  # type: ignore[no-untyped-def]
    return dict(zip(result.jobs["job_id"], result.jobs["start_s"], strict=True))


def test_easy_known_schedule() -> None:
    result = simulate(jobs_frame(KNOWN), small_platform(4), easy_policy())
    assert starts(result) == {1: 0.0, 2: 100.0, 3: 150.0, 4: 3.0}


def test_fcfs_known_schedule() -> None:
    result = simulate(jobs_frame(KNOWN), small_platform(4), fcfs_policy())
    assert starts(result) == {1: 0.0, 2: 100.0, 3: 150.0, 4: 150.0}


def test_easy_extra_nodes_rule() -> None:
    """A long job may backfill on the extra nodes the head will not need.

    4 nodes. J1: 3 nodes 100 s. J2 (head): 2 nodes -> shadow 100, extra = 1 + 3 - 2 = 2.
    J3: 1 node, 500 s: ends after the shadow but 1 <= extra -> backfills at t=2.
    J2 then starts at 100 on 2 of the 3 freed nodes, exactly as reserved.
    """
    rows = [(0, 3, 100, 100), (1, 2, 50, 50), (2, 1, 500, 500)]
    result = simulate(jobs_frame(rows), small_platform(4), easy_policy())
    assert starts(result) == {1: 0.0, 2: 100.0, 3: 2.0}


def test_easy_equal_shadow_backfills() -> None:
    """A candidate ending exactly at the shadow time may backfill (<=)."""
    rows = [(0, 2, 100, 100), (0, 4, 50, 50), (0, 2, 100, 100)]
    result = simulate(jobs_frame(rows), small_platform(4), easy_policy())
    assert starts(result) == {1: 0.0, 2: 100.0, 3: 0.0}


class OverAllocating(Policy):
    """Gives every queued job all the free nodes: the second decision overdraws."""

    name = "bad"

    def schedule(self, view):  # type: ignore[no-untyped-def]
        return [Decision(j, view.free_nodes[0], 2.0) for j in view.queue]


class TooLarge(Policy):
    name = "too-large"

    def schedule(self, view):  # type: ignore[no-untyped-def]
        return [Decision(j, 3, 2.0) for j in view.queue[:1]]


class WrongFrequency(Policy):
    name = "bad-freq"

    def schedule(self, view):  # type: ignore[no-untyped-def]
        return [Decision(j, 1, 1.7) for j in view.queue[:1]]


def test_policy_errors_name_job_and_limit() -> None:
    trace = jobs_frame([(0, 1, 10, 100)])
    with pytest.raises(PolicyError, match=r"job 2: free_nodes: 2 nodes requested but only 0 free"):
        simulate(jobs_frame([(0, 1, 10, 100), (0, 1, 10, 100)]), small_platform(), OverAllocating())
    with pytest.raises(PolicyError, match=r"job 1: nodes: 3 nodes exceed the 2 nodes"):
        simulate(trace, small_platform(), TooLarge())
    with pytest.raises(PolicyError, match=r"job 1: freq_ghz: 1.7 GHz is not a P-state"):
        simulate(trace, small_platform(), WrongFrequency())


class LowFrequency(Policy):
    """Starts everything at 1 GHz on the requested nodes."""

    name = "low"

    def schedule(self, view):  # type: ignore[no-untyped-def]
        out, free = [], view.free_nodes[0]
        for j in view.queue:
            if j.requested_nodes <= free:
                out.append(Decision(j, j.requested_nodes, 1.0))
                free -= j.requested_nodes
        return out


def test_without_truth_frequency_scales_runtime_and_power() -> None:
    """No ground truth: runtime x Fmax/f (2.0/1.0 = 2), power = busy power of the P-state (150 W)."""
    trace = jobs_frame([(0, 1, 100, 1000)])
    job = simulate(trace, small_platform(), LowFrequency()).jobs.iloc[0]
    assert job["runtime_s"] == pytest.approx(200.0)
    assert job["power_w"] == pytest.approx(150.0)
    assert job["energy_j"] == pytest.approx(150.0 * 200.0)


class Idle(Policy):
    name = "idle"

    def schedule(self, view):  # type: ignore[no-untyped-def]
        return []


def test_policy_that_never_starts_jobs_gets_them_rejected() -> None:
    result = simulate(jobs_frame([(0, 1, 10, 100), (5, 1, 10, 100)]), small_platform(), Idle())
    assert (result.jobs["status"] == "rejected").all()
    assert result.jobs["reason"].str.contains("never started").all()


def test_run_config_validation_names_key() -> None:
    with pytest.raises(ConfigError, match="overrun"):
        RunConfig(overrun="explode")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="idle_timeout_s"):
        RunConfig(idle_timeout_s=-1)


def _max_concurrent_nodes(jobs: pd.DataFrame) -> int:
    ran = jobs[jobs["status"].isin(["completed", "killed"])]
    events = sorted(
        [(s, n) for s, n in zip(ran["start_s"], ran["nodes"], strict=True)]
        + [(e, -n) for e, n in zip(ran["end_s"], ran["nodes"], strict=True)],
        key=lambda x: (x[0], x[1]),
    )
    used = peak = 0
    for _, delta in events:
        used += delta
        peak = max(peak, used)
    return peak


workloads = st.lists(
    st.tuples(
        st.integers(0, 500).map(float),  # submit
        st.integers(1, 6),  # procs (platform has 4 nodes: >4 gets rejected)
        st.integers(0, 300).map(float),  # runtime (0 allowed)
        st.one_of(st.just(float("nan")), st.integers(1, 400).map(float)),  # requested time
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=workloads,
    policy_name=st.sampled_from(["easy", "fcfs"]),
    timeout=st.one_of(st.none(), st.integers(0, 100).map(float)),
    reserve=st.integers(0, 2),
    overrun=st.sampled_from(["kill", "let-run"]),
)
def test_invariants_on_random_workloads(rows, policy_name, timeout, reserve, overrun) -> None:  # type: ignore[no-untyped-def]
    policy = easy_policy() if policy_name == "easy" else fcfs_policy()
    result = simulate(
        jobs_frame(rows),
        small_platform(4),
        policy,
        RunConfig(idle_timeout_s=timeout, reserve_nodes=reserve, overrun=overrun),  # type: ignore[arg-type]
    )
    jobs, s = result.jobs, result.summary
    # every submitted job ends exactly once
    assert len(jobs) == len(rows)
    assert set(jobs["status"]) <= {"completed", "killed", "rejected"}
    assert s["jobs_completed"] + s["jobs_killed"] + s["jobs_rejected"] == len(rows)
    assert (jobs.loc[jobs["status"] == "rejected", "reason"].notna()).all()
    # rejected exactly those larger than the machine
    assert set(jobs.loc[jobs["status"] == "rejected", "job_id"]) == {
        i + 1 for i, r in enumerate(rows) if r[1] > 4
    }
    ran = jobs[jobs["status"] != "rejected"]
    assert (ran["start_s"] >= ran["submit_s"]).all()
    assert (ran["end_s"] >= ran["start_s"]).all()
    # total energy = integral of the power timeline = sum of the categories
    assert result.energy_from_timeline_j() == pytest.approx(s["energy_j"], rel=1e-9, abs=1e-6)
    # busy energy = sum of per-job energies
    assert s["energy_busy_j"] == pytest.approx(ran["energy_j"].sum(), rel=1e-9, abs=1e-6)
    assert _max_concurrent_nodes(jobs) <= 4
    # power never negative, never above all nodes busy at the top P-state + boot power
    assert (result.power["power_w"] >= 0).all()
    if overrun == "kill":
        limited = ran[ran["requested_time_s"].notna()]
        assert (limited["runtime_s"] <= limited["requested_time_s"] + 1e-9).all()
    assert all(math.isfinite(v) for v in (s["mean_wait_s"], s["mean_bsld"], s["makespan_s"]))


def two_type_platform() -> Platform:
    fat = NodeType(name="fat", count=2, cores_per_node=4, pstates=(PState(2.0, 100.0, 300.0),))
    thin = NodeType(name="thin", count=4, cores_per_node=1, pstates=(PState(2.0, 50.0, 100.0),))
    return Platform(name="two", node_types=(fat, thin))


def test_two_node_types_are_independent_partitions() -> None:
    """Jobs go to the first node type with enough nodes: 8 procs -> 2 fat nodes,
    4 procs -> 1 fat node, 12 procs -> 3 fat nodes > 2 and 12 thin nodes > 4:
    rejected with a reason. J2 waits for fat nodes while the thin nodes idle:
    each node type is its own partition.
    """
    rows = [
        (0, 8, 100, 100),  # J1: 2 fat nodes
        (1, 4, 50, 50),  # J2: 1 fat node, waits for J1
        (2, 12, 10, 10),  # J3: too large for every type
    ]
    result = simulate(jobs_frame(rows), two_type_platform(), easy_policy())
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc[1, "node_type"] == "fat" and jobs.loc[1, "nodes"] == 2
    assert jobs.loc[2, "start_s"] == 100.0
    assert jobs.loc[3, "status"] == "rejected"
    # busy: 2 fat x 300 W x 100 s + 1 fat x 300 W x 50 s
    # idle: 4 thin x 50 W over [0, 150] + 1 fat x 100 W over [100, 150]
    s = result.summary
    assert s["energy_busy_j"] == pytest.approx(2 * 300 * 100 + 300 * 50)
    assert s["energy_idle_j"] == pytest.approx(4 * 50 * 150 + 100 * 50)
    assert result.energy_from_timeline_j() == pytest.approx(s["energy_j"])


def test_replay_freezes_the_collector_only_while_it_runs() -> None:
    """simulate() freezes pre-existing objects for the garbage collector and raises
    the young threshold during the replay, and undoes both after; what the replay
    kept alive ends in the oldest generation without a young collection walking it;
    a caller's own freeze (and its thresholds) are left alone."""
    import gc

    from simulator.engine import GC_YOUNG_THRESHOLD

    seen: list[tuple[int, int]] = []
    kept: list[list[int]] = []

    class Spy(Policy):
        name = "spy"

        def schedule(self, view):
            seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
            kept.append([len(seen)])  # a container made during the replay, kept after it
            return []  # the job is finally rejected as never started

    from simulator.platform import homogeneous_platform

    rows = [(0, 1, 10, 10)]
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    assert thresholds[0] < GC_YOUNG_THRESHOLD  # Python's default, else the test shows nothing
    simulate(jobs_frame(rows), homogeneous_platform(4), Spy())
    oldest = gc.get_objects(generation=2)
    assert seen and seen[0][0] > 0  # frozen during the replay
    assert seen[0][1] == GC_YOUNG_THRESHOLD
    assert gc.get_freeze_count() == 0  # and unfrozen after
    assert gc.get_threshold() == thresholds
    # made during the replay (no collection at this threshold), now in the oldest
    # generation: no young collection will walk it
    assert any(o is kept[0] for o in oldest)
    del oldest
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        seen.clear()
        simulate(jobs_frame(rows), homogeneous_platform(4), Spy())
        assert seen[0][1] == thresholds[0]
        # the caller's freeze is not undone (objects that died leave the count)
        assert before - 100 < gc.get_freeze_count() <= before
    finally:
        gc.unfreeze()


def test_blocks_of_records_and_timeline_rows_change_nothing(monkeypatch) -> None:
    """The engine makes QueuedJob records a block at a time and moves the power
    timeline into float64 blocks: blocks of 3 jobs and 2 rows give the same jobs
    table and timeline as blocks larger than the run (everything at once), with
    power management on (more timeline rows) and jobs sharing submit times
    across block edges; no record outlives its job."""
    import weakref

    import simulator.engine as engine
    from policies.base import QueuedJob

    rng = np.random.default_rng(7)
    n = 60
    submit = np.sort(rng.integers(0, 400, n)).astype(float)  # ties across block edges
    runtime = rng.integers(5, 120, n).astype(float)
    jobs = jobs_frame(
        [(s, int(p), r, r * 2) for s, p, r in zip(submit, rng.integers(1, 4, n), runtime)]
    )
    config = RunConfig(idle_timeout_s=30.0)

    def replay(job_block: int, timeline_block: int):
        monkeypatch.setattr(engine._JobFeed, "BLOCK", job_block)
        monkeypatch.setattr(engine, "TIMELINE_BLOCK_ROWS", timeline_block)
        return simulate(jobs, small_platform(4), easy_policy(), config)

    whole = replay(10**6, 10**6)
    blocked = replay(3, 2)
    pd.testing.assert_frame_equal(whole.jobs, blocked.jobs, check_exact=True)
    pd.testing.assert_frame_equal(whole.power, blocked.power, check_exact=True)
    assert len(whole.power) > 20
    assert whole.summary == blocked.summary

    made: list[weakref.ref] = []

    class Tracked(QueuedJob):
        __slots__ = ("__weakref__",)

        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    monkeypatch.setattr(engine, "QueuedJob", Tracked)
    policy = easy_policy()
    schedule = policy.schedule
    freed = []

    def counting(view):  # type: ignore[no-untyped-def]
        # alive: the queue, the running jobs, the rest of the current block of 3
        # and the jobs that ended in this batch (4 nodes: at most 4)
        alive = sum(ref() is not None for ref in made)
        assert alive <= len(view.queue) + len(view.running[0]) + 3 + 4
        freed.append(len(made) - alive)
        return schedule(view)

    policy.schedule = counting  # type: ignore[method-assign]
    monkeypatch.setattr(engine._JobFeed, "BLOCK", 3)
    result = simulate(jobs, small_platform(4), policy, config)
    assert len(made) == n and max(freed) > n // 2
    pd.testing.assert_frame_equal(whole.jobs, result.jobs, check_exact=True)
