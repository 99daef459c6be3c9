"""``energysched experiment run|validate``, ``energysched report`` and ``energysched demo``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from energysched.cpus import usable_cpus
from energysched.errors import EnergySchedError


def _executor_options(func: Any) -> Any:
    for flag, what in (
        ("--tls-key", "Private key of --tls-cert (if not in the same file)."),
        ("--tls-cert", "Client certificate (PEM) for a tls:// scheduler."),
        ("--tls-ca-file", "CA certificate (PEM) that signed the scheduler's certificate."),
    ):
        func = click.option(
            flag,
            flag.removeprefix("--").replace("-", "_"),
            type=click.Path(exists=True, dir_okay=False),
            default=None,
            help=what,
        )(func)
    func = click.option(
        "--run-timeout",
        "run_timeout",
        type=click.FloatRange(min=0, min_open=True, max=1e9),
        default=None,
        metavar="SECONDS",
        help="Stop a run that takes longer than this and record it as failed (local workers).",
    )(func)
    func = click.option(
        "--dask-local",
        "dask_local",
        type=click.IntRange(min=1),
        default=None,
        help="Start a local Dask cluster (127.0.0.1 only, TLS with a throw-away certificate) with N worker processes; prints its dashboard link.",
    )(func)
    func = click.option(
        "--scheduler",
        default=None,
        metavar="tls://HOST:PORT",
        help="Send the runs to an existing Dask distributed scheduler (tls:// with --tls-* certificates, or tcp:// on a trusted network).",
    )(func)
    func = click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        help=(
            "Local worker processes (default: one per CPU this process may use, as its "
            "CPU affinity and cgroup quota allow; 1 runs in this process)."
        ),
    )(func)
    return func


def _quiet_dask() -> None:
    """Dask sets its loggers to INFO when imported (about 30 lines per local cluster): WARNING unless -v."""
    import logging

    try:
        import distributed  # noqa: F401  (configures its loggers on import)
    except ImportError:
        return
    context = click.get_current_context(silent=True)
    verbose = context.find_root().params.get("verbose", 0) if context is not None else 0
    if not verbose:
        for name in ("distributed", "bokeh", "tornado"):
            logging.getLogger(name).setLevel(logging.WARNING)


def _make_executor(
    workers: int | None,
    scheduler: str | None,
    dask_local: int | None,
    run_timeout: float | None = None,
    tls: dict[str, str | None] | None = None,
) -> Any:
    from energysched.sweep import DaskExecutor, make_executor

    if scheduler is not None or dask_local is not None:
        _quiet_dask()
    executor = make_executor(
        workers=workers,
        scheduler=scheduler,
        dask_local=dask_local,
        run_timeout_s=run_timeout,
        tls=tls,
    )
    if isinstance(executor, DaskExecutor):
        click.echo(f"Dask dashboard: {executor.dashboard_link}", err=True)
    return executor


def _load(file: Path) -> Any:
    """Load experiment FILE with its folder importable (``module:Class`` plug-ins saved next to it)."""
    from energysched.cli.importpath import make_importable
    from energysched.config import load_experiment

    make_importable(file.parent)
    return load_experiment(file)


def ground_truth_warnings(spec: Any, tasks: list[Any]) -> list[str]:
    """One warning per predictor-driven policy of an experiment whose file opts out of
    the ground truth (``ground_truth = "none"``; without the key every run gets ``npb-mix``)."""
    if spec.ground_truth is not None:
        return []
    driven = sorted({t.policy for t in tasks if t.predictor_spec is not None})
    return [
        f'warning: policy {name!r} is driven by a predictor but the file sets ground_truth = "none": '
        "every job keeps its recorded runtime and the platform's power whatever node count or "
        "frequency the policy picks, so it cannot change energy; remove that line (every run "
        'then gets preset "npb-mix") or name a preset (see docs/reference/experiment-file.md)'
        for name in driven
    ]


def _tables_format(out: Path, fmt: str) -> str:
    from energysched.cli.run_cmd import table_format_note

    suffix = ".parquet" if (out / "summaries.parquet").exists() else ".csv"
    return table_format_note(suffix, fmt).replace("jobs table format", "tables format")


def _print_sweep(summary: Any) -> None:
    click.echo(
        f"{summary.total} runs: {len(summary.completed)} ran, {len(summary.skipped)} already finished, {len(summary.failed)} failed ({summary.elapsed_s:.1f} s)"
    )
    if summary.failed:
        click.echo("failed runs (tracebacks in FAILED/RUN_ID/error.txt):", err=True)
        for run_id in summary.failed:
            click.echo(f"  {run_id}: {summary.out_dir / 'failed' / run_id / 'error.txt'}", err=True)


def _print_headline(report: Any) -> None:
    from energysched.reporting import _headline_display, headline_sentences

    if report.headline is None or report.headline.empty:
        return
    cols, rows = _headline_display(report.headline)
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) for i, c in enumerate(cols)]
    shown = (
        "setting",
        "configuration",
        "energy saved vs baseline",
        "energy per completed job (kWh)",
        "jobs completed (change)",
        "mean wait (change)",
        "mean BSLD (change)",
        "flag",
    )
    keep = [cols.index(c) for c in shown]
    click.echo("  ".join(str(cols[i]).ljust(widths[i]) for i in keep))
    for r in rows:
        click.echo("  ".join(str(r[i]).ljust(widths[i]) for i in keep))
    for sentence in headline_sentences(report.headline):
        click.echo(sentence)


@click.group("experiment")
def experiment() -> None:
    """Run experiment files (sweeps of traces x platforms x policies x predictors x seeds)."""


@experiment.command("run")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Results directory [default: results/NAME, NAME from the file].",
)
@_executor_options
@click.option(
    "--report/--no-report",
    default=True,
    show_default=True,
    help="Write report.html and report.md when the sweep ends.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "parquet", "csv"]),
    default="auto",
    show_default=True,
    help="Table format (auto: Parquet when pyarrow is installed).",
)
@click.option(
    "--force", is_flag=True, help="Run every run again, also those that finished already."
)
def run_cmd(
    file: Path,
    out_dir: Path | None,
    workers: int | None,
    scheduler: str | None,
    dask_local: int | None,
    run_timeout: float | None,
    tls_ca_file: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    report: bool,
    fmt: str,
    force: bool,
) -> None:
    """Run every unfinished run of experiment FILE; finished runs are skipped, failed ones retried."""
    from energysched.sweep import plan_runs, run_sweep

    try:
        tls = {"tls_ca_file": tls_ca_file, "tls_cert": tls_cert, "tls_key": tls_key}
        executor = _make_executor(workers, scheduler, dask_local, run_timeout, tls)
        executor.start()  # local workers import the run stack while the file is checked
        try:
            spec = _load(file)
            for warning in ground_truth_warnings(spec, plan_runs(spec)):
                click.echo(warning, err=True)
            out = out_dir or Path("results") / spec.name
            summary = run_sweep(file, out, executor=executor, fmt=fmt, force=force)
        finally:
            executor.close()
        _print_sweep(summary)
        click.echo(f"results: {out}")
        click.echo(_tables_format(out, fmt))
        if report and (len(summary.completed) + len(summary.skipped)) > 0:
            from energysched.reporting import make_report  # matplotlib: only for a report

            rep = make_report(out)
            _print_headline(rep)
            click.echo(f"report: {rep.html}")
    except EnergySchedError as exc:
        raise click.ClickException(str(exc)) from None
    if summary.failed:
        click.echo(
            f"{len(summary.failed)} of {summary.total} runs failed; see {out / 'failures.csv'}",
            err=True,
        )
        raise SystemExit(1)


@experiment.command("validate")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--list", "list_runs", is_flag=True, help="List the planned run ids.")
def validate_cmd(file: Path, list_runs: bool) -> None:
    """Check experiment FILE and print how many runs it plans."""
    from energysched.sweep import plan_runs

    try:
        spec = _load(file)
    except EnergySchedError as exc:
        raise click.ClickException(str(exc)) from None
    tasks = plan_runs(spec)
    for warning in ground_truth_warnings(spec, tasks):
        click.echo(warning, err=True)
    click.echo(
        f"{file}: OK, {len(tasks)} runs ({len(spec.traces)} traces x {len(spec.platforms)} platforms x {len({(t.policy, t.predictor) for t in tasks})} configurations x {len(spec.seeds.values())} seeds)"
    )
    if list_runs:
        for t in tasks:
            click.echo(f"  {t.run_id}  seed={t.seed}")


@click.command("report")
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--run",
    "run_id",
    default=None,
    metavar="ID",
    help="Run whose power timeline is plotted [default: the biggest saver on the first trace].",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to write report.html/report.md [default: RESULTS_DIR].",
)
@click.option(
    "--completed-tolerance",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Flag (and keep out of the headline sentence) configurations that completed more "
    "than this many percent fewer jobs than the baseline.",
)
def report_cmd(
    results_dir: Path, run_id: str | None, out_dir: Path | None, completed_tolerance: float
) -> None:
    """Write the HTML report and its Markdown twin for a results directory."""
    from energysched.reporting import make_report

    try:
        rep = make_report(
            results_dir,
            run_id=run_id,
            out_dir=out_dir,
            completed_tolerance=completed_tolerance / 100.0,
        )
    except EnergySchedError as exc:
        raise click.ClickException(str(exc)) from None
    _print_headline(rep)
    click.echo(f"report: {rep.html}")
    click.echo(f"markdown: {rep.markdown}")


@click.command("demo")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("energysched-demo"),
    show_default=True,
    help="Results directory.",
)
@click.option(
    "--quick",
    is_flag=True,
    help="A few hundred jobs per trace and one seed (seconds instead of minutes).",
)
@_executor_options
def demo_cmd(
    out_dir: Path,
    quick: bool,
    workers: int | None,
    scheduler: str | None,
    dask_local: int | None,
    run_timeout: float | None,
    tls_ca_file: str | None,
    tls_cert: str | None,
    tls_key: str | None,
) -> None:
    """Run the built-in default experiment and write its report (the first command to try)."""
    from energysched.demo import run_demo

    t0 = time.perf_counter()
    if workers is None and scheduler is None and dask_local is None:
        workers = usable_cpus()
    try:
        tls = {"tls_ca_file": tls_ca_file, "tls_cert": tls_cert, "tls_key": tls_key}
        executor = _make_executor(workers, scheduler, dask_local, run_timeout, tls)
        try:
            summary, rep = run_demo(out_dir, quick=quick, executor=executor)
        finally:
            executor.close()
    except EnergySchedError as exc:
        raise click.ClickException(str(exc)) from None
    _print_sweep(summary)
    _print_headline(rep)
    click.echo(f"demo finished in {time.perf_counter() - t0:.0f} s")
    click.echo(f"report: {rep.html.resolve()}")
    click.echo(f"markdown: {rep.markdown.resolve()}")


def register(main: click.Group, groups: dict[str, Any]) -> None:
    """Add ``experiment``, ``report`` and ``demo`` to the top-level command."""
    main.add_command(experiment)
    main.add_command(report_cmd)
    main.add_command(demo_cmd)
