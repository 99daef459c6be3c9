"""Local sweep workers are forked from a fork server that has imported
``WORKER_PRELOAD``; a module a default run needs but the list lacks is imported
again by every worker in its first run (CPU time the workers do not share)."""

from __future__ import annotations

from tests.fresh_python import fresh_python

LAYERS = ("energysched", "simulator", "policies", "predictors", "workloads")

CODE = """
import importlib, sys
from energysched.config import parse_experiment
from energysched.sweep import WORKER_PRELOAD, execute_task, plan_runs

for name in WORKER_PRELOAD:
    importlib.import_module(name)
spec = parse_experiment({
    "name": "preload",
    "seeds": {"base": 1, "replicates": 1},
    "ground_truth": {"preset": "npb-mix"},
    "traces": [{"name": "kth", "source": "builtin:kth-sp2", "max_jobs": 300}],
    "policies": [{"name": "%s"}],
})
before = set(sys.modules)
execute_task(plan_runs(spec)[0])
layers = %r
print(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in layers))
"""


def imported_by_a_run(policy: str) -> str:
    return fresh_python(CODE % (policy, LAYERS)).splitlines()[-1]


def test_a_default_predictor_driven_run_imports_nothing_beyond_the_preload():
    assert imported_by_a_run("easy-energy-bsld-off") == "[]"


def test_a_rigid_run_imports_nothing_beyond_the_preload():
    assert imported_by_a_run("easy") == "[]"


def test_the_preload_imports_no_scipy():
    """SciPy's optimize package costs the fork server about 0.45 s before any
    worker can start; no module of the preload needs it at import time (LBM
    imports its solvers where it calls them)."""
    code = (
        "import sys\n"
        "from energysched.sweep import warm_worker\n"
        "warm_worker()\n"
        "print(sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')))\n"
    )
    assert fresh_python(code) == "[]"
