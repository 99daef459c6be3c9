"""Each handed-over block of runs is converted to Python lists once per update
(:func:`predictors.baselines.decode_block`): the store's facts and both parts' run
containers (:class:`predictors.dvfs._DvfsRuns`, :class:`predictors.adept._AdeptRuns`)
read the same lists. These tests check the lists against the block's columns and a
composite learning from them against one whose readers each convert the store's
buffers themselves (the plain way)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from predictors.base import Observations
from predictors.baselines import NUMERIC_RUN_COLUMNS, _AppStore, _run_blocks, decode_block
from predictors.registry import get_predictor
from tests.predictors.helpers import same_bits, two_type_stream, update_batches

#: the columns of decode_block's lists, in their order (then the node type names)
_DECODED_COLUMNS = (
    "freq_ghz",
    "nodes",
    "time_s",
    "power_w",
    "instructions",
    "requested_nodes",
    "requested_time_s",
)


@pytest.fixture(scope="module")
def stream():
    """Runs of KTH-SP2 jobs on two node types (shuffled), some with missing values."""
    return two_type_stream((300, 120), seed=3)


def test_decoded_lists_are_the_named_columns_of_the_block() -> None:
    """Each list is its column's values (by name, not by position), as ``tolist``
    gives them: NaN, infinities and signed zeros included."""
    rng = np.random.default_rng(0)
    num = rng.uniform(-1e3, 1e3, (len(NUMERIC_RUN_COLUMNS), 6))
    num[:, 1] = np.nan
    num[:, 2] = -0.0
    num[:, 3] = np.inf
    types = np.array(["a", None, "b", "a", np.nan, "c"], dtype=object)
    got = decode_block(num, types)
    assert len(got) == len(_DECODED_COLUMNS) + 1
    for column, values in zip(_DECODED_COLUMNS, got):
        want = num[NUMERIC_RUN_COLUMNS.index(column)].tolist()
        assert same_bits(tuple(values), tuple(want)), column
    assert got[-1][:4] == ["a", None, "b", "a"] and got[-1][4] is types[4]


def _plain_decoded(self: _AppStore, lo: int, hi: int):
    """The plain way: every reader converts the store's rows itself."""
    return decode_block(self.num[:, lo:hi], self.nt[lo:hi])


def _learn(platform, runs, flush_seed: int) -> tuple:
    """adept+fluid fitted on the first runs, then updated batch by batch; ADEPT's
    deferred refits of a few applications done between updates (so that some of
    its reads cover several updates' runs), then every one."""
    p = get_predictor("adept+fluid").fit(Observations(runs=runs.iloc[:30], platform=platform))
    rng = np.random.default_rng(flush_seed)
    for batch in update_batches(runs.iloc[30:], seed=5):
        p.update(batch)
        dirty = sorted(p.node_._dirty)
        for app in dirty:
            if rng.random() < 0.5:
                p.node_._flush(app)
    p.node_._flush()
    return p


def _exact(value):
    """``value`` as exact text (``repr`` of floats is exact), objects with slots slot by
    slot (not by address), models as pickles."""
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_exact(v) for v in value]
    slots = getattr(type(value), "__slots__", None)
    if slots:
        return {name: _exact(getattr(value, name)) for name in slots}
    if hasattr(value, "__dataclass_fields__"):
        return pickle.dumps(value)
    return repr(value)


def _containers(part) -> dict:
    """Every application's run container (``fit_cache``) of a part, exactly."""
    return {app: _exact(store.fit_cache) for app, store in part._stores.items()}


def _states(part) -> dict:
    return {
        app: None
        if st is None
        else (pickle.dumps(st.model), repr((st.rho, st.median_work, st.count)))
        for app, st in part.state_.items()
    }


def test_shared_decodes_learn_what_each_readers_own_decodes_learn(stream, monkeypatch) -> None:
    """A composite whose readers share each block's lists ends with the same run
    containers and fitted states, bit for bit, as one whose readers each convert
    the store's rows; the shared lists were read (most reads) and then dropped."""
    platform, runs = stream
    hits = {"shared": 0, "reads": 0}
    real_decoded = _AppStore.decoded

    def counting(self, lo, hi):
        hits["reads"] += 1
        recent = self._recent
        if recent is not None and recent[0] == lo and recent[1] == hi:
            hits["shared"] += 1
        return real_decoded(self, lo, hi)

    monkeypatch.setattr(_AppStore, "decoded", counting)
    shared = _learn(platform, runs, flush_seed=1)
    monkeypatch.setattr(_AppStore, "decoded", _plain_decoded)
    plain = _learn(platform, runs, flush_seed=1)
    for a, b in ((shared.node_, plain.node_), (shared.freq_, plain.freq_)):
        assert _containers(a) == _containers(b)
        assert _states(a) == _states(b)
    assert hits["reads"] > 100
    assert hits["shared"] > hits["reads"] // 2  # most refits read the last block
    assert hits["shared"] < hits["reads"]  # and some read older runs too
    # once both parts read an application's last block, its lists are gone
    for app, store in shared.node_._stores.items():
        other = shared.freq_._stores[app]
        if store.twin is other and store.fit_cache is not None and other.fit_cache is not None:
            done = store.fit_cache.done == store.n and other.fit_cache.n == store.n
            if done:
                assert store._recent is None and other._recent is None, app


def test_a_store_keeps_the_last_block_until_each_reader_read_it(stream) -> None:
    """Twins share one entry, dropped once both have read the last block (a read of
    older runs up to the last one counts, and is converted from the buffers); a lone
    store's entry goes at its one read; either way later reads give the same lists."""
    platform, runs = stream
    info = get_predictor("fluid").fit(Observations(runs=runs.iloc[:0], platform=platform)).info_
    app = int(runs["application"].value_counts().index[0])
    mine = runs[runs["application"] == app]
    assert len(mine) >= 4
    blocks = [_run_blocks(part)[0][1:] for part in (mine.iloc[:2], mine.iloc[2:])]
    lead, follower, alone = _AppStore(), _AppStore(), _AppStore()
    for num, types in blocks:
        lead.append(num, types, info, keep_twin=True)
        follower.follow(lead)
        alone.append(num, types, info)
    n0, n = lead.n - blocks[1][0].shape[1], lead.n
    assert lead.twin is follower and lead._recent is follower._recent
    first = lead.decoded(n0, n)
    assert lead._recent is not None  # the follower has not read it yet
    older = follower.decoded(0, n)  # the follower reads everything since its start
    assert lead._recent is None and follower._recent is None
    assert repr(older) == repr(_plain_decoded(lead, 0, n))
    assert repr(first) == repr(_plain_decoded(lead, n0, n))
    again = lead.decoded(n0, n)  # converted anew: the same values
    assert again is not first and repr(again) == repr(first)
    assert alone.decoded(n0, n) is not None and alone._recent is None
