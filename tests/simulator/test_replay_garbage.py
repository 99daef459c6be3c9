"""A finished replay is freed by reference counting, not left to the garbage collector.

A long-lived process (a sweep worker) replays one run after another; the engine
raises the collector's threshold during a replay (:func:`simulator.engine.simulate`),
so objects that only the cyclic collector can free pile up between full collections.
A predictor-driven replay, once every reference to it is dropped, must leave no
object of ours (nor the SimPy environment the engine drove) in a reference cycle.
"""

from __future__ import annotations

import gc
from collections import Counter

from energysched.runner import build_platform, load_trace
from policies.registry import get_policy
from predictors.base import Observations
from simulator import RunConfig, simulate
from workloads import assign_ground_truth
from workloads.benchmark_suite import measure_benchmark_suite

#: Top-level packages whose objects a dropped replay must not leave in cycles.
CHECKED_PACKAGES = ("simulator", "policies", "predictors", "workloads", "energysched", "simpy")


def _replay_and_drop(policy_name: str, predictor: str | None, max_jobs: int) -> int:
    """Replay the bundled KTH-SP2 trace's first jobs; every object made here is dropped
    on return (the number of jobs is returned, a plain int)."""
    trace, _ = load_trace("builtin:kth-sp2", max_jobs=max_jobs)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    obs = Observations(benchmarks=measure_benchmark_suite(platform, seed=0), platform=platform)
    policy = get_policy(policy_name, **({"predictor": predictor} if predictor else {}))
    result = simulate(trace, platform, policy, RunConfig(), truth, observations=obs)
    return len(result.jobs)


def _cyclic_garbage_of(policy_name: str, predictor: str | None, max_jobs: int) -> Counter[str]:
    """Types (module.qualname) of our objects that only the cyclic collector frees after
    the replay is dropped (``gc.DEBUG_SAVEALL`` keeps them in ``gc.garbage``)."""
    gc.collect()  # what earlier code left behind
    saved_debug, saved_garbage = gc.get_debug(), gc.garbage[:]
    gc.garbage.clear()
    try:
        assert _replay_and_drop(policy_name, predictor, max_jobs) == max_jobs
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return Counter(
            f"{type(o).__module__}.{type(o).__qualname__}"
            for o in gc.garbage
            if type(o).__module__.split(".")[0] in CHECKED_PACKAGES
        )
    finally:
        gc.set_debug(saved_debug)
        gc.garbage[:] = saved_garbage


def test_dropped_predictor_driven_replay_leaves_no_cycles() -> None:
    """ADEPT + fluid (a composite: its parts keep twin run stores per application) under
    a size and frequency chooser: the learning path of the sweeps."""
    left = _cyclic_garbage_of("easy-slack-size-freq", "adept+fluid", 600)
    assert not left, f"objects freed only by the cyclic collector: {dict(left.most_common())}"


def test_dropped_energy_replay_with_the_default_predictor_leaves_no_cycles() -> None:
    left = _cyclic_garbage_of("easy-energy-size-freq", "auto+fluid", 400)
    assert not left, f"objects freed only by the cyclic collector: {dict(left.most_common())}"


def test_dropped_rigid_replay_leaves_no_cycles() -> None:
    """No predictor: what is left would be the engine's (e.g. SimPy's environment, which
    binds methods to itself)."""
    left = _cyclic_garbage_of("easy", None, 400)
    assert not left, f"objects freed only by the cyclic collector: {dict(left.most_common())}"
