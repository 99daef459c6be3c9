"""Audit: throw a few hundred hostile inputs and faults at energysched and count what happens.

Categories (each input is built to be wrong, or is a fault to survive):

* ``swf``: a small valid trace with one mutation: a hostile token in a job
  field (``--1``, ``1e``, ``nan``, ``1e400``, a Latin-1 or Unicode character),
  a bad header value (``MaxProcs: -1``), a byte-order mark, form feeds and
  vertical tabs, lone ``\\r`` line ends, a duplicate job id, a value above
  2**53, a truncated gzip stream, a gzip bomb of blank lines;
* ``platform``: a valid platform file with one key set to a wrong type or an
  absurd value (a string, ``true``, ``nan``, ``1e300``, a negative count);
* ``experiment``: a valid experiment file with one key wrong (``max_jobs =
  "200"``, ``record_power = "no"``, an unknown solver, an oracle without a
  ground truth, a non-UTF-8 byte);
* ``flags``: ``energysched run`` with one bad option (``--noise nan``,
  ``--out /dev/null/x``, a directory as ``--trace``, a power cap below idle
  power, the predictor given twice...);
* ``faults``: sweeps where one run's plug-in raises at import, holds
  unsavable parameters, kills its worker, hangs (with ``--run-timeout``), or
  the disk fills while one run is written.

Each try ends as one of: ``clean error`` (one :class:`EnergySchedError` or
one ``Error:`` line from the CLI), ``traceback`` (any other exception),
``hang`` (no answer within ``--timeout`` s), ``silent-wrong`` (a wrong input
accepted), ``data lost`` (a fault that cost a healthy run its results or left
temp files). A fault survived as designed counts as a clean error.

Usage::

    python benchmarks/fuzz_audit.py [--seed 0] [--swf 200] [--platform 60]
        [--experiment 60] [--timeout 60] [--no-faults] [-v]

Exit status 1 when anything but clean errors was seen.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import random
import signal
import sys
import tempfile
import textwrap
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from energysched.errors import EnergySchedError  # noqa: E402

OUTCOMES = ("clean error", "traceback", "hang", "silent-wrong", "data lost")

JOB_FIELDS = 18
GOOD_HEADER = ["; Version: 2.2", "; MaxNodes: 8", "; MaxProcs: 8", "; UnixStartTime: 835823160"]
BAD_TOKENS = [
    "--1", "1e", "-", "+", ".", "nan", "inf", "-inf", "1e400", "0x10", "1_0", "١",
    "½", "caf\xe9", "1,5", "True", "9007199254740993", "-7", "2.5e17",
]  # fmt: skip
BAD_HEADER_VALUES = ["-1", "0", "1e400", "2.5", "-5"]


class Hang(Exception):
    """The try took longer than the time budget."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Try:
    category: str
    name: str
    action: Callable[[Path], Any]  # raises to reject; returns a "data lost" note or None


def _job_line(job_id: int, submit: int, procs: int = 2) -> list[str]:
    tokens = ["-1"] * JOB_FIELDS
    tokens[0], tokens[1], tokens[3], tokens[4], tokens[7], tokens[8] = (
        str(job_id), str(submit), "100", str(procs), str(procs), "200",
    )  # fmt: skip
    tokens[10], tokens[11] = "1", "1"
    return tokens


def _good_jobs(n: int = 12) -> list[list[str]]:
    return [_job_line(i + 1, 10 * i, 1 + i % 4) for i in range(n)]


def _swf_text(header: list[str], jobs: list[list[str]], sep: str = " ", nl: str = "\n") -> str:
    return nl.join([*header, *(sep.join(job) for job in jobs)]) + nl


def read_and_prepare(path: Path) -> None:
    from simulator.platform import platform_from_trace
    from workloads.cleaning import clean_trace
    from workloads.swf import read_swf

    trace = read_swf(path)
    cleaned, _ = clean_trace(trace)
    platform_from_trace(cleaned)


def swf_tries(rng: random.Random, count: int) -> list[Try]:
    tries: list[Try] = []

    def add(name: str, data: bytes, suffix: str = ".swf") -> None:
        def action(tmp: Path) -> None:
            path = tmp / f"t{suffix}"
            path.write_bytes(data)
            read_and_prepare(path)

        tries.append(Try("swf", name, action))

    kinds = ["token", "header", "separator", "duplicate", "big", "gzip-cut", "crlf-token"]
    for k in range(count):
        kind = kinds[k % len(kinds)]
        jobs = _good_jobs()
        header = list(GOOD_HEADER)
        row, col = rng.randrange(len(jobs)), rng.randrange(JOB_FIELDS)
        if kind == "token":
            token = rng.choice(BAD_TOKENS)
            jobs[row][col] = token
            enc = rng.choice(["utf-8", "latin-1"])
            add(f"token {token!r} in field {col}", _swf_text(header, jobs).encode(enc, "replace"))
        elif kind == "header":
            key = rng.choice(["MaxProcs", "MaxNodes", "UnixStartTime"])
            value = rng.choice(BAD_HEADER_VALUES if key != "UnixStartTime" else ["-5", "1e400"])
            header = [h for h in header if key not in h] + [f"; {key}: {value}"]
            add(f"header {key}: {value}", _swf_text(header, jobs).encode())
        elif kind == "separator":
            sep = rng.choice(["\f", "\v", "\x85", "\u2028", "\x1c"])
            jobs[row][col] = rng.choice(BAD_TOKENS)
            text = _swf_text(header, jobs, sep=f" {sep}", nl=rng.choice(["\n", "\r\n"]))
            bom = b"\xef\xbb\xbf" if rng.random() < 0.5 else b""
            add(f"separator {sep!r} + bad token", bom + text.encode())
        elif kind == "duplicate":
            jobs[row][0] = jobs[(row + 1) % len(jobs)][0]
            add("duplicate job id", _swf_text(header, jobs).encode())
        elif kind == "big":
            col = rng.choice([1, 3, 8])
            jobs[row][col] = str(2**53 + rng.randrange(1, 10**6))
            add(f"value above 2**53 in field {col}", _swf_text(header, jobs).encode())
        elif kind == "gzip-cut":
            data = gzip.compress(_swf_text(header, jobs).encode())
            add("truncated gzip", data[: rng.randrange(10, len(data) - 8)], ".swf.gz")
        else:
            jobs[row][col] = rng.choice(BAD_TOKENS)
            add("lone CR line ends + bad token", _swf_text(header, jobs, nl="\r").encode())
    add("gzip of 64 MiB of blank lines", gzip.compress(b"\n" * (64 << 20), 9), ".swf.gz")
    add("empty file", b"")
    add("only a BOM", b"\xef\xbb\xbf")
    return tries


PLATFORM = textwrap.dedent(
    """
    name = "audit"
    [[node_types]]
    name = "n"
    count = 8
    cores_per_node = 2
    off_power_w = 5.0
    boot_time_s = 60.0
    boot_energy_j = 6000.0
    pstates = [
      { freq_ghz = 1.2, idle_power_w = 90.0, busy_power_w = 150.0 },
      { freq_ghz = 2.4, idle_power_w = 100.0, busy_power_w = 230.0 },
    ]
    [topology]
    nodes_per_switch = 4
    link_bandwidth_gbs = 10.0
    """
)
PLATFORM_KEYS = [
    "count", "cores_per_node", "off_power_w", "boot_time_s", "boot_energy_j",
    "freq_ghz", "idle_power_w", "busy_power_w", "nodes_per_switch", "link_bandwidth_gbs",
]  # fmt: skip
BAD_VALUES = ['"8"', "true", "nan", "inf", "-1", "1e300", "[1]", "{ a = 1 }", '"no"']


def _replace_key(text: str, key: str, value: str) -> str:
    out = []
    done = False
    for line in text.splitlines():
        stripped = line.strip()
        if not done and stripped.startswith(f"{key} ="):
            line = f"{key} = {value}"
            done = True
        elif not done and f"{key} = " in line and "{" in line:
            head, _, rest = line.partition(f"{key} = ")
            rest_tail = rest.split(",", 1)[1] if "," in rest else " },"
            line = f"{head}{key} = {value},{rest_tail}"
            done = True
        out.append(line)
    return "\n".join(out) + "\n"


def platform_tries(rng: random.Random, count: int) -> list[Try]:
    from simulator.platform import load_platform

    tries = []
    for k in range(count):
        key = PLATFORM_KEYS[k % len(PLATFORM_KEYS)]
        value = rng.choice(BAD_VALUES)
        text = _replace_key(PLATFORM, key, value)

        def action(tmp: Path, text: str = text) -> None:
            path = tmp / "p.toml"
            path.write_text(text, encoding="utf-8")
            load_platform(path)

        tries.append(Try("platform", f"{key} = {value}", action))

    def latin1(tmp: Path) -> None:
        path = tmp / "p.toml"
        path.write_bytes(PLATFORM.replace('"audit"', '"caf\xe9"').encode("latin-1"))
        load_platform(path)

    tries.append(Try("platform", "Latin-1 file", latin1))
    tries.append(Try("platform", "a directory", lambda tmp: load_platform(tmp)))
    return tries


EXPERIMENT = textwrap.dedent(
    """
    name = "audit"
    [[traces]]
    name = "k"
    source = "builtin:kth-sp2"
    max_jobs = 30
    [[policies]]
    name = "easy"
    [engine]
    record_power = true
    idle_timeout_s = 600.0
    reserve_nodes = 1
    kill_grace_s = 0.0
    """
)
EXPERIMENT_KEYS = ["max_jobs", "record_power", "idle_timeout_s", "reserve_nodes", "kill_grace_s"]


def experiment_tries(rng: random.Random, count: int) -> list[Try]:
    from energysched.config import load_experiment

    def from_text(text: str, encoding: str = "utf-8") -> Callable[[Path], None]:
        def action(tmp: Path) -> None:
            path = tmp / "e.toml"
            path.write_bytes(text.encode(encoding))
            load_experiment(path)

        return action

    tries = []
    for k in range(count):
        key = EXPERIMENT_KEYS[k % len(EXPERIMENT_KEYS)]
        value = rng.choice([*BAD_VALUES, '"200"'])
        if key == "record_power" and value == "true":
            value = '"no"'  # true is a valid value there
        text = _replace_key(EXPERIMENT, key, value)
        tries.append(Try("experiment", f"{key} = {value}", from_text(text)))
    solver = EXPERIMENT.replace('name = "easy"', 'name = "easy-min-energy"\npredictors = "all"')
    tries.append(
        Try(
            "experiment",
            "solver = magic",
            from_text(solver + '[[predictors]]\nname = "lbm"\nparams = { solver = "magic" }\n'),
        )
    )
    tries.append(
        Try(
            "experiment",
            "oracle without truth",
            # (without [ground_truth] the default preset applies: opt out of it)
            from_text(
                solver.replace('name = "audit"', 'name = "audit"\nground_truth = "none"')
                + '[[predictors]]\nname = "oracle"\n'
            ),
        )
    )
    tries.append(
        Try("experiment", "Latin-1 file", from_text("# caf\xe9\n" + EXPERIMENT, "latin-1"))
    )
    tries.append(Try("experiment", "plug-in raising at import", from_text(
        EXPERIMENT.replace('name = "easy"', 'name = "p"\npolicy = "audit_broken_plugin:P"')
    )))  # fmt: skip
    return tries


def _cli(args: list[str]) -> None:
    from click.testing import CliRunner

    from energysched.cli import main

    result = CliRunner().invoke(main, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if result.exit_code == 0:
        return
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    if "Traceback" in result.output or len(errors) != 1:
        raise RuntimeError(f"exit {result.exit_code} without one error line: {result.output!r}")
    raise EnergySchedError(errors[0])


def flag_tries() -> list[Try]:
    cases: list[tuple[str, list[str]]] = [
        ("--noise nan", ["--noise", "nan"]),
        ("--noise inf", ["--noise", "inf"]),
        ("--noise 1.5", ["--noise", "1.5"]),
        ("--idle-timeout nan", ["--idle-timeout", "nan"]),
        ("--power-cap nan", ["--power-cap", "nan"]),
        ("--power-cap below idle", ["--power-cap", "10"]),
        ("--max-jobs 0", ["--max-jobs", "0"]),
        ("--seed -1", ["--seed", "-1"]),
        ("--reserve-nodes -2", ["--reserve-nodes", "-2"]),
        ("--param predictor= and --predictor", ["--param", "predictor=lbm", "--predictor", "oracle"]),
        ("--param without =", ["--param", "slack"]),
        ("--param its rules never read", ["--policy", "easy-energy-freq", "--param", "slack=0.5"]),
        ("--param of a rigid policy without predictor", ["--param", "safety_factor=2"]),
        ("--idle-timeout against the policy's own", ["--policy", "easy-energy-bsld-off", "--idle-timeout", "60"]),
        ("unknown policy", ["--policy", "nope"]),
        ("plug-in raising at import", ["--policy", "audit_broken_plugin:P"]),
        ("--truth nope", ["--truth", "nope"]),
    ]  # fmt: skip
    tries = []
    for name, extra in cases:

        def action(tmp: Path, extra: list[str] = extra) -> None:
            _cli(["run", "--trace", str(tmp / "good.swf"), "--out", str(tmp / "o"), *extra])

        tries.append(Try("flags", name, action))

    def trace_dir(tmp: Path) -> None:
        _cli(["run", "--trace", str(tmp), "--out", str(tmp / "o")])

    def platform_dir(tmp: Path) -> None:
        _cli(
            [
                "run",
                "--trace",
                str(tmp / "good.swf"),
                "--platform",
                str(tmp),
                "--out",
                str(tmp / "o"),
            ]
        )

    def dev_null(tmp: Path) -> None:
        _cli(["run", "--trace", str(tmp / "good.swf"), "--out", "/dev/null/x"])

    def reused_out(tmp: Path) -> None:
        _cli(["run", "--trace", str(tmp / "good.swf"), "--out", str(tmp / "o")])
        _cli(["run", "--trace", str(tmp / "good.swf"), "--out", str(tmp / "o"), "--format", "csv"])

    for name, action in (
        ("--trace a directory", trace_dir),
        ("--platform a directory", platform_dir),
        ("--out /dev/null/x", dev_null),
        ("--out reused without --overwrite", reused_out),
    ):
        tries.append(Try("flags", name, action))
    return tries


FAULT_EXPERIMENT = textwrap.dedent(
    """
    name = "fault"
    [[traces]]
    name = "k"
    source = "builtin:kth-sp2"
    max_jobs = 60
    [seeds]
    replicates = 2
    [[policies]]
    name = "easy"
    [[policies]]
    name = "bad"
    policy = "audit_fault_plugins:{plugin}"
    """
)
FAULT_PLUGINS = textwrap.dedent(
    """
    import os, signal, time
    from policies.backfilling import QueuePolicy

    class _Easy(QueuePolicy):
        def __init__(self, **kw):
            super().__init__(backfill="easy", name="easy", **kw)

    class Unsavable(_Easy):
        def params(self):
            return {**super().params(), "tags": {1, 2}}

    class Sigkill(_Easy):
        def setup(self, platform, rng=None, **context):
            os.kill(os.getpid(), signal.SIGKILL)

    class Hang(_Easy):
        def setup(self, platform, rng=None, **context):
            while True:
                time.sleep(0.05)

    class Raises(_Easy):
        def setup(self, platform, rng=None, **context):
            raise RuntimeError("<b>boom</b>")
    """
)


def _check_sweep(out: Path, summary: Any, expected_ok: int) -> str | None:
    """A note when a healthy run lost its results or temp files were left, else None."""
    healthy = list(summary.completed)
    lost = [r for r in healthy if not (out / "runs" / r / "summary.json").is_file()]
    temps = [p for p in out.rglob("*") if p.name.startswith(".") and "tmp" in p.name]
    if lost or temps or len(healthy) < expected_ok:
        return f"lost {lost}, temp files {temps}, completed {len(healthy)}/{expected_ok}"
    if not summary.failed:
        return "the faulty run was not recorded as failed"
    return None


def fault_tries() -> list[Try]:
    from energysched.sweep import ProcessExecutor, SerialExecutor, run_sweep

    def sweep(
        plugin: str, executor_factory: Callable[[], Any], expected_ok: int = 2
    ) -> Callable[[Path], Any]:
        """The fault experiment: 2 healthy runs (easy), 2 faulty ones (the plug-in)."""

        def action(tmp: Path) -> Any:
            exp = tmp / f"{plugin}.toml"
            exp.write_text(FAULT_EXPERIMENT.format(plugin=plugin), encoding="utf-8")
            out = tmp / f"out-{plugin}"
            summary = run_sweep(exp, out, executor=executor_factory(), progress=False)
            note = _check_sweep(out, summary, expected_ok)
            if note is None:
                raise EnergySchedError(f"{len(summary.failed)} run(s) failed as designed")
            return note

        return action

    def disk_full(tmp: Path) -> Any:
        import simulator.results as results

        real = results.RunResult.write
        calls = {"n": 0}

        def write(self: Any, out_dir: Any, *, fmt: str = "auto") -> Any:
            calls["n"] += 1
            if calls["n"] == 2:
                raise OSError(28, "No space left on device")
            return real(self, out_dir, fmt=fmt)

        results.RunResult.write = write  # type: ignore[method-assign]
        try:
            # the second write is a healthy run's: 1 of the 2 healthy runs survives
            return sweep("Raises", SerialExecutor, expected_ok=1)(tmp)
        finally:
            results.RunResult.write = real  # type: ignore[method-assign]

    return [
        Try("faults", "params() not JSON-serialisable", sweep("Unsavable", SerialExecutor)),
        Try("faults", "plug-in raises (with markup)", sweep("Raises", SerialExecutor)),
        Try("faults", "disk full during one write", disk_full),
        Try("faults", "worker killed (SIGKILL)", sweep("Sigkill", lambda: ProcessExecutor(2))),
        Try(
            "faults",
            "hanging plug-in, --run-timeout 10",
            sweep("Hang", lambda: ProcessExecutor(2, run_timeout_s=10.0)),
        ),
    ]


def classify(attempt: Try, tmp: Path, timeout_s: float) -> tuple[str, str]:
    try:
        with time_limit(timeout_s):
            note = attempt.action(tmp)
    except Hang as exc:
        return "hang", str(exc)
    except EnergySchedError as exc:
        text = str(exc)
        return "clean error", text.splitlines()[0] if text else type(exc).__name__
    except Exception as exc:
        return "traceback", "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if note:
        return "data lost", str(note)
    return "silent-wrong", "accepted"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--swf", type=int, default=200, help="SWF mutations")
    parser.add_argument("--platform", type=int, default=60, help="platform mutations")
    parser.add_argument("--experiment", type=int, default=60, help="experiment mutations")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a hang")
    parser.add_argument("--no-faults", action="store_true", help="skip the sweep faults")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every try")
    args = parser.parse_args(argv)

    import logging

    logging.disable(logging.WARNING)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="fuzz-audit-") as root:
        base = Path(root)
        (base / "audit_broken_plugin.py").write_text("raise RuntimeError('boom at import')\n")
        (base / "audit_fault_plugins.py").write_text(FAULT_PLUGINS)
        sys.path.insert(0, str(base))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(base), str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        )
        good = _swf_text(GOOD_HEADER, _good_jobs())
        tries = [
            *swf_tries(rng, args.swf),
            *platform_tries(rng, args.platform),
            *experiment_tries(rng, args.experiment),
            *flag_tries(),
            *([] if args.no_faults else fault_tries()),
        ]
        counts: dict[str, Counter[str]] = {}
        bad: list[tuple[str, str, str, str]] = []
        for k, attempt in enumerate(tries):
            tmp = base / f"try-{k}"
            tmp.mkdir()
            (tmp / "good.swf").write_text(good)
            outcome, detail = classify(attempt, tmp, args.timeout)
            counts.setdefault(attempt.category, Counter())[outcome] += 1
            if outcome != "clean error":
                bad.append((attempt.category, attempt.name, outcome, detail))
            if args.verbose:
                print(f"{attempt.category:<10} {outcome:<12} {attempt.name}: {detail[:100]}")
    header = ["category", "tries", *OUTCOMES]
    rows = [
        [cat, str(sum(c.values())), *(str(c[o]) for o in OUTCOMES)] for cat, c in counts.items()
    ]
    total = Counter[str]()
    for c in counts.values():
        total.update(c)
    rows.append(["total", str(sum(total.values())), *(str(total[o]) for o in OUTCOMES)])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(
        "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))
    )
    for r in rows:
        print("  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths))))
    for cat, name, outcome, detail in bad:
        print(f"  {outcome}: [{cat}] {name}: {detail[:160]}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
