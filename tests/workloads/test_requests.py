"""Requested times of synthetic jobs: the Tsafrir, Etsion & Feitelson (JSSPP 2005) model.

Hand-worked numbers (the model's formulas evaluated independently of the
module), the invariants every draw must keep, the model against real logs
(the paper's validation: given a log's runtimes, maximal request and its
share, the accuracy looks like the log's), determinism, the configuration
switch, and the engine's flag for runs without requests.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from energysched.errors import ConfigError
from tests.shared_data import require_shared
from workloads.bundled import builtin_trace_path
from workloads.swf import read_swf
from workloads.synthetic import generate
from workloads.synthetic.tsafrir05 import (
    HEAD_SHARE,
    assign_requests,
    head_request_values,
    number_of_request_values,
    request_histogram,
    tsafrir05_requests,
)

H = 3600
M = 60


# ------------------------------------------------------------ hand-worked numbers


@pytest.mark.parametrize(
    ("n_jobs", "values"),
    [
        (20, 10),  # a point of the piecewise-linear model
        (100, 14),  # 10 + 80 * (20 - 10) / (200 - 20) = 14.44
        (4000, 53),  # 35 + 3000 * (90 - 35) / (10000 - 1000) = 53.33
        (40000, 215),  # 90 + 30000 * 250 / 60000 = 215
        (300000, 565),  # above the last point
    ],
)
def test_number_of_values_by_hand(n_jobs, values):
    assert number_of_request_values(n_jobs) == values


def test_head_values_for_18_hours_by_hand():
    # 18 h itself; the 14 joint values below it; then multiples of 5 h (15 h),
    # 2 h (16 h, 14 h) and 1 h (17 h, 13 h) complete the 20.
    assert head_request_values(18 * H) == [
        18 * H,
        *(m * M for m in (5, 10, 15, 20, 30)),
        *(h * H for h in (1, 2, 3, 4, 5, 6, 8, 10, 12, 13, 14, 15, 16, 17)),
    ]
    # a 4-hour site: 4 h, the 9 joint values below, then 3.x h and 2.x h multiples
    head = head_request_values(4 * H)
    assert head[0] == 4 * H and len(head) == 20 and len(set(head)) == 20
    assert all(v < 4 * H for v in head[1:]) and head[1:] == sorted(head[1:])


def test_share_of_the_maximum_by_hand():
    # rank 1 gets 89 % minus ranks 2..20 of 14.0491 exp(-0.177531 x) + 0.462513 (%):
    # a geometric series, sum_{x=2}^{20} e^{bx} = e^{2b} (1 - e^{19b}) / (1 - e^b).
    b = -0.177531
    series = math.exp(2 * b) * (1 - math.exp(19 * b)) / (1 - math.exp(b))
    expected = HEAD_SHARE - (14.0491 * series + 19 * 0.462513) / 100
    assert expected == pytest.approx(0.217329, abs=1e-6)
    n = 100_000
    values, counts = request_histogram(n, 18 * H, np.random.default_rng(0))
    assert values[-1] == 18 * H
    assert abs(counts[-1] - expected * n) <= 1  # largest remainders: within one job
    assert counts.sum() == n
    # given a share, the maximum gets it and the head still holds 89 %
    values, counts = request_histogram(n, 18 * H, np.random.default_rng(0), max_request_share=0.4)
    assert abs(counts[-1] - 0.4 * n) <= 1
    head = set(head_request_values(18 * H))
    in_head = sum(int(c) for v, c in zip(values, counts) if int(v) in head)
    assert abs(in_head - HEAD_SHARE * n) <= len(head)


def test_forced_assignment_by_hand():
    # 70000 s > 18 h: killed at its limit (runtime and request 18 h). 7000 s: only
    # 7200 s is left that is long enough. 100 s and 50 s: the two 300 s requests.
    runtime = np.array([100.0, 50.0, 7000.0, 70000.0])
    draw = assign_requests(
        runtime, np.array([300, 7200, 18 * H]), np.array([2, 1, 1]), np.random.default_rng(1)
    )
    assert draw.request_s.tolist() == [300, 300, 7200, 18 * H]
    assert draw.runtime_s.tolist() == [100, 50, 7000, 18 * H]
    assert draw.killed_at_limit.tolist() == [False, False, False, True]


def test_no_long_request_left_kills_at_the_longest_left():
    # 5000 s takes 7200 s; 4000 s finds nothing >= 4000 s left: it takes 300 s and
    # is killed there (runtime 300 s).
    draw = assign_requests(
        np.array([5000.0, 4000.0]),
        np.array([300, 7200]),
        np.array([1, 1]),
        np.random.default_rng(0),
    )
    assert draw.request_s.tolist() == [7200, 300]
    assert draw.runtime_s.tolist() == [5000, 300]
    assert draw.killed_at_limit.tolist() == [False, True]


def test_limit_share_by_hand():
    # limit_share 0.5 of 2 jobs = 1 job, drawn among those >= 300 s: only the 7000 s
    # job. The only request <= 7000 s is 300 s: it is killed there (runtime 300 s);
    # the 100 s job gets what is left, 7200 s.
    draw = assign_requests(
        np.array([7000.0, 100.0]),
        np.array([300, 7200]),
        np.array([1, 1]),
        np.random.default_rng(0),
        limit_share=0.5,
    )
    assert draw.request_s.tolist() == [300, 7200]
    assert draw.runtime_s.tolist() == [300, 100]
    assert draw.killed_at_limit.tolist() == [True, False]


def test_assignment_probabilities_by_hand():
    # Jobs 5000 s, 10 s, 20 s; one request each of 300 s, 7200 s, 18 h. The long job
    # draws first, uniformly from {7200 s, 18 h}: P = 1/2 each. The two short jobs share
    # what is left at random: each gets 300 s with P = 1/2, and 18 h with P = 1/4.
    values, counts = np.array([300, 7200, 18 * H]), np.array([1, 1, 1])
    runtime = np.array([5000.0, 10.0, 20.0])
    n = 4000
    long_job_max = short_300 = short_max = 0
    for seed in range(n):
        req = assign_requests(runtime, values, counts, np.random.default_rng(seed)).request_s
        long_job_max += req[0] == 18 * H
        short_300 += req[1] == 300
        short_max += req[1] == 18 * H
    for hits, p in ((long_job_max, 0.5), (short_300, 0.5), (short_max, 0.25)):
        assert abs(hits / n - p) <= 4.5 * math.sqrt(p * (1 - p) / n), (hits, p)


# ------------------------------------------------------------ invariants


@pytest.fixture(scope="module")
def lublin_pair():
    with_requests = generate("lublin", 50_000, 128, seed=3)
    without = generate("lublin", 50_000, 128, seed=3, requests="none")
    return with_requests.jobs, without.jobs


def test_requests_never_below_runtime_and_from_the_value_set(lublin_pair):
    jobs, plain = lublin_pair
    req = jobs["time_req_s"].to_numpy()
    run = jobs["runtime_s"].to_numpy()
    assert np.isfinite(req).all() and np.all(req >= run)
    distinct = np.unique(req)
    # the values are the model's: the head for 18 h plus tail values on a 10 s grid below 18 h
    head = set(head_request_values(18 * H))
    assert head <= set(distinct.astype(int).tolist())
    assert np.all(distinct % 10 == 0) and distinct.max() == 18 * H
    assert len(distinct) <= number_of_request_values(len(jobs))
    # modal: the 20 most used values cover the head's 89 %
    top20 = np.sort(np.unique(req, return_counts=True)[1])[::-1][:20].sum()
    assert top20 / len(req) == pytest.approx(HEAD_SHARE, abs=0.01)
    # killed at its limit <=> runtime cut to the request, SWF status 0
    killed = (jobs["status"] == 0).to_numpy()
    plain_run = plain["runtime_s"].to_numpy()
    assert np.array_equal(killed, plain_run > run)
    assert np.all(req[killed] == run[killed])
    assert np.array_equal(run[~killed], plain_run[~killed])
    # here only the jobs longer than 18 h are cut (the histogram has enough long values)
    assert np.array_equal(killed, plain_run > 18 * H)


def test_accuracy_on_lublin_is_far_from_exact(lublin_pair):
    # The point of the model: requests overestimate; only the killed jobs are exact.
    jobs, _ = lublin_pair
    accuracy = jobs["runtime_s"].to_numpy() / jobs["time_req_s"].to_numpy()
    assert np.median(accuracy) < 0.05
    assert np.mean(accuracy >= 0.99) < 0.01


def _log_accuracy(path: Path) -> tuple[np.ndarray, np.ndarray]:
    jobs = read_swf(path).jobs
    run = jobs["runtime_s"].to_numpy(dtype=float, na_value=np.nan)
    req = jobs["time_req_s"].to_numpy(dtype=float, na_value=np.nan)
    ok = (run > 0) & (req > 0)
    return run[ok], req[ok]


@pytest.mark.parametrize(
    "name",
    [
        "builtin:kth-sp2",
        "CTC-SP2-1996-3.1-cln.swf.gz",
        "SDSC-SP2-1998-4.2-cln.swf.gz",
    ],
)
def test_model_reproduces_a_logs_accuracy(name):
    """The paper's validation: the model, given only a log's runtimes, its maximal
    request and the share of jobs using it, gives an accuracy (runtime / request)
    distribution close to the log's own; the log's requests are modal the same way."""
    path = (
        builtin_trace_path(name) if name.startswith("builtin:") else require_shared("traces", name)
    )
    run, req = _log_accuracy(path)
    values, counts = np.unique(req, return_counts=True)
    # the log's popular maximum: the longest request used by >= 2 % of the jobs
    maximum = int(values[counts >= 0.02 * len(req)].max())
    share = float(np.mean(req == maximum))
    draw = tsafrir05_requests(
        run, np.random.default_rng(7), max_request_s=maximum, max_request_share=share
    )
    model = draw.runtime_s / draw.request_s
    real = np.minimum(run / req, 1.0)
    assert abs(np.mean(model) - np.mean(real)) < 0.1, (np.mean(model), np.mean(real))
    for q in (0.25, 0.5, 0.75):
        assert abs(np.quantile(model, q) - np.quantile(real, q)) < 0.16, q
    # modality: about 90 % of the jobs use the model's 20 most popular values
    top20 = np.sort(np.unique(draw.request_s, return_counts=True)[1])[::-1][:20].sum()
    assert top20 / len(run) == pytest.approx(HEAD_SHARE, abs=0.02)


def test_limit_share_reproduces_a_logs_jobs_at_their_limit():
    """The extension: with the share of CTC-SP2's jobs that ran to their request, the
    model kills that share at their limits, the invariants still hold, and the
    accuracy stays as close to the log's."""
    path = require_shared("traces", "CTC-SP2-1996-3.1-cln.swf.gz")
    run, req = _log_accuracy(path)
    real = np.minimum(run / req, 1.0)
    at_limit = float(np.mean(real >= 0.99))
    assert 0.08 < at_limit < 0.12  # the log: about 9.6 %
    draw = tsafrir05_requests(
        run,
        np.random.default_rng(7),
        max_request_s=18 * H,
        max_request_share=float(np.mean(req == 18 * H)),
        limit_share=at_limit,
    )
    assert np.all(draw.request_s >= draw.runtime_s)
    assert np.all(draw.runtime_s <= run)
    killed = draw.killed_at_limit
    assert np.all(draw.runtime_s[killed] == draw.request_s[killed])
    assert np.array_equal(draw.runtime_s[~killed], run[~killed])
    model = draw.runtime_s / draw.request_s
    assert abs(np.mean(model >= 0.99) - at_limit) < 0.01
    for q in (0.25, 0.5, 0.75):
        assert abs(np.quantile(model, q) - np.quantile(real, q)) < 0.16, q


# ------------------------------------------------------------ determinism, options


def test_same_seed_same_requests_other_seed_other_requests():
    a = generate("lublin", 3000, 64, seed=5).jobs
    b = generate("lublin", 3000, 64, seed=5).jobs
    c = generate("lublin", 3000, 64, seed=6).jobs
    pd.testing.assert_frame_equal(a, b)
    assert not np.array_equal(a["time_req_s"].to_numpy(), c["time_req_s"].to_numpy())
    run = np.arange(1.0, 2001.0)
    d1 = tsafrir05_requests(run, np.random.default_rng(9), max_request_s=4 * H)
    d2 = tsafrir05_requests(run, np.random.default_rng(9), max_request_s=4 * H)
    assert np.array_equal(d1.request_s, d2.request_s)


def test_downey_options():
    own = generate("downey", 2000, 64, seed=2).jobs
    tsafrir = generate("downey", 2000, 64, seed=2, requests="tsafrir2005").jobs
    none = generate("downey", 2000, 64, seed=2, requests="none").jobs
    ratio = own["time_req_s"] / own["runtime_s"]
    assert ratio.between(1, 5.0 + 1e-9).all()  # the uniform factor (its default)
    assert none["time_req_s"].isna().all()
    assert np.all(tsafrir["time_req_s"] >= tsafrir["runtime_s"])
    assert tsafrir["time_req_s"].max() == 18 * H
    pd.testing.assert_series_equal(own["submit_s"], tsafrir["submit_s"])


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"requests": "uniform"}, "requests"),  # Lublin has no own factor
        ({"requests": "oracle"}, "requests"),
        ({"max_request_s": 1800}, "max_request_s"),  # the model needs >= 1 h
        ({"max_request_s": 3600.5}, "max_request_s"),
        ({"max_request_share": 0.95}, "max_request_share"),  # above the head's 89 %
        ({"max_request_share": 0}, "max_request_share"),
        ({"limit_share": -0.1}, "limit_share"),
        ({"limit_share": 0.9}, "limit_share"),
    ],
)
def test_bad_request_options_name_the_key(options, key):
    with pytest.raises(ConfigError) as err:
        generate("lublin", 100, 16, seed=0, **options)
    assert err.value.key == key


def test_experiment_file_switches_requests_off(tmp_path):
    from energysched.config import ExperimentFileError, load_experiment

    text = """
name = "x"
[[traces]]
name = "lublin"
synthetic = {{ model = "lublin", n_jobs = 100, nodes = 16, params = {{ requests = {value} }} }}
[[policies]]
name = "easy"
"""
    path = tmp_path / "x.toml"
    path.write_text(text.format(value='"none"'), encoding="utf-8")
    spec = load_experiment(path)
    assert spec.traces[0].synthetic.params == {"requests": "none"}
    path.write_text(text.format(value='"sometimes"'), encoding="utf-8")
    with pytest.raises(ExperimentFileError) as err:
        load_experiment(path)
    assert "traces[0].synthetic.params.requests" in str(err.value)


# ------------------------------------------------------------ the engine's flag


def test_engine_flags_runs_planned_with_exact_runtimes(caplog):
    from policies.registry import get_policy
    from simulator.config import RunConfig
    from simulator.engine import simulate
    from simulator.platform import homogeneous_platform

    without = generate("lublin", 300, 16, seed=1, requests="none")
    with_requests = generate("lublin", 300, 16, seed=1)
    platform = homogeneous_platform(16)
    with caplog.at_level(logging.WARNING, logger="simulator.engine"):
        res = simulate(without, platform, get_policy("easy"), RunConfig())
    flagged = [r for r in caplog.records if "no requested time" in r.getMessage()]
    assert len(flagged) == 1  # once per run
    assert res.summary["jobs_without_request"] == 300
    assert res.summary["estimates"] == "exact runtimes (no requests)"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="simulator.engine"):
        res = simulate(with_requests, platform, get_policy("easy"), RunConfig())
    assert not [r for r in caplog.records if "no requested time" in r.getMessage()]
    assert res.summary["jobs_without_request"] == 0
    assert res.summary["estimates"] == "requested times"
    mixed = with_requests.jobs.copy()
    mixed.loc[:29, "time_req_s"] = np.nan  # 30 of 300 jobs without a request
    res = simulate(mixed, platform, get_policy("easy"), RunConfig())
    assert res.summary["jobs_without_request"] == 30
    assert (
        res.summary["estimates"]
        == "requested times; exact runtimes for 10.0 % of jobs (no request)"
    )
