"""Time-energy queueing model of hybrid MPI+OpenMP programs (docs/background/models.md, section 1.3), vectorised.

A program runs iterations of a parallel compute phase on ``c`` threads per
node followed by an MPI exchange between the ``n`` processes (one per node).
Hidden inputs per application, for the whole program (all iterations):

* ``work_cycles`` ``w``, ``stall_cycles`` ``b`` (non-memory stalls);
* ``mem_stall_cycles`` ``m1``: memory stall cycles of the whole program with
  one thread per node, counted at ``Fmax``;
* ``kappa``: memory-controller contention between the threads of one node;
* ``messages`` ``eta``: messages sent **by each node** (MPI process) over the
  run; ``message_bytes`` ``nu``: bytes per message;
* ``cpu_utilisation`` ``U`` of the baseline run.

Time (``f`` in Hz, ``x = f / Fmax``):

* ``T_cpu = (w + b) / (n c f)``
* ``T_mem = m(c, f) / (n f)`` with ``m(c, f) = m1 (1 + kappa (c - 1)) x``.
  **(project choice)** docs/background/models.md fixes ``m(c) = m1 (1 + kappa (c - 1))`` split
  over the ``n`` nodes; the factor ``x`` says that memory stall *cycles* grow
  with the clock because memory latency is fixed in seconds, so ``T_mem`` does
  not depend on ``f`` (the memory time is the "rigid" part of the Fluid model).
* network service ``T_s = max((1 - U) T_cpu, eta nu / B)``, ``B`` the link
  throughput (bytes/s).
* network waiting ``T_w = eta * W``, ``W`` the mean wait of one message at
  the switch, an **M/G/1 queue with the Pollaczek-Khinchine formula**
  ``W = lambda E[Y^2] / (2 (1 - rho))``, ``Y = nu / B`` (deterministic, so
  ``E[Y^2] = Y^2``), ``rho = lambda E[Y]``. **(project choice)** The source
  writes ``lambda y^2 / (1 - rho)``; we use the Pollaczek-Khinchine form.
* ``T = T_cpu + T_w + T_s + T_mem``.

The arrival rate ``lambda`` (messages/s) **(project choice)**: a leaf switch
with ``ports`` nodes is modelled as one M/G/1 server per port-equivalent, so
``lambda = (own + background) / ports``, where ``own = min(n, ports) * eta /
T0`` is the traffic of the job's own nodes on its (busiest) switch, ``T0 =
T_cpu + T_s + T_mem`` the runtime without queueing (no fixed point needed),
and ``background`` (``background_msg_rate``) the messages/s of **other** jobs'
nodes on the same switch, supplied by the engine. ``ports = None`` means a
dedicated switch of ``n`` ports (no other job). Own traffic alone gives
``rho <= (eta Y) / T0 < 1``; co-scheduled communication-heavy jobs push
``rho`` towards 1.

Saturation: the wait per message is capped at ``max_wait_factor * Y`` (so the
waiting of a run is at most ``max_wait_factor`` times its own transfer time
``eta Y``), and ``rho >= 1`` is charged exactly that cap. Rows at the cap are
flagged ``saturated``; a policy should not start such a configuration. No
division by zero happens for any ``rho``.

Energy per node, then times ``n`` (core powers scale with ``x**p_coef``,
**project choice**):

* ``E_cpu = (Pcore_act(x) T_cpu + Pcore_stall(x) T_mem) c``
* ``E_mem = Pmem T_mem``, ``E_net = Pnet (T_w + T_s)``, ``E_idle = Psys_idle T``
* ``E = n (E_cpu + E_mem + E_net + E_idle)``; mean power per node ``E / (n T)``.

Useful computation ratio ``UCR = T_cpu / T``.

A job on fewer cores than its nodes have (``c < cores_per_node``)
-----------------------------------------------------------------
``Psys_idle`` is the power of the whole node at rest (its static power,
every core idle included), charged for the whole runtime; only the ``c``
busy cores add core power. So a node never draws less than ``Psys_idle``
while it runs a job, and the unused cores are charged through it (the
engine charges ``n x power_w x T`` to the job's nodes and nothing else).
Worked example (``hybrid_power_figures(90, 140, 16)``: 6.5625 W per
computing core, 3.9375 W per stalled core, ``Pmem`` 21 W, ``Psys_idle``
90 W; ``w + b = 16e9``, ``m1 = 2e9``, ``kappa = 0.5``, no messages, ``U =
1``, one node at ``Fmax = 2 GHz``):

* ``c = 4``: ``T_cpu = 16e9 / (4 x 2e9) = 2 s``, ``m = 2e9 (1 + 0.5 x 3) =
  5e9``, ``T_mem = 2.5 s``, ``T = 4.5 s``; ``E = (6.5625 x 2 + 3.9375 x
  2.5) x 4 + 21 x 2.5 + 90 x 4.5 = 91.875 + 52.5 + 405 = 549.375 J``, a mean
  node power of 122.1 W.
* ``c = 16``: ``T_cpu = 0.5 s``, ``m = 2e9 (1 + 0.5 x 15) = 17e9``, ``T_mem
  = 8.5 s``, ``T = 9 s``, ``E = 588 + 178.5 + 810 = 1576.5 J``: the threads
  of one node contend for its memory controller, so this memory-bound
  program is both faster and more frugal on 4 cores.

Memory contention is **per node** (``kappa`` grows the stall cycles with the
threads of one node; more nodes split the stall cycles: ``T_mem`` at ``n =
2`` is half of that at ``n = 1``). Network contention is **per leaf switch**
(``lambda`` above; in the first test of ``tests/workloads/test_models_hybrid.py``:
2 nodes at 40 msg/s each plus 120 msg/s of other jobs on a 4-port switch give
``lambda = 50`` msg/s, ``rho = 0.05`` with 1 ms messages, ``W = 2.63e-5`` s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from workloads.models.pareto import pareto_front

__all__ = [
    "DEFAULT_MAX_WAIT_FACTOR",
    "HybridApp",
    "HybridPower",
    "HybridResult",
    "hybrid_evaluate",
    "hybrid_evaluate_scalar",
    "hybrid_message_rate",
    "hybrid_pareto_configs",
    "hybrid_power_figures",
    "mg1_waiting_time",
]

#: Default cap of the waiting per message, in message service times ``Y``.
DEFAULT_MAX_WAIT_FACTOR = 100.0


@dataclass(frozen=True)
class HybridApp:
    """Hidden parameters of a hybrid program (scalars or arrays, broadcast together).

    Attributes:
        work_cycles: ``w``, useful cycles of the whole program (all nodes).
        stall_cycles: ``b``, non-memory stall cycles of the whole program.
        mem_stall_cycles: ``m1``, memory stall cycles at ``Fmax``, one thread per node.
        kappa: memory contention growth per extra thread (``m(c) = m1 (1 + kappa (c-1))``).
        messages: ``eta``, messages sent by each node over the run.
        message_bytes: ``nu``, bytes per message.
        cpu_utilisation: ``U`` of the baseline run, in ``[0, 1]``.
    """

    work_cycles: Any
    stall_cycles: Any
    mem_stall_cycles: Any
    kappa: Any
    messages: Any
    message_bytes: Any
    cpu_utilisation: Any

    def scaled(self, factor: ArrayLike) -> HybridApp:
        """The same program with ``factor`` times the iterations (w, b, m1, eta scale)."""
        f = np.asarray(factor, dtype=np.float64)
        return HybridApp(
            work_cycles=np.asarray(self.work_cycles) * f,
            stall_cycles=np.asarray(self.stall_cycles) * f,
            mem_stall_cycles=np.asarray(self.mem_stall_cycles) * f,
            kappa=self.kappa,
            messages=np.asarray(self.messages) * f,
            message_bytes=self.message_bytes,
            cpu_utilisation=self.cpu_utilisation,
        )

    def take(self, index: np.ndarray) -> HybridApp:
        """Rows ``index`` of array-valued parameters."""
        return HybridApp(**{f.name: np.asarray(getattr(self, f.name))[index] for f in fields(self)})


@dataclass(frozen=True)
class HybridPower:
    """Power figures of a node running a hybrid program (W; scalars or arrays).

    ``core_active_w`` and ``core_stall_w`` are per core at ``Fmax`` and scale
    with ``x**p_coef``; ``mem_w``, ``net_w`` and ``sys_idle_w`` are per node.
    """

    core_active_w: Any
    core_stall_w: Any
    mem_w: Any
    net_w: Any
    sys_idle_w: Any
    p_coef: float = 2.0

    def take(self, index: np.ndarray) -> HybridPower:
        """Rows ``index`` of array-valued figures."""
        return HybridPower(
            **{
                f.name: (
                    np.asarray(getattr(self, f.name))[index] if f.name != "p_coef" else self.p_coef
                )
                for f in fields(self)
            }
        )


def hybrid_power_figures(
    p_static_w: ArrayLike, p_dyn_w: ArrayLike, cores_per_node: int, p_coef: float = 2.0
) -> HybridPower:
    """Hybrid power figures of a node from its Fluid constants **(project choice)**.

    With ``Pdyn`` the node's dynamic power at full load and ``Fmax``: each core
    draws ``0.75 Pdyn / cores`` while computing and ``0.45 Pdyn / cores`` while
    stalled on memory; the memory draws ``0.15 Pdyn`` while busy, the network
    interface ``0.10 Pdyn`` while sending; ``Psys_idle = Pstatic``. So a node
    never exceeds ``Pstatic + Pdyn`` and a compute-bound phase on all cores
    draws ``Pstatic + 0.75 Pdyn``.
    """
    pd_arr = np.asarray(p_dyn_w, dtype=np.float64)
    return HybridPower(
        core_active_w=0.75 * pd_arr / cores_per_node,
        core_stall_w=0.45 * pd_arr / cores_per_node,
        mem_w=0.15 * pd_arr,
        net_w=0.10 * pd_arr,
        sys_idle_w=np.asarray(p_static_w, dtype=np.float64),
        p_coef=p_coef,
    )


@dataclass
class HybridResult:
    """Per-configuration results of :func:`hybrid_evaluate` (arrays of the broadcast shape)."""

    t_cpu_s: np.ndarray
    t_mem_s: np.ndarray
    t_net_service_s: np.ndarray
    t_net_wait_s: np.ndarray
    runtime_s: np.ndarray
    rho: np.ndarray
    saturated: np.ndarray
    msg_rate_per_node: np.ndarray  #: own messages/s of each node (``eta / T0``)
    e_cpu_j: np.ndarray  #: per node
    e_mem_j: np.ndarray  #: per node
    e_net_j: np.ndarray  #: per node
    e_idle_j: np.ndarray  #: per node
    energy_j: np.ndarray  #: whole job, all nodes
    power_w: np.ndarray  #: mean power per node
    ucr: np.ndarray


def mg1_waiting_time(
    arrival_rate: ArrayLike, mean_service_s: ArrayLike, second_moment_s2: ArrayLike
) -> np.ndarray:
    """Mean waiting time in queue (s) of an M/G/1 server (Pollaczek-Khinchine).

    ``W = lambda E[Y^2] / (2 (1 - rho))``, ``rho = lambda E[Y]``. Returns
    ``inf`` where ``rho >= 1`` (unstable queue) without dividing by zero.
    """
    lam, ey, ey2 = np.broadcast_arrays(
        np.asarray(arrival_rate, dtype=np.float64),
        np.asarray(mean_service_s, dtype=np.float64),
        np.asarray(second_moment_s2, dtype=np.float64),
    )
    rho = lam * ey
    stable = rho < 1.0
    slack = np.where(stable, 1.0 - rho, 1.0)
    return np.where(stable, lam * ey2 / (2.0 * slack), np.inf)


def _arr(v: Any) -> np.ndarray:
    return np.asarray(v, dtype=np.float64)


def _base_times(
    nodes: np.ndarray,
    cores: np.ndarray,
    f_hz: np.ndarray,
    x: np.ndarray,
    app: HybridApp,
    link_bandwidth_Bps: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    t_cpu = (_arr(app.work_cycles) + _arr(app.stall_cycles)) / (nodes * cores * f_hz)
    m = _arr(app.mem_stall_cycles) * (1.0 + _arr(app.kappa) * (cores - 1.0)) * x
    t_mem = m / (nodes * f_hz)
    y = _arr(app.message_bytes) / link_bandwidth_Bps
    t_srv = np.maximum((1.0 - _arr(app.cpu_utilisation)) * t_cpu, _arr(app.messages) * y)
    return t_cpu, t_mem, t_srv, y


def hybrid_message_rate(
    nodes: ArrayLike,
    cores: ArrayLike,
    freq_ghz: ArrayLike,
    fmax_ghz: ArrayLike,
    app: HybridApp,
    link_bandwidth_gbs: ArrayLike,
) -> np.ndarray:
    """Messages/s each node of the job sends: ``eta / T0``, ``T0 = T_cpu + T_s + T_mem``.

    This is what a job adds to the arrival rate of every switch its nodes sit
    on (times its nodes on that switch).
    """
    n, c, f, fm, bw = np.broadcast_arrays(
        _arr(nodes), _arr(cores), _arr(freq_ghz), _arr(fmax_ghz), _arr(link_bandwidth_gbs)
    )
    t_cpu, t_mem, t_srv, _ = _base_times(n, c, f * 1e9, f / fm, app, bw * 1e9)
    t0 = t_cpu + t_srv + t_mem
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t0 > 0, _arr(app.messages) / np.where(t0 > 0, t0, 1.0), 0.0)


def hybrid_evaluate(
    nodes: ArrayLike,
    cores: ArrayLike,
    freq_ghz: ArrayLike,
    fmax_ghz: ArrayLike,
    app: HybridApp,
    power: HybridPower,
    link_bandwidth_gbs: ArrayLike,
    *,
    switch_ports: ArrayLike | None = None,
    background_msg_rate: ArrayLike = 0.0,
    max_wait_factor: float = DEFAULT_MAX_WAIT_FACTOR,
) -> HybridResult:
    """Evaluate the hybrid model at configurations ``(n, c, f)``; see the module docstring.

    Args:
        nodes, cores, freq_ghz: the configurations (broadcast together with
            the array parameters of ``app`` and ``power``).
        fmax_ghz: top frequency of the node type (GHz).
        app: program parameters.
        power: power figures.
        link_bandwidth_gbs: link throughput ``B`` (GB/s, 1e9 bytes/s).
        switch_ports: nodes per leaf switch (``None``: a dedicated switch of
            ``n`` ports).
        background_msg_rate: messages/s of other jobs' nodes on the job's
            busiest switch (0: the job alone).
        max_wait_factor: cap of the waiting per message in service times.

    Returns:
        :class:`HybridResult`.
    """
    n, c, f, fm, bw, bg = np.broadcast_arrays(
        _arr(nodes),
        _arr(cores),
        _arr(freq_ghz),
        _arr(fmax_ghz),
        _arr(link_bandwidth_gbs),
        _arr(background_msg_rate),
    )
    if np.any(~(n > 0)) or np.any(~(c > 0)) or np.any(~(f > 0)):
        raise ValueError("hybrid_evaluate: nodes, cores and freq_ghz must be > 0")
    x = f / fm
    t_cpu, t_mem, t_srv, y = _base_times(n, c, f * 1e9, x, app, bw * 1e9)
    eta = _arr(app.messages)
    t0 = t_cpu + t_srv + t_mem
    rate_node = np.where(t0 > 0, eta / np.where(t0 > 0, t0, 1.0), 0.0)
    ports = n if switch_ports is None else np.broadcast_to(_arr(switch_ports), n.shape)
    own = np.minimum(n, ports) * rate_node
    lam = (own + np.maximum(bg, 0.0)) / ports
    rho = lam * y
    w_pk = mg1_waiting_time(lam, y, y * y)  # inf where rho >= 1, never divides by zero
    cap = max_wait_factor * y
    saturated = ~(w_pk < cap)
    wait = np.where(saturated, cap, w_pk)
    t_wait = eta * wait
    total = t_cpu + t_wait + t_srv + t_mem
    xp = np.power(x, power.p_coef)
    e_cpu = (_arr(power.core_active_w) * xp * t_cpu + _arr(power.core_stall_w) * xp * t_mem) * c
    e_mem = _arr(power.mem_w) * t_mem
    e_net = _arr(power.net_w) * (t_wait + t_srv)
    e_idle = _arr(power.sys_idle_w) * total
    per_node = e_cpu + e_mem + e_net + e_idle
    safe_total = np.where(total > 0, total, 1.0)
    power_w = np.where(total > 0, per_node / safe_total, _arr(power.sys_idle_w))
    ucr = np.where(total > 0, t_cpu / safe_total, 1.0)
    return HybridResult(
        t_cpu_s=t_cpu,
        t_mem_s=t_mem,
        t_net_service_s=t_srv,
        t_net_wait_s=t_wait,
        runtime_s=total,
        rho=rho,
        saturated=saturated & (eta > 0) & (y > 0),
        msg_rate_per_node=rate_node,
        e_cpu_j=e_cpu,
        e_mem_j=e_mem,
        e_net_j=e_net,
        e_idle_j=e_idle,
        energy_j=n * per_node,
        power_w=power_w,
        ucr=ucr,
    )


def hybrid_evaluate_scalar(
    nodes: float,
    cores: float,
    freq_ghz: float,
    fmax_ghz: float,
    program: tuple[float, ...],
    power: tuple[float, ...],
    link_bandwidth_gbs: float,
    switch_ports: float | None = None,
    background_msg_rate: float = 0.0,
    max_wait_factor: float = DEFAULT_MAX_WAIT_FACTOR,
) -> tuple[float, float, bool, float, float]:
    """:func:`hybrid_evaluate` of one configuration in plain Python (the engine's hot path).

    Exists because one-row numpy calls cost microseconds of overhead each and
    the engine evaluates one job at a time when jobs start and when their
    switch's traffic changes. Same formulas, same values (pinned by
    ``tests/workloads/test_models_hybrid.py``).

    Args:
        program: ``(w, b, m1, kappa, eta, nu, U)`` (already scaled to the job).
        power: ``(core_active_w, core_stall_w, mem_w, net_w, sys_idle_w, p_coef)``.

    Returns:
        ``(runtime_s, power_w per node, saturated, rho, msg_rate_per_node)``.
    """
    if not (nodes > 0 and cores > 0 and freq_ghz > 0):
        raise ValueError("hybrid_evaluate: nodes, cores and freq_ghz must be > 0")
    w, b, m1, kappa, eta, nu, util = program
    p_act, p_stall, p_mem, p_net, p_idle, p_coef = power
    f_hz = freq_ghz * 1e9
    x = freq_ghz / fmax_ghz
    t_cpu = (w + b) / (nodes * cores * f_hz)
    t_mem = m1 * (1.0 + kappa * (cores - 1.0)) * x / (nodes * f_hz)
    y = nu / (link_bandwidth_gbs * 1e9)
    t_srv = max((1.0 - util) * t_cpu, eta * y)
    t0 = t_cpu + t_srv + t_mem
    rate = eta / t0 if t0 > 0 else 0.0
    ports = nodes if switch_ports is None else switch_ports
    lam = (min(nodes, ports) * rate + max(background_msg_rate, 0.0)) / ports
    rho = lam * y
    cap = max_wait_factor * y
    w_pk = lam * y * y / (2.0 * (1.0 - rho)) if rho < 1.0 else math.inf
    saturated = not (w_pk < cap)
    t_wait = eta * (cap if saturated else w_pk)
    total = t_cpu + t_wait + t_srv + t_mem
    xp = x**p_coef
    per_node = (
        (p_act * xp * t_cpu + p_stall * xp * t_mem) * cores
        + p_mem * t_mem
        + p_net * (t_wait + t_srv)
        + p_idle * total
    )
    power_w = per_node / total if total > 0 else p_idle
    return total, power_w, saturated and eta > 0 and y > 0, rho, rate


def hybrid_pareto_configs(
    app: HybridApp,
    power: HybridPower,
    nodes: ArrayLike,
    cores: ArrayLike,
    freqs_ghz: ArrayLike,
    fmax_ghz: float,
    link_bandwidth_gbs: float,
    *,
    switch_ports: int | None = None,
    background_msg_rate: float = 0.0,
    include_saturated: bool = False,
    max_wait_factor: float = DEFAULT_MAX_WAIT_FACTOR,
) -> pd.DataFrame:
    """Pareto-optimal ``(n, c, f)`` of one (scalar-parameter) hybrid program.

    Evaluates every combination of ``nodes x cores x freqs_ghz`` and keeps the
    minimum-energy configuration for each deadline (:func:`pareto_front`).
    Saturated configurations are dropped unless ``include_saturated``.

    Returns:
        DataFrame ``nodes, cores, freq_ghz, runtime_s, energy_j, power_w, ucr,
        saturated`` sorted by increasing runtime (and decreasing energy).
    """
    nn, cc, ff = np.meshgrid(_arr(nodes), _arr(cores), _arr(freqs_ghz), indexing="ij")
    nn, cc, ff = nn.ravel(), cc.ravel(), ff.ravel()
    res = hybrid_evaluate(
        nn,
        cc,
        ff,
        fmax_ghz,
        app,
        power,
        link_bandwidth_gbs,
        switch_ports=switch_ports,
        background_msg_rate=background_msg_rate,
        max_wait_factor=max_wait_factor,
    )
    t = res.runtime_s.copy()
    if not include_saturated:
        t = np.where(res.saturated, np.nan, t)
    keep = pareto_front(t, res.energy_j)
    return pd.DataFrame(
        {
            "nodes": nn[keep].astype(np.int64),
            "cores": cc[keep].astype(np.int64),
            "freq_ghz": ff[keep],
            "runtime_s": res.runtime_s[keep],
            "energy_j": res.energy_j[keep],
            "power_w": res.power_w[keep],
            "ucr": res.ucr[keep],
            "saturated": res.saturated[keep],
        }
    )
