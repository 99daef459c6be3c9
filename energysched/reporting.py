"""Reports: one self-contained HTML file and a Markdown twin from a results directory.

:func:`make_report` reads a results directory (:func:`energysched.store.load_results`)
and writes

* ``report.html``: every plot embedded as a base64 PNG, inline CSS, no
  script and no network access needed to view it;
* ``report.md`` with the PNGs in ``report_files/`` next to it.

Sections (HTML ids in brackets): headline table (``headline``), energy versus
makespan with the Pareto front (``pareto``), energy and makespan relative to
the baseline with the spread over seeds (``relative``), wait and bounded
slowdown distributions (``distributions``), platform power over time for one
run (``power``), node-state energy breakdown (``breakdown``), predictor error
and how it falls as observations accumulate (``predictor-error``), oracle
regret (``oracle-regret``), a table of every metric (``metrics``) and failed
runs (``failures``).

A *configuration* is a policy with its predictor (``easy-min-energy-slack +
adept``); its numbers are means over the seeds (replicates) unless a plot
shows the spread.
"""

from __future__ import annotations

import base64
import html
import io
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from energysched.pareto import pareto_front
from energysched.store import Results, load_results

log = logging.getLogger(__name__)

#: Plot ids, in report order, with their titles.
PLOTS: dict[str, str] = {
    "pareto": "Energy versus makespan, with the Pareto front",
    "relative": "Energy and makespan relative to the baseline (spread over seeds)",
    "distributions": "Waiting time and bounded slowdown distributions",
    "power": "Platform power over time",
    "breakdown": "Energy by node state",
    "predictor-error": "Predictor error, and how it falls as observations accumulate",
    "oracle-regret": "Oracle regret: policy with a predictor versus the same policy with the oracle",
}

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
    "n_predicted": "jobs predicted",
    "oracle_energy_regret": "oracle energy regret",
    "oracle_makespan_regret": "oracle makespan regret",
    "energy_vs_baseline": "energy / baseline",
    "makespan_vs_baseline": "makespan / baseline",
    "mean_wait_vs_baseline": "mean wait / baseline",
    "mean_bsld_vs_baseline": "mean BSLD / baseline",
}

_STATES = (("busy", "#d62728"), ("idle", "#ff9f0e"), ("switching", "#9467bd"), ("off", "#7f7f7f"))


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


def _energy_unit(max_j: float) -> tuple[float, str]:
    kwh = max_j / 3.6e6
    if kwh >= 10_000:
        return 3.6e9, "MWh"
    if kwh >= 1:
        return 3.6e6, "kWh"
    return 3.6e3, "Wh"


def _time_unit(max_s: float) -> tuple[float, str]:
    if max_s >= 5 * 86400:
        return 86400.0, "days"
    if max_s >= 3 * 3600:
        return 3600.0, "h"
    if max_s >= 180:
        return 60.0, "min"
    return 1.0, "s"


def _colors(configs: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(configs) <= 10 else "tab20"]
    return {c: cmap(i % cmap.N) for i, c in enumerate(configs)}


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _placeholder(text: str) -> Any:
    fig = _figure(7, 1.6)
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=11, wrap=True)
    return fig


def _grid(n: int, ncols: int = 2) -> tuple[int, int]:
    ncols = min(ncols, max(1, n))
    return math.ceil(n / ncols), ncols


# --------------------------------------------------------------------------- tables


def headline_table(table: pd.DataFrame, baseline: str | None) -> pd.DataFrame:
    """Which policy saves how much energy at what cost in makespan and waiting.

    One row per setting (trace/platform) and configuration, means over seeds:
    energy (kWh), energy saving versus the baseline (% of its energy; positive
    = saves), makespan, mean wait and mean bounded slowdown changes (%), and
    the min..max of the energy saving over the seeds. Sorted by setting, then
    by saving (largest first).
    """
    t = _with_config(table)
    rows = []
    for (setting, config), g in t.groupby(["setting", "config"], sort=False):
        saving = (1 - g["energy_vs_baseline"]) * 100
        rows.append(
            {
                "setting": setting,
                "configuration": config,
                "baseline": bool(
                    (g["policy"] == baseline).all() and (g["predictor"] == "none").all()
                ),
                "energy_kwh": g["energy_j"].mean() / 3.6e6,
                "energy_saving_pct": saving.mean(),
                "energy_saving_min_pct": saving.min(),
                "energy_saving_max_pct": saving.max(),
                "makespan_change_pct": (g["makespan_vs_baseline"].mean() - 1) * 100,
                "mean_wait_change_pct": (g["mean_wait_vs_baseline"].mean() - 1) * 100,
                "mean_bsld_change_pct": (g["mean_bsld_vs_baseline"].mean() - 1) * 100,
                "jobs_killed": g["jobs_killed"].mean() if "jobs_killed" in g else np.nan,
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


def _headline_display(head: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    cols = [
        "setting",
        "configuration",
        "energy (kWh)",
        "energy saved vs baseline",
        "saved, min..max over seeds",
        "makespan change",
        "mean wait change",
        "mean BSLD change",
        "jobs killed",
    ]
    rows = []
    for r in head.itertuples(index=False):
        name = f"{r.configuration} (baseline)" if r.baseline else r.configuration
        spread = (
            "n/a"
            if not np.isfinite(r.energy_saving_min_pct)
            else f"{r.energy_saving_min_pct:+.1f}..{r.energy_saving_max_pct:+.1f}%"
        )
        rows.append(
            [
                r.setting,
                name,
                _fmt(r.energy_kwh),
                "n/a" if not np.isfinite(r.energy_saving_pct) else f"{r.energy_saving_pct:+.1f}%",
                spread,
                "n/a"
                if not np.isfinite(r.makespan_change_pct)
                else f"{r.makespan_change_pct:+.1f}%",
                "n/a"
                if not np.isfinite(r.mean_wait_change_pct)
                else f"{r.mean_wait_change_pct:+.1f}%",
                "n/a"
                if not np.isfinite(r.mean_bsld_change_pct)
                else f"{r.mean_bsld_change_pct:+.1f}%",
                _fmt(r.jobs_killed),
            ]
        )
    return cols, rows


def headline_sentences(head: pd.DataFrame) -> list[str]:
    """One sentence per setting naming the configuration that saves the most energy."""
    out = []
    for setting, g in head.groupby("setting", sort=False):
        g = g[~g["baseline"] & np.isfinite(g["energy_saving_pct"])]
        if g.empty:
            continue
        best = g.iloc[0]
        out.append(
            f"On {setting}, {best['configuration']} saves {best['energy_saving_pct']:.1f}% of the baseline's energy "
            f"at {best['makespan_change_pct']:+.1f}% makespan and {best['mean_wait_change_pct']:+.1f}% mean wait."
        )
    return out


def metrics_table(table: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Every metric (or ``metrics``), mean over seeds, per setting and configuration."""
    t = _with_config(table)
    skip = {"replicate", "seed", "power_cap_w", "policy_calls", "busy_node_s"}
    numeric = [
        c
        for c in t.columns
        if c not in skip and pd.api.types.is_numeric_dtype(t[c]) and c not in ("replicate",)
    ]
    if metrics:
        numeric = [m for m in metrics if m in t.columns] + [c for c in numeric if c not in metrics]
    agg = t.groupby(["setting", "config"], sort=False)[numeric].mean().reset_index()
    return agg


# --------------------------------------------------------------------------- plots


def plot_pareto(t: pd.DataFrame, colors: dict[str, Any]) -> Any:
    """Energy versus makespan: every run (small), config means (large), Pareto front (line)."""
    settings = list(dict.fromkeys(t["setting"]))
    nrows, ncols = _grid(len(settings))
    fig = _figure(6.2 * ncols, 4.6 * nrows)
    e_scale, e_unit = _energy_unit(float(t["energy_j"].max()))
    m_scale, m_unit = _time_unit(float(t["makespan_s"].max()))
    for k, setting in enumerate(settings):
        ax = fig.add_subplot(nrows, ncols, k + 1)
        g = t[t["setting"] == setting]
        means = g.groupby("config", sort=False)[["makespan_s", "energy_j"]].mean()
        for config, runs in g.groupby("config", sort=False):
            ax.scatter(
                runs["makespan_s"] / m_scale,
                runs["energy_j"] / e_scale,
                s=12,
                alpha=0.35,
                color=colors[config],
            )
            ax.scatter(
                means.loc[config, "makespan_s"] / m_scale,
                means.loc[config, "energy_j"] / e_scale,
                s=70,
                color=colors[config],
                edgecolor="black",
                linewidth=0.6,
                label=config,
                zorder=3,
            )
        front = pareto_front(means[["makespan_s", "energy_j"]].to_numpy())
        fx = means["makespan_s"].to_numpy()[front] / m_scale
        fy = means["energy_j"].to_numpy()[front] / e_scale
        ax.step(
            fx,
            fy,
            where="post",
            color="black",
            linestyle="--",
            linewidth=1,
            label="Pareto front",
            zorder=2,
        )
        ax.set_title(setting)
        ax.set_xlabel(f"makespan ({m_unit})")
        ax.set_ylabel(f"energy ({e_unit})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    return fig


def plot_relative(t: pd.DataFrame, colors: dict[str, Any], baseline: str | None) -> Any:
    """Energy and makespan over the baseline's (same trace and seed): mean and min..max over seeds."""
    if t["energy_vs_baseline"].isna().all():
        return _placeholder(
            f"no baseline runs (baseline policy: {baseline!r}); nothing to compare with"
        )
    configs = list(dict.fromkeys(t["config"]))
    settings = list(dict.fromkeys(t["setting"]))
    fig = _figure(12, 1.0 + 0.42 * len(configs) * max(1, len(settings)) ** 0.5 + 1.2)
    markers = "osD^vP*X"
    for k, (col, label) in enumerate(
        (
            ("energy_vs_baseline", "energy / baseline energy"),
            ("makespan_vs_baseline", "makespan / baseline makespan"),
        )
    ):
        ax = fig.add_subplot(1, 2, k + 1)
        for j, setting in enumerate(settings):
            g = t[t["setting"] == setting]
            stats = g.groupby("config", sort=False)[col].agg(["mean", "min", "max"])
            offset = (j - (len(settings) - 1) / 2) * 0.18
            for config, row in stats.iterrows():
                y = configs.index(config) + offset
                ax.errorbar(
                    row["mean"],
                    y,
                    xerr=[[row["mean"] - row["min"]], [row["max"] - row["mean"]]],
                    fmt=markers[j % len(markers)],
                    color=colors[config],
                    capsize=3,
                    markersize=6,
                    label=setting if config == stats.index[0] else None,
                )
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(configs)), configs if k == 0 else [""] * len(configs))
        ax.invert_yaxis()
        ax.set_xlabel(f"{label} (1 = baseline {baseline})")
        ax.grid(axis="x", alpha=0.3)
        if k == 1 and len(settings) > 1:
            ax.legend(title="trace", fontsize=8)
    return fig


def plot_distributions(
    jobs: dict[str, pd.DataFrame], t: pd.DataFrame, colors: dict[str, Any]
) -> Any:
    """Box plots (5-95 %, mean as a diamond) of per-job wait and bounded slowdown, pooled over seeds."""
    settings = list(dict.fromkeys(t["setting"]))
    fig = _figure(12, 0.6 + 3.4 * len(settings))
    for r, setting in enumerate(settings):
        g = t[t["setting"] == setting]
        configs = list(dict.fromkeys(g["config"]))
        waits, bslds = [], []
        for config in configs:
            ids = g.loc[g["config"] == config, "run_id"]
            frames = [jobs[i] for i in ids if i in jobs]
            j = pd.concat(frames) if frames else pd.DataFrame({"wait_s": [], "runtime_s": []})
            j = j[j["status"] != "rejected"] if "status" in j else j
            wait = j["wait_s"].to_numpy(dtype=float)
            run = j["runtime_s"].to_numpy(dtype=float)
            bsld = np.maximum((wait + run) / np.maximum(run, 10.0), 1.0)
            waits.append(wait[np.isfinite(wait)] + 1.0)
            bslds.append(bsld[np.isfinite(bsld)])
        for c, (data, ylabel) in enumerate(
            ((waits, "wait + 1 s (s, log scale)"), (bslds, "bounded slowdown (log scale)"))
        ):
            ax = fig.add_subplot(len(settings), 2, 2 * r + c + 1)
            box = ax.boxplot(
                data,
                whis=(5, 95),
                showfliers=False,
                showmeans=True,
                patch_artist=True,
                meanprops={
                    "marker": "D",
                    "markerfacecolor": "white",
                    "markeredgecolor": "black",
                    "markersize": 4,
                },
            )
            for patch, config in zip(box["boxes"], configs, strict=True):
                patch.set_facecolor(colors[config])
                patch.set_alpha(0.6)
            ax.set_yscale("log")
            ax.set_xticks(range(1, len(configs) + 1), configs, rotation=30, ha="right", fontsize=8)
            ax.set_ylabel(ylabel)
            ax.set_title(
                f"{setting}: {'waiting time' if c == 0 else 'bounded slowdown (tau = 10 s)'}",
                fontsize=10,
            )
            ax.grid(axis="y", alpha=0.3)
    return fig


def plot_power(
    power: pd.DataFrame, title: str, reference: pd.DataFrame | None, ref_label: str | None
) -> Any:
    """Stacked platform power by node state over time, with the reference run's total as a line."""
    fig = _figure(12, 4.2)
    ax = fig.add_subplot()
    t0 = float(power["time_s"].iloc[0]) if len(power) else 0.0
    span = float(power["time_s"].iloc[-1] - t0) if len(power) else 1.0
    scale, unit = _time_unit(span)
    x = (power["time_s"].to_numpy(dtype=float) - t0) / scale
    bottom = np.zeros(len(power))
    for state, color in _STATES:
        y = power[f"{state}_w"].to_numpy(dtype=float) / 1000.0
        if not np.any(y):
            continue
        ax.fill_between(
            x,
            bottom,
            bottom + y,
            step="post",
            color=color,
            alpha=0.75,
            linewidth=0,
            label=f"{state} nodes",
        )
        bottom = bottom + y
    if reference is not None and len(reference):
        xr = (
            reference["time_s"].to_numpy(dtype=float) - float(reference["time_s"].iloc[0])
        ) / scale
        ax.step(
            xr,
            reference["power_w"].to_numpy(dtype=float) / 1000.0,
            where="post",
            color="black",
            linewidth=0.7,
            alpha=0.8,
            label=f"total power, {ref_label}",
        )
    ax.set_xlabel(f"time since the first submission ({unit})")
    ax.set_ylabel("platform power (kW)")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncols=5)
    return fig


def plot_breakdown(t: pd.DataFrame) -> Any:
    """Stacked bars of busy/idle/switching/off energy per configuration (mean over seeds)."""
    settings = list(dict.fromkeys(t["setting"]))
    nrows, ncols = _grid(len(settings))
    fig = _figure(6.2 * ncols, 0.8 + (1.0 + 0.35 * t["config"].nunique()) * nrows)
    e_scale, e_unit = _energy_unit(float(t["energy_j"].max()))
    for k, setting in enumerate(settings):
        ax = fig.add_subplot(nrows, ncols, k + 1)
        g = (
            t[t["setting"] == setting]
            .groupby("config", sort=False)[[f"energy_{s}_j" for s, _ in _STATES]]
            .mean()
        )
        left = np.zeros(len(g))
        y = np.arange(len(g))
        for state, color in _STATES:
            w = g[f"energy_{state}_j"].to_numpy(dtype=float) / e_scale
            ax.barh(y, w, left=left, color=color, label=state)
            left += w
        ax.set_yticks(y, list(g.index), fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"energy ({e_unit})")
        ax.set_title(setting, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        if k == 0:
            handles, labels = ax.get_legend_handles_labels()
            fig.legend(
                handles, labels, title="node state", fontsize=8, loc="outside lower center", ncols=4
            )
    return fig


def predictor_error_curves(
    jobs: dict[str, pd.DataFrame], t: pd.DataFrame, bins: int = 12
) -> pd.DataFrame:
    """Absolute percentage error of the predictions as jobs accumulate.

    For each predictor-driven run, completed jobs with a prediction are taken
    in submission order; job ``k`` was predicted after about ``k`` earlier
    submissions had been observed. Errors are pooled over the runs of a
    predictor in log-spaced bins of ``k``. Returns ``predictor, quantity
    (runtime|energy), jobs_seen, median_ape, mean_ape, n``.
    """
    rows = []
    preds = t[t["predictor"] != "none"]
    for predictor, g in preds.groupby("predictor", sort=False):
        for quantity, pcol, tcol in (
            ("runtime", "predicted_runtime_s", "runtime_s"),
            ("energy", "predicted_energy_j", "energy_j"),
        ):
            ks, apes = [], []
            for run_id in g["run_id"]:
                j = jobs.get(run_id)
                if j is None or pcol not in j:
                    continue
                j = j.sort_values(["submit_s", "job_id"], kind="stable")
                order = np.arange(len(j))
                pred = j[pcol].to_numpy(dtype=float, na_value=np.nan)
                true = j[tcol].to_numpy(dtype=float, na_value=np.nan)
                mask = (
                    (j["status"].to_numpy() == "completed")
                    & np.isfinite(pred)
                    & np.isfinite(true)
                    & (true > 0)
                )
                ks.append(order[mask])
                apes.append(np.abs(pred[mask] - true[mask]) / true[mask] * 100)
            if not ks or not sum(len(k) for k in ks):
                continue
            k = np.concatenate(ks)
            ape = np.concatenate(apes)
            edges = (
                np.unique(np.round(np.geomspace(1, max(2, k.max() + 2), bins + 1)).astype(int)) - 1
            )
            which = np.clip(np.searchsorted(edges, k, side="right") - 1, 0, len(edges) - 2)
            for b in range(len(edges) - 1):
                sel = which == b
                if sel.sum() == 0:
                    continue
                rows.append(
                    {
                        "predictor": predictor,
                        "quantity": quantity,
                        "jobs_seen": float(np.median(k[sel])),
                        "median_ape": float(np.median(ape[sel])),
                        "mean_ape": float(np.mean(ape[sel])),
                        "n": int(sel.sum()),
                    }
                )
    return pd.DataFrame(
        rows, columns=["predictor", "quantity", "jobs_seen", "median_ape", "mean_ape", "n"]
    )


def plot_predictor_error(t: pd.DataFrame, curves: pd.DataFrame) -> Any:
    """Left: MAPE per predictor (runtime and energy); right: median APE as jobs accumulate."""
    preds = t[t["predictor"] != "none"]
    if preds.empty or preds[["mape_runtime", "mape_energy"]].isna().all().all():
        return _placeholder("no predictor-driven runs with predictions in this experiment")
    fig = _figure(13, 4.4)
    ax = fig.add_subplot(1, 3, 1)
    stats = (
        preds.groupby("predictor", sort=False)[["mape_runtime", "mape_energy"]].agg(
            ["mean", "min", "max"]
        )
        * 100
    )
    names = list(stats.index)
    x = np.arange(len(names))
    for k, (q, color) in enumerate((("mape_runtime", "#1f77b4"), ("mape_energy", "#2ca02c"))):
        m = stats[(q, "mean")].to_numpy()
        err = [m - stats[(q, "min")].to_numpy(), stats[(q, "max")].to_numpy() - m]
        ax.bar(
            x + (k - 0.5) * 0.38,
            m,
            width=0.38,
            yerr=err,
            capsize=3,
            color=color,
            label="runtime" if k == 0 else "energy",
        )
    ax.set_yscale("symlog", linthresh=10.0)
    ax.set_ylim(bottom=0)
    ax.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("MAPE over predicted jobs (%, log scale)")
    ax.set_title("error per predictor (min..max over runs)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    colors = _colors(names)
    for k, quantity in enumerate(("runtime", "energy")):
        ax = fig.add_subplot(1, 3, 2 + k)
        c = curves[curves["quantity"] == quantity]
        for predictor, g in c.groupby("predictor", sort=False):
            ax.plot(
                g["jobs_seen"] + 1,
                g["median_ape"],
                marker="o",
                markersize=3,
                color=colors.get(predictor),
                label=predictor,
            )
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("jobs submitted before the prediction (log scale)")
        ax.set_ylabel(f"median {quantity} APE (%)")
        ax.set_title(f"{quantity} error as observations accumulate", fontsize=10)
        ax.grid(alpha=0.3)
        if len(c):
            ax.legend(fontsize=7)
    return fig


def plot_oracle_regret(t: pd.DataFrame, colors: dict[str, Any]) -> Any:
    """Energy and makespan of policy+predictor over policy+oracle, minus 1 (%), mean and min..max over seeds."""
    r = t[(t["predictor_spec"] != "none") & (t["predictor_spec"] != "oracle")]
    r = r[np.isfinite(r["oracle_energy_regret"].to_numpy(dtype=float))]
    if r.empty:
        return _placeholder(
            "no oracle twins: add the 'oracle' predictor to the predictor-driven policies"
        )
    settings = list(dict.fromkeys(r["setting"]))
    configs = list(dict.fromkeys(r["config"]))
    fig = _figure(12, 1.4 + 0.45 * len(configs) * max(1, len(settings)) ** 0.5)
    for k, (col, label) in enumerate(
        (
            ("oracle_energy_regret", "energy regret (%)"),
            ("oracle_makespan_regret", "makespan regret (%)"),
        )
    ):
        ax = fig.add_subplot(1, 2, k + 1)
        height = 0.8 / len(settings)
        for j, setting in enumerate(settings):
            g = r[r["setting"] == setting]
            stats = g.groupby("config", sort=False)[col].agg(["mean", "min", "max"]) * 100
            ys = (
                np.array([configs.index(c) for c in stats.index])
                + (j - (len(settings) - 1) / 2) * height
            )
            m = stats["mean"].to_numpy()
            ax.barh(
                ys,
                m,
                height=height * 0.9,
                xerr=[m - stats["min"].to_numpy(), stats["max"].to_numpy() - m],
                capsize=2,
                color=[colors[c] for c in stats.index],
                alpha=1.0 - 0.35 * j / max(1, len(settings) - 1) if len(settings) > 1 else 1.0,
                label=setting,
            )
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(configs)), configs if k == 0 else [""] * len(configs), fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"{label}, vs the same policy with the oracle")
        ax.grid(axis="x", alpha=0.3)
        if k == 1 and len(settings) > 1:
            ax.legend(title="trace (shade)", fontsize=7)
    return fig


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


def choose_power_run(t: pd.DataFrame, baseline: str | None) -> str:
    """Default run for the power plot: on the first setting and replicate, the
    configuration with the largest energy saving versus the baseline."""
    first = t[(t["setting"] == t["setting"].iloc[0]) & (t["replicate"] == t["replicate"].min())]
    cand = first[first["policy"] != baseline] if (first["policy"] != baseline).any() else first
    ratio = cand["energy_vs_baseline"].to_numpy(dtype=float)
    if np.isfinite(ratio).any():
        return str(cand["run_id"].iloc[int(np.nanargmin(ratio))])
    return str(cand["run_id"].iloc[0])


def make_report(
    results_dir: str | Path,
    *,
    run_id: str | None = None,
    out_dir: str | Path | None = None,
    title: str | None = None,
) -> Report:
    """Write ``report.html`` and ``report.md`` (+ ``report_files/``) for a results directory.

    Args:
        results_dir: a directory written by :func:`energysched.sweep.run_sweep`.
        run_id: run whose power timeline is plotted (default: see :func:`choose_power_run`).
        out_dir: where to write (default: ``results_dir``).
        title: report title (default: the experiment's name).

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
    colors = _colors(configs)
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
    curves = predictor_error_curves(jobs, t)

    figs = {
        "pareto": plot_pareto(t, colors),
        "relative": plot_relative(t, colors, baseline),
        "distributions": plot_distributions(jobs, t, colors),
        "power": plot_power(
            res.power(run_id),
            f"{run_row['config']} on {run_row['setting']}, seed {run_row['seed']} (run {run_id})",
            res.power(ref_id) if ref_id else None,
            f"baseline {baseline}" if ref_id else None,
        ),
        "breakdown": plot_breakdown(t),
        "predictor-error": plot_predictor_error(t, curves),
        "oracle-regret": plot_oracle_regret(t, colors),
    }
    pngs: dict[str, bytes] = {}
    paths: dict[str, Path] = {}
    for key, fig in figs.items():
        pngs[key] = _png(fig)
        paths[key] = files_dir / f"{key}.png"
        paths[key].write_bytes(pngs[key])

    head = headline_table(t, baseline)
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
        f"Baseline: {baseline}. energysched {res.experiment.get('energysched_version', __version__)}."
    )
    captions = {
        "pareto": "Each small dot is one run, each large dot a configuration's mean over the seeds; the dashed line is the Pareto front of the means (no configuration is better in both energy and makespan). Lower-left is better.",
        "relative": f"Ratio to the baseline ({baseline}) run of the same trace and seed; markers are means, whiskers min..max over seeds. Left of 1 = less than the baseline.",
        "distributions": "Per-job waiting time and bounded slowdown max((wait + run) / max(run, 10 s), 1), pooled over seeds; boxes are quartiles, whiskers the 5th and 95th percentiles, diamonds the means.",
        "power": f"Stacked platform power by node state for run {run_id}"
        + (f"; the black line is the total power of the baseline run {ref_id}." if ref_id else "."),
        "breakdown": "Energy spent by nodes that are busy, idle, switching on/off, or off (mean over seeds).",
        "predictor-error": "Mean absolute percentage error of the runtime and energy predictions over the completed jobs (left), and the median error as the predictor sees more finished jobs (right).",
        "oracle-regret": "How much more energy / makespan a policy needs with a real predictor than with the oracle (perfect predictions), same trace and seed. 0 = as good as the oracle.",
    }

    sections_html = []
    sections_md = []
    sections_html.append(
        f'<section id="headline"><h2>Headline: which policy saves how much energy, at what cost</h2>{"".join(f"<p>{html.escape(s)}</p>" for s in sentences)}{_html_table(head_cols, head_rows, table_id="headline-table")}<p class="note">Savings and changes are relative to the baseline run of the same trace and seed, averaged over seeds; positive saving = less energy.</p></section>'
    )
    sections_md.append(
        "## Headline: which policy saves how much energy, at what cost\n\n"
        + "".join(f"{s}\n\n" for s in sentences)
        + _md_table(head_cols, head_rows)
        + "\n\nSavings and changes are relative to the baseline run of the same trace and seed, averaged over seeds; positive saving = less energy."
    )
    for key, plot_title in PLOTS.items():
        b64 = base64.b64encode(pngs[key]).decode("ascii")
        sections_html.append(
            f'<section id="{key}"><h2>{html.escape(plot_title)}</h2><figure id="fig-{key}"><img alt="{html.escape(plot_title)}" src="data:image/png;base64,{b64}"><figcaption>{html.escape(captions[key])}</figcaption></figure></section>'
        )
        sections_md.append(
            f"## {plot_title}\n\n![{plot_title}](report_files/{key}.png)\n\n{captions[key]}"
        )
    if len(curves):
        sections_html[-2] = sections_html[-2].replace(
            "</section>",
            _html_table(
                [
                    "predictor",
                    "quantity",
                    "jobs seen (median)",
                    "median APE (%)",
                    "mean APE (%)",
                    "jobs",
                ],
                [
                    [
                        r.predictor,
                        r.quantity,
                        _fmt(r.jobs_seen),
                        _fmt(r.median_ape),
                        _fmt(r.mean_ape),
                        _fmt(r.n),
                    ]
                    for r in curves.itertuples()
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
    if len(res.failures):
        fcols, frows = list(res.failures.columns), res.failures.astype(str).to_numpy().tolist()
        sections_html.append(
            f'<section id="failures"><h2>Failed runs</h2>{_html_table(fcols, frows, table_id="failures-table")}</section>'
        )
        sections_md.append(
            "## Failed runs\n\n"
            + _md_table(fcols, [[md_escape(v) for v in row] for row in frows])
        )
    else:
        sections_html.append('<section id="failures"><h2>Failed runs</h2><p>None.</p></section>')
        sections_md.append("## Failed runs\n\nNone.")

    toc = "".join(
        f'<li><a href="#{k}">{html.escape(v)}</a></li>'
        for k, v in [
            ("headline", "Headline"),
            *PLOTS.items(),
            ("metrics", "Every metric"),
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
