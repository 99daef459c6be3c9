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
* ``rapl_power_w = (s_static Ps + s_dyn max(P - Ps, 0)) m(cn, e_8)`` per node: a
  share of the node power, most of the dynamic part and a third of the static.

Hidden per-application traits (:class:`CounterTraits`, drawn once by
:func:`draw_counter_traits`): ``ipc ~ U[1.0, 2.5]`` (instructions per
frequency-scaled cycle, used to make ``I``), ``o_llc ~ N(0, 0.04)``,
``o_stall ~ N(0, 0.04)``, ``bw_scale ~ U[12, 24]`` GB/s, ``s_static ~
U[0.3, 0.4]``, ``s_dyn ~ U[0.85, 0.95]``. ``noise`` is the run-to-run noise
of time and power (docs/background/models.md: default 2%); ``cn`` (``counter_noise``)
defaults to ``noise``, so ``noise = 0`` makes every column an exact
(deterministic) function of the hidden parameters.

The 8 normal draws are made in one ``rng.standard_normal((8, rows))`` call,
whatever the noise level, so a run is reproducible from its generator.

:func:`measure_columns` evaluates the formulas with numpy;
:func:`measure_row` evaluates them for one run in plain Python floats with
the same operations in the same order (the same values, bit for bit), which
is much cheaper for the few rows the simulator measures at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from workloads.models.fluid import fluid_runtime_factor
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


def trait_rows(alpha: ArrayLike, traits: CounterTraits) -> list[tuple[float, ...]]:
    """Per application, the terms of the formulas that depend on it alone, for :func:`measure_row`.

    Each row is ``(a, 1 - a, clip(0.02 + 0.5 (1 - a) + o_llc, 0.001, 0.999),
    0.05 + (1 - a), o_stall, bw_scale, s_static, s_dyn)`` with ``a`` the
    application's ``alpha`` clipped to ``[0, 1]``, computed with the same
    floating-point operations as :func:`measure_columns`.
    """
    a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, 1.0)
    tr = {
        fl.name: np.broadcast_to(np.asarray(getattr(traits, fl.name), dtype=np.float64), a.shape)
        for fl in _TRAIT_FIELDS
    }
    one_a = 1.0 - a
    llc = np.clip(0.02 + 0.5 * one_a + tr["llc_offset"], 0.001, 0.999)
    return list(
        zip(
            a.tolist(),
            one_a.tolist(),
            llc.tolist(),
            (0.05 + one_a).tolist(),
            tr["stall_offset"].tolist(),
            tr["bw_scale_gbs"].tolist(),
            tr["rapl_static_share"].tolist(),
            tr["rapl_dyn_share"].tolist(),
        )
    )


def measure_row(
    e: list[float],
    trait: tuple[float, ...],
    n: float,
    c: float,
    f: float,
    t: float,
    p: float,
    ps: float,
    instr: float,
    cores_per_node: float,
    fmax_ghz: float,
    sn: float,
    cn: float,
) -> tuple[float, ...]:
    """The measured values of one run, in plain Python floats.

    Same formulas and the same floating-point operations, in the same order,
    as :func:`measure_columns` (so the same values, bit for bit), for the few
    runs the simulator measures at a time, where numpy's per-call overhead
    dominates. ``e`` is the run's 8 normal draws (its column of the ``(8,
    rows)`` draws), ``trait`` its :func:`trait_rows` row, then its nodes,
    cores, frequency, runtime, power, static power and instructions, the
    node type's cores per node and top frequency, and the noise levels of
    time/power (``sn``) and of the counters (``cn``). ``max`` and ``clip``
    follow numpy's ``maximum`` and ``clip`` (NaN propagates; on a tie
    ``maximum`` returns the bound, ``clip`` its argument). Noise levels are
    not checked.

    Returns:
        ``(time_s, power_w, energy_j, ctr_instructions_per_s,
        ctr_llc_miss_ratio, ctr_mem_bandwidth_gbs, ctr_stall_ratio,
        rapl_power_w, instructions)``.

    Raises:
        ZeroDivisionError: a division by zero, where numpy gives ``inf`` or
            NaN: the caller falls back to :func:`measure_columns` with the same
            draws.
    """
    a, one_a, llc0, bw_mid, o_stall, bw_scale, s_static, s_dyn = trait
    # m(s, e) = max(1 + s e, 0.05), as np.maximum (NaN propagates): draws 0-1 scale
    # with the measurement noise, 2-7 with the counter noise (unrolled: this runs
    # once per finished job)
    e0, e1, e2, e3, e4, e5, e6, e7 = e
    g0 = g if (g := 1.0 + sn * e0) > 0.05 or g != g else 0.05
    g1 = g if (g := 1.0 + sn * e1) > 0.05 or g != g else 0.05
    g2 = g if (g := 1.0 + cn * e2) > 0.05 or g != g else 0.05
    g3 = g if (g := 1.0 + cn * e3) > 0.05 or g != g else 0.05
    g4 = g if (g := 1.0 + cn * e4) > 0.05 or g != g else 0.05
    g5 = g if (g := 1.0 + cn * e5) > 0.05 or g != g else 0.05
    g6 = g if (g := 1.0 + cn * e6) > 0.05 or g != g else 0.05
    g7 = g if (g := 1.0 + cn * e7) > 0.05 or g != g else 0.05

    x = f / fmax_ghz
    ax = a / x
    fluid = one_a + ax
    phi = ax / fluid
    u = c / cores_per_node
    time_s = t * g0
    power = p * g1
    v = llc0 * g4  # clip(v, 0, 1) as np.clip
    llc = 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)
    v = 0.9 * (1.0 - phi) + o_stall
    v = (0.0 if v < 0.0 else (1.0 if v > 1.0 else v)) * g6
    stall = 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)
    d = p - ps
    d = d if (d > 0.0 or d != d) else 0.0
    return (
        time_s,
        power,
        time_s * power * n,
        instr / (n * c * t) * g3,
        llc,
        bw_scale * u * bw_mid / fluid * g5,
        stall,
        (s_static * ps + s_dyn * d) * g7,
        instr * g2,
    )


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
    return _measure_columns(
        node_type=node_type,
        nodes=nodes,
        cores=cores,
        cores_per_node=cores_per_node,
        freq_ghz=freq_ghz,
        fmax_ghz=fmax_ghz,
        runtime_s=runtime_s,
        power_w=power_w,
        alpha=alpha,
        p_static_w=p_static_w,
        instructions=instructions,
        traits=traits,
        noise=noise,
        rng=rng,
        normals=None,
        counter_noise=counter_noise,
    )


def _measure_columns(
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
    rng: np.random.Generator | None,
    normals: np.ndarray | None,
    counter_noise: float | None = None,
) -> dict[str, np.ndarray]:
    """:func:`measure_columns`, with the normal draws given (``normals``, shape
    ``(8, rows)``) or drawn from ``rng`` after the arguments are checked."""
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
    if normals is not None:
        e = normals
        if e.shape != (8, k):
            raise ValueError(f"measure: normals must have shape (8, {k}), got {e.shape}")
    elif rng is not None:
        e = rng.standard_normal((8, k))
    else:
        raise ValueError("measure: give rng or normals")
    x = f / fmax
    fluid = fluid_runtime_factor(x, a)
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
