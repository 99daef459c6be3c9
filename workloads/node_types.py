"""Node types: what a group of identical nodes can run at and what it draws.

The simulator's platforms are made of these (:mod:`simulator.platform` builds
them from a platform file and checks their values); the ground truth prices
a run on one, and predictors' conformance checks build small ones. They sit
in the lowest layer so that every layer can describe a node the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NodeType", "PState"]


@dataclass(frozen=True)
class PState:
    """One operating frequency of a node type and the node power at it."""

    freq_ghz: float
    idle_power_w: float
    busy_power_w: float


@dataclass(frozen=True)
class NodeType:
    """A homogeneous group of nodes."""

    name: str
    count: int
    cores_per_node: int
    pstates: tuple[PState, ...]
    off_power_w: float = 0.0
    boot_time_s: float = 0.0
    boot_energy_j: float = 0.0
    shutdown_time_s: float = 0.0
    shutdown_energy_j: float = 0.0

    @property
    def freqs_ghz(self) -> tuple[float, ...]:
        """Available frequencies, ascending."""
        return tuple(p.freq_ghz for p in self.pstates)

    @property
    def fmax_ghz(self) -> float:
        return self.pstates[-1].freq_ghz

    @property
    def fmin_ghz(self) -> float:
        return self.pstates[0].freq_ghz

    @property
    def idle_power_w(self) -> float:
        """Power of an idle (on, unallocated) node: the lowest P-state's idle power."""
        return self.pstates[0].idle_power_w

    @property
    def max_power_w(self) -> float:
        """Full-load power at the top frequency."""
        return self.pstates[-1].busy_power_w

    @property
    def boot_power_w(self) -> float:
        return self.boot_energy_j / self.boot_time_s if self.boot_time_s > 0 else 0.0

    @property
    def shutdown_power_w(self) -> float:
        return self.shutdown_energy_j / self.shutdown_time_s if self.shutdown_time_s > 0 else 0.0

    def pstate(self, freq_ghz: float) -> PState:
        """The P-state at ``freq_ghz`` (exact match within 1e-9 GHz)."""
        for p in self.pstates:
            if abs(p.freq_ghz - freq_ghz) <= 1e-9:
                return p
        raise KeyError(freq_ghz)

    def has_freq(self, freq_ghz: float) -> bool:
        return any(abs(p.freq_ghz - freq_ghz) <= 1e-9 for p in self.pstates)

    def nodes_for_procs(self, procs: int) -> int:
        """Nodes needed for ``procs`` processors: ``ceil(procs / cores_per_node)``, at least 1."""
        return max(1, -(-int(procs) // self.cores_per_node))
