"""``energysched trace-info PATH``: describe an SWF trace and what cleaning would drop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from energysched.errors import TraceFormatError
from workloads.cleaning import clean_trace
from workloads.swf import read_swf
from workloads.trace_info import format_trace_info, trace_info


@click.command("trace-info")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--skip-bad-lines",
    is_flag=True,
    help="Skip malformed job lines (counted and reported) instead of stopping at the first.",
)
@click.option(
    "--max-procs",
    type=click.IntRange(min=1),
    default=None,
    help="Machine size in processors for the cleaning step (default: the header's MaxProcs).",
)
def trace_info_cmd(path: Path, skip_bad_lines: bool, max_procs: int | None) -> None:
    """Print statistics of the SWF trace PATH (.swf or .swf.gz) and the cleaning counts."""
    try:
        trace = read_swf(path, skip_bad_lines=skip_bad_lines)
    except TraceFormatError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(format_trace_info(trace_info(trace)))
    if trace.bad_lines:
        click.echo(f"bad lines skipped: {trace.bad_lines}; first errors:")
        for message in trace.bad_line_errors[:5]:
            click.echo(f"  {message}")
    try:
        _, report = clean_trace(trace, max_procs=max_procs)
    except ValueError as exc:  # pragma: no cover - guarded by IntRange
        raise click.ClickException(str(exc)) from None
    click.echo(report.summary())


def register(main: click.Group, groups: dict[str, Any]) -> None:
    """Add ``trace-info`` to the top-level command group."""
    main.add_command(trace_info_cmd)
