"""Benchmark: predictor-driven EASY with size and frequency choice replaying SDSC-SP2.

Policy ``easy-slack-size-freq`` (the minimum-energy size within a 10 %
runtime slack, then the lowest frequency within the slack; ``--policy`` to
change, ``--param key=value`` for its parameters) with the ``adept+fluid``
composite predictor, learning online (every finished job is measured and
the predictor refits its application), on the cleaned SDSC-SP2 trace with
the default ground truth. Prints jobs per second of the whole replay
(engine + ground truth + measurements + refits + policy, without any
instrumentation) of CPU time, and the process's peak resident memory per job
(``ru_maxrss``: interpreter, trace, ground truth and replay; and what the replay
adds to the peak reached before it, per job): ``--repeat``
replays (default 3), each in a new Python process, so that no replay starts
with caches a previous one warmed; the best and the median, and how far CPU
time was from wall time (a large gap means the machine was busy with
something else). ``--compare DIR`` alternates each replay with one of the
code checked out in DIR (same figures; the load average is printed).
``--trace`` takes a path or a short name: ``sdsc``, ``ctc``, ``hpc2n``,
``curie`` (the four traces of issue 19's targets). The replays must agree
(the script stops otherwise). Then the chooser's counters and the number
of Downey fits. Each process also replays a reference right after its
timed replay (``--reference``, default ``easy``: rigid EASY, no predictor,
same trace) and the script prints its time and the ratio of the two: the
host's speed moves both, so the ratio tells a code change from a slow
minute.

``--breakdown`` replays once more with timers on the main calls and prints
where the time goes (ADEPT refits lazily, so its refits happen inside the
policy's ``schedule``, within ``grid_shape``; the timers add their own
overhead, about 0.3 s on the full trace). ``--record-fits FILE`` replays once
more and saves every ``fit_downey`` call with the digest of its results, for
``bench_adept.py --corpus FILE --digest`` (which says whether the fits of the
current code are still the recorded ones). ``--profile`` cProfiles one more
replay. ``--instructions`` replaces the timing by an instruction count of
one replay under valgrind's callgrind (the same code in the same directory
repeats its count to about 0.01 %, unlike seconds on a shared host; an
unrelated edit or another directory moves it by 0.1-0.2 %: CPython's type
attribute cache depends on the memory layout; about 60 s per 10,000 jobs).

Why this policy: it keeps the machine out of saturation, so the figure
measures the learning loop rather than queue scans. ``easy-energy-size-freq``
(minimum energy, whatever the runtime) saturates SDSC-SP2 (mean wait
300,000 s; 5,300 jobs/s on 2026-11-21).

Usage::

    .venv/bin/python benchmarks/bench_policies.py [--trace PATH|sdsc|ctc|hpc2n|curie]
        [--max-jobs N] [--policy NAME] [--predictor SPEC] [--param KEY=VALUE ...]
        [--repeat N] [--compare OTHER_CHECKOUT]
        [--reference POLICY|none] [--instructions] [--breakdown] [--record-fits FILE] [--profile]
        [--without-pyarrow]

Target (issue 5, issue 19 on all four traces): >= 10,000 jobs/s including
refits, and (issue 19) peak memory <= 3 KB per job.

``--without-pyarrow`` measures the README's install, where pyarrow (the
optional ``parquet`` extra) is absent: the replay processes run as if it were
not installed, so pandas does not import it (about 38 MB less of modules).

The figures, and the commands that reproduce them: docs/performance.md.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pickle
import pstats
import re
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

#: The trace the figures are for: SDSC-SP2 from the Parallel Workloads Archive,
#: looked for in $ENERGYSCHED_TRACES, else in ../shared/data/traces next to the
#: repository (or give --trace).
TRACE_NAME = "SDSC-SP2-1998-4.2-cln.swf.gz"
TRACE_DIR = Path(
    os.environ.get("ENERGYSCHED_TRACES")
    or Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"
)
DEFAULT_TRACE = TRACE_DIR / TRACE_NAME
PWA_URL = "https://www.cs.huji.ac.il/labs/parallel/workload/"
#: Short names for ``--trace``: the four traces of the predictor-driven targets
#: (issue 19: >= 10,000 jobs/s and <= 3 KB of peak memory per job on each).
TRACE_NAMES = {
    "sdsc": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "ctc": "CTC-SP2-1996-3.1-cln.swf.gz",
    "hpc2n": "HPC2N-2002-2.2-cln.swf.gz",
    "curie": "CEA-Curie-2011-2.1-cln.swf.gz",
}


def _trace_path(name: str) -> str:
    """``--trace`` as an absolute path (the compared checkout's replays run in its own
    directory): a short name of :data:`TRACE_NAMES` is looked for in TRACE_DIR, else
    in ``../shared/data/traces`` from the current directory (a checkout copied
    elsewhere, such as a ``git archive`` snapshot run from the repository root)."""
    if name.startswith("builtin:"):
        return name
    if name in TRACE_NAMES:
        found = TRACE_DIR / TRACE_NAMES[name]
        beside_cwd = Path.cwd().parent / "shared" / "data" / "traces" / TRACE_NAMES[name]
        if not found.is_file() and beside_cwd.is_file():
            found = beside_cwd
        return str(found)
    return str(Path(name).resolve())


class _Timer:
    """Wraps a bound method and accumulates its wall time (s) and calls."""

    def __init__(self, obj, attr: str) -> None:
        self.obj, self.attr = obj, attr
        self.inner = getattr(obj, attr)
        self.seconds = 0.0
        self.calls = 0
        setattr(obj, attr, self)

    def __call__(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return self.inner(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t
            self.calls += 1


def _instrument(policy, truth) -> dict[str, _Timer]:
    """Timers on the main calls of one replay (filled in as the policy is set up)."""
    orig_setup = policy.setup
    timers: dict[str, _Timer] = {}

    def setup(*a, **k):
        orig_setup(*a, **k)
        chooser = policy.chooser
        if hasattr(chooser, "predictor"):
            pred = chooser.predictor
            timers["predict"] = _Timer(pred, "predict")
            if hasattr(pred, "predict_grid"):
                timers["predict_grid (incl. lazy refits)"] = _Timer(pred, "predict_grid")
                chooser._grid_fn = pred.predict_grid  # the chooser binds it at setup
            if getattr(chooser, "_shape_fn", None) is not None:
                timers["grid_shape (incl. lazy refits)"] = _Timer(pred, "grid_shape")
                chooser._shape_fn = pred.grid_shape
            timers["predictor.update"] = _Timer(pred, "update")
            # refits proper (ADEPT refits lazily, inside predict/predict_grid/grid_shape)
            parts = [("", pred)] + [
                (f"{k.strip('_')}.", pred.__dict__[k])
                for k in ("node_", "freq_")
                if k in pred.__dict__
            ]
            for label, part in parts:
                if hasattr(part, "_refit") and "_refit" in dir(type(part)):
                    timers[f"  {label}_refit"] = _Timer(part, "_refit")

    policy.setup = setup  # type: ignore[method-assign]
    timers["schedule (policy, incl. predict)"] = _Timer(policy, "schedule")
    timers["observe (policy, incl. update)"] = _Timer(policy, "observe")
    timers["truth.measure_row_values"] = _Timer(truth, "measure_row_values")
    return timers


def _load_modules(args: argparse.Namespace) -> None:
    """Import what a replay runs (the engine, the policies, the predictor's modules),
    so that the peak memory before any data is read can be told apart."""
    from energysched.runner import load_trace  # noqa: F401
    from policies.registry import get_policy  # noqa: F401
    from predictors.registry import get_predictor
    from simulator.engine import simulate  # noqa: F401
    from workloads.applications import assign_ground_truth  # noqa: F401

    get_predictor(args.predictor)


def _setup(args: argparse.Namespace):
    """The trace, platform, ground truth and benchmark observations of the replay."""
    from energysched.runner import build_platform, load_trace
    from predictors.base import Observations
    from predictors.registry import get_predictor
    from workloads.applications import assign_ground_truth

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(args.trace, max_jobs=args.max_jobs)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset=args.preset, seed=0)
    try:
        from workloads.benchmark_suite import measure_benchmark_suite

        obs = Observations(benchmarks=measure_benchmark_suite(platform, seed=0), platform=platform)
    except ImportError:  # pragma: no cover
        obs = None
    # the predictor's modules are loaded here, outside the clock and the instruction
    # count: an installed package reads their bytecode cache, while a checkout run
    # without one (PYTHONDONTWRITEBYTECODE) would compile about 380 KB of source
    # inside the replay (about 0.07 s), a start-up cost, not a cost per job
    get_predictor(args.predictor)
    return trace, platform, truth, obs


def _replay(
    args: argparse.Namespace, setup, timed: bool = False, prof=None, reference: bool = False
):
    """One replay: (policy, result, wall s, CPU s, timers). ``reference``: replay the
    reference policy (``--reference``, with its own defaults) instead."""
    from policies.registry import get_policy
    from simulator.engine import simulate

    trace, platform, truth, obs = setup
    if reference:
        policy = get_policy(args.reference)
    else:
        params = dict(p.split("=", 1) for p in args.param)
        policy = get_policy(args.policy, predictor=args.predictor, **params)
    timers = _instrument(policy, truth) if timed else {}
    c0, t0 = time.process_time(), time.perf_counter()
    if prof:
        prof.enable()
    result = simulate(trace, platform, policy, None, truth, observations=obs)
    if prof:
        prof.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for k in list(truth.__dict__):  # remove the timers from the shared ground truth
        if isinstance(truth.__dict__[k], _Timer):
            del truth.__dict__[k]
    return policy, result, wall, cpu, timers


def _summary_line(s: dict) -> str:
    return (
        f"energy {s['energy_j'] / 3.6e9:.3f} MWh, makespan {s['makespan_s']:.0f} s, "
        f"mean wait {s['mean_wait_s']:.0f} s, mean bsld {s['mean_bsld']:.2f}"
    )


def _counters(policy) -> dict[str, int]:
    """The chooser's counters and the node predictor's Downey fits."""
    chooser = getattr(policy, "chooser", None)
    out = {str(k): int(v) for k, v in getattr(chooser, "stats", {}).items()}
    node = getattr(getattr(chooser, "predictor", None), "node_", None)
    if node is not None and hasattr(node, "n_refits_"):
        out["downey_fits"] = int(node.n_refits_)
    return out


def result_digest(result, with_log: bool = True) -> str:
    """Digest of a replay's outputs: the jobs table, the power timeline and (with
    ``with_log``) the predictor log (column names and every value, pandas' row hashes),
    16 hex digits. Two versions of the code that schedule and predict the same give the
    same digest; without the log, two that schedule the same (the log holds the
    chooser's counters, which caches move)."""
    import hashlib

    import pandas as pd

    digest = hashlib.sha256()
    tables = (result.jobs, result.power) + ((result.predictor_log,) if with_log else ())
    for table in tables:
        if table is None:
            digest.update(b"none")
            continue
        digest.update(repr(list(table.columns)).encode())
        digest.update(pd.util.hash_pandas_object(table, index=True).to_numpy().tobytes())
    return digest.hexdigest()[:16]


def _child(args: argparse.Namespace) -> None:
    """One timed replay in this (fresh) process; prints one JSON line for the parent."""
    _load_modules(args)
    libraries_rss_kb = _peak_rss_kb()  # the interpreter and the modules, before any data
    setup = _setup(args)
    setup_rss_kb = _peak_rss_kb()
    counting = bool(os.environ.get(_CALLGRIND_ENV))
    if counting:  # under callgrind (--instructions): count the replay only
        _callgrind_control("on")
    policy, result, wall, cpu, _ = _replay(args, setup)
    if counting:
        _callgrind_control("off")
    out = {
        "peak_rss_kb": _peak_rss_kb(),
        "setup_rss_kb": setup_rss_kb,
        "libraries_rss_kb": libraries_rss_kb,
        "jobs": len(setup[0].jobs),
        "nodes": setup[1].total_nodes,
        "wall_s": wall,
        "cpu_s": cpu,
        "summary": _summary_line(result.summary),
        "counters": _counters(policy),
        "digest": result_digest(result),
        "schedule_digest": result_digest(result, with_log=False),
    }
    if args.reference != "none":  # after the timed replay, which starts fresh
        _, ref, ref_wall, ref_cpu, _ = _replay(args, setup, reference=True)
        out.update(ref_wall_s=ref_wall, ref_cpu_s=ref_cpu, ref_summary=_summary_line(ref.summary))
    print(json.dumps(out))


_CALLGRIND_ENV = "BENCH_POLICIES_UNDER_CALLGRIND"


def _peak_rss_kb() -> float:
    """This process's peak resident memory so far (KB; ``ru_maxrss``): the trace, the
    ground truth, the replay and everything the interpreter holds."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform == "darwin" else float(peak)


def _callgrind_control(state: str) -> None:
    """Switch callgrind's counting of this process on or off."""
    subprocess.run(
        ["callgrind_control", "-i", state, str(os.getpid())],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _count_instructions(child_argv: list[str]) -> None:
    """One replay in a new process under valgrind's callgrind, counting the
    instructions of the replay only (not the start-up and trace loading):
    repeatable whatever else the machine does (string hashing fixed with
    PYTHONHASHSEED=0), so two versions can be
    compared to a fraction of a per cent (about 60 s per 10,000 jobs)."""
    import shutil
    import tempfile

    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("--instructions needs valgrind (Debian/Ubuntu: apt install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={tmp}/callgrind.out",
                sys.executable,
                __file__,
                "--child",
                *child_argv,
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, _CALLGRIND_ENV: "1", "PYTHONHASHSEED": "0"},  # repeatable
        )
    counted = re.search(r"Collected\s*:\s*(\d+)", got.stderr)
    if got.returncode != 0 or counted is None:
        sys.exit(f"the replay under callgrind failed:\n{got.stderr[-3000:]}")
    result = json.loads(got.stdout.strip().splitlines()[-1])
    print(f"instructions of the replay (callgrind): {int(counted.group(1)):,}")
    print(result["summary"])
    print(f"outputs digest (jobs table, power, predictor log): {result['digest']}")
    print(f"schedule digest (jobs table, power): {result['schedule_digest']}")


def _fresh_replays(
    args: argparse.Namespace, child_argv: list[str], compare: Path | None = None
) -> tuple[list[dict], list[dict]]:
    """``--repeat`` replays, each in a new Python process (no warm caches carried over);
    with ``compare`` (another checkout) each is followed by one of that code (the same
    child, importing the other checkout's packages), so that both see the same
    minutes of the host. Returns (this code's runs, the other's runs)."""
    mine: list[dict] = []
    other: list[dict] = []
    code = [("this", None, mine)] + ([("compare", compare, other)] if compare else [])
    for k in range(args.repeat):
        for label, root, runs in code:
            env = dict(os.environ)
            if root is not None:
                env["PYTHONPATH"] = os.pathsep.join(
                    [str(root), str(Path(__file__).resolve().parent)]
                )
            got = subprocess.run(
                [sys.executable, __file__, "--child", *child_argv],
                capture_output=True,
                text=True,
                check=False,
                env=env,
                cwd=root,
            )
            if got.returncode != 0:
                sys.exit(f"replay {k + 1} of {args.repeat} ({label}) failed:\n{got.stderr}")
            runs.append(json.loads(got.stdout.strip().splitlines()[-1]))
            print(
                f"  replay {k + 1}/{args.repeat} ({label}): CPU {runs[-1]['cpu_s']:.2f} s, "
                f"peak RSS {runs[-1]['peak_rss_kb'] / 1024:,.0f} MB",
                file=sys.stderr,
            )
    return mine, other


def load_average() -> str:
    """The host's load averages (1, 5, 15 min) and CPU count, printed with every figure."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def _speed_line(label: str, runs: list[dict]) -> str:
    """Jobs/s of CPU time (best and median of the fresh replays) and peak memory per job."""
    n = runs[0]["jobs"]
    cpus = sorted(r["cpu_s"] for r in runs)
    peaks = sorted(r["peak_rss_kb"] for r in runs)
    largest = max(runs, key=lambda r: r["peak_rss_kb"])
    replay_kb = largest["peak_rss_kb"] - largest["setup_rss_kb"]
    best, median = cpus[0], statistics.median(cpus)
    return (
        f"{label}: CPU best {best:.2f} s -> {n / best:,.0f} jobs/s, median {median:.2f} s -> "
        f"{n / median:,.0f} jobs/s (all: {', '.join(f'{c:.2f}' for c in cpus)} s; wall "
        f"within {max(abs(r['wall_s'] - r['cpu_s']) for r in runs):.2f} s of CPU); peak RSS "
        f"{peaks[-1] / 1024:,.0f} MB = {peaks[-1] / n:.2f} KB per job (before the replay "
        f"{largest['setup_rss_kb'] / 1024:,.0f} MB: interpreter and modules "
        f"{largest['libraries_rss_kb'] / 1024:,.0f} MB, then trace and truth; "
        f"the replay adds {replay_kb / n:.2f} KB per job)"
    )


def _print_reference(name: str, runs: list[dict], n: int) -> None:
    """The reference replays (one per fresh process, right after its timed replay): how
    fast the host was, and the timed replay's cost relative to it."""
    refs = sorted(r["ref_wall_s"] for r in runs)
    ratios = sorted(r["wall_s"] / r["ref_wall_s"] for r in runs)
    if any(r["ref_summary"] != runs[0]["ref_summary"] for r in runs):
        sys.exit("the reference replays differ: " + "; ".join(r["ref_summary"] for r in runs))
    print(
        f"host reference, policy {name} (rigid, no predictor) right after each replay: "
        f"best {refs[0]:.2f} s -> {n / refs[0]:,.0f} jobs/s, median "
        f"{statistics.median(refs):.2f} s; replay / reference: "
        f"{', '.join(f'{q:.2f}' for q in ratios)}"
    )


def _record_fits(args: argparse.Namespace, setup, path: str) -> None:
    """Replay once more, recording every Downey fit for ``bench_adept.py --corpus``: the
    ``fit_downey`` calls (ADEPT) and the ``fit_downey_params`` calls (``auto``'s
    leave-one-out), the latter as the one-target ``fit_downey`` calls they equal."""
    import hashlib

    from bench_adept import hash_fit  # this script's folder is on sys.path

    import predictors.adept as adept
    import predictors.auto as auto

    calls: list[tuple] = []
    digest = hashlib.sha256()
    fit, fit_params = adept.fit_downey, adept.fit_downey_params

    def record(nodes, runtimes, targets, kw) -> None:
        calls.append((np.array(nodes, copy=True), np.array(runtimes, copy=True), targets, kw))

    def recording(nodes, runtimes, targets, **kw):
        record(nodes, runtimes, list(targets), kw)
        got = fit(nodes, runtimes, targets, **kw)
        hash_fit(digest, got)
        return got

    def recording_params(nodes, runtimes, target, **kw):
        record(nodes, runtimes, [target], kw)
        hash_fit(digest, fit(nodes, runtimes, [target], **kw))  # what the corpus replays
        return fit_params(nodes, runtimes, target, **kw)

    # auto binds fit_downey_params at its import: patched where it is called
    patched = [(adept, "fit_downey", recording), (adept, "fit_downey_params", recording_params)]
    patched.append((auto, "fit_downey_params", recording_params))
    saved = [(module, name, getattr(module, name)) for module, name, _ in patched]
    for module, name, wrapper in patched:
        setattr(module, name, wrapper)
    try:
        policy = _replay(args, setup)[0]
        _counters(policy)  # reading the fit count does the deferred refits too
    finally:
        for module, name, original in saved:
            setattr(module, name, original)
    with open(path, "wb") as fh:
        pickle.dump({"fits": calls, "digest": digest.hexdigest()[:16], "source": vars(args)}, fh)
    print(f"recorded {len(calls)} fit_downey calls to {path} (digest {digest.hexdigest()[:16]})")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--trace",
        default=str(DEFAULT_TRACE),
        help="SWF trace (.swf/.swf.gz), builtin:kth-sp2, or one of "
        f"{', '.join(TRACE_NAMES)} (in {TRACE_DIR}) [default: {DEFAULT_TRACE}]",
    )
    ap.add_argument("--max-jobs", type=int, default=None)
    ap.add_argument("--policy", default="easy-slack-size-freq")
    ap.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="policy parameter (e.g. refit_growth=0.5); repeatable",
    )
    ap.add_argument("--predictor", default="adept+fluid")
    ap.add_argument("--preset", default="npb-mix")
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="timed replays, each in a new process (default 3); prints the best and the median",
    )
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="replay once more with timers on the main calls and print where the time goes",
    )
    ap.add_argument(
        "--record-fits",
        metavar="FILE",
        help="replay once more and save every fit_downey call (for bench_adept.py --corpus FILE)",
    )
    ap.add_argument("--profile", action="store_true", help="cProfile one more replay (slower)")
    ap.add_argument(
        "--reference",
        default="easy",
        metavar="POLICY",
        help="after each timed replay, time this policy on the same trace in the same process, "
        "as a gauge of the host's speed (default easy: rigid EASY; none: skip)",
    )
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="instead of timing: count the replay's instructions under valgrind's callgrind "
        "(repeatable; about 60 s per 10,000 jobs; use --max-jobs)",
    )
    ap.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="OTHER_CHECKOUT",
        help="alternate each fresh replay with one of the code checked out in this directory "
        "(e.g. git archive REV | tar -x -C DIR)",
    )
    ap.add_argument(
        "--without-pyarrow",
        action="store_true",
        help="replay as in the README's install, without the optional pyarrow "
        "(pandas then does not import it)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.trace = _trace_path(args.trace)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if not args.trace.startswith("builtin:") and not Path(args.trace).is_file():
        ap.error(
            f"trace {args.trace} not found. Download {TRACE_NAME} from the Parallel Workloads "
            f"Archive ({PWA_URL}) and give its path with --trace (or its folder in "
            "$ENERGYSCHED_TRACES), or run on the bundled trace "
            "with --trace builtin:kth-sp2"
        )
    if args.child:
        if args.without_pyarrow:  # before anything imports pandas: "not installed"
            sys.modules["pyarrow"] = None  # type: ignore[assignment]
        _child(args)
        return

    child_argv = ["--trace", args.trace, "--policy", args.policy, "--predictor", args.predictor]
    child_argv += ["--preset", args.preset] + [f"--param={p}" for p in args.param]
    if args.without_pyarrow:
        child_argv.append("--without-pyarrow")
    if args.max_jobs is not None:
        child_argv += ["--max-jobs", str(args.max_jobs)]
    if args.instructions:
        _count_instructions([*child_argv, "--reference", "none"])
        return
    runs, other = _fresh_replays(args, [*child_argv, "--reference", args.reference], args.compare)
    first = runs[0]
    n = first["jobs"]
    print(f"trace {Path(args.trace).name}: {n} jobs, platform {first['nodes']} nodes")
    print(
        f"interpreter {sys.version.split()[0]} ({sys.executable}; its build matters, see docs/performance.md)"
    )
    print(f"policy {args.policy} / predictor {args.predictor}; {load_average()}")
    print(_speed_line(f"this code, {len(runs)} fresh processes", runs))
    if other:
        print(_speed_line(f"compare {args.compare}", other))
        if other[0]["summary"] != first["summary"]:
            print(f"  the compared code's replay differs: {other[0]['summary']}")
        if other[0]["digest"] != first["digest"]:
            same = other[0]["schedule_digest"] == first["schedule_digest"]
            print(
                f"  the compared code's outputs differ: digest {other[0]['digest']} "
                + (
                    "(the same schedule: the predictor logs differ)"
                    if same
                    else "(another schedule)"
                )
            )
    counters = dict(first["counters"])
    fits = counters.pop("downey_fits", None)
    if counters:
        print("  chooser:", ", ".join(f"{k}={v}" for k, v in counters.items()))
    if fits is not None:
        print(f"  Downey fits (node predictor): {fits}")
    if any(
        r["summary"] != first["summary"]
        or r["counters"] != first["counters"]
        or r["digest"] != first["digest"]
        for r in runs
    ):
        sys.exit("the replays differ: " + "; ".join(r["summary"] for r in runs))
    if args.reference != "none":
        _print_reference(args.reference, runs, n)

    if args.breakdown or args.profile or args.record_fits:
        setup = _setup(args)
    if args.breakdown:
        _, again, wall2, _, timers = _replay(args, setup, timed=True)
        if _summary_line(again.summary) != first["summary"]:
            sys.exit("the instrumented replay differs")
        print(f"breakdown (one more replay, with timers: {wall2:.2f} s; nested timers overlap)")
        for name, tm in timers.items():
            print(f"  {name:34s} {tm.seconds:8.2f} s  {tm.calls:8d} calls")
    if args.record_fits:
        _record_fits(args, setup, args.record_fits)
    print(first["summary"])
    print(f"outputs digest (jobs table, power, predictor log): {first['digest']}")
    print(f"schedule digest (jobs table, power): {first['schedule_digest']}")
    if args.profile:
        prof = cProfile.Profile()
        _replay(args, setup, prof=prof)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
