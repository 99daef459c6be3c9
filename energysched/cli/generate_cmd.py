"""``energysched workload generate``: write a synthetic workload as SWF.

Models: ``lublin`` (Lublin & Feitelson 2003) and ``downey`` (Downey 1997);
see :mod:`workloads.synthetic`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np

from energysched.errors import ConfigError, TraceFormatError
from workloads.schema import Trace
from workloads.swf import write_swf
from workloads.synthetic import MODELS, generate


def summary_line(trace: Trace, nodes: int) -> str:
    """One line: jobs, arrival span, mean size, mean runtime, offered load.

    Offered load = ``sum(procs * runtime) / (nodes * span)`` with ``span`` the
    time from 0 to the last submission (s).
    """
    jobs = trace.jobs
    size = jobs["procs_alloc"].to_numpy(dtype=float, na_value=np.nan)
    runtime = jobs["runtime_s"].to_numpy(dtype=float, na_value=np.nan)
    span = float(jobs["submit_s"].max())
    load = float(np.nansum(size * runtime)) / (nodes * span) if span > 0 else float("inf")
    return (
        f"{len(jobs)} jobs, span {span / 86400:.2f} days, mean size {np.nanmean(size):.2f} "
        f"processors, mean runtime {np.nanmean(runtime):.0f} s, offered load {load:.3f}"
    )


@click.command("generate")
@click.option(
    "--model",
    type=click.Choice(sorted(MODELS), case_sensitive=False),
    required=True,
    help="Workload model: lublin (Lublin & Feitelson 2003) or downey (Downey 1997).",
)
@click.option("--jobs", "n_jobs", type=click.IntRange(min=1), required=True, help="Number of jobs.")
@click.option(
    "--nodes",
    type=click.IntRange(min=1),
    required=True,
    help="Machine size (processors); no job is larger.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Output SWF file (gzip-compressed when the name ends with .gz).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="RNG seed.")
@click.option(
    "--requests",
    type=click.Choice(["tsafrir2005", "uniform", "none"]),
    default=None,
    help="Requested times: tsafrir2005 (Tsafrir, Etsion & Feitelson 2005; lublin's default), "
    "uniform (downey's own overestimate factor and default) or none (the engine then plans "
    "with exact runtimes).",
)
def generate_cmd(
    model: str, n_jobs: int, nodes: int, out: Path, seed: int, requests: str | None
) -> None:
    """Generate a synthetic workload and write it as SWF to --out."""
    try:
        options = {} if requests is None else {"requests": requests}
        trace = generate(model.lower(), n_jobs, nodes, seed=seed, **options)
        write_swf(trace, out)
    except (ConfigError, TraceFormatError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{out}: {summary_line(trace, nodes)}")


def register(main: click.Group, groups: dict[str, Any]) -> None:
    """Add ``generate`` to the ``workload`` command group."""
    groups["workload"].add_command(generate_cmd)
