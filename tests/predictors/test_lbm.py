"""LBM surrogate solvers (hand-worked examples) and the LBM predictor."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from energysched.errors import ConfigError
from predictors.base import RUN_COLUMNS, Observations, Queries
from predictors.lbm import BenchmarkGrid, LbmPredictor, lbm_surrogate
from predictors.testing import make_case

SOLVERS = ("lstsq", "nnls", "l1")


@pytest.mark.parametrize("solver", SOLVERS)
def test_square_2x2_hand_worked(solver):
    # A = [[2, 1], [1, 3]], b = [5, 10]; det = 2*3 - 1*1 = 5
    # x1 = (5*3 - 1*10) / 5 = 1,  x2 = (2*10 - 1*5) / 5 = 3   (both >= 0: every solver agrees)
    res = lbm_surrogate([[2.0, 1.0], [1.0, 3.0]], [5.0, 10.0], solver=solver)
    np.testing.assert_allclose(res.x, [1.0, 3.0], atol=1e-9)
    assert res.residual < 1e-9 and not res.out_of_span
    assert res.rank == 2 and res.determined
    # cond = ratio of singular values of [[2,1],[1,3]]: eigenvalues (5 +- sqrt(5))/2 (symmetric)
    assert res.condition_number == pytest.approx((5 + math.sqrt(5)) / (5 - math.sqrt(5)))
    assert res.predict([1.0, 1.0]) == pytest.approx(4.0)


def test_square_2x2_with_negative_solution():
    # A = [[1, 2], [3, 4]], b = [5, 6]; det = 1*4 - 2*3 = -2
    # x1 = (5*4 - 2*6) / -2 = -4,  x2 = (1*6 - 3*5) / -2 = 4.5
    res = lbm_surrogate([[1.0, 2.0], [3.0, 4.0]], [5.0, 6.0], solver="lstsq")
    np.testing.assert_allclose(res.x, [-4.0, 4.5], atol=1e-9)


@pytest.mark.parametrize("solver", ["nnls", "l1"])
def test_nonnegative_solvers_return_nonnegative_surrogates(solver):
    res = lbm_surrogate([[1.0, 2.0], [3.0, 4.0]], [5.0, 6.0], solver=solver, nonneg=True)
    assert np.all(res.x >= -1e-12)
    assert res.nonneg
    # nnls optimum: x1 = 0 -> min (2 x2 - 5)^2 + (4 x2 - 6)^2 -> x2 = (10 + 24) / (4 + 16) = 1.7
    if solver == "nnls":
        np.testing.assert_allclose(res.x, [0.0, 1.7], atol=1e-9)


def test_lstsq_with_nonneg_is_nnls():
    res = lbm_surrogate([[1.0, 2.0], [3.0, 4.0]], [5.0, 6.0], solver="lstsq", nonneg=True)
    assert res.solver == "nnls" and np.all(res.x >= 0)


def test_overdetermined_two_columns():
    # A = [[1,0],[0,1],[1,1]], b = [1,2,4]
    # normal equations: A'A = [[2,1],[1,2]], A'b = [5,6] -> x = (4/3, 7/3)
    # residual A x - b = [1/3, 1/3, -1/3] -> ||r|| = sqrt(3)/3
    A = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    b = [1.0, 2.0, 4.0]
    for solver in ("lstsq", "nnls"):
        res = lbm_surrogate(A, b, solver=solver)
        np.testing.assert_allclose(res.x, [4 / 3, 7 / 3], atol=1e-9)
        assert res.residual == pytest.approx(math.sqrt(3) / 3)
        assert res.relative_residual == pytest.approx((math.sqrt(3) / 3) / math.sqrt(21))
    # L1: (x1-1) + (x2-2) - (x1+x2-4) = 1, so sum |r| >= 1 and the LP attains 1
    res = lbm_surrogate(A, b, solver="l1")
    assert res.residual_l1 == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("solver,expected", [("lstsq", 13 / 3), ("nnls", 13 / 3), ("l1", 2.0)])
def test_overdetermined_one_column_mean_vs_median(solver, expected):
    # one benchmark, three observations 1, 2, 10: least squares -> mean 13/3, L1 -> median 2
    res = lbm_surrogate([[1.0], [1.0], [1.0]], [1.0, 2.0, 10.0], solver=solver)
    assert res.x[0] == pytest.approx(expected, abs=1e-9)
    assert res.rows == 3 and res.columns == 1 and res.condition_number == pytest.approx(1.0)


def test_out_of_span_flag():
    A = np.column_stack([np.ones(4), np.arange(1.0, 5.0)])  # constant and linear patterns
    inside = lbm_surrogate(A, 1 * A[:, 0] + 2 * A[:, 1])
    np.testing.assert_allclose(inside.x, [1.0, 2.0], atol=1e-9)
    assert not inside.out_of_span
    quadratic = np.arange(1.0, 5.0) ** 2  # a pattern no benchmark has
    for solver in SOLVERS:
        res = lbm_surrogate(A, quadratic, solver=solver)
        assert res.out_of_span, solver
        assert res.relative_residual > 0.05


def test_rank_deficient_and_normalisation_reported():
    res = lbm_surrogate([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], [2.0, 4.0, 6.0])
    assert res.rank == 1 and math.isinf(res.condition_number) and not res.determined
    res = lbm_surrogate([[1000.0, 0.0], [0.0, 0.001]], [2000.0, 0.003], normalize=True)
    assert res.normalization == "row-max"
    np.testing.assert_allclose(res.x, [2.0, 3.0])
    assert res.condition_number == pytest.approx(1.0)
    assert lbm_surrogate([[1.0]], [1.0]).normalization == "none"


def test_bad_inputs():
    with pytest.raises(ConfigError, match="known: lstsq, nnls, l1"):
        lbm_surrogate([[1.0]], [1.0], solver="qr")
    with pytest.raises(ValueError, match="rows"):
        lbm_surrogate([[1.0], [2.0]], [1.0])


def test_grid_interpolates_exactly_on_measured_points_and_log_log_between():
    case = make_case()
    bench = case.observations.benchmarks
    grid = BenchmarkGrid(bench)
    sub = bench[(bench["nodes"] == 4) & (bench["freq_ghz"] == 1.8)].set_index("benchmark")
    t, e = grid.lookup("node", np.array([4]), np.array([1.8]))
    np.testing.assert_allclose(t[0], sub.loc[grid.names, "time_s"].to_numpy())
    np.testing.assert_allclose(e[0], sub.loc[grid.names, "energy_j"].to_numpy())
    # the cpu-bound benchmark has linear speedup: log-log interpolation at n=3 is exact
    t3, _ = grid.lookup("node", np.array([3]), np.array([2.4]))
    t1, _ = grid.lookup("node", np.array([1]), np.array([2.4]))
    i = grid.names.index("cpu-bound")
    assert t3[0, i] == pytest.approx(t1[0, i] / 3)


def _runs_from_benchmarks(bench, weights, configs, app=0, work=1e9):
    rows = []
    for j, (n, f) in enumerate(configs):
        sel = bench[(bench["nodes"] == n) & (bench["freq_ghz"] == f)].set_index("benchmark")
        t = float(sum(w * sel.loc[b, "time_s"] for b, w in weights.items()))
        e = float(sum(w * sel.loc[b, "energy_j"] for b, w in weights.items()))
        rows.append(
            {
                "job_id": j,
                "application": app,
                "submit_s": float(j),
                "node_type": "node",
                "nodes": n,
                "cores": 4,
                "freq_ghz": f,
                "time_s": t,
                "power_w": e / (t * n),
                "energy_j": e,
                "ctr_instructions_per_s": 1e9,
                "ctr_llc_miss_ratio": 0.1,
                "ctr_mem_bandwidth_gbs": 5.0,
                "ctr_stall_ratio": 0.2,
                "rapl_power_w": 50.0,
                "instructions": work,
                "requested_nodes": n,
                "requested_time_s": np.nan,
            }
        )
    return pd.DataFrame(rows)[list(RUN_COLUMNS)]


@pytest.mark.parametrize("solver", SOLVERS)
def test_predictor_recovers_a_benchmark_combination(solver):
    case = make_case()
    bench = case.observations.benchmarks
    weights = {"cpu-bound": 2.0, "memory-bound": 0.5}
    configs = [(1, 2.4), (2, 1.2), (4, 1.8), (8, 2.4), (16, 1.5)]
    runs = _runs_from_benchmarks(bench, weights, configs)
    obs = Observations(runs=runs, benchmarks=bench, platform=case.platform)
    p = LbmPredictor(solver=solver).fit(obs)
    res = p.surrogate(0)
    names = p.benchmark_names()
    expected = np.array([weights.get(b, 0.0) for b in names])
    np.testing.assert_allclose(res.x, expected, atol=1e-6)
    assert res.determined and not res.out_of_span
    # unobserved configurations on the grid: exact (no requested time -> median work scale)
    target = [(32, 1.2), (2, 2.1)]
    truth = _runs_from_benchmarks(bench, weights, target)
    q = Queries(application=[0, 0], nodes=[32, 2], freq_ghz=[1.2, 2.1])
    pred = p.predict(q)
    np.testing.assert_allclose(pred.time_s, truth["time_s"], rtol=1e-6)
    np.testing.assert_allclose(pred.energy_j, truth["energy_j"], rtol=1e-6)
    np.testing.assert_allclose(pred.power_w, truth["power_w"], rtol=1e-6)
    assert pred.reliable.all()


def test_predictor_scales_by_work():
    case = make_case()
    bench = case.observations.benchmarks
    weights = {"mixed": 1.0}
    a = _runs_from_benchmarks(bench, weights, [(1, 2.4), (4, 1.2), (8, 1.8)], work=1e9)
    b = _runs_from_benchmarks(bench, weights, [(2, 2.4), (16, 1.2)], work=3e9)
    b[["time_s", "energy_j"]] *= 3.0  # three times the work, same shape
    runs = pd.concat([a, b], ignore_index=True)
    p = LbmPredictor().fit(Observations(runs=runs, benchmarks=bench, platform=case.platform))
    # every run is divided by its work and multiplied by the median work (1e9): surrogate = 1 x mixed
    res = p.surrogate(0)
    expected = np.array([1.0 if b == "mixed" else 0.0 for b in p.benchmark_names()])
    np.testing.assert_allclose(res.x, expected, atol=1e-6)
    assert not res.out_of_span


def test_without_benchmarks_everything_falls_back():
    case = make_case()
    obs = Observations(runs=case.observations.runs, platform=case.platform)
    pred = LbmPredictor().fit(obs).predict(case.queries)
    assert not pred.reliable.any()
    assert np.all(pred.time_s > 0)


def test_bad_parameters_are_config_errors():
    case = make_case()
    with pytest.raises(ConfigError, match="solver"):
        LbmPredictor(solver="x").fit(case.observations)
    with pytest.raises(ConfigError, match="resources"):
        LbmPredictor(resources=("power",)).fit(case.observations)


# --------------------------------------------------------------------------- guards (issue 14)


@pytest.mark.parametrize("shape", [(3, 0), (0, 3)])
@pytest.mark.parametrize("solver", SOLVERS)
def test_empty_systems_rejected_before_any_solver(shape, solver):
    """nnls on a 3 x 0 or 0 x 3 matrix aborts the interpreter (double free inside
    scipy): the call runs in a subprocess so that a regression cannot take pytest down."""
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from predictors.lbm import lbm_surrogate\n"
        f"A = np.zeros({shape!r}); b = np.zeros({shape[0]})\n"
        "try:\n"
        f"    lbm_surrogate(A, b, solver={solver!r})\n"
        "except ValueError as e:\n"
        "    print('REJECTED', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"REJECTED lbm_surrogate: A is {shape[0]} x {shape[1]}" in done.stdout


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs_rejected_with_their_place(bad):
    A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    A[1, 0] = bad
    with pytest.raises(ValueError, match=r"A has 1 non-finite entries \(first: row 1, column 0"):
        lbm_surrogate(A, [1.0, 2.0, 3.0], solver="nnls")
    with pytest.raises(ValueError, match=r"b has 1 non-finite entries \(first: entry 2"):
        lbm_surrogate([[1.0], [2.0], [3.0]], [1.0, 2.0, bad], solver="nnls")
    with pytest.raises(ValueError, match="2 rows but b has 3"):
        lbm_surrogate([[1.0], [2.0]], [1.0, 2.0, 3.0])


def _near_duplicate_system():
    # two benchmark columns equal up to a relative 1e-6 (cond ~ 1e6) and a third one
    rng = np.random.default_rng(0)
    a, c = rng.uniform(1, 2, 6), rng.uniform(1, 2, 6)
    A = np.column_stack([a, a * (1 + 1e-6 * rng.standard_normal(6)), c])
    b = 2.0 * a + 0.5 * c + 0.01 * rng.standard_normal(6)
    return A, b


def test_near_singular_system_is_flagged(caplog):
    A, b = _near_duplicate_system()
    with caplog.at_level("WARNING", logger="predictors.lbm"):
        res = lbm_surrogate(A, b, normalize=True)
    assert res.determined  # full rank: the old flags saw nothing wrong
    assert np.max(np.abs(res.x)) > 100  # the absurd weights of the issue
    assert res.condition_number > 1e5 and res.ill_conditioned and not res.reliable
    assert "ill-conditioned" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="predictors.lbm"):
        quiet = lbm_surrogate(A, b, normalize=True, warn=False)
    assert quiet.ill_conditioned and caplog.text == ""  # the caller reports it
    # a ridge or an rcond cut-off shares the weight between the duplicates: the
    # effective condition number is under the limit and the weights sum to about 2
    for kw in ({"ridge": 1e-4}, {"rcond": 1e-3}):
        reg = lbm_surrogate(A, b, normalize=True, **kw)
        assert not reg.ill_conditioned and reg.reliable
        assert reg.x[0] + reg.x[1] == pytest.approx(2.0, abs=0.05)
        assert abs(reg.x[0] - reg.x[1]) < 0.05


def test_a_replay_warns_once_for_its_flagged_surrogates_and_lists_them(caplog):
    # a benchmark that duplicates another to 1e-7 makes every application's system
    # ill-conditioned: one WARNING for the fit's first flagged application, INFO for
    # the others, nothing again when an application is refitted
    case = make_case()
    bench = case.observations.benchmarks
    copy = bench[bench["benchmark"] == "cpu-bound"].copy()
    copy["benchmark"] = "cpu-bound-copy"
    copy[["time_s", "energy_j"]] *= 1 + 1e-7 * np.arange(1, len(copy) + 1)[:, None]
    duplicated = pd.concat([bench, copy], ignore_index=True)
    weights = {"cpu-bound": 2.0, "memory-bound": 0.5}
    configs = [(1, 2.4), (2, 1.2), (4, 1.8), (8, 2.4), (16, 1.5)]
    runs = pd.concat(
        [_runs_from_benchmarks(bench, weights, configs, app=a) for a in (3, 1, 2)],
        ignore_index=True,
    )
    obs = Observations(runs=runs, benchmarks=duplicated, platform=case.platform)
    p = LbmPredictor()
    with caplog.at_level("INFO", logger="predictors.lbm"):
        p.fit(obs)
        p.predict(Queries(application=[3, 1, 2], nodes=[2, 2, 2], freq_ghz=[2.4, 2.4, 2.4]))
        p.update(_runs_from_benchmarks(bench, weights, [(32, 1.2)], app=1))
        assert not p.predict(Queries(application=[1], nodes=[4], freq_ghz=[1.8])).reliable.any()
    flagged = [r for r in caplog.records if "its surrogate is marked not reliable" in r.message]
    assert [(r.levelname, r.message.split(":")[1]) for r in flagged] == [
        ("WARNING", " application 1"),
        ("INFO", " application 2"),
        ("INFO", " application 3"),
    ]
    assert "further flagged applications at INFO level" in flagged[0].message
    assert not any(
        r.name == "predictors.lbm" and "lbm_surrogate" in r.message for r in caplog.records
    )
    listed = p.flagged_applications()
    assert list(listed) == [1, 2, 3]
    assert all("ill-conditioned (cond" in why and "x 5 system" in why for why in listed.values())
    # a new fit starts a new list
    p.fit(Observations(runs=runs, benchmarks=bench, platform=case.platform))
    p.predict(Queries(application=[3, 1, 2], nodes=[2, 2, 2], freq_ghz=[2.4, 2.4, 2.4]))
    assert p.flagged_applications() == {}


def test_solvers_disagreeing_are_flagged(caplog):
    # one column, observations 1, 2, 10: least squares 13/3, L1 the median 2:
    # relative disagreement |2 - 13/3| / (13/3) = 7/13 > 0.1
    with caplog.at_level("WARNING", logger="predictors.lbm"):
        res = lbm_surrogate([[1.0], [1.0], [1.0]], [1.0, 2.0, 10.0])
    assert res.solver_disagreement == pytest.approx(7 / 13, rel=1e-6)
    assert res.solvers_disagree and not res.reliable
    assert "solvers disagree" in caplog.text
    # an exact, well-conditioned system: every solver finds the same weights
    ok = lbm_surrogate([[2.0, 1.0], [1.0, 3.0]], [5.0, 10.0])
    assert ok.solver_disagreement < 1e-9 and ok.reliable


def test_decisive_check_only_compares_solvers_only_where_that_can_change_reliable(
    monkeypatch, caplog
):
    import predictors.lbm as lbm_module

    solves: list[str] = []
    real_solve = lbm_module._solve

    def counting_solve(An, bn, solver, *args):
        solves.append(solver)
        return real_solve(An, bn, solver, *args)

    monkeypatch.setattr(lbm_module, "_solve", counting_solve)
    # out of span (observations 1, 2, 10 of one column): not reliable whatever the
    # solvers say, so the decisive check solves once (lstsq) and leaves the
    # disagreement unknown; the full check solves three times and finds 7/13
    system = ([[1.0], [1.0], [1.0]], [1.0, 2.0, 10.0])
    full = lbm_surrogate(*system)
    assert solves == ["lstsq", "nnls", "l1"] and full.solvers_disagree
    solves.clear()
    caplog.clear()
    with caplog.at_level("WARNING", logger="predictors.lbm"):
        short = lbm_surrogate(*system, decisive_check_only=True)
    assert solves == ["lstsq"]
    assert math.isnan(short.solver_disagreement) and not short.solvers_disagree
    assert short.out_of_span and not short.reliable and not full.reliable
    np.testing.assert_array_equal(short.x, full.x)
    assert "solvers disagree" not in caplog.text  # (nothing was compared)
    # an exact, well-conditioned system is otherwise reliable: the check runs
    solves.clear()
    ok = lbm_surrogate([[2.0, 1.0], [1.0, 3.0]], [5.0, 10.0], decisive_check_only=True)
    assert solves == ["lstsq", "nnls", "l1"]
    assert ok.solver_disagreement < 1e-9 and ok.reliable
    # and where the solvers disagree on an otherwise reliable system, both flag it:
    # two columns, four rows, least squares and L1 part on the outlier row
    A = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 2.0]]
    b = [1.0, 1.0, 2.0, 9.0]
    both = [lbm_surrogate(A, b, span_tol=1.0, decisive_check_only=d) for d in (False, True)]
    assert not both[0].out_of_span and both[0].determined and not both[0].ill_conditioned
    assert both[0].solvers_disagree and both[1].solvers_disagree
    assert both[0].solver_disagreement == both[1].solver_disagreement
    assert not both[0].reliable and not both[1].reliable


def test_decisive_check_only_keeps_reliable_on_random_systems():
    rng = np.random.default_rng(7)
    for trial in range(200):
        rows, cols = int(rng.integers(1, 9)), int(rng.integers(1, 5))
        A = rng.uniform(0.1, 10.0, size=(rows, cols))
        if trial % 3 == 0 and cols >= 2:  # near-duplicate benchmarks: ill-conditioned
            A[:, 1] = A[:, 0] * (1.0 + 1e-6 * rng.standard_normal(rows))
        b = A @ rng.uniform(0.0, 2.0, size=cols) * rng.uniform(0.9, 1.1, size=rows)
        kw = {"normalize": bool(trial % 2), "nonneg": bool(trial % 5 == 0)}
        full = lbm_surrogate(A, b, **kw)
        short = lbm_surrogate(A, b, decisive_check_only=True, **kw)
        assert short.reliable == full.reliable, (trial, full)
        np.testing.assert_array_equal(short.x, full.x)


def test_regularisation_options_are_checked():
    with pytest.raises(ConfigError, match="ridge"):
        lbm_surrogate([[1.0]], [1.0], ridge=-1.0)
    with pytest.raises(ConfigError, match="rcond"):
        lbm_surrogate([[1.0]], [1.0], rcond=-1.0)


class _LbmThroughPredict(LbmPredictor):
    """LBM without the grid fast paths: every grid through ``predict``."""

    _grid_ok = False


def test_an_lbm_replay_through_its_grids_is_the_replay_through_predict() -> None:
    """LBM's tables and shapes (the grid fast paths of every per-application
    predictor) give the replay that ``predict`` gives, bit for bit, with the
    benchmark suite measured (its surrogates then fit, some to times that are not
    positive: those jobs fall back on both paths)."""
    import warnings

    from energysched.runner import build_platform, load_trace
    from policies.registry import get_policy
    from predictors.base import Observations
    from simulator import simulate
    from workloads.applications import assign_ground_truth
    from workloads.benchmark_suite import measure_benchmark_suite
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=1500)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    obs = Observations(benchmarks=measure_benchmark_suite(platform, seed=0), platform=platform)

    def replay(predictor: LbmPredictor) -> tuple[pd.DataFrame, dict[str, int]]:
        policy = get_policy("easy-slack-size-freq", predictor=predictor)
        jobs = simulate(trace, platform, policy, None, truth, observations=obs).jobs
        return jobs, dict(policy.chooser.stats)

    fast, stats = replay(LbmPredictor())
    assert stats["shape_hits"] > 0
    slow, plain = replay(_LbmThroughPredict())
    assert plain["shape_hits"] == 0
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)


def test_the_l1_constraints_are_the_dense_block_as_the_solver_sees_it() -> None:
    """The sparse [[A, -I], [-A, -I]] has the dense block's entries, and is the CSC
    matrix scipy's HiGHS interface makes of that block (so the L1 surrogates are the
    same, bit for bit)."""
    from scipy import sparse

    from predictors.lbm import l1_constraints

    rng = np.random.default_rng(4)
    for rows, cols in ((3, 2), (40, 8), (250, 8)):
        a = rng.lognormal(0, 1, (rows, cols))
        a[rng.random((rows, cols)) < 0.1] = 0.0  # zeros are left out of both
        eye = np.eye(rows)
        dense = np.block([[a, -eye], [-a, -eye]])
        mine = l1_constraints(a)
        theirs = sparse.csc_matrix(dense)
        assert np.array_equal(mine.toarray(), dense)
        for name in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(mine, name), getattr(theirs, name)), name
        b = a @ rng.uniform(0.1, 1.0, cols)
        x_sparse = lbm_surrogate(a, b, "l1", check_solvers=False).x
        cost = np.concatenate([np.zeros(cols), np.ones(rows)])
        bounds = [(None, None)] * cols + [(0, None)] * rows
        from scipy.optimize import linprog

        dense_lp = linprog(
            cost, A_ub=dense, b_ub=np.concatenate([b, -b]), bounds=bounds, method="highs"
        )
        assert np.array_equal(x_sparse, dense_lp.x[:cols])
