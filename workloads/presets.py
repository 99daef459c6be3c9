"""Presets: the seeded distributions the hidden application parameters are drawn from.

A :class:`WorkloadPreset` says how :func:`workloads.applications.assign_ground_truth`
draws, per application, its kind and hidden parameters. Every draw comes from
a ``numpy.random.Generator`` seeded by the caller. Built-in presets:

``npb-mix`` (default)
    Each application is a Downey x Fluid program. Its *kind* is one of the 9
    NAS-like benchmarks of ``data/fluid_alpha.csv`` (bt, cg, ep, ft, is, lu,
    mg, rand, sp; equal weights) and its ``alpha`` one of that benchmark's 18
    measured values (a random cluster) plus ``N(0, 0.03)`` jitter, clipped to
    ``[0.02, 1]``: realistic DVFS sensitivities, from CPU-bound (ep, rand ~1)
    to memory-bound (mg, sp, cg down to 0.03). ``A = median recorded nodes x
    U``, ``U`` log-uniform in ``[1, 4]``: jobs were usually submitted at or
    below the size where they stop scaling, so moldable policies have room
    both ways. ``sigma ~ U[0, 2]`` covers both Downey modes evenly.
    Power per (node type, application): ``Pstatic = idle power of the lowest
    P-state x U[0.97, 1.03]``; ``Pdyn`` such that full-load power at ``Fmax``
    is the node type's ``busy_power_w`` at ``Fmax`` times a factor in
    ``U[0.85, 1.05]`` (applications differ in how hard they drive the node).
``hybrid-mix``
    ``npb-mix`` with 20% hybrid MPI+OpenMP queueing applications (docs/background/models.md,
    section 1.3), whose network traffic makes co-scheduled jobs contend. Half of the
    hybrid applications are *memory-bound* (memory time 1 to 3 times the
    compute time on all cores, ``kappa ~ U[0.3, 1]``): their threads contend
    for the memory controller of a node so much that fewer cores per node
    run faster, or use less energy, than all of them (the shape of the hybrid
    model's measurements: Pareto-optimal configurations need not use every
    core). With ``T_mem / T_cpu = s`` on all ``C`` cores, ``T(c) / T(C) =
    (C / c + s (1 + kappa (c - 1)) / (1 + kappa (C - 1))) / (1 + s)``, so
    fewer cores are faster when ``s kappa / (1 + kappa (C - 1)) > 1 / C``
    (e.g. ``s = 3``, ``kappa = 1``, ``C = 16``: 8 cores take ``(2 + 1.5) / 4
    = 0.875`` of the time of 16).
``cpu-bound``
    kinds ep, rand, bt, lu (alpha mostly 0.6..1), power factor in
    ``[0.95, 1.05]``, sigma in ``[0, 1]``: DVFS saves little energy.
``memory-bound``
    kinds cg, mg, sp, is (alpha mostly 0.03..0.7), power factor in
    ``[0.85, 0.95]``, sigma in ``[0.5, 2]``: lowering the frequency saves energy.

Hybrid applications (all presets with ``hybrid_share > 0``) draw, relative to
the application's median recorded size ``n_med`` at all cores and ``Fmax``:
memory time share ``U[0.05, 0.6]`` of the compute time, ``kappa ~ U[0, 0.3]``,
communication (transfer) time share ``U[0.05, 0.3]`` of the compute time,
message size log-uniform in ``[8 KiB, 1 MiB]``, ``U ~ U[0.6, 0.95]``,
non-memory stall share of cycles ``U[0.05, 0.3]``. A share
``hybrid_memory_bound_share`` of them (0 except in ``hybrid-mix``) instead
draws the memory share from ``hybrid_memory_bound_mem_share_range`` and
``kappa`` from ``hybrid_memory_bound_kappa_range`` (drawn after every other
parameter, so the other applications' draws do not change).
"""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass, field, replace
from importlib import resources

import numpy as np

from energysched.errors import ConfigError

__all__ = [
    "DEFAULT_PRESET",
    "FLUID_BENCHMARKS",
    "WorkloadPreset",
    "fluid_alpha_table",
    "get_preset",
    "list_presets",
]


@functools.lru_cache(maxsize=1)
def _fluid_alpha() -> tuple[tuple[str, ...], tuple[str, ...], np.ndarray]:
    text = resources.files("workloads").joinpath("data/fluid_alpha.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    clusters = tuple(r[0] for r in rows[1:] if r)
    values = np.array([[float(v) for v in r[1:]] for r in rows[1:] if r], dtype=np.float64)
    values.setflags(write=False)
    return tuple(header[1:]), clusters, values


def fluid_alpha_table() -> tuple[tuple[str, ...], tuple[str, ...], np.ndarray]:
    """The bundled ``fluid_alpha.csv``: ``(benchmarks, clusters, values[cluster, benchmark])``."""
    return _fluid_alpha()


#: The 9 benchmark columns of ``fluid_alpha.csv``.
FLUID_BENCHMARKS: tuple[str, ...] = _fluid_alpha()[0]


@dataclass(frozen=True)
class WorkloadPreset:
    """Distributions of the hidden parameters of a trace's applications.

    Attributes:
        name: registry name.
        description: one line for listings.
        kinds: benchmark columns of ``fluid_alpha.csv`` a Downey x Fluid
            application's kind (and so its ``alpha``) is drawn from.
        kind_weights: relative weights of ``kinds`` (``None``: equal).
        alpha_jitter: std of the Gaussian jitter added to a measured ``alpha``.
        alpha_range: clip range of ``alpha``.
        a_factor_range: ``A = median recorded nodes x U``, ``U`` log-uniform in this range.
        sigma_range: ``sigma ~ U[lo, hi]``.
        pstatic_jitter: ``Pstatic = lowest P-state idle power x U[1 - j, 1 + j]``.
        power_factor_range: full-load power at ``Fmax`` = ``busy_power_w(Fmax) x U[lo, hi]``.
        hybrid_share: fraction of applications that are hybrid MPI+OpenMP programs.
        hybrid_mem_share_range: memory time / compute time at the median size.
        hybrid_kappa_range: memory contention growth per thread.
        hybrid_comm_share_range: transfer time / compute time at the median size.
        hybrid_msg_bytes_range: message size (bytes), log-uniform.
        hybrid_utilisation_range: baseline CPU utilisation ``U``.
        hybrid_stall_share_range: non-memory stall cycles / (work + stall) cycles.
        hybrid_memory_bound_share: fraction of the hybrid applications that are
            memory-bound (their memory share and ``kappa`` come from the two
            ranges below).
        hybrid_memory_bound_mem_share_range: memory time / compute time of a
            memory-bound hybrid application.
        hybrid_memory_bound_kappa_range: ``kappa`` of a memory-bound hybrid application.
    """

    name: str
    description: str
    kinds: tuple[str, ...] = field(default_factory=lambda: FLUID_BENCHMARKS)
    kind_weights: tuple[float, ...] | None = None
    alpha_jitter: float = 0.03
    alpha_range: tuple[float, float] = (0.02, 1.0)
    a_factor_range: tuple[float, float] = (1.0, 4.0)
    sigma_range: tuple[float, float] = (0.0, 2.0)
    pstatic_jitter: float = 0.03
    power_factor_range: tuple[float, float] = (0.85, 1.05)
    hybrid_share: float = 0.0
    hybrid_mem_share_range: tuple[float, float] = (0.05, 0.6)
    hybrid_kappa_range: tuple[float, float] = (0.0, 0.3)
    hybrid_comm_share_range: tuple[float, float] = (0.05, 0.3)
    hybrid_msg_bytes_range: tuple[float, float] = (8.0 * 1024, 1024.0 * 1024)
    hybrid_utilisation_range: tuple[float, float] = (0.6, 0.95)
    hybrid_stall_share_range: tuple[float, float] = (0.05, 0.3)
    hybrid_memory_bound_share: float = 0.0
    hybrid_memory_bound_mem_share_range: tuple[float, float] = (1.0, 3.0)
    hybrid_memory_bound_kappa_range: tuple[float, float] = (0.3, 1.0)

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in FLUID_BENCHMARKS]
        if unknown or not self.kinds:
            raise ConfigError(
                f"preset.{self.name}.kinds",
                f"unknown benchmark kinds {unknown}; known: {', '.join(FLUID_BENCHMARKS)}",
            )
        if self.kind_weights is not None and len(self.kind_weights) != len(self.kinds):
            raise ConfigError(f"preset.{self.name}.kind_weights", "must match kinds")
        if not 0.0 <= self.hybrid_share <= 1.0:
            raise ConfigError(f"preset.{self.name}.hybrid_share", "must be in [0, 1]")
        if not 0.0 <= self.hybrid_memory_bound_share <= 1.0:
            raise ConfigError(f"preset.{self.name}.hybrid_memory_bound_share", "must be in [0, 1]")
        if self.a_factor_range[0] < 1.0 or self.a_factor_range[1] < self.a_factor_range[0]:
            raise ConfigError(f"preset.{self.name}.a_factor_range", "must be lo >= 1, hi >= lo")
        if self.sigma_range[0] < 0 or self.sigma_range[1] < self.sigma_range[0]:
            raise ConfigError(f"preset.{self.name}.sigma_range", "must be 0 <= lo <= hi")

    def kind_probabilities(self) -> np.ndarray:
        """Normalised weights of :attr:`kinds`."""
        w = (
            np.ones(len(self.kinds))
            if self.kind_weights is None
            else np.asarray(self.kind_weights, float)
        )
        return w / w.sum()

    def with_options(self, **changes: object) -> WorkloadPreset:
        """A copy with some fields changed (e.g. ``hybrid_share=0.5``)."""
        return replace(self, **changes)  # type: ignore[arg-type]


_PRESETS: dict[str, WorkloadPreset] = {
    p.name: p
    for p in (
        WorkloadPreset(
            name="npb-mix",
            description="NAS-like mix: alpha from fluid_alpha.csv, A ~ recorded size x [1, 4], sigma ~ U[0, 2]",
        ),
        WorkloadPreset(
            name="hybrid-mix",
            description="npb-mix plus 20% hybrid MPI+OpenMP programs that contend on switches "
            "(half of them memory-bound: fewer cores per node can be faster)",
            hybrid_share=0.2,
            hybrid_memory_bound_share=0.5,
        ),
        WorkloadPreset(
            name="cpu-bound",
            description="CPU-bound kinds (ep, rand, bt, lu): alpha ~ 0.6..1, scale well",
            kinds=("ep", "rand", "bt", "lu"),
            sigma_range=(0.0, 1.0),
            power_factor_range=(0.95, 1.05),
        ),
        WorkloadPreset(
            name="memory-bound",
            description="memory-bound kinds (cg, mg, sp, is): alpha ~ 0.03..0.7, frequency matters little",
            kinds=("cg", "mg", "sp", "is"),
            sigma_range=(0.5, 2.0),
            power_factor_range=(0.85, 0.95),
        ),
    )
}


#: The preset used when none is named (``energysched run --truth auto`` with a predictor).
DEFAULT_PRESET = "npb-mix"


def list_presets() -> list[str]:
    """Names of the built-in presets."""
    return list(_PRESETS)


def get_preset(name: str | WorkloadPreset) -> WorkloadPreset:
    """The preset called ``name`` (a :class:`WorkloadPreset` is returned as is).

    Raises:
        ConfigError: unknown name (the message lists the known ones).
    """
    if isinstance(name, WorkloadPreset):
        return name
    try:
        return _PRESETS[name]
    except KeyError:
        raise ConfigError(
            "preset", f"unknown preset {name!r}; known: {', '.join(_PRESETS)}"
        ) from None
