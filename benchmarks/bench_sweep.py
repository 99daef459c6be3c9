"""Speed-up of a sweep from 1 to 2 workers: 8 runs of 5,000 jobs.

Usage::

    python benchmarks/bench_sweep.py [--trace PATH] [--runs 8] [--max-jobs 5000]
        [--preset npb-mix] [--policy easy-slack-size-freq] [--repeat 3] [--workers 1 2] [--dask-local]
        [--compare OTHER_CHECKOUT] [--without-pyarrow]

Writes an experiment (one trace, the ``--policy`` (default ``easy-slack-size-freq``,
which asks the predictor ``auto+fluid``), the ``--preset`` ground truth,
``--runs`` replicates of ``--max-jobs`` jobs) and runs it as a user does, in a
fresh ``python -m energysched experiment run --no-report`` process per sweep,
alternating the worker counts (``--workers``; ``--dask-local`` adds a local Dask
cluster of the largest count). For each it prints the wall time (min and
median of ``--repeat``), the CPU time of the whole process tree (the sweep
process and the workers it forks, or its fork server and that server's
workers: see :func:`run_measured`), the median CPU time of the sweep process
alone (with local workers: what the parent spends reading the experiment,
doing the work the workers share, handing out runs, writing the summaries),
and the speed-up ``wall(1 worker) / wall(N)``, and the same from CPU time,
``CPU(1) / (CPU(N) / N)``: the speed-up N cores would give when the work
divides evenly (what it costs to start workers and send results back, without
the machine's other load). Every sweep's summaries table must equal
the first one's (the script exits 1 otherwise). ``--compare DIR`` alternates
the same sweeps with the code checked out in DIR.

Bytecode: the sweeps inherit the environment, so with
``PYTHONDONTWRITEBYTECODE`` set the sweep process (and a fork server, where one
is used) compiles the package's modules from source in every sweep. ``--bytecode-cache``
measures the package as installed: compiled modules are kept in a temporary
``PYTHONPYCACHEPREFIX`` (one untimed sweep per checkout fills it).

Nothing runs beside a timed sweep: on Linux this script adopts the processes
the sweep leaves behind (a child subreaper) and reads the CPU time of the
whole tree once it has ended (``RUSAGE_CHILDREN``). Sampling the tree while it
runs (psutil, every 20 ms, the only way elsewhere) costs about a tenth of a
core, which a sweep with a free core does not notice but one whose workers
keep both cores busy does (its wall time grows by a few per cent).

Wall time is the figure here (it is what workers buy), so it is only
meaningful on a quiet machine: the load average is printed before and after;
the CPU time shows what the workers cost beyond the runs themselves (worker
start-up, sending results back). Target (issue 19): >= 1.8x from 1 to 2 workers
on a 2-core machine. Exits with status 2 and a message when the trace is missing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
from child_env import child_env

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "data" / "traces" / "SDSC-SP2-1998-4.2-cln.swf.gz"
if not DEFAULT_TRACE.exists():
    DEFAULT_TRACE = Path("/work/shared/data/traces/SDSC-SP2-1998-4.2-cln.swf.gz")

EXPERIMENT = """
name = "bench-sweep"
[seeds]
base = 1
replicates = {runs}
[ground_truth]
preset = "{preset}"
[[traces]]
name = "trace"
source = "{trace}"
max_jobs = {max_jobs}
[[policies]]
name = "{policy}"
"""


#: ``prctl`` option (``<linux/prctl.h>``): orphaned descendants are re-parented to
#: this process instead of init, so it can wait for them.
PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux only).

    A sweep's fork server and resource tracker outlive the sweep process by a
    moment; adopted, they are waited for here, so their CPU time and that of
    the workers the fork server waited for add up in ``RUSAGE_CHILDREN``.
    False where the call is not available.
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def reap_adopted(timeout_s: float = 60.0) -> None:
    """Wait for every remaining child (the descendants :func:`adopt_orphans` adopted)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child left
        if pid == 0:
            if time.monotonic() > deadline:
                sys.exit(
                    f"bench_sweep: processes of the sweep still running {timeout_s:g} s after it"
                )
            time.sleep(0.01)


def children_cpu_s() -> float:
    """CPU seconds (user + system) of the children (and their waited-for descendants)
    this process has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tree_cpu_s(popen: subprocess.Popen[str], interval_s: float = 0.02) -> tuple[float, float]:
    """CPU seconds of ``popen`` and all its descendants until it exits, and of
    ``popen`` alone, sampled every ``interval_s`` with psutil (where
    :func:`adopt_orphans` is not available).

    Each process counts with its last sample (at most ``interval_s`` short);
    the sampling itself costs about a tenth of a core.
    """
    import psutil

    root = psutil.Process(popen.pid)
    last: dict[tuple[int, float], float] = {}
    while popen.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for proc in procs:
            try:
                times = proc.cpu_times()
                last[(proc.pid, proc.create_time())] = times.user + times.system
            except psutil.NoSuchProcess:
                continue
        time.sleep(interval_s)
    own = max((cpu for (pid, _), cpu in last.items() if pid == popen.pid), default=0.0)
    return sum(last.values()), own


class Measured(NamedTuple):
    """What :func:`run_measured` measured of one command."""

    status: int
    wall_s: float
    #: the command's process and every process it started
    cpu_s: float
    #: the command's process alone (its children not counted, whoever waited for them)
    own_cpu_s: float


def exited_own_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of child ``pid`` alone, once it has exited and
    before it is reaped (``/proc/PID/stat`` of the zombie: its own times, not
    those of its children); ``nan`` where that cannot be read."""
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (AttributeError, OSError):
        return float("nan")
    fields = stat[stat.rindex(")") + 2 :].split()  # after "PID (name) "
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def run_measured(command: list[str], *, adopted: bool, **popen_args: Any) -> Measured:
    """Run ``command``: its exit status, the wall seconds until it exits, and CPU time.

    ``adopted``: this process adopts orphans (:func:`adopt_orphans` succeeded), so
    nothing runs while the command does: the wall time ends when it exits, the CPU
    time is read once its descendants have ended too. Else the tree is sampled
    (:func:`tree_cpu_s`).
    """
    before = children_cpu_s() if adopted else 0.0
    wall0 = time.perf_counter()
    popen = subprocess.Popen(command, **popen_args)
    if adopted:
        own = exited_own_cpu_s(popen.pid)
        status = popen.wait()
        wall = time.perf_counter() - wall0
        reap_adopted()
        return Measured(status, wall, children_cpu_s() - before, own)
    cpu, own = tree_cpu_s(popen)
    wall = time.perf_counter() - wall0
    return Measured(popen.wait(), wall, cpu, own)


def start_and_run_s(one_s: float, many_s: float, runs: int, workers: int) -> tuple[float, float]:
    """The start ``s`` (what every sweep pays once, whatever its workers: the
    interpreter, the imports, the trace read, the last write) and the time ``r`` of
    one run implied by the wall times of a sweep of ``runs`` runs on 1 worker
    (``one_s = s + runs * r``) and on ``workers`` (``many_s = s + runs / workers *
    r``, the runs dealt out evenly and ending together)."""
    run_s = (one_s - many_s) / (runs - runs / workers)
    return one_s - runs * run_s, run_s


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def run_sweep(
    experiment: Path,
    out: Path,
    executor: list[str],
    code_dir: Path,
    pycache: Path | None = None,
    *,
    adopted: bool,
    without_pyarrow: bool = False,
) -> Measured:
    """One fresh sweep process, measured (:func:`run_measured`).

    ``pycache``: keep compiled modules there (``PYTHONPYCACHEPREFIX``, inherited by
    the workers) even when the environment says not to write bytecode. ``adopted``:
    see :func:`run_measured`. ``without_pyarrow``: the sweep cannot import pyarrow
    (``child_env.WITHOUT_PYARROW``).
    """
    command = [sys.executable, "-m", "energysched", "experiment", "run", str(experiment)]
    command += ["--out", str(out), "--no-report", *executor]
    env = child_env(code_dir, pycache=pycache, without_pyarrow=without_pyarrow)
    with tempfile.TemporaryFile("w+") as log:
        measured = run_measured(
            command,
            adopted=adopted,
            env=env,
            cwd=code_dir,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if measured.status != 0:
            log.seek(0)
            sys.exit(f"sweep failed ({' '.join(executor)}, {code_dir}):\n{log.read()}")
    return measured


def summaries(out: Path) -> pd.DataFrame:
    path = out / "summaries.parquet"
    table = pd.read_parquet(path) if path.exists() else pd.read_csv(out / "summaries.csv")
    drop = [c for c in table.columns if "elapsed" in c or c in ("host", "finished_at", "wall_s")]
    return table.drop(columns=drop).sort_values("run_id").reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--max-jobs", type=int, default=5000)
    parser.add_argument("--preset", default="npb-mix")
    parser.add_argument("--policy", default="easy-slack-size-freq")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--dask-local", action="store_true")
    parser.add_argument("--compare", type=Path, default=None, metavar="OTHER_CHECKOUT")
    parser.add_argument(
        "--without-pyarrow",
        action="store_true",
        help="sweeps as in the README's install, without the optional pyarrow (CSV tables)",
    )
    parser.add_argument(
        "--bytecode-cache",
        action="store_true",
        help="keep compiled modules in a temporary cache, filled by one untimed sweep per "
        "checkout (the package as installed); default: the environment decides",
    )
    args = parser.parse_args()
    adopted = adopt_orphans()
    if not args.trace.exists():
        print(f"bench_sweep: trace not found: {args.trace}", file=sys.stderr)
        sys.exit(2)

    setups = [(f"{n} worker{'s' * (n > 1)}", ["--workers", str(n)]) for n in args.workers]
    if args.dask_local:
        most = max(args.workers)
        setups.append((f"dask-local {most}", ["--dask-local", str(most)]))
    checkouts = [("this", ROOT)] + ([("compare", args.compare.resolve())] if args.compare else [])
    if args.bytecode_cache:
        bytecode = "compiled modules cached (one untimed sweep first)"
    elif os.environ.get("PYTHONDONTWRITEBYTECODE"):
        bytecode = "PYTHONDONTWRITEBYTECODE set: modules compiled in every sweep"
    else:
        bytecode = "bytecode as the environment keeps it"
    print(
        f"{args.runs} runs of {args.max_jobs} jobs ({args.trace.name}, {args.policy}, {args.preset}), "
        f"{args.repeat} alternated fresh sweeps each; {bytecode}; CPU time "
        f"{'of the ended process trees' if adopted else 'sampled every 20 ms'}; "
        f"before: {load_average()}"
    )
    walls: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    own_cpus: dict[tuple[str, str], list[float]] = {}
    # each checkout's sweeps must agree with its first one (1 and N workers, every
    # repeat); two checkouts may differ where the code changed what a run reports
    references: dict[str, pd.DataFrame] = {}
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        experiment = Path(tmp) / "bench.toml"
        experiment.write_text(
            EXPERIMENT.format(
                runs=args.runs,
                preset=args.preset,
                policy=args.policy,
                trace=args.trace,
                max_jobs=args.max_jobs,
            ),
            encoding="utf-8",
        )
        pycache = {
            code: Path(tmp) / f"pyc-{code}" if args.bytecode_cache else None
            for code, _ in checkouts
        }
        if args.bytecode_cache:
            for code, code_dir in checkouts:  # untimed: fills the cache
                run_sweep(
                    experiment,
                    Path(tmp) / f"warm-{code}",
                    setups[-1][1],
                    code_dir,
                    pycache[code],
                    adopted=adopted,
                    without_pyarrow=args.without_pyarrow,
                )
        for rep in range(args.repeat):
            for code, code_dir in checkouts:
                for label, executor in setups:
                    out = Path(tmp) / f"out-{code}-{rep}-{label.replace(' ', '-')}"
                    measured = run_sweep(
                        experiment,
                        out,
                        executor,
                        code_dir,
                        pycache[code],
                        adopted=adopted,
                        without_pyarrow=args.without_pyarrow,
                    )
                    walls.setdefault((code, label), []).append(measured.wall_s)
                    cpus.setdefault((code, label), []).append(measured.cpu_s)
                    own_cpus.setdefault((code, label), []).append(measured.own_cpu_s)
                    table = summaries(out)
                    reference = references.setdefault(code, table)
                    if not table.equals(reference):
                        diff = table.compare(reference)
                        columns = sorted({c for c, _ in diff.columns})
                        sys.exit(
                            f"bench_sweep: the summaries of {code} {label} (repeat {rep}) differ"
                            f" from its first sweep's in {columns}:\n{diff.to_string()}"
                        )
    print(
        f"{'code':8} {'executor':14} {'wall min':>9} {'wall med':>9} {'CPU min':>8} {'CPU med':>8}"
        f" {'sweep proc CPU':>15} {'wall speed-up':>14} {'CPU speed-up':>13}"
    )
    for code, _ in checkouts:
        base_wall = statistics.median(walls[(code, setups[0][0])])
        base_cpu = statistics.median(cpus[(code, setups[0][0])])
        for label, executor in setups:
            n = int(executor[-1])
            wall, cpu = walls[(code, label)], cpus[(code, label)]
            print(
                f"{code:8} {label:14} {min(wall):9.2f} {statistics.median(wall):9.2f} "
                f"{min(cpu):8.2f} {statistics.median(cpu):8.2f} "
                f"{statistics.median(own_cpus[(code, label)]):15.2f} "
                f"{base_wall / statistics.median(wall):13.2f}x "
                f"{base_cpu / (statistics.median(cpu) / n):12.2f}x"
            )
    for code, _ in checkouts:
        one = walls.get((code, "1 worker"))
        for label, executor in setups:
            n = int(executor[-1])
            if one is None or n < 2 or executor[0] != "--workers":
                continue
            start_s, run_s = start_and_run_s(
                statistics.median(one), statistics.median(walls[(code, label)]), args.runs, n
            )
            print(
                f"{code} 1 -> {n} workers, from the medians: a start of {start_s:.2f} s that"
                f" both pay and runs of {run_s:.2f} s; 1.8x needs a start of at most"
                f" {(args.runs - 1.8 * args.runs / n) * run_s / 0.8:.2f} s with such runs"
            )
    same = "identical summaries in all"
    if len(references) > 1:
        this, other = references["this"], references["compare"]
        shared = [c for c in this.columns if c in other.columns]
        only = sorted(set(this.columns) ^ set(other.columns))
        differ = [c for c in shared if not this[c].equals(other[c])]
        same = "identical summaries within each checkout's"
        print(
            f"the two checkouts' summaries: {len(shared)} shared columns"
            f" ({'all equal' if not differ else 'differing in ' + ', '.join(differ)});"
            f" in one checkout only: {', '.join(only) or 'none'}"
        )
    print(f"{same} {args.repeat * len(setups) * len(checkouts)} sweeps; after: {load_average()}")


if __name__ == "__main__":
    main()
