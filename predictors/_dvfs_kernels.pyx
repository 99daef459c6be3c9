# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled kernels of the fluid predictors (:mod:`predictors.dvfs`).

* :func:`fluid_table` -- the twin of :func:`predictors.dvfs._fluid_table_plain`
  (the time table ``g / n x ((1 - alpha) + alpha / x)``, the power row ``Pstatic +
  Pdyn x**pcoef`` from the given powers ``x**pcoef``, and the table's bounds of
  :func:`predictors.baselines.outer_table_bounds`);
* :func:`anchored_exponent_step` -- the twin of
  :func:`predictors.dvfs._anchored_exponent_step_plain` (the anchored power exponent
  fit after its two matrix products, which stay NumPy's: the best grid exponent and
  the parabolic step);
* :func:`scaled_ratio_max` -- the twin of
  :func:`predictors.baselines.scaled_ratio_max_plain` (the largest time of a
  composite's shape: a node part's times at ``Fmax`` times the frequency part's
  slow-downs, in practice the fluid tables' ratios, without the table);

each tested against its reference bit for bit (``tests/predictors/test_dvfs_kernels.py``).

Only IEEE divisions, additions, multiplications and comparisons (each correctly
rounded or exact), in the references' order and grouping: so the values are
NumPy's, provided the C compiler contracts no ``a * b + c`` into a fused
multiply-add (``setup.py`` builds this module with ``-ffp-contract=off``). The
table's powers ``x**pcoef`` come from NumPy (its ``power`` may use other code than
the C library's ``pow``); the exponent step's ``x**exponent`` are Python's float
powers there, which are the C library's ``pow`` (for the clocks up to 2 it is
given: no overflow). The NumPy steps are a dozen small array operations per table
or fit; here each is one pass without temporaries.

Built by ``pip install`` when a C compiler is there (``setup.py``, optional);
without it the Python reference runs (the same tables, slower).
"""

import numpy as np

from libc.math cimport INFINITY, NAN, pow
from libc.stdlib cimport free, malloc


cdef inline bint _widen_positive(double v, double *lo, double *hi) noexcept nogil:
    """Whether ``v`` is finite and positive; if so, widen ``[lo, hi]`` to hold it."""
    if not (0 < v < INFINITY):
        return False
    if v < lo[0]:
        lo[0] = v
    if v > hi[0]:
        hi[0] = v
    return True


def fluid_table(
    double g,
    Py_ssize_t count,
    const double[::1] x,
    double alpha,
    double pstatic_w,
    double pdyn_w,
    const double[::1] x_pow,
):
    """``(tau, power, bounds)`` of :func:`predictors.dvfs._fluid_table_plain` when every
    factor of the table (``g / n``, ``(1 - alpha) + alpha / x``) and every power is
    finite and positive (then the bounds are known from the factors' ends); ``None``
    otherwise, or without a node count or a clock (the reference then decides)."""
    cdef Py_ssize_t n_clocks = x.shape[0], i, j
    if count <= 0 or n_clocks == 0 or x_pow.shape[0] != n_clocks:
        return None
    cdef double b = 1.0 - alpha
    cdef double v, f_min = INFINITY, f_max = -INFINITY, p_min = INFINITY, p_max = -INFINITY
    # g / n over n = 1..count is monotone: its ends are its extremes
    cdef double c_first = g / 1.0, c_last = g / <double>count
    cdef double c_min = c_first, c_max = c_last
    if c_max < c_min:
        c_min, c_max = c_max, c_min
    if not (c_min > 0 and c_max < INFINITY):
        return None
    cdef double *factor = <double *>malloc((n_clocks + count) * sizeof(double))
    if factor == NULL:
        raise MemoryError()
    cdef double *col = factor + n_clocks
    power = np.empty(n_clocks)
    cdef double[::1] pw = power
    cdef double[::1, :] cells
    try:
        for j in range(n_clocks):
            v = factor[j] = b + alpha / x[j]
            if not _widen_positive(v, &f_min, &f_max):
                return None
            v = pw[j] = pstatic_w + pdyn_w * x_pow[j]
            if not _widen_positive(v, &p_min, &p_max):
                return None
        for i in range(count):
            col[i] = g / <double>(i + 1)
        tau = np.empty((count, n_clocks), order="F")  # column-major, as outer_product's
        cells = tau
        for j in range(n_clocks):
            v = factor[j]
            for i in range(count):
                cells[i, j] = v * col[i]
    finally:
        free(factor)
    return tau, power, (c_min * f_min, c_max * f_max, p_min, p_max)


def anchored_exponent_step(
    const double[::1] num,
    const double[::1] den,
    const double[:, ::1] w,
    list counts,
    list gaps,
    list clocks,
    const double[::1] grid,
    double step,
):
    """:func:`predictors.dvfs._anchored_exponent_step_plain` (the anchored power
    exponent fit after its two matrix products): ``(exponent, Pdyn)``, or ``None``
    when the best gain is not finite. ``num``, ``den``: per grid exponent; ``w``: one
    row per clock, one column per grid exponent; ``counts``, ``gaps``, ``clocks``:
    per clock, Python floats. NumPy's ``maximum`` NaN rule and its ``argmax`` (the
    first largest value; a NaN wins, and is not finite); Python's ``max``/``min`` and
    ``**`` (the C library's ``pow``) on floats, as there."""
    cdef Py_ssize_t G = num.shape[0], m = len(counts), k = 0, i
    cdef double v, top, c, g, w0, w1, w2, r0, r1, r2, s0, s1, s2, curv, cand, lo, hi
    cdef double n0, n1, n2, pd0, pd1, pd2, best, best_pd, wc, c_num, c_den, c_pd, c_sse, r
    if G == 0 or den.shape[0] != G or w.shape[0] != m or w.shape[1] != G or grid.shape[0] != G:
        raise ValueError("anchored_exponent_step: inconsistent shapes")
    if len(gaps) != m or len(clocks) != m:
        raise ValueError("anchored_exponent_step: one count, gap and clock per row of w")
    # gain = max(num, 0)**2 / den (np.maximum, then two in-place ufuncs); its argmax
    top = -INFINITY
    for i in range(G):
        v = num[i]
        v = v if (v >= 0.0 or v != v) else 0.0
        v = v * v
        v = v / den[i]
        if v != v:
            return None  # argmax is this NaN: not finite
        if v > top:
            top = v
            k = i
    if not (-INFINITY < top < INFINITY):  # (-inf: every gain is -inf, argmax 0)
        return None
    v = num[k]
    best = grid[k]
    best_pd = (0.0 if 0.0 > v else v) / den[k]
    if 0 < k < G - 1:
        n0, n1, n2 = num[k - 1], num[k], num[k + 1]
        pd0 = (0.0 if 0.0 > n0 else n0) / den[k - 1]
        pd1 = (0.0 if 0.0 > n1 else n1) / den[k]
        pd2 = (0.0 if 0.0 > n2 else n2) / den[k + 1]
        s0 = s1 = s2 = 0.0
        for i in range(m):
            c = counts[i]
            g = gaps[i]
            w0, w1, w2 = w[i, k - 1], w[i, k], w[i, k + 1]
            r0 = g - w0 * pd0
            r1 = g - w1 * pd1
            r2 = g - w2 * pd2
            s0 = s0 + c * (r0 * r0)
            s1 = s1 + c * (r1 * r1)
            s2 = s2 + c * (r2 * r2)
        curv = s0 - 2.0 * s1
        curv = curv + s2
        if curv > 0:
            cand = 0.5 * step
            cand = cand * (s0 - s2)
            cand = cand / curv
            cand = grid[k] + cand
            lo, hi = grid[k - 1], grid[k + 1]
            cand = lo if lo > cand else cand  # Python's max(cand, lo)
            cand = hi if hi < cand else cand  # min(..., hi)
            c_num = c_den = 0.0
            for i in range(m):
                c = counts[i]
                g = gaps[i]
                wc = 1.0 - pow(<double>clocks[i], cand)
                c_num = c_num + (c * g) * wc
                c_den = c_den + c * (wc * wc)
            if c_den > 0:
                c_pd = (0.0 if 0.0 > c_num else c_num) / c_den
            else:
                c_pd = NAN
            c_sse = 0.0
            for i in range(m):
                c = counts[i]
                g = gaps[i]
                wc = 1.0 - pow(<double>clocks[i], cand)
                r = g - wc * c_pd
                c_sse = c_sse + c * (r * r)
            if c_sse < s1:
                best, best_pd = cand, c_pd
    return best, best_pd


def scaled_ratio_max(const double[:, :] scale, const double[:, :] table):
    """:func:`predictors.baselines.scaled_ratio_max_plain` of a one-column ``scale``
    (``(rows, 1)``) and a non-empty ``table``: the largest ``scale[i, 0] * (m_i /
    table[i, -1])`` over the rows, ``m_i`` the row's largest cell (NumPy's
    ``maximum`` NaN rule, the columns in order, then the rows in order); ``None`` for
    other shapes (the reference then decides)."""
    cdef Py_ssize_t rows = table.shape[0], cols = table.shape[1], i, j
    cdef double best = NAN, largest, v
    if rows == 0 or cols == 0 or scale.shape[0] != rows or scale.shape[1] != 1:
        return None
    for i in range(rows):
        largest = table[i, 0]
        for j in range(1, cols):
            v = table[i, j]
            if not (largest >= v or largest != largest):  # np.maximum(largest, v)
                largest = v
        v = largest / table[i, cols - 1]
        v = scale[i, 0] * v
        if i == 0 or not (best >= v or best != best):
            best = v
    return best
