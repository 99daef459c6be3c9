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

Implementations live in :mod:`workloads.applications`. ``node_type`` is a
duck-typed node type (``name``, ``cores_per_node``, ``pstates``, ``fmax_ghz``,
``fmin_ghz``, ``idle_power_w``, ``max_power_w``), e.g.
:class:`simulator.platform.NodeType`; workloads never imports the simulator.
"""

from __future__ import annotations

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
