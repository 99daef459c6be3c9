# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled kernel of the fluid predictors' shape tables (:mod:`predictors.dvfs`).

* :func:`fluid_table` -- the twin of :func:`predictors.dvfs._fluid_table_plain`
  (the time table ``g / n x ((1 - alpha) + alpha / x)``, the power row ``Pstatic +
  Pdyn x**pcoef`` from the given powers ``x**pcoef``, and the table's bounds of
  :func:`predictors.baselines.outer_table_bounds`), tested against it bit for bit
  (``tests/predictors/test_dvfs_kernels.py``).

Only IEEE divisions, additions, multiplications and comparisons (each correctly
rounded or exact), in the reference's order and grouping: so the values are
NumPy's, provided the C compiler contracts no ``a * b + c`` into a fused
multiply-add (``setup.py`` builds this module with ``-ffp-contract=off``). The
powers ``x**pcoef`` come from NumPy (its ``power`` may use other code than the C
library's ``pow``). The NumPy steps are a dozen small array operations per table;
here the table is one pass without temporaries.

Built by ``pip install`` when a C compiler is there (``setup.py``, optional);
without it the Python reference runs (the same tables, slower).
"""

import numpy as np

from libc.math cimport INFINITY
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
