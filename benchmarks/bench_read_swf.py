"""Time :func:`workloads.read_swf` on SWF traces.

Usage::

    python benchmarks/bench_read_swf.py [--repeat N] [PATH ...]

Without paths, every ``*.swf.gz`` of the shared trace folder
(``../shared/data/traces`` next to the repository) is read. Prints, per
trace, the number of jobs, the best time over ``--repeat`` reads (s,
including decompression and header parsing) and the rate (jobs/s). Reports
only; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from workloads.swf import read_swf

DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"


def bench(path: Path, repeat: int) -> tuple[int, float]:
    """(jobs, best wall-clock seconds over ``repeat`` reads) of one trace."""
    best = float("inf")
    jobs = 0
    for _ in range(repeat):
        start = time.perf_counter()
        trace = read_swf(path)
        best = min(best, time.perf_counter() - start)
        jobs = len(trace)
    return jobs, best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="SWF files (default: shared traces)")
    parser.add_argument("--repeat", type=int, default=3, help="reads per trace; the best counts")
    args = parser.parse_args(argv)
    paths = args.paths or sorted(DEFAULT_DIR.glob("*.swf*"))
    if not paths:
        print(f"no traces given and none found in {DEFAULT_DIR}")
        return 1
    print(f"{'trace':<34} {'jobs':>8} {'seconds':>9} {'jobs/s':>11}")
    for path in paths:
        jobs, seconds = bench(path, max(1, args.repeat))
        print(f"{path.name:<34} {jobs:>8} {seconds:>9.3f} {jobs / seconds:>11,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
