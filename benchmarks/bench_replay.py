"""Jobs per second of a full replay with energy accounting, including reading the trace.

Usage::

    python benchmarks/bench_replay.py [--policy easy] [--repeat 3] [TRACE ...]

Defaults to every trace in ../shared/data/traces. Prints, per trace, the
best of ``--repeat`` runs: seconds to read + clean, seconds to simulate, and
jobs per second end to end. Measures speed only; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from energysched.runner import build_platform, load_trace
from policies.registry import get_policy
from simulator.config import RunConfig
from simulator.engine import simulate

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"


def bench(path: Path, policy: str, repeat: int) -> tuple[int, float, float]:
    best_read = best_sim = float("inf")
    n = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        trace, _ = load_trace(path)
        t1 = time.perf_counter()
        simulate(trace, build_platform("trace", trace), get_policy(policy), RunConfig())
        t2 = time.perf_counter()
        n = len(trace.jobs)
        best_read = min(best_read, t1 - t0)
        best_sim = min(best_sim, t2 - t1)
    return n, best_read, best_sim


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    traces = args.traces or sorted(SHARED.glob("*.swf*"))
    print(f"{'trace':32} {'jobs':>8} {'read s':>8} {'sim s':>8} {'jobs/s':>10}")
    for path in traces:
        n, read_s, sim_s = bench(path, args.policy, args.repeat)
        print(
            f"{path.name[:32]:32} {n:8d} {read_s:8.2f} {sim_s:8.2f} {n / (read_s + sim_s):10,.0f}"
        )


if __name__ == "__main__":
    main()
