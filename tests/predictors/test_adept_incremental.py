"""ADEPT's incremental refits: the per-application run state (``_AdeptRuns``) and the
request ratio without ``_shape`` must give exactly the reference computations.

A stream of runs (two node types, runs at several frequencies so that sizes gain
runs at ``Fmax`` after runs below it, runs without a requested size or time, a
node type missing, one late run without instructions) is replayed in batches of 1-3 runs into the incremental
predictor and into the reference (the whole runs table at every refit).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from predictors.adept import AdeptModel, AdeptPredictor, _AdeptRuns
from predictors.base import Observations
from predictors.baselines import (
    AmdahlModel,
    DecodedRuns,
    PerApplicationPredictor,
    _AppStore,
    decode_block,
    fit_amdahl,
)
from tests.predictors.helpers import kth_two_types, same_bits, update_batches

FAST = dict(n_1d=400, n_2d=60)  # small searches: these tests compare paths, not accuracy


class _Reference(AdeptPredictor):
    """ADEPT fitting every application from its whole runs table."""

    _incremental = False

    def _request_ratio(self, app, model, store, work):
        return PerApplicationPredictor._request_ratio(self, app, model, store, work)


@pytest.fixture(scope="module")
def stream():
    """Runs of KTH-SP2 jobs on two node types (shuffled), with missing values."""
    trace, platform, truth = kth_two_types()
    base, fat = platform.node_types
    rng = np.random.default_rng(0)
    # jobs of the six largest applications: the Downey path, refits and reused fits,
    # the Amdahl fallback (one of them only ever at two sizes)
    every = np.arange(len(trace.jobs))
    top_f = np.full(len(every), max(base.freqs_ghz))
    probe = truth.measure(every, base, np.ones(len(every), int), top_f, None, None, None, rng)
    apps = probe["application"].to_numpy()
    pool = every[np.isin(apps, pd.Series(apps).value_counts().index[:6].to_numpy())]
    frames = []
    for t, k in ((base, 500), (fat, 150)):
        idx = rng.choice(pool, k)
        nodes = rng.choice([1, 2, 3, 4, 6, 8, 12, 16], k)
        two = apps[idx] == apps[pool[0]]  # one application at two sizes: Amdahl only
        nodes[two] = rng.choice([2, 4], int(two.sum()))
        freqs = np.asarray(t.freqs_ghz)[rng.integers(0, len(t.freqs_ghz), k)]
        frames.append(truth.measure(idx, t, nodes, freqs, None, None, None, rng))
    runs = pd.concat(frames, ignore_index=True)
    runs = runs.iloc[rng.permutation(len(runs))].reset_index(drop=True)
    r = rng.random(len(runs))
    runs.loc[(r > 0.3) & (r < 0.38), "requested_time_s"] = np.nan
    runs.loc[(r > 0.5) & (r < 0.56), "requested_nodes"] = np.nan
    runs.loc[(r > 0.7) & (r < 0.72), "node_type"] = None  # the default type
    # a run without instructions: its application is fitted by the reference path
    late = runs.index[(r > 0.9) & (np.arange(len(runs)) > 400)][:1]
    runs.loc[late, "instructions"] = np.nan
    return platform, runs


def _key(state) -> tuple:
    if state is None:
        return (None,)
    m = state.model
    if isinstance(m, AmdahlModel):
        model: tuple = ("amdahl", m.a, m.b, m.distinct_nodes)
    else:
        assert isinstance(m, AdeptModel)
        model = (
            "adept",
            *(m.A, m.sigma, m.L, m.reliable, m.target, m.scale),
            *(m.nodes, m.tau, m.run_nodes, m.run_tau),
        )
    return (*model, state.rho, state.median_work, state.count)


@pytest.mark.parametrize("refit_tol", [0.02, 0.0])
def test_incremental_refits_equal_the_reference_after_every_update(stream, refit_tol) -> None:
    platform, runs = stream
    obs = Observations(runs=runs.iloc[:3], platform=platform)
    fast = AdeptPredictor(refit_tol=refit_tol, **FAST).fit(obs)
    ref = _Reference(refit_tol=refit_tol, **FAST).fit(obs)
    kinds = set()
    reused = 0
    for batch in update_batches(runs.iloc[3:]):
        fast.update(batch)
        ref.update(batch)
        apps = sorted(set(np.asarray(batch["application"]).tolist()))
        for a in apps:
            before = fast.models_.get(a)
            fast._flush(a)
            ref._flush(a)
            assert same_bits(_key(fast.state_.get(a)), _key(ref.state_.get(a))), a
            state = fast.state_.get(a)
            if state is not None:
                kinds.add(type(state.model).__name__)
                reused += before is not None and state.model is before
        assert fast._n_refits == ref._n_refits
    # the stream exercised both models, reused fits and incremental state
    assert kinds == {"AdeptModel", "AmdahlModel"}
    assert fast._n_refits > 5
    if refit_tol > 0:
        assert reused > 0
    assert any(isinstance(s.fit_cache, _AdeptRuns) for s in fast._stores.values())
    assert any(s.bad_work for s in fast._stores.values())  # the reference path too


def _reference_runs(pred: AdeptPredictor, app: int) -> tuple[np.ndarray, np.ndarray]:
    """The usable, kept runs ``(nodes, tau)`` of the reference computation."""
    runs = pred.runs_[app]
    names = np.where(pd.isna(runs["node_type"]), pred.info_.default, runs["node_type"])
    fmax = pred.info_.fmax(names.astype(object), runs["freq_ghz"])
    tau = runs["time_s"] * (runs["freq_ghz"] / fmax) / runs["instructions"]
    nodes = runs["nodes"]
    ok = np.isfinite(tau) & (tau > 0) & np.isfinite(nodes) & (nodes >= 1)
    top = ok & np.isclose(runs["freq_ghz"], fmax, rtol=1e-6, atol=1e-8)
    ok &= top | ~np.isin(nodes, nodes[top])
    return nodes[ok], tau[ok]


def test_per_size_sums_equal_a_full_recomputation(stream) -> None:
    platform, runs = stream
    pred = AdeptPredictor(**FAST).fit(Observations(runs=runs.iloc[:5], platform=platform))
    for batch in update_batches(runs.iloc[5:]):
        pred.update(batch)
    pred._flush()
    checked = dropped = 0
    for app, store in pred._stores.items():
        inc = store.fit_cache
        if not isinstance(inc, _AdeptRuns):
            continue
        nodes, tau = _reference_runs(pred, app)
        un, inv = np.unique(nodes, return_inverse=True)
        assert inc.size_list == un.tolist()
        avg = np.bincount(inv, weights=tau) / np.bincount(inv)
        assert inc.averages() == avg.tolist()
        kn, kt = inc.kept_columns()
        assert same_bits((kn, kt), (nodes, tau))
        if len(un) >= 2:
            a, b = inc.amdahl(), fit_amdahl(nodes, tau)
            assert (a.a, a.b, a.distinct_nodes) == (b.a, b.b, b.distinct_nodes)
        checked += 1
        dropped += inc.dropped
    assert checked >= 5
    assert dropped > 0  # runs below Fmax dropped when their size got a run at Fmax


def test_single_size_amdahl_is_the_geometric_mean_of_the_kept_runs() -> None:
    # one node count: b = 0 and a = the geometric mean of n * tau over the kept runs;
    # the run below Fmax is dropped when the size gets a run at Fmax
    inc = _AdeptRuns()
    inc._add(4.0, 9.0, 4.0, False)  # below Fmax: kept while the size has no run at Fmax
    first = inc.amdahl()
    assert (first.a, first.b, first.distinct_nodes) == (36.0, 0.0, 1)
    inc._add(4.0, 1.0, 4.0, True)
    inc._add(4.0, 4.0, np.nan, True)
    assert list(inc.kept) == [0, 1, 1] and inc.dropped == 1 and list(inc.req_sorted) == [4.0]
    model = inc.amdahl()
    assert (model.b, model.distinct_nodes) == (0.0, 1)
    assert model.a == pytest.approx(8.0, rel=1e-15)  # sqrt(4 * 16)
    ref = fit_amdahl(np.array([4.0, 4.0]), np.array([1.0, 4.0]))
    assert (model.a, model.b) == (ref.a, ref.b)
    kn, kt = inc.kept_columns()
    assert kn.tolist() == [4.0, 4.0] and kt.tolist() == [1.0, 4.0]


def test_fresh_fit_equals_the_refitted_state_without_tolerance(stream) -> None:
    # refit_tol = 0: a refit whose averages moved is a new fit of the same runs,
    # exactly what a predictor fitted on all of them computes
    platform, runs = stream
    part = runs.iloc[:200]
    online = AdeptPredictor(refit_tol=0.0, **FAST).fit(
        Observations(runs=part.iloc[:20], platform=platform)
    )
    for batch in update_batches(part.iloc[20:]):
        online.update(batch)
    online._flush()
    fresh = AdeptPredictor(refit_tol=0.0, **FAST).fit(Observations(runs=part, platform=platform))
    compared = 0
    for app, state in fresh.state_.items():
        other = online.state_.get(app)
        if state is None or other is None:
            assert state is other
            continue
        assert same_bits(_key(state), _key(other)), app
        compared += 1
    assert compared >= 5


def test_tables_equal_the_shape_on_every_cell(stream) -> None:
    # ADEPT's _compute_table (cached n, Fmax/f row, power and reliability tables)
    # against the base class's table from _shape on every cell, bit for bit, for
    # both node types, both models and tables of several frequency sets
    platform, runs = stream
    pred = AdeptPredictor(**FAST).fit(Observations(runs=runs.iloc[:5], platform=platform))
    kinds = set()
    for k, batch in enumerate(update_batches(runs.iloc[5:400])):
        pred.update(batch)
        if k % 7:
            continue
        pred._flush()
        for app, state in pred.state_.items():
            if state is None:
                continue
            kinds.add(type(state.model).__name__)
            for t in platform.node_types:
                all_f = np.asarray(t.freqs_ghz, dtype=float)
                for freqs in (all_f, all_f[::2].copy()):
                    meta = (t.count, freqs)
                    got = pred._compute_table(app, state, t.name, meta)
                    want = PerApplicationPredictor._compute_table(pred, app, state, t.name, meta)
                    assert same_bits(tuple(np.array(x) for x in got[:3]), want[:3]), (app, t.name)
    assert kinds == {"AdeptModel", "AmdahlModel"}


class _Rows:
    """A store's runs up to row ``n`` (what :meth:`_AdeptRuns.extend` reads: ``n`` and
    :meth:`_AppStore.decoded`, here always converted from the store's buffers)."""

    def __init__(self, store: _AppStore, n: int) -> None:
        self.store, self.n = store, n

    def decoded(self, lo: int, hi: int) -> DecodedRuns:
        assert hi == self.n
        return decode_block(self.store.num[:, lo:hi], self.store.nt[lo:hi])


def _plain_extend(inc: _AdeptRuns, pred: AdeptPredictor, runs: dict, hi: int) -> None:
    """:meth:`_AdeptRuns.extend`'s plain path: each row's values through
    :meth:`PlatformInfo.row_fmax`, then :meth:`_AdeptRuns._add` run by run."""
    info = pred.info_
    for i in range(inc.done, hi):
        name = runs["node_type"][i]
        if name is None or (not isinstance(name, str) and pd.isna(name)):
            name = info.default
        f = float(runs["freq_ghz"][i])
        fmax = info.row_fmax(name, f)
        assert fmax is not None
        t = float(runs["time_s"][i]) * (f / fmax) / float(runs["instructions"][i])
        n = float(runs["nodes"][i])
        if not (np.isfinite(t) and t > 0 and np.isfinite(n) and n >= 1):
            continue
        r = float(runs["requested_nodes"][i])
        if not (np.isfinite(r) and r >= 1):
            r = np.nan
        inc._add(n, t, r, abs(f - fmax) <= 1e-8 + 1e-6 * abs(fmax))
    inc.done = hi


def _inc_state(inc: _AdeptRuns) -> tuple:
    k = inc.n
    lists = (inc.kept, inc.nodes, inc.tau, inc.prod, inc.req)
    assert [len(x) for x in lists] == [k] * 5
    arrays = tuple(np.array(x).tobytes() for x in (*lists, *inc.kept_columns()))
    amdahl = inc.amdahl() if k else None
    fit = None if amdahl is None else (amdahl.a, amdahl.b, amdahl.distinct_nodes)
    return (
        arrays,
        repr(inc.sizes),
        repr(inc.size_list),
        repr(inc.req_sorted),
        (inc.n, inc.done, inc.dropped),
        repr(fit),
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_extend_equals_run_by_run_adds(stream, seed) -> None:
    # extend's block path (the runs' values read as lists, the per-run operations
    # inline) against the plain per-run _add, bit for bit: blocks of 1 to 40 runs,
    # and one whole-store block (every drop is of a run of the same block)
    platform, runs = stream
    runs = runs.copy()
    rng = np.random.default_rng(seed)
    # some runs without a usable normalised time or node count
    bad = rng.random(len(runs))
    runs.loc[bad < 0.02, "time_s"] = np.nan
    runs.loc[(bad > 0.02) & (bad < 0.03), "nodes"] = 0.0
    runs.loc[(bad > 0.03) & (bad < 0.04), "instructions"] = -1.0
    pred = AdeptPredictor(**FAST).fit(Observations(runs=runs, platform=platform))
    checked = in_block_drops = 0
    for store in pred._stores.values():
        cols, total = store.runs, store.n
        plain = _AdeptRuns()
        _plain_extend(plain, pred, cols, total)
        whole = _AdeptRuns()
        whole.extend(pred, _Rows(store, total))
        assert _inc_state(whole) == _inc_state(plain)
        in_block_drops += whole.dropped
        blocks, plain = _AdeptRuns(), _AdeptRuns()
        hi = 0
        while hi < total:
            hi = min(total, hi + int(rng.integers(1, 41)))
            blocks.extend(pred, _Rows(store, hi))
            _plain_extend(plain, pred, cols, hi)
            assert _inc_state(blocks) == _inc_state(plain)
        checked += 1
    assert checked >= 5
    assert in_block_drops > 0


def test_a_refit_to_the_same_amdahl_parameters_keeps_the_model_and_its_shape() -> None:
    # one application at one node count: runs with n * tau = 4 * 0.25 = 1 at Fmax give
    # a = geomean(n * tau) = exp(0) = 1 however many there are, so a refit after
    # another such run keeps the model object, and with it the shape tables and
    # shapes (_tables_follow_model); a run with another time moves a: a new model,
    # the reference's values
    _, platform, truth = kth_two_types()
    base = platform.node_types[0]
    top = max(base.freqs_ghz)
    rng = np.random.default_rng(0)
    run = truth.measure(np.array([0]), base, np.array([4]), np.array([top]), None, None, None, rng)
    run["instructions"] = 4000.0
    run["time_s"] = 1000.0  # tau = time / instructions = 0.25 at Fmax
    app = int(run["application"].iloc[0])
    sizes = np.arange(1, base.count + 1)
    freqs = np.asarray(base.freqs_ghz, dtype=np.float64)
    first = pd.concat([run] * 3, ignore_index=True)  # min_observations runs
    pred = AdeptPredictor(**FAST).fit(Observations(runs=first, platform=platform))
    ref = _Reference(**FAST).fit(Observations(runs=first, platform=platform))
    shape = pred.grid_shape(app, base.name, sizes, freqs, 4.0, 3600.0)[0]
    model = pred.model_of(app)
    assert isinstance(model, AmdahlModel) and (model.a, model.b) == (1.0, 0.0)

    same = run.copy()
    same["requested_time_s"] = 2.0 * run["requested_time_s"]  # a new rho, the same a
    for p in (pred, ref):
        p.update(same)
        p._flush(app)  # (the deferred refit)
    assert pred.model_of(app) is model
    assert pred.grid_shape(app, base.name, sizes, freqs, 4.0, 3600.0)[0] is shape
    assert same_bits(_key(pred.state_[app]), _key(ref.state_[app]))  # (rho refreshed)

    other = run.copy()
    other["time_s"] = 1.5 * run["time_s"]
    for p in (pred, ref):
        p.update(other)
        p._flush(app)
    moved = pred.model_of(app)
    assert moved is not model and moved.a > model.a
    assert same_bits(_key(pred.state_[app]), _key(ref.state_[app]))
    assert pred.grid_shape(app, base.name, sizes, freqs, 4.0, 3600.0)[0] is not shape


def test_same_amdahl_is_bitwise_equality_of_the_parameters() -> None:
    from predictors.adept import _same_amdahl

    m = AmdahlModel(2.0, 0.0, 1)
    assert _same_amdahl(AmdahlModel(2.0, 0.0, 1), m)
    assert not _same_amdahl(AmdahlModel(2.0, -0.0, 1), m)  # 0.0 and -0.0 differ
    assert not _same_amdahl(AmdahlModel(2.0, 0.0, 2), m)
    assert not _same_amdahl(AmdahlModel(np.nextafter(2.0, 3.0), 0.0, 1), m)
    assert not _same_amdahl(AmdahlModel(float("nan"), 0.0, 1), AmdahlModel(float("nan"), 0.0, 1))
    assert not _same_amdahl(None, m)
