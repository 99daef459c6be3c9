"""Downey's speedup model (Downey 1997, as used by ADEPT), vectorised.

Parameters (docs/background/models.md, section 1.1): ``A >= 1`` average parallelism, ``sigma >= 0``
variance of parallelism, ``L`` the runtime on one node (node-seconds of work).

Low variance (``sigma <= 1``)::

    1 <= n <= A           S(n) = A n / (A + sigma/2 (n - 1))
    A <= n <= 2A - 1      S(n) = A n / (sigma (A - 1/2) + n (1 - sigma/2))
    n >= 2A - 1           S(n) = A

High variance (``sigma >= 1``)::

    1 <= n <= A + A sigma - sigma   S(n) = n A (sigma + 1) / (sigma (n + A - 1) + A)
    n >= A + A sigma - sigma        S(n) = A

Both modes agree at ``sigma = 1`` and ``S`` is continuous. Every function
here broadcasts its array arguments with numpy rules. ``n`` may be
fractional (the first piece is used for ``0 < n < 1``: the engine may ask for
"node-equivalents" when a job uses fewer cores than a node has).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "downey_max_useful_nodes",
    "downey_runtime",
    "downey_speedup",
    "downey_working_set",
]


def _check(A: np.ndarray, sigma: np.ndarray) -> None:
    if np.any(~(A >= 1.0)):
        raise ValueError("Downey model: A (average parallelism) must be >= 1 and not NaN")
    if np.any(~(sigma >= 0.0)):
        raise ValueError("Downey model: sigma (variance of parallelism) must be >= 0 and not NaN")


def downey_speedup(n: ArrayLike, A: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """Speedup ``S(n)`` on ``n`` nodes (dimensionless), both variance modes.

    Args:
        n: node counts (> 0), any shape broadcastable with ``A`` and ``sigma``.
        A: average parallelism (>= 1).
        sigma: variance of parallelism (>= 0). ``sigma <= 1`` uses the
            low-variance pieces, ``sigma > 1`` the high-variance ones (they are
            identical at ``sigma = 1``).

    Returns:
        float array of the broadcast shape.
    """
    n_arr, A_arr, s_arr = np.broadcast_arrays(
        np.asarray(n, dtype=np.float64),
        np.asarray(A, dtype=np.float64),
        np.asarray(sigma, dtype=np.float64),
    )
    _check(A_arr, s_arr)
    if np.any(~(n_arr > 0)):
        raise ValueError("Downey model: n must be > 0")
    return speedup_unchecked(n_arr, A_arr, s_arr)


def speedup_unchecked(n: np.ndarray, A: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """:func:`downey_speedup` without validation or conversion, for hot paths.

    ``n``, ``A``, ``sigma`` must be float arrays that broadcast together, with
    ``n > 0``, ``A >= 1``, ``sigma >= 0`` (the caller guarantees it); each entry
    is computed with the same operations whatever the shapes.
    """
    n_arr, A_arr, s_arr = n, A, sigma
    low = s_arr <= 1.0
    # Low variance pieces (denominators > 0 because sigma <= 1 and A >= 1).
    low1 = A_arr * n_arr / (A_arr + 0.5 * s_arr * (n_arr - 1.0))
    low2 = A_arr * n_arr / (s_arr * (A_arr - 0.5) + n_arr * (1.0 - 0.5 * s_arr))
    low_s = np.where(n_arr <= A_arr, low1, np.where(n_arr <= 2.0 * A_arr - 1.0, low2, A_arr))
    # High variance piece (denominator > 0 for sigma >= 0, n > 0, A >= 1).
    high1 = n_arr * A_arr * (s_arr + 1.0) / (s_arr * (n_arr + A_arr - 1.0) + A_arr)
    high_s = np.where(n_arr <= A_arr + A_arr * s_arr - s_arr, high1, A_arr)
    return np.where(low, low_s, high_s)


def speedup_scalar(n: float, A: float, sigma: float) -> float:
    """:func:`downey_speedup` for one configuration, in plain Python (no numpy
    overhead; the engine's hot path evaluates one or two jobs at a time)."""
    if sigma <= 1.0:
        if n <= A:
            return A * n / (A + 0.5 * sigma * (n - 1.0))
        if n <= 2.0 * A - 1.0:
            return A * n / (sigma * (A - 0.5) + n * (1.0 - 0.5 * sigma))
        return A
    if n <= A + A * sigma - sigma:
        return n * A * (sigma + 1.0) / (sigma * (n + A - 1.0) + A)
    return A


def downey_runtime(n: ArrayLike, L: ArrayLike, A: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """Runtime ``T(n) = L / S(n)`` in seconds, ``L`` the one-node runtime (s)."""
    return np.asarray(L, dtype=np.float64) / downey_speedup(n, A, sigma)


def downey_max_useful_nodes(A: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """Largest useful node count: ``2A - 1`` (sigma <= 1) or ``A + A sigma - sigma`` (sigma > 1).

    Beyond it ``S(n) = A`` (flat); the value may be fractional.
    """
    A_arr = np.asarray(A, dtype=np.float64)
    s_arr = np.asarray(sigma, dtype=np.float64)
    A_arr, s_arr = np.broadcast_arrays(A_arr, s_arr)
    _check(A_arr, s_arr)
    return np.where(s_arr <= 1.0, 2.0 * A_arr - 1.0, A_arr + A_arr * s_arr - s_arr)


def downey_working_set(A: ArrayLike, sigma: ArrayLike, n_max: ArrayLike) -> np.ndarray:
    """Processor working set: the smallest integer ``n`` in ``1..n_max`` maximising ``S(n)^2 / n``.

    ``S(n)^2/n`` (speedup times efficiency) is evaluated at every integer
    ``n`` up to ``min(n_max, ceil(max useful n) + 1)`` (beyond the largest
    useful size ``S`` is flat, so ``S^2/n`` only falls). Ties within a
    relative ``1e-12`` go to the smaller ``n``.

    Returns:
        int64 array of the broadcast shape of ``A, sigma, n_max``.
    """
    A_arr, s_arr, m_arr = np.broadcast_arrays(
        np.asarray(A, dtype=np.float64),
        np.asarray(sigma, dtype=np.float64),
        np.asarray(n_max, dtype=np.float64),
    )
    _check(A_arr, s_arr)
    if np.any(~(m_arr >= 1)):
        raise ValueError("downey_working_set: n_max must be >= 1")
    shape = A_arr.shape
    A_f, s_f, m_f = A_arr.ravel(), s_arr.ravel(), np.floor(m_arr.ravel())
    if A_f.size == 0:
        return np.zeros(shape, dtype=np.int64)
    limit = np.minimum(m_f, np.ceil(downey_max_useful_nodes(A_f, s_f)) + 1.0)
    top = int(limit.max())
    grid = np.arange(1, top + 1, dtype=np.float64)  # (top,)
    s = downey_speedup(grid[None, :], A_f[:, None], s_f[:, None])
    value = s * s / grid[None, :]
    value = np.where(grid[None, :] <= limit[:, None], value, -np.inf)
    best = value.max(axis=1)
    first = np.argmax(value >= best[:, None] * (1.0 - 1e-12), axis=1)
    return (first + 1).astype(np.int64).reshape(shape)
