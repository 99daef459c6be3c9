"""energysched: a testbed for energy-aware scheduling of HPC clusters.

The distribution ships the top-level packages ``simulator``, ``workloads``,
``predictors``, ``policies`` and ``experiments``; this small package holds what
they all share: the version and the exception hierarchy.
"""

from energysched.errors import (
    ConfigError,
    EnergySchedError,
    NotFittedError,
    PolicyError,
    TraceFormatError,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "EnergySchedError",
    "NotFittedError",
    "PolicyError",
    "TraceFormatError",
    "__version__",
]
