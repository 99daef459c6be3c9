"""Read and write Standard Workload Format (SWF) traces.

The SWF of the Parallel Workloads Archive (Feitelson, Tsafrir, Krakov, JPDC
2014) is a text file: header comment lines starting with ``;`` (``; Key:
value``) and one line per job of 18 whitespace-separated numbers, ``-1``
meaning "unknown". :func:`read_swf` turns a ``.swf`` or ``.swf.gz`` file into
a :class:`~workloads.schema.Trace`; :func:`write_swf` writes one back, so that
``read_swf(write_swf(trace, path))`` reproduces the jobs table and header.

Reading is fast: the job lines are parsed all at once by pandas' C tokenizer
(about 1 s or less for the 203k-job HPC2N trace) and checked with vectorised
numpy tests. Only when that fails (a malformed line) does a line-by-line pass
run, which finds every bad line and reports the first one exactly.

Rules checked for every job line (a violation is a :class:`TraceFormatError`
naming the file, the 1-based line number, the field and the expected form):

* exactly 18 fields;
* every field a plain decimal number (``12``, ``-1``, ``3.5``, ``1e3``); ``nan``,
  ``inf`` and non-numeric tokens are errors;
* integer fields (``job_id``, ``procs_alloc``, ``procs_req``, ``status``,
  ``user_id``, ``group_id``, ``executable_id``, ``queue_id``, ``partition_id``,
  ``preceding_job_id``) hold integral values of magnitude below 2**53;
* no field may be negative, except ``-1`` (unknown). The one exception is
  ``submit_s``: a negative submit time is accepted by the reader (some converted
  logs have them) and dropped, with a count, by
  :func:`workloads.cleaning.clean_trace`. ``-1`` in ``submit_s`` still means
  "unknown".
* every value has a magnitude below 2**53 (beyond it a double cannot hold
  every whole second, and ``submit + runtime`` could overflow); a value that
  overflows a double (``1e999``) is an error;
* job ids (other than ``-1``) are unique: a repeated id is a bad line naming
  the line of its first use.

Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (a form feed, vertical tab or
``\\x85`` is whitespace inside a line, so line numbers match an editor's); a
UTF-8 byte-order mark is ignored; a gzip file is decompressed as a stream, so
one made of blank lines is rejected in bounded memory.

Header values the replay uses are checked: ``MaxNodes`` and ``MaxProcs`` must
be whole numbers >= 1 and ``UnixStartTime`` between 0 and 253402300799
(9999-12-31); a violation names the header line.

Missing values: ``-1`` becomes ``NaN`` in float columns and ``<NA>`` in the
nullable ``Int64`` integer columns (see :mod:`workloads.schema`).

Header: every comment line is kept verbatim in ``Trace.header_lines``.
``; Key: value`` lines give ``header_text[key]`` (the value text, stripped;
indented comment lines without a key that follow are continuation lines and
are appended with a newline, a bare ``;`` ends a continuation; a repeated key
such as ``Queue`` has its values joined with newlines) and ``header[key]``:
the leading number of the value when the value starts with one followed by a
space or the end (``"338 (batch partition; 512 total)"`` -> ``338``,
``"2.2"`` -> ``2.2``), otherwise the same text as ``header_text[key]``. A
repeated key, and the list keys ``Queue`` and ``Partition`` (``"1 DSI"`` is
queue 1 named DSI, not a number), always stay text in ``header``.

A missing file raises :class:`FileNotFoundError` (an ``OSError``, not a format
problem); an empty file, a file with no job lines, or a corrupt gzip stream
raises :class:`TraceFormatError`.
"""

from __future__ import annotations

import csv
import gzip
import io
import logging
import math
import os
import re
import warnings
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from energysched.errors import TraceFormatError
from workloads.bundled import resolve_trace_source
from workloads.schema import INT_COLUMNS, SWF_COLUMNS, Trace

__all__ = ["NONNEGATIVE_COLUMNS", "read_swf", "write_swf"]

logger = logging.getLogger(__name__)

_NCOL = len(SWF_COLUMNS)
_INT_IDX = np.array([SWF_COLUMNS.index(c) for c in INT_COLUMNS])
_INT_SET = frozenset(INT_COLUMNS)

#: Columns that cannot be negative (other than ``-1`` = unknown): all but ``submit_s``.
NONNEGATIVE_COLUMNS: tuple[str, ...] = tuple(c for c in SWF_COLUMNS if c != "submit_s")
_NONNEG_IDX = np.array([SWF_COLUMNS.index(c) for c in NONNEGATIVE_COLUMNS])

#: Largest magnitude an integer field may have (exactly representable in a double).
_MAX_INT = float(2**53)

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER_RE = re.compile(_NUMBER, re.ASCII)
_LINE_RE = re.compile(rf"\s*{_NUMBER}(?:\s+{_NUMBER}){{{_NCOL - 1}}}\s*", re.ASCII)
_KEY_RE = re.compile(r";[ \t]{0,2}([A-Za-z][A-Za-z0-9_]*)[ \t]*:(?:[ \t]+(.*))?$")
_LEADING_NUMBER_RE = re.compile(r"([+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)(?=\s|$)", re.ASCII)
_NONFINITE_RE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)

#: Header keys that describe a list (one line per entry): always kept as text.
_LIST_KEYS = frozenset({"Queue", "Partition"})

_NUMERIC_BYTES = b"0123456789+-.eE \t\r\n"

_EXPECTED_LINE = f"{_NCOL} whitespace-separated numbers, -1 for unknown"
_EXPECTED_NUMBER = "a finite decimal number, -1 for unknown"
_EXPECTED_INT = "an integer, -1 for unknown"
_EXPECTED_NONNEG = "a value >= 0, or -1 for unknown"

_READ_CSV_KW: dict[str, Any] = {
    "sep": r"\s+",
    "header": None,
    "names": list(SWF_COLUMNS),
    "index_col": False,
    "quoting": csv.QUOTE_NONE,
    "dtype": np.float64,
    "engine": "c",
    "skip_blank_lines": True,
    "na_filter": False,
}
if int(pd.__version__.split(".")[0]) < 3:  # pragma: no cover - depends on the pandas version
    # pandas 2's default float parser is not always correctly rounded.
    _READ_CSV_KW["float_precision"] = "round_trip"


# --------------------------------------------------------------------------- input


def _source_name(source: Any) -> tuple[str | None, str]:
    """(path string or None, short name) of a path or stream."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
    else:
        raw_name = getattr(source, "name", None)
        path = raw_name if isinstance(raw_name, str) else None
    if path is None:
        return None, "trace"
    name = Path(path).name
    for suffix in (".gz", ".swf"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return path, name or "trace"


_BOM = b"\xef\xbb\xbf"
_BLANK_PREFIX_RE = re.compile(rb"[ \t\r\n\f\v]*")
_NOT_BLANK_RE = re.compile(rb"[^ \t\r\n\f\v]")  # what bytes.strip() keeps
_LINE_BREAK_RE = re.compile(rb"\r\n|\r|\n")
_TEXT_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")
_GZIP_CHUNK = 1 << 20


def _count_line_breaks(data: bytes) -> int:
    """Line breaks in ``data``: ``\\n``, ``\\r\\n`` and a lone ``\\r`` count one each."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def _strip_blank_prefix(raw: bytes) -> tuple[int, bytes]:
    """(line breaks in the leading blank run, the rest from the first non-blank line)."""
    m = _BLANK_PREFIX_RE.match(raw)
    assert m is not None
    end = m.end()
    cut = max(raw.rfind(b"\n", 0, end), raw.rfind(b"\r", 0, end)) + 1  # keep the line's indent
    if cut <= 0:
        return 0, raw
    return _count_line_breaks(raw[:cut]), raw[cut:]


def _gunzip_chunks(raw: bytes) -> Iterable[bytes]:
    """Decompressed gzip data in pieces of at most ``_GZIP_CHUNK`` bytes (all members)."""
    data = raw
    while data:
        stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        yield stream.decompress(data, _GZIP_CHUNK)
        while stream.unconsumed_tail:
            yield stream.decompress(stream.unconsumed_tail, _GZIP_CHUNK)
        if not stream.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        data = stream.unused_data
        if data and not data.startswith(b"\x1f\x8b"):
            if data.strip(b"\x00"):
                raise OSError("trailing garbage after the compressed data")
            return


def _gunzip(raw: bytes, path: str | None) -> tuple[int, bytes]:
    """Decompress gzip data, dropping a leading run of blank lines as it streams.

    A bomb of blank lines (300 KB of gzip holding gigabytes of newlines)
    costs only its line count: blank pieces are counted, never kept.
    Returns (line breaks of the leading blank lines, the rest).
    """
    kept: list[bytes] = []
    blank_breaks = 0
    carry = b""  # a trailing \r held back so that a \r\n split across pieces counts once
    try:
        for chunk in _gunzip_chunks(raw):
            if kept:
                kept.append(chunk)
                continue
            data = carry + chunk
            if not data.translate(None, b" \t\r\n\f\v"):
                carry = b"\r" if data.endswith(b"\r") else b""
                blank_breaks += _count_line_breaks(data[: len(data) - len(carry)])
                continue
            carry = b""
            breaks, rest = _strip_blank_prefix(data)
            blank_breaks += breaks
            kept.append(rest)
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFormatError(
            path, None, None, f"corrupt gzip data: {exc}", expected="a valid .gz file"
        ) from exc
    return blank_breaks + _count_line_breaks(carry), b"".join(kept)


def _read_bytes(source: Any, path: str | None) -> tuple[int, bytes]:
    """The (decompressed) content of ``source``: (leading blank lines dropped, the rest).

    A UTF-8 byte-order mark is dropped.
    """
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if not p.exists():
            raise FileNotFoundError(f"trace file not found: {p}")
        if p.is_dir():
            raise TraceFormatError(
                str(p),
                None,
                None,
                "is a directory, not a trace file",
                expected="the path of a .swf or .swf.gz file",
            )
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise TraceFormatError(
                str(p),
                None,
                None,
                f"cannot read the file: {exc.strerror or exc}",
                expected="a readable .swf or .swf.gz file",
            ) from exc
    elif hasattr(source, "read"):
        content = source.read()
        raw = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    else:
        raise TypeError(
            f"read_swf expects a path or a readable stream, not {type(source).__name__}"
        )
    if raw[:2] == b"\x1f\x8b":
        breaks, raw = _gunzip(raw, path)
    else:
        breaks, raw = 0, raw
    if breaks == 0 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    more, raw = _strip_blank_prefix(raw)
    return breaks + more, raw


def _split_lines(text: str) -> list[str]:
    """Lines split at \\n, \\r\\n or \\r only (not at form feed, vertical tab, \\x85...)."""
    return _TEXT_LINE_BREAK_RE.split(text)


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


# --------------------------------------------------------------------------- header


def _parse_header_value(text: str) -> Any:
    """``"338 (batch ...)"`` -> 338, ``"2.2"`` -> 2.2, anything else -> the text."""
    m = _LEADING_NUMBER_RE.match(text)
    if m is None:
        return text
    token = m.group(1)
    if any(ch in token for ch in ".eE"):
        return float(token)
    return int(token)


def _parse_header(lines: Iterable[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Header facts from comment lines: (parsed values, raw text)."""
    text: dict[str, str] = {}
    repeated: set[str] = set()
    current: str | None = None
    for line in lines:
        m = _KEY_RE.match(line.lstrip())
        if m is not None:
            key, value = m.group(1), (m.group(2) or "").strip()
            if key in text:
                repeated.add(key)
                text[key] = f"{text[key]}\n{value}"
            else:
                text[key] = value
            current = key
            continue
        body = line.lstrip()[1:].strip()
        if not body:
            current = None
        elif current is not None:
            text[current] = f"{text[current]}\n{body}" if text[current] else body
    header: dict[str, Any] = {}
    for key, value in text.items():
        first = _parse_header_value(value.split("\n", 1)[0])
        if key in repeated or key in _LIST_KEYS or isinstance(first, str):
            header[key] = value
        else:
            header[key] = first
    return header, text


# --------------------------------------------------------------------------- jobs


def _read_block(data: bytes | str, start: int = 0) -> np.ndarray:
    """Parse job lines (``data`` from offset ``start``) into an (n, 18) float array
    with pandas' C tokenizer.

    Raises on any malformed input (wrong field count, non-numeric token); the
    caller then falls back to the line-by-line pass.
    """
    buf: IO[Any] = io.BytesIO(data) if isinstance(data, bytes) else io.StringIO(data)
    buf.seek(start)  # a BytesIO shares the bytes it is given: no copy of the body
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a first line with extra fields only warns
        frame = pd.read_csv(buf, **_READ_CSV_KW)
    return frame.to_numpy(dtype=np.float64)


def _value_problems(values: np.ndarray) -> np.ndarray:
    """Boolean (n, 18) mask of values that break a rule (non-finite, int, sign)."""
    bad = ~np.isfinite(values)
    ints = values[:, _INT_IDX]
    with np.errstate(invalid="ignore"):
        bad[:, _INT_IDX] |= (ints != np.floor(ints)) | (np.abs(ints) >= _MAX_INT)
        bad |= np.abs(values) >= _MAX_INT  # beyond 2**53 a double loses whole seconds
        nonneg = values[:, _NONNEG_IDX]
        bad[:, _NONNEG_IDX] |= (nonneg < 0) & (nonneg != -1)
    return bad


#: Rows checked at a time by :func:`_any_value_problem` (small temporaries stay in
#: memory already mapped: a whole-trace check allocated ~100 MB of them).
_CHECK_ROWS = 1 << 14


def _any_value_problem(values: np.ndarray) -> bool:
    """True if some value breaks a rule (the same rules as :func:`_value_problems`)."""
    return any(
        _value_problems(values[i : i + _CHECK_ROWS]).any()
        for i in range(0, len(values), _CHECK_ROWS)
    )


def _describe_value(column: str, value: float) -> tuple[str, str]:
    """(message, expected form) for a value that breaks a rule."""
    if not math.isfinite(value):
        return f"value {value!r} is out of range", _EXPECTED_NUMBER
    if column in _INT_SET and value != math.floor(value):
        return f"non-integral value {value!r} in an integer field", _EXPECTED_INT
    if abs(value) >= _MAX_INT:
        kind = "integer" if column in _INT_SET else "value"
        return f"{kind} {value!r} is too large", "a number of magnitude below 2**53"
    return f"negative value {value!r}", _EXPECTED_NONNEG


def _diagnose_line(line: str) -> tuple[str | None, str, str]:
    """(field, message, expected) for a job line that failed the syntax check."""
    tokens = line.split()
    for j, token in enumerate(tokens[:_NCOL]):
        if _NUMBER_RE.fullmatch(token) is None:
            field = SWF_COLUMNS[j]
            if _NONFINITE_RE.fullmatch(token):
                return field, f"{token!r} is not allowed (NaN/infinity)", _EXPECTED_NUMBER
            return field, f"non-numeric value {token!r}", _EXPECTED_NUMBER
    if len(tokens) < _NCOL:
        missing = SWF_COLUMNS[len(tokens)]
        return (
            missing,
            f"line has {len(tokens)} fields, {_NCOL - len(tokens)} missing (from {missing!r})",
            _EXPECTED_LINE,
        )
    if len(tokens) > _NCOL:
        return (
            None,
            f"line has {len(tokens)} fields, {len(tokens) - _NCOL} too many",
            _EXPECTED_LINE,
        )
    for j, token in enumerate(tokens):  # pragma: no cover - defensive, regex agrees with this
        if _NUMBER_RE.fullmatch(token) is None:
            return SWF_COLUMNS[j], f"non-numeric value {token!r}", _EXPECTED_NUMBER
    return None, "malformed line", _EXPECTED_LINE  # pragma: no cover


def _unique_ids(ids: np.ndarray) -> bool:
    """True when no job id other than -1 (unknown) repeats."""
    known = ids[ids != -1]
    return len(np.unique(known)) == len(known)


def _build_jobs(values: np.ndarray) -> pd.DataFrame:
    """The jobs DataFrame from a valid (n, 18) float array (``-1`` -> missing).

    ``values`` is consumed: the float columns are its columns, with ``-1``
    replaced by NaN in place (no copy of the trace's values).
    """
    values = np.asfortranarray(values)  # each column contiguous (read_csv's layout already)
    columns: dict[str, Any] = {}
    for j, name in enumerate(SWF_COLUMNS):
        col = values[:, j]
        missing = col == -1
        if name in _INT_SET:
            columns[name] = pd.arrays.IntegerArray(col.astype(np.int64), missing)
        else:
            col[missing] = np.nan
            columns[name] = col
    return pd.DataFrame(columns, columns=list(SWF_COLUMNS), copy=False)


def _split_header_fast(raw: bytes, first_line: int = 1) -> tuple[list[tuple[int, bytes]], int]:
    """Leading comment lines (with their 1-based line numbers) and the offset of the
    rest of the file (the body is not copied).

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``; runs of blank lines are skipped
    at C speed.
    """
    header: list[tuple[int, bytes]] = []
    pos = 0
    number = first_line
    size = len(raw)
    while pos < size:
        m = _BLANK_PREFIX_RE.match(raw, pos)
        assert m is not None
        if m.end() > pos:
            cut = max(raw.rfind(b"\n", pos, m.end()), raw.rfind(b"\r", pos, m.end())) + 1
            if cut > pos:
                number += _count_line_breaks(raw[pos:cut])
                pos = cut
                continue
        if raw[m.end() : m.end() + 1] != b";":
            break
        brk = _LINE_BREAK_RE.search(raw, pos)
        end = size if brk is None else brk.start()
        header.append((number, raw[pos:end]))
        number += 1
        pos = size if brk is None else brk.end()
    return header, pos


class _BadLines:
    """Collects bad job lines: (line number, field, message, expected)."""

    def __init__(self) -> None:
        self.items: list[tuple[int, str | None, str, str]] = []

    def add(self, line: int, field: str | None, message: str, expected: str) -> None:
        self.items.append((line, field, message, expected))

    def sorted(self) -> list[tuple[int, str | None, str, str]]:
        return sorted(self.items, key=lambda item: item[0])


def _only_numeric_bytes_from(data: bytes, start: int) -> bool:
    """True if ``data[start:]`` holds only the bytes of :data:`_NUMERIC_BYTES`
    (counted over the whole of ``data`` and its head: no copy of the tail)."""
    return len(data.translate(None, _NUMERIC_BYTES)) == len(
        data[:start].translate(None, _NUMERIC_BYTES)
    )


def _only_numeric_chars(text: str) -> bool:
    """True if ``text`` holds only digits, signs, points, ``e``/``E`` and whitespace."""
    try:
        data = text.encode("ascii")
    except UnicodeEncodeError:
        return False
    return not data.translate(None, _NUMERIC_BYTES)


def _check_syntax(
    good: list[str], good_lines: list[int], bad: _BadLines
) -> tuple[list[str], list[int]]:
    """Keep the lines whose 18 tokens are all plain numbers; the others go to ``bad``."""
    checked: list[str] = []
    checked_lines: list[int] = []
    for line, number in zip(good, good_lines, strict=True):
        if _LINE_RE.fullmatch(line) is not None:
            checked.append(line)
            checked_lines.append(number)
        else:
            bad.add(number, *_diagnose_line(line))
    return checked, checked_lines


def _slow_parse(
    text: str, path: str | None, first_line: int = 1
) -> tuple[list[tuple[int, str]], np.ndarray, np.ndarray, _BadLines]:
    """Line-by-line pass: numbered comment lines, valid values, their line numbers, bad lines.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only: a form feed, vertical tab
    or ``\\x85`` inside a line is whitespace, not a line break, so line numbers
    match what an editor shows.
    """
    comments: list[tuple[int, str]] = []
    good: list[str] = []
    good_lines: list[int] = []
    bad = _BadLines()
    for number, line in enumerate(_split_lines(text), start=first_line):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            comments.append((number, line))
            continue
        tokens = line.split()
        if len(tokens) == _NCOL:
            good.append(" ".join(tokens))
            good_lines.append(number)
        else:
            bad.add(number, *_diagnose_line(line))
    if good and not _only_numeric_chars("\n".join(good)):
        # Some line with 18 fields has a non-numeric token: find it (slower).
        good, good_lines = _check_syntax(good, good_lines, bad)
    values = np.empty((0, _NCOL))
    if good:
        try:
            values = _read_block("\n".join(good))
        except (ValueError, pd.errors.ParserError, pd.errors.ParserWarning, OverflowError):
            # Tokens made of number characters that are not numbers ("--1", "1e", "-"):
            # find them line by line, then parse the rest.
            good, good_lines = _check_syntax(good, good_lines, bad)
            if good:
                values = _read_block("\n".join(good))
    line_numbers = np.asarray(good_lines, dtype=np.int64)
    problems = _value_problems(values)
    rows = np.flatnonzero(problems.any(axis=1))
    if rows.size:
        for row in rows:
            j = int(np.flatnonzero(problems[row])[0])
            message, expected = _describe_value(SWF_COLUMNS[j], float(values[row, j]))
            bad.add(int(line_numbers[row]), SWF_COLUMNS[j], message, expected)
        keep = np.ones(len(values), dtype=bool)
        keep[rows] = False
        values, line_numbers = values[keep], line_numbers[keep]
    return comments, values, line_numbers, bad


def _duplicate_ids(values: np.ndarray, line_numbers: np.ndarray, bad: _BadLines) -> np.ndarray:
    """Mask of rows to keep: a job id seen on an earlier line is a bad line."""
    ids = values[:, 0]
    known = ids != -1
    _, first = np.unique(ids[known], return_index=True)
    keep_known = np.zeros(int(known.sum()), dtype=bool)
    keep_known[first] = True
    keep = np.ones(len(values), dtype=bool)
    keep[np.flatnonzero(known)] = keep_known
    if keep.all():
        return keep
    first_line = dict(zip(ids[keep & known].tolist(), line_numbers[keep & known].tolist()))
    for row in np.flatnonzero(~keep):
        job = int(ids[row])
        bad.add(
            int(line_numbers[row]),
            "job_id",
            f"duplicate job id {job} (first on line {first_line[float(job)]})",
            "job ids unique within a trace, -1 for unknown",
        )
    return keep


#: Header keys that give the machine size: when present they must be whole numbers >= 1.
_SIZE_KEYS = ("MaxNodes", "MaxProcs")
#: Largest ``UnixStartTime`` accepted: 9999-12-31 (datetime's range).
_MAX_UNIX_TIME = 253_402_300_799


def _check_header(
    header: dict[str, Any], numbered: list[tuple[int, str]], path: str | None
) -> None:
    """Machine size and start time: values the replay uses, checked with their line."""

    def line_of(key: str) -> int | None:
        for number, line in numbered:
            m = _KEY_RE.match(line.lstrip())
            if m is not None and m.group(1) == key:
                return number
        return None

    for key in _SIZE_KEYS:
        value = header.get(key)
        if isinstance(value, (int, float)) and not (
            math.isfinite(value) and value >= 1 and float(value).is_integer() and value < _MAX_INT
        ):
            raise TraceFormatError(
                path,
                line_of(key),
                key,
                f"machine size {header_text_value(value)} is not a whole number >= 1",
                expected=f"'; {key}: N' with N >= 1, or delete the line if the size is unknown",
            )
    start = header.get("UnixStartTime")
    if isinstance(start, (int, float)) and not (
        math.isfinite(start) and 0 <= start <= _MAX_UNIX_TIME
    ):
        raise TraceFormatError(
            path,
            line_of("UnixStartTime"),
            "UnixStartTime",
            f"start time {header_text_value(start)} is out of range",
            expected=(
                f"seconds since 1970-01-01 UTC between 0 and {_MAX_UNIX_TIME}, "
                "or delete the line if unknown"
            ),
        )


def header_text_value(value: float) -> str:
    """A header number as the user wrote it (``-1``, ``0``, ``inf`` for an overflow)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def read_swf(
    source: str | os.PathLike[str] | IO[str] | IO[bytes],
    *,
    skip_bad_lines: bool = False,
    max_bad_line_errors: int = 20,
) -> Trace:
    """Read an SWF trace (``.swf`` or ``.swf.gz``, or an open text/binary stream).

    Args:
        source: a path (gzip is detected from the content, not the name), a
            bundled trace as ``"builtin:kth-sp2"`` (see :mod:`workloads.bundled`),
            or a readable stream (text or bytes).
        skip_bad_lines: if true, malformed job lines are skipped instead of
            raising: they are counted in ``Trace.bad_lines``, the first
            ``max_bad_line_errors`` messages are kept in ``Trace.bad_line_errors``
            and a warning is logged.
        max_bad_line_errors: how many messages of skipped lines to keep.

    Returns:
        The trace: jobs in file order with the 18 columns of
        :data:`workloads.schema.SWF_COLUMNS` (times in s, memory in KB), header
        facts, ``name`` (the file name without ``.swf``/``.gz``) and ``path``.

    Raises:
        TraceFormatError: a malformed job line (file, 1-based line, field,
            expected form; the first bad line is reported), an empty file, a
            file without job lines, or a corrupt gzip stream.
        FileNotFoundError: ``source`` is a path that does not exist.
    """
    source = resolve_trace_source(source)
    path, name = _source_name(source)
    blank_lines, raw = _read_bytes(source, path)
    first_line = blank_lines + 1

    values: np.ndarray | None = None
    numbered_bytes, body_start = _split_header_fast(raw, first_line)
    has_body = _NOT_BLANK_RE.search(raw, body_start) is not None
    # Fast path only for bodies made of digits, signs, points, exponents and
    # whitespace (no comment, NaN/inf, or word pandas might read as a boolean).
    if has_body and _only_numeric_bytes_from(raw, body_start):
        try:
            candidate = _read_block(raw, body_start)
        except (ValueError, pd.errors.ParserError, pd.errors.ParserWarning, OverflowError):
            candidate = None
        if (
            candidate is not None
            and not _any_value_problem(candidate)
            and _unique_ids(candidate[:, 0])
        ):
            values = candidate
    bad_items: list[tuple[int, str | None, str, str]] = []
    if values is not None:
        numbered = [(number, _decode(line)) for number, line in numbered_bytes]
    elif not has_body:
        numbered = [(number, _decode(line)) for number, line in numbered_bytes]
        values = np.empty((0, _NCOL))
    else:
        logger.debug("%s: fast parse failed, checking line by line", path or name)
        numbered, values, line_numbers, bad = _slow_parse(_decode(raw), path, first_line)
        keep = _duplicate_ids(values, line_numbers, bad)
        values = values[keep]
        bad_items = bad.sorted()
    header_lines = [line for _, line in numbered]

    if bad_items and not skip_bad_lines:
        line, field, message, expected = bad_items[0]
        how = (
            "rerun with --skip-bad-lines (skip_bad_lines=True in Python,"
            " skip_bad_lines = true in an experiment's [[traces]] entry)"
        )
        if len(bad_items) > 1:
            message += (
                f" [{len(bad_items) - 1} more bad line(s) in the file; to skip them all, {how}]"
            )
        else:
            message += f" [to skip it, {how}]"
        raise TraceFormatError(path, line, field, message, expected=expected)

    if len(values) == 0:
        if not raw.strip():
            reason = "the file is empty (or only blank lines)"
        elif bad_items:
            reason = f"no valid job lines ({len(bad_items)} bad line(s) skipped)"
        else:
            reason = "no job lines (only header comments)"
        raise TraceFormatError(path, None, None, reason, expected=_EXPECTED_LINE)

    header, header_text = _parse_header(header_lines)
    _check_header(header, numbered, path)
    messages = [
        str(TraceFormatError(path, line, field, message, expected=expected))
        for line, field, message, expected in bad_items[: max(0, max_bad_line_errors)]
    ]
    if bad_items:
        logger.warning(
            "%s: skipped %d bad job line(s); first: %s",
            path or name,
            len(bad_items),
            messages[0] if messages else "",
        )
    trace = Trace(
        jobs=_build_jobs(values),
        header=header,
        header_text=header_text,
        header_lines=header_lines,
        name=name,
        path=path,
        bad_lines=len(bad_items),
        bad_line_errors=messages,
    )
    logger.debug("%s: read %d jobs", path or name, len(trace))
    return trace


# --------------------------------------------------------------------------- output


def _format_column(values: np.ndarray, missing: np.ndarray) -> list[str]:
    """SWF text of one column: ``-1`` for missing, integers without a decimal point,
    other floats as the shortest text that round-trips (``repr``)."""
    filled = np.where(missing, -1.0, values)
    integral = (filled == np.floor(filled)) & (np.abs(filled) < 1e15)
    if integral.all():
        return [str(v) for v in filled.astype(np.int64).tolist()]
    out: list[str] = []
    for v, is_int in zip(filled.tolist(), integral.tolist(), strict=True):
        out.append(str(int(v)) if is_int else repr(v))
    return out


def _header_lines_for_write(trace: Trace) -> list[str]:
    lines = [line if line.lstrip().startswith(";") else f"; {line}" for line in trace.header_lines]
    if lines or not (trace.header_text or trace.header):
        return lines
    # A trace built in memory: write its header facts as "; Key: value" lines.
    for key in dict.fromkeys([*trace.header_text, *trace.header]):
        text = trace.header_text.get(key, str(trace.header.get(key, "")))
        lines.extend(f"; {key}: {part}".rstrip() for part in text.split("\n"))
    return lines


def write_swf(
    trace: Trace, path: str | os.PathLike[str] | IO[str], *, compresslevel: int = 6
) -> Path | IO[str]:
    """Write ``trace`` as SWF: its header lines, then one line of 18 fields per job.

    Missing values are written as ``-1``; integral values without a decimal
    point; other floats with ``repr`` (the shortest text that reads back to the
    same double), so ``read_swf(write_swf(trace, p))`` gives back the same jobs
    table and header. Only the 18 SWF columns are written (extra columns such
    as ``procs`` are not). A name ending in ``.gz`` is gzip-compressed (with a
    zero timestamp, so the bytes depend on the content only). ``path`` may also
    be a writable text stream.

    Note: a float value exactly ``-1.0`` is indistinguishable from "unknown" in
    SWF and reads back as missing.

    Raises:
        TraceFormatError: a column is missing or a value cannot be written as
            valid SWF (non-finite, non-integral in an integer column, negative
            other than -1); ``line`` is then the 1-based job row.
    """
    jobs = trace.jobs
    absent = [c for c in SWF_COLUMNS if c not in jobs.columns]
    if absent:
        raise TraceFormatError(
            None,
            None,
            absent[0],
            "column missing from the jobs table",
            expected="all 18 SWF columns",
        )
    numeric = np.empty((len(jobs), _NCOL))
    missing = np.empty((len(jobs), _NCOL), dtype=bool)
    for j, name in enumerate(SWF_COLUMNS):
        col = pd.to_numeric(jobs[name])
        miss = col.isna().to_numpy()
        missing[:, j] = miss
        numeric[:, j] = np.where(miss, -1.0, col.to_numpy(dtype=np.float64, na_value=np.nan))
    problems = _value_problems(numeric)
    if problems.any():
        row, j = (int(x[0]) for x in np.nonzero(problems))
        message, expected = _describe_value(SWF_COLUMNS[j], float(numeric[row, j]))
        raise TraceFormatError(
            str(path) if isinstance(path, (str, os.PathLike)) else None,
            row + 1,
            SWF_COLUMNS[j],
            f"cannot write job row {row + 1}: {message}",
            expected=expected,
        )

    columns = [_format_column(numeric[:, j], missing[:, j]) for j in range(_NCOL)]
    widths = [max((len(s) for s in col), default=1) for col in columns]
    fmt = " ".join(f"{{:>{w}}}" for w in widths)
    parts = [line + "\n" for line in _header_lines_for_write(trace)]
    parts.extend(fmt.format(*row) + "\n" for row in zip(*columns, strict=True))
    text = "".join(parts)

    if not isinstance(path, (str, os.PathLike)):
        path.write(text)
        return path
    out = Path(path)
    data = text.encode("utf-8")
    if out.name.lower().endswith(".gz"):
        with (
            open(out, "wb") as fh,
            gzip.GzipFile(
                filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=compresslevel
            ) as gz,
        ):
            gz.write(data)
    else:
        out.write_bytes(data)
    logger.debug("%s: wrote %d jobs", out, len(jobs))
    return out
