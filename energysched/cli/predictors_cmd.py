"""``energysched predictors list`` and ``energysched predictors evaluate``."""

from __future__ import annotations

import json
import logging
from typing import Any

import click


class _WarningCounter(logging.Handler):
    """Counts the library's warnings instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


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
        type=str,
        help="Platform TOML file or builtin:hybrid-128x16 (default: from the trace header).",
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
        "--out",
        "output",
        type=click.Path(dir_okay=False),
        default=None,
        help="Also write the table (.csv or .parquet).",
    )
    @click.option(  # the option's former name, kept working
        "--output", "output", type=click.Path(dir_okay=False), default=None, hidden=True
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
        given_platform = None
        if platform_path:
            try:
                given_platform = load_platform(platform_path)
            except ConfigError as exc:
                raise click.BadParameter(str(exc), param_hint="--platform") from exc
        tables = []
        for trace_path in trace_paths:
            trace = read_swf(trace_path)
            platform: Any = given_platform or platform_from_trace(trace)
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

    @group.command("validate")
    @click.option(
        "--corpus",
        default="builtin",
        show_default=True,
        help="Corpus directory (scaling.csv, dvfs.csv, SOURCES.md) or 'builtin'.",
    )
    @click.option(
        "--predictors",
        "names",
        default="amdahl,power-law,adept,auto",
        show_default=True,
        help="Comma-separated node-count predictor specs (X+Y composites score X).",
    )
    @click.option(
        "--k",
        "ks",
        default="3,4",
        show_default=True,
        help="Comma-separated numbers of smallest sizes to fit on.",
    )
    @click.option(
        "--max-factor",
        type=float,
        default=4.0,
        show_default=True,
        help="Predict sizes up to this many times the largest fitted size.",
    )
    @click.option(
        "--dvfs-predictors",
        default="fluid,inverse-clock",
        show_default=True,
        help="Comma-separated DVFS predictor names for the DVFS backtest.",
    )
    @click.option(
        "--clocks",
        default="2,3",
        show_default=True,
        help="Comma-separated numbers of clocks to calibrate on (DVFS backtest).",
    )
    @click.option(
        "--out",
        type=click.Path(dir_okay=False),
        default=None,
        help="Also write every strong-scaling prediction (.csv).",
    )
    def validate_cmd(
        corpus: str,
        names: str,
        ks: str,
        max_factor: float,
        dvfs_predictors: str,
        clocks: str,
        out: str | None,
    ) -> None:
        """Backtest predictors on measured strong-scaling curves and DVFS sweeps."""
        from energysched.errors import ConfigError, TraceFormatError
        from predictors import validation as v

        def ints(text: str, option: str) -> tuple[int, ...]:
            try:
                values = tuple(int(x) for x in text.split(",") if x.strip())
            except ValueError:
                raise click.BadParameter(
                    f"{text!r} is not a list of integers", param_hint=option
                ) from None
            if not values or min(values) < 2:
                raise click.BadParameter("give integers >= 2, e.g. 3,4", param_hint=option)
            return values

        k_values = ints(ks, "--k")
        clock_values = ints(clocks, "--clocks")
        specs = [s.strip() for s in names.split(",") if s.strip()]
        try:
            data = v.load_corpus(corpus)
        except TraceFormatError as exc:
            raise click.ClickException(str(exc)) from None
        try:
            results = v.backtest_scaling(data.scaling, specs, k_values, max_factor)
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="--predictors") from None
        n_curves = data.scaling["curve_id"].nunique()
        click.echo(
            f"corpus {data.directory}: {n_curves} strong-scaling curves, "
            f"{data.dvfs['curve_id'].nunique()} DVFS sweeps"
        )
        click.echo(
            f"strong scaling: fit on the k = {','.join(map(str, k_values))} smallest sizes, "
            f"predict larger sizes up to {max_factor:g}x the largest fitted; "
            "accuracy = 100 - 100 |pred/actual - 1| (%)"
        )
        if results.empty:
            click.echo("no curve has enough sizes for these k")
        else:
            fmt = {"float_format": lambda x: f"{x:.1f}", "index": False}
            click.echo(v.summarize_accuracy(results).to_string(**fmt))
            click.echo("")
            click.echo("warnings (warned = the predictor marks the prediction not reliable):")
            click.echo(v.warning_table(results).to_string(**fmt))
            chosen = results[results["chosen"].astype(str) != ""]
            if len(chosen):
                click.echo("")
                counts = (
                    chosen.drop_duplicates(["predictor", "k", "curve_id"])
                    .groupby(["predictor", "chosen"])
                    .size()
                )
                text = ", ".join(f"{p} -> {c}: {m}" for (p, c), m in counts.items())
                click.echo(f"models chosen per (curve, k): {text}")
        click.echo("")
        if data.dvfs.empty:
            click.echo("DVFS: the corpus has no dvfs.csv")
        elif not v.dvfs_backtest_available():
            click.echo(
                "DVFS: the DVFS backtest (predictors.validation_dvfs) is not available in "
                "this version; only the strong-scaling part was run"
            )
        else:
            import pandas as pd

            dvfs_specs = [s.strip() for s in dvfs_predictors.split(",") if s.strip()]
            # the calibrations' warnings (anomalous alpha, ...) are counted, not printed
            # one by one: they are part of what is validated (unreliable curves)
            counter = _WarningCounter()
            lib_log = logging.getLogger("predictors")
            propagate = lib_log.propagate
            lib_log.addHandler(counter)
            lib_log.propagate = False
            try:
                parts = [v.backtest_dvfs(data.dvfs, dvfs_specs, c) for c in clock_values]
            except ConfigError as exc:
                raise click.BadParameter(str(exc), param_hint="--dvfs-predictors") from None
            finally:
                lib_log.removeHandler(counter)
                lib_log.propagate = propagate
            summary = v.summarize_dvfs(pd.concat(parts, ignore_index=True))
            click.echo(
                f"DVFS: calibrate on {','.join(map(str, clock_values))} clocks, predict the others"
            )
            click.echo(summary.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
            if counter.count:
                click.echo(
                    f"({counter.count} calibration warnings were logged during the DVFS backtest)"
                )
        if out:
            results.to_csv(out, index=False)
            click.echo(f"wrote {len(results)} predictions to {out}")
