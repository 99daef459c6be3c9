"""The runs a predictor keeps for ``observations_`` are folded into batches of
columns as they queue up (PendingRunsMixin._queue_runs): the same runs, in the
same order, shared by the parts of a composite."""

from __future__ import annotations

import numpy as np
import pandas as pd

from predictors.base import Observations, PendingRunsMixin, RunBatch, RunRows
from predictors.registry import get_predictor
from tests.predictors.helpers import kth_two_types
from workloads.runs import RUN_ROW_COLUMNS, RUN_ROW_DTYPES


def _engine_like_batches(runs: pd.DataFrame, seed: int):
    """Batches of 1-3 runs as the engine and chooser hand them over (rows made into
    a RunBatch), from the 40th on every fifth one a RunBatch of columns."""
    runs = runs.assign(killed=False)
    rng = np.random.default_rng(seed)
    lo = k = 0
    while lo < len(runs):
        part = runs.iloc[lo : lo + int(rng.integers(1, 4))]
        if k > 40 and k % 5 == 4:
            yield RunBatch.from_frame(part[list(RUN_ROW_COLUMNS)])
        else:
            rows = list(zip(*(part[c].tolist() for c in RUN_ROW_COLUMNS)))
            yield RunRows(rows).to_batch()
        lo += len(part)
        k += 1


def test_folded_runs_are_the_runs_queued(monkeypatch) -> None:
    trace, platform, truth = kth_two_types()
    base = platform.node_types[0]
    rng = np.random.default_rng(1)
    idx = rng.integers(0, len(trace.jobs), 300)
    nodes = rng.integers(1, base.count + 1, 300)
    freqs = np.asarray(base.freqs_ghz)[rng.integers(0, len(base.freqs_ghz), 300)]
    runs = truth.measure(idx, base, nodes, freqs, None, None, None, rng)
    obs = Observations(runs=runs.iloc[:30], platform=platform)

    def learn(fold_every: int):
        monkeypatch.setattr(PendingRunsMixin, "PENDING_FOLD", fold_every)
        predictor = get_predictor("amdahl+fluid").fit(obs)
        for batch in _engine_like_batches(runs.iloc[30:], seed=2):
            predictor.update(batch)
        return predictor

    plain = learn(10**9)
    folded = learn(8)
    node, freq = folded.node_, folded.freq_
    assert len(node._pending) < 30 < len(plain.node_._pending)
    # both parts hold the same folded batches (one copy of the runs)
    assert all(a is b for a, b in zip(node._pending, freq._pending))
    assert sum(b.rows() is None for b in node._pending) >= 10
    for part, ref in ((node, plain.node_), (freq, plain.freq_)):
        pd.testing.assert_frame_equal(
            part.observations_.runs, ref.observations_.runs, check_exact=True
        )
    assert len(node.observations_.runs) == 300


def _odd_rows(k: int, seed: int) -> list[tuple]:
    """``k`` rows as the engine makes them, with NaN, None, infinities, Python ints in
    float columns and a few huge ints in the int columns."""
    rng = np.random.default_rng(seed)
    odd = [None, np.nan, np.inf, -0.0, 7, 1e308]
    rows = []
    for _ in range(k):
        row: list = []
        for c, d in zip(RUN_ROW_COLUMNS, RUN_ROW_DTYPES):
            if c == "killed":
                row.append(bool(rng.random() < 0.2))
            elif c == "node_type":
                row.append(str(rng.choice(["a", "b"])))
            elif d == "int64":
                row.append(2**53 + 1 if rng.random() < 0.02 else int(rng.integers(0, 500)))
            else:
                v = float(rng.uniform(-1e4, 1e4))
                row.append(odd[int(rng.integers(len(odd)))] if rng.random() < 0.2 else v)
        rows.append(tuple(row))
    return rows


def test_folding_reuses_the_decoded_blocks_with_the_rows_values() -> None:
    """Batches of rows whose numeric blocks were made (the predictor's update reads
    them) fold into the columns of their rows, bit for bit and dtype for dtype: the
    float columns from the blocks; the int columns from the blocks unless a value is
    too large for a float to hold it exactly (2**53 + 1: then from the rows)."""
    from predictors.baselines import _run_blocks

    for seed, huge in ((0, False), (1, True)):
        rows = _odd_rows(300, seed)
        if not huge:
            rows = [
                tuple(min(v, 10**6) if d == "int64" else v for v, d in zip(r, RUN_ROW_DTYPES))
                for r in rows
            ]
        batches = []
        lo = 0
        rng = np.random.default_rng(seed)
        while lo < len(rows):
            hi = lo + int(rng.integers(1, 5))
            batches.append(RunRows(rows[lo:hi]).to_batch())
            lo = hi
        plain = RunRows(rows).to_batch().cols
        assert RunBatch.fold_rows(batches).cols.keys() == plain.keys()  # no block yet
        for b in batches:
            _run_blocks(b)
            assert b.numeric is not None
        got = RunBatch.fold_rows(batches).cols
        assert list(got) == list(plain)
        for c, want in plain.items():
            assert got[c].dtype == want.dtype, c
            if want.dtype == object:
                assert got[c].tolist() == want.tolist(), c
            else:
                assert got[c].tobytes() == want.tobytes(), c
        big = np.abs(plain["nodes"]) > 2**53
        assert big.any() == huge
