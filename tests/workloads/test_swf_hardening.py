"""Hostile SWF input: every case is one TraceFormatError naming the line and field."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest

from energysched.errors import TraceFormatError
from workloads.swf import read_swf

JOB = "1 0 0 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1"
JOB2 = "2 5 0 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1"


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize(
    ("header", "field", "words"),
    [
        ("; MaxProcs: -1", "MaxProcs", "-1"),
        ("; MaxProcs: 0", "MaxProcs", "0"),
        ("; MaxProcs: 1e400", "MaxProcs", "inf"),
        ("; MaxNodes: 2.5", "MaxNodes", "2.5"),
        ("; UnixStartTime: 99999999999999999999", "UnixStartTime", "out of range"),
        ("; UnixStartTime: -5", "UnixStartTime", "out of range"),
    ],
)
def test_bad_header_values_name_their_line(
    tmp_path: Path, header: str, field: str, words: str
) -> None:
    path = _write(tmp_path / "h.swf", f"; Version: 2.2\n{header}\n{JOB}\n")
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    err = info.value
    assert (err.line, err.field) == (2, field)
    assert words in str(err) and "delete the line" in str(err)


@pytest.mark.parametrize("token", ["--1", "1e", "-", "+", ".", "1e+", "1-2"])
def test_number_like_tokens_give_their_line(tmp_path: Path, token: str) -> None:
    bad = JOB2.replace(" 200 ", f" {token} ")
    path = _write(tmp_path / "t.swf", f"; c\n{JOB}\n{bad}\n")
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    assert (info.value.line, info.value.field) == (3, "time_req_s")
    assert repr(token) in str(info.value)


@pytest.mark.parametrize("separator", ["\f", "\v", "\x85", "\x1c", "\u2028"])
def test_only_newlines_end_a_line(tmp_path: Path, separator: str) -> None:
    # the separator is whitespace inside line 2; line 3 holds the bad token
    text = f"; comment{separator}still the comment\n{JOB}{separator}\n{JOB2.replace('200', 'x')}\n"
    with pytest.raises(TraceFormatError) as info:
        read_swf(_write(tmp_path / "s.swf", text))
    assert info.value.line == 3


def test_utf8_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.swf"
    path.write_bytes(b"\xef\xbb\xbf; MaxProcs: 4\n" + JOB.encode() + b"\n")
    trace = read_swf(path)
    assert trace.header["MaxProcs"] == 4 and len(trace) == 1
    gz = tmp_path / "bom.swf.gz"
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbf" + JOB.encode() + b"\n"))
    assert read_swf(gz).jobs["job_id"].tolist() == [1]


def test_line_numbers_count_leading_blank_lines_and_cr(tmp_path: Path) -> None:
    text = "\n\r\n\r\n  \n" + JOB + "\r" + JOB2.replace("200", "x") + "\n"
    with pytest.raises(TraceFormatError) as info:
        read_swf(_write(tmp_path / "cr.swf", text))
    assert info.value.line == 6
    gz = tmp_path / "cr.swf.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(TraceFormatError) as info:
        read_swf(gz)
    assert info.value.line == 6


def test_gzip_of_blank_lines_is_rejected_in_bounded_memory(tmp_path: Path) -> None:
    blank = 64 * 1024 * 1024  # 64 MiB of newlines, about 64 KiB compressed
    path = tmp_path / "blank.swf.gz"
    path.write_bytes(gzip.compress(b"\n" * blank, 9))
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError, match="empty"):
            read_swf(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < blank / 8  # streamed in 1 MiB pieces, never held whole


def test_truncated_gzip_is_a_format_error(tmp_path: Path) -> None:
    data = gzip.compress(((JOB + "\n") * 1000).encode())
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match="corrupt gzip"):
        read_swf(path)


def test_directory_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="is a directory"):
        read_swf(tmp_path)


def test_duplicate_job_ids_are_bad_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.swf", f"{JOB}\n{JOB2}\n{JOB}\n")
    with pytest.raises(TraceFormatError) as info:
        read_swf(path)
    assert (info.value.line, info.value.field) == (3, "job_id")
    assert "first on line 1" in str(info.value)
    trace = read_swf(path, skip_bad_lines=True)
    assert trace.jobs["job_id"].tolist() == [1, 2] and trace.bad_lines == 1


def test_times_beyond_2_53_are_refused(tmp_path: Path) -> None:
    big = JOB2.replace("2 5 ", f"2 {2**53} ", 1)
    with pytest.raises(TraceFormatError) as info:
        read_swf(_write(tmp_path / "big.swf", f"{JOB}\n{big}\n"))
    assert (info.value.line, info.value.field) == (2, "submit_s")


def test_many_bad_lines_suggest_the_cli_flag(tmp_path: Path) -> None:
    text = f"{JOB}\n1 2 3\n4 5 6\n"
    with pytest.raises(TraceFormatError) as info:
        read_swf(_write(tmp_path / "m.swf", text))
    assert "--skip-bad-lines" in str(info.value)
