"""The packages load their public names on first use (``lazy_loader``): every
name in ``__all__`` resolves to the object its module defines, and reading an
experiment file (what a sweep's parent does before its workers start) loads
neither the engine nor the predictors."""

from __future__ import annotations

import importlib

import pytest

from tests.fresh_python import fresh_python

PACKAGES = ("energysched", "simulator", "workloads", "predictors")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_resolves_and_is_listed(name: str) -> None:
    package = importlib.import_module(name)
    assert sorted(dir(package)) == sorted(package.__all__)
    for attribute in package.__all__:
        assert getattr(package, attribute) is not None, f"{name}.{attribute}"
    with pytest.raises(AttributeError, match="NoSuchName"):
        package.NoSuchName  # noqa: B018


def test_the_front_door_aliases_are_the_everyday_calls() -> None:
    import energysched
    from energysched.reporting import make_report
    from energysched.runner import run_spec

    assert energysched.run is run_spec
    assert energysched.report is make_report


def test_reading_an_experiment_loads_no_engine() -> None:
    code = (
        "import sys\n"
        "from energysched.config import parse_experiment\n"
        "from energysched.sweep import plan_runs\n"
        "spec = parse_experiment({'name': 'x', 'traces': [{'name': 'kth', "
        "'source': 'builtin:kth-sp2', 'max_jobs': 10}], 'policies': [{'name': 'easy'}]})\n"
        "plan_runs(spec)\n"
        "print(sorted(m for m in ('simulator.engine', 'predictors.adept', 'scipy') "
        "if m in sys.modules))\n"
    )
    assert fresh_python(code) == "[]"
