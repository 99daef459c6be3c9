"""Platform files: validation names the key; trace-derived platforms."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from energysched.errors import ConfigError
from simulator.platform import (
    DEFAULT_PSTATES,
    load_platform,
    platform_from_dict,
    platform_from_trace,
)
from workloads.schema import Trace

GOOD = """
name = "two-types"

[[node_types]]
name = "thin"
count = 8
cores_per_node = 16
off_power_w = 5.0
boot_time_s = 120.0
boot_energy_j = 24000.0
pstates = [
  { freq_ghz = 2.4, idle_power_w = 95.0, busy_power_w = 230.0 },
  { freq_ghz = 1.2, idle_power_w = 85.0, busy_power_w = 140.0 },
]

[[node_types]]
name = "fat"
count = 2
cores_per_node = 64
pstates = [{ freq_ghz = 2.0, idle_power_w = 150.0, busy_power_w = 500.0 }]

[topology]
nodes_per_switch = 4
link_bandwidth_gbs = 10.0
"""


def test_load_good_platform(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(GOOD)
    p = load_platform(path)
    assert p.total_nodes == 10
    thin = p.node_type("thin")
    assert thin.freqs_ghz == (1.2, 2.4)  # sorted
    assert thin.idle_power_w == 85.0 and thin.max_power_w == 230.0
    assert thin.boot_power_w == pytest.approx(200.0)
    assert (
        thin.nodes_for_procs(17) == 2
        and thin.nodes_for_procs(16) == 1
        and thin.nodes_for_procs(1) == 1
    )
    # topology: 10 nodes on ceil(10/4) = 3 leaf switches + a core switch
    graph = p.topology
    assert graph is not None
    switches = [v for v, d in graph.nodes(data=True) if d["kind"] == "switch"]
    assert len(switches) == 4
    assert graph.has_edge("fat-1", "switch-2")


@pytest.mark.parametrize(
    ("mutation", "key"),
    [
        (lambda d: d["node_types"][0].pop("count"), "node_types[0].count"),
        (lambda d: d["node_types"][0].update(count=0), "node_types[0].count"),
        (lambda d: d["node_types"][0].update(cores_per_node=2.5), "node_types[0].cores_per_node"),
        (
            lambda d: d["node_types"][0]["pstates"][1].update(busy_power_w=10.0),
            "node_types[0].pstates[1].busy_power_w",
        ),
        (
            lambda d: d["node_types"][0]["pstates"][0].update(freq_ghz="fast"),
            "node_types[0].pstates[0].freq_ghz",
        ),
        (lambda d: d["node_types"][0].update(boot_time_s=0.0), "node_types[0].boot_time_s"),
        (lambda d: d["node_types"][0].update(colour="red"), "node_types[0].colour"),
        (lambda d: d["node_types"][1].update(name="thin"), "node_types[1].name"),
        (lambda d: d.update(node_types=[]), "node_types"),
        (lambda d: d["topology"].pop("nodes_per_switch"), "topology.nodes_per_switch"),
        (lambda d: d.update(extra=1), "extra"),
    ],
)
def test_errors_name_the_key(mutation, key) -> None:  # type: ignore[no-untyped-def]
    from simulator.platform import tomllib

    data = tomllib.loads(GOOD)
    mutation(data)
    with pytest.raises(ConfigError) as info:
        platform_from_dict(data, source="p.toml")
    assert info.value.key == key
    assert str(info.value).startswith(f"p.toml: {key}:")


def test_bad_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("node_types = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_platform(bad)
    with pytest.raises(ConfigError, match="file not found"):
        load_platform(tmp_path / "nope.toml")


def test_platform_from_trace_header() -> None:
    trace = Trace(
        jobs=pd.DataFrame({"procs_alloc": [4, 8]}),
        header={"MaxNodes": 64, "MaxProcs": 256},
        name="t",
    )
    p = platform_from_trace(trace)
    (t,) = p.node_types
    assert (t.count, t.cores_per_node) == (64, 4)
    assert t.pstates == DEFAULT_PSTATES
    # default figures: 229 W at full load at the top frequency, 92 W idle at the lowest
    assert t.max_power_w == pytest.approx(229.0) and t.idle_power_w == pytest.approx(92.0)


def test_platform_from_trace_without_header_uses_largest_job() -> None:
    trace = Trace(jobs=pd.DataFrame({"procs_alloc": [4, 32], "procs_req": [4, 16]}), header={})
    assert platform_from_trace(trace).total_nodes == 32
    with pytest.raises(ConfigError, match="neither MaxNodes nor MaxProcs"):
        platform_from_trace(Trace(jobs=pd.DataFrame({"procs_alloc": [float("nan")]}), header={}))
