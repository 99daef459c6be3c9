"""Run results written by pyarrow read back as the very frames the run produced,
and as the same values a pandas-written CSV holds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from energysched.runner import RunSpec, run_spec
from simulator.results import load_run, read_csv_table, write_csv


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    return run_spec(RunSpec(trace="builtin:kth-sp2", policy="easy", max_jobs=400))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_written_run_reads_back_identical(result, tmp_path: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyarrow")
    paths = result.write(tmp_path, fmt=fmt)
    assert paths["jobs"].name == f"jobs.{fmt}"
    back = load_run(tmp_path)
    pd.testing.assert_frame_equal(back.power, result.power)
    if fmt == "parquet":
        pd.testing.assert_frame_equal(back.jobs, result.jobs)
    else:  # CSV holds no None: missing and empty strings both come back as NaN
        strings = ("status", "node_type", "reason")
        pd.testing.assert_frame_equal(
            back.jobs.drop(columns=list(strings)), result.jobs.drop(columns=list(strings))
        )
        for column in strings:
            want = result.jobs[column].astype(object).fillna("").tolist()
            assert back.jobs[column].astype(object).fillna("").tolist() == want


def test_run_written_by_pandas_reads_back_identical(
    result, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    # the README's install (no pyarrow): the jobs table and the power timeline as CSV
    # written by pandas, whole-valued float columns as integers, read back the same
    import simulator.results as results

    monkeypatch.setattr(results, "parquet_available", lambda: False)
    paths = result.write(tmp_path, fmt="auto")
    assert paths["jobs"].name == "jobs.csv"
    power_lines = paths["power"].read_text().splitlines()
    assert power_lines[1].split(",")[0] == f"{result.power['time_s'][0]:.0f}"  # "0", not "0.0"
    back = load_run(tmp_path)
    pd.testing.assert_frame_equal(back.power, result.power)
    strings = ["status", "node_type", "reason"]
    pd.testing.assert_frame_equal(
        back.jobs.drop(columns=strings), result.jobs.drop(columns=strings)
    )


def test_pyarrow_csv_holds_the_values_pandas_writes(result, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyarrow")
    for name, frame in (("jobs", result.jobs), ("power", result.power)):
        by_pandas, by_arrow = tmp_path / f"{name}_pandas.csv", tmp_path / f"{name}_arrow.csv"
        frame.to_csv(by_pandas, index=False)
        write_csv(frame, by_arrow)
        # same header line, byte for byte
        assert by_arrow.read_text().splitlines()[0] == by_pandas.read_text().splitlines()[0]
        pd.testing.assert_frame_equal(read_csv_table(by_arrow), read_csv_table(by_pandas))
    # whole floats are written short ("5" for 5.0) yet read back as float64
    assert read_csv_table(tmp_path / "power_arrow.csv").dtypes.eq("float64").all()


def test_header_with_a_comma_is_quoted(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"a,b": [1.5, 2.0], 'say "hi"': ["x,y", None]})
    write_csv(frame, tmp_path / "t.csv")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "t.csv"), frame)


def test_parquet_dictionary_encodes_only_the_few_valued_columns(result, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pq = pytest.importorskip("pyarrow.parquet")
    from simulator.results import DICTIONARY_COLUMNS, write_parquet

    write_parquet(result.jobs, tmp_path / "jobs.parquet")
    row_group = pq.ParquetFile(tmp_path / "jobs.parquet").metadata.row_group(0)
    encoded = {}
    for i in range(row_group.num_columns):
        chunk = row_group.column(i)
        encoded[chunk.path_in_schema] = chunk.has_dictionary_page
    assert {name for name, has in encoded.items() if has} == DICTIONARY_COLUMNS
    assert set(encoded) == set(result.jobs.columns)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "jobs.parquet"), result.jobs)


def test_pandas_csv_writes_whole_floats_as_integers_and_reads_them_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # without pyarrow, pandas writes the CSV; a time, power or energy column whose
    # values are all whole is written as integers ("5", what pyarrow writes) and
    # read back as the same float64 values; a column with a fraction, a NaN or a
    # negative zero keeps the float text, and other columns are left as they are
    import simulator.results as results

    monkeypatch.setattr(results, "parquet_available", lambda: False)
    frame = pd.DataFrame(
        {
            "submit_s": [0.0, 5.0, 2.0**52],
            "power_w": [1.5, 2.0, 3.0],
            "energy_j": [1.0, float("nan"), 3.0],
            "wait_s": [0.0, -0.0, 4.0],
            "count": [1.0, 2.0, 3.0],  # not a time, power or energy column
        }
    )
    write_csv(frame, tmp_path / "t.csv")
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0] == "submit_s,power_w,energy_j,wait_s,count"
    assert lines[1:] == [
        "0,1.5,1.0,0.0,1.0",
        "5,2.0,,-0.0,2.0",
        "4503599627370496,3.0,3.0,4.0,3.0",
    ]
    back = read_csv_table(tmp_path / "t.csv")
    pd.testing.assert_frame_equal(back, frame)
    assert str(back["wait_s"][1]) == "-0.0"  # the sign of zero survives
