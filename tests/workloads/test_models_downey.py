"""Downey speedup model: hand-worked values, piece boundaries, both modes at sigma = 1."""

from __future__ import annotations

import numpy as np
import pytest

from workloads.models import (
    downey_max_useful_nodes,
    downey_runtime,
    downey_speedup,
    downey_working_set,
)


def _low_pieces(n, A, s):
    return (
        A * n / (A + s / 2 * (n - 1)),
        A * n / (s * (A - 0.5) + n * (1 - s / 2)),
    )


def _high_piece(n, A, s):
    return n * A * (s + 1) / (s * (n + A - 1) + A)


@pytest.mark.parametrize(
    ("n", "A", "sigma", "expected"),
    [
        # low variance, A = 5, sigma = 0.5; breakpoints A = 5 and 2A - 1 = 9
        (1, 5, 0.5, 1.0),  # 5*1 / (5 + 0.25*0) = 1
        (2, 5, 0.5, 10 / 5.25),  # 5*2 / (5 + 0.25*1) = 10/5.25 = 1.90476...
        (7, 5, 0.5, 35 / 7.5),  # piece 2: 35 / (0.5*4.5 + 7*0.75) = 35/7.5 = 4.6667
        (9, 5, 0.5, 5.0),  # 45 / (2.25 + 6.75) = 5 = A
        (20, 5, 0.5, 5.0),  # flat
        # sigma = 0: linear up to A
        (3, 5, 0.0, 3.0),  # 15 / 5
        (7, 5, 0.0, 5.0),  # piece 2: 35 / (0 + 7) = 5
        # high variance, A = 4, sigma = 1.5; breakpoint A + A sigma - sigma = 8.5
        (5, 4, 1.5, 3.125),  # 5*4*2.5 / (1.5*8 + 4) = 50/16
        (8, 4, 1.5, 80 / 20.5),  # 8*4*2.5 / (1.5*11 + 4) = 80/20.5 = 3.9024
        (10, 4, 1.5, 4.0),  # flat
        # A = 1: no parallelism at all
        (1, 1, 0.3, 1.0),
        (16, 1, 1.7, 1.0),
    ],
)
def test_hand_values(n, A, sigma, expected):
    assert downey_speedup(n, A, sigma) == pytest.approx(expected, rel=1e-14)


def test_runtime_and_max_useful_by_hand():
    # T = L / S: 100 / (10/5.25) = 52.5
    assert downey_runtime(2, 100.0, 5, 0.5) == pytest.approx(52.5, rel=1e-14)
    # 2A - 1 = 9 (low); A + A sigma - sigma = 4 + 6 - 1.5 = 8.5 (high)
    np.testing.assert_allclose(downey_max_useful_nodes([5, 4], [0.5, 1.5]), [9.0, 8.5])


def test_broadcasting_shapes():
    n = np.arange(1, 11)[:, None]
    A = np.array([2.0, 5.0, 30.0])[None, :]
    s = downey_speedup(n, A, 1.3)
    assert s.shape == (10, 3)
    # monotone non-decreasing in n, bounded by A and by n
    assert np.all(np.diff(s, axis=0) >= -1e-12)
    assert np.all(s <= A + 1e-12)
    assert np.all(s <= n + 1e-12)


def test_normalised_first_piece_is_linear_in_n():
    # with work = A (T(1) = A): T(n) = (A - sigma/2)/n + sigma/2, so n T(n) has slope sigma/2
    A, sigma = 20.0, 0.8
    n = np.arange(1.0, 20.0)
    nt = n * downey_runtime(n, A, A, sigma)
    np.testing.assert_allclose(np.diff(nt), sigma / 2, rtol=1e-12)
    np.testing.assert_allclose(downey_runtime(n, A, A, sigma), (A - sigma / 2) / n + sigma / 2)


def test_continuity_at_every_piece_boundary():
    rng = np.random.default_rng(3)
    A = rng.uniform(1.0, 200.0, 400)
    eps = 1e-7
    for sigma in (rng.uniform(0.0, 1.0, 400), rng.uniform(1.0, 3.0, 400)):
        bounds = (
            [A, 2 * A - 1] if np.all(sigma <= 1) else [A + A * sigma - sigma]
        )  # low: A and 2A-1; high: A + A sigma - sigma
        for b in bounds:
            below = downey_speedup(np.maximum(b - eps, 1e-3), A, sigma)
            above = downey_speedup(b + eps, A, sigma)
            at = downey_speedup(b, A, sigma)
            np.testing.assert_allclose(below, at, rtol=1e-6)
            np.testing.assert_allclose(above, at, rtol=1e-6)
    # the pieces themselves agree at the boundaries (exact algebra, not only the switch)
    s = rng.uniform(0, 1, 400)
    p1, p2 = _low_pieces(A, A, s)
    np.testing.assert_allclose(p1, p2, rtol=1e-12)
    _, p2 = _low_pieces(2 * A - 1, A, s)
    np.testing.assert_allclose(p2, A, rtol=1e-12)
    s = rng.uniform(1, 3, 400)
    np.testing.assert_allclose(_high_piece(A + A * s - s, A, s), A, rtol=1e-12)


def test_continuity_in_sigma_across_modes():
    n = np.arange(1, 60, dtype=float)
    for A in (1.5, 7.0, 31.0):
        lo = downey_speedup(n, A, 1.0 - 1e-9)
        hi = downey_speedup(n, A, 1.0 + 1e-9)
        np.testing.assert_allclose(lo, hi, rtol=1e-7)


def test_both_modes_equal_at_sigma_one():
    n = np.linspace(1, 100, 997)
    for A in (1.0, 3.0, 12.5, 64.0):
        low1, low2 = _low_pieces(n, A, 1.0)
        low = np.where(n <= A, low1, np.where(n <= 2 * A - 1, low2, A))
        high = np.where(n <= 2 * A - 1, _high_piece(n, A, 1.0), A)  # A + A*1 - 1 = 2A - 1
        np.testing.assert_allclose(low, high, rtol=1e-12)
        np.testing.assert_allclose(downey_speedup(n, A, 1.0), high, rtol=1e-12)


def test_working_set():
    # sigma = 0: S^2/n = n up to A, then A^2/n: maximum at n = A
    assert downey_working_set(5.0, 0.0, 100) == 5
    # n_max caps the search
    assert downey_working_set(5.0, 0.0, 3) == 3
    # against a brute-force scan
    rng = np.random.default_rng(0)
    A = rng.uniform(1, 60, 50)
    s = rng.uniform(0, 2.5, 50)
    got = downey_working_set(A, s, 200)
    for a, sg, g in zip(A, s, got, strict=True):
        n = np.arange(1, 201, dtype=float)
        v = downey_speedup(n, a, sg) ** 2 / n
        assert g == int(np.flatnonzero(v >= v.max() * (1 - 1e-12))[0]) + 1


def test_invalid_parameters():
    with pytest.raises(ValueError, match="A"):
        downey_speedup(2, 0.5, 0.1)
    with pytest.raises(ValueError, match="sigma"):
        downey_speedup(2, 4, -0.1)
    with pytest.raises(ValueError, match="n"):
        downey_speedup(0, 4, 0.1)
