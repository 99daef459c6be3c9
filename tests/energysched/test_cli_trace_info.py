"""Tests of the ``energysched trace-info`` command."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from energysched.cli import main
from tests.shared_data import require_shared

GOOD = "1 0 5 100 4 -1 -1 4 3600 -1 1 7 -1 -1 -1 -1 -1 -1"
HEADER = "; MaxNodes: 338 (batch partition; 512 total)\n; MaxProcs: 338\n"


def _file(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "t.swf"
    path.write_text(HEADER + "\n".join(lines) + "\n")
    return path


def test_prints_info_and_cleaning_counts(tmp_path: Path) -> None:
    zero = GOOD.replace(" 100 ", " 0 ", 1).replace("1 0 5", "2 10 5", 1)
    path = _file(tmp_path, [GOOD, zero])
    result = CliRunner().invoke(main, ["trace-info", str(path)])
    assert result.exit_code == 0, result.output
    assert "jobs           2" in result.output
    assert "338 processors" in result.output
    assert "kept 1 of 2 jobs, dropped 1" in result.output
    assert "zero_runtime" in result.output


def test_bad_line_is_one_clean_message(tmp_path: Path) -> None:
    path = _file(tmp_path, [GOOD, GOOD.replace(" 4 ", " 4.5 ", 1)])
    result = CliRunner().invoke(main, ["trace-info", str(path)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    message = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(message) == 1
    assert message[0].startswith("Error: ")
    assert "line 4" in message[0] and "procs_alloc" in message[0]


def test_skip_bad_lines_option(tmp_path: Path) -> None:
    path = _file(tmp_path, [GOOD, "1 2 3", GOOD.replace("1 0 5", "3 20 5", 1)])
    result = CliRunner().invoke(main, ["trace-info", "--skip-bad-lines", str(path)])
    assert result.exit_code == 0, result.output
    assert "bad lines skipped: 1" in result.output
    assert "line 4" in result.output
    assert "jobs           2" in result.output


def test_missing_file_is_a_clean_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["trace-info", str(tmp_path / "nope.swf")])
    assert result.exit_code == 1
    assert "not found" in result.output and "Traceback" not in result.output


def test_real_trace(tmp_path: Path) -> None:
    path = require_shared("traces", "KTH-SP2-1996-2.1-cln.swf.gz")
    result = CliRunner().invoke(main, ["trace-info", str(path)])
    assert result.exit_code == 0, result.output
    assert "jobs           28476" in result.output
    assert "100 nodes, 100 processors" in result.output
