"""Backfilling with job-length predictions (policies/backfilling.py, ``job_length``;
``easy++``): schedules worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from energysched.testing import SimpleTruth
from policies.registry import get_policy
from simulator.config import RunConfig
from simulator.engine import simulate
from simulator.platform import homogeneous_platform

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _trace(rows):
    """rows: (submit, user, nodes, runtime, request); and a truth that runs every
    job for exactly its runtime at its requested size and the top clock."""
    submit, user, procs, runtime, request = (list(c) for c in zip(*rows))
    n = len(rows)
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_s": np.asarray(submit, dtype=float),
            "runtime_s": np.asarray(runtime, dtype=float),
            "procs": procs,
            "time_req_s": np.asarray(request, dtype=float),
            "user_id": user,
        }
    )
    # Downey A = 1: S(n) = 1 at every n; alpha = 1: runtime = work at Fmax; no noise
    truth = SimpleTruth(np.arange(n), runtime, A=1.0, sigma=0.0, alpha=1.0)
    return jobs, truth


def _run(policy, rows, nodes=4):
    jobs, truth = _trace(rows)
    res = simulate(jobs, homogeneous_platform(nodes), get_policy(policy), RunConfig(), truth)
    return res.jobs.set_index("job_id")


# 4 nodes. Job 1 (user 1, 1 node, 100 s of 1000 s) gives user 1 a history of 100 s.
# Job 2 (user 1, 3 nodes, 100 s of 1000 s) starts at 150: EASY plans it to 1150,
# EASY++ to 250 (user 1's last runtime). Job 3 (user 2, 4 nodes, 100 s) is the head
# at 160: its shadow time is job 2's planned end (1150 / 250), no extra node.
# Job 4 (user 3, 1 node, 200 s, no history: its request) arrives at 170 and fits
# the free node: EASY backfills it (170 + 200 <= 1150), so job 3 waits for it
# until 370; EASY++ does not (370 > 250): job 3 starts at 250 when job 2 ends
# and job 4 after it, at 350.
DIFFER = [
    (0.0, 1, 1, 100.0, 1000.0),
    (150.0, 1, 3, 100.0, 1000.0),
    (160.0, 2, 4, 100.0, 100.0),
    (170.0, 3, 1, 200.0, 200.0),
]


def test_easy_and_easy_plus_plus_differ_by_hand():
    easy = _run("easy", DIFFER)
    assert easy["start_s"].to_dict() == {1: 0.0, 2: 150.0, 3: 370.0, 4: 170.0}
    plus = _run("easy++", DIFFER)
    assert plus["start_s"].to_dict() == {1: 0.0, 2: 150.0, 3: 250.0, 4: 350.0}
    # planned with the predictions (job 1: no history yet, its request) ...
    assert plus["planned_runtime_s"].to_dict() == {1: 1000.0, 2: 100.0, 3: 100.0, 4: 200.0}
    # ... but every job is still limited by its request
    assert plus["time_limit_s"].to_dict() == {1: 1000.0, 2: 1000.0, 3: 100.0, 4: 200.0}
    assert (plus["status"] == "completed").all()
    # a job length it planned with is the job's predicted runtime (its error is
    # reported like any predictor's); without history (jobs 1, 3, 4) and under plain
    # EASY nothing is predicted
    assert plus["predicted_runtime_s"].fillna(-1.0).to_dict() == {
        1: -1.0,
        2: 100.0,
        3: -1.0,
        4: -1.0,
    }
    assert easy["predicted_runtime_s"].isna().all()


def test_kill_limit_stays_the_request():
    # user 1's history: 100 s; job 2 is predicted 100 s but runs 500 s of its 1000 s
    # (completes: a prediction is not a limit); job 3 is predicted 100 s too, and
    # runs past its 1000 s request: killed at the request, not at the prediction
    rows = [
        (0.0, 1, 1, 100.0, 1000.0),
        (200.0, 1, 1, 500.0, 1000.0),
        (300.0, 1, 1, 5000.0, 1000.0),
    ]
    j = _run("easy++", rows)
    assert j["planned_runtime_s"].to_dict() == {1: 1000.0, 2: 100.0, 3: 100.0}
    assert j["status"].to_dict() == {1: "completed", 2: "completed", 3: "killed"}
    assert j.loc[2, "end_s"] - j.loc[2, "start_s"] == 500.0
    assert j.loc[3, "end_s"] - j.loc[3, "start_s"] == 1000.0


def test_reservation_raised_when_a_job_outlives_its_prediction():
    # job 2 (user 1, 3 nodes) is predicted 100 s (job 1's runtime) but runs 300 s:
    # planned to end at 250, still running at 300 when the head (job 3, 4 nodes)
    # arrives. Its estimate is raised to its limit (150 + 1000 = 1150): job 4
    # (1 node, 200 s) fits before that shadow time and is backfilled at 310. Left
    # in the past (ending "now"), the shadow time would be 310 and job 4 would wait.
    rows = [
        (0.0, 1, 1, 100.0, 1000.0),
        (150.0, 1, 3, 300.0, 1000.0),
        (300.0, 2, 4, 100.0, 100.0),
        (310.0, 3, 1, 200.0, 200.0),
    ]
    j = _run("easy++", rows)
    assert j.loc[2, "planned_runtime_s"] == 100.0
    assert j["start_s"].to_dict() == {1: 0.0, 2: 150.0, 3: 510.0, 4: 310.0}


def test_predictor_driven_choosers_scale_with_the_predicted_length():
    # the 'requested' predictor answers with the length it is given: the job-length
    # prediction (100 s for job 2) instead of the request
    jobs, truth = _trace(DIFFER)
    policy = get_policy("easy", predictor="requested", job_length="user-history")
    res = simulate(jobs, homogeneous_platform(4), policy, RunConfig(), truth)
    j = res.jobs.set_index("job_id")
    assert j.loc[2, "predicted_runtime_s"] == 100.0
    assert j.loc[2, "planned_runtime_s"] == 100.0
    assert j.loc[2, "time_limit_s"] == 1000.0


def test_without_a_ground_truth_nothing_is_learned(caplog):
    # the engine reports finished jobs only under a ground truth: no history, so
    # EASY++ plans with the requests (plain EASY), and says so
    jobs, _ = _trace(DIFFER)
    with caplog.at_level("WARNING", logger="policies.backfilling"):
        res = simulate(jobs, homogeneous_platform(4), get_policy("easy++"), RunConfig(), None)
    assert "ground truth" in caplog.text
    start = res.jobs.set_index("job_id")["start_s"].to_dict()
    assert start == {1: 0.0, 2: 150.0, 3: 370.0, 4: 170.0}


def test_defaults_per_policy():
    from policies.factories import DEFAULT_JOB_LENGTH
    from predictors.job_length import DEFAULT_JOB_LENGTH as PREDICTORS_DEFAULT

    assert DEFAULT_JOB_LENGTH == PREDICTORS_DEFAULT
    assert get_policy("easy").params().get("job_length") is None  # the requests
    assert get_policy("easy++").params()["job_length"] == "user-history"
    assert get_policy("easy-energy-freq").params()["job_length"] == DEFAULT_JOB_LENGTH
    assert get_policy("easy++", job_length="combined").params()["job_length"] == "combined"


def test_a_moved_jobs_runtime_reaches_the_history_by_the_predicted_ratio():
    """A job moved to 2 of its 4 requested nodes, predicted 1500 s there and 1000 s
    as requested, that ran 1800 s enters the job-length history as 1800 x 1000 /
    1500 = 1200 s at its requested configuration; without the two predictions, by
    perfect speedup and runtime ~ 1/f: 1800 x 2/4 x 1.2/2.4 = 450 s."""
    from policies.backfilling import _to_request_ratio
    from policies.base import Decision, QueuedJob

    job = QueuedJob(0, 1, 0.0, 4, 4, 1000.0, 1000.0, 0, 1)
    moved = Decision(job, 2, 2.4, predicted_runtime_s=1500.0, reference_runtime_s=1000.0)
    assert 1800.0 * _to_request_ratio(moved, 2.4) == pytest.approx(1200.0)
    blind = Decision(job, 2, 1.2)
    assert 1800.0 * _to_request_ratio(blind, 2.4) == pytest.approx(450.0)
