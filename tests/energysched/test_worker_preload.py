"""Local sweep workers are forked from a process that has imported
``WORKER_PRELOAD`` (the sweep process, or a fork server); a module a default run
(or the writing of its results, which the workers do) needs but the list lacks
is imported again by every worker in its first run (CPU time the workers do not
share)."""

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


RECORD = """
import importlib, sys, tempfile
from pathlib import Path
from energysched.sweep import WORKER_PRELOAD, RunTask, record_outcome, run_task

for name in WORKER_PRELOAD:
    importlib.import_module(name)
before = set(sys.modules)
task = RunTask(
    run_id="kth__trace__easy__none__s0", trace="kth", platform="trace", policy="easy",
    predictor=None, replicate=0, seed=1, trace_source="builtin:kth-sp2", max_jobs=300,
    truth_preset="npb-mix",
)
out = Path(tempfile.mkdtemp())
(out / "runs").mkdir()
assert record_outcome(out, run_task(task), fmt="parquet").ok
assert (out / "runs" / task.run_id / "jobs.parquet").is_file()
print(sorted(m for m in set(sys.modules) - before
             if m.split(".")[0] in %r + ("pydantic",) or m.startswith(("pyarrow.parquet", "pyarrow.csv"))))
"""


def test_writing_a_runs_results_imports_nothing_beyond_the_preload():
    """A worker writes its runs' results: the store (which needs no pydantic: the
    experiment file's models stay in the sweep process) and pyarrow's writers are
    in the preload."""
    assert fresh_python(RECORD % (LAYERS,)).splitlines()[-1] == "[]"


def test_the_preload_imports_no_pydantic():
    """The experiment file's models (pydantic, about 0.06 s of CPU time) stay in the
    sweep process: the store a worker writes with does not import them."""
    code = (
        "import sys\n"
        "from energysched.sweep import warm_worker\n"
        "warm_worker()\n"
        "print(sorted(m for m in sys.modules if m == 'pydantic' or m == 'energysched.config'))\n"
    )
    assert fresh_python(code) == "[]"
