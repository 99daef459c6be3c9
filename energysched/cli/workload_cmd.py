"""``energysched workload describe``: a trace's applications and their hidden ground truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from energysched.errors import ConfigError, TraceFormatError


def _load_platform(spec: str, trace: Any) -> Any:
    from simulator.platform import load_platform, platform_from_trace

    if spec == "trace":
        return platform_from_trace(trace)
    return load_platform(spec)


def _fmt_list(values: np.ndarray, digits: int = 2) -> str:
    return "/".join(f"{v:.{digits}f}" if np.isfinite(v) else "-" for v in values)


def format_description(
    table: pd.DataFrame, *, top: int, platform: Any, preset: Any, trace_name: str, jobs: int
) -> str:
    """Human-readable text of a :func:`workloads.applications.describe_applications` table."""
    lines = [
        f"trace {trace_name!r}: {jobs} jobs, {len(table)} applications",
        platform.describe(),
        f"preset {preset.name!r}: {preset.description}",
        "",
        "kinds: "
        + ", ".join(f"{k} {n}" for k, n in table["kind"].value_counts().sort_index().items()),
    ]
    err = table["calib_err_max"].to_numpy(dtype=float)
    finite = err[np.isfinite(err)]
    lines.append(
        "calibration error (max relative, recorded size at Fmax): "
        + (f"{finite.max():.2e} over {finite.size} applications" if finite.size else "n/a")
    )
    for col, label in (("A", "A"), ("sigma", "sigma"), ("alpha", "alpha")):
        v = table[col].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if v.size:
            q = np.quantile(v, [0.0, 0.25, 0.5, 0.75, 1.0])
            lines.append(f"{label:>6} min/q1/median/q3/max: {_fmt_list(q)}")
    fopt = table["fopt_ghz"].value_counts().sort_index()
    lines.append(
        "energy-optimal frequency (GHz: applications): "
        + ", ".join(f"{f:g}: {n}" for f, n in fopt.items())
    )
    speed_cols = [c for c in table.columns if c.startswith("speedup_n")]
    tf_cols = [c for c in table.columns if c.startswith("tfactor_")]
    sizes = "/".join(c.removeprefix("speedup_n") for c in speed_cols)
    freqs = "/".join(c.removeprefix("tfactor_").removesuffix("ghz") for c in tf_cols)
    shown = table.sort_values(["jobs", "application"], ascending=[False, True]).head(top)
    lines += [
        "",
        f"top {len(shown)} applications by jobs; S(n) at n = {sizes}; "
        f"T(f)/T(Fmax) at f = {freqs} GHz (median size)",
        f"{'app':>7} {'kind':<7} {'jobs':>5} {'n_med':>6} {'A':>8} {'sigma':>5} {'alpha':>5} "
        f"{'Ps_w':>6} {'Pd_w':>6} {'speedup':<26} {'runtime factor':<30} {'fopt':>5} {'calib_err':>9}",
    ]
    for r in shown.to_dict("records"):
        lines.append(
            f"{r['application']:>7} {r['kind']:<7} {r['jobs']:>5} {r['median_nodes']:>6.0f} "
            f"{r['A']:>8.1f} {r['sigma']:>5.2f} {r['alpha']:>5.2f} {r['pstatic_w']:>6.1f} "
            f"{r['pdyn_w']:>6.1f} "
            f"{_fmt_list(np.array([r[c] for c in speed_cols]), 1):<26} "
            f"{_fmt_list(np.array([r[c] for c in tf_cols])):<30} "
            f"{r['fopt_ghz']:>5.2f} {r['calib_err_max']:>9.1e}"
        )
    return "\n".join(lines)


@click.command("describe")
@click.option(
    "--trace",
    "trace_path",
    required=True,
    type=str,
    help="SWF trace (.swf or .swf.gz); it is cleaned as for a replay.",
)
@click.option("--preset", default="npb-mix", show_default=True, help="Ground-truth preset.")
@click.option(
    "--platform",
    "platform_spec",
    default="trace",
    show_default=True,
    help="Platform TOML file, builtin:hybrid-128x16 (bundled), or 'trace' for a homogeneous platform from the trace header.",
)
@click.option(
    "--seed", default=0, show_default=True, type=int, help="Seed of the hidden parameters."
)
@click.option(
    "--grouping",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "executable", "user-size"]),
    help="How jobs are grouped into applications.",
)
@click.option(
    "--top", default=20, show_default=True, type=click.IntRange(min=0), help="Rows to show."
)
@click.option(
    "--csv",
    "csv_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the full per-application table to this CSV file.",
)
def describe_cmd(
    trace_path: Path,
    preset: str,
    platform_spec: str,
    seed: int,
    grouping: str,
    top: int,
    csv_path: Path | None,
) -> None:
    """Print a trace's applications: hidden parameters, true scaling and DVFS curves."""
    from workloads.applications import assign_ground_truth, describe_applications
    from workloads.cleaning import clean_trace
    from workloads.presets import get_preset
    from workloads.swf import read_swf

    try:
        trace = read_swf(trace_path)
        trace, _ = clean_trace(trace)
        platform = _load_platform(platform_spec, trace)
        spec = get_preset(preset)
        truth = assign_ground_truth(trace, platform, preset=spec, seed=seed, grouping=grouping)
    except (TraceFormatError, ConfigError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    table = describe_applications(truth, platform)
    click.echo(
        format_description(
            table, top=top, platform=platform, preset=spec, trace_name=trace.name, jobs=len(trace)
        )
    )
    if csv_path is not None:
        table.to_csv(csv_path, index=False)
        click.echo(f"wrote {csv_path}")


def register(main: click.Group, groups: dict[str, Any]) -> None:
    """Add ``describe`` to the ``workload`` group."""
    groups["workload"].add_command(describe_cmd)
