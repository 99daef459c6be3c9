"""Jobs per second of a replay: the whole ``energysched run`` process, and the replay alone.

Usage::

    python benchmarks/bench_replay.py [--policy easy] [--repeat 3] [--max-jobs N]
        [--compare OTHER_CHECKOUT] [--no-in-process] [--without-pyarrow] [TRACE ...]

Defaults to every trace in ../shared/data/traces. For each trace it prints:

* **whole process**: ``--repeat`` fresh ``python -m energysched run --platform
  trace`` processes (imports, reading and cleaning the trace, the replay,
  writing jobs table, power.csv and summary.json), timed by the child's CPU
  time (``resource.getrusage(RUSAGE_CHILDREN)``, user + system), so that other
  work on a shared machine does not count; min and median jobs per second.
  ``--compare DIR`` alternates each run with one of the code checked out in DIR
  (run with ``PYTHONPATH=DIR``) and prints both, for before/after figures.
* **in process** (unless ``--no-in-process``): the best of ``--repeat``
  read + clean and simulate steps inside this process (CPU time).

Bytecode: the children inherit the environment, so with
``PYTHONDONTWRITEBYTECODE`` set (as on the machine these figures come from)
every run compiles the package's modules from source (about 0.1 s of CPU
time). ``--bytecode-cache`` measures the package as installed instead: the
children keep compiled modules in a temporary ``PYTHONPYCACHEPREFIX`` (one
untimed warm-up run per checkout fills it), as ``pip install`` compiles them
once.

``--without-pyarrow`` runs the whole processes as in the README's install,
where pyarrow (the optional ``parquet`` extra) is absent: the jobs table and
the power timeline are then CSV written by pandas (``without_pyarrow/``, a
``sitecustomize`` put on the children's ``PYTHONPATH``).

Target (issue 19): the whole process of HPC2N (202,871 jobs, ``--policy easy``)
at >= 50,000 jobs/s. Exits with status 2 and a message when a trace is missing.
Measures speed only; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from child_env import child_env

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "traces"


def child_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process's waited-for children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def whole_run(
    trace: Path,
    policy: str,
    code_dir: Path,
    max_jobs: int | None,
    truth: str = "none",
    pycache: Path | None = None,
    without_pyarrow: bool = False,
) -> tuple[int, float, str]:
    """One fresh ``python -m energysched run``: (jobs, CPU seconds of the child, jobs format).

    ``pycache``: keep compiled modules there (``PYTHONPYCACHEPREFIX``) even when the
    environment says not to write bytecode; ``None``: the environment decides.
    ``without_pyarrow``: the child cannot import pyarrow (``child_env.WITHOUT_PYARROW``).
    """
    env = child_env(code_dir, pycache=pycache, without_pyarrow=without_pyarrow)
    with tempfile.TemporaryDirectory(prefix="bench_replay_") as out:
        command = [sys.executable, "-m", "energysched", "run", "--trace", str(trace)]
        command += ["--platform", "trace", "--policy", policy, "--out", out]
        command += ["--truth", truth]
        if max_jobs is not None:
            command += ["--max-jobs", str(max_jobs)]
        before = child_cpu_s()
        done = subprocess.run(command, env=env, cwd=code_dir, capture_output=True, text=True)
        cpu_s = child_cpu_s() - before
    if done.returncode != 0:
        sys.exit(f"energysched run failed ({code_dir}):\n{done.stderr}")
    jobs = int(re.search(r"\((\d+) jobs,", done.stdout).group(1))  # type: ignore[union-attr]
    found = re.search(r"jobs table (?:as|format:) (\w+)", done.stdout)
    return jobs, cpu_s, found.group(1) if found else "?"


def in_process(
    path: Path, policy: str, repeat: int, max_jobs: int | None = None
) -> tuple[int, float, float]:
    """Best CPU seconds of reading + cleaning and of simulating, in this process."""
    from energysched.runner import build_platform, load_trace
    from policies.registry import get_policy
    from simulator.config import RunConfig
    from simulator.engine import simulate

    best_read = best_sim = float("inf")
    n = 0
    for _ in range(repeat):
        t0 = time.process_time()
        trace, _ = load_trace(path, max_jobs=max_jobs)
        t1 = time.process_time()
        simulate(trace, build_platform("trace", trace), get_policy(policy), RunConfig())
        t2 = time.process_time()
        n = len(trace.jobs)
        best_read = min(best_read, t1 - t0)
        best_sim = min(best_sim, t2 - t1)
    return n, best_read, best_sim


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--policy", default="easy")
    parser.add_argument(
        "--truth",
        default="none",
        help="ground truth of the whole-process runs (default none: the trace's recorded "
        "runtimes, as the in-process replay; npb-mix is energysched run's own default)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-jobs", type=int, default=None)
    parser.add_argument("--compare", type=Path, default=None, metavar="OTHER_CHECKOUT")
    parser.add_argument("--no-in-process", action="store_true")
    parser.add_argument(
        "--bytecode-cache",
        action="store_true",
        help="children keep compiled modules in a temporary cache, warmed by one untimed run "
        "per checkout (the package as installed); default: the environment decides",
    )
    parser.add_argument(
        "--without-pyarrow",
        action="store_true",
        help="whole processes as in the README's install, without the optional pyarrow",
    )
    args = parser.parse_args()

    traces = args.traces or sorted(SHARED.glob("*.swf*"))
    if not traces:
        print(f"bench_replay: no traces given and none found in {SHARED}", file=sys.stderr)
        sys.exit(2)
    missing = [str(t) for t in traces if not t.exists()]
    if missing:
        print(f"bench_replay: trace not found: {', '.join(missing)}", file=sys.stderr)
        sys.exit(2)
    sys.path.insert(0, str(ROOT))
    checkouts = [("this", ROOT)] + ([("compare", args.compare.resolve())] if args.compare else [])

    cache_root = Path(tempfile.mkdtemp(prefix="bench_replay_pyc_")) if args.bytecode_cache else None
    pycache = {label: cache_root / label if cache_root else None for label, _ in checkouts}
    if args.bytecode_cache:
        bytecode = "compiled modules cached (warm-up run first)"
    elif os.environ.get("PYTHONDONTWRITEBYTECODE"):
        bytecode = "PYTHONDONTWRITEBYTECODE set: modules compiled in every run"
    else:
        bytecode = "bytecode as the environment keeps it"
    print(
        f"whole process, CPU time of fresh children, {args.repeat} alternated runs, "
        f"--truth {args.truth}; {bytecode}; {load_average()}"
    )
    print(
        f"{'trace':32} {'code':8} {'jobs':>8} {'min s':>7} {'med s':>7} {'best jobs/s':>12} {'median':>9}"
    )

    def run(path: Path, label: str, code_dir: Path) -> tuple[int, float, str]:
        return whole_run(
            path,
            args.policy,
            code_dir,
            args.max_jobs,
            args.truth,
            pycache[label],
            args.without_pyarrow,
        )

    for path in traces:
        cpu: dict[str, list[float]] = {label: [] for label, _ in checkouts}
        jobs = 0
        formats = set()
        if args.bytecode_cache:
            for label, code_dir in checkouts:  # untimed: fills the cache
                run(path, label, code_dir)
        for _ in range(args.repeat):
            for label, code_dir in checkouts:
                jobs, cpu_s, fmt = run(path, label, code_dir)
                cpu[label].append(cpu_s)
                if label == "this":
                    formats.add(fmt)
        for label, times in cpu.items():
            best, median = min(times), statistics.median(times)
            print(
                f"{path.name[:32]:32} {label:8} {jobs:8d} {best:7.2f} {median:7.2f} "
                f"{jobs / best:12,.0f} {jobs / median:9,.0f}"
            )
    print(f"jobs table written (this code) as: {', '.join(sorted(formats))}; {load_average()}")
    if cache_root is not None:
        shutil.rmtree(cache_root, ignore_errors=True)

    if args.no_in_process:
        return
    print(f"\nin process (best of {args.repeat}, CPU time)")
    print(f"{'trace':32} {'jobs':>8} {'read s':>8} {'sim s':>8} {'jobs/s':>10}")
    for path in traces:
        n, read_s, sim_s = in_process(path, args.policy, args.repeat, args.max_jobs)
        print(
            f"{path.name[:32]:32} {n:8d} {read_s:8.2f} {sim_s:8.2f} {n / (read_s + sim_s):10,.0f}"
        )


if __name__ == "__main__":
    main()
