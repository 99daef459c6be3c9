"""ADEPT's fast paths compute exactly what the reference formulas compute (docs/background/models.md, section 2.2).

``fit_downey`` is called thousands of times per simulated replay, so its inner
steps avoid NumPy's per-call overhead (plain Python on a few values, cached
grids, point-major tables, bisected pieces). Each fast path here is checked
against the formula it replaces -- bit for bit, since the fit's argmin steps
turn any last-bit difference into a different grid cell -- or against a small
case worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from predictors.adept import (
    _DEGENERATE_SIGMAS,
    _FALLBACK_SIGMAS,
    _PRUNE_MARGIN,
    _RUNNER_UP_FACTOR,
    _TIE_EPS,
    _a_values,
    _argmax,
    _best_L,
    _best_L1,
    _candidate_wssre,
    _Cands,
    _fluctuation,
    _Grid,
    _grid_coeffs,
    _grid_wssre,
    _inv1,
    _linspace,
    _pair_candidates,
    _rises,
    _upward,
    array_median,
    fit_downey,
    fit_downey_params,
)
from predictors.adept_envelope import (
    Envelope,
    EnvelopeBox,
    EnvelopeIntervals,
    PairCurves,
    _boxes,
    _env_grid,
    _envelope,
    _min_error,
    _nanmin,
    _not_contained,
    _pair_rows,
    _PointTables,
    _triu,
    envelope,
    inv_speedup,
    pair_sigma,
)

# ----------------------------------------------------------------------------- merging repeats


def test_repeats_median_mad_rule_by_hand() -> None:
    # n = 8: median (10 + 10.2)/2 = 10.1, |dev| = .1 .1 .3 19.9, MAD = 0.2 x 1.4826,
    # limit = max(3 x 0.29652, 0.2 x 10.1) = 2.02: 30 is dropped, the rest averaged
    n = [4, 8, 8, 8, 8, 16]
    t = [20.0, 10.0, 10.2, 9.8, 30.0, 6.0]
    fit = fit_downey(n, t, [16], patterns=False)
    assert fit.dropped == 1
    np.testing.assert_array_equal(fit.obs_nodes, [4, 8, 16])
    assert fit.obs_runtimes[1] == np.mean([10.0, 10.2, 9.8])


@pytest.mark.parametrize("reps", [2, 3, 7, 8, 9, 17, 130])
def test_repeats_average_is_numpys_mean_bit_for_bit(reps: int) -> None:
    rng = np.random.default_rng(reps)
    x = 100.0 * (1.0 + rng.normal(0.0, 0.03, reps))  # no outliers: everything is kept
    fit = fit_downey(np.r_[[4.0] * reps, 16.0], np.r_[x, 40.0], [16], patterns=False)
    assert fit.dropped == 0
    assert fit.obs_runtimes[0] == np.mean(x)  # NumPy's pairwise order, not a plain running sum


# ----------------------------------------------------------------------------- scalar helpers


def test_median_is_numpys_median_bit_for_bit() -> None:
    # odd and even lengths, repeated values, tiny and huge magnitudes
    rng = np.random.default_rng(31)
    for k in range(3000):
        x = rng.lognormal(0.0, 4.0, int(rng.integers(1, 60)))
        if k % 3 == 0:
            x = np.round(x, 1) + 0.1  # repeats
        if k % 5 == 0:
            x *= 1e-300 if k % 2 else 1e300
        assert array_median(x) == float(np.median(x))
        assert array_median(x[::-1].copy()) == float(np.median(x))


def test_nearest_sizes_with_the_callers_distinct_sizes() -> None:
    # the fit passes the distinct sizes it already has: the same runs as np.unique's
    from predictors.adept import AdeptPredictor

    rng = np.random.default_rng(32)
    for limit in (3, 8, None):
        pred = AdeptPredictor(max_sizes=limit)
        for _ in range(200):
            nodes = rng.choice([1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0], 30)
            tau = rng.uniform(0.5, 2.0, 30)
            target = float(rng.choice([1.0, 5.0, 16.0, 40.0]))
            got = pred._nearest_sizes(nodes, tau, target, distinct=np.unique(nodes))
            ref = pred._nearest_sizes(nodes, tau, target)
            np.testing.assert_array_equal(got[0], ref[0])
            np.testing.assert_array_equal(got[1], ref[1])


def test_scalar_speedup_and_linspace_match_numpy() -> None:
    rng = np.random.default_rng(1)
    for _ in range(2000):
        A = float(rng.choice([rng.uniform(1, 200), 1.0, 7.0]))
        s = float(rng.choice([rng.uniform(0, 4), 0.0, 1.0, 0.5]))
        # boundaries of the pieces: n = A, n = 2A - 1, the knee, n = 1
        x = float(rng.choice([rng.uniform(1, 400), A, 2 * A - 1, A + s * (A - 1), 1.0]))
        x = max(x, 1.0)
        assert _inv1(x, A, s) == float(inv_speedup(x, A, s))
    for _ in range(2000):
        a = float(rng.uniform(0, 300))
        b = a * float(rng.uniform(0.5, 2.0)) + float(rng.choice([0.0, 1e-9, 1.0]))
        num = int(rng.choice([2, 3, 41, 500]))
        np.testing.assert_array_equal(_linspace(a, b, num), np.linspace(a, b, num))


def test_fluctuation_rises_upward_are_the_array_formulas() -> None:
    # the anomaly test's R, rises and upward fluctuation on plain floats: the values
    # of the NumPy expressions they replace, bit for bit (NaN and argmax's first NaN too)
    rng = np.random.default_rng(5)
    for trial in range(300):
        m = int(rng.integers(1, 10))
        n = np.sort(rng.choice(np.arange(1.0, 200.0), m, replace=False))
        t = 1000.0 / n ** rng.uniform(0.0, 1.2) * (1.0 + rng.normal(0.0, 0.2, m))
        t = np.abs(t) + 1e-3
        if trial % 50 == 7:
            t[m // 2] = 1e308  # overflow: inf and NaN in R
        if trial % 50 == 9 and m > 2:
            t[0], t[1] = 1e-300, 1e300  # underflow: R_0 = 0 (divisions by zero)
        with np.errstate(all="ignore"):
            R = (t[:-1] * n[:-1] / n[1:]) / t[1:] * (1.0 + (n[1:] - n[:-1]) / n[1:])
            up = float(np.maximum(R[1:] / R[:-1] - 1.0, 0.0).sum()) if R.size > 1 else 0.0
        got = _fluctuation(n.tolist(), t.tolist())
        np.testing.assert_array_equal(np.array(got, dtype=float), R)
        eps = float(rng.choice([0.0, 0.1, 0.3]))
        assert _rises(got, eps) == np.flatnonzero(R[1:] > (1.0 + eps) * R[:-1]).tolist()
        np.testing.assert_array_equal(_upward(got), up)
        if R.size:
            assert _argmax(got) == int(np.argmax(R))
    assert _argmax([1.0, float("nan"), 3.0, float("nan")]) == 1
    assert _argmax([1.0, 3.0, 2.0, 3.0]) == 1


# ----------------------------------------------------------------------------- 1-D search


def _reference_candidates(ni, nj, rho, A):
    sols = pair_sigma(ni, nj, np.asarray(rho), A)
    return [(A[ok], s[ok]) for s, ok in (sols[k] for k in ("L", "H11", "H12"))]


@pytest.mark.parametrize("shuffle", [False, True])
def test_pair_candidates_are_pair_sigmas_valid_solutions(shuffle: bool) -> None:
    rng = np.random.default_rng(2)
    for _ in range(60):
        ni, nj = np.sort(rng.choice(np.arange(1, 80), 2, replace=False)).astype(float)
        A = np.geomspace(1.0, float(rng.uniform(20, 1500)), 3000)
        if shuffle:  # an unsorted grid takes the generic path
            A = rng.permutation(A)
        truth_A, truth_s = float(rng.uniform(1, 200)), float(rng.uniform(0, 4))
        h = inv_speedup(np.array([ni, nj]), truth_A, truth_s)
        rho = float(h[0] / h[1]) * float(rng.choice([1.0, 1.02, 0.97]))
        got = _pair_candidates(ni, nj, rho, _Grid(A))
        for (ga, gs), (ra, rs) in zip(got, _reference_candidates(ni, nj, rho, A), strict=True):
            np.testing.assert_array_equal(ga, ra)
            np.testing.assert_array_equal(gs, rs)


def test_pair_candidates_pass_through_the_truth() -> None:
    # exact Downey points (A = 20, sigma = 0.5) at n = 4 and 16: the curve of the
    # L solutions passes (A = 20, sigma = 0.5); on a grid containing A = 20 exactly
    A = np.unique(np.r_[np.geomspace(1.0, 320.0, 2000), 20.0])
    h = inv_speedup(np.array([4.0, 16.0]), 20.0, 0.5)
    (la, ls), _, _ = _pair_candidates(4.0, 16.0, float(h[0] / h[1]), _Grid(A))
    assert ls[la == 20.0][0] == pytest.approx(0.5, rel=1e-12)


def test_candidate_wssre_is_the_reference_wssre() -> None:
    rng = np.random.default_rng(3)
    for m in (2, 3, 5, 9):
        n = np.sort(rng.choice(np.arange(1, 100), m, replace=False)).astype(float)
        t = rng.uniform(0.5, 3.0, m)
        W = rng.uniform(0.0, 2.0, m)
        sig = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0])
        deg = np.sort(rng.uniform(1, 60, 25))
        blocks = [
            (np.sort(rng.uniform(1, 150, 40)), rng.uniform(0, 1, 40)),  # low mode
            (np.sort(rng.uniform(1, 150, 30)), rng.uniform(1, 5, 30)),  # high mode
            (np.repeat([3.0, 9.0], 4), np.tile([0.0, 1.0, 1.5, 3.0], 2)),  # mixed, s = 1 exactly
            # a product block (the degenerate sigmas at every A), computed A by A
            (np.repeat(deg, sig.size), np.tile(sig, deg.size), (deg, sig)),
        ]
        A = np.concatenate([b[0] for b in blocks])
        s = np.concatenate([b[1] for b in blocks])
        h = inv_speedup(n[None, :], A[:, None], s[:, None])
        np.testing.assert_array_equal(_candidate_wssre(n, t, W, blocks), _best_L(h, t, W)[1])


def _wssre_reference(n, t, W, A, s) -> float:
    """WSSRE(L*) of one candidate in extended precision (np.longdouble sums)."""
    h = inv_speedup(n, A, s).astype(np.longdouble)
    r = h / t.astype(np.longdouble)
    Wl = W.astype(np.longdouble)
    s1, s2 = (Wl * r).sum(), (Wl * r * r).sum()
    return float(Wl.sum() - s1 * s1 / s2)


def test_fixed_order_wssre_is_accurate_and_position_independent() -> None:
    rng = np.random.default_rng(4)
    eps = np.finfo(np.float64).eps
    for m in (2, 3, 5, 8):
        n = np.sort(rng.choice(np.arange(1, 100), m, replace=False)).astype(float)
        t = rng.uniform(0.5, 3.0, m)
        W = rng.uniform(0.0, 2.0, m)
        W[rng.integers(m)] = 0.0  # a point of weight 0 (anomaly) is left out exactly
        A = rng.uniform(1, 150, 300)
        s = np.where(rng.random(300) < 0.5, rng.uniform(0, 1, 300), rng.uniform(1, 5, 300))
        got = _candidate_wssre(n, t, W, [(A, s)])
        ref = np.array([_wssre_reference(n, t, W, a, x) for a, x in zip(A, s, strict=True)])
        # WSSRE = sum W - s1^2/s2: a few ulps of sum W
        assert np.max(np.abs(got - ref)) <= 8 * eps * W.sum()
        # the same candidate gives the same bits alone, in another block, anywhere in a
        # matrix of any size (BLAS products do not: their bits depend on the position)
        for q in rng.choice(300, 20, replace=False).tolist():
            alone = _candidate_wssre(n, t, W, [(A[q : q + 1], s[q : q + 1])])
            assert alone[0] == got[q]
            k = int(rng.integers(1, 5000))
            big_A = np.r_[rng.uniform(1, 150, k), A[q]]
            big_s = np.r_[rng.uniform(0, 3, k), s[q]]
            assert _candidate_wssre(n, t, W, [(big_A, big_s)])[-1] == got[q]
        # the scalar path of the final fit is the same computation
        for q in range(10):
            h = inv_speedup(n, A[q], s[q])
            L, w = _best_L1(h.tolist(), t.tolist(), W.tolist(), float(W.sum()))
            assert w == got[q]
            assert L == _best_L(h, t, W)[0]


def test_grid_coefficients_are_position_independent() -> None:
    # the low-mode coefficients of a grid row do not depend on the other rows
    rng = np.random.default_rng(5)
    n = np.array([2.0, 8.0, 16.0, 40.0, 64.0])
    t = rng.uniform(0.5, 3.0, 5)
    W = rng.uniform(0.1, 2.0, 5)
    sv = np.linspace(0.0, 1.0, 7)
    Av = np.linspace(3.0, 90.0, 500)
    (full,), _ = _grid_coeffs(n, t, W, Av, sv)
    for i in (0, 17, 250, 499):
        (one,), _ = _grid_coeffs(n, t, W, Av[i : i + 1], sv)
        for a, b in zip(full[3:], one[3:], strict=True):
            assert a[i] == b[0]


def test_tied_candidates_go_to_the_first() -> None:
    # with T(1) and every point in the first high-variance piece, a whole curve of
    # (A, sigma) predicts the same runtimes: the 1-D optimum is the first of the ties
    # (not whichever rounding favours), and the truth (A = 32, sigma = 2) is recovered
    n = np.array([8.0, 32.0, 64.0, 96.0])
    L = 777.0
    t = L * inv_speedup(n, 32.0, 2.0)
    fit = fit_downey(n, t, [240.0], serial_runtime=L)
    assert fit.A[0] == pytest.approx(32.0, rel=1e-3)
    assert fit.sigma[0] == pytest.approx(2.0, rel=1e-3)
    assert _TIE_EPS < 1e-13


# ----------------------------------------------------------------------------- envelope


def test_envelope_boxes_are_those_of_its_final_delta() -> None:
    # the delta loop decides delta from the exact-ratio instances, then computes the
    # boxes once: they must be the boxes of a direct call at that delta
    n = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    t = 500.0 * inv_speedup(n, 20.0, 0.5) * np.array([1.0, 1.15, 0.9, 1.0, 1.1])
    env = envelope(n, t, delta=0.01, delta_max=0.64)
    assert env.delta > 0.01 and env.explained
    direct = envelope(n, t, delta=env.delta, delta_max=env.delta)
    assert direct == env
    grid = np.geomspace(1.0, 16.0 * 32.0, 256)
    ends = np.array(
        [x for b in env.boxes if b.combo in ("L", "H1-H1", "H1-H2") for x in (b.A_lo, b.A_hi)]
    )
    assert np.all(np.isclose(ends[:, None], grid[None, :], rtol=1e-12, atol=0).any(axis=1))


def test_containment_keeps_the_first_of_identical_boxes() -> None:
    boxes = [
        EnvelopeBox((0, 1), "L", 2.0, 8.0, 0.2, 0.6),
        EnvelopeBox((0, 2), "L", 2.0, 8.0, 0.2, 0.6),  # identical to the first: dropped
        EnvelopeBox((1, 2), "L", 3.0, 5.0, 0.3, 0.5),  # inside the first: dropped
        EnvelopeBox((1, 3), "H1-H1", 4.0, 9.0, 1.0, 2.0),  # overlaps, not inside: kept
        EnvelopeBox((2, 3), "H1-H2", 1.0, 9.0, 0.0, 3.0),  # contains all: kept, drops 0 too
    ]
    v = np.array([[b.A_lo, b.A_hi, b.s_lo, b.s_hi] for b in boxes]).T
    assert _not_contained(v) == [4]
    assert _not_contained(v[:, :4]) == [0, 3]
    # the rule of EnvelopeBox.contains, written out
    for k in range(1, 6):
        sub = boxes[:k]
        ref = [
            i
            for i, b in enumerate(sub)
            if not any(
                j != i and o.contains(b) and (not b.contains(o) or j < i) for j, o in enumerate(sub)
            )
        ]
        assert _not_contained(v[:, :k]) == ref
    # random boxes on a coarse lattice (ties, identical boxes) and a NaN bound
    rng = np.random.default_rng(8)
    for trial in range(200):
        B = int(rng.integers(1, 30))
        lo = rng.integers(0, 5, (2, B)).astype(float)
        v = np.stack([lo[0], lo[0] + rng.integers(0, 4, B), lo[1], lo[1] + rng.integers(0, 4, B)])
        if trial % 10 == 0:
            v[int(rng.integers(0, 4)), int(rng.integers(0, B))] = np.nan
        sub = [EnvelopeBox((0, 1), "L", *map(float, v[:, i])) for i in range(B)]
        ref = [
            i
            for i, b in enumerate(sub)
            if not any(
                j != i and o.contains(b) and (not b.contains(o) or j < i) for j, o in enumerate(sub)
            )
        ]
        assert _not_contained(v) == ref


def _envelope_reference(n, t, delta, delta_max) -> Envelope:
    """The envelope's delta loop written out: all three ratios at every delta, flat errors per pair."""
    g = _env_grid(16.0 * float(n.max()), 256)
    I, J = _triu(len(n))  # noqa: E741
    pt = _PointTables(n, g)
    rho0 = t[I] / t[J]
    d = delta
    with np.errstate(divide="ignore", invalid="ignore"):
        while True:
            w = (1.0 - d) / (1.0 + d)
            rho = rho0[:, None] * np.array([w, 1.0, 1.0 / w])
            S, OK = _pair_rows(n, rho, I, J, g, pt)
            okc = OK[:, :, 1, :]
            vals = [_min_error(np.flatnonzero(okc) % g.G, S[:, :, 1, :][okc], t, pt, g)]
            flat = np.flatnonzero((rho[:, 0] <= 1.0) & (rho[:, 2] >= 1.0))
            for p in flat.tolist():
                fg = np.flatnonzero(g.A <= (n[I[p]] + 1.0) / 2.0)
                for sig in (0.0, 1.0):
                    vals.append(_min_error(fg, np.full(fg.size, sig), t, pt, g))
            best = _nanmin(vals)
            if best <= d or d >= delta_max:
                break
            d = min(2.0 * d, delta_max)
        boxes = _boxes(n, S, OK, flat, I, J, g)
    return Envelope(tuple(boxes), d, best <= d, best)


def _random_points(rng: np.random.Generator, case: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` distinct sorted node counts and runtimes: a noisy Downey curve every third
    case, else uniform runtimes; every fourth case (from the second) with ties (equal
    runtimes from the second point on: flat-flat pairs at every delta) when m > 2."""
    n = np.sort(rng.choice(np.arange(1, 200), m, replace=False)).astype(float)
    if case % 3 == 0:
        t = 100.0 * inv_speedup(n, rng.uniform(1, 100), rng.uniform(0, 3))
        t *= 1.0 + rng.normal(0, 0.1, m)
    else:
        t = rng.uniform(0.5, 3.0, m)
    if case % 4 == 1 and m > 2:
        t[1:] = t[-1]  # ties
    return n, t


def test_envelope_equals_the_loop_written_out() -> None:
    # the fast envelope (exact-ratio curves once, widened ones at the final delta only,
    # flat-flat errors as prefix minima) against every step recomputed, bit for bit:
    # random data, ties (equal runtimes: flat-flat pairs at every delta), T(1), noise
    rng = np.random.default_rng(11)
    for case in range(60):
        n, t = _random_points(rng, case, int(rng.integers(2, 9)))
        for delta, delta_max in ((0.05, 0.5), (0.01, 0.64), (0.2, 0.2)):
            assert envelope(n, t, delta=delta, delta_max=delta_max) == _envelope_reference(
                n, t, delta, delta_max
            )


def test_subset_envelopes_from_the_whole_sets_curves() -> None:
    # the envelope of a subset of the points from the rows of the whole set's pair curves
    # is envelope() of the subset's points, bit for bit, and the box-free envelope reads
    # the same delta, errors and merged A intervals (T(1), ties, noise, delta growth)
    from itertools import combinations

    from predictors.adept_envelope import envelope_grid

    rng = np.random.default_rng(41)
    checked = 0
    for case in range(40):
        m = int(rng.integers(3, 8))
        n, t = _random_points(rng, case, m)
        a_max = 16.0 * float(n.max())
        for delta, delta_max in ((0.05, 0.5), (0.01, 0.64)):
            whole = PairCurves(n, t, delta, envelope_grid(a_max))
            # the exact ratios' curves only, the widened ones' bounds per final delta,
            # shared by the subsets (whichever asks first: the whole set comes last here)
            exact = PairCurves(n, t, delta, envelope_grid(a_max), widened=False)
            subsets = [list(c) for k in (2, m - 1, m) for c in combinations(range(m), k)]
            for idx in subsets[:: max(1, len(subsets) // 8)]:
                curves = whole if len(idx) == m else whole.subset(idx)
                ref = envelope(n[idx], t[idx], delta=delta, delta_max=delta_max, a_max=a_max)
                assert _envelope(curves, delta_max) == ref
                lean = _envelope(curves, delta_max, boxes=False)
                leaner = _envelope(
                    exact if len(idx) == m else exact.subset(idx), delta_max, boxes=False
                )
                for got in (lean, leaner):
                    assert isinstance(got, EnvelopeIntervals)
                    assert (got.delta, got.explained) == (ref.delta, ref.explained)
                    assert got.best_error == ref.best_error or (
                        np.isnan(got.best_error) and np.isnan(ref.best_error)
                    )
                    np.testing.assert_array_equal(got.a_intervals(), ref.a_intervals())
                checked += 1
            with pytest.raises(ValueError, match="boxes"):
                _envelope(exact, delta_max)
    assert checked > 300


def test_product_block_shares_flat_points_exactly() -> None:
    # product blocks whose points are flat over part of the A range (2A - 1 <= n, beyond
    # the knee, n = 1), including A exactly at 2A - 1 = n and near the knee, with and
    # without T(1) (without it, both modes are 1/A at every point on a prefix), sorted
    # and unsorted, against the per-candidate formulas
    rng = np.random.default_rng(12)
    sig = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0])
    for m, one in ((2, True), (3, True), (5, True), (8, True), (2, False), (4, False), (8, False)):
        n = np.sort(rng.choice(np.arange(2, 300), m, replace=False)).astype(float)
        if one:  # T(1): h(1) depends on the mode
            n[0] = 1.0
        t = rng.uniform(0.5, 3.0, m)
        W = rng.uniform(0.0, 2.0, m)
        top = (n[-2] + 1.0) / 2.0
        special = np.concatenate([(n + 1.0) / 2.0, (n + 3.0) / 4.0, (n + 3.0) / 4.0 * (1 + 1e-7)])
        deg = np.sort(np.concatenate([rng.uniform(1, top, 200), special[special <= top], [1.0]]))
        cases = [(deg, sg) for sg in (sig, sig[::-1], sig[:5], sig[5:])]
        cases.append((rng.permutation(deg), sig))  # unsorted A: no bisection
        for dg, sg in cases:
            blocks = [(np.repeat(dg, sg.size), np.tile(sg, dg.size), (dg, sg))]
            A, s = blocks[0][0], blocks[0][1]
            with np.errstate(divide="ignore", invalid="ignore"):
                h = inv_speedup(n[None, :], A[:, None], s[:, None])
                ref = _best_L(h, t, W)[1]
                got = _candidate_wssre(n, t, W, blocks)
            np.testing.assert_array_equal(got, ref)


def _pruning_case(rng: np.random.Generator, m: int, one: bool) -> tuple[np.ndarray, ...]:
    """Points of a noisy Downey curve and the blocks of their 1-D search: an ``(A, s)``
    block around the truth (small WSSRE), then the degenerate product block."""
    n = np.sort(rng.choice(np.arange(2, 300), m, replace=False)).astype(float)
    if one:
        n[0] = 1.0
    A_true, s_true = rng.uniform(2.0, 150.0), rng.uniform(0.0, 3.0)
    t = 50.0 * inv_speedup(n, A_true, s_true) * (1.0 + rng.normal(0.0, 0.05, m))
    W = rng.uniform(0.0, 2.0, m)
    W[rng.integers(m)] = 0.0 if m > 3 and rng.uniform() < 0.3 else W[0]
    near = (np.geomspace(A_true / 2, A_true * 2, 40), np.linspace(0.0, 3.0, 40))
    top = (n[-2] + 1.0) / 2.0
    deg = np.sort(np.concatenate([np.geomspace(1.0, top, 300), [(n[1] + 1.0) / 2.0]]))
    deg = deg[deg <= top]
    return n, t, W, near[0], near[1], deg


@pytest.mark.parametrize("listed_max", [0, 10**9])
def test_product_block_pruning_drops_only_cells_above_the_band(
    listed_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # prune=True gives every cell of the reference (prune=False), except cells set to
    # +inf whose reference WSSRE is above 1.1 x (the earlier blocks' best, >= 0) plus
    # the margin: they can be neither the 1-D optimum nor in the runner-up band. The
    # cells left are scored by the product's loop (listed_max = 0) or as (A, s) blocks
    import predictors.adept as adept

    monkeypatch.setattr(adept, "_LISTED_CELLS_MAX", listed_max)
    rng = np.random.default_rng(21)
    pruned = kept = 0
    for case in range(60):
        m = (3, 4, 5, 8)[case % 4]
        n, t, W, A_near, s_near, deg = _pruning_case(rng, m, one=case % 3 == 0)
        for sig in (_DEGENERATE_SIGMAS, _DEGENERATE_SIGMAS[:5], _DEGENERATE_SIGMAS[5:]):
            blocks = [(A_near, s_near), (None, None, (deg, sig))]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                ref = _candidate_wssre(n, t, W, blocks)
                got = _candidate_wssre(n, t, W, blocks, prune=True)
            earlier = ref[: A_near.size]
            best = max(float(earlier[np.isfinite(earlier)].min()), 0.0)
            band = _RUNNER_UP_FACTOR * best + _PRUNE_MARGIN * float(W.sum())
            same = (got == ref) | (np.isnan(got) & np.isnan(ref))
            dropped = ~same
            assert np.all(np.isposinf(got[dropped]))
            assert np.all(ref[dropped] > band)
            np.testing.assert_array_equal(got[: A_near.size], earlier)
            pruned += int(dropped.sum())
            kept += int(same[A_near.size :].sum())
    assert pruned > 0 and kept > 0  # the cases exercise both


def test_pruned_fits_equal_unpruned_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    # whole fits (1-D optimum, runner-up warnings, anomaly confirmations) are the same
    # with the product block pruned as with every cell computed
    import predictors.adept as adept

    rng = np.random.default_rng(22)
    data = []
    for case in range(40):
        m = (3, 4, 5, 6, 8)[case % 5]
        n = np.sort(rng.choice(np.arange(1, 200), m, replace=False)).astype(float)
        t = 80.0 * inv_speedup(n, rng.uniform(1.5, 120.0), rng.uniform(0.0, 3.0))
        t *= 1.0 + rng.normal(0.0, (0.0, 0.02, 0.1)[case % 3], m)
        data.append((n, t, float(np.round(np.median(n)))))

    def fits() -> list[tuple[object, ...]]:
        out = []
        for n, t, target in data:
            fit = fit_downey(n, t, [target, n[-1]], n_1d=800, n_2d=60)
            per_target = [(f.A, f.sigma, f.L, f.wssre, f.warnings, f.runner_up) for f in fit.fits]
            out.append((fit.delta, fit.anomaly, fit.notes, *per_target))
        return out

    with_pruning = fits()
    reference = adept._candidate_wssre
    monkeypatch.setattr(
        adept,
        "_candidate_wssre",
        lambda n, t, W, blocks, prune=False: reference(n, t, W, blocks),
    )
    assert fits() == with_pruning


def test_grid_wssre_is_the_direct_wssre_in_both_modes() -> None:
    # the grid's polynomial tables (low mode, and the high mode's per-prefix tables)
    # against WSSRE(L*) from the formulas at every cell (rounding apart)
    rng = np.random.default_rng(13)
    for m in (2, 4, 7):
        n = np.sort(rng.choice(np.arange(1, 120), m, replace=False)).astype(float)
        t = rng.uniform(0.5, 3.0, m)
        W = rng.uniform(0.1, 2.0, m)
        Av = np.linspace(1.0, 90.0, 60)
        sv = np.linspace(0.0, 3.0, 41)
        grid = _grid_wssre(n, t, W, Av, sv)
        h = inv_speedup(n[None, None, :], Av[:, None, None], sv[None, :, None])
        ref = _best_L(h, t, W)[1]
        np.testing.assert_allclose(grid, ref, rtol=0, atol=1e-9 * W.sum())


def _a_values_reference(iv: np.ndarray, count: int) -> np.ndarray:
    iv = np.clip(iv, 1.0, None)
    lg = np.log(iv)
    lengths = lg[:, 1] - lg[:, 0]
    total = lengths.sum()
    pos = np.linspace(0.0, total, count)
    cum = np.concatenate([[0.0], np.cumsum(lengths)])
    k = np.clip(np.searchsorted(cum, pos, side="right") - 1, 0, len(iv) - 1)
    return np.exp(lg[k, 0] + (pos - cum[k]))


def test_a_values_are_the_formula() -> None:
    # one interval (closed form without the search) and several (runs of positions per
    # interval), bit for bit; intervals of zero length (ends below 1, a point), short ones
    rng = np.random.default_rng(14)
    fixed = [
        [0.6, 0.9, 2.0, 5.0, 5.5, 5.5, 7.0, 30.0],
        [1.0, 1.0, 3.0, 3.0 + 1e-9, 4.0, 400.0],
        [0.5, 0.7, 0.8, 0.95, 2.0, 9.0],
    ]
    cases = [np.sort(rng.uniform(0.5, 500.0, 2 * k)) for k in (1, 1, 2, 3, 5) for _ in range(10)]
    for ends in cases + [np.array(x) for x in fixed]:
        k = ends.size // 2
        boxes = tuple(
            EnvelopeBox((0, 1), "L", float(a), float(b), 0.0, 1.0) for a, b in ends.reshape(k, 2)
        )
        env = Envelope(boxes, 0.05, True, 0.0)
        for count in (2, 7, 5000):
            got = _a_values(env, count, 1.0, 100.0)
            np.testing.assert_array_equal(got, _a_values_reference(env.a_intervals(), count))


def test_candidates_index_like_the_concatenated_arrays() -> None:
    # _Cands reads candidates from their blocks (product blocks not materialised):
    # the values of the concatenated repeat/tile arrays, at every index
    rng = np.random.default_rng(3)
    for trial in range(20):
        blocks: list = []
        for _ in range(int(rng.integers(1, 5))):
            if rng.random() < 0.4:
                dg = np.sort(rng.uniform(1.0, 50.0, int(rng.integers(0, 30))))
                sg = _DEGENERATE_SIGMAS if trial % 2 else _FALLBACK_SIGMAS
                blocks.append((None, None, (dg, sg)))
            else:
                k = int(rng.integers(0, 40))
                blocks.append((rng.uniform(1.0, 50.0, k), rng.uniform(0.0, 3.0, k)))
        A = np.concatenate(
            [np.repeat(b[2][0], b[2][1].size) if len(b) > 2 else b[0] for b in blocks]
        )
        s = np.concatenate([np.tile(b[2][1], b[2][0].size) if len(b) > 2 else b[1] for b in blocks])
        c = _Cands(blocks)
        assert c.offsets[-1] == A.size
        for k in range(A.size):
            assert c.at(k) == (float(A[k]), float(s[k]))
        for _ in range(5):
            idx = np.flatnonzero(rng.random(A.size) < rng.random())
            if idx.size:
                np.testing.assert_array_equal(c.A_at(idx), A[idx])


def test_fallback_grid_is_scored_as_the_per_candidate_formulas() -> None:
    # runtimes growing with n: nothing passes through the reference pair and the coarse
    # 2-D fallback grid (41 sigmas, both modes) is scored as a product block
    fit = fit_downey([2.0, 4.0, 8.0], [100.0, 400.0, 1600.0], [16.0])
    assert np.isfinite(fit.fits[0].wssre) and fit.A[0] >= 1.0
    n = np.array([2.0, 4.0, 8.0, 30.0])
    t = np.array([100.0, 400.0, 1600.0, 1500.0])
    W = np.array([1.0, 2.0, 0.5, 1.5])
    gA = np.geomspace(1.0, 16.0 * 30.0, 200)
    A, s = np.repeat(gA, _FALLBACK_SIGMAS.size), np.tile(_FALLBACK_SIGMAS, gA.size)
    got = _candidate_wssre(n, t, W, [(A, s, (gA, _FALLBACK_SIGMAS))])
    np.testing.assert_array_equal(got, _candidate_wssre(n, t, W, [(A, s)]))


def test_fit_envelope_read_later_is_the_searched_envelope() -> None:
    # a fit builds no envelope boxes (its search reads the delta and the A intervals);
    # the envelope it reports, computed when first read, has the delta and A intervals
    # the search used: of every point, or of the specially-optimised ones (a subset)
    from predictors.adept import _speedup
    from predictors.adept_envelope import envelope_grid

    rng = np.random.default_rng(31)
    sets = []
    for case in range(12):
        n, t = _random_points(rng, case, int(rng.integers(3, 9)))
        sets.append((n, t, np.arange(len(n))))
    n = np.arange(2, 19, dtype=float)
    t = 1000.0 / _speedup(n, 24.0, 0.5)
    pw = (n.astype(int) & (n.astype(int) - 1)) == 0
    t[pw] *= 0.7  # powers of two run fast: only they are fitted
    sets.append((n, t, np.flatnonzero(pw)))
    for n, t, active in sets:
        fit = fit_downey(n, t, [float(n[-1])])
        env = fit.envelope
        assert isinstance(env, Envelope) and env.boxes
        assert env.delta == fit.delta
        whole = PairCurves(n, t, 0.05, envelope_grid(16.0 * float(n.max())))
        curves = whole if len(active) == len(n) else whole.subset(active.tolist())
        searched = _envelope(curves, 0.5, boxes=False)
        np.testing.assert_array_equal(env.a_intervals(), searched.a_intervals())
        assert fit.envelope is env  # computed once
    assert len(sets[-1][2]) < len(sets[-1][0])


def _params_cases(
    rng: np.random.Generator, count: int
) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Random point sets: Downey-like runtimes with noise, some with an anomalous point,
    a serial run, repeated sizes or 9+ sizes (the pattern steps all take part)."""
    cases = []
    for c in range(count):
        m = int(rng.integers(2, 12))
        nodes = np.unique(np.round(np.geomspace(1, 2 ** rng.integers(3, 10), m)))
        if c % 5 == 0 and nodes.size > 2:
            nodes = np.concatenate([nodes, nodes[1:3]])  # repeated sizes
        plateau = float(rng.uniform(2.0, 300.0))
        runtimes = 1000.0 / np.minimum(nodes, plateau) * rng.uniform(0.85, 1.15, nodes.size)
        if c % 3 == 0 and nodes.size >= 4:
            runtimes[int(rng.integers(1, nodes.size))] *= 1.6  # an anomaly
        target = float(rng.choice([nodes.min(), nodes.max(), 2.0 * nodes.max(), 7.0]))
        cases.append((nodes, runtimes, target))
    return cases


def test_fit_downey_params_is_fit_downey_bit_for_bit() -> None:
    """``fit_downey_params`` returns ``fit_downey``'s ``(A, sigma, L)`` on many point sets,
    at the full and at the leave-one-out resolutions, with and without patterns."""
    rng = np.random.default_rng(20261127)
    checked = 0
    for nodes, runtimes, target in _params_cases(rng, 300):
        for options in ({}, {"n_1d": 1000, "n_2d": 100}, {"patterns": False, "q": 1.5}):
            f = fit_downey(nodes, runtimes, [target], **options).fits[0]
            got = fit_downey_params(nodes, runtimes, target, **options)
            assert got == (f.A, f.sigma, f.L), (nodes, runtimes, target, options)
            checked += 1
    assert checked == 900


def test_fit_downey_params_checks_like_fit_downey() -> None:
    with pytest.raises(TypeError, match="unknown option"):
        fit_downey_params([1, 2, 4], [4.0, 2.0, 1.0], 8.0, n1d=10)
    with pytest.raises(ValueError, match="two or more distinct"):
        fit_downey_params([4, 4], [4.0, 2.0], 8.0)
