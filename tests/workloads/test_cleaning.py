"""Tests of workloads.cleaning.clean_trace."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.shared_data import require_shared
from workloads.cleaning import DROP_REASONS, CleaningReport, clean_trace, job_procs
from workloads.schema import Trace
from workloads.swf import read_swf

# job_id submit wait runtime alloc cpu mem req time_req mem_req status user group exe queue part prec think
ROWS = [
    "1  10 0 100  4 -1 -1  4 3600 -1 1 1 -1 -1 -1 -1 -1 -1",  # kept
    "2  -1 0 100  4 -1 -1  4 3600 -1 1 1 -1 -1 -1 -1 -1 -1",  # missing_submit
    "3  -5 0 100  4 -1 -1  4 3600 -1 1 1 -1 -1 -1 -1 -1 -1",  # negative_submit
    "4  11 0  -1  4 -1 -1  4 3600 -1 5 1 -1 -1 -1 -1 -1 -1",  # missing_runtime
    "5  12 0   0  4 -1 -1  4 3600 -1 1 1 -1 -1 -1 -1 -1 -1",  # zero_runtime
    "6  13 0  50 -1 -1 -1 -1 3600 -1 1 2 -1 -1 -1 -1 -1 -1",  # missing_procs
    "7  20 0  50 -1 -1 -1  8   -1 -1 1 2 -1 -1 -1 -1 -1 -1",  # kept, procs 8 (requested)
    "8  30 0  50 16 -1 -1 -1 3600 -1 1 2 -1 -1 -1 -1 -1 -1",  # kept, procs 16 (allocated)
    "9  14 0  50 200 -1 -1 200 3600 -1 1 2 -1 -1 -1 -1 -1 -1",  # too_large (> 128)
    "10 15 0  50  0 -1 -1  4 3600 -1 1 2 -1 -1 -1 -1 -1 -1",  # zero_procs (allocated 0)
    "11 16 0  -1 -1 -1 -1 -1 3600 -1 5 2 -1 -1 -1 -1 -1 -1",  # missing_runtime (first reason)
    "12  5 0  10  2 -1 -1 64 3600 -1 1 3 -1 -1 -1 -1 -1 -1",  # kept, procs 2 (alloc wins)
    "13 10 0  10  1 -1 -1  1 3600 -1 1 3 -1 -1 -1 -1 -1 -1",  # kept, same submit as job 1
]
EXPECTED_DROPPED = {
    "missing_submit": 1,
    "negative_submit": 1,
    "missing_runtime": 2,
    "zero_runtime": 1,
    "missing_procs": 1,
    "zero_procs": 1,
    "too_large": 1,
}


def _trace(header: str = "; MaxNodes: 128\n; MaxProcs: 128\n") -> Trace:
    return read_swf(io.StringIO(header + "\n".join(ROWS) + "\n"))


def test_counts_per_reason_and_order(caplog: pytest.LogCaptureFixture) -> None:
    trace = _trace()
    before = trace.jobs.copy()
    with caplog.at_level(logging.INFO, logger="workloads.cleaning"):
        cleaned, report = clean_trace(trace)
    assert isinstance(report, CleaningReport)
    assert report.dropped == EXPECTED_DROPPED
    assert tuple(report.dropped) == DROP_REASONS
    assert (report.jobs_in, report.jobs_out, report.jobs_dropped) == (13, 5, 8)
    assert report.max_procs == 128
    # sorted by submit time, ties keep file order (1 before 13)
    assert cleaned.jobs["job_id"].tolist() == [12, 1, 13, 7, 8]
    assert report.reordered
    assert cleaned.jobs["procs"].tolist() == [2, 4, 1, 8, 16]
    assert cleaned.jobs["procs"].dtype == np.int64
    assert cleaned.jobs.index.tolist() == list(range(5))
    # time_req_s stays as it is (NaN when unknown)
    assert np.isnan(cleaned.jobs.loc[cleaned.jobs["job_id"] == 7, "time_req_s"]).all()
    # the input is not modified, the header is kept
    pd.testing.assert_frame_equal(trace.jobs, before)
    assert "procs" not in trace.jobs.columns
    assert cleaned.header == trace.header
    # never silent: the summary names every non-zero reason and is logged
    summary = report.summary()
    assert "kept 5 of 13 jobs, dropped 8" in summary
    for reason, count in EXPECTED_DROPPED.items():
        assert any(line.split()[:2] == [reason, str(count)] for line in summary.splitlines())
    assert any("kept 5 of 13" in r.getMessage() for r in caplog.records)


def test_keep_zero_runtime() -> None:
    cleaned, report = clean_trace(_trace(), drop_zero_runtime=False)
    assert report.dropped["zero_runtime"] == 0
    assert 5 in cleaned.jobs["job_id"].tolist()
    assert report.jobs_out == 6


def test_max_procs_argument_overrides_header() -> None:
    cleaned, report = clean_trace(_trace(), max_procs=8)
    # job 8 (16 procs) and job 9 (200) are too large for 8 processors
    assert report.dropped["too_large"] == 2
    assert report.max_procs == 8
    assert cleaned.jobs["procs"].max() == 8


def test_unknown_machine_size_drops_nothing_for_size() -> None:
    cleaned, report = clean_trace(_trace(header=""))
    assert report.max_procs is None
    assert report.dropped["too_large"] == 0
    assert 9 in cleaned.jobs["job_id"].tolist()
    assert "unknown" in report.summary()


def test_max_nodes_used_when_no_max_procs() -> None:
    _, report = clean_trace(_trace(header="; MaxNodes: 16\n"))
    assert report.max_procs == 16
    assert report.dropped["too_large"] == 1  # only job 9: job 8 has exactly 16


def test_no_sort_and_idempotence() -> None:
    cleaned, _ = clean_trace(_trace(), sort=False)
    assert cleaned.jobs["job_id"].tolist() == [1, 7, 8, 12, 13]
    again, report = clean_trace(cleaned)
    assert report.jobs_dropped == 0
    assert again.jobs["job_id"].tolist() == [12, 1, 13, 7, 8]


def test_invalid_max_procs() -> None:
    with pytest.raises(ValueError, match="max_procs"):
        clean_trace(_trace(), max_procs=0)


def test_job_procs_rule() -> None:
    jobs = _trace().jobs
    procs = job_procs(jobs)
    assert procs.tolist()[5] is pd.NA  # both unknown
    assert procs.tolist()[6] == 8  # requested only
    assert procs.tolist()[11] == 2  # allocated wins over requested


def test_real_kth(tmp_path: Path) -> None:
    path = require_shared("traces", "KTH-SP2-1996-2.1-cln.swf.gz")
    trace = read_swf(path)
    cleaned, report = clean_trace(trace)
    assert report.jobs_in == len(trace) == report.jobs_out + report.jobs_dropped
    assert report.jobs_out == len(cleaned)
    jobs = cleaned.jobs
    assert jobs["submit_s"].is_monotonic_increasing
    assert (jobs["procs"] >= 1).all() and (jobs["procs"] <= 100).all()
    assert (jobs["runtime_s"] > 0).all()
    # KTH has one job with unknown processors (allocated and requested both -1)
    assert report.dropped["missing_procs"] + report.dropped["missing_runtime"] >= 1
