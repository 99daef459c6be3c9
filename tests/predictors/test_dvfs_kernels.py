"""The compiled kernel of the fluid shape tables (``predictors._dvfs_kernels``)
against its Python reference, bit for bit.

* ``fluid_table`` against ``predictors.dvfs._fluid_table_plain``: the time table,
  the power row and the bounds, on random applications (``g`` from tiny to huge,
  ``alpha`` in and outside ``[0, 1]``, fitted and default power exponents, node
  counts from 1 to a CEA-Curie partition, one to seven clocks), and the tables it
  declines (a factor or a power not finite and positive: the reference answers).
* ``_fluid_table`` (the kernel when it applies, else the reference) on the same
  inputs, and the fluid predictor's tables with and without the kernel.

Without a built kernel these tests skip, saying so, unless
``ENERGYSCHED_REQUIRE_COMPILED`` is set (then a missing kernel is a failure).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import predictors.dvfs as dvfs
from predictors.base import Observations
from predictors.dvfs import FluidPredictor, _fluid_table, _fluid_table_plain
from tests.compiled import compiled_module
from tests.predictors.helpers import same_bits, three_pstate_platform


def _random_inputs(rng: np.random.Generator, k: int):
    """``(g, count, x, alpha, pstatic_w, pdyn_w, x_pow)``: mostly usable tables, every
    fifth with an odd value somewhere."""
    odd = [0.0, -1.0, math.inf, -math.inf, math.nan, 1e-320, 1e308]
    g = float(rng.uniform(0.5, 2.0) * 10.0 ** rng.integers(-300, 300))
    count = int(rng.choice([1, 2, 3, 64, 338, 5544]))
    n_clocks = int(rng.integers(1, 8))
    x = np.sort(rng.uniform(0.3, 1.0, n_clocks))
    x[-1] = 1.0
    alpha = float(rng.choice([0.0, 1.0, rng.uniform(0.0, 1.0), rng.uniform(-0.5, 1.5)]))
    pstatic_w = float(rng.uniform(10.0, 200.0))
    pdyn_w = float(rng.uniform(0.0, 300.0))
    pcoef = float(rng.choice([2.0, 3.0, rng.uniform(1.0, 4.0)]))
    if k % 5 == 0:
        which = int(rng.integers(5))
        value = float(rng.choice(odd))
        if which == 0:
            g = value
        elif which == 1:
            x[int(rng.integers(n_clocks))] = value
        elif which == 2:
            alpha = value
        elif which == 3:
            pstatic_w = value
        else:
            pdyn_w = value
    with np.errstate(all="ignore"):
        x_pow = np.asarray(x, dtype=float) ** pcoef
    return g, count, x, alpha, pstatic_w, pdyn_w, x_pow


def test_fluid_table_equals_the_reference() -> None:
    kernel = compiled_module("predictors._dvfs_kernels")
    rng = np.random.default_rng(17)
    computed = declined = 0
    with np.errstate(all="ignore"):
        for k in range(3000):
            args = _random_inputs(rng, k)
            want_tau, want_power, want_bounds = _fluid_table_plain(*args)
            got = kernel.fluid_table(*args)
            if got is None:
                # declined: some factor or power is not finite and positive
                factor = (1.0 - args[3]) + args[3] / args[2]
                cells = np.concatenate([[args[0], args[0] / args[1]], factor, want_power])
                assert not (np.isfinite(cells).all() and (cells > 0).all()), args
                declined += 1
                continue
            tau, power, bounds = got
            assert tau.flags.f_contiguous and tau.shape == want_tau.shape
            assert tau.tobytes("F") == want_tau.tobytes("F"), args
            assert power.tobytes() == want_power.tobytes(), args
            assert want_bounds is not None and same_bits(bounds, want_bounds), args
            assert all(isinstance(v, float) for v in bounds)
            computed += 1
    assert computed > 2000 and declined > 100


def test_fluid_table_through_the_dispatcher_equals_the_reference() -> None:
    """_fluid_table gives the reference's values whichever path answers (the kernel,
    or the reference for declined tables and arrays the kernel does not take)."""
    compiled_module("predictors._dvfs_kernels")
    rng = np.random.default_rng(19)
    with np.errstate(all="ignore"):
        for k in range(600):
            g, count, x, alpha, ps, pd_, x_pow = _random_inputs(rng, k)
            for xs, pows in ((x, x_pow), (x.astype(np.float32), x_pow[::-1][::-1])):
                got = _fluid_table(g, count, xs, alpha, ps, pd_, pows)
                want = _fluid_table_plain(g, count, xs, alpha, ps, pd_, pows)
                for a, b in zip(got[:2], want[:2]):
                    assert a.dtype == b.dtype and a.tobytes("A") == b.tobytes("A")
                assert same_bits(got[2], want[2])


@pytest.mark.parametrize("pcoef", [2.0, 2.7])
def test_fluid_tables_with_and_without_the_kernel(monkeypatch, pcoef) -> None:
    """A fitted fluid predictor's tables (its own alpha, the prior, fitted exponents)
    are the same with the kernel and with the Python reference."""
    kernel = compiled_module("predictors._dvfs_kernels")
    import pandas as pd

    platform = three_pstate_platform()
    rng = np.random.default_rng(23)
    rows = []
    for app in range(12):
        alpha = float(rng.uniform(0.2, 0.9))
        for _ in range(int(rng.integers(1, 9))):
            f = float(rng.choice([1.2, 1.8, 2.4]))
            nodes = int(rng.integers(1, 9))
            rows.append(
                {
                    "application": app,
                    "nodes": nodes,
                    "freq_ghz": f,
                    "node_type": "n",
                    "time_s": 100.0 * ((1 - alpha) + alpha * 2.4 / f) / nodes,
                    "power_w": 100.0 + 60.0 * (f / 2.4) ** 2.5 + float(rng.normal(0, 2)),
                    "instructions": 1e12,
                }
            )
    p = FluidPredictor(pcoef=pcoef).fit(Observations(runs=pd.DataFrame(rows), platform=platform))
    freqs = np.array([1.2, 1.8, 2.4])
    tables = {}
    for use_kernel in (True, False):
        monkeypatch.setattr(
            dvfs, "compiled_fluid_table", kernel.fluid_table if use_kernel else None
        )
        for app, state in p.state_.items():
            if state is None:
                continue
            for fs in (freqs, freqs[1:]):
                meta = p._grid_meta("n", fs)
                got = p._compute_table(app, state, "n", meta)
                key = (app, len(fs))
                if use_kernel:
                    tables[key] = got
                else:
                    want = tables[key]
                    assert same_bits(got[:3], want[:3]) and same_bits(got[3], want[3]), key
    assert len(tables) >= 20


def _exponent_inputs(rng: np.random.Generator, k: int):
    """``(clocks, counts, power sums, anchor)`` of an anchored exponent fit: three to
    seven clocks up to ``Fmax`` (x = 1), powers from a law of exponent 1.2 to 5.5 with
    noise, a few runs per clock; every seventh fit flat (one power: no dynamic part)
    or decreasing (Pdyn clamped at 0), every eleventh with a huge or tiny count."""
    m = int(rng.integers(3, 8))
    clocks = np.sort(rng.choice(np.linspace(0.3, 1.0, 15), m, replace=False))
    clocks[-1] = 1.0
    counts = rng.integers(1, 6, m).astype(float)
    pcoef = float(rng.uniform(1.2, 5.5))
    mean = 80.0 + 120.0 * clocks**pcoef + rng.normal(0.0, 3.0, m)
    if k % 7 == 0:
        mean = np.full(m, 150.0) if k % 14 == 0 else 300.0 - 100.0 * clocks
    if k % 11 == 0:
        counts[int(rng.integers(m))] = float(rng.choice([1e300, 1e-300]))
    sums = mean * counts
    anchor = float(sums[-1] / counts[-1]) if k % 3 else float(rng.uniform(100.0, 300.0))
    return clocks.tolist(), counts.tolist(), sums.tolist(), anchor


def test_anchored_exponent_step_equals_the_reference() -> None:
    """The compiled step (best grid exponent, parabolic step) gives the Python
    reference's exponent and Pdyn bit for bit, and declines (``None``) where it does."""
    kernel = compiled_module("predictors._dvfs_kernels")
    rng = np.random.default_rng(29)
    stepped = declined = 0
    with np.errstate(all="ignore"):
        for k in range(4000):
            clocks, counts, sums, anchor = _exponent_inputs(rng, k)
            parts = dvfs._anchored_grid_parts(clocks)
            if parts is None:
                continue
            w, ww = parts
            gaps = [anchor - s / c for s, c in zip(sums, counts)]
            num = np.array([c * g for c, g in zip(counts, gaps)]) @ w
            den = np.array(counts) @ ww
            if k % 13 == 0:  # a NaN or an infinite gain: both decline
                num[int(rng.integers(len(num)))] = float(rng.choice([math.nan, math.inf]))
            want = dvfs._anchored_exponent_step_plain(num, den, w, counts, gaps, clocks)
            got = kernel.anchored_exponent_step(
                num, den, w, counts, gaps, clocks, dvfs._PCOEF_GRID, dvfs._PCOEF_STEP
            )
            assert same_bits(got, want), (k, got, want)
            if want is None:
                declined += 1
            elif want[0] not in dvfs._PCOEF_GRID_VALUES:
                stepped += 1  # the parabolic step's exponent was kept
    assert stepped > 1000 and declined > 100


def test_exponent_fits_with_and_without_the_kernel(monkeypatch) -> None:
    """fit_power_exponent_of_means (anchored) gives the same fits through the kernel
    and through the Python reference."""
    kernel = compiled_module("predictors._dvfs_kernels")
    rng = np.random.default_rng(31)
    inputs = [_exponent_inputs(rng, k) for k in range(500)]
    fits = []
    for use_kernel in (True, False):
        monkeypatch.setattr(
            dvfs, "compiled_exponent_step", kernel.anchored_exponent_step if use_kernel else None
        )
        with np.errstate(all="ignore"):  # (the huge counts overflow in the reference)
            fits.append(tuple(dvfs.fit_power_exponent_of_means(*args) for args in inputs))
    assert same_bits(fits[0], fits[1])
    assert len({f[2] for f in fits[0]}) > 100  # many different exponents


def _ratio_inputs(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A composite's ``(scale, table)``: a node part's one-column times and a fluid
    time table (column-major, :func:`_fluid_table_plain`), or another layout (row-major,
    a strided view, one column); every fourth with an odd cell (the reference's NaN
    rule and overflows)."""
    g, count, x, alpha, ps, pd_, x_pow = _random_inputs(rng, 1)  # (k=1: no odd value)
    with np.errstate(all="ignore"):
        table = _fluid_table_plain(g, count, x, alpha, ps, pd_, x_pow)[0]
    layout = k % 4
    if layout == 1:
        table = np.ascontiguousarray(table)
    elif layout == 2:
        table = np.asfortranarray(np.repeat(table, 2, axis=1))[:, ::2]
    elif layout == 3:
        table = table[:, -1:]
    scale = rng.uniform(0.1, 10.0, (table.shape[0], 1)) * 10.0 ** rng.integers(-300, 300)
    if k % 4 == 0:
        odd = float(rng.choice([0.0, -1.0, math.inf, math.nan, 1e-320, 1e308]))
        i = int(rng.integers(table.shape[0]))
        if rng.integers(2):
            scale[i, 0] = odd
        else:
            table = table.copy(order="K")
            table[i, int(rng.integers(table.shape[1]))] = odd
    return scale, table


def test_scaled_ratio_max_equals_the_reference() -> None:
    """The largest time of a composite's shape: the kernel's value is the reference's
    (scaled_ratio_max_plain), bit for bit, whatever the tables' layout; it declines
    a scale of several columns (the reference's general case)."""
    from predictors.baselines import scaled_ratio, scaled_ratio_max, scaled_ratio_max_plain

    kernel = compiled_module("predictors._dvfs_kernels")
    rng = np.random.default_rng(23)
    with np.errstate(all="ignore"):
        for k in range(2000):
            scale, table = _ratio_inputs(rng, k)
            want = scaled_ratio_max_plain(scale, table)
            got = kernel.scaled_ratio_max(scale, table)
            assert isinstance(got, float) and same_bits(got, want), (k, got, want)
            assert same_bits(scaled_ratio_max(scale, table), want)
            if k % 4 and np.isfinite(want):  # usable tables: the table's own maximum
                assert want == float(scaled_ratio(scale, table).max())
            low = (scale.astype(np.float32), table.astype(np.float32))  # the reference's
            assert same_bits(scaled_ratio_max(*low), scaled_ratio_max_plain(*low))
        wide = np.ones((3, 2))
        assert kernel.scaled_ratio_max(wide, np.ones((3, 2))) is None
        assert scaled_ratio_max(wide, np.full((3, 2), 2.0)) == 1.0
