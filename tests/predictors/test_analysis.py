"""Split-up analysis helpers."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.analysis import (
    angle_degrees,
    benchmark_rows,
    compare_platform_rows,
    cosine_similarity,
    similarity_matrix,
    splitup_norm,
    splitup_table,
)
from predictors.testing import make_case


def test_norm_and_cosine():
    x = np.array([3.0, 4.0])
    assert splitup_norm(x) == 5.0
    assert cosine_similarity(x, 2.5 * x) == pytest.approx(1.0)  # same program, bigger input
    assert splitup_norm(2.5 * x) == pytest.approx(2.5 * splitup_norm(x))
    assert angle_degrees([1.0, 0.0], [0.0, 1.0]) == pytest.approx(90.0)
    assert np.isnan(cosine_similarity([0.0, 0.0], x))
    mat = similarity_matrix({"a": x, "b": 2 * x, "c": np.array([4.0, -3.0])})
    assert mat.loc["a", "b"] == pytest.approx(1.0) and mat.loc["a", "c"] == pytest.approx(0.0)
    table = splitup_table({"a": x}, ["cpu", "mem"])
    assert table.loc["a", "dominant"] == "mem" and table.loc["a", "norm"] == 5.0


def test_compare_platform_rows():
    bench = make_case().observations.benchmarks
    faster = bench.copy()
    faster["time_s"] /= (
        2.0  # B is uniformly twice as fast: efficiency 2, no architectural difference
    )
    got = compare_platform_rows(bench, faster)
    assert got["efficiency"] == pytest.approx(2.0)
    assert got["angle_deg"] == pytest.approx(0.0, abs=1e-6)
    skewed = bench.copy()
    skewed.loc[skewed.benchmark == "memory-bound", "time_s"] *= 3.0
    assert compare_platform_rows(bench, skewed)["angle_deg"] > 1.0
    rows = benchmark_rows(bench)
    assert list(rows.columns) == sorted(bench.benchmark.unique())
