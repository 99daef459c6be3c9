"""The packages' dependencies point one way (docs/reference/python-api.md, "Layers").

``energysched`` (front door: experiments, sweeps, reports, CLI, conformance
checks that run the engine) may import every layer; below it:

* ``simulator`` -> ``workloads`` and the policies' interface (``policies.base``);
* ``policies`` -> ``predictors`` -> ``workloads``;
* ``workloads`` imports none of the others.

Every layer may import ``energysched.errors`` (which imports nothing). The
check reads every ``import`` statement, at module level or inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.fresh_python import fresh_python

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("energysched", "simulator", "policies", "predictors", "workloads")
#: package -> the modules (or whole packages) of other layers it may import
ALLOWED: dict[str, tuple[str, ...]] = {
    "workloads": (),
    "predictors": ("workloads",),
    "policies": ("predictors", "workloads"),
    "simulator": ("workloads", "policies.base"),
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def upward_imports(package: str) -> list[str]:
    """Imports in ``package`` that its layer may not make, as ``file:line: module``."""
    allowed = ALLOWED[package]
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in imported_modules(path):
            top = module.split(".")[0]
            if top not in LAYERS or top == package or module == "energysched.errors":
                continue
            if any(module == a or module.startswith(a + ".") for a in allowed):
                continue
            bad.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    return bad


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_upward_imports(package: str) -> None:
    assert upward_imports(package) == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from simulator.engine import simulate\n")
    assert imported_modules(module) == [(2, "simulator.engine")]


def test_importing_the_errors_loads_no_layer() -> None:
    code = (
        "import sys, energysched.errors; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {LAYERS[1:]!r}))"
    )
    assert fresh_python(code, cwd=ROOT) == "[]"
