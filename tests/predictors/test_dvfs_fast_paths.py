"""Fast paths of the DVFS family's refits and shape tables against the plain
computations they replace, bit for bit, on varied inputs."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.base import Observations
from predictors.dvfs import FluidPredictor, PerAppDvfsPredictor, _PowerRows
from tests.predictors.helpers import same_bits, three_pstate_platform, whole_table_reference


@pytest.mark.parametrize("cls", [FluidPredictor, PerAppDvfsPredictor])
@pytest.mark.parametrize("pcoef", [2.0, 3.0, 2.7])
def test_power_at_one_frequency_equals_app_power(cls, pcoef) -> None:
    """_power_of_rows with fewer than two distinct frequencies (the node type's constants
    scaled to the mean power) is _app_power on the same runs."""
    p = cls(pcoef=pcoef).fit(Observations(platform=three_pstate_platform()))
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 8, 9, 31, 128, 129, 1000, 9000):
        for _ in range(3 if n > 200 else 20):
            x = float(rng.choice([0.5, 0.75, 1.0, rng.uniform(0.1, 1.0)]))
            power = rng.uniform(50.0, 400.0, n) * 10.0 ** rng.integers(-3, 4)
            pr = _PowerRows()
            runs = [v for w in power for v in (x, float(w))]
            for k in range(0, 2 * n, 2 * 37):  # added in pieces, as refits add them
                pr.add(runs[k : k + 2 * 37])
            got = p._power_of_rows("n", pr)
            want = p._app_power("n", np.full(n, x), power.copy())
            assert same_bits(got, want), (n, x)


def test_few_values_geometric_mean_equals_numpy() -> None:
    """_geomean_few (logs added left to right) is geometric_mean_positive, also when
    some value is zero, negative, infinite or NaN (its filtered fallback)."""
    from predictors.baselines import geometric_mean_positive
    from predictors.dvfs import _geomean_few

    rng = np.random.default_rng(11)
    odd = [0.0, -1.0, np.inf, np.nan, 1e-320, 1e308]
    with np.errstate(all="ignore"):
        for n in range(1, 8):
            for k in range(400):
                values = (rng.uniform(0.5, 2.0, n) * 10.0 ** rng.integers(-300, 300, n)).tolist()
                if k % 4 == 0:
                    values[int(rng.integers(n))] = float(rng.choice(odd))
                want = geometric_mean_positive(np.array(values))
                assert same_bits(_geomean_few(values), want), values


def test_mean_of_a_list_equals_numpy() -> None:
    """_mean (a left-to-right sum below 8 values, numpy's pairwise sum above, divided by
    the count) is np.mean, bit for bit, at the lengths where numpy's summation changes
    (8 values, blocks of 128)."""
    from predictors.dvfs import _mean

    rng = np.random.default_rng(13)
    for n in (1, 2, 3, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 256, 257, 1000):
        for _ in range(50):
            values = (rng.uniform(50.0, 400.0, n) * 10.0 ** rng.integers(-3, 4, n)).tolist()
            assert same_bits(_mean(values), float(np.mean(np.array(values)))), n


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (FluidPredictor, {}),
        (FluidPredictor, {"pcoef": 2.7}),
        (FluidPredictor, {"fit_pcoef": False}),
        (PerAppDvfsPredictor, {}),
        (PerAppDvfsPredictor, {"pcoef": 2.7}),
    ],
)
def test_refits_with_few_and_many_runs_equal_the_reference(cls, kwargs) -> None:
    """_fit_fast and _request_ratio (plain floats below 8 runs, numpy above; extreme
    values that overflow or underflow) equal the whole-table fit after every update,
    through the power fits at one, two and three clocks (anchored or not, any exponent)."""
    import pandas as pd

    from predictors.baselines import NUMERIC_RUN_COLUMNS

    Reference = whole_table_reference(cls)

    rng = np.random.default_rng(4)
    k = 400
    freq = rng.choice([1.2, 1.8, 2.4], k)
    nodes = rng.integers(1, 9, k).astype(float)
    cols = {c: np.full(k, np.nan) for c in NUMERIC_RUN_COLUMNS}
    cols.update(
        nodes=nodes,
        freq_ghz=freq,
        time_s=100.0 / nodes * (0.4 + 0.6 * 2.4 / freq) * rng.uniform(0.9, 1.1, k),
        power_w=rng.uniform(150.0, 250.0, k),
        instructions=rng.uniform(1e11, 1e12, k),
        requested_nodes=nodes,
        requested_time_s=rng.uniform(50.0, 500.0, k),
    )
    extreme = rng.random(k) < 0.05  # products that overflow (their logs: inf)
    cols["requested_time_s"][extreme] = 1e-300
    cols["instructions"][extreme] = 1e300
    cols["requested_time_s"][rng.random(k) < 0.1] = np.nan  # no request
    runs = pd.DataFrame(cols)
    runs["application"] = rng.choice([1, 2, 3, 4, 5, 6], k, p=[0.02, 0.03, 0.05, 0.1, 0.3, 0.5])
    runs["node_type"] = "n"
    obs = Observations(runs=runs.iloc[:0], platform=three_pstate_platform())
    fast, ref = cls(**kwargs).fit(obs), Reference(**kwargs).fit(obs)
    lo = 0
    while lo < k:
        hi = lo + int(rng.integers(1, 5))
        fast.update(runs.iloc[lo:hi])
        ref.update(runs.iloc[lo:hi])
        lo = hi
        for app, s in ref.state_.items():
            t = fast.state_[app]
            assert (s is None) == (t is None)
            if s is not None:
                got = (t.model.g, t.model.alpha, t.model.power, t.model.pcoef, t.rho)
                want = (s.model.g, s.model.alpha, s.model.power, s.model.pcoef, s.rho)
                assert same_bits(got, want), app
    assert min(len(fast.runs_[a]["nodes"]) for a in fast.runs_) < 8 < k // 3


def test_request_ratio_without_requests_is_the_reference_nan() -> None:
    """_request_ratio of an application with no usable request (not asked by refits)
    answers like the base class: NaN."""
    import pandas as pd

    from predictors.baselines import NUMERIC_RUN_COLUMNS, PerApplicationPredictor

    cols = {c: np.full(3, np.nan) for c in NUMERIC_RUN_COLUMNS}
    cols.update(
        nodes=np.array([1.0, 2.0, 2.0]),
        freq_ghz=np.array([1.2, 2.4, 1.8]),
        time_s=np.array([100.0, 40.0, 60.0]),
        instructions=np.full(3, 1e11),
    )
    runs = pd.DataFrame(cols)
    runs["application"] = 7
    runs["node_type"] = "n"
    p = FluidPredictor().fit(Observations(runs=runs, platform=three_pstate_platform()))
    store, state = p._stores[7], p.state_[7]
    assert store.n_req == 0 and state is not None
    work = store.work()
    got = p._request_ratio(7, state.model, store, work)
    want = PerApplicationPredictor._request_ratio(p, 7, state.model, store, work)
    assert np.isnan(got) and np.isnan(want)


def test_g_of_the_rows_equals_the_plain_formula() -> None:
    """_g_of_rows (rows given flat; plain floats below 8 rows, numpy above) is the
    geometric mean of ``tn / ((1 - alpha) + alpha / x)`` over the rows, bit for bit, also when some
    quotient is zero, negative, infinite or NaN (filtered out, NaN when none is left)."""
    from predictors.baselines import geometric_mean
    from predictors.dvfs import _g_of_rows

    rng = np.random.default_rng(12)
    odd = [0.0, -3.0, np.inf, np.nan, 1e-320, 1e308]
    with np.errstate(all="ignore"):
        for n in (1, 2, 3, 5, 7, 8, 9, 30):
            for k in range(300):
                x = 1.0 + rng.uniform(-1e-9, 1e-9, n) * (k % 2)
                tn = rng.uniform(0.5, 2.0, n) * 10.0 ** rng.integers(-300, 300, n)
                if k % 3 == 0:
                    tn[int(rng.integers(n))] = float(rng.choice(odd))
                if k % 50 == 0:
                    tn[:] = -1.0  # nothing left: NaN
                alpha = float(rng.choice([0.0, 1.0, 0.3, rng.uniform(0.0, 1.0)]))
                rows = [v for xi, ti in zip(x.tolist(), tn.tolist()) for v in (xi, ti)]
                want = geometric_mean(tn / ((1.0 - alpha) + alpha / x))
                assert same_bits(_g_of_rows(rows, alpha), want), (n, k)
                if k % 3 and k % 50:  # every quotient positive and finite: no filter
                    assert same_bits(_g_of_rows(rows, alpha, positive=True), want), (n, k)


def test_anomaly_flag_of_one_alpha_is_the_model_rule() -> None:
    """_anomalous (two comparisons for an alpha in range) is bool(fluid_alpha_anomalous)
    on values in, at the edges of, just outside and far outside the range, and NaN."""
    from predictors.dvfs import _anomalous
    from workloads.models.fluid import ALPHA_ANOMALY_TOL, fluid_alpha_anomalous

    edges = [0.0, 1.0, -ALPHA_ANOMALY_TOL, 1.0 + ALPHA_ANOMALY_TOL]
    values = [*edges, *np.nextafter(edges, -np.inf), *np.nextafter(edges, np.inf)]
    values += [0.5, -0.0, -1e-300, 2.0, -7.0, np.inf, -np.inf, np.nan]
    values += np.random.default_rng(5).uniform(-0.2, 1.2, 500).tolist()
    for raw in values:
        assert _anomalous(float(raw)) == bool(fluid_alpha_anomalous(raw)), raw
    assert _anomalous(1.2) and not _anomalous(1.01) and not _anomalous(np.nan)
