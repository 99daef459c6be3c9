"""The report's figures (matplotlib, no pyplot state): one function per figure.

Every function takes the summaries table (one row per run, with the
``config`` and ``setting`` columns of :func:`energysched.reporting.with_config`)
and, where it needs them, per-run jobs or power tables, and returns a
:class:`matplotlib.figure.Figure`. :mod:`energysched.reporting` saves each one
as PNG (embedded in the HTML) and SVG (next to it).

Conventions: energy in MWh (kWh or Wh for small runs), time in hours or
days, relative quantities as "run / baseline run of the same trace and seed",
errors in %. A *configuration* is a policy with its predictor; its means are
over the seeds.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from energysched.pareto import pareto_front
from simulator.metrics import BSLD_TAU_S, bounded_slowdown

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Node states in stacking order, with their colours.
STATES = (("busy", "#d62728"), ("idle", "#ff9f0e"), ("switching", "#9467bd"), ("off", "#7f7f7f"))
#: Marker shapes cycled over configurations (distinct shape and colour per configuration).
MARKERS = "osD^vP*Xh<>p8d"
#: Line styles cycled over configurations (curves that coincide stay distinguishable).
LINESTYLES = ("-", "--", "-.", ":")
#: Runs with at most this many jobs get a full schedule view; longer runs show a window.
SCHEDULE_MAX_JOBS = 300


# --------------------------------------------------------------------------- helpers


def energy_unit(max_j: float) -> tuple[float, str]:
    """Divisor and name of a readable energy unit for values up to ``max_j`` joules."""
    kwh = max_j / 3.6e6
    if kwh >= 1_000:
        return 3.6e9, "MWh"
    if kwh >= 1:
        return 3.6e6, "kWh"
    return 3.6e3, "Wh"


def time_unit(max_s: float) -> tuple[float, str]:
    """Divisor and name of a readable time unit for spans up to ``max_s`` seconds."""
    if max_s >= 5 * 86400:
        return 86400.0, "days"
    if max_s >= 3 * 3600:
        return 3600.0, "h"
    if max_s >= 180:
        return 60.0, "min"
    return 1.0, "s"


def colors_for(configs: Sequence[str]) -> dict[str, Any]:
    """One colour per configuration (tab10, tab20 beyond ten)."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(configs) <= 10 else "tab20"]
    return {c: cmap(i % cmap.N) for i, c in enumerate(configs)}


def markers_for(configs: Sequence[str]) -> dict[str, str]:
    """One marker shape per configuration."""
    return {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(configs)}


def figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def placeholder(text: str) -> Any:
    """A small figure that says why there is nothing to plot."""
    fig = figure(7, 1.6)
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=11, wrap=True)
    return fig


def grid(n: int, ncols: int = 2) -> tuple[int, int]:
    ncols = min(ncols, max(1, n))
    return math.ceil(n / ncols), ncols


def _settings(t: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(t["setting"]))


def _pooled_jobs(jobs: dict[str, pd.DataFrame], run_ids: Sequence[str]) -> pd.DataFrame:
    frames = [jobs[i] for i in run_ids if i in jobs]
    if not frames:
        return pd.DataFrame({"wait_s": [], "runtime_s": [], "status": []})
    j = pd.concat(frames, ignore_index=True)
    return j[j["status"] != "rejected"] if "status" in j else j


def step_means(
    times_s: np.ndarray, deltas: np.ndarray, edges_s: np.ndarray, start_level: float = 0.0
) -> np.ndarray:
    """Time-averaged level of a step function in each bin ``[edges[i], edges[i+1])``.

    The function starts at ``start_level`` and jumps by ``deltas[k]`` at
    ``times_s[k]`` (unsorted input is fine; simultaneous jumps add up).
    """
    order = np.argsort(times_s, kind="stable")
    t = np.asarray(times_s, dtype=float)[order]
    level = start_level + np.cumsum(np.asarray(deltas, dtype=float)[order])
    # area under the step function from t[0] to each event time
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(t))]) if len(t) else np.zeros(0)

    def integral(x: np.ndarray) -> np.ndarray:
        if not len(t):
            return start_level * x
        k = np.searchsorted(t, x, side="right") - 1
        before = k < 0
        kk = np.clip(k, 0, len(t) - 1)
        inside = area[kk] + level[kk] * (x - t[kk])
        # before the first event the level is start_level; shift so integral(t[0]) = 0
        return np.where(before, start_level * (x - t[0]), inside)

    edges = np.asarray(edges_s, dtype=float)
    return np.diff(integral(edges)) / np.diff(edges)


def _bins(t0: float, t1: float) -> tuple[np.ndarray, str]:
    """Bin edges for a time series: days when it spans 10 days or more, else hours."""
    width, name = (86400.0, "daily") if t1 - t0 >= 10 * 86400 else (3600.0, "hourly")
    n = max(1, math.ceil((t1 - t0) / width))
    return t0 + width * np.arange(n + 1), name


# --------------------------------------------------------------------------- energy vs makespan


def _coinciding(points: np.ndarray, rel: float = 1e-3) -> list[list[int]]:
    """Groups of indices whose points agree within ``rel`` on both axes (identical configurations)."""
    groups: list[list[int]] = []
    for i, p in enumerate(points):
        for g in groups:
            q = points[g[0]]
            if np.all(np.abs(p - q) <= rel * np.maximum(np.abs(q), 1e-12)):
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def plot_pareto(t: pd.DataFrame, colors: dict[str, Any], markers: dict[str, str]) -> Any:
    """Energy versus makespan per trace: every run (small), configuration means (large,
    one marker shape and colour each), the Pareto front of the means (dashed).
    Configurations with the same mean are drawn once and named together (``a = b``)."""
    settings = _settings(t)
    nrows, ncols = grid(len(settings))
    legend_rows = math.ceil((t["config"].nunique() + 1) / 2)
    fig = figure(6.4 * ncols, (4.2 + 0.17 * legend_rows) * nrows)
    e_scale, e_unit = energy_unit(float(t["energy_j"].max()))
    m_scale, m_unit = time_unit(float(t["makespan_s"].max()))
    for k, setting in enumerate(settings):
        ax = fig.add_subplot(nrows, ncols, k + 1)
        g = t[t["setting"] == setting]
        means = g.groupby("config", sort=False)[["makespan_s", "energy_j"]].mean()
        for config, runs in g.groupby("config", sort=False):
            ax.scatter(
                runs["makespan_s"] / m_scale,
                runs["energy_j"] / e_scale,
                s=14,
                alpha=0.35,
                marker=markers[config],
                color=colors[config],
                linewidths=0,
            )
        pts = means[["makespan_s", "energy_j"]].to_numpy(dtype=float)
        for group in _coinciding(pts):
            names = [means.index[i] for i in group]
            first = names[0]
            ax.scatter(
                pts[group[0], 0] / m_scale,
                pts[group[0], 1] / e_scale,
                s=90,
                marker=markers[first],
                facecolors="none",  # hollow: nearby means of other shapes stay visible
                edgecolors=colors[first],
                linewidths=1.8,
                label=" = ".join(names),
                zorder=3,
            )
        front = pareto_front(pts)
        ax.step(
            pts[front, 0] / m_scale,
            pts[front, 1] / e_scale,
            where="post",
            color="black",
            linestyle="--",
            linewidth=1,
            label="Pareto front of the means",
            zorder=2,
        )
        ax.set_title(f"{setting}: energy versus makespan", fontsize=10)
        ax.set_xlabel(f"makespan ({m_unit})")
        ax.set_ylabel(f"energy ({e_unit})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=2)
    return fig


# --------------------------------------------------------------------------- relative to baseline

RELATIVE_PANELS = (
    ("energy_vs_baseline", "Energy"),
    ("makespan_vs_baseline", "Makespan"),
    ("mean_wait_vs_baseline", "Mean waiting time"),
    ("mean_bsld_vs_baseline", "Mean bounded slowdown"),
)


def plot_relative(t: pd.DataFrame, colors: dict[str, Any], baseline: str | None) -> Any:
    """Four titled panels (energy, makespan, mean wait, mean bounded slowdown): each
    configuration's ratio to the baseline run of the same trace and seed, mean
    (marker, one shape per trace) and min..max over seeds (whiskers)."""
    if t["energy_vs_baseline"].isna().all():
        return placeholder(
            f"no baseline runs (baseline policy: {baseline!r}); nothing to compare with"
        )
    configs = list(dict.fromkeys(t["config"]))
    settings = _settings(t)
    height = 1.2 + 0.32 * len(configs) * max(1, len(settings)) ** 0.5
    fig = figure(12, 2 * height + 0.6)
    shapes = "osD^vP*X"
    for k, (col, title) in enumerate(RELATIVE_PANELS):
        ax = fig.add_subplot(2, 2, k + 1)
        if col not in t or t[col].isna().all():
            ax.set_title(f"{title}: no data", fontsize=10)
            ax.axis("off")
            continue
        for j, setting in enumerate(settings):
            g = t[t["setting"] == setting]
            stats = g.groupby("config", sort=False)[col].agg(["mean", "min", "max"])
            offset = (j - (len(settings) - 1) / 2) * 0.2
            for config, row in stats.iterrows():
                if not np.isfinite(row["mean"]):
                    continue
                ax.errorbar(
                    row["mean"],
                    configs.index(config) + offset,
                    xerr=[[row["mean"] - row["min"]], [row["max"] - row["mean"]]],
                    fmt=shapes[j % len(shapes)],
                    color=colors[config],
                    capsize=3,
                    markersize=6,
                    label=setting if config == stats.index[0] else None,
                )
        ax.axvline(1.0, color="black", linewidth=0.8)
        values = t[col].to_numpy(dtype=float)
        values = values[np.isfinite(values) & (values > 0)]
        log_scale = len(values) and values.max() / values.min() > 3
        if log_scale:  # ratios over orders of magnitude: 0.5 and 2 equally far from 1
            from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks(range(len(configs)), configs if k % 2 == 0 else [""] * len(configs))
        ax.tick_params(axis="y", labelsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{title} / baseline's", fontsize=10)
        ax.set_xlabel(
            f"ratio to the baseline ({baseline}); 1 = same, < 1 = less"
            + ("; log scale" if log_scale else ""),
            fontsize=8,
        )
        ax.grid(axis="x", alpha=0.3)
        if k == 1 and len(settings) > 1:
            ax.legend(title="trace", fontsize=8)
    return fig


# --------------------------------------------------------------------------- waiting-time ECDFs


#: An ECDF curve is drawn through at most about this many points (:func:`ecdf_points`).
ECDF_LEVELS = 1000


def ecdf_points(values: np.ndarray, levels: int = ECDF_LEVELS) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of the finite ``values`` as points ``(x, y)`` to draw as a
    step function (``where="post"``), at most ``levels + 2`` of them.

    With more than ``2 * levels`` values, the points kept are the first, the last and
    the first of each ``1 / levels`` of height: between two kept points the step
    drawn stays below the ECDF by less than ``1 / levels`` (a third of a pixel on a
    300-pixel axis at the default), and every kept point is on the ECDF. A figure of
    300,000 jobs per curve draws as fast as one of 2,000, and its SVG keeps its size.
    """
    x = np.sort(values[np.isfinite(values)])
    n = len(x)
    y = np.arange(1, n + 1) / max(1, n)
    if n <= 2 * levels:
        return x, y
    level = np.floor(y * levels)
    keep = np.empty(n, dtype=bool)
    keep[0] = keep[-1] = True
    keep[1:-1] = level[1:-1] != level[:-2]
    return x[keep], y[keep]


def plot_waits(jobs: dict[str, pd.DataFrame], t: pd.DataFrame, colors: dict[str, Any]) -> Any:
    """Per trace, the empirical CDF of per-job waiting time and of bounded slowdown,
    jobs pooled over seeds. A curve's height at the left edge is the share of jobs
    that did not wait; further left / higher is better."""
    from matplotlib.ticker import NullLocator

    settings = _settings(t)
    fig = figure(12, 0.8 + 3.6 * len(settings))
    for r, setting in enumerate(settings):
        g = t[t["setting"] == setting]
        configs = list(dict.fromkeys(g["config"]))
        ax_wait = fig.add_subplot(len(settings), 2, 2 * r + 1)
        ax_bsld = fig.add_subplot(len(settings), 2, 2 * r + 2)
        w_scale = 3600.0  # hours, the same on every trace
        for n, config in enumerate(configs):
            style = LINESTYLES[n % len(LINESTYLES)]
            j = _pooled_jobs(jobs, list(g.loc[g["config"] == config, "run_id"]))
            wait = j["wait_s"].to_numpy(dtype=float)
            run = j["runtime_s"].to_numpy(dtype=float)
            bsld = bounded_slowdown(wait, run)
            x, y = ecdf_points(wait / w_scale)
            ax_wait.step(
                x, y, where="post", color=colors[config], linestyle=style, label=config, lw=1.3
            )
            x, y = ecdf_points(bsld)
            ax_bsld.step(
                x, y, where="post", color=colors[config], linestyle=style, label=config, lw=1.3
            )
        ax_wait.set_xscale("symlog", linthresh=60.0 / w_scale)
        ax_wait.set_xlim(left=0)
        top = max(1.0, ax_wait.get_xlim()[1])
        ticks = [
            (0.0, "0"),
            (1 / 60, "1 min"),
            (0.1, "6 min"),
            (1.0, "1 h"),
            (10.0, "10 h"),
            (100.0, "100 h"),
            (1000.0, "1000 h"),
        ]
        ticks = [(v, label) for v, label in ticks if v <= top]
        ax_wait.set_xticks([v for v, _ in ticks], [label for _, label in ticks])
        ax_wait.xaxis.set_minor_locator(NullLocator())
        ax_wait.set_xlabel("waiting time (linear below 1 min, log above)")
        ax_wait.set_ylabel("share of jobs waiting at most x")
        ax_wait.set_title(f"{setting}: waiting time (ECDF)", fontsize=10)
        ax_bsld.set_xscale("log")
        ax_bsld.set_xlabel(f"bounded slowdown (tau = {BSLD_TAU_S:g} s, log scale)")
        ax_bsld.set_title(f"{setting}: bounded slowdown (ECDF)", fontsize=10)
        for ax in (ax_wait, ax_bsld):
            ax.set_ylim(0, 1.01)
            ax.grid(alpha=0.3)
        ax_bsld.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return fig


# --------------------------------------------------------------------------- power over time


def _power_means(power: pd.DataFrame, edges: np.ndarray, column: str = "power_w") -> np.ndarray:
    t = power["time_s"].to_numpy(dtype=float)
    p = power[column].to_numpy(dtype=float)
    if not len(t):
        return np.zeros(len(edges) - 1)
    return step_means(t, np.diff(np.concatenate([[0.0], p])), edges)


def _zoom_window(
    power: pd.DataFrame, reference: pd.DataFrame | None, t0: float, t1: float
) -> tuple[float, float]:
    """A window of about two days (or a fifth of a shorter run) where the run and the
    reference differ most in mean power (the middle of the run without a reference)."""
    span = t1 - t0
    width = min(2 * 86400.0, max(span / 5, 3600.0)) if span > 0 else 1.0
    if span <= width:
        return t0, t1
    starts = np.linspace(t0, t1 - width, 40)
    if reference is None or not len(reference):
        mid = t0 + (span - width) / 2
        return mid, mid + width
    diff = [
        abs(
            _power_means(power, np.array([s, s + width]))[0]
            - _power_means(reference, np.array([s, s + width]))[0]
        )
        for s in starts
    ]
    s = float(starts[int(np.argmax(diff))])
    return s, s + width


def plot_power(
    power: pd.DataFrame,
    title: str,
    reference: pd.DataFrame | None,
    ref_label: str | None,
    t_end_s: float | None = None,
) -> Any:
    """Top: platform power over the whole run as a daily (hourly for short runs) mean,
    with the baseline run's for comparison. Bottom: a zoomed window, power stacked
    by node state, the baseline's total as a black line."""
    if not len(power):
        return placeholder("this run recorded no power timeline")
    t0 = float(power["time_s"].iloc[0])
    t1 = float(t_end_s) if t_end_s else float(power["time_s"].iloc[-1])
    if reference is not None and len(reference):
        t1 = max(t1, float(reference["time_s"].iloc[-1]))
    edges, name = _bins(t0, t1)
    scale, unit = time_unit(t1 - t0)
    fig = figure(12, 7.2)
    ax = fig.add_subplot(2, 1, 1)
    x = (edges[:-1] - t0) / scale
    ax.step(
        x,
        _power_means(power, edges) / 1000,
        where="post",
        color="#d62728",
        linewidth=1.6,
        label=f"{title.split(' on ')[0]} ({name} mean)",
    )
    if reference is not None and len(reference):
        ax.step(
            x,
            _power_means(reference, edges) / 1000,
            where="post",
            color="black",
            linewidth=1.0,
            label=f"{ref_label} ({name} mean)",
        )
    z0, z1 = _zoom_window(power, reference, t0, t1)
    ax.axvspan(
        (z0 - t0) / scale, (z1 - t0) / scale, color="#1f77b4", alpha=0.12, label="zoomed below"
    )
    ax.set_xlabel(f"time since the first submission ({unit})")
    ax.set_ylabel("platform power (kW)")
    ax.set_title(f"{title}: {name} mean power over the whole run", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")

    ax = fig.add_subplot(2, 1, 2)
    zscale, zunit = time_unit(z1 - z0)
    sel = power[(power["time_s"] < z1)]
    # include the step in force at z0
    before = sel[sel["time_s"] <= z0].tail(1).assign(time_s=z0)
    sel = pd.concat([before, sel[sel["time_s"] > z0]], ignore_index=True)
    sel = pd.concat([sel, sel.tail(1).assign(time_s=z1)], ignore_index=True)
    xs = (sel["time_s"].to_numpy(dtype=float) - t0) / zscale
    bottom = np.zeros(len(sel))
    for state, color in STATES:
        y = sel[f"{state}_w"].to_numpy(dtype=float) / 1000.0
        if not np.any(y):
            continue
        ax.fill_between(
            xs,
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
        ref = reference[(reference["time_s"] < z1)]
        rb = ref[ref["time_s"] <= z0].tail(1).assign(time_s=z0)
        ref = pd.concat([rb, ref[ref["time_s"] > z0]], ignore_index=True)
        ref = pd.concat([ref, ref.tail(1).assign(time_s=z1)], ignore_index=True)
        ax.step(
            (ref["time_s"].to_numpy(dtype=float) - t0) / zscale,
            ref["power_w"].to_numpy(dtype=float) / 1000.0,
            where="post",
            color="black",
            linewidth=0.8,
            label=f"total power, {ref_label}",
        )
    ax.set_xlim((z0 - t0) / zscale, (z1 - t0) / zscale)
    ax.set_xlabel(f"time since the first submission ({zunit})")
    ax.set_ylabel("platform power (kW)")
    ax.set_title(f"zoom: {(z1 - z0) / 3600:.0f} h, power by node state", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="outside lower center", ncols=5)
    return fig


# --------------------------------------------------------------------------- utilisation and queue


def busy_nodes_events(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Jump times and sizes of the busy-node count (+nodes at start, -nodes at end)."""
    started = jobs[np.isfinite(jobs["start_s"].to_numpy(dtype=float, na_value=np.nan))]
    n = started["nodes"].to_numpy(dtype=float)
    times = np.concatenate(
        [started["start_s"].to_numpy(dtype=float), started["end_s"].to_numpy(dtype=float)]
    )
    return times, np.concatenate([n, -n])


def queue_events(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Jump times and sizes of the queue length (+1 at submission, -1 at start; rejected jobs never queue)."""
    start = jobs["start_s"].to_numpy(dtype=float, na_value=np.nan)
    started = np.isfinite(start)
    submit = jobs["submit_s"].to_numpy(dtype=float)[started]
    return np.concatenate([submit, start[started]]), np.concatenate(
        [np.ones(len(submit)), -np.ones(len(submit))]
    )


def _last_event_s(jobs: pd.DataFrame) -> float:
    """The last end of a run's jobs, or its last submission when no job ended
    (a policy that starts nothing)."""
    ends = jobs["end_s"].to_numpy(dtype=float, na_value=np.nan)
    ends = ends[np.isfinite(ends)]
    last_submit = float(jobs["submit_s"].max())
    return max(float(ends.max()), last_submit) if len(ends) else last_submit


def plot_activity(runs: Sequence[tuple[str, pd.DataFrame]], total_nodes: float, title: str) -> Any:
    """Utilisation (busy nodes / all nodes) and queue length (waiting jobs) over
    time, daily (hourly for short runs) means, for the chosen run and its baseline."""
    runs = [(label, j) for label, j in runs if len(j)]
    if not runs:
        return placeholder("no jobs to plot")
    t0 = min(float(j["submit_s"].min()) for _, j in runs)
    t1 = max(_last_event_s(j) for _, j in runs)
    edges, name = _bins(t0, t1)
    scale, unit = time_unit(t1 - t0)
    x = (edges[:-1] - t0) / scale
    fig = figure(12, 5.6)
    ax_u = fig.add_subplot(2, 1, 1)
    ax_q = fig.add_subplot(2, 1, 2, sharex=ax_u)
    styles = [("#d62728", 1.6), ("black", 1.0), ("#1f77b4", 1.0)]
    for (label, j), (color, lw) in zip(runs, styles, strict=False):
        times, deltas = busy_nodes_events(j)
        util = step_means(times, deltas, edges) / max(total_nodes, 1e-9) * 100
        ax_u.step(x, util, where="post", color=color, linewidth=lw, label=label)
        times, deltas = queue_events(j)
        ax_q.step(
            x,
            step_means(times, deltas, edges),
            where="post",
            color=color,
            linewidth=lw,
            label=label,
        )
    ax_u.set_ylabel("utilisation (%)")
    ax_u.set_ylim(0, 105)
    ax_u.set_title(
        f"{title}: {name} mean utilisation (busy nodes / {total_nodes:,.0f} nodes)", fontsize=10
    )
    ax_q.set_ylabel("waiting jobs")
    ax_q.set_ylim(bottom=0)
    ax_q.set_title(f"{name} mean queue length", fontsize=10)
    ax_q.set_xlabel(f"time since the first submission ({unit})")
    for ax in (ax_u, ax_q):
        ax.grid(alpha=0.3)
    ax_u.legend(fontsize=8, loc="lower right")
    return fig


# --------------------------------------------------------------------------- schedule (Gantt)


def _drawable(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(start, end, nodes, mask)`` of a jobs table; ``mask``: the jobs that take node
    rows in a schedule view (started, ended, on at least one node)."""
    start = jobs["start_s"].to_numpy(dtype=float, na_value=np.nan)
    end = jobs["end_s"].to_numpy(dtype=float, na_value=np.nan)
    nodes = jobs["nodes"].to_numpy(dtype=float, na_value=0).astype(int)
    return start, end, nodes, np.isfinite(start) & np.isfinite(end) & (nodes > 0)


def assign_nodes(jobs: pd.DataFrame, started_by_s: float = math.inf) -> list[list[int]]:
    """Node rows for a schedule view: each started job gets the lowest free rows at its
    start (ends are processed before starts at the same instant). The engine does
    not record node ids; any assignment that never overlaps draws the same schedule.

    ``started_by_s``: only the jobs that started at or before it get rows (the others
    an empty list). Rows are given in time order, so a job's rows are those it gets
    when every job has rows: what a window of the schedule needs."""
    start, end, nodes, drawable = _drawable(jobs)
    events = []
    for i in np.flatnonzero(drawable & (start <= started_by_s)).tolist():
        events.append((end[i], 0, i))
        events.append((start[i], 1, i))
    events.sort()
    free: list[int] = []
    next_row = 0
    rows: list[list[int]] = [[] for _ in range(len(jobs))]
    for _, kind, i in events:
        if kind == 0:
            for r in rows[i]:
                heapq.heappush(free, r)
        else:
            got = [heapq.heappop(free) for _ in range(min(nodes[i], len(free)))]
            while len(got) < nodes[i]:
                got.append(next_row)
                next_row += 1
            rows[i] = sorted(got)
    return rows


def peak_rows(jobs: pd.DataFrame) -> int:
    """The rows :func:`assign_nodes` uses for all of ``jobs`` (at least 1): the peak
    of the busy-node count, ends before starts at the same instant (a new row is
    opened only when every open row is busy)."""
    start, end, nodes, drawable = _drawable(jobs)
    n = nodes[drawable]
    times = np.concatenate([end[drawable], start[drawable]])
    kind = np.concatenate([np.zeros(len(n)), np.ones(len(n))])  # ends first
    order = np.lexsort((kind, times))
    busy = np.cumsum(np.concatenate([-n, n])[order])
    return max(1, int(busy.max())) if len(busy) else 1


def _runs_of(rows: list[int]) -> list[tuple[int, int]]:
    """Contiguous stretches ``(first, length)`` of sorted row numbers."""
    out: list[tuple[int, int]] = []
    for r in rows:
        if out and out[-1][0] + out[-1][1] == r:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((r, 1))
    return out


def plot_schedule(
    runs: Sequence[tuple[str, pd.DataFrame]], max_jobs: int = SCHEDULE_MAX_JOBS
) -> Any:
    """Gantt-style view: one rectangle per job (time x nodes), coloured by CPU frequency,
    for the chosen run and its baseline. Runs with more than ``max_jobs`` jobs show the
    window in which the first ``max_jobs`` jobs started."""
    from matplotlib import colormaps
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import Normalize

    runs = [(label, j) for label, j in runs if len(j)]
    if not runs:
        return placeholder("no jobs to plot")
    freqs = np.concatenate([j["freq_ghz"].to_numpy(dtype=float, na_value=np.nan) for _, j in runs])
    freqs = freqs[np.isfinite(freqs)]
    lo, hi = (float(freqs.min()), float(freqs.max())) if len(freqs) else (1.0, 1.0)
    one_freq = hi <= lo
    norm = Normalize(lo, hi if not one_freq else lo + 1.0)
    cmap = colormaps["viridis"]
    t0 = min(float(j["submit_s"].min()) for _, j in runs)
    first = runs[0][1]
    starts = np.sort(first["start_s"].to_numpy(dtype=float, na_value=np.nan))
    starts = starts[np.isfinite(starts)]
    window = None
    if len(first) > max_jobs and len(starts) > max_jobs:
        window = (float(starts[0]), float(starts[max_jobs - 1]))
    span = (window[1] - window[0]) if window else max(_last_event_s(j) for _, j in runs) - t0
    scale, unit = time_unit(span)
    fig = figure(12, 0.8 + 3.2 * len(runs))
    axes: list[Axes] = []
    for k, (label, j) in enumerate(runs):
        ax = fig.add_subplot(len(runs), 1, k + 1, sharex=axes[0] if axes else None)
        axes.append(ax)
        rows = assign_nodes(j, window[1] if window else math.inf)
        start = j["start_s"].to_numpy(dtype=float, na_value=np.nan)
        end = j["end_s"].to_numpy(dtype=float, na_value=np.nan)
        freq = j["freq_ghz"].to_numpy(dtype=float, na_value=np.nan)
        polys, colours = [], []
        for i, node_rows in enumerate(rows):
            if not node_rows:
                continue
            if window and (end[i] < window[0] or start[i] > window[1]):
                continue
            x0, x1 = (start[i] - t0) / scale, (end[i] - t0) / scale
            for r0, n in _runs_of(node_rows):
                polys.append([(x0, r0), (x1, r0), (x1, r0 + n), (x0, r0 + n)])
                if one_freq or not np.isfinite(freq[i]):
                    colours.append("#1f77b4")
                else:
                    colours.append(cmap(norm(freq[i])))
        ax.add_collection(
            PolyCollection(polys, facecolors=colours, edgecolors="white", linewidths=0.3)
        )
        height = peak_rows(j)  # (the whole run's, also in a window)
        ax.set_ylim(0, height)
        ax.set_ylabel("nodes")
        n_jobs = len(j) if window is None else max_jobs
        what = "all jobs" if window is None else f"window of the first {n_jobs} starts"
        if one_freq:
            what += f", every job at {lo:g} GHz"
        ax.set_title(f"{label}: schedule ({what})", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    if window:
        axes[0].set_xlim((window[0] - t0) / scale, (window[1] - t0) / scale)
    else:
        axes[0].autoscale(axis="x")
        axes[0].set_xlim(left=0)
    axes[-1].set_xlabel(f"time since the first submission ({unit})")
    from matplotlib.cm import ScalarMappable

    if not one_freq:
        fig.colorbar(
            ScalarMappable(norm=norm, cmap=cmap), ax=axes, label="CPU frequency (GHz)", shrink=0.8
        )
    return fig


# --------------------------------------------------------------------------- energy breakdown


def plot_breakdown(t: pd.DataFrame) -> Any:
    """Stacked bars of busy/idle/switching/off energy per configuration (mean over seeds)."""
    settings = _settings(t)
    nrows, ncols = grid(len(settings))
    fig = figure(6.4 * ncols, 0.9 + (1.0 + 0.35 * t["config"].nunique()) * nrows)
    e_scale, e_unit = energy_unit(float(t["energy_j"].max()))
    for k, setting in enumerate(settings):
        ax = fig.add_subplot(nrows, ncols, k + 1)
        g = (
            t[t["setting"] == setting]
            .groupby("config", sort=False)[[f"energy_{s}_j" for s, _ in STATES]]
            .mean()
        )
        left = np.zeros(len(g))
        y = np.arange(len(g))
        for state, color in STATES:
            w = g[f"energy_{state}_j"].to_numpy(dtype=float) / e_scale
            ax.barh(y, w, left=left, color=color, label=state)
            left += w
        ax.set_yticks(y, list(g.index), fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"energy ({e_unit})")
        ax.set_title(f"{setting}: energy by node state", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        if k == 0:
            handles, labels = ax.get_legend_handles_labels()
            fig.legend(
                handles, labels, title="node state", fontsize=8, loc="outside lower center", ncols=4
            )
    return fig


# --------------------------------------------------------------------------- predictor error


def job_errors(jobs: dict[str, pd.DataFrame], t: pd.DataFrame) -> pd.DataFrame:
    """Absolute percentage error of every completed, predicted job of the predictor-driven runs.

    Columns: ``setting, predictor, run_id, order`` (position in submission
    order: about how many jobs had been submitted before it), ``runtime_ape``
    and ``energy_ape`` (%, NaN when that quantity was not predicted).
    """
    frames = []
    for row in t[t["predictor"] != "none"].itertuples(index=False):
        j = jobs.get(row.run_id)
        if j is None or "predicted_runtime_s" not in j:
            continue
        j = j.sort_values(["submit_s", "job_id"], kind="stable")
        order = np.arange(len(j))
        done = j["status"].to_numpy() == "completed"
        out = {"order": order}
        for quantity, pcol, tcol in (
            ("runtime", "predicted_runtime_s", "runtime_s"),
            ("energy", "predicted_energy_j", "energy_j"),
        ):
            pred = (
                j[pcol].to_numpy(dtype=float, na_value=np.nan)
                if pcol in j
                else np.full(len(j), np.nan)
            )
            true = j[tcol].to_numpy(dtype=float, na_value=np.nan)
            ok = done & np.isfinite(pred) & np.isfinite(true) & (true > 0)
            out[f"{quantity}_ape"] = np.where(
                ok, np.abs(pred - true) / np.where(ok, true, 1) * 100, np.nan
            )
        frame = pd.DataFrame(out)
        frame = frame[frame[["runtime_ape", "energy_ape"]].notna().any(axis=1)]
        frame.insert(0, "run_id", row.run_id)
        frame.insert(0, "predictor", row.predictor)
        frame.insert(0, "setting", row.setting)
        frames.append(frame)
    columns = ["setting", "predictor", "run_id", "order", "runtime_ape", "energy_ape"]
    return (
        pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
    )


def error_curves(errors: pd.DataFrame, bins: int = 10) -> pd.DataFrame:
    """Median absolute percentage error as jobs accumulate, per trace and predictor:
    jobs in log-spaced bins of their position in submission order. Columns
    ``setting, predictor, quantity, jobs_seen, median_ape, mean_ape, n``."""
    rows = []
    for (setting, predictor), g in errors.groupby(["setting", "predictor"], sort=False):
        for quantity in ("runtime", "energy"):
            sel = g[np.isfinite(g[f"{quantity}_ape"].to_numpy(dtype=float))]
            if sel.empty:
                continue
            k = sel["order"].to_numpy()
            ape = sel[f"{quantity}_ape"].to_numpy(dtype=float)
            edges = (
                np.unique(np.round(np.geomspace(1, max(2, k.max() + 2), bins + 1)).astype(int)) - 1
            )
            which = np.clip(np.searchsorted(edges, k, side="right") - 1, 0, len(edges) - 2)
            for b in range(len(edges) - 1):
                m = which == b
                if m.sum() == 0:
                    continue
                rows.append(
                    {
                        "setting": setting,
                        "predictor": predictor,
                        "quantity": quantity,
                        "jobs_seen": float(np.median(k[m])),
                        "median_ape": float(np.median(ape[m])),
                        "mean_ape": float(np.mean(ape[m])),
                        "n": int(m.sum()),
                    }
                )
    return pd.DataFrame(
        rows,
        columns=["setting", "predictor", "quantity", "jobs_seen", "median_ape", "mean_ape", "n"],
    )


def plot_predictor_error(errors: pd.DataFrame, curves: pd.DataFrame) -> Any:
    """Per trace (one row each): left, the median absolute percentage error of runtime and
    energy per predictor, oracle included, values written on the bars; right, the
    median runtime and energy error as the predictor sees more finished jobs."""
    if errors.empty:
        return placeholder("no predictor-driven runs with predictions in this experiment")
    settings = list(dict.fromkeys(errors["setting"]))
    predictors = list(dict.fromkeys(errors["predictor"]))
    colors = colors_for(predictors)
    fig = figure(13, 0.6 + 3.8 * len(settings))
    q_colors = (("runtime", "#1f77b4"), ("energy", "#2ca02c"))
    for r, setting in enumerate(settings):
        g = errors[errors["setting"] == setting]
        ax = fig.add_subplot(len(settings), 3, 3 * r + 1)
        med = g.groupby("predictor", sort=False)[["runtime_ape", "energy_ape"]].median()
        x = np.arange(len(med))
        top = 1.0
        for k, (quantity, color) in enumerate(q_colors):
            values = med[f"{quantity}_ape"].to_numpy(dtype=float)
            bars = ax.bar(
                x + (k - 0.5) * 0.38, np.nan_to_num(values), width=0.38, color=color, label=quantity
            )
            for bar, v in zip(bars, values, strict=True):
                if np.isfinite(v):
                    ax.annotate(
                        f"{v:.1f}" if v < 100 else f"{v:.0f}",
                        (bar.get_x() + bar.get_width() / 2, v),
                        ha="center",
                        va="bottom",
                        fontsize=7,
                    )
                    top = max(top, v)
        # linear unless errors span orders of magnitude; never a pure log axis,
        # on which the oracle's (near) zero error would vanish
        if top > 300:
            ax.set_yscale("symlog", linthresh=10.0)
            ax.set_ylim(0, top * 3)
            ax.set_ylabel("median absolute error (%; log above 10)")
        else:
            ax.set_ylim(0, top * 1.15)
            ax.set_ylabel("median absolute error (%)")
        ax.set_xticks(x, list(med.index), rotation=20, ha="right", fontsize=8)
        ax.set_title(f"{setting}: median error per predictor", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
        for k, (quantity, _) in enumerate(q_colors):
            ax = fig.add_subplot(len(settings), 3, 3 * r + 2 + k)
            c = curves[(curves["setting"] == setting) & (curves["quantity"] == quantity)]
            for predictor, pg in c.groupby("predictor", sort=False):
                ax.plot(
                    pg["jobs_seen"] + 1,
                    pg["median_ape"],
                    marker="o",
                    markersize=3,
                    color=colors[predictor],
                    label=predictor,
                )
            ax.set_xscale("log")
            ax.set_yscale("symlog", linthresh=1.0)
            ax.set_ylim(bottom=0)
            ax.set_xlabel("jobs submitted before (log)")
            ax.set_ylabel(f"median {quantity} error (%; log above 1)")
            ax.set_title(f"{setting}: {quantity} error as jobs accumulate", fontsize=10)
            ax.grid(alpha=0.3)
            if len(c):
                ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------------------- oracle regret


def plot_oracle_regret(t: pd.DataFrame, colors: dict[str, Any]) -> Any:
    """Energy and makespan of policy+predictor over policy+oracle, minus 1 (%), mean and min..max over seeds."""
    r = t[(t["predictor_spec"] != "none") & (t["predictor_spec"] != "oracle")]
    r = r[np.isfinite(r["oracle_energy_regret"].to_numpy(dtype=float))]
    if r.empty:
        return placeholder(
            "no oracle twins: add the 'oracle' predictor to the predictor-driven policies"
        )
    settings = _settings(r)
    configs = list(dict.fromkeys(r["config"]))
    fig = figure(12, 1.4 + 0.45 * len(configs) * max(1, len(settings)) ** 0.5)
    for k, (col, label) in enumerate(
        (
            ("oracle_energy_regret", "Energy regret"),
            ("oracle_makespan_regret", "Makespan regret"),
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
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("% more than the same policy with the oracle")
        ax.grid(axis="x", alpha=0.3)
        if k == 1 and len(settings) > 1:
            ax.legend(title="trace (shade)", fontsize=7)
    return fig
