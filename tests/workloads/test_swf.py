"""Tests of the SWF reader and writer (workloads.swf)."""

from __future__ import annotations

import gzip
import io
import logging
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from energysched.errors import TraceFormatError
from tests.shared_data import require_shared
from workloads.schema import FLOAT_COLUMNS, INT_COLUMNS, SWF_COLUMNS, Trace
from workloads.swf import NONNEGATIVE_COLUMNS, read_swf, write_swf

HEADER = """\
; Version: 2.2
; Computer: IBM SP2
; Information: http://www.example.org/
;              http://www.cs.huji.ac.il/labs/parallel/workload/
; UnixStartTime: 835823160
; TimeZone: -18000
; StartTime: Wed Jun 26 17:06:00 EDT 1996
; MaxNodes: 338 (batch partition; 512 total)
; MaxProcs: 338
; Queue:  1 DSI
; Queue:  2 astro
;
; Note: THIS IS A CLEANED VERSION OF THE LOG!
;       The filter used to produce it was
;         job<=14 (14 jobs removed)
;
"""
HEADER_LINES = HEADER.count("\n")

GOOD = [
    "1 0 10 100 4 90.5 -1 4 3600 -1 1 7 -1 3 1 -1 -1 -1",
    "2 5 -1 -1 -1 -1 -1 8 600 -1 5 8 2 -1 0 -1 -1 -1",
    "3 7 0 0.25 16 -1 1024 -1 -1 2048 0 7 -1 -1 -1 2 1 12.5",
]


def _line(values: list[float | int]) -> str:
    return " ".join(str(v) for v in values)


def _with_field(index: int, token: str) -> str:
    tokens = GOOD[0].split()
    tokens[index] = token
    return " ".join(tokens)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def shared_traces() -> Path:
    return require_shared("traces")


# --------------------------------------------------------------------------- reading


def test_read_values_missing_and_dtypes(tmp_path: Path) -> None:
    trace = read_swf(_write(tmp_path / "small.swf", HEADER + "\n".join(GOOD) + "\n"))
    jobs = trace.jobs
    assert list(jobs.columns) == list(SWF_COLUMNS)
    assert len(trace) == 3
    assert trace.name == "small"
    assert trace.path == str(tmp_path / "small.swf")
    assert trace.bad_lines == 0 and trace.bad_line_errors == []
    for c in INT_COLUMNS:
        assert str(jobs[c].dtype) == "Int64", c
    for c in FLOAT_COLUMNS:
        assert jobs[c].dtype == np.float64, c
    # -1 -> missing, never a -1 value
    assert jobs["wait_s"].isna().tolist() == [False, True, False]
    assert jobs["procs_alloc"].isna().tolist() == [False, True, False]
    assert jobs["procs_req"].isna().tolist() == [False, False, True]
    assert jobs["think_time_s"].tolist()[2] == 12.5
    assert math.isnan(jobs["think_time_s"].tolist()[0])
    assert jobs["runtime_s"].tolist()[0] == 100.0
    assert jobs["runtime_s"].tolist()[2] == 0.25
    assert jobs["cpu_time_avg_s"].tolist()[0] == 90.5
    assert jobs["queue_id"].tolist() == [1, 0, pd.NA]
    assert jobs["job_id"].tolist() == [1, 2, 3]
    assert not (jobs.select_dtypes("number") == -1).any().any()


def test_header_parsing(tmp_path: Path) -> None:
    trace = read_swf(_write(tmp_path / "h.swf", HEADER + GOOD[0] + "\n"))
    h, text = trace.header, trace.header_text
    assert h["MaxNodes"] == 338 and isinstance(h["MaxNodes"], int)
    assert text["MaxNodes"] == "338 (batch partition; 512 total)"
    assert h["MaxProcs"] == 338
    assert trace.max_nodes == 338 and trace.max_procs == 338
    assert h["Version"] == 2.2
    assert h["TimeZone"] == -18000
    assert h["UnixStartTime"] == 835823160
    assert h["StartTime"] == "Wed Jun 26 17:06:00 EDT 1996"
    assert h["Computer"] == "IBM SP2"
    # repeated key: joined with newlines, stays text
    assert text["Queue"] == "1 DSI\n2 astro"
    assert h["Queue"] == "1 DSI\n2 astro"
    # continuation lines are appended to the previous key
    assert text["Information"] == (
        "http://www.example.org/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"
    )
    assert text["Note"].splitlines() == [
        "THIS IS A CLEANED VERSION OF THE LOG!",
        "The filter used to produce it was",
        "job<=14 (14 jobs removed)",
    ]
    # every comment line is kept verbatim
    assert trace.header_lines == HEADER.splitlines()


def test_header_only_number_prefix_is_parsed(tmp_path: Path) -> None:
    text = "; MaxNodes: 128\n; MaxRuntime: 1.5e3 s\n; Date: 2002-01-01\n; Clock: 12:00\n"
    trace = read_swf(_write(tmp_path / "n.swf", text + GOOD[0] + "\n"))
    assert trace.header["MaxNodes"] == 128
    assert trace.header["MaxRuntime"] == 1500.0
    assert trace.header["Date"] == "2002-01-01"
    assert trace.header["Clock"] == "12:00"
    assert trace.max_procs == 128  # falls back to MaxNodes


def test_streams_gzip_detection_crlf_and_tabs(tmp_path: Path) -> None:
    text = HEADER + "\n".join(GOOD) + "\n"
    reference = read_swf(io.StringIO(text))
    assert reference.name == "trace" and reference.path is None
    crlf = text.replace("\n", "\r\n").replace(" ", "\t")
    pd.testing.assert_frame_equal(read_swf(io.StringIO(crlf)).jobs, reference.jobs)
    gz_bytes = gzip.compress(text.encode())
    pd.testing.assert_frame_equal(read_swf(io.BytesIO(gz_bytes)).jobs, reference.jobs)
    # gzip is detected from the content, whatever the name
    odd = tmp_path / "compressed.swf"
    odd.write_bytes(gz_bytes)
    pd.testing.assert_frame_equal(read_swf(odd).jobs, reference.jobs)
    gz = tmp_path / "x.swf.gz"
    gz.write_bytes(gz_bytes)
    assert read_swf(gz).name == "x"
    assert read_swf(str(gz)).header["MaxNodes"] == 338


def test_blank_lines_and_comments_between_jobs(tmp_path: Path) -> None:
    text = HEADER + GOOD[0] + "\n\n; a comment in the middle\n" + GOOD[1] + "\n   \n" + GOOD[2]
    trace = read_swf(_write(tmp_path / "c.swf", text))  # no final newline either
    assert len(trace) == 3
    assert trace.header_lines[-1] == "; a comment in the middle"
    plain = read_swf(io.StringIO(HEADER + "\n".join(GOOD) + "\n"))
    pd.testing.assert_frame_equal(trace.jobs, plain.jobs)


def test_negative_submit_time_is_accepted(tmp_path: Path) -> None:
    trace = read_swf(_write(tmp_path / "neg.swf", _with_field(1, "-30") + "\n"))
    assert trace.jobs["submit_s"].tolist() == [-30.0]


def test_nonnegative_columns_documented() -> None:
    assert "submit_s" not in NONNEGATIVE_COLUMNS
    assert len(NONNEGATIVE_COLUMNS) == 17


# --------------------------------------------------------------------------- bad lines

BAD_CASES = [
    # (bad line, field, words in the message)
    (" ".join(GOOD[0].split()[:17]), "think_time_s", "17 fields"),
    (" ".join(GOOD[0].split()[:3]), "runtime_s", "3 fields"),
    (GOOD[0] + " 7", None, "19 fields"),
    (_with_field(3, "abc"), "runtime_s", "non-numeric"),
    (_with_field(0, "1,5"), "job_id", "non-numeric"),
    (_with_field(3, "True"), "runtime_s", "non-numeric"),  # not read as a boolean
    (_with_field(2, "nan"), "wait_s", "NaN/infinity"),
    (_with_field(1, "inf"), "submit_s", "NaN/infinity"),
    (_with_field(3, "1e999"), "runtime_s", "out of range"),
    (_with_field(4, "1.5"), "procs_alloc", "non-integral"),
    (_with_field(11, "2.5e-1"), "user_id", "non-integral"),
    (_with_field(3, "-5"), "runtime_s", "negative"),
    (_with_field(7, "-2"), "procs_req", "negative"),
    (_with_field(17, "-0.5"), "think_time_s", "negative"),
]


@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize(("bad", "field", "words"), BAD_CASES)
def test_bad_line_raises_with_line_and_field(
    tmp_path: Path, bad: str, field: str | None, words: str, position: str
) -> None:
    lines = list(GOOD)
    index = {"first": 0, "middle": 1, "last": 3}[position]
    lines.insert(index, bad)
    path = _write(tmp_path / "bad.swf", HEADER + "\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    err = info.value
    assert err.line == HEADER_LINES + index + 1
    assert err.field == field
    assert err.path == str(path)
    assert err.expected
    assert words in err.reason
    assert str(path) in str(err) and f"line {err.line}" in str(err)


@pytest.mark.parametrize(("bad", "field", "words"), BAD_CASES)
def test_skip_bad_lines_counts_each_kind(
    tmp_path: Path, bad: str, field: str | None, words: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(tmp_path / "bad.swf", "\n".join([GOOD[0], bad, GOOD[1], GOOD[2]]) + "\n")
    with caplog.at_level(logging.WARNING, logger="workloads.swf"):
        trace = read_swf(path, skip_bad_lines=True)
    assert len(trace) == 3
    assert trace.jobs["job_id"].tolist() == [1, 2, 3]
    assert trace.bad_lines == 1
    assert len(trace.bad_line_errors) == 1
    assert "line 2" in trace.bad_line_errors[0] and words in trace.bad_line_errors[0]
    assert any("skipped 1 bad" in r.getMessage() for r in caplog.records)


def test_skip_many_bad_lines_keeps_first_messages(tmp_path: Path) -> None:
    bad = [case[0] for case in BAD_CASES]
    lines: list[str] = []
    for i, b in enumerate(bad):
        lines.append(" ".join([str(100 + i), *GOOD[i % 3].split()[1:]]))  # distinct job ids
        lines.append(b)
    path = _write(tmp_path / "many.swf", HEADER + "\n".join(lines) + "\n")
    trace = read_swf(path, skip_bad_lines=True, max_bad_line_errors=4)
    assert len(trace) == len(bad)
    assert trace.bad_lines == len(bad)
    assert len(trace.bad_line_errors) == 4
    # in file order: the bad lines are every second line after the header
    for k, message in enumerate(trace.bad_line_errors):
        assert re.search(rf"line {HEADER_LINES + 2 * k + 2}\b", message)
    # without skipping, the first bad line is reported and the rest counted
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    assert info.value.line == HEADER_LINES + 2
    assert f"{len(bad) - 1} more bad line(s)" in str(info.value)


def test_first_bad_line_wins_across_kinds(tmp_path: Path) -> None:
    # a value error (line 2) before a syntax error (line 3): line 2 is reported
    text = "\n".join([GOOD[0], _with_field(4, "2.5"), "1 2 3", GOOD[1]]) + "\n"
    with pytest.raises(TraceFormatError) as info:
        read_swf(io.StringIO(text))
    assert (info.value.line, info.value.field) == (2, "procs_alloc")
    assert info.value.path is None


def test_empty_and_header_only_and_all_bad(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="empty"):
        read_swf(_write(tmp_path / "empty.swf", ""))
    with pytest.raises(TraceFormatError, match="empty"):
        read_swf(_write(tmp_path / "blank.swf", "\n  \n"))
    with pytest.raises(TraceFormatError, match="no job lines"):
        read_swf(_write(tmp_path / "header.swf", HEADER))
    path = _write(tmp_path / "allbad.swf", "a b c\n1 2\n")
    with pytest.raises(TraceFormatError, match="no valid job lines"):
        read_swf(path, skip_bad_lines=True)


def test_missing_file_and_corrupt_gzip(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        read_swf(tmp_path / "nope.swf")
    bad_gz = tmp_path / "broken.swf.gz"
    bad_gz.write_bytes(gzip.compress(("\n".join(GOOD) + "\n").encode())[:30])
    with pytest.raises(TraceFormatError, match="gzip"):
        read_swf(bad_gz)


# --------------------------------------------------------------------------- writing


def _hand_trace() -> Trace:
    text = HEADER + "\n".join(GOOD) + "\n"
    return read_swf(io.StringIO(text))


def _assert_same(a: Trace, b: Trace) -> None:
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert a.header == b.header
    assert a.header_text == b.header_text
    assert a.header_lines == b.header_lines


@pytest.mark.parametrize("name", ["t.swf", "t.swf.gz"])
def test_round_trip_with_missing_values_and_text_header(tmp_path: Path, name: str) -> None:
    trace = _hand_trace()
    out = write_swf(trace, tmp_path / name)
    assert out == tmp_path / name
    back = read_swf(out)
    _assert_same(trace, back)
    assert back.header_text["MaxNodes"] == "338 (batch partition; 512 total)"
    raw = out.read_bytes()
    assert (raw[:2] == b"\x1f\x8b") == name.endswith(".gz")
    text = gzip.decompress(raw).decode() if name.endswith(".gz") else raw.decode()
    job_lines = [ln for ln in text.splitlines() if not ln.startswith(";")]
    # missing values written as -1, integers without a decimal point
    assert job_lines[1].split() == "2 5 -1 -1 -1 -1 -1 8 600 -1 5 8 2 -1 0 -1 -1 -1".split()
    assert job_lines[2].split()[3] == "0.25"


def test_gz_output_is_deterministic(tmp_path: Path) -> None:
    trace = _hand_trace()
    a = write_swf(trace, tmp_path / "a.swf.gz").read_bytes()
    b = write_swf(trace, tmp_path / "b.swf.gz").read_bytes()
    assert a == b


def test_write_to_stream_and_in_memory_header(tmp_path: Path) -> None:
    trace = _hand_trace()
    trace = Trace(
        jobs=trace.jobs, header={"MaxNodes": 64, "Computer": "toy"}, header_text={}, name="mem"
    )
    buf = io.StringIO()
    write_swf(trace, buf)
    back = read_swf(io.StringIO(buf.getvalue()))
    assert back.header == {"MaxNodes": 64, "Computer": "toy"}
    pd.testing.assert_frame_equal(back.jobs, trace.jobs)


def test_extra_columns_are_not_written(tmp_path: Path) -> None:
    trace = _hand_trace()
    trace.jobs["procs"] = [4, 8, 16]
    back = read_swf(write_swf(trace, tmp_path / "x.swf"))
    assert list(back.jobs.columns) == list(SWF_COLUMNS)


def test_write_rejects_invalid_values(tmp_path: Path) -> None:
    trace = _hand_trace()
    trace.jobs.loc[1, "runtime_s"] = np.inf
    with pytest.raises(TraceFormatError) as info:
        write_swf(trace, tmp_path / "x.swf")
    assert (info.value.line, info.value.field) == (2, "runtime_s")
    trace = _hand_trace()
    trace.jobs.loc[0, "wait_s"] = -3.0
    with pytest.raises(TraceFormatError, match="negative"):
        write_swf(trace, tmp_path / "x.swf")
    trace = _hand_trace()
    del trace.jobs["status"]
    with pytest.raises(TraceFormatError, match="status"):
        write_swf(trace, tmp_path / "x.swf")


_int_value = st.one_of(st.none(), st.integers(min_value=0, max_value=2**53 - 1))
_float_value = st.one_of(
    st.none(), st.floats(min_value=0, max_value=9e15, allow_nan=False, allow_infinity=False)
)
_submit_value = st.one_of(
    st.none(),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False).filter(
        lambda v: v != -1.0
    ),
)


def _known_id(value: int | None) -> object:
    """Uniqueness key of a drawn job id: unknown ids (None, written -1) may repeat."""
    return value if value is not None else object()


@st.composite
def _job_tables(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(min_value=1, max_value=12))
    columns: dict[str, object] = {}
    for name in SWF_COLUMNS:
        if name == "job_id":  # known ids are unique in a trace (a repeat is a bad line)
            ids = draw(st.lists(_int_value, min_size=n, max_size=n, unique_by=_known_id))
            columns[name] = pd.array(ids, dtype="Int64")
        elif name in INT_COLUMNS:
            values = draw(st.lists(_int_value, min_size=n, max_size=n))
            columns[name] = pd.array(values, dtype="Int64")
        else:
            strategy = _submit_value if name == "submit_s" else _float_value
            values = draw(st.lists(strategy, min_size=n, max_size=n))
            columns[name] = np.array([np.nan if v is None else v for v in values], dtype=float)
    return pd.DataFrame(columns)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=_job_tables())
def test_round_trip_property(jobs: pd.DataFrame) -> None:
    trace = Trace(jobs=jobs, header_lines=["; MaxNodes: 10 (ten)", "; Note: hypothesis"])
    buf = io.StringIO()
    write_swf(trace, buf)
    back = read_swf(io.StringIO(buf.getvalue()))
    pd.testing.assert_frame_equal(back.jobs, jobs, check_exact=True)
    assert back.header == {"MaxNodes": 10, "Note": "hypothesis"}


# --------------------------------------------------------------------------- real traces

REAL = {
    # file: (jobs, MaxNodes, first job line as (job_id, submit_s, runtime_s, procs_alloc))
    "KTH-SP2-1996-2.1-cln.swf.gz": (28476, 100, (15, 599850.0, 3477.0, 4)),
    "SDSC-SP2-1998-4.2-cln.swf.gz": (59715, 128, (11, 566129.0, 28826.0, 1)),
    "lublin_256.swf.gz": (10000, 256, (1, 5094.0, 12072.0, 16)),
    "CTC-SP2-1996-3.1-cln.swf.gz": (77222, 338, (1, 0.0, 937.0, 306)),
    "HPC2N-2002-2.2-cln.swf.gz": (202871, 240, (11, 342072.0, 43306.0, 32)),
}
_SLOW = {"CTC-SP2-1996-3.1-cln.swf.gz", "HPC2N-2002-2.2-cln.swf.gz"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW else n for n in REAL]
)
def test_real_trace_loads(shared_traces: Path, name: str) -> None:
    path = shared_traces / name
    if not path.exists():
        pytest.skip(f"{path} missing")
    trace = read_swf(path)
    jobs_expected, max_nodes, first = REAL[name]
    assert len(trace) == jobs_expected
    assert trace.bad_lines == 0
    assert trace.max_nodes == max_nodes
    row = trace.jobs.iloc[0]
    assert (row["job_id"], row["submit_s"], row["runtime_s"], row["procs_alloc"]) == first
    assert trace.jobs["job_id"].is_unique
    assert trace.header_lines and all(ln.startswith(";") for ln in trace.header_lines)
    numeric = trace.jobs.astype("float64")
    assert not (numeric == -1).any().any()
    if name.startswith("CTC"):
        assert trace.header_text["MaxNodes"] == "338 (batch partition; 512 total)"
        assert trace.jobs["procs_req"].isna().all()
    if name.startswith("lublin"):
        assert trace.jobs["time_req_s"].isna().all()
        assert trace.max_procs == 256


def test_real_trace_round_trip_and_slow_path_agree(shared_traces: Path, tmp_path: Path) -> None:
    path = shared_traces / "KTH-SP2-1996-2.1-cln.swf.gz"
    if not path.exists():
        pytest.skip(f"{path} missing")
    trace = read_swf(path)
    back = read_swf(write_swf(trace, tmp_path / "kth.swf.gz"))
    _assert_same(trace, back)
    # a comment between job lines forces the line-by-line pass: same jobs
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    middle = len(lines) // 2
    lines.insert(middle, "; inserted comment")
    slow = read_swf(io.StringIO("\n".join(lines) + "\n"))
    pd.testing.assert_frame_equal(slow.jobs, trace.jobs)
