"""ReleaseOrder (the engine's running jobs in release order) against the plain
re-plan-and-sort of every running job, and its use by the engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from policies.backfilling import reservation
from policies.base import QueuedJob, ReleaseOrder, RunningJob, release_s
from policies.registry import get_policy
from simulator.engine import simulate
from simulator.platform import homogeneous_platform
from tests.policies.replay_helpers import reservation_by_sorting


def _running(planned_end, limit_end, nodes):
    job = QueuedJob(0, 0, 0.0, nodes, nodes, 1.0, 1.0, 0, 0)
    return RunningJob(job, 0, nodes, 1, 2.4, 0.0, planned_end, limit_end)


def test_release_order_moves_each_job_once_and_keeps_the_release_order():
    order = ReleaseOrder()
    a = _running(10.0, 50.0, 2)  # overdue from 10, past its limit from 50
    b = _running(20.0, None, 1)  # no limit: past both from 20
    c = _running(30.0, 40.0, 4)
    for r in (c, a, b):
        order.add(r)
    assert order.jobs == [a, b, c]  # by planned end
    order.advance(25.0)
    assert order.moved == 2
    assert [e[-1] for e in order.overdue] == [a]
    assert [e[-1] for e in order.expired] == [b]
    # releases at 25: b now, then a at its limit 50, c at its plan 30 -> b, c, a
    assert reservation(order.jobs, [], 0, 1, 25.0, order) == (25.0, 0)
    assert reservation(order.jobs, [], 0, 5, 25.0, order) == (30.0, 0)
    assert reservation(order.jobs, [], 0, 7, 25.0, order) == (50.0, 0)
    order.advance(45.0)  # c overdue (limit 40 passed too), a still before its limit
    assert [e[-1] for e in order.expired] == [b, c]  # in the order of ``jobs``
    assert [e[-1] for e in order.overdue] == [a]
    order.remove(b)
    order.remove(a)
    assert order.jobs == [c] and order.moved == 1 and not order.overdue
    assert reservation(order.jobs, [(60.0, 3)], 0, 5, 45.0, order) == (60.0, 2)


def test_reservation_from_a_release_order_equals_sorting_every_release():
    """Random starts, ends and clock steps with integer times (many ties): at every
    step the reservation read from the ReleaseOrder is the plain one."""
    rng = np.random.default_rng(11)
    checked = ties = 0
    for _ in range(300):
        order = ReleaseOrder()
        now = 0.0
        for _ in range(40):
            step = rng.random()
            if step < 0.4:  # a job starts
                planned = now + float(rng.integers(1, 15))
                limit = None if rng.random() < 0.2 else planned + float(rng.integers(0, 12))
                order.add(_running(planned, limit, int(rng.integers(1, 5))))
            elif step < 0.6 and order.jobs:  # a job ends
                order.remove(order.jobs[int(rng.integers(len(order.jobs)))])
            else:  # time passes
                now += float(rng.integers(0, 6))
                order.advance(now)
            order.advance(now)
            running = list(order.jobs)
            assert running == sorted(running, key=lambda r: r.expected_end_s)
            assert order.moved == sum(r.expected_end_s <= now for r in running)
            started = [
                (now + float(rng.integers(0, 10)), int(rng.integers(1, 5)))
                for _ in range(int(rng.integers(0, 4)))
            ]
            free_now = int(rng.integers(0, 4))
            needed = int(rng.integers(1, 25))
            want = reservation_by_sorting(running, started, free_now, needed, now)
            assert reservation(running, started, free_now, needed, now, order) == want
            assert reservation(running, started, free_now, needed, now) == want
            ends = [release_s(r, now) for r in running] + [e for e, _ in started]
            ties += len(ends) != len(set(ends))
            checked += 1
    assert ties > checked // 4


def test_walk_without_started_jobs_ends_where_sorting_every_release_does():
    """The usual walk (no job started in the batch): random orders with many
    overdue jobs and equal times, every ``needed`` from 1 to past the last release;
    the walk must end where the plain sorted walk does, at an overdue job's limit,
    at a planned end, at the overdue jobs left after the last planned end, or never."""
    rng = np.random.default_rng(5)
    ended_at = {"overdue": 0, "on plan": 0, "after every plan": 0, "never": 0}
    for _ in range(200):
        order = ReleaseOrder()
        now = 0.0
        for _ in range(int(rng.integers(1, 30))):
            planned = now + float(rng.integers(1, 8))
            limit = planned + float(rng.integers(0, 20))
            order.add(_running(planned, limit, int(rng.integers(1, 4))))
            now += float(rng.integers(0, 3))
            order.advance(now)
        running = list(order.jobs)
        last_plan = max((r.expected_end_s for r in order.jobs[order.moved :]), default=-1.0)
        total = sum(r.nodes for r in running)
        for needed in range(1, total + 2):
            want = reservation_by_sorting(running, [], 0, needed, now)
            assert reservation(running, [], 0, needed, now, order) == want
            shadow = want[0]
            if shadow == np.inf:
                ended_at["never"] += 1
            elif shadow > last_plan:
                ended_at["after every plan"] += 1
            elif any(e[0] == shadow for e in order.overdue):
                ended_at["overdue"] += 1
            else:
                ended_at["on plan"] += 1
    assert min(ended_at.values()) > 20, ended_at


def test_a_stale_release_order_is_not_read():
    order = ReleaseOrder()
    r = _running(10.0, 100.0, 3)
    order.add(r)
    order.advance(5.0)
    # at 20 the job is overdue (releases at its limit); the order, still at 5, is
    # not current: reservation re-plans the running jobs itself
    assert reservation(order.jobs, [], 0, 3, 20.0, order) == (100.0, 0)


@pytest.mark.parametrize("policy", ["easy", "easy-slack-size-freq"])
def test_engine_views_keep_the_release_order_current(policy):
    """Every view the engine hands a policy holds a ReleaseOrder per node type whose
    jobs are the running ones and whose moves match the view's time."""
    rng = np.random.default_rng(3)
    n = 300
    runtime = rng.integers(10, 2000, n).astype(float)
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_s": np.sort(rng.integers(0, 20000, n)).astype(float),
            "runtime_s": runtime,
            "procs": rng.integers(1, 9, n),
            "time_req_s": runtime * rng.uniform(1.0, 4.0, n),
            "user_id": rng.integers(1, 5, n),
        }
    )
    seen = []
    inner = get_policy(policy, predictor="requested") if policy != "easy" else get_policy(policy)
    schedule = inner.schedule

    def checking(view):
        (order,) = view.releases
        assert order.jobs is view.running[0]
        assert order.now_s == view.now_s
        assert order.moved == sum(r.expected_end_s <= view.now_s for r in order.jobs)
        moved = {id(e[-1]) for e in order.overdue + order.expired}
        assert moved == {id(r) for r in order.jobs[: order.moved]}
        seen.append(order.moved)
        return schedule(view)

    inner.schedule = checking
    simulate(jobs, homogeneous_platform(16), inner)
    assert len(seen) > 100
