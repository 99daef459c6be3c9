"""``predictors validate``: corpus reading, the strong-scaling backtest and the CLI.

``tests/predictors/data/tiny_corpus`` is TEST DATA computed from formulas (see its
SOURCES.md), not measurements.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from energysched.errors import TraceFormatError
from predictors.validation import (
    backtest_scaling,
    builtin_corpus_dir,
    load_corpus,
    summarize_accuracy,
    warning_table,
)

TINY = Path(__file__).parent / "data" / "tiny_corpus"


def test_tiny_corpus_loads_with_quoted_commas() -> None:
    c = load_corpus(TINY)
    assert c.scaling["curve_id"].nunique() == 2 and len(c.scaling) == 11
    assert c.dvfs.empty
    assert set(c.scaling.loc[c.scaling.curve_id == "test/power-law", "application"]) == {
        "Power law 100 n^-0.7, two words"
    }
    assert c.scaling["line"].tolist() == list(range(2, 13))


def test_backtest_fits_the_smallest_sizes_and_predicts_up_to_4x() -> None:
    """k = 3: fit 1, 2, 4; predict 8 and 16 (<= 4 x 4). k = 4: fit 1..8; predict 16
    (and 32 on the 6-size curve). Each model is exact on its own curve."""
    c = load_corpus(TINY)
    r = backtest_scaling(c.scaling, ["amdahl", "power-law"], ks=(3, 4))
    amdahl = r[r.predictor == "amdahl"]
    assert sorted(zip(amdahl.k, amdahl.curve_id, amdahl["size"], strict=True)) == [
        (
            3,
            "test/amdahl",
            8,
        ),
        (3, "test/amdahl", 16),
        (3, "test/power-law", 8),
        (3, "test/power-law", 16),
        (4, "test/amdahl", 16),
        (4, "test/power-law", 16),
        (4, "test/power-law", 32),
    ]
    own = r[
        ((r.predictor == "amdahl") & (r.curve_id == "test/amdahl"))
        | ((r.predictor == "power-law") & (r.curve_id == "test/power-law"))
    ]
    np.testing.assert_allclose(own.accuracy_pct, 100.0, atol=1e-3)
    # accuracy = 100 - 100 |pred / actual - 1|, worked on one row
    row = r[(r.predictor == "power-law") & (r.curve_id == "test/amdahl") & (r.k == 3)].iloc[0]
    assert row.accuracy_pct == pytest.approx(
        100.0 - 100.0 * abs(row.time_pred_s / (100.0 / row["size"] + 5.0) - 1.0)
    )
    assert row.fit_max_size == 4 and row.factor == row["size"] / 4


def test_summary_and_warning_tables_count_what_they_say() -> None:
    r = pd.DataFrame(
        {
            "predictor": ["a"] * 4,
            "curve_id": ["x", "x", "y", "y"],
            "accuracy_pct": [90.0, 60.0, 85.0, 40.0],
            "warned": [False, False, True, True],
        }
    )
    s = summarize_accuracy(r).iloc[0]
    assert (s.predictions, s.curves) == (4, 2)
    assert s.median_pct == pytest.approx(72.5) and s.mean_pct == pytest.approx(68.75)
    assert s.share_ge_80_pct == pytest.approx(50.0)
    w = warning_table(r).iloc[0]
    assert (w.warned, w.unwarned, w.unwarned_lt_70) == (2, 2, 1)
    assert w.warned_median_pct == pytest.approx(62.5)
    assert w.unwarned_ge_80_pct == pytest.approx(50.0)


def _corpus_with(tmp_path: Path, scaling_text: str) -> Path:
    shutil.copy(TINY / "SOURCES.md", tmp_path / "SOURCES.md")
    (tmp_path / "scaling.csv").write_text(scaling_text, encoding="utf-8")
    return tmp_path


HEADER = "curve_id,application,system,unit,size,runtime_s,source_id\n"


@pytest.mark.parametrize(
    "body,line,column",
    [
        ("c,a,s,nodes,1,10,test-formulas\nc,a,s,nodes,2,fast,test-formulas\n", 3, "runtime_s"),
        ("c,a,s,nodes,1,10,test-formulas\nc,a,s,nodes,2.5,6,test-formulas\n", 3, "size"),
        ("c,a,s,nodes,1,-10,test-formulas\n", 2, "runtime_s"),
        ("c,a,s,nodes,1,10,test-formulas\nc,a,s,cores,2,6,test-formulas\n", 3, "unit"),
        ("c,a,s,nodes,1,10,test-formulas\nc,a,s,nodes,2,6,nowhere\n", 3, "source_id"),
        ("c,a,s,nodes,1,10,test-formulas\nc,,s,nodes,2,6,test-formulas\n", 3, "application"),
    ],
)
def test_malformed_corpus_names_file_line_and_column(tmp_path, body, line, column) -> None:
    d = _corpus_with(tmp_path, HEADER + body)
    with pytest.raises(TraceFormatError) as info:
        load_corpus(d)
    err = info.value
    assert (err.line, err.field) == (line, column)
    text = str(err)
    assert "scaling.csv" in text and f"line {line}" in text and column in text
    assert "\n" not in text


def test_bad_header_and_wrong_cell_count(tmp_path) -> None:
    d = _corpus_with(tmp_path, "curve_id,application,system,unit,size,runtime\n")
    with pytest.raises(TraceFormatError, match=r"line 1.*runtime_s"):
        load_corpus(d)
    d = _corpus_with(tmp_path, HEADER + "c,a,s,nodes,1,10\n")
    with pytest.raises(TraceFormatError, match="line 2: 6 cells, expected 7"):
        load_corpus(d)
    with pytest.raises(TraceFormatError, match=r"no scaling\.csv"):
        load_corpus(tmp_path / "missing")


def test_cli_validate_on_the_tiny_corpus(tmp_path) -> None:
    from energysched.cli import main

    out = tmp_path / "preds.csv"
    result = CliRunner().invoke(
        main,
        [
            "predictors",
            "validate",
            "--corpus",
            str(TINY),
            "--predictors",
            "amdahl,power-law,auto",
            "--k",
            "3",
            "--out",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "2 strong-scaling curves" in result.output
    assert "median_pct" in result.output and "unwarned_ge_80_pct" in result.output
    assert "DVFS: the corpus has no dvfs.csv" in result.output
    table = pd.read_csv(out)
    assert len(table) == 3 * 4  # 3 predictors x (2 + 2) predicted sizes
    auto = table[table.predictor == "auto"]
    assert set(auto.chosen) <= {"amdahl", "power-law"} and auto.chosen.notna().all()


def test_cli_validate_reports_a_malformed_corpus_in_one_line(tmp_path) -> None:
    from energysched.cli import main

    d = _corpus_with(tmp_path, HEADER + "c,a,s,nodes,one,10,test-formulas\n")
    result = CliRunner().invoke(main, ["predictors", "validate", "--corpus", str(d)])
    assert result.exit_code != 0
    error_lines = [x for x in result.output.splitlines() if x.startswith("Error")]
    assert len(error_lines) == 1
    assert "scaling.csv, line 2, field 'size'" in error_lines[0]


def test_builtin_corpus_is_well_formed_and_cites_its_sources() -> None:
    if not (builtin_corpus_dir() / "scaling.csv").is_file():
        pytest.skip("no bundled corpus")
    c = load_corpus("builtin")
    sizes = c.scaling.groupby("curve_id")["size"].nunique()
    assert (sizes >= 5).all()


def test_cli_says_when_the_dvfs_part_is_unavailable(tmp_path, monkeypatch) -> None:
    from energysched.cli import main
    from predictors import validation

    d = _corpus_with(tmp_path, (TINY / "scaling.csv").read_text(encoding="utf-8"))
    (d / "dvfs.csv").write_text(
        "curve_id,application,device,freq_mhz,time_s,power_w,source_id\n"
        "g/k,kernel,gpu,1000,2.0,100,test-formulas\n"
        "g/k,kernel,gpu,1500,1.4,,test-formulas\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(validation, "dvfs_backtest_available", lambda: False)
    result = CliRunner().invoke(
        main, ["predictors", "validate", "--corpus", str(d), "--predictors", "amdahl"]
    )
    assert result.exit_code == 0, result.output
    assert "1 DVFS sweeps" in result.output
    assert "DVFS backtest (predictors.validation_dvfs) is not available" in result.output
    assert np.isnan(load_corpus(d).dvfs["power_w"].iloc[1])


def test_recommended_predictor_meets_the_issue_14_targets_on_the_bundled_corpus() -> None:
    """Issue 14, node count: median accuracy >= 85 % from the 3-4 smallest sizes up to
    4x; no unwarned prediction under 70 %; >= 70 % of unwarned ones >= 80 % accurate."""
    if not (builtin_corpus_dir() / "scaling.csv").is_file():
        pytest.skip("no bundled corpus")
    r = backtest_scaling(load_corpus("builtin").scaling, ["auto"], ks=(3, 4))
    s = summarize_accuracy(r).iloc[0]
    w = warning_table(r).iloc[0]
    assert s.predictions >= 30
    assert s.median_pct >= 85.0
    assert w.unwarned_lt_70 == 0
    assert w.unwarned_ge_80_pct >= 70.0
