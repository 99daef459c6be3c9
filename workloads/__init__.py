"""Traces in, synthetic workloads, applications and their hidden ground truth.

``workloads`` is the base layer: it imports none of the other packages
(platforms are duck-typed).

* Traces: :func:`read_swf`, :func:`write_swf`, :func:`clean_trace`,
  :func:`trace_info` (Standard Workload Format of the Parallel Workloads
  Archive; Feitelson, Tsafrir, Krakov, JPDC 2014).
* Synthetic workloads: :func:`generate` (Lublin-Feitelson 2003, Downey 1997).
* Ground truth: :func:`assign_ground_truth` (applications, presets,
  calibration, measurements), the models in :mod:`workloads.models`, and the
  platform benchmark suite :func:`measure_benchmark_suite`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module that defines it, loaded on first access (PEP 562): a replay
# that reads a trace does not load the generators or the ground-truth machinery
_LAZY: dict[str, str] = {
    "TraceGroundTruth": "workloads.applications",
    "assign_ground_truth": "workloads.applications",
    "describe_applications": "workloads.applications",
    "group_applications": "workloads.applications",
    "BENCHMARKS": "workloads.benchmark_suite",
    "measure_benchmark_suite": "workloads.benchmark_suite",
    "DROP_REASONS": "workloads.cleaning",
    "CleaningReport": "workloads.cleaning",
    "clean_trace": "workloads.cleaning",
    "job_procs": "workloads.cleaning",
    "WorkloadPreset": "workloads.presets",
    "get_preset": "workloads.presets",
    "list_presets": "workloads.presets",
    "SWF_COLUMNS": "workloads.schema",
    "SWF_FIELDS": "workloads.schema",
    "Trace": "workloads.schema",
    "read_swf": "workloads.swf",
    "write_swf": "workloads.swf",
    "generate": "workloads.synthetic",
    "generate_downey": "workloads.synthetic",
    "generate_lublin": "workloads.synthetic",
    "format_trace_info": "workloads.trace_info",
    "trace_info": "workloads.trace_info",
    "GroundTruth": "workloads.truth",
}

__all__ = [
    "BENCHMARKS",
    "DROP_REASONS",
    "SWF_COLUMNS",
    "SWF_FIELDS",
    "CleaningReport",
    "GroundTruth",
    "Trace",
    "TraceGroundTruth",
    "WorkloadPreset",
    "assign_ground_truth",
    "clean_trace",
    "describe_applications",
    "format_trace_info",
    "generate",
    "generate_downey",
    "generate_lublin",
    "get_preset",
    "group_applications",
    "job_procs",
    "list_presets",
    "measure_benchmark_suite",
    "read_swf",
    "trace_info",
    "write_swf",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'workloads' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # static checkers see the lazy names as ordinary imports
    from workloads.applications import (
        TraceGroundTruth,
        assign_ground_truth,
        describe_applications,
        group_applications,
    )
    from workloads.benchmark_suite import BENCHMARKS, measure_benchmark_suite
    from workloads.cleaning import DROP_REASONS, CleaningReport, clean_trace, job_procs
    from workloads.presets import WorkloadPreset, get_preset, list_presets
    from workloads.schema import SWF_COLUMNS, SWF_FIELDS, Trace
    from workloads.swf import read_swf, write_swf
    from workloads.synthetic import generate, generate_downey, generate_lublin
    from workloads.trace_info import format_trace_info, trace_info
    from workloads.truth import GroundTruth
