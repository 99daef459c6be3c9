"""Data and comparisons shared by the predictor tests: runs of KTH-SP2 jobs, a
two-node-type platform, update batches and bit-for-bit equality."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from predictors.base import RunBatch
from workloads.applications import assign_ground_truth


def kth_runs(seed: int = 0) -> tuple[Any, Any, pd.DataFrame]:
    """``(trace, platform, runs)``: the first 300 KTH-SP2 jobs, each measured once
    at a random size and P-state of the trace's platform (``npb-mix`` truth)."""
    from energysched.runner import build_platform, load_trace
    from workloads.bundled import builtin_trace_path

    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=300)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=seed)
    idx = np.arange(len(trace.jobs))
    t = platform.node_types[0]
    rng = np.random.default_rng(seed)
    nodes = rng.integers(1, t.count + 1, len(idx))
    freqs = np.asarray(t.freqs_ghz)[rng.integers(0, len(t.freqs_ghz), len(idx))]
    runs = truth.measure(idx, t, nodes, freqs, None, None, None, rng)
    return trace, platform, runs


def kth_two_types() -> tuple[Any, Any, Any]:
    """``(trace, platform, truth)``: the first 300 KTH-SP2 jobs on the trace's node
    type plus a 16-node "fat" type (faster, hungrier P-states, one fewer)."""
    from energysched.runner import build_platform, load_trace
    from simulator.platform import NodeType, Platform, PState
    from workloads.bundled import builtin_trace_path

    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=300)
    base = build_platform("trace", trace).node_types[0]
    fat = NodeType(
        name="fat",
        count=16,
        cores_per_node=base.cores_per_node,
        pstates=tuple(
            PState(p.freq_ghz * 1.25, p.idle_power_w * 1.4, p.busy_power_w * 1.7)
            for p in base.pstates[1:]
        ),
    )
    platform = Platform(name="two", node_types=(base, fat))
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    return trace, platform, truth


def two_type_stream(
    counts: tuple[int, int], seed: int, *, unknown_instructions: bool = False
) -> tuple[Any, pd.DataFrame]:
    """``(platform, runs)``: ``counts`` runs of random KTH-SP2 jobs on each node type
    of :func:`kth_two_types` at random sizes and P-states, shuffled, with some
    requested times and powers missing (and 2 % of the instruction counts with
    ``unknown_instructions``: the predictors then take the work from the median)."""
    trace, platform, truth = kth_two_types()
    rng = np.random.default_rng(seed)
    frames = []
    for t, k in zip(platform.node_types, counts):
        idx = rng.integers(0, len(trace.jobs), k)
        nodes = rng.integers(1, t.count + 1, k)
        freqs = np.asarray(t.freqs_ghz)[rng.integers(0, len(t.freqs_ghz), k)]
        frames.append(truth.measure(idx, t, nodes, freqs, None, None, None, rng))
    runs = pd.concat(frames, ignore_index=True)
    runs = runs.iloc[rng.permutation(len(runs))].reset_index(drop=True)
    r = rng.random(len(runs))
    if unknown_instructions:
        runs.loc[r < 0.02, "instructions"] = np.nan
    runs.loc[(r > 0.3) & (r < 0.4), "requested_time_s"] = np.nan
    runs.loc[(r > 0.5) & (r < 0.53), "power_w"] = np.nan
    return platform, runs


def update_batches(runs: pd.DataFrame, seed: int = 1) -> Iterator[Any]:
    """Batches of 1-3 runs, alternately DataFrames and RunBatches."""
    rng = np.random.default_rng(seed)
    lo, k = 0, 0
    while lo < len(runs):
        n = int(rng.integers(1, 4))
        part = runs.iloc[lo : lo + n]
        yield part if k % 2 else RunBatch.from_frame(part)
        lo += n
        k += 1


def same_bits(a: Any, b: Any) -> bool:
    """Equal, bit for bit (NaN equals NaN), through dicts, tuples and arrays."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_bits(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_bits(u, v) for u, v in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def three_pstate_platform() -> Any:
    """One 64-node type with 8 cores and P-states 1.2, 1.8 and 2.4 GHz (idle 90 W,
    busy 100 + 60 f W): the DVFS tests' platform."""
    from simulator.platform import NodeType, Platform, PState

    t = NodeType(
        name="n",
        count=64,
        cores_per_node=8,
        pstates=tuple(PState(f, 90.0, 100.0 + 60.0 * f) for f in (1.2, 1.8, 2.4)),
    )
    return Platform(name="p", node_types=(t,))


def whole_table_reference(cls: type) -> type:
    """``cls`` (a DVFS-family predictor) fitting every application from its whole runs
    table: no cached statistics, the base request ratio (the reference of the fast paths)."""
    from predictors.baselines import PerApplicationPredictor

    class Reference(cls):  # type: ignore[valid-type,misc]
        def _fit_cache(self, app, runs, work):
            return None

        def _request_ratio(self, app, model, store, work):
            return PerApplicationPredictor._request_ratio(self, app, model, store, work)

    return Reference
