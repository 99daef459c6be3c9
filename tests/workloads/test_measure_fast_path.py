"""TraceGroundTruth.measure: the small-batch (plain Python) path and the vectorised path
give exactly the documented formulas (workloads.measurements), bit for bit, and take the
same draws from the generator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simulator.platform import NodeType, Platform, PState, homogeneous_platform
from workloads import applications
from workloads.applications import RUN_COLUMNS, SMALL_BATCH, assign_ground_truth
from workloads.schema import Trace

MEASURED = (
    "time_s",
    "power_w",
    "energy_j",
    "ctr_instructions_per_s",
    "ctr_llc_miss_ratio",
    "ctr_mem_bandwidth_gbs",
    "ctr_stall_ratio",
    "rapl_power_w",
    "instructions",
)


def _trace(n: int = 300, seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    procs = rng.choice([1, 2, 4, 8, 16, 32, 64, 128], size=n)
    runtime = rng.uniform(10, 20000, n)
    runtime[rng.random(n) < 0.05] = np.nan  # uncalibrated jobs: NaN work and instructions
    req = procs.astype(float)
    req[rng.random(n) < 0.1] = np.nan  # no request: the recorded size
    treq = runtime * 2
    treq[rng.random(n) < 0.1] = np.nan
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(1, n + 1) * 3,
            "submit_s": np.sort(rng.uniform(0, 1e6, n)),
            "runtime_s": runtime,
            "procs_alloc": pd.array(procs, dtype="Int64"),
            "procs_req": pd.array(req, dtype="Int64"),
            "time_req_s": treq,
            "user_id": pd.array(rng.integers(1, 12, n), dtype="Int64"),
            "executable_id": pd.array(rng.integers(1, 30, n), dtype="Int64"),
        }
    )
    return Trace(jobs=jobs, header={"MaxNodes": 64, "MaxProcs": 64 * 16}, name="synthetic")


def _two_types() -> Platform:
    thin = homogeneous_platform(64, 16).node_types[0]
    fat = NodeType(
        name="fat",
        count=16,
        cores_per_node=32,
        pstates=(PState(1.0, 120.0, 200.0), PState(2.0, 130.0, 300.0), PState(3.0, 140.0, 420.0)),
    )
    return Platform(name="two", node_types=(NodeType(**{**thin.__dict__, "name": "thin"}), fat))


@pytest.fixture(scope="module")
def setup():
    tr = _trace()
    platform = _two_types()
    truth = assign_ground_truth(tr, platform, preset="hybrid-mix", seed=3)
    assert truth.hybrid_.any() and (~truth.hybrid_).any()
    return tr, platform, truth


def _reference(truth, trace, node_type, j, nodes, freq, cores, runtime, power, e, noise):
    """The documented formulas, row by row, with numpy float64 scalars."""
    tp = truth._type(node_type)
    jobs = trace.jobs
    cpn = np.float64(tp.cores_per_node)
    fmax = np.float64(tp.fmax_ghz)
    tr = truth.traits_
    cols: dict[str, list] = {name: [] for name in RUN_COLUMNS}

    def m(s, x):
        return np.maximum(1.0 + s * x, 0.05)

    for i, job in enumerate(j):
        app = truth.application[job]
        a = np.clip(truth.alpha_[app], 0.0, 1.0)
        ps = tp.hybrid.sys_idle_w[app] if truth.hybrid_[app] else tp.p_static_w[app]
        instr = truth.instructions_[job]
        n, c, f = np.float64(nodes[i]), np.float64(cores[i]), np.float64(freq[i])
        t, p = np.float64(runtime[i]), np.float64(power[i])
        ei = e[:, i]
        x = f / fmax
        fluid = (1.0 - a) + a / x
        phi = (a / x) / fluid
        u = c / cpn
        time_s = t * m(noise, ei[0])
        power_w = p * m(noise, ei[1])
        llc = np.clip(0.02 + 0.5 * (1.0 - a) + tr.llc_offset[app], 0.001, 0.999)
        stall = np.clip(0.9 * (1.0 - phi) + tr.stall_offset[app], 0.0, 1.0)
        rapl = tr.rapl_static_share[app] * ps + tr.rapl_dyn_share[app] * np.maximum(p - ps, 0.0)
        values = {
            "time_s": time_s,
            "power_w": power_w,
            "energy_j": time_s * power_w * n,
            "instructions": instr * m(noise, ei[2]),
            "ctr_instructions_per_s": instr / (n * c * t) * m(noise, ei[3]),
            "ctr_llc_miss_ratio": np.clip(llc * m(noise, ei[4]), 0.0, 1.0),
            "ctr_mem_bandwidth_gbs": (
                tr.bw_scale_gbs[app] * u * (0.05 + (1.0 - a)) / fluid * m(noise, ei[5])
            ),
            "ctr_stall_ratio": np.clip(stall * m(noise, ei[6]), 0.0, 1.0),
            "rapl_power_w": rapl * m(noise, ei[7]),
        }
        for name, v in values.items():
            cols[name].append(v)
        req = jobs["procs_req"].iloc[job]
        if pd.isna(req):
            req_nodes = truth.recorded_nodes[job]
        else:
            req_nodes = max(1.0, np.ceil(float(req) / tp.cores_per_node))
        cols["job_id"].append(jobs["job_id"].iloc[job])
        cols["application"].append(app)
        cols["submit_s"].append(jobs["submit_s"].iloc[job])
        cols["node_type"].append(tp.name)
        cols["nodes"].append(int(n))
        cols["cores"].append(int(c))
        cols["freq_ghz"].append(f)
        cols["requested_nodes"].append(int(req_nodes) if np.isfinite(req_nodes) else -1)
        cols["requested_time_s"].append(jobs["time_req_s"].iloc[job])
    dtypes = {"job_id": np.int64, "application": np.int64, "nodes": np.int64, "cores": np.int64}
    dtypes["requested_nodes"] = np.int64
    dtypes["node_type"] = object
    return {
        name: np.array(cols[name], dtype=dtypes.get(name, np.float64)).reshape(len(j))
        for name in RUN_COLUMNS
    }


def _assert_identical(got: dict, want: dict) -> None:
    assert tuple(got) == RUN_COLUMNS
    for name in RUN_COLUMNS:
        g, w = got[name], want[name]
        assert isinstance(g, np.ndarray) and g.ndim == 1, name
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
        if g.dtype == object:
            assert g.tolist() == w.tolist(), name
        else:
            assert g.tobytes() == w.tobytes(), (name, g, w)


def _inputs(truth, platform, rng, k):
    t_index = int(rng.integers(len(platform.node_types)))
    nt = platform.node_types[t_index]
    j = rng.integers(0, len(truth.application), k).astype(np.int64)
    nodes = rng.integers(1, 65, k).astype(np.int64)
    cores = rng.integers(1, nt.cores_per_node + 1, k).astype(np.int64)
    freqs = np.array([p.freq_ghz for p in nt.pstates])
    freq = np.where(rng.random(k) < 0.7, rng.choice(freqs, k), rng.uniform(0.5, 4.0, k))
    t_true, p_true = truth.evaluate(j, nt, nodes, freq, cores)
    runtime = t_true * rng.uniform(1.0, 1.5, k)  # contention stretches runs
    power = p_true * rng.uniform(0.9, 1.1, k)
    return nt, j, nodes, freq, cores, runtime, power


@pytest.mark.parametrize("k", [1, 2, 5, 50])
def test_measure_is_the_documented_formulas(setup, k):
    tr, platform, truth = setup
    rng = np.random.default_rng(k)
    for trial in range(40):
        nt, j, nodes, freq, cores, runtime, power = _inputs(truth, platform, rng, k)
        noise = float(rng.choice([0.0, 0.02, 0.3, 2.0]))  # 2.0 often hits the 0.05 floor
        gen = np.random.default_rng(trial)
        ref_gen = np.random.default_rng(trial)
        e = ref_gen.standard_normal((8, k))
        node_type = nt if trial % 2 else nt.name
        got = truth.measure(
            j, node_type, nodes, freq, cores, runtime, power, gen, noise=noise, as_columns=True
        )
        want = _reference(truth, tr, nt, j, nodes, freq, cores, runtime, power, e, noise)
        _assert_identical(got, want)
        assert gen.bit_generator.state == ref_gen.bit_generator.state
        assert gen.standard_normal() == ref_gen.standard_normal()


def _both_paths(truth, monkeypatch, *args, **kwargs):
    """measure() through the small-batch path and through the vectorised path."""
    *rest, seed = args
    fast = truth.measure(*rest, np.random.default_rng(seed), as_columns=True, **kwargs)
    with monkeypatch.context() as mp:
        mp.setattr(applications, "SMALL_BATCH", 0)
        slow = truth.measure(*rest, np.random.default_rng(seed), as_columns=True, **kwargs)
    return fast, slow


def test_small_batch_path_equals_vectorised_path(setup, monkeypatch):
    _, platform, truth = setup
    rng = np.random.default_rng(7)
    for trial in range(200):
        k = int(rng.integers(1, SMALL_BATCH + 1))
        nt, j, nodes, freq, cores, runtime, power = _inputs(truth, platform, rng, k)
        fast, slow = _both_paths(
            truth, monkeypatch, j, nt, nodes, freq, cores, runtime, power, trial
        )
        _assert_identical(fast, slow)


def test_edge_values_are_identical(setup, monkeypatch):
    """Zero runtimes (division by zero: numpy's inf / NaN), NaN truth, power at the
    static power, zero frequency, one core, NaN nodes: both paths agree bit for bit."""
    _, platform, truth = setup
    nt = platform.node_types[1]
    tp = truth._type(nt)
    j = np.array([0, 1, 2, 3, 4, 5], dtype=np.int64)
    apps = truth.application[j]
    ps = np.where(truth.hybrid_[apps], tp.hybrid.sys_idle_w[apps], tp.p_static_w[apps])
    nodes = np.array([1, 2, 3, 4, 5, 6], dtype=np.int64)
    freq = np.array([2.0, 3.0, 1.0, 2.5, 3.0, 1.5])
    cores = np.array([1, 32, 16, 8, 4, 2], dtype=np.int64)
    runtime = np.array([0.0, 100.0, np.nan, 5.0, np.inf, 7.0])
    power = np.array([200.0, np.nan, 150.0, ps[3], ps[4] - 1.0, -0.0])
    cases = [
        (runtime, power, freq, nodes),
        (runtime[1:], power[1:], freq[1:], nodes[1:]),  # no zero division: the Python path
        (runtime[1:], power[1:], np.array([0.0, 2.0, 1.0, 3.0, 2.0]), nodes[1:]),  # f = 0
        (runtime[1:], power[1:], freq[1:], np.array([np.nan, 1, 2, 3, 4])),  # NaN nodes
    ]
    with np.errstate(all="ignore"):
        for seed, (t, p, f, n) in enumerate(cases):
            kk = len(t)
            for noise in (0.0, 0.02, 3.0):
                fast, slow = _both_paths(
                    truth, monkeypatch, j[-kk:], nt, n, f, cores[-kk:], t, p, seed, noise=noise
                )
                _assert_identical(fast, slow)


def test_scalar_and_default_arguments(setup, monkeypatch):
    """Scalars broadcast, ``cores=None`` means all cores, ``runtime_s=None`` the truth."""
    _, platform, truth = setup
    ok = np.flatnonzero(np.isfinite(truth.work_))
    for nt in platform.node_types:
        for args in [
            (int(ok[0]), nt, 4, 2.0, None, None, None),
            (ok[:3], nt.name, 4, np.array([1.0, 2.0, 3.0]), 2, None, 500.0),
            (ok[:2], nt, np.array([2]), 2.0, None, np.array([10.0, 20.0]), None),
            (ok[:20], nt, 3, 2.0, None, None, None),  # above SMALL_BATCH: vectorised
        ]:
            fast, slow = _both_paths(truth, monkeypatch, *args, 11, noise=0.05)
            _assert_identical(fast, slow)
            assert len(fast["time_s"]) == np.atleast_1d(args[0]).shape[0]


def test_dataframe_output_and_defaults(setup):
    _, platform, truth = setup
    nt, j, nodes, freq, cores, runtime, power = _inputs(
        truth, platform, np.random.default_rng(5), 3
    )
    cols = truth.measure(
        j, nt, nodes, freq, cores, runtime, power, np.random.default_rng(1), as_columns=True
    )
    frame = truth.measure(j, nt, nodes, freq, cores, runtime, power, np.random.default_rng(1))
    assert tuple(frame.columns) == RUN_COLUMNS
    for name in RUN_COLUMNS:
        assert frame[name].to_numpy().tobytes() == cols[name].tobytes() or name == "node_type"
    assert frame["node_type"].tolist() == cols["node_type"].tolist()
    # noise=None: the truth's default
    a = truth.measure(
        j, nt, nodes, freq, cores, runtime, power, np.random.default_rng(2), as_columns=True
    )
    b = truth.measure(
        j,
        nt,
        nodes,
        freq,
        cores,
        runtime,
        power,
        np.random.default_rng(2),
        noise=truth.noise,
        as_columns=True,
    )
    _assert_identical(a, b)
    with pytest.raises(ValueError, match="noise"):
        truth.measure(
            j, nt, nodes, freq, cores, runtime, power, np.random.default_rng(2), noise=-1.0
        )


def test_tables_follow_replaced_parameters(setup):
    """The cached per-application tables are rebuilt when a hidden array is replaced."""
    tr, platform, _ = setup
    truth = assign_ground_truth(tr, platform, preset="npb-mix", seed=1)
    nt, j, nodes, freq, cores, runtime, power = _inputs(
        truth, platform, np.random.default_rng(9), 2
    )
    before = truth.measure(
        j, nt, nodes, freq, cores, runtime, power, np.random.default_rng(0), as_columns=True
    )
    truth.alpha_ = np.clip(truth.alpha_ + 0.1, 0.0, 1.0)
    after = truth.measure(
        j, nt, nodes, freq, cores, runtime, power, np.random.default_rng(0), as_columns=True
    )
    e = np.random.default_rng(0).standard_normal((8, 2))
    want = _reference(truth, tr, nt, j, nodes, freq, cores, runtime, power, e, truth.noise)
    _assert_identical(after, want)
    assert before["ctr_llc_miss_ratio"].tobytes() != after["ctr_llc_miss_ratio"].tobytes()


def _rows_as_columns(truth, j, nt, nodes, freq, cores, runtime, power, seed):
    """measure_row_values as RunRows columns (the engine's rows) and measure's columns."""
    from predictors.base import RUN_ROW_COLUMNS, RunRows

    gen = np.random.default_rng(seed)
    values = truth.measure_row_values(
        j.tolist(),
        nt,
        nodes.tolist(),
        freq.tolist(),
        cores.tolist(),
        runtime.tolist(),
        power.tolist(),
        gen,
    )
    tail = truth.measure(
        j, nt, nodes, freq, cores, runtime, power, np.random.default_rng(seed), as_columns=True
    )
    rows = [
        (
            tail["job_id"][i],
            v[0],
            tail["submit_s"][i],
            *v[1:],
            tail["requested_nodes"][i],
            tail["requested_time_s"][i],
            False,
        )
        for i, v in enumerate(values)
    ]
    got = RunRows(rows).to_batch().cols
    assert tuple(got) == RUN_ROW_COLUMNS and got["killed"].dtype == bool
    del got["killed"]
    return got, tail, gen


def test_row_values_equal_measure_columns(setup):
    """The engine's rows (measure_row_values, RunRows) hold measure's values bit for bit,
    with its dtypes, and take the same draws; above SMALL_BATCH too."""
    _, platform, truth = setup
    rng = np.random.default_rng(17)
    for trial, k in enumerate([1] * 30 + [2, 3, 7, SMALL_BATCH, SMALL_BATCH + 5, 40]):
        nt, j, nodes, freq, cores, runtime, power = _inputs(truth, platform, rng, k)
        got, want, gen = _rows_as_columns(truth, j, nt, nodes, freq, cores, runtime, power, trial)
        _assert_identical(got, want)
        ref = np.random.default_rng(trial)
        ref.standard_normal((8, k))
        assert gen.standard_normal() == ref.standard_normal()


def test_row_values_edge_values(setup):
    """A zero runtime (division by zero) takes the vectorised formulas with the same draws."""
    _, platform, truth = setup
    nt = platform.node_types[0]
    j = np.array([0, 1, 2], dtype=np.int64)
    nodes = np.array([1, 2, 3], dtype=np.int64)
    cores = np.array([1, 16, 8], dtype=np.int64)
    freq = np.array([2.4, 1.2, 2.0])
    with np.errstate(all="ignore"):
        for runtime in (np.array([0.0, 100.0, 5.0]), np.array([np.nan, 100.0, np.inf])):
            power = np.array([200.0, 150.0, 90.0])
            got, want, _ = _rows_as_columns(truth, j, nt, nodes, freq, cores, runtime, power, 3)
            _assert_identical(got, want)


def _bits(row: tuple) -> list:
    """A measured tuple with its floats as bytes (NaN compares equal to NaN)."""
    return [np.float64(v).tobytes() if isinstance(v, float) else v for v in row]


def test_row_measurer_equals_row_values_of_one_run(setup):
    """row_measurer(node_type, rng) measures a run as measure_row_values measures a
    batch of that run alone: the same tuple (values, types), the same 8 draws; one
    measurer serves a sequence of runs, each taking the next 8 draws of ``rng``."""
    _, platform, truth = setup
    rng = np.random.default_rng(23)
    for t_index, nt in enumerate(platform.node_types):
        gen, ref = np.random.default_rng(t_index), np.random.default_rng(t_index)
        measure = truth.row_measurer(nt, gen)
        for _ in range(60):
            _, j, nodes, freq, cores, runtime, power = _inputs(truth, platform, rng, 1)
            args = (int(j[0]), int(nodes[0]), float(freq[0]), int(cores[0]))
            t, p = float(runtime[0]), float(power[0])
            got = measure(*args, t, p)
            (want,) = truth.measure_row_values(
                [args[0]], nt, [args[1]], [args[2]], [args[3]], [t], [p], ref
            )
            assert [type(v) for v in got] == [type(v) for v in want]
            assert _bits(got) == _bits(want)
            assert gen.bit_generator.state == ref.bit_generator.state


def test_row_measurer_edge_values(setup):
    """A zero, NaN or infinite runtime (division by zero in plain Python) gives numpy's
    values with the same draws, as measure_row_values does."""
    _, platform, truth = setup
    nt = platform.node_types[1]
    gen, ref = np.random.default_rng(4), np.random.default_rng(4)
    measure = truth.row_measurer(nt, gen)
    with np.errstate(all="ignore"):
        for j, runtime in enumerate([0.0, np.nan, np.inf, 0.0, 12.0]):
            got = measure(j, 3, 2.0, 16, runtime, 180.0)
            (want,) = truth.measure_row_values([j], nt, [3], [2.0], [16], [runtime], [180.0], ref)
            assert _bits(got) == _bits(want)
            assert gen.bit_generator.state == ref.bit_generator.state
    assert np.isinf(measure(0, 3, 2.0, 16, 0.0, 180.0)[8])  # instructions / (n c 0)


def test_a_batch_is_measured_run_by_run_with_its_columns_of_draws(setup):
    """measure_row_values of k runs draws (8, k) normals once, and measures run i with
    column i of them exactly as the row measurer measures that run given those draws
    (``draws=``): one per-run measurement for batches and single runs, also when a
    run divides by zero (its fallback leaves the other runs' values alone)."""
    _, platform, truth = setup
    rng = np.random.default_rng(31)
    for _ in range(4):
        for k in (2, 5, SMALL_BATCH):
            nt, j, nodes, freq, cores, runtime, power = _inputs(truth, platform, rng, k)
            runtime[k // 2] = 0.0  # division by zero: numpy's values for this run
            args = (j.tolist(), nodes.tolist(), freq.tolist(), cores.tolist())
            gen, ref = np.random.default_rng(k), np.random.default_rng(k)
            with np.errstate(all="ignore"):
                batch = truth.measure_row_values(
                    args[0], nt, *args[1:], runtime.tolist(), power.tolist(), gen
                )
                draws = ref.standard_normal((8, k)).T.tolist()
                measure = truth.row_measurer(nt, np.random.default_rng(0))
                one_by_one = [
                    measure(*run, draws=d)
                    for run, d in zip(zip(*args, runtime.tolist(), power.tolist()), draws)
                ]
            assert [_bits(r) for r in batch] == [_bits(r) for r in one_by_one]
            assert np.isinf(batch[k // 2][8])  # instructions / (n c 0)
            assert gen.bit_generator.state == ref.bit_generator.state
