"""The compiled kernels of ADEPT's fit (``predictors._adept_kernels``) against their
Python references, bit for bit (the fit's argmin steps turn any last-bit difference
into another grid cell or another envelope box).

* ``grid_argmin`` against ``predictors.adept._grid_argmin``: the 2-D search's grids
  as ``_fit_core`` builds them (sigma ranges below, across and above 1, ``A`` down
  to exactly 1, weights with zeros, one to nine points, ``T(1)``), and degenerate
  grids (one column, one row, a constant sigma range).
* ``candidate_wssre`` and ``product_wssre`` against the NumPy blocks of
  ``predictors.adept._candidate_wssre`` (pruned or not), ``pair_candidates``
  against ``predictors.adept._pair_candidates_sorted``.
* ``pair_rows`` against ``predictors.adept_envelope._pair_rows``: every pair of
  random point sets, at the exact and widened ratios, into whole arrays and into
  the strided views the envelope's delta loop fills; ``widened_curve_bounds`` against
  ``_widened_curve_bounds_plain`` (the curves' grid bounds with the widened ratios').
* ``min_error``, ``flat_prefix_errors`` and ``curve_bounds`` against the NumPy steps
  of ``_min_error``, ``_flat_prefix_errors`` and ``_curve_a_bounds`` (the envelope's
  instance errors and ``A`` bounds).
* Whole fits (``fit_downey``, every result field) with the kernels and with the
  Python references.

Without a built kernel these tests skip, saying so, unless
``ENERGYSCHED_REQUIRE_COMPILED`` is set (then a missing kernel is a failure).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import predictors.adept as adept
import predictors.adept_envelope as envelope_module
from predictors.adept import _grid_argmin, _linspace, fit_downey
from predictors.adept_envelope import (
    _pair_rows,
    _ratios,
    _triu,
    envelope_grid,
    inv_speedup,
)
from tests.compiled import compiled_module
from tests.predictors.helpers import same_bits


def _kernels():
    return compiled_module("predictors._adept_kernels")


def _points(rng: np.random.Generator, case: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` distinct sorted node counts (``n = 1`` every fifth case) and runtimes of a
    noisy Downey curve of either variance mode, or uniform ones every third case."""
    n = np.sort(rng.choice(np.arange(2, 300), m, replace=False)).astype(float)
    if case % 5 == 0:
        n[0] = 1.0
    if case % 3 == 2:
        t = rng.uniform(0.5, 3.0, m)
    else:
        A, sigma = rng.uniform(1.0, 150.0), rng.uniform(0.0, 3.0)
        t = 100.0 * inv_speedup(n, A, sigma) * (1.0 + rng.normal(0.0, 0.05, m))
    return n, t


def _weights(rng: np.random.Generator, case: int, n: np.ndarray) -> np.ndarray:
    target = float(rng.choice(n)) if case % 2 else float(rng.uniform(1.0, 2.0 * n.max()))
    d = np.abs(target - n)
    W = 2.0 * d.max() - d
    if case % 7 == 3:
        W[int(rng.integers(len(n)))] = 0.0  # a down-weighted anomaly
    return W if np.any(W > 0) else np.ones_like(n)


def test_grid_argmin_is_the_python_search() -> None:
    kernel = _kernels().grid_argmin
    rng = np.random.default_rng(5)
    modes = {"low": 0, "high": 0, "both": 0}
    for case in range(400):
        n, t = _points(rng, case, int(rng.integers(1, 10)))
        W = _weights(rng, case, n)
        A0 = (1.0, 1.02, 3.0, 40.0, 400.0)[case % 5] * rng.uniform(1.0, 1.5)
        s0 = (0.0, 0.3, 0.97, 1.0, 1.1, 2.5, 9.0)[case % 7]
        v, k = 0.15, (500, 37, 2, 1)[case % 4]
        Av = _linspace(max(1.0, A0 * (1.0 - v)), A0 * (1.0 + v), k)
        hw = v * max(s0, 0.1)
        sv = _linspace(max(0.0, s0 - hw), s0 + hw, (500, 1, 61, 2)[case % 4])
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = _grid_argmin(n, t, W, Av, sv)
        got = kernel(n, t, W, Av, sv, float(W.sum()))
        assert got == ref, (case, n, t, W, A0, s0)
        modes["both" if sv[0] <= 1.0 < sv[-1] else "low" if sv[-1] <= 1.0 else "high"] += 1
    assert min(modes.values()) > 20  # every kind of grid is exercised


def test_grid_argmin_on_constant_rows() -> None:
    # every A of the grid equal (a zero linspace step: np.linspace), every point flat
    kernel = _kernels().grid_argmin
    n = np.array([2.0, 4.0, 8.0])
    t = np.array([1.0, 1.0, 1.0])
    W = np.array([3.0, 2.0, 1.0])
    for Av, sv in (
        (np.full(5, 1.0), np.linspace(0.5, 1.5, 7)),
        (np.full(3, 2.0), np.full(4, 1.2)),
        (np.array([1.0]), np.array([0.0])),
    ):
        assert kernel(n, t, W, Av, sv, float(W.sum())) == _grid_argmin(n, t, W, Av, sv)


def _pair_case(rng: np.random.Generator, case: int) -> tuple[np.ndarray, ...]:
    m = int(rng.integers(2, 9))
    n, t = _points(rng, case, m)
    if case % 4 == 1 and m > 2:
        t[1:] = t[-1]  # ties: ratio 1 (flat-flat pairs)
    return n, t


def test_pair_rows_is_the_python_curves() -> None:
    kernel = _kernels().pair_rows
    rng = np.random.default_rng(8)
    valid = 0
    for case in range(120):
        n, t = _pair_case(rng, case)
        g = envelope_grid(16.0 * float(n.max()))
        I, J = _triu(len(n))  # noqa: E741
        rho = _ratios(t[I] / t[J], (0.05, 0.2, 0.5)[case % 3])
        pt = envelope_module._PointTables(n, g)
        with np.errstate(divide="ignore", invalid="ignore"):
            S_ref, OK_ref = _pair_rows(n, rho, I, J, g, pt)
        S = np.full(S_ref.shape, -7.0)
        OK = np.zeros(OK_ref.shape, dtype=bool)
        Gh = g.h12_prefix(float(n.max()))
        args = (n, rho, I, J, g.A, g.Am1, g.invA, Gh, pt.aL, pt.bL, pt.hb)
        kernel(*args, S, OK.view(np.uint8))
        np.testing.assert_array_equal(OK, OK_ref)
        # S is defined everywhere for L and H1-H1, on the prefix for H1-H2 (NaN equal)
        np.testing.assert_array_equal(S[:2], S_ref[:2])
        np.testing.assert_array_equal(S[2, :, :, :Gh], S_ref[2, :, :, :Gh])
        assert np.all(S[2, :, :, Gh:] == -7.0)  # untouched beyond the prefix
        # the widened ratios into strided views, as the envelope's delta loop fills them
        S2, OK2 = S.copy(), OK.copy()
        OK2[:, :, 0::2] = False
        kernel(n, rho[:, 0::2], I, J, *args[4:], S2[:, :, 0::2], OK2[:, :, 0::2].view(np.uint8))
        np.testing.assert_array_equal(OK2, OK_ref)
        np.testing.assert_array_equal(S2[:2], S_ref[:2])
        valid += int(OK_ref.sum())
    assert valid > 10_000


def _one_pair() -> tuple[Any, ...]:
    """The arguments of a pair kernel for one pair of points (2 and 4 nodes) at the
    three ratios around 1.5: ``(n, rho, I, J, grid, point tables)``."""
    n = np.array([2.0, 4.0])
    g = envelope_grid(64.0)
    I, J = _triu(2)  # noqa: E741
    return n, _ratios(np.array([1.5]), 0.05), I, J, g, envelope_module._PointTables(n, g)


def test_pair_rows_rejects_a_wrong_shape() -> None:
    kernel = _kernels().pair_rows
    n, rho, I, J, g, pt = _one_pair()  # noqa: E741
    S = np.empty((3, 1, 3, g.G - 1))
    OK = np.zeros(S.shape, dtype=np.uint8)
    with pytest.raises(ValueError, match="shape"):
        kernel(n, rho, I, J, g.A, g.Am1, g.invA, g.G, pt.aL, pt.bL, pt.hb, S, OK)


def test_widened_curve_bounds_are_the_python_bounds() -> None:
    # the grid bounds of the exact ratios' curves together with the widened ratios'
    # (scanned from both ends by the kernel, read off _pair_rows' arrays by the plain
    # function), for the curves of whole point sets and of their subsets (whose H1-H2
    # prefix is their own), at several deltas
    from predictors.adept_envelope import PairCurves, _widened_curve_bounds_plain

    kernel = _kernels().widened_curve_bounds
    rng = np.random.default_rng(23)
    found = widened = 0
    for case in range(120):
        n, t = _pair_case(rng, case)
        g = envelope_grid(16.0 * float(n.max()))
        whole = PairCurves(n, t, 0.05, g, widened=False)
        sets = [whole] + ([whole.subset(list(range(len(n) - 1)))] if len(n) > 2 else [])
        for curves in sets:
            rho = _ratios(curves.rho0, (0.05, 0.2, 0.5)[case % 3])[:, 0::2]
            ref = _widened_curve_bounds_plain(curves, rho)
            pt = curves.pt
            Gh = g.h12_prefix(float(curves.n.max()))
            args = (curves.I, curves.J, g.A, g.Am1, g.invA, Gh, pt.aL, pt.bL, pt.hb)
            got = kernel(curves.OK.view(np.uint8), curves.n, rho, *args)
            for a, b in zip(got, ref, strict=True):
                np.testing.assert_array_equal(a, b)
            exact = _widened_curve_bounds_plain(curves, rho[:, :0])  # no widened ratio
            found += got[0].size
            widened += int(np.sum(got[2] != exact[2])) if got[0].size == exact[0].size else 1
    assert found > 1000 and widened > 100  # curves found, widened ratios move bounds


def test_widened_curve_bounds_rejects_a_wrong_shape() -> None:
    kernel = _kernels().widened_curve_bounds
    n, rho, I, J, g, pt = _one_pair()  # noqa: E741
    tables = (g.A, g.Am1, g.invA, g.G, pt.aL, pt.bL, pt.hb)
    OK = np.zeros((3, 1, 1, g.G), dtype=np.uint8)
    with pytest.raises(ValueError, match="shape"):
        kernel(OK[:2], n, rho, I, J, *tables)
    with pytest.raises(IndexError, match="out of range"):
        kernel(OK, n, rho, J + 1, J, *tables)


def test_min_error_is_the_python_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # the envelope's smallest instance error: the exact-ratio instances of every pair
    # (as _envelope asks), random instances of both modes (sigma exactly 1, NaN, on
    # every grid index) and the flat-flat instances (sigma 0 and 1), kernel against
    # the NumPy steps, bit for bit (NaN equal)
    kernel = _kernels().min_error
    monkeypatch.setattr(envelope_module, "compiled_min_error", None)
    rng = np.random.default_rng(21)
    finite = 0
    for case in range(150):
        n, t = _pair_case(rng, case)
        g = envelope_grid(16.0 * float(n.max()))
        pt = envelope_module._PointTables(n, g)
        I, J = _triu(len(n))  # noqa: E741
        with np.errstate(divide="ignore", invalid="ignore"):
            S, OK = _pair_rows(n, _ratios(t[I] / t[J], 0.05), I, J, g, pt)
        okc = OK[:, :, 1, :]
        k = int(rng.integers(1, 3 * g.G))
        s_rand = rng.uniform(0.0, 3.0, k)
        s_rand[rng.random(k) < 0.1] = 1.0
        if case % 10 == 0:
            s_rand[0] = np.nan
        for gi, s in (
            (np.flatnonzero(okc) % g.G, S[:, :, 1, :][okc]),
            (rng.integers(0, g.G, k), s_rand),
            (np.arange(g.G), np.zeros(g.G)),
            (np.arange(g.G), np.ones(g.G)),
            (np.arange(0), np.arange(0.0)),
        ):
            want = envelope_module._min_error(gi, s, t, pt, g)
            got = kernel(gi, s, t, pt.aL, pt.bL, pt.c1, pt.nA, g.A, g.invA)
            assert type(got) is float
            assert same_bits(got, want), (case, got, want)
            finite += bool(np.isfinite(want)) and gi.size > 0
    assert finite > 400


def test_flat_prefix_errors_are_the_python_minima(monkeypatch: pytest.MonkeyPatch) -> None:
    # the running minima of the flat instances' errors along the grid, kernel against
    # the NumPy steps (and element k - 1 against _min_error of the prefix [0, k))
    kernel = _kernels().flat_prefix_errors
    monkeypatch.setattr(envelope_module, "compiled_flat_prefix_errors", None)
    monkeypatch.setattr(envelope_module, "compiled_min_error", None)
    rng = np.random.default_rng(55)
    for case in range(80):
        n, t = _pair_case(rng, case)
        g = envelope_grid(16.0 * float(n.max()))
        pt = envelope_module._PointTables(n, g)
        want = envelope_module._flat_prefix_errors(t, pt)
        got = kernel(t, pt.aL, pt.bL)
        assert same_bits(got, want), case
        k = int(rng.integers(1, g.G + 1))
        for sig, row in ((0.0, got[0]), (1.0, got[1])):
            prefix = envelope_module._min_error(np.arange(k), np.full(k, sig), t, pt, g)
            assert same_bits(float(row[k - 1]), prefix)
    with pytest.raises(ValueError, match="shape"):
        kernel(t[:-1], pt.aL, pt.bL)


def test_min_error_rejects_mismatched_lengths() -> None:
    kernel = _kernels().min_error
    n, t = np.array([2.0, 4.0, 8.0]), np.array([1.0, 0.6, 0.4])
    g = envelope_grid(128.0)
    pt = envelope_module._PointTables(n, g)
    tables = (pt.aL, pt.bL, pt.c1, pt.nA, g.A, g.invA)
    with pytest.raises(ValueError, match="equal lengths"):
        kernel(np.array([0, 1]), np.array([0.5]), t, *tables)
    with pytest.raises(ValueError, match="shape"):
        kernel(np.array([0]), np.array([0.5]), t[:2], *tables)
    with pytest.raises(IndexError):
        kernel(np.array([g.G]), np.array([0.5]), t, *tables)


def test_curve_bounds_are_the_python_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # the curves valid somewhere and their widened first and last grid indices, from the
    # envelope's pair curves and from random validity arrays (curves valid nowhere, at
    # the grid's ends only, at one index; the grid axis contiguous or not): the same
    # curves, order and A bounds
    kernel = _kernels().curve_bounds
    monkeypatch.setattr(envelope_module, "compiled_curve_bounds", None)
    rng = np.random.default_rng(34)
    curves = 0
    for case in range(120):
        n, t = _pair_case(rng, case)
        g = envelope_grid(16.0 * float(n.max()))
        I, J = _triu(len(n))  # noqa: E741
        pt = envelope_module._PointTables(n, g)
        with np.errstate(divide="ignore", invalid="ignore"):
            _, OK = _pair_rows(n, _ratios(t[I] / t[J], 0.2), I, J, g, pt)
        OK_rand = rng.random((3, len(I), 2, g.G)) < (0.0005, 0.01, 0.3)[case % 3]
        OK_rand[0, 0, 1, [0, g.G - 1]] = True
        if len(I) > 1:
            OK_rand[1, 1, 0, g.G // 2] = True
        for ok in (OK, OK_rand, OK[:, :, 0::2], np.asfortranarray(OK_rand)):
            cs_ref, ps_ref, bounds_ref = envelope_module._curve_a_bounds(ok, g)
            cs, ps, idx = kernel(ok.view(np.uint8))
            np.testing.assert_array_equal(cs, cs_ref)
            np.testing.assert_array_equal(ps, ps_ref)
            assert cs.dtype == cs_ref.dtype and ps.dtype == ps_ref.dtype
            assert same_bits(g.exp_log_at(idx).reshape(2, cs.size), bounds_ref)
            curves += cs.size
    assert curves > 5_000


def _fit_fields(fit) -> tuple[object, ...]:
    per_target = [
        (f.A, f.sigma, f.L, f.runtime, f.wssre, f.max_rel_error, f.uncertainty) for f in fit.fits
    ] + [(f.warnings, f.runner_up, f.alternatives, f.working_set) for f in fit.fits]
    return (fit.delta, fit.envelope, fit.anomaly, fit.phases is None, fit.notes, *per_target)


def test_fits_are_the_same_with_the_python_references(monkeypatch: pytest.MonkeyPatch) -> None:
    _kernels()
    rng = np.random.default_rng(13)
    data = []
    for case in range(36):
        m = (3, 4, 5, 6, 8, 10)[case % 6]
        n, t = _points(rng, case, m)
        data.append((n, t, [float(np.round(np.median(n))), float(n[-1]) * 3.0]))

    def fits() -> list[tuple[object, ...]]:
        return [_fit_fields(fit_downey(n, t, targets)) for n, t, targets in data]

    compiled = fits()
    monkeypatch.setattr(adept, "compiled_grid_argmin", None)
    monkeypatch.setattr(envelope_module, "compiled_pair_rows", None)
    monkeypatch.setattr(envelope_module, "compiled_widened_curve_bounds", None)
    monkeypatch.setattr(adept, "compiled_candidate_wssre", None)
    monkeypatch.setattr(adept, "compiled_product_wssre", None)
    monkeypatch.setattr(adept, "compiled_pair_candidates", None)
    monkeypatch.setattr(envelope_module, "compiled_min_error", None)
    monkeypatch.setattr(envelope_module, "compiled_curve_bounds", None)
    monkeypatch.setattr(envelope_module, "compiled_flat_prefix_errors", None)
    assert fits() == compiled


def test_candidate_blocks_are_the_numpy_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # _candidate_wssre's blocks by the kernels and by the NumPy expressions, bit for bit:
    # the pair candidates of the 1-D search (both modes), the degenerate and fallback
    # product blocks (sorted and unsorted A, sigma subsets), with and without pruning,
    # weights with zeros (points left out) and T(1)
    from predictors.adept import (
        _DEGENERATE_SIGMAS,
        _FALLBACK_SIGMAS,
        _a_grid,
        _candidate_wssre,
        _pair_candidates,
    )
    from predictors.adept_envelope import envelope

    _kernels()
    rng = np.random.default_rng(17)
    cases = []
    for case in range(60):
        n, t = _points(rng, case, int(rng.integers(2, 9)))
        W = _weights(rng, case, n)
        g = _a_grid(envelope(n, t), 2000, 1.0, 16.0 * float(n.max()))
        blocks: list[tuple] = list(_pair_candidates(n[0], n[-1], float(t[0] / t[-1]), g))
        top = (n[-1] + 1.0) / 2.0
        deg = g.A[g.A <= top]
        sig = (_DEGENERATE_SIGMAS, _DEGENERATE_SIGMAS[:5], _DEGENERATE_SIGMAS[5:])[case % 3]
        if case % 4 == 3:
            deg = rng.permutation(deg)  # unsorted: no bisection in the bounds
        blocks.append((None, None, (deg, sig)))
        if case % 5 == 0:
            blocks.append(
                (None, None, (np.geomspace(1.0, 16.0 * float(n.max()), 200), _FALLBACK_SIGMAS))
            )
        cases.append((n, t, W, blocks))

    def scores() -> list[np.ndarray]:
        out = []
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for n, t, W, blocks in cases:
                out += [_candidate_wssre(n, t, W, blocks), _candidate_wssre(n, t, W, blocks, True)]
        return out

    compiled = scores()
    monkeypatch.setattr(adept, "compiled_candidate_wssre", None)
    monkeypatch.setattr(adept, "compiled_product_wssre", None)
    reference = scores()
    pruned = 0
    for got, ref in zip(compiled, reference, strict=True):
        np.testing.assert_array_equal(got, ref)
        pruned += int(np.isposinf(ref).sum())
    assert pruned > 0  # pruning is exercised


def test_candidate_blocks_count_no_fit_as_infinite(monkeypatch: pytest.MonkeyPatch) -> None:
    # a candidate whose WSSRE is not finite (NaN here) is +inf, by the kernels and by
    # NumPy alike; the others keep their values (those of _best_L)
    from predictors.adept import _best_L, _candidate_wssre

    _kernels()
    n, t, W = np.array([2.0, 4.0, 8.0]), np.array([1.0, 0.6, 0.45]), np.ones(3)
    A, s = np.array([3.0, 5.0, np.nan, 6.0]), np.array([0.5, np.nan, 2.0, 1.5])
    with np.errstate(invalid="ignore"):
        reference = _best_L(inv_speedup(n[None, :], A[:, None], s[:, None]), t, W)[1]
        compiled = _candidate_wssre(n, t, W, [(A, s)])
        monkeypatch.setattr(adept, "compiled_candidate_wssre", None)
        plain = _candidate_wssre(n, t, W, [(A, s)])
    assert np.isnan(reference[1:3]).all()
    expected = np.where(np.isfinite(reference), reference, np.inf)
    np.testing.assert_array_equal(compiled, expected)
    np.testing.assert_array_equal(plain, expected)


def test_candidate_kernels_reject_mismatched_lengths() -> None:
    kernels = _kernels()
    n, t, W = np.array([2.0, 4.0]), np.array([1.0, 0.6]), np.array([1.0, 1.0])
    with pytest.raises(ValueError, match="lengths"):
        kernels.candidate_wssre(n, t, W, np.array([2.0, 3.0]), np.array([0.5]), 2.0, np.empty(2))
    with pytest.raises(ValueError, match="len"):
        kernels.product_wssre(
            n, t, W, np.array([2.0]), np.array([0.5, 2.0]), 2.0, np.empty(3), 0, 0, 1e-6
        )


def test_pair_candidates_are_the_numpy_candidates() -> None:
    # the 1-D search's candidates through the reference pair, on grids as _a_grid makes
    # them (several intervals, A from exactly 1), every reference pair of random points
    from predictors.adept import _a_grid, _pair_candidates_sorted
    from predictors.adept_envelope import envelope

    kernel = _kernels().pair_candidates
    rng = np.random.default_rng(19)
    found = [0, 0, 0]
    for case in range(80):
        n, t = _points(rng, case, int(rng.integers(2, 8)))
        g = _a_grid(envelope(n, t), (5000, 700, 3)[case % 3], 1.0, 16.0 * float(n.max()))
        for i, j in zip(*_triu(len(n)), strict=True):
            rho = float(t[i] / t[j])
            with np.errstate(divide="ignore", invalid="ignore"):
                ref = _pair_candidates_sorted(n[i], n[j], rho, g)
            got = kernel(n[i], n[j], rho, g.A)  # (the grid's tables computed in the kernel)
            for k, ((A_got, s_got), (A_ref, s_ref)) in enumerate(zip(got, ref, strict=True)):
                np.testing.assert_array_equal(A_got, A_ref)
                np.testing.assert_array_equal(s_got, s_ref)
                found[k] += A_ref.size
    assert min(found) > 1000  # every piece assumption has candidates
