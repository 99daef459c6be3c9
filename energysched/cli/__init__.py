"""The ``energysched`` command line.

Sub-commands live in sibling modules, each exposing ``register(main, groups)``
where ``groups`` maps a group name (``workload``, ``predictors``,
``policies``) to its click group. The CLI prints; library code logs.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import logging
from pathlib import Path

import click

from energysched import __version__

_COMMAND_MODULES = (
    "energysched.cli.run_cmd",
    "energysched.cli.trace_cmd",
    "energysched.cli.workload_cmd",
    "energysched.cli.generate_cmd",
    "energysched.cli.predictors_cmd",
    "energysched.cli.policies_cmd",
    "energysched.cli.experiment_cmd",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="energysched")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Energy-aware scheduling testbed for HPC clusters.

    Replay Parallel Workloads Archive traces on a simulated cluster, choose node
    counts and CPU frequencies with predictors, and compare energy, makespan
    and waiting time between policies.
    """
    from energysched.cli.importpath import make_importable

    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    make_importable(Path.cwd())  # module:Class plug-ins saved in the current folder
    # At exit the interpreter collects every object the imports made (numpy, pandas,
    # pyarrow: about 0.1 s of CPU time); freezing them first skips that work for
    # objects that die with the process anyway (registered once per process).
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


@main.group()
def workload() -> None:
    """Describe a trace's applications and ground truth, or generate synthetic workloads."""


@main.group()
def predictors() -> None:
    """List and evaluate predictors."""


@main.group()
def policies() -> None:
    """List scheduling policies."""


GROUPS = {"workload": workload, "predictors": predictors, "policies": policies}

for _name in _COMMAND_MODULES:
    try:
        _module = importlib.import_module(_name)
    except ModuleNotFoundError as _exc:  # a command module not written yet
        if _exc.name != _name:
            raise
        continue
    _module.register(main, GROUPS)
