"""Synthetic workloads: the generated distributions against the models' parameters.

Every statistical check compares a sample statistic with the value computed
from the model's parameters (independently of the generator's code) and
allows a few standard errors. Samples are seeded, so the tests are
deterministic; the tolerances say how far a correct generator may stray.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from energysched.errors import ConfigError
from workloads.models.downey import downey_speedup
from workloads.schema import INT_COLUMNS, SWF_COLUMNS
from workloads.synthetic import (
    LUBLIN_BATCH,
    LUBLIN_INTERACTIVE,
    DowneyParams,
    LublinParams,
    daily_cycle_weights,
    generate,
    generate_downey,
    generate_lublin,
)

N_LUBLIN = 200_000
N_DOWNEY = 100_000
Z = 4.5  # standard errors allowed


def within(value: float, expected: float, se: float, z: float = Z) -> bool:
    return abs(value - expected) <= z * se


# --------------------------------------------------------------------- Lublin


@pytest.fixture(scope="module")
def batch_trace():
    # 128 processors: the published size parameters apply unshifted (uhi = 7).
    # requests="none": the runtimes of the published model, none cut at a request.
    return generate_lublin(
        N_LUBLIN, 128, seed=11, params=LublinParams(classes="batch", requests="none")
    )


def two_stage_cdf(x: np.ndarray, low: float, med: float, hi: float, prob: float) -> np.ndarray:
    first = np.clip((x - low) / (med - low), 0.0, 1.0)
    second = np.clip((x - med) / (hi - med), 0.0, 1.0)
    return prob * first + (1.0 - prob) * second


def lublin_size_pmf(cp) -> dict[int, float]:
    """Exact size distribution of one class on the 128-processor reference machine."""

    def F(x):
        return two_stage_cdf(np.asarray(x, dtype=float), cp.ulow, cp.umed, cp.uhi, cp.uprob)

    other = 1.0 - cp.serial_prob - cp.pow2_prob
    pmf: dict[int, float] = {1: cp.serial_prob}
    for k in range(0, 8):  # power-of-two jobs: round(x) = k
        pmf[2**k] = pmf.get(2**k, 0.0) + cp.pow2_prob * float(F(k + 0.5) - F(k - 0.5))
    for s in range(1, 129):  # other jobs: round(2**x) = s
        mass = other * float(F(math.log2(s + 0.5)) - F(math.log2(max(s - 0.5, 1e-300))))
        pmf[s] = pmf.get(s, 0.0) + mass
    return pmf


def test_lublin_serial_share(batch_trace):
    size = batch_trace.jobs["procs_alloc"].to_numpy(dtype=int)
    p = LUBLIN_BATCH.serial_prob
    share = np.mean(size == 1)
    assert within(share, p, math.sqrt(p * (1 - p) / size.size)), share


def test_lublin_power_of_two_share_and_size_pmf(batch_trace):
    size = batch_trace.jobs["procs_alloc"].to_numpy(dtype=int)
    pmf = lublin_size_pmf(LUBLIN_BATCH)
    assert sum(pmf.values()) == pytest.approx(1.0, abs=1e-9)
    # Share of parallel power-of-two sizes: pow2_prob plus the non-power-of-two
    # draws that happen to round to a power of two.
    p = sum(v for s, v in pmf.items() if s > 1 and s & (s - 1) == 0)
    assert p > LUBLIN_BATCH.pow2_prob
    share = np.mean((size > 1) & ((size & (size - 1)) == 0))
    assert within(share, p, math.sqrt(p * (1 - p) / size.size)), (share, p)
    # Chi-square of the whole size distribution (sizes with expected count >= 20).
    sizes = np.array(sorted(s for s, v in pmf.items() if v * size.size >= 20))
    expected = np.array([pmf[s] for s in sizes]) * size.size
    observed = np.array([np.sum(size == s) for s in sizes])
    rest_obs = size.size - observed.sum()
    rest_exp = size.size - expected.sum()
    chi2 = stats.chisquare(np.append(observed, rest_obs), np.append(expected, rest_exp))
    assert chi2.pvalue > 1e-4, chi2


def test_lublin_mean_log2_size(batch_trace):
    size = batch_trace.jobs["procs_alloc"].to_numpy(dtype=float)
    pmf = lublin_size_pmf(LUBLIN_BATCH)
    expected = sum(v * math.log2(s) for s, v in pmf.items())
    log2 = np.log2(size)
    assert within(log2.mean(), expected, log2.std() / math.sqrt(size.size)), (
        log2.mean(),
        expected,
    )
    # Among parallel jobs, log2(size) stays close to the two-stage uniform's mean
    # (Lublin & Feitelson: E = (uprob ulow + umed + (1 - uprob) uhi) / 2); rounding
    # moves it by well under 0.1.
    cp = LUBLIN_BATCH
    tsu_mean = (cp.uprob * cp.ulow + cp.umed + (1 - cp.uprob) * cp.uhi) / 2
    assert abs(log2[size > 1].mean() - tsu_mean) < 0.1


def hyper_gamma_log_runtime_moments(cp, size: int, cap: float = 12.0) -> tuple[float, float]:
    """Mean and sd of ln(floor(exp(X))), X the capped hyper-gamma of a job of ``size``."""
    p = min(max(cp.pa * size + cp.pb, 0.0), 1.0)
    g1, g2 = stats.gamma(cp.a1, scale=cp.b1), stats.gamma(cp.a2, scale=cp.b2)
    mass = p * g1.cdf(cap) + (1 - p) * g2.cdf(cap)

    def pdf(x):
        return (p * g1.pdf(x) + (1 - p) * g2.pdf(x)) / mass

    def h(x):
        return np.log(np.maximum(np.floor(np.exp(x)), 1.0))

    # ln(floor(e^x)) is a step function: integrate piece by piece.
    edges = np.unique(np.concatenate([[1e-9], np.log(np.arange(2, int(math.exp(cap)) + 1)), [cap]]))
    edges = edges[edges <= cap]
    cdf = (p * g1.cdf(edges) + (1 - p) * g2.cdf(edges)) / mass
    steps = h(edges[:-1] + 1e-12)
    probs = np.diff(cdf)
    mean = float(np.sum(probs * steps))
    second = float(np.sum(probs * steps**2))
    check, _ = integrate.quad(pdf, 0, cap, limit=200)
    assert check == pytest.approx(1.0, abs=1e-6)
    return mean, math.sqrt(second - mean**2)


@pytest.mark.parametrize("size", [1, 2, 32])
def test_lublin_hyper_gamma_runtime_mean(batch_trace, size):
    jobs = batch_trace.jobs
    rt = jobs.loc[jobs["procs_alloc"] == size, "runtime_s"].to_numpy()
    mean, sd = hyper_gamma_log_runtime_moments(LUBLIN_BATCH, size)
    assert rt.size > 2000
    assert within(np.log(rt).mean(), mean, sd / math.sqrt(rt.size)), (np.log(rt).mean(), mean)


def test_lublin_runtime_positively_correlated_with_size(batch_trace):
    jobs = batch_trace.jobs
    size = jobs["procs_alloc"].to_numpy(dtype=float)
    rt = jobs["runtime_s"].to_numpy()
    rho = stats.spearmanr(size, rt).statistic
    # pa < 0 in the published parameters: bigger jobs run longer.
    assert LUBLIN_BATCH.pa < 0
    assert rho > 5 / math.sqrt(size.size), rho
    assert np.log(rt[size >= 32]).mean() > np.log(rt[size == 1]).mean() + 0.5
    assert rt.max() <= math.exp(12.0)


def test_lublin_daily_cycle(batch_trace):
    submit = batch_trace.jobs["submit_s"].to_numpy()
    hour = ((submit % 86400) // 3600).astype(int)
    counts = np.bincount(hour, minlength=24)
    peak = counts[10:17].sum() / 7
    night = counts[0:7].sum() / 7
    assert peak > 2.5 * night, counts
    # Hourly shares against the model's cycle weights (w / 48 per half hour).
    w = daily_cycle_weights(LUBLIN_BATCH.anum, LUBLIN_BATCH.bnum)
    expected = (w[0::2] + w[1::2]) / 48
    share = counts / counts.sum()
    assert np.argmax(share) in (
        np.argmax(expected) - 1,
        np.argmax(expected),
        np.argmax(expected) + 1,
    )
    assert np.max(np.abs(share - expected) / expected) < 0.1, (share, expected)


def test_daily_cycle_weights_shape():
    w = daily_cycle_weights(LUBLIN_BATCH.anum, LUBLIN_BATCH.bnum, 11)
    assert w.shape == (48,)
    assert w.mean() == pytest.approx(1.0)
    assert np.all(w > 0)
    # Gamma mode (a - 1) b in buckets 11.. maps to index (i - 1) mod 48: early afternoon.
    mode_bucket = round((LUBLIN_BATCH.anum - 1) * LUBLIN_BATCH.bnum)
    assert abs(int(np.argmax(w)) - (mode_bucket - 1) % 48) <= 1


def test_daily_cycle_weights_are_the_gammas_bucket_masses():
    """Bucket ``i`` (1-based, from ``cycle_start_bucket``) holds the mass of
    gamma(anum, scale=bnum) on [i - 0.5, i + 0.5], normalised to mean 1, as
    scipy.stats computes it (the generator itself reads scipy.special only)."""
    for cp, start in ((LUBLIN_BATCH, 11), (LUBLIN_INTERACTIVE, 1), (LUBLIN_BATCH, 30)):
        i = np.arange(start, start + 48, dtype=float)
        dist = stats.gamma(cp.anum, scale=cp.bnum)
        mass = np.empty(48)
        mass[(i.astype(int) - 1) % 48] = dist.cdf(i + 0.5) - dist.cdf(i - 0.5)
        mass = np.maximum(mass, 1e-12 * mass.max())
        assert np.array_equal(daily_cycle_weights(cp.anum, cp.bnum, start), mass / mass.mean())


def test_generating_a_lublin_workload_imports_no_scipy_stats():
    """scipy.stats costs about 0.5 s to import (scipy.special 0.15 s): every
    experiment with a Lublin workload validates it with a small draw."""
    from tests.fresh_python import fresh_python

    code = (
        "import sys\n"
        "from workloads.synthetic import generate\n"
        "generate('lublin', 50, 64, seed=0, requests='tsafrir2005')\n"
        "print('scipy.stats' in sys.modules, 'scipy.special' in sys.modules)\n"
    )
    assert fresh_python(code) == "False True"


def log_gamma_gap_moments(cp, cap: float = 13.0) -> tuple[float, float]:
    """Mean and sd (s) of exp(g), g ~ gamma(aarr * arar, barr) conditioned on g <= cap."""
    g = stats.gamma(cp.aarr * cp.arar, scale=cp.barr)
    mass = g.cdf(cap)
    m1, _ = integrate.quad(lambda x: math.exp(x) * g.pdf(x), 0, cap, limit=200)
    m2, _ = integrate.quad(lambda x: math.exp(2 * x) * g.pdf(x), 0, cap, limit=200)
    m1, m2 = m1 / mass, m2 / mass
    return m1, math.sqrt(m2 - m1**2)


def test_lublin_mean_interarrival(batch_trace):
    # The weighted clock has mean rate 1, so the long-run mean gap equals the
    # mean of exp(g) (to within one day over the whole span).
    submit = batch_trace.jobs["submit_s"].to_numpy()
    mean, sd = log_gamma_gap_moments(LUBLIN_BATCH)
    observed = submit[-1] / submit.size
    assert within(observed, mean, math.hypot(sd / math.sqrt(submit.size), 86400 / submit.size))


def test_lublin_mixed_classes_share_and_parameters():
    trace = generate("lublin", N_LUBLIN, 128, seed=5)
    jobs = trace.jobs
    queue = jobs["queue_id"].to_numpy(dtype=int)
    m_b, sd_b = log_gamma_gap_moments(LUBLIN_BATCH)
    m_i, sd_i = log_gamma_gap_moments(LUBLIN_INTERACTIVE)
    expected = (1 / m_b) / (1 / m_b + 1 / m_i)
    share = np.mean(queue == 1)
    # Renewal counts: var N(t) ~ t sd^2 / m^3; propagate to the share.
    span = jobs["submit_s"].iloc[-1]
    n_b, n_i = span / m_b, span / m_i
    var_b, var_i = span * sd_b**2 / m_b**3, span * sd_i**2 / m_i**3
    se = math.sqrt(n_i**2 * var_b + n_b**2 * var_i) / (n_b + n_i) ** 2
    assert within(share, expected, se), (share, expected, se)
    # Each class keeps its own size parameters.
    size = jobs["procs_alloc"].to_numpy(dtype=int)
    for code, cp in ((1, LUBLIN_BATCH), (0, LUBLIN_INTERACTIVE)):
        sel = size[queue == code]
        p = cp.serial_prob
        assert within(np.mean(sel == 1), p, math.sqrt(p * (1 - p) / sel.size))
    assert size[queue == 0].max() <= round(2**LUBLIN_INTERACTIVE.uhi)
    assert np.all(np.diff(jobs["submit_s"].to_numpy()) >= 0)


@pytest.mark.parametrize("nodes", [1, 2, 3, 100, 256, 1024])
@pytest.mark.parametrize("classes", ["mixed", "batch", "interactive", "combined"])
def test_lublin_sizes_fit_the_machine(nodes, classes):
    trace = generate("lublin", 20_000, nodes, seed=2, classes=classes)
    size = trace.jobs["procs_alloc"].to_numpy(dtype=int)
    assert size.min() >= 1 and size.max() <= nodes
    if nodes == 1:
        assert np.all(size == 1)
    if nodes >= 256 and classes in ("batch", "combined"):
        # uhi shifts with the machine: the largest jobs use most of it.
        assert size.max() > nodes // 2
    assert trace.max_nodes == nodes and trace.max_procs == nodes


def test_lublin_trace_layout():
    trace = generate("lublin", 1000, 64, seed=1)
    jobs = trace.jobs
    assert list(jobs.columns) == list(SWF_COLUMNS)
    for col in INT_COLUMNS:
        assert str(jobs[col].dtype) == "Int64", col
    assert jobs["job_id"].tolist() == list(range(1, 1001))
    # requests of the Tsafrir 2005 model (tests/workloads/test_requests.py); status 0 =
    # killed at its request
    req, run = jobs["time_req_s"].to_numpy(), jobs["runtime_s"].to_numpy()
    assert np.all(req >= run)
    killed = (jobs["status"] == 0).to_numpy()
    assert np.all(req[killed] == run[killed])
    assert set(jobs["status"].unique()) <= {0, 1}
    assert "requests=tsafrir2005" in trace.header_text["Note"]
    none = generate("lublin", 1000, 64, seed=1, requests="none").jobs
    assert none["time_req_s"].isna().all() and (none["status"] == 1).all()
    # the requests are drawn last: every other column is the same without them
    same = ["job_id", "submit_s", "procs_alloc", "queue_id"]
    pd.testing.assert_frame_equal(none[same], jobs[same])
    assert np.array_equal(none["runtime_s"].to_numpy()[~killed], run[~killed])
    assert (jobs["procs_req"] == jobs["procs_alloc"]).all()
    assert jobs["user_id"].isna().all() and jobs["wait_s"].isna().all()
    assert set(jobs["queue_id"].unique()) <= {0, 1}
    assert (jobs["runtime_s"] >= 1).all()
    assert (jobs["submit_s"] == np.floor(jobs["submit_s"])).all()
    h = trace.header
    assert (h["MaxJobs"], h["MaxRecords"], h["MaxNodes"], h["MaxProcs"]) == (1000, 1000, 64, 64)
    assert "Lublin" in trace.header_text["Note"] and "seed=1" in trace.header_text["Note"]
    assert any(line.startswith("; Note:") and "seed=1" in line for line in trace.header_lines)
    combined = generate("lublin", 100, 64, seed=1, classes="combined")
    assert combined.jobs["queue_id"].isna().all()


# --------------------------------------------------------------------- Downey


@pytest.fixture(scope="module")
def downey_trace():
    return generate_downey(N_DOWNEY, 128, seed=21)


def uniform_checks(x: np.ndarray, a: float, b: float) -> None:
    n = x.size
    mean, var = (a + b) / 2, (b - a) ** 2 / 12
    assert within(x.mean(), mean, math.sqrt(var / n)), (x.mean(), mean)
    mu4 = (b - a) ** 4 / 80
    assert within(x.var(), var, math.sqrt((mu4 - var**2) / n)), (x.var(), var)
    ks = stats.kstest(x, "uniform", args=(a, b - a))
    assert ks.pvalue > 1e-4, ks


def test_downey_log_work_uniform(downey_trace):
    p = DowneyParams()
    uniform_checks(
        np.log(downey_trace.jobs["downey_work_s"].to_numpy()), p.log_work_min, p.log_work_max
    )


def test_downey_log_parallelism_uniform(downey_trace):
    uniform_checks(np.log(downey_trace.jobs["downey_A"].to_numpy()), 0.0, math.log(128))


def test_downey_sigma_uniform(downey_trace):
    uniform_checks(downey_trace.jobs["downey_sigma"].to_numpy(), 0.0, 2.0)


def test_downey_sizes_and_runtimes(downey_trace):
    jobs = downey_trace.jobs
    A = jobs["downey_A"].to_numpy()
    sigma = jobs["downey_sigma"].to_numpy()
    work = jobs["downey_work_s"].to_numpy()
    n = jobs["procs_alloc"].to_numpy(dtype=float)
    assert np.array_equal(n, np.minimum(2.0 ** np.round(np.log2(A)), 128))
    assert n.max() <= 128 and n.min() >= 1
    expected = np.maximum(np.ceil(work / downey_speedup(n, A, sigma)), 1)
    assert np.array_equal(jobs["runtime_s"].to_numpy(), expected)
    # Requested time: runtime times U(1, 5), rounded up.
    ratio = jobs["time_req_s"].to_numpy() / jobs["runtime_s"].to_numpy()
    assert ratio.min() >= 1.0
    long = jobs["runtime_s"].to_numpy() > 1000
    r = ratio[long]
    assert r.max() <= 5.0 + 1e-3
    assert within(r.mean(), 3.0, math.sqrt(16 / 12 / r.size))


def test_downey_poisson_arrivals_and_load(downey_trace):
    jobs = downey_trace.jobs
    n = jobs["procs_alloc"].to_numpy(dtype=float)
    rt = jobs["runtime_s"].to_numpy()
    span = jobs["submit_s"].iloc[-1]
    load = float(np.sum(n * rt) / (128 * span))
    # span = sum of N exponential gaps: relative sd 1/sqrt(N).
    assert within(load, 0.7, 0.7 / math.sqrt(len(jobs))), load
    trace = generate("downey", N_DOWNEY, 128, seed=4, mean_interarrival_s=1e5)
    gaps = np.diff(np.concatenate([[0.0], trace.jobs["submit_s"].to_numpy()]))
    assert within(gaps.mean(), 1e5, 1e5 / math.sqrt(gaps.size))
    ks = stats.kstest(gaps, "expon", args=(0, 1e5))
    assert ks.pvalue > 1e-4, ks


def test_downey_round_rule_and_small_machine():
    trace = generate("downey", 5000, 10, seed=3, size_rule="round")
    jobs = trace.jobs
    A = jobs["downey_A"].to_numpy()
    n = jobs["procs_alloc"].to_numpy(dtype=float)
    assert np.array_equal(n, np.clip(np.floor(A + 0.5), 1, 10))
    assert A.max() <= 10
    one = generate("downey", 100, 1, seed=3)
    assert (one.jobs["procs_alloc"] == 1).all()
    assert np.allclose(one.jobs["downey_A"], 1.0)


def test_downey_speedup_hand_values():
    # Low variance, A = 10, sigma = 0.5: the three pieces.
    assert downey_speedup(5, 10, 0.5) == pytest.approx(50 / 11)
    assert downey_speedup(15, 10, 0.5) == pytest.approx(150 / 16)
    assert downey_speedup(25, 10, 0.5) == pytest.approx(10)
    # High variance, A = 10, sigma = 2: n A (s + 1) / (s (n + A - 1) + A), flat beyond 28.
    assert downey_speedup(5, 10, 2.0) == pytest.approx(150 / 38)
    assert downey_speedup(30, 10, 2.0) == pytest.approx(10)
    # sigma = 0: linear up to A; both modes agree at sigma = 1; S(1) = 1.
    assert downey_speedup(4, 8, 0.0) == pytest.approx(4)
    n = np.arange(1, 40)
    low = downey_speedup(n, 12.0, 1.0)
    high = downey_speedup(n, 12.0, 1.0 + 1e-12)
    assert np.allclose(low, high)
    assert np.allclose(downey_speedup(1, np.array([1.5, 7, 90]), np.array([0, 1, 2])), 1)


# --------------------------------------------------------------------- API


@pytest.mark.parametrize("model", ["lublin", "downey"])
def test_same_seed_same_bytes(model, tmp_path):
    swf = pytest.importorskip("workloads.swf")
    a = generate(model, 3000, 96, seed=7)
    b = generate(model, 3000, 96, seed=7)
    c = generate(model, 3000, 96, seed=8)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert a.header_lines == b.header_lines
    assert not a.jobs["runtime_s"].equals(c.jobs["runtime_s"])
    paths = []
    for name, trace in (("a", a), ("b", b)):
        path = tmp_path / f"{name}.swf.gz"
        swf.write_swf(trace, path)
        paths.append(path)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    text_a, text_b = io.StringIO(), io.StringIO()
    swf.write_swf(a, text_a)
    swf.write_swf(c, text_b)
    assert text_a.getvalue() != text_b.getvalue()


def test_generator_does_not_touch_global_rng():
    # The legacy global RNG must be left alone (DESIGN: never the global RNG).
    state = np.random.get_state()  # noqa: NPY002
    generate("lublin", 100, 16, seed=1)
    generate("downey", 100, 16, seed=1)
    after = np.random.get_state()  # noqa: NPY002
    assert state[0] == after[0] and np.array_equal(state[1], after[1]) and state[2] == after[2]


def test_unknown_model_lists_known():
    with pytest.raises(ConfigError) as err:
        generate("feitelson96", 10, 10)
    assert err.value.key == "model"
    assert "lublin" in str(err.value) and "downey" in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"n_jobs": 0, "nodes": 8}, "n_jobs"),
        ({"n_jobs": -3, "nodes": 8}, "n_jobs"),
        ({"n_jobs": 2.5, "nodes": 8}, "n_jobs"),
        ({"n_jobs": True, "nodes": 8}, "n_jobs"),
        ({"n_jobs": 10, "nodes": 0}, "nodes"),
        ({"n_jobs": 10, "nodes": "8"}, "nodes"),
    ],
)
@pytest.mark.parametrize("model", ["lublin", "downey"])
def test_bad_sizes_name_the_argument(model, kwargs, key):
    with pytest.raises(ConfigError) as err:
        generate(model, kwargs["n_jobs"], kwargs["nodes"])
    assert err.value.key == key


def test_bad_parameters():
    with pytest.raises(ConfigError) as err:
        generate("lublin", 10, 8, colour="red")
    assert err.value.key == "colour" and "classes" in str(err.value)
    with pytest.raises(ConfigError) as err:
        generate("lublin", 10, 8, classes="weekend")
    assert err.value.key == "classes"
    bad = LublinParams(
        batch=LUBLIN_BATCH.__class__(**{**LUBLIN_BATCH.__dict__, "serial_prob": 1.5})
    )
    with pytest.raises(ConfigError) as err:
        generate("lublin", 10, 8, params=bad)
    assert err.value.key == "batch.serial_prob"
    with pytest.raises(ConfigError) as err:
        generate("downey", 10, 8, load=0)
    assert err.value.key == "load"
    with pytest.raises(ConfigError) as err:
        generate("downey", 10, 8, params=LublinParams())
    assert err.value.key == "params"
    with pytest.raises(ConfigError) as err:
        generate("downey", 10, 8, seed=-1)
    assert err.value.key == "seed"


def test_params_object_and_overrides_combine():
    base = DowneyParams(size_rule="round")
    trace = generate("downey", 500, 32, seed=1, params=base, load=0.9)
    jobs = trace.jobs
    A = jobs["downey_A"].to_numpy()
    assert np.array_equal(
        jobs["procs_alloc"].to_numpy(dtype=float), np.clip(np.floor(A + 0.5), 1, 32)
    )
    assert "size_rule=round" in trace.header_text["Note"]


def test_million_jobs_is_fast():
    import time

    start = time.perf_counter()
    trace = generate("lublin", 1_000_000, 512, seed=0)
    elapsed = time.perf_counter() - start
    assert len(trace) == 1_000_000
    assert elapsed < 10, elapsed
