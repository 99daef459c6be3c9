"""The predict_grid fast path (cached per-application shape tables) and lazy ADEPT refits."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.adept import AdeptPredictor
from predictors.base import Observations, Queries, RunBatch
from predictors.registry import get_predictor
from workloads.applications import assign_ground_truth


def _setup(seed: int = 0):
    from experiments.runner import build_platform, load_trace
    from workloads.bundled import builtin_trace_path

    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=300)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=seed)
    idx = np.arange(len(trace.jobs))
    t = platform.node_types[0]
    rng = np.random.default_rng(seed)
    nodes = rng.integers(1, t.count + 1, len(idx))
    freqs = np.asarray(t.freqs_ghz)[rng.integers(0, len(t.freqs_ghz), len(idx))]
    runs = truth.measure(idx, t, nodes, freqs, None, None, None, rng)
    return trace, platform, runs


def _fitted_on_half(spec: str):
    """A predictor fitted on the first half of the runs, and the full grid of the node type."""
    _trace, platform, runs = _setup()
    half = len(runs) // 2
    p = get_predictor(spec).fit(Observations(runs=runs.iloc[:half], platform=platform))
    t = platform.node_types[0]
    sizes = np.arange(1, t.count + 1, dtype=np.int64)
    freqs = np.asarray(t.freqs_ghz, dtype=float)
    return p, runs, half, t, str(t.name), sizes, freqs


def _generic(p, app, name, sizes, freqs, rn, rt):
    K, F = len(sizes), len(freqs)
    q = Queries(
        application=np.full(K * F, app),
        nodes=np.repeat(sizes, F),
        freq_ghz=np.tile(freqs, K),
        node_type=np.full(K * F, name, dtype=object),
        requested_nodes=np.full(K * F, rn),
        requested_time_s=np.full(K * F, rt),
    )
    pred = p.predict(q)
    return tuple(a.reshape(K, F) for a in (pred.time_s, pred.power_w, pred.energy_j, pred.reliable))


@pytest.mark.parametrize("spec", ["adept+fluid", "adept", "fluid", "amdahl", "dvfs-node-type"])
def test_fast_path_equals_generic_and_follows_refits(spec: str) -> None:
    p, runs, half, t, name, sizes, freqs = _fitted_on_half(spec)
    apps = [*np.unique(runs["application"])[:6].tolist(), 10_000]  # + an unknown application

    def check() -> list:
        out = []
        for app in apps:
            for rn, rt in ((4, 3600.0), (1, float("nan")), (t.count + 5, 100.0)):
                fast = p.predict_grid(app, name, sizes, freqs, rn, rt)
                assert fast is not None
                slow = _generic(p, app, name, sizes, freqs, rn, rt)
                for a, b in zip(fast, slow):
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
                out.append(fast[0].copy())
        return out

    before = check()
    # updating (a RunBatch, as the engine hands it) must invalidate the cached tables
    p.update(RunBatch.from_frame(runs.iloc[half:]))
    after = check()
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))


def test_lazy_adept_refits_equal_eager_ones() -> None:
    _, platform, runs = _setup(seed=1)
    # exact refits (refit_tol=0): the result does not depend on when refits happen
    lazy = AdeptPredictor(refit_tol=0.0).fit(Observations(runs=runs.iloc[:100], platform=platform))
    eager = AdeptPredictor(refit_tol=0.0).fit(Observations(runs=runs.iloc[:100], platform=platform))
    eager._lazy_refit = False
    for lo in range(100, len(runs), 25):
        part = runs.iloc[lo : lo + 25]
        lazy.update(part)
        eager.update(part)
    q = Queries(
        application=np.repeat(np.unique(runs["application"])[:5], 4),
        nodes=np.tile([1, 3, 8, 20], 5),
        freq_ghz=np.full(20, platform.node_types[0].fmax_ghz),
        requested_nodes=np.full(20, 4),
        requested_time_s=np.full(20, 1800.0),
    )
    a, b = lazy.predict(q), eager.predict(q)
    np.testing.assert_array_equal(a.time_s, b.time_s)
    np.testing.assert_array_equal(a.reliable, b.reliable)
    assert lazy.n_refits_ <= eager.n_refits_


@pytest.mark.parametrize("spec", ["adept+fluid", "adept", "fluid", "amdahl"])
def test_grid_shape_times_scale_is_predict_grid(spec: str) -> None:
    p, runs, half, _t, name, sizes, freqs = _fitted_on_half(spec)
    # applications with runs in both halves (the update below refits them)
    both = np.intersect1d(runs["application"].iloc[:half], runs["application"].iloc[half:])
    apps = both[:8].tolist()
    shapes = {}
    for app in [*apps, 10_000]:
        for rn, rt in ((4, 3600.0), (1, float("nan")), (2, 50.0)):
            got = p.grid_shape(app, name, sizes, freqs, rn, rt)
            fast = p.predict_grid(app, name, sizes, freqs, rn, rt)
            parts = [p.node_, p.freq_] if spec == "adept+fluid" else [p]
            # a shape exactly when the application has a model (no fallback rows here)
            assert (got is not None) == all(q.model_of(app) is not None for q in parts)
            if got is None:
                continue
            shape, scale = got
            time = scale * shape.time
            np.testing.assert_allclose(time, fast[0], rtol=1e-13, atol=0)
            np.testing.assert_array_equal(shape.power_w, fast[1])
            np.testing.assert_allclose(time * shape.power_w * sizes[:, None], fast[2], rtol=1e-13)
            np.testing.assert_array_equal(shape.reliable, fast[3])
            # one shape object per application (the job only changes the scale)
            assert shapes.setdefault(app, shape) is shape
    assert 10_000 not in shapes  # no model: no shape (the caller falls back)
    assert shapes
    # a refit gives the application a new shape object
    p.update(RunBatch.from_frame(runs.iloc[half:]))
    for app, old in shapes.items():
        got = p.grid_shape(app, name, sizes, freqs, 4, 3600.0)
        assert got is not None and got[0] is not old
