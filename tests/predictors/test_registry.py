"""Registry: built-ins, composites, dotted paths, entry points, errors."""

from __future__ import annotations

import pytest

from energysched.errors import ConfigError
from predictors import registry
from predictors.baselines import AmdahlPredictor
from predictors.composite import CompositePredictor
from predictors.dvfs import FluidPredictor, OnlineDvfsPredictor
from predictors.lbm import LbmPredictor
from predictors.registry import get_predictor, list_predictors


def test_builtin_names_and_defaults():
    assert isinstance(get_predictor("lbm"), LbmPredictor)
    assert get_predictor("lbm", solver="l1").solver == "l1"
    assert get_predictor("online-generic").per_node_type is False
    assert get_predictor("online-node-type").per_node_type is True


def test_dotted_path():
    p = get_predictor("predictors.baselines:AmdahlPredictor")
    assert isinstance(p, AmdahlPredictor)
    with pytest.raises(ConfigError, match="no attribute"):
        get_predictor("predictors.baselines:Nope")
    with pytest.raises(ConfigError, match="cannot import"):
        get_predictor("no_such_module_xyz:Thing")


def test_unknown_name_lists_known_ones():
    with pytest.raises(ConfigError) as err:
        get_predictor("magic")
    msg = str(err.value)
    for name in ("lbm", "fluid", "oracle", "requested", "amdahl", "adept+fluid", "dvfs-naive"):
        assert name in msg


def test_composite_spec_and_prefixed_params():
    p = get_predictor("amdahl+fluid", freq__pcoef=3.0)
    assert isinstance(p, CompositePredictor)
    assert isinstance(p.node_predictor, AmdahlPredictor)
    assert isinstance(p.freq_predictor, FluidPredictor) and p.freq_predictor.pcoef == 3.0
    with pytest.raises(ConfigError, match="prefix"):
        get_predictor("amdahl+fluid", pcoef=3.0)


def test_unknown_parameter_is_config_error():
    with pytest.raises(ConfigError, match="accepted: solver"):
        get_predictor("lbm", solvr="l1")


def test_entry_point(monkeypatch):
    class _EP:
        name = "plug"
        value = "predictors.dvfs:OnlineDvfsPredictor"

        def load(self):
            return OnlineDvfsPredictor

    monkeypatch.setattr(registry, "_entry_points", lambda: {"plug": _EP()})
    assert isinstance(get_predictor("plug"), OnlineDvfsPredictor)
    assert any(d["name"] == "plug" and d["source"] == "entry-point" for d in list_predictors())


def test_list_predictors_describes_every_builtin():
    items = {d["name"]: d for d in list_predictors()}
    for name in registry.BUILTINS:
        assert name in items
    assert items["lbm"]["params"]["solver"] == "lstsq"
    assert items["lbm"]["source"] == "builtin" and items["lbm"]["doc"]
    assert items["online-generic"]["params"]["per_node_type"] is False
    assert items["adept+fluid"]["source"] == "composite"
    assert items["auto+fluid"]["source"] == "composite"
    assert registry.DEFAULT_PREDICTOR == "auto+fluid"  # issue 14: validates better
