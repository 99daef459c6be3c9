"""The schedules of EASY, conservative and FCFS on a few thousand jobs of two
shared traces, and on long queues (every job submitted at once), are the ones
recorded before the availability profile (``policies/_profile.py``) replaced the
list-based reservations: speed work must not change a single start time.

Each digest is SHA-256 over the job ids, start and end times, node counts and
statuses of the run, in trace order. Recorded on 2026-11-26 with the code of
commit e5d0028 (``python tests/policies/test_schedule_digests.py`` prints them).
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

from energysched.runner import build_platform, load_trace
from policies.registry import get_policy
from simulator import RunConfig, simulate
from tests.shared_data import require_shared

#: (trace file, jobs, all submitted at once?, policy) -> digest of the schedule
RECORDED: dict[tuple[str, int, bool, str], str] = {
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 4000, False, "easy"): "c49253a144d84da8e1c32e21",
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 4000, False, "conservative"): "d81eec45987a3be13364e930",
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 4000, False, "fcfs"): "7ebbf535e2f285f7f92a4ebb",
    ("CTC-SP2-1996-3.1-cln.swf.gz", 3000, False, "easy"): "8633509a201fac095874e96b",
    ("CTC-SP2-1996-3.1-cln.swf.gz", 3000, False, "conservative"): "15a0f30ed83a8ab791b4ce45",
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 1500, True, "easy"): "03ce721d6597eb4a6659dd2c",
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 600, True, "conservative"): "a642ff843ebd4d113f1f7ab5",
    ("CTC-SP2-1996-3.1-cln.swf.gz", 400, True, "conservative"): "6c203c1935bdeb6dc2e57288",
}


def schedule_digest(trace_file: str, max_jobs: int, at_once: bool, policy: str) -> str:
    path = require_shared("traces", trace_file)
    trace, _ = load_trace(path, max_jobs=max_jobs)
    if at_once:
        jobs = trace.jobs.copy()
        jobs["submit_s"] = float(jobs["submit_s"].iloc[0])
        trace = dataclasses.replace(trace, jobs=jobs)
    result = simulate(trace, build_platform("trace", trace), get_policy(policy), RunConfig())
    jobs = result.jobs
    digest = hashlib.sha256()
    digest.update(jobs["job_id"].to_numpy(np.int64).tobytes())
    for column in ("start_s", "end_s"):
        digest.update(jobs[column].to_numpy(np.float64).tobytes())
    digest.update(jobs["nodes"].to_numpy(np.int64).tobytes())
    digest.update("\n".join(jobs["status"].astype(str)).encode())
    return digest.hexdigest()[:24]


CASES = [
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 4000, False, "easy"),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 4000, False, "conservative"),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 4000, False, "fcfs"),
    ("CTC-SP2-1996-3.1-cln.swf.gz", 3000, False, "easy"),
    ("CTC-SP2-1996-3.1-cln.swf.gz", 3000, False, "conservative"),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 1500, True, "easy"),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 600, True, "conservative"),
    ("CTC-SP2-1996-3.1-cln.swf.gz", 400, True, "conservative"),
]


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{c[0][:8]}-{c[1]}-{'once' if c[2] else 'trace'}-{c[3]}"
)
def test_schedule_is_the_recorded_one(case: tuple[str, int, bool, str]) -> None:
    assert schedule_digest(*case) == RECORDED[case]


if __name__ == "__main__":
    for case in CASES:
        print(f"    {case!r}: {schedule_digest(*case)!r},")
