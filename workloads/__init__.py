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

from typing import TYPE_CHECKING

import lazy_loader

# public names by the module that defines them, loaded on first access (PEP 562): a
# replay that reads a trace does not load the generators or the ground-truth machinery
__getattr__, __dir__, _lazy_names = lazy_loader.attach(
    __name__,
    submod_attrs={
        "applications": [
            "TraceGroundTruth",
            "assign_ground_truth",
            "describe_applications",
            "group_applications",
        ],
        "benchmark_suite": ["BENCHMARKS", "measure_benchmark_suite"],
        "cleaning": ["DROP_REASONS", "CleaningReport", "clean_trace", "job_procs"],
        "presets": ["WorkloadPreset", "get_preset", "list_presets"],
        "schema": ["SWF_COLUMNS", "SWF_FIELDS", "Trace"],
        "swf": ["read_swf", "write_swf"],
        "synthetic": ["generate", "generate_downey", "generate_lublin"],
        "trace_info": ["format_trace_info", "trace_info"],
        "truth": ["GroundTruth"],
    },
)
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
