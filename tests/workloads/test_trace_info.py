"""Tests of workloads.trace_info."""

from __future__ import annotations

import io
import json

import pytest

from tests.shared_data import require_shared
from workloads.cleaning import clean_trace
from workloads.swf import read_swf
from workloads.trace_info import format_trace_info, trace_info

TEXT = """\
; MaxNodes: 5
; MaxProcs: 10
; UnixStartTime: 0
1    0 -1  100  4 -1 -1 -1 600 -1 1  1 -1 10 -1 -1 -1 -1
2  100 -1   50 -1 -1 -1  3  -1 -1 1  1 -1 -1 -1 -1 -1 -1
3  400 -1   -1  8 -1 -1 -1 600 -1 5  2 -1 11 -1 -1 -1 -1
4 1000 -1  200  1 -1 -1 -1 1200 -1 1 -1 -1 10 -1 -1 -1 -1
"""


def test_hand_computed_values() -> None:
    info = trace_info(read_swf(io.StringIO(TEXT)))
    assert info["jobs"] == 4
    assert (info["first_submit_s"], info["last_submit_s"], info["span_s"]) == (0.0, 1000.0, 1000.0)
    assert info["span_days"] == pytest.approx(1000 / 86400)
    assert info["start_time_utc"] == "1970-01-01 00:00:00"
    assert (info["max_nodes"], info["max_procs"]) == (5, 10)
    # sizes 4, 3 (requested only), 8, 1
    assert info["procs"] == {"known": 4, "min": 1, "median": 3.5, "max": 8, "pow2_share": 0.75}
    r = info["runtime_s"]
    assert (r["min"], r["median"], r["max"]) == (50.0, 100.0, 200.0)
    assert r["mean"] == pytest.approx(350 / 3)
    assert info["time_req_s"]["max"] == 1200.0
    # work 4*100 + 3*50 + 1*200 (job 3 has no runtime); load = work / (10 procs * 1000 s)
    assert info["work_proc_s"] == 750.0
    assert info["offered_load"] == pytest.approx(0.075)
    assert info["missing"]["runtime_s"] == 1
    assert info["missing"]["procs_alloc"] == 1
    assert info["missing"]["procs_req"] == 3
    assert info["missing"]["wait_s"] == 4
    assert info["missing"]["user_id"] == 1
    assert info["missing"]["job_id"] == 0
    assert len(info["missing"]) == 18
    assert info["users"] == 2
    assert info["executables"] == 2
    json.dumps(info)  # plain, JSON-friendly values


def test_format_contains_the_facts() -> None:
    text = format_trace_info(trace_info(read_swf(io.StringIO(TEXT))))
    assert "jobs           4" in text
    assert "powers of two 75.0%" in text
    assert "offered load   0.075" in text
    assert "runtime_s" in text and "procs_req" in text
    assert not text.endswith("\n")


def test_cleaned_trace_uses_procs_column_and_unknown_machine() -> None:
    trace = read_swf(io.StringIO("\n".join(TEXT.splitlines()[3:]) + "\n"))  # no header
    cleaned, _ = clean_trace(trace)
    info = trace_info(cleaned)
    assert info["jobs"] == 3
    assert info["procs"]["max"] == 4
    assert info["max_procs"] is None and info["offered_load"] is None
    assert info["start_time_utc"] is None
    assert "n/a" in format_trace_info(info)


def test_single_job_has_zero_span() -> None:
    info = trace_info(read_swf(io.StringIO(TEXT.splitlines()[3] + "\n")))
    assert info["span_s"] == 0.0
    assert info["offered_load"] is None


def test_real_sdsc() -> None:
    path = require_shared("traces", "SDSC-SP2-1998-4.2-cln.swf.gz")
    info = trace_info(read_swf(path))
    assert info["jobs"] == 59715
    assert info["max_procs"] == 128
    assert 1 <= info["procs"]["min"] <= info["procs"]["median"] <= info["procs"]["max"] <= 128
    assert 0.0 < info["offered_load"] < 1.5
    assert 0.0 <= info["procs"]["pow2_share"] <= 1.0
    assert info["missing"]["runtime_s"] == 5671
    assert info["span_days"] > 700
