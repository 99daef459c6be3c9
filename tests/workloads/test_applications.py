"""Applications of a trace: grouping, presets, calibrated ground truth, contention hook."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from energysched.errors import ConfigError
from simulator.platform import (
    DEFAULT_PSTATES,
    NodeType,
    Platform,
    PState,
    build_tree_topology,
    homogeneous_platform,
)
from tests.shared_data import shared_path
from workloads.applications import (
    RUN_COLUMNS,
    assign_ground_truth,
    dense_row_ids,
    describe_applications,
    group_applications,
)
from workloads.models import downey_speedup
from workloads.presets import FLUID_BENCHMARKS, get_preset, list_presets
from workloads.schema import Trace
from workloads.truth import GroundTruth

SDSC = shared_path("traces", "SDSC-SP2-1998-4.2-cln.swf.gz")


def make_trace(n: int = 400, *, seed: int = 0, executable: bool = True, cores: int = 1) -> Trace:
    rng = np.random.default_rng(seed)
    procs = rng.choice([1, 2, 4, 8, 16, 32, 64], size=n) * cores
    runtime = rng.uniform(10, 20000, n)
    exe = rng.integers(1, 25, n).astype(float)
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_s": np.sort(rng.uniform(0, 1e6, n)),
            "runtime_s": runtime,
            "procs_alloc": pd.array(procs, dtype="Int64"),
            "procs_req": pd.array(procs, dtype="Int64"),
            "time_req_s": runtime * 2,
            "user_id": pd.array(rng.integers(1, 10, n), dtype="Int64"),
            "executable_id": pd.array(exe if executable else np.full(n, np.nan), dtype="Int64"),
        }
    )
    return Trace(jobs=jobs, header={"MaxNodes": 64, "MaxProcs": 64 * cores}, name="synthetic")


def two_type_platform() -> Platform:
    fat = NodeType(
        name="fat",
        count=16,
        cores_per_node=32,
        pstates=(PState(1.0, 120.0, 200.0), PState(2.0, 130.0, 300.0), PState(3.0, 140.0, 420.0)),
    )
    thin = homogeneous_platform(64, 16).node_types[0]
    types = (NodeType(**{**thin.__dict__, "name": "thin"}), fat)
    return Platform(
        name="two",
        node_types=types,
        topology=build_tree_topology(types, 8, 12.5),
        nodes_per_switch=8,
        link_bandwidth_gbs=12.5,
    )


# --------------------------------------------------------------------------- grouping
def test_grouping_by_executable_with_fallback():
    jobs = pd.DataFrame(
        {
            "executable_id": pd.array([7, 7, 3, None, None, None, 3], dtype="Int64"),
            "user_id": pd.array([1, 2, 1, 5, 5, 5, None], dtype="Int64"),
            "procs_alloc": pd.array([1, 64, 2, 4, 7, 8, 1], dtype="Int64"),
        }
    )
    app = group_applications(Trace(jobs=jobs), by="executable")
    # executables 3 and 7 first (sorted), then fallback keys (user 5, log2 class 2) and (5, class 3)
    assert app.tolist() == [1, 1, 0, 2, 2, 3, 0]
    assert app.dtype == np.int64


def test_auto_grouping_ignores_executables_that_do_not_repeat():
    """Executables 3 and 7 have 2 jobs each (< MIN_REPEATS = 3): auto uses user + size class."""
    jobs = pd.DataFrame(
        {
            "executable_id": pd.array([7, 7, 3, 3, 9, 10], dtype="Int64"),
            "user_id": pd.array([1, 1, 2, 2, 1, 1], dtype="Int64"),
            "procs_alloc": pd.array([1, 1, 4, 4, 1, 16], dtype="Int64"),
        }
    )
    # keys (user, floor log2 procs): (1,0) (1,0) (2,2) (2,2) (1,0) (1,4)
    assert group_applications(Trace(jobs=jobs)).tolist() == [0, 0, 2, 2, 0, 1]
    # with repeating executables (each used by 3 jobs) auto uses them
    jobs["executable_id"] = pd.array([7, 7, 7, 3, 3, 3], dtype="Int64")
    assert group_applications(Trace(jobs=jobs)).tolist() == [1, 1, 1, 0, 0, 0]


def test_grouping_by_user_and_size_class_when_no_executables():
    jobs = pd.DataFrame(
        {
            "executable_id": pd.array([None] * 6, dtype="Int64"),
            "user_id": pd.array([4, 4, 4, 9, None, 4], dtype="Int64"),
            "procs_alloc": pd.array([1, 1, 3, 3, 2, None], dtype="Int64"),
            "procs_req": pd.array([1, 1, 3, 3, 2, 16], dtype="Int64"),
        }
    )
    app = group_applications(Trace(jobs=jobs))
    # keys (user, floor log2 procs): (4,0) (4,0) (4,1) (9,1) (-1,1) (4,4) -> dense sorted ids
    assert app.tolist() == [1, 1, 2, 4, 0, 3]
    assert set(app.tolist()) == set(range(app.max() + 1))
    with pytest.raises(ConfigError, match="known"):
        group_applications(Trace(jobs=jobs), by="bogus")


def test_grouping_is_deterministic_and_dense():
    tr = make_trace(500)
    a, b = group_applications(tr), group_applications(tr.copy())
    assert np.array_equal(a, b)
    assert set(a.tolist()) == set(range(a.max() + 1))
    # executable ids present: jobs with the same executable share an id
    exe = tr.jobs["executable_id"].to_numpy()
    for e in np.unique(exe):
        assert len(np.unique(a[exe == e])) == 1


def test_dense_row_ids_rank_rows_lexicographically():
    keys = np.array([[1, 5, 2], [0, 7, -1], [1, 5, 2], [1, -3, 9], [0, 7, -1], [0, 7, 0]])
    # distinct rows in order: (0,7,-1) (0,7,0) (1,-3,9) (1,5,2)
    assert dense_row_ids(keys).tolist() == [3, 0, 3, 2, 0, 1]
    assert dense_row_ids(np.zeros((0, 3), dtype=np.int64)).tolist() == []
    rng = np.random.default_rng(3)
    for _ in range(50):  # the ids np.unique(axis=0) gives, negatives and large values included
        n = int(rng.integers(1, 300))
        scale = rng.choice([1, 1000, 2**40], size=(1, 3))
        keys = rng.integers(-3, 4, size=(n, 3)) * scale
        expected = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)
        assert np.array_equal(dense_row_ids(keys), expected)


# --------------------------------------------------------------------------- presets
def test_presets_listing_and_errors():
    assert {"npb-mix", "hybrid-mix", "cpu-bound", "memory-bound"} <= set(list_presets())
    assert get_preset("npb-mix").kinds == FLUID_BENCHMARKS
    assert len(FLUID_BENCHMARKS) == 9
    with pytest.raises(ConfigError, match="npb-mix"):
        get_preset("nope")


# --------------------------------------------------------------------------- truth
def test_truth_implements_protocol_and_reproduces_recorded_runtimes():
    tr = make_trace(600)
    pl = homogeneous_platform(64, 1)
    for preset in list_presets():
        truth = assign_ground_truth(tr, pl, preset=preset, seed=3)
        assert isinstance(truth, GroundTruth)
        nt = pl.node_types[0]
        idx = np.arange(len(tr))
        t, p = truth.evaluate(idx, nt, truth.recorded_nodes, np.full(len(tr), nt.fmax_ghz))
        np.testing.assert_allclose(t, tr.jobs["runtime_s"].to_numpy(), rtol=1e-12)
        assert np.all(p > 0)


def test_recorded_nodes_use_cores_per_node():
    tr = make_trace(200, cores=16)
    pl = homogeneous_platform(64, 16)
    truth = assign_ground_truth(tr, pl, seed=1)
    procs = tr.jobs["procs_alloc"].to_numpy(dtype=float)
    np.testing.assert_array_equal(truth.recorded_nodes, np.ceil(procs / 16))
    t, _ = truth.evaluate(np.arange(200), "node", truth.recorded_nodes, 2.4)
    np.testing.assert_allclose(t, tr.jobs["runtime_s"].to_numpy(), rtol=1e-12)


def test_parameter_distributions():
    tr = make_trace(3000, seed=4, executable=False)  # user x size classes: many applications
    truth = assign_ground_truth(tr, homogeneous_platform(64, 1), preset="hybrid-mix", seed=0)
    down = ~truth.hybrid_
    assert truth.n_applications > 50
    assert np.all((truth.alpha_ >= 0.0) & (truth.alpha_ <= 1.0))
    assert np.all(truth.alpha_[down] >= 0.02)
    assert np.all(truth.A_[down] >= 1.0)
    assert np.all((truth.sigma_[down] >= 0.0) & (truth.sigma_[down] <= 2.0))
    assert set(truth.kind_[down]) <= set(FLUID_BENCHMARKS)
    assert 0.08 < truth.hybrid_.mean() < 0.35  # 20% share
    # A around and above the recorded size: A / median recorded nodes in [1, 4]
    med = pd.Series(truth.recorded_nodes).groupby(truth.application).median().to_numpy()
    ratio = truth.A_[down] / np.maximum(med[down], 1)
    assert np.all(ratio >= 1 - 1e-12) and np.all(ratio <= 4 + 1e-9)
    cpu = assign_ground_truth(tr, homogeneous_platform(64, 1), preset="cpu-bound", seed=0)
    mem = assign_ground_truth(tr, homogeneous_platform(64, 1), preset="memory-bound", seed=0)
    assert np.median(cpu.alpha_) > 0.6 > np.median(mem.alpha_)


def test_seeded_determinism():
    tr = make_trace(300)
    pl = homogeneous_platform(64, 1)
    a = assign_ground_truth(tr, pl, preset="hybrid-mix", seed=5)
    b = assign_ground_truth(tr, pl, preset="hybrid-mix", seed=5)
    c = assign_ground_truth(tr, pl, preset="hybrid-mix", seed=6)
    idx = np.arange(300)
    ta, pa = a.evaluate(idx, "node", 4, 1.8)
    tb, pb = b.evaluate(idx, "node", 4, 1.8)
    tc, pc = c.evaluate(idx, "node", 4, 1.8)
    assert np.array_equal(ta, tb) and np.array_equal(pa, pb)
    assert not np.allclose(ta, tc) and not np.allclose(pa, pc)
    ma = a.measure(idx, "node", 4, 1.8, None, ta, pa, np.random.default_rng(1))
    mb = b.measure(idx, "node", 4, 1.8, None, tb, pb, np.random.default_rng(1))
    pd.testing.assert_frame_equal(ma, mb)


def test_downey_fluid_truth_formula():
    tr = make_trace(100)
    pl = homogeneous_platform(64, 1)
    truth = assign_ground_truth(tr, pl, seed=2)
    j = np.flatnonzero(~truth.hybrid_[truth.application])[:20]
    a = truth.application[j]
    n, f = 3.0, 1.5
    t, p = truth.evaluate(j, "node", n, f)
    x = f / 2.4
    expected = (
        truth.work_[j]
        / downey_speedup(n, truth.A_[a], truth.sigma_[a])
        * (1 - truth.alpha_[a] + truth.alpha_[a] / x)
    )
    np.testing.assert_allclose(t, expected, rtol=1e-12)
    tp = truth._type("node")
    np.testing.assert_allclose(p, tp.p_static_w[a] + tp.p_dyn_w[a] * x**2)
    # power figures around the node type's P-states: Pstatic ~ lowest idle, full load ~ busy at Fmax
    idle, busy = DEFAULT_PSTATES[0].idle_power_w, DEFAULT_PSTATES[-1].busy_power_w
    assert np.all(np.abs(tp.p_static_w / idle - 1) <= 0.03 + 1e-12)
    full = tp.p_static_w + tp.p_dyn_w
    assert np.all((full >= 0.85 * busy - 1e-9) & (full <= 1.05 * busy + 1e-9))


def test_missing_runtime_or_procs_give_nan_not_errors():
    tr = make_trace(50)
    tr.jobs.loc[3, "runtime_s"] = np.nan
    tr.jobs.loc[4, "procs_alloc"] = pd.NA
    tr.jobs.loc[4, "procs_req"] = pd.NA
    truth = assign_ground_truth(tr, homogeneous_platform(64, 1), seed=0)
    t, p = truth.evaluate(np.array([3, 4, 5]), "node", 2, 2.4)
    assert np.isnan(t[0]) and np.isnan(t[1]) and np.isfinite(t[2])
    assert np.all(np.isfinite(p))


def test_multiple_node_types():
    tr = make_trace(300, cores=16)
    pl = two_type_platform()
    truth = assign_ground_truth(tr, pl, preset="hybrid-mix", seed=7)
    idx = np.arange(300)
    t_thin, _p_thin = truth.evaluate(idx, pl.node_types[0], truth.recorded_nodes, 2.4)
    np.testing.assert_allclose(t_thin, tr.jobs["runtime_s"].to_numpy(), rtol=1e-12)
    t_fat, p_fat = truth.evaluate(idx, pl.node_types[1], 2, 3.0)
    assert np.all(np.isfinite(t_fat)) and np.all(p_fat > 120 * 0.97 - 1e-9)
    # a fat node has twice the cores: Downey jobs on 1 fat node = 2 thin nodes at Fmax
    down = ~truth.hybrid_[truth.application]
    t1, _ = truth.evaluate(idx[down], "fat", 1, 3.0)
    t2, _ = truth.evaluate(idx[down], "thin", 2, 2.4)
    np.testing.assert_allclose(t1, t2, rtol=1e-12)
    with pytest.raises(KeyError, match="thin"):
        truth.evaluate(idx, "gpu", 1, 1.0)


def test_contention_hook():
    tr = make_trace(800, cores=16)
    pl = two_type_platform()
    truth = assign_ground_truth(tr, pl, preset="hybrid-mix", seed=1)
    hyb = np.flatnonzero(truth.communicates)
    down = np.flatnonzero(~truth.communicates)
    assert hyb.size > 10 and down.size > 10
    rate = truth.message_rate(hyb, "thin", 4, 2.4)
    assert np.all(rate > 0)
    np.testing.assert_allclose(truth.message_rate(hyb, "thin", 4, 2.4, per_node=False), 4 * rate)
    assert np.all(truth.message_rate(down, "thin", 4, 2.4) == 0)
    # more background traffic never speeds a job up; at the limit it saturates, stays finite
    j = hyb[:5]
    prev = truth.evaluate(j, "thin", 4, 2.4)[0]
    for bg in (1e2, 1e4, 1e6, 1e9, 1e15):
        with np.errstate(all="raise"):
            ev = truth.evaluate_detail(j, "thin", 4, 2.4, background_msg_rate=bg)
        assert np.all(ev.runtime_s >= prev * (1 - 1e-12)) and np.all(np.isfinite(ev.runtime_s))
        prev = ev.runtime_s
    assert ev.saturated.all()
    # Downey jobs ignore the background
    t0, _ = truth.evaluate(down[:5], "thin", 4, 2.4)
    t1, _ = truth.evaluate(down[:5], "thin", 4, 2.4, background_msg_rate=1e15)
    np.testing.assert_array_equal(t0, t1)
    # with no background at the recorded size the recorded runtime is exact
    t, _ = truth.evaluate(hyb, "thin", truth.recorded_nodes[hyb], 2.4, background_msg_rate=0.0)
    np.testing.assert_allclose(t, truth.recorded_runtime_s[hyb], rtol=1e-12)


def test_measure_columns_and_trace_fields():
    from predictors.base import RUN_COLUMNS as CONTRACT

    assert RUN_COLUMNS == CONTRACT
    tr = make_trace(40)
    truth = assign_ground_truth(tr, homogeneous_platform(64, 1), seed=0, noise=0.0)
    idx = np.arange(40)
    t, p = truth.evaluate(idx, "node", 2, 2.4)
    m = truth.measure(idx, "node", 2, 2.4, None, t, p, np.random.default_rng(0))
    assert tuple(m.columns) == CONTRACT
    np.testing.assert_array_equal(m["job_id"], tr.jobs["job_id"])
    np.testing.assert_allclose(m["time_s"], t)
    np.testing.assert_allclose(m["energy_j"], t * p * 2)
    np.testing.assert_array_equal(m["application"], truth.application)
    np.testing.assert_allclose(m["requested_time_s"], tr.jobs["time_req_s"])
    np.testing.assert_array_equal(m["requested_nodes"], truth.recorded_nodes.astype(int))
    # instructions follow the job's work, not the configuration
    m2 = truth.measure(idx, "node", 8, 1.2, None, None, None, np.random.default_rng(0))
    np.testing.assert_allclose(m2["instructions"], m["instructions"])


def test_describe_applications():
    tr = make_trace(500)
    pl = homogeneous_platform(64, 1)
    truth = assign_ground_truth(tr, pl, preset="hybrid-mix", seed=2)
    d = describe_applications(truth, pl)
    assert len(d) == truth.n_applications
    assert d["jobs"].sum() == len(tr)
    assert d["calib_err_max"].max() < 1e-12
    for f in (1.2, 1.5, 1.8, 2.1, 2.4):
        assert f"tfactor_{f:g}ghz" in d
    np.testing.assert_allclose(d["tfactor_2.4ghz"], 1.0)
    assert np.all(d["tfactor_1.2ghz"] >= 1.0 - 1e-12)
    assert set(d["fopt_ghz"]) <= {1.2, 1.5, 1.8, 2.1, 2.4}
    down = d["kind"] != "hybrid"
    np.testing.assert_allclose(
        d.loc[down, "speedup_n2"], downey_speedup(2, d.loc[down, "A"], d.loc[down, "sigma"])
    )


@pytest.mark.skipif(SDSC is None, reason="../shared/data/traces/SDSC-SP2 not available")
def test_calibration_reproduces_sdsc_sp2():
    from simulator.platform import platform_from_trace
    from workloads.cleaning import clean_trace
    from workloads.swf import read_swf

    trace, _ = clean_trace(read_swf(SDSC))
    pl = platform_from_trace(trace)
    truth = assign_ground_truth(trace, pl, preset="hybrid-mix", seed=0)
    rec = trace.jobs["runtime_s"].to_numpy(dtype=float)
    nt = pl.node_types[0]
    t, p = truth.evaluate(np.arange(len(trace)), nt, truth.recorded_nodes, nt.fmax_ghz)
    ok = rec > 0
    assert ok.sum() > 50000
    assert np.max(np.abs(t[ok] - rec[ok]) / rec[ok]) < 1e-12
    assert np.all(np.isfinite(p))
    # a good share of the jobs share an executable with others
    counts = np.bincount(truth.application)
    assert counts.max() > 100


def test_scalar_evaluate_matches_vectorised():
    """The engine's scalar fast path gives the same truth as evaluate() (to rounding)."""
    from simulator.platform import homogeneous_platform

    rng = np.random.default_rng(3)
    k = 400
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(1, k + 1),
            "submit_s": np.arange(k, dtype=float),
            "runtime_s": rng.uniform(10, 5000, k),
            "procs": rng.integers(1, 64, k),
            "user_id": rng.integers(1, 20, k),
            "time_req_s": 6000.0,
        }
    )
    platform = homogeneous_platform(64, 1)
    truth = assign_ground_truth(Trace(jobs=jobs), platform, preset="npb-mix", seed=5)
    ntype = platform.node_types[0]
    idx = np.arange(k)
    nodes = rng.integers(1, 65, k)
    freqs = rng.choice(ntype.freqs_ghz, k)
    rt, pw = truth.evaluate(idx, ntype, nodes, freqs)
    for i in range(k):
        one = truth.evaluate_one(i, ntype, int(nodes[i]), float(freqs[i]))
        assert one is not None
        assert one[0] == pytest.approx(rt[i], rel=1e-12)
        assert one[1] == pytest.approx(pw[i], rel=1e-12)
