"""Finished runs as the engine hands them to a learning policy.

The simulator measures finished jobs (through the ground truth) and hands
the runs to the policy's ``observe``; predictors learn from the same runs.
Both sides import the record types from here, the lowest layer they share:

* a DataFrame with :data:`~workloads.schema.RUN_COLUMNS` (plus ``killed``):
  what every policy accepts;
* :class:`RunRows` (one tuple per run) and :class:`RunBatch` (numpy columns):
  lighter hand-overs for policies that declare they accept them
  (``PolicyTags.observe_rows``, see :mod:`policies.base`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from workloads.schema import RUN_COLUMNS


def empty_runs() -> pd.DataFrame:
    """An empty runs table with the right columns."""
    return pd.DataFrame({c: pd.Series(dtype=column_dtype(c)) for c in RUN_COLUMNS})


def column_dtype(column: str) -> str:
    """The dtype of a runs-table or benchmark-table column."""
    if column in ("job_id", "application", "nodes", "cores", "requested_nodes"):
        return "int64"
    if column in ("node_type", "benchmark"):
        return "object"
    return "float64"


class RunBatch:
    """Finished runs as numpy columns: a light stand-in for a runs DataFrame.

    The engine measures a handful of runs per batch; building a DataFrame for
    each batch (and splitting it again per application in the predictor)
    costs far more than the learning itself. Built-in policies and predictors
    therefore exchange runs as a ``RunBatch`` (``accepts_run_batch``); plug-ins
    always receive a DataFrame (:meth:`to_frame`, same columns and dtypes).

    ``batch[column]`` is a 1-D numpy array; ``len(batch)`` the number of runs;
    ``columns`` the column names in DataFrame order; ``cols`` the dict of all
    columns.

    A batch made by :meth:`RunRows.to_batch` keeps the rows and builds its
    columns when first asked for ``cols`` (``batch[column]`` builds that
    column alone): the built-in predictors read such a batch's numbers
    straight from its rows (:meth:`rows`), which costs a fraction of a dozen
    small arrays per hand-over. The columns are the same either way.

    ``numeric``: what a reader of such a batch converted of its rows, kept so that
    nothing converts them again: ``(column names, float64 block)``, one block row
    per name (the column's values, of an int64 column converted through int64 as
    its column is), one block column per run; ``None`` until a reader sets it
    (:func:`predictors.baselines._run_blocks` does; folding kept batches into one
    batch of columns reuses it, :func:`predictors.base._fold_batches`).
    """

    __slots__ = ("_cols", "_rows", "n", "numeric")

    def __init__(self, cols: dict[str, np.ndarray], n: int | None = None) -> None:
        self._cols: dict[str, np.ndarray] | None = cols
        self._rows: list[tuple[Any, ...]] | None = None
        self.n = len(next(iter(cols.values()))) if n is None else n
        self.numeric: tuple[tuple[str, ...], np.ndarray] | None = None

    @classmethod
    def _of_rows(cls, rows: list[tuple[Any, ...]]) -> RunBatch:
        """A batch of :data:`RUN_ROW_COLUMNS` rows (at least one) whose columns are
        built when first needed (see the class docstring)."""
        batch = cls.__new__(cls)
        batch._cols = None
        batch._rows = rows
        batch.n = len(rows)
        batch.numeric = None
        return batch

    @property
    def cols(self) -> dict[str, np.ndarray]:
        """The columns (built from the rows on first use for a batch of rows)."""
        cols = self._cols
        if cols is None:
            rows = self._rows
            assert rows is not None
            cols = self._cols = {
                c: np.array(col, dtype=d)
                for c, d, col in zip(RUN_ROW_COLUMNS, RUN_ROW_DTYPES, zip(*rows))
            }
        return cols

    def rows(self) -> list[tuple[Any, ...]] | None:
        """The :data:`RUN_ROW_COLUMNS` rows of a batch made by :meth:`RunRows.to_batch`
        (read them, never change them); ``None`` for a batch made of columns."""
        return self._rows

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, column: str) -> np.ndarray:
        cols = self._cols
        if cols is None:  # one column of the rows (the same array as in cols)
            k = _ROW_INDEX.get(column)
            if k is None:
                raise KeyError(column)
            rows = self._rows
            assert rows is not None
            return _row_column(rows, k)
        return cols[column]

    def __contains__(self, column: object) -> bool:
        if self._cols is None:
            return column in _ROW_INDEX
        return column in self._cols

    @property
    def columns(self) -> list[str]:
        if self._cols is None:
            return list(RUN_ROW_COLUMNS)
        return list(self._cols)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> RunBatch:
        return cls({str(c): frame[c].to_numpy() for c in frame.columns}, len(frame))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.cols, copy=False)

    def take(self, index: np.ndarray) -> RunBatch:
        """The rows selected by a boolean mask or an index array."""
        cols = {k: v[index] for k, v in self.cols.items()}
        return RunBatch(cols)

    @staticmethod
    def fold_rows(batches: Sequence[RunBatch]) -> RunBatch:
        """The runs of batches of rows (:meth:`rows` is not ``None`` for any), in
        order, as one batch of columns: the columns of all their rows (the values and
        dtypes :attr:`cols` gives). A column that every batch holds in its
        :attr:`numeric` block (under the same names) is taken from the blocks, not
        converted from the rows again: a float64 column as it is, an int64 column
        converted back when every value is an integer of magnitude below ``2**53``
        (the block holds it exactly then), else from the rows."""
        rows = [row for b in batches for row in cast(list, b.rows())]
        kept = [b.numeric for b in batches]
        first = kept[0]
        if first is None or any(k is None or k[0] != first[0] for k in kept):
            return RunBatch(RunRows(rows).to_batch().cols)
        block = np.concatenate([cast(tuple, k)[1] for k in kept], axis=1)
        position = {c: i for i, c in enumerate(first[0])}
        cols: dict[str, np.ndarray] = {}
        for k, (c, d) in enumerate(zip(RUN_ROW_COLUMNS, RUN_ROW_DTYPES)):
            i = position.get(c)
            values = block[i] if i is not None else None
            if values is not None and d == "float64":
                cols[c] = values.copy()  # (its own memory: the block is not kept)
            elif values is not None and d == "int64" and (np.abs(values) < 2.0**53).all():
                cols[c] = values.astype(np.int64)
            else:  # (only these columns are read from the rows)
                cols[c] = _row_column(rows, k)
        return RunBatch(cols, len(rows))

    @staticmethod
    def concat(batches: Sequence[RunBatch]) -> RunBatch:
        if len(batches) == 1:
            return batches[0]
        keys = list(batches[0].cols)
        return RunBatch({k: np.concatenate([b.cols[k] for b in batches]) for k in keys})


#: Columns of a :class:`RunRows` row: :data:`RUN_COLUMNS` and whether the run was killed.
RUN_ROW_COLUMNS: tuple[str, ...] = (*RUN_COLUMNS, "killed")
RUN_ROW_DTYPES: tuple[Any, ...] = tuple(
    bool if c == "killed" else column_dtype(c) for c in RUN_ROW_COLUMNS
)
_ROW_INDEX: dict[str, int] = {c: k for k, c in enumerate(RUN_ROW_COLUMNS)}


def _row_column(rows: Sequence[tuple[Any, ...]], k: int) -> np.ndarray:
    """Column ``k`` of :data:`RUN_ROW_COLUMNS` rows as an array of its dtype (the values
    and dtype the columns of :attr:`RunBatch.cols` have)."""
    return np.array([r[k] for r in rows], dtype=RUN_ROW_DTYPES[k])


class RunRows:
    """Finished runs as one tuple per run (:data:`RUN_ROW_COLUMNS` order).

    What the engine's learning loop hands a built-in chooser: most batches
    hold one run, and a chooser buffers runs for a while before its
    predictor sees them, so the columns are built once per hand-over
    (:meth:`to_batch`) instead of a dozen one-element arrays per run.
    """

    __slots__ = ("rows",)

    #: position of the application id in a row
    APPLICATION = RUN_ROW_COLUMNS.index("application")

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def to_batch(self) -> RunBatch:
        """The same runs as a :class:`RunBatch` (the dtypes of :func:`empty_runs`, plus
        ``killed``); its columns are built when first needed (see :class:`RunBatch`)."""
        rows = self.rows
        if not rows:
            return RunBatch(
                {c: np.array([], dtype=d) for c, d in zip(RUN_ROW_COLUMNS, RUN_ROW_DTYPES)}, 0
            )
        width = len(RUN_ROW_COLUMNS)
        if any(len(r) != width for r in rows):  # not rows of RUN_ROW_COLUMNS: columns now
            return RunBatch(
                {
                    c: np.array(col, dtype=d)
                    for c, d, col in zip(RUN_ROW_COLUMNS, RUN_ROW_DTYPES, zip(*rows))
                },
                len(rows),
            )
        return RunBatch._of_rows(list(rows))

    def to_frame(self) -> pd.DataFrame:
        return self.to_batch().to_frame()
