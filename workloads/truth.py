"""The ground-truth protocol: how the simulator asks a job how it really behaves.

A :class:`GroundTruth` knows, for every job of one trace (by its row index in
the trace's jobs table), the hidden model of its application. The engine calls
it with arrays (one entry per job starting in the same batch):

* :meth:`GroundTruth.evaluate` -> true runtime (s) and true mean power per
  allocated node (W) at ``(node_type, nodes, freq_ghz, cores)``;
* :meth:`GroundTruth.measure` -> what the finished runs report to predictors:
  ``truth * (1 + noise)`` plus hardware counters and RAPL power, as a runs
  table with the columns of :data:`predictors.base.RUN_COLUMNS` (the
  ``requested_*`` and ``submit_s`` columns are filled by the caller).

Optional capabilities (faster hand-overs, a scalar path) are declared in a
:class:`TruthTags` returned by ``__energysched_tags__()`` and read through
:func:`get_truth_tags`; a truth that declares nothing is used through the two
methods above only. A truth may also expose ``communicates`` (per job, whether
it exchanges messages over the network; the engine then models contention).

Implementations live in :mod:`workloads.applications`. ``node_type`` is a
duck-typed node type (``name``, ``cores_per_node``, ``pstates``, ``fmax_ghz``,
``fmin_ghz``, ``idle_power_w``, ``max_power_w``), e.g.
:class:`simulator.platform.NodeType`; workloads never imports the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd


@runtime_checkable
class GroundTruth(Protocol):
    """Hidden behaviour of every job of one trace."""

    #: int application id of every job (row of the trace's jobs table).
    application: np.ndarray

    def evaluate(
        self,
        job_index: np.ndarray,
        node_type: Any,
        nodes: np.ndarray,
        freq_ghz: np.ndarray,
        cores: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """True ``(runtime_s, power_w_per_node)`` for each row."""
        ...

    def measure(
        self,
        job_index: np.ndarray,
        node_type: Any,
        nodes: np.ndarray,
        freq_ghz: np.ndarray,
        cores: np.ndarray | None,
        runtime_s: np.ndarray,
        power_w: np.ndarray,
        rng: np.random.Generator,
    ) -> pd.DataFrame:
        """Noisy measurements of finished runs (see module docstring)."""
        ...


@dataclass(slots=True)
class TruthTags:
    """What a ground truth declares to the engine beyond :class:`GroundTruth`.

    Every field defaults to False (the protocol's two methods only), so a
    plug-in truth that declares nothing works unchanged.

    Attributes:
        measure_columns: ``measure(..., as_columns=True)`` returns a dict of 1-D
            numpy arrays (the DataFrame's columns) instead of a DataFrame.
        measure_rows: ``measure_row_values(job_index, node_type, nodes, freq_ghz,
            cores, runtime_s, power_w, rng)`` takes plain lists and returns one
            tuple per run (``application`` then
            :data:`~workloads.schema.MEASUREMENT_COLUMNS`), with the same values
            and draws as ``measure``.
        evaluate_one: ``evaluate_one(job_index, node_type, nodes, freq_ghz,
            cores)`` returns ``(runtime_s, power_w)`` for one job in plain Python,
            or ``None`` when that job needs :meth:`GroundTruth.evaluate`.
        row_measurer: besides ``measure_rows``, ``row_measurer(node_type, rng)``
            returns a function ``measure(job_index, nodes, freq_ghz, cores,
            runtime_s, power_w)`` that measures one run as ``measure_row_values``
            does a batch of that run alone (the same tuple, the same draws from
            ``rng``); the engine makes one per node type and replay and measures
            every job that finishes alone with it.
        work_grid: ``work_grid(application, node_type, nodes, freqs)`` returns
            ``(runtime_s, power_w)``, arrays of shape ``(len(nodes), len(freqs))``:
            one unit of the application's work on each configuration (all cores
            of the node type), or ``None`` when the application's runtime is not
            proportional to its work; and ``job_work(job_index)`` returns the
            job's ``(application, work)``: ``evaluate`` gives the job ``work``
            times that runtime and the same power (up to rounding). The
            ``oracle`` predictor answers a policy's grids from it
            (:meth:`predictors.baselines.OraclePredictor.grid_shape`).
    """

    measure_columns: bool = False
    measure_rows: bool = False
    evaluate_one: bool = False
    row_measurer: bool = False
    work_grid: bool = False


def get_truth_tags(truth: Any) -> TruthTags:
    """The :class:`TruthTags` of ``truth`` (the defaults when it declares none)."""
    declare = getattr(truth, "__energysched_tags__", None)
    if declare is None:
        return TruthTags()
    tags = declare()
    if not isinstance(tags, TruthTags):
        raise TypeError(
            f"{type(truth).__name__}.__energysched_tags__() must return a TruthTags, "
            f"got {type(tags).__name__}"
        )
    return tags
