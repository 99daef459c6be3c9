"""Time ADEPT's ``fit_downey`` on 4 points with one target (docs/background/models.md, section 2.2: target <= 5 ms per fit).

Run: ``python benchmarks/bench_adept.py [--repeats 200]``. Prints the median
(and 10th/90th percentile) milliseconds per fit for several cases: both
variance modes, with and without ``T(1)``, noisy points, the exact 2-D grid
search (default) and, for reference, the fully materialised broadcast grid.
No asserts: this measures, it does not test. CPU time per fit is printed
too: on a shared machine wall-clock medians include time spent preempted.

``--corpus FILE.pkl [FILE.pkl ...]`` times recorded calls instead: each file
holds a list of ``(nodes, runtimes, targets, kwargs)`` of ``fit_downey`` (or a
dict with that list under ``"fits"``), e.g. recorded during a replay
(``bench_policies.py --record-fits FILE``, which also stores the digest of
the fits it recorded); prints
the CPU milliseconds per fit of each of ``--passes`` passes over all of them
(after one warm-up pass), and with ``--digest`` a digest of every fit's
results (to compare two versions of the code bit for bit: against the
recorded digest when the file has one). With ``--instructions`` it counts the
instructions of one pass instead (after the warm-up pass, under valgrind's
callgrind: repeatable whatever else the machine does).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from predictors.adept import _speedup, fit_downey


def _time(fn, repeats: int) -> tuple[np.ndarray, float]:
    """Wall-clock ms of each call, and the mean CPU ms per call (robust to a loaded machine)."""
    fn()  # warm-up
    out = np.empty(repeats)
    c0 = time.process_time()
    for i in range(repeats):
        t0 = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t0
    cpu = (time.process_time() - c0) / repeats
    return out * 1e3, cpu * 1e3


def _load_corpus(paths: list[str]) -> tuple[list[tuple], list[str]]:
    """The recorded calls of every file, and the digests recorded with them (if any)."""
    calls: list[tuple] = []
    recorded: list[str] = []
    for path in paths:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
        calls.extend(data["fits"] if isinstance(data, dict) else data)
        if isinstance(data, dict) and "digest" in data:
            recorded.append(data["digest"])
    return calls, recorded


def hash_fit(h: hashlib._Hash, fit) -> None:
    """Add one ``fit_downey`` result to ``h`` (per target: A, sigma, L, runtime, wssre,
    warnings). ``bench_policies.py --record-fits`` digests the fits it records the same way."""
    h.update(repr((fit.anomaly, fit.delta, fit.notes, fit.envelope)).encode())
    for f in fit.fits:
        h.update(repr((f.A, f.sigma, f.L, f.runtime, f.wssre, f.warnings)).encode())


def _digest(calls: list[tuple]) -> str:
    """SHA-256 of every fit's results (see :func:`hash_fit`), first 16 hex digits."""
    h = hashlib.sha256()
    for nodes, times, targets, kw in calls:
        hash_fit(h, fit_downey(nodes, times, targets, **kw))
    return h.hexdigest()[:16]


def corpus(paths: list[str], passes: int, digest: bool) -> None:
    """CPU ms per fit over recorded ``fit_downey`` calls (see the module docstring)."""
    calls, recorded = _load_corpus(paths)

    def run() -> None:
        for nodes, times, targets, kw in calls:
            fit_downey(nodes, times, targets, **kw)

    run()  # warm-up (grid caches)
    out = []
    for _ in range(passes):
        c0 = time.process_time()
        run()
        out.append((time.process_time() - c0) / len(calls) * 1e3)
    print(
        f"fit_downey on {len(calls)} recorded calls: CPU ms/fit per pass",
        " ".join(f"{x:.3f}" for x in out),
    )
    if digest:
        now = _digest(calls)
        line = f"digest of the results: {now}"
        if len(paths) == 1 and recorded:
            same = "the same" if recorded[0] == now else "DIFFERENT: the fits changed"
            line += f" (recorded with the corpus: {recorded[0]}, {same})"
        print(line)


_CALLGRIND_ENV = "BENCH_ADEPT_UNDER_CALLGRIND"


def _callgrind_control(state: str) -> None:
    """Switch callgrind's counting of this process on or off."""
    subprocess.run(
        ["callgrind_control", "-i", state, str(os.getpid())], check=True, stdout=subprocess.DEVNULL
    )


def corpus_instructions(paths: list[str]) -> None:
    """Instructions of one pass of ``fit_downey`` over the recorded calls (callgrind)."""
    if os.environ.get(_CALLGRIND_ENV):  # the child, under callgrind
        calls, _ = _load_corpus(paths)
        for nodes, times, targets, kw in calls:  # warm-up (grid caches), not counted
            fit_downey(nodes, times, targets, **kw)
        _callgrind_control("on")
        for nodes, times, targets, kw in calls:
            fit_downey(nodes, times, targets, **kw)
        _callgrind_control("off")
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("--instructions needs valgrind (Debian/Ubuntu: apt install valgrind)")
    valgrind = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--callgrind-out-file=/dev/null",
    ]
    got = subprocess.run(
        [*valgrind, sys.executable, __file__, "--instructions", "--corpus", *paths],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, _CALLGRIND_ENV: "1", "PYTHONHASHSEED": "0"},
    )
    counted = re.search(r"Collected\s*:\s*(\d+)", got.stderr)
    if got.returncode != 0 or counted is None:
        sys.exit(f"the pass under callgrind failed:\n{got.stderr[-3000:]}")
    calls, _ = _load_corpus(paths)
    print(f"instructions of one pass over {len(calls)} recorded fits: {int(counted.group(1)):,}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--corpus", nargs="+", metavar="FILE", help="recorded calls (pickle)")
    ap.add_argument("--passes", type=int, default=3, help="passes over the corpus")
    ap.add_argument("--digest", action="store_true", help="print a digest of the corpus results")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="with --corpus: count the instructions of one pass (valgrind's callgrind)",
    )
    args = ap.parse_args(argv)
    if args.instructions:
        if not args.corpus:
            ap.error("--instructions needs --corpus FILE")
        corpus_instructions(args.corpus)
        return
    if args.corpus:
        corpus(args.corpus, args.passes, args.digest)
        return
    rng = np.random.default_rng(0)
    n = np.array([4.0, 8.0, 16.0, 32.0])
    cases = {
        "low variance (A=20, sigma=0.5), exact": (n, 1000.0 / _speedup(n, 20.0, 0.5), None, {}),
        "high variance (A=12, sigma=2), exact": (n, 1000.0 / _speedup(n, 12.0, 2.0), None, {}),
        "low variance, with T(1)": (n, 1000.0 / _speedup(n, 20.0, 0.5), 1000.0, {}),
        "high variance, 3% noise": (
            n,
            1000.0 / _speedup(n, 12.0, 2.0) * (1 + rng.normal(0, 0.03, 4)),
            None,
            {},
        ),
        "low variance, broadcast 500x500 grid": (
            n,
            1000.0 / _speedup(n, 20.0, 0.5),
            None,
            {"grid": "broadcast"},
        ),
    }
    print(f"fit_downey, 4 points, 1 target (n_1d=5000, n_2d=500), {args.repeats} fits per case")
    for name, (nodes, times, t1, kw) in cases.items():
        ms, cpu = _time(
            lambda nodes=nodes, times=times, t1=t1, kw=kw: fit_downey(
                nodes, times, [64], serial_runtime=t1, **kw
            ),
            args.repeats,
        )
        p10, p50, p90 = np.percentile(ms, [10, 50, 90])
        print(
            f"  {name:42s} median {p50:7.3f} ms/fit   (p10 {p10:.3f}, p90 {p90:.3f}; CPU {cpu:.3f} ms/fit)"
        )


if __name__ == "__main__":
    main()
