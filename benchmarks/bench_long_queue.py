"""Long queues: the first N jobs of a trace all submitted at once.

Usage::

    python benchmarks/bench_long_queue.py [--trace PATH] [--jobs N] [--policy easy]
        [--predictor NAME] [--repeat 3] [--compare OTHER_CHECKOUT] [--python]

Every job's submit time is set to the first job's, so the whole trace waits in
one queue: each batch scans a long queue, and conservative backfilling places
a reservation for every queued job. Each replay runs in a fresh process and is
timed by its CPU time (``time.process_time`` around ``simulate`` only);
``--compare DIR`` alternates with the code checked out in DIR. Prints min and
median jobs per second, whether conservative backfilling's compiled kernel
(``policies/_placement.pyx``) ran or its Python reference (``--python``: the
reference, even where the kernel is built), and a digest of the schedule (start
times), which must be the same for every replay (the script exits 1 otherwise).
Rigid policies replay the trace's runtimes; with ``--predictor`` (a
predictor-driven policy such as ``easy-slack-size-freq``) the replay has the
default ground truth (``npb-mix``, seed 0) and the benchmark suite's
observations, as ``energysched run`` gives it, and the digest also covers the
node counts and clocks.

Targets (issue 19): 5,000 jobs of SDSC-SP2 at >= 5,000 jobs/s under
``conservative``, 100,000 jobs of HPC2N at >= 20,000 jobs/s under ``easy``::

    python benchmarks/bench_long_queue.py --jobs 5000
    python benchmarks/bench_long_queue.py --trace ../shared/data/traces/HPC2N-2002-2.2-cln.swf.gz \
        --jobs 100000 --policy easy

and predictor-driven replays at >= 10,000 jobs/s, a long queue included::

    python benchmarks/bench_long_queue.py --trace ../shared/data/traces/HPC2N-2002-2.2-cln.swf.gz \
        --jobs 100000 --policy easy-slack-size-freq --predictor adept+fluid

Exits with status 2 and a message when the trace is missing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from child_env import child_env

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "data" / "traces"
if not TRACES.is_dir():
    TRACES = Path("/work/shared/data/traces")

ONE_REPLAY = """
import dataclasses, hashlib, sys, time
import policies.profile
from energysched.runner import build_platform, load_trace
from policies.registry import get_policy
from simulator.config import RunConfig
from simulator.engine import simulate

if sys.argv[4] == "python":
    policies.profile.compiled_conservative_batch = None
kernel = "compiled" if getattr(policies.profile, "compiled_conservative_batch", None) else "python"
trace, _ = load_trace(sys.argv[1], max_jobs=int(sys.argv[2]))
jobs = trace.jobs.copy()
jobs["submit_s"] = float(jobs["submit_s"].iloc[0])
trace = dataclasses.replace(trace, jobs=jobs)
platform = build_platform("trace", trace)
truth = observations = None
columns = ["start_s"]
if sys.argv[5] == "none":
    policy = get_policy(sys.argv[3])
else:
    from predictors.base import Observations
    from workloads.applications import assign_ground_truth
    from workloads.benchmark_suite import measure_benchmark_suite

    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)
    benchmarks = measure_benchmark_suite(platform, seed=0)
    observations = Observations(benchmarks=benchmarks, platform=platform)
    policy = get_policy(sys.argv[3], predictor=sys.argv[5])
    columns += ["nodes", "freq_ghz"]
started = time.process_time()
result = simulate(trace, platform, policy, RunConfig(), truth, observations=observations)
cpu_s = time.process_time() - started
digest = hashlib.sha256(result.jobs[columns].to_numpy().tobytes()).hexdigest()[:16]
print(len(result.jobs), cpu_s, digest, kernel)
"""


def replay(
    trace: Path, jobs: int, policy: str, code_dir: Path, kernel: str, predictor: str | None = None
) -> tuple[int, float, str, str]:
    """(jobs, CPU seconds of ``simulate``, schedule digest, kernel that ran) of one
    fresh replay of the code in ``code_dir``; ``kernel`` "python" forces the reference;
    ``predictor``: the policy's predictor (with the default ground truth)."""
    env = child_env(code_dir)
    command = [sys.executable, "-c", ONE_REPLAY, str(trace), str(jobs), policy, kernel]
    done = subprocess.run(
        [*command, predictor or "none"],
        env=env,
        cwd=code_dir,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"replay failed ({code_dir}):\n{done.stderr}")
    n, cpu_s, digest, ran = done.stdout.split()
    return int(n), float(cpu_s), digest, ran


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trace", type=Path, default=TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz")
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--policy", default="conservative")
    parser.add_argument(
        "--predictor", default=None, help="the policy's predictor (with the default ground truth)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compare", type=Path, default=None, metavar="OTHER_CHECKOUT")
    parser.add_argument(
        "--python", action="store_true", help="run the Python reference, not the compiled kernel"
    )
    args = parser.parse_args()
    if not args.trace.exists():
        print(f"bench_long_queue: trace not found: {args.trace}", file=sys.stderr)
        sys.exit(2)
    checkouts = [("this", ROOT)] + ([("compare", args.compare.resolve())] if args.compare else [])
    cpu: dict[str, list[float]] = {label: [] for label, _ in checkouts}
    kernels: dict[str, set[str]] = {label: set() for label, _ in checkouts}
    digests = set()
    n = 0
    kernel = "python" if args.python else "any"
    for _ in range(args.repeat):
        for label, code_dir in checkouts:
            n, cpu_s, digest, ran = replay(
                args.trace, args.jobs, args.policy, code_dir, kernel, args.predictor
            )
            cpu[label].append(cpu_s)
            kernels[label].add(ran)
            digests.add(digest)
    one, five, fifteen = os.getloadavg()
    print(
        f"{n} jobs of {args.trace.name} submitted at once, {args.policy}"
        + (f" with {args.predictor}" if args.predictor else "")
        + ", "
        f"{args.repeat} alternated fresh replays (CPU time); load average {one:.2f}, {five:.2f}, {fifteen:.2f}"
    )
    for label, times in cpu.items():
        print(
            f"  {label:8} min {min(times):8.2f} s  median {statistics.median(times):8.2f} s  "
            f"{n / min(times):10,.0f} jobs/s best, {n / statistics.median(times):10,.0f} median"
            + (
                f"  (long-queue batch: {'/'.join(sorted(kernels[label]))})"
                if args.policy == "conservative"  # (only conservative has that batch)
                else ""
            )
        )
    if len(digests) != 1:
        sys.exit(f"bench_long_queue: the schedules differ: {sorted(digests)}")
    what = "start times, nodes and clocks" if args.predictor else "start times"
    print(f"  same schedule in every replay ({what} digest {digests.pop()})")


if __name__ == "__main__":
    main()
