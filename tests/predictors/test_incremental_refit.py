"""Incremental refits: per-application run stores and the DVFS family's fast fit path.

The learning loop hands a predictor a few runs at a time; the predictor keeps
per-application statistics up to date instead of refitting from the whole
runs table. These tests replay such a stream (batches of 1-3 runs, as
DataFrames and as RunBatches, two node types, runs without instructions,
requested time or power) and check that nothing the predictor learns differs
from the reference computations.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from predictors.base import Observations, Queries, RunBatch
from predictors.baselines import (
    NUMERIC_RUN_COLUMNS,
    PerApplicationPredictor,
    geometric_mean,
    split_runs,
)
from predictors.dvfs import (
    FluidPredictor,
    NodeTypeDvfsPredictor,
    PerAppDvfsPredictor,
)
from predictors.registry import get_predictor
from tests.predictors.helpers import (
    same_bits,
    two_type_stream,
    update_batches,
    whole_table_reference,
)


@pytest.fixture(scope="module")
def stream():
    """Runs of KTH-SP2 jobs on two node types (shuffled), some with missing values
    (2 % of the instruction counts: work from the median, the reference path)."""
    return two_type_stream((500, 200), seed=0, unknown_instructions=True)


def _same_state(s, t) -> bool:
    if s is None or t is None:
        return s is t
    m, n = s.model, t.model
    return (
        same_bits(
            (float(m.g), float(m.alpha), s.rho, s.median_work), (n.g, n.alpha, t.rho, t.median_work)
        )
        and same_bits(m.power, n.power)
        and s.count == t.count
    )


@pytest.mark.parametrize("cls", [FluidPredictor, PerAppDvfsPredictor, NodeTypeDvfsPredictor])
def test_fast_dvfs_fit_equals_the_reference_after_every_update(stream, cls) -> None:
    platform, runs = stream
    obs = Observations(runs=runs.iloc[:40], platform=platform)
    fast = cls().fit(obs)
    ref = whole_table_reference(cls)().fit(obs)
    for a in fast.state_:
        assert _same_state(fast.state_[a], ref.state_[a]), a
    for batch in update_batches(runs.iloc[40:]):
        fast.update(batch)
        ref.update(batch)
        for a in set(np.asarray(batch["application"]).tolist()):
            assert _same_state(fast.state_[a], ref.state_[a]), a
    assert fast.state_.keys() == ref.state_.keys()
    if cls is FluidPredictor:
        assert fast.alphas_ == ref.alphas_ and list(fast.alphas_) == list(ref.alphas_)
        assert fast._prior_alpha() == ref._prior_alpha()
    # the fast path did the work (the reference only for runs without instructions)
    with_work = [a for a, st in fast._stores.items() if st.bad_work == 0]
    assert with_work and all(fast._stores[a].fit_cache.ok for a in with_work)


def _rebuilt_state(p: PerApplicationPredictor, app: int):
    """``(rho, median work, count)`` of one application recomputed from its runs table
    (the formulas of the module docstring, as the whole-table refit computed them)."""
    runs = p.runs_[app]
    instr = runs["instructions"]
    ok = np.isfinite(instr) & (instr > 0)
    work = instr if ok.all() else np.where(ok, instr, np.median(instr[ok]))
    req_t, req_n = runs["requested_time_s"], runs["requested_nodes"]
    ok = np.isfinite(req_t) & (req_t > 0) & np.isfinite(req_n) & (req_n >= 1)
    rho = math.nan
    if ok.any():
        names = runs["node_type"][ok]
        names = np.where(pd.isna(names), p.info_.default, names).astype(object)
        fmax = p.info_.fmax(names, runs["freq_ghz"][ok])
        with np.errstate(all="ignore"):
            tau_ref, _, _ = p._shape(app, p.state_[app].model, names, req_n[ok], fmax)
            rho = geometric_mean(work[ok] * tau_ref / req_t[ok])
    return rho, float(np.median(work)), len(instr)


@pytest.mark.parametrize("spec", ["fluid", "amdahl", "adept", "dvfs-node-type"])
def test_update_stream_keeps_runs_and_scaling_like_one_fit(stream, spec) -> None:
    platform, runs = stream
    runs = runs.iloc[: 150 if spec == "adept" else 400]  # ADEPT's Downey fits are slow
    # ADEPT: exact refits (by default a fit is reused while its averaged times move
    # by less than 2 %, which makes its state depend on when refits were asked for)
    params = {"refit_tol": 0.0} if spec == "adept" else {}
    p = get_predictor(spec, **params).fit(Observations(runs=runs.iloc[:0], platform=platform))
    for i, batch in enumerate(update_batches(runs)):
        p.update(batch)
        if i % 5 == 0:  # some refits along the way (ADEPT refits lazily)
            p.model_of(int(np.asarray(batch["application"])[0]))
    whole = split_runs(runs)
    one = get_predictor(spec, **params).fit(Observations(runs=runs, platform=platform))
    assert sorted(p.runs_) == sorted(whole)
    for app, cols in whole.items():
        p.model_of(app)  # a lazy refit (ADEPT) is done now
        got = p.runs_[app]
        assert list(got) == [*NUMERIC_RUN_COLUMNS, "node_type"]
        for c in NUMERIC_RUN_COLUMNS:
            np.testing.assert_array_equal(got[c], cols[c])
        assert got["node_type"].tolist() == cols["node_type"].tolist()
        state, other = p.state_[app], one.state_[app]
        assert (state is None) == (other is None)
        if state is None:
            continue
        assert same_bits((state.rho, state.median_work, state.count), _rebuilt_state(p, app))
        # one fit on every run learns the same (fluid: not for applications on the
        # prior alpha, which depends on the order the applications were fitted in)
        if spec == "fluid" and not np.isfinite(state.model.alpha):
            continue
        np.testing.assert_allclose(
            [state.rho, state.median_work], [other.rho, other.median_work], rtol=1e-12
        )
        assert state.count == other.count


def test_odd_node_types_take_the_reference_path(stream) -> None:
    """Unnamed runs (node type None), node types the platform does not know (some
    without a frequency)."""
    platform, runs = stream
    runs = runs.iloc[:200].copy()
    runs["node_type"] = runs["node_type"].astype(object)
    runs.loc[runs.index[::7], "node_type"] = None
    runs.loc[runs.index[3::11], "node_type"] = "unknown"
    runs.loc[runs.index[3::44], "freq_ghz"] = np.nan  # no Fmax for these runs
    fast = FluidPredictor().fit(Observations(runs=runs.iloc[:0], platform=platform))
    ref = whole_table_reference(FluidPredictor)().fit(
        Observations(runs=runs.iloc[:0], platform=platform)
    )
    for batch in update_batches(runs, seed=2):
        fast.update(batch)
        ref.update(batch)
    for a in ref.state_:
        assert _same_state(fast.state_[a], ref.state_[a]), a


def test_small_sums_add_like_numpy() -> None:
    """dvfs._sum (left to right below 8 values) is np.add.reduce, bit for bit."""
    from predictors.dvfs import _sum

    rng = np.random.default_rng(5)
    for n in range(1, 20):
        for _ in range(300):
            values = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 17, n)).tolist()
            assert _sum(values) == float(np.add.reduce(np.array(values))), values


def test_incremental_alpha_with_many_groups_equals_fit_alpha() -> None:
    """_DvfsRuns.alpha over many (node count) groups, a run at a time, is fit_alpha."""
    from predictors.baselines import _AppStore, _run_blocks
    from predictors.dvfs import _DvfsRuns, fit_alpha
    from tests.predictors.helpers import three_pstate_platform

    p = FluidPredictor().fit(Observations(platform=three_pstate_platform()))
    rng = np.random.default_rng(2)
    k = 60
    nodes = rng.integers(1, 12, k).astype(float)  # up to 11 groups
    freq = rng.choice([1.2, 1.8, 2.4], k)
    x = freq / 2.4
    time = 100.0 / nodes * ((1 - 0.6) + 0.6 / x) * (1 + 0.02 * rng.standard_normal(k))
    cols = {c: np.full(k, np.nan) for c in NUMERIC_RUN_COLUMNS}
    cols.update(nodes=nodes, freq_ghz=freq, time_s=time, instructions=np.full(k, 1.0))
    cols["application"] = np.zeros(k, dtype=np.int64)
    cols["node_type"] = np.full(k, "n", dtype=object)
    store, cache = _AppStore(), _DvfsRuns()
    used = []
    for i in range(k):
        ((_, num, types),) = _run_blocks(RunBatch({c: v[i : i + 1] for c, v in cols.items()}))
        store.append(num, types, p.info_)
        cache.extend(p, store, store.n)
        got = cache.alpha()
        want = fit_alpha(x[: i + 1], time[: i + 1], nodes[: i + 1])
        assert got == want or (math.isnan(got) and math.isnan(want)), i
        used.append(cache.n_used)
    assert max(used) >= 8  # numpy's pairwise sum, not only the left-to-right one


def _assert_parts_learned_like(both, alone) -> None:
    """The composite's parts hold the runs, stores and states of ``alone`` (the same
    predictors updated on their own)."""
    for part, ref in zip((both.node_, both.freq_), alone):
        assert part.runs_.keys() == ref.runs_.keys()
        for app, cols in ref.runs_.items():
            for c, v in cols.items():
                w = part.runs_[app][c]
                assert w is not v and len(w) == len(v)
                assert all(same_bits(a, b) for a, b in zip(w.tolist(), v.tolist())), (app, c)
        for app, st in ref.state_.items():
            got = part.state_[app]
            assert (got is None) == (st is None)
            if st is not None:
                assert same_bits(
                    (got.rho, got.median_work, got.count), (st.rho, st.median_work, st.count)
                )
    for app in alone[1].state_:
        assert _same_state(both.freq_.state_[app], alone[1].state_[app]), app


def test_composite_update_splits_once_and_learns_like_its_parts(stream) -> None:
    """The composite hands both parts one split of each batch: each part ends as the
    same predictor updated on its own (runs, stores, states)."""
    from predictors.baselines import AmdahlPredictor

    platform, runs = stream
    obs = Observations(runs=runs.iloc[:40], platform=platform)
    both = get_predictor("amdahl+fluid").fit(obs)
    alone = [AmdahlPredictor().fit(obs), FluidPredictor().fit(obs)]
    for batch in update_batches(runs.iloc[40:400], seed=4):
        both.update(batch)
        for p in alone:
            p.update(batch)
    _assert_parts_learned_like(both, alone)
    for part in (both.node_, both.freq_):
        assert len(part.observations_.runs) == 400


def test_composite_twin_stores_part_when_a_part_learns_alone(stream) -> None:
    """Applications first seen by the composite get twin stores (one append for both
    parts, shared buffers); a part updated on its own (or a part's store appended
    alone) takes its own buffers first: each part still learns exactly its runs."""
    from predictors.baselines import AmdahlPredictor

    platform, runs = stream
    obs = Observations(runs=runs.iloc[:40], platform=platform)
    both = get_predictor("amdahl+fluid").fit(obs)
    alone = [AmdahlPredictor().fit(obs), FluidPredictor().fit(obs)]
    extra = list(update_batches(runs.iloc[400:520], seed=8))
    for k, batch in enumerate(update_batches(runs.iloc[40:400], seed=6)):
        both.update(batch)
        for p in alone:
            p.update(batch)
        if k % 7 == 3 and extra:  # the node part alone
            x = extra.pop()
            both.node_.update(x)
            alone[0].update(x)
        if k % 11 == 5 and extra:  # the frequency part alone
            x = extra.pop()
            both.freq_.update(x)
            alone[1].update(x)
    _assert_parts_learned_like(both, alone)
    twins = [
        app
        for app, store in both.node_._stores.items()
        if store.twin is not None and store.twin is both.freq_._stores[app]
    ]
    assert twins  # the fast path was taken
    for app in twins:
        a, b = both.node_._stores[app], both.freq_._stores[app]
        assert a.num is b.num and a.runs is b.runs and a.n == b.n
        assert a.fit_cache is None or a.fit_cache is not b.fit_cache  # each part's own
    parted = [a for a, st in both.node_._stores.items() if st.twin is None and st.n > 0]
    assert parted  # and the parting one
    for app in parted:
        other = both.freq_._stores.get(app)
        assert other is None or other.num is not both.node_._stores[app].num


def _rows_of(frame: pd.DataFrame, rng: np.random.Generator) -> list[tuple]:
    """``frame``'s runs as :data:`RUN_ROW_COLUMNS` rows with mixed scalar types (Python
    and numpy ints and floats, integral floats in int columns, None in float columns)."""
    from predictors.base import RUN_ROW_COLUMNS

    rows = []
    for i in range(len(frame)):
        row = []
        for c in RUN_ROW_COLUMNS:
            if c == "killed":
                row.append(bool(rng.random() < 0.1))
                continue
            v = frame[c].iloc[i]
            kind = int(rng.integers(0, 3))
            if isinstance(v, (np.integer, int)):
                v = int(v) if kind == 0 else (float(v) if kind == 1 else np.int64(v))
            elif isinstance(v, (np.floating, float)):
                if c.startswith("ctr_") and rng.random() < 0.1:
                    v = None
                else:
                    v = float(v) if kind == 0 else np.float64(v)
            row.append(v)
        rows.append(tuple(row))
    return rows


def test_batch_of_rows_equals_its_columns(stream) -> None:
    """A RunRows batch keeps its rows: its columns (all, or one at a time) are the
    columns built per column, and the predictors' blocks read from the rows are the
    blocks of those columns, bit for bit (one application or several, any order)."""
    from predictors.base import RUN_ROW_COLUMNS, RUN_ROW_DTYPES, RunRows
    from predictors.baselines import _run_blocks

    _, runs = stream
    rng = np.random.default_rng(11)
    for lo, k in [(0, 1), (1, 2), (3, 5), (8, 17), (25, 60)]:
        rows = _rows_of(runs.iloc[lo : lo + k], rng)
        want = {
            c: np.array(col, dtype=d)
            for c, d, col in zip(RUN_ROW_COLUMNS, RUN_ROW_DTYPES, zip(*rows))
        }
        lazy = RunRows(rows).to_batch()
        assert lazy.rows() is not None and len(lazy) == k
        for c in ("application", "node_type", "nodes", "killed"):  # one column, not cached
            assert same_bits(lazy[c], want[c])
        assert lazy.columns == list(RUN_ROW_COLUMNS) and "nodes" in lazy and "x" not in lazy
        from_rows = _run_blocks(lazy)
        assert same_bits(lazy.cols, want)
        from_cols = _run_blocks(RunBatch(dict(want), k))
        assert len(from_rows) == len(from_cols)
        for (a, num, types), (b, num2, types2) in zip(from_rows, from_cols):
            assert a == b and type(a) is type(b) is int
            assert num.dtype == num2.dtype and num.shape == num2.shape
            assert num.tobytes() == num2.tobytes()
            assert types.dtype == types2.dtype == object and types.tolist() == types2.tolist()
    # rows of another width: columns at once (as before), no rows kept
    short = [r[:-1] for r in _rows_of(runs.iloc[:3], rng)]
    batch = RunRows(short).to_batch()
    assert batch.rows() is None and list(batch.cols) == list(RUN_ROW_COLUMNS[:-1])
    # values that do not convert: the columns decide (here: the error they raise)
    bad = _rows_of(runs.iloc[:2], rng)
    at = RUN_ROW_COLUMNS.index("nodes")
    bad[1] = (*bad[1][:at], "many", *bad[1][at + 1 :])
    with pytest.raises(ValueError):
        _run_blocks(RunRows(bad).to_batch())


def test_store_facts_shared_between_stores_equal_their_own(stream) -> None:
    """A block's facts computed with one PlatformInfo and appended to a store with
    another (equivalent) one: the same store as computing them there."""
    from predictors.baselines import PlatformInfo, _AppStore, _run_blocks

    platform, runs = stream
    a, b = PlatformInfo(platform), PlatformInfo(platform)
    own, shared = _AppStore(), _AppStore()
    for batch in update_batches(runs.iloc[:300], seed=5):
        for _, num, types in _run_blocks(batch):
            own.append(num, types, b)
            shared.append(num, types, b, _AppStore.facts(num, types, a))
    filled = {"num": own.n, "nt": own.n, "req_fmax": own.n_req, "req_idx": own.n_req}
    filled["req_names"] = own.n_req
    for name in _AppStore.__slots__:
        if name == "fit_cache":
            continue
        x, y = getattr(own, name), getattr(shared, name)
        if name in filled:  # the buffers' filled part
            x, y = x[..., : filled[name]], y[..., : filled[name]]
        if name == "runs":  # StoreRuns: the columns it reads
            x, y = dict(x), dict(y)
        if isinstance(x, np.ndarray) and x.dtype == object:
            x, y = x.tolist(), y.tolist()
        assert same_bits(x, y), name


def _common_app_blocks(stream):
    """The platform's info and the run blocks (numeric rows, node types) of the
    stream's most common application, in the order its update batches bring them."""
    from predictors.baselines import PlatformInfo, _run_blocks

    platform, runs = stream
    common = runs["application"].mode()[0]
    blocks = [
        (num, types)
        for batch in update_batches(runs, seed=9)
        for app, num, types in _run_blocks(batch)
        if app == common
    ]
    return PlatformInfo(platform), blocks


def _twin_pair(stream, batches: int):
    """Two stores of one application made twins as a composite makes them (the first
    store appends each block, the second follows it), with the blocks given."""
    from predictors.baselines import _AppStore

    info, blocks = _common_app_blocks(stream)
    blocks = blocks[:batches]
    assert len(blocks) == batches
    lead, follower = _AppStore(), _AppStore()
    for num, types in blocks:
        lead.append(num, types, info, keep_twin=True)
        follower.follow(lead)
    return lead, follower, info, blocks


def test_twin_stores_pair_share_and_part(stream) -> None:
    """Following pairs two stores both ways on the same buffers and facts; a store that
    appends alone parts from its twin on private copies, and its former twin keeps
    exactly the runs it was given."""
    lead, follower, info, blocks = _twin_pair(stream, 4)
    assert lead.twin is follower and follower.twin is lead
    assert lead.num is follower.num and lead.runs is follower.runs
    assert lead.work_sorted is follower.work_sorted and lead.req_fmax is follower.req_fmax
    n = follower.n
    assert n == lead.n == sum(num.shape[1] for num, _ in blocks)
    kept = {c: v.copy() for c, v in follower.runs.items() if c != "node_type"}
    num, types = blocks[0]
    lead.append(num, types, info)  # alone: private copies first
    assert lead.twin is None and follower.twin is None
    assert lead.num is not follower.num and lead.work_sorted is not follower.work_sorted
    assert lead.n == n + num.shape[1] and follower.n == n
    for c, v in kept.items():
        assert same_bits(follower.runs[c], v), c
    assert len(follower.work_sorted) == follower.n - follower.bad_work


def test_twin_stores_are_freed_by_reference_counting(stream) -> None:
    """Twins hold each other weakly: with the collector off, dropping one leaves the other
    without a twin (its buffers its own: appending needs no copy), and dropping both
    frees them at once."""
    import gc
    import weakref

    lead, follower, info, blocks = _twin_pair(stream, 3)
    gone = weakref.ref(follower)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del follower
        assert gone() is None and lead.twin is None
        buffer = lead.num
        num, types = blocks[-1]
        n = lead.n
        lead.append(num, types, info)
        assert lead.n == n + num.shape[1]
        assert lead.num is buffer or lead.num.shape[1] >= lead.n  # copied only to grow
        lead, follower, info, blocks = _twin_pair(stream, 3)
        refs = weakref.ref(lead), weakref.ref(follower)
        del lead, follower
        assert refs[0]() is None and refs[1]() is None
    finally:
        if was_enabled:
            gc.enable()


def test_twin_stores_survive_pickling_and_copying(stream) -> None:
    """A composite's twin stores stay twins, on one buffer, through a pickle round trip
    and a deep copy (the weak references are rebuilt), and the copy predicts the same."""
    import copy
    import pickle

    platform, runs = stream
    both = get_predictor("amdahl+fluid").fit(Observations(runs=runs.iloc[:40], platform=platform))
    for batch in update_batches(runs.iloc[40:200], seed=3):
        both.update(batch)
    rows = runs.iloc[200:260]
    q = Queries(
        application=rows["application"].to_numpy(),
        nodes=rows["nodes"].to_numpy(),
        freq_ghz=rows["freq_ghz"].to_numpy(),
        node_type=rows["node_type"].to_numpy(dtype=object),
        requested_nodes=rows["requested_nodes"].to_numpy(),
        requested_time_s=rows["requested_time_s"].to_numpy(),
    )
    for restored in (pickle.loads(pickle.dumps(both)), copy.deepcopy(both)):
        twins = 0
        for app, store in restored.node_._stores.items():
            other = restored.freq_._stores[app]
            original = both.node_._stores[app]
            assert (store.twin is other) == (original.twin is not None), app
            if store.twin is not None:
                twins += 1
                assert other.twin is store and store.num is other.num
                assert store.twin is not original.twin  # the copy's, not the original's
        assert twins > 0
        a, b = both.predict(q), restored.predict(q)
        assert same_bits(a.time_s, b.time_s) and same_bits(a.power_w, b.power_w)


def test_store_runs_are_views_of_the_rows_appended_so_far(stream) -> None:
    """A store's runs (a StoreRuns) read every column as the blocks appended so far,
    in order; an earlier one keeps its rows after later appends (also when the
    buffers grow); the instructions column is one kept array (the refit path tells
    the store's own work by identity) and the others are views of the buffers, made
    when read rather than kept."""
    from predictors.baselines import NUMERIC_RUN_COLUMNS, _AppStore

    info, blocks = _common_app_blocks(stream)
    assert len(blocks) >= 4
    store = _AppStore()
    first = store.append(*blocks[0], info)
    first_rows = {c: first[c].copy() for c in NUMERIC_RUN_COLUMNS}
    first_types = first["node_type"].tolist()
    caps = {store.num.shape[1]}
    for num, types in blocks[1:]:
        store.append(num, types, info)
        caps.add(store.num.shape[1])
    assert len(caps) > 1  # the buffers grew at least once
    got = store.runs
    assert list(got) == [*NUMERIC_RUN_COLUMNS, "node_type"] and len(got) == len(list(got))
    for i, c in enumerate(NUMERIC_RUN_COLUMNS):
        want = np.concatenate([num[i] for num, _ in blocks])
        assert same_bits(got[c], want), c
        assert c in got and np.shares_memory(got[c], store.num)
    assert got["node_type"].tolist() == [t for _, types in blocks for t in types.tolist()]
    assert store.bad_work == 0  # (every run has usable instructions: work() is the column)
    assert got["instructions"] is got["instructions"] and store.work() is got["instructions"]
    assert got["nodes"] is not got["nodes"]  # made when read
    assert "no_such_column" not in got
    with pytest.raises(KeyError):
        got["no_such_column"]
    assert not hasattr(got, "__dict__")  # holds the buffers, not a view per column
    # the first append's runs: its rows as they were
    assert len(first["nodes"]) == blocks[0][0].shape[1]
    for c, v in first_rows.items():
        assert same_bits(first[c], v), c
    assert first["node_type"].tolist() == first_types
