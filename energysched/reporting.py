"""Reports: one self-contained HTML file and a Markdown twin from a results directory.

:func:`make_report` reads a results directory (:func:`energysched.store.load_results`)
and writes

* ``report.html``: every plot embedded as a base64 PNG, inline CSS, no
  script and no network access needed to view it;
* ``report.md`` with the PNGs in ``report_files/`` next to it;
* every figure also as SVG in ``report_files/`` (for papers; linked from
  the HTML captions).

Sections (HTML ids in brackets): headline table (``headline``), then the
figures of :data:`PLOTS` (drawn by :mod:`energysched.plots`): energy versus
makespan with the Pareto front (``pareto``), energy, makespan, mean wait and
bounded slowdown relative to the baseline (``relative``), waiting-time and
slowdown ECDFs (``waits``), platform power over time with a zoomed window
(``power``), utilisation and queue length over time (``activity``), a
Gantt-style schedule view (``schedule``), node-state energy breakdown
(``breakdown``), predictor error per trace (``predictor-error``), oracle
regret (``oracle-regret``), and, when a policy chose cores per node (hybrid
MPI+OpenMP jobs), the shares of cores per node and clocks chosen and the
chosen against the requested node counts (``chosen-configs``,
:func:`energysched.plots_hybrid.plot_chosen_configs`); a compact table of the metrics in MWh and hours
(``metrics``) and failed runs (``failures``).

A *configuration* is a policy with its predictor (``easy-min-energy-slack +
adept``); its numbers are means over the seeds (replicates) unless a plot
shows the spread.
"""

from __future__ import annotations

import base64
import html
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from energysched import plots
from energysched.figure_files import FigureBuilder, render_figures
from energysched.store import Results, load_results
from simulator.results import estimates_label as run_estimates

log = logging.getLogger(__name__)

#: Plot ids, in report order, with their titles.
PLOTS: dict[str, str] = {
    "pareto": "Energy versus makespan, with the Pareto front",
    "relative": "Energy, makespan, waiting time and slowdown relative to the baseline",
    "waits": "Waiting time and bounded slowdown: empirical distributions",
    "power": "Platform power over time, with a zoomed window",
    "activity": "Utilisation and queue length over time",
    "schedule": "Schedule view: jobs on nodes over time, coloured by CPU frequency",
    "breakdown": "Energy by node state",
    "predictor-error": "Predictor error per trace, and how it falls as observations accumulate",
    "oracle-regret": "Oracle regret: policy with a predictor versus the same policy with the oracle",
    "chosen-configs": "Configurations chosen: cores per node, clock and node count",
}

#: Figures drawn only when the runs call for them: the chosen configurations when
#: some policy ran jobs on fewer cores per node than others (hybrid MPI+OpenMP).
OPTIONAL_PLOTS = frozenset({"chosen-configs"})

#: Human names and units of the metrics in tables.
METRIC_LABELS: dict[str, str] = {
    "makespan_s": "makespan (s)",
    "energy_j": "energy (J)",
    "energy_kwh": "energy (kWh)",
    "energy_busy_j": "busy energy (J)",
    "energy_idle_j": "idle energy (J)",
    "energy_off_j": "off energy (J)",
    "energy_switching_j": "switching energy (J)",
    "energy_per_job_j": "energy per job (J)",
    "mean_power_w": "mean power (W)",
    "peak_power_w": "peak power (W)",
    "mean_wait_s": "mean wait (s)",
    "p95_wait_s": "95th pct wait (s)",
    "max_wait_s": "max wait (s)",
    "mean_bsld": "mean bounded slowdown",
    "utilisation": "utilisation",
    "edp_js": "energy-delay product (J s)",
    "jobs": "jobs",
    "jobs_completed": "jobs completed",
    "jobs_killed": "jobs killed",
    "jobs_rejected": "jobs rejected",
    "power_cap_violations": "power-cap violations",
    "mape_runtime": "runtime MAPE",
    "mape_energy": "energy MAPE",
    "mdape_runtime": "runtime median APE",
    "mdape_energy": "energy median APE",
    "energy_killed_j": "energy of killed jobs (J)",
    "energy_completed_jobs_j": "energy of completed jobs (J)",
    "energy_per_completed_job_j": "energy per completed job (J)",
    "jobs_completed_vs_baseline": "jobs completed / baseline",
    "n_predicted": "jobs predicted",
    "oracle_energy_regret": "oracle energy regret",
    "oracle_makespan_regret": "oracle makespan regret",
    "energy_vs_baseline": "energy / baseline",
    "makespan_vs_baseline": "makespan / baseline",
    "mean_wait_vs_baseline": "mean wait / baseline",
    "mean_bsld_vs_baseline": "mean BSLD / baseline",
}


@dataclass
class Report:
    """Paths of a written report and what it contains."""

    html: Path
    markdown: Path
    figures: dict[str, Path] = field(default_factory=dict)
    headline: pd.DataFrame | None = None
    power_run: str | None = None


# --------------------------------------------------------------------------- helpers


def config_label(policy: str, predictor: str | None) -> str:
    """``policy`` or ``policy + predictor``."""
    return policy if predictor in (None, "none", "") else f"{policy} + {predictor}"


def _with_config(table: pd.DataFrame) -> pd.DataFrame:
    table = table.copy()
    table["config"] = [
        config_label(p, q) for p, q in zip(table["policy"], table["predictor"], strict=True)
    ]
    table["setting"] = _settings(table)
    return table


def _settings(table: pd.DataFrame) -> list[str]:
    """``trace`` (or ``trace on platform`` when the experiment has several platforms)."""
    if table["platform"].nunique() > 1:
        return [f"{t} on {p}" for t, p in zip(table["trace"], table["platform"], strict=True)]
    return list(table["trace"])


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"{int(value):,}"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 1e6 or abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _pct(ratio: float) -> str:
    if ratio is None or not np.isfinite(ratio):
        return "n/a"
    return f"{(ratio - 1) * 100:+.1f}%"


# --------------------------------------------------------------------------- tables


#: Default tolerance of the completed-jobs check: a configuration that completed
#: more than this fraction fewer jobs than the baseline (same trace and seed) is
#: flagged and kept out of the headline sentence.
COMPLETED_TOLERANCE = 0.01


def headline_table(
    table: pd.DataFrame, baseline: str | None, *, completed_tolerance: float = COMPLETED_TOLERANCE
) -> pd.DataFrame:
    """Which policy saves how much energy at what cost in service and in work done.

    One row per setting (trace/platform) and configuration, means over seeds:
    energy (kWh), energy saving versus the baseline (% of its energy; positive
    = saves) with its min..max over the seeds, energy per completed job and
    energy of killed jobs (kWh), jobs completed and their change, makespan,
    mean wait and mean bounded slowdown (values and changes, %), jobs killed,
    and when the runs have predictions the mean and median absolute runtime
    error (%). Sorted by setting, then by saving (largest first).

    Flags: ``oracle`` (driven by the oracle predictor, which reads the hidden
    ground truth: a bound, not a policy one could run) and ``fewer_completed``
    (in some seed the configuration completed more than ``completed_tolerance``
    (a fraction) fewer jobs than the baseline: killed or rejected work stops
    drawing power, so its saving is not a saving on the same work); ``flag``
    says which, in words.
    """
    if not completed_tolerance >= 0:
        from energysched.errors import ConfigError

        raise ConfigError("completed_tolerance", f"must be >= 0, got {completed_tolerance!r}")
    t = _with_config(table)
    rows = []

    def col_mean(g: pd.DataFrame, name: str, scale: float = 1.0) -> float:
        return float(g[name].mean()) * scale if name in g else np.nan

    for (setting, config), g in t.groupby(["setting", "config"], sort=False):
        saving = (1 - g["energy_vs_baseline"]) * 100
        is_base = bool((g["policy"] == baseline).all() and (g["predictor"] == "none").all())
        completed_ratio = (
            g["jobs_completed_vs_baseline"].to_numpy(dtype=float)
            if "jobs_completed_vs_baseline" in g
            else np.full(len(g), np.nan)
        )
        fewer = bool(
            not is_base
            and np.isfinite(completed_ratio).any()
            and np.nanmin(completed_ratio) < 1 - completed_tolerance
        )
        oracle = bool((g["predictor_spec"] == "oracle").all()) if "predictor_spec" in g else False
        flags = []
        if oracle:
            flags.append("oracle (reads the ground truth)")
        if fewer:
            flags.append(
                f"completed {(1 - np.nanmean(completed_ratio)) * 100:.1f}% fewer jobs than the "
                f"baseline (tolerance {completed_tolerance * 100:g}%)"
            )
        rows.append(
            {
                "setting": setting,
                "configuration": config,
                "baseline": is_base,
                "oracle": oracle,
                "fewer_completed": fewer,
                "flag": "; ".join(flags),
                "energy_kwh": g["energy_j"].mean() / 3.6e6,
                "energy_saving_pct": saving.mean(),
                "energy_saving_median_pct": saving.median(),
                "energy_saving_min_pct": saving.min(),
                "energy_saving_max_pct": saving.max(),
                "energy_per_completed_job_kwh": col_mean(
                    g, "energy_per_completed_job_j", 1 / 3.6e6
                ),
                "energy_killed_kwh": col_mean(g, "energy_killed_j", 1 / 3.6e6),
                "jobs_completed": col_mean(g, "jobs_completed"),
                "jobs_completed_change_pct": (np.nanmean(completed_ratio) - 1) * 100
                if np.isfinite(completed_ratio).any()
                else np.nan,
                "makespan_change_pct": (g["makespan_vs_baseline"].mean() - 1) * 100,
                "mean_wait_s": col_mean(g, "mean_wait_s"),
                "mean_wait_change_pct": (g["mean_wait_vs_baseline"].mean() - 1) * 100,
                "mean_bsld": col_mean(g, "mean_bsld"),
                "mean_bsld_change_pct": (g["mean_bsld_vs_baseline"].mean() - 1) * 100,
                "jobs_killed": col_mean(g, "jobs_killed"),
                "mape_runtime_pct": col_mean(g, "mape_runtime", 100.0),
                "mdape_runtime_pct": col_mean(g, "mdape_runtime", 100.0),
                "seeds": len(g),
            }
        )
    head = pd.DataFrame(rows)
    if head.empty:
        return head
    order = {s: i for i, s in enumerate(dict.fromkeys(t["setting"]))}
    head["_o"] = head["setting"].map(order)
    head = head.sort_values(["_o", "energy_saving_pct"], ascending=[True, False], kind="stable")
    return head.drop(columns="_o").reset_index(drop=True)


HEADLINE_NOTE = (
    "Savings and changes are relative to the baseline run of the same trace and seed, averaged "
    "over seeds (the median beside); positive saving = less energy. Energy per completed job is "
    "the platform's whole energy over the jobs that completed; energy of killed jobs is what "
    "their nodes drew until the kill. Flagged configurations (oracle-driven, or completing fewer "
    "jobs than the baseline) are not named in the sentence above the table. Runtime error: "
    "|predicted / actual - 1| of the policy's decisions over the completed jobs, mean / median."
)

#: Columns of the displayed headline table (:func:`_headline_display`).
HEADLINE_COLUMNS = [
    "setting",
    "configuration",
    "energy (kWh)",
    "energy saved vs baseline",
    "saved, median and min..max over seeds",
    "energy per completed job (kWh)",
    "energy of killed jobs (kWh)",
    "jobs completed (change)",
    "makespan change",
    "mean wait (change)",
    "mean BSLD (change)",
    "jobs killed",
    "runtime error, mean / median",
    "flag",
]


def _pct_or_na(value: float, fmt: str = "{:+.1f}%") -> str:
    return "n/a" if not np.isfinite(value) else fmt.format(value)


def _headline_display(head: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    cols = list(HEADLINE_COLUMNS)
    rows = []
    for r in head.itertuples(index=False):
        name = f"{r.configuration} (baseline)" if r.baseline else r.configuration
        spread = (
            "n/a"
            if not np.isfinite(r.energy_saving_min_pct)
            else f"{r.energy_saving_median_pct:+.1f}% ({r.energy_saving_min_pct:+.1f}..{r.energy_saving_max_pct:+.1f}%)"
        )
        error = (
            "n/a"
            if not np.isfinite(r.mape_runtime_pct)
            else f"{r.mape_runtime_pct:,.0f}% / {r.mdape_runtime_pct:,.0f}%"
        )
        rows.append(
            [
                r.setting,
                name,
                _fmt(r.energy_kwh),
                _pct_or_na(r.energy_saving_pct),
                spread,
                _fmt(r.energy_per_completed_job_kwh),
                _fmt(r.energy_killed_kwh),
                f"{_fmt(r.jobs_completed)} ({_pct_or_na(r.jobs_completed_change_pct)})",
                _pct_or_na(r.makespan_change_pct),
                f"{_fmt(r.mean_wait_s)} s ({_pct_or_na(r.mean_wait_change_pct)})",
                f"{_fmt(r.mean_bsld)} ({_pct_or_na(r.mean_bsld_change_pct)})",
                _fmt(r.jobs_killed),
                error,
                r.flag or "",
            ]
        )
    return cols, rows


def _change_phrase(change_pct: float, what: str) -> str:
    """``+12.3% makespan``, or ``makespan n/a (the baseline's is 0)`` when the
    ratio to the baseline is undefined."""
    if np.isfinite(change_pct):
        return f"{change_pct:+.1f}% {what}"
    return f"{what} n/a (the baseline's is 0)"


def headline_sentences(head: pd.DataFrame) -> list[str]:
    """Per setting: the best configuration that is neither the baseline, nor
    oracle-driven, nor short of completed jobs, with its service cost next to
    its saving; then the configurations left out and why."""
    out = []
    for setting, g in head.groupby("setting", sort=False):
        cand = g[~g["baseline"] & np.isfinite(g["energy_saving_pct"])]
        eligible = cand[~cand["oracle"] & ~cand["fewer_completed"]]
        if len(eligible):
            best = eligible.iloc[0]
            saving, median = best["energy_saving_pct"], best["energy_saving_median_pct"]
            name = best["configuration"]
            if saving >= 0:
                claim = (
                    f"On {setting}, the best non-oracle configuration that completes as many jobs "
                    f"as the baseline is {name}: it saves {saving:.1f}% of the baseline's energy "
                    f"(median over seeds {median:.1f}%)"
                )
            else:  # the best one saves nothing: say so, not "saves -6.6%"
                claim = (
                    f"On {setting}, no non-oracle configuration that completes as many jobs as the "
                    f"baseline saves energy; the closest, {name}, uses {-saving:.1f}% more than "
                    f"the baseline (median over seeds {-median:.1f}% more)"
                )
            wait_s, wait_pct = best["mean_wait_s"], best["mean_wait_change_pct"]
            wait = (
                f"{wait_pct:+.1f}% mean wait ({wait_s:,.0f} s)"
                if np.isfinite(wait_pct)
                else f"a mean wait of {wait_s:,.0f} s (the baseline's is 0 s)"
            )
            out.append(
                f"{claim}, at {wait}, "
                f"{_change_phrase(best['mean_bsld_change_pct'], 'mean bounded slowdown')} and "
                f"{_change_phrase(best['makespan_change_pct'], 'makespan')}."
            )
        elif len(cand):
            out.append(
                f"On {setting}, no configuration other than the baseline is free of flags "
                "(oracle-driven or short of completed jobs)."
            )
        flagged = cand[cand["fewer_completed"]]
        for r in flagged.itertuples(index=False):
            out.append(
                f"On {setting}, {r.configuration} is left out of the headline: it {r.flag.split('; ')[-1]}"
                f" (its {r.energy_saving_pct:.1f}% 'saving' is partly work not done)."
            )
    return out


#: The metric table's columns: summary column -> (label with unit, divisor).
#: Energies in MWh, times in hours, fractions and errors in %.
COMPACT_METRICS: dict[str, tuple[str, float]] = {
    "energy_j": ("energy (MWh)", 3.6e9),
    "energy_busy_j": ("busy (MWh)", 3.6e9),
    "energy_idle_j": ("idle (MWh)", 3.6e9),
    "energy_switching_j": ("switching (MWh)", 3.6e9),
    "energy_off_j": ("off (MWh)", 3.6e9),
    "energy_per_job_j": ("energy per job (kWh)", 3.6e6),
    "makespan_s": ("makespan (h)", 3600.0),
    "mean_wait_s": ("mean wait (h)", 3600.0),
    "p95_wait_s": ("p95 wait (h)", 3600.0),
    "max_wait_s": ("max wait (h)", 3600.0),
    "mean_bsld": ("mean BSLD", 1.0),
    "utilisation": ("utilisation (%)", 0.01),
    "mean_power_w": ("mean power (kW)", 1000.0),
    "peak_power_w": ("peak power (kW)", 1000.0),
    "edp_js": ("EDP (MWh h)", 3.6e9 * 3600.0),
    "jobs_killed": ("jobs killed", 1.0),
    "jobs_rejected": ("jobs rejected", 1.0),
    "power_cap_violations": ("power-cap violations", 1.0),
    "mape_runtime": ("runtime MAPE (%)", 0.01),
    "mape_energy": ("energy MAPE (%)", 0.01),
    "oracle_energy_regret": ("oracle energy regret (%)", 0.01),
    "oracle_makespan_regret": ("oracle makespan regret (%)", 0.01),
}
#: Metrics the compact table shows through another column (energy_kwh is energy_j).
_SHOWN_AS = {"energy_kwh": "energy_j"}


#: the most kinds of warning the report lists (every run's ``run.json`` lists its own)
WARNING_KINDS_SHOWN = 20

_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def warnings_table(warnings: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The warnings the runs gave, one row per kind (the same text but for its
    numbers, e.g. the application a predictor warns about): an example, how many
    runs gave it, and of which configurations; most frequent first."""
    cols = ["warning (an example)", "runs", "configurations"]
    if warnings.empty:
        return cols, []
    table = warnings.assign(
        kind=warnings["warning"].map(lambda w: _NUMBER.sub("N", w)),
        config=[config_label(p, q) for p, q in zip(warnings["policy"], warnings["predictor"])],
    )
    rows = []
    for _, group in table.groupby("kind", sort=False):
        runs = group["run_id"].nunique()
        configs = ", ".join(dict.fromkeys(group["config"]))
        rows.append((runs, [group["warning"].iloc[0], str(runs), configs]))
    rows.sort(key=lambda r: -r[0])  # (stable: kinds with as many runs keep their order)
    return cols, [row for _, row in rows]


def compact_column(metric: str) -> str | None:
    """The compact table's column for ``metric``, or None when it has none."""
    metric = _SHOWN_AS.get(metric, metric)
    return metric if metric in COMPACT_METRICS else None


def metrics_table(table: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """The compact metric table: per setting and configuration, means over seeds, in
    the units of :data:`COMPACT_METRICS` (the experiment's ``metrics`` first, then
    the energy breakdown and the other headline metrics). Columns are the labels."""
    t = _with_config(table)
    wanted = [compact_column(m) for m in (metrics or [])]
    wanted += ["energy_j", "energy_busy_j", "energy_idle_j", "energy_switching_j", "energy_off_j"]
    wanted += ["makespan_s", "mean_wait_s", "p95_wait_s", "mean_bsld", "utilisation"]
    columns = [c for c in dict.fromkeys(w for w in wanted if w) if c in t.columns]
    agg = t.groupby(["setting", "config"], sort=False)[columns].mean().reset_index()
    for c in columns:
        agg[c] = agg[c] / COMPACT_METRICS[c][1]
    return agg.rename(columns={c: COMPACT_METRICS[c][0] for c in columns})


# --------------------------------------------------------------------------- writing


def _html_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, table_id: str) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def md_escape(text: str) -> str:
    """Free text (an error message) made inert in Markdown: HTML tags, links,
    emphasis and code spans show as typed instead of being rendered."""
    text = html.escape(str(text), quote=False)
    return re.sub(r"([\\`*_{}\[\]()#+!~])", r"\\\1", text)


def _frame_rows(
    frame: pd.DataFrame, label_cols: Sequence[str]
) -> tuple[list[str], list[list[str]]]:
    cols = list(frame.columns)
    header = [METRIC_LABELS.get(c, c) for c in cols]
    rows = [
        [str(v) if c in label_cols else _fmt(v) for c, v in zip(cols, row, strict=True)]
        for row in frame.itertuples(index=False)
    ]
    return header, rows


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1250px;color:#222;padding:0 1em}
h1{font-size:1.7em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:.8em 0;display:block;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f0f0f0}td:first-child,td:nth-child(2){text-align:left}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#555}.note{color:#555;font-size:.9em}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.8em}
"""


def _total_nodes(row: Any) -> float:
    """The platform's node count, from a run's busy node-seconds and utilisation."""
    busy, util, span = row["busy_node_s"], row["utilisation"], row["makespan_s"]
    if util > 0 and span > 0:
        return float(round(busy / (util * span)))
    return float("nan")


def ground_truth_label(experiment: dict[str, Any]) -> str:
    """The ground truth of every run of an experiment, in words (from its
    ``experiment.json``: one truth for every policy of a sweep)."""
    spec = (experiment.get("experiment") or {}).get("ground_truth")
    if not spec:
        return "none (the traces' recorded runtimes), the same for every run"
    return f"{spec.get('preset')} (noise {spec.get('noise', 0.0):g}), the same for every run"


def estimates_label(t: pd.DataFrame) -> str:
    """What the runs planned jobs with, per trace, in the words of the runs'
    summaries (:func:`simulator.results.estimates_label`, from
    ``jobs_without_request``): a job without a requested time is planned with its
    exact runtime, an oracle estimate that flatters request-driven baselines."""
    if "jobs_without_request" not in t.columns or "jobs" not in t.columns:
        return "not recorded (results of an older version)"
    parts = []
    for trace, group in t.groupby("trace", sort=False):
        without = float(group["jobs_without_request"].max())
        jobs = float(group["jobs"].max())
        if without > 0 and jobs > 0:  # (False for NaN)
            parts.append(f"{trace}: {run_estimates(int(without), int(jobs))}")
    if not parts:
        return "requested times"
    return " | ".join(parts) + " (the rigid baselines plan those jobs with perfect estimates)"


def choose_power_run(t: pd.DataFrame, baseline: str | None) -> str:
    """Default run for the power plot: on the first setting and replicate, the
    configuration with the largest energy saving versus the baseline."""
    first = t[(t["setting"] == t["setting"].iloc[0]) & (t["replicate"] == t["replicate"].min())]
    cand = first[first["policy"] != baseline] if (first["policy"] != baseline).any() else first
    ratio = cand["energy_vs_baseline"].to_numpy(dtype=float)
    if np.isfinite(ratio).any():
        return str(cand["run_id"].iloc[int(np.nanargmin(ratio))])
    return str(cand["run_id"].iloc[0])


def _platform_cores_and_clocks(
    experiment: dict[str, Any], platform: str, jobs: Sequence[pd.DataFrame]
) -> tuple[int, list[float]]:
    """Cores per node (the largest over the node types) and every clock of the
    platform named ``platform`` in an experiment, read from its platform file;
    from the jobs tables (largest core count, clocks run at) when that file
    cannot be read any more."""
    from energysched.errors import ConfigError
    from simulator.platform import load_platform

    sources = {
        p.get("name"): p.get("source")
        for p in experiment.get("experiment", {}).get("platforms", [])
    }
    source = sources.get(platform)
    if source not in (None, "trace"):
        try:
            node_types = load_platform(source).node_types
        except ConfigError as exc:
            log.warning("chosen-configurations figure: %s; using the clocks the jobs ran at", exc)
        else:
            cores = max(nt.cores_per_node for nt in node_types)
            return cores, sorted({float(f) for nt in node_types for f in nt.freqs_ghz})
    cores = int(max(j["cores"].max() for j in jobs))
    return cores, sorted({float(f) for j in jobs for f in j["freq_ghz"].unique()})


def _chosen_configs_figure(
    res: Results, t: pd.DataFrame, jobs: dict[str, pd.DataFrame], run_row: Any
) -> Any:
    """The chosen-configurations figure for the runs of ``run_row``'s trace,
    platform and replicate, or None when every job of them ran on the same
    number of cores per node (nothing chose cores: no hybrid policy)."""
    from energysched.plots_hybrid import plot_chosen_configs

    same = t[
        (t["trace"] == run_row["trace"])
        & (t["platform"] == run_row["platform"])
        & (t["replicate"] == run_row["replicate"])
    ]
    runs = {
        row.config: jobs[row.run_id]
        for row in same.itertuples(index=False)
        if "cores" in jobs[row.run_id] and len(jobs[row.run_id])
    }
    if not runs or pd.concat([j["cores"] for j in runs.values()]).nunique() < 2:
        return None
    cores, clocks = _platform_cores_and_clocks(
        res.experiment, str(run_row["platform"]), list(runs.values())
    )
    return plot_chosen_configs(runs, cores, clocks)


def make_report(
    results_dir: str | Path,
    *,
    run_id: str | None = None,
    out_dir: str | Path | None = None,
    title: str | None = None,
    completed_tolerance: float = COMPLETED_TOLERANCE,
) -> Report:
    """Write ``report.html`` and ``report.md`` (+ ``report_files/``) for a results directory.

    Args:
        results_dir: a directory written by :func:`energysched.sweep.run_sweep`.
        run_id: run whose power timeline is plotted (default: see :func:`choose_power_run`).
        out_dir: where to write (default: ``results_dir``).
        title: report title (default: the experiment's name).
        completed_tolerance: flag configurations that completed more than this
            fraction fewer jobs than the baseline (see :func:`headline_table`).

    Raises:
        ConfigError: not a results directory, no finished run, or unknown ``run_id``.
    """
    from energysched import __version__
    from energysched.errors import ConfigError

    res: Results = load_results(results_dir)
    if res.summaries.empty:
        raise ConfigError("results_dir", f"{results_dir} has no finished runs to report on")
    out = Path(out_dir) if out_dir is not None else Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    files_dir = out / "report_files"
    files_dir.mkdir(exist_ok=True)
    t = _with_config(res.summaries)
    baseline = res.baseline
    configs = list(dict.fromkeys(t["config"]))
    colors = plots.colors_for(configs)
    markers = plots.markers_for(configs)
    if run_id is None:
        run_id = choose_power_run(t, baseline)
    elif run_id not in set(t["run_id"]):
        known = ", ".join(list(t["run_id"])[:8])
        raise ConfigError("run", f"no finished run {run_id!r} in {results_dir}; e.g. {known}")

    job_cols = [
        "job_id",
        "submit_s",
        "wait_s",
        "runtime_s",
        "status",
        "energy_j",
        "predicted_runtime_s",
        "predicted_energy_j",
        "nodes",
        "requested_nodes",
        "cores",
        "freq_ghz",
    ]
    jobs: dict[str, pd.DataFrame] = {}
    for rid in t["run_id"]:
        j = res.jobs(rid)
        jobs[rid] = j[[c for c in job_cols if c in j]]

    run_row = t[t["run_id"] == run_id].iloc[0]
    ref_id = None
    if baseline is not None:
        ref = t[
            (t["policy"] == baseline)
            & (t["predictor"] == "none")
            & (t["trace"] == run_row["trace"])
            & (t["platform"] == run_row["platform"])
            & (t["replicate"] == run_row["replicate"])
        ]
        if len(ref) and ref["run_id"].iloc[0] != run_id:
            ref_id = str(ref["run_id"].iloc[0])
    errors = plots.job_errors(jobs, t)
    curves = plots.error_curves(errors)
    # the chosen run (and its baseline) in full, for the time series and the schedule
    run_title = f"{run_row['config']} on {run_row['setting']}"
    if t["replicate"].nunique() > 1:
        run_title += f", replicate {int(run_row['replicate']) + 1}"
    detail = [(run_row["config"], res.jobs(run_id))]
    if ref_id:
        detail.append((f"baseline {baseline}", res.jobs(ref_id)))
    total_nodes = _total_nodes(run_row)

    power_ref = res.power(ref_id) if ref_id else None
    # each figure made (built and drawn) by one builder; render_figures runs them
    # side by side in forked workers where it can, taking them in this order: the
    # slowest first (on the demo's results 0.7 s for the ECDFs and the error panels,
    # 0.1-0.5 s for the others), so that the workers end together
    builders: dict[str, FigureBuilder] = {
        "waits": partial(plots.plot_waits, jobs, t, colors),
        "predictor-error": partial(plots.plot_predictor_error, errors, curves),
        "relative": partial(plots.plot_relative, t, colors, baseline),
        "pareto": partial(plots.plot_pareto, t, colors, markers),
        "schedule": partial(plots.plot_schedule, detail),
        "power": partial(
            plots.plot_power,
            res.power(run_id),
            run_title,
            power_ref,
            f"baseline {baseline}" if ref_id else None,
        ),
        "breakdown": partial(plots.plot_breakdown, t),
        "activity": partial(plots.plot_activity, detail, total_nodes, run_title),
        "oracle-regret": partial(plots.plot_oracle_regret, t, colors),
        # None when no job chose its cores per node
        "chosen-configs": partial(_chosen_configs_figure, res, t, jobs, run_row),
    }
    figs = render_figures(builders)
    for stale in [*files_dir.glob("*.png"), *files_dir.glob("*.svg")]:
        if stale.stem not in figs:  # a figure an older report or version wrote
            stale.unlink()
    pngs: dict[str, bytes] = {}
    paths: dict[str, Path] = {}
    for key in [k for k in PLOTS if k in figs]:  # (in the report's order)
        png, svg = figs[key]
        pngs[key] = png
        paths[key] = files_dir / f"{key}.png"
        paths[key].write_bytes(png)
        (files_dir / f"{key}.svg").write_bytes(svg)

    head = headline_table(t, baseline, completed_tolerance=completed_tolerance)
    head_cols, head_rows = _headline_display(head)
    sentences = headline_sentences(head)
    metric_frame = metrics_table(t, res.metrics)
    metric_cols, metric_rows = _frame_rows(metric_frame, ("setting", "config"))
    run_cols_keep = [
        "run_id",
        "trace",
        "platform",
        "policy",
        "predictor",
        "seed",
        *[m for m in res.metrics if m in t.columns],
    ]
    run_cols, run_rows = _frame_rows(
        t[run_cols_keep], ("run_id", "trace", "platform", "policy", "predictor", "seed")
    )
    name = title or res.experiment.get("name", "experiment")
    n_runs = len(t)
    intro = (
        f"{n_runs} finished runs ({len(res.failures)} failed) of experiment '{name}': "
        f"{t['setting'].nunique()} trace setting(s), {len(configs)} configurations, {t['replicate'].nunique()} seed(s). "
        f"Baseline: {baseline}. Ground truth: {ground_truth_label(res.experiment)}. "
        f"Estimates: {estimates_label(t)}. "
        f"energysched {res.experiment.get('energysched_version', __version__)}."
    )
    detail_runs = f"run {run_id}" + (f" and the baseline run {ref_id}" if ref_id else "")
    captions = {
        "pareto": "Each small mark is one run, each large mark a configuration's mean over the seeds (one shape and colour per configuration; configurations with the same mean share a mark and are named together with '='); the dashed line is the Pareto front of the means (no configuration is better in both energy and makespan). Lower-left is better.",
        "relative": f"Ratio to the baseline ({baseline}) run of the same trace and seed, one panel per quantity; markers are means over seeds (one shape per trace), whiskers min..max. Left of 1 = less than the baseline.",
        "waits": f"Empirical cumulative distribution of the per-job waiting time and of the bounded slowdown max((wait + run) / max(run, {plots.BSLD_TAU_S:g} s), 1), jobs pooled over seeds. The height of a curve at the left edge is the share of jobs that started at once; higher and further left is better.",
        "power": f"Top: mean platform power per day (per hour for runs shorter than 10 days) of {detail_runs}; the shaded band is the window shown below. Bottom: that window, power stacked by node state, the black line the baseline's total power.",
        "activity": f"Utilisation (busy nodes over all nodes) and queue length (jobs submitted and not yet started), time-averaged per day (per hour for short runs), for {detail_runs}.",
        "schedule": f"Each rectangle is a job: from its start to its end, on as many node rows as it had nodes (rows are assigned for drawing; the simulator does not pin jobs to node ids), coloured by its CPU frequency; {detail_runs}. Runs of more than {plots.SCHEDULE_MAX_JOBS} jobs show the window of their first {plots.SCHEDULE_MAX_JOBS} starts.",
        "breakdown": "Energy spent by nodes that are busy, idle, switching on/off, or off (mean over seeds).",
        "predictor-error": "Per trace: the median absolute percentage error of the runtime and energy predictions over the completed jobs of every run with that predictor (left; the oracle's error is the measurement noise), and the median error as the predictor sees more finished jobs (right).",
        "oracle-regret": "How much more energy / makespan a policy needs with a real predictor than with the oracle (perfect predictions), same trace and seed. 0 = as good as the oracle.",
        "chosen-configs": f"For the runs of {run_row['setting']} (replicate {int(run_row['replicate']) + 1}), one colour per configuration: the share of jobs run at each number of cores per node (left) and at each clock (middle), and each job's chosen node count against the node count it requested (right, both axes log2).",
    }

    sections_html = []
    sections_md = []
    sections_html.append(
        f'<section id="headline"><h2>Headline: which policy saves how much energy, at what cost</h2>{"".join(f"<p>{html.escape(s)}</p>" for s in sentences)}{_html_table(head_cols, head_rows, table_id="headline-table")}<p class="note">{html.escape(HEADLINE_NOTE)}</p></section>'
    )
    sections_md.append(
        "## Headline: which policy saves how much energy, at what cost\n\n"
        + "".join(f"{s}\n\n" for s in sentences)
        + _md_table(head_cols, head_rows)
        + "\n\n"
        + HEADLINE_NOTE
    )
    for key, plot_title in PLOTS.items():
        if key not in figs:
            continue
        b64 = base64.b64encode(pngs[key]).decode("ascii")
        sections_html.append(
            f'<section id="{key}"><h2>{html.escape(plot_title)}</h2><figure id="fig-{key}"><img alt="{html.escape(plot_title)}" src="data:image/png;base64,{b64}"><figcaption>{html.escape(captions[key])} <a href="report_files/{key}.svg">SVG</a></figcaption></figure></section>'
        )
        sections_md.append(
            f"## {plot_title}\n\n![{plot_title}](report_files/{key}.png)\n\n{captions[key]} ([SVG](report_files/{key}.svg))"
        )
    if len(errors):
        per_trace = errors.groupby(["predictor", "setting"], sort=False).agg(
            runs=("run_id", "nunique"),
            jobs=("order", "size"),
            runtime=("runtime_ape", "median"),
            energy=("energy_ape", "median"),
        )
        sections_html[-2] = sections_html[-2].replace(
            "</section>",
            _html_table(
                [
                    "predictor",
                    "trace",
                    "runs",
                    "jobs",
                    "median runtime error (%)",
                    "median energy error (%)",
                ],
                [
                    [p, setting, _fmt(r.runs), _fmt(r.jobs), _fmt(r.runtime), _fmt(r.energy)]
                    for (p, setting), r in per_trace.iterrows()
                ],
                table_id="predictor-error-table",
            )
            + "</section>",
        )
    sections_html.append(
        f'<section id="metrics"><h2>Every metric (mean over seeds)</h2>{_html_table(metric_cols, metric_rows, table_id="metrics-table")}<details><summary>Every run</summary>{_html_table(run_cols, run_rows, table_id="runs-table")}</details></section>'
    )
    sections_md.append(
        "## Every metric (mean over seeds)\n\n"
        + _md_table(metric_cols, metric_rows)
        + "\n\n### Every run\n\n"
        + _md_table(run_cols, run_rows)
    )
    wcols, wrows = warnings_table(res.warnings)
    more = len(wrows) - WARNING_KINDS_SHOWN
    wnote = (
        f"{more} more kinds of warning are not shown. " if more > 0 else ""
    ) + "Each run's run.json lists its own warnings."
    if wrows:
        wrows = wrows[:WARNING_KINDS_SHOWN]
        sections_html.append(
            f'<section id="warnings"><h2>Warnings the runs gave</h2>{_html_table(wcols, wrows, table_id="warnings-table")}<p class="note">{html.escape(wnote)}</p></section>'
        )
        sections_md.append(
            "## Warnings the runs gave\n\n"
            + _md_table(wcols, [[md_escape(v) for v in row] for row in wrows])
            + f"\n\n{wnote}"
        )
    else:
        sections_html.append(
            '<section id="warnings"><h2>Warnings the runs gave</h2><p>None.</p></section>'
        )
        sections_md.append("## Warnings the runs gave\n\nNone.")
    if len(res.failures):
        fcols, frows = list(res.failures.columns), res.failures.astype(str).to_numpy().tolist()
        sections_html.append(
            f'<section id="failures"><h2>Failed runs</h2>{_html_table(fcols, frows, table_id="failures-table")}</section>'
        )
        sections_md.append(
            "## Failed runs\n\n" + _md_table(fcols, [[md_escape(v) for v in row] for row in frows])
        )
    else:
        sections_html.append('<section id="failures"><h2>Failed runs</h2><p>None.</p></section>')
        sections_md.append("## Failed runs\n\nNone.")

    toc = "".join(
        f'<li><a href="#{k}">{html.escape(v)}</a></li>'
        for k, v in [
            ("headline", "Headline"),
            *((k, v) for k, v in PLOTS.items() if k in figs),
            ("metrics", "Every metric"),
            ("warnings", "Warnings"),
            ("failures", "Failed runs"),
        ]
    )
    doc = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(name)}: energysched report</title>'
        f"<style>{_CSS}</style></head><body><h1>{html.escape(name)}: energy-aware scheduling report</h1>"
        f'<p>{html.escape(intro)}</p><p class="note">{html.escape(res.experiment.get("description", ""))}</p><nav><ol>{toc}</ol></nav>'
        + "\n".join(sections_html)
        + "</body></html>\n"
    )
    html_path = out / "report.html"
    html_path.write_text(doc, encoding="utf-8")
    md_path = out / "report.md"
    md_path.write_text(
        f"# {name}: energy-aware scheduling report\n\n{intro}\n\n"
        + "\n\n".join(sections_md)
        + "\n",
        encoding="utf-8",
    )
    log.info("wrote %s and %s", html_path, md_path)
    return Report(html=html_path, markdown=md_path, figures=paths, headline=head, power_run=run_id)
