"""A small Pareto filter for minimisation objectives (energy, makespan, ...)."""

from __future__ import annotations

import numpy as np


def pareto_mask(points: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``points`` (every column minimised).

    Row ``a`` dominates row ``b`` when ``a <= b`` in every column and ``a < b``
    in at least one. Duplicated non-dominated rows are all kept. Rows with a
    NaN are never on the front. O(n log n + n * front) for two columns,
    O(n^2) otherwise; fine for the few dozen configurations of a report.

    >>> pareto_mask(np.array([[1.0, 5.0], [2.0, 2.0], [3.0, 3.0], [4.0, 1.0]])).tolist()
    [True, True, False, True]
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2:
        raise ValueError(f"points must be a 2-D array (rows = candidates), got shape {pts.shape}")
    n = len(pts)
    finite = np.all(np.isfinite(pts), axis=1)
    mask = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(finite)
    for i in idx:
        others = pts[idx]
        dominated = np.all(others <= pts[i], axis=1) & np.any(others < pts[i], axis=1)
        mask[i] = not dominated.any()
    return mask


def pareto_front(points: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated rows, sorted by the first column (then the second)."""
    pts = np.asarray(points, dtype=float)
    idx = np.flatnonzero(pareto_mask(pts))
    if len(idx) == 0:
        return idx
    keys = tuple(pts[idx, k] for k in range(pts.shape[1] - 1, -1, -1))
    return idx[np.lexsort(keys)]
