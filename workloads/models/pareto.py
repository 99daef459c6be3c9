"""Time-energy Pareto filter: the minimum energy for each deadline."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["pareto_front"]


def pareto_front(times: ArrayLike, energies: ArrayLike) -> np.ndarray:
    """Indices of the Pareto-optimal points, ordered by increasing time.

    A point is Pareto-optimal when no other point is at least as fast *and*
    uses strictly less energy, or is strictly faster with no more energy.
    Equivalently: walking the points by increasing time (ties: lower energy
    first), keep every point whose energy is strictly below all energies seen
    so far. For any deadline ``t``, the minimum-energy configuration meeting
    it is the last kept point with time ``<= t``. Exact duplicates keep only
    their first index. NaN points are never kept.

    O(k log k) (one sort, one linear sweep).
    """
    t = np.asarray(times, dtype=np.float64).ravel()
    e = np.asarray(energies, dtype=np.float64).ravel()
    if t.shape != e.shape:
        raise ValueError(f"pareto_front: times {t.shape} and energies {e.shape} differ")
    ok = np.flatnonzero(np.isfinite(t) & np.isfinite(e))
    if ok.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = ok[np.lexsort((ok, e[ok], t[ok]))]  # by time, then energy, then index
    e_sorted = e[order]
    # prefix minimum of energies strictly before each position
    prev_min = np.concatenate(([np.inf], np.minimum.accumulate(e_sorted)[:-1]))
    keep = e_sorted < prev_min
    return order[keep].astype(np.int64)
