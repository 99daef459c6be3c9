"""The report of a hybrid MPI+OpenMP experiment shows the configurations chosen,
and its headline sentence says plainly when no configuration saves energy."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from energysched import load_results, make_report
from energysched.reporting import headline_sentences
from energysched.sweep import run_sweep


@pytest.fixture(scope="module")
def hybrid_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled hybrid experiment cut to 200 jobs, the learning predictor only."""
    tmp = tmp_path_factory.mktemp("hybrid")
    text = (files("energysched") / "data" / "hybrid.toml").read_text(encoding="utf-8")
    text = text.replace("max_jobs = 3000", "max_jobs = 200")
    text = text.replace('predictors = ["hybrid", "oracle"]', 'predictors = ["hybrid"]')
    path = tmp / "hybrid.toml"
    path.write_text(text, encoding="utf-8")
    out = tmp / "results"
    assert not run_sweep(path, out).failed  # serial by default
    return out


def test_the_chosen_configurations_figure_is_drawn_for_hybrid_runs(hybrid_results: Path) -> None:
    report = make_report(hybrid_results)
    html_text = report.html.read_text(encoding="utf-8")
    assert '<section id="chosen-configs">' in html_text
    assert (hybrid_results / "report_files" / "chosen-configs.svg").is_file()
    # the runs it shows really chose fewer cores than a node has (16) for some jobs
    res = load_results(hybrid_results)
    cores = pd.concat([res.jobs(r)["cores"] for r in res.summaries["run_id"]])
    assert cores.max() == 16 and cores.min() < 16


def test_a_report_of_rigid_runs_draws_no_chosen_configurations(
    hybrid_results: Path, tmp_path: Path
) -> None:
    # a stale figure from an earlier report in the same folder is removed
    (tmp_path / "report_files").mkdir()
    (tmp_path / "report_files" / "chosen-configs.png").write_bytes(b"old")
    summaries = load_results(hybrid_results).summaries
    rigid = summaries[summaries["policy"] == "easy"]["run_id"].iloc[0]
    sub = tmp_path / "rigid"
    sub.mkdir()
    for name in ("experiment.json", "experiment.toml"):
        (sub / name).write_bytes((hybrid_results / name).read_bytes())
    (sub / "runs").mkdir()
    (sub / "runs" / rigid).symlink_to(hybrid_results / "runs" / rigid)
    report = make_report(sub, out_dir=tmp_path)
    assert '<section id="chosen-configs">' not in report.html.read_text(encoding="utf-8")
    assert not (tmp_path / "report_files" / "chosen-configs.png").exists()


def _head(saving_pct: float, median_pct: float, wait_change_pct: float) -> pd.DataFrame:
    row = {
        "setting": "kth",
        "baseline": False,
        "oracle": False,
        "fewer_completed": False,
        "flag": "",
        "energy_saving_pct": saving_pct,
        "energy_saving_median_pct": median_pct,
        "mean_wait_s": 0.0 if not np.isfinite(wait_change_pct) else 1234.0,
        "mean_wait_change_pct": wait_change_pct,
        "mean_bsld_change_pct": 2.0,
        "makespan_change_pct": 7.8,
    }
    base = {**row, "configuration": "easy (baseline)", "baseline": True, "energy_saving_pct": 0.0}
    return pd.DataFrame([{**row, "configuration": "pareto"}, base])


def test_a_saving_reads_as_a_saving_with_its_service_cost() -> None:
    (sentence,) = headline_sentences(_head(12.5, 11.0, 40.0))
    assert (
        "is pareto: it saves 12.5% of the baseline's energy (median over seeds 11.0%)" in sentence
    )
    assert "+40.0% mean wait (1,234 s), +2.0% mean bounded slowdown and +7.8% makespan" in sentence


def test_when_nothing_saves_energy_the_sentence_says_so() -> None:
    (sentence,) = headline_sentences(_head(-6.6, -6.5, np.nan))
    assert "saves -" not in sentence and "nan" not in sentence
    assert (
        "no non-oracle configuration that completes as many jobs as the baseline saves energy"
        in sentence
    )
    assert (
        "the closest, pareto, uses 6.6% more than the baseline (median over seeds 6.5% more)"
        in sentence
    )
    assert "a mean wait of 0 s (the baseline's is 0 s)" in sentence
