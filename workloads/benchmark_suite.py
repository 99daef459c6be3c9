"""The platform's benchmark suite: programs with known, contrasting behaviour (LBM input).

Each :class:`Benchmark` is a full hidden model (Downey x Fluid, or the hybrid
MPI+OpenMP queueing model), measured once "at cluster setup" on every
configuration a policy may choose by :func:`measure_benchmark_suite`. The
measurements use the same generating formulas as job runs
(:mod:`workloads.measurements`), so benchmark rows and run rows are comparable
resources for the LBM predictor.

Built-in benchmarks (:data:`BENCHMARKS`):

============== ========= ===================================================
name           model     behaviour
============== ========= ===================================================
cpu-bound      Downey    ep-like: alpha 0.98, A 512, sigma 0.2, full power
memory-bound   Downey    mg-like: alpha 0.15, A 64, sigma 0.8, low power
mixed          Downey    bt-like: alpha 0.7, A 128, sigma 1.2
serial-heavy   Downey    alpha 0.85, A 4, sigma 2 (stops scaling at 4 nodes)
comm-bound     hybrid    30 s of transfers per node: flat beyond a few nodes
omp-memory     hybrid    strong memory contention between threads (kappa 0.25)
============== ========= ===================================================

Downey benchmarks count ``n`` in node-equivalents of the first node type
(``n c / cores_per_node(first type)``), like the trace ground truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from workloads.measurements import CounterTraits, measure
from workloads.models.downey import downey_speedup
from workloads.models.fluid import fluid_power, fluid_runtime_factor
from workloads.models.hybrid import HybridApp, hybrid_evaluate, hybrid_power_figures
from workloads.schema import BENCHMARK_COLUMNS

__all__ = [
    "BENCHMARKS",
    "BENCHMARK_COLUMNS",
    "Benchmark",
    "default_node_counts",
    "measure_benchmark_suite",
]

#: Link throughput used when the platform has no topology (GB/s).
_DEFAULT_LINK_GBS = 12.5


@dataclass(frozen=True)
class Benchmark:
    """A benchmark program with a known hidden model.

    Attributes:
        name: e.g. ``"cpu-bound"``.
        description: one line.
        model: ``"downey-fluid"`` or ``"hybrid"``.
        work_node_s: Downey: one-node runtime at ``Fmax`` (s, first-node-type
            node-seconds). Hybrid: compute time on one node, all cores, at
            ``Fmax`` (s).
        A, sigma, alpha: Downey x Fluid parameters.
        power_factor: full-load power at ``Fmax`` over the node type's
            ``busy_power_w`` at ``Fmax``.
        mem_share: hybrid: memory time / compute time on one node, all cores.
        kappa: hybrid: memory contention growth per thread.
        comm_s: hybrid: transfer time per node ``eta nu / B`` (s).
        msg_bytes: hybrid: bytes per message.
        utilisation: hybrid: baseline CPU utilisation ``U``.
        stall_share: hybrid: non-memory stall share of cycles.
        ipc, llc_offset, stall_offset, bw_scale_gbs, rapl_static_share,
            rapl_dyn_share: hidden counter traits (:mod:`workloads.measurements`).
    """

    name: str
    description: str
    model: str = "downey-fluid"
    work_node_s: float = 1800.0
    A: float = 64.0
    sigma: float = 0.5
    alpha: float = 0.8
    power_factor: float = 1.0
    mem_share: float = 0.2
    kappa: float = 0.1
    comm_s: float = 5.0
    msg_bytes: float = 65536.0
    utilisation: float = 0.85
    stall_share: float = 0.15
    ipc: float = 1.8
    llc_offset: float = 0.0
    stall_offset: float = 0.0
    bw_scale_gbs: float = 18.0
    rapl_static_share: float = 0.35
    rapl_dyn_share: float = 0.9

    def __post_init__(self) -> None:
        if self.model not in ("downey-fluid", "hybrid"):
            raise ValueError(f"Benchmark {self.name}: model must be 'downey-fluid' or 'hybrid'")

    def traits(self) -> CounterTraits:
        return CounterTraits(
            ipc=self.ipc,
            llc_offset=self.llc_offset,
            stall_offset=self.stall_offset,
            bw_scale_gbs=self.bw_scale_gbs,
            rapl_static_share=self.rapl_static_share,
            rapl_dyn_share=self.rapl_dyn_share,
        )


BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark(
            "cpu-bound",
            "ep-like: frequency-bound, scales to hundreds of nodes",
            work_node_s=3600.0,
            A=512.0,
            sigma=0.2,
            alpha=0.98,
            power_factor=1.05,
            ipc=2.3,
            llc_offset=-0.02,
            bw_scale_gbs=14.0,
        ),
        Benchmark(
            "memory-bound",
            "mg-like: memory-bound, frequency barely matters",
            work_node_s=1800.0,
            A=64.0,
            sigma=0.8,
            alpha=0.15,
            power_factor=0.88,
            ipc=0.9,
            llc_offset=0.03,
            stall_offset=0.02,
            bw_scale_gbs=22.0,
        ),
        Benchmark(
            "mixed",
            "bt-like: mostly compute, high variance of parallelism",
            work_node_s=2400.0,
            A=128.0,
            sigma=1.2,
            alpha=0.7,
            power_factor=0.97,
            ipc=1.6,
        ),
        Benchmark(
            "serial-heavy",
            "stops scaling at a few nodes (A 4, sigma 2)",
            work_node_s=900.0,
            A=4.0,
            sigma=2.0,
            alpha=0.85,
            power_factor=0.95,
            ipc=1.9,
            llc_offset=-0.01,
        ),
        Benchmark(
            "comm-bound",
            "hybrid MPI+OpenMP: 30 s of transfers per node, flat beyond a few nodes",
            model="hybrid",
            work_node_s=1200.0,
            mem_share=0.1,
            kappa=0.05,
            comm_s=30.0,
            msg_bytes=262144.0,
            utilisation=0.8,
            power_factor=0.92,
            ipc=1.4,
        ),
        Benchmark(
            "omp-memory",
            "hybrid MPI+OpenMP: threads of a node contend for memory (kappa 0.25)",
            model="hybrid",
            work_node_s=1500.0,
            mem_share=0.5,
            kappa=0.25,
            comm_s=3.0,
            msg_bytes=16384.0,
            utilisation=0.9,
            power_factor=0.9,
            ipc=1.1,
            llc_offset=0.02,
            bw_scale_gbs=20.0,
        ),
    )
}


def default_node_counts(count: int) -> list[int]:
    """Powers of two up to ``count``, plus ``count`` itself (ascending, unique)."""
    out = []
    p = 1
    while p <= count:
        out.append(p)
        p *= 2
    if count not in out:
        out.append(int(count))
    return out


def _pfigures(nt: Any) -> tuple[float, float, float, float, tuple[float, ...], int]:
    ps = sorted(nt.pstates, key=lambda p: p.freq_ghz)
    return (
        float(ps[0].idle_power_w),
        float(ps[-1].busy_power_w),
        float(ps[0].freq_ghz),
        float(ps[-1].freq_ghz),
        tuple(float(p.freq_ghz) for p in ps),
        int(nt.cores_per_node),
    )


def _hybrid_program(
    b: Benchmark, fmax_ghz: float, cores_per_node: int, link_gbs: float
) -> HybridApp:
    cycles = b.work_node_s * fmax_ghz * 1e9 * cores_per_node
    y = b.msg_bytes / (link_gbs * 1e9)
    return HybridApp(
        work_cycles=cycles * (1.0 - b.stall_share),
        stall_cycles=cycles * b.stall_share,
        mem_stall_cycles=b.mem_share
        * b.work_node_s
        * fmax_ghz
        * 1e9
        / (1.0 + b.kappa * (cores_per_node - 1)),
        kappa=b.kappa,
        messages=b.comm_s / y,
        message_bytes=b.msg_bytes,
        cpu_utilisation=b.utilisation,
    )


def measure_benchmark_suite(
    platform: Any,
    *,
    node_counts: Sequence[int] | Mapping[str, Sequence[int]] | None = None,
    cores: Sequence[int] | None = None,
    benchmarks: Iterable[Benchmark] | None = None,
    seed: int = 0,
    noise: float = 0.0,
) -> pd.DataFrame:
    """Measure every benchmark on every configuration a policy may choose.

    Args:
        platform: duck-typed platform (``node_types``; optional
            ``nodes_per_switch``, ``link_bandwidth_gbs``).
        node_counts: node counts to measure (one list for every node type, or
            a mapping by node type name); default :func:`default_node_counts`
            of each type's ``count`` (counts above a type's size are dropped).
        cores: cores per node to measure; default all cores of the node type only.
        benchmarks: default :data:`BENCHMARKS`.
        seed: seed of the measurement noise.
        noise: relative measurement noise (default 0: exact).

    Returns:
        DataFrame with :data:`BENCHMARK_COLUMNS`, one row per (benchmark, node
        type, nodes, cores, freq), in that nesting order.
    """
    rng = np.random.default_rng(seed)
    benches = list(BENCHMARKS.values()) if benchmarks is None else list(benchmarks)
    types = list(platform.node_types)
    ref_fmax = _pfigures(types[0])[3]
    ref_cores = _pfigures(types[0])[5]
    link = getattr(platform, "link_bandwidth_gbs", None) or _DEFAULT_LINK_GBS
    ports = getattr(platform, "nodes_per_switch", None)
    frames = []
    for b in benches:
        for nt in types:
            idle, busy, fmin, fmax, freqs, cpn = _pfigures(nt)
            if node_counts is None:
                counts = default_node_counts(int(nt.count))
            elif isinstance(node_counts, Mapping):
                counts = list(node_counts.get(nt.name, default_node_counts(int(nt.count))))
            else:
                counts = [int(c) for c in node_counts if int(c) <= int(nt.count)]
            core_list = [cpn] if cores is None else [int(c) for c in cores if 1 <= int(c) <= cpn]
            if not counts or not core_list:
                continue
            n, c, f = (
                a.ravel()
                for a in np.meshgrid(
                    np.asarray(counts, float),
                    np.asarray(core_list, float),
                    np.asarray(freqs),
                    indexing="ij",
                )
            )
            p_static = idle
            p_dyn = max(busy * b.power_factor - p_static, 0.0)
            x = f / fmax
            if b.model == "downey-fluid":
                n_eff = n * c / ref_cores
                runtime = (
                    b.work_node_s
                    / downey_speedup(n_eff, b.A, b.sigma)
                    * fluid_runtime_factor(x, b.alpha)
                )
                power = fluid_power(x, p_static, p_dyn, core_share=c / cpn)
                alpha = np.full(n.shape, b.alpha)
                instructions = np.full(
                    n.shape, b.ipc * ref_fmax * 1e9 * ref_cores * max(b.alpha, 0.05) * b.work_node_s
                )
            else:
                prog = _hybrid_program(b, fmax, cpn, link)
                hp = hybrid_power_figures(p_static, p_dyn, cpn)
                res = hybrid_evaluate(n, c, f, fmax, prog, hp, link, switch_ports=ports)
                runtime, power = res.runtime_s, res.power_w
                t_lo = hybrid_evaluate(
                    n, c, fmin, fmax, prog, hp, link, switch_ports=ports
                ).runtime_s
                t_hi = hybrid_evaluate(
                    n, c, fmax, fmax, prog, hp, link, switch_ports=ports
                ).runtime_s
                alpha = (
                    np.clip((t_lo / t_hi - 1.0) / (fmax / fmin - 1.0), 0.0, 1.0)
                    if fmax > fmin
                    else np.ones(n.shape)
                )
                instructions = np.full(n.shape, b.ipc * float(prog.work_cycles))
            frame = measure(
                node_type=nt.name,
                nodes=n,
                cores=c,
                cores_per_node=cpn,
                freq_ghz=f,
                fmax_ghz=fmax,
                runtime_s=runtime,
                power_w=power,
                alpha=alpha,
                p_static_w=p_static,
                instructions=instructions,
                traits=b.traits(),
                noise=noise,
                rng=rng,
            )
            frame.insert(0, "benchmark", b.name)
            frames.append(frame)
    if not frames:
        return pd.DataFrame({col: pd.Series(dtype=object) for col in BENCHMARK_COLUMNS})
    return pd.concat(frames, ignore_index=True)[list(BENCHMARK_COLUMNS)]
