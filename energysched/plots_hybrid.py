"""Plots of hybrid MPI+OpenMP runs: the chosen ``(n, c, f)`` and one job's energy-time front.

Two figures (matplotlib ``Figure`` objects, no pyplot state; save them with
``fig.savefig(path)``):

* :func:`plot_chosen_configs` -- for one or more runs (their jobs tables), the
  share of jobs at each cores-per-node count and at each clock, and the
  chosen node count against the requested one;
* :func:`plot_energy_time_front` -- every configuration ``(n, c, f)`` of one
  job under the ground truth (runtime against energy), with the time-energy
  Pareto front (:func:`workloads.models.pareto.pareto_front`) and, if given,
  the configurations policies chose for it.

:func:`job_front` gives the numbers behind the second plot as a table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from workloads.models.pareto import pareto_front

__all__ = ["job_front", "plot_chosen_configs", "plot_energy_time_front"]


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols)
    return fig, axes


def plot_chosen_configs(
    runs: Mapping[str, pd.DataFrame], cores_per_node: int, freqs_ghz: Sequence[float]
) -> Any:
    """Share of jobs per cores-per-node count, per clock, and chosen vs requested nodes.

    Args:
        runs: label -> jobs table of a run (columns ``cores``, ``freq_ghz``,
            ``nodes``, ``requested_nodes``; e.g. ``RunResult.jobs``).
        cores_per_node: cores of a node (the x range of the first panel).
        freqs_ghz: the P-state clocks (the x ticks of the second panel).

    Returns:
        A matplotlib ``Figure`` with three panels.
    """
    fig, (ax_c, ax_f, ax_n) = _figure(12.0, 3.6, ncols=3)
    labels = list(runs)
    width = 0.8 / max(1, len(labels))
    cores = np.arange(1, cores_per_node + 1)
    freqs = np.asarray(sorted(freqs_ghz), dtype=float)
    for i, label in enumerate(labels):
        jobs = runs[label]
        share_c = jobs["cores"].value_counts(normalize=True).reindex(cores, fill_value=0.0)
        ax_c.bar(
            cores + (i - (len(labels) - 1) / 2) * width, share_c.to_numpy(), width, label=label
        )
        f = jobs["freq_ghz"].round(6)
        share_f = f.value_counts(normalize=True).reindex(freqs.round(6), fill_value=0.0)
        pos = np.arange(len(freqs)) + (i - (len(labels) - 1) / 2) * width
        ax_f.bar(pos, share_f.to_numpy(), width, label=label)
        ax_n.scatter(
            jobs["requested_nodes"] * (1 + 0.04 * (i - (len(labels) - 1) / 2)),
            jobs["nodes"],
            s=8,
            alpha=0.4,
            label=label,
        )
    ax_c.set_xlabel("cores per node")
    ax_c.set_ylabel("share of jobs")
    ax_f.set_xticks(np.arange(len(freqs)), [f"{v:g}" for v in freqs])
    ax_f.set_xlabel("clock (GHz)")
    ax_n.set_xscale("log", base=2)
    ax_n.set_yscale("log", base=2)
    ax_n.set_xlabel("requested nodes")
    ax_n.set_ylabel("chosen nodes")
    ax_c.legend(fontsize="small")
    fig.suptitle("Configurations chosen")
    return fig


def job_front(
    truth: Any,
    node_type: Any,
    job_index: int,
    nodes: Sequence[int],
    cores: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Every ``(n, c, f)`` of one job under the ground truth, with its Pareto flag.

    Args:
        truth: the run's ground truth (``evaluate(job, node_type, n, f, c)``).
        node_type: the node type (``freqs_ghz``, ``cores_per_node``).
        job_index: the job's row in the trace.
        nodes: node counts to evaluate.
        cores: cores-per-node counts (default: ``1..cores_per_node``).

    Returns:
        DataFrame ``nodes, cores, freq_ghz, runtime_s, energy_j, pareto``.
    """
    cs = list(range(1, int(node_type.cores_per_node) + 1)) if cores is None else list(cores)
    grid = [(n, c, f) for n in nodes for c in cs for f in node_type.freqs_ghz]
    n, c, f = (np.asarray(v) for v in zip(*grid))
    t, p = truth.evaluate(np.full(len(grid), job_index), node_type, n, f, c)
    energy = t * p * n
    front = np.zeros(len(grid), dtype=bool)
    front[pareto_front(t, energy)] = True
    return pd.DataFrame(
        {"nodes": n, "cores": c, "freq_ghz": f, "runtime_s": t, "energy_j": energy, "pareto": front}
    )


def plot_energy_time_front(
    front: pd.DataFrame, chosen: Mapping[str, tuple[float, float]] | None = None, title: str = ""
) -> Any:
    """Runtime against energy of every configuration of one job, its Pareto front, the picks.

    Args:
        front: :func:`job_front`'s table.
        chosen: label -> ``(runtime_s, energy_j)`` of configurations to mark
            (e.g. what each policy ran the job with).
        title: figure title.
    """
    fig, ax = _figure(6.4, 4.4)
    cloud = ax.scatter(
        front["runtime_s"],
        front["energy_j"] / 3.6e6,
        c=front["cores"],
        s=10,
        cmap="viridis",
        alpha=0.6,
    )
    fig.colorbar(cloud, ax=ax, label="cores per node")
    best = front[front["pareto"]].sort_values("runtime_s")
    ax.plot(best["runtime_s"], best["energy_j"] / 3.6e6, "k--", lw=1.2, label="Pareto front")
    for label, (t, e) in (chosen or {}).items():
        ax.scatter([t], [e / 3.6e6], marker="*", s=160, edgecolor="k", label=label, zorder=3)
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels overlap on a short range
    ax.set_xlabel("runtime (s)")
    ax.set_ylabel("energy (kWh)")
    ax.legend(fontsize="small")
    ax.set_title(title or "Energy-time configurations of one job")
    return fig
