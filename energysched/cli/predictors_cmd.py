"""``energysched predictors list`` and ``energysched predictors evaluate``."""

from __future__ import annotations

import json
from typing import Any

import click


def register(main: click.Group, groups: dict[str, click.Group]) -> None:
    """Add ``list`` and ``evaluate`` to the ``predictors`` group."""
    group = groups["predictors"]

    @group.command("list")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def list_cmd(as_json: bool) -> None:
        """Built-in, composite and plug-in predictors with their parameters."""
        from predictors.registry import list_predictors

        items = list_predictors()
        if as_json:
            click.echo(json.dumps(items, indent=2, default=repr))
            return
        width = max(len(i["name"]) for i in items)
        for item in items:
            params = ", ".join(f"{k}={v!r}" for k, v in item["params"].items())
            click.echo(f"{item['name']:<{width}}  [{item['source']}] {item['doc']}")
            if params:
                click.echo(f"{'':<{width}}    params: {params}")

    @group.command("evaluate")
    @click.option(
        "--trace",
        "trace_paths",
        required=True,
        multiple=True,
        type=str,
        help="SWF trace (.swf or .swf.gz); repeat for several traces.",
    )
    @click.option(
        "--preset",
        default="npb-mix",
        show_default=True,
        help="Workload preset of the ground truth.",
    )
    @click.option(
        "--predictors",
        "names",
        default="requested,amdahl,lbm,dvfs-naive,dvfs-node-type,dvfs-per-app,fluid,online-node-type,online-generic,amdahl+fluid,adept+fluid,oracle",
        show_default=True,
        help="Comma-separated predictor specs (registry names, X+Y composites, module:Class).",
    )
    @click.option(
        "--platform",
        "platform_path",
        default=None,
        type=click.Path(exists=True, dir_okay=False),
        help="Platform TOML (default: from the trace header).",
    )
    @click.option(
        "--max-jobs", type=int, default=None, help="Evaluate only the first N usable jobs."
    )
    @click.option("--seed", type=int, default=0, show_default=True)
    @click.option(
        "--noise", type=float, default=0.02, show_default=True, help="Relative measurement noise."
    )
    @click.option(
        "--observe",
        type=click.Choice(["alternate", "fmax"]),
        default="alternate",
        show_default=True,
        help="Frequency of the observed runs.",
    )
    @click.option(
        "--job-length",
        "job_length",
        default=None,
        help="Job-length predictor of the predictors' per-job scale (requested, "
        "user-history, application-history, combined; default: combined).",
    )
    @click.option(
        "--output",
        type=click.Path(dir_okay=False),
        default=None,
        help="Also write the table (.csv or .parquet).",
    )
    def evaluate_cmd(
        trace_paths: tuple[str, ...],
        preset: str,
        names: str,
        platform_path: str | None,
        max_jobs: int | None,
        seed: int,
        noise: float,
        observe: str,
        job_length: str | None,
        output: str | None,
    ) -> None:
        """Replay a trace's observation stream; errors of time, power, energy per predictor.

        Per trace: mean (and, for time, median) absolute errors in % of each
        predictor, then the median and mean errors in % of the job-length
        predictors (each job predicted at its submit from the jobs finished by then).
        """
        import pandas as pd

        from energysched.errors import ConfigError
        from predictors.evaluate import (
            evaluate_predictors,
            format_job_length_table,
            format_mape_table,
            job_length_table,
        )
        from predictors.job_length import DEFAULT_JOB_LENGTH, get_job_length_predictor
        from predictors.registry import get_predictor
        from simulator.platform import load_platform, platform_from_trace
        from workloads.applications import assign_ground_truth
        from workloads.swf import read_swf

        specs = [s.strip() for s in names.split(",") if s.strip()]
        usable: list[str] = []
        for spec in specs:  # fail early on unknown names; skip built-ins not available yet
            try:
                get_predictor(spec, **({"truth": None} if spec == "oracle" else {}))
            except Exception as exc:
                if "not available" in str(exc):
                    click.echo(f"skipping {spec}: {exc}", err=True)
                    continue
                raise click.BadParameter(str(exc), param_hint="--predictors") from exc
            usable.append(spec)
        job_length = job_length or DEFAULT_JOB_LENGTH
        try:
            get_job_length_predictor(job_length)
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="--job-length") from exc
        tables = []
        for trace_path in trace_paths:
            trace = read_swf(trace_path)
            platform: Any = (
                load_platform(platform_path) if platform_path else platform_from_trace(trace)
            )
            truth = assign_ground_truth(trace, platform, preset=preset, seed=seed, noise=noise)
            one = evaluate_predictors(
                trace,
                platform,
                truth,
                usable,
                seed=seed,
                noise=noise,
                max_jobs=max_jobs,
                observe=observe,
                job_length=job_length,
            )
            click.echo(
                f"trace {trace_path}, preset {preset}, seed {seed}, noise {noise}, "
                f"observe {observe}, job length {job_length}"
            )
            click.echo("errors in %: mean absolute, and median absolute for time\n")
            click.echo(format_mape_table(one))
            lengths = job_length_table(trace, truth.application, max_jobs=max_jobs)
            click.echo(f"job-length predictors on {trace_path}\n")
            click.echo(format_job_length_table(lengths))
            tables.append(one.assign(trace=trace_path))
        table = pd.concat(tables, ignore_index=True)
        if output:
            if output.endswith(".parquet"):
                table.to_parquet(output, index=False)
            else:
                table.to_csv(output, index=False)
