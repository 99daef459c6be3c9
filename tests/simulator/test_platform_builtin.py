"""Bundled platforms, addressed as ``builtin:NAME`` wherever a platform file is asked for."""

from __future__ import annotations

from importlib.resources import files

import pytest

from energysched.config import ExperimentFileError, parse_experiment
from energysched.errors import ConfigError
from simulator.platform import BUILTIN_PLATFORMS, load_platform, resolve_platform_source


def test_a_builtin_name_loads_the_bundled_file() -> None:
    bundled = load_platform(str(files("simulator") / "data" / "hybrid-128x16.toml"))
    builtin = load_platform("builtin:hybrid-128x16")
    assert builtin.node_types == bundled.node_types
    node = builtin.node_types[0]
    assert (node.count, node.cores_per_node, builtin.nodes_per_switch) == (128, 16, 16)


def test_every_listed_builtin_platform_is_bundled() -> None:
    for name in BUILTIN_PLATFORMS:
        assert resolve_platform_source(f"builtin:{name}").is_file()
        load_platform(f"builtin:{name}")


def test_an_unknown_builtin_name_lists_the_known_ones() -> None:
    with pytest.raises(
        ConfigError, match="unknown built-in platform 'builtin:nope'; known: builtin:hybrid-128x16"
    ):
        load_platform("builtin:nope")


def test_an_experiment_accepts_a_builtin_platform_and_rejects_an_unknown_one() -> None:
    base = {
        "name": "x",
        "traces": [{"name": "kth", "source": "builtin:kth-sp2", "max_jobs": 10}],
        "policies": [{"name": "easy", "baseline": True}],
    }
    spec = parse_experiment(
        {**base, "platforms": [{"name": "hyb", "source": "builtin:hybrid-128x16"}]}
    )
    assert spec.platforms[0].source == "builtin:hybrid-128x16"
    with pytest.raises(
        ExperimentFileError, match=r"platforms\[0\]\.source.*unknown built-in platform"
    ):
        parse_experiment({**base, "platforms": [{"name": "hyb", "source": "builtin:nope"}]})
