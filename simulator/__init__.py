"""The discrete-event engine, the platform, energy accounting and metrics.

* :func:`simulate` replays a trace on a :class:`Platform` under a policy and
  returns a :class:`RunResult` (jobs table, power timeline, summary).
* :func:`load_platform` reads a platform TOML file; :func:`platform_from_trace`
  builds a homogeneous platform from a trace header.
* :class:`RunConfig` holds the engine settings (overrun rule, power
  management, power cap, seed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

# public names by the module that defines them, loaded on first access (lazy_loader): reading
# an experiment file (simulator.config) does not import the engine and pandas
__getattr__, __dir__, _lazy_names = lazy_loader.attach(
    __name__,
    submod_attrs={
        "config": ["RunConfig"],
        "engine": ["simulate"],
        "metrics": ["bounded_slowdown", "summarize"],
        "platform": [
            "DEFAULT_PSTATES",
            "NodeType",
            "PState",
            "Platform",
            "homogeneous_platform",
            "load_platform",
            "platform_from_dict",
            "platform_from_trace",
        ],
        "results": ["JOB_COLUMNS", "POWER_COLUMNS", "RunResult", "load_run"],
    },
)
__all__ = [
    "DEFAULT_PSTATES",
    "JOB_COLUMNS",
    "POWER_COLUMNS",
    "NodeType",
    "PState",
    "Platform",
    "RunConfig",
    "RunResult",
    "bounded_slowdown",
    "homogeneous_platform",
    "load_platform",
    "load_run",
    "platform_from_dict",
    "platform_from_trace",
    "simulate",
    "summarize",
]

if TYPE_CHECKING:  # static checkers see the lazy names as ordinary imports
    from simulator.config import RunConfig
    from simulator.engine import simulate
    from simulator.metrics import bounded_slowdown, summarize
    from simulator.platform import (
        DEFAULT_PSTATES,
        NodeType,
        Platform,
        PState,
        homogeneous_platform,
        load_platform,
        platform_from_dict,
        platform_from_trace,
    )
    from simulator.results import JOB_COLUMNS, POWER_COLUMNS, RunResult, load_run
