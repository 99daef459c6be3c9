"""The predict_grid fast path (cached per-application shape tables) and lazy ADEPT refits."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.adept import AdeptPredictor
from predictors.base import Observations, Queries, RunBatch
from predictors.registry import get_predictor
from tests.predictors.helpers import kth_runs


def _fitted_on_half(spec: str):
    """A predictor fitted on the first half of the runs, and the full grid of the node type."""
    _trace, platform, runs = kth_runs()
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
    _, platform, runs = kth_runs(seed=1)
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
    for app in apps:  # an infinite requested size is no error (it used to overflow int())
        got = p.grid_shape(app, name, sizes, freqs, float("inf"), 60.0)
        fast = p.predict_grid(app, name, sizes, freqs, float("inf"), 60.0)
        if got is not None:
            np.testing.assert_allclose(got[1] * got[0].time, fast[0], rtol=1e-13, atol=0)
    # a refit gives the application a new shape object
    p.update(RunBatch.from_frame(runs.iloc[half:]))
    for app, old in shapes.items():
        got = p.grid_shape(app, name, sizes, freqs, 4, 3600.0)
        assert got is not None and got[0] is not old


def _shape_answers(p, calls, general: bool) -> list:
    """``grid_shape`` answers to ``calls`` (``("update", runs)`` or ``("ask", args)``);
    ``general``: the composite's kept answers are forgotten before each question, so
    every answer comes from its general path."""
    out = []
    for kind, args in calls:
        if kind == "update":
            p.update(args)
            continue
        if general:
            p._shape_names.clear()
        got = p.grid_shape(*args)
        out.append(None if got is None else (got[0], got[1]))
    return out


def test_composite_kept_shapes_equal_the_general_path() -> None:
    """The composite's kept answers (fast path) are the general path's, object for
    object, through ADEPT's lazy refits and fluid refits (new tables, and the
    fluid prior alpha moving for applications without their own)."""
    _trace, platform, runs = kth_runs(seed=2)
    t = platform.node_types[0]
    name = str(t.name)
    freqs = np.asarray(t.freqs_ghz, dtype=float)
    rng = np.random.default_rng(3)
    start = len(runs) // 3
    apps = np.unique(runs["application"].iloc[:start]).tolist()[:10]
    every = np.arange(1, t.count + 1, dtype=np.int64)
    every.flags.writeable = False  # as the chooser passes its sizes: known by identity
    size_sets = [every, np.arange(1, t.count + 1, dtype=np.int64), np.array([1, 2, 4, 8])]
    calls: list = []
    for lo in range(start, len(runs), 10):
        calls.append(("update", RunBatch.from_frame(runs.iloc[lo : lo + 10])))
        for _ in range(20):
            app = int(rng.choice(apps))
            sizes = size_sets[int(rng.integers(0, 3))]
            rn = float(rng.choice([1, 2.5, 4, t.count + 3, float("nan"), float("inf"), 0.5]))
            rt = float(rng.choice([60.0, 3600.0, float("nan"), 0.0]))
            calls.append(("ask", (app, name, sizes, freqs, rn, rt)))
            calls.append(("ask", (app, None, sizes, freqs[1:], rn, rt)))  # not ending at Fmax
    fitted = [
        get_predictor("adept+fluid").fit(Observations(runs=runs.iloc[:start], platform=platform))
        for _ in range(2)
    ]
    fast = _shape_answers(fitted[0], calls, general=False)
    slow = _shape_answers(fitted[1], calls, general=True)
    assert sum(a is not None for a in fast) > 100
    ids_fast: dict[int, int] = {}
    ids_slow: dict[int, int] = {}
    for a, b in zip(fast, slow):
        assert (a is None) == (b is None)
        if a is None:
            continue
        assert a[1] == b[1] or (a[1] != a[1] and b[1] != b[1])  # the scale, bit for bit
        for x, y in zip(
            (a[0].time, a[0].power_w, a[0].reliable), (b[0].time, b[0].power_w, b[0].reliable)
        ):
            np.testing.assert_array_equal(x, y)
        # the same object exactly when the general path gives the same object
        assert ids_fast.setdefault(id(a[0]), id(b[0])) == id(b[0])
        assert ids_slow.setdefault(id(b[0]), id(a[0])) == id(a[0])
    assert fitted[0].node_.n_refits_ == fitted[1].node_.n_refits_


def test_composite_knows_sizes_by_identity_only_when_nothing_can_change_them() -> None:
    """The composite recognises a sizes array it kept an answer for by identity only
    when the array is read-only and owns its values; an array changed in place
    (writable, or a read-only view of a writable one) gets the answer for its new
    values, as a fresh array with those values does."""
    p, runs, _half, t, name, _sizes, freqs = _fitted_on_half("adept+fluid")
    app = next(
        a
        for a in np.unique(runs["application"]).tolist()
        if p.grid_shape(a, name, np.arange(1, 9), freqs, 4, 3600.0) is not None
    )

    def times(sizes) -> np.ndarray:
        shape, scale = p.grid_shape(app, name, sizes, freqs, 4, 3600.0)
        return scale * shape.time

    small, large = np.arange(1, 9), np.arange(t.count - 7, t.count + 1)
    want_small, want_large = times(small.copy()), times(large.copy())
    assert not np.array_equal(want_small, want_large)
    frozen = small.copy()
    frozen.flags.writeable = False
    first = p.grid_shape(app, name, frozen, freqs, 4, 3600.0)
    assert p.grid_shape(app, name, frozen, freqs, 4, 3600.0)[0] is first[0]
    # arrays first asked with values new to the composite (it keeps its answer with
    # them), then changed in place to values it kept an answer for
    writable = small + 1
    assert times(writable).shape == want_large.shape
    writable[:] = large
    np.testing.assert_array_equal(times(writable), want_large)
    base = small + 2
    view = base.view()
    view.flags.writeable = False
    assert times(view).shape == want_large.shape
    base[:] = large
    np.testing.assert_array_equal(times(view), want_large)


@pytest.mark.parametrize("spec", ["adept+fluid", "amdahl+fluid", "fluid"])
def test_shape_columns_rows_and_maximum_are_its_table(spec: str) -> None:
    """A shape's time_column and time_row (what a chooser reads of a shape) and its
    time_max are the columns, rows and maximum of its time table, bit for bit, before
    the table is read (a composite's shape computes them without it) and after."""
    p, runs, half, _t, name, sizes, freqs = _fitted_on_half(spec)
    sizes.flags.writeable = False
    apps = np.unique(runs["application"].iloc[:half]).tolist()
    checked = 0
    for app in apps:
        got = p.grid_shape(app, name, sizes, freqs, 4, 3600.0)
        if got is None:
            continue
        shape = got[0]
        top = len(freqs) - 1
        before = [shape.time_column(j).tobytes() for j in range(len(freqs))]
        rows = [shape.time_row(i).tobytes() for i in (0, len(sizes) // 3, len(sizes) - 1)]
        time_max = shape.time_max
        table = np.asarray(shape.time)
        assert time_max == float(table.max())
        assert before == [np.ascontiguousarray(table[:, j]).tobytes() for j in range(len(freqs))]
        assert rows == [table[i].tobytes() for i in (0, len(sizes) // 3, len(sizes) - 1)]
        assert shape.time_column(top).tobytes() == before[top]  # once the table is read
        assert shape.time_row(1).tobytes() == table[1].tobytes()
        checked += 1
    assert checked >= 3


def test_sizes_keys_are_kept_per_frozen_array_only() -> None:
    """A predictor keys a grid's sizes by their bytes; it keeps one bytes object per
    read-only array that owns its values (hashed once), and makes a new one for any
    other array, whose values may change between calls."""
    p, _runs, _half, _t, _name, sizes, _freqs = _fitted_on_half("adept")
    frozen = sizes.copy()
    frozen.flags.writeable = False
    key = p._sizes_bytes(frozen)
    assert key == sizes.tobytes() and p._sizes_bytes(frozen) is key
    writable = sizes.copy()
    first = p._sizes_bytes(writable)
    writable[0] = 7
    assert first == sizes.tobytes() and p._sizes_bytes(writable) == writable.tobytes()
    view = writable.view()
    view.flags.writeable = False  # read-only, but a view of a writable array
    assert p._sizes_bytes(view) is not p._sizes_bytes(view)
