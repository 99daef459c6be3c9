"""The learning loop's update: engine rows read as blocks equal the columns' blocks,
and refits of mixed node types equal the whole-table fits."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from predictors.base import RUN_ROW_COLUMNS, RUN_ROW_DTYPES, Observations, RunBatch, RunRows
from predictors.baselines import NUMERIC_RUN_COLUMNS, _rows_block, _run_blocks
from predictors.dvfs import FluidPredictor
from tests.predictors.helpers import same_bits, three_pstate_platform, whole_table_reference

_INT_COLUMNS = ("application", "nodes", "cores", "requested_nodes")


def _engine_rows(k: int, rng: np.random.Generator, apps: tuple[int, ...] = (3,)) -> list[tuple]:
    """``k`` :data:`RUN_ROW_COLUMNS` rows as the engine makes them: Python ints in the
    int columns; the float columns mix Python floats, numpy floats, Python ints, None,
    NaN, infinities and extreme values."""
    odd = [None, math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, 5e-324, 7, -3]
    rows = []
    for i in range(k):
        row: list = []
        for c in RUN_ROW_COLUMNS:
            if c == "killed":
                row.append(bool(rng.random() < 0.1))
            elif c == "node_type":
                row.append("n")
            elif c == "application":
                row.append(int(rng.choice(apps)))
            elif c in _INT_COLUMNS:
                row.append(int(rng.integers(1, 2**40)) if rng.random() < 0.1 else i % 7 + 1)
            elif c == "job_id":
                row.append(i)
            else:
                v = float(rng.uniform(0.1, 1e4))
                kind = int(rng.integers(0, 6))
                if kind == 1:
                    row.append(np.float64(v))
                elif kind == 2:
                    row.append(odd[int(rng.integers(len(odd)))])
                else:
                    row.append(v)
        rows.append(tuple(row))
    return rows


def _column_blocks(rows: list[tuple]) -> list:
    """The reference: :func:`_run_blocks` of the rows' columns, built per column."""
    cols = {
        c: np.array(col, dtype=d) for c, d, col in zip(RUN_ROW_COLUMNS, RUN_ROW_DTYPES, zip(*rows))
    }
    return _run_blocks(RunBatch(cols, len(rows)))


def _assert_same_blocks(got: list, want: list) -> None:
    assert len(got) == len(want)
    for (a, num, types), (b, num2, types2) in zip(got, want):
        assert a == b and type(a) is type(b) is int
        assert num.dtype == num2.dtype and num.shape == num2.shape
        assert np.ascontiguousarray(num).tobytes() == num2.tobytes()
        assert types.dtype == types2.dtype == object and types.tolist() == types2.tolist()


@pytest.mark.parametrize("k", [1, 2, 5, 17, 60])
def test_rows_of_python_ints_read_at_once_equal_their_columns(k) -> None:
    """Rows as the engine makes them (Python ints in the int columns): their blocks
    (one application or several) are the columns' blocks, bit for bit."""
    rng = np.random.default_rng(k)
    for apps in [(3,), (5, 2, 9)]:
        rows = _engine_rows(k, rng, apps)
        assert _rows_block(rows) is not None  # the rows path, not the columns' fallback
        _assert_same_blocks(_run_blocks(RunRows(rows).to_batch()), _column_blocks(rows))


@pytest.mark.parametrize("value", [2.0, 2.5, True, np.int64(4), np.float64(3.0), 2**63], ids=repr)
@pytest.mark.parametrize("column", _INT_COLUMNS)
def test_rows_with_other_values_in_int_columns_take_the_column_path(column, value) -> None:
    """A value that is not a Python int in an int column (a float, a bool, a numpy
    number; a huge int): the blocks stay the columns' (or the same error)."""
    rng = np.random.default_rng(1)
    rows = _engine_rows(6, rng)
    at = RUN_ROW_COLUMNS.index(column)
    rows[3] = (*rows[3][:at], value, *rows[3][at + 1 :])
    try:
        want = _column_blocks(rows)
    except OverflowError:  # 2**63 does not fit an int64 column
        assert _rows_block(rows) is None  # the rows path declines: the columns decide
        with pytest.raises(OverflowError):
            _run_blocks(RunRows(rows).to_batch())
        return
    _assert_same_blocks(_run_blocks(RunRows(rows).to_batch()), want)


def _runs_frame(k: int, rng: np.random.Generator, node_types: list[object]) -> pd.DataFrame:
    cols = {c: np.full(k, np.nan) for c in NUMERIC_RUN_COLUMNS}
    nodes = rng.choice([1.0, 2.0, 4.0, 8.0], k)
    freq = rng.choice([1.2, 1.8, 2.4], k)
    cols.update(
        nodes=nodes,
        freq_ghz=freq,
        time_s=100.0 / nodes * (0.3 + 0.7 * 2.4 / freq) * rng.uniform(0.9, 1.1, k),
        power_w=rng.uniform(150.0, 250.0, k),
        instructions=rng.uniform(1e11, 1e12, k),
    )
    odd = rng.random(k)
    cols["power_w"][odd < 0.1] = np.nan  # no usable power
    cols["time_s"][(odd > 0.1) & (odd < 0.15)] = 0.0  # tau = 0: in no group, bad tn
    cols["time_s"][(odd > 0.15) & (odd < 0.18)] = np.inf
    frame = pd.DataFrame(cols)
    frame["application"] = 1
    frame["node_type"] = pd.Series(node_types * k, dtype=object)[:k].to_numpy()
    return frame


def test_fluid_refits_of_several_node_types_equal_the_reference() -> None:
    """Blocks that mix node types (one of them not a str): the refits stay the
    whole-table fits."""
    Reference = whole_table_reference(FluidPredictor)

    rng = np.random.default_rng(7)
    obs = Observations(
        runs=_runs_frame(1, np.random.default_rng(0), ["n"]).iloc[:0],
        platform=three_pstate_platform(),
    )
    fast, ref = FluidPredictor().fit(obs), Reference().fit(obs)
    for types in (["n"], ["n", "n", np.str_("n")], ["n"]):
        frame = _runs_frame(9, rng, types)
        frame["requested_nodes"] = frame["nodes"]
        frame["requested_time_s"] = 300.0
        fast.update(frame)
        ref.update(frame)
        s, t = ref.state_[1], fast.state_[1]
        assert same_bits(
            (t.model.g, t.model.alpha, t.model.power, t.rho),
            (s.model.g, s.model.alpha, s.model.power, s.rho),
        )
