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

#: The modules that define each top-level command (each module's ``register`` adds
#: its commands). A command's modules are imported when it is invoked, all of
#: them for ``--help``: ``energysched run`` does not load the other commands'
#: code (synthetic workloads, experiments, predictors).
_COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "run": ("energysched.cli.run_cmd",),
    "trace-info": ("energysched.cli.trace_cmd",),
    "workload": ("energysched.cli.workload_cmd", "energysched.cli.generate_cmd"),
    "predictors": ("energysched.cli.predictors_cmd",),
    "policies": ("energysched.cli.policies_cmd",),
    "experiment": ("energysched.cli.experiment_cmd",),
    "report": ("energysched.cli.experiment_cmd",),
    "demo": ("energysched.cli.experiment_cmd",),
}
_registered: set[str] = set()


def _register_modules(names: tuple[str, ...]) -> None:
    """Import the command modules ``names`` (once each) and let them add their commands."""
    for name in names:
        if name in _registered:
            continue
        _registered.add(name)
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a command module not written yet
            if exc.name != name:
                raise
            continue
        module.register(main, GROUPS)


class _LazyGroup(click.Group):
    """The top-level group: a command's module is imported when the command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        for names in _COMMAND_MODULES.values():
            _register_modules(names)
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        _register_modules(_COMMAND_MODULES.get(cmd_name, ()))
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="energysched")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Energy-aware scheduling testbed for HPC clusters.

    Replay Parallel Workloads Archive traces on a simulated cluster, choose node
    counts and CPU frequencies with predictors, and compare energy, makespan
    and waiting time between policies.
    """
    from energysched.cli.importpath import make_importable
    from energysched.logtags import command_line_handler

    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    # a sweep's log lines name their run: ``WARNING predictors.dvfs [RUN_ID]: ...``
    logging.basicConfig(level=level, handlers=[command_line_handler()])
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
