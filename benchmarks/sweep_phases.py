"""Where a sweep's time goes: one fresh sweep, timestamped phase by phase in every process.

Usage::

    python benchmarks/sweep_phases.py [--workers 2] [--trace PATH] [--runs 8]
        [--max-jobs 5000] [--code CHECKOUT] [--pycache DIR] [--timeline]
        [--without-pyarrow]

Runs the experiment of ``bench_sweep.py`` (one trace, ``--runs`` replicates of
``--max-jobs`` jobs) as a user does, in a fresh ``python -m energysched experiment
run --no-report`` process, with a measurement hook on its ``PYTHONPATH``
(``sweep_phases_hook/sitecustomize.py``): every process of the sweep (the sweep
process, the workers it forks; with a fork server, that server, the resource
tracker and the workers the server forks) records, at each phase, the wall time
and its own CPU time. Prints when the sweep process had done the work its
workers share (imports, traces read: the workers are forked from it then) or,
with a fork server, when that was launched and ready, when the first runs went
out, each worker's runs (start, end, CPU time), where each run's results were
written and what that cost, the summaries table, and the sweep process's CPU
time before, during and after the runs (``--timeline``: every event). Times are seconds after the sweep process's launch; on a loaded machine
only the CPU times mean something. ``--code`` runs another checkout (functions it
lacks are not timed); ``--pycache`` keeps compiled modules there
(``PYTHONPYCACHEPREFIX``), as ``bench_sweep.py --bytecode-cache`` does;
``--without-pyarrow`` runs the sweep as in the README's install (pyarrow not
importable).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_sweep import DEFAULT_TRACE, EXPERIMENT  # noqa: E402
from child_env import child_env  # noqa: E402


def run_with_hook(args: argparse.Namespace, tmp: Path) -> tuple[float, list[dict[str, Any]]]:
    """Launch one sweep with the hook; its launch time and every process's events."""
    experiment = tmp / "sweep.toml"
    experiment.write_text(
        EXPERIMENT.format(
            runs=args.runs,
            preset="npb-mix",
            policy=args.policy,
            trace=args.trace,
            max_jobs=args.max_jobs,
        ),
        encoding="utf-8",
    )
    events_dir = tmp / "events"
    events_dir.mkdir()
    env = child_env(args.code, pycache=args.pycache, also_on_path=[HERE / "sweep_phases_hook"])
    env["SWEEP_PHASES_DIR"] = str(events_dir)
    if args.without_pyarrow:
        env["SWEEP_PHASES_WITHOUT_PYARROW"] = "1"
    command = [sys.executable, "-m", "energysched", "experiment", "run", str(experiment)]
    command += ["--out", str(tmp / "out"), "--no-report", "--workers", str(args.workers)]
    launched = time.time()
    done = subprocess.run(command, env=env, cwd=args.code, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"sweep_phases: the sweep failed:\n{done.stdout}{done.stderr}")
    time.sleep(0.2)  # the fork server and resource tracker exit just after the sweep process
    events = []
    for path in events_dir.glob("*.jsonl"):
        events += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    events.sort(key=lambda e: e["t"])
    return launched, events


def roles(events: list[dict[str, Any]]) -> dict[int, str]:
    """``sweep``, ``fork server``, ``worker`` or ``helper`` (the resource tracker) per pid."""
    role: dict[int, str] = {}
    for e in events:
        if e["ev"] == "process:start":
            role[e["pid"]] = "sweep" if "experiment" in e.get("arg", "") else "helper"
        elif e["ev"] == "process:forked":
            role[e["pid"]] = "worker"
        elif e["ev"] == "forkserver:start":
            role[e["pid"]] = "fork server"
    return role


def _named(
    events: list[dict[str, Any]], role: dict[int, str], name: str, who: str | None = None
) -> list[dict[str, Any]]:
    """The events called ``name`` (of the processes in role ``who``, if given), in order."""
    return [e for e in events if e["ev"] == name and (who is None or role.get(e["pid"]) == who)]


def _first(
    events: list[dict[str, Any]], role: dict[int, str], name: str, who: str | None = None
) -> dict[str, Any] | None:
    found = _named(events, role, name, who)
    return found[0] if found else None


def _last(
    events: list[dict[str, Any]], role: dict[int, str], name: str, who: str | None = None
) -> dict[str, Any] | None:
    found = _named(events, role, name, who)
    return found[-1] if found else None


def cpu_critical_path(events: list[dict[str, Any]], role: dict[int, str]) -> float | None:
    """The sweep's wall time on a machine with a free core for each of its processes
    (no process waits for a core), from CPU times: the sweep process's CPU time until
    the workers can start (a fork server's, from its launch, if that is later),
    then the worker that ends last (its CPU time from its fork), then the sweep
    process's CPU time after the last outcome. With one worker, the sweep
    process's CPU time. ``None`` when an event is missing."""

    end = _last(events, role, "process:exit", "sweep")
    workers = {e["pid"] for e in events if role.get(e["pid"]) == "worker"}
    if end is None:
        return None
    if not workers:
        return float(end["cpu"])
    ready = _first(events, role, "prepare_shared:end", "sweep") or _first(
        events, role, "executor_run:start", "sweep"
    )
    launched = _first(events, role, "executor_start:end", "sweep")
    server = _first(events, role, "forkserver:ready", "fork server")
    last_outcome = _last(events, role, "executor_run:outcome", "sweep")
    if ready is None or last_outcome is None:
        return None
    start = ready["cpu"]
    if launched is not None and server is not None:
        start = max(start, launched["cpu"] + server["cpu"])
    busiest = max(
        max(e["cpu"] for e in events if e["pid"] == pid and e["ev"] != "process:exit")
        for pid in workers
    )
    return start + busiest + end["cpu"] - last_outcome["cpu"]


def report(launched: float, events: list[dict[str, Any]], timeline: bool) -> list[str]:
    role = roles(events)
    lines = []
    if timeline:
        for e in events:
            lines.append(
                f"{e['t'] - launched:8.3f}  {role.get(e['pid'], '?'):11} {e['pid']:>7}"
                f"  CPU {e['cpu']:6.3f}  {e['ev']:22} {e.get('arg', '')}"
            )

    def first(name: str, who: str | None = None) -> dict[str, Any] | None:
        return _first(events, role, name, who)

    def last(name: str, who: str | None = None) -> dict[str, Any] | None:
        return _last(events, role, name, who)

    def at(e: dict[str, Any] | None) -> str:
        return "-" if e is None else f"{e['t'] - launched:.3f} s (CPU {e['cpu']:.3f} s)"

    lines.append(f"sweep process started      {at(first('process:start', 'sweep'))}")
    if first("forkserver:start"):
        lines.append(f"fork server launched       {at(first('executor_start:end', 'sweep'))}")
        lines.append(f"fork server ready          {at(first('forkserver:ready'))}")
    prepared = first("prepare_shared:end", "sweep")
    if prepared:
        began = first("prepare_shared:start", "sweep")
        lines.append(
            f"shared work done           {at(prepared)}, {prepared['cpu'] - began['cpu']:.3f} s "
            "(imports, traces read; the workers are forked after it)"
        )
    lines.append(f"first runs handed out      {at(first('executor_run:start', 'sweep'))}")
    starts: dict[tuple[int, str], dict[str, Any]] = {}
    runs: dict[int, list[str]] = defaultdict(list)
    costs_s: dict[int, list[tuple[float, float]]] = defaultdict(list)  # (wall, CPU)
    records: dict[int, list[float]] = defaultdict(list)
    record_start: dict[int, float] = {}
    for e in events:
        if e["ev"] == "run:start":
            starts[(e["pid"], e["arg"])] = e
        elif e["ev"] == "run:end":
            s = starts[(e["pid"], e["arg"])]
            runs[e["pid"]].append(
                f"{s['t'] - launched:.3f}-{e['t'] - launched:.3f} ({e['cpu'] - s['cpu']:.2f})"
            )
            costs_s[e["pid"]].append((e["t"] - s["t"], e["cpu"] - s["cpu"]))
        elif e["ev"] == "record:start":
            record_start[e["pid"]] = e["cpu"]
        elif e["ev"] == "record:end":
            records[e["pid"]].append(e["cpu"] - record_start[e["pid"]])
    for pid, spans in runs.items():
        lines.append(f"{role[pid]} {pid}: runs, start-end (CPU): {', '.join(spans)}")
    later = [cost for per_process in costs_s.values() for cost in per_process[1:]]
    if later:
        # each process's first run also reads what it has not read yet (a trace, first
        # imports); the others compare 1 worker with N: side by side on busy cores, a
        # run takes longer than alone (shared caches, a lower clock)
        lines.append(
            f"runs after each process's first: {len(later)}, mean wall "
            f"{sum(w for w, _ in later) / len(later):.3f} s, mean CPU "
            f"{sum(c for _, c in later) / len(later):.3f} s"
        )
    for pid, costs in records.items():
        lines.append(
            f"results written by the {role[pid]} ({pid}): {len(costs)} runs, CPU "
            + " ".join(f"{c:.3f}" for c in costs)
        )
    tables = [first("write_tables:start", "sweep"), first("write_tables:end", "sweep")]
    if None not in tables:
        lines.append(
            f"summaries table            {at(tables[0])}, {tables[1]['cpu'] - tables[0]['cpu']:.3f} s"
        )
    handed = prepared or first("executor_run:start", "sweep")
    outcome = last("executor_run:outcome", "sweep")
    end = last("run_sweep:end", "sweep")
    if handed and outcome and end:
        lines.append(
            "sweep process CPU: before handing out {:.3f} s, while the runs ran {:.3f} s, "
            "after the last outcome {:.3f} s".format(
                handed["cpu"], outcome["cpu"] - handed["cpu"], end["cpu"] - outcome["cpu"]
            )
        )
    lines.append(f"sweep process exiting      {at(last('process:exit', 'sweep'))}")
    path = cpu_critical_path(events, role)
    if path is not None:
        lines.append(
            f"CPU critical path          {path:.3f} s (the wall time with a free core per process)"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--max-jobs", type=int, default=5000)
    parser.add_argument("--policy", default="easy-slack-size-freq")
    parser.add_argument("--code", type=Path, default=HERE.parent)
    parser.add_argument("--pycache", type=Path, default=None)
    parser.add_argument("--timeline", action="store_true")
    parser.add_argument("--without-pyarrow", action="store_true")
    args = parser.parse_args()
    if not args.trace.startswith("builtin:") and not Path(args.trace).exists():
        print(f"sweep_phases: trace not found: {args.trace}", file=sys.stderr)
        sys.exit(2)
    args.code = args.code.resolve()
    with tempfile.TemporaryDirectory(prefix="sweep_phases_") as tmp:
        launched, events = run_with_hook(args, Path(tmp))
    print(f"{args.runs} runs of {args.max_jobs} jobs, {args.workers} worker(s), {args.code}")
    print("\n".join(report(launched, events, args.timeline)))
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
