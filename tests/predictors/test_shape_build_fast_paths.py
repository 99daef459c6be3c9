"""Fast paths of a new grid shape and of fallback grids, pinned bit for bit against
the general computations they replace."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictors.base import GridShape, Observations, RunBatch
from predictors.baselines import NodeTypeInfo, PerApplicationPredictor, PlatformInfo
from predictors.composite import CompositePredictor
from predictors.dvfs import FluidParams, FluidPredictor
from predictors.registry import get_predictor
from tests.predictors.helpers import kth_runs, same_bits


def _reference_entry(p: PerApplicationPredictor, app: int, name: str, sizes, freqs):
    """The shape of ``_shape_entry`` as it was computed before the fast path: rows by
    fancy indexing, four element-wise tests."""
    meta = p._grid_meta(name, freqs)
    count, top = meta[0], meta[4]
    state = p.state_.get(app)
    if state is None:
        return None
    if not (len(sizes) and int(sizes.min()) >= 1 and int(sizes.max()) <= count):
        return None
    tables = p._grid_tables(app, state)
    tau_t, pw_t, rel_t = p._table(app, state, tables, name, meta)
    rows = sizes - 1
    tau, pw = tau_t[rows], pw_t[rows]
    with np.errstate(all="ignore"):
        good = np.isfinite(tau) & (tau > 0) & np.isfinite(pw) & (pw > 0)
    if not good.all():
        return None
    return GridShape(tau, pw, rel_t[rows]), (tau_t[:, top].tolist() if top >= 0 else None)


def _assert_same_entry(got, ref) -> None:
    assert (got is None) == (ref is None)
    if got is None:
        return
    shape, ref_col = got[0], got[1]
    rshape, rref = ref
    for a, b in (
        (shape.time, rshape.time),
        (shape.power_w, rshape.power_w),
        (shape.reliable, rshape.reliable),
    ):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert shape.time_max == rshape.time_max
    assert (None if ref_col is None else ref_col.tolist()) == rref


@pytest.mark.parametrize("spec", ["adept", "fluid", "amdahl", "dvfs-node-type", "dvfs-per-app"])
def test_new_shapes_equal_the_reference(spec: str) -> None:
    """Every size set (the full range: the table itself; a subset, a permutation,
    sizes out of range, none) and tables with non-finite or non-positive cells."""
    _, platform, runs = kth_runs()
    p = get_predictor(spec).fit(Observations(runs=runs, platform=platform))
    t = platform.node_types[0]
    name = str(t.name)
    freqs = np.asarray(t.freqs_ghz, dtype=float)
    full = np.arange(1, t.count + 1, dtype=np.int64)
    size_sets = [
        full,
        np.array([1, 2, 4, 8], dtype=np.int64),
        full[::-1].copy(),
        np.array([3, 3, 1], dtype=np.int64),
        np.array([0, 1], dtype=np.int64),
        np.array([t.count + 1], dtype=np.int64),
        np.array([], dtype=np.int64),
        full.astype(np.int32),
    ]
    apps = [a for a in np.unique(runs["application"]).tolist() if p.model_of(a) is not None][:6]
    assert apps
    for app in apps:
        for sizes in size_sets:
            for fs in (freqs, freqs[1:], freqs[:1]):
                p._app_tables.pop(app, None)
                got = p._shape_entry(app, name, sizes, fs)
                p._app_tables.pop(app, None)
                _assert_same_entry(got, _reference_entry(p, app, name, sizes, fs))
    # tables with a bad cell: no shape (the full range and a subset containing it)
    app = apps[0]
    state = p.state_[app]
    meta = p._grid_meta(name, freqs)
    for bad in (math.nan, math.inf, 0.0, -1.0):
        for which in (0, 1):
            p._app_tables.pop(app, None)
            tables = p._grid_tables(app, state)
            tau, pw, rel = (
                np.array(a, copy=True) for a in p._table(app, state, tables, name, meta)
            )
            (tau if which == 0 else pw)[2, 1] = bad
            tables[(name, meta[1].tobytes())] = (tau, pw, rel, None)  # bounds unknown
            for sizes in (full, np.array([3, 5], dtype=np.int64), np.array([1, 2], dtype=np.int64)):
                tables.pop(("shape", id(meta), sizes.tobytes()), None)
                got = p._shape_entry(app, name, sizes, freqs)
                _assert_same_entry(got, _reference_entry(p, app, name, sizes, freqs))
                assert (got is None) == bool(3 in sizes)
    p._app_tables.pop(app, None)


def test_outer_table_bounds_are_the_reductions_of_the_tables() -> None:
    """outer_table_bounds (from the column and the rows) is the smallest and largest
    cell of ``col[:, None] * row`` and of the broadcast power row, bit for bit, also
    when products underflow to 0 or overflow to inf; None when a factor is not finite
    and positive or a table is empty."""
    from predictors.baselines import outer_table_bounds

    rng = np.random.default_rng(21)
    odd = [0.0, -1.0, math.inf, math.nan, -0.0]
    with np.errstate(all="ignore"):
        for k in range(3000):
            col = rng.uniform(0.5, 2.0, int(rng.integers(1, 40))) * 10.0 ** rng.integers(-200, 200)
            row = rng.uniform(0.2, 3.0, int(rng.integers(1, 6))) * 10.0 ** rng.integers(-200, 200)
            power = rng.uniform(50.0, 400.0, len(row))
            bad = k % 5 == 0
            if bad:
                (col if k % 2 else row)[0] = float(rng.choice(odd))
            if k % 7 == 0:
                power[-1] = float(rng.choice(odd))
            got = outer_table_bounds(col, row, power)
            if bad:
                assert got is None
                continue
            tau = col[:, None] * row
            pw = np.broadcast_to(power[None, :], tau.shape)
            want = (tau.min(), tau.max(), pw.min(), pw.max())
            assert got is not None and same_bits(got, tuple(float(v) for v in want)), k
    assert outer_table_bounds(np.ones(0), np.ones(3), np.ones(3)) is None
    assert outer_table_bounds(np.ones(4), np.ones(0), np.ones(0)) is None


def test_bounds_of_a_monotone_column_are_those_of_its_reductions() -> None:
    """outer_table_bounds of ``c / n`` and ``c / n + d`` over ascending ``n`` (scalar
    ``c``, ``d`` of any sign, zeros, infinities, NaN, values whose quotients underflow)
    read at the column's ends (col_monotone) is the same as from its reductions."""
    from predictors.baselines import outer_table_bounds

    rng = np.random.default_rng(22)
    odd = [0.0, -0.0, -1.0, math.inf, -math.inf, math.nan, 5e-324, 1e308]
    with np.errstate(all="ignore"):
        for k in range(3000):
            n = np.arange(1, int(rng.integers(1, 6000)) + 1, dtype=np.float64)
            c = float(rng.uniform(0.5, 2.0) * 10.0 ** rng.integers(-320, 300))
            d = float(rng.uniform(0.0, 2.0) * 10.0 ** rng.integers(-320, 300))
            if k % 3 == 0:
                c = float(rng.choice(odd)) if k % 2 else -c
            if k % 5 == 0:
                d = float(rng.choice(odd))
            col = c / n if k % 4 == 0 else c / n + d
            row = rng.uniform(0.2, 3.0, int(rng.integers(1, 6)))
            power = rng.uniform(50.0, 400.0, len(row))
            want = outer_table_bounds(col, row, power)
            got = outer_table_bounds(col, row, power, col_monotone=True)
            assert (got is None) == (want is None), (c, d)
            assert got is None or same_bits(got, want), (c, d)


@pytest.mark.parametrize("spec", ["adept", "fluid", "dvfs-per-app", "adept+fluid"])
def test_table_bounds_of_the_predictors_are_their_tables_bounds(spec: str) -> None:
    """The bounds ADEPT's and the DVFS family's tables come with are the reductions of
    the tables they come with (full P-state sets and subsets, after an update)."""
    _, platform, runs = kth_runs(seed=2)
    half = len(runs) // 2
    p = get_predictor(spec).fit(Observations(runs=runs.iloc[:half], platform=platform))
    parts = [p.node_, p.freq_] if spec == "adept+fluid" else [p]
    t = platform.node_types[0]
    name = str(t.name)
    freqs = np.asarray(t.freqs_ghz, dtype=float)
    checked = 0
    for step in range(2):
        for part in parts:
            part._flush()
            for app, state in part.state_.items():
                if state is None:
                    continue
                for fs in (freqs, freqs[1:], freqs[-1:]):
                    meta = part._grid_meta(name, fs)
                    got = part._compute_table(app, state, name, meta)
                    assert len(got) == 4
                    tau, pw, _, bounds = got
                    if bounds is None:
                        assert not (np.isfinite(tau).all() and (tau > 0).all())
                        continue
                    want = (tau.min(), tau.max(), pw.min(), pw.max())
                    assert same_bits(bounds, tuple(float(v) for v in want)), (app, fs)
                    checked += 1
        if step == 0:
            p.update(RunBatch.from_frame(runs.iloc[half:]))
    assert checked >= 20


class _HalfPowerFluid(FluidPredictor):
    """A subclass with its own params_for (the table must use it)."""

    def params_for(self, model, node_type):
        prm = super().params_for(model, node_type)
        return FluidParams(prm.pstatic_w / 2, prm.pdyn_w, prm.alpha, prm.pcoef)


@pytest.mark.parametrize(
    "spec", ["fluid", "dvfs-node-type", "dvfs-per-app", "dvfs-naive", "half-power-fluid"]
)
def test_dvfs_tables_equal_the_base_tables(spec: str) -> None:
    """DvfsPredictor._compute_table (inline fluid formulas, kept f / Fmax rows, shared
    flags) equals the base class's table from _shape on every cell, before and after
    an update (and for an application without its own alpha: the prior)."""
    _, platform, runs = kth_runs(seed=1)
    half = len(runs) // 2
    obs = Observations(runs=runs.iloc[:half], platform=platform)
    p = _HalfPowerFluid().fit(obs) if spec == "half-power-fluid" else get_predictor(spec).fit(obs)
    t = platform.node_types[0]
    name = str(t.name)
    freqs = np.asarray(t.freqs_ghz, dtype=float)
    for step in range(2):
        for app, state in p.state_.items():
            if state is None:
                continue
            for fs in (freqs, freqs[1:], freqs[-1:]):
                meta = p._grid_meta(name, fs)
                fast = p._compute_table(app, state, name, meta)
                slow = PerApplicationPredictor._compute_table(p, app, state, name, meta)
                for a, b in zip(fast[:3], slow[:3]):  # (the bounds: the test above)
                    assert a.shape == b.shape
                    np.testing.assert_array_equal(a, b)
        if step == 0:
            p.update(RunBatch.from_frame(runs.iloc[half:]))


def test_busy_power_kept_values_are_interp_and_fresh() -> None:
    info = NodeTypeInfo(
        "n", np.array([1.0, 2.0, 3.0]), np.array([100.0, 150.0, 230.0]), np.full(3, 50.0)
    )
    freqs = np.array([1.0, 1.5, 3.0])
    first = info.busy_power(freqs)
    np.testing.assert_array_equal(first, np.interp(freqs, info.freqs_ghz, info.busy_power_w))
    first[:] = -1.0  # the caller owns the array it got
    again = info.busy_power(freqs.copy())
    assert again is not first
    np.testing.assert_array_equal(again, np.interp(freqs, info.freqs_ghz, info.busy_power_w))
    unknown = NodeTypeInfo("u", np.array([1.0, 2.0]), np.full(2, np.nan), np.full(2, np.nan))
    for _ in range(2):
        np.testing.assert_array_equal(unknown.busy_power(freqs), np.full(3, 200.0))
    big = np.linspace(1.0, 3.0, 100)  # not kept: computed every time
    np.testing.assert_array_equal(
        info.busy_power(big), np.interp(big, info.freqs_ghz, info.busy_power_w)
    )


def test_single_node_type_check_small_and_large() -> None:
    _, platform, _ = kth_runs()
    info = PlatformInfo(platform)
    name = info.default
    for n in (1, 5, 16, 17, 40):
        names = np.full(n, name, dtype=object)
        assert info._single(names) is info.get(name)
        names[n - 1] = "other"
        assert info._single(names) is None


def _general_grid(p: CompositePredictor, *args):
    """The composite's predict_grid without the one-cell fallback path."""
    saved = p.__dict__.get("_fallback_one")
    p._fallback_one = lambda *a: None  # type: ignore[method-assign]
    try:
        return p.predict_grid(*args)
    finally:
        if saved is None:
            del p._fallback_one
        else:
            p._fallback_one = saved


def test_composite_one_cell_fallback_equals_the_general_path() -> None:
    """One configuration of an application neither part knows (and of known ones,
    where the fast path declines): the same arrays as the general path, bit for bit."""
    _, platform, runs = kth_runs(seed=2)
    t = platform.node_types[0]
    name = str(t.name)
    freqs = np.asarray(t.freqs_ghz, dtype=float)
    fits = [
        get_predictor("adept+fluid").fit(Observations(runs=runs.iloc[:150], platform=platform))
        for _ in range(2)
    ]
    known = np.unique(runs["application"].iloc[:150]).tolist()[:3]
    cases = 0
    for app in [10_000, 10_001, *known]:
        for node_type in (name, None, "no-such-type"):
            for n in (1, 2, t.count, t.count + 1):
                for f in (*freqs.tolist(), 0.77):  # 0.77: not a P-state
                    for rn, rt in (
                        (4.0, 3600.0),
                        (float("nan"), 100.0),
                        (2.0, float("nan")),
                        (1.0, 0.0),
                        (3.0, -5.0),
                    ):
                        args = (app, node_type, np.array([n]), np.array([f]), rn, rt)
                        a = fits[0].predict_grid(*args)
                        b = _general_grid(fits[1], *args)
                        assert (a is None) == (b is None)
                        if a is None:
                            continue
                        cases += 1
                        for x, y in zip(a, b):
                            assert x.shape == y.shape == (1, 1) and x.dtype == y.dtype
                            np.testing.assert_array_equal(x, y)
    assert cases > 100
    assert fits[0]._fallback_one(10_000, name, 1, freqs[-1:], 4.0, 3600.0) is not None
    # the parts' deferred refits happen the same way through both paths
    fits[0].update(RunBatch.from_frame(runs.iloc[150:]))
    fits[1].update(RunBatch.from_frame(runs.iloc[150:]))
    for app in np.unique(runs["application"]).tolist()[:10]:
        args = (app, name, np.array([3]), freqs[-1:], 4.0, 600.0)
        a = fits[0].predict_grid(*args)
        b = _general_grid(fits[1], *args)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert fits[0].node_.n_refits_ == fits[1].node_.n_refits_


@pytest.mark.parametrize("spec", ["adept+fluid", "adept", "fluid"])
def test_one_configuration_as_python_values_is_the_one_cell_grid(spec: str) -> None:
    """predict_one gives predict_grid's one cell as Python values, bit for bit, for
    applications with and without a model, every P-state, sizes in and out of the
    node type and odd requests; None exactly when predict_grid is None; the deferred
    refits happen alike."""
    _, platform, runs = kth_runs(seed=2)
    t = platform.node_types[0]
    name = str(t.name)
    freqs = np.asarray(t.freqs_ghz, dtype=float)
    fits = [
        get_predictor(spec).fit(Observations(runs=runs.iloc[:150], platform=platform))
        for _ in range(2)
    ]
    known = np.unique(runs["application"].iloc[:150]).tolist()[:3]
    answered = 0
    for step in range(2):
        for app in [10_000, *known]:
            for node_type in (name, None, "no-such-type"):
                for n in (1, 3, t.count, t.count + 1):
                    for f in (*freqs.tolist(), 0.77):  # 0.77: not a P-state
                        for rn, rt in ((4.0, 3600.0), (float("nan"), 100.0), (2.0, float("nan"))):
                            one = fits[0].predict_one(app, node_type, n, np.array([f]), rn, rt)
                            grid = fits[1].predict_grid(
                                app, node_type, np.array([n]), np.array([f]), rn, rt
                            )
                            assert (one is None) == (grid is None)
                            if one is None:
                                continue
                            answered += 1
                            assert [type(v) for v in one] == [float, float, float, bool]
                            want = [g[0, 0].item() for g in grid]
                            assert same_bits(np.array(one[:3]), np.array(want[:3]))
                            assert one[3] == want[3]
        if step == 0:  # new runs: refits deferred until the applications are asked
            for p in fits:
                p.update(RunBatch.from_frame(runs.iloc[150:]))
    assert answered > 200
    node = getattr(fits[0], "node_", fits[0])
    if hasattr(node, "n_refits_"):
        assert node.n_refits_ == getattr(fits[1], "node_", fits[1]).n_refits_


def test_ordered_values_follow_a_dict_and_its_numpy_mean() -> None:
    """The fluid prior's kept values: the dict's values in its order after any sequence
    of sets and deletes, and the same pairwise mean as from the dict."""
    from predictors.dvfs import _OrderedValues

    rng = np.random.default_rng(5)
    d: dict[int, float] = {}
    kept = _OrderedValues()
    for step in range(3000):
        key = int(rng.integers(0, 60))
        if key in d and rng.random() < 0.3:
            del d[key]
            kept.delete(key)
        else:
            value = float(rng.uniform(0.0, 1.2))
            d[key] = value
            kept.set(key, value)
        ref = np.fromiter(d.values(), np.float64, len(d))
        np.testing.assert_array_equal(kept.view(), ref)
        if d and step % 7 == 0:
            assert np.add.reduce(kept.view()) / len(d) == np.add.reduce(ref) / len(d)


def test_store_request_rows_equal_a_per_run_reference() -> None:
    """_AppStore's request facts (written once per appended block) are the runs with a
    usable request, in order, with their node type (missing: the default), top
    frequency, frequency and instructions; blocks of one and of many runs."""
    from predictors.baselines import NUMERIC_RUN_COLUMNS, _AppStore

    _, platform, _ = kth_runs()
    info = PlatformInfo(platform)
    t = platform.node_types[0]
    rng = np.random.default_rng(7)
    store = _AppStore()
    cols: dict[str, list] = {c: [] for c in NUMERIC_RUN_COLUMNS}
    types: list = []
    for k in [1, 3, 1, 9, 40, 2, 1, 17]:
        block = np.full((len(NUMERIC_RUN_COLUMNS), k), np.nan)
        for i in range(len(NUMERIC_RUN_COLUMNS)):
            block[i] = rng.uniform(1.0, 100.0, k)
        ix = {c: i for i, c in enumerate(NUMERIC_RUN_COLUMNS)}
        block[ix["freq_ghz"]] = np.asarray(t.freqs_ghz)[rng.integers(0, len(t.freqs_ghz), k)]
        block[ix["requested_time_s"]] = rng.choice([np.nan, -1.0, 0.0, 60.0, 3600.0], k)
        block[ix["requested_nodes"]] = rng.choice([np.nan, 0.5, 1.0, 4.0, np.inf], k)
        block[ix["instructions"]] = rng.choice([np.nan, 0.0, 1e9, 3e9], k)
        names = np.array(rng.choice([str(t.name), None, "unknown"], k), dtype=object)
        store.append(block, names, info)
        for c in NUMERIC_RUN_COLUMNS:
            cols[c].extend(block[ix[c]].tolist())
        types.extend(names.tolist())
    rt, rn = np.array(cols["requested_time_s"]), np.array(cols["requested_nodes"])
    ok = np.isfinite(rt) & (rt > 0) & np.isfinite(rn) & (rn >= 1)
    idx = np.flatnonzero(ok)
    m = store.n_req
    assert m == len(idx) and store.n == len(rt)
    np.testing.assert_array_equal(store.req_idx[:m], idx)
    ref_names = [info.default if types[i] is None else types[i] for i in idx]
    assert store.req_names[:m].tolist() == ref_names
    freq = np.array(cols["freq_ghz"])[idx]
    fmax = [info.row_fmax(nm, f) for nm, f in zip(ref_names, freq.tolist())]
    ref = np.array([rn[idx], rt[idx], fmax, freq, np.array(cols["instructions"])[idx]])
    req_nodes, req_time, req_freq, req_instr = store.requests()
    got = np.array([req_nodes, req_time, store.req_fmax[:m], req_freq, req_instr])
    np.testing.assert_array_equal(got, ref)
    # every run with a usable request: the requests are the run buffers' rows
    full = _AppStore()
    for k in [2, 5]:
        block = rng.uniform(1.0, 100.0, (len(NUMERIC_RUN_COLUMNS), k))
        full.append(block, np.array([str(t.name)] * k, dtype=object), info)
    assert full.n_req == full.n == 7
    for got_col, c in zip(full.requests(), ["requested_nodes", "requested_time_s", "freq_ghz"]):
        np.testing.assert_array_equal(got_col, full.runs[c])
    np.testing.assert_array_equal(full.requests()[3], full.runs["instructions"])
    for c in NUMERIC_RUN_COLUMNS:
        np.testing.assert_array_equal(store.runs[c], np.array(cols[c]))
    assert store.runs["node_type"].tolist() == types


def test_and_of_reliability_tables_is_the_elementwise_and() -> None:
    """and_flags equals ``a & b`` (values, shape, dtype) for every mix of constant
    tables (constant_flags, shared and read-only) and other tables, ``a`` with one
    column or as many as ``b``; constant results are the shared tables."""
    from predictors.baselines import and_flags, constant_flags, flags_value

    rng = np.random.default_rng(8)
    k, f = 6, 4
    for a_cols in (1, f):
        for b_cols in (1, f):
            choices_a = [constant_flags(k, a_cols, True), constant_flags(k, a_cols, False)]
            choices_a.append(rng.random((k, a_cols)) < 0.5)
            choices_b = [constant_flags(k, b_cols, True), constant_flags(k, b_cols, False)]
            choices_b.append(rng.random((k, b_cols)) < 0.5)
            for a in choices_a:
                for b in choices_b:
                    got, want = and_flags(a, b), a & b
                    assert got.shape == want.shape and got.dtype == want.dtype
                    np.testing.assert_array_equal(got, want)
                    if flags_value(a) is not None and flags_value(b) is not None:
                        assert flags_value(got) is bool(want.all() if want.any() else False)
                        assert not got.flags.writeable
    assert flags_value(np.ones((2, 2), dtype=bool)) is None
    assert flags_value(constant_flags(2, 3, False)) is False


@pytest.mark.parametrize("rows", [0, 1, 5, 338, 1100, 5544])
def test_column_major_tables_equal_the_broadcasts(rows: int) -> None:
    """outer_product (column-major) and scaled_ratio equal numpy's broadcasts in C
    order bit for bit, shape and dtype included, with zeros, infinities and NaN among
    the values; the scale of one column or of all; scaled_ratio_max of a column-major
    table (one reduction along its rows) is the same as of the C-order table."""
    from predictors.baselines import outer_product, scaled_ratio, scaled_ratio_max

    rng = np.random.default_rng(rows)
    odd = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, 1e308]
    with np.errstate(all="ignore"):
        for k in range(20):
            col = rng.uniform(0.1, 10.0, rows) * 10.0 ** rng.integers(-5, 5)
            f = int(rng.integers(1, 7))
            row = rng.uniform(0.5, 2.0, f)
            if k % 3 == 0 and rows:
                col[int(rng.integers(rows))] = float(rng.choice(odd))
                row[int(rng.integers(f))] = float(rng.choice(odd))
            for r in (row, row[None, :]):
                got, want = outer_product(col, r), col[:, None] * r
                assert got.shape == want.shape == (rows, f) and got.dtype == want.dtype
                assert got.flags.f_contiguous
                assert got.tobytes() == want.tobytes()  # (tobytes: C order, whatever the layout)
            table = got
            for scale in (rng.uniform(0.5, 2.0, (rows, 1)), rng.uniform(0.5, 2.0, (rows, f))):
                got, plain = scaled_ratio(scale, table), scale * (want / want[:, -1:])
                assert got.shape == plain.shape
                assert got.tobytes() == plain.tobytes()
            if rows and k % 3:  # finite positive cells: scaled_ratio_max's domain
                scale = rng.uniform(0.5, 2.0, (rows, 1))
                top = float((scale * (want / want[:, -1:])).max())
                assert scaled_ratio_max(scale, table) == top
                assert scaled_ratio_max(scale, np.ascontiguousarray(table)) == top


@pytest.mark.parametrize("rows", [1, 7, 1100, 5544])
def test_columns_rows_and_maximum_of_a_scaled_ratio_are_the_tables(rows: int) -> None:
    """scaled_ratio_column, scaled_ratio_row and scaled_ratio_max give the cells and
    the maximum of the plain ``scale * (table / table[:, -1:])`` bit for bit: tables of
    finite positive cells spread over many orders of magnitude (ratios that overflow
    or come near the underflow included), rows whose largest cell is in any column, a
    scale of one column or of all."""
    from predictors.baselines import scaled_ratio_column, scaled_ratio_max, scaled_ratio_row

    rng = np.random.default_rng(rows + 1)
    for k in range(30):
        f = int(rng.integers(1, 7))
        table = rng.uniform(0.5, 2.0, (rows, f)) * 10.0 ** rng.integers(-150, 150, (rows, 1))
        if k % 5 == 0:  # a cell far from its row's last one: ratios near inf or 0
            table[int(rng.integers(rows)), int(rng.integers(f))] *= float(
                rng.choice([1e150, 1e-150])
            )
        for cols in (1, f):
            scale = rng.uniform(0.1, 10.0, (rows, cols)) * 10.0 ** rng.integers(-5, 5)
            with np.errstate(all="ignore"):
                plain = scale * (table / table[:, -1:])
                got_max = scaled_ratio_max(scale, table)
            assert got_max == float(plain.max())
            for j in range(f):
                with np.errstate(all="ignore"):
                    column = scaled_ratio_column(scale, table, j)
                assert column.tobytes() == np.ascontiguousarray(plain[:, j]).tobytes()
            for i in {0, rows // 2, rows - 1}:
                with np.errstate(all="ignore"):
                    row = scaled_ratio_row(scale, table, i)
                assert row.tobytes() == plain[i].tobytes()
    assert scaled_ratio_max(np.ones((0, 1)), np.ones((0, 3))) == 0.0


def test_row_table_is_the_broadcast_row() -> None:
    """row_table: the values, shape and dtype of np.broadcast_to, read-only, no copy
    (a later change of the row shows in the table); a strided row gives the same."""
    from predictors.baselines import row_table

    row = np.array([150.0, 180.0, 215.5, 260.25])
    for rows in (0, 1, 338, 5544):
        got, want = row_table(row, rows), np.broadcast_to(row, (rows, 4))
        assert got.shape == want.shape == (rows, 4) and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
        assert not got.flags.writeable
        with pytest.raises(ValueError):
            got[...] = 0.0
    table = row_table(row, 3)
    row[2] = 1.0
    assert table[1, 2] == 1.0 and table[2].tolist() == row.tolist()
    strided = np.arange(10.0)[::2]
    got = row_table(strided, 7)
    assert got.tobytes() == np.broadcast_to(strided, (7, 5)).tobytes()
    assert not got.flags.writeable


@pytest.mark.parametrize("runs_count", [3, 12])
def test_request_ratios_ignore_floating_point_errors(runs_count: int) -> None:
    """ADEPT's and the fluid predictor's request ratios (few runs: plain floats; many:
    numpy) raise no floating-point warning when the reference times are zero (logs of
    zero) and answer the base class's value, NaN; with the fitted models, the base
    class's value bit for bit."""
    import dataclasses
    import warnings

    import pandas as pd

    from predictors.adept import AdeptPredictor
    from predictors.base import Observations
    from predictors.baselines import NUMERIC_RUN_COLUMNS, AmdahlModel, PerApplicationPredictor
    from predictors.dvfs import FluidPredictor
    from tests.predictors.helpers import same_bits, three_pstate_platform

    rng = np.random.default_rng(runs_count)
    k = runs_count
    nodes = rng.choice([1.0, 2.0, 4.0], k)
    cols = {c: np.full(k, np.nan) for c in NUMERIC_RUN_COLUMNS}
    cols.update(
        nodes=nodes,
        freq_ghz=rng.choice([1.2, 2.4], k),
        time_s=rng.uniform(50.0, 100.0, k),
        power_w=rng.uniform(150.0, 250.0, k),
        instructions=rng.uniform(1e11, 1e12, k),
        requested_nodes=nodes,
        requested_time_s=rng.uniform(100.0, 500.0, k),
    )
    runs = pd.DataFrame(cols)
    runs["application"] = 7
    runs["node_type"] = "n"
    obs = Observations(runs=runs, platform=three_pstate_platform())
    adept = AdeptPredictor(n_1d=400, n_2d=60).fit(obs)
    fluid = FluidPredictor().fit(obs)
    zero_adept = AmdahlModel(0.0, 0.0, 2)
    zero_fluid = dataclasses.replace(fluid.state_[7].model, g=0.0)
    for p, zero in ((adept, zero_adept), (fluid, zero_fluid)):
        store = p._stores[7]
        work = store.work()
        assert store.n_req == k and not store.bad_work
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a floating-point warning fails the test
            with np.errstate(all="warn"):
                got = p._request_ratio(7, zero, store, work)
        assert np.isnan(got)
        model = p.state_[7].model
        with np.errstate(all="ignore"):
            want = PerApplicationPredictor._request_ratio(p, 7, model, store, work)
        assert same_bits(p._request_ratio(7, model, store, work), want)


def test_a_refitted_composite_answers_one_cell_fallbacks_from_its_new_platform() -> None:
    """The one-cell fallback keeps its node-type facts per node type and P-state; a
    composite (and its parts) fitted again, on a platform whose node type has the same
    name and P-states but another size and other powers, answers from the new platform,
    as a composite fitted there only does."""
    from simulator.platform import NodeType, Platform, PState

    def platform(count: int, busy_w: float) -> Platform:
        states = tuple(PState(f, 90.0, busy_w + 60.0 * f) for f in (1.2, 1.8, 2.4))
        return Platform(
            name="p",
            node_types=(NodeType(name="n", count=count, cores_per_node=8, pstates=states),),
        )

    first, second = platform(64, 100.0), platform(16, 250.0)
    top, low = np.array([2.4]), np.array([1.2])
    again = get_predictor("adept+fluid").fit(Observations(platform=first))
    before = [again.predict_one(10_000, "n", n, f, 8.0, 600.0) for n in (8, 32) for f in (top, low)]
    assert all(b is not None for b in before)
    again.fit(Observations(platform=second))
    fresh = get_predictor("adept+fluid").fit(Observations(platform=second))
    for n in (8, 32):
        for f in (top, low):
            got = again.predict_one(10_000, "n", n, f, 8.0, 600.0)
            want = fresh.predict_one(10_000, "n", n, f, 8.0, 600.0)
            assert got == want
            if n == 8:  # the new platform's fallback power: its P-state's busy power
                assert got is not None and got[1] == 250.0 + 60.0 * float(f[0])
    assert again.predict_one(10_000, "n", 32, top, 8.0, 600.0) != before[2]
