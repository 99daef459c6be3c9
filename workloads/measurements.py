"""What a finished run reports to predictors: noisy time, power, energy, counters, RAPL.

Predictors never see the hidden model; they see these measurements. The
generating formulas below are the contract the counter-based ("online") DVFS
predictor can rely on: **linear-ish signal, not exact** (every application
carries hidden per-application counter traits, and every run gets noise).

Notation per row: ``T`` true runtime (s), ``P`` true mean power per node (W),
``n`` nodes, ``c`` cores per node used, ``u = c / cores_per_node``,
``x = f / Fmax``, ``alpha`` the application's DVFS sensitivity (for hybrid
programs an effective one), ``Ps`` its static node power (W), ``I`` the true
total instructions of the run (proportional to the job's work),
``phi = (alpha/x) / ((1 - alpha) + alpha/x)`` the share of the run spent in
the frequency-scaled ("fluid") part, and ``e_k ~ N(0, 1)`` independent draws.
``m(s, e) = max(1 + s e, 0.05)`` is a multiplicative noise factor (the floor
only matters for absurd noise levels).

* ``time_s = T m(noise, e_1)``, ``power_w = P m(noise, e_2)``,
  ``energy_j = time_s * power_w * n`` (exactly consistent).
* ``instructions = I m(cn, e_3)`` (nearly independent of ``n``, ``f``).
* ``ctr_instructions_per_s = I / (n c T) m(cn, e_4)`` per core: rises with
  ``f * alpha`` (for a fixed job) and with parallel efficiency.
* ``ctr_llc_miss_ratio = clip(0.02 + 0.5 (1 - alpha) + o_llc, 0.001, 0.999) m(cn, e_5)``
  (clipped again to ``[0, 1]``): falls as ``alpha`` rises.
* ``ctr_mem_bandwidth_gbs = bw_scale u (0.05 + (1 - alpha)) / ((1 - alpha) + alpha/x) m(cn, e_6)``
  per node: rises with ``1 - alpha`` (and with ``f`` for mixed programs).
* ``ctr_stall_ratio = clip(0.9 (1 - phi) + o_stall, 0, 1) m(cn, e_7)``
  (clipped to ``[0, 1]``): ``~ 1 - alpha`` at ``Fmax``.
* ``rapl_power_w = (s_static Ps + s_dyn (P - Ps)) m(cn, e_8)`` per node: a
  share of the node power, most of the dynamic part and a third of the static.

Hidden per-application traits (:class:`CounterTraits`, drawn once by
:func:`draw_counter_traits`): ``ipc ~ U[1.0, 2.5]`` (instructions per
frequency-scaled cycle, used to make ``I``), ``o_llc ~ N(0, 0.04)``,
``o_stall ~ N(0, 0.04)``, ``bw_scale ~ U[12, 24]`` GB/s, ``s_static ~
U[0.3, 0.4]``, ``s_dyn ~ U[0.85, 0.95]``. ``noise`` is the run-to-run noise
of time and power (MODELS.md: default 2%); ``cn`` (``counter_noise``)
defaults to ``noise``, so ``noise = 0`` makes every column an exact
(deterministic) function of the hidden parameters.

The 8 normal draws are made in one ``rng.standard_normal((8, rows))`` call,
whatever the noise level, so a run is reproducible from its generator.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from workloads.schema import COUNTER_COLUMNS, MEASUREMENT_COLUMNS

__all__ = [
    "COUNTER_COLUMNS",
    "MEASUREMENT_COLUMNS",
    "CounterTraits",
    "draw_counter_traits",
    "measure",
    "measure_columns",
]


@dataclass(frozen=True)
class CounterTraits:
    """Hidden per-application counter traits (arrays of one length, or scalars)."""

    ipc: Any
    llc_offset: Any
    stall_offset: Any
    bw_scale_gbs: Any
    rapl_static_share: Any
    rapl_dyn_share: Any

    def take(self, index: np.ndarray) -> CounterTraits:
        """Rows ``index``."""
        return CounterTraits(
            **{f.name: np.asarray(getattr(self, f.name))[index] for f in fields(self)}
        )


def draw_counter_traits(rng: np.random.Generator, size: int) -> CounterTraits:
    """Draw ``size`` applications' traits (distributions in the module docstring)."""
    return CounterTraits(
        ipc=rng.uniform(1.0, 2.5, size),
        llc_offset=rng.normal(0.0, 0.04, size),
        stall_offset=rng.normal(0.0, 0.04, size),
        bw_scale_gbs=rng.uniform(12.0, 24.0, size),
        rapl_static_share=rng.uniform(0.3, 0.4, size),
        rapl_dyn_share=rng.uniform(0.85, 0.95, size),
    )


_TRAIT_FIELDS = fields(CounterTraits)


def _factor(scale: float, e: np.ndarray) -> np.ndarray:
    return np.maximum(1.0 + scale * e, 0.05)


def measure(**kwargs: Any) -> pd.DataFrame:
    """Noisy measurements of runs as a DataFrame with :data:`MEASUREMENT_COLUMNS`.

    Same arguments as :func:`measure_columns` (keyword-only).
    """
    cols = measure_columns(**kwargs)
    return pd.DataFrame({name: cols[name] for name in MEASUREMENT_COLUMNS}, copy=False)


def measure_columns(
    *,
    node_type: str | ArrayLike,
    nodes: ArrayLike,
    cores: ArrayLike,
    cores_per_node: ArrayLike,
    freq_ghz: ArrayLike,
    fmax_ghz: ArrayLike,
    runtime_s: ArrayLike,
    power_w: ArrayLike,
    alpha: ArrayLike,
    p_static_w: ArrayLike,
    instructions: ArrayLike,
    traits: CounterTraits,
    noise: float,
    rng: np.random.Generator,
    counter_noise: float | None = None,
) -> dict[str, np.ndarray]:
    """Noisy measurements of runs (formulas in the module docstring), as columns.

    Args:
        node_type: node type name (one for all rows, or an array).
        nodes, cores, freq_ghz: the runs' configurations.
        cores_per_node, fmax_ghz: of the node type of each row.
        runtime_s, power_w: true runtime (s) and mean power per node (W).
        alpha: DVFS sensitivity of each row's application.
        p_static_w: static node power of each row's application (W).
        instructions: true total instructions of each run.
        traits: hidden counter traits of each row's application.
        noise: std of the relative noise on time and power (0: exact).
        rng: the run's generator.
        counter_noise: std of the relative noise of counters, RAPL and
            instructions (default: ``noise``).

    Returns:
        dict of 1-D arrays keyed by :data:`MEASUREMENT_COLUMNS`.
    """
    if noise < 0 or (counter_noise is not None and counter_noise < 0):
        raise ValueError("measure: noise must be >= 0")
    cn = noise if counter_noise is None else counter_noise
    shapes = [
        np.shape(v)
        for v in (
            nodes,
            cores,
            cores_per_node,
            freq_ghz,
            fmax_ghz,
            runtime_s,
            power_w,
            alpha,
            p_static_w,
            instructions,
            node_type,
        )
    ]
    shapes += [np.shape(getattr(traits, fl.name)) for fl in _TRAIT_FIELDS]
    shape = np.broadcast_shapes(*shapes)
    if len(shape) > 1:
        raise ValueError(f"measure: arguments must be scalars or 1-D arrays, got shape {shape}")
    k = shape[0] if shape else 1
    n = np.broadcast_to(np.asarray(nodes, dtype=np.float64), (k,))

    def b(v: ArrayLike) -> np.ndarray:
        # inputs stay scalar or (k,): numpy broadcasting gives the same elementwise
        # values as materialising them (every output row below involves a noise row)
        return np.asarray(v, dtype=np.float64)

    c = np.broadcast_to(b(cores), (k,))
    f = np.broadcast_to(b(freq_ghz), (k,))
    cpn, fmax = b(cores_per_node), b(fmax_ghz)
    t, p, ps, instr = b(runtime_s), b(power_w), b(p_static_w), b(instructions)
    a = np.clip(b(alpha), 0.0, 1.0)
    tr = CounterTraits(**{fl.name: b(getattr(traits, fl.name)) for fl in _TRAIT_FIELDS})
    e = rng.standard_normal((8, k))
    x = f / fmax
    fluid = (1.0 - a) + a / x
    phi = (a / x) / fluid
    u = c / cpn

    time_s = t * _factor(noise, e[0])
    power = p * _factor(noise, e[1])
    energy = time_s * power * n
    instr_meas = instr * _factor(cn, e[2])
    with np.errstate(divide="ignore", invalid="ignore"):
        ips = instr / (n * c * t) * _factor(cn, e[3])
    llc = np.clip(
        np.clip(0.02 + 0.5 * (1.0 - a) + tr.llc_offset, 0.001, 0.999) * _factor(cn, e[4]), 0.0, 1.0
    )
    bw = tr.bw_scale_gbs * u * (0.05 + (1.0 - a)) / fluid * _factor(cn, e[5])
    stall = np.clip(
        np.clip(0.9 * (1.0 - phi) + tr.stall_offset, 0.0, 1.0) * _factor(cn, e[6]), 0.0, 1.0
    )
    rapl = (tr.rapl_static_share * ps + tr.rapl_dyn_share * np.maximum(p - ps, 0.0)) * _factor(
        cn, e[7]
    )
    names = np.broadcast_to(np.asarray(node_type, dtype=object), (k,))
    return {
        "node_type": names.copy(),
        "nodes": n.astype(np.int64),
        "cores": c.astype(np.int64),
        "freq_ghz": f.copy(),
        "time_s": time_s,
        "power_w": power,
        "energy_j": energy,
        "ctr_instructions_per_s": ips,
        "ctr_llc_miss_ratio": llc,
        "ctr_mem_bandwidth_gbs": bw,
        "ctr_stall_ratio": stall,
        "rapl_power_w": rapl,
        "instructions": instr_meas,
    }
