"""Fast paths of the DVFS family's refits and shape tables against the plain
computations they replace, bit for bit, on varied inputs."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.base import Observations
from predictors.dvfs import FluidPredictor, PerAppDvfsPredictor, _Grow, _PowerRows
from simulator.platform import NodeType, Platform, PState
from tests.predictors.helpers import same_bits


def _platform() -> Platform:
    t = NodeType(
        name="n",
        count=64,
        cores_per_node=8,
        pstates=tuple(PState(f, 90.0, 100.0 + 60.0 * f) for f in (1.2, 1.8, 2.4)),
    )
    return Platform(name="p", node_types=(t,))


@pytest.mark.parametrize("cls", [FluidPredictor, PerAppDvfsPredictor])
@pytest.mark.parametrize("pcoef", [2.0, 3.0, 2.7])
def test_power_at_one_frequency_equals_app_power(cls, pcoef) -> None:
    """_power_of_rows with fewer than two distinct frequencies (the node type's constants
    scaled to the mean power) is _app_power on the same runs."""
    p = cls(pcoef=pcoef).fit(Observations(platform=_platform()))
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 8, 9, 31, 128, 129, 1000, 9000):
        for _ in range(3 if n > 200 else 20):
            x = float(rng.choice([0.5, 0.75, 1.0, rng.uniform(0.1, 1.0)]))
            power = rng.uniform(50.0, 400.0, n) * 10.0 ** rng.integers(-3, 4)
            pr = _PowerRows()
            rows = [v for w in power for v in (1.0, x * x if pcoef == 2.0 else np.nan, float(w), x)]
            for k in range(0, 4 * n, 4 * 37):  # grown in pieces, as refits do
                pr.rows.extend(rows[k : k + 4 * 37])
            pr.distinct.add(x)
            got = p._power_of_rows("n", pr)
            want = p._app_power("n", np.full(n, x), power.copy())
            assert same_bits(got, want), (n, x)


@pytest.mark.parametrize("width", [2, 4])
def test_grow_keeps_the_rows_given_flat(width) -> None:
    """_Grow.extend (rows one after the other in a flat list, growing the buffer) keeps
    exactly the rows appended so far."""
    rng = np.random.default_rng(7)
    g = _Grow(width)
    rows: list[list[float]] = []
    for _ in range(60):
        k = int(rng.choice([0, 1, 2, 3, 9, 40]))
        new = (rng.standard_normal((k, width)) * 10.0 ** rng.integers(-5, 5)).tolist()
        g.extend([v for r in new for v in r])
        rows += new
        assert same_bits(g.view(), np.array(rows, dtype=np.float64).reshape(-1, width))
