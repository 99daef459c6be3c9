"""The cluster description: node types, P-states, power figures, topology.

A platform file is TOML::

    name = "my-cluster"

    [[node_types]]
    name = "thin"
    count = 128                 # nodes of this type
    cores_per_node = 16
    off_power_w = 5.0           # drawn by a switched-off node (BMC, PSU losses)
    boot_time_s = 120.0         # off -> on
    boot_energy_j = 24000.0     # charged over boot_time_s (power = energy / time)
    shutdown_time_s = 30.0      # on -> off
    shutdown_energy_j = 3000.0
    pstates = [                 # any order; sorted by frequency when loaded
      { freq_ghz = 1.2, idle_power_w = 85.0, busy_power_w = 140.0 },
      { freq_ghz = 2.4, idle_power_w = 95.0, busy_power_w = 230.0 },
    ]

    [topology]                  # optional: switches and links (networkx graph)
    nodes_per_switch = 16       # leaf switches, nodes assigned in order
    link_bandwidth_gbs = 12.5   # per link, GB/s

Every key is validated when loaded; an error names the key, e.g.
``node_types[0].pstates[1].busy_power_w: must be >= idle_power_w (95.0)``.

Power semantics used by the engine (see :mod:`simulator.engine`):

* a node allocated to a job draws the job's per-node power (from the ground
  truth, or without one the ``busy_power_w`` of the chosen P-state);
* an idle node (on, unallocated) draws ``idle_power_w`` of the **lowest**
  P-state (an idle governor drops to the lowest frequency);
* a switched-off node draws ``off_power_w``; booting and shutting-down nodes
  draw ``boot_energy_j / boot_time_s`` and ``shutdown_energy_j /
  shutdown_time_s``, so the energy charged for a transition is exactly the
  configured figure.

``platform_from_trace`` builds a homogeneous platform from a trace header
(``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` cores) with the default power
figures of :data:`DEFAULT_PSTATES` (a node with a median of about 229 W at full
load and 92 W idle, the figures measured by the Fluid DVFS study cited in
docs/background/models.md, section 1.2; P-states spaced like a 2.4 GHz Xeon's).
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from energysched.errors import ConfigError
from workloads.bundled import BUILTIN_PREFIX  # builtin:NAME, as for the bundled traces
from workloads.node_types import NodeType, PState

if TYPE_CHECKING:
    import networkx as nx

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@dataclass(frozen=True)
class Platform:
    """A cluster: one or more node types and an optional network topology.

    ``topology`` is an undirected networkx graph whose vertices are node
    names (``"<type>-<i>"``) and switch names (``"switch-<j>"``); edges carry a
    ``bandwidth_gbs`` attribute. ``switch_of_node`` maps the global node index
    (node types in order, then index within the type) to its leaf switch.
    """

    name: str
    node_types: tuple[NodeType, ...]
    topology: nx.Graph | None = field(default=None, compare=False)
    nodes_per_switch: int | None = None
    link_bandwidth_gbs: float | None = None
    source: str | None = None

    @property
    def total_nodes(self) -> int:
        return sum(t.count for t in self.node_types)

    def node_type(self, name_or_index: str | int) -> NodeType:
        if isinstance(name_or_index, int):
            return self.node_types[name_or_index]
        for t in self.node_types:
            if t.name == name_or_index:
                return t
        known = ", ".join(t.name for t in self.node_types)
        raise KeyError(f"unknown node type {name_or_index!r}; known: {known}")

    def describe(self) -> str:
        lines = [f"platform {self.name!r}: {self.total_nodes} nodes"]
        for t in self.node_types:
            freqs = ", ".join(f"{f:g}" for f in t.freqs_ghz)
            lines.append(
                f"  {t.name}: {t.count} nodes x {t.cores_per_node} cores, "
                f"P-states [{freqs}] GHz, idle {t.idle_power_w:g} W, max {t.max_power_w:g} W"
            )
        return "\n".join(lines)


#: Default P-states used by :func:`platform_from_trace` and the built-in
#: platform: 1.2 to 2.4 GHz; full-load power 229 W at the top (median measured
#: in the Fluid DVFS study), idle 92 W at the lowest frequency. Busy power
#: follows ``P = Pstatic + Pdyn * x**2`` with Pstatic = 110 W, Pdyn = 119 W.
DEFAULT_PSTATES: tuple[PState, ...] = tuple(
    PState(
        freq_ghz=f,
        idle_power_w=round(92.0 + 8.0 * (f - 1.2) / 1.2, 3),
        busy_power_w=round(110.0 + 119.0 * (f / 2.4) ** 2, 3),
    )
    for f in (1.2, 1.5, 1.8, 2.1, 2.4)
)
DEFAULT_OFF_POWER_W = 8.0
DEFAULT_BOOT_TIME_S = 180.0
DEFAULT_BOOT_ENERGY_J = 180.0 * 150.0
DEFAULT_SHUTDOWN_TIME_S = 30.0
DEFAULT_SHUTDOWN_ENERGY_J = 30.0 * 120.0


def _require(mapping: Mapping[str, Any], key: str, where: str, source: str | None) -> Any:
    if key not in mapping:
        raise ConfigError(f"{where}{key}", "missing required key", source=source)
    return mapping[key]


def _number(
    value: Any,
    key: str,
    source: str | None,
    *,
    minimum: float | None = None,
    strict: bool = False,
    integer: bool = False,
    maximum: float | None = None,
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "an integer" if integer else "a number"
        raise ConfigError(key, f"must be {kind}, got {value!r}", source=source)
    if integer and not float(value).is_integer():
        raise ConfigError(key, f"must be an integer, got {value!r}", source=source)
    if not math.isfinite(float(value)):
        raise ConfigError(key, f"must be finite, got {value!r}", source=source)
    if minimum is not None:
        if strict and value <= minimum:
            raise ConfigError(key, f"must be > {minimum:g}, got {value!r}", source=source)
        if not strict and value < minimum:
            raise ConfigError(key, f"must be >= {minimum:g}, got {value!r}", source=source)
    if maximum is None:
        maximum = _MAXIMA.get(key.rsplit(".", 1)[-1])
    if maximum is not None and value > maximum:
        raise ConfigError(
            key,
            f"{value!r} is beyond any real machine (at most {maximum:g}); check the unit",
            source=source,
        )
    return float(value)


#: Upper bounds of platform figures: far above any real machine, low enough
#: that sums over every node and second stay finite and exact to the watt.
_MAXIMA: dict[str, float] = {
    "count": 1e7,
    "cores_per_node": 1e6,
    "freq_ghz": 1e3,
    "idle_power_w": 1e6,
    "busy_power_w": 1e6,
    "off_power_w": 1e6,
    "boot_time_s": 1e7,
    "shutdown_time_s": 1e7,
    "boot_energy_j": 1e13,
    "shutdown_energy_j": 1e13,
    "nodes_per_switch": 1e7,
    "link_bandwidth_gbs": 1e9,
}


_NODE_TYPE_KEYS = {
    "name",
    "count",
    "cores_per_node",
    "pstates",
    "off_power_w",
    "boot_time_s",
    "boot_energy_j",
    "shutdown_time_s",
    "shutdown_energy_j",
}
_PSTATE_KEYS = {"freq_ghz", "idle_power_w", "busy_power_w"}
_TOPOLOGY_KEYS = {"nodes_per_switch", "link_bandwidth_gbs"}


def platform_from_dict(data: Mapping[str, Any], *, source: str | None = None) -> Platform:
    """Build and validate a :class:`Platform` from a parsed TOML mapping."""
    unknown = set(data) - {"name", "node_types", "topology"}
    if unknown:
        raise ConfigError(
            sorted(unknown)[0],
            "unknown key; allowed: name, node_types, topology",
            source=source,
        )
    name = data.get("name", "platform")
    if not isinstance(name, str) or not name:
        raise ConfigError("name", "must be a non-empty string", source=source)
    raw_types = _require(data, "node_types", "", source)
    if not isinstance(raw_types, list) or not raw_types:
        raise ConfigError("node_types", "must be a non-empty array of tables", source=source)
    node_types: list[NodeType] = []
    seen_names: set[str] = set()
    for i, raw in enumerate(raw_types):
        where = f"node_types[{i}]."
        if not isinstance(raw, Mapping):
            raise ConfigError(f"node_types[{i}]", "must be a table", source=source)
        bad = set(raw) - _NODE_TYPE_KEYS
        if bad:
            raise ConfigError(
                where + sorted(bad)[0],
                f"unknown key; allowed: {', '.join(sorted(_NODE_TYPE_KEYS))}",
                source=source,
            )
        tname = raw.get("name", f"type{i}")
        if not isinstance(tname, str) or not tname:
            raise ConfigError(where + "name", "must be a non-empty string", source=source)
        if tname in seen_names:
            raise ConfigError(where + "name", f"duplicate node type name {tname!r}", source=source)
        seen_names.add(tname)
        count = int(
            _number(
                _require(raw, "count", where, source),
                where + "count",
                source,
                minimum=1,
                integer=True,
            )
        )
        cores = int(
            _number(
                _require(raw, "cores_per_node", where, source),
                where + "cores_per_node",
                source,
                minimum=1,
                integer=True,
            )
        )
        raw_ps = _require(raw, "pstates", where, source)
        if not isinstance(raw_ps, list) or not raw_ps:
            raise ConfigError(where + "pstates", "must be a non-empty array", source=source)
        pstates: list[PState] = []
        for j, p in enumerate(raw_ps):
            pw = f"{where}pstates[{j}]."
            if not isinstance(p, Mapping):
                raise ConfigError(f"{where}pstates[{j}]", "must be a table", source=source)
            badp = set(p) - _PSTATE_KEYS
            if badp:
                raise ConfigError(
                    pw + sorted(badp)[0],
                    "unknown key; allowed: busy_power_w, freq_ghz, idle_power_w",
                    source=source,
                )
            f = _number(
                _require(p, "freq_ghz", pw, source), pw + "freq_ghz", source, minimum=0, strict=True
            )
            idle = _number(
                _require(p, "idle_power_w", pw, source), pw + "idle_power_w", source, minimum=0
            )
            busy = _number(
                _require(p, "busy_power_w", pw, source), pw + "busy_power_w", source, minimum=0
            )
            if busy < idle:
                raise ConfigError(
                    pw + "busy_power_w", f"must be >= idle_power_w ({idle:g})", source=source
                )
            pstates.append(PState(f, idle, busy))
        pstates.sort(key=lambda s: s.freq_ghz)
        for a, b in itertools.pairwise(pstates):
            if abs(a.freq_ghz - b.freq_ghz) <= 1e-9:
                raise ConfigError(
                    where + "pstates", f"duplicate frequency {a.freq_ghz:g} GHz", source=source
                )
        extras: dict[str, float] = {}
        for key in (
            "off_power_w",
            "boot_time_s",
            "boot_energy_j",
            "shutdown_time_s",
            "shutdown_energy_j",
        ):
            extras[key] = _number(raw.get(key, 0.0), where + key, source, minimum=0)
        for kind in ("boot", "shutdown"):
            if extras[f"{kind}_energy_j"] > 0 and extras[f"{kind}_time_s"] == 0:
                raise ConfigError(
                    f"{where}{kind}_time_s",
                    f"must be > 0 when {kind}_energy_j > 0 (energy is charged over the transition)",
                    source=source,
                )
        node_types.append(
            NodeType(
                name=tname, count=count, cores_per_node=cores, pstates=tuple(pstates), **extras
            )
        )
    topo_raw = data.get("topology")
    graph = None
    per_switch = None
    bandwidth = None
    if topo_raw is not None:
        if not isinstance(topo_raw, Mapping):
            raise ConfigError("topology", "must be a table", source=source)
        bad = set(topo_raw) - _TOPOLOGY_KEYS
        if bad:
            raise ConfigError(
                "topology." + sorted(bad)[0],
                "unknown key; allowed: link_bandwidth_gbs, nodes_per_switch",
                source=source,
            )
        per_switch = int(
            _number(
                _require(topo_raw, "nodes_per_switch", "topology.", source),
                "topology.nodes_per_switch",
                source,
                minimum=1,
                integer=True,
            )
        )
        bandwidth = _number(
            topo_raw.get("link_bandwidth_gbs", 12.5),
            "topology.link_bandwidth_gbs",
            source,
            minimum=0,
            strict=True,
        )
        graph = build_tree_topology(node_types, per_switch, bandwidth)
    return Platform(
        name=name,
        node_types=tuple(node_types),
        topology=graph,
        nodes_per_switch=per_switch,
        link_bandwidth_gbs=bandwidth,
        source=source,
    )


def build_tree_topology(
    node_types: Sequence[NodeType], nodes_per_switch: int, bandwidth_gbs: float
) -> nx.Graph:
    """A two-level tree: nodes in order on leaf switches, leaves on one core switch."""
    import networkx as nx  # imported here: only platforms with a topology need it

    graph = nx.Graph()
    graph.add_node("core", kind="switch")
    index = 0
    for t in node_types:
        for i in range(t.count):
            leaf = f"switch-{index // nodes_per_switch}"
            if leaf not in graph:
                graph.add_node(leaf, kind="switch")
                graph.add_edge(leaf, "core", bandwidth_gbs=bandwidth_gbs)
            node = f"{t.name}-{i}"
            graph.add_node(node, kind="node", node_type=t.name, index=index)
            graph.add_edge(node, leaf, bandwidth_gbs=bandwidth_gbs)
            index += 1
    return graph


#: name -> file in ``simulator/data``: the bundled platforms
BUILTIN_PLATFORMS: dict[str, str] = {"hybrid-128x16": "hybrid-128x16.toml"}


def resolve_platform_source(source: str | Path) -> Path:
    """The file of a platform source: ``builtin:NAME`` -> the bundled file
    (:data:`BUILTIN_PLATFORMS`), a path as it is.

    Raises:
        ConfigError: an unknown built-in name (the message lists the known ones).
    """
    text = str(source)
    if not text.startswith(BUILTIN_PREFIX):
        return Path(source)
    key = text[len(BUILTIN_PREFIX) :]
    if key not in BUILTIN_PLATFORMS:
        known = ", ".join(BUILTIN_PREFIX + k for k in BUILTIN_PLATFORMS)
        raise ConfigError("platform", f"unknown built-in platform {text!r}; known: {known}")
    from importlib.resources import files

    return Path(str(files("simulator") / "data" / BUILTIN_PLATFORMS[key]))


def load_platform(path: str | Path) -> Platform:
    """Read and validate a platform TOML file, or a bundled platform
    (``builtin:NAME``, see :func:`resolve_platform_source`)."""
    from simulator.config import read_config_text

    p = resolve_platform_source(path)
    if not p.exists():
        raise ConfigError("platform", f"file not found: {p}")
    text = read_config_text(p, what="platform file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("platform", f"not valid TOML: {exc}", source=str(p)) from exc
    return platform_from_dict(data, source=str(p))


def homogeneous_platform(
    nodes: int,
    cores_per_node: int = 1,
    *,
    name: str = "homogeneous",
    pstates: Sequence[PState] = DEFAULT_PSTATES,
    off_power_w: float = DEFAULT_OFF_POWER_W,
    boot_time_s: float = DEFAULT_BOOT_TIME_S,
    boot_energy_j: float = DEFAULT_BOOT_ENERGY_J,
    shutdown_time_s: float = DEFAULT_SHUTDOWN_TIME_S,
    shutdown_energy_j: float = DEFAULT_SHUTDOWN_ENERGY_J,
) -> Platform:
    """One node type with the default power figures (see :data:`DEFAULT_PSTATES`)."""
    if nodes < 1:
        raise ConfigError("nodes", f"must be >= 1, got {nodes}")
    if cores_per_node < 1:
        raise ConfigError("cores_per_node", f"must be >= 1, got {cores_per_node}")
    return Platform(
        name=name,
        node_types=(
            NodeType(
                name="node",
                count=int(nodes),
                cores_per_node=int(cores_per_node),
                pstates=tuple(sorted(pstates, key=lambda s: s.freq_ghz)),
                off_power_w=off_power_w,
                boot_time_s=boot_time_s,
                boot_energy_j=boot_energy_j,
                shutdown_time_s=shutdown_time_s,
                shutdown_energy_j=shutdown_energy_j,
            ),
        ),
    )


def platform_from_trace(trace: Any) -> Platform:
    """A homogeneous platform from a trace header.

    ``MaxNodes`` nodes with ``MaxProcs // MaxNodes`` cores each (at least 1).
    When the header lacks ``MaxNodes`` the largest processor count in the trace
    is used (and ``MaxProcs`` likewise). Power figures: :data:`DEFAULT_PSTATES`.
    """
    header = getattr(trace, "header", {}) or {}
    max_nodes = header.get("MaxNodes")
    max_procs = header.get("MaxProcs")
    if not isinstance(max_nodes, (int, float)) or max_nodes < 1:
        max_nodes = None
    if not isinstance(max_procs, (int, float)) or max_procs < 1:
        max_procs = None
    if max_nodes is None and max_procs is None:
        jobs = trace.jobs
        largest = 0.0
        for col in ("procs_alloc", "procs_req"):
            if col in jobs:
                m = jobs[col].max(skipna=True)
                if m is not None and m == m:
                    largest = max(largest, float(m))
        if largest < 1:
            raise ConfigError(
                "platform",
                "the trace header has neither MaxNodes nor MaxProcs and no job has a processor count; "
                "give a platform file instead of --platform trace",
            )
        max_nodes = max_procs = largest
    elif max_nodes is None:
        max_nodes = max_procs
    elif max_procs is None:
        max_procs = max_nodes
    assert max_nodes is not None and max_procs is not None
    cores = max(1, int(max_procs) // int(max_nodes))
    return homogeneous_platform(
        int(max_nodes), cores, name=f"{getattr(trace, 'name', 'trace')}-platform"
    )
