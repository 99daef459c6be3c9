"""The default ground truth of a trace job: Downey in ``n`` times Fluid in ``f`` (docs/background/models.md, section 1.4).

``T(n, f) = L / S(n) * ((1 - alpha) + alpha / x)`` with ``x = f / Fmax``, and
the power of each allocated node ``P = Pstatic + Pdyn * x**p_coef``. ``L`` is
the one-node runtime at ``Fmax`` (node-seconds of work).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from workloads.models.downey import downey_speedup
from workloads.models.fluid import fluid_power, fluid_runtime_factor

__all__ = ["composite_energy", "composite_power", "composite_runtime"]


def composite_runtime(
    n: ArrayLike, x: ArrayLike, L: ArrayLike, A: ArrayLike, sigma: ArrayLike, alpha: ArrayLike
) -> np.ndarray:
    """True runtime (s): ``L / S(n) * ((1 - alpha) + alpha / x)``."""
    return (
        np.asarray(L, dtype=np.float64)
        / downey_speedup(n, A, sigma)
        * fluid_runtime_factor(x, alpha)
    )


def composite_power(
    x: ArrayLike, p_static_w: ArrayLike, p_dyn_w: ArrayLike, p_coef: float = 2.0
) -> np.ndarray:
    """Power of each allocated node (W): ``Pstatic + Pdyn * x**p_coef``."""
    return fluid_power(x, p_static_w, p_dyn_w, p_coef)


def composite_energy(
    n: ArrayLike,
    x: ArrayLike,
    L: ArrayLike,
    A: ArrayLike,
    sigma: ArrayLike,
    alpha: ArrayLike,
    p_static_w: ArrayLike,
    p_dyn_w: ArrayLike,
    p_coef: float = 2.0,
) -> np.ndarray:
    """Energy of the whole job (J): ``n * T(n, f) * P(f)``."""
    return (
        np.asarray(n, dtype=np.float64)
        * composite_runtime(n, x, L, A, sigma, alpha)
        * composite_power(x, p_static_w, p_dyn_w, p_coef)
    )
