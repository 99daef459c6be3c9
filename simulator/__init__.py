"""The discrete-event engine, the platform, energy accounting and metrics.

* :func:`simulate` replays a trace on a :class:`Platform` under a policy and
  returns a :class:`RunResult` (jobs table, power timeline, summary).
* :func:`load_platform` reads a platform TOML file; :func:`platform_from_trace`
  builds a homogeneous platform from a trace header.
* :class:`RunConfig` holds the engine settings (overrun rule, power
  management, power cap, seed).
"""

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
