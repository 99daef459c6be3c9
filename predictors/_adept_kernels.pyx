# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled kernels of ADEPT's Downey fit (:mod:`predictors.adept`, :mod:`predictors.adept_envelope`).

Each function is the twin of a Python reference, kept and tested against it bit
for bit (``tests/predictors/test_adept_kernels.py``):

* :func:`grid_argmin` -- :func:`predictors.adept._grid_argmin` (the 2-D search's
  grid cell, with the coefficients of :func:`predictors.adept._grid_coeffs`);
* :func:`pair_rows` -- :func:`predictors.adept_envelope._pair_rows` (the
  envelope's pair curves);
* :func:`pair_candidates` -- :func:`predictors.adept._pair_candidates_sorted`
  (the 1-D search's candidates through the reference pair);
* :func:`candidate_wssre`, :func:`product_wssre` -- the blocks of
  :func:`predictors.adept._candidate_wssre` (the candidates' WSSRE);
* :func:`min_error` -- :func:`predictors.adept_envelope._min_error` (the envelope's
  smallest instance error), :func:`flat_prefix_errors` --
  :func:`predictors.adept_envelope._flat_prefix_errors` (those of the flat-flat pairs);
* :func:`widened_curve_bounds` --
  :func:`predictors.adept_envelope._widened_curve_bounds_plain` (the grid bounds of
  the curves and of those at the widened ratios, the latter without their arrays);
* :func:`curve_bounds` -- the grid indices of
  :func:`predictors.adept_envelope._curve_a_bounds` (the envelope's ``A`` intervals).

Only IEEE additions, subtractions, multiplications, divisions, comparisons and
``floor`` (each exact or correctly rounded), in the references' order and
grouping, with NumPy's NaN rule for ``maximum``/``minimum``: so the values are
NumPy's, provided the C compiler contracts no ``a * b + c`` into a fused
multiply-add (``setup.py`` builds this module with ``-ffp-contract=off``). The
NumPy steps loop over the points one vectorised operation at a time (a few
thousand grid values each); here every grid value is one pass over the points,
without temporaries or per-call overhead.

Built by ``pip install`` when a C compiler is there (``setup.py``, optional);
without it the Python references run (the same fits, slower).
"""

from libc.math cimport INFINITY, floor, isfinite, isnan
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memchr


cdef inline double _maximum(double a, double b) noexcept nogil:
    # np.maximum: a when a >= b or a is NaN, else b (a NaN in b propagates too)
    return a if (a >= b or isnan(a)) else b


cdef inline double _minimum(double a, double b) noexcept nogil:
    # np.minimum, with NaN propagating the same way
    return a if (a <= b or isnan(a)) else b


cdef inline void _widen(double h, bint first, double *lo, double *hi) noexcept nogil:
    # the running np.min / np.max of a point's values h (NaN propagating as there)
    if first:
        lo[0] = h
        hi[0] = h
    else:
        lo[0] = _minimum(lo[0], h)
        hi[0] = _maximum(hi[0], h)


cdef inline double _relative_spread(double lo, double hi) noexcept nogil:
    # (hi - lo) / (hi + lo), step by step as the NumPy expression rounds it
    cdef double spread = hi - lo
    return spread / (hi + lo)


cdef inline bint _less(double a, double b) noexcept nogil:
    # NumPy's sort order (NaN last), which np.searchsorted uses
    return a < b or (b != b and a == a)


cdef inline Py_ssize_t _search_left(const double *x, Py_ssize_t size, double v) noexcept nogil:
    # np.searchsorted(x, v, side="left") on a sorted x: the first i with not x[i] < v
    cdef Py_ssize_t lo = 0, hi = size, mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if _less(x[mid], v):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t _search_right(const double *x, Py_ssize_t size, double v) noexcept nogil:
    # np.searchsorted(x, v, side="right") on a sorted x: the first i with v < x[i]
    cdef Py_ssize_t lo = 0, hi = size, mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if _less(v, x[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef inline Py_ssize_t _walk_left(
    const double *x, Py_ssize_t size, double v, Py_ssize_t start
) noexcept nogil:
    # _search_left(x, size, v) (x sorted), walking from index start: the same index, the
    # first i with not x[i] < v, found in as many steps as it lies away from start
    cdef Py_ssize_t i = start
    while i > 0 and not _less(x[i - 1], v):
        i -= 1
    while i < size and _less(x[i], v):
        i += 1
    return i


cdef struct Best:
    double f  # the largest f = (a1 + b1 s)^2 / (c0 + 2 c1 s + c2 s^2) so far (-inf: none)
    Py_ssize_t row
    Py_ssize_t col


cdef inline void _segment(
    Best *best, const double *sv, double ds, Py_ssize_t row, Py_ssize_t lo, Py_ssize_t hi,
    double a1, double b1, double c0, double c1, double c2,
) noexcept nogil:
    # _grid_argmin's four candidate columns of one segment, in candidate order; a
    # candidate replaces the best only when strictly larger (the first maximum in
    # (segment, candidate) order, as there)
    cdef double s1 = (a1 * c1 - b1 * c0) / (b1 * c1 - a1 * c2)
    cdef double j1 = floor((s1 - sv[0]) / ds)
    cdef double top = <double>(hi - 1)
    cdef double c2d, c3d, s, num, den, f
    cdef Py_ssize_t cand[4]
    cdef int q
    if not isfinite(j1):
        j1 = <double>lo
    # clipped to the segment in floating point (NumPy clips the int64 cast; out of
    # int64's range the cast gives lo or hi - 1 there, columns 0 and 1 already are)
    c2d = j1 if j1 > lo else <double>lo
    c2d = c2d if c2d < top else top
    c3d = j1 + 1.0
    c3d = c3d if c3d > lo else <double>lo
    c3d = c3d if c3d < top else top
    cand[0] = lo
    cand[1] = hi - 1
    cand[2] = <Py_ssize_t>c2d
    cand[3] = <Py_ssize_t>c3d
    for q in range(4):
        s = sv[cand[q]]
        num = b1 * s
        num = num + a1
        den = c2 * s
        den = den + 2.0 * c1
        den = den * s
        den = den + c0
        num = num * num
        num = num / den
        f = num if isfinite(num) else -INFINITY
        if f > best.f:
            best.f = f
            best.row = row
            best.col = cand[q]


def grid_argmin(
    const double[::1] n,
    const double[::1] t,
    const double[::1] W,
    const double[::1] Av,
    const double[::1] sv,
    double sum_w,
):
    """:func:`predictors.adept._grid_argmin` (``sum_w = W.sum()``): ``(row, column, WSSRE)``."""
    cdef Py_ssize_t m = n.shape[0], nA = Av.shape[0], ns = sv.shape[0]
    cdef Py_ssize_t nl, a, k, p, j, lo_b, hi_b
    cdef double ds, A, twoA, invA, aT, bT, nk, bh, Amin, thr
    cdef double s0, s1, s2, s3, s4
    cdef double x[7]
    cdef Best best
    cdef bint all_above_one
    if m == 0 or nA == 0 or ns == 0:
        raise ValueError("grid_argmin needs points and a non-empty grid")
    # per point: u = W/t, u2 = W/t^2, 1/n, and the A-free rows of the high mode
    cdef double *buf = <double *>malloc((5 * m + 7 * (m + 1)) * sizeof(double))
    cdef Py_ssize_t *bounds = <Py_ssize_t *>malloc((2 * m + 2) * sizeof(Py_ssize_t))
    if buf == NULL or bounds == NULL:
        free(buf)
        free(bounds)
        raise MemoryError()
    cdef Py_ssize_t *col = bounds + m + 2  # per point, its knee column in the last row
    cdef double *u = buf
    cdef double *u2 = buf + m
    cdef double *inv_n = buf + 2 * m
    cdef double *x0 = buf + 3 * m
    cdef double *x2 = buf + 4 * m
    cdef double *c = buf + 5 * m  # (7, m + 1): table-major cumulative sums
    cdef Py_ssize_t m1 = m + 1
    try:
        with nogil:
            for k in range(m):
                u[k] = W[k] / t[k]
                u2[k] = W[k] / (t[k] * t[k])
                inv_n[k] = 1.0 / n[k]
                x0[k] = inv_n[k] * u[k]
                x2[k] = (inv_n[k] * inv_n[k]) * u2[k]
            nl = _search_right(&sv[0], ns, 1.0)
            ds = (sv[ns - 1] - sv[0]) / <double>(ns - 1) if ns > 1 else 1.0
            best.f = -INFINITY
            best.row = 0
            best.col = 0
            if nl:  # low mode: one segment per row, columns [0, nl)
                for a in range(nA):
                    A = Av[a]
                    twoA = 2.0 * A
                    invA = 1.0 / A
                    s0 = s1 = s2 = s3 = s4 = 0.0
                    for k in range(m):
                        nk = n[k]
                        aT = _maximum(1.0 / nk, invA)
                        bT = (twoA - 1.0) - nk
                        bT = _minimum(nk - 1.0, bT)
                        bT = _maximum(bT, 0.0)
                        bT = bT / (twoA * nk)
                        if k == 0:
                            s0 = aT * u[k]
                            s1 = bT * u[k]
                            s2 = (aT * aT) * u2[k]
                            s3 = (aT * bT) * u2[k]
                            s4 = (bT * bT) * u2[k]
                        else:
                            s0 = s0 + aT * u[k]
                            s1 = s1 + bT * u[k]
                            s2 = s2 + (aT * aT) * u2[k]
                            s3 = s3 + (aT * bT) * u2[k]
                            s4 = s4 + (bT * bT) * u2[k]
                    _segment(&best, &sv[0], ds, a, 0, nl, s0, s1, s2, s3, s4)
            if nl < ns:  # high mode: per row, one segment per prefix of points before the knee
                Amin = Av[0]
                for a in range(1, nA):
                    if Av[a] < Amin or isnan(Av[a]):
                        Amin = Av[a]
                all_above_one = Amin > 1.0
                for a in range(nA):
                    A = Av[a]
                    invA = 1.0 / A
                    for j in range(7):
                        c[j * m1] = 0.0
                    for k in range(m):
                        nk = n[k]
                        bh = ((A - 1.0) + nk) / (nk * A)
                        x[0] = x0[k]
                        x[1] = bh * u[k]
                        x[2] = x2[k]
                        x[3] = (inv_n[k] * bh) * u2[k]
                        x[4] = (bh * bh) * u2[k]
                        x[5] = u[k] * invA
                        x[6] = u2[k] * (invA * invA)
                        for j in range(7):
                            if k == 0:
                                c[j * m1 + 1] = x[j]
                            else:
                                c[j * m1 + k + 1] = c[j * m1 + k] + x[j]
                    # the knee thresholds' columns, a running maximum over the points
                    bounds[0] = nl
                    for k in range(m):
                        if all_above_one or A > 1.0:
                            thr = (n[k] - A) / (A - 1.0)
                        else:
                            thr = -INFINITY if n[k] <= 1.0 else INFINITY
                        # np.searchsorted(sv[nl:], thr) (side "left"): bisected in the
                        # first row, then walked from the last row's column (along a
                        # sorted grid the thresholds move a few columns from row to row)
                        if a == 0:
                            j = _search_left(&sv[nl], ns - nl, thr)
                        else:
                            j = _walk_left(&sv[nl], ns - nl, thr, col[k])
                        col[k] = j
                        p = nl + j
                        if k and p < bounds[k]:
                            p = bounds[k]
                        bounds[k + 1] = p
                    bounds[m + 1] = ns
                    for p in range(m + 1):
                        lo_b = bounds[p]
                        hi_b = bounds[p + 1]
                        if hi_b > lo_b:
                            # the H2 parts of the points >= p
                            s3 = c[5 * m1 + m] - c[5 * m1 + p]
                            s4 = c[6 * m1 + m] - c[6 * m1 + p]
                            _segment(
                                &best, &sv[0], ds, a, lo_b, hi_b,
                                c[0 * m1 + p] + s3,
                                c[1 * m1 + p] + s3,
                                c[2 * m1 + p] + s4,
                                c[3 * m1 + p] + s4,
                                c[4 * m1 + p] + s4,
                            )
    finally:
        free(buf)
        free(bounds)
    return best.row, best.col, sum_w - best.f


cdef inline bint _h11_valid(double s, double Am1, double A, double nj) noexcept nogil:
    # an H1-H1 solution s is valid: s >= 1 and n_j <= knee (1 + 1e-12), knee = A + s (A - 1)
    cdef double k = s * Am1
    k = k + A
    k = k * (1 + 1e-12)
    return isfinite(s) and s >= 1.0 and nj <= k


cdef inline bint _h12_valid(double s, double Am1, double A, double ni, double nj) noexcept nogil:
    # an H1-H2 solution s is valid: s >= 1, n_i <= knee (1 + 1e-12), n_j >= knee (1 - 1e-12)
    cdef double k = s * Am1
    k = k + A
    if isfinite(s) and s >= 1.0 and ni <= k * (1 + 1e-12):
        k = k * (1 - 1e-12)
        return nj >= k
    return False


def pair_rows(
    const double[::1] n,
    const double[:, :] rho,
    const int64_t[::1] I,
    const int64_t[::1] J,
    const double[::1] A,
    const double[::1] Am1,
    const double[::1] invA,
    Py_ssize_t Gh,
    const double[:, :] aL,
    const double[:, :] bL,
    const double[:, :] hb,
    double[:, :, :, :] S,
    unsigned char[:, :, :, :] OK,
):
    """:func:`predictors.adept_envelope._pair_rows` into ``S`` and ``OK`` (shape
    ``(3, P, R, G)``, ``OK`` all False on entry, as uint8; ``Gh``: the H1-H2 prefix)."""
    cdef Py_ssize_t P = rho.shape[0], R = rho.shape[1], G = A.shape[0]
    cdef Py_ssize_t p, r, g, i, j
    cdef double rv, ni, nj, hai, num, den, sL, hbi, hbj, s11, s12, rA
    if S.shape[0] != 3 or S.shape[1] != P or S.shape[2] != R or S.shape[3] != G:
        raise ValueError("pair_rows: S must have the shape (3, P, R, G)")
    if OK.shape[0] != 3 or OK.shape[1] != P or OK.shape[2] != R or OK.shape[3] != G:
        raise ValueError("pair_rows: OK must have the shape (3, P, R, G)")
    if Gh > G:
        Gh = G
    with nogil:
        for p in range(P):
            i = I[p]
            j = J[p]
            ni = n[i]
            nj = n[j]
            hai = 1.0 / ni
            for r in range(R):
                rv = rho[p, r]
                for g in range(G):
                    # low variance, all pieces: s = (rho aj - ai) / (bi - rho bj)
                    num = aL[j, g] * rv - aL[i, g]
                    den = bL[i, g] - bL[j, g] * rv
                    sL = num / den
                    S[0, p, r, g] = sL
                    OK[0, p, r, g] = sL >= 0.0 and sL <= 1.0
                    # high variance H1-H1: s = (rho/nj - 1/ni) / (hb_i - rho hb_j)
                    hbi = hb[i, g]
                    hbj = hb[j, g]
                    s11 = (rv / nj - hai) / (hbi - hbj * rv)
                    S[1, p, r, g] = s11
                    OK[1, p, r, g] = _h11_valid(s11, Am1[g], A[g], nj)
                    # H1-H2 (prefix): s = (rho/A - 1/ni) / (hb_i - rho/A)
                    if g < Gh:
                        rA = rv * invA[g]
                        s12 = (rA - hai) / (hbi - rA)
                        S[2, p, r, g] = s12
                        OK[2, p, r, g] = _h12_valid(s12, Am1[g], A[g], ni, nj)


cdef struct _PairRows:
    # what the validity of one pair's curves reads: its points' rows of the point tables
    # and of the grid, and the pair's constants
    const double *A
    const double *Am1
    const double *invA
    const double *aLi
    const double *aLj
    const double *bLi
    const double *bLj
    const double *hbi
    const double *hbj
    double ni
    double nj
    double hai
    Py_ssize_t Gh


cdef inline bint _curve_valid(int c, const _PairRows *q, double rv, Py_ssize_t g) noexcept nogil:
    # OK[c, p, r, g] of pair_rows for the pair q at the ratio rv: the same operations
    cdef double num, den, s, rA
    if c == 0:  # low variance: s = (rho aj - ai) / (bi - rho bj) in [0, 1]
        num = q.aLj[g] * rv - q.aLi[g]
        den = q.bLi[g] - q.bLj[g] * rv
        s = num / den
        return s >= 0.0 and s <= 1.0
    if c == 1:  # H1-H1: s = (rho/nj - 1/ni) / (hb_i - rho hb_j)
        s = (rv / q.nj - q.hai) / (q.hbi[g] - q.hbj[g] * rv)
        return _h11_valid(s, q.Am1[g], q.A[g], q.nj)
    if g >= q.Gh:  # H1-H2 on the prefix only
        return False
    rA = rv * q.invA[g]
    s = (rA - q.hai) / (q.hbi[g] - rA)
    return _h12_valid(s, q.Am1[g], q.A[g], q.ni, q.nj)


cdef inline bint _valid_at(
    int c, const _PairRows *q, const double *rv, Py_ssize_t R, Py_ssize_t g
) noexcept nogil:
    # whether curve c of the pair q is valid at g at some ratio rv[0..R)
    cdef Py_ssize_t r
    for r in range(R):
        if _curve_valid(c, q, rv[r], g):
            return True
    return False


cdef inline void _scan_bounds(
    int c, const _PairRows *q, const double *rv, Py_ssize_t R, Py_ssize_t G,
    int64_t *first, int64_t *last,
) noexcept nogil:
    # first[0] lowered to curve c's first valid index below it, last[0] raised to its
    # last one above it (every index scanned when none is valid)
    cdef Py_ssize_t g, lo = first[0], hi = last[0]
    if lo > G:
        lo = G
    for g in range(lo):
        if _valid_at(c, q, rv, R, g):
            lo = g
            break
    if lo >= G:
        return
    if hi < lo:
        hi = lo
    for g in range(G - 1, hi, -1):
        if _valid_at(c, q, rv, R, g):
            hi = g
            break
    first[0] = lo
    last[0] = hi


def widened_curve_bounds(
    const unsigned char[:, :, :, ::1] OK,
    const double[::1] n,
    const double[:, :] rho,
    const int64_t[::1] I,
    const int64_t[::1] J,
    const double[::1] A,
    const double[::1] Am1,
    const double[::1] invA,
    Py_ssize_t Gh,
    const double[:, ::1] aL,
    const double[:, ::1] bL,
    const double[:, ::1] hb,
):
    """:func:`curve_bounds` of the curves ``OK`` (shape ``(3, P, R, G)``, as uint8) together
    with those of :func:`pair_rows` at the ratios ``rho`` (shape ``(P, Rw)``, ``Rw <= 3``)
    of the same pairs, without computing the latter's arrays: each curve's first valid
    index in ``OK``, then the ratios' validity scanned from the grid's start up to it, its
    last valid index in ``OK``, then from the grid's end down to it (the twin of
    :func:`predictors.adept_envelope._widened_curve_bounds_plain`)."""
    import numpy as np

    cdef Py_ssize_t K = OK.shape[0], P = OK.shape[1], R = OK.shape[2], G = OK.shape[3]
    cdef Py_ssize_t Rw = rho.shape[1], m = n.shape[0], c, p, r, g, i, j, first, last, count = 0
    cdef double rv[3]
    cdef int64_t lo, hi
    cdef _PairRows q
    cdef const void *hit
    if (
        K != 3 or rho.shape[0] != P or I.shape[0] != P or J.shape[0] != P or Rw > 3
        or A.shape[0] != G or Am1.shape[0] != G or invA.shape[0] != G
    ):
        raise ValueError(
            "widened_curve_bounds: OK must have the shape (3, P, R, G), rho (P, <= 3), "
            "I and J P entries, the grid's tables G"
        )
    if (
        aL.shape[0] != m or bL.shape[0] != m or hb.shape[0] != m
        or aL.shape[1] != G or bL.shape[1] != G or hb.shape[1] != G
    ):
        raise ValueError("widened_curve_bounds: the point tables must have the shape (m, G)")
    for p in range(P):
        if I[p] < 0 or I[p] >= m or J[p] < 0 or J[p] >= m:
            raise IndexError("widened_curve_bounds: a pair's point is out of range")
    combos = np.empty(K * P, dtype=np.int64)
    pairs = np.empty(K * P, dtype=np.int64)
    bounds = np.empty(2 * K * P, dtype=np.int64)
    cdef int64_t[::1] cs = combos, ps = pairs, b = bounds
    q.A = q.Am1 = q.invA = NULL  # (no grid: never read)
    if G:
        q.A = &A[0]
        q.Am1 = &Am1[0]
        q.invA = &invA[0]
    q.Gh = Gh if Gh < G else G
    with nogil:
        for c in range(K):
            for p in range(P):
                i = I[p]
                j = J[p]
                # the curves' first valid index (as curve_bounds), then the ratios' below it
                first = G
                for r in range(R):
                    if G:
                        hit = memchr(&OK[c, p, r, 0], 1, first)
                        if hit != NULL:
                            first = <const unsigned char *>hit - &OK[c, p, r, 0]
                q.aLi = &aL[i, 0]
                q.aLj = &aL[j, 0]
                q.bLi = &bL[i, 0]
                q.bLj = &bL[j, 0]
                q.hbi = &hb[i, 0]
                q.hbj = &hb[j, 0]
                q.ni = n[i]
                q.nj = n[j]
                q.hai = 1.0 / q.ni
                for r in range(Rw):
                    rv[r] = rho[p, r]
                last = first
                for r in range(R):
                    for g in range(G - 1, last, -1):
                        if OK[c, p, r, g]:
                            last = g
                            break
                lo = first
                hi = last if first < G else -1
                _scan_bounds(<int>c, &q, rv, Rw, q.Gh if c == 2 else G, &lo, &hi)
                if lo >= G:  # valid nowhere
                    continue
                cs[count] = c
                ps[count] = p
                b[count] = lo - 1 if lo > 0 else 0
                b[K * P + count] = hi + 1 if hi + 1 < G else G - 1
                count += 1
    return combos[:count], pairs[:count], np.concatenate([bounds[:count], bounds[K * P : K * P + count]])


cdef inline void _add_point(
    double h, double t, double w, bint first, double *s1, double *s2
) noexcept nogil:
    # one point's terms of the WSSRE sums, r = h / t: s1 += r w, s2 += r (r w),
    # points left to right (the first one starts the sums)
    cdef double r = h / t
    cdef double x = r * w
    if first:
        s1[0] = x
        s2[0] = r * x
    else:
        s1[0] = s1[0] + x
        s2[0] = s2[0] + r * x


cdef inline double _wssre_of_sums(double s1, double s2, double sum_w) noexcept nogil:
    # WSSRE(L*) = sum of the weights - s1**2 / s2
    return sum_w - (s1 * s1) / s2


cdef inline double _no_fit_inf(double x) noexcept nogil:
    # a candidate's WSSRE as _candidate_wssre returns it: NaN and -inf count as no fit (+inf)
    return x if isfinite(x) else INFINITY


cdef inline double _wssre(
    const double *n, const double *inv_n, const double *t, const double *W, Py_ssize_t m,
    double A, double s, double sum_w,
) noexcept nogil:
    # WSSRE(L*) of the candidate (A, s) in its own mode (s <= 1: low, else high), the
    # operations of _candidate_wssre's h_low / h_high and sums, points left to right
    # (inv_n: 1/n of each point)
    cdef double twoA = 2.0 * A, invA = 1.0 / A, Am1 = A - 1.0
    cdef double h, beta, s1 = 0.0, s2 = 0.0
    cdef Py_ssize_t k
    for k in range(m):
        if s <= 1.0:
            beta = (twoA - 1.0) - n[k]
            beta = _minimum(n[k] - 1.0, beta)
            beta = _maximum(beta, 0.0)
            beta = beta / (twoA * n[k])
            h = beta * s + _maximum(inv_n[k], invA)
        else:
            h = ((Am1 + n[k]) * s + A) / ((n[k] * A) * (1.0 + s))
            h = _maximum(h, invA)
        _add_point(h, t[k], W[k], k == 0, &s1, &s2)
    return _wssre_of_sums(s1, s2, sum_w)


cdef double *_reciprocals(const double *n, Py_ssize_t m) except NULL:
    # 1/n of each point, in a new buffer (free it)
    cdef double *out = <double *>malloc(m * sizeof(double))
    cdef Py_ssize_t k
    if out == NULL:
        raise MemoryError()
    for k in range(m):
        out[k] = 1.0 / n[k]
    return out


def candidate_wssre(
    const double[::1] n,
    const double[::1] t,
    const double[::1] W,
    const double[:] A,
    const double[:] s,
    double sum_w,
    double[::1] out,
):
    """The WSSRE of every candidate ``(A[c], s[c])`` into ``out`` (``+inf`` where it is not
    finite): the values of :func:`predictors.adept._candidate_wssre` for a block ``(A, s)`` (``n, t, W``:
    the points of positive weight; ``sum_w``: the sum of every weight)."""
    cdef Py_ssize_t C = A.shape[0], m = n.shape[0], c
    if s.shape[0] != C or out.shape[0] != C or t.shape[0] != m or W.shape[0] != m or m == 0:
        raise ValueError("candidate_wssre: A, s and out (and n, t, W) must have equal lengths")
    cdef double *inv_n = _reciprocals(&n[0], m)
    try:
        with nogil:
            for c in range(C):
                out[c] = _no_fit_inf(_wssre(&n[0], inv_n, &t[0], &W[0], m, A[c], s[c], sum_w))
    finally:
        free(inv_n)


cdef inline double _wssre_row(
    const double *alpha, const double *beta, const double *c1, const double *nA,
    const double *t, const double *W, Py_ssize_t m,
    double A, double invA, double s, double sum_w,
) noexcept nogil:
    # _wssre of (A, s) from the row's tables (alpha = max(1/n, 1/A), beta, c1 = A - 1 + n,
    # nA = n A of each point): the same operations on the same values
    cdef double h, s1 = 0.0, s2 = 0.0
    cdef Py_ssize_t k
    for k in range(m):
        if s <= 1.0:
            h = beta[k] * s + alpha[k]
        else:
            h = (c1[k] * s + A) / (nA[k] * (1.0 + s))
            h = _maximum(h, invA)
        _add_point(h, t[k], W[k], k == 0, &s1, &s2)
    return _wssre_of_sums(s1, s2, sum_w)


cdef inline double _wssre_flat(
    const double *inv_n, const double *t, const double *W, Py_ssize_t m,
    double invA, double sum_w,
) noexcept nogil:
    # _wssre where beta = 0 at every point: h = max(1/n, 1/A) (low mode, any sigma:
    # beta s + alpha = alpha) or, beyond every point's knee, 1/A = max(1/n, 1/A) (high mode)
    cdef double h, s1 = 0.0, s2 = 0.0
    cdef Py_ssize_t k
    for k in range(m):
        h = _maximum(inv_n[k], invA)
        _add_point(h, t[k], W[k], k == 0, &s1, &s2)
    return _wssre_of_sums(s1, s2, sum_w)


def product_wssre(
    const double[::1] n,
    const double[::1] t,
    const double[::1] W,
    const double[:] A,
    const double[:] sig,
    double sum_w,
    double[::1] out,
    Py_ssize_t low_pruned,
    Py_ssize_t high_pruned,
    double knee_margin,
):
    """The WSSRE of the product block ``repeat(A, Q) x tile(sig, D)`` into ``out``
    (``D x Q``, row-major; ``+inf`` where it is not finite), ``+inf`` on the first ``low_pruned`` rows of the columns
    ``sig <= 1`` and the first ``high_pruned`` rows of the others (the pruned prefixes
    of :func:`predictors.adept._flat_bound_prefixes`).

    As :func:`predictors.adept._candidate_wssre`'s product: a row whose points are all
    flat in the low mode (``beta = 0``) has one value for every low sigma, and for
    every high sigma too when, in addition, no point is ``n = 1`` and every point lies
    beyond the largest high sigma's knee by ``knee_margin`` (``h = 1/A`` at every point
    in both modes); the other cells by each candidate's formulas."""
    cdef Py_ssize_t D = A.shape[0], Q = sig.shape[0], m = n.shape[0], d, q, k
    cdef double Ad, twoA, invA, beta, n_min, s_high = -INFINITY, shared = 0.0
    cdef bint low_flat, high_flat, have_shared
    if out.shape[0] != D * Q or t.shape[0] != m or W.shape[0] != m or m == 0:
        raise ValueError("product_wssre: out must hold len(A) x len(sig) values")
    cdef double *inv_n = _reciprocals(&n[0], m)
    # per row: alpha = max(1/n, 1/A) and beta of each point (low mode), and the
    # H1 parts A - 1 + n and n A (high mode): the candidates' formulas, computed once a row
    cdef double *row = <double *>malloc(4 * m * sizeof(double))
    if row == NULL:
        free(inv_n)
        raise MemoryError()
    cdef double *alpha = row
    cdef double *beta_k = row + m
    cdef double *c1 = row + 2 * m
    cdef double *nA = row + 3 * m
    try:
        with nogil:
            n_min = n[0]
            for k in range(1, m):
                n_min = _minimum(n_min, n[k])
            for q in range(Q):
                if sig[q] > 1.0 and sig[q] > s_high:
                    s_high = sig[q]
            for d in range(D):
                if d < low_pruned and d < high_pruned:  # every cell of the row pruned
                    for q in range(Q):
                        out[d * Q + q] = INFINITY
                    continue
                Ad = A[d]
                twoA = 2.0 * Ad
                invA = 1.0 / Ad
                low_flat = True
                for k in range(m):
                    beta = _maximum(_minimum(n[k] - 1.0, (twoA - 1.0) - n[k]), 0.0)
                    if beta != 0.0:
                        low_flat = False
                        break
                high_flat = (
                    low_flat
                    and n_min > 1.0
                    and (s_high * (Ad - 1.0) + Ad) * (1.0 + knee_margin) <= n_min
                )
                if not (low_flat and high_flat):  # some cells by their formulas
                    for k in range(m):
                        beta = (twoA - 1.0) - n[k]
                        beta = _minimum(n[k] - 1.0, beta)
                        beta = _maximum(beta, 0.0)
                        beta_k[k] = beta / (twoA * n[k])
                        alpha[k] = _maximum(inv_n[k], invA)
                        c1[k] = (Ad - 1.0) + n[k]
                        nA[k] = n[k] * Ad
                have_shared = False
                for q in range(Q):
                    if d < (low_pruned if sig[q] <= 1.0 else high_pruned):
                        out[d * Q + q] = INFINITY
                    elif low_flat if sig[q] <= 1.0 else high_flat:
                        if not have_shared:
                            shared = _no_fit_inf(_wssre_flat(inv_n, &t[0], &W[0], m, invA, sum_w))
                            have_shared = True
                        out[d * Q + q] = shared
                    else:
                        out[d * Q + q] = _no_fit_inf(_wssre_row(
                            alpha, beta_k, c1, nA, &t[0], &W[0], m, Ad, invA, sig[q], sum_w
                        ))
    finally:
        free(inv_n)
        free(row)


def pair_candidates(
    double n_i,
    double n_j,
    double rho,
    const double[::1] A,
):
    """:func:`predictors.adept._pair_candidates_sorted` on a sorted grid ``A``: the
    ``(A, s)`` of the valid solutions of each piece assumption (L, H1-H1, H1-H2), in
    grid order. The grid's tables (``A - 1``, ``1/A``, ``2A``, ``2A - 1`` and the H1-H2
    bound ``(A + (A - 1)) (1 - 1e-12)``) are computed per grid value with the operations
    of :class:`predictors.adept_envelope._Grid`, so the same values."""
    import numpy as np

    cdef Py_ssize_t G = A.shape[0], g, k0, Gh, lo, hi, mid, c0 = 0, c1 = 0, c2 = 0
    cdef double ahi = 1.0 / n_i, inv_nj = 1.0 / n_j
    cdef double Ag, Am1, invA, twoA, ai, bi, aj, bj, num, den, s, hbi, hbj, rA
    out = np.empty((6, G))
    cdef double[:, ::1] o = out
    with nogil:
        # L: from the first A where n_i is not flat (not 2A - 1 < n_i, as _low_ab bisects)
        lo = 0
        hi = G
        while lo < hi:
            mid = lo + (hi - lo) // 2
            if _less(2.0 * A[mid] - 1.0, n_i):
                lo = mid + 1
            else:
                hi = mid
        k0 = lo
        # H1-H2: the prefix where the bound is <= n_j (np.searchsorted, side "right")
        lo = 0
        hi = G
        while lo < hi:
            mid = lo + (hi - lo) // 2
            if _less(n_j, (A[mid] + (A[mid] - 1.0)) * (1 - 1e-12)):
                hi = mid
            else:
                lo = mid + 1
        Gh = lo
        for g in range(k0, G):
            # low_coeffs: alpha = 1/min(n, A), beta = max(min(n - 1, 2A - 1 - n), 0) / (2A n)
            Ag = A[g]
            invA = 1.0 / Ag
            twoA = 2.0 * Ag
            ai = invA if Ag < n_i else 1.0 / n_i
            aj = invA if Ag < n_j else 1.0 / n_j
            bi = _maximum(_minimum(n_i - 1.0, (twoA - 1.0) - n_i), 0.0) / (twoA * n_i)
            bj = _maximum(_minimum(n_j - 1.0, (twoA - 1.0) - n_j), 0.0) / (twoA * n_j)
            num = aj * rho - ai
            den = bi - bj * rho
            s = num / den
            if s >= 0.0 and s <= 1.0:
                o[0, c0] = Ag
                o[1, c0] = s
                c0 += 1
        for g in range(G):
            Ag = A[g]
            Am1 = Ag - 1.0
            hbi = (Am1 + n_i) / (n_i * Ag)
            hbj = (Am1 + n_j) / (n_j * Ag)
            # H1-H1
            s = (rho * inv_nj - ahi) / (hbi - hbj * rho)
            if _h11_valid(s, Am1, Ag, n_j):
                o[2, c1] = Ag
                o[3, c1] = s
                c1 += 1
            # H1-H2 (prefix)
            if g < Gh:
                rA = (1.0 / Ag) * rho
                s = (rA - ahi) / (hbi - rA)
                if _h12_valid(s, Am1, Ag, n_i, n_j):
                    o[4, c2] = Ag
                    o[5, c2] = s
                    c2 += 1
    return [(out[0, :c0], out[1, :c0]), (out[2, :c1], out[3, :c1]), (out[4, :c2], out[5, :c2])]


def min_error(
    const int64_t[:] gi,
    const double[:] s,
    const double[:] t,
    const double[:, :] aL,
    const double[:, :] bL,
    const double[:, :] c1,
    const double[:, :] nA,
    const double[:] A,
    const double[:] invA,
):
    """:func:`predictors.adept_envelope._min_error`: the smallest minimax relative error
    ``(max h/t - min h/t) / (max h/t + min h/t)`` over the instances ``(A[gi[c]], s[c])``
    (``inf`` without one, NaN when one's is NaN), from the point tables ``aL, bL, c1, nA``
    (shape ``(m, G)``): ``h = aL + s bL`` where ``s <= 1``, else ``max(H1, 1/A)``."""
    cdef Py_ssize_t C = gi.shape[0], m = t.shape[0], G = A.shape[0], c, k, g
    cdef double best = INFINITY, sc, h, den, lo = 0.0, hi = 0.0, spread
    cdef bint nan_seen = False
    if s.shape[0] != C or invA.shape[0] != G or m == 0:
        raise ValueError("min_error: gi and s (and A and invA) must have equal lengths")
    if (
        aL.shape[0] != m or bL.shape[0] != m or c1.shape[0] != m or nA.shape[0] != m
        or aL.shape[1] != G or bL.shape[1] != G or c1.shape[1] != G or nA.shape[1] != G
    ):
        raise ValueError("min_error: the point tables must have the shape (m, G)")
    for c in range(C):
        if gi[c] < 0 or gi[c] >= G:
            raise IndexError("min_error: a grid index is out of range")
    with nogil:
        for c in range(C):
            g = gi[c]
            sc = s[c]
            for k in range(m):
                if sc <= 1.0:
                    h = bL[k, g] * sc
                    h = h + aL[k, g]
                else:
                    h = c1[k, g] * sc
                    h = h + A[g]
                    den = nA[k, g] * (1.0 + sc)
                    h = h / den
                    h = _maximum(h, invA[g])
                h = h / t[k]
                _widen(h, k == 0, &lo, &hi)
            spread = _relative_spread(lo, hi)
            if isnan(spread):
                nan_seen = True
                break
            if spread < best:
                best = spread
    return float("nan") if nan_seen else best


def curve_bounds(const unsigned char[:, :, :, :] OK):
    """The grid index bounds of :func:`predictors.adept_envelope._curve_a_bounds`: the
    combo and pair of every curve valid somewhere (``OK`` of shape ``(3, P, R, G)``, as
    uint8, over its ``R`` ratios), in ``np.nonzero`` order, and its first and last valid
    grid indices widened by one (clipped to the grid), the firsts then the lasts."""
    import numpy as np

    cdef Py_ssize_t K = OK.shape[0], P = OK.shape[1], R = OK.shape[2], G = OK.shape[3]
    cdef Py_ssize_t c, p, r, g, first, last, count = 0
    cdef bint contiguous = OK.strides[3] == 1
    cdef const unsigned char *row
    cdef const void *hit
    combos = np.empty(K * P, dtype=np.int64)
    pairs = np.empty(K * P, dtype=np.int64)
    bounds = np.empty(2 * K * P, dtype=np.int64)
    cdef int64_t[::1] cs = combos, ps = pairs, b = bounds
    with nogil:
        for c in range(K):
            for p in range(P):
                # the first valid grid index over the ratios (each ratio's row scanned
                # up to the first found so far), then the last one, from the end
                first = G
                for r in range(R):
                    if contiguous and G:
                        row = &OK[c, p, r, 0]
                        hit = memchr(row, 1, first)
                        if hit != NULL:
                            first = <const unsigned char *>hit - row
                    else:
                        for g in range(first):
                            if OK[c, p, r, g]:
                                first = g
                                break
                if first == G:
                    continue
                last = first
                for r in range(R):
                    for g in range(G - 1, last, -1):
                        if OK[c, p, r, g]:
                            last = g
                            break
                cs[count] = c
                ps[count] = p
                b[count] = first - 1 if first > 0 else 0
                b[K * P + count] = last + 1 if last + 1 < G else G - 1
                count += 1
    return combos[:count], pairs[:count], np.concatenate([bounds[:count], bounds[K * P : K * P + count]])


def flat_prefix_errors(const double[:] t, const double[:, :] aL, const double[:, :] bL):
    """:func:`predictors.adept_envelope._flat_prefix_errors`: the running minima along the
    grid of the minimax relative errors of the instances ``(A, 0)`` and ``(A, 1)`` (rows
    0 and 1 of the result; NaN kept from where it appears), from the point tables ``aL,
    bL`` (shape ``(m, G)``)."""
    import numpy as np

    cdef Py_ssize_t m = t.shape[0], G = aL.shape[1], q, k, g
    cdef double sig, h, lo = 0.0, hi = 0.0, spread, run = 0.0
    if m == 0 or aL.shape[0] != m or bL.shape[0] != m or bL.shape[1] != G:
        raise ValueError("flat_prefix_errors: the point tables must have the shape (m, G)")
    result = np.empty((2, G))
    cdef double[:, ::1] out = result
    with nogil:
        for q in range(2):
            sig = <double>q
            for g in range(G):
                for k in range(m):
                    h = bL[k, g] * sig
                    h = h + aL[k, g]
                    h = h / t[k]
                    _widen(h, k == 0, &lo, &hi)
                spread = _relative_spread(lo, hi)
                run = spread if g == 0 else _minimum(run, spread)
                out[q, g] = run
    return result[0], result[1]
