"""The two-unknown NNLS kernel of the Amdahl fits against scipy.optimize.nnls."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import nnls

from predictors.baselines import fit_amdahl, nnls_two_columns


def _amdahl_design(rng: np.random.Generator) -> np.ndarray:
    """An Amdahl fit's design (rows ``(1 / n, 1) / tau``) of runs at two to four sizes."""
    sizes = rng.choice(
        [1, 2, 3, 4, 8, 16, 32, 64, 128], size=int(rng.integers(2, 5)), replace=False
    )
    nodes = rng.choice(sizes, size=int(rng.integers(len(sizes), 12)))
    nodes[: len(sizes)] = sizes
    a, b = rng.uniform(0.0, 2.0, 2) * 10.0 ** rng.integers(-3, 3, 2)
    tau = (a / nodes + b) * rng.lognormal(0.0, float(rng.choice([0.01, 0.3, 1.0])), len(nodes))
    return np.column_stack([1.0 / nodes, np.ones_like(nodes, dtype=float)]) / tau[:, None]


def test_the_kernel_solves_what_scipy_solves() -> None:
    """Same active set (which unknowns are 0) and the same values to 1e-9 relative
    on Amdahl designs, including those whose optimum has a zero unknown, and a
    residual never above scipy's by more than rounding."""
    rng = np.random.default_rng(19)
    zero_cases = 0
    for _ in range(3000):
        design = _amdahl_design(rng)
        target = np.ones(len(design))
        want, _ = nnls(design, target)
        got = nnls_two_columns(design, target)
        assert ((got == 0) == (want == 0)).all(), (got, want)
        assert np.allclose(got, want, rtol=1e-9, atol=0.0), (got, want)
        sse_got = float(np.sum((design @ got - target) ** 2))
        sse_want = float(np.sum((design @ want - target) ** 2))
        assert sse_got <= sse_want * (1 + 1e-9) + 1e-24 * len(design)
        zero_cases += bool((want == 0).any())
    assert zero_cases > 100  # the constrained branch is exercised


def test_worked_cases() -> None:
    # exact fit with both unknowns positive: tau = 2 / n + 1 at n = 1, 2 (x = (2, 1))
    nodes = np.array([1.0, 2.0])
    tau = 2.0 / nodes + 1.0
    design = np.column_stack([1.0 / nodes, np.ones(2)]) / tau[:, None]
    assert nnls_two_columns(design, np.ones(2)) == pytest.approx([2.0, 1.0], rel=1e-12)
    # the unconstrained solution has a negative unknown: the best one-column fit
    design = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    got = nnls_two_columns(design, np.array([1.0, -1.0, 0.5]))
    want, _ = nnls(design, np.array([1.0, -1.0, 0.5]))
    assert got.tolist() == pytest.approx(want.tolist()) and got[1] == 0.0
    # every target negative: x = 0
    assert nnls_two_columns(design, -np.ones(3)).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError):
        nnls_two_columns(np.ones((3, 3)), np.ones(3))
    with pytest.raises(ValueError):
        nnls_two_columns(np.array([[1.0, np.nan]]), np.ones(1))


def test_fit_amdahl_recovers_a_known_law() -> None:
    nodes = np.array([1.0, 2.0, 4.0, 8.0, 8.0])
    m = fit_amdahl(nodes, 3.0 / nodes + 0.5)
    assert (m.a, m.b) == pytest.approx((3.0, 0.5), rel=1e-12)
    assert m.distinct_nodes == 4
