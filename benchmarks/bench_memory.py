"""Peak memory of replaying a large synthetic trace (target: 1M jobs in under 2 GB).

Usage::

    python benchmarks/bench_memory.py [--jobs 1000000] [--nodes 256] [--policy easy]

Generates a Lublin-Feitelson trace in memory, replays it with rigid EASY and
energy accounting, and prints the wall time and the process's peak resident
memory (``ru_maxrss``). Measures; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from policies.backfilling import easy_policy, fcfs_policy
from simulator import RunConfig, homogeneous_platform, simulate
from workloads import clean_trace, generate


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--policy", default="easy")
    args = parser.parse_args()
    t0 = time.perf_counter()
    trace, _ = clean_trace(generate("lublin", args.jobs, args.nodes, seed=1))
    t1 = time.perf_counter()
    result = simulate(
        trace,
        homogeneous_platform(args.nodes),
        {"easy": easy_policy, "fcfs": fcfs_policy}[args.policy](),
        RunConfig(),
    )
    t2 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak_mb = peak / 1024 if sys.platform != "darwin" else peak / 1024**2
    print(
        f"jobs {len(trace.jobs):,}  generate {t1 - t0:.1f} s  replay {t2 - t1:.1f} s ({len(trace.jobs) / (t2 - t1):,.0f} jobs/s)"
    )
    print(
        f"peak RSS {peak_mb:,.0f} MB; power timeline rows {len(result.power):,}; completed {result.summary['jobs_completed']:,}"
    )


if __name__ == "__main__":
    main()
