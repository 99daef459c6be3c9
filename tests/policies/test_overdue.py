"""policies.overdue.OverdueJobs answers exactly what the plain reservation() answers.

The running jobs of a partition evolve as in a replay (jobs start and finish,
time moves forward or stays, plans are often too short, time limits pass,
integer times make ties common), and at every step each reservation asked
through the incremental list of overdue jobs is compared with the plain
function's, which re-plans and sorts every running job.
"""

from __future__ import annotations

import math
import random
from bisect import insort

import pytest

from policies.backfilling import reservation
from policies.base import RunningJob
from policies.overdue import OverdueJobs


def _end(job: RunningJob) -> float:
    return job.expected_end_s


def _start(running: list[RunningJob], rng: random.Random, now: float) -> None:
    planned = rng.choice([0.0, 1.0, 2.0, 5.0, 5.0, 10.0, 30.0])
    limit = planned + rng.choice([0.0, 1.0, 3.0, 3.0, 20.0, math.inf])
    job = RunningJob(None, 0, rng.randint(1, 8), 1, 2.0, now, now + planned, now + limit)
    insort(running, job, key=_end)


@pytest.mark.parametrize("seed", range(12))
def test_same_reservations_as_the_plain_function_along_a_replay(seed: int) -> None:
    rng = random.Random(seed)
    overdue = OverdueJobs()
    running: list[RunningJob] = []
    now = 0.0
    checked = with_overdue = 0
    for _ in range(600):
        now += rng.choice([0.0, 0.0, 1.0, 1.0, 2.0, 7.0])
        for _ in range(rng.randint(0, 3)):
            _start(running, rng, now)
        for _ in range(rng.randint(0, 2)):
            if running:
                running.remove(running[rng.randrange(len(running))])
        for _ in range(rng.randint(0, 3)):
            started = [
                (now + rng.choice([0.0, 1.0, 2.0, 5.0, 10.0]), rng.randint(1, 8))
                for _ in range(rng.randint(0, 3))
            ]
            free = rng.randint(0, 4)
            needed = free + rng.randint(1, 40)
            want = reservation(running, started, free, needed, now)
            got = reservation(running, started, free, needed, now, overdue)
            assert got == want, (now, needed, free, started)
            checked += 1
            with_overdue += bool(running) and running[0].expected_end_s <= now
    assert checked > 500 and with_overdue > 100  # the incremental path was exercised


def test_a_job_past_its_time_limit_releases_now_and_ties_keep_list_order() -> None:
    # three jobs past their plan: two past their limit too (release now, tied: in
    # running-list order, 3 nodes then 4), one releasing at its limit (t = 50)
    a = RunningJob(None, 0, 3, 1, 2.0, 0.0, 10.0, 20.0)
    b = RunningJob(None, 0, 4, 1, 2.0, 0.0, 12.0, 15.0)
    c = RunningJob(None, 0, 5, 1, 2.0, 0.0, 14.0, 50.0)
    d = RunningJob(None, 0, 6, 1, 2.0, 0.0, 40.0, 60.0)  # not past its plan
    running = [a, b, c, d]
    overdue = OverdueJobs()
    # worked by hand: at t = 30, a and b release now in list order (3, then 7
    # nodes), then d at 40 (13), then c at its limit 50 (18)
    assert reservation(running, (), 0, 3, 30.0, overdue) == (30.0, 0)
    assert reservation(running, (), 0, 5, 30.0, overdue) == (30.0, 2)
    assert reservation(running, (), 0, 12, 30.0, overdue) == (40.0, 1)
    assert reservation(running, (), 0, 18, 30.0, overdue) == (50.0, 0)
    assert reservation(running, (), 0, 19, 30.0, overdue) == (math.inf, 0)
    # a job started in the batch and ending at 40 comes after d (tie: running first)
    assert reservation(running, [(40.0, 2)], 0, 14, 30.0, overdue) == (40.0, 1)
    # b finishes: it leaves the list
    running.remove(b)
    assert reservation(running, (), 0, 5, 31.0, overdue) == (40.0, 4)
