"""Backtest: accuracy of the job-length predictors on the shared traces.

For each trace (default: the four shared ones, KTH-SP2, SDSC-SP2, CTC-SP2 and
HPC2N, read from ``../shared/data/traces``), every job is predicted at its
submit from the jobs that finished by then (trace end times: submit + wait +
runtime), by each job-length predictor of :mod:`predictors.job_length`.
Prints the median and mean of ``|predicted / actual - 1|`` in % over the jobs
with a positive runtime and request, and the CPU time of each trace's
backtests. ``--trace-order`` adds user history fed in trace order whether
the earlier jobs had finished or not (the figures issue 15 quotes: not
something a scheduler can know).

Usage::

    python benchmarks/bench_job_length.py [--trace PATH ...] [--trace-order]

Measured 2026-11-26 (median / mean %)::

    trace      requested      user-history   application-history   combined
    KTH-SP2    141.9 / 29761   49.6 / 12388   48.7 / 12911          48.4 / 12327
    SDSC-SP2   538.3 /  7550   39.7 /  1604   35.5 /  1859          34.6 /  1572
    CTC-SP2    270.4 / 15651   45.5 /  6326   49.9 /  8137          43.5 /  6297
    HPC2N      110.5 / 221882  43.6 / 31889   41.3 / 33106          41.1 / 32341

In trace order, user history: 37.8 / 27.5 / 28.8 / 14.0 % median.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

SHARED = (
    "KTH-SP2-1996-2.1-cln.swf.gz",
    "SDSC-SP2-1998-4.2-cln.swf.gz",
    "CTC-SP2-1996-3.1-cln.swf.gz",
    "HPC2N-2002-2.2-cln.swf.gz",
)


def _shared_root() -> Path:
    for base in Path(__file__).resolve().parents:
        root = base / "shared" / "data" / "traces"
        if root.is_dir():
            return root
    raise SystemExit("shared traces not found; give --trace PATH")


def main() -> None:
    from predictors.job_length import JOB_LENGTH_PREDICTORS, job_length_errors
    from workloads.swf import read_swf

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace", action="append", default=None)
    parser.add_argument("--trace-order", action="store_true")
    args = parser.parse_args()
    paths = args.trace or [str(_shared_root() / name) for name in SHARED]
    names = list(JOB_LENGTH_PREDICTORS)
    print("trace | " + " | ".join(f"{n} median / mean %" for n in names) + " | jobs | cpu s")
    for path in paths:
        trace = read_swf(path)
        started = time.process_time()
        got = job_length_errors(trace, names)
        cpu = time.process_time() - started
        cells = " | ".join(f"{got[n][0]:.1f} / {got[n][1]:.0f}" for n in names)
        jobs = got[names[0]][2]
        print(f"{Path(path).name} | {cells} | {jobs} | {cpu:.1f}")
        if args.trace_order:
            leaky = job_length_errors(trace, ["user-history"], finished_only=False)
            m, mean, _ = leaky["user-history"]
            print(f"  user-history in trace order (unfinished jobs too): {m:.1f} / {mean:.0f}")


if __name__ == "__main__":
    main()
