"""``energysched run``: replay one trace under one policy and write the results."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from energysched.errors import EnergySchedError

#: ``--truth`` values meaning the default ground-truth preset
#: (:data:`workloads.presets.DEFAULT_PRESET`, ``npb-mix``) for every policy. ``auto``
#: used to mean "none for rigid policies": then a rigid run and a predictor-driven
#: run of the same trace ran different jobs, and their energies did not compare.
DEFAULT_TRUTH_WORDS = ("default", "auto")


def resolve_truth(truth: str) -> str | None:
    """The ground-truth preset of ``--truth``: the same for every policy (``None``
    for ``none``: the trace's recorded runtimes)."""
    if truth == "none":
        return None
    if truth in DEFAULT_TRUTH_WORDS:
        from workloads.presets import DEFAULT_PRESET

        return DEFAULT_PRESET
    return truth


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


def finite_number(
    minimum: float = 0.0, *, below: float | None = None, allow_inf: bool = False
) -> Any:
    """A click callback: the option's value must be a finite number >= ``minimum``
    (and < ``below``); ``nan`` and ``inf`` are refused (``inf`` allowed when asked)."""

    def check(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
        if value is None:
            return None
        ok = value >= minimum and (math.isfinite(value) or (allow_inf and value == math.inf))
        if below is not None and not value < below:
            ok = False
        if not ok:
            bound = f">= {minimum:g}" + (f" and < {below:g}" if below is not None else "")
            raise click.BadParameter(f"{value!r} is not a finite number {bound}")
        return value

    return check


#: Files ``RunResult.write`` creates in a run's output directory.
RUN_OUTPUT_FILES = ("jobs.parquet", "jobs.csv", "power.csv", "summary.json", "predictor_log.csv")


def claim_out_dir(out: Path, *, overwrite: bool) -> None:
    """Create ``out`` and check it is writable, before any work is done.

    A directory that already holds files is refused unless ``overwrite``;
    with it, the files of an earlier run are removed so that nothing stale
    stays beside the new results.

    Raises:
        click.ClickException: the directory cannot be created or written, or is not empty.
    """
    import tempfile

    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise click.ClickException(
            f"--out {out}: cannot write there ({exc.strerror or exc}); choose another directory"
        ) from None
    present = sorted(p.name for p in out.iterdir())
    if present and not overwrite:
        shown = ", ".join(present[:5]) + (" ..." if len(present) > 5 else "")
        raise click.ClickException(
            f"--out {out}: directory is not empty ({shown}); choose an empty or new directory, "
            "or pass --overwrite to replace an earlier run's results"
        )
    if overwrite:
        for name in RUN_OUTPUT_FILES:
            (out / name).unlink(missing_ok=True)


def format_summary(summary: dict[str, Any], extra_rows: Sequence[tuple[str, str]] = ()) -> str:
    """A short aligned table of the headline metrics (then ``extra_rows``)."""
    rows = [
        (
            "jobs completed / killed / rejected",
            f"{summary['jobs_completed']} / {summary['jobs_killed']} / {summary['jobs_rejected']}",
        ),
        ("makespan", f"{summary['makespan_s']:,.0f} s ({summary['makespan_s'] / 86400:.1f} days)"),
        ("energy total", f"{summary['energy_j'] / 3.6e9:,.2f} MWh"),
        (
            "  per completed job",
            f"{summary.get('energy_per_completed_job_j', float('nan')) / 3.6e6:,.3f} kWh",
        ),
        (
            "  of killed jobs",
            f"{summary.get('energy_killed_j', float('nan')) / 3.6e9:,.2f} MWh "
            f"({summary.get('energy_killed_j', float('nan')) / max(summary['energy_j'], 1e-300) * 100:.1f} % of the total)",
        ),
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
        *extra_rows,
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in rows)


def truth_label(truth_preset: str | None, seed: int) -> str:
    """How a run's ground truth is named in headers and reports."""
    if truth_preset is None:
        return "none (the trace's recorded runtimes)"
    return f"{truth_preset} (seed {seed})"


@click.command("run")
@click.option(
    "--trace", "trace", required=True, help="SWF trace (.swf or .swf.gz), or builtin:kth-sp2."
)
@click.option(
    "--platform",
    "platform",
    default="trace",
    show_default=True,
    help="Platform TOML file, builtin:hybrid-128x16 (bundled), or 'trace' to build one from the trace header.",
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
    default="default",
    show_default=True,
    help="Ground-truth preset for every policy: a preset name, 'default' (npb-mix; 'auto' is the same), or 'none' (the trace's recorded runtimes).",
)
@click.option(
    "--seed", default=0, show_default=True, type=click.IntRange(min=0), help="Seed of the run."
)
@click.option(
    "--noise",
    default=0.02,
    show_default=True,
    type=float,
    callback=finite_number(0.0, below=1.0),
    help="Relative measurement noise of the ground truth (0 <= noise < 1).",
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
    type=float,
    callback=finite_number(0.0),
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
    type=float,
    callback=finite_number(1e-9),
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
    help="Output directory (created; must be empty unless --overwrite).",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Write into a non-empty --out directory, replacing an earlier run's result files.",
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
    overwrite: bool,
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
    if "predictor" in policy_params:
        if predictor is not None:
            raise click.UsageError(
                "the predictor is given twice (--predictor and --param predictor=...); keep one"
            )
        raise click.UsageError("give the predictor with --predictor, not --param predictor=...")
    truth_preset = resolve_truth(truth)
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
        claim_out_dir(out, overwrite=overwrite)  # before the replay: no work lost to a bad --out
        started = time.perf_counter()
        result = run_spec(spec)
        elapsed = time.perf_counter() - started
        paths = result.write(out, fmt=fmt)
    except EnergySchedError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # a missing trace, a full disk
        where = f" ({exc.filename})" if exc.filename else ""
        raise click.ClickException(f"{exc.strerror or exc}{where}") from None
    cleaning = result.meta.get("cleaning") or {}
    if cleaning.get("bad_lines_skipped"):
        click.echo(f"skipped {cleaning['bad_lines_skipped']} malformed trace lines")
    if cleaning.get("jobs_in", 0) != cleaning.get("jobs_out", 0):
        click.echo(result.meta.get("cleaning_summary", ""))
    n = result.summary["jobs"]
    click.echo(
        f"{policy} on {result.meta.get('trace')} ({n} jobs, platform {result.meta.get('platform')}): {elapsed:.2f} s, {n / max(elapsed, 1e-9):,.0f} jobs/s"
    )
    click.echo(f"ground truth: {truth_label(truth_preset, seed)}")
    click.echo(format_summary(result.summary, prediction_error_rows(result.jobs, result.summary)))
    click.echo(f"results: {', '.join(str(p) for p in paths.values())}")
    click.echo(table_format_note(paths["jobs"].suffix, fmt))
    if result.summary["jobs_completed"] == 0:
        raise click.ClickException(
            f"no job completed ({result.summary['jobs_rejected']} rejected, "
            f"{result.summary['jobs_killed']} killed): see the 'reason' column of {paths['jobs']}; "
            "check the power cap, the platform size and --max-jobs"
        )


def prediction_error_rows(jobs: Any, summary: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows of the decisions' prediction errors, median / mean ``|predicted / actual -
    1|`` in % over the completed jobs that had a prediction
    (:func:`energysched.store.derived_metrics`); none when no decision had one."""
    from energysched.store import derived_metrics

    got = derived_metrics(jobs, summary)
    n = got.get("n_predicted", 0)
    if not n:
        return []
    completed = max(summary.get("jobs_completed", 0), 1)
    rows = [
        (
            "runtime error median / mean",
            f"{got['mdape_runtime'] * 100:,.0f} / {got['mape_runtime'] * 100:,.0f} % "
            f"({n} of {completed} completed jobs predicted, {n / completed * 100:.0f} %)",
        )
    ]
    if got.get("mdape_energy") == got.get("mdape_energy"):  # not NaN
        rows.append(
            (
                "energy error median / mean",
                f"{got['mdape_energy'] * 100:,.0f} / {got['mape_energy'] * 100:,.0f} %",
            )
        )
    return rows


def table_format_note(suffix: str, fmt: str) -> str:
    """The line naming the jobs-table format and why it was chosen."""
    if suffix == ".parquet":
        why = (
            "--format parquet" if fmt == "parquet" else "pyarrow is installed; --format csv for CSV"
        )
        return f"jobs table format: Parquet ({why})"
    why = (
        "--format csv"
        if fmt == "csv"
        else "pyarrow is not installed; pip install pyarrow for Parquet"
    )
    return f"jobs table format: CSV ({why})"


def register(main: click.Group, groups: dict[str, click.Group]) -> None:
    main.add_command(run_command)
