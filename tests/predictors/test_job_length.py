"""Job-length predictors (predictors/job_length.py): hand-computed predictions on a
tiny trace, and (slow) the accuracy figures on the four shared traces."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from energysched.errors import ConfigError
from predictors.job_length import (
    DEFAULT_JOB_LENGTH,
    JOB_LENGTH_PREDICTORS,
    UserHistoryLength,
    backtest,
    get_job_length_predictor,
    job_length_errors,
)

# job: submit, wait, runtime, request, user, application
#   0:   0,   0, 100, 1000, 1, 0    ends 100
#   1:  50,   0, 300, 1000, 1, 1    ends 350
#   2: 150,   0,  50, 1000, 1, 0    ends 200
#   3: 400,   0, 200,  150, 1, 1    ends 600
#   4: 400,  10,  80,  500, 2, 0    ends 490
#   5: 500,   0, 100,  100, 2, 2    ends 600
TINY = {
    "submit_s": [0, 50, 150, 400, 400, 500],
    "wait_s": [0, 0, 0, 0, 10, 0],
    "runtime_s": [100, 300, 50, 200, 80, 100],
    "requested_time_s": [1000, 1000, 1000, 150, 500, 100],
    "user_id": [1, 1, 1, 1, 2, 2],
    "application": [0, 1, 0, 1, 0, 2],
}


def test_user_history_by_hand() -> None:
    bt = backtest("user-history", **TINY)
    # 0, 1: user 1 has nothing finished (job 0 ends at 100 > 50): the request
    # 2: job 0 finished (100 s): 100
    # 3: jobs 0, 2, 1 finished (ends 100, 200, 350): last two 50 and 300 -> 175,
    #    capped at the request 150
    # 4: user 2 has nothing finished: the request 500
    # 5: job 4 finished at 490 (80 s): 80
    assert bt.predicted_s.tolist() == [1000, 1000, 100, 150, 500, 80]
    errors = [9.0, 1000 / 300 - 1, 1.0, 0.25, 5.25, 0.2]
    assert bt.errors == pytest.approx(errors)
    assert bt.median_pct == pytest.approx(100 * np.median(errors))
    assert bt.mean_pct == pytest.approx(100 * np.mean(errors))


def test_application_history_and_combined_by_hand() -> None:
    app = backtest("application-history", **TINY)
    # 2: app 0 has job 0 (100); 3: app 1 has job 1 (300), capped at 150;
    # 4: app 0 has jobs 0 and 2 (100, 50) -> 75; 5: app 2 has nothing: 100
    assert app.predicted_s.tolist() == [1000, 1000, 100, 150, 75, 100]
    both = backtest("combined", **TINY)
    # 5: no application history, user 2's job 4 (80 s)
    assert both.predicted_s.tolist() == [1000, 1000, 100, 150, 75, 80]
    req = backtest("requested", **TINY)
    assert req.predicted_s.tolist() == TINY["requested_time_s"]


def test_trace_order_variant_uses_unfinished_jobs() -> None:
    bt = backtest("user-history", finished_only=False, **TINY)
    # 1: job 0 (100) although it ends only at 100 > 50; 2: (100 + 300) / 2;
    # 3: (300 + 50) / 2 = 175 -> 150; 5: job 4 (80)
    assert bt.predicted_s.tolist() == [1000, 100, 200, 150, 500, 80]


def test_predictor_protocol() -> None:
    jl = UserHistoryLength()
    assert math.isnan(jl.predict(7, 0, 600.0))
    jl.observe(7, 0, 100.0)
    jl.observe(7, 0, 0.0)  # a run without a positive runtime is not history
    assert jl.predict(7, 0, 600.0) == 100.0
    jl.observe(7, 0, 300.0)
    jl.observe(7, 0, 500.0)
    assert jl.predict(7, 0, 600.0) == 400.0  # the last two
    assert jl.predict(7, 0, 250.0) == 250.0  # capped at the request
    assert jl.predict(7, 0, math.nan) == 400.0  # no request: not capped
    jl.reset()
    assert math.isnan(jl.predict(7, 0, 600.0))
    assert set(JOB_LENGTH_PREDICTORS) == {
        "requested",
        "user-history",
        "application-history",
        "combined",
    }
    assert DEFAULT_JOB_LENGTH in JOB_LENGTH_PREDICTORS
    assert get_job_length_predictor("predictors.job_length:CombinedLength").name == "combined"
    with pytest.raises(ConfigError, match="unknown job-length predictor 'psychic'"):
        get_job_length_predictor("psychic")


def _traces() -> Path:
    for base in Path(__file__).resolve().parents:
        root = base / "shared" / "data" / "traces"
        if root.is_dir():
            return root
    pytest.skip("shared traces not found")


# median errors (%): requests (the figures), user history predicted from
# finished jobs only, and user history in trace order (the 38/28/29/14)
FIGURES = {
    "KTH-SP2-1996-2.1-cln.swf.gz": (142, 49.6, 38),
    "SDSC-SP2-1998-4.2-cln.swf.gz": (538, 39.7, 28),
    "CTC-SP2-1996-3.1-cln.swf.gz": (270, 45.5, 29),
    "HPC2N-2002-2.2-cln.swf.gz": (111, 43.6, 14),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIGURES))
def test_shared_trace_figures(name: str) -> None:
    from workloads.swf import read_swf

    trace = read_swf(_traces() / name)
    requested, user, leaky = FIGURES[name]
    got = job_length_errors(trace)
    assert round(got["requested"][0]) == requested
    assert got["user-history"][0] == pytest.approx(user, abs=0.05)
    # combined is the default because it is the most accurate on every trace
    assert got["combined"][0] == min(v[0] for v in got.values())
    trace_order = job_length_errors(trace, ["user-history"], finished_only=False)
    assert round(trace_order["user-history"][0]) == leaky
