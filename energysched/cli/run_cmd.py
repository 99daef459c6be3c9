"""``energysched run``: replay one trace under one policy and write the results."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import click

from energysched.errors import EnergySchedError

RIGID_POLICIES = {"fcfs", "easy", "conservative"}


def parse_param(text: str) -> tuple[str, Any]:
    """``key=value`` -> (key, value); the value is read as JSON when it parses
    (numbers, true/false, null, lists), else kept as a string."""
    if "=" not in text:
        raise click.BadParameter(f"{text!r} is not key=value", param_hint="--param")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key:
        raise click.BadParameter(f"{text!r} has an empty key", param_hint="--param")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def format_summary(summary: dict[str, Any]) -> str:
    """A short aligned table of the headline metrics."""
    rows = [
        (
            "jobs completed / killed / rejected",
            f"{summary['jobs_completed']} / {summary['jobs_killed']} / {summary['jobs_rejected']}",
        ),
        ("makespan", f"{summary['makespan_s']:,.0f} s ({summary['makespan_s'] / 86400:.1f} days)"),
        ("energy total", f"{summary['energy_j'] / 3.6e9:,.2f} MWh"),
        (
            "  busy / idle",
            f"{summary['energy_busy_j'] / 3.6e9:,.2f} / {summary['energy_idle_j'] / 3.6e9:,.2f} MWh",
        ),
        (
            "  off / switching",
            f"{summary['energy_off_j'] / 3.6e9:,.2f} / {summary['energy_switching_j'] / 3.6e9:,.2f} MWh",
        ),
        ("mean / p95 wait", f"{summary['mean_wait_s']:,.0f} / {summary['p95_wait_s']:,.0f} s"),
        ("mean bounded slowdown", f"{summary['mean_bsld']:,.2f}"),
        ("utilisation", f"{summary['utilisation'] * 100:.1f} %"),
        ("energy-delay product", f"{summary['edp_js']:.3e} J s"),
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in rows)


@click.command("run")
@click.option(
    "--trace", "trace", required=True, help="SWF trace (.swf or .swf.gz), or builtin:kth-sp2."
)
@click.option(
    "--platform",
    "platform",
    default="trace",
    show_default=True,
    help="Platform TOML file, or 'trace' to build one from the trace header.",
)
@click.option(
    "--policy",
    default="easy",
    show_default=True,
    help="Policy name, entry point or package.module:Class (see 'energysched policies list').",
)
@click.option(
    "--predictor",
    default=None,
    help="Predictor for predictor-driven policies (name, entry point or package.module:Class).",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Policy parameter (repeatable); values parse as JSON when they can.",
)
@click.option(
    "--truth",
    "truth",
    default="auto",
    show_default=True,
    help="Ground-truth preset, 'none', or 'auto' (none for rigid policies without a predictor, else the default preset).",
)
@click.option(
    "--seed", default=0, show_default=True, type=click.IntRange(min=0), help="Seed of the run."
)
@click.option(
    "--noise",
    default=0.02,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Relative measurement noise of the ground truth.",
)
@click.option(
    "--overrun",
    type=click.Choice(["kill", "let-run"]),
    default="kill",
    show_default=True,
    help="Jobs running past their time limit: kill at the limit, or let them finish.",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="Switch idle nodes off after this many seconds (default: never).",
)
@click.option(
    "--reserve-nodes",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Idle nodes per node type kept on by power management.",
)
@click.option(
    "--power-cap",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Platform power cap in W (for power-capping policies).",
)
@click.option(
    "--max-jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Replay only the first N jobs (after cleaning).",
)
@click.option(
    "--skip-bad-lines",
    is_flag=True,
    help="Skip malformed trace lines (counted and reported) instead of stopping at the first.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Output directory (created).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "parquet", "csv"]),
    default="auto",
    show_default=True,
    help="Jobs table format (auto: Parquet when pyarrow is installed).",
)
def run_command(
    trace: str,
    platform: str,
    policy: str,
    predictor: str | None,
    params: tuple[str, ...],
    truth: str,
    seed: int,
    noise: float,
    overrun: str,
    idle_timeout: float | None,
    reserve_nodes: int,
    power_cap: float | None,
    max_jobs: int | None,
    skip_bad_lines: bool,
    out: Path,
    fmt: str,
) -> None:
    """Replay a trace on a platform under one policy; write jobs, power and summary to OUT.

    \b
    Writes OUT/jobs.parquet (or jobs.csv), OUT/power.csv and OUT/summary.json
    and prints the headline metrics.
    """
    from energysched.runner import RunSpec, run_spec
    from simulator.config import RunConfig

    policy_params = dict(parse_param(p) for p in params)
    if truth == "auto":
        truth_preset = None if (policy in RIGID_POLICIES and predictor is None) else "default"
    elif truth == "none":
        truth_preset = None
    else:
        truth_preset = truth
    if truth_preset == "default":
        from workloads.presets import DEFAULT_PRESET

        truth_preset = DEFAULT_PRESET
    try:
        config = RunConfig(
            overrun=overrun,  # type: ignore[arg-type]
            idle_timeout_s=idle_timeout,
            reserve_nodes=reserve_nodes,
            power_cap_w=power_cap if power_cap is not None else math.inf,
            seed=seed,
            progress=sys.stderr.isatty(),
        )
        spec = RunSpec(
            trace=trace,
            platform=platform,
            policy=policy,
            policy_params=policy_params,
            predictor=predictor,
            truth_preset=truth_preset,
            seed=seed,
            noise=noise,
            config=config,
            max_jobs=max_jobs,
            skip_bad_lines=skip_bad_lines,
        )
        started = time.perf_counter()
        result = run_spec(spec)
        elapsed = time.perf_counter() - started
        paths = result.write(out, fmt=fmt)
    except (EnergySchedError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc
    cleaning = result.meta.get("cleaning") or {}
    if cleaning.get("bad_lines_skipped"):
        click.echo(f"skipped {cleaning['bad_lines_skipped']} malformed trace lines")
    if cleaning.get("jobs_in", 0) != cleaning.get("jobs_out", 0):
        click.echo(result.meta.get("cleaning_summary", ""))
    n = result.summary["jobs"]
    click.echo(
        f"{policy} on {result.meta.get('trace')} ({n} jobs, platform {result.meta.get('platform')}): {elapsed:.2f} s, {n / max(elapsed, 1e-9):,.0f} jobs/s"
    )
    click.echo(format_summary(result.summary))
    jobs_format = paths["jobs"].suffix.lstrip(".")
    click.echo(
        f"results (jobs table as {jobs_format}): {', '.join(str(p) for p in paths.values())}"
    )


def register(main: click.Group, groups: dict[str, click.Group]) -> None:
    main.add_command(run_command)
