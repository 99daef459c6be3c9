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

    trace      request-history   request-history-last
    KTH-SP2    39.2 / 14585      39.0 / 13866      (rule chosen on KTH-SP2 and HPC2N)
    SDSC-SP2   27.6 /  1707      25.5 /  1591      (held out)
    CTC-SP2    35.9 /  6118      34.1 /  6024      (held out)
    HPC2N      26.6 / 42467      28.2 / 40819

``request-history`` (the default) was picked on KTH-SP2 and HPC2N and scored
once on SDSC-SP2 and CTC-SP2 (:mod:`predictors.job_length`). CPU time: 0.4 /
0.9 / 1.5 / 3.7 s for the six backtests of each trace.

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

#: How request-history's rule was chosen: on these traces ...
CHOSEN_ON = ("KTH-SP2-1996-2.1-cln.swf.gz", "HPC2N-2002-2.2-cln.swf.gz")
#: ... and scored once on these
HELD_OUT = ("SDSC-SP2-1998-4.2-cln.swf.gz", "CTC-SP2-1996-3.1-cln.swf.gz")


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
    print("trace | " + " | ".join(f"{n} median / mean %" for n in names) + " | jobs | cpu s | role")
    for path in paths:
        trace = read_swf(path)
        started = time.process_time()
        got = job_length_errors(trace, names)
        cpu = time.process_time() - started
        cells = " | ".join(f"{got[n][0]:.1f} / {got[n][1]:.0f}" for n in names)
        jobs = got[names[0]][2]
        name = Path(path).name
        role = "chosen on" if name in CHOSEN_ON else "held out" if name in HELD_OUT else "-"
        print(f"{name} | {cells} | {jobs} | {cpu:.1f} | {role}")
        if args.trace_order:
            leaky = job_length_errors(trace, ["user-history"], finished_only=False)
            m, mean, _ = leaky["user-history"]
            print(f"  user-history in trace order (unfinished jobs too): {m:.1f} / {mean:.0f}")


if __name__ == "__main__":
    main()
